/* predict/history.c: the runtimes of each LocalQueue's recent finished
 * workloads (a ring per LocalQueue, in an open-addressing table by name),
 * and their median. */
#include <stdlib.h>
#include <string.h>

#include "predict/predict.h"

typedef struct {
	char *lq;			    /* "namespace/name" (owned); NULL: free slot */
	int64_t runs[PREDICT_HISTORY_RUNS]; /* runtimes, a ring */
	uint32_t n;			    /* kept (<= PREDICT_HISTORY_RUNS) */
	uint32_t next;			    /* the ring's next slot */
} lqhist_t;

struct predict_history {
	lqhist_t *t; /* cap slots */
	size_t cap;  /* a power of two, at least twice n */
	size_t n;    /* LocalQueues held */
};

static uint64_t hash(const char *s)
{
	return gpuq_fnv1a_str(GPUQ_FNV1A_SEED, s);
}

int predict_history_create(predict_history_t **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? GPUQ_OK : GPUQ_ENOMEM;
}

void predict_history_destroy(predict_history_t *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->cap; i++)
		free(h->t[i].lq);
	free(h->t);
	free(h);
}

/* The slot of lq: its own, or the free one it would take. */
static lqhist_t *slot(lqhist_t *t, size_t cap, const char *lq)
{
	for (size_t i = hash(lq) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!t[i].lq || !strcmp(t[i].lq, lq))
			return &t[i];
}

static int grow(predict_history_t *h)
{
	size_t cap = h->cap ? h->cap * 2 : 64;
	lqhist_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < h->cap; i++)
		if (h->t[i].lq)
			*slot(t, cap, h->t[i].lq) = h->t[i];
	free(h->t);
	h->t = t;
	h->cap = cap;
	return GPUQ_OK;
}

int predict_history_add(predict_history_t *h, const char *local_queue, int64_t runtime_ms)
{
	lqhist_t *e;

	if (!local_queue || !*local_queue || runtime_ms < 0)
		return GPUQ_EINVAL;
	if ((h->n + 1) * 2 > h->cap && grow(h))
		return GPUQ_ENOMEM;
	e = slot(h->t, h->cap, local_queue);
	if (!e->lq) {
		if (h->n >= PREDICT_HISTORY_LQS)
			return GPUQ_ELIMIT;
		e->lq = strdup(local_queue);
		if (!e->lq)
			return GPUQ_ENOMEM;
		h->n++;
	}
	e->runs[e->next] = runtime_ms;
	e->next = (e->next + 1) % PREDICT_HISTORY_RUNS;
	if (e->n < PREDICT_HISTORY_RUNS)
		e->n++;
	return GPUQ_OK;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t predict_history_median(const predict_history_t *h, const char *local_queue)
{
	int64_t v[PREDICT_HISTORY_RUNS];
	const lqhist_t *e;

	if (!h || !h->cap || !local_queue)
		return -1;
	e = slot(h->t, h->cap, local_queue);
	if (!e->lq || !e->n)
		return -1;
	memcpy(v, e->runs, e->n * sizeof(*v));
	qsort(v, e->n, sizeof(*v), i64_cmp);
	return v[(e->n - 1) / 2];
}

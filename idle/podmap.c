/* idle/podmap.c: (kind, namespace, name) -> LocalQueue, a sorted array
 * searched by bisection, and the Job controller's pod naming undone. */
#include <stdlib.h>
#include <string.h>

#include "idle/idle.h"

typedef struct {
	idle_owner_t kind;	 /* pod or Job */
	char *namespace_;	 /* owned; name and local_queue follow it in one block */
	const char *name;	 /* the pod's or Job's name */
	const char *local_queue; /* its LocalQueue's name */
	const char *owner;	 /* its workload's uid ("" none) */
	size_t order;		 /* insertion order: the first of equal keys wins */
} entry_t;

struct idle_podmap {
	entry_t *e;  /* entries */
	size_t n;    /* in use */
	size_t cap;  /* room */
	bool sorted; /* e is sorted by key */
};

/* The random suffix the apiserver's generateName appends (5 characters of
 * consonants and digits; checked loosely as [a-z0-9]). */
#define GEN_SUFFIX 5

int idle_podmap_create(idle_podmap_t **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? GPUQ_OK : GPUQ_ENOMEM;
}

void idle_podmap_destroy(idle_podmap_t *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].namespace_);
	free(m->e);
	free(m);
}

int idle_podmap_add(idle_podmap_t *m, idle_owner_t kind, const char *namespace_, const char *name,
		    const char *local_queue)
{
	return idle_podmap_add_owner(m, kind, namespace_, name, local_queue, NULL);
}

int idle_podmap_add_owner(idle_podmap_t *m, idle_owner_t kind, const char *namespace_,
			  const char *name, const char *local_queue, const char *owner)
{
	size_t ln = strlen(namespace_), lp = strlen(name), lq = strlen(local_queue);
	size_t lo = owner ? strlen(owner) : 0;
	entry_t *e;
	char *block;

	if (!ln || !lp || ln >= IDLE_NAME_MAX || lp >= IDLE_NAME_MAX || lq >= IDLE_NAME_MAX ||
	    lo >= IDLE_NAME_MAX)
		return GPUQ_EINVAL;
	if (m->n == IDLE_PODMAP_MAX)
		return GPUQ_ELIMIT;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;

		if (cap > IDLE_PODMAP_MAX)
			cap = IDLE_PODMAP_MAX;
		e = realloc(m->e, cap * sizeof(*e));
		if (!e)
			return GPUQ_ENOMEM;
		m->e = e;
		m->cap = cap;
	}
	block = malloc(ln + lp + lq + lo + 4);
	if (!block)
		return GPUQ_ENOMEM;
	memcpy(block, namespace_, ln + 1);
	memcpy(block + ln + 1, name, lp + 1);
	memcpy(block + ln + lp + 2, local_queue, lq + 1);
	memcpy(block + ln + lp + lq + 3, owner ? owner : "", lo + 1);
	e = &m->e[m->n];
	e->kind = kind;
	e->namespace_ = block;
	e->name = block + ln + 1;
	e->local_queue = block + ln + lp + 2;
	e->owner = block + ln + lp + lq + 3;
	e->order = m->n++;
	m->sorted = false;
	return GPUQ_OK;
}

static int key_cmp(idle_owner_t kind, const char *ns, const char *name, size_t name_len,
		   const entry_t *e)
{
	int c = (int)kind - (int)e->kind;

	if (!c)
		c = strcmp(ns, e->namespace_);
	if (!c) {
		c = strncmp(name, e->name, name_len);
		if (!c && e->name[name_len])
			c = -1; /* name is a proper prefix of e->name */
	}
	return c;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const entry_t *a = pa, *b = pb;
	int c = key_cmp(a->kind, a->namespace_, a->name, strlen(a->name), b);

	if (c)
		return c;
	return a->order < b->order ? -1 : a->order > b->order;
}

void idle_podmap_finish(idle_podmap_t *m)
{
	if (m->sorted)
		return;
	if (m->n)
		qsort(m->e, m->n, sizeof(m->e[0]), entry_cmp);
	m->sorted = true;
}

/* The first entry of key (kind, ns, name[0..len)), or NULL. */
static const entry_t *find(idle_podmap_t *m, idle_owner_t kind, const char *ns, const char *name,
			   size_t len)
{
	size_t lo = 0, hi;

	idle_podmap_finish(m);
	hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(kind, ns, name, len, &m->e[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->n && !key_cmp(kind, ns, name, len, &m->e[lo]))
		return &m->e[lo];
	return NULL;
}

/* Length of name without a trailing "-" + n characters of set, or 0. */
static size_t strip(const char *name, size_t len, const char *set, size_t n)
{
	size_t tail = 0;

	while (tail < len && strchr(set, name[len - 1 - tail]))
		tail++;
	if ((n && tail != n) || !tail || tail + 1 >= len || name[len - 1 - tail] != '-')
		return 0;
	return len - 1 - tail;
}

/* The entry of pod (namespace_, pod): its own, or its Job's by the Job
 * controller's naming; NULL. */
static const entry_t *entry_of(idle_podmap_t *m, const char *namespace_, const char *pod)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t len = strlen(pod), job, idx;
	const entry_t *e = find(m, IDLE_OWNER_POD, namespace_, pod, len);

	if (e)
		return e;
	job = strip(pod, len, alnum, GEN_SUFFIX);
	if (!job)
		return NULL;
	e = find(m, IDLE_OWNER_JOB, namespace_, pod, job);
	if (e)
		return e;
	idx = strip(pod, job, "0123456789", 0); /* an Indexed Job's "-<index>" */
	return idx ? find(m, IDLE_OWNER_JOB, namespace_, pod, idx) : NULL;
}

const char *idle_podmap_lookup(idle_podmap_t *m, const char *namespace_, const char *pod)
{
	const entry_t *e = entry_of(m, namespace_, pod);

	return e ? e->local_queue : NULL;
}

const char *idle_podmap_owner(idle_podmap_t *m, const char *namespace_, const char *pod)
{
	const entry_t *e = entry_of(m, namespace_, pod);

	return e && e->owner[0] ? e->owner : NULL;
}

static int util_cmp(const void *a, const void *b)
{
	return strcmp(((const idle_wl_util_t *)a)->uid, ((const idle_wl_util_t *)b)->uid);
}

int idle_workload_utils(idle_podmap_t *m, const idle_sample_t *samples, size_t n,
			idle_wl_util_t **out, size_t *n_out)
{
	idle_wl_util_t *v = NULL;
	size_t k = 0, w = 0;

	*out = NULL;
	*n_out = 0;
	for (size_t i = 0; i < n; i++) {
		const char *uid;

		if (!samples[i].namespace_[0] || !samples[i].pod[0] ||
		    !(samples[i].value >= 0 && samples[i].value <= 100) ||
		    !(uid = idle_podmap_owner(m, samples[i].namespace_, samples[i].pod)))
			continue;
		if (!v && !(v = malloc(n * sizeof(*v))))
			return GPUQ_ENOMEM;
		gpuq_strlcpy(v[k].uid, uid, sizeof(v[k].uid));
		v[k++].max_pct = samples[i].value;
	}
	if (!k)
		return GPUQ_OK;
	qsort(v, k, sizeof(*v), util_cmp);
	for (size_t i = 0; i < k; i++) { /* one entry per workload: the busiest GPU */
		if (w && !strcmp(v[w - 1].uid, v[i].uid)) {
			if (v[i].max_pct > v[w - 1].max_pct)
				v[w - 1].max_pct = v[i].max_pct;
			continue;
		}
		v[w++] = v[i];
	}
	*out = v;
	*n_out = w;
	return GPUQ_OK;
}

void idle_podmap_apply(idle_podmap_t *m, idle_sample_t *samples, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		idle_sample_t *s = &samples[i];
		const char *lq;

		if (s->local_queue[0] || !s->namespace_[0] || !s->pod[0])
			continue;
		lq = idle_podmap_lookup(m, s->namespace_, s->pod);
		if (lq)
			gpuq_strlcpy(s->local_queue, lq, sizeof(s->local_queue));
	}
}

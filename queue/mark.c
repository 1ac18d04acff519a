/*
 * queue/mark.c: the changed set: which records (meta, ClusterQueues,
 * LocalQueues, workloads) changed since the caller last persisted, and the
 * cohorts whose capacity went up. See queue.h for the contracts.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	uint8_t type;	  /* record type */
	const uint8_t *k; /* key bytes */
	size_t len;	  /* key length */
} dkey_t;

static bool dirty_eq(const void *ctx, uint32_t id, const void *key)
{
	const queue_t *q = ctx;
	const dkey_t *k = key;
	const dirty_t *d = &q->dirty[id];

	return d->type == k->type && d->len == k->len && memcmp(d->key, k->k, k->len) == 0;
}

static uint32_t dirty_hash(uint8_t type, const uint8_t *k, size_t len)
{
	return gpuq_fnv1a32(GPUQ_FNV1A32_BASIS ^ type, k, len);
}

/* Mark a record changed. Allocation failure is remembered as "everything
 * changed" (the next queue_dirty_next sees a full set) rather than lost. */
static void mark(queue_t *q, uint8_t type, const char *key)
{
	dkey_t k = {type, (const uint8_t *)key, strlen(key)};
	uint32_t h = dirty_hash(type, k.k, k.len), id;
	dirty_t *d;

	if (k.len > QUEUE_KEY_MAX)
		return;
	if (queue_map_find(&q->dirty_map, h, dirty_eq, q, &k, &id))
		return;
	if (queue_grow(&q->dirty, &q->cap_dirty, q->n_dirty + 1, sizeof(*q->dirty)) ||
	    queue_map_reserve(&q->dirty_map)) {
		q->dirty_lost = true;
		return;
	}
	d = &q->dirty[q->n_dirty];
	d->key = malloc(k.len ? k.len : 1);
	if (!d->key) {
		q->dirty_lost = true;
		return;
	}
	memcpy(d->key, key, k.len);
	d->type = type;
	d->len = (uint16_t)k.len;
	d->hash = h;
	queue_map_put(&q->dirty_map, h, (uint32_t)q->n_dirty);
	q->n_dirty++;
}

void queue_mark_key(queue_t *q, uint8_t type, const char *key)
{
	mark(q, type, key);
}

void queue_mark_wl(queue_t *q, const wl_t *w)
{
	mark(q, QUEUE_REC_WORKLOAD, wl_uid(w));
}

void queue_mark_cq(queue_t *q, uint32_t cq)
{
	mark(q, QUEUE_REC_CQ, q->cqs[cq].name);
}

void queue_mark_lq(queue_t *q, uint32_t lq)
{
	mark(q, QUEUE_REC_TENANT, q->lqs[lq].name);
}

void queue_mark_meta(queue_t *q)
{
	mark(q, QUEUE_REC_META, "meta");
}

/* A cohort needs a cycle; capacity_up also retries its set-aside work. */
void queue_cohort_touch(queue_t *q, uint32_t co, bool capacity_up)
{
	cohort_t *h;

	while (q->cohorts[co].parent != QUEUE_NONE) /* the tree's root is the unit */
		co = q->cohorts[co].parent;
	h = &q->cohorts[co];

	if (capacity_up && !h->capacity_up) {
		h->capacity_up = true;
		queue_mark_meta(q); /* the meta record lists cohorts with capacity to retry */
	}
	if (h->dirty)
		return;
	if (queue_vpush(&q->dirty_cohorts, co)) {
		q->touch_lost = true; /* the next cycle takes every cohort */
		return;
	}
	h->dirty = true;
}

int queue_dirty_next(const queue_t *q, queue_dirty_iter_t *it, queue_rec_type_t *type,
		     const uint8_t **key, size_t *key_len)
{
	ledger_dirty_iter_t li = {0};

	if (it->pos == 0 &&
	    (q->dirty_lost || ledger_dirty_next(q->ledger, &li, key, key_len) == GPUQ_ENOMEM))
		return GPUQ_ENOMEM;
	if (it->pos >= q->n_dirty) { /* then the ledger's records */
		int rc;

		li.pos = it->pos - q->n_dirty;
		rc = ledger_dirty_next(q->ledger, &li, key, key_len);
		if (rc)
			return rc;
		*type = QUEUE_REC_USAGE;
		it->pos = q->n_dirty + li.pos;
		return GPUQ_OK;
	}
	*type = (queue_rec_type_t)q->dirty[it->pos].type;
	*key = q->dirty[it->pos].key;
	*key_len = q->dirty[it->pos].len;
	it->pos++;
	return GPUQ_OK;
}

size_t queue_dirty_count(const queue_t *q)
{
	return q->n_dirty + ledger_dirty_count(q->ledger);
}

void queue_dirty_clear(queue_t *q)
{
	for (size_t i = 0; i < q->n_dirty; i++)
		free(q->dirty[i].key);
	q->n_dirty = 0;
	if (q->dirty_map.cap)
		memset(q->dirty_map.e, 0, q->dirty_map.cap * sizeof(mapent_t));
	q->dirty_map.n = 0;
	q->dirty_lost = false;
	ledger_dirty_clear(q->ledger);
}

int queue_dirty_all(queue_t *q)
{
	q->dirty_lost = false;
	queue_mark_meta(q);
	for (size_t i = 0; i < q->cq_names.n; i++)
		queue_mark_cq(q, (uint32_t)i);
	for (size_t i = 0; i < q->lq_names.n; i++)
		queue_mark_lq(q, (uint32_t)i);
	for (size_t i = 0; i < q->n_wls; i++)
		if (Wc(q, (uint32_t)i)->live)
			queue_mark_wl(q, W(q, (uint32_t)i));
	queue_budgets_mark_all(q);
	if (ledger_dirty_all(q->ledger))
		return GPUQ_ENOMEM;
	return q->dirty_lost ? GPUQ_ENOMEM : GPUQ_OK;
}

void queue_budgets_mark_all(queue_t *q)
{
	for (size_t i = 0; i < q->n_budgets; i++)
		queue_mark_key(q, QUEUE_REC_BUDGET, q->budgets[i].key);
}

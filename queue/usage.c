/*
 * queue/usage.c: the core's feed of its usage ledger (chargeback): an
 * interval per admitted workload, its borrowed part decided at admission.
 * See queue.h ("Usage ledger").
 */
#include "queue/internal.h"

/* The part of asg[i]'s amount above its slot's nominal: the slot's usage
 * (after this workload was charged) beyond nominal, less what the
 * workload's later assignments on the same slot already account for. */
static int64_t borrowed_part(const queue_t *q, const wl_t *w, uint32_t i)
{
	const slot_t *s = &q->cqs[w->cq].slots[w->asg[i].slot];
	int64_t over = s->usage - s->nominal;

	for (uint32_t j = i + 1; j < w->n_asg; j++)
		if (w->asg[j].slot == w->asg[i].slot)
			over -= w->asg[j].a.amount;
	if (over <= 0)
		return 0;
	return over < w->asg[i].a.amount ? over : w->asg[i].a.amount;
}

void queue_usage_open(queue_t *q, uint32_t wid, int64_t now)
{
	const wl_t *w = W(q, wid);
	ledger_part_t parts[LEDGER_PARTS_MAX];
	uint32_t n = 0;

	for (uint32_t i = 0; i < w->n_asg && n < LEDGER_PARTS_MAX; i++) {
		int64_t bor = borrowed_part(q, w, i);

		parts[n++] = (ledger_part_t){
		    .local_queue = q->lqs[w->lq].name,
		    .cluster_queue = q->cqs[w->cq].name,
		    .flavor = queue_flv_name(q, w->asg[i].a.flavor),
		    .resource = queue_res_name(q, w->asg[i].a.resource),
		    .nominal = w->asg[i].a.amount - bor,
		    .borrowed = bor,
		};
	}
	/* out of memory: this work goes unrecorded (queue.h) */
	(void)ledger_open(q->ledger, wl_uid(w), now, parts, n);
}

void queue_usage_close(queue_t *q, const wl_t *w, int64_t now)
{
	(void)ledger_close(q->ledger, wl_uid(w), now);
}

typedef struct {
	queue_t *q;	   /* the core */
	const char **gone; /* uids of open intervals whose workload holds nothing */
	size_t n;	   /* entries */
} stale_t;

static int find_stale(void *ctx, const char *uid)
{
	stale_t *s = ctx;
	uint32_t id;

	if (queue_workload_find(s->q, uid, &id) == GPUQ_OK &&
	    (W(s->q, id)->state == QUEUE_WL_ADMITTED || W(s->q, id)->state == QUEUE_WL_EVICTING))
		return GPUQ_OK;
	s->gone[s->n++] = uid;
	return GPUQ_OK;
}

void queue_usage_reconcile(queue_t *q)
{
	int64_t now = q->last_now > ledger_clock(q->ledger) ? q->last_now : ledger_clock(q->ledger);
	stale_t s = {q, NULL, 0};
	char **copies;

	s.gone = malloc((ledger_open_count(q->ledger) + 1) * sizeof(*s.gone));
	if (!s.gone)
		return; /* out of memory: they stay open until a later restore */
	if (ledger_open_each(q->ledger, find_stale, &s) == GPUQ_OK && s.n) {
		copies = calloc(s.n, sizeof(*copies));
		for (size_t i = 0; copies && i < s.n; i++)
			copies[i] = strdup(s.gone[i]);
		for (size_t i = 0; copies && i < s.n; i++)
			if (copies[i])
				(void)ledger_close(q->ledger, copies[i], now);
		for (size_t i = 0; copies && i < s.n; i++)
			free(copies[i]);
		free(copies);
	}
	free(s.gone);
}

const ledger_t *queue_ledger(const queue_t *q)
{
	return q->ledger;
}

int queue_ledger_copy(queue_t *dst, const queue_t *src)
{
	ledger_t *l;
	int rc = ledger_clone(src->ledger, &l);

	if (rc)
		return rc;
	ledger_destroy(dst->ledger);
	dst->ledger = l;
	return GPUQ_OK;
}

int queue_ledger_merge(queue_t *q, const uint8_t *part, size_t len, ledger_merge_info_t *info,
		       gpuq_diag_t *diag)
{
	return ledger_checkpoint_merge(q->ledger, part, len, info, diag);
}

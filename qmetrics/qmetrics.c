/* qmetrics/qmetrics.c: the driver's counters, the snapshot built from them
 * and the core at each publish, and its hand-over to scrapes (a reference
 * taken under a lock held for a pointer copy). */
#include <stdlib.h>
#include <string.h>

#include "qmetrics/internal.h"
#include "quota/quota.h"

/* Upper bounds. Time to admission, ms: gpuq releases a Job that fits within
 * milliseconds, a queue under pressure holds work for hours; a day is the
 * top bucket. */
const int64_t qm_wait_le[QM_WAIT_BUCKETS] = {100,     250,     500,	 1000,	   2500,    5000,
					     10000,   30000,   60000,	 120000,   300000,  600000,
					     1800000, 3600000, 10800000, 43200000, 86400000};
/* Admission cycle, ns: one with nothing to do costs microseconds, one over
 * 10,000 set-aside workloads a few ms (bench/README.md). */
const int64_t qm_cycle_le[QM_CYCLE_BUCKETS] = {10000,	  50000,     100000,	 500000,
					       1000000,	  5000000,   10000000,	 50000000,
					       100000000, 500000000, 1000000000, 5000000000};
/* Store commit, ns: an fsync'd LMDB commit takes about a millisecond on an
 * SSD, tens on a network disk. */
const int64_t qm_commit_le[QM_COMMIT_BUCKETS] = {
    100000,   500000,	 1000000,   2500000,   5000000,	   10000000,  25000000,
    50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000};

/* A release's stages, ns: 50 us to 4 s, doubling from 1 ms, fine enough
 * for a p50 and p99 per stage (bench/bench_cluster.sh reads them). */
const int64_t qm_stage_le[QM_STAGE_BUCKETS] = {
    50000,     100000,	  250000,     500000,	  1000000,   2000000,
    4000000,   8000000,	  16000000,   32000000,	  64000000,  128000000,
    256000000, 512000000, 1000000000, 2000000000, 4000000000};

struct qmetrics {
	/* the driver's thread only */
	qm_layout_t *layout;	  /* the current core's shape (one reference); NULL: none */
	qm_cq_counts_t *cq_ctr;	  /* per layout CQ */
	uint64_t *lq_admissions;  /* per layout LQ */
	qm_hist_t cycle[2];	  /* cycle durations, ns: [admitted any] */
	qm_hist_t commit;	  /* commit durations, ns */
	uint64_t commit_failures; /* failed commits */
	qm_hist_t stages[QMETRICS_STAGES]; /* a release's stages, ns */
	qm_hist_t tail;			   /* the loop's tails, ns */
	qm_econ_counts_t econ;		   /* idle reports, prediction passes */
	/* shared with scrapes */
	gpuq_pub_t published; /* the qm_snap_t scrapes render (a lock held for a
				 pointer copy) */
	atomic_bool leader;   /* this replica leads */
};

void qm_hist_observe(qm_hist_t *h, const int64_t *le, size_t n, int64_t v)
{
	size_t b = 0;

	if (v < 0)
		v = 0;
	while (b < n && v > le[b])
		b++;
	h->buckets[b]++;
	h->sum += (uint64_t)v;
}

static void snap_unref(qm_snap_t *s);

static void snap_ref(void *s)
{
	atomic_fetch_add(&((qm_snap_t *)s)->refs, 1);
}

static void snap_unref_any(void *s)
{
	snap_unref(s);
}

int qmetrics_create(qmetrics_t **out)
{
	qmetrics_t *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return GPUQ_ENOMEM;
	if (gpuq_pub_init(&m->published, snap_ref, snap_unref_any)) {
		free(m);
		return GPUQ_ENOMEM;
	}
	atomic_init(&m->leader, false);
	*out = m;
	return GPUQ_OK;
}

static void snap_unref(qm_snap_t *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	qm_layout_unref(s->layout);
	free(s->cq_ctr);
	free(s->cq);
	free(s->quota);
	free(s->lq_admissions);
	free(s->lq);
	free(s->lq_usage);
	qm_econ_free(&s->econ);
	free(s);
}

/* Make s the published snapshot (its reference moves in; NULL: none). */
static void snap_swap(qmetrics_t *m, qm_snap_t *s)
{
	gpuq_pub_swap(&m->published, s);
}

void qmetrics_destroy(qmetrics_t *m)
{
	if (!m)
		return;
	gpuq_pub_deinit(&m->published);
	qm_layout_unref(m->layout);
	free(m->cq_ctr);
	free(m->lq_admissions);
	free(m);
}

/* ---- carrying counters from one core to the next, by name ---- */

typedef struct {
	const char *name; /* a CQ's or LQ's name */
	uint32_t idx;	  /* its index in the old layout */
} byname_t;

static int byname_cmp(const void *a, const void *b)
{
	return strcmp(((const byname_t *)a)->name, ((const byname_t *)b)->name);
}

/* The old layout's CQs (lq false) or LQs (lq true), sorted by name. */
static byname_t *old_names(const qm_layout_t *old, bool lq, size_t *n)
{
	size_t count = old ? (lq ? old->n_lqs : old->n_cqs) : 0;
	byname_t *v = malloc((count ? count : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < count; i++)
		v[i] = (byname_t){lq ? old->lqs[i].name : old->cqs[i].name, (uint32_t)i};
	qsort(v, count, sizeof(*v), byname_cmp);
	*n = count;
	return v;
}

/* The old index of name, or UINT32_MAX. */
static uint32_t old_index(const byname_t *v, size_t n, const char *name)
{
	byname_t key = {name, 0};
	const byname_t *hit = n ? bsearch(&key, v, n, sizeof(*v), byname_cmp) : NULL;

	return hit ? hit->idx : UINT32_MAX;
}

/* Counters for layout l, those of names m already counts carried over. */
static int carry(const qmetrics_t *m, const qm_layout_t *l, qm_cq_counts_t **cq_ctr,
		 uint64_t **lq_adm)
{
	size_t ncq, nlq;
	byname_t *cqs = old_names(m->layout, false, &ncq);
	byname_t *lqs = old_names(m->layout, true, &nlq);

	*cq_ctr = calloc(l->n_cqs ? l->n_cqs : 1, sizeof(**cq_ctr));
	*lq_adm = calloc(l->n_lqs ? l->n_lqs : 1, sizeof(**lq_adm));
	if (!cqs || !lqs || !*cq_ctr || !*lq_adm) {
		free(cqs);
		free(lqs);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < l->n_cqs; i++) {
		uint32_t o = old_index(cqs, ncq, l->cqs[i].name);
		if (o != UINT32_MAX)
			(*cq_ctr)[i] = m->cq_ctr[o];
	}
	for (size_t i = 0; i < l->n_lqs; i++) {
		uint32_t o = old_index(lqs, nlq, l->lqs[i].name);
		if (o != UINT32_MAX)
			(*lq_adm)[i] = m->lq_admissions[o];
	}
	free(cqs);
	free(lqs);
	return GPUQ_OK;
}

int qmetrics_core_set(qmetrics_t *m, const queue_t *q)
{
	qm_layout_t *l = NULL;
	qm_cq_counts_t *cq_ctr = NULL;
	uint64_t *lq_adm = NULL;
	int rc = GPUQ_OK;

	if (q)
		rc = qm_layout_build(q, &l);
	if (!rc && l)
		rc = carry(m, l, &cq_ctr, &lq_adm);
	if (rc) {
		qm_layout_unref(l);
		free(cq_ctr);
		free(lq_adm);
		l = NULL;
		cq_ctr = NULL;
		lq_adm = NULL;
	}
	qm_layout_unref(m->layout);
	free(m->cq_ctr);
	free(m->lq_admissions);
	m->layout = l;
	m->cq_ctr = cq_ctr;
	m->lq_admissions = lq_adm;
	return rc;
}

/* ---- counting ---- */

void qmetrics_admission_count(qmetrics_t *m, const queue_t *q, const queue_admission_t *a,
			      int64_t requeued_ms, int64_t now)
{
	queue_workload_view_t v;
	int64_t since;

	if (!m->layout || a->cq >= m->layout->n_cqs || queue_workload_view(q, a->wl, &v))
		return;
	since = v.created_ms;
	if (requeued_ms > since)
		since = requeued_ms;
	if (v.eligible_ms > since)
		since = v.eligible_ms;
	m->cq_ctr[a->cq].admissions++;
	qm_hist_observe(&m->cq_ctr[a->cq].wait, qm_wait_le, QM_WAIT_BUCKETS, now - since);
	if (v.lq < m->layout->n_lqs)
		m->lq_admissions[v.lq]++;
}

void qmetrics_eviction_count(qmetrics_t *m, const queue_t *q, const queue_eviction_t *e)
{
	queue_workload_view_t v;
	bool preempted = (unsigned)e->reason < QM_PREEMPTS;
	int why = e->reason == QUEUE_EVICT_READY_TIMEOUT  ? QM_EVICT_READY_TIMEOUT
		  : e->reason == QUEUE_EVICT_STOPPED	  ? QM_EVICT_STOPPED
		  : e->reason == QUEUE_EVICT_IDLE_RECLAIM ? QM_EVICT_IDLE_RECLAIM
		  : e->reason == QUEUE_EVICT_MAX_EXEC	  ? QM_EVICT_MAX_EXEC
		  : e->reason == QUEUE_EVICT_NODE_FAILED  ? QM_EVICT_NODE_FAILED
							  : QM_EVICT_PREEMPTED;

	if (!m->layout)
		return;
	if (!queue_workload_view(q, e->victim, &v) && v.cq < m->layout->n_cqs)
		m->cq_ctr[v.cq].evictions[why]++;
	if (preempted && e->preemptor != QUEUE_NONE && !queue_workload_view(q, e->preemptor, &v) &&
	    v.cq < m->layout->n_cqs)
		m->cq_ctr[v.cq].preemptions[e->reason]++;
}

void qmetrics_idle_count(qmetrics_t *m, const queue_t *q, const queue_result_t *res)
{
	(void)q;
	m->econ.idle_reports += res->n_idles;
}

void qmetrics_predict_observe(qmetrics_t *m, uint64_t ns, size_t simulated, size_t started,
			      bool capped)
{
	m->econ.predict_passes++;
	m->econ.predict_capped += capped;
	m->econ.predict_last_ns = ns;
	m->econ.predict_simulated = simulated;
	m->econ.predict_started = started;
}

void qmetrics_cycle_observe(qmetrics_t *m, bool admitted, uint64_t ns)
{
	qm_hist_observe(&m->cycle[admitted ? 1 : 0], qm_cycle_le, QM_CYCLE_BUCKETS,
			ns > INT64_MAX ? INT64_MAX : (int64_t)ns);
}

void qmetrics_commit_observe(qmetrics_t *m, bool ok, uint64_t ns)
{
	if (!ok) {
		m->commit_failures++;
		return;
	}
	qm_hist_observe(&m->commit, qm_commit_le, QM_COMMIT_BUCKETS,
			ns > INT64_MAX ? INT64_MAX : (int64_t)ns);
}

static int64_t clamp_ns(uint64_t ns)
{
	return ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
}

void qmetrics_release_stages_observe(qmetrics_t *m, const uint64_t ns[QMETRICS_STAGES])
{
	for (int s = 0; s < QMETRICS_STAGES; s++)
		qm_hist_observe(&m->stages[s], qm_stage_le, QM_STAGE_BUCKETS, clamp_ns(ns[s]));
}

void qmetrics_loop_tail_observe(qmetrics_t *m, uint64_t ns)
{
	qm_hist_observe(&m->tail, qm_stage_le, QM_STAGE_BUCKETS, clamp_ns(ns));
}

/* ---- the snapshot ---- */

/* Add the amounts of admitted workload id to its LocalQueue's usage
 * entries: per pod set, per resource its CQ covers, on the flavor
 * assigned. */
static void lq_usage_add(const queue_t *q, const qm_layout_t *l, qm_snap_t *s, queue_wl_t id,
			 const queue_workload_view_t *v)
{
	const qm_cq_t *c = &l->cqs[v->cq];
	int64_t *use = &s->lq_usage[l->lqs[v->lq].uslot0];

	for (size_t p = 0; p < v->n_podsets; p++) {
		for (uint32_t i = 0, j; i < c->n_slots; i = j) {
			uint32_t res = l->slots[c->slot0 + i].res, f;
			int64_t per_pod;
			int32_t count;

			for (j = i; j < c->n_slots && l->slots[c->slot0 + j].res == res; j++)
				;
			if (queue_workload_flavor(q, id, p, res, &f) ||
			    queue_workload_request(q, id, p, res, &per_pod, &count))
				continue;
			for (uint32_t k = i; k < j; k++)
				if (l->slots[c->slot0 + k].flavor == f)
					use[k] += per_pod * count;
		}
	}
}

/* Pending by wait reason and admitted per CQ and LQ, the LQs' usage and
 * the idle ones per CQ (into idle): one pass over the live workloads, a
 * pending one's few fields read (every second; most are pending with a
 * long queue), an admitted one's whole. */
static void fill_workloads(const queue_t *q, const qm_layout_t *l, qm_snap_t *s, uint32_t *idle)
{
	for (queue_wl_t id = queue_workload_next(q, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(q, id)) {
		queue_workload_brief_t v;
		qm_count_t *cq, *lq;

		if (queue_workload_brief(q, id, &v) || v.cq >= l->n_cqs)
			continue;
		cq = &s->cq[v.cq];
		lq = v.lq < l->n_lqs && l->lqs[v.lq].cq != UINT32_MAX ? &s->lq[v.lq] : NULL;
		if (v.state == QUEUE_WL_PENDING) {
			unsigned w = (unsigned)v.wait < QM_WAITS ? (unsigned)v.wait : 0;
			cq->pending[w]++;
			if (lq)
				lq->pending[w]++;
		} else if (v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING) {
			queue_workload_view_t full;

			cq->admitted++;
			if (lq)
				lq->admitted++;
			if (queue_workload_view(q, id, &full))
				continue;
			idle[v.cq] += full.idle_since_ms >= 0; /* admitted ones only */
			if (lq)
				lq_usage_add(q, l, s, id, &full);
		}
	}
}

/* Nominal quota and usage per slot, and what each lends
 * (quota_lent_share over the (cohort, flavor, resource) groups; a slot of
 * a ClusterQueue without a cohort lends nothing). */
static int fill_quota(const queue_t *q, const qm_layout_t *l, qm_snap_t *s)
{
	quota_lend_t *v = calloc(l->n_slots ? l->n_slots : 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return GPUQ_ENOMEM;
	for (uint32_t c = 0; c < l->n_cqs; c++)
		for (uint32_t i = l->cqs[c].slot0; i < l->cqs[c].slot0 + l->cqs[c].n_slots; i++) {
			const qm_slot_t *sl = &l->slots[i];
			queue_quota_view_t qv;

			s->quota[i].lent = 0;
			if (queue_cq_quota(q, c, sl->flavor, sl->res, &qv))
				continue;
			s->quota[i].nominal = qv.nominal;
			s->quota[i].usage = qv.usage;
			if (sl->group != UINT32_MAX)
				v[n++] = (quota_lend_t){sl->group,	  i, qv.nominal, qv.usage,
							qv.lending_limit, 0};
		}
	quota_lent_share(v, n);
	for (size_t k = 0; k < n; k++)
		s->quota[v[k].slot].lent = v[k].lent;
	free(v);
	return GPUQ_OK;
}

static int snap_alloc(const qmetrics_t *m, qm_snap_t **out)
{
	const qm_layout_t *l = m->layout;
	qm_snap_t *s = calloc(1, sizeof(*s));

	*out = s;
	if (!s)
		return GPUQ_ENOMEM;
	atomic_init(&s->refs, 1);
	memcpy(s->cycle, m->cycle, sizeof(s->cycle));
	s->commit = m->commit;
	s->commit_failures = m->commit_failures;
	memcpy(s->stages, m->stages, sizeof(s->stages));
	s->tail = m->tail;
	if (!l)
		return GPUQ_OK;
	s->layout = qm_layout_ref(m->layout);
	s->cq_ctr = malloc((l->n_cqs ? l->n_cqs : 1) * sizeof(*s->cq_ctr));
	s->cq = calloc(l->n_cqs ? l->n_cqs : 1, sizeof(*s->cq));
	s->quota = calloc(l->n_slots ? l->n_slots : 1, sizeof(*s->quota));
	s->lq_admissions = malloc((l->n_lqs ? l->n_lqs : 1) * sizeof(*s->lq_admissions));
	s->lq = calloc(l->n_lqs ? l->n_lqs : 1, sizeof(*s->lq));
	s->lq_usage = calloc(l->n_uslots ? l->n_uslots : 1, sizeof(*s->lq_usage));
	if (!s->cq_ctr || !s->cq || !s->quota || !s->lq_admissions || !s->lq || !s->lq_usage)
		return GPUQ_ENOMEM;
	memcpy(s->cq_ctr, m->cq_ctr, l->n_cqs * sizeof(*s->cq_ctr));
	memcpy(s->lq_admissions, m->lq_admissions, l->n_lqs * sizeof(*s->lq_admissions));
	return GPUQ_OK;
}

int qmetrics_publish(qmetrics_t *m, const queue_t *q)
{
	uint32_t *idle = NULL;
	qm_snap_t *s;
	int rc;

	if (!atomic_load(&m->leader))
		return GPUQ_OK; /* a follower shows no queue series */
	rc = snap_alloc(m, &s);
	if (!rc && s->layout &&
	    !(idle = calloc(s->layout->n_cqs ? s->layout->n_cqs : 1, sizeof(*idle))))
		rc = GPUQ_ENOMEM;
	if (!rc && s->layout) {
		fill_workloads(q, s->layout, s, idle);
		rc = fill_quota(q, s->layout, s);
	}
	if (!rc)
		rc = qm_econ_fill(s->layout ? q : NULL, s->layout, &m->econ, idle, &s->econ);
	else
		free(idle);
	if (rc) {
		snap_unref(s);
		return rc;
	}
	snap_swap(m, s);
	return GPUQ_OK;
}

void qmetrics_leader_set(qmetrics_t *m, bool leader)
{
	bool was = atomic_exchange(&m->leader, leader);

	if (was && !leader)
		snap_swap(m, NULL);
}

void qmetrics_render(qmetrics_t *m, http_metrics_text_t *t)
{
	bool leader = atomic_load(&m->leader);
	qm_snap_t *s = leader ? gpuq_pub_get(&m->published) : NULL;

	qm_render(s, leader, t);
	snap_unref(s);
}

/* sim/run.c: the event loop in virtual time, and its persistence. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "engine/engine.h"
#include "policy/policy.h"
#include "qmetrics/qmetrics.h"
#include "sim/sim.h"
#include "sim/internal.h"

/* Cycles in a row at one instant: each one that preempts needs another for
 * its preemptors; a chain longer than this means a bug, and time moves on. */
#define SAME_TIME_CYCLES_MAX 1000
/* Steps in which nothing runs and nothing is left to arrive (only backoffs and
 * usage samples tick) before the run is declared stuck. */
#define IDLE_STEPS_MAX 100
#define UID_MAX 24 /* "w" + a 32-bit index */

/* Store record types: the core's keep their numbers (named by the engine);
 * the driver's own start at ENGINE_TYPE_DRIVER_FIRST. */
enum {
	T_PROGRESS =
	    ENGINE_TYPE_DRIVER_FIRST, /* key "progress": virtual time, next arrival, counters */
	T_WORKLOAD = ENGINE_TYPE_DRIVER_FIRST +
		     1, /* key: 4-byte big-endian arrival index; a sim_outcome_t */
	T_EVICTION = ENGINE_TYPE_DRIVER_FIRST +
		     2, /* key: 8-byte big-endian sequence; one sim_preemption_t */
};
#define REC_VERSION 1

double sim_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* engine_step's clock: this process's CPU time, ns (the report's core
 * and persistence seconds are CPU time). */
static uint64_t cpu_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the event heap ---- */

static bool ev_less(const event_t *a, const event_t *b)
{
	if (a->at != b->at)
		return a->at < b->at;
	if (a->kind != b->kind)
		return a->kind < b->kind;
	return a->wid < b->wid;
}

int sim_heap_push(struct sim *s, event_t ev)
{
	size_t i;

	if (s->n_heap == s->cap_heap) {
		size_t ncap = s->cap_heap ? s->cap_heap * 2 : 1024;
		event_t *grown = realloc(s->heap, ncap * sizeof(*grown));
		if (!grown)
			return GPUQ_ENOMEM;
		s->heap = grown;
		s->cap_heap = ncap;
	}
	i = s->n_heap++;
	while (i > 0 && ev_less(&ev, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = ev;
	return GPUQ_OK;
}

static event_t heap_pop(struct sim *s)
{
	event_t top = s->heap[0], last = s->heap[--s->n_heap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= s->n_heap)
			break;
		if (c + 1 < s->n_heap && ev_less(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!ev_less(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->n_heap)
		s->heap[i] = last;
	return top;
}

/* ---- the core's configuration ---- */

/* The core's configuration for a trace's options (the copy a prediction
 * pass makes is built with it too: engine_config). */
static void core_config(const sim_trace_t *t, queue_config_t *cfg)
{
	queue_config_default(cfg);
	cfg->fair_sharing = t->opt.fair_sharing;
	if (t->opt.half_life_ms > 0)
		cfg->tenant_half_life_ms = t->opt.half_life_ms;
	if (t->opt.usage_sample_ms > 0)
		cfg->tenant_sample_ms = t->opt.usage_sample_ms;
	cfg->ready_timeout_ms = t->opt.gang_ready_timeout_ms;
	cfg->ready_scope = QUEUE_READY_GANGS;
	cfg->release_on_evict = true;
	if (t->opt.budget_interval_ms > 0)
		cfg->budget_interval_ms = t->opt.budget_interval_ms;
}

/* ---- outcomes ---- */

static void mark(struct sim *s, uint32_t wid)
{
	if (!s->persist || s->wl_marked[wid])
		return;
	s->wl_marked[wid] = 1;
	s->dirty_wl[s->n_dirty_wl++] = wid; /* sized n_wl at creation: cannot overflow */
}

static uint32_t wid_of(const char *uid)
{
	return uid && uid[0] == 'w' ? (uint32_t)strtoul(uid + 1, NULL, 10) : UINT32_MAX;
}

int64_t sim_trace_ready_delay(const sim_trace_t *t, uint32_t wid)
{
	const sim_shape_t *sh = &t->shapes[t->arrivals[wid].shape];

	if (!sh->gang)
		return 0;
	return sh->ready_delay_ms >= 0 ? sh->ready_delay_ms : t->opt.gang_ready_delay_ms;
}

int64_t sim_ready_delay(const struct sim *s, uint32_t wid)
{
	return sim_trace_ready_delay(s->t, wid);
}

/* The core's view of a shape's pod sets, pointing into the trace. */
struct podsets {
	queue_podset_spec_t ps[SIM_PODSETS_MAX];		      /* the pod sets */
	queue_request_t req[SIM_PODSETS_MAX][SIM_POD_RES_MAX];	      /* their requests */
	queue_label_t sel[SIM_PODSETS_MAX][SIM_SELECTOR_MAX];	      /* nodeSelectors */
	queue_toleration_t tol[SIM_PODSETS_MAX][SIM_TOLERATIONS_MAX]; /* tolerations */
};

/* Fill b from shape sh; returns the pods over all pod sets. */
static int32_t fill_podsets(const sim_trace_t *t, const sim_shape_t *sh, struct podsets *b)
{
	/* b is written before it is read (only its address is taken here); zeroing its
	 * 9 KiB per arrival would cost more than the rest of the call */
	// cppcheck-suppress ctuuninitvar
	queue_podset_spec_t *ps = b->ps;
	int32_t pods = 0;

	memset(ps, 0, sizeof(b->ps));
	for (size_t i = 0; i < sh->n_podsets; i++) {
		const sim_podset_t *p = &sh->podsets[i];
		ps[i].name = p->name;
		ps[i].count = (int32_t)p->count;
		pods += (int32_t)p->count;
		for (size_t j = 0; j < p->n_req; j++) {
			b->req[i][j].resource = t->res_names[p->req[j].res];
			b->req[i][j].amount = p->req[j].amount;
		}
		ps[i].requests = b->req[i];
		ps[i].n_requests = p->n_req;
		for (size_t j = 0; j < p->n_sel; j++) {
			b->sel[i][j].key = p->sel[j].key;
			b->sel[i][j].value = p->sel[j].value;
		}
		ps[i].node_selector = b->sel[i];
		ps[i].n_node_selector = p->n_sel;
		ps[i].tolerations = b->tol[i];
		for (size_t j = 0; j < p->n_tol; j++) {
			const sim_toleration_t *tl = &p->tol[j];
			if (engine_toleration_named(tl->key, tl->op, tl->value, tl->effect,
						    &b->tol[i][ps[i].n_tolerations]))
				continue; /* tolerates nothing (the Trace refuses it anyway) */
			ps[i].n_tolerations++;
		}
		/* the modes are the core's, value for value (controller/workload.c) */
		ps[i].topology = (queue_topo_mode_t)p->topology.mode;
		ps[i].topology_level = p->topology.level;
		ps[i].slice_level = p->topology.slice_level;
		ps[i].slice_size = p->topology.slice_size;
		ps[i].group = p->topology.group;
	}
	return pods;
}

static int add_workload(struct sim *s, uint32_t wid, gpuq_diag_t *diag)
{
	const sim_trace_t *t = s->t;
	const sim_arrival_t *a = &t->arrivals[wid];
	const sim_shape_t *sh = &t->shapes[a->shape];
	const policy_lq_t *lq = policy_lq_at(t->policy, a->lq);
	struct podsets b;
	queue_workload_spec_t spec;
	char name[SIM_NAME_MAX + 64], uid[UID_MAX];
	int32_t pods;
	int rc;

	if (!policy_cq_selects(t->policy, lq->cq, lq->namespace_)) {
		s->r->wl[wid].state = SIM_WL_INADMISSIBLE;
		mark(s, wid);
		return GPUQ_OK;
	}
	memset(&spec, 0, sizeof(spec));
	pods = fill_podsets(t, sh, &b);
	rc = sim_trace_workload_name(t, wid, name, sizeof(name));
	if (rc)
		return gpuq_diag_set(diag, rc, "workload %" PRIu32 ": name too long", wid);
	snprintf(uid, sizeof(uid), "w%" PRIu32, wid);
	spec.namespace_ = lq->namespace_;
	spec.name = name;
	spec.uid = uid;
	spec.local_queue = lq->name;
	spec.priority = a->priority;
	spec.created_ms = a->at_ms;
	spec.podsets = b.ps;
	spec.n_podsets = sh->n_podsets;
	spec.max_exec_s = sh->max_exec_s;
	spec.gang_total = sh->gang ? pods : 0;
	spec.pods_present = spec.gang_total;
	CORE(s,
	     engine_change_apply(
		 s->e, &(engine_change_t){.kind = ENGINE_CHANGE_ADD, .spec = &spec, .now = s->now},
		 diag));
	if (rc) {
		gpuq_diag_prefix(diag, "workload %s/%s: ", lq->namespace_, name);
		return rc;
	}
	s->r->wl[wid].state = SIM_WL_PENDING;
	s->n_pending++;
	mark(s, wid);
	return GPUQ_OK;
}

static int log_eviction(struct sim *s, uint32_t victim, uint32_t by, const char *reason)
{
	sim_preemption_t *p;

	if (s->r->n_preempt == s->cap_preempt) {
		size_t ncap = s->cap_preempt ? s->cap_preempt * 2 : 256;
		sim_preemption_t *grown = realloc(s->r->preempt, ncap * sizeof(*grown));
		if (!grown)
			return GPUQ_ENOMEM;
		s->r->preempt = grown;
		s->cap_preempt = ncap;
	}
	p = &s->r->preempt[s->r->n_preempt++];
	memset(p, 0, sizeof(*p));
	p->at_ms = s->now;
	p->victim = victim;
	p->by = by;
	p->admitted_ms = s->r->wl[victim].last_admit_ms;
	gpuq_strlcpy(p->reason, reason ? reason : "", sizeof(p->reason));
	return GPUQ_OK;
}

static int on_eviction(struct sim *s, const queue_eviction_t *ev, gpuq_diag_t *diag)
{
	uint32_t wid = wid_of(ev->victim_uid);
	sim_outcome_t *o;
	int rc;

	if (wid >= s->r->n_wl)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "eviction of unknown uid \"%s\"",
				     ev->victim_uid ? ev->victim_uid : "");
	o = &s->r->wl[wid];
	if (s->metrics) { /* before a Ready timeout's last one deletes it */
		qmetrics_eviction_count(s->metrics, engine_core(s->e), ev);
		s->requeued[wid] = s->now;
	}
	rc = log_eviction(s, wid, ev->preemptor_uid ? wid_of(ev->preemptor_uid) : UINT32_MAX,
			  ev->reason_name);
	if (rc)
		return rc;
	o->run_ms += s->now - o->last_admit_ms;
	o->finish_ms = -1;
	o->preemptions++;
	o->state = SIM_WL_PENDING;
	s->n_admitted--;
	s->n_pending++;
	if (ev->reason == QUEUE_EVICT_READY_TIMEOUT && ++o->timeouts >= SIM_READY_TIMEOUTS_MAX) {
		char uid[UID_MAX];
		snprintf(uid, sizeof(uid), "w%" PRIu32, wid);
		CORE(s, engine_change_apply(s->e,
					    &(engine_change_t){.kind = ENGINE_CHANGE_DELETE,
							       .uid = uid,
							       .now = s->now},
					    diag));
		if (rc)
			return rc;
		o->state = SIM_WL_DROPPED;
		s->n_pending--;
	}
	mark(s, wid);
	return GPUQ_OK;
}

static void span_add(sim_topo_span_t *sp, size_t level, size_t k)
{
	sp->sum[level] += k;
	sp->one[level] += k == 1;
	if (k > sp->max[level])
		sp->max[level] = (uint32_t)k;
}

/* Where an admission's pods went, counted: the domains they span at each
 * level of the first topology-aware flavor they run on, over all and per
 * class. */
static void count_placement(struct sim *s, uint32_t wid, const char *uid)
{
	const queue_t *q = engine_core(s->e);
	sim_report_t *r = s->r;
	queue_place_t pl[1];
	queue_wl_t id;
	size_t n = 0;

	if (queue_workload_find(q, uid, &id))
		return;
	queue_workload_placement(q, id, pl, 1, &n);
	if (!n)
		return;
	if (!r->n_topo_levels)
		for (const char *l; r->n_topo_levels < QUEUE_TOPO_LEVELS_MAX &&
				    (l = queue_flavor_level(q, pl[0].flavor, r->n_topo_levels));)
			if (!(r->topo_levels[r->n_topo_levels++] = strdup(l)))
				r->n_topo_levels--; /* a level less in the report */
	if (!r->topo_cls && s->t->n_classes)
		r->topo_cls = calloc(s->t->n_classes, sizeof(*r->topo_cls)); /* NULL: none */
	r->topo_all.placed++;
	if (r->topo_cls)
		r->topo_cls[s->t->arrivals[wid].class_id].placed++;
	for (size_t i = 0; i < r->n_topo_levels; i++) {
		size_t k = queue_workload_domains(q, id, pl[0].flavor, i);

		span_add(&r->topo_all, i, k);
		if (r->topo_cls)
			span_add(&r->topo_cls[s->t->arrivals[wid].class_id], i, k);
	}
}

static int on_admission(struct sim *s, const queue_admission_t *adm, gpuq_diag_t *diag)
{
	uint32_t wid = wid_of(adm->uid);
	sim_outcome_t *o;
	int64_t delay;
	int rc;

	if (wid >= s->r->n_wl)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "admission of unknown uid \"%s\"",
				     adm->uid ? adm->uid : "");
	o = &s->r->wl[wid];
	if (s->metrics)
		qmetrics_admission_count(s->metrics, engine_core(s->e), adm, s->requeued[wid],
					 s->now);
	delay = sim_ready_delay(s, wid);
	if (o->first_admit_ms < 0)
		o->first_admit_ms = s->now;
	o->last_admit_ms = s->now;
	o->cq = adm->cq;
	o->state = SIM_WL_ADMITTED;
	count_placement(s, wid, adm->uid);
	o->finish_ms = s->now + delay + s->t->arrivals[wid].runtime_ms;
	s->n_pending--;
	s->n_admitted++;
	s->idle = 0;
	mark(s, wid);
	if (s->t->shapes[s->t->arrivals[wid].shape].gang) {
		if (delay == 0) {
			CORE(s, engine_change_apply(
				    s->e,
				    &(engine_change_t){.kind = ENGINE_CHANGE_PODS_READY,
						       .uid = adm->uid,
						       .now = s->now},
				    diag));
			if (rc)
				return rc;
		} else {
			rc = sim_heap_push(s, (event_t){.at = s->now + delay,
							.wid = wid,
							.run = o->preemptions,
							.kind = EV_READY});
			if (rc)
				return rc;
		}
	}
	rc = sim_econ_admitted(s, wid, delay);
	if (rc)
		return rc;
	return sim_heap_push(
	    s, (event_t){.at = o->finish_ms, .wid = wid, .run = o->preemptions, .kind = EV_FINISH});
}

static int on_result(struct sim *s, const queue_result_t *res, gpuq_diag_t *diag)
{
	int rc = GPUQ_OK;

	for (size_t i = 0; i < res->n_evictions && !rc; i++)
		rc = on_eviction(s, &res->evictions[i], diag);
	for (size_t i = 0; i < res->n_admissions && !rc; i++)
		rc = on_admission(s, &res->admissions[i], diag);
	for (size_t i = 0; i < res->n_changes && !rc; i++) {
		uint32_t wid = wid_of(res->changes[i].uid);
		sim_outcome_t *o;
		if (wid >= s->r->n_wl)
			continue;
		o = &s->r->wl[wid];
		if (o->state == SIM_WL_PENDING && res->changes[i].reason == QUEUE_WAIT_NO_FIT) {
			o->state = SIM_WL_INADMISSIBLE;
			mark(s, wid);
		} else if (o->state == SIM_WL_INADMISSIBLE &&
			   res->changes[i].reason != QUEUE_WAIT_NO_FIT) {
			o->state = SIM_WL_PENDING; /* the policy changed under it: it may fit */
			mark(s, wid);
		}
	}
	return rc;
}

/* An event of a run that has ended (evicted, or finished): permanent, since
 * every eviction bumps the workload's count. */
bool sim_event_stale(const struct sim *s, const event_t *ev)
{
	const sim_outcome_t *o = &s->r->wl[ev->wid];

	return o->state != SIM_WL_ADMITTED || o->preemptions != ev->run;
}

static int on_event(struct sim *s, const event_t *ev, gpuq_diag_t *diag)
{
	sim_outcome_t *o = &s->r->wl[ev->wid];
	char uid[UID_MAX];
	int rc;

	if (sim_event_stale(s, ev))
		return GPUQ_OK; /* the run it belonged to was evicted */
	snprintf(uid, sizeof(uid), "w%" PRIu32, ev->wid);
	if (ev->kind == EV_IDLE)
		return sim_econ_idle(s, ev, diag);
	if (ev->kind == EV_READY) {
		CORE(s, engine_change_apply(s->e,
					    &(engine_change_t){.kind = ENGINE_CHANGE_PODS_READY,
							       .uid = uid,
							       .now = s->now},
					    diag));
		if (rc)
			return rc;
		return GPUQ_OK;
	}
	CORE(s,
	     engine_change_apply(
		 s->e, &(engine_change_t){.kind = ENGINE_CHANGE_FINISH, .uid = uid, .now = s->now},
		 diag));
	if (!rc)
		CORE(s, engine_change_apply(s->e,
					    &(engine_change_t){.kind = ENGINE_CHANGE_DELETE,
							       .uid = uid,
							       .now = s->now},
					    diag));
	if (rc)
		return rc;
	o->state = SIM_WL_FINISHED;
	s->n_admitted--;
	s->dirty = true;
	sim_econ_finished(s, ev->wid);
	mark(s, ev->wid);
	return GPUQ_OK;
}

/* ---- persistence ---- */

static void put_u64(uint8_t **p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t **p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)(*p)[i] << (8 * i);
	*p += 8;
	return v;
}

#define PROGRESS_LEN (1 + 8 * 13)
#define OUTCOME_LEN (1 + 8 * 5 + 4 + 4 + 1 + 1)
#define EVICTION_LEN (1 + 8 * 2 + 4 * 2 + 48)

static void encode_progress(const struct sim *s, uint8_t *buf)
{
	uint8_t *p = buf;

	*p++ = REC_VERSION;
	put_u64(&p, s->t->hash);
	put_u64(&p, (uint64_t)s->now);
	put_u64(&p, s->next_arrival);
	put_u64(&p, (uint64_t)s->dirty | (uint64_t)s->done << 1);
	put_u64(&p, s->same_time);
	put_u64(&p, s->idle);
	put_u64(&p, s->r->cycles);
	put_u64(&p, s->r->steps);
	put_u64(&p, s->r->n_preempt);
	put_u64(&p, s->n_pending);
	put_u64(&p, s->n_admitted);
	put_u64(&p, s->r->n_wl);
	put_u64(&p, s->r->cycle_cap_hits);
}

static int decode_progress(struct sim *s, const uint8_t *buf, size_t len, gpuq_diag_t *diag)
{
	const uint8_t *p = buf + 1;
	uint64_t flags, n_preempt, n_wl;

	if (len != PROGRESS_LEN || buf[0] != REC_VERSION)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "progress record: bad length or version");
	if (get_u64(&p) != s->t->hash)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "the state dir holds a run of a different trace");
	s->now = (int64_t)get_u64(&p);
	s->next_arrival = get_u64(&p);
	flags = get_u64(&p);
	s->dirty = flags & 1;
	s->done = (flags >> 1) & 1;
	s->same_time = (uint32_t)get_u64(&p);
	s->idle = (uint32_t)get_u64(&p);
	s->r->cycles = get_u64(&p);
	s->r->steps = get_u64(&p);
	n_preempt = get_u64(&p);
	s->n_pending = get_u64(&p);
	s->n_admitted = get_u64(&p);
	n_wl = get_u64(&p);
	s->r->cycle_cap_hits = get_u64(&p);
	if (n_wl != s->r->n_wl || s->next_arrival > n_wl || n_preempt > UINT32_MAX)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "progress record: counts out of range");
	s->r->resumed_steps = s->r->steps;
	s->persisted_preempt = (size_t)n_preempt; /* checked against the scan */
	return GPUQ_OK;
}

static void encode_outcome(const sim_outcome_t *o, uint8_t *buf)
{
	uint8_t *p = buf;

	*p++ = REC_VERSION;
	put_u64(&p, (uint64_t)o->first_admit_ms);
	put_u64(&p, (uint64_t)o->last_admit_ms);
	put_u64(&p, (uint64_t)o->finish_ms);
	put_u64(&p, (uint64_t)o->run_ms);
	put_u64(&p, (uint64_t)o->amount);
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(o->cq >> (8 * i));
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(o->preemptions >> (8 * i));
	*p++ = o->state;
	*p++ = o->timeouts;
}

static void encode_eviction(const sim_preemption_t *e, uint8_t *buf)
{
	uint8_t *p = buf;

	*p++ = REC_VERSION;
	put_u64(&p, (uint64_t)e->at_ms);
	put_u64(&p, (uint64_t)e->admitted_ms);
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(e->victim >> (8 * i));
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(e->by >> (8 * i));
	memcpy(p, e->reason, sizeof(e->reason));
}

static void key_be(uint8_t *key, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		key[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* engine_commit's stage function: the outcomes changed since the last
 * commit, the new eviction log entries and the progress record. */
static int stage(void *ctx, engine_batch_t *b)
{
	const struct sim *s = ctx;
	uint8_t buf[PROGRESS_LEN > EVICTION_LEN ? PROGRESS_LEN : EVICTION_LEN];
	int rc = GPUQ_OK;

	for (size_t i = 0; i < s->n_dirty_wl && !rc; i++) {
		uint8_t key[4], val[OUTCOME_LEN];
		key_be(key, s->dirty_wl[i], 4);
		encode_outcome(&s->r->wl[s->dirty_wl[i]], val);
		rc = engine_record_put(b, T_WORKLOAD, key, 4, val, sizeof(val));
	}
	for (size_t i = s->persisted_preempt; i < s->r->n_preempt && !rc; i++) {
		uint8_t key[8];
		key_be(key, i, 8);
		encode_eviction(&s->r->preempt[i], buf);
		rc = engine_record_put(b, T_EVICTION, key, 8, buf, EVICTION_LEN);
	}
	if (!rc) {
		encode_progress(s, buf);
		rc = engine_record_put(b, T_PROGRESS, "progress", 8, buf, PROGRESS_LEN);
	}
	return rc;
}

/* A commit of the outcomes succeeded (after cpu seconds): nothing of
 * them is left to write. */
static void committed(struct sim *s, double cpu)
{
	for (size_t i = 0; i < s->n_dirty_wl; i++)
		s->wl_marked[s->dirty_wl[i]] = 0;
	s->n_dirty_wl = 0;
	s->persisted_preempt = s->r->n_preempt;
	s->persist_cpu += cpu;
}

/* Commit outside a step (the run's end): the core's changed records and
 * the driver's progress, in one transaction. */
static int commit(struct sim *s, gpuq_diag_t *diag)
{
	uint64_t t0;
	int rc;

	if (!s->persist)
		return GPUQ_OK;
	t0 = cpu_ns(NULL);
	rc = engine_commit(s->e, stage, s, diag);
	t0 = cpu_ns(NULL) - t0;
	if (s->metrics)
		qmetrics_commit_observe(s->metrics, rc == GPUQ_OK, t0);
	if (rc)
		return rc;
	committed(s, (double)t0 / 1e9);
	return GPUQ_OK;
}

struct scan_ctx {
	struct sim *s;
	gpuq_diag_t *diag;
	size_t count; /* records seen */
};

static int scan_outcome(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
			size_t vlen)
{
	struct scan_ctx *c = ctx;
	const uint8_t *k = key, *p = (const uint8_t *)val + 1;
	uint32_t wid;
	sim_outcome_t *o;

	(void)type;
	if (klen != 4 || vlen != OUTCOME_LEN || ((const uint8_t *)val)[0] != REC_VERSION)
		return gpuq_diag_set(c->diag, GPUQ_ECORRUPT, "workload record: bad size");
	wid = (uint32_t)k[0] << 24 | (uint32_t)k[1] << 16 | (uint32_t)k[2] << 8 | k[3];
	if (wid >= c->s->r->n_wl)
		return gpuq_diag_set(c->diag, GPUQ_ECORRUPT,
				     "workload record %" PRIu32 ": no such workload", wid);
	o = &c->s->r->wl[wid];
	o->first_admit_ms = (int64_t)get_u64(&p);
	o->last_admit_ms = (int64_t)get_u64(&p);
	o->finish_ms = (int64_t)get_u64(&p);
	o->run_ms = (int64_t)get_u64(&p);
	o->amount = (int64_t)get_u64(&p);
	o->cq = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	p += 4;
	o->preemptions =
	    (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	o->state = p[4];
	o->timeouts = p[5];
	if (o->state > SIM_WL_DROPPED)
		return gpuq_diag_set(c->diag, GPUQ_ECORRUPT,
				     "workload record %" PRIu32 ": bad state %u", wid, o->state);
	return GPUQ_OK;
}

static int scan_eviction(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
			 size_t vlen)
{
	struct scan_ctx *c = ctx;
	const uint8_t *p = (const uint8_t *)val + 1;
	sim_preemption_t *e;

	(void)type;
	(void)key;
	if (klen != 8 || vlen != EVICTION_LEN || ((const uint8_t *)val)[0] != REC_VERSION ||
	    c->count >= c->s->cap_preempt)
		return gpuq_diag_set(c->diag, GPUQ_ECORRUPT, "eviction record: bad size or count");
	e = &c->s->r->preempt[c->count++];
	e->at_ms = (int64_t)get_u64(&p);
	e->admitted_ms = (int64_t)get_u64(&p);
	e->victim =
	    (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	e->by = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
	memcpy(e->reason, p + 8, sizeof(e->reason));
	e->reason[sizeof(e->reason) - 1] = '\0';
	return e->victim < c->s->r->n_wl
		   ? GPUQ_OK
		   : gpuq_diag_set(c->diag, GPUQ_ECORRUPT, "eviction record: bad victim");
}

/* engine_open's check, before the core's records are restored: the
 * progress record, when there is one, must be of this trace (s->resumed). */
static int check_progress(void *ctx, engine_t *e, gpuq_diag_t *diag)
{
	struct sim *s = ctx;
	void *val = NULL;
	size_t vlen = 0;
	int rc = engine_record_get(e, T_PROGRESS, "progress", 8, &val, &vlen);

	if (rc == GPUQ_ENOTFOUND)
		return GPUQ_OK;
	if (rc)
		return gpuq_diag_set(diag, rc, "state dir: reading progress: %s",
				     gpuq_strerror(rc));
	rc = decode_progress(s, val, vlen, diag);
	free(val);
	s->resumed = rc == GPUQ_OK;
	return rc;
}

/* Resume the simulator's side of a run whose progress check_progress read
 * (the core's records are restored by then): the outcomes, the eviction
 * log, the pending events. */
static int restore(struct sim *s, gpuq_diag_t *diag)
{
	struct scan_ctx c = {.s = s, .diag = diag};
	int rc = engine_record_scan(s->e, T_WORKLOAD, scan_outcome, &c);

	if (rc)
		return rc;
	s->cap_preempt = s->persisted_preempt + 1;
	s->r->preempt = calloc(s->cap_preempt, sizeof(*s->r->preempt));
	if (!s->r->preempt)
		return GPUQ_ENOMEM;
	c.count = 0;
	rc = engine_record_scan(s->e, T_EVICTION, scan_eviction, &c);
	if (rc)
		return rc;
	if (c.count != s->persisted_preempt)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state dir: %zu eviction records, %zu "
				     "expected",
				     c.count, s->persisted_preempt);
	s->r->n_preempt = c.count;
	/* Rebuild the pending events: every one scheduled lies after `now`. */
	for (uint32_t wid = 0; wid < s->r->n_wl && !rc; wid++) {
		const sim_outcome_t *o = &s->r->wl[wid];
		int64_t delay = sim_ready_delay(s, wid);
		if (o->state != SIM_WL_ADMITTED)
			continue;
		if (delay > 0 && o->last_admit_ms + delay > s->now)
			rc = sim_heap_push(s, (event_t){.at = o->last_admit_ms + delay,
							.wid = wid,
							.run = o->preemptions,
							.kind = EV_READY});
		if (!rc)
			rc = sim_heap_push(s, (event_t){.at = o->finish_ms,
							.wid = wid,
							.run = o->preemptions,
							.kind = EV_FINISH});
	}
	if (!rc)
		rc = sim_econ_restore(s);
	return rc;
}

/* Node n of the trace into the core as it is at `at` (Ready or not). */
static int feed_node(struct sim *s, const sim_node_t *n, int64_t at, gpuq_diag_t *diag)
{
	const sim_trace_t *t = s->t;
	queue_label_t l[SIM_NODE_LABELS_MAX];
	queue_request_t a[SIM_NODE_RES_MAX];
	queue_taint_t tn[SIM_NODE_TAINTS_MAX];
	bool down = n->not_ready_at_ms >= 0 && n->not_ready_at_ms <= at;
	queue_node_spec_t spec = {.name = n->name,
				  .labels = l,
				  .n_labels = n->n_labels,
				  .allocatable = a,
				  .n_allocatable = n->n_alloc,
				  .taints = tn,
				  .n_taints = n->n_taints,
				  .unschedulable = n->unschedulable,
				  .not_ready = down,
				  .not_ready_since = down ? n->not_ready_at_ms : 0};

	for (size_t k = 0; k < n->n_labels; k++)
		l[k] = (queue_label_t){n->labels[k].key, n->labels[k].value};
	for (size_t k = 0; k < n->n_alloc; k++)
		a[k] = (queue_request_t){t->res_names[n->alloc[k].res], n->alloc[k].amount};
	for (size_t k = 0; k < n->n_taints; k++)
		tn[k] = (queue_taint_t){n->taints[k].key, n->taints[k].value,
					engine_effect_of(n->taints[k].effect)};
	return engine_change_apply(
	    s->e, &(engine_change_t){.kind = ENGINE_CHANGE_NODE_SET, .node_spec = &spec}, diag);
}

static int time_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The trace's nodes into the core as they are at s->now (they are not
 * stored: given again on a resumed run, as a daemon lists them again), and
 * the times some turn not Ready, ascending. */
static int feed_nodes(struct sim *s, gpuq_diag_t *diag)
{
	const sim_trace_t *t = s->t;
	size_t n = 0;

	for (size_t i = 0; i < t->n_nodes; i++) {
		int rc = feed_node(s, &t->nodes[i], s->now, diag);

		if (rc)
			return rc;
		n += t->nodes[i].not_ready_at_ms >= 0;
	}
	s->fed_until = s->now;
	if (!n)
		return GPUQ_OK;
	s->fail_at = malloc(n * sizeof(*s->fail_at));
	if (!s->fail_at)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].not_ready_at_ms >= 0)
			s->fail_at[s->n_fail_at++] = t->nodes[i].not_ready_at_ms;
	qsort(s->fail_at, s->n_fail_at, sizeof(*s->fail_at), time_cmp);
	n = 0;
	for (size_t i = 0; i < s->n_fail_at; i++) /* distinct */
		if (!n || s->fail_at[n - 1] != s->fail_at[i])
			s->fail_at[n++] = s->fail_at[i];
	s->n_fail_at = n;
	while (s->next_fail < n && s->fail_at[s->next_fail] <= s->fed_until)
		s->next_fail++;
	return GPUQ_OK;
}

/* The nodes that turned not Ready after fed_until, up to s->now, into the
 * core (a resumed run's first step gives all of them since its start). */
static int fail_nodes(struct sim *s, gpuq_diag_t *diag)
{
	int rc = GPUQ_OK;

	if (s->next_fail < s->n_fail_at && s->fail_at[s->next_fail] <= s->now) {
		for (size_t i = 0; i < s->t->n_nodes && !rc; i++) {
			const sim_node_t *n = &s->t->nodes[i];

			if (n->not_ready_at_ms > s->fed_until && n->not_ready_at_ms <= s->now)
				rc = feed_node(s, n, s->now, diag);
		}
		while (s->next_fail < s->n_fail_at && s->fail_at[s->next_fail] <= s->now)
			s->next_fail++;
		s->dirty = true;
	}
	s->fed_until = s->now;
	return rc;
}

/* Open the engine over the trace's policy: memory only without state_dir;
 * else on the store there (read_only: a check beside a live writer), with
 * the simulator's record types, resuming the run it holds. */
static int open_engine(struct sim *s, const char *state_dir, bool no_sync, bool read_only,
		       gpuq_diag_t *diag)
{
	queue_config_t cfg;
	engine_opts_t o;
	int rc;

	core_config(s->t, &cfg);
	cfg.reservations_off = s->no_reservation;
	engine_opts_init(&o);
	if (state_dir) {
		o.state_dir = state_dir;
		o.nosync = no_sync;
		o.read_only = read_only;
		o.driver_types[T_PROGRESS - ENGINE_TYPE_DRIVER_FIRST] = "sim-progress";
		o.driver_types[T_WORKLOAD - ENGINE_TYPE_DRIVER_FIRST] = "sim-workload";
		o.driver_types[T_EVICTION - ENGINE_TYPE_DRIVER_FIRST] = "sim-eviction";
		o.check = check_progress;
		o.check_ctx = s;
		s->dirty_wl = calloc(s->r->n_wl + 1, sizeof(*s->dirty_wl));
		s->wl_marked = calloc(s->r->n_wl + 1, 1);
		if (!s->dirty_wl || !s->wl_marked)
			return GPUQ_ENOMEM;
	}
	CORE(s, engine_open(s->t->policy, &cfg, &o, &s->e, diag));
	if (!rc)
		rc = feed_nodes(s, diag);
	if (rc)
		return rc;
	s->persist = state_dir && !read_only;
	if (s->resumed)
		return restore(s, diag);
	if (engine_resumed(s->e) && !read_only) /* a daemon's store */
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state dir %s: it holds queue records but no simulator run",
				     state_dir);
	return GPUQ_OK;
}

/* ---- the loop ---- */

static int64_t next_time(const struct sim *s, int64_t qnext)
{
	int64_t next = INT64_MAX, iv = s->t->opt.cycle_interval_ms;

	if (s->next_arrival < s->t->n_arrivals)
		next = s->t->arrivals[s->next_arrival].at_ms;
	if (s->n_heap && s->heap[0].at < next)
		next = s->heap[0].at;
	if (qnext < next)
		next = qnext;
	if (s->next_fail < s->n_fail_at && s->fail_at[s->next_fail] < next)
		next = s->fail_at[s->next_fail];
	if (s->dirty) {
		int64_t c = iv == 0 ? s->now : (s->now / iv + 1) * iv;
		if (c < next)
			next = c;
	}
	return next;
}

/* engine_step's book hook: the tick's or the cycle's result into the
 * outcomes (before the commit: they go in the step's batch). A cycle that
 * evicted asks for another at this instant, SAME_TIME_CYCLES_MAX in a row
 * at most (counted over the steps at one instant: the events of that
 * instant come between them). */
static int book(void *ctx, engine_phase_t phase, const queue_result_t *res, gpuq_diag_t *diag)
{
	struct sim *s = ctx;

	if (phase == ENGINE_STEP_TICK) {
		if (res->n_evictions)
			s->dirty = true;
		return on_result(s, res, diag);
	}
	s->r->cycles++;
	s->cycle_admitted = res->n_admissions > 0;
	s->dirty = res->n_evictions > 0 && ++s->same_time < SAME_TIME_CYCLES_MAX;
	if (res->n_evictions > 0 && !s->dirty)
		s->r->cycle_cap_hits++; /* reported: the core is livelocked */
	return on_result(s, res, diag);
}

/* engine_step's booked hook: the step's predictions and counters, before
 * the commit that records them. */
static int booked(void *ctx, gpuq_diag_t *diag)
{
	struct sim *s = ctx;
	int rc = sim_econ_step(s, diag);

	if (rc)
		return rc;
	/* nothing runs, nothing arrives: stuck, unless a budget holds work
	 * until its window turns */
	if (s->next_arrival == s->t->n_arrivals && s->n_admitted == 0 && !engine_budget_holds(s->e))
		s->idle++;
	s->r->steps++;
	return GPUQ_OK;
}

/* The engine's step at s->now: its tick, a cycle when one is due and the
 * interval allows, the outcomes booked, one commit (with a store). */
static int engine_at(struct sim *s, gpuq_diag_t *diag)
{
	int64_t iv = s->t->opt.cycle_interval_ms;
	engine_step_opts_t so = {.cycles = iv == 0 || s->now % iv == 0 ? 1 : 0,
				 .cycle_due = s->dirty,
				 .book = book,
				 .booked = booked,
				 .stage = s->persist ? stage : NULL,
				 .clock_ns = cpu_ns,
				 .ctx = s};
	engine_step_report_t rep;
	int rc;

	s->cycle_admitted = false;
	rc = engine_step(s->e, s->now, &so, &rep, diag);
	s->core_cpu += (double)rep.core_ns / 1e9;
	if (s->metrics && rep.cycles)
		qmetrics_cycle_observe(s->metrics, s->cycle_admitted, rep.core_ns);
	if (rep.commit_tried && s->metrics)
		qmetrics_commit_observe(s->metrics, rep.commit_rc == GPUQ_OK, rep.commit_ns);
	if (rep.commit_tried && !rep.commit_rc)
		committed(s, (double)rep.commit_ns / 1e9);
	if (rc && rc == rep.core_rc)
		return gpuq_diag_set(diag, rc, "engine_step at %" PRId64 " ms: %s", s->now,
				     gpuq_strerror(rc));
	return rc;
}

static int step(struct sim *s, gpuq_diag_t *diag)
{
	const sim_trace_t *t = s->t;
	int64_t qnext, next;
	int rc = GPUQ_OK;

	/* Drop events of runs that were evicted, so they cost no step: a resumed
	 * run never had them, and both must take the same steps. */
	while (s->n_heap && sim_event_stale(s, &s->heap[0]))
		heap_pop(s);
	qnext = queue_next_event(engine_core(s->e), s->now);
	next = next_time(s, qnext);
	if (next == INT64_MAX || next > SIM_TIME_MAX_MS ||
	    (s->next_arrival == t->n_arrivals && s->n_pending == 0 && s->n_admitted == 0) ||
	    s->idle > IDLE_STEPS_MAX) {
		s->done = true;
		return commit(s, diag);
	}
	if (next > s->now)
		s->same_time = 0;
	s->now = next;
	if (next == qnext)
		s->dirty = true;
	rc = fail_nodes(s, diag);
	while (s->n_heap && s->heap[0].at == s->now && !rc) {
		event_t ev = heap_pop(s);
		rc = on_event(s, &ev, diag);
	}
	while (!rc && s->next_arrival < t->n_arrivals &&
	       t->arrivals[s->next_arrival].at_ms == s->now) {
		rc = add_workload(s, (uint32_t)s->next_arrival++, diag);
		s->dirty = true;
	}
	return rc ? rc : engine_at(s, diag);
}

static void init_outcomes(struct sim *s)
{
	const sim_trace_t *t = s->t;
	uint16_t util = UINT16_MAX;

	for (size_t i = 0; i < t->n_res; i++)
		if (!strcmp(t->res_names[i], t->opt.util_resource))
			util = (uint16_t)i;
	for (size_t i = 0; i < t->n_shapes; i++) {
		const sim_shape_t *sh = &t->shapes[i];
		int64_t sum = 0;
		for (size_t p = 0; p < sh->n_podsets; p++)
			for (size_t r = 0; r < sh->podsets[p].n_req; r++)
				if (sh->podsets[p].req[r].res == util)
					sum += sh->podsets[p].req[r].amount * sh->podsets[p].count;
		s->shape_amount[i] = sum;
	}
	for (size_t i = 0; i < s->r->n_wl; i++) {
		sim_outcome_t *o = &s->r->wl[i];
		const sim_arrival_t *a = &t->arrivals[i];
		o->first_admit_ms = o->last_admit_ms = o->finish_ms = -1;
		o->amount = s->shape_amount[a->shape];
		o->cq = (uint32_t)policy_lq_at(t->policy, a->lq)->cq->index;
		o->state = SIM_WL_FUTURE;
	}
}

/* Ask the core why each workload still waiting at the end waits. */
static int explain_waiting(struct sim *s)
{
	sim_report_t *r = s->r;
	size_t n = 0;

	for (size_t i = 0; i < r->n_wl; i++)
		if (r->wl[i].state == SIM_WL_PENDING || r->wl[i].state == SIM_WL_INADMISSIBLE)
			n++;
	if (n > SIM_EXPLAIN_MAX)
		n = SIM_EXPLAIN_MAX;
	if (!n)
		return GPUQ_OK;
	r->why_wl = calloc(n, sizeof(*r->why_wl));
	r->why = calloc(n, sizeof(*r->why));
	if (!r->why_wl || !r->why)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < r->n_wl && r->n_why < n; i++) {
		char uid[UID_MAX];
		int rc;
		if (r->wl[i].state != SIM_WL_PENDING && r->wl[i].state != SIM_WL_INADMISSIBLE)
			continue;
		r->why_wl[r->n_why] = i;
		snprintf(uid, sizeof(uid), "w%" PRIu32, i);
		CORE(s, queue_workload_explain(engine_core(s->e), uid, r->why[r->n_why],
					       SIM_EXPLAIN_LEN));
		if (rc == GPUQ_ENOTFOUND) /* never reached the core */
			snprintf(r->why[r->n_why], SIM_EXPLAIN_LEN,
				 "its ClusterQueue's namespaceSelector does not select its "
				 "namespace");
		r->n_why++;
	}
	return GPUQ_OK;
}

static void sim_free(struct sim *s)
{
	sim_econ_free(s);
	engine_close(s->e);
	free(s->heap);
	free(s->fail_at);
	free(s->shape_amount);
	free(s->dirty_wl);
	free(s->wl_marked);
	free(s->requeued);
}

/* Zero s and allocate what every run over trace needs (report, outcome
 * table, shape amounts), then open the engine (open_engine). GPUQ_ENOMEM with s->r NULL
 * means nothing was allocated; any other failure leaves s for the caller's
 * usual cleanup. */
static int sim_setup(struct sim *s, const sim_trace_t *trace, const char *state_dir, bool no_sync,
		     bool read_only, bool no_reservation, gpuq_diag_t *diag)
{
	memset(s, 0, sizeof(*s));
	s->t = trace;
	s->no_reservation = no_reservation;
	s->r = calloc(1, sizeof(*s->r));
	if (!s->r)
		return GPUQ_ENOMEM;
	s->r->trace = trace;
	s->r->n_wl = trace->n_arrivals;
	s->r->wl = calloc(trace->n_arrivals + 1, sizeof(*s->r->wl));
	s->shape_amount = calloc(trace->n_shapes + 1, sizeof(*s->shape_amount));
	if (!s->r->wl || !s->shape_amount)
		return GPUQ_ENOMEM;
	init_outcomes(s);
	return open_engine(s, state_dir, no_sync, read_only, diag);
}

/* Feed m from now on: the core (built or restored), and a requeue time per
 * workload (0 after a resume: the wait then runs from creation). */
static int metrics_setup(struct sim *s, qmetrics_t *m)
{
	s->requeued = calloc(s->r->n_wl + 1, sizeof(*s->requeued));
	if (!s->requeued)
		return GPUQ_ENOMEM;
	s->metrics = m;
	return qmetrics_core_set(m, engine_core(s->e));
}

/* The report's chargeback inputs: a copy of the core's ledger, and the
 * prices in force (ledger_prices_merge: a flag wins over an annotation). */
static int chargeback_setup(struct sim *s, const sim_run_options_t *opt)
{
	size_t n_flavors = policy_flavor_count(s->t->policy), n_flags = opt ? opt->n_prices : 0;
	ledger_price_t *declared = calloc(n_flavors + 1, sizeof(*declared));
	size_t n_declared = 0;
	int rc;

	s->r->prices = calloc(n_flavors + n_flags + 1, sizeof(*s->r->prices));
	if (!declared || !s->r->prices) {
		free(declared);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < n_flavors; i++) {
		const policy_flavor_t *f = policy_flavor_at(s->t->policy, i);
		if (f->has_price)
			declared[n_declared++] = (ledger_price_t){f->name, f->price_per_hour};
	}
	rc = ledger_prices_merge(opt ? opt->prices : NULL, n_flags, declared, n_declared,
				 s->r->prices, n_flavors + n_flags, &s->r->n_prices);
	free(declared);
	if (!rc)
		rc = ledger_clone(queue_ledger(engine_core(s->e)), &s->r->ledger);
	return rc;
}

int sim_run(const sim_trace_t *trace, const sim_run_options_t *opt, sim_report_t **out,
	    gpuq_diag_t *diag)
{
	struct sim s;
	double t0 = sim_cpu_now();
	int rc;

	*out = NULL;
	rc = sim_setup(&s, trace, opt ? opt->state_dir : NULL, opt && opt->no_sync, false,
		       opt && opt->no_reservation, diag);
	if (rc == GPUQ_ENOMEM && !s.r)
		return rc;
	if (!rc && opt && opt->metrics)
		rc = metrics_setup(&s, opt->metrics);
	if (!rc)
		rc = sim_econ_setup(&s, opt, diag);
	if (rc)
		goto fail;
	for (uint64_t n = 1; !s.done; n++) {
		rc = step(&s, diag);
		if (rc)
			goto fail;
		if (opt && opt->check) {
			char why[GPUQ_DIAG_MAX - 80];
			rc = queue_check(engine_core(s.e), why, sizeof(why));
			if (rc) {
				gpuq_diag_set(diag, rc, "invariant broken at %" PRId64 " ms: %s",
					      s.now, rc == GPUQ_ENOMEM ? "out of memory" : why);
				goto fail;
			}
		}
		if (s.persist && opt && opt->stop_after && n >= opt->stop_after && !s.done) {
			rc = gpuq_diag_set(diag, GPUQ_EAGAIN, "stopped after %" PRIu64 " step(s)",
					   n);
			goto fail;
		}
	}
	rc = explain_waiting(&s);
	if (!rc && s.metrics)
		rc = qmetrics_publish(s.metrics, engine_core(s.e)); /* the state at the end */
	if (rc)
		goto fail;
	rc = chargeback_setup(&s, opt);
	if (!rc)
		rc = sim_econ_report(&s);
	if (rc)
		goto fail;
	s.r->end_ms = s.now;
	s.r->core_cpu_s = s.core_cpu;
	s.r->persist_cpu_s = s.persist_cpu;
	s.r->core_bytes = queue_memory_bytes(engine_core(s.e));
	s.r->total_cpu_s = sim_cpu_now() - t0;
	{
		struct rusage ru;
		if (!getrusage(RUSAGE_SELF, &ru))
			s.r->max_rss_kb = ru.ru_maxrss;
	}
	sim_free(&s);
	*out = s.r;
	return GPUQ_OK;
fail:
	sim_free(&s);
	sim_report_destroy(s.r);
	return rc;
}

int sim_engine_open(const sim_trace_t *trace, engine_t **out, gpuq_diag_t *diag)
{
	queue_config_t cfg;

	core_config(trace, &cfg);
	return engine_open(trace->policy, &cfg, NULL, out, diag);
}

/* Each core workload must be one the simulator has in the core, in the same
 * state, admitted at the same time; returns how many there are. */
static int cross_check(struct sim *s, sim_state_summary_t *sum, gpuq_diag_t *diag)
{
	for (queue_wl_t id = queue_workload_next(engine_core(s->e), QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(engine_core(s->e), id)) {
		queue_workload_view_t v;
		uint32_t wid;
		const sim_outcome_t *o;
		bool admitted;
		if (queue_workload_view(engine_core(s->e), id, &v))
			continue;
		wid = wid_of(v.uid);
		if (wid >= s->r->n_wl)
			return gpuq_diag_set(diag, GPUQ_ECORRUPT,
					     "core workload \"%s\": no such arrival", v.uid);
		o = &s->r->wl[wid];
		admitted = v.state == QUEUE_WL_ADMITTED || v.state == QUEUE_WL_EVICTING;
		if (admitted ? o->state != SIM_WL_ADMITTED || o->last_admit_ms != v.admitted_ms
			     : o->state != SIM_WL_PENDING && o->state != SIM_WL_INADMISSIBLE)
			return gpuq_diag_set(diag, GPUQ_ECORRUPT,
					     "workload %s: %s in the core (admitted at %" PRId64
					     "), state %u (admitted at %" PRId64
					     ") in the simulator's record",
					     v.uid, queue_wl_state_name(v.state), v.admitted_ms,
					     o->state, o->last_admit_ms);
		sum->core_admitted += admitted;
		sum->core_pending += !admitted;
	}
	for (uint32_t wid = 0; wid < s->r->n_wl; wid++) {
		const sim_outcome_t *o = &s->r->wl[wid];
		char uid[UID_MAX];
		queue_wl_t id;
		if (o->state != SIM_WL_PENDING && o->state != SIM_WL_ADMITTED &&
		    o->state != SIM_WL_INADMISSIBLE)
			continue;
		snprintf(uid, sizeof(uid), "w%" PRIu32, wid);
		if (queue_workload_find(engine_core(s->e), uid, &id) == GPUQ_OK)
			continue;
		if (o->state == SIM_WL_INADMISSIBLE) /* its CQ does not select its namespace */
			continue;
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "workload %s: state %u in the simulator's record, not in the "
				     "core",
				     uid, o->state);
	}
	if (sum->core_pending != s->n_pending || sum->core_admitted != s->n_admitted)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "progress counts %" PRIu64 " pending, %" PRIu64
				     " admitted; the core holds %zu and %zu",
				     s->n_pending, s->n_admitted, sum->core_pending,
				     sum->core_admitted);
	return GPUQ_OK;
}

/* The core's workloads, when the store holds no simulator run (a daemon's
 * records, or none). */
static void count_core(const engine_t *e, sim_state_summary_t *sum)
{
	for (queue_wl_t id = queue_workload_next(engine_core(e), QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(engine_core(e), id)) {
		queue_workload_view_t v;
		if (queue_workload_view(engine_core(e), id, &v))
			continue;
		if (v.state == QUEUE_WL_PENDING)
			sum->core_pending++;
		else if (v.state != QUEUE_WL_FINISHED)
			sum->core_admitted++;
	}
}

int sim_state_check(const sim_trace_t *trace, const char *state_dir, sim_state_summary_t *sum,
		    engine_t **engine, gpuq_diag_t *diag)
{
	struct sim s;
	int rc;

	memset(sum, 0, sizeof(*sum));
	if (engine)
		*engine = NULL;
	/* read only, in one read snapshot: a writer may keep committing */
	rc = sim_setup(&s, trace, state_dir, false, true, false, diag);
	if (rc == GPUQ_ENOMEM && !s.r)
		return rc;
	if (rc)
		goto done;
	sum->has_progress = s.resumed;
	if (s.resumed)
		rc = cross_check(&s, sum, diag);
	else
		count_core(s.e, sum);
	if (rc)
		goto done;
	sum->now_ms = s.now;
	sum->steps = s.r->steps;
	sum->done = s.done;
	sum->next_arrival = s.next_arrival;
	sum->preemptions = s.r->n_preempt;
	for (size_t i = 0; i < s.r->n_wl; i++)
		if (s.r->wl[i].state <= SIM_WL_DROPPED)
			sum->by_state[s.r->wl[i].state]++;
	if (engine) {
		*engine = s.e;
		s.e = NULL;
	}
done:
	sim_free(&s);
	sim_report_destroy(s.r);
	return rc;
}

void sim_report_destroy(sim_report_t *r)
{
	if (!r)
		return;
	free(r->wl);
	free(r->preempt);
	free(r->why_wl);
	free(r->why);
	ledger_destroy(r->ledger);
	free(r->prices);
	for (size_t i = 0; i < r->n_budgets; i++)
		free(r->budget_names[i]);
	free(r->budget_names);
	free(r->budgets);
	free(r->predicted);
	for (size_t i = 0; i < r->n_topo_levels; i++)
		free(r->topo_levels[i]);
	free(r->topo_cls);
	sim_report_destroy(r->without);
	free(r);
}

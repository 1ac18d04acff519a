/* predict/pass.c: one prediction pass: the live core forked (engine_fork:
 * a copy through its records, the pending workloads beyond the cap left
 * out of it), and the fork stepped forward in virtual time (engine_step, as
 * the controller steps its engine) until every simulated workload has
 * started or a cap ends the pass. The fork is made in its two halves: the
 * records read and encoded in predict_begin (the live core's thread), the
 * copy built from them in predict_finish (the run's). */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "predict/predict.h"

#define SAME_TIME_CYCLES_MAX 100 /* cycles at one instant (each preemption needs one more) */
#define STOP_EVERY 64		 /* steps between two stop() polls */
#define OVERRUN_MIN_MS 60000	 /* a workload past its runtime ends in at least this */

void predict_opts_default(predict_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->workloads_max = PREDICT_WORKLOADS_DEFAULT;
	o->steps_max = PREDICT_STEPS_DEFAULT;
	o->horizon_ms = PREDICT_HORIZON_DEFAULT_MS;
	o->default_runtime_ms = PREDICT_RUNTIME_DEFAULT_MS;
}

typedef struct {
	int64_t at;   /* when it finishes */
	uint32_t wl;  /* copy workload id */
	uint32_t run; /* its admissions when scheduled: stale once it moved on */
} fev_t;

typedef struct {
	engine_t *e;		    /* the fork: the copy, stepped and changed through it */
	const queue_t *q;	    /* its core, read */
	const predict_opts_t *o;    /* caps */
	predict_runtime_fn fn;	    /* the caller's runtimes */
	void *ctx;		    /* its argument */
	const predict_history_t *h; /* the LocalQueues' history */
	size_t n_ids;		    /* copy workload ids below this */
	int64_t *start;		    /* per id: first start in the pass, -1 */
	uint32_t *run;		    /* per id: admissions in the pass */
	uint8_t *tracked;	    /* per id: pending at the start, simulated */
	int64_t *rt;		    /* per id: its runtime, resolved before the run
				       (fn and h are not called after) */
	fev_t *heap;		    /* finishes, a min-heap by (at, wl) */
	size_t n_heap, cap_heap;
	size_t waiting; /* tracked ones not started yet */
	int64_t now;	/* the instant being stepped */
} pass_t;

static bool fev_less(const fev_t *a, const fev_t *b)
{
	return a->at != b->at ? a->at < b->at : a->wl < b->wl;
}

static int heap_push(pass_t *p, fev_t e)
{
	size_t i;

	if (p->n_heap == p->cap_heap) {
		size_t cap = p->cap_heap ? p->cap_heap * 2 : 256;
		fev_t *g = realloc(p->heap, cap * sizeof(*g));

		if (!g)
			return GPUQ_ENOMEM;
		p->heap = g;
		p->cap_heap = cap;
	}
	i = p->n_heap++;
	while (i > 0 && fev_less(&e, &p->heap[(i - 1) / 2])) {
		p->heap[i] = p->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	p->heap[i] = e;
	return GPUQ_OK;
}

static fev_t heap_pop(pass_t *p)
{
	fev_t top = p->heap[0], last = p->heap[--p->n_heap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= p->n_heap)
			break;
		if (c + 1 < p->n_heap && fev_less(&p->heap[c + 1], &p->heap[c]))
			c++;
		if (!fev_less(&p->heap[c], &last))
			break;
		p->heap[i] = p->heap[c];
		i = c;
	}
	if (p->n_heap)
		p->heap[i] = last;
	return top;
}

/* What workload id of the copy runs for, as resolved before the run. */
static int64_t runtime_of(const pass_t *p, queue_wl_t id)
{
	return id < p->n_ids && p->rt ? p->rt[id] : p->o->default_runtime_ms;
}

/* What workload v of core q runs for: the caller's word, its
 * LocalQueue's median, or the default. */
static int64_t runtime_resolve(const pass_t *p, const queue_t *q, const queue_workload_view_t *v)
{
	int64_t r = -1;

	if (p->fn)
		r = p->fn(p->ctx, v);
	if (r < 0)
		r = predict_history_median(p->h, queue_lq_name(q, v->lq));
	return r < 0 ? p->o->default_runtime_ms : r;
}

/* The runtimes of the workloads a fork keeps, resolved on the live core
 * (predict_begin: the caller's word and the history are read there), by
 * uid, for the copy's ids once it is built (predict_finish). */
typedef struct {
	char *uid;  /* owned */
	int64_t rt; /* its runtime */
} uid_rt_t;

static int uid_rt_cmp(const void *a, const void *b)
{
	return strcmp(((const uid_rt_t *)a)->uid, ((const uid_rt_t *)b)->uid);
}

static const char *uid_of(const pass_t *p, queue_wl_t id)
{
	queue_workload_view_t v;

	return queue_workload_view(p->q, id, &v) ? NULL : v.uid;
}

/* The copy's running workloads end when their runtime says (a workload past
 * it soon); its evicting ones are gone. */
static int settle_running(pass_t *p, int64_t now)
{
	for (queue_wl_t id = queue_workload_next(p->q, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(p->q, id)) {
		queue_workload_view_t v;
		int64_t rt, rem;
		int rc = GPUQ_OK;

		if (queue_workload_view(p->q, id, &v))
			continue;
		if (v.state == QUEUE_WL_EVICTING) {
			rc = engine_change_apply(p->e,
						 &(engine_change_t){.kind = ENGINE_CHANGE_EVICTED,
								    .uid = v.uid,
								    .now = now},
						 NULL);
		} else if (v.state == QUEUE_WL_ADMITTED) {
			if (v.gang_total && !v.ready)
				rc = engine_change_apply(
				    p->e,
				    &(engine_change_t){
					.kind = ENGINE_CHANGE_PODS_READY, .uid = v.uid, .now = now},
				    NULL);
			rt = runtime_of(p, id);
			rem = rt - (now - v.admitted_ms);
			if (rem <= 0)
				rem = rt / 10 > OVERRUN_MIN_MS ? rt / 10 : OVERRUN_MIN_MS;
			if (!rc)
				rc = heap_push(p, (fev_t){now + rem, id, 0});
		}
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Keep the pending workloads at positions 1..P of every ClusterQueue, P the
 * largest that keeps them within workloads_max; delete the rest from the
 * copy (none when the copy left them out: see beyond_cap). ids[0..n): the
 * pending ones grouped by CQ, each in its order. */
static int select_pending(pass_t *p, const queue_wl_t *ids, size_t n, int64_t now)
{
	uint8_t *beyond;
	size_t n_ids;
	int rc = queue_pending_beyond(p->q, p->o->workloads_max, &beyond, &n_ids);

	for (size_t i = 0; i < n && !rc; i++) {
		queue_workload_view_t v;

		if (queue_workload_view(p->q, ids[i], &v))
			continue;
		if (ids[i] < n_ids && !beyond[ids[i]]) {
			p->tracked[ids[i]] = 1;
			p->waiting++;
		} else {
			rc = engine_change_apply(p->e,
						 &(engine_change_t){.kind = ENGINE_CHANGE_DELETE,
								    .uid = v.uid,
								    .now = now},
						 NULL);
		}
	}
	free(beyond);
	return rc;
}

/* The live core's pending workloads select_pending would delete from the
 * copy (beyond position P), by live id, so the copy never carries them: a
 * pass over 100,000 queued workloads copies the few thousand it simulates,
 * not a second core (the order is the core's total one, the same in the
 * copy). */
typedef struct {
	uint8_t *drop; /* per live id: 1 = left out of the copy */
	size_t n;      /* entries */
} beyond_t;

static bool copy_keeps(void *ctx, queue_wl_t id)
{
	const beyond_t *b = ctx;

	return id >= b->n || !b->drop[id];
}

static int beyond_cap(const queue_t *live, size_t cap, beyond_t *b)
{
	return queue_pending_beyond(live, cap, &b->drop, &b->n);
}

/* engine_step's book hook: the finishes of what a result admitted, and
 * the runs it ended (ctx: the pass; the step's instant in p->now). */
static int on_result(void *ctx, engine_phase_t phase, const queue_result_t *r, gpuq_diag_t *diag)
{
	pass_t *p = ctx;
	int64_t t = p->now;

	(void)phase;
	(void)diag;
	for (size_t i = 0; i < r->n_evictions; i++)
		p->run[r->evictions[i].victim]++; /* its finish is stale */
	for (size_t i = 0; i < r->n_admissions; i++) {
		queue_wl_t id = r->admissions[i].wl;
		int rc;

		if (id >= p->n_ids)
			continue;
		p->run[id]++;
		if (p->tracked[id] && p->start[id] < 0) {
			p->start[id] = t;
			p->waiting--;
		}
		rc = heap_push(p, (fev_t){t + runtime_of(p, id), id, p->run[id]});
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Everything due at t: finishes, then the fork's step (a tick, cycles
 * until nothing is evicted, at most SAME_TIME_CYCLES_MAX). */
static int step_at(pass_t *p, int64_t t)
{
	engine_step_opts_t so = {
	    .cycles = SAME_TIME_CYCLES_MAX, .cycle_due = true, .book = on_result, .ctx = p};
	int rc = GPUQ_OK;

	while (!rc && p->n_heap && p->heap[0].at <= t) {
		fev_t e = heap_pop(p);
		queue_workload_view_t v;

		if (queue_workload_view(p->q, e.wl, &v) || v.state != QUEUE_WL_ADMITTED ||
		    p->run[e.wl] != e.run)
			continue;
		rc = engine_change_apply(
		    p->e, &(engine_change_t){.kind = ENGINE_CHANGE_FINISH, .uid = v.uid, .now = t},
		    NULL);
		if (!rc)
			rc = engine_change_apply(p->e,
						 &(engine_change_t){.kind = ENGINE_CHANGE_DELETE,
								    .uid = v.uid,
								    .now = t},
						 NULL);
	}
	p->now = t;
	return rc ? rc : engine_step(p->e, t, &so, NULL, NULL);
}

static int run_forward(pass_t *p, int64_t now, predict_result_t *out)
{
	int64_t t = now;
	int rc = GPUQ_OK;

	while (!rc && p->waiting) {
		int64_t next;

		rc = step_at(p, t);
		out->steps++;
		out->reached_ms = t;
		if (rc || !p->waiting)
			break;
		if (out->steps >= p->o->steps_max) {
			out->capped = true;
			break;
		}
		if (out->steps % STOP_EVERY == 0 && p->o->stop && p->o->stop(p->o->stop_ctx)) {
			out->stopped = true;
			break;
		}
		next = queue_next_event(p->q, t);
		if (p->n_heap && p->heap[0].at < next)
			next = p->heap[0].at;
		if (next == INT64_MAX)
			break; /* nothing will change: the rest never starts */
		if (next - now > p->o->horizon_ms) {
			out->capped = true;
			break;
		}
		t = next > t ? next : t + 1;
	}
	return rc;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const predict_entry_t *)a)->uid, ((const predict_entry_t *)b)->uid);
}

/* Every pending workload of the copy before selection, with its start. */
static int collect(const pass_t *p, const queue_wl_t *ids, size_t n, char **uids,
		   predict_result_t *out)
{
	out->v = calloc(n ? n : 1, sizeof(*out->v));
	if (!out->v)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		out->v[i].uid = uids[i];
		uids[i] = NULL;
		bool sim = ids[i] != QUEUE_NONE && p->tracked[ids[i]]; /* else left out */

		out->v[i].start_ms = sim ? p->start[ids[i]] : -1;
		out->simulated += sim;
		out->started += sim && p->start[ids[i]] >= 0;
	}
	out->n = n;
	qsort(out->v, n, sizeof(*out->v), entry_cmp);
	return GPUQ_OK;
}

static void pass_free(pass_t *p)
{
	engine_close(p->e);
	free(p->rt);
	free(p->start);
	free(p->run);
	free(p->tracked);
	free(p->heap);
}

/* The copy's pending workloads: ids and uids (*n of them). */
static int list_pending(const pass_t *p, queue_wl_t **ids, size_t *n, char ***uids, size_t extra)
{
	size_t cap = queue_workloads_by_cq(p->q, QUEUE_WL_PENDING, NULL, 0);

	*ids = calloc(cap + extra + 1, sizeof(**ids));
	*uids = calloc(cap + extra + 1, sizeof(**uids));
	if (!*ids || !*uids)
		return GPUQ_ENOMEM;
	cap = queue_workloads_by_cq(p->q, QUEUE_WL_PENDING, *ids, cap);
	for (*n = 0; *n < cap; ++*n) {
		const char *u = uid_of(p, (*ids)[*n]);

		(*uids)[*n] = strdup(u ? u : "");
		if (!(*uids)[*n])
			return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

/* The uids of the live pending workloads the copy left out, into
 * uids[*n...] (the result lists them after the copy's, not simulated). */
static int list_beyond(const queue_t *live, const beyond_t *b, char **uids, size_t *n)
{
	for (size_t id = 0; id < b->n; id++) {
		queue_workload_view_t v;

		if (!b->drop[id] || queue_workload_view(live, (queue_wl_t)id, &v))
			continue;
		uids[*n] = strdup(v.uid);
		if (!uids[*n])
			return GPUQ_ENOMEM;
		++*n;
	}
	return GPUQ_OK;
}

/* The live core read (predict_begin, the thread that owns it): the
 * pending workloads beyond the cap found, the fork begun without them, the
 * runtimes of what it keeps resolved, and, unless kept_only, the uids of
 * those it leaves out. */
static int begin_read(predict_pass_t *pp, const queue_t *live, policy_t *pol,
		      const queue_config_t *cfg, gpuq_diag_t *diag);
/* The copy built and listed (predict_finish, any thread): the fork ended,
 * its per-id arrays, its pending workloads' ids and uids (the copy's, then
 * those left out of it). */
static int end_build(predict_pass_t *pp, gpuq_diag_t *diag);

/* A pass between its two halves: the copy, its caps, and what the run
 * reports on. */
struct predict_pass {
	pass_t ps;	     /* the copy and its per-id arrays */
	predict_opts_t o;    /* the caps, copied (ps.o points here) */
	engine_fork_t *fork; /* begun, not ended yet */
	uid_rt_t *rts;	     /* the kept workloads' runtimes, by uid, n_rts */
	size_t n_rts;
	char **left; /* the uids of those left out (owned), n_left (kept_only: none) */
	size_t n_left;
	size_t n_beyond; /* how many were left out */
	queue_wl_t *ids; /* the copy's pending workloads, and... */
	char **uids;	 /* ... their uids (owned), n of each */
	size_t n;
	int64_t now; /* where the run starts */
};

static int begin_read(predict_pass_t *pp, const queue_t *live, policy_t *pol,
		      const queue_config_t *cfg, gpuq_diag_t *diag)
{
	pass_t *p = &pp->ps;
	queue_config_t c = cfg ? *cfg : (queue_config_t){0};
	beyond_t beyond = {NULL, 0};
	size_t n_kept = 0;
	int rc;

	if (!cfg)
		queue_config_default(&c);
	c.release_on_evict = true; /* evicted pods are gone at once */
	c.ready_timeout_ms = 0;	   /* and every admitted pod gets Ready */
	rc = beyond_cap(live, p->o->workloads_max, &beyond);
	if (!rc)
		rc = engine_fork_begin(live, pol, &c, copy_keeps, &beyond, &pp->fork, diag);
	for (size_t id = 0; !rc && id < beyond.n; id++)
		pp->n_beyond += beyond.drop[id];
	if (!rc) {
		n_kept = queue_workload_count(live) - pp->n_beyond;
		pp->rts = calloc(n_kept + 1, sizeof(*pp->rts));
		rc = pp->rts ? GPUQ_OK : GPUQ_ENOMEM;
	}
	for (queue_wl_t id = rc ? QUEUE_NONE : queue_workload_next(live, QUEUE_NONE);
	     id != QUEUE_NONE && pp->n_rts < n_kept; id = queue_workload_next(live, id)) {
		queue_workload_view_t v;

		if (!copy_keeps(&beyond, id) || queue_workload_view(live, id, &v))
			continue;
		pp->rts[pp->n_rts].uid = strdup(v.uid);
		if (!pp->rts[pp->n_rts].uid) {
			rc = GPUQ_ENOMEM;
			break;
		}
		pp->rts[pp->n_rts++].rt = runtime_resolve(p, live, &v);
	}
	if (!rc)
		qsort(pp->rts, pp->n_rts, sizeof(*pp->rts), uid_rt_cmp);
	if (!rc && !p->o->kept_only) {
		pp->left = calloc(pp->n_beyond + 1, sizeof(*pp->left));
		rc = pp->left ? list_beyond(live, &beyond, pp->left, &pp->n_left) : GPUQ_ENOMEM;
	}
	free(beyond.drop);
	return rc;
}

/* The runtime resolved for workload id of the copy (begin_read). */
static int64_t runtime_found(const predict_pass_t *pp, queue_wl_t id)
{
	queue_workload_view_t v;
	uid_rt_t key = {0}, *hit;

	if (queue_workload_view(pp->ps.q, id, &v))
		return pp->o.default_runtime_ms;
	key.uid = (char *)(uintptr_t)v.uid; /* compared only */
	hit = bsearch(&key, pp->rts, pp->n_rts, sizeof(*pp->rts), uid_rt_cmp);
	return hit ? hit->rt : pp->o.default_runtime_ms;
}

static int end_build(predict_pass_t *pp, gpuq_diag_t *diag)
{
	pass_t *p = &pp->ps;
	engine_fork_t *f = pp->fork;
	int rc;

	pp->fork = NULL;
	rc = engine_fork_end(f, &p->e, diag);
	p->q = rc ? NULL : engine_core(p->e);
	for (queue_wl_t id = rc ? QUEUE_NONE : queue_workload_next(p->q, QUEUE_NONE);
	     id != QUEUE_NONE; id = queue_workload_next(p->q, id))
		p->n_ids = (size_t)id + 1;
	if (!rc) {
		p->start = malloc((p->n_ids + 1) * sizeof(*p->start));
		p->run = calloc(p->n_ids + 1, sizeof(*p->run));
		p->tracked = calloc(p->n_ids + 1, 1);
		p->rt = malloc((p->n_ids + 1) * sizeof(*p->rt));
		rc = p->start && p->run && p->tracked && p->rt ? GPUQ_OK : GPUQ_ENOMEM;
	}
	for (size_t i = 0; !rc && i <= p->n_ids; i++) {
		p->start[i] = -1;
		p->rt[i] = i < p->n_ids ? runtime_found(pp, (queue_wl_t)i) : -1;
	}
	if (!rc)
		rc = list_pending(p, &pp->ids, &pp->n, &pp->uids, pp->n_left);
	for (size_t i = 0; !rc && i < pp->n_left; i++) {
		pp->ids[pp->n] = QUEUE_NONE; /* not simulated, no start */
		pp->uids[pp->n++] = pp->left[i];
		pp->left[i] = NULL;
	}
	return rc;
}

void predict_pass_free(predict_pass_t *pp)
{
	if (!pp)
		return;
	for (size_t i = 0; pp->uids && i < pp->n; i++)
		free(pp->uids[i]);
	free(pp->uids);
	free(pp->ids);
	for (size_t i = 0; i < pp->n_rts; i++)
		free(pp->rts[i].uid);
	free(pp->rts);
	for (size_t i = 0; pp->left && i < pp->n_left; i++)
		free(pp->left[i]);
	free(pp->left);
	engine_fork_free(pp->fork);
	pass_free(&pp->ps);
	free(pp);
}

int predict_begin(const queue_t *live, policy_t *p, const queue_config_t *cfg, int64_t now,
		  const predict_opts_t *o, predict_runtime_fn fn, void *ctx,
		  const predict_history_t *h, predict_pass_t **out, gpuq_diag_t *diag)
{
	predict_pass_t *pp = calloc(1, sizeof(*pp));
	int rc;

	*out = NULL;
	if (!pp)
		return GPUQ_ENOMEM;
	if (o)
		pp->o = *o;
	else
		predict_opts_default(&pp->o);
	pp->ps.o = &pp->o;
	pp->ps.fn = fn;
	pp->ps.ctx = ctx;
	pp->ps.h = h;
	pp->now = queue_last_now(live) > now ? queue_last_now(live) : now;
	rc = begin_read(pp, live, p, cfg, diag);
	pp->ps.fn = NULL; /* every runtime is resolved: the rest reads pp alone */
	pp->ps.ctx = NULL;
	pp->ps.h = NULL;
	if (rc) {
		predict_pass_free(pp);
		if (diag && !diag->msg[0])
			gpuq_diag_set(diag, rc, "prediction pass: %s", gpuq_strerror(rc));
		return rc;
	}
	*out = pp;
	return GPUQ_OK;
}

int predict_finish(predict_pass_t *pp, predict_result_t *out, gpuq_diag_t *diag)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = end_build(pp, diag);
	if (!rc)
		rc = settle_running(&pp->ps, pp->now);
	if (!rc)
		rc = select_pending(&pp->ps, pp->ids, pp->n, pp->now);
	if (!rc)
		rc = run_forward(&pp->ps, pp->now, out);
	if (!rc)
		rc = collect(&pp->ps, pp->ids, pp->n, pp->uids, out);
	predict_pass_free(pp);
	if (rc) {
		predict_result_deinit(out);
		if (diag && !diag->msg[0])
			gpuq_diag_set(diag, rc, "prediction pass: %s", gpuq_strerror(rc));
	}
	return rc;
}

int predict_run(const queue_t *live, policy_t *p, const queue_config_t *cfg, int64_t now,
		const predict_opts_t *o, predict_runtime_fn fn, void *ctx,
		const predict_history_t *h, predict_result_t *out, gpuq_diag_t *diag)
{
	predict_pass_t *pp;
	int rc = predict_begin(live, p, cfg, now, o, fn, ctx, h, &pp, diag);

	if (rc) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	return predict_finish(pp, out, diag);
}

void predict_result_deinit(predict_result_t *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].uid);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

const predict_entry_t *predict_find(const predict_result_t *r, const char *uid)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->v[mid].uid, uid);

		if (!c)
			return &r->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Allocation failure, curl's torture approach: run an operation once to
 * count its allocations, then again for every N with the Nth allocation
 * failing, over the queue core, the store, the policy loader and the review
 * path. After each failure the call returns its error (GPUQ_ENOMEM) or gets
 * by without the memory, the core's invariants hold (queue_check), nothing
 * leaks (ASan and valgrind run this binary too), and the next call works and
 * ends in exactly the state a run without failures reaches.
 *
 * The binary is linked with -Wl,--wrap for malloc, calloc, realloc, strdup
 * and strndup (Makefile), so every allocation gpuq's own code makes comes
 * here first; jansson's come through json_set_alloc_funcs. LMDB's, GnuTLS's
 * and libyaml's own allocations are not counted. One thread only. The test's
 * own bookkeeping uses fixed arrays, so it never takes a countdown step.
 *
 * Debugging a failure: FAILALLOC_TRACE=N prints the queue scenario's state
 * after every step of the run with allocation N failing (0: the run without
 * failures) and names the step each failure landed in; then
 * `gdb -ex 'break fail_now if g_fail_at == N && g_seen + 1 == N'` stops
 * at the allocation itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "policy/policy.h"
#include "queue/queue.h"
#include "store/store.h"
#include "unit/golden/golden_check.h"
#include "unit/queue_fixtures.h"
#include "unit/store_fixture.h"
#include "webhook/webhook.h"

/* ---- the fault injector ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static int g_armed;    /* counting allocations */
static long g_fail_at; /* the allocation (1-based, since arming) that fails; 0: none */
static long g_seen;    /* allocations since arming */
static int g_fired;    /* the armed allocation failed */

static int fail_now(void)
{
	if (!g_armed || ++g_seen != g_fail_at)
		return 0;
	g_fired = 1;
	return 1;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return fail_now() ? NULL : __real_strndup(s, n);
}

/* Count from now; the nth allocation fails (0: count only). */
static void arm(long n)
{
	g_armed = 1;
	g_fail_at = n;
	g_seen = 0;
	g_fired = 0;
}

/* Stop failing; returns the allocations seen since arm. */
static long disarm(void)
{
	g_armed = 0;
	return g_seen;
}

/* Allocations a run makes, counted by a first run that fails none. Each
 * torture loop goes on until a run whose failure point lies past its last
 * allocation (so nothing fired), which also covers a run that allocates
 * more than the first. */
#define TORTURE_MAX 20000 /* a bound on N: a run never needs more */

/* ---- the queue core ---- */

#define UIDS_MAX 16
#define RECS_MAX 64
#define DIGEST_MAX 8192
#define REC_VAL_MAX 4096 /* the scenario's records are far smaller */

static const char *const g_uids[] = {"a", "b", "c", "d", "e", "g", "h", NULL};

typedef struct {
	queue_rec_type_t type;
	uint8_t key[QUEUE_KEY_MAX];
	size_t klen;
	uint8_t val[REC_VAL_MAX];
	size_t vlen;
	int live; /* 0: deleted since it was written */
} rec_t;

/* What a caller keeps between calls: the persisted records (a stand-in for
 * the store) and the last cycle's evictions, to report back. */
typedef struct {
	queue_t *q;
	rec_t recs[RECS_MAX];
	size_t n_recs;
	char victims[UIDS_MAX][QUEUE_KEY_MAX];
	size_t n_victims;
	int retries; /* steps that failed and were run again */
} qrun_t;

static void check_invariants(const queue_t *q, const char *after)
{
	char why[512] = "";
	int armed = g_armed, rc;

	g_armed = 0; /* the check's own table is not under test */
	rc = queue_check(q, why, sizeof(why));
	g_armed = armed;
	if (rc)
		fail_msg("after %s: invariant broken: %s: %s", after, gpuq_strerror(rc), why);
}

/* Keep the uids of the result's evictions (the result's strings die with
 * the next call). */
static void keep_victims(qrun_t *r, const queue_result_t *res)
{
	for (size_t i = 0; i < res->n_evictions && r->n_victims < UIDS_MAX; i++)
		gpuq_strlcpy(r->victims[r->n_victims++], res->evictions[i].victim_uid,
			     QUEUE_KEY_MAX);
}

static rec_t *rec_slot(qrun_t *r, queue_rec_type_t type, const uint8_t *key, size_t klen)
{
	for (size_t i = 0; i < r->n_recs; i++)
		if (r->recs[i].type == type && r->recs[i].klen == klen &&
		    !memcmp(r->recs[i].key, key, klen))
			return &r->recs[i];
	if (r->n_recs == RECS_MAX)
		fail_msg("more than %d records", RECS_MAX);
	r->recs[r->n_recs].type = type;
	memcpy(r->recs[r->n_recs].key, key, klen);
	r->recs[r->n_recs].klen = klen;
	return &r->recs[r->n_recs++];
}

/* Write every changed record into r->recs, as the engine writes the store:
 * an ENOMEM from the changed set means "mark everything and go again". */
static int persist(qrun_t *r)
{
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen;
	int rc;

	while ((rc = queue_dirty_next(r->q, &it, &type, &key, &klen)) == GPUQ_OK) {
		rec_t *s = rec_slot(r, type, key, klen);

		rc = queue_record_encode(r->q, type, key, klen, s->val, sizeof(s->val), &s->vlen);
		if (rc != GPUQ_OK && rc != GPUQ_ENOTFOUND)
			fail_msg("encode: %s", gpuq_strerror(rc));
		s->live = rc == GPUQ_OK;
	}
	if (rc == GPUQ_ENOMEM) {
		rc = queue_dirty_all(r->q);
		return rc ? rc : GPUQ_ENOMEM; /* the step runs again, now marking all */
	}
	assert_int_equal(rc, GPUQ_ENOTFOUND);
	queue_dirty_clear(r->q);
	return GPUQ_OK;
}

static int cycle_at(qrun_t *r, int64_t now)
{
	queue_result_t res;
	int rc = queue_cycle_run(r->q, now, &res);

	keep_victims(r, &res); /* filled on GPUQ_ENOMEM too */
	return rc;
}

static int tick_at(qrun_t *r, int64_t now)
{
	queue_result_t res;
	int rc = queue_tick(r->q, now, &res);

	keep_victims(r, &res); /* filled on GPUQ_ENOMEM too */
	return rc;
}

/* Report the victims gone, as the controller does once their pods are. */
static int evict_victims(qrun_t *r, int64_t now)
{
	while (r->n_victims) {
		int rc = queue_workload_evicted(r->q, r->victims[r->n_victims - 1], now);

		if (rc == GPUQ_ENOMEM)
			return rc;
		if (rc != GPUQ_OK && rc != GPUQ_EINVAL && rc != GPUQ_ENOTFOUND)
			fail_msg("evicted %s: %s", r->victims[r->n_victims - 1], gpuq_strerror(rc));
		r->n_victims--;
	}
	return GPUQ_OK;
}

/* pods_ready / finish of a workload the scenario expects admitted: a core
 * change may admit another one instead, and the scenario still holds. */
static int if_admitted(qrun_t *r, const char *uid, int64_t now, bool finish)
{
	queue_wl_t id;
	queue_workload_view_t v;

	if (queue_workload_find(r->q, uid, &id) || queue_workload_view(r->q, id, &v) ||
	    v.state != QUEUE_WL_ADMITTED)
		return GPUQ_OK;
	return finish ? queue_workload_finish(r->q, uid, now)
		      : queue_workload_pods_ready(r->q, uid, now);
}

static int make_queue(qrun_t *r)
{
	queue_config_t cfg;

	queue_config_default(&cfg);
	cfg.fair_sharing = true;
	cfg.ready_timeout_ms = 25;
	cfg.ready_scope = QUEUE_READY_ALL;
	cfg.release_on_evict = false;
	return queue_create(&cfg, &r->q);
}

static int cq_spec(qrun_t *r, const char *name, int64_t nominal, int update)
{
	static const char *const cov[] = {"gpu"};
	queue_quota_spec_t quotas[2] = {{nominal, U, U}, {2, 2, 1}};
	queue_flavor_quota_spec_t fl[2] = {{"f", &quotas[0]}, {"g", &quotas[1]}};
	queue_group_spec_t g = {.covered = cov, .n_covered = 1, .flavors = fl, .n_flavors = 2};
	queue_cq_spec_t s = {0};

	s.name = name;
	s.cohort = "co";
	s.groups = &g;
	s.n_groups = 1;
	s.within = QUEUE_WITHIN_LOWER_PRIORITY;
	s.reclaim = QUEUE_RECLAIM_ANY;
	s.borrow = QUEUE_BORROW_LOWER_PRIORITY;
	s.weight_milli = name[1] == '1' ? 1000 : 500;
	return update ? queue_cq_update(r->q, &s, NULL) : queue_cq_add(r->q, &s, NULL, NULL);
}

/* The policy part: flavors, two CQs sharing a cohort, their LQs. */
static int policy_step(qrun_t *r, int step)
{
	static const queue_label_t lbl[] = {{"zone", "x"}};
	static const queue_taint_t taint[] = {{"gpu", "h100", QUEUE_EFFECT_NO_SCHEDULE}};
	queue_flavor_spec_t f = {"f", lbl, 1, NULL, 0, NULL, 0, NULL};
	queue_flavor_spec_t g = {"g", NULL, 0, taint, 1, NULL, 0, NULL};

	switch (step) {
	case 0:
		return queue_flavor_add(r->q, &f, NULL, NULL);
	case 1:
		return queue_flavor_add(r->q, &g, NULL, NULL);
	case 2:
		return cq_spec(r, "c1", 4, 0);
	case 3:
		return cq_spec(r, "c2", 4, 0);
	case 4:
		return queue_lq_add(r->q, "ns", "l1", "c1", 0, NULL, NULL);
	default:
		return queue_lq_add(r->q, "team", "l2", "c2", 2000, NULL, NULL);
	}
}
#define POLICY_STEPS 6

/* The workload part: submissions, cycles with preemption, Ready, finish,
 * delete, a Ready timeout, a quota change, persisting along the way. */
static int workload_step(qrun_t *r, int step)
{
	static const char *const vals[] = {"x", "y"};
	static const queue_affinity_t aff[] = {{"zone", vals, 2}};
	static const queue_label_t sel[] = {{"zone", "x"}};
	static const queue_toleration_t tol[] = {
	    {"gpu", QUEUE_TOLERATE_EXISTS, NULL, QUEUE_EFFECT_ANY}};
	wlopt_t o = {.sel = sel, .n_sel = 1, .aff = aff, .n_aff = 1};
	wlopt_t tolerant = {.tol = tol, .n_tol = 1};
	wlopt_t gang = {.gang_total = 3, .pods_present = 1};

	switch (step) {
	case 0:
		return add_wl_opt(r->q, "a", "ns", "l1", 0, 1, 2, 2, &o);
	case 1:
		return add_wl_opt(r->q, "b", "team", "l2", 3, 2, 1, 6, NULL);
	case 2:
		return add_wl_opt(r->q, "c", "ns", "l1", 1, 3, 1, 9, NULL);
	case 3:
		return add_wl_opt(r->q, "g", "team", "l2", 0, 4, 3, 1, &gang);
	case 4:
		return cycle_at(r, 10);
	case 5:
		return persist(r);
	case 6:
		return add_wl_opt(r->q, "d", "ns", "l1", 5, 11, 1, 3, &tolerant);
	case 7:
		return queue_workload_pods_add(r->q, "g", 2, 12);
	case 8:
		return cycle_at(r, 20);
	case 9:
		return evict_victims(r, 21);
	case 10:
		return if_admitted(r, "b", 22, false);
	case 11:
		return cycle_at(r, 23);
	case 12:
		return persist(r);
	case 13:
		return add_wl_opt(r->q, "e", "team", "l2", 9, 24, 1, 5, NULL);
	case 14:
		return cycle_at(r, 25);
	case 15:
		return evict_victims(r, 26);
	case 16:
		return cycle_at(r, 27);
	case 17:
		return if_admitted(r, "e", 28, false);
	case 18:
		return if_admitted(r, "e", 30, true);
	case 19:
		return tick_at(r, 60);
	case 20:
		return evict_victims(r, 61);
	case 21:
		return cq_spec(r, "c2", 6, 1);
	case 22:
		return cycle_at(r, 62);
	case 23:
		return queue_workload_delete(r->q, "c", 63);
	case 24:
		return add_wl_opt(r->q, "h", "ns", "l1", 2, 64, 2, 1, NULL);
	case 25:
		return cycle_at(r, 70);
	default:
		return persist(r);
	}
}
#define WORKLOAD_STEPS 27

/* Run one step; a step that runs out of memory must leave the queue sound
 * and work when run again. */
static void step(qrun_t *r, int (*fn)(qrun_t *, int), int i, const char *what)
{
	int was = g_fired, rc = fn(r, i);
	char label[96];

	if (!was && g_fired && getenv("FAILALLOC_TRACE"))
		fprintf(stderr, "allocation %ld failed in %s step %d: %s\n", g_fail_at, what, i,
			gpuq_strerror(rc));

	snprintf(label, sizeof(label), "%s step %d (allocation %ld failing%s)", what, i, g_fail_at,
		 g_fired ? ", failed" : "");
	if (rc == GPUQ_ENOMEM) {
		if (!g_fired)
			fail_msg("%s: GPUQ_ENOMEM with no failed allocation", label);
		check_invariants(r->q, label);
		r->retries++;
		rc = fn(r, i);
	}
	if (rc != GPUQ_OK)
		fail_msg("%s: %s", label, gpuq_strerror(rc));
	check_invariants(r->q, label);
}

/* Everything a caller can read about the queue, as text. */
static void digest(const queue_t *q, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (const char *const *u = g_uids; *u && len < cap; u++) {
		queue_wl_t id;
		queue_workload_view_t v;
		char e[512] = "";

		if (queue_workload_find(q, *u, &id) || queue_workload_view(q, id, &v)) {
			len += (size_t)snprintf(buf + len, cap - len, "%s: gone\n", *u);
			continue;
		}
		queue_workload_explain(q, *u, e, sizeof(e));
		len +=
		    (size_t)snprintf(buf + len, cap - len,
				     "%s: %s wait %d adm %" PRId64 " elig %" PRId64
				     " pre %u req %u ready %d\n  %s\n",
				     *u, queue_wl_state_name(v.state), (int)v.wait, v.admitted_ms,
				     v.eligible_ms, v.preemptions, v.requeues, (int)v.ready, e);
	}
	for (uint32_t c = 0; c < queue_cq_count(q) && len < cap; c++) {
		queue_stats_t s;

		assert_int_equal(queue_cq_stats(q, c, &s), GPUQ_OK);
		len += (size_t)snprintf(buf + len, cap - len,
					"cq %u: pend %u adm %u admissions %" PRIu64
					" preemptions %" PRIu64 " evictions %" PRIu64
					" share %" PRId64 "\n",
					c, s.pending, s.admitted, s.admissions, s.preemptions,
					s.evictions, s.weighted_share);
	}
}

static void qrun_free(qrun_t *r)
{
	queue_destroy(r->q);
	r->q = NULL;
}

/* The whole scenario with allocation n failing (0: none). */
static void queue_scenario(qrun_t *r, long n)
{
	int rc;

	memset(r, 0, sizeof(*r));
	arm(n);
	rc = make_queue(r);
	if (rc == GPUQ_ENOMEM) {
		assert_null(r->q);
		rc = make_queue(r);
	}
	assert_int_equal(rc, GPUQ_OK);
	for (int i = 0; i < POLICY_STEPS; i++)
		step(r, policy_step, i, "policy");
	for (int i = 0; i < WORKLOAD_STEPS; i++) {
		step(r, workload_step, i, "workload");
		if (getenv("FAILALLOC_TRACE") && n == atol(getenv("FAILALLOC_TRACE"))) {
			static char d[DIGEST_MAX];
			digest(r->q, d, sizeof(d));
			fprintf(stderr, "---- after step %d\n%s", i, d);
		}
	}
}

/* Apply r's records to a new queue with the same policy (allocation n
 * failing); a failed apply leaves the queue as it was, so it runs again. */
static void restore_scenario(const qrun_t *from, qrun_t *to, long n)
{
	gpuq_diag_t diag = {{0}};
	int rc;

	memset(to, 0, sizeof(*to));
	assert_int_equal(make_queue(to), GPUQ_OK);
	for (int i = 0; i < POLICY_STEPS; i++)
		assert_int_equal(policy_step(to, i), GPUQ_OK);
	assert_int_equal(cq_spec(to, "c2", 6, 1), GPUQ_OK); /* as workload step 21 left it */
	arm(n);
	for (size_t i = 0; i < from->n_recs; i++) {
		const rec_t *x = &from->recs[i];

		if (!x->live)
			continue;
		rc = queue_record_apply(to->q, x->type, x->key, x->klen, x->val, x->vlen, &diag);
		if (rc == GPUQ_ENOMEM)
			rc = queue_record_apply(to->q, x->type, x->key, x->klen, x->val, x->vlen,
						&diag);
		if (rc)
			fail_msg("apply record %zu: %s: %s", i, gpuq_strerror(rc), diag.msg);
	}
	rc = queue_restore_done(to->q, &diag);
	if (rc == GPUQ_ENOMEM)
		rc = queue_restore_done(to->q, &diag);
	if (rc)
		fail_msg("restore_done: %s: %s", gpuq_strerror(rc), diag.msg);
	disarm();
	check_invariants(to->q, "restore");
}

static void queue_fails_every_allocation(void **st)
{
	static qrun_t ref, run;
	static char want[DIGEST_MAX], got[DIGEST_MAX];
	long total, n, retried = 0;

	(void)st;
	queue_scenario(&ref, 0);
	total = disarm();
	digest(ref.q, want, sizeof(want));
	assert_true(total > 50);
	for (n = 1; n < TORTURE_MAX; n++) {
		queue_scenario(&run, n);
		disarm();
		if (!g_fired) {
			qrun_free(&run);
			break;
		}
		retried += run.retries;
		digest(run.q, got, sizeof(got));
		if (strcmp(want, got) != 0)
			fail_msg(
			    "allocation %ld of %ld failed: end state differs\nwant:\n%s\ngot:\n%s",
			    n, total, want, got);
		qrun_free(&run);
	}
	print_message("# queue: %ld allocations, each failed once; %ld steps reported it\n", total,
		      retried);
	assert_true(n > total);
	qrun_free(&ref);
}

static void restore_fails_every_allocation(void **st)
{
	static qrun_t ref, back;
	static char want[DIGEST_MAX], got[DIGEST_MAX];
	long total, n;

	(void)st;
	queue_scenario(&ref, 0);
	disarm();
	digest(ref.q, want, sizeof(want));
	restore_scenario(&ref, &back, 0);
	total = g_seen;
	digest(back.q, got, sizeof(got));
	assert_string_equal(want, got);
	qrun_free(&back);
	for (n = 1; n < TORTURE_MAX; n++) {
		restore_scenario(&ref, &back, n);
		if (!g_fired) {
			qrun_free(&back);
			break;
		}
		digest(back.q, got, sizeof(got));
		if (strcmp(want, got) != 0)
			fail_msg("allocation %ld of %ld failed: restored state differs\nwant:\n%s\n"
				 "got:\n%s",
				 n, total, want, got);
		qrun_free(&back);
	}
	print_message("# restore: %ld allocations, each failed once\n", total);
	assert_true(n > total);
	qrun_free(&ref);
}

/* ---- the store ---- */

#define STORE_KEYS 40

/* Open (creating), write two batches, read back, close, open again: the
 * digest of what it holds. An out-of-memory open or batch runs again (a
 * failed batch writes nothing). */
static uint64_t store_scenario(const char *dir, long n, int *reported)
{
	store_opts_t o;
	store_t *s = NULL;
	gpuq_diag_t diag = {{0}};
	uint64_t digest = 0;
	int rc;

	store_opts_init(&o);
	o.nosync = true;
	o.types[QUEUE_REC_WORKLOAD] = "workload";
	o.types[QUEUE_REC_CQ] = "cq";
	arm(n);
	for (int round = 0; round < 3; round++) {
		for (int attempt = 0; attempt < 2; attempt++) {
			rc = store_open(dir, &o, &s, &diag);
			if (rc != GPUQ_ENOMEM)
				break;
			assert_true(g_fired);
			assert_null(s);
			++*reported;
		}
		if (rc)
			fail_msg("open, round %d: %s: %s", round, gpuq_strerror(rc), diag.msg);
		for (int batch = 0; round < 2 && batch < 2; batch++) {
			for (int attempt = 0; attempt < 2; attempt++) {
				store_txn_t *t;

				assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
				for (int k = 0; k < STORE_KEYS; k++) {
					char key[32], val[96];
					int v =
					    snprintf(val, sizeof(val), "value %d of batch %d.%d", k,
						     round, batch);

					snprintf(key, sizeof(key), "ns/wl-%03d", k + 7 * batch);
					(void)store_put(t,
							k % 2 ? QUEUE_REC_WORKLOAD : QUEUE_REC_CQ,
							key, strlen(key), val, (size_t)v);
				}
				(void)store_del(t, QUEUE_REC_CQ, "ns/wl-002", 9);
				rc = store_txn_commit(t, NULL);
				if (rc != GPUQ_ENOMEM)
					break;
				assert_true(g_fired);
				++*reported;
			}
			if (rc)
				fail_msg("commit %d.%d: %s", round, batch, gpuq_strerror(rc));
		}
		for (int attempt = 0; attempt < 2; attempt++) {
			void *v = NULL;
			size_t vl = 0;

			rc = store_get(s, QUEUE_REC_WORKLOAD, "ns/wl-011", 9, &v, &vl);
			free(v);
			if (rc != GPUQ_ENOMEM)
				break;
			++*reported;
		}
		assert_int_equal(rc, GPUQ_OK);
		if (round < 2)
			store_close(s);
	}
	disarm();
	assert_int_equal(store_digest(s, &digest), GPUQ_OK);
	store_close(s);
	return digest;
}

static void store_fails_every_allocation(void **state)
{
	fixture_t *f = *state;
	uint64_t want, got;
	long total, n;
	int reported = 0;

	want = store_scenario(f->dir, 0, &reported);
	total = g_seen;
	assert_true(total > 0);
	for (n = 1; n < TORTURE_MAX; n++) {
		nftw(f->dir, fixture_rm_one, 16, FTW_DEPTH | FTW_PHYS);
		got = store_scenario(f->dir, n, &reported);
		if (!g_fired)
			break;
		if (got != want)
			fail_msg("allocation %ld of %ld failed: the store holds other records", n,
				 total);
	}
	print_message("# store: %ld allocations, each failed once; %d calls reported it\n", total,
		      reported);
	assert_true(n > total);
}

static int store_setup(void **state)
{
	return fixture_setup(state, "gpuq-failalloc", "state");
}

/* ---- the policy loader and the review path ---- */

#define GOLDEN_DIR "unit/golden"

static golden_case_t g_cases[GOLDEN_CASES_MAX];
static size_t g_n_cases;
static webhook_reply_t g_want[GOLDEN_CASES_MAX]; /* each case's reply, no failure */
static const char *const g_gpu_names[] = {"amd.com/gpu"};
static const webhook_config_t g_cfg = {g_gpu_names, 1, NULL, NULL, 0, NULL, NULL, 0};

static webhook_endpoint_t endpoint(const golden_case_t *c)
{
	return c->mutate ? WEBHOOK_MUTATE : WEBHOOK_VALIDATE;
}

static void same_reply(const webhook_reply_t *want, const webhook_reply_t *got, const char *what)
{
	if (got->http_status != want->http_status || got->len != want->len ||
	    memcmp(got->body, want->body, want->len) != 0 || strcmp(got->decision, want->decision))
		fail_msg("%s: reply %d %s \"%.300s\", without failures %d %s \"%.300s\"", what,
			 got->http_status, got->decision, got->body, want->http_status,
			 want->decision, want->body);
}

/* Every golden case against p, compared with the replies without failures. */
static void replies_match(const policy_t *p, const char *what)
{
	for (size_t i = 0; i < g_n_cases; i++) {
		webhook_reply_t r = {0};
		char label[256];

		snprintf(label, sizeof(label), "%.100s, case %.120s", what, g_cases[i].name);
		assert_int_equal(webhook_review_handle(endpoint(&g_cases[i]), p, &g_cfg,
						       g_cases[i].body, g_cases[i].len, &r),
				 GPUQ_OK);
		same_reply(&g_want[i], &r, label);
		webhook_reply_deinit(&r);
	}
}

static int golden_setup(void **state)
{
	(void)state;
	g_n_cases = golden_load(GOLDEN_DIR "/cases", g_cases, GOLDEN_CASES_MAX);
	return g_n_cases ? 0 : -1;
}

static int golden_teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < g_n_cases; i++)
		webhook_reply_deinit(&g_want[i]);
	golden_free(g_cases, g_n_cases);
	return 0;
}

static policy_t *load_golden(void)
{
	gpuq_diag_t d = {{0}};
	policy_t *p = NULL;

	if (policy_load_dir(GOLDEN_DIR "/policy", NULL, &p, &d))
		fail_msg("golden policy: %s", d.msg);
	return p;
}

/* Loading the policy: each failure is GPUQ_ENOMEM ("out of memory" in the
 * message, no policy), or absorbed: then the policy decides every golden
 * case as one loaded without failures does. */
static void policy_fails_every_allocation(void **st)
{
	policy_t *ref = load_golden();
	long total, n;
	int reported = 0;

	(void)st;
	for (size_t i = 0; i < g_n_cases; i++)
		assert_int_equal(webhook_review_handle(endpoint(&g_cases[i]), ref, &g_cfg,
						       g_cases[i].body, g_cases[i].len, &g_want[i]),
				 GPUQ_OK);
	policy_unref(ref);
	arm(0);
	ref = load_golden();
	total = disarm();
	policy_unref(ref);
	for (n = 1; n < TORTURE_MAX; n++) {
		gpuq_diag_t d = {{0}};
		policy_t *p = NULL;
		int rc;
		char what[64];

		arm(n);
		rc = policy_load_dir(GOLDEN_DIR "/policy", NULL, &p, &d);
		disarm();
		if (!g_fired) {
			policy_unref(p);
			break;
		}
		snprintf(what, sizeof(what), "allocation %ld of %ld failing", n, total);
		if (rc) {
			if (rc != GPUQ_ENOMEM || !strstr(d.msg, "out of memory"))
				fail_msg("%s: %s: %s", what, gpuq_strerror(rc), d.msg);
			assert_null(p);
			reported++;
			continue;
		}
		replies_match(p, what);
		policy_unref(p);
	}
	print_message("# policy: %ld allocations, each failed once; %d loads reported it\n", total,
		      reported);
	assert_true(n > total);
}

/* Each review with each of its allocations failing: GPUQ_ENOMEM with the
 * reply zeroed (the server answers 500), or the very reply given without
 * failures. Never another answer: no allowed for a denied, no missing
 * patch. */
static void review_fails_every_allocation(void **st)
{
	policy_t *p = load_golden();
	long most = 0, reported = 0, tries = 0;

	(void)st;
	for (size_t i = 0; i < g_n_cases; i++) {
		const golden_case_t *c = &g_cases[i];
		webhook_reply_t r = {0};
		long total, n;

		if (!g_want[i].body)
			assert_int_equal(webhook_review_handle(endpoint(c), p, &g_cfg, c->body,
							       c->len, &g_want[i]),
					 GPUQ_OK);
		arm(0);
		assert_int_equal(webhook_review_handle(endpoint(c), p, &g_cfg, c->body, c->len, &r),
				 GPUQ_OK);
		total = disarm();
		webhook_reply_deinit(&r);
		most = total > most ? total : most;
		for (n = 1; n < TORTURE_MAX; n++) {
			char what[300];
			int rc;

			arm(n);
			rc = webhook_review_handle(endpoint(c), p, &g_cfg, c->body, c->len, &r);
			disarm();
			if (!g_fired)
				break;
			tries++;
			snprintf(what, sizeof(what), "case %.120s, allocation %ld of %ld failing",
				 c->name, n, total);
			if (rc == GPUQ_ENOMEM) {
				reported++;
				if (r.body || r.len || r.http_status)
					fail_msg("%s: GPUQ_ENOMEM with a reply", what);
				continue;
			}
			assert_int_equal(rc, GPUQ_OK);
			same_reply(&g_want[i], &r, what);
			webhook_reply_deinit(&r);
		}
		webhook_reply_deinit(&r);
		assert_true(n > total);
	}
	print_message("# review: %zu cases, up to %ld allocations each; %ld failures, %ld "
		      "reported\n",
		      g_n_cases, most, tries, reported);
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(queue_fails_every_allocation),
	    cmocka_unit_test(restore_fails_every_allocation),
	    cmocka_unit_test_setup_teardown(store_fails_every_allocation, store_setup,
					    fixture_teardown),
	    cmocka_unit_test(policy_fails_every_allocation),
	    cmocka_unit_test(review_fails_every_allocation),
	};

	json_set_alloc_funcs(__wrap_malloc, free);
	return cmocka_run_group_tests(tests, golden_setup, golden_teardown);
}

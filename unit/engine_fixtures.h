/* unit/engine_fixtures.h: what the engine tests share (test_engine.c,
 * test_engine_rebuild.c): policies written inline, a core built from one,
 * comparing two cores record by record, a store per test. Header-only
 * (static inline), included by test files only. */
#ifndef GPUQ_UNIT_ENGINE_FIXTURES_H
#define GPUQ_UNIT_ENGINE_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/engine.h"
#include "engine/internal.h" /* engine_cq_spec_init: what a CQ becomes */
#include "unit/store_fixture.h"

/* ---- policies ---- */

#define FLAVOR(n)                                                                                  \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: " n "}\n"
#define COHORT(n) "---\napiVersion: gpuq.dev/v1beta1\nkind: Cohort\nmetadata: {name: " n "}\n"
#define LQ(ns, cq)                                                                                 \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: " ns           \
	", name: lq}\nspec: {clusterQueue: " cq "}\n"
/* A ClusterQueue covering cpu and GPUs; cohort "" for none. */
#define CQ(name, cohort, flavors)                                                                  \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: " name "}\n"      \
	"spec:\n  cohortName: \"" cohort "\"\n"                                                    \
	"  preemption: {withinClusterQueue: LowerPriority}\n"                                      \
	"  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n" flavors
#define FQ(f, cpu, gpu)                                                                            \
	"    - name: " f "\n      resources:\n      - {name: cpu, nominalQuota: " cpu "}\n"        \
	"      - {name: nvidia.com/gpu, nominalQuota: " gpu "}\n"

/* The policy most tests start from: cq-a (a100 and h100, 4 GPUs each) and
 * cq-b (a100, 4 GPUs) in cohort pool; team-a and team-b feed cq-a, team-c
 * feeds cq-b. */
#define BASE_OBJECTS FLAVOR("a100") FLAVOR("h100") COHORT("pool")
#define BASE_CQA CQ("cq-a", "pool", FQ("a100", "64", "4") FQ("h100", "64", "4"))
#define BASE_CQB CQ("cq-b", "pool", FQ("a100", "64", "4"))
#define BASE                                                                                       \
	BASE_OBJECTS BASE_CQA BASE_CQB LQ("team-a", "cq-a") LQ("team-b", "cq-a")                   \
	    LQ("team-c", "cq-b")

static inline policy_t *policy_of(const char *text)
{
	policy_t *p = NULL;
	gpuq_diag_t d = {{0}};
	int rc = policy_create(NULL, &p);

	if (!rc)
		rc = policy_add_manifest(p, "t.yaml", text, strlen(text), &d);
	if (!rc)
		rc = policy_finish(p, &d);
	if (rc)
		fail_msg("policy: %s: %s", gpuq_strerror(rc), d.msg);
	return p;
}

static inline queue_t *core_of(const policy_t *p, const queue_config_t *cfg)
{
	queue_t *q = NULL;
	gpuq_diag_t d = {{0}};

	if (engine_core_build(p, cfg, &q, &d))
		fail_msg("engine_core_build: %s", d.msg);
	return q;
}

/* ---- workloads ---- */

static inline void add_wl(queue_t *q, const char *ns, const char *uid, int gpus, int prio, int gang,
			  int64_t now)
{
	const queue_request_t req[] = {{"cpu", 1000}, {"nvidia.com/gpu", gpus}};
	queue_podset_spec_t ps = {0};
	queue_workload_spec_t wl = {0};
	gpuq_diag_t d = {{0}};

	ps.name = "main";
	ps.count = 1;
	ps.requests = req;
	ps.n_requests = 2;
	wl.namespace_ = ns;
	wl.name = uid;
	wl.uid = uid;
	wl.local_queue = "lq";
	wl.priority = prio;
	wl.created_ms = now;
	wl.podsets = &ps;
	wl.n_podsets = 1;
	wl.gang_total = gang;
	if (queue_workload_add(q, &wl, now, NULL, &d))
		fail_msg("queue_workload_add %s: %s", uid, d.msg);
}

static inline queue_wl_state_t state_of(const queue_t *q, const char *uid)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (queue_workload_find(q, uid, &id) || queue_workload_view(q, id, &v))
		fail_msg("workload %s not in the core", uid);
	return v.state;
}

static inline bool holds(const queue_t *q, const char *uid)
{
	queue_wl_t id;

	return queue_workload_find(q, uid, &id) == GPUQ_OK;
}

static inline void cycle(queue_t *q, int64_t now)
{
	assert_int_equal(queue_cycle_run(q, now, NULL), GPUQ_OK);
}

/* The uids admitted by one cycle, space-separated, into buf. */
static inline void cycle_admits(queue_t *q, int64_t now, char *buf, size_t cap)
{
	queue_result_t res;
	size_t n = 0;

	assert_int_equal(queue_cycle_run(q, now, &res), GPUQ_OK);
	buf[0] = '\0';
	for (size_t i = 0; i < res.n_admissions; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s ", res.admissions[i].uid);
}

static inline uint32_t cq_id(const queue_t *q, const char *name)
{
	uint32_t id;

	assert_int_equal(queue_cq_find(q, name, &id), GPUQ_OK);
	return id;
}

static inline uint32_t lq_id(const queue_t *q, const char *ns)
{
	uint32_t id;

	assert_int_equal(queue_lq_find(q, ns, "lq", &id), GPUQ_OK);
	return id;
}

/* Usage of (cq, flavor, nvidia.com/gpu). */
static inline int64_t gpu_usage(const queue_t *q, const char *cq, const char *flavor)
{
	queue_quota_view_t v;
	uint32_t f, r;

	assert_int_equal(queue_flavor_find(q, flavor, &f), GPUQ_OK);
	assert_int_equal(queue_resource_find(q, "nvidia.com/gpu", &r), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, cq_id(q, cq), f, r, &v), GPUQ_OK);
	return v.usage;
}

/* ---- comparing two cores record by record ---- */

/* Record (type, key) of a and of b encode to the same bytes (or both are
 * absent). */
static inline void same_record(const queue_t *a, const queue_t *b, queue_rec_type_t type,
			       const char *key)
{
	static uint8_t ba[1 << 16], bb[1 << 16];
	size_t la = 0, lb = 0;
	int ra =
	    queue_record_encode(a, type, (const uint8_t *)key, strlen(key), ba, sizeof(ba), &la);
	int rb =
	    queue_record_encode(b, type, (const uint8_t *)key, strlen(key), bb, sizeof(bb), &lb);

	if (ra != rb || la != lb || memcmp(ba, bb, la) != 0)
		fail_msg("record type %d \"%s\" differs (%d, %zu bytes vs %d, %zu bytes)",
			 (int)type, key, ra, la, rb, lb);
}

/* Every ClusterQueue, tenant and workload record of a (and meta when
 * with_meta) is byte-identical in b, and b holds no other workload. */
static inline void same_records(const queue_t *a, const queue_t *b, bool with_meta)
{
	size_t na = 0, nb = 0;

	if (with_meta)
		same_record(a, b, QUEUE_REC_META, "meta");
	for (uint32_t i = 0; i < queue_cq_count(a); i++)
		same_record(a, b, QUEUE_REC_CQ, queue_cq_name(a, i));
	for (uint32_t i = 0; i < queue_lq_count(a); i++)
		same_record(a, b, QUEUE_REC_TENANT, queue_lq_name(a, i));
	for (queue_wl_t id = queue_workload_next(a, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(a, id)) {
		queue_workload_view_t v;
		assert_int_equal(queue_workload_view(a, id, &v), GPUQ_OK);
		same_record(a, b, QUEUE_REC_WORKLOAD, v.uid);
		na++;
	}
	for (queue_wl_t id = queue_workload_next(b, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(b, id))
		nb++;
	assert_int_equal(na, nb);
}

/* Same explanation for every workload of a in b, the same pending and
 * admitted orders per ClusterQueue, clock and cycle count. */
static inline void same_views(const queue_t *a, const queue_t *b)
{
	static const queue_wl_state_t states[] = {QUEUE_WL_PENDING, QUEUE_WL_ADMITTED,
						  QUEUE_WL_EVICTING};
	char ea[512], eb[512];
	queue_wl_t ia[64], ib[64];

	assert_int_equal(queue_cycle_count(a), queue_cycle_count(b));
	assert_int_equal(queue_last_now(a), queue_last_now(b));
	for (queue_wl_t id = queue_workload_next(a, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(a, id)) {
		queue_workload_view_t v;
		assert_int_equal(queue_workload_view(a, id, &v), GPUQ_OK);
		assert_int_equal(queue_workload_explain(a, v.uid, ea, sizeof(ea)), GPUQ_OK);
		assert_int_equal(queue_workload_explain(b, v.uid, eb, sizeof(eb)), GPUQ_OK);
		assert_string_equal(ea, eb);
	}
	for (uint32_t c = 0; c < queue_cq_count(a); c++)
		for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
			uint32_t cb = cq_id(b, queue_cq_name(a, c));
			size_t n = queue_cq_workloads(a, c, states[s], ia, 64);
			assert_int_equal(queue_cq_workloads(b, cb, states[s], ib, 64), n);
			for (size_t i = 0; i < n && i < 64; i++) {
				queue_workload_view_t va, vb;
				assert_int_equal(queue_workload_view(a, ia[i], &va), GPUQ_OK);
				assert_int_equal(queue_workload_view(b, ib[i], &vb), GPUQ_OK);
				assert_string_equal(va.uid, vb.uid);
			}
		}
}

/* Every encoded record of q, concatenated, to tell whether q changed. */
static inline size_t fingerprint(const queue_t *q, uint8_t *out, size_t cap)
{
	size_t n = 0, len;

#define ENC(type, key)                                                                             \
	do {                                                                                       \
		assert_int_equal(queue_record_encode(q, type, (const uint8_t *)(key), strlen(key), \
						     out + n, cap - n, &len),                      \
				 GPUQ_OK);                                                         \
		n += len;                                                                          \
	} while (0)
	ENC(QUEUE_REC_META, "meta");
	for (uint32_t i = 0; i < queue_cq_count(q); i++)
		ENC(QUEUE_REC_CQ, queue_cq_name(q, i));
	for (uint32_t i = 0; i < queue_lq_count(q); i++)
		ENC(QUEUE_REC_TENANT, queue_lq_name(q, i));
	for (queue_wl_t id = queue_workload_next(q, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(q, id)) {
		queue_workload_view_t v;
		assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
		ENC(QUEUE_REC_WORKLOAD, v.uid);
	}
#undef ENC
	return n;
}

static inline queue_t *rebuild(const queue_t *old, const policy_t *p, const queue_config_t *cfg,
			       engine_rebuild_report_t *rep)
{
	static uint8_t before[1 << 16], after[1 << 16];
	size_t nb = fingerprint(old, before, sizeof(before)), dirty = queue_dirty_count(old);
	queue_t *q = NULL;
	gpuq_diag_t d = {{0}};

	if (engine_core_rebuild(old, p, cfg, &q, rep, &d))
		fail_msg("engine_core_rebuild: %s", d.msg);
	/* the old core is left as it was */
	assert_int_equal(fingerprint(old, after, sizeof(after)), nb);
	assert_memory_equal(before, after, nb);
	assert_int_equal(queue_dirty_count(old), dirty);
	return q;
}

static inline const engine_lost_t *lost_find(const engine_rebuild_report_t *rep, const char *uid)
{
	for (size_t i = 0; i < rep->n_lost; i++)
		if (!strcmp(rep->lost[i].uid, uid))
			return &rep->lost[i];
	fail_msg("%s is not reported lost", uid);
	return NULL;
}

/* ---- stores ---- */

static inline int setup(void **state)
{
	return fixture_setup(state, "gpuq-engine", "state");
}

static inline int teardown(void **state)
{
	return fixture_teardown(state);
}

static inline store_t *open_core_store(const char *dir)
{
	store_opts_t o;
	store_t *s = NULL;
	gpuq_diag_t d = {{0}};

	store_opts_init(&o);
	engine_store_types(&o);
	o.types[STORE_TYPE_DRIVER_FIRST] = "progress";
	o.nosync = true;
	if (store_open(dir, &o, &s, &d))
		fail_msg("store_open: %s", d.msg);
	return s;
}

/* Snapshot every record of q into a new store at dir and return its digest. */
static inline uint64_t snapshot_digest(queue_t *q, const char *dir)
{
	store_t *s = open_core_store(dir);
	uint64_t dig;

	assert_int_equal(queue_dirty_all(q), GPUQ_OK);
	assert_int_equal(engine_persist(s, q, NULL, NULL), GPUQ_OK);
	assert_int_equal(store_digest(s, &dig), GPUQ_OK);
	store_close(s);
	return dig;
}

/* ==== building ==== */

/* "Can this ever fit" has one answer: what the webhook refuses at
 * submission (policy_cq_max_fit) is what the core sets aside as NoFit
 * (queue_cq_quota's max_capacity), for every CQ, flavor and resource of a
 * cohort with lendingLimits, borrowingLimits, fractions of cpu and a CQ
 * alone. */

/* A core of BASE in many states: admitted on both flavors, borrowing,
 * pending set aside (Quota, NoFit), a gang waiting for pods, a finished one
 * kept, a preempted one requeued, and a tenant ledger. */
static inline queue_t *busy_core(const policy_t *p)
{
	queue_t *q = core_of(p, NULL);

	add_wl(q, "team-a", "a1", 4, 0, 0, 1000);  /* a100 */
	add_wl(q, "team-a", "a2", 4, 0, 0, 1001);  /* h100 */
	add_wl(q, "team-b", "b1", 2, 0, 0, 1002);  /* borrows from cq-b */
	add_wl(q, "team-c", "c1", 2, 0, 0, 1003);  /* cq-b */
	add_wl(q, "team-c", "c2", 4, 0, 0, 1004);  /* Quota: set aside */
	add_wl(q, "team-a", "a3", 16, 0, 0, 1005); /* NoFit */
	add_wl(q, "team-b", "g1", 1, 0, 4, 1006);  /* gang: 0 of 4 pods */
	add_wl(q, "team-b", "b2", 2, 0, 0, 1007);  /* Quota */
	cycle(q, 2000);
	assert_int_equal(queue_workload_finish(q, "a1", 3000), GPUQ_OK); /* ledger; kept */
	cycle(q, 3000);
	add_wl(q, "team-a", "hi", 4, 100, 0, 4000); /* preempts in cq-a */
	cycle(q, 4000);
	cycle(q, 4000);
	assert_int_equal(queue_workload_pods_add(q, "g1", 2, 4500), GPUQ_OK);
	return q;
}

#endif

/* Unit tests for engine: the policy -> core translation, the core's records
 * in a store (types, structural check, stage, persist, full snapshots,
 * restore) and rebuilding a core after a policy change: a round trip with
 * the same policy keeps every record byte for byte and the same future
 * decisions; raised quota, removed LocalQueues, ClusterQueues and flavors, a
 * LocalQueue pointed elsewhere, ledgers under a structural change, and the
 * one refusal (GPUQ_EAGAIN). */
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

static policy_t *policy_of(const char *text)
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

static queue_t *core_of(const policy_t *p, const queue_config_t *cfg)
{
	queue_t *q = NULL;
	gpuq_diag_t d = {{0}};

	if (engine_core_build(p, cfg, &q, &d))
		fail_msg("engine_core_build: %s", d.msg);
	return q;
}

/* ---- workloads ---- */

static void add_wl(queue_t *q, const char *ns, const char *uid, int gpus, int prio, int gang,
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

static queue_wl_state_t state_of(const queue_t *q, const char *uid)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (queue_workload_find(q, uid, &id) || queue_workload_view(q, id, &v))
		fail_msg("workload %s not in the core", uid);
	return v.state;
}

static bool holds(const queue_t *q, const char *uid)
{
	queue_wl_t id;

	return queue_workload_find(q, uid, &id) == GPUQ_OK;
}

static void cycle(queue_t *q, int64_t now)
{
	assert_int_equal(queue_cycle_run(q, now, NULL), GPUQ_OK);
}

/* The uids admitted by one cycle, space-separated, into buf. */
static void cycle_admits(queue_t *q, int64_t now, char *buf, size_t cap)
{
	queue_result_t res;
	size_t n = 0;

	assert_int_equal(queue_cycle_run(q, now, &res), GPUQ_OK);
	buf[0] = '\0';
	for (size_t i = 0; i < res.n_admissions; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s ", res.admissions[i].uid);
}

static uint32_t cq_id(const queue_t *q, const char *name)
{
	uint32_t id;

	assert_int_equal(queue_cq_find(q, name, &id), GPUQ_OK);
	return id;
}

static uint32_t lq_id(const queue_t *q, const char *ns)
{
	uint32_t id;

	assert_int_equal(queue_lq_find(q, ns, "lq", &id), GPUQ_OK);
	return id;
}

/* Usage of (cq, flavor, nvidia.com/gpu). */
static int64_t gpu_usage(const queue_t *q, const char *cq, const char *flavor)
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
static void same_record(const queue_t *a, const queue_t *b, queue_rec_type_t type, const char *key)
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
static void same_records(const queue_t *a, const queue_t *b, bool with_meta)
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
static void same_views(const queue_t *a, const queue_t *b)
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
static size_t fingerprint(const queue_t *q, uint8_t *out, size_t cap)
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

static queue_t *rebuild(const queue_t *old, const policy_t *p, const queue_config_t *cfg,
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

static const engine_lost_t *lost_find(const engine_rebuild_report_t *rep, const char *uid)
{
	for (size_t i = 0; i < rep->n_lost; i++)
		if (!strcmp(rep->lost[i].uid, uid))
			return &rep->lost[i];
	fail_msg("%s is not reported lost", uid);
	return NULL;
}

/* ---- stores ---- */

static int setup(void **state)
{
	return fixture_setup(state, "gpuq-engine", "state");
}

static int teardown(void **state)
{
	return fixture_teardown(state);
}

static store_t *open_core_store(const char *dir)
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
static uint64_t snapshot_digest(queue_t *q, const char *dir)
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
/* Every (CQ, flavor, resource) of p: the webhook's max fit (the policy's)
 * equals the core's maximum capacity; returns how many were compared. */
static size_t max_fit_agrees(const policy_t *p, const queue_t *q)
{
	size_t checked = 0;

	for (size_t i = 0; i < policy_cq_count(p); i++) {
		const policy_cq_t *cq = policy_cq_at(p, i);
		uint32_t c;

		assert_int_equal(queue_cq_find(q, cq->name, &c), GPUQ_OK);
		for (size_t g = 0; g < cq->n_groups; g++)
			for (size_t f = 0; f < cq->groups[g].n_flavors; f++) {
				const policy_flavor_quota_t *fq = &cq->groups[g].flavors[f];
				uint32_t fid, rid;

				assert_int_equal(queue_flavor_find(q, fq->name, &fid), GPUQ_OK);
				for (size_t r = 0; r < fq->n_resources; r++) {
					const char *res = fq->resources[r].resource;
					queue_quota_view_t v;
					int64_t fit;

					assert_int_equal(queue_resource_find(q, res, &rid),
							 GPUQ_OK);
					assert_int_equal(queue_cq_quota(q, c, fid, rid, &v),
							 GPUQ_OK);
					assert_int_equal(policy_cq_max_fit(cq, fq->name, res, &fit),
							 GPUQ_OK);
					if (fit != v.max_capacity)
						fail_msg(
						    "%s %s %s: webhook %" PRId64 ", core %" PRId64,
						    cq->name, fq->name, res, fit, v.max_capacity);
					checked++;
				}
			}
	}
	return checked;
}

static void max_fit_one_rule(void **state)
{
	static const char text[] = FLAVOR("a100") FLAVOR("h100") COHORT(
	    "pool") "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: a}\n"
		    "spec:\n  cohortName: pool\n"
		    "  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 1500m, lendingLimit: 500m}\n"
		    "      - {name: memory, nominalQuota: 2Gi, lendingLimit: 1Gi}\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 2}\n"
		    "    - name: h100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 3}\n"
		    "      - {name: memory, nominalQuota: 1536Mi}\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 0}\n"
		    "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: b}\n"
		    "spec:\n  cohortName: pool\n"
		    "  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
		    "    flavors:\n    - name: h100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 250m, borrowingLimit: 1}\n"
		    "      - {name: memory, nominalQuota: 1Gi, lendingLimit: 0}\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 4, lendingLimit: 3}\n"
		    "    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 1}\n"
		    "      - {name: memory, nominalQuota: 1Gi}\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 6, borrowingLimit: 0}\n"
		    "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: "
		    "alone}\n"
		    "spec:\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
		    "    flavors:\n    - name: h100\n      resources:\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 5}\n";
	policy_t *p = policy_of(text);
	queue_t *q = core_of(p, NULL);
	size_t checked = max_fit_agrees(p, q);
	int64_t spot;

	(void)state;
	assert_int_equal(checked, 13);
	/* spot checks: a's a100 GPUs: 8 + min(2, 6 lent by b); b's h100 cpu:
	 * 250m + min(1, 3 lent by a); alone: its nominal */
	assert_int_equal(policy_cq_max_fit(policy_cq_find(p, "a"), "a100", "nvidia.com/gpu", &spot),
			 GPUQ_OK);
	assert_int_equal(spot, 10);
	assert_int_equal(policy_cq_max_fit(policy_cq_find(p, "b"), "h100", "cpu", &spot), GPUQ_OK);
	assert_int_equal(spot, 1250);
	assert_int_equal(
	    policy_cq_max_fit(policy_cq_find(p, "alone"), "h100", "nvidia.com/gpu", &spot),
	    GPUQ_OK);
	assert_int_equal(spot, 5);
	queue_destroy(q);
	policy_unref(p);
}

/* The same over a cohort tree (Kueue's hierarchical cohorts): org owns 12
 * cpu; dept, under org, owns 2 GPUs, lends org at most 1 GPU of its subtree
 * and may take 3 more; x sits in dept, y in org; a second tree's root owns
 * 12 cpu for a CQ of nominal 0 (Kueue's cohort concept page shapes). */
static void max_fit_one_rule_tree(void **state)
{
	static const char text[] = FLAVOR(
	    "a100") "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: "
		    "org}\nspec:\n  resourceGroups:\n  - coveredResources: [cpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 12}\n"
		    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: "
		    "dept}\nspec:\n  parentName: org\n  fairSharing: {weight: \"0.75\"}\n"
		    "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 2, lendingLimit: 1, "
		    "borrowingLimit: 3}\n"
		    "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\n"
		    "spec:\n  cohortName: dept\n"
		    "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 2}\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 4}\n"
		    "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: y}\n"
		    "spec:\n  cohortName: org\n"
		    "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 0}\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 0}\n"
		    "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: "
		    "shared}\nspec:\n  resourceGroups:\n  - coveredResources: [cpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 12}\n"
		    "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: z}\n"
		    "spec:\n  cohortName: shared\n"
		    "  resourceGroups:\n  - coveredResources: [cpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 0}\n";
	static const struct {
		const char *cq, *res;
		int64_t want;
	} spots[] = {
	    /* dept keeps 5 of its 6 GPUs for x, and offers 1 more from org */
	    {"x", "nvidia.com/gpu", 6}, {"y", "nvidia.com/gpu", 1}, /* only the 1 dept lends */
	    {"x", "cpu", 14000},				    /* org's 12 and x's own 2 */
	    {"y", "cpu", 14000},	{"z", "cpu", 12000},
	};
	policy_t *p = policy_of(text);
	queue_t *q = core_of(p, NULL);
	int64_t spot;

	(void)state;
	assert_int_equal(max_fit_agrees(p, q), 5);
	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		assert_int_equal(
		    policy_cq_max_fit(policy_cq_find(p, spots[i].cq), "a100", spots[i].res, &spot),
		    GPUQ_OK);
		if (spot != spots[i].want)
			fail_msg("%s %s: %" PRId64 ", want %" PRId64, spots[i].cq, spots[i].res,
				 spot, spots[i].want);
	}
	queue_destroy(q);
	policy_unref(p);
}

/* flavorFungibility and a fairSharing weight of 0 reach the core's spec:
 * the defaults, and the fields set the other way (the core's search is
 * tested in test_queue, weights in test_fairshare and test_queue_props). */
static void build_translates_fungibility(void **state)
{
	static const char text[] =
	    FLAVOR("a100") "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
			   "metadata: {name: plain}\nspec:\n"
			   "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
			   "    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, "
			   "nominalQuota: 8}]}]\n"
			   "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
			   "metadata: {name: turned}\nspec:\n  fairSharing: {weight: 0}\n"
			   "  flavorFungibility: {whenCanBorrow: TryNextFlavor, "
			   "whenCanPreempt: TryNextFlavor, preference: PreemptionOverBorrowing}\n"
			   "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
			   "    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, "
			   "nominalQuota: 8}]}]\n";
	policy_t *p = policy_of(text);
	engine_cq_spec_t sp;

	(void)state;
	assert_int_equal(engine_cq_spec_init(&sp, policy_cq_find(p, "plain")), GPUQ_OK);
	assert_int_equal(sp.spec.when_can_borrow, QUEUE_FUNGIBLE_MAY_STOP);
	assert_int_equal(sp.spec.when_can_preempt, QUEUE_FUNGIBLE_TRY_NEXT);
	assert_int_equal(sp.spec.preference, QUEUE_PREFER_BORROWING);
	assert_false(sp.spec.weight_zero);
	engine_cq_spec_deinit(&sp);
	assert_int_equal(engine_cq_spec_init(&sp, policy_cq_find(p, "turned")), GPUQ_OK);
	assert_int_equal(sp.spec.when_can_borrow, QUEUE_FUNGIBLE_TRY_NEXT);
	assert_int_equal(sp.spec.when_can_preempt, QUEUE_FUNGIBLE_TRY_NEXT);
	assert_int_equal(sp.spec.preference, QUEUE_PREFER_PREEMPTION);
	assert_true(sp.spec.weight_zero); /* Kueue's weight 0, not the default */
	engine_cq_spec_deinit(&sp);
	policy_unref(p);
}

/* spec.admissionScope reaches the core's spec: admission fair sharing on for
 * UsageBasedAdmissionFairSharing, off for NoAdmissionFairSharing and for a
 * CQ without the field (Kueue's default). */
static void build_translates_admission_scope(void **state)
{
	static const char *const modes[] = {"", "NoAdmissionFairSharing",
					    "UsageBasedAdmissionFairSharing"};
	char text[1024];
	engine_cq_spec_t sp;

	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		policy_t *p;
		queue_t *q;
		char scope[128] = "";

		if (*modes[i])
			snprintf(scope, sizeof(scope), "  admissionScope: {admissionMode: %s}\n",
				 modes[i]);
		snprintf(
		    text, sizeof(text),
		    FLAVOR("a100") "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: "
				   "ClusterQueue\nmetadata: {name: cq}\nspec:\n%s"
				   "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n"
				   "    flavors: [{name: a100, resources: [{name: "
				   "nvidia.com/gpu, nominalQuota: 8}]}]\n" LQ("team", "cq"),
		    scope);
		p = policy_of(text);
		assert_int_equal(engine_cq_spec_init(&sp, policy_cq_find(p, "cq")), GPUQ_OK);
		assert_int_equal(sp.spec.admission_fair_sharing, i == 2);
		engine_cq_spec_deinit(&sp);
		q = core_of(p, NULL); /* the core takes the spec */
		assert_int_equal(queue_cq_count(q), 1);
		queue_destroy(q);
		policy_unref(p);
	}
}

static void build_translates_policy(void **state)
{
	static const char text[] = FLAVOR("a100") COHORT(
	    "pool") "---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
		    "spec:\n  cohortName: pool\n  stopPolicy: Hold\n"
		    "  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
		    "    flavors:\n    - name: a100\n      resources:\n"
		    "      - {name: cpu, nominalQuota: 1500m}\n"
		    "      - {name: memory, nominalQuota: 2Gi, lendingLimit: 1Gi}\n"
		    "      - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 2}\n" LQ(
			"team", "cq");
	policy_t *p = policy_of(text);
	queue_config_t cfg;
	queue_quota_view_t v;
	queue_t *q = core_of(p, NULL);
	gpuq_diag_t d = {{0}};
	uint32_t f, r;

	(void)state;
	assert_int_equal(queue_flavor_count(q), 1);
	assert_int_equal(queue_cohort_count(q), 1);
	assert_string_equal(queue_cohort_name(q, 0), "pool");
	assert_int_equal(queue_cq_count(q), 1);
	assert_int_equal(queue_cq_cohort(q, 0), 0);
	assert_int_equal(queue_lq_count(q), 1);
	assert_string_equal(queue_lq_name(q, 0), "team/lq");
	assert_int_equal(queue_lq_cq(q, 0), 0);
	assert_int_equal(queue_flavor_find(q, "a100", &f), GPUQ_OK);
	assert_int_equal(queue_resource_find(q, "cpu", &r), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, 0, f, r, &v), GPUQ_OK);
	assert_int_equal(v.nominal, 1500); /* millicores */
	assert_int_equal(v.borrowing_limit, QUEUE_UNLIMITED);
	assert_int_equal(queue_resource_find(q, "memory", &r), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, 0, f, r, &v), GPUQ_OK);
	assert_int_equal(v.nominal, 2LL << 30);
	assert_int_equal(v.lending_limit, 1LL << 30);
	assert_int_equal(queue_resource_find(q, "nvidia.com/gpu", &r), GPUQ_OK);
	assert_int_equal(queue_cq_quota(q, 0, f, r, &v), GPUQ_OK);
	assert_int_equal(v.nominal, 8);
	assert_int_equal(v.borrowing_limit, 2);
	/* stopPolicy Hold: nothing is admitted */
	add_wl(q, "team", "w1", 1, 0, 0, 1000);
	add_wl(q, "team", "w1b", 1, 0, 0, 1000);
	cycle(q, 1000);
	assert_int_equal(state_of(q, "w1"), QUEUE_WL_PENDING);
	queue_destroy(q);

	/* a bad configuration: refused, *out NULL, diag says so */
	queue_config_default(&cfg);
	cfg.backoff_base_ms = -1;
	q = (queue_t *)&d; /* must be overwritten */
	assert_int_equal(engine_core_build(p, &cfg, &q, &d), GPUQ_EINVAL);
	assert_null(q);
	assert_non_null(strstr(d.msg, "queue_create"));
	policy_unref(p);
}

/* ==== records in a store (moved here from test_store.c) ==== */

static void record_check_structure(void **state)
{
	const unsigned char v1[] = {1, 9, 9}, v0[] = {0, 1}, v2[] = {2};
	char big[QUEUE_KEY_MAX + 1];
	store_opts_t o;
	gpuq_diag_t d = {{0}};
	struct {
		unsigned type;
		const char *key;
		size_t klen;
		const unsigned char *val;
		size_t vlen;
		int want;
	} cases[] = {
	    {QUEUE_REC_META, "meta", 4, v1, 3, GPUQ_OK},
	    {QUEUE_REC_WORKLOAD, "uid-1", 5, v1, 1, GPUQ_OK},
	    {QUEUE_REC_TENANT, "ns/lq", 5, v1, 3, GPUQ_OK},
	    {QUEUE_REC_META, "other", 5, v1, 3, GPUQ_ECORRUPT},		      /* meta key */
	    {QUEUE_REC_CQ, "cq", 2, v0, 2, GPUQ_ECORRUPT},		      /* version 0 */
	    {QUEUE_REC_CQ, "cq", 2, v2, 1, GPUQ_ECORRUPT},		      /* version 2 */
	    {QUEUE_REC_CQ, "cq", 2, v1, 0, GPUQ_ECORRUPT},		      /* empty value */
	    {QUEUE_REC_CQ, "cq", 2, v1, QUEUE_RECORD_MAX + 1, GPUQ_ECORRUPT}, /* too big */
	    {QUEUE_REC_CQ, "", 0, v1, 3, GPUQ_ECORRUPT},		      /* empty key */
	    {QUEUE_REC_CQ, big, sizeof(big), v1, 3, GPUQ_ECORRUPT},	      /* long key */
	    {0, "x", 1, v1, 3, GPUQ_ECORRUPT},				      /* not a core type */
	    {STORE_TYPE_DRIVER_FIRST, "x", 1, v1, 3, GPUQ_ECORRUPT},
	};

	(void)state;
	memset(big, 'k', sizeof(big));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		d.msg[0] = '\0';
		assert_int_equal(engine_record_check(cases[i].type, cases[i].key, cases[i].klen,
						     cases[i].val, cases[i].vlen, &d),
				 cases[i].want);
		if (cases[i].want)
			assert_true(d.msg[0] != '\0');
	}
	store_opts_init(&o);
	engine_store_types(&o);
	assert_string_equal(o.types[QUEUE_REC_META], "queue_meta");
	assert_string_equal(o.types[QUEUE_REC_CQ], "clusterqueues");
	assert_string_equal(o.types[QUEUE_REC_TENANT], "tenants");
	assert_string_equal(o.types[QUEUE_REC_WORKLOAD], "workloads");
	assert_null(o.types[0]);
	assert_null(o.types[STORE_TYPE_DRIVER_FIRST]);
}

/* The same small policy in every queue: one flavor, one CQ covering cpu and
 * GPUs, two tenants. */
static queue_t *queue_small(void)
{
	static const char text[] = FLAVOR("a100") CQ("gpu-cq", "", FQ("a100", "8", "4"))
	    LQ("team-a", "gpu-cq") LQ("team-b", "gpu-cq");
	policy_t *p = policy_of(text);
	queue_t *q = core_of(p, NULL);

	policy_unref(p);
	return q;
}

static void persist_and_restore(void **state)
{
	fixture_t *f = *state;
	char dir2[400], dir3[400];
	store_info_t info;
	store_txn_t *t;
	store_t *s = open_core_store(f->dir);
	queue_t *q = queue_small(), *q2 = queue_small();
	gpuq_diag_t d = {{0}};
	uint64_t seq = 0, d_orig, d_rest;

	/* step 1: arrivals and a cycle, persisted with a driver record */
	add_wl(q, "team-a", "uid-a1", 2, 0, 0, 1000);
	add_wl(q, "team-b", "uid-b1", 2, 0, 0, 1001);
	add_wl(q, "team-a", "uid-a2", 2, 0, 0, 1002); /* does not fit: 4 GPUs */
	cycle(q, 2000);
	assert_true(queue_dirty_count(q) > 0);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(engine_stage(t, q), GPUQ_OK);
	assert_int_equal(store_put(t, STORE_TYPE_DRIVER_FIRST, "step", 4, "1", 1), GPUQ_OK);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	queue_dirty_clear(q);
	assert_int_equal(seq, 1);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.counts[QUEUE_REC_WORKLOAD], 3);

	/* step 2: one finishes and is deleted: its record is deleted too */
	assert_int_equal(queue_workload_finish(q, "uid-a1", 3000), GPUQ_OK);
	assert_int_equal(queue_workload_delete(q, "uid-a1", 3000), GPUQ_OK);
	cycle(q, 3000);
	assert_int_equal(engine_persist(s, q, &seq, &d), GPUQ_OK);
	assert_int_equal(seq, 2);
	assert_int_equal(queue_dirty_count(q), 0);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.counts[QUEUE_REC_WORKLOAD], 2);
	/* nothing changed: an empty batch, same seq */
	assert_int_equal(engine_persist(s, q, &seq, &d), GPUQ_OK);
	assert_int_equal(seq, 2);

	/* restore into a fresh queue of the same policy: a full snapshot of
	 * each gives the same digest */
	assert_int_equal(engine_restore(s, q2, &d), GPUQ_OK);
	snprintf(dir2, sizeof(dir2), "%s/orig", f->root);
	snprintf(dir3, sizeof(dir3), "%s/restored", f->root);
	d_orig = snapshot_digest(q, dir2);
	d_rest = snapshot_digest(q2, dir3);
	assert_int_equal(d_orig, d_rest);
	queue_destroy(q2);

	/* a damaged record: restore fails naming it, and leaves no crash */
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_put(t, QUEUE_REC_WORKLOAD, "uid-b1", 6, "\x01\xff", 2), GPUQ_OK);
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	q2 = queue_small();
	assert_int_not_equal(engine_restore(s, q2, &d), GPUQ_OK);
	print_message("# restore of a damaged record: %s\n", d.msg);
	assert_non_null(strstr(d.msg, "workloads record \"uid-b1\""));
	queue_destroy(q2);
	queue_destroy(q);
	store_close(s);
}

/* engine_persist_full deletes stored core records the core no longer holds
 * and leaves the driver's records alone. */
static void persist_full_deletes_stale(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_core_store(f->dir);
	queue_t *q = queue_small(), *q2;
	store_txn_t *t;
	store_info_t info;
	gpuq_diag_t d = {{0}};
	void *v;
	size_t n;
	uint64_t seq;

	add_wl(q, "team-a", "keep", 2, 0, 0, 1000);
	cycle(q, 1000);
	assert_int_equal(engine_persist(s, q, NULL, NULL), GPUQ_OK);
	/* records of objects the core does not hold, and a driver record */
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_put(t, QUEUE_REC_WORKLOAD, "ghost", 5, "\x01", 1), GPUQ_OK);
	assert_int_equal(store_put(t, QUEUE_REC_CQ, "old-cq", 6, "\x01", 1), GPUQ_OK);
	assert_int_equal(store_put(t, QUEUE_REC_TENANT, "gone/lq", 7, "\x01", 1), GPUQ_OK);
	assert_int_equal(store_put(t, STORE_TYPE_DRIVER_FIRST, "p", 1, "x", 1), GPUQ_OK);
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	q2 = queue_small();
	assert_int_not_equal(engine_restore(s, q2, &d), GPUQ_OK); /* names the stale ones */
	queue_destroy(q2);

	assert_int_equal(engine_persist_full(s, q, &seq, &d), GPUQ_OK);
	assert_int_equal(queue_dirty_count(q), 0);
	assert_int_equal(store_get(s, QUEUE_REC_WORKLOAD, "ghost", 5, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_get(s, QUEUE_REC_CQ, "old-cq", 6, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_get(s, QUEUE_REC_TENANT, "gone/lq", 7, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_get(s, STORE_TYPE_DRIVER_FIRST, "p", 1, &v, &n), GPUQ_OK);
	free(v);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.counts[QUEUE_REC_META], 1);
	assert_int_equal(info.counts[QUEUE_REC_CQ], 1);
	assert_int_equal(info.counts[QUEUE_REC_TENANT], 2);
	assert_int_equal(info.counts[QUEUE_REC_WORKLOAD], 1);
	q2 = queue_small();
	assert_int_equal(engine_restore(s, q2, &d), GPUQ_OK);
	same_records(q, q2, true);
	queue_destroy(q2);
	queue_destroy(q);
	store_close(s);
}

/* Every record of a, the usage ledger's included, encodes to the same bytes
 * in b, and b holds no record a lacks (changed sets are used to list them:
 * call with both empty; they are left empty). */
static void same_every_record(queue_t *a, queue_t *b)
{
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen, na = 0, nb = 0;
	char k[QUEUE_KEY_MAX + 1];

	assert_int_equal(queue_dirty_all(a), GPUQ_OK);
	while (queue_dirty_next(a, &it, &type, &key, &klen) == GPUQ_OK) {
		memcpy(k, key, klen);
		k[klen] = '\0';
		same_record(a, b, type, k);
		na++;
	}
	assert_int_equal(queue_dirty_all(b), GPUQ_OK);
	memset(&it, 0, sizeof(it));
	while (queue_dirty_next(b, &it, &type, &key, &klen) == GPUQ_OK)
		nb++;
	assert_int_equal(na, nb);
	queue_dirty_clear(a);
	queue_dirty_clear(b);
}

/* A ClusterQueue of cohort lab: 16 cpu and 4 GPUs of a100, GPUs with a
 * borrowingLimit or lendingLimit (`limit`) of 2. */
#define TRACE_CQ(name, limit)                                                                      \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: " name "}\n"      \
	"spec:\n  cohortName: lab\n"                                                               \
	"  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}\n"            \
	"  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n"           \
	"    - name: a100\n      resources:\n      - {name: cpu, nominalQuota: 16}\n"              \
	"      - {name: nvidia.com/gpu, nominalQuota: 4, " limit ": 2}\n"

static uint32_t trace_rand(uint32_t *x) /* xorshift32: the same trace everywhere */
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* Finish, mark Ready or delete up to two workloads picked at random. */
static void trace_churn(queue_t *q, uint32_t *x, int64_t now)
{
	char uid[2][64];
	int n = 0;

	for (queue_wl_t id = queue_workload_next(q, QUEUE_NONE); id != QUEUE_NONE && n < 2;
	     id = queue_workload_next(q, id)) {
		queue_workload_view_t v;
		if (queue_workload_view(q, id, &v) || trace_rand(x) % 3)
			continue;
		snprintf(uid[n++], sizeof(uid[0]), "%s", v.uid);
	}
	for (int i = 0; i < n; i++) {
		uint32_t r = trace_rand(x) % 4;
		if (r == 0)
			(void)queue_workload_finish(q, uid[i], now);
		else if (r == 1)
			(void)queue_workload_pods_ready(q, uid[i], now);
		else if (r == 2)
			(void)queue_workload_delete(q, uid[i], now);
	}
}

/* The queue-level crash test's trace, without the kill: two ClusterQueues
 * of a cohort (one borrowing at most 2 GPUs, the other lending at most 2),
 * reclaim and preemption by priority, a Ready timeout, random arrivals,
 * finishes, Ready and deletes. After every step's persist, a core restored
 * from the store holds every record byte for byte: the core marked all it
 * changed. (A workload the cycle moved back from set-aside into its queue
 * (capacity up), or set aside with the same reason as before, or skipped
 * because another preemptor took its victims, was not marked: its stored
 * record said set aside, or Quota, while the core held it queued, or
 * "taken"; suite_store's queue kill found it about one run in three.) */
static void persisted_equals_live_every_step(void **state)
{
	static const char *const ns[] = {"t1", "t2", "t3", "t4"};
	static const char text[] = FLAVOR("a100") COHORT("lab") TRACE_CQ("cq-a", "borrowingLimit")
	    TRACE_CQ("cq-b", "lendingLimit") LQ("t1", "cq-a") LQ("t2", "cq-a") LQ("t3", "cq-b")
		LQ("t4", "cq-b");
	fixture_t *f = *state;
	policy_t *p = policy_of(text);
	queue_config_t cfg;
	queue_t *q;
	store_t *s = open_core_store(f->dir);
	gpuq_diag_t d = {{0}};
	uint32_t x = 2463534242u;
	int64_t now = 0;

	queue_config_default(&cfg);
	cfg.ready_timeout_ms = 20000;
	q = core_of(p, &cfg);
	for (int step = 1; step <= 400; step++) {
		queue_t *r = core_of(p, &cfg);

		now += 1000 + trace_rand(&x) % 4000;
		for (int i = (int)(trace_rand(&x) % 3); i > 0; i--) {
			char uid[32];
			snprintf(uid, sizeof(uid), "w%d-%d", step, i);
			add_wl(q, ns[trace_rand(&x) % 4], uid, 1 + (int)(trace_rand(&x) % 3),
			       (int)(trace_rand(&x) % 3), 0, now);
		}
		trace_churn(q, &x, now);
		assert_int_equal(queue_tick(q, now, NULL), GPUQ_OK);
		cycle(q, now);
		assert_int_equal(engine_persist(s, q, NULL, &d), GPUQ_OK);
		assert_int_equal(engine_restore(s, r, &d), GPUQ_OK);
		same_every_record(q, r);
		queue_destroy(r);
	}
	queue_destroy(q);
	store_close(s);
	policy_unref(p);
}

/* ==== rebuilding ==== */

/* A core of BASE in many states: admitted on both flavors, borrowing,
 * pending set aside (Quota, NoFit), a gang waiting for pods, a finished one
 * kept, a preempted one requeued, and a tenant ledger. */
static queue_t *busy_core(const policy_t *p)
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

/* GPU-hours per flavor of the core's ledger over [0, until], open work to now. */
static double gpu_hours(const queue_t *q, const char *flavor, int64_t now, bool borrowed)
{
	ledger_query_t qry = {0, now, now, LEDGER_BY_FLAVOR, NULL, 0};
	ledger_report_t r;
	double h = 0;

	assert_int_equal(ledger_window(queue_ledger(q), &qry, &r), GPUQ_OK);
	for (size_t i = 0; i < r.n_rows; i++)
		if (!strcmp(r.rows[i].group, flavor) &&
		    !strcmp(r.rows[i].resource, "nvidia.com/gpu"))
			h = borrowed ? r.rows[i].borrowed_hours : r.rows[i].nominal_hours;
	ledger_report_deinit(&r);
	return h;
}

#define HOUR LEDGER_HOUR_MS

/* The usage ledger goes through the store and a restart, and through a
 * rebuild: a1 (4 GPUs, a100 within cq-a's nominal 4), a2 (4, h100) and b1
 * (2, a100 borrowed from cq-b) admitted at 0; b1 finishes at 1 h; the store
 * is reopened at 2 h with a1 and a2 still open; a1 finishes at 3 h in the
 * restored core: a100 12 nominal + 2 borrowed GPU-hours, h100 12 (open). */
static void usage_survives_restart(void **state)
{
	fixture_t *f = *state;
	policy_t *p = policy_of(BASE);
	policy_t *p2 = policy_of(BASE_OBJECTS BASE_CQA LQ("team-a", "cq-a") LQ("team-b", "cq-a"));
	queue_t *q = core_of(p, NULL), *r, *rb;
	store_t *s = open_core_store(f->dir);
	engine_rebuild_report_t rep = {0};
	gpuq_diag_t d = {{0}};

	(void)state;
	/* in this order (priorities): a1 within a100's nominal, b1 borrowing
	 * 2 of it from cq-b, a2 on h100 */
	add_wl(q, "team-a", "a1", 4, 2, 0, 0);
	add_wl(q, "team-a", "a2", 4, 0, 0, 0);
	add_wl(q, "team-b", "b1", 2, 1, 0, 0);
	cycle(q, 0);
	assert_int_equal(gpu_usage(q, "cq-a", "a100"), 6);
	assert_int_equal(queue_workload_finish(q, "b1", HOUR), GPUQ_OK);
	assert_int_equal(engine_persist(s, q, NULL, &d), GPUQ_OK);
	store_close(s);
	s = open_core_store(f->dir);
	r = core_of(p, NULL);
	assert_int_equal(engine_restore(s, r, &d), GPUQ_OK);
	assert_int_equal(queue_dirty_count(r), 0); /* nothing to reconcile */
	assert_true(ledger_is_open(queue_ledger(r), "a1"));
	assert_false(ledger_is_open(queue_ledger(r), "b1"));
	assert_int_equal(queue_workload_finish(r, "a1", 3 * HOUR), GPUQ_OK);
	assert_true(fabs(gpu_hours(r, "a100", 3 * HOUR, false) - 12.0) < 1e-9);
	assert_true(fabs(gpu_hours(r, "a100", 3 * HOUR, true) - 2.0) < 1e-9);
	assert_true(fabs(gpu_hours(r, "h100", 3 * HOUR, false) - 12.0) < 1e-9);
	assert_int_equal(engine_persist(s, r, NULL, &d), GPUQ_OK);
	/* a rebuild carries the same ledger */
	rb = rebuild(r, p, NULL, &rep);
	assert_true(fabs(gpu_hours(rb, "a100", 3 * HOUR, false) - 12.0) < 1e-9);
	assert_true(fabs(gpu_hours(rb, "h100", 4 * HOUR, false) - 16.0) < 1e-9);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(rb);
	/* a rebuild that loses an admitted workload (c1, 2 GPUs in cq-b from
	 * 3 h) closes its interval at the core's last now (5 h): 4 more a100
	 * GPU-hours, kept under cq-b's name */
	add_wl(r, "team-c", "c1", 2, 0, 0, 3 * HOUR);
	cycle(r, 3 * HOUR);
	assert_int_equal(state_of(r, "c1"), QUEUE_WL_ADMITTED);
	cycle(r, 5 * HOUR);
	rb = rebuild(r, p2, NULL, &rep);
	assert_int_equal(rep.n_lost, 1);
	assert_false(ledger_is_open(queue_ledger(rb), "c1"));
	assert_true(fabs(gpu_hours(rb, "a100", 9 * HOUR, false) - 16.0) < 1e-9);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(rb);
	policy_unref(p2);
	queue_destroy(r);
	queue_destroy(q);
	store_close(s);
	policy_unref(p);
}

static void rebuild_same_policy_round_trip(void **state)
{
	policy_t *p = policy_of(BASE);
	queue_t *old = busy_core(p), *q;
	engine_rebuild_report_t rep = {0};
	char adm_old[256], adm_new[256];
	size_t live = 0;

	(void)state;
	for (queue_wl_t id = queue_workload_next(old, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(old, id))
		live++;
	assert_int_equal(state_of(old, "a1"), QUEUE_WL_FINISHED);
	assert_int_equal(state_of(old, "hi"), QUEUE_WL_ADMITTED);
	q = rebuild(old, p, NULL, &rep);
	assert_int_equal(rep.n_lost, 0);
	assert_int_equal(rep.workloads, live);
	assert_int_equal(rep.cqs_dropped + rep.tenants_dropped + rep.cqs_reset, 0);
	/* every record byte for byte (meta differs only in the cohorts due a
	 * retry), every explanation and order */
	same_records(old, q, false);
	same_views(old, q);
	/* the changed set holds everything */
	/* ... and the usage ledger's records (meta, series, hours, open) */
	assert_true(ledger_dirty_count(queue_ledger(q)) > 3);
	assert_int_equal(queue_dirty_count(q),
			 1 + 2 + 3 + live + ledger_dirty_count(queue_ledger(q)));
	/* and the future is the same: the next events decide alike */
	assert_int_equal(queue_workload_finish(old, "hi", 5000), GPUQ_OK);
	assert_int_equal(queue_workload_finish(q, "hi", 5000), GPUQ_OK);
	assert_int_equal(queue_workload_pods_add(old, "g1", 2, 5000), GPUQ_OK);
	assert_int_equal(queue_workload_pods_add(q, "g1", 2, 5000), GPUQ_OK);
	cycle_admits(old, 5000, adm_old, sizeof(adm_old));
	cycle_admits(q, 5000, adm_new, sizeof(adm_new));
	print_message("# admitted after the rebuild: %s\n", adm_new);
	assert_true(adm_old[0] != '\0');
	assert_string_equal(adm_old, adm_new);
	same_records(old, q, false);
	same_views(old, q);
	engine_rebuild_report_deinit(&rep);
	engine_rebuild_report_deinit(&rep); /* twice is fine */
	engine_rebuild_report_deinit(NULL);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
}

/* The daemon's configuration (quota held until the pods are gone, a Ready
 * timeout for every workload): evicting workloads and requeue backoffs make
 * the round trip too, and the timers fire alike afterwards. */
static void rebuild_round_trip_evicting_and_backoff(void **state)
{
	policy_t *p = policy_of(FLAVOR("a100") CQ("cq", "", FQ("a100", "64", "8")) LQ("t", "cq"));
	queue_config_t cfg;
	queue_t *old, *q;
	engine_rebuild_report_t rep = {0};
	queue_result_t ro, rn;
	char adm_old[128], adm_new[128];

	(void)state;
	queue_config_default(&cfg);
	cfg.release_on_evict = false;
	cfg.ready_timeout_ms = 1000;
	cfg.ready_scope = QUEUE_READY_ALL;
	cfg.backoff_base_ms = 10000;
	old = core_of(p, &cfg);
	add_wl(old, "t", "w1", 4, 0, 0, 1000);
	add_wl(old, "t", "w3", 2, 0, 0, 1000);
	cycle(old, 1000);
	assert_int_equal(queue_workload_pods_ready(old, "w3", 1500), GPUQ_OK);
	assert_int_equal(queue_tick(old, 2500, NULL), GPUQ_OK); /* w1 not Ready: evicted */
	assert_int_equal(queue_workload_evicted(old, "w1", 2600), GPUQ_OK); /* backoff */
	add_wl(old, "t", "w2", 4, 0, 0, 2600);
	cycle(old, 2600);
	assert_int_equal(queue_tick(old, 4000, NULL), GPUQ_OK); /* w2 not Ready: evicting */
	assert_int_equal(state_of(old, "w1"), QUEUE_WL_PENDING);
	assert_int_equal(state_of(old, "w2"), QUEUE_WL_EVICTING);
	assert_int_equal(state_of(old, "w3"), QUEUE_WL_ADMITTED);
	q = rebuild(old, p, &cfg, &rep);
	assert_int_equal(rep.n_lost + rep.cqs_reset, 0);
	same_records(old, q, false);
	same_views(old, q);
	assert_int_equal(queue_next_event(old, 4000), queue_next_event(q, 4000));
	assert_int_equal(queue_workload_evicted(old, "w2", 5000), GPUQ_OK);
	assert_int_equal(queue_workload_evicted(q, "w2", 5000), GPUQ_OK);
	assert_int_equal(queue_tick(old, 13000, &ro), GPUQ_OK); /* w1's backoff ends */
	assert_int_equal(queue_tick(q, 13000, &rn), GPUQ_OK);
	assert_int_equal(ro.n_evictions, rn.n_evictions);
	cycle_admits(old, 13000, adm_old, sizeof(adm_old));
	cycle_admits(q, 13000, adm_new, sizeof(adm_new));
	assert_string_equal(adm_old, "w1 ");
	assert_string_equal(adm_old, adm_new);
	same_records(old, q, false);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
}

static void rebuild_quota_raised(void **state)
{
	policy_t *p = policy_of(FLAVOR("a100") CQ("cq", "", FQ("a100", "64", "4")) LQ("t", "cq"));
	policy_t *p2 = policy_of(FLAVOR("a100") CQ("cq", "", FQ("a100", "64", "8")) LQ("t", "cq"));
	queue_t *old = core_of(p, NULL), *q;
	engine_rebuild_report_t rep = {0};
	queue_workload_view_t v;
	queue_stats_t st;
	queue_wl_t id;
	char adm[64];

	(void)state;
	add_wl(old, "t", "w1", 4, 0, 0, 1000);
	add_wl(old, "t", "w2", 4, 0, 0, 1001);
	cycle(old, 1000);
	assert_int_equal(queue_workload_find(old, "w2", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(old, id, &v), GPUQ_OK);
	assert_int_equal(v.wait, QUEUE_WAIT_QUOTA); /* set aside */
	q = rebuild(old, p2, NULL, &rep);
	assert_int_equal(rep.n_lost + rep.cqs_dropped + rep.tenants_dropped + rep.cqs_reset, 0);
	assert_int_equal(gpu_usage(q, "cq", "a100"), 4);
	/* the set-aside workload is tried against the new quota at once */
	cycle_admits(q, 2000, adm, sizeof(adm));
	assert_string_equal(adm, "w2 ");
	assert_int_equal(queue_cq_stats(q, 0, &st), GPUQ_OK);
	assert_int_equal(st.admissions, 2); /* history carried: 1 before, 1 after */
	/* the old core, unchanged, still holds it aside */
	cycle_admits(old, 2000, adm, sizeof(adm));
	assert_string_equal(adm, "");
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
	policy_unref(p2);
}

static void rebuild_lq_removed_pending(void **state)
{
	policy_t *p = policy_of(BASE);
	policy_t *p2 =
	    policy_of(BASE_OBJECTS BASE_CQA BASE_CQB LQ("team-a", "cq-a") LQ("team-c", "cq-b"));
	queue_t *old = core_of(p, NULL), *q;
	engine_rebuild_report_t rep = {0};
	const engine_lost_t *e;
	queue_stats_t st;

	(void)state;
	add_wl(old, "team-c", "c1", 4, 0, 0, 900); /* cq-b: nothing to lend */
	cycle(old, 900);
	add_wl(old, "team-a", "a1", 4, 0, 0, 1000);
	add_wl(old, "team-a", "a2", 4, 0, 0, 1001);
	cycle(old, 1000);
	add_wl(old, "team-b", "b1", 4, 0, 0, 1003); /* nothing left: pending */
	cycle(old, 1003);
	assert_int_equal(state_of(old, "b1"), QUEUE_WL_PENDING);
	q = rebuild(old, p2, NULL, &rep);
	assert_int_equal(rep.n_lost, 1);
	e = lost_find(&rep, "b1");
	assert_int_equal(e->reason, ENGINE_LOST_LOCALQUEUE);
	assert_int_equal(e->state, QUEUE_WL_PENDING);
	assert_string_equal(e->namespace_, "team-b");
	assert_string_equal(e->name, "b1");
	assert_string_equal(e->local_queue, "team-b/lq");
	assert_string_equal(e->cluster_queue, "cq-a");
	assert_null(e->flavor);
	assert_int_equal(rep.workloads, 3);
	assert_int_equal(rep.tenants_dropped, 1);
	assert_int_equal(rep.cqs_dropped + rep.cqs_reset, 0);
	assert_false(holds(q, "b1"));
	assert_int_equal(state_of(q, "a1"), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_cq_stats(q, cq_id(q, "cq-a"), &st), GPUQ_OK);
	assert_int_equal(st.admissions, 2);
	assert_int_equal(st.pending, 0);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
	policy_unref(p2);
}

/* A LocalQueue pointed at another ClusterQueue: its pending workloads move
 * along, its admitted ones are reported; the ClusterQueue it left keeps its
 * quota but restarts its counters (its admitted set changed). */
static void rebuild_lq_moved(void **state)
{
	policy_t *p = policy_of(BASE);
	policy_t *p2 = policy_of(BASE_OBJECTS BASE_CQA BASE_CQB LQ("team-a", "cq-a")
				     LQ("team-b", "cq-b") LQ("team-c", "cq-b"));
	queue_t *old = core_of(p, NULL), *q;
	engine_rebuild_report_t rep = {0};
	const engine_lost_t *e;
	queue_workload_view_t v;
	queue_stats_t st;
	queue_wl_t id;

	(void)state;
	add_wl(old, "team-b", "b1", 4, 0, 0, 1000); /* admitted in cq-a */
	add_wl(old, "team-a", "a1", 4, 0, 0, 1001); /* admitted in cq-a */
	add_wl(old, "team-c", "c1", 4, 0, 0, 1002); /* admitted in cq-b */
	add_wl(old, "team-b", "b2", 4, 0, 0, 1003); /* pending */
	cycle(old, 1000);
	assert_int_equal(state_of(old, "b2"), QUEUE_WL_PENDING);
	q = rebuild(old, p2, NULL, &rep);
	assert_int_equal(rep.n_lost, 1);
	e = lost_find(&rep, "b1");
	assert_int_equal(e->reason, ENGINE_LOST_CLUSTERQUEUE);
	assert_int_equal(e->state, QUEUE_WL_ADMITTED);
	assert_string_equal(e->cluster_queue, "cq-a");
	assert_int_equal(rep.tenants_dropped, 0);
	assert_int_equal(rep.cqs_reset, 1); /* cq-a */
	assert_int_equal(queue_workload_find(q, "b2", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.cq, cq_id(q, "cq-b"));
	assert_int_equal(v.state, QUEUE_WL_PENDING);
	assert_int_equal(gpu_usage(q, "cq-a", "a100") + gpu_usage(q, "cq-a", "h100"), 4);
	assert_int_equal(queue_cq_stats(q, cq_id(q, "cq-a"), &st), GPUQ_OK);
	assert_int_equal(st.admissions, 0); /* restarted */
	assert_int_equal(st.admitted, 1);
	assert_int_equal(queue_cq_stats(q, cq_id(q, "cq-b"), &st), GPUQ_OK);
	assert_int_equal(st.admissions, 1); /* carried */
	assert_int_equal(queue_lq_stats(q, lq_id(q, "team-b"), &st), GPUQ_OK);
	assert_int_equal(st.admissions, 1); /* the tenant's ledger moved along */
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
	policy_unref(p2);
}

/* A ClusterQueue removed (with its LocalQueue) while it holds an admitted
 * workload; then the full snapshot leaves no trace of it in the store and a
 * restart restores the rebuilt core exactly. */
static void rebuild_cq_removed_admitted(void **state)
{
	fixture_t *f = *state;
	policy_t *p = policy_of(BASE);
	policy_t *p2 = policy_of(BASE_OBJECTS BASE_CQA LQ("team-a", "cq-a") LQ("team-b", "cq-a"));
	queue_t *old = core_of(p, NULL), *q, *r;
	store_t *s = open_core_store(f->dir);
	engine_rebuild_report_t rep = {0};
	const engine_lost_t *e;
	queue_stats_t st;
	gpuq_diag_t d = {{0}};
	void *v;
	size_t n;

	add_wl(old, "team-a", "a1", 4, 0, 0, 1000);
	add_wl(old, "team-c", "c1", 2, 0, 0, 1001);
	add_wl(old, "team-c", "c2", 8, 0, 0, 1002); /* pending */
	add_wl(old, "team-b", "b1", 2, 0, 0, 1003);
	cycle(old, 1000);
	assert_int_equal(state_of(old, "c1"), QUEUE_WL_ADMITTED);
	assert_int_equal(engine_persist_full(s, old, NULL, NULL), GPUQ_OK);

	q = rebuild(old, p2, NULL, &rep);
	assert_int_equal(rep.n_lost, 2);
	e = lost_find(&rep, "c1");
	assert_int_equal(e->reason, ENGINE_LOST_CLUSTERQUEUE);
	assert_int_equal(e->state, QUEUE_WL_ADMITTED);
	assert_string_equal(e->cluster_queue, "cq-b");
	assert_string_equal(e->local_queue, "team-c/lq");
	e = lost_find(&rep, "c2");
	assert_int_equal(e->reason, ENGINE_LOST_CLUSTERQUEUE);
	assert_int_equal(e->state, QUEUE_WL_PENDING);
	assert_string_equal(rep.lost[0].uid, "c1"); /* uid order */
	assert_int_equal(rep.cqs_dropped, 1);
	assert_int_equal(rep.tenants_dropped, 1);
	assert_int_equal(rep.cqs_reset, 0);
	assert_int_equal(rep.workloads, 2);
	assert_int_equal(queue_cq_stats(q, cq_id(q, "cq-a"), &st), GPUQ_OK);
	assert_int_equal(st.admissions, 2);
	assert_string_equal(engine_lost_reason_name(e->reason), "ClusterQueueGone");
	assert_string_equal(engine_lost_reason_name(ENGINE_LOST_FLAVOR), "FlavorGone");
	assert_string_equal(engine_lost_reason_name(ENGINE_LOST_LOCALQUEUE), "LocalQueueGone");
	assert_string_equal(engine_lost_reason_name((engine_lost_reason_t)0), "Unknown");
	engine_rebuild_report_log(&rep); /* at ERROR level: silent */

	/* persist: the dropped records leave the store */
	assert_int_equal(engine_persist_full(s, q, NULL, &d), GPUQ_OK);
	assert_int_equal(store_get(s, QUEUE_REC_CQ, "cq-b", 4, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_get(s, QUEUE_REC_TENANT, "team-c/lq", 9, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_get(s, QUEUE_REC_WORKLOAD, "c1", 2, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_get(s, QUEUE_REC_WORKLOAD, "a1", 2, &v, &n), GPUQ_OK);
	free(v);
	/* a restart under the new policy restores the same core */
	r = core_of(p2, NULL);
	assert_int_equal(engine_restore(s, r, &d), GPUQ_OK);
	same_records(q, r, true);
	same_views(q, r);
	queue_destroy(r);
	store_close(s);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
	policy_unref(p2);
}

static void rebuild_flavor_removed(void **state)
{
	policy_t *p = policy_of(BASE);
	policy_t *p2 =
	    policy_of(FLAVOR("a100") COHORT("pool") CQ("cq-a", "pool", FQ("a100", "64", "4"))
			  BASE_CQB LQ("team-a", "cq-a") LQ("team-b", "cq-a") LQ("team-c", "cq-b"));
	queue_t *old = core_of(p, NULL), *q;
	engine_rebuild_report_t rep = {0};
	const engine_lost_t *e;
	queue_stats_t st;
	uint32_t f;

	(void)state;
	add_wl(old, "team-c", "c1", 4, 0, 0, 900); /* cq-b: nothing to lend */
	cycle(old, 900);
	add_wl(old, "team-a", "a1", 4, 0, 0, 1000); /* a100 */
	add_wl(old, "team-a", "a2", 4, 0, 0, 1001); /* h100 */
	add_wl(old, "team-b", "b1", 8, 0, 0, 1002); /* pending */
	cycle(old, 1000);
	assert_int_equal(gpu_usage(old, "cq-a", "h100"), 4);
	q = rebuild(old, p2, NULL, &rep);
	assert_int_equal(rep.n_lost, 1);
	e = lost_find(&rep, "a2");
	assert_int_equal(e->reason, ENGINE_LOST_FLAVOR);
	assert_int_equal(e->state, QUEUE_WL_ADMITTED);
	assert_string_equal(e->flavor, "h100");
	assert_non_null(e->resource);
	assert_string_equal(e->cluster_queue, "cq-a");
	assert_int_equal(rep.workloads, 3);
	assert_int_equal(rep.cqs_reset, 1); /* cq-a lost its h100 quota */
	assert_int_equal(rep.cqs_dropped + rep.tenants_dropped, 0);
	assert_int_equal(queue_flavor_find(q, "h100", &f), GPUQ_ENOTFOUND);
	assert_int_equal(state_of(q, "a1"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "b1"), QUEUE_WL_PENDING);
	assert_int_equal(gpu_usage(q, "cq-a", "a100"), 4);
	assert_int_equal(queue_cq_stats(q, cq_id(q, "cq-a"), &st), GPUQ_OK);
	assert_int_equal(st.admitted, 1);
	assert_int_equal(st.admissions, 0); /* counters restarted */
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
	policy_unref(p2);
}

/* Decayed tenant usage, the finished-work ledger and ClusterQueue history
 * survive a structural change that only adds (a flavor to cq-b, a new
 * ClusterQueue and LocalQueue). */
static void rebuild_keeps_usage_and_ledger(void **state)
{
	policy_t *p = policy_of(BASE);
	policy_t *p2 = policy_of(
	    BASE_OBJECTS BASE_CQA CQ("cq-b", "pool", FQ("a100", "64", "4") FQ("h100", "64", "2"))
		CQ("cq-new", "", FQ("h100", "8", "1")) LQ("team-a", "cq-a") LQ("team-b", "cq-a")
		    LQ("team-c", "cq-b") LQ("team-n", "cq-new"));
	queue_config_t cfg;
	queue_t *old, *q;
	engine_rebuild_report_t rep = {0};
	queue_stats_t so, sn;

	(void)state;
	queue_config_default(&cfg);
	cfg.fair_sharing = true;
	cfg.tenant_half_life_ms = 60000;
	cfg.tenant_sample_ms = 1000;
	old = core_of(p, &cfg);
	add_wl(old, "team-a", "a1", 4, 0, 0, 1000);
	add_wl(old, "team-b", "b1", 2, 0, 0, 1000);
	add_wl(old, "team-c", "c1", 2, 0, 0, 1000);
	cycle(old, 1000);
	assert_int_equal(queue_tick(old, 5000, NULL), GPUQ_OK); /* usage sampled */
	assert_int_equal(queue_workload_finish(old, "b1", 6000), GPUQ_OK);
	assert_int_equal(queue_workload_delete(old, "b1", 6000), GPUQ_OK);
	cycle(old, 6000);
	assert_int_equal(queue_tick(old, 9000, NULL), GPUQ_OK);
	q = rebuild(old, p2, &cfg, &rep);
	assert_int_equal(rep.n_lost + rep.cqs_dropped + rep.tenants_dropped + rep.cqs_reset, 0);
	for (uint32_t i = 0; i < queue_lq_count(old); i++) {
		char ns[64];
		const char *name = queue_lq_name(old, i);
		snprintf(ns, sizeof(ns), "%.*s", (int)(strchr(name, '/') - name), name);
		assert_int_equal(queue_lq_stats(old, i, &so), GPUQ_OK);
		assert_int_equal(queue_lq_stats(q, lq_id(q, ns), &sn), GPUQ_OK);
		assert_true(so.decayed_usage == sn.decayed_usage);
		assert_true(so.used_ms == sn.used_ms);
		assert_int_equal(so.admissions, sn.admissions);
		assert_int_equal(so.finishes, sn.finishes);
		same_record(old, q, QUEUE_REC_TENANT, name);
	}
	assert_int_equal(queue_lq_stats(old, lq_id(old, "team-b"), &so), GPUQ_OK);
	assert_true(so.used_ms > 0);	   /* b1's run is in the ledger */
	assert_true(so.decayed_usage > 0); /* and in the decayed usage */
	for (uint32_t i = 0; i < queue_cq_count(old); i++) {
		assert_int_equal(queue_cq_stats(old, i, &so), GPUQ_OK);
		assert_int_equal(queue_cq_stats(q, cq_id(q, queue_cq_name(old, i)), &sn), GPUQ_OK);
		assert_int_equal(so.admissions, sn.admissions);
		assert_int_equal(so.finishes, sn.finishes);
		assert_int_equal(so.admitted, sn.admitted);
		assert_int_equal(so.weighted_share, sn.weighted_share);
	}
	assert_int_equal(gpu_usage(q, "cq-a", "a100") + gpu_usage(q, "cq-a", "h100"), 4);
	assert_int_equal(gpu_usage(q, "cq-b", "a100"), 2);
	assert_int_equal(gpu_usage(q, "cq-b", "h100"), 0);
	assert_int_equal(queue_cycle_count(q), queue_cycle_count(old));
	assert_int_equal(queue_last_now(q), 9000);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);
	queue_destroy(old);
	policy_unref(p);
	policy_unref(p2);
}

/* Refusals leave the old core as it was and the report empty: a
 * ClusterQueue leaving while its cohort's set-aside work is due a retry (a
 * finish and no cycle since: GPUQ_EAGAIN, fine after a cycle), and a core
 * that cannot hold what is carried (a lower workloads_max). */
static void rebuild_refusals(void **state)
{
	policy_t *p = policy_of(FLAVOR("a100") CQ("cq", "", FQ("a100", "64", "4")) CQ(
	    "cq-x", "", FQ("a100", "64", "4")) LQ("t", "cq") LQ("x", "cq-x"));
	policy_t *p2 = policy_of(FLAVOR("a100") CQ("cq", "", FQ("a100", "64", "4")) LQ("t", "cq"));
	queue_t *old = core_of(p, NULL), *q = NULL;
	engine_rebuild_report_t rep = {0};
	gpuq_diag_t d = {{0}};

	(void)state;
	add_wl(old, "x", "x1", 4, 0, 0, 1000);
	add_wl(old, "t", "t1", 4, 0, 0, 1000);
	cycle(old, 1000);
	assert_int_equal(queue_workload_finish(old, "x1", 2000), GPUQ_OK);
	assert_int_equal(engine_core_rebuild(old, p2, NULL, &q, &rep, &d), GPUQ_EAGAIN);
	print_message("# %s\n", d.msg);
	assert_null(q);
	assert_int_equal(rep.n_lost, 0);
	assert_null(rep.lost);
	cycle(old, 2000);
	q = rebuild(old, p2, NULL, &rep);
	assert_int_equal(rep.n_lost, 1);
	assert_int_equal(lost_find(&rep, "x1")->state, QUEUE_WL_FINISHED);
	assert_int_equal(lost_find(&rep, "x1")->reason, ENGINE_LOST_CLUSTERQUEUE);
	assert_int_equal(rep.cqs_dropped, 1);
	assert_int_equal(state_of(q, "t1"), QUEUE_WL_ADMITTED);
	engine_rebuild_report_deinit(&rep);
	queue_destroy(q);

	/* the new configuration holds fewer workloads than old has */
	{
		queue_config_t cfg;
		queue_t *none = NULL;
		queue_config_default(&cfg);
		cfg.workloads_max = 1;
		add_wl(old, "t", "t2", 4, 0, 0, 3000);
		d.msg[0] = '\0';
		assert_int_equal(engine_core_rebuild(old, p, &cfg, &none, &rep, &d), GPUQ_ELIMIT);
		print_message("# %s\n", d.msg);
		assert_null(none);
		assert_int_equal(rep.n_lost + rep.workloads, 0);
		assert_non_null(strstr(d.msg, "workload record \"t2\""));
	}
	queue_destroy(old);
	policy_unref(p);
	policy_unref(p2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(build_translates_policy),
	    cmocka_unit_test(max_fit_one_rule),
	    cmocka_unit_test(max_fit_one_rule_tree),
	    cmocka_unit_test(build_translates_fungibility),
	    cmocka_unit_test(build_translates_admission_scope),
	    cmocka_unit_test(record_check_structure),
	    cmocka_unit_test_setup_teardown(persist_and_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(persist_full_deletes_stale, setup, teardown),
	    cmocka_unit_test_setup_teardown(persisted_equals_live_every_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(usage_survives_restart, setup, teardown),
	    cmocka_unit_test(rebuild_same_policy_round_trip),
	    cmocka_unit_test(rebuild_round_trip_evicting_and_backoff),
	    cmocka_unit_test(rebuild_quota_raised),
	    cmocka_unit_test(rebuild_lq_removed_pending),
	    cmocka_unit_test(rebuild_lq_moved),
	    cmocka_unit_test_setup_teardown(rebuild_cq_removed_admitted, setup, teardown),
	    cmocka_unit_test(rebuild_flavor_removed),
	    cmocka_unit_test(rebuild_keeps_usage_and_ledger),
	    cmocka_unit_test(rebuild_refusals),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}

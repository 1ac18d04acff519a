/* Unit tests for engine: the policy -> core translation, the core's records
 * in a store (types, structural check, stage, persist, full snapshots,
 * restore). Rebuilding a core after a policy change: test_engine_rebuild.c. */
#include "unit/engine_fixtures.h"

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
	const unsigned char v1[] = {1, 9, 9}, v0[] = {0, 1}, v2[] = {2},
			    /* the workload version this build writes, and the next */
	    vw[] = {QUEUE_RECORD_VERSION_WORKLOAD}, vn[] = {QUEUE_RECORD_VERSION_WORKLOAD + 1};
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
	    {QUEUE_REC_WORKLOAD, "uid-2", 5, v2, 1, GPUQ_OK},		      /* a workload's 2 */
	    {QUEUE_REC_WORKLOAD, "uid-3", 5, vw, 1, GPUQ_OK},		      /* ... 3, written */
	    {QUEUE_REC_WORKLOAD, "uid-4", 5, vn, 1, GPUQ_ECORRUPT},	      /* ... not 4 */
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
/* What engine_step's hooks saw, in order: 'T' / 'C' a tick's or a
 * cycle's result booked, 't' / 'c' acted on. */
typedef struct {
	engine_t *e;
	char seen[32];		/* the hooks, in call order */
	size_t n;		/* entries in seen */
	int stage_rc;		/* what the stage hook returns */
	bool acted_uncommitted; /* an act found the step's records not yet committed */
	char admitted[4][16];	/* the acted cycles' admissions, by uid */
	size_t n_admitted;	/* entries */
} steplog_t;

static int log_book(void *ctx, engine_phase_t phase, const queue_result_t *res, gpuq_diag_t *d)
{
	steplog_t *l = ctx;

	(void)res;
	(void)d;
	if (l->n < sizeof(l->seen) - 1)
		l->seen[l->n++] = phase == ENGINE_STEP_TICK ? 'T' : 'C';
	return GPUQ_OK;
}

static int log_stage(void *ctx, engine_batch_t *b)
{
	(void)b;
	return ((steplog_t *)ctx)->stage_rc;
}

static void log_act(void *ctx, engine_phase_t phase, const queue_result_t *res)
{
	steplog_t *l = ctx;

	if (l->n < sizeof(l->seen) - 1)
		l->seen[l->n++] = phase == ENGINE_STEP_TICK ? 't' : 'c';
	if (engine_commit_due(l->e))
		l->acted_uncommitted = true;
	for (size_t i = 0; i < res->n_admissions && l->n_admitted < 4; i++) {
		assert_true(res->admissions[i].n_assign > 0); /* the kept copy's */
		assert_true(res->admissions[i].assign[0].amount > 0);
		snprintf(l->admitted[l->n_admitted++], 16, "%s", res->admissions[i].uid);
	}
	for (size_t i = 0; i < res->n_evictions; i++)
		assert_non_null(strstr(res->evictions[i].message, "Preempted"));
}

/* engine_step: the tick and the cycles its cap allows are booked as they
 * come, then ONE commit, and only once it succeeded the results are acted
 * on (a failed commit acts on nothing); a preemption's second cycle runs
 * only under a cap of 2; with no cycle due and no eviction, only the tick. */
static void step_books_commits_then_acts(void **state)
{
	fixture_t *f = *state;
	policy_t *p = policy_of(BASE);
	steplog_t l = {0};
	engine_step_opts_t so = {.cycles = 1,
				 .cycle_due = true,
				 .book = log_book,
				 .stage = log_stage,
				 .act = log_act,
				 .ctx = &l};
	engine_step_report_t rep;
	engine_opts_t o;
	gpuq_diag_t d = {{0}};

	engine_opts_init(&o);
	o.state_dir = f->dir;
	o.nosync = true;
	o.driver_types[0] = "test";
	assert_int_equal(engine_open(p, NULL, &o, &l.e, &d), GPUQ_OK);
	add_wl((queue_t *)engine_core(l.e), "team-a", "low1", 4, 0, 0, 1000);
	add_wl((queue_t *)engine_core(l.e), "team-a", "low2", 4, 0, 0, 1000);
	add_wl((queue_t *)engine_core(l.e), "team-c", "low3", 4, 0, 0, 1000); /* the cohort full */

	/* the commit fails: booked, not acted on, the changes kept */
	l.stage_rc = GPUQ_EIO;
	assert_int_equal(engine_step(l.e, 2000, &so, &rep, &d), GPUQ_EIO);
	assert_true(rep.commit_tried);
	assert_int_equal(rep.commit_rc, GPUQ_EIO);
	assert_string_equal(l.seen, "TC");
	assert_true(engine_commit_due(l.e));

	/* committed: booked, committed, then acted, in order */
	l.stage_rc = GPUQ_OK;
	l.n = 0;
	memset(l.seen, 0, sizeof(l.seen));
	add_wl((queue_t *)engine_core(l.e), "team-a", "high", 4, 100, 0, 3000);
	assert_int_equal(engine_step(l.e, 3000, &so, &rep, &d), GPUQ_OK);
	assert_string_equal(l.seen, "TCtc");
	assert_false(l.acted_uncommitted);
	assert_int_equal(rep.cycles, 1);
	assert_true(rep.evicted); /* high preempted one: its admission needs a cycle more */
	assert_int_equal(l.n_admitted, 0);

	/* a cap of 2: the preemptor is admitted in the step's second cycle */
	so.cycles = 2;
	l.n = 0;
	memset(l.seen, 0, sizeof(l.seen));
	assert_int_equal(engine_step(l.e, 3000, &so, &rep, &d), GPUQ_OK);
	assert_int_equal(rep.cycles, 1); /* the eviction was the last step's */
	assert_string_equal(l.seen, "TCtc");
	assert_int_equal(l.n_admitted, 1);
	assert_string_equal(l.admitted[0], "high");

	/* nothing due, nothing evicted by the tick: the tick alone */
	so.cycle_due = false;
	l.n = 0;
	memset(l.seen, 0, sizeof(l.seen));
	assert_int_equal(engine_step(l.e, 4000, &so, &rep, &d), GPUQ_OK);
	assert_int_equal(rep.cycles, 0);
	assert_string_equal(l.seen, "Tt");
	engine_close(l.e);
	policy_unref(p);
}

/* An engine opened before its policy (the controller's): the first
 * engine_policy_set builds the core and restores the store, a change of
 * quotas is taken in place, a new LocalQueue rebuilds (and the next commit
 * rewrites the store), a store that no longer fits the policy gives a
 * fresh core, and engine_core_reset empties the core. */
static void policy_set_in_place_or_rebuilt(void **state)
{
	fixture_t *f = *state;
	policy_t *p1 = policy_of(BASE);
	policy_t *p2 =
	    policy_of(BASE_OBJECTS CQ("cq-a", "pool", FQ("a100", "64", "8") FQ("h100", "64", "4"))
			  BASE_CQB LQ("team-a", "cq-a") LQ("team-b", "cq-a") LQ("team-c", "cq-b"));
	policy_t *p3 = policy_of(BASE LQ("team-d", "cq-b"));
	policy_t *p4 = policy_of(BASE_OBJECTS BASE_CQA LQ("team-a", "cq-a") LQ("team-b", "cq-a"));
	engine_policy_report_t rep;
	engine_opts_t o;
	engine_t *e = NULL;
	const queue_t *core;
	gpuq_diag_t d = {{0}};
	queue_wl_t id;

	engine_opts_init(&o);
	o.state_dir = f->dir;
	o.nosync = true;
	assert_int_equal(engine_open(NULL, NULL, &o, &e, &d), GPUQ_OK);
	assert_null(engine_core(e));
	assert_null(engine_policy(e));
	assert_false(engine_commit_due(e));

	assert_int_equal(engine_policy_set(e, p1, 1000, &rep, &d), GPUQ_OK);
	assert_int_equal(rep.how, ENGINE_POLICY_BUILT);
	assert_ptr_equal(engine_policy(e), p1);
	assert_false(engine_resumed(e));
	add_wl((queue_t *)engine_core(e), "team-a", "a1", 2, 0, 0, 1000);
	add_wl((queue_t *)engine_core(e), "team-c", "c1", 2, 0, 0, 1000);
	assert_true(engine_commit_due(e));
	/* a step commits what it decided, with what came before it */
	assert_int_equal(
	    engine_step(e, 2000, &(engine_step_opts_t){.cycles = 1, .cycle_due = true}, NULL, &d),
	    GPUQ_OK);
	assert_false(engine_commit_due(e));

	/* a quota: in place, the same core, only cq-a changed */
	core = engine_core(e);
	assert_int_equal(engine_policy_set(e, p2, 3000, &rep, &d), GPUQ_OK);
	assert_int_equal(rep.how, ENGINE_POLICY_IN_PLACE);
	assert_int_equal(rep.cqs_updated, 1);
	assert_ptr_equal(engine_core(e), core);
	assert_ptr_equal(engine_policy(e), p2);
	assert_false(engine_commit_full_due(e));
	assert_int_equal(engine_commit(e, NULL, NULL, &d), GPUQ_OK);

	/* a LocalQueue more: rebuilt, saying why, every workload carried */
	assert_int_equal(engine_policy_set(e, p3, 4000, &rep, &d), GPUQ_OK);
	assert_int_equal(rep.how, ENGINE_POLICY_REBUILT);
	print_message("# rebuilt: %s\n", rep.why);
	assert_true(rep.why[0] != '\0');
	assert_false(rep.refused);
	assert_int_equal(rep.rebuild.workloads, 2);
	assert_int_equal(rep.rebuild.n_lost, 0);
	assert_ptr_not_equal(engine_core(e), core);
	assert_true(engine_commit_full_due(e));
	engine_policy_report_deinit(&rep);
	assert_int_equal(engine_commit(e, NULL, NULL, &d), GPUQ_OK);
	assert_false(engine_commit_due(e));
	engine_close(e);

	/* reopened: the first policy restores what was committed */
	assert_int_equal(engine_open(NULL, NULL, &o, &e, &d), GPUQ_OK);
	assert_int_equal(engine_policy_set(e, p3, 5000, &rep, &d), GPUQ_OK);
	assert_int_equal(rep.how, ENGINE_POLICY_BUILT);
	assert_true(engine_resumed(e));
	assert_int_equal(queue_workload_find(engine_core(e), "a1", &id), GPUQ_OK);
	assert_int_equal(queue_workload_find(engine_core(e), "c1", &id), GPUQ_OK);
	/* the stale-store reset: the policy's core, empty, rewritten next */
	assert_int_equal(engine_core_reset(e, &d), GPUQ_OK);
	assert_int_equal(queue_workload_find(engine_core(e), "a1", &id), GPUQ_ENOTFOUND);
	assert_true(engine_commit_full_due(e));
	engine_close(e);

	/* a policy the store does not fit (cq-b and team-c are gone): fresh */
	assert_int_equal(engine_open(NULL, NULL, &o, &e, &d), GPUQ_OK);
	assert_int_equal(engine_policy_set(e, p4, 6000, &rep, &d), GPUQ_OK);
	assert_int_equal(rep.how, ENGINE_POLICY_FRESH);
	print_message("# fresh: %s\n", rep.why);
	assert_true(rep.why[0] != '\0');
	assert_false(engine_resumed(e));
	assert_int_equal(queue_workload_find(engine_core(e), "a1", &id), GPUQ_ENOTFOUND);
	assert_true(engine_commit_full_due(e));
	assert_int_equal(engine_commit(e, NULL, NULL, &d), GPUQ_OK);
	engine_close(e);
	policy_unref(p1);
	policy_unref(p2);
	policy_unref(p3);
	policy_unref(p4);
}

/* engine_change_apply, the one call by which a driver changes the core:
 * refused without a core (before the first policy), the refusal naming
 * the change and its workload; applied under the core's rules once there
 * is one, its refusals named the same way, and what it changed due for
 * the next commit. */
static void changes_refused_without_core_and_named(void **state)
{
	policy_t *p = policy_of(BASE);
	engine_policy_report_t rep;
	engine_t *e = NULL;
	gpuq_diag_t d = {{0}};
	queue_wl_t id;

	(void)state;
	assert_int_equal(engine_open(NULL, NULL, NULL, &e, &d), GPUQ_OK);
	assert_int_equal(
	    engine_change_apply(
		e, &(engine_change_t){.kind = ENGINE_CHANGE_DELETE, .uid = "a1", .now = 1000}, &d),
	    GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "delete of workload \"a1\": no policy in force yet"));

	assert_int_equal(engine_policy_set(e, p, 1000, &rep, &d), GPUQ_OK);
	engine_policy_report_deinit(&rep);
	add_wl((queue_t *)engine_core(e), "team-a", "a1", 2, 0, 0, 1000);
	d.msg[0] = '\0';
	assert_int_equal(
	    engine_change_apply(
		e, &(engine_change_t){.kind = ENGINE_CHANGE_FINISH, .uid = "nobody", .now = 2000},
		&d),
	    GPUQ_ENOTFOUND);
	assert_non_null(strstr(d.msg, "finish of workload \"nobody\": "));
	assert_int_equal(engine_change_apply(
			     e, &(engine_change_t){.kind = ENGINE_CHANGE_COUNT, .uid = "a1"}, &d),
			 GPUQ_EINVAL);
	assert_int_equal(
	    engine_change_apply(
		e, &(engine_change_t){.kind = ENGINE_CHANGE_DELETE, .uid = "a1", .now = 2000}, &d),
	    GPUQ_OK);
	assert_int_equal(queue_workload_find(engine_core(e), "a1", &id), GPUQ_ENOTFOUND);
	engine_close(e);
	policy_unref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(build_translates_policy),
	    cmocka_unit_test(changes_refused_without_core_and_named),
	    cmocka_unit_test(max_fit_one_rule),
	    cmocka_unit_test(max_fit_one_rule_tree),
	    cmocka_unit_test(build_translates_fungibility),
	    cmocka_unit_test(build_translates_admission_scope),
	    cmocka_unit_test(record_check_structure),
	    cmocka_unit_test_setup_teardown(persist_and_restore, setup, teardown),
	    cmocka_unit_test_setup_teardown(persist_full_deletes_stale, setup, teardown),
	    cmocka_unit_test_setup_teardown(persisted_equals_live_every_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(usage_survives_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(policy_set_in_place_or_rebuilt, setup, teardown),
	    cmocka_unit_test_setup_teardown(step_books_commits_then_acts, setup, teardown),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}

/* unit/test_queue_topology.c: topology-aware admission in the queueing core
 * (issue 33): a workload on a flavor with a Topology is admitted only when
 * its quota fits and its pods fit the flavor's nodes as each pod set asks;
 * its placement is held until its quota is freed; a workload whose quota
 * fits but no domain does waits saying so. The property test runs random
 * streams over a 2 blocks x 4 racks x 4 nodes x 8 GPUs cluster and checks,
 * after every cycle: no node holds more than it has, every REQUIRED
 * workload's pods lie in one domain of its level, every pod of every
 * admitted workload is placed once. */
#include "unit/queue_fixtures.h"

#include <inttypes.h>

#define BLOCK "topology.gpuq.dev/block"
#define RACK "topology.gpuq.dev/rack"
#define HOST "kubernetes.io/hostname"

/* A queue with Topology "racks" (block, rack, host), flavor "h100" on it,
 * ClusterQueue "cq" with `quota` GPUs, LocalQueue ns/lq, and blocks x racks
 * x nodes nodes of `gpus` GPUs each, named b<i>-r<j>-n<k>. */
static queue_t *mktopo_in(int blocks, int racks, int nodes, int64_t gpus, int64_t quota,
			  queue_within_t within)
{
	const char *const levels[] = {BLOCK, RACK, HOST};
	queue_topology_spec_t tp = {"racks", levels, 3};
	queue_flavor_spec_t f = {.name = "h100", .topology = "racks"};
	cqdef_t d = {.within = within, .flavors = {{"h100", quota, U, U}}};
	queue_t *q = mkq(false);
	gpuq_diag_t diag = {{0}};

	assert_int_equal(queue_topology_add(q, &tp, &diag), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q, &f, NULL, &diag), GPUQ_OK);
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	for (int b = 0; b < blocks; b++)
		for (int r = 0; r < racks; r++)
			for (int n = 0; n < nodes; n++) {
				char name[48], bv[16], rv[16];
				queue_label_t l[3] = {{BLOCK, bv}, {RACK, rv}, {HOST, name}};
				queue_request_t a[2] = {{"gpu", gpus}, {"pods", 110}};
				queue_node_spec_t ns = {.name = name,
							.labels = l,
							.n_labels = 3,
							.allocatable = a,
							.n_allocatable = 2};

				snprintf(name, sizeof(name), "b%d-r%d-n%d", b, r, n);
				snprintf(bv, sizeof(bv), "b%d", b);
				snprintf(rv, sizeof(rv), "r%d", r);
				if (queue_node_set(q, &ns, &diag))
					fail_msg("node_set %s: %s", name, diag.msg);
			}
	return q;
}

static queue_t *mktopo(int blocks, int racks, int nodes, int64_t gpus, int64_t quota)
{
	return mktopo_in(blocks, racks, nodes, gpus, quota, QUEUE_WITHIN_NEVER);
}

/* Add workload uid: `count` pods of `per` GPUs, kept together as mode says
 * at `level`. */
static int add_topo(queue_t *q, const char *uid, int32_t prio, int64_t at, int32_t count,
		    int64_t per, queue_topo_mode_t mode, const char *level)
{
	queue_request_t r = {"gpu", per};
	queue_podset_spec_t ps = {.name = "main",
				  .count = count,
				  .requests = &r,
				  .n_requests = 1,
				  .topology = mode,
				  .topology_level = level};
	queue_workload_spec_t s = {.namespace_ = "ns",
				   .name = uid,
				   .uid = uid,
				   .local_queue = "lq",
				   .priority = prio,
				   .created_ms = at,
				   .podsets = &ps,
				   .n_podsets = 1};

	return queue_workload_add(q, &s, at, NULL, NULL);
}

/* The placement of uid: entries into pl (cap 256), their number. */
static size_t placement(queue_t *q, const char *uid, queue_place_t *pl)
{
	queue_wl_t id;
	size_t n = 0;

	assert_int_equal(queue_workload_find(q, uid, &id), GPUQ_OK);
	queue_workload_placement(q, id, pl, 256, &n);
	assert_true(n <= 256);
	return n;
}

/* The domain of node name (b<i>-r<j>-n<k>) at level: its name's prefix
 * (a rack's value repeats across blocks; its domain is block and rack). */
static void domain_key(const char *node, const char *level, char *out, size_t cap)
{
	snprintf(out, cap, "%s", node);
	if (!strcmp(level, HOST))
		return;
	*strrchr(out, '-') = 0;
	if (!strcmp(level, BLOCK))
		*strrchr(out, '-') = 0;
}

/* How many distinct domains at `level` uid's pods are on; *pods its pods. */
static size_t domains_of(queue_t *q, const char *uid, const char *level, int32_t *pods)
{
	queue_place_t pl[256];
	size_t n = placement(q, uid, pl), k = 0;
	char seen[256][32];
	uint32_t fid;

	assert_int_equal(queue_flavor_find(q, "h100", &fid), GPUQ_OK);
	*pods = 0;
	for (size_t i = 0; i < n; i++) {
		char key[32];
		size_t j = 0;

		assert_non_null(queue_node_domain(q, fid, pl[i].node, level));
		domain_key(pl[i].node, level, key, sizeof(key));
		while (j < k && strcmp(seen[j], key))
			j++;
		if (j == k)
			snprintf(seen[k++], sizeof(seen[0]), "%s", key);
		*pods += pl[i].count;
	}
	return k;
}

/* Node b<b>-r<r>-n<n> (8 GPUs) set cordoned or not, Ready or not (since
 * `since`). */
static void node_state(queue_t *q, int b, int r, int n, bool unschedulable, bool not_ready,
		       int64_t since)
{
	char name[48], bv[16], rv[16];
	queue_label_t l[3] = {{BLOCK, bv}, {RACK, rv}, {HOST, name}};
	queue_request_t a[1] = {{"gpu", 8}};
	queue_node_spec_t ns = {.name = name,
				.labels = l,
				.n_labels = 3,
				.allocatable = a,
				.n_allocatable = 1,
				.unschedulable = unschedulable,
				.not_ready = not_ready,
				.not_ready_since = since};

	snprintf(name, sizeof(name), "b%d-r%d-n%d", b, r, n);
	snprintf(bv, sizeof(bv), "b%d", b);
	snprintf(rv, sizeof(rv), "r%d", r);
	assert_int_equal(queue_node_set(q, &ns, NULL), GPUQ_OK);
}

/* Node b<b>-r<r>-n<n> (8 GPUs) cordoned or uncordoned. */
static void cordon(queue_t *q, int b, int r, int n, bool unschedulable)
{
	node_state(q, b, r, n, unschedulable, false, 0);
}

static void reason(queue_t *q, const char *uid, char *buf, size_t cap)
{
	queue_wl_t id;

	assert_int_equal(queue_workload_find(q, uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_reason(q, id, buf, cap), GPUQ_OK);
}

/* Two racks of 2 nodes x 8 GPUs, quota 64: the quota fits three 16-GPU
 * jobs, the racks two. The third waits naming the rack; the first's end
 * lets it in, onto the rack it freed. */
static void required_rack_waits_then_runs(void **state)
{
	queue_t *q = mktopo(1, 2, 2, 8, 64);
	queue_result_t r;
	char why[512];
	int32_t pods;

	(void)state;
	assert_int_equal(add_topo(q, "a", 0, 1, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	assert_int_equal(add_topo(q, "b", 0, 2, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	assert_int_equal(add_topo(q, "c", 0, 3, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 10, &r);
	assert_true(admitted_in(&r, "a") && admitted_in(&r, "b"));
	assert_false(admitted_in(&r, "c"));
	assert_int_equal(state_of(q, "c"), QUEUE_WL_PENDING);
	assert_int_equal(domains_of(q, "a", RACK, &pods), 1);
	assert_int_equal(pods, 2);
	assert_int_equal(domains_of(q, "b", RACK, &pods), 1);
	reason(q, "c", why, sizeof(why));
	assert_non_null(strstr(why, "needs 16 gpu in one rack (" RACK "): the best rack has 0 "
				    "free"));
	assert_int_equal(queue_workload_finish(q, "a", 20), GPUQ_OK);
	cycle(q, 21, &r);
	assert_true(admitted_in(&r, "c"));
	assert_int_equal(domains_of(q, "c", RACK, &pods), 1);
	assert_int_equal(pods, 2);
	queue_destroy(q);
}

/* A job of `pods` 8-GPU pods REQUIRED in one rack and the same PREFERRED:
 * the first waits saying `want`, the second runs on `racks` racks. */
static void req_waits_pref_runs(queue_t *q, int32_t pods, const char *want, size_t racks)
{
	queue_result_t r;
	char why[512];
	int32_t placed;

	assert_int_equal(add_topo(q, "req", 0, 1, pods, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	assert_int_equal(add_topo(q, "pref", 0, 2, pods, 8, QUEUE_TOPO_PREFERRED, RACK), GPUQ_OK);
	cycle(q, 3, &r);
	assert_false(admitted_in(&r, "req"));
	reason(q, "req", why, sizeof(why));
	if (!strstr(why, want))
		fail_msg("req: %s, want %s", why, want);
	assert_true(admitted_in(&r, "pref"));
	assert_int_equal(domains_of(q, "pref", RACK, &placed), racks);
	assert_int_equal(placed, pods);
}

/* Quota is not the topology: with a node of each of two racks cordoned,
 * 8 GPUs are free in each rack. A 16-GPU job REQUIRED in one rack waits
 * and says the best rack has 8 free; PREFERRED, it runs across the two. */
static void preferred_spans_required_waits(void **state)
{
	queue_t *q = mktopo(1, 2, 2, 8, 64);
	queue_result_t r;
	char why[512];
	int32_t pods;

	(void)state;
	cordon(q, 0, 0, 1, true);
	cordon(q, 0, 1, 1, true);
	req_waits_pref_runs(q, 2, "needs 16 gpu in one rack (" RACK "): the best rack has 8 free",
			    2);
	/* pref took both free nodes; its end leaves 8 free in each rack */
	assert_int_equal(queue_workload_finish(q, "pref", 4), GPUQ_OK);
	cycle(q, 5, &r);
	assert_false(admitted_in(&r, "req"));
	reason(q, "req", why, sizeof(why));
	assert_non_null(
	    strstr(why, "needs 16 gpu in one rack (" RACK "): the best rack has 8 free"));
	/* a rack made whole again lets it in */
	cordon(q, 0, 1, 1, false);
	cycle(q, 6, &r);
	assert_true(admitted_in(&r, "req"));
	assert_int_equal(domains_of(q, "req", RACK, &pods), 1);
	queue_destroy(q);
}

/* Racks with 16, 8 and 8 free: a 24-GPU job REQUIRED in one rack waits;
 * PREFERRED, it takes the fewest racks (two: the 16 and one 8). */
static void preferred_fewest_racks(void **state)
{
	queue_t *q = mktopo(1, 3, 2, 8, 64);

	(void)state;
	cordon(q, 0, 1, 1, true);
	cordon(q, 0, 2, 1, true);
	req_waits_pref_runs(q, 3, "needs 24 gpu in one rack (" RACK "): the best rack has 16 free",
			    2);
	queue_destroy(q);
}

/* A cordoned node takes nothing new; its running placement stays held. */
static void cordoned_node_takes_nothing(void **state)
{
	queue_t *q = mktopo(1, 1, 2, 8, 64);
	const char *const cordon = "b0-r0-n0";
	queue_label_t l[3] = {{BLOCK, "b0"}, {RACK, "r0"}, {HOST, cordon}};
	queue_request_t a[1] = {{"gpu", 8}};
	queue_node_spec_t ns = {.name = cordon,
				.labels = l,
				.n_labels = 3,
				.allocatable = a,
				.n_allocatable = 1,
				.unschedulable = true};
	queue_result_t r;

	(void)state;
	assert_int_equal(queue_node_set(q, &ns, NULL), GPUQ_OK);
	assert_int_equal(add_topo(q, "a", 0, 1, 2, 8, QUEUE_TOPO_UNCONSTRAINED, NULL), GPUQ_OK);
	assert_int_equal(add_topo(q, "b", 0, 2, 1, 8, QUEUE_TOPO_NONE, NULL), GPUQ_OK);
	cycle(q, 5, &r);
	assert_false(admitted_in(&r, "a"));
	assert_true(admitted_in(&r, "b"));
	ns.unschedulable = false;
	assert_int_equal(queue_node_set(q, &ns, NULL), GPUQ_OK);
	cycle(q, 6, &r);
	assert_false(admitted_in(&r, "a")); /* b holds one node */
	assert_int_equal(queue_workload_finish(q, "b", 7), GPUQ_OK);
	cycle(q, 8, &r);
	assert_true(admitted_in(&r, "a"));
	queue_destroy(q);
}

/* A level the Topology lacks: the workload never fits, and says which. */
static void unknown_level_said(void **state)
{
	queue_t *q = mktopo(1, 1, 1, 8, 64);
	queue_result_t r;
	char why[512];

	(void)state;
	assert_int_equal(add_topo(q, "x", 0, 1, 1, 8, QUEUE_TOPO_REQUIRED, "example.com/zone"),
			 GPUQ_OK);
	cycle(q, 2, &r);
	assert_false(admitted_in(&r, "x"));
	reason(q, "x", why, sizeof(why));
	assert_non_null(strstr(why, "asks for topology level example.com/zone, which Topology "
				    "racks of flavor h100 does not have"));
	queue_destroy(q);
}

/* The reason names what binds: a node with GPUs for two pods but memory
 * for one holds one of a pod set asking for both, and the reason names
 * memory, not the GPUs. */
static void reason_names_what_binds(void **state)
{
	const char *const levels[] = {RACK, HOST};
	const char *const cov[] = {"gpu", "memory"};
	queue_topology_spec_t tp = {"racks", levels, 2};
	queue_flavor_spec_t f = {.name = "h100", .topology = "racks"};
	queue_label_t l[2] = {{RACK, "r0"}, {HOST, "n0"}};
	queue_request_t a[2] = {{"gpu", 16}, {"memory", 1024}},
			r2[2] = {{"gpu", 8}, {"memory", 1024}};
	queue_node_spec_t n = {
	    .name = "n0", .labels = l, .n_labels = 2, .allocatable = a, .n_allocatable = 2};
	queue_quota_spec_t qs[2] = {{64, U, U}, {1 << 20, U, U}};
	queue_flavor_quota_spec_t fq = {"h100", qs};
	queue_group_spec_t g = {cov, 2, &fq, 1};
	queue_cq_spec_t cq = {.name = "cq", .groups = &g, .n_groups = 1};
	queue_podset_spec_t ps = {.name = "main",
				  .count = 2,
				  .requests = r2,
				  .n_requests = 2,
				  .topology = QUEUE_TOPO_REQUIRED,
				  .topology_level = RACK};
	queue_workload_spec_t s = {.namespace_ = "ns",
				   .name = "m",
				   .uid = "m",
				   .local_queue = "lq",
				   .created_ms = 1,
				   .podsets = &ps,
				   .n_podsets = 1};
	queue_t *q = mkq(false);
	queue_result_t r;
	char why[512];

	(void)state;
	assert_int_equal(queue_topology_add(q, &tp, NULL), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_cq_add(q, &cq, NULL, NULL), GPUQ_OK);
	add_lq(q, "ns", "lq", "cq");
	assert_int_equal(queue_node_set(q, &n, NULL), GPUQ_OK);
	assert_int_equal(queue_workload_add(q, &s, 1, NULL, NULL), GPUQ_OK);
	cycle(q, 2, &r);
	assert_false(admitted_in(&r, "m"));
	reason(q, "m", why, sizeof(why));
	if (!strstr(why, " memory in one rack (" RACK "): the best rack has "))
		fail_msg("%s", why);
	queue_destroy(q);
}

/* A flavor naming a Topology never added is refused, naming both. */
static void flavor_names_missing_topology(void **state)
{
	queue_t *q = mkq(false);
	queue_flavor_spec_t f = {.name = "h100", .topology = "nope"};
	gpuq_diag_t diag = {{0}};

	(void)state;
	assert_int_equal(queue_flavor_add(q, &f, NULL, &diag), GPUQ_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "spec.topologyName \"nope\": no such Topology"));
	queue_destroy(q);
}

/* Every record of q applied to p (same policy and nodes); restore done. */
static void restore_into(queue_t *q, queue_t *p)
{
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen;
	gpuq_diag_t diag = {{0}};

	assert_int_equal(queue_dirty_all(q), GPUQ_OK);
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		uint8_t buf[8192];
		size_t len = 0;

		assert_int_equal(queue_record_encode(q, type, key, klen, buf, sizeof(buf), &len),
				 GPUQ_OK);
		if (queue_record_apply(p, type, key, klen, buf, len, &diag))
			fail_msg("apply %.*s: %s", (int)klen, key, diag.msg);
	}
	assert_int_equal(queue_restore_done(p, &diag), GPUQ_OK);
}

/* Rack jobs a and b admitted in q, c queued behind them; q's records
 * restored into p. */
static void racks_taken_then_restored(queue_t *q, queue_t *p)
{
	queue_result_t r;

	assert_int_equal(add_topo(q, "a", 0, 1, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	assert_int_equal(add_topo(q, "b", 0, 2, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 10, &r);
	assert_int_equal(add_topo(q, "c", 0, 11, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	restore_into(q, p);
}

/* A restart keeps the placement and the asks: the restored core holds the
 * racks the running jobs hold, so the third waits as before, and its ask
 * (required, rack) is what it was. */
static void placement_survives_restore(void **state)
{
	queue_t *q = mktopo(1, 2, 2, 8, 64), *p = mktopo(1, 2, 2, 8, 64);
	queue_place_t a[256], b[256];
	queue_result_t r;
	char why[512];
	size_t na, nb;

	(void)state;
	racks_taken_then_restored(q, p);
	na = placement(q, "a", a);
	nb = placement(p, "a", b);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(a[i].node, b[i].node);
		assert_int_equal(a[i].count, b[i].count);
	}
	cycle(p, 12, &r);
	assert_false(admitted_in(&r, "c"));
	reason(p, "c", why, sizeof(why));
	assert_non_null(strstr(why, "in one rack (" RACK "): the best rack has 0 free"));
	assert_int_equal(queue_workload_finish(p, "b", 13), GPUQ_OK);
	cycle(p, 14, &r);
	assert_true(admitted_in(&r, "c"));
	queue_destroy(q);
	queue_destroy(p);
}

/* After a restart the nodes come after the records (the daemon lists them
 * again): a placement restored onto nodes not yet known is held once they
 * are, and its end gives back what it took. */
static void placement_restored_before_its_nodes(void **state)
{
	queue_t *q = mktopo(1, 2, 2, 8, 64), *p = mktopo(1, 2, 0, 8, 64);
	queue_result_t r;
	char why[512];

	(void)state;
	racks_taken_then_restored(q, p);
	for (int rk = 0; rk < 2; rk++)
		for (int n = 0; n < 2; n++)
			cordon(p, 0, rk, n, false);
	cycle(p, 12, &r);
	assert_false(admitted_in(&r, "c"));
	reason(p, "c", why, sizeof(why));
	assert_non_null(strstr(why, "the best rack has 0 free"));
	assert_int_equal(queue_workload_finish(p, "a", 13), GPUQ_OK);
	cycle(p, 14, &r);
	assert_true(admitted_in(&r, "c"));
	assert_int_equal(queue_workload_finish(p, "b", 15), GPUQ_OK);
	assert_int_equal(queue_workload_finish(p, "c", 16), GPUQ_OK);
	queue_destroy(q);
	queue_destroy(p);
}

static bool evicted_in(const queue_result_t *r, const char *uid)
{
	for (size_t i = 0; i < r->n_evictions; i++)
		if (!strcmp(r->evictions[i].victim_uid, uid))
			return true;
	return false;
}

/* Three low-priority 8-GPU jobs, a node each (best fit: two in one rack,
 * one in the other), admitted. */
static void three_nodes_taken(queue_t *q)
{
	queue_result_t r;

	assert_int_equal(add_topo(q, "lo1", 0, 1, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	assert_int_equal(add_topo(q, "lo2", 0, 2, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	assert_int_equal(add_topo(q, "lo3", 0, 3, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 5, &r);
	assert_true(admitted_in(&r, "lo1") && admitted_in(&r, "lo2") && admitted_in(&r, "lo3"));
}

/* A high-priority rack job, its quota free but no rack whole: it preempts
 * in the rack that its lower-priority peers free with the fewest victims
 * (r1: one job; r0 would take two), and runs there. */
static void preempts_within_one_rack(void **state)
{
	queue_t *q = mktopo_in(1, 2, 2, 8, 64, QUEUE_WITHIN_LOWER_PRIORITY);
	queue_result_t r;
	int32_t pods;

	(void)state;
	three_nodes_taken(q);
	assert_int_equal(add_topo(q, "hi", 10, 6, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 7, &r);
	assert_int_equal(r.n_evictions, 1);
	assert_false(admitted_in(&r, "hi"));
	/* best fit packed lo1 and lo2 into one rack: the other holds lo3 */
	assert_true(evicted_in(&r, "lo3"));
	cycle(q, 8, &r);
	assert_true(admitted_in(&r, "hi"));
	assert_int_equal(domains_of(q, "hi", RACK, &pods), 1);
	assert_int_equal(state_of(q, "lo1"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "lo2"), QUEUE_WL_ADMITTED);
	queue_destroy(q);
}

/* Without withinClusterQueue preemption it waits, saying why. */
static void no_preemption_waits(void **state)
{
	queue_t *q = mktopo(1, 2, 2, 8, 64);
	queue_result_t r;

	(void)state;
	three_nodes_taken(q);
	assert_int_equal(add_topo(q, "hi", 10, 6, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 7, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(state_of(q, "hi"), QUEUE_WL_PENDING);
	queue_destroy(q);
}

/* Topology "racks" over 1 block x 2 racks x 2 nodes of 8 GPUs (32), and
 * ClusterQueues "a" (nominal a_quota, LocalQueue ns/lqa), "b" (b_quota,
 * ns/lqb) and an idle "c" (32) in cohort "co", a reclaiming from the
 * cohort as `reclaim` says. */
static queue_t *mkcohort(int64_t a_quota, int64_t b_quota, queue_reclaim_t reclaim)
{
	queue_t *q = mktopo_in(1, 2, 2, 8, 0, QUEUE_WITHIN_NEVER);
	cqdef_t a = {.cohort = "co", .reclaim = reclaim, .flavors = {{"h100", a_quota, U, U}}};
	cqdef_t b = {.cohort = "co", .flavors = {{"h100", b_quota, U, U}}};
	/* idle, lending its 32: a may borrow while its quota fits */
	cqdef_t c = {.cohort = "co", .flavors = {{"h100", 32, U, U}}};

	add_cq(q, "a", &a);
	add_cq(q, "b", &b);
	add_cq(q, "c", &c);
	add_lq(q, "ns", "lqa", "a");
	add_lq(q, "ns", "lqb", "b");
	return q;
}

/* Four one-node jobs of b (8 GPUs each: every node full). */
static void b_fills_nodes(queue_t *q)
{
	queue_result_t r;

	for (int i = 0; i < 4; i++) {
		char uid[16];

		snprintf(uid, sizeof(uid), "b%d", i);
		add_wl(q, uid, "ns", "lqb", 0, 1 + i, 8);
	}
	cycle(q, 5, &r);
	assert_int_equal(r.n_admissions, 4);
}

/* a's rack job: two pods of 8 GPUs in one rack, priority prio. */
static void a_rack_job(queue_t *q, int32_t prio)
{
	queue_request_t g = {"gpu", 8};
	queue_podset_spec_t ps = {.name = "main",
				  .count = 2,
				  .requests = &g,
				  .n_requests = 1,
				  .topology = QUEUE_TOPO_REQUIRED,
				  .topology_level = RACK};
	queue_workload_spec_t s = {.namespace_ = "ns",
				   .name = "hi",
				   .uid = "hi",
				   .local_queue = "lqa",
				   .priority = prio,
				   .created_ms = 6,
				   .podsets = &ps,
				   .n_podsets = 1};

	assert_int_equal(queue_workload_add(q, &s, 6, NULL, NULL), GPUQ_OK);
}

/* b borrows a's quota and fills every node; a's rack job, within a's
 * nominal, reclaims one rack: exactly the two b jobs of one rack, as
 * InCohortReclamation, and runs there. */
static void cohort_reclaims_one_rack(void **state)
{
	queue_t *q = mkcohort(32, 16, QUEUE_RECLAIM_ANY);
	queue_result_t r;
	queue_place_t pl[256];
	char rack[4][64];
	int32_t pods;

	(void)state;
	b_fills_nodes(q);
	for (int i = 0; i < 4; i++) { /* each b job's rack, before it is evicted */
		char uid[16];

		snprintf(uid, sizeof(uid), "b%d", i);
		assert_int_equal(placement(q, uid, pl), 1);
		domain_key(pl[0].node, RACK, rack[i], sizeof(rack[i]));
	}
	a_rack_job(q, 0);
	cycle(q, 7, &r);
	assert_int_equal(r.n_evictions, 2);
	for (size_t i = 0; i < 2; i++)
		assert_string_equal(r.evictions[i].reason_name, "InCohortReclamation");
	assert_string_equal(rack[r.evictions[0].victim_uid[1] - '0'],
			    rack[r.evictions[1].victim_uid[1] - '0']);
	cycle(q, 8, &r);
	assert_true(admitted_in(&r, "hi"));
	assert_int_equal(domains_of(q, "hi", RACK, &pods), 1);
	queue_destroy(q);
}

/* Reclaim takes a queue's workloads only while it borrows: b on every
 * node (32) with a nominal of 24 may lose one job, and no rack is freed by
 * one: a's job waits, evicting nothing. A b within its nominal (32) loses
 * none either. (c's idle 32 keeps a's quota fitting.) */
static void cohort_reclaim_stops_at_nominal(void **state)
{
	for (int64_t bq = 24; bq <= 32; bq += 8) {
		queue_t *q = mkcohort(32, bq, QUEUE_RECLAIM_ANY);
		queue_result_t r;

		(void)state;
		b_fills_nodes(q);
		a_rack_job(q, 0);
		cycle(q, 7, &r);
		assert_int_equal(r.n_evictions, 0);
		cycle(q, 8, &r);
		assert_int_equal(state_of(q, "hi"), QUEUE_WL_PENDING);
		queue_destroy(q);
	}
}

/* A preemptor that would borrow reclaims nothing: a with 8 of nominal asks
 * 16 (c's idle quota lets it borrow), b borrows 16 on every node. */
static void borrowing_preemptor_reclaims_nothing(void **state)
{
	queue_t *q = mkcohort(8, 16, QUEUE_RECLAIM_ANY);
	queue_result_t r;

	(void)state;
	b_fills_nodes(q);
	a_rack_job(q, 10);
	cycle(q, 7, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(state_of(q, "hi"), QUEUE_WL_PENDING);
	queue_destroy(q);
}

/* A high-priority rack job whose queue's quota is full too (every node
 * holds a low-priority job, 32 of 32): the victims that free one rack free
 * its quota as well; two evicted, in one rack, and it runs there. (It used
 * to wait: a quota preemption ran only for pods that already fit.) */
static void quota_and_rack_both_free(void **state)
{
	queue_t *q = mktopo_in(1, 2, 2, 8, 32, QUEUE_WITHIN_LOWER_PRIORITY);
	queue_result_t r;
	queue_place_t pl[256];
	char rack[4][64];
	int32_t pods;

	(void)state;
	for (int i = 0; i < 4; i++) {
		char uid[16];

		snprintf(uid, sizeof(uid), "lo%d", i);
		assert_int_equal(add_topo(q, uid, 0, 1 + i, 1, 8, QUEUE_TOPO_REQUIRED, HOST),
				 GPUQ_OK);
	}
	cycle(q, 5, &r);
	assert_int_equal(r.n_admissions, 4);
	for (int i = 0; i < 4; i++) {
		char uid[16];

		snprintf(uid, sizeof(uid), "lo%d", i);
		assert_int_equal(placement(q, uid, pl), 1);
		domain_key(pl[0].node, RACK, rack[i], sizeof(rack[i]));
	}
	assert_int_equal(add_topo(q, "hi", 10, 6, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 7, &r);
	assert_int_equal(r.n_evictions, 2);
	assert_string_equal(rack[r.evictions[0].victim_uid[2] - '0'],
			    rack[r.evictions[1].victim_uid[2] - '0']);
	cycle(q, 8, &r);
	assert_true(admitted_in(&r, "hi"));
	assert_int_equal(domains_of(q, "hi", RACK, &pods), 1);
	queue_destroy(q);
}

/* When a domain's victims do not free enough quota, more go from elsewhere
 * on the flavor: quota 24 full (lo1, lo2 fill rack r0; lo3, of lower
 * priority, half of r1). Freeing r1 takes lo3 and 8 more GPUs of quota
 * (lo1, the first of equals); freeing r0 would take lo1 and lo2, two
 * victims too but of higher priority. Two evicted (lo3, lo1), and hi runs
 * in r1. */
static void rack_victims_plus_quota_victims(void **state)
{
	queue_t *q = mktopo_in(1, 2, 2, 8, 24, QUEUE_WITHIN_LOWER_PRIORITY);
	queue_result_t r;
	queue_place_t pl[256];
	char where[64];

	(void)state;
	assert_int_equal(add_topo(q, "lo1", 0, 1, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	assert_int_equal(add_topo(q, "lo2", 0, 2, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	assert_int_equal(add_topo(q, "lo3", -1, 3, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 5, &r);
	assert_int_equal(r.n_admissions, 3);
	assert_int_equal(placement(q, "lo3", pl), 1);
	domain_key(pl[0].node, RACK, where, sizeof(where));
	assert_int_equal(add_topo(q, "hi", 10, 6, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 7, &r);
	assert_int_equal(r.n_evictions, 2);
	assert_true(evicted_in(&r, "lo3") && evicted_in(&r, "lo1"));
	cycle(q, 8, &r);
	assert_true(admitted_in(&r, "hi"));
	assert_int_equal(placement(q, "hi", pl), 2);
	for (size_t i = 0; i < 2; i++) {
		char d[64];

		domain_key(pl[i].node, RACK, d, sizeof(d));
		assert_string_equal(d, where);
	}
	queue_destroy(q);
}

/* Node b0-r0-n<n> of `gpus` GPUs again, gpuq's bound pods using `own`
 * of them (one pod each 8). */
static void own_set(queue_t *q, int n, int64_t gpus, int64_t own)
{
	char name[48];
	queue_label_t l[3] = {{BLOCK, "b0"}, {RACK, "r0"}, {HOST, name}};
	queue_request_t a[1] = {{"gpu", gpus}}, o[1] = {{"gpu", own}};
	queue_node_spec_t ns = {.name = name,
				.labels = l,
				.n_labels = 3,
				.allocatable = a,
				.n_allocatable = 1,
				.own = o,
				.n_own = 1,
				.pods_own = (int32_t)(own / 8)};

	snprintf(name, sizeof(name), "b0-r0-n%d", n);
	assert_int_equal(queue_node_set(q, &ns, NULL), GPUQ_OK);
}

/* gpuq's own pods bound where no placement says (a workload adopted with
 * none: a new leader without the store) take room: a rack job waits
 * saying the rack has 8 free, a one-node job goes to the other node. */
static void own_pods_without_placement_count(void **state)
{
	queue_t *q = mktopo(1, 1, 2, 8, 64);
	queue_result_t r;
	queue_place_t pl[256];
	char why[512];

	(void)state;
	own_set(q, 0, 8, 8);
	assert_int_equal(add_topo(q, "rack", 0, 1, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 2, &r);
	assert_int_equal(state_of(q, "rack"), QUEUE_WL_PENDING);
	reason(q, "rack", why, sizeof(why));
	assert_non_null(strstr(why, "the best rack has 8 free"));
	assert_int_equal(add_topo(q, "one", 0, 3, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 4, &r);
	assert_true(admitted_in(&r, "one"));
	assert_int_equal(placement(q, "one", pl), 1);
	assert_string_equal(pl[0].node, "b0-r0-n1");
	queue_destroy(q);
}

/* A placement's own pods, once bound, are not counted twice: a 16-GPU node
 * holding a job's placed 8-GPU pod (own 8) still has 8 free. */
static void own_pods_of_a_placement_not_twice(void **state)
{
	queue_t *q = mktopo(1, 1, 1, 16, 64);
	queue_result_t r;

	(void)state;
	assert_int_equal(add_topo(q, "a", 0, 1, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 2, &r);
	assert_true(admitted_in(&r, "a"));
	own_set(q, 0, 16, 8); /* its pod is bound */
	assert_int_equal(add_topo(q, "b", 0, 3, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 4, &r);
	assert_true(admitted_in(&r, "b"));
	/* both bound now (own 16): nothing more fits */
	own_set(q, 0, 16, 16);
	assert_int_equal(add_topo(q, "c", 0, 5, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 6, &r);
	assert_int_equal(state_of(q, "c"), QUEUE_WL_PENDING);
	queue_destroy(q);
}

/* The pod cap counts gpuq's bound pods the same way: a node taking one pod,
 * holding one of gpuq's with no placement, takes no other. */
static void own_pods_fill_the_pod_cap(void **state)
{
	queue_t *q = mktopo(1, 1, 1, 8, 64);
	queue_label_t l[3] = {{BLOCK, "b0"}, {RACK, "r0"}, {HOST, "b0-r0-n0"}};
	queue_request_t a[2] = {{"gpu", 8}, {"pods", 1}};
	queue_node_spec_t ns = {.name = "b0-r0-n0",
				.labels = l,
				.n_labels = 3,
				.allocatable = a,
				.n_allocatable = 2,
				.pods_own = 1};
	queue_result_t r;

	(void)state;
	assert_int_equal(queue_node_set(q, &ns, NULL), GPUQ_OK);
	assert_int_equal(add_topo(q, "a", 0, 1, 1, 1, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 2, &r);
	assert_int_equal(state_of(q, "a"), QUEUE_WL_PENDING);
	ns.pods_own = 0;
	assert_int_equal(queue_node_set(q, &ns, NULL), GPUQ_OK);
	cycle(q, 3, &r);
	assert_true(admitted_in(&r, "a"));
	queue_destroy(q);
}

/* A node keeps up to QUEUE_NODE_LABELS_MAX labels (64; a selector's cap,
 * 32, is not a node's); past it, refused naming the limit. */
static void node_takes_64_labels(void **state)
{
	queue_t *q = mktopo(1, 1, 1, 8, 64);
	char keys[QUEUE_NODE_LABELS_MAX + 1][32];
	queue_label_t l[QUEUE_NODE_LABELS_MAX + 1];
	queue_request_t a[1] = {{"gpu", 8}};
	queue_node_spec_t ns = {.name = "b0-r0-n0",
				.labels = l,
				.n_labels = QUEUE_NODE_LABELS_MAX,
				.allocatable = a,
				.n_allocatable = 1};
	gpuq_diag_t diag = {{0}};

	(void)state;
	l[0] = (queue_label_t){BLOCK, "b0"};
	l[1] = (queue_label_t){RACK, "r0"};
	l[2] = (queue_label_t){HOST, "b0-r0-n0"};
	for (size_t i = 3; i <= QUEUE_NODE_LABELS_MAX; i++) {
		snprintf(keys[i], sizeof(keys[i]), "feature.node/k%zu", i);
		l[i] = (queue_label_t){keys[i], "true"};
	}
	assert_int_equal(queue_node_set(q, &ns, &diag), GPUQ_OK);
	ns.n_labels = QUEUE_NODE_LABELS_MAX + 1;
	assert_int_equal(queue_node_set(q, &ns, &diag), GPUQ_ELIMIT);
	assert_non_null(strstr(diag.msg, "64"));
	queue_destroy(q);
}

/* ---- a node failed under admitted workloads ---- */

/* Whether uid is placed on node `node`. */
static bool placed_on(queue_t *q, const char *uid, const char *node)
{
	queue_place_t pl[256];
	size_t n = placement(q, uid, pl);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(pl[i].node, node))
			return true;
	return false;
}

/* The reason of uid's eviction in r, or -1. */
static int evicted_why(const queue_result_t *r, const char *uid)
{
	for (size_t i = 0; i < r->n_evictions; i++)
		if (!strcmp(r->evictions[i].victim_uid, uid))
			return (int)r->evictions[i].reason;
	return -1;
}

/* Three racks of two nodes: rack job a on rack r0 (best fit, by name), host
 * job b on a node of r1. */
static queue_t *two_running(void)
{
	queue_t *q = mktopo(1, 3, 2, 8, 64);
	queue_result_t r;

	assert_int_equal(add_topo(q, "a", 0, 1, 2, 8, QUEUE_TOPO_REQUIRED, RACK), GPUQ_OK);
	cycle(q, 2, &r);
	assert_int_equal(add_topo(q, "b", 0, 3, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 4, &r);
	assert_int_equal(state_of(q, "a"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "b"), QUEUE_WL_ADMITTED);
	assert_true(placed_on(q, "a", "b0-r0-n0") && placed_on(q, "a", "b0-r0-n1"));
	assert_false(placed_on(q, "b", "b0-r0-n0") || placed_on(q, "b", "b0-r0-n1"));
	return q;
}

/* The status says where each one runs: the narrowest level its nodes
 * share, what its release pins it to. */
static void status_names_the_domain(void **state)
{
	queue_t *q = two_running();
	char buf[256];

	(void)state;
	reason(q, "a", buf, sizeof(buf));
	assert_string_equal(buf, "admitted in ClusterQueue cq: 16 gpu on flavor h100; in rack r0 "
				 "(topology.gpuq.dev/rack)");
	reason(q, "b", buf, sizeof(buf));
	assert_string_equal(buf, "admitted in ClusterQueue cq: 8 gpu on flavor h100; in node "
				 "b0-r1-n0 (kubernetes.io/hostname)");
	queue_destroy(q);
}

/* A node of a's rack not Ready from t=10: nothing happens within the grace
 * (30 s, the default); queue_next_event names its end; then a (only a) is
 * evicted with NodeFailures, requeued, and placed again in the one rack
 * left whole, away from the failed node. */
static void not_ready_past_the_grace_evicts(void **state)
{
	queue_t *q = two_running();
	queue_result_t r;
	int32_t pods;

	(void)state;
	node_state(q, 0, 0, 1, false, true, 10);
	assert_int_equal(queue_next_event(q, 100), 10 + 30000);
	assert_int_equal(queue_tick(q, 10 + 29999, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(queue_tick(q, 10 + 30000, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 1);
	assert_int_equal(evicted_why(&r, "a"), QUEUE_EVICT_NODE_FAILED);
	assert_string_equal(r.evictions[0].reason_name, "NodeFailures");
	assert_string_equal(r.evictions[0].message,
			    "Node b0-r0-n1 it was placed on was not Ready for 30 s");
	assert_int_equal(state_of(q, "b"), QUEUE_WL_ADMITTED);
	cycle(q, 10 + 30001, &r);
	assert_true(admitted_in(&r, "a"));
	assert_false(placed_on(q, "a", "b0-r0-n1"));
	assert_int_equal(domains_of(q, "a", RACK, &pods), 1);
	assert_true(placed_on(q, "a", "b0-r2-n0")); /* r1 has one node free */
	/* the node stays down, holding nothing: nothing more to do */
	assert_int_equal(queue_tick(q, 10 + 90000, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	queue_destroy(q);
}

/* Ready again within the grace: nothing is evicted, ever. */
static void ready_again_within_the_grace(void **state)
{
	queue_t *q = two_running();
	queue_result_t r;

	(void)state;
	node_state(q, 0, 0, 1, false, true, 10);
	assert_int_equal(queue_tick(q, 20000, &r), GPUQ_OK);
	node_state(q, 0, 0, 1, false, false, 0);
	assert_int_equal(queue_tick(q, 100000, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(state_of(q, "a"), QUEUE_WL_ADMITTED);
	queue_destroy(q);
}

/* A cordon evicts nothing (its pods keep running) and takes nothing new:
 * a host job goes to another node. */
static void cordon_evicts_nothing(void **state)
{
	queue_t *q = two_running();
	queue_result_t r;

	(void)state;
	cordon(q, 0, 1, 0, true);
	cordon(q, 0, 1, 1, true);
	assert_int_equal(queue_tick(q, 1000000, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 0);
	assert_int_equal(add_topo(q, "c", 0, 1000001, 1, 8, QUEUE_TOPO_REQUIRED, HOST), GPUQ_OK);
	cycle(q, 1000002, &r);
	assert_int_equal(r.n_evictions, 0);
	assert_true(admitted_in(&r, "c"));
	assert_false(placed_on(q, "c", "b0-r1-n0") || placed_on(q, "c", "b0-r1-n1"));
	assert_int_equal(state_of(q, "a"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "b"), QUEUE_WL_ADMITTED);
	queue_destroy(q);
}

/* A node deleted evicts at the next tick, without a grace. */
static void deleted_node_evicts(void **state)
{
	queue_t *q = two_running();
	queue_result_t r;

	(void)state;
	assert_int_equal(queue_node_delete(q, "b0-r0-n0"), GPUQ_OK);
	assert_int_equal(queue_next_event(q, 5), 6);
	assert_int_equal(queue_tick(q, 6, &r), GPUQ_OK);
	assert_int_equal(r.n_evictions, 1);
	assert_int_equal(evicted_why(&r, "a"), QUEUE_EVICT_NODE_FAILED);
	assert_string_equal(r.evictions[0].message, "Node b0-r0-n0 it was placed on was deleted");
	cycle(q, 7, &r);
	assert_true(admitted_in(&r, "a"));
	assert_false(placed_on(q, "a", "b0-r0-n0"));
	assert_true(queue_next_event(q, 8) > 9); /* settled: not due again */
	queue_destroy(q);
}

/* ---- property ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* After a cycle: per node, the GPUs placed never exceed 8; every admitted
 * workload's pods are placed once; REQUIRED ones lie in one domain. */
static void check_cluster(queue_t *q, int n_wl, const int32_t *count, const int *mode,
			  const char *const *level)
{
	char names[64][16], why[256];
	int64_t used[64] = {0};
	size_t n_nodes = 0;

	if (queue_check(q, why, sizeof(why)))
		fail_msg("queue_check: %s", why);

	for (int w = 0; w < n_wl; w++) {
		char uid[16];
		queue_wl_t id;
		queue_place_t pl[256];
		size_t n = 0;
		int32_t pods = 0;

		snprintf(uid, sizeof(uid), "w%d", w);
		if (queue_workload_find(q, uid, &id) || state_of(q, uid) != QUEUE_WL_ADMITTED)
			continue;
		queue_workload_placement(q, id, pl, 256, &n);
		for (size_t i = 0; i < n; i++) {
			size_t k = 0;

			while (k < n_nodes && strcmp(names[k], pl[i].node))
				k++;
			if (k == n_nodes) {
				snprintf(names[k], sizeof(names[k]), "%s", pl[i].node);
				n_nodes++;
			}
			used[k] += pl[i].count;
			pods += pl[i].count;
		}
		if (pods != count[w])
			fail_msg("%s: %d pods placed of %d", uid, pods, count[w]);
		if (mode[w] == QUEUE_TOPO_REQUIRED) {
			int32_t p2;
			size_t k = domains_of(q, uid, level[w], &p2);

			if (k != 1)
				fail_msg("%s: REQUIRED at %s, on %zu domains", uid, level[w], k);
		}
	}
	/* every pod is one GPU in the property: a node holds at most 8 */
	for (size_t k = 0; k < n_nodes; k++)
		if (used[k] > 8)
			fail_msg("node %s holds %" PRId64 " GPUs of 8", names[k], used[k]);
}

static void property_placements_hold(void **state)
{
	static const char *const lv[] = {BLOCK, RACK, HOST};
	size_t evictions = 0, admissions = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		/* a quota of 200 or 120 of the 256 GPUs: the quota binds too, and
		   preemption then frees a domain and quota at once */
		queue_t *q = mktopo_in(2, 4, 4, 8, seed % 4 < 2 ? 200 : 120,
				       seed % 2 ? QUEUE_WITHIN_LOWER_PRIORITY : QUEUE_WITHIN_NEVER);
		uint64_t s = seed * 0x9E3779B97F4A7C15ull;
		int32_t count[64];
		int mode[64];
		const char *level[64];
		int64_t now = 1;
		queue_result_t r;

		for (int w = 0; w < 64; w++) {
			char uid[16];

			snprintf(uid, sizeof(uid), "w%d", w);
			count[w] = 1 + (int32_t)(rng_next(&s) % 24);
			mode[w] = (int)(rng_next(&s) % 4);
			level[w] = lv[rng_next(&s) % 3];
			if (!strcmp(level[w], HOST) && count[w] > 8)
				level[w] = RACK;
			assert_int_equal(add_topo(q, uid, (int32_t)(rng_next(&s) % 3), now,
						  count[w], 1, (queue_topo_mode_t)mode[w],
						  mode[w] == QUEUE_TOPO_REQUIRED ||
							  mode[w] == QUEUE_TOPO_PREFERRED
						      ? level[w]
						      : NULL),
					 GPUQ_OK);
			cycle(q, ++now, &r);
			evictions += r.n_evictions;
			admissions += r.n_admissions;
			check_cluster(q, w + 1, count, mode, level);
			if (rng_next(&s) % 3 == 0) { /* one admitted ends */
				char v[16];
				int k = (int)(rng_next(&s) % (uint64_t)(w + 1));

				snprintf(v, sizeof(v), "w%d", k);
				if (state_of(q, v) == QUEUE_WL_ADMITTED)
					assert_int_equal(queue_workload_finish(q, v, ++now),
							 GPUQ_OK);
				cycle(q, ++now, &r);
				check_cluster(q, w + 1, count, mode, level);
			}
		}
		queue_destroy(q);
	}
	print_message("# %zu admissions, %zu evictions over 40 seeds\n", admissions, evictions);
	assert_true(evictions > 0); /* the seeds with preemption preempted */
}

/* What the property below knows of its 32 nodes: 0 up, 1 not Ready since
 * since[i], 2 deleted. */
typedef struct {
	int st[32];
	int64_t since[32];
} nodes_model_t;

static bool model_failed(const nodes_model_t *m, int i, int64_t now)
{
	return m->st[i] == 2 || (m->st[i] == 1 && now - m->since[i] >= 30000);
}

/* One random change to node i of m and q at now. */
static void node_change(queue_t *q, nodes_model_t *m, int i, int64_t now, uint64_t roll)
{
	char name[32];

	snprintf(name, sizeof(name), "b%d-r%d-n%d", i / 16, i / 4 % 4, i % 4);
	if (m->st[i] != 2 && roll % 4 == 0) {
		assert_int_equal(queue_node_delete(q, name), GPUQ_OK);
		m->st[i] = 2;
	} else if (m->st[i] == 0 && roll % 4 != 3) {
		node_state(q, i / 16, i / 4 % 4, i % 4, false, true, now);
		m->st[i] = 1;
		m->since[i] = now;
	} else {
		node_state(q, i / 16, i / 4 % 4, i % 4, false, false, 0);
		m->st[i] = 0;
	}
}

/* Whether admitted workload uid is placed on a node m says failed at now
 * (not_ready: not Ready at all). */
static bool on_failed(queue_t *q, const nodes_model_t *m, const char *uid, int64_t now,
		      bool not_ready)
{
	queue_place_t pl[256];
	size_t n;

	if (state_of(q, uid) != QUEUE_WL_ADMITTED)
		return false;
	n = placement(q, uid, pl);
	for (size_t k = 0; k < n; k++) {
		int b, r, nd, i;

		assert_int_equal(sscanf(pl[k].node, "b%d-r%d-n%d", &b, &r, &nd), 3);
		i = b * 16 + r * 4 + nd;
		if (model_failed(m, i, now) || (not_ready && m->st[i]))
			return true;
	}
	return false;
}

/* Random streams with nodes going not Ready, Ready again, deleted and
 * back, time jumping by up to 20 s: each tick evicts exactly the admitted
 * workloads on a node deleted or not Ready for 30 s, each NodeFailures;
 * a cycle admits nothing onto a node that is not up; queue_check and the
 * cluster checks hold after every step. */
static void property_failed_nodes_evict_their_workloads(void **state)
{
	size_t failures = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 30; seed++) {
		queue_t *q = mktopo(2, 4, 4, 8, 200);
		uint64_t s = seed * 0x9E3779B97F4A7C15ull;
		nodes_model_t m = {{0}, {0}};
		int32_t count[64];
		int mode[64];
		const char *level[64];
		int64_t now = 1;
		queue_result_t r;

		for (int w = 0; w < 64; w++) {
			char uid[16];
			bool due[64], fresh[64];
			size_t n_due = 0;

			snprintf(uid, sizeof(uid), "w%d", w);
			count[w] = 1 + (int32_t)(rng_next(&s) % 16);
			mode[w] = (int)(rng_next(&s) % 3) + 1;
			level[w] = count[w] > 8 ? RACK : HOST;
			assert_int_equal(
			    add_topo(q, uid, 0, now, count[w], 1, (queue_topo_mode_t)mode[w],
				     mode[w] == QUEUE_TOPO_UNCONSTRAINED ? NULL : level[w]),
			    GPUQ_OK);
			if (rng_next(&s) % 2)
				node_change(q, &m, (int)(rng_next(&s) % 32), now, rng_next(&s));
			now += (int64_t)(rng_next(&s) % 20000);
			for (int k = 0; k <= w; k++) {
				snprintf(uid, sizeof(uid), "w%d", k);
				due[k] = on_failed(q, &m, uid, now, false);
				n_due += due[k];
			}
			assert_int_equal(queue_tick(q, now, &r), GPUQ_OK);
			assert_int_equal(r.n_evictions, n_due);
			for (int k = 0; k <= w; k++) {
				snprintf(uid, sizeof(uid), "w%d", k);
				if (due[k] != (evicted_why(&r, uid) == QUEUE_EVICT_NODE_FAILED))
					fail_msg("seed %" PRIu64 ": %s %s", seed, uid,
						 due[k] ? "not evicted" : "evicted");
				fresh[k] = state_of(q, uid) != QUEUE_WL_ADMITTED;
			}
			failures += n_due;
			cycle(q, ++now, &r);
			for (int k = 0; k <= w; k++) {
				snprintf(uid, sizeof(uid), "w%d", k);
				if (fresh[k] && on_failed(q, &m, uid, now, true))
					fail_msg("seed %" PRIu64 ": %s admitted onto a node down",
						 seed, uid);
			}
			check_cluster(q, w + 1, count, mode, level);
		}
		queue_destroy(q);
	}
	print_message("# %zu node failure evictions over 30 seeds\n", failures);
	assert_true(failures > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(required_rack_waits_then_runs),
	    cmocka_unit_test(preferred_spans_required_waits),
	    cmocka_unit_test(preferred_fewest_racks),
	    cmocka_unit_test(cordoned_node_takes_nothing),
	    cmocka_unit_test(unknown_level_said),
	    cmocka_unit_test(flavor_names_missing_topology),
	    cmocka_unit_test(reason_names_what_binds),
	    cmocka_unit_test(placement_survives_restore),
	    cmocka_unit_test(placement_restored_before_its_nodes),
	    cmocka_unit_test(preempts_within_one_rack),
	    cmocka_unit_test(no_preemption_waits),
	    cmocka_unit_test(cohort_reclaims_one_rack),
	    cmocka_unit_test(cohort_reclaim_stops_at_nominal),
	    cmocka_unit_test(borrowing_preemptor_reclaims_nothing),
	    cmocka_unit_test(quota_and_rack_both_free),
	    cmocka_unit_test(rack_victims_plus_quota_victims),
	    cmocka_unit_test(own_pods_without_placement_count),
	    cmocka_unit_test(own_pods_of_a_placement_not_twice),
	    cmocka_unit_test(own_pods_fill_the_pod_cap),
	    cmocka_unit_test(node_takes_64_labels),
	    cmocka_unit_test(property_placements_hold),
	    cmocka_unit_test(status_names_the_domain),
	    cmocka_unit_test(not_ready_past_the_grace_evicts),
	    cmocka_unit_test(ready_again_within_the_grace),
	    cmocka_unit_test(cordon_evicts_nothing),
	    cmocka_unit_test(deleted_node_evicts),
	    cmocka_unit_test(property_failed_nodes_evict_their_workloads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

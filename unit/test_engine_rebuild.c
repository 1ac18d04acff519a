/* Unit tests for engine_core_rebuild: a round trip with the same policy
 * keeps every record byte for byte and the same future decisions; raised
 * quota, removed LocalQueues, ClusterQueues and flavors, a LocalQueue
 * pointed elsewhere, ledgers under a structural change, and the one refusal
 * (GPUQ_EAGAIN). */
#include "unit/engine_fixtures.h"

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

/* A fork in two halves (engine_fork_begin on the thread that owns the
 * live core, engine_fork_end on another) reads the live core in the first
 * only: ended after the live core moved on and was destroyed, and the
 * policy's other reference dropped, it equals a fork made at once (under
 * ASan, a read of either after the first half is a use after free). */
static void fork_halves_read_live_once(void **state)
{
	policy_t *p = policy_of(BASE);
	queue_t *live = busy_core(p);
	queue_config_t cfg;
	engine_t *whole = NULL, *split = NULL;
	engine_fork_t *f = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	queue_config_default(&cfg);
	assert_int_equal(engine_fork(live, p, &cfg, NULL, NULL, &whole, &d), GPUQ_OK);
	assert_int_equal(engine_fork_begin(live, p, &cfg, NULL, NULL, &f, &d), GPUQ_OK);
	add_wl(live, "team-c", "after", 1, 0, 0, 90000);
	cycle(live, 90000);
	queue_destroy(live);
	policy_unref(p);
	assert_int_equal(engine_fork_end(f, &split, &d), GPUQ_OK);
	assert_false(holds(engine_core(split), "after"));
	same_records(engine_core(whole), engine_core(split), true);
	same_records(engine_core(split), engine_core(whole), true);
	engine_close(whole);
	engine_close(split);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(rebuild_same_policy_round_trip),
	    cmocka_unit_test(rebuild_round_trip_evicting_and_backoff),
	    cmocka_unit_test(rebuild_quota_raised),
	    cmocka_unit_test(rebuild_lq_removed_pending),
	    cmocka_unit_test(rebuild_lq_moved),
	    cmocka_unit_test_setup_teardown(rebuild_cq_removed_admitted, setup, teardown),
	    cmocka_unit_test(rebuild_flavor_removed),
	    cmocka_unit_test(rebuild_keeps_usage_and_ledger),
	    cmocka_unit_test(rebuild_refusals),
	    cmocka_unit_test(fork_halves_read_live_once),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests_name("engine_rebuild", tests, NULL, NULL);
}

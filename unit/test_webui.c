/* The web UI (webui/): a core built with the queue's own API runs cycles
 * the way the controller runs them, a snapshot is built and rendered as the
 * API's JSON, and every number is checked against the hand-worked cluster:
 * nominal, used, borrowed and lent per flavor, pending and admitted counts,
 * pending workloads in admission order with their position and the core's
 * reason, admitted ones with their flavor, a tenant's namespace, recent
 * admissions and preemptions (the preemptor hidden from another tenant),
 * the list cap with its total. Then the access decision: TokenReview and
 * SubjectAccessReview bodies and replies, the decision cache (TTL, bound),
 * and the app's answers by access (401, the slow path, 403, 200), and the
 * embedded files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "webui/internal.h"

/* ---- a small cluster: one cohort, two ClusterQueues, three tenants ---- */

static void add_cq(queue_t *q, const char *name, const char *cohort, int64_t gpus)
{
	static const char *const cov[] = {"nvidia.com/gpu"};
	queue_quota_spec_t quota = {gpus, QUEUE_UNLIMITED, QUEUE_UNLIMITED};
	queue_flavor_quota_spec_t fl = {"h100", &quota};
	queue_group_spec_t g = {.covered = cov, .n_covered = 1, .flavors = &fl, .n_flavors = 1};
	queue_cq_spec_t s = {.name = name,
			     .cohort = cohort,
			     .groups = &g,
			     .n_groups = 1,
			     .within = QUEUE_WITHIN_LOWER_PRIORITY,
			     .reclaim = QUEUE_RECLAIM_ANY};
	gpuq_diag_t d = {{0}};

	if (queue_cq_add(q, &s, NULL, &d))
		fail_msg("cq %s: %s", name, d.msg);
}

static queue_t *cluster(void)
{
	queue_flavor_spec_t f = {.name = "h100"};
	queue_t *q = NULL;

	assert_int_equal(queue_create(NULL, &q), GPUQ_OK);
	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
	add_cq(q, "train", "pool", 4);
	add_cq(q, "infer", "pool", 4);
	assert_int_equal(queue_lq_add(q, "team-a", "default", "train", 2000, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_add(q, "team-b", "default", "train", 0, NULL, NULL), GPUQ_OK);
	assert_int_equal(queue_lq_add(q, "team-c", "default", "infer", 0, NULL, NULL), GPUQ_OK);
	return q;
}

/* A one-pod workload uid named name in ns's LocalQueue default. */
static void add_wl_named(queue_t *q, const char *uid, const char *name, const char *ns,
			 int32_t prio, int64_t created, int64_t gpus)
{
	queue_request_t r = {"nvidia.com/gpu", gpus};
	queue_podset_spec_t ps = {.name = "main", .count = 1, .requests = &r, .n_requests = 1};
	queue_workload_spec_t s = {.namespace_ = ns,
				   .name = name,
				   .uid = uid,
				   .local_queue = "default",
				   .priority = prio,
				   .created_ms = created,
				   .podsets = &ps,
				   .n_podsets = 1};

	assert_int_equal(queue_workload_add(q, &s, created, NULL, NULL), GPUQ_OK);
}

/* The same, its uid its name too. */
static void add_wl(queue_t *q, const char *uid, const char *ns, int32_t prio, int64_t created,
		   int64_t gpus)
{
	add_wl_named(q, uid, uid, ns, prio, created, gpus);
}

/* One cycle as the controller runs it, its result noted as events. */
static void cycle(webui_t *ui, queue_t *q, int64_t now)
{
	queue_result_t res;

	assert_int_equal(queue_cycle_run(q, now, &res), GPUQ_OK);
	webui_events_note(ui, q, &res, now);
}

/* a1 and a2 (3 GPUs each) admitted in train, borrowing 2 from infer; b1
 * (3) waits: 2 GPUs free in the cohort. */
static queue_t *scenario(webui_t *ui)
{
	queue_t *q = cluster();

	add_wl(q, "a1", "team-a", 0, 1000, 3);
	add_wl(q, "a2", "team-a", 0, 1001, 3);
	add_wl(q, "b1", "team-b", 0, 1002, 3);
	cycle(ui, q, 2000);
	return q;
}

static webui_t *ui_none(void)
{
	webui_t *ui = NULL;

	assert_int_equal(webui_create(WEBUI_AUTH_NONE, NULL, &ui, NULL), GPUQ_OK);
	return ui;
}

/* Render path from a snapshot of q at now for acc; the parsed JSON,
 * *status. */
static json_t *render_at(webui_t *ui, const queue_t *q, int64_t now, const char *path,
			 const webui_access_t *acc, unsigned *status)
{
	webui_snap_t *s;
	char *body;
	size_t len;
	json_t *o;

	assert_int_equal(webui_snap_build(ui, q, now, &s), GPUQ_OK);
	assert_int_equal(webui_render(s, path, acc, status, &body, &len), GPUQ_OK);
	webui_snap_unref(s);
	o = json_loadb(body, len, 0, NULL);
	if (!o)
		fail_msg("not JSON: %s", body);
	free(body);
	return o;
}

static json_t *render(webui_t *ui, const queue_t *q, const char *path, const webui_access_t *acc,
		      unsigned *status)
{
	return render_at(ui, q, 5000, path, acc, status);
}

static const webui_access_t ADMIN = {true, NULL};

/* The element of array a whose member key is value. */
static json_t *find(json_t *a, const char *key, const char *value)
{
	size_t i;
	json_t *e;

	json_array_foreach(a, i, e)
	{
		const char *v = json_string_value(json_object_get(e, key));
		if (v && !strcmp(v, value))
			return e;
	}
	fail_msg("no %s=%s", key, value);
	return NULL;
}

static const char *str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	if (!v)
		fail_msg("no string %s", key);
	return v;
}

static long long num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("no integer %s", key);
	return json_integer_value(v);
}

static void cluster_numbers(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = scenario(ui);
	unsigned status;
	json_t *o = render(ui, q, "/api/v1/cluster", &ADMIN, &status), *cqs, *train, *infer, *g;

	(void)state;
	assert_int_equal(status, 200);
	assert_string_equal(str(o, "apiVersion"), "gpuq.dev/ui/v1");
	assert_int_equal(num(o, "nowMs"), 5000);
	cqs = json_object_get(o, "clusterQueues");
	train = find(cqs, "name", "train");
	infer = find(cqs, "name", "infer");
	assert_string_equal(str(train, "cohort"), "pool");
	assert_int_equal(num(train, "pending"), 1);
	assert_int_equal(num(train, "admitted"), 2);
	assert_int_equal(num(train, "admissions"), 2);
	g = find(json_object_get(train, "quota"), "resource", "nvidia.com/gpu");
	assert_string_equal(str(g, "flavor"), "h100");
	assert_string_equal(str(g, "nominal"), "4");
	assert_string_equal(str(g, "used"), "6");
	assert_string_equal(str(g, "borrowed"), "2");
	assert_string_equal(str(g, "lent"), "0");
	assert_true(json_is_null(json_object_get(g, "borrowingLimit")));
	g = find(json_object_get(infer, "quota"), "resource", "nvidia.com/gpu");
	assert_string_equal(str(g, "used"), "0");
	assert_string_equal(str(g, "lent"), "2"); /* the cohort's borrowed, all from infer */
	assert_int_equal(num(infer, "pending"), 0);
	g = find(json_object_get(o, "cohorts"), "name", "pool");
	assert_int_equal(json_array_size(json_object_get(g, "clusterQueues")), 2);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

static void cluster_queue_page(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = scenario(ui);
	unsigned status;
	json_t *o = render(ui, q, "/api/v1/clusterqueues/train", &ADMIN, &status), *p, *a, *w, *lq;

	(void)state;
	assert_int_equal(status, 200);
	p = json_object_get(o, "pendingWorkloads");
	a = json_object_get(o, "admittedWorkloads");
	assert_int_equal(num(p, "total"), 1);
	w = json_array_get(json_object_get(p, "items"), 0);
	assert_string_equal(str(w, "name"), "b1");
	assert_int_equal(num(w, "position"), 1);
	assert_string_equal(str(w, "reason"), "Quota");
	/* the core's own sentence, without the position */
	assert_non_null(strstr(str(w, "message"), "needs 3 nvidia.com/gpu on flavor h100, 2 free"));
	assert_string_equal(str(w, "requests"), "3 nvidia.com/gpu");
	assert_int_equal(num(a, "total"), 2);
	w = find(json_object_get(a, "items"), "name", "a1");
	assert_string_equal(str(w, "flavors"), "h100");
	assert_int_equal(num(w, "admittedMs"), 2000);
	lq = find(json_object_get(o, "localQueues"), "namespace", "team-a");
	assert_int_equal(num(lq, "admitted"), 2);
	assert_true(json_real_value(json_object_get(lq, "weight")) == 2.0);
	assert_string_equal(str(json_array_get(json_object_get(lq, "usage"), 0), "used"), "6");
	json_decref(o);
	o = render(ui, q, "/api/v1/clusterqueues/nope", &ADMIN, &status);
	assert_int_equal(status, 404);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* c1 (4 GPUs, infer's nominal) reclaims what train borrows. */
static void preemption_events(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = scenario(ui);
	webui_access_t tenant_a = {false, "team-a"};
	unsigned status;
	json_t *o, *evs, *e;
	size_t i, preempted = 0;

	(void)state;
	add_wl(q, "c1", "team-c", 0, 3000, 4);
	cycle(ui, q, 3000);
	o = render(ui, q, "/api/v1/events", &ADMIN, &status);
	assert_int_equal(status, 200);
	evs = json_object_get(o, "events");
	json_array_foreach(evs, i, e)
	{
		if (strcmp(str(e, "kind"), "Preempted"))
			continue;
		preempted++;
		assert_string_equal(str(e, "namespace"), "team-a");
		assert_string_equal(str(e, "reason"), "InCohortReclamation");
		assert_string_equal(str(json_object_get(e, "preemptor"), "name"), "c1");
		assert_string_equal(str(json_object_get(e, "preemptor"), "namespace"), "team-c");
	}
	assert_int_equal(preempted, 1);
	e = json_array_get(evs, json_array_size(evs) - 1); /* newest first: the oldest last */
	assert_string_equal(str(e, "kind"), "Admitted");
	assert_string_equal(str(e, "flavors"), "h100");
	json_decref(o);
	/* team-a's page: its events, the preemptor of another tenant not named */
	o = render(ui, q, "/api/v1/namespaces/team-a", &tenant_a, &status);
	assert_int_equal(status, 200);
	json_array_foreach(json_object_get(o, "events"), i, e)
	{
		assert_string_equal(str(e, "namespace"), "team-a");
		if (!strcmp(str(e, "kind"), "Preempted")) {
			assert_null(json_object_get(json_object_get(e, "preemptor"), "name"));
			assert_string_equal(str(json_object_get(e, "preemptor"), "clusterQueue"),
					    "infer");
		}
	}
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

static void tenant_sees_its_namespace_only(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = scenario(ui);
	webui_access_t tenant_b = {false, "team-b"};
	static const char *const closed[] = {"/api/v1/cluster", "/api/v1/events",
					     "/api/v1/clusterqueues/train",
					     "/api/v1/namespaces/team-a"};
	unsigned status;
	json_t *o, *w;

	(void)state;
	o = render(ui, q, "/api/v1/namespaces/team-b", &tenant_b, &status);
	assert_int_equal(status, 200);
	w = json_object_get(o, "workloads");
	assert_int_equal(num(w, "total"), 1);
	assert_int_equal(json_array_size(json_object_get(w, "items")), 1);
	assert_string_equal(str(json_array_get(json_object_get(w, "items"), 0), "name"), "b1");
	json_decref(o);
	for (size_t i = 0; i < sizeof(closed) / sizeof(closed[0]); i++) {
		o = render(ui, q, closed[i], &tenant_b, &status);
		assert_int_equal(status, 403);
		json_decref(o);
	}
	o = render(ui, q, "/api/v1/namespaces/team-b/extra", &ADMIN, &status);
	assert_int_equal(status, 404);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* queue_workloads_by_cq gives every CQ's list as queue_cq_workloads does,
 * CQ by CQ. */
static void by_cq_agrees(const queue_t *q)
{
	static const queue_wl_state_t states[] = {QUEUE_WL_PENDING, QUEUE_WL_ADMITTED};

	for (size_t k = 0; k < 2; k++) {
		size_t n = queue_workloads_by_cq(q, states[k], NULL, 0), at = 0;
		queue_wl_t *all = calloc(n + 1, sizeof(*all)), *one = calloc(n + 1, sizeof(*one));

		assert_int_equal(queue_workloads_by_cq(q, states[k], all, n), n);
		for (uint32_t c = 0; c < queue_cq_count(q); c++) {
			size_t m = queue_cq_workloads(q, c, states[k], one, n);
			assert_true(at + m <= n);
			assert_memory_equal(all + at, one, m * sizeof(*one));
			at += m;
		}
		assert_int_equal(at, n);
		free(all);
		free(one);
	}
}

/* 600 waiting workloads: the first 500 listed in admission order, the
 * total says 600. */
static void lists_capped(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = cluster();
	unsigned status;
	json_t *o, *p, *items;
	char uid[32];

	(void)state;
	add_wl(q, "big", "team-a", 10, 1, 8); /* fills the cohort */
	for (int i = 0; i < 600; i++) {
		snprintf(uid, sizeof(uid), "w%03d", i);
		add_wl(q, uid, "team-b", 0, 1000 + i, 1);
	}
	cycle(ui, q, 5000);
	by_cq_agrees(q);
	o = render(ui, q, "/api/v1/clusterqueues/train", &ADMIN, &status);
	p = json_object_get(o, "pendingWorkloads");
	items = json_object_get(p, "items");
	assert_int_equal(num(p, "total"), 600);
	assert_int_equal(json_array_size(items), WEBUI_LIST_MAX);
	assert_string_equal(str(json_array_get(items, 0), "name"), "w000");
	assert_int_equal(num(json_array_get(items, 499), "position"), 500);
	assert_string_equal(str(json_array_get(items, 499), "name"), "w499");
	json_decref(o);
	o = render(ui, q, "/api/v1/namespaces/team-b", &ADMIN, &status);
	assert_int_equal(num(json_object_get(o, "workloads"), "total"), 600);
	assert_int_equal(json_array_size(json_object_get(json_object_get(o, "workloads"), "items")),
			 WEBUI_LIST_MAX);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* ---- access ---- */

static int sar_parse(const char *reply, bool *allowed)
{
	return webui_sar_parse(reply, strlen(reply), allowed);
}

static void review_bodies_and_replies(void **state)
{
	char user[256], uid[256], groups[256];
	char *body;
	bool allowed;
	json_t *o, *doc;
	static const char ok[] =
	    "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":true,\"user\":{\"username\":"
	    "\"system:serviceaccount:team-a:viewer\",\"uid\":\"u-1\",\"groups\":["
	    "\"system:serviceaccounts\",\"system:authenticated\"]}}}";
	static const char no[] = "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":false,"
				 "\"error\":\"token expired\"}}";

	(void)state;
	body = webui_token_review_body("tok\"en");
	o = json_loads(body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "spec"), "token")),
			    "tok\"en");
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "TokenReview");
	json_decref(o);
	free(body);
	assert_int_equal(webui_token_review_parse(ok, strlen(ok), user, uid, groups, 256), GPUQ_OK);
	assert_string_equal(user, "system:serviceaccount:team-a:viewer");
	assert_string_equal(uid, "u-1");
	assert_string_equal(groups, "[\"system:serviceaccounts\",\"system:authenticated\"]");
	assert_int_equal(webui_token_review_parse(no, strlen(no), user, uid, groups, 256),
			 GPUQ_EDENIED);
	assert_int_equal(webui_token_review_parse("nope", 4, user, uid, groups, 256),
			 GPUQ_ECORRUPT);
	/* cluster scope: get clusterqueues.gpuq.dev */
	body = webui_sar_body("alice", "u-1", "[\"g1\"]", NULL);
	doc = json_loads(body, 0, NULL);
	o = json_object_get(doc, "spec");
	assert_string_equal(json_string_value(json_object_get(o, "user")), "alice");
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "groups"), 0)),
			    "g1");
	o = json_object_get(o, "resourceAttributes");
	assert_string_equal(json_string_value(json_object_get(o, "group")), "gpuq.dev");
	assert_string_equal(json_string_value(json_object_get(o, "resource")), "clusterqueues");
	assert_string_equal(json_string_value(json_object_get(o, "verb")), "get");
	assert_null(json_object_get(o, "namespace"));
	json_decref(doc);
	free(body);
	/* a namespace: list jobs.batch there */
	body = webui_sar_body("alice", "", "[]", "team-a");
	doc = json_loads(body, 0, NULL);
	o = json_object_get(json_object_get(doc, "spec"), "resourceAttributes");
	assert_string_equal(json_string_value(json_object_get(o, "group")), "batch");
	assert_string_equal(json_string_value(json_object_get(o, "resource")), "jobs");
	assert_string_equal(json_string_value(json_object_get(o, "verb")), "list");
	assert_string_equal(json_string_value(json_object_get(o, "namespace")), "team-a");
	json_decref(doc);
	free(body);
	assert_int_equal(sar_parse("{\"status\":{\"allowed\":true}}", &allowed), GPUQ_OK);
	assert_true(allowed);
	assert_int_equal(sar_parse("{\"status\":{\"allowed\":false,\"reason\":\"x\"}}", &allowed),
			 GPUQ_OK);
	assert_false(allowed);
	assert_int_equal(sar_parse("{\"status\":{}}", &allowed), GPUQ_ECORRUPT);
}

static void decision_cache(void **state)
{
	webui_t *ui = NULL;
	char tok[32];

	(void)state;
	assert_int_equal(webui_create(WEBUI_AUTH_REVIEW, NULL, &ui, NULL), GPUQ_OK);
	assert_int_equal(wa_cache_get(ui, "t1", "", 0), WA_UNKNOWN);
	wa_cache_put(ui, "t1", "", WA_ALLOWED, "alice", 0);
	wa_cache_put(ui, "t1", "team-a", WA_FORBIDDEN, "alice", 0);
	assert_int_equal(wa_cache_get(ui, "t1", "", 1), WA_ALLOWED);
	assert_int_equal(wa_cache_get(ui, "t1", "team-a", 1), WA_FORBIDDEN);
	assert_int_equal(wa_cache_get(ui, "t2", "", 1), WA_UNKNOWN);
	/* "t1" + "team-a" is not "t1team-a" + "" */
	assert_int_equal(wa_cache_get(ui, "t1team-a", "", 1), WA_UNKNOWN);
	/* expiry */
	assert_int_equal(wa_cache_get(ui, "t1", "", WEBUI_AUTH_TTL_MS - 1), WA_ALLOWED);
	assert_int_equal(wa_cache_get(ui, "t1", "", WEBUI_AUTH_TTL_MS), WA_UNKNOWN);
	/* bounded: twice the cap of distinct tokens; the newest are kept */
	for (int i = 0; i < 2 * WEBUI_AUTH_CACHE_MAX; i++) {
		snprintf(tok, sizeof(tok), "tok-%d", i);
		wa_cache_put(ui, tok, "", WA_ALLOWED, "", 100 + i);
	}
	snprintf(tok, sizeof(tok), "tok-%d", 2 * WEBUI_AUTH_CACHE_MAX - 1);
	assert_int_equal(wa_cache_get(ui, tok, "", 200), WA_ALLOWED);
	assert_int_equal(wa_cache_get(ui, "tok-0", "", 200), WA_UNKNOWN);
	webui_destroy(ui);
}

/* One app request; the reply's status (its body freed). */
static unsigned ask(webui_t *ui, const char *path, const char *auth, bool retry, int *rc)
{
	http_app_request_t rq = {path, auth, false, NULL};
	http_app_reply_t out = {0};

	*rc = webui_app_handle(ui, &rq, retry, &out);
	if (out.body_owned)
		free((void *)out.body);
	return out.status;
}

static void app_access(void **state)
{
	webui_t *ui = NULL;
	queue_t *q;
	int rc;

	(void)state;
	assert_int_equal(webui_create(WEBUI_AUTH_REVIEW, NULL, &ui, NULL), GPUQ_OK);
	q = scenario(ui);
	webui_leader_set(ui, true);
	assert_int_equal(webui_publish(ui, q, 5000), GPUQ_OK);
	assert_int_equal(ask(ui, "/api/v1/cluster", NULL, false, &rc), 401);
	assert_int_equal(ask(ui, "/api/v1/cluster", "Basic eDp5", false, &rc), 401);
	/* not cached: the slow worker first; still unknown after it: 503 */
	ask(ui, "/api/v1/cluster", "Bearer admin", false, &rc);
	assert_int_equal(rc, HTTP_APP_SLOW);
	assert_int_equal(ask(ui, "/api/v1/cluster", "Bearer admin", true, &rc), 503);
	assert_int_equal(rc, GPUQ_OK);
	wa_cache_put(ui, "admin", "", WA_ALLOWED, "admin", gpuq_mono_ms());
	assert_int_equal(ask(ui, "/api/v1/cluster", "Bearer admin", false, &rc), 200);
	assert_int_equal(ask(ui, "/api/v1/namespaces/team-b", "Bearer admin", false, &rc), 200);
	/* a tenant: may list jobs in team-b only */
	wa_cache_put(ui, "tenant", "", WA_FORBIDDEN, "bob", gpuq_mono_ms());
	wa_cache_put(ui, "tenant", "team-b", WA_ALLOWED, "bob", gpuq_mono_ms());
	wa_cache_put(ui, "tenant", "team-a", WA_FORBIDDEN, "bob", gpuq_mono_ms());
	assert_int_equal(ask(ui, "/api/v1/cluster", "Bearer tenant", false, &rc), 403);
	assert_int_equal(ask(ui, "/api/v1/namespaces/team-b", "Bearer tenant", false, &rc), 200);
	assert_int_equal(ask(ui, "/api/v1/namespaces/team-a", "Bearer tenant", false, &rc), 403);
	ask(ui, "/api/v1/namespaces/team-c", "Bearer tenant", false, &rc);
	assert_int_equal(rc, HTTP_APP_SLOW);
	/* a token the apiserver refused */
	wa_cache_put(ui, "bad", "", WA_UNAUTHENTICATED, "", gpuq_mono_ms());
	assert_int_equal(ask(ui, "/api/v1/namespaces/team-b", "Bearer bad", false, &rc), 401);
	/* a follower: 503 */
	webui_leader_set(ui, false);
	assert_int_equal(ask(ui, "/api/v1/cluster", "Bearer admin", false, &rc), 503);
	queue_destroy(q);
	webui_destroy(ui);
}

/* The nowMs of the published snapshot, as the API gives it. */
static long long published_now(webui_t *ui)
{
	http_app_request_t rq = {"/api/v1/cluster", NULL, false, NULL};
	http_app_reply_t out = {0};
	json_t *o;
	long long now;

	assert_int_equal(webui_app_handle(ui, &rq, false, &out), GPUQ_OK);
	o = json_loadb(out.body, out.len, 0, NULL);
	now = json_integer_value(json_object_get(o, "nowMs"));
	json_decref(o);
	free((void *)out.body);
	return now;
}

/* The published snapshot, no reference taken (the test's one thread). */
static webui_snap_t *published_snap(webui_t *ui)
{
	return ui->published.snap;
}

/* Nobody reading the API for the idle time: no new snapshot is built. The
 * next request does not get the one kept (a minute old): it goes to the
 * slow worker to wait for the next, which it brings back; if none comes
 * within WEBUI_FRESH_WAIT_MS it gets 503, never the old one. */
static void idle_builds_nothing(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = scenario(ui);
	http_app_request_t rq = {"/api/v1/cluster", NULL, false, NULL};
	http_app_reply_t out = {0};

	(void)state;
	webui_leader_set(ui, true);
	assert_int_equal(webui_publish(ui, q, 5000), GPUQ_OK); /* the first: always */
	assert_int_equal(published_now(ui), 5000);	       /* fresh: answered at once */
	/* a minute without a request */
	atomic_store(&ui->last_api_ms, gpuq_mono_ms() - WEBUI_IDLE_MS - 1);
	published_snap(ui)->built_mono_ms -= WEBUI_IDLE_MS + 1;
	assert_int_equal(webui_publish(ui, q, 6000), GPUQ_OK);
	assert_true(ws_old(published_snap(ui), gpuq_mono_ms())); /* nothing built */
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), HTTP_APP_SLOW);
	ws_wait_fresh(ui, false, gpuq_mono_ms() + 1); /* the worker: nothing comes */
	assert_int_equal(webui_app_handle(ui, &rq, true, &out), GPUQ_OK);
	assert_int_equal(out.status, 503);
	/* the request brought snapshots back: the next publish builds one */
	assert_int_equal(webui_publish(ui, q, 7000), GPUQ_OK);
	assert_int_equal(published_now(ui), 7000);
	queue_destroy(q);
	webui_destroy(ui);
}

typedef struct {
	webui_t *ui;
	const queue_t *q;
} publisher_t;

static void *publish_soon(void *arg)
{
	publisher_t *p = arg;
	struct timespec ts = {0, 20 * 1000000};

	nanosleep(&ts, NULL);
	(void)webui_publish(p->ui, p->q, 8000);
	return NULL;
}

/* The slow worker's wait ends at the controller's next publish: the
 * request is answered from it, never from the old one. An offline view
 * (webui_publish_fixed: its core never changes) is never old. */
static void old_snapshot_waits_for_the_next(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = scenario(ui);
	http_app_request_t rq = {"/api/v1/cluster", NULL, false, NULL};
	http_app_reply_t out = {0};
	publisher_t pub = {ui, q};
	pthread_t t;

	(void)state;
	webui_leader_set(ui, true);
	assert_int_equal(webui_publish(ui, q, 5000), GPUQ_OK);
	published_snap(ui)->built_mono_ms -= WEBUI_PUBLISH_MS + 1; /* the controller is late */
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), HTTP_APP_SLOW);
	assert_int_equal(pthread_create(&t, NULL, publish_soon, &pub), 0);
	ws_wait_fresh(ui, false, gpuq_mono_ms() + WEBUI_FRESH_WAIT_MS);
	assert_false(ws_old(published_snap(ui), gpuq_mono_ms()));
	pthread_join(t, NULL);
	assert_int_equal(published_now(ui), 8000);
	/* offline: published once, never old */
	assert_int_equal(webui_publish_fixed(ui, q, 9000), GPUQ_OK);
	published_snap(ui)->built_mono_ms -= WEBUI_IDLE_MS + 1;
	assert_int_equal(published_now(ui), 9000);
	queue_destroy(q);
	webui_destroy(ui);
}

/* ---- chargeback: GPU-hours and cost per namespace (ledger_window's rows) ---- */

#define HOUR 3600000LL
#define T0 (500000 * HOUR) /* an hour boundary (2027) */

static double real(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		fail_msg("no number %s", key);
	return json_number_value(v);
}

/* a1 (team-a, 4 GPUs, train's nominal) and b1 (team-b, 2 GPUs, borrowed
 * from infer) admitted at T0 and finished at T0 + 2 h; c1 (team-c, 1 GPU)
 * admitted at T0 + 1 h, still running. h100 costs 2.50 an hour. */
static queue_t *usage_scenario(webui_t *ui)
{
	static const ledger_price_t price = {"h100", 2.5};
	queue_t *q = cluster();

	assert_int_equal(webui_prices_set(ui, &price, 1), GPUQ_OK);
	add_wl(q, "a1", "team-a", 0, T0 - 2, 4);
	add_wl(q, "b1", "team-b", 0, T0 - 1, 2);
	cycle(ui, q, T0);
	add_wl(q, "c1", "team-c", 0, T0 + HOUR, 1);
	cycle(ui, q, T0 + HOUR);
	assert_int_equal(queue_workload_finish(q, "a1", T0 + 2 * HOUR), GPUQ_OK);
	assert_int_equal(queue_workload_finish(q, "b1", T0 + 2 * HOUR), GPUQ_OK);
	return q;
}

/* Each row of rows equals ledger_window's (same query, same prices):
 * the same numbers as `gpuq report usage`, every namespace or only ns. */
static void rows_match_ledger(const queue_t *q, int64_t now, json_t *rows, const char *ns)
{
	static const ledger_price_t price = {"h100", 2.5};
	ledger_query_t query = {now - WEBUI_USAGE_WINDOW_MS, now,    now,
				LEDGER_BY_NAMESPACE,	     &price, 1};
	ledger_report_t rep = {0};
	size_t at = 0;

	assert_int_equal(ledger_window(queue_ledger(q), &query, &rep), GPUQ_OK);
	for (size_t i = 0; i < rep.n_rows; i++) {
		const ledger_row_t *r = &rep.rows[i];
		json_t *j = json_array_get(rows, at);

		if (ns && strcmp(r->group, ns) != 0)
			continue;
		assert_non_null(j);
		at++;
		assert_string_equal(str(j, "namespace"), r->group);
		assert_string_equal(str(j, "resource"), r->resource);
		assert_true(real(j, "nominalHours") == r->nominal_hours);
		assert_true(real(j, "borrowedHours") == r->borrowed_hours);
		assert_true(real(j, "cost") == r->cost);
	}
	assert_int_equal(json_array_size(rows), at);
	ledger_report_deinit(&rep);
}

/* The hand-worked figures of one namespace's GPU row. */
static void gpu_row(json_t *rows, const char *ns, double nominal, double borrowed, double cost)
{
	json_t *r = find(rows, "namespace", ns);

	assert_string_equal(str(r, "resource"), "nvidia.com/gpu");
	assert_true(json_is_true(json_object_get(r, "accelerator")));
	assert_true(real(r, "nominalHours") == nominal);
	assert_true(real(r, "borrowedHours") == borrowed);
	assert_true(real(r, "cost") == cost);
}

static void usage_rows(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = usage_scenario(ui);
	int64_t now = T0 + 3 * HOUR;
	unsigned status;
	json_t *o = render_at(ui, q, now, "/api/v1/cluster", &ADMIN, &status), *u, *rows;

	(void)state;
	assert_int_equal(status, 200);
	u = json_object_get(o, "usage");
	rows = json_object_get(u, "rows");
	assert_int_equal(num(u, "windowMs"), 7 * 24 * HOUR);
	assert_int_equal(num(u, "fromMs"), now - 7 * 24 * HOUR); /* now is on the hour */
	assert_int_equal(num(u, "toMs"), now);
	assert_true(real(json_object_get(u, "prices"), "h100") == 2.5);
	rows_match_ledger(q, now, rows, NULL);
	assert_int_equal(json_array_size(rows), 3);
	gpu_row(rows, "team-a", 8.0, 0.0, 20.0); /* 4 GPUs x 2 h, x 2.50 */
	gpu_row(rows, "team-b", 0.0, 4.0, 10.0); /* 2 borrowed GPUs x 2 h */
	gpu_row(rows, "team-c", 2.0, 0.0, 5.0);	 /* 1 GPU x 2 h so far, running */
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* A namespace's page has its own rows only; a tenant reads its own, no
 * other namespace's, and no prices or cluster page. */
static void usage_per_namespace(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = usage_scenario(ui);
	webui_access_t tenant_b = {false, "team-b"};
	int64_t now = T0 + 3 * HOUR;
	unsigned status;
	json_t *o, *u, *rows;

	(void)state;
	o = render_at(ui, q, now, "/api/v1/namespaces/team-b", &tenant_b, &status);
	assert_int_equal(status, 200);
	u = json_object_get(o, "usage");
	rows = json_object_get(u, "rows");
	assert_int_equal(json_array_size(rows), 1);
	gpu_row(rows, "team-b", 0.0, 4.0, 10.0);
	rows_match_ledger(q, now, rows, "team-b");
	assert_null(json_object_get(u, "prices"));
	json_decref(o);
	o = render_at(ui, q, now, "/api/v1/namespaces/team-a", &ADMIN, &status);
	rows = json_object_get(json_object_get(o, "usage"), "rows");
	rows_match_ledger(q, now, rows, "team-a");
	gpu_row(rows, "team-a", 8.0, 0.0, 20.0);
	json_decref(o);
	o = render_at(ui, q, now, "/api/v1/namespaces/team-a", &tenant_b, &status);
	assert_int_equal(status, 403);
	assert_null(json_object_get(o, "usage"));
	json_decref(o);
	o = render_at(ui, q, now, "/api/v1/cluster", &tenant_b, &status);
	assert_int_equal(status, 403);
	assert_null(json_object_get(o, "usage"));
	json_decref(o);
	/* no price set: the same hours, cost 0 */
	assert_int_equal(webui_prices_set(ui, NULL, 0), GPUQ_OK);
	o = render_at(ui, q, now, "/api/v1/namespaces/team-a", &ADMIN, &status);
	gpu_row(json_object_get(json_object_get(o, "usage"), "rows"), "team-a", 8.0, 0.0, 0.0);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* ---- the visibility API ---- */

/* GET path?query of the visibility API from a snapshot of q at 5000 for
 * acc: the parsed JSON, *status. */
static json_t *vis(webui_t *ui, const queue_t *q, const char *path, const char *query,
		   const webui_access_t *acc, unsigned *status)
{
	webui_snap_t *s;
	char *body;
	size_t len;
	json_t *o;

	assert_int_equal(webui_snap_build(ui, q, 5000, &s), GPUQ_OK);
	assert_int_equal(webui_vis_render(s, path, query, acc, status, &body, &len), GPUQ_OK);
	webui_snap_unref(s);
	o = json_loadb(body, len, 0, NULL);
	if (!o)
		fail_msg("not JSON: %s", body);
	free(body);
	return o;
}

#define VIS WEBUI_VIS_PREFIX

/* big and cbig fill train and infer (each its own nominal quota, nothing
 * to borrow); then team-a and team-b interleave in train (b2 of priority 5
 * goes first), team-c waits in infer. */
static queue_t *waiting(webui_t *ui)
{
	queue_t *q = cluster();

	add_wl(q, "big", "team-a", 10, 1, 4);
	add_wl(q, "cbig", "team-c", 10, 2, 4);
	cycle(ui, q, 500);
	add_wl(q, "a1", "team-a", 0, 1000, 1);
	add_wl(q, "b1", "team-b", 0, 1001, 1);
	add_wl(q, "a2", "team-a", 0, 1002, 2);
	add_wl(q, "b2", "team-b", 5, 1003, 1);
	add_wl(q, "a3", "team-a", 0, 1004, 1);
	add_wl(q, "c1", "team-c", 0, 1005, 1);
	cycle(ui, q, 2000);
	return q;
}

/* The names of a summary's items, comma-joined, into buf. */
static const char *names(json_t *o, char *buf, size_t cap)
{
	size_t i, len = 0;
	json_t *e;

	buf[0] = '\0';
	json_array_foreach(json_object_get(o, "items"), i, e) len +=
	    (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "",
			     str(json_object_get(e, "metadata"), "name"));
	return buf;
}

/* Kueue's shape: a PendingWorkloadsSummary per ClusterQueue, positions
 * from 0 in the ClusterQueue's admission order (priority first, then
 * creation) and among each LocalQueue's, with gpuq's ClusterQueue, reason,
 * sentence and total; the same order the core's own listing gives. */
static void vis_cluster_queue(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = waiting(ui);
	queue_wl_t ids[16];
	size_t n;
	unsigned status;
	char buf[256];
	json_t *o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", NULL, &ADMIN, &status);
	json_t *e;

	(void)state;
	assert_int_equal(status, 200);
	assert_string_equal(str(o, "kind"), "PendingWorkloadsSummary");
	assert_string_equal(str(o, "apiVersion"), "visibility.gpuq.dev/v1beta1");
	assert_int_equal(num(o, "total"), 5);
	assert_string_equal(names(o, buf, sizeof(buf)), "b2,a1,b1,a2,a3");
	/* the core's admission order */
	n = queue_cq_workloads(q, 0, QUEUE_WL_PENDING, ids, 16);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++) {
		queue_workload_view_t v;
		assert_int_equal(queue_workload_view(q, ids[i], &v), GPUQ_OK);
		e = json_array_get(json_object_get(o, "items"), i);
		assert_string_equal(str(json_object_get(e, "metadata"), "name"), v.name);
		assert_int_equal(num(e, "positionInClusterQueue"), (long long)i);
	}
	e = json_array_get(json_object_get(o, "items"), 3); /* a2: team-a's second */
	assert_int_equal(num(e, "positionInLocalQueue"), 1);
	assert_string_equal(str(e, "localQueueName"), "default");
	assert_string_equal(str(e, "clusterQueueName"), "train");
	assert_string_equal(str(json_object_get(e, "metadata"), "namespace"), "team-a");
	assert_string_equal(str(json_object_get(e, "metadata"), "uid"), "a2");
	assert_string_equal(str(json_object_get(e, "metadata"), "creationTimestamp"),
			    "1970-01-01T00:00:01Z");
	assert_int_equal(num(e, "priority"), 0);
	assert_string_equal(str(e, "reason"), "Quota");
	assert_non_null(strstr(str(e, "message"), "needs 2 nvidia.com/gpu on flavor h100, 0 free"));
	assert_null(json_object_get(e, "predictedStartTime")); /* no prediction yet */
	assert_int_equal(num(json_array_get(json_object_get(o, "items"), 0), "priority"), 5);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* Per LocalQueue: only its workloads, positionInLocalQueue from 0 and
 * positionInClusterQueue as in the ClusterQueue's view; each one's
 * LocalQueue position is the one the core's explanation gives (1-based
 * there). */
static void vis_local_queue(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = waiting(ui);
	unsigned status;
	char buf[256], want[64], why[512];
	size_t i;
	json_t *o = vis(ui, q, VIS "/namespaces/team-a/localqueues/default/pendingworkloads", NULL,
			&ADMIN, &status),
	       *e;

	(void)state;
	assert_int_equal(status, 200);
	assert_int_equal(num(o, "total"), 3);
	assert_string_equal(names(o, buf, sizeof(buf)), "a1,a2,a3");
	json_array_foreach(json_object_get(o, "items"), i, e)
	{
		const char *name = str(json_object_get(e, "metadata"), "name");
		assert_int_equal(num(e, "positionInLocalQueue"), (long long)i);
		assert_int_equal(queue_workload_explain(q, name, why, sizeof(why)), GPUQ_OK);
		snprintf(want, sizeof(want), "position %zu of 3 in team-a/default:", i + 1);
		assert_non_null(strstr(why, want));
	}
	assert_int_equal(
	    num(json_array_get(json_object_get(o, "items"), 0), "positionInClusterQueue"), 1);
	assert_int_equal(
	    num(json_array_get(json_object_get(o, "items"), 2), "positionInClusterQueue"), 4);
	json_decref(o);
	o = vis(ui, q, VIS "/namespaces/team-c/localqueues/default/pendingworkloads", NULL, &ADMIN,
		&status);
	assert_string_equal(names(o, buf, sizeof(buf)), "c1");
	assert_string_equal(str(json_array_get(json_object_get(o, "items"), 0), "clusterQueueName"),
			    "infer");
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* limit and offset as Kueue reads them: offset counts from 0 in the view
 * (the ClusterQueue's, or the LocalQueue's), limit 0 is the default, past
 * the end is an empty list with the total; a value that is not a whole
 * number is a 400 Status naming it; limit above the cap is the cap. */
static void vis_limit_offset(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = waiting(ui);
	unsigned status;
	char buf[256], why[128];
	int64_t limit, offset;
	json_t *o;

	(void)state;
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", "limit=2&offset=1", &ADMIN,
		&status);
	assert_string_equal(names(o, buf, sizeof(buf)), "a1,b1");
	assert_int_equal(
	    num(json_array_get(json_object_get(o, "items"), 0), "positionInClusterQueue"), 1);
	assert_int_equal(num(o, "total"), 5);
	json_decref(o);
	o = vis(ui, q, VIS "/namespaces/team-a/localqueues/default/pendingworkloads",
		"offset=1&limit=1&timeout=32s", &ADMIN, &status);
	assert_string_equal(names(o, buf, sizeof(buf)), "a2");
	assert_int_equal(
	    num(json_array_get(json_object_get(o, "items"), 0), "positionInLocalQueue"), 1);
	json_decref(o);
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", "offset=9", &ADMIN, &status);
	assert_int_equal(status, 200);
	assert_int_equal(json_array_size(json_object_get(o, "items")), 0);
	assert_int_equal(num(o, "total"), 5);
	json_decref(o);
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", "limit=0", &ADMIN, &status);
	assert_int_equal(json_array_size(json_object_get(o, "items")), 5);
	json_decref(o);
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", "limit=-1", &ADMIN, &status);
	assert_int_equal(status, 400);
	assert_string_equal(str(o, "kind"), "Status");
	assert_string_equal(str(o, "reason"), "BadRequest");
	assert_non_null(strstr(str(o, "message"), "limit \"-1\""));
	json_decref(o);
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", "offset=x", &ADMIN, &status);
	assert_int_equal(status, 400);
	json_decref(o);
	assert_int_equal(webui_vis_options("limit=999999999", &limit, &offset, why, sizeof(why)),
			 GPUQ_OK);
	assert_int_equal(limit, WEBUI_VIS_LIMIT_MAX);
	assert_int_equal(webui_vis_options(NULL, &limit, &offset, why, sizeof(why)), GPUQ_OK);
	assert_int_equal(limit, WEBUI_VIS_LIMIT_DEFAULT);
	assert_int_equal(offset, 0);
	assert_int_equal(webui_vis_options("limit=", &limit, &offset, why, sizeof(why)),
			 GPUQ_EINVAL);
	queue_destroy(q);
	webui_destroy(ui);
}

/* 12,000 waiting: an answer holds at most WEBUI_VIS_LIMIT_MAX, the rest is
 * reached with offset; the last one's position is 11,999. */
static void vis_capped(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = cluster();
	unsigned status;
	char uid[32];
	json_t *o, *items;

	(void)state;
	add_wl(q, "big", "team-a", 10, 1, 8);
	for (int i = 0; i < 12000; i++) {
		snprintf(uid, sizeof(uid), "w%05d", i);
		add_wl(q, uid, "team-b", 0, 1000 + i, 1);
	}
	cycle(ui, q, 5000);
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", "limit=20000", &ADMIN, &status);
	items = json_object_get(o, "items");
	assert_int_equal(json_array_size(items), WEBUI_VIS_LIMIT_MAX);
	assert_int_equal(num(o, "total"), 12000);
	json_decref(o);
	o = vis(ui, q, VIS "/namespaces/team-b/localqueues/default/pendingworkloads",
		"offset=11999", &ADMIN, &status);
	items = json_object_get(o, "items");
	assert_int_equal(json_array_size(items), 1);
	assert_string_equal(str(json_object_get(json_array_get(items, 0), "metadata"), "name"),
			    "w11999");
	assert_int_equal(num(json_array_get(items, 0), "positionInClusterQueue"), 11999);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* The uid and name of every workload ids[0..n) of s's visibility list,
 * "uid/name" comma-joined, into buf. */
static const char *vis_names(const webui_snap_t *s, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->n_vis && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s/%s", i ? "," : "",
					s->vis[i].uid, s->vis[i].name);
	return buf;
}

/* A one-pod workload of 1 GPU in team-b whose uid and name differ. */
static void add_named(queue_t *q, const char *uid, const char *name, int64_t created)
{
	add_wl_named(q, uid, name, "team-b", 0, created, 1);
}

/* The visibility list's uids and names are kept in ui's pool across
 * snapshots: a workload deleted and another made in its slot (the same id)
 * is listed by its own names; a snapshot built before keeps the names it
 * listed while the pool moves on (a pool that holds mostly the names of
 * workloads gone is left to the snapshots using it); another core's
 * workloads are never taken for the first's. */
static void vis_names_follow_the_core(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = waiting(ui), *q2;
	webui_snap_t *s1, *s2, *s3;
	queue_wl_t a1, z9;
	ws_pool_t *pool;
	char buf[1024], uid[96], name[96];

	(void)state;
	assert_int_equal(webui_snap_build(ui, q, 5000, &s1), GPUQ_OK);
	assert_string_equal(vis_names(s1, buf, sizeof(buf)), "b2/b2,a1/a1,b1/b1,a2/a2,a3/a3,c1/c1");
	/* a1 deleted, z9 made in its slot: listed as z9, where a1 was */
	assert_int_equal(queue_workload_find(q, "a1", &a1), GPUQ_OK);
	assert_int_equal(queue_workload_delete(q, "a1", 3000), GPUQ_OK);
	add_named(q, "z9", "zed-nine", 1000);
	assert_int_equal(queue_workload_find(q, "z9", &z9), GPUQ_OK);
	assert_int_equal(z9, a1);
	assert_int_equal(webui_snap_build(ui, q, 5000, &s2), GPUQ_OK);
	assert_string_equal(vis_names(s2, buf, sizeof(buf)),
			    "b2/b2,z9/zed-nine,b1/b1,a2/a2,a3/a3,c1/c1");
	assert_ptr_equal(s1->pool, s2->pool); /* the others' names copied once */
	assert_ptr_equal(s1->vis[2].uid, s2->vis[2].uid);
	/* 12,000 workloads of long names (over 1 MiB) listed, then deleted: the next list
	 * starts a new pool; s1 and s2 still read theirs */
	for (int i = 0; i < 12000; i++) {
		snprintf(uid, sizeof(uid), "%s-%05d", "0123456789abcdef0123456789abcdef", i);
		snprintf(
		    name, sizeof(name), "%s-%05d",
		    "a-rather-long-job-name-for-the-pool-of-names-kept-across-snapshots-0123456789",
		    i);
		add_named(q, uid, name, 2000 + i);
	}
	assert_int_equal(webui_snap_build(ui, q, 5000, &s3), GPUQ_OK);
	assert_int_equal(s3->n_vis, 12006);
	webui_snap_unref(s3);
	pool = ui->pool;
	for (int i = 0; i < 12000; i++) {
		snprintf(uid, sizeof(uid), "%s-%05d", "0123456789abcdef0123456789abcdef", i);
		assert_int_equal(queue_workload_delete(q, uid, 4000), GPUQ_OK);
	}
	assert_int_equal(webui_snap_build(ui, q, 5000, &s3), GPUQ_OK); /* learns the live size */
	assert_ptr_equal(s3->pool, pool);
	webui_snap_unref(s3);
	assert_int_equal(webui_snap_build(ui, q, 5000, &s3), GPUQ_OK);
	assert_ptr_not_equal(ui->pool, pool);
	assert_ptr_equal(s3->pool, ui->pool);
	assert_string_equal(vis_names(s3, buf, sizeof(buf)),
			    "b2/b2,z9/zed-nine,b1/b1,a2/a2,a3/a3,c1/c1");
	assert_string_equal(vis_names(s1, buf, sizeof(buf)), "b2/b2,a1/a1,b1/b1,a2/a2,a3/a3,c1/c1");
	assert_string_equal(vis_names(s2, buf, sizeof(buf)),
			    "b2/b2,z9/zed-nine,b1/b1,a2/a2,a3/a3,c1/c1");
	webui_snap_unref(s1);
	webui_snap_unref(s2);
	webui_snap_unref(s3);
	/* another core: its own names, whatever ids the first gave */
	q2 = cluster();
	add_named(q2, "other-1", "first-of-another-core", 1000);
	assert_int_equal(webui_snap_build(ui, q2, 5000, &s3), GPUQ_OK);
	assert_string_equal(vis_names(s3, buf, sizeof(buf)), "other-1/first-of-another-core");
	webui_snap_unref(s3);
	queue_destroy(q2);
	queue_destroy(q);
	webui_destroy(ui);
}

/* Who reads what: the ClusterQueue view needs cluster access; a tenant
 * reads its namespace's LocalQueues only; unknown names and paths are 404
 * Statuses; the discovery document lists the two resources. */
static void vis_access(void **state)
{
	webui_t *ui = ui_none();
	queue_t *q = waiting(ui);
	webui_access_t tenant = {false, "team-b"};
	unsigned status;
	json_t *o;

	(void)state;
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads", NULL, &tenant, &status);
	assert_int_equal(status, 403);
	assert_string_equal(str(o, "reason"), "Forbidden");
	json_decref(o);
	o = vis(ui, q, VIS "/namespaces/team-b/localqueues/default/pendingworkloads", NULL, &tenant,
		&status);
	assert_int_equal(status, 200);
	assert_int_equal(num(o, "total"), 2);
	json_decref(o);
	o = vis(ui, q, VIS "/namespaces/team-a/localqueues/default/pendingworkloads", NULL, &tenant,
		&status);
	assert_int_equal(status, 403);
	json_decref(o);
	o = vis(ui, q, VIS "/clusterqueues/nope/pendingworkloads", NULL, &ADMIN, &status);
	assert_int_equal(status, 404);
	assert_string_equal(str(o, "reason"), "NotFound");
	json_decref(o);
	o = vis(ui, q, VIS "/namespaces/team-b/localqueues/nope/pendingworkloads", NULL, &tenant,
		&status);
	assert_int_equal(status, 404);
	json_decref(o);
	o = vis(ui, q, VIS "/clusterqueues/train/pendingworkloads/", NULL, &ADMIN, &status);
	assert_int_equal(status, 404);
	json_decref(o);
	o = vis(ui, q, VIS "/clusterqueues/train", NULL, &ADMIN, &status);
	assert_int_equal(status, 404);
	json_decref(o);
	o = vis(ui, q, VIS, NULL, &tenant, &status);
	assert_int_equal(status, 200);
	assert_string_equal(str(o, "kind"), "APIResourceList");
	assert_string_equal(str(o, "groupVersion"), "visibility.gpuq.dev/v1beta1");
	assert_int_equal(json_array_size(json_object_get(o, "resources")), 2);
	json_decref(o);
	queue_destroy(q);
	webui_destroy(ui);
}

/* Through the app: the visibility API's refusals are Kubernetes Statuses;
 * the routes turned off answer 404; the namespace scope of a LocalQueue
 * path is its namespace. */
static void vis_app_routes(void **state)
{
	webui_t *ui = NULL;
	queue_t *q;
	const char *ns;
	size_t n;
	http_app_request_t rq = {VIS "/namespaces/team-b/localqueues/default/pendingworkloads",
				 NULL, false, "limit=1"};
	http_app_reply_t out = {0};
	json_t *o;

	(void)state;
	webui_path_scope(rq.path, &ns, &n);
	assert_int_equal(n, 6);
	assert_memory_equal(ns, "team-b", 6);
	assert_int_equal(webui_create(WEBUI_AUTH_REVIEW, NULL, &ui, NULL), GPUQ_OK);
	q = waiting(ui);
	webui_leader_set(ui, true);
	assert_int_equal(webui_publish(ui, q, 5000), GPUQ_OK);
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), GPUQ_OK);
	assert_int_equal(out.status, 401);
	o = json_loadb(out.body, out.len, 0, NULL);
	assert_string_equal(str(o, "kind"), "Status");
	json_decref(o);
	if (out.body_owned)
		free((void *)out.body);
	wa_cache_put(ui, "tenant", "", WA_FORBIDDEN, "bob", gpuq_mono_ms());
	wa_cache_put(ui, "tenant", "team-b", WA_ALLOWED, "bob", gpuq_mono_ms());
	rq.authorization = "Bearer tenant";
	out = (http_app_reply_t){0};
	/* the snapshot published before any visibility request lists no
	 * pending workload one by one (their reasons cost the controller's
	 * thread): the request waits for the next, which does */
	assert_false(published_snap(ui)->has_vis);
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), HTTP_APP_SLOW);
	assert_int_equal(webui_publish(ui, q, 5500), GPUQ_OK);
	assert_true(published_snap(ui)->has_vis);
	ws_wait_fresh(ui, true, gpuq_mono_ms() + 1000); /* the worker: it has come */
	assert_int_equal(webui_app_handle(ui, &rq, true, &out), GPUQ_OK);
	assert_int_equal(out.status, 200);
	o = json_loadb(out.body, out.len, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(o, "items")), 1); /* limit=1 */
	assert_int_equal(num(o, "total"), 2);
	json_decref(o);
	free((void *)out.body);
	/* the visibility API alone (gpuq serve without --ui) */
	webui_routes_set(ui, false, true);
	rq.path = "/api/v1/namespaces/team-b";
	out = (http_app_reply_t){0};
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), GPUQ_OK);
	assert_int_equal(out.status, 404);
	rq.path = "/ui/";
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), GPUQ_OK);
	assert_int_equal(out.status, 404);
	/* and the pages alone */
	webui_routes_set(ui, true, false);
	rq.path = VIS "/namespaces/team-b/localqueues/default/pendingworkloads";
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), GPUQ_OK);
	assert_int_equal(out.status, 404);
	queue_destroy(q);
	webui_destroy(ui);
}

static void embedded_files(void **state)
{
	webui_t *ui = ui_none();
	http_app_request_t rq = {"/ui/", NULL, false, NULL};
	http_app_reply_t out = {0};
	int rc;

	(void)state;
	assert_int_equal(webui_app_handle(ui, &rq, false, &out), GPUQ_OK);
	assert_int_equal(out.status, 200);
	assert_string_equal(out.content_type, "text/html; charset=utf-8");
	assert_non_null(memmem(out.body, out.len, "/ui/app.js", 10));
	/* no inline script or style: the CSP allows none */
	assert_null(memmem(out.body, out.len, "<script>", 8));
	assert_null(memmem(out.body, out.len, "style=", 6));
	assert_int_equal(ask(ui, "/ui/app.js", NULL, false, &rc), 200);
	assert_int_equal(ask(ui, "/ui/app.css", NULL, false, &rc), 200);
	assert_int_equal(ask(ui, "/ui", NULL, false, &rc), 301);
	assert_int_equal(ask(ui, "/ui/nope.js", NULL, false, &rc), 404);
	/* no auth, no snapshot yet */
	assert_int_equal(ask(ui, "/api/v1/cluster", NULL, false, &rc), 503);
	webui_destroy(ui);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(cluster_numbers),
	    cmocka_unit_test(cluster_queue_page),
	    cmocka_unit_test(preemption_events),
	    cmocka_unit_test(tenant_sees_its_namespace_only),
	    cmocka_unit_test(lists_capped),
	    cmocka_unit_test(review_bodies_and_replies),
	    cmocka_unit_test(decision_cache),
	    cmocka_unit_test(app_access),
	    cmocka_unit_test(idle_builds_nothing),
	    cmocka_unit_test(old_snapshot_waits_for_the_next),
	    cmocka_unit_test(usage_rows),
	    cmocka_unit_test(usage_per_namespace),
	    cmocka_unit_test(embedded_files),
	    cmocka_unit_test(vis_cluster_queue),
	    cmocka_unit_test(vis_local_queue),
	    cmocka_unit_test(vis_limit_offset),
	    cmocka_unit_test(vis_capped),
	    cmocka_unit_test(vis_names_follow_the_core),
	    cmocka_unit_test(vis_access),
	    cmocka_unit_test(vis_app_routes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

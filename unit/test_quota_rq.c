/* Unit tests for the quota module's ResourceQuota rules (split from
 * test_quota.c): the apiserver's quota check and its wording, a Job's
 * total, every quota of a namespace, constraints, and quota scopes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "quota/quota.h"
#include "unit/quota_fixtures.h"

/* ---- ResourceQuota ---- */

static quota_resourcequota_t RQ(const char *name, const char *hard, const char *used)
{
	quota_resourcequota_t q;

	memset(&q, 0, sizeof(q));
	gpuq_strlcpy(q.name, name, sizeof(q.name));
	gpuq_strlcpy(q.namespace_, "team-a", sizeof(q.namespace_));
	q.hard = L(hard);
	q.used = L(used);
	return q;
}

static const struct {
	const char *what;
	const char *hard, *used; /* one quota "gpu-quota" */
	const char *hard2;	 /* a second quota "second" (NULL: none), used zero */
	const char *req, *lim;
	int64_t pods;
	unsigned flags;
	int rc;
	const char *msg;
} rq_cases[] = {
    {"GPU over quota", "requests.nvidia.com/gpu=4", "requests.nvidia.com/gpu=3", NULL,
     "nvidia.com/gpu=2", "nvidia.com/gpu=2", 1, 0, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=2, used: "
     "requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=4"},
    {"exactly full fits", "requests.nvidia.com/gpu=4", "requests.nvidia.com/gpu=2", NULL,
     "nvidia.com/gpu=2", "", 1, 0, GPUQ_OK, ""},
    {"several resources, sorted, canonical",
     "requests.nvidia.com/gpu=1,requests.cpu=2,limits.memory=1Gi,pods=100", "requests.cpu=1500m",
     NULL, "cpu=1,nvidia.com/gpu=2,memory=1Gi", "memory=2048Mi", 1, 0, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: limits.memory=2Gi,requests.cpu=1,"
     "requests.nvidia.com/gpu=2, used: limits.memory=0,requests.cpu=1500m,"
     "requests.nvidia.com/gpu=0, limited: limits.memory=1Gi,requests.cpu=2,"
     "requests.nvidia.com/gpu=1"},
    {"bare cpu and memory mean requests", "cpu=1,memory=1Gi", "", NULL, "cpu=2,memory=512Mi",
     "cpu=4,memory=8Gi", 1, 0, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: cpu=2, used: cpu=0, limited: cpu=1"},
    {"limits.<extended> and bare extended names are not charged",
     "limits.nvidia.com/gpu=1,nvidia.com/gpu=1,services=1", "", NULL, "nvidia.com/gpu=8",
     "nvidia.com/gpu=8", 1, 0, GPUQ_OK, ""},
    {"hugepages and ephemeral storage", "requests.hugepages-2Mi=1Gi,limits.ephemeral-storage=10Gi",
     "", NULL, "hugepages-2Mi=2Gi", "ephemeral-storage=20Gi", 1, 0, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: limits.ephemeral-storage=20Gi,"
     "requests.hugepages-2Mi=2Gi, used: limits.ephemeral-storage=0,requests.hugepages-2Mi=0, "
     "limited: limits.ephemeral-storage=10Gi,requests.hugepages-2Mi=1Gi"},
    {"pod count", "count/pods=10", "count/pods=10", NULL, "cpu=1", "", 1, 0, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: count/pods=1, used: count/pods=10, limited: "
     "count/pods=10"},
    {"pods 0 leaves pod counts alone", "pods=10", "pods=10", NULL, "cpu=1", "", 0, 0, GPUQ_OK, ""},
    {"a resource the workload does not use is not checked",
     "requests.nvidia.com/gpu=0,requests.cpu=10", "requests.nvidia.com/gpu=5", NULL, "cpu=1", "", 1,
     0, GPUQ_OK, ""},
    {"an explicit zero is checked, as the apiserver does", "requests.nvidia.com/gpu=0",
     "requests.nvidia.com/gpu=1", NULL, "nvidia.com/gpu=0", "", 1, 0, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=0, used: "
     "requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=0"},
    {"ignore used: fits alone", "requests.nvidia.com/gpu=4", "requests.nvidia.com/gpu=3", NULL,
     "nvidia.com/gpu=4", "", 1, QUOTA_RQ_IGNORE_USED, GPUQ_OK, ""},
    {"ignore used: can never fit", "requests.nvidia.com/gpu=4", "requests.nvidia.com/gpu=3", NULL,
     "nvidia.com/gpu=8", "", 4, QUOTA_RQ_IGNORE_USED, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=8, used: "
     "requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=4"},
    {"the first exceeded quota in order is named", "requests.nvidia.com/gpu=10", "",
     "requests.nvidia.com/gpu=1", "nvidia.com/gpu=2", "", 1, 0, GPUQ_EDENIED,
     "exceeded quota: second, requested: requests.nvidia.com/gpu=2, used: "
     "requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1"},
    {"used plus request past 2^63-1 is exceeded", "requests.cpu=9223372036854775807",
     "requests.cpu=9223372036854775807", NULL, "cpu=1", "", 1, 0, GPUQ_EDENIED,
     "exceeded quota: gpu-quota, requested: requests.cpu=1, used: "
     "requests.cpu=9223372036854775807, limited: requests.cpu=9223372036854775807"},
};

static void resourcequota_check(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rq_cases) / sizeof(rq_cases[0]); i++) {
		quota_resourcequota_t q1 = RQ("gpu-quota", rq_cases[i].hard, rq_cases[i].used);
		quota_resourcequota_t q2 =
		    RQ("second", rq_cases[i].hard2 ? rq_cases[i].hard2 : "", "");
		const quota_resourcequota_t *qs[2] = {&q1, &q2};
		quota_reslist_t req = L(rq_cases[i].req), lim = L(rq_cases[i].lim);
		gpuq_diag_t d = {""};
		int rc;

		print_message("# case: %s\n", rq_cases[i].what);
		rc = quota_resourcequota_check(qs, rq_cases[i].hard2 ? 2 : 1, NULL, &req, &lim,
					       rq_cases[i].pods, rq_cases[i].flags, &d);
		assert_int_equal(rc, rq_cases[i].rc);
		assert_string_equal(d.msg, rq_cases[i].msg);
	}
}

/* Every quota given is checked, however many (the controller once looked
 * at 8 per namespace while the webhook looked at all): 20 quotas, only the
 * last binding; and each quota's usage taken from used_now when given (the
 * controller's watch), its own status.used otherwise. */
static void resourcequota_check_every_quota(void **state)
{
	quota_resourcequota_t q[20];
	const quota_resourcequota_t *qs[20];
	quota_reslist_t now[20];
	const quota_reslist_t *used_now[20];
	quota_reslist_t req = L("nvidia.com/gpu=2"), lim = req;
	gpuq_diag_t d = {""};

	(void)state;
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof(name), "q%02d", i);
		q[i] =
		    RQ(name, i < 19 ? "requests.nvidia.com/gpu=100" : "requests.nvidia.com/gpu=4",
		       "requests.nvidia.com/gpu=1");
		qs[i] = &q[i];
		now[i] = L(i < 19 ? "requests.nvidia.com/gpu=1" : "requests.nvidia.com/gpu=3");
		used_now[i] = &now[i];
	}
	/* own status.used: 1 + 2 fits the last one's 4 */
	assert_int_equal(quota_resourcequota_check(qs, 20, NULL, &req, &lim, 1, 0, &d), GPUQ_OK);
	assert_int_equal(quota_resourcequota_check_used(qs, NULL, 20, NULL, &req, &lim, 1, 0, &d),
			 GPUQ_OK);
	/* the usage seen since: 3 + 2 does not, and the 20th quota says so */
	assert_int_equal(
	    quota_resourcequota_check_used(qs, used_now, 20, NULL, &req, &lim, 1, 0, &d),
	    GPUQ_EDENIED);
	assert_string_equal(d.msg, "exceeded quota: q19, requested: requests.nvidia.com/gpu=2, "
				   "used: requests.nvidia.com/gpu=3, limited: "
				   "requests.nvidia.com/gpu=4");
	/* a NULL entry: that quota's own status.used */
	used_now[19] = NULL;
	assert_int_equal(
	    quota_resourcequota_check_used(qs, used_now, 20, NULL, &req, &lim, 1, 0, &d), GPUQ_OK);
}

/* A Job: per-pod requests times parallelism, checked as a whole. */
static void resourcequota_job_total(void **state)
{
	static const cspec_t spec[] = {
	    {"s", SIDE, "cpu=100m", ""}, {"train", APP, "", "nvidia.com/gpu=2,cpu=4"}, {0}};
	quota_container_t store[MAXC];
	quota_pod_t p = P(store, spec, "");
	quota_resourcequota_t q = RQ("team", "requests.nvidia.com/gpu=6,limits.cpu=100", "");
	const quota_resourcequota_t *qs = &q;
	quota_reslist_t req, lim;
	gpuq_diag_t d = {""};

	(void)state;
	assert_int_equal(quota_pod_requests(&p, &req), GPUQ_OK);
	assert_int_equal(quota_pod_limits(&p, &lim), GPUQ_OK);
	assert_int_equal(quota_resourcequota_check(&qs, 1, NULL, &req, &lim, 1, 0, &d), GPUQ_OK);
	assert_int_equal(quota_reslist_scale(&req, 4), GPUQ_OK);
	assert_int_equal(quota_reslist_scale(&lim, 4), GPUQ_OK);
	assert_int_equal(
	    quota_resourcequota_check(&qs, 1, NULL, &req, &lim, 4, QUOTA_RQ_IGNORE_USED, &d),
	    GPUQ_EDENIED);
	assert_string_equal(d.msg, "exceeded quota: team, requested: requests.nvidia.com/gpu=8, "
				   "used: requests.nvidia.com/gpu=0, limited: "
				   "requests.nvidia.com/gpu=6");
}

static const struct {
	const char *what;
	const char *hard;
	cspec_t c[MAXC];
	int rc;
	const char *msg;
} rqc_cases[] = {
    {"missing requests and limits named per container, sorted",
     "requests.cpu=10,limits.memory=10Gi,requests.nvidia.com/gpu=4",
     {{"b", APP, "cpu=1", ""}, {"a", APP, "", ""}, {"c", INIT, "", "cpu=1"}, {0}},
     GPUQ_EDENIED,
     "failed quota: q: must specify limits.memory for: a,b,c; requests.cpu for: a"},
    {"bare cpu requires a cpu request",
     "cpu=10",
     {{"a", APP, "cpu=1", ""}, {"side", SIDE, "memory=1Gi", ""}, {0}},
     GPUQ_EDENIED,
     "failed quota: q: must specify cpu for: side"},
    {"all set",
     "requests.cpu=10,limits.memory=10Gi",
     {{"a", APP, "cpu=1", "memory=1Gi"}, {0}},
     GPUQ_OK,
     ""},
    {"extended resources impose no per-container rule",
     "requests.nvidia.com/gpu=4",
     {{"a", APP, "", ""}, {0}},
     GPUQ_OK,
     ""},
};

static void resourcequota_constraints(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rqc_cases) / sizeof(rqc_cases[0]); i++) {
		quota_resourcequota_t q = RQ("q", rqc_cases[i].hard, "");
		const quota_resourcequota_t *qs = &q;
		quota_container_t store[MAXC];
		quota_pod_t p = P(store, rqc_cases[i].c, "");
		gpuq_diag_t d = {""};

		print_message("# case: %s\n", rqc_cases[i].what);
		assert_int_equal(quota_resourcequota_constraints(&qs, 1, &p, &d), rqc_cases[i].rc);
		assert_string_equal(d.msg, rqc_cases[i].msg);
	}
}

/* Which pods a scoped ResourceQuota counts (quota_resourcequota_applies):
 * every scope must hold; PriorityClass by operator, a pod of no class in
 * NotIn and DoesNotExist; a scope of other objects counts no pod. Then the
 * check itself skips a quota that does not count the workload's pods. */
static void scoped_quotas(void **state)
{
	static const char *const high[] = {"high"};
	static const struct {
		quota_scope_t scope;
		const char *cls; /* the pod's class, NULL: none */
		bool terminating, best_effort;
		bool want;
	} t[] = {
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_IN, high, 1}, "high", false, false, true},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_IN, high, 1}, "low", false, false, false},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_IN, high, 1}, NULL, false, false, false},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_NOT_IN, high, 1}, "low", false, false, true},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_NOT_IN, high, 1}, NULL, false, false, true},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_NOT_IN, high, 1},
	     "high",
	     false,
	     false,
	     false},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_EXISTS, NULL, 0}, "low", false, false, true},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_EXISTS, NULL, 0}, NULL, false, false, false},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_DOES_NOT_EXIST, NULL, 0},
	     NULL,
	     false,
	     false,
	     true},
	    {{QUOTA_SCOPE_PRIORITY_CLASS, QUOTA_SCOPE_DOES_NOT_EXIST, NULL, 0},
	     "x",
	     false,
	     false,
	     false},
	    {{QUOTA_SCOPE_TERMINATING, QUOTA_SCOPE_EXISTS, NULL, 0}, NULL, true, false, true},
	    {{QUOTA_SCOPE_TERMINATING, QUOTA_SCOPE_EXISTS, NULL, 0}, NULL, false, false, false},
	    {{QUOTA_SCOPE_NOT_TERMINATING, QUOTA_SCOPE_EXISTS, NULL, 0}, NULL, false, false, true},
	    {{QUOTA_SCOPE_BEST_EFFORT, QUOTA_SCOPE_EXISTS, NULL, 0}, NULL, false, true, true},
	    {{QUOTA_SCOPE_NOT_BEST_EFFORT, QUOTA_SCOPE_EXISTS, NULL, 0}, NULL, false, true, false},
	    {{QUOTA_SCOPE_OTHER, QUOTA_SCOPE_EXISTS, NULL, 0}, "high", false, false, false},
	};
	quota_resourcequota_t rq = {.namespace_ = "a", .name = "only-high"};
	const quota_resourcequota_t *qs[] = {&rq};
	quota_reslist_t req = {0};
	quota_qty_t eight = quota_qty_from_units(8, QUOTA_QTY_DECIMAL_SI);
	quota_qty_t zero = quota_qty_from_units(0, QUOTA_QTY_DECIMAL_SI);
	gpuq_diag_t d = {{0}};
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		quota_pod_scope_t pod = {t[i].cls, t[i].terminating, t[i].best_effort, false};

		rq.scopes = &t[i].scope;
		rq.n_scopes = 1;
		if (quota_resourcequota_applies(&rq, &pod) != t[i].want)
			fail_msg("case %zu: applies %d, want %d", i, !t[i].want, t[i].want);
	}
	/* pods: 0 for class high, as a namespace keeps a class from its pods */
	rq.scopes = &t[0].scope;
	assert_int_equal(quota_reslist_set(&rq.hard, "pods", &zero), GPUQ_OK);
	assert_int_equal(quota_reslist_set(&req, "nvidia.com/gpu", &eight), GPUQ_OK);
	{
		quota_pod_scope_t h = {"high", false, false, false},
				  l = {"low", false, false, false};

		assert_int_equal(
		    quota_resourcequota_check(qs, 1, &l, &req, &req, 1, QUOTA_RQ_IGNORE_USED, &d),
		    GPUQ_OK);
		assert_int_equal(
		    quota_resourcequota_check(qs, 1, &h, &req, &req, 1, QUOTA_RQ_IGNORE_USED, &d),
		    GPUQ_EDENIED);
		assert_string_equal(d.msg, "exceeded quota: only-high, requested: pods=1, used: "
					   "pods=0, limited: pods=0");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(resourcequota_check),
	    cmocka_unit_test(resourcequota_check_every_quota),
	    cmocka_unit_test(resourcequota_job_total),
	    cmocka_unit_test(resourcequota_constraints),
	    cmocka_unit_test(scoped_quotas),
	};

	return cmocka_run_group_tests_name("quota_resourcequota", tests, NULL, NULL);
}

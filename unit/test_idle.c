/* Unit tests for idle: the Prometheus text reader (a table of good and bad
 * bodies, the caps) and the accumulator (intervals, the threshold, the gap
 * cap, missing labels, NaN, duplicates, time going back, the caps, order
 * independence). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idle/idle.h"

#define M IDLE_METRIC_DEFAULT

/* What dcgm-exporter writes in Kubernetes mode, abridged: two GPUs given
 * to pods, one free, and another field. */
static const char dcgm_body[] =
    "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n"
    "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
    "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"H100\","
    "Hostname=\"n1\",container=\"c\",namespace=\"team-a\",pod=\"p\"} 1980\n"
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"00000000:01:00.0\","
    "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"n1\",container=\"train\","
    "namespace=\"team-a\",pod=\"llama-0\"} 3\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"H100\","
    "Hostname=\"n1\",container=\"\",namespace=\"\",pod=\"\"} 0\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-c\",device=\"nvidia2\",modelName=\"H100\","
    "Hostname=\"n1\",container=\"srv\",namespace=\"team-b\",pod=\"serve-1\"} 87\n";

static void parse_dcgm(void **st)
{
	idle_sample_t *s;
	size_t n;
	gpuq_diag_t d = {{0}};

	(void)st;
	assert_int_equal(idle_prom_parse(dcgm_body, strlen(dcgm_body), M, 100, &s, &n, &d), 0);
	assert_int_equal(n, 3);
	assert_string_equal(s[0].namespace_, "team-a");
	assert_string_equal(s[0].pod, "llama-0");
	assert_string_equal(s[0].container, "train");
	assert_string_equal(s[0].local_queue, "");
	assert_string_equal(s[0].device, "n1/GPU-a/0/");
	assert_true(s[0].value == 3);
	assert_int_equal(s[0].line, 6);
	assert_string_equal(s[1].pod, "");
	assert_string_equal(s[2].device, "n1/GPU-c/2/");
	assert_true(s[2].value == 87);
	free(s);
}

/* /federate output: exported_ labels, instance, timestamps, untyped. */
static void parse_federate(void **st)
{
	static const char body[] =
	    "# TYPE DCGM_FI_DEV_GPU_UTIL untyped\n"
	    "DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=\"3\",UUID=\"GPU-x\",exported_namespace=\"ns\","
	    "exported_pod=\"p\",exported_container=\"c\",gpu=\"0\",instance=\"10.0.0.5:9400\","
	    "job=\"dcgm\",gpuq_dev_queue_name=\"lq\",namespace=\"gpu-operator\",} 12.5 "
	    "1700000000000\r\n"
	    "DCGM_FI_DEV_GPU_UTIL{pod=\"q\",namespace=\"n2\",kueue_x_k8s_io_queue_name=\"kq\"}"
	    "\tNaN\n"
	    "  DCGM_FI_DEV_GPU_UTIL{pod=\"r\",namespace=\"n2\"} +Inf -5\n";
	idle_sample_t *s;
	size_t n;
	gpuq_diag_t d = {{0}};

	(void)st;
	assert_int_equal(idle_prom_parse(body, strlen(body), M, 100, &s, &n, &d), 0);
	assert_int_equal(n, 3);
	/* namespace wins over exported_namespace whatever the order */
	assert_string_equal(s[0].namespace_, "gpu-operator");
	assert_string_equal(s[0].pod, "p");
	assert_string_equal(s[0].container, "c");
	assert_string_equal(s[0].local_queue, "lq");
	assert_string_equal(s[0].device, "10.0.0.5:9400/GPU-x/0/3");
	assert_true(s[0].value == 12.5);
	assert_string_equal(s[1].local_queue, "kq");
	assert_true(isnan(s[1].value));
	assert_true(isinf(s[2].value) && s[2].value > 0);
	assert_int_equal(s[0].ts_ms, 1700000000000LL);
	assert_int_equal(s[1].ts_ms, 0); /* none written */
	assert_int_equal(s[2].ts_ms, -5);
	free(s);
}

/* A federated sample older than a reading stands is no evidence (issue 32:
 * /federate serves a dead exporter's last value for minutes). */
static void drop_stale_samples(void **st)
{
	static const struct {
		int64_t ts; /* the sample's timestamp (0: none) */
		bool kept;  /* at now 1,000,000 ms, max age 2,400 ms */
	} rows[] = {
	    {0, true},	     /* no timestamp: as fresh as the scrape */
	    {1000000, true}, /* now */
	    {997600, true},  /* exactly the max age */
	    {997599, false}, /* 1 ms past it */
	    {700000, false}, /* five minutes old: a dead exporter's last value */
	    {1005000, true}, /* ahead (clock skew): not stale */
	};
	idle_sample_t s[6];
	size_t n = sizeof(rows) / sizeof(rows[0]), k;

	(void)st;
	memset(s, 0, sizeof(s));
	for (size_t i = 0; i < n; i++) {
		s[i].ts_ms = rows[i].ts;
		s[i].line = (uint32_t)i;
	}
	k = idle_samples_drop_stale(s, n, 1000000, 2400);
	for (size_t i = 0, j = 0; i < n; i++) {
		if (!rows[i].kept)
			continue;
		assert_true(j < k);
		assert_int_equal(s[j].line, i); /* kept, in order */
		j++;
	}
	assert_int_equal(k, 4);
	/* max age 0: nothing dropped */
	assert_int_equal(idle_samples_drop_stale(s, k, INT64_MAX / 4, 0), k);
}

static void parse_escapes_and_other_metrics(void **st)
{
	static const char body[] = "up 1\n"
				   "other_metric{a=\"x\\\\y\\\"z\\n\"} 2e3\n"
				   "DCGM_FI_DEV_GPU_UTIL_OTHER{pod=\"p\",namespace=\"n\"} 1\n"
				   "DCGM_FI_DEV_GPU_UTIL{pod=\"a\\\"b\",namespace=\"n\"} 1e1\n"
				   "# EOF";
	idle_sample_t *s;
	size_t n;
	gpuq_diag_t d = {{0}};

	(void)st;
	assert_int_equal(idle_prom_parse(body, strlen(body), M, 100, &s, &n, &d), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].pod, "a\"b");
	assert_true(s[0].value == 10);
	free(s);
	/* an empty body has no samples */
	assert_int_equal(idle_prom_parse("", 0, M, 100, &s, &n, &d), 0);
	assert_int_equal(n, 0);
	assert_null(s);
}

static void parse_errors(void **st)
{
	static const struct {
		const char *body;
		int rc;
		const char *msg; /* a part of the diagnostic */
	} cases[] = {
	    {"up 1\n9bad 1\n", GPUQ_EINVAL, "line 2: expected a metric name"},
	    {"up\n", GPUQ_EINVAL, "line 1: expected a blank before the value"},
	    {"up \n", GPUQ_EINVAL, "line 1: expected a value"},
	    {"up one\n", GPUQ_EINVAL, "line 1: value \"one\" is not a number"},
	    {"up 1 2 3\n", GPUQ_EINVAL, "line 1: unexpected text after the timestamp"},
	    {"up 1 1.5\n", GPUQ_EINVAL, "line 1: timestamp \"1.5\" is not an integer"},
	    {"x{a=\"b} 1\n", GPUQ_EINVAL, "line 1: label value not closed"},
	    {"x{a=\"\\t\"} 1\n", GPUQ_EINVAL, "line 1: invalid escape"},
	    {"x{a=b} 1\n", GPUQ_EINVAL, "line 1: expected '\"'"},
	    {"x{a=\"b\" c=\"d\"} 1\n", GPUQ_EINVAL, "line 1: expected ',' or '}'"},
	    {"x{=\"b\"} 1\n", GPUQ_EINVAL, "line 1: expected a label name"},
	    {"x{a\"b\"} 1\n", GPUQ_EINVAL, "line 1: expected '='"},
	    {"# c\n\nDCGM_FI_DEV_GPU_UTIL{pod=\"a\",pod=\"b\"} 1\n", GPUQ_EINVAL,
	     "line 3: label pod given twice"},
	    {"up 0x10\n", GPUQ_EINVAL, "is not a number"},
	    {"up 1e999999999999999999999999999999999999999999999999999999999999999999\n",
	     GPUQ_EINVAL, "value too long"},
	};
	idle_sample_t *s;
	size_t n;

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gpuq_diag_t d = {{0}};
		int rc = idle_prom_parse(cases[i].body, strlen(cases[i].body), M, 100, &s, &n, &d);

		if (rc != cases[i].rc || !strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: rc %d \"%s\"", i, rc, d.msg);
		assert_null(s);
		assert_int_equal(n, 0);
	}
}

static void parse_caps(void **st)
{
	size_t big = IDLE_PROM_LINE_MAX + 10;
	char *body = malloc(big + 64);
	char *p;
	idle_sample_t *s;
	size_t n;
	gpuq_diag_t d = {{0}};

	(void)st;
	assert_non_null(body);
	/* a line over the cap, named */
	memcpy(body, "up 1\nx{a=\"", 10);
	memset(body + 10, 'v', big);
	memcpy(body + 10 + big, "\"} 1\n", 5);
	assert_int_equal(idle_prom_parse(body, 15 + big, M, 100, &s, &n, &d), GPUQ_ELIMIT);
	assert_non_null(strstr(d.msg, "line 2: longer than"));
	/* a kept label value over IDLE_NAME_MAX */
	p = body;
	p += snprintf(p, 64, "DCGM_FI_DEV_GPU_UTIL{pod=\"");
	memset(p, 'p', IDLE_NAME_MAX);
	p += IDLE_NAME_MAX;
	p += snprintf(p, 16, "\"} 1\n");
	assert_int_equal(idle_prom_parse(body, (size_t)(p - body), M, 100, &s, &n, &d),
			 GPUQ_ELIMIT);
	assert_non_null(strstr(d.msg, "line 1: label value longer than"));
	free(body);
	/* the body cap, before reading anything */
	assert_int_equal(idle_prom_parse("", IDLE_PROM_BODY_MAX + 1, M, 100, &s, &n, &d),
			 GPUQ_ELIMIT);
	/* the sample cap: only samples of the metric count */
	{
		static const char three[] = "DCGM_FI_DEV_GPU_UTIL 1\nup 1\nDCGM_FI_DEV_GPU_UTIL 2\n"
					    "up 2\nDCGM_FI_DEV_GPU_UTIL 3\n";
		assert_int_equal(idle_prom_parse(three, strlen(three), M, 3, &s, &n, &d), 0);
		assert_int_equal(n, 3);
		free(s);
		assert_int_equal(idle_prom_parse(three, strlen(three), M, 2, &s, &n, &d),
				 GPUQ_ELIMIT);
		assert_non_null(strstr(d.msg, "line 5: more than 2 samples"));
	}
}

/* ---- the accumulator ---- */

static idle_sample_t smp(const char *dev, const char *ns, const char *pod, const char *lq, double v)
{
	idle_sample_t s;

	memset(&s, 0, sizeof(s));
	snprintf(s.device, sizeof(s.device), "%s", dev);
	snprintf(s.namespace_, sizeof(s.namespace_), "%s", ns);
	snprintf(s.pod, sizeof(s.pod), "%s", pod);
	snprintf(s.local_queue, sizeof(s.local_queue), "%s", lq);
	s.value = v;
	return s;
}

/* Tenant (ns, lq)'s numbers; false when absent. */
static bool tenant(const idle_acct_t *a, const char *ns, const char *lq, int64_t *alloc,
		   int64_t *idle)
{
	idle_tenant_view_t v;

	for (size_t i = 0; idle_acct_tenant(a, i, &v) == 0; i++)
		if (!strcmp(v.namespace_, ns) && !strcmp(v.local_queue, lq)) {
			*alloc = v.allocated_gpu_ms;
			*idle = v.idle_gpu_ms;
			return true;
		}
	return false;
}

static idle_acct_t *acct(double threshold, int64_t gap)
{
	idle_config_t c;
	idle_acct_t *a;

	idle_config_default(&c);
	c.threshold_pct = threshold;
	c.gap_max_ms = gap;
	assert_int_equal(idle_acct_create(&c, &a), 0);
	return a;
}

static void acct_intervals(void **st)
{
	idle_acct_t *a = acct(10, 60000);
	idle_observe_stats_t os;
	int64_t al, id;
	idle_sample_t s[3];

	(void)st;
	s[0] = smp("n1/A/0/", "team-a", "p1", "lq", 5);
	s[1] = smp("n1/B/1/", "team-b", "p2", "", 50);
	s[2] = smp("n1/C/2/", "", "", "", 0); /* free GPU */
	/* first scrape: a baseline, nothing counted */
	assert_int_equal(idle_acct_observe(a, s, 3, 1000, &os), 0);
	assert_int_equal(os.counted, 0);
	assert_int_equal(os.unallocated, 1);
	assert_int_equal(idle_acct_tenant_count(a), 0);
	/* 30 s later: a's 5% is idle, b's 50% is not */
	assert_int_equal(idle_acct_observe(a, s, 3, 31000, &os), 0);
	assert_int_equal(os.counted, 2);
	assert_true(tenant(a, "team-a", "lq", &al, &id));
	assert_int_equal(al, 30000);
	assert_int_equal(id, 30000);
	assert_true(tenant(a, "team-b", "", &al, &id));
	assert_int_equal(al, 30000);
	assert_int_equal(id, 0);
	/* a goes busy: the later value stands for the interval */
	s[0].value = 80;
	s[1].value = 9.99;
	assert_int_equal(idle_acct_observe(a, s, 3, 61000, &os), 0);
	assert_true(tenant(a, "team-a", "lq", &al, &id));
	assert_int_equal(al, 60000);
	assert_int_equal(id, 30000);
	assert_true(tenant(a, "team-b", "", &al, &id));
	assert_int_equal(id, 30000);
	/* exactly the threshold is not idle */
	s[1].value = 10;
	assert_int_equal(idle_acct_observe(a, s, 3, 62000, &os), 0);
	assert_true(tenant(a, "team-b", "", &al, &id));
	assert_int_equal(al, 61000);
	assert_int_equal(id, 30000);
	idle_acct_destroy(a);
}

static void acct_gap_and_absence(void **st)
{
	idle_acct_t *a = acct(10, 60000);
	idle_observe_stats_t os;
	int64_t al, id;
	idle_sample_t s = smp("n1/A/0/", "ns", "p", "", 0);

	(void)st;
	assert_int_equal(idle_acct_observe(a, &s, 1, 0, &os), 0);
	/* the endpoint was gone 10 minutes: 60 s counted */
	assert_int_equal(idle_acct_observe(a, &s, 1, 600000, &os), 0);
	assert_int_equal(os.capped, 1);
	assert_true(tenant(a, "ns", "", &al, &id));
	assert_int_equal(al, 60000);
	/* a scrape without the series forgets it: its return counts nothing */
	assert_int_equal(idle_acct_observe(a, NULL, 0, 610000, &os), 0);
	assert_int_equal(idle_acct_observe(a, &s, 1, 620000, &os), 0);
	assert_int_equal(os.counted, 0);
	assert_true(tenant(a, "ns", "", &al, &id));
	assert_int_equal(al, 60000);
	assert_int_equal(idle_acct_observe(a, &s, 1, 630000, &os), 0);
	assert_true(tenant(a, "ns", "", &al, &id));
	assert_int_equal(al, 70000);
	assert_int_equal(id, 70000);
	idle_acct_destroy(a);
}

static void acct_time_back_and_same(void **st)
{
	idle_acct_t *a = acct(10, 60000);
	idle_observe_stats_t os;
	int64_t al, id;
	idle_sample_t s = smp("d", "ns", "p", "", 0);

	(void)st;
	assert_int_equal(idle_acct_observe(a, &s, 1, 50000, &os), 0);
	assert_int_equal(idle_acct_observe(a, &s, 1, 40000, &os), 0); /* back */
	assert_true(os.baseline);
	assert_int_equal(os.counted, 0);
	assert_int_equal(idle_acct_observe(a, &s, 1, 40000, &os), 0); /* same */
	assert_true(os.baseline);
	assert_int_equal(idle_acct_tenant_count(a), 0);
	assert_int_equal(idle_acct_observe(a, &s, 1, 45000, &os), 0); /* from the new base */
	assert_false(os.baseline);
	assert_true(tenant(a, "ns", "", &al, &id));
	assert_int_equal(al, 5000);
	idle_acct_destroy(a);
}

static void acct_invalid_values(void **st)
{
	idle_acct_t *a = acct(10, 60000);
	idle_observe_stats_t os;
	int64_t al, id;
	idle_sample_t s[4];

	(void)st;
	s[0] = smp("d0", "ns", "p0", "", NAN);
	s[1] = smp("d1", "ns", "p1", "", -1);
	s[2] = smp("d2", "ns", "p2", "", INFINITY);
	s[3] = smp("d3", "ns", "p3", "", 100.5);
	assert_int_equal(idle_acct_observe(a, s, 4, 0, &os), 0);
	assert_int_equal(idle_acct_observe(a, s, 4, 1000, &os), 0);
	assert_int_equal(os.invalid, 4);
	assert_true(tenant(a, "ns", "", &al, &id));
	assert_int_equal(al, 4000); /* allocated all the same */
	assert_int_equal(id, 0);    /* never idle: not measured */
	idle_acct_destroy(a);
}

static void acct_missing_labels_and_duplicates(void **st)
{
	idle_acct_t *a = acct(10, 60000);
	idle_observe_stats_t os;
	int64_t al, id;
	idle_sample_t s[4];

	(void)st;
	s[0] = smp("d0", "ns", "", "", 0); /* no pod */
	s[1] = smp("d1", "", "p", "", 0);  /* no namespace */
	s[2] = smp("d2", "ns", "p", "", 0);
	s[3] = smp("d2", "ns", "p", "", 90); /* the same series again: ignored */
	assert_int_equal(idle_acct_observe(a, s, 4, 0, &os), 0);
	assert_int_equal(os.unallocated, 2);
	assert_int_equal(os.duplicates, 1);
	assert_int_equal(idle_acct_observe(a, s, 4, 1000, &os), 0);
	assert_int_equal(os.counted, 1);
	assert_true(tenant(a, "ns", "", &al, &id));
	assert_int_equal(al, 1000);
	assert_int_equal(id, 1000); /* the first (0%) was kept */
	idle_acct_destroy(a);
}

/* The same samples in any order give the same tenants. */
static void acct_order_independent(void **st)
{
	enum { N = 40 };
	idle_sample_t s[N], r[N];
	idle_acct_t *a = acct(10, 60000), *b = acct(10, 60000);
	idle_tenant_view_t va, vb;
	unsigned seed = 7;

	(void)st;
	for (int i = 0; i < N; i++) {
		char dev[16], ns[16], pod[16];

		snprintf(dev, sizeof(dev), "d%d", i);
		snprintf(ns, sizeof(ns), "ns%d", i % 5);
		snprintf(pod, sizeof(pod), "p%d", i % 7);
		s[i] = smp(dev, ns, pod, i % 2 ? "q" : "", (i * 37) % 101);
	}
	for (int step = 0; step < 5; step++) {
		memcpy(r, s, sizeof(s));
		for (int i = N - 1; i > 0; i--) {
			int j = (int)((seed = seed * 1103515245u + 12345u) % (unsigned)(i + 1));
			idle_sample_t t = r[i];
			r[i] = r[j];
			r[j] = t;
		}
		assert_int_equal(idle_acct_observe(a, s, N, step * 1000, NULL), 0);
		assert_int_equal(idle_acct_observe(b, r, N, step * 1000, NULL), 0);
		s[step].value = 99;
	}
	assert_int_equal(idle_acct_tenant_count(a), idle_acct_tenant_count(b));
	for (size_t i = 0; idle_acct_tenant(a, i, &va) == 0; i++) {
		assert_int_equal(idle_acct_tenant(b, i, &vb), 0);
		assert_string_equal(va.namespace_, vb.namespace_);
		assert_string_equal(va.local_queue, vb.local_queue);
		assert_int_equal(va.allocated_gpu_ms, vb.allocated_gpu_ms);
		assert_int_equal(va.idle_gpu_ms, vb.idle_gpu_ms);
	}
	idle_acct_destroy(a);
	idle_acct_destroy(b);
}

static void acct_caps(void **st)
{
	idle_config_t c;
	idle_acct_t *a;
	idle_observe_stats_t os;
	idle_totals_t t;
	idle_sample_t s[3];

	(void)st;
	idle_config_default(&c);
	c.series_max = 2;
	c.tenants_max = 1;
	assert_int_equal(idle_acct_create(&c, &a), 0);
	s[0] = smp("d0", "a", "p", "", 0);
	s[1] = smp("d1", "b", "p", "", 0);
	s[2] = smp("d2", "c", "p", "", 0);
	assert_int_equal(idle_acct_observe(a, s, 3, 0, &os), 0);
	assert_int_equal(os.over_cap, 1); /* d2, last in order, not remembered */
	assert_int_equal(idle_acct_observe(a, s, 3, 1000, &os), 0);
	assert_int_equal(idle_acct_tenant_count(a), 1); /* a; b is past the tenant cap */
	idle_acct_totals(a, &t);
	assert_int_equal(t.series, 2);
	assert_int_equal(t.unrecorded_gpu_ms, 1000);
	assert_int_equal(t.observations, 2);
	idle_acct_destroy(a);
	/* bad configurations */
	idle_config_default(&c);
	c.threshold_pct = 101;
	assert_int_equal(idle_acct_create(&c, &a), GPUQ_EINVAL);
	c.threshold_pct = NAN;
	assert_int_equal(idle_acct_create(&c, &a), GPUQ_EINVAL);
	idle_config_default(&c);
	c.gap_max_ms = 0;
	assert_int_equal(idle_acct_create(&c, &a), GPUQ_EINVAL);
	assert_int_equal(idle_acct_create(NULL, &a), 0);
	idle_acct_destroy(a);
	idle_acct_destroy(NULL);
}

/* Parse then account, end to end on a body. */
static void parse_then_account(void **st)
{
	idle_acct_t *a = acct(10, 60000);
	idle_sample_t *s;
	size_t n;
	int64_t al, id;
	gpuq_diag_t d = {{0}};

	(void)st;
	assert_int_equal(idle_prom_parse(dcgm_body, strlen(dcgm_body), M, 100, &s, &n, &d), 0);
	assert_int_equal(idle_acct_observe(a, s, n, 0, NULL), 0);
	assert_int_equal(idle_acct_observe(a, s, n, 3600000, NULL), 0); /* capped at 60 s */
	free(s);
	assert_true(tenant(a, "team-a", "", &al, &id));
	assert_int_equal(al, 60000);
	assert_int_equal(id, 60000);
	assert_true(tenant(a, "team-b", "", &al, &id));
	assert_int_equal(id, 0);
	assert_int_equal(idle_acct_tenant_count(a), 2);
	idle_acct_destroy(a);
}

/* The controller's map: pods, Jobs' pods by name, Indexed Jobs. */
static void podmap_lookup(void **st)
{
	static const struct {
		const char *ns, *pod, *want; /* want NULL: not found */
	} cases[] = {
	    {"team-a", "nb-0", "notebooks"},	     /* a plain pod */
	    {"team-a", "train-x7k2p", "research"},   /* a Job's pod */
	    {"team-a", "train-3-q9zzb", "research"}, /* an Indexed Job's pod: train-3 first */
	    {"team-a", "sweep-12-abcde", "sweeps"},  /* Indexed Job "sweep" */
	    {"team-a", "sweep-12-abcd", NULL},	     /* suffix not 5 characters */
	    {"team-a", "train", NULL},		     /* the Job's own name is no pod */
	    {"team-b", "train-x7k2p", NULL},	     /* another namespace */
	    {"team-a", "trai-x7k2p", NULL},	     /* a prefix of a Job name */
	    {"team-a", "trainer-x7k2p", NULL},	     /* a longer name */
	    {"team-a", "-abcde", NULL},		     /* nothing before the suffix */
	    {"team-a", "dup-abcde", "first"},	     /* the first of a key added twice */
	    {"team-a", "train-3-extra-q9zzb", NULL}, /* not the Job controller's form */
	};
	idle_podmap_t *m;
	idle_sample_t s[3];

	(void)st;
	assert_int_equal(idle_podmap_create(&m), 0);
	assert_null(idle_podmap_lookup(m, "team-a", "train-x7k2p")); /* empty */
	assert_int_equal(idle_podmap_add(m, IDLE_OWNER_POD, "team-a", "nb-0", "notebooks"), 0);
	assert_int_equal(idle_podmap_add(m, IDLE_OWNER_JOB, "team-a", "train", "research"), 0);
	assert_int_equal(idle_podmap_add(m, IDLE_OWNER_JOB, "team-a", "sweep", "sweeps"), 0);
	assert_int_equal(idle_podmap_add(m, IDLE_OWNER_JOB, "team-a", "dup", "first"), 0);
	assert_int_equal(idle_podmap_add(m, IDLE_OWNER_JOB, "team-a", "dup", "second"), 0);
	assert_int_equal(idle_podmap_add(m, IDLE_OWNER_JOB, "", "x", "q"), GPUQ_EINVAL);
	assert_int_equal(idle_podmap_add(m, IDLE_OWNER_JOB, "ns", "", "q"), GPUQ_EINVAL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = idle_podmap_lookup(m, cases[i].ns, cases[i].pod);

		if (cases[i].want ? !got || strcmp(got, cases[i].want) : got != NULL)
			fail_msg("case %zu (%s/%s): got %s", i, cases[i].ns, cases[i].pod,
				 got ? got : "NULL");
	}
	/* apply: only allocated samples without a queue label */
	s[0] = smp("d0", "team-a", "train-x7k2p", "", 0);
	s[1] = smp("d1", "team-a", "nb-0", "from-label", 0);
	s[2] = smp("d2", "", "", "", 0);
	idle_podmap_finish(m);
	idle_podmap_apply(m, s, 3);
	assert_string_equal(s[0].local_queue, "research");
	assert_string_equal(s[1].local_queue, "from-label");
	assert_string_equal(s[2].local_queue, "");
	idle_podmap_destroy(m);
	idle_podmap_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_dcgm),
	    cmocka_unit_test(parse_federate),
	    cmocka_unit_test(drop_stale_samples),
	    cmocka_unit_test(parse_escapes_and_other_metrics),
	    cmocka_unit_test(parse_errors),
	    cmocka_unit_test(parse_caps),
	    cmocka_unit_test(acct_intervals),
	    cmocka_unit_test(acct_gap_and_absence),
	    cmocka_unit_test(acct_time_back_and_same),
	    cmocka_unit_test(acct_invalid_values),
	    cmocka_unit_test(acct_missing_labels_and_duplicates),
	    cmocka_unit_test(acct_order_independent),
	    cmocka_unit_test(acct_caps),
	    cmocka_unit_test(parse_then_account),
	    cmocka_unit_test(podmap_lookup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

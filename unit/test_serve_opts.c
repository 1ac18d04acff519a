/* Unit tests of `gpuq serve`'s flags (cmd/serve_opts.c): parsing with and
 * without a cluster source, the environment defaults, every bad value named in
 * the refusal, and the checks against the file system. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/serve_opts.h"

#include "unit/server_fixtures.h"

/* ---- flags ---- */

/* The environment parse() gives the flags (NULL: none, as outside a Pod). */
static const cmd_serve_env_t *g_env;

static int parse(cmd_serve_opts_t *opts, gpuq_diag_t *diag, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)"serve";
	va_start(ap, diag);
	for (char *a; (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	memset(diag, 0, sizeof(*diag));
	return cmd_serve_opts_parse_env(argc, argv, g_env, opts, diag);
}

/* The end of parse()'s argument list. */
#define END ((char *)NULL)

#define REQUIRED "--cert-dir", "/c", "--policy-dir", "/p", "--state-dir", "/s"

static void opts_parse_good(void **state)
{
	cmd_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(parse(&o, &d, "--listen", "127.0.0.1:8443", REQUIRED, END), GPUQ_OK);
	assert_string_equal(o.host, "127.0.0.1");
	assert_int_equal(o.port, 8443);
	assert_string_equal(o.cert_dir, "/c");
	assert_string_equal(o.policy_dir, "/p");
	assert_int_equal(o.source, CMD_SERVE_SOURCE_DIR);
	assert_null(o.kubeconfig);
	assert_string_equal(o.state_dir, "/s");
	assert_string_equal(o.controller_user, "system:serviceaccount:gpuq-system:gpuq");
	assert_int_equal(o.n_gpu_resources, 0);
	assert_true(o.threads >= 2);
	assert_int_equal(o.log_level, GPUQ_LOG_INFO);
	assert_false(o.help);
	assert_int_equal(o.poll_ms, HTTP_POLL_MS_DEFAULT);

	assert_int_equal(parse(&o, &d, "--listen=[::1]:1", "--cert-dir=/c", "--policy-dir=/p",
			       "--state-dir=/s", "--gpu-resource", "nvidia.com/gpu",
			       "--gpu-resource=nvidia.com/mig-1g.5gb", "--controller-user",
			       "system:serviceaccount:x:y", "--threads", "3", "--log-level=debug",
			       END),
			 GPUQ_OK);
	assert_string_equal(o.host, "::1");
	assert_int_equal(o.port, 1);
	assert_int_equal(o.n_gpu_resources, 2);
	assert_string_equal(o.gpu_resources[0], "nvidia.com/gpu");
	assert_string_equal(o.gpu_resources[1], "nvidia.com/mig-1g.5gb");
	assert_string_equal(o.controller_user, "system:serviceaccount:x:y");
	assert_int_equal(o.threads, 3);
	assert_int_equal(o.log_level, GPUQ_LOG_DEBUG);

	/* --child-creator KIND=USER, repeatable: the controllers whose
	   children pass as an admitted parent's (none: the table's) */
	assert_int_equal(o.n_child_creators, 0);
	assert_int_equal(parse(&o, &d, "--listen=:1", REQUIRED, "--child-creator",
			       "raycluster=system:serviceaccount:ray:kuberay",
			       "--child-creator=job=system:serviceaccount:ops:jobs",
			       "--child-creator=job=system:kube-controller-manager", END),
			 GPUQ_OK);
	assert_int_equal(o.n_child_creators, 3);
	assert_int_equal(o.child_creators[0].parent, WORKLOAD_KIND_RAYCLUSTER);
	assert_string_equal(o.child_creators[0].user, "system:serviceaccount:ray:kuberay");
	assert_int_equal(o.child_creators[2].parent, WORKLOAD_KIND_JOB);
	assert_string_equal(o.child_creators[2].user, "system:kube-controller-manager");
	assert_non_null(strstr(cmd_serve_usage(), "--child-creator KIND=USER"));

	assert_int_equal(parse(&o, &d, "--listen", ":65535", REQUIRED, END), GPUQ_OK);
	assert_string_equal(o.host, "");
	assert_int_equal(o.port, 65535);
	assert_null(o.internal_listen);

	/* an internal listener, handed to the server; none by default */
	{
		http_server_config_t hc;

		cmd_serve_http_config(&o, &hc);
		assert_int_equal(hc.internal_port, 0);
		assert_int_equal(parse(&o, &d, "--listen", ":8443", "--internal-listen=[::1]:9443",
				       REQUIRED, END),
				 GPUQ_OK);
		cmd_serve_http_config(&o, &hc);
		assert_string_equal(hc.internal_listen, "[::1]:9443");
		assert_string_equal(hc.internal_host, "::1");
		assert_int_equal(hc.internal_port, 9443);
	}

	/* --help needs nothing else, even with other flags missing. */
	assert_int_equal(parse(&o, &d, "--help", END), GPUQ_OK);
	assert_true(o.help);
	assert_int_equal(parse(&o, &d, "-h", "--threads", "2", END), GPUQ_OK);
	assert_true(o.help);
	assert_non_null(strstr(cmd_serve_usage(), "--listen HOST:PORT"));
	assert_non_null(strstr(cmd_serve_usage(), "--gpu-resource"));
}

static void opts_parse_bad(void **state)
{
	static const struct {
		const char *args[12];
		const char *msg; /* substring the diagnostic must contain */
	} cases[] = {
	    {{"--cert-dir", "/c", "--policy-dir", "/p", "--state-dir", "/s"},
	     "--listen is required"},
	    {{"--listen", ":1", "--policy-dir", "/p", "--state-dir", "/s"},
	     "--cert-dir is required"},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s"},
	     "no policy source: give --policy-dir DIR (offline) or --kubeconfig PATH"},
	    {{"--listen", ":1", "--cert-dir", "/c", "--policy-dir", "/p"},
	     "--state-dir is required"},
	    {{"--listen", "127.0.0.1:0", REQUIRED}, "--listen \"127.0.0.1:0\": port \"0\""},
	    {{"--listen", "127.0.0.1:65536", REQUIRED}, "port \"65536\" is not a number"},
	    {{"--listen", "127.0.0.1:http", REQUIRED}, "port \"http\""},
	    {{"--listen", "127.0.0.1:", REQUIRED}, "port \"\""},
	    {{"--listen", "127.0.0.1:+80", REQUIRED}, "port \"+80\""},
	    {{"--listen", "127.0.0.1:8443x", REQUIRED}, "port \"8443x\""},
	    {{"--listen", "127.0.0.1", REQUIRED}, "--listen \"127.0.0.1\": expected HOST:PORT"},
	    {{"--listen", "::1:8443", REQUIRED}, "in brackets"},
	    {{"--listen", "[::1]8443", REQUIRED}, "expected [IPv6]:PORT"},
	    {{"--listen", "a b:1", REQUIRED}, "bad character in host"},
	    {{"--listen", ":1", "--internal-listen", "127.0.0.1:0", REQUIRED},
	     "--internal-listen \"127.0.0.1:0\": port \"0\""},
	    {{"--listen", ":1", "--internal-listen", "9443", REQUIRED},
	     "--internal-listen \"9443\": expected HOST:PORT"},
	    {{"--listen", "127.0.0.1:9443", "--internal-listen", ":9443", REQUIRED},
	     "--internal-listen \":9443\": the same port as --listen"},
	    {{"--listen", ":1", REQUIRED, "--bogus", "x"}, "unknown flag \"--bogus\""},
	    {{"--listen", ":1", REQUIRED, "stray"}, "unknown flag \"stray\""},
	    {{"--listen", ":1", REQUIRED, "--threads"}, "--threads needs a value"},
	    {{"--listen", ":1", REQUIRED, "--threads", "0"}, "--threads \"0\""},
	    {{"--listen", ":1", REQUIRED, "--threads", "257"}, "--threads \"257\""},
	    {{"--listen", ":1", REQUIRED, "--threads", "-1"}, "--threads \"-1\""},
	    {{"--listen", ":1", REQUIRED, "--log-level", "loud"}, "--log-level \"loud\""},
	    {{"--listen", ":1", REQUIRED, "--gpu-resource", "gpu"}, "--gpu-resource \"gpu\""},
	    {{"--listen", ":1", REQUIRED, "--child-creator", "pod=x"},
	     "--child-creator \"pod=x\": expected KIND=USER"},
	    {{"--listen", ":1", REQUIRED, "--child-creator", "job"}, "--child-creator \"job\""},
	    {{"--listen", ":1", REQUIRED, "--child-creator", "job="}, "--child-creator \"job=\""},
	    {{"--listen", ":1", REQUIRED, "--child-creator", "jobs=a"},
	     "--child-creator \"jobs=a\""},
	    {{"--listen", ":1", REQUIRED, "--child-creator", "job=a b"},
	     "--child-creator \"job=a b\""},
	    {{"--listen", ":1", REQUIRED, "--gpu-resource", "a/b/c"}, "--gpu-resource \"a/b/c\""},
	    {{"--listen", ":1", REQUIRED, "--gpu-resource", "nvidia.com/"},
	     "--gpu-resource \"nvidia.com/\""},
	    {{"--listen", ":1", REQUIRED, "--gpu-resource", "x.io/g pu"}, "--gpu-resource"},
	    {{"--listen", ":1", REQUIRED, "--controller-user", ""}, "--controller-user \"\""},
	    {{"--listen", ":1", REQUIRED, "--controller-user", "a b"}, "--controller-user \"a b\""},
	    {{"--listen", ":1", REQUIRED, "--cert-dir", "/d"}, "--cert-dir \"/d\": given more"},
	    {{"--listen", ":1", "--cert-dir", "", "--policy-dir", "/p", "--state-dir", "/s"},
	     "--cert-dir \"\": expected a directory"},
	};
	cmd_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[16];
		int argc = 0;

		argv[argc++] = (char *)"serve";
		for (size_t j = 0; j < 12 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		memset(&d, 0, sizeof(d));
		if (cmd_serve_opts_parse_env(argc, argv, NULL, &o, &d) != GPUQ_EINVAL)
			fail_msg("case %zu: accepted", i);
		if (!strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: diag \"%s\" lacks \"%s\"", i, d.msg, cases[i].msg);
	}
}

/* --dcgm-url, --dcgm-interval, --idle-threshold: offline and in a
 * cluster alike; the defaults; every refusal names the flag and value. */
static void opts_parse_dcgm(void **state)
{
	static const struct {
		const char *flag, *value, *flag2, *value2;
		const char *msg;
	} bad[] = {
	    {"--dcgm-url", "ftp://h/metrics", NULL, NULL,
	     "--dcgm-url \"ftp://h/metrics\": expected an http:// or https:// URL"},
	    {"--dcgm-url", "http://", NULL, NULL, "with a host"},
	    {"--dcgm-url", "http:///metrics", NULL, NULL, "with a host"},
	    {"--dcgm-url", "http://h/a b", NULL, NULL, "must be percent-encoded"},
	    {"--dcgm-interval", "30s", NULL, NULL, "--dcgm-interval: only with --dcgm-url"},
	    {"--idle-threshold", "5", NULL, NULL, "--idle-threshold: only with --dcgm-url"},
	    {"--dcgm-url", "http://h", "--dcgm-interval", "50ms", "--dcgm-interval \"50ms\""},
	    {"--dcgm-url", "http://h", "--dcgm-interval", "2h", "expected a duration 100ms..1h"},
	    {"--dcgm-url", "http://h", "--idle-threshold", "101", "--idle-threshold \"101\""},
	    {"--dcgm-url", "http://h", "--idle-threshold", "-1", "expected a percentage 0..100"},
	    {"--dcgm-url", "http://h", "--idle-threshold", "1e1", "--idle-threshold \"1e1\""},
	    {"--dcgm-url", "http://h", "--idle-threshold", "nan", "--idle-threshold \"nan\""},
	};
	cmd_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(parse(&o, &d, "--listen", ":1", REQUIRED, END), GPUQ_OK);
	assert_null(o.dcgm_url);
	assert_int_equal(parse(&o, &d, "--listen", ":1", REQUIRED, "--dcgm-url",
			       "http://dcgm.gpu-operator:9400/metrics", END),
			 GPUQ_OK);
	assert_string_equal(o.dcgm_url, "http://dcgm.gpu-operator:9400/metrics");
	assert_int_equal(o.dcgm_interval_ms, 30000);
	assert_true(o.idle_threshold_pct == 10);
	assert_int_equal(parse(&o, &d, "--listen", ":1", REQUIRED,
			       "--dcgm-url=https://prom:9090/federate?match[]=DCGM_FI_DEV_GPU_UTIL",
			       "--dcgm-interval", "250ms", "--idle-threshold", "2.5", END),
			 GPUQ_OK);
	assert_int_equal(o.dcgm_interval_ms, 250);
	assert_true(o.idle_threshold_pct == 2.5);
	assert_int_equal(parse(&o, &d, "--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s",
			       "--kubeconfig", "/k", "--identity", "me", "--dcgm-url", "http://h",
			       "--idle-threshold", "0", END),
			 GPUQ_OK);
	assert_true(o.idle_threshold_pct == 0);
	assert_non_null(strstr(cmd_serve_usage(), "--dcgm-url URL"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = bad[i].flag2 ? parse(&o, &d, "--listen", ":1", REQUIRED, bad[i].flag,
					      bad[i].value, bad[i].flag2, bad[i].value2, END)
				      : parse(&o, &d, "--listen", ":1", REQUIRED, bad[i].flag,
					      bad[i].value, END);

		if (rc != GPUQ_EINVAL || !strstr(d.msg, bad[i].msg))
			fail_msg("case %zu: rc %d diag \"%s\" lacks \"%s\"", i, rc, d.msg,
				 bad[i].msg);
	}
}

#define CLUSTER "--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s"

/* The policy source and the cluster flags, with their defaults from the
 * environment given. */
static void opts_parse_cluster(void **state)
{
	static const cmd_serve_env_t pod = {"gpuq-system-2", "gpuq-7d9f-abc", "node-1",
					    "10.96.0.1"};
	static const cmd_serve_env_t host = {NULL, "", "build-box", NULL};
	cmd_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	/* --kubeconfig: defaults, identity from the hostname */
	g_env = &host;
	assert_int_equal(parse(&o, &d, CLUSTER, "--kubeconfig", "/k/config", END), GPUQ_OK);
	assert_int_equal(o.source, CMD_SERVE_SOURCE_KUBECONFIG);
	assert_string_equal(o.kubeconfig, "/k/config");
	assert_null(o.policy_dir);
	assert_true(o.leader_elect);
	assert_string_equal(o.lease_namespace, "gpuq-system");
	assert_string_equal(o.lease_name, "gpuq-controller");
	assert_string_equal(o.identity, "build-box");
	assert_true(o.qps == 50.0);
	assert_int_equal(o.burst, 100);
	assert_false(o.fair_sharing);
	assert_int_equal(o.ready_timeout_ms, 30 * 60 * 1000);
	assert_int_equal(o.requeue_backoff_ms, 60 * 1000);
	assert_int_equal(o.usage_half_life_ms, 0); /* the core's defaults */
	assert_int_equal(o.usage_sampling_ms, 0);
	assert_int_equal(o.usage_checkpoint_ms, 60 * 1000);
	/* in a Pod, neither flag: in-cluster, defaults from the downward API */
	g_env = &pod;
	assert_int_equal(parse(&o, &d, CLUSTER, END), GPUQ_OK);
	assert_int_equal(o.source, CMD_SERVE_SOURCE_IN_CLUSTER);
	assert_null(o.kubeconfig);
	assert_null(o.policy_dir);
	assert_string_equal(o.lease_namespace, "gpuq-system-2");
	assert_string_equal(o.identity, "gpuq-7d9f-abc");
	/* every flag, over the environment */
	assert_int_equal(parse(&o, &d, CLUSTER, "--leader-elect", "false", "--lease-namespace=ops",
			       "--lease-name", "gpuq.leader", "--identity", "me@x", "--qps", "2.5",
			       "--burst=7", END),
			 GPUQ_OK);
	assert_false(o.leader_elect);
	assert_string_equal(o.lease_namespace, "ops");
	assert_string_equal(o.lease_name, "gpuq.leader");
	assert_string_equal(o.identity, "me@x");
	assert_true(o.qps == 2.5);
	assert_int_equal(o.burst, 7);
	assert_int_equal(parse(&o, &d, CLUSTER, "--leader-elect=true", "--qps", "10000", "--burst",
			       "100000", END),
			 GPUQ_OK);
	assert_true(o.leader_elect);
	assert_true(o.qps == 10000.0);
	assert_int_equal(o.burst, 100000);
	/* the core's settings */
	assert_int_equal(parse(&o, &d, CLUSTER, "--fair-sharing", "true", "--pods-ready-timeout",
			       "1.5s", "--requeue-backoff=2m", END),
			 GPUQ_OK);
	assert_true(o.fair_sharing);
	assert_int_equal(o.ready_timeout_ms, 1500);
	assert_int_equal(o.requeue_backoff_ms, 120000);
	assert_int_equal(parse(&o, &d, CLUSTER, "--pods-ready-timeout", "0", END), GPUQ_OK);
	assert_int_equal(o.ready_timeout_ms, 0);
	/* Kueue's admissionFairSharing settings, up to a year */
	assert_int_equal(parse(&o, &d, CLUSTER, "--usage-half-life-time", "168h",
			       "--usage-sampling-interval=5m", END),
			 GPUQ_OK);
	assert_int_equal(o.usage_half_life_ms, 168LL * 3600 * 1000);
	assert_int_equal(o.usage_sampling_ms, 5 * 60 * 1000);
	assert_int_equal(parse(&o, &d, CLUSTER, "--usage-half-life-time", "8760h",
			       "--usage-sampling-interval", "1ms", END),
			 GPUQ_OK);
	assert_int_equal(o.usage_half_life_ms, 8760LL * 3600 * 1000);
	assert_int_equal(o.usage_sampling_ms, 1);
	/* the usage ledger's checkpoint: 0 turns it off */
	assert_int_equal(parse(&o, &d, CLUSTER, "--usage-checkpoint-interval", "0", END), GPUQ_OK);
	assert_int_equal(o.usage_checkpoint_ms, 0);
	assert_int_equal(parse(&o, &d, CLUSTER, "--usage-checkpoint-interval=10s", END), GPUQ_OK);
	assert_int_equal(o.usage_checkpoint_ms, 10000);
	/* the certificate kept in a Secret */
	assert_int_equal(parse(&o, &d, CLUSTER, "--cert-secret", "gpuq-system/gpuq-certs",
			       "--cert-dns=a.b.svc,c", "--cert-ip", "127.0.0.1", "--webhook-config",
			       "gpuq", END),
			 GPUQ_OK);
	assert_string_equal(o.cert_secret_ns, "gpuq-system");
	assert_string_equal(o.cert_secret_name, "gpuq-certs");
	assert_string_equal(o.cert_dns, "a.b.svc,c");
	assert_string_equal(o.cert_ip, "127.0.0.1");
	assert_string_equal(o.webhook_config, "gpuq");
	assert_int_equal(parse(&o, &d, CLUSTER, END), GPUQ_OK);
	assert_null(o.cert_secret_name);
	assert_null(o.webhook_config);
	/* --policy-dir wins over being in a Pod: offline, env unused */
	assert_int_equal(parse(&o, &d, CLUSTER, "--policy-dir", "/p", END), GPUQ_OK);
	assert_int_equal(o.source, CMD_SERVE_SOURCE_DIR);
	assert_string_equal(o.identity, "");
	/* the usage names them */
	for (size_t i = 0; i < 12; i++) {
		static const char *const flags[] = {"--kubeconfig PATH",
						    "--fair-sharing",
						    "--pods-ready-timeout",
						    "--requeue-backoff",
						    "--usage-half-life-time",
						    "--usage-sampling-interval",
						    "--leader-elect",
						    "--lease-namespace",
						    "--lease-name",
						    "--identity",
						    "--qps",
						    "--burst"};
		assert_non_null(strstr(cmd_serve_usage(), flags[i]));
	}
	g_env = NULL;
}

static void opts_parse_cluster_bad(void **state)
{
	static const cmd_serve_env_t host = {NULL, NULL, "h", NULL};
	static const cmd_serve_env_t bad_ns = {"Team_A", NULL, "h", "10.0.0.1"};
	static const cmd_serve_env_t bad_pod = {NULL, "a b", "h", "10.0.0.1"};
	static const cmd_serve_env_t nameless = {NULL, NULL, NULL, "10.0.0.1"};
	static const struct {
		const cmd_serve_env_t *env;
		const char *args[8];
		const char *msg; /* substring the diagnostic must contain */
	} cases[] = {
	    {&host,
	     {"--kubeconfig", "/k", "--leader-elect", "yes"},
	     "--leader-elect \"yes\": expected true or false"},
	    {&host, {"--kubeconfig", "/k", "--leader-elect", "1"}, "--leader-elect \"1\""},
	    {&host,
	     {"--kubeconfig", "/k", "--lease-namespace", "Team_A"},
	     "--lease-namespace \"Team_A\": expected a namespace name"},
	    {&host, {"--kubeconfig", "/k", "--lease-namespace", "-a"}, "--lease-namespace \"-a\""},
	    {&host,
	     {"--kubeconfig", "/k", "--lease-namespace",
	      "a234567890123456789012345678901234567890123456789012345678901234"},
	     "--lease-namespace \"a2345"},
	    {&host, {"--kubeconfig", "/k", "--lease-name", "a..b"}, "--lease-name \"a..b\""},
	    {&host, {"--kubeconfig", "/k", "--lease-name", "Gpuq"}, "--lease-name \"Gpuq\""},
	    {&host, {"--kubeconfig", "/k", "--lease-name", ""}, "--lease-name \"\""},
	    {&host, {"--kubeconfig", "/k", "--identity", "a b"}, "--identity \"a b\""},
	    {&host, {"--kubeconfig", "/k", "--identity", ""}, "--identity \"\""},
	    {&host, {"--kubeconfig", "/k", "--qps", "0"}, "--qps \"0\": expected a number"},
	    {&host, {"--kubeconfig", "/k", "--qps", "-1"}, "--qps \"-1\""},
	    {&host, {"--kubeconfig", "/k", "--qps", "1e3"}, "--qps \"1e3\""},
	    {&host, {"--kubeconfig", "/k", "--qps", "inf"}, "--qps \"inf\""},
	    {&host, {"--kubeconfig", "/k", "--qps", "10000.5"}, "--qps \"10000.5\""},
	    {&host, {"--kubeconfig", "/k", "--qps", "."}, "--qps \".\""},
	    {&host, {"--kubeconfig", "/k", "--qps", " 5"}, "--qps \" 5\""},
	    {&host,
	     {"--kubeconfig", "/k", "--burst", "0"},
	     "--burst \"0\": expected a number in 1..100000"},
	    {&host, {"--kubeconfig", "/k", "--burst", "100001"}, "--burst \"100001\""},
	    {&host, {"--kubeconfig", "/k", "--burst", "x"}, "--burst \"x\""},
	    {&host, {"--kubeconfig", "/k", "--fair-sharing", "on"}, "--fair-sharing \"on\""},
	    {&host,
	     {"--kubeconfig", "/k", "--usage-half-life-time", "0"},
	     "--usage-half-life-time \"0\": 0 (Kueue: no usage history, so admission fair "
	     "sharing orders nothing) is not supported; leave admissionScope out of the "
	     "ClusterQueues instead"},
	    {&host,
	     {"--kubeconfig", "/k", "--usage-half-life-time", "8761h"},
	     "--usage-half-life-time \"8761h\": expected a duration such as 90s, 5m or 1.5h, "
	     "1ms..365 days"},
	    {&host,
	     {"--kubeconfig", "/k", "--usage-half-life-time", "-1h"},
	     "--usage-half-life-time \"-1h\""},
	    {&host,
	     {"--kubeconfig", "/k", "--usage-sampling-interval", "0"},
	     "--usage-sampling-interval \"0\": expected a duration such as 90s, 5m or 1.5h, "
	     "1ms..365 days"},
	    {&host,
	     {"--kubeconfig", "/k", "--usage-sampling-interval", "5 m"},
	     "--usage-sampling-interval \"5 m\""},
	    {&host,
	     {"--kubeconfig", "/k", "--usage-checkpoint-interval", "8d"},
	     "--usage-checkpoint-interval \"8d\": expected a duration such as 90s, 5m or 1.5h, "
	     "0..7 days"},
	    {&host,
	     {"--kubeconfig", "/k", "--pods-ready-timeout", "5x"},
	     "--pods-ready-timeout \"5x\": expected a duration such as 90s, 5m or 1.5h, 0..7 days"},
	    {&host,
	     {"--kubeconfig", "/k", "--pods-ready-timeout", "8d"},
	     "--pods-ready-timeout \"8d\""},
	    {&host,
	     {"--kubeconfig", "/k", "--pods-ready-timeout", "169h"},
	     "--pods-ready-timeout \"169h\""},
	    {&host,
	     {"--kubeconfig", "/k", "--requeue-backoff", "0"},
	     "--requeue-backoff \"0\": expected a duration such as 90s, 5m or 1.5h, 1ms..7 days"},
	    {&host,
	     {"--policy-dir", "/p", "--fair-sharing", "true"},
	     "--fair-sharing: a cluster flag"},
	    {&host,
	     {"--kubeconfig", "/k", "--cert-secret", "certs"},
	     "--cert-secret \"certs\": expected NAMESPACE/NAME"},
	    {&host, {"--kubeconfig", "/k", "--cert-secret", "Ns/x"}, "--cert-secret \"Ns/x\""},
	    {&host, {"--kubeconfig", "/k", "--cert-secret", "ns/"}, "--cert-secret \"ns/\""},
	    {&host,
	     {"--kubeconfig", "/k", "--cert-dns", "a"},
	     "--cert-dns: only with --cert-secret"},
	    {&host,
	     {"--kubeconfig", "/k", "--webhook-config", "gpuq"},
	     "--webhook-config: only with --cert-secret"},
	    {&host,
	     {"--kubeconfig", "/k", "--cert-secret", "a/b", "--webhook-config", "G"},
	     "--webhook-config \"G\""},
	    {&host,
	     {"--policy-dir", "/p", "--cert-secret", "a/b"},
	     "--cert-secret: a cluster flag"},
	    {&host,
	     {"--kubeconfig", "/k", "--qps", "5", "--qps", "6"},
	     "--qps \"6\": given more than once"},
	    {&host, {"--kubeconfig", ""}, "--kubeconfig \"\": expected a file"},
	    {&host,
	     {"--kubeconfig", "/k", "--policy-dir", "/p"},
	     "--policy-dir \"/p\" and --kubeconfig \"/k\": give one policy source, not both"},
	    {&host,
	     {"--policy-dir", "/p", "--qps", "5"},
	     "--qps: a cluster flag, but --policy-dir runs offline"},
	    {&host,
	     {"--policy-dir", "/p", "--leader-elect", "false"},
	     "--leader-elect: a cluster flag"},
	    {&host,
	     {"--policy-dir", "/p", "--usage-half-life-time", "1h"},
	     "--usage-half-life-time: a cluster flag"},
	    {&host, {NULL}, "no policy source"},
	    {NULL, {NULL}, "(KUBERNETES_SERVICE_HOST is not set)"},
	    {&bad_ns, {NULL}, "POD_NAMESPACE \"Team_A\": expected a namespace name"},
	    {&bad_pod, {NULL}, "POD_NAME \"a b\": expected an identity"},
	    /* it names each write's fence token, a fieldManager of at most 128 */
	    {NULL,
	     {"--kubeconfig", "/k", "--identity",
	      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	      "aaaaaaaaaaaaaaaaa"},
	     "--identity "
	     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "aaaaaaaaaaaaaaaaaa\": expected an identity of 1..100 printable"},
	    {&nameless, {NULL}, "no identity for the Lease: give --identity"},
	    {NULL, {"--kubeconfig", "/k"}, "no identity for the Lease"},
	};
	cmd_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[16] = {(char *)"serve",	(char *)"--listen", (char *)":1",
				  (char *)"--cert-dir", (char *)"/c",	    (char *)"--state-dir",
				  (char *)"/s"};
		int argc = 7;

		for (size_t j = 0; j < 8 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		memset(&d, 0, sizeof(d));
		if (cmd_serve_opts_parse_env(argc, argv, cases[i].env, &o, &d) != GPUQ_EINVAL)
			fail_msg("case %zu: accepted", i);
		if (!strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: diag \"%s\" lacks \"%s\"", i, d.msg, cases[i].msg);
	}
	/* a nameless process still gets an identity from --identity */
	{
		char *argv[] = {(char *)"serve",      (char *)"--listen",   (char *)":1",
				(char *)"--cert-dir", (char *)"/c",	    (char *)"--state-dir",
				(char *)"/s",	      (char *)"--identity", (char *)"r1"};

		assert_int_equal(cmd_serve_opts_parse_env(9, argv, &nameless, &o, &d), GPUQ_OK);
		assert_string_equal(o.identity, "r1");
	}
}

/* cmd_serve_opts_parse reads the process environment. */
static void opts_parse_process_env(void **state)
{
	char *argv[] = {(char *)"serve", (char *)"--listen",	(char *)":1", (char *)"--cert-dir",
			(char *)"/c",	 (char *)"--state-dir", (char *)"/s"};
	cmd_serve_opts_t o;
	gpuq_diag_t d = {{0}};

	(void)state;
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("POD_NAMESPACE", "gpuq-test", 1);
	setenv("POD_NAME", "gpuq-0", 1);
	assert_int_equal(cmd_serve_opts_parse(7, argv, &o, &d), GPUQ_OK);
	assert_int_equal(o.source, CMD_SERVE_SOURCE_IN_CLUSTER);
	assert_string_equal(o.lease_namespace, "gpuq-test");
	assert_string_equal(o.identity, "gpuq-0");
	unsetenv("POD_NAME");
	assert_int_equal(cmd_serve_opts_parse(7, argv, &o, &d), GPUQ_OK);
	assert_true(o.identity[0] != '\0'); /* the hostname */
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("POD_NAMESPACE");
	assert_int_equal(cmd_serve_opts_parse(7, argv, &o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "no policy source"));
}

static void opts_parse_gpu_resource_cap(void **state)
{
	char *argv[8 + 2 * (CMD_SERVE_GPU_RESOURCES_MAX + 1)];
	char names[CMD_SERVE_GPU_RESOURCES_MAX + 1][32];
	cmd_serve_opts_t o;
	gpuq_diag_t d = {{0}};
	int argc = 0;

	(void)state;
	argv[argc++] = (char *)"serve";
	argv[argc++] = (char *)"--listen=:1";
	argv[argc++] = (char *)"--cert-dir=/c";
	argv[argc++] = (char *)"--policy-dir=/p";
	argv[argc++] = (char *)"--state-dir=/s";
	for (int i = 0; i < CMD_SERVE_GPU_RESOURCES_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "example.com/gpu-%d", i);
		argv[argc++] = (char *)"--gpu-resource";
		argv[argc++] = names[i];
	}
	assert_int_equal(cmd_serve_opts_parse(argc, argv, &o, &d), GPUQ_OK);
	assert_int_equal(o.n_gpu_resources, CMD_SERVE_GPU_RESOURCES_MAX);
	snprintf(names[CMD_SERVE_GPU_RESOURCES_MAX], 32, "example.com/one-more");
	argv[argc++] = (char *)"--gpu-resource";
	argv[argc++] = names[CMD_SERVE_GPU_RESOURCES_MAX];
	assert_int_equal(cmd_serve_opts_parse(argc, argv, &o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--gpu-resource \"example.com/one-more\": at most 32"));
}

/* --ui and --ui-auth: off by default; no auth only on a loopback address;
 * the review mode needs an apiserver. */
static void opts_parse_ui(void **state)
{
	static const cmd_serve_env_t host = {NULL, NULL, "h", NULL};
	static const struct {
		const char *args[12];
		int rc;		 /* GPUQ_OK or GPUQ_EINVAL */
		bool ui, none;	 /* when accepted */
		const char *msg; /* when refused: substring of the diagnostic */
	} cases[] = {
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k"},
	     GPUQ_OK,
	     false,
	     false,
	     NULL},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui", "true"},
	     GPUQ_OK,
	     true,
	     false,
	     NULL},
	    {{"--listen", "127.0.0.1:1", "--cert-dir", "/c", "--state-dir", "/s", "--policy-dir",
	      "/p", "--ui", "true", "--ui-auth", "none"},
	     GPUQ_OK,
	     true,
	     true,
	     NULL},
	    {{"--listen", "[::1]:1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui", "true", "--ui-auth", "none"},
	     GPUQ_OK,
	     true,
	     true,
	     NULL},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui", "true", "--ui-auth", "none"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "--ui-auth none: only with a loopback --listen"},
	    {{"--listen", "10.0.0.1:1", "--cert-dir", "/c", "--state-dir", "/s", "--policy-dir",
	      "/p", "--ui", "true", "--ui-auth", "none"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "not \"10.0.0.1:1\""},
	    {{"--listen", "127.0.0.1:1", "--cert-dir", "/c", "--state-dir", "/s", "--policy-dir",
	      "/p", "--ui", "true"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "no apiserver to review tokens"},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui-auth", "none"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "--ui-auth: only with --ui true"},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui", "yes"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "--ui \"yes\""},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui", "true", "--ui-auth", "basic"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "--ui-auth \"basic\": expected review or none"},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui-idle", "5s"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "--ui-idle: only with --ui true"},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui", "true", "--ui-idle", "2h"},
	     GPUQ_EINVAL,
	     false,
	     false,
	     "--ui-idle \"2h\": expected a duration such as 30s or 5m, 1ms..1h"},
	    {{"--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s", "--kubeconfig", "/k",
	      "--ui", "true", "--ui-idle", "2s"},
	     GPUQ_OK,
	     true,
	     false,
	     ""},
	};
	cmd_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[16];
		int argc = 0, rc;

		argv[argc++] = (char *)"serve";
		for (size_t j = 0; j < 12 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		memset(&d, 0, sizeof(d));
		rc = cmd_serve_opts_parse_env(argc, argv, &host, &o, &d);
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d, want %d (%s)", i, rc, cases[i].rc, d.msg);
		if (rc && !strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: diag \"%s\" lacks \"%s\"", i, d.msg, cases[i].msg);
		if (!rc && (o.ui != cases[i].ui || o.ui_auth_none != cases[i].none))
			fail_msg("case %zu: ui %d none %d", i, o.ui, o.ui_auth_none);
		if (!rc && o.ui_idle_ms != (strcmp(argv[argc - 1], "2s") ? 0 : 2000))
			fail_msg("case %zu: --ui-idle %lld ms", i, (long long)o.ui_idle_ms);
	}
}

static void opts_check_file_system(void **state)
{
	test_pair_t a;
	cmd_serve_opts_t o;
	gpuq_diag_t d = {{0}};
	const char *certs = tmp_path("check-certs"), *pol = tmp_path("check-policy");
	const char *st = tmp_path("check-state/"), *file = tmp_path("check-file");
	struct stat sb;
	char missing[600];

	(void)state;
	pair_make(1, &a);
	memset(&o, 0, sizeof(o));
	o.cert_dir = certs;
	o.policy_dir = pol;
	o.state_dir = st;
	/* cert dir missing */
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--cert-dir \""));
	assert_non_null(strstr(d.msg, "No such file or directory"));
	/* cert dir without tls.key */
	pair_write(certs, &a, NULL);
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "cannot read tls.key"));
	pair_write(certs, NULL, &a);
	/* policy dir missing */
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--policy-dir \""));
	assert_int_equal(mkdir(pol, 0700), 0);
	/* state dir created 0700 */
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(stat(st, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, 0700);
	/* an existing state dir is fine */
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	/* a file where a dir should be */
	write_file(tmp_root, "check-file", "x", 1);
	o.state_dir = file;
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--state-dir \""));
	assert_non_null(strstr(d.msg, "not a directory"));
	/* a cluster source: no policy dir to check, the kubeconfig must be a file */
	o.state_dir = st;
	o.policy_dir = NULL;
	o.kubeconfig = tmp_path("check-kubeconfig");
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--kubeconfig \""));
	assert_non_null(strstr(d.msg, "cannot read"));
	o.kubeconfig = tmp_root; /* a directory */
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "not a regular file"));
	write_file(tmp_root, "check-kubeconfig", "apiVersion: v1\n", 15);
	o.kubeconfig = tmp_path("check-kubeconfig");
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	o.kubeconfig = NULL;
	/* state dir whose parent is missing */
	snprintf(missing, sizeof(missing), "%s/no/such", tmp_root);
	o.state_dir = missing;
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_EIO);
	assert_non_null(strstr(d.msg, "cannot create"));
	pair_free_pem(&a);
}

static int teardown_all(void **state)
{
	(void)state;
	if (tmp_made)
		rm_tree(tmp_root);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(opts_parse_good),	      cmocka_unit_test(opts_parse_bad),
	    cmocka_unit_test(opts_parse_cluster),     cmocka_unit_test(opts_parse_cluster_bad),
	    cmocka_unit_test(opts_parse_process_env), cmocka_unit_test(opts_parse_gpu_resource_cap),
	    cmocka_unit_test(opts_check_file_system), cmocka_unit_test(opts_parse_dcgm),
	    cmocka_unit_test(opts_parse_ui),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests_name("serve_opts", tests, NULL, teardown_all);
}

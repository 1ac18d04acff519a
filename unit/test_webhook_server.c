/* Unit tests for the webhook server (Section B of webhook.h): metrics text
 * format and escaping, `serve` flag parsing and checks, serving pair loading
 * and swapping, and an in-process server driven by libcurl (routes, status
 * codes, keep-alive, certificate rotation pinned per connection, policy
 * reloads). Certificates are made here with GnuTLS; files live under a
 * mkdtemp directory removed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "webhook/webhook.h"

/* ---- helpers ---- */

static char tmp_root[] = "/tmp/gpuq-test-server-XXXXXX";
static bool tmp_made;

static const char *tmp_path(const char *name)
{
	static char paths[8][512];
	static int next;
	char *p = paths[next++ % 8];

	if (!tmp_made) {
		assert_non_null(mkdtemp(tmp_root));
		tmp_made = true;
	}
	snprintf(p, 512, "%s/%s", tmp_root, name);
	return p;
}

static void rm_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char sub[1024];

	if (lstat(path, &st))
		return;
	if (S_ISDIR(st.st_mode)) {
		d = opendir(path);
		while (d && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			rm_tree(sub);
		}
		if (d)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

/* Write a file atomically (temporary + rename), as a rotation would. */
static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[1024], tmp[1024];
	FILE *f;

	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

/* A self-signed ECDSA P-256 pair for 127.0.0.1 with serial 0x10 00 00 nn
 * (0x90 00 00 nn, top bit set, when n > 0xff), as PEM (gnutls_free both). */
typedef struct {
	gnutls_datum_t crt; /* PEM certificate */
	gnutls_datum_t key; /* PEM private key */
	char serial[16];    /* upper-case hex, as webhook_tls_pair_serial prints it */
} test_pair_t;

static void pair_make(unsigned n, test_pair_t *out)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	unsigned char serial[5] = {0, n > 0xff ? 0x90 : 0x10, 0, 0, (unsigned char)n};
	unsigned char ip[4] = {127, 0, 0, 1};
	time_t now = time(NULL);

	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(
	    gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
	    0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	assert_int_equal(gnutls_x509_crt_set_version(crt, 3), 0);
	/* DER: a positive INTEGER whose top bit is set starts with 00 */
	assert_int_equal(
	    gnutls_x509_crt_set_serial(crt, serial + (n <= 0xff), sizeof(serial) - (n <= 0xff)), 0);
	assert_int_equal(gnutls_x509_crt_set_activation_time(crt, now - 3600), 0);
	assert_int_equal(gnutls_x509_crt_set_expiration_time(crt, now + 86400), 0);
	assert_int_equal(
	    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "127.0.0.1", 9), 0);
	assert_int_equal(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip,
							      sizeof(ip), GNUTLS_FSAN_SET),
			 0);
	assert_int_equal(gnutls_x509_crt_set_key(crt, key), 0);
	assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &out->crt), 0);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &out->key), 0);
	snprintf(out->serial, sizeof(out->serial), "%s0000%02X", n > 0xff ? "90" : "10", n & 0xff);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
}

static void pair_free_pem(test_pair_t *p)
{
	gnutls_free(p->crt.data);
	gnutls_free(p->key.data);
}

static void pair_write(const char *dir, const test_pair_t *crt_from, const test_pair_t *key_from)
{
	if (crt_from)
		write_file(dir, "tls.crt", crt_from->crt.data, crt_from->crt.size);
	if (key_from)
		write_file(dir, "tls.key", key_from->key.data, key_from->key.size);
}

/* ---- metrics ---- */

static void metrics_label_escape_table(void **state)
{
	static const struct {
		const char *in;
		const char *out;
	} cases[] = {
	    {"plain", "plain"},
	    {"", ""},
	    {"back\\slash", "back\\\\slash"},
	    {"say \"hi\"", "say \\\"hi\\\""},
	    {"two\nlines", "two\\nlines"},
	    {"\\\"\n", "\\\\\\\"\\n"},
	    {"/mutate", "/mutate"},
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(webhook_metrics_label_escape(cases[i].in, out, sizeof(out)),
				 GPUQ_OK);
		assert_string_equal(out, cases[i].out);
	}
	/* Exactly fits: 4 characters + NUL; one byte short fails and leaves "". */
	assert_int_equal(webhook_metrics_label_escape("a\"b", out, 5), GPUQ_OK);
	assert_string_equal(out, "a\\\"b");
	assert_int_equal(webhook_metrics_label_escape("a\"b", out, 4), GPUQ_ELIMIT);
	assert_string_equal(out, "");
	assert_int_equal(webhook_metrics_label_escape("x", out, 0), GPUQ_ELIMIT);
}

/* Check one exposition line: `name{k="v",...} value` or `name value`. */
static bool sample_line_ok(const char *line)
{
	const char *p = line;

	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':'))
		return false;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '_' || *p == ':')
		p++;
	if (*p == '{') {
		p++;
		while (*p != '}') {
			while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')
				p++;
			if (*p++ != '=' || *p++ != '"')
				return false;
			while (*p && *p != '"') {
				if (*p == '\\') {
					p++;
					if (*p != '\\' && *p != '"' && *p != 'n')
						return false;
				}
				if (*p == '\n')
					return false;
				p++;
			}
			if (*p++ != '"')
				return false;
			if (*p == ',')
				p++;
			else if (*p != '}')
				return false;
		}
		p++;
	}
	if (*p++ != ' ')
		return false;
	char *end;
	strtod(p, &end);
	return end != p && (*end == '\n' || *end == '\0');
}

static const char *find_line(const char *text, const char *prefix)
{
	const char *p = text;
	size_t n = strlen(prefix);

	while (p && *p) {
		if (!strncmp(p, prefix, n))
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static unsigned long long line_value(const char *text, const char *prefix)
{
	const char *line = find_line(text, prefix);

	assert_non_null(line);
	return strtoull(line + strlen(prefix), NULL, 10);
}

static void metrics_render_format(void **state)
{
	webhook_metrics_t *m;
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(webhook_metrics_create(&m), GPUQ_OK);
	webhook_metrics_admission_observe(m, WEBHOOK_MUTATE, "Pod", "patched", 30000); /* 30 us */
	webhook_metrics_admission_observe(m, WEBHOOK_MUTATE, "Pod", "patched", 70000); /* 70 us */
	webhook_metrics_admission_observe(m, WEBHOOK_MUTATE, "Pod", "patched", 2000000000u);
	webhook_metrics_admission_observe(m, WEBHOOK_VALIDATE, "Job", "denied", 1000000);
	/* A peer's strings never become labels: unknown values fold. */
	webhook_metrics_admission_observe(m, WEBHOOK_VALIDATE, "Secret\"}", "maybe", 1);
	webhook_metrics_http_count(m, WEBHOOK_ROUTE_HEALTHZ, 200);
	webhook_metrics_http_count(m, WEBHOOK_ROUTE_MUTATE, 415);
	webhook_metrics_http_count(m, WEBHOOK_ROUTE_OTHER, 418);
	webhook_metrics_http_count(m, (webhook_route_t)99, 404);
	webhook_metrics_policy_reload_count(m, true);
	webhook_metrics_policy_reload_count(m, false);
	webhook_metrics_policy_reload_count(m, false);
	webhook_metrics_cert_reload_count(m, true);
	webhook_metrics_policy_generation_set(m, 7);
	webhook_metrics_cert_not_after_set(m, 1893456000);
	assert_int_equal(webhook_metrics_render(m, &text, &len), GPUQ_OK);
	assert_int_equal(strlen(text), len);

	/* Every line is a comment or a well-formed sample. */
	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');
		assert_non_null(nl); /* the text ends with a newline */
		*nl = '\0';
		if (line[0] == '#')
			assert_true(!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7));
		else if (!sample_line_ok(line))
			fail_msg("bad sample line: %s", line);
		*nl = '\n';
		line = nl + 1;
	}
	assert_non_null(strstr(text, "# TYPE gpuq_admission_requests_total counter\n"));
	assert_non_null(strstr(text, "# TYPE gpuq_admission_duration_seconds histogram\n"));
	assert_non_null(strstr(text, "# TYPE gpuq_http_requests_total counter\n"));
	assert_non_null(strstr(text, "# TYPE gpuq_policy_reloads_total counter\n"));
	assert_non_null(strstr(text, "# TYPE gpuq_cert_reloads_total counter\n"));
	assert_non_null(strstr(text, "# TYPE gpuq_policy_generation gauge\n"));
	assert_non_null(strstr(text, "# TYPE process_resident_memory_bytes gauge\n"));

	const char *pp = "{endpoint=\"mutate\",kind=\"Pod\",decision=\"patched\"";
	char prefix[256];
	assert_int_equal(line_value(text, "gpuq_admission_requests_total{endpoint=\"mutate\","
					  "kind=\"Pod\",decision=\"patched\"} "),
			 3);
	/* Cumulative buckets: 30 us <= 50 us; 70 us <= 100 us; 2 s only in +Inf. */
	snprintf(prefix, sizeof(prefix), "gpuq_admission_duration_seconds_bucket%s,le=\"5e-05\"} ",
		 pp);
	assert_int_equal(line_value(text, prefix), 1);
	snprintf(prefix, sizeof(prefix), "gpuq_admission_duration_seconds_bucket%s,le=\"0.0001\"} ",
		 pp);
	assert_int_equal(line_value(text, prefix), 2);
	snprintf(prefix, sizeof(prefix), "gpuq_admission_duration_seconds_bucket%s,le=\"1\"} ", pp);
	assert_int_equal(line_value(text, prefix), 2);
	snprintf(prefix, sizeof(prefix), "gpuq_admission_duration_seconds_bucket%s,le=\"+Inf\"} ",
		 pp);
	assert_int_equal(line_value(text, prefix), 3);
	snprintf(prefix, sizeof(prefix), "gpuq_admission_duration_seconds_count%s} ", pp);
	assert_int_equal(line_value(text, prefix), 3);
	snprintf(prefix, sizeof(prefix), "gpuq_admission_duration_seconds_sum%s} ", pp);
	assert_non_null(strstr(find_line(text, prefix), "} 2.000100000\n"));
	assert_int_equal(line_value(text, "gpuq_admission_requests_total{endpoint=\"validate\","
					  "kind=\"Job\",decision=\"denied\"} "),
			 1);
	assert_int_equal(line_value(text, "gpuq_admission_requests_total{endpoint=\"validate\","
					  "kind=\"other\",decision=\"error\"} "),
			 1);
	assert_null(strstr(text, "Secret"));
	assert_null(strstr(text, "maybe"));
	assert_int_equal(
	    line_value(text, "gpuq_http_requests_total{path=\"/healthz\",code=\"200\"} "), 1);
	assert_int_equal(
	    line_value(text, "gpuq_http_requests_total{path=\"/mutate\",code=\"415\"} "), 1);
	assert_int_equal(
	    line_value(text, "gpuq_http_requests_total{path=\"other\",code=\"other\"} "), 1);
	assert_int_equal(line_value(text, "gpuq_http_requests_total{path=\"other\",code=\"404\"} "),
			 1);
	assert_int_equal(line_value(text, "gpuq_policy_reloads_total{result=\"success\"} "), 1);
	assert_int_equal(line_value(text, "gpuq_policy_reloads_total{result=\"failure\"} "), 2);
	assert_int_equal(line_value(text, "gpuq_cert_reloads_total{result=\"success\"} "), 1);
	assert_int_equal(line_value(text, "gpuq_cert_reloads_total{result=\"failure\"} "), 0);
	assert_int_equal(line_value(text, "gpuq_policy_generation "), 7);
	assert_int_equal(line_value(text, "gpuq_cert_not_after_seconds "), 1893456000);
	assert_true(line_value(text, "process_resident_memory_bytes ") > 0);
	free(text);
	webhook_metrics_destroy(m);
	webhook_metrics_destroy(NULL);
}

#define OBSERVERS 4
#define OBSERVATIONS 50000

static void *observe_many(void *arg)
{
	webhook_metrics_t *m = arg;

	for (int i = 0; i < OBSERVATIONS; i++) {
		webhook_metrics_admission_observe(m, WEBHOOK_VALIDATE, "Job", "allowed", 1000);
		webhook_metrics_http_count(m, WEBHOOK_ROUTE_READYZ, 503);
	}
	return NULL;
}

static void metrics_concurrent_counts_exact(void **state)
{
	webhook_metrics_t *m;
	pthread_t t[OBSERVERS];
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(webhook_metrics_create(&m), GPUQ_OK);
	for (int i = 0; i < OBSERVERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, observe_many, m), 0);
	for (int i = 0; i < OBSERVERS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(webhook_metrics_render(m, &text, &len), GPUQ_OK);
	assert_int_equal(line_value(text, "gpuq_admission_requests_total{endpoint=\"validate\","
					  "kind=\"Job\",decision=\"allowed\"} "),
			 OBSERVERS * OBSERVATIONS);
	assert_int_equal(
	    line_value(text, "gpuq_http_requests_total{path=\"/readyz\",code=\"503\"} "),
	    OBSERVERS * OBSERVATIONS);
	free(text);
	webhook_metrics_destroy(m);
}

/* ---- flags ---- */

/* The environment parse() gives the flags (NULL: none, as outside a Pod). */
static const webhook_serve_env_t *g_env;

static int parse(webhook_serve_opts_t *opts, gpuq_diag_t *diag, ...)
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
	return webhook_serve_opts_parse_env(argc, argv, g_env, opts, diag);
}

/* The end of parse()'s argument list. */
#define END ((char *)NULL)

#define REQUIRED "--cert-dir", "/c", "--policy-dir", "/p", "--state-dir", "/s"

static void opts_parse_good(void **state)
{
	webhook_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	assert_int_equal(parse(&o, &d, "--listen", "127.0.0.1:8443", REQUIRED, END), GPUQ_OK);
	assert_string_equal(o.host, "127.0.0.1");
	assert_int_equal(o.port, 8443);
	assert_string_equal(o.cert_dir, "/c");
	assert_string_equal(o.policy_dir, "/p");
	assert_int_equal(o.source, WEBHOOK_SOURCE_DIR);
	assert_null(o.kubeconfig);
	assert_string_equal(o.state_dir, "/s");
	assert_string_equal(o.controller_user, "system:serviceaccount:gpuq-system:gpuq");
	assert_int_equal(o.n_gpu_resources, 0);
	assert_true(o.threads >= 2);
	assert_int_equal(o.log_level, GPUQ_LOG_INFO);
	assert_false(o.help);
	assert_int_equal(o.poll_ms, WEBHOOK_POLL_MS_DEFAULT);

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

	assert_int_equal(parse(&o, &d, "--listen", ":65535", REQUIRED, END), GPUQ_OK);
	assert_string_equal(o.host, "");
	assert_int_equal(o.port, 65535);

	/* --help needs nothing else, even with other flags missing. */
	assert_int_equal(parse(&o, &d, "--help", END), GPUQ_OK);
	assert_true(o.help);
	assert_int_equal(parse(&o, &d, "-h", "--threads", "2", END), GPUQ_OK);
	assert_true(o.help);
	assert_non_null(strstr(webhook_serve_usage(), "--listen HOST:PORT"));
	assert_non_null(strstr(webhook_serve_usage(), "--gpu-resource"));
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
	    {{"--listen", ":1", REQUIRED, "--bogus", "x"}, "unknown flag \"--bogus\""},
	    {{"--listen", ":1", REQUIRED, "stray"}, "unknown flag \"stray\""},
	    {{"--listen", ":1", REQUIRED, "--threads"}, "--threads needs a value"},
	    {{"--listen", ":1", REQUIRED, "--threads", "0"}, "--threads \"0\""},
	    {{"--listen", ":1", REQUIRED, "--threads", "257"}, "--threads \"257\""},
	    {{"--listen", ":1", REQUIRED, "--threads", "-1"}, "--threads \"-1\""},
	    {{"--listen", ":1", REQUIRED, "--log-level", "loud"}, "--log-level \"loud\""},
	    {{"--listen", ":1", REQUIRED, "--gpu-resource", "gpu"}, "--gpu-resource \"gpu\""},
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
	webhook_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[16];
		int argc = 0;

		argv[argc++] = (char *)"serve";
		for (size_t j = 0; j < 12 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		memset(&d, 0, sizeof(d));
		if (webhook_serve_opts_parse_env(argc, argv, NULL, &o, &d) != GPUQ_EINVAL)
			fail_msg("case %zu: accepted", i);
		if (!strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: diag \"%s\" lacks \"%s\"", i, d.msg, cases[i].msg);
	}
}

#define CLUSTER "--listen", ":1", "--cert-dir", "/c", "--state-dir", "/s"

/* The policy source and the cluster flags, with their defaults from the
 * environment given. */
static void opts_parse_cluster(void **state)
{
	static const webhook_serve_env_t pod = {"gpuq-system-2", "gpuq-7d9f-abc", "node-1",
						"10.96.0.1"};
	static const webhook_serve_env_t host = {NULL, "", "build-box", NULL};
	webhook_serve_opts_t o;
	gpuq_diag_t d;

	(void)state;
	/* --kubeconfig: defaults, identity from the hostname */
	g_env = &host;
	assert_int_equal(parse(&o, &d, CLUSTER, "--kubeconfig", "/k/config", END), GPUQ_OK);
	assert_int_equal(o.source, WEBHOOK_SOURCE_KUBECONFIG);
	assert_string_equal(o.kubeconfig, "/k/config");
	assert_null(o.policy_dir);
	assert_true(o.leader_elect);
	assert_string_equal(o.lease_namespace, "gpuq-system");
	assert_string_equal(o.lease_name, "gpuq-controller");
	assert_string_equal(o.identity, "build-box");
	assert_true(o.qps == 50.0);
	assert_int_equal(o.burst, 100);
	/* in a Pod, neither flag: in-cluster, defaults from the downward API */
	g_env = &pod;
	assert_int_equal(parse(&o, &d, CLUSTER, END), GPUQ_OK);
	assert_int_equal(o.source, WEBHOOK_SOURCE_IN_CLUSTER);
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
	/* --policy-dir wins over being in a Pod: offline, env unused */
	assert_int_equal(parse(&o, &d, CLUSTER, "--policy-dir", "/p", END), GPUQ_OK);
	assert_int_equal(o.source, WEBHOOK_SOURCE_DIR);
	assert_string_equal(o.identity, "");
	/* the usage names them */
	for (size_t i = 0; i < 7; i++) {
		static const char *const flags[] = {"--kubeconfig PATH",
						    "--leader-elect",
						    "--lease-namespace",
						    "--lease-name",
						    "--identity",
						    "--qps",
						    "--burst"};
		assert_non_null(strstr(webhook_serve_usage(), flags[i]));
	}
	g_env = NULL;
}

static void opts_parse_cluster_bad(void **state)
{
	static const webhook_serve_env_t host = {NULL, NULL, "h", NULL};
	static const webhook_serve_env_t bad_ns = {"Team_A", NULL, "h", "10.0.0.1"};
	static const webhook_serve_env_t bad_pod = {NULL, "a b", "h", "10.0.0.1"};
	static const webhook_serve_env_t nameless = {NULL, NULL, NULL, "10.0.0.1"};
	static const struct {
		const webhook_serve_env_t *env;
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
	    {&host, {NULL}, "no policy source"},
	    {NULL, {NULL}, "(KUBERNETES_SERVICE_HOST is not set)"},
	    {&bad_ns, {NULL}, "POD_NAMESPACE \"Team_A\": expected a namespace name"},
	    {&bad_pod, {NULL}, "POD_NAME \"a b\": expected an identity"},
	    {&nameless, {NULL}, "no identity for the Lease: give --identity"},
	    {NULL, {"--kubeconfig", "/k"}, "no identity for the Lease"},
	};
	webhook_serve_opts_t o;
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
		if (webhook_serve_opts_parse_env(argc, argv, cases[i].env, &o, &d) != GPUQ_EINVAL)
			fail_msg("case %zu: accepted", i);
		if (!strstr(d.msg, cases[i].msg))
			fail_msg("case %zu: diag \"%s\" lacks \"%s\"", i, d.msg, cases[i].msg);
	}
	/* a nameless process still gets an identity from --identity */
	{
		char *argv[] = {(char *)"serve",      (char *)"--listen",   (char *)":1",
				(char *)"--cert-dir", (char *)"/c",	    (char *)"--state-dir",
				(char *)"/s",	      (char *)"--identity", (char *)"r1"};

		assert_int_equal(webhook_serve_opts_parse_env(9, argv, &nameless, &o, &d), GPUQ_OK);
		assert_string_equal(o.identity, "r1");
	}
}

/* webhook_serve_opts_parse reads the process environment. */
static void opts_parse_process_env(void **state)
{
	char *argv[] = {(char *)"serve", (char *)"--listen",	(char *)":1", (char *)"--cert-dir",
			(char *)"/c",	 (char *)"--state-dir", (char *)"/s"};
	webhook_serve_opts_t o;
	gpuq_diag_t d = {{0}};

	(void)state;
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("POD_NAMESPACE", "gpuq-test", 1);
	setenv("POD_NAME", "gpuq-0", 1);
	assert_int_equal(webhook_serve_opts_parse(7, argv, &o, &d), GPUQ_OK);
	assert_int_equal(o.source, WEBHOOK_SOURCE_IN_CLUSTER);
	assert_string_equal(o.lease_namespace, "gpuq-test");
	assert_string_equal(o.identity, "gpuq-0");
	unsetenv("POD_NAME");
	assert_int_equal(webhook_serve_opts_parse(7, argv, &o, &d), GPUQ_OK);
	assert_true(o.identity[0] != '\0'); /* the hostname */
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("POD_NAMESPACE");
	assert_int_equal(webhook_serve_opts_parse(7, argv, &o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "no policy source"));
}

static void opts_parse_gpu_resource_cap(void **state)
{
	char *argv[8 + 2 * (WEBHOOK_GPU_RESOURCES_MAX + 1)];
	char names[WEBHOOK_GPU_RESOURCES_MAX + 1][32];
	webhook_serve_opts_t o;
	gpuq_diag_t d = {{0}};
	int argc = 0;

	(void)state;
	argv[argc++] = (char *)"serve";
	argv[argc++] = (char *)"--listen=:1";
	argv[argc++] = (char *)"--cert-dir=/c";
	argv[argc++] = (char *)"--policy-dir=/p";
	argv[argc++] = (char *)"--state-dir=/s";
	for (int i = 0; i < WEBHOOK_GPU_RESOURCES_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "example.com/gpu-%d", i);
		argv[argc++] = (char *)"--gpu-resource";
		argv[argc++] = names[i];
	}
	assert_int_equal(webhook_serve_opts_parse(argc, argv, &o, &d), GPUQ_OK);
	assert_int_equal(o.n_gpu_resources, WEBHOOK_GPU_RESOURCES_MAX);
	snprintf(names[WEBHOOK_GPU_RESOURCES_MAX], 32, "example.com/one-more");
	argv[argc++] = (char *)"--gpu-resource";
	argv[argc++] = names[WEBHOOK_GPU_RESOURCES_MAX];
	assert_int_equal(webhook_serve_opts_parse(argc, argv, &o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--gpu-resource \"example.com/one-more\": at most 32"));
}

static void opts_check_file_system(void **state)
{
	test_pair_t a;
	webhook_serve_opts_t o;
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
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--cert-dir \""));
	assert_non_null(strstr(d.msg, "No such file or directory"));
	/* cert dir without tls.key */
	pair_write(certs, &a, NULL);
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "cannot read tls.key"));
	pair_write(certs, NULL, &a);
	/* policy dir missing */
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--policy-dir \""));
	assert_int_equal(mkdir(pol, 0700), 0);
	/* state dir created 0700 */
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(stat(st, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, 0700);
	/* an existing state dir is fine */
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_OK);
	/* a file where a dir should be */
	write_file(tmp_root, "check-file", "x", 1);
	o.state_dir = file;
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--state-dir \""));
	assert_non_null(strstr(d.msg, "not a directory"));
	/* a cluster source: no policy dir to check, the kubeconfig must be a file */
	o.state_dir = st;
	o.policy_dir = NULL;
	o.kubeconfig = tmp_path("check-kubeconfig");
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "--kubeconfig \""));
	assert_non_null(strstr(d.msg, "cannot read"));
	o.kubeconfig = tmp_root; /* a directory */
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "not a regular file"));
	write_file(tmp_root, "check-kubeconfig", "apiVersion: v1\n", 15);
	o.kubeconfig = tmp_path("check-kubeconfig");
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_OK);
	o.kubeconfig = NULL;
	/* state dir whose parent is missing */
	snprintf(missing, sizeof(missing), "%s/no/such", tmp_root);
	o.state_dir = missing;
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_EIO);
	assert_non_null(strstr(d.msg, "cannot create"));
	pair_free_pem(&a);
}

/* ---- the serving pair ---- */

static void tls_pair_load_checks(void **state)
{
	const char *dir = tmp_path("pair");
	test_pair_t a, b;
	webhook_tls_pair_t *pair = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	pair_make(0x21, &a);
	pair_make(0x22, &b);
	/* missing files */
	assert_int_equal(webhook_tls_pair_load(dir, &pair, &d), GPUQ_EIO);
	assert_null(pair);
	assert_non_null(strstr(d.msg, "tls.crt"));
	/* a good pair */
	pair_write(dir, &a, &a);
	assert_int_equal(webhook_tls_pair_load(dir, &pair, &d), GPUQ_OK);
	assert_string_equal(webhook_tls_pair_serial(pair), a.serial);
	assert_true(webhook_tls_pair_not_after(pair) > (int64_t)time(NULL));
	{ /* a serial with its top bit set prints without DER's leading 00 */
		test_pair_t hi;
		webhook_tls_pair_t *p2 = NULL;

		pair_make(0x1a5, &hi);
		pair_write(dir, &hi, &hi);
		assert_int_equal(webhook_tls_pair_load(dir, &p2, &d), GPUQ_OK);
		assert_string_equal(webhook_tls_pair_serial(p2), "900000A5");
		webhook_tls_pair_unref(p2);
		pair_free_pem(&hi);
		pair_write(dir, &a, &a);
	}
	assert_ptr_equal(webhook_tls_pair_ref(pair), pair);
	webhook_tls_pair_unref(pair);
	webhook_tls_pair_unref(pair);
	assert_null(webhook_tls_pair_ref(NULL));
	webhook_tls_pair_unref(NULL);
	/* key of another certificate */
	pair_write(dir, &a, &b);
	assert_int_equal(webhook_tls_pair_load(dir, &pair, &d), GPUQ_ETLS);
	assert_non_null(strstr(d.msg, "tls.key does not match the certificate"));
	/* garbage */
	write_file(dir, "tls.crt", "not a certificate\n", 18);
	assert_int_equal(webhook_tls_pair_load(dir, &pair, &d), GPUQ_ETLS);
	assert_non_null(strstr(d.msg, "tls.crt: no PEM certificate"));
	pair_write(dir, &a, NULL);
	write_file(dir, "tls.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		   58);
	assert_int_equal(webhook_tls_pair_load(dir, &pair, &d), GPUQ_ETLS);
	assert_non_null(strstr(d.msg, "tls.key: no usable PEM private key"));
	/* a chain: leaf then another certificate; the leaf's key matches */
	{
		size_t n = a.crt.size + b.crt.size;
		char *chain = malloc(n);

		memcpy(chain, a.crt.data, a.crt.size);
		memcpy(chain + a.crt.size, b.crt.data, b.crt.size);
		write_file(dir, "tls.crt", chain, n);
		free(chain);
		pair_write(dir, NULL, &a);
		assert_int_equal(webhook_tls_pair_load(dir, &pair, &d), GPUQ_OK);
		assert_string_equal(webhook_tls_pair_serial(pair), a.serial);
		webhook_tls_pair_unref(pair);
	}
	pair_free_pem(&a);
	pair_free_pem(&b);
}

static void tls_poll_swaps_pairs(void **state)
{
	const char *dir = tmp_path("swap");
	test_pair_t a, b, c;
	webhook_tls_t *tls = NULL;
	webhook_tls_pair_t *held, *now;
	gpuq_diag_t d = {{0}};

	(void)state;
	pair_make(0x31, &a);
	pair_make(0x32, &b);
	pair_make(0x33, &c);
	assert_int_equal(webhook_tls_create(dir, &tls, &d), GPUQ_EIO);
	assert_null(tls);
	pair_write(dir, &a, &a);
	assert_int_equal(webhook_tls_create(dir, &tls, &d), GPUQ_OK);
	held = webhook_tls_current(tls); /* a connection handshaken with A */
	assert_string_equal(webhook_tls_pair_serial(held), a.serial);
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_UNCHANGED);

	/* rotation to B: new handshakes get B, the held reference to A stays valid */
	pair_write(dir, &b, &b);
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_RELOADED);
	now = webhook_tls_current(tls);
	assert_string_equal(webhook_tls_pair_serial(now), b.serial);
	webhook_tls_pair_unref(now);
	assert_string_equal(webhook_tls_pair_serial(held), a.serial);
	webhook_tls_pair_unref(held); /* the A connection closes: A is freed here */
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_UNCHANGED);

	/* half a rotation: new crt, old key. Pending one poll, then refused;
	 * B serves throughout. */
	pair_write(dir, &c, NULL);
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_PENDING);
	now = webhook_tls_current(tls);
	assert_string_equal(webhook_tls_pair_serial(now), b.serial);
	webhook_tls_pair_unref(now);
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_REFUSED);
	assert_non_null(strstr(d.msg, "does not match"));
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_UNCHANGED);
	now = webhook_tls_current(tls);
	assert_string_equal(webhook_tls_pair_serial(now), b.serial);
	webhook_tls_pair_unref(now);

	/* the rotation completes: the key arrives and C loads at once */
	pair_write(dir, NULL, &c);
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_RELOADED);
	now = webhook_tls_current(tls);
	assert_string_equal(webhook_tls_pair_serial(now), c.serial);
	webhook_tls_pair_unref(now);

	/* files removed: refused after the settle poll, C keeps serving */
	char path[600];
	snprintf(path, sizeof(path), "%s/tls.key", dir);
	unlink(path);
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_PENDING);
	assert_int_equal(webhook_tls_poll(tls, &d), WEBHOOK_TLS_REFUSED);
	now = webhook_tls_current(tls);
	assert_string_equal(webhook_tls_pair_serial(now), c.serial);
	webhook_tls_pair_unref(now);

	webhook_tls_destroy(tls);
	webhook_tls_destroy(NULL);
	pair_free_pem(&a);
	pair_free_pem(&b);
	pair_free_pem(&c);
}

/* ---- an in-process server, driven by libcurl ---- */

typedef struct {
	char body[131072]; /* response body, truncated */
	size_t len;	   /* bytes in body */
} sink_t;

static size_t sink_write(char *data, size_t size, size_t n, void *arg)
{
	sink_t *s = arg;
	size_t bytes = size * n, room = sizeof(s->body) - 1 - s->len;

	if (bytes < room)
		room = bytes;
	memcpy(s->body + s->len, data, room);
	s->len += room;
	s->body[s->len] = '\0';
	return bytes;
}

/* A free TCP port on 127.0.0.1 (bound by the kernel, then released). */
static uint16_t free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

typedef struct {
	CURL *curl;	 /* one handle: its connection is reused (keep-alive) */
	uint16_t port;	 /* server port */
	sink_t sink;	 /* last response body */
	long code;	 /* last HTTP status, 0 on transport failure */
	char serial[64]; /* serial of the server certificate seen, upper-case hex */
	long new_conns;	 /* connections the last request opened (0 = reused) */
} client_t;

static void client_init(client_t *c, uint16_t port)
{
	memset(c, 0, sizeof(*c));
	c->port = port;
	c->curl = curl_easy_init();
	assert_non_null(c->curl);
}

/* Serial from libcurl's certinfo ("Serial Number:10:00:00:31" or hex). */
static void client_serial(client_t *c)
{
	struct curl_certinfo *ci = NULL;

	c->serial[0] = '\0';
	if (curl_easy_getinfo(c->curl, CURLINFO_CERTINFO, &ci) || !ci || ci->num_of_certs < 1)
		return;
	for (struct curl_slist *s = ci->certinfo[0]; s; s = s->next) {
		if (strncmp(s->data, "Serial Number:", 14))
			continue;
		size_t o = 0;
		for (const char *p = s->data + 14; *p && o + 1 < sizeof(c->serial); p++)
			if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
			    (*p >= 'A' && *p <= 'F'))
				c->serial[o++] = (char)(*p >= 'a' ? *p - 32 : *p);
		c->serial[o] = '\0';
	}
}

static void request(client_t *c, const char *method, const char *path, const char *ctype,
		    const char *body)
{
	char url[256], hdr[128];
	struct curl_slist *h = NULL;

	snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", (unsigned)c->port, path);
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L); /* self-signed, rotated */
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c->curl, CURLOPT_CERTINFO, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->sink);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	if (ctype) {
		snprintf(hdr, sizeof(hdr), "Content-Type: %s", ctype);
		h = curl_slist_append(h, hdr);
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	}
	c->sink.len = 0;
	c->sink.body[0] = '\0';
	c->code = 0;
	if (curl_easy_perform(c->curl) == CURLE_OK)
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->code);
	curl_easy_getinfo(c->curl, CURLINFO_NUM_CONNECTS, &c->new_conns);
	client_serial(c);
	curl_slist_free_all(h);
}

static const char good_policy[] = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n";
/* Refused by the real loader (unknown kind) and by name. */
static const char bad_policy[] = "apiVersion: v1\nkind: BADKind\nmetadata:\n  name: BAD\n";

static bool wait_for(bool (*cond)(void *), void *arg, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (cond(arg))
			return true;
		struct timespec ts = {0, 10000000L};
		nanosleep(&ts, NULL);
	}
	return cond(arg);
}

static bool serial_is(void *arg)
{
	struct {
		client_t *c;
		const char *want;
	} *w = arg;
	request(w->c, "GET", "/healthz", NULL, NULL);
	return !strcmp(w->c->serial, w->want);
}

static unsigned long long metric(webhook_server_t *srv, const char *prefix)
{
	char *text;
	size_t len;
	const char *line;
	unsigned long long v;

	assert_int_equal(webhook_metrics_render(webhook_server_metrics(srv), &text, &len), GPUQ_OK);
	line = find_line(text, prefix);
	v = line ? strtoull(line + strlen(prefix), NULL, 10) : 0;
	free(text);
	return v;
}

static webhook_server_t *gen_srv; /* for the condition below */
static bool policy_failures_seen(void *arg)
{
	(void)arg;
	return metric(gen_srv, "gpuq_policy_reloads_total{result=\"failure\"} ") >= 1;
}
static bool policy_generation_3(void *arg)
{
	(void)arg;
	return metric(gen_srv, "gpuq_policy_generation ") == 3;
}

static void server_in_process(void **state)
{
	const char *certs = tmp_path("srv-certs"), *pol = tmp_path("srv-policy");
	const char *st = tmp_path("srv-state");
	test_pair_t a, b;
	webhook_serve_opts_t o;
	webhook_server_t *srv = NULL;
	gpuq_diag_t d = {{0}};
	client_t c1, c2;
	char listen[32], big[512];

	(void)state;
	pair_make(0x41, &a);
	pair_make(0x42, &b);
	pair_write(certs, &a, &a);
	mkdir(pol, 0700);
	write_file(pol, "ns.yaml", good_policy, strlen(good_policy));
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)free_port());
	{
		char *argv[] = {(char *)"serve",      (char *)"--listen",    listen,
				(char *)"--cert-dir", (char *)certs,	     (char *)"--policy-dir",
				(char *)pol,	      (char *)"--state-dir", (char *)st,
				(char *)"--threads",  (char *)"2",	     NULL};
		assert_int_equal(webhook_serve_opts_parse(11, argv, &o, &d), GPUQ_OK);
	}
	o.poll_ms = 50; /* fast polling for the test */
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(webhook_server_create(&o, &srv, &d), GPUQ_OK);
	gen_srv = srv;
	assert_int_equal(webhook_server_start(srv, &d), GPUQ_OK);

	/* a second server on the same port fails, naming the flag */
	{
		webhook_server_t *srv2 = NULL;
		gpuq_diag_t d2 = {{0}};

		assert_int_equal(webhook_server_create(&o, &srv2, &d2), GPUQ_OK);
		assert_int_equal(webhook_server_start(srv2, &d2), GPUQ_EIO);
		assert_non_null(strstr(d2.msg, "--listen \""));
		webhook_server_destroy(srv2);
	}

	client_init(&c1, o.port);
	client_init(&c2, o.port);
	request(&c1, "GET", "/healthz", NULL, NULL);
	assert_int_equal(c1.code, 200);
	assert_string_equal(c1.sink.body, "ok\n");
	assert_string_equal(c1.serial, a.serial);
	assert_int_equal(c1.new_conns, 1);
	request(&c1, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c1.code, 200);
	assert_int_equal(c1.new_conns, 0); /* keep-alive: same connection */
	request(&c1, "GET", "/nope", NULL, NULL);
	assert_int_equal(c1.code, 404);
	request(&c1, "DELETE", "/healthz", NULL, NULL);
	assert_int_equal(c1.code, 405);
	request(&c1, "GET", "/mutate", NULL, NULL);
	assert_int_equal(c1.code, 405);
	request(&c1, "POST", "/validate?timeout=10s", "text/plain", "{}");
	assert_int_equal(c1.code, 415);
	assert_non_null(strstr(c1.sink.body, "application/json"));
	/* Not a review: Section A answers 400; the query string is ignored. */
	request(&c1, "POST", "/validate?timeout=10s", "application/json; charset=utf-8", "[1]");
	assert_int_equal(c1.code, 400);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	request(&c1, "POST", "/mutate", "application/json", big);
	assert_int_equal(c1.code, 400);
	request(&c1, "GET", "/metrics", NULL, NULL);
	assert_int_equal(c1.code, 200);
	assert_non_null(strstr(c1.sink.body, "gpuq_http_requests_total{path=\"/mutate\","
					     "code=\"405\"} 1\n"));
	assert_non_null(strstr(c1.sink.body, "gpuq_http_requests_total{path=\"/validate\","
					     "code=\"415\"} 1\n"));
	assert_non_null(strstr(c1.sink.body, "gpuq_http_requests_total{path=\"other\","
					     "code=\"404\"} 1\n"));
	assert_non_null(strstr(c1.sink.body, "gpuq_policy_generation 1\n"));

	/* Rotation: c2 connects on A and stays; the files change to B; new
	 * connections see B while c2's connection keeps working on A. */
	request(&c2, "GET", "/healthz", NULL, NULL);
	assert_int_equal(c2.code, 200);
	assert_string_equal(c2.serial, a.serial);
	pair_write(certs, &b, &b);
	{
		client_t c3;
		struct {
			client_t *c;
			const char *want;
		} w = {&c3, b.serial};

		client_init(&c3, o.port);
		/* a fresh handle per try: each opens a new connection */
		bool seen = false;
		for (int i = 0; i < 200 && !seen; i++) {
			curl_easy_cleanup(c3.curl);
			c3.curl = curl_easy_init();
			seen = serial_is(&w);
			if (!seen) {
				struct timespec ts = {0, 10000000L};
				nanosleep(&ts, NULL);
			}
		}
		assert_true(seen);
		assert_int_equal(c3.code, 200);
		curl_easy_cleanup(c3.curl);
	}
	request(&c2, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c2.code, 200);
	assert_int_equal(c2.new_conns, 0); /* still the connection handshaken with A */
	assert_int_equal(metric(srv, "gpuq_cert_reloads_total{result=\"success\"} "), 1);

	/* A bad policy is refused (after its settle poll) and the old one serves. */
	write_file(pol, "bad.yaml", bad_policy, strlen(bad_policy));
	assert_true(wait_for(policy_failures_seen, NULL, 5000));
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 1);
	assert_int_not_equal(webhook_server_policy_reload(srv), GPUQ_OK);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 1);
	request(&c1, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c1.code, 200);
	/* Fixed: the watcher loads it (generation 2), then an explicit reload (3). */
	{
		char path[600];
		snprintf(path, sizeof(path), "%s/bad.yaml", pol);
		unlink(path);
	}
	for (int i = 0; i < 500 && metric(srv, "gpuq_policy_generation ") < 2; i++) {
		struct timespec ts = {0, 10000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 2);
	assert_int_equal(webhook_server_policy_reload(srv), GPUQ_OK);
	assert_true(wait_for(policy_generation_3, NULL, 1000));

	/* One policy source: a dir server refuses a fed policy and ignores a clear. */
	{
		policy_t *p = NULL;

		assert_int_equal(policy_create(NULL, &p), GPUQ_OK);
		assert_int_equal(policy_finish(p, &d), GPUQ_OK);
		assert_int_equal(webhook_server_policy_set(srv, p), GPUQ_EINVAL);
		policy_unref(p);
		webhook_server_policy_clear(srv);
		request(&c1, "GET", "/readyz", NULL, NULL);
		assert_int_equal(c1.code, 200);
		assert_int_equal(metric(srv, "gpuq_policy_generation "), 3);
	}

	/* Graceful stop: readyz would now say 503; the port is closed after. */
	webhook_server_stop(srv, 1000);
	webhook_server_stop(srv, 1000); /* idempotent */
	request(&c1, "GET", "/healthz", NULL, NULL);
	assert_int_equal(c1.code, 0);
	curl_easy_cleanup(c1.curl);
	curl_easy_cleanup(c2.curl);
	webhook_server_destroy(srv);
	webhook_server_destroy(NULL);
	pair_free_pem(&a);
	pair_free_pem(&b);
}

/* A GPU Pod CREATE in team-a (which good_policy declares, unmanaged). */
static const char feed_review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"feed-uid\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice\"},"
    "\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}";

static policy_t *policy_from(const char *yaml)
{
	policy_t *p = NULL;
	gpuq_diag_t d = {{0}};

	assert_int_equal(policy_create(NULL, &p), GPUQ_OK);
	assert_int_equal(policy_add_manifest(p, "feed.yaml", yaml, strlen(yaml), &d), GPUQ_OK);
	assert_int_equal(policy_finish(p, &d), GPUQ_OK);
	return p;
}

typedef struct {
	webhook_server_t *srv; /* the server fed */
	policy_t *p;	       /* the policy set each round */
	int rounds;	       /* set/clear rounds */
} feeder_t;

static void *feeder(void *arg)
{
	feeder_t *f = arg;

	for (int i = 0; i < f->rounds; i++) {
		assert_int_equal(webhook_server_policy_set(f->srv, f->p), GPUQ_OK);
		webhook_server_policy_clear(f->srv);
	}
	return NULL;
}

/* Without --policy-dir the server starts with no policy and fails closed
 * (/readyz 503, reviews 503) until webhook_server_policy_set feeds it one;
 * policy_clear goes back; swaps under load never give another answer. */
static void server_policy_feed(void **state)
{
	const char *certs = tmp_path("feed-certs"), *st = tmp_path("feed-state");
	const char *kc = tmp_path("feed-kubeconfig");
	static const webhook_serve_env_t env = {NULL, NULL, "test-host", NULL};
	test_pair_t a;
	webhook_serve_opts_t o;
	webhook_server_t *srv = NULL;
	gpuq_diag_t d = {{0}};
	client_t c;
	char listen[32];
	policy_t *p1, *p2;

	(void)state;
	pair_make(0x71, &a);
	pair_write(certs, &a, &a);
	write_file(tmp_root, "feed-kubeconfig", "apiVersion: v1\n", 15);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)free_port());
	{
		char *argv[] = {(char *)"serve", (char *)"--listen",
				listen,		 (char *)"--cert-dir",
				(char *)certs,	 (char *)"--kubeconfig",
				(char *)kc,	 (char *)"--state-dir",
				(char *)st,	 NULL};
		assert_int_equal(webhook_serve_opts_parse_env(9, argv, &env, &o, &d), GPUQ_OK);
	}
	assert_null(o.policy_dir);
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(webhook_server_create(&o, &srv, &d), GPUQ_OK);
	assert_int_equal(webhook_server_start(srv, &d), GPUQ_OK);
	client_init(&c, o.port);

	/* not synced: fail closed */
	request(&c, "GET", "/healthz", NULL, NULL);
	assert_int_equal(c.code, 200);
	request(&c, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c.code, 503);
	assert_string_equal(c.sink.body, "not ready: no policy: not synced with the apiserver\n");
	request(&c, "POST", "/validate", "application/json", feed_review);
	assert_int_equal(c.code, 503);
	assert_non_null(strstr(c.sink.body, "no policy yet (not synced with the apiserver)"));
	request(&c, "POST", "/mutate", "application/json", feed_review);
	assert_int_equal(c.code, 503);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 0);
	assert_int_equal(metric(srv, "gpuq_admission_requests_total{endpoint=\"validate\","
				     "kind=\"Pod\",decision=\"unavailable\"} "),
			 1);
	assert_int_equal(webhook_server_policy_reload(srv), GPUQ_EINVAL); /* nothing on disk */
	assert_int_equal(webhook_server_policy_set(srv, NULL), GPUQ_EINVAL);

	/* fed: decides; the server holds its own reference */
	p1 = policy_from(good_policy);
	assert_int_equal(webhook_server_policy_set(srv, p1), GPUQ_OK);
	policy_unref(p1);
	request(&c, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c.code, 200);
	request(&c, "POST", "/validate", "application/json", feed_review);
	assert_int_equal(c.code, 200);
	assert_non_null(strstr(c.sink.body, "\"allowed\":true"));
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 1);
	assert_int_equal(metric(srv, "gpuq_policy_reloads_total{result=\"success\"} "), 1);
	p2 = policy_from(good_policy);
	assert_int_equal(webhook_server_policy_set(srv, p2), GPUQ_OK);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 2);

	/* cleared (watches lost too long): back to failing closed */
	webhook_server_policy_clear(srv);
	request(&c, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c.code, 503);
	request(&c, "POST", "/mutate", "application/json", feed_review);
	assert_int_equal(c.code, 503);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 2);
	webhook_server_policy_clear(srv); /* twice is fine */

	/* swaps while reviews are decided: every answer is 200 or 503 */
	{
		feeder_t f = {srv, p2, 300};
		pthread_t t;
		int ok = 0, unavailable = 0;

		assert_int_equal(pthread_create(&t, NULL, feeder, &f), 0);
		for (int i = 0; i < 60; i++) {
			request(&c, "POST", i % 2 ? "/mutate" : "/validate", "application/json",
				feed_review);
			if (c.code == 200)
				ok++;
			else if (c.code == 503)
				unavailable++;
			else
				fail_msg("answer %d: %ld %s", i, c.code, c.sink.body);
		}
		pthread_join(t, NULL);
		assert_int_equal(ok + unavailable, 60);
	}
	assert_int_equal(webhook_server_policy_set(srv, p2), GPUQ_OK);
	policy_unref(p2);
	request(&c, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c.code, 200);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 303);

	curl_easy_cleanup(c.curl);
	webhook_server_destroy(srv);
	pair_free_pem(&a);
}

/* Body budget: with 1000 bytes for all bodies together, a 2000-byte review
 * is answered 503 up front, a chunked one is answered 503 once its end is
 * read, and budget comes back when a request completes. */
static void server_body_budget(void **state)
{
	const char *certs = tmp_path("budget-certs"), *pol = tmp_path("budget-policy");
	const char *st = tmp_path("budget-state");
	test_pair_t a;
	webhook_serve_opts_t o;
	webhook_server_t *srv = NULL;
	gpuq_diag_t d = {{0}};
	client_t c;
	char listen[32], body[2001];

	(void)state;
	pair_make(0x51, &a);
	pair_write(certs, &a, &a);
	mkdir(pol, 0700);
	write_file(pol, "ns.yaml", good_policy, strlen(good_policy));
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)free_port());
	{
		char *argv[] = {(char *)"serve", (char *)"--listen",
				listen,		 (char *)"--cert-dir",
				(char *)certs,	 (char *)"--policy-dir",
				(char *)pol,	 (char *)"--state-dir",
				(char *)st,	 NULL};
		assert_int_equal(webhook_serve_opts_parse(9, argv, &o, &d), GPUQ_OK);
	}
	assert_int_equal(o.body_budget, WEBHOOK_BODY_BUDGET_DEFAULT);
	o.body_budget = 1000;
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(webhook_server_create(&o, &srv, &d), GPUQ_OK);
	assert_int_equal(webhook_server_start(srv, &d), GPUQ_OK);
	client_init(&c, o.port);

	memset(body, ' ', sizeof(body) - 1);
	body[sizeof(body) - 1] = '\0';
	request(&c, "POST", "/mutate", "application/json", body);
	assert_int_equal(c.code, 503);
	assert_non_null(strstr(c.sink.body, "busy"));
	body[900] = '\0';
	for (int i = 0; i < 3; i++) { /* each returns its 900 bytes when done */
		request(&c, "POST", "/mutate", "application/json", body);
		assert_int_equal(c.code, 400); /* blanks are not a review */
	}
	/* chunked: no length up front; the first 64 KiB buffer exceeds the budget */
	{
		struct curl_slist *h = NULL;
		char url[64];
		CURLcode cc;

		body[900] = ' ';
		snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", (unsigned)o.port);
		curl_easy_reset(c.curl);
		h = curl_slist_append(h, "Content-Type: application/json");
		h = curl_slist_append(h, "Transfer-Encoding: chunked");
		curl_easy_setopt(c.curl, CURLOPT_URL, url);
		curl_easy_setopt(c.curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c.curl, CURLOPT_SSL_VERIFYHOST, 0L);
		curl_easy_setopt(c.curl, CURLOPT_TIMEOUT, 10L);
		/* a new connection: on a reused one libcurl would retry once */
		curl_easy_setopt(c.curl, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(c.curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c.curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c.curl, CURLOPT_WRITEFUNCTION, sink_write);
		curl_easy_setopt(c.curl, CURLOPT_WRITEDATA, &c.sink);
		c.sink.len = 0;
		cc = curl_easy_perform(c.curl);
		curl_slist_free_all(h);
		assert_int_equal(cc, CURLE_OK); /* the rest is read and dropped, then answered */
		curl_easy_getinfo(c.curl, CURLINFO_RESPONSE_CODE, &c.code);
		assert_int_equal(c.code, 503);
		assert_non_null(strstr(c.sink.body, "busy"));
	}
	request(&c, "GET", "/healthz", NULL, NULL);
	assert_int_equal(c.code, 200);
	assert_int_equal(metric(srv, "gpuq_http_requests_total{path=\"/mutate\",code=\"503\"} "),
			 1);
	assert_int_equal(metric(srv, "gpuq_http_requests_total{path=\"/validate\",code=\"503\"} "),
			 1);
	curl_easy_cleanup(c.curl);
	webhook_server_destroy(srv); /* stops it first */
	pair_free_pem(&a);
}

/* A review uploaded slowly, on its own connection (a thread). */
typedef struct {
	uint16_t port; /* server port */
	char *body;    /* the review, padded with blanks to about 100 KB */
	long code;     /* HTTP status, 0 on transport failure */
	sink_t *sink;  /* response body */
} slow_post_t;

static void *slow_post(void *arg)
{
	slow_post_t *sp = arg;
	client_t c;

	client_init(&c, sp->port);
	curl_easy_setopt(c.curl, CURLOPT_MAX_SEND_SPEED_LARGE, (curl_off_t)100000); /* ~1 s */
	{
		char url[64];
		struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");

		snprintf(url, sizeof(url), "https://127.0.0.1:%u/validate", (unsigned)sp->port);
		curl_easy_setopt(c.curl, CURLOPT_URL, url);
		curl_easy_setopt(c.curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c.curl, CURLOPT_SSL_VERIFYHOST, 0L);
		curl_easy_setopt(c.curl, CURLOPT_TIMEOUT, 20L);
		curl_easy_setopt(c.curl, CURLOPT_POSTFIELDS, sp->body);
		curl_easy_setopt(c.curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c.curl, CURLOPT_WRITEFUNCTION, sink_write);
		curl_easy_setopt(c.curl, CURLOPT_WRITEDATA, sp->sink);
		if (curl_easy_perform(c.curl) == CURLE_OK)
			curl_easy_getinfo(c.curl, CURLINFO_RESPONSE_CODE, &sp->code);
		curl_slist_free_all(h);
	}
	curl_easy_cleanup(c.curl);
	return NULL;
}

static void *stop_server(void *arg)
{
	webhook_server_stop(arg, 10000);
	return NULL;
}

static const char review_json[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"drain-uid\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":"
    "\"default\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice\"},\"object\":{"
    "\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
    "\"default\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}";

/* Graceful stop: a review in flight finishes with 200, an idle keep-alive
 * connection gets 503 from /readyz (with Connection: close), new
 * connections are refused. */
static void server_graceful_stop(void **state)
{
	const char *certs = tmp_path("drain-certs"), *pol = tmp_path("drain-policy");
	const char *st = tmp_path("drain-state");
	test_pair_t a;
	webhook_serve_opts_t o;
	webhook_server_t *srv = NULL;
	gpuq_diag_t d = {{0}};
	client_t ka, fresh;
	char listen[32];
	size_t pad = 100000;
	static sink_t slow_sink;
	slow_post_t sp;
	pthread_t poster, stopper;
	struct timespec pause = {0, 300000000L};

	(void)state;
	pair_make(0x61, &a);
	pair_write(certs, &a, &a);
	mkdir(pol, 0700);
	write_file(pol, "ns.yaml", good_policy, strlen(good_policy));
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)free_port());
	{
		char *argv[] = {(char *)"serve", (char *)"--listen",
				listen,		 (char *)"--cert-dir",
				(char *)certs,	 (char *)"--policy-dir",
				(char *)pol,	 (char *)"--state-dir",
				(char *)st,	 NULL};
		assert_int_equal(webhook_serve_opts_parse(9, argv, &o, &d), GPUQ_OK);
	}
	assert_int_equal(webhook_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(webhook_server_create(&o, &srv, &d), GPUQ_OK);
	assert_int_equal(webhook_server_start(srv, &d), GPUQ_OK);

	client_init(&ka, o.port);
	request(&ka, "GET", "/readyz", NULL, NULL);
	assert_int_equal(ka.code, 200);

	memset(&sp, 0, sizeof(sp));
	sp.port = o.port;
	sp.sink = &slow_sink;
	sp.body = malloc(pad + sizeof(review_json));
	assert_non_null(sp.body);
	memset(sp.body, ' ', pad);
	memcpy(sp.body + pad, review_json, sizeof(review_json));
	assert_int_equal(pthread_create(&poster, NULL, slow_post, &sp), 0);
	nanosleep(&pause, NULL); /* the upload is under way */
	assert_int_equal(pthread_create(&stopper, NULL, stop_server, srv), 0);
	nanosleep(&pause, NULL); /* the server is draining */

	request(&ka, "GET", "/readyz", NULL, NULL);
	assert_int_equal(ka.code, 503);
	assert_int_equal(ka.new_conns, 0); /* asked on the open connection */
	assert_string_equal(ka.sink.body, "shutting down\n");
	client_init(&fresh, o.port);
	request(&fresh, "GET", "/healthz", NULL, NULL);
	assert_int_equal(fresh.code, 0); /* no longer listening */

	pthread_join(poster, NULL);
	pthread_join(stopper, NULL);
	assert_int_equal(sp.code, 200);
	assert_non_null(strstr(slow_sink.body, "drain-uid"));

	free(sp.body);
	curl_easy_cleanup(ka.curl);
	curl_easy_cleanup(fresh.curl);
	webhook_server_destroy(srv);
	pair_free_pem(&a);
}

static int teardown_all(void **state)
{
	(void)state;
	if (tmp_made)
		rm_tree(tmp_root);
	curl_global_cleanup();
	return 0;
}

static int setup_all(void **state)
{
	(void)state;
	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return curl_global_init(CURL_GLOBAL_DEFAULT) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(metrics_label_escape_table),
	    cmocka_unit_test(metrics_render_format),
	    cmocka_unit_test(metrics_concurrent_counts_exact),
	    cmocka_unit_test(opts_parse_good),
	    cmocka_unit_test(opts_parse_bad),
	    cmocka_unit_test(opts_parse_cluster),
	    cmocka_unit_test(opts_parse_cluster_bad),
	    cmocka_unit_test(opts_parse_process_env),
	    cmocka_unit_test(opts_parse_gpu_resource_cap),
	    cmocka_unit_test(opts_check_file_system),
	    cmocka_unit_test(tls_pair_load_checks),
	    cmocka_unit_test(tls_poll_swaps_pairs),
	    cmocka_unit_test(server_in_process),
	    cmocka_unit_test(server_policy_feed),
	    cmocka_unit_test(server_body_budget),
	    cmocka_unit_test(server_graceful_stop),
	};

	return cmocka_run_group_tests_name("webhook_server", tests, setup_all, teardown_all);
}

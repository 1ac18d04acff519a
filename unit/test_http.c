/* Unit tests for the HTTP server (http/http.h) and admission on it
 * (webhook.h Section B): metrics text format and escaping, serving pair
 * loading and swapping, and an in-process server driven by libcurl, set up
 * from `serve` flags as gpuq serve does (routes, status codes, keep-alive,
 * certificate rotation pinned per connection, policy reloads). Certificates are made here with
 * GnuTLS; files live under a mkdtemp directory removed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/serve_opts.h"
#include "http/http.h"
#include "webhook/webhook.h"

#include "unit/server_fixtures.h"
#include "unit/socket_fixtures.h"

/* ---- metrics ---- */

/* The server's registry with admission's families in their slot, as
 * webhook_admission_create attaches them. */
static http_metrics_t *metrics_with_admission(webhook_metrics_t **am)
{
	http_metrics_t *m;

	assert_int_equal(http_metrics_create(&m), GPUQ_OK);
	assert_int_equal(webhook_metrics_create(am), GPUQ_OK);
	http_metrics_source_slot_set(m, HTTP_METRICS_SOURCE_ADMISSION, webhook_metrics_render, *am);
	return m;
}

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
		assert_int_equal(http_metrics_label_escape(cases[i].in, out, sizeof(out)), GPUQ_OK);
		assert_string_equal(out, cases[i].out);
	}
	/* Exactly fits: 4 characters + NUL; one byte short fails and leaves "". */
	assert_int_equal(http_metrics_label_escape("a\"b", out, 5), GPUQ_OK);
	assert_string_equal(out, "a\\\"b");
	assert_int_equal(http_metrics_label_escape("a\"b", out, 4), GPUQ_ELIMIT);
	assert_string_equal(out, "");
	assert_int_equal(http_metrics_label_escape("x", out, 0), GPUQ_ELIMIT);
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
	webhook_metrics_t *am;
	http_metrics_t *m = metrics_with_admission(&am);
	char *text;
	size_t len;

	(void)state;
	webhook_metrics_admission_observe(am, WEBHOOK_MUTATE, "Pod", "patched", 30000); /* 30 us */
	webhook_metrics_admission_observe(am, WEBHOOK_MUTATE, "Pod", "patched", 70000); /* 70 us */
	webhook_metrics_admission_observe(am, WEBHOOK_MUTATE, "Pod", "patched", 2000000000u);
	webhook_metrics_admission_observe(am, WEBHOOK_VALIDATE, "Job", "denied", 1000000);
	/* A peer's strings never become labels: unknown values fold. */
	webhook_metrics_admission_observe(am, WEBHOOK_VALIDATE, "Secret\"}", "maybe", 1);
	http_metrics_reply_count(m, HTTP_ROUTE_HEALTHZ, 200);
	http_metrics_reply_count(m, HTTP_ROUTE_MUTATE, 415);
	http_metrics_reply_count(m, HTTP_ROUTE_OTHER, 418);
	http_metrics_reply_count(m, (http_route_t)99, 404);
	webhook_metrics_policy_reload_count(am, true);
	webhook_metrics_policy_reload_count(am, false);
	webhook_metrics_policy_reload_count(am, false);
	http_metrics_cert_reload_count(m, true);
	webhook_metrics_policy_generation_set(am, 7);
	http_metrics_cert_not_after_set(m, 1893456000);
	assert_int_equal(http_metrics_render(m, &text, &len), GPUQ_OK);
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
	http_metrics_destroy(m);
	http_metrics_destroy(NULL);
	webhook_metrics_destroy(am);
	webhook_metrics_destroy(NULL);
}

#define OBSERVERS 4
#define OBSERVATIONS 50000

typedef struct {
	http_metrics_t *m;     /* the server's registry */
	webhook_metrics_t *am; /* admission's, in its slot */
} both_t;

static void *observe_many(void *arg)
{
	both_t *b = arg;
	http_metrics_t *m = b->m;
	webhook_metrics_t *am = b->am;

	for (int i = 0; i < OBSERVATIONS; i++) {
		webhook_metrics_admission_observe(am, WEBHOOK_VALIDATE, "Job", "allowed", 1000);
		http_metrics_reply_count(m, HTTP_ROUTE_READYZ, 503);
	}
	return NULL;
}

static void metrics_concurrent_counts_exact(void **state)
{
	both_t b;
	pthread_t t[OBSERVERS];
	char *text;
	size_t len;

	(void)state;
	b.m = metrics_with_admission(&b.am);
	for (int i = 0; i < OBSERVERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, observe_many, &b), 0);
	for (int i = 0; i < OBSERVERS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(http_metrics_render(b.m, &text, &len), GPUQ_OK);
	assert_int_equal(line_value(text, "gpuq_admission_requests_total{endpoint=\"validate\","
					  "kind=\"Job\",decision=\"allowed\"} "),
			 OBSERVERS * OBSERVATIONS);
	assert_int_equal(
	    line_value(text, "gpuq_http_requests_total{path=\"/readyz\",code=\"503\"} "),
	    OBSERVERS * OBSERVATIONS);
	free(text);
	http_metrics_destroy(b.m);
	webhook_metrics_destroy(b.am);
}

/* A source of outside metrics: one gauge, or (big) more than the cap. */
typedef struct {
	int calls;   /* times rendered */
	bool big;    /* append past HTTP_METRICS_TEXT_MAX */
	double jobs; /* the gauge's value */
} source_t;

static void source_render(void *ctx, http_metrics_text_t *t)
{
	source_t *s = ctx;

	s->calls++;
	http_metrics_printf(t,
			    "# HELP test_queue_jobs Jobs.\n# TYPE test_queue_jobs gauge\n"
			    "test_queue_jobs{cluster_queue=\"a\"} %g\n",
			    s->jobs);
	for (unsigned i = 0; s->big && i <= HTTP_METRICS_TEXT_MAX >> 20; i++)
		http_metrics_printf(t, "# %*s\n", 1 << 20, "");
}

static void metrics_source_appends(void **state)
{
	webhook_metrics_t *am;
	http_metrics_t *m = metrics_with_admission(&am);
	source_t src = {.jobs = 12};
	char *text;
	size_t len;

	(void)state;
	webhook_metrics_policy_generation_set(am, 3);
	http_metrics_source_set(m, source_render, &src);
	assert_int_equal(http_metrics_render(m, &text, &len), GPUQ_OK);
	assert_int_equal(src.calls, 1);
	/* after the server's own families, whole */
	assert_true(strstr(text, "# TYPE test_queue_jobs gauge\n") >
		    strstr(text, "process_resident_memory_bytes "));
	assert_int_equal(line_value(text, "test_queue_jobs{cluster_queue=\"a\"} "), 12);
	assert_int_equal(line_value(text, "gpuq_policy_generation "), 3);
	free(text);

	/* A part past the cap is left out; the others are served. */
	src.big = true;
	assert_int_equal(http_metrics_render(m, &text, &len), GPUQ_OK);
	assert_int_equal(src.calls, 2);
	assert_null(strstr(text, "test_queue_jobs"));
	assert_int_equal(line_value(text, "gpuq_policy_generation "), 3);
	assert_true(len < (1u << 20));
	assert_int_equal(text[len - 1], '\n');
	free(text);

	/* Taken away: not called again. */
	http_metrics_source_set(m, NULL, NULL);
	assert_int_equal(http_metrics_render(m, &text, &len), GPUQ_OK);
	assert_int_equal(src.calls, 2);
	assert_null(strstr(text, "test_queue_jobs"));
	free(text);
	http_metrics_destroy(m);
	webhook_metrics_destroy(am);
}

static void idle_source_render(void *ctx, http_metrics_text_t *t)
{
	source_t *s = ctx;

	s->calls++;
	http_metrics_printf(t,
			    "# HELP test_idle_seconds Idle.\n# TYPE test_idle_seconds counter\n"
			    "test_idle_seconds_total %g\n",
			    s->jobs);
}

/* Two slots: both rendered, queue first; one cut at the cap leaves the
 * other; each taken away on its own. */
static void metrics_source_slots(void **state)
{
	http_metrics_t *m;
	source_t q = {.jobs = 1}, idle = {.jobs = 7};
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(http_metrics_create(&m), GPUQ_OK);
	http_metrics_source_slot_set(m, HTTP_METRICS_SOURCE_IDLE, idle_source_render, &idle);
	http_metrics_source_set(m, source_render, &q);
	assert_int_equal(http_metrics_render(m, &text, &len), GPUQ_OK);
	assert_non_null(strstr(text, "test_queue_jobs"));
	assert_true(strstr(text, "test_idle_seconds_total 7\n") > strstr(text, "test_queue_jobs"));
	free(text);
	q.big = true; /* the queue part passes the cap: the idle part stays */
	assert_int_equal(http_metrics_render(m, &text, &len), GPUQ_OK);
	assert_null(strstr(text, "test_queue_jobs"));
	assert_int_equal(line_value(text, "test_idle_seconds_total "), 7);
	free(text);
	http_metrics_source_slot_set(m, HTTP_METRICS_SOURCE_IDLE, NULL, NULL);
	q.big = false;
	assert_int_equal(http_metrics_render(m, &text, &len), GPUQ_OK);
	assert_non_null(strstr(text, "test_queue_jobs"));
	assert_null(strstr(text, "test_idle_seconds"));
	assert_int_equal(idle.calls, 2);
	free(text);
	http_metrics_destroy(m);
}

/* ---- the serving pair ---- */

static void tls_pair_load_checks(void **state)
{
	const char *dir = tmp_path("pair");
	test_pair_t a, b;
	http_tls_pair_t *pair = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	pair_make(0x21, &a);
	pair_make(0x22, &b);
	/* missing files */
	assert_int_equal(http_tls_pair_load(dir, &pair, &d), GPUQ_EIO);
	assert_null(pair);
	assert_non_null(strstr(d.msg, "tls.crt"));
	/* a good pair */
	pair_write(dir, &a, &a);
	assert_int_equal(http_tls_pair_load(dir, &pair, &d), GPUQ_OK);
	assert_string_equal(http_tls_pair_serial(pair), a.serial);
	assert_true(http_tls_pair_not_after(pair) > (int64_t)time(NULL));
	{ /* a serial with its top bit set prints without DER's leading 00 */
		test_pair_t hi;
		http_tls_pair_t *p2 = NULL;

		pair_make(0x1a5, &hi);
		pair_write(dir, &hi, &hi);
		assert_int_equal(http_tls_pair_load(dir, &p2, &d), GPUQ_OK);
		assert_string_equal(http_tls_pair_serial(p2), "900000A5");
		http_tls_pair_unref(p2);
		pair_free_pem(&hi);
		pair_write(dir, &a, &a);
	}
	assert_ptr_equal(http_tls_pair_ref(pair), pair);
	http_tls_pair_unref(pair);
	http_tls_pair_unref(pair);
	assert_null(http_tls_pair_ref(NULL));
	http_tls_pair_unref(NULL);
	/* key of another certificate */
	pair_write(dir, &a, &b);
	assert_int_equal(http_tls_pair_load(dir, &pair, &d), GPUQ_ETLS);
	assert_non_null(strstr(d.msg, "tls.key does not match the certificate"));
	/* garbage */
	write_file(dir, "tls.crt", "not a certificate\n", 18);
	assert_int_equal(http_tls_pair_load(dir, &pair, &d), GPUQ_ETLS);
	assert_non_null(strstr(d.msg, "tls.crt: no PEM certificate"));
	pair_write(dir, &a, NULL);
	write_file(dir, "tls.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		   58);
	assert_int_equal(http_tls_pair_load(dir, &pair, &d), GPUQ_ETLS);
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
		assert_int_equal(http_tls_pair_load(dir, &pair, &d), GPUQ_OK);
		assert_string_equal(http_tls_pair_serial(pair), a.serial);
		http_tls_pair_unref(pair);
	}
	pair_free_pem(&a);
	pair_free_pem(&b);
}

static void tls_poll_swaps_pairs(void **state)
{
	const char *dir = tmp_path("swap");
	test_pair_t a, b, c;
	http_tls_t *tls = NULL;
	http_tls_pair_t *held, *now;
	gpuq_diag_t d = {{0}};

	(void)state;
	pair_make(0x31, &a);
	pair_make(0x32, &b);
	pair_make(0x33, &c);
	assert_int_equal(http_tls_create(dir, &tls, &d), GPUQ_EIO);
	assert_null(tls);
	pair_write(dir, &a, &a);
	assert_int_equal(http_tls_create(dir, &tls, &d), GPUQ_OK);
	held = http_tls_current(tls); /* a connection handshaken with A */
	assert_string_equal(http_tls_pair_serial(held), a.serial);
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_UNCHANGED);

	/* rotation to B: new handshakes get B, the held reference to A stays valid */
	pair_write(dir, &b, &b);
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_RELOADED);
	now = http_tls_current(tls);
	assert_string_equal(http_tls_pair_serial(now), b.serial);
	http_tls_pair_unref(now);
	assert_string_equal(http_tls_pair_serial(held), a.serial);
	http_tls_pair_unref(held); /* the A connection closes: A is freed here */
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_UNCHANGED);

	/* half a rotation: new crt, old key. Pending one poll, then refused;
	 * B serves throughout. */
	pair_write(dir, &c, NULL);
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_PENDING);
	now = http_tls_current(tls);
	assert_string_equal(http_tls_pair_serial(now), b.serial);
	http_tls_pair_unref(now);
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_REFUSED);
	assert_non_null(strstr(d.msg, "does not match"));
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_UNCHANGED);
	now = http_tls_current(tls);
	assert_string_equal(http_tls_pair_serial(now), b.serial);
	http_tls_pair_unref(now);

	/* the rotation completes: the key arrives and C loads at once */
	pair_write(dir, NULL, &c);
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_RELOADED);
	now = http_tls_current(tls);
	assert_string_equal(http_tls_pair_serial(now), c.serial);
	http_tls_pair_unref(now);

	/* files removed: refused after the settle poll, C keeps serving */
	char path[600];
	snprintf(path, sizeof(path), "%s/tls.key", dir);
	unlink(path);
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_PENDING);
	assert_int_equal(http_tls_poll(tls, &d), HTTP_TLS_REFUSED);
	now = http_tls_current(tls);
	assert_string_equal(http_tls_pair_serial(now), c.serial);
	http_tls_pair_unref(now);

	http_tls_destroy(tls);
	http_tls_destroy(NULL);
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
	char url[1024], hdr[128];
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

/* The server's end of c's connection (this process serves it). */
static int server_end(client_t *c)
{
	long local = 0;

	assert_int_equal(curl_easy_getinfo(c->curl, CURLINFO_LOCAL_PORT, &local), CURLE_OK);
	return socket_server_end(c->port, local);
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

static unsigned long long metric(http_server_t *srv, const char *prefix)
{
	char *text;
	size_t len;
	const char *line;
	unsigned long long v;

	assert_int_equal(http_metrics_render(http_server_metrics(srv), &text, &len), GPUQ_OK);
	line = find_line(text, prefix);
	v = line ? strtoull(line + strlen(prefix), NULL, 10) : 0;
	free(text);
	return v;
}

/* The server and admission on it from parsed `serve` flags, as gpuq serve
 * sets them up (cmd_serve.c). */
static int serve_up(const cmd_serve_opts_t *o, http_server_t **srv, webhook_admission_t **adm,
		    gpuq_diag_t *d)
{
	webhook_config_t review = cmd_serve_review_config(o);
	http_server_config_t cfg;
	int rc;

	*adm = NULL;
	cmd_serve_http_config(o, &cfg);
	rc = http_server_create(&cfg, srv, d);
	if (!rc)
		rc = webhook_admission_create(*srv, o->policy_dir, &review, adm, d);
	if (rc) {
		http_server_destroy(*srv);
		*srv = NULL;
	}
	return rc;
}

/* Stop, then free admission and the server, as gpuq serve does. */
static void serve_down(http_server_t *srv, webhook_admission_t *adm)
{
	if (srv)
		http_server_stop(srv, 0);
	webhook_admission_destroy(adm); /* takes its metrics source off the server */
	http_server_destroy(srv);	/* last */
}

static http_server_t *gen_srv; /* for the condition below */
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
	cmd_serve_opts_t o;
	http_server_t *srv = NULL;
	webhook_admission_t *adm = NULL;
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
		assert_int_equal(cmd_serve_opts_parse(11, argv, &o, &d), GPUQ_OK);
	}
	o.poll_ms = 50; /* fast polling for the test */
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(serve_up(&o, &srv, &adm, &d), GPUQ_OK);
	gen_srv = srv;
	assert_int_equal(http_server_start(srv, &d), GPUQ_OK);

	/* a second server on the same port fails, naming the flag */
	{
		http_server_t *srv2 = NULL;
		webhook_admission_t *adm2 = NULL;
		gpuq_diag_t d2 = {{0}};

		assert_int_equal(serve_up(&o, &srv2, &adm2, &d2), GPUQ_OK);
		assert_int_equal(http_server_start(srv2, &d2), GPUQ_EIO);
		assert_non_null(strstr(d2.msg, "--listen \""));
		serve_down(srv2, adm2);
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
	/* Two small replies on one connection and its socket is not corked:
	 * a corked one pushes each later reply with one more system call. */
	{
		int fd = server_end(&c1);

		assert_true(fd >= 0);
		assert_int_equal(tcp_opt(fd, TCP_CORK), 0);
		assert_int_equal(tcp_opt(fd, TCP_NODELAY), 1);
	}
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
	assert_int_not_equal(webhook_admission_policy_reload(adm), GPUQ_OK);
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
	assert_int_equal(webhook_admission_policy_reload(adm), GPUQ_OK);
	assert_true(wait_for(policy_generation_3, NULL, 1000));

	/* One policy source: a dir server refuses a fed policy and ignores a clear. */
	{
		policy_t *p = NULL;

		assert_int_equal(policy_create(NULL, &p), GPUQ_OK);
		assert_int_equal(policy_finish(p, &d), GPUQ_OK);
		assert_int_equal(webhook_admission_policy_set(adm, p), GPUQ_EINVAL);
		policy_unref(p);
		webhook_admission_policy_clear(adm);
		request(&c1, "GET", "/readyz", NULL, NULL);
		assert_int_equal(c1.code, 200);
		assert_int_equal(metric(srv, "gpuq_policy_generation "), 3);
	}

	/* Graceful stop: readyz would now say 503; the port is closed after. */
	http_server_stop(srv, 1000);
	http_server_stop(srv, 1000); /* idempotent */
	request(&c1, "GET", "/healthz", NULL, NULL);
	assert_int_equal(c1.code, 0);
	curl_easy_cleanup(c1.curl);
	curl_easy_cleanup(c2.curl);
	serve_down(srv, adm);
	http_server_destroy(NULL);
	webhook_admission_destroy(NULL);
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
	webhook_admission_t *adm; /* admission fed */
	policy_t *p;		  /* the policy set each round */
	int rounds;		  /* set/clear rounds */
} feeder_t;

static void *feeder(void *arg)
{
	feeder_t *f = arg;

	for (int i = 0; i < f->rounds; i++) {
		assert_int_equal(webhook_admission_policy_set(f->adm, f->p), GPUQ_OK);
		webhook_admission_policy_clear(f->adm);
	}
	return NULL;
}

/* Without --policy-dir the server starts with no policy and fails closed
 * (/readyz 503, reviews 503) until webhook_admission_policy_set feeds it one;
 * policy_clear goes back; swaps under load never give another answer. */
static void server_policy_feed(void **state)
{
	const char *certs = tmp_path("feed-certs"), *st = tmp_path("feed-state");
	const char *kc = tmp_path("feed-kubeconfig");
	static const cmd_serve_env_t env = {NULL, NULL, "test-host", NULL};
	test_pair_t a;
	cmd_serve_opts_t o;
	http_server_t *srv = NULL;
	webhook_admission_t *adm = NULL;
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
		assert_int_equal(cmd_serve_opts_parse_env(9, argv, &env, &o, &d), GPUQ_OK);
	}
	assert_null(o.policy_dir);
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(serve_up(&o, &srv, &adm, &d), GPUQ_OK);
	assert_int_equal(http_server_start(srv, &d), GPUQ_OK);
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
	assert_int_equal(webhook_admission_policy_reload(adm), GPUQ_EINVAL); /* nothing on disk */
	assert_int_equal(webhook_admission_policy_set(adm, NULL), GPUQ_EINVAL);

	/* fed: decides; the server holds its own reference */
	p1 = policy_from(good_policy);
	assert_int_equal(webhook_admission_policy_set(adm, p1), GPUQ_OK);
	policy_unref(p1);
	request(&c, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c.code, 200);
	request(&c, "POST", "/validate", "application/json", feed_review);
	assert_int_equal(c.code, 200);
	assert_non_null(strstr(c.sink.body, "\"allowed\":true"));
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 1);
	assert_int_equal(metric(srv, "gpuq_policy_reloads_total{result=\"success\"} "), 1);
	p2 = policy_from(good_policy);
	assert_int_equal(webhook_admission_policy_set(adm, p2), GPUQ_OK);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 2);

	/* cleared (watches lost too long): back to failing closed */
	webhook_admission_policy_clear(adm);
	request(&c, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c.code, 503);
	request(&c, "POST", "/mutate", "application/json", feed_review);
	assert_int_equal(c.code, 503);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 2);
	webhook_admission_policy_clear(adm); /* twice is fine */

	/* swaps while reviews are decided: every answer is 200 or 503 */
	{
		feeder_t f = {adm, p2, 300};
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
	assert_int_equal(webhook_admission_policy_set(adm, p2), GPUQ_OK);
	policy_unref(p2);
	request(&c, "GET", "/readyz", NULL, NULL);
	assert_int_equal(c.code, 200);
	assert_int_equal(metric(srv, "gpuq_policy_generation "), 303);

	curl_easy_cleanup(c.curl);
	serve_down(srv, adm);
	pair_free_pem(&a);
}

/* Body budget: with 1000 bytes for all bodies together, a 2000-byte review
 * is answered 503 up front, a chunked one is answered 503 once its end is
 * read, and budget comes back when a request completes. */
/* A nearly full connection table (seven eighths of conn_max) makes a new
 * connection close the kept-alive connection idle the longest; the others,
 * and the new one, are served. One thread: libmicrohttpd splits conn_max
 * over its workers. */
static void server_reclaims_idle(void **state)
{
	const char *certs = tmp_path("reclaim-certs");
	test_pair_t a;
	http_server_config_t cfg = {0};
	http_server_t *srv = NULL;
	gpuq_diag_t d = {{0}};
	client_t c[15];
	char listen[32];

	(void)state;
	pair_make(0x52, &a);
	pair_write(certs, &a, &a);
	cfg.port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)cfg.port);
	cfg.listen = listen;
	cfg.host = "127.0.0.1";
	cfg.cert_dir = certs;
	cfg.threads = 1;
	cfg.poll_ms = HTTP_POLL_MS_DEFAULT;
	cfg.body_budget = HTTP_BODY_BUDGET_DEFAULT;
	cfg.conn_max = 16; /* reclaims from 14 open */
	assert_int_equal(http_server_create(&cfg, &srv, &d), GPUQ_OK);
	assert_int_equal(http_server_start(srv, &d), GPUQ_OK);
	for (int i = 0; i < 14; i++) { /* 14 connections, each idle after a request */
		client_init(&c[i], cfg.port);
		request(&c[i], "GET", "/healthz", NULL, NULL);
		assert_int_equal(c[i].code, 200);
	}
	assert_int_equal(metric(srv, "gpuq_http_connections_open "), 14);
	assert_int_equal(metric(srv, "gpuq_http_connections_closed_total{reason=\"reclaimed\"} "),
			 0);
	client_init(&c[14], cfg.port);
	request(&c[14], "GET", "/healthz", NULL, NULL);
	assert_int_equal(c[14].code, 200);
	assert_int_equal(metric(srv, "gpuq_http_connections_closed_total{reason=\"reclaimed\"} "),
			 1);
	/* the first client's connection was the one closed: it connects anew */
	request(&c[0], "GET", "/healthz", NULL, NULL);
	assert_int_equal(c[0].code, 200);
	assert_int_equal(c[0].new_conns, 1);
	request(&c[13], "GET", "/healthz", NULL, NULL); /* the newest idle one was kept */
	assert_int_equal(c[13].code, 200);
	assert_int_equal(c[13].new_conns, 0);
	for (int i = 0; i < 15; i++)
		curl_easy_cleanup(c[i].curl);
	http_server_destroy(srv);
	pair_free_pem(&a);
}

static void server_body_budget(void **state)
{
	const char *certs = tmp_path("budget-certs"), *pol = tmp_path("budget-policy");
	const char *st = tmp_path("budget-state");
	test_pair_t a;
	cmd_serve_opts_t o;
	http_server_t *srv = NULL;
	webhook_admission_t *adm = NULL;
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
		assert_int_equal(cmd_serve_opts_parse(9, argv, &o, &d), GPUQ_OK);
	}
	assert_int_equal(o.body_budget, HTTP_BODY_BUDGET_DEFAULT);
	o.body_budget = 1000;
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(serve_up(&o, &srv, &adm, &d), GPUQ_OK);
	assert_int_equal(http_server_start(srv, &d), GPUQ_OK);
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
	serve_down(srv, adm); /* stops it first */
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
	http_server_stop(arg, 10000);
	return NULL;
}

static const char review_json[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"drain-uid\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":"
    "\"default\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice\"},\"object\":{"
    "\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
    "\"default\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}";

/* ---- app routes (the web UI's): slow work never holds a server thread ---- */

static pthread_mutex_t app_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t app_cv = PTHREAD_COND_INITIALIZER;
static bool app_in_slow, app_release;

static char app_query[HTTP_APP_QUERY_MAX + 1]; /* the last /apis/echo query */
static size_t app_auth_len;		       /* the last app request's Authorization */

static int app_fn(void *ctx, const http_app_request_t *rq, bool retry, http_app_reply_t *out)
{
	(void)ctx;
	app_auth_len = rq->authorization ? strlen(rq->authorization) : 0;
	if (!strcmp(rq->path, "/apis/echo")) { /* the query as the app sees it */
		snprintf(app_query, sizeof(app_query), "%s", rq->query ? rq->query : "(none)");
		*out = (http_app_reply_t){.status = 200,
					  .content_type = "text/plain",
					  .body = app_query,
					  .len = strlen(app_query)};
		return GPUQ_OK;
	}
	if (!strcmp(rq->path, "/api/slow") && !retry)
		return HTTP_APP_SLOW;
	*out = (http_app_reply_t){.status = 200,
				  .content_type = "text/plain",
				  .body = retry ? "after slow" : "fast",
				  .len = retry ? 10 : 4};
	return GPUQ_OK;
}

/* Blocks until the test releases it (at most 10 s). */
static void app_slow(void *ctx, const http_app_request_t *rq)
{
	struct timespec until;

	(void)ctx;
	assert_string_equal(rq->authorization, "Bearer t0k");
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&app_mu);
	app_in_slow = true;
	pthread_cond_broadcast(&app_cv);
	while (!app_release && pthread_cond_timedwait(&app_cv, &app_mu, &until) == 0)
		;
	pthread_mutex_unlock(&app_mu);
}

static void *slow_client(void *arg)
{
	client_t *c = arg;
	struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer t0k");
	char url[128];

	snprintf(url, sizeof(url), "https://127.0.0.1:%u/api/slow", (unsigned)c->port);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->sink);
	if (curl_easy_perform(c->curl) == CURLE_OK)
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->code);
	curl_slist_free_all(h);
	return NULL;
}

/* One server thread: while an app request waits for its slow part, that
 * thread still answers /healthz and reviews; the app request is answered
 * once the slow part is done. App replies carry the CSP. */
static void server_app_slow_path(void **state)
{
	const char *certs = tmp_path("app-certs"), *pol = tmp_path("app-policy");
	const char *st = tmp_path("app-state");
	test_pair_t a;
	cmd_serve_opts_t o;
	http_server_t *srv = NULL;
	webhook_admission_t *adm = NULL;
	gpuq_diag_t d = {{0}};
	client_t c1, c2;
	pthread_t t;
	char listen[32];

	(void)state;
	pair_make(0x51, &a);
	pair_write(certs, &a, &a);
	mkdir(pol, 0700);
	write_file(pol, "ns.yaml", good_policy, strlen(good_policy));
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)free_port());
	{
		char *argv[] = {(char *)"serve",      (char *)"--listen",    listen,
				(char *)"--cert-dir", (char *)certs,	     (char *)"--policy-dir",
				(char *)pol,	      (char *)"--state-dir", (char *)st,
				(char *)"--threads",  (char *)"1",	     NULL};
		assert_int_equal(cmd_serve_opts_parse(11, argv, &o, &d), GPUQ_OK);
	}
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(serve_up(&o, &srv, &adm, &d), GPUQ_OK);
	http_server_app_set(srv, app_fn, app_slow, NULL);
	assert_int_equal(http_server_start(srv, &d), GPUQ_OK);
	client_init(&c1, o.port);
	client_init(&c2, o.port);
	request(&c2, "GET", "/ui/x", NULL, NULL);
	assert_int_equal(c2.code, 200);
	assert_string_equal(c2.sink.body, "fast");
	request(&c2, "GET", "/metrics/x", NULL, NULL);
	assert_int_equal(c2.code, 404); /* not an app path */
	/* /apis/ is the app's (the visibility API): its query as sent, in order */
	request(&c2, "GET", "/apis/echo?limit=2&offset=1&x=a%20b", NULL, NULL);
	assert_int_equal(c2.code, 200);
	assert_string_equal(c2.sink.body, "limit=2&offset=1&x=a%20b"); /* not decoded */
	request(&c2, "GET", "/apis/echo", NULL, NULL);
	assert_string_equal(c2.sink.body, "(none)");
	{ /* a query past HTTP_APP_QUERY_MAX: 414, not cut */
		char path[HTTP_APP_QUERY_MAX + 64];
		int n = snprintf(path, sizeof(path), "/apis/echo?x=");
		memset(path + n, 'q', HTTP_APP_QUERY_MAX);
		path[n + HTTP_APP_QUERY_MAX] = '\0';
		request(&c2, "GET", path, NULL, NULL);
		assert_int_equal(c2.code, 414);
	}
	{ /* an Authorization header of HTTP_APP_AUTH_MAX bytes (and a cookie)
	     reaches the app whole: the connection's pool holds it */
		static char auth[HTTP_APP_AUTH_MAX + 32], cookie[1024];
		struct curl_slist *h;
		char url[128];
		int n = snprintf(auth, sizeof(auth), "Authorization: Bearer ");

		memset(auth + n, 't', HTTP_APP_AUTH_MAX - 7);
		n = snprintf(cookie, sizeof(cookie), "Cookie: c=");
		memset(cookie + n, 'c', sizeof(cookie) - 1 - (size_t)n);
		h = curl_slist_append(curl_slist_append(NULL, auth), cookie);
		snprintf(url, sizeof(url), "https://127.0.0.1:%u/ui/x", (unsigned)o.port);
		curl_easy_reset(c2.curl);
		curl_easy_setopt(c2.curl, CURLOPT_URL, url);
		curl_easy_setopt(c2.curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c2.curl, CURLOPT_SSL_VERIFYHOST, 0L);
		curl_easy_setopt(c2.curl, CURLOPT_TIMEOUT, 10L);
		curl_easy_setopt(c2.curl, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c2.curl, CURLOPT_WRITEFUNCTION, sink_write);
		curl_easy_setopt(c2.curl, CURLOPT_WRITEDATA, &c2.sink);
		c2.code = 0;
		c2.sink.len = 0;
		if (curl_easy_perform(c2.curl) == CURLE_OK)
			curl_easy_getinfo(c2.curl, CURLINFO_RESPONSE_CODE, &c2.code);
		curl_slist_free_all(h);
		assert_int_equal(c2.code, 200);
		assert_int_equal(app_auth_len, HTTP_APP_AUTH_MAX);
	}
	assert_int_equal(pthread_create(&t, NULL, slow_client, &c1), 0);
	pthread_mutex_lock(&app_mu);
	while (!app_in_slow)
		pthread_cond_wait(&app_cv, &app_mu);
	pthread_mutex_unlock(&app_mu);
	/* the slow part is running: the one server thread still serves */
	request(&c2, "GET", "/healthz", NULL, NULL);
	assert_int_equal(c2.code, 200);
	request(&c2, "POST", "/validate", "application/json", "{}");
	assert_int_equal(c2.code, 400); /* decided (not a usable review), not kept waiting */
	assert_int_equal(c1.code, 0);	/* still waiting */
	pthread_mutex_lock(&app_mu);
	app_release = true;
	pthread_cond_broadcast(&app_cv);
	pthread_mutex_unlock(&app_mu);
	pthread_join(t, NULL);
	assert_int_equal(c1.code, 200);
	assert_string_equal(c1.sink.body, "after slow");
	curl_easy_cleanup(c1.curl);
	curl_easy_cleanup(c2.curl);
	serve_down(srv, adm);
	pair_free_pem(&a);
}

/* Graceful stop: a review in flight finishes with 200, an idle keep-alive
 * connection gets 503 from /readyz (with Connection: close), new
 * connections are refused. */
static void server_graceful_stop(void **state)
{
	const char *certs = tmp_path("drain-certs"), *pol = tmp_path("drain-policy");
	const char *st = tmp_path("drain-state");
	test_pair_t a;
	cmd_serve_opts_t o;
	http_server_t *srv = NULL;
	webhook_admission_t *adm = NULL;
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
		assert_int_equal(cmd_serve_opts_parse(9, argv, &o, &d), GPUQ_OK);
	}
	assert_int_equal(cmd_serve_opts_check(&o, &d), GPUQ_OK);
	assert_int_equal(serve_up(&o, &srv, &adm, &d), GPUQ_OK);
	assert_int_equal(http_server_start(srv, &d), GPUQ_OK);

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
	serve_down(srv, adm);
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
	    cmocka_unit_test(metrics_source_appends),
	    cmocka_unit_test(metrics_source_slots),
	    cmocka_unit_test(tls_pair_load_checks),
	    cmocka_unit_test(tls_poll_swaps_pairs),
	    cmocka_unit_test(server_in_process),
	    cmocka_unit_test(server_policy_feed),
	    cmocka_unit_test(server_body_budget),
	    cmocka_unit_test(server_reclaims_idle),
	    cmocka_unit_test(server_graceful_stop),
	    cmocka_unit_test(server_app_slow_path),
	};

	return cmocka_run_group_tests_name("http", tests, setup_all, teardown_all);
}

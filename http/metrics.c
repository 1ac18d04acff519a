/* http metrics: the server's lock-free counters rendered in the Prometheus
 * text format, and the text the sources append to.
 *
 * Every label set is fixed at compile time (route x code class), so a peer
 * can never add a time series; each series is one C11 atomic bumped with
 * relaxed ordering. Sources from the peers (admission's decisions, the
 * controller's queue metrics, the idle GPU metrics) append their families
 * after ours, under a read lock that lets their owners take them away
 * safely. */
#include "http/http.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_RESULTS 2 /* reload results: success, failure */

static const char *const result_names[N_RESULTS] = {"success", "failure"};
static const char *const route_names[HTTP_ROUTE_COUNT] = {
    "/mutate", "/validate", "/healthz", "/readyz", "/metrics", "/ui", "other"};

/* HTTP codes the server can send; anything else is counted as "other". */
static const unsigned http_codes[] = {200, 400, 404, 405, 413, 415, 500, 503};
#define N_CODES (sizeof(http_codes) / sizeof(http_codes[0]) + 1) /* + "other" */

struct http_metrics {
	atomic_uint_fast64_t http[HTTP_ROUTE_COUNT][N_CODES]; /* replies by route, code */
	atomic_uint_fast64_t cert_reloads[N_RESULTS];	      /* by result */
	atomic_int_fast64_t cert_not_after;	      /* serving cert notAfter, Unix s; 0 unknown */
	atomic_uint_fast64_t guard[HTTP_GUARD_COUNT]; /* refused and closed, by reason */
	atomic_uint_fast64_t conns_open;	      /* open connections (a gauge) */
	pthread_rwlock_t source_lock;		      /* scrapes read-lock it around source() */
	http_metrics_source_fn source[HTTP_METRICS_SOURCES]; /* append outside families,
								      by slot; NULL: none */
	void *source_ctx[HTTP_METRICS_SOURCES];		     /* their arguments */
	atomic_bool source_cut_logged[HTTP_METRICS_SOURCES]; /* a source over the cap
								was logged */
};

int http_metrics_create(http_metrics_t **out)
{
	http_metrics_t *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return GPUQ_ENOMEM;
	/* calloc's zero bytes are a valid zero for lock-free atomics on every
	 * platform gpuq builds on (checked: C11 atomics here are plain words). */
	if (pthread_rwlock_init(&m->source_lock, NULL)) {
		free(m);
		return GPUQ_ENOMEM;
	}
	*out = m;
	return GPUQ_OK;
}

void http_metrics_destroy(http_metrics_t *m)
{
	if (!m)
		return;
	pthread_rwlock_destroy(&m->source_lock);
	free(m);
}

void http_metrics_source_slot_set(http_metrics_t *m, http_metrics_slot_t slot,
				  http_metrics_source_fn fn, void *ctx)
{
	GPUQ_ASSERT((unsigned)slot < HTTP_METRICS_SOURCES);
	pthread_rwlock_wrlock(&m->source_lock);
	m->source[slot] = fn;
	m->source_ctx[slot] = ctx;
	pthread_rwlock_unlock(&m->source_lock);
}

void http_metrics_source_set(http_metrics_t *m, http_metrics_source_fn fn, void *ctx)
{
	http_metrics_source_slot_set(m, HTTP_METRICS_SOURCE_QUEUE, fn, ctx);
}

void http_metrics_reply_count(http_metrics_t *m, http_route_t route, unsigned code)
{
	size_t r = (unsigned)route < HTTP_ROUTE_COUNT ? (size_t)route : HTTP_ROUTE_OTHER;
	size_t c = N_CODES - 1;

	for (size_t i = 0; i + 1 < N_CODES; i++)
		if (http_codes[i] == code)
			c = i;
	atomic_fetch_add_explicit(&m->http[r][c], 1, memory_order_relaxed);
}

void http_metrics_cert_reload_count(http_metrics_t *m, bool ok)
{
	atomic_fetch_add_explicit(&m->cert_reloads[ok ? 0 : 1], 1, memory_order_relaxed);
}

void http_metrics_guard_count(http_metrics_t *m, http_guard_t reason, unsigned n)
{
	GPUQ_ASSERT((unsigned)reason < HTTP_GUARD_COUNT);
	atomic_fetch_add_explicit(&m->guard[reason], n, memory_order_relaxed);
}

uint64_t http_metrics_guard_total(http_metrics_t *m, http_guard_t reason)
{
	GPUQ_ASSERT((unsigned)reason < HTTP_GUARD_COUNT);
	return atomic_load_explicit(&m->guard[reason], memory_order_relaxed);
}

void http_metrics_connections_set(http_metrics_t *m, unsigned n)
{
	atomic_store_explicit(&m->conns_open, n, memory_order_relaxed);
}

void http_metrics_cert_not_after_set(http_metrics_t *m, int64_t unix_seconds)
{
	atomic_store_explicit(&m->cert_not_after, unix_seconds, memory_order_relaxed);
}

int http_metrics_label_escape(const char *value, char *out, size_t cap)
{
	size_t o = 0;

	if (cap == 0)
		return GPUQ_ELIMIT;
	for (const char *p = value; *p; p++) {
		const char *rep = NULL;
		size_t n;

		if (*p == '\\')
			rep = "\\\\";
		else if (*p == '"')
			rep = "\\\"";
		else if (*p == '\n')
			rep = "\\n";
		n = rep ? 2 : 1;
		if (o + n >= cap) {
			out[0] = '\0';
			return GPUQ_ELIMIT;
		}
		if (rep)
			memcpy(out + o, rep, 2);
		else
			out[o] = *p;
		o += n;
	}
	out[o] = '\0';
	return GPUQ_OK;
}

/* ---- Rendering ---- */

/* The rendered text: the server's own part is a few KiB, admission's about
 * 50 KiB (36 histograms of 17 lines); the cap, HTTP_METRICS_TEXT_MAX, leaves room
 * for a source's series and still bounds a runaway. */
struct http_metrics_text {
	char *buf;  /* NUL-terminated text so far */
	size_t len; /* bytes used, without the NUL */
	size_t cap; /* bytes allocated */
	int rc;	    /* first error (sticky): GPUQ_ENOMEM or GPUQ_ELIMIT */
};
typedef struct http_metrics_text text_t;

__attribute__((format(printf, 2, 0))) static void vput(text_t *t, const char *fmt, va_list ap)
{
	int n;

	if (t->rc)
		return;
	for (;;) {
		va_list aq;

		va_copy(aq, ap);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, aq);
		va_end(aq);
		if (n < 0) {
			t->rc = GPUQ_EINVAL;
			return;
		}
		if ((size_t)n < t->cap - t->len)
			break;
		size_t want = t->cap * 2;
		if (want > HTTP_METRICS_TEXT_MAX) {
			t->rc = GPUQ_ELIMIT;
			return;
		}
		char *nb = realloc(t->buf, want);
		if (!nb) {
			t->rc = GPUQ_ENOMEM;
			return;
		}
		t->buf = nb;
		t->cap = want;
	}
	t->len += (size_t)n;
}

__attribute__((format(printf, 2, 3))) static void put(text_t *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vput(t, fmt, ap);
	va_end(ap);
}

void http_metrics_printf(http_metrics_text_t *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vput(t, fmt, ap);
	va_end(ap);
}

const char *http_metrics_label(const char *value, char *out, size_t cap)
{
	return http_metrics_label_escape(value, out, cap) ? "invalid" : out;
}

/* A label value, escaped; values here are all ours, short and plain, but
 * the escaping keeps the output valid whatever they become. */
#define esc http_metrics_label

static uint64_t load(atomic_uint_fast64_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

static void render_http(text_t *t, http_metrics_t *m)
{
	char p[64];

	put(t, "# HELP gpuq_http_requests_total HTTP replies other than decided "
	       "AdmissionReviews, by route and status code.\n"
	       "# TYPE gpuq_http_requests_total counter\n");
	for (size_t r = 0; r < HTTP_ROUTE_COUNT; r++)
		for (size_t c = 0; c < N_CODES; c++) {
			uint64_t v = load(&m->http[r][c]);
			char code[16];

			if (!v)
				continue;
			if (c + 1 < N_CODES)
				snprintf(code, sizeof(code), "%u", http_codes[c]);
			else
				snprintf(code, sizeof(code), "other");
			put(t, "gpuq_http_requests_total{path=\"%s\",code=\"%s\"} %" PRIu64 "\n",
			    esc(route_names[r], p, sizeof(p)), code, v);
		}
}

static void render_reloads(text_t *t, const char *name, const char *help,
			   atomic_uint_fast64_t *counts)
{
	put(t, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (size_t i = 0; i < N_RESULTS; i++)
		put(t, "%s{result=\"%s\"} %" PRIu64 "\n", name, result_names[i], load(&counts[i]));
}

/* Resident set size from /proc/self/statm (pages); 0 when unreadable. */
static uint64_t resident_bytes(void)
{
	unsigned long long size = 0, resident = 0;
	long page = sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)(page > 0 ? page : 4096);
}

/* The sources' families after ours, slot by slot. A part that passes the
 * cap is cut back out whole (a cut inside a family could leave a histogram
 * without its +Inf bucket): that scrape serves the others without it. */
static void render_source(text_t *t, http_metrics_t *m)
{
	static const char *const what[HTTP_METRICS_SOURCES] = {"admission", "queue", "idle GPU"};

	pthread_rwlock_rdlock(&m->source_lock);
	for (int i = 0; i < HTTP_METRICS_SOURCES && !t->rc; i++) {
		size_t mark = t->len;

		if (!m->source[i])
			continue;
		m->source[i](m->source_ctx[i], t);
		if (t->rc != GPUQ_ELIMIT)
			continue;
		t->len = mark;
		t->buf[mark] = '\0';
		t->rc = GPUQ_OK;
		if (!atomic_exchange(&m->source_cut_logged[i], true))
			gpuq_log(GPUQ_LOG_WARN, "http",
				 "/metrics: the %s metrics would pass %u MiB and are left out "
				 "(logged once)",
				 what[i], HTTP_METRICS_TEXT_MAX >> 20);
	}
	pthread_rwlock_unlock(&m->source_lock);
}

int http_metrics_source_render(http_metrics_source_fn fn, void *ctx, char **text, size_t *len)
{
	text_t t = {.buf = malloc(16384), .len = 0, .cap = 16384, .rc = GPUQ_OK};

	*text = NULL;
	*len = 0;
	if (!t.buf)
		return GPUQ_ENOMEM;
	t.buf[0] = '\0';
	fn(ctx, &t);
	if (t.rc) {
		free(t.buf);
		return t.rc;
	}
	*text = t.buf;
	*len = t.len;
	return GPUQ_OK;
}

/* The `reason` label of each guard (http_guard_t order). */
static const char *const guard_names[HTTP_GUARD_COUNT] = {
    "per_address",   "body_budget", "header_deadline", "body_deadline",
    "idle_deadline", "reclaimed",   "body_share"};

/* What the server refused and closed to keep its port free, and its open
 * connections. */
static void render_guard(text_t *t, http_metrics_t *m)
{
	put(t,
	    "# HELP gpuq_http_refused_total Connections refused at accept "
	    "(per_address: %d open from one address) and review requests answered 503 "
	    "(body_budget: request body memory spent; body_share: its address's share of "
	    "it, 1/%d, spent), by reason.\n"
	    "# TYPE gpuq_http_refused_total counter\n",
	    HTTP_CONNECTIONS_PER_IP, HTTP_BODY_SHARE_DIV);
	for (int g = HTTP_GUARD_REFUSED_PER_ADDRESS; g <= HTTP_GUARD_REFUSED_BODY_BUDGET; g++)
		put(t, "gpuq_http_refused_total{reason=\"%s\"} %" PRIu64 "\n", guard_names[g],
		    load(&m->guard[g]));
	put(t, "gpuq_http_refused_total{reason=\"%s\"} %" PRIu64 "\n",
	    guard_names[HTTP_GUARD_REFUSED_BODY_SHARE],
	    load(&m->guard[HTTP_GUARD_REFUSED_BODY_SHARE]));
	put(t,
	    "# HELP gpuq_http_connections_closed_total Connections the server closed: no "
	    "request headers within %d s of the accept (header_deadline), a body not in "
	    "within %d s of its headers (body_deadline), kept alive with no next request "
	    "within %d s (idle_deadline), idle and closed for a new connection when the "
	    "table was nearly full (reclaimed).\n"
	    "# TYPE gpuq_http_connections_closed_total counter\n",
	    HTTP_HEADER_DEADLINE_S, HTTP_BODY_DEADLINE_S, HTTP_IDLE_TIMEOUT_S);
	for (int g = HTTP_GUARD_CLOSED_HEADER_DEADLINE; g <= HTTP_GUARD_CLOSED_RECLAIMED; g++)
		put(t, "gpuq_http_connections_closed_total{reason=\"%s\"} %" PRIu64 "\n",
		    guard_names[g], load(&m->guard[g]));
	put(t,
	    "# HELP gpuq_http_connections_open Open connections (both listeners).\n"
	    "# TYPE gpuq_http_connections_open gauge\n"
	    "gpuq_http_connections_open %" PRIu64 "\n",
	    load(&m->conns_open));
}

int http_metrics_render(http_metrics_t *m, char **text, size_t *len)
{
	text_t t = {.buf = malloc(16384), .len = 0, .cap = 16384, .rc = GPUQ_OK};
	int64_t not_after;

	*text = NULL;
	*len = 0;
	if (!t.buf)
		return GPUQ_ENOMEM;
	t.buf[0] = '\0';
	render_http(&t, m);
	render_reloads(&t, "gpuq_cert_reloads_total",
		       "Serving certificate reloads after tls.crt/tls.key changed, by result.",
		       m->cert_reloads);
	render_guard(&t, m);
	not_after = atomic_load_explicit(&m->cert_not_after, memory_order_relaxed);
	if (not_after)
		put(&t,
		    "# HELP gpuq_cert_not_after_seconds Expiry of the serving certificate, "
		    "Unix time.\n"
		    "# TYPE gpuq_cert_not_after_seconds gauge\n"
		    "gpuq_cert_not_after_seconds %" PRId64 "\n",
		    not_after);
	put(&t,
	    "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
	    "# TYPE process_resident_memory_bytes gauge\n"
	    "process_resident_memory_bytes %" PRIu64 "\n",
	    resident_bytes());
	render_source(&t, m);
	if (t.rc) {
		free(t.buf);
		return t.rc;
	}
	*text = t.buf;
	*len = t.len;
	return GPUQ_OK;
}

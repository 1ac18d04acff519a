/* webhook admission metrics: reviews decided and their latency, policy
 * reloads and the generation serving, as a /metrics source of the HTTP
 * server (http/). See webhook.h, "Admission on the HTTP server".
 *
 * Every label set is fixed at compile time (endpoint x kind x decision), so
 * a peer can never add a time series; each series is one C11 atomic bumped
 * with relaxed ordering. A histogram keeps per-bucket counts and renders
 * them cumulatively, as the format requires. */
#include "webhook/webhook.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_ENDPOINTS 2
#define N_KINDS 3
#define N_DECISIONS 6
#define N_RESULTS 2 /* reload results: success, failure */

static const char *const endpoint_names[N_ENDPOINTS] = {"mutate", "validate"};
static const char *const kind_names[N_KINDS] = {"Pod", "Job", "other"};
/* "unavailable": answered 503 for want of a policy; "error" last (the
 * fallback for anything else). */
static const char *const decision_names[N_DECISIONS] = {"allowed", "patched",	  "denied",
							"invalid", "unavailable", "error"};
static const char *const result_names[N_RESULTS] = {"success", "failure"};

/* Admission latency buckets, 50 us to 1 s: a decision from memory takes tens
 * of microseconds; the apiserver gives up at its timeout (10 s default), so
 * anything past 1 s is already an incident. Upper bounds in ns and as text. */
#define N_BUCKETS 14
static const uint64_t bucket_ns[N_BUCKETS] = {50000,	 100000,    250000,    500000,	  1000000,
					      2500000,	 5000000,   10000000,  25000000,  50000000,
					      100000000, 250000000, 500000000, 1000000000};
static const char *const bucket_le[N_BUCKETS] = {"5e-05",  "0.0001", "0.00025", "0.0005", "0.001",
						 "0.0025", "0.005",  "0.01",	"0.025",  "0.05",
						 "0.1",	   "0.25",   "0.5",	"1"};

typedef struct {
	atomic_uint_fast64_t buckets[N_BUCKETS + 1]; /* per bucket (not cumulative); last = +Inf */
	atomic_uint_fast64_t sum_ns;		     /* total observed time, ns */
	atomic_uint_fast64_t count;		     /* observations */
} histogram_t;

struct webhook_metrics {
	histogram_t admission[N_ENDPOINTS][N_KINDS][N_DECISIONS]; /* also gives the counter */
	atomic_uint_fast64_t policy_reloads[N_RESULTS];		  /* by result */
	atomic_uint_fast64_t policy_generation; /* successful policy loads so far */
};

int webhook_metrics_create(webhook_metrics_t **out)
{
	/* calloc's zero bytes are a valid zero for lock-free atomics on every
	 * platform gpuq builds on (checked: C11 atomics here are plain words). */
	*out = calloc(1, sizeof(**out));
	return *out ? GPUQ_OK : GPUQ_ENOMEM;
}

void webhook_metrics_destroy(webhook_metrics_t *m)
{
	free(m);
}

static size_t name_index(const char *const *names, size_t n, const char *name, size_t fallback)
{
	if (!name)
		return fallback;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return fallback;
}

void webhook_metrics_admission_observe(webhook_metrics_t *m, webhook_endpoint_t ep,
				       const char *kind, const char *decision, uint64_t elapsed_ns)
{
	size_t e = ep == WEBHOOK_VALIDATE ? 1 : 0;
	size_t k = name_index(kind_names, N_KINDS, kind, N_KINDS - 1);
	size_t d = name_index(decision_names, N_DECISIONS, decision, N_DECISIONS - 1);
	histogram_t *h = &m->admission[e][k][d];
	size_t b = 0;

	while (b < N_BUCKETS && elapsed_ns > bucket_ns[b])
		b++;
	atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, elapsed_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

void webhook_metrics_policy_reload_count(webhook_metrics_t *m, bool ok)
{
	atomic_fetch_add_explicit(&m->policy_reloads[ok ? 0 : 1], 1, memory_order_relaxed);
}

void webhook_metrics_policy_generation_set(webhook_metrics_t *m, uint64_t generation)
{
	atomic_store_explicit(&m->policy_generation, generation, memory_order_relaxed);
}

/* ---- Rendering ---- */

#define put http_metrics_printf

#define esc http_metrics_label /* label values: ours, short and plain, escaped anyway */

static uint64_t load(atomic_uint_fast64_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

static void render_counts(http_metrics_text_t *t, webhook_metrics_t *m)
{
	char e[64], k[64], d[64];

	put(t, "# HELP gpuq_admission_requests_total AdmissionReviews decided, by endpoint, "
	       "object kind and decision.\n"
	       "# TYPE gpuq_admission_requests_total counter\n");
	for (size_t i = 0; i < N_ENDPOINTS; i++)
		for (size_t j = 0; j < N_KINDS; j++)
			for (size_t l = 0; l < N_DECISIONS; l++)
				put(t,
				    "gpuq_admission_requests_total{endpoint=\"%s\",kind=\"%s\","
				    "decision=\"%s\"} %" PRIu64 "\n",
				    esc(endpoint_names[i], e, sizeof(e)),
				    esc(kind_names[j], k, sizeof(k)),
				    esc(decision_names[l], d, sizeof(d)),
				    load(&m->admission[i][j][l].count));
}

static void render_durations(http_metrics_text_t *t, webhook_metrics_t *m)
{
	char e[64], k[64], d[64];

	put(t, "# HELP gpuq_admission_duration_seconds Time from request headers to the reply "
	       "of an AdmissionReview.\n"
	       "# TYPE gpuq_admission_duration_seconds histogram\n");
	for (size_t i = 0; i < N_ENDPOINTS; i++)
		for (size_t j = 0; j < N_KINDS; j++)
			for (size_t l = 0; l < N_DECISIONS; l++) {
				histogram_t *h = &m->admission[i][j][l];
				uint64_t cum = 0;
				char labels[256];

				snprintf(labels, sizeof(labels),
					 "endpoint=\"%s\",kind=\"%s\",decision=\"%s\"",
					 esc(endpoint_names[i], e, sizeof(e)),
					 esc(kind_names[j], k, sizeof(k)),
					 esc(decision_names[l], d, sizeof(d)));
				for (size_t b = 0; b <= N_BUCKETS; b++) {
					cum += load(&h->buckets[b]);
					put(t,
					    "gpuq_admission_duration_seconds_bucket{%s,le=\"%s\"} "
					    "%" PRIu64 "\n",
					    labels, b < N_BUCKETS ? bucket_le[b] : "+Inf", cum);
				}
				uint64_t ns = load(&h->sum_ns);
				put(t,
				    "gpuq_admission_duration_seconds_sum{%s} %" PRIu64 ".%09" PRIu64
				    "\n",
				    labels, ns / 1000000000u, ns % 1000000000u);
				/* The count is the +Inf bucket, so the two always agree
				 * even while other threads observe. */
				put(t, "gpuq_admission_duration_seconds_count{%s} %" PRIu64 "\n",
				    labels, cum);
			}
}

void webhook_metrics_render(void *ctx, http_metrics_text_t *t)
{
	webhook_metrics_t *m = ctx;
	static const char reloads[] = "gpuq_policy_reloads_total";

	render_counts(t, m);
	render_durations(t, m);
	put(t,
	    "# HELP %s Policy reloads (SIGHUP or a changed policy dir), by result.\n"
	    "# TYPE %s counter\n",
	    reloads, reloads);
	for (size_t i = 0; i < N_RESULTS; i++)
		put(t, "%s{result=\"%s\"} %" PRIu64 "\n", reloads, result_names[i],
		    load(&m->policy_reloads[i]));
	put(t,
	    "# HELP gpuq_policy_generation Policy snapshots loaded successfully since start.\n"
	    "# TYPE gpuq_policy_generation gauge\n"
	    "gpuq_policy_generation %" PRIu64 "\n",
	    load(&m->policy_generation));
}

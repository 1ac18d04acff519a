/*
 * dcgm: idle GPU time for `gpuq serve --dcgm-url URL`. A thread of its own
 * scrapes a Prometheus text endpoint (one dcgm-exporter, or Prometheus's
 * /federate for a whole cluster) every interval through kube_fetch (libcurl
 * stays in kube/), hands the
 * DCGM_FI_DEV_GPU_UTIL samples to idle/'s accumulator, and renders the
 * per-tenant counters as a /metrics source (http/).
 *
 * Only fresh samples count: one whose own timestamp (Prometheus's
 * /federate writes them) is older than dcgm_fresh_ms is dropped before
 * anything reads it, for idle time and idle reclaim alike.
 *
 * The design decision that matters: nothing else waits on it. The scrape
 * runs on its own thread with its own connection and bounded timeouts; the
 * admission path never touches it, and a /metrics scrape only takes its
 * lock for the time the accumulator needs to render (never across a
 * transfer). The counters live in memory: they start from zero when the
 * process starts (Prometheus's rate()/increase() handle the reset).
 */
#ifndef GPUQ_DCGM_H
#define GPUQ_DCGM_H

#include <stdint.h>

#include "base/base.h"
#include "idle/idle.h"
#include "http/http.h"

/* The scrape interval's range and default (--dcgm-interval), the URL's
 * length at most (--dcgm-url), the idle threshold's default
 * (--idle-threshold). */
#define DCGM_INTERVAL_MS_MIN 100LL
#define DCGM_INTERVAL_MS_MAX (3600LL * 1000)
#define DCGM_INTERVAL_MS_DEFAULT (30LL * 1000)
#define DCGM_URL_MAX 2048
#define DCGM_IDLE_THRESHOLD_DEFAULT 10.0

/* One scrape's transfer at most (connect included): the interval, but no
 * more than 10 s, so a hung endpoint costs one late scrape, not many, and
 * no less than 2 s, time for a body at its cap on a local network (the
 * next scrape starts an interval after one ends). */
#define DCGM_TIMEOUT_MS_MAX 10000
#define DCGM_TIMEOUT_MS_MIN 2000
/* How long one scrape's utilization stands as evidence for idle reclaim
 * (the core's idle_fresh_ms, docs/economics.md): the next scrape is due an
 * interval after this one ended and may take its transfer timeout, so two
 * intervals and a timeout; past it a reading is stale and an idle spell
 * resting on it ends (a DCGM outage preempts nobody). 200ms: 2.4 s; the
 * default 30 s: 70 s. */
int64_t dcgm_fresh_ms(int64_t interval_ms);

typedef struct {
	const char *url;	 /* http:// or https:// (system CAs; checked by
				    cmd_serve_opts_parse); borrowed until
				    dcgm_scraper_stop */
	int64_t interval_ms;	 /* between scrapes (DCGM_INTERVAL_MS_*) */
	double threshold_pct;	 /* idle below this utilization (default 10) */
	http_metrics_t *metrics; /* where the families are rendered (its
				    HTTP_METRICS_SOURCE_IDLE slot; borrowed;
				    NULL: nowhere) */
} dcgm_opts_t;

void dcgm_opts_default(dcgm_opts_t *o);

typedef struct dcgm_scraper dcgm_scraper_t;

/* Start the scraping thread (the first scrape at once, then every
 * interval_ms; the gap counted between two scrapes is capped at twice the
 * interval) and register the metrics source. GPUQ_OK, GPUQ_EINVAL (bad
 * options, diag says which), GPUQ_ENOMEM or GPUQ_EIO (no thread). */
int dcgm_scraper_start(const dcgm_opts_t *o, dcgm_scraper_t **out, gpuq_diag_t *diag);

/* Unregister the source, stop the thread (a transfer in flight is
 * aborted), free. NULL is fine. */
void dcgm_scraper_stop(dcgm_scraper_t *s);

/* Take map (a finished idle_podmap_t; NULL: none) as the LocalQueues of
 * pods whose samples name none, from the next scrape on; the previous map
 * is freed. ctx is the scraper: the signature of controller_opts_t's
 * pod_queues. Thread-safe. */
void dcgm_pod_queues_set(void *ctx, idle_podmap_t *map);

/* The busiest GPU of each workload in the last successful scrape (idle
 * reclaim, docs/economics.md): fn(arg, uid, pct) for each workload the pod
 * map (dcgm_pod_queues_set) names as the owner of a GPU's pod, when that
 * scrape is newer than *seen (then *seen is set to it; start at 0); nothing
 * otherwise. fn runs under the scraper's lock: it must be quick and not
 * call back. ctx is the scraper: the signature of controller_opts_t's
 * workload_utils. Thread-safe. */
void dcgm_workload_utils(void *ctx, void (*fn)(void *arg, const char *uid, double pct), void *arg,
			 uint64_t *seen);

/* The metric families (an http_metrics_source_fn; ctx is the scraper). */
void dcgm_metrics_render(void *ctx, http_metrics_text_t *t);

#endif

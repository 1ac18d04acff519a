/* dcgm/scrape.c: the scraping thread, its transfer (kube_fetch: libcurl
 * stays in kube/) and the metric families it renders. One mutex guards the
 * accumulator and the counters: the thread takes it to observe a parsed
 * scrape, a /metrics scrape to render; the transfer and the parse happen
 * outside it. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dcgm/dcgm.h"
#include "kube/kube.h"

struct dcgm_scraper {
	dcgm_opts_t o;		   /* options (url borrowed) */
	kube_fetch_t *fetch;	   /* the thread's connection, kept alive */
	pthread_t thread;	   /* the scraping thread */
	bool running;		   /* thread started */
	pthread_mutex_t mu;	   /* guards everything below, and stop */
	pthread_cond_t cv;	   /* signalled by stop */
	atomic_bool stop;	   /* the thread ends when set (read by the transfer) */
	idle_acct_t *acct;	   /* the accumulator */
	idle_podmap_t *pod_queues; /* pods' and Jobs' LocalQueues (NULL: none) */
	uint64_t scrapes_ok;	   /* scrapes read and observed */
	uint64_t scrapes_failed;   /* transfers, HTTP statuses or bodies refused */
	bool failing;		   /* the last scrape failed (failures are logged on
				      the change, not each time) */
	idle_wl_util_t *utils;	   /* the last scrape's workloads, busiest GPU each */
	size_t n_utils;		   /* entries */
	uint64_t utils_seq;	   /* scrapes that produced utils (dcgm_workload_utils) */
};

void dcgm_opts_default(dcgm_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->interval_ms = DCGM_INTERVAL_MS_DEFAULT;
	o->threshold_pct = DCGM_IDLE_THRESHOLD_DEFAULT;
}

/* One transfer's timeout for a scrape every interval_ms. */
static int64_t interval_timeout_ms(int64_t interval_ms)
{
	if (interval_ms < DCGM_TIMEOUT_MS_MIN)
		return DCGM_TIMEOUT_MS_MIN;
	return interval_ms < DCGM_TIMEOUT_MS_MAX ? interval_ms : DCGM_TIMEOUT_MS_MAX;
}

static int64_t timeout_ms(const dcgm_scraper_t *s)
{
	return interval_timeout_ms(s->o.interval_ms);
}

int64_t dcgm_fresh_ms(int64_t interval_ms)
{
	return 2 * interval_ms + interval_timeout_ms(interval_ms);
}

/* GET the URL into *body (*len bytes). GPUQ_OK on HTTP 200, else
 * GPUQ_ELIMIT or GPUQ_EHTTP with diag. */
static int fetch(dcgm_scraper_t *s, char **body, size_t *len, gpuq_diag_t *diag)
{
	kube_fetch_req_t rq = {.url = s->o.url,
			       .accept =
				   "text/plain;version=0.0.4;q=1,*/*;q=0.1", /* not protobuf */
			       .timeout_ms = timeout_ms(s),
			       .body_max = IDLE_PROM_BODY_MAX,
			       .cancel = &s->stop};

	return kube_fetch_get(s->fetch, &rq, body, len, diag);
}

/* One scrape: fetch, parse, observe; counted and logged. */
static void scrape_once(dcgm_scraper_t *s)
{
	char *body = NULL;
	size_t len = 0;
	idle_sample_t *samples = NULL;
	idle_observe_stats_t st = {0};
	size_t n = 0;
	gpuq_diag_t diag = {{0}};
	int rc;

	rc = fetch(s, &body, &len, &diag);
	if (!rc)
		rc = idle_prom_parse(body ? body : "", len, IDLE_METRIC_DEFAULT, IDLE_SAMPLES_MAX,
				     &samples, &n, &diag);
	free(body);
	if (!rc) /* a sample's own timestamp older than a reading stands: not evidence */
		n = idle_samples_drop_stale(samples, n, kube_now_ms(),
					    dcgm_fresh_ms(s->o.interval_ms));
	pthread_mutex_lock(&s->mu);
	if (!rc && s->pod_queues)
		idle_podmap_apply(s->pod_queues, samples, n);
	if (!rc && s->pod_queues) { /* per workload, for idle reclaim */
		idle_wl_util_t *u = NULL;
		size_t nu = 0;

		if (idle_workload_utils(s->pod_queues, samples, n, &u, &nu) == GPUQ_OK) {
			free(s->utils);
			s->utils = u;
			s->n_utils = nu;
			s->utils_seq++;
		}
	}
	if (!rc)
		rc = idle_acct_observe(s->acct, samples, n, gpuq_mono_ms(), &st);
	if (rc)
		s->scrapes_failed++;
	else
		s->scrapes_ok++;
	pthread_mutex_unlock(&s->mu);
	free(samples);
	if (rc && !s->failing)
		gpuq_log(GPUQ_LOG_WARN, "dcgm",
			 "scrape of %s failed: %s (logged again when it "
			 "recovers and fails anew)",
			 s->o.url, diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	else if (!rc && s->failing)
		gpuq_log(GPUQ_LOG_INFO, "dcgm", "scrape of %s works again", s->o.url);
	else if (!rc)
		gpuq_log(GPUQ_LOG_DEBUG, "dcgm",
			 "%zu samples: %zu unallocated, %zu duplicates, %zu over the cap, %zu "
			 "intervals counted (%zu capped, %zu without a valid value)",
			 st.samples, st.unallocated, st.duplicates, st.over_cap, st.counted,
			 st.capped, st.invalid);
	s->failing = rc != 0;
}

static void *run(void *arg)
{
	dcgm_scraper_t *s = arg;

	while (!atomic_load(&s->stop)) {
		struct timespec until;

		scrape_once(s);
		until = gpuq_clock_after_ms(CLOCK_MONOTONIC, s->o.interval_ms);
		pthread_mutex_lock(&s->mu);
		while (!atomic_load(&s->stop) &&
		       pthread_cond_timedwait(&s->cv, &s->mu, &until) == 0)
			;
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

/* The mutex, and a condition variable that waits on CLOCK_MONOTONIC. */
static int init_sync(dcgm_scraper_t *s)
{
	pthread_condattr_t attr;
	int bad;

	if (pthread_mutex_init(&s->mu, NULL))
		return GPUQ_ENOMEM;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	bad = pthread_cond_init(&s->cv, &attr);
	pthread_condattr_destroy(&attr);
	if (bad) {
		pthread_mutex_destroy(&s->mu);
		return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

static void release(dcgm_scraper_t *s)
{
	kube_fetch_destroy(s->fetch);
	idle_acct_destroy(s->acct);
	idle_podmap_destroy(s->pod_queues);
	free(s->utils);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int dcgm_scraper_start(const dcgm_opts_t *o, dcgm_scraper_t **out, gpuq_diag_t *diag)
{
	dcgm_scraper_t *s;
	idle_config_t cfg;
	int rc;

	*out = NULL;
	if (!o->url || !o->url[0])
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--dcgm-url: no URL");
	if (o->interval_ms < DCGM_INTERVAL_MS_MIN || o->interval_ms > DCGM_INTERVAL_MS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--dcgm-interval: %" PRId64 " ms is outside 100ms..1h",
				     o->interval_ms);
	idle_config_default(&cfg);
	cfg.threshold_pct = o->threshold_pct;
	cfg.gap_max_ms = 2 * o->interval_ms;
	s = calloc(1, sizeof(*s));
	if (!s)
		return GPUQ_ENOMEM;
	if (init_sync(s)) {
		free(s);
		return GPUQ_ENOMEM;
	}
	s->o = *o;
	rc = idle_acct_create(&cfg, &s->acct);
	if (rc == GPUQ_EINVAL)
		rc = gpuq_diag_set(diag, rc, "--idle-threshold %g: expected 0..100",
				   o->threshold_pct);
	if (!rc)
		rc = kube_fetch_create(&s->fetch);
	if (!rc && pthread_create(&s->thread, NULL, run, s))
		rc = gpuq_diag_set(diag, GPUQ_EIO, "dcgm: cannot start the scraping thread");
	if (rc) {
		release(s);
		return rc;
	}
	s->running = true;
	if (o->metrics)
		http_metrics_source_slot_set(o->metrics, HTTP_METRICS_SOURCE_IDLE,
					     dcgm_metrics_render, s);
	*out = s;
	return GPUQ_OK;
}

void dcgm_scraper_stop(dcgm_scraper_t *s)
{
	if (!s)
		return;
	if (s->o.metrics)
		http_metrics_source_slot_set(s->o.metrics, HTTP_METRICS_SOURCE_IDLE, NULL, NULL);
	pthread_mutex_lock(&s->mu);
	atomic_store(&s->stop, true);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->running)
		pthread_join(s->thread, NULL);
	release(s);
}

void dcgm_pod_queues_set(void *ctx, idle_podmap_t *map)
{
	dcgm_scraper_t *s = ctx;
	idle_podmap_t *old;

	if (map)
		idle_podmap_finish(map);
	pthread_mutex_lock(&s->mu);
	old = s->pod_queues;
	s->pod_queues = map;
	pthread_mutex_unlock(&s->mu);
	idle_podmap_destroy(old);
}

void dcgm_workload_utils(void *ctx, void (*fn)(void *arg, const char *uid, double pct), void *arg,
			 uint64_t *seen)
{
	dcgm_scraper_t *s = ctx;

	pthread_mutex_lock(&s->mu);
	if (s->utils_seq != *seen) {
		for (size_t i = 0; i < s->n_utils; i++)
			fn(arg, s->utils[i].uid, s->utils[i].max_pct);
		*seen = s->utils_seq;
	}
	pthread_mutex_unlock(&s->mu);
}

/* GPU-ms as seconds with three decimals. */
static void put_seconds(http_metrics_text_t *t, int64_t ms)
{
	http_metrics_printf(t, "%" PRId64 ".%03d\n", ms / 1000, (int)(ms % 1000));
}

static void render_tenants(http_metrics_text_t *t, const idle_acct_t *a, bool idle)
{
	const char *name =
	    idle ? "gpuq_tenant_gpu_idle_seconds_total" : "gpuq_tenant_gpu_allocated_seconds_total";
	idle_tenant_view_t v;

	http_metrics_printf(
	    t, "# HELP %s %s\n# TYPE %s counter\n", name,
	    idle ? "GPU-seconds allocated to the tenant's pods while their GPU utilization "
		   "(DCGM_FI_DEV_GPU_UTIL) was below the idle threshold."
		 : "GPU-seconds allocated to the tenant's pods, counted between two scrapes "
		   "of --dcgm-url that both saw the GPU and the pod.",
	    name);
	for (size_t i = 0; idle_acct_tenant(a, i, &v) == GPUQ_OK; i++) {
		char ns[3 * IDLE_NAME_MAX], lq[3 * IDLE_NAME_MAX];

		if (http_metrics_label_escape(v.namespace_, ns, sizeof(ns)) ||
		    http_metrics_label_escape(v.local_queue, lq, sizeof(lq)))
			continue; /* cannot happen: escaping at most doubles */
		http_metrics_printf(t, "%s{namespace=\"%s\",local_queue=\"%s\"} ", name, ns, lq);
		put_seconds(t, idle ? v.idle_gpu_ms : v.allocated_gpu_ms);
	}
}

void dcgm_metrics_render(void *ctx, http_metrics_text_t *t)
{
	dcgm_scraper_t *s = ctx;
	idle_totals_t tot;

	pthread_mutex_lock(&s->mu);
	idle_acct_totals(s->acct, &tot);
	render_tenants(t, s->acct, false);
	render_tenants(t, s->acct, true);
	http_metrics_printf(
	    t,
	    "# HELP gpuq_dcgm_scrapes_total Scrapes of --dcgm-url, by result (failure: the "
	    "transfer, its HTTP status or its body was refused).\n"
	    "# TYPE gpuq_dcgm_scrapes_total counter\n"
	    "gpuq_dcgm_scrapes_total{result=\"success\"} %" PRIu64 "\n"
	    "gpuq_dcgm_scrapes_total{result=\"failure\"} %" PRIu64 "\n"
	    "# HELP gpuq_dcgm_series GPU utilization series allocated to a pod in the last "
	    "successful scrape.\n"
	    "# TYPE gpuq_dcgm_series gauge\n"
	    "gpuq_dcgm_series %zu\n"
	    "# HELP gpuq_dcgm_idle_threshold_percent Utilization below which allocated GPU time "
	    "counts as idle (--idle-threshold).\n"
	    "# TYPE gpuq_dcgm_idle_threshold_percent gauge\n"
	    "gpuq_dcgm_idle_threshold_percent %g\n"
	    "# HELP gpuq_dcgm_unrecorded_gpu_seconds_total Allocated GPU-seconds of tenants past "
	    "the tenant cap, not attributed.\n"
	    "# TYPE gpuq_dcgm_unrecorded_gpu_seconds_total counter\n"
	    "gpuq_dcgm_unrecorded_gpu_seconds_total ",
	    s->scrapes_ok, s->scrapes_failed, tot.series, s->o.threshold_pct);
	put_seconds(t, tot.unrecorded_gpu_ms);
	pthread_mutex_unlock(&s->mu);
}

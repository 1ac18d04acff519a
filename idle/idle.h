/*
 * idle: GPU time that tenants hold but do not use, from the GPU utilization
 * gauge NVIDIA's dcgm-exporter publishes (DCGM_FI_DEV_GPU_UTIL, percent).
 *
 * Two pure parts. idle_prom_parse reads a scrape in the Prometheus text
 * exposition format (0.0.4, as dcgm-exporter and Prometheus's /federate
 * write it), bounded in body, line and sample count, and keeps the samples
 * of one metric with the labels that say which device and which pod they
 * are about. idle_acct_observe takes those samples at time `now` and adds,
 * per tenant (namespace, LocalQueue), the GPU time allocated to a pod and
 * the part of it whose utilization was below a threshold.
 *
 * The design decision that matters: time is counted only between two
 * scrapes that both saw the same series (device and pod), at most
 * gap_max_ms of it, and the utilization the later scrape reads stands for
 * that whole interval (dcgm-exporter's value is an average over the last
 * sampling period). So a pod's first scrape counts nothing, a lost endpoint
 * or a skipped scrape counts at most gap_max_ms, and a clock that goes back
 * starts a new baseline instead of counting negative time. No I/O, no
 * clock, no globals; deterministic for a given sequence of calls.
 */
#ifndef GPUQ_IDLE_H
#define GPUQ_IDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* The metric read by default. */
#define IDLE_METRIC_DEFAULT "DCGM_FI_DEV_GPU_UTIL"

/* Caps of one scrape: the body (a 2,000-node cluster's dcgm-exporters
 * federated with every field they export by default is about 20 MiB), one
 * line (a sample with every pod label dcgm-exporter can add stays well
 * under it), and the samples of the metric kept (a GPU per sample: 16,384 is
 * 2,048 nodes of 8 GPUs). */
#define IDLE_PROM_BODY_MAX ((size_t)32 << 20)
#define IDLE_PROM_LINE_MAX ((size_t)64 << 10)
#define IDLE_SAMPLES_MAX 16384

/* Label values kept: a namespace or container is a DNS label (63), a pod
 * or LocalQueue an object name (253); a device is the hostname, the GPU's
 * UUID, its index and its MIG instance joined by '/'. Longer values of
 * these labels make the scrape fail, naming the line. */
#define IDLE_NAME_MAX 254
#define IDLE_DEVICE_MAX 512

/* One sample of the metric: a device, the pod it is allocated to (empty
 * namespace or pod: none), and its value. Labels read (dcgm-exporter's
 * names; the exported_ forms are what Prometheus writes when the scraping
 * job's own labels clash, as in /federate output):
 *   namespace | exported_namespace, pod | exported_pod,
 *   container | exported_container,
 *   gpuq_dev_queue_name | kueue_x_k8s_io_queue_name (the pod's queue label,
 *     present with dcgm-exporter's --kubernetes-enable-pod-labels),
 *   Hostname | hostname | instance, UUID | uuid | gpu_uuid, gpu, GPU_I_ID. */
typedef struct {
	char namespace_[IDLE_NAME_MAX];	 /* the pod's namespace ("" none) */
	char pod[IDLE_NAME_MAX];	 /* the pod's name ("" none) */
	char container[IDLE_NAME_MAX];	 /* the container ("" unknown) */
	char local_queue[IDLE_NAME_MAX]; /* the LocalQueue ("" unknown) */
	char device[IDLE_DEVICE_MAX];	 /* "host/UUID/gpu/GPU_I_ID" */
	double value;			 /* as written: NaN and +-Inf kept */
	int64_t ts_ms;			 /* its timestamp as written (ms since the
					    epoch: Prometheus's /federate writes one),
					    0 when it has none */
	uint32_t line;			 /* 1-based line in the body */
} idle_sample_t;

/* Timestamps accepted: within +-2^62 ms of the epoch (arithmetic on them
 * cannot overflow). */
#define IDLE_TIME_MAX ((int64_t)1 << 62)

/* Parse body[0..len) and append the samples of `metric` to a new array
 * *out of *n entries (caller frees; NULL when none). Every sample line is
 * checked whatever its metric (name, labels, escapes, value, optional
 * timestamp, kept in ts_ms); comments and # HELP / # TYPE lines are skipped; "\r\n" ends
 * a line too. GPUQ_OK; GPUQ_EINVAL (malformed line), GPUQ_ELIMIT (body
 * over IDLE_PROM_BODY_MAX, a line over IDLE_PROM_LINE_MAX, a kept label
 * value over its size, more than max_samples samples of the metric, at
 * most IDLE_SAMPLES_MAX), with diag naming the line ("line 12: ..."); or
 * GPUQ_ENOMEM. Nothing is returned on error. */
int idle_prom_parse(const char *body, size_t len, const char *metric, size_t max_samples,
		    idle_sample_t **out, size_t *n, gpuq_diag_t *diag);

/* Drop the samples whose timestamp is more than max_age_ms before now_ms
 * (both ms since the epoch; max_age_ms 0: none dropped; a sample without a
 * timestamp is as fresh as the scrape), keeping the others in order; returns
 * how many are kept. Prometheus's /federate serves a series' last sample for
 * its lookback (5 min by default) after its exporter went away: such a
 * reading is old news and must not count as today's utilization. */
size_t idle_samples_drop_stale(idle_sample_t *samples, size_t n, int64_t now_ms,
			       int64_t max_age_ms);

/* ---- Accounting ---- */

/* Tenants (namespace, LocalQueue) kept at most: the policy's own cap on
 * LocalQueues (10,000) for the tenants of gpuq's queues, and as many again
 * for namespaces outside them. Time of tenants past it is counted in
 * idle_acct_totals' unrecorded_gpu_ms. */
#define IDLE_TENANTS_MAX 20000

typedef struct {
	double threshold_pct; /* utilization strictly below this is idle
				 (default 10, 0..100) */
	int64_t gap_max_ms;   /* longest interval counted between two scrapes
				 of a series (default 60 s: twice the
				 default scrape interval) */
	size_t series_max;    /* series remembered (default IDLE_SAMPLES_MAX) */
	size_t tenants_max;   /* tenants kept (default IDLE_TENANTS_MAX) */
} idle_config_t;

void idle_config_default(idle_config_t *cfg);

/* What one observation did, for logs and tests. */
typedef struct {
	size_t samples;	    /* samples given */
	size_t unallocated; /* without a namespace or pod: a free GPU, not counted */
	size_t duplicates;  /* a series seen twice in one scrape: the first kept */
	size_t over_cap;    /* series past series_max, not remembered */
	size_t counted;	    /* intervals added to a tenant */
	size_t invalid;	    /* intervals whose value was NaN, infinite or
			       outside 0..100: counted allocated, not idle */
	size_t capped;	    /* intervals longer than gap_max_ms, cut to it */
	bool baseline;	    /* now was not after the previous observation:
			       nothing counted, this scrape is the new start */
} idle_observe_stats_t;

typedef struct idle_acct idle_acct_t;

/* A new accumulator (cfg copied; NULL for the defaults). GPUQ_OK,
 * GPUQ_EINVAL (threshold outside 0..100, gap_max_ms < 1, a cap of 0) or
 * GPUQ_ENOMEM. */
int idle_acct_create(const idle_config_t *cfg, idle_acct_t **out);
void idle_acct_destroy(idle_acct_t *a); /* NULL is a no-op */

/* One scrape's samples (borrowed) at now_ms (any monotonic millisecond
 * clock). For every allocated series (namespace and pod set) seen by the
 * previous observation too, min(now - previous, gap_max_ms) GPU-ms are
 * added to its tenant's allocated time, and to its idle time when value <
 * threshold_pct. The LocalQueue of the tenant is the sample's. Series not
 * in samples are forgotten. st (may be NULL) says what was done. GPUQ_OK,
 * or GPUQ_ENOMEM with nothing changed. */
int idle_acct_observe(idle_acct_t *a, const idle_sample_t *samples, size_t n, int64_t now_ms,
		      idle_observe_stats_t *st);

typedef struct {
	const char *namespace_;	  /* owned by the accumulator */
	const char *local_queue;  /* "" when unknown */
	int64_t allocated_gpu_ms; /* GPU-ms allocated since creation */
	int64_t idle_gpu_ms;	  /* of which below the threshold */
} idle_tenant_view_t;

/* Tenants held, and the i-th in (namespace, local_queue) byte order; its
 * strings are valid until the next observe or destroy. GPUQ_ENOTFOUND
 * past the end. */
size_t idle_acct_tenant_count(const idle_acct_t *a);
int idle_acct_tenant(const idle_acct_t *a, size_t i, idle_tenant_view_t *v);

typedef struct {
	size_t series;		   /* allocated series remembered now */
	int64_t unrecorded_gpu_ms; /* allocated time of tenants past tenants_max */
	int64_t observations;	   /* observe calls that succeeded */
} idle_totals_t;

void idle_acct_totals(const idle_acct_t *a, idle_totals_t *t);

/* ---- Which LocalQueue a pod's GPU time goes to ----
 *
 * dcgm-exporter names the pod, not its queue. gpuq's controller knows the
 * workloads holding quota and their LocalQueues: it hands over a map of
 * them (every few seconds while it leads), and the samples whose pod label
 * did not name a queue are looked up in it: first the pod itself (a plain
 * Pod or a pod group's member), then the Job its name comes from (the Job
 * controller names pods "<job>-<5 characters>", or "<job>-<index>-<5
 * characters>" for an Indexed Job). A Job name of 58 characters or more is
 * cut in its pods' names and not found: such pods count for their
 * namespace with local_queue "". */

/* Entries a map holds at most: the core's workloads holding quota, and a
 * pod group's pods each (a cluster holds far fewer GPUs than this). */
#define IDLE_PODMAP_MAX 200000

typedef enum {
	IDLE_OWNER_POD = 0, /* name is a pod's */
	IDLE_OWNER_JOB = 1, /* name is a Job's: its pods are looked up by name */
} idle_owner_t;

typedef struct idle_podmap idle_podmap_t;

/* An empty map. GPUQ_OK or GPUQ_ENOMEM. */
int idle_podmap_create(idle_podmap_t **out);
void idle_podmap_destroy(idle_podmap_t *m); /* NULL is a no-op */

/* Add (kind, namespace, name) -> local_queue (strings copied; each shorter
 * than IDLE_NAME_MAX). GPUQ_OK, GPUQ_EINVAL (empty or too long),
 * GPUQ_ELIMIT past IDLE_PODMAP_MAX, GPUQ_ENOMEM. A key added twice keeps
 * its first LocalQueue. */
int idle_podmap_add(idle_podmap_t *m, idle_owner_t kind, const char *namespace_, const char *name,
		    const char *local_queue);

/* idle_podmap_add with the owning workload's uid (the queue core's key;
 * shorter than IDLE_NAME_MAX; NULL or "": none), for idle_podmap_owner. */
int idle_podmap_add_owner(idle_podmap_t *m, idle_owner_t kind, const char *namespace_,
			  const char *name, const char *local_queue, const char *owner);

/* The LocalQueue of pod (namespace_, pod) as above, or NULL. The map is
 * sorted on the first lookup after an add (not thread-safe then; a map
 * handed to another thread is finished: idle_podmap_finish). */
const char *idle_podmap_lookup(idle_podmap_t *m, const char *namespace_, const char *pod);

/* The uid of the workload owning pod (namespace_, pod), found as
 * idle_podmap_lookup finds its LocalQueue, or NULL (none, or added
 * without one). */
const char *idle_podmap_owner(idle_podmap_t *m, const char *namespace_, const char *pod);

/* ---- Per-workload utilization (idle reclaim, docs/economics.md) ---- */

/* One workload's utilization in a scrape: the busiest of its GPUs. */
typedef struct {
	char uid[IDLE_NAME_MAX]; /* the owning workload (idle_podmap_owner) */
	double max_pct;		 /* the highest valid value of its GPUs */
} idle_wl_util_t;

/* The workloads of samples (mapped by m to their owners; samples without a
 * valid value 0..100 left out) with the busiest of their GPUs, into a new
 * array *out of *n entries sorted by uid (caller frees; NULL when none).
 * GPUQ_OK or GPUQ_ENOMEM. */
int idle_workload_utils(idle_podmap_t *m, const idle_sample_t *samples, size_t n,
			idle_wl_util_t **out, size_t *n_out);

/* Sort now, so that later lookups only read. */
void idle_podmap_finish(idle_podmap_t *m);

/* Fill the empty local_queue of every allocated sample found in m. */
void idle_podmap_apply(idle_podmap_t *m, idle_sample_t *samples, size_t n);

#endif

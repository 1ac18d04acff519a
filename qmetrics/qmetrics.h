/*
 * qmetrics: the queueing core's metrics in the Prometheus text format, for
 * gpuq serve's /metrics beside the server's own: pending and admitted
 * workloads per ClusterQueue and LocalQueue, quota used, borrowed and lent
 * per flavor and resource, admissions, evictions and preemptions by
 * reason, time to admission, the admission cycle's and the store commit's
 * durations, and whether this replica leads. docs/metrics.md lists every
 * series with the Kueue metric of the same meaning.
 *
 * The design decision that matters: a scrape never waits on the driver and
 * never reads the core. The driver (the controller thread; the simulator)
 * counts into a qmetrics_t that only its thread touches, and publishes a
 * snapshot now and then: its counters and the core's gauges copied into an
 * immutable, reference-counted block. A scrape takes a reference under a
 * lock held for a pointer copy, and renders the block on its own thread.
 * Label values are the policy's names (ClusterQueue, LocalQueue, cohort,
 * flavor, resource), escaped once per core; reasons are fixed enums; the
 * series are capped (below), so the policy bounds the cardinality.
 *
 * No I/O, no clock (times and durations are arguments), no globals.
 */
#ifndef GPUQ_QMETRICS_H
#define GPUQ_QMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "queue/queue.h"
#include "http/http.h"

/* Caps on what one snapshot carries; past them objects are left out in id
 * order (the core's, i.e. the policy's) and counted in
 * gpuq_queue_metrics_omitted. At the caps a scrape is about 30 MB of text,
 * under HTTP_METRICS_TEXT_MAX; Kueue's largest benchmark (1,000
 * ClusterQueues) is far below them. */
#define QMETRICS_CQS_MAX 5000	    /* ClusterQueues */
#define QMETRICS_SLOTS_MAX 50000    /* (ClusterQueue, flavor, resource) quota slots */
#define QMETRICS_LQS_MAX 10000	    /* LocalQueues */
#define QMETRICS_LQ_SLOTS_MAX 50000 /* (LocalQueue, flavor, resource) usage series */

typedef struct qmetrics qmetrics_t;

/* GPUQ_OK and *out (leader false, no core), or GPUQ_ENOMEM. */
int qmetrics_create(qmetrics_t **out);

/* Free m and its snapshot. No render may be running or start (take the
 * server's source away first). NULL is fine. */
void qmetrics_destroy(qmetrics_t *m);

/* ---- The driver's thread (one thread; not thread-safe among these) ---- */

/* The core the next counts and publishes refer to: call it with every new
 * core (the first build, a restore, a rebuild after a policy change), or
 * NULL for none. Names are copied, so q may be destroyed later without
 * telling m. Counters of the ClusterQueues and LocalQueues that keep their
 * name carry over; new ones start at 0; those gone are dropped with their
 * series. GPUQ_OK; GPUQ_ENOMEM leaves m with no core (counts ignored, the
 * next publish carries no queue series) until a call succeeds. */
int qmetrics_core_set(qmetrics_t *m, const queue_t *q);

/* One admission of a cycle's result a (q: the core that made it, the one
 * last given to qmetrics_core_set), at `now`: counted for its ClusterQueue
 * and LocalQueue, and its wait observed: from the latest of its creation,
 * requeued_ms and the end of its requeue backoff, to now. requeued_ms: when
 * the driver last put the workload back in the queue after an eviction (0:
 * never, or not known, e.g. before a restart). */
void qmetrics_admission_count(qmetrics_t *m, const queue_t *q, const queue_admission_t *a,
			      int64_t requeued_ms, int64_t now);

/* One eviction of a cycle's or tick's result: counted for the victim's
 * ClusterQueue by reason (Preempted, PodsReadyTimeout, ClusterQueueStopped)
 * and, for a preemption, for the preemptor's ClusterQueue by Kueue's
 * preemption reason (InClusterQueue, InCohortReclamation,
 * InCohortFairSharing, InCohortReclaimWhileBorrowing). */
void qmetrics_eviction_count(qmetrics_t *m, const queue_t *q, const queue_eviction_t *e);

/* The economics of a tick's or cycle's result (docs/economics.md): its idle
 * reports counted. */
void qmetrics_idle_count(qmetrics_t *m, const queue_t *q, const queue_result_t *res);

/* One prediction pass (predict/) took ns, simulated so many pending
 * workloads and started so many of them; capped: a cap (steps, virtual or
 * wall time) ended it. */
void qmetrics_predict_observe(qmetrics_t *m, uint64_t ns, size_t simulated, size_t started,
			      bool capped);

/* One admission cycle took ns (the core's own work: queue_tick and
 * queue_cycle_run); admitted: it admitted at least one workload. */
void qmetrics_cycle_observe(qmetrics_t *m, bool admitted, uint64_t ns);

/* One store commit of the core's records took ns; ok: it committed. */
void qmetrics_commit_observe(qmetrics_t *m, bool ok, uint64_t ns);

/* The stages of a pass of the controller's loop that released a workload,
 * from the watch event to the release PATCH answered (docs/controller.md,
 * "Latency budget"). */
typedef enum {
	QMETRICS_STAGE_QUEUED, /* the event reached gpuq -> the loop took it: decoding,
				  and waiting while the loop finished its last pass */
	QMETRICS_STAGE_HANDLE, /* the events applied, the policy snapshot rebuilt */
	QMETRICS_STAGE_CYCLE,  /* the core's tick and cycle, usage, sweeps (no commit) */
	QMETRICS_STAGE_COMMIT, /* the store commits (intent before acting) */
	QMETRICS_STAGE_PATCH,  /* the patches sent and answered by the apiserver */
	QMETRICS_STAGE_TOTAL,  /* the event reached gpuq -> the last patch answered */
	QMETRICS_STAGES
} qmetrics_stage_t;

/* One pass that released: ns[stage] for every stage. */
void qmetrics_release_stages_observe(qmetrics_t *m, const uint64_t ns[QMETRICS_STAGES]);

/* One pass's tail took ns: what it did after its patches (status writes
 * queued, metrics and web view snapshots, predictions); it delays the
 * events that arrive meanwhile. Observed for every pass. */
void qmetrics_loop_tail_observe(qmetrics_t *m, uint64_t ns);

/* Snapshot the counters and q's gauges (pending by wait reason, admitted,
 * quota and usage; O(live workloads + quota slots)) and make it the one
 * scrapes render. q is the core last given to qmetrics_core_set. The
 * previous snapshot is freed by its last reader. Does nothing while this
 * replica does not lead. GPUQ_OK; GPUQ_ENOMEM keeps the previous one. */
int qmetrics_publish(qmetrics_t *m, const queue_t *q);

/* Whether this replica leads. A follower's scrape shows only
 * gpuq_controller_leader 0: turning leader off withdraws the snapshot (the
 * next qmetrics_publish after turning it on brings the series back). */
void qmetrics_leader_set(qmetrics_t *m, bool leader);

/* ---- Any thread ---- */

/* Append the metric families to t (the server's scrape text):
 * gpuq_controller_leader always, the rest from the current snapshot when
 * this replica leads and one was published. Thread-safe; never waits on
 * the driver beyond a pointer copy. */
void qmetrics_render(qmetrics_t *m, http_metrics_text_t *t);

#endif

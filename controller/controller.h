/*
 * controller: the part of `gpuq serve` that acts on the cluster. It watches
 * the apiserver (policy objects, Jobs), builds the policy snapshot the
 * webhook decides from, feeds the queueing core, runs admission cycles, and
 * carries their decisions out: a Job is released (unsuspended, its flavor's
 * nodeSelector and tolerations put into its pod template, the originals kept
 * in an annotation) or preempted (suspended, its template restored once its
 * pods are gone), with an Event each time.
 *
 * The design decision that matters: the controller is level-triggered and
 * writes its intent before it acts. It holds one engine (engine/: the core,
 * the policy in force, the LMDB store) and reaches the core and the store
 * only through it. The core's decisions are committed to the store
 * (engine_commit) before any patch goes out; every patch is
 * derived by comparing the core's state of a workload with the Job the
 * watch last showed (released? suspended? template restored?), never from
 * a remembered "to do" list. So a kill -9 at any point, a restart, or a
 * lost patch is repaired by the same code that acts in the first place:
 * after restoring the store and relisting the cluster, each workload is
 * compared and brought in line, nothing is released twice, nothing lost.
 *
 * Fail closed: until every watch has completed its first LIST (or found its
 * collection not served: a CRD not installed) no snapshot is published, so
 * the webhook answers with an error and the apiserver's failurePolicy
 * applies. Each snapshot names the workload collections watched then
 * (policy_watch_has), and the webhook holds no object of another kind: a
 * kind whose CRD is installed later is watched once its first LIST is in
 * (its watch asks every KUBE_UNSERVED_POLL_MS), one whose CRD goes is let
 * go (its cached objects and workloads dropped), without a restart.
 *
 * Threads, and what each touches (every flag two of them share is a C11
 * atomic or sits under the lock named; `make SANITIZE=thread` runs the
 * e2e scenarios that start every one of them):
 * - the owner's thread (cmd/cmd_serve.c): controller_create, _start, _stop,
 *   _destroy; after _stop has joined the others, the last usage checkpoint
 *   and the Lease's release on their clients.
 * - watch threads (informer.c), one per collection (served or not), each
 *   with its own connection (fence: stop only): read `stop`, push into
 *   `events` (its lock).
 * - the controller thread (loop.c, and jobs.c, pods.c, snapshot.c,
 *   status.c, actuate.c, usage.c, podmap.c on it): owns the caches, the
 *   engine (the core, its policy, the store) and its connection, whose
 *   writes the fence gates (the single writer of queue state); follows the
 *   fence into `leader` and `synced` (atomics); publishes policy snapshots
 *   (the webhook's swap), queue metrics and the web view (their locks), the
 *   pods' LocalQueues (pod_queues' callee locks); hands status bodies and
 *   Events to the status writer (its lock).
 * - the Lease thread (elect.c), with its own connection (fence: stop
 *   only): the only one to move the fence (hold, drop); the last round's
 *   answer under `lease_mu`; kicks `events`.
 * - the status writer thread (swriter.c), with its own connection, writes
 *   fenced: its queue under its lock, its `written` map alone.
 * - the webhook server's threads: controller_synced and controller_leader
 *   (atomics), the queue metrics' render (qmetrics' lock).
 * The fence (kube.h, "Fencing") is shared by all of them: atomics, and a
 * lock only to wake its sleepers.
 */
#ifndef GPUQ_CONTROLLER_H
#define GPUQ_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/base.h"
#include "engine/engine.h"
#include "http/http.h"
#include "idle/idle.h"
#include "kube/kube.h"
#include "webhook/webhook.h"
#include "webui/webui.h"

/* Events waiting for the controller thread at most; watch threads wait
 * when it is full (backpressure, nothing dropped). Each holds a parsed
 * object (a pruned Job about 3 KB): a LIST of 100,000 Jobs waits in the
 * watch stream, not in gpuq's memory. Twice the controller's batch. */
#define CONTROLLER_EVENTS_MAX 8192
/* Objects of one kind the controller caches at most (Jobs: Kueue's largest
 * benchmark has 50,000 workloads; the core's own cap is 1,000,000). */
#define CONTROLLER_OBJECTS_MAX 1000000
/* Pods in one workload at most (a Job's parallelism, a pod group's total
 * count): the webhook's own cap on a pod group (WEBHOOK_POD_GROUP_MAX). */
#define CONTROLLER_PODS_MAX 100000
/* Annotations gpuq writes on a Job. */
#define CONTROLLER_ANNOT_FLAVORS "gpuq.dev/flavors" /* "main=h100-80gb" per pod set */
/* the template's nodeSelector and tolerations before release */
#define CONTROLLER_ANNOT_ORIGINAL "gpuq.dev/original-scheduling"
/* the coarse status (queue_workload_status) */
#define CONTROLLER_ANNOT_STATUS WEBHOOK_ANNOT_STATUS
/* The usage ledger's checkpoint: ConfigMaps "gpuq-usage-<i>", i below
 * LEDGER_CKPT_PARTS_MAX, in the Lease's namespace; the part's bytes in
 * binaryData["ledger"], a summary for people in data["summary"]. */
#define CONTROLLER_USAGE_CONFIGMAP "gpuq-usage"

typedef struct controller controller_t;

/* How often a leader hands over the pods' LocalQueues (opts.pod_queues):
 * idle GPU time is scraped every 30 s by default, and a pod admitted
 * between two hand-overs counts for its namespace alone until the next. */
#define CONTROLLER_PODMAP_MS 5000
/* How often a leader predicts every pending workload's start (predict/:
 * at most 2,000 workloads, 50,000 steps, 7 days and 250 ms of wall time a
 * pass), and how often it evaluates the budgets (the core's
 * budget_interval_ms): a budget overshoots by at most what runs for that
 * long. */
#define CONTROLLER_PREDICT_MS 15000
/* A released parent (a Job, a JobSet, a TrainJob...) deleted keeps its
 * quota, and its place in the chain its Pods are counted by, this long
 * after the deletion is seen (and then until its last Pod is gone): its
 * controller, working from a cache that has not seen the deletion yet, may
 * still make a Pod, which a replica whose cache has not seen it either
 * lets pass, and which this watch shows later (issue 31: a TrainJob
 * deleted with its Jobs, a replacement Pod uncounted, 8 GPUs held of 6
 * for 7 s). It bounds the difference between two watches' delays. */
#define CONTROLLER_GONE_SETTLE_MS 5000
#define CONTROLLER_BUDGET_MS 10000
/* A leader that cannot write its store gives up (docs/controller.md, "When
 * the store fails"): after a failed commit it acts on nothing, reopens the
 * store and tries again CONTROLLER_STORE_RETRY_MS later; after
 * CONTROLLER_STORE_TRIES failures in a row (about 4 s) it gives the Lease
 * up for good (a standby takes it at its next round, 2 s later) and
 * /healthz fails, so the kubelet restarts it. */
#define CONTROLLER_STORE_TRIES 5
#define CONTROLLER_STORE_RETRY_MS 1000

typedef struct {
	const kube_config_t *kube;   /* where the apiserver is (borrowed) */
	kube_client_opts_t client;   /* rate limits of every connection */
	const char *state_dir;	     /* LMDB store directory */
	webhook_admission_t *adm;    /* where policy snapshots go (borrowed; may be NULL) */
	http_metrics_t *metrics;     /* where the queue metrics are rendered (its
					HTTP_METRICS_SOURCE_QUEUE slot; borrowed; NULL:
					nowhere) */
	webui_t *ui;		     /* the web view's snapshots and events go here
					(borrowed; NULL: no --ui) */
	webhook_config_t review_cfg; /* GPU resource names, controller user */
	bool leader_elect;	     /* false: act as leader at once (one replica) */
	const char *lease_namespace; /* Lease for leader election */
	const char *lease_name;	     /* its name */
	const char *identity;	     /* this replica's holder identity */
	int lease_duration_s;	     /* leaseDurationSeconds (default 15) */
	int64_t cycle_interval_ms;   /* a cycle at least this often (default 1000) */
	bool db_nosync;		     /* no fsync per state store commit (tests only) */
	int64_t usage_checkpoint_ms; /* the leader writes its usage ledger to the
					ConfigMaps CONTROLLER_USAGE_CONFIGMAP-0..7
					in lease_namespace this often and when it
					stops; 0: never (nor merges them) */
	void (*pod_queues)(void *ctx, idle_podmap_t *map); /* while leading, every
							      CONTROLLER_PODMAP_MS: the
							      LocalQueue of each pod and
							      Job holding quota (the map
							      is the callee's; NULL once
							      leadership is lost); NULL:
							      not built */
	void *pod_queues_ctx;				   /* its argument */
	void (*workload_utils)(void *ctx, void (*fn)(void *arg, const char *uid, double pct),
			       void *arg, uint64_t *seen); /* while leading, every pass:
							      each workload's busiest GPU
							      in the newest scrape
							      (dcgm_workload_utils), for
							      idle reclaim; NULL: none */
	void *workload_utils_ctx;			   /* its argument */
	int64_t predict_interval_ms;			   /* a prediction pass this often
							      while leading (default
							      CONTROLLER_PREDICT_MS; 0: none) */
	size_t predict_workloads;			   /* pending workloads a pass
							      simulates at most (default
							      PREDICT_WORKLOADS_DEFAULT): its
							      cost on the controller thread
							      follows this, not the queue */
	void (*give_up)(void *ctx, const char *why);	   /* called once, on the controller
							      thread, when this replica gives
							      up leading for good (its store
							      failed CONTROLLER_STORE_TRIES
							      commits in a row): why names the
							      store and the error (valid during
							      the call); the daemon fails
							      /healthz with it. NULL: none */
	void *give_up_ctx;				   /* its argument */
	queue_config_t core;				   /* the core's settings: fair_sharing,
							      ready_timeout_ms, backoff_base_ms,
							      backoff_max_ms, tenant_half_life_ms,
							      tenant_sample_ms and idle_fresh_ms
							      are taken from here; the
							      rest is the controller's own (quota held
							      until an evicted workload's pods are gone,
							      the Ready timeout on gangs only) */
} controller_opts_t;

/* Defaults: qps 50 burst 100, leader election on, lease gpuq-system/
 * gpuq-controller, duration 15 s, cycle every 1 s, durable store, the
 * core's defaults (queue_config_default: no fair sharing, Ready timeout
 * 30 min, backoff 60 s doubling to 1 h). */
void controller_opts_default(controller_opts_t *o);

/* Open the store and prepare the watches. The store is this process's
 * alone (its writer lock: a second writer on the directory is refused,
 * GPUQ_EAGAIN naming the holder's pid); one found corrupt is moved aside
 * (data.mdb.corrupt-<time>, logged) and a new one started, the queues then
 * rebuilt from the cluster when this replica leads. GPUQ_OK and *out, or a
 * store or memory error with diag naming it. */
int controller_create(const controller_opts_t *o, controller_t **out, gpuq_diag_t *diag);

/* Start the watch threads and the controller thread. */
int controller_start(controller_t *c, gpuq_diag_t *diag);

/* Stop every thread (a held Lease is released), close the store. Idempotent. */
void controller_stop(controller_t *c);

/* Stop and free. NULL is fine. */
void controller_destroy(controller_t *c);

/* Whether every watch has listed once and a policy snapshot is published. */
bool controller_synced(const controller_t *c);

/* Whether this replica holds the Lease (always true without election). */
bool controller_leader(const controller_t *c);

/* Whether this replica gave up leading for good (o.give_up was called). */
bool controller_gave_up(const controller_t *c);

#endif

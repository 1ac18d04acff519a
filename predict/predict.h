/*
 * predict: when each pending workload is expected to start. A pass forks
 * the live queue core (engine_fork: a memory-only engine over a copy made
 * through the record encoding, the same carry a policy change or a restart
 * uses) and steps the fork forward in virtual time (engine_step, as the
 * controller steps its engine; the pass changes the fork only through the
 * engine): admitted workloads finish when
 * their runtime says, cycles admit and preempt by the core's own rules
 * (budgets, minimum runtimes, fair sharing included), until every pending
 * workload simulated has started or a cap is reached. The live core is only
 * read, so a pass changes no decision.
 *
 * A workload's runtime is, in order: what the caller knows of it (a Job's
 * gpuq.dev/expected-runtime annotation, its activeDeadlineSeconds; the
 * simulator's trace), the median runtime of its LocalQueue's recent
 * finished workloads (predict_history_t), or a default. A running
 * workload past its runtime is taken to end soon: in a tenth of its runtime,
 * at least a minute.
 *
 * The design decision that matters: the cost of a pass is bounded up front,
 * not by the queue's depth: at most workloads_max pending workloads are
 * simulated (the first ones of every ClusterQueue, position by position),
 * at most steps_max event steps and horizon_ms of virtual time, and the
 * caller's stop() ends a pass that runs too long in wall time. What a cap
 * leaves out is reported as not predicted, never guessed.
 *
 * A driver-level module (like sim/): it reads no clock itself (`now` and
 * stop() are the caller's) and does no I/O. Not thread-safe: one pass at a
 * time per history; the live core must not change during a pass (call it on
 * the core's own thread).
 */
#ifndef GPUQ_PREDICT_H
#define GPUQ_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "policy/policy.h"
#include "queue/queue.h"

/* Defaults of predict_opts_t (see each field). */
#define PREDICT_WORKLOADS_DEFAULT 2000
#define PREDICT_STEPS_DEFAULT 50000
#define PREDICT_HORIZON_DEFAULT_MS ((int64_t)7 * 24 * 3600 * 1000)
#define PREDICT_RUNTIME_DEFAULT_MS ((int64_t)3600 * 1000)
/* A history keeps the last PREDICT_HISTORY_RUNS runtimes of each of at most
 * PREDICT_HISTORY_LQS LocalQueues (the policy's cap). */
#define PREDICT_HISTORY_RUNS 32
#define PREDICT_HISTORY_LQS 10000

typedef struct {
	size_t workloads_max;	    /* pending workloads simulated at most */
	uint64_t steps_max;	    /* event steps (tick, cycles) at most */
	int64_t horizon_ms;	    /* virtual time simulated at most */
	int64_t default_runtime_ms; /* when neither the caller nor the history knows */
	bool (*stop)(void *ctx);    /* polled every 64 steps: true ends the pass
				       (what has started is kept); NULL: never */
	void *stop_ctx;		    /* its argument */
	bool kept_only;		    /* the result lists only the pending workloads
				       the copy kept (those within workloads_max),
				       not every pending one of the live core: the
				       caller takes the rest as not predicted. Its
				       cost then follows workloads_max, not the
				       queue's depth (the daemon, every 15 s).
				       false: all (the simulator's report) */
} predict_opts_t;

void predict_opts_default(predict_opts_t *o);

/* The runtime the caller knows of workload v (ms), or -1. */
typedef int64_t (*predict_runtime_fn)(void *ctx, const queue_workload_view_t *v);

/* ---- History: what the LocalQueues' finished workloads ran ---- */

typedef struct predict_history predict_history_t;

int predict_history_create(predict_history_t **out); /* GPUQ_ENOMEM */
void predict_history_destroy(predict_history_t *h);  /* NULL is fine */
/* One finished run of local_queue ("namespace/name"): its runtime, ms
 * (>= 0). GPUQ_EINVAL, GPUQ_ELIMIT (a LocalQueue past the cap: not kept),
 * GPUQ_ENOMEM. */
int predict_history_add(predict_history_t *h, const char *local_queue, int64_t runtime_ms);
/* The median of local_queue's kept runtimes (the lower middle of an even
 * count), or -1 when it has none. */
int64_t predict_history_median(const predict_history_t *h, const char *local_queue);

/* ---- A pass ---- */

typedef struct {
	char *uid;	  /* a pending workload of the live core (owned) */
	int64_t start_ms; /* when it starts in the pass, or -1: not within the caps */
} predict_entry_t;

typedef struct {
	predict_entry_t *v; /* every pending workload of the live core (those
			       the copy kept, with kept_only), in uid order
			       (owned) */
	size_t n;	    /* entries */
	size_t simulated;   /* of them, simulated (within workloads_max) */
	size_t started;	    /* ... and started within the caps */
	uint64_t steps;	    /* event steps taken */
	int64_t reached_ms; /* the virtual time the pass reached */
	bool stopped;	    /* stop() ended it */
	bool capped;	    /* steps_max or horizon_ms ended it */
} predict_result_t;

/* Copy live (built from policy p with cfg: the policy and configuration its
 * driver uses) and run the copy forward from max(now, its last now). fn
 * (may be NULL) and h (may be NULL) give runtimes. On GPUQ_OK *out is the
 * caller's (predict_result_deinit). Errors: engine_core_rebuild's (diag
 * says which), the core's, GPUQ_ENOMEM. */
int predict_run(const queue_t *live, policy_t *p, const queue_config_t *cfg, int64_t now,
		const predict_opts_t *o, predict_runtime_fn fn, void *ctx,
		const predict_history_t *h, predict_result_t *out, gpuq_diag_t *diag);

void predict_result_deinit(predict_result_t *r); /* NULL is fine */

/* A pass in two halves, so the run need not hold the core's thread (the
 * daemon runs it on a thread of its own while the controller releases):
 * predict_begin reads live, fn and h (the core's thread, as predict_run):
 * the records the copy keeps encoded (engine_fork_begin), every runtime the
 * run may need resolved; then predict_finish builds the copy from them
 * (engine_fork_end) and runs it forward on any one thread, touching nothing
 * of the caller's but the policy the copy holds a reference on (and
 * o->stop, o->stop_ctx: they must stay valid until it returns), and frees
 * the pass. predict_run is the two in a row. */
typedef struct predict_pass predict_pass_t;

int predict_begin(const queue_t *live, policy_t *p, const queue_config_t *cfg, int64_t now,
		  const predict_opts_t *o, predict_runtime_fn fn, void *ctx,
		  const predict_history_t *h, predict_pass_t **out, gpuq_diag_t *diag);
int predict_finish(predict_pass_t *pp, predict_result_t *out, gpuq_diag_t *diag);
/* A begun pass not finished (NULL is fine). */
void predict_pass_free(predict_pass_t *pp);

/* The entry of uid in r (bisection), or NULL. */
const predict_entry_t *predict_find(const predict_result_t *r, const char *uid);

#endif

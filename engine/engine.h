/*
 * engine: what a driver holds. An engine_t owns the queueing core built from
 * the policy snapshot in force, and the state store the core's records are
 * kept in; a driver (`gpuq simulate`, the daemon's controller) adds and
 * moves workloads through it, asks it to step (engine_step: the tick, the
 * cycles at one instant, one commit of the core's records with the
 * driver's, and only then the results to act on), reads the core through
 * read-only views, and
 * hands it each new policy (engine_policy_set: in place when the tree's
 * shape allows, else a rebuild). Below engine_t sit the translations it is
 * made of (engine_t drives them; tests and benches call them on bare
 * cores): a policy_t
 * into a core (flavors, cohorts, ClusterQueues with their quotas,
 * LocalQueues), the core's changed records into a store batch and back, and
 * rebuilding a core when the cluster's policy objects change shape,
 * carrying every workload, usage and ledger over. policy/, queue/ and store/
 * do not know about each other; only this module includes all three.
 *
 * The design decision that matters: the core's records (queue_record_encode /
 * queue_record_apply, keyed by names, never ids) are the only bridge between
 * two cores and between a core and the store. A restart restores records
 * into a core built from the policy; a policy change moves records from the
 * old core into a core built from the new policy (engine_core_rebuild). So a
 * rebuilt core and a restarted one are the same thing, and what cannot be
 * carried over (a record naming an object the new policy lacks) is found in
 * one place and handed back to the caller instead of being lost silently.
 *
 * The step (engine_step) is the one order every driver follows: the tick,
 * the admission cycles at one instant under the cap the driver passes, the
 * results booked into the driver's records as they come, ONE commit of the
 * core's changed records and the driver's, and only once it succeeded the
 * results handed to the driver to act on. The controller, the simulator
 * and the prediction (on a fork: engine_fork) all take it; none of them
 * runs the core's tick or cycle itself.
 *
 * Errors: every call that can fail returns the project's one code (0 =
 * GPUQ_OK, negatives; gpuq_strerror) and says why in its gpuq_diag_t when
 * it takes one. The core's codes pass through unchanged (GPUQ_EINVAL a
 * refused spec, GPUQ_ENOTFOUND an unknown uid or id, GPUQ_EEXIST,
 * GPUQ_ELIMIT a cap, GPUQ_ENOMEM), and so do the store's, translated once
 * by store/ (GPUQ_ESTORE, GPUQ_ECORRUPT, GPUQ_EIO, GPUQ_EAGAIN another
 * writer); LMDB failures are also logged once by the store. Failures leave
 * things whole: a failed core call changes nothing (queue.h says where it
 * stops early, GPUQ_ENOMEM in a cycle, and that what it did is handed back
 * to act on); a failed commit keeps the core's changed set for the next
 * commit and acts on nothing; a failed engine_open leaves nothing open; a
 * failed engine_policy_set keeps the policy and core in force. A broken
 * invariant of the core is the core's loud abort, never a return code.
 *
 * Ownership: engine_open and engine_fork give the caller an engine_t
 * (engine_close, which takes NULL); the engine holds one reference on the
 * policy in force (policy_ref), its core, its store and the last step's
 * kept results. Every pointer it hands out is borrowed, with its lifetime
 * in its contract: the core (engine_core) and the names of its objects
 * until engine_close or a policy change that replaces the core; a
 * workload's strings (uid, views) while it lives; a result to book during
 * the hook's call, to act on until the next engine_step; the policy until
 * the next engine_policy_set. What the caller must free is said where it
 * is made: engine_record_get's copy (free), the reports
 * (engine_rebuild_report_deinit, engine_policy_report_deinit). Strings
 * passed in are copied by the core when it keeps them.
 *
 * Threads: none of its own, no locks, no globals, no clock (the time is
 * every call's `now`; a step is timed only by the caller's clock hook). An
 * engine_t, and the core and store in it, is used by one thread at a time:
 * the controller's thread, or the simulator's; a module that reads the
 * core (qmetrics/, webui/, predict/) reads it on that thread and publishes
 * its own copy to others. A fork shares nothing with the engine it came
 * from, once made. It does I/O only through its store, and logs only an
 * encode failure (engine_stage) and the reports it is asked to log.
 */
#ifndef GPUQ_ENGINE_H
#define GPUQ_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "policy/policy.h"
#include "queue/queue.h"

/* ---- The core's read API ----
 *
 * The engine does not rename the core: its types and values are queue/'s
 * own (queue_workload_spec_t to add a workload, queue_result_t a step's
 * result, queue_workload_view_t, QUEUE_WL_ADMITTED, ...), documented in
 * queue/queue.h, which this header includes. A driver reads the core
 * through engine_core (a const queue_t *) and queue.h's functions that take
 * one (queue_workload_view, queue_cq_name, queue_budget_view, ...); every
 * change goes through the engine (engine_change_apply, engine_step,
 * engine_policy_set), the one writer of its core. scripts/arrows.py holds
 * the drivers to that: no call of a queue/ function that takes a core to
 * change. */

/* ---- The engine ---- */

typedef struct engine engine_t;

/* A driver's own records share the store with the core's, in the same
 * batches: type ids ENGINE_TYPE_DRIVER_FIRST up to ENGINE_TYPE_MAX - 1 (the
 * store's numbering: engine.c checks they agree with store/'s). */
#define ENGINE_TYPE_DRIVER_FIRST 8 /* below: the core's record types */
#define ENGINE_TYPE_MAX 16	   /* record types a store holds */
#define ENGINE_DRIVER_TYPES_MAX (ENGINE_TYPE_MAX - ENGINE_TYPE_DRIVER_FIRST)

/* An open write batch of the engine's store, handed to the driver's
 * stage function by a commit (engine_commit, engine_step): the driver adds
 * its records with engine_record_put and engine_record_del, valid during
 * the stage call only. */
typedef struct engine_batch engine_batch_t;

/* Called by engine_open once its store is open and the core built, before
 * the core's stored records are restored into it: the driver reads its own
 * records (engine_record_get, engine_record_scan) and may refuse the store
 * (a run of another input) by returning an error with diag set, which
 * engine_open returns. GPUQ_OK goes on. */
typedef int (*engine_check_fn)(void *ctx, engine_t *e, gpuq_diag_t *diag);

typedef struct {
	const char *state_dir;	/* the store's directory (created when absent);
				   NULL: memory only, nothing is kept */
	bool nosync;		/* commit without fsync (store_opts_t.nosync) */
	bool read_only;		/* open an existing store only to read it, next to a
				   live writer: nothing written, and one read
				   snapshot serves every read until engine_close
				   (engine_commit refuses: GPUQ_EINVAL) */
	size_t map_max;		/* the store's growth cap, bytes; 0: the store's */
	bool set_aside_corrupt; /* a store found corrupt at open is moved aside
				   and a new one started (store_opts_t.
				   set_aside_corrupt): for a driver that can
				   rebuild its state elsewhere */
	const char *driver_types[ENGINE_DRIVER_TYPES_MAX]; /* [i]: the name of the
							      driver's record type
							      ENGINE_TYPE_DRIVER_FIRST
							      + i; NULL: unused */
	engine_check_fn check;				   /* NULL: none */
	void *check_ctx;				   /* check's ctx */
} engine_opts_t;

/* Fill o: memory only, durable commits, no driver types, no check. */
void engine_opts_init(engine_opts_t *o);

/* Open an engine: build the core from p (engine_core_build with cfg; NULL:
 * the defaults), take a reference on p (policy_ref; released by
 * engine_close), and with o->state_dir open the store there, naming the
 * core's record types (engine_store_types) and the driver's. A store that
 * has been written to (a blank one, whose creation was interrupted, has
 * not) is then handed to o->check, and its core records, if it holds any,
 * are restored into the core (engine_restore): engine_resumed says so.
 * p may be NULL for a driver that learns its policy later (the controller
 * opens its store at start; the cluster's policy comes with the first
 * LIST): the engine then has no core (engine_core is NULL, and only
 * engine_policy_set, engine_record_*, engine_commit, engine_core and
 * engine_config may be called) until the first engine_policy_set, which
 * builds it and restores the store's records into it. On
 * GPUQ_OK *out is the caller's (engine_close). On failure *out is NULL,
 * nothing is left open and diag says why: engine_core_build's errors, the
 * store's (store_open: GPUQ_ENOTFOUND for a read-only open of a directory
 * without a store, GPUQ_EAGAIN when another writer holds the directory,
 * GPUQ_ESTORE, GPUQ_ECORRUPT unless set_aside_corrupt, GPUQ_EIO,
 * GPUQ_EINVAL), the
 * check's, or engine_restore's (a record the policy cannot hold). */
int engine_open(policy_t *p, const queue_config_t *cfg, const engine_opts_t *o, engine_t **out,
		gpuq_diag_t *diag);

/* Close the store (flushed when nosync), destroy the core, drop the policy
 * reference. Every pointer the engine handed out dies. NULL is fine. */
void engine_close(engine_t *e);

/* Open the store again after a failed commit (store_reopen: the writer
 * lock kept; a store then found corrupt is moved aside when the engine was
 * opened with set_aside_corrupt). The core is left as it is, its changed
 * set too, and the next engine_commit rewrites every core record
 * (engine_commit_full_next): what the store holds after a failure is in
 * doubt. The driver's own records are what the store holds: none after a
 * move aside. GPUQ_OK; GPUQ_EINVAL without a store or read-only; the
 * store's errors (then commits fail with GPUQ_ESTORE until a reopen
 * succeeds). */
int engine_store_reopen(engine_t *e, gpuq_diag_t *diag);

/* Where the store's last open or reopen moved a corrupt data.mdb (NULL:
 * it did not; valid until the next reopen or engine_close). */
const char *engine_store_moved_aside(const engine_t *e);

/* Whether engine_open restored core records from the store (a run to
 * resume); false for a memory-only engine or a store holding none. */
bool engine_resumed(const engine_t *e);

/* The policy in force (borrowed: valid until engine_close or the next
 * engine_policy_set); NULL before the first when opened without one. */
const policy_t *engine_policy(const engine_t *e);

/* The core's configuration (a copy made at engine_open). */
const queue_config_t *engine_config(const engine_t *e);

/* The core, read only, for the modules that take a core to render or copy
 * (qmetrics_*, predict_run, webui_*): valid until engine_close, or until an
 * engine_policy_set that replaces it (rebuilt) or engine_core_reset; NULL
 * while the engine has no policy. A driver changes it only through engine_
 * calls. */
const queue_t *engine_core(const engine_t *e);

/* ---- Changes: what a driver saw, applied to the core ----
 *
 * Every change a driver makes to the core outside a step goes through one
 * call, engine_change_apply, as a tagged change: what the driver observed
 * (a workload arrived, its pods are Ready, it finished, its limit label
 * moved, ...) or took in (another writer's history). The core applies it
 * under its own rules (queue/queue.h: each queue_workload_* call named
 * below says its errors) and marks what it changed for the next commit.
 * What the engine decides, for every change alike: none without a core
 * (before the first policy: GPUQ_EINVAL, not a crash), and a refusal said
 * once, in diag, naming the change and its workload ("finish of workload
 * \"u1\": not found"; the core's own words where it has them, an add's,
 * an update's, a merge's), so no driver words its own. */

typedef enum {
	ENGINE_CHANGE_ADD = 0,	     /* a workload arrives, pending: spec; *id
					(queue_workload_add) */
	ENGINE_CHANGE_UPDATE,	     /* a pending workload's object changed: spec,
					applied whole or not at all; *changed
					(queue_workload_update) */
	ENGINE_CHANGE_LIMIT,	     /* its own wall-clock limit: max_exec_s
					(admitted, at once; deactivated, it comes
					back); *changed (queue_workload_limit_set) */
	ENGINE_CHANGE_PODS_READY,    /* all pods of admitted workload uid are Ready */
	ENGINE_CHANGE_FINISH,	     /* admitted workload uid completed; it stays
					FINISHED until deleted */
	ENGINE_CHANGE_DELETE,	     /* workload uid forgotten, in any state */
	ENGINE_CHANGE_UTILIZATION,   /* its pods' GPU utilization, value percent,
					measured at now */
	ENGINE_CHANGE_ADOPT,	     /* a workload that already runs (found after a
					restart with its flavors recorded) admitted as
					it stands: adopt[n_adopt], one per pod set */
	ENGINE_CHANGE_CARRY,	     /* ... and, adopted again as it stands, keeps
					admitted_ms and exec_ms (queue_workload_carry) */
	ENGINE_CHANGE_PODS_ADD,	     /* pods more pods of pending or admitted workload
					uid exist (a pod group growing) */
	ENGINE_CHANGE_EVICTED,	     /* the pods of evicted workload uid are gone: its
					quota is freed */
	ENGINE_CHANGE_PREDICT_SET,   /* a predicted start, start_ms (wall ms; 0:
					none), for pending workload uid */
	ENGINE_CHANGE_PREDICT_SHOW,  /* whether its status may say that start: show;
				      *was (queue_workload_predict_show) */
	ENGINE_CHANGE_LQ_USAGE_SEED, /* LocalQueue lq's tenant, holding no usage
					history of its own, takes value as its decayed
					usage (a former leader's figure from the
					LocalQueue's status: queue_lq_usage_seed) */
	ENGINE_CHANGE_LEDGER_MERGE,  /* one part of another writer's usage ledger
					checkpoint, part[len], merged into the
					core's; *merged (queue_ledger_merge) */
	ENGINE_CHANGE_NODE_SET,	     /* a node as it now is: node_spec (its
					capacity, labels, taints, readiness and what
					pods gpuq did not admit use: queue_node_set).
					Nodes are not stored: a driver sets them
					again after a restart */
	ENGINE_CHANGE_NODE_DELETE,   /* node `node` is gone (queue_node_delete) */
	ENGINE_CHANGE_COUNT
} engine_change_kind_t;

/* One change; the members its kind names, the rest zero. Strings and
 * arrays are borrowed for the call (the core copies what it keeps). */
typedef struct {
	engine_change_kind_t kind;
	const char *uid;		    /* the workload (ADD, UPDATE: spec's) */
	int64_t now;			    /* when it was seen */
	const queue_workload_spec_t *spec;  /* ADD, UPDATE */
	const queue_adopt_t *adopt;	    /* ADOPT: one per pod set */
	size_t n_adopt;			    /* ... entries */
	const uint8_t *part;		    /* LEDGER_MERGE: the checkpoint part */
	size_t len;			    /* ... its bytes */
	int64_t admitted_ms;		    /* CARRY: its admission time */
	int64_t exec_ms;		    /* CARRY: its earlier admitted time */
	int64_t start_ms;		    /* PREDICT_SET */
	double value;			    /* UTILIZATION: percent; LQ_USAGE_SEED: usage */
	int32_t max_exec_s;		    /* LIMIT: seconds, 0 none */
	int32_t pods;			    /* PODS_ADD: how many more */
	uint32_t lq;			    /* LQ_USAGE_SEED: the LocalQueue's id */
	bool show;			    /* PREDICT_SHOW */
	queue_wl_t *id;			    /* ADD: out, the new workload's id; NULL */
	bool *changed;			    /* UPDATE, LIMIT: out, whether anything
					       did; NULL */
	bool *was;			    /* PREDICT_SHOW: out, the setting before; NULL */
	ledger_merge_info_t *merged;	    /* LEDGER_MERGE: out, what merged; NULL */
	const queue_node_spec_t *node_spec; /* NODE_SET */
	const char *node;		    /* NODE_DELETE: its name */
} engine_change_t;

/* Apply ch to e's core, marked for the next commit (engine_commit or the
 * next step's). GPUQ_OK; GPUQ_EINVAL with no core yet or a kind out of
 * range; else the core's error for that change, diag naming the change
 * and its workload. The book hook of a step may call it (engine_step's
 * contract); nothing is committed by it. */
int engine_change_apply(engine_t *e, const engine_change_t *ch, gpuq_diag_t *diag);

/* One toleration as Kubernetes writes it into the core's: op "Exists" (else
 * Equal), effect by the policy's one map (engine_effect_named; NULL or ""
 * is every effect), a NULL key or value as "". The strings are borrowed.
 * GPUQ_OK, or GPUQ_EINVAL for an effect Kubernetes does not know: that
 * toleration tolerates no taint, and the driver leaves it out. */
int engine_toleration_named(const char *key, const char *op, const char *value, const char *effect,
			    queue_toleration_t *out);

/* ---- The step ---- */

/* Stage the driver's own records into batch b (engine_record_put,
 * engine_record_del); GPUQ_OK, or an error that fails the commit. */
typedef int (*engine_stage_fn)(void *ctx, engine_batch_t *b);

/* Which call of a step a result is from. */
typedef enum {
	ENGINE_STEP_TICK = 0,  /* the tick: evictions of Ready timeouts, wall-clock limits,
				  drains; idle workloads, budget changes */
	ENGINE_STEP_CYCLE = 1, /* an admission cycle: admissions, preemptions, set-asides */
} engine_phase_t;

/* What a driver does with a step (engine_step): every hook may be NULL,
 * and each gets ctx. */
typedef struct {
	unsigned cycles; /* admission cycles the step runs at most, all at its
			    `now`: 0, the tick alone; each cycle after the first
			    only when the one before evicted (its preemptors need
			    one more). The controller and the simulator 1 (the
			    simulator counts its own cycles at one instant across
			    its steps, since its events at that instant come
			    between them), the prediction 100 */
	bool cycle_due;	 /* something changed since the last cycle: the first
			    cycle runs; false: it runs only when the tick evicted
			    (freed quota) */
	/* Book one result, before the commit, as the core makes it: the
	 * tick's, then each cycle's, in order (res valid during the call; its
	 * strings while their workload lives). What the driver's records say
	 * of it goes in the step's batch (stage); the hook may change workloads
	 * through engine_change_apply (the simulator's gang Ready at its
	 * admission), which the next cycle then sees, and must not act outside
	 * the process: nothing is committed yet. GPUQ_OK goes on; an error ends
	 * the step, nothing committed, and is returned (diag: engine_step's,
	 * for the hook to say why). */
	int (*book)(void *ctx, engine_phase_t phase, const queue_result_t *res, gpuq_diag_t *diag);
	/* After the last result is booked, before the commit: the driver's
	 * last word on its records (the simulator's step counters). An error
	 * as book's. */
	int (*booked)(void *ctx, gpuq_diag_t *diag);
	/* The driver's records into the step's batch (engine_commit's). */
	engine_stage_fn stage;
	/* Act on one result, once the step is committed: each result again,
	 * in the order booked (res an engine-owned copy, valid until the next
	 * engine_step or engine_close; its uid strings while their workload
	 * lives). Not called when the commit failed. NULL: the engine keeps no
	 * copy. */
	void (*act)(void *ctx, engine_phase_t phase, const queue_result_t *res);
	/* A monotonic clock in ns, to time the step's parts (the engine reads
	 * none of its own); NULL: not timed. */
	uint64_t (*clock_ns)(void *ctx);
	void *ctx; /* every hook's argument */
} engine_step_opts_t;

/* What a step did. */
typedef struct {
	unsigned cycles;    /* admission cycles run */
	bool tick_evicted;  /* the tick evicted */
	bool evicted;	    /* the last result (the last cycle's; the tick's when none
			       ran) evicted: another cycle is due at this instant */
	int core_rc;	    /* the core's error (GPUQ_ENOMEM): a tick or cycle stopped
			       early; what it did was booked, committed and acted on,
			       and the step ran no further cycle. Else GPUQ_OK */
	bool commit_tried;  /* a commit was made (a store, and something to commit
			       or a stage hook) */
	int commit_rc;	    /* its outcome (GPUQ_OK when none was tried) */
	uint64_t core_ns;   /* with clock_ns: the tick's and cycles' time */
	uint64_t commit_ns; /* ... the commit's */
} engine_step_report_t;

/* One step at `now`, the one order every driver follows: advance the
 * clock (queue_tick), run the admission cycles o allows at that instant
 * (queue_cycle_run), each result booked by o->book as it comes; then
 * o->booked; then ONE commit (engine_commit with o->stage: the core's
 * changed records and the driver's together; skipped when the engine has
 * no store, or there is nothing to commit and no stage hook); and only once
 * it succeeded, each result handed to o->act. So nothing is acted on that
 * the store does not hold.
 *
 * Returns GPUQ_OK; a book or booked hook's error (nothing committed or
 * acted on; the core keeps what the step did, committed by the next
 * commit); the commit's (rep->commit_rc, diag as engine_commit: nothing
 * acted on, the core's changed set kept); or, after the commit and the
 * acts, the core's (rep->core_rc, GPUQ_ENOMEM: call again, what was left
 * goes in a later step). GPUQ_EINVAL with no policy yet, or a read-only
 * engine with a store (as engine_commit). rep (may be NULL) says what was
 * done. One thread, as every engine call. */
int engine_step(engine_t *e, int64_t now, const engine_step_opts_t *o, engine_step_report_t *rep,
		gpuq_diag_t *diag);

/* Commit, in ONE store batch, every record of the core changed since the
 * last commit (engine_stage; all of them, and deletes of the stored records
 * of objects the core no longer holds, after engine_commit_full_next or a
 * core replaced by engine_policy_set or engine_core_reset) and
 * what stage (may be NULL) adds for the driver. Only on success is the core's changed set cleared;
 * after a failure it is kept whole, so the next commit writes it again, and
 * diag names the step ("state store: building the batch: ..." or "state
 * store: commit failed: ..."; LMDB failures are also logged once by the
 * store). A memory-only engine commits nothing: stage is not called and
 * the core's changed set is left as it is. GPUQ_EINVAL on a read-only
 * engine, and on one with no policy yet. */
int engine_commit(engine_t *e, engine_stage_fn stage, void *ctx, gpuq_diag_t *diag);

/* Make the next successful engine_commit rewrite the store's core records
 * exactly (as engine_persist_full: every live record put, the stored ones
 * of objects the core no longer holds deleted; a scan of the core's
 * tables): when the store's content is in doubt. (engine_policy_set and
 * engine_core_reset ask for it themselves when they replace the core.) */
void engine_commit_full_next(engine_t *e);

/* The core's records changed since the last commit (queue_dirty_count). */
size_t engine_changed_count(const engine_t *e);

/* Whether the core has anything to commit: changed records, or a full
 * rewrite pending (engine_commit_full_next, a rebuilt or reset core). False
 * without a core. */
bool engine_commit_due(const engine_t *e);
/* Whether the next commit rewrites every core record (a full rewrite
 * pending). */
bool engine_commit_full_due(const engine_t *e);

/* ---- The driver's own records ---- */

/* Add a put (a delete) of the driver's record (type, key) to batch b: as
 * store_put / store_del (copied; sticky errors; GPUQ_EINVAL for a type not
 * named at engine_open), and GPUQ_EINVAL, the batch untouched, for a type
 * below ENGINE_TYPE_DRIVER_FIRST: the core's records are the engine's to
 * write. */
int engine_record_put(engine_batch_t *b, unsigned type, const void *key, size_t klen,
		      const void *val, size_t vlen);
int engine_record_del(engine_batch_t *b, unsigned type, const void *key, size_t klen);

/* Called once per record, in key order; key and val are valid only during
 * the call. 0 goes on; any other value stops the scan and is returned. */
typedef int (*engine_scan_fn)(void *ctx, unsigned type, const void *key, size_t klen,
			      const void *val, size_t vlen);

/* Read the driver's records from the store (as store_get: *val is a new
 * malloc'd copy, the caller's; as store_scan). GPUQ_ENOTFOUND (no such
 * record; or no store: a memory-only engine holds no records), GPUQ_EINVAL
 * (a type the store does not name), the store's errors. */
int engine_record_get(engine_t *e, unsigned type, const void *key, size_t klen, void **val,
		      size_t *vlen);
int engine_record_scan(engine_t *e, unsigned type, engine_scan_fn cb, void *ctx);

/* ---- What the core's reads do not say ----
 *
 * (Everything else a driver reads, it reads from engine_core through
 * queue.h: workloads, queues, budgets, the ledger, the clock, the next
 * event, the invariants.) */

/* Whether a budget over its limit with action Hold keeps workloads waiting
 * (until its window turns). False without a core. */
bool engine_budget_holds(const engine_t *e);

/* ---- Building a core from a policy snapshot ---- */

/* Create a queue core (queue_create with cfg; NULL: queue_config_default)
 * holding p's objects, in p's order: every ResourceFlavor (nodeLabels,
 * nodeTaints, tolerations), every Cohort (fair-sharing weight), every
 * ClusterQueue (cohort, resource groups with nominal / borrowing / lending
 * quotas converted by quota_qty_amount, queueing strategy, preemption, stop
 * policy, weight), every LocalQueue (its ClusterQueue, weight). Ids in the
 * core follow that order, so two builds from one policy agree. p must be
 * finished (policy_finish); the core copies what it keeps, so p may be
 * released afterwards. LocalQueue stop policies and namespace selectors are
 * not the core's (the caller checks policy_cq_selects before adding a
 * workload). On GPUQ_OK *out is the caller's (queue_destroy); on failure
 * *out is NULL and diag names the object: GPUQ_ENOMEM, or the core's refusal
 * (GPUQ_EINVAL, GPUQ_ELIMIT, GPUQ_EEXIST) of an object the policy accepted. */
int engine_core_build(const policy_t *p, const queue_config_t *cfg, queue_t **out,
		      gpuq_diag_t *diag);

/* A workload's toleration effect by name into the core's: policy's one map
 * (policy_effect_named; NULL or "" is every effect). GPUQ_OK, or
 * GPUQ_EINVAL for a name Kubernetes does not know: that toleration
 * tolerates no taint, so the driver leaves it out of the pod set. */
int engine_effect_named(const char *name, queue_effect_t *out);

/* The core's taint effect for the policy's (an effect the policy does not
 * know: every effect, QUEUE_EFFECT_ANY). */
queue_effect_t engine_effect_of(policy_effect_t e);

/* The policy's economics into q (engine_core_build does it; docs/
 * economics.md): the PriorityClasses' gpuq.dev/min-runtime by value
 * (queue_min_runtimes_set), and every budget (queue_budgets_set): each
 * ClusterQueue's spec.budget, each LocalQueue's (scope LocalQueue or
 * Namespace), charging cost budgets at the flavors' price annotations.
 * (ClusterQueues' minRuntime and idleReclaim travel with their spec.) The
 * core's refusal, naming the object, or GPUQ_ENOMEM. */
int engine_core_econ(queue_t *q, const policy_t *p, gpuq_diag_t *diag);

/* The core's records in a bare store (engine_store_types, engine_stage,
 * engine_persist, engine_restore, ...: what engine_t is made of, for tools
 * and tests) are in engine/engine_store.h, which names store/'s types; this
 * header does not include store/. */

/* ---- A policy change the core takes in place ---- */

typedef struct {
	size_t cqs_updated; /* ClusterQueues whose spec changed (queue_cq_update) */
	char why[160];	    /* GPUQ_EINVAL: what needs a rebuild ("Cohort x changed") */
} engine_apply_report_t;

/* Take newp into q, a core built from oldp (by engine_core_build or
 * engine_core_rebuild), without touching its workloads, when newp keeps the
 * core's shape: the same ResourceFlavors as the core keeps them (node
 * labels, taints, tolerations), the same cohorts with the same quotas,
 * parents and weights, the same ClusterQueues in the same order under the
 * same cohorts with resource groups of the same shape (covered resources,
 * flavors), the same LocalQueues (ClusterQueue, weight). Then every
 * ClusterQueue whose spec changed (quotas, limits, strategy, preemption,
 * fair sharing, stop policy, minimum runtime, idle reclaim) is updated with
 * queue_cq_update (which marks its cohort changed, so the next cycle tries
 * what was set aside) and the economics re-applied (engine_core_econ:
 * budgets keep their state, prices and minimum runtimes are replaced). The
 * cost is the policy's objects, not the core's workloads; the changed
 * records are the updated ClusterQueues' (engine_persist writes them).
 *
 * GPUQ_OK with rep->cqs_updated; GPUQ_EINVAL with rep->why when the shape
 * differs (q untouched: rebuild with engine_core_rebuild); the core's
 * refusal of an update or engine_core_econ's error with diag (q may hold
 * some of the updates then: a rebuild from it with newp is still right,
 * since a rebuild carries records, not specs). */
int engine_core_apply(queue_t *q, const policy_t *oldp, const policy_t *newp,
		      engine_apply_report_t *rep, gpuq_diag_t *diag);

/* ---- Rebuilding the core after a policy change ---- */

typedef enum {
	ENGINE_LOST_LOCALQUEUE = 1,   /* its LocalQueue is not in the new policy */
	ENGINE_LOST_CLUSTERQUEUE = 2, /* its ClusterQueue is gone (with its LocalQueues), or
					 it holds quota under a ClusterQueue that no longer
					 serves its LocalQueue */
	ENGINE_LOST_FLAVOR = 3,	      /* it holds quota on a flavor its ClusterQueue no
					 longer lists for that resource (the flavor, or the
					 resource, left the ClusterQueue or the policy) */
} engine_lost_reason_t;

/* A workload of the old core that the new core does not hold. Strings are
 * owned by the report. */
typedef struct {
	const char *uid;	     /* metadata.uid */
	const char *namespace_;	     /* metadata.namespace */
	const char *name;	     /* metadata.name */
	const char *local_queue;     /* its LocalQueue in the old core, "namespace/name" */
	const char *cluster_queue;   /* its ClusterQueue in the old core */
	const char *flavor;	     /* ENGINE_LOST_FLAVOR: the flavor it holds; else NULL */
	const char *resource;	     /* ENGINE_LOST_FLAVOR: ... for this resource; else NULL */
	queue_wl_state_t state;	     /* its state in the old core */
	engine_lost_reason_t reason; /* why it was not carried over */
} engine_lost_t;

typedef struct {
	engine_lost_t *lost;	/* workloads not carried over, in uid order (owned) */
	size_t n_lost;		/* entries in lost */
	size_t workloads;	/* workloads carried over */
	size_t cqs_dropped;	/* ClusterQueue records dropped: not in the new policy */
	size_t tenants_dropped; /* tenant records dropped: LocalQueue not in the new policy */
	size_t cqs_reset;	/* ClusterQueues kept whose history counters restart at 0
				   (their flavors/resources shrank, or their admitted
				   workloads changed: see engine_core_rebuild) */
} engine_rebuild_report_t;

/* Free what a report owns and zero it. NULL is fine. */
void engine_rebuild_report_deinit(engine_rebuild_report_t *rep);

/* Lost workloads logged at most, one line each; the rest are counted. */
#define ENGINE_LOG_LOST_MAX 20

/* Log a report: one INFO line with the counts, and one WARN line per lost
 * workload (uid, namespace/name, old ClusterQueue, state, reason) for the
 * first ENGINE_LOG_LOST_MAX, then one line with how many more. */
void engine_rebuild_report_log(const engine_rebuild_report_t *rep);

/* A static word for a reason: "LocalQueueGone", "ClusterQueueGone",
 * "FlavorGone"; "Unknown" for other values. */
const char *engine_lost_reason_name(engine_lost_reason_t reason);

/* Build a fresh core from newp (engine_core_build with cfg) and carry every
 * record of `old` over (read through its public views and
 * queue_record_encode; old is not modified and stays usable), for a policy
 * change the core cannot take in place (queue_cq_update refuses structural
 * changes: a ClusterQueue added, removed, moved to another cohort or given
 * other flavors or resources; a LocalQueue added, removed or pointed at
 * another ClusterQueue; flavors added or removed). With the policy old was
 * built from, the new core holds the same workloads in the same states,
 * orders, usage, ledgers, counters and clock.
 *
 * What is carried and what is not:
 *  - the meta record (cycle count, clock, tenant-sample time): always;
 *  - tenant records (decayed usage, ledger, counters) of LocalQueues in
 *    newp: kept, also when the LocalQueue now feeds another ClusterQueue;
 *    others dropped and counted (rep->tenants_dropped);
 *  - workloads: carried in their state (pending ones keep their wait reason,
 *    backoff and place; admitted ones their admission, Ready timer and
 *    flavors) unless their LocalQueue is gone (ENGINE_LOST_LOCALQUEUE, or
 *    ENGINE_LOST_CLUSTERQUEUE when its ClusterQueue went too), or they hold
 *    quota (admitted, evicting) and either their LocalQueue now feeds another
 *    ClusterQueue (ENGINE_LOST_CLUSTERQUEUE) or a flavor they hold is not
 *    listed for that resource by their ClusterQueue any more
 *    (ENGINE_LOST_FLAVOR). A lost workload is not in the new core at all:
 *    it is reported in rep->lost, in any state (finished ones too), and the
 *    caller decides (the controller evicts what still runs, tells the user,
 *    and re-adds with queue_workload_add what should queue again). A pending
 *    workload whose LocalQueue now feeds another ClusterQueue moves with
 *    it. Admitted workloads stay admitted even where the new quota is lower
 *    than their usage (nothing is evicted; new admissions stop);
 *  - ClusterQueue records (history counters; usage is derived from the
 *    carried workloads): of ClusterQueues not in newp, dropped and counted
 *    (rep->cqs_dropped); of the others, kept when the ClusterQueue still
 *    lists every flavor/resource it had and its carried workloads hold
 *    exactly the usage it had; otherwise its counters restart at 0
 *    (rep->cqs_reset) while its usage is the carried workloads'.
 * Every cohort is then marked changed with capacity up (queue_cq_update
 * with the ClusterQueue's unchanged spec), so the next cycle retries every
 * set-aside workload against the new quotas. The new core's changed set
 * holds every live record: persist it with engine_persist_full, which also
 * deletes the stored records of what was dropped.
 *
 * On GPUQ_OK *out is the new core (the caller's: it destroys `old` when it
 * switches) and *rep is filled (engine_rebuild_report_deinit). On failure
 * *out is NULL, *rep is empty, old is as it was, and diag says why:
 *   GPUQ_EAGAIN  old's meta record names a cohort newp lacks (one whose
 *                set-aside workloads were due a retry when a ClusterQueue
 *                left it): run a cycle on old (queue_cycle_run), which
 *                clears that, and rebuild again;
 *   GPUQ_ENOMEM; engine_core_build's errors; the core's refusal of a
 *   carried record (GPUQ_ELIMIT past the new cfg's workloads_max, ...),
 *   naming it. */
int engine_core_rebuild(const queue_t *old, const policy_t *newp, const queue_config_t *cfg,
			queue_t **out, engine_rebuild_report_t *rep, gpuq_diag_t *diag);

/* Whether engine_core_copy carries old's workload id. */
typedef bool (*engine_copy_keep_fn)(void *ctx, queue_wl_t id);
/* A memory-only engine over a throwaway copy of core `live` (built from p
 * with cfg, which may differ from live's configuration):
 * engine_core_copy's copy, keeping what keep(ctx, id) accepts, with no
 * store (its steps commit nothing) and no policy reference (engine_policy
 * is NULL: the copy keeps what it needs of p, so p may go); cfg is not
 * NULL. The copy (engine_core_rebuild for a throwaway core: internal.h's
 * engine_core_copy) carries only the workloads keep(ctx, id) accepts (keep
 * NULL: all; one left out is neither carried nor reported lost) and starts
 * with an empty changed set: a fork that needs a few thousand of 100,000
 * pending workloads costs what those few take, not a second core. For a driver
 * that runs the core forward to see what would happen, without changing
 * it: the prediction steps its fork (engine_step) as the controller steps
 * the engine. On GPUQ_OK *out is the caller's (engine_close); on failure
 * *out is NULL and diag says why: engine_core_copy's errors, GPUQ_ENOMEM. */
int engine_fork(const queue_t *live, policy_t *p, const queue_config_t *cfg,
		engine_copy_keep_fn keep, void *ctx, engine_t **out, gpuq_diag_t *diag);

/* engine_fork in two halves, for a driver whose thread owns `live` but
 * wants the copy built elsewhere: engine_fork_begin reads live (every
 * record the copy keeps encoded, the copy's core built from p with live's
 * nodes and ledger; a reference on p is held), on the thread that owns it;
 * engine_fork_end applies what it read and gives the engine, on any thread,
 * and frees f. engine_fork_free drops a begun fork not ended (NULL taken).
 * The controller begins a prediction pass's fork and ends it on the
 * prediction's own thread: the records' decoding, the bulk of a copy, no
 * longer holds the thread that releases (issue 35). Errors as engine_fork's,
 * from whichever half met them. */
typedef struct engine_fork engine_fork_t;
int engine_fork_begin(const queue_t *live, policy_t *p, const queue_config_t *cfg,
		      engine_copy_keep_fn keep, void *ctx, engine_fork_t **out, gpuq_diag_t *diag);
int engine_fork_end(engine_fork_t *f, engine_t **out, gpuq_diag_t *diag);
void engine_fork_free(engine_fork_t *f);

/* ---- A new policy for an engine (the translations above, driven) ---- */

typedef enum {
	ENGINE_POLICY_BUILT = 0,    /* the first policy: a core built from it, the store's
				       records (if any) restored into it */
	ENGINE_POLICY_FRESH = 1,    /* the first policy, but the store's records do not fit
				       it (a queue deleted while the driver was down) or are
				       damaged: a core built from the policy alone (why says
				       what did not restore); the next commit rewrites the
				       store */
	ENGINE_POLICY_IN_PLACE = 2, /* taken into the live core (engine_core_apply) */
	ENGINE_POLICY_REBUILT = 3,  /* a new core, every record carried over
				       (engine_core_rebuild; why says why not in place); the
				       next commit rewrites the store */
} engine_policy_how_t;

typedef struct {
	engine_policy_how_t how;	 /* what was done */
	size_t cqs_updated;		 /* IN_PLACE: ClusterQueues whose spec changed */
	bool refused;			 /* REBUILT: not in place because the core refused an
					    update (why: the error), not for the tree's shape */
	bool cycled;			 /* REBUILT: a cycle ran on the old core first (the
					    rebuild needed it: engine_core_rebuild's
					    GPUQ_EAGAIN); its decisions are not reported: compare
					    every workload */
	char why[GPUQ_DIAG_MAX];	 /* FRESH, REBUILT: why (see above); else "" */
	engine_rebuild_report_t rebuild; /* REBUILT: what was carried and lost (owned:
					    engine_policy_report_deinit) */
} engine_policy_report_t;

/* Make p the policy in force (a reference taken, the old one dropped). The
 * first time (an engine opened without a policy): build the core, and
 * restore the store's core records into it, or, when they do not fit,
 * build it again from p alone (FRESH). After that: take p into the live
 * core when the tree's shape allows (engine_core_apply: IN_PLACE), else
 * rebuild the core from the old one's records (engine_core_rebuild:
 * REBUILT; a rebuild that needs a cycle on the old core first runs one at
 * `now`). rep says which, and is the caller's (engine_policy_report_deinit).
 * On failure the engine keeps its policy and core (a cycle may have run on
 * the core: rep->cycled), rep holds nothing to free (rep->why and refused
 * still say why the change was not taken in place) and diag says why:
 * engine_core_build's or engine_core_rebuild's errors. Costs the policy's objects in place; the
 * core's records when rebuilt. */
int engine_policy_set(engine_t *e, policy_t *p, int64_t now, engine_policy_report_t *rep,
		      gpuq_diag_t *diag);

/* Free what rep owns and zero it. NULL is fine. */
void engine_policy_report_deinit(engine_policy_report_t *rep);

/* Replace the core with a fresh one built from the policy in force, holding
 * no workload and no history, and make the next commit rewrite the store:
 * for a driver that finds the store's state stale (another leader ran
 * since). GPUQ_EINVAL without a policy; engine_core_build's errors (the
 * core is kept then). */
int engine_core_reset(engine_t *e, gpuq_diag_t *diag);

#endif

/*
 * sim: `gpuq simulate`, a virtual-time driver of the queueing core.
 *
 * A trace (YAML or JSON, multi-document) holds the same ResourceFlavor, Cohort,
 * ClusterQueue, LocalQueue and PriorityClass objects `gpuq serve --policy-dir`
 * reads, plus one `kind: Trace` document: explicit arrivals, generators that
 * emit Kueue-style arrival patterns in a few lines, object sets that stamp out
 * many cohorts and queues from one template, and options. sim_trace_* parses
 * and validates it (every count capped; errors name file, document, field and
 * value, read with the policy module's field decoder, so in the words the
 * policy objects' errors use) into a compact arrival table; sim_run replays
 * it through an engine (engine/: the queueing core and, with a state
 * directory, its store) and returns a report (waits, makespan, utilization,
 * preemptions, fairness).
 *
 * The design decision that matters: time is virtual and the loop is
 * event-driven (arrivals, completions, gang readiness, cycles only when
 * something changed), so idle time costs nothing and two runs of one trace are
 * identical. The driver may read clocks (to measure the CPU time the core
 * spends); the core never does. With a state directory, each step's core
 * records and the driver's own progress are committed in one store transaction
 * (engine_commit) before the step's results are acted on, so a run killed at
 * any point resumes to the very same report.
 */
#ifndef GPUQ_SIM_H
#define GPUQ_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "engine/engine.h"
#include "ledger/ledger.h"
#include "qmetrics/qmetrics.h"
#include "workload/workload.h"

/* ---- Bounds (every input a trace can grow) ---- */

/* A trace file: the policy module's cap on one manifest (POLICY_FILE_MAX,
 * 4 MiB); kueue-large is ~5 KiB, generators and objectSets keep big traces
 * small. */
#define SIM_TRACE_BYTES_MAX (4u << 20)
#define SIM_WORKLOADS_MAX 1000000 /* workloads in one trace, all sources */
/* Explicit spec.arrivals entries; an entry takes ~100 bytes of YAML, so the
 * file cap stops a trace near 40,000 of them first. */
#define SIM_ARRIVALS_MAX 100000
#define SIM_GENERATORS_MAX 1000 /* spec.generators entries */
/* ClusterQueues, LocalQueues, cohorts, flavors: the policy module's caps
 * (POLICY_CQ_MAX 1,000 and so on), checked by policy_finish(). */
#define SIM_CLASSES_MAX 64     /* distinct size classes */
#define SIM_PODSETS_MAX 8      /* pod sets per workload */
#define SIM_POD_RES_MAX 16     /* resources requested per pod set */
#define SIM_SELECTOR_MAX 16    /* nodeSelector entries per pod set */
#define SIM_TOLERATIONS_MAX 16 /* tolerations per pod set */
#define SIM_PODS_MAX 100000    /* pods in one pod set */
#define SIM_OBJECTSET_DEPTH 4  /* nesting of spec.objectSets */
#define SIM_OBJECTS_MAX 50000  /* objects stamped out by object sets (POLICY_OBJECTS_MAX) */
#define SIM_TIME_MAX_MS GPUQ_DURATION_MAX_MS /* 10 years of virtual time */
#define SIM_SAMPLES_MAX 100000		     /* utilization samples in a report */
#define SIM_NAME_MAX 254		     /* object and workload names (DNS subdomain) */
#define SIM_EXPLAIN_MAX 1000 /* workloads left waiting whose reason the report gives */
#define SIM_EXPLAIN_LEN 256  /* bytes of one such reason */
/* Nodes a trace may declare (issue 33: topology), kind: Node documents
 * and spec.nodeGroups together: topo/'s TOPO_NODES_MAX, Kueue's TAS
 * performance shape is 640. */
#define SIM_NODES_MAX 65536
#define SIM_NODE_GROUPS_MAX 1000 /* spec.nodeGroups entries */
#define SIM_NODE_LABELS_MAX 64	 /* labels per node (the policy's per Namespace) */
#define SIM_NODE_RES_MAX 16	 /* allocatable resources per node */
#define SIM_NODE_TAINTS_MAX 16	 /* taints per node */

/* The domains admissions spanned at each level of a Topology (the report's
 * "topology" section). */
typedef struct {
	uint64_t placed;		     /* admissions placed */
	uint64_t sum[QUEUE_TOPO_LEVELS_MAX]; /* domains spanned at each level, summed */
	uint32_t max[QUEUE_TOPO_LEVELS_MAX]; /* ... at most */
	uint64_t one[QUEUE_TOPO_LEVELS_MAX]; /* admissions in one domain there */
} sim_topo_span_t;

/* ---- Trace ---- */

typedef struct {
	uint16_t res;	/* index into sim_trace_t.res_names */
	int64_t amount; /* per pod: millicores for cpu, whole units otherwise */
} sim_req_t;

typedef struct {
	char *key;   /* label key (owned by the trace) */
	char *value; /* label value (owned) */
} sim_label_t;

typedef struct {
	char *key;    /* "" for any key with operator Exists (owned) */
	char *op;     /* "Equal" or "Exists" (owned) */
	char *value;  /* owned; "" for Exists */
	char *effect; /* "", NoSchedule, PreferNoSchedule, NoExecute (owned) */
} sim_toleration_t;

typedef struct {
	char *name;			/* pod set name, default "main" (owned) */
	workload_topology_t topology;	/* its topology request (podSets[].topology,
					   or an object's annotations through
					   workload/); strings owned by the trace */
	uint32_t count;			/* pods, 1..SIM_PODS_MAX */
	uint16_t n_req;			/* entries in req */
	uint16_t n_sel;			/* entries in sel */
	uint16_t n_tol;			/* entries in tol */
	sim_req_t req[SIM_POD_RES_MAX]; /* per-pod requests, resource order as written */
	sim_label_t *sel;		/* nodeSelector (owned array) */
	sim_toleration_t *tol;		/* tolerations (owned array) */
} sim_podset_t;

typedef struct {
	char *key;		/* taint key (owned) */
	char *value;		/* taint value, "" when absent (owned) */
	policy_effect_t effect; /* NoSchedule, PreferNoSchedule or NoExecute */
} sim_taint_t;

/* A node of the trace (a kind: Node document, or one of spec.nodeGroups'):
 * what topology-aware admission places pods on. Parsed and kept; the core
 * does not read them yet. */
typedef struct {
	char *name;		 /* metadata.name, a DNS-1123 subdomain (owned) */
	sim_label_t *labels;	 /* metadata.labels sorted by key, keys unique, with
				    kubernetes.io/hostname = name when not given (owned) */
	sim_req_t *alloc;	 /* status.allocatable, as written; amounts in the
				    core's units (quota_qty_amount), names interned in
				    res_names (owned) */
	sim_taint_t *taints;	 /* spec.taints (owned) */
	uint16_t n_labels;	 /* entries in labels */
	uint16_t n_alloc;	 /* entries in alloc */
	uint16_t n_taints;	 /* entries in taints */
	bool unschedulable;	 /* spec.unschedulable (cordoned) */
	int64_t not_ready_at_ms; /* nodeGroups' notReadyAt: its Ready condition
				    turns False then, for the rest of the run
				    (the core evicts what is placed on it 30 s
				    later: docs/topology.md); -1: never */
} sim_node_t;

/* What a workload asks for; shared by every workload one generator emits. */
typedef struct {
	uint16_t n_podsets;	/* 1..SIM_PODSETS_MAX */
	sim_podset_t *podsets;	/* owned array */
	bool gang;		/* pods must all be Ready (gang readiness tracked) */
	int64_t ready_delay_ms; /* pods Ready this long after admission; -1 = option */
	int64_t idle_after_ms;	/* idleAfter: its GPUs go idle (0% utilization) this
				   long after it starts running, until it ends; -1:
				   busy throughout */
	int64_t expected_ms;	/* expectedRuntime: the runtime it declares (for
				   predictions); -1: none (its runtime stands in) */
	int32_t max_exec_s;	/* maxExecTime, or an object's label
				   gpuq.dev/max-exec-time-seconds (Kueue's too): its
				   own wall-clock limit, s; 0: none (its
				   ClusterQueue's default, if any) */
} sim_shape_t;

/* One workload of the trace, in arrival order. 40 bytes, so a million fit. */
typedef struct {
	int64_t at_ms;	    /* arrival (creation) time */
	int64_t runtime_ms; /* run time once running (after readiness for gangs) */
	uint32_t shape;	    /* index into sim_trace_t.shapes */
	uint32_t lq;	    /* index into sim_trace_t.lqs */
	uint32_t source;    /* generator index, or SIM_SOURCE_EXPLICIT */
	uint32_t seq;	    /* explicit: index into names; generated: 0-based number */
	int32_t priority;   /* resolved priority value */
	uint16_t class_id;  /* index into sim_trace_t.classes */
	uint16_t pad;	    /* zero */
} sim_arrival_t;
#define SIM_SOURCE_EXPLICIT UINT32_MAX

typedef struct {
	char *name;	/* generator name (owned) */
	uint32_t n_lqs; /* how many LocalQueues it feeds */
} sim_generator_t;

typedef struct {
	int64_t cycle_interval_ms;     /* 0: a cycle right after every change */
	int64_t half_life_ms;	       /* tenant usage half-life, fairShareHalfLife
					  (0: not given, the core's default 1 h) */
	int64_t usage_sample_ms;       /* tenant usage sampling, fairShareSamplingInterval
					  (0: not given, the core's default 5 min) */
	int64_t gang_ready_delay_ms;   /* pods Ready this long after admission */
	int64_t gang_ready_timeout_ms; /* evict a gang not Ready by then (Kueue: 30 min) */
	int64_t sample_interval_ms;    /* utilization sample spacing */
	bool fair_sharing;	       /* Kueue fairSharing between the CQs of a cohort */
	char *util_resource;	       /* resource whose utilization is reported (owned) */
	int64_t budget_interval_ms;    /* budgetInterval: budgets evaluated this often
					  (0: not given, the core's default 1 min) */
	int64_t predict_interval_ms;   /* prediction.interval: a prediction pass this
					  often (0: no predictions) */
	bool predict_history;	       /* prediction.runtimes History (the LocalQueue's
					  median of finished runs); else Declared
					  (expectedRuntime, else the runtime) */
} sim_options_t;

typedef struct {
	char *path;	   /* file name for messages (owned) */
	char *trace_name;  /* Trace metadata.name (owned) */
	sim_options_t opt; /* spec.options with defaults filled in */
	uint64_t hash;	   /* FNV-1a of the file bytes: ties a state dir to it */

	sim_arrival_t *arrivals; /* every workload, sorted by (at_ms, trace order) */
	size_t n_arrivals;	 /* entries in arrivals */
	char **names;		 /* explicit arrivals' names, by seq (owned) */
	size_t n_names;		 /* entries in names */
	sim_shape_t *shapes;	 /* owned */
	size_t n_shapes;	 /* entries in shapes */
	sim_generator_t *gens;	 /* owned */
	size_t n_gens;		 /* entries in gens */
	char **classes;		 /* size class names (owned) */
	size_t n_classes;	 /* entries in classes */
	char **res_names;	 /* interned resource names (owned) */
	size_t n_res;		 /* entries in res_names */
	sim_node_t *nodes;	 /* kind: Node documents in file order, then
				    spec.nodeGroups' nodes in order (owned);
				    names unique */
	size_t n_nodes;		 /* entries in nodes (0..SIM_NODES_MAX) */

	struct policy *policy; /* the finished policy snapshot: the trace's objects plus
				  expanded object sets (one reference, owned) */
	size_t n_lqs;	       /* policy_lq_count(policy): sim_arrival_t.lq indexes
				  policy_lq_at() */
	size_t n_cqs;	       /* policy_cq_count(policy) */
	size_t trace_doc;      /* 1-based document number of the Trace */
} sim_trace_t;

/* Parse the trace in buf[0..len) (`name` labels messages). On success *out is
 * a new trace the caller frees with sim_trace_destroy. GPUQ_EINVAL /
 * GPUQ_ERANGE / GPUQ_ELIMIT with diag naming file, document, field and value
 * ("t.yaml: document 3: Trace \"t\": spec.arrivals[2].at: bad duration \"1x\"
 * ..."); GPUQ_ENOMEM. */
int sim_trace_parse(const char *name, const char *buf, size_t len, sim_trace_t **out,
		    gpuq_diag_t *diag);

/* Read `path` (at most SIM_TRACE_BYTES_MAX) and parse it. GPUQ_EIO when the
 * file cannot be read, else as sim_trace_parse. */
int sim_trace_load(const char *path, sim_trace_t **out, gpuq_diag_t *diag);

/* Free a trace; NULL is fine. */
void sim_trace_destroy(sim_trace_t *trace);

/* Write workload i's name ("explicit-name" or "<generator>-<lq name>-<n>") into
 * buf. GPUQ_ELIMIT when cap is too small. */
int sim_trace_workload_name(const sim_trace_t *trace, size_t i, char *buf, size_t cap);

/* ---- Statistics ---- */

/* Nearest-rank percentile p (0 < p <= 100) of sorted[0..n); 0 when n == 0. */
int64_t sim_stats_percentile(const int64_t *sorted, size_t n, double p);

/* Jain's fairness index of x[i] / w[i] over n entries: (sum)^2 / (n * sum of
 * squares), in [1/n, 1]; 1 when every share is 0 or n == 0. */
double sim_stats_jain(const double *x, const double *w, size_t n);

/* ---- Running ---- */

typedef struct {
	const char *state_dir; /* persist every step here and resume from it; NULL: off */
	bool no_sync;	       /* skip fsync on commit (faster, survives kill but not crash) */
	bool check;	       /* queue_check after every step: the first broken
				  invariant ends the run (GPUQ_ECORRUPT, naming it) */
	uint64_t stop_after;   /* tests: with state_dir, stop right after this call's
				  stop_after-th committed step, as a kill there would
				  (GPUQ_EAGAIN, no report); 0: run to the end */
	qmetrics_t *metrics;   /* the queue metrics, fed as the controller feeds them
				  and published at the end of the run (borrowed);
				  NULL: none */
	const ledger_price_t *prices; /* `--price FLAVOR=PRICE` flags: win over the
					 trace's ResourceFlavor annotations
					 (borrowed: must outlive the report) */
	size_t n_prices;	      /* entries in prices */
	int64_t predict_interval_ms;  /* `--predict-interval`: a prediction pass this
					 often, over the trace's option (0: the trace's) */
	int predict_runtimes;	      /* `--predict-runtimes`: 1 Declared, 2 History
					 (0: the trace's) */
	bool no_reservation;	      /* run as if no ClusterQueue had a starvation
					 limit (queue_config_t.reservations_off) */
} sim_run_options_t;

/* Per-workload outcome, in arrival order. 56 bytes. */
typedef struct {
	int64_t first_admit_ms; /* first admission, -1 if never admitted */
	int64_t last_admit_ms;	/* admission of the current or final run, -1 if never */
	int64_t finish_ms;	/* completion (scheduled while admitted), -1 if none */
	int64_t run_ms;		/* time spent admitted in runs that were evicted */
	int64_t amount;		/* utilization-resource amount while admitted */
	uint32_t cq;		/* ClusterQueue index (policy_cq_at) */
	uint32_t preemptions;	/* evictions of any reason */
	uint8_t state;		/* SIM_WL_* */
	uint8_t timeouts;	/* Ready-timeout evictions (gangs) */
} sim_outcome_t;
enum {
	SIM_WL_FUTURE = 0,	 /* not arrived yet */
	SIM_WL_PENDING = 1,	 /* queued */
	SIM_WL_ADMITTED = 2,	 /* admitted, pods not all Ready yet (gangs) or running */
	SIM_WL_FINISHED = 3,	 /* ran to completion */
	SIM_WL_INADMISSIBLE = 4, /* pending, set aside as NoFit (or its CQ does not
				    select its namespace): can never be admitted */
	SIM_WL_DROPPED = 5,	 /* deleted after SIM_READY_TIMEOUTS_MAX Ready timeouts */
};
/* A gang evicted this many times for not getting Ready is given up (Kueue's
 * requeuingStrategy.backoffLimitCount does the same). */
#define SIM_READY_TIMEOUTS_MAX 5

typedef struct {
	int64_t at_ms;	     /* when */
	uint32_t victim;     /* arrival index of the evicted workload */
	uint32_t by;	     /* arrival index of the preemptor, UINT32_MAX for timeouts */
	int64_t admitted_ms; /* when the victim's run began */
	char reason[48];     /* e.g. InClusterQueue, InCohortReclamation, PodsReadyTimeout */
} sim_preemption_t;

typedef struct sim_report {
	const sim_trace_t *trace;     /* borrowed: must outlive the report */
	sim_outcome_t *wl;	      /* per workload, arrival order (owned) */
	size_t n_wl;		      /* entries in wl */
	sim_preemption_t *preempt;    /* in order (owned) */
	size_t n_preempt;	      /* entries in preempt */
	int64_t end_ms;		      /* virtual time when the run ended */
	uint64_t cycles;	      /* admission cycles run */
	uint64_t steps;		      /* event-loop steps */
	uint64_t cycle_cap_hits;      /* instants at which cycles kept preempting until
					 the cap (1,000 in a row) moved time on: a
					 preemption livelock in the core */
	double core_cpu_s;	      /* CPU seconds inside the engine's core calls */
	double persist_cpu_s;	      /* CPU seconds encoding and committing records */
	double total_cpu_s;	      /* CPU seconds of sim_run (this process only) */
	uint64_t resumed_steps;	      /* steps restored from the state dir, 0 on a fresh run */
	size_t core_bytes;	      /* queue_memory_bytes() at the end */
	long max_rss_kb;	      /* the process's peak resident set (getrusage), KiB */
	uint32_t *why_wl;	      /* workloads still waiting at the end (the first
					 SIM_EXPLAIN_MAX), in arrival order (owned) */
	char (*why)[SIM_EXPLAIN_LEN]; /* the core's explanation for each (owned) */
	size_t n_why;		      /* entries in why_wl and why */
	ledger_t *ledger;	      /* the core's usage ledger at the end: the
					 chargeback figures (owned) */
	ledger_price_t *prices;	      /* prices in force: the options' flags, then
					 the flavors' annotations (owned array;
					 names borrowed from them) */
	size_t n_prices;	      /* entries in prices */
	bool econ;		      /* the trace uses GPU economics (budgets, minimum
					 runtimes, idle reclaim, idleAfter, predictions):
					 the report has an "economics" section */
	queue_budget_view_t *budgets; /* the budgets at the end (names owned: budget_names) */
	char **budget_names;	      /* owned */
	size_t n_budgets;	      /* entries */
	int64_t *predicted;	      /* per workload: its first predicted start, -1
					 (owned; NULL without predictions) */
	int64_t predict_interval_ms;  /* the passes' interval (0: none) */
	bool predict_history;	      /* runtimes from the LocalQueues' history */
	uint64_t predict_passes;      /* prediction passes run */
	double predict_cpu_s;	      /* CPU seconds in them */
	double predict_cpu_max_s;     /* the longest one */
	char *topo_levels[QUEUE_TOPO_LEVELS_MAX]; /* the levels of the first
						     topology-aware flavor an
						     admission was placed on (owned) */
	size_t n_topo_levels;			  /* entries */
	sim_topo_span_t topo_all;		  /* every admission placed there */
	sim_topo_span_t *topo_cls;		  /* ... per class (owned, n_classes) */
	struct sim_report *without;		  /* the same trace run with no starvation
						     limit, beside this one (gpuq simulate runs
						     it when a ClusterQueue has one): the
						     report's withoutStarvationLimit (owned;
						     NULL: none) */
} sim_report_t;

/* Replay trace through the queue core until every workload has finished or
 * is stuck (nothing pending can ever be admitted). *out receives a report
 * the caller frees with sim_report_destroy. With opt->state_dir, resumes from
 * it when it holds a run of the same trace (GPUQ_ECORRUPT when it holds a
 * different trace). GPUQ_EAGAIN when opt->stop_after stopped it (resume with
 * another call). GPUQ_ESTORE / GPUQ_ENOMEM / core errors, diag explains. */
int sim_run(const sim_trace_t *trace, const sim_run_options_t *opt, sim_report_t **out,
	    gpuq_diag_t *diag);

void sim_report_destroy(sim_report_t *report);

/* ---- The core and the state dir, for tools (`gpuq store check --trace`) ---- */

/* Open a memory-only engine over the trace's policy and options exactly as
 * sim_run builds its core (engine_open: flavors, cohorts, ClusterQueues,
 * LocalQueues; fair sharing, half-life, Ready timeout), holding no
 * workloads. *out is the caller's (engine_close). GPUQ_ENOMEM or the core's
 * error, diag explains. */
int sim_engine_open(const sim_trace_t *trace, engine_t **out, gpuq_diag_t *diag);

typedef struct {
	bool has_progress;   /* the store holds a simulator run (else only core records) */
	int64_t now_ms;	     /* virtual time of the last committed step */
	uint64_t steps;	     /* steps committed */
	bool done;	     /* the run had ended */
	size_t next_arrival; /* arrivals delivered */
	size_t by_state[SIM_WL_DROPPED + 1]; /* simulator outcomes per SIM_WL_* state */
	size_t preemptions;		     /* eviction log entries */
	size_t core_pending;		     /* workloads pending in the restored core */
	size_t core_admitted;		     /* admitted (or evicting) in the restored core */
} sim_state_summary_t;

/* Verify a state dir written by sim_run for this trace, without changing it
 * (read-only: safe next to a running simulator): restore every core record
 * into a fresh core (an engine opened read only, as sim_engine_open builds
 * it) and every simulator record, as a resume would, then cross-check them: each workload the core
 * holds is one the simulator has pending or admitted (with the same
 * admission time), and the other way round, and the counts agree. A dir
 * holding only core records (no simulator progress) gets the core restore;
 * a blank store (its creation interrupted before the first commit) holds
 * nothing and passes.
 * On GPUQ_OK *sum is filled and, when engine is not NULL, *engine receives
 * the restored engine (caller's, engine_close; its store still open to read
 * only, under the same read snapshot) for inspection (engine_core).
 * GPUQ_ENOTFOUND (no store), GPUQ_ECORRUPT (a record or a cross-check
 * failed; diag names it), store and core errors. */
int sim_state_check(const sim_trace_t *trace, const char *state_dir, sim_state_summary_t *sum,
		    engine_t **engine, gpuq_diag_t *diag);

/* Write the report as JSON (stable key order and number format, one
 * workload per line; the CPU figures sit on the single line containing
 * "cpu" so a byte comparison can drop them). GPUQ_EIO on a write error. */
int sim_report_write_json(const sim_report_t *report, FILE *out);

/* A few lines for humans (stderr). */
void sim_report_write_summary(const sim_report_t *report, FILE *out);

#endif

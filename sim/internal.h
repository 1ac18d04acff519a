/*
 * sim/internal.h: shared by the files of sim/ only (the module's interface is
 * sim/sim.h). run.c holds the event loop and its persistence; econ.c the
 * simulator's side of GPU economics (idle GPUs from idleAfter, predictions
 * and their accuracy, the budgets at the end); trace.c and report.c read
 * and write their documents.
 */
#ifndef GPUQ_SIM_INTERNAL_H
#define GPUQ_SIM_INTERNAL_H

#include "engine/engine.h"
#include "predict/predict.h"
#include "qmetrics/qmetrics.h"
#include "sim/sim.h"

/* At one instant finishes go first, then readiness, then idleness. */
enum { EV_FINISH = 0, EV_READY = 1, EV_IDLE = 2 };

typedef struct {
	int64_t at;   /* when */
	uint32_t wid; /* arrival index */
	uint32_t run; /* the workload's eviction count when scheduled: stale if it moved on */
	uint8_t kind; /* EV_* */
} event_t;

struct sim {
	const sim_trace_t *t; /* the trace (borrowed) */
	engine_t *e;	      /* the engine: core and store */
	sim_report_t *r;      /* outcomes being filled */
	event_t *heap;	      /* pending finishes, readiness and idleness, min-heap */
	size_t n_heap, cap_heap;
	size_t cap_preempt;    /* allocated entries of r->preempt */
	int64_t now;	       /* virtual time of the current step */
	size_t next_arrival;   /* first arrival not yet delivered */
	bool dirty;	       /* changed since the last cycle */
	bool done;	       /* the run has ended */
	bool no_reservation;   /* starvation limits ignored (sim_run_options_t) */
	uint32_t same_time;    /* cycles run at `now` so far */
	bool cycle_admitted;   /* the step's cycle admitted (its metric) */
	uint32_t idle;	       /* consecutive idle steps */
	uint64_t n_pending;    /* workloads in the core, pending */
	uint64_t n_admitted;   /* workloads in the core, admitted */
	int64_t *shape_amount; /* utilization-resource amount per shape */
	double core_cpu;       /* CPU seconds inside the engine's core calls */
	double persist_cpu;    /* CPU seconds encoding and committing */
	/* persistence (state_dir only) */
	bool persist;	    /* the engine has a store: each step is committed */
	bool resumed;	    /* the store held a run of this trace: resumed from it */
	uint32_t *dirty_wl; /* outcomes changed since the last commit */
	size_t n_dirty_wl, cap_dirty_wl;
	uint8_t *wl_marked;	  /* 1 when in dirty_wl */
	size_t persisted_preempt; /* r->preempt entries already in the store */
	/* queue metrics (opt->metrics only) */
	qmetrics_t *metrics; /* fed as the controller feeds it (borrowed), or NULL */
	int64_t *requeued;   /* per workload: its last eviction (it requeues at once) */
	/* predictions (trace option prediction only; econ.c) */
	predict_history_t *hist; /* the LocalQueues' finished runtimes */
	int64_t next_predict;	 /* the next pass at or after this virtual time */
	/* nodes that turn not Ready (nodeGroups' notReadyAt; run.c) */
	int64_t *fail_at;  /* the distinct times, ascending (owned) */
	size_t n_fail_at;  /* entries */
	size_t next_fail;  /* the first entry after fed_until */
	int64_t fed_until; /* the nodes' readiness is given to the core up to
			      this virtual time (not stored: a resumed run
			      gives it again) */
};

/* CPU seconds of this process (the driver may read clocks; the core never). */
double sim_cpu_now(void);

/* Time a core call: the driver may read the clock, the core may not. */
#define CORE(s, call)                                                                              \
	do {                                                                                       \
		double t0_ = sim_cpu_now();                                                        \
		rc = (call);                                                                       \
		(s)->core_cpu += sim_cpu_now() - t0_;                                              \
	} while (0)

int sim_heap_push(struct sim *s, event_t ev);
/* The run a workload's events belong to ended (evicted, or finished). */
bool sim_event_stale(const struct sim *s, const event_t *ev);
/* A workload's Ready delay after admission (0 unless a gang). */
int64_t sim_ready_delay(const struct sim *s, uint32_t wid);
int64_t sim_trace_ready_delay(const sim_trace_t *t, uint32_t wid);

/* ---- report_econ.c: the report's "economics" section and summary line ---- */

int sim_report_econ_json(const sim_report_t *r, FILE *out);
void sim_report_econ_summary(const sim_report_t *r, FILE *out);

/* ---- econ.c ---- */

/* Whether trace t uses GPU economics (the report's "economics" section). */
bool sim_trace_econ(const sim_trace_t *t);
/* Predictions' setup: refused with a state dir (their figures are not
 * persisted). GPUQ_EINVAL with diag, GPUQ_ENOMEM. */
int sim_econ_setup(struct sim *s, const sim_run_options_t *opt, gpuq_diag_t *diag);
/* Workload wid admitted now (Ready after delay): its idleness scheduled. */
int sim_econ_admitted(struct sim *s, uint32_t wid, int64_t delay);
/* An EV_IDLE event (not stale): the core is told its GPUs idle. */
int sim_econ_idle(struct sim *s, const event_t *ev, gpuq_diag_t *diag);
/* Workload wid finished: its runtime joins its LocalQueue's history. */
void sim_econ_finished(struct sim *s, uint32_t wid);
/* After a step's cycle: a prediction pass when one is due. */
int sim_econ_step(struct sim *s, gpuq_diag_t *diag);
/* After a resume: idle workloads told again, idleness to come scheduled. */
int sim_econ_restore(struct sim *s);
/* At the end: the budgets into the report. */
int sim_econ_report(struct sim *s);
void sim_econ_free(struct sim *s);

/* ---- topology.c: the trace's nodes and pod sets' topology (issue 33) ---- */

struct json_t; /* jansson's, for the files that hold its values */

/* A kind: Node document (core v1) into t->nodes: refusals name the Node,
 * the field and the value (the manifest reader adds file and document). */
int sim_nodes_doc(sim_trace_t *t, const struct json_t *obj, gpuq_diag_t *diag);
/* spec.nodeGroups of the Trace's spec into t->nodes (messages from
 * "spec.nodeGroups[i]"). */
int sim_nodes_groups(sim_trace_t *t, const struct json_t *spec, gpuq_diag_t *diag);
/* Every node named once: GPUQ_EEXIST naming the name. */
int sim_nodes_check(const sim_trace_t *t, gpuq_diag_t *diag);
void sim_nodes_free(sim_trace_t *t);
/* Free a pod set's topology strings (owned by the trace). */
void sim_topology_free(workload_topology_t *tp);
#ifdef GPUQ_POLICY_JSON_H /* the field decoder's: trace.c and topology.c */
/* One quantity v of resource res (d's path at it) as the core counts it,
 * its name interned in t->res_names (trace.c). */
int sim_trace_request(sim_trace_t *t, policy_jdec_t *d, const char *res, const json_t *v,
		      sim_req_t *r);
/* podSets[i].topology of podset into ps->topology (its count already
 * read), checked as workload/ checks the annotations. */
int sim_topology_parse(policy_jdec_t *d, const json_t *podset, sim_podset_t *ps);
/* The pod sets of one group: two or more, one mode and level. */
int sim_topology_groups(policy_jdec_t *d, const sim_shape_t *sh);
#endif

#endif

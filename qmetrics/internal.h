/*
 * qmetrics/internal.h: shared by the files of qmetrics/ only; the module's
 * interface is qmetrics/qmetrics.h.
 *
 * Files: layout.c (a core's names, escaped once, and the shape of its
 * series), qmetrics.c (the driver's counters, the snapshot built from them
 * and the core, its publication), render.c (a snapshot as text).
 */
#ifndef GPUQ_QMETRICS_INTERNAL_H
#define GPUQ_QMETRICS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "qmetrics/qmetrics.h"

/* Wait reasons of a pending workload (queue_wait_t, QUEUE_WAIT_NONE ..
 * QUEUE_WAIT_DEACTIVATED): the reason label of the pending gauges. */
#define QM_WAITS 10
/* Eviction reasons, the reason label of gpuq_cluster_queue_evictions_total
 * (Kueue's words, and gpuq's IdleReclaim): Preempted, PodsReadyTimeout,
 * ClusterQueueStopped, IdleReclaim, MaximumExecutionTimeExceeded,
 * NodeFailures. */
enum {
	QM_EVICT_PREEMPTED = 0,
	QM_EVICT_READY_TIMEOUT = 1,
	QM_EVICT_STOPPED = 2,
	QM_EVICT_IDLE_RECLAIM = 3,
	QM_EVICT_MAX_EXEC = 4,
	QM_EVICT_NODE_FAILED = 5,
	QM_EVICTS = 6
};
/* Preemption reasons (queue_evict_reason_t QUEUE_EVICT_IN_CQ ..
 * QUEUE_EVICT_RECLAIM_WHILE_BORROWING). */
#define QM_PREEMPTS 4

/* Histogram buckets; upper bounds in the observation's unit and as text. */
#define QM_WAIT_BUCKETS 17   /* time to admission, ms: 0.1 s to a day */
#define QM_CYCLE_BUCKETS 12  /* admission cycle, ns: 10 us to 5 s */
#define QM_COMMIT_BUCKETS 13 /* store commit, ns: 100 us to 2.5 s */
#define QM_STAGE_BUCKETS 17  /* a release's stages, ns: 50 us to 4 s */
#define QM_BUCKETS_MAX 17    /* the most of any */

extern const int64_t qm_wait_le[QM_WAIT_BUCKETS];
extern const int64_t qm_cycle_le[QM_CYCLE_BUCKETS];
extern const int64_t qm_commit_le[QM_COMMIT_BUCKETS];
extern const int64_t qm_stage_le[QM_STAGE_BUCKETS];

typedef struct {
	uint64_t buckets[QM_BUCKETS_MAX + 1]; /* per bucket, not cumulative; the
						 last used one is +Inf */
	uint64_t sum;			      /* observations summed, their unit */
} qm_hist_t;

/* Add v to h, whose n buckets' upper bounds are le. */
void qm_hist_observe(qm_hist_t *h, const int64_t *le, size_t n, int64_t v);

/* What the driver counts per ClusterQueue. */
typedef struct {
	uint64_t admissions;		   /* workloads admitted */
	uint64_t evictions[QM_EVICTS];	   /* its workloads evicted, by reason */
	uint64_t preemptions[QM_PREEMPTS]; /* workloads it preempted, by reason */
	qm_hist_t wait;			   /* time to admission, ms */
} qm_cq_counts_t;

/* ---- layout.c ---- */

/* One (ClusterQueue, flavor, resource) quota slot. */
typedef struct {
	uint32_t flavor;      /* core flavor id */
	uint32_t res;	      /* core resource id */
	uint32_t group;	      /* its (cohort, flavor, resource) group, for what is
				 lent; UINT32_MAX: its CQ has no cohort */
	bool milli;	      /* amounts are thousandths (cpu's millicores) */
	const char *flavor_l; /* escaped flavor name (in the arena) */
	const char *res_l;    /* escaped resource name */
} qm_slot_t;

typedef struct {
	const char *name;   /* the CQ's name as is (in the arena) */
	const char *label;  /* escaped */
	const char *cohort; /* escaped cohort name ("" for none) */
	uint32_t slot0;	    /* its first slot; a resource's slots are adjacent */
	uint32_t n_slots;   /* its slots */
} qm_cq_t;

typedef struct {
	const char *name;  /* "namespace/name" as is (in the arena) */
	const char *ns;	   /* escaped namespace */
	const char *label; /* escaped name */
	uint32_t cq;	   /* its CQ's index (= core id), UINT32_MAX when that CQ is
			      left out: then so is the LocalQueue */
	uint32_t uslot0;   /* its first usage entry (one per slot of its CQ) */
} qm_lq_t;

/* The series' shape for one core: immutable once built, shared by the
 * snapshots built on it (reference counted). CQs and LQs are a prefix of
 * the core's ids (index = core id) up to the caps. */
typedef struct {
	atomic_uint refs;     /* references */
	qm_cq_t *cqs;	      /* the CQs with series */
	size_t n_cqs;	      /* entries */
	qm_slot_t *slots;     /* every CQ's slots, CQ by CQ */
	size_t n_slots;	      /* entries */
	qm_lq_t *lqs;	      /* the LQs with series */
	size_t n_lqs;	      /* entries */
	size_t n_uslots;      /* LQ usage entries */
	size_t n_groups;      /* (cohort, flavor, resource) groups */
	uint32_t omitted_cqs; /* CQs left out by a cap */
	uint32_t omitted_lqs; /* LQs left out (a cap, or their CQ left out) */
	char *arena;	      /* every string above */
} qm_layout_t;

/* Build q's layout (one reference). GPUQ_OK, GPUQ_ENOMEM. */
int qm_layout_build(const queue_t *q, qm_layout_t **out);
qm_layout_t *qm_layout_ref(qm_layout_t *l);
void qm_layout_unref(qm_layout_t *l); /* NULL is fine */

/* ---- econ.c: GPU economics (docs/economics.md) ---- */

/* The driver's counts. */
typedef struct {
	uint64_t idle_reports;	    /* idle spells reported */
	uint64_t predict_passes;    /* prediction passes */
	uint64_t predict_capped;    /* ... ended by a cap */
	uint64_t predict_last_ns;   /* the last one's duration */
	uint64_t predict_simulated; /* ... pending workloads simulated */
	uint64_t predict_started;   /* ... of them started within the caps */
} qm_econ_counts_t;

/* One budget's series. */
typedef struct {
	char *scope;	    /* "LocalQueue", "Namespace", "ClusterQueue" (static) */
	char *name;	    /* escaped (owned) */
	const char *unit;   /* "gpu_hours" or "cost" (static) */
	double used, limit; /* at the last evaluation */
	int state;	    /* queue_budget_state_t */
	bool evaluated;	    /* once at least */
} qm_budget_t;

typedef struct {
	qm_econ_counts_t counts; /* copied */
	qm_budget_t *budgets;	 /* owned */
	size_t n_budgets;	 /* entries */
	uint32_t *idle;		 /* per layout CQ: admitted workloads idle now (owned) */
} qm_econ_t;

/* ---- qmetrics.c: a snapshot ---- */

typedef struct {
	uint32_t pending[QM_WAITS]; /* pending workloads by wait reason */
	uint32_t admitted;	    /* admitted or evicting (holding quota) */
} qm_count_t;

typedef struct {
	int64_t nominal; /* nominalQuota, core units */
	int64_t usage;	 /* admitted and evicting workloads' amounts */
	double lent;	 /* this CQ's share of what its cohort's CQs borrow */
} qm_quota_t;

typedef struct {
	atomic_uint refs;		   /* references */
	qm_layout_t *layout;		   /* the shape (one reference); NULL: no core */
	qm_cq_counts_t *cq_ctr;		   /* per CQ: the driver's counters */
	qm_count_t *cq;			   /* per CQ: pending and admitted now */
	qm_quota_t *quota;		   /* per slot */
	uint64_t *lq_admissions;	   /* per LQ: workloads admitted */
	qm_count_t *lq;			   /* per LQ: pending and admitted now */
	int64_t *lq_usage;		   /* per LQ usage entry: admitted amounts */
	qm_hist_t cycle[2];		   /* cycle durations, ns: [0] none admitted, [1] some */
	qm_hist_t commit;		   /* commit durations, ns */
	uint64_t commit_failures;	   /* commits that failed */
	qm_hist_t stages[QMETRICS_STAGES]; /* a release's stages, ns */
	qm_hist_t tail;			   /* the loop's tails, ns */
	qm_econ_t econ;			   /* budgets, idle GPUs, predictions (econ.c) */
} qm_snap_t;

/* econ.c: what a snapshot copies of q's economics (q may be NULL; idle,
 * moved in: the admitted workloads idle now per layout CQ, counted in the
 * snapshot's one pass over the workloads), and the families it renders. */
int qm_econ_fill(const queue_t *q, const qm_layout_t *l, const qm_econ_counts_t *c, uint32_t *idle,
		 qm_econ_t *e);
void qm_econ_free(qm_econ_t *e);
void qm_econ_render(const qm_snap_t *s, http_metrics_text_t *t);

/* ---- render.c ---- */

/* Append s's families to t (s may be NULL: leader gauge only). */
void qm_render(const qm_snap_t *s, bool leader, http_metrics_text_t *t);

#endif

/*
 * queue: the runtime model, the admission cycle, preemption, the clock,
 * explanations, introspection and records of gpuq's queueing core. See
 * queue.h for the contracts and docs/queueing.md for the rules.
 *
 * One file because the module may have only one header and every part works
 * on the same private structs; it is laid out in sections, bottom up.
 */
#include "queue/queue.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fairshare/fairshare.h"

/* ================================================================== */
/* Small containers                                                    */
/* ================================================================== */

/* Grow *p (elements of `elem` bytes, capacity *cap) to hold `need`. */
static int grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	size_t n;
	void *np;

	if (need <= *cap)
		return GPUQ_OK;
	n = *cap ? *cap * 2 : 8;
	while (n < need)
		n *= 2;
	np = realloc(*p, n * elem);
	if (!np)
		return GPUQ_ENOMEM;
	*p = np;
	*cap = n;
	return GPUQ_OK;
}

typedef struct {
	uint32_t *v; /* elements */
	size_t n;    /* used */
	size_t cap;  /* allocated */
} u32vec_t;

static int vpush(u32vec_t *v, uint32_t x)
{
	if (grow(&v->v, &v->cap, v->n + 1, sizeof(*v->v)))
		return GPUQ_ENOMEM;
	v->v[v->n++] = x;
	return GPUQ_OK;
}

static uint32_t hash_bytes(const void *p, size_t len, uint32_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return h;
}

static uint32_t hash_str(const char *s)
{
	return hash_bytes(s, strlen(s), 2166136261u);
}

/* Open-addressing map of ids keyed by a caller hash, with backward-shift
 * deletion (no tombstones). Equality is checked by the caller's callback. */
typedef struct {
	uint32_t id;   /* id + 1; 0 = empty */
	uint32_t hash; /* the key's hash */
} mapent_t;

typedef struct {
	mapent_t *e; /* cap entries, cap a power of two */
	size_t cap;  /* slots */
	size_t n;    /* used */
} idmap_t;

typedef bool (*map_eq_fn)(const void *ctx, uint32_t id, const void *key);

static int map_reserve(idmap_t *m)
{
	size_t ncap;
	mapent_t *ne;

	if ((m->n + 1) * 4 < m->cap * 3)
		return GPUQ_OK;
	ncap = m->cap ? m->cap * 2 : 64;
	ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->e[i].id)
			continue;
		j = m->e[i].hash & (ncap - 1);
		while (ne[j].id)
			j = (j + 1) & (ncap - 1);
		ne[j] = m->e[i];
	}
	free(m->e);
	m->e = ne;
	m->cap = ncap;
	return GPUQ_OK;
}

static bool map_find(const idmap_t *m, uint32_t h, map_eq_fn eq, const void *ctx, const void *key,
		     uint32_t *id)
{
	if (!m->cap)
		return false;
	for (size_t j = h & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
		if (!m->e[j].id)
			return false;
		if (m->e[j].hash == h && eq(ctx, m->e[j].id - 1, key)) {
			*id = m->e[j].id - 1;
			return true;
		}
	}
}

/* Insert id (not present). map_reserve must have succeeded. */
static void map_put(idmap_t *m, uint32_t h, uint32_t id)
{
	size_t j = h & (m->cap - 1);

	while (m->e[j].id)
		j = (j + 1) & (m->cap - 1);
	m->e[j].id = id + 1;
	m->e[j].hash = h;
	m->n++;
}

static void map_del(idmap_t *m, uint32_t h, uint32_t id)
{
	size_t j = h & (m->cap - 1), k;

	while (m->e[j].id != id + 1) {
		if (!m->e[j].id)
			return;
		j = (j + 1) & (m->cap - 1);
	}
	m->e[j].id = 0;
	m->n--;
	/* Backward shift: move later entries of the run into the hole when
	 * their home slot does not lie cyclically in (j, k]. */
	for (k = (j + 1) & (m->cap - 1); m->e[k].id; k = (k + 1) & (m->cap - 1)) {
		size_t home = m->e[k].hash & (m->cap - 1);
		bool in_range = j <= k ? (home > j && home <= k) : (home > j || home <= k);

		if (in_range)
			continue;
		m->e[j] = m->e[k];
		m->e[k].id = 0;
		j = k;
	}
}

/* Interned names: dense ids, stable string pointers, never freed before the
 * queue. */
typedef struct {
	char **s;    /* id -> owned NUL-terminated string */
	size_t n;    /* names */
	size_t cap;  /* allocated */
	idmap_t map; /* name -> id */
} names_t;

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const names_t *t = ctx;

	return strcmp(t->s[id], key) == 0;
}

static int names_find(const names_t *t, const char *s, uint32_t *id)
{
	return map_find(&t->map, hash_str(s), name_eq, t, s, id) ? GPUQ_OK : GPUQ_ENOTFOUND;
}

static int names_intern(names_t *t, const char *s, uint32_t *id)
{
	size_t len;
	char *c;

	if (names_find(t, s, id) == GPUQ_OK)
		return GPUQ_OK;
	len = strlen(s);
	if (grow(&t->s, &t->cap, t->n + 1, sizeof(*t->s)) || map_reserve(&t->map))
		return GPUQ_ENOMEM;
	c = malloc(len + 1);
	if (!c)
		return GPUQ_ENOMEM;
	memcpy(c, s, len + 1);
	t->s[t->n] = c;
	map_put(&t->map, hash_str(s), (uint32_t)t->n);
	*id = (uint32_t)t->n++;
	return GPUQ_OK;
}

static void names_free(names_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->map.e);
}

/* ================================================================== */
/* The model                                                           */
/* ================================================================== */

typedef struct {
	uint32_t key; /* interned label key */
	uint32_t val; /* interned label value */
} kv_t;

typedef struct {
	uint32_t key;	/* interned key ("" = all with Exists) */
	uint32_t val;	/* interned value */
	uint8_t op;	/* queue_tolerate_op_t */
	uint8_t effect; /* queue_effect_t */
} tol_t;

typedef struct {
	uint32_t key;	/* interned taint key */
	uint32_t val;	/* interned value */
	uint8_t effect; /* queue_effect_t */
} taint_t;

typedef struct {
	uint32_t key; /* interned label key */
	uint32_t n;   /* values */
	uint32_t off; /* first value in the template's affvals */
} aff_t;

typedef struct {
	bool defined;	 /* queue_flavor_add seen (a CQ may name it first) */
	kv_t *labels;	 /* nodeLabels */
	size_t n_labels; /* entries */
	taint_t *taints; /* nodeTaints */
	size_t n_taints; /* entries */
	tol_t *tols;	 /* tolerations */
	size_t n_tols;	 /* entries */
} flavor_t;

/* A pod set without its count, shared by every workload with that shape. */
typedef struct {
	uint32_t refs;			    /* workloads using it; 0 = free slot */
	uint32_t hash;			    /* content hash */
	uint32_t name;			    /* interned pod set name */
	uint8_t n_req;			    /* requests */
	uint8_t n_sel;			    /* nodeSelector entries */
	uint8_t n_aff;			    /* affinity terms */
	uint8_t n_tol;			    /* tolerations */
	uint32_t n_affvals;		    /* affinity values over all terms */
	uint16_t res[QUEUE_PODSET_RES_MAX]; /* resource ids */
	int64_t amt[QUEUE_PODSET_RES_MAX];  /* per-pod amounts */
	kv_t *sel;			    /* nodeSelector */
	aff_t *aff;			    /* affinity terms */
	uint32_t *affvals;		    /* interned values of all terms */
	tol_t *tol;			    /* tolerations */
	uint8_t *flv_ok;		    /* per flavor: 0 unknown, 1 eligible, 2 not */
	size_t n_flv_ok;		    /* entries in flv_ok */
	uint64_t flv_epoch;		    /* flavor epoch the cache belongs to */
} tmpl_t;

typedef struct {
	uint32_t tmpl; /* template id */
	int32_t count; /* pods */
} psref_t;

typedef struct {
	queue_assign_t a; /* public form */
	uint32_t slot;	  /* the CQ quota slot it charges */
} asg_t;

enum { W_NONE = 0, W_HEAP = 1, W_ASIDE = 2, W_ADMITTED = 3, W_BACKOFF = 4, W_FLIGHT = 5 };

/* Why a workload waits, for explanations. */
enum {
	WHY_NONE = 0,
	WHY_QUOTA_NOMINAL = 1, /* standalone CQ: nominal reached */
	WHY_QUOTA_BLIMIT = 2,  /* its borrowing limit reached */
	WHY_QUOTA_COHORT = 3,  /* the cohort lends no more */
	WHY_ABOVE_MAX = 4,     /* more than the CQ could ever hold */
	WHY_NOT_COVERED = 5,   /* a requested resource no group covers */
	WHY_NO_FLAVOR = 6,     /* no flavor passes taints/selectors */
	WHY_NO_CANDIDATES = 7, /* needs preemption, nothing to preempt */
	WHY_GUARANTEED = 8,    /* the CQ's own unlendable quota is used */
};

typedef struct {
	char *strs;	      /* "uid\0namespace\0name\0", owned */
	psref_t *psx;	      /* pod sets when n_ps > 1, owned */
	asg_t *asg;	      /* assignment while admitted/evicting, owned */
	int64_t created;      /* creation time */
	int64_t admitted_ms;  /* last admission (-1 never) */
	int64_t eligible_ms;  /* backoff end */
	int64_t why_need;     /* explanation: amount needed */
	int64_t why_free;     /* explanation: amount free */
	uint64_t admit_cycle; /* cycle of the last admission */
	uint32_t lq;	      /* LocalQueue */
	uint32_t cq;	      /* ClusterQueue */
	uint32_t pos;	      /* index in its heap / aside / admitted vector */
	uint32_t epoch;	      /* bumps on every state change (timer validity) */
	uint32_t requeues;    /* Ready-timeout evictions */
	uint32_t preemptions; /* times preempted */
	uint32_t n_asg;	      /* entries in asg */
	uint32_t uid_hash;    /* hash of uid */
	uint32_t why_res;     /* explanation: resource id or QUEUE_NONE */
	uint32_t why_flavor;  /* explanation: flavor id or QUEUE_NONE */
	int32_t priority;     /* priority */
	int32_t gang_total;   /* 0 = not a gang */
	int32_t pods_present; /* gang pods present */
	psref_t ps1;	      /* the pod set when n_ps == 1 */
	uint16_t ns_off;      /* namespace offset in strs */
	uint16_t name_off;    /* name offset in strs */
	uint8_t state;	      /* queue_wl_state_t */
	uint8_t wait;	      /* queue_wait_t */
	uint8_t where;	      /* W_* container */
	uint8_t n_ps;	      /* pod sets */
	uint8_t why;	      /* WHY_* */
	uint8_t evict_reason; /* queue_evict_reason_t of the last eviction */
	bool live;	      /* slot in use */
	bool ready;	      /* PodsReady since admission */
} wl_t;

typedef struct {
	int64_t nominal;   /* nominalQuota */
	int64_t blimit;	   /* borrowingLimit or -1 */
	int64_t llimit;	   /* lendingLimit or -1 */
	int64_t usage;	   /* admitted + evicting (+ held during a cycle) */
	int64_t evicting;  /* part of usage held by EVICTING workloads */
	int64_t rec_usage; /* usage named by a restored CQ record */
	uint32_t flavor;   /* flavor id */
	uint32_t res;	   /* resource id */
	uint32_t cslot;	   /* the cohort slot for (flavor, res) */
} slot_t;

typedef struct {
	uint32_t n_cov;			       /* covered resources */
	uint32_t n_flv;			       /* flavors */
	uint32_t cov[QUEUE_GROUP_RES_MAX];     /* resource ids */
	uint32_t flv[QUEUE_GROUP_FLAVORS_MAX]; /* flavor ids in order */
	uint32_t base;			       /* slot of (flavor 0, resource 0) */
} group_t;

typedef struct {
	uint64_t admissions;  /* history */
	uint64_t preemptions; /* history: preempted */
	uint64_t evictions;   /* history: evicted for any reason */
	uint64_t finishes;    /* history */
} counters_t;

/* A shape that did not fit in this cohort cycle: free quota only shrinks
 * during a cycle, so the same single pod set with as many pods or more
 * cannot fit either (kept only for CQs that cannot preempt). */
typedef struct {
	uint32_t tmpl;	     /* template */
	int32_t count;	     /* pods */
	uint8_t mode;	     /* M_WAIT or M_NEVER */
	uint8_t why;	     /* explanation */
	uint32_t why_res;    /* ... */
	uint32_t why_flavor; /* ... */
	int64_t why_need;    /* ... */
	int64_t why_free;    /* ... */
} nofit_t;

#define NOFIT_CACHE 4 /* shapes remembered per CQ per cycle */

typedef struct {
	char *name;			       /* CQ name (interned, borrowed) */
	uint32_t cohort;		       /* internal cohort index */
	group_t *groups;		       /* resource groups, owned */
	uint32_t n_groups;		       /* entries */
	int8_t res_group[QUEUE_RESOURCES_MAX]; /* group covering a resource, -1 */
	int8_t res_cov[QUEUE_RESOURCES_MAX];   /* its index in the group */
	slot_t *slots;			       /* quota slots, owned */
	uint32_t n_slots;		       /* entries */
	queue_strategy_t strategy;	       /* queueingStrategy */
	queue_within_t within;		       /* preemption policy */
	queue_reclaim_t reclaim;	       /* preemption policy */
	queue_borrow_t borrow;		       /* preemption policy */
	bool has_thr;			       /* maxPriorityThreshold set */
	int32_t thr;			       /* its value */
	int64_t weight;			       /* fair-sharing weight, milli */
	queue_stop_t stop;		       /* stopPolicy */
	u32vec_t lqs;			       /* its LocalQueues */
	u32vec_t aside;			       /* set-aside pending workloads */
	u32vec_t adm;			       /* admitted and evicting workloads */
	counters_t ctr;			       /* history */
	uint32_t n_pending;		       /* pending workloads (all reasons) */
	bool blocked;			       /* StrictFIFO head blocked in the last cycle */
	int32_t min_prio;		       /* lowest priority among adm (if valid) */
	bool min_prio_ok;		       /* min_prio is current */
	bool rec_seen;			       /* a CQ record was restored into it */
	nofit_t nofit[NOFIT_CACHE];	       /* shapes that did not fit this cycle */
	uint32_t n_nofit;		       /* entries used (a ring) */
} cq_t;

typedef struct {
	char *name;	     /* "namespace/name" (interned, borrowed) */
	uint32_t cq;	     /* its ClusterQueue */
	int64_t weight;	     /* fair-share weight, milli */
	u32vec_t heap;	     /* eligible pending workloads, a binary heap */
	double usage;	     /* decayed usage */
	double used_ms;	     /* ledger of finished work */
	int64_t *cur;	     /* admitted amount per resource (lazy) */
	counters_t ctr;	     /* history */
	uint32_t n_pending;  /* pending workloads */
	uint32_t n_admitted; /* admitted + evicting */
} lq_t;

typedef struct {
	uint32_t flavor;  /* flavor id */
	uint32_t res;	  /* resource id */
	int64_t nominal;  /* sum of nominal */
	int64_t lendable; /* sum of lendable */
	int64_t usage;	  /* sum of usage */
	int64_t borrowed; /* sum of usage above guaranteed */
} cslot_t;

typedef struct {
	char *name;	      /* name ("" for the hidden cohort of a lone CQ) */
	uint32_t pub;	      /* public id, QUEUE_NONE when hidden */
	int64_t weight;	      /* fairSharing weight, milli */
	u32vec_t cqs;	      /* member CQs */
	cslot_t *slots;	      /* (flavor, resource) totals */
	size_t n_slots;	      /* entries */
	size_t cap_slots;     /* allocated */
	bool dirty;	      /* needs a cycle */
	bool capacity_up;     /* capacity grew: retry set-aside workloads */
	bool rec_capacity_up; /* restored from the meta record */
	uint32_t n_evicting;  /* EVICTING workloads in its CQs */
	uint64_t gen;	      /* bumps on every usage change in a cycle */
} cohort_t;

typedef struct {
	int64_t at;	/* deadline or backoff end */
	uint32_t wl;	/* workload */
	uint32_t epoch; /* the workload's epoch when pushed */
} timer_t_;

typedef struct {
	timer_t_ *v; /* binary heap by (at, workload id) */
	size_t n;    /* used */
	size_t cap;  /* allocated */
} timers_t;

typedef struct {
	uint8_t type;  /* queue_rec_type_t */
	uint16_t len;  /* key bytes */
	uint32_t hash; /* hash of type + key */
	uint8_t *key;  /* owned copy */
} dirty_t;

typedef struct {
	uint32_t slot; /* CQ slot */
	int64_t val;   /* amount */
	uint8_t mode;  /* M_* of this slot */
} need_t;

enum { M_FIT = 0, M_RECLAIM = 1, M_PREEMPT = 2, M_WAIT = 3, M_NEVER = 4 };

/* One flavor assignment attempt. */
typedef struct {
	int mode;					     /* worst M_* over the assignment */
	bool borrows;					     /* some slot would go above nominal */
	size_t n_asg;					     /* entries in asg */
	asg_t asg[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX]; /* per pod set and request */
	size_t n_need;					     /* entries in need */
	need_t need[QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX]; /* per slot totals */
	uint8_t why;					       /* WHY_* of the worst slot */
	uint32_t why_res;				       /* its resource */
	uint32_t why_flavor;				       /* its flavor */
	int64_t why_need;				       /* needed */
	int64_t why_free;				       /* free */
} try_t;

typedef struct {
	uint32_t cq;   /* CQ */
	uint32_t wl;   /* its current head */
	int64_t share; /* weighted share with the head (fair sharing) */
	uint64_t gen;  /* cohort gen when computed */
	bool borrows;  /* head would borrow */
	bool hopeless; /* head cannot be admitted now (processed first) */
} cqhead_t;

struct queue {
	queue_config_t cfg;	 /* configuration */
	names_t strs;		 /* interned label keys/values and pod set names */
	names_t res_names;	 /* resources */
	names_t flv_names;	 /* flavors */
	names_t cq_names;	 /* ClusterQueues */
	names_t lq_names;	 /* LocalQueues "ns/name" */
	names_t cohort_names;	 /* cohorts, incl. hidden ones "\x01<cq>" */
	flavor_t *flavors;	 /* by flavor id */
	size_t cap_flavors;	 /* allocated */
	uint64_t flv_epoch;	 /* bumps when a flavor gets defined */
	cq_t *cqs;		 /* by CQ id */
	size_t cap_cqs;		 /* allocated */
	lq_t *lqs;		 /* by LQ id */
	size_t cap_lqs;		 /* allocated */
	cohort_t *cohorts;	 /* internal cohorts */
	size_t cap_cohorts;	 /* allocated */
	u32vec_t pub_cohorts;	 /* public id -> internal */
	wl_t *wls;		 /* workloads by id */
	size_t n_wls;		 /* slots used (live or free) */
	size_t cap_wls;		 /* allocated */
	u32vec_t free_wls;	 /* free ids */
	size_t n_live;		 /* live workloads */
	idmap_t uids;		 /* uid -> workload */
	tmpl_t *tmpls;		 /* templates */
	size_t n_tmpls;		 /* slots */
	size_t cap_tmpls;	 /* allocated */
	u32vec_t free_tmpls;	 /* free template ids */
	idmap_t tmpl_map;	 /* content -> template */
	u32vec_t dirty_cohorts;	 /* cohorts needing a cycle */
	timers_t ready_timers;	 /* Ready deadlines */
	timers_t backoff_timers; /* backoff ends */
	dirty_t *dirty;		 /* changed records */
	size_t n_dirty;		 /* entries */
	size_t cap_dirty;	 /* allocated */
	idmap_t dirty_map;	 /* (type, key) -> entry */
	uint64_t cycles;	 /* cycles run */
	int64_t last_now;	 /* last time seen */
	int64_t last_sample;	 /* last tenant usage sample */
	bool meta_dirty;	 /* meta record changed */
	bool dirty_lost;	 /* a change could not be recorded (allocation) */
	bool retry_preempt;	 /* a cohort cycle found no victims (scratch) */
	/* results of the last cycle_run / tick */
	queue_admission_t *res_adm;
	size_t n_res_adm, cap_res_adm;
	queue_assign_t *res_asg;
	size_t n_res_asg, cap_res_asg;
	queue_eviction_t *res_ev;
	size_t n_res_ev, cap_res_ev;
	queue_pending_change_t *res_ch;
	size_t n_res_ch, cap_res_ch;
	char *res_msg;
	size_t n_res_msg, cap_res_msg;
	/* cycle scratch */
	u32vec_t keep;	   /* popped workloads that stay pending */
	u32vec_t release;  /* victims to release at the end of the cycle */
	need_t *held;	   /* usage held by preemptors this cycle */
	uint32_t *held_cq; /* their CQs */
	size_t n_held, cap_held, cap_held_cq;
	cqhead_t *heads; /* CQ heads of the cohort in a cycle (heap) */
	size_t n_heads, cap_heads;
	u32vec_t cands;	    /* preemption candidates */
	u32vec_t targets;   /* chosen victims */
	try_t scratch_try;  /* one assignment */
	try_t scratch_try2; /* another */
};

static wl_t *W(const queue_t *q, uint32_t id)
{
	return &q->wls[id];
}

static const char *wl_uid(const wl_t *w)
{
	return w->strs;
}

static const psref_t *wl_ps(const wl_t *w)
{
	return w->n_ps == 1 ? &w->ps1 : w->psx;
}

static cohort_t *cohort_of(const queue_t *q, const cq_t *c)
{
	return &q->cohorts[c->cohort];
}

static bool cq_has_cohort(const queue_t *q, const cq_t *c)
{
	return q->cohorts[c->cohort].pub != QUEUE_NONE;
}

/* ================================================================== */
/* Changed records                                                     */
/* ================================================================== */

typedef struct {
	uint8_t type;	  /* record type */
	const uint8_t *k; /* key bytes */
	size_t len;	  /* key length */
} dkey_t;

static bool dirty_eq(const void *ctx, uint32_t id, const void *key)
{
	const queue_t *q = ctx;
	const dkey_t *k = key;
	const dirty_t *d = &q->dirty[id];

	return d->type == k->type && d->len == k->len && memcmp(d->key, k->k, k->len) == 0;
}

static uint32_t dirty_hash(uint8_t type, const uint8_t *k, size_t len)
{
	return hash_bytes(k, len, 2166136261u ^ type);
}

/* Mark a record changed. Allocation failure is remembered as "everything
 * changed" (the next queue_dirty_next sees a full set) rather than lost. */
static void mark(queue_t *q, uint8_t type, const char *key)
{
	dkey_t k = {type, (const uint8_t *)key, strlen(key)};
	uint32_t h = dirty_hash(type, k.k, k.len), id;
	dirty_t *d;

	if (k.len > QUEUE_KEY_MAX)
		return;
	if (map_find(&q->dirty_map, h, dirty_eq, q, &k, &id))
		return;
	if (grow(&q->dirty, &q->cap_dirty, q->n_dirty + 1, sizeof(*q->dirty)) ||
	    map_reserve(&q->dirty_map)) {
		q->dirty_lost = true;
		return;
	}
	d = &q->dirty[q->n_dirty];
	d->key = malloc(k.len ? k.len : 1);
	if (!d->key) {
		q->dirty_lost = true;
		return;
	}
	memcpy(d->key, key, k.len);
	d->type = type;
	d->len = (uint16_t)k.len;
	d->hash = h;
	map_put(&q->dirty_map, h, (uint32_t)q->n_dirty);
	q->n_dirty++;
}

static void mark_wl(queue_t *q, const wl_t *w)
{
	mark(q, QUEUE_REC_WORKLOAD, wl_uid(w));
}

static void mark_cq(queue_t *q, uint32_t cq)
{
	mark(q, QUEUE_REC_CQ, q->cqs[cq].name);
}

static void mark_lq(queue_t *q, uint32_t lq)
{
	mark(q, QUEUE_REC_TENANT, q->lqs[lq].name);
}

static void mark_meta(queue_t *q)
{
	mark(q, QUEUE_REC_META, "meta");
}

/* A cohort needs a cycle; capacity_up also retries its set-aside work. */
static void cohort_touch(queue_t *q, uint32_t co, bool capacity_up)
{
	cohort_t *h = &q->cohorts[co];

	if (capacity_up && !h->capacity_up) {
		h->capacity_up = true;
		mark_meta(q); /* the meta record lists cohorts with capacity to retry */
	}
	if (h->dirty)
		return;
	if (vpush(&q->dirty_cohorts, co))
		return; /* retried: the flag stays clear, the next touch adds it */
	h->dirty = true;
}

/* ================================================================== */
/* Creation and the policy objects                                     */
/* ================================================================== */

void queue_config_default(queue_config_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->fair_sharing = false;
	cfg->tenant_half_life_ms = (int64_t)3600 * 1000;
	cfg->tenant_sample_ms = (int64_t)5 * 60 * 1000;
	cfg->ready_timeout_ms = (int64_t)30 * 60 * 1000;
	cfg->ready_scope = QUEUE_READY_GANGS;
	cfg->backoff_base_ms = (int64_t)60 * 1000;
	cfg->backoff_max_ms = (int64_t)3600 * 1000;
	cfg->release_on_evict = true;
	cfg->workloads_max = 1000000;
}

int queue_create(const queue_config_t *cfg, queue_t **out)
{
	queue_t *q;

	*out = NULL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return GPUQ_ENOMEM;
	if (cfg)
		q->cfg = *cfg;
	else
		queue_config_default(&q->cfg);
	if (q->cfg.tenant_half_life_ms < 0 || q->cfg.tenant_sample_ms < 0 ||
	    q->cfg.ready_timeout_ms < 0 || q->cfg.backoff_base_ms < 0 ||
	    q->cfg.backoff_max_ms < q->cfg.backoff_base_ms) {
		free(q);
		return GPUQ_EINVAL;
	}
	if (q->cfg.workloads_max == 0)
		q->cfg.workloads_max = 1000000;
	q->last_now = INT64_MIN;
	q->last_sample = INT64_MIN;
	*out = q;
	return GPUQ_OK;
}

static void tmpl_release(queue_t *q, uint32_t id);

void queue_destroy(queue_t *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n_wls; i++) {
		free(q->wls[i].strs);
		free(q->wls[i].psx);
		free(q->wls[i].asg);
	}
	free(q->wls);
	free(q->free_wls.v);
	free(q->uids.e);
	for (size_t i = 0; i < q->n_tmpls; i++) {
		tmpl_t *t = &q->tmpls[i];

		free(t->sel);
		free(t->aff);
		free(t->affvals);
		free(t->tol);
		free(t->flv_ok);
	}
	free(q->tmpls);
	free(q->free_tmpls.v);
	free(q->tmpl_map.e);
	for (size_t i = 0; i < q->flv_names.n; i++) {
		free(q->flavors[i].labels);
		free(q->flavors[i].taints);
		free(q->flavors[i].tols);
	}
	free(q->flavors);
	for (size_t i = 0; i < q->cq_names.n; i++) {
		cq_t *c = &q->cqs[i];

		free(c->groups);
		free(c->slots);
		free(c->lqs.v);
		free(c->aside.v);
		free(c->adm.v);
	}
	free(q->cqs);
	for (size_t i = 0; i < q->lq_names.n; i++) {
		free(q->lqs[i].heap.v);
		free(q->lqs[i].cur);
	}
	free(q->lqs);
	for (size_t i = 0; i < q->cohort_names.n; i++) {
		free(q->cohorts[i].cqs.v);
		free(q->cohorts[i].slots);
	}
	free(q->cohorts);
	free(q->pub_cohorts.v);
	free(q->dirty_cohorts.v);
	free(q->ready_timers.v);
	free(q->backoff_timers.v);
	for (size_t i = 0; i < q->n_dirty; i++)
		free(q->dirty[i].key);
	free(q->dirty);
	free(q->dirty_map.e);
	free(q->res_adm);
	free(q->res_asg);
	free(q->res_ev);
	free(q->res_ch);
	free(q->res_msg);
	free(q->keep.v);
	free(q->release.v);
	free(q->held);
	free(q->held_cq);
	free(q->heads);
	free(q->cands.v);
	free(q->targets.v);
	names_free(&q->strs);
	names_free(&q->res_names);
	names_free(&q->flv_names);
	names_free(&q->cq_names);
	names_free(&q->lq_names);
	names_free(&q->cohort_names);
	free(q);
}

static int check_name(const char *what, const char *s, bool allow_empty, gpuq_diag_t *diag)
{
	if (!s)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: missing", what);
	if (!allow_empty && !*s)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: empty", what);
	if (strlen(s) > QUEUE_NAME_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s \"%.40s...\": longer than %d bytes",
				     what, s, QUEUE_NAME_MAX);
	return GPUQ_OK;
}

/* Intern a resource name (the caller checked it). */
static int res_intern(queue_t *q, const char *name, uint32_t *id, gpuq_diag_t *diag)
{
	int rc = check_name("resource name", name, false, diag);

	if (rc)
		return rc;
	if (names_find(&q->res_names, name, id) == GPUQ_OK)
		return GPUQ_OK;
	if (q->res_names.n >= QUEUE_RESOURCES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "resource \"%s\": more than %d resources",
				     name, QUEUE_RESOURCES_MAX);
	return names_intern(&q->res_names, name, id);
}

/* Intern a flavor name, creating an undefined flavor slot. */
static int flv_intern(queue_t *q, const char *name, uint32_t *id, gpuq_diag_t *diag)
{
	int rc = check_name("flavor name", name, false, diag);

	if (rc)
		return rc;
	if (names_find(&q->flv_names, name, id) == GPUQ_OK)
		return GPUQ_OK;
	if (q->flv_names.n >= QUEUE_FLAVORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "flavor \"%s\": more than %d flavors", name,
				     QUEUE_FLAVORS_MAX);
	if (grow(&q->flavors, &q->cap_flavors, q->flv_names.n + 1, sizeof(*q->flavors)))
		return GPUQ_ENOMEM;
	memset(&q->flavors[q->flv_names.n], 0, sizeof(flavor_t));
	return names_intern(&q->flv_names, name, id);
}

static int str_intern(queue_t *q, const char *what, const char *s, uint32_t *id, gpuq_diag_t *diag)
{
	int rc = check_name(what, s, true, diag);

	if (rc)
		return rc;
	return names_intern(&q->strs, s, id);
}

static int tols_build(queue_t *q, const queue_toleration_t *in, size_t n, tol_t **out,
		      gpuq_diag_t *diag)
{
	tol_t *t;
	int rc;

	*out = NULL;
	if (n > QUEUE_SELECTORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %d tolerations",
				     QUEUE_SELECTORS_MAX);
	if (!n)
		return GPUQ_OK;
	t = calloc(n, sizeof(*t));
	if (!t)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (in[i].op != QUEUE_TOLERATE_EQUAL && in[i].op != QUEUE_TOLERATE_EXISTS) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL, "toleration %zu: bad operator", i);
			goto fail;
		}
		if ((unsigned)in[i].effect > QUEUE_EFFECT_ANY) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL, "toleration %zu: bad effect", i);
			goto fail;
		}
		if (in[i].op == QUEUE_TOLERATE_EQUAL && (!in[i].key || !*in[i].key)) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL,
					   "toleration %zu: operator Equal needs a key", i);
			goto fail;
		}
		rc = str_intern(q, "toleration key", in[i].key ? in[i].key : "", &t[i].key, diag);
		if (rc)
			goto fail;
		rc = str_intern(q, "toleration value",
				in[i].op == QUEUE_TOLERATE_EQUAL && in[i].value ? in[i].value : "",
				&t[i].val, diag);
		if (rc)
			goto fail;
		t[i].op = (uint8_t)in[i].op;
		t[i].effect = (uint8_t)in[i].effect;
	}
	*out = t;
	return GPUQ_OK;
fail:
	free(t);
	return rc;
}

static int labels_build(queue_t *q, const char *what, const queue_label_t *in, size_t n, kv_t **out,
			gpuq_diag_t *diag)
{
	kv_t *l;
	int rc;

	*out = NULL;
	if (n > QUEUE_SELECTORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: more than %d entries", what,
				     QUEUE_SELECTORS_MAX);
	if (!n)
		return GPUQ_OK;
	l = calloc(n, sizeof(*l));
	if (!l)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		rc = check_name(what, in[i].key, false, diag);
		if (rc)
			goto fail;
		rc = str_intern(q, what, in[i].key, &l[i].key, diag);
		if (rc)
			goto fail;
		rc = str_intern(q, what, in[i].value ? in[i].value : "", &l[i].val, diag);
		if (rc)
			goto fail;
		for (size_t j = 0; j < i; j++) {
			if (l[j].key == l[i].key) {
				rc = gpuq_diag_set(diag, GPUQ_EINVAL, "%s: key \"%s\" twice", what,
						   in[i].key);
				goto fail;
			}
		}
	}
	*out = l;
	return GPUQ_OK;
fail:
	free(l);
	return rc;
}

int queue_flavor_add(queue_t *q, const queue_flavor_spec_t *spec, uint32_t *id, gpuq_diag_t *diag)
{
	flavor_t f = {0};
	uint32_t fid;
	int rc;

	rc = flv_intern(q, spec->name, &fid, diag);
	if (rc)
		return rc;
	if (q->flavors[fid].defined)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "ResourceFlavor \"%s\" already exists",
				     spec->name);
	if (spec->n_node_taints > QUEUE_TAINTS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "ResourceFlavor \"%s\": more than %d taints", spec->name,
				     QUEUE_TAINTS_MAX);
	rc = labels_build(q, "nodeLabels", spec->node_labels, spec->n_node_labels, &f.labels, diag);
	if (rc)
		goto fail;
	f.n_labels = spec->n_node_labels;
	rc = tols_build(q, spec->tolerations, spec->n_tolerations, &f.tols, diag);
	if (rc)
		goto fail;
	f.n_tols = spec->n_tolerations;
	if (spec->n_node_taints) {
		f.taints = calloc(spec->n_node_taints, sizeof(*f.taints));
		if (!f.taints) {
			rc = GPUQ_ENOMEM;
			goto fail;
		}
	}
	for (size_t i = 0; i < spec->n_node_taints; i++) {
		const queue_taint_t *t = &spec->node_taints[i];

		if ((unsigned)t->effect > QUEUE_EFFECT_NO_EXECUTE) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL, "taint %zu: bad effect", i);
			goto fail;
		}
		rc = check_name("taint key", t->key, false, diag);
		if (!rc)
			rc = str_intern(q, "taint key", t->key, &f.taints[i].key, diag);
		if (!rc)
			rc = str_intern(q, "taint value", t->value ? t->value : "",
					&f.taints[i].val, diag);
		if (rc)
			goto fail;
		f.taints[i].effect = (uint8_t)t->effect;
	}
	f.n_taints = spec->n_node_taints;
	f.defined = true;
	q->flavors[fid] = f;
	q->flv_epoch++;
	for (size_t i = 0; i < q->cohort_names.n; i++)
		cohort_touch(q, (uint32_t)i, true);
	if (id)
		*id = fid;
	return GPUQ_OK;
fail:
	free(f.labels);
	free(f.tols);
	free(f.taints);
	return rc;
}

static int cohort_new(queue_t *q, const char *key, bool hidden, int64_t weight, uint32_t *id)
{
	cohort_t *h;
	uint32_t cid;

	if (q->cohort_names.n >= 2 * (size_t)QUEUE_CQS_MAX)
		return GPUQ_ELIMIT;
	if (grow(&q->cohorts, &q->cap_cohorts, q->cohort_names.n + 1, sizeof(*q->cohorts)))
		return GPUQ_ENOMEM;
	if (!hidden && vpush(&q->pub_cohorts, (uint32_t)q->cohort_names.n))
		return GPUQ_ENOMEM;
	if (names_intern(&q->cohort_names, key, &cid)) {
		if (!hidden)
			q->pub_cohorts.n--;
		return GPUQ_ENOMEM;
	}
	h = &q->cohorts[cid];
	memset(h, 0, sizeof(*h));
	h->name = q->cohort_names.s[cid];
	h->pub = hidden ? QUEUE_NONE : (uint32_t)q->pub_cohorts.n - 1;
	h->weight = weight > 0 ? weight : FAIRSHARE_WEIGHT_ONE;
	*id = cid;
	return GPUQ_OK;
}

int queue_cohort_add(queue_t *q, const char *name, int64_t weight_milli, uint32_t *id,
		     gpuq_diag_t *diag)
{
	uint32_t cid;
	int rc = check_name("cohort name", name, false, diag);

	if (rc)
		return rc;
	if (name[0] == '\x01')
		return gpuq_diag_set(diag, GPUQ_EINVAL, "cohort name: bad first byte");
	if (names_find(&q->cohort_names, name, &cid) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "cohort \"%s\" already exists", name);
	rc = cohort_new(q, name, false, weight_milli, &cid);
	if (rc)
		return gpuq_diag_set(diag, rc, "cohort \"%s\": %s", name, gpuq_strerror(rc));
	if (id)
		*id = q->cohorts[cid].pub;
	return GPUQ_OK;
}

/* The cohort slot for (flavor, res), created on demand. */
static int cslot_get(cohort_t *h, uint32_t flavor, uint32_t res, uint32_t *out)
{
	for (size_t i = 0; i < h->n_slots; i++) {
		if (h->slots[i].flavor == flavor && h->slots[i].res == res) {
			*out = (uint32_t)i;
			return GPUQ_OK;
		}
	}
	if (grow(&h->slots, &h->cap_slots, h->n_slots + 1, sizeof(*h->slots)))
		return GPUQ_ENOMEM;
	memset(&h->slots[h->n_slots], 0, sizeof(cslot_t));
	h->slots[h->n_slots].flavor = flavor;
	h->slots[h->n_slots].res = res;
	*out = (uint32_t)h->n_slots++;
	return GPUQ_OK;
}

static int64_t slot_guaranteed(const slot_t *s)
{
	return s->llimit >= 0 ? s->nominal - s->llimit : 0;
}

static int64_t slot_lendable(const slot_t *s)
{
	return s->llimit >= 0 ? s->llimit : s->nominal;
}

static int64_t over(int64_t usage, int64_t g)
{
	return usage > g ? usage - g : 0;
}

/* Add (sign +1) or remove (-1) a slot's quota from its cohort totals. */
static void cslot_quota(cohort_t *h, const slot_t *s, int sign)
{
	cslot_t *cs = &h->slots[s->cslot];

	cs->nominal += sign * s->nominal;
	cs->lendable += sign * slot_lendable(s);
	cs->usage += sign * s->usage;
	cs->borrowed += sign * over(s->usage, slot_guaranteed(s));
}

/* Whether the cohort can take these slots' nominal quota (replacing `old`
 * ones, same order, when not NULL) within QUEUE_COHORT_AMOUNT_MAX. */
static bool cohort_room(const cohort_t *h, const slot_t *slots, const slot_t *old, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int64_t sum = h->slots[slots[i].cslot].nominal - (old ? old[i].nominal : 0);

		if (sum + slots[i].nominal > QUEUE_COHORT_AMOUNT_MAX)
			return false;
	}
	return true;
}

/* Allocate and fill the quota slots of a CQ whose groups cq_build made. */
static int cq_fill_slots(const queue_cq_spec_t *spec, cq_t *c, uint32_t n_slots, gpuq_diag_t *diag)
{
	c->slots = calloc(n_slots ? n_slots : 1, sizeof(*c->slots));
	if (!c->slots)
		return GPUQ_ENOMEM;
	c->n_slots = n_slots;
	for (size_t g = 0; g < spec->n_groups; g++) {
		const queue_group_spec_t *gs = &spec->groups[g];
		group_t *gr = &c->groups[g];

		for (size_t f = 0; f < gr->n_flv; f++) {
			for (size_t r = 0; r < gr->n_cov; r++) {
				const queue_quota_spec_t *qs = &gs->flavors[f].quotas[r];
				slot_t *s = &c->slots[gr->base + f * gr->n_cov + r];

				if (qs->nominal < 0 || qs->borrowing_limit < QUEUE_UNLIMITED ||
				    qs->lending_limit < QUEUE_UNLIMITED ||
				    qs->lending_limit > qs->nominal ||
				    qs->nominal > QUEUE_AMOUNT_MAX ||
				    qs->borrowing_limit > QUEUE_AMOUNT_MAX)
					return gpuq_diag_set(
					    diag, GPUQ_EINVAL,
					    "ClusterQueue \"%s\": flavor \"%s\" resource \"%s\": "
					    "bad quota (nominal %" PRId64
					    ", borrowingLimit %" PRId64 ", lendingLimit %" PRId64
					    ")",
					    spec->name, gs->flavors[f].flavor, gs->covered[r],
					    qs->nominal, qs->borrowing_limit, qs->lending_limit);
				s->nominal = qs->nominal;
				s->blimit = qs->borrowing_limit;
				s->llimit = qs->lending_limit;
				s->flavor = gr->flv[f];
				s->res = gr->cov[r];
			}
		}
	}
	return GPUQ_OK;
}

/* Validate a CQ spec's groups into groups/slots arrays (new allocations). */
static int cq_build(queue_t *q, const queue_cq_spec_t *spec, cq_t *c, gpuq_diag_t *diag)
{
	uint32_t n_slots = 0;
	int rc;

	if (spec->n_groups > QUEUE_GROUPS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT,
				     "ClusterQueue \"%s\": more than %d "
				     "resourceGroups",
				     spec->name, QUEUE_GROUPS_MAX);
	memset(c->res_group, -1, sizeof(c->res_group));
	memset(c->res_cov, -1, sizeof(c->res_cov));
	c->groups = calloc(spec->n_groups ? spec->n_groups : 1, sizeof(*c->groups));
	if (!c->groups)
		return GPUQ_ENOMEM;
	c->n_groups = (uint32_t)spec->n_groups;
	for (size_t g = 0; g < spec->n_groups; g++) {
		const queue_group_spec_t *gs = &spec->groups[g];
		group_t *gr = &c->groups[g];

		if (!gs->n_covered || !gs->n_flavors || gs->n_covered > QUEUE_GROUP_RES_MAX ||
		    gs->n_flavors > QUEUE_GROUP_FLAVORS_MAX)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "ClusterQueue \"%s\": resourceGroups[%zu]"
					     " needs 1..%d coveredResources and 1..%d flavors",
					     spec->name, g, QUEUE_GROUP_RES_MAX,
					     QUEUE_GROUP_FLAVORS_MAX);
		gr->n_cov = (uint32_t)gs->n_covered;
		gr->n_flv = (uint32_t)gs->n_flavors;
		gr->base = n_slots;
		for (size_t r = 0; r < gs->n_covered; r++) {
			rc = res_intern(q, gs->covered[r], &gr->cov[r], diag);
			if (rc)
				return rc;
			if (c->res_group[gr->cov[r]] >= 0)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "ClusterQueue \"%s\": resource "
						     "\"%s\" covered twice",
						     spec->name, gs->covered[r]);
			c->res_group[gr->cov[r]] = (int8_t)g;
			c->res_cov[gr->cov[r]] = (int8_t)r;
		}
		for (size_t f = 0; f < gs->n_flavors; f++) {
			rc = flv_intern(q, gs->flavors[f].flavor, &gr->flv[f], diag);
			if (rc)
				return rc;
			for (size_t k = 0; k < f; k++)
				if (gr->flv[k] == gr->flv[f])
					return gpuq_diag_set(diag, GPUQ_EINVAL,
							     "ClusterQueue \"%s\": "
							     "flavor \"%s\" twice in a group",
							     spec->name, gs->flavors[f].flavor);
			if (!gs->flavors[f].quotas)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "ClusterQueue \"%s\": flavor "
						     "\"%s\" has no quotas",
						     spec->name, gs->flavors[f].flavor);
		}
		n_slots += gr->n_cov * gr->n_flv;
	}
	return cq_fill_slots(spec, c, n_slots, diag);
}

static void cq_policy(cq_t *c, const queue_cq_spec_t *spec)
{
	c->strategy =
	    spec->strategy == QUEUE_STRICT_FIFO ? QUEUE_STRICT_FIFO : QUEUE_BEST_EFFORT_FIFO;
	c->within = spec->within;
	c->reclaim = spec->reclaim;
	c->borrow = spec->borrow;
	c->has_thr = spec->has_max_priority_threshold;
	c->thr = spec->max_priority_threshold;
	c->weight = spec->weight_milli > 0 ? spec->weight_milli : FAIRSHARE_WEIGHT_ONE;
	c->stop = spec->stop;
}

static int cq_policy_check(const queue_cq_spec_t *spec, gpuq_diag_t *diag)
{
	if ((unsigned)spec->strategy > QUEUE_STRICT_FIFO ||
	    (unsigned)spec->within > QUEUE_WITHIN_LOWER_OR_NEWER ||
	    (unsigned)spec->reclaim > QUEUE_RECLAIM_ANY ||
	    (unsigned)spec->borrow > QUEUE_BORROW_LOWER_PRIORITY ||
	    (unsigned)spec->stop > QUEUE_STOP_HOLD_AND_DRAIN)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "ClusterQueue \"%s\": bad policy enum",
				     spec->name);
	return GPUQ_OK;
}

int queue_cq_add(queue_t *q, const queue_cq_spec_t *spec, uint32_t *id, gpuq_diag_t *diag)
{
	cq_t c;
	uint32_t cid, co;
	char hidden[QUEUE_NAME_MAX + 2];
	cohort_t *h;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = check_name("ClusterQueue name", spec->name, false, diag);
	if (rc)
		return rc;
	if (names_find(&q->cq_names, spec->name, &cid) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "ClusterQueue \"%s\" already exists",
				     spec->name);
	if (q->cq_names.n >= QUEUE_CQS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %d ClusterQueues",
				     QUEUE_CQS_MAX);
	rc = cq_policy_check(spec, diag);
	if (rc)
		return rc;
	rc = cq_build(q, spec, &c, diag);
	if (rc)
		goto fail;
	if (spec->cohort && *spec->cohort) {
		rc = check_name("cohort name", spec->cohort, false, diag);
		if (rc)
			goto fail;
		if (names_find(&q->cohort_names, spec->cohort, &co) != GPUQ_OK) {
			rc = cohort_new(q, spec->cohort, false, 0, &co);
			if (rc)
				goto fail;
		}
	} else {
		hidden[0] = '\x01';
		gpuq_strlcpy(hidden + 1, spec->name, sizeof(hidden) - 1);
		rc = cohort_new(q, hidden, true, 0, &co);
		if (rc)
			goto fail;
	}
	h = &q->cohorts[co];
	for (uint32_t s = 0; s < c.n_slots; s++) {
		rc = cslot_get(h, c.slots[s].flavor, c.slots[s].res, &c.slots[s].cslot);
		if (rc)
			goto fail;
	}
	if (!cohort_room(h, c.slots, NULL, c.n_slots)) {
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
				   "ClusterQueue \"%s\": its cohort's total "
				   "quota would exceed 2^61",
				   spec->name);
		goto fail;
	}
	if (grow(&q->cqs, &q->cap_cqs, q->cq_names.n + 1, sizeof(*q->cqs)) ||
	    grow(&h->cqs.v, &h->cqs.cap, h->cqs.n + 1, sizeof(uint32_t))) {
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	rc = names_intern(&q->cq_names, spec->name, &cid);
	if (rc)
		goto fail;
	cq_policy(&c, spec);
	c.cohort = co;
	c.name = q->cq_names.s[cid];
	q->cqs[cid] = c;
	h->cqs.v[h->cqs.n++] = cid;
	for (uint32_t s = 0; s < c.n_slots; s++)
		cslot_quota(h, &c.slots[s], +1);
	cohort_touch(q, co, true);
	mark_cq(q, cid);
	if (id)
		*id = cid;
	return GPUQ_OK;
fail:
	free(c.groups);
	free(c.slots);
	return rc;
}

int queue_cq_update(queue_t *q, const queue_cq_spec_t *spec, gpuq_diag_t *diag)
{
	cq_t n;
	uint32_t cid;
	cq_t *c;
	cohort_t *h;
	int rc;

	memset(&n, 0, sizeof(n));
	if (!spec->name || names_find(&q->cq_names, spec->name, &cid) != GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "ClusterQueue \"%s\" not found",
				     spec->name ? spec->name : "");
	c = &q->cqs[cid];
	h = cohort_of(q, c);
	rc = cq_policy_check(spec, diag);
	if (rc)
		return rc;
	if ((spec->cohort && *spec->cohort)
		? (h->pub == QUEUE_NONE || strcmp(h->name, spec->cohort) != 0)
		: h->pub != QUEUE_NONE)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "ClusterQueue \"%s\": structural change "
				     "(cohort)",
				     spec->name);
	rc = cq_build(q, spec, &n, diag);
	if (rc)
		goto out;
	if (n.n_groups != c->n_groups || n.n_slots != c->n_slots) {
		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "ClusterQueue \"%s\": structural change "
				   "(resource groups)",
				   spec->name);
		goto out;
	}
	for (uint32_t s = 0; s < n.n_slots; s++) {
		if (n.slots[s].flavor != c->slots[s].flavor || n.slots[s].res != c->slots[s].res) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL,
					   "ClusterQueue \"%s\": structural "
					   "change (flavors or resources)",
					   spec->name);
			goto out;
		}
	}
	for (uint32_t s = 0; s < n.n_slots; s++)
		n.slots[s].cslot = c->slots[s].cslot;
	if (!cohort_room(h, n.slots, c->slots, n.n_slots)) {
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
				   "ClusterQueue \"%s\": its cohort's total "
				   "quota would exceed 2^61",
				   spec->name);
		goto out;
	}
	for (uint32_t s = 0; s < c->n_slots; s++) {
		slot_t *o = &c->slots[s];

		cslot_quota(h, o, -1);
		o->nominal = n.slots[s].nominal;
		o->blimit = n.slots[s].blimit;
		o->llimit = n.slots[s].llimit;
		cslot_quota(h, o, +1);
	}
	cq_policy(c, spec);
	cohort_touch(q, c->cohort, true);
	mark_cq(q, cid);
out:
	free(n.groups);
	free(n.slots);
	return rc;
}

int queue_lq_add(queue_t *q, const char *namespace_, const char *name, const char *cq,
		 int64_t weight_milli, uint32_t *id, gpuq_diag_t *diag)
{
	char key[2 * QUEUE_NAME_MAX + 2];
	uint32_t cid, lid;
	lq_t *l;
	int rc;

	rc = check_name("LocalQueue namespace", namespace_, false, diag);
	if (!rc)
		rc = check_name("LocalQueue name", name, false, diag);
	if (!rc)
		rc = check_name("ClusterQueue name", cq, false, diag);
	if (rc)
		return rc;
	if (names_find(&q->cq_names, cq, &cid) != GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				     "LocalQueue %s/%s: ClusterQueue \"%s\" "
				     "not found",
				     namespace_, name, cq);
	snprintf(key, sizeof(key), "%s/%s", namespace_, name);
	if (names_find(&q->lq_names, key, &lid) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "LocalQueue %s already exists", key);
	if (q->lq_names.n >= QUEUE_LQS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %d LocalQueues", QUEUE_LQS_MAX);
	if (grow(&q->lqs, &q->cap_lqs, q->lq_names.n + 1, sizeof(*q->lqs)) ||
	    vpush(&q->cqs[cid].lqs, (uint32_t)q->lq_names.n))
		return GPUQ_ENOMEM;
	rc = names_intern(&q->lq_names, key, &lid);
	if (rc) {
		q->cqs[cid].lqs.n--;
		return rc;
	}
	l = &q->lqs[lid];
	memset(l, 0, sizeof(*l));
	l->name = q->lq_names.s[lid];
	l->cq = cid;
	l->weight = weight_milli > 0 ? weight_milli : FAIRSHARE_WEIGHT_ONE;
	mark_lq(q, lid);
	if (id)
		*id = lid;
	return GPUQ_OK;
}

/* ================================================================== */
/* Pod set templates                                                   */
/* ================================================================== */

static bool tmpl_eq(const void *ctx, uint32_t id, const void *key)
{
	const queue_t *q = ctx;
	const tmpl_t *a = &q->tmpls[id], *b = key;

	if (a->name != b->name || a->n_req != b->n_req || a->n_sel != b->n_sel ||
	    a->n_aff != b->n_aff || a->n_tol != b->n_tol || a->n_affvals != b->n_affvals)
		return false;
	if (memcmp(a->res, b->res, a->n_req * sizeof(a->res[0])) != 0 ||
	    memcmp(a->amt, b->amt, a->n_req * sizeof(a->amt[0])) != 0)
		return false;
	if (a->n_sel && memcmp(a->sel, b->sel, a->n_sel * sizeof(*a->sel)) != 0)
		return false;
	if (a->n_aff && memcmp(a->aff, b->aff, a->n_aff * sizeof(*a->aff)) != 0)
		return false;
	if (a->n_affvals && memcmp(a->affvals, b->affvals, a->n_affvals * sizeof(uint32_t)) != 0)
		return false;
	if (a->n_tol && memcmp(a->tol, b->tol, a->n_tol * sizeof(*a->tol)) != 0)
		return false;
	return true;
}

static uint32_t tmpl_hash(const tmpl_t *t)
{
	uint32_t h = hash_bytes(&t->name, sizeof(t->name), 2166136261u);

	h = hash_bytes(t->res, t->n_req * sizeof(t->res[0]), h);
	h = hash_bytes(t->amt, t->n_req * sizeof(t->amt[0]), h);
	if (t->n_sel)
		h = hash_bytes(t->sel, t->n_sel * sizeof(*t->sel), h);
	if (t->n_aff)
		h = hash_bytes(t->aff, t->n_aff * sizeof(*t->aff), h);
	if (t->n_affvals)
		h = hash_bytes(t->affvals, t->n_affvals * sizeof(uint32_t), h);
	if (t->n_tol)
		h = hash_bytes(t->tol, t->n_tol * sizeof(*t->tol), h);
	return h;
}

static void tmpl_free_fields(tmpl_t *t)
{
	free(t->sel);
	free(t->aff);
	free(t->affvals);
	free(t->tol);
	free(t->flv_ok);
	memset(t, 0, sizeof(*t));
}

static void tmpl_release(queue_t *q, uint32_t id)
{
	tmpl_t *t = &q->tmpls[id];

	if (--t->refs)
		return;
	map_del(&q->tmpl_map, t->hash, id);
	tmpl_free_fields(t);
	(void)vpush(&q->free_tmpls, id); /* a lost free slot only costs memory */
}

/* The required affinity terms of a pod set into t (aff, affvals). */
static int tmpl_build_affinity(queue_t *q, const queue_podset_spec_t *ps, tmpl_t *t,
			       gpuq_diag_t *diag)
{
	size_t nv = 0;
	int rc;

	for (size_t i = 0; i < ps->n_affinity; i++) {
		if (!ps->affinity[i].n_values ||
		    ps->affinity[i].n_values > QUEUE_AFFINITY_VALUES_MAX) {
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "affinity term %zu: needs 1..%d values", i,
					     QUEUE_AFFINITY_VALUES_MAX);
		}
		nv += ps->affinity[i].n_values;
	}
	if (ps->n_affinity) {
		t->aff = calloc(ps->n_affinity, sizeof(*t->aff));
		t->affvals = calloc(nv, sizeof(*t->affvals));
		if (!t->aff || !t->affvals)
			return GPUQ_ENOMEM;
	}
	nv = 0;
	for (size_t i = 0; i < ps->n_affinity; i++) {
		const queue_affinity_t *a = &ps->affinity[i];

		rc = check_name("affinity key", a->key, false, diag);
		if (!rc)
			rc = str_intern(q, "affinity key", a->key, &t->aff[i].key, diag);
		if (rc)
			return rc;
		t->aff[i].n = (uint32_t)a->n_values;
		t->aff[i].off = (uint32_t)nv;
		for (size_t j = 0; j < a->n_values; j++) {
			rc = str_intern(q, "affinity value", a->values[j] ? a->values[j] : "",
					&t->affvals[nv++], diag);
			if (rc)
				return rc;
		}
	}
	t->n_aff = (uint8_t)ps->n_affinity;
	t->n_affvals = (uint32_t)nv;
	return GPUQ_OK;
}

/* Build a template from a spec into *t (fields owned by t). */
static int tmpl_build(queue_t *q, const queue_podset_spec_t *ps, tmpl_t *t, gpuq_diag_t *diag)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = str_intern(q, "pod set name", ps->name ? ps->name : "", &t->name, diag);
	if (rc)
		return rc;
	if (ps->n_requests > QUEUE_PODSET_RES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "pod set \"%s\": more than %d resources",
				     ps->name ? ps->name : "", QUEUE_PODSET_RES_MAX);
	if (ps->n_affinity > QUEUE_SELECTORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "pod set: more than %d affinity terms",
				     QUEUE_SELECTORS_MAX);
	for (size_t i = 0; i < ps->n_requests; i++) {
		uint32_t rid;

		if (ps->requests[i].amount < 0)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "pod set \"%s\": negative request "
					     "for %s",
					     ps->name ? ps->name : "", ps->requests[i].resource);
		if (ps->requests[i].amount > QUEUE_AMOUNT_MAX / (ps->count > 0 ? ps->count : 1))
			return gpuq_diag_set(diag, GPUQ_ERANGE,
					     "pod set \"%s\": request for %s "
					     "too large",
					     ps->name ? ps->name : "", ps->requests[i].resource);
		rc = res_intern(q, ps->requests[i].resource, &rid, diag);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (t->res[j] == rid)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "pod set: resource \"%s\" "
						     "twice",
						     ps->requests[i].resource);
		t->res[i] = (uint16_t)rid;
		t->amt[i] = ps->requests[i].amount;
	}
	t->n_req = (uint8_t)ps->n_requests;
	rc = labels_build(q, "nodeSelector", ps->node_selector, ps->n_node_selector, &t->sel, diag);
	if (rc)
		return rc;
	t->n_sel = (uint8_t)ps->n_node_selector;
	rc = tols_build(q, ps->tolerations, ps->n_tolerations, &t->tol, diag);
	if (rc)
		goto fail;
	t->n_tol = (uint8_t)ps->n_tolerations;
	rc = tmpl_build_affinity(q, ps, t, diag);
	if (rc)
		goto fail;
	return GPUQ_OK;
fail:
	tmpl_free_fields(t);
	return rc;
}

/* Find or adopt *t (consumed either way); *id gets a reference. */
static int tmpl_intern(queue_t *q, tmpl_t *t, uint32_t *id)
{
	uint32_t h = tmpl_hash(t), tid;

	if (map_find(&q->tmpl_map, h, tmpl_eq, q, t, &tid)) {
		tmpl_free_fields(t);
		q->tmpls[tid].refs++;
		*id = tid;
		return GPUQ_OK;
	}
	if (map_reserve(&q->tmpl_map))
		goto nomem;
	if (q->free_tmpls.n) {
		tid = q->free_tmpls.v[--q->free_tmpls.n];
	} else {
		if (grow(&q->tmpls, &q->cap_tmpls, q->n_tmpls + 1, sizeof(*q->tmpls)))
			goto nomem;
		tid = (uint32_t)q->n_tmpls++;
	}
	t->hash = h;
	t->refs = 1;
	q->tmpls[tid] = *t;
	map_put(&q->tmpl_map, h, tid);
	*id = tid;
	return GPUQ_OK;
nomem:
	tmpl_free_fields(t);
	return GPUQ_ENOMEM;
}

/* Whether one of tols tolerates taint tn (an Exists with an empty key
 * tolerates every taint). */
static bool tolerates_taint(const queue_t *q, const tol_t *tols, size_t n, const taint_t *tn)
{
	for (size_t i = 0; i < n; i++) {
		const tol_t *t = &tols[i];

		if (t->effect != QUEUE_EFFECT_ANY && t->effect != tn->effect)
			continue;
		if (t->op == QUEUE_TOLERATE_EXISTS) {
			if (!q->strs.s[t->key][0] || t->key == tn->key)
				return true;
			continue;
		}
		if (t->key == tn->key && t->val == tn->val)
			return true;
	}
	return false;
}

static const kv_t *label_get(const flavor_t *f, uint32_t key)
{
	for (size_t i = 0; i < f->n_labels; i++)
		if (f->labels[i].key == key)
			return &f->labels[i];
	return NULL;
}

/* Whether pod set template t may use flavor fid (taints, selector, affinity). */
static bool flavor_eligible(const queue_t *q, const tmpl_t *t, uint32_t fid)
{
	const flavor_t *f = &q->flavors[fid];

	if (!f->defined)
		return false;
	for (size_t i = 0; i < f->n_taints; i++) {
		const taint_t *tn = &f->taints[i];

		if (tn->effect == QUEUE_EFFECT_PREFER_NO_SCHEDULE)
			continue;
		if (!tolerates_taint(q, t->tol, t->n_tol, tn) &&
		    !tolerates_taint(q, f->tols, f->n_tols, tn))
			return false;
	}
	for (size_t i = 0; i < t->n_sel; i++) {
		const kv_t *l = label_get(f, t->sel[i].key);

		if (l && l->val != t->sel[i].val)
			return false;
	}
	for (size_t i = 0; i < t->n_aff; i++) {
		const kv_t *l = label_get(f, t->aff[i].key);
		bool ok = false;

		if (!l)
			continue;
		for (uint32_t j = 0; j < t->aff[i].n; j++)
			ok |= t->affvals[t->aff[i].off + j] == l->val;
		if (!ok)
			return false;
	}
	return true;
}

/* Cached flavor_eligible (the cache is per template, reset when flavors change). */
static bool tmpl_flavor_ok(queue_t *q, uint32_t tid, uint32_t fid)
{
	tmpl_t *t = &q->tmpls[tid];

	if (t->flv_epoch != q->flv_epoch || fid >= t->n_flv_ok) {
		size_t n = q->flv_names.n;
		uint8_t *nc = realloc(t->flv_ok, n ? n : 1);

		if (!nc)
			return flavor_eligible(q, t, fid);
		if (t->flv_epoch != q->flv_epoch)
			memset(nc, 0, n);
		else
			memset(nc + t->n_flv_ok, 0, n - t->n_flv_ok);
		t->flv_ok = nc;
		t->n_flv_ok = n;
		t->flv_epoch = q->flv_epoch;
	}
	if (!t->flv_ok[fid])
		t->flv_ok[fid] = flavor_eligible(q, t, fid) ? 1 : 2;
	return t->flv_ok[fid] == 1;
}

/* ================================================================== */
/* Workload order and containers                                       */
/* ================================================================== */

/* A pending preemptor that keeps the assignment it preempted for: its
 * victims are gone or going, and the quota they free is meant for it. */
static bool wl_planned(const wl_t *w)
{
	return w->state == QUEUE_WL_PENDING && w->wait == QUEUE_WAIT_PREEMPTING && w->n_asg;
}

/* Within a LocalQueue: under BestEffortFIFO a planned preemptor first (else
 * its victims, requeued, take back the quota they just freed and it preempts
 * them again: a ping-pong); then priority desc, creation asc, uid asc. A
 * workload's key only changes while it is out of the heap. */
static int wl_cmp(const queue_t *q, uint32_t a, uint32_t b)
{
	const wl_t *x = W(q, a), *y = W(q, b);

	if (q->cqs[x->cq].strategy == QUEUE_BEST_EFFORT_FIFO && wl_planned(x) != wl_planned(y))
		return wl_planned(x) ? -1 : 1;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(wl_uid(x), wl_uid(y));
}

static void heap_set(queue_t *q, u32vec_t *h, size_t i, uint32_t id)
{
	h->v[i] = id;
	W(q, id)->pos = (uint32_t)i;
}

static void heap_up(queue_t *q, u32vec_t *h, size_t i)
{
	uint32_t id = h->v[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (wl_cmp(q, h->v[p], id) <= 0)
			break;
		heap_set(q, h, i, h->v[p]);
		i = p;
	}
	heap_set(q, h, i, id);
}

static void heap_down(queue_t *q, u32vec_t *h, size_t i)
{
	uint32_t id = h->v[i];

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		uint32_t best = id;

		if (l < h->n && wl_cmp(q, h->v[l], best) < 0) {
			m = l;
			best = h->v[l];
		}
		if (l + 1 < h->n && wl_cmp(q, h->v[l + 1], best) < 0)
			m = l + 1;
		if (m == i)
			break;
		heap_set(q, h, i, h->v[m]);
		i = m;
	}
	heap_set(q, h, i, id);
}

static void heap_remove(queue_t *q, u32vec_t *h, size_t i)
{
	uint32_t last = h->v[--h->n];

	if (i == h->n)
		return;
	heap_set(q, h, i, last);
	heap_down(q, h, i);
	heap_up(q, h, W(q, last)->pos);
}

/* Take a workload out of whichever container holds it. */
static void wl_detach(queue_t *q, uint32_t id)
{
	wl_t *w = W(q, id);
	u32vec_t *v = NULL;

	switch (w->where) {
	case W_HEAP:
		heap_remove(q, &q->lqs[w->lq].heap, w->pos);
		break;
	case W_ASIDE:
		v = &q->cqs[w->cq].aside;
		break;
	case W_ADMITTED:
		v = &q->cqs[w->cq].adm;
		q->cqs[w->cq].min_prio_ok = false;
		break;
	default:
		break;
	}
	if (v) {
		uint32_t last = v->v[--v->n];

		if (w->pos != v->n) {
			v->v[w->pos] = last;
			W(q, last)->pos = w->pos;
		}
	}
	w->where = W_NONE;
}

/* Put a workload into a container (allocation may fail: GPUQ_ENOMEM). */
static int wl_attach(queue_t *q, uint32_t id, int where)
{
	wl_t *w = W(q, id);
	u32vec_t *v;

	switch (where) {
	case W_HEAP:
		v = &q->lqs[w->lq].heap;
		if (vpush(v, id))
			return GPUQ_ENOMEM;
		w->where = W_HEAP;
		heap_up(q, v, v->n - 1);
		return GPUQ_OK;
	case W_ASIDE:
		v = &q->cqs[w->cq].aside;
		break;
	case W_ADMITTED:
		v = &q->cqs[w->cq].adm;
		q->cqs[w->cq].min_prio_ok = false;
		break;
	default:
		w->where = (uint8_t)where;
		return GPUQ_OK;
	}
	if (vpush(v, id))
		return GPUQ_ENOMEM;
	w->pos = (uint32_t)(v->n - 1);
	w->where = (uint8_t)where;
	return GPUQ_OK;
}

/* ---- timers: binary heaps of (at, uid) with lazy invalidation ---- */

static bool timer_less(const queue_t *q, const timer_t_ *a, const timer_t_ *b)
{
	(void)q;
	if (a->at != b->at)
		return a->at < b->at;
	return a->wl < b->wl; /* ties are re-sorted by uid where order shows */
}

static int timer_push(queue_t *q, timers_t *t, int64_t at, uint32_t wl)
{
	size_t i;

	if (grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return GPUQ_ENOMEM;
	i = t->n++;
	t->v[i] = (timer_t_){at, wl, W(q, wl)->epoch};
	while (i > 0 && timer_less(q, &t->v[i], &t->v[(i - 1) / 2])) {
		timer_t_ x = t->v[i];

		t->v[i] = t->v[(i - 1) / 2];
		t->v[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
	return GPUQ_OK;
}

static void timer_pop(queue_t *q, timers_t *t)
{
	size_t i = 0;

	t->v[0] = t->v[--t->n];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < t->n && timer_less(q, &t->v[l], &t->v[m]))
			m = l;
		if (l + 1 < t->n && timer_less(q, &t->v[l + 1], &t->v[m]))
			m = l + 1;
		if (m == i)
			break;
		timer_t_ x = t->v[i];

		t->v[i] = t->v[m];
		t->v[m] = x;
		i = m;
	}
}

/* Drop stale entries at the top (the workload changed or died since). */
static void timer_clean(queue_t *q, timers_t *t)
{
	while (t->n) {
		const wl_t *w = W(q, t->v[0].wl);

		if (w->live && w->epoch == t->v[0].epoch)
			return;
		timer_pop(q, t);
	}
}

/* Timers refer to workload ids; a deleted id must not be reused while a
 * timer still names it with a matching epoch. Epochs keep counting across
 * reuse (wl slots are not zeroed), so a stale entry never matches. */

/* ================================================================== */
/* Quota arithmetic                                                    */
/* ================================================================== */

static void usage_add(queue_t *q, uint32_t cq, uint32_t slot, int64_t delta)
{
	cq_t *c = &q->cqs[cq];
	slot_t *s = &c->slots[slot];
	cslot_t *cs = &cohort_of(q, c)->slots[s->cslot];
	int64_t g = slot_guaranteed(s);

	cs->borrowed -= over(s->usage, g);
	s->usage += delta;
	cs->usage += delta;
	cs->borrowed += over(s->usage, g);
}

/* What one more workload could take from slot now. */
static int64_t slot_available(const queue_t *q, const cq_t *c, const slot_t *s)
{
	const cslot_t *cs = &cohort_of(q, c)->slots[s->cslot];
	int64_t g = slot_guaranteed(s);
	int64_t local = g > s->usage ? g - s->usage : 0;
	int64_t avail = local + (cs->lendable - cs->borrowed);

	if (cq_has_cohort(q, c) && s->blimit >= 0 && s->nominal + s->blimit - s->usage < avail)
		avail = s->nominal + s->blimit - s->usage;
	if (!cq_has_cohort(q, c) && s->nominal - s->usage < avail)
		avail = s->nominal - s->usage;
	return avail > 0 ? avail : 0;
}

/* The most this CQ could ever hold in slot, with the cohort empty. */
static int64_t slot_max_capacity(const queue_t *q, const cq_t *c, const slot_t *s)
{
	const cslot_t *cs = &cohort_of(q, c)->slots[s->cslot];
	int64_t m = slot_guaranteed(s) + cs->lendable;

	if (!cq_has_cohort(q, c))
		return s->nominal;
	if (s->blimit >= 0 && s->nominal + s->blimit < m)
		m = s->nominal + s->blimit;
	return m;
}

/* Why available is what it is (for explanations). */
static uint8_t slot_limit_kind(const queue_t *q, const cq_t *c, const slot_t *s)
{
	const cslot_t *cs = &cohort_of(q, c)->slots[s->cslot];
	int64_t g = slot_guaranteed(s);
	int64_t local = g > s->usage ? g - s->usage : 0;

	if (!cq_has_cohort(q, c))
		return WHY_QUOTA_NOMINAL;
	if (s->blimit >= 0 &&
	    s->nominal + s->blimit - s->usage < local + cs->lendable - cs->borrowed)
		return WHY_QUOTA_BLIMIT;
	return WHY_QUOTA_COHORT;
}

/* The slot of CQ c for (flavor, resource), or -1. */
static int64_t cq_slot_find(const cq_t *c, uint32_t flavor, uint32_t res)
{
	int g, r;
	const group_t *gr;

	if (res >= QUEUE_RESOURCES_MAX)
		return -1;
	g = (int)c->res_group[res];
	r = (int)c->res_cov[res];
	if (g < 0)
		return -1;
	gr = &c->groups[g];
	for (uint32_t f = 0; f < gr->n_flv; f++)
		if (gr->flv[f] == flavor)
			return gr->base + f * gr->n_cov + (uint32_t)r;
	return -1;
}

/* Charge (+1) or release (-1) a workload's assignment to its CQ usage. */
static void wl_charge(queue_t *q, uint32_t id, int sign)
{
	wl_t *w = W(q, id);

	for (uint32_t i = 0; i < w->n_asg; i++)
		usage_add(q, w->cq, w->asg[i].slot, sign * w->asg[i].a.amount);
}

/* Tenant's admitted amounts per resource (for the decay sample). */
static void lq_cur_add(queue_t *q, const wl_t *w, int sign)
{
	lq_t *l = &q->lqs[w->lq];

	if (!l->cur) {
		l->cur = calloc(QUEUE_RESOURCES_MAX, sizeof(*l->cur));
		if (!l->cur)
			return; /* the share then reads 0: a fairness hint, not quota */
	}
	for (uint32_t i = 0; i < w->n_asg; i++)
		l->cur[w->asg[i].a.resource] += sign * w->asg[i].a.amount;
}

/* A tenant's share now: max over resources of admitted / CQ nominal. */
static double lq_share_now(const queue_t *q, uint32_t lq)
{
	const lq_t *l = &q->lqs[lq];
	const cq_t *c = &q->cqs[l->cq];
	int64_t nom[QUEUE_RESOURCES_MAX] = {0};
	double best = 0.0;

	if (!l->cur)
		return 0.0;
	for (uint32_t s = 0; s < c->n_slots; s++)
		nom[c->slots[s].res] += c->slots[s].nominal;
	for (size_t r = 0; r < q->res_names.n; r++) {
		double v;

		if (!l->cur[r])
			continue;
		v = (double)l->cur[r] / (double)(nom[r] > 0 ? nom[r] : 1);
		if (v > best)
			best = v;
	}
	return best;
}

/* The share a workload's assignment adds to its tenant. */
static double wl_share(const queue_t *q, const wl_t *w)
{
	const cq_t *c = &q->cqs[w->cq];
	int64_t nom[QUEUE_RESOURCES_MAX] = {0}, amt[QUEUE_RESOURCES_MAX] = {0};
	double best = 0.0;

	for (uint32_t s = 0; s < c->n_slots; s++)
		nom[c->slots[s].res] += c->slots[s].nominal;
	for (uint32_t i = 0; i < w->n_asg; i++)
		amt[w->asg[i].a.resource] += w->asg[i].a.amount;
	for (size_t r = 0; r < q->res_names.n; r++) {
		double v = (double)amt[r] / (double)(nom[r] > 0 ? nom[r] : 1);

		if (v > best)
			best = v;
	}
	return best;
}

/* Weighted DRS of CQ c (ppm / weight), with `extra` needs added (may be NULL)
 * and workload `without` removed (QUEUE_NONE for none). */
static int64_t cq_share(const queue_t *q, uint32_t cq, const need_t *extra, size_t n_extra,
			uint32_t without)
{
	const cq_t *c = &q->cqs[cq];
	const cohort_t *h = cohort_of(q, c);
	fairshare_res_t r[QUEUE_RESOURCES_MAX];
	size_t n = q->res_names.n;

	memset(r, 0, sizeof(r));
	for (uint32_t s = 0; s < c->n_slots; s++) {
		r[c->slots[s].res].usage += c->slots[s].usage;
		r[c->slots[s].res].nominal += c->slots[s].nominal;
	}
	for (size_t s = 0; s < h->n_slots; s++)
		r[h->slots[s].res].lendable += h->slots[s].lendable;
	for (size_t i = 0; i < n_extra; i++)
		r[c->slots[extra[i].slot].res].usage += extra[i].val;
	if (without != QUEUE_NONE) {
		const wl_t *w = W(q, without);

		for (uint32_t i = 0; i < w->n_asg; i++)
			r[w->asg[i].a.resource].usage -= w->asg[i].a.amount;
	}
	return fairshare_weighted(fairshare_drs(r, n, NULL), c->weight);
}

/* ================================================================== */
/* Results of a call                                                   */
/* ================================================================== */

static void res_reset(queue_t *q)
{
	q->n_res_adm = q->n_res_asg = q->n_res_ev = q->n_res_ch = q->n_res_msg = 0;
}

/* Append a message; returns its offset, or SIZE_MAX on allocation failure. */
static size_t res_msgf(queue_t *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t res_msgf(queue_t *q, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	size_t off = q->n_res_msg, len;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	len = strlen(tmp) + 1;
	if (grow(&q->res_msg, &q->cap_res_msg, q->n_res_msg + len, 1))
		return SIZE_MAX;
	memcpy(q->res_msg + off, tmp, len);
	q->n_res_msg += len;
	return off;
}

static const char *const evict_names[] = {
    "InClusterQueue",	   "InCohortReclamation",
    "InCohortFairSharing", "InCohortReclaimWhileBorrowing",
    "PodsReadyTimeout",	   "ClusterQueueStopped",
};

static const char *const evict_why[] = {
    "prioritization in the ClusterQueue",
    "reclamation within the cohort",
    "Fair Sharing within the cohort",
    "reclamation within the cohort while borrowing",
};

static int emit_eviction(queue_t *q, uint32_t victim, uint32_t preemptor, int reason)
{
	queue_eviction_t *e;
	size_t off;

	if (grow(&q->res_ev, &q->cap_res_ev, q->n_res_ev + 1, sizeof(*q->res_ev)))
		return GPUQ_ENOMEM;
	if (preemptor != QUEUE_NONE)
		off = res_msgf(q, "Preempted to accommodate a workload (UID: %s) due to %s",
			       wl_uid(W(q, preemptor)), evict_why[reason]);
	else if (reason == QUEUE_EVICT_READY_TIMEOUT)
		off = res_msgf(q, "Exceeded the PodsReady timeout %" PRId64 " ms",
			       q->cfg.ready_timeout_ms);
	else
		off = res_msgf(q, "The ClusterQueue is stopped");
	if (off == SIZE_MAX)
		return GPUQ_ENOMEM;
	e = &q->res_ev[q->n_res_ev++];
	e->victim = victim;
	e->victim_uid = wl_uid(W(q, victim));
	e->preemptor = preemptor;
	e->preemptor_uid = preemptor != QUEUE_NONE ? wl_uid(W(q, preemptor)) : NULL;
	e->reason = (queue_evict_reason_t)reason;
	e->reason_name = evict_names[reason];
	e->message = (const char *)(uintptr_t)off; /* fixed up in res_finish */
	return GPUQ_OK;
}

static int emit_change(queue_t *q, uint32_t id)
{
	queue_pending_change_t *c;

	if (grow(&q->res_ch, &q->cap_res_ch, q->n_res_ch + 1, sizeof(*q->res_ch)))
		return GPUQ_ENOMEM;
	c = &q->res_ch[q->n_res_ch++];
	c->wl = id;
	c->uid = wl_uid(W(q, id));
	c->reason = (queue_wait_t)W(q, id)->wait;
	return GPUQ_OK;
}

static int emit_admission(queue_t *q, uint32_t id, bool borrows)
{
	const wl_t *w = W(q, id);
	queue_admission_t *a;

	if (grow(&q->res_adm, &q->cap_res_adm, q->n_res_adm + 1, sizeof(*q->res_adm)) ||
	    grow(&q->res_asg, &q->cap_res_asg, q->n_res_asg + w->n_asg, sizeof(*q->res_asg)))
		return GPUQ_ENOMEM;
	a = &q->res_adm[q->n_res_adm++];
	a->wl = id;
	a->uid = wl_uid(w);
	a->cq = w->cq;
	a->borrows = borrows;
	a->assign = (const queue_assign_t *)(uintptr_t)q->n_res_asg; /* fixed up later */
	a->n_assign = w->n_asg;
	for (uint32_t i = 0; i < w->n_asg; i++)
		q->res_asg[q->n_res_asg++] = w->asg[i].a;
	return GPUQ_OK;
}

static void res_finish(queue_t *q, queue_result_t *out)
{
	for (size_t i = 0; i < q->n_res_adm; i++)
		q->res_adm[i].assign =
		    q->res_asg ? q->res_asg + (uintptr_t)q->res_adm[i].assign : NULL;
	for (size_t i = 0; i < q->n_res_ev; i++)
		q->res_ev[i].message = q->res_msg + (uintptr_t)q->res_ev[i].message;
	if (!out)
		return;
	out->admissions = q->res_adm;
	out->n_admissions = q->n_res_adm;
	out->evictions = q->res_ev;
	out->n_evictions = q->n_res_ev;
	out->changes = q->res_ch;
	out->n_changes = q->n_res_ch;
}

/* ================================================================== */
/* Workload lifecycle                                                  */
/* ================================================================== */

static bool uid_eq(const void *ctx, uint32_t id, const void *key)
{
	const queue_t *q = ctx;

	return strcmp(wl_uid(W(q, id)), key) == 0;
}

int queue_workload_find(const queue_t *q, const char *uid, queue_wl_t *id)
{
	if (!uid)
		return GPUQ_ENOTFOUND;
	return map_find(&q->uids, hash_str(uid), uid_eq, q, uid, id) ? GPUQ_OK : GPUQ_ENOTFOUND;
}

static int lq_lookup(const queue_t *q, const char *ns, const char *name, uint32_t *id)
{
	char key[2 * QUEUE_NAME_MAX + 2];
	size_t a = strlen(ns), b = strlen(name);

	if (a + b + 2 > sizeof(key))
		return GPUQ_ENOTFOUND;
	memcpy(key, ns, a + 1);
	key[a] = '/';
	memcpy(key + a + 1, name, b + 1);
	return names_find(&q->lq_names, key, id);
}

static bool ready_watched(const queue_t *q, const wl_t *w)
{
	return q->cfg.ready_timeout_ms > 0 &&
	       (q->cfg.ready_scope == QUEUE_READY_ALL || w->gang_total > 0);
}

static bool gang_waiting(const wl_t *w)
{
	return w->gang_total > 0 && w->pods_present < w->gang_total;
}

/* Make a pending workload eligible (heap) or park it waiting for its gang. */
static int wl_enqueue(queue_t *q, uint32_t id)
{
	wl_t *w = W(q, id);

	w->why = WHY_NONE;
	if (gang_waiting(w)) {
		w->wait = QUEUE_WAIT_GANG;
		w->where = W_NONE;
		return GPUQ_OK;
	}
	w->wait = QUEUE_WAIT_NONE;
	if (wl_attach(q, id, W_HEAP))
		return GPUQ_ENOMEM;
	cohort_touch(q, q->cqs[w->cq].cohort, false);
	return GPUQ_OK;
}

static void wl_free(queue_t *q, uint32_t id)
{
	wl_t *w = W(q, id);

	for (uint8_t i = 0; i < w->n_ps; i++)
		tmpl_release(q, wl_ps(w)[i].tmpl);
	free(w->strs);
	free(w->psx);
	free(w->asg);
	w->strs = NULL;
	w->psx = NULL;
	w->asg = NULL;
	w->n_asg = 0;
	w->n_ps = 0;
	w->live = false;
	w->epoch++;
}

static int wl_spec_check(const queue_workload_spec_t *s, gpuq_diag_t *diag)
{
	int rc = check_name("workload uid", s->uid, false, diag);

	if (!rc)
		rc = check_name("workload namespace", s->namespace_, false, diag);
	if (!rc)
		rc = check_name("workload name", s->name, false, diag);
	if (!rc)
		rc = check_name("workload local_queue", s->local_queue, false, diag);
	if (rc)
		return rc;
	if (!s->n_podsets || s->n_podsets > QUEUE_PODSETS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "workload %s: needs 1..%d pod sets", s->uid,
				     QUEUE_PODSETS_MAX);
	for (size_t i = 0; i < s->n_podsets; i++)
		if (s->podsets[i].count < 1 || s->podsets[i].count > 1000000)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "workload %s: pod set %zu: count %d "
					     "outside 1..1000000",
					     s->uid, i, s->podsets[i].count);
	if (s->created_ms < -QUEUE_TIME_MAX || s->created_ms > QUEUE_TIME_MAX)
		return gpuq_diag_set(diag, GPUQ_ERANGE,
				     "workload %s: creation time %" PRId64 " out of range", s->uid,
				     s->created_ms);
	if (s->gang_total < 0 || s->gang_total > 1000000 || s->pods_present < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "workload %s: bad gang counts", s->uid);
	return GPUQ_OK;
}

/* Allocate a workload slot (epochs keep counting over reuse). */
static int wl_slot(queue_t *q, uint32_t *id)
{
	if (q->free_wls.n) {
		*id = q->free_wls.v[--q->free_wls.n];
		return GPUQ_OK;
	}
	if (q->n_wls >= UINT32_MAX - 1)
		return GPUQ_ELIMIT;
	if (grow(&q->wls, &q->cap_wls, q->n_wls + 1, sizeof(*q->wls)))
		return GPUQ_ENOMEM;
	memset(&q->wls[q->n_wls], 0, sizeof(wl_t));
	*id = (uint32_t)q->n_wls++;
	return GPUQ_OK;
}

/* A reference to the template of every pod set of s (all or none). */
static int wl_templates(queue_t *q, const queue_workload_spec_t *s, uint32_t *tids,
			gpuq_diag_t *diag)
{
	size_t built = 0;
	int rc = GPUQ_OK;

	for (; built < s->n_podsets; built++) {
		tmpl_t t;

		rc = tmpl_build(q, &s->podsets[built], &t, diag);
		if (!rc)
			rc = tmpl_intern(q, &t, &tids[built]);
		if (rc)
			break;
	}
	if (rc)
		while (built--)
			tmpl_release(q, tids[built]);
	return rc;
}

/* Create the workload object from a spec; pending, not yet enqueued. */
static int wl_create(queue_t *q, const queue_workload_spec_t *s, uint32_t *out, gpuq_diag_t *diag)
{
	uint32_t lq, id, tids[QUEUE_PODSETS_MAX];
	size_t lu, ln, lm, built = 0;
	uint32_t epoch;
	wl_t *w;
	int rc;

	rc = wl_spec_check(s, diag);
	if (rc)
		return rc;
	if (lq_lookup(q, s->namespace_, s->local_queue, &lq) != GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				     "workload %s: LocalQueue %s/%s not found", s->uid,
				     s->namespace_, s->local_queue);
	if (queue_workload_find(q, s->uid, &id) == GPUQ_OK)
		return gpuq_diag_set(diag, GPUQ_EEXIST, "workload uid %s already exists", s->uid);
	if (q->n_live >= q->cfg.workloads_max)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %u workloads",
				     q->cfg.workloads_max);
	rc = wl_templates(q, s, tids, diag);
	if (rc)
		return rc;
	built = s->n_podsets;
	if (map_reserve(&q->uids)) {
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	rc = wl_slot(q, &id);
	if (rc)
		goto fail;
	w = W(q, id);
	epoch = w->epoch;
	memset(w, 0, sizeof(*w));
	w->epoch = epoch + 1;
	lu = strlen(s->uid);
	ln = strlen(s->namespace_);
	lm = strlen(s->name);
	w->strs = malloc(lu + ln + lm + 3);
	if (s->n_podsets > 1)
		w->psx = calloc(s->n_podsets, sizeof(*w->psx));
	if (!w->strs || (s->n_podsets > 1 && !w->psx)) {
		free(w->strs);
		free(w->psx);
		w->strs = NULL;
		w->psx = NULL;
		(void)vpush(&q->free_wls, id);
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	memcpy(w->strs, s->uid, lu + 1);
	memcpy(w->strs + lu + 1, s->namespace_, ln + 1);
	memcpy(w->strs + lu + ln + 2, s->name, lm + 1);
	w->ns_off = (uint16_t)(lu + 1);
	w->name_off = (uint16_t)(lu + ln + 2);
	w->n_ps = (uint8_t)s->n_podsets;
	for (size_t i = 0; i < s->n_podsets; i++) {
		psref_t *p = s->n_podsets == 1 ? &w->ps1 : &w->psx[i];

		p->tmpl = tids[i];
		p->count = s->podsets[i].count;
	}
	w->lq = lq;
	w->cq = q->lqs[lq].cq;
	w->priority = s->priority;
	w->created = s->created_ms;
	w->gang_total = s->gang_total;
	w->pods_present = s->pods_present > s->gang_total ? s->gang_total : s->pods_present;
	w->admitted_ms = -1;
	w->state = QUEUE_WL_PENDING;
	w->why_res = w->why_flavor = QUEUE_NONE;
	w->live = true;
	w->uid_hash = hash_str(s->uid);
	map_put(&q->uids, w->uid_hash, id);
	q->n_live++;
	*out = id;
	return GPUQ_OK;
fail:
	while (built--)
		tmpl_release(q, tids[built]);
	return rc;
}

int queue_workload_add(queue_t *q, const queue_workload_spec_t *spec, int64_t now, queue_wl_t *id,
		       gpuq_diag_t *diag)
{
	uint32_t wid = QUEUE_NONE;
	wl_t *w;
	int rc;

	(void)now;
	rc = wl_create(q, spec, &wid, diag);
	if (rc)
		return rc;
	w = W(q, wid);
	q->lqs[w->lq].n_pending++;
	q->cqs[w->cq].n_pending++;
	rc = wl_enqueue(q, wid);
	if (rc) {
		q->lqs[w->lq].n_pending--;
		q->cqs[w->cq].n_pending--;
		map_del(&q->uids, w->uid_hash, wid);
		wl_free(q, wid);
		q->n_live--;
		(void)vpush(&q->free_wls, wid);
		return rc;
	}
	mark_wl(q, w);
	if (id)
		*id = wid;
	return GPUQ_OK;
}

static int find_live(const queue_t *q, const char *uid, uint32_t *id)
{
	return queue_workload_find(q, uid, id);
}

int queue_workload_pods_add(queue_t *q, const char *uid, int32_t n, int64_t now)
{
	uint32_t id;
	wl_t *w;

	(void)now;
	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (!w->gang_total || n < 0)
		return GPUQ_EINVAL;
	if (n > w->gang_total - w->pods_present)
		n = w->gang_total - w->pods_present;
	w->pods_present += n;
	mark_wl(q, w);
	if (w->state == QUEUE_WL_PENDING && w->wait == QUEUE_WAIT_GANG && !gang_waiting(w))
		return wl_enqueue(q, id);
	return GPUQ_OK;
}

int queue_workload_pods_ready(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;
	wl_t *w;

	(void)now;
	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (w->state != QUEUE_WL_ADMITTED)
		return GPUQ_EINVAL;
	w->ready = true;
	w->requeues = 0;
	w->epoch++; /* its Ready timer is void */
	mark_wl(q, w);
	return GPUQ_OK;
}

/* Undo what admission did to usage and containers (ADMITTED or EVICTING). */
static void wl_unadmit(queue_t *q, uint32_t id)
{
	wl_t *w = W(q, id);
	cq_t *c = &q->cqs[w->cq];

	if (w->state == QUEUE_WL_EVICTING) {
		for (uint32_t i = 0; i < w->n_asg; i++)
			c->slots[w->asg[i].slot].evicting -= w->asg[i].a.amount;
		cohort_of(q, c)->n_evicting--;
	}
	wl_charge(q, id, -1);
	lq_cur_add(q, w, -1);
	wl_detach(q, id);
	q->lqs[w->lq].n_admitted--;
	w->epoch++;
	cohort_touch(q, c->cohort, true);
	mark_cq(q, w->cq);
}

int queue_workload_finish(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;
	wl_t *w;
	lq_t *l;

	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (w->state != QUEUE_WL_ADMITTED && w->state != QUEUE_WL_EVICTING)
		return GPUQ_EINVAL;
	wl_unadmit(q, id);
	l = &q->lqs[w->lq];
	for (uint32_t i = 0; i < w->n_asg; i++)
		l->used_ms += (double)w->asg[i].a.amount *
			      (double)(now > w->admitted_ms ? now - w->admitted_ms : 0);
	l->ctr.finishes++;
	q->cqs[w->cq].ctr.finishes++;
	w->state = QUEUE_WL_FINISHED;
	w->wait = QUEUE_WAIT_NONE;
	mark_wl(q, w);
	mark_lq(q, w->lq);
	return GPUQ_OK;
}

static int64_t backoff_ms(const queue_t *q, uint32_t requeues)
{
	int64_t b = q->cfg.backoff_base_ms;

	for (uint32_t i = 1; i < requeues && b < q->cfg.backoff_max_ms; i++)
		b = b > INT64_MAX / 2 ? INT64_MAX : b * 2;
	return b < q->cfg.backoff_max_ms ? b : q->cfg.backoff_max_ms;
}

/* An EVICTING workload's pods are gone: free quota and requeue it. */
static int wl_release(queue_t *q, uint32_t id, int64_t now)
{
	wl_t *w = W(q, id);

	wl_unadmit(q, id);
	free(w->asg);
	w->asg = NULL;
	w->n_asg = 0;
	w->state = QUEUE_WL_PENDING;
	w->ready = false;
	q->lqs[w->lq].n_pending++;
	q->cqs[w->cq].n_pending++;
	mark_wl(q, w);
	mark_lq(q, w->lq);
	if (w->evict_reason == QUEUE_EVICT_READY_TIMEOUT) {
		w->requeues++;
		w->eligible_ms = now + backoff_ms(q, w->requeues);
		w->wait = QUEUE_WAIT_BACKOFF;
		w->where = W_BACKOFF;
		return timer_push(q, &q->backoff_timers, w->eligible_ms, id);
	}
	return wl_enqueue(q, id);
}

int queue_workload_evicted(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;

	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	if (W(q, id)->state != QUEUE_WL_EVICTING)
		return GPUQ_EINVAL;
	return wl_release(q, id, now);
}

int queue_workload_delete(queue_t *q, const char *uid, int64_t now)
{
	uint32_t id;
	wl_t *w;

	(void)now;
	if (find_live(q, uid, &id))
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	mark_wl(q, w);
	switch (w->state) {
	case QUEUE_WL_PENDING:
		wl_detach(q, id);
		q->lqs[w->lq].n_pending--;
		q->cqs[w->cq].n_pending--;
		/* it may have been a StrictFIFO head, or a preemptor holding room */
		cohort_touch(q, q->cqs[w->cq].cohort, w->wait == QUEUE_WAIT_PREEMPTING);
		break;
	case QUEUE_WL_ADMITTED:
	case QUEUE_WL_EVICTING:
		wl_unadmit(q, id);
		mark_lq(q, w->lq);
		break;
	default:
		break;
	}
	map_del(&q->uids, w->uid_hash, id);
	wl_free(q, id);
	q->n_live--;
	(void)vpush(&q->free_wls, id); /* a lost free id only costs memory */
	return GPUQ_OK;
}

/* Evict an admitted workload (reason queue_evict_reason_t). */
static int wl_evict(queue_t *q, uint32_t id, uint32_t preemptor, int reason)
{
	wl_t *w = W(q, id);
	cq_t *c = &q->cqs[w->cq];
	lq_t *l = &q->lqs[w->lq];
	int rc;

	rc = emit_eviction(q, id, preemptor, reason);
	if (rc)
		return rc;
	w->state = QUEUE_WL_EVICTING;
	w->evict_reason = (uint8_t)reason;
	w->epoch++;
	for (uint32_t i = 0; i < w->n_asg; i++)
		c->slots[w->asg[i].slot].evicting += w->asg[i].a.amount;
	cohort_of(q, c)->n_evicting++;
	c->ctr.evictions++;
	l->ctr.evictions++;
	if (reason <= QUEUE_EVICT_RECLAIM_WHILE_BORROWING) {
		w->preemptions++;
		c->ctr.preemptions++;
		l->ctr.preemptions++;
	}
	c->min_prio_ok = false;
	mark_wl(q, w);
	mark_cq(q, w->cq);
	mark_lq(q, w->lq);
	return GPUQ_OK;
}

/* ================================================================== */
/* Flavor assignment                                                   */
/* ================================================================== */

static int64_t need_val(const try_t *t, uint32_t slot)
{
	for (size_t i = 0; i < t->n_need; i++)
		if (t->need[i].slot == slot)
			return t->need[i].val;
	return 0;
}

static void need_add(try_t *t, uint32_t slot, int64_t val)
{
	for (size_t i = 0; i < t->n_need; i++) {
		if (t->need[i].slot == slot) {
			t->need[i].val += val;
			return;
		}
	}
	t->need[t->n_need].slot = slot;
	t->need[t->n_need].val = val;
	t->need[t->n_need].mode = M_FIT;
	t->n_need++;
}

static bool cq_can_preempt(const queue_t *q, const cq_t *c)
{
	return c->within != QUEUE_WITHIN_NEVER ||
	       (cq_has_cohort(q, c) && c->reclaim != QUEUE_RECLAIM_NEVER);
}

typedef struct {
	uint8_t why;	 /* WHY_* */
	uint32_t res;	 /* resource */
	uint32_t flavor; /* flavor */
	int64_t need;	 /* needed */
	int64_t free;	 /* free */
} why_t;

/* Mode of taking val from slot of CQ c. */
static int slot_mode(const queue_t *q, const cq_t *c, uint32_t slot, int64_t own, int64_t val,
		     why_t *y)
{
	const slot_t *s = &c->slots[slot];
	int64_t maxc = slot_max_capacity(q, c, s), avail;

	y->res = s->res;
	y->flavor = s->flavor;
	y->need = val;
	if (val > maxc) {
		/* never, unless only the earlier pod sets' share of this flavor
		 * is in the way: a different flavor choice for them may fit */
		y->why = WHY_ABOVE_MAX;
		y->free = maxc;
		return own > maxc ? M_NEVER : M_WAIT;
	}
	avail = slot_available(q, c, s);
	y->free = avail;
	if (val <= avail) {
		y->why = WHY_NONE;
		return M_FIT;
	}
	y->why = slot_limit_kind(q, c, s);
	if (cq_can_preempt(q, c) &&
	    (val <= s->nominal || c->borrow != QUEUE_BORROW_NEVER || q->cfg.fair_sharing))
		return M_PREEMPT;
	return M_WAIT;
}

static bool wl_uses(const wl_t *v, const cq_t *vc, uint32_t flavor, uint32_t res)
{
	for (uint32_t i = 0; i < v->n_asg; i++) {
		const slot_t *s = &vc->slots[v->asg[i].slot];

		if (s->flavor == flavor && s->res == res)
			return true;
	}
	return false;
}

static int32_t cq_min_prio(queue_t *q, cq_t *c)
{
	if (!c->min_prio_ok) {
		c->min_prio = INT32_MAX;
		for (size_t i = 0; i < c->adm.n; i++) {
			const wl_t *v = W(q, c->adm.v[i]);

			if (v->state == QUEUE_WL_ADMITTED && v->priority < c->min_prio)
				c->min_prio = v->priority;
		}
		c->min_prio_ok = true;
	}
	return c->min_prio;
}

/* A candidate victim by the CQ's policies (cycle admissions excluded). */
static bool own_candidate(const queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v)
{
	if (v->state != QUEUE_WL_ADMITTED || v->admit_cycle == q->cycles)
		return false;
	if (v->priority < w->priority)
		return true;
	return c->within == QUEUE_WITHIN_LOWER_OR_NEWER && v->priority == w->priority &&
	       v->created > w->created;
}

static bool cohort_candidate(const queue_t *q, const cq_t *c, const wl_t *w, const wl_t *v)
{
	if (v->state != QUEUE_WL_ADMITTED || v->admit_cycle == q->cycles)
		return false;
	return c->reclaim == QUEUE_RECLAIM_ANY || v->priority < w->priority;
}

/* Rank a flavor whose slot needs preemption: M_RECLAIM when a borrowing CQ
 * of the cohort has a candidate, M_PREEMPT when only its own CQ has, else
 * M_WAIT (a flavor that needs preemption but has no candidates is passed
 * over). */
static int preempt_rank(queue_t *q, uint32_t wid, uint32_t slot)
{
	const wl_t *w = W(q, wid);
	cq_t *c = &q->cqs[w->cq];
	const slot_t *s = &c->slots[slot];
	const cohort_t *h = cohort_of(q, c);
	bool own = false;

	if (cq_has_cohort(q, c) && c->reclaim != QUEUE_RECLAIM_NEVER) {
		for (size_t k = 0; k < h->cqs.n; k++) {
			const cq_t *o = &q->cqs[h->cqs.v[k]];
			int64_t os;

			if (o == c)
				continue;
			os = cq_slot_find(o, s->flavor, s->res);
			if (os < 0 || o->slots[os].usage <= o->slots[os].nominal)
				continue;
			for (size_t i = 0; i < o->adm.n; i++) {
				const wl_t *v = W(q, o->adm.v[i]);

				if (cohort_candidate(q, c, w, v) &&
				    wl_uses(v, o, s->flavor, s->res))
					return M_RECLAIM;
			}
		}
	}
	if (c->within != QUEUE_WITHIN_NEVER && w->priority >= cq_min_prio(q, c)) {
		for (size_t i = 0; i < c->adm.n && !own; i++) {
			const wl_t *v = W(q, c->adm.v[i]);

			own = own_candidate(q, c, w, v) && wl_uses(v, c, s->flavor, s->res);
		}
	}
	return own ? M_PREEMPT : M_WAIT;
}

/* Assign flavors to pod set p's resources of group g; returns the mode. */
static int assign_group(queue_t *q, uint32_t wid, size_t p, uint32_t g, try_t *t)
{
	const wl_t *w = W(q, wid);
	cq_t *c = &q->cqs[w->cq];
	const group_t *gr = &c->groups[g];
	const psref_t *ps = &wl_ps(w)[p];
	const tmpl_t *tm = &q->tmpls[ps->tmpl];
	uint32_t ri[QUEUE_PODSET_RES_MAX], n_ri = 0;
	int best_m = M_NEVER + 1, best_f = -1;
	why_t best_y = {WHY_NO_FLAVOR, QUEUE_NONE, QUEUE_NONE, 0, 0};

	for (uint32_t i = 0; i < tm->n_req; i++)
		if (tm->amt[i] > 0 && c->res_group[tm->res[i]] == (int8_t)g)
			ri[n_ri++] = i;
	if (!n_ri)
		return M_FIT;
	best_y.res = tm->res[ri[0]];
	for (uint32_t f = 0; f < gr->n_flv; f++) {
		int fm = M_FIT;
		why_t fy = {WHY_NONE, QUEUE_NONE, QUEUE_NONE, 0, 0};

		if (!tmpl_flavor_ok(q, ps->tmpl, gr->flv[f]))
			continue;
		for (uint32_t k = 0; k < n_ri; k++) {
			uint32_t r = ri[k];
			uint32_t slot = gr->base + f * gr->n_cov + (uint32_t)c->res_cov[tm->res[r]];
			int64_t own = (int64_t)ps->count * tm->amt[r];
			int64_t val = own + need_val(t, slot);
			why_t y;
			int m = slot_mode(q, c, slot, own, val, &y);

			if (m == M_PREEMPT)
				m = preempt_rank(q, wid, slot);
			if (m == M_WAIT && y.why == WHY_NONE)
				y.why = WHY_NO_CANDIDATES;
			if (m > fm || (m != M_FIT && fy.why == WHY_NONE)) {
				if (m > fm)
					fm = m;
				fy = y;
			}
		}
		if (fm < best_m) {
			best_m = fm;
			best_f = (int)f;
			best_y = fy;
		}
		if (fm == M_FIT)
			break;
	}
	if (best_f < 0) {
		t->why = WHY_NO_FLAVOR;
		t->why_res = best_y.res;
		t->why_flavor = QUEUE_NONE;
		t->why_need = t->why_free = 0;
		return M_NEVER;
	}
	for (uint32_t k = 0; k < n_ri; k++) {
		uint32_t r = ri[k];
		uint32_t slot =
		    gr->base + (uint32_t)best_f * gr->n_cov + (uint32_t)c->res_cov[tm->res[r]];
		asg_t *a = &t->asg[t->n_asg++];

		a->a.podset = (uint16_t)p;
		a->a.resource = tm->res[r];
		a->a.flavor = gr->flv[best_f];
		a->a.amount = (int64_t)ps->count * tm->amt[r];
		a->slot = slot;
		need_add(t, slot, a->a.amount);
	}
	if (best_m > t->mode || (best_m != M_FIT && t->why == WHY_NONE)) {
		t->why = best_y.why;
		t->why_res = best_y.res;
		t->why_flavor = best_y.flavor;
		t->why_need = best_y.need;
		t->why_free = best_y.free;
	}
	return best_m;
}

static bool nofit_hit(const queue_t *q, cq_t *c, const wl_t *w, try_t *t)
{
	if (w->n_ps != 1 || cq_can_preempt(q, c))
		return false;
	for (uint32_t i = 0; i < c->n_nofit && i < NOFIT_CACHE; i++) {
		const nofit_t *n = &c->nofit[i];

		if (n->tmpl != w->ps1.tmpl || w->ps1.count < n->count)
			continue;
		t->mode = n->mode;
		t->why = n->why;
		t->why_res = n->why_res;
		t->why_flavor = n->why_flavor;
		t->why_need = n->why_need;
		t->why_free = n->why_free;
		return true;
	}
	return false;
}

static void nofit_put(const queue_t *q, cq_t *c, const wl_t *w, const try_t *t)
{
	nofit_t *n;

	if (w->n_ps != 1 || t->mode < M_WAIT || cq_can_preempt(q, c))
		return;
	n = &c->nofit[c->n_nofit++ % NOFIT_CACHE];
	n->tmpl = w->ps1.tmpl;
	n->count = w->ps1.count;
	n->mode = (uint8_t)t->mode;
	n->why = t->why;
	n->why_res = t->why_res;
	n->why_flavor = t->why_flavor;
	n->why_need = t->why_need;
	n->why_free = t->why_free;
}

static void try_assign_full(queue_t *q, uint32_t wid, try_t *t);

/* Assign flavors to every pod set of wid against the current usage (only
 * inside a cohort cycle: it consults the cycle's no-fit cache). */
static void try_assign(queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = W(q, wid);
	cq_t *c = &q->cqs[w->cq];

	t->borrows = false;
	t->n_asg = t->n_need = 0;
	if (nofit_hit(q, c, w, t))
		return;
	try_assign_full(q, wid, t);
	nofit_put(q, c, w, t);
}

static void try_assign_full(queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];

	t->mode = M_FIT;
	t->borrows = false;
	t->n_asg = t->n_need = 0;
	t->why = WHY_NONE;
	t->why_res = t->why_flavor = QUEUE_NONE;
	t->why_need = t->why_free = 0;
	for (size_t p = 0; p < w->n_ps; p++) {
		const tmpl_t *tm = &q->tmpls[wl_ps(w)[p].tmpl];

		for (uint32_t i = 0; i < tm->n_req; i++) {
			if (tm->amt[i] > 0 && c->res_group[tm->res[i]] < 0) {
				t->mode = M_NEVER;
				t->why = WHY_NOT_COVERED;
				t->why_res = tm->res[i];
				return;
			}
		}
		for (uint32_t g = 0; g < c->n_groups; g++) {
			int m = assign_group(q, wid, p, g, t);

			if (m > t->mode)
				t->mode = m;
			if (m == M_NEVER)
				return;
		}
	}
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		t->need[i].mode = t->need[i].val <= slot_available(q, c, s) ? M_FIT : M_PREEMPT;
		if (s->usage + t->need[i].val > s->nominal)
			t->borrows = true;
	}
}

/* ================================================================== */
/* Preemption                                                          */
/* ================================================================== */

static bool need_fits(const queue_t *q, uint32_t cq, const try_t *t, bool allow_borrow)
{
	const cq_t *c = &q->cqs[cq];

	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		if (!allow_borrow && s->usage + t->need[i].val > s->nominal)
			return false;
		if (t->need[i].val > slot_available(q, c, s))
			return false;
	}
	return true;
}

/* Whether CQ o is above nominal in a (flavor, resource) the preemptor
 * needs preemption for. */
static bool cq_borrowing_in(const queue_t *q, const cq_t *o, const cq_t *c, const try_t *t)
{
	(void)q;
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];
		int64_t os;

		if (t->need[i].mode == M_FIT)
			continue;
		os = cq_slot_find(o, s->flavor, s->res);
		if (os >= 0 && o->slots[os].usage > o->slots[os].nominal)
			return true;
	}
	return false;
}

static bool uses_needed(const queue_t *q, const wl_t *v, const cq_t *c, const try_t *t)
{
	const cq_t *vc = &q->cqs[v->cq];

	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		if (t->need[i].mode != M_FIT && wl_uses(v, vc, s->flavor, s->res))
			return true;
	}
	return false;
}

/* Under nominal (usage < nominal) in every slot needing preemption. */
static bool under_nominal(const queue_t *q, const cq_t *c, const try_t *t)
{
	(void)q;
	for (size_t i = 0; i < t->n_need; i++) {
		const slot_t *s = &c->slots[t->need[i].slot];

		if (t->need[i].mode != M_FIT && s->usage >= s->nominal)
			return false;
	}
	return true;
}

/* Victim order: other CQs first, lower priority, most recently admitted, uid. */
static int cand_cmp(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	const uint32_t *ids = pa, *idb = pb;
	const wl_t *a = W(q, ids[0]), *b = W(q, idb[0]);
	uint32_t own = ids[1];
	bool ao = a->cq == own, bo = b->cq == own;

	if (ao != bo)
		return ao ? 1 : -1;
	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	if (a->admitted_ms != b->admitted_ms)
		return a->admitted_ms > b->admitted_ms ? -1 : 1;
	return strcmp(wl_uid(a), wl_uid(b));
}

/* Collect candidates into q->cands as pairs (wl, preemptor CQ), sorted. */
static int find_candidates(queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	const cohort_t *h = cohort_of(q, c);

	q->cands.n = 0;
	if (c->within != QUEUE_WITHIN_NEVER) {
		for (size_t i = 0; i < c->adm.n; i++) {
			const wl_t *v = W(q, c->adm.v[i]);

			if (own_candidate(q, c, w, v) && uses_needed(q, v, c, t))
				if (vpush(&q->cands, c->adm.v[i]) || vpush(&q->cands, w->cq))
					return GPUQ_ENOMEM;
		}
	}
	if (cq_has_cohort(q, c) && c->reclaim != QUEUE_RECLAIM_NEVER) {
		for (size_t k = 0; k < h->cqs.n; k++) {
			const cq_t *o = &q->cqs[h->cqs.v[k]];

			if (o == c || !cq_borrowing_in(q, o, c, t))
				continue;
			for (size_t i = 0; i < o->adm.n; i++) {
				const wl_t *v = W(q, o->adm.v[i]);

				if (cohort_candidate(q, c, w, v) && uses_needed(q, v, c, t))
					if (vpush(&q->cands, o->adm.v[i]) ||
					    vpush(&q->cands, w->cq))
						return GPUQ_ENOMEM;
			}
		}
	}
	if (q->cands.n > 2)
		qsort_r(q->cands.v, q->cands.n / 2, 2 * sizeof(uint32_t), cand_cmp, q);
	return GPUQ_OK;
}

/* q->targets holds pairs (victim, reason). */
static int target_push(queue_t *q, uint32_t v, int reason)
{
	if (vpush(&q->targets, v) || vpush(&q->targets, (uint32_t)reason))
		return GPUQ_ENOMEM;
	return GPUQ_OK;
}

static void targets_restore(queue_t *q)
{
	for (size_t i = 0; i < q->targets.n; i += 2)
		wl_charge(q, q->targets.v[i], +1);
}

/* Re-add removed victims in reverse order (all but the last), keeping out
 * only those whose return breaks the fit. Then restore usage. */
static void targets_fill_back(queue_t *q, uint32_t cq, const try_t *t, bool allow)
{
	size_t n = q->targets.n / 2;

	for (size_t i = n - 1; i-- > 0;) {
		uint32_t v = q->targets.v[2 * i];

		wl_charge(q, v, +1);
		if (need_fits(q, cq, t, allow)) {
			memmove(&q->targets.v[2 * i], &q->targets.v[2 * i + 2],
				(q->targets.n - 2 * i - 2) * sizeof(uint32_t));
			q->targets.n -= 2;
		} else {
			wl_charge(q, v, -1);
		}
	}
	targets_restore(q);
}

/* Kueue's minimalPreemptions over candidate pairs cands[0..n) (filtered by
 * skip_other: drop other-CQ candidates at or above *thr). Fills q->targets;
 * returns true when the preemptor then fits. Usage is left unchanged. */
static bool minimal_set(queue_t *q, uint32_t wid, const try_t *t, bool only_own, bool allow,
			const int32_t *thr, bool filter_thr)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	bool fits = false;

	q->targets.n = 0;
	for (size_t i = 0; i < q->cands.n; i += 2) {
		uint32_t v = q->cands.v[i];
		const wl_t *vw = W(q, v);
		int reason = QUEUE_EVICT_IN_CQ;

		if (vw->cq != w->cq) {
			if (only_own)
				continue;
			if (filter_thr && thr && vw->priority >= *thr)
				continue;
			if (!cq_borrowing_in(q, &q->cqs[vw->cq], c, t))
				continue;
			reason = QUEUE_EVICT_RECLAIM;
			if (thr && vw->priority >= *thr)
				allow = false;
			else if (thr)
				reason = QUEUE_EVICT_RECLAIM_WHILE_BORROWING;
		}
		wl_charge(q, v, -1);
		if (target_push(q, v, reason)) {
			wl_charge(q, v, +1);
			targets_restore(q);
			q->targets.n = 0;
			return false;
		}
		if (need_fits(q, w->cq, t, allow)) {
			fits = true;
			break;
		}
	}
	if (!fits) {
		targets_restore(q);
		q->targets.n = 0;
		return false;
	}
	targets_fill_back(q, w->cq, t, allow);
	return true;
}

/* Fair-sharing preemption: take from the CQ with the highest share first;
 * from another CQ only if the preemptor's share with the workload stays <=
 * that CQ's share without the victim (or the victim is below the
 * borrowWithinCohort threshold). */
static bool fair_set(queue_t *q, uint32_t wid, const try_t *t, const int32_t *thr)
{
	const wl_t *w = W(q, wid);
	size_t n = q->cands.n / 2;
	int64_t pre = cq_share(q, w->cq, t->need, t->n_need, QUEUE_NONE);
	uint8_t *state = calloc(n ? n : 1, 1); /* 0 open, 1 taken, 2 refused */
	bool fits = false;

	q->targets.n = 0;
	if (!state)
		return false;
	while (!fits) {
		uint32_t best_cq = QUEUE_NONE;
		int64_t best = -1;
		bool took = false;

		for (size_t i = 0; i < n; i++) {
			uint32_t vc = W(q, q->cands.v[2 * i])->cq;
			int64_t s;

			if (state[i] || vc == best_cq)
				continue;
			s = cq_share(q, vc, NULL, 0, QUEUE_NONE);
			if (s > best || (s == best && vc < best_cq)) {
				best = s;
				best_cq = vc;
			}
		}
		if (best_cq == QUEUE_NONE)
			break;
		for (size_t i = 0; i < n && !took; i++) {
			uint32_t v = q->cands.v[2 * i];
			const wl_t *vw = W(q, v);
			int reason = QUEUE_EVICT_IN_CQ;

			if (state[i] || vw->cq != best_cq)
				continue;
			if (vw->cq != w->cq) {
				bool below = thr && vw->priority < *thr;

				if (!below && pre > cq_share(q, vw->cq, NULL, 0, v)) {
					state[i] = 2;
					continue;
				}
				reason = below ? QUEUE_EVICT_RECLAIM_WHILE_BORROWING
					       : QUEUE_EVICT_FAIR_SHARING;
			}
			state[i] = 1;
			wl_charge(q, v, -1);
			if (target_push(q, v, reason)) {
				wl_charge(q, v, +1);
				goto fail;
			}
			took = true;
			fits = need_fits(q, w->cq, t, true);
		}
	}
	free(state);
	if (!fits) {
		targets_restore(q);
		q->targets.n = 0;
		return false;
	}
	targets_fill_back(q, w->cq, t, true);
	return true;
fail:
	free(state);
	targets_restore(q);
	q->targets.n = 0;
	return false;
}

/* Kueue's getTargets: fills q->targets, returns true when a victim set
 * exists that makes wid fit. */
static bool preemption_targets(queue_t *q, uint32_t wid, const try_t *t)
{
	const wl_t *w = W(q, wid);
	const cq_t *c = &q->cqs[w->cq];
	size_t n_own = 0;
	bool borrow_within = c->borrow == QUEUE_BORROW_LOWER_PRIORITY;
	int32_t thr = w->priority;

	if (find_candidates(q, wid, t) || !q->cands.n)
		return false;
	for (size_t i = 0; i < q->cands.n; i += 2)
		n_own += W(q, q->cands.v[i])->cq == w->cq;
	if (n_own == q->cands.n / 2)
		return minimal_set(q, wid, t, true, true, NULL, false);
	if (borrow_within && c->has_thr && c->thr < thr)
		thr = c->thr + 1;
	if (q->cfg.fair_sharing)
		return fair_set(q, wid, t, borrow_within ? &thr : NULL);
	if (borrow_within)
		return minimal_set(q, wid, t, false, true, &thr, !under_nominal(q, c, t));
	if (under_nominal(q, c, t) && minimal_set(q, wid, t, false, false, NULL, false))
		return true;
	return minimal_set(q, wid, t, true, true, NULL, false);
}

/* Charge (+1) or release (-1) every EVICTING workload of a cohort. */
static void cohort_evicting_charge(queue_t *q, const cohort_t *h, int sign)
{
	for (size_t k = 0; k < h->cqs.n; k++) {
		const cq_t *o = &q->cqs[h->cqs.v[k]];

		for (size_t i = 0; i < o->adm.n; i++)
			if (W(q, o->adm.v[i])->state == QUEUE_WL_EVICTING)
				wl_charge(q, o->adm.v[i], sign);
	}
}

/* The assignment a preemptor chose when it picked its victims (kept in its
 * asg while it waits), as a try. */
static void try_from_plan(const queue_t *q, uint32_t wid, try_t *t)
{
	const wl_t *w = W(q, wid);

	(void)q;
	t->mode = M_FIT;
	t->borrows = false;
	t->n_asg = t->n_need = 0;
	t->why = WHY_NONE;
	t->why_res = t->why_flavor = QUEUE_NONE;
	t->why_need = t->why_free = 0;
	for (uint32_t i = 0; i < w->n_asg; i++) {
		t->asg[t->n_asg++] = w->asg[i];
		need_add(t, w->asg[i].slot, w->asg[i].a.amount);
	}
}

/* Whether the plan in t fits once every EVICTING workload of the cohort is
 * gone (its victims are still releasing their quota). */
static bool plan_fits_after_evictions(queue_t *q, uint32_t wid, const try_t *t)
{
	const cohort_t *h = cohort_of(q, &q->cqs[W(q, wid)->cq]);
	bool fits;

	cohort_evicting_charge(q, h, -1);
	fits = need_fits(q, W(q, wid)->cq, t, true);
	cohort_evicting_charge(q, h, +1);
	return fits;
}

/* Remember the assignment a preemptor preempts for. */
static void plan_keep(queue_t *q, uint32_t wid, const try_t *t)
{
	wl_t *w = W(q, wid);
	asg_t *a = t->n_asg ? malloc(t->n_asg * sizeof(*a)) : NULL;

	free(w->asg);
	w->asg = NULL;
	w->n_asg = 0;
	if (!a)
		return; /* without a plan it simply re-plans next cycle */
	memcpy(a, t->asg, t->n_asg * sizeof(*a));
	w->asg = a;
	w->n_asg = (uint32_t)t->n_asg;
}

static void plan_drop(queue_t *q, uint32_t wid)
{
	wl_t *w = W(q, wid);

	free(w->asg);
	w->asg = NULL;
	w->n_asg = 0;
}

/* ================================================================== */
/* The admission cycle                                                 */
/* ================================================================== */

static double lq_key(const queue_t *q, uint32_t lq)
{
	return fairshare_tenant_key(q->lqs[lq].usage, q->lqs[lq].weight);
}

/* Which LocalQueue of CQ c has the next workload: priority desc, tenant key
 * asc, creation asc, uid asc. QUEUE_NONE when all are empty. */
static uint32_t cq_next_lq(const queue_t *q, const cq_t *c)
{
	uint32_t best = QUEUE_NONE;
	double best_key = 0.0;

	for (size_t i = 0; i < c->lqs.n; i++) {
		uint32_t l = c->lqs.v[i];
		double k;
		const wl_t *a, *b;

		if (!q->lqs[l].heap.n)
			continue;
		k = lq_key(q, l);
		if (best == QUEUE_NONE) {
			best = l;
			best_key = k;
			continue;
		}
		a = W(q, q->lqs[l].heap.v[0]);
		b = W(q, q->lqs[best].heap.v[0]);
		if (c->strategy == QUEUE_BEST_EFFORT_FIFO && wl_planned(a) != wl_planned(b)) {
			if (wl_planned(a)) {
				best = l;
				best_key = k;
			}
			continue;
		}
		if (a->priority != b->priority) {
			if (a->priority > b->priority) {
				best = l;
				best_key = k;
			}
			continue;
		}
		if (k != best_key) {
			if (k < best_key) {
				best = l;
				best_key = k;
			}
			continue;
		}
		if (wl_cmp(q, q->lqs[l].heap.v[0], q->lqs[best].heap.v[0]) < 0) {
			best = l;
			best_key = k;
		}
	}
	return best;
}

static bool head_less(const queue_t *q, const cqhead_t *a, const cqhead_t *b)
{
	const wl_t *x = W(q, a->wl), *y = W(q, b->wl);
	int c;

	if (a->hopeless != b->hopeless)
		return a->hopeless;
	if (wl_planned(x) != wl_planned(y))
		return wl_planned(x); /* the quota its victims free is for it */
	if (q->cfg.fair_sharing) {
		if (a->share != b->share)
			return a->share < b->share;
	} else if (a->borrows != b->borrows) {
		return !a->borrows;
	}
	if (x->priority != y->priority)
		return x->priority > y->priority;
	if (x->created != y->created)
		return x->created < y->created;
	c = strcmp(wl_uid(x), wl_uid(y));
	if (c)
		return c < 0;
	return a->cq < b->cq;
}

static void heads_push(queue_t *q, const cqhead_t *e)
{
	size_t i = q->n_heads++;

	q->heads[i] = *e;
	while (i > 0 && head_less(q, &q->heads[i], &q->heads[(i - 1) / 2])) {
		cqhead_t x = q->heads[i];

		q->heads[i] = q->heads[(i - 1) / 2];
		q->heads[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static cqhead_t heads_pop(queue_t *q)
{
	cqhead_t top = q->heads[0];
	size_t i = 0;

	q->heads[0] = q->heads[--q->n_heads];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < q->n_heads && head_less(q, &q->heads[l], &q->heads[m]))
			m = l;
		if (l + 1 < q->n_heads && head_less(q, &q->heads[l + 1], &q->heads[m]))
			m = l + 1;
		if (m == i)
			break;
		cqhead_t x = q->heads[i];

		q->heads[i] = q->heads[m];
		q->heads[m] = x;
		i = m;
	}
	return top;
}

/* Take CQ cq's next workload out of its LocalQueue and rank it. */
static void fetch_head(queue_t *q, uint32_t cq)
{
	cq_t *c = &q->cqs[cq];
	uint32_t l = cq_next_lq(q, c), wid;
	try_t *t = &q->scratch_try;
	cqhead_t e;

	if (l == QUEUE_NONE)
		return;
	wid = q->lqs[l].heap.v[0];
	heap_remove(q, &q->lqs[l].heap, 0);
	W(q, wid)->where = W_FLIGHT;
	try_assign(q, wid, t);
	e.cq = cq;
	e.wl = wid;
	e.gen = cohort_of(q, c)->gen;
	e.borrows = t->borrows;
	e.hopeless = t->mode >= M_WAIT;
	e.share = q->cfg.fair_sharing ? cq_share(q, cq, t->need, t->n_need, QUEUE_NONE) : 0;
	heads_push(q, &e);
}

/* Set a pending workload's wait reason and explanation; report the change
 * when it is newly set aside. */
static void set_wait(queue_t *q, uint32_t wid, int wait, const try_t *t)
{
	wl_t *w = W(q, wid);
	/* the free amount is not compared: explanations read it live */
	bool changed = w->wait != wait || w->why != t->why || w->why_res != t->why_res ||
		       w->why_flavor != t->why_flavor || w->why_need != t->why_need;

	if (!changed)
		return;
	if (w->wait != wait && (wait == QUEUE_WAIT_QUOTA || wait == QUEUE_WAIT_NO_FIT)) {
		w->wait = (uint8_t)wait;
		(void)emit_change(q, wid); /* lost only on allocation failure */
	}
	w->wait = (uint8_t)wait;
	w->why = t->why;
	w->why_res = t->why_res;
	w->why_flavor = t->why_flavor;
	w->why_need = t->why_need;
	w->why_free = t->why_free;
	mark_wl(q, w);
}

/* Hold a preemptor's usage for the rest of this cycle. */
static int hold(queue_t *q, uint32_t cq, const try_t *t)
{
	if (grow(&q->held, &q->cap_held, q->n_held + t->n_need, sizeof(*q->held)) ||
	    grow(&q->held_cq, &q->cap_held_cq, q->n_held + t->n_need, sizeof(*q->held_cq)))
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < t->n_need; i++) {
		q->held[q->n_held] = t->need[i];
		q->held_cq[q->n_held++] = cq;
		usage_add(q, cq, t->need[i].slot, t->need[i].val);
	}
	return GPUQ_OK;
}

static int admit(queue_t *q, uint32_t wid, const try_t *t, int64_t now)
{
	wl_t *w = W(q, wid);
	cq_t *c = &q->cqs[w->cq];
	lq_t *l = &q->lqs[w->lq];
	asg_t *a = NULL;

	if (t->n_asg) {
		a = malloc(t->n_asg * sizeof(*a));
		if (!a)
			return GPUQ_ENOMEM;
		memcpy(a, t->asg, t->n_asg * sizeof(*a));
	}
	free(w->asg);
	w->asg = a;
	w->n_asg = (uint32_t)t->n_asg;
	if (emit_admission(q, wid, t->borrows)) {
		free(w->asg);
		w->asg = NULL;
		w->n_asg = 0;
		return GPUQ_ENOMEM;
	}
	if (wl_attach(q, wid, W_ADMITTED)) {
		q->n_res_adm--;
		free(w->asg);
		w->asg = NULL;
		w->n_asg = 0;
		return GPUQ_ENOMEM;
	}
	wl_charge(q, wid, +1);
	w->state = QUEUE_WL_ADMITTED;
	w->wait = QUEUE_WAIT_NONE;
	w->why = WHY_NONE;
	w->admitted_ms = now;
	w->admit_cycle = q->cycles;
	w->ready = false;
	w->epoch++;
	c->n_pending--;
	c->ctr.admissions++;
	l->n_pending--;
	l->n_admitted++;
	l->ctr.admissions++;
	lq_cur_add(q, w, +1);
	l->usage += fairshare_entry_penalty(q->cfg.tenant_sample_ms, q->cfg.tenant_half_life_ms) *
		    wl_share(q, w);
	cohort_of(q, c)->gen++;
	if (ready_watched(q, w))
		(void)timer_push(q, &q->ready_timers, now + q->cfg.ready_timeout_ms, wid);
	mark_wl(q, w);
	mark_cq(q, w->cq);
	mark_lq(q, w->lq);
	return GPUQ_OK;
}

/* Keep a popped workload pending (re-queued at the end of the cycle). */
static int keep(queue_t *q, uint32_t wid)
{
	return vpush(&q->keep, wid);
}

/* Handle one head; returns GPUQ_ENOMEM only when it could not be kept. */
static int process_head(queue_t *q, const cqhead_t *e, int64_t now)
{
	uint32_t wid = e->wl;
	cq_t *c = &q->cqs[e->cq];
	try_t *t = &q->scratch_try;
	bool strict = c->strategy == QUEUE_STRICT_FIFO;

	if (W(q, wid)->wait == QUEUE_WAIT_PREEMPTING && W(q, wid)->n_asg) {
		/* a preemptor keeps the flavors it preempted for */
		try_from_plan(q, wid, t);
		if (need_fits(q, e->cq, t, true)) {
			for (size_t i = 0; i < t->n_need; i++)
				if (c->slots[t->need[i].slot].usage + t->need[i].val >
				    c->slots[t->need[i].slot].nominal)
					t->borrows = true;
			if (admit(q, wid, t, now) == GPUQ_OK)
				return GPUQ_OK;
			return keep(q, wid);
		}
		if (plan_fits_after_evictions(q, wid, t)) {
			(void)hold(q, e->cq, t);
			c->blocked = strict;
			return keep(q, wid);
		}
		plan_drop(q, wid);
	}
	try_assign(q, wid, t);
	if (t->mode == M_FIT) {
		if (admit(q, wid, t, now) == GPUQ_OK)
			return GPUQ_OK;
		return keep(q, wid);
	}
	if (t->mode == M_RECLAIM || t->mode == M_PREEMPT) {
		if (cohort_of(q, c)->n_evicting && plan_fits_after_evictions(q, wid, t)) {
			/* quota already being freed covers it: wait, evict no more */
			set_wait(q, wid, QUEUE_WAIT_PREEMPTING, t);
			plan_keep(q, wid, t);
			(void)hold(q, e->cq, t);
			c->blocked = strict;
			return keep(q, wid);
		}
		if (preemption_targets(q, wid, t)) {
			for (size_t i = 0; i < q->targets.n; i += 2) {
				uint32_t v = q->targets.v[i];

				if (wl_evict(q, v, wid, (int)q->targets.v[i + 1]) == GPUQ_OK &&
				    q->cfg.release_on_evict)
					(void)vpush(&q->release, v);
			}
			cohort_of(q, c)->gen++;
			set_wait(q, wid, QUEUE_WAIT_PREEMPTING, t);
			plan_keep(q, wid, t);
			(void)hold(q, e->cq, t);
			c->blocked = strict;
			return keep(q, wid);
		}
		if (t->why == WHY_NONE)
			t->why = WHY_NO_CANDIDATES;
	}
	if (t->mode == M_NEVER) {
		set_wait(q, wid, QUEUE_WAIT_NO_FIT, t);
		if (wl_attach(q, wid, W_ASIDE))
			return keep(q, wid);
		return GPUQ_OK;
	}
	/* this cycle's admissions were no preemption candidates: look again */
	if (cq_can_preempt(q, c))
		q->retry_preempt = true;
	set_wait(q, wid, QUEUE_WAIT_QUOTA, t);
	if (strict) {
		c->blocked = true;
		return keep(q, wid);
	}
	if (wl_attach(q, wid, W_ASIDE))
		return keep(q, wid);
	return GPUQ_OK;
}

/* A necessary condition for a set-aside workload to fit now: each resource
 * its (single) pod set requests fits whole in some eligible flavor. Free
 * quota only shrinks during a cycle, so a workload failing it at the start
 * of the cycle cannot be admitted in it: it stays aside, without the cost
 * of a queue round trip. Multi-pod-set workloads and CQs that may preempt
 * always go back. */
static bool may_fit(queue_t *q, const cq_t *c, const wl_t *w)
{
	const tmpl_t *tm;

	if (w->n_ps != 1 || cq_can_preempt(q, c))
		return true;
	tm = &q->tmpls[w->ps1.tmpl];
	for (uint32_t i = 0; i < tm->n_req; i++) {
		int8_t g = c->res_group[tm->res[i]];
		const group_t *gr;
		bool ok = false;

		if (tm->amt[i] <= 0)
			continue;
		if (g < 0)
			return false;
		gr = &c->groups[g];
		for (uint32_t f = 0; f < gr->n_flv && !ok; f++) {
			const slot_t *s =
			    &c->slots[gr->base + f * gr->n_cov + (uint32_t)c->res_cov[tm->res[i]]];

			ok = tmpl_flavor_ok(q, w->ps1.tmpl, gr->flv[f]) &&
			     (int64_t)w->ps1.count * tm->amt[i] <= slot_available(q, c, s);
		}
		if (!ok)
			return false;
	}
	return true;
}

/* Move the set-aside workloads of the cohort that may fit now back into
 * their queues. */
static void cohort_retry_aside(queue_t *q, cohort_t *h)
{
	for (size_t k = 0; k < h->cqs.n; k++) {
		cq_t *c = &q->cqs[h->cqs.v[k]];

		for (size_t i = c->aside.n; i-- > 0;) {
			uint32_t wid = c->aside.v[i];

			if (!may_fit(q, c, W(q, wid)))
				continue;
			wl_detach(q, wid);
			if (wl_attach(q, wid, W_HEAP)) {
				(void)wl_attach(q, wid, W_ASIDE);
				h->capacity_up = true; /* try again next cycle */
				return;
			}
		}
	}
	h->capacity_up = false;
}

static int cohort_cycle(queue_t *q, uint32_t co, int64_t now)
{
	cohort_t *h = &q->cohorts[co];
	size_t adm0;
	int rc = GPUQ_OK;

	h->dirty = false;
	if (h->capacity_up)
		cohort_retry_aside(q, h);
	h->gen++;
	if (grow(&q->heads, &q->cap_heads, h->cqs.n, sizeof(*q->heads)))
		return GPUQ_ENOMEM;
	q->n_heads = 0;
	q->retry_preempt = false;
	adm0 = q->n_res_adm;
	q->keep.n = 0;
	q->release.n = 0;
	q->n_held = 0;
	for (size_t k = 0; k < h->cqs.n; k++) {
		cq_t *c = &q->cqs[h->cqs.v[k]];

		c->blocked = false;
		c->n_nofit = 0;
		if (c->stop == QUEUE_STOP_NONE)
			fetch_head(q, h->cqs.v[k]);
	}
	while (q->n_heads) {
		cqhead_t e = heads_pop(q);

		if (process_head(q, &e, now)) {
			/* could not even keep it: put it straight back */
			if (wl_attach(q, e.wl, W_HEAP) == GPUQ_OK)
				W(q, e.wl)->where = W_HEAP;
			rc = GPUQ_ENOMEM;
		}
		if (!q->cqs[e.cq].blocked)
			fetch_head(q, e.cq);
	}
	for (size_t i = 0; i < q->keep.n; i++)
		if (wl_attach(q, q->keep.v[i], W_HEAP))
			rc = GPUQ_ENOMEM;
	for (size_t i = 0; i < q->n_held; i++)
		usage_add(q, q->held_cq[i], q->held[i].slot, -q->held[i].val);
	q->n_held = 0;
	for (size_t i = 0; i < q->release.n; i++)
		if (W(q, q->release.v[i])->state == QUEUE_WL_EVICTING)
			(void)wl_release(q, q->release.v[i], now);
	q->release.n = 0;
	if (q->retry_preempt && q->n_res_adm > adm0)
		cohort_touch(q, co, true);
	return rc;
}

/* Sample tenant usage into the decay when tenant_sample_ms has passed. */
static void maybe_sample(queue_t *q, int64_t now)
{
	int64_t dt;

	if (q->last_sample == INT64_MIN) {
		q->last_sample = now;
		return;
	}
	if (q->cfg.tenant_sample_ms <= 0 || now - q->last_sample < q->cfg.tenant_sample_ms)
		return;
	dt = now - q->last_sample;
	for (size_t i = 0; i < q->lq_names.n; i++) {
		lq_t *l = &q->lqs[i];
		double u = fairshare_decay(l->usage, lq_share_now(q, (uint32_t)i), dt,
					   q->cfg.tenant_half_life_ms);

		if (u != l->usage) {
			l->usage = u;
			mark_lq(q, (uint32_t)i);
		}
	}
	q->last_sample = now;
	for (size_t i = 0; i < q->cq_names.n; i++)
		if (q->cqs[i].lqs.n > 1)
			cohort_touch(q, q->cqs[i].cohort, false);
}

static void expire_backoffs(queue_t *q, int64_t now)
{
	for (;;) {
		uint32_t wid;
		wl_t *w;

		timer_clean(q, &q->backoff_timers);
		if (!q->backoff_timers.n || q->backoff_timers.v[0].at > now)
			return;
		wid = q->backoff_timers.v[0].wl;
		timer_pop(q, &q->backoff_timers);
		w = W(q, wid);
		if (w->where != W_BACKOFF)
			continue;
		w->epoch++;
		w->where = W_NONE;
		if (wl_enqueue(q, wid)) {
			w->where = W_BACKOFF;
			(void)timer_push(q, &q->backoff_timers, now, wid);
			return;
		}
		mark_wl(q, w);
	}
}

static int clock_advance(queue_t *q, int64_t now)
{
	if (now < -QUEUE_TIME_MAX || now > QUEUE_TIME_MAX)
		return GPUQ_ERANGE;
	if (q->last_now != INT64_MIN && now < q->last_now)
		return GPUQ_EINVAL;
	if (now != q->last_now) {
		q->last_now = now;
		q->meta_dirty = true;
	}
	maybe_sample(q, now);
	expire_backoffs(q, now);
	return GPUQ_OK;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int queue_cycle_run(queue_t *q, int64_t now, queue_result_t *out)
{
	u32vec_t todo;
	int rc, ret = GPUQ_OK;

	res_reset(q);
	rc = clock_advance(q, now);
	if (rc) {
		res_finish(q, out);
		return rc;
	}
	q->cycles++;
	mark_meta(q);
	todo = q->dirty_cohorts;
	q->dirty_cohorts = (u32vec_t){0};
	if (todo.n > 1)
		qsort(todo.v, todo.n, sizeof(uint32_t), u32_cmp);
	for (size_t i = 0; i < todo.n; i++) {
		q->cohorts[todo.v[i]].dirty = false;
	}
	for (size_t i = 0; i < todo.n; i++) {
		rc = cohort_cycle(q, todo.v[i], now);
		if (rc)
			ret = rc;
	}
	/* reuse the drained vector's memory for the next cycle */
	if (!q->dirty_cohorts.n && !q->dirty_cohorts.v) {
		q->dirty_cohorts = todo;
		q->dirty_cohorts.n = 0;
	} else {
		free(todo.v);
	}
	res_finish(q, out);
	return ret;
}

/* Evict every admitted workload of a HoldAndDrain CQ, oldest first. */
static int adm_cmp(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	const wl_t *a = W(q, *(const uint32_t *)pa), *b = W(q, *(const uint32_t *)pb);

	if (a->admitted_ms != b->admitted_ms)
		return a->admitted_ms < b->admitted_ms ? -1 : 1;
	return strcmp(wl_uid(a), wl_uid(b));
}

static int drain(queue_t *q, uint32_t cq, int64_t now)
{
	cq_t *c = &q->cqs[cq];
	u32vec_t v = {0};
	int rc = GPUQ_OK;

	for (size_t i = 0; i < c->adm.n; i++)
		if (W(q, c->adm.v[i])->state == QUEUE_WL_ADMITTED && vpush(&v, c->adm.v[i]))
			rc = GPUQ_ENOMEM;
	if (v.n > 1)
		qsort_r(v.v, v.n, sizeof(uint32_t), adm_cmp, q);
	for (size_t i = 0; i < v.n && !rc; i++) {
		rc = wl_evict(q, v.v[i], QUEUE_NONE, QUEUE_EVICT_STOPPED);
		if (!rc && q->cfg.release_on_evict)
			rc = wl_release(q, v.v[i], now);
	}
	free(v.v);
	return rc;
}

/* Evict admitted workloads whose Ready deadline passed, by (deadline, uid). */
static int ready_timeouts(queue_t *q, int64_t now)
{
	u32vec_t due = {0};
	int rc = GPUQ_OK;

	for (;;) {
		uint32_t wid;
		const wl_t *w;

		timer_clean(q, &q->ready_timers);
		if (!q->ready_timers.n || q->ready_timers.v[0].at > now)
			break;
		wid = q->ready_timers.v[0].wl;
		timer_pop(q, &q->ready_timers);
		w = W(q, wid);
		if (w->state != QUEUE_WL_ADMITTED || w->ready)
			continue;
		if (vpush(&due, wid)) {
			rc = GPUQ_ENOMEM;
			break;
		}
	}
	if (due.n > 1)
		qsort_r(due.v, due.n, sizeof(uint32_t), adm_cmp, q);
	for (size_t i = 0; i < due.n && !rc; i++) {
		rc = wl_evict(q, due.v[i], QUEUE_NONE, QUEUE_EVICT_READY_TIMEOUT);
		if (!rc && q->cfg.release_on_evict)
			rc = wl_release(q, due.v[i], now);
	}
	free(due.v);
	return rc;
}

int queue_tick(queue_t *q, int64_t now, queue_result_t *out)
{
	int rc;

	res_reset(q);
	rc = clock_advance(q, now);
	if (rc)
		goto out;
	rc = ready_timeouts(q, now);
	if (rc)
		goto out;
	for (size_t i = 0; i < q->cq_names.n; i++) {
		if (q->cqs[i].stop != QUEUE_STOP_HOLD_AND_DRAIN)
			continue;
		rc = drain(q, (uint32_t)i, now);
		if (rc)
			goto out;
	}
	if (q->meta_dirty)
		mark_meta(q);
out:
	res_finish(q, out);
	return rc;
}

/* The earliest valid entry of a timer heap, or INT64_MAX. The heap's top is
 * the answer unless it went stale; then every entry is looked at. */
static int64_t timers_min(const queue_t *q, const timers_t *t)
{
	int64_t m = INT64_MAX;

	for (size_t i = 0; i < t->n; i++) {
		const timer_t_ *e = &t->v[i];
		const wl_t *w = W(q, e->wl);

		if (w->live && w->epoch == e->epoch && e->at < m) {
			m = e->at;
			if (i == 0)
				break;
		}
	}
	return m;
}

int64_t queue_next_event(const queue_t *q, int64_t now)
{
	int64_t t = timers_min(q, &q->ready_timers), b = timers_min(q, &q->backoff_timers);

	if (b < t)
		t = b;
	if (t <= now)
		t = now + 1; /* already due: the next call acts */
	if (q->cfg.tenant_sample_ms > 0 && q->last_sample != INT64_MIN && q->lq_names.n) {
		int64_t s = q->last_sample + q->cfg.tenant_sample_ms;

		if (s <= now)
			s = now + 1; /* overdue: the next call samples */
		if (s < t)
			t = s;
	}
	return t;
}

/* ================================================================== */
/* Explanations and introspection                                      */
/* ================================================================== */

static const char *const wait_names[] = {
    "Eligible",	  "Quota",	    "NoFit",   "BehindHead",
    "Preempting", "GangIncomplete", "Backoff", "Stopped",
};

const char *queue_wait_name(queue_wait_t w)
{
	return (unsigned)w < sizeof(wait_names) / sizeof(wait_names[0]) ? wait_names[w] : "Unknown";
}

static const char *const state_names[] = {"Pending", "Admitted", "Evicting", "Finished"};

const char *queue_wl_state_name(queue_wl_state_t s)
{
	return (unsigned)s < 4 ? state_names[s] : "Unknown";
}

/* The wait reason as the caller sees it (derived ones filled in). */
static queue_wait_t wl_wait(const queue_t *q, const wl_t *w)
{
	const cq_t *c = &q->cqs[w->cq];

	if (w->state != QUEUE_WL_PENDING)
		return QUEUE_WAIT_NONE;
	if (w->where == W_HEAP && c->stop != QUEUE_STOP_NONE)
		return QUEUE_WAIT_STOPPED;
	if (w->where == W_HEAP && c->blocked && w->wait == QUEUE_WAIT_NONE)
		return QUEUE_WAIT_BEHIND_HEAD;
	return (queue_wait_t)w->wait;
}

typedef struct {
	char *buf;  /* output */
	size_t cap; /* its size */
	size_t len; /* written (may exceed cap: truncated) */
} sbuf_t;

static void sb_add(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf_t *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->len < b->cap ? b->buf + b->len : NULL,
		      b->len < b->cap ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n;
}

static const char *res_name(const queue_t *q, uint32_t r)
{
	return r < q->res_names.n ? q->res_names.s[r] : "?";
}

static const char *flv_name(const queue_t *q, uint32_t f)
{
	return f < q->flv_names.n ? q->flv_names.s[f] : "?";
}

/* What the slot named by an explanation has free now (the stored figure
 * when the CQ no longer has that slot). */
static int64_t live_free(const queue_t *q, const wl_t *w)
{
	const cq_t *c = &q->cqs[w->cq];
	int64_t s = cq_slot_find(c, w->why_flavor, w->why_res);

	return s < 0 ? w->why_free : slot_available(q, c, &c->slots[s]);
}

static void explain_why(const queue_t *q, const wl_t *w, sbuf_t *b)
{
	const char *cqn = q->cqs[w->cq].name;

	switch (w->why) {
	case WHY_NOT_COVERED:
		sb_add(b, "requests %s, which ClusterQueue %s does not cover",
		       res_name(q, w->why_res), cqn);
		return;
	case WHY_NO_FLAVOR:
		sb_add(b,
		       "no flavor of ClusterQueue %s for %s matches its node selector, "
		       "affinity or tolerations",
		       cqn, res_name(q, w->why_res));
		return;
	case WHY_ABOVE_MAX:
		sb_add(b,
		       "needs %" PRId64 " %s on flavor %s, more than ClusterQueue %s could "
		       "ever hold (%" PRId64 ")",
		       w->why_need, res_name(q, w->why_res), flv_name(q, w->why_flavor), cqn,
		       w->why_free);
		return;
	default:
		break;
	}
	sb_add(b, "needs %" PRId64 " %s on flavor %s, %" PRId64 " free", w->why_need,
	       res_name(q, w->why_res), flv_name(q, w->why_flavor), live_free(q, w));
	switch (w->why) {
	case WHY_QUOTA_NOMINAL:
		sb_add(b, "; nominal quota of ClusterQueue %s reached", cqn);
		break;
	case WHY_QUOTA_BLIMIT:
		sb_add(b, "; borrowing limit of ClusterQueue %s reached", cqn);
		break;
	case WHY_QUOTA_COHORT:
		sb_add(b, "; cohort borrowing limit reached");
		break;
	case WHY_NO_CANDIDATES:
		sb_add(b, "; nothing it may preempt");
		break;
	default:
		break;
	}
}

/* 1-based position among the pending workloads of its LocalQueue. */
static size_t lq_position(const queue_t *q, uint32_t wid)
{
	const wl_t *w = W(q, wid);
	size_t pos = 1;

	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *o = &q->wls[i];

		if (o->live && i != wid && o->lq == w->lq && o->state == QUEUE_WL_PENDING &&
		    wl_cmp(q, (uint32_t)i, wid) < 0)
			pos++;
	}
	return pos;
}

int queue_workload_explain(const queue_t *q, const char *uid, char *buf, size_t cap)
{
	sbuf_t b = {buf, cap, 0};
	uint32_t wid;
	const wl_t *w;
	const cq_t *c;

	if (cap)
		buf[0] = '\0';
	if (queue_workload_find(q, uid, &wid))
		return GPUQ_ENOTFOUND;
	w = W(q, wid);
	c = &q->cqs[w->cq];
	switch (w->state) {
	case QUEUE_WL_ADMITTED:
	case QUEUE_WL_EVICTING:
	case QUEUE_WL_FINISHED:
		sb_add(&b, "%s in ClusterQueue %s",
		       w->state == QUEUE_WL_ADMITTED   ? "admitted"
		       : w->state == QUEUE_WL_EVICTING ? "evicting"
						       : "finished",
		       c->name);
		if (w->state == QUEUE_WL_EVICTING)
			sb_add(&b, " (%s)", evict_names[w->evict_reason]);
		for (uint32_t i = 0; i < w->n_asg; i++)
			sb_add(&b, "%s %" PRId64 " %s on flavor %s", i ? "," : ":",
			       w->asg[i].a.amount, res_name(q, w->asg[i].a.resource),
			       flv_name(q, w->asg[i].a.flavor));
		break;
	default:
		sb_add(&b, "position %zu of %u in %s: ", lq_position(q, wid),
		       q->lqs[w->lq].n_pending, q->lqs[w->lq].name);
		switch (wl_wait(q, w)) {
		case QUEUE_WAIT_GANG:
			sb_add(&b, "waiting for its pod group: %d of %d pods present",
			       w->pods_present, w->gang_total);
			break;
		case QUEUE_WAIT_BACKOFF:
			sb_add(&b,
			       "requeued after %u PodsReady timeout(s); not eligible before "
			       "%" PRId64 " ms",
			       w->requeues, w->eligible_ms);
			break;
		case QUEUE_WAIT_STOPPED:
			sb_add(&b, "ClusterQueue %s is stopped", c->name);
			break;
		case QUEUE_WAIT_BEHIND_HEAD:
			sb_add(&b, "StrictFIFO: behind the blocked head of ClusterQueue %s",
			       c->name);
			break;
		case QUEUE_WAIT_PREEMPTING:
			sb_add(&b, "preempting to make room, waiting for the victims' quota; ");
			explain_why(q, w, &b);
			break;
		case QUEUE_WAIT_QUOTA:
		case QUEUE_WAIT_NO_FIT:
			explain_why(q, w, &b);
			break;
		default:
			sb_add(&b, "waiting for the next admission cycle");
			break;
		}
	}
	return b.len < cap ? GPUQ_OK : GPUQ_ELIMIT;
}

int queue_workload_view(const queue_t *q, queue_wl_t id, queue_workload_view_t *out)
{
	const wl_t *w;

	if (id >= q->n_wls || !q->wls[id].live)
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	memset(out, 0, sizeof(*out));
	out->uid = wl_uid(w);
	out->namespace_ = w->strs + w->ns_off;
	out->name = w->strs + w->name_off;
	out->lq = w->lq;
	out->cq = w->cq;
	out->priority = w->priority;
	out->created_ms = w->created;
	out->state = (queue_wl_state_t)w->state;
	out->wait = wl_wait(q, w);
	out->n_podsets = w->n_ps;
	for (uint8_t i = 0; i < w->n_ps; i++)
		out->pods += wl_ps(w)[i].count;
	out->gang_total = w->gang_total;
	out->pods_present = w->pods_present;
	out->ready = w->ready;
	out->admitted_ms = w->admitted_ms;
	out->eligible_ms = w->eligible_ms;
	out->requeues = w->requeues;
	out->preemptions = w->preemptions;
	return GPUQ_OK;
}

int queue_workload_request(const queue_t *q, queue_wl_t id, size_t podset, uint32_t resource,
			   int64_t *per_pod, int32_t *count)
{
	const wl_t *w;
	const tmpl_t *t;

	if (id >= q->n_wls || !q->wls[id].live || podset >= q->wls[id].n_ps)
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	t = &q->tmpls[wl_ps(w)[podset].tmpl];
	*per_pod = 0;
	*count = wl_ps(w)[podset].count;
	for (uint32_t i = 0; i < t->n_req; i++)
		if (t->res[i] == resource)
			*per_pod = t->amt[i];
	return GPUQ_OK;
}

int queue_workload_flavor(const queue_t *q, queue_wl_t id, size_t podset, uint32_t resource,
			  uint32_t *flavor)
{
	const wl_t *w;

	if (id >= q->n_wls || !q->wls[id].live)
		return GPUQ_ENOTFOUND;
	w = W(q, id);
	if (w->state != QUEUE_WL_ADMITTED && w->state != QUEUE_WL_EVICTING)
		return GPUQ_ENOTFOUND;
	for (uint32_t i = 0; i < w->n_asg; i++) {
		if (w->asg[i].a.podset == podset && w->asg[i].a.resource == resource) {
			*flavor = w->asg[i].a.flavor;
			return GPUQ_OK;
		}
	}
	return GPUQ_ENOTFOUND;
}

queue_wl_t queue_workload_next(const queue_t *q, queue_wl_t prev)
{
	for (size_t i = prev == QUEUE_NONE ? 0 : (size_t)prev + 1; i < q->n_wls; i++)
		if (q->wls[i].live)
			return (queue_wl_t)i;
	return QUEUE_NONE;
}

static const char *names_at(const names_t *t, uint32_t id)
{
	return id < t->n ? t->s[id] : NULL;
}

size_t queue_resource_count(const queue_t *q)
{
	return q->res_names.n;
}

const char *queue_resource_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->res_names, id);
}

int queue_resource_find(const queue_t *q, const char *name, uint32_t *id)
{
	return names_find(&q->res_names, name, id);
}

size_t queue_flavor_count(const queue_t *q)
{
	return q->flv_names.n;
}

const char *queue_flavor_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->flv_names, id);
}

int queue_flavor_find(const queue_t *q, const char *name, uint32_t *id)
{
	return names_find(&q->flv_names, name, id);
}

size_t queue_cohort_count(const queue_t *q)
{
	return q->pub_cohorts.n;
}

const char *queue_cohort_name(const queue_t *q, uint32_t id)
{
	return id < q->pub_cohorts.n ? q->cohorts[q->pub_cohorts.v[id]].name : NULL;
}

int queue_cohort_find(const queue_t *q, const char *name, uint32_t *id)
{
	uint32_t c;

	if (names_find(&q->cohort_names, name, &c) || q->cohorts[c].pub == QUEUE_NONE)
		return GPUQ_ENOTFOUND;
	*id = q->cohorts[c].pub;
	return GPUQ_OK;
}

size_t queue_cq_count(const queue_t *q)
{
	return q->cq_names.n;
}

const char *queue_cq_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->cq_names, id);
}

int queue_cq_find(const queue_t *q, const char *name, uint32_t *id)
{
	return names_find(&q->cq_names, name, id);
}

uint32_t queue_cq_cohort(const queue_t *q, uint32_t cq)
{
	if (cq >= q->cq_names.n)
		return QUEUE_NONE;
	return q->cohorts[q->cqs[cq].cohort].pub;
}

size_t queue_lq_count(const queue_t *q)
{
	return q->lq_names.n;
}

const char *queue_lq_name(const queue_t *q, uint32_t id)
{
	return names_at(&q->lq_names, id);
}

int queue_lq_find(const queue_t *q, const char *namespace_, const char *name, uint32_t *id)
{
	return lq_lookup(q, namespace_, name, id);
}

uint32_t queue_lq_cq(const queue_t *q, uint32_t lq)
{
	return lq < q->lq_names.n ? q->lqs[lq].cq : QUEUE_NONE;
}

int queue_cq_quota(const queue_t *q, uint32_t cq, uint32_t flavor, uint32_t resource,
		   queue_quota_view_t *out)
{
	const cq_t *c;
	const slot_t *s;
	int64_t si;

	if (cq >= q->cq_names.n)
		return GPUQ_ENOTFOUND;
	c = &q->cqs[cq];
	si = cq_slot_find(c, flavor, resource);
	if (si < 0)
		return GPUQ_ENOTFOUND;
	s = &c->slots[si];
	out->nominal = s->nominal;
	out->borrowing_limit = s->blimit;
	out->lending_limit = s->llimit;
	out->usage = s->usage;
	out->available = slot_available(q, c, s);
	out->max_capacity = slot_max_capacity(q, c, s);
	return GPUQ_OK;
}

int queue_cohort_quota(const queue_t *q, uint32_t cohort, uint32_t flavor, uint32_t resource,
		       queue_cohort_view_t *out)
{
	const cohort_t *h;

	memset(out, 0, sizeof(*out));
	if (cohort >= q->pub_cohorts.n)
		return GPUQ_ENOTFOUND;
	h = &q->cohorts[q->pub_cohorts.v[cohort]];
	for (size_t i = 0; i < h->n_slots; i++) {
		if (h->slots[i].flavor == flavor && h->slots[i].res == resource) {
			out->nominal = h->slots[i].nominal;
			out->lendable = h->slots[i].lendable;
			out->usage = h->slots[i].usage;
			out->borrowed = h->slots[i].borrowed;
		}
	}
	return GPUQ_OK;
}

static void ctr_copy(queue_stats_t *out, const counters_t *c)
{
	out->admissions = c->admissions;
	out->preemptions = c->preemptions;
	out->evictions = c->evictions;
	out->finishes = c->finishes;
}

int queue_cq_stats(const queue_t *q, uint32_t cq, queue_stats_t *out)
{
	const cq_t *c;

	if (cq >= q->cq_names.n)
		return GPUQ_ENOTFOUND;
	c = &q->cqs[cq];
	memset(out, 0, sizeof(*out));
	out->pending = c->n_pending;
	out->admitted = (uint32_t)c->adm.n;
	ctr_copy(out, &c->ctr);
	out->weighted_share = cq_share(q, cq, NULL, 0, QUEUE_NONE);
	return GPUQ_OK;
}

int queue_lq_stats(const queue_t *q, uint32_t lq, queue_stats_t *out)
{
	const lq_t *l;

	if (lq >= q->lq_names.n)
		return GPUQ_ENOTFOUND;
	l = &q->lqs[lq];
	memset(out, 0, sizeof(*out));
	out->pending = l->n_pending;
	out->admitted = l->n_admitted;
	ctr_copy(out, &l->ctr);
	out->decayed_usage = l->usage;
	out->used_ms = l->used_ms;
	return GPUQ_OK;
}

/* Pending order across a CQ's LocalQueues for listing: priority desc,
 * tenant key asc, creation, uid. */
static int pending_cmp(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const wl_t *x = W(q, a), *y = W(q, b);
	double kx, ky;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	kx = lq_key(q, x->lq);
	ky = lq_key(q, y->lq);
	if (kx != ky)
		return kx < ky ? -1 : 1;
	return wl_cmp(q, a, b);
}

size_t queue_cq_workloads(const queue_t *q, uint32_t cq, queue_wl_state_t state, queue_wl_t *ids,
			  size_t cap)
{
	u32vec_t v = {0};
	size_t n = 0;

	if (cq >= q->cq_names.n)
		return 0;
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = &q->wls[i];
		bool match = w->live && w->cq == cq &&
			     (w->state == state ||
			      (state == QUEUE_WL_ADMITTED && w->state == QUEUE_WL_EVICTING));

		if (!match)
			continue;
		n++;
		if (vpush(&v, (uint32_t)i))
			break;
	}
	if (v.n > 1 && state == QUEUE_WL_PENDING)
		qsort_r(v.v, v.n, sizeof(uint32_t), pending_cmp, (void *)q);
	else if (v.n > 1)
		qsort_r(v.v, v.n, sizeof(uint32_t), adm_cmp, (void *)q);
	for (size_t i = 0; i < v.n && i < cap; i++)
		ids[i] = v.v[i];
	free(v.v);
	return n;
}

uint64_t queue_cycle_count(const queue_t *q)
{
	return q->cycles;
}

int64_t queue_last_now(const queue_t *q)
{
	return q->last_now;
}

size_t queue_memory_bytes(const queue_t *q)
{
	size_t b = sizeof(*q);

	b += q->cap_wls * sizeof(wl_t) + q->free_wls.cap * 4 + q->uids.cap * sizeof(mapent_t);
	for (size_t i = 0; i < q->n_wls; i++) {
		const wl_t *w = &q->wls[i];

		if (!w->live)
			continue;
		b += strlen(w->strs) + strlen(w->strs + w->ns_off) + strlen(w->strs + w->name_off) +
		     3;
		b += w->n_ps > 1 ? w->n_ps * sizeof(psref_t) : 0;
		b += w->n_asg * sizeof(asg_t);
	}
	b += q->cap_tmpls * sizeof(tmpl_t) + q->tmpl_map.cap * sizeof(mapent_t);
	for (size_t i = 0; i < q->n_tmpls; i++) {
		const tmpl_t *t = &q->tmpls[i];

		b += t->n_sel * sizeof(kv_t) + t->n_aff * sizeof(aff_t) + (size_t)t->n_affvals * 4 +
		     t->n_tol * sizeof(tol_t) + t->n_flv_ok;
	}
	for (size_t i = 0; i < q->lq_names.n; i++)
		b += sizeof(lq_t) + q->lqs[i].heap.cap * 4 +
		     (q->lqs[i].cur ? QUEUE_RESOURCES_MAX * 8 : 0);
	for (size_t i = 0; i < q->cq_names.n; i++) {
		const cq_t *c = &q->cqs[i];

		b += sizeof(cq_t) + c->n_groups * sizeof(group_t) + c->n_slots * sizeof(slot_t) +
		     (c->lqs.cap + c->aside.cap + c->adm.cap) * 4;
	}
	b += q->cap_dirty * sizeof(dirty_t) + q->dirty_map.cap * sizeof(mapent_t);
	for (size_t i = 0; i < q->n_dirty; i++)
		b += q->dirty[i].len;
	b += (q->ready_timers.cap + q->backoff_timers.cap) * sizeof(timer_t_);
	return b;
}

/* ================================================================== */
/* Records                                                             */
/* ================================================================== */

#define REC_VERSION 1

typedef struct {
	uint8_t *b; /* output (may be NULL when cap is 0) */
	size_t cap; /* its size */
	size_t len; /* bytes produced (may exceed cap) */
} wr_t;

static void put(wr_t *w, const void *p, size_t n)
{
	if (w->len + n <= w->cap)
		memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void put_u8(wr_t *w, uint8_t v)
{
	put(w, &v, 1);
}

static void put_u64(wr_t *w, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, 8);
}

static void put_u32(wr_t *w, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, 4);
}

static void put_f64(wr_t *w, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	put_u64(w, v);
}

static void put_str(wr_t *w, const char *s)
{
	size_t n = strlen(s);

	put_u8(w, (uint8_t)(n & 0xff));
	put_u8(w, (uint8_t)(n >> 8));
	put(w, s, n);
}

typedef struct {
	const uint8_t *p; /* input */
	size_t n;	  /* its length */
	size_t off;	  /* read so far */
	bool bad;	  /* truncated or out of range */
} rd_t;

static bool get(rd_t *r, void *out, size_t n)
{
	if (r->bad || r->n - r->off < n) {
		r->bad = true;
		memset(out, 0, n);
		return false;
	}
	memcpy(out, r->p + r->off, n);
	r->off += n;
	return true;
}

static uint8_t get_u8(rd_t *r)
{
	uint8_t v;

	get(r, &v, 1);
	return v;
}

static uint32_t get_u32(rd_t *r)
{
	uint8_t b[4];
	uint32_t v = 0;

	get(r, b, 4);
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

static uint64_t get_u64(rd_t *r)
{
	uint8_t b[8];
	uint64_t v = 0;

	get(r, b, 8);
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static double get_f64(rd_t *r)
{
	uint64_t v = get_u64(r);
	double d;

	memcpy(&d, &v, sizeof(d));
	if (!isfinite(d))
		r->bad = true;
	return d;
}

/* A string of at most QUEUE_NAME_MAX bytes without NULs into out. */
static void get_str(rd_t *r, char out[QUEUE_NAME_MAX + 1])
{
	size_t n = get_u8(r);

	n |= (size_t)get_u8(r) << 8;
	out[0] = '\0';
	if (r->bad)
		return;
	if (n > QUEUE_NAME_MAX || r->n - r->off < n || memchr(r->p + r->off, 0, n)) {
		r->bad = true;
		return;
	}
	memcpy(out, r->p + r->off, n);
	out[n] = '\0';
	r->off += n;
}

static void put_ctr(wr_t *w, const counters_t *c)
{
	put_u64(w, c->admissions);
	put_u64(w, c->preemptions);
	put_u64(w, c->evictions);
	put_u64(w, c->finishes);
}

static void get_ctr(rd_t *r, counters_t *c)
{
	c->admissions = get_u64(r);
	c->preemptions = get_u64(r);
	c->evictions = get_u64(r);
	c->finishes = get_u64(r);
}

static void enc_meta(const queue_t *q, wr_t *w)
{
	uint32_t n = 0;

	put_u8(w, REC_VERSION);
	put_u64(w, q->cycles);
	put_u64(w, (uint64_t)q->last_now);
	put_u64(w, (uint64_t)q->last_sample);
	for (size_t i = 0; i < q->cohort_names.n; i++)
		n += q->cohorts[i].capacity_up;
	put_u32(w, n);
	for (size_t i = 0; i < q->cohort_names.n; i++)
		if (q->cohorts[i].capacity_up)
			put_str(w, q->cohorts[i].name);
}

static void enc_cq(const queue_t *q, uint32_t cq, wr_t *w)
{
	const cq_t *c = &q->cqs[cq];

	put_u8(w, REC_VERSION);
	put_ctr(w, &c->ctr);
	put_u32(w, c->n_slots);
	for (uint32_t s = 0; s < c->n_slots; s++) {
		put_str(w, flv_name(q, c->slots[s].flavor));
		put_str(w, res_name(q, c->slots[s].res));
		put_u64(w, (uint64_t)c->slots[s].usage);
	}
}

static void enc_lq(const queue_t *q, uint32_t lq, wr_t *w)
{
	const lq_t *l = &q->lqs[lq];

	put_u8(w, REC_VERSION);
	put_f64(w, l->usage);
	put_f64(w, l->used_ms);
	put_ctr(w, &l->ctr);
}

static void enc_tmpl(const queue_t *q, const psref_t *p, wr_t *w)
{
	const tmpl_t *t = &q->tmpls[p->tmpl];

	put_str(w, q->strs.s[t->name]);
	put_u32(w, (uint32_t)p->count);
	put_u8(w, t->n_req);
	for (uint32_t i = 0; i < t->n_req; i++) {
		put_str(w, res_name(q, t->res[i]));
		put_u64(w, (uint64_t)t->amt[i]);
	}
	put_u8(w, t->n_sel);
	for (uint32_t i = 0; i < t->n_sel; i++) {
		put_str(w, q->strs.s[t->sel[i].key]);
		put_str(w, q->strs.s[t->sel[i].val]);
	}
	put_u8(w, t->n_aff);
	for (uint32_t i = 0; i < t->n_aff; i++) {
		put_str(w, q->strs.s[t->aff[i].key]);
		put_u8(w, (uint8_t)t->aff[i].n);
		for (uint32_t j = 0; j < t->aff[i].n; j++)
			put_str(w, q->strs.s[t->affvals[t->aff[i].off + j]]);
	}
	put_u8(w, t->n_tol);
	for (uint32_t i = 0; i < t->n_tol; i++) {
		put_str(w, q->strs.s[t->tol[i].key]);
		put_u8(w, t->tol[i].op);
		put_str(w, q->strs.s[t->tol[i].val]);
		put_u8(w, t->tol[i].effect);
	}
}

static void enc_wl(const queue_t *q, uint32_t id, wr_t *w)
{
	const wl_t *x = W(q, id);

	put_u8(w, REC_VERSION);
	put_str(w, x->strs + x->ns_off);
	put_str(w, x->strs + x->name_off);
	put_str(w, strchr(q->lqs[x->lq].name, '/') + 1);
	put_u32(w, (uint32_t)x->priority);
	put_u64(w, (uint64_t)x->created);
	put_u32(w, (uint32_t)x->gang_total);
	put_u32(w, (uint32_t)x->pods_present);
	put_u8(w, x->state);
	put_u8(w, x->wait);
	put_u8(w, x->where == W_FLIGHT ? W_HEAP : x->where);
	put_u8(w, x->why);
	put_u8(w, x->evict_reason);
	put_u8(w, x->ready);
	put_u64(w, (uint64_t)x->admitted_ms);
	put_u64(w, (uint64_t)x->eligible_ms);
	put_u64(w, (uint64_t)x->why_need);
	put_u64(w, (uint64_t)x->why_free);
	put_str(w, x->why_res != QUEUE_NONE ? res_name(q, x->why_res) : "");
	put_str(w, x->why_flavor != QUEUE_NONE ? flv_name(q, x->why_flavor) : "");
	put_u32(w, x->requeues);
	put_u32(w, x->preemptions);
	put_u64(w, x->admit_cycle);
	put_u8(w, x->n_ps);
	for (uint8_t i = 0; i < x->n_ps; i++)
		enc_tmpl(q, &wl_ps(x)[i], w);
	put_u32(w, x->n_asg);
	for (uint32_t i = 0; i < x->n_asg; i++) {
		put_u8(w, (uint8_t)x->asg[i].a.podset);
		put_str(w, res_name(q, x->asg[i].a.resource));
		put_str(w, flv_name(q, x->asg[i].a.flavor));
		put_u64(w, (uint64_t)x->asg[i].a.amount);
	}
}

/* Copy a record key into a NUL-terminated name. */
static int key_str(const uint8_t *key, size_t len, char out[QUEUE_KEY_MAX + 1])
{
	if (len > QUEUE_KEY_MAX || (len && memchr(key, 0, len)))
		return GPUQ_ENOTFOUND;
	memcpy(out, key, len);
	out[len] = '\0';
	return GPUQ_OK;
}

int queue_record_encode(const queue_t *q, queue_rec_type_t type, const uint8_t *key, size_t key_len,
			uint8_t *buf, size_t cap, size_t *len)
{
	char k[QUEUE_KEY_MAX + 1] = "";
	wr_t w = {buf, cap, 0};
	uint32_t id;

	*len = 0;
	if (key_str(key, key_len, k))
		return GPUQ_ENOTFOUND;
	switch (type) {
	case QUEUE_REC_META:
		if (strcmp(k, "meta") != 0)
			return GPUQ_ENOTFOUND;
		enc_meta(q, &w);
		break;
	case QUEUE_REC_CQ:
		if (names_find(&q->cq_names, k, &id))
			return GPUQ_ENOTFOUND;
		enc_cq(q, id, &w);
		break;
	case QUEUE_REC_TENANT:
		if (names_find(&q->lq_names, k, &id))
			return GPUQ_ENOTFOUND;
		enc_lq(q, id, &w);
		break;
	case QUEUE_REC_WORKLOAD:
		if (queue_workload_find(q, k, &id))
			return GPUQ_ENOTFOUND;
		enc_wl(q, id, &w);
		break;
	default:
		return GPUQ_ENOTFOUND;
	}
	*len = w.len;
	return w.len <= cap ? GPUQ_OK : GPUQ_ELIMIT;
}

/* ---- the changed set ---- */

int queue_dirty_next(const queue_t *q, queue_dirty_iter_t *it, queue_rec_type_t *type,
		     const uint8_t **key, size_t *key_len)
{
	if (q->dirty_lost && it->pos == 0)
		return GPUQ_ENOMEM;
	if (it->pos >= q->n_dirty)
		return GPUQ_ENOTFOUND;
	*type = (queue_rec_type_t)q->dirty[it->pos].type;
	*key = q->dirty[it->pos].key;
	*key_len = q->dirty[it->pos].len;
	it->pos++;
	return GPUQ_OK;
}

size_t queue_dirty_count(const queue_t *q)
{
	return q->n_dirty;
}

void queue_dirty_clear(queue_t *q)
{
	for (size_t i = 0; i < q->n_dirty; i++)
		free(q->dirty[i].key);
	q->n_dirty = 0;
	if (q->dirty_map.cap)
		memset(q->dirty_map.e, 0, q->dirty_map.cap * sizeof(mapent_t));
	q->dirty_map.n = 0;
	q->dirty_lost = false;
}

int queue_dirty_all(queue_t *q)
{
	q->dirty_lost = false;
	mark_meta(q);
	for (size_t i = 0; i < q->cq_names.n; i++)
		mark_cq(q, (uint32_t)i);
	for (size_t i = 0; i < q->lq_names.n; i++)
		mark_lq(q, (uint32_t)i);
	for (size_t i = 0; i < q->n_wls; i++)
		if (q->wls[i].live)
			mark_wl(q, &q->wls[i]);
	return q->dirty_lost ? GPUQ_ENOMEM : GPUQ_OK;
}

/* ---- restore ---- */

/* A time from a record: within +-QUEUE_TIME_MAX, or INT64_MIN ("never"). */
static bool time_ok(int64_t t)
{
	return t == INT64_MIN || (t >= -QUEUE_TIME_MAX && t <= QUEUE_TIME_MAX);
}

static int apply_meta(queue_t *q, rd_t *r)
{
	uint64_t cycles = get_u64(r);
	int64_t now = (int64_t)get_u64(r), sample = (int64_t)get_u64(r);
	uint32_t n = get_u32(r);
	char name[QUEUE_NAME_MAX + 1];

	rd_t names;
	uint32_t co;

	if (r->bad || n > q->cohort_names.n || !time_ok(now) || !time_ok(sample) ||
	    (sample != INT64_MIN && now != INT64_MIN && sample > now))
		return GPUQ_ECORRUPT;
	names = *r;
	for (uint32_t i = 0; i < n; i++) {
		get_str(r, name);
		if (r->bad || names_find(&q->cohort_names, name, &co))
			return GPUQ_ECORRUPT;
	}
	if (r->off != r->n)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		get_str(&names, name);
		if (!names_find(&q->cohort_names, name, &co))
			q->cohorts[co].rec_capacity_up = true;
	}
	q->cycles = cycles;
	q->last_now = now;
	q->last_sample = sample;
	return GPUQ_OK;
}

static int apply_cq(queue_t *q, const char *k, rd_t *r, gpuq_diag_t *diag)
{
	char fn[QUEUE_NAME_MAX + 1], rn[QUEUE_NAME_MAX + 1];
	uint32_t id, n, f, res;
	counters_t ctr;
	int64_t *usage;
	cq_t *c;

	if (names_find(&q->cq_names, k, &id))
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "CQ record %s: no such ClusterQueue", k);
	c = &q->cqs[id];
	get_ctr(r, &ctr);
	n = get_u32(r);
	if (r->bad || n > c->n_slots)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "CQ record %s: bad header", k);
	usage = calloc(c->n_slots ? c->n_slots : 1, sizeof(*usage));
	if (!usage)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int64_t s;

		get_str(r, fn);
		get_str(r, rn);
		s = (int64_t)get_u64(r);
		if (r->bad || s < 0) {
			free(usage);
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "CQ record %s: bad slot %u", k,
					     i);
		}
		if (names_find(&q->flv_names, fn, &f) || names_find(&q->res_names, rn, &res) ||
		    cq_slot_find(c, f, res) < 0) {
			free(usage);
			return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
					     "CQ record %s: no quota for %s "
					     "on flavor %s",
					     k, rn, fn);
		}
		usage[cq_slot_find(c, f, res)] = s;
	}
	if (r->off != r->n) {
		free(usage);
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "CQ record %s: trailing bytes", k);
	}
	for (uint32_t s = 0; s < c->n_slots; s++)
		c->slots[s].rec_usage = usage[s];
	free(usage);
	c->ctr = ctr;
	c->rec_seen = true;
	return GPUQ_OK;
}

static int apply_lq(queue_t *q, const char *k, rd_t *r, gpuq_diag_t *diag)
{
	uint32_t id;
	double u, used;
	counters_t ctr;

	if (names_find(&q->lq_names, k, &id))
		return gpuq_diag_set(diag, GPUQ_ENOTFOUND, "tenant record %s: no such LocalQueue",
				     k);
	u = get_f64(r);
	used = get_f64(r);
	get_ctr(r, &ctr);
	if (r->bad || r->off != r->n || u < 0 || used < 0)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "tenant record %s: malformed", k);
	q->lqs[id].usage = u;
	q->lqs[id].used_ms = used;
	q->lqs[id].ctr = ctr;
	return GPUQ_OK;
}

/* Strings of one record, copied out NUL-terminated (the encoding spends at
 * least two bytes of prefix per string, so val_len + 1 bytes always hold
 * them, and val_len / 2 pointers every affinity value). */
typedef struct {
	char *buf;	   /* string bytes */
	size_t cap;	   /* its size */
	size_t len;	   /* used */
	const char **ptrs; /* affinity value pointers */
	size_t pcap;	   /* their room */
	size_t plen;	   /* used */
} arena_t;

static const char *get_astr(rd_t *r, arena_t *a)
{
	size_t n = get_u8(r);
	char *s;

	n |= (size_t)get_u8(r) << 8;
	if (r->bad || n > QUEUE_NAME_MAX || r->n - r->off < n || memchr(r->p + r->off, 0, n) ||
	    a->cap - a->len < n + 1) {
		r->bad = true;
		return "";
	}
	s = a->buf + a->len;
	memcpy(s, r->p + r->off, n);
	s[n] = '\0';
	a->len += n + 1;
	r->off += n;
	return s;
}

/* Decoded pod sets of a workload record (strings in the arena). */
typedef struct {
	queue_request_t req[QUEUE_PODSETS_MAX][QUEUE_PODSET_RES_MAX];	/* requests */
	queue_label_t sel[QUEUE_PODSETS_MAX][QUEUE_SELECTORS_MAX];	/* nodeSelector */
	queue_affinity_t aff[QUEUE_PODSETS_MAX][QUEUE_SELECTORS_MAX];	/* affinity */
	queue_toleration_t tol[QUEUE_PODSETS_MAX][QUEUE_SELECTORS_MAX]; /* tolerations */
	queue_podset_spec_t ps[QUEUE_PODSETS_MAX];			/* pod sets */
} dec_ps_t;

static int dec_podset(rd_t *r, arena_t *ar, dec_ps_t *d, size_t p)
{
	queue_podset_spec_t *ps = &d->ps[p];
	uint32_t n;

	memset(ps, 0, sizeof(*ps));
	ps->name = get_astr(r, ar);
	ps->count = (int32_t)get_u32(r);
	n = get_u8(r);
	if (r->bad || n > QUEUE_PODSET_RES_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		d->req[p][i].resource = get_astr(r, ar);
		d->req[p][i].amount = (int64_t)get_u64(r);
	}
	ps->requests = d->req[p];
	ps->n_requests = n;
	n = get_u8(r);
	if (r->bad || n > QUEUE_SELECTORS_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		d->sel[p][i].key = get_astr(r, ar);
		d->sel[p][i].value = get_astr(r, ar);
	}
	ps->node_selector = d->sel[p];
	ps->n_node_selector = n;
	n = get_u8(r);
	if (r->bad || n > QUEUE_SELECTORS_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t nv;

		d->aff[p][i].key = get_astr(r, ar);
		nv = get_u8(r);
		if (r->bad || nv > QUEUE_AFFINITY_VALUES_MAX || ar->pcap - ar->plen < nv)
			return GPUQ_ECORRUPT;
		d->aff[p][i].values = ar->ptrs + ar->plen;
		d->aff[p][i].n_values = nv;
		for (uint32_t j = 0; j < nv; j++)
			ar->ptrs[ar->plen++] = get_astr(r, ar);
	}
	ps->affinity = d->aff[p];
	ps->n_affinity = n;
	n = get_u8(r);
	if (r->bad || n > QUEUE_SELECTORS_MAX)
		return GPUQ_ECORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		d->tol[p][i].key = get_astr(r, ar);
		d->tol[p][i].op = (queue_tolerate_op_t)get_u8(r);
		d->tol[p][i].value = get_astr(r, ar);
		d->tol[p][i].effect = (queue_effect_t)get_u8(r);
	}
	ps->tolerations = d->tol[p];
	ps->n_tolerations = n;
	return r->bad ? GPUQ_ECORRUPT : GPUQ_OK;
}

typedef struct {
	uint8_t state, wait, where, why, evict_reason, ready; /* state fields */
	int64_t admitted_ms, eligible_ms, why_need, why_free; /* times, explanation */
	uint32_t why_res, why_flavor, requeues, preemptions;  /* explanation, counts */
	uint64_t admit_cycle;				      /* cycle of admission */
} dec_state_t;

/* Resolve and validate the admission of a decoded workload against cq. */
static int dec_assign(queue_t *q, rd_t *r, const cq_t *c, const queue_workload_spec_t *s,
		      asg_t **out, uint32_t *n_out)
{
	char rn[QUEUE_NAME_MAX + 1], fn[QUEUE_NAME_MAX + 1];
	uint32_t n = get_u32(r);
	asg_t *a;

	*out = NULL;
	*n_out = 0;
	if (r->bad || n > QUEUE_PODSETS_MAX * QUEUE_PODSET_RES_MAX)
		return GPUQ_ECORRUPT;
	if (!n)
		return GPUQ_OK;
	a = calloc(n, sizeof(*a));
	if (!a)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t f, res;
		int64_t slot;

		a[i].a.podset = get_u8(r);
		get_str(r, rn);
		get_str(r, fn);
		a[i].a.amount = (int64_t)get_u64(r);
		if (r->bad || a[i].a.podset >= s->n_podsets || a[i].a.amount < 0)
			goto corrupt;
		if (names_find(&q->res_names, rn, &res) || names_find(&q->flv_names, fn, &f))
			goto notfound;
		slot = cq_slot_find(c, f, res);
		if (slot < 0)
			goto notfound;
		a[i].a.resource = (uint16_t)res;
		a[i].a.flavor = f;
		a[i].slot = (uint32_t)slot;
	}
	*out = a;
	*n_out = n;
	return GPUQ_OK;
corrupt:
	free(a);
	return GPUQ_ECORRUPT;
notfound:
	free(a);
	return GPUQ_ENOTFOUND;
}

static int dec_names(queue_t *q, rd_t *r, dec_state_t *st)
{
	char rn[QUEUE_NAME_MAX + 1], fn[QUEUE_NAME_MAX + 1];

	get_str(r, rn);
	get_str(r, fn);
	st->why_res = st->why_flavor = QUEUE_NONE;
	if (r->bad)
		return GPUQ_ECORRUPT;
	if (*rn && names_find(&q->res_names, rn, &st->why_res))
		st->why_res = QUEUE_NONE;
	if (*fn && names_find(&q->flv_names, fn, &st->why_flavor))
		st->why_flavor = QUEUE_NONE;
	return GPUQ_OK;
}

/* Put a restored workload where its state says. */
/* Put a restored workload where its state says. On failure (allocation)
 * nothing was placed, so wl_forget undoes the creation. */
static int wl_restore_place(queue_t *q, uint32_t id, const dec_state_t *st)
{
	wl_t *w = W(q, id);
	cq_t *c = &q->cqs[w->cq];
	lq_t *l = &q->lqs[w->lq];

	switch (w->state) {
	case QUEUE_WL_PENDING:
		if (st->where == W_BACKOFF) {
			if (timer_push(q, &q->backoff_timers, w->eligible_ms, id))
				return GPUQ_ENOMEM;
			w->where = W_BACKOFF;
		} else if (st->where == W_ASIDE) {
			if (wl_attach(q, id, W_ASIDE))
				return GPUQ_ENOMEM;
		} else if (st->where == W_HEAP || !gang_waiting(w)) {
			if (wl_attach(q, id, W_HEAP))
				return GPUQ_ENOMEM;
		}
		l->n_pending++;
		c->n_pending++;
		return GPUQ_OK;
	case QUEUE_WL_ADMITTED:
	case QUEUE_WL_EVICTING:
		if (wl_attach(q, id, W_ADMITTED))
			return GPUQ_ENOMEM;
		wl_charge(q, id, +1);
		lq_cur_add(q, w, +1);
		l->n_admitted++;
		if (w->state == QUEUE_WL_EVICTING) {
			for (uint32_t i = 0; i < w->n_asg; i++)
				c->slots[w->asg[i].slot].evicting += w->asg[i].a.amount;
			cohort_of(q, c)->n_evicting++;
		} else if (!w->ready && ready_watched(q, w)) {
			/* lost only to allocation failure: then it has no timeout */
			(void)timer_push(q, &q->ready_timers,
					 w->admitted_ms + q->cfg.ready_timeout_ms, id);
		}
		return GPUQ_OK;
	default:
		return GPUQ_OK;
	}
}

/* Undo wl_create of a workload that was never placed. */
static void wl_forget(queue_t *q, uint32_t id)
{
	map_del(&q->uids, W(q, id)->uid_hash, id);
	wl_free(q, id);
	q->n_live--;
	(void)vpush(&q->free_wls, id);
}

/* Whether a restored (state, container) pair is one the queue produces. */
static bool state_where_ok(const dec_state_t *st)
{
	switch (st->state) {
	case QUEUE_WL_PENDING:
		return st->where != W_ADMITTED;
	case QUEUE_WL_ADMITTED:
	case QUEUE_WL_EVICTING:
		return st->where == W_ADMITTED;
	default:
		return st->where == W_NONE;
	}
}

/* The fixed part of a workload record, up to its pod sets. */
static int dec_wl_header(queue_t *q, rd_t *r, queue_workload_spec_t *s, dec_state_t *st,
			 char ns[QUEUE_NAME_MAX + 1], char name[QUEUE_NAME_MAX + 1],
			 char lqn[QUEUE_NAME_MAX + 1])
{
	get_str(r, ns);
	get_str(r, name);
	get_str(r, lqn);
	s->priority = (int32_t)get_u32(r);
	s->created_ms = (int64_t)get_u64(r);
	s->gang_total = (int32_t)get_u32(r);
	s->pods_present = (int32_t)get_u32(r);
	st->state = get_u8(r);
	st->wait = get_u8(r);
	st->where = get_u8(r);
	st->why = get_u8(r);
	st->evict_reason = get_u8(r);
	st->ready = get_u8(r);
	st->admitted_ms = (int64_t)get_u64(r);
	st->eligible_ms = (int64_t)get_u64(r);
	st->why_need = (int64_t)get_u64(r);
	st->why_free = (int64_t)get_u64(r);
	if (!time_ok(s->created_ms) || !time_ok(st->admitted_ms) || !time_ok(st->eligible_ms))
		return GPUQ_ECORRUPT;
	if (r->bad || st->state > QUEUE_WL_FINISHED || st->wait > QUEUE_WAIT_STOPPED ||
	    st->where > W_BACKOFF || st->why > WHY_GUARANTEED ||
	    st->evict_reason > QUEUE_EVICT_STOPPED || st->ready > 1 || !state_where_ok(st))
		return GPUQ_ECORRUPT;
	if (dec_names(q, r, st))
		return GPUQ_ECORRUPT;
	st->requeues = get_u32(r);
	st->preemptions = get_u32(r);
	st->admit_cycle = get_u64(r);
	s->n_podsets = get_u8(r);
	if (r->bad || !s->n_podsets || s->n_podsets > QUEUE_PODSETS_MAX)
		return GPUQ_ECORRUPT;
	return GPUQ_OK;
}

/* Copy the decoded state into a freshly created workload. */
static void wl_set_state(wl_t *w, const dec_state_t *st)
{
	w->state = st->state;
	w->wait = st->wait;
	w->why = st->why;
	w->evict_reason = st->evict_reason;
	w->ready = st->ready;
	w->admitted_ms = st->admitted_ms;
	w->eligible_ms = st->eligible_ms;
	w->why_need = st->why_need;
	w->why_free = st->why_free;
	w->why_res = st->why_res;
	w->why_flavor = st->why_flavor;
	w->requeues = st->requeues;
	w->preemptions = st->preemptions;
	w->admit_cycle = st->admit_cycle;
}

/* A restored assignment names requested resources with their exact totals,
 * and charging it keeps its CQ's usage within QUEUE_COHORT_AMOUNT_MAX. */
static bool asg_consistent(const queue_t *q, uint32_t id)
{
	const wl_t *w = W(q, id);
	const cq_t *c = &q->cqs[w->cq];

	for (uint32_t i = 0; i < w->n_asg; i++) {
		const queue_assign_t *a = &w->asg[i].a;
		const psref_t *ps = &wl_ps(w)[a->podset];
		const tmpl_t *t = &q->tmpls[ps->tmpl];
		bool found = false;

		for (uint32_t k = 0; k < t->n_req && !found; k++)
			found =
			    t->res[k] == a->resource && (int64_t)ps->count * t->amt[k] == a->amount;
		if (!found || c->slots[w->asg[i].slot].usage > QUEUE_COHORT_AMOUNT_MAX - a->amount)
			return false;
	}
	return true;
}

static int apply_wl(queue_t *q, const char *uid, rd_t *r, gpuq_diag_t *diag)
{
	char ns[QUEUE_NAME_MAX + 1], name[QUEUE_NAME_MAX + 1], lqn[QUEUE_NAME_MAX + 1];
	queue_workload_spec_t s = {0};
	dec_state_t st = {0};
	dec_ps_t *d;
	arena_t ar = {0};
	asg_t *asg = NULL;
	uint32_t n_asg = 0, id = QUEUE_NONE, lq = QUEUE_NONE;
	wl_t *w;
	int rc;

	if (dec_wl_header(q, r, &s, &st, ns, name, lqn))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "workload record %s: bad header", uid);
	d = malloc(sizeof(*d));
	ar.cap = r->n + 1;
	ar.buf = malloc(ar.cap);
	ar.pcap = r->n / 2 + 1;
	ar.ptrs = malloc(ar.pcap * sizeof(*ar.ptrs));
	if (!d || !ar.buf || !ar.ptrs) {
		rc = GPUQ_ENOMEM;
		goto out;
	}
	for (size_t p = 0; p < s.n_podsets; p++) {
		rc = dec_podset(r, &ar, d, p);
		if (rc) {
			rc = gpuq_diag_set(diag, rc, "workload record %s: bad pod set %zu", uid, p);
			goto out;
		}
	}
	s.podsets = d->ps;
	s.uid = uid;
	s.namespace_ = ns;
	s.name = name;
	s.local_queue = lqn;
	if (lq_lookup(q, ns, lqn, &lq)) {
		rc = gpuq_diag_set(diag, GPUQ_ENOTFOUND,
				   "workload record %s: LocalQueue %s/%s "
				   "not found",
				   uid, ns, lqn);
		goto out;
	}
	rc = dec_assign(q, r, &q->cqs[q->lqs[lq].cq], &s, &asg, &n_asg);
	if (!rc && r->off != r->n)
		rc = GPUQ_ECORRUPT;
	if (rc) {
		rc = gpuq_diag_set(diag, rc, "workload record %s: bad admission", uid);
		goto out;
	}
	rc = wl_create(q, &s, &id, diag);
	if (rc) {
		if (rc == GPUQ_EINVAL || rc == GPUQ_ERANGE)
			rc = GPUQ_ECORRUPT;
		goto out;
	}
	w = W(q, id);
	wl_set_state(w, &st);
	w->asg = asg;
	w->n_asg = n_asg;
	asg = NULL;
	if (!asg_consistent(q, id)) {
		wl_forget(q, id);
		rc =
		    gpuq_diag_set(diag, GPUQ_ECORRUPT,
				  "workload record %s: admission does not match its pod sets", uid);
		goto out;
	}
	rc = wl_restore_place(q, id, &st);
	if (rc)
		wl_forget(q, id);
out:
	free(asg);
	free(d);
	free(ar.buf);
	free(ar.ptrs);
	return rc;
}

int queue_record_apply(queue_t *q, queue_rec_type_t type, const uint8_t *key, size_t key_len,
		       const uint8_t *val, size_t val_len, gpuq_diag_t *diag)
{
	char k[QUEUE_KEY_MAX + 1] = "";
	rd_t r = {val, val_len, 0, false};

	if (key_str(key, key_len, k))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record key: bad bytes");
	if (!val || get_u8(&r) != REC_VERSION)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record %s: unknown version", k);
	switch (type) {
	case QUEUE_REC_META:
		if (strcmp(k, "meta") != 0)
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "meta record: bad key");
		if (apply_meta(q, &r))
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "meta record: malformed");
		return GPUQ_OK;
	case QUEUE_REC_CQ:
		return apply_cq(q, k, &r, diag);
	case QUEUE_REC_TENANT:
		return apply_lq(q, k, &r, diag);
	case QUEUE_REC_WORKLOAD:
		if (check_name("uid", k, false, NULL))
			return gpuq_diag_set(diag, GPUQ_ECORRUPT, "workload record: bad key");
		return apply_wl(q, k, &r, diag);
	default:
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record type %d unknown", (int)type);
	}
}

int queue_restore_done(queue_t *q, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < q->cq_names.n; i++) {
		cq_t *c = &q->cqs[i];

		if (!c->rec_seen)
			continue;
		for (uint32_t s = 0; s < c->n_slots; s++) {
			if (c->slots[s].usage != c->slots[s].rec_usage)
				return gpuq_diag_set(
				    diag, GPUQ_ECORRUPT,
				    "ClusterQueue %s: recorded usage %" PRId64
				    " of %s on flavor %s, but its workloads hold "
				    "%" PRId64,
				    c->name, c->slots[s].rec_usage, res_name(q, c->slots[s].res),
				    flv_name(q, c->slots[s].flavor), c->slots[s].usage);
		}
	}
	queue_dirty_clear(q);
	for (size_t i = 0; i < q->cohort_names.n; i++) {
		/* set-aside workloads stay aside unless capacity had grown */
		q->cohorts[i].capacity_up = q->cohorts[i].rec_capacity_up;
		q->cohorts[i].rec_capacity_up = false;
		cohort_touch(q, (uint32_t)i, false);
	}
	return GPUQ_OK;
}

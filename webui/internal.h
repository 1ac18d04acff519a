/*
 * webui/internal.h: shared by the files of webui/ only; the module's
 * interface is webui/webui.h.
 *
 * Files: snap.c (the snapshot: built from the core on the controller's
 * thread, published, taken by requests; the events ring), visibility.c
 * (every pending workload's positions copied into the snapshot, and the
 * visibility API's JSON), render.c (a snapshot as the web view's JSON),
 * auth.c (review bodies and replies, the decision cache), serve.c (routes:
 * the embedded files, the APIs, access), and the build's generated
 * webui_assets.c (ui/'s files as byte arrays).
 */
#ifndef GPUQ_WEBUI_INTERNAL_H
#define GPUQ_WEBUI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "webui/webui.h"

/* ---- the embedded files (generated from ui/ by webui/embed.sh) ---- */

typedef struct {
	const char *path;	   /* "/ui/app.js" ("/ui/" for index.html) */
	const char *content_type;  /* by extension */
	const unsigned char *data; /* the file's bytes */
	size_t len;		   /* bytes */
} webui_asset_t;

extern const webui_asset_t webui_assets[];
extern const size_t webui_n_assets;

/* ---- the snapshot ---- */

typedef struct {
	const char *flavor;	 /* flavor name */
	const char *resource;	 /* resource name */
	int64_t nominal;	 /* nominalQuota, core units */
	int64_t borrowing_limit; /* or QUEUE_UNLIMITED */
	int64_t lending_limit;	 /* or QUEUE_UNLIMITED */
	int64_t usage;		 /* admitted and evicting workloads */
	int64_t borrowed;	 /* usage above nominal */
	int64_t lent;		 /* this CQ's share of what its cohort borrows */
	uint32_t fid, rid;	 /* core flavor and resource ids */
} ws_quota_t;

typedef struct {
	const char *name;	 /* ClusterQueue */
	const char *cohort;	 /* cohort name, "" without one */
	size_t quota0, n_quota;	 /* its slots in snap->quota */
	queue_stats_t stats;	 /* counts, history, weighted share */
	uint32_t pending_total;	 /* pending workloads (all) */
	uint32_t admitted_total; /* admitted and evicting (all) */
	size_t pend0, n_pend;	 /* listed pending, in admission order (snap->cq_wl) */
	size_t adm0, n_adm;	 /* listed admitted, by admission time */
	size_t vis0, n_vis;	 /* every pending one, in admission order (snap->vis) */
} ws_cq_t;

typedef struct {
	const char *namespace_; /* LocalQueue namespace */
	const char *name;	/* its name */
	uint32_t cq;		/* its ClusterQueue (index) */
	queue_stats_t stats;	/* counts, decayed usage */
	size_t usage0;		/* its usage in snap->lq_usage: one per slot of its CQ */
	size_t vis0, n_vis;	/* its pending ones in order (snap->lq_vis) */
} ws_lq_t;

typedef struct {
	const char *uid;	/* metadata.uid */
	const char *namespace_; /* its namespace */
	const char *name;	/* its name */
	uint32_t lq;		/* LocalQueue index */
	uint32_t cq;		/* ClusterQueue index */
	int32_t priority;	/* priority */
	int64_t created_ms;	/* creation */
	queue_wl_state_t state; /* Pending, Admitted, Evicting */
	queue_wait_t wait;	/* why pending */
	uint32_t position;	/* 1-based place in its CQ's admission order
				   (pending), else 0 */
	int64_t admitted_ms;	/* last admission (-1 never) */
	int32_t pods;		/* pods */
	const char *reason;	/* the core's sentence (queue_workload_reason) */
	const char *flavors;	/* "flavor" list of an admitted one, "" else */
	const char *requests;	/* "8 nvidia.com/gpu, 16 cpu" (the whole workload) */
	int64_t predicted_ms;	/* pending: its predicted start, -1 none */
	int64_t idle_since_ms;	/* admitted: its GPUs idle since, -1 not idle */
	int64_t protected_ms;	/* admitted: not preempted before this, 0 none */
} ws_wl_t;

/* One pending workload as the visibility API lists it (visibility.c,
 * docs/visibility.md): every pending workload of the core is copied, with
 * its place in its ClusterQueue's admission order and in its LocalQueue's.
 * The uid and name are in ui's pool (s->pool), the other strings in the
 * snapshot's arena (a namespace and a message equal to the entry before's
 * are shared). */
typedef struct {
	const char *uid;	    /* metadata.uid */
	const char *namespace_;	    /* its namespace */
	const char *name;	    /* its name */
	uint32_t lq;		    /* LocalQueue index */
	uint32_t cq;		    /* ClusterQueue index */
	int32_t priority;	    /* priority */
	int64_t created_ms;	    /* creation (Unix ms) */
	queue_wait_t wait;	    /* why it waits */
	uint32_t pos_cq;	    /* 0-based place in its ClusterQueue's admission
				       order (Kueue's positionInClusterQueue) */
	uint32_t pos_lq;	    /* 0-based place among its LocalQueue's pending
				       ones in that order (positionInLocalQueue) */
	const char *message;	    /* the core's sentence (queue_workload_reason) */
	int64_t predicted_start_ms; /* when it is expected to start (Unix ms), or -1:
				       no prediction (the place for the GPU economics'
				       start-time estimate: rendered as
				       predictedStartTime when set) */
} ws_vis_t;

/* One budget (econ.c; strings in the snapshot's arena). */
typedef struct {
	queue_budget_view_t v; /* as the core viewed it (v.name in the arena) */
} ws_budget_t;

typedef enum { WS_EV_ADMITTED = 0, WS_EV_PREEMPTED = 1, WS_EV_EVICTED = 2 } ws_ev_kind_t;

/* One recent event (strings owned by the ring entry / the snapshot arena). */
typedef struct {
	int64_t at_ms;	    /* wall time */
	ws_ev_kind_t kind;  /* what happened */
	char *namespace_;   /* the workload's (the victim's) namespace */
	char *name;	    /* its name */
	char *cq;	    /* its ClusterQueue */
	char *detail;	    /* admitted: flavors; evicted/preempted: the reason word */
	char *preemptor_ns; /* preemptions: the preemptor's namespace ("" else) */
	char *preemptor;    /* ... and name */
	char *preemptor_cq; /* ... and ClusterQueue */
} ws_event_t;

/* One chargeback row: a namespace's hours of one resource over the
 * snapshot's usage window (a ledger_row_t, its strings in the arena). */
typedef struct {
	const char *namespace_; /* the LocalQueue's namespace */
	const char *resource;	/* resource name */
	bool accelerator;	/* priced (GPUs, MIG slices): ledger_row_t's */
	double nominal_hours;	/* held within nominal quota */
	double borrowed_hours;	/* held borrowed from the cohort */
	double cost;		/* accelerator hours x their flavor's price */
} ws_usage_t;

/* Strings copied into blocks that never move (snap.c): a snapshot's own,
 * and the pool the visibility list's names are kept in. */
typedef struct {
	void *blocks; /* a list of blocks, newest first */
	size_t used;  /* bytes used in the newest block */
	size_t cap;   /* its size */
	size_t bytes; /* bytes copied in all */
	bool failed;  /* a copy failed */
} ws_arena_t;

/* The visibility list's uids and names, kept across snapshots while that
 * API is in use (visibility.c): copied once per workload, not once per
 * snapshot (100,000 pending: 200,000 strings the CPU would wait for each
 * second). Each snapshot listing them holds a reference. */
typedef struct ws_pool ws_pool_t;

/* What ui keeps of one core workload id: where its names are in the pool. */
typedef struct {
	uint64_t ident;	   /* the workload's queue_workload_brief_t.ident */
	const char *key;   /* ... and its uid's address in the core */
	const char *uid;   /* "uid\0name\0" in ui's pool; NULL: none kept */
	uint32_t name_off; /* its name at uid + name_off */
	uint32_t bytes;	   /* bytes it takes in the pool */
} ws_name_t;

struct webui_snap {
	atomic_uint refs;      /* references */
	int64_t now_ms;	       /* wall time of the snapshot */
	int64_t built_mono_ms; /* monotonic time it was published */
	bool fixed;	       /* its core never changes (webui_publish_fixed):
				  never old */
	bool has_vis;	       /* vis is filled: the visibility API was asked
				  lately, or the snapshot is fixed */
	bool fair_sharing;     /* unused in rendering: reserved */
	const char **cohorts;  /* cohort names */
	size_t n_cohorts;
	ws_cq_t *cqs; /* ClusterQueues in the core's order */
	size_t n_cqs;
	ws_quota_t *quota; /* every CQ's slots */
	size_t n_quota;
	ws_lq_t *lqs; /* LocalQueues */
	size_t n_lqs;
	int64_t *lq_usage; /* per LocalQueue and slot of its CQ: admitted amounts */
	ws_wl_t *wls;	   /* listed workloads */
	size_t n_wls;
	uint32_t *cq_wl; /* per CQ lists: indexes into wls */
	size_t n_cq_wl;
	ws_vis_t *vis; /* every pending workload, CQ by CQ, each in admission order */
	size_t n_vis;
	uint32_t *lq_vis;   /* per LocalQueue, its entries of vis in order */
	ws_event_t *events; /* oldest first */
	size_t n_events;
	ws_usage_t *usage; /* by namespace, then resource (ledger_window's order) */
	size_t n_usage;
	int64_t usage_from_ms;	/* the window as counted: hour-aligned start */
	int64_t usage_to_ms;	/* ... and end */
	ledger_price_t *prices; /* the prices charged (flavors in the arena) */
	size_t n_prices;
	ws_budget_t *budgets; /* the core's budgets (econ.c) */
	size_t n_budgets;
	ws_arena_t arena; /* every string above, but vis's uids and names */
	ws_pool_t *pool;  /* vis's uids and names (a reference), or NULL */
};

/* n bytes in a, not initialized (NULL when out of memory: a->failed). */
char *ws_arena_alloc(ws_arena_t *a, size_t n);
/* Copy n bytes at s into a (NULL when out of memory: a->failed). */
const char *ws_arena_dup(ws_arena_t *a, const char *s, size_t n);
/* Free a's blocks. */
void ws_arena_free(ws_arena_t *a);
/* Copy s into snap's arena (NULL when out of memory: arena.failed). */
const char *ws_strdup(webui_snap_t *snap, const char *s);
/* Drop a reference to pool (visibility.c), freeing it with the last. */
void ws_pool_unref(ws_pool_t *pool);
/* Forget ui's names and drop its pool (webui_destroy; a build without the
 * visibility list). */
void ws_names_reset(webui_t *ui);

/* visibility.c: every pending workload copied into s->vis with its
 * positions (grouped by CQ, each CQ's in admission order:
 * queue_workloads_by_cq), indexed per LocalQueue; their uids and names
 * from ui's pool (copied there the first time a workload is listed), or
 * into s's arena without a ui. Begun for n pending workloads, given each
 * of them that is listed in their order with its brief (the pass that lists
 * the web view's pending workloads reads each once for both), ended (b
 * freed; the index made). Each GPUQ_OK or GPUQ_ENOMEM; ws_vis_end says
 * whether any failed. */
typedef struct ws_vis_build ws_vis_build_t;
int ws_vis_begin(webui_t *ui, const queue_t *q, webui_snap_t *s, size_t n, ws_vis_build_t **b);
int ws_vis_add(ws_vis_build_t *b, queue_wl_t id, const queue_workload_brief_t *v);
int ws_vis_end(ws_vis_build_t *b);

/* Free the ring's entries (webui_destroy). */
void ws_events_free(webui_t *ui);

/* ---- the UI ---- */

/* Decisions about a (token, scope). */
enum {
	WA_UNKNOWN = -1,	/* not cached (or expired): ask the apiserver */
	WA_FORBIDDEN = 0,	/* a valid token without the right */
	WA_ALLOWED = 1,		/* may read */
	WA_UNAUTHENTICATED = 2, /* the apiserver does not accept the token */
};

/* One cached decision of a (token, scope). */
typedef struct {
	uint8_t key[32];  /* SHA-256 of token NUL scope */
	int64_t until_ms; /* monotonic expiry; 0: free */
	int decision;	  /* WA_FORBIDDEN, WA_ALLOWED, WA_UNAUTHENTICATED */
	char user[128];	  /* who (for logs), truncated */
} wa_entry_t;

struct webui {
	webui_auth_mode_t mode;	   /* auth or none */
	const kube_config_t *kube; /* the apiserver (borrowed) */
	kube_client_t *client;	   /* used by the server's slow worker only */
	pthread_mutex_t auth_lock; /* guards cache */
	wa_entry_t *cache;	   /* WEBUI_AUTH_CACHE_MAX entries */
	gpuq_pub_t published;	   /* the webui_snap_t requests read (a lock held for a
				      pointer copy; requests wait on it for a fresh one) */
	atomic_llong idle_ms;	   /* webui_idle_set's (set before threads start) */
	atomic_bool leader;	   /* this replica leads */
	atomic_llong last_api_ms;  /* monotonic time of the last API request (0: none) */
	atomic_llong last_vis_ms;  /* ... and of the last visibility API request */
	bool pages;		   /* serve /ui/ and /api/v1/ (webui_routes_set) */
	bool visibility;	   /* serve /apis/visibility.gpuq.dev/ (webui_routes_set) */
	/* the controller's thread only */
	ws_event_t ring[WEBUI_EVENTS_MAX]; /* recent events (circular) */
	size_t ring_start, ring_n;	   /* oldest entry, entries */
	ledger_price_t *prices;		   /* webui_prices_set's (flavors malloc'd) */
	queue_wl_t *order[2];		   /* the last snapshot's pending and admitted
					      workloads in order: the next one's hint */
	size_t n_order[2];		   /* their counts */
	ws_name_t *names;		   /* per core workload id, its names in pool */
	size_t n_names;			   /* entries */
	ws_pool_t *pool;		   /* the visibility list's names (a reference) */
	const queue_t *names_q;		   /* the core the names are of */
	size_t names_live;		   /* pool bytes the last list used */
	size_t n_prices;		   /* entries */
};

/* ---- auth.c ---- */

/* The cached decision for (token, scope) at monotonic now_ms (WA_*;
 * WA_UNKNOWN when not cached or expired). scope: "" (cluster) or a
 * namespace. */
int wa_cache_get(webui_t *ui, const char *token, const char *scope, int64_t now_ms);
/* Remember a decision until now_ms + WEBUI_AUTH_TTL_MS (when the cache is
 * full, an expired entry or else the one expiring first goes). */
void wa_cache_put(webui_t *ui, const char *token, const char *scope, int decision, const char *user,
		  int64_t now_ms);
/* Ask the apiserver about (token, scope) and cache the answer (the slow
 * worker). A failed call caches nothing (the request gets 503). */
void wa_review(webui_t *ui, const char *token, const char *scope, int64_t now_ms);

/* ---- econ.c: budgets in the snapshot and the API ---- */

/* Copy q's budgets into s. GPUQ_ENOMEM. */
int ws_econ_fill(const queue_t *q, webui_snap_t *s);
/* The budgets as JSON: all (ns NULL), or those of namespace ns (its
 * LocalQueues' and its own). A new reference. */
json_t *ws_budgets_json(const webui_snap_t *s, const char *ns);

/* ---- snap.c ---- */

/* The publication slot, empty (webui_create). GPUQ_OK or GPUQ_ENOMEM. */
int ws_published_init(webui_t *ui);

/* The published snapshot with a new reference, or NULL. Any thread. */
webui_snap_t *ws_current(webui_t *ui);
/* Whether s (published) is older than WEBUI_PUBLISH_MS at monotonic now_ms. */
bool ws_old(const webui_snap_t *s, int64_t now_ms);
/* Wait until the published snapshot is not old (or there is none) and,
 * for the visibility API (vis), carries every pending workload, or the
 * monotonic deadline_ms passes (the server's slow worker only). */
void ws_wait_fresh(webui_t *ui, bool vis, int64_t deadline_ms);

#endif

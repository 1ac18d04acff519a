/*
 * webui: gpuq's live web view and its JSON API (/ui/ and /api/v1/... on
 * gpuq serve's own HTTPS server, docs/ui.md): the cluster (cohorts and
 * ClusterQueues, quota per flavor and resource: nominal, borrowed, lent,
 * used), one ClusterQueue (LocalQueues, fair shares, pending workloads in
 * admission order with the core's reason, admitted ones with flavor and
 * age), one tenant namespace, recent admissions, preemptions and
 * evictions, and GPU-hours and cost per namespace over the last 7 days
 * (the core's usage ledger read through ledger_window, the rule `gpuq
 * report usage` uses, at the flavors' price annotations). The page (ui/:
 * HTML, CSS, JS, embedded at build time) polls the API once a second.
 *
 * The design decision that matters: a request never reads the queue core.
 * The controller thread publishes an immutable, reference-counted snapshot
 * (webui_publish, once a second, the names and numbers copied out of the
 * core through its introspection API); a request takes a reference under a
 * lock held for a pointer copy and renders JSON from it on the server
 * thread. No answer is older than WEBUI_PUBLISH_MS: a request that finds
 * the snapshot older (after an idle spell, or a controller running late)
 * waits for the next one on the server's slow worker, never on a server
 * thread, at most WEBUI_FRESH_WAIT_MS, then answers 503. Who may read what is decided
 * by the apiserver (TokenReview, then SubjectAccessReview), on the server's
 * slow worker thread, never on a server thread, and cached for
 * WEBUI_AUTH_TTL_MS in a bounded cache: the admission path never waits on
 * it.
 *
 * Access rule: a token that may `get` gpuq.dev clusterqueues (cluster
 * scope) reads everything; any other authenticated token reads
 * /api/v1/namespaces/NS (its workloads, usage and events) for each NS where
 * it may `list` batch jobs, and nothing else. Without auth (--ui-auth none,
 * a loopback --listen only) everything is readable.
 *
 * Pending work on demand (visibility.c, docs/visibility.md): the same
 * server, snapshot and access rule serve every pending workload's positions
 * and reasons as Kueue's visibility API serves them, under
 * WEBUI_VIS_PREFIX: .../clusterqueues/CQ/pendingworkloads (cluster scope)
 * and .../namespaces/NS/localqueues/LQ/pendingworkloads (NS), with limit
 * and offset. webui_routes_set turns the pages and this API on apart.
 */
#ifndef GPUQ_WEBUI_H
#define GPUQ_WEBUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "kube/kube.h"
#include "ledger/ledger.h"
#include "policy/policy.h"
#include "queue/queue.h"
#include "http/http.h"

/* ---- Caps (each stated where a peer or the cluster could grow it) ---- */

#define WEBUI_LIST_MAX                                                                             \
	500			   /* workloads listed per page and list (a                        \
				      ClusterQueue's pending, its admitted; a                      \
				      namespace's); the totals are given too */
#define WEBUI_EVENTS_MAX 256	   /* recent admissions, preemptions, evictions kept */
#define WEBUI_REASON_MAX 384	   /* bytes of one workload's reason sentence */
#define WEBUI_AUTH_CACHE_MAX 1024  /* cached review decisions (token, scope) */
#define WEBUI_AUTH_TTL_MS 10000	   /* how long a decision is trusted */
#define WEBUI_JSON_MAX (64u << 20) /* bytes of one API reply */
/* Snapshots are built only while someone reads the API: after this long
 * without a request (the default; webui_idle_set, gpuq serve --ui-idle) no
 * new one is built (a build costs the controller O(workloads): 172 ms of
 * CPU at 100,000); the next request waits for the one it brings back. */
#define WEBUI_IDLE_MS 60000
/* The controller publishes a snapshot this often while the API is read, and
 * no answer is from a snapshot older than this. */
#define WEBUI_PUBLISH_MS 1000
/* A request that finds the snapshot older than WEBUI_PUBLISH_MS waits this
 * long at most for a fresh one (three publish intervals), then gets 503. */
#define WEBUI_FRESH_WAIT_MS 3000
/* The chargeback window the API and the page show: GPU-hours and cost per
 * namespace over the last 7 days (ledger_window, as `gpuq report usage
 * --since 7d`). */
#define WEBUI_USAGE_WINDOW_MS (7LL * 24 * 3600000)
/* Prices the web view holds: one per ResourceFlavor at most. */
#define WEBUI_PRICES_MAX POLICY_FLAVORS_MAX

/* The visibility API: its group, version and path prefix (an aggregated
 * APIService of that group would route the same paths). */
#define WEBUI_VIS_GROUP "visibility.gpuq.dev"
#define WEBUI_VIS_VERSION "v1beta1"
#define WEBUI_VIS_PREFIX "/apis/" WEBUI_VIS_GROUP "/" WEBUI_VIS_VERSION
/* Pending workloads in one answer: limit's default (Kueue's) and cap. The
 * cap is a tenth of Kueue's (100,000): an answer is rendered on a thread of
 * the server that also answers admission reviews, 10,000 items take it
 * about 30 ms and 4 MB (docs/visibility.md); page with offset for more. */
#define WEBUI_VIS_LIMIT_DEFAULT 1000
#define WEBUI_VIS_LIMIT_MAX 10000

typedef struct webui webui_t;

typedef enum {
	WEBUI_AUTH_REVIEW = 0, /* bearer tokens, TokenReview + SubjectAccessReview */
	WEBUI_AUTH_NONE = 1,   /* no auth: everything readable (loopback only) */
} webui_auth_mode_t;

/* Create the UI. kube: where TokenReviews and SubjectAccessReviews go
 * (borrowed, must outlive ui; NULL with WEBUI_AUTH_NONE). GPUQ_OK,
 * GPUQ_EINVAL (review mode without kube), GPUQ_ENOMEM, kube's errors. */
int webui_create(webui_auth_mode_t mode, const kube_config_t *kube, webui_t **out,
		 gpuq_diag_t *diag);

/* Free ui. No request may be running (stop the server first). NULL ok. */
void webui_destroy(webui_t *ui);

/* How long without an API request before snapshots stop being built
 * (default WEBUI_IDLE_MS; 1 ms .. 1 h). Before the server and the
 * controller start. */
void webui_idle_set(webui_t *ui, int64_t idle_ms);

/* Which routes ui serves (default: both): the pages and their JSON (/ui/,
 * /api/v1/: gpuq serve --ui) and the visibility API (WEBUI_VIS_PREFIX:
 * gpuq serve --visibility); a route turned off answers 404. Before
 * webui_attach. */
void webui_routes_set(webui_t *ui, bool pages, bool visibility);

/* Serve ui on srv (http_server_app_set); before http_server_start. */
void webui_attach(webui_t *ui, http_server_t *srv);

/* The app function webui_attach installs (http_app_fn with ctx = ui):
 * /ui -> /ui/, /ui/... the embedded files, /api/v1/... the JSON after the
 * access check (401 without a bearer token or with one the apiserver
 * refuses, 403 without the right, HTTP_APP_SLOW when the decision is not
 * cached yet, 503 when the review failed). Public for tests. */
int webui_app_handle(void *ctx, const http_app_request_t *rq, bool retry, http_app_reply_t *out);

/* ---- The controller's thread (one thread; not thread-safe among these) ---- */

/* Note what a cycle's or tick's result did (admissions, preemptions,
 * evictions), at wall time now_ms, into the recent-events ring. q is the
 * core that made res. */
void webui_events_note(webui_t *ui, const queue_t *q, const queue_result_t *res, int64_t now_ms);

/* Copy q's state (cohorts, ClusterQueues, LocalQueues, quota, workloads up
 * to the caps, the events, and the usage per namespace over the last
 * WEBUI_USAGE_WINDOW_MS from q's ledger at the prices set) into a new snapshot at wall time now_ms
 * and make it the one requests read. q NULL: no core (the API answers 503). The old snapshot is
 * freed by its last reader. O(live workloads log workloads + quota slots). Does nothing while no
 * API request came in the idle time (webui_idle_set) and a snapshot exists. The caller publishes
 * every WEBUI_PUBLISH_MS: requests wait for a snapshot younger than that. GPUQ_OK; GPUQ_ENOMEM
 * keeps the previous one. */
int webui_publish(webui_t *ui, const queue_t *q, int64_t now_ms);

/* webui_publish once, for a caller whose q never changes (the offline
 * --policy-dir view): the snapshot never counts as old. */
int webui_publish_fixed(webui_t *ui, const queue_t *q, int64_t now_ms);

/* The prices (per flavor, per accelerator unit-hour) the next snapshots
 * charge usage at: copied (the strings too); replaces the ones before.
 * The controller calls it when it loads a policy. GPUQ_OK, GPUQ_EINVAL
 * (n > WEBUI_PRICES_MAX, a price not in 0..LEDGER_PRICE_MAX), GPUQ_ENOMEM (the old prices stay). */
int webui_prices_set(webui_t *ui, const ledger_price_t *prices, size_t n);

/* webui_prices_set with p's ResourceFlavor price annotations
 * (POLICY_ANNOT_PRICE; flavors without one cost 0). Its codes. */
int webui_prices_from_policy(webui_t *ui, const policy_t *p);

/* Whether this replica leads; a follower's API answers 503 (only the
 * leader's core decides). Withdraws the snapshot when it stops leading. */
void webui_leader_set(webui_t *ui, bool leader);

/* ---- Rendering (pure; any thread; for tests and the server) ---- */

typedef struct webui_snap webui_snap_t;

/* Build a snapshot of q (as webui_publish does) without publishing it;
 * events are the ones ui noted and prices the ones set (ui may be NULL:
 * none). Usage rows: ledger_window over queue_ledger(q), by namespace,
 * since now_ms - WEBUI_USAGE_WINDOW_MS, until and now now_ms. ui keeps the
 * order of the workloads it listed, where the next build starts its sort
 * (the controller's thread only). One reference. GPUQ_OK, GPUQ_ENOMEM. */
int webui_snap_build(webui_t *ui, const queue_t *q, int64_t now_ms, webui_snap_t **out);
void webui_snap_unref(webui_snap_t *s); /* NULL ok */

/* What a caller may read. */
typedef struct {
	bool cluster;		/* everything */
	const char *namespace_; /* else: this namespace only (NULL: nothing) */
} webui_access_t;

/* The JSON of API path (e.g. "/api/v1/cluster") from snapshot s for a
 * caller with access acc: *status (200, 403, 404, 503) and *body (malloc'd,
 * NUL-terminated, the caller's) with *len. Paths: /api/v1/cluster,
 * /api/v1/clusterqueues/NAME, /api/v1/namespaces/NS, /api/v1/events
 * (docs/ui.md). s NULL: 503. GPUQ_OK, GPUQ_ENOMEM, GPUQ_ELIMIT (past
 * WEBUI_JSON_MAX). */
int webui_render(const webui_snap_t *s, const char *path, const webui_access_t *acc,
		 unsigned *status, char **body, size_t *len);

/* The visibility API's answer to path (under WEBUI_VIS_PREFIX; the
 * prefix itself is the group version's discovery document) with query
 * (the request's arguments "limit=N&offset=M", NULL: none) from snapshot
 * s for a caller with access acc: *status (200; 400 a bad limit or offset;
 * 403; 404 no such path, ClusterQueue or LocalQueue; 503 s NULL) and *body
 * (malloc'd, the caller's: a PendingWorkloadsSummary, an APIResourceList or
 * a Kubernetes Status) with *len. GPUQ_OK, GPUQ_ENOMEM, GPUQ_ELIMIT (past
 * WEBUI_JSON_MAX). */
int webui_vis_render(const webui_snap_t *s, const char *path, const char *query,
		     const webui_access_t *acc, unsigned *status, char **body, size_t *len);

/* A Kubernetes Status of code and msg, as webui_vis_render answers errors
 * (the server's 401 and 503 on the visibility API too). */
int webui_vis_error(unsigned code, const char *msg, unsigned *status, char **body, size_t *len);

/* limit and offset of a query ("limit=N&offset=M", other arguments
 * ignored; NULL: none): limit 0 or absent is WEBUI_VIS_LIMIT_DEFAULT, above
 * WEBUI_VIS_LIMIT_MAX is the cap (as Kueue clamps to its own); offset
 * absent is 0. GPUQ_OK, or GPUQ_EINVAL with why (cap bytes) naming the
 * argument and its value when one is not a whole number. */
int webui_vis_options(const char *query, int64_t *limit, int64_t *offset, char *why, size_t cap);

/* ---- The access decision (pure; for tests and the worker) ---- */

/* The scope a path needs: "" for cluster scope, else the namespace of
 * /api/v1/namespaces/NS or WEBUI_VIS_PREFIX/namespaces/NS (pointing into
 * path, up to the next '/': *ns_len bytes). */
void webui_path_scope(const char *path, const char **ns, size_t *ns_len);

/* The body of a TokenReview for token (malloc'd JSON). NULL: no memory. */
char *webui_token_review_body(const char *token);

/* Read a TokenReview reply: GPUQ_OK with user (cap bytes), its uid and its
 * groups as a JSON array text (groups_json, cap bytes, "[]" when none) when
 * status.authenticated is true; GPUQ_EDENIED when false (a bad or expired
 * token); GPUQ_ECORRUPT when the reply is not a TokenReview. */
int webui_token_review_parse(const char *reply, size_t len, char *user, char *uid,
			     char *groups_json, size_t cap);

/* The body of a SubjectAccessReview: user (uid, groups_json from above)
 * may get gpuq.dev clusterqueues (ns NULL), or may list batch jobs in ns. */
char *webui_sar_body(const char *user, const char *uid, const char *groups_json, const char *ns);

/* Read a SubjectAccessReview reply: GPUQ_OK and *allowed (status.allowed),
 * or GPUQ_ECORRUPT. */
int webui_sar_parse(const char *reply, size_t len, bool *allowed);

#endif

/*
 * kube: gpuq's client of the Kubernetes apiserver, an adapter over libcurl
 * (TLS, keep-alive), jansson (bodies) and the policy module's YAML reader
 * (kubeconfig files).
 *
 * What it offers: a configuration from a kubeconfig file or from the Pod's
 * service account; plain requests (GET, POST, PUT, PATCH in its three kinds:
 * JSON patch, merge patch, server-side apply with field manager "gpuq");
 * LIST-then-WATCH loops that resume from resourceVersion, follow bookmarks,
 * relist on 410 Gone and reconnect with backoff and jitter, and follow a
 * collection a CRD serves as it comes and goes (KUBE_EV_UNSERVED); Events
 * (events.k8s.io/v1); and leader election on a coordination.k8s.io Lease.
 *
 * The design decision that matters: every byte from the apiserver passes a
 * bounded, pure decoder before anyone sees it. A watch stream is cut into
 * events by kube_watch_decoder (no I/O, no clock: fuzzed, and its corpus runs
 * in `make test`); an event larger than KUBE_EVENT_MAX or one that is not a
 * well-formed watch event stops that stream, which then relists, so a
 * misbehaving peer costs a relist, never memory or a crash. Status codes are
 * translated once, here: 404 GPUQ_ENOTFOUND, 409 GPUQ_ECONFLICT, 410
 * GPUQ_EGONE, 422/400 GPUQ_EINVAL, 401/403 GPUQ_EDENIED, other failures
 * GPUQ_EHTTP; 429 and 503 with Retry-After are waited out and retried
 * (KUBE_RETRIES_MAX times) inside kube_request, never dropped.
 *
 * Threads: a kube_config_t is immutable after creation (but for its token
 * cache, which has its own lock) and may be shared by threads. A
 * kube_client_t (one keep-alive connection, its own rate limiter) is used by
 * one thread at a time; a daemon gives each thread its own. A kube_fence_t
 * (the Lease's deadline and a stop flag) is shared by any threads and
 * consulted by the clients attached to it. The clock is read here (rate
 * limits, backoff, lease times): this is an adapter, not a core.
 */
#ifndef GPUQ_KUBE_H
#define GPUQ_KUBE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>

#include "base/base.h"
#include "jv/jv.h"

/* ---- Caps ---- */

#define KUBE_CONFIG_MAX (1u << 20)    /* bytes in a kubeconfig file */
#define KUBE_PEM_MAX (256u << 10)     /* bytes of one certificate, key or CA bundle */
#define KUBE_TOKEN_MAX (16u << 10)    /* bytes of a bearer token */
#define KUBE_URL_MAX 4096	      /* bytes in a request URL */
#define KUBE_RESPONSE_MAX (64u << 20) /* bytes in one response body (a LIST page) */
/* bytes in one watch event (one line): a Job with managedFields is ~10 KiB;
 * etcd's own object cap is 1.5 MiB */
#define KUBE_EVENT_MAX (4u << 20)
#define KUBE_LIST_PAGE 500	  /* items per LIST page (limit=) */
#define KUBE_RETRIES_MAX 5	  /* 429/503 retries of one request */
#define KUBE_RETRY_AFTER_MAX_S 30 /* longest Retry-After honoured, seconds */
#define KUBE_WATCH_TIMEOUT_S 300  /* timeoutSeconds of one watch request */
#define KUBE_BACKOFF_BASE_MS 200  /* first reconnect delay of a watch */
#define KUBE_BACKOFF_MAX_MS                                                                        \
	8000 /* reconnect delay ceiling: a watch is back within                                    \
	      ~8 s of the apiserver (one try per watch per                                         \
	      8 s while it is down is light) */
/* How often a watch loop asks again for a collection the apiserver does not
 * serve (kube_watch_opts_t.may_be_unserved): a kind whose CRD is installed
 * after gpuq started is listed within this long; each ask is one LIST
 * answered 404, about 8 of them per 10 s when no optional kind is installed. */
#define KUBE_UNSERVED_POLL_MS 10000
#define KUBE_REQUEST_TIMEOUT_MS 30000 /* whole-request timeout (not watches) */
#define KUBE_FIELD_MANAGER "gpuq"     /* server-side apply field manager */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- Configuration ---- */

typedef struct kube_config kube_config_t; /* where and how to reach the apiserver */

/* Read a kubeconfig file (YAML or JSON) and take its current context: the
 * cluster's server and certificate-authority(-data) (or
 * insecure-skip-tls-verify), the user's client-certificate(-data) and
 * client-key(-data), token or tokenFile. Relative file paths resolve against
 * the kubeconfig's directory. GPUQ_OK and *out (free with
 * kube_config_destroy); GPUQ_EIO (unreadable file), GPUQ_EINVAL (diag names
 * the field: no current-context, context "x" not found, no server, ...),
 * GPUQ_ELIMIT (a cap above), GPUQ_ENOMEM. */
int kube_config_load(const char *path, kube_config_t **out, gpuq_diag_t *diag);

/* The in-cluster configuration: https://$KUBERNETES_SERVICE_HOST:
 * $KUBERNETES_SERVICE_PORT, CA and token from KUBE_SA_DIR (sa_dir overrides
 * it when not NULL, for tests). The token file is re-read when it changes
 * (kubelet rotates it). GPUQ_EINVAL (variables unset), GPUQ_EIO. */
int kube_config_in_cluster(const char *sa_dir, kube_config_t **out, gpuq_diag_t *diag);

/* A configuration for another HTTPS server that takes the same bearer
 * token (gpuq's own port: its visibility API and web view, which review the
 * token with the apiserver): server ("https://host:port"), its CA bundle
 * from ca_file (NULL: the system's), or no verification (insecure); the
 * token given (NULL: base's token, its token file re-read as base's is).
 * No client certificate is sent. GPUQ_OK and *out, GPUQ_EINVAL (server not
 * https://, no token anywhere), GPUQ_EIO, GPUQ_ELIMIT, GPUQ_ENOMEM. */
int kube_config_at(const kube_config_t *base, const char *server, const char *ca_file,
		   bool insecure, const char *token, kube_config_t **out, gpuq_diag_t *diag);

/* Free a configuration. NULL is fine. */
void kube_config_destroy(kube_config_t *cfg);

/* The server URL ("https://127.0.0.1:6443"), borrowed. */
const char *kube_config_server(const kube_config_t *cfg);

/* The namespace of the current context (kubeconfig) or of the service
 * account (in cluster), or NULL. Borrowed. */
const char *kube_config_namespace(const kube_config_t *cfg);

/* ---- Clients and plain requests ---- */

typedef struct kube_client kube_client_t; /* one connection, one thread */

typedef struct {
	double qps;	 /* sustained requests per second (default 50; 0: no limit) */
	unsigned burst;	 /* requests allowed at once above qps (default 100) */
	long timeout_ms; /* whole-request timeout of one attempt (0:
			    KUBE_REQUEST_TIMEOUT_MS); a fenced write's is cut
			    further to the lease left */
	bool no_retry;	 /* 429 and 503 are returned (GPUQ_EAGAIN), not waited
			    out: for a caller with a rhythm of its own (the
			    Lease's renewals) */
} kube_client_opts_t;

/* Defaults: qps 50, burst 100, KUBE_REQUEST_TIMEOUT_MS, retries on. */
void kube_client_opts_default(kube_client_opts_t *o);

/* A client of cfg (borrowed: must outlive the client). o may be NULL.
 * GPUQ_ENOMEM, GPUQ_ETLS (a PEM that curl cannot use). */
int kube_client_create(const kube_config_t *cfg, const kube_client_opts_t *o, kube_client_t **out,
		       gpuq_diag_t *diag);

/* Free a client. NULL is fine. */
void kube_client_destroy(kube_client_t *c);

typedef struct {
	long status; /* HTTP status (0 when no response arrived) */
	char *body;  /* owned, NUL-terminated (empty when none) */
	size_t len;  /* bytes in body, NUL not counted */
} kube_response_t;

/* Free the body; the response may be reused. */
void kube_response_deinit(kube_response_t *r);

/* One request: method "GET"/"POST"/"PUT"/"PATCH"/"DELETE", path starting
 * with "/" (query string included), body of content_type (NULL/0 for
 * none). Waits for the client's rate limiter first; retries 429 and 503
 * after their Retry-After (at most KUBE_RETRY_AFTER_MAX_S, KUBE_RETRIES_MAX
 * times). Returns GPUQ_OK for a 2xx with *resp filled (caller deinits), or
 * the translated error (see the header) with *resp still filled when a
 * response arrived, and diag holding "<METHOD> <path>: <status>: <the
 * Status message>". GPUQ_EHTTP for a transport failure (diag has curl's
 * words), GPUQ_ELIMIT for a body over KUBE_RESPONSE_MAX. On a client with a
 * fence (kube_client_fence): GPUQ_ESTOPPED once it stops, GPUQ_EFENCED
 * for a fenced write without the lease; every wait (limiter, Retry-After)
 * ends at once then, and an attempt in flight is cut off. */
int kube_request(kube_client_t *c, const char *method, const char *path, const char *content_type,
		 const char *body, size_t len, kube_response_t *resp, gpuq_diag_t *diag);

/* kube_request with a JSON body and a parsed JSON reply: *reply (may be
 * NULL when not wanted) is a new reference the caller decrefs. body may be
 * NULL. GPUQ_ECORRUPT when a 2xx reply is not a JSON object. */
int kube_request_json(kube_client_t *c, const char *method, const char *path,
		      const char *content_type, const json_t *body, json_t **reply,
		      gpuq_diag_t *diag);

typedef enum {
	KUBE_PATCH_JSON = 0,  /* application/json-patch+json (RFC 6902) */
	KUBE_PATCH_MERGE = 1, /* application/merge-patch+json (RFC 7386) */
	KUBE_PATCH_APPLY = 2, /* application/apply-patch+yaml: server-side apply as
				 KUBE_FIELD_MANAGER, force=true */
} kube_patch_t;

/* PATCH path with body (a JSON array for KUBE_PATCH_JSON, an object for the
 * others; a JSON patch may carry a `test` op on /metadata/resourceVersion
 * as its precondition: when the patch does not apply, the apiserver answers
 * 422 with a bare Status, translated to GPUQ_ECONFLICT; a 422 naming a
 * field of the patched object stays GPUQ_EINVAL). *reply as for
 * kube_request_json. */
int kube_patch(kube_client_t *c, const char *path, kube_patch_t kind, const json_t *body,
	       json_t **reply, gpuq_diag_t *diag);

/* kube_patch with the reply as the apiserver sent it, unparsed: on GPUQ_OK
 * *reply (may be NULL when not wanted) holds its bytes and the caller
 * deinits it (kube_response_deinit); on an error *reply is empty. For a
 * caller that reads the object with its own reader (the controller decodes
 * a released workload's reply once, as it decodes its watch events). */
int kube_patch_text(kube_client_t *c, const char *path, kube_patch_t kind, const json_t *body,
		    kube_response_t *reply, gpuq_diag_t *diag);

/* Who this client is to the apiserver: a SelfSubjectReview
 * (authentication.k8s.io/v1, any authenticated user may create one) gives
 * its userInfo.username (a ServiceAccount's "system:serviceaccount:NS:NAME",
 * a kubeconfig user's name) into user[0..cap). kube_request_json's codes;
 * GPUQ_ECORRUPT for a reply without a username, GPUQ_ELIMIT when it does
 * not fit. */
int kube_self_user(kube_client_t *c, char *user, size_t cap, gpuq_diag_t *diag);

/* Whether namespace ns exists: GPUQ_OK; GPUQ_ENOTFOUND with "namespace \"NS\"
 * does not exist" in diag; kube_request_json's other codes. */
int kube_namespace_check(kube_client_t *c, const char *ns, gpuq_diag_t *diag);

/* Read a whole file of at most cap bytes into a new NUL-terminated buffer
 * (*len may be NULL). GPUQ_EIO, GPUQ_ELIMIT, GPUQ_ENOMEM. */
int kube_file_read(const char *path, size_t cap, char **out, size_t *len, gpuq_diag_t *diag);

/* Percent-encode s for a path segment or query value into out (cap bytes,
 * NUL-terminated). GPUQ_ELIMIT when it does not fit. Pure. */
int kube_escape(const char *s, char *out, size_t cap);

/* ---- Fencing: a leader writes only while its Lease holds ---- */

/* A fence is the Lease's deadline and a stop flag, shared by the clients
 * of one daemon (kube_client_fence). The Lease's keeper moves the deadline
 * (kube_fence_hold after each renewal, kube_fence_drop when another replica
 * holds it); every request of an attached client consults it before each
 * attempt, so no write starts once the lease has run out, none runs past it
 * (its timeout is cut to the lease left), and every wait in kube_request
 * (the rate limiter, a Retry-After) ends at once when the lease is dropped,
 * runs out before the wait would, or the fence stops (SIGTERM).
 *
 * The deadline is judged on this replica's monotonic clock from when the
 * renewal that succeeded was SENT (kube_lease_deadline): a standby takes the
 * Lease over only after it has seen that renewal's record unchanged for the
 * whole duration on its own clock, and it can only see it after it was sent,
 * so no standby acts before sent + duration. The margin
 * (kube_lease_margin_ms) is kept in hand for what the client cannot see: a
 * write that left before the deadline but is still being applied (the
 * apiserver's admission and etcd commit), scheduling delay between the
 * check and the send, and the two monotonic clocks' rate difference (NTP
 * slews at most 500 ppm: 7.5 ms in 15 s).
 *
 * Threads: every function may be called from any thread; the fence must
 * outlive the clients attached to it. */
typedef struct kube_fence kube_fence_t;

typedef enum {
	KUBE_FENCE_STOP = 0,   /* only the stop flag: waits and transfers end on stop */
	KUBE_FENCE_WRITES = 1, /* and every request but GET needs the lease held */
} kube_fence_mode_t;

/* The margin, in ms, a leader keeps between its last write and the earliest
 * moment a standby may take its Lease: a fifth of the duration, at least 1 s
 * (3 s of the default 15 s; client-go's renewDeadline keeps 5 s). Pure. */
int64_t kube_lease_margin_ms(int duration_s);

/* Monotonic ms until which a renewal sent at sent_ms (monotonic, read
 * before the request went out) lets this replica act: sent_ms + duration -
 * margin. Pure. */
int64_t kube_lease_deadline(int64_t sent_ms, int duration_s);

/* Whether an attempt planned for monotonic at_ms may go, for a request
 * whose waits and attempts must end by until_ms (the lease's deadline for
 * a fenced write; INT64_MAX otherwise): GPUQ_ESTOPPED when stopping,
 * GPUQ_EFENCED when until_ms is at or before at_ms (so nobody sleeps
 * toward a send that could not happen); else GPUQ_OK and *timeout_ms, the
 * attempt's whole-request timeout: base_ms cut to until_ms - at_ms. Pure:
 * kube_request's every wait and attempt goes through it. */
int kube_fence_plan(int64_t until_ms, bool stopping, int64_t at_ms, long base_ms, long *timeout_ms);

/* A fence not held and not stopping. GPUQ_ENOMEM. */
int kube_fence_create(kube_fence_t **out);

/* Free. NULL is fine. No client may use it any more. */
void kube_fence_destroy(kube_fence_t *f);

/* The lease holds until monotonic until_ms (INT64_MAX: for good, a replica
 * without election). A hold that follows a gap (the deadline had passed, or
 * a drop) starts a new term. Wakes whoever waits for the lease. */
void kube_fence_hold(kube_fence_t *f, int64_t until_ms);

/* The lease is lost now: fenced writes are refused, their waits and
 * transfers end, until the next hold. */
void kube_fence_drop(kube_fence_t *f);

/* Stop: every request of every attached client is refused (GPUQ_ESTOPPED),
 * its waits and transfers end, until kube_fence_resume (a daemon's last
 * writes, after its threads have been joined). */
void kube_fence_stop(kube_fence_t *f);
void kube_fence_resume(kube_fence_t *f);
bool kube_fence_stopping(const kube_fence_t *f);

/* Monotonic ms the lease is held until (0: not held; it may be in the past). */
int64_t kube_fence_until(const kube_fence_t *f);

/* Whether the lease holds at monotonic now_ms. */
bool kube_fence_held(const kube_fence_t *f, int64_t now_ms);

/* Terms so far: bumped by every hold after a gap, so a thread that was busy
 * while the lease lapsed and came back can tell (compare with the term it
 * led in). Read kube_fence_held first, then this: a thread that sees a new
 * deadline sees its term. Holds and drops come from one thread. */
uint64_t kube_fence_term(const kube_fence_t *f);

/* ---- The fence token: the apiserver checks a write's term itself ----
 *
 * A write already on its way when the lease runs out (held by a proxy, or
 * queued in the apiserver) can still land after a successor acted; no
 * client-side deadline can stop it. So every fenced write of a term also
 * names the term, as its fieldManager (a query parameter every POST, PUT and
 * PATCH takes, which admission sees as request.options.fieldManager):
 * "gpuq-lease-<leaseTransitions>-<holderIdentity>" of the Lease record that
 * holds. deploy/'s ValidatingAdmissionPolicy gpuq-fence, whose parameter is
 * that Lease, refuses a write naming any other term at the moment the
 * apiserver would store it. A DELETE takes no fieldManager and is not
 * covered (gpuq deletes only to free capacity). */
#define KUBE_FENCE_TOKEN_PREFIX "gpuq-lease-"
#define KUBE_FENCE_TOKEN_MAX 128    /* the apiserver's limit on a fieldManager */
#define KUBE_FENCE_IDENTITY_MAX 100 /* an identity whose token fits in any term */

/* The token of the term (transitions, identity) into out. GPUQ_ELIMIT when
 * it would exceed KUBE_FENCE_TOKEN_MAX or cap (out then ""). Pure. */
int kube_fence_token_format(uint32_t transitions, const char *identity, char *out, size_t cap);

/* The token the fenced writes name from now on ("": none, the writes name
 * no fieldManager). Set it before the hold of its term. */
void kube_fence_set_token(kube_fence_t *f, const char *token);

/* The token in force into out (cap >= KUBE_FENCE_TOKEN_MAX + 1). */
void kube_fence_token(kube_fence_t *f, char *out, size_t cap);

/* path with fieldManager=token (percent-encoded) added to its query, into
 * out. GPUQ_ELIMIT when it does not fit. Pure. */
int kube_fenced_path(const char *path, const char *token, char *out, size_t cap);

/* Sleep until monotonic wake_ms. GPUQ_OK then; GPUQ_ESTOPPED at once on
 * stop; with lease, GPUQ_EFENCED at once when the lease is dropped or
 * would run out by wake_ms. */
int kube_fence_sleep(kube_fence_t *f, int64_t wake_ms, bool lease);

/* Wait until the lease holds, the fence stops, or monotonic until_ms
 * passes; returns whether the lease holds. */
bool kube_fence_await(kube_fence_t *f, int64_t until_ms);

/* Attach f (borrowed; NULL detaches) to client c, in mode. Call it before
 * the client's thread uses it, or from that thread. */
void kube_client_fence(kube_client_t *c, kube_fence_t *f, kube_fence_mode_t mode);

/* ---- The watch-stream decoder (pure; fuzzed) ---- */

typedef enum {
	KUBE_EV_ADDED = 0,    /* an object appeared (also every item of a LIST) */
	KUBE_EV_MODIFIED = 1, /* an object changed */
	KUBE_EV_DELETED = 2,  /* an object is gone (its last state) */
	KUBE_EV_BOOKMARK = 3, /* only a resourceVersion to resume from */
	KUBE_EV_ERROR = 4,    /* a Status object; code 410 means relist */
	KUBE_EV_RESET = 5,    /* watch loop only: a full LIST begins; objects not
				 re-announced before KUBE_EV_SYNCED are gone */
	KUBE_EV_SYNCED = 6,   /* watch loop only: the LIST is complete */
	KUBE_EV_UNSERVED = 7, /* watch loop only (kube_watch_opts_t.may_be_unserved):
				 a LIST answered 404, the apiserver does not serve
				 the collection (its CRD not installed, or
				 removed): every object announced before is gone.
				 Once per change; RESET ... SYNCED follow when it
				 is served again */
} kube_event_type_t;

typedef struct {
	kube_event_type_t type;	      /* what happened */
	const json_t *object;	      /* the object (borrowed, valid during the
					 callback; NULL for RESET/SYNCED, and for
					 every event of a fast decoder) */
	const jv_t *fast;	      /* a fast decoder's (kube_watch_decoder_fast,
					 kube_watch_opts_t.fast): the object in
					 jv/'s tree (borrowed, valid during the
					 callback); NULL otherwise */
	const char *list_api_version; /* a LIST item's: the list's apiVersion
					 (items carry none; a jansson item gets it
					 written into it instead); NULL otherwise */
	const char *list_kind;	      /* ... and the item's kind ("JobList" less
					 "List"); NULL otherwise */
	const char *resource_version; /* object's metadata.resourceVersion (for
					 ERROR: ""), borrowed */
	long code;		      /* ERROR only: the Status code (410 Gone) */
} kube_event_t;

/* Called once per event. Return 0 to go on; non-zero stops the stream and
 * is handed back to the caller. */
typedef int (*kube_event_cb)(void *ctx, const kube_event_t *ev);

typedef struct kube_watch_decoder kube_watch_decoder_t;

/* A decoder of newline-delimited watch events, each at most max_event bytes
 * (0: KUBE_EVENT_MAX). GPUQ_ENOMEM. */
int kube_watch_decoder_create(size_t max_event, kube_event_cb cb, void *ctx,
			      kube_watch_decoder_t **out);
void kube_watch_decoder_destroy(kube_watch_decoder_t *d); /* NULL is fine */

/* Feed the next len bytes of the stream (any split). Calls cb for every
 * complete (newline-terminated) event; blank lines are keep-alives. Returns
 * GPUQ_OK or, sticky (every later call returns it too, since the bytes after
 * it were not decoded): the callback's non-zero value, GPUQ_ELIMIT for an
 * event over the cap, GPUQ_ENOMEM, or GPUQ_ECORRUPT for a line that is not a
 * watch event: not JSON, not an object, unknown or missing "type", "object"
 * not an object, or a non-ERROR object whose metadata.resourceVersion is
 * missing, empty or over 64 bytes; diag (may be NULL) says which. */
int kube_watch_decoder_feed(kube_watch_decoder_t *d, const char *buf, size_t len,
			    gpuq_diag_t *diag);

/* Events handed to the callback so far (a refused one is not). */
uint64_t kube_watch_decoder_events(const kube_watch_decoder_t *d);

/* Every event is read once, by jv/'s reader (one set of checks, the
 * refusals above; a duplicate object key in the event is read, the first
 * counting, not refused: the apiserver never sends one). fast hands
 * callbacks the object in that tree, kube_event_t.fast (a watched
 * collection whose every event is decoded once, on the watch thread, into
 * a workload: bench/bench_apply); else (the default) a jansson tree built
 * from it, kube_event_t.object, for the consumers of jansson values (the
 * policy kinds' decoders), with no second parse of the text: a number
 * jansson would refuse (an integer past json_int_t, a real that overflows)
 * or a duplicate key inside the object is refused, GPUQ_ECORRUPT, as
 * jansson's parse refused it. Set before the first feed. */
void kube_watch_decoder_fast(kube_watch_decoder_t *d, bool fast);

/* ---- LIST then WATCH ---- */

typedef struct {
	const char *path;	    /* collection path, e.g. "/apis/batch/v1/jobs" */
	const char *label_selector; /* labelSelector query value, or NULL */
	const char *name;	    /* short name for logs ("jobs") */
	const atomic_bool *stop;    /* the loop returns soon after *stop becomes true */
	bool fast;		    /* deliver objects in jv/'s tree (kube_event_t.fast),
				       LIST pages included, instead of a jansson tree
				       built from it (every event and page is read
				       once, by jv/'s reader, either way) */
	bool may_be_unserved;	    /* a LIST answered 404 means the collection is not
				       served (a CRD's): KUBE_EV_UNSERVED, then a LIST
				       every unserved_poll_ms until one is answered,
				       no failure logged; else a 404 is a failure like
				       any other */
	int64_t unserved_poll_ms;   /* 0: KUBE_UNSERVED_POLL_MS */
} kube_watch_opts_t;

/* Run LIST then WATCH of opts->path until *opts->stop: announces
 * KUBE_EV_RESET (once the first LIST page is in), every listed object as
 * ADDED, KUBE_EV_SYNCED, then the watch's events; with may_be_unserved, a
 * collection not served as KUBE_EV_UNSERVED. A watch that ends (timeoutSeconds, a dropped
 * connection) resumes from the last resourceVersion seen (bookmarks included); a 410 Gone, an ERROR
 * event or a bad or oversized event relists (RESET ... SYNCED again). Failures are logged once per
 * streak and retried after a backoff of KUBE_BACKOFF_BASE_MS doubling to KUBE_BACKOFF_MAX_MS, with
 * jitter; a watch refused or ended at once without an event counts as one,
 * and only a watch that ran ends a streak (a working LIST does not). A stop
 * during a paged LIST returns without SYNCED. The client c is used by this
 * loop only while it runs. Returns GPUQ_OK when stopped, or the callback's
 * non-zero value. */
int kube_watch_run(kube_client_t *c, const kube_watch_opts_t *opts, kube_event_cb cb, void *ctx);

/* ---- Events (events.k8s.io/v1) ---- */

typedef struct {
	const char *api_version; /* regarding: "batch/v1" */
	const char *kind;	 /* "Job" */
	const char *namespace_;	 /* the object's namespace */
	const char *name;	 /* its name */
	const char *uid;	 /* its uid (may be NULL) */
} kube_ref_t;

/* Post an Event about `regarding` in its namespace: type "Normal" or
 * "Warning", reason (CamelCase, e.g. "Admitted", "Preempted"), action
 * ("Admit", "Preempt"), note (a sentence, cut at 1 KiB as the apiserver
 * allows). reportingController "gpuq.dev/gpuq", reportingInstance instance.
 * Errors as kube_request. */
int kube_event_post(kube_client_t *c, const kube_ref_t *regarding, const char *type,
		    const char *reason, const char *action, const char *note, const char *instance,
		    gpuq_diag_t *diag);

/* ---- Leader election (coordination.k8s.io/v1 Lease) ---- */

typedef struct {
	const char *namespace_; /* the Lease's namespace */
	const char *name;	/* its name */
	const char *identity;	/* this replica's holderIdentity */
	int duration_s;		/* leaseDurationSeconds (default 15) */
} kube_lease_opts_t;

/* Kept by the caller between rounds (zero it before the first). */
typedef struct {
	bool leader;	      /* this replica holds the lease now */
	char holder[256];     /* the current holder ("" when none) */
	uint32_t transitions; /* leaseTransitions */
	char observed[300];   /* the holder and renewTime last seen */
	int64_t observed_ms;  /* monotonic ms when that record was first seen */
} kube_lease_state_t;

/* One round of leader election at wall time now_ms (written as renewTime):
 * create the Lease when absent; renew it when held by identity; take it
 * over when it is free, or when its record (holder, renewTime) has not
 * changed for leaseDurationSeconds on this replica's own monotonic clock
 * since this replica first saw it (client-go's rule: clock skew between
 * replicas does not matter) (leaseTransitions + 1). Every
 * write carries the read resourceVersion, so two replicas racing get one
 * winner (the other sees GPUQ_ECONFLICT and reports not leader). *st says
 * who holds it. Returns GPUQ_OK (leader or not) or a transport error (the
 * caller must then assume it is NOT leader once its own lease would have
 * run out: kube_lease_deadline of the round's start). */
int kube_lease_try(kube_client_t *c, const kube_lease_opts_t *o, int64_t now_ms,
		   kube_lease_state_t *st, gpuq_diag_t *diag);

/* Give the lease up (holderIdentity cleared) if identity holds it, so a
 * successor need not wait out the duration. Best effort. */
int kube_lease_release(kube_client_t *c, const kube_lease_opts_t *o, gpuq_diag_t *diag);

/* ---- Time ---- */

/* Wall clock in ms since the epoch (CLOCK_REALTIME). */
int64_t kube_now_ms(void);

/* ---- A plain GET of one URL outside the apiserver (kube/fetch.c) ----
 *
 * libcurl stays in kube/ alone: the one other URL gpuq reads (dcgm/'s
 * scrape of --dcgm-url) goes through here, with no apiserver credentials. */

/* One connection kept alive between GETs; one thread at a time. */
typedef struct kube_fetch kube_fetch_t;

/* GPUQ_OK and *out, or GPUQ_ENOMEM. */
int kube_fetch_create(kube_fetch_t **out);

/* Close the connection and free. NULL is a no-op. */
void kube_fetch_destroy(kube_fetch_t *f);

/* What to GET. */
typedef struct {
	const char *url;	   /* http:// or https:// (system CAs); no other scheme */
	const char *accept;	   /* the Accept header, or NULL for none */
	int64_t timeout_ms;	   /* the whole transfer at most, connect included */
	size_t body_max;	   /* body bytes at most (a gzip body counted unpacked) */
	const atomic_bool *cancel; /* the transfer is aborted once it reads true
				      (another thread stops the caller); NULL: never */
} kube_fetch_req_t;

/* GET rq->url into *body (malloc'd, NUL-terminated, the caller's; NULL for
 * an empty body) and *len. GPUQ_OK on HTTP 200; GPUQ_ELIMIT past body_max
 * ("body over N bytes"); GPUQ_EHTTP for a transfer that failed (libcurl's
 * message), was cancelled, or answered another status ("HTTP 503");
 * GPUQ_ENOMEM. On error *body is NULL and diag says why. */
int kube_fetch_get(kube_fetch_t *f, const kube_fetch_req_t *rq, char **body, size_t *len,
		   gpuq_diag_t *diag);

#endif

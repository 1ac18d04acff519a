/*
 * http: the daemon's HTTPS server. libmicrohttpd with a thread pool over
 * GnuTLS (TLS 1.2 and 1.3 only), the serving pair reloaded from disk without
 * dropping a request, routing, the metrics registry and the Prometheus text
 * it renders. Admission (webhook/), the web view (webui/), the queue metrics
 * (qmetrics/) and idle GPU time (dcgm/) sit on it as peers, each through one
 * hook of this header; the server knows none of them.
 *
 * The design decision that matters: the server owns everything a peer
 * could get wrong about HTTP, and a peer only answers. Request smuggling
 * checks, body caps and the body budget, the header deadline, keep-alive,
 * graceful stop and readiness are decided here once; a peer gets a whole,
 * capped request and hands back a reply. Work that may be slow (an
 * apiserver call) never runs on a server thread: an app says so and the
 * server runs it on its own worker (HTTP_APP_SLOW).
 *
 * Routes (fixed, so every metric label is ours): POST /mutate and /validate
 * (application/json, body capped at HTTP_BODY_MAX) to the post hook, GET
 * /healthz, /readyz, /metrics, and GET/HEAD /ui, /ui/..., /api/..., /apis/... to the
 * app. With an internal listener (config internal_port, `gpuq serve
 * --internal-listen`), the main port serves the POST routes, /healthz and
 * /readyz only, and the internal one everything but the POST routes: the
 * port the apiserver reaches carries no tenant's data. Threads: the
 * create/set/start/stop calls from one thread; the hooks run on the
 * server's threads (see each).
 */
#ifndef GPUQ_HTTP_H
#define GPUQ_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- Caps and defaults (peers never grow these) ---- */

/* Largest request body accepted (the apiserver's own request cap is 3 MiB). */
#define HTTP_BODY_MAX (3u << 20)
#define HTTP_THREADS_MAX 256	  /* server threads */
#define HTTP_CONNECTIONS_MAX 1024 /* open connections; the rest wait in the backlog */
/* Open connections from one client address (checked at accept, counted and
 * logged): eight addresses at most can fill the table, and the apiserver's
 * own pool stays far below it (Go keeps 25 idle per host). */
#define HTTP_CONNECTIONS_PER_IP (HTTP_CONNECTIONS_MAX / 8)
/* Past this many open connections, each new one first closes the kept-alive
 * connection idle the longest: the last eighth of the table is headroom for
 * new connections (the apiserver's), never taken by idle ones. */
#define HTTP_CONNECTIONS_RECLAIM (HTTP_CONNECTIONS_MAX - HTTP_CONNECTIONS_MAX / 8)
/* A connection that has not sent a request's headers this long after its
 * accept (TLS handshake included) is closed: a deadline, not an idle timer.
 * (The apiserver sends its request at once on a new connection.) */
#define HTTP_HEADER_DEADLINE_S 5
/* A request body must be in whole this long after its headers, or the
 * connection is closed unanswered: the apiserver sends its body at once
 * (3 MiB at most) and gives up after its timeoutSeconds (10 s by default). A
 * body trickled a byte at a time holds at most this long what has arrived. */
#define HTTP_BODY_DEADLINE_S 10
/* Request body bytes buffered at once over all connections (each body is
 * capped at HTTP_BODY_MAX; 1024 connections could otherwise hold 3 GiB).
 * Past it a POST is answered 503 and the apiserver retries. */
#define HTTP_BODY_BUDGET_DEFAULT (256u << 20)
/* One client address's fair share of it: bodies from one address hold at
 * most 1/HTTP_BODY_SHARE_DIV of the budget (but always room for one
 * HTTP_BODY_MAX body), and at most half of HTTP_CONNECTIONS_PER_IP (of the
 * configured conn_per_address) of its connections read a body at once. Past
 * either, that address's POST is answered 503 while other addresses are
 * served: eight addresses are needed to spend the budget, as eight fill the
 * connection table, and the apiserver (its bodies sent at once, a few KiB
 * each) is never near its share. */
#define HTTP_BODY_SHARE_DIV 8
/* An idle keep-alive connection is closed after this many seconds (the
 * apiserver's own client drops idle connections after 90 s). It is also a
 * deadline: the next request's headers must be in within it of the last
 * reply, however slowly they trickle. */
#define HTTP_IDLE_TIMEOUT_S 90
/* Refused and closed connections are logged at most once per reason per
 * this many seconds (a line with the count since the last one). */
#define HTTP_GUARD_LOG_INTERVAL_S 10
#define HTTP_POLL_MS_DEFAULT 1000 /* cert (and peers' watch) polling interval */
/* Graceful stop: the longest wait for requests in flight, in ms (the
 * apiserver's default webhook timeout is 10 s). */
#define HTTP_DRAIN_MS_DEFAULT 10000

/* After SIGTERM, how long the server keeps answering with /readyz at 503
 * (--shutdown-grace), so load balancers and the apiserver stop sending
 * first: shorter than the Pod's terminationGracePeriodSeconds (deploy/). */
#define HTTP_SHUTDOWN_GRACE_MS_DEFAULT 5000

/* TLS 1.2 and 1.3 only, AEAD ciphers with forward secrecy only (Mozilla's
 * "intermediate" set: ECDHE with AES-GCM or ChaCha20-Poly1305; no CBC, no
 * SHA-1 MAC, no static RSA key exchange), in our order. */
#define HTTP_TLS_PRIORITIES                                                                        \
	"NONE:+VERS-TLS1.3:+VERS-TLS1.2:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AEAD:"       \
	"+ECDHE-ECDSA:+ECDHE-RSA:+SIGN-ALL:+GROUP-ALL:+COMP-NULL:+CTYPE-X509:%SERVER_PRECEDENCE"

/* ---- The serving pair ---- */

/* A parsed certificate chain with its private key, ready for GnuTLS.
 * Immutable once loaded; shared by reference count (atomic). */
typedef struct http_tls_pair http_tls_pair_t;

/* Load dir/tls.crt (PEM chain, leaf first) and dir/tls.key (PEM key) and
 * check that the key belongs to the leaf certificate. On success *out holds
 * one reference. GPUQ_EIO (unreadable), GPUQ_ETLS (unparsable, or the key
 * does not match), GPUQ_ENOMEM; diag names the file. */
int http_tls_pair_load(const char *dir, http_tls_pair_t **out, gpuq_diag_t *diag);

/* Take a reference (atomic); returns pair. NULL is returned as NULL. */
http_tls_pair_t *http_tls_pair_ref(http_tls_pair_t *pair);

/* Drop a reference; the last one frees the pair. NULL is a no-op. */
void http_tls_pair_unref(http_tls_pair_t *pair);

/* The leaf's serial number as upper-case hex, as `openssl x509 -serial`
 * prints it (storage of the pair, valid while a reference is held), and its
 * notAfter in Unix seconds. */
const char *http_tls_pair_serial(const http_tls_pair_t *pair);
int64_t http_tls_pair_not_after(const http_tls_pair_t *pair);

/* The current serving pair of a cert dir, reloaded when its files change. */
typedef struct http_tls http_tls_t;

/* Load the pair of dir (as http_tls_pair_load) and remember the files'
 * identity (inode, size, mtime of both). dir is copied. */
int http_tls_create(const char *dir, http_tls_t **out, gpuq_diag_t *diag);

/* Destroy; pairs still referenced elsewhere live on. NULL is a no-op. */
void http_tls_destroy(http_tls_t *tls);

/* The current pair with a new reference the caller must drop. Thread-safe. */
http_tls_pair_t *http_tls_current(http_tls_t *tls);

typedef enum {
	HTTP_TLS_UNCHANGED = 0, /* files as last seen: nothing done */
	HTTP_TLS_RELOADED = 1,	/* a new pair was loaded and now serves */
	HTTP_TLS_PENDING = 2,	/* files changed but do not load yet (a rotation
				   half written?): the old pair serves; retried on
				   the next poll */
	HTTP_TLS_REFUSED = 3,	/* files changed, still do not load one poll later:
				   the old pair serves, diag says why */
} http_tls_poll_t;

/* Compare the files with what was last seen and reload the pair when they
 * changed. A pair that fails to load gets one more poll to settle (PENDING),
 * then is REFUSED (reported once per change of the files). Only one thread
 * may poll at a time; http_tls_current() may run concurrently. */
http_tls_poll_t http_tls_poll(http_tls_t *tls, gpuq_diag_t *diag);

/* ---- Metrics (Prometheus text exposition format 0.0.4) ---- */

/* Routes, the `path` label of gpuq_http_requests_total. */
typedef enum {
	HTTP_ROUTE_MUTATE = 0,	 /* POST /mutate: the post hook */
	HTTP_ROUTE_VALIDATE = 1, /* POST /validate: the post hook */
	HTTP_ROUTE_HEALTHZ = 2,
	HTTP_ROUTE_READYZ = 3,
	HTTP_ROUTE_METRICS = 4,
	HTTP_ROUTE_UI = 5,    /* /ui, /ui/..., /api/..., /apis/...: the app's routes below */
	HTTP_ROUTE_OTHER = 6, /* any other path: label "other", never the peer's path */
	HTTP_ROUTE_COUNT = 7,
} http_route_t;

/* The server's counters and gauges, all lock-free (C11 atomics, relaxed),
 * with fixed label sets: a value a peer could choose never becomes a label.
 * (The one lock guards the sources below, taken once per scrape.) */
typedef struct http_metrics http_metrics_t;

/* GPUQ_OK or GPUQ_ENOMEM. */
int http_metrics_create(http_metrics_t **out);
void http_metrics_destroy(http_metrics_t *m); /* NULL is a no-op */

/* One HTTP reply (a peer's post reply counts when it says so). Codes
 * outside a fixed set count as code "other"; a route outside the enum as
 * "other". */
void http_metrics_reply_count(http_metrics_t *m, http_route_t route, unsigned code);

/* What the server refused or cut to keep its port for the apiserver: the
 * `reason` label of gpuq_http_refused_total (REFUSED_*) and of
 * gpuq_http_connections_closed_total (CLOSED_*). */
typedef enum {
	HTTP_GUARD_REFUSED_PER_ADDRESS = 0,    /* accept refused: HTTP_CONNECTIONS_PER_IP */
	HTTP_GUARD_REFUSED_BODY_BUDGET = 1,    /* a POST answered 503: the body budget spent */
	HTTP_GUARD_CLOSED_HEADER_DEADLINE = 2, /* no request headers within
						  HTTP_HEADER_DEADLINE_S of the accept */
	HTTP_GUARD_CLOSED_BODY_DEADLINE = 3,   /* body not in within HTTP_BODY_DEADLINE_S */
	HTTP_GUARD_CLOSED_IDLE_DEADLINE = 4,   /* kept alive, no next request's headers within
						  HTTP_IDLE_TIMEOUT_S */
	HTTP_GUARD_CLOSED_RECLAIMED = 5,       /* idle, closed for a new connection past
						  HTTP_CONNECTIONS_RECLAIM */
	HTTP_GUARD_REFUSED_BODY_SHARE = 6,     /* a POST answered 503: its address's share of
						  the body budget spent (HTTP_BODY_SHARE_DIV) */
	HTTP_GUARD_COUNT = 7,
} http_guard_t;

/* n more of reason; and the count so far (for the rate-limited log). */
void http_metrics_guard_count(http_metrics_t *m, http_guard_t reason, unsigned n);
uint64_t http_metrics_guard_total(http_metrics_t *m, http_guard_t reason);
/* The open connections (gauge gpuq_http_connections_open). */
void http_metrics_connections_set(http_metrics_t *m, unsigned n);
void http_metrics_cert_reload_count(http_metrics_t *m, bool ok);
void http_metrics_cert_not_after_set(http_metrics_t *m, int64_t unix_seconds);

/* Render the server's metrics (plus process_resident_memory_bytes, read
 * from /proc/self/statm), then what the sources append (below), as text.
 * *text is malloc'd, NUL-terminated, owned by the caller. GPUQ_OK or
 * GPUQ_ENOMEM. Thread-safe. The whole text is capped at
 * HTTP_METRICS_TEXT_MAX: a source whose part would pass it is left out of
 * that scrape (logged once), the others are still served. */
int http_metrics_render(http_metrics_t *m, char **text, size_t *len);

/* The most text one scrape renders. The server's and admission's part is
 * about 50 KiB; the rest is room for a source's series (the controller's
 * queue metrics at their stated caps: qmetrics/qmetrics.h). */
#define HTTP_METRICS_TEXT_MAX (64u << 20)

/* ---- Metrics from the peers ----
 *
 * Sources (admission's decisions, the controller's queue metrics, idle GPU
 * time) append their own metric families to every scrape, so /metrics
 * stays one endpoint. The server knows nothing of what it renders: it hands
 * the source the text being built. */

/* The text of one scrape being rendered (opaque). */
typedef struct http_metrics_text http_metrics_text_t;

/* Append printf-style text to t. The first failure (no memory, the cap
 * above) is kept and ends the source's part; later calls do nothing. */
void http_metrics_printf(http_metrics_text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A source: appends whole metric families (# HELP, # TYPE, then every
 * sample of each), named apart from the server's own, with label values
 * escaped (http_metrics_label_escape). It runs on a server thread during
 * a scrape, so it must be quick, must not call the apiserver, and must not
 * wait on the thread it reports about for long (the controller hands over a
 * snapshot). It must not call http_metrics_source_slot_set. */
typedef void (*http_metrics_source_fn)(void *ctx, http_metrics_text_t *t);

/* Sources by slot, rendered after the server's own families in this order,
 * each cut out whole on its own when it would pass HTTP_METRICS_TEXT_MAX. */
typedef enum {
	HTTP_METRICS_SOURCE_ADMISSION = 0, /* admission's reviews and policy (webhook/) */
	HTTP_METRICS_SOURCE_QUEUE = 1,	   /* the controller's queue metrics */
	HTTP_METRICS_SOURCE_IDLE = 2,	   /* idle GPU time (gpuq serve --dcgm-url) */
} http_metrics_slot_t;
#define HTTP_METRICS_SOURCES 3

/* Make fn(ctx) the source of slot (NULL: none). Returns once no scrape is
 * still running the previous source, so its ctx may be freed then.
 * Thread-safe. */
void http_metrics_source_slot_set(http_metrics_t *m, http_metrics_slot_t slot,
				  http_metrics_source_fn fn, void *ctx);

/* http_metrics_source_slot_set for the queue slot. */
void http_metrics_source_set(http_metrics_t *m, http_metrics_source_fn fn, void *ctx);

/* Render fn(ctx)'s families alone, without the server's, for a tool that
 * writes them to a file (gpuq simulate --metrics). *text is malloc'd,
 * NUL-terminated, the caller's. GPUQ_OK, GPUQ_ENOMEM, or GPUQ_ELIMIT past
 * HTTP_METRICS_TEXT_MAX (*text NULL then). */
int http_metrics_source_render(http_metrics_source_fn fn, void *ctx, char **text, size_t *len);

/* Escape a label value for the text format (\ -> \\, " -> \", newline ->
 * \n) into out[0..cap). GPUQ_OK, or GPUQ_ELIMIT when it does not fit (out
 * then holds "" ). */
int http_metrics_label_escape(const char *value, char *out, size_t cap);

/* http_metrics_label_escape for a value about to be printed: out, or the
 * static "invalid" when it does not fit (the output stays valid). */
const char *http_metrics_label(const char *value, char *out, size_t cap);

typedef struct http_server http_server_t;

/* ---- The post hook (admission's /mutate and /validate) ----
 *
 * The server checks the method (POST), the Content-Type (application/json),
 * the body's size (HTTP_BODY_MAX) and the body budget, reads the whole body,
 * then calls the hook once on a server thread. The hook answers with
 * http_post_reply before it returns (no reply: a 500). */

/* One POST request being answered (opaque). */
typedef struct http_post_exchange http_post_exchange_t;

/* A whole POST request: valid for the hook's call only. */
typedef struct {
	http_route_t route;	  /* HTTP_ROUTE_MUTATE or HTTP_ROUTE_VALIDATE */
	const char *body;	  /* the body ("" when none; not NUL-terminated) */
	size_t len;		  /* bytes in body, at most HTTP_BODY_MAX */
	http_post_exchange_t *ex; /* where the reply goes */
} http_post_t;

/* The hook: quick, no apiserver calls (it holds a server thread). */
typedef void (*http_post_fn)(void *ctx, const http_post_t *rq);

/* Queue rq's reply: status, content_type (static), body[0..len) (copied).
 * count: add it to gpuq_http_requests_total (a peer that counts its
 * decided replies itself passes false for them). Once per request; a second
 * call is ignored. */
void http_post_reply(const http_post_t *rq, unsigned status, const char *content_type,
		     const char *body, size_t len, bool count);

/* Nanoseconds from rq's headers to now (CLOCK_MONOTONIC). */
uint64_t http_post_elapsed_ns(const http_post_t *rq);

/* Answer the POST routes with fn(ctx, rq) (fn NULL: none, they answer 404).
 * Call before http_server_start; ctx must outlive the server's requests. */
void http_server_post_set(http_server_t *srv, http_post_fn fn, void *ctx);

/* ---- Readiness and the watcher ---- */

/* Why a peer cannot serve yet, for /readyz: a static sentence ending in a
 * newline ("not ready: ...\n"), or NULL when it is ready. A server thread
 * calls it on every /readyz: quick. */
typedef const char *(*http_ready_fn)(void *ctx);

/* /readyz asks fn(ctx) after its own checks (shutting down, a serving
 * pair). Call before http_server_start. */
void http_server_ready_set(http_server_t *srv, http_ready_fn fn, void *ctx);

/* /healthz (liveness) asks fn(ctx): a sentence ending in a newline makes
 * it answer 503 with it (the kubelet restarts the process), NULL 200 "ok".
 * For a part of the daemon that can no longer do its work and would do it
 * after a restart (a leader whose store keeps failing). A server thread
 * calls it on every /healthz: quick. Call before http_server_start; ctx
 * must outlive the server. */
void http_server_health_set(http_server_t *srv, http_ready_fn fn, void *ctx);

/* Run on the server's watcher thread every poll interval, after the serving
 * pair's own check: a peer's own polling of files (admission's policy dir).
 * Call before http_server_start. */
typedef void (*http_watch_fn)(void *ctx);
void http_server_watch_set(http_server_t *srv, http_watch_fn fn, void *ctx);

/* ---- Routes of the app (the web UI) ----
 *
 * One app (webui/) may answer GET and HEAD on /ui, /ui/..., /api/... and
 * /apis/... (a path the server accepts: plain characters, no escapes, at
 * most HTTP_APP_PATH_MAX bytes; its query's arguments as sent, not
 * percent-decoded, at most HTTP_APP_QUERY_MAX bytes, else 414). The server
 * knows nothing of what it serves.
 * An app answer that needs slow work (the apiserver's TokenReview and
 * SubjectAccessReview) never runs on a server thread: the app says
 * HTTP_APP_SLOW, the server suspends the connection (its thread goes on
 * serving admission reviews), one worker thread of the server runs the
 * app's slow function, then resumes the connection and asks the app again.
 * At most HTTP_APP_SLOW_MAX requests wait for the worker; past that the
 * answer is 503. Every app reply carries Content-Security-Policy
 * HTTP_APP_CSP, X-Content-Type-Options nosniff, Referrer-Policy
 * no-referrer and X-Frame-Options DENY. */

#define HTTP_APP_PATH_MAX 512  /* bytes of an app path */
#define HTTP_APP_QUERY_MAX 512 /* bytes of an app request's query arguments, joined */
#define HTTP_APP_AUTH_MAX                                                                          \
	16448		     /* bytes of an Authorization header kept                              \
				("Bearer " and a KUBE_TOKEN_MAX token) */
#define HTTP_APP_SLOW_MAX 64 /* requests waiting for the slow worker */
#define HTTP_APP_CSP                                                                               \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "                \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* A request for the app: strings valid for the call only. */
typedef struct {
	const char *path;	   /* e.g. "/api/v1/cluster" (no query string) */
	const char *authorization; /* the Authorization header, NULL when absent
				      (or longer than HTTP_APP_AUTH_MAX) */
	bool head;		   /* HEAD (the body is not sent) */
	const char *query;	   /* the query's arguments as sent (not percent-decoded), joined as
				      "k=v&k=v" in the order sent, or NULL when
				      none (a value holding '&' or '=' is not told
				      apart) */
} http_app_request_t;

/* The app's answer. */
typedef struct {
	unsigned status;	      /* HTTP status */
	const char *content_type;     /* static */
	const char *cache_control;    /* static, or NULL for "no-store" */
	const char *www_authenticate; /* static WWW-Authenticate value, or NULL */
	const char *location;	      /* static Location (a redirect), or NULL */
	const void *body;	      /* body_owned ? malloc'd : static */
	size_t len;		      /* bytes in body */
	bool body_owned;	      /* the server frees body */
} http_app_reply_t;

#define HTTP_APP_SLOW 1 /* app_fn's "run slow_fn first, then ask again" */

/* Answer rq into *out and return GPUQ_OK; or return HTTP_APP_SLOW (only
 * when retry is false) to have slow_fn(ctx, rq) run on the worker first and
 * then be called again with retry true (it must answer then). Runs on a
 * server thread: quick, no apiserver calls. Any other code: a 500. */
typedef int (*http_app_fn)(void *ctx, const http_app_request_t *rq, bool retry,
			   http_app_reply_t *out);
/* The slow part (the worker thread only; may call the apiserver). */
typedef void (*http_app_slow_fn)(void *ctx, const http_app_request_t *rq);

/* Serve the app fn/slow_fn with ctx (fn NULL: none, its paths 404). Call
 * before http_server_start; ctx must outlive the server. */
void http_server_app_set(http_server_t *srv, http_app_fn fn, http_app_slow_fn slow_fn, void *ctx);

/* ---- The server ---- */

/* Where and how to serve. Strings are borrowed: they must outlive the
 * server. Messages name them as the flags of `gpuq serve` that give them
 * (--listen, --cert-dir). */
typedef struct {
	const char *listen;	     /* HOST:PORT as given (for messages) */
	const char *host;	     /* the address to bind ("" = every address; no brackets) */
	uint16_t port;		     /* 1..65535 */
	const char *cert_dir;	     /* holds tls.crt and tls.key (PEM) */
	unsigned threads;	     /* 1..HTTP_THREADS_MAX */
	unsigned poll_ms;	     /* watcher interval (HTTP_POLL_MS_DEFAULT) */
	size_t body_budget;	     /* body bytes buffered at once (HTTP_BODY_BUDGET_DEFAULT) */
	const char *internal_listen; /* --internal-listen HOST:PORT as given (messages), or
					NULL: no internal listener */
	const char *internal_host;   /* its address to bind ("" = every address) */
	uint16_t internal_port;	     /* its port, 1..65535; 0: no internal listener */
	unsigned conn_max;	     /* open connections (0: HTTP_CONNECTIONS_MAX; tests set
					fewer); reclaim starts at seven eighths */
	unsigned conn_per_address;   /* open from one address (0: HTTP_CONNECTIONS_PER_IP) */
} http_server_config_t;

/* Load the serving pair and prepare, without listening yet. cfg is copied.
 * GPUQ_OK, GPUQ_ETLS/GPUQ_EIO (certs: diag names --cert-dir),
 * GPUQ_ENOMEM. */
int http_server_create(const http_server_config_t *cfg, http_server_t **out, gpuq_diag_t *diag);

/* Listen on cfg->host:port (and the internal listener's) and start the
 * thread pools and the watcher. GPUQ_OK, GPUQ_EIO (address unusable or in
 * use: diag names the flag). */
int http_server_start(http_server_t *srv, gpuq_diag_t *diag);

/* The first step of a graceful stop: /readyz answers 503 ("shutting
 * down") while everything else is served as before. Idempotent. */
void http_server_unready(http_server_t *srv);

/* Graceful stop: stop accepting, /readyz answers 503, wait up to drain_ms
 * for requests in flight to finish, then close every connection and join
 * every thread. Idempotent. */
void http_server_stop(http_server_t *srv, unsigned drain_ms);

/* Stop (if running) and free. NULL is a no-op. */
void http_server_destroy(http_server_t *srv);

/* The metrics of a server (borrowed, valid until destroy). */
http_metrics_t *http_server_metrics(http_server_t *srv);

#endif

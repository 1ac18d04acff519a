/* http server: the daemon's HTTPS server (libmicrohttpd + GnuTLS), its
 * routes and the certificate watcher. See http.h. */
#include "http/http.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <inttypes.h>
#include <limits.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http/request_internal.h"
#include "http/share_internal.h"
#include "http/tls_internal.h"
#include "http/response_internal.h"
#include "http/wire_internal.h"

#define MODULE "http"

/* ==== The server ==== */

/* Where a connection stands, for its deadline (the watcher's sweep) and
 * for reclaiming (the idle ones). */
typedef enum {
	CONN_NEW = 0,	  /* accepted, no request's headers yet: HTTP_HEADER_DEADLINE_S */
	CONN_REQUEST = 1, /* a request being answered (no body to wait for) */
	CONN_BODY = 2,	  /* a request's body being read: HTTP_BODY_DEADLINE_S */
	CONN_IDLE = 3,	  /* kept alive after a reply: HTTP_IDLE_TIMEOUT_S */
	CONN_CUT = 4,	  /* shut down by the server, closing */
} conn_state_t;

/* Per TLS connection: the pair its handshake used, held until it closes;
 * and its place in the server's list of open connections, which the
 * watcher sweeps for those past their deadline and an accept scans for
 * its address's count and an idle one to reclaim. */
typedef struct conn_slot {
	http_server_t *srv;	       /* owner */
	http_tls_pair_t *pair;	       /* one reference, or NULL before the handshake */
	int fd;			       /* its socket (open while listed) */
	addr_key_t addr;	       /* the client's address */
	share_t *share;		       /* its address's share (NULL: unknown address) */
	atomic_int state;	       /* conn_state_t */
	atomic_uint_fast64_t since_ns; /* CLOCK_MONOTONIC when state began */
	struct conn_slot *prev, *next; /* in srv->slots, under srv->slots_lock */
	http_wire_t wire;	       /* its socket I/O under GnuTLS (its worker's) */
} conn_slot_t;

/* Per request, freed by on_completed. */
typedef struct request {
	http_route_t route; /* which route the path named */
	conn_slot_t *slot;  /* its connection's slot (NULL when it has none) */
	size_t announced;   /* Content-Length of a review body (0: chunked or none);
			       memory is taken as bytes arrive, never for this up front */
	uint64_t start_ns;  /* CLOCK_MONOTONIC when the headers were in */
	bool collecting;    /* a POST route's body is being read */
	bool in_flight;	    /* counted in its address's bodies in flight */
	int refused;	    /* a body went past the cap or the budget: the rest is read and
			       dropped, then answered with this code (0: none) */
	size_t dropped;	    /* bytes dropped since, at most BODY_DROP_MAX */
	bool replied;	    /* a response was queued */
	char *body;	    /* the body so far (collecting only) */
	size_t len;	    /* bytes in body */
	size_t cap;	    /* bytes allocated (and taken from the body budget): at most
			       the larger of BODY_FIRST_CAP and twice the bytes received,
			       never above the announced length nor HTTP_BODY_MAX */
	/* app routes (HTTP_ROUTE_UI) whose answer needed the slow worker */
	struct MHD_Connection *conn; /* the suspended connection */
	char *app_path;		     /* copy of the path (owned) */
	char *app_auth;		     /* copy of the Authorization header (owned), or NULL */
	char *app_query;	     /* the query's arguments, "k=v&k=v" as sent (owned), or
					NULL */
	bool app_head;		     /* HEAD */
	bool slow_done;		     /* the worker ran (or skipped) the slow part */
	struct request *slow_next;   /* in the worker's queue */
} request_t;

/* One listening port: the main one (--listen) or the internal one. */
typedef struct listener {
	http_server_t *srv;	   /* owner */
	struct MHD_Daemon *daemon; /* NULL until started */
	bool internal;		   /* the internal listener (--internal-listen) */
} listener_t;

#define LISTENERS 2 /* main, internal */

struct http_server {
	http_server_config_t cfg; /* where and how (strings borrowed); conn_max and
				     conn_per_address resolved from 0 */
	http_metrics_t *metrics;  /* counters (owned) */
	http_tls_t *tls;	  /* the serving pair (owned) */

	http_post_fn post_fn;	 /* the POST routes' hook (NULL: none) */
	void *post_ctx;		 /* its context (borrowed) */
	http_ready_fn ready_fn;	 /* /readyz asks it (NULL: ready) */
	void *ready_ctx;	 /* its context (borrowed) */
	http_ready_fn health_fn; /* /healthz asks it (NULL: alive) */
	void *health_ctx;	 /* its context (borrowed) */
	http_watch_fn watch_fn;	 /* the watcher runs it (NULL: none) */
	void *watch_ctx;	 /* its context (borrowed) */

	listener_t lis[LISTENERS];  /* main, internal (daemon NULL when not started) */
	pthread_t watcher;	    /* polls certs, runs watch_fn */
	pthread_mutex_t stop_lock;  /* pairs with stop_cond (stop_flag set under it) */
	pthread_cond_t stop_cond;   /* wakes the watcher */
	pthread_mutex_t log_lock;   /* guards start_msg while starting */
	MHD_socket listen_fd;	    /* after quiesce: ours to close */
	atomic_int inflight;	    /* requests between their first callback and completion */
	atomic_size_t body_bytes;   /* bytes of body buffers allocated, <= cfg.body_budget */
	atomic_bool draining;	    /* stop requested: /readyz 503, Connection: close */
	atomic_bool unready;	    /* SIGTERM's grace: /readyz 503, Connection: close */
	pthread_mutex_t slots_lock; /* guards slots */
	conn_slot_t *slots;	    /* open connections (on_connection) */
	unsigned n_slots;	    /* entries in slots */
	unsigned share_bodies;	    /* bodies one address may have in flight */
	char refused_addr[INET6_ADDRSTRLEN];	 /* the address last refused at accept
						    (under slots_lock), for the log */
	size_t share_bytes;			 /* body bytes one address may hold */
	share_t *shares;			 /* addresses with connections open, each
						    with its share (under slots_lock) */
	pthread_mutex_t offenders_lock;		 /* guards offenders */
	share_offenders_t offenders;		 /* refused for their share since the last
						    log line */
	uint64_t guard_logged[HTTP_GUARD_COUNT]; /* counts at the last log line
						    (watcher only) */
	uint64_t guard_log_ns[HTTP_GUARD_COUNT]; /* when that line was written, 0:
						    never (watcher only) */
	bool watcher_running;			 /* watcher was started and not yet joined */
	atomic_bool stop_flag; /* watcher must exit (set under stop_lock: its cond) */
	bool stopped;	       /* http_server_stop completed */
	bool starting;	       /* MHD_start_daemon is running */
	char start_msg[256];   /* last libmicrohttpd message during start */

	http_app_fn app_fn;		  /* the app of HTTP_ROUTE_UI (NULL: none) */
	http_app_slow_fn app_slow_fn;	  /* its slow part */
	void *app_ctx;			  /* their context (borrowed) */
	pthread_t slow_thread;		  /* runs app_slow_fn */
	bool slow_running;		  /* slow_thread started and not joined (under slow_lock) */
	pthread_mutex_t slow_lock;	  /* guards the four below */
	pthread_cond_t slow_cond;	  /* wakes the worker */
	request_t *slow_head, *slow_tail; /* suspended requests waiting, in order */
	size_t slow_n;			  /* entries waiting (<= HTTP_APP_SLOW_MAX) */
	atomic_bool slow_stop;		  /* the worker must resume everything and exit (set
					     under slow_lock: its cond) */
};

static void poll_certs(http_server_t *srv)
{
	gpuq_diag_t diag = {{0}};
	http_tls_pair_t *pair;

	switch (http_tls_poll(srv->tls, &diag)) {
	case HTTP_TLS_UNCHANGED:
		break;
	case HTTP_TLS_RELOADED:
		pair = http_tls_current(srv->tls);
		http_metrics_cert_reload_count(srv->metrics, true);
		http_metrics_cert_not_after_set(srv->metrics, http_tls_pair_not_after(pair));
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "serving certificate reloaded from %s: serial %s, notAfter %" PRId64,
			 srv->cfg.cert_dir, http_tls_pair_serial(pair),
			 http_tls_pair_not_after(pair));
		http_tls_pair_unref(pair);
		break;
	case HTTP_TLS_PENDING:
		gpuq_log(GPUQ_LOG_DEBUG, MODULE, "certificate files changed, not loadable yet: %s",
			 diag.msg);
		break;
	case HTTP_TLS_REFUSED:
		http_metrics_cert_reload_count(srv->metrics, false);
		gpuq_log(GPUQ_LOG_ERROR, MODULE,
			 "certificate reload refused, the previous pair keeps serving: %s",
			 diag.msg);
		break;
	}
}

/* Open connections past which an accept reclaims an idle one: seven
 * eighths of the table (HTTP_CONNECTIONS_RECLAIM for the default). */
static unsigned reclaim_at(const http_server_t *srv)
{
	return srv->cfg.conn_max - srv->cfg.conn_max / 8;
}

/* Move slot to state (now), unless the server has cut it. */
static void slot_enter(conn_slot_t *slot, conn_state_t state)
{
	if (!slot || atomic_load(&slot->state) == CONN_CUT)
		return;
	atomic_store(&slot->since_ns, gpuq_mono_ns());
	atomic_store(&slot->state, (int)state);
}

/* Close slot's connection for reason (under slots_lock, so its fd is still
 * this connection's: a slot leaves the list under the lock before its socket
 * is closed). shutdown() wakes libmicrohttpd, which closes it. */
static void slot_cut(http_server_t *srv, conn_slot_t *slot, http_guard_t reason)
{
	int seen = atomic_load(&slot->state);

	if (seen == CONN_CUT || !atomic_compare_exchange_strong(&slot->state, &seen, CONN_CUT))
		return;
	(void)shutdown(slot->fd, SHUT_RDWR);
	http_metrics_guard_count(srv->metrics, reason, 1);
}

/* Close every connection past its state's deadline: no request headers
 * within HTTP_HEADER_DEADLINE_S of the accept (TLS handshake included), a
 * body not in within HTTP_BODY_DEADLINE_S of its headers, no next request
 * within HTTP_IDLE_TIMEOUT_S of the last reply. Deadlines, where
 * libmicrohttpd's timeout is an idle timer that every byte restarts. */
static void cut_slow_connections(http_server_t *srv)
{
	static const struct {
		uint64_t limit_s;   /* deadline of the state */
		http_guard_t guard; /* what a cut counts as */
	} rule[] = {
	    [CONN_NEW] = {HTTP_HEADER_DEADLINE_S, HTTP_GUARD_CLOSED_HEADER_DEADLINE},
	    [CONN_REQUEST] = {0, HTTP_GUARD_COUNT},
	    [CONN_BODY] = {HTTP_BODY_DEADLINE_S, HTTP_GUARD_CLOSED_BODY_DEADLINE},
	    [CONN_IDLE] = {HTTP_IDLE_TIMEOUT_S, HTTP_GUARD_CLOSED_IDLE_DEADLINE},
	    [CONN_CUT] = {0, HTTP_GUARD_COUNT},
	};
	uint64_t now = gpuq_mono_ns();

	pthread_mutex_lock(&srv->slots_lock);
	for (conn_slot_t *s = srv->slots; s; s = s->next) {
		int st = atomic_load(&s->state);
		uint64_t since = atomic_load(&s->since_ns);

		if (st < 0 || st > CONN_CUT || !rule[st].limit_s || now < since ||
		    now - since < rule[st].limit_s * 1000000000u)
			continue;
		slot_cut(srv, s, rule[st].guard);
	}
	pthread_mutex_unlock(&srv->slots_lock);
}

/* The sentence logged for n more of guard g. */
static void guard_sentence(http_server_t *srv, int g, uint64_t n, char *msg, size_t cap)
{
	char addr[INET6_ADDRSTRLEN];

	switch (g) {
	case HTTP_GUARD_REFUSED_PER_ADDRESS:
		pthread_mutex_lock(&srv->slots_lock);
		gpuq_strlcpy(addr, srv->refused_addr, sizeof(addr));
		pthread_mutex_unlock(&srv->slots_lock);
		snprintf(msg, cap,
			 "%" PRIu64 " connections refused at accept: %u open from one address "
			 "(the last from %s)",
			 n, srv->cfg.conn_per_address, addr);
		break;
	case HTTP_GUARD_REFUSED_BODY_BUDGET:
		snprintf(msg, cap,
			 "%" PRIu64 " review requests answered 503: %zu bytes of request bodies "
			 "already held",
			 n, srv->cfg.body_budget);
		break;
	case HTTP_GUARD_CLOSED_HEADER_DEADLINE:
		snprintf(msg, cap,
			 "%" PRIu64 " connections closed: no request headers within %d s of "
			 "their accept",
			 n, HTTP_HEADER_DEADLINE_S);
		break;
	case HTTP_GUARD_CLOSED_BODY_DEADLINE:
		snprintf(msg, cap,
			 "%" PRIu64 " connections closed: a request body not in within %d s of "
			 "its headers",
			 n, HTTP_BODY_DEADLINE_S);
		break;
	case HTTP_GUARD_CLOSED_IDLE_DEADLINE:
		snprintf(msg, cap,
			 "%" PRIu64 " connections closed: kept alive with no next request "
			 "within %d s",
			 n, HTTP_IDLE_TIMEOUT_S);
		break;
	default:
		snprintf(msg, cap,
			 "%" PRIu64 " idle connections closed to make room: more than %u open", n,
			 reclaim_at(srv));
		break;
	}
}

/* One line per address refused for its share since the last lines (the
 * watcher only): the offender named, its count, the share. */
static void share_log(http_server_t *srv)
{
	share_offenders_t o;
	char addr[INET6_ADDRSTRLEN];

	pthread_mutex_lock(&srv->offenders_lock);
	o = srv->offenders;
	memset(&srv->offenders, 0, sizeof(srv->offenders));
	pthread_mutex_unlock(&srv->offenders_lock);
	for (uint64_t i = 0; i < o.used; i++) {
		http_addr_text(&o.addr[i], addr, sizeof(addr));
		gpuq_log(GPUQ_LOG_WARN, MODULE,
			 "%" PRIu64 " review requests from %s answered 503: that address's share "
			 "of request body memory spent (one address holds at most %zu bytes and "
			 "%u bodies in flight) (logged at most every %d s per address)",
			 o.n[i], addr, srv->share_bytes, srv->share_bodies,
			 HTTP_GUARD_LOG_INTERVAL_S);
	}
	if (o.others)
		gpuq_log(GPUQ_LOG_WARN, MODULE,
			 "%" PRIu64 " more review requests answered 503 for their address's "
			 "share, from addresses past the first %d",
			 o.others, SHARE_LOG_ADDRS);
}

/* Log what was refused or closed since the last line, at most once per
 * reason per HTTP_GUARD_LOG_INTERVAL_S (the watcher only). */
static void guard_log(http_server_t *srv)
{
	uint64_t now = gpuq_mono_ns();
	char msg[256];

	for (int g = 0; g < HTTP_GUARD_COUNT; g++) {
		uint64_t total = http_metrics_guard_total(srv->metrics, (http_guard_t)g);

		if (total == srv->guard_logged[g] ||
		    (srv->guard_log_ns[g] &&
		     now - srv->guard_log_ns[g] < HTTP_GUARD_LOG_INTERVAL_S * 1000000000ull))
			continue;
		if (g == HTTP_GUARD_REFUSED_BODY_SHARE) {
			share_log(srv);
		} else {
			guard_sentence(srv, g, total - srv->guard_logged[g], msg, sizeof(msg));
			gpuq_log(GPUQ_LOG_WARN, MODULE, "%s (logged at most every %d s)", msg,
				 HTTP_GUARD_LOG_INTERVAL_S);
		}
		srv->guard_logged[g] = total;
		srv->guard_log_ns[g] = now;
	}
}

static void *watcher_main(void *arg)
{
	http_server_t *srv = arg;
	struct timespec deadline;

	pthread_mutex_lock(&srv->stop_lock);
	while (!atomic_load(&srv->stop_flag)) {
		deadline = gpuq_clock_after_ms(CLOCK_MONOTONIC, srv->cfg.poll_ms);
		while (!atomic_load(&srv->stop_flag) &&
		       pthread_cond_timedwait(&srv->stop_cond, &srv->stop_lock, &deadline) == 0)
			;
		if (atomic_load(&srv->stop_flag))
			break;
		pthread_mutex_unlock(&srv->stop_lock);
		poll_certs(srv);
		if (srv->watch_fn)
			srv->watch_fn(srv->watch_ctx);
		cut_slow_connections(srv);
		guard_log(srv);
		pthread_mutex_lock(&srv->stop_lock);
	}
	pthread_mutex_unlock(&srv->stop_lock);
	return NULL;
}

/* ---- libmicrohttpd callbacks ---- */

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	http_server_t *srv = cls;
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	pthread_mutex_lock(&srv->log_lock);
	if (srv->starting)
		gpuq_strlcpy(srv->start_msg, msg, sizeof(srv->start_msg));
	pthread_mutex_unlock(&srv->log_lock);
	/* Handshake failures from scanners and TLS-version probes are routine:
	 * keep them at debug so they cannot flood the log. */
	gpuq_log(GPUQ_LOG_DEBUG, MODULE, "libmicrohttpd: %s", msg);
}

/* gnutls_certificate_retrieve_function2: hand GnuTLS the current pair and
 * pin it to the connection until it closes (see on_connection). */
static int on_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			  const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			  gnutls_pcert_st **pcert, unsigned int *pcert_length,
			  gnutls_privkey_t *key)
{
	struct MHD_Connection *conn = gnutls_session_get_ptr(session);
	const union MHD_ConnectionInfo *info;
	http_tls_pair_t *pair;
	conn_slot_t *slot;

	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!conn)
		return -1;
	info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (!info || !info->socket_context)
		return -1;
	slot = info->socket_context;
	pair = http_tls_current(slot->srv->tls);
	http_tls_pair_unref(slot->pair); /* a renegotiation replaces it */
	slot->pair = pair;
	*pcert = pair->pcerts;
	*pcert_length = pair->n_pcerts;
	*key = pair->key;
	return 0;
}

/* List slot and join its address's share: false (not listed) when the share
 * cannot be made (out of memory). */
static bool slot_list(http_server_t *srv, conn_slot_t *slot)
{
	pthread_mutex_lock(&srv->slots_lock);
	slot->share = http_share_join(&srv->shares, &slot->addr);
	if (!slot->share && slot->addr.len) {
		pthread_mutex_unlock(&srv->slots_lock);
		return false;
	}
	slot->next = srv->slots;
	if (srv->slots)
		srv->slots->prev = slot;
	srv->slots = slot;
	srv->n_slots++;
	http_metrics_connections_set(srv->metrics, srv->n_slots);
	pthread_mutex_unlock(&srv->slots_lock);
	return true;
}

static void slot_unlist(http_server_t *srv, conn_slot_t *slot)
{
	pthread_mutex_lock(&srv->slots_lock);
	if (slot->prev)
		slot->prev->next = slot->next;
	else
		srv->slots = slot->next;
	if (slot->next)
		slot->next->prev = slot->prev;
	srv->n_slots--;
	http_share_leave(&srv->shares, slot->share);
	http_metrics_connections_set(srv->metrics, srv->n_slots);
	pthread_mutex_unlock(&srv->slots_lock);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	conn_slot_t *slot;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		/* On allocation failure the handshake fails (no slot): the
		 * connection is refused, the server goes on. */
		const union MHD_ConnectionInfo *info =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *peer =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		const union MHD_ConnectionInfo *tls =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
		http_server_t *srv = cls;

		slot = info && tls && tls->tls_session ? calloc(1, sizeof(*slot)) : NULL;
		if (slot) {
			slot->srv = srv;
			slot->fd = info->connect_fd;
			slot->addr = http_addr_key(peer ? peer->client_addr : NULL);
			atomic_init(&slot->state, CONN_NEW);
			atomic_init(&slot->since_ns, gpuq_mono_ns());
			if (!slot_list(srv, slot)) {
				free(slot);
				slot = NULL;
			}
		}
		if (slot) /* before the handshake: all of the session's I/O */
			http_wire_attach(&slot->wire, tls->tls_session, slot->fd);
		*socket_context = slot;
		return;
	}
	slot = *socket_context;
	*socket_context = NULL;
	if (slot) {
		slot_unlist(slot->srv, slot);
		/* GnuTLS is done with the session (gnutls_deinit ran before this
		 * notification), so the pair may go. */
		http_tls_pair_unref(slot->pair);
		http_wire_release(&slot->wire);
		free(slot);
	}
}

/* The share of rq's address (NULL: not capped). */
static share_t *rq_share(const request_t *rq)
{
	return rq->slot ? rq->slot->share : NULL;
}

/* Free rq's body buffer, its bytes back to the budget and its address's
 * share. */
static void body_release(http_server_t *srv, request_t *rq)
{
	atomic_fetch_sub_explicit(&srv->body_bytes, rq->cap, memory_order_relaxed);
	http_share_bytes_give(rq_share(rq), rq->cap);
	free(rq->body);
	rq->body = NULL;
	rq->len = 0;
	rq->cap = 0;
}

/* rq's body is no longer in flight (in whole, or its request ended). */
static void body_done(request_t *rq)
{
	if (rq->in_flight)
		http_share_body_end(rq_share(rq));
	rq->in_flight = false;
}

/* A POST refused for its address's share: counted, and its address kept
 * for the watcher's log line. */
static void share_refused(http_server_t *srv, const request_t *rq)
{
	http_metrics_guard_count(srv->metrics, HTTP_GUARD_REFUSED_BODY_SHARE, 1);
	if (!rq->slot)
		return;
	pthread_mutex_lock(&srv->offenders_lock);
	http_share_offender_note(&srv->offenders, &rq->slot->addr);
	pthread_mutex_unlock(&srv->offenders_lock);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	http_server_t *srv = cls;
	request_t *rq = *con_cls;

	(void)conn;
	if (!rq)
		return;
	/* A reply sent as one record is still held (nothing came after it):
	 * out now, or the connection is of no use. */
	if (rq->slot && !http_wire_flush(&rq->slot->wire, 0) &&
	    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		shutdown(rq->slot->fd, SHUT_RDWR);
	slot_enter(rq->slot, CONN_IDLE); /* the next request's headers: HTTP_IDLE_TIMEOUT_S */
	body_release(srv, rq);
	body_done(rq);
	free(rq->app_path);
	free(rq->app_auth);
	free(rq->app_query);
	free(rq);
	*con_cls = NULL;
	atomic_fetch_sub_explicit(&srv->inflight, 1, memory_order_acq_rel);
}

#define TEXT_PLAIN "text/plain; charset=utf-8"

/* A chunked body past the 3 MiB cap (or the body budget) is read on and
 * dropped so that the peer gets an answer (libmicrohttpd cannot queue one in
 * the middle of a body), but only up to this many more bytes; past them the
 * connection is closed unanswered. 16 MiB is read in tens of milliseconds
 * and held nowhere. */
#define BODY_DROP_MAX (16u << 20)
/* The first buffer of a review body without a Content-Length (chunked): a
 * typical review fits; it doubles from there up to HTTP_BODY_MAX. */
#define BODY_FIRST_CAP 65536u

/* Queue one reply. body is copied. count: add it to gpuq_http_requests_total. */
static enum MHD_Result reply(http_server_t *srv, struct MHD_Connection *conn, request_t *rq,
			     unsigned code, const char *content_type, const char *body, size_t len,
			     bool count)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = http_response_new(body, len);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					rq->route <= HTTP_ROUTE_VALIDATE ? "POST" : "GET, HEAD");
	if (atomic_load(&srv->draining) || atomic_load(&srv->unready))
		/* Send the peer to another replica for its next request. */
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	rq->replied = true;
	if (count)
		http_metrics_reply_count(srv->metrics, rq->route, code);
	return ret;
}

static enum MHD_Result reply_text(http_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				  unsigned code, const char *text)
{
	return reply(srv, conn, rq, code, TEXT_PLAIN, text, strlen(text), true);
}

/* Grow rq's body buffer to want bytes, taking them from its address's
 * share, then from the server's body budget. GPUQ_EDENIED when the share is
 * spent, GPUQ_EAGAIN when the budget is, GPUQ_ENOMEM. */
static int body_reserve(http_server_t *srv, request_t *rq, size_t want)
{
	size_t more = want - rq->cap;
	size_t before;
	char *nb;

	if (!http_share_bytes_take(rq_share(rq), more, srv->share_bytes))
		return GPUQ_EDENIED;
	before = atomic_fetch_add_explicit(&srv->body_bytes, more, memory_order_relaxed);
	if (before + more > srv->cfg.body_budget) {
		atomic_fetch_sub_explicit(&srv->body_bytes, more, memory_order_relaxed);
		http_share_bytes_give(rq_share(rq), more);
		return GPUQ_EAGAIN;
	}
	nb = realloc(rq->body, want);
	if (!nb) {
		atomic_fetch_sub_explicit(&srv->body_bytes, more, memory_order_relaxed);
		http_share_bytes_give(rq_share(rq), more);
		return GPUQ_ENOMEM;
	}
	rq->body = nb;
	rq->cap = want;
	return GPUQ_OK;
}

/* Append a piece of the body, growing the buffer as bytes arrive (doubling
 * from BODY_FIRST_CAP, never past the announced length nor HTTP_BODY_MAX):
 * a body announced large but sent slowly holds only what came.
 * GPUQ_ELIMIT past the cap, GPUQ_EDENIED past its address's share,
 * GPUQ_EAGAIN past the budget, GPUQ_ENOMEM. */
static int body_append(http_server_t *srv, request_t *rq, const char *data, size_t n)
{
	size_t most = rq->announced ? rq->announced : HTTP_BODY_MAX;
	int rc;

	if (n > HTTP_BODY_MAX - rq->len)
		return GPUQ_ELIMIT;
	if (rq->len + n > rq->cap) {
		size_t want = rq->cap ? rq->cap : BODY_FIRST_CAP;

		while (want < rq->len + n)
			want *= 2;
		if (want > most && most >= rq->len + n)
			want = most;
		if (want > HTTP_BODY_MAX)
			want = HTTP_BODY_MAX;
		rc = body_reserve(srv, rq, want);
		if (rc)
			return rc;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	return GPUQ_OK;
}

/* First callback of a POST route's request: check method, type and size,
 * then get ready to collect the body. */
static enum MHD_Result post_begin(http_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				  const char *method)
{
	const char *ctype, *clen;
	char msg[160];

	if (!srv->post_fn)
		return reply_text(srv, conn, rq, MHD_HTTP_NOT_FOUND, "not found\n");
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return reply_text(srv, conn, rq, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed: use POST\n");
	ctype = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!http_request_json(ctype)) {
		/* The peer's value is not echoed: it could be anything. */
		return reply_text(srv, conn, rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				  "unsupported media type: Content-Type must be "
				  "application/json\n");
	}
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (clen) {
		char *end;
		unsigned long long n;

		errno = 0;
		n = strtoull(clen, &end, 10);
		if (!errno && !*end && n > HTTP_BODY_MAX) {
			snprintf(msg, sizeof(msg),
				 "request body too large: %llu bytes, at most %u\n", n,
				 HTTP_BODY_MAX);
			return reply_text(srv, conn, rq, MHD_HTTP_CONTENT_TOO_LARGE, msg);
		}
		if (!errno && !*end)
			rq->announced = (size_t)n; /* a bound, not a reservation */
	}
	if (!http_share_body_begin(rq_share(rq), srv->share_bodies)) {
		share_refused(srv, rq);
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "busy: too many request bodies in flight from this address, "
				  "retry\n");
	}
	rq->in_flight = true;
	rq->collecting = true;
	slot_enter(rq->slot, CONN_BODY); /* its body: HTTP_BODY_DEADLINE_S */
	return MHD_YES;
}

/* One POST being answered: where http_post_reply queues its reply. */
struct http_post_exchange {
	http_server_t *srv;	     /* the server */
	struct MHD_Connection *conn; /* the connection */
	request_t *rq;		     /* the request */
	enum MHD_Result ret;	     /* what queueing the reply gave */
};

void http_post_reply(const http_post_t *p, unsigned status, const char *content_type,
		     const char *body, size_t len, bool count)
{
	http_post_exchange_t *ex = p->ex;

	if (ex->rq->replied)
		return;
	/* Its header's record goes out with its body's (http/wire_internal.h). */
	if (ex->rq->slot && len && status >= 200 && status != 204 && status != 304)
		http_wire_arm(&ex->rq->slot->wire);
	ex->ret = reply(ex->srv, ex->conn, ex->rq, status, content_type, body, len, count);
}

uint64_t http_post_elapsed_ns(const http_post_t *p)
{
	return gpuq_mono_ns() - p->ex->rq->start_ns;
}

/* The whole body is in: hand it to the post hook. */
static enum MHD_Result post_answer(http_server_t *srv, struct MHD_Connection *conn, request_t *rq)
{
	http_post_exchange_t ex = {srv, conn, rq, MHD_YES};
	http_post_t p = {rq->route, rq->body ? rq->body : "", rq->len, &ex};

	srv->post_fn(srv->post_ctx, &p);
	if (!rq->replied)
		return reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "internal error: no answer\n");
	return ex.ret;
}

static enum MHD_Result serve_metrics(http_server_t *srv, struct MHD_Connection *conn, request_t *rq)
{
	char *text;
	size_t len;
	enum MHD_Result ret;

	/* Counted before rendering, so this scrape sees itself. */
	http_metrics_reply_count(srv->metrics, rq->route, MHD_HTTP_OK);
	if (http_metrics_render(srv->metrics, &text, &len))
		return reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot render metrics\n");
	ret = reply(srv, conn, rq, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
		    len, false);
	free(text);
	return ret;
}

static enum MHD_Result serve_readyz(http_server_t *srv, struct MHD_Connection *conn, request_t *rq)
{
	http_tls_pair_t *pair;
	const char *why;

	if (atomic_load(&srv->draining) || atomic_load(&srv->unready))
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
	pair = http_tls_current(srv->tls);
	http_tls_pair_unref(pair);
	if (!pair)
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "not ready: no serving certificate loaded\n");
	why = srv->ready_fn ? srv->ready_fn(srv->ready_ctx) : NULL;
	if (why)
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE, why);
	return reply_text(srv, conn, rq, MHD_HTTP_OK, "ok\n");
}

/* ---- App routes (the web UI) ---- */

static enum MHD_Result app_reply(http_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				 http_app_reply_t *a)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = http_response_new(a->body, a->len); /* HEAD: libmicrohttpd sends no body */
	if (a->body_owned)
		free((void *)a->body);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				a->cache_control ? a->cache_control : "no-store");
	MHD_add_response_header(resp, "Content-Security-Policy", HTTP_APP_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	if (a->www_authenticate)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					a->www_authenticate);
	if (a->location)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, a->location);
	if (atomic_load(&srv->draining) || atomic_load(&srv->unready))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, a->status, resp);
	MHD_destroy_response(resp);
	rq->replied = true;
	http_metrics_reply_count(srv->metrics, rq->route, a->status);
	return ret;
}

/* Hand rq to the slow worker and suspend its connection; false when the
 * worker's queue is full or stopping (answer 503). */
static bool slow_enqueue(http_server_t *srv, struct MHD_Connection *conn, request_t *rq)
{
	bool ok;

	pthread_mutex_lock(&srv->slow_lock);
	ok = srv->slow_running && !atomic_load(&srv->slow_stop) && srv->slow_n < HTTP_APP_SLOW_MAX;
	if (ok) {
		rq->conn = conn;
		rq->slow_next = NULL;
		if (srv->slow_tail)
			srv->slow_tail->slow_next = rq;
		else
			srv->slow_head = rq;
		srv->slow_tail = rq;
		srv->slow_n++;
		/* suspended under the lock: the worker resumes only after this */
		MHD_suspend_connection(conn);
		pthread_cond_signal(&srv->slow_cond);
	}
	pthread_mutex_unlock(&srv->slow_lock);
	return ok;
}

static void *slow_main(void *arg)
{
	http_server_t *srv = arg;

	pthread_mutex_lock(&srv->slow_lock);
	for (;;) {
		request_t *rq = srv->slow_head;
		http_app_request_t a;

		if (!rq && atomic_load(&srv->slow_stop))
			break;
		if (!rq) {
			pthread_cond_wait(&srv->slow_cond, &srv->slow_lock);
			continue;
		}
		srv->slow_head = rq->slow_next;
		if (!srv->slow_head)
			srv->slow_tail = NULL;
		srv->slow_n--;
		if (!atomic_load(&srv->slow_stop)) {
			pthread_mutex_unlock(&srv->slow_lock);
			a = (http_app_request_t){rq->app_path, rq->app_auth, rq->app_head,
						 rq->app_query};
			srv->app_slow_fn(srv->app_ctx, &a);
			pthread_mutex_lock(&srv->slow_lock);
		}
		rq->slow_done = true;
		MHD_resume_connection(rq->conn); /* rq is the server thread's again */
	}
	pthread_mutex_unlock(&srv->slow_lock);
	return NULL;
}

/* Resume every waiting request (answered 503 by the app on retry... or
 * after its slow part) and join the worker. */
static void slow_stop(http_server_t *srv)
{
	if (!srv->slow_running)
		return;
	pthread_mutex_lock(&srv->slow_lock);
	atomic_store(&srv->slow_stop, true);
	pthread_cond_signal(&srv->slow_cond);
	pthread_mutex_unlock(&srv->slow_lock);
	pthread_join(srv->slow_thread, NULL);
	pthread_mutex_lock(&srv->slow_lock); /* slow_enqueue reads it on the server's threads */
	srv->slow_running = false;
	pthread_mutex_unlock(&srv->slow_lock);
}

static enum MHD_Result serve_app(http_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				 const char *method)
{
	http_app_reply_t out = {0};
	http_app_request_t a;
	int rc;

	if (!srv->app_fn || !rq->app_path)
		return reply_text(srv, conn, rq, MHD_HTTP_NOT_FOUND,
				  "not found: the web UI is off (gpuq serve --ui)\n");
	a = (http_app_request_t){rq->app_path, rq->app_auth, !strcmp(method, MHD_HTTP_METHOD_HEAD),
				 rq->app_query};
	rq->app_head = a.head;
	rc = srv->app_fn(srv->app_ctx, &a, rq->slow_done, &out);
	if (rc == HTTP_APP_SLOW && !rq->slow_done) {
		if (slow_enqueue(srv, conn, rq))
			return MHD_YES;
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "busy: too many web UI requests waiting for the apiserver, "
				  "retry\n");
	}
	if (rc)
		return reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot answer\n");
	return app_reply(srv, conn, rq, &out);
}

/* The query's arguments being joined (query_arg). */
typedef struct {
	char buf[HTTP_APP_QUERY_MAX + 1]; /* "k=v&k=v" */
	size_t len;			  /* bytes in buf */
	bool over;			  /* past HTTP_APP_QUERY_MAX */
} query_t;

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	query_t *q = cls;
	int n;

	(void)kind;
	n = snprintf(q->buf + q->len, sizeof(q->buf) - q->len, "%s%s=%s", q->len ? "&" : "", key,
		     value ? value : "");
	if (n < 0 || (size_t)n >= sizeof(q->buf) - q->len) {
		q->over = true;
		return MHD_NO;
	}
	q->len += (size_t)n;
	return MHD_YES;
}

/* Copy what an app route needs from the request headers (the path as
 * sent, the Authorization header, the query's arguments). false: out of
 * memory, or a query longer than HTTP_APP_QUERY_MAX (refused: 414). */
static bool app_capture(struct MHD_Connection *conn, request_t *rq, const char *url, bool *long_q)
{
	const char *auth =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	query_t *q = calloc(1, sizeof(*q));
	bool ok;

	*long_q = false;
	if (!q)
		return false;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, query_arg, q);
	*long_q = q->over;
	if (q->len && !q->over)
		rq->app_query = strdup(q->buf);
	rq->app_path = strndup(url, HTTP_APP_PATH_MAX);
	if (auth && strlen(auth) <= HTTP_APP_AUTH_MAX)
		rq->app_auth = strdup(auth);
	ok = !q->over && rq->app_path && (!q->len || rq->app_query) &&
	     (!auth || strlen(auth) > HTTP_APP_AUTH_MAX || rq->app_auth);
	free(q);
	return ok;
}

void http_server_post_set(http_server_t *srv, http_post_fn fn, void *ctx)
{
	srv->post_fn = fn;
	srv->post_ctx = ctx;
}

void http_server_health_set(http_server_t *srv, http_ready_fn fn, void *ctx)
{
	srv->health_fn = fn;
	srv->health_ctx = ctx;
}

void http_server_ready_set(http_server_t *srv, http_ready_fn fn, void *ctx)
{
	srv->ready_fn = fn;
	srv->ready_ctx = ctx;
}

void http_server_watch_set(http_server_t *srv, http_watch_fn fn, void *ctx)
{
	srv->watch_fn = fn;
	srv->watch_ctx = ctx;
}

void http_server_app_set(http_server_t *srv, http_app_fn fn, http_app_slow_fn slow_fn, void *ctx)
{
	srv->app_fn = fn;
	srv->app_slow_fn = slow_fn;
	srv->app_ctx = ctx;
}

/* Answer a request outside the POST routes. */
static enum MHD_Result route_serve(http_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				   const char *method)
{
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);

	if (rq->route == HTTP_ROUTE_OTHER)
		return reply_text(srv, conn, rq, MHD_HTTP_NOT_FOUND, "not found\n");
	if (!get)
		return reply_text(srv, conn, rq, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed: use GET\n");
	if (rq->route == HTTP_ROUTE_HEALTHZ) {
		const char *why = srv->health_fn ? srv->health_fn(srv->health_ctx) : NULL;
		return why ? reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE, why)
			   : reply_text(srv, conn, rq, MHD_HTTP_OK, "ok\n");
	}
	if (rq->route == HTTP_ROUTE_READYZ)
		return serve_readyz(srv, conn, rq);
	if (rq->route == HTTP_ROUTE_UI)
		return serve_app(srv, conn, rq, method);
	return serve_metrics(srv, conn, rq);
}

/* Count n more dropped bytes of a refused body; past BODY_DROP_MAX the
 * connection goes unanswered. */
static enum MHD_Result body_drop(http_server_t *srv, request_t *rq, size_t n)
{
	if (n > BODY_DROP_MAX - rq->dropped) {
		http_metrics_reply_count(srv->metrics, rq->route, (unsigned)rq->refused);
		gpuq_log(GPUQ_LOG_WARN, MODULE,
			 "%s: chunked body still going %u MiB past its refusal: connection closed",
			 rq->route == HTTP_ROUTE_VALIDATE ? "/validate" : "/mutate",
			 BODY_DROP_MAX >> 20);
		return MHD_NO;
	}
	rq->dropped += n;
	return MHD_YES;
}

/* A body past the cap (chunked: a Content-Length above it was refused up
 * front) or past the budget: free what was buffered, drop the rest and
 * answer rc's HTTP code when the body ends. Counted, and logged at most
 * every HTTP_GUARD_LOG_INTERVAL_S by the watcher when it is the budget. */
static enum MHD_Result body_refuse(http_server_t *srv, request_t *rq, int rc, size_t n)
{
	bool busy = rc == GPUQ_EAGAIN || rc == GPUQ_EDENIED;

	rq->refused = rc == GPUQ_ELIMIT ? MHD_HTTP_CONTENT_TOO_LARGE
		      : busy		? MHD_HTTP_SERVICE_UNAVAILABLE
					: MHD_HTTP_INTERNAL_SERVER_ERROR;
	rq->collecting = false;
	body_release(srv, rq);
	if (rc == GPUQ_EAGAIN)
		http_metrics_guard_count(srv->metrics, HTTP_GUARD_REFUSED_BODY_BUDGET, 1);
	else if (rc == GPUQ_EDENIED)
		share_refused(srv, rq);
	gpuq_log(GPUQ_LOG_DEBUG, MODULE, "%s: body: %s: refused",
		 rq->route == HTTP_ROUTE_VALIDATE ? "/validate" : "/mutate",
		 rc == GPUQ_ELIMIT    ? "larger than 3 MiB"
		 : rc == GPUQ_EAGAIN  ? "body budget spent"
		 : rc == GPUQ_EDENIED ? "its address's share of the body budget spent"
				      : "out of memory");
	return body_drop(srv, rq, n);
}

/* The answer to a refused chunked body, once it has ended. */
static enum MHD_Result body_refused_reply(http_server_t *srv, struct MHD_Connection *conn,
					  request_t *rq)
{
	char msg[96];

	if (rq->refused == MHD_HTTP_CONTENT_TOO_LARGE)
		snprintf(msg, sizeof(msg), "request body too large: more than %u bytes\n",
			 HTTP_BODY_MAX);
	else if (rq->refused == MHD_HTTP_SERVICE_UNAVAILABLE)
		gpuq_strlcpy(msg, "busy: too many request bodies in flight, retry\n", sizeof(msg));
	else
		gpuq_strlcpy(msg, "out of memory\n", sizeof(msg));
	return reply_text(srv, conn, rq, (unsigned)rq->refused, msg);
}

/* libmicrohttpd calls this first when the headers are in, then once per
 * piece of body, then once more with *upload_size 0. A reply queued in the
 * first call makes it close the connection after the reply (it has not read
 * the body), so replies that should keep the connection open are queued in
 * the last call; early replies are for refusals only. */
/* Every new connection while draining is closed at once. (Draining by
 * MHD_quiesce_daemon instead raced libmicrohttpd's own epoll threads now and
 * then: "Failed to remove listen FD from epoll set", an abort.) */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	http_server_t *srv = cls;
	addr_key_t key = http_addr_key(addr);
	conn_slot_t *oldest = NULL;
	unsigned same = 0;
	bool refuse;

	(void)addrlen;
	if (atomic_load(&srv->draining))
		return MHD_NO;
	pthread_mutex_lock(&srv->slots_lock);
	for (conn_slot_t *s = srv->slots; s; s = s->next) {
		if (http_addr_eq(&s->addr, &key) && atomic_load(&s->state) != CONN_CUT)
			same++;
		if (atomic_load(&s->state) == CONN_IDLE &&
		    (!oldest || atomic_load(&s->since_ns) < atomic_load(&oldest->since_ns)))
			oldest = s;
	}
	refuse = same >= srv->cfg.conn_per_address;
	if (refuse) {
		http_metrics_guard_count(srv->metrics, HTTP_GUARD_REFUSED_PER_ADDRESS, 1);
		http_addr_text(&key, srv->refused_addr, sizeof(srv->refused_addr));
	} else if (srv->n_slots >= reclaim_at(srv) && oldest)
		slot_cut(srv, oldest, HTTP_GUARD_CLOSED_RECLAIMED);
	pthread_mutex_unlock(&srv->slots_lock);
	return refuse ? MHD_NO : MHD_YES;
}

/* libmicrohttpd unescapes the path in place (so "/mutate%00x" reads as
 * "/mutate"): keep it as sent, and request_refusal refuses escapes. */
static size_t no_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	return strlen(s);
}

/* Whether lis answers route: all of them without an internal listener;
 * with one, the main port the review routes and the probes, the internal
 * one everything else and the probes. */
static bool listener_serves(const listener_t *lis, http_route_t route)
{
	bool review = route == HTTP_ROUTE_MUTATE || route == HTTP_ROUTE_VALIDATE;
	bool probe = route == HTTP_ROUTE_HEALTHZ || route == HTTP_ROUTE_READYZ;

	if (!lis->srv->cfg.internal_port || probe || route == HTTP_ROUTE_OTHER)
		return true;
	return lis->internal ? !review : review;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	listener_t *lis = cls;
	http_server_t *srv = lis->srv;
	request_t *rq = *con_cls;
	int rc;

	if (!rq) {
		char why_buf[128];
		bool long_q;
		const union MHD_ConnectionInfo *info;
		const char *why;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->start_ns = gpuq_mono_ns();
		rq->route =
		    http_request_route(url); /* the query string (?timeout=10s) is not in url */
		*con_cls = rq;
		atomic_fetch_add_explicit(&srv->inflight, 1, memory_order_acq_rel);
		info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		rq->slot = info ? info->socket_context : NULL;
		slot_enter(rq->slot, CONN_REQUEST);
		why = http_request_refusal(conn, url, version, why_buf, sizeof(why_buf));
		if (why) {
			rq->route = HTTP_ROUTE_OTHER; /* counted as path="other" */
			return reply_text(srv, conn, rq, MHD_HTTP_BAD_REQUEST, why);
		}
		if (!listener_serves(lis, rq->route))
			return reply_text(srv, conn, rq, MHD_HTTP_NOT_FOUND, "not found\n");
		if (rq->route <= HTTP_ROUTE_VALIDATE)
			return post_begin(srv, conn, rq, method);
		if (rq->route == HTTP_ROUTE_UI && strlen(url) > HTTP_APP_PATH_MAX)
			return reply_text(srv, conn, rq, MHD_HTTP_URI_TOO_LONG, "path too long\n");
		if (rq->route == HTTP_ROUTE_UI && !app_capture(conn, rq, url, &long_q))
			return long_q ? reply_text(srv, conn, rq, MHD_HTTP_URI_TOO_LONG,
						   "query too long\n")
				      : MHD_NO;
		if (http_request_has_body(
			conn)) /* nothing here takes a body: refuse, do not read it */
			return route_serve(srv, conn, rq, method);
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (rq->refused)
			return body_drop(srv, rq, n);
		if (!rq->collecting)
			return MHD_YES;
		rc = body_append(srv, rq, upload, n);
		if (rc)
			return body_refuse(srv, rq, rc, n);
		return MHD_YES;
	}
	if (rq->replied)
		return MHD_YES;
	body_done(rq); /* the body is in */
	if (rq->refused) {
		slot_enter(rq->slot, CONN_REQUEST);
		return body_refused_reply(srv, conn, rq);
	}
	if (rq->collecting) {
		rq->collecting = false;
		slot_enter(rq->slot, CONN_REQUEST);
		return post_answer(srv, conn, rq);
	}
	return route_serve(srv, conn, rq, method);
}

/* ---- Lifecycle ---- */

int http_server_create(const http_server_config_t *cfg, http_server_t **out, gpuq_diag_t *diag)
{
	http_server_t *srv;
	int rc;

	*out = NULL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return GPUQ_ENOMEM;
	srv->cfg = *cfg;
	if (!srv->cfg.conn_max)
		srv->cfg.conn_max = HTTP_CONNECTIONS_MAX;
	if (!srv->cfg.conn_per_address)
		srv->cfg.conn_per_address = HTTP_CONNECTIONS_PER_IP;
	srv->share_bytes = srv->cfg.body_budget / HTTP_BODY_SHARE_DIV;
	if (srv->share_bytes < HTTP_BODY_MAX)
		srv->share_bytes = HTTP_BODY_MAX;
	srv->share_bodies = srv->cfg.conn_per_address / 2 ? srv->cfg.conn_per_address / 2 : 1;
	for (int i = 0; i < LISTENERS; i++)
		srv->lis[i] = (listener_t){srv, NULL, i == 1};
	srv->listen_fd = MHD_INVALID_SOCKET;
	atomic_init(&srv->inflight, 0);
	atomic_init(&srv->body_bytes, 0);
	atomic_init(&srv->draining, false);
	atomic_init(&srv->unready, false);
	pthread_mutex_init(&srv->stop_lock, NULL);
	pthread_mutex_init(&srv->log_lock, NULL);
	pthread_mutex_init(&srv->slots_lock, NULL);
	pthread_mutex_init(&srv->offenders_lock, NULL);
	pthread_mutex_init(&srv->slow_lock, NULL);
	pthread_cond_init(&srv->slow_cond, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->stop_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	rc = http_metrics_create(&srv->metrics);
	if (rc)
		goto fail;
	rc = http_tls_create(cfg->cert_dir, &srv->tls, diag);
	if (rc) {
		gpuq_diag_prefix(diag, "--cert-dir \"%s\": ", cfg->cert_dir);
		goto fail;
	}
	{
		http_tls_pair_t *pair = http_tls_current(srv->tls);

		http_metrics_cert_not_after_set(srv->metrics, http_tls_pair_not_after(pair));
		gpuq_log(GPUQ_LOG_INFO, MODULE, "serving certificate: serial %s, notAfter %" PRId64,
			 http_tls_pair_serial(pair), http_tls_pair_not_after(pair));
		if (http_tls_pair_not_after(pair) < (int64_t)time(NULL))
			gpuq_log(GPUQ_LOG_WARN, MODULE, "the serving certificate has expired");
		http_tls_pair_unref(pair);
	}
	*out = srv;
	return GPUQ_OK;
fail:
	srv->stopped = true;
	http_server_destroy(srv);
	return rc;
}

/* The address of a listener: host ("" = every IPv4 address) and port;
 * flag and listen name it in messages. */
static int resolve(const char *flag, const char *listen, const char *host, uint16_t port,
		   struct sockaddr_storage *addr, gpuq_diag_t *diag)
{
	struct addrinfo hints, *res = NULL;
	char port_s[8];
	int ret;

	memset(addr, 0, sizeof(*addr));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port_s, sizeof(port_s), "%u", (unsigned)port);
	ret = getaddrinfo(host[0] ? host : "0.0.0.0", port_s, &hints, &res);
	if (ret)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s \"%s\": cannot resolve \"%s\": %s", flag,
				     listen, host, gai_strerror(ret));
	memset(addr, 0, sizeof(*addr));
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return GPUQ_OK;
}

/* libmicrohttpd's pool per connection: the request line and headers, their
 * table and the reply's headers (a body goes to the request's own buffer).
 * libmicrohttpd 0.9.75 zeroes the whole pool when a keep-alive connection
 * starts its next request and the unused half of its read buffer once the
 * headers are in: a byte cleared per byte of pool, per request (49,000
 * instructions at its default of 32 KiB, a fifth of a review's). Sized for
 * the largest header gpuq accepts, an HTTP_APP_AUTH_MAX Authorization header
 * (16 KiB), with room for the rest: 20 KiB was measured to carry it and a
 * 1 KB cookie, 16 KiB answers 431; 24 KiB leaves 6 KiB more. */
#define POOL_BYTES (24u << 10)

/* Start listener i: the main one on cfg.host:port with the thread pool and
 * the whole connection table, the internal one on its address with one
 * thread and an eighth of the table (a scrape and a few browsers). */
static int start_listener(http_server_t *srv, int i, gpuq_diag_t *diag)
{
	listener_t *lis = &srv->lis[i];
	const char *flag = lis->internal ? "--internal-listen" : "--listen";
	const char *listen = lis->internal ? srv->cfg.internal_listen : srv->cfg.listen;
	const char *host = lis->internal ? srv->cfg.internal_host : srv->cfg.host;
	uint16_t port = lis->internal ? srv->cfg.internal_port : srv->cfg.port;
	unsigned threads = lis->internal ? 0 : (srv->cfg.threads > 1 ? srv->cfg.threads : 0);
	unsigned limit = lis->internal ? srv->cfg.conn_max / 8 : srv->cfg.conn_max;
	struct sockaddr_storage addr;
	unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	int rc;

	rc = resolve(flag, listen ? listen : "", host ? host : "", port, &addr, diag);
	if (rc)
		return rc;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pthread_mutex_lock(&srv->log_lock);
	srv->starting = true;
	srv->start_msg[0] = '\0';
	pthread_mutex_unlock(&srv->log_lock);
	/* No per-address limit in libmicrohttpd: on_accept applies
	 * conn_per_address over both listeners, and counts and logs it. */
	lis->daemon = MHD_start_daemon(
	    flags, port, on_accept, srv, on_request, lis, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_HTTPS_CERT_CALLBACK,
	    on_certificate, MHD_OPTION_HTTPS_PRIORITIES, HTTP_TLS_PRIORITIES,
	    MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, limit,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)POOL_BYTES, MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	    MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, srv,
	    MHD_OPTION_END);
	pthread_mutex_lock(&srv->log_lock);
	srv->starting = false;
	pthread_mutex_unlock(&srv->log_lock);
	if (!lis->daemon)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s \"%s\": cannot serve there: %s", flag,
				     listen ? listen : "",
				     srv->start_msg[0] ? srv->start_msg : "libmicrohttpd refused");
	gpuq_log(GPUQ_LOG_INFO, MODULE, "serving https://%s%s%s:%u (TLS 1.2/1.3, %u threads)%s",
		 addr.ss_family == AF_INET6 ? "[" : "", host && host[0] ? host : "0.0.0.0",
		 addr.ss_family == AF_INET6 ? "]" : "", (unsigned)port, threads ? threads : 1,
		 lis->internal		  ? ": /metrics, the web view and its APIs"
		 : srv->cfg.internal_port ? ": the review routes and probes only"
					  : "");
	return GPUQ_OK;
}

static void stop_daemons(http_server_t *srv)
{
	for (int i = 0; i < LISTENERS; i++)
		if (srv->lis[i].daemon) {
			MHD_stop_daemon(srv->lis[i].daemon);
			srv->lis[i].daemon = NULL;
		}
}

int http_server_start(http_server_t *srv, gpuq_diag_t *diag)
{
	int rc;

	rc = start_listener(srv, 0, diag);
	if (!rc && srv->cfg.internal_port)
		rc = start_listener(srv, 1, diag);
	if (rc) {
		stop_daemons(srv);
		return rc;
	}
	atomic_store(&srv->stop_flag, false);
	if (pthread_create(&srv->watcher, NULL, watcher_main, srv)) {
		stop_daemons(srv);
		return gpuq_diag_set(diag, GPUQ_EIO, "cannot start the watcher thread");
	}
	srv->watcher_running = true;
	if (srv->app_fn && srv->app_slow_fn) {
		pthread_mutex_lock(&srv->slow_lock);
		atomic_store(&srv->slow_stop, false);
		srv->slow_running = !pthread_create(&srv->slow_thread, NULL, slow_main, srv);
		pthread_mutex_unlock(&srv->slow_lock);
		if (!srv->slow_running)
			gpuq_log(GPUQ_LOG_ERROR, MODULE,
				 "cannot start the web UI's worker thread: requests that need "
				 "the apiserver are answered 503");
	}
	return GPUQ_OK;
}

void http_server_unready(http_server_t *srv)
{
	if (!atomic_exchange(&srv->unready, true))
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "shutting down: /readyz answers 503, still serving");
}

void http_server_stop(http_server_t *srv, unsigned drain_ms)
{
	uint64_t deadline = gpuq_mono_ns() + (uint64_t)drain_ms * 1000000u;
	int zero_reads = 0;

	if (srv->stopped)
		return;
	srv->stopped = true;
	atomic_store(&srv->draining, true);
	if (srv->lis[0].daemon) {
		/* Two idle readings 20 ms apart: a request whose headers were
		 * just read gets to its first callback in between. */
		while (zero_reads < 2 && gpuq_mono_ns() < deadline) {
			if (atomic_load(&srv->inflight) == 0)
				zero_reads++;
			else
				zero_reads = 0;
			struct timespec ts = {0, 20000000L};
			nanosleep(&ts, NULL);
		}
		if (atomic_load(&srv->inflight) > 0)
			gpuq_log(GPUQ_LOG_WARN, MODULE,
				 "stopping with %d requests still in flight after %u ms",
				 atomic_load(&srv->inflight), drain_ms);
	}
	slow_stop(srv); /* resumes what still waits: before the daemon stops */
	if (srv->watcher_running) {
		pthread_mutex_lock(&srv->stop_lock);
		atomic_store(&srv->stop_flag, true);
		pthread_cond_broadcast(&srv->stop_cond);
		pthread_mutex_unlock(&srv->stop_lock);
		pthread_join(srv->watcher, NULL);
		srv->watcher_running = false;
	}
	stop_daemons(srv);
	if (srv->listen_fd != MHD_INVALID_SOCKET) {
		close(srv->listen_fd);
		srv->listen_fd = MHD_INVALID_SOCKET;
	}
}

void http_server_destroy(http_server_t *srv)
{
	if (!srv)
		return;
	http_server_stop(srv, 0);
	http_tls_destroy(srv->tls);
	http_metrics_destroy(srv->metrics);
	pthread_cond_destroy(&srv->stop_cond);
	pthread_mutex_destroy(&srv->stop_lock);
	pthread_mutex_destroy(&srv->log_lock);
	pthread_mutex_destroy(&srv->slots_lock);
	pthread_mutex_destroy(&srv->offenders_lock);
	pthread_mutex_destroy(&srv->slow_lock);
	pthread_cond_destroy(&srv->slow_cond);
	free(srv);
}

http_metrics_t *http_server_metrics(http_server_t *srv)
{
	return srv->metrics;
}

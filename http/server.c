/* webhook server: the HTTPS admission server (libmicrohttpd + GnuTLS), its
 * routes and the policy and certificate watcher. See webhook.h Section B. */
#include "webhook/webhook.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
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

#include "webhook/tls_internal.h"

#define MODULE "webhook"

/* ==== The server ==== */

/* Per TLS connection: the pair its handshake used, held until it closes;
 * and its place in the server's list of open connections, which the
 * watcher sweeps for those past the header deadline. */
typedef struct conn_slot {
	webhook_server_t *srv;	       /* owner */
	webhook_tls_pair_t *pair;      /* one reference, or NULL before the handshake */
	int fd;			       /* its socket (open while listed) */
	uint64_t start_ns;	       /* CLOCK_MONOTONIC at accept */
	atomic_bool headers;	       /* a request's headers came in (or it was cut) */
	struct conn_slot *prev, *next; /* in srv->slots, under srv->slots_lock */
} conn_slot_t;

/* Per request, freed by on_completed. */
typedef struct request {
	webhook_route_t route; /* which route the path named */
	uint64_t start_ns;     /* CLOCK_MONOTONIC when the headers were in */
	bool collecting;       /* an admission body is being read */
	int refused;	       /* a chunked body went past a cap: the rest is read and
				  dropped, then answered with this code (0: none) */
	size_t dropped;	       /* bytes dropped since, at most BODY_DROP_MAX */
	bool replied;	       /* a response was queued */
	char *body;	       /* the body so far (collecting only) */
	size_t len;	       /* bytes in body */
	size_t cap;	       /* bytes allocated (and taken from the body budget); never
				  above WEBHOOK_REVIEW_MAX */
	/* app routes (WEBHOOK_ROUTE_UI) whose answer needed the slow worker */
	struct MHD_Connection *conn; /* the suspended connection */
	char *app_path;		     /* copy of the path (owned) */
	char *app_auth;		     /* copy of the Authorization header (owned), or NULL */
	bool app_head;		     /* HEAD */
	bool slow_done;		     /* the worker ran (or skipped) the slow part */
	struct request *slow_next;   /* in the worker's queue */
} request_t;

struct webhook_server {
	const webhook_serve_opts_t *opts; /* flags (borrowed) */
	webhook_metrics_t *metrics;	  /* counters (owned) */
	webhook_tls_t *tls;		  /* the serving pair (owned) */
	webhook_config_t review_cfg;	  /* what webhook_review_handle gets */

	pthread_mutex_t policy_lock; /* guards policy */
	policy_t *policy;	     /* the snapshot requests start on (one reference);
					NULL: none yet, reviews fail closed */
	pthread_mutex_t reload_lock; /* one policy reload at a time; guards the next four */
	uint64_t policy_generation;  /* successful loads so far */
	uint64_t policy_seen_fp;     /* fingerprint of the dir as last acted on */
	bool policy_pending;	     /* the dir at policy_seen_fp failed to load once */
	bool policy_fp_failed;	     /* the last fingerprint failed (logged once) */

	struct MHD_Daemon *daemon;  /* NULL until started */
	pthread_t watcher;	    /* polls certs and policy */
	pthread_mutex_t stop_lock;  /* guards stop_flag */
	pthread_cond_t stop_cond;   /* wakes the watcher */
	pthread_mutex_t log_lock;   /* guards start_msg while starting */
	MHD_socket listen_fd;	    /* after quiesce: ours to close */
	atomic_int inflight;	    /* requests between their first callback and completion */
	atomic_size_t body_bytes;   /* bytes of body buffers allocated, <= opts->body_budget */
	atomic_bool draining;	    /* stop requested: /readyz 503, Connection: close */
	atomic_bool unready;	    /* SIGTERM's grace: /readyz 503, Connection: close */
	pthread_mutex_t slots_lock; /* guards slots */
	conn_slot_t *slots;	    /* open connections (on_connection) */
	bool watcher_running;	    /* watcher was started and not yet joined */
	bool stop_flag;		    /* watcher must exit */
	bool stopped;		    /* webhook_server_stop completed */
	bool starting;		    /* MHD_start_daemon is running */
	char start_msg[256];	    /* last libmicrohttpd message during start */

	webhook_app_fn app_fn;		  /* the app of WEBHOOK_ROUTE_UI (NULL: none) */
	webhook_app_slow_fn app_slow_fn;  /* its slow part */
	void *app_ctx;			  /* their context (borrowed) */
	pthread_t slow_thread;		  /* runs app_slow_fn */
	bool slow_running;		  /* slow_thread started and not joined */
	pthread_mutex_t slow_lock;	  /* guards the four below */
	pthread_cond_t slow_cond;	  /* wakes the worker */
	request_t *slow_head, *slow_tail; /* suspended requests waiting, in order */
	size_t slow_n;			  /* entries waiting (<= WEBHOOK_APP_SLOW_MAX) */
	bool slow_stop;			  /* the worker must resume everything and exit */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static policy_t *policy_current(webhook_server_t *srv)
{
	policy_t *p;

	pthread_mutex_lock(&srv->policy_lock);
	p = policy_ref(srv->policy);
	pthread_mutex_unlock(&srv->policy_lock);
	return p;
}

/* Serve p (its reference moves to the server; NULL: none). Returns whether
 * a policy was serving before. */
static bool policy_swap(webhook_server_t *srv, policy_t *p)
{
	policy_t *old;

	pthread_mutex_lock(&srv->policy_lock);
	old = srv->policy;
	srv->policy = p;
	pthread_mutex_unlock(&srv->policy_lock);
	policy_unref(old);
	return old != NULL;
}

/* Load the policy dir; on success swap it in. Caller holds reload_lock.
 * report: log and count a failure now (else leave it pending for one poll). */
static int policy_reload_locked(webhook_server_t *srv, bool report)
{
	gpuq_diag_t diag = {{0}};
	policy_t *p = NULL;
	uint64_t fp = 0;
	int rc;

	if (policy_dir_fingerprint(srv->opts->policy_dir, &fp, NULL))
		fp = 0;
	rc = policy_load_dir(srv->opts->policy_dir, NULL, &p, &diag);
	if (rc == GPUQ_OK) {
		srv->policy_seen_fp = policy_fingerprint(p);
		srv->policy_pending = false;
		srv->policy_generation++;
		policy_swap(srv, p);
		webhook_metrics_policy_reload_count(srv->metrics, true);
		webhook_metrics_policy_generation_set(srv->metrics, srv->policy_generation);
		gpuq_log(GPUQ_LOG_INFO, MODULE, "policy reloaded from %s (generation %" PRIu64 ")",
			 srv->opts->policy_dir, srv->policy_generation);
		return GPUQ_OK;
	}
	srv->policy_seen_fp = fp;
	if (!report) {
		srv->policy_pending = true;
		gpuq_log(GPUQ_LOG_DEBUG, MODULE, "policy dir changed but does not load yet: %s",
			 diag.msg);
		return rc;
	}
	srv->policy_pending = false;
	webhook_metrics_policy_reload_count(srv->metrics, false);
	gpuq_log(GPUQ_LOG_ERROR, MODULE,
		 "policy reload refused (%s), generation %" PRIu64 " keeps serving: %s",
		 gpuq_strerror(rc), srv->policy_generation, diag.msg);
	return rc;
}

int webhook_server_policy_reload(webhook_server_t *srv)
{
	int rc;

	if (!srv->opts->policy_dir) {
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "no --policy-dir: the policy comes from the cluster, nothing to reload");
		return GPUQ_EINVAL;
	}
	pthread_mutex_lock(&srv->reload_lock);
	rc = policy_reload_locked(srv, true);
	pthread_mutex_unlock(&srv->reload_lock);
	return rc;
}

int webhook_server_policy_set(webhook_server_t *srv, policy_t *p)
{
	if (!p || srv->opts->policy_dir) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE, "policy feed refused: %s",
			 p ? "this server reads --policy-dir (one policy source only)"
			   : "no policy given");
		return GPUQ_EINVAL;
	}
	pthread_mutex_lock(&srv->reload_lock);
	srv->policy_generation++;
	policy_swap(srv, policy_ref(p));
	webhook_metrics_policy_reload_count(srv->metrics, true);
	webhook_metrics_policy_generation_set(srv->metrics, srv->policy_generation);
	gpuq_log(GPUQ_LOG_INFO, MODULE, "policy set from the cluster (generation %" PRIu64 ")",
		 srv->policy_generation);
	pthread_mutex_unlock(&srv->reload_lock);
	return GPUQ_OK;
}

void webhook_server_policy_clear(webhook_server_t *srv)
{
	if (srv->opts->policy_dir) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE,
			 "policy clear ignored: this server reads --policy-dir");
		return;
	}
	pthread_mutex_lock(&srv->reload_lock);
	if (policy_swap(srv, NULL))
		gpuq_log(GPUQ_LOG_WARN, MODULE,
			 "policy dropped (generation %" PRIu64 " was serving): Pod and Job "
			 "reviews are answered 503 until the controller syncs again",
			 srv->policy_generation);
	pthread_mutex_unlock(&srv->reload_lock);
}

static void poll_policy(webhook_server_t *srv)
{
	gpuq_diag_t diag = {{0}};
	uint64_t fp;

	if (!srv->opts->policy_dir)
		return; /* fed from outside: nothing on disk to watch */
	pthread_mutex_lock(&srv->reload_lock);
	if (policy_dir_fingerprint(srv->opts->policy_dir, &fp, &diag)) {
		if (!srv->policy_fp_failed)
			gpuq_log(GPUQ_LOG_ERROR, MODULE, "cannot watch --policy-dir: %s", diag.msg);
		srv->policy_fp_failed = true;
	} else {
		srv->policy_fp_failed = false;
		if (fp != srv->policy_seen_fp)
			/* A first failure waits one poll: an editor may be mid-write. */
			policy_reload_locked(srv, false);
		else if (srv->policy_pending)
			policy_reload_locked(srv, true);
	}
	pthread_mutex_unlock(&srv->reload_lock);
}

static void poll_certs(webhook_server_t *srv)
{
	gpuq_diag_t diag = {{0}};
	webhook_tls_pair_t *pair;

	switch (webhook_tls_poll(srv->tls, &diag)) {
	case WEBHOOK_TLS_UNCHANGED:
		break;
	case WEBHOOK_TLS_RELOADED:
		pair = webhook_tls_current(srv->tls);
		webhook_metrics_cert_reload_count(srv->metrics, true);
		webhook_metrics_cert_not_after_set(srv->metrics, webhook_tls_pair_not_after(pair));
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "serving certificate reloaded from %s: serial %s, notAfter %" PRId64,
			 srv->opts->cert_dir, webhook_tls_pair_serial(pair),
			 webhook_tls_pair_not_after(pair));
		webhook_tls_pair_unref(pair);
		break;
	case WEBHOOK_TLS_PENDING:
		gpuq_log(GPUQ_LOG_DEBUG, MODULE, "certificate files changed, not loadable yet: %s",
			 diag.msg);
		break;
	case WEBHOOK_TLS_REFUSED:
		webhook_metrics_cert_reload_count(srv->metrics, false);
		gpuq_log(GPUQ_LOG_ERROR, MODULE,
			 "certificate reload refused, the previous pair keeps serving: %s",
			 diag.msg);
		break;
	}
}

/* Close every connection that has not sent a request's headers within
 * WEBHOOK_HEADER_DEADLINE_S of its accept (TLS handshake included): a
 * deadline, where libmicrohttpd's timeout is an idle timer that every byte
 * restarts. shutdown() wakes libmicrohttpd, which closes it; the slot leaves
 * the list (under the lock) before the socket is closed, so fd is still
 * this connection's. */
static void cut_slow_connections(webhook_server_t *srv)
{
	uint64_t now = now_ns(), limit = (uint64_t)WEBHOOK_HEADER_DEADLINE_S * 1000000000u;
	unsigned cut = 0;

	pthread_mutex_lock(&srv->slots_lock);
	for (conn_slot_t *s = srv->slots; s; s = s->next) {
		if (atomic_load(&s->headers) || now - s->start_ns < limit)
			continue;
		atomic_store(&s->headers, true);
		(void)shutdown(s->fd, SHUT_RDWR);
		cut++;
	}
	pthread_mutex_unlock(&srv->slots_lock);
	if (cut) {
		webhook_metrics_deadline_count(srv->metrics, cut);
		gpuq_log(GPUQ_LOG_WARN, MODULE,
			 "closed %u connections that sent no request headers within %d s", cut,
			 WEBHOOK_HEADER_DEADLINE_S);
	}
}

static void *watcher_main(void *arg)
{
	webhook_server_t *srv = arg;
	struct timespec deadline;

	pthread_mutex_lock(&srv->stop_lock);
	while (!srv->stop_flag) {
		deadline = gpuq_clock_after_ms(CLOCK_MONOTONIC, srv->opts->poll_ms);
		while (!srv->stop_flag &&
		       pthread_cond_timedwait(&srv->stop_cond, &srv->stop_lock, &deadline) == 0)
			;
		if (srv->stop_flag)
			break;
		pthread_mutex_unlock(&srv->stop_lock);
		poll_certs(srv);
		poll_policy(srv);
		cut_slow_connections(srv);
		pthread_mutex_lock(&srv->stop_lock);
	}
	pthread_mutex_unlock(&srv->stop_lock);
	return NULL;
}

/* ---- libmicrohttpd callbacks ---- */

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	webhook_server_t *srv = cls;
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
	webhook_tls_pair_t *pair;
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
	pair = webhook_tls_current(slot->srv->tls);
	webhook_tls_pair_unref(slot->pair); /* a renegotiation replaces it */
	slot->pair = pair;
	*pcert = pair->pcerts;
	*pcert_length = pair->n_pcerts;
	*key = pair->key;
	return 0;
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
		webhook_server_t *srv = cls;

		slot = info ? calloc(1, sizeof(*slot)) : NULL;
		if (slot) {
			slot->srv = srv;
			slot->fd = info->connect_fd;
			slot->start_ns = now_ns();
			atomic_init(&slot->headers, false);
			pthread_mutex_lock(&srv->slots_lock);
			slot->next = srv->slots;
			if (srv->slots)
				srv->slots->prev = slot;
			srv->slots = slot;
			pthread_mutex_unlock(&srv->slots_lock);
		}
		*socket_context = slot;
		return;
	}
	slot = *socket_context;
	*socket_context = NULL;
	if (slot) {
		webhook_server_t *srv = slot->srv;

		pthread_mutex_lock(&srv->slots_lock);
		if (slot->prev)
			slot->prev->next = slot->next;
		else
			srv->slots = slot->next;
		if (slot->next)
			slot->next->prev = slot->prev;
		pthread_mutex_unlock(&srv->slots_lock);
		/* GnuTLS is done with the session (gnutls_deinit ran before this
		 * notification), so the pair may go. */
		webhook_tls_pair_unref(slot->pair);
		free(slot);
	}
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	webhook_server_t *srv = cls;
	request_t *rq = *con_cls;

	(void)conn;
	(void)toe;
	if (!rq)
		return;
	atomic_fetch_sub_explicit(&srv->body_bytes, rq->cap, memory_order_relaxed);
	free(rq->body);
	free(rq->app_path);
	free(rq->app_auth);
	free(rq);
	*con_cls = NULL;
	atomic_fetch_sub_explicit(&srv->inflight, 1, memory_order_acq_rel);
}

static webhook_route_t route_of(const char *url)
{
	static const char *const paths[] = {"/mutate", "/validate", "/healthz", "/readyz",
					    "/metrics"};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!strcmp(url, paths[i]))
			return (webhook_route_t)i;
	if (!strcmp(url, "/ui") || !strncmp(url, "/ui/", 4) || !strncmp(url, "/api/", 5))
		return WEBHOOK_ROUTE_UI;
	return WEBHOOK_ROUTE_OTHER;
}

#define TEXT_PLAIN "text/plain; charset=utf-8"

/* A chunked body past the 3 MiB cap (or the body budget) is read on and
 * dropped so that the peer gets an answer (libmicrohttpd cannot queue one in
 * the middle of a body), but only up to this many more bytes; past them the
 * connection is closed unanswered. 16 MiB is read in tens of milliseconds
 * and held nowhere. */
#define BODY_DROP_MAX (16u << 20)
/* The first buffer of a review body without a Content-Length (chunked): a
 * typical review fits; it doubles from there up to WEBHOOK_REVIEW_MAX. */
#define BODY_FIRST_CAP 65536u

/* Queue one reply. body is copied. count: add it to gpuq_http_requests_total. */
static enum MHD_Result reply(webhook_server_t *srv, struct MHD_Connection *conn, request_t *rq,
			     unsigned code, const char *content_type, const char *body, size_t len,
			     bool count)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					rq->route <= WEBHOOK_ROUTE_VALIDATE ? "POST" : "GET, HEAD");
	if (atomic_load(&srv->draining) || atomic_load(&srv->unready))
		/* Send the peer to another replica for its next request. */
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	rq->replied = true;
	if (count)
		webhook_metrics_http_count(srv->metrics, rq->route, code);
	return ret;
}

static enum MHD_Result reply_text(webhook_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				  unsigned code, const char *text)
{
	return reply(srv, conn, rq, code, TEXT_PLAIN, text, strlen(text), true);
}

/* Whether a Content-Type header names application/json (parameters such as
 * charset allowed, case-insensitive). */
static bool is_json(const char *ctype)
{
	static const char want[] = "application/json";
	size_t n = sizeof(want) - 1;

	if (!ctype || strncasecmp(ctype, want, n) != 0)
		return false;
	ctype += n;
	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	return *ctype == '\0' || *ctype == ';';
}

/* Grow rq's body buffer to want bytes, taking them from the server's body
 * budget. GPUQ_EAGAIN when the budget is spent, GPUQ_ENOMEM. */
static int body_reserve(webhook_server_t *srv, request_t *rq, size_t want)
{
	size_t more = want - rq->cap;
	size_t before = atomic_fetch_add_explicit(&srv->body_bytes, more, memory_order_relaxed);
	char *nb;

	if (before + more > srv->opts->body_budget) {
		atomic_fetch_sub_explicit(&srv->body_bytes, more, memory_order_relaxed);
		return GPUQ_EAGAIN;
	}
	nb = realloc(rq->body, want);
	if (!nb) {
		atomic_fetch_sub_explicit(&srv->body_bytes, more, memory_order_relaxed);
		return GPUQ_ENOMEM;
	}
	rq->body = nb;
	rq->cap = want;
	return GPUQ_OK;
}

/* Append a piece of the body, growing the buffer up to WEBHOOK_REVIEW_MAX.
 * GPUQ_ELIMIT past the cap, GPUQ_EAGAIN past the budget, GPUQ_ENOMEM. */
static int body_append(webhook_server_t *srv, request_t *rq, const char *data, size_t n)
{
	int rc;

	if (n > WEBHOOK_REVIEW_MAX - rq->len)
		return GPUQ_ELIMIT;
	if (rq->len + n > rq->cap) {
		size_t want = rq->cap ? rq->cap : BODY_FIRST_CAP;

		while (want < rq->len + n)
			want *= 2;
		if (want > WEBHOOK_REVIEW_MAX)
			want = WEBHOOK_REVIEW_MAX;
		rc = body_reserve(srv, rq, want);
		if (rc)
			return rc;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	return GPUQ_OK;
}

/* First callback of an admission request: check method, type and size,
 * then get ready to collect the body. */
static enum MHD_Result admission_begin(webhook_server_t *srv, struct MHD_Connection *conn,
				       request_t *rq, const char *method)
{
	const char *ctype, *clen;
	char msg[160];

	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return reply_text(srv, conn, rq, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed: use POST\n");
	ctype = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!is_json(ctype)) {
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
		if (!errno && !*end && n > WEBHOOK_REVIEW_MAX) {
			snprintf(msg, sizeof(msg),
				 "request body too large: %llu bytes, at most %u\n", n,
				 WEBHOOK_REVIEW_MAX);
			return reply_text(srv, conn, rq, MHD_HTTP_CONTENT_TOO_LARGE, msg);
		}
		if (!errno && !*end && n > 0) {
			int rc = body_reserve(srv, rq, (size_t)n);

			if (rc == GPUQ_EAGAIN)
				return reply_text(
				    srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				    "busy: too many request bodies in flight, retry\n");
			if (rc)
				return reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
						  "out of memory\n");
		}
	}
	rq->collecting = true;
	return MHD_YES;
}

/* The whole body is in: decide it against the current policy. */
static enum MHD_Result admission_decide(webhook_server_t *srv, struct MHD_Connection *conn,
					request_t *rq)
{
	webhook_endpoint_t ep =
	    rq->route == WEBHOOK_ROUTE_VALIDATE ? WEBHOOK_VALIDATE : WEBHOOK_MUTATE;
	webhook_reply_t out;
	enum MHD_Result ret;
	policy_t *policy;
	uint64_t elapsed;
	int rc;

	memset(&out, 0, sizeof(out));
	policy = policy_current(srv);
	rc = webhook_review_handle(ep, policy, &srv->review_cfg, rq->body ? rq->body : "", rq->len,
				   &out);
	policy_unref(policy);
	if (rc) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE, "%s: review failed: %s",
			 ep == WEBHOOK_VALIDATE ? "/validate" : "/mutate", gpuq_strerror(rc));
		ret = reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "internal error: the review could not be decided\n");
		webhook_metrics_admission_observe(srv->metrics, ep, "other", "error",
						  now_ns() - rq->start_ns);
		return ret;
	}
	ret = reply(srv, conn, rq, (unsigned)out.http_status,
		    out.content_type ? out.content_type : "application/json",
		    out.body ? out.body : "", out.len, out.http_status != MHD_HTTP_OK);
	elapsed = now_ns() - rq->start_ns;
	webhook_metrics_admission_observe(srv->metrics, ep, out.kind, out.decision, elapsed);
	gpuq_log(GPUQ_LOG_DEBUG, MODULE, "%s: %d %s %s, %zu bytes in %" PRIu64 " us",
		 ep == WEBHOOK_VALIDATE ? "/validate" : "/mutate", out.http_status,
		 out.kind ? out.kind : "-", out.decision ? out.decision : "-", rq->len,
		 elapsed / 1000);
	webhook_reply_deinit(&out);
	return ret;
}

static enum MHD_Result serve_metrics(webhook_server_t *srv, struct MHD_Connection *conn,
				     request_t *rq)
{
	char *text;
	size_t len;
	enum MHD_Result ret;

	/* Counted before rendering, so this scrape sees itself. */
	webhook_metrics_http_count(srv->metrics, rq->route, MHD_HTTP_OK);
	if (webhook_metrics_render(srv->metrics, &text, &len))
		return reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot render metrics\n");
	ret = reply(srv, conn, rq, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
		    len, false);
	free(text);
	return ret;
}

static enum MHD_Result serve_readyz(webhook_server_t *srv, struct MHD_Connection *conn,
				    request_t *rq)
{
	webhook_tls_pair_t *pair;
	policy_t *policy;
	bool ready;

	if (atomic_load(&srv->draining) || atomic_load(&srv->unready))
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
	pair = webhook_tls_current(srv->tls);
	policy = policy_current(srv);
	ready = pair && policy;
	webhook_tls_pair_unref(pair);
	policy_unref(policy);
	if (!pair)
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "not ready: no serving certificate loaded\n");
	if (!ready)
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "not ready: no policy: not synced with the apiserver\n");
	return reply_text(srv, conn, rq, MHD_HTTP_OK, "ok\n");
}

/* ---- App routes (the web UI) ---- */

static enum MHD_Result app_reply(webhook_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				 webhook_app_reply_t *a)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(
	    a->len, (void *)a->body, /* HEAD: libmicrohttpd sends no body */
	    MHD_RESPMEM_MUST_COPY);
	if (a->body_owned)
		free((void *)a->body);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				a->cache_control ? a->cache_control : "no-store");
	MHD_add_response_header(resp, "Content-Security-Policy", WEBHOOK_APP_CSP);
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
	webhook_metrics_http_count(srv->metrics, rq->route, a->status);
	return ret;
}

/* Hand rq to the slow worker and suspend its connection; false when the
 * worker's queue is full or stopping (answer 503). */
static bool slow_enqueue(webhook_server_t *srv, struct MHD_Connection *conn, request_t *rq)
{
	bool ok;

	pthread_mutex_lock(&srv->slow_lock);
	ok = srv->slow_running && !srv->slow_stop && srv->slow_n < WEBHOOK_APP_SLOW_MAX;
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
	webhook_server_t *srv = arg;

	pthread_mutex_lock(&srv->slow_lock);
	for (;;) {
		request_t *rq = srv->slow_head;
		webhook_app_request_t a;

		if (!rq && srv->slow_stop)
			break;
		if (!rq) {
			pthread_cond_wait(&srv->slow_cond, &srv->slow_lock);
			continue;
		}
		srv->slow_head = rq->slow_next;
		if (!srv->slow_head)
			srv->slow_tail = NULL;
		srv->slow_n--;
		if (!srv->slow_stop) {
			pthread_mutex_unlock(&srv->slow_lock);
			a = (webhook_app_request_t){rq->app_path, rq->app_auth, rq->app_head};
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
static void slow_stop(webhook_server_t *srv)
{
	if (!srv->slow_running)
		return;
	pthread_mutex_lock(&srv->slow_lock);
	srv->slow_stop = true;
	pthread_cond_signal(&srv->slow_cond);
	pthread_mutex_unlock(&srv->slow_lock);
	pthread_join(srv->slow_thread, NULL);
	srv->slow_running = false;
}

static enum MHD_Result serve_app(webhook_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				 const char *method)
{
	webhook_app_reply_t out = {0};
	webhook_app_request_t a;
	int rc;

	if (!srv->app_fn || !rq->app_path)
		return reply_text(srv, conn, rq, MHD_HTTP_NOT_FOUND,
				  "not found: the web UI is off (gpuq serve --ui)\n");
	a = (webhook_app_request_t){rq->app_path, rq->app_auth,
				    !strcmp(method, MHD_HTTP_METHOD_HEAD)};
	rq->app_head = a.head;
	rc = srv->app_fn(srv->app_ctx, &a, rq->slow_done, &out);
	if (rc == WEBHOOK_APP_SLOW && !rq->slow_done) {
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

/* Copy what an app route needs from the request headers (the path as
 * sent, the Authorization header). false: out of memory. */
static bool app_capture(struct MHD_Connection *conn, request_t *rq, const char *url)
{
	const char *auth =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	rq->app_path = strndup(url, WEBHOOK_APP_PATH_MAX);
	if (auth && strlen(auth) <= WEBHOOK_APP_AUTH_MAX)
		rq->app_auth = strdup(auth);
	return rq->app_path && (!auth || strlen(auth) > WEBHOOK_APP_AUTH_MAX || rq->app_auth);
}

void webhook_server_app_set(webhook_server_t *srv, webhook_app_fn fn, webhook_app_slow_fn slow_fn,
			    void *ctx)
{
	srv->app_fn = fn;
	srv->app_slow_fn = slow_fn;
	srv->app_ctx = ctx;
}

/* Answer a request outside the admission routes. */
static enum MHD_Result route_serve(webhook_server_t *srv, struct MHD_Connection *conn,
				   request_t *rq, const char *method)
{
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);

	if (rq->route == WEBHOOK_ROUTE_OTHER)
		return reply_text(srv, conn, rq, MHD_HTTP_NOT_FOUND, "not found\n");
	if (!get)
		return reply_text(srv, conn, rq, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed: use GET\n");
	if (rq->route == WEBHOOK_ROUTE_HEALTHZ)
		return reply_text(srv, conn, rq, MHD_HTTP_OK, "ok\n");
	if (rq->route == WEBHOOK_ROUTE_READYZ)
		return serve_readyz(srv, conn, rq);
	if (rq->route == WEBHOOK_ROUTE_UI)
		return serve_app(srv, conn, rq, method);
	return serve_metrics(srv, conn, rq);
}

/* Count n more dropped bytes of a refused body; past BODY_DROP_MAX the
 * connection goes unanswered. */
static enum MHD_Result body_drop(webhook_server_t *srv, request_t *rq, size_t n)
{
	if (n > BODY_DROP_MAX - rq->dropped) {
		webhook_metrics_http_count(srv->metrics, rq->route, (unsigned)rq->refused);
		gpuq_log(GPUQ_LOG_WARN, MODULE,
			 "%s: chunked body still going %u MiB past its refusal: connection closed",
			 rq->route == WEBHOOK_ROUTE_VALIDATE ? "/validate" : "/mutate",
			 BODY_DROP_MAX >> 20);
		return MHD_NO;
	}
	rq->dropped += n;
	return MHD_YES;
}

/* Only a chunked body gets here (a Content-Length above the cap or the
 * budget was refused up front): free what was buffered, drop the rest and
 * answer rc's HTTP code when the body ends. */
static enum MHD_Result body_refuse(webhook_server_t *srv, request_t *rq, int rc, size_t n)
{
	rq->refused = rc == GPUQ_ELIMIT	  ? MHD_HTTP_CONTENT_TOO_LARGE
		      : rc == GPUQ_EAGAIN ? MHD_HTTP_SERVICE_UNAVAILABLE
					  : MHD_HTTP_INTERNAL_SERVER_ERROR;
	rq->collecting = false;
	atomic_fetch_sub_explicit(&srv->body_bytes, rq->cap, memory_order_relaxed);
	free(rq->body);
	rq->body = NULL;
	rq->len = 0;
	rq->cap = 0;
	gpuq_log(GPUQ_LOG_WARN, MODULE, "%s: chunked body: %s: refused",
		 rq->route == WEBHOOK_ROUTE_VALIDATE ? "/validate" : "/mutate",
		 rc == GPUQ_ELIMIT   ? "larger than 3 MiB"
		 : rc == GPUQ_EAGAIN ? "body budget spent"
				     : "out of memory");
	return body_drop(srv, rq, n);
}

/* The answer to a refused chunked body, once it has ended. */
static enum MHD_Result body_refused_reply(webhook_server_t *srv, struct MHD_Connection *conn,
					  request_t *rq)
{
	char msg[96];

	if (rq->refused == MHD_HTTP_CONTENT_TOO_LARGE)
		snprintf(msg, sizeof(msg), "request body too large: more than %u bytes\n",
			 WEBHOOK_REVIEW_MAX);
	else if (rq->refused == MHD_HTTP_SERVICE_UNAVAILABLE)
		gpuq_strlcpy(msg, "busy: too many request bodies in flight, retry\n", sizeof(msg));
	else
		gpuq_strlcpy(msg, "out of memory\n", sizeof(msg));
	return reply_text(srv, conn, rq, (unsigned)rq->refused, msg);
}

/* Whether the request announces a body (a length above 0, or chunks). */
static bool has_body(struct MHD_Connection *conn)
{
	const char *clen, *te;

	te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return te || (clen && strcmp(clen, "0") != 0);
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
	webhook_server_t *srv = cls;

	(void)addr;
	(void)addrlen;
	return atomic_load(&srv->draining) ? MHD_NO : MHD_YES;
}

/* The characters a served path may hold (no escapes, no spaces, no NUL). */
#define PATH_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/-._~"

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct {
		const char *name;
		int n;
	} *c = cls;

	(void)kind;
	(void)value;
	if (!strcasecmp(key, c->name))
		c->n++;
	return MHD_YES;
}

/* How many times header `name` came. */
static int header_count(struct MHD_Connection *conn, const char *name)
{
	struct {
		const char *name;
		int n;
	} c = {name, 0};

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &c);
	return c.n;
}

/* libmicrohttpd unescapes the path in place (so "/mutate%00x" reads as
 * "/mutate"): keep it as sent, and request_refusal refuses escapes. */
static size_t no_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	(void)cls;
	(void)conn;
	return strlen(s);
}

/* Why a request whose headers are in is refused before routing (NULL: it is
 * not), into buf: what HTTP/1.1 (RFC 9112) requires and request smuggling
 * exploits. url is as sent (no unescaping: see no_unescape). */
static const char *request_refusal(struct MHD_Connection *conn, const char *url,
				   const char *version, char *buf, size_t cap)
{
	const char *clen, *te;
	if (!strcmp(version, MHD_HTTP_VERSION_1_1) &&
	    !MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
		return "bad request: HTTP/1.1 without a Host header\n";
	if (header_count(conn, MHD_HTTP_HEADER_CONTENT_LENGTH) > 1 ||
	    header_count(conn, MHD_HTTP_HEADER_HOST) > 1)
		return "bad request: more than one Content-Length or Host header\n";
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (clen && (!clen[0] || strspn(clen, "0123456789") != strlen(clen)))
		return "bad request: Content-Length is not a number of bytes\n";
	te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	if (te && strcasecmp(te, "chunked") != 0)
		return "bad request: the only Transfer-Encoding served is chunked\n";
	if (te && clen)
		return "bad request: both Content-Length and Transfer-Encoding\n";
	if (url[0] != '/' || strpbrk(url, "%\\") || strspn(url, PATH_CHARS) != strlen(url)) {
		snprintf(buf, cap, "bad request: path \"%.64s\": not a plain path\n", url);
		return buf;
	}
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	webhook_server_t *srv = cls;
	request_t *rq = *con_cls;
	int rc;

	if (!rq) {
		char why_buf[128];
		const union MHD_ConnectionInfo *info;
		const char *why;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->start_ns = now_ns();
		rq->route = route_of(url); /* the query string (?timeout=10s) is not in url */
		*con_cls = rq;
		atomic_fetch_add_explicit(&srv->inflight, 1, memory_order_acq_rel);
		info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		if (info && info->socket_context)
			atomic_store(&((conn_slot_t *)info->socket_context)->headers, true);
		why = request_refusal(conn, url, version, why_buf, sizeof(why_buf));
		if (why) {
			rq->route = WEBHOOK_ROUTE_OTHER; /* counted as path="other" */
			return reply_text(srv, conn, rq, MHD_HTTP_BAD_REQUEST, why);
		}
		if (rq->route <= WEBHOOK_ROUTE_VALIDATE)
			return admission_begin(srv, conn, rq, method);
		if (rq->route == WEBHOOK_ROUTE_UI && strlen(url) > WEBHOOK_APP_PATH_MAX)
			return reply_text(srv, conn, rq, MHD_HTTP_URI_TOO_LONG, "path too long\n");
		if (rq->route == WEBHOOK_ROUTE_UI && !app_capture(conn, rq, url))
			return MHD_NO;
		if (has_body(conn)) /* nothing here takes a body: refuse, do not read it */
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
	if (rq->refused)
		return body_refused_reply(srv, conn, rq);
	if (rq->collecting) {
		rq->collecting = false;
		return admission_decide(srv, conn, rq);
	}
	return route_serve(srv, conn, rq, method);
}

/* ---- Lifecycle ---- */

int webhook_server_create(const webhook_serve_opts_t *opts, webhook_server_t **out,
			  gpuq_diag_t *diag)
{
	webhook_server_t *srv;
	int rc;

	*out = NULL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return GPUQ_ENOMEM;
	srv->opts = opts;
	srv->listen_fd = MHD_INVALID_SOCKET;
	srv->review_cfg.gpu_resources = opts->gpu_resources;
	srv->review_cfg.n_gpu_resources = opts->n_gpu_resources;
	srv->review_cfg.controller_user = opts->controller_user;
	atomic_init(&srv->inflight, 0);
	atomic_init(&srv->body_bytes, 0);
	atomic_init(&srv->draining, false);
	atomic_init(&srv->unready, false);
	pthread_mutex_init(&srv->policy_lock, NULL);
	pthread_mutex_init(&srv->reload_lock, NULL);
	pthread_mutex_init(&srv->stop_lock, NULL);
	pthread_mutex_init(&srv->log_lock, NULL);
	pthread_mutex_init(&srv->slots_lock, NULL);
	pthread_mutex_init(&srv->slow_lock, NULL);
	pthread_cond_init(&srv->slow_cond, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->stop_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	rc = webhook_metrics_create(&srv->metrics);
	if (rc)
		goto fail;
	rc = webhook_tls_create(opts->cert_dir, &srv->tls, diag);
	if (rc) {
		gpuq_diag_prefix(diag, "--cert-dir \"%s\": ", opts->cert_dir);
		goto fail;
	}
	{
		webhook_tls_pair_t *pair = webhook_tls_current(srv->tls);

		webhook_metrics_cert_not_after_set(srv->metrics, webhook_tls_pair_not_after(pair));
		gpuq_log(GPUQ_LOG_INFO, MODULE, "serving certificate: serial %s, notAfter %" PRId64,
			 webhook_tls_pair_serial(pair), webhook_tls_pair_not_after(pair));
		if (webhook_tls_pair_not_after(pair) < (int64_t)time(NULL))
			gpuq_log(GPUQ_LOG_WARN, MODULE, "the serving certificate has expired");
		webhook_tls_pair_unref(pair);
	}
	if (opts->policy_dir) {
		rc = policy_load_dir(opts->policy_dir, NULL, &srv->policy, diag);
		if (rc) {
			gpuq_diag_prefix(diag, "--policy-dir \"%s\": ", opts->policy_dir);
			goto fail;
		}
		srv->policy_seen_fp = policy_fingerprint(srv->policy);
		srv->policy_generation = 1;
	}
	/* else no policy: fail closed until webhook_server_policy_set */
	webhook_metrics_policy_generation_set(srv->metrics, srv->policy_generation);
	*out = srv;
	return GPUQ_OK;
fail:
	srv->stopped = true;
	webhook_server_destroy(srv);
	return rc;
}

static int resolve(const webhook_serve_opts_t *opts, struct sockaddr_storage *addr,
		   gpuq_diag_t *diag)
{
	struct addrinfo hints, *res = NULL;
	char port[8];
	int ret;

	memset(addr, 0, sizeof(*addr));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", (unsigned)opts->port);
	ret = getaddrinfo(opts->host[0] ? opts->host : "0.0.0.0", port, &hints, &res);
	if (ret)
		return gpuq_diag_set(diag, GPUQ_EIO, "--listen \"%s\": cannot resolve \"%s\": %s",
				     opts->listen, opts->host, gai_strerror(ret));
	memset(addr, 0, sizeof(*addr));
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return GPUQ_OK;
}

int webhook_server_start(webhook_server_t *srv, gpuq_diag_t *diag)
{
	struct sockaddr_storage addr;
	unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	int rc;

	rc = resolve(srv->opts, &addr, diag);
	if (rc)
		return rc;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pthread_mutex_lock(&srv->log_lock);
	srv->starting = true;
	srv->start_msg[0] = '\0';
	pthread_mutex_unlock(&srv->log_lock);
	srv->daemon = MHD_start_daemon(
	    flags, srv->opts->port, on_accept, srv, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
	    mhd_log, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_HTTPS_CERT_CALLBACK, on_certificate, MHD_OPTION_HTTPS_PRIORITIES,
	    WEBHOOK_TLS_PRIORITIES, MHD_OPTION_THREAD_POOL_SIZE,
	    srv->opts->threads > 1 ? srv->opts->threads : 0, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)WEBHOOK_CONNECTIONS_MAX, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    (unsigned)WEBHOOK_CONNECTIONS_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)WEBHOOK_IDLE_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_STRICT_FOR_CLIENT, 1,
	    MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, srv, MHD_OPTION_END);
	pthread_mutex_lock(&srv->log_lock);
	srv->starting = false;
	pthread_mutex_unlock(&srv->log_lock);
	if (!srv->daemon)
		return gpuq_diag_set(diag, GPUQ_EIO, "--listen \"%s\": cannot serve there: %s",
				     srv->opts->listen,
				     srv->start_msg[0] ? srv->start_msg : "libmicrohttpd refused");
	srv->stop_flag = false;
	if (pthread_create(&srv->watcher, NULL, watcher_main, srv)) {
		MHD_stop_daemon(srv->daemon);
		srv->daemon = NULL;
		return gpuq_diag_set(diag, GPUQ_EIO, "cannot start the watcher thread");
	}
	srv->watcher_running = true;
	if (srv->app_fn && srv->app_slow_fn) {
		pthread_mutex_lock(&srv->slow_lock);
		srv->slow_stop = false;
		srv->slow_running = !pthread_create(&srv->slow_thread, NULL, slow_main, srv);
		pthread_mutex_unlock(&srv->slow_lock);
		if (!srv->slow_running)
			gpuq_log(GPUQ_LOG_ERROR, MODULE,
				 "cannot start the web UI's worker thread: requests that need "
				 "the apiserver are answered 503");
	}
	gpuq_log(
	    GPUQ_LOG_INFO, MODULE, "serving https://%s%s%s:%u (TLS 1.2/1.3, %u threads), %s",
	    addr.ss_family == AF_INET6 ? "[" : "", srv->opts->host[0] ? srv->opts->host : "0.0.0.0",
	    addr.ss_family == AF_INET6 ? "]" : "", (unsigned)srv->opts->port, srv->opts->threads,
	    srv->opts->policy_dir ? "policy from --policy-dir"
				  : "no policy until the controller syncs (failing closed)");
	return GPUQ_OK;
}

void webhook_server_unready(webhook_server_t *srv)
{
	if (!atomic_exchange(&srv->unready, true))
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "shutting down: /readyz answers 503, still serving");
}

void webhook_server_stop(webhook_server_t *srv, unsigned drain_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)drain_ms * 1000000u;
	int zero_reads = 0;

	if (srv->stopped)
		return;
	srv->stopped = true;
	atomic_store(&srv->draining, true);
	if (srv->daemon) {
		/* Two idle readings 20 ms apart: a request whose headers were
		 * just read gets to its first callback in between. */
		while (zero_reads < 2 && now_ns() < deadline) {
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
		srv->stop_flag = true;
		pthread_cond_broadcast(&srv->stop_cond);
		pthread_mutex_unlock(&srv->stop_lock);
		pthread_join(srv->watcher, NULL);
		srv->watcher_running = false;
	}
	if (srv->daemon) {
		MHD_stop_daemon(srv->daemon);
		srv->daemon = NULL;
	}
	if (srv->listen_fd != MHD_INVALID_SOCKET) {
		close(srv->listen_fd);
		srv->listen_fd = MHD_INVALID_SOCKET;
	}
}

void webhook_server_destroy(webhook_server_t *srv)
{
	if (!srv)
		return;
	webhook_server_stop(srv, 0);
	policy_unref(srv->policy);
	webhook_tls_destroy(srv->tls);
	webhook_metrics_destroy(srv->metrics);
	pthread_cond_destroy(&srv->stop_cond);
	pthread_mutex_destroy(&srv->policy_lock);
	pthread_mutex_destroy(&srv->reload_lock);
	pthread_mutex_destroy(&srv->stop_lock);
	pthread_mutex_destroy(&srv->log_lock);
	pthread_mutex_destroy(&srv->slots_lock);
	pthread_mutex_destroy(&srv->slow_lock);
	pthread_cond_destroy(&srv->slow_cond);
	free(srv);
}

webhook_metrics_t *webhook_server_metrics(webhook_server_t *srv)
{
	return srv->metrics;
}

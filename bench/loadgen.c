/*
 * loadgen: a small fixed-rate HTTPS POST load generator for gpuq's benches.
 *
 * wrk measures the most a server can take but cannot pace requests; latency
 * at a stated rate needs an open-loop client. loadgen keeps C keep-alive TLS
 * connections (OpenSSL, TLS 1.2+), one thread each; request i is due at
 * t0 + i/R and goes out on connection i mod C. Latency is measured from the
 * time a request was due, not from when it was sent, so a slow answer that
 * delays the next request shows up in the figures (no coordinated omission).
 *
 *   loadgen free-port
 *   loadgen probe --port P --body FILE [--path /mutate] [--ca ca.crt]
 *   loadgen rate  --port P --body FILE --rate R --connections C --duration S
 *                 [--warmup S] [--path /mutate] [--ca ca.crt] [--host 127.0.0.1]
 *   loadgen loop  --port P --body FILE --connections C (--duration S | --requests N)
 *                 [--warmup S] [--path /mutate] [--ca ca.crt] [--host 127.0.0.1]
 *
 * `loop` is closed-loop: each connection sends its next request as soon as
 * the last answer is in, so a request's latency is its own round trip (send
 * to last byte of the answer) with nothing queued before it. With one
 * connection that is the latency the apiserver sees for one review on an
 * idle server; --requests N stops after N measured requests in all (for
 * instruction counts under valgrind, where time is meaningless).
 *
 * `rate` and `loop` print one line of key=value figures (latencies in
 * microseconds; in `loop` svc_p99_us equals p99_us):
 *   sent=N ok=N errors=N reconnects=N rate=R p50_us=N p99_us=N max_us=N svc_p99_us=N
 * Exit: 0 done (errors are counted, not fatal), 1 could not run, 2 usage.
 * Build: cc -O2 -std=c11 -D_GNU_SOURCE bench/loadgen.c -lssl -lcrypto -lpthread
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define BODY_MAX (1u << 20)	/* request body file cap */
#define RESPONSE_MAX (1u << 20) /* response (headers + body) cap */
#define CONNECTIONS_MAX 256	/* --connections cap */
#define RATE_MAX 1000000	/* --rate cap, requests per second */
#define REQUESTS_MAX 10000000	/* `loop --requests` cap */
/* Latencies kept in `loop` by time, over all connections (the rest are
 * counted, not kept): 100 s of a 10 us round trip. */
#define LOOP_SAMPLES (10u << 20)
#define DURATION_MAX 600 /* --duration and --warmup cap, seconds */
#define IO_TIMEOUT_S 5	 /* socket send/receive timeout */
#define NS_PER_S 1000000000LL
#define SPIN_NS 100000 /* busy-wait the last 100 us before a request is due */

typedef struct {
	const char *host;   /* --host, dotted IPv4 */
	int port;	    /* --port */
	const char *path;   /* --path */
	const char *ca;	    /* --ca: verify the server against it, or NULL */
	char *request;	    /* full HTTP request, headers + body */
	size_t request_len; /* bytes in request */
	long rate;	    /* --rate */
	int connections;    /* --connections */
	int duration;	    /* --duration, measured seconds */
	int warmup;	    /* --warmup, unmeasured seconds before */
	bool closed;	    /* `loop`: closed loop, no pacing */
	long requests;	    /* `loop --requests`: measured requests in all (0: by time) */
} options_t;

typedef struct {
	const options_t *opt; /* shared, read-only */
	SSL_CTX *ctx;	      /* shared, read-only after setup */
	int index;	      /* this connection's number, 0..C-1 */
	int64_t t0;	      /* monotonic ns when request 0 is due */
	int64_t measure_from; /* due times before this are warmup */
	uint32_t *lat_us;     /* due-to-done latencies, measured requests */
	uint32_t *svc_us;     /* send-to-done latencies, measured requests */
	size_t n_lat;	      /* entries used in lat_us and svc_us */
	size_t cap_lat;	      /* capacity of lat_us and svc_us */
	int64_t last_done;    /* monotonic ns of the last measured answer */
	long sent;	      /* measured requests sent */
	long ok;	      /* measured answers with status 200 */
	long errors;	      /* measured failures (I/O, non-200, bad framing) */
	long reconnects;      /* connections re-opened after a failure */
	char *buf;	      /* response buffer, RESPONSE_MAX + 1 */
	int fd;		      /* socket, -1 when closed */
	SSL *ssl;	      /* TLS session on fd, NULL when closed */
} conn_t;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Sleep until SPIN_NS before t, then spin: a sleeping thread wakes tens of
 * microseconds late, and that lateness would count against the server. */
static void sleep_until(int64_t t)
{
	int64_t wake = t - SPIN_NS;
	struct timespec ts = {(time_t)(wake / NS_PER_S), (long)(wake % NS_PER_S)};

	if (wake > now_ns())
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	while (now_ns() < t)
		;
}

static void ssl_report(const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "no detail";

	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	fprintf(stderr, "loadgen: %s: %s\n", what, buf);
}

static void conn_close(conn_t *c)
{
	if (c->ssl) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int conn_open(conn_t *c, bool quiet)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->opt->port)};
	struct timeval tv = {IO_TIMEOUT_S, 0};
	int one = 1;

	if (inet_pton(AF_INET, c->opt->host, &sa.sin_addr) != 1) {
		fprintf(stderr, "loadgen: --host \"%s\": not an IPv4 address\n", c->opt->host);
		return -1;
	}
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (!quiet)
			fprintf(stderr, "loadgen: connect %s:%d: %s\n", c->opt->host, c->opt->port,
				strerror(errno));
		goto fail;
	}
	c->ssl = SSL_new(c->ctx);
	if (!c->ssl || !SSL_set_fd(c->ssl, c->fd))
		goto fail_ssl;
	if (c->opt->ca && !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), c->opt->host))
		goto fail_ssl;
	if (SSL_connect(c->ssl) != 1)
		goto fail_ssl;
	return 0;
fail_ssl:
	if (!quiet)
		ssl_report("TLS handshake");
	ERR_clear_error();
fail:
	conn_close(c);
	return -1;
}

static int write_all(SSL *ssl, const char *p, size_t len)
{
	while (len) {
		int n = SSL_write(ssl, p, (int)len);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Content-Length of a header block, or -1. */
static long content_length(const char *head, size_t head_len)
{
	const char *p = head;
	const char *end = head + head_len;

	while (p < end) {
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);

		if (!eol)
			break;
		if ((size_t)(eol - p) > 15 && !strncasecmp(p, "content-length:", 15))
			return strtol(p + 15, NULL, 10);
		p = eol + 2;
	}
	return -1;
}

/* One request/response exchange; returns the HTTP status or -1. The
 * response is left in c->buf (NUL-terminated), its length in *len. */
static int exchange(conn_t *c, size_t *len)
{
	size_t got = 0;
	size_t head_len = 0;
	long body_len = -1;

	if (write_all(c->ssl, c->opt->request, c->opt->request_len))
		return -1;
	for (;;) {
		int n = SSL_read(c->ssl, c->buf + got, (int)(RESPONSE_MAX - got));

		if (n <= 0)
			return -1;
		got += (size_t)n;
		c->buf[got] = '\0';
		if (!head_len) {
			char *eoh = memmem(c->buf, got, "\r\n\r\n", 4);

			if (eoh) {
				head_len = (size_t)(eoh - c->buf) + 4;
				body_len = content_length(c->buf, head_len);
				if (body_len < 0)
					return -1; /* chunked or unframed: not supported */
			}
		}
		if (head_len && got >= head_len + (size_t)body_len)
			break;
		if (got == RESPONSE_MAX)
			return -1;
	}
	if (got != head_len + (size_t)body_len || strncmp(c->buf, "HTTP/1.", 7) != 0)
		return -1;
	*len = got;
	return (int)strtol(c->buf + 9, NULL, 10);
}

/* Measured requests connection index sends in `loop --requests`: the
 * total split evenly, the first ones taking the remainder. */
static long loop_share(const options_t *o, int index)
{
	return o->requests / o->connections + (index < o->requests % o->connections);
}

static void *conn_run(void *arg)
{
	conn_t *c = arg;
	const options_t *o = c->opt;
	int64_t interval = o->closed ? 0 : NS_PER_S / o->rate;
	int64_t end = c->t0 + (int64_t)(o->warmup + o->duration) * NS_PER_S;
	long quota = o->requests ? loop_share(o, c->index) : -1;

	if (o->closed)
		sleep_until(c->t0);
	for (int64_t i = c->index;; i += o->connections) {
		int64_t due = o->closed ? now_ns() : c->t0 + i * interval;
		bool measured = due >= c->measure_from;
		int64_t sent_at;
		int64_t done;
		size_t len;
		int status;

		if (quota >= 0 ? measured && c->sent >= quota : due >= end)
			break;
		if (!o->closed)
			sleep_until(due);
		if (!c->ssl) {
			c->reconnects++;
			if (conn_open(c, false)) {
				c->errors += measured;
				continue;
			}
		}
		sent_at = now_ns();
		status = exchange(c, &len);
		done = now_ns();
		if (status < 0)
			conn_close(c); /* reopened before the next request */
		if (!measured)
			continue;
		c->sent++;
		if (status != 200) {
			c->errors++;
			continue;
		}
		c->ok++;
		c->last_done = done;
		if (c->n_lat < c->cap_lat) {
			c->lat_us[c->n_lat] = (uint32_t)((done - due) / 1000);
			c->svc_us[c->n_lat++] = (uint32_t)((done - sent_at) / 1000);
		}
	}
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a;
	uint32_t y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static uint32_t percentile(const uint32_t *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)(p * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	return v[rank > n ? n - 1 : rank - 1];
}

static char *file_read(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;

	if (!fp) {
		fprintf(stderr, "loadgen: --body \"%s\": %s\n", path, strerror(errno));
		return NULL;
	}
	buf = malloc(BODY_MAX + 1);
	if (buf)
		*len = fread(buf, 1, BODY_MAX + 1, fp);
	fclose(fp);
	if (buf && *len > BODY_MAX) {
		fprintf(stderr, "loadgen: --body \"%s\": larger than %u bytes\n", path, BODY_MAX);
		free(buf);
		return NULL;
	}
	return buf;
}

static int request_build(options_t *o, const char *body_path)
{
	size_t body_len = 0;
	char *body = file_read(body_path, &body_len);
	char head[512];
	int n;

	if (!body)
		return -1;
	/* The apiserver appends ?timeout=<webhook timeoutSeconds>. */
	n = snprintf(head, sizeof(head),
		     "POST %s?timeout=10s HTTP/1.1\r\nHost: %s:%d\r\n"
		     "Content-Type: application/json\r\nAccept: application/json, */*\r\n"
		     "Content-Length: %zu\r\n\r\n",
		     o->path, o->host, o->port, body_len);
	if (n < 0 || (size_t)n >= sizeof(head)) {
		free(body);
		return -1;
	}
	o->request = malloc((size_t)n + body_len);
	if (!o->request) {
		free(body);
		return -1;
	}
	memcpy(o->request, head, (size_t)n);
	memcpy(o->request + n, body, body_len);
	o->request_len = (size_t)n + body_len;
	free(body);
	return 0;
}

static SSL_CTX *ctx_make(const char *ca)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)) {
		ssl_report("SSL_CTX_new");
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (ca) {
		if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
			ssl_report("--ca");
			SSL_CTX_free(ctx);
			return NULL;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	return ctx;
}

static int free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		perror("loadgen: free-port");
		if (fd >= 0)
			close(fd);
		return 1;
	}
	printf("%d\n", ntohs(sa.sin_port));
	close(fd);
	return 0;
}

static int probe(const options_t *o, SSL_CTX *ctx, bool quiet)
{
	conn_t c = {.opt = o, .ctx = ctx, .fd = -1};
	size_t len = 0;
	int status;

	c.buf = malloc(RESPONSE_MAX + 1);
	if (!c.buf)
		return 1;
	if (conn_open(&c, quiet)) {
		free(c.buf);
		return 1;
	}
	status = exchange(&c, &len);
	if (!quiet || status == 200)
		printf("status=%d protocol=%s bytes=%zu\n%.*s\n", status, SSL_get_version(c.ssl),
		       len, (int)(len > 2000 ? 2000 : len), c.buf);
	conn_close(&c);
	free(c.buf);
	return status == 200 ? 0 : 1;
}

static void conn_deinit(conn_t *c)
{
	conn_close(c);
	free(c->lat_us);
	free(c->svc_us);
	free(c->buf);
}

static int run_rate(const options_t *o, SSL_CTX *ctx)
{
	conn_t *conns = calloc((size_t)o->connections, sizeof(conn_t));
	pthread_t *threads = calloc((size_t)o->connections, sizeof(pthread_t));
	size_t per = o->requests ? (size_t)loop_share(o, 0) + 16
		     : o->closed
			 ? LOOP_SAMPLES / (size_t)o->connections + 16
			 : (size_t)(o->rate * (o->duration + 1)) / (size_t)o->connections + 16;
	uint32_t *all = NULL;
	uint32_t *svc = NULL;
	size_t n = 0;
	long sent = 0, ok = 0, errors = 0, reconnects = 0;
	int64_t t0;
	int64_t last = 0;
	int started = 0;
	int rc = 1;

	if (!conns || !threads)
		goto done;
	for (int i = 0; i < o->connections; i++) {
		conn_t *c = &conns[i];

		*c = (conn_t){.opt = o, .ctx = ctx, .index = i, .fd = -1, .cap_lat = per};
		c->lat_us = calloc(per, sizeof(uint32_t));
		c->svc_us = calloc(per, sizeof(uint32_t));
		c->buf = malloc(RESPONSE_MAX + 1);
		if (!c->lat_us || !c->svc_us || !c->buf || conn_open(c, false))
			goto done;
	}
	/* Handshakes are done; start 50 ms from now so every thread is ready. */
	t0 = now_ns() + 50000000;
	for (int i = 0; i < o->connections; i++) {
		conns[i].t0 = t0;
		conns[i].measure_from = t0 + (int64_t)o->warmup * NS_PER_S;
		if (pthread_create(&threads[i], NULL, conn_run, &conns[i]))
			break;
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	if (started < o->connections) {
		fprintf(stderr, "loadgen: could not start %d threads\n", o->connections);
		goto done;
	}
	all = malloc(per * (size_t)o->connections * sizeof(uint32_t));
	svc = malloc(per * (size_t)o->connections * sizeof(uint32_t));
	if (!all || !svc)
		goto done;
	for (int i = 0; i < o->connections; i++) {
		conn_t *c = &conns[i];

		memcpy(all + n, c->lat_us, c->n_lat * sizeof(uint32_t));
		memcpy(svc + n, c->svc_us, c->n_lat * sizeof(uint32_t));
		n += c->n_lat;
		sent += c->sent;
		ok += c->ok;
		errors += c->errors;
		reconnects += c->reconnects;
		if (c->last_done > last)
			last = c->last_done;
	}
	qsort(all, n, sizeof(uint32_t), cmp_u32);
	qsort(svc, n, sizeof(uint32_t), cmp_u32);
	{
		int64_t from = t0 + (int64_t)o->warmup * NS_PER_S;
		double secs = last > from ? (double)(last - from) / 1e9 : 0;

		printf("sent=%ld ok=%ld errors=%ld reconnects=%ld rate=%.1f p50_us=%u p99_us=%u "
		       "max_us=%u svc_p99_us=%u\n",
		       sent, ok, errors, reconnects, secs > 0 ? (double)ok / secs : 0.0,
		       percentile(all, n, 0.50), percentile(all, n, 0.99), n ? all[n - 1] : 0,
		       percentile(svc, n, 0.99));
	}
	rc = 0;
done:
	for (int i = 0; conns && i < o->connections; i++)
		conn_deinit(&conns[i]);
	free(conns);
	free(threads);
	free(all);
	free(svc);
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: loadgen free-port\n"
		     "       loadgen probe --port P --body FILE [--path P] [--ca FILE] [--quiet]\n"
		     "       loadgen rate --port P --body FILE --rate R --connections C "
		     "--duration S [--warmup S] [--path P] [--ca FILE] [--host IPv4]\n"
		     "       loadgen loop --port P --body FILE --connections C "
		     "(--duration S | --requests N) [--warmup S] [--path P] [--ca FILE] "
		     "[--host IPv4]\n");
}

static bool int_arg(const char *v, long lo, long hi, long *out)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

int main(int argc, char **argv)
{
	options_t o = {.host = "127.0.0.1",
		       .path = "/mutate",
		       .rate = 1000,
		       .connections = 4,
		       .duration = 10,
		       .warmup = 1};
	const char *body = NULL;
	const char *mode;
	bool quiet = false;
	SSL_CTX *ctx;
	long v;
	int rc;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	mode = argv[1];
	prctl(PR_SET_TIMERSLACK, 1UL); /* timed sleeps end on time, not up to 50 us late */
	if (!strcmp(mode, "free-port"))
		return free_port();
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool ok = true;

		if (!strcmp(a, "--quiet")) {
			quiet = true;
			continue;
		}
		if (!val) {
			fprintf(stderr, "loadgen: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--port"))
			ok = int_arg(val, 1, 65535, &v) && ((o.port = (int)v), true);
		else if (!strcmp(a, "--host"))
			o.host = val;
		else if (!strcmp(a, "--path"))
			o.path = val;
		else if (!strcmp(a, "--ca"))
			o.ca = val;
		else if (!strcmp(a, "--body"))
			body = val;
		else if (!strcmp(a, "--requests"))
			ok = int_arg(val, 1, REQUESTS_MAX, &o.requests);
		else if (!strcmp(a, "--rate"))
			ok = int_arg(val, 1, RATE_MAX, &o.rate);
		else if (!strcmp(a, "--connections"))
			ok = int_arg(val, 1, CONNECTIONS_MAX, &v) &&
			     ((o.connections = (int)v), true);
		else if (!strcmp(a, "--duration"))
			ok = int_arg(val, 1, DURATION_MAX, &v) && ((o.duration = (int)v), true);
		else if (!strcmp(a, "--warmup"))
			ok = int_arg(val, 0, DURATION_MAX, &v) && ((o.warmup = (int)v), true);
		else {
			fprintf(stderr, "loadgen: unknown option \"%s\"\n", a);
			usage(stderr);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "loadgen: %s \"%s\": out of range\n", a, val);
			return 2;
		}
	}
	o.closed = !strcmp(mode, "loop");
	if (!o.port || !body ||
	    (strcmp(mode, "probe") != 0 && strcmp(mode, "rate") != 0 && !o.closed) ||
	    (o.requests && !o.closed)) {
		usage(stderr);
		return 2;
	}
	if (request_build(&o, body))
		return 1;
	ctx = ctx_make(o.ca);
	if (!ctx) {
		free(o.request);
		return 1;
	}
	rc = !strcmp(mode, "probe") ? probe(&o, ctx, quiet) : run_rate(&o, ctx);
	SSL_CTX_free(ctx);
	free(o.request);
	return rc;
}

/* kube/client.c: connections, the rate limiter, requests and retries. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/internal.h"

/* curl_global_init once per process (it is not thread-safe itself). */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int64_t kube_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kube_sleep_ms(int64_t ms, const atomic_bool *stop)
{
	/* in slices of 50 ms so a stop request is seen quickly */
	while (ms > 0 && !(stop && atomic_load(stop))) {
		int64_t slice = ms < 50 ? ms : 50;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice * 1000000};
		nanosleep(&ts, NULL);
		ms -= slice;
	}
}

int kube_status_error(long status)
{
	if (status >= 200 && status < 300)
		return GPUQ_OK;
	switch (status) {
	case 400:
	case 422:
		return GPUQ_EINVAL;
	case 401:
	case 403:
		return GPUQ_EDENIED;
	case 404:
		return GPUQ_ENOTFOUND;
	case 409:
		return GPUQ_ECONFLICT;
	case 410:
		return GPUQ_EGONE;
	case 429:
	case 503:
		return GPUQ_EAGAIN;
	default:
		return GPUQ_EHTTP;
	}
}

int64_t kube_limiter_take(double qps, double burst, double *tokens, int64_t *refill_ms,
			  int64_t now_ms)
{
	double wait;

	if (!(qps > 0)) /* 0, negative or NaN: no limit */
		return 0;
	if (!(burst >= 1.0))
		burst = 1.0; /* a bucket that cannot hold one token would never let go */
	if (now_ms > *refill_ms) {
		*tokens += (double)(now_ms - *refill_ms) * qps / 1000.0;
		if (*tokens > burst)
			*tokens = burst;
		*refill_ms = now_ms;
	}
	if (*tokens >= 1.0) {
		*tokens -= 1.0;
		return 0;
	}
	/* wait until one whole token has accrued (at most a minute at a time:
	 * a tiny qps must not overflow the cast); the caller retries */
	wait = (1.0 - *tokens) * 1000.0 / qps;
	return wait < 60000.0 ? (int64_t)wait + 1 : 60000;
}

void kube_client_opts_default(kube_client_opts_t *o)
{
	o->qps = 50;
	o->burst = 100;
	o->timeout_ms = KUBE_REQUEST_TIMEOUT_MS;
	o->no_retry = false;
}

int kube_client_create(const kube_config_t *cfg, const kube_client_opts_t *o, kube_client_t **out,
		       gpuq_diag_t *diag)
{
	kube_client_opts_t def;
	kube_client_t *c;

	pthread_once(&curl_once, curl_init_once);
	if (!o) {
		kube_client_opts_default(&def);
		o = &def;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return GPUQ_ENOMEM;
	c->cfg = cfg;
	c->curl = curl_easy_init();
	if (!c->curl) {
		free(c);
		return gpuq_diag_set(diag, GPUQ_ENOMEM, "curl_easy_init failed");
	}
	c->qps = o->qps;
	c->burst = o->burst > 0 ? (double)o->burst : 1.0;
	c->tokens = c->burst;
	c->refill_ms = gpuq_mono_ms();
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : KUBE_REQUEST_TIMEOUT_MS;
	c->no_retry = o->no_retry;
	*out = c;
	return GPUQ_OK;
}

void kube_client_destroy(kube_client_t *c)
{
	if (!c)
		return;
	curl_slist_free_all(c->hdrs);
	curl_easy_cleanup(c->curl);
	free(c);
}

void kube_response_deinit(kube_response_t *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->status = 0;
}

typedef struct {
	char *buf;  /* growing body */
	size_t len; /* bytes in buf */
	size_t cap; /* allocated */
	bool over;  /* passed KUBE_RESPONSE_MAX */
	bool nomem; /* an allocation failed */
} body_t;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	body_t *b = ud;
	size_t n = size * nmemb;

	if (b->len + n > KUBE_RESPONSE_MAX) {
		b->over = true;
		return 0; /* aborts the transfer */
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 16384;
		char *nb;
		while (cap < b->len + n + 1)
			cap *= 2;
		nb = realloc(b->buf, cap);
		if (!nb) {
			b->nomem = true;
			return 0; /* aborts the transfer */
		}
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, ptr, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return n;
}

/* Retry-After in seconds from the response headers, or -1. */
static long retry_after(CURL *curl)
{
	struct curl_header *h = NULL;
	long v;
	char *end;

	if (curl_easy_header(curl, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h)
		return -1;
	errno = 0;
	v = strtol(h->value, &end, 10);
	if (errno || end == h->value || v < 0)
		return -1;
	return v;
}

/* Append one header line to c->hdrs; on failure the list stays as it was
 * (curl_slist_append returns NULL then, and assigning that would leak it). */
static int add_header(kube_client_t *c, const char *line)
{
	struct curl_slist *l = curl_slist_append(c->hdrs, line);

	if (!l)
		return GPUQ_ENOMEM;
	c->hdrs = l;
	return GPUQ_OK;
}

int kube_client_prepare(kube_client_t *c, const char *path, const char *content_type,
			long timeout_ms, gpuq_diag_t *diag)
{
	char hdr[KUBE_TOKEN_MAX + 64];
	char token[KUBE_TOKEN_MAX + 1];
	kube_config_t *cfg = (kube_config_t *)c->cfg; /* the token cache has its own lock */
	int n, rc;

	n = snprintf(c->url, sizeof(c->url), "%s%s", cfg->server, path);
	if (n < 0 || (size_t)n >= sizeof(c->url))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "URL longer than %d bytes: %.80s...",
				     KUBE_URL_MAX, path);
	curl_easy_reset(c->curl);
	curl_slist_free_all(c->hdrs);
	c->hdrs = NULL;
	c->errbuf[0] = '\0';
	curl_easy_setopt(c->curl, CURLOPT_URL, c->url);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c->curl, CURLOPT_ACCEPT_ENCODING, "");
	if (timeout_ms > 0)
		curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	if (cfg->ca) {
		struct curl_blob ca = {
		    .data = cfg->ca, .len = cfg->ca_len, .flags = CURL_BLOB_NOCOPY};
		curl_easy_setopt(c->curl, CURLOPT_CAINFO_BLOB, &ca);
	}
	if (cfg->insecure) {
		curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c->curl, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (cfg->cert) {
		struct curl_blob cert = {
		    .data = cfg->cert, .len = cfg->cert_len, .flags = CURL_BLOB_NOCOPY};
		struct curl_blob key = {
		    .data = cfg->key, .len = cfg->key_len, .flags = CURL_BLOB_NOCOPY};
		curl_easy_setopt(c->curl, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(c->curl, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(c->curl, CURLOPT_SSLKEY_BLOB, &key);
		curl_easy_setopt(c->curl, CURLOPT_SSLKEYTYPE, "PEM");
	}
	rc = kube_token_get(cfg, token, sizeof(token), diag);
	if (rc) {
		memset(token, 0, sizeof(token));
		return rc;
	}
	rc = add_header(c, "Accept: application/json");
	if (!rc)
		rc = add_header(c, "User-Agent: gpuq");
	if (!rc && token[0]) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", token);
		rc = add_header(c, hdr);
		memset(hdr, 0, sizeof(hdr));
	}
	memset(token, 0, sizeof(token));
	if (!rc && content_type) {
		snprintf(hdr, sizeof(hdr), "Content-Type: %s", content_type);
		rc = add_header(c, hdr);
	}
	if (rc)
		return gpuq_diag_set(diag, rc, "out of memory for request headers");
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->hdrs);
	return GPUQ_OK;
}

/* The Status message of an error body, or the body's first bytes. */
static void status_message(const char *body, size_t len, char *out, size_t cap)
{
	json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
	const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;

	if (m)
		snprintf(out, cap, "%s", m);
	else
		snprintf(out, cap, "%.200s", len ? body : "(no body)");
	json_decref(j);
}

void kube_client_fence(kube_client_t *c, kube_fence_t *f, kube_fence_mode_t mode)
{
	c->fence = f;
	c->fence_mode = mode;
}

/* The deadline of the current request's waits and attempts: the lease's
 * for a fenced write, none otherwise. */
static int64_t until_of(const kube_client_t *c)
{
	return c->fence && c->fenced ? kube_fence_until(c->fence) : INT64_MAX;
}

static bool stopping(const kube_client_t *c)
{
	return c->fence && kube_fence_stopping(c->fence);
}

int kube_client_pause(kube_client_t *c, int64_t wake_ms)
{
	if (c->fence)
		return kube_fence_sleep(c->fence, wake_ms, c->fenced);
	kube_sleep_ms(wake_ms - gpuq_mono_ms(), NULL);
	return GPUQ_OK;
}

bool kube_client_cut(const kube_client_t *c)
{
	long unused;

	return c->fence &&
	       kube_fence_plan(until_of(c), stopping(c), gpuq_mono_ms(), 0, &unused) != GPUQ_OK;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return kube_client_cut(ud) ? 1 : 0;
}

/* A request the fence refused (rc), in diag's words. */
static int refused(int rc, const char *method, const char *path, gpuq_diag_t *diag)
{
	if (rc == GPUQ_EFENCED)
		return gpuq_diag_set(diag, rc, "%s %s: not sent: the Lease is not held (fenced)",
				     method, path);
	return gpuq_diag_set(diag, rc, "%s %s: not sent: stopping", method, path);
}

/* Wait for the rate limiter's token, as the fence allows. */
static int limiter_wait(kube_client_t *c)
{
	for (;;) {
		int64_t now = gpuq_mono_ms();
		int64_t wait = kube_limiter_take(c->qps, c->burst, &c->tokens, &c->refill_ms, now);
		int rc;
		if (wait <= 0)
			return GPUQ_OK;
		rc = kube_client_pause(c, now + wait);
		if (rc)
			return rc;
	}
}

/* A fenced write (but a DELETE, which takes none) names its term's token
 * as its fieldManager (kube.h, "The fence token"): *path then points at
 * buf. A path that names a fieldManager of its own keeps it. */
static int term_path(kube_client_t *c, const char *method, const char **path, char *buf, size_t cap,
		     gpuq_diag_t *diag)
{
	char tok[KUBE_FENCE_TOKEN_MAX + 1];

	if (!c->fenced || !strcmp(method, "DELETE") || strstr(*path, "fieldManager="))
		return GPUQ_OK;
	kube_fence_token(c->fence, tok, sizeof(tok));
	if (!tok[0])
		return GPUQ_OK;
	if (kube_fenced_path(*path, tok, buf, cap))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s %s: too long with the fence token",
				     method, *path);
	*path = buf;
	return GPUQ_OK;
}

/* One attempt. Returns a transport error (or the fence's refusal: nothing
 * was sent, or the transfer was cut off), or GPUQ_OK with resp->status
 * set. */
static int attempt(kube_client_t *c, const char *method, const char *path, const char *content_type,
		   const char *body, size_t len, kube_response_t *resp, gpuq_diag_t *diag)
{
	char fpath[KUBE_URL_MAX];
	body_t b = {0};
	CURLcode cc;
	long timeout;
	int rc;

	rc = limiter_wait(c);
	/* the last look before sending: no write starts once the lease has run
	 * out, and none may run past it */
	if (!rc)
		rc = kube_fence_plan(until_of(c), stopping(c), gpuq_mono_ms(), c->timeout_ms,
				     &timeout);
	if (rc)
		return refused(rc, method, path, diag);
	rc = term_path(c, method, &path, fpath, sizeof(fpath), diag);
	if (!rc)
		rc = kube_client_prepare(c, path, content_type, timeout, diag);
	if (rc)
		return rc;
	if (c->fence) {
		curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
	}
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	if (strcmp(method, "GET") == 0)
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
	cc = curl_easy_perform(c->curl);
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		long unused;
		free(b.buf);
		rc = kube_fence_plan(until_of(c), stopping(c), gpuq_mono_ms(), 0, &unused);
		return gpuq_diag_set(diag, rc ? rc : GPUQ_EHTTP, "%s %s: cut off in flight: %s",
				     method, path,
				     rc == GPUQ_ESTOPPED ? "stopping" : "the Lease is not held");
	}
	if (cc == CURLE_OPERATION_TIMEDOUT && c->fenced && timeout < c->timeout_ms) {
		free(b.buf);
		return gpuq_diag_set(diag, GPUQ_EFENCED,
				     "%s %s: no answer within the lease left (%ld ms): cut off",
				     method, path, timeout);
	}
	if (b.over || b.nomem) {
		free(b.buf);
		if (b.nomem)
			return gpuq_diag_set(diag, GPUQ_ENOMEM,
					     "%s %s: out of memory for the response", method, path);
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s %s: response over %u bytes", method,
				     path, KUBE_RESPONSE_MAX);
	}
	if (cc != CURLE_OK) {
		free(b.buf);
		return gpuq_diag_set(diag, GPUQ_EHTTP, "%s %s: %s", method, path,
				     c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (!b.buf) {
		b.buf = calloc(1, 1);
		if (!b.buf)
			return GPUQ_ENOMEM;
	}
	resp->body = b.buf;
	resp->len = b.len;
	return GPUQ_OK;
}

int kube_request(kube_client_t *c, const char *method, const char *path, const char *content_type,
		 const char *body, size_t len, kube_response_t *resp, gpuq_diag_t *diag)
{
	char msg[512];
	int rc;

	memset(resp, 0, sizeof(*resp));
	c->fenced = c->fence && c->fence_mode == KUBE_FENCE_WRITES && strcmp(method, "GET") != 0;
	for (int tries = 0;; tries++) {
		long after;
		rc = attempt(c, method, path, content_type, body, len, resp, diag);
		if (rc)
			return rc;
		rc = kube_status_error(resp->status);
		if (rc != GPUQ_EAGAIN || tries >= KUBE_RETRIES_MAX || c->no_retry)
			break;
		/* throttled or briefly unavailable: wait as told, then again */
		after = retry_after(c->curl);
		if (after < 0)
			after = 1;
		if (after > KUBE_RETRY_AFTER_MAX_S)
			after = KUBE_RETRY_AFTER_MAX_S;
		gpuq_log(GPUQ_LOG_DEBUG, "kube", "%s %s: %ld, retrying in %ld s", method, path,
			 resp->status, after);
		kube_response_deinit(resp);
		rc = kube_client_pause(c, gpuq_mono_ms() + after * 1000);
		if (rc) /* the lease ends (or the daemon stops) before the retry could go */
			return gpuq_diag_set(
			    diag, rc, "%s %s: throttled, and %s before the retry", method, path,
			    rc == GPUQ_ESTOPPED ? "stopping" : "the Lease is not held");
	}
	if (rc) {
		status_message(resp->body, resp->len, msg, sizeof(msg));
		gpuq_diag_set(diag, rc, "%s %s: %ld: %s", method, path, resp->status, msg);
	}
	return rc;
}

/* The apiserver's Status message for a JSON patch it could not apply:
 * NewGenericServerResponse(422) without a resource, so no field names it. */
#define PATCH_UNAPPLIED_MSG "the server rejected our request due to an error in our request"

bool kube_patch_unapplied(long status, const char *body, size_t len)
{
	json_t *j;
	const char *m;
	bool yes;

	if (status != 422 || !body || !len)
		return false;
	j = json_loadb(body, len, 0, NULL);
	m = json_string_value(json_object_get(j, "message"));
	/* "testing value /metadata/resourceVersion failed" is json-patch's own
	 * word for a failed test op, should a server pass it on */
	yes = m && (strcmp(m, PATCH_UNAPPLIED_MSG) == 0 || strstr(m, "testing value"));
	json_decref(j);
	return yes;
}

/* One request with a JSON body (may be NULL), its reply left in *resp as
 * kube_request leaves it (the caller deinits it); json_patch: a 422 for a
 * patch that did not apply (its `test` precondition failed) is
 * GPUQ_ECONFLICT. */
static int request_body(kube_client_t *c, const char *method, const char *path,
			const char *content_type, const json_t *body, bool json_patch,
			kube_response_t *resp, gpuq_diag_t *diag)
{
	char *text = NULL;
	int rc;

	memset(resp, 0, sizeof(*resp));
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return gpuq_diag_set(diag, GPUQ_ENOMEM, "%s %s: cannot serialize the body",
					     method, path);
	}
	rc = kube_request(c, method, path, content_type ? content_type : "application/json", text,
			  text ? strlen(text) : 0, resp, diag);
	free(text);
	if (rc == GPUQ_EINVAL && json_patch &&
	    kube_patch_unapplied(resp->status, resp->body, resp->len))
		rc = GPUQ_ECONFLICT;
	return rc;
}

/* request_body with the reply parsed by jansson into *reply (may be NULL). */
static int request_json(kube_client_t *c, const char *method, const char *path,
			const char *content_type, const json_t *body, json_t **reply,
			bool json_patch, gpuq_diag_t *diag)
{
	kube_response_t resp;
	json_error_t jerr;
	int rc;

	if (reply)
		*reply = NULL;
	rc = request_body(c, method, path, content_type, body, json_patch, &resp, diag);
	if (!rc && reply) {
		*reply = json_loadb(resp.body, resp.len, 0, &jerr);
		if (!json_is_object(*reply)) {
			json_decref(*reply);
			*reply = NULL;
			rc = gpuq_diag_set(diag, GPUQ_ECORRUPT, "%s %s: reply is not a JSON object",
					   method, path);
		}
	}
	kube_response_deinit(&resp);
	return rc;
}

int kube_request_json(kube_client_t *c, const char *method, const char *path,
		      const char *content_type, const json_t *body, json_t **reply,
		      gpuq_diag_t *diag)
{
	return request_json(c, method, path, content_type, body, reply, false, diag);
}

/* The content type of a patch kind, and the path to send it to (a server-side
 * apply names gpuq's field manager): path itself, or full. NULL: too long. */
static const char *patch_path(const char *path, kube_patch_t kind, char full[KUBE_URL_MAX],
			      const char **ct)
{
	switch (kind) {
	case KUBE_PATCH_JSON:
		*ct = "application/json-patch+json";
		break;
	case KUBE_PATCH_MERGE:
		*ct = "application/merge-patch+json";
		break;
	default:
		*ct = "application/apply-patch+yaml"; /* JSON is YAML */
		break;
	}
	if (kind == KUBE_PATCH_APPLY) {
		int n = snprintf(full, KUBE_URL_MAX, "%s%cfieldManager=%s&force=true", path,
				 strchr(path, '?') ? '&' : '?', KUBE_FIELD_MANAGER);
		if (n < 0 || (size_t)n >= KUBE_URL_MAX)
			return NULL;
		return full;
	}
	return path;
}

/* A failed `test` op is a precondition that did not hold: a conflict, not
 * bad input (the path, which may well hold "test", plays no part). */
int kube_patch(kube_client_t *c, const char *path, kube_patch_t kind, const json_t *body,
	       json_t **reply, gpuq_diag_t *diag)
{
	char full[KUBE_URL_MAX];
	const char *ct, *to = patch_path(path, kind, full, &ct);

	if (reply)
		*reply = NULL;
	if (!to)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "patch path too long");
	return request_json(c, "PATCH", to, ct, body, reply, kind == KUBE_PATCH_JSON, diag);
}

int kube_patch_text(kube_client_t *c, const char *path, kube_patch_t kind, const json_t *body,
		    kube_response_t *reply, gpuq_diag_t *diag)
{
	char full[KUBE_URL_MAX];
	const char *ct, *to = patch_path(path, kind, full, &ct);
	kube_response_t resp;
	int rc;

	if (reply)
		memset(reply, 0, sizeof(*reply));
	if (!to)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "patch path too long");
	rc = request_body(c, "PATCH", to, ct, body, kind == KUBE_PATCH_JSON, &resp, diag);
	if (!rc && reply)
		*reply = resp; /* the caller's now */
	else
		kube_response_deinit(&resp);
	return rc;
}

int kube_escape(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
			     ch == '~';
		if (o + (plain ? 1 : 3) >= cap) {
			if (cap)
				out[o] = '\0';
			return GPUQ_ELIMIT;
		}
		if (plain) {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	if (!cap)
		return GPUQ_ELIMIT;
	out[o] = '\0';
	return GPUQ_OK;
}

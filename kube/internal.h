/*
 * kube/internal.h: shared by the files of kube/ only; the module's interface is
 * kube/kube.h.
 */
#ifndef GPUQ_KUBE_INTERNAL_H
#define GPUQ_KUBE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <curl/curl.h>

#include "kube/kube.h"

/* Bytes in a resourceVersion at most: etcd's are decimal uint64 (20 digits);
 * the decoder refuses longer ones, so the watch loop can keep one in a fixed
 * buffer and send it back in a URL. */
#define KUBE_RV_MAX 64

struct kube_config {
	char *server;		     /* "https://host:port", no trailing slash */
	char *ns;		     /* namespace of the context, or NULL */
	char *ca;		     /* CA bundle PEM, or NULL: the system's */
	size_t ca_len;		     /* bytes in ca */
	bool insecure;		     /* insecure-skip-tls-verify */
	char *cert;		     /* client certificate PEM, or NULL */
	size_t cert_len;	     /* bytes in cert */
	char *key;		     /* client key PEM, or NULL */
	size_t key_len;		     /* bytes in key */
	char *token_file;	     /* re-read when it changes, or NULL */
	pthread_mutex_t lock;	     /* guards the token cache below */
	char *token;		     /* bearer token, or NULL */
	struct timespec token_mtime; /* mtime of token_file when read */
	long long token_size;	     /* its size then */
};

struct kube_client {
	const kube_config_t *cfg;     /* borrowed */
	CURL *curl;		      /* one easy handle: keeps its connection alive */
	struct curl_slist *hdrs;      /* scratch header list of the current request */
	double qps;		      /* rate limit: tokens per second (0: none) */
	double burst;		      /* bucket size */
	double tokens;		      /* tokens in the bucket now */
	int64_t refill_ms;	      /* monotonic ms of the last refill */
	long timeout_ms;	      /* whole-request timeout of one attempt */
	bool no_retry;		      /* 429/503 returned, not waited out */
	kube_fence_t *fence;	      /* consulted by every request (borrowed; NULL: none) */
	kube_fence_mode_t fence_mode; /* stop only, or writes need the lease */
	bool fenced;		      /* the current attempt is a fenced write */
	char url[KUBE_URL_MAX];	      /* scratch URL */
	char errbuf[CURL_ERROR_SIZE]; /* curl's words for the last failure */
};

/* v, a value of jv/'s tree (a watch event's or a LIST item's object), as a
 * new jansson value (the caller's), built from it without parsing any text
 * again: numbers as jansson reads them (an integer within json_int_t, else
 * a real), a duplicate object key refused (as JSON_REJECT_DUPLICATES does).
 * NULL with err (cap bytes) saying why: "duplicate object key ...", "too
 * big integer ...", "real number overflow ...", or "out of memory"
 * (decode.c). */
json_t *kube_json_of(const jv_t *v, char *err, size_t cap);

/* The bearer token, re-reading a rotated token file (config.c). */
int kube_token_get(kube_config_t *cfg, char *out, size_t cap, gpuq_diag_t *diag);

/* Set up c->curl for a request to path (URL, TLS material, token header,
 * timeouts). The caller adds method and body. */
int kube_client_prepare(kube_client_t *c, const char *path, const char *content_type,
			long timeout_ms, gpuq_diag_t *diag);

/* Sleep ms, waking early when *stop becomes true (stop may be NULL). */
void kube_sleep_ms(int64_t ms, const atomic_bool *stop);

/* Sleep until monotonic wake_ms as c's fence allows (kube_fence_sleep,
 * with the lease when the current request is a fenced write); a plain sleep
 * without a fence. */
int kube_client_pause(kube_client_t *c, int64_t wake_ms);

/* Whether c's fence wants the transfer in flight cut off now (curl's
 * progress callback). */
bool kube_client_cut(const kube_client_t *c);

/* Translate an HTTP status to a gpuq error (2xx: GPUQ_OK). */
int kube_status_error(long status);

/* Tokens the limiter needs to wait for before the next request, as a pure
 * function of the bucket (for tests): returns ms to wait (0: go now) and
 * updates *tokens and *refill_ms as of now_ms. */
int64_t kube_limiter_take(double qps, double burst, double *tokens, int64_t *refill_ms,
			  int64_t now_ms);

/* Whether a PATCH answer (status, Status body) says a JSON patch could not
 * be applied, which for gpuq's patches means their `test` precondition on
 * metadata.resourceVersion failed. Pure. */
bool kube_patch_unapplied(long status, const char *body, size_t len);

#endif

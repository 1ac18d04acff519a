/* kube/fetch.c: a plain GET of one URL outside the apiserver (dcgm/'s
 * scrape), so that libcurl stays inside kube/. See kube.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"

struct kube_fetch {
	CURL *curl; /* one easy handle: its connection is kept alive */
};

typedef struct {
	char *buf;		   /* the body so far (owned) */
	size_t len;		   /* its length */
	size_t cap;		   /* its room */
	size_t max;		   /* the cap on len */
	bool over;		   /* refused for passing max */
	const atomic_bool *cancel; /* the caller's stop flag, or NULL */
} body_t;

/* curl_global_init once for this file's handles (it is not thread-safe
 * itself; client.c keeps its own once for the apiserver's). */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int kube_fetch_create(kube_fetch_t **out)
{
	kube_fetch_t *f;

	*out = NULL;
	pthread_once(&curl_once, curl_init_once);
	f = calloc(1, sizeof(*f));
	if (!f)
		return GPUQ_ENOMEM;
	f->curl = curl_easy_init();
	if (!f->curl) {
		free(f);
		return GPUQ_ENOMEM;
	}
	*out = f;
	return GPUQ_OK;
}

void kube_fetch_destroy(kube_fetch_t *f)
{
	if (!f)
		return;
	curl_easy_cleanup(f->curl);
	free(f);
}

/* libcurl's write callback: append, refusing past the body cap (the
 * transfer then ends with CURLE_WRITE_ERROR). */
static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	body_t *b = ud;
	size_t n = size * nmemb;

	if (n > b->max - b->len) {
		b->over = true;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		char *q;

		while (cap < b->len + n + 1)
			cap *= 2;
		q = realloc(b->buf, cap);
		if (!q)
			return 0;
		b->buf = q;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return n;
}

/* Abort a transfer in flight when the caller is told to stop. */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const body_t *b = ud;

	(void)dt, (void)dn, (void)ut, (void)un;
	return b->cancel && atomic_load(b->cancel) ? 1 : 0;
}

int kube_fetch_get(kube_fetch_t *f, const kube_fetch_req_t *rq, char **body, size_t *len,
		   gpuq_diag_t *diag)
{
	struct curl_slist *hdr = NULL;
	body_t b = {.max = rq->body_max, .cancel = rq->cancel};
	long status = 0;
	CURLcode cc;
	int rc = GPUQ_OK;

	*body = NULL;
	*len = 0;
	if (rq->accept) {
		char line[256];

		snprintf(line, sizeof(line), "Accept: %s", rq->accept);
		hdr = curl_slist_append(NULL, line);
		if (!hdr)
			return GPUQ_ENOMEM;
	}
	curl_easy_setopt(f->curl, CURLOPT_URL, rq->url);
	curl_easy_setopt(f->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(f->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(f->curl, CURLOPT_TIMEOUT_MS, (long)rq->timeout_ms);
	curl_easy_setopt(f->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)rq->timeout_ms);
	curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(f->curl, CURLOPT_ACCEPT_ENCODING, ""); /* gzip: capped unpacked */
	curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(f->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(f->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(f->curl, CURLOPT_XFERINFODATA, &b);
	cc = curl_easy_perform(f->curl);
	curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	if (b.over)
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT, "body over %zu bytes", rq->body_max);
	else if (cc != CURLE_OK)
		rc = gpuq_diag_set(diag, GPUQ_EHTTP, "%s", curl_easy_strerror(cc));
	else if (status != 200)
		rc = gpuq_diag_set(diag, GPUQ_EHTTP, "HTTP %ld", status);
	if (rc) {
		free(b.buf);
		return rc;
	}
	*body = b.buf;
	*len = b.len;
	return GPUQ_OK;
}

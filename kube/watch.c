/* kube/watch.c: LIST then WATCH, resumed, relisted, reconnected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"

#define RV_MAX 65 /* resourceVersion bytes kept (the decoder refuses longer) */
/* A watch request lives timeoutSeconds; curl gives up a little later so a
 * silently dead connection cannot hold the loop forever. */
#define WATCH_CURL_TIMEOUT_MS ((long)(KUBE_WATCH_TIMEOUT_S + 30) * 1000)

typedef struct {
	const kube_watch_opts_t *o; /* the loop's options */
	kube_event_cb cb;	    /* the consumer */
	void *ctx;		    /* its context */
	char rv[RV_MAX];	    /* last resourceVersion seen ("" before a list) */
	bool relist;		    /* the stream asked for a relist (410, ERROR) */
	int stopped_by_cb;	    /* the consumer's non-zero value, or 0 */
	kube_watch_decoder_t *dec;  /* the current stream's decoder */
	gpuq_diag_t diag;	    /* the stream's last problem */
} loop_t;

static int on_event(void *ud, const kube_event_t *ev)
{
	loop_t *l = ud;
	int rc;

	if (ev->type == KUBE_EV_ERROR) {
		const char *msg = json_string_value(json_object_get(ev->object, "message"));
		gpuq_log(ev->code == 410 ? GPUQ_LOG_DEBUG : GPUQ_LOG_WARN, "kube",
			 "watch %s: ERROR event %ld: %s; relisting", l->o->name, ev->code,
			 msg ? msg : "");
		l->relist = true;
		return 1; /* ends this stream */
	}
	gpuq_strlcpy(l->rv, ev->resource_version, sizeof(l->rv));
	if (ev->type == KUBE_EV_BOOKMARK)
		return 0;
	rc = l->cb(l->ctx, ev);
	if (rc)
		l->stopped_by_cb = rc;
	return rc;
}

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *ud)
{
	loop_t *l = ud;
	size_t n = size * nmemb;

	if (kube_watch_decoder_feed(l->dec, ptr, n, &l->diag) != GPUQ_OK)
		return 0; /* aborts the transfer */
	return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const loop_t *l = ud;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return *l->o->stop ? 1 : 0;
}

/* path?query... with a labelSelector when one is set. */
static int build_path(const kube_watch_opts_t *o, const char *query, char *out, size_t cap,
		      gpuq_diag_t *diag)
{
	char sel[1024] = "";
	int n;

	if (o->label_selector && kube_escape(o->label_selector, sel, sizeof(sel)))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "labelSelector too long");
	n = snprintf(out, cap, "%s?%s%s%s", o->path, query, sel[0] ? "&labelSelector=" : "", sel);
	if (n < 0 || (size_t)n >= cap)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "watch path too long");
	return GPUQ_OK;
}

/* List items carry no apiVersion/kind: give them the list's. */
static void fill_kind(json_t *item, const char *api_version, const char *list_kind)
{
	char kind[128];
	size_t n = strlen(list_kind);

	if (!json_object_get(item, "apiVersion") && api_version)
		json_object_set_new(item, "apiVersion", json_string(api_version));
	if (!json_object_get(item, "kind") && n > 4 && n < sizeof(kind) &&
	    strcmp(list_kind + n - 4, "List") == 0) {
		memcpy(kind, list_kind, n - 4);
		kind[n - 4] = '\0';
		json_object_set_new(item, "kind", json_string(kind));
	}
}

/* Deliver one LIST page's items; *cont gets the continue token ("" at the end). */
static int list_page(loop_t *l, json_t *page, char *cont, size_t cap, gpuq_diag_t *diag)
{
	json_t *meta = json_object_get(page, "metadata"), *items = json_object_get(page, "items");
	const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
	const char *c = json_string_value(json_object_get(meta, "continue"));
	const char *av = json_string_value(json_object_get(page, "apiVersion"));
	const char *kind = json_string_value(json_object_get(page, "kind"));
	json_t *item;
	size_t i;

	if (!rv || strlen(rv) >= RV_MAX || (!json_is_array(items) && !json_is_null(items) && items))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "list %s: no resourceVersion or items",
				     l->o->name);
	if (c && strlen(c) >= cap)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "list %s: continue token too long",
				     l->o->name);
	gpuq_strlcpy(cont, c ? c : "", cap);
	gpuq_strlcpy(l->rv, rv, sizeof(l->rv));
	json_array_foreach(items, i, item)
	{
		kube_event_t ev = {.type = KUBE_EV_ADDED, .object = item};
		const char *irv = json_string_value(
		    json_object_get(json_object_get(item, "metadata"), "resourceVersion"));
		if (!json_is_object(item) || !irv)
			return gpuq_diag_set(diag, GPUQ_ECORRUPT,
					     "list %s: items[%zu] has no resourceVersion",
					     l->o->name, i);
		fill_kind(item, av, kind ? kind : "");
		ev.resource_version = irv;
		int rc = l->cb(l->ctx, &ev);
		if (rc)
			return l->stopped_by_cb = rc;
	}
	return GPUQ_OK;
}

/* RESET, every object (paged), SYNCED. */
static int relist(kube_client_t *c, loop_t *l, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX], query[2048], cont[1500] = "", econt[1800];
	kube_event_t ev = {.type = KUBE_EV_RESET, .resource_version = ""};
	int rc;

	rc = l->cb(l->ctx, &ev);
	if (rc)
		return l->stopped_by_cb = rc;
	do {
		json_t *page = NULL;
		if (kube_escape(cont, econt, sizeof(econt)))
			return gpuq_diag_set(diag, GPUQ_ELIMIT, "continue token too long");
		snprintf(query, sizeof(query), "limit=%d%s%s", KUBE_LIST_PAGE,
			 cont[0] ? "&continue=" : "", econt);
		rc = build_path(l->o, query, path, sizeof(path), diag);
		if (!rc)
			rc = kube_request_json(c, "GET", path, NULL, NULL, &page, diag);
		if (!rc)
			rc = list_page(l, page, cont, sizeof(cont), diag);
		json_decref(page);
		if (rc)
			return rc;
	} while (cont[0] && !*l->o->stop);
	ev.type = KUBE_EV_SYNCED;
	rc = l->cb(l->ctx, &ev);
	return rc ? (l->stopped_by_cb = rc) : GPUQ_OK;
}

/* One watch request from l->rv until it ends. */
static int watch_once(kube_client_t *c, loop_t *l, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX], query[256];
	long status = 0;
	CURLcode cc;
	int rc;

	snprintf(query, sizeof(query),
		 "watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s",
		 KUBE_WATCH_TIMEOUT_S, l->rv);
	rc = build_path(l->o, query, path, sizeof(path), diag);
	if (!rc)
		rc = kube_client_prepare(c, path, NULL, WATCH_CURL_TIMEOUT_MS, diag);
	if (!rc)
		rc = kube_watch_decoder_create(KUBE_EVENT_MAX, on_event, l, &l->dec);
	if (rc)
		return rc;
	l->diag.msg[0] = '\0';
	curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, l);
	curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, l);
	cc = curl_easy_perform(c->curl);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	kube_watch_decoder_destroy(l->dec);
	l->dec = NULL;
	if (l->stopped_by_cb || *l->o->stop || l->relist)
		return GPUQ_OK;
	if (status == 410) {
		l->relist = true;
		return GPUQ_OK;
	}
	if (l->diag.msg[0]) { /* the decoder refused the stream */
		l->relist = true;
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "watch %s: %s", l->o->name, l->diag.msg);
	}
	if (cc != CURLE_OK && cc != CURLE_OPERATION_TIMEDOUT)
		return gpuq_diag_set(diag, GPUQ_EHTTP, "watch %s: %s", l->o->name,
				     c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
	if (status && (status < 200 || status >= 300))
		return gpuq_diag_set(diag, kube_status_error(status), "watch %s: HTTP %ld",
				     l->o->name, status);
	return GPUQ_OK; /* ended normally: resume from l->rv */
}

/* Backoff with +-25% jitter; the state is a tiny xorshift seeded per loop. */
static int64_t jittered(int64_t base, uint64_t *seed)
{
	uint64_t x = *seed;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*seed = x;
	return base * 3 / 4 + (int64_t)(x % (uint64_t)(base / 2 + 1));
}

int kube_watch_run(kube_client_t *c, const kube_watch_opts_t *opts, kube_event_cb cb, void *ctx)
{
	loop_t l = {.o = opts, .cb = cb, .ctx = ctx, .relist = true};
	int64_t backoff = KUBE_BACKOFF_BASE_MS;
	uint64_t seed = (uint64_t)kube_mono_ms() * 2654435761u + (uintptr_t)&l;
	unsigned failures = 0;

	while (!*opts->stop) {
		gpuq_diag_t diag = {{0}};
		int rc;

		if (l.relist) {
			rc = relist(c, &l, &diag);
			if (!rc)
				l.relist = false;
		} else {
			rc = watch_once(c, &l, &diag);
		}
		if (l.stopped_by_cb)
			return l.stopped_by_cb;
		if (*opts->stop)
			break;
		if (rc == GPUQ_EGONE) {
			l.relist = true;
			continue;
		}
		if (!rc) {
			if (failures)
				gpuq_log(GPUQ_LOG_INFO, "kube", "watch %s: recovered after %u failures",
					 opts->name, failures);
			failures = 0;
			backoff = KUBE_BACKOFF_BASE_MS;
			continue;
		}
		if (failures++ == 0)
			gpuq_log(GPUQ_LOG_WARN, "kube", "watch %s: %s; retrying with backoff",
				 opts->name, diag.msg);
		if (rc != GPUQ_EHTTP)
			l.relist = true; /* anything but a dropped connection: start over */
		kube_sleep_ms(jittered(backoff, &seed), opts->stop);
		backoff = backoff * 2 > KUBE_BACKOFF_MAX_MS ? KUBE_BACKOFF_MAX_MS : backoff * 2;
	}
	return GPUQ_OK;
}

/* kube/watch.c: LIST then WATCH, resumed, relisted, reconnected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"

#define RV_MAX (KUBE_RV_MAX + 1) /* resourceVersion bytes kept, NUL included */
#define ERRBODY_MAX 512		 /* bytes of a refused watch's body kept for the log */
/* A watch that ends cleanly sooner than this without a single event (not even
 * a bookmark) is a misbehaving peer or proxy: back off instead of spinning. */
#define WATCH_MIN_MS 1000
/* A watch request lives timeoutSeconds; curl gives up a little later so a
 * silently dead connection cannot hold the loop forever. */
#define WATCH_CURL_TIMEOUT_MS ((long)(KUBE_WATCH_TIMEOUT_S + 30) * 1000)

typedef struct {
	const kube_watch_opts_t *o; /* the loop's options */
	kube_event_cb cb;	    /* the consumer */
	void *ctx;		    /* its context */
	char rv[RV_MAX];	    /* last resourceVersion seen ("" before a list) */
	bool relist;		    /* the stream asked for a relist (410, ERROR) */
	bool reset_due;		    /* a LIST began: RESET goes before its first page */
	int stopped_by_cb;	    /* the consumer's non-zero value, or 0 */
	kube_watch_decoder_t *dec;  /* the current stream's decoder */
	gpuq_diag_t diag;	    /* the stream's last problem */
	CURL *curl;		    /* the current stream's handle */
	uint64_t delivered;	    /* the current stream's objects and bookmarks */
	char errbody[ERRBODY_MAX];  /* start of a non-2xx answer's body */
	size_t errlen;		    /* bytes in errbody */
} loop_t;

static int on_event(void *ud, const kube_event_t *ev)
{
	loop_t *l = ud;
	int rc;

	if (ev->type == KUBE_EV_ERROR) {
		const char *msg = ev->fast
				      ? jv_member_str(ev->fast, "message")
				      : json_string_value(json_object_get(ev->object, "message"));
		gpuq_log(ev->code == 410 ? GPUQ_LOG_DEBUG : GPUQ_LOG_WARN, "kube",
			 "watch %s: ERROR event %ld: %s; relisting", l->o->name, ev->code,
			 msg ? msg : "");
		l->relist = true;
		return 1; /* ends this stream */
	}
	gpuq_strlcpy(l->rv, ev->resource_version, sizeof(l->rv));
	l->delivered++;
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
	long status = 0;

	/* a refusal (403, 410, 500...) carries a Status, not watch events: keep
	 * its start for the message instead of decoding it */
	curl_easy_getinfo(l->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status >= 300) {
		size_t k =
		    n < sizeof(l->errbody) - 1 - l->errlen ? n : sizeof(l->errbody) - 1 - l->errlen;
		memcpy(l->errbody + l->errlen, ptr, k);
		l->errlen += k;
		l->errbody[l->errlen] = '\0';
		return n;
	}
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
	return atomic_load(l->o->stop) ? 1 : 0;
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

/* List items carry no apiVersion/kind: give them the list's (kind: the
 * list's less "List", NULL when it has none). */
static void fill_kind(json_t *item, const char *api_version, const char *kind)
{
	if (!json_object_get(item, "apiVersion") && api_version)
		json_object_set_new(item, "apiVersion", json_string(api_version));
	if (!json_object_get(item, "kind") && kind)
		json_object_set_new(item, "kind", json_string(kind));
}

/* The RESET of a LIST, once its first page is in: a LIST that is refused
 * (a collection not served answers 404) begins nothing. */
static int announce_reset(loop_t *l)
{
	kube_event_t ev = {.type = KUBE_EV_RESET, .resource_version = ""};
	int rc;

	if (!l->reset_due)
		return GPUQ_OK;
	l->reset_due = false;
	rc = l->cb(l->ctx, &ev);
	return rc ? (l->stopped_by_cb = rc) : GPUQ_OK;
}

/* Hand one LIST item to l's callback: in jv/'s tree with the list's
 * apiVersion and kind beside it (opts->fast), else as a jansson tree built
 * from it with them written into it (released after the call). The
 * callback's non-zero return is kept as the loop's stop (stopped_by_cb). */
static int hand_item(loop_t *l, kube_event_t *ev, size_t i, gpuq_diag_t *diag)
{
	char err[128];
	json_t *obj;
	int rc;

	if (l->o->fast) {
		rc = l->cb(l->ctx, ev);
		return rc ? (l->stopped_by_cb = rc) : GPUQ_OK;
	}
	obj = kube_json_of(ev->fast, err, sizeof(err));
	if (!obj)
		return gpuq_diag_set(diag,
				     strcmp(err, "out of memory") ? GPUQ_ECORRUPT : GPUQ_ENOMEM,
				     "list %s: items[%zu]: %s", l->o->name, i, err);
	fill_kind(obj, ev->list_api_version, ev->list_kind);
	ev->object = obj;
	ev->fast = NULL;
	ev->list_api_version = ev->list_kind = NULL;
	rc = l->cb(l->ctx, ev);
	json_decref(obj);
	return rc ? (l->stopped_by_cb = rc) : GPUQ_OK;
}

/* Deliver one LIST page's items (read once, by jv/'s reader); *cont gets
 * the continue token ("" at the end). */
static int list_page(loop_t *l, const jv_t *page, char *cont, size_t cap, gpuq_diag_t *diag)
{
	const jv_t *meta = jv_get(page, "metadata"), *items = jv_get(page, "items");
	const char *rv = jv_member_str(meta, "resourceVersion");
	const char *c = jv_member_str(meta, "continue");
	const char *av = jv_member_str(page, "apiVersion");
	const char *kind = jv_member_str(page, "kind");
	char item_kind[128] = "";
	size_t i = 0, n = kind ? strlen(kind) : 0;

	if (!rv || !rv[0] || strlen(rv) >= RV_MAX ||
	    (items && !jv_is(items, JV_ARRAY) && !jv_is(items, JV_NULL)))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "list %s: no resourceVersion or items",
				     l->o->name);
	if (c && strlen(c) >= cap)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "list %s: continue token too long",
				     l->o->name);
	gpuq_strlcpy(cont, c ? c : "", cap);
	gpuq_strlcpy(l->rv, rv, sizeof(l->rv));
	if (n > 4 && n < sizeof(item_kind) && strcmp(kind + n - 4, "List") == 0) {
		memcpy(item_kind, kind, n - 4);
		item_kind[n - 4] = '\0';
	}
	if (announce_reset(l))
		return l->stopped_by_cb;
	for (const jv_t *item = jv_first(items); item; item = item->next, i++) {
		kube_event_t ev = {.type = KUBE_EV_ADDED, .fast = item};
		const char *irv = jv_member_str(jv_get(item, "metadata"), "resourceVersion");
		int rc;

		if (!jv_is(item, JV_OBJECT) || !irv)
			return gpuq_diag_set(diag, GPUQ_ECORRUPT,
					     "list %s: items[%zu] has no resourceVersion",
					     l->o->name, i);
		ev.resource_version = irv;
		ev.list_api_version = av;
		ev.list_kind = item_kind[0] ? item_kind : NULL;
		rc = hand_item(l, &ev, i, diag);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* GET one LIST page at path and deliver its items. */
static int list_get(kube_client_t *c, loop_t *l, const char *path, char *cont, size_t cap,
		    gpuq_diag_t *diag)
{
	kube_response_t resp = {0};
	jv_doc_t doc = {NULL, NULL};
	char err[128];
	int rc;

	rc = kube_request(c, "GET", path, NULL, NULL, 0, &resp, diag);
	if (!rc) {
		rc = jv_doc_parse(&doc, resp.body, resp.len, err, sizeof(err));
		if (rc && rc != GPUQ_ENOMEM)
			rc = gpuq_diag_set(diag, GPUQ_ECORRUPT, "list %s: not JSON: %s", l->o->name,
					   err);
	}
	if (!rc)
		rc = list_page(l, doc.root, cont, cap, diag);
	jv_doc_free(&doc);
	kube_response_deinit(&resp);
	return rc;
}

/* RESET, every object (paged), SYNCED. */
static int relist(kube_client_t *c, loop_t *l, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX], query[2048], cont[1500] = "", econt[1800];
	kube_event_t ev = {.type = KUBE_EV_SYNCED, .resource_version = ""};
	int rc;

	l->reset_due = true;
	do {
		if (kube_escape(cont, econt, sizeof(econt)))
			return gpuq_diag_set(diag, GPUQ_ELIMIT, "continue token too long");
		snprintf(query, sizeof(query), "limit=%d%s%s", KUBE_LIST_PAGE,
			 cont[0] ? "&continue=" : "", econt);
		rc = build_path(l->o, query, path, sizeof(path), diag);
		if (!rc)
			rc = list_get(c, l, path, cont, sizeof(cont), diag);
		if (rc)
			return rc;
	} while (cont[0] && !atomic_load(l->o->stop));
	if (cont[0])
		return GPUQ_OK; /* stopped mid-list: a SYNCED now would declare the
				   objects of the pages not read gone */
	rc = l->cb(l->ctx, &ev);
	return rc ? (l->stopped_by_cb = rc) : GPUQ_OK;
}

/* The Status message of a refused watch, or its body's first bytes. */
static void refusal(const loop_t *l, char *out, size_t cap)
{
	json_t *j = l->errlen ? json_loadb(l->errbody, l->errlen, 0, NULL) : NULL;
	const char *m = json_string_value(json_object_get(j, "message"));

	snprintf(out, cap, "%.300s", m ? m : l->errlen ? l->errbody : "(no body)");
	json_decref(j);
}

/* One watch request from l->rv until it ends. */
static int watch_once(kube_client_t *c, loop_t *l, gpuq_diag_t *diag)
{
	char path[KUBE_URL_MAX], query[512], erv[RV_MAX * 3], msg[320];
	long status = 0;
	int64_t start = gpuq_mono_ms();
	bool productive; /* the stream brought something or lived a while */
	CURLcode cc;
	int rc;

	if (kube_escape(l->rv, erv, sizeof(erv)))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "watch %s: resourceVersion too long",
				     l->o->name);
	snprintf(query, sizeof(query),
		 "watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s",
		 KUBE_WATCH_TIMEOUT_S, erv);
	rc = build_path(l->o, query, path, sizeof(path), diag);
	if (!rc)
		rc = kube_client_prepare(c, path, NULL, WATCH_CURL_TIMEOUT_MS, diag);
	if (!rc)
		rc = kube_watch_decoder_create(KUBE_EVENT_MAX, on_event, l, &l->dec);
	if (rc)
		return rc;
	kube_watch_decoder_fast(l->dec, l->o->fast);
	l->diag.msg[0] = '\0';
	l->errlen = 0;
	l->errbody[0] = '\0';
	l->curl = c->curl;
	l->delivered = 0;
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
	l->curl = NULL;
	productive = l->delivered > 0 || gpuq_mono_ms() - start >= WATCH_MIN_MS;
	if (l->stopped_by_cb || atomic_load(l->o->stop))
		return GPUQ_OK;
	if (l->relist || status == 410) {
		/* resourceVersion gone (410, an ERROR event): relist. At once after
		 * a stream that ran; after one refused straight away (a lagging
		 * apiserver, a proxy), as a failure, with backoff, so the loop
		 * cannot turn into back-to-back LISTs. */
		l->relist = true;
		if (productive)
			return GPUQ_OK;
		return gpuq_diag_set(diag, GPUQ_EGONE,
				     "watch %s: relist asked for at once (resourceVersion %s)",
				     l->o->name, l->rv);
	}
	if (status && (status < 200 || status >= 300)) {
		refusal(l, msg, sizeof(msg));
		return gpuq_diag_set(diag, kube_status_error(status), "watch %s: HTTP %ld: %s",
				     l->o->name, status, msg);
	}
	if (l->diag.msg[0]) { /* the decoder refused the stream */
		l->relist = true;
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "watch %s: %s", l->o->name, l->diag.msg);
	}
	/* a timeout after the answer began is the watch's normal end; before
	 * it (no status), the apiserver was not reached */
	if (cc != CURLE_OK && !(cc == CURLE_OPERATION_TIMEDOUT && status))
		return gpuq_diag_set(diag, GPUQ_EHTTP, "watch %s: %s", l->o->name,
				     c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc));
	if (!productive)
		return gpuq_diag_set(diag, GPUQ_EHTTP, "watch %s: ended at once without an event",
				     l->o->name);
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

/* A LIST answered 404 for a collection that may be unserved: announce it
 * (once per change) and wait the poll interval. Returns the callback's
 * non-zero value, else 0. */
static int unserved(loop_t *l, bool *known)
{
	kube_event_t ev = {.type = KUBE_EV_UNSERVED, .resource_version = ""};
	int64_t poll = l->o->unserved_poll_ms > 0 ? l->o->unserved_poll_ms : KUBE_UNSERVED_POLL_MS;
	int rc;

	if (!*known) {
		*known = true;
		rc = l->cb(l->ctx, &ev);
		if (rc)
			return l->stopped_by_cb = rc;
	}
	kube_sleep_ms(poll, l->o->stop);
	return 0;
}

int kube_watch_run(kube_client_t *c, const kube_watch_opts_t *opts, kube_event_cb cb, void *ctx)
{
	loop_t l = {.o = opts, .cb = cb, .ctx = ctx, .relist = true};
	int64_t backoff = KUBE_BACKOFF_BASE_MS;
	/* xorshift must not start at 0 (it would stay there) */
	uint64_t seed = ((uint64_t)gpuq_mono_ms() * 2654435761u + (uintptr_t)&l) | 1;
	unsigned failures = 0;
	bool absent = false; /* UNSERVED announced, and no LIST answered since */

	while (!atomic_load(opts->stop)) {
		gpuq_diag_t diag = {{0}};
		bool listing = l.relist;
		int rc;

		rc = listing ? relist(c, &l, &diag) : watch_once(c, &l, &diag);
		if (listing && !rc)
			l.relist = false;
		if (listing && !rc)
			absent = false;
		if (l.stopped_by_cb)
			return l.stopped_by_cb;
		if (atomic_load(opts->stop))
			break;
		if (listing && rc == GPUQ_ENOTFOUND && opts->may_be_unserved) {
			/* not served: an answer, not a failure */
			failures = 0;
			backoff = KUBE_BACKOFF_BASE_MS;
			if (unserved(&l, &absent))
				return l.stopped_by_cb;
			continue;
		}
		if (listing && rc == GPUQ_EGONE) {
			l.relist = true; /* a continue token expired: list again */
			continue;
		}
		if (!rc) {
			/* only a watch that ran ends a failure streak: a LIST that
			 * works before a WATCH that does not (RBAC granting list but
			 * not watch) must not reset the backoff */
			if (!listing) {
				if (failures)
					gpuq_log(GPUQ_LOG_INFO, "kube",
						 "watch %s: recovered after %u failures",
						 opts->name, failures);
				failures = 0;
				backoff = KUBE_BACKOFF_BASE_MS;
			}
			continue;
		}
		/* a collection that may be unserved answers 404 to a watch when it
		 * goes (its CRD removed): the relist after the backoff says so, no
		 * failure to warn of */
		if (!(rc == GPUQ_ENOTFOUND && opts->may_be_unserved) && failures++ == 0)
			gpuq_log(GPUQ_LOG_WARN, "kube", "watch %s: %s; retrying with backoff",
				 opts->name, diag.msg);
		if (rc != GPUQ_EHTTP && rc != GPUQ_EAGAIN)
			l.relist = true; /* anything but a dropped connection or a busy
					    server: start over */
		kube_sleep_ms(jittered(backoff, &seed), opts->stop);
		backoff = backoff * 2 > KUBE_BACKOFF_MAX_MS ? KUBE_BACKOFF_MAX_MS : backoff * 2;
	}
	return GPUQ_OK;
}

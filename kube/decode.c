/* kube/decode.c: the watch-stream decoder (pure: no I/O, no clock). */
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"

struct kube_watch_decoder {
	kube_event_cb cb; /* event consumer */
	void *ctx;	  /* its context */
	size_t max;	  /* bytes in one event line at most */
	char *line;	  /* the partial line so far */
	size_t len;	  /* bytes in line */
	size_t cap;	  /* allocated bytes of line */
	int error;	  /* sticky error, GPUQ_OK while healthy */
	uint64_t events;  /* events delivered */
	bool fast;	  /* read with jv/ (kube_watch_decoder_fast) */
};

int kube_watch_decoder_create(size_t max_event, kube_event_cb cb, void *ctx,
			      kube_watch_decoder_t **out)
{
	kube_watch_decoder_t *d = calloc(1, sizeof(*d));

	if (!d)
		return GPUQ_ENOMEM;
	d->cb = cb;
	d->ctx = ctx;
	d->max = max_event ? max_event : KUBE_EVENT_MAX;
	*out = d;
	return GPUQ_OK;
}

void kube_watch_decoder_destroy(kube_watch_decoder_t *d)
{
	if (!d)
		return;
	free(d->line);
	free(d);
}

uint64_t kube_watch_decoder_events(const kube_watch_decoder_t *d)
{
	return d->events;
}

void kube_watch_decoder_fast(kube_watch_decoder_t *d, bool fast)
{
	d->fast = fast;
}

static const struct {
	const char *name;
	kube_event_type_t type;
} types[] = {
    {"ADDED", KUBE_EV_ADDED},	    {"MODIFIED", KUBE_EV_MODIFIED}, {"DELETED", KUBE_EV_DELETED},
    {"BOOKMARK", KUBE_EV_BOOKMARK}, {"ERROR", KUBE_EV_ERROR},
};

/* Decode one complete line (NUL-terminated, len bytes) and deliver it. */
static int deliver(kube_watch_decoder_t *d, const char *line, size_t len, gpuq_diag_t *diag)
{
	unsigned long long nr = (unsigned long long)d->events + 1; /* for messages */
	kube_event_t ev = {0};
	json_error_t jerr;
	json_t *j, *obj, *rv;
	const char *tname;
	size_t i;
	int rc;

	j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "watch event %llu: not JSON: %s", nr,
				     jerr.text);
	rc = GPUQ_ECORRUPT;
	if (!json_is_object(j)) {
		gpuq_diag_set(diag, rc, "watch event %llu: not a JSON object", nr);
		goto out;
	}
	tname = json_string_value(json_object_get(j, "type"));
	if (!tname) {
		gpuq_diag_set(diag, rc, "watch event %llu: no \"type\" string", nr);
		goto out;
	}
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].name, tname) == 0)
			break;
	if (i == sizeof(types) / sizeof(types[0])) {
		gpuq_diag_set(diag, rc, "watch event %llu: unknown type \"%.40s\"", nr, tname);
		goto out;
	}
	ev.type = types[i].type;
	obj = json_object_get(j, "object");
	if (!json_is_object(obj)) {
		gpuq_diag_set(diag, rc, "watch event %llu (%s): \"object\" is not an object", nr,
			      tname);
		goto out;
	}
	ev.object = obj;
	ev.resource_version = "";
	if (ev.type == KUBE_EV_ERROR) {
		json_t *code = json_object_get(obj, "code");
		json_int_t c = json_is_integer(code) ? json_integer_value(code) : 0;
		ev.code = c >= 0 && c <= 999 ? (long)c : 0; /* an HTTP status or nothing */
	} else {
		rv = json_object_get(json_object_get(obj, "metadata"), "resourceVersion");
		if (!json_is_string(rv) || !json_string_value(rv)[0]) {
			gpuq_diag_set(diag, rc,
				      "watch event %llu (%s): metadata.resourceVersion missing or "
				      "not a non-empty string",
				      nr, tname);
			goto out;
		}
		if (json_string_length(rv) > KUBE_RV_MAX) {
			gpuq_diag_set(
			    diag, rc,
			    "watch event %llu (%s): metadata.resourceVersion longer than %d "
			    "bytes",
			    nr, tname, KUBE_RV_MAX);
			goto out;
		}
		ev.resource_version = json_string_value(rv);
	}
	d->events++;
	rc = d->cb(d->ctx, &ev);
out:
	json_decref(j);
	return rc;
}

/* deliver() with jv/'s reader: the same checks, the same refusals. */
static int deliver_fast(kube_watch_decoder_t *d, const char *line, size_t len, gpuq_diag_t *diag)
{
	unsigned long long nr = (unsigned long long)d->events + 1; /* for messages */
	kube_event_t ev = {0};
	jv_doc_t doc;
	char err[128];
	const jv_t *obj, *rv;
	const char *tname;
	size_t i;
	int rc;

	rc = jv_doc_parse(&doc, line, len, err, sizeof(err));
	if (rc == GPUQ_ENOMEM)
		return rc;
	if (rc)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "watch event %llu: not JSON: %s", nr,
				     err);
	rc = GPUQ_ECORRUPT;
	if (!jv_is(doc.root, JV_OBJECT)) {
		gpuq_diag_set(diag, rc, "watch event %llu: not a JSON object", nr);
		goto out;
	}
	tname = jv_member_str(doc.root, "type");
	if (!tname) {
		gpuq_diag_set(diag, rc, "watch event %llu: no \"type\" string", nr);
		goto out;
	}
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].name, tname) == 0)
			break;
	if (i == sizeof(types) / sizeof(types[0])) {
		gpuq_diag_set(diag, rc, "watch event %llu: unknown type \"%.40s\"", nr, tname);
		goto out;
	}
	ev.type = types[i].type;
	obj = jv_get(doc.root, "object");
	if (!jv_is(obj, JV_OBJECT)) {
		gpuq_diag_set(diag, rc, "watch event %llu (%s): \"object\" is not an object", nr,
			      tname);
		goto out;
	}
	ev.fast = obj;
	ev.resource_version = "";
	if (ev.type == KUBE_EV_ERROR) {
		int64_t c = 0;
		ev.code = jv_int(jv_get(obj, "code"), &c) && c >= 0 && c <= 999 ? (long)c : 0;
	} else {
		rv = jv_get(jv_get(obj, "metadata"), "resourceVersion");
		if (!jv_is(rv, JV_STRING) || !rv->s[0]) {
			gpuq_diag_set(diag, rc,
				      "watch event %llu (%s): metadata.resourceVersion missing or "
				      "not a non-empty string",
				      nr, tname);
			goto out;
		}
		if (rv->len > KUBE_RV_MAX) {
			gpuq_diag_set(
			    diag, rc,
			    "watch event %llu (%s): metadata.resourceVersion longer than %d "
			    "bytes",
			    nr, tname, KUBE_RV_MAX);
			goto out;
		}
		ev.resource_version = rv->s;
	}
	d->events++;
	rc = d->cb(d->ctx, &ev);
out:
	jv_doc_free(&doc);
	return rc;
}

static int append(kube_watch_decoder_t *d, const char *p, size_t n, gpuq_diag_t *diag)
{
	if (d->len + n > d->max) {
		gpuq_diag_set(diag, GPUQ_ELIMIT, "watch event %llu: over %zu bytes",
			      (unsigned long long)d->events + 1, d->max);
		return GPUQ_ELIMIT; /* a constant: the analyzer cannot see through diag_set */
	}
	if (d->len + n + 1 > d->cap) {
		size_t cap = d->cap ? d->cap : 4096;
		char *nl;
		while (cap < d->len + n + 1)
			cap *= 2;
		if (cap > d->max + 1)
			cap = d->max + 1;
		nl = realloc(d->line, cap);
		if (!nl)
			return GPUQ_ENOMEM;
		d->line = nl;
		d->cap = cap;
	}
	memcpy(d->line + d->len, p, n);
	d->len += n;
	d->line[d->len] = '\0';
	return GPUQ_OK;
}

/* Whether line[0..n) is only whitespace (keep-alive blank lines). */
static bool blank(const char *line, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
			return false;
	return true;
}

int kube_watch_decoder_feed(kube_watch_decoder_t *d, const char *buf, size_t len, gpuq_diag_t *diag)
{
	int rc;

	if (d->error)
		return d->error;
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;

		rc = append(d, buf, n, diag);
		if (rc)
			return d->error = rc;
		if (!nl)
			break;
		buf += n + 1;
		len -= n + 1;
		if (!blank(d->line ? d->line : "", d->len)) {
			rc = d->fast ? deliver_fast(d, d->line, d->len, diag)
				     : deliver(d, d->line, d->len, diag);
			if (rc) {
				/* a bad line: the stream cannot be trusted; a stop by the
				 * callback: the bytes after it in buf were not decoded, so
				 * going on later would start mid-line. Both stick. */
				d->len = 0;
				return d->error = rc;
			}
		}
		d->len = 0;
	}
	return GPUQ_OK;
}

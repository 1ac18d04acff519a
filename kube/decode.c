/* kube/decode.c: the watch-stream decoder (pure: no I/O, no clock). Every
 * event is read once, by jv/'s reader; a consumer of jansson values (the
 * policy kinds') gets its object as a jansson tree built from that reading
 * (kube_json_of), never parsed again. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
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
	bool fast;	  /* objects handed over in jv/'s tree (kube_watch_decoder_fast),
			     else in a jansson tree built from it */
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

/* ---- one reader: jv/'s, and a jansson tree built from its tree ---- */

static json_t *to_json(const jv_t *v, char *err, size_t cap);

/* Members of object o into a new jansson object; a key twice refused
 * (jansson's JSON_REJECT_DUPLICATES, which the policy decoders had). */
static json_t *object_to_json(const jv_t *o, char *err, size_t cap)
{
	json_t *out = json_object();

	for (const jv_t *k = o->first; out && k; k = k->next->next) {
		json_t *val;

		if (json_object_getn(out, k->s, k->len)) {
			snprintf(err, cap, "duplicate object key \"%.64s\"", k->s);
			json_decref(out);
			return NULL;
		}
		val = to_json(k->next, err, cap);
		if (!val || json_object_setn_new_nocheck(out, k->s, k->len, val)) {
			json_decref(out);
			return NULL;
		}
	}
	if (!out && !err[0])
		snprintf(err, cap, "out of memory");
	return out;
}

/* A number as jansson reads one: an integer (no fraction, no exponent)
 * within json_int_t, else a real that does not overflow; refused past
 * either, as jansson refuses it. */
static json_t *number_to_json(const jv_t *v, char *err, size_t cap)
{
	char *end;
	double d;

	errno = 0;
	if (!v->fraction) {
		long long i = strtoll(v->s, &end, 10);
		if (errno == 0 && *end == '\0')
			return json_integer((json_int_t)i);
		snprintf(err, cap, "too big integer %.40s", v->s);
		return NULL;
	}
	d = strtod(v->s, &end);
	if ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE) {
		snprintf(err, cap, "real number overflow %.40s", v->s);
		return NULL;
	}
	return json_real(d);
}

/* v (jv/'s, depth at most JV_DEPTH_MAX: the recursion is bounded) as a new
 * jansson value; NULL with err said (ENOMEM included). */
static json_t *to_json(const jv_t *v, char *err, size_t cap)
{
	json_t *out = NULL;

	switch (v->type) {
	case JV_NULL:
		return json_null();
	case JV_FALSE:
		return json_false();
	case JV_TRUE:
		return json_true();
	case JV_NUMBER:
		return number_to_json(v, err, cap);
	case JV_STRING:
		out = json_stringn_nocheck(v->s, v->len); /* jv/ checked its UTF-8 */
		break;
	case JV_ARRAY:
		out = json_array();
		for (const jv_t *e = v->first; out && e; e = e->next) {
			json_t *el = to_json(e, err, cap);
			if (!el || json_array_append_new(out, el)) {
				json_decref(out);
				return NULL;
			}
		}
		break;
	case JV_OBJECT:
		return object_to_json(v, err, cap);
	}
	if (!out && !err[0])
		snprintf(err, cap, "out of memory");
	return out;
}

json_t *kube_json_of(const jv_t *v, char *err, size_t cap)
{
	err[0] = '\0';
	return to_json(v, err, cap);
}

/* Hand ev to d's callback, counting it: as it is for a fast decoder, else
 * with its object built as a jansson tree (released after the call); an
 * object that tree refuses is neither handed over nor counted. */
static int hand(kube_watch_decoder_t *d, kube_event_t *ev, unsigned long long nr, gpuq_diag_t *diag)
{
	char err[128];
	json_t *obj = NULL;
	int rc;

	if (!d->fast) {
		obj = kube_json_of(ev->fast, err, sizeof(err));
		if (!obj)
			return gpuq_diag_set(
			    diag, strcmp(err, "out of memory") ? GPUQ_ECORRUPT : GPUQ_ENOMEM,
			    "watch event %llu: not JSON: %s", nr, err);
		ev->object = obj;
		ev->fast = NULL;
	}
	d->events++;
	rc = d->cb(d->ctx, ev);
	json_decref(obj);
	return rc;
}

/* Decode one complete line (len bytes) with jv/'s reader and deliver it. */
static int deliver(kube_watch_decoder_t *d, const char *line, size_t len, gpuq_diag_t *diag)
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
	rc = hand(d, &ev, nr, diag);
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
			rc = deliver(d, d->line, d->len, diag);
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

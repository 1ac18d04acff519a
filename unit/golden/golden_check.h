/*
 * unit/golden/golden_check.h: shared by unit/test_webhook.c (cases run in
 * process) and unit/test_golden.c (cases posted to the real server). A
 * header of static functions, so no helper .c file is linked into every unit
 * test.
 *
 * A case (unit/golden/cases/NN-name.json) is {"endpoint", "request" or
 * "request_raw", "expect": {http_status, allowed, code, message_contains,
 * patch, warning_contains?}}; golden_check() compares one reply with it and
 * says what differs. Also here: base64 decoding and a small RFC 6902 "add"
 * applier used to prove patches idempotent.
 */
#ifndef GPUQ_UNIT_GOLDEN_CHECK_H
#define GPUQ_UNIT_GOLDEN_CHECK_H

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define GOLDEN_CASES_MAX 256 /* case files read from one directory */
#define GOLDEN_NAME_MAX 128  /* case file name */

typedef struct {
	char name[GOLDEN_NAME_MAX]; /* file name, e.g. "01-mutate-job-gpu-defaults.json" */
	json_t *c;		    /* the parsed case (owned) */
	char *body;		    /* the request body to send (owned) */
	size_t len;		    /* bytes in body */
	int mutate;		    /* endpoint is /mutate (else /validate) */
} golden_case_t;

/* The string value of j, or "" when j is not a string. */
static inline const char *golden_str(const json_t *j)
{
	const char *s = json_string_value(j);

	return s ? s : "";
}

static inline int golden_cmp_name(const void *a, const void *b)
{
	return strcmp(((const golden_case_t *)a)->name, ((const golden_case_t *)b)->name);
}

/* Load every *.json of dir, sorted by name. Returns the count (0 on error). */
static inline size_t golden_load(const char *dir, golden_case_t *out, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < cap) {
		char path[1024];
		size_t l = strlen(e->d_name);
		json_error_t err;
		json_t *raw;

		if (l < 6 || strcmp(e->d_name + l - 5, ".json") || l >= GOLDEN_NAME_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		out[n].c = json_load_file(path, 0, &err);
		if (!out[n].c) {
			fprintf(stderr, "golden: %s: %s\n", path, err.text);
			continue;
		}
		memcpy(out[n].name, e->d_name, l + 1); /* l < GOLDEN_NAME_MAX */
		raw = json_object_get(out[n].c, "request_raw");
		if (json_is_string(raw)) {
			out[n].len = json_string_length(raw);
			out[n].body = malloc(out[n].len + 1);
			if (out[n].body)
				memcpy(out[n].body, json_string_value(raw), out[n].len + 1);
		} else {
			out[n].body =
			    json_dumps(json_object_get(out[n].c, "request"), JSON_COMPACT);
			out[n].len = out[n].body ? strlen(out[n].body) : 0;
		}
		out[n].mutate =
		    !strcmp(golden_str(json_object_get(out[n].c, "endpoint")), "mutate");
		n++;
	}
	closedir(d);
	qsort(out, n, sizeof(*out), golden_cmp_name);
	return n;
}

static inline void golden_free(golden_case_t *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_decref(cases[i].c);
		free(cases[i].body);
	}
}

/* Decode base64 (RFC 4648, padded) into a new NUL-terminated buffer. */
static inline char *golden_b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), o = 0;
	char *out = malloc(n / 4 * 3 + 4);
	unsigned v = 0;
	int bits = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n && s[i] != '='; i++) {
		const char *tab =
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const char *p = strchr(tab, s[i]);

		if (!p || !s[i]) {
			free(out);
			return NULL;
		}
		v = (v << 6) | (unsigned)(p - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((v >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	*len = o;
	return out;
}

static inline int golden_fail(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int golden_fail(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
	return -1;
}

/* Whether got (a JSON Patch array) holds the same operations as want, in
 * any order. */
static inline int golden_patch_equal(const json_t *want, const json_t *got)
{
	size_t n = json_array_size(want);
	char used[512] = {0};

	if (!json_is_array(got) || json_array_size(got) != n || n > sizeof(used))
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < n; j++)
			if (!used[j] && json_equal(json_array_get(want, i), json_array_get(got, j)))
				break;
		if (j == n)
			return 0;
		used[j] = 1;
	}
	return 1;
}

/* The decoded patch of an AdmissionReview reply (new reference), or NULL. */
static inline json_t *golden_reply_patch(const json_t *resp)
{
	const char *b64 = json_string_value(json_object_get(resp, "patch"));
	size_t len;
	char *txt;
	json_t *p;

	if (!b64)
		return NULL;
	txt = golden_b64_decode(b64, &len);
	if (!txt)
		return NULL;
	p = json_loadb(txt, len, 0, NULL);
	free(txt);
	return p;
}

/* Compact JSON of j in a static buffer (for failure messages only). */
static inline const char *golden_dump(const json_t *j)
{
	static char buf[1024];
	size_t n = j ? json_dumpb(j, buf, sizeof(buf) - 1, JSON_COMPACT) : 0;

	if (!n)
		return "(none)";
	if (n >= sizeof(buf) - 1)
		return "(too long to show)";
	buf[n] = '\0';
	return buf;
}

/* Compare one reply with the case's expectation. 0 when it matches, else -1
 * with what differs in err. */
static inline int golden_check(const json_t *c, int status, const char *body, size_t len, char *err,
			       size_t cap)
{
	const json_t *exp = json_object_get(c, "expect");
	int want_status = (int)json_integer_value(json_object_get(exp, "http_status"));
	const char *want_msg = json_string_value(json_object_get(exp, "message_contains"));
	const char *want_warn = json_string_value(json_object_get(exp, "warning_contains"));
	const json_t *want_patch = json_object_get(exp, "patch");
	const json_t *want_code = json_object_get(exp, "code");
	const json_t *req = json_object_get(json_object_get(c, "request"), "request");
	json_t *reply, *resp, *patch;
	const char *msg, *uid;
	int rc = 0;

	if (status != want_status)
		return golden_fail(err, cap, "HTTP status %d, want %d (body: %.300s)", status,
				   want_status, body ? body : "");
	if (status != 200) {
		if (want_msg && (!body || !strstr(body, want_msg)))
			return golden_fail(err, cap, "body \"%.300s\" lacks \"%s\"",
					   body ? body : "", want_msg);
		return 0;
	}
	reply = json_loadb(body, len, 0, NULL);
	if (!reply)
		return golden_fail(err, cap, "reply is not JSON: %.300s", body);
	resp = json_object_get(reply, "response");
	uid = json_string_value(json_object_get(resp, "uid"));
	msg = json_string_value(json_object_get(json_object_get(resp, "status"), "message"));
	patch = golden_reply_patch(resp);
	if (strcmp(golden_str(json_object_get(reply, "apiVersion")), "admission.k8s.io/v1") ||
	    strcmp(golden_str(json_object_get(reply, "kind")), "AdmissionReview"))
		rc = golden_fail(err, cap, "reply apiVersion/kind wrong: %.300s", body);
	else if (!uid || strcmp(uid, golden_str(json_object_get(req, "uid"))))
		rc = golden_fail(err, cap, "reply uid \"%s\" does not echo the request's",
				 uid ? uid : "(none)");
	else if (json_is_true(json_object_get(resp, "allowed")) !=
		 json_is_true(json_object_get(exp, "allowed")))
		rc = golden_fail(err, cap, "allowed is %s, want %s (message: %s)",
				 json_is_true(json_object_get(resp, "allowed")) ? "true" : "false",
				 json_is_true(json_object_get(exp, "allowed")) ? "true" : "false",
				 msg ? msg : "");
	else if (json_is_integer(want_code) &&
		 json_integer_value(json_object_get(json_object_get(resp, "status"), "code")) !=
		     json_integer_value(want_code))
		rc = golden_fail(err, cap, "status code %lld, want %lld (message: %s)",
				 (long long)json_integer_value(
				     json_object_get(json_object_get(resp, "status"), "code")),
				 (long long)json_integer_value(want_code), msg ? msg : "");
	else if (json_is_integer(want_code) && json_integer_value(want_code) == 403 &&
		 strcmp(golden_str(json_object_get(json_object_get(resp, "status"), "reason")),
			"Forbidden"))
		rc = golden_fail(err, cap, "status reason is not Forbidden");
	else if (want_msg && (!msg || !strstr(msg, want_msg)))
		rc = golden_fail(err, cap, "message \"%s\" lacks \"%s\"", msg ? msg : "(none)",
				 want_msg);
	else if (json_is_array(want_patch) && !golden_patch_equal(want_patch, patch))
		rc = golden_fail(err, cap, "patch differs: got %.600s", golden_dump(patch));
	else if (!json_is_array(want_patch) && json_object_get(resp, "patch"))
		rc = golden_fail(err, cap, "unexpected patch: %.600s", golden_dump(patch));
	else if (json_object_get(resp, "patch") &&
		 strcmp(golden_str(json_object_get(resp, "patchType")), "JSONPatch"))
		rc = golden_fail(err, cap, "patchType is not JSONPatch");
	if (!rc && want_warn) {
		json_t *ws = json_object_get(resp, "warnings");
		int found = 0;

		for (size_t i = 0; i < json_array_size(ws); i++) {
			const char *w = json_string_value(json_array_get(ws, i));

			found |= w && strstr(w, want_warn) != NULL;
		}
		if (!found)
			rc = golden_fail(err, cap, "no warning contains \"%s\" (%.300s)", want_warn,
					 body);
	}
	for (size_t i = 0; !rc && i < json_array_size(json_object_get(resp, "warnings")); i++) {
		const char *w =
		    json_string_value(json_array_get(json_object_get(resp, "warnings"), i));

		if (!w || strlen(w) >= 120)
			rc = golden_fail(err, cap, "warning %zu is 120 bytes or longer", i);
	}
	json_decref(patch);
	json_decref(reply);
	return rc;
}

/* ---- A small RFC 6902 applier ("add" only, what gpuq emits) ---- */

/* Unescape one RFC 6901 reference token in place. */
static inline void golden_ptr_unescape(char *t)
{
	char *w = t;

	for (char *r = t; *r; r++) {
		if (r[0] == '~' && r[1] == '1') {
			*w++ = '/';
			r++;
		} else if (r[0] == '~' && r[1] == '0') {
			*w++ = '~';
			r++;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Apply one add op to doc; 0 ok, -1 when the parent does not exist. */
static inline int golden_apply_add(json_t *doc, const char *path, json_t *value)
{
	char buf[1024], *tok, *next;
	json_t *cur = doc;

	if (path[0] != '/' || strlen(path) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", path + 1);
	tok = buf;
	for (;;) {
		next = strchr(tok, '/');
		if (next)
			*next = '\0';
		golden_ptr_unescape(tok);
		if (!next) {
			if (json_is_object(cur))
				return json_object_set(cur, tok, value);
			if (json_is_array(cur) && !strcmp(tok, "-"))
				return json_array_append(cur, value);
			if (json_is_array(cur))
				return json_array_insert(cur, (size_t)strtoul(tok, NULL, 10),
							 value);
			return -1;
		}
		cur = json_is_object(cur)  ? json_object_get(cur, tok)
		      : json_is_array(cur) ? json_array_get(cur, (size_t)strtoul(tok, NULL, 10))
					   : NULL;
		if (!cur)
			return -1;
		tok = next + 1;
	}
}

/* Apply every op of patch to doc; 0 ok, -1 on an op it cannot apply. */
static inline int golden_apply_patch(json_t *doc, const json_t *patch)
{
	for (size_t i = 0; i < json_array_size(patch); i++) {
		const json_t *op = json_array_get(patch, i);

		if (strcmp(golden_str(json_object_get(op, "op")), "add") ||
		    golden_apply_add(doc, golden_str(json_object_get(op, "path")),
				     json_object_get(op, "value")))
			return -1;
	}
	return 0;
}

#endif

/*
 * policy_json.h: the part of policy/'s interface that takes or hands out
 * jansson values. policy.h names no jansson type, so the modules that only
 * read a snapshot (webhook, engine, the drivers' other files) never see
 * jansson; include this header only where jansson values are held already:
 * the simulator's trace reader (sim/trace.c), the controller building a
 * snapshot from the objects it watches (controller/snapshot.c), the
 * report's live reader (cmd/report_live.c), and tests. Everything here
 * follows jansson's borrowed-reference rules: a json_t passed in stays the
 * caller's, a json_t passed to a callback is borrowed for the call.
 *
 * It also holds gpuq's one field decoder over jansson values (policy_jdec_*,
 * policy/jdec.c): the policy kinds are read with it, and so is the
 * simulator's Trace document, so both refuse a bad field in the same words.
 */
#ifndef GPUQ_POLICY_JSON_H
#define GPUQ_POLICY_JSON_H

#include <jansson.h>

#include "policy/policy.h"

/* Decode one object (apiVersion, kind, metadata, spec...) and add it. Kinds:
 *   v1 Namespace, LimitRange, ResourceQuota; scheduling.k8s.io/v1 PriorityClass;
 *   gpuq.dev/v1beta1, kueue.x-k8s.io/v1beta1 and kueue.x-k8s.io/v1beta2
 *   ResourceFlavor, ClusterQueue, LocalQueue, Cohort;
 *   resource.k8s.io/v1, v1beta2, v1beta1 ResourceClaimTemplate;
 *   node.k8s.io/v1 RuntimeClass.
 * Field checks happen here (types, enums, quantities, names, per-object
 * caps); checks across objects happen in policy_finish(). Errors (diag names
 * kind, object, field path and value: `ClusterQueue "a": spec.x: ...`):
 * GPUQ_EINVAL bad field, GPUQ_EEXIST duplicate name, GPUQ_ELIMIT a cap,
 * GPUQ_ENOMEM. On error the object is not added, but an implied namespace it
 * named may remain: a loader drops the policy after any error. Only before
 * policy_finish. */
int policy_add_json(policy_t *p, const json_t *obj, gpuq_diag_t *diag);

/* ---- The field decoder ----
 *
 * Typed reads of a document's members, each refusal one sentence naming the
 * object, the field path and the value:
 *
 *   ClusterQueue "a": spec.resourceGroups[0].flavors: must be a list, not "x"
 *
 * The caller walks the document and keeps the path in step: push a key or an
 * index before reading below it, pop back after. Every member getter looks
 * key up in obj (an absent or null member is absent: GPUQ_OK with *out
 * untouched, or "required"), checks its type and bounds, and names the
 * member's path on refusal. Strings are borrowed from the document. No
 * allocation; GPUQ_EINVAL for a bad field, GPUQ_ERANGE for a number out of
 * its range, GPUQ_ELIMIT for a list past its cap. Single-threaded, one
 * document at a time. */

/* A field path in messages (longer paths are cut; each pushed key at most
 * 200 bytes). */
#define POLICY_JDEC_PATH_MAX 512

typedef struct {
	gpuq_diag_t *diag;		 /* where refusals go */
	char what[POLICY_STRING_MAX];	 /* the object, first in every message:
					    `ClusterQueue "a"`; "" for none */
	char path[POLICY_JDEC_PATH_MAX]; /* `spec.resourceGroups[0]`; "" at the root */
	size_t plen;			 /* strlen(path) */
} policy_jdec_t;

/* Start at the root of a document: path empty, what copied (NULL: none). */
void policy_jdec_init(policy_jdec_t *d, gpuq_diag_t *diag, const char *what);

/* Write "<what>: <path>: <fmt...>" into the diagnostic (what and path left
 * out when empty); returns rc. */
int policy_jdec_fail(policy_jdec_t *d, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for the member key below the path ("<path>.<key>: ..."). */
int policy_jdec_fail_at(policy_jdec_t *d, const char *key, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "must be <want>, not <v>" at the path (a value of the wrong type). */
int policy_jdec_want(policy_jdec_t *d, const json_t *v, const char *want);

/* Push ".key" ("key" at the root), "[i]" or "[key]" on the path; each
 * returns the old length for policy_jdec_pop. */
size_t policy_jdec_key(policy_jdec_t *d, const char *key);
size_t policy_jdec_idx(policy_jdec_t *d, size_t i);
size_t policy_jdec_mapkey(policy_jdec_t *d, const char *key);
void policy_jdec_pop(policy_jdec_t *d, size_t len);

/* A short rendering of v for messages: a string quoted (cut at 100 bytes),
 * 8, 0.1 (the shortest form that reads back), true, null, "a mapping", "a
 * list". */
void policy_jdec_value(const json_t *v, char *buf, size_t cap);
/* Whether v is null, [] or {}. */
bool policy_jdec_empty(const json_t *v);

/* Refuse obj unless it is a mapping ("must be a mapping, not ..."), then
 * refuse its first key outside allowed (NULL-terminated): "unknown field";
 * keys in unsupported (NULL-terminated, may be NULL) get "not supported by
 * gpuq" unless their value is empty. */
int policy_jdec_keys(policy_jdec_t *d, const json_t *obj, const char *const *allowed,
		     const char *const *unsupported);

/* Member key of obj of any type; NULL when absent or null. */
int policy_jdec_member(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
		       const json_t **out);
/* A mapping; a list of at most max entries. */
int policy_jdec_obj(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
		    const json_t **out);
int policy_jdec_arr(policy_jdec_t *d, const json_t *obj, const char *key, bool required, size_t max,
		    const json_t **out);
/* A string of at most max bytes ("" allowed), borrowed from obj. */
int policy_jdec_str(policy_jdec_t *d, const json_t *obj, const char *key, bool required, size_t max,
		    const char **out);
/* The value v itself (the path already at it) as a string of at most max
 * bytes, borrowed from v. */
int policy_jdec_str_value(policy_jdec_t *d, const json_t *v, size_t max, const char **out);
/* An integer in [min, max]. */
int policy_jdec_int(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
		    int64_t min, int64_t max, int64_t *out);
/* true or false. */
int policy_jdec_bool(policy_jdec_t *d, const json_t *obj, const char *key, bool *out);
/* One of names[] (NULL-terminated): *out = its index. */
int policy_jdec_enum(policy_jdec_t *d, const json_t *obj, const char *key, const char *const *names,
		     int *out);
/* A duration in milliseconds: an integer (ms, 0 to GPUQ_DURATION_MAX_MS) or
 * a string gpuq_duration_parse reads ("250ms", "1.5s", "2m", "1h"). */
int policy_jdec_duration(policy_jdec_t *d, const json_t *obj, const char *key, bool required,
			 int64_t *out_ms);

#endif

/* webhook/object.c: one Pod or batch/v1 Job from a LIST or a WATCH, decoded
 * for the controller by the admission rules' own code: the same reader
 * (admit_json.c), the same workload decoding (webhook_workload_decode: GPU
 * detection, pod count, queue label, pod groups), the same LimitRange
 * defaulting and effective request (webhook_workload_default,
 * webhook_workload_pod_request). What only the controller needs (identity,
 * creation time, priority, scheduling constraints, status, owner) is read
 * here. The strings kept are copied into one allocation; the parsed document
 * and the container array go before returning. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/admit_internal.h"

/* Strings one object can keep: 20 single ones, a key and a value per
 * nodeSelector entry, four per toleration. */
#define SLOTS_MAX (20 + 2 * WEBHOOK_OBJECT_SELECTOR_MAX + 4 * WEBHOOK_OBJECT_TOLERATIONS_MAX)

typedef struct {
	webhook_object_t *o;	       /* being filled */
	webhook_fields_t f;	       /* refusals: kind, metadata.name ("" until known) */
	const char **slots[SLOTS_MAX]; /* members of o pointing into the document */
	size_t n_slots;		       /* entries in slots */
	size_t bytes;		       /* their lengths, NULs included */
} decoder_t;

/* Keep s (borrowed from the document until copied) in *slot. */
static int keep(decoder_t *d, const char **slot, const char *s, const char *path)
{
	size_t len = strlen(s);

	if (len > WEBHOOK_OBJECT_STR_MAX)
		return webhook_fields_refuse(&d->f, path, "%zu bytes (\"%.40s...\"), at most %d",
					     len, s, WEBHOOK_OBJECT_STR_MAX);
	GPUQ_ASSERT(d->n_slots < SLOTS_MAX);
	*slot = s;
	d->slots[d->n_slots++] = slot;
	d->bytes += len + 1;
	return GPUQ_OK;
}

/* A string member (webhook_fields_str) kept in *slot. */
static int str_member(decoder_t *d, const webhook_jv_t *obj, const char *key, const char *path,
		      bool required, const char **slot)
{
	const char *s;
	int rc = webhook_fields_str(&d->f, obj, key, path, required, &s);

	*slot = NULL;
	return rc || !s ? rc : keep(d, slot, s, path);
}

/* ---- Timestamps ---- */

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* n decimal digits of s into *out. */
static bool digits(const char *s, int n, int64_t *out)
{
	*out = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*out = *out * 10 + (s[i] - '0');
	}
	return true;
}

/* RFC 3339 as metav1.Time writes it ("2024-05-01T12:00:00Z"), also with a
 * fraction (cut to milliseconds) or a numeric offset, into ms since the
 * epoch. No clock, no locale, no time zone database. */
static bool parse_time(const char *s, int64_t *ms)
{
	int64_t y, mo, d, h, mi, sec, frac = 0, off = 0, oh, om, scale = 100;
	const char *p = s + 19;

	if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return false;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return false;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += scale * (*p - '0');
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && digits(p + 1, 2, &oh) && p[3] == ':' &&
		   digits(p + 4, 2, &om) && oh < 24 && om < 60) {
		off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return false;
	}
	if (*p)
		return false;
	*ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) - off) * 1000 + frac;
	return true;
}

/* ---- Parts ---- */

/* The ownerReference with controller: true (the first one). */
static int decode_owner(decoder_t *d, const webhook_jv_t *meta)
{
	webhook_object_t *o = d->o;
	const webhook_jv_t *owners;
	char path[4][64];
	size_t i = 0;
	int rc;

	rc = webhook_fields_typed(&d->f, meta, "ownerReferences", WEBHOOK_JV_ARRAY,
				  "metadata.ownerReferences", &owners);
	for (const webhook_jv_t *r = owners ? owners->first : NULL; !rc && r; r = r->next, i++) {
		snprintf(path[0], sizeof(path[0]), "metadata.ownerReferences[%zu]", i);
		if (!webhook_jv_is(r, WEBHOOK_JV_OBJECT))
			return webhook_fields_want(&d->f, path[0], r, WEBHOOK_JV_OBJECT);
		if (!webhook_jv_is(webhook_jv_get(r, "controller"), WEBHOOK_JV_TRUE) ||
		    o->owner_kind)
			continue;
		snprintf(path[0], sizeof(path[0]), "metadata.ownerReferences[%zu].apiVersion", i);
		snprintf(path[1], sizeof(path[1]), "metadata.ownerReferences[%zu].kind", i);
		snprintf(path[2], sizeof(path[2]), "metadata.ownerReferences[%zu].name", i);
		snprintf(path[3], sizeof(path[3]), "metadata.ownerReferences[%zu].uid", i);
		rc = str_member(d, r, "apiVersion", path[0], true, &o->owner_api_version);
		if (!rc)
			rc = str_member(d, r, "kind", path[1], true, &o->owner_kind);
		if (!rc)
			rc = str_member(d, r, "name", path[2], true, &o->owner_name);
		if (!rc)
			rc = str_member(d, r, "uid", path[3], true, &o->owner_uid);
	}
	return rc;
}

static int decode_meta(decoder_t *d, const webhook_jv_t *root)
{
	webhook_object_t *o = d->o;
	const webhook_jv_t *meta;
	const char *created;
	int rc;

	rc = webhook_fields_typed(&d->f, root, "metadata", WEBHOOK_JV_OBJECT, "metadata", &meta);
	if (!rc)
		rc = str_member(d, meta, "name", "metadata.name", true, &o->name);
	if (rc)
		return rc;
	d->f.name = o->name;
	rc = str_member(d, meta, "namespace", "metadata.namespace", true, &o->namespace_);
	if (!rc)
		rc = str_member(d, meta, "uid", "metadata.uid", true, &o->uid);
	if (!rc)
		rc = str_member(d, meta, "resourceVersion", "metadata.resourceVersion", false,
				&o->resource_version);
	if (!rc && !o->resource_version)
		rc = keep(d, &o->resource_version, "", "metadata.resourceVersion");
	if (!rc)
		rc = webhook_fields_str(&d->f, meta, "creationTimestamp",
					"metadata.creationTimestamp", true, &created);
	if (rc)
		return rc;
	if (!created || !parse_time(created, &o->created_ms))
		return webhook_fields_refuse(
		    &d->f, "metadata.creationTimestamp",
		    "invalid value \"%.64s\": want RFC 3339 (2024-05-01T12:00:00Z)", created);
	return decode_owner(d, meta);
}

/* The priority as the Priority admission plugin gives it to the Pods. */
static int decode_priority(decoder_t *d, const policy_t *policy, const webhook_workload_t *w)
{
	webhook_object_t *o = d->o;
	const policy_priorityclass_t *pc = NULL;
	const webhook_jv_t *v = webhook_jv_get(w->pod_spec, "priority");
	char path[64];
	int64_t n;
	int rc;

	snprintf(path, sizeof(path), "%s.priorityClassName", w->spec_field);
	rc = str_member(d, w->pod_spec, "priorityClassName", path, false, &o->priority_class);
	if (rc)
		return rc;
	if (v && !webhook_jv_is(v, WEBHOOK_JV_NULL)) {
		snprintf(path, sizeof(path), "%s.priority", w->spec_field);
		rc = webhook_fields_int(&d->f, w->pod_spec, "priority", path, 0, INT32_MIN,
					INT32_MAX, &n);
		o->priority = (int32_t)n;
		return rc;
	}
	if (o->priority_class && policy) {
		pc = policy_priorityclass_find(policy, o->priority_class);
		o->priority_class_unknown = !pc;
	} else if (o->priority_class) {
		o->priority_class_unknown = true;
	} else if (policy && (pc = policy_priorityclass_default(policy))) {
		rc = keep(d, &o->priority_class, pc->name, path);
	}
	o->priority = pc ? pc->value : 0;
	return rc;
}

static int decode_selector(decoder_t *d, const webhook_workload_t *w)
{
	webhook_object_t *o = d->o;
	const webhook_jv_t *sel, *v;
	char path[96];
	int rc;

	snprintf(path, sizeof(path), "%s.nodeSelector", w->spec_field);
	rc =
	    webhook_fields_typed(&d->f, w->pod_spec, "nodeSelector", WEBHOOK_JV_OBJECT, path, &sel);
	if (rc || !sel)
		return rc;
	if (sel->n > WEBHOOK_OBJECT_SELECTOR_MAX)
		return webhook_fields_refuse(&d->f, path, "%u entries, at most %d", sel->n,
					     WEBHOOK_OBJECT_SELECTOR_MAX);
	for (const webhook_jv_t *k = sel->first; k; k = v->next) {
		webhook_node_label_t *e = &o->node_selector[o->n_node_selector++];

		v = k->next;
		snprintf(path, sizeof(path), "%s.nodeSelector[%.40s]", w->spec_field, k->s);
		if (!webhook_jv_is(v, WEBHOOK_JV_STRING))
			return webhook_fields_want(&d->f, path, v, WEBHOOK_JV_STRING);
		rc = keep(d, &e->key, k->s, path);
		if (!rc)
			rc = keep(d, &e->value, v->s, path);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

static int decode_tolerations(decoder_t *d, const webhook_workload_t *w)
{
	webhook_object_t *o = d->o;
	const webhook_jv_t *tols;
	char path[96];
	size_t i = 0;
	int rc;

	snprintf(path, sizeof(path), "%s.tolerations", w->spec_field);
	rc = webhook_fields_typed(&d->f, w->pod_spec, "tolerations", WEBHOOK_JV_ARRAY, path, &tols);
	if (rc || !tols)
		return rc;
	if (tols->n > WEBHOOK_OBJECT_TOLERATIONS_MAX)
		return webhook_fields_refuse(&d->f, path, "%u entries, at most %d", tols->n,
					     WEBHOOK_OBJECT_TOLERATIONS_MAX);
	for (const webhook_jv_t *t = tols->first; t; t = t->next, i++) {
		webhook_toleration_t *e = &o->tolerations[o->n_tolerations++];
		static const char *const members[] = {"key", "operator", "value", "effect"};
		const char **slots[] = {&e->key, &e->op, &e->value, &e->effect};

		snprintf(path, sizeof(path), "%s.tolerations[%zu]", w->spec_field, i);
		if (!webhook_jv_is(t, WEBHOOK_JV_OBJECT))
			return webhook_fields_want(&d->f, path, t, WEBHOOK_JV_OBJECT);
		for (size_t m = 0; m < sizeof(members) / sizeof(*members) && !rc; m++) {
			snprintf(path, sizeof(path), "%s.tolerations[%zu].%s", w->spec_field, i,
				 members[m]);
			rc = str_member(d, t, members[m], path, false, slots[m]);
		}
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Whether conditions (an array) has one of the given type with status
 * "True". */
static bool condition_true(const webhook_jv_t *conditions, const char *type)
{
	for (const webhook_jv_t *c = webhook_jv_first(conditions); c; c = c->next) {
		const char *t = webhook_json_str(c, "type"), *st = webhook_json_str(c, "status");

		if (t && st && !strcmp(t, type) && !strcmp(st, "True"))
			return true;
	}
	return false;
}

/* Largest pod count taken from a Job's status (Kubernetes caps parallelism
 * and completions far below; a count above is a broken object). */
#define COUNT_MAX ((int64_t)1 << 40)

static int decode_status(decoder_t *d, const webhook_jv_t *root, const webhook_workload_t *w)
{
	webhook_object_t *o = d->o;
	const webhook_jv_t *status, *conds;
	int rc;

	rc = webhook_fields_typed(&d->f, root, "status", WEBHOOK_JV_OBJECT, "status", &status);
	if (!rc)
		rc = webhook_fields_typed(&d->f, status, "conditions", WEBHOOK_JV_ARRAY,
					  "status.conditions", &conds);
	if (rc)
		return rc;
	if (o->kind == WEBHOOK_KIND_JOB) {
		rc = webhook_fields_int(&d->f, status, "active", "status.active", 0, 0, COUNT_MAX,
					&o->active);
		if (!rc)
			rc = webhook_fields_int(&d->f, status, "succeeded", "status.succeeded", 0,
						0, COUNT_MAX, &o->succeeded);
		if (!rc)
			rc = webhook_fields_int(&d->f, status, "failed", "status.failed", 0, 0,
						COUNT_MAX, &o->failed);
		if (!rc)
			rc = webhook_fields_int(&d->f, status, "ready", "status.ready", 0, 0,
						COUNT_MAX, &o->ready_pods);
		o->finished = condition_true(conds, "Complete") || condition_true(conds, "Failed");
		return rc;
	}
	rc = str_member(d, status, "phase", "status.phase", false, &o->phase);
	if (!rc)
		rc = str_member(d, w->pod_spec, "nodeName", "spec.nodeName", false, &o->node_name);
	o->finished = o->phase && (!strcmp(o->phase, "Succeeded") || !strcmp(o->phase, "Failed"));
	o->ready = condition_true(conds, "Ready");
	o->ready_pods = o->ready;
	return rc;
}

/* The per-pod request: a Job's template with the LimitRange defaults its
 * Pods will get (as /validate judges it); a Pod as it is (LimitRanger ran
 * when it was created, and today's ranges are not what it got). */
static int decode_requests(decoder_t *d, const policy_t *policy, webhook_workload_t *w)
{
	webhook_object_t *o = d->o;
	quota_reslist_t requests, one;
	int rc = GPUQ_OK;

	if (o->kind == WEBHOOK_KIND_JOB)
		rc = webhook_workload_default(w, policy, o->namespace_);
	if (!rc)
		rc = webhook_workload_pod_request(w, &requests, &one);
	if (rc)
		return webhook_fields_refuse(
		    &d->f, w->spec_field,
		    "too many resources (at most %d) or a request above 2^63-1 once "
		    "containers and LimitRange defaults are added",
		    QUOTA_RESLIST_MAX);
	for (size_t i = 0; i < one.n; i++) {
		webhook_request_t *r = &o->requests[o->n_requests++];

		memcpy(r->name, one.items[i].name, sizeof(r->name));
		r->qty = one.items[i].qty;
		r->amount = quota_qty_amount(r->name, &r->qty);
	}
	return GPUQ_OK;
}

/* Copy every kept string into one allocation and point the members there. */
static int own_strings(decoder_t *d)
{
	char *p = malloc(d->bytes ? d->bytes : 1);

	if (!p)
		return GPUQ_ENOMEM;
	d->o->mem = p;
	for (size_t i = 0; i < d->n_slots; i++) {
		size_t n = strlen(*d->slots[i]) + 1;

		memcpy(p, *d->slots[i], n);
		*d->slots[i] = p;
		p += n;
	}
	return GPUQ_OK;
}

static webhook_kind_t kind_of(const webhook_jv_t *root)
{
	const char *api = webhook_json_str(root, "apiVersion");
	const char *kind = webhook_json_str(root, "kind");

	if (api && kind && !strcmp(api, "v1") && !strcmp(kind, "Pod"))
		return WEBHOOK_KIND_POD;
	if (api && kind && !strcmp(api, "batch/v1") && !strcmp(kind, "Job"))
		return WEBHOOK_KIND_JOB;
	return WEBHOOK_KIND_OTHER;
}

/* Everything after the kind is known. */
static int decode_parts(decoder_t *d, const policy_t *policy, const webhook_config_t *cfg,
			const webhook_jv_t *root)
{
	webhook_object_t *o = d->o;
	webhook_workload_t w;
	int rc;

	rc = decode_meta(d, root);
	if (rc)
		return rc;
	rc = webhook_workload_decode(&w, policy, cfg, o->namespace_, o->kind, root, d->f.diag);
	if (!rc) {
		o->gpu = w.gpu;
		o->suspend = w.suspend;
		o->admitted = w.admitted;
		o->gated = o->kind == WEBHOOK_KIND_POD && webhook_pod_gated(w.pod_spec);
		o->pods = o->kind == WEBHOOK_KIND_JOB ? w.pods : 1;
		o->pod_group_total = w.pod_group ? w.pods : 0;
		rc = w.queue ? keep(d, &o->queue, w.queue, "metadata.labels") : GPUQ_OK;
	}
	if (!rc && w.pod_group)
		rc = keep(d, &o->pod_group, w.pod_group, "metadata.labels");
	if (!rc)
		rc = decode_priority(d, policy, &w);
	if (!rc)
		rc = decode_selector(d, &w);
	if (!rc)
		rc = decode_tolerations(d, &w);
	if (!rc)
		rc = decode_status(d, root, &w);
	if (!rc)
		rc = decode_requests(d, policy, &w);
	webhook_workload_deinit(&w);
	return rc;
}

int webhook_object_decode(const policy_t *policy, const webhook_config_t *cfg, const char *json,
			  size_t len, webhook_object_t *out, gpuq_diag_t *diag)
{
	decoder_t d = {.o = out, .f = {.kind_name = "object", .name = "", .diag = diag}};
	webhook_jdoc_t doc = {NULL, NULL};
	char err[GPUQ_DIAG_MAX / 2];
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > WEBHOOK_OBJECT_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "object of %zu bytes, at most %u", len,
				     WEBHOOK_OBJECT_MAX);
	rc = webhook_jdoc_parse(&doc, json ? json : "", json ? len : 0, err, sizeof(err));
	if (rc) {
		webhook_jdoc_free(&doc);
		return rc == GPUQ_ENOMEM
			   ? rc
			   : gpuq_diag_set(diag, GPUQ_EINVAL, "object: not JSON: %s", err);
	}
	out->kind =
	    webhook_jv_is(doc.root, WEBHOOK_JV_OBJECT) ? kind_of(doc.root) : WEBHOOK_KIND_OTHER;
	if (out->kind == WEBHOOK_KIND_OTHER) {
		const char *api = webhook_json_str(doc.root, "apiVersion");
		const char *kind = webhook_json_str(doc.root, "kind");

		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "object: apiVersion \"%.64s\", kind \"%.64s\": gpuq decodes v1 "
				   "Pod and batch/v1 Job only",
				   api ? api : "", kind ? kind : "");
	} else {
		d.f.kind_name = out->kind == WEBHOOK_KIND_POD ? "Pod" : "Job";
		rc = decode_parts(&d, policy, cfg, doc.root);
	}
	if (!rc)
		rc = own_strings(&d); /* before the document goes */
	webhook_jdoc_free(&doc);
	if (rc)
		webhook_object_deinit(out);
	return rc;
}

void webhook_object_deinit(webhook_object_t *o)
{
	if (!o)
		return;
	free(o->mem);
	memset(o, 0, sizeof(*o));
}

/*
 * queue/util.c: interned names (the containers themselves are inline in internal.h),
 * names checked, and the label and toleration lists built from them. A leaf of queue/.
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* Interned names                                                      */
/* ================================================================== */

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const names_t *t = ctx;

	return strcmp(t->s[id], key) == 0;
}

int queue_names_find(const names_t *t, const char *s, uint32_t *id)
{
	return queue_map_find(&t->map, gpuq_fnv1a32_str(GPUQ_FNV1A32_BASIS, s), name_eq, t, s, id)
		   ? GPUQ_OK
		   : GPUQ_ENOTFOUND;
}

int queue_names_intern(names_t *t, const char *s, uint32_t *id)
{
	size_t len;
	char *c;

	if (queue_names_find(t, s, id) == GPUQ_OK)
		return GPUQ_OK;
	len = strlen(s);
	if (queue_grow(&t->s, &t->cap, t->n + 1, sizeof(*t->s)) || queue_map_reserve(&t->map))
		return GPUQ_ENOMEM;
	c = malloc(len + 1);
	if (!c)
		return GPUQ_ENOMEM;
	memcpy(c, s, len + 1);
	t->s[t->n] = c;
	queue_map_put(&t->map, gpuq_fnv1a32_str(GPUQ_FNV1A32_BASIS, s), (uint32_t)t->n);
	*id = (uint32_t)t->n++;
	return GPUQ_OK;
}

void queue_names_free(names_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->map.e);
}

const char *queue_res_name(const queue_t *q, uint32_t r)
{
	return r < q->res_names.n ? q->res_names.s[r] : "?";
}

const char *queue_flv_name(const queue_t *q, uint32_t f)
{
	return f < q->flv_names.n ? q->flv_names.s[f] : "?";
}

/* ================================================================== */
/* Names checked, lists built                                          */
/* ================================================================== */

int queue_check_name(const char *what, const char *s, bool allow_empty, gpuq_diag_t *diag)
{
	if (!s)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: missing", what);
	if (!allow_empty && !*s)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: empty", what);
	if (strlen(s) > QUEUE_NAME_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s \"%.40s...\": longer than %d bytes",
				     what, s, QUEUE_NAME_MAX);
	return GPUQ_OK;
}

/* Intern a resource name (the caller checked it). */
int queue_res_intern(queue_t *q, const char *name, uint32_t *id, gpuq_diag_t *diag)
{
	int rc = queue_check_name("resource name", name, false, diag);

	if (rc)
		return rc;
	if (queue_names_find(&q->res_names, name, id) == GPUQ_OK)
		return GPUQ_OK;
	if (q->res_names.n >= QUEUE_RESOURCES_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "resource \"%s\": more than %d resources",
				     name, QUEUE_RESOURCES_MAX);
	if (q->n_topo_flavors) /* the nodes' capacity of it is known now */
		q->topo_stale = true;
	return queue_names_intern(&q->res_names, name, id);
}

int queue_str_intern(queue_t *q, const char *what, const char *s, uint32_t *id, gpuq_diag_t *diag)
{
	int rc = queue_check_name(what, s, true, diag);

	if (rc)
		return rc;
	return queue_names_intern(&q->strs, s, id);
}

int queue_tols_build(queue_t *q, const queue_toleration_t *in, size_t n, tol_t **out,
		     gpuq_diag_t *diag)
{
	tol_t *t;
	int rc;

	*out = NULL;
	if (n > QUEUE_SELECTORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %d tolerations",
				     QUEUE_SELECTORS_MAX);
	if (!n)
		return GPUQ_OK;
	t = calloc(n, sizeof(*t));
	if (!t)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (in[i].op != QUEUE_TOLERATE_EQUAL && in[i].op != QUEUE_TOLERATE_EXISTS) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL, "toleration %zu: bad operator", i);
			goto fail;
		}
		if ((unsigned)in[i].effect > QUEUE_EFFECT_ANY) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL, "toleration %zu: bad effect", i);
			goto fail;
		}
		if (in[i].op == QUEUE_TOLERATE_EQUAL && (!in[i].key || !*in[i].key)) {
			rc = gpuq_diag_set(diag, GPUQ_EINVAL,
					   "toleration %zu: operator Equal needs a key", i);
			goto fail;
		}
		rc = queue_str_intern(q, "toleration key", in[i].key ? in[i].key : "", &t[i].key,
				      diag);
		if (rc)
			goto fail;
		rc = queue_str_intern(q, "toleration value",
				      in[i].op == QUEUE_TOLERATE_EQUAL && in[i].value ? in[i].value
										      : "",
				      &t[i].val, diag);
		if (rc)
			goto fail;
		t[i].op = (uint8_t)in[i].op;
		t[i].effect = (uint8_t)in[i].effect;
	}
	*out = t;
	return GPUQ_OK;
fail:
	free(t);
	return rc;
}

int queue_labels_build(queue_t *q, const char *what, const queue_label_t *in, size_t n, size_t max,
		       kv_t **out, gpuq_diag_t *diag)
{
	kv_t *l;
	int rc;

	*out = NULL;
	if (n > max)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: more than %zu entries", what, max);
	if (!n)
		return GPUQ_OK;
	l = calloc(n, sizeof(*l));
	if (!l)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		rc = queue_check_name(what, in[i].key, false, diag);
		if (rc)
			goto fail;
		rc = queue_str_intern(q, what, in[i].key, &l[i].key, diag);
		if (rc)
			goto fail;
		rc = queue_str_intern(q, what, in[i].value ? in[i].value : "", &l[i].val, diag);
		if (rc)
			goto fail;
		for (size_t j = 0; j < i; j++) {
			if (l[j].key == l[i].key) {
				rc = gpuq_diag_set(diag, GPUQ_EINVAL, "%s: key \"%s\" twice", what,
						   in[i].key);
				goto fail;
			}
		}
	}
	*out = l;
	return GPUQ_OK;
fail:
	free(l);
	return rc;
}

/* Whether one of tols tolerates taint tn (an Exists with an empty key
 * tolerates every taint): a flavor's taints (workload.c) and a node's
 * (topology.c) alike. */
bool queue_tolerates(const queue_t *q, const tol_t *tols, size_t n, const taint_t *tn)
{
	for (size_t i = 0; i < n; i++) {
		const tol_t *t = &tols[i];

		if (t->effect != QUEUE_EFFECT_ANY && t->effect != tn->effect)
			continue;
		if (t->op == QUEUE_TOLERATE_EXISTS) {
			if (!q->strs.s[t->key][0] || t->key == tn->key)
				return true;
			continue;
		}
		if (t->key == tn->key && t->val == tn->val)
			return true;
	}
	return false;
}

/* The entry of labels v (n of them) with interned key `key`, or NULL. */
const kv_t *queue_kv_get(const kv_t *v, size_t n, uint32_t key)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].key == key)
			return &v[i];
	return NULL;
}

/*
 * Resource lists (quota.h): small insertion-ordered maps from resource name
 * to quantity, capped at QUOTA_RESLIST_MAX entries.
 */
#include "quota/quota.h"

#include <string.h>

/* The entry named name, or NULL. Every admission review looks names up by
 * the dozen in lists of a few: the first byte (distinct among the usual
 * names: cpu, memory, nvidia.com/gpu) settles most before a strcmp. */
static quota_res_t *find(const quota_reslist_t *list, const char *name)
{
	for (size_t i = 0; i < list->n; i++) {
		const quota_res_t *r = &list->items[i];

		if (r->name[0] == name[0] && strcmp(r->name, name) == 0)
			return (quota_res_t *)r;
	}
	return NULL;
}

const quota_qty_t *quota_reslist_get(const quota_reslist_t *list, const char *name)
{
	const quota_res_t *r = find(list, name);

	return r ? &r->qty : NULL;
}

void quota_reslist_copy(quota_reslist_t *dst, const quota_reslist_t *src)
{
	dst->n = src->n;
	memcpy(dst->items, src->items, src->n * sizeof(src->items[0]));
}

bool quota_reslist_same(const quota_reslist_t *a, const quota_reslist_t *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const quota_qty_t *q = quota_reslist_get(b, a->items[i].name);

		if (!q || quota_qty_cmp(q, &a->items[i].qty) != 0)
			return false;
	}
	return true;
}

/* Append name with qty (name known absent). */
static int append(quota_reslist_t *list, const char *name, const quota_qty_t *qty)
{
	size_t len = strlen(name);
	quota_res_t *r;

	if (len == 0)
		return GPUQ_EINVAL;
	if (len >= QUOTA_RES_NAME_MAX || list->n >= QUOTA_RESLIST_MAX)
		return GPUQ_ELIMIT;
	r = &list->items[list->n++];
	memcpy(r->name, name, len + 1);
	r->qty = *qty;
	return GPUQ_OK;
}

int quota_reslist_set(quota_reslist_t *list, const char *name, const quota_qty_t *qty)
{
	quota_res_t *r = find(list, name);

	if (!r)
		return append(list, name, qty);
	r->qty = *qty;
	return GPUQ_OK;
}

int quota_reslist_add(quota_reslist_t *list, const char *name, const quota_qty_t *qty)
{
	quota_res_t *r = find(list, name);
	quota_qty_t sum;
	int rc;

	if (!r)
		return append(list, name, qty);
	rc = quota_qty_add(&r->qty, qty, &sum);
	if (rc)
		return rc;
	r->qty = sum;
	return GPUQ_OK;
}

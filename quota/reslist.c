/*
 * Resource lists (quota.h): small insertion-ordered maps from resource name
 * to quantity, capped at QUOTA_RESLIST_MAX entries.
 */
#include "quota/quota.h"

#include <string.h>

static quota_res_t *find(quota_reslist_t *list, const char *name)
{
	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->items[i].name, name) == 0)
			return &list->items[i];
	return NULL;
}

const quota_qty_t *quota_reslist_get(const quota_reslist_t *list, const char *name)
{
	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->items[i].name, name) == 0)
			return &list->items[i].qty;
	return NULL;
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

/* The entry for name, appended (zero) when absent. */
static int entry(quota_reslist_t *list, const char *name, quota_res_t **out)
{
	quota_res_t *r = find(list, name);
	size_t len = strlen(name);

	if (!r) {
		if (len == 0)
			return GPUQ_EINVAL;
		if (len >= QUOTA_RES_NAME_MAX || list->n >= QUOTA_RESLIST_MAX)
			return GPUQ_ELIMIT;
		r = &list->items[list->n++];
		memcpy(r->name, name, len + 1);
		r->qty.nano = 0;
		r->qty.format = QUOTA_QTY_DECIMAL_SI;
	}
	*out = r;
	return GPUQ_OK;
}

int quota_reslist_set(quota_reslist_t *list, const char *name, const quota_qty_t *qty)
{
	quota_res_t *r;
	int rc = entry(list, name, &r);

	if (rc)
		return rc;
	r->qty = *qty;
	return GPUQ_OK;
}

int quota_reslist_add(quota_reslist_t *list, const char *name, const quota_qty_t *qty)
{
	quota_res_t *r;
	quota_qty_t sum;
	int rc;

	if (!quota_reslist_get(list, name))
		return quota_reslist_set(list, name, qty);
	rc = entry(list, name, &r);
	if (rc)
		return rc;
	rc = quota_qty_add(&r->qty, qty, &sum);
	if (rc)
		return rc;
	r->qty = sum;
	return GPUQ_OK;
}

/*
 * Effective pod requests and limits (quota.h): API defaulting of requests
 * from limits, the sidecar-aware aggregation of KEP-753, pod overhead, and
 * the resource-name classes the apiserver uses.
 */
#include "quota/quota.h"

#include <string.h>

/* (2^63 - 1) units in nano-units, the largest magnitude of a quantity. */
#define QTY_MAX_NANO ((__int128)INT64_MAX * 1000000000)

bool quota_res_is_native(const char *name)
{
	return strchr(name, '/') == NULL || strstr(name, "kubernetes.io/") != NULL;
}

bool quota_res_is_extended(const char *name)
{
	return !quota_res_is_native(name) && strncmp(name, "requests.", 9) != 0;
}

const char *const quota_known_resources[QUOTA_KNOWN_RESOURCES] = {
    "cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "nvidia.com/gpu.shared", "pods"};

int quota_known_resource(const char *name)
{
	for (int k = 0; k < QUOTA_KNOWN_RESOURCES; k++)
		if (!strcmp(name, quota_known_resources[k]))
			return k;
	return -1;
}

int quota_reslist_scale(quota_reslist_t *list, int64_t factor)
{
	/* the bound divided once (a 128-bit division is a library call) */
	__int128 bound = factor > 0 ? QTY_MAX_NANO / factor : 0;

	if (factor < 0)
		return GPUQ_EINVAL;
	for (size_t i = 0; i < list->n; i++) {
		__int128 v = list->items[i].qty.nano;
		__int128 mag = v < 0 ? -v : v;

		if (factor && mag > bound)
			return GPUQ_ERANGE;
	}
	for (size_t i = 0; i < list->n; i++)
		list->items[i].qty.nano *= factor;
	return GPUQ_OK;
}

int quota_container_requests(const quota_container_t *c, quota_reslist_t *out)
{
	quota_reslist_copy(out, &c->requests);
	for (size_t i = 0; i < c->limits.n; i++) {
		const quota_res_t *l = &c->limits.items[i];
		int rc;

		if (quota_reslist_get(out, l->name))
			continue;
		rc = quota_reslist_set(out, l->name, &l->qty);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* dst[name] += src[name] for every entry of src. Into an empty dst (a
 * pod's first container) that is a copy, src's names being unique. */
static int add_all(quota_reslist_t *dst, const quota_reslist_t *src)
{
	if (dst->n == 0) {
		quota_reslist_copy(dst, src);
		return GPUQ_OK;
	}
	for (size_t i = 0; i < src->n; i++) {
		int rc = quota_reslist_add(dst, src->items[i].name, &src->items[i].qty);

		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* dst[name] = max(dst[name], src[name]) for every entry of src; a copy
 * into an empty dst, as add_all. */
static int max_all(quota_reslist_t *dst, const quota_reslist_t *src)
{
	if (dst->n == 0) {
		quota_reslist_copy(dst, src);
		return GPUQ_OK;
	}
	for (size_t i = 0; i < src->n; i++) {
		const quota_qty_t *cur = quota_reslist_get(dst, src->items[i].name);
		int rc;

		if (cur && quota_qty_cmp(cur, &src->items[i].qty) >= 0)
			continue;
		rc = quota_reslist_set(dst, src->items[i].name, &src->items[i].qty);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* The KEP-753 aggregation of requests (defaulted) or limits, no overhead.
 * Lists are copied by their used entries only (quota_reslist_copy): a whole
 * one is over 4 KiB, and this runs several times per admission review. */
static int aggregate(const quota_pod_t *pod, bool limits, quota_reslist_t *out)
{
	quota_reslist_t sidecars, init_peak, req, tmp;
	int rc = GPUQ_OK;

	out->n = 0;
	sidecars.n = 0;
	init_peak.n = 0;
	for (size_t i = 0; i < pod->n_containers && !rc; i++) {
		const quota_container_t *c = &pod->containers[i];
		const quota_reslist_t *own = &c->limits;

		if (!limits) {
			rc = quota_container_requests(c, &req);
			own = &req;
		}
		if (rc)
			break;
		switch (c->kind) {
		case QUOTA_CONTAINER_APP:
			rc = add_all(out, own);
			break;
		case QUOTA_CONTAINER_SIDECAR:
			/* a sidecar runs from its start on: it counts for every
			 * later init container and for the app phase */
			rc = add_all(&sidecars, own);
			if (!rc)
				rc = max_all(&init_peak, &sidecars);
			break;
		case QUOTA_CONTAINER_INIT:
			quota_reslist_copy(&tmp, own);
			rc = add_all(&tmp, &sidecars);
			if (!rc)
				rc = max_all(&init_peak, &tmp);
			break;
		default:
			GPUQ_ASSERT(!"unknown container kind");
		}
	}
	if (!rc)
		rc = add_all(out, &sidecars);
	if (!rc)
		rc = max_all(out, &init_peak);
	return rc;
}

int quota_pod_requests(const quota_pod_t *pod, quota_reslist_t *out)
{
	int rc = aggregate(pod, false, out);

	if (rc)
		return rc;
	return add_all(out, &pod->overhead);
}

int quota_pod_limits(const quota_pod_t *pod, quota_reslist_t *out)
{
	int rc = aggregate(pod, true, out);

	for (size_t i = 0; i < pod->overhead.n && !rc; i++) {
		const quota_res_t *o = &pod->overhead.items[i];
		const quota_qty_t *cur = quota_reslist_get(out, o->name);

		if (cur && !quota_qty_is_zero(cur))
			rc = quota_reslist_add(out, o->name, &o->qty);
	}
	return rc;
}

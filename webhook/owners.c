/* webhook/owners.c: the admitted parents a Pod's owner must be among to
 * pass outside the queue (webhook_owners_t): a sorted array of uids,
 * reference counted, built by the controller and read by review threads. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/webhook.h"

struct webhook_owners {
	atomic_int refs; /* references; freed at the last unref */
	size_t n;	 /* uids added */
	size_t cap;	 /* room for uids, fixed at creation */
	bool finished;	 /* sorted: read only */
	char **uids;	 /* owned copies, sorted once finished */
};

int webhook_owners_create(size_t cap, webhook_owners_t **out)
{
	webhook_owners_t *o = calloc(1, sizeof(*o));

	*out = NULL;
	if (!o)
		return GPUQ_ENOMEM;
	o->uids = calloc(cap ? cap : 1, sizeof(*o->uids));
	if (!o->uids) {
		free(o);
		return GPUQ_ENOMEM;
	}
	o->cap = cap;
	atomic_init(&o->refs, 1);
	*out = o;
	return GPUQ_OK;
}

int webhook_owners_add(webhook_owners_t *o, const char *uid)
{
	GPUQ_ASSERT(!o->finished);
	if (o->n == o->cap)
		return GPUQ_ELIMIT;
	o->uids[o->n] = strdup(uid);
	if (!o->uids[o->n])
		return GPUQ_ENOMEM;
	o->n++;
	return GPUQ_OK;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void webhook_owners_finish(webhook_owners_t *o)
{
	qsort(o->uids, o->n, sizeof(*o->uids), cmp);
	o->finished = true;
}

bool webhook_owners_has(const webhook_owners_t *o, const char *uid)
{
	if (!o || !uid || !*uid)
		return false;
	GPUQ_ASSERT(o->finished);
	return bsearch(&uid, o->uids, o->n, sizeof(*o->uids), cmp) != NULL;
}

webhook_owners_t *webhook_owners_ref(webhook_owners_t *o)
{
	if (o)
		atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
	return o;
}

void webhook_owners_unref(webhook_owners_t *o)
{
	if (!o || atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (size_t i = 0; i < o->n; i++)
		free(o->uids[i]);
	free(o->uids);
	free(o);
}

size_t webhook_creators_of(const webhook_config_t *cfg, const workload_integration_t *parent,
			   const char **out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; cfg && i < cfg->n_creators; i++)
		if (cfg->creators[i].parent == parent->kind && n < cap)
			out[n++] = cfg->creators[i].user;
	if (cfg && n)
		return n;
	for (const char *const *u = parent->creators; u && *u && n < cap; u++)
		out[n++] = *u;
	return n;
}

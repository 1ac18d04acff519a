/* webhook/owners.c: the admitted parents a Pod's owner must be among to
 * pass outside the queue (webhook_owners_t): a sorted array of uids, each
 * with the workload its Pods count against and that workload's GPUs,
 * reference counted, built by the controller and read by review threads;
 * and the ledger of the Pods let pass that the controller has not counted
 * yet (webhook_allows_t). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/webhook.h"

typedef struct {
	char *uid;  /* the owner's metadata.uid (owned) */
	size_t top; /* its workload's index in tops; SIZE_MAX: not weighed */
} owner_t;

typedef struct {
	char *uid;	  /* the workload's metadata.uid (owned) */
	char *what;	  /* "Kind namespace/name" (in uid's block) */
	int64_t admitted; /* GPUs its Pods may hold */
	int64_t held;	  /* GPUs its unfinished Pods hold, as counted */
} top_t;

struct webhook_owners {
	atomic_int refs; /* references; freed at the last unref */
	size_t n;	 /* owners added */
	size_t cap;	 /* room for owners and for tops, fixed at creation */
	size_t n_tops;	 /* workloads added */
	bool finished;	 /* sorted: read only */
	uint64_t gen;	 /* its generation (webhook_allows_publish), 0 before */
	owner_t *owners; /* sorted by uid once finished */
	top_t *tops;	 /* n_tops of them */
};

int webhook_owners_create(size_t cap, webhook_owners_t **out)
{
	webhook_owners_t *o = calloc(1, sizeof(*o));

	*out = NULL;
	if (!o)
		return GPUQ_ENOMEM;
	o->owners = calloc(cap ? cap : 1, sizeof(*o->owners));
	o->tops = calloc(cap ? cap : 1, sizeof(*o->tops));
	if (!o->owners || !o->tops) {
		free(o->owners);
		free(o->tops);
		free(o);
		return GPUQ_ENOMEM;
	}
	o->cap = cap;
	atomic_init(&o->refs, 1);
	*out = o;
	return GPUQ_OK;
}

int webhook_owners_top(webhook_owners_t *o, const char *uid, const char *kind, const char *ns,
		       const char *name, int64_t admitted, int64_t held, size_t *top)
{
	size_t lu = strlen(uid) + 1, lk = strlen(kind) + 1 + strlen(ns), lm = 1 + strlen(name) + 1;
	char *b;
	top_t *t;

	GPUQ_ASSERT(!o->finished);
	if (o->n_tops == o->cap)
		return GPUQ_ELIMIT;
	/* one block: the uid, then "Kind ns/name" */
	if (!(b = malloc(lu + lk + lm)))
		return GPUQ_ENOMEM;
	memcpy(b, uid, lu);
	gpuq_strjoin(b + lu, lk + 1, kind, " ", ns);
	gpuq_strjoin(b + lu + lk, lm, "/", name, "");
	t = &o->tops[o->n_tops];
	t->uid = b;
	t->what = b + lu;
	t->admitted = admitted;
	t->held = held;
	*top = o->n_tops++;
	return GPUQ_OK;
}

int webhook_owners_add_weighed(webhook_owners_t *o, const char *uid, size_t top)
{
	GPUQ_ASSERT(!o->finished && (top == SIZE_MAX || top < o->n_tops));
	if (o->n == o->cap)
		return GPUQ_ELIMIT;
	o->owners[o->n].uid = strdup(uid);
	if (!o->owners[o->n].uid)
		return GPUQ_ENOMEM;
	o->owners[o->n++].top = top;
	return GPUQ_OK;
}

int webhook_owners_add(webhook_owners_t *o, const char *uid)
{
	return webhook_owners_add_weighed(o, uid, SIZE_MAX);
}

static int cmp(const void *a, const void *b)
{
	return strcmp(((const owner_t *)a)->uid, ((const owner_t *)b)->uid);
}

void webhook_owners_finish(webhook_owners_t *o)
{
	qsort(o->owners, o->n, sizeof(*o->owners), cmp);
	o->finished = true;
}

static const owner_t *find(const webhook_owners_t *o, const char *uid)
{
	owner_t key = {.uid = (char *)uid};

	if (!o || !uid || !*uid)
		return NULL;
	GPUQ_ASSERT(o->finished);
	return bsearch(&key, o->owners, o->n, sizeof(*o->owners), cmp);
}

bool webhook_owners_has(const webhook_owners_t *o, const char *uid)
{
	return find(o, uid) != NULL;
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
		free(o->owners[i].uid);
	for (size_t i = 0; i < o->n_tops; i++)
		free(o->tops[i].uid);
	free(o->owners);
	free(o->tops);
	free(o);
}

/* ---- The Pods let pass, until the controller counts them ---- */

/* Pods let pass and not yet counted, at most (a set's worth of reviews
 * that have not seen a publish: at the Job controller's pace, a few
 * hundred a second) */
#define ALLOWS_MAX 4096
/* a uid's bytes kept (Kubernetes': 36) */
#define ALLOW_UID_MAX 72
/* A counted one is kept this long for reviews still deciding on an older
 * set (a review takes microseconds): a burst of Pods fills the ledger for
 * no longer. */
#define ALLOW_SEEN_KEEP_MS 1000
/* One never counted this long: its create failed after the review (the
 * ResourceQuota admission plugin, or another validating webhook, refused
 * it), or it ended before the controller saw it. Past the Pods watch's
 * delay (the controller's settle allows 5 s for two watches' difference);
 * until then it takes its workload's room, and a retry of its create may
 * be refused for as long. */
#define ALLOW_UNSEEN_KEEP_MS 10000

typedef struct {
	char pod[ALLOW_UID_MAX]; /* the Pod's metadata.uid */
	char top[ALLOW_UID_MAX]; /* its workload's */
	int64_t gpus;		 /* the GPUs it took */
	int64_t at_ms;		 /* when (the review's clock), or when counted */
	uint64_t seen_gen;	 /* the first set that counts it; UINT64_MAX: none yet */
} allow_t;

struct webhook_allows {
	pthread_mutex_t lock; /* guards the rest */
	uint64_t gen;	      /* the last set published */
	size_t n;	      /* entries in a */
	allow_t a[ALLOWS_MAX];
};

int webhook_allows_create(webhook_allows_t **out)
{
	webhook_allows_t *l = calloc(1, sizeof(*l));

	*out = l;
	if (!l)
		return GPUQ_ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	return GPUQ_OK;
}

void webhook_allows_destroy(webhook_allows_t *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* Drop what no review needs any more. Caller holds l->lock. */
static void allows_expire(webhook_allows_t *l, int64_t now_ms)
{
	size_t k = 0;

	for (size_t i = 0; i < l->n; i++) {
		const allow_t *e = &l->a[i];
		int64_t keep =
		    e->seen_gen == UINT64_MAX ? ALLOW_UNSEEN_KEEP_MS : ALLOW_SEEN_KEEP_MS;

		if (now_ms - e->at_ms < keep)
			l->a[k++] = *e;
	}
	l->n = k;
}

void webhook_allows_publish(webhook_allows_t *l, webhook_owners_t *o, int64_t now_ms,
			    bool (*seen)(void *ctx, const char *pod_uid), void *ctx)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	o->gen = ++l->gen;
	for (size_t i = 0; i < l->n; i++) {
		allow_t *e = &l->a[i];

		if (e->seen_gen == UINT64_MAX && seen && seen(ctx, e->pod)) {
			e->seen_gen = o->gen;
			e->at_ms = now_ms;
		}
	}
	allows_expire(l, now_ms);
	pthread_mutex_unlock(&l->lock);
}

size_t webhook_allows_pending(webhook_allows_t *l)
{
	size_t n = 0;

	if (!l)
		return 0;
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->n; i++)
		n += l->a[i].seen_gen == UINT64_MAX;
	pthread_mutex_unlock(&l->lock);
	return n;
}

int webhook_owners_take(const webhook_owners_t *o, webhook_allows_t *l, const char *owner_uid,
			const char *pod_uid, int64_t gpus, int64_t now_ms, webhook_room_t *out)
{
	const owner_t *ow = find(o, owner_uid);
	const top_t *t;
	int64_t pending = 0;
	int rc = GPUQ_OK;

	memset(out, 0, sizeof(*out));
	if (!ow)
		return GPUQ_ENOTFOUND;
	if (ow->top == SIZE_MAX || gpus <= 0)
		return GPUQ_OK; /* not weighed, or takes nothing */
	t = &o->tops[ow->top];
	out->what = t->what;
	out->admitted = t->admitted;
	out->held = t->held;
	if (!l)
		return gpus > t->admitted - t->held ? GPUQ_EDENIED : GPUQ_OK;
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->n; i++)
		if (l->a[i].seen_gen > o->gen && !strncmp(l->a[i].top, t->uid, ALLOW_UID_MAX - 1))
			pending += l->a[i].gpus;
	out->pending = pending;
	if (l->n == ALLOWS_MAX)
		allows_expire(l, now_ms);
	if (gpus > t->admitted - t->held - pending)
		rc = GPUQ_EDENIED;
	else if (l->n == ALLOWS_MAX)
		rc = GPUQ_EAGAIN; /* no room to remember it: refused, retried */
	else {
		allow_t *e = &l->a[l->n++];

		memset(e, 0, sizeof(*e));
		gpuq_strlcpy(e->pod, pod_uid ? pod_uid : "", sizeof(e->pod));
		gpuq_strlcpy(e->top, t->uid, sizeof(e->top));
		e->gpus = gpus;
		e->at_ms = now_ms;
		e->seen_gen = UINT64_MAX;
	}
	pthread_mutex_unlock(&l->lock);
	return rc;
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

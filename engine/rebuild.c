/* engine/rebuild.c: a fresh core from a changed policy, carrying the old
 * core's records over (see engine_core_rebuild in engine.h). A copy may be
 * made in two halves (engine_core_copy_read, engine_core_copy_finish): the
 * first reads the old core, on the thread that owns it, and holds each
 * record's bytes; the second applies them, on any thread. Each record goes
 * through the one pair below either way: carry() encodes it into an item,
 * and item_apply() applies it and judges the outcome, at once (a rebuild)
 * or in the second half (a deferred copy). */
#include "engine/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* First size of the encoding buffer; it grows to the largest record (at
 * most QUEUE_RECORD_MAX). */
#define ENCODE_INITIAL 4096

/* A ClusterQueue slot's usage in the old core, for usage_same. */
typedef struct {
	uint32_t f, res; /* the new core's flavor and resource */
	int64_t usage;	 /* what the old CQ of that name held there */
} slot_use_t;

/* One record encoded from the old core, to apply to the new one. */
typedef struct {
	queue_rec_type_t type;
	const char *key;    /* the caller's, or owned when kept */
	const uint8_t *val; /* the encoding buffer, or owned when kept */
	size_t len;	    /* bytes of val */
	uint32_t ncq;	    /* a ClusterQueue record: its id in the new core */
	slot_use_t *use;    /* ... the old CQ's usage of each of its slots (owned) */
	size_t n_use;	    /* entries */
	bool vanished;	    /* the meta record: a cohort of old is gone (cohort_vanished) */
	bool kept;	    /* kept for the second half: key and val owned */
} item_t;

typedef struct {
	const queue_t *old;	      /* the core records come from (read only) */
	queue_t *q;		      /* the new core */
	const policy_t *p;	      /* the policy q was built from */
	engine_rebuild_report_t *rep; /* what was carried and what was not */
	size_t cap_lost;	      /* allocated entries of rep->lost */
	uint8_t *buf;		      /* encoding buffer */
	size_t cap;		      /* its size */
	gpuq_diag_t *diag;	      /* where a failure is named */
	uint8_t *cq_keeps;	      /* per CQ of old: SLOTS_* */
	engine_copy_keep_fn keep;     /* engine_core_copy: the workloads carried (NULL: all) */
	void *keep_ctx;		      /* its argument */
	bool defer;		      /* items kept for engine_core_copy_finish, not applied */
	item_t *items;		      /* the kept items, in order */
	size_t n_items, cap_items;
} rebuild_t;

enum {
	SLOTS_UNKNOWN = 0, /* not looked at yet */
	SLOTS_KEPT = 1,	   /* the new CQ of that name lists every flavor/resource it had */
	SLOTS_LOST = 2,	   /* ... misses some */
};

static void item_deinit(item_t *it)
{
	if (it->kept) {
		free((void *)(uintptr_t)it->key);
		free((void *)(uintptr_t)it->val);
	}
	free(it->use);
	memset(it, 0, sizeof(*it));
}

static int item_apply(rebuild_t *r, item_t *it);
static int item_applied(rebuild_t *r, const item_t *it, const char *key, int rc);

/* Encode old's record (type, key) into it (val: the encoding buffer), the
 * rest of it as the caller set it. */
static int encode(rebuild_t *r, queue_rec_type_t type, const char *key, item_t *it)
{
	const uint8_t *k = (const uint8_t *)key;
	size_t klen = strlen(key), len = 0;
	int rc = queue_record_encode(r->old, type, k, klen, r->buf, r->cap, &len);

	if (rc == GPUQ_ELIMIT && len > r->cap) {
		uint8_t *grown = realloc(r->buf, len);
		if (!grown)
			return GPUQ_ENOMEM;
		r->buf = grown;
		r->cap = len;
		rc = queue_record_encode(r->old, type, k, klen, r->buf, r->cap, &len);
	}
	if (rc)
		return gpuq_diag_set(r->diag, rc, "encoding the current core's record: %s",
				     gpuq_strerror(rc));
	it->type = type;
	it->key = key;
	it->val = r->buf;
	it->len = len;
	return GPUQ_OK;
}

/* Carry old's record (type, key) over: applied to the new core now, or
 * kept for the second half (r->defer). *it (its other fields set by the
 * caller) is taken either way. */
static int carry(rebuild_t *r, queue_rec_type_t type, const char *key, item_t *it)
{
	int rc = encode(r, type, key, it);
	char *kc;
	uint8_t *vc;

	if (rc) {
		it->type = type;
		rc = item_applied(r, it, key, rc);
		item_deinit(it);
		return rc;
	}
	if (!r->defer) {
		rc = item_apply(r, it);
		item_deinit(it);
		return rc;
	}
	if (r->n_items == r->cap_items) {
		size_t cap = r->cap_items ? 2 * r->cap_items : 64;
		item_t *grown = realloc(r->items, cap * sizeof(*grown));

		if (!grown) {
			item_deinit(it);
			return GPUQ_ENOMEM;
		}
		r->items = grown;
		r->cap_items = cap;
	}
	kc = strdup(key);
	vc = malloc(it->len ? it->len : 1);
	if (!kc || !vc) {
		free(kc);
		free(vc);
		item_deinit(it);
		return GPUQ_ENOMEM;
	}
	memcpy(vc, r->buf, it->len);
	it->key = kc;
	it->val = vc;
	it->kept = true;
	r->items[r->n_items++] = *it;
	return GPUQ_OK;
}

/* ---- meta ---- */

/* Whether a cohort of old (a named one, or the private one of a
 * ClusterQueue without a cohort) is not in the new core. */
static bool cohort_vanished(const rebuild_t *r)
{
	uint32_t id;

	for (uint32_t i = 0; i < queue_cohort_count(r->old); i++)
		if (queue_cohort_find(r->q, queue_cohort_name(r->old, i), &id))
			return true;
	for (uint32_t i = 0; i < queue_cq_count(r->old); i++) {
		if (queue_cq_cohort(r->old, i) != QUEUE_NONE)
			continue;
		if (queue_cq_find(r->q, queue_cq_name(r->old, i), &id) ||
		    queue_cq_cohort(r->q, id) != QUEUE_NONE)
			return true;
	}
	return false;
}

static int carry_meta(rebuild_t *r)
{
	item_t it = {.vanished = cohort_vanished(r)};

	return carry(r, QUEUE_REC_META, "meta", &it);
}

/* ---- tenants ---- */

/* The new core's LocalQueue named "namespace/name", or GPUQ_ENOTFOUND. */
static int lq_find(const queue_t *q, const char *key, uint32_t *id)
{
	char ns[QUEUE_NAME_MAX + 1];
	const char *slash = strchr(key, '/');
	size_t n = slash ? (size_t)(slash - key) : 0;

	if (!slash || n >= sizeof(ns))
		return GPUQ_ENOTFOUND;
	memcpy(ns, key, n);
	ns[n] = '\0';
	return queue_lq_find(q, ns, slash + 1, id);
}

static int carry_tenants(rebuild_t *r)
{
	for (uint32_t i = 0; i < queue_lq_count(r->old); i++) {
		const char *key = queue_lq_name(r->old, i);
		uint32_t id;
		int rc;
		if (lq_find(r->q, key, &id)) {
			r->rep->tenants_dropped++;
			continue;
		}
		rc = carry(r, QUEUE_REC_TENANT, key, &(item_t){0});
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* ---- workloads ---- */

typedef struct {
	const char *uid; /* borrowed from old */
	queue_wl_t id;	 /* its id in old */
} wl_ref_t;

static int uid_cmp(const void *a, const void *b)
{
	return strcmp(((const wl_ref_t *)a)->uid, ((const wl_ref_t *)b)->uid);
}

/* old's live workloads in uid order (the order a store restore applies
 * them in, so the new core numbers them as a restarted one would). *out is
 * the caller's (free). */
static int workloads_sorted(const rebuild_t *r, wl_ref_t **out, size_t *n_out)
{
	const queue_t *old = r->old;
	size_t n = queue_workload_count(old), i = 0, limit = queue_workload_id_limit(old);
	size_t cap = r->keep ? 256 : n + 1; /* a fork's grows with what it keeps */
	wl_ref_t *refs;

	refs = malloc(cap * sizeof(*refs));
	if (!refs)
		return GPUQ_ENOMEM;
	/* the keep filter first: a fork keeps few of many, and reads only those */
	for (size_t id = 0; id < limit && i < n; id++) {
		queue_workload_brief_t b;

		if ((r->keep && !r->keep(r->keep_ctx, (queue_wl_t)id)) ||
		    queue_workload_brief(old, (queue_wl_t)id, &b))
			continue;
		if (i + 1 >= cap) {
			wl_ref_t *grown = realloc(refs, 2 * cap * sizeof(*refs));

			if (!grown) {
				free(refs);
				return GPUQ_ENOMEM;
			}
			refs = grown;
			cap *= 2;
		}
		refs[i].uid = b.uid;
		refs[i++].id = (queue_wl_t)id;
	}
	qsort(refs, i, sizeof(*refs), uid_cmp);
	*out = refs;
	*n_out = i;
	return GPUQ_OK;
}

/* Whether the new CQ ncq has quota for resource `resource` on `flavor`. */
static bool slot_in_new(const rebuild_t *r, uint32_t ncq, const char *flavor, const char *resource)
{
	queue_quota_view_t qv;
	uint32_t f, res;

	return !queue_flavor_find(r->q, flavor, &f) && !queue_resource_find(r->q, resource, &res) &&
	       !queue_cq_quota(r->q, ncq, f, res, &qv);
}

/* Whether every flavor/resource old's CQ ocq has quota for is listed by the
 * new CQ ncq of the same name; looked at once per CQ, so that when nothing
 * left it (the common case) no workload's assignment needs a look. */
static bool cq_keeps_slots(rebuild_t *r, uint32_t ocq, uint32_t ncq)
{
	bool kept = true;

	if (r->cq_keeps[ocq] != SLOTS_UNKNOWN)
		return r->cq_keeps[ocq] == SLOTS_KEPT;
	for (uint32_t f = 0; f < queue_flavor_count(r->old) && kept; f++)
		for (uint32_t res = 0; res < queue_resource_count(r->old) && kept; res++) {
			queue_quota_view_t qv;
			if (queue_cq_quota(r->old, ocq, f, res, &qv))
				continue;
			kept = slot_in_new(r, ncq, queue_flavor_name(r->old, f),
					   queue_resource_name(r->old, res));
		}
	r->cq_keeps[ocq] = kept ? SLOTS_KEPT : SLOTS_LOST;
	return kept;
}

/* Whether a workload holding quota (admitted, evicting) under new CQ ncq
 * holds a flavor/resource ncq does not list: then *flavor and *resource name
 * the first one. */
static bool holds_lost_flavor(rebuild_t *r, queue_wl_t id, const queue_workload_view_t *v,
			      uint32_t ncq, const char **flavor, const char **resource)
{
	if (cq_keeps_slots(r, v->cq, ncq))
		return false;
	for (size_t ps = 0; ps < v->n_podsets; ps++)
		for (uint32_t res = 0; res < queue_resource_count(r->old); res++) {
			uint32_t f;
			if (queue_workload_flavor(r->old, id, ps, res, &f))
				continue;
			*flavor = queue_flavor_name(r->old, f);
			*resource = queue_resource_name(r->old, res);
			if (!slot_in_new(r, ncq, *flavor, *resource))
				return true;
		}
	*flavor = *resource = NULL;
	return false;
}

/* Whether workload id of old can be carried into the new core: 0, or the
 * reason it cannot (and, for a flavor, which one). */
static engine_lost_reason_t lost_reason(rebuild_t *r, queue_wl_t id, const queue_workload_view_t *v,
					const char **flavor, const char **resource)
{
	const char *lq = strchr(queue_lq_name(r->old, v->lq), '/');
	const char *cq = queue_cq_name(r->old, v->cq);
	uint32_t nlq, ncq;

	*flavor = *resource = NULL;
	if (!lq || queue_lq_find(r->q, v->namespace_, lq + 1, &nlq))
		return queue_cq_find(r->q, cq, &ncq) ? ENGINE_LOST_CLUSTERQUEUE
						     : ENGINE_LOST_LOCALQUEUE;
	if (v->state != QUEUE_WL_ADMITTED && v->state != QUEUE_WL_EVICTING)
		return 0; /* holds no quota: it queues wherever its LocalQueue feeds */
	ncq = queue_lq_cq(r->q, nlq);
	if (strcmp(queue_cq_name(r->q, ncq), cq) != 0)
		return ENGINE_LOST_CLUSTERQUEUE;
	return holds_lost_flavor(r, id, v, ncq, flavor, resource) ? ENGINE_LOST_FLAVOR : 0;
}

/* Append a lost workload to the report; its strings in one block owned by
 * the entry (freed through uid, the block's start). */
static int report_lost(rebuild_t *r, const queue_workload_view_t *v, engine_lost_reason_t why,
		       const char *flavor, const char *resource)
{
	const char *src[7] = {v->uid,
			      v->namespace_,
			      v->name,
			      queue_lq_name(r->old, v->lq),
			      queue_cq_name(r->old, v->cq),
			      flavor,
			      resource};
	const char *dst[7] = {NULL};
	engine_lost_t *e;
	size_t len = 0, off = 0;
	char *block;

	if (r->rep->n_lost == r->cap_lost) {
		size_t ncap = r->cap_lost ? 2 * r->cap_lost : 16;
		engine_lost_t *grown = realloc(r->rep->lost, ncap * sizeof(*grown));
		if (!grown)
			return GPUQ_ENOMEM;
		r->rep->lost = grown;
		r->cap_lost = ncap;
	}
	for (size_t i = 0; i < 7; i++)
		len += src[i] ? strlen(src[i]) + 1 : 0;
	block = malloc(len);
	if (!block)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < 7; i++) {
		size_t n;
		if (!src[i])
			continue;
		n = strlen(src[i]) + 1;
		memcpy(block + off, src[i], n);
		dst[i] = block + off;
		off += n;
	}
	e = &r->rep->lost[r->rep->n_lost++];
	e->uid = dst[0];
	e->namespace_ = dst[1];
	e->name = dst[2];
	e->local_queue = dst[3];
	e->cluster_queue = dst[4];
	e->flavor = dst[5];
	e->resource = dst[6];
	e->state = v->state;
	e->reason = why;
	return GPUQ_OK;
}

static int carry_workloads(rebuild_t *r)
{
	wl_ref_t *refs = NULL;
	size_t n = 0;
	int rc = workloads_sorted(r, &refs, &n);

	for (size_t i = 0; i < n && !rc; i++) {
		queue_workload_view_t v;
		const char *flavor, *resource;
		engine_lost_reason_t why;
		rc = queue_workload_view(r->old, refs[i].id, &v);
		if (rc)
			break;
		why = lost_reason(r, refs[i].id, &v, &flavor, &resource);
		if (why) {
			rc = report_lost(r, &v, why, flavor, resource);
			continue;
		}
		rc = carry(r, QUEUE_REC_WORKLOAD, v.uid, &(item_t){0});
	}
	free(refs);
	return rc;
}

/* ---- ClusterQueues ---- */

/* old's usage of (flavor, resource) in CQ ocq, by name: 0 when it had none. */
static int64_t old_usage(const queue_t *old, uint32_t ocq, const char *flavor, const char *resource)
{
	queue_quota_view_t qv;
	uint32_t f, res;

	if (queue_flavor_find(old, flavor, &f) || queue_resource_find(old, resource, &res) ||
	    queue_cq_quota(old, ocq, f, res, &qv))
		return 0;
	return qv.usage;
}

/* Each slot of new CQ ncq (as policy cq lists them) with old's CQ ocq's
 * usage there, into *it (use, n_use): usage_same compares the carried
 * workloads' with it. */
static int slots_used(const rebuild_t *r, uint32_t ocq, uint32_t ncq, const policy_cq_t *cq,
		      item_t *it)
{
	size_t n = 0;

	for (size_t g = 0; g < cq->n_groups; g++)
		for (size_t f = 0; f < cq->groups[g].n_flavors; f++)
			n += cq->groups[g].flavors[f].n_resources;
	it->use = calloc(n + 1, sizeof(*it->use));
	if (!it->use)
		return GPUQ_ENOMEM;
	for (size_t g = 0; g < cq->n_groups; g++) {
		const policy_resource_group_t *pg = &cq->groups[g];
		for (size_t f = 0; f < pg->n_flavors; f++)
			for (size_t k = 0; k < pg->flavors[f].n_resources; k++) {
				const char *fn = pg->flavors[f].name;
				const char *rn = pg->flavors[f].resources[k].resource;
				queue_quota_view_t qv;
				uint32_t nf, nres;
				if (queue_flavor_find(r->q, fn, &nf) ||
				    queue_resource_find(r->q, rn, &nres) ||
				    queue_cq_quota(r->q, ncq, nf, nres, &qv))
					continue; /* not a slot of the core: nothing recorded */
				it->use[it->n_use++] =
				    (slot_use_t){nf, nres, old_usage(r->old, ocq, fn, rn)};
			}
	}
	it->ncq = ncq;
	return GPUQ_OK;
}

/* Whether the carried workloads hold, in every slot of the CQ record it,
 * exactly what old's CQ of that name held there: then its record's usage
 * agrees with them and queue_restore_done accepts it. */
static bool usage_same(const rebuild_t *r, const item_t *it)
{
	for (size_t k = 0; k < it->n_use; k++) {
		queue_quota_view_t qv;

		if (queue_cq_quota(r->q, it->ncq, it->use[k].f, it->use[k].res, &qv) ||
		    qv.usage != it->use[k].usage)
			return false;
	}
	return true;
}

static int carry_cqs(rebuild_t *r)
{
	for (uint32_t i = 0; i < queue_cq_count(r->old); i++) {
		const char *name = queue_cq_name(r->old, i);
		const policy_cq_t *cq = policy_cq_find(r->p, name);
		uint32_t ncq;
		int rc;
		item_t it = {0};

		if (!cq || queue_cq_find(r->q, name, &ncq)) {
			r->rep->cqs_dropped++;
			continue;
		}
		rc = slots_used(r, i, ncq, cq, &it);
		if (!rc)
			rc = carry(r, QUEUE_REC_CQ, name, &it);
		else
			item_deinit(&it);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Each budget's state, for the budgets the new policy keeps (those it
 * dropped are not asked for; a record whose limit or window changed is
 * evaluated again at once by the new core). */
static int carry_budgets(rebuild_t *r)
{
	static const char letter[] = {'l', 'n', 'c'};

	for (uint32_t i = 0; i < queue_budget_count(r->old); i++) {
		queue_budget_view_t v;
		char key[QUEUE_KEY_MAX + 1];
		int rc;

		if (queue_budget_view(r->old, i, &v))
			continue;
		snprintf(key, sizeof(key), "%c/%s", letter[v.scope], v.name);
		rc = carry(r, QUEUE_REC_BUDGET, key, &(item_t){0});
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* ---- applying an item ---- */

/* The outcome of carrying record it (key) over, rc its code: what each kind
 * of record makes of a failure, and the report's counts. */
static int item_applied(rebuild_t *r, const item_t *it, const char *key, int rc)
{
	switch (it->type) {
	case QUEUE_REC_META:
		if (rc == GPUQ_ECORRUPT && it->vanished)
			return gpuq_diag_set(
			    r->diag, GPUQ_EAGAIN,
			    "the current core has set-aside workloads due a retry in a "
			    "cohort the new policy lacks: run a cycle and rebuild again");
		if (rc)
			gpuq_diag_prefix(r->diag, "meta record: ");
		return rc;
	case QUEUE_REC_TENANT:
		if (rc)
			gpuq_diag_prefix(r->diag, "tenant record \"%s\": ", key);
		return rc;
	case QUEUE_REC_WORKLOAD:
		if (rc)
			gpuq_diag_prefix(r->diag, "workload record \"%s\": ", key);
		else
			r->rep->workloads++;
		return rc;
	case QUEUE_REC_CQ:
		/* refused when the old CQ had a flavor/resource the new one
		   lacks (a failed apply changes nothing) */
		if (rc == GPUQ_ENOTFOUND || rc == GPUQ_ECORRUPT) {
			r->rep->cqs_reset++;
			return GPUQ_OK;
		}
		if (rc)
			gpuq_diag_prefix(r->diag, "ClusterQueue record \"%s\": ", key);
		return rc;
	default:
		if (rc)
			gpuq_diag_prefix(r->diag, "budget record \"%s\": ", key);
		return rc;
	}
}

/* Apply record it to the new core (a ClusterQueue's only when the carried
 * workloads hold what its old one did), and judge the outcome. */
static int item_apply(rebuild_t *r, item_t *it)
{
	const uint8_t *k = (const uint8_t *)it->key;

	if (!k) /* carry() keeps none without its key */
		return GPUQ_ENOMEM;
	if (it->type == QUEUE_REC_CQ && !usage_same(r, it)) {
		r->rep->cqs_reset++;
		return GPUQ_OK;
	}
	return item_applied(
	    r, it, it->key,
	    queue_record_apply(r->q, it->type, k, strlen(it->key), it->val, it->len, r->diag));
}

/* Mark every cohort changed with capacity up, by re-applying each
 * ClusterQueue's unchanged spec: set-aside workloads are tried again. */
static int touch_cohorts(rebuild_t *r)
{
	for (size_t i = 0; i < policy_cq_count(r->p); i++) {
		engine_cq_spec_t s;
		int rc = engine_cq_spec_init(&s, policy_cq_at(r->p, i));
		if (rc)
			return rc;
		rc = queue_cq_update(r->q, &s.spec, r->diag);
		engine_cq_spec_deinit(&s);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

void engine_rebuild_report_deinit(engine_rebuild_report_t *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->n_lost; i++)
		free((void *)rep->lost[i].uid); /* the start of the entry's string block */
	free(rep->lost);
	memset(rep, 0, sizeof(*rep));
}

const char *engine_lost_reason_name(engine_lost_reason_t reason)
{
	switch (reason) {
	case ENGINE_LOST_LOCALQUEUE:
		return "LocalQueueGone";
	case ENGINE_LOST_CLUSTERQUEUE:
		return "ClusterQueueGone";
	case ENGINE_LOST_FLAVOR:
		return "FlavorGone";
	default:
		return "Unknown";
	}
}

void engine_rebuild_report_log(const engine_rebuild_report_t *rep)
{
	gpuq_log(GPUQ_LOG_INFO, "engine",
		 "core rebuilt: %zu workload(s) carried over, %zu not; %zu ClusterQueue and %zu "
		 "tenant record(s) dropped, %zu ClusterQueue(s) with history restarted",
		 rep->workloads, rep->n_lost, rep->cqs_dropped, rep->tenants_dropped,
		 rep->cqs_reset);
	for (size_t i = 0; i < rep->n_lost && i < ENGINE_LOG_LOST_MAX; i++) {
		const engine_lost_t *e = &rep->lost[i];
		gpuq_log(GPUQ_LOG_WARN, "engine",
			 "workload %s (%s/%s) was %s in ClusterQueue %s; not in the new core: "
			 "%s%s%s%s%s",
			 e->uid, e->namespace_, e->name, queue_wl_state_name(e->state),
			 e->cluster_queue, engine_lost_reason_name(e->reason),
			 e->flavor ? " (flavor " : "", e->flavor ? e->flavor : "",
			 e->resource ? ", resource " : "", e->resource ? e->resource : "");
	}
	if (rep->n_lost > ENGINE_LOG_LOST_MAX)
		gpuq_log(GPUQ_LOG_WARN, "engine", "... and %zu more workload(s) not carried over",
			 rep->n_lost - ENGINE_LOG_LOST_MAX);
}

/* The first half of a rebuild: the new core built from r->p, the old
 * one's nodes and usage ledger copied into it (the records leave the
 * ledger alone), and every record carried over (applied at once, or kept:
 * r->defer). Reads r->old. */
static int read_half(rebuild_t *r, const queue_config_t *cfg)
{
	int rc;

	r->buf = malloc(r->cap);
	r->cq_keeps = calloc(queue_cq_count(r->old) + 1, sizeof(*r->cq_keeps));
	if (!r->buf || !r->cq_keeps) { /* freed below */
		gpuq_diag_set(r->diag, GPUQ_ENOMEM, "out of memory");
		rc = GPUQ_ENOMEM;
	} else {
		rc = engine_core_build(r->p, cfg, &r->q, r->diag);
	}
	if (!rc) /* before the workloads: their placements name nodes */
		rc = queue_nodes_copy(r->q, r->old, r->diag);
	if (!rc && queue_ledger_copy(r->q, r->old))
		rc = gpuq_diag_set(r->diag, GPUQ_ENOMEM, "copying the usage ledger: out of memory");
	if (!rc)
		rc = carry_meta(r);
	if (!rc)
		rc = carry_tenants(r);
	if (!rc)
		rc = carry_workloads(r);
	if (!rc)
		rc = carry_cqs(r);
	if (!rc)
		rc = carry_budgets(r);
	free(r->buf);
	free(r->cq_keeps);
	r->buf = NULL;
	r->cq_keeps = NULL;
	return rc;
}

/* The second half: the kept records applied (none when they were at
 * once), the core's restore finished, its cohorts touched; a copy that is
 * never persisted (copy) keeps no changed set. Reads only r->q and r->p. */
static int finish_half(rebuild_t *r, bool copy)
{
	int rc = GPUQ_OK;

	for (size_t i = 0; i < r->n_items && !rc; i++)
		rc = item_apply(r, &r->items[i]);
	if (!rc)
		rc = queue_restore_done(r->q, r->diag);
	if (!rc)
		rc = touch_cohorts(r);
	if (!rc && copy)
		queue_dirty_clear(r->q);
	else if (!rc)
		rc = queue_dirty_all(r->q);
	return rc;
}

static void items_free(rebuild_t *r)
{
	for (size_t i = 0; i < r->n_items; i++)
		item_deinit(&r->items[i]);
	free(r->items);
	r->items = NULL;
	r->n_items = r->cap_items = 0;
}

/* A failed rebuild: its diag prefixed, its core and report dropped. */
static int failed(rebuild_t *r, int rc)
{
	if (r->diag && !r->diag->msg[0])
		gpuq_diag_set(r->diag, rc, "%s", gpuq_strerror(rc));
	gpuq_diag_prefix(r->diag, "rebuilding the queue core: ");
	queue_destroy(r->q);
	r->q = NULL;
	items_free(r);
	engine_rebuild_report_deinit(r->rep);
	return rc;
}

int engine_core_rebuild(const queue_t *old, const policy_t *newp, const queue_config_t *cfg,
			queue_t **out, engine_rebuild_report_t *rep, gpuq_diag_t *diag)
{
	rebuild_t r = {.old = old, .p = newp, .rep = rep, .cap = ENCODE_INITIAL, .diag = diag};
	int rc;

	*out = NULL;
	memset(rep, 0, sizeof(*rep));
	rc = read_half(&r, cfg);
	if (!rc)
		rc = finish_half(&r, false);
	if (rc)
		return failed(&r, rc);
	*out = r.q;
	return GPUQ_OK;
}

/* A copy between its halves: its records, its core, the policy (a
 * reference) and the report. */
struct engine_core_copy {
	rebuild_t r;
	policy_t *p; /* referenced: r.p */
	engine_rebuild_report_t rep;
};

void engine_core_copy_free(engine_core_copy_t *cp)
{
	if (!cp)
		return;
	queue_destroy(cp->r.q);
	items_free(&cp->r);
	engine_rebuild_report_deinit(&cp->rep);
	policy_unref(cp->p);
	free(cp);
}

int engine_core_copy_read(const queue_t *old, policy_t *newp, const queue_config_t *cfg,
			  engine_copy_keep_fn keep, void *ctx, engine_core_copy_t **out,
			  gpuq_diag_t *diag)
{
	engine_core_copy_t *cp = calloc(1, sizeof(*cp));
	int rc;

	*out = NULL;
	if (!cp) {
		gpuq_diag_set(diag, GPUQ_ENOMEM, "rebuilding the queue core: out of memory");
		return GPUQ_ENOMEM;
	}
	cp->p = policy_ref(newp);
	cp->r = (rebuild_t){.old = old,
			    .p = newp,
			    .rep = &cp->rep,
			    .cap = ENCODE_INITIAL,
			    .diag = diag,
			    .keep = keep,
			    .keep_ctx = ctx,
			    .defer = true};
	rc = read_half(&cp->r, cfg);
	cp->r.old = NULL; /* not read again */
	if (rc) {
		failed(&cp->r, rc);
		engine_core_copy_free(cp);
		return rc;
	}
	*out = cp;
	return GPUQ_OK;
}

int engine_core_copy_finish(engine_core_copy_t *cp, queue_t **out, engine_rebuild_report_t *rep,
			    gpuq_diag_t *diag)
{
	int rc;

	*out = NULL;
	memset(rep, 0, sizeof(*rep));
	cp->r.diag = diag;
	rc = finish_half(&cp->r, true);
	if (rc) {
		failed(&cp->r, rc);
		engine_core_copy_free(cp);
		return rc;
	}
	*out = cp->r.q;
	cp->r.q = NULL;
	*rep = cp->rep;
	memset(&cp->rep, 0, sizeof(cp->rep));
	engine_core_copy_free(cp);
	return GPUQ_OK;
}

int engine_core_copy(const queue_t *old, policy_t *newp, const queue_config_t *cfg,
		     engine_copy_keep_fn keep, void *ctx, queue_t **out,
		     engine_rebuild_report_t *rep, gpuq_diag_t *diag)
{
	engine_core_copy_t *cp;
	int rc = engine_core_copy_read(old, newp, cfg, keep, ctx, &cp, diag);

	if (rc) {
		*out = NULL;
		memset(rep, 0, sizeof(*rep));
		return rc;
	}
	return engine_core_copy_finish(cp, out, rep, diag);
}

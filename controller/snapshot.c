/* controller/snapshot.c: watched policy objects into one immutable policy
 * snapshot, published to the webhook and fed to the core. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "engine/engine.h"
#include "policy/policy_json.h"

/* "namespace/name" or "name" of an object; "" when it has no name. */
void controller_obj_key(const json_t *obj, char *out, size_t cap)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));

	if (!name)
		name = "";
	if (ns && ns[0])
		snprintf(out, cap, "%s/%s", ns, name);
	else
		snprintf(out, cap, "%s", name);
}

/* FNV-1a of the object without status, resourceVersion, generation and
 * managedFields: the status gpuq itself writes, and the bookkeeping every
 * write bumps, do not make a new policy. */
static uint64_t policy_digest(const json_t *obj)
{
	json_t *copy = json_deep_copy(obj), *meta;
	uint64_t h = GPUQ_FNV1A_SEED;
	char *text;

	if (!copy)
		return 0;
	json_object_del(copy, "status");
	meta = json_object_get(copy, "metadata");
	json_object_del(meta, "resourceVersion");
	json_object_del(meta, "generation");
	json_object_del(meta, "managedFields");
	text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(copy);
	if (text)
		h = gpuq_fnv1a_str(h, text);
	free(text);
	return h;
}

/* Object `key` of collection r changed the policy: note what it may reach
 * (controller_snapshot_rebuild resolves the workloads of those namespaces
 * again, or all of them): a namespaced object its namespace; a Namespace
 * is judged by what its labels change (resync_scope). */
static void policy_changed(struct controller *c, controller_res_t r, const char *key)
{
	const char *slash = strchr(key, '/');

	c->policy_dirty = true;
	c->policy_res_changed |= 1u << r;
	if (slash)
		controller_nsset_add(&c->policy_ns_changed, key, (size_t)(slash - key));
}

static void pobj_free(controller_pobj_t *o)
{
	if (!o)
		return;
	json_decref(o->obj);
	free(o);
}

void controller_snapshot_apply(struct controller *c, const controller_cevent_t *ev)
{
	controller_map_t *m = &c->objs[ev->res];
	char key[600];
	controller_pobj_t *o, *old = NULL;

	switch (ev->type) {
	case KUBE_EV_RESET:
		c->gen[ev->res]++;
		return;
	case KUBE_EV_SYNCED: {
		/* objects the relist did not show again are gone */
		size_t pos = 0;
		controller_map_slot_t *s;
		while ((s = controller_map_next(m, &pos))) {
			o = s->value;
			if (o->gen != c->gen[ev->res]) {
				policy_changed(c, ev->res, s->key);
				pobj_free(controller_map_del(m, s->key));
			}
		}
		if (!c->listed[ev->res]) {
			c->policy_dirty = true;
			c->policy_ns_changed.all = true;
		}
		c->listed[ev->res] = true;
		return;
	}
	case KUBE_EV_DELETED:
		controller_obj_key(ev->object, key, sizeof(key));
		pobj_free(controller_map_del(m, key));
		policy_changed(c, ev->res, key);
		return;
	default:
		break;
	}
	controller_obj_key(ev->object, key, sizeof(key));
	o = calloc(1, sizeof(*o));
	if (!o)
		return;
	o->obj = json_incref(ev->object);
	o->gen = c->gen[ev->res];
	o->digest = policy_digest(o->obj);
	if (controller_map_put(m, key, o, (void **)&old)) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "%s %s: cannot cache (cap or memory)",
			 controller_res_at(ev->res).name, key);
		pobj_free(o);
		return;
	}
	/* a ResourceQuota's used changed: Jobs it held may go now */
	if (ev->res == CONTROLLER_RES_RESOURCEQUOTAS)
		c->next_sweep_ms = 0;
	/* a relist repeats unchanged objects, and status writes change nothing
	 * the policy reads: only a new digest counts */
	if (!old || old->digest != o->digest)
		policy_changed(c, ev->res, key);
	if (old) {
		o->refused = old->refused && old->digest == o->digest;
		pobj_free(old);
	}
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Add every cached object of one collection, in key order (deterministic
 * snapshots); an object the decoder refuses is left out and logged once. */
static int add_res(struct controller *c, policy_t *p, controller_res_t r)
{
	controller_map_t *m = &c->objs[r];
	const char **keys;
	size_t pos = 0, n = 0;
	controller_map_slot_t *s;

	if (!m->n)
		return GPUQ_OK;
	keys = malloc(m->n * sizeof(*keys));
	if (!keys)
		return GPUQ_ENOMEM;
	while ((s = controller_map_next(m, &pos)))
		keys[n++] = s->key;
	qsort(keys, n, sizeof(*keys), key_cmp);
	for (size_t i = 0; i < n; i++) {
		controller_pobj_t *o = controller_map_get(m, keys[i]);
		gpuq_diag_t diag = {{0}};
		int rc = policy_add_json(p, o->obj, &diag);
		if (rc == GPUQ_ENOMEM) {
			free(keys);
			return rc;
		}
		if (rc && !o->refused)
			gpuq_log(GPUQ_LOG_WARN, "controller", "%s %s left out of the policy: %s",
				 controller_res_at(r).name, keys[i], diag.msg);
		o->refused = rc != GPUQ_OK;
	}
	free(keys);
	return GPUQ_OK;
}

/* A fresh core's tenants with no history of their own take the decayed
 * usage their LocalQueue's status shows (written by a former leader: a new
 * Pod's store starts empty), so fair sharing goes on where it was. */
void controller_snapshot_seed_usage(struct controller *c)
{
	static const controller_res_t lqs[] = {CONTROLLER_RES_LOCALQUEUES,
					       CONTROLLER_RES_KUEUE_LOCALQUEUES};
	size_t seeded = 0;

	for (size_t r = 0; r < sizeof(lqs) / sizeof(lqs[0]); r++) {
		size_t pos = 0;
		controller_map_slot_t *s;

		while ((s = controller_map_next(&c->objs[lqs[r]], &pos))) {
			const controller_pobj_t *po = s->value;
			const json_t *u =
			    json_object_get(json_object_get(po->obj, "status"), "decayedUsage");
			const char *slash = strchr(s->key, '/');
			char ns[256];
			uint32_t id;

			if (!json_is_number(u) || json_number_value(u) <= 0 || !slash ||
			    (size_t)(slash - s->key) >= sizeof(ns))
				continue;
			memcpy(ns, s->key, (size_t)(slash - s->key));
			ns[slash - s->key] = '\0';
			if (queue_lq_find(engine_core(c->e), ns, slash + 1, &id) == GPUQ_OK &&
			    engine_change_apply(
				c->e,
				&(engine_change_t){.kind = ENGINE_CHANGE_LQ_USAGE_SEED,
						   .lq = id,
						   .value = json_number_value(u)},
				NULL) == GPUQ_OK)
				seeded++;
		}
	}
	if (seeded)
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "fair-share usage of %zu LocalQueue(s) carried over from their status",
			 seeded);
}

/* p into the engine (engine_policy_set): into the live core when its shape
 * allows (*in_place), else a new core: fresh (restored from the store the
 * first time) or rebuilt from the current one's records. Logs what was
 * done. */
static int core_update(struct controller *c, policy_t *p, bool *in_place)
{
	engine_policy_report_t rep;
	gpuq_diag_t diag = {{0}};
	bool first = !engine_core(c->e);
	int rc = engine_policy_set(c->e, p, controller_now(c), &rep, &diag);

	*in_place = !rc && rep.how == ENGINE_POLICY_IN_PLACE;
	if (!first && rep.why[0] && !rep.refused)
		gpuq_log(GPUQ_LOG_INFO, "controller", "policy change: %s; rebuilding the core",
			 rep.why);
	else if (!first && rep.why[0])
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "policy change not taken in place (%s); rebuilding the core", rep.why);
	if (rep.cycled)
		c->next_sweep_ms = 0; /* the old core's cycle: its decisions are acted on by the
					 next sweep */
	if (rc) {
		gpuq_log(GPUQ_LOG_ERROR, "controller", "core %s: %s", first ? "build" : "rebuild",
			 diag.msg);
		return rc;
	}
	switch (rep.how) {
	case ENGINE_POLICY_IN_PLACE:
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "policy change taken in place: %zu ClusterQueue(s) updated",
			 rep.cqs_updated);
		return GPUQ_OK;
	case ENGINE_POLICY_REBUILT:
		engine_rebuild_report_log(&rep.rebuild);
		break;
	case ENGINE_POLICY_FRESH:
		/* The store does not fit the cluster's policy (a queue deleted while
		 * gpuq was down) or is damaged: start from the cluster alone. Running
		 * Jobs are adopted from their annotations, waiting ones queue again;
		 * only usage history is lost. The next commit rewrites the store. */
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "state in %s not restored (%s); rebuilding from the cluster",
			 c->o.state_dir, rep.why);
		break;
	case ENGINE_POLICY_BUILT:
		break;
	}
	if (rep.how != ENGINE_POLICY_REBUILT) /* a rebuilt core carries its nodes */
		controller_nodes_feed(c, true);
	engine_policy_report_deinit(&rep);
	if (first)
		controller_snapshot_seed_usage(c);
	(void)qmetrics_core_set(c->metrics, engine_core(c->e)); /* no memory: no queue series */
	return GPUQ_OK;
}

/* Collections whose change reaches only the workloads of some namespaces:
 * their own (Namespaces and the namespaced ones) or those a ClusterQueue
 * selects (below); ResourceFlavors the core took in place reach none (what
 * a workload asks for does not depend on them). Any other change (a
 * PriorityClass, a LocalQueue's stop policy, a Topology: its flavors'
 * workloads may be anywhere) is resolved everywhere. */
_Static_assert(CONTROLLER_RES_COUNT <= 32, "policy_res_changed is a 32-bit mask");
#define NARROW_RES                                                                                 \
	((1u << CONTROLLER_RES_NAMESPACES) | (1u << CONTROLLER_RES_LIMITRANGES) |                  \
	 (1u << CONTROLLER_RES_RESOURCEQUOTAS) | (1u << CONTROLLER_RES_CLAIMTEMPLATES) |           \
	 (1u << CONTROLLER_RES_FLAVORS) | (1u << CONTROLLER_RES_KUEUE_FLAVORS) |                   \
	 (1u << CONTROLLER_RES_CLUSTERQUEUES) | (1u << CONTROLLER_RES_KUEUE_CLUSTERQUEUES))

/* Which namespaces' workloads to resolve again after the change from
 * c->policy to p (the changed collections, and the namespaces noted as
 * they changed, in *scope): all of them after a rebuilt core, a first
 * snapshot or a change outside NARROW_RES; else the namespaces of the
 * changed namespaced objects plus, when a Namespace or a ClusterQueue
 * changed, every namespace gpuq now manages or stops managing (labels and
 * namespaceSelectors decide only that: a label no selector reads reaches
 * no workload). */
static void resync_scope(struct controller *c, const policy_t *p, bool in_place, uint32_t changed,
			 controller_nsset_t *scope)
{
	if (!in_place || !c->policy || (changed & ~NARROW_RES)) {
		scope->all = true;
		return;
	}
	if (!(changed & ((1u << CONTROLLER_RES_NAMESPACES) | (1u << CONTROLLER_RES_CLUSTERQUEUES) |
			 (1u << CONTROLLER_RES_KUEUE_CLUSTERQUEUES))))
		return;
	for (size_t i = 0; i < policy_namespace_count(p) && !scope->all; i++) {
		const char *ns = policy_namespace_at(p, i)->name;
		if (policy_namespace_managed(c->policy, ns) != policy_namespace_managed(p, ns))
			controller_nsset_add(scope, ns, strlen(ns));
	}
	for (size_t i = 0; i < policy_namespace_count(c->policy) && !scope->all; i++) {
		const char *ns = policy_namespace_at(c->policy, i)->name;
		if (!policy_namespace_find(p, ns))
			controller_nsset_add(scope, ns, strlen(ns));
	}
}

/* The workload collections watched now (listed, and served) into out, by
 * their kinds' rows: what the webhook may hold (policy_watch_has).
 * Returns how many. */
_Static_assert(CONTROLLER_RES_COUNT <= POLICY_WATCHED_MAX, "every collection fits");
static size_t watched(const struct controller *c, policy_api_t *out)
{
	size_t n = 0;

	for (int r = CONTROLLER_RES_WORKLOADS; r < CONTROLLER_RES_COUNT; r++) {
		const workload_integration_t *in = workload_integration(controller_res_at(r).kind);
		if (in->watch_path && c->listed[r] && !c->unserved[r])
			out[n++] = (policy_api_t){in->group, in->resource};
	}
	return n;
}

/* Each object p leaves out by a check across objects (a LocalQueue whose
 * ClusterQueue is gone, ...), said once: when the policy before did not
 * leave it out for the same reason. (Decoding refusals were said by
 * add_res.) Their status says it too (controller_status_queues). */
static void log_left_out(const policy_t *before, const policy_t *p)
{
	for (size_t i = 0; i < policy_leftout_count(p); i++) {
		const policy_leftout_t *l = policy_leftout_at(p, i);
		const policy_leftout_t *was =
		    before ? policy_leftout_find(before, l->kind, l->namespace_, l->name) : NULL;

		if (!strcmp(l->reason, POLICY_REASON_INVALID) ||
		    (was && !strcmp(was->reason, l->reason)))
			continue;
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "%s %s%s%s left out of the policy (%s): %s; everything else applies",
			 l->kind, l->namespace_, l->namespace_[0] ? "/" : "", l->name, l->reason,
			 l->message);
	}
}

int controller_snapshot_rebuild(struct controller *c)
{
	policy_api_t apis[CONTROLLER_RES_COUNT];
	policy_opts_t po = {.skip_unknown_kinds = true,
			    .price_lenient = true,
			    .leave_out_broken = true,
			    .watch_declared = true,
			    .watched = apis,
			    .n_watched = watched(c, apis)};
	gpuq_diag_t diag = {{0}};
	policy_t *p = NULL;
	controller_nsset_t scope = c->policy_ns_changed;
	uint32_t changed = c->policy_res_changed;
	bool in_place;
	int rc;

	c->policy_dirty = false; /* what changed stays noted until a snapshot is in force */
	rc = policy_create(&po, &p);
	for (int r = 0; !rc && r < CONTROLLER_RES_COUNT; r++)
		if (controller_res_at(r).policy)
			rc = add_res(c, p, (controller_res_t)r);
	if (!rc)
		rc = policy_finish(p, &diag);
	if (rc) {
		gpuq_log(GPUQ_LOG_ERROR, "controller",
			 "the cluster's policy objects do not form a policy (%s); the last good "
			 "one stays in force",
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
		policy_unref(p);
		return rc;
	}
	if (engine_core(c->e) && c->policy && !changed) {
		/* only the collections watched changed (a kind came or went): no
		 * policy object did, so the core keeps the policy it has */
		in_place = true;
	} else {
		rc = core_update(c, p, &in_place);
		if (rc) {
			policy_unref(p);
			return rc;
		}
	}
	resync_scope(c, p, in_place, changed, &scope);
	c->policy_res_changed = 0;
	memset(&c->policy_ns_changed, 0, sizeof(c->policy_ns_changed));
	log_left_out(c->policy, p);
	for (size_t i = 0; i < policy_flavor_count(p); i++)
		if (policy_flavor_at(p, i)->price_error)
			gpuq_log(GPUQ_LOG_WARN, "controller", "%s (the flavor is kept, unpriced)",
				 policy_flavor_at(p, i)->price_error);
	policy_unref(c->policy);
	c->policy = p;
	c->policy_generation++;
	if (c->o.adm)
		webhook_admission_policy_set(c->o.adm, p);
	/* the web view's GPU-hours cost at the flavors' price annotations */
	if (c->o.ui && webui_prices_from_policy(c->o.ui, p))
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "web UI: prices not updated (out of memory); the last ones stay");
	c->core_dirty = true;
	controller_nodes_feed(c, false); /* the labels kept follow the policy */
	if (!scope.all && !scope.n)
		return GPUQ_OK; /* reaches no workload: no cached object need be walked */
	controller_jobs_resync(c, &scope);
	controller_sets_resync(c, &scope);
	controller_pods_resync(c, &scope);
	return GPUQ_OK;
}

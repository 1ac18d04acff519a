/* controller/nodes.c: Nodes for the core's topology-aware flavors, and what
 * the Pods bound to each use: those gpuq did not admit, and those it did
 * (which the core counts against its placements there: docs/topology.md). A Node is fed
 * to the core only when the spec the core would read of it changed (a
 * digest of that spec): kubelet heartbeats, image lists and condition
 * timestamps never reach it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

/* A Node as cached: its latest decode and what was fed of it. */
typedef struct {
	controller_node_t *n; /* the latest decode (owned; NULL while its latest
				 version was refused: out of the core) */
	uint64_t gen;	      /* LIST generation it was last seen in */
	uint64_t fed;	      /* digest of the spec the core holds (0: not fed) */
	bool was_unsched;     /* unschedulable as last seen: a cordon is said once,
				 at its transition */
	bool refused;	      /* its latest version was refused (said once) */
} node_rec_t;

/* One resource the counted Pods on a node use. */
typedef struct {
	char *name;	/* resource name (owned) */
	int64_t amount; /* the core's units, summed */
} use_res_t;

/* What some Pods use on one node. */
typedef struct {
	use_res_t r[CONTROLLER_NODE_RES_MAX]; /* resources (a Pod's others ignored:
						 a node only offers its allocatable) */
	size_t n;			      /* entries */
	int32_t pods;			      /* Pods counted */
} use_sum_t;

/* What the Pods bound to one node use. */
typedef struct {
	use_sum_t other; /* those gpuq did not admit (the spec's used) */
	use_sum_t own;	 /* those it admitted (the spec's own) */
} node_use_t;

/* One counted Pod: where it runs and what it asks. */
typedef struct {
	char *node;    /* spec.nodeName (owned) */
	uint64_t gen;  /* the Pods' LIST generation it was last seen in */
	bool own;      /* gpuq admitted it (annotation gpuq.dev/admitted) */
	size_t n;      /* entries in r */
	use_res_t r[]; /* its effective request per pod (names owned) */
} pod_use_t;

/* ---- decode (any thread) ---- */

void controller_node_destroy(controller_node_t *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_labels; i++) {
		free((char *)n->labels[i].key);
		free((char *)n->labels[i].value);
	}
	for (size_t i = 0; i < n->n_alloc; i++)
		free((char *)n->alloc[i].resource);
	for (size_t i = 0; i < n->n_taints; i++) {
		free((char *)n->taints[i].key);
		free((char *)n->taints[i].value);
	}
	free(n->labels);
	free(n->alloc);
	free(n->taints);
	free(n->name);
	free(n);
}

/* A Node past one of the caps: refused, naming the field. */
static int too_many(gpuq_diag_t *diag, const char *name, const char *field, size_t got, int max)
{
	return gpuq_diag_set(diag, GPUQ_ELIMIT,
			     "Node \"%s\": %s: %zu entries, more than the %d gpuq reads", name,
			     field, got, max);
}

static int decode_labels(const jv_t *meta, controller_node_t *n, gpuq_diag_t *diag)
{
	const jv_t *labels = jv_member_obj(meta, "labels");

	if (!labels)
		return GPUQ_OK;
	if (labels->n > CONTROLLER_NODE_LABELS_MAX)
		return too_many(diag, n->name, "metadata.labels", labels->n,
				CONTROLLER_NODE_LABELS_MAX);
	n->labels = calloc(labels->n + 1, sizeof(*n->labels));
	if (!n->labels)
		return GPUQ_ENOMEM;
	for (const jv_t *k = labels->first; k && k->next; k = k->next->next) {
		queue_label_t *l = &n->labels[n->n_labels];

		if (!jv_str(k->next))
			continue; /* the apiserver sends strings only */
		l->key = strdup(k->s);
		l->value = strdup(k->next->s);
		n->n_labels++;
		if (!l->key || !l->value)
			return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

static int decode_alloc(const jv_t *status, controller_node_t *n, gpuq_diag_t *diag)
{
	const jv_t *alloc = jv_member_obj(status, "allocatable");

	if (!alloc)
		return GPUQ_OK;
	if (alloc->n > CONTROLLER_NODE_RES_MAX)
		return too_many(diag, n->name, "status.allocatable", alloc->n,
				CONTROLLER_NODE_RES_MAX);
	n->alloc = calloc(alloc->n + 1, sizeof(*n->alloc));
	if (!n->alloc)
		return GPUQ_ENOMEM;
	for (const jv_t *k = alloc->first; k && k->next; k = k->next->next) {
		gpuq_diag_t why = {{0}};
		quota_qty_t q;
		const char *text = jv_str(k->next);

		if (!text || quota_qty_parse(text, strlen(text), &q, &why) ||
		    quota_qty_amount(k->s, &q) < 0)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "Node \"%s\": status.allocatable.%s: not a quantity "
					     "(%s)",
					     n->name, k->s, why.msg[0] ? why.msg : "negative");
		n->alloc[n->n_alloc].amount = quota_qty_amount(k->s, &q);
		if (!(n->alloc[n->n_alloc++].resource = strdup(k->s)))
			return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

static int decode_taints(const jv_t *spec, controller_node_t *n, gpuq_diag_t *diag)
{
	static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
	const jv_t *taints = jv_get(spec, "taints");

	if (jv_count(taints) > QUEUE_TAINTS_MAX)
		return too_many(diag, n->name, "spec.taints", jv_count(taints), QUEUE_TAINTS_MAX);
	if (!jv_count(taints))
		return GPUQ_OK;
	n->taints = calloc(jv_count(taints), sizeof(*n->taints));
	if (!n->taints)
		return GPUQ_ENOMEM;
	for (const jv_t *t = jv_first(taints); t; t = t->next) {
		const char *key = jv_member_str(t, "key"), *effect = jv_member_str(t, "effect");
		const char *value = jv_member_str(t, "value");
		size_t e = 0;

		while (effect && e < 3 && strcmp(effect, effects[e]) != 0)
			e++;
		if (!key || !effect || e == 3)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "Node \"%s\": spec.taints: a taint without a key or "
					     "a known effect",
					     n->name);
		n->taints[n->n_taints].key = strdup(key);
		n->taints[n->n_taints].value = strdup(value ? value : "");
		n->taints[n->n_taints].effect = (queue_effect_t)e;
		if (!n->taints[n->n_taints++].key || !n->taints[n->n_taints - 1].value)
			return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

/* Whether condition Ready says "True". */
/* Whether condition Ready is "True"; *since (ms since the epoch) its
 * lastTransitionTime, 0 when it has none or there is no Ready condition
 * (failed at once, as Kueue takes it). */
static bool ready(const jv_t *status, int64_t *since)
{
	*since = 0;
	for (const jv_t *cd = jv_first(jv_get(status, "conditions")); cd; cd = cd->next) {
		const char *type = jv_member_str(cd, "type"), *st = jv_member_str(cd, "status");
		const char *at = jv_member_str(cd, "lastTransitionTime");

		if (!type || strcmp(type, "Ready") != 0)
			continue;
		if (!at || gpuq_time_parse(at, since) != GPUQ_OK)
			*since = 0;
		return st && !strcmp(st, "True");
	}
	return false;
}

int controller_node_decode(const jv_t *obj, controller_node_t **out, gpuq_diag_t *diag)
{
	const jv_t *meta = jv_member_obj(obj, "metadata"), *spec = jv_member_obj(obj, "spec");
	const jv_t *status = jv_member_obj(obj, "status");
	const char *name = jv_member_str(meta, "name");
	controller_node_t *n;
	int rc;

	*out = NULL;
	if (!name || !*name)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "Node: metadata.name: required");
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		return GPUQ_ENOMEM;
	}
	rc = decode_labels(meta, n, diag);
	if (!rc)
		rc = decode_alloc(status, n, diag);
	if (!rc)
		rc = decode_taints(spec, n, diag);
	if (rc) {
		controller_node_destroy(n);
		return rc;
	}
	n->cordoned = jv_is(jv_get(spec, "unschedulable"), JV_TRUE);
	n->not_ready = !ready(status, &n->not_ready_since);
	*out = n;
	return GPUQ_OK;
}

/* ---- the spec the core reads ---- */

/* Whether label key matters to the policy: a flavor's nodeLabels key, a
 * Topology's level, the hostname. */
static bool wanted(const policy_t *p, const char *key)
{
	if (!strcmp(key, POLICY_LABEL_HOSTNAME))
		return true;
	for (size_t i = 0; p && i < policy_flavor_count(p); i++) {
		const policy_flavor_t *f = policy_flavor_at(p, i);
		for (size_t k = 0; k < f->node_labels.n; k++)
			if (!strcmp(f->node_labels.items[k].key, key))
				return true;
	}
	for (size_t i = 0; p && i < policy_topology_count(p); i++)
		if (policy_topology_level(policy_topology_at(p, i), key) >= 0)
			return true;
	return false;
}

/* The labels of a node the core takes (queue_node_set's cap). */
#define LABELS_KEPT QUEUE_NODE_LABELS_MAX

/* At most LABELS_KEPT of n's labels into l: the ones that matter first,
 * then the others in their order. Returns how many. */
static size_t pick_labels(const struct controller *c, const controller_node_t *n, queue_label_t *l)
{
	size_t k = 0;

	if (n->n_labels <= LABELS_KEPT) {
		memcpy(l, n->labels, n->n_labels * sizeof(*l));
		return n->n_labels;
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n->n_labels && k < LABELS_KEPT; i++)
			if (wanted(c->policy, n->labels[i].key) == (pass == 0))
				l[k++] = n->labels[i];
	return k;
}

static uint64_t mix(uint64_t h, const char *s)
{
	return gpuq_fnv1a(gpuq_fnv1a_str(h, s ? s : ""), "", 1); /* the NUL separates */
}

static uint64_t mix_int(uint64_t h, int64_t v)
{
	return gpuq_fnv1a(h, &v, sizeof(v));
}

/* The digest of spec s: what queue_node_set reads, nothing else (| 1: never 0). */
static uint64_t digest(const queue_node_spec_t *s)
{
	uint64_t h = mix(GPUQ_FNV1A_BASIS, s->name);

	for (size_t i = 0; i < s->n_labels; i++)
		h = mix(mix(h, s->labels[i].key), s->labels[i].value);
	for (size_t i = 0; i < s->n_allocatable; i++)
		h = mix_int(mix(h, s->allocatable[i].resource), s->allocatable[i].amount);
	for (size_t i = 0; i < s->n_used; i++)
		h = mix_int(mix(h, s->used[i].resource), s->used[i].amount);
	for (size_t i = 0; i < s->n_own; i++)
		h = mix_int(mix(h, s->own[i].resource), s->own[i].amount);
	h = mix_int(h, s->pods_own);
	for (size_t i = 0; i < s->n_taints; i++)
		h = mix_int(mix(mix(h, s->taints[i].key), s->taints[i].value), s->taints[i].effect);
	h = mix_int(h, s->pods_used);
	h = mix_int(mix_int(h, s->not_ready), s->not_ready_since);
	return mix_int(h, s->unschedulable) | 1;
}

/* ---- cordon Events ---- */

/* Whether workload id's placement holds pods on node `node` (a placement
 * longer than the stack's room is read into the heap; without memory, the
 * first PLACES_ON_STACK entries are read). */
#define PLACES_ON_STACK 64
static bool placed_on(const queue_t *q, queue_wl_t id, const char *node)
{
	queue_place_t stack[PLACES_ON_STACK], *pl = stack;
	size_t np = 0, cap = PLACES_ON_STACK;
	bool there = false;

	queue_workload_placement(q, id, pl, cap, &np);
	if (np > cap && (pl = malloc(np * sizeof(*pl)))) {
		cap = np;
		queue_workload_placement(q, id, pl, cap, &np);
	} else if (!pl) {
		pl = stack;
	}
	for (size_t i = 0; i < np && i < cap && !there; i++)
		there = !strcmp(pl[i].node, node);
	if (pl != stack)
		free(pl);
	return there;
}

/* Node `name` of a placement turned unschedulable: an Event on each
 * released parent with pods placed there (leader only; said once per
 * transition, by the caller). */
static void say_cordon(struct controller *c, const controller_node_t *n)
{
	const queue_t *q = engine_core(c->e);
	controller_map_slot_t *s;
	size_t pos = 0;
	char note[512];

	if (n->not_ready)
		snprintf(note, sizeof(note),
			 "node %s of its placement is not Ready: nothing new is placed there, "
			 "and unless it is Ready again %lld s after it turned so, the workload "
			 "is evicted (NodeFailures) and placed again on healthy nodes",
			 n->name, (long long)(engine_config(c->e)->node_failure_ms / 1000));
	else
		snprintf(note, sizeof(note),
			 "node %s of its placement was cordoned: its pods there keep running; "
			 "nothing new is placed there",
			 n->name);
	while (q && (s = controller_map_next(&c->jobs, &pos))) {
		controller_job_t *j = s->value;
		queue_wl_t id;

		/* a suspended parent has no pods running (a queued one, or one
		   admitted and not yet released): nothing to say, and the walk
		   stays short with 100,000 queued */
		if (j->suspended || !j->in_core || !j->wl || queue_workload_find(q, j->uid, &id) ||
		    !placed_on(q, id, n->name))
			continue;
		c->cordons_said++;
		if (c->swriter && atomic_load(&c->leader))
			(void)controller_swriter_event_ref(
			    c->swriter, j->wl->integ->api_version, j->wl->integ->kind_name,
			    controller_job_ns(j), controller_job_name(j), j->uid, "Warning",
			    "NodeUnschedulable", "Place", note);
	}
}

/* ---- feeding the core ---- */

/* Node rec as the core should hold it, set there when that changed (or
 * always when force). */
static void feed(struct controller *c, node_rec_t *rec, bool force)
{
	const controller_node_t *n = rec->n;
	const node_use_t *u = controller_map_get(&c->node_use, n->name);
	queue_label_t l[QUEUE_NODE_LABELS_MAX];
	queue_request_t used[CONTROLLER_NODE_RES_MAX], own[CONTROLLER_NODE_RES_MAX];
	queue_node_spec_t spec = {.name = n->name,
				  .labels = l,
				  .allocatable = n->alloc,
				  .n_allocatable = n->n_alloc,
				  .used = used,
				  .pods_used = u ? u->other.pods : 0,
				  .own = own,
				  .pods_own = u ? u->own.pods : 0,
				  .taints = n->taints,
				  .n_taints = n->n_taints,
				  .unschedulable = n->cordoned,
				  .not_ready = n->not_ready,
				  .not_ready_since = n->not_ready ? n->not_ready_since : 0};
	gpuq_diag_t diag = {{0}};
	uint64_t h;

	spec.n_labels = pick_labels(c, n, l);
	for (size_t i = 0; u && i < u->other.n; i++)
		used[spec.n_used++] = (queue_request_t){u->other.r[i].name, u->other.r[i].amount};
	for (size_t i = 0; u && i < u->own.n; i++)
		own[spec.n_own++] = (queue_request_t){u->own.r[i].name, u->own.r[i].amount};
	h = digest(&spec);
	if (!engine_core(c->e) || (!force && h == rec->fed))
		return;
	if (engine_change_apply(
		c->e, &(engine_change_t){.kind = ENGINE_CHANGE_NODE_SET, .node_spec = &spec},
		&diag)) {
		if (rec->fed != 1) /* said once until it is taken */
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "node %s left out of topology placement: %s", n->name, diag.msg);
		rec->fed = 1;
		return;
	}
	rec->fed = h;
	c->nodes_fed++;
	c->core_dirty = true;
	if ((spec.unschedulable || spec.not_ready) && !rec->was_unsched)
		say_cordon(c, n);
	rec->was_unsched = spec.unschedulable || spec.not_ready;
}

void controller_nodes_feed(struct controller *c, bool fresh)
{
	controller_map_slot_t *s;
	size_t pos = 0;

	while ((s = controller_map_next(&c->nodes, &pos)))
		if (((node_rec_t *)s->value)->n)
			feed(c, s->value, fresh);
}

/* Node `name` (rec) out of the core. */
static void unfeed(struct controller *c, node_rec_t *rec, const char *name)
{
	if (rec->fed && engine_core(c->e) &&
	    engine_change_apply(c->e,
				&(engine_change_t){.kind = ENGINE_CHANGE_NODE_DELETE, .node = name},
				NULL) == GPUQ_OK)
		c->core_dirty = true;
	rec->fed = 0;
}

/* Node `name` (not a key of c->nodes: deleting its entry frees that) gone. */
static void node_forget(struct controller *c, const char *name)
{
	node_rec_t *rec = controller_map_del(&c->nodes, name);

	if (!rec)
		return;
	unfeed(c, rec, name);
	controller_node_destroy(rec->n);
	free(rec);
}

static void nodes_synced(struct controller *c)
{
	controller_map_slot_t *s;
	size_t pos = 0, n = 0;
	char **gone = calloc(c->nodes.n + 1, sizeof(*gone));

	while (gone && (s = controller_map_next(&c->nodes, &pos)))
		if (((node_rec_t *)s->value)->gen != c->nodes_gen && (gone[n] = strdup(s->key)))
			n++;
	for (size_t i = 0; i < n; i++) {
		node_forget(c, gone[i]);
		free(gone[i]);
	}
	free(gone);
}

/* A Node that did not decode (ev->uid its name, ev->bad why), said once:
 * one known before keeps its last good version in the core, cordoned (it
 * takes nothing new; what runs there stays: a refused version is no
 * failure, and deleting it would evict its workloads as NodeFailures);
 * one never known stays out. Until a version of it decodes. */
static void refused(struct controller *c, controller_cevent_t *ev)
{
	node_rec_t *rec = ev->uid ? controller_map_get(&c->nodes, ev->uid) : NULL;

	if (!rec && ev->uid && (rec = calloc(1, sizeof(*rec))) &&
	    controller_map_put(&c->nodes, ev->uid, rec, NULL)) {
		free(rec);
		rec = NULL;
	}
	if (rec && rec->refused) {
		rec->gen = c->nodes_gen;
		return;
	}
	gpuq_log(GPUQ_LOG_WARN, "controller",
		 "%s: nothing new placed on it until a version of it is read",
		 ev->bad ? ev->bad : "a Node did not decode");
	if (!rec)
		return;
	rec->refused = true;
	rec->gen = c->nodes_gen;
	if (!rec->n)
		return;
	rec->n->cordoned = true;
	rec->was_unsched = true; /* no cordon of its own: no Event */
	feed(c, rec, false);
}

void controller_nodes_apply(struct controller *c, controller_cevent_t *ev)
{
	node_rec_t *rec;

	switch (ev->type) {
	case KUBE_EV_RESET:
		c->nodes_gen++;
		return;
	case KUBE_EV_SYNCED:
		nodes_synced(c);
		c->listed[ev->res] = true;
		return;
	case KUBE_EV_DELETED:
		if (ev->node || ev->uid)
			node_forget(c, ev->node ? ev->node->name : ev->uid);
		return;
	default:
		break;
	}
	if (!ev->node) {
		refused(c, ev);
		return;
	}
	rec = controller_map_get(&c->nodes, ev->node->name);
	if (!rec) {
		rec = calloc(1, sizeof(*rec));
		if (!rec || controller_map_put(&c->nodes, ev->node->name, rec, NULL)) {
			free(rec);
			return;
		}
		/* first seen cordoned: no placement there is new, nothing to say */
		rec->was_unsched = ev->node->cordoned || ev->node->not_ready;
	}
	controller_node_destroy(rec->n);
	rec->n = ev->node;
	ev->node = NULL;
	rec->gen = c->nodes_gen;
	rec->refused = false;
	feed(c, rec, false);
}

/* ---- what the Pods bound to a node use ---- */

static void sum_free(use_sum_t *s)
{
	for (size_t k = 0; k < s->n; k++)
		free(s->r[k].name);
}

/* Add (sign 1) or take away (-1) Pod p's request to sum s. */
static void sum_add(use_sum_t *s, const pod_use_t *p, int sign)
{
	s->pods += sign;
	for (size_t i = 0; i < p->n; i++) {
		size_t k = 0;
		while (k < s->n && strcmp(s->r[k].name, p->r[i].name) != 0)
			k++;
		if (k == s->n) {
			if (k == CONTROLLER_NODE_RES_MAX || !(s->r[k].name = strdup(p->r[i].name)))
				continue;
			s->n++;
		}
		s->r[k].amount += sign * p->r[i].amount;
	}
}

/* Add (sign 1) or take away (-1) Pod p's request on its node; feed the node. */
static void use_add(struct controller *c, const pod_use_t *p, int sign)
{
	node_use_t *u = controller_map_get(&c->node_use, p->node);
	node_rec_t *rec;

	if (!u) {
		if (sign < 0 || !(u = calloc(1, sizeof(*u))))
			return;
		if (controller_map_put(&c->node_use, p->node, u, NULL)) {
			free(u);
			return;
		}
	}
	sum_add(p->own ? &u->own : &u->other, p, sign);
	if (u->other.pods <= 0 && u->own.pods <= 0) { /* the node's last counted Pod */
		sum_free(&u->other);
		sum_free(&u->own);
		free(controller_map_del(&c->node_use, p->node));
	}
	if ((rec = controller_map_get(&c->nodes, p->node)) && rec->n)
		feed(c, rec, false);
}

static void pod_use_free(pod_use_t *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->r[i].name);
	free(p->node);
	free(p);
}

void controller_nodes_pod_gone(struct controller *c, const char *uid)
{
	pod_use_t *p = controller_map_del(&c->pod_use, uid);

	if (!p)
		return;
	use_add(c, p, -1);
	pod_use_free(p);
}

/* Pod o's record (o resolved), NULL without memory. */
static pod_use_t *pod_use_new(const workload_t *o)
{
	const workload_podset_t *ps = &o->podsets[0];
	pod_use_t *p = calloc(1, sizeof(*p) + ps->n_requests * sizeof(use_res_t));

	if (!p || !(p->node = strdup(o->x->node_name))) {
		free(p);
		return NULL;
	}
	for (size_t i = 0; i < ps->n_requests; i++) {
		if (!(p->r[p->n].name = strdup(ps->requests[i].name))) {
			pod_use_free(p);
			return NULL;
		}
		p->r[p->n++].amount = ps->requests[i].amount;
	}
	return p;
}

/* Whether p and q count the same on the same node. */
static bool same_use(const pod_use_t *p, const pod_use_t *q)
{
	if (strcmp(p->node, q->node) != 0 || p->own != q->own || p->n != q->n)
		return false;
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->r[i].name, q->r[i].name) != 0 || p->r[i].amount != q->r[i].amount)
			return false;
	return true;
}

void controller_nodes_pod(struct controller *c, workload_t *o)
{
	pod_use_t *had = controller_map_get(&c->pod_use, o->uid), *p;

	if (!o->x->node_name || !*o->x->node_name || o->finished || o->n_podsets != 1 ||
	    controller_resolve(c, o, NULL) || !(p = pod_use_new(o))) {
		controller_nodes_pod_gone(c, o->uid); /* not (or no longer) counted */
		return;
	}
	p->gen = c->pods_gen;
	p->own = o->admitted;
	if (had && same_use(had, p)) {
		had->gen = c->pods_gen;
		pod_use_free(p);
		return;
	}
	controller_nodes_pod_gone(c, o->uid);
	if (controller_map_put(&c->pod_use, o->uid, p, NULL)) {
		pod_use_free(p);
		return;
	}
	use_add(c, p, 1);
}

void controller_nodes_pods_synced(struct controller *c)
{
	controller_map_slot_t *s;
	size_t pos = 0, n = 0;
	char **gone = calloc(c->pod_use.n + 1, sizeof(*gone));

	while (gone && (s = controller_map_next(&c->pod_use, &pos)))
		if (((pod_use_t *)s->value)->gen != c->pods_gen && (gone[n] = strdup(s->key)))
			n++;
	for (size_t i = 0; i < n; i++) {
		controller_nodes_pod_gone(c, gone[i]);
		free(gone[i]);
	}
	free(gone);
}

void controller_nodes_free_all(struct controller *c)
{
	controller_map_slot_t *s;
	size_t pos = 0;

	while ((s = controller_map_next(&c->nodes, &pos))) {
		controller_node_destroy(((node_rec_t *)s->value)->n);
		free(s->value);
	}
	controller_map_deinit(&c->nodes);
	pos = 0;
	while ((s = controller_map_next(&c->node_use, &pos))) {
		node_use_t *u = s->value;
		sum_free(&u->other);
		sum_free(&u->own);
		free(u);
	}
	controller_map_deinit(&c->node_use);
	pos = 0;
	while ((s = controller_map_next(&c->pod_use, &pos)))
		pod_use_free(s->value);
	controller_map_deinit(&c->pod_use);
}

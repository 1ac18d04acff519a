/* controller/sets.c: StatefulSets and LeaderWorkerSets, the sets admitted
 * by gates on their Pods. The set object is watched (decoded once, on its
 * watch thread) for what its Pods will ask: its workloads are in the core as
 * soon as the set is known, with the set's own pod sets and counts, so a
 * set whose Pods appear one after another (a StatefulSet's OrderedReady, an
 * LWS's LeaderReady) is admitted before they exist: its quota reserved
 * whole, each Pod let through as it appears (pods.c). Waiting for every Pod
 * first would deadlock them: a gated Pod never becomes Ready.
 *
 * A StatefulSet is one workload of its replicas, cut into slices by scaling:
 * a scale-up queues the new replicas as a slice of their own (indexes
 * [from, to): a Pod's index is its ordinal less spec.ordinals.start), or
 * grows the newest slice while that one still queues; a scale-down drops
 * the slices above the new count and shrinks the one it cuts (an admitted
 * one keeps its flavors), freeing quota; adjacent slices admitted on the
 * same flavors merge into one. So however often it is scaled, a set holds
 * at most one slice per replica, and mostly one or two. An LWS is one
 * workload per group (its leader and its workers, two pod sets); a scale
 * changes which groups exist. A set's workloads leave the core with the
 * set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

#define SET_KEY_MAX 600	    /* "sts:" + namespace + "/" + name (+ "/" + number) */
#define LWS_GROUPS_MAX 1024 /* an LWS's groups gpuq admits (spec.replicas) */

/* A StatefulSet's slices have no cap of their own: each holds one replica
 * or more, so there are never more than spec.replicas of them, however
 * often it is scaled; and a scale-up while the newest slice still queues
 * grows that slice, and adjacent admitted slices on the same flavors merge
 * (compact), so in practice a set is a few workloads. */
typedef struct {
	char *key;	      /* "sts:<ns>/<name>" or "lws:<ns>/<name>" (owned) */
	controller_res_t res; /* its collection */
	workload_t *wl;	      /* decoded and resolved (owned) */
	uint64_t gen;	      /* LIST generation it was last seen in */
	int64_t *edge;	      /* a StatefulSet's slices: Pod indexes [edge[i],
				 edge[i+1]) (owned; n_slices + 1 in use) */
	size_t n_slices;      /* slices (entries of edge in use, less one) */
	size_t cap_edge;      /* entries of edge allocated */
	int64_t groups;	      /* an LWS's groups in the core: [0, groups) */
	int64_t surge_hi;     /* ... and past them, its surge groups, in
				 [groups, surge_hi) (surge_hi >= groups) */
	bool bad;	      /* logged once: kept out of the core */
	bool restored;	      /* a StatefulSet's slices looked for in the core
				 once (slices_restore) */
} set_t;

static void set_free(set_t *s)
{
	if (!s)
		return;
	workload_destroy(s->wl);
	free(s->edge);
	free(s->key);
	free(s);
}

void controller_sets_free_all(struct controller *c)
{
	size_t pos = 0;
	controller_map_slot_t *s;

	while ((s = controller_map_next(&c->sets, &pos)))
		set_free(s->value);
	controller_map_deinit(&c->sets);
}

static const char *prefix_of(workload_kind_t k)
{
	const char *p = workload_integration(k)->set_key;

	return p ? p : "sts";
}

/* Whether a set of kind k makes one workload per replica group (an LWS),
 * not slices of ordinals (a StatefulSet). */
static bool groups(workload_kind_t k)
{
	return workload_integration(k)->set == WORKLOAD_SET_GROUPS;
}

/* The workload key of group `first` of set key ("sts:ns/name" + "/3"). */
static void group_key(const char *set_key, int64_t first, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%lld", set_key, (long long)first);
}

/* A set's Pod ordinal: the number after the last '-' of its name. */
static int64_t ordinal(const char *name)
{
	const char *dash = strrchr(name, '-');
	char *end = NULL;
	long long n;

	if (!dash || dash[1] < '0' || dash[1] > '9')
		return -1;
	n = strtoll(dash + 1, &end, 10);
	return *end ? -1 : n;
}

bool controller_sets_member_key(struct controller *c, const workload_t *o, char *out, size_t cap)
{
	char key[SET_KEY_MAX];
	const set_t *s;
	int64_t n;

	if (!workload_integration(o->x->set_kind)->set_key)
		return false;
	snprintf(key, sizeof(key), "%s:%s/%s", prefix_of(o->x->set_kind), o->namespace_,
		 o->x->set_name ? o->x->set_name : "");
	s = controller_map_get(&c->sets, key);
	if (groups(o->x->set_kind)) {
		if (o->x->set_group < 0)
			return false; /* its group index label comes from the LWS webhook */
		group_key(key, o->x->set_group, out, cap);
		return true;
	}
	/* a StatefulSet's Pod: the slice of its index (its ordinal less the
	 * set's first, spec.ordinals.start); a Pod seen before its set (the
	 * watches list independently), the first slice, and past the slices (a
	 * scale-up not seen yet), the next one: the set's event puts its
	 * workload in the core. A Pod below the first ordinal is no replica
	 * (its controller deletes it): a key of no slice, held. */
	n = ordinal(o->name);
	if (n < 0)
		return false;
	if (s && s->wl)
		n -= s->wl->x->first_ordinal;
	if (n < 0) {
		group_key(key, -1, out, cap);
		return true;
	}
	for (size_t i = 0; s && i < s->n_slices; i++)
		if (n >= s->edge[i] && n < s->edge[i + 1]) {
			group_key(key, s->edge[i], out, cap);
			return true;
		}
	group_key(key, s && s->n_slices ? s->edge[s->n_slices] : 0, out, cap);
	return true;
}

/* Whether the set is gpuq's: it asks for GPUs in a managed namespace, with a
 * queue (its own label, which /mutate copies into its Pods' template). */
static bool managed(const struct controller *c, const workload_t *w)
{
	return w->gpu && w->queue && policy_namespace_managed(c->policy, w->namespace_);
}

/* What group g of set s asks of the core (ws; the rest are its arrays and
 * name): the set's pod sets, `count` pods of the main pod set (a
 * StatefulSet slice), not a gang (fast admission). */
typedef struct {
	controller_podset_buf_t buf[WORKLOAD_PODSETS_MAX];
	queue_podset_spec_t ps[WORKLOAD_PODSETS_MAX];
	char name[QUEUE_NAME_MAX + 1];
	queue_workload_spec_t ws;
} group_spec_t;

static void group_spec(const set_t *s, const controller_pgroup_t *g, int64_t count,
		       group_spec_t *sp)
{
	const workload_t *w = s->wl;

	/* named as people name it: "lws/infer-0", "statefulset/web+2" (a slice
	 * from Pod web-2 on) */
	if (groups(w->kind))
		snprintf(sp->name, sizeof(sp->name), "%s/%.200s-%lld", w->integ->short_name,
			 w->name, (long long)g->first);
	else if (g->first)
		snprintf(sp->name, sizeof(sp->name), "%s/%.200s+%lld", w->integ->short_name,
			 w->name, (long long)g->first + w->x->first_ordinal);
	else
		snprintf(sp->name, sizeof(sp->name), "%s/%.200s", w->integ->short_name, w->name);
	for (size_t i = 0; i < w->n_podsets; i++)
		controller_podset_from(&w->podsets[i],
				       (int32_t)(groups(w->kind) ? w->podsets[i].count : count),
				       &sp->buf[i], &sp->ps[i]);
	sp->ws = (queue_workload_spec_t){
	    .namespace_ = w->namespace_,
	    .name = sp->name,
	    .uid = g->key,
	    .local_queue = w->queue,
	    .priority = w->priority,
	    .created_ms = w->created_ms,
	    .podsets = sp->ps,
	    .n_podsets = w->n_podsets,
	    .max_exec_s = w->x->max_exec_s,
	};
}

/* Group g of set s into the core, of `count` pods (group_spec). */
static void group_register(struct controller *c, const set_t *s, controller_pgroup_t *g,
			   int64_t count)
{
	const workload_t *w = s->wl;
	group_spec_t sp;
	gpuq_diag_t diag = {{0}};
	int rc;

	group_spec(s, g, count, &sp);
	g->total = (int32_t)(groups(w->kind) ? w->pods : count);
	rc = engine_change_apply(
	    c->e,
	    &(engine_change_t){.kind = ENGINE_CHANGE_ADD, .spec = &sp.ws, .now = controller_now(c)},
	    &diag);
	if (rc == GPUQ_OK) {
		gpuq_log(GPUQ_LOG_INFO, "controller", "%s %s/%s queued: %d pods (%s)",
			 w->integ->kind_name, w->namespace_, w->name, g->total, g->key);
		c->core_dirty = true;
		controller_status_note(c, g->key);
	} else if (rc != GPUQ_EEXIST && !g->bad) {
		gpuq_log(GPUQ_LOG_WARN, "controller", "%s %s/%s waits outside the queue: %s",
			 w->integ->kind_name, w->namespace_, sp.name,
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
		g->bad = true;
	}
}

/* The group of key, made when missing (a set's group with no member yet). */
static controller_pgroup_t *group_get(struct controller *c, const set_t *s, int64_t first)
{
	char key[SET_KEY_MAX];
	controller_pgroup_t *g;

	group_key(s->key, first, key, sizeof(key));
	g = controller_map_get(&c->groups, key);
	if (g)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g || !(g->key = strdup(key)) || !(g->set = strdup(s->key)) ||
	    controller_map_put(&c->groups, key, g, NULL)) {
		if (g) {
			free(g->key);
			free(g->set);
		}
		free(g);
		return NULL;
	}
	controller_map_init(&g->members);
	g->group = true;
	g->first = first;
	return g;
}

/* Set group g, with no member, out of the core and freed. */
static void group_free(struct controller *c, controller_pgroup_t *g)
{
	(void)controller_wl_change(c, ENGINE_CHANGE_DELETE, g->key);
	controller_map_del(&c->groups, g->key);
	controller_map_deinit(&g->members);
	free(g->key);
	free(g->set);
	free(g);
}

/* Drop group first of s (scaled away, or its set gone). One with no Pod
 * leaves the core (its quota freed) and is gone; one whose Pods still go
 * (they hold their GPUs until they are gone: a grace period, a finalizer)
 * keeps its admission until the last of them is gone
 * (controller_sets_group_empty frees it then). */
static void group_drop(struct controller *c, const set_t *s, int64_t first)
{
	char key[SET_KEY_MAX];
	controller_pgroup_t *g;

	group_key(s->key, first, key, sizeof(key));
	g = controller_map_get(&c->groups, key);
	if (g && g->members.n) {
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "%s: %s was scaled away; its quota is held until its %zu Pods are gone",
			 s->key, key, g->members.n);
		return;
	}
	(void)controller_wl_change(c, ENGINE_CHANGE_DELETE, key);
	if (g)
		group_free(c, g);
}

/* Group from of set s moved into group into: its members (Pods seen
 * before the scale-up that made them replicas of into's slice, or the Pods
 * of a slice merged into the one below) become into's, and from is gone.
 * False when a member could not move (out of memory: logged; it and from
 * stay, its Pod held until a later event of the set tries again). */
static bool fold(struct controller *c, const set_t *s, int64_t from, controller_pgroup_t *into)
{
	char key[SET_KEY_MAX];
	controller_pgroup_t *g;
	controller_map_slot_t *m;
	size_t pos = 0;

	group_key(s->key, from, key, sizeof(key));
	g = controller_map_get(&c->groups, key);
	if (g == into)
		return true;
	if (!g) { /* no Pod of it seen yet (after a restart, say): its workload goes */
		(void)controller_wl_change(c, ENGINE_CHANGE_DELETE, key);
		return true;
	}
	while ((m = controller_map_next(&g->members, &pos))) {
		char *k = strdup(into->key);
		void *old = NULL;

		if (!k || controller_map_put(&into->members, m->key, m->value, NULL)) {
			free(k);
			gpuq_log(GPUQ_LOG_ERROR, "controller", "%s: cannot move Pod %s to %s",
				 s->key, m->key, into->key);
			return false;
		}
		if (controller_map_put(&c->pod_group, m->key, k, &old)) {
			free(k);
			controller_map_del(&into->members, m->key);
			gpuq_log(GPUQ_LOG_ERROR, "controller", "%s: cannot move Pod %s to %s",
				 s->key, m->key, into->key);
			return false;
		}
		free(old);
		controller_map_del(&g->members, m->key);
	}
	group_free(c, g);
	return true;
}

/* The flavors admitted workload id holds for its pod set 0 into a[] (names
 * copied into names): how many. */
static size_t held_flavors(struct controller *c, queue_wl_t id, queue_adopt_t *a,
			   char (*names)[2][QUEUE_NAME_MAX + 1])
{
	size_t n = 0;

	for (uint32_t r = 0;
	     r < queue_resource_count(engine_core(c->e)) && n < QUEUE_PODSET_RES_MAX; r++) {
		uint32_t f;

		if (queue_workload_flavor(engine_core(c->e), id, 0, r, &f))
			continue;
		gpuq_strlcpy(names[n][0], queue_resource_name(engine_core(c->e), r),
			     sizeof(names[n][0]));
		gpuq_strlcpy(names[n][1], queue_flavor_name(engine_core(c->e), f),
			     sizeof(names[n][1]));
		a[n] = (queue_adopt_t){.podset = 0, .resource = names[n][0], .flavor = names[n][1]};
		n++;
	}
	return n;
}

/* Queued group g of s recomputed in place to `count` pods and its set's
 * queue (ENGINE_CHANGE_UPDATE: it keeps its place where its queue
 * stays); false when the core refused it. */
static bool group_update(struct controller *c, const set_t *s, controller_pgroup_t *g,
			 int64_t count)
{
	group_spec_t sp;
	bool changed = false;

	group_spec(s, g, count, &sp);
	if (engine_change_apply(c->e,
				&(engine_change_t){.kind = ENGINE_CHANGE_UPDATE,
						   .spec = &sp.ws,
						   .now = controller_now(c),
						   .changed = &changed},
				NULL) != GPUQ_OK)
		return false;
	g->total = (int32_t)count;
	c->core_dirty |= changed;
	controller_status_note(c, g->key);
	return true;
}

/* A slice of the core resized to count pods: a queued one recomputed in
 * place (ENGINE_CHANGE_UPDATE: it keeps its place in the queue); an
 * admitted one re-added with the flavors it holds (queue_workload_adopt),
 * so the quota of the replicas gone is freed and the running ones keep
 * theirs, as the same admission (ENGINE_CHANGE_CARRY: its minimum runtime
 * and wall-clock limit count on); any other re-added. Nothing when the core does not hold it (the
 * caller's loop adds it whole). */
static void slice_resize(struct controller *c, const set_t *s, controller_pgroup_t *g,
			 int64_t count)
{
	queue_adopt_t a[QUEUE_PODSET_RES_MAX];
	char names[QUEUE_PODSET_RES_MAX][2][QUEUE_NAME_MAX + 1];
	queue_workload_view_t v;
	queue_wl_t id;
	size_t n = 0;
	bool admitted;

	if (queue_workload_find(engine_core(c->e), g->key, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v))
		return;
	if (v.state == QUEUE_WL_PENDING && group_update(c, s, g, count))
		return;
	admitted = v.state == QUEUE_WL_ADMITTED;
	if (admitted)
		n = held_flavors(c, id, a, names);
	(void)controller_wl_change(c, ENGINE_CHANGE_DELETE, g->key);
	group_register(c, s, g, count);
	if (admitted && engine_change_apply(c->e,
					    &(engine_change_t){.kind = ENGINE_CHANGE_ADOPT,
							       .uid = g->key,
							       .adopt = a,
							       .n_adopt = n,
							       .now = controller_now(c)},
					    NULL))
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "StatefulSet %s: its slice %s kept no flavors", s->key, g->key);
	else if (admitted && engine_change_apply(c->e,
						 &(engine_change_t){.kind = ENGINE_CHANGE_CARRY,
								    .uid = g->key,
								    .admitted_ms = v.admitted_ms,
								    .exec_ms = v.exec_ms},
						 NULL))
		gpuq_log(GPUQ_LOG_WARN, "controller",
			 "StatefulSet %s: its slice %s resized counts as admitted now", s->key,
			 g->key);
	c->core_dirty = true;
}

/* Counting a slice's Pods past its replicas (a scale-down's, still going). */
typedef struct {
	int64_t lo, hi;	   /* the slice's Pod indexes [lo, hi) */
	int64_t first_ord; /* the set's spec.ordinals.start */
	int64_t outside;   /* Pods of the slice outside [lo, hi) */
} outside_t;

static void count_outside(void *ctx, const char *ns, const char *name)
{
	outside_t *o = ctx;
	int64_t n = ordinal(name);

	(void)ns;
	if (n >= 0 && (n - o->first_ord < o->lo || n - o->first_ord >= o->hi))
		o->outside++;
}

/* Whether the queued workload v of set s waits in another LocalQueue than
 * the set's label names now (a move the webhook judged: followed). */
static bool label_moved(struct controller *c, const set_t *s, const queue_workload_view_t *v)
{
	const char *lq = queue_lq_name(engine_core(c->e), v->lq),
		   *slash = lq ? strchr(lq, '/') : NULL;

	return s->wl->queue && (!slash || strcmp(slash + 1, s->wl->queue) != 0);
}

/* Group g of s (an LWS's) follows its set: queued, its queue label;
 * admitted, its wall-clock limit. */
static void group_follow_queue(struct controller *c, const set_t *s, controller_pgroup_t *g)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (!queue_workload_find(engine_core(c->e), g->key, &id) &&
	    !queue_workload_view(engine_core(c->e), id, &v) && v.state == QUEUE_WL_PENDING &&
	    label_moved(c, s, &v))
		(void)group_update(c, s, g, g->total);
	controller_limit_follow(c, g->key, s->wl, s->wl->x->max_exec_s); /* admitted: its limit */
}

/* Slice g of s, `size` replicas, in the core as it should be: added when
 * missing; a queued one recomputed to its size; an admitted one shrunk to
 * what it holds: its replicas and the Pods a scale-down cut off that still
 * go (a grace period, a finalizer), so the quota of a Pod is freed once the
 * Pod is gone, not before. An admitted slice never grows in place (that
 * would admit Pods past the quota): one that now has more replicas than it
 * was admitted for (scaled down, then up again while the Pods scaled away
 * were still going: its key is the same) queues again whole. */
static void slice_ensure(struct controller *c, const set_t *s, controller_pgroup_t *g, int64_t size)
{
	outside_t o = {.lo = g->first, .hi = g->first + size, .first_ord = s->wl->x->first_ordinal};
	queue_workload_view_t v;
	queue_wl_t id;

	if (queue_workload_find(engine_core(c->e), g->key, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v)) {
		group_register(c, s, g, size);
		return;
	}
	if (v.state == QUEUE_WL_PENDING) {
		/* a queued slice follows its set's count and queue label (moved to
		   another LocalQueue, it was left waiting where it was) */
		if (v.pods != size || label_moved(c, s, &v))
			slice_resize(c, s, g, size);
		return;
	}
	if (v.state != QUEUE_WL_ADMITTED)
		return;
	controller_limit_follow(c, g->key, s->wl, s->wl->x->max_exec_s);
	if (v.pods < size) {
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "StatefulSet %s: slice %s grew to %lld replicas while admitted for %d: "
			 "it queues again",
			 s->key, g->key, (long long)size, (int)v.pods);
		(void)controller_wl_change(c, ENGINE_CHANGE_DELETE, g->key);
		group_register(c, s, g, size);
		c->core_dirty = true;
		return;
	}
	controller_pods_each_member(g, count_outside, &o);
	if (v.pods > size + o.outside)
		slice_resize(c, s, g, size + o.outside);
}

void controller_sets_member_gone(struct controller *c, controller_pgroup_t *g)
{
	const set_t *s = g->set ? controller_map_get(&c->sets, g->set) : NULL;

	if (!s || !s->wl || groups(s->wl->kind) || !engine_core(c->e))
		return;
	for (size_t i = 0; i < s->n_slices; i++)
		if (s->edge[i] == g->first) {
			slice_ensure(c, s, g, s->edge[i + 1] - s->edge[i]);
			return;
		}
}

/* Room for one more slice in s (GPUQ_ENOMEM: none). */
static int edges_reserve(set_t *s)
{
	size_t cap = s->cap_edge ? s->cap_edge * 2 : 4;
	int64_t *e;

	if (s->n_slices + 2 <= s->cap_edge)
		return GPUQ_OK;
	e = realloc(s->edge, cap * sizeof(*e));
	if (!e)
		return GPUQ_ENOMEM;
	s->edge = e;
	s->cap_edge = cap;
	return GPUQ_OK;
}

/* Whether the core's workloads a and b are both admitted, on the same
 * flavors. */
static bool same_admission(struct controller *c, const char *a, const char *b)
{
	queue_wl_t ia, ib;
	queue_workload_view_t va, vb;

	if (queue_workload_find(engine_core(c->e), a, &ia) ||
	    queue_workload_view(engine_core(c->e), ia, &va) ||
	    queue_workload_find(engine_core(c->e), b, &ib) ||
	    queue_workload_view(engine_core(c->e), ib, &vb) || va.state != QUEUE_WL_ADMITTED ||
	    vb.state != QUEUE_WL_ADMITTED)
		return false;
	for (uint32_t r = 0; r < queue_resource_count(engine_core(c->e)); r++) {
		uint32_t fa, fb;
		int ra = queue_workload_flavor(engine_core(c->e), ia, 0, r, &fa);
		int rb = queue_workload_flavor(engine_core(c->e), ib, 0, r, &fb);

		if (ra != rb || (!ra && fa != fb))
			return false;
	}
	return true;
}

/* Adjacent slices both admitted on the same flavors become one: the upper
 * one's Pods join the lower one, which holds their quota (slice_resize).
 * What a tenant cannot keep apart by scaling up and down. */
static void slices_compact(struct controller *c, set_t *s)
{
	for (size_t i = 0; i + 1 < s->n_slices;) {
		controller_pgroup_t *lo = group_get(c, s, s->edge[i]);
		char hi[SET_KEY_MAX];

		group_key(s->key, s->edge[i + 1], hi, sizeof(hi));
		if (!lo || !same_admission(c, lo->key, hi) || !fold(c, s, s->edge[i + 1], lo)) {
			i++;
			continue;
		}
		memmove(&s->edge[i + 1], &s->edge[i + 2], (s->n_slices - i - 1) * sizeof(*s->edge));
		s->n_slices--;
		slice_resize(c, s, lo, s->edge[i + 1] - s->edge[i]);
		gpuq_log(GPUQ_LOG_INFO, "controller", "StatefulSet %s: slice %s merged into %s",
			 s->key, hi, lo->key);
	}
}

/* A scale-up of s to `want` replicas: a newest slice that still queues
 * grows to hold the new replicas (its Pods seen first moved in); else the
 * new replicas queue as a slice of their own. */
static void slices_grow(struct controller *c, set_t *s, int64_t want)
{
	int64_t end = s->n_slices ? s->edge[s->n_slices] : 0;
	controller_pgroup_t *tail = s->n_slices ? group_get(c, s, s->edge[s->n_slices - 1]) : NULL;
	queue_workload_view_t v;
	queue_wl_t id;

	if (tail &&
	    (queue_workload_find(engine_core(c->e), tail->key, &id) ||
	     (queue_workload_view(engine_core(c->e), id, &v) == GPUQ_OK &&
	      v.state == QUEUE_WL_PENDING)) &&
	    fold(c, s, end, tail)) {
		s->edge[s->n_slices] = want;
		slice_resize(c, s, tail, want - tail->first);
		return;
	}
	if (edges_reserve(s)) {
		gpuq_log(GPUQ_LOG_ERROR, "controller",
			 "StatefulSet %s: no memory for a slice: replicas %lld to %lld wait",
			 s->key, (long long)end, (long long)want);
		return;
	}
	if (!s->n_slices)
		s->edge[0] = 0;
	s->edge[++s->n_slices] = want;
}

static int by_first(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* A StatefulSet first seen by this controller (its slices unknown) whose
 * slices the core already holds (restored from the store after a restart):
 * its edges taken from them, so each slice is matched again with what the
 * core admitted (without this, the set was cut anew from 0 and a restored
 * slice past the first held its quota with no Pod of its own). Slices that
 * do not tile [0, n) (an older layout) are left to the usual path. */
static void slices_restore(struct controller *c, set_t *s)
{
	size_t plen = strlen(s->key), n = 0, cap = 0;
	int64_t(*sl)[2] = NULL;
	bool tiled = true;

	for (queue_wl_t id = queue_workload_next(engine_core(c->e), QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(engine_core(c->e), id)) {
		queue_workload_view_t v;
		char *end = NULL;
		long long first;

		if (queue_workload_view(engine_core(c->e), id, &v) ||
		    strncmp(v.uid, s->key, plen) != 0 || v.uid[plen] != '/')
			continue;
		first = strtoll(v.uid + plen + 1, &end, 10);
		if (*end || first < 0 || v.pods < 1)
			continue;
		if (n == cap) {
			int64_t(*more)[2] = realloc(sl, (cap ? cap * 2 : 4) * sizeof(*sl));
			if (!more) {
				free(sl);
				return; /* the usual path */
			}
			sl = more;
			cap = cap ? cap * 2 : 4;
		}
		sl[n][0] = first;
		sl[n++][1] = first + v.pods;
	}
	if (n)
		qsort(sl, n, sizeof(*sl), by_first);
	for (size_t i = 0; i < n && tiled; i++)
		tiled = sl[i][0] == (i ? sl[i - 1][1] : 0);
	for (size_t i = 0; i < n && tiled; i++) {
		if (edges_reserve(s)) {
			s->n_slices = 0;
			break;
		}
		s->edge[i] = sl[i][0];
		s->edge[i + 1] = sl[i][1];
		s->n_slices = i + 1;
	}
	if (s->n_slices)
		gpuq_log(GPUQ_LOG_INFO, "controller",
			 "StatefulSet %s: %zu slices of Pods [0, %lld) matched with the queues",
			 s->key, s->n_slices, (long long)s->edge[s->n_slices]);
	free(sl);
}

/* A StatefulSet's slices brought to its replicas, then compacted. */
static void statefulset_slices(struct controller *c, set_t *s)
{
	int64_t want, end;

	if (!s->n_slices && !s->restored)
		slices_restore(c, s);
	s->restored = true;
	want = s->wl->replicas;
	end = s->n_slices ? s->edge[s->n_slices] : 0;

	if (want > end) {
		slices_grow(c, s, want);
	} else if (want < end) {
		while (s->n_slices && s->edge[s->n_slices - 1] >= want) {
			group_drop(c, s, s->edge[s->n_slices - 1]);
			s->n_slices--;
		}
		if (s->n_slices) /* the slice it cuts: slice_ensure shrinks it */
			s->edge[s->n_slices] = want;
	}
	slices_compact(c, s);
	for (size_t i = 0; i < s->n_slices; i++) {
		controller_pgroup_t *g = group_get(c, s, s->edge[i]);

		if (g)
			slice_ensure(c, s, g, s->edge[i + 1] - s->edge[i]);
		if (g)
			controller_touch_key(c, g->key);
	}
}

/* One past the last group index an LWS's Pods may have: spec.replicas
 * plus the groups a rolling update may make past them (its maxSurge); the
 * groups past spec.replicas are its surge groups. */
static int64_t lws_groups_hi(const set_t *s)
{
	int64_t hi = s->wl->replicas + s->wl->x->surge;

	return hi < LWS_GROUPS_MAX ? hi : LWS_GROUPS_MAX;
}

/* A surge group (past spec.replicas, within the surge) is in the core while
 * it has Pods: a rolling update with maxSurge makes it with the new template
 * and deletes it when done; a group scaled away whose Pods still go keeps
 * its quota until they are gone. */
static bool surge_held(const set_t *s, const controller_pgroup_t *g)
{
	return g && g->first >= s->groups && g->first < lws_groups_hi(s) && g->members.n > 0;
}

/* An LWS's groups brought to its replicas: groups [0, spec.replicas), each
 * queued as soon as the LWS is known, and the surge groups that have Pods;
 * the rest leave the core. */
static void lws_groups(struct controller *c, set_t *s)
{
	int64_t want = s->wl->replicas < LWS_GROUPS_MAX ? s->wl->replicas : LWS_GROUPS_MAX;
	int64_t was = s->surge_hi > s->groups ? s->surge_hi : s->groups, hi = want;

	s->groups = want;
	for (int64_t i = want; i < was || i < lws_groups_hi(s); i++) {
		char key[SET_KEY_MAX];
		controller_pgroup_t *g;

		group_key(s->key, i, key, sizeof(key));
		g = controller_map_get(&c->groups, key);
		if (surge_held(s, g)) {
			if (queue_workload_find(engine_core(c->e), g->key, &(queue_wl_t){0}) !=
			    GPUQ_OK)
				group_register(c, s, g, g->total);
			controller_touch_key(c, g->key);
			hi = i + 1;
		} else if (i < was) {
			group_drop(c, s, i);
		}
	}
	s->surge_hi = hi;
	for (int64_t i = 0; i < want; i++) {
		controller_pgroup_t *g = group_get(c, s, i);

		if (g &&
		    queue_workload_find(engine_core(c->e), g->key, &(queue_wl_t){0}) != GPUQ_OK)
			group_register(c, s, g, g->total);
		else if (g)
			group_follow_queue(c, s, g);
		if (g)
			controller_touch_key(c, g->key);
	}
}

/* The set's workloads in line with what it says. */
static void set_sync(struct controller *c, set_t *s)
{
	gpuq_diag_t diag = {{0}};

	if (!c->policy || !engine_core(c->e) || !s->wl)
		return;
	if (controller_resolve(c, s->wl, &diag)) {
		if (!s->bad)
			gpuq_log(GPUQ_LOG_WARN, "controller", "%s: %s", s->key, diag.msg);
		s->bad = true;
		return;
	}
	if (!managed(c, s->wl))
		return;
	/* an LWS's own StatefulSets (labelled with its name; owned by the LWS
	 * or by a group's leader Pod): the LWS's groups hold their Pods */
	if (workload_set_member(s->wl))
		return;
	if (groups(s->wl->kind))
		lws_groups(c, s);
	else
		statefulset_slices(c, s);
}

void controller_sets_group_add(struct controller *c, controller_pgroup_t *g)
{
	set_t *s = g->set ? controller_map_get(&c->sets, g->set) : NULL;

	if (!s || !s->wl || !engine_core(c->e) || !managed(c, s->wl))
		return;
	if (queue_workload_find(engine_core(c->e), g->key, &(queue_wl_t){0}) == GPUQ_OK)
		return;
	if (groups(s->wl->kind)) {
		if (g->first < s->groups || surge_held(s, g))
			group_register(c, s, g, g->total);
		if (surge_held(s, g) && g->first >= s->surge_hi)
			s->surge_hi = g->first + 1;
		return;
	}
	for (size_t i = 0; i < s->n_slices; i++)
		if (s->edge[i] == g->first)
			group_register(c, s, g, s->edge[i + 1] - s->edge[i]);
}

bool controller_sets_group_empty(struct controller *c, controller_pgroup_t *g)
{
	const set_t *s = controller_map_get(&c->sets, g->set);
	bool slice = false;

	if (!s || !s->wl) {
		group_free(c, g); /* its set is gone */
		return true;
	}
	if (groups(s->wl->kind)) {
		if (g->first < s->groups)
			return false; /* its controller makes its Pods again, gated */
		group_free(c, g);     /* a surge group done, or one scaled away */
		return true;
	}
	for (size_t i = 0; i < s->n_slices && !slice; i++)
		slice = s->edge[i] == g->first;
	if (slice)
		return false;
	group_free(c, g); /* Pods of no slice (yet): nothing in the core */
	return true;
}

static void forget(struct controller *c, const char *key)
{
	set_t *s = controller_map_del(&c->sets, key);

	if (!s)
		return;
	/* the set is gone: its workloads leave the core */
	if (s->wl && groups(s->wl->kind))
		for (int64_t i = 0; i < s->surge_hi || i < s->groups; i++)
			group_drop(c, s, i);
	else
		for (size_t i = 0; i < s->n_slices; i++)
			group_drop(c, s, s->edge[i]);
	set_free(s);
}

void controller_sets_apply(struct controller *c, controller_cevent_t *ev)
{
	char key[SET_KEY_MAX];
	workload_t *w = ev->wl;
	set_t *s;

	if (ev->type == KUBE_EV_RESET) {
		c->gen[ev->res]++;
		return;
	}
	if (ev->type == KUBE_EV_SYNCED) {
		size_t pos = 0;
		controller_map_slot_t *sl;
		while ((sl = controller_map_next(&c->sets, &pos))) {
			s = sl->value;
			if (s->res == ev->res && s->gen != c->gen[ev->res])
				forget(c, s->key);
		}
		c->listed[ev->res] = true;
		return;
	}
	if (!w) { /* a set that does not decode is nobody's workload */
		gpuq_log(GPUQ_LOG_DEBUG, "controller", "%s uid %s: %s",
			 controller_res_at(ev->res).name, ev->uid ? ev->uid : "?",
			 ev->bad ? ev->bad : "cannot decode");
		return;
	}
	snprintf(key, sizeof(key), "%s:%s/%s", prefix_of(w->kind), w->namespace_, w->name);
	if (ev->type == KUBE_EV_DELETED) {
		forget(c, key);
		return;
	}
	s = controller_map_get(&c->sets, key);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || !(s->key = strdup(key)) || controller_map_put(&c->sets, key, s, NULL)) {
			gpuq_log(GPUQ_LOG_ERROR, "controller", "%s: cannot cache", key);
			set_free(s);
			return;
		}
		s->res = ev->res;
	}
	workload_destroy(s->wl);
	s->wl = w;
	ev->wl = NULL; /* the cache's now */
	s->gen = c->gen[ev->res];
	s->bad = false;
	set_sync(c, s);
}

void controller_sets_resync(struct controller *c, const controller_nsset_t *only)
{
	size_t pos = 0;
	controller_map_slot_t *sl;

	while ((sl = controller_map_next(&c->sets, &pos))) {
		const set_t *s = sl->value;
		if (!s->wl || controller_nsset_has(only, s->wl->namespace_))
			set_sync(c, sl->value);
	}
}

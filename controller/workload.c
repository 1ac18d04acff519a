/* controller/workload.c: what every watched workload object goes through on
 * its way into the core: decoded once by the workload layer (the admission
 * rules' own decoding; informer.c, on the watch thread), resolved against
 * the policy in force, and its pod sets as pod sets of the core; and the
 * placement a decoded pod set carries, as JSON for a patch. */
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "engine/engine.h"

int controller_resolve(struct controller *c, workload_t *w, gpuq_diag_t *diag)
{
	return workload_resolve(w, c->policy, diag);
}

int controller_decode(struct controller *c, const char *text, size_t len, workload_t **w,
		      gpuq_diag_t *diag)
{
	const workload_config_t cfg = CONTROLLER_GPU_CFG(c);
	int rc;

	*w = NULL;
	rc = workload_decode_json(text, len, &cfg, w, diag);
	if (!rc)
		rc = controller_resolve(c, *w, diag);
	if (rc) {
		workload_destroy(*w);
		*w = NULL;
	}
	return rc;
}

int controller_wl_change(struct controller *c, engine_change_kind_t kind, const char *uid)
{
	int rc = engine_change_apply(
	    c->e, &(engine_change_t){.kind = kind, .uid = uid, .now = controller_now(c)}, NULL);

	if (rc == GPUQ_OK)
		c->core_dirty = true;
	return rc;
}

void controller_limit_follow(struct controller *c, const char *uid, const workload_t *o,
			     int32_t max_exec_s)
{
	queue_workload_view_t v;
	queue_wl_t id;
	bool changed = false;

	if (queue_workload_find(engine_core(c->e), uid, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v) || v.state != QUEUE_WL_ADMITTED ||
	    v.max_exec_s == max_exec_s)
		return;
	if (engine_change_apply(c->e,
				&(engine_change_t){.kind = ENGINE_CHANGE_LIMIT,
						   .uid = uid,
						   .max_exec_s = max_exec_s,
						   .now = controller_now(c),
						   .changed = &changed},
				NULL) ||
	    !changed)
		return;
	gpuq_log(GPUQ_LOG_INFO, "controller",
		 "%s %s/%s: its wall-clock limit is now %d s (0: its ClusterQueue's, if any)",
		 o->integ->kind_name, o->namespace_, o->name, (int)max_exec_s);
	c->core_dirty = true;
	controller_status_note(c, uid);
}

json_t *controller_selector_json(const workload_podset_t *ps)
{
	json_t *sel = json_object();

	for (size_t i = 0; sel && i < ps->n_node_selector; i++)
		json_object_set_new(sel, ps->node_selector[i].key,
				    json_string(ps->node_selector[i].value));
	return sel;
}

json_t *controller_tolerations_json(const workload_podset_t *ps)
{
	json_t *tols = json_array();

	for (size_t i = 0; tols && i < ps->n_tolerations; i++) {
		const workload_toleration_t *t = &ps->tolerations[i];
		json_t *o = json_object();

		if (!o)
			break;
		if (t->key)
			json_object_set_new(o, "key", json_string(t->key));
		if (t->op)
			json_object_set_new(o, "operator", json_string(t->op));
		if (t->value)
			json_object_set_new(o, "value", json_string(t->value));
		if (t->effect)
			json_object_set_new(o, "effect", json_string(t->effect));
		if (t->has_seconds)
			json_object_set_new(o, "tolerationSeconds", json_integer(t->seconds));
		json_array_append_new(tols, o);
	}
	return tols;
}

void controller_podset_from(const workload_podset_t *src, int32_t count, controller_podset_buf_t *b,
			    queue_podset_spec_t *ps)
{
	memset(b, 0, sizeof(*b));
	memset(ps, 0, sizeof(*ps));
	ps->name = src->name;
	ps->count = count;
	ps->requests = b->req;
	ps->node_selector = b->sel;
	ps->tolerations = b->tol;
	for (size_t i = 0; i < src->n_requests && ps->n_requests < QUEUE_PODSET_RES_MAX; i++) {
		if (src->requests[i].amount == 0)
			continue; /* a zero request needs no quota (Kueue: no NoFit) */
		b->req[ps->n_requests].resource = src->requests[i].name;
		b->req[ps->n_requests++].amount = src->requests[i].amount;
	}
	for (size_t i = 0; i < src->n_node_selector && i < QUEUE_SELECTORS_MAX; i++) {
		b->sel[i].key = src->node_selector[i].key;
		b->sel[i].value = src->node_selector[i].value;
		ps->n_node_selector++;
	}
	for (size_t i = 0; i < src->n_tolerations && ps->n_tolerations < QUEUE_SELECTORS_MAX; i++) {
		const workload_toleration_t *t = &src->tolerations[i];
		queue_toleration_t *tol = &b->tol[ps->n_tolerations];
		if (engine_effect_named(t->effect, &tol->effect))
			continue; /* an effect Kubernetes does not know tolerates no taint */
		tol->key = t->key ? t->key : "";
		tol->op = t->op && strcmp(t->op, "Exists") == 0 ? QUEUE_TOLERATE_EXISTS
								: QUEUE_TOLERATE_EQUAL;
		tol->value = t->value ? t->value : "";
		ps->n_tolerations++;
	}
	if (src->topology) { /* the modes are the core's, value for value */
		ps->topology = (queue_topo_mode_t)src->topology->mode;
		ps->topology_level = src->topology->level;
		ps->slice_level = src->topology->slice_level;
		ps->slice_size = src->topology->slice_size;
		ps->group = src->topology->group;
	}
}

_Static_assert(WORKLOAD_TOPO_NONE == (int)QUEUE_TOPO_NONE &&
		   WORKLOAD_TOPO_REQUIRED == (int)QUEUE_TOPO_REQUIRED &&
		   WORKLOAD_TOPO_PREFERRED == (int)QUEUE_TOPO_PREFERRED &&
		   WORKLOAD_TOPO_UNCONSTRAINED == (int)QUEUE_TOPO_UNCONSTRAINED,
	       "workload/ and queue/ name the topology modes alike");

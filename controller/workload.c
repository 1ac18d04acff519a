/* controller/workload.c: what every watched workload object goes through on
 * its way into the core: one decode by the workload layer (the admission
 * rules' own decoding), resolved against the policy in force, and a decoded
 * pod set as a pod set of the core. */
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

int controller_decode(struct controller *c, const json_t *obj, workload_t **w, gpuq_diag_t *diag)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	int rc;

	*w = NULL;
	if (!text)
		return GPUQ_ENOMEM;
	rc = controller_decode_text(c, text, strlen(text), w, diag);
	free(text);
	return rc;
}

int controller_decode_text(struct controller *c, const char *text, size_t len, workload_t **w,
			   gpuq_diag_t *diag)
{
	const workload_config_t cfg = {c->o.review_cfg.gpu_resources,
				       c->o.review_cfg.n_gpu_resources};
	int rc = workload_decode_json(text, len, &cfg, w, diag);

	if (!rc)
		rc = workload_resolve(*w, c->policy, diag);
	if (rc) {
		workload_destroy(*w);
		*w = NULL;
	}
	return rc;
}

static queue_effect_t effect_named(const char *e)
{
	if (!e || !e[0])
		return QUEUE_EFFECT_ANY;
	if (strcmp(e, "NoSchedule") == 0)
		return QUEUE_EFFECT_NO_SCHEDULE;
	if (strcmp(e, "PreferNoSchedule") == 0)
		return QUEUE_EFFECT_PREFER_NO_SCHEDULE;
	return QUEUE_EFFECT_NO_EXECUTE;
}

void controller_podset_from(const workload_podset_t *src, int32_t count, podset_buf_t *b,
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
	for (size_t i = 0; i < src->n_tolerations && i < QUEUE_SELECTORS_MAX; i++) {
		const workload_toleration_t *t = &src->tolerations[i];
		b->tol[i].key = t->key ? t->key : "";
		b->tol[i].op = t->op && strcmp(t->op, "Exists") == 0 ? QUEUE_TOLERATE_EXISTS
								     : QUEUE_TOLERATE_EQUAL;
		b->tol[i].value = t->value ? t->value : "";
		b->tol[i].effect = effect_named(t->effect);
		ps->n_tolerations++;
	}
}

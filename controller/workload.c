/* controller/workload.c: what Jobs and Pods share on their way into the core:
 * decoding a watched object with the admission rules' own decoder, and a
 * decoded object's pod spec as one pod set of the core. */
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "engine/engine.h"

int controller_decode(struct controller *c, const json_t *obj, webhook_object_t *o,
		      gpuq_diag_t *diag)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	int rc;

	memset(o, 0, sizeof(*o));
	if (!text)
		return GPUQ_ENOMEM;
	rc = controller_decode_text(c, text, strlen(text), o, diag);
	free(text);
	return rc;
}

int controller_decode_text(struct controller *c, const char *text, size_t len, webhook_object_t *o,
			   gpuq_diag_t *diag)
{
	memset(o, 0, sizeof(*o));
	return webhook_object_decode(c->policy, &c->o.review_cfg, text, len, o, diag);
}

void controller_podset_from(const webhook_object_t *o, int32_t count, podset_buf_t *b,
			    queue_podset_spec_t *ps)
{
	memset(b, 0, sizeof(*b));
	memset(ps, 0, sizeof(*ps));
	ps->name = "main";
	ps->count = count;
	ps->requests = b->req;
	ps->node_selector = b->sel;
	ps->tolerations = b->tol;
	for (size_t i = 0; i < o->n_requests && ps->n_requests < QUEUE_PODSET_RES_MAX; i++) {
		if (o->requests[i].amount == 0)
			continue; /* a zero request needs no quota (Kueue: no NoFit) */
		b->req[ps->n_requests].resource = o->requests[i].name;
		b->req[ps->n_requests++].amount = o->requests[i].amount;
	}
	for (size_t i = 0; i < o->n_node_selector && i < QUEUE_SELECTORS_MAX; i++) {
		b->sel[i].key = o->node_selector[i].key;
		b->sel[i].value = o->node_selector[i].value;
		ps->n_node_selector++;
	}
	for (size_t i = 0; i < o->n_tolerations && ps->n_tolerations < QUEUE_SELECTORS_MAX; i++) {
		const webhook_toleration_t *t = &o->tolerations[i];
		queue_toleration_t *tol = &b->tol[ps->n_tolerations];
		if (engine_effect_named(t->effect, &tol->effect))
			continue; /* an effect Kubernetes does not know tolerates no taint */
		tol->key = t->key ? t->key : "";
		tol->op = t->op && strcmp(t->op, "Exists") == 0 ? QUEUE_TOLERATE_EXISTS
								: QUEUE_TOLERATE_EQUAL;
		tol->value = t->value ? t->value : "";
		ps->n_tolerations++;
	}
}

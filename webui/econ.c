/* webui/econ.c: the budgets in a snapshot and in the API's JSON
 * (docs/economics.md, docs/ui.md): each with its use, limit, state, action
 * and window, copied from the core through queue_budget_view when a
 * snapshot is built. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "webui/internal.h"

int ws_econ_fill(const queue_t *q, webui_snap_t *s)
{
	size_t n = queue_budget_count(q);

	s->budgets = calloc(n ? n : 1, sizeof(*s->budgets));
	if (!s->budgets)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		ws_budget_t *b = &s->budgets[s->n_budgets];

		if (queue_budget_view(q, i, &b->v))
			continue;
		b->v.name = ws_strdup(s, b->v.name); /* arena.failed says when it failed */
		s->n_budgets++;
	}
	return GPUQ_OK;
}

/* Whether budget v concerns namespace ns: its own, or one of its
 * LocalQueues'. */
static bool of_namespace(const queue_budget_view_t *v, const char *ns)
{
	size_t n = strlen(ns);

	if (v->scope == QUEUE_BUDGET_NAMESPACE)
		return !strcmp(v->name, ns);
	return v->scope == QUEUE_BUDGET_LOCALQUEUE && !strncmp(v->name, ns, n) && v->name[n] == '/';
}

json_t *ws_budgets_json(const webui_snap_t *s, const char *ns)
{
	static const char *const scope[] = {"LocalQueue", "Namespace", "ClusterQueue"};
	static const char *const state[] = {"OK", "Warning", "Over"};
	static const char *const action[] = {"Warn", "Lower", "Hold"};
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->n_budgets; i++) {
		const queue_budget_view_t *v = &s->budgets[i].v;
		json_t *o;

		if (ns && !of_namespace(v, ns))
			continue;
		o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:s, s:s, s:i, s:i, s:I, s:I}", "scope",
			      scope[v->scope], "name", v->name ? v->name : "", "unit",
			      v->cost ? "cost" : "GPU-hours", "limit", v->limit, "used", v->used,
			      "state", v->evaluated_ms == INT64_MIN ? "Unknown" : state[v->state],
			      "action", action[v->action], "windowDays", (int)v->window_days,
			      "warnAtPercent", (int)v->warn_pct, "windowStartMs",
			      (json_int_t)v->window_start_ms, "windowEndMs",
			      (json_int_t)v->window_end_ms);
		if (o)
			json_array_append_new(a, o);
	}
	return a;
}

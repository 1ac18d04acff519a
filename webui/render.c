/* webui/render.c: a snapshot as the JSON of /api/v1/... (docs/ui.md), for
 * a caller with a given access. Pure: the snapshot is immutable, so any
 * number of requests render from it at once. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quota/quota.h"
#include "webui/internal.h"

#define API "/api/v1/"

/* An amount as Kubernetes writes a quantity ("2", "500m", "16Gi"). */
static json_t *qty(const char *res, int64_t v)
{
	char buf[32];

	return json_string(quota_amount_format(res, v, buf, sizeof(buf)));
}

/* A limit: null when unlimited. */
static json_t *limit(const char *res, int64_t v)
{
	return v == QUEUE_UNLIMITED ? json_null() : qty(res, v);
}

static json_t *quota_json(const webui_snap_t *s, const ws_cq_t *cq)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < cq->n_quota; i++) {
		const ws_quota_t *w = &s->quota[cq->quota0 + i];

		json_array_append_new(
		    a, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "flavor", w->flavor,
				 "resource", w->resource, "nominal", qty(w->resource, w->nominal),
				 "borrowingLimit", limit(w->resource, w->borrowing_limit),
				 "lendingLimit", limit(w->resource, w->lending_limit), "used",
				 qty(w->resource, w->usage), "borrowed",
				 qty(w->resource, w->borrowed), "lent", qty(w->resource, w->lent)));
	}
	return a;
}

/* The counts and quota of a ClusterQueue (the cluster page's row). */
static json_t *cq_json(const webui_snap_t *s, const ws_cq_t *cq)
{
	return json_pack(
	    "{s:s, s:s, s:i, s:i, s:I, s:I, s:I, s:I, s:f, s:f, s:o}", "name", cq->name, "cohort",
	    cq->cohort, "pending", (int)cq->pending_total, "admitted", (int)cq->admitted_total,
	    "admissions", (json_int_t)cq->stats.admissions, "preemptions",
	    (json_int_t)cq->stats.preemptions, "evictions", (json_int_t)cq->stats.evictions,
	    "finished", (json_int_t)cq->stats.finishes, "weight",
	    (double)cq->stats.weight_milli / 1000.0, "weightedShare",
	    (double)cq->stats.weighted_share / 1e6, "quota", quota_json(s, cq));
}

static json_t *wl_json(const webui_snap_t *s, const ws_wl_t *w)
{
	const ws_lq_t *lq = w->lq < s->n_lqs ? &s->lqs[w->lq] : NULL;
	json_t *o = json_pack(
	    "{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:i, s:s, s:s}", "namespace", w->namespace_,
	    "name", w->name, "uid", w->uid, "localQueue", lq ? lq->name : "", "clusterQueue",
	    w->cq < s->n_cqs ? s->cqs[w->cq].name : "", "priority", (int)w->priority, "createdMs",
	    (json_int_t)w->created_ms, "state", queue_wl_state_name(w->state), "pods", (int)w->pods,
	    "requests", w->requests, "message", w->reason);

	if (!o)
		return NULL;
	if (w->state == QUEUE_WL_PENDING) {
		json_object_set_new(o, "position", json_integer(w->position));
		json_object_set_new(o, "reason", json_string(queue_wait_name(w->wait)));
		if (w->predicted_ms >= 0) /* predict/: when it is expected to start */
			json_object_set_new(o, "expectedStartMs", json_integer(w->predicted_ms));
	} else {
		json_object_set_new(o, "flavors", json_string(w->flavors));
		json_object_set_new(o, "admittedMs", json_integer(w->admitted_ms));
		if (w->idle_since_ms >= 0) /* its GPUs idle (idleReclaim) */
			json_object_set_new(o, "idleSinceMs", json_integer(w->idle_since_ms));
		if (w->protected_ms > 0) /* its minimum runtime's end */
			json_object_set_new(o, "protectedUntilMs", json_integer(w->protected_ms));
	}
	return o;
}

/* {"total": total, "items": [...]} of the listed workloads. */
static json_t *wl_list(const webui_snap_t *s, const uint32_t *idx, size_t n, uint32_t total)
{
	json_t *items = json_array();

	for (size_t i = 0; items && i < n; i++)
		json_array_append_new(items, wl_json(s, &s->wls[idx[i]]));
	return json_pack("{s:i, s:o}", "total", (int)total, "items", items);
}

static json_t *envelope(const webui_snap_t *s, const char *kind)
{
	return json_pack("{s:s, s:s, s:I}", "apiVersion", "gpuq.dev/ui/v1", "kind", kind, "nowMs",
			 (json_int_t)s->now_ms);
}

/* The chargeback rows of namespace ns (NULL: every namespace). */
static json_t *usage_rows(const webui_snap_t *s, const char *ns)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->n_usage; i++) {
		const ws_usage_t *u = &s->usage[i];

		if (ns && strcmp(u->namespace_, ns) != 0)
			continue;
		json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:f, s:f, s:f}", "namespace",
						   u->namespace_, "resource", u->resource,
						   "accelerator", u->accelerator, "nominalHours",
						   u->nominal_hours, "borrowedHours",
						   u->borrowed_hours, "cost", u->cost));
	}
	return a;
}

/* {"windowMs", "fromMs", "toMs", "rows"} (docs/ui.md); with the prices
 * charged when all is set (the cluster page). */
static json_t *usage_json(const webui_snap_t *s, const char *ns, bool all)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:o}", "windowMs", (json_int_t)WEBUI_USAGE_WINDOW_MS,
			      "fromMs", (json_int_t)s->usage_from_ms, "toMs",
			      (json_int_t)s->usage_to_ms, "rows", usage_rows(s, ns));
	json_t *prices;

	if (!o || !all)
		return o;
	prices = json_object();
	for (size_t i = 0; prices && i < s->n_prices; i++)
		json_object_set_new(prices, s->prices[i].flavor, json_real(s->prices[i].per_hour));
	json_object_set_new(o, "prices", prices);
	return o;
}

static json_t *cluster_json(const webui_snap_t *s)
{
	json_t *o = envelope(s, "Cluster"), *cohorts = json_array(), *cqs = json_array();

	for (size_t c = 0; cohorts && c < s->n_cohorts; c++) {
		json_t *members = json_array();
		for (size_t i = 0; members && i < s->n_cqs; i++)
			if (!strcmp(s->cqs[i].cohort, s->cohorts[c]))
				json_array_append_new(members, json_string(s->cqs[i].name));
		json_array_append_new(cohorts, json_pack("{s:s, s:o}", "name", s->cohorts[c],
							 "clusterQueues", members));
	}
	for (size_t i = 0; cqs && i < s->n_cqs; i++)
		json_array_append_new(cqs, cq_json(s, &s->cqs[i]));
	json_object_set_new(o, "cohorts", cohorts);
	json_object_set_new(o, "clusterQueues", cqs);
	/* every namespace's rows: cluster_json is rendered for cluster access only */
	json_object_set_new(o, "usage", usage_json(s, NULL, true));
	json_object_set_new(o, "budgets", ws_budgets_json(s, NULL));
	return o;
}

/* A LocalQueue with its usage per slot of its CQ. */
static json_t *lq_json(const webui_snap_t *s, const ws_lq_t *lq)
{
	const ws_cq_t *cq = lq->cq < s->n_cqs ? &s->cqs[lq->cq] : NULL;
	json_t *use = json_array();

	for (size_t i = 0; use && cq && i < cq->n_quota; i++) {
		const ws_quota_t *sl = &s->quota[cq->quota0 + i];
		json_array_append_new(use,
				      json_pack("{s:s, s:s, s:o}", "flavor", sl->flavor, "resource",
						sl->resource, "used",
						qty(sl->resource, s->lq_usage[lq->usage0 + i])));
	}
	return json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:f, s:f, s:o}", "namespace",
			 lq->namespace_, "name", lq->name, "clusterQueue", cq ? cq->name : "",
			 "pending", (int)lq->stats.pending, "admitted", (int)lq->stats.admitted,
			 "admissions", (json_int_t)lq->stats.admissions, "weight",
			 (double)lq->stats.weight_milli / 1000.0, "decayedUsage",
			 lq->stats.decayed_usage, "usage", use);
}

static json_t *cq_page(const webui_snap_t *s, const ws_cq_t *cq)
{
	json_t *o = envelope(s, "ClusterQueue"), *lqs = json_array();
	uint32_t c = (uint32_t)(cq - s->cqs);
	json_t *row = cq_json(s, cq);

	json_object_update(o, row);
	json_decref(row);
	for (size_t i = 0; lqs && i < s->n_lqs; i++)
		if (s->lqs[i].cq == c)
			json_array_append_new(lqs, lq_json(s, &s->lqs[i]));
	json_object_set_new(o, "localQueues", lqs);
	json_object_set_new(o, "pendingWorkloads",
			    wl_list(s, s->cq_wl + cq->pend0, cq->n_pend, cq->pending_total));
	json_object_set_new(o, "admittedWorkloads",
			    wl_list(s, s->cq_wl + cq->adm0, cq->n_adm, cq->admitted_total));
	return o;
}

/* One event; the preemptor is named only to a caller who may read its
 * namespace (cluster access, or the same namespace). */
static json_t *event_json(const ws_event_t *e, const webui_access_t *acc)
{
	static const char *const kinds[] = {"Admitted", "Preempted", "Evicted"};
	json_t *o =
	    json_pack("{s:I, s:s, s:s, s:s, s:s, s:s}", "timeMs", (json_int_t)e->at_ms, "kind",
		      kinds[e->kind], "namespace", e->namespace_, "name", e->name, "clusterQueue",
		      e->cq, e->kind == WS_EV_ADMITTED ? "flavors" : "reason", e->detail);

	if (o && e->kind == WS_EV_PREEMPTED) {
		bool named =
		    acc->cluster || (acc->namespace_ && !strcmp(acc->namespace_, e->preemptor_ns));
		json_object_set_new(o, "preemptor",
				    named ? json_pack("{s:s, s:s, s:s}", "namespace",
						      e->preemptor_ns, "name", e->preemptor,
						      "clusterQueue", e->preemptor_cq)
					  : json_pack("{s:s}", "clusterQueue", e->preemptor_cq));
	}
	return o;
}

/* Recent events, newest first; only those of namespace ns when not NULL. */
static json_t *events_json(const webui_snap_t *s, const char *ns, const webui_access_t *acc)
{
	json_t *a = json_array();

	for (size_t i = s->n_events; a && i-- > 0;)
		if (!ns || !strcmp(s->events[i].namespace_, ns))
			json_array_append_new(a, event_json(&s->events[i], acc));
	return a;
}

static json_t *ns_page(const webui_snap_t *s, const char *ns, const webui_access_t *acc)
{
	json_t *o = envelope(s, "Namespace"), *lqs = json_array(), *items = json_array();
	uint32_t total = 0;

	json_object_set_new(o, "namespace", json_string(ns));
	for (size_t i = 0; lqs && i < s->n_lqs; i++)
		if (!strcmp(s->lqs[i].namespace_, ns))
			json_array_append_new(lqs, lq_json(s, &s->lqs[i]));
	for (size_t i = 0; items && i < s->n_wls; i++) {
		if (strcmp(s->wls[i].namespace_, ns) != 0)
			continue;
		if (++total <= WEBUI_LIST_MAX)
			json_array_append_new(items, wl_json(s, &s->wls[i]));
	}
	/* the total counts the namespace's LocalQueues' workloads, listed or not */
	total = 0;
	for (size_t i = 0; i < s->n_lqs; i++)
		if (!strcmp(s->lqs[i].namespace_, ns))
			total += s->lqs[i].stats.pending + s->lqs[i].stats.admitted;
	json_object_set_new(o, "localQueues", lqs);
	json_object_set_new(o, "workloads",
			    json_pack("{s:i, s:o}", "total", (int)total, "items", items));
	json_object_set_new(o, "events", events_json(s, ns, acc));
	json_object_set_new(o, "usage", usage_json(s, ns, false));
	json_object_set_new(o, "budgets", ws_budgets_json(s, ns));
	return o;
}

static int finish(json_t *o, unsigned code, unsigned *status, char **body, size_t *len)
{
	char *text;

	if (!o)
		return GPUQ_ENOMEM;
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return GPUQ_ENOMEM;
	*len = strlen(text);
	if (*len > WEBUI_JSON_MAX) {
		free(text);
		return GPUQ_ELIMIT;
	}
	*status = code;
	*body = text;
	return GPUQ_OK;
}

static int error_json(unsigned code, const char *msg, unsigned *status, char **body, size_t *len)
{
	return finish(json_pack("{s:s, s:s, s:i, s:s}", "apiVersion", "gpuq.dev/ui/v1", "kind",
				"Error", "code", (int)code, "message", msg),
		      code, status, body, len);
}

/* The ClusterQueue named by path's tail, or NULL. */
static const ws_cq_t *cq_named(const webui_snap_t *s, const char *name)
{
	for (size_t i = 0; i < s->n_cqs; i++)
		if (!strcmp(s->cqs[i].name, name))
			return &s->cqs[i];
	return NULL;
}

int webui_render(const webui_snap_t *s, const char *path, const webui_access_t *acc,
		 unsigned *status, char **body, size_t *len)
{
	const char *ns;
	size_t ns_len;
	char name[QUEUE_NAME_MAX + 1];

	*body = NULL;
	*len = 0;
	if (!s)
		return error_json(503,
				  "no queue state yet: this replica does not lead, or has not "
				  "synced with the apiserver",
				  status, body, len);
	webui_path_scope(path, &ns, &ns_len);
	if (ns) {
		if (ns_len > QUEUE_NAME_MAX || ns[ns_len])
			return error_json(404, "no such API path", status, body, len);
		memcpy(name, ns, ns_len);
		name[ns_len] = '\0';
		if (!acc->cluster && (!acc->namespace_ || strcmp(acc->namespace_, name) != 0))
			return error_json(403, "forbidden: may not list jobs in that namespace",
					  status, body, len);
		return finish(ns_page(s, name, acc), 200, status, body, len);
	}
	if (!acc->cluster)
		return error_json(403,
				  "forbidden: needs get on clusterqueues.gpuq.dev (tenants: "
				  "/api/v1/namespaces/NAMESPACE)",
				  status, body, len);
	if (!strcmp(path, API "cluster"))
		return finish(cluster_json(s), 200, status, body, len);
	if (!strcmp(path, API "events")) {
		json_t *o = envelope(s, "Events");
		json_object_set_new(o, "events", events_json(s, NULL, acc));
		return finish(o, 200, status, body, len);
	}
	if (!strncmp(path, API "clusterqueues/", strlen(API "clusterqueues/"))) {
		const ws_cq_t *cq = cq_named(s, path + strlen(API "clusterqueues/"));
		if (!cq)
			return error_json(404, "no such ClusterQueue", status, body, len);
		return finish(cq_page(s, cq), 200, status, body, len);
	}
	return error_json(404, "no such API path", status, body, len);
}

void webui_path_scope(const char *path, const char **ns, size_t *ns_len)
{
	static const char *const prefixes[] = {API "namespaces/", WEBUI_VIS_PREFIX "/namespaces/"};

	*ns = NULL;
	*ns_len = 0;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(path, prefixes[i], strlen(prefixes[i]))) {
			*ns = path + strlen(prefixes[i]);
			*ns_len = strcspn(*ns, "/");
			return;
		}
}

/* unit/controller_fixtures.h: what the controller's tests share
 * (test_controller_cache.c, test_controller_actuate.c, test_controller_edit.c,
 * test_controller_sets.c): a controller with no apiserver behind it (its
 * policy from inline YAML, its core built by the engine, its caches empty,
 * no threads, no store), and Jobs as the watch shows them. Header-only (static inline), included by
 * test files only. */
#ifndef GPUQ_UNIT_CONTROLLER_FIXTURES_H
#define GPUQ_UNIT_CONTROLLER_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"
#include "engine/engine.h"

/* team-a (labelled, so ClusterQueue cq selects it) with LocalQueue default
 * feeding cq: 8 GPUs of flavor h100, whose nodes carry a label and a taint;
 * team-b is a namespace no ClusterQueue selects. */
#define CTL_POLICY                                                                                 \
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {team: a}}\n"           \
	"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n"                         \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: h100}\n"        \
	"spec:\n  nodeLabels: {nvidia.com/gpu.product: H100}\n"                                    \
	"  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"            \
	"spec:\n  namespaceSelector: {matchLabels: {team: a}}\n"                                   \
	"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n"                \
	"    - name: h100\n      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]\n"           \
	"---\napiVersion: gpuq.dev/v1beta1\nkind: LocalQueue\nmetadata: {namespace: team-a, "      \
	"name: "                                                                                   \
	"default}\nspec: {clusterQueue: cq}\n"

/* A controller over the policy of YAML text `policy`, leading, with an
 * empty core. */
/* The last result of phase *(ctx's phase) an engine_step acted on. */
typedef struct {
	engine_phase_t phase; /* which result is wanted */
	queue_result_t *out;  /* where it goes (the engine's copy: valid until the
				  next step) */
} ctl_want_t;

static inline void ctl_take(void *ctx, engine_phase_t phase, const queue_result_t *res)
{
	ctl_want_t *w = ctx;

	if (phase == w->phase)
		*w->out = *res;
}

/* One engine step at now, as the controller takes it (a tick, then with
 * cycles 1 one cycle); *out the cycle's result (cycles 0: the tick's),
 * zero when none ran. */
static inline int ctl_step(engine_t *e, int64_t now, unsigned cycles, queue_result_t *out)
{
	queue_result_t none = {0};
	ctl_want_t w = {cycles ? ENGINE_STEP_CYCLE : ENGINE_STEP_TICK, out ? out : &none};
	engine_step_opts_t so = {.cycles = cycles, .cycle_due = true, .act = ctl_take, .ctx = &w};

	*w.out = none;
	return engine_step(e, now, &so, NULL, NULL);
}

static inline struct controller *ctl_new_policy(const char *policy)
{
	struct controller *c = calloc(1, sizeof(*c));
	gpuq_diag_t d = {{0}};
	int rc;

	assert_non_null(c);
	controller_opts_default(&c->o);
	c->o.core.release_on_evict = false; /* as controller_create's core: pods take time to go */
	rc = policy_create(NULL, &c->policy);
	if (!rc)
		rc = policy_add_manifest(c->policy, "t.yaml", policy, strlen(policy), &d);
	if (!rc)
		rc = policy_finish(c->policy, &d);
	if (!rc)
		rc = engine_open(c->policy, &c->o.core, NULL, &c->e, &d); /* memory only */
	if (rc)
		fail_msg("controller fixture: %s: %s", gpuq_strerror(rc), d.msg);
	controller_map_init(&c->jobs);
	controller_map_init(&c->groups);
	controller_map_init(&c->pod_group);
	controller_map_init(&c->sets);
	controller_map_init(&c->pods_early);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++)
		controller_map_init(&c->objs[r]);
	atomic_store(&c->leader, true);
	return c;
}

/* A controller over CTL_POLICY, leading, with an empty core. */
static inline struct controller *ctl_new(void)
{
	return ctl_new_policy(CTL_POLICY);
}

static inline void ctl_free(struct controller *c)
{
	controller_jobs_free_all(c);
	for (int r = 0; r < CONTROLLER_RES_COUNT; r++) {
		size_t pos = 0;
		controller_map_slot_t *s;
		while ((s = controller_map_next(&c->objs[r], &pos))) {
			json_decref(((controller_pobj_t *)s->value)->obj);
			free(s->value);
		}
		controller_map_deinit(&c->objs[r]);
	}
	controller_pods_free_all(c);
	controller_nodes_free_all(c);
	controller_sets_free_all(c);
	for (size_t i = 0; i < c->n_touched; i++)
		free(c->touched[i]);
	free(c->touched);
	for (size_t i = 0; i < c->n_explain; i++)
		free(c->explain[i]);
	free(c->explain);
	engine_close(c->e);
	policy_unref(c->policy);
	free(c);
}

/* A Job as the watch shows it: namespace ns, uid and name `name`, pods of
 * `gpus` nvidia.com/gpu each (0: a CPU Job), `pods` of them, suspended or
 * not, labelled for LocalQueue `queue` (NULL: no label). A new reference. */
static inline json_t *ctl_job(const char *ns, const char *name, int gpus, int pods, bool suspend,
			      const char *queue)
{
	json_t *labels = json_object(), *limits = json_object(), *job;

	assert_non_null(labels);
	assert_non_null(limits);
	if (queue)
		json_object_set_new(labels, "gpuq.dev/queue-name", json_string(queue));
	if (gpus)
		json_object_set_new(limits, "nvidia.com/gpu", json_sprintf("%d", gpus));
	else
		json_object_set_new(limits, "cpu", json_string("1"));
	job = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:o}, s:{s:b, s:i, s:i, "
			"s:{s:{s:s, s:[{s:s, s:s, s:{s:o}}]}}}, s:{}}",
			"apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name,
			"namespace", ns, "uid", name, "resourceVersion", "7", "creationTimestamp",
			"2026-11-25T00:00:00Z", "labels", labels, "spec", "suspend", suspend,
			"parallelism", pods, "completions", pods, "template", "spec",
			"restartPolicy", "Never", "containers", "name", "main", "image", "x",
			"resources", "limits", limits, "status");
	assert_non_null(job);
	return job;
}

/* A member of pod group `group` (of `total` pods) as the watch shows it:
 * namespace team-a, uid and name `name`, `gpus` nvidia.com/gpu (0: a
 * CPU-only member that asks for nothing), gated by the webhook. A new
 * reference. */
static inline json_t *ctl_group_pod(const char *name, const char *group, int total, int gpus)
{
	json_t *limits = json_object(), *pod;
	char n[16];

	assert_non_null(limits);
	snprintf(n, sizeof(n), "%d", total);
	if (gpus)
		json_object_set_new(limits, "nvidia.com/gpu", json_sprintf("%d", gpus));
	pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s}}, "
			"s:{s:[{s:s}], s:[{s:s, s:s, s:{s:o}}]}, s:{s:s}}",
			"apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace",
			"team-a", "uid", name, "resourceVersion", "3", "creationTimestamp",
			"2026-11-25T00:00:00Z", "labels", "gpuq.dev/queue-name", "default",
			"kueue.x-k8s.io/pod-group-name", group, "annotations",
			"kueue.x-k8s.io/pod-group-total-count", n, "spec", "schedulingGates",
			"name", "gpuq.dev/admission", "containers", "name", "main", "image", "x",
			"resources", "limits", limits, "status", "phase", "Pending");
	assert_non_null(pod);
	return pod;
}

/* ctl_group_pod of 1 GPU. */
static inline json_t *ctl_member(const char *name, const char *group, int total)
{
	return ctl_group_pod(name, group, total, 1);
}

/* The event the watch thread makes of obj (borrowed; NULL for RESET and
 * SYNCED): obj decoded once into ev->wl, as controller_informer_event does. */
static inline controller_cevent_t ctl_event(controller_res_t res, kube_event_type_t type,
					    const json_t *obj)
{
	static const char *const gpus[] = {"nvidia.com/gpu"};
	const workload_config_t cfg = {gpus, 1};
	controller_cevent_t ev = {.res = res, .type = type};
	gpuq_diag_t d = {{0}};
	char *text;

	if (!obj)
		return ev;
	text = json_dumps(obj, JSON_COMPACT);
	assert_non_null(text);
	if (workload_decode_json(text, strlen(text), &cfg, &ev.wl, &d))
		fail_msg("decode: %s", d.msg);
	free(text);
	return ev;
}

/* One watch event of `type` about Job obj (borrowed) into the controller. */
static inline void ctl_job_event(struct controller *c, kube_event_type_t type, json_t *obj)
{
	controller_cevent_t ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_JOB), type, obj);

	controller_jobs_apply(c, &ev);
	controller_cevent_deinit(&ev);
}

/* One watch event of `type` about Pod obj (borrowed) into the controller. */
static inline void ctl_pod_event(struct controller *c, kube_event_type_t type, json_t *obj)
{
	controller_cevent_t ev = ctl_event(CONTROLLER_RES_OF(WORKLOAD_KIND_POD), type, obj);

	controller_pods_apply(c, &ev);
	controller_cevent_deinit(&ev);
}

/* The core's state of workload uid; -1 when the core does not hold it. */
/* CONTROLLER_GONE_SETTLE_MS passes for every deleted parent that settles
 * (as if that long had gone by since its deletion was seen), and the
 * controller's loop looks at them (controller_jobs_settle). */
static inline void ctl_settle(struct controller *c)
{
	for (size_t i = 0; i < c->n_settling; i++) {
		controller_job_t *j = controller_map_get(&c->jobs, c->settling[i]);

		if (j)
			j->gone_ms -= CONTROLLER_GONE_SETTLE_MS;
	}
	c->settle_next_ms = controller_jobs_settle(c);
}

/* The wall-clock limit the core holds for workload uid (its own; 0: none). */
static inline int32_t ctl_limit(const struct controller *c, const char *uid)
{
	queue_workload_view_t v;
	queue_wl_t id;

	assert_int_equal(queue_workload_find(engine_core(c->e), uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(engine_core(c->e), id, &v), GPUQ_OK);
	return v.max_exec_s;
}

/* Workload uid finished, at the controller's now (GPUQ_OK asserted). */
static inline void ctl_finish(struct controller *c, const char *uid)
{
	assert_int_equal(engine_change_apply(c->e,
					     &(engine_change_t){.kind = ENGINE_CHANGE_FINISH,
								.uid = uid,
								.now = controller_now(c)},
					     NULL),
			 GPUQ_OK);
}

static inline int ctl_state(const struct controller *c, const char *uid)
{
	queue_workload_view_t v;
	queue_wl_t id;

	if (queue_workload_find(engine_core(c->e), uid, &id) ||
	    queue_workload_view(engine_core(c->e), id, &v))
		return -1;
	return (int)v.state;
}

/* Compact JSON of obj with sorted keys (freed by the caller). */
static inline char *ctl_dump(const json_t *obj)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(s);
	return s;
}

#endif

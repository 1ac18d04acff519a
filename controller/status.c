/* controller/status.c: where people look. ClusterQueue and LocalQueue
 * status (counts, usage per flavor and resource, a condition), and on each
 * Job the annotation gpuq.dev/status with the core's coarse status
 * (queue_workload_status: its state and a reason its position never
 * changes; positions are served on demand by the visibility API, webui/).
 * Writes only what changed, and a bounded number per pass, so a deep queue
 * costs the apiserver little: a Job created suspended already carries the
 * waiting text (the webhook wrote it) and a release carries the admitted
 * one (actuate.c), so a burst of Jobs costs no status write until they
 * finish. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/internal.h"
#include "quota/quota.h"

#define EXPLAIN_PER_PASS 64 /* Job annotations handed to the writer per pass */
#define STATUS_MIN_MS 1000  /* a queue's status is written at most this often */

json_t *controller_status_cq_body(struct controller *c, uint32_t cq)
{
	json_t *st, *flavors = json_array();
	queue_stats_t s;
	size_t nf = queue_flavor_count(engine_core(c->e)),
	       nr = queue_resource_count(engine_core(c->e));
	const workload_config_t gcfg = CONTROLLER_GPU_CFG(c);
	int64_t gpus = 0;

	if (!flavors || queue_cq_stats(engine_core(c->e), cq, &s)) {
		json_decref(flavors);
		return NULL;
	}
	for (uint32_t f = 0; f < nf; f++) {
		json_t *res = json_array();
		for (uint32_t r = 0; r < nr; r++) {
			queue_quota_view_t v;
			char total[40], borrowed[40];
			const char *rn = queue_resource_name(engine_core(c->e), r);
			if (queue_cq_quota(engine_core(c->e), cq, f, r, &v))
				continue;
			quota_amount_format(rn, v.usage, total, sizeof(total));
			quota_amount_format(rn, v.usage > v.nominal ? v.usage - v.nominal : 0,
					    borrowed, sizeof(borrowed));
			json_array_append_new(res, json_pack("{s:s, s:s, s:s}", "name", rn, "total",
							     total, "borrowed", borrowed));
			if (workload_gpu_resource(&gcfg, rn))
				gpus += v.usage;
		}
		if (json_array_size(res))
			json_array_append_new(flavors,
					      json_pack("{s:s, s:o}", "name",
							queue_flavor_name(engine_core(c->e), f),
							"resources", res));
		else
			json_decref(res);
	}
	st = json_pack("{s:i, s:i, s:i, s:I, s:o}", "pendingWorkloads", (int)s.pending,
		       "admittedWorkloads", (int)s.admitted, "reservingWorkloads", (int)s.admitted,
		       "gpusInUse", (json_int_t)gpus, "flavorsUsage", flavors);
	if (st)
		controller_econ_status(c, st, true, cq); /* its budget (econ.c) */
	return st;
}

json_t *controller_status_lq_body(struct controller *c, uint32_t lq)
{
	queue_stats_t s;

	json_t *st;

	if (queue_lq_stats(engine_core(c->e), lq, &s))
		return NULL;
	st = json_pack("{s:i, s:i, s:i, s:f}", "pendingWorkloads", (int)s.pending,
		       "admittedWorkloads", (int)s.admitted, "reservingWorkloads", (int)s.admitted,
		       "decayedUsage", s.decayed_usage);
	if (st)
		controller_econ_status(c, st, false, lq); /* its (or its namespace's) budget */
	return st;
}

/* The group path a queue object was watched under ("" when not cached). */
static const char *group_of(struct controller *c, controller_res_t ours, controller_res_t kueues,
			    const char *key)
{
	if (controller_map_get(&c->objs[ours], key))
		return "/apis/gpuq.dev/v1beta1";
	if (controller_map_get(&c->objs[kueues], key))
		return "/apis/kueue.x-k8s.io/v1beta2";
	return NULL;
}

/* A queue's Active condition. */
typedef struct {
	const char *status;  /* "True" or "False" */
	const char *reason;  /* CamelCase: Ready, or a POLICY_REASON_* */
	const char *message; /* for people */
} active_t;

/* The Active condition of a queue in the core. */
static const active_t ACTIVE = {"True", "Ready", "Can admit new workloads"};

/* Hand one queue's status, with its Active condition, to the writer (it
 * skips what it already wrote). The condition holds from the controller's
 * start: metav1.Condition (Kueue's schema requires it) wants a
 * lastTransitionTime. */
static void write_status(struct controller *c, const char *key, const char *path, json_t *st,
			 const active_t *active)
{
	char since[GPUQ_TIME_TEXT_MAX];
	json_t *body;

	if (!gpuq_time_format(c->epoch_wall_ms, GPUQ_TIME_SECONDS, since, sizeof(since)))
		gpuq_strlcpy(since, "1970-01-01T00:00:00Z", sizeof(since));
	json_object_set_new(st, "conditions",
			    json_pack("[{s:s, s:s, s:s, s:s, s:s}]", "type", "Active", "status",
				      active->status, "reason", active->reason, "message",
				      active->message, "lastTransitionTime", since));
	body = json_pack("{s:o}", "status", st);
	if (body)
		(void)controller_swriter_submit(c->swriter, key, path, body);
	json_decref(body);
}

/* The status path of queue object l (a ClusterQueue or a LocalQueue the
 * controller watched) into path, its cache key into key; GPUQ_ENOTFOUND
 * for any other. */
static int left_out_path(struct controller *c, const policy_leftout_t *l, char *key, size_t kcap,
			 char *path, size_t cap)
{
	bool lq = !strcmp(l->kind, "LocalQueue");
	char en[300], ens[300];
	const char *g;

	if (!lq && strcmp(l->kind, "ClusterQueue") != 0)
		return GPUQ_ENOTFOUND;
	snprintf(key, kcap, "%s%s%s", lq ? l->namespace_ : "", lq ? "/" : "", l->name);
	g = lq ? group_of(c, CONTROLLER_RES_LOCALQUEUES, CONTROLLER_RES_KUEUE_LOCALQUEUES, key)
	       : group_of(c, CONTROLLER_RES_CLUSTERQUEUES, CONTROLLER_RES_KUEUE_CLUSTERQUEUES, key);
	if (!g || kube_escape(l->name, en, sizeof(en)) ||
	    (lq && kube_escape(l->namespace_, ens, sizeof(ens))))
		return GPUQ_ENOTFOUND;
	if (lq)
		snprintf(path, cap, "%s/namespaces/%s/localqueues/%s/status", g, ens, en);
	else
		snprintf(path, cap, "%s/clusterqueues/%s/status", g, en);
	return GPUQ_OK;
}

/* Every ClusterQueue and LocalQueue the policy left out: Active False with
 * its reason and message (as Kueue marks an inactive queue), nothing
 * pending or admitted. One whose namesake is in the policy (the second of
 * two duplicates) is not written: the status is that one's. */
static void status_left_out(struct controller *c)
{
	const policy_t *p = c->policy;

	for (size_t i = 0; p && i < policy_leftout_count(p); i++) {
		const policy_leftout_t *l = policy_leftout_at(p, i);
		char key[600], path[KUBE_URL_MAX];
		active_t why = {"False", l->reason, l->message};
		json_t *st;

		if (policy_cq_find(p, l->name) && !strcmp(l->kind, "ClusterQueue"))
			continue;
		if (policy_lq_find(p, l->namespace_, l->name) && !strcmp(l->kind, "LocalQueue"))
			continue;
		if (left_out_path(c, l, key, sizeof(key), path, sizeof(path)))
			continue;
		st = json_pack("{s:i, s:i, s:i}", "pendingWorkloads", 0, "admittedWorkloads", 0,
			       "reservingWorkloads", 0);
		if (st)
			write_status(c, key, path, st, &why);
	}
}

void controller_status_queues(struct controller *c)
{
	char path[KUBE_URL_MAX], en[300], ens[300];
	int64_t now = gpuq_mono_ms();

	if (now < c->status_next_ms)
		return;
	c->status_next_ms = now + STATUS_MIN_MS;
	for (uint32_t cq = 0; cq < queue_cq_count(engine_core(c->e)); cq++) {
		const char *name = queue_cq_name(engine_core(c->e), cq);
		const char *g = group_of(c, CONTROLLER_RES_CLUSTERQUEUES,
					 CONTROLLER_RES_KUEUE_CLUSTERQUEUES, name);
		json_t *st;
		if (!g || kube_escape(name, en, sizeof(en)))
			continue;
		st = controller_status_cq_body(c, cq);
		if (!st)
			continue;
		snprintf(path, sizeof(path), "%s/clusterqueues/%s/status", g, en);
		write_status(c, name, path, st, &ACTIVE);
	}
	for (uint32_t lq = 0; lq < queue_lq_count(engine_core(c->e)); lq++) {
		const char *key = queue_lq_name(engine_core(c->e), lq); /* ns/name */
		const char *g =
		    group_of(c, CONTROLLER_RES_LOCALQUEUES, CONTROLLER_RES_KUEUE_LOCALQUEUES, key);
		const char *slash = strchr(key, '/');
		char ns[300];
		json_t *st;
		if (!g || !slash || (size_t)(slash - key) >= sizeof(ns))
			continue;
		memcpy(ns, key, (size_t)(slash - key));
		ns[slash - key] = '\0';
		if (kube_escape(ns, ens, sizeof(ens)) || kube_escape(slash + 1, en, sizeof(en)))
			continue;
		st = controller_status_lq_body(c, lq);
		if (!st)
			continue;
		snprintf(path, sizeof(path), "%s/namespaces/%s/localqueues/%s/status", g, ens, en);
		write_status(c, key, path, st, &ACTIVE);
	}
	status_left_out(c);
}

/* A held parent's (a Job's, a JobSet's) gpuq.dev/status, handed to the
 * status writer. */
static void annotate_job(struct controller *c, controller_job_t *j, const char *text)
{
	char path[KUBE_URL_MAX];
	json_t *body;

	if (!j->wl || controller_object_path(j->wl->kind, controller_job_ns(j),
					     controller_job_name(j), path, sizeof(path)))
		return;
	body = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", CONTROLLER_ANNOT_STATUS, text);
	if (body)
		(void)controller_swriter_submit_once(c->swriter, j->uid, path, body);
	json_decref(body);
}

void controller_status_jobs(struct controller *c)
{
	size_t done = 0, i, backlog = controller_swriter_backlog(c->swriter),
	       limit = EXPLAIN_PER_PASS;

	/* backpressure: the writer sends a few per second (--qps) */
	if (backlog >= CONTROLLER_SWRITER_BACKLOG_MAX)
		return;
	if (limit > CONTROLLER_SWRITER_BACKLOG_MAX - backlog)
		limit = CONTROLLER_SWRITER_BACKLOG_MAX - backlog;
	for (i = 0; i < c->n_explain && done < limit; i++) {
		const char *uid = c->explain[i];
		controller_job_t *j = controller_job(c, uid);
		controller_pgroup_t *g = j ? NULL : controller_group(c, uid);
		uint64_t *last = j ? &j->status_hash : g ? &g->status_hash : NULL;
		char text[1024];
		uint64_t h;
		queue_wl_t id;
		bool found;

		if (j)
			j->explain_queued = false;
		if (g)
			g->explain_queued = false;
		found = last && (!j || j->wl) &&
			queue_workload_find(engine_core(c->e), uid, &id) == GPUQ_OK &&
			queue_workload_status(engine_core(c->e), id, text, sizeof(text)) !=
			    GPUQ_ENOTFOUND;
		free(c->explain[i]);
		c->explain[i] = NULL;
		if (!found)
			continue;
		if (j && j->rq_wait) /* admitted, its release held by a ResourceQuota */
			gpuq_strlcpy(text, j->rq_wait, sizeof(text));
		h = controller_map_hash(text) | 1; /* never 0: "nothing written yet" */
		if (h == *last)
			continue;
		done++;
		if (j)
			annotate_job(c, j, text);
		else
			controller_pods_annotate(c, g, text);
		*last = h;
	}
	/* keep the rest for the next pass */
	if (i > 0) {
		memmove(c->explain, c->explain + i, (c->n_explain - i) * sizeof(*c->explain));
		c->n_explain -= i;
	}
}

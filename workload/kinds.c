/* workload/kinds.c: the integration table. Each supported kind is one row:
 * its API identity, how it is held, what its controller creates, and two
 * readers: where its pod sets are (podsets, into a view) and what its status
 * says (status, into a workload being decoded). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload/internal.h"

/* ---- Pod ---- */

/* A Pod in a Kueue pod group counts for the whole group: the group is
 * admitted at once, so its Pods must fit together. */
static int decode_pod_group(workload_view_t *w, gpuq_diag_t *diag)
{
	const char *count = jv_member_str(w->annotations, WORKLOAD_ANNOT_POD_GROUP_COUNT);
	long long n = 0;
	char *end = NULL;

	w->pod_group = jv_member_str(w->labels, WORKLOAD_LABEL_POD_GROUP);
	if (!w->pod_group)
		return GPUQ_OK;
	if (count && *count >= '1' && *count <= '9')
		n = strtoll(count, &end, 10);
	if (!count || !end || *end || n < 1 || n > WORKLOAD_POD_GROUP_MAX) {
		const jv_fields_t f = workload_fields_of(w, diag);

		return jv_fields_refuse(
		    &f, "metadata.annotations[" WORKLOAD_ANNOT_POD_GROUP_COUNT "]",
		    "%s%s%s: a Pod in group \"%s\" must give the group's size as a whole number "
		    "from 1 to %d",
		    count ? "Invalid value: \"" : "Required value", count ? count : "",
		    count ? "\"" : "", w->pod_group, WORKLOAD_POD_GROUP_MAX);
	}
	w->pods = n;
	return GPUQ_OK;
}

/* One pod set: the Pod itself. */
static int pod_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	workload_view_podset_t *ps = &w->one;
	const jv_t *gates;
	int rc;

	w->n_podsets = 1;
	gpuq_strlcpy(ps->name, "main", sizeof(ps->name));
	ps->count = 1;
	ps->parallelism = 1;
	ps->tmpl = w->obj;
	ps->pod_labels = w->labels;
	ps->pod_annotations = w->annotations;
	ps->pod_spec = jv_member_obj(w->obj, "spec");
	gpuq_strlcpy(ps->spec_field, "spec", sizeof(ps->spec_field));
	ps->tmpl_ptr[0] = '\0';
	rc = jv_fields_typed(&f, ps->pod_spec, "schedulingGates", JV_ARRAY, "spec.schedulingGates",
			     &gates);
	return rc ? rc : decode_pod_group(w, diag);
}

/* Pod status: phase, node, Ready; finished = Succeeded or Failed. */
static int pod_status(workload_decoder_t *d, const jv_t *obj)
{
	workload_t *w = d->w;
	const jv_t *status, *conds;
	const char *phase = NULL, *node = NULL;
	int rc = workload_dec_status_parts(d, obj, &status, &conds);

	if (!rc)
		rc = workload_dec_str(d, status, "phase", "status.phase", false, &phase);
	if (!rc)
		rc = workload_dec_str(d, jv_member_obj(obj, "spec"), "nodeName", "spec.nodeName",
				      false, &node);
	if (!rc && (phase || node) && !workload_dec_extra(d))
		rc = GPUQ_ENOMEM;
	if (!rc && (phase || node)) {
		d->x->phase = phase;
		d->x->node_name = node;
	}
	w->finished = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
	w->ready = workload_condition_true(conds, "Ready");
	w->ready_pods = w->ready;
	return rc;
}

/* ---- batch/v1 Job ---- */

/* One pod set: spec.template, min(parallelism, completions) pods. */
static int job_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *spec = jv_member_obj(w->obj, "spec"), *tmpl;
	workload_view_podset_t *ps = &w->one;
	int rc;

	w->n_podsets = 1;
	gpuq_strlcpy(ps->name, "main", sizeof(ps->name));
	w->suspend = jv_is(jv_get(spec, "suspend"), JV_TRUE);
	rc = jv_fields_typed(&f, spec, "template", JV_OBJECT, "spec.template", &tmpl);
	if (!rc)
		rc = workload_view_template(w, ps, tmpl, "spec.template", "/spec/template", diag);
	if (!rc)
		rc = workload_view_job_counts(w, spec, "spec", &ps->parallelism, &ps->count, diag);
	w->pods = ps->count;
	return rc;
}

/* Largest pod count taken from a status (Kubernetes caps counts far below;
 * a count above is a broken object). */
#define COUNT_MAX ((int64_t)1 << 40)

/* Job status: the counts, startTime, Complete or Failed. */
static int job_status(workload_decoder_t *d, const jv_t *obj)
{
	static const char *const counts[] = {"active", "succeeded", "failed", "ready",
					     "terminating"};
	static const char *const paths[] = {"status.active", "status.succeeded", "status.failed",
					    "status.ready", "status.terminating"};
	workload_t *w = d->w;
	int64_t *out[] = {&w->active, &w->succeeded, &w->failed, &w->ready_pods, &w->terminating};
	const jv_t *status, *conds, *start;
	int rc = workload_dec_status_parts(d, obj, &status, &conds);

	for (size_t i = 0; !rc && i < sizeof(counts) / sizeof(*counts); i++)
		rc = jv_fields_int(&d->f, status, counts[i], paths[i], 0, 0, COUNT_MAX, out[i]);
	start = jv_get(status, "startTime");
	w->started = start && !jv_is(start, JV_NULL);
	w->finished =
	    workload_condition_true(conds, "Complete") || workload_condition_true(conds, "Failed");
	return rc;
}

/* ---- jobset.x-k8s.io/v1alpha2 JobSet ---- */

/* One pod set per replicatedJob: its replicas times its Job template's
 * min(parallelism, completions) pods, at .template.spec.template. */
static int jobset_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *spec = jv_member_obj(w->obj, "spec"), *rjobs, *rj;
	size_t i = 0;
	int rc;

	w->suspend = jv_is(jv_get(spec, "suspend"), JV_TRUE);
	w->pods = 0;
	w->n_podsets = 0;
	rc = jv_fields_typed(&f, spec, "replicatedJobs", JV_ARRAY, "spec.replicatedJobs", &rjobs);
	for (rj = jv_first(rjobs); !rc && rj; rj = rj->next, i++) {
		char field[WORKLOAD_FIELD_MAX], at[WORKLOAD_FIELD_MAX + 32],
		    ptr[WORKLOAD_FIELD_MAX];
		const jv_t *jt = NULL, *jspec = NULL, *pt = NULL;
		workload_view_podset_t *ps;
		const char *name;
		int64_t replicas, par, pods;

		snprintf(field, sizeof(field), "spec.replicatedJobs[%zu]", i);
		if (!jv_is(rj, JV_OBJECT))
			return jv_fields_want(&f, field, rj, JV_OBJECT);
		snprintf(at, sizeof(at), "%s.name", field);
		rc = jv_fields_str(&f, rj, "name", at, true, &name);
		snprintf(at, sizeof(at), "%s.replicas", field);
		if (!rc)
			rc = jv_fields_int(&f, rj, "replicas", at, 1, 0, INT32_MAX, &replicas);
		snprintf(at, sizeof(at), "%s.template", field);
		if (!rc)
			rc = jv_fields_typed(&f, rj, "template", JV_OBJECT, at, &jt);
		snprintf(at, sizeof(at), "%s.template.spec", field);
		if (!rc)
			rc = jv_fields_typed(&f, jt, "spec", JV_OBJECT, at, &jspec);
		snprintf(at, sizeof(at), "%s.template.spec.template", field);
		if (!rc)
			rc = jv_fields_typed(&f, jspec, "template", JV_OBJECT, at, &pt);
		snprintf(at, sizeof(at), "%s.template.spec", field);
		if (!rc)
			rc = workload_view_job_counts(w, jspec, at, &par, &pods, diag);
		if (rc)
			return rc;
		if (replicas * pods == 0) /* runs no pod: no pod set (the core's hold 1 or more) */
			continue;
		snprintf(at, sizeof(at), "%s.template.spec.template", field);
		rc = workload_view_podset_new(w, name, "spec.replicatedJobs", &ps, diag);
		snprintf(ptr, sizeof(ptr), "/spec/replicatedJobs/%zu/template/spec/template", i);
		if (!rc)
			rc = workload_view_template(w, ps, pt, at, ptr, diag);
		if (rc)
			return rc;
		ps->parallelism = par;
		ps->count = replicas * pods; /* both capped far below 2^31 */
		w->pods += ps->count;
	}
	if (!rc && !w->n_podsets)
		return jv_fields_refuse(&f, "spec.replicatedJobs",
					"Required value: a JobSet of no replicatedJob with "
					"pods runs nothing");
	return rc;
}

/* JobSet status: Completed or Failed; every child Job Ready (its status
 * counts Jobs: all of them ready or succeeded means all pods Ready); the
 * child Jobs active. */
static int jobset_status(workload_decoder_t *d, const jv_t *obj)
{
	workload_t *w = d->w;
	const jv_t *status, *conds, *rjs;
	int64_t jobs = 0, ready = 0;
	int rc = workload_dec_status_parts(d, obj, &status, &conds);

	w->finished =
	    workload_condition_true(conds, "Completed") || workload_condition_true(conds, "Failed");
	for (const jv_t *rj = jv_first(jv_get(jv_member_obj(obj, "spec"), "replicatedJobs")); rj;
	     rj = rj->next) {
		int64_t n = 1;

		(void)jv_int(jv_get(rj, "replicas"), &n);
		jobs += n;
	}
	rjs = jv_get(status, "replicatedJobsStatus");
	for (const jv_t *st = jv_first(rjs); st; st = st->next) {
		int64_t r = 0, s = 0, a = 0;

		(void)jv_int(jv_get(st, "ready"), &r);
		(void)jv_int(jv_get(st, "succeeded"), &s);
		(void)jv_int(jv_get(st, "active"), &a);
		ready += r + s;
		w->active += a;
	}
	w->ready_pods = jobs > 0 && ready >= jobs ? w->pods : 0;
	return rc;
}

/* ---- apps/v1 StatefulSet and Deployment: one pod set of replicas ---- */

/* spec.template times spec.replicas (default 1). */
static int replicas_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *spec = jv_member_obj(w->obj, "spec"), *tmpl;
	workload_view_podset_t *ps = &w->one;
	int64_t replicas;
	int rc;

	w->n_podsets = 1;
	gpuq_strlcpy(ps->name, "main", sizeof(ps->name));
	rc = jv_fields_int(&f, spec, "replicas", "spec.replicas", 1, 0, INT32_MAX, &replicas);
	if (!rc)
		rc = jv_fields_typed(&f, spec, "template", JV_OBJECT, "spec.template", &tmpl);
	if (!rc)
		rc = workload_view_template(w, ps, tmpl, "spec.template", "/spec/template", diag);
	ps->count = replicas;
	ps->parallelism = 1;
	w->pods = replicas;
	return rc;
}

/* A StatefulSet: its replicas, numbered from spec.ordinals.start (0 when
 * absent; the StatefulSet controller names its Pods <name>-<start> ...
 * <name>-<start + replicas - 1>). */
static int statefulset_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *ordinals = NULL;
	int rc = replicas_podsets(w, diag);

	if (!rc)
		rc = jv_fields_typed(&f, jv_member_obj(w->obj, "spec"), "ordinals", JV_OBJECT,
				     "spec.ordinals", &ordinals);
	if (!rc)
		rc = jv_fields_int(&f, ordinals, "start", "spec.ordinals.start", 0, 0, INT32_MAX,
				   &w->first_ordinal);
	return rc;
}

static int statefulset_status(workload_decoder_t *d, const jv_t *obj)
{
	const char *policy = jv_member_str(jv_member_obj(obj, "spec"), "podManagementPolicy");
	workload_t *w = d->w;

	w->replicas = w->pods;
	/* OrderedReady (the default) makes each Pod once the one before is Ready:
	 * a gated Pod never is, so the set is admitted before its Pods exist */
	w->fast_admission = !policy || strcmp(policy, "Parallel") != 0;
	(void)jv_int(jv_get(jv_member_obj(obj, "status"), "readyReplicas"), &w->ready_pods);
	return GPUQ_OK;
}

/* ---- leaderworkerset.x-k8s.io/v1 LeaderWorkerSet ---- */

/* One group: the leader (leaderTemplate, else workerTemplate) and size - 1
 * workers (workerTemplate). spec.replicas groups are workloads of their own. */
static int lws_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *spec = jv_member_obj(w->obj, "spec"), *lwt = NULL, *lt = NULL, *wt = NULL;
	workload_view_podset_t *ps;
	int64_t size = 1, replicas = 1;
	int rc;

	w->n_podsets = 0;
	rc = jv_fields_int(&f, spec, "replicas", "spec.replicas", 1, 0, INT32_MAX, &replicas);
	if (!rc)
		rc = jv_fields_typed(&f, spec, "leaderWorkerTemplate", JV_OBJECT,
				     "spec.leaderWorkerTemplate", &lwt);
	if (!rc)
		rc = jv_fields_int(&f, lwt, "size", "spec.leaderWorkerTemplate.size", 1, 1,
				   WORKLOAD_POD_GROUP_MAX, &size);
	if (!rc)
		rc = jv_fields_typed(&f, lwt, "leaderTemplate", JV_OBJECT,
				     "spec.leaderWorkerTemplate.leaderTemplate", &lt);
	if (!rc)
		rc = jv_fields_typed(&f, lwt, "workerTemplate", JV_OBJECT,
				     "spec.leaderWorkerTemplate.workerTemplate", &wt);
	if (!rc)
		rc = workload_view_podset_new(w, "leader", "spec.leaderWorkerTemplate", &ps, diag);
	if (!rc)
		rc = lt ? workload_view_template(w, ps, lt,
						 "spec.leaderWorkerTemplate.leaderTemplate",
						 "/spec/leaderWorkerTemplate/leaderTemplate", diag)
			: workload_view_template(w, ps, wt,
						 "spec.leaderWorkerTemplate.workerTemplate",
						 "/spec/leaderWorkerTemplate/workerTemplate", diag);
	if (!rc && size > 1) {
		rc = workload_view_podset_new(w, "workers", "spec.leaderWorkerTemplate", &ps, diag);
		if (!rc)
			rc = workload_view_template(
			    w, ps, wt, "spec.leaderWorkerTemplate.workerTemplate",
			    "/spec/leaderWorkerTemplate/workerTemplate", diag);
		if (!rc)
			ps->count = size - 1;
	}
	w->pods = size;
	return rc;
}

/* An LWS's rolling update may make up to maxSurge groups past spec.replicas
 * (spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge, a count or a
 * percentage of spec.replicas rounded up, at most spec.replicas: the LWS
 * controller's rule; 0 when absent or not one of those). */
static int64_t lws_surge(const jv_t *spec, int64_t replicas)
{
	const jv_t *v = jv_get(
	    jv_member_obj(jv_member_obj(spec, "rolloutStrategy"), "rollingUpdateConfiguration"),
	    "maxSurge");
	const char *pct = jv_is(v, JV_STRING) ? jv_str(v) : NULL;
	int64_t n = 0;
	char *end = NULL;

	if (pct && *pct >= '0' && *pct <= '9') {
		long long p = strtoll(pct, &end, 10);

		if (p > 100) /* past 100%, spec.replicas */
			p = 100;
		n = end && end[0] == '%' && !end[1] ? (p * replicas + 99) / 100 : 0;
	} else if (!jv_int(v, &n) || n < 0) {
		n = 0;
	}
	return n < replicas ? n : replicas;
}

static int lws_status(workload_decoder_t *d, const jv_t *obj)
{
	const jv_t *spec = jv_member_obj(obj, "spec");
	workload_t *w = d->w;
	int64_t surge;

	w->replicas = 1;
	(void)jv_int(jv_get(spec, "replicas"), &w->replicas);
	surge = lws_surge(spec, w->replicas);
	if (surge && !workload_dec_extra(d))
		return GPUQ_ENOMEM;
	if (surge) /* at most spec.replicas, an int32 */
		d->x->surge = (int32_t)surge;
	/* LeaderReady (startupPolicy) makes the workers once the leader is
	 * Ready: a group is admitted before its Pods exist (gpuq does so for
	 * LeaderCreated too, the same way) */
	w->fast_admission = true;
	(void)jv_int(jv_get(jv_member_obj(obj, "status"), "readyReplicas"), &w->ready_pods);
	return GPUQ_OK;
}

/* ---- ray.io/v1 RayCluster and RayJob (KubeRay) ---- */

/* A worker group's pods as KubeRay's GetWorkerGroupDesiredReplicas counts
 * them: none when suspended; replicas clamped to [minReplicas, maxReplicas]
 * (maxReplicas when the two cross; minReplicas when replicas is absent);
 * times numOfHosts. */
static int64_t ray_group_pods(bool suspended, int64_t replicas, int64_t min, int64_t max,
			      int64_t hosts)
{
	int64_t n;

	if (suspended)
		return 0;
	if (min > max)
		n = max;
	else if (replicas < 0 || replicas < min)
		n = min;
	else
		n = replicas > max ? max : replicas;
	return n * hosts;
}

/* A Ray cluster spec at field/ptr: the head (1 pod) and each worker group
 * that has pods (ray_group_pods; a group of none is no pod set: the core
 * counts pods of one or more). */
static int ray_cluster_podsets(workload_view_t *w, const jv_t *rc, const char *field,
			       const char *ptr, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *head = NULL, *ht = NULL, *groups = NULL;
	char at[WORKLOAD_FIELD_MAX + 96], p2[WORKLOAD_FIELD_MAX + 48];
	workload_view_podset_t *ps;
	size_t i = 0;
	int rc_ = GPUQ_OK;

	snprintf(at, sizeof(at), "%s.headGroupSpec", field);
	rc_ = jv_fields_typed(&f, rc, "headGroupSpec", JV_OBJECT, at, &head);
	snprintf(at, sizeof(at), "%s.headGroupSpec.template", field);
	if (!rc_)
		rc_ = jv_fields_typed(&f, head, "template", JV_OBJECT, at, &ht);
	if (!rc_ && !ht) /* the CRD requires both */
		return jv_fields_refuse(&f, at, "Required value: a Ray cluster's head");
	if (!rc_)
		rc_ = workload_view_podset_new(w, "head", at, &ps, diag);
	snprintf(p2, sizeof(p2), "%s/headGroupSpec/template", ptr);
	if (!rc_)
		rc_ = workload_view_template(w, ps, ht, at, p2, diag);
	snprintf(at, sizeof(at), "%s.workerGroupSpecs", field);
	if (!rc_)
		rc_ = jv_fields_typed(&f, rc, "workerGroupSpecs", JV_ARRAY, at, &groups);
	for (const jv_t *g = jv_first(groups); !rc_ && g; g = g->next, i++) {
		char gf[WORKLOAD_FIELD_MAX + 48], gp[WORKLOAD_FIELD_MAX + 48];
		const char *name = NULL;
		const jv_t *t = NULL;
		int64_t replicas = -1, min = 0, max = INT32_MAX, hosts = 1, n;

		snprintf(gf, sizeof(gf), "%s.workerGroupSpecs[%zu]", field, i);
		if (!jv_is(g, JV_OBJECT))
			return jv_fields_want(&f, gf, g, JV_OBJECT);
		snprintf(at, sizeof(at), "%s.groupName", gf);
		rc_ = jv_fields_str(&f, g, "groupName", at, true, &name);
		snprintf(at, sizeof(at), "%s.replicas", gf);
		if (!rc_)
			rc_ = jv_fields_int(&f, g, "replicas", at, -1, 0, INT32_MAX, &replicas);
		snprintf(at, sizeof(at), "%s.minReplicas", gf);
		if (!rc_)
			rc_ = jv_fields_int(&f, g, "minReplicas", at, 0, 0, INT32_MAX, &min);
		snprintf(at, sizeof(at), "%s.maxReplicas", gf);
		if (!rc_)
			rc_ =
			    jv_fields_int(&f, g, "maxReplicas", at, INT32_MAX, 0, INT32_MAX, &max);
		snprintf(at, sizeof(at), "%s.numOfHosts", gf);
		if (!rc_)
			rc_ = jv_fields_int(&f, g, "numOfHosts", at, 1, 1, INT32_MAX, &hosts);
		snprintf(at, sizeof(at), "%s.template", gf);
		if (!rc_)
			rc_ = jv_fields_typed(&f, g, "template", JV_OBJECT, at, &t);
		n = ray_group_pods(jv_is(jv_get(g, "suspend"), JV_TRUE), replicas, min, max, hosts);
		if (rc_ || n == 0)
			continue;
		rc_ = workload_view_podset_new(w, name, at, &ps, diag);
		snprintf(gp, sizeof(gp), "%s/workerGroupSpecs/%zu/template", ptr, i);
		if (!rc_)
			rc_ = workload_view_template(w, ps, t, at, gp, diag);
		if (!rc_)
			ps->count = n;
	}
	/* the autoscaler would add pods no admission counted (Kueue refuses it too) */
	if (!rc_ && jv_is(jv_get(rc, "enableInTreeAutoscaling"), JV_TRUE))
		w->unsupported = "enableInTreeAutoscaling is true: gpuq admits a Ray cluster of "
				 "the pods its spec names, and the autoscaler would add more";
	w->pods = 0;
	for (size_t k = 0; k < w->n_podsets; k++)
		w->pods += w->podsets[k].count;
	return rc_;
}

static int raycluster_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_t *spec = jv_member_obj(w->obj, "spec");

	w->n_podsets = 0;
	w->suspend = jv_is(jv_get(spec, "suspend"), JV_TRUE);
	return ray_cluster_podsets(w, spec, "spec", "/spec", diag);
}

/* KubeRay's default submitter container (ray-operator's
 * GetDefaultSubmitterContainer, v1.5.0) into c: requests 500m cpu and
 * 200Mi memory, limits 1 cpu and 1Gi. */
static int default_submitter_container(quota_container_t *c)
{
	static const struct {
		const char *res, *request, *limit;
	} r[] = {{"cpu", "500m", "1"}, {"memory", "200Mi", "1Gi"}};
	int rc = GPUQ_OK;

	for (size_t i = 0; !rc && i < sizeof(r) / sizeof(*r); i++) {
		quota_qty_t q;

		rc = quota_qty_parse(r[i].request, strlen(r[i].request), &q, NULL);
		if (!rc)
			rc = quota_reslist_set(&c->requests, r[i].res, &q);
		if (!rc)
			rc = quota_qty_parse(r[i].limit, strlen(r[i].limit), &q, NULL);
		if (!rc)
			rc = quota_reslist_set(&c->limits, r[i].res, &q);
	}
	if (rc)
		return rc == GPUQ_ENOMEM ? rc : GPUQ_EINVAL; /* a constant above: never */
	gpuq_strlcpy(c->name, "ray-job-submitter", sizeof(c->name));
	c->kind = QUOTA_CONTAINER_APP;
	return GPUQ_OK;
}

/* KubeRay's default submitter Pod: its one container. */
static int default_submitter(workload_view_podset_t *ps)
{
	quota_container_t *c = calloc(1, sizeof(*c));
	int rc = c ? default_submitter_container(c) : GPUQ_ENOMEM;

	if (rc) {
		free(c);
		return rc;
	}
	ps->pod.containers = c;
	ps->pod.n_containers = 1;
	return GPUQ_OK;
}

/* A RayJob's submitter, by spec.submissionMode (Kueue reads it the same
 * way). K8sJobMode (the default) runs `ray job submit` from a Job of one
 * Pod made from spec.submitterPodTemplate, or from KubeRay's default when
 * that is absent: a pod set "submitter" of 1 (Kueue's pod set of the same
 * name), after the cluster's (it counts against WORKLOAD_PODSETS_MAX with
 * them). It is counted and placed, as Kueue does: the release writes the
 * flavor's nodeSelector and tolerations into that template, or writes
 * KubeRay's default whole with them (its image copied from the head's, when
 * the head names one), and nothing else (counted_only). SidecarMode adds
 * KubeRay's default submitter container to the head Pod (it takes no
 * template of the user's): counted in the head's pod set. HTTPMode and
 * InteractiveMode make no submitter. */
static int ray_submitter(workload_view_t *w, const jv_t *spec, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const char *mode = NULL, *field = "spec.submitterPodTemplate";
	const jv_t *t = NULL;
	workload_view_podset_t *ps = NULL;
	int rc = jv_fields_str(&f, spec, "submissionMode", "spec.submissionMode", false, &mode);

	if (!rc && mode && !strcmp(mode, "SidecarMode")) {
		for (size_t i = 0; i < w->n_podsets; i++)
			if (!strcmp(w->podsets[i].name, "head"))
				w->podsets[i].added_container = default_submitter_container;
		return GPUQ_OK;
	}
	if (rc || (mode && *mode && strcmp(mode, "K8sJobMode") != 0))
		return rc;
	rc = jv_fields_typed(&f, spec, "submitterPodTemplate", JV_OBJECT, field, &t);
	if (!rc)
		rc = workload_view_podset_new(w, "submitter", t ? field : "spec.submissionMode",
					      &ps, diag);
	if (!rc && t)
		rc = workload_view_template(w, ps, t, field, "/spec/submitterPodTemplate", diag);
	else if (!rc)
		rc = default_submitter(ps);
	if (!rc && !t) {
		const jv_t *hc = jv_first(jv_get(
		    jv_member_obj(jv_member_obj(jv_member_obj(jv_member_obj(spec, "rayClusterSpec"),
							      "headGroupSpec"),
						"template"),
				  "spec"),
		    "containers"));
		const char *image = jv_member_str(hc, "image");

		gpuq_strlcpy(ps->tmpl_ptr, "/spec/submitterPodTemplate", sizeof(ps->tmpl_ptr));
		ps->default_tmpl = image && *image;
	}
	if (!rc) {
		snprintf(ps->spec_field, sizeof(ps->spec_field), "%s.spec", field);
		ps->counted_only = true;
		w->pods += ps->count;
	}
	return rc;
}

static int rayjob_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	const jv_fields_t f = workload_fields_of(w, diag);
	const jv_t *spec = jv_member_obj(w->obj, "spec"), *rc;
	int r;

	w->n_podsets = 0;
	w->suspend = jv_is(jv_get(spec, "suspend"), JV_TRUE);
	r = jv_fields_typed(&f, spec, "rayClusterSpec", JV_OBJECT, "spec.rayClusterSpec", &rc);
	/* a RayJob on an existing cluster (clusterSelector) makes no pod of
	   its own (its submitter asks for no GPU): nothing to hold */
	if (r || !rc)
		return r;
	r = ray_cluster_podsets(w, rc, "spec.rayClusterSpec", "/spec/rayClusterSpec", diag);
	if (!r)
		r = ray_submitter(w, spec, diag);
	/* KubeRay suspends (and so admits) only a RayJob that deletes its
	   cluster when done */
	if (!r && !w->unsupported && !jv_is(jv_get(spec, "shutdownAfterJobFinishes"), JV_TRUE))
		w->unsupported = "spec.shutdownAfterJobFinishes is not true: KubeRay holds "
				 "(suspends) only a RayJob that deletes its cluster when it "
				 "finishes; set it true";
	return r;
}

/* RayCluster: quiet once suspended (RayClusterSuspended, or its state). */
static int raycluster_status(workload_decoder_t *d, const jv_t *obj)
{
	const jv_t *status = jv_member_obj(obj, "status");
	const char *state = jv_member_str(status, "state");
	workload_t *w = d->w;

	w->active =
	    !(workload_condition_true(jv_get(status, "conditions"), "RayClusterSuspended") ||
	      (state && !strcmp(state, "suspended")));
	w->ready_pods = state && !strcmp(state, "ready") ? w->pods : 0;
	return GPUQ_OK;
}

/* RayJob: finished on a terminal deployment status; active (its cluster
 * may hold pods) from Initializing until KubeRay reports it Suspended (its
 * RayCluster deleted) or done; Ready when its cluster is (as Kueue reads
 * it). */
static int rayjob_status(workload_decoder_t *d, const jv_t *obj)
{
	const jv_t *status = jv_member_obj(obj, "status");
	const char *st = jv_member_str(status, "jobDeploymentStatus");
	const char *cs = jv_member_str(jv_member_obj(status, "rayClusterStatus"), "state");
	workload_t *w = d->w;

	w->ready_pods = cs && !strcmp(cs, "ready") ? w->pods : 0;

	w->finished = st && (!strcmp(st, "Complete") || !strcmp(st, "Failed") ||
			     !strcmp(st, "ValidationFailed"));
	w->active =
	    st && *st && !w->finished && strcmp(st, "New") != 0 && strcmp(st, "Suspended") != 0;
	return GPUQ_OK;
}

/* ---- trainer.kubeflow.org/v1alpha1 TrainJob (Kubeflow Trainer) ---- */

/* A TrainJob names a TrainingRuntime; the Trainer builds its JobSet from
 * both (held suspended while the TrainJob is), and that JobSet's pod sets
 * are the TrainJob's (podsets_of_child): none of its own. */
static int trainjob_podsets(workload_view_t *w, gpuq_diag_t *diag)
{
	(void)diag;
	w->n_podsets = 0;
	w->pods = 0;
	w->suspend = jv_is(jv_get(jv_member_obj(w->obj, "spec"), "suspend"), JV_TRUE);
	return GPUQ_OK;
}

/* TrainJob: finished on Complete or Failed; active: its Jobs' active
 * pods (status.jobsStatus); where gpuq's runtime patch is. */
static int trainjob_status(workload_decoder_t *d, const jv_t *obj)
{
	const jv_t *status = jv_member_obj(obj, "status"), *conds = jv_get(status, "conditions");
	const jv_t *patches = jv_get(jv_member_obj(obj, "spec"), "runtimePatches");
	workload_t *w = d->w;
	int32_t i = 0;

	w->finished =
	    workload_condition_true(conds, "Complete") || workload_condition_true(conds, "Failed");
	w->active = 0;
	for (const jv_t *js = jv_first(jv_get(status, "jobsStatus")); js; js = js->next) {
		int64_t a = 0;

		(void)jv_int(jv_get(js, "active"), &a);
		w->active += a > 0 ? a : 0;
	}
	w->has_runtime_patches = jv_is(patches, JV_ARRAY);
	for (const jv_t *p = jv_first(patches); p; p = p->next, i++) {
		const char *m = jv_member_str(p, "manager");

		if (m && !strcmp(m, WORKLOAD_PATCH_MANAGER))
			w->runtime_patch_at = i;
	}
	return GPUQ_OK;
}

/* ---- The table ---- */

/* The Job controller in kube-controller-manager (with and without
 * --use-service-account-credentials). */
static const char *const job_creators[] = {"system:serviceaccount:kube-system:job-controller",
					   "system:kube-controller-manager", NULL};
/* The JobSet controller as its own install runs it (namespace jobset-system,
 * ServiceAccount jobset-controller-manager). */
static const char *const jobset_creators[] = {
    "system:serviceaccount:jobset-system:jobset-controller-manager", NULL};
/* KubeRay's operator as its own install runs it. */
static const char *const kuberay_creators[] = {"system:serviceaccount:ray-system:kuberay-operator",
					       NULL};
/* The Trainer's controller manager as its own install runs it. */
static const char *const trainer_creators[] = {
    "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager", NULL};
/* A StatefulSet's Pods (also an LWS's: its leader and worker StatefulSets). */
static const char *const statefulset_creators[] = {
    "system:serviceaccount:kube-system:statefulset-controller", "system:kube-controller-manager",
    NULL};

static const workload_integration_t rows[WORKLOAD_KIND_COUNT] = {
    [WORKLOAD_KIND_OTHER] = {.kind = WORKLOAD_KIND_OTHER,
			     .kind_name = "object",
			     .short_name = "object"},
    [WORKLOAD_KIND_POD] = {.kind = WORKLOAD_KIND_POD,
			   .api_version = "v1",
			   .group = "",
			   .version = "v1",
			   .kind_name = "Pod",
			   .resource = "pods",
			   .watch_path = "/api/v1/pods",
			   .short_name = "pod",
			   .hold = WORKLOAD_HOLD_GATES,
			   .child_kind = WORKLOAD_KIND_OTHER,
			   .podsets = pod_podsets,
			   .status = pod_status,
			   .shape_queued = WORKLOAD_EDIT_FOLLOW,
			   .shape_admitted = WORKLOAD_EDIT_REFUSE,
			   .count_admitted = WORKLOAD_EDIT_REFUSE,
			   .pins_affinity = true},
    [WORKLOAD_KIND_JOB] = {.kind = WORKLOAD_KIND_JOB,
			   .api_version = "batch/v1",
			   .group = "batch",
			   .version = "v1",
			   .kind_name = "Job",
			   .resource = "jobs",
			   .watch_path = "/apis/batch/v1/jobs",
			   .short_name = "job",
			   .hold = WORKLOAD_HOLD_SUSPEND,
			   .suspend_ptr = "/spec/suspend",
			   .child_kind = WORKLOAD_KIND_POD,
			   .creators = job_creators,
			   .podsets = job_podsets,
			   .status = job_status,
			   .shape_queued = WORKLOAD_EDIT_FOLLOW,
			   .shape_admitted = WORKLOAD_EDIT_REFUSE,
			   .count_admitted = WORKLOAD_EDIT_SHRINK,
			   .quiet = WORKLOAD_QUIET_PODS,
			   .bare_name = true,
			   .replace_member = "podReplacementPolicy",
			   .pins_affinity = true,
			   .counts_pods = true},
    [WORKLOAD_KIND_JOBSET] = {.kind = WORKLOAD_KIND_JOBSET,
			      .api_version = "jobset.x-k8s.io/v1alpha2",
			      .group = "jobset.x-k8s.io",
			      .version = "v1alpha2",
			      .kind_name = "JobSet",
			      .resource = "jobsets",
			      .watch_path = "/apis/jobset.x-k8s.io/v1alpha2/jobsets",
			      .watch_optional = true,
			      .short_name = "jobset",
			      .hold = WORKLOAD_HOLD_SUSPEND,
			      .suspend_ptr = "/spec/suspend",
			      .child_kind = WORKLOAD_KIND_JOB,
			      .creators = jobset_creators,
			      .podsets = jobset_podsets,
			      .status = jobset_status,
			      .shape_queued = WORKLOAD_EDIT_FOLLOW,
			      .shape_admitted = WORKLOAD_EDIT_REFUSE,
			      .count_admitted = WORKLOAD_EDIT_SHRINK,
			      .quiet = WORKLOAD_QUIET_CHILDREN},
    [WORKLOAD_KIND_STATEFULSET] = {.kind = WORKLOAD_KIND_STATEFULSET,
				   .api_version = "apps/v1",
				   .group = "apps",
				   .version = "v1",
				   .kind_name = "StatefulSet",
				   .resource = "statefulsets",
				   .watch_path = "/apis/apps/v1/statefulsets",
				   .short_name = "statefulset",
				   .hold = WORKLOAD_HOLD_GATES,
				   .child_kind = WORKLOAD_KIND_POD,
				   .creators = statefulset_creators,
				   .sequential = true,
				   .podsets = statefulset_podsets,
				   .status = statefulset_status,
				   .shape_queued = WORKLOAD_EDIT_REFUSE,
				   .shape_admitted = WORKLOAD_EDIT_REFUSE,
				   .count_admitted = WORKLOAD_EDIT_FOLLOW,
				   .replicas_member = "replicas",
				   .set = WORKLOAD_SET_SLICES,
				   .set_key = "sts"},
    [WORKLOAD_KIND_LWS] = {.kind = WORKLOAD_KIND_LWS,
			   .api_version = "leaderworkerset.x-k8s.io/v1",
			   .group = "leaderworkerset.x-k8s.io",
			   .version = "v1",
			   .kind_name = "LeaderWorkerSet",
			   .resource = "leaderworkersets",
			   .watch_path = "/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets",
			   .watch_optional = true,
			   .short_name = "lws",
			   .hold = WORKLOAD_HOLD_GATES,
			   .child_kind = WORKLOAD_KIND_POD,
			   .creators = statefulset_creators,
			   .sequential = true,
			   .podsets = lws_podsets,
			   .status = lws_status,
			   .shape_queued = WORKLOAD_EDIT_REFUSE,
			   .shape_admitted = WORKLOAD_EDIT_REFUSE,
			   .count_admitted = WORKLOAD_EDIT_REFUSE,
			   .replicas_member = "replicas",
			   .set = WORKLOAD_SET_GROUPS,
			   .set_key = "lws"},
    [WORKLOAD_KIND_RAYCLUSTER] = {.kind = WORKLOAD_KIND_RAYCLUSTER,
				  .api_version = "ray.io/v1",
				  .group = "ray.io",
				  .version = "v1",
				  .kind_name = "RayCluster",
				  .resource = "rayclusters",
				  .watch_path = "/apis/ray.io/v1/rayclusters",
				  .watch_optional = true,
				  .short_name = "raycluster",
				  .hold = WORKLOAD_HOLD_SUSPEND,
				  .suspend_ptr = "/spec/suspend",
				  .child_kind = WORKLOAD_KIND_POD,
				  .creators = kuberay_creators,
				  .podsets = raycluster_podsets,
				  .status = raycluster_status,
				  .shape_queued = WORKLOAD_EDIT_FOLLOW,
				  .shape_admitted = WORKLOAD_EDIT_REFUSE,
				  .count_admitted = WORKLOAD_EDIT_SHRINK,
				  .quiet = WORKLOAD_QUIET_STATUS},
    [WORKLOAD_KIND_RAYJOB] = {.kind = WORKLOAD_KIND_RAYJOB,
			      .api_version = "ray.io/v1",
			      .group = "ray.io",
			      .version = "v1",
			      .kind_name = "RayJob",
			      .resource = "rayjobs",
			      .watch_path = "/apis/ray.io/v1/rayjobs",
			      .watch_optional = true,
			      .short_name = "rayjob",
			      .hold = WORKLOAD_HOLD_SUSPEND,
			      .suspend_ptr = "/spec/suspend",
			      .child_kind = WORKLOAD_KIND_RAYCLUSTER,
			      .creators = kuberay_creators,
			      .podsets = rayjob_podsets,
			      .default_image_ptr =
				  "/spec/rayClusterSpec/headGroupSpec/template/spec/"
				  "containers/0/image",
			      .status = rayjob_status,
			      .shape_queued = WORKLOAD_EDIT_FOLLOW,
			      .shape_admitted = WORKLOAD_EDIT_REFUSE,
			      .count_admitted = WORKLOAD_EDIT_SHRINK,
			      .quiet = WORKLOAD_QUIET_CHILDREN},
    [WORKLOAD_KIND_TRAINJOB] = {.kind = WORKLOAD_KIND_TRAINJOB,
				.api_version = "trainer.kubeflow.org/v1alpha1",
				.group = "trainer.kubeflow.org",
				.version = "v1alpha1",
				.kind_name = "TrainJob",
				.resource = "trainjobs",
				.watch_path = "/apis/trainer.kubeflow.org/v1alpha1/trainjobs",
				.watch_optional = true,
				.short_name = "trainjob",
				.hold = WORKLOAD_HOLD_SUSPEND,
				.suspend_ptr = "/spec/suspend",
				.child_kind = WORKLOAD_KIND_JOBSET,
				.creators = trainer_creators,
				.podsets_of_child = true,
				.runtime_patch = "/spec/runtimePatches",
				.gpu_field = "spec.trainer.resourcesPerNode",
				.said_count_field = "spec.trainer.numNodes",
				.podsets = trainjob_podsets,
				.status = trainjob_status,
				.shape_queued = WORKLOAD_EDIT_FOLLOW,
				.shape_admitted = WORKLOAD_EDIT_REFUSE,
				.count_admitted = WORKLOAD_EDIT_SHRINK,
				.quiet = WORKLOAD_QUIET_CHILDREN},
    [WORKLOAD_KIND_DEPLOYMENT] = {.kind = WORKLOAD_KIND_DEPLOYMENT,
				  .api_version = "apps/v1",
				  .group = "apps",
				  .version = "v1",
				  .kind_name = "Deployment",
				  .resource = "deployments",
				  .short_name = "deployment",
				  .hold = WORKLOAD_HOLD_NONE,
				  .child_kind = WORKLOAD_KIND_POD,
				  .podsets = replicas_podsets,
				  .shape_queued = WORKLOAD_EDIT_FOLLOW,
				  .shape_admitted = WORKLOAD_EDIT_FOLLOW,
				  .count_admitted = WORKLOAD_EDIT_FOLLOW},
};

const workload_integration_t *workload_integration(workload_kind_t k)
{
	if ((unsigned)k >= WORKLOAD_KIND_COUNT || !rows[k].kind_name)
		return &rows[WORKLOAD_KIND_OTHER];
	return &rows[k];
}

workload_kind_t workload_kind_of(const char *api_version, const char *kind)
{
	if (!api_version || !kind)
		return WORKLOAD_KIND_OTHER;
	for (int k = 1; k < WORKLOAD_KIND_COUNT; k++)
		if (rows[k].podsets && !strcmp(rows[k].api_version, api_version) &&
		    !strcmp(rows[k].kind_name, kind))
			return (workload_kind_t)k;
	return WORKLOAD_KIND_OTHER;
}

workload_kind_t workload_kind_gvk(const char *group, const char *version, const char *kind)
{
	if (!version || !kind)
		return WORKLOAD_KIND_OTHER;
	for (int k = 1; k < WORKLOAD_KIND_COUNT; k++)
		if (rows[k].podsets && !strcmp(rows[k].group, group ? group : "") &&
		    !strcmp(rows[k].version, version) && !strcmp(rows[k].kind_name, kind))
			return (workload_kind_t)k;
	return WORKLOAD_KIND_OTHER;
}

const workload_integration_t *workload_parent_of(workload_kind_t kind, const char *api_version,
						 const char *owner_kind)
{
	workload_kind_t k = workload_kind_of(api_version, owner_kind);

	return k != WORKLOAD_KIND_OTHER && kind != WORKLOAD_KIND_POD &&
		       rows[k].hold == WORKLOAD_HOLD_SUSPEND && rows[k].child_kind == kind
		   ? &rows[k]
		   : NULL;
}

bool workload_makes_pods(const workload_integration_t *integ)
{
	return integ->hold == WORKLOAD_HOLD_SUSPEND && integ->child_kind == WORKLOAD_KIND_POD;
}

bool workload_set_member(const workload_t *w)
{
	return w->x->set_kind != WORKLOAD_KIND_OTHER;
}

bool workload_creator(const workload_integration_t *integ, const char *username)
{
	for (const char *const *u = integ->creators; u && *u; u++)
		if (username && !strcmp(username, *u))
			return true;
	return false;
}

const char *workload_display_name(workload_kind_t kind, const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", workload_integration(kind)->short_name, name ? name : "");
	return buf;
}

/* gpuq status: the queues and why each workload waits, read from the
 * apiserver (ClusterQueue status and the Jobs' gpuq.dev/status annotations
 * the controller writes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "controller/controller.h"
#include "kube/kube.h"
#include "workload/workload.h"

static const char usage_text[] =
    "usage: gpuq status [--kubeconfig FILE] [-n NAMESPACE | -A] [JOB | KIND/NAME]\n"
    "\n"
    "Prints every ClusterQueue (pending, admitted, GPUs in use, per flavor usage),\n"
    "then the GPU workloads gpuq holds in NAMESPACE (every namespace with -A):\n"
    "Jobs, and JobSets, RayJobs, RayClusters and TrainJobs as kind/name\n"
    "(jobset/llama-70b), each with its state and the queueing core's explanation\n"
    "of where it stands and why it waits. With JOB, only that Job of NAMESPACE;\n"
    "with KIND/NAME, that workload. Without --kubeconfig the in-cluster service\n"
    "account is used, then $KUBECONFIG.\n";

typedef struct {
	const char *kubeconfig; /* --kubeconfig */
	const char *ns;		/* -n */
	bool all;		/* -A */
	const char *job;	/* JOB */
} status_opts_t;

static int parse(int argc, char **argv, status_opts_t *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			return 1;
		}
		if ((!strcmp(a, "--kubeconfig") || !strcmp(a, "-n") || !strcmp(a, "--namespace")) &&
		    i + 1 < argc) {
			if (!strcmp(a, "--kubeconfig"))
				o->kubeconfig = argv[++i];
			else
				o->ns = argv[++i];
		} else if (!strncmp(a, "--kubeconfig=", 13)) {
			o->kubeconfig = a + 13;
		} else if (!strcmp(a, "-A") || !strcmp(a, "--all-namespaces")) {
			o->all = true;
		} else if (a[0] != '-' && !o->job) {
			o->job = a;
		} else {
			fprintf(stderr, "gpuq status: unknown or incomplete option \"%s\"\n\n%s", a,
				usage_text);
			return 2;
		}
	}
	if (o->job && !o->ns) {
		fprintf(stderr, "gpuq status: JOB \"%s\" needs -n NAMESPACE\n", o->job);
		return 2;
	}
	return 0;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const char *s = json_string_value(json_object_get(json_object_get(o, a), b));

	return s ? s : "";
}

static void print_queues(kube_client_t *cl)
{
	json_t *list = NULL, *cq;
	gpuq_diag_t diag = {{0}};
	size_t i;

	if (kube_request_json(cl, "GET", "/apis/gpuq.dev/v1beta1/clusterqueues", NULL, NULL, &list,
			      &diag)) {
		fprintf(stderr, "gpuq status: cannot list ClusterQueues: %s\n", diag.msg);
		return;
	}
	printf("%-24s %-16s %8s %8s %6s  %s\n", "CLUSTERQUEUE", "COHORT", "PENDING", "ADMITTED",
	       "GPUS", "USAGE");
	json_array_foreach(json_object_get(list, "items"), i, cq)
	{
		const json_t *st = json_object_get(cq, "status"), *f;
		char usage[512] = "";
		size_t k, len = 0;
		json_array_foreach(json_object_get(st, "flavorsUsage"), k, f)
		{
			const json_t *r;
			size_t m;
			json_array_foreach(json_object_get(f, "resources"), m, r)
			{
				int w = snprintf(usage + len, sizeof(usage) - len, "%s%s/%s=%s",
						 len ? " " : "",
						 json_string_value(json_object_get(f, "name")),
						 json_string_value(json_object_get(r, "name")),
						 json_string_value(json_object_get(r, "total")));
				if (w > 0 && (size_t)w < sizeof(usage) - len)
					len += (size_t)w;
			}
		}
		printf("%-24s %-16s %8lld %8lld %6lld  %s\n", str_at(cq, "metadata", "name"),
		       str_at(cq, "spec", "cohortName"),
		       (long long)json_integer_value(json_object_get(st, "pendingWorkloads")),
		       (long long)json_integer_value(json_object_get(st, "admittedWorkloads")),
		       (long long)json_integer_value(json_object_get(st, "gpusInUse")), usage);
	}
	json_decref(list);
}

static const char *job_state(const json_t *job)
{
	const json_t *st = json_object_get(job, "status"), *c;
	size_t i;

	json_array_foreach(json_object_get(st, "conditions"), i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && s && !strcmp(s, "True") &&
		    (!strcmp(t, "Complete") || !strcmp(t, "Completed") || !strcmp(t, "Failed")))
			return t;
	}
	if (json_is_true(json_object_get(json_object_get(job, "spec"), "suspend")))
		return "Pending";
	return "Admitted";
}

/* The collection path of kind in into path: one object (name), the
 * namespace's, or every namespace's. GPUQ_EINVAL when a name does not fit. */
static int kind_path(const workload_integration_t *in, const char *ns, const char *name, char *path,
		     size_t cap)
{
	char base[200], ens[300], en[300];
	int n;

	snprintf(base, sizeof(base), "/apis/%s/%s", in->group, in->version);
	if ((ns && kube_escape(ns, ens, sizeof(ens))) ||
	    (name && kube_escape(name, en, sizeof(en))))
		return GPUQ_EINVAL;
	if (name)
		n = snprintf(path, cap, "%s/namespaces/%s/%s/%s", base, ens, in->resource, en);
	else if (ns)
		n = snprintf(path, cap, "%s/namespaces/%s/%s", base, ens, in->resource);
	else
		n = snprintf(path, cap, "%s/%s", base, in->resource);
	return n > 0 && (size_t)n < cap ? GPUQ_OK : GPUQ_EINVAL;
}

/* The lines of one held kind's objects: a Job as namespace/name, another
 * kind as namespace/kind/name ("team-a/jobset/llama-70b"). A group the
 * apiserver does not serve lists nothing. */
static int print_kind(kube_client_t *cl, const status_opts_t *o, const workload_integration_t *in,
		      const char *one_name)
{
	char path[KUBE_URL_MAX];
	json_t *list = NULL, *obj, *one = NULL;
	gpuq_diag_t diag = {{0}};
	size_t i;
	int rc;

	if (kind_path(in, o->all ? NULL : o->ns, one_name, path, sizeof(path)))
		return 2;
	rc = kube_request_json(cl, "GET", path, NULL, NULL, one_name ? &one : &list, &diag);
	if (rc == GPUQ_ENOTFOUND && !one_name)
		return 0; /* not served here */
	if (rc) {
		fprintf(stderr, "gpuq status: %s%s: %s\n", one_name ? "" : "cannot list ",
			in->resource, diag.msg);
		return 1;
	}
	if (one)
		list = json_pack("{s:[o]}", "items", one);
	json_array_foreach(json_object_get(list, "items"), i, obj)
	{
		const json_t *ann =
		    json_object_get(json_object_get(obj, "metadata"), "annotations");
		const char *why = json_string_value(json_object_get(ann, CONTROLLER_ANNOT_STATUS));
		char name[600];
		if (!why && !one_name)
			continue; /* not a gpuq workload */
		if (in->kind == WORKLOAD_KIND_JOB)
			snprintf(name, sizeof(name), "%s/%s", str_at(obj, "metadata", "namespace"),
				 str_at(obj, "metadata", "name"));
		else
			snprintf(name, sizeof(name), "%s/%s/%s",
				 str_at(obj, "metadata", "namespace"), in->short_name,
				 str_at(obj, "metadata", "name"));
		printf("%-40s %-9s %s\n", name, job_state(obj),
		       why ? why : "(not managed by gpuq)");
	}
	json_decref(list);
	return 0;
}

/* Whether JOB (argument job, its '/' at slash or NULL) names kind in:
 * "NAME" a Job, "KIND/NAME" the kind of that short name. */
static bool named(const workload_integration_t *in, const char *job, const char *slash)
{
	size_t n = slash ? (size_t)(slash - job) : 0;

	if (!slash)
		return in->kind == WORKLOAD_KIND_JOB;
	return strlen(in->short_name) == n && strncmp(job, in->short_name, n) == 0;
}

/* Every workload gpuq holds by its suspend field (Jobs, JobSets, RayJobs,
 * RayClusters, TrainJobs), or the one named: "NAME" (a Job) or
 * "KIND/NAME" (jobset/llama-70b). */
static int print_jobs(kube_client_t *cl, const status_opts_t *o)
{
	const char *slash = o->job ? strchr(o->job, '/') : NULL;
	int rc = 0;

	printf("\n%-40s %-9s %s\n", "WORKLOAD", "STATE", "WHERE IT STANDS");
	for (int k = 0; k < WORKLOAD_KIND_COUNT && !rc; k++) {
		const workload_integration_t *in = workload_integration((workload_kind_t)k);

		if (in->hold != WORKLOAD_HOLD_SUSPEND || !in->group || !in->group[0])
			continue;
		if (o->job && !named(in, o->job, slash))
			continue;
		rc = print_kind(cl, o, in, o->job ? (slash ? slash + 1 : o->job) : NULL);
	}
	return rc;
}

int cmd_status(int argc, char **argv)
{
	status_opts_t o = {0};
	kube_config_t *cfg = NULL;
	kube_client_t *cl = NULL;
	gpuq_diag_t diag = {{0}};
	int rc = parse(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : rc;
	if (!o.kubeconfig && !getenv("KUBERNETES_SERVICE_HOST"))
		o.kubeconfig = getenv("KUBECONFIG");
	rc = o.kubeconfig ? kube_config_load(o.kubeconfig, &cfg, &diag)
			  : kube_config_in_cluster(NULL, &cfg, &diag);
	if (!rc)
		rc = kube_client_create(cfg, NULL, &cl, &diag);
	if (rc) {
		fprintf(stderr, "gpuq status: %s\n", diag.msg);
		kube_config_destroy(cfg);
		return 1;
	}
	print_queues(cl);
	rc = print_jobs(cl, &o);
	kube_client_destroy(cl);
	kube_config_destroy(cfg);
	return rc;
}

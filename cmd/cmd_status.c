/* gpuq status: the queues and why each workload waits, read from the
 * apiserver (ClusterQueue status and the Jobs' gpuq.dev/status annotations
 * the controller writes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "controller/controller.h"
#include "kube/kube.h"

static const char usage_text[] =
    "usage: gpuq status [--kubeconfig FILE] [-n NAMESPACE | -A] [JOB]\n"
    "\n"
    "Prints every ClusterQueue (pending, admitted, GPUs in use, per flavor usage),\n"
    "the budgets of the ClusterQueues and LocalQueues (GPU-hours or cost used in\n"
    "their window, limit, state, action; docs/economics.md), then the GPU Jobs\n"
    "gpuq manages in NAMESPACE (every namespace with -A), each with its state and\n"
    "the queueing core's explanation of where it stands, when it is expected to\n"
    "start and why it waits. With JOB, only that Job of NAMESPACE. Without\n"
    "--kubeconfig the in-cluster service account is used, then $KUBECONFIG.\n";

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

/* b[key] as a string, "" when absent. */
static const char *sv(const json_t *b, const char *key)
{
	const char *s = json_string_value(json_object_get(b, key));

	return s ? s : "";
}

/* One queue's budget line, when its status has one. */
static void print_budget(const json_t *q, const char *name, bool *header)
{
	const json_t *b = json_object_get(json_object_get(q, "status"), "budget");

	if (!json_is_object(b))
		return;
	if (!*header)
		printf("\n%-32s %-12s %12s %12s %-9s %-7s %-6s %s\n", "BUDGET", "SCOPE", "USED",
		       "LIMIT", "UNIT", "STATE", "ACTION", "WINDOW ENDS");
	*header = true;
	printf("%-32s %-12s %12.6g %12.6g %-9s %-7s %-6s %s\n", name, sv(b, "scope"),
	       json_number_value(json_object_get(b, "used")),
	       json_number_value(json_object_get(b, "limit")), sv(b, "unit"), sv(b, "state"),
	       sv(b, "action"), sv(b, "windowEnd"));
}

/* The budgets in the ClusterQueues' and LocalQueues' status (of NAMESPACE
 * with -n, all with -A or no -n). */
static void print_budgets(kube_client_t *cl, const status_opts_t *o)
{
	char path[KUBE_URL_MAX], ens[300];
	json_t *list = NULL, *q;
	gpuq_diag_t diag = {{0}};
	bool header = false;
	size_t i;

	if (!kube_request_json(cl, "GET", "/apis/gpuq.dev/v1beta1/clusterqueues", NULL, NULL, &list,
			       &diag)) {
		json_array_foreach(json_object_get(list, "items"), i, q)
		{
			print_budget(q, str_at(q, "metadata", "name"), &header);
		}
		json_decref(list);
		list = NULL;
	}
	if (o->ns && !o->all && !kube_escape(o->ns, ens, sizeof(ens)))
		snprintf(path, sizeof(path), "/apis/gpuq.dev/v1beta1/namespaces/%s/localqueues",
			 ens);
	else
		snprintf(path, sizeof(path), "/apis/gpuq.dev/v1beta1/localqueues");
	if (kube_request_json(cl, "GET", path, NULL, NULL, &list, &diag))
		return;
	json_array_foreach(json_object_get(list, "items"), i, q)
	{
		char name[600];

		snprintf(name, sizeof(name), "%s/%s", str_at(q, "metadata", "namespace"),
			 str_at(q, "metadata", "name"));
		print_budget(q, name, &header);
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
		    (!strcmp(t, "Complete") || !strcmp(t, "Failed")))
			return t;
	}
	if (json_is_true(json_object_get(json_object_get(job, "spec"), "suspend")))
		return "Pending";
	return "Admitted";
}

static int print_jobs(kube_client_t *cl, const status_opts_t *o)
{
	char path[KUBE_URL_MAX], ens[300], en[300];
	json_t *list = NULL, *job, *one = NULL;
	gpuq_diag_t diag = {{0}};
	size_t i;
	int rc;

	if (o->ns && kube_escape(o->ns, ens, sizeof(ens)))
		return 2;
	if (o->job) {
		if (kube_escape(o->job, en, sizeof(en)))
			return 2;
		snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs/%s", ens, en);
		rc = kube_request_json(cl, "GET", path, NULL, NULL, &one, &diag);
		if (rc) {
			fprintf(stderr, "gpuq status: %s\n", diag.msg);
			return 1;
		}
		list = json_pack("{s:[o]}", "items", one);
	} else {
		if (o->all || !o->ns)
			snprintf(path, sizeof(path), "/apis/batch/v1/jobs");
		else
			snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs", ens);
		rc = kube_request_json(cl, "GET", path, NULL, NULL, &list, &diag);
		if (rc) {
			fprintf(stderr, "gpuq status: cannot list Jobs: %s\n", diag.msg);
			return 1;
		}
	}
	printf("\n%-40s %-9s %s\n", "JOB", "STATE", "WHERE IT STANDS");
	json_array_foreach(json_object_get(list, "items"), i, job)
	{
		const json_t *ann =
		    json_object_get(json_object_get(job, "metadata"), "annotations");
		const char *why = json_string_value(json_object_get(ann, CONTROLLER_ANNOT_STATUS));
		char name[600];
		if (!why && !o->job)
			continue; /* not a gpuq workload */
		snprintf(name, sizeof(name), "%s/%s", str_at(job, "metadata", "namespace"),
			 str_at(job, "metadata", "name"));
		printf("%-40s %-9s %s\n", name, job_state(job),
		       why ? why : "(not managed by gpuq)");
	}
	json_decref(list);
	return 0;
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
	print_budgets(cl, &o);
	rc = print_jobs(cl, &o);
	kube_client_destroy(cl);
	kube_config_destroy(cfg);
	return rc;
}

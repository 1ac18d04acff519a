/* gpuq status: the queues and why each workload waits, read from the
 * apiserver (ClusterQueue status and the Jobs' coarse gpuq.dev/status
 * annotations the controller writes) and, with --gpuq-server, every
 * pending workload's positions and reason from gpuq's visibility API
 * (webui/visibility.c, docs/visibility.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "controller/controller.h"
#include "kube/kube.h"
#include "workload/workload.h"
#include "webui/webui.h"

static const char usage_text[] =
    "usage: gpuq status [--kubeconfig FILE] [-n NAMESPACE | -A] [JOB | KIND/NAME]\n"
    "                   [--gpuq-server https://HOST:PORT [--gpuq-ca FILE |\n"
    "                    --gpuq-insecure] [--token TOKEN] [--limit N]]\n"
    "\n"
    "Prints every ClusterQueue (pending, admitted, GPUs in use, per flavor usage),\n"
    "the budgets of the ClusterQueues and LocalQueues (GPU-hours or cost used in\n"
    "their window, limit, state, action; docs/economics.md), then the GPU\n"
    "workloads gpuq holds in NAMESPACE (every namespace with -A): Jobs, and\n"
    "JobSets, RayJobs, RayClusters and TrainJobs as kind/name (jobset/llama-70b),\n"
    "each with its state and its coarse status (waiting or admitted, and why).\n"
    "With JOB, only that Job of NAMESPACE; with KIND/NAME, that workload. Without\n"
    "--kubeconfig the in-cluster service account is used, then $KUBECONFIG.\n"
    "\n"
    "With --gpuq-server (gpuq's own port, e.g. https://gpuq-webhook.gpuq-system.svc;\n"
    "default $GPUQ_SERVER; $GPUQ_CA and $GPUQ_INSECURE=1 likewise), the pending\n"
    "work as gpuq sees it now, from its visibility API: each pending workload's\n"
    "place in its ClusterQueue and in its LocalQueue, priority and reason; per\n"
    "ClusterQueue with -A (cluster access), else per LocalQueue of NAMESPACE (a\n"
    "tenant's token suffices). gpuq reviews the kubeconfig user's bearer token (or\n"
    "--token's) with the apiserver; its serving certificate is checked against\n"
    "--gpuq-ca (default: the system's CAs).\n"
    "--limit N (default 50, at most 10000) rows per queue.\n";

typedef struct {
	const char *kubeconfig; /* --kubeconfig */
	const char *ns;		/* -n */
	bool all;		/* -A */
	const char *job;	/* JOB */
	const char *server;	/* --gpuq-server (gpuq's own port), or NULL */
	const char *ca;		/* --gpuq-ca */
	bool insecure;		/* --gpuq-insecure */
	const char *token;	/* --token */
	long limit;		/* --limit */
} status_opts_t;

/* The options that take a value: where each goes. */
static const char **value_opt(status_opts_t *o, const char *a)
{
	static const char *limit_text;

	if (!strcmp(a, "--kubeconfig"))
		return &o->kubeconfig;
	if (!strcmp(a, "-n") || !strcmp(a, "--namespace"))
		return &o->ns;
	if (!strcmp(a, "--gpuq-server"))
		return &o->server;
	if (!strcmp(a, "--gpuq-ca"))
		return &o->ca;
	if (!strcmp(a, "--token"))
		return &o->token;
	if (!strcmp(a, "--limit"))
		return &limit_text;
	return NULL;
}

static int parse_limit(const char *v, long *out)
{
	char *end;
	long x = strtol(v, &end, 10);

	if (!*v || *end || x < 1 || x > WEBUI_VIS_LIMIT_MAX) {
		fprintf(stderr, "gpuq status: --limit \"%s\": expected a whole number 1..%d\n", v,
			WEBUI_VIS_LIMIT_MAX);
		return 2;
	}
	*out = x;
	return 0;
}

static int parse(int argc, char **argv, status_opts_t *o)
{
	o->limit = 50;
	o->server = getenv("GPUQ_SERVER");
	if (o->server && !o->server[0])
		o->server = NULL;
	o->ca = getenv("GPUQ_CA");
	if (o->ca && !o->ca[0])
		o->ca = NULL;
	{
		const char *ins = getenv("GPUQ_INSECURE");
		o->insecure = ins && !strcmp(ins, "1");
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], **dst = value_opt(o, a);
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			return 1;
		}
		if (dst && i + 1 < argc) {
			*dst = argv[++i];
			if (!strcmp(a, "--limit") && parse_limit(*dst, &o->limit))
				return 2;
		} else if (!strncmp(a, "--kubeconfig=", 13)) {
			o->kubeconfig = a + 13;
		} else if (!strcmp(a, "-A") || !strcmp(a, "--all-namespaces")) {
			o->all = true;
		} else if (!strcmp(a, "--gpuq-insecure")) {
			o->insecure = true;
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

/* The ClusterQueues' table; their list returned (NULL when unreadable). */
static json_t *print_queues(kube_client_t *cl)
{
	json_t *list = NULL, *cq;
	gpuq_diag_t diag = {{0}};
	size_t i;

	if (kube_request_json(cl, "GET", "/apis/gpuq.dev/v1beta1/clusterqueues", NULL, NULL, &list,
			      &diag)) {
		fprintf(stderr, "gpuq status: cannot list ClusterQueues: %s\n", diag.msg);
		return NULL;
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
	return list;
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

/* ---- the pending work, from gpuq's visibility API ---- */

/* "; expected to start in about 25 min (2026-11-26T21:10:43Z)" for a
 * predictedStartTime (gpuq's prediction, docs/economics.md), "" without. */
static void expected_text(const char *ts, char *buf, size_t cap)
{
	int64_t at, s;

	buf[0] = '\0';
	if (!ts || gpuq_time_parse(ts, &at))
		return;
	s = at / 1000 - (int64_t)time(NULL);
	if (s <= 0)
		snprintf(buf, cap, "; expected to start at the next admission cycle (%s)", ts);
	else if (s < 3600)
		snprintf(buf, cap, "; expected to start in about %lld min (%s)",
			 (long long)((s + 59) / 60), ts);
	else
		snprintf(buf, cap, "; expected to start in about %lld h %lld min (%s)",
			 (long long)(s / 3600), (long long)((s % 3600 + 59) / 60), ts);
}

/* One queue's PendingWorkloadsSummary from gpuq (path under
 * WEBUI_VIS_PREFIX), its rows printed (only job's when job is set).
 * 0, or 1 when gpuq refused or could not be reached (said on stderr). */
static int print_pending(kube_client_t *g, const char *path, const char *queue,
			 const status_opts_t *o)
{
	char full[KUBE_URL_MAX];
	json_t *sum = NULL, *it;
	gpuq_diag_t diag = {{0}};
	long long total;
	size_t i;

	snprintf(full, sizeof(full), "%s%s?limit=%ld", WEBUI_VIS_PREFIX, path, o->limit);
	if (kube_request_json(g, "GET", full, NULL, NULL, &sum, &diag)) {
		fprintf(stderr, "gpuq status: pending work of %s from %s: %s\n", queue, o->server,
			diag.msg);
		return 1;
	}
	json_array_foreach(json_object_get(sum, "items"), i, it)
	{
		char name[600], when[96];
		const char *ns = str_at(it, "metadata", "namespace");
		const char *n = str_at(it, "metadata", "name");
		if (o->job && strcmp(n, o->job) != 0)
			continue;
		snprintf(name, sizeof(name), "%s/%s", ns, n);
		expected_text(json_string_value(json_object_get(it, "predictedStartTime")), when,
			      sizeof(when));
		printf("%-24s %6lld %6lld  %-40s %5lld  %-10s %s%s\n", queue,
		       (long long)json_integer_value(json_object_get(it, "positionInClusterQueue")),
		       (long long)json_integer_value(json_object_get(it, "positionInLocalQueue")),
		       name, (long long)json_integer_value(json_object_get(it, "priority")),
		       json_string_value(json_object_get(it, "reason")),
		       json_string_value(json_object_get(it, "message")), when);
	}
	total = json_integer_value(json_object_get(sum, "total"));
	if (!o->job && total > (long long)json_array_size(json_object_get(sum, "items")))
		printf("%-24s ... %lld more pending (--limit)\n", queue,
		       total - (long long)json_array_size(json_object_get(sum, "items")));
	json_decref(sum);
	return 0;
}

/* The LocalQueues of ns, each one's pending work printed. */
static int pending_of_namespace(kube_client_t *cl, kube_client_t *g, const status_opts_t *o)
{
	char path[KUBE_URL_MAX], ens[300], queue[600];
	json_t *list = NULL, *lq;
	gpuq_diag_t diag = {{0}};
	size_t i;
	int rc = 0;

	if (kube_escape(o->ns, ens, sizeof(ens)))
		return 2;
	snprintf(path, sizeof(path), "/apis/gpuq.dev/v1beta1/namespaces/%s/localqueues", ens);
	if (kube_request_json(cl, "GET", path, NULL, NULL, &list, &diag)) {
		fprintf(stderr, "gpuq status: cannot list the LocalQueues of %s: %s\n", o->ns,
			diag.msg);
		return 1;
	}
	json_array_foreach(json_object_get(list, "items"), i, lq)
	{
		const char *name = str_at(lq, "metadata", "name");
		char en[300];
		if (kube_escape(name, en, sizeof(en)))
			continue;
		snprintf(path, sizeof(path), "/namespaces/%s/localqueues/%s/pendingworkloads", ens,
			 en);
		snprintf(queue, sizeof(queue), "%s/%s", o->ns, name);
		rc |= print_pending(g, path, queue, o);
	}
	json_decref(list);
	return rc;
}

/* Every ClusterQueue's pending work (cqs: their list). */
static int pending_of_cluster(kube_client_t *g, const json_t *cqs, const status_opts_t *o)
{
	char path[KUBE_URL_MAX];
	json_t *cq;
	size_t i;
	int rc = 0;

	json_array_foreach(json_object_get(cqs, "items"), i, cq)
	{
		const char *name = str_at(cq, "metadata", "name");
		char en[300];
		if (kube_escape(name, en, sizeof(en)))
			continue;
		snprintf(path, sizeof(path), "/clusterqueues/%s/pendingworkloads", en);
		rc |= print_pending(g, path, name, o);
	}
	return rc;
}

/* The pending work from gpuq at o->server: per ClusterQueue (-A, or no
 * namespace), else per LocalQueue of the namespace. */
static int print_pending_work(const kube_config_t *cfg, kube_client_t *cl, const json_t *cqs,
			      const status_opts_t *o)
{
	kube_config_t *gcfg = NULL;
	kube_client_t *g = NULL;
	gpuq_diag_t diag = {{0}};
	int rc = kube_config_at(cfg, o->server, o->ca, o->insecure, o->token, &gcfg, &diag);

	if (!rc)
		rc = kube_client_create(gcfg, NULL, &g, &diag);
	if (rc) {
		fprintf(stderr, "gpuq status: --gpuq-server: %s\n", diag.msg);
		kube_config_destroy(gcfg);
		return 1;
	}
	printf("\n%-24s %6s %6s  %-40s %5s  %-10s %s\n", "PENDING IN", "CQPOS", "LQPOS", "WORKLOAD",
	       "PRIO", "REASON", "MESSAGE (gpuq, now)");
	rc = (o->all || !o->ns) ? pending_of_cluster(g, cqs, o) : pending_of_namespace(cl, g, o);
	kube_client_destroy(g);
	kube_config_destroy(gcfg);
	return rc;
}

int cmd_status(int argc, char **argv)
{
	status_opts_t o = {0};
	kube_config_t *cfg = NULL;
	kube_client_t *cl = NULL;
	json_t *cqs;
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
	cqs = print_queues(cl);
	print_budgets(cl, &o);
	rc = print_jobs(cl, &o);
	if (o.server && (!o.all && !o.ns ? !cqs : false))
		fprintf(stderr, "gpuq status: no ClusterQueues to ask gpuq about (use -n NS)\n");
	if (o.server && print_pending_work(cfg, cl, cqs, &o))
		rc = rc ? rc : 1;
	json_decref(cqs);
	kube_client_destroy(cl);
	kube_config_destroy(cfg);
	return rc;
}

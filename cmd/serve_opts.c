/* cmd serve options: parsing and checking the flags of `gpuq serve`
 * (no I/O in parsing: the environment comes in as a parameter; the check
 * looks at the file system). See serve_opts.h. */
#include "cmd/serve_opts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"

#define MODULE "webhook"

/* ==== Flags ==== */

static const char usage_text[] =
    "usage: gpuq serve --listen HOST:PORT --cert-dir DIR --state-dir DIR\n"
    "                  (--policy-dir DIR | [--kubeconfig PATH] [cluster flags])\n"
    "                  [--gpu-resource NAME]... [--controller-user NAME]\n"
    "                  [--child-creator KIND=USER]... [--threads N]\n"
    "                  [--log-level LEVEL]\n"
    "\n"
    "Serve gpuq's admission webhook over HTTPS (TLS 1.2 and 1.3 only):\n"
    "  POST /mutate, POST /validate   AdmissionReview (admission.k8s.io/v1), JSON, <= 3 MiB\n"
    "  GET /healthz, /readyz, /metrics (and the web view, --ui)\n"
    "\n"
    "Exactly one policy source:\n"
    "  --policy-dir DIR        offline: policy manifests (*.yaml, *.yml, *.json); reloaded\n"
    "                          on SIGHUP and when a file changes; a bad policy is refused\n"
    "  --kubeconfig PATH       the cluster a kubeconfig file names: gpuq's controller\n"
    "                          watches it and feeds the webhook its policy\n"
    "  (neither)               in a Pod (KUBERNETES_SERVICE_HOST set): the cluster gpuq\n"
    "                          runs in, through its service account\n"
    "Until the controller has synced with the apiserver, /readyz answers 503 and Pod\n"
    "and Job reviews are answered 503 (fail closed: the failurePolicy applies).\n"
    "\n"
    "  --listen HOST:PORT      address to listen on: an IPv4 address, [IPv6], a name, or\n"
    "                          an empty HOST for every IPv4 address (\":8443\")\n"
    "  --internal-listen HOST:PORT  serve /metrics, the web view and its APIs there\n"
    "                          (same certificate), and only the review routes and\n"
    "                          the probes on --listen: the port the apiserver reaches\n"
    "                          carries no tenant's data (default: all on --listen)\n"
    "  --cert-dir DIR          holds tls.crt (chain, leaf first) and tls.key, PEM;\n"
    "                          reloaded within a second when they change\n"
    "  --state-dir DIR         state store directory, created (mode 0700) if missing\n"
    "  --gpu-resource NAME     an extra resource name to count as a GPU (repeatable,\n"
    "                          at most 32), e.g. nvidia.com/gpu.shared\n"
    "  --controller-user NAME  username of gpuq's controller (default: from a cluster,\n"
    "                          the user the apiserver says gpuq is, a SelfSubjectReview;\n"
    "                          with --policy-dir " WEBHOOK_CONTROLLER_USER_DEFAULT ")\n"
    "  --child-creator KIND=USER  USER is a controller that makes the children of\n"
    "                          KIND's objects (job, jobset, statefulset, lws, raycluster,\n"
    "                          rayjob, trainjob): their Pods/Jobs pass as an admitted\n"
    "                          parent's; repeatable; a KIND named has only the USERs\n"
    "                          given, the others keep their defaults (kube-system's job\n"
    "                          and statefulset controllers, jobset-system, ray-system,\n"
    "                          kubeflow-system as their installs run them)\n"
    "  --threads N             worker threads, 1..256 (default: online CPUs, at least 2)\n"
    "  --log-level LEVEL       debug, info, warn or error (default info)\n"
    "  --shutdown-grace D      after SIGTERM keep serving D with /readyz answering 503,\n"
    "                          so the apiserver moves to other replicas first; a second\n"
    "                          SIGTERM or SIGINT cuts it short (default 5s; 0: none)\n"
    "  --dcgm-url URL          scrape GPU utilization (DCGM_FI_DEV_GPU_UTIL) from this\n"
    "                          Prometheus endpoint: a dcgm-exporter, or Prometheus's\n"
    "                          /federate?match[]=DCGM_FI_DEV_GPU_UTIL for a cluster;\n"
    "                          /metrics then counts each tenant's allocated and idle\n"
    "                          GPU-seconds (docs/chargeback.md)\n"
    "  --dcgm-interval D       between scrapes, 100ms..1h (default 30s); at most twice\n"
    "                          it is counted between two scrapes\n"
    "  --idle-threshold PCT    utilization below PCT percent is idle (default 10)\n"
    "  --ui BOOL               true or false (default false): serve the read-only web\n"
    "                          view on /ui/ and its JSON API on /api/v1/ (docs/ui.md)\n"
    "  --ui-auth MODE          review (default): a bearer token the apiserver accepts\n"
    "                          (TokenReview) and may get clusterqueues.gpuq.dev, or\n"
    "                          list jobs in the namespace asked for\n"
    "                          (SubjectAccessReview); none: no auth, only with a\n"
    "                          loopback --listen\n"
    "  --ui-idle D             with no API request for D, the controller stops building\n"
    "                          the view's snapshots (they cost it O(workloads)); the next\n"
    "                          request waits for a fresh one (default 60s, 1ms..1h)\n"
    "  -h, --help              print this text\n"
    "\n"
    "Cluster flags (not with --policy-dir):\n"
    "  --leader-elect BOOL     true or false (default true): one replica acts at a time,\n"
    "                          holding a Lease\n"
    "  --lease-namespace NS    the Lease's namespace (default $POD_NAMESPACE, else\n"
    "                          " CMD_SERVE_LEASE_NAMESPACE_DEFAULT ")\n"
    "  --lease-name NAME       the Lease's name (default " CMD_SERVE_LEASE_NAME_DEFAULT ")\n"
    "  --identity ID           this replica's name in the Lease (default $POD_NAME, else\n"
    "                          the hostname)\n"
    "  --qps N                 apiserver requests per second, sustained, at most 10000\n"
    "                          (default 50)\n"
    "  --burst N               apiserver requests at once above --qps, 1..100000\n"
    "                          (default 100)\n"
    "  --fair-sharing BOOL     true or false (default false): order the ClusterQueues of a\n"
    "                          cohort by weighted dominant resource share and preempt\n"
    "                          to fair share (Kueue's fairSharing.enable)\n"
    "  --pods-ready-timeout D  a gang (pod group, or a Job of parallelism > 1) whose pods\n"
    "                          are not all Ready D after its release is suspended and\n"
    "                          requeued (Kueue's waitForPodsReady); 0 turns it off\n"
    "                          (default 30m; D as 90s, 5m, 1.5h)\n"
    "  --requeue-backoff D     the first requeue after a Ready timeout waits D, doubling\n"
    "                          each time up to 1h (default 60s)\n"
    "  --usage-half-life-time D\n"
    "                          admission fair sharing (ClusterQueues with an\n"
    "                          admissionScope): a LocalQueue's recent usage halves\n"
    "                          every D; Kueue's admissionFairSharing.usageHalfLifeTime\n"
    "                          (default 1h, 1ms..8760h)\n"
    "  --usage-sampling-interval D\n"
    "                          ... and is sampled every D; Kueue's\n"
    "                          usageSamplingInterval (default 5m, 1ms..8760h)\n"
    "  --usage-checkpoint-interval D\n"
    "                          the leader writes its usage ledger (chargeback hours)\n"
    "                          to ConfigMaps gpuq-usage-0..7 in the Lease's namespace\n"
    "                          every D and when it stops; a new leader merges them\n"
    "                          (default 1m; 0 turns it off)\n"
    "  --visibility BOOL       true or false (default true): serve pending work on\n"
    "                          demand (positions and reasons, as Kueue's visibility\n"
    "                          API) on /apis/visibility.gpuq.dev/v1beta1/, with\n"
    "                          --ui-auth's bearer-token rules (docs/visibility.md)\n"
    "  --cert-secret NS/NAME   keep the serving certificate in this Secret: made (with\n"
    "                          its CA) when missing, renewed with a third of its\n"
    "                          validity left, written into --cert-dir on every replica\n"
    "  --cert-dns NAME,...     its DNS names (default gpuq-webhook.NS.svc)\n"
    "  --cert-ip ADDR,...      its IP addresses\n"
    "  --webhook-config NAME   with --cert-secret: write the CA into the caBundle of the\n"
    "                          Mutating- and ValidatingWebhookConfiguration NAME\n"
    "                          (leave it out when cert-manager injects it)\n"
    "\n"
    "Signals: SIGHUP reloads the policy dir; SIGTERM stops gracefully (the grace, then\n"
    "requests in flight finish, then exit 0); SIGINT the same without the grace.\n"
    "Exit status: 0 after a graceful stop; 1 when the certificates, the policy or the\n"
    "address cannot be used; 2 on a usage error (bad or missing flag, missing or\n"
    "unreadable directory or file).\n";

const char *cmd_serve_usage(void)
{
	return usage_text;
}

/* flag (--listen or --internal-listen) HOST:PORT, "[v6]:PORT" or ":PORT"
 * into host[CMD_SERVE_NAME_MAX + 1] and *port. */
static int parse_addr(const char *flag, const char *value, char *host_out, uint16_t *port_out,
		      gpuq_diag_t *diag)
{
	const char *colon, *host = value;
	size_t host_len;
	char *end;
	unsigned long port;

	if (value[0] == '[') {
		const char *close = strchr(value, ']');
		if (!close || close[1] != ':')
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": expected [IPv6]:PORT",
					     flag, value);
		host = value + 1;
		host_len = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(value, ':');
		if (!colon)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": expected HOST:PORT",
					     flag, value);
		host_len = (size_t)(colon - value);
		if (memchr(value, ':', host_len))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "%s \"%s\": write an IPv6 address in brackets, "
					     "[::1]:PORT",
					     flag, value);
	}
	if (host_len > CMD_SERVE_NAME_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": host is too long", flag, value);
	for (size_t i = 0; i < host_len; i++)
		if (host[i] <= ' ' || host[i] == '/' || host[i] == 0x7f)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": bad character in host",
					     flag, value);
	memcpy(host_out, host, host_len);
	host_out[host_len] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || errno || port < 1 || port > 65535)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s \"%s\": port \"%s\" is not a number in 1..65535", flag,
				     value, colon + 1);
	*port_out = (uint16_t)port;
	return GPUQ_OK;
}

/* An extended resource name: domain-qualified ("nvidia.com/gpu"), at most
 * CMD_SERVE_NAME_MAX characters of [A-Za-z0-9._-] around exactly one '/'. */
static bool resource_name_ok(const char *name)
{
	size_t len = strlen(name), slashes = 0;
	const char *slash = strchr(name, '/');

	if (len == 0 || len > CMD_SERVE_NAME_MAX || !slash || slash == name || !slash[1])
		return false;
	for (const char *p = name; *p; p++) {
		if (*p == '/')
			slashes++;
		else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			return false;
	}
	return slashes == 1;
}

/* A Kubernetes username: printable ASCII, no spaces, 1..CMD_SERVE_NAME_MAX. */
static bool user_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > CMD_SERVE_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return false;
	return true;
}

/* --child-creator KIND=USER: USER (a controller's userInfo.username) makes
 * the children of the held parents of KIND (an integration's short name:
 * job, jobset, raycluster, rayjob, trainjob, statefulset, lws). */
static int parse_child_creator(const char *value, cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	const char *eq = strchr(value, '=');
	size_t klen = eq ? (size_t)(eq - value) : 0, same = 0;
	workload_kind_t kind = WORKLOAD_KIND_OTHER;

	for (int k = 1; eq && k < WORKLOAD_KIND_COUNT; k++) {
		const workload_integration_t *in = workload_integration((workload_kind_t)k);

		if (in->creators && strlen(in->short_name) == klen &&
		    !strncmp(in->short_name, value, klen))
			kind = (workload_kind_t)k;
	}
	if (kind == WORKLOAD_KIND_OTHER || !user_name_ok(eq + 1))
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--child-creator \"%s\": expected KIND=USER, KIND one of "
				     "job, jobset, statefulset, lws, raycluster, rayjob, trainjob "
				     "and USER a username of 1..%d printable characters without "
				     "spaces",
				     value, CMD_SERVE_NAME_MAX);
	for (size_t i = 0; i < opts->n_child_creators; i++)
		same += opts->child_creators[i].parent == kind;
	if (opts->n_child_creators == CMD_SERVE_CHILD_CREATORS_MAX || same == WEBHOOK_CREATORS_MAX)
		return gpuq_diag_set(
		    diag, GPUQ_EINVAL,
		    "--child-creator \"%s\": at most %d may be given, %d for one kind", value,
		    CMD_SERVE_CHILD_CREATORS_MAX, WEBHOOK_CREATORS_MAX);
	opts->child_creators[opts->n_child_creators++] = (webhook_creator_t){kind, eq + 1};
	return GPUQ_OK;
}

static int parse_threads(const char *value, unsigned *out, gpuq_diag_t *diag)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end || errno || n < 1 || n > HTTP_THREADS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--threads \"%s\": expected a number in 1..%d", value,
				     HTTP_THREADS_MAX);
	*out = (unsigned)n;
	return GPUQ_OK;
}

static int parse_log_level(const char *value, gpuq_log_level_t *out, gpuq_diag_t *diag)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(value, names[i])) {
			*out = (gpuq_log_level_t)i;
			return GPUQ_OK;
		}
	return gpuq_diag_set(diag, GPUQ_EINVAL,
			     "--log-level \"%s\": expected debug, info, warn or error", value);
}

/* A DNS-1123 label (a namespace): 1..63 of [a-z0-9-], alphanumeric at both
 * ends. */
static bool dns_label_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return false;
	return true;
}

/* A DNS-1123 subdomain (an object name): dot-separated labels, 1..253. */
static bool dns_subdomain_ok(const char *s)
{
	size_t len = strlen(s);
	char label[64];

	if (len == 0 || len > CMD_SERVE_NAME_MAX)
		return false;
	for (const char *p = s;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (n == 0 || n >= sizeof(label))
			return false;
		memcpy(label, p, n);
		label[n] = '\0';
		if (!dns_label_ok(label))
			return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

static int parse_bool(const char *flag, const char *value, bool *out, gpuq_diag_t *diag)
{
	if (!strcmp(value, "true") || !strcmp(value, "false")) {
		*out = value[0] == 't';
		return GPUQ_OK;
	}
	return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": expected true or false", flag, value);
}

/* --qps: a plain decimal (digits, an optional fraction) in (0, CMD_SERVE_QPS_MAX]. */
static int parse_qps(const char *value, double *out, gpuq_diag_t *diag)
{
	size_t int_digits = strspn(value, "0123456789"), frac_digits = 0;
	char *end;
	double q = -1;

	if (value[int_digits] == '.')
		frac_digits = strspn(value + int_digits + 1, "0123456789");
	errno = 0;
	/* strtod alone would take "1e3", "inf", "0x10" and blanks */
	if (int_digits + frac_digits > 0 && int_digits + frac_digits <= 16 &&
	    value[int_digits + (value[int_digits] == '.') + frac_digits] == '\0')
		q = strtod(value, &end);
	if (q <= 0 || q > CMD_SERVE_QPS_MAX || errno)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--qps \"%s\": expected a number of requests per second above "
				     "0, at most %.0f",
				     value, CMD_SERVE_QPS_MAX);
	*out = q;
	return GPUQ_OK;
}

static int parse_burst(const char *value, unsigned *out, gpuq_diag_t *diag)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end || errno || n < 1 || n > CMD_SERVE_BURST_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--burst \"%s\": expected a number in 1..%u", value,
				     CMD_SERVE_BURST_MAX);
	*out = (unsigned)n;
	return GPUQ_OK;
}

/* A duration flag (gpuq_duration_parse's forms) of at least min_ms (0 or 1)
 * and at most max_ms (whole days). */
static int parse_duration(const char *flag, const char *value, int64_t min_ms, int64_t max_ms,
			  int64_t *out, gpuq_diag_t *diag)
{
	int64_t ms = -1;

	if (gpuq_duration_parse(value, &ms, NULL) || ms < min_ms || ms > max_ms)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s \"%s\": expected a duration such as 90s, 5m or 1.5h, "
				     "%s..%lld days",
				     flag, value, min_ms ? "1ms" : "0",
				     (long long)(max_ms / (86400LL * 1000)));
	*out = ms;
	return GPUQ_OK;
}

/* --usage-half-life-time: Kueue's usageHalfLifeTime. Its 0 (usage reset to 0,
 * so admission fair sharing orders nothing) gets a sentence of its own. */
static int parse_half_life(const char *value, int64_t *out, gpuq_diag_t *diag)
{
	int64_t ms = -1;

	if (gpuq_duration_parse(value, &ms, NULL) == GPUQ_OK && ms == 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--usage-half-life-time \"%s\": 0 (Kueue: no usage history, "
				     "so admission fair sharing orders nothing) is not supported; "
				     "leave admissionScope out of the ClusterQueues instead",
				     value);
	return parse_duration("--usage-half-life-time", value, 1, CMD_SERVE_USAGE_FLAG_MAX_MS, out,
			      diag);
}

typedef enum {
	FLAG_LISTEN,
	FLAG_CERT_DIR,
	FLAG_STATE_DIR,
	FLAG_POLICY_DIR,
	FLAG_KUBECONFIG,
	FLAG_GPU_RESOURCE,
	FLAG_CONTROLLER_USER,
	FLAG_CHILD_CREATOR,
	FLAG_THREADS,
	FLAG_LOG_LEVEL,
	FLAG_SHUTDOWN_GRACE,
	FLAG_DCGM_URL,
	FLAG_DCGM_INTERVAL,
	FLAG_IDLE_THRESHOLD,
	FLAG_UI,
	FLAG_UI_AUTH,
	FLAG_UI_IDLE,
	FLAG_INTERNAL_LISTEN,
	FLAG_LEADER_ELECT, /* the cluster flags, FLAG_LEADER_ELECT..FLAG_WEBHOOK_CONFIG */
	FLAG_LEASE_NAMESPACE,
	FLAG_LEASE_NAME,
	FLAG_IDENTITY,
	FLAG_QPS,
	FLAG_BURST,
	FLAG_FAIR_SHARING,
	FLAG_READY_TIMEOUT,
	FLAG_REQUEUE_BACKOFF,
	FLAG_USAGE_HALF_LIFE,
	FLAG_USAGE_SAMPLING,
	FLAG_USAGE_CHECKPOINT,
	FLAG_VISIBILITY,
	FLAG_CERT_SECRET,
	FLAG_CERT_DNS,
	FLAG_CERT_IP,
	FLAG_WEBHOOK_CONFIG,
	FLAG_COUNT,
} flag_t;

static const char *const flag_names[] = {"--listen",
					 "--cert-dir",
					 "--state-dir",
					 "--policy-dir",
					 "--kubeconfig",
					 "--gpu-resource",
					 "--controller-user",
					 "--child-creator",
					 "--threads",
					 "--log-level",
					 "--shutdown-grace",
					 "--dcgm-url",
					 "--dcgm-interval",
					 "--idle-threshold",
					 "--ui",
					 "--ui-auth",
					 "--ui-idle",
					 "--internal-listen",
					 "--leader-elect",
					 "--lease-namespace",
					 "--lease-name",
					 "--identity",
					 "--qps",
					 "--burst",
					 "--fair-sharing",
					 "--pods-ready-timeout",
					 "--requeue-backoff",
					 "--usage-half-life-time",
					 "--usage-sampling-interval",
					 "--usage-checkpoint-interval",
					 "--visibility",
					 "--cert-secret",
					 "--cert-dns",
					 "--cert-ip",
					 "--webhook-config"};
_Static_assert(sizeof(flag_names) / sizeof(flag_names[0]) == FLAG_COUNT,
	       "one name per flag, in flag_t's order");

/* The Lease holder's name: what the Lease stores, printable, no spaces. */
static int set_identity(cmd_serve_opts_t *opts, const char *from, const char *value,
			gpuq_diag_t *diag)
{
	if (!user_name_ok(value) || strlen(value) > KUBE_FENCE_IDENTITY_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s \"%.260s\": expected an identity of 1..%d printable "
				     "characters without spaces (it names the Lease's holder and "
				     "each write's fence token)",
				     from, value, KUBE_FENCE_IDENTITY_MAX);
	gpuq_strlcpy(opts->identity, value, sizeof(opts->identity));
	return GPUQ_OK;
}

/* --dcgm-url: http:// or https:// and a host, no blanks or control
 * characters (libcurl would take them, a log line would not show them). */
static int parse_dcgm_url(const char *value, const char **out, gpuq_diag_t *diag)
{
	size_t len = strlen(value), skip = 0;

	if (!strncmp(value, "http://", 7))
		skip = 7;
	else if (!strncmp(value, "https://", 8))
		skip = 8;
	if (!skip || len == skip || value[skip] == '/' || len > DCGM_URL_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--dcgm-url \"%.200s\": expected an http:// or https:// URL "
				     "with a host, at most %d bytes",
				     value, DCGM_URL_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)value[i] <= ' ' || value[i] == 0x7f)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--dcgm-url \"%.200s\": blanks and control characters "
					     "must be percent-encoded",
					     value);
	*out = value;
	return GPUQ_OK;
}

/* --idle-threshold: a percentage, a plain decimal 0..100. */
static int parse_threshold(const char *value, double *out, gpuq_diag_t *diag)
{
	size_t int_digits = strspn(value, "0123456789"), frac_digits = 0;
	double v = -1;

	if (value[int_digits] == '.')
		frac_digits = strspn(value + int_digits + 1, "0123456789");
	/* strtod alone would take "1e3", "nan" and blanks */
	if (int_digits + frac_digits > 0 && int_digits + frac_digits <= 16 &&
	    value[int_digits + (value[int_digits] == '.') + frac_digits] == '\0')
		v = strtod(value, NULL);
	if (v < 0 || v > 100)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--idle-threshold \"%s\": expected a percentage 0..100 (GPU "
				     "utilization below it is idle)",
				     value);
	*out = v;
	return GPUQ_OK;
}

/* The duration flags: their ranges and where each goes. */
static int apply_duration(flag_t f, const char *value, cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	switch (f) {
	case FLAG_READY_TIMEOUT:
		return parse_duration(flag_names[f], value, 0, CMD_SERVE_DURATION_FLAG_MAX_MS,
				      &opts->ready_timeout_ms, diag);
	case FLAG_SHUTDOWN_GRACE:
		return parse_duration(flag_names[f], value, 0, CMD_SERVE_DURATION_FLAG_MAX_MS,
				      &opts->shutdown_grace_ms, diag);
	case FLAG_REQUEUE_BACKOFF:
		return parse_duration(flag_names[f], value, 1, CMD_SERVE_DURATION_FLAG_MAX_MS,
				      &opts->requeue_backoff_ms, diag);
	case FLAG_USAGE_HALF_LIFE:
		return parse_half_life(value, &opts->usage_half_life_ms, diag);
	case FLAG_USAGE_SAMPLING:
		return parse_duration(flag_names[f], value, 1, CMD_SERVE_USAGE_FLAG_MAX_MS,
				      &opts->usage_sampling_ms, diag);
	case FLAG_USAGE_CHECKPOINT:
		return parse_duration(flag_names[f], value, 0, CMD_SERVE_DURATION_FLAG_MAX_MS,
				      &opts->usage_checkpoint_ms, diag);
	case FLAG_DCGM_INTERVAL:
		if (gpuq_duration_parse(value, &opts->dcgm_interval_ms, NULL) ||
		    opts->dcgm_interval_ms < DCGM_INTERVAL_MS_MIN ||
		    opts->dcgm_interval_ms > DCGM_INTERVAL_MS_MAX)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--dcgm-interval \"%s\": expected a duration "
					     "100ms..1h such as 30s",
					     value);
		return GPUQ_OK;
	default:
		break;
	}
	GPUQ_ASSERT(0);
}

/* --cert-secret NAMESPACE/NAME. */
static int parse_cert_secret(const char *value, cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	const char *slash = strchr(value, '/');
	size_t nl = slash ? (size_t)(slash - value) : 0;

	if (!slash || nl >= sizeof(opts->cert_secret_ns))
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--cert-secret \"%s\": expected NAMESPACE/NAME", value);
	memcpy(opts->cert_secret_ns, value, nl);
	opts->cert_secret_ns[nl] = '\0';
	if (!dns_label_ok(opts->cert_secret_ns) || !dns_subdomain_ok(slash + 1))
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--cert-secret \"%s\": expected NAMESPACE/NAME (a namespace "
				     "name, then an object name)",
				     value);
	opts->cert_secret_name = slash + 1;
	return GPUQ_OK;
}

/* --ui BOOL, --ui-auth review|none and --ui-idle D. */
static int apply_ui(flag_t f, const char *value, cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	if (f == FLAG_UI)
		return parse_bool("--ui", value, &opts->ui, diag);
	if (f == FLAG_UI_IDLE) {
		int64_t ms = -1;
		if (gpuq_duration_parse(value, &ms, NULL) || ms < 1 ||
		    ms > CMD_SERVE_UI_IDLE_MAX_MS)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--ui-idle \"%s\": expected a duration such as 30s or "
					     "5m, 1ms..1h",
					     value);
		opts->ui_idle_ms = ms;
		return GPUQ_OK;
	}
	if (strcmp(value, "review") != 0 && strcmp(value, "none") != 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--ui-auth \"%s\": expected review or none",
				     value);
	opts->ui_auth_none = !strcmp(value, "none");
	return GPUQ_OK;
}

/* --listen or --internal-listen. */
static int apply_listen(flag_t f, const char *value, cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	if (f == FLAG_LISTEN) {
		opts->listen = value;
		return parse_addr("--listen", value, opts->host, &opts->port, diag);
	}
	opts->internal_listen = value;
	return parse_addr("--internal-listen", value, opts->internal_host, &opts->internal_port,
			  diag);
}

static int apply_flag(flag_t f, const char *value, cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	switch (f) {
	case FLAG_LISTEN:
	case FLAG_INTERNAL_LISTEN:
		return apply_listen(f, value, opts, diag);
	case FLAG_CERT_DIR:
	case FLAG_POLICY_DIR:
	case FLAG_STATE_DIR:
	case FLAG_KUBECONFIG:
		if (!value[0] || strlen(value) >= PATH_MAX - 16)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": expected a %s",
					     flag_names[f], value,
					     f == FLAG_KUBECONFIG ? "file" : "directory");
		if (f == FLAG_CERT_DIR)
			opts->cert_dir = value;
		else if (f == FLAG_POLICY_DIR)
			opts->policy_dir = value;
		else if (f == FLAG_KUBECONFIG)
			opts->kubeconfig = value;
		else
			opts->state_dir = value;
		return GPUQ_OK;
	case FLAG_GPU_RESOURCE:
		if (!resource_name_ok(value))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--gpu-resource \"%s\": expected a domain-qualified "
					     "resource name such as nvidia.com/gpu",
					     value);
		if (opts->n_gpu_resources == CMD_SERVE_GPU_RESOURCES_MAX)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--gpu-resource \"%s\": at most %d may be given",
					     value, CMD_SERVE_GPU_RESOURCES_MAX);
		opts->gpu_resources[opts->n_gpu_resources++] = value;
		return GPUQ_OK;
	case FLAG_CONTROLLER_USER:
		if (!user_name_ok(value))
			return gpuq_diag_set(
			    diag, GPUQ_EINVAL,
			    "--controller-user \"%s\": expected a username of 1..%d "
			    "printable characters without spaces",
			    value, CMD_SERVE_NAME_MAX);
		opts->controller_user = value;
		opts->controller_user_set = true;
		return GPUQ_OK;
	case FLAG_CHILD_CREATOR:
		return parse_child_creator(value, opts, diag);
	case FLAG_THREADS:
		return parse_threads(value, &opts->threads, diag);
	case FLAG_LOG_LEVEL:
		return parse_log_level(value, &opts->log_level, diag);
	case FLAG_UI:
	case FLAG_UI_AUTH:
	case FLAG_UI_IDLE:
		return apply_ui(f, value, opts, diag);
	case FLAG_LEADER_ELECT:
		return parse_bool("--leader-elect", value, &opts->leader_elect, diag);
	case FLAG_LEASE_NAMESPACE:
		if (!dns_label_ok(value))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--lease-namespace \"%s\": expected a namespace name "
					     "(1..63 of a-z, 0-9, '-')",
					     value);
		opts->lease_namespace = value;
		return GPUQ_OK;
	case FLAG_LEASE_NAME:
		if (!dns_subdomain_ok(value))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--lease-name \"%s\": expected an object name (1..%d "
					     "of a-z, 0-9, '-', '.')",
					     value, CMD_SERVE_NAME_MAX);
		opts->lease_name = value;
		return GPUQ_OK;
	case FLAG_IDENTITY:
		return set_identity(opts, "--identity", value, diag);
	case FLAG_QPS:
		return parse_qps(value, &opts->qps, diag);
	case FLAG_BURST:
		return parse_burst(value, &opts->burst, diag);
	case FLAG_FAIR_SHARING:
		return parse_bool("--fair-sharing", value, &opts->fair_sharing, diag);
	case FLAG_VISIBILITY:
		return parse_bool("--visibility", value, &opts->visibility, diag);
	case FLAG_READY_TIMEOUT:
	case FLAG_SHUTDOWN_GRACE:
	case FLAG_REQUEUE_BACKOFF:
	case FLAG_USAGE_HALF_LIFE:
	case FLAG_USAGE_SAMPLING:
	case FLAG_USAGE_CHECKPOINT:
	case FLAG_DCGM_INTERVAL:
		return apply_duration(f, value, opts, diag);
	case FLAG_DCGM_URL:
		return parse_dcgm_url(value, &opts->dcgm_url, diag);
	case FLAG_IDLE_THRESHOLD:
		return parse_threshold(value, &opts->idle_threshold_pct, diag);
	case FLAG_CERT_SECRET:
		return parse_cert_secret(value, opts, diag);
	case FLAG_CERT_DNS:
	case FLAG_CERT_IP:
		if (!value[0])
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"\": expected a list",
					     flag_names[f]);
		*(f == FLAG_CERT_DNS ? &opts->cert_dns : &opts->cert_ip) = value;
		return GPUQ_OK; /* checked name by name when the certificate is issued */
	case FLAG_WEBHOOK_CONFIG:
		if (!dns_subdomain_ok(value))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--webhook-config \"%s\": expected an object name",
					     value);
		opts->webhook_config = value;
		return GPUQ_OK;
	case FLAG_COUNT:
		break;
	}
	GPUQ_ASSERT(0);
}

static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		return 2;
	return n > HTTP_THREADS_MAX ? HTTP_THREADS_MAX : (unsigned)n;
}

static const char *env_value(const char *v)
{
	return v && *v ? v : NULL;
}

/* Decide the policy source (exactly one) and fill the cluster defaults the
 * flags left open from env. */
static int resolve_source(const bool *seen, const cmd_serve_env_t *env, cmd_serve_opts_t *opts,
			  gpuq_diag_t *diag)
{
	const char *ns, *id;

	if (seen[FLAG_POLICY_DIR] && seen[FLAG_KUBECONFIG])
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--policy-dir \"%s\" and --kubeconfig \"%s\": give one "
				     "policy source, not both",
				     opts->policy_dir, opts->kubeconfig);
	if (seen[FLAG_POLICY_DIR]) {
		for (flag_t f = FLAG_LEADER_ELECT; f <= FLAG_WEBHOOK_CONFIG; f++)
			if (seen[f])
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "%s: a cluster flag, but --policy-dir runs "
						     "offline (drop one of them)",
						     flag_names[f]);
		opts->source = CMD_SERVE_SOURCE_DIR;
		return GPUQ_OK;
	}
	for (flag_t f = FLAG_CERT_DNS; f <= FLAG_WEBHOOK_CONFIG; f++)
		if (seen[f] && !seen[FLAG_CERT_SECRET])
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: only with --cert-secret",
					     flag_names[f]);
	if (seen[FLAG_KUBECONFIG])
		opts->source = CMD_SERVE_SOURCE_KUBECONFIG;
	else if (env && env_value(env->service_host))
		opts->source = CMD_SERVE_SOURCE_IN_CLUSTER;
	else
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "no policy source: give --policy-dir DIR (offline) or "
				     "--kubeconfig PATH (a cluster), or run in a Pod "
				     "(KUBERNETES_SERVICE_HOST is not set)");
	ns = env ? env_value(env->pod_namespace) : NULL;
	if (!seen[FLAG_LEASE_NAMESPACE] && ns) {
		if (!dns_label_ok(ns))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "POD_NAMESPACE \"%s\": expected a namespace name; "
					     "give --lease-namespace",
					     ns);
		opts->lease_namespace = ns;
	}
	if (seen[FLAG_IDENTITY])
		return GPUQ_OK;
	id = env ? env_value(env->pod_name) : NULL;
	if (id)
		return set_identity(opts, "POD_NAME", id, diag);
	id = env ? env_value(env->hostname) : NULL;
	if (!id)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "no identity for the Lease: give --identity (neither POD_NAME "
				     "nor the hostname is known)");
	return set_identity(opts, "the hostname", id, diag);
}

/* Whether HOST is a loopback address or name (the web UI without auth). */
static bool loopback(const char *host)
{
	return !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost");
}

/* --ui and --ui-auth: no auth only on a loopback address; the review mode
 * needs an apiserver. */
static int check_ui(const bool *seen, const cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	if (seen[FLAG_UI_AUTH] && !opts->ui)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--ui-auth: only with --ui true");
	if (seen[FLAG_UI_IDLE] && !opts->ui)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--ui-idle: only with --ui true");
	if (!opts->ui)
		return GPUQ_OK;
	/* the web view is on the internal listener when there is one */
	if (opts->ui_auth_none &&
	    !loopback(opts->internal_listen ? opts->internal_host : opts->host))
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--ui-auth none: only with a loopback %s (127.0.0.1, "
				     "[::1], localhost), not \"%s\": anyone who reaches the port "
				     "would read every queue",
				     opts->internal_listen ? "--internal-listen" : "--listen",
				     opts->internal_listen ? opts->internal_listen : opts->listen);
	if (!opts->ui_auth_none && opts->source == CMD_SERVE_SOURCE_DIR)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--ui true with --policy-dir: no apiserver to review tokens; "
				     "add --ui-auth none (with a loopback --listen)");
	return GPUQ_OK;
}

int cmd_serve_opts_parse_env(int argc, char **argv, const cmd_serve_env_t *env,
			     cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	bool seen[FLAG_COUNT] = {false};
	int rc;

	memset(opts, 0, sizeof(*opts));
	opts->controller_user = WEBHOOK_CONTROLLER_USER_DEFAULT;
	opts->threads = default_threads();
	opts->log_level = GPUQ_LOG_INFO;
	opts->poll_ms = HTTP_POLL_MS_DEFAULT;
	opts->body_budget = HTTP_BODY_BUDGET_DEFAULT;
	opts->leader_elect = true;
	opts->visibility = true;
	opts->lease_namespace = CMD_SERVE_LEASE_NAMESPACE_DEFAULT;
	opts->lease_name = CMD_SERVE_LEASE_NAME_DEFAULT;
	opts->qps = CMD_SERVE_QPS_DEFAULT;
	opts->burst = CMD_SERVE_BURST_DEFAULT;
	opts->ready_timeout_ms = CMD_SERVE_READY_TIMEOUT_MS_DEFAULT;
	opts->requeue_backoff_ms = CMD_SERVE_REQUEUE_BACKOFF_MS_DEFAULT;
	opts->usage_checkpoint_ms = CMD_SERVE_USAGE_CHECKPOINT_MS_DEFAULT;
	opts->shutdown_grace_ms = HTTP_SHUTDOWN_GRACE_MS_DEFAULT;
	opts->dcgm_interval_ms = DCGM_INTERVAL_MS_DEFAULT;
	opts->idle_threshold_pct = DCGM_IDLE_THRESHOLD_DEFAULT;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *value;
		size_t name_len;
		flag_t f;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			opts->help = true;
			continue;
		}
		eq = strchr(arg, '=');
		name_len = eq ? (size_t)(eq - arg) : strlen(arg);
		for (f = 0; f < FLAG_COUNT; f++)
			if (strlen(flag_names[f]) == name_len &&
			    !strncmp(arg, flag_names[f], name_len))
				break;
		if (f == FLAG_COUNT)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "unknown flag \"%s\" (see gpuq serve --help)", arg);
		if (eq)
			value = eq + 1;
		else if (i + 1 < argc)
			value = argv[++i];
		else
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s needs a value", flag_names[f]);
		if (seen[f] && f != FLAG_GPU_RESOURCE && f != FLAG_CHILD_CREATOR)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": given more than once",
					     flag_names[f], value);
		seen[f] = true;
		rc = apply_flag(f, value, opts, diag);
		if (rc)
			return rc;
	}
	if (opts->help)
		return GPUQ_OK;
	for (flag_t f = FLAG_DCGM_INTERVAL; f <= FLAG_IDLE_THRESHOLD; f++)
		if (seen[f] && !seen[FLAG_DCGM_URL])
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: only with --dcgm-url",
					     flag_names[f]);
	for (flag_t f = FLAG_LISTEN; f <= FLAG_STATE_DIR; f++)
		if (!seen[f])
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "%s is required (see gpuq serve --help)",
					     flag_names[f]);
	if (opts->internal_listen && opts->internal_port == opts->port)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--internal-listen \"%s\": the same port as --listen \"%s\"; "
				     "give it a port of its own",
				     opts->internal_listen, opts->listen);
	rc = resolve_source(seen, env, opts, diag);
	return rc ? rc : check_ui(seen, opts, diag);
}

int cmd_serve_opts_parse(int argc, char **argv, cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	char host[CMD_SERVE_NAME_MAX + 1];
	cmd_serve_env_t env = {
	    .pod_namespace = getenv("POD_NAMESPACE"),
	    .pod_name = getenv("POD_NAME"),
	    .service_host = getenv("KUBERNETES_SERVICE_HOST"),
	};

	/* set_identity copies the name, so the buffer may go with this frame */
	if (!gethostname(host, sizeof(host))) {
		host[sizeof(host) - 1] = '\0';
		env.hostname = host;
	}
	return cmd_serve_opts_parse_env(argc, argv, &env, opts, diag);
}

static int check_dir(const char *flag, const char *dir, gpuq_diag_t *diag)
{
	struct stat st;

	if (stat(dir, &st))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": %s", flag, dir,
				     strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": not a directory", flag, dir);
	return GPUQ_OK;
}

static int check_readable(const char *dir, const char *name, gpuq_diag_t *diag)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--cert-dir \"%s\": cannot read %s: %s",
				     dir, name, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--cert-dir \"%s\": %s is not a regular file", dir, name);
	}
	close(fd);
	return GPUQ_OK;
}

/* A file given by a flag must be a readable regular file. */
static int check_file(const char *flag, const char *path, gpuq_diag_t *diag)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": cannot read: %s", flag, path,
				     strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": not a regular file", flag,
				     path);
	}
	close(fd);
	return GPUQ_OK;
}

int cmd_serve_opts_check(const cmd_serve_opts_t *opts, gpuq_diag_t *diag)
{
	int rc;

	rc = check_dir("--cert-dir", opts->cert_dir, diag);
	if (!rc && opts->cert_secret_name && access(opts->cert_dir, W_OK | X_OK))
		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "--cert-dir \"%s\": not writable (--cert-secret writes the "
				   "certificate there): %s",
				   opts->cert_dir, strerror(errno));
	/* with --cert-secret the files come from the Secret, at start */
	if (!rc && !opts->cert_secret_name)
		rc = check_readable(opts->cert_dir, "tls.crt", diag);
	if (!rc && !opts->cert_secret_name)
		rc = check_readable(opts->cert_dir, "tls.key", diag);
	if (!rc && opts->policy_dir)
		rc = check_dir("--policy-dir", opts->policy_dir, diag);
	if (!rc && opts->kubeconfig)
		rc = check_file("--kubeconfig", opts->kubeconfig, diag);
	if (rc)
		return rc;
	if (mkdir(opts->state_dir, 0700) && errno != EEXIST)
		return gpuq_diag_set(diag, GPUQ_EIO, "--state-dir \"%s\": cannot create: %s",
				     opts->state_dir, strerror(errno));
	rc = check_dir("--state-dir", opts->state_dir, diag);
	if (rc)
		return rc;
	if (access(opts->state_dir, W_OK | X_OK))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--state-dir \"%s\": not writable: %s",
				     opts->state_dir, strerror(errno));
	return GPUQ_OK;
}

void cmd_serve_http_config(const cmd_serve_opts_t *opts, http_server_config_t *out)
{
	*out = (http_server_config_t){.listen = opts->listen,
				      .host = opts->host,
				      .port = opts->port,
				      .cert_dir = opts->cert_dir,
				      .threads = opts->threads,
				      .poll_ms = opts->poll_ms,
				      .body_budget = opts->body_budget,
				      .internal_listen = opts->internal_listen,
				      .internal_host = opts->internal_host,
				      .internal_port =
					  opts->internal_listen ? opts->internal_port : 0};
}

webhook_config_t cmd_serve_review_config(const cmd_serve_opts_t *opts)
{
	return (webhook_config_t){.gpu_resources = opts->gpu_resources,
				  .n_gpu_resources = opts->n_gpu_resources,
				  .controller_user = opts->controller_user,
				  .creators = opts->child_creators,
				  .n_creators = opts->n_child_creators};
}

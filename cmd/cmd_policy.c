/* gpuq policy check: load policy manifests with the decoder `gpuq serve
 * --policy-dir` uses and say what they hold, or why they are refused,
 * without serving. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "cmd/cmd.h"
#include "policy/policy.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpuq policy check [--skip-workloads] PATH...\n"
		"\n"
		"Load policy manifests as `gpuq serve --policy-dir` loads them (the same\n"
		"decoder, caps and checks across objects) and report what they hold, without\n"
		"serving. PATH is one directory (its *.yaml, *.yml and *.json files, as\n"
		"--policy-dir reads them) or any number of files, read together in the order\n"
		"given. Every object that fails its own checks or one across objects (a\n"
		"LocalQueue naming a missing ClusterQueue, a missing ResourceFlavor, a cohort\n"
		"cycle, a second Namespace budget) is reported, not only the first: the\n"
		"controller leaves each such object out of the cluster's policy, and what\n"
		"depends on it, and applies the rest; --policy-dir refuses the whole dir.\n"
		"\n"
		"  --skip-workloads  leave out batch/v1 Job and v1 Pod objects (the workloads\n"
		"                    gpuq admits; a setup file may carry its sample Jobs),\n"
		"                    listing each as \"not a policy object\"; without it they\n"
		"                    are refused, as --policy-dir refuses them\n"
		"  --help            this text\n"
		"\n"
		"On stdout: \"loaded: N policy objects: KIND COUNT, ...\" (what the controller\n"
		"would apply), a \"skipped:\" line per workload left out, and a \"left out:\"\n"
		"line per object left out (KIND NAMESPACE/NAME (REASON), the reason its\n"
		"status condition would give). Each refusal goes to stderr, naming the file,\n"
		"the document, the object, the field and the value.\n"
		"Exit status: 0 loaded, 1 refused (anything left out), 2 usage error.\n");
}

/* Declared ones only: an implied Namespace or Cohort has no object. */
static size_t declared_namespaces(const policy_t *p)
{
	size_t n = 0;

	for (size_t i = 0; i < policy_namespace_count(p); i++)
		n += policy_namespace_at(p, i)->declared;
	return n;
}

static size_t declared_cohorts(const policy_t *p)
{
	size_t n = 0;

	for (size_t i = 0; i < policy_cohort_count(p); i++)
		n += policy_cohort_at(p, i)->declared;
	return n;
}

/* What the policy declares, by kind, and the workloads it left out. */
static void print_loaded(const policy_t *p)
{
	const struct {
		const char *kind;
		size_t n;
	} kinds[] = {
	    {"Namespace", declared_namespaces(p)},
	    {"PriorityClass", policy_priorityclass_count(p)},
	    {"ResourceFlavor", policy_flavor_count(p)},
	    {"Topology", policy_topology_count(p)},
	    {"Cohort", declared_cohorts(p)},
	    {"ClusterQueue", policy_cq_count(p)},
	    {"LocalQueue", policy_lq_count(p)},
	    {"LimitRange", policy_limitrange_count(p)},
	    {"ResourceQuota", policy_quota_count(p)},
	    {"ResourceClaimTemplate", policy_claimtemplate_count(p)},
	};
	const char *sep = ": ";
	size_t total = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		total += kinds[i].n;
	printf("loaded: %zu policy object%s", total, total == 1 ? "" : "s");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!kinds[i].n)
			continue;
		printf("%s%s %zu", sep, kinds[i].kind, kinds[i].n);
		sep = ", ";
	}
	printf("\n");
	for (size_t i = 0; i < policy_skipped_count(p); i++) {
		const policy_skipped_t *s = policy_skipped_at(p, i);

		printf("skipped: %s: document %zu: %s (%s): not a policy object\n",
		       s->origin.file ? s->origin.file : "<manifest>", s->origin.doc, s->kind,
		       s->api_version);
	}
}

/* Each object left out: a line on stdout, its refusal on stderr. Returns
 * how many. */
static size_t print_left_out(const policy_t *p)
{
	size_t n = policy_leftout_count(p);

	for (size_t i = 0; i < n; i++) {
		const policy_leftout_t *l = policy_leftout_at(p, i);

		printf("left out: %s %s%s%s (%s)\n", l->kind, l->namespace_,
		       l->namespace_[0] ? "/" : "", l->name, l->reason);
		fprintf(stderr, "gpuq policy check: %s: document %zu: %s\n",
			l->origin.file ? l->origin.file : "<manifest>", l->origin.doc, l->message);
	}
	return n;
}

/* Load paths[0..n): one directory, or files. */
static int load(const char *const *paths, size_t n, const policy_opts_t *opts, policy_t **out,
		gpuq_diag_t *diag)
{
	struct stat st;

	if (n == 1 && stat(paths[0], &st) == 0 && S_ISDIR(st.st_mode))
		return policy_load_dir(paths[0], opts, out, diag);
	return policy_load_files(paths, n, opts, out, diag);
}

static int check(int argc, char **argv)
{
	policy_opts_t opts = {.leave_out_broken = true}; /* every problem, not the first */
	const char *paths[POLICY_DIR_FILES_MAX];
	size_t n = 0;
	policy_t *p = NULL;
	gpuq_diag_t diag = {{0}};
	struct stat st;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--skip-workloads")) {
			opts.skip_workloads = true;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "gpuq policy check: unknown flag \"%s\"\n\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (n == POLICY_DIR_FILES_MAX) {
			fprintf(stderr, "gpuq policy check: more than %d files\n",
				POLICY_DIR_FILES_MAX);
			return 2;
		} else {
			paths[n++] = argv[i];
		}
	}
	if (!n) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; n > 1 && i < n; i++)
		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			fprintf(stderr,
				"gpuq policy check: \"%s\" is a directory: give one directory, or "
				"files\n",
				paths[i]);
			return 2;
		}
	rc = load(paths, n, &opts, &p, &diag);
	if (rc) {
		fprintf(stderr, "gpuq policy check: %s\n",
			diag.msg[0] ? diag.msg : gpuq_strerror(rc));
		return 1;
	}
	print_loaded(p);
	rc = print_left_out(p) ? 1 : 0;
	policy_unref(p);
	return rc;
}

int cmd_policy(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "check"))
		return check(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2)
		fprintf(stderr, "gpuq policy: unknown subcommand \"%s\"\n\n", argv[1]);
	usage(stderr);
	return 2;
}

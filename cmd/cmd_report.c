/* gpuq report usage: GPU-hours (and cpu, memory) and cost per namespace,
 * LocalQueue, ClusterQueue or flavor from a state store's usage ledger, or
 * from a running cluster's (the leader's checkpoint ConfigMaps:
 * report_live.c), read-only (docs/chargeback.md). Hours of a flavor with no
 * price are shown as such, never as a cost of 0. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "ledger/ledger.h"
#include "policy/policy.h"
#include "queue/queue.h"
#include "store/store.h"

#define PRICES_MAX 64 /* --price flags */
/* Prices in force: the flags and one per ResourceFlavor (POLICY_FLAVORS_MAX). */
#define PRICES_ALL_MAX (PRICES_MAX + POLICY_FLAVORS_MAX)

typedef struct {
	const char *dir;		   /* --state-dir: offline */
	const char *kubeconfig;		   /* --kubeconfig: live (or in cluster) */
	bool live;			   /* read the cluster, not a store */
	const char *lease_ns;		   /* --lease-namespace: where the checkpoints are */
	const char *ns;			   /* -n: only this namespace's rows */
	const char *policy_dir;		   /* --policy-dir: flavors' price annotations */
	int64_t since_ms;		   /* --since, or -1: everything */
	ledger_by_t by;			   /* --by */
	const char *format;		   /* table, csv, json */
	ledger_price_t prices[PRICES_MAX]; /* --price FLAVOR=PRICE */
	size_t n_prices;		   /* entries */
} report_opts_t;

static const char usage_text[] =
    "usage: gpuq report usage (--state-dir DIR [--policy-dir DIR] | [--kubeconfig F]\n"
    "                         [--lease-namespace NS]) [--since 7d]\n"
    "                         [--by namespace|queue|clusterqueue|flavor]\n"
    "                         [--format table|csv|json] [--price FLAVOR=PRICE]...\n"
    "                         [-n NAMESPACE | -A]\n"
    "\n"
    "GPU-hours (and cpu, memory) held within nominal quota and borrowed, and their\n"
    "cost, per group over a window (docs/chargeback.md). From a state store\n"
    "(--state-dir, read-only; prices from --policy-dir's ResourceFlavors), or from a\n"
    "running cluster: the leader's checkpoint ConfigMaps gpuq-usage-0..7 in\n"
    "--lease-namespace (default gpuq-system) and the ResourceFlavors' annotation\n"
    "gpuq.dev/price-per-hour, through --kubeconfig F, in cluster, or $KUBECONFIG.\n"
    "--price flags win over annotations; an accelerator of a flavor with no price\n"
    "shows \"no price\", never a cost of 0. -n keeps one namespace's rows (--by\n"
    "namespace or queue). Exit 0; 1 (no store or checkpoint, apiserver errors);\n"
    "2 (bad flag).\n";

static int usage_error(const char *msg, const char *val)
{
	fprintf(stderr, "gpuq report usage: %s%s%s\n%s", msg, val ? " " : "", val ? val : "",
		usage_text);
	return 2;
}

/* --help or -h anywhere among args. */
static int parse_by(const char *v, ledger_by_t *by)
{
	static const struct {
		const char *name;
		ledger_by_t by;
	} names[] = {{"namespace", LEDGER_BY_NAMESPACE},
		     {"queue", LEDGER_BY_LOCALQUEUE},
		     {"localqueue", LEDGER_BY_LOCALQUEUE},
		     {"clusterqueue", LEDGER_BY_CLUSTERQUEUE},
		     {"flavor", LEDGER_BY_FLAVOR}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i].name)) {
			*by = names[i].by;
			return GPUQ_OK;
		}
	return GPUQ_EINVAL;
}

int cmd_price_flag(char *v, ledger_price_t *out, gpuq_diag_t *diag)
{
	char *eq = strchr(v, '=');

	if (!eq || eq == v)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "want FLAVOR=PRICE, not %.200s", v);
	*eq = '\0';
	if (ledger_price_parse(eq + 1, &out->per_hour, diag)) {
		*eq = '=';
		return GPUQ_EINVAL;
	}
	out->flavor = v;
	return GPUQ_OK;
}

static int parse_price(report_opts_t *o, char *v)
{
	gpuq_diag_t d = {{0}};

	if (o->n_prices == PRICES_MAX)
		return usage_error("--price: more than 64 flavors priced", NULL);
	if (cmd_price_flag(v, &o->prices[o->n_prices], &d))
		return usage_error("--price:", d.msg);
	o->n_prices++;
	return 0;
}

/* A flag that takes no value. 1 when a was one (and applied). */
static int flag_only(const char *a, report_opts_t *o)
{
	if (strcmp(a, "-A") != 0 && strcmp(a, "--all-namespaces") != 0)
		return 0;
	o->ns = NULL;
	return 1;
}

static int parse_value(const char *a, char *v, report_opts_t *o)
{
	gpuq_diag_t d = {{0}};

	if (!strcmp(a, "--state-dir"))
		o->dir = v;
	else if (!strcmp(a, "--kubeconfig"))
		o->kubeconfig = v;
	else if (!strcmp(a, "--lease-namespace"))
		o->lease_ns = v;
	else if (!strcmp(a, "-n") || !strcmp(a, "--namespace"))
		o->ns = v;
	else if (!strcmp(a, "--since")) {
		if (gpuq_duration_parse(v, &o->since_ms, &d))
			return usage_error("--since:", d.msg);
	} else if (!strcmp(a, "--by")) {
		if (parse_by(v, &o->by))
			return usage_error(
			    "--by: want namespace, queue, clusterqueue or flavor, not", v);
	} else if (!strcmp(a, "--format")) {
		if (strcmp(v, "table") != 0 && strcmp(v, "csv") != 0 && strcmp(v, "json") != 0)
			return usage_error("--format: want table, csv or json, not", v);
		o->format = v;
	} else if (!strcmp(a, "--price"))
		return parse_price(o, v);
	else if (!strcmp(a, "--policy-dir"))
		o->policy_dir = v;
	else
		return usage_error("unknown option", a);
	return 0;
}

/* Which source: a store (--state-dir), else the cluster a kubeconfig
 * names, in cluster, or $KUBECONFIG's. */
static int pick_source(report_opts_t *o)
{
	if (o->dir && o->kubeconfig)
		return usage_error("--state-dir and --kubeconfig: give one", NULL);
	if (o->ns && o->by != LEDGER_BY_NAMESPACE && o->by != LEDGER_BY_LOCALQUEUE)
		return usage_error("-n NAMESPACE: only with --by namespace or queue", NULL);
	if (o->dir)
		return 0;
	if (o->policy_dir)
		return usage_error("--policy-dir: only with --state-dir (a cluster's flavors "
				   "give their own prices)",
				   NULL);
	if (!o->kubeconfig && !getenv("KUBERNETES_SERVICE_HOST"))
		o->kubeconfig = getenv("KUBECONFIG");
	if (!o->kubeconfig && !getenv("KUBERNETES_SERVICE_HOST"))
		return usage_error("want --state-dir DIR, or --kubeconfig F for a running cluster",
				   NULL);
	o->live = true;
	return 0;
}

static int parse_opts(int argc, char **argv, report_opts_t *o)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		char *v = i + 1 < argc ? argv[i + 1] : NULL, *eq = NULL;
		int rc;

		if (flag_only(a, o))
			continue;
		if (!strncmp(a, "--", 2) && (eq = strchr(a, '=')) != NULL) {
			*eq = '\0'; /* --flag=value */
			v = eq + 1;
		} else if (!v) {
			return usage_error("missing value for", a);
		} else {
			i++;
		}
		rc = parse_value(a, v, o);
		if (eq)
			*eq = '=';
		if (rc)
			return rc;
	}
	return pick_source(o);
}

static int load_one(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	gpuq_diag_t d = {{0}};
	int rc;

	(void)type;
	rc = ledger_record_apply(ctx, key, klen, val, vlen, &d);
	if (rc)
		fprintf(stderr, "gpuq report usage: %s\n", d.msg);
	return rc;
}

/* The store's usage ledger into a new ledger (the caller's). */
static int load(const char *dir, ledger_t **l)
{
	store_opts_t opts;
	store_t *s = NULL;
	gpuq_diag_t d = {{0}};
	int rc;

	store_opts_init(&opts);
	opts.read_only = true;
	cmd_store_fault_guard(dir);
	rc = store_open(dir, &opts, &s, &d);
	if (rc) {
		fprintf(stderr, "gpuq report usage: %s\n", d.msg[0] ? d.msg : gpuq_strerror(rc));
		return rc;
	}
	rc = ledger_create(l);
	if (!rc && store_type_name(s, QUEUE_REC_USAGE))
		rc = store_scan(s, QUEUE_REC_USAGE, load_one, *l);
	if (!rc && (rc = ledger_restore_done(*l, &d)))
		fprintf(stderr, "gpuq report usage: %s\n", d.msg);
	store_close(s);
	return rc;
}

/* The prices in force: the --price flags, then each declared price (the
 * live cluster's flavors in live, else those of --policy-dir) that no flag
 * names. *p (the loaded policy, or NULL) is the caller's to unref after the
 * last use of out: the flavor names are its. */
static int prices(const report_opts_t *o, const cmd_live_usage_t *live, ledger_price_t *out,
		  size_t *n, policy_t **p)
{
	ledger_price_t declared[POLICY_FLAVORS_MAX];
	size_t n_declared = 0;
	gpuq_diag_t d = {{0}};
	int rc;

	if (o->live) {
		memcpy(declared, live->prices, live->n_prices * sizeof(declared[0]));
		n_declared = live->n_prices;
	} else if (o->policy_dir) {
		rc = policy_load_dir(o->policy_dir, NULL, p, &d);
		if (rc) {
			fprintf(stderr, "gpuq report usage: --policy-dir: %s\n",
				d.msg[0] ? d.msg : gpuq_strerror(rc));
			return rc;
		}
		for (size_t i = 0; i < policy_flavor_count(*p); i++) {
			const policy_flavor_t *f = policy_flavor_at(*p, i);
			if (f->has_price && n_declared < POLICY_FLAVORS_MAX)
				declared[n_declared++] =
				    (ledger_price_t){f->name, f->price_per_hour};
		}
	}
	return ledger_prices_merge(o->prices, o->n_prices, declared, n_declared, out,
				   PRICES_ALL_MAX, n);
}

/* The live cluster's ledger (the leader's checkpoint) into a new ledger. */
static int load_live(const report_opts_t *o, ledger_t **l, cmd_live_usage_t *live)
{
	gpuq_diag_t d = {{0}};
	int rc = ledger_create(l);

	if (!rc)
		rc = cmd_report_live_load(o->kubeconfig, o->lease_ns, *l, live, &d);
	if (rc)
		fprintf(stderr, "gpuq report usage: %s\n", d.msg[0] ? d.msg : gpuq_strerror(rc));
	return rc;
}

static const char *by_name(ledger_by_t by)
{
	static const char *const names[] = {"namespace", "localQueue", "clusterQueue", "flavor"};

	return names[by];
}

/* Whether row is shown: every row, or with -n those of that namespace. */
static bool keep(const report_opts_t *o, const ledger_row_t *row)
{
	size_t n;

	if (!o->ns)
		return true;
	n = strlen(o->ns);
	if (o->by == LEDGER_BY_NAMESPACE)
		return !strcmp(row->group, o->ns);
	return !strncmp(row->group, o->ns, n) && row->group[n] == '/';
}

/* What the cost of a row is: "-" (cpu, memory: never priced), "no price"
 * (none of its flavors has one), the cost, or the cost and "*" when part
 * of its hours has no price (the footer names the flavors). */
static void cost_text(const ledger_row_t *row, char *buf, size_t cap)
{
	double all = row->nominal_hours + row->borrowed_hours;

	if (!row->accelerator)
		snprintf(buf, cap, "-");
	else if (row->unpriced_hours > 0 && row->unpriced_hours >= all * (1 - 1e-12))
		snprintf(buf, cap, "no price");
	else
		snprintf(buf, cap, "%.2f%s", row->cost, row->unpriced_hours > 0 ? "*" : "");
}

static void print_table(const report_opts_t *o, const ledger_report_t *r,
			const ledger_report_t *unpriced)
{
	char cost[32];

	printf("%-32s %-24s %14s %14s %12s\n", by_name(o->by), "resource", "nominal_hours",
	       "borrowed_hours", "cost");
	for (size_t i = 0; i < r->n_rows; i++) {
		if (!keep(o, &r->rows[i]))
			continue;
		cost_text(&r->rows[i], cost, sizeof(cost));
		printf("%-32s %-24s %14.3f %14.3f %12s\n", r->rows[i].group, r->rows[i].resource,
		       r->rows[i].nominal_hours, r->rows[i].borrowed_hours, cost);
	}
	printf("window %" PRId64 "..%" PRId64 " ms", r->from_ms, r->to_ms);
	if (r->kept_from_ms != INT64_MIN)
		printf("; %.3f accelerator hours before %" PRId64 " ms dropped", r->dropped_hours,
		       r->kept_from_ms);
	if (r->unrecorded)
		printf("; %" PRIu64 " parts unrecorded (series cap)", r->unrecorded);
	printf("\n");
	for (size_t i = 0, n = 0; i < unpriced->n_rows; i++)
		if (unpriced->rows[i].unpriced_hours > 0)
			printf("%s%s (%.3f %s-hours)", n++ ? ", " : "no price for flavor ",
			       unpriced->rows[i].group, unpriced->rows[i].unpriced_hours,
			       unpriced->rows[i].resource);
	for (size_t i = 0; i < unpriced->n_rows; i++)
		if (unpriced->rows[i].unpriced_hours > 0) {
			printf(": set its annotation " POLICY_ANNOT_PRICE
			       " or --price FLAVOR=PRICE\n");
			break;
		}
}

static void print_csv(const report_opts_t *o, const ledger_report_t *r)
{
	char cost[32];

	printf("%s,resource,nominal_hours,borrowed_hours,cost,unpriced_hours\n", by_name(o->by));
	for (size_t i = 0; i < r->n_rows; i++) { /* names are DNS-like: no commas or quotes */
		const ledger_row_t *row = &r->rows[i];
		if (!keep(o, row))
			continue;
		cost_text(row, cost, sizeof(cost));
		if (!strcmp(cost, "-") || !strcmp(cost, "no price"))
			cost[0] = '\0';
		else
			snprintf(cost, sizeof(cost), "%.4f", row->cost);
		printf("%s,%s,%.6f,%.6f,%s,%.6f\n", row->group, row->resource, row->nominal_hours,
		       row->borrowed_hours, cost, row->unpriced_hours);
	}
}

static void print_json(const report_opts_t *o, const ledger_report_t *r,
		       const ledger_report_t *unpriced)
{
	char cost[32];
	const char *last = NULL;
	size_t n = 0;

	printf("{\"fromMs\":%" PRId64 ",\"toMs\":%" PRId64 ",\"by\":\"%s\",\"droppedHours\":%.6f,"
	       "\"unrecorded\":%" PRIu64 ",\"unpricedFlavors\":[",
	       r->from_ms, r->to_ms, by_name(o->by), r->dropped_hours, r->unrecorded);
	for (size_t i = 0; i < unpriced->n_rows; i++) { /* sorted by flavor: each name once */
		if (unpriced->rows[i].unpriced_hours <= 0 ||
		    (last && !strcmp(last, unpriced->rows[i].group)))
			continue;
		last = unpriced->rows[i].group;
		printf("%s\"%s\"", n++ ? "," : "", last);
	}
	printf("],\"rows\":[");
	n = 0;
	for (size_t i = 0; i < r->n_rows; i++) {
		const ledger_row_t *row = &r->rows[i];
		if (!keep(o, row))
			continue;
		cost_text(row, cost, sizeof(cost));
		if (!strcmp(cost, "-") || !strcmp(cost, "no price"))
			snprintf(cost, sizeof(cost), "null");
		else
			snprintf(cost, sizeof(cost), "%.4f", row->cost);
		printf("%s\n{\"%s\":\"%s\",\"resource\":\"%s\",\"nominalHours\":%.6f,"
		       "\"borrowedHours\":%.6f,\"cost\":%s,\"unpricedHours\":%.6f}",
		       n++ ? "," : "", by_name(o->by), row->group, row->resource,
		       row->nominal_hours, row->borrowed_hours, cost, row->unpriced_hours);
	}
	printf("]}\n");
}

/* The window asked for, grouped as asked and by flavor (which flavors
 * lack a price), printed. */
static int report(const report_opts_t *o, const ledger_t *l, const ledger_price_t *all,
		  size_t n_all)
{
	ledger_report_t r = {0}, by_flavor = {0};
	ledger_query_t q = {o->since_ms < 0 ? 0 : ledger_clock(l) - o->since_ms,
			    ledger_clock(l),
			    ledger_clock(l),
			    o->by,
			    all,
			    n_all};
	int rc = ledger_window(l, &q, &r);

	q.by = LEDGER_BY_FLAVOR;
	if (!rc)
		rc = ledger_window(l, &q, &by_flavor);
	if (!rc) {
		if (!strcmp(o->format, "csv"))
			print_csv(o, &r);
		else if (!strcmp(o->format, "json"))
			print_json(o, &r, &by_flavor);
		else
			print_table(o, &r, &by_flavor);
	}
	ledger_report_deinit(&by_flavor);
	ledger_report_deinit(&r);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	report_opts_t o = {.since_ms = -1,
			   .by = LEDGER_BY_NAMESPACE,
			   .format = "table",
			   .lease_ns = "gpuq-system"};
	cmd_live_usage_t live = {0};
	ledger_t *l = NULL;
	ledger_price_t all[PRICES_ALL_MAX];
	size_t n_all = 0;
	policy_t *pol = NULL;
	int rc;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return 0;
		}
	if (argc < 2 || strcmp(argv[1], "usage") != 0)
		return usage_error("want the report \"usage\"", argc > 1 ? argv[1] : NULL);
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	rc = o.live ? load_live(&o, &l, &live) : load(o.dir, &l);
	if (!rc)
		rc = prices(&o, &live, all, &n_all, &pol);
	if (!rc)
		rc = report(&o, l, all, n_all);
	policy_unref(pol);
	cmd_live_usage_deinit(&live);
	ledger_destroy(l);
	return rc ? 1 : 0;
}

/* gpuq report usage: GPU-hours (and cpu, memory) and cost per namespace,
 * LocalQueue, ClusterQueue or flavor from a state store's usage ledger,
 * read-only (docs/chargeback.md). */
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
	const char *dir;		   /* --state-dir */
	const char *policy_dir;		   /* --policy-dir: flavors' price annotations */
	int64_t since_ms;		   /* --since, or -1: everything */
	ledger_by_t by;			   /* --by */
	const char *format;		   /* table, csv, json */
	ledger_price_t prices[PRICES_MAX]; /* --price FLAVOR=PRICE */
	size_t n_prices;		   /* entries */
} report_opts_t;

#define USAGE_LINE                                                                                 \
	"usage: gpuq report usage --state-dir DIR [--since 7d]\n"                                  \
	"                         [--by namespace|queue|clusterqueue|flavor]\n"                    \
	"                         [--format table|csv|json] [--price FLAVOR=PRICE]...\n"           \
	"                         [--policy-dir DIR]\n"

static void usage(FILE *out)
{
	fprintf(out, USAGE_LINE
		"\n"
		"GPU-hours (nominal and borrowed) and their cost per namespace, LocalQueue,\n"
		"ClusterQueue or flavor, from a state store's usage ledger (gpuq serve's or\n"
		"gpuq simulate's). Read-only: safe next to a running leader\n"
		"(docs/chargeback.md).\n"
		"\n"
		"  --state-dir DIR   the store to read (required)\n"
		"  --since D         the last D (e.g. 7d, 12h) before the ledger's clock (its\n"
		"                    latest admission or release), from the start of that\n"
		"                    hour; default: everything the ledger holds\n"
		"  --by B            rows per namespace (default), queue, clusterqueue or flavor\n"
		"  --format F        table (default), csv or json\n"
		"  --price F=P       price of one unit of flavor F's accelerator for an hour\n"
		"                    (repeatable; wins over the flavor's gpuq.dev/price-per-hour)\n"
		"  --policy-dir DIR  read the flavors' price annotations from these manifests\n"
		"  --help            this text\n"
		"\n"
		"Exit status: 0 done, 1 the store or the policy could not be read, 2 usage\n"
		"error.\n");
}

static int usage_error(const char *msg, const char *val)
{
	fprintf(stderr, "gpuq report usage: %s%s%s\n", msg, val ? " " : "", val ? val : "");
	fprintf(stderr, USAGE_LINE);
	return 2;
}

/* --help or -h anywhere among args. */
static bool help_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

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

static int parse_opts(int argc, char **argv, report_opts_t *o)
{
	gpuq_diag_t d = {{0}};

	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int rc = 0;

		if (!v && strcmp(a, "--state-dir") != 0 && strcmp(a, "--since") != 0 &&
		    strcmp(a, "--by") != 0 && strcmp(a, "--format") != 0 &&
		    strcmp(a, "--price") != 0 && strcmp(a, "--policy-dir") != 0)
			return usage_error("unknown option", a);
		if (!v)
			return usage_error("missing value for", a);
		i++;
		if (!strcmp(a, "--state-dir"))
			o->dir = v;
		else if (!strcmp(a, "--since")) {
			if (gpuq_duration_parse(v, &o->since_ms, &d))
				return usage_error("--since:", d.msg);
		} else if (!strcmp(a, "--by")) {
			if (parse_by(v, &o->by))
				return usage_error("--by: want namespace, queue, clusterqueue or "
						   "flavor, not",
						   v);
		} else if (!strcmp(a, "--format")) {
			if (strcmp(v, "table") != 0 && strcmp(v, "csv") != 0 &&
			    strcmp(v, "json") != 0)
				return usage_error("--format: want table, csv or json, not", v);
			o->format = v;
		} else if (!strcmp(a, "--price"))
			rc = parse_price(o, v);
		else if (!strcmp(a, "--policy-dir"))
			o->policy_dir = v;
		else
			return usage_error("unknown option", a);
		if (rc)
			return rc;
	}
	if (!o->dir)
		return usage_error("--state-dir is required", NULL);
	return 0;
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

/* The prices in force: the --price flags, then the price annotation of
 * each ResourceFlavor of --policy-dir that no flag names. *p (the loaded
 * policy, or NULL) is the caller's to unref after the last use of out:
 * the flavor names are its. */
static int prices(const report_opts_t *o, ledger_price_t *out, size_t *n, policy_t **p)
{
	ledger_price_t declared[POLICY_FLAVORS_MAX];
	size_t n_declared = 0;
	gpuq_diag_t d = {{0}};
	int rc;

	if (o->policy_dir) {
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

static const char *by_name(ledger_by_t by)
{
	static const char *const names[] = {"namespace", "localQueue", "clusterQueue", "flavor"};

	return names[by];
}

static void print_table(const report_opts_t *o, const ledger_report_t *r)
{
	printf("%-32s %-24s %14s %14s %12s\n", by_name(o->by), "resource", "nominal_hours",
	       "borrowed_hours", "cost");
	for (size_t i = 0; i < r->n_rows; i++)
		printf("%-32s %-24s %14.3f %14.3f %12.2f\n", r->rows[i].group, r->rows[i].resource,
		       r->rows[i].nominal_hours, r->rows[i].borrowed_hours, r->rows[i].cost);
	printf("window %" PRId64 "..%" PRId64 " ms", r->from_ms, r->to_ms);
	if (r->kept_from_ms != INT64_MIN)
		printf("; %.3f accelerator hours before %" PRId64 " ms dropped", r->dropped_hours,
		       r->kept_from_ms);
	if (r->unrecorded)
		printf("; %" PRIu64 " parts unrecorded (series cap)", r->unrecorded);
	printf("\n");
}

static void print_csv(const report_opts_t *o, const ledger_report_t *r)
{
	printf("%s,resource,nominal_hours,borrowed_hours,cost\n", by_name(o->by));
	for (size_t i = 0; i < r->n_rows; i++) /* names are DNS-like: no commas or quotes */
		printf("%s,%s,%.6f,%.6f,%.4f\n", r->rows[i].group, r->rows[i].resource,
		       r->rows[i].nominal_hours, r->rows[i].borrowed_hours, r->rows[i].cost);
}

static void print_json(const report_opts_t *o, const ledger_report_t *r)
{
	printf("{\"fromMs\":%" PRId64 ",\"toMs\":%" PRId64 ",\"by\":\"%s\",\"droppedHours\":%.6f,"
	       "\"unrecorded\":%" PRIu64 ",\"rows\":[",
	       r->from_ms, r->to_ms, by_name(o->by), r->dropped_hours, r->unrecorded);
	for (size_t i = 0; i < r->n_rows; i++)
		printf("%s\n{\"%s\":\"%s\",\"resource\":\"%s\",\"nominalHours\":%.6f,"
		       "\"borrowedHours\":%.6f,\"cost\":%.4f}",
		       i ? "," : "", by_name(o->by), r->rows[i].group, r->rows[i].resource,
		       r->rows[i].nominal_hours, r->rows[i].borrowed_hours, r->rows[i].cost);
	printf("]}\n");
}

int cmd_report(int argc, char **argv)
{
	report_opts_t o = {.since_ms = -1, .by = LEDGER_BY_NAMESPACE, .format = "table"};
	ledger_t *l = NULL;
	ledger_report_t r = {0};
	ledger_query_t q;
	ledger_price_t all[PRICES_ALL_MAX];
	size_t n_all = 0;
	policy_t *pol = NULL;
	int rc;

	if (help_asked(argc, argv)) {
		usage(stdout);
		return fflush(stdout) ? 1 : 0;
	}
	if (argc < 2 || strcmp(argv[1], "usage") != 0)
		return usage_error("want the report \"usage\"", argc > 1 ? argv[1] : NULL);
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc;
	if (prices(&o, all, &n_all, &pol) || load(o.dir, &l)) {
		rc = 1;
		goto done;
	}
	q = (ledger_query_t){o.since_ms < 0 ? 0 : ledger_clock(l) - o.since_ms,
			     ledger_clock(l),
			     ledger_clock(l),
			     o.by,
			     all,
			     n_all};
	rc = ledger_window(l, &q, &r);
	if (!rc) {
		if (!strcmp(o.format, "csv"))
			print_csv(&o, &r);
		else if (!strcmp(o.format, "json"))
			print_json(&o, &r);
		else
			print_table(&o, &r);
	}
done:
	policy_unref(pol);
	ledger_report_deinit(&r);
	ledger_destroy(l);
	return rc ? 1 : 0;
}

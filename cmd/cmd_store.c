/* gpuq store: check or dump a state store (see store/store.h, docs/store.md).
 * Both open the store read-only, so they are safe next to a running writer. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "engine/engine.h"
#include "engine/engine_store.h"
#include "queue/queue.h"
#include "sim/sim.h"
#include "store/store.h"

/* A dump line shows at most this many value bytes in hex (a record is at most
 * QUEUE_RECORD_MAX = 1 MiB, so by default every value is shown whole). */
#define DUMP_VALUE_MAX ((size_t)1 << 20)

static void usage_top(FILE *out)
{
	fprintf(out, "usage: gpuq store check --state-dir DIR [--trace FILE]\n"
		     "       gpuq store dump --state-dir DIR [--type T | --trace FILE]\n"
		     "\n"
		     "Inspect a gpuq state store (an LMDB environment) without changing it; both\n"
		     "are safe while gpuq is writing to it. Run `gpuq store SUBCOMMAND --help`.\n");
}

static void usage_check(FILE *out)
{
	fprintf(out,
		"usage: gpuq store check --state-dir DIR [--trace FILE]\n"
		"\n"
		"Open the store read-only, verify its schema version and record type table,\n"
		"read every record (which walks every LMDB page) and check each queue-core\n"
		"record's structure (key, length, encoding version). Prints the record count\n"
		"per type, map size and use, the commit sequence number and the content\n"
		"digest (equal digests = equal records). Exit 0 when sound, 1 otherwise, 2 on\n"
		"usage errors.\n"
		"\n"
		"With --trace FILE (the trace `gpuq simulate --state-dir DIR` ran), also decode\n"
		"every record: build a queue from the trace's policy, restore every core record\n"
		"into it and every simulator record, as a resume would, and cross-check them\n"
		"(each workload in the core is one the simulator holds pending or admitted, and\n"
		"the other way round). Prints the counts per state.\n"
		"\n"
		"  --state-dir DIR   the store directory (holds data.mdb and lock.mdb)\n"
		"  --trace FILE      decode and cross-check against this trace's policy\n"
		"  --help            show this help\n");
}

static void usage_dump(FILE *out)
{
	fprintf(out,
		"usage: gpuq store dump --state-dir DIR [--type T | --trace FILE]\n"
		"\n"
		"Print every record as one JSON object per line, in type then key order:\n"
		"  {\"type\":\"workloads\",\"id\":4,\"key\":\"...\",\"klen\":N,\"vlen\":N,\n"
		"   \"version\":1,\"value_hex\":\"...\"}\n"
		"A key that is not printable ASCII is shown as \"key_hex\". \"version\" (the\n"
		"encoding version byte) is given for the queue core's records.\n"
		"\n"
		"  --state-dir DIR   the store directory\n"
		"  --type T          only records of type T (name or number)\n"
		"  --trace FILE      instead, restore the store into a queue built from this\n"
		"                    trace's policy (as `store check --trace` does) and print\n"
		"                    it decoded: one line per ClusterQueue, then one per\n"
		"                    workload (state, wait reason, flavors, the core's words)\n"
		"  --help            show this help\n"
		"Exit 0 on success, 1 on failure, 2 on usage errors.\n");
}

typedef struct {
	const char *dir;   /* --state-dir */
	const char *type;  /* --type, or NULL */
	const char *trace; /* --trace, or NULL */
	bool help;	   /* --help */
} store_args_t;

/* Parse the options of a subcommand (argv[0] is its name). 0 or 2. */
static int args_parse(int argc, char **argv, bool with_type, store_args_t *a)
{
	static const struct option longopts[] = {
	    {"state-dir", required_argument, NULL, 'd'},
	    {"type", required_argument, NULL, 't'},
	    {"trace", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(a, 0, sizeof(*a));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'd') {
			a->dir = optarg;
		} else if (c == 't' && with_type) {
			a->type = optarg;
		} else if (c == 'r') {
			a->trace = optarg;
		} else if (c == 'h') {
			a->help = true;
		} else {
			fprintf(stderr, "gpuq store %s: unknown or incomplete option \"%s\"\n",
				argv[0], argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpuq store %s: unexpected argument \"%s\"\n", argv[0],
			argv[optind]);
		return 2;
	}
	if (a->type && a->trace) {
		fprintf(stderr, "gpuq store %s: --type and --trace do not go together\n", argv[0]);
		return 2;
	}
	if (!a->help && !a->dir) {
		fprintf(stderr, "gpuq store %s: --state-dir DIR is required\n", argv[0]);
		return 2;
	}
	return 0;
}

static char fault_msg[STORE_PATH_MAX + 200];
static size_t fault_len;

static void on_fault(int sig)
{
	(void)sig;
	(void)!write(2, fault_msg, fault_len); /* async-signal-safe */
	_exit(1);
}

void cmd_store_fault_guard(const char *dir)
{
	struct sigaction sa;
	int n = snprintf(fault_msg, sizeof(fault_msg),
			 "gpuq: state store %s: store corrupt: a fault reading data.mdb (a damaged "
			 "page); restore the store or remove it to start empty\n",
			 dir);

	fault_len = n > 0 && (size_t)n < sizeof(fault_msg) ? (size_t)n : 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, NULL);
	(void)sigaction(SIGSEGV, &sa, NULL);
}

static int open_ro(const char *cmd, const char *dir, store_t **s)
{
	store_opts_t opts;
	gpuq_diag_t diag = {{0}};
	int rc;

	store_opts_init(&opts);
	opts.read_only = true;
	cmd_store_fault_guard(dir);
	rc = store_open(dir, &opts, s, &diag);
	if (rc)
		fprintf(stderr, "gpuq store %s: %s\n", cmd,
			diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	return rc;
}

/* ---- check ---- */

typedef struct {
	bool queue_type;   /* records of this type are the queue core's */
	uint64_t records;  /* records seen */
	uint64_t bad;	   /* records failing the structural check */
	gpuq_diag_t first; /* the first failure, with its key */
} check_ctx_t;

/* Key as JSON-safe printable text, cut to fit (for messages and dumps). */
static bool key_printable(const unsigned char *key, size_t klen)
{
	for (size_t i = 0; i < klen; i++)
		if (key[i] < 0x20 || key[i] >= 0x7f)
			return false;
	return true;
}

static int check_record(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
			size_t vlen)
{
	check_ctx_t *c = ctx;
	gpuq_diag_t d = {{0}};

	c->records++;
	if (!c->queue_type || !engine_record_check(type, key, klen, val, vlen, &d))
		return 0;
	if (c->bad++ == 0) {
		if (key_printable(key, klen))
			gpuq_diag_set(&c->first, GPUQ_ECORRUPT, "key \"%.*s\": %s",
				      (int)(klen > 200 ? 200 : klen), (const char *)key, d.msg);
		else
			gpuq_diag_set(&c->first, GPUQ_ECORRUPT, "binary key of %zu bytes: %s", klen,
				      d.msg);
	}
	return 0;
}

static double mib(size_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

/* Scan every type's records into res[type]. GPUQ_OK or a store error. */
static int scan_types(store_t *s, check_ctx_t res[STORE_TYPE_MAX])
{
	store_opts_t want;

	store_opts_init(&want);
	engine_store_types(&want);
	for (unsigned i = 0; i < STORE_TYPE_MAX; i++) {
		int rc;
		memset(&res[i], 0, sizeof(res[i]));
		if (!store_type_name(s, i))
			continue;
		res[i].queue_type = want.types[i] != NULL; /* ids 1..4 are the core's, by id */
		rc = store_scan(s, i, check_record, &res[i]);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

/* Print one line per type and the problems found; returns how many. The
 * scans and info come from one read snapshot, so the counts must agree
 * with LMDB's. */
static int print_types(store_t *s, const store_info_t *info, const check_ctx_t res[STORE_TYPE_MAX],
		       uint64_t *total)
{
	store_opts_t want;
	int problems = 0;

	store_opts_init(&want);
	engine_store_types(&want);
	for (unsigned i = 0; i < STORE_TYPE_MAX; i++) {
		const char *name = store_type_name(s, i);
		const check_ctx_t *c = &res[i];
		if (!name)
			continue;
		*total += c->records;
		printf("  type %2u %-20s %10llu record(s)", i, name,
		       (unsigned long long)c->records);
		if (!want.types[i])
			printf(" (driver records)\n");
		else if (strcmp(name, want.types[i]) != 0)
			printf(" (queue core's \"%s\")\n", want.types[i]);
		else
			printf("\n");
		if (c->records != info->counts[i]) {
			fprintf(stderr,
				"gpuq store check: %s: scanned %llu records, LMDB counts %llu\n",
				name, (unsigned long long)c->records,
				(unsigned long long)info->counts[i]);
			problems++;
		}
		if (c->bad) {
			fprintf(stderr, "gpuq store check: %s: %llu bad record(s); first: %s\n",
				name, (unsigned long long)c->bad, c->first.msg);
			problems++;
		}
	}
	return problems;
}

static int run_check(const char *dir)
{
	static check_ctx_t res[STORE_TYPE_MAX];
	store_info_t info;
	store_t *s = NULL;
	uint64_t digest = 0, total = 0;
	int rc, problems;

	if (open_ro("check", dir, &s))
		return 1;
	/* one read snapshot for everything: a writer next to us may commit */
	rc = store_snapshot_begin(s);
	if (!rc)
		rc = store_info_get(s, &info);
	if (!rc)
		rc = store_digest(s, &digest);
	if (!rc)
		rc = scan_types(s, res);
	store_snapshot_end(s);
	if (rc) {
		fprintf(stderr, "gpuq store check: %s: reading the store failed: %s\n", dir,
			gpuq_strerror(rc));
		store_close(s);
		return 1;
	}
	printf("state store %s\n", dir);
	printf("schema %u, commit seq %llu, digest %016llx\n", info.schema,
	       (unsigned long long)info.seq, (unsigned long long)digest);
	printf("map %.2f MiB, used %.2f MiB (%.1f%%), page %zu B, reader slots used %u\n",
	       mib(info.map_size), mib(info.map_used),
	       info.map_size ? 100.0 * (double)info.map_used / (double)info.map_size : 0.0,
	       info.page_size, info.readers);
	if (info.schema == 0)
		printf("blank: the store's creation was interrupted before its first commit; "
		       "nothing is stored (the next writer initializes it)\n");
	problems = print_types(s, &info, res, &total);
	store_close(s);
	if (problems > 0) {
		printf("NOT SOUND: %d problem(s), see above\n", problems);
		return 1;
	}
	printf("ok: %llu record(s) read, structure sound\n", (unsigned long long)total);
	return fflush(stdout) ? 1 : 0;
}

/* Load the trace and restore the store into a core built from it. 0 or 1
 * (message printed). */
static int restore_with_trace(const char *cmd, const char *dir, const char *trace_path,
			      sim_trace_t **trace, sim_state_summary_t *sum, engine_t **engine)
{
	gpuq_diag_t diag = {{0}};
	int rc = sim_trace_load(trace_path, trace, &diag);

	if (rc) {
		fprintf(stderr, "gpuq store %s: --trace: %s\n", cmd,
			diag.msg[0] ? diag.msg : gpuq_strerror(rc));
		return 1;
	}
	rc = sim_state_check(*trace, dir, sum, engine, &diag);
	if (rc) {
		fprintf(stderr, "gpuq store %s: %s: restoring into the policy of %s: %s\n", cmd,
			dir, trace_path, diag.msg[0] ? diag.msg : gpuq_strerror(rc));
		return 1;
	}
	return 0;
}

/* check --trace: decode every record and cross-check core and simulator. */
static int run_deep_check(const char *dir, const char *trace_path)
{
	static const char *const states[] = {"not arrived", "pending",	    "admitted",
					     "finished",    "inadmissible", "dropped"};
	sim_trace_t *trace = NULL;
	sim_state_summary_t sum;
	int status = restore_with_trace("check", dir, trace_path, &trace, &sum, NULL);

	if (!status) {
		printf("decoded against %s: every record restored", trace_path);
		if (!sum.has_progress) {
			printf(" (core records only, no simulator run)\n");
		} else {
			printf("; core and simulator records agree\n");
			printf("simulator: step %llu at %lld ms%s, %zu of %zu arrivals delivered, "
			       "%zu preemption(s) logged\n",
			       (unsigned long long)sum.steps, (long long)sum.now_ms,
			       sum.done ? " (run over)" : "", sum.next_arrival, trace->n_arrivals,
			       sum.preemptions);
			printf("workloads:");
			for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
				printf("%s %zu %s", i ? "," : "", sum.by_state[i], states[i]);
			printf("\n");
		}
		printf("core: %zu pending, %zu admitted\n", sum.core_pending, sum.core_admitted);
		status = fflush(stdout) ? 1 : 0;
	}
	sim_trace_destroy(trace);
	return status;
}

/* ---- dump ---- */

typedef struct {
	const char *name; /* type name */
	bool queue_type;  /* has a version byte */
	FILE *out;	  /* where lines go */
} dump_ctx_t;

static void hex_write(FILE *out, const unsigned char *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		putc(digits[b[i] >> 4], out);
		putc(digits[b[i] & 15], out);
	}
}

static int dump_record(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
		       size_t vlen)
{
	dump_ctx_t *d = ctx;
	const unsigned char *k = key, *v = val;

	fprintf(d->out, "{\"type\":\"%s\",\"id\":%u,", d->name, type);
	if (key_printable(k, klen)) {
		fputs("\"key\":\"", d->out);
		gpuq_json_escape(key, klen, gpuq_put_file, d->out);
		putc('"', d->out);
	} else {
		fputs("\"key_hex\":\"", d->out);
		hex_write(d->out, k, klen);
		putc('"', d->out);
	}
	fprintf(d->out, ",\"klen\":%zu,\"vlen\":%zu", klen, vlen);
	if (d->queue_type && vlen > 0)
		fprintf(d->out, ",\"version\":%u", v[0]);
	fputs(",\"value_hex\":\"", d->out);
	hex_write(d->out, v, vlen < DUMP_VALUE_MAX ? vlen : DUMP_VALUE_MAX);
	fprintf(d->out, "\"%s}\n", vlen > DUMP_VALUE_MAX ? ",\"value_cut\":true" : "");
	return ferror(d->out) ? GPUQ_EIO : 0;
}

static void dump_cq(const queue_t *q, uint32_t cq)
{
	queue_stats_t st;

	if (queue_cq_stats(q, cq, &st))
		return;
	fputs("{\"kind\":\"ClusterQueue\",\"name\":", stdout);
	gpuq_json_fputs(stdout, queue_cq_name(q, cq));
	printf(",\"pending\":%u,\"admitted\":%u,\"admissions\":%llu,\"preemptions\":%llu,"
	       "\"evictions\":%llu,\"finishes\":%llu,\"usage\":[",
	       st.pending, st.admitted, (unsigned long long)st.admissions,
	       (unsigned long long)st.preemptions, (unsigned long long)st.evictions,
	       (unsigned long long)st.finishes);
	for (uint32_t f = 0, n = 0; f < queue_flavor_count(q); f++)
		for (uint32_t r = 0; r < queue_resource_count(q); r++) {
			queue_quota_view_t v;
			if (queue_cq_quota(q, cq, f, r, &v))
				continue;
			printf("%s{\"flavor\":", n++ ? "," : "");
			gpuq_json_fputs(stdout, queue_flavor_name(q, f));
			fputs(",\"resource\":", stdout);
			gpuq_json_fputs(stdout, queue_resource_name(q, r));
			printf(",\"nominal\":%lld,\"usage\":%lld}", (long long)v.nominal,
			       (long long)v.usage);
		}
	fputs("]}\n", stdout);
}

static void dump_workload(const queue_t *q, queue_wl_t id)
{
	queue_workload_view_t v;
	char why[512];

	if (queue_workload_view(q, id, &v))
		return;
	fputs("{\"kind\":\"Workload\",\"uid\":", stdout);
	gpuq_json_fputs(stdout, v.uid);
	fputs(",\"namespace\":", stdout);
	gpuq_json_fputs(stdout, v.namespace_);
	fputs(",\"name\":", stdout);
	gpuq_json_fputs(stdout, v.name);
	fputs(",\"localQueue\":", stdout);
	gpuq_json_fputs(stdout, queue_lq_name(q, v.lq));
	fputs(",\"clusterQueue\":", stdout);
	gpuq_json_fputs(stdout, queue_cq_name(q, v.cq));
	printf(",\"state\":\"%s\"", queue_wl_state_name(v.state));
	if (v.state == QUEUE_WL_PENDING)
		printf(",\"wait\":\"%s\"", queue_wait_name(v.wait));
	printf(",\"priority\":%d,\"pods\":%d,\"createdMs\":%lld,\"admittedMs\":%lld,"
	       "\"preemptions\":%u,\"requeues\":%u",
	       v.priority, v.pods, (long long)v.created_ms, (long long)v.admitted_ms, v.preemptions,
	       v.requeues);
	if (queue_workload_explain(q, v.uid, why, sizeof(why)) != GPUQ_ENOTFOUND) {
		fputs(",\"explain\":", stdout);
		gpuq_json_fputs(stdout, why);
	}
	fputs("}\n", stdout);
}

/* dump --trace: the restored queue, decoded. Workloads per ClusterQueue:
 * admitted by admission time, then pending in the order the next cycle
 * would try them. */
static int run_dump_decoded(const char *dir, const char *trace_path)
{
	static const queue_wl_state_t order[] = {QUEUE_WL_ADMITTED, QUEUE_WL_EVICTING,
						 QUEUE_WL_PENDING};
	sim_trace_t *trace = NULL;
	sim_state_summary_t sum;
	engine_t *e = NULL;
	const queue_t *q;
	queue_wl_t *ids = NULL;
	int status = restore_with_trace("dump", dir, trace_path, &trace, &sum, &e);

	q = e ? engine_core(e) : NULL;

	for (uint32_t cq = 0; !status && cq < queue_cq_count(q); cq++)
		dump_cq(q, cq);
	for (uint32_t cq = 0; !status && cq < queue_cq_count(q); cq++)
		for (size_t k = 0; !status && k < sizeof(order) / sizeof(order[0]); k++) {
			size_t n = queue_cq_workloads(q, cq, order[k], NULL, 0);
			queue_wl_t *grown;
			if (!n)
				continue;
			grown = realloc(ids, n * sizeof(*ids));
			if (!grown) {
				fprintf(stderr, "gpuq store dump: out of memory\n");
				status = 1;
				break;
			}
			ids = grown;
			n = queue_cq_workloads(q, cq, order[k], ids, n);
			for (size_t i = 0; i < n; i++)
				dump_workload(q, ids[i]);
		}
	if (!status && fflush(stdout)) {
		fprintf(stderr, "gpuq store dump: %s\n", gpuq_strerror(GPUQ_EIO));
		status = 1;
	}
	free(ids);
	engine_close(e);
	sim_trace_destroy(trace);
	return status;
}

/* Resolve --type as a name or a number. */
static int type_resolve(store_t *s, const char *arg, unsigned *type)
{
	char *end;
	unsigned long n;

	if (!store_type_find(s, arg, type))
		return 0;
	n = strtoul(arg, &end, 10);
	if (*arg && !*end && n < STORE_TYPE_MAX && store_type_name(s, (unsigned)n)) {
		*type = (unsigned)n;
		return 0;
	}
	fprintf(stderr, "gpuq store dump: --type \"%s\": no such record type in this store\n", arg);
	return 1;
}

static int run_dump(const char *dir, const char *type_arg)
{
	store_opts_t want;
	store_t *s = NULL;
	unsigned only = 0;
	int rc = 0;

	if (open_ro("dump", dir, &s))
		return 1;
	if (type_arg && type_resolve(s, type_arg, &only)) {
		store_close(s);
		return 1;
	}
	store_opts_init(&want);
	engine_store_types(&want);
	for (unsigned i = 0; i < STORE_TYPE_MAX && !rc; i++) {
		dump_ctx_t d = {store_type_name(s, i), false, stdout};
		if (!d.name || (type_arg && i != only))
			continue;
		d.queue_type = want.types[i] != NULL; /* by id */
		rc = store_scan(s, i, dump_record, &d);
	}
	store_close(s);
	if (rc || fflush(stdout)) {
		fprintf(stderr, "gpuq store dump: %s: %s\n", dir,
			gpuq_strerror(rc ? rc : GPUQ_EIO));
		return 1;
	}
	return 0;
}

int cmd_store(int argc, char **argv)
{
	store_args_t a;
	bool check;
	int rc;

	if (argc < 2) {
		usage_top(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage_top(stdout);
		return 0;
	}
	check = !strcmp(argv[1], "check");
	if (!check && strcmp(argv[1], "dump") != 0) {
		fprintf(stderr, "gpuq store: unknown subcommand \"%s\"\n\n", argv[1]);
		usage_top(stderr);
		return 2;
	}
	rc = args_parse(argc - 1, argv + 1, !check, &a);
	if (rc) {
		(check ? usage_check : usage_dump)(stderr);
		return rc;
	}
	if (a.help) {
		(check ? usage_check : usage_dump)(stdout);
		return 0;
	}
	if (check) {
		rc = run_check(a.dir);
		return rc || !a.trace ? rc : run_deep_check(a.dir, a.trace);
	}
	return a.trace ? run_dump_decoded(a.dir, a.trace) : run_dump(a.dir, a.type);
}

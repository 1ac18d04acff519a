/* gpuq store: check or dump a state store (see store/store.h, docs/store.md).
 * Both open the store read-only, so they are safe next to a running writer. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "store/store.h"

/* A dump line shows at most this many value bytes in hex (a record is at most
 * QUEUE_RECORD_MAX = 1 MiB, so by default every value is shown whole). */
#define DUMP_VALUE_MAX ((size_t)1 << 20)

static void usage_top(FILE *out)
{
	fprintf(out, "usage: gpuq store check --state-dir DIR\n"
		     "       gpuq store dump --state-dir DIR [--type T]\n"
		     "\n"
		     "Inspect a gpuq state store (an LMDB environment) without changing it; both\n"
		     "are safe while gpuq is writing to it. Run `gpuq store SUBCOMMAND --help`.\n");
}

static void usage_check(FILE *out)
{
	fprintf(out,
		"usage: gpuq store check --state-dir DIR\n"
		"\n"
		"Open the store read-only, verify its schema version and record type table,\n"
		"read every record (which walks every LMDB page) and check each queue-core\n"
		"record's structure (key, length, encoding version). Prints the record count\n"
		"per type, map size and use, the commit sequence number and the content\n"
		"digest (equal digests = equal records). Exit 0 when sound, 1 otherwise, 2 on\n"
		"usage errors.\n"
		"\n"
		"  --state-dir DIR   the store directory (holds data.mdb and lock.mdb)\n"
		"  --help            show this help\n");
}

static void usage_dump(FILE *out)
{
	fprintf(out, "usage: gpuq store dump --state-dir DIR [--type T]\n"
		     "\n"
		     "Print every record as one JSON object per line, in type then key order:\n"
		     "  {\"type\":\"workloads\",\"id\":4,\"key\":\"...\",\"klen\":N,\"vlen\":N,\n"
		     "   \"version\":1,\"value_hex\":\"...\"}\n"
		     "A key that is not printable ASCII is shown as \"key_hex\". \"version\" (the\n"
		     "encoding version byte) is given for the queue core's records.\n"
		     "\n"
		     "  --state-dir DIR   the store directory\n"
		     "  --type T          only records of type T (name or number)\n"
		     "  --help            show this help\n"
		     "Exit 0 on success, 1 on failure, 2 on usage errors.\n");
}

typedef struct {
	const char *dir;  /* --state-dir */
	const char *type; /* --type, or NULL */
	bool help;	  /* --help */
} store_args_t;

/* Parse the options of a subcommand (argv[0] is its name). 0 or 2. */
static int args_parse(int argc, char **argv, bool with_type, store_args_t *a)
{
	static const struct option longopts[] = {
	    {"state-dir", required_argument, NULL, 'd'},
	    {"type", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(a, 0, sizeof(*a));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'd') {
			a->dir = optarg;
		} else if (c == 't' && with_type) {
			a->type = optarg;
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
	if (!a->help && !a->dir) {
		fprintf(stderr, "gpuq store %s: --state-dir DIR is required\n", argv[0]);
		return 2;
	}
	return 0;
}

static int open_ro(const char *cmd, const char *dir, store_t **s)
{
	store_opts_t opts;
	gpuq_diag_t diag = {{0}};
	int rc;

	store_opts_init(&opts);
	opts.read_only = true;
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
	if (!c->queue_type || !store_record_check(type, key, klen, val, vlen, &d))
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

/* Check every type's records; prints one line per type. Returns the number
 * of problems found (0: sound) or a negative store error. */
static int check_types(store_t *s, const store_info_t *info, uint64_t *total)
{
	store_opts_t want;
	int problems = 0;

	store_opts_init(&want);
	store_opts_queue_types(&want);
	for (unsigned i = 0; i < STORE_TYPE_MAX; i++) {
		const char *name = store_type_name(s, i);
		check_ctx_t c = {0};
		int rc;
		if (!name)
			continue;
		c.queue_type = want.types[i] != NULL; /* ids 1..4 are the core's, by id */
		rc = store_scan(s, i, check_record, &c);
		if (rc)
			return rc;
		*total += c.records;
		printf("  type %2u %-20s %10llu record(s)", i, name, (unsigned long long)c.records);
		if (!want.types[i])
			printf(" (driver records)\n");
		else if (strcmp(name, want.types[i]) != 0)
			printf(" (queue core's \"%s\")\n", want.types[i]);
		else
			printf("\n");
		if (c.records != info->counts[i]) {
			fprintf(stderr,
				"gpuq store check: %s: scanned %llu records, LMDB counts %llu\n",
				name, (unsigned long long)c.records,
				(unsigned long long)info->counts[i]);
			problems++;
		}
		if (c.bad) {
			fprintf(stderr, "gpuq store check: %s: %llu bad record(s); first: %s\n",
				name, (unsigned long long)c.bad, c.first.msg);
			problems++;
		}
	}
	return problems;
}

static int run_check(const char *dir)
{
	store_info_t info;
	store_t *s = NULL;
	uint64_t digest = 0, total = 0;
	int rc, problems;

	if (open_ro("check", dir, &s))
		return 1;
	rc = store_info_get(s, &info);
	if (!rc)
		rc = store_digest(s, &digest);
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
	problems = check_types(s, &info, &total);
	store_close(s);
	if (problems < 0) {
		fprintf(stderr, "gpuq store check: %s: reading records failed: %s\n", dir,
			gpuq_strerror(problems));
		return 1;
	}
	if (problems > 0) {
		printf("NOT SOUND: %d problem(s), see above\n", problems);
		return 1;
	}
	printf("ok: %llu record(s) read, structure sound\n", (unsigned long long)total);
	return fflush(stdout) ? 1 : 0;
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
		for (size_t i = 0; i < klen; i++) {
			if (k[i] == '"' || k[i] == '\\')
				putc('\\', d->out);
			putc(k[i], d->out);
		}
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
	store_opts_queue_types(&want);
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
	return check ? run_check(a.dir) : run_dump(a.dir, a.type);
}

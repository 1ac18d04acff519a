#!/bin/sh
# Crash test of the state store (TAP). A writer program (compiled here from
# the heredoc below against store/*.c, so it needs no other module) commits
# batches in a loop and prints "seq N" after each commit returns. It is killed
# with kill -9 at random moments; after each kill:
#   - `$GPUQ_BIN store check` must pass (the store opens, every page reads),
#   - the stored commit seq S and the last seq P the writer printed satisfy
#     P <= S <= P + 1 (no committed batch lost; at most the one in flight),
#   - the writer's verifier finds every batch either whole or absent (each
#     batch stamps its records and records its size; no partial batch).
# The store starts with a 1 MiB map and is recreated every fifth kill, so
# kills also land during map growth (1 -> 16 MiB in the first ~40 commits).
# It also measures commits/s durable vs nosync (printed as TAP comments).
# A second writer drives the real queue core and persists each step's
# changed records (engine_stage) with its progress; after each of QKILLS
# kills, a fresh queue restored from the store (engine_restore) must
# hash equal to the state committed under the stored seq.
# Env: GPUQ_BIN (binary under test), CC, GPUQ_SEED (reproduce the kill times),
# KILLS (default 25), QKILLS (default 15).
set -u
CC=${CC:-cc}
KILLS=${KILLS:-25}
QKILLS=${QKILLS:-15}
# mawk's srand() misbehaves with seeds above 2^31: keep seeds to 16 bits
SEED=${GPUQ_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
. "$(dirname "$0")/tap.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-suite-store.XXXXXX") || exit 1
pid=
trap 'if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; fi; rm -rf "$TMP"' EXIT
echo "# seed $SEED (GPUQ_SEED=$SEED KILLS=$KILLS QKILLS=$QKILLS reproduces the kill times)"

cat >"$TMP/writer.c" <<'EOF'
/* Crash-test writer for the store. Modes:
 *   run DIR          commit batches forever, print "seq N" after each commit
 *   verify DIR       check that every batch is whole (exit 0) or say why (1)
 *   bench DIR SYNC MS RECORDS VLEN  commits/s of RECORDS x VLEN batches over MS ms
 *   grow DIR MIB MAP_MIB            write MIB MiB in 1 MiB batches from a map of MAP_MIB
 * Batch b (= the seq it commits) puts K_b records "b<b>-<i>" into workloads
 * (value: version 1, b, i, a filler derived from b and i), puts tenants
 * "k<b>" = K_b, and deletes batch b - WINDOW's records and size record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue/queue.h"
#include "store/store.h"

#define WINDOW 40 /* batches kept: ~40 x 256 KiB, so the map grows past 8 MiB */
#define PROGRESS 8

static int open_store(const char *dir, bool ro, bool nosync, size_t map, store_t **s)
{
	store_opts_t o;
	gpuq_diag_t d = {{0}};
	int rc;

	store_opts_init(&o);
	/* the queue core's ids and names (engine_store_types; this writer
	 * links store/ alone) */
	o.types[QUEUE_REC_META] = "queue_meta";
	o.types[QUEUE_REC_CQ] = "clusterqueues";
	o.types[QUEUE_REC_TENANT] = "tenants";
	o.types[QUEUE_REC_WORKLOAD] = "workloads";
	o.types[PROGRESS] = "progress";
	o.read_only = ro;
	o.nosync = nosync;
	o.map_initial = map;
	rc = store_open(dir, &o, s, &d);
	if (rc)
		fprintf(stderr, "writer: open: %s\n", d.msg);
	return rc;
}

static unsigned batch_size(unsigned long long b)
{
	return (unsigned)(b * 2654435761u % 64) + 1;
}

static size_t fill(unsigned char *v, unsigned long long b, unsigned i)
{
	size_t len = 16 + (size_t)((b * 31 + i * 977) % 16000);

	v[0] = 1;
	memcpy(v + 1, &b, 8);
	memcpy(v + 9, &i, 4);
	for (size_t j = 13; j < len; j++)
		v[j] = (unsigned char)(b + i + j);
	return len;
}

static int batch_keys(store_txn_t *t, unsigned long long b, bool del)
{
	unsigned char v[16100];
	char k[48];
	unsigned kb = batch_size(b);

	for (unsigned i = 0; i < kb; i++) {
		int n = snprintf(k, sizeof(k), "b%012llu-%03u", b, i);
		if (del)
			store_del(t, QUEUE_REC_WORKLOAD, k, (size_t)n);
		else
			store_put(t, QUEUE_REC_WORKLOAD, k, (size_t)n, v, fill(v, b, i));
	}
	snprintf(k, sizeof(k), "k%012llu", b);
	if (del)
		return store_del(t, QUEUE_REC_TENANT, k, strlen(k));
	v[0] = 1;
	memcpy(v + 1, &kb, 4);
	return store_put(t, QUEUE_REC_TENANT, k, strlen(k), v, 5);
}

static int run(const char *dir)
{
	store_t *s;
	store_txn_t *t;
	unsigned long long seq = 0;
	uint64_t cur;

	if (open_store(dir, false, false, 1 << 20, &s) || store_seq_get(s, &cur))
		return 1;
	seq = cur;
	for (;;) {
		unsigned long long b = seq + 1;
		if (store_txn_begin(s, &t))
			return 1;
		batch_keys(t, b, false);
		if (b > WINDOW)
			batch_keys(t, b - WINDOW, true);
		store_put(t, PROGRESS, "last", 4, &b, 8);
		if (store_txn_commit(t, &cur))
			return 1;
		seq = cur;
		printf("seq %llu\n", seq);
		fflush(stdout);
	}
}

typedef struct {
	unsigned long long last; /* last batch */
	unsigned counts[WINDOW]; /* records seen per batch in the window */
	int bad;                 /* problems */
} verify_t;

static int verify_wl(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
		     size_t vlen)
{
	verify_t *v = ctx;
	unsigned char want[16100];
	unsigned long long b;
	unsigned i;
	char k[48];

	(void)type;
	if (vlen < 13)
		return v->bad++, 0;
	memcpy(&b, (const unsigned char *)val + 1, 8);
	memcpy(&i, (const unsigned char *)val + 9, 4);
	snprintf(k, sizeof(k), "b%012llu-%03u", b, i);
	if (klen != strlen(k) || memcmp(key, k, klen) || vlen != fill(want, b, i) ||
	    memcmp(val, want, vlen) || b > v->last || b + WINDOW <= v->last) {
		fprintf(stderr, "verify: bad record %.*s (batch %llu, last %llu)\n", (int)klen,
			(const char *)key, b, v->last);
		return v->bad++, 0;
	}
	v->counts[b % WINDOW]++;
	return 0;
}

static int verify(const char *dir)
{
	store_t *s;
	store_info_t info;
	verify_t v = {0};
	void *p;
	size_t n;
	int rc;

	if (open_store(dir, true, false, 1 << 20, &s))
		return 1;
	if (store_info_get(s, &info))
		return 1;
	rc = store_type_name(s, PROGRESS) ? store_get(s, PROGRESS, "last", 4, &p, &n)
					  : GPUQ_ENOTFOUND; /* blank: creation interrupted */
	if (rc == GPUQ_ENOTFOUND && info.seq == 0) {
		store_close(s);
		printf("empty\n");
		return 0;
	}
	if (rc || n != 8)
		return fprintf(stderr, "verify: no progress record\n"), 1;
	memcpy(&v.last, p, 8);
	free(p);
	if (v.last != info.seq)
		return fprintf(stderr, "verify: last batch %llu != seq %llu\n", v.last,
			       (unsigned long long)info.seq),
		       1;
	store_scan(s, QUEUE_REC_WORKLOAD, verify_wl, &v);
	for (unsigned long long b = v.last >= WINDOW ? v.last - WINDOW + 1 : 1; b <= v.last; b++)
		if (v.counts[b % WINDOW] != batch_size(b)) {
			fprintf(stderr, "verify: batch %llu has %u of %u records\n", b,
				v.counts[b % WINDOW], batch_size(b));
			v.bad++;
		}
	if (info.counts[QUEUE_REC_TENANT] != (v.last < WINDOW ? v.last : WINDOW)) {
		fprintf(stderr, "verify: %llu size records\n",
			(unsigned long long)info.counts[QUEUE_REC_TENANT]);
		v.bad++;
	}
	printf("seq %llu map %zu\n", (unsigned long long)info.seq, info.map_size);
	store_close(s);
	return v.bad ? 1 : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Commit batches of `records` x vlen bytes for `ms` milliseconds (at least
 * one); print commits per second. */
static int bench(const char *dir, bool nosync, int ms, int records, size_t vlen)
{
	unsigned char *v = calloc(1, vlen + 1);
	store_t *s;
	store_txn_t *t;
	double t0;
	int commits = 0;
	char k[32];

	if (!v || open_store(dir, false, nosync, 64 << 20, &s))
		return 1;
	v[0] = 1;
	t0 = now_s();
	for (int c = 0; c == 0 || now_s() - t0 < ms / 1000.0; c++, commits++) {
		store_txn_begin(s, &t);
		for (int r = 0; r < records; r++) {
			int n = snprintf(k, sizeof(k), "ns-%d/wl-%d", r % 7, (c * 13 + r) % 5000);
			store_put(t, QUEUE_REC_WORKLOAD, k, (size_t)n, v, vlen);
		}
		if (store_txn_commit(t, NULL))
			return 1;
	}
	printf("%.0f\n", commits / (now_s() - t0));
	store_close(s);
	free(v);
	return 0;
}

static int grow(const char *dir, int mib, int map_mib)
{
	unsigned char *v = calloc(1, 16 << 10);
	store_info_t info;
	store_t *s;
	store_txn_t *t;
	double t0;
	char k[32];

	if (!v || open_store(dir, false, true, (size_t)map_mib << 20, &s))
		return 1;
	v[0] = 1;
	t0 = now_s();
	for (int b = 0; b < mib; b++) {
		store_txn_begin(s, &t);
		for (int r = 0; r < 64; r++) {
			int n = snprintf(k, sizeof(k), "g%06d-%02d", b, r);
			store_put(t, QUEUE_REC_WORKLOAD, k, (size_t)n, v, 16 << 10);
		}
		if (store_txn_commit(t, NULL))
			return 1;
	}
	store_info_get(s, &info);
	printf("%.3f s, %u growths, map %zu MiB, used %zu MiB, records %llu\n", now_s() - t0,
	       info.grows, info.map_size >> 20, info.map_used >> 20,
	       (unsigned long long)info.counts[QUEUE_REC_WORKLOAD]);
	store_close(s);
	free(v);
	return 0;
}

static int num(const char *s)
{
	return (int)strtol(s, NULL, 10);
}

int main(int argc, char **argv)
{
	gpuq_log_set_level(GPUQ_LOG_WARN);
	if (argc == 3 && !strcmp(argv[1], "run"))
		return run(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "verify"))
		return verify(argv[2]);
	if (argc == 7 && !strcmp(argv[1], "bench"))
		return bench(argv[2], !strcmp(argv[3], "nosync"), num(argv[4]), num(argv[5]),
			     (size_t)num(argv[6]));
	if (argc == 5 && !strcmp(argv[1], "grow"))
		return grow(argv[2], num(argv[3]), num(argv[4]));
	fprintf(stderr, "usage: writer run|verify DIR | bench DIR sync|nosync MS R VLEN | "
			"grow DIR MIB MAP_MIB\n");
	return 2;
}
EOF

cat >"$TMP/qwriter.c" <<'EOF'
/* Queue-level crash writer: drives the real queue core (arrivals, cycles
 * with preemption and borrowing, completions, deletions, Ready timeouts) and
 * persists each step's changed records plus its own progress in one batch.
 *   run DIR SEED   loop forever; print "pending N fp F" before commit N and
 *                  "seq N fp F" after it, F an order-independent hash of
 *                  every live record of the queue
 *   verify DIR     restore a fresh queue from the store; print "seq N fp F"
 * After a kill, the restored queue's F must equal the F printed for its seq. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "queue/queue.h"
#include "store/store.h"

#define PROGRESS STORE_TYPE_DRIVER_FIRST

static void policy_build(queue_t **out)
{
	static const char *const covered[] = {"cpu", "nvidia.com/gpu"};
	static const queue_quota_spec_t qa[] = {{16000, QUEUE_UNLIMITED, QUEUE_UNLIMITED},
						{4, 2, QUEUE_UNLIMITED}};
	static const queue_quota_spec_t qb[] = {{16000, QUEUE_UNLIMITED, QUEUE_UNLIMITED},
						{4, QUEUE_UNLIMITED, 2}};
	const queue_flavor_quota_spec_t fa = {"a100", qa}, fb = {"a100", qb};
	const queue_group_spec_t ga = {covered, 2, &fa, 1}, gb = {covered, 2, &fb, 1};
	queue_flavor_spec_t flavor = {0};
	queue_cq_spec_t cq = {0};
	queue_config_t cfg;
	queue_t *q = NULL;
	gpuq_diag_t d = {{0}};
	int rc;

	queue_config_default(&cfg);
	cfg.ready_timeout_ms = 20000;
	rc = queue_create(&cfg, &q);
	flavor.name = "a100";
	rc = rc ? rc : queue_flavor_add(q, &flavor, NULL, &d);
	cq.cohort = "lab";
	cq.n_groups = 1;
	cq.within = QUEUE_WITHIN_LOWER_PRIORITY;
	cq.reclaim = QUEUE_RECLAIM_ANY;
	cq.name = "cq-a";
	cq.groups = &ga;
	rc = rc ? rc : queue_cq_add(q, &cq, NULL, &d);
	cq.name = "cq-b";
	cq.groups = &gb;
	rc = rc ? rc : queue_cq_add(q, &cq, NULL, &d);
	rc = rc ? rc : queue_lq_add(q, "t1", "lq", "cq-a", 0, NULL, &d);
	rc = rc ? rc : queue_lq_add(q, "t2", "lq", "cq-a", 2000, NULL, &d);
	rc = rc ? rc : queue_lq_add(q, "t3", "lq", "cq-b", 0, NULL, &d);
	rc = rc ? rc : queue_lq_add(q, "t4", "lq", "cq-b", 0, NULL, &d);
	if (rc) {
		fprintf(stderr, "qwriter: policy: %s %s\n", gpuq_strerror(rc), d.msg);
		exit(1);
	}
	*out = q;
}

static int open_store(const char *dir, bool ro, store_t **s)
{
	store_opts_t o;
	gpuq_diag_t d = {{0}};
	int rc;

	store_opts_init(&o);
	engine_store_types(&o);
	o.types[PROGRESS] = "progress";
	o.read_only = ro;
	o.map_initial = 1 << 20;
	rc = store_open(dir, &o, s, &d);
	if (rc)
		fprintf(stderr, "qwriter: open: %s\n", d.msg);
	return rc;
}

/* Order-independent hash of every live record: sum of FNV-1a of each. */
static unsigned long long fingerprint(queue_t *q)
{
	static unsigned char buf[QUEUE_RECORD_MAX];
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen, len;
	unsigned long long sum = 0;

	if (queue_dirty_all(q))
		exit(1);
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		unsigned long long h = 0xcbf29ce484222325ULL;
		if (queue_record_encode(q, type, key, klen, buf, sizeof(buf), &len))
			continue;
		h = (h ^ (unsigned)type) * 0x100000001b3ULL;
		for (size_t i = 0; i < klen; i++)
			h = (h ^ key[i]) * 0x100000001b3ULL;
		h = (h ^ 0xff) * 0x100000001b3ULL;
		for (size_t i = 0; i < len; i++)
			h = (h ^ buf[i]) * 0x100000001b3ULL;
		sum += h;
	}
	queue_dirty_clear(q);
	return sum;
}

/* progress: virtual time and step, 16 bytes */
static int restore(store_t *s, queue_t *q, long long *now, long long *step)
{
	gpuq_diag_t d = {{0}};
	void *v;
	size_t n;
	int rc = store_type_name(s, PROGRESS) ? store_get(s, PROGRESS, "p", 1, &v, &n)
					      : GPUQ_ENOTFOUND; /* blank store */

	*now = 0;
	*step = 0;
	if (rc == GPUQ_ENOTFOUND)
		return 0;
	if (rc || n != 16)
		return fprintf(stderr, "qwriter: progress record\n"), 1;
	memcpy(now, v, 8);
	memcpy(step, (char *)v + 8, 8);
	free(v);
	rc = engine_restore(s, q, &d);
	if (rc)
		fprintf(stderr, "qwriter: restore: %s: %s\n", gpuq_strerror(rc), d.msg);
	return rc;
}

static void add(queue_t *q, long long step, int i, unsigned *seed, long long now)
{
	static const char *const ns[] = {"t1", "t2", "t3", "t4"};
	char uid[48];
	queue_request_t req[2] = {{"cpu", 1000}, {"nvidia.com/gpu", 1 + rand_r(seed) % 3}};
	queue_podset_spec_t ps = {0};
	queue_workload_spec_t wl = {0};

	snprintf(uid, sizeof(uid), "w%lld-%d", step, i);
	ps.name = "main";
	ps.count = 1;
	ps.requests = req;
	ps.n_requests = 2;
	wl.namespace_ = ns[rand_r(seed) % 4];
	wl.name = uid;
	wl.uid = uid;
	wl.local_queue = "lq";
	wl.priority = rand_r(seed) % 3;
	wl.created_ms = now;
	wl.podsets = &ps;
	wl.n_podsets = 1;
	queue_workload_add(q, &wl, now, NULL, NULL);
}

/* Finish, mark Ready or delete a few workloads picked at random. */
static void churn(queue_t *q, unsigned *seed, long long now)
{
	char uid[2][64];
	int n = 0;

	for (queue_wl_t id = queue_workload_next(q, QUEUE_NONE); id != QUEUE_NONE && n < 2;
	     id = queue_workload_next(q, id)) {
		queue_workload_view_t v;
		if (queue_workload_view(q, id, &v) || rand_r(seed) % 3)
			continue;
		snprintf(uid[n], sizeof(uid[n]), "%s", v.uid);
		n++;
	}
	for (int i = 0; i < n; i++) {
		int r = rand_r(seed) % 4;
		if (r == 0)
			queue_workload_finish(q, uid[i], now);
		else if (r == 1)
			queue_workload_pods_ready(q, uid[i], now);
		else if (r == 2)
			queue_workload_delete(q, uid[i], now);
	}
}

static int run(const char *dir, unsigned seed)
{
	store_t *s;
	store_txn_t *t;
	queue_t *q;
	long long now, step;
	uint64_t seq;
	unsigned long long fp;
	unsigned char prog[16];

	policy_build(&q);
	if (open_store(dir, false, &s) || restore(s, q, &now, &step) || store_seq_get(s, &seq))
		return 1;
	seed ^= (unsigned)step * 2654435761u;
	for (;;) {
		step++;
		now += 1000 + rand_r(&seed) % 4000;
		for (int i = rand_r(&seed) % 3; i > 0; i--)
			add(q, step, i, &seed, now);
		churn(q, &seed, now);
		queue_tick(q, now, NULL);
		queue_cycle_run(q, now, NULL);
		memcpy(prog, &now, 8);
		memcpy(prog + 8, &step, 8);
		if (store_txn_begin(s, &t))
			return 1;
		engine_stage(t, q);
		store_put(t, PROGRESS, "p", 1, prog, 16);
		/* the batch holds copies: hash the state it commits now (this
		 * clears the changed set), so "seq" prints right after the commit */
		fp = fingerprint(q);
		printf("pending %llu fp %016llx\n", (unsigned long long)seq + 1, fp);
		fflush(stdout);
		if (store_txn_commit(t, &seq))
			return 1;
		printf("seq %llu fp %016llx\n", (unsigned long long)seq, fp);
		fflush(stdout);
	}
}

static int verify(const char *dir)
{
	store_t *s;
	queue_t *q;
	long long now, step;
	uint64_t seq;

	policy_build(&q);
	if (open_store(dir, true, &s) || restore(s, q, &now, &step) || store_seq_get(s, &seq))
		return 1;
	printf("seq %llu fp %016llx\n", (unsigned long long)seq, fingerprint(q));
	store_close(s);
	queue_destroy(q);
	return 0;
}

int main(int argc, char **argv)
{
	gpuq_log_set_level(GPUQ_LOG_WARN);
	if (argc == 4 && !strcmp(argv[1], "run"))
		return run(argv[2], (unsigned)strtoul(argv[3], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "verify"))
		return verify(argv[2]);
	fprintf(stderr, "usage: qwriter run DIR SEED | verify DIR\n");
	return 2;
}
EOF

# Under `make SANITIZE=address test` the writers are sanitized too.
WFLAGS="-std=c11 -D_GNU_SOURCE -O2 -g -I."
if [ "${SANITIZE:-}" = address ]; then
	WFLAGS="$WFLAGS -fsanitize=address,undefined -fno-omit-frame-pointer"
fi

W=$TMP/writer
if $CC $WFLAGS -o "$W" "$TMP/writer.c" store/store.c store/pages.c store/files.c \
	base/base.c base/text.c -llmdb 2>"$TMP/cc.log"; then
	ok "crash-test writer compiles against store/"
else
	notok "crash-test writer compiles against store/"
	sed 's/^/# /' "$TMP/cc.log"
	echo "1..$n"
	exit 1
fi

if [ -x "${GPUQ_BIN:-}" ] && "$GPUQ_BIN" store check --help >/dev/null 2>&1; then
	ok "GPUQ_BIN=$GPUQ_BIN has store check"
else
	notok "GPUQ_BIN (${GPUQ_BIN:-unset}) is not a gpuq with store check"
	echo "1..$n"
	exit 1
fi

# Throughput: a realistic batch is one step's dirty records, ~20 records of
# ~300 bytes (a few workloads, their CQ and tenant records).
sync_rate=$("$W" bench "$TMP/bench-sync" sync 1500 20 300)
nosync_rate=$("$W" bench "$TMP/bench-nosync" nosync 1500 20 300)
if [ -n "$sync_rate" ] && [ -n "$nosync_rate" ]; then
	ok "throughput measured: durable $sync_rate commits/s, nosync $nosync_rate commits/s (20 x 300 B)"
else
	notok "throughput benchmark failed"
fi
grow_small=$("$W" grow "$TMP/grow-small" 50 1)
grow_big=$("$W" grow "$TMP/grow-big" 50 64)
case "$grow_small" in
*"map 64 MiB"*"records 3200") ok "50 MiB from a 1 MiB map: $grow_small; from 64 MiB: $grow_big" ;;
*) notok "growth from 1 MiB: '$grow_small'" ;;
esac

# first_line FILE REGEX PID: wait until FILE has a line matching REGEX (the
# writer's first commit returned), or PID exits, or 60 s pass.
first_line() {
	fl_deadline=$(($(date +%s) + 60))
	while ! grep -qE "$2" "$1" 2>/dev/null; do
		kill -0 "$3" 2>/dev/null || return 0
		[ "$(date +%s)" -lt "$fl_deadline" ] || return 0
		sleep 0.01
	done
}

# kill -9 loop
DIR=$TMP/state
delays=$(awk -v seed="$SEED" -v n="$KILLS" 'BEGIN { srand(seed);
	for (i = 0; i < n; i++) { r = rand(); printf "%.3f\n", 0.01 + r * r * 0.4 } }')
k=0
last_stored=0
max_map=0
for d in $delays; do
	k=$((k + 1))
	# every fifth run starts from an empty store, so short kills hit map growth
	if [ $((k % 5)) -eq 1 ]; then
		rm -rf "$DIR"
		last_stored=0
	fi
	"$W" run "$DIR" >"$TMP/out" 2>"$TMP/err" &
	pid=$!
	# the random delay counts from the writer's first committed batch (a
	# condition, not a time: a slow ASan start must not move the kill
	# before the store exists)
	first_line "$TMP/out" '^seq [0-9]+$' "$pid"
	sleep "$d"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	# last complete "seq N" line the writer printed (a kill may cut a line)
	printed=$(grep -E '^seq [0-9]+$' "$TMP/out" | tail -n 1 | cut -d' ' -f2)
	printed=${printed:-$last_stored}
	if ! "$GPUQ_BIN" store check --state-dir "$DIR" >"$TMP/check" 2>&1; then
		notok "kill $k after ${d}s: gpuq store check failed"
		sed 's/^/# /' "$TMP/check"
		continue
	fi
	stored=$(sed -n 's/^schema [0-9]*, commit seq \([0-9]*\),.*/\1/p' "$TMP/check")
	if ! "$W" verify "$DIR" >"$TMP/verify" 2>&1; then
		notok "kill $k after ${d}s: a batch is partial"
		sed 's/^/# /' "$TMP/verify"
		continue
	fi
	if [ -n "$stored" ] && [ "$printed" -le "$stored" ] && [ "$stored" -le $((printed + 1)) ] &&
		[ "$stored" -ge "$last_stored" ]; then
		ok "kill $k after ${d}s: check ok, printed seq $printed, stored $stored, batches whole"
	else
		notok "kill $k after ${d}s: printed seq $printed, stored '${stored}', before $last_stored"
		sed 's/^/# /' "$TMP/check" "$TMP/err"
	fi
	last_stored=${stored:-$last_stored}
	map=$(sed -n 's/^map \([0-9]*\)\.[0-9]* MiB.*/\1/p' "$TMP/check")
	[ -n "$map" ] && [ "$map" -gt "$max_map" ] && max_map=$map
done

# After the loop: the store grew from 1 MiB; check twice gives one digest;
# dump prints one line per record.
if [ "$max_map" -gt 1 ]; then
	ok "map grew from 1 MiB to $max_map MiB during the kill loop"
else
	notok "map did not grow during the kill loop ($max_map MiB)"
fi
"$GPUQ_BIN" store check --state-dir "$DIR" >"$TMP/check2" 2>&1
d1=$(grep -o 'digest [0-9a-f]*' "$TMP/check")
d2=$(grep -o 'digest [0-9a-f]*' "$TMP/check2")
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then ok "digest stable: $d1"; else notok "digest '$d1' vs '$d2'"; fi
lines=$("$GPUQ_BIN" store dump --state-dir "$DIR" --type workloads | wc -l)
count=$(sed -n 's/^ *type  4 workloads *\([0-9]*\) record.*/\1/p' "$TMP/check")
if [ -n "$count" ] && [ "$lines" -eq "$count" ]; then
	ok "dump --type workloads prints $lines lines = check's count"
else
	notok "dump printed $lines lines, check counted '$count'"
fi
"$GPUQ_BIN" store dump --state-dir "$DIR" --type progress >"$TMP/dump" 2>&1
if grep -q '^{"type":"progress","id":8,"key":"last","klen":4,"vlen":8,"value_hex":"' "$TMP/dump"; then
	ok "dump of a driver type prints JSON"
else
	notok "dump of the progress type"
	sed 's/^/# /' "$TMP/dump"
fi

# A damaged data.mdb is refused ("store corrupt", exit 1), never a crash and
# never taken for a blank store: truncated to 3 pages, emptied, removed.
PAGE=$(getconf PAGESIZE)
for how in truncated emptied removed; do
	rm -rf "$TMP/dmg" && cp -r "$DIR" "$TMP/dmg"
	case $how in
	truncated) truncate -s $((3 * PAGE)) "$TMP/dmg/data.mdb" ;;
	emptied) : >"$TMP/dmg/data.mdb" ;;
	removed) rm -f "$TMP/dmg/data.mdb" ;;
	esac
	"$GPUQ_BIN" store check --state-dir "$TMP/dmg" >"$TMP/dmg.out" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -q 'store corrupt' "$TMP/dmg.out"; then
		ok "data.mdb $how: check refuses it, exit 1 ($(head -n 1 "$TMP/dmg.out"))"
	else
		notok "data.mdb $how: check exit $rc: $(head -n 1 "$TMP/dmg.out")"
	fi
done
# Single-byte damage anywhere in data.mdb: check answers (exit 0 or 1), it
# does not die of a signal. (Most bytes of a grown store are free pages: a
# flip there changes nothing; one in a record fails its checksum, see
# test_store's checksum_catches_a_flipped_bit.)
size=$(stat -c %s "$DIR/data.mdb")
crashes=0
refused=0
for i in $(seq 1 60); do
	rm -rf "$TMP/dmg" && cp -r "$DIR" "$TMP/dmg"
	off=$(awk -v seed="$((SEED + i))" -v n="$size" 'BEGIN { srand(seed); printf "%d", rand() * n }')
	printf '\377' | dd of="$TMP/dmg/data.mdb" bs=1 seek="$off" conv=notrunc 2>/dev/null
	"$GPUQ_BIN" store check --state-dir "$TMP/dmg" >"$TMP/dmg.out" 2>&1
	rc=$?
	[ $rc -gt 1 ] && { crashes=$((crashes + 1)); echo "# byte $off: exit $rc"; }
	[ $rc -eq 1 ] && refused=$((refused + 1))
done
if [ "$crashes" -eq 0 ]; then
	ok "60 single-byte damages: check exits 0 or 1 every time ($refused refused)"
else
	notok "60 single-byte damages: $crashes ended by a signal"
fi

# Damaged pages: LMDB trusts its pages and asserts on a damaged one
# (a zeroed first data page: "Assertion 'IS_LEAF(mp)' failed in
# mdb_cursor_next", SIGABRT); gpuq checks every page before LMDB reads it.
# A simulator's store (a few dozen pages) gets each page from 2 on (0 and 1
# are LMDB's meta pages) damaged in turn, five ways: zeroed, all ones, its
# header zeroed, the page before copied over it, one byte flipped at a
# seeded offset. Every time `store check` either refuses the store ("store
# corrupt", exit 1) or reads exactly the content it held (exit 0 and the
# same digest: the page was free or the bytes unused).
SIM=$TMP/sim
"$GPUQ_BIN" simulate examples/traces/gpu-cluster.yaml --state-dir "$SIM" --no-sync --quiet \
	--out /dev/null
"$GPUQ_BIN" store check --state-dir "$SIM" >"$TMP/sim.out" 2>&1
sim_digest=$(grep -o 'digest [0-9a-f]*' "$TMP/sim.out")
sim_pages=$(($(stat -c %s "$SIM/data.mdb") / PAGE))
# damage_page FILE PAGE HOW
damage_page() {
	case $3 in
	zero) dd if=/dev/zero of="$1" bs="$PAGE" seek="$2" count=1 conv=notrunc 2>/dev/null ;;
	ones) tr '\000' '\377' </dev/zero | dd of="$1" bs="$PAGE" seek="$2" count=1 \
		iflag=fullblock conv=notrunc 2>/dev/null ;;
	header) dd if=/dev/zero of="$1" bs=16 seek=$(($2 * PAGE / 16)) count=1 conv=notrunc \
		2>/dev/null ;;
	previous) dd if="$1" of="$1.prev" bs="$PAGE" skip=$(($2 - 1)) count=1 2>/dev/null &&
		dd if="$1.prev" of="$1" bs="$PAGE" seek="$2" count=1 conv=notrunc 2>/dev/null ;;
	flip)
		fo=$(awk -v seed="$((SEED + $2))" -v n="$PAGE" 'BEGIN { srand(seed); printf "%d", rand() * n }')
		printf '\132' | dd of="$1" bs=1 seek=$(($2 * PAGE + fo)) conv=notrunc 2>/dev/null ;;
	esac
}
if [ -n "$sim_digest" ] && [ "$sim_pages" -gt 20 ]; then
	ok "a simulator's store to damage: $sim_pages pages, $sim_digest"
else
	notok "a simulator's store to damage: '$sim_digest', $sim_pages pages"
fi
for how in zero ones header previous flip; do
	wrong=0
	refused=0
	pg=2
	while [ "$pg" -lt "$sim_pages" ]; do
		rm -rf "$TMP/dmg" && cp -r "$SIM" "$TMP/dmg"
		damage_page "$TMP/dmg/data.mdb" "$pg" "$how"
		"$GPUQ_BIN" store check --state-dir "$TMP/dmg" >"$TMP/dmg.out" 2>&1
		rc=$?
		if [ $rc -eq 1 ] && grep -q 'store corrupt' "$TMP/dmg.out"; then
			refused=$((refused + 1))
		elif [ $rc -ne 0 ] || ! grep -q "$sim_digest" "$TMP/dmg.out"; then
			wrong=$((wrong + 1))
			echo "# page $pg $how: exit $rc: $(grep -v '^  ' "$TMP/dmg.out" | head -n 2)"
		fi
		pg=$((pg + 1))
	done
	if [ "$wrong" -eq 0 ] && [ "$refused" -gt 0 ]; then
		ok "each page $how: refused as corrupt ($refused) or read intact, never a crash"
	else
		notok "each page $how: $wrong neither refused as corrupt nor read intact ($refused refused)"
	fi
done
# The main tree's root page zeroed (the page a cursor reads first; which page
# that is depends on the store's history, so it is read from the newer of the
# two meta pages: md_root of the main DB at byte 128, txnid at byte 144, each
# page's meta after its 16-byte header): both readers say so and exit 1.
main_root() {
	python3 -c 'import struct,sys
d=open(sys.argv[1],"rb").read(); p=int(sys.argv[2])
m=[(struct.unpack_from("<Q",d,i*p+144)[0],struct.unpack_from("<Q",d,i*p+128)[0]) for i in (0,1)]
print(max(m)[1])' "$1" "$PAGE"
}
rm -rf "$TMP/dmg" && cp -r "$SIM" "$TMP/dmg"
root=$(main_root "$TMP/dmg/data.mdb")
echo "# the main tree's root: page $root"
damage_page "$TMP/dmg/data.mdb" "$root" zero
"$GPUQ_BIN" store check --state-dir "$TMP/dmg" >"$TMP/dmg.out" 2>&1
rc=$?
"$GPUQ_BIN" simulate examples/traces/gpu-cluster.yaml --state-dir "$TMP/dmg" --quiet \
	--out /dev/null >"$TMP/dmg2.out" 2>&1
rc2=$?
if [ $rc -eq 1 ] && grep -q 'store corrupt' "$TMP/dmg.out" && [ $rc2 -eq 1 ] &&
	grep -q 'store corrupt' "$TMP/dmg2.out"; then
	ok "the main tree's root page ($root) zeroed: store check and simulate --state-dir exit 1, store corrupt"
else
	notok "the main tree's root page ($root) zeroed: store check exit $rc, simulate exit $rc2"
	sed 's/^/# /' "$TMP/dmg.out" "$TMP/dmg2.out" | head -n 6
fi

# A damaged record fails check with exit 1 (structure: version byte 0).
"$W" bench "$TMP/bad" nosync 0 1 0 >/dev/null 2>&1
if "$GPUQ_BIN" store check --state-dir "$TMP/bad" >"$TMP/bad.out" 2>&1; then
	notok "check accepts an empty (versionless) workload record"
else
	if grep -q 'bad record' "$TMP/bad.out"; then
		ok "check rejects a record with no version byte, exit 1"
	else
		notok "check failed without naming the record"
		sed 's/^/# /' "$TMP/bad.out"
	fi
fi
if "$GPUQ_BIN" store check --state-dir "$TMP/absent" >"$TMP/abs.out" 2>&1; then
	notok "check of an absent store exits 0"
else
	ok "check of an absent store exits 1: $(head -n 1 "$TMP/abs.out")"
fi


# Queue level: the real queue core persisted step by step. After each kill
# the queue restored from the store must hash equal to the state the writer
# committed under that seq (printed as "pending N" before and "seq N" after
# the commit), and the stored seq is the last printed one or the next.
QW=$TMP/qwriter
# Link against the build's library when there is one (it has every module
# the core needs); else compile the modules' sources here.
if [ -f "${BUILD:-}/libgpuq.a" ]; then
	QSRC="$BUILD/libgpuq.a $(pkg-config --libs lmdb) -lm"
	QFROM="$BUILD/libgpuq.a"
else
	QFROM="store/, engine/, policy/, quota/, queue/, fairshare/ sources"
	QSRC="store/store.c store/pages.c store/files.c engine/*.c policy/*.c quota/*.c queue/*.c fairshare/*.c base/base.c base/text.c $(pkg-config --cflags --libs lmdb yaml-0.1 jansson) -lm"
fi
# shellcheck disable=SC2086 # QSRC is a list of files and flags
if $CC $WFLAGS -o "$QW" "$TMP/qwriter.c" $QSRC 2>"$TMP/qcc.log"; then
	ok "queue-level writer compiles against $QFROM"
	QDIR=$TMP/qstate
	qdelays=$(awk -v seed="$SEED" -v n="$QKILLS" 'BEGIN { srand(seed + 1);
		for (i = 0; i < n; i++) { r = rand(); printf "%.3f\n", 0.02 + r * 0.4 } }')
	k=0
	last_q=0  # the seq stored after the previous kill (the store carries over)
	last_fp=  # ... and the state it hashed to
	for d in $qdelays; do
		k=$((k + 1))
		if [ $((k % 5)) -eq 1 ]; then
			rm -rf "$QDIR"
			last_q=0
			last_fp=
		fi
		"$QW" run "$QDIR" "$((SEED + k))" >"$TMP/qout" 2>"$TMP/qerr" &
		pid=$!
		first_line "$TMP/qout" '^seq [0-9]+ fp [0-9a-f]+$' "$pid"
		kill -0 "$pid" 2>/dev/null && alive=yes || alive="no (exited before its first seq line)"
		sleep "$d"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		printed=$(grep -E '^seq [0-9]+ fp [0-9a-f]+$' "$TMP/qout" | tail -n 1 | cut -d' ' -f2)
		if ! "$GPUQ_BIN" store check --state-dir "$QDIR" >"$TMP/qcheck" 2>&1 ||
			! "$QW" verify "$QDIR" >"$TMP/qverify" 2>&1; then
			notok "queue kill $k after ${d}s: check or restore failed"
			sed 's/^/# /' "$TMP/qcheck" "$TMP/qverify" "$TMP/qerr"
			continue
		fi
		set -- $(cat "$TMP/qverify")
		stored=$2
		fp=$4
		want=$(grep -E "^(seq|pending) $stored fp [0-9a-f]+$" "$TMP/qout" | tail -n 1 | cut -d' ' -f4)
		# nothing of this run stored: the state the previous run left
		[ -z "$want" ] && [ "$stored" -eq "$last_q" ] && want=$last_fp
		# killed before its first commit returned: what was stored before, or
		# one step more (it was stored as the line before it, "pending")
		lo=${printed:-$last_q}
		if [ -n "$want" ] && [ "$fp" = "$want" ] && [ "$stored" -ge "$lo" ] &&
			[ "$stored" -le $((lo + 1)) ]; then
			ok "queue kill $k after ${d}s: restored seq $stored (printed ${printed:-none}, before $last_q) hashes $fp as committed"
		elif [ -z "$want" ] && [ "$stored" -eq 0 ]; then
			ok "queue kill $k after ${d}s: killed before the first commit, store empty"
		else
			notok "queue kill $k after ${d}s: restored seq $stored fp $fp, writer printed ${printed:-none}, stored before $last_q, wanted '${want}', writer alive after the wait: $alive"
			tail -n 3 "$TMP/qout" | sed 's/^/# /'
			sed 's/^/# stderr: /' "$TMP/qerr"
		fi
		last_q=$stored
		last_fp=$fp
	done
else
	notok "queue-level writer compiles (queue/ or fairshare/ missing?)"
	sed 's/^/# /' "$TMP/qcc.log" | head -20
fi

tap_end

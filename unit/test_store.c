/* Unit tests for store: open/create, schema refusal, batches with sticky
 * errors, scans, map growth, persistence across reopen, the digest, bad and
 * absent directories, a reader in another process. The queue core's records
 * in a store (engine/) are tested in unit/test_engine.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "unit/store_fixture.h"

enum { T_WORKLOAD = 0, T_USAGE = 1, T_HISTORY = 5 };

static int setup(void **state)
{
	return fixture_setup(state, "gpuq-store", "state/a");
}

static int teardown(void **state)
{
	return fixture_teardown(state);
}

static void opts_std(store_opts_t *o)
{
	store_opts_init(o);
	o->types[T_WORKLOAD] = "workloads";
	o->types[T_USAGE] = "usage";
	o->types[T_HISTORY] = "history";
	o->nosync = true;
}

static store_t *open_std(const fixture_t *f)
{
	store_opts_t o;
	store_t *s = NULL;
	gpuq_diag_t d = {{0}};

	opts_std(&o);
	if (store_open(f->dir, &o, &s, &d))
		fail_msg("store_open: %s", d.msg);
	return s;
}

static void put_str(store_txn_t *t, unsigned type, const char *k, const char *v)
{
	assert_int_equal(store_put(t, type, k, strlen(k), v, strlen(v)), GPUQ_OK);
}

static void expect_stored(store_t *s, unsigned type, const char *k, const char *want)
{
	void *v = NULL;
	size_t n = 0;

	assert_int_equal(store_get(s, type, k, strlen(k), &v, &n), GPUQ_OK);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(v, want, n);
	free(v);
}

/* Collects keys and values of a scan as "k=v;" into a string. */
typedef struct {
	char text[4096]; /* concatenated records */
	size_t len;	 /* bytes used */
	int calls;	 /* records seen */
	int stop_after;	 /* return 77 at this call (0: never) */
} collect_t;

static int collect(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
		   size_t vlen)
{
	collect_t *c = ctx;
	int n;

	(void)type;
	c->calls++;
	n = snprintf(c->text + c->len, sizeof(c->text) - c->len, "%.*s=%.*s;", (int)klen,
		     (const char *)key, (int)vlen, (const char *)val);
	c->len += (size_t)n;
	return c->stop_after && c->calls == c->stop_after ? 77 : 0;
}

static void open_creates_directory(void **state)
{
	fixture_t *f = *state;
	store_info_t info;
	struct stat st;
	char path[400];
	store_t *s = open_std(f);

	assert_int_equal(stat(f->dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.seq, 0);
	assert_int_equal(info.schema, STORE_SCHEMA_VERSION);
	assert_int_equal(info.map_size, STORE_MAP_INITIAL_DEFAULT);
	assert_true(info.map_used > 0 && info.map_used < info.map_size);
	assert_int_equal(info.counts[T_WORKLOAD], 0);
	assert_string_equal(store_type_name(s, T_USAGE), "usage");
	assert_null(store_type_name(s, 2));
	assert_null(store_type_name(s, STORE_TYPE_MAX));
	store_close(s);
	store_close(NULL);
}

static void put_get_scan_del(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_std(f);
	store_txn_t *t;
	collect_t c = {0};
	uint64_t seq = 99;
	void *v;
	size_t n;

	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_WORKLOAD, "team-b/job2", "B2");
	put_str(t, T_WORKLOAD, "team-a/job1", "A1");
	put_str(t, T_WORKLOAD, "team-a/job10", "A10");
	put_str(t, T_WORKLOAD, "team-a/job1", "A1-new"); /* later op wins */
	put_str(t, T_USAGE, "team-a", "5");
	assert_int_equal(store_put(t, T_HISTORY, "h", 1, NULL, 0), GPUQ_OK); /* empty value */
	assert_int_equal(store_txn_error(t), GPUQ_OK);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 1);

	expect_stored(s, T_WORKLOAD, "team-a/job1", "A1-new");
	expect_stored(s, T_USAGE, "team-a", "5");
	assert_int_equal(store_get(s, T_HISTORY, "h", 1, &v, &n), GPUQ_OK);
	assert_non_null(v);
	assert_int_equal(n, 0);
	free(v);
	assert_int_equal(store_get(s, T_USAGE, "nope", 4, &v, &n), GPUQ_ENOTFOUND);
	assert_null(v);
	assert_int_equal(store_get(s, 2, "x", 1, &v, &n), GPUQ_EINVAL);

	/* key order, bytewise */
	assert_int_equal(store_scan(s, T_WORKLOAD, collect, &c), GPUQ_OK);
	assert_string_equal(c.text, "team-a/job1=A1-new;team-a/job10=A10;team-b/job2=B2;");
	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	assert_int_equal(store_scan(s, T_WORKLOAD, collect, &c), 77);
	assert_int_equal(c.calls, 2);
	assert_int_equal(store_scan(s, 3, collect, &c), GPUQ_EINVAL);

	/* deletes, including an absent key, and put-after-delete in one batch */
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_del(t, T_WORKLOAD, "team-b/job2", 11), GPUQ_OK);
	assert_int_equal(store_del(t, T_WORKLOAD, "absent", 6), GPUQ_OK);
	assert_int_equal(store_del(t, T_USAGE, "team-a", 6), GPUQ_OK);
	put_str(t, T_USAGE, "team-a", "6");
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 2);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_scan(s, T_WORKLOAD, collect, &c), GPUQ_OK);
	assert_string_equal(c.text, "team-a/job1=A1-new;team-a/job10=A10;");
	expect_stored(s, T_USAGE, "team-a", "6");

	/* an empty batch writes nothing and keeps the sequence number */
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 2);
	assert_int_equal(store_seq_get(s, &seq), GPUQ_OK);
	assert_int_equal(seq, 2);

	/* abort discards */
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_USAGE, "team-z", "1");
	store_txn_abort(t);
	store_txn_abort(NULL);
	assert_int_equal(store_get(s, T_USAGE, "team-z", 6, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_seq_get(s, &seq), GPUQ_OK);
	assert_int_equal(seq, 2);
	store_close(s);
}

static void sticky_errors(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_std(f);
	store_txn_t *t, *t2;
	char big[STORE_KEY_MAX + 1];
	uint64_t seq = 42;
	void *v;
	size_t n;

	memset(big, 'k', sizeof(big));
	/* one batch at a time */
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_txn_begin(s, &t2), GPUQ_EAGAIN);
	assert_null(t2);
	put_str(t, T_USAGE, "good-before", "1");
	assert_int_equal(store_put(t, 7, "k", 1, "v", 1), GPUQ_EINVAL);	      /* unused type */
	assert_int_equal(store_put(t, T_USAGE, "x", 1, "y", 1), GPUQ_EINVAL); /* sticky */
	assert_int_equal(store_txn_error(t), GPUQ_EINVAL);
	assert_int_equal(store_put(t, T_USAGE, "good-after", 10, "1", 1), GPUQ_EINVAL);
	assert_int_equal(store_del(t, T_USAGE, "x", 1), GPUQ_EINVAL);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_EINVAL);
	assert_int_equal(seq, 42); /* untouched on failure */
	assert_int_equal(store_get(s, T_USAGE, "good-before", 11, &v, &n), GPUQ_ENOTFOUND);
	assert_int_equal(store_seq_get(s, &seq), GPUQ_OK);
	assert_int_equal(seq, 0);

	/* each kind of bad op makes the batch fail, and the next batch is clean */
	struct {
		unsigned type;
		const void *key;
		size_t klen;
		size_t vlen;
	} bad[] = {
	    {STORE_TYPE_MAX, "k", 1, 1},	    /* type out of range */
	    {T_USAGE, "", 0, 1},		    /* empty key */
	    {T_USAGE, NULL, 1, 1},		    /* no key */
	    {T_USAGE, big, sizeof(big), 1},	    /* key too long */
	    {T_USAGE, "k", 1, STORE_VALUE_MAX + 1}, /* value too big */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
		assert_int_equal(
		    store_put(t, bad[i].type, bad[i].key, bad[i].klen, big, bad[i].vlen),
		    GPUQ_EINVAL);
		assert_int_equal(store_txn_commit(t, NULL), GPUQ_EINVAL);
	}
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_put(t, T_USAGE, big, STORE_KEY_MAX, "v", 1), GPUQ_OK); /* max key */
	assert_int_equal(store_put(t, T_USAGE, "nullval", 7, NULL, 5), GPUQ_EINVAL);
	store_txn_abort(t);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_put(t, T_USAGE, big, STORE_KEY_MAX, "v", 1), GPUQ_OK);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 1);
	store_close(s);
}

static void put_sized(store_txn_t *t, unsigned type, unsigned i, size_t vlen, unsigned char *val)
{
	char key[32];
	int n = snprintf(key, sizeof(key), "rec-%08u", i);

	memset(val, (int)(i * 7u + 1), vlen);
	memcpy(val, &i, sizeof(i));
	assert_int_equal(store_put(t, type, key, (size_t)n, val, vlen), GPUQ_OK);
}

typedef struct {
	unsigned next; /* index expected next */
	size_t vlen;   /* value size expected */
	int bad;       /* records that did not match */
} check_seq_t;

static int check_sized(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
		       size_t vlen)
{
	check_seq_t *c = ctx;
	char want[32];
	unsigned idx;
	const unsigned char *b = val;

	(void)type;
	snprintf(want, sizeof(want), "rec-%08u", c->next);
	memcpy(&idx, val, sizeof(idx));
	if (klen != strlen(want) || memcmp(key, want, klen) || vlen != c->vlen || idx != c->next ||
	    b[vlen - 1] != (unsigned char)(c->next * 7u + 1))
		c->bad++;
	c->next++;
	return 0;
}

static void map_grows_and_keeps_everything(void **state)
{
	fixture_t *f = *state;
	enum { BATCHES = 50, PER_BATCH = 64, VLEN = 16 << 10 }; /* 50 x 1 MiB */
	unsigned char *val = malloc(VLEN);
	store_opts_t o;
	store_info_t info;
	store_txn_t *t;
	store_t *s;
	gpuq_diag_t d = {{0}};
	check_seq_t c = {0, VLEN, 0};
	uint64_t seq, dig1, dig2;

	assert_non_null(val);
	opts_std(&o);
	o.map_initial = 1 << 20;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	for (unsigned b = 0; b < BATCHES; b++) {
		assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
		for (unsigned i = 0; i < PER_BATCH; i++)
			put_sized(t, T_HISTORY, b * PER_BATCH + i, VLEN, val);
		assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
		assert_int_equal(seq, b + 1);
	}
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_true(info.grows >= 6); /* 1 MiB -> at least 64 MiB */
	assert_true(info.map_size >= (size_t)64 << 20);
	assert_true(info.map_used >= (size_t)BATCHES << 20);
	assert_true(info.map_used <= info.map_size);
	assert_int_equal(info.counts[T_HISTORY], BATCHES * PER_BATCH);
	assert_int_equal(store_scan(s, T_HISTORY, check_sized, &c), GPUQ_OK);
	assert_int_equal(c.next, BATCHES * PER_BATCH);
	assert_int_equal(c.bad, 0);
	assert_int_equal(store_digest(s, &dig1), GPUQ_OK);
	store_close(s);

	/* reopen with a tiny initial map: the grown size is kept */
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_true(info.map_size >= (size_t)64 << 20);
	assert_int_equal(info.grows, 0);
	assert_int_equal(info.seq, BATCHES);
	assert_int_equal(store_digest(s, &dig2), GPUQ_OK);
	assert_int_equal(dig1, dig2);
	store_close(s);
	free(val);
}

static void map_grows_within_one_batch(void **state)
{
	fixture_t *f = *state;
	enum { N = 640, VLEN = 16 << 10 }; /* one 10 MiB batch into a 1 MiB map */
	unsigned char *val = malloc(VLEN);
	store_opts_t o;
	store_info_t info;
	store_txn_t *t;
	store_t *s;
	gpuq_diag_t d = {{0}};
	check_seq_t c = {0, VLEN, 0};
	uint64_t seq;

	assert_non_null(val);
	opts_std(&o);
	o.map_initial = 1 << 20;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	for (unsigned i = 0; i < N; i++)
		put_sized(t, T_HISTORY, i, VLEN, val);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 1); /* retried, committed once */
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.grows, 4); /* 1 -> 2 -> 4 -> 8 -> 16 MiB */
	assert_int_equal(info.map_size, (size_t)16 << 20);
	assert_int_equal(store_scan(s, T_HISTORY, check_sized, &c), GPUQ_OK);
	assert_int_equal(c.next, N);
	assert_int_equal(c.bad, 0);
	store_close(s);
	free(val);
}

static void map_cap_refuses_and_keeps_store_usable(void **state)
{
	fixture_t *f = *state;
	enum { N = 256, VLEN = 16 << 10 }; /* 4 MiB into a store capped at 2 MiB */
	unsigned char *val = malloc(VLEN);
	store_opts_t o;
	store_info_t info;
	store_txn_t *t;
	store_t *s;
	gpuq_diag_t d = {{0}};
	uint64_t seq = 0;
	void *v;
	size_t n;

	assert_non_null(val);
	opts_std(&o);
	o.map_initial = 1 << 20;
	o.map_max = 2 << 20;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_USAGE, "before", "1");
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	for (unsigned i = 0; i < N; i++)
		put_sized(t, T_HISTORY, i, VLEN, val);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_ELIMIT);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.map_size, (size_t)2 << 20);
	assert_int_equal(info.counts[T_HISTORY], 0); /* nothing of the batch */
	assert_int_equal(info.seq, 1);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_USAGE, "after", "2");
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 2);
	assert_int_equal(store_get(s, T_USAGE, "before", 6, &v, &n), GPUQ_OK);
	free(v);
	store_close(s);
	free(val);
}

static void reopen_persists_and_checks_types(void **state)
{
	fixture_t *f = *state;
	store_opts_t o;
	store_t *s = open_std(f);
	store_txn_t *t;
	gpuq_diag_t d = {{0}};
	uint64_t seq;
	unsigned id;

	for (int b = 0; b < 3; b++) {
		char k[8];
		assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
		snprintf(k, sizeof(k), "w%d", b & 7);
		put_str(t, T_WORKLOAD, k, "x");
		assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	}
	store_close(s);

	/* durable reopen, same types */
	opts_std(&o);
	o.nosync = false;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(store_seq_get(s, &seq), GPUQ_OK);
	assert_int_equal(seq, 3);
	expect_stored(s, T_WORKLOAD, "w2", "x");
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_WORKLOAD, "w3", "durable");
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 4);
	store_close(s);

	/* no types given: the recorded table is used */
	store_opts_init(&o);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_string_equal(store_type_name(s, T_HISTORY), "history");
	assert_int_equal(store_type_find(s, "usage", &id), GPUQ_OK);
	assert_int_equal(id, T_USAGE);
	assert_int_equal(store_type_find(s, "nope", &id), GPUQ_ENOTFOUND);
	expect_stored(s, T_WORKLOAD, "w3", "durable");
	store_close(s);

	/* a renamed type is refused */
	opts_std(&o);
	o.types[T_USAGE] = "ledger";
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ESTORE);
	assert_null(s);
	assert_non_null(strstr(d.msg, "\"usage\" in the store but \"ledger\""));
	/* a new id is added; reusing a recorded name for it is refused */
	opts_std(&o);
	o.types[9] = "history";
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_EINVAL);
	o.types[9] = NULL;
	o.types[10] = "decisions";
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_string_equal(store_type_name(s, 10), "decisions");
	store_close(s);
	store_opts_init(&o);
	o.types[10] = "history"; /* id 10 free in opts, but name taken by id 5 */
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ESTORE);

	/* read-only sees the same, and cannot write */
	store_opts_init(&o);
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_string_equal(store_type_name(s, 10), "decisions");
	expect_stored(s, T_WORKLOAD, "w3", "durable");
	assert_int_equal(store_txn_begin(s, &t), GPUQ_EINVAL);
	store_close(s);
}

/* Write keys[i] = keys[i+1] (alternating types), in `per_batch` batches,
 * forwards or backwards. */
static void write_set(store_t *s, const char *const *keys, size_t n, size_t per_batch, bool back)
{
	store_txn_t *t = NULL;

	for (size_t j = 0; j < n; j++) {
		size_t i = back ? n - 1 - j : j;
		if (j % per_batch == 0)
			assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
		put_str(t, i % 2 ? T_USAGE : T_WORKLOAD, keys[i], keys[(i + 1) % n]);
		if (j % per_batch == per_batch - 1 || j == n - 1)
			assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	}
}

static void digest_is_content_only(void **state)
{
	fixture_t *f = *state;
	static const char *const keys[] = {"a", "bb", "ccc", "dddd", "e", "ff", "g", "hh"};
	char dir2[400];
	store_opts_t o;
	store_t *s1 = open_std(f), *s2;
	store_txn_t *t;
	gpuq_diag_t d = {{0}};
	uint64_t d1, d2, d3, seq1, seq2, empty;

	assert_int_equal(store_digest(s1, &empty), GPUQ_OK);
	snprintf(dir2, sizeof(dir2), "%s/second", f->root);
	opts_std(&o);
	assert_int_equal(store_open(dir2, &o, &s2, &d), GPUQ_OK);
	write_set(s1, keys, 8, 1, false); /* 8 commits */
	write_set(s2, keys, 8, 8, true);  /* 1 commit, backwards */
	/* an extra put+delete in s2 leaves the content equal */
	assert_int_equal(store_txn_begin(s2, &t), GPUQ_OK);
	put_str(t, T_HISTORY, "tmp", "x");
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(store_txn_begin(s2, &t), GPUQ_OK);
	assert_int_equal(store_del(t, T_HISTORY, "tmp", 3), GPUQ_OK);
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(store_digest(s1, &d1), GPUQ_OK);
	assert_int_equal(store_digest(s2, &d2), GPUQ_OK);
	assert_int_equal(d1, d2);
	assert_int_not_equal(d1, empty);
	assert_int_equal(store_seq_get(s1, &seq1), GPUQ_OK);
	assert_int_equal(store_seq_get(s2, &seq2), GPUQ_OK);
	assert_int_equal(seq1, 8);
	assert_int_equal(seq2, 3);
	/* stable over calls; one changed byte changes it */
	assert_int_equal(store_digest(s1, &d3), GPUQ_OK);
	assert_int_equal(d1, d3);
	assert_int_equal(store_txn_begin(s2, &t), GPUQ_OK);
	put_str(t, T_WORKLOAD, "a", "bc");
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(store_digest(s2, &d2), GPUQ_OK);
	assert_int_not_equal(d1, d2);
	/* moving a record to another type changes it too */
	assert_int_equal(store_txn_begin(s2, &t), GPUQ_OK);
	put_str(t, T_WORKLOAD, "a", "bb");
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(store_digest(s2, &d2), GPUQ_OK);
	assert_int_equal(d1, d2);
	assert_int_equal(store_txn_begin(s2, &t), GPUQ_OK);
	assert_int_equal(store_del(t, T_WORKLOAD, "a", 1), GPUQ_OK);
	put_str(t, T_HISTORY, "a", "bb");
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(store_digest(s2, &d2), GPUQ_OK);
	assert_int_not_equal(d1, d2);
	store_close(s1);
	store_close(s2);

	/* same digest after reopening */
	s1 = open_std(f);
	assert_int_equal(store_digest(s1, &d3), GPUQ_OK);
	assert_int_equal(d1, d3);
	store_close(s1);
}

/* Write meta's "sum" as store.h documents it (schema 3): the CRC-32C of
 * every other entry in key order, each as key length (u32 LE), key, value
 * length (u32 LE), value. What another gpuq writing meta does. */
static void raw_meta_seal(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint32_t c = 0;
	unsigned char sum[4];
	int mrc;

	assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
	for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !mrc;
	     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		unsigned char len[4];
		if (k.mv_size == 3 && !memcmp(k.mv_data, "sum", 3))
			continue;
		for (int i = 0; i < 4; i++)
			len[i] = (unsigned char)(k.mv_size >> (8 * i));
		c = gpuq_crc32c(gpuq_crc32c(c, len, 4), k.mv_data, k.mv_size);
		for (int i = 0; i < 4; i++)
			len[i] = (unsigned char)(v.mv_size >> (8 * i));
		c = gpuq_crc32c(gpuq_crc32c(c, len, 4), v.mv_data, v.mv_size);
	}
	assert_int_equal(mrc, MDB_NOTFOUND);
	mdb_cursor_close(cur);
	for (int i = 0; i < 4; i++)
		sum[i] = (unsigned char)(c >> (8 * i));
	k = (MDB_val){3, (void *)"sum"};
	v = (MDB_val){4, sum};
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
}

/* Change meta[key] of a closed store with raw LMDB: as a newer gpuq would
 * (seal: "sum" rewritten to match) or as damage would (not). len 0 deletes
 * the key. */
static void raw_meta_set(const char *dir, const char *key, const void *val, size_t len, bool seal)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = {strlen(key), (void *)key}, v = {len, (void *)val};

	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "meta", MDB_CREATE, &dbi), 0);
	if (len)
		assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	else
		assert_int_equal(mdb_del(txn, dbi, &k, NULL), 0);
	if (seal)
		raw_meta_seal(txn, dbi);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void schema_version_checked(void **state)
{
	fixture_t *f = *state;
	const unsigned char v4[4] = {4, 0, 0, 0}, v0[4] = {0}, bad[3] = {1, 0, 0};
	const unsigned char v1[4] = {1, 0, 0, 0}, v3[4] = {3, 0, 0, 0};
	store_opts_t o;
	store_t *s = open_std(f);
	gpuq_diag_t d = {{0}};

	store_close(s);
	opts_std(&o);
	raw_meta_set(f->dir, "schema", v4, 4, true);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ESTORE);
	assert_null(s);
	assert_non_null(strstr(d.msg, "schema version 4 is newer than the 3"));
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ESTORE);
	o.read_only = false;
	/* the same change as damage (meta no longer matches its sum): corrupt,
	 * not "newer"; read-only too */
	raw_meta_set(f->dir, "schema", v3, 4, true);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	store_close(s);
	raw_meta_set(f->dir, "schema", v4, 4, false);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "store corrupt: its meta records"));
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	o.read_only = false;
	raw_meta_set(f->dir, "type.01", "usagf", 5, false);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	raw_meta_set(f->dir, "schema", v3, 4, true);
	raw_meta_set(f->dir, "type.01", "usage", 5, true);
	/* schema 3 with its sum gone */
	raw_meta_set(f->dir, "sum", NULL, 0, false);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "without the checksum of its meta records"));
	raw_meta_set(f->dir, "schema", v0, 4, true);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	raw_meta_set(f->dir, "schema", bad, 3, true);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	/* no schema key but type databases present: not treated as new */
	raw_meta_set(f->dir, "schema", NULL, 0, true);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "no gpuq schema version"));
	raw_meta_set(f->dir, "schema", v1, 4, true);
	raw_meta_set(f->dir, "seq", NULL, 0, true);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "no sequence number"));
	raw_meta_set(f->dir, "seq", "12345678", 8, true);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	store_close(s);
}

/* The marker a store writes beside data.mdb after its first commit, and
 * LMDB's lock file. */
static const char *marker_path(const fixture_t *f)
{
	static char path[400];

	snprintf(path, sizeof(path), "%s/committed", f->dir);
	return path;
}

static const char *lock_path(const fixture_t *f)
{
	static char path[400];

	snprintf(path, sizeof(path), "%s/lock.mdb", f->dir);
	return path;
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	fclose(fp);
}

/* A store whose creation was killed before its first commit is an LMDB
 * environment holding nothing: read-only it is an empty store, and the next
 * writer initializes it. */
static void blank_environment(void **state)
{
	fixture_t *f = *state;
	store_opts_t o;
	store_info_t info;
	store_t *s;
	MDB_env *env;
	gpuq_diag_t d = {{0}};
	uint64_t seq = 9, dig;

	char parent[400];

	snprintf(parent, sizeof(parent), "%s/state", f->root);
	assert_int_equal(mkdir(parent, 0700), 0);
	assert_int_equal(mkdir(f->dir, 0700), 0);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, f->dir, 0, 0600), 0);
	mdb_env_close(env);

	store_opts_init(&o);
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.schema, 0);
	assert_int_equal(info.seq, 0);
	assert_int_equal(store_seq_get(s, &seq), GPUQ_OK);
	assert_int_equal(seq, 0);
	assert_null(store_type_name(s, T_USAGE));
	assert_int_equal(store_digest(s, &dig), GPUQ_OK);
	store_close(s);

	s = open_std(f);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.schema, STORE_SCHEMA_VERSION);
	store_close(s);
}

/* Killed even earlier: data.mdb exists but LMDB's header (two pages) was
 * never written, or only partly. Read-only: an empty store without opening
 * LMDB; read-write: emptied and initialized. */
static void short_data_file(void **state)
{
	fixture_t *f = *state;
	static const size_t sizes[] = {0, 100, 4096, 5000};
	char parent[400], data[400], junk[5000];
	const char *marker = marker_path(f);
	store_opts_t o;
	store_info_t info;
	store_t *s;
	store_txn_t *t;
	gpuq_diag_t d = {{0}};
	uint64_t seq = 9, dig, empty = 0xcbf29ce484222325ULL;

	memset(junk, 0x5a, sizeof(junk));
	snprintf(parent, sizeof(parent), "%s/state", f->root);
	snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
	assert_int_equal(mkdir(parent, 0700), 0);
	assert_int_equal(mkdir(f->dir, 0700), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		write_file(data, junk, sizes[i]);
		store_opts_init(&o);
		o.read_only = true;
		assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
		assert_int_equal(store_info_get(s, &info), GPUQ_OK);
		assert_int_equal(info.schema, 0);
		assert_int_equal(info.map_size, 0);
		assert_int_equal(store_seq_get(s, &seq), GPUQ_OK);
		assert_int_equal(seq, 0);
		assert_int_equal(store_digest(s, &dig), GPUQ_OK);
		assert_int_equal(dig, empty);
		assert_int_equal(store_txn_begin(s, &t), GPUQ_EINVAL);
		store_close(s);

		s = open_std(f);
		assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
		put_str(t, T_USAGE, "a", "1");
		assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
		assert_int_equal(seq, 1);
		store_close(s);
		assert_int_equal(remove(data), 0);
		/* the next round is another first open killed early: no commit
		 * ever landed, so no marker either */
		assert_int_equal(remove(marker), 0);
	}
}

/* A store that held commits is never taken for a blank one, and a
 * data.mdb shorter than its header says is refused before LMDB maps it
 * (reading a page past the end of the file is a SIGBUS). */
static void damaged_data_file_refused(void **state)
{
	fixture_t *f = *state;
	char data[400];
	store_opts_t o;
	store_t *s;
	store_txn_t *t;
	gpuq_diag_t d = {{0}};
	uint64_t seq;
	long page = sysconf(_SC_PAGESIZE);
	static const struct {
		const char *what; /* how data.mdb is damaged */
		const char *says; /* in the refusal */
	} cases[] = {
	    {"truncated to 3 pages", "truncated"},
	    {"emptied", "held commits"},
	    {"removed", "held commits"},
	    {"a directory", "not a regular file"},
	};

	snprintf(data, sizeof(data), "%s/data.mdb", f->dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char big[4000];
		s = open_std(f);
		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		for (int n = 0; n < 200; n++) {
			char key[32];
			snprintf(key, sizeof(key), "k%d-%zu", n, i);
			assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
			put_str(t, T_USAGE, key, big);
			assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
		}
		store_close(s);
		if (i == 0)
			assert_int_equal(truncate(data, 3 * page), 0);
		else if (i == 1)
			assert_int_equal(truncate(data, 0), 0);
		else
			assert_int_equal(remove(data), 0);
		if (i == 3)
			assert_int_equal(mkdir(data, 0700), 0);
		for (int ro = 0; ro < 2; ro++) {
			store_opts_init(&o);
			o.read_only = ro;
			s = NULL;
			memset(&d, 0, sizeof(d));
			assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
			assert_null(s);
			if (!strstr(d.msg, "store corrupt") || !strstr(d.msg, cases[i].says))
				fail_msg("data.mdb %s: \"%s\"", cases[i].what, d.msg);
		}
		/* start over for the next case */
		if (i == 3)
			assert_int_equal(rmdir(data), 0);
		else
			(void)remove(data);
		(void)remove(marker_path(f));
		(void)remove(lock_path(f));
	}
}

/* Open the store's LMDB environment directly (as damage or an older gpuq
 * would touch it): txn on the "usage" database and on "meta". */
typedef struct {
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi usage, meta;
} raw_t;

static void raw_open(const fixture_t *f, raw_t *r)
{
	assert_int_equal(mdb_env_create(&r->env), 0);
	assert_int_equal(mdb_env_set_maxdbs(r->env, 64), 0);
	assert_int_equal(mdb_env_set_mapsize(r->env, (size_t)64 << 20), 0);
	assert_int_equal(mdb_env_open(r->env, f->dir, MDB_NOTLS, 0600), 0);
	assert_int_equal(mdb_txn_begin(r->env, NULL, 0, &r->txn), 0);
	assert_int_equal(mdb_dbi_open(r->txn, "usage", 0, &r->usage), 0);
	assert_int_equal(mdb_dbi_open(r->txn, "meta", 0, &r->meta), 0);
}

static void raw_close(raw_t *r)
{
	assert_int_equal(mdb_txn_commit(r->txn), 0);
	mdb_env_close(r->env);
}

/* Replace usage[key] by its stored bytes transformed: cut `cut` bytes off
 * the end, then flip bit 0 of byte `flip` (-1: none). */
static void raw_edit(raw_t *r, const char *key, size_t cut, int flip)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	char buf[256];

	assert_int_equal(mdb_get(r->txn, r->usage, &k, &v), 0);
	assert_true(v.mv_size >= cut && v.mv_size - cut <= sizeof(buf));
	memcpy(buf, v.mv_data, v.mv_size - cut);
	v.mv_size -= cut;
	if (flip >= 0)
		buf[flip] ^= 1;
	v.mv_data = buf;
	assert_int_equal(mdb_put(r->txn, r->usage, &k, &v, 0), 0);
}

/* A new store holding usage a = "alpha" and b = "bravo", committed. */
static store_t *open_with_ab(const fixture_t *f)
{
	store_t *s = open_std(f);
	store_txn_t *t;

	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_USAGE, "a", "alpha");
	put_str(t, T_USAGE, "b", "bravo");
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	return s;
}

/* Every record carries a CRC-32C: a flipped bit in a value is caught on
 * read (get and scan), naming nothing else as damaged. */
static void checksum_catches_a_flipped_bit(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_with_ab(f);
	raw_t r;
	uint64_t seq;
	void *v = NULL;
	size_t n = 0;

	store_close(s);
	raw_open(f, &r);
	raw_edit(&r, "b", 0, 2); /* "brbvo" with b's old checksum */
	raw_close(&r);

	s = open_std(f);
	expect_stored(s, T_USAGE, "a", "alpha");
	assert_int_equal(store_get(s, T_USAGE, "b", 1, &v, &n), GPUQ_ECORRUPT);
	assert_null(v);
	assert_int_equal(store_digest(s, &seq), GPUQ_ECORRUPT);
	store_close(s);
}

/* A schema 1 store (values without checksums, meta without its sum, as gpuq
 * wrote them before) reads as it is read-only and gains both at a writable
 * open. */
static void schema1_store_gains_checksums(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_with_ab(f);
	store_info_t info;
	store_opts_t o;
	gpuq_diag_t d = {{0}};
	raw_t r;
	uint64_t dig_before, dig;
	MDB_val k = {6, (void *)"schema"}, v;
	unsigned char one[4] = {1, 0, 0, 0};

	assert_int_equal(store_digest(s, &dig_before), GPUQ_OK);
	store_close(s);
	raw_open(f, &r);
	raw_edit(&r, "a", 4, -1);
	raw_edit(&r, "b", 4, -1);
	v.mv_size = 4;
	v.mv_data = one;
	assert_int_equal(mdb_put(r.txn, r.meta, &k, &v, 0), 0);
	k = (MDB_val){3, (void *)"sum"}; /* schema 1 had no meta checksum */
	assert_int_equal(mdb_del(r.txn, r.meta, &k, NULL), 0);
	raw_close(&r);

	store_opts_init(&o);
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.schema, 1);
	expect_stored(s, T_USAGE, "b", "bravo");
	store_close(s);

	s = open_std(f);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.schema, STORE_SCHEMA_VERSION);
	expect_stored(s, T_USAGE, "a", "alpha");
	expect_stored(s, T_USAGE, "b", "bravo");
	assert_int_equal(store_digest(s, &dig), GPUQ_OK);
	assert_int_equal(dig, dig_before);
	store_close(s);
}

/* A schema 2 store (records with checksums, meta without its sum) reads as
 * it is read-only, is sealed at a writable open (schema 3), and from then on
 * a meta entry changed behind the store's back is refused. */
static void schema2_store_gains_meta_sum(void **state)
{
	fixture_t *f = *state;
	const unsigned char two[4] = {2, 0, 0, 0}, seq[8] = {7}, seq9[8] = {9};
	store_t *s = open_with_ab(f);
	store_info_t info;
	store_opts_t o;
	gpuq_diag_t d = {{0}};
	uint64_t dig_before, dig;

	assert_int_equal(store_digest(s, &dig_before), GPUQ_OK);
	store_close(s);
	raw_meta_set(f->dir, "schema", two, 4, false);
	raw_meta_set(f->dir, "sum", NULL, 0, false);
	raw_meta_set(f->dir, "seq", seq, 8, false); /* unsealed: schema 2 had no sum */
	store_opts_init(&o);
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.schema, 2);
	assert_int_equal(info.seq, 7);
	store_close(s);

	s = open_std(f);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.schema, STORE_SCHEMA_VERSION);
	assert_int_equal(store_digest(s, &dig), GPUQ_OK);
	assert_int_equal(dig, dig_before);
	store_close(s);
	raw_meta_set(f->dir, "seq", seq9, 8, false);
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ECORRUPT);
	assert_null(s);
	assert_non_null(strstr(d.msg, "fail their checksum"));
}

static void bad_and_absent_directories(void **state)
{
	fixture_t *f = *state;
	char path[400], garbage[8192];
	store_opts_t o;
	store_t *s = NULL;
	gpuq_diag_t d = {{0}};

	store_opts_init(&o);
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_ENOTFOUND);
	assert_null(s);
	assert_non_null(strstr(d.msg, f->dir));
	assert_int_equal(mkdir(f->root, 0700) == 0 || errno == EEXIST, 1);
	snprintf(path, sizeof(path), "%s/empty", f->root);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(store_open(path, &o, &s, &d), GPUQ_ENOTFOUND);
	assert_non_null(strstr(d.msg, "no store here"));

	/* a regular file where the directory should be */
	snprintf(path, sizeof(path), "%s/file", f->root);
	write_file(path, "x", 1);
	assert_int_equal(store_open(path, &o, &s, &d), GPUQ_EIO);
	o.read_only = false;
	assert_int_equal(store_open(path, &o, &s, &d), GPUQ_EIO);
	snprintf(path, sizeof(path), "%s/file/below", f->root);
	assert_int_equal(store_open(path, &o, &s, &d), GPUQ_EIO);

	/* garbage data.mdb */
	snprintf(path, sizeof(path), "%s/garbage", f->root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/garbage/data.mdb", f->root);
	memset(garbage, 0x5a, sizeof(garbage));
	write_file(path, garbage, sizeof(garbage));
	snprintf(path, sizeof(path), "%s/garbage", f->root);
	assert_int_equal(store_open(path, &o, &s, &d), GPUQ_ECORRUPT);
	assert_null(s);
	o.read_only = true;
	assert_int_equal(store_open(path, &o, &s, &d), GPUQ_ECORRUPT);

	/* unreadable directory (skipped as root, who can read anything) */
	if (geteuid() != 0) {
		o.read_only = false;
		snprintf(path, sizeof(path), "%s/locked", f->root);
		assert_int_equal(mkdir(path, 0), 0);
		assert_int_equal(store_open(path, &o, &s, &d), GPUQ_EIO);
		chmod(path, 0700);
	}
}

static void bad_options(void **state)
{
	fixture_t *f = *state;
	char longdir[STORE_PATH_MAX + 2];
	store_opts_t o;
	store_t *s = NULL;
	gpuq_diag_t d = {{0}};
	const char *bad_names[] = {"", "meta", "Upper", "a b", "x23456789012345678901234567890123"};

	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		opts_std(&o);
		o.types[3] = bad_names[i];
		assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_EINVAL);
		assert_null(s);
	}
	opts_std(&o);
	o.types[3] = "usage"; /* duplicate of id 1 */
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_EINVAL);
	assert_non_null(strstr(d.msg, "both named"));
	opts_std(&o);
	o.map_initial = 4096;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_EINVAL);
	opts_std(&o);
	o.map_initial = 8 << 20;
	o.map_max = 4 << 20;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_EINVAL);
	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	opts_std(&o);
	assert_int_equal(store_open(longdir, &o, &s, &d), GPUQ_EINVAL);
	assert_int_equal(store_open("", &o, &s, &d), GPUQ_EINVAL);
	/* nothing was created by the refused opens */
	assert_int_equal(access(f->dir, F_OK), -1);
}

/* The reader side of reader_in_other_process: opens read-only before the
 * writer grows the map, reads after. Exit code names the failed step. */
static int reader_child(const char *dir, int created, int ready, int go, int n, size_t vlen)
{
	store_opts_t ro;
	store_info_t info;
	store_t *r;
	gpuq_diag_t d = {{0}};
	check_seq_t cs = {0, vlen, 0};
	char c;
	int rc = 0;

	store_opts_init(&ro);
	ro.read_only = true;
	if (read(created, &c, 1) != 1)
		return 2;
	if (store_open(dir, &ro, &r, &d))
		return 3;
	if (store_info_get(r, &info) || info.counts[T_HISTORY] != 0)
		rc = 4;
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		rc = 5;
	if (!rc && (store_scan(r, T_HISTORY, check_sized, &cs) || cs.next != (unsigned)n || cs.bad))
		rc = 6;
	if (!rc && (store_info_get(r, &info) || info.seq != 1 || info.map_size < ((size_t)4 << 20)))
		rc = 7;
	store_close(r);
	return rc;
}

/* A reader in another process sees committed batches, including after the
 * writer grew the map past the reader's mapping (MDB_MAP_RESIZED). */
/* A read snapshot keeps one commit in view while a writer in another
 * process commits: every read under it agrees; after it, the new commit. */
static void snapshot_holds_one_commit(void **state)
{
	fixture_t *f = *state;
	int go[2], status;
	store_opts_t o;
	store_txn_t *t;
	store_t *s = open_std(f);
	store_info_t info;
	uint64_t seq, seq2;
	pid_t pid;
	char c = 0;

	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_USAGE, "a", "one");
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	store_close(s);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* the writer: commits a second time when told */
		store_t *w;
		int ok = read(go[0], &c, 1) == 1;
		opts_std(&o);
		ok = ok && store_open(f->dir, &o, &w, NULL) == GPUQ_OK &&
		     store_txn_begin(w, &t) == GPUQ_OK &&
		     store_put(t, T_USAGE, "a", 1, "two", 3) == GPUQ_OK &&
		     store_put(t, T_USAGE, "b", 1, "new", 3) == GPUQ_OK &&
		     store_txn_commit(t, NULL) == GPUQ_OK;
		if (ok)
			store_close(w);
		_exit(ok ? 0 : 1);
	}
	store_opts_init(&o);
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &s, NULL), GPUQ_OK);
	assert_int_equal(store_snapshot_begin(s), GPUQ_OK);
	assert_int_equal(store_snapshot_begin(s), GPUQ_EINVAL);
	expect_stored(s, T_USAGE, "a", "one");
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the writer has committed: the snapshot still shows the first commit */
	expect_stored(s, T_USAGE, "a", "one");
	assert_int_equal(store_seq_get(s, &seq2), GPUQ_OK);
	assert_int_equal(seq2, seq);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.counts[T_USAGE], 1);
	store_snapshot_end(s);
	expect_stored(s, T_USAGE, "a", "two");
	expect_stored(s, T_USAGE, "b", "new");
	store_close(s);
	close(go[0]);
	close(go[1]);
}

static void reader_in_other_process(void **state)
{
	fixture_t *f = *state;
	enum { N = 200, VLEN = 16 << 10 }; /* 3.2 MiB: forces growth from 1 MiB */
	int created[2], ready[2], go[2], status;
	unsigned char *val;
	store_opts_t o;
	store_txn_t *t;
	store_t *s;
	gpuq_diag_t d = {{0}};
	pid_t pid;
	char c = 0;

	assert_int_equal(pipe(created), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork(); /* before anything is opened or allocated */
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(reader_child(f->dir, created[0], ready[1], go[0], N, VLEN));
	val = malloc(VLEN);
	assert_non_null(val);
	opts_std(&o);
	o.map_initial = 1 << 20;
	assert_int_equal(store_open(f->dir, &o, &s, &d), GPUQ_OK);
	assert_int_equal(write(created[1], "c", 1), 1);
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	for (unsigned i = 0; i < N; i++)
		put_sized(t, T_HISTORY, i, VLEN, val);
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (int i = 0; i < 2; i++) {
		close(created[i]);
		close(ready[i]);
		close(go[i]);
	}
	store_close(s);
	free(val);
}

static void txn_fail_is_sticky(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_std(f);
	store_txn_t *t;
	uint64_t seq = 5;
	void *v;
	size_t n;

	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_USAGE, "a", "1");
	assert_int_equal(store_txn_fail(t, GPUQ_ECORRUPT), GPUQ_ECORRUPT);
	assert_int_equal(store_txn_fail(t, GPUQ_ENOMEM), GPUQ_ECORRUPT); /* first one stays */
	assert_int_equal(store_put(t, T_USAGE, "b", 1, "2", 1), GPUQ_ECORRUPT);
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_ECORRUPT);
	assert_int_equal(seq, 5);
	assert_int_equal(store_get(s, T_USAGE, "a", 1, &v, &n), GPUQ_ENOTFOUND);
	/* the next batch starts clean */
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_txn_error(t), GPUQ_OK);
	put_str(t, T_USAGE, "a", "1");
	assert_int_equal(store_txn_commit(t, &seq), GPUQ_OK);
	assert_int_equal(seq, 1);
	store_close(s);
}

static int commit_inside_scan(void *ctx, unsigned type, const void *key, size_t klen,
			      const void *val, size_t vlen)
{
	store_t *s = ctx;
	store_txn_t *t;

	(void)type;
	(void)val;
	(void)vlen;
	if (store_txn_begin(s, &t) || store_put(t, T_USAGE, key, klen, "x", 1))
		return 1;
	return store_txn_commit(t, NULL); /* broken invariant: aborts */
}

/* Committing from a scan callback (growth would unmap the scan's records)
 * is a broken invariant: a loud abort, not a silent corruption. */
static void commit_in_scan_aborts(void **state)
{
	fixture_t *f = *state;
	store_t *s;
	store_txn_t *t;
	int status;
	pid_t pid;

	/* under valgrind too (make valgrind passes --child-silent-after-fork,
	 * so the aborted child's heap is not reported) */
	s = open_std(f);
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	put_str(t, T_WORKLOAD, "w", "1");
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	store_close(s); /* one writer per store: the child's open needs the lock */
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);	    /* the abort message is expected */
		store_t *own = open_std(f); /* never use the parent's env after fork */
		store_scan(own, T_WORKLOAD, commit_inside_scan, own);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
}

/* ---- Damaged pages ---- */

/* Copy file src to dst (created or replaced). */
static void file_copy(const char *src, const char *dst)
{
	char buf[1 << 16];
	int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

/* A store whose trees have branch pages, values on overflow pages and a
 * free list: 600 workloads in 6 batches, 8 usage records of 3 pages each,
 * then a third of the workloads and half the usage deleted. *digest: its
 * content. */
static void damage_source(const fixture_t *f, uint64_t *digest)
{
	static char big[10000];
	store_t *s = open_std(f);
	store_txn_t *t;
	char key[32], val[120];

	memset(big, 'u', sizeof(big) - 1);
	for (int b = 0; b < 6; b++) {
		assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
		for (int i = 0; i < 100; i++) {
			snprintf(key, sizeof(key), "ns-%d/job-%04d", i % 7, b * 100 + i);
			snprintf(val, sizeof(val), "%0100d", b * 100 + i);
			put_str(t, T_WORKLOAD, key, val);
		}
		if (b < 4) {
			snprintf(key, sizeof(key), "u%d", b);
			put_str(t, T_USAGE, key, big);
			key[0] = 'v';
			put_str(t, T_USAGE, key, big);
		}
		assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	}
	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	for (int i = 0; i < 600; i += 3) {
		snprintf(key, sizeof(key), "ns-%d/job-%04d", i % 100 % 7, i);
		assert_int_equal(store_del(t, T_WORKLOAD, key, strlen(key)), GPUQ_OK);
	}
	for (int b = 0; b < 4; b++) {
		snprintf(key, sizeof(key), "u%d", b);
		assert_int_equal(store_del(t, T_USAGE, key, strlen(key)), GPUQ_OK);
	}
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(store_digest(s, digest), GPUQ_OK);
	store_close(s);
}

/* Damage page pg of dst's data.mdb one of DAMAGE_KINDS ways: zeroed, all
 * ones, its header zeroed, the page before copied over it, one byte flipped
 * in its flags, its free-space bounds or its first node. */
#define DAMAGE_KINDS 7
static void damage_page(const char *data, long psize, long pg, int how)
{
	static const long flip_at[] = {10, 12, 16};
	unsigned char *p = malloc((size_t)psize);
	int fd = open(data, O_RDWR);

	assert_true(p && fd >= 0);
	assert_int_equal(pread(fd, p, (size_t)psize, pg * psize), psize);
	if (how == 0 || how == 1)
		memset(p, how ? 0xff : 0, (size_t)psize);
	else if (how == 2)
		memset(p, 0, 16);
	else if (how == 3)
		assert_int_equal(pread(fd, p, (size_t)psize, (pg - 1) * psize), psize);
	else
		p[flip_at[how - 4]] ^= 0x5a;
	assert_int_equal(pwrite(fd, p, (size_t)psize, pg * psize), psize);
	close(fd);
	free(p);
}

/* Open dir (read-only or not) and read everything: GPUQ_OK with the content
 * equal to want, or GPUQ_ECORRUPT (with "store corrupt" when it came from
 * the open). A writable store must also take a commit (LMDB then reads its
 * free list). */
static int damaged_read(const char *dir, bool ro, uint64_t want, char *why, size_t cap)
{
	store_opts_t o;
	store_t *s = NULL;
	store_txn_t *t;
	gpuq_diag_t d = {{0}};
	uint64_t got = 0;
	int rc;

	opts_std(&o);
	o.read_only = ro;
	rc = store_open(dir, &o, &s, &d);
	snprintf(why, cap, "%s", d.msg);
	if (rc)
		return rc == GPUQ_ECORRUPT && !strstr(d.msg, "store corrupt") ? GPUQ_EINVAL : rc;
	rc = store_digest(s, &got);
	if (!rc && got != want)
		rc = GPUQ_ERANGE; /* read wrong content without noticing */
	if (!rc && !ro && !(rc = store_txn_begin(s, &t))) {
		put_str(t, T_HISTORY, "after", "damage");
		rc = store_txn_commit(t, NULL);
	}
	store_close(s);
	return rc;
}

/* LMDB trusts its pages: a zeroed first data page made mdb_cursor_next
 * assert (SIGABRT) inside `gpuq store check`. store_open checks every page
 * first. Each page of a store with branch pages, overflow values and a free
 * list is damaged in turn, DAMAGE_KINDS ways; every time a read-only and a
 * writable open either refuse the store ("store corrupt") or read exactly
 * the content it held (the page was free, or the bytes unused). */
static void damaged_pages_refused(void **state)
{
	fixture_t *f = *state;
	long psize = sysconf(_SC_PAGESIZE), pages;
	char src[400], dir[400], data[440], marker[440], why[GPUQ_DIAG_MAX];
	uint64_t digest;
	struct stat st;
	int refused = 0;

	damage_source(f, &digest);
	snprintf(src, sizeof(src), "%s/data.mdb", f->dir);
	snprintf(dir, sizeof(dir), "%s/dmg", f->root);
	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	snprintf(marker, sizeof(marker), "%s/committed", dir);
	assert_int_equal(stat(src, &st), 0);
	pages = (long)st.st_size / psize;
	assert_true(pages > 20);
	assert_int_equal(mkdir(dir, 0700), 0);
	for (long pg = 2; pg < pages; pg++)
		for (int how = 0; how < DAMAGE_KINDS; how++)
			/* writable (its close syncs: slow) for one kind per page, in turn */
			for (int ro = 1; ro >= (how == pg % DAMAGE_KINDS ? 0 : 1); ro--) {
				int rc;
				file_copy(src, data);
				file_copy(marker_path(f), marker);
				damage_page(data, psize, pg, how);
				rc = damaged_read(dir, ro, digest, why, sizeof(why));
				if (rc != GPUQ_OK && rc != GPUQ_ECORRUPT)
					fail_msg("page %ld damage %d %s: %s: %s", pg, how,
						 ro ? "read-only" : "writable", gpuq_strerror(rc),
						 why);
				refused += rc == GPUQ_ECORRUPT;
				(void)remove(data);
				(void)remove(marker);
			}
	print_message("# %ld pages x %d damages, read-only, and once per page writable: %d "
		      "refused, the rest read intact\n",
		      pages - 2, DAMAGE_KINDS, refused);
	assert_true(refused > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(open_creates_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(put_get_scan_del, setup, teardown),
	    cmocka_unit_test_setup_teardown(sticky_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(map_grows_and_keeps_everything, setup, teardown),
	    cmocka_unit_test_setup_teardown(map_grows_within_one_batch, setup, teardown),
	    cmocka_unit_test_setup_teardown(map_cap_refuses_and_keeps_store_usable, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(reopen_persists_and_checks_types, setup, teardown),
	    cmocka_unit_test_setup_teardown(digest_is_content_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(schema_version_checked, setup, teardown),
	    cmocka_unit_test_setup_teardown(blank_environment, setup, teardown),
	    cmocka_unit_test_setup_teardown(short_data_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(bad_and_absent_directories, setup, teardown),
	    cmocka_unit_test_setup_teardown(damaged_data_file_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(checksum_catches_a_flipped_bit, setup, teardown),
	    cmocka_unit_test_setup_teardown(schema1_store_gains_checksums, setup, teardown),
	    cmocka_unit_test_setup_teardown(schema2_store_gains_meta_sum, setup, teardown),
	    cmocka_unit_test_setup_teardown(bad_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(reader_in_other_process, setup, teardown),
	    cmocka_unit_test_setup_teardown(snapshot_holds_one_commit, setup, teardown),
	    cmocka_unit_test_setup_teardown(txn_fail_is_sticky, setup, teardown),
	    cmocka_unit_test_setup_teardown(commit_in_scan_aborts, setup, teardown),
	    cmocka_unit_test_setup_teardown(damaged_pages_refused, setup, teardown),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR); /* growth is logged at info */
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}

/* Unit tests for queue's records: what the core writes to the store and
 * reads back (round trip, corruption, the version 1 workload record still
 * read), the changed set a commit takes, and the memory a workload costs.
 * Builders in unit/queue_fixtures.h. */
#include "unit/queue_fixtures.h"

/* ---- records ---- */

typedef struct {
	queue_rec_type_t type;
	uint8_t key[QUEUE_KEY_MAX];
	size_t klen;
	uint8_t *val;
	size_t vlen;
} rec_t;

static size_t dump_all(queue_t *q, rec_t **out)
{
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen, n = 0;
	rec_t *recs;

	assert_int_equal(queue_dirty_all(q), GPUQ_OK);
	recs = calloc(queue_dirty_count(q) + 1, sizeof(*recs));
	assert_non_null(recs);
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		size_t need;

		recs[n].type = type;
		memcpy(recs[n].key, key, klen);
		recs[n].klen = klen;
		assert_int_equal(queue_record_encode(q, type, key, klen, NULL, 0, &need),
				 GPUQ_ELIMIT);
		recs[n].val = malloc(need);
		assert_int_equal(
		    queue_record_encode(q, type, key, klen, recs[n].val, need, &recs[n].vlen),
		    GPUQ_OK);
		assert_int_equal(recs[n].vlen, need);
		n++;
	}
	*out = recs;
	return n;
}

static void free_recs(rec_t *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(r[i].val);
	free(r);
}

static queue_t *policy_for_records(void)
{
	queue_t *q = mkq(false);
	static const queue_label_t lbl[] = {{"zone", "x"}};
	queue_flavor_spec_t f = {"f", lbl, 1, NULL, 0, NULL, 0, NULL};
	cqdef_t d1 = {
	    .cohort = "co", .within = QUEUE_WITHIN_LOWER_PRIORITY, .flavors = {{"f", 4, U, U}}};
	cqdef_t d2 = {.cohort = "co", .flavors = {{"f", 4, U, U}}};

	assert_int_equal(queue_flavor_add(q, &f, NULL, NULL), GPUQ_OK);
	add_cq(q, "c1", &d1);
	add_cq(q, "c2", &d2);
	add_lq(q, "ns", "l1", "c1");
	add_lq(q, "ns", "l2", "c2");
	return q;
}

/* A state directory written before workload records were kept in varints
 * (version 1, by 52a8cd1, for the state records_round_trip_and_corruption
 * builds): still read, to the same state and the same future, and written
 * again as version 2, shorter. */
static const struct {
	queue_rec_type_t type; /* record type */
	const char *key;       /* its key */
	const char *hex;       /* its value */
} v1_records[] = {
    {1, "meta", "0101000000000000000a000000000000000a0000000000000000000000"},
    {2, "c1",
     "010100000000000000000000000000000000000000000000000000000000000000010000000100660300677075040"
     "0000000000000"},
    {2, "c2",
     "010000000000000000000000000000000000000000000000000000000000000000010000000100660300677075000"
     "0000000000000"},
    {3, "ns/l1",
     "01c0cbfe8e81bcac3f000000000000000001000000000000000000000000000000000000000000000000000000000"
     "00000"},
    {3, "ns/l2",
     "010000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000"},
    {4, "a",
     "0102006e7301006102006c3100000000010000000000000000000000000000000100030000000a000000000000000"
     "000000000000000000000000000000000000000000000000000000000000000000000000100000000000000010400"
     "6d61696e0200000001030067707502000000000000000104007a6f6e650100780104007a6f6e65020100780100790"
     "101006b0001007603010000000003006770750100660400000000000000"},
    {4, "b",
     "0102006e7301006202006c3203000000020000000000000000000000000000000001010a0000ffffffffffffffff0"
     "000000000000000060000000000000004000000000000000300677075010066000000000000000000000000000000"
     "000104006d61696e01000000010300677075060000000000000000000000000000"},
    {4, "c",
     "0102006e7301006302006c310100000003000000000000000000000000000000000202040000ffffffffffffffff0"
     "000000000000000090000000000000008000000000000000300677075010066000000000000000000000000000000"
     "000104006d61696e01000000010300677075090000000000000000000000000000"},
    {4, "g",
     "0102006e7301006702006c320000000004000000000000000300000001000000000500000000ffffffffffffffff0"
     "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010400"
     "6d61696e03000000010300677075010000000000000000000000000000"},
    {4, "d",
     "0102006e7301006402006c31000000000b000000000000000000000000000000000001000000ffffffffffffffff0"
     "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010400"
     "6d61696e01000000010300677075010000000000000000000000000000"},
    {5, "0meta", "010a00000000000000000000000000000000000000000000800000000000000000"},
    {5, "1series/00000000", "0105006e732f6c31020063310100660300677075"},
    {5, "3open/a", "010a00000000000000010000000000000004000000000000000000000000000000"},
};

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = strlen(hex) / 2;

	assert_true(n <= cap);
	for (size_t i = 0; i < n; i++) {
		unsigned b;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &b), 1);
		out[i] = (uint8_t)b;
	}
	return n;
}

/* The state the record tests write and read back: a workload with a
 * selector, affinity and toleration (a), plain ones (b, c), a gang waiting
 * for its pods (g), a cycle at 10, and one added after it (d). */
static void records_fixture(queue_t *q, queue_result_t *r)
{
	static const char *const vals[] = {"x", "y"};
	static const queue_affinity_t aff[] = {{"zone", vals, 2}};
	static const queue_label_t sel[] = {{"zone", "x"}};
	static const queue_toleration_t tol[] = {
	    {"k", QUEUE_TOLERATE_EQUAL, "v", QUEUE_EFFECT_ANY}};
	wlopt_t o = {.sel = sel, .n_sel = 1, .aff = aff, .n_aff = 1, .tol = tol, .n_tol = 1};
	wlopt_t gang = {.gang_total = 3, .pods_present = 1};

	assert_int_equal(add_wl_opt(q, "a", "ns", "l1", 0, 1, 2, 2, &o), GPUQ_OK);
	add_wl(q, "b", "ns", "l2", 3, 2, 6);
	add_wl(q, "c", "ns", "l1", 1, 3, 9);
	assert_int_equal(add_wl_opt(q, "g", "ns", "l2", 0, 4, 3, 1, &gang), GPUQ_OK);
	cycle(q, 10, r);
	add_wl(q, "d", "ns", "l1", 0, 11, 1);
}

/* p holds the fixture's workloads as q does: each in the same state, with
 * the same explanation. */
static void assert_same_workloads(queue_t *q, queue_t *p)
{
	char e1[256], e2[256];

	for (const char *const *u = (const char *const[]){"a", "b", "c", "d", "g", NULL}; *u; u++) {
		assert_int_equal(state_of(p, *u), state_of(q, *u));
		queue_workload_explain(q, *u, e1, sizeof(e1));
		queue_workload_explain(p, *u, e2, sizeof(e2));
		assert_string_equal(e1, e2);
	}
}

/* ... and the same future: a cycle at 20 admits the same workloads. */
static void assert_same_future(queue_t *q, queue_t *p)
{
	queue_result_t r, r2;

	cycle(q, 20, &r);
	cycle(p, 20, &r2);
	assert_int_equal(r.n_admissions, r2.n_admissions);
	for (size_t i = 0; i < r.n_admissions; i++)
		assert_string_equal(r.admissions[i].uid, r2.admissions[i].uid);
}

static void records_version1_still_read(void **st)
{
	queue_t *q = policy_for_records(), *p = policy_for_records();
	queue_result_t r;
	uint8_t val[512];
	gpuq_diag_t diag = {{0}};

	(void)st;
	records_fixture(q, &r);
	for (size_t i = 0; i < sizeof(v1_records) / sizeof(v1_records[0]); i++) {
		size_t n = unhex(v1_records[i].hex, val, sizeof(val));
		size_t len = 0;

		if (queue_record_apply(p, v1_records[i].type, (const uint8_t *)v1_records[i].key,
				       strlen(v1_records[i].key), val, n, &diag))
			fail_msg("apply %s: %s", v1_records[i].key, diag.msg);
		if (v1_records[i].type != QUEUE_REC_WORKLOAD)
			continue;
		assert_int_equal(val[0], 1);
		/* what this build writes for it: version 5, in fewer bytes */
		assert_int_equal(
		    queue_record_encode(q, QUEUE_REC_WORKLOAD, (const uint8_t *)v1_records[i].key,
					strlen(v1_records[i].key), val, sizeof(val), &len),
		    GPUQ_OK);
		assert_int_equal(val[0], QUEUE_RECORD_VERSION_WORKLOAD);
		assert_true(len < n);
	}
	assert_int_equal(queue_restore_done(p, &diag), GPUQ_OK);
	assert_same_workloads(q, p);
	assert_same_future(q, p);
	queue_destroy(p);
	queue_destroy(q);
}

/* A version 2 workload record (varints, every resource name as text), a
 * version 3 one (no execution time, no limit at its end) and a version 4
 * one (no topology byte) are still read. The fixture names no well-known
 * resource ("gpu"), no limit and no topology, so this build writes its
 * records as version 2 and 3 did but for the version byte and the three
 * zero bytes at the end (time run 0, no limit, no topology), and as
 * version 4 did but for the last: given those, each is read to the same
 * state and future. */
static void records_version2_still_read(void **st)
{
	for (uint8_t version = 2; version <= 4; version++) {
		queue_t *q = policy_for_records(), *p = policy_for_records();
		queue_result_t r;
		rec_t *recs;
		size_t n, wls = 0;
		gpuq_diag_t diag = {{0}};

		(void)st;
		records_fixture(q, &r);
		n = dump_all(q, &recs);
		for (size_t i = 0; i < n; i++) {
			if (recs[i].type == QUEUE_REC_WORKLOAD) {
				assert_int_equal(recs[i].val[0], 5);
				assert_int_equal(recs[i].val[recs[i].vlen - 3], 0);
				assert_int_equal(recs[i].val[recs[i].vlen - 2], 0);
				assert_int_equal(recs[i].val[recs[i].vlen - 1], 0);
				recs[i].val[0] = version;
				recs[i].vlen -= version == 4 ? 1 : 3;
				wls++;
			}
			if (queue_record_apply(p, recs[i].type, recs[i].key, recs[i].klen,
					       recs[i].val, recs[i].vlen, &diag))
				fail_msg("apply %.*s: %s", (int)recs[i].klen, recs[i].key,
					 diag.msg);
		}
		assert_int_equal(wls, 5);
		assert_int_equal(queue_restore_done(p, &diag), GPUQ_OK);
		assert_same_workloads(q, p);
		assert_same_future(q, p);
		free_recs(recs, n);
		queue_destroy(p);
		queue_destroy(q);
	}
}

/* From version 3 a workload record names a well-known resource
 * (quota_known_resources) by its index, not its text: a queued GPU Job's
 * record named "nvidia.com/gpu" twice (its request, why it waits), 28 of
 * its 113 stored bytes. The pod set's request, the admission's and the wait's all
 * come back from the index to the same state and explanation. */
static void records_name_known_resources_by_index(void **st)
{
	cqdef_t d = {.flavors = {{"f", 2, U, U}}, .res = "nvidia.com/gpu"};
	wlopt_t o = {.res = "nvidia.com/gpu"};
	queue_t *q = mkq(false), *p = mkq(false);
	queue_result_t r;
	rec_t *recs;
	size_t n;
	gpuq_diag_t diag = {{0}};

	(void)st;
	for (queue_t **x = (queue_t *[]){q, p, NULL}; *x; x++) {
		add_flavor(*x, "f");
		add_cq(*x, "c1", &d);
		add_lq(*x, "ns", "l1", "c1");
	}
	assert_int_equal(add_wl_opt(q, "a", "ns", "l1", 0, 1, 1, 2, &o), GPUQ_OK); /* admitted */
	assert_int_equal(add_wl_opt(q, "b", "ns", "l1", 0, 2, 1, 1, &o), GPUQ_OK); /* waits */
	cycle(q, 10, &r);
	assert_int_equal(state_of(q, "a"), QUEUE_WL_ADMITTED);
	assert_int_equal(state_of(q, "b"), QUEUE_WL_PENDING);
	n = dump_all(q, &recs);
	for (size_t i = 0; i < n; i++) {
		if (recs[i].type == QUEUE_REC_WORKLOAD) {
			assert_int_equal(recs[i].val[0], QUEUE_RECORD_VERSION_WORKLOAD);
			assert_null(memmem(recs[i].val, recs[i].vlen, "nvidia.com/gpu", 14));
		}
		if (queue_record_apply(p, recs[i].type, recs[i].key, recs[i].klen, recs[i].val,
				       recs[i].vlen, &diag))
			fail_msg("apply %.*s: %s", (int)recs[i].klen, recs[i].key, diag.msg);
	}
	assert_int_equal(queue_restore_done(p, &diag), GPUQ_OK);
	for (const char *const *u = (const char *const[]){"a", "b", NULL}; *u; u++) {
		char e1[256], e2[256];

		assert_int_equal(state_of(p, *u), state_of(q, *u));
		queue_workload_explain(q, *u, e1, sizeof(e1));
		queue_workload_explain(p, *u, e2, sizeof(e2));
		assert_string_equal(e1, e2);
	}
	free_recs(recs, n);
	queue_destroy(p);
	queue_destroy(q);
}

static void records_round_trip_and_corruption(void **st)
{
	queue_t *q = policy_for_records(), *p;
	queue_result_t r;
	rec_t *recs;
	size_t n;
	gpuq_diag_t diag = {{0}};

	(void)st;
	records_fixture(q, &r);
	n = dump_all(q, &recs);
	assert_true(n >= 1 + 2 + 2 + 5);
	p = policy_for_records();
	for (size_t i = 0; i < n; i++)
		if (queue_record_apply(p, recs[i].type, recs[i].key, recs[i].klen, recs[i].val,
				       recs[i].vlen, &diag))
			fail_msg("apply %.*s: %s", (int)recs[i].klen, recs[i].key, diag.msg);
	assert_int_equal(queue_restore_done(p, &diag), GPUQ_OK);
	/* same state, same explanations */
	assert_same_workloads(q, p);
	assert_int_equal(queue_cycle_count(p), queue_cycle_count(q));
	/* and the same future */
	assert_same_future(q, p);
	/* a second apply of the same workload */
	for (size_t i = 0; i < n; i++)
		if (recs[i].type == QUEUE_REC_WORKLOAD)
			assert_int_equal(queue_record_apply(p, recs[i].type, recs[i].key,
							    recs[i].klen, recs[i].val, recs[i].vlen,
							    NULL),
					 GPUQ_EEXIST);
	queue_destroy(p);
	/* every truncation and every single-byte flip: ECORRUPT or a clean apply,
	 * never a crash (ASan/valgrind watch) */
	for (size_t i = 0; i < n; i++) {
		for (size_t cut = 0; cut < recs[i].vlen; cut++) {
			p = policy_for_records();
			assert_int_not_equal(queue_record_apply(p, recs[i].type, recs[i].key,
								recs[i].klen, recs[i].val, cut,
								NULL),
					     GPUQ_OK);
			queue_destroy(p);
		}
		for (size_t b = 0; b < recs[i].vlen; b++) {
			uint8_t *v = malloc(recs[i].vlen);
			int rc;

			memcpy(v, recs[i].val, recs[i].vlen);
			v[b] ^= 0xa5;
			p = policy_for_records();
			rc = queue_record_apply(p, recs[i].type, recs[i].key, recs[i].klen, v,
						recs[i].vlen, NULL);
			assert_true(rc == GPUQ_OK || rc == GPUQ_ECORRUPT || rc == GPUQ_ENOTFOUND ||
				    rc == GPUQ_EEXIST);
			queue_destroy(p);
			free(v);
		}
	}
	/* a bad version and an unknown type */
	p = policy_for_records();
	recs[0].val[0] = 9;
	assert_int_equal(queue_record_apply(p, recs[0].type, recs[0].key, recs[0].klen, recs[0].val,
					    recs[0].vlen, NULL),
			 GPUQ_ECORRUPT);
	assert_int_equal(queue_record_apply(p, (queue_rec_type_t)77, recs[0].key, recs[0].klen,
					    recs[0].val, recs[0].vlen, NULL),
			 GPUQ_ECORRUPT);
	queue_destroy(p);
	free_recs(recs, n);
	queue_destroy(q);
}

/* The changed set: deleted workloads encode as ENOTFOUND; each key once. */
static void dirty_tracking(void **st)
{
	queue_t *q = policy_for_records();
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen, len, n = 0, wl = 0;
	uint8_t buf[4096];

	(void)st;
	queue_dirty_clear(q);
	assert_int_equal(queue_dirty_count(q), 0);
	add_wl(q, "w", "ns", "l1", 0, 1, 1);
	cycle(q, 2, NULL);
	add_wl(q, "v", "ns", "l1", 0, 1, 1);
	assert_int_equal(queue_workload_delete(q, "v", 3), GPUQ_OK);
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		int rc = queue_record_encode(q, type, key, klen, buf, sizeof(buf), &len);

		n++;
		if (type == QUEUE_REC_WORKLOAD) {
			wl++;
			if (klen == 1 && key[0] == 'v')
				assert_int_equal(rc, GPUQ_ENOTFOUND);
			else
				assert_int_equal(rc, GPUQ_OK);
		}
	}
	assert_int_equal(wl, 2);
	assert_int_equal(n, queue_dirty_count(q));
	/* cycle count, CQ c1 usage, tenant ns/l1 */
	assert_true(n >= 5);
	queue_dirty_clear(q);
	cycle(q, 4, NULL); /* nothing changed but the cycle count */
	assert_int_equal(queue_dirty_count(q), 1);
	queue_destroy(q);
}

/* Memory per pending workload stays under 1 KiB. */
static void memory_per_workload(void **st)
{
	queue_t *q = policy_for_records();
	size_t before, after;
	char uid[48];

	(void)st;
	queue_dirty_clear(q);
	before = queue_memory_bytes(q);
	for (int i = 0; i < 10000; i++) {
		snprintf(uid, sizeof(uid), "6f1c0d3e-%08d-4a8b-9c1d-%012d", i, i);
		add_wl(q, uid, "ns", "l1", i % 7, i, 1 + i % 3);
	}
	queue_dirty_clear(q);
	after = queue_memory_bytes(q);
	print_message("# %zu bytes per pending workload\n", (after - before) / 10000);
	assert_true((after - before) / 10000 < 1024);
	queue_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(records_round_trip_and_corruption),
	    cmocka_unit_test(records_version1_still_read),
	    cmocka_unit_test(records_version2_still_read),
	    cmocka_unit_test(records_name_known_resources_by_index),
	    cmocka_unit_test(dirty_tracking),
	    cmocka_unit_test(memory_per_workload),
	};

	return cmocka_run_group_tests_name("queue_records", tests, NULL, NULL);
}

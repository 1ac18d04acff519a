/* Unit tests for the store's unchanged puts: a put whose value is already
 * stored byte for byte is not written again (store.c: rec_put), so a batch
 * that re-puts what a core marked but did not change copies no leaf page;
 * a changed value is still written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store/store.h"
#include "unit/store_fixture.h"

#define N_RECS 1000

static int setup(void **state)
{
	return fixture_setup(state, "gpuq-store-kept", "state");
}

static int teardown(void **state)
{
	return fixture_teardown(state);
}

static store_t *open_one(const fixture_t *f)
{
	store_opts_t o;
	store_t *s = NULL;
	gpuq_diag_t d = {{0}};

	store_opts_init(&o);
	o.types[1] = "workloads";
	o.nosync = true;
	if (store_open(f->dir, &o, &s, &d))
		fail_msg("store_open: %s", d.msg);
	return s;
}

/* Record i's value: about 90 bytes, as a queued workload's; `changed`
 * makes record 5's another of the same length, in its last bytes. */
static size_t value_of(int i, bool changed, char *out, size_t cap)
{
	return (size_t)snprintf(out, cap, "value-%06d-%072d", i, changed && i == 5 ? i + 1 : i);
}

/* One batch putting all N_RECS records; the store's bytes in use after. */
static size_t put_all(store_t *s, bool changed)
{
	store_txn_t *t = NULL;
	store_info_t info;
	char k[32], v[128];

	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	for (int i = 0; i < N_RECS; i++) {
		size_t n = value_of(i, changed, v, sizeof(v));

		snprintf(k, sizeof(k), "uid-%08x", (unsigned)i * 2654435761u); /* random order */
		assert_int_equal(store_put(t, 1, k, strlen(k), v, n), GPUQ_OK);
	}
	assert_int_equal(store_txn_commit(t, NULL), GPUQ_OK);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	return info.map_used;
}

static void expect_record(store_t *s, int i, bool changed)
{
	char k[32], want[128];
	size_t n = value_of(i, changed, want, sizeof(want)), got_n = 0;
	void *got = NULL;

	snprintf(k, sizeof(k), "uid-%08x", (unsigned)i * 2654435761u);
	assert_int_equal(store_get(s, 1, k, strlen(k), &got, &got_n), GPUQ_OK);
	assert_int_equal(got_n, n);
	assert_memory_equal(got, want, n);
	free(got);
}

/* The same 1,000 records put again with one changed: 999 kept, the one
 * written (read back), and the file grows by the few pages of that one
 * leaf's path, not by a copy of every leaf (about 30). */
static void unchanged_puts_copy_no_page(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_one(f);
	store_info_t info;
	size_t used0, used1, page;

	used0 = put_all(s, false);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	page = info.page_size;
	assert_int_equal(info.puts_kept, 0);
	used1 = put_all(s, true);
	assert_int_equal(store_info_get(s, &info), GPUQ_OK);
	assert_int_equal(info.puts_kept, N_RECS - 1);
	print_message("# pages added by the second batch: %zu\n", (used1 - used0) / page);
	assert_true(used1 - used0 <= 6 * page);
	expect_record(s, 5, true);
	expect_record(s, 6, false);
	store_close(s);
	/* the kept records are whole after a reopen (their checksums hold) */
	s = open_one(f);
	expect_record(s, 5, true);
	expect_record(s, 999, false);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(unchanged_puts_copy_no_page, setup, teardown),
	};

	return cmocka_run_group_tests_name("store_kept", tests, NULL, NULL);
}

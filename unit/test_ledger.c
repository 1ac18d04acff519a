/* Unit tests for ledger: a workload admitted borrowing part of its
 * request, evicted, readmitted and finished, in hand-worked GPU-hours;
 * windows cutting intervals; grouping and prices; records round trip; the
 * hour and series bounds; price parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger.h"

#define H LEDGER_HOUR_MS

static const ledger_part_t BORROWING[] = {
    /* 8 GPUs with 6 left of the CQ's nominal: 2 borrowed; 4 cores */
    {"team-a/lq", "research", "h100", "nvidia.com/gpu", 6, 2},
    {"team-a/lq", "research", "h100", "cpu", 4000, 0},
};
static const ledger_part_t WITHIN[] = {
    {"team-a/lq", "research", "h100", "nvidia.com/gpu", 8, 0},
};
static const ledger_part_t OTHER[] = {
    {"team-b/lq", "infer", "l4", "nvidia.com/gpu", 2, 0},
};

/* The row of (group, resource), or fail. */
static const ledger_row_t *row(const ledger_report_t *r, const char *group, const char *res)
{
	for (size_t i = 0; i < r->n_rows; i++)
		if (!strcmp(r->rows[i].group, group) && !strcmp(r->rows[i].resource, res))
			return &r->rows[i];
	fail_msg("no row %s %s", group, res);
	return NULL;
}

static void window(const ledger_t *l, int64_t since, int64_t until, int64_t now, ledger_by_t by,
		   ledger_report_t *out)
{
	static const ledger_price_t prices[] = {{"h100", 2.5}, {"l4", 0.75}};
	ledger_query_t q = {since, until, now, by, prices, 2};

	assert_int_equal(ledger_window(l, &q, out), GPUQ_OK);
}

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* w1: admitted at 0.5 h borrowing 2 of 8 GPUs, evicted at 2 h, readmitted
 * at 3 h within nominal, finished at 3.75 h. Hours 0: 0.5 h x (6, 2) =
 * (3, 1); 1: (6, 2); 3: 0.75 h x 8 = 6. w2 (team-b, l4, 2 GPUs) opens at 5 h. */
static ledger_t *history(void)
{
	ledger_t *l;

	assert_int_equal(ledger_create(&l), GPUQ_OK);
	assert_int_equal(ledger_open(l, "w1", H / 2, BORROWING, 2), GPUQ_OK);
	assert_int_equal(ledger_open(l, "w1", H, WITHIN, 1), GPUQ_EEXIST);
	assert_int_equal(ledger_close(l, "w1", 2 * H), GPUQ_OK);
	assert_int_equal(ledger_close(l, "w1", 2 * H), GPUQ_ENOTFOUND);
	assert_int_equal(ledger_open(l, "w1", 3 * H, WITHIN, 1), GPUQ_OK);
	assert_int_equal(ledger_close(l, "w1", 3 * H + 3 * H / 4), GPUQ_OK);
	assert_int_equal(ledger_open(l, "w2", 5 * H, OTHER, 1), GPUQ_OK);
	assert_true(ledger_is_open(l, "w2"));
	assert_int_equal(ledger_clock(l), 5 * H);
	return l;
}

static void borrowed_apart(void **st)
{
	ledger_t *l = history();
	ledger_report_t r;

	(void)st;
	window(l, 0, 4 * H, 5 * H, LEDGER_BY_LOCALQUEUE, &r);
	assert_int_equal(r.n_rows, 2); /* team-a cpu, gpu; w2 opened after the window */
	NEAR(row(&r, "team-a/lq", "nvidia.com/gpu")->nominal_hours, 15.0);
	NEAR(row(&r, "team-a/lq", "nvidia.com/gpu")->borrowed_hours, 3.0);
	NEAR(row(&r, "team-a/lq", "nvidia.com/gpu")->cost, 18.0 * 2.5);
	NEAR(row(&r, "team-a/lq", "cpu")->nominal_hours, 6.0); /* 4 cores x 1.5 h */
	NEAR(row(&r, "team-a/lq", "cpu")->cost, 0.0);	       /* cpu is not priced */
	assert_false(row(&r, "team-a/lq", "cpu")->accelerator);
	assert_int_equal(r.from_ms, 0);
	assert_int_equal(r.to_ms, 5 * H);
	ledger_report_deinit(&r);
	ledger_destroy(l);
}

static void windows_cut(void **st)
{
	ledger_t *l = history();
	ledger_report_t r;

	(void)st;
	/* since 1.5 h starts at hour 1: hours 1 and 3 */
	window(l, H + H / 2, 4 * H, 5 * H, LEDGER_BY_NAMESPACE, &r);
	NEAR(row(&r, "team-a", "nvidia.com/gpu")->nominal_hours, 12.0);
	NEAR(row(&r, "team-a", "nvidia.com/gpu")->borrowed_hours, 2.0);
	ledger_report_deinit(&r);
	/* until 0.2 h ends with hour 0 */
	window(l, 0, H / 5, 5 * H, LEDGER_BY_NAMESPACE, &r);
	NEAR(row(&r, "team-a", "nvidia.com/gpu")->nominal_hours, 3.0);
	NEAR(row(&r, "team-a", "nvidia.com/gpu")->borrowed_hours, 1.0);
	ledger_report_deinit(&r);
	/* the open w2: [6 h, now 6.5 h] = 0.5 h x 2 */
	window(l, 6 * H, 10 * H, 6 * H + H / 2, LEDGER_BY_FLAVOR, &r);
	assert_int_equal(r.n_rows, 1);
	NEAR(row(&r, "l4", "nvidia.com/gpu")->nominal_hours, 1.0);
	NEAR(row(&r, "l4", "nvidia.com/gpu")->cost, 0.75);
	ledger_report_deinit(&r);
	/* until 5.5 h: open work up to the end of hour 5 (6 h), not now */
	window(l, 0, 5 * H + H / 2, 8 * H, LEDGER_BY_CLUSTERQUEUE, &r);
	NEAR(row(&r, "infer", "nvidia.com/gpu")->nominal_hours, 2.0);
	NEAR(row(&r, "research", "nvidia.com/gpu")->nominal_hours, 15.0);
	assert_int_equal(r.to_ms, 6 * H);
	ledger_report_deinit(&r);
	{
		ledger_query_t bad = {2 * H, H, 0, LEDGER_BY_FLAVOR, NULL, 0};
		assert_int_equal(ledger_window(l, &bad, &r), GPUQ_EINVAL);
	}
	ledger_destroy(l);
}

/* Every record of a into a fresh ledger, through encode and apply. */
static ledger_t *round_trip(ledger_t *a)
{
	ledger_t *b;
	ledger_dirty_iter_t it = {0};
	const uint8_t *key;
	size_t klen;
	char keys[64][600];
	size_t n = 0;

	assert_int_equal(ledger_dirty_all(a), GPUQ_OK);
	while (ledger_dirty_next(a, &it, &key, &klen) == GPUQ_OK) {
		assert_true(n < 64);
		memcpy(keys[n], key, klen);
		keys[n++][klen] = '\0';
	}
	for (size_t i = 1; i < n; i++) /* restore order is key order */
		assert_true(strcmp(keys[i - 1], keys[i]) < 0);
	assert_int_equal(ledger_create(&b), GPUQ_OK);
	for (size_t i = 0; i < n; i++) {
		uint8_t buf[4096];
		size_t len;
		gpuq_diag_t d = {0};

		assert_int_equal(ledger_record_encode(a, (const uint8_t *)keys[i], strlen(keys[i]),
						      buf, sizeof(buf), &len),
				 GPUQ_OK);
		assert_int_equal(
		    ledger_record_apply(b, (const uint8_t *)keys[i], strlen(keys[i]), buf, len, &d),
		    GPUQ_OK);
		if (len > 1) /* a cut value is refused, never read past */
			assert_int_equal(ledger_record_apply(b, (const uint8_t *)keys[i],
							     strlen(keys[i]), buf, len - 1, &d),
					 GPUQ_ECORRUPT);
	}
	assert_int_equal(ledger_restore_done(b, NULL), GPUQ_OK);
	ledger_dirty_clear(a);
	return b;
}

static void records_round_trip(void **st)
{
	ledger_t *a = history(), *b, *c;
	ledger_report_t ra, rb, rc;

	(void)st;
	b = round_trip(a);
	assert_int_equal(ledger_clone(a, &c), GPUQ_OK);
	window(a, 0, 10 * H, 7 * H, LEDGER_BY_LOCALQUEUE, &ra);
	window(b, 0, 10 * H, 7 * H, LEDGER_BY_LOCALQUEUE, &rb);
	window(c, 0, 10 * H, 7 * H, LEDGER_BY_LOCALQUEUE, &rc);
	assert_int_equal(ra.n_rows, 3);
	assert_int_equal(rb.n_rows, 3);
	assert_int_equal(rc.n_rows, 3);
	for (size_t i = 0; i < ra.n_rows; i++) {
		assert_string_equal(ra.rows[i].group, rb.rows[i].group);
		NEAR(ra.rows[i].nominal_hours, rb.rows[i].nominal_hours);
		NEAR(ra.rows[i].borrowed_hours, rc.rows[i].borrowed_hours);
	}
	NEAR(row(&rb, "team-b/lq", "nvidia.com/gpu")->nominal_hours, 4.0); /* open 5 h..7 h */
	/* the restored ledger goes on: w2 closes */
	assert_int_equal(ledger_close(b, "w2", 6 * H), GPUQ_OK);
	assert_int_equal(ledger_clock(b), 6 * H);
	ledger_report_deinit(&ra), ledger_report_deinit(&rb), ledger_report_deinit(&rc);
	ledger_destroy(a), ledger_destroy(b), ledger_destroy(c);
}

static void changed_set(void **st)
{
	ledger_t *l;
	ledger_dirty_iter_t it = {0};
	const uint8_t *key;
	size_t klen, n = 0;
	uint8_t buf[64];

	(void)st;
	assert_int_equal(ledger_create(&l), GPUQ_OK);
	assert_int_equal(ledger_open(l, "w1", 1, WITHIN, 1), GPUQ_OK);
	/* meta (clock), the series and the open interval */
	assert_int_equal(ledger_dirty_count(l), 3);
	ledger_dirty_clear(l);
	assert_int_equal(ledger_close(l, "w1", H / 2), GPUQ_OK);
	while (ledger_dirty_next(l, &it, &key, &klen) == GPUQ_OK) {
		n++;
		if (klen > 6 && !memcmp(key, "3open/", 6)) /* closed: a delete */
			assert_int_equal(
			    ledger_record_encode(l, key, klen, buf, sizeof(buf), &klen),
			    GPUQ_ENOTFOUND);
	}
	assert_int_equal(n, 3); /* the hour, the open interval gone, meta */
	ledger_dirty_clear(l);
	assert_int_equal(ledger_dirty_count(l), 0);
	ledger_destroy(l);
}

/* Past LEDGER_HOURS_MAX hours the oldest go to the dropped tally. */
static void hour_bound(void **st)
{
	ledger_t *l;
	ledger_report_t r;
	const int64_t extra = 10;

	(void)st;
	assert_int_equal(ledger_create(&l), GPUQ_OK);
	/* one long interval: its first 10 hours are dropped at once */
	assert_int_equal(ledger_open(l, "long", 0, WITHIN, 1), GPUQ_OK);
	assert_int_equal(ledger_close(l, "long", (LEDGER_HOURS_MAX + extra) * H), GPUQ_OK);
	window(l, 0, (LEDGER_HOURS_MAX + extra) * H, (LEDGER_HOURS_MAX + extra) * H,
	       LEDGER_BY_FLAVOR, &r);
	NEAR(r.dropped_hours, 8.0 * (double)extra);
	NEAR(row(&r, "h100", "nvidia.com/gpu")->nominal_hours, 8.0 * LEDGER_HOURS_MAX);
	assert_int_equal(r.kept_from_ms, extra * H);
	ledger_report_deinit(&r);
	/* one more hour: the oldest kept hour goes too */
	assert_int_equal(ledger_open(l, "next", (LEDGER_HOURS_MAX + extra) * H, OTHER, 1), GPUQ_OK);
	assert_int_equal(ledger_close(l, "next", (LEDGER_HOURS_MAX + extra + 1) * H), GPUQ_OK);
	window(l, 0, INT64_MAX / 4, (LEDGER_HOURS_MAX + extra + 1) * H, LEDGER_BY_FLAVOR, &r);
	NEAR(r.dropped_hours, 8.0 * (double)(extra + 1));
	NEAR(row(&r, "h100", "nvidia.com/gpu")->nominal_hours, 8.0 * (LEDGER_HOURS_MAX - 1));
	NEAR(row(&r, "l4", "nvidia.com/gpu")->nominal_hours, 2.0);
	assert_int_equal(r.kept_from_ms, (extra + 1) * H);
	/* work closing into a dropped hour goes to the tally too */
	assert_int_equal(ledger_open(l, "late", 0, OTHER, 1), GPUQ_OK);
	ledger_report_deinit(&r);
	ledger_destroy(l);
}

static void series_bound(void **st)
{
	ledger_t *l;
	char lq[32];
	ledger_report_t r;

	(void)st;
	assert_int_equal(ledger_create(&l), GPUQ_OK);
	for (int i = 0; i <= LEDGER_SERIES_MAX; i++) {
		ledger_part_t p = {lq, "cq", "f", "nvidia.com/gpu", 1, 0};
		char uid[32];
		snprintf(lq, sizeof(lq), "ns/q%d", i);
		snprintf(uid, sizeof(uid), "u%d", i);
		assert_int_equal(ledger_open(l, uid, 0, &p, 1), GPUQ_OK);
	}
	window(l, 0, H, H, LEDGER_BY_FLAVOR, &r);
	assert_int_equal(r.unrecorded, 1);
	NEAR(row(&r, "f", "nvidia.com/gpu")->nominal_hours, (double)LEDGER_SERIES_MAX);
	ledger_report_deinit(&r);
	ledger_destroy(l);
}

static void bad_input(void **st)
{
	ledger_t *l;
	ledger_part_t neg = {"a/b", "c", "f", "r", -1, 0}, empty = {"", "c", "f", "r", 1, 0};

	(void)st;
	assert_int_equal(ledger_create(&l), GPUQ_OK);
	assert_int_equal(ledger_open(l, "", 0, WITHIN, 1), GPUQ_EINVAL);
	assert_int_equal(ledger_open(l, "u", 0, &neg, 1), GPUQ_EINVAL);
	assert_int_equal(ledger_open(l, "u", 0, &empty, 1), GPUQ_EINVAL);
	assert_int_equal(ledger_open(l, "u", 0, WITHIN, LEDGER_PARTS_MAX + 1), GPUQ_ELIMIT);
	assert_int_equal(
	    ledger_record_apply(l, (const uint8_t *)"2hour/x", 7, (const uint8_t *)"\x01", 1, NULL),
	    GPUQ_ECORRUPT);
	assert_int_equal(
	    ledger_record_apply(l, (const uint8_t *)"9x", 2, (const uint8_t *)"\x01", 1, NULL),
	    GPUQ_ECORRUPT);
	ledger_destroy(l);
}

static void price_parse(void **st)
{
	static const struct {
		const char *in;
		int rc;
		double want;
	} cases[] = {
	    {"2.50", GPUQ_OK, 2.5},	 {"0", GPUQ_OK, 0.0},	  {"12", GPUQ_OK, 12.0},
	    {".5", GPUQ_OK, 0.5},	 {"abc", GPUQ_EINVAL, 0}, {"-1", GPUQ_EINVAL, 0},
	    {"1e3", GPUQ_EINVAL, 0},	 {"", GPUQ_EINVAL, 0},	  {"1.2.3", GPUQ_EINVAL, 0},
	    {"2000000", GPUQ_EINVAL, 0}, {".", GPUQ_EINVAL, 0},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gpuq_diag_t d = {0};
		double v = -1;

		assert_int_equal(ledger_price_parse(cases[i].in, &v, &d), cases[i].rc);
		if (!cases[i].rc)
			NEAR(v, cases[i].want);
		else
			assert_non_null(strstr(d.msg, "price \""));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(borrowed_apart),	  cmocka_unit_test(windows_cut),
	    cmocka_unit_test(records_round_trip), cmocka_unit_test(changed_set),
	    cmocka_unit_test(hour_bound),	  cmocka_unit_test(series_bound),
	    cmocka_unit_test(bad_input),	  cmocka_unit_test(price_parse),
	};

	return cmocka_run_group_tests_name("ledger", tests, NULL, NULL);
}

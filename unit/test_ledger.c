/* Unit tests for ledger: a workload admitted borrowing part of its
 * request, evicted, readmitted and finished, in hand-worked GPU-hours;
 * windows cutting intervals; grouping and prices; records round trip; the
 * hour and series bounds; price parsing; checkpoints (encode, merge
 * without double counting, parts, bad input). */
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

/* A flavor with no price: its accelerator hours are unpriced, apart from
 * the cost, never a cost of 0 that looks priced; cpu is never priced. */
static void unpriced_apart(void **st)
{
	ledger_t *l = history();
	static const ledger_price_t only_h100[] = {{"h100", 2.5}};
	ledger_query_t q = {0, 8 * H, 6 * H, LEDGER_BY_FLAVOR, only_h100, 1};
	ledger_report_t r;

	(void)st;
	assert_int_equal(ledger_window(l, &q, &r), GPUQ_OK);
	NEAR(row(&r, "h100", "nvidia.com/gpu")->cost, 18.0 * 2.5);
	NEAR(row(&r, "h100", "nvidia.com/gpu")->unpriced_hours, 0.0);
	NEAR(row(&r, "l4", "nvidia.com/gpu")->cost, 0.0);
	NEAR(row(&r, "l4", "nvidia.com/gpu")->unpriced_hours, 2.0); /* 1 h x 2 */
	NEAR(row(&r, "h100", "cpu")->unpriced_hours, 0.0);
	ledger_report_deinit(&r);
	/* by ClusterQueue nothing priced: every GPU-hour unpriced */
	q.by = LEDGER_BY_CLUSTERQUEUE;
	q.n_prices = 0;
	assert_int_equal(ledger_window(l, &q, &r), GPUQ_OK);
	NEAR(row(&r, "research", "nvidia.com/gpu")->unpriced_hours, 18.0);
	NEAR(row(&r, "research", "nvidia.com/gpu")->cost, 0.0);
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

/* ---- checkpoints ---- */

typedef struct {
	uint8_t *part[LEDGER_CKPT_PARTS_MAX];
	size_t len[LEDGER_CKPT_PARTS_MAX];
	ledger_ckpt_info_t info;
} ckpt_t;

static void ckpt_make(const ledger_t *l, int64_t at, size_t part_max, ckpt_t *c)
{
	memset(c, 0, sizeof(*c));
	assert_int_equal(ledger_checkpoint_encode(l, at, part_max, c->part, c->len, &c->info),
			 GPUQ_OK);
	assert_true(c->info.parts >= 1 && c->info.parts <= LEDGER_CKPT_PARTS_MAX);
}

static void ckpt_free(ckpt_t *c)
{
	for (size_t i = 0; i < c->info.parts; i++)
		free(c->part[i]);
}

/* Merge every part; the cells added in all. */
static uint32_t ckpt_merge(ledger_t *l, const ckpt_t *c)
{
	uint32_t added = 0;

	for (size_t i = c->info.parts; i-- > 0;) { /* any order */
		ledger_merge_info_t mi;
		gpuq_diag_t d = {{0}};
		assert_int_equal(ledger_checkpoint_merge(l, c->part[i], c->len[i], &mi, &d),
				 GPUQ_OK);
		added += mi.cells_added;
	}
	return added;
}

/* GPU hours of a LocalQueue over everything, nominal + borrowed. */
static double gpu_hours(const ledger_t *l, const char *lq, int64_t now)
{
	ledger_report_t r;
	double h = 0;

	window(l, 0, 100 * H, now, LEDGER_BY_LOCALQUEUE, &r);
	for (size_t i = 0; i < r.n_rows; i++)
		if (!strcmp(r.rows[i].group, lq) && !strcmp(r.rows[i].resource, "nvidia.com/gpu"))
			h += r.rows[i].nominal_hours + r.rows[i].borrowed_hours;
	ledger_report_deinit(&r);
	return h;
}

/* The old leader (history(): team-a 15 + 3 GPU-hours closed, w2 open since
 * 5 h) checkpoints at 6.5 h and dies; the new leader's core started empty
 * and adopted w2 at 6.5 h. After the merge it has the old hours and its
 * own, once; merging the same checkpoint again adds nothing. */
static void checkpoint_failover(void **st)
{
	ledger_t *old = history(), *neu;
	ckpt_t c;
	ledger_report_t r;

	(void)st;
	ckpt_make(old, 6 * H + H / 2, 0, &c);
	assert_int_equal(c.info.parts, 1);
	assert_int_equal(c.info.hours, 5); /* 0, 1, 3 closed; 5, 6 of the open w2 */
	assert_int_equal(c.info.hours_left_out, 0);
	assert_int_equal(c.info.oldest_ms, 0);
	assert_true(ledger_is_open(old, "w2")); /* encoding leaves the ledger alone */
	assert_int_equal(ledger_create(&neu), GPUQ_OK);
	assert_int_equal(ledger_open(neu, "w2", 6 * H + H / 2, OTHER, 1), GPUQ_OK);
	assert_true(ckpt_merge(neu, &c) > 0);
	assert_true(ledger_dirty_count(neu) > 0); /* to be committed with the core's */
	NEAR(gpu_hours(neu, "team-a/lq", 7 * H), 18.0);
	NEAR(gpu_hours(neu, "team-b/lq", 7 * H), 4.0); /* 2 GPUs 5 h..6.5 h old, ..7 h new */
	window(neu, 0, 100 * H, 7 * H, LEDGER_BY_LOCALQUEUE, &r);
	NEAR(row(&r, "team-a/lq", "nvidia.com/gpu")->borrowed_hours, 3.0); /* kept apart */
	NEAR(row(&r, "team-a/lq", "cpu")->nominal_hours, 6.0);		   /* 4 cores x 1.5 h */
	ledger_report_deinit(&r);
	assert_int_equal(ckpt_merge(neu, &c), 0);
	NEAR(gpu_hours(neu, "team-a/lq", 7 * H), 18.0);
	NEAR(gpu_hours(neu, "team-b/lq", 7 * H), 4.0);
	/* the survivor goes on: w2 closes at 8 h */
	assert_int_equal(ledger_close(neu, "w2", 8 * H), GPUQ_OK);
	NEAR(gpu_hours(neu, "team-b/lq", 8 * H), 6.0);
	assert_int_equal(ckpt_merge(neu, &c), 0);
	NEAR(gpu_hours(neu, "team-b/lq", 8 * H), 6.0);
	ckpt_free(&c);
	ledger_destroy(old), ledger_destroy(neu);
}

/* A ledger merging its own checkpoint (a restart, a leader taking the
 * Lease back) adds nothing, open intervals included; one holding part of
 * the hours itself gets only the rest. */
static void checkpoint_own_hours(void **st)
{
	ledger_t *l = history(), *part;
	ckpt_t c;

	(void)st;
	ckpt_make(l, 6 * H + H / 2, 0, &c);
	assert_int_equal(ckpt_merge(l, &c), 0);
	NEAR(gpu_hours(l, "team-a/lq", 7 * H), 18.0);
	NEAR(gpu_hours(l, "team-b/lq", 7 * H), 4.0);
	/* w2 closes later: its hours before 6.5 h count once */
	assert_int_equal(ledger_close(l, "w2", 7 * H), GPUQ_OK);
	assert_int_equal(ckpt_merge(l, &c), 0);
	NEAR(gpu_hours(l, "team-b/lq", 7 * H), 4.0);
	/* a replica that counted w1's first run itself (0.5 h..2 h: 9 + 3) */
	assert_int_equal(ledger_create(&part), GPUQ_OK);
	assert_int_equal(ledger_open(part, "w1", H / 2, BORROWING, 2), GPUQ_OK);
	assert_int_equal(ledger_close(part, "w1", 2 * H), GPUQ_OK);
	NEAR(gpu_hours(part, "team-a/lq", 2 * H), 12.0);
	assert_true(ckpt_merge(part, &c) > 0);
	NEAR(gpu_hours(part, "team-a/lq", 7 * H), 18.0);
	NEAR(gpu_hours(part, "team-b/lq", 7 * H), 3.0); /* 5 h..6.5 h */
	ckpt_free(&c);
	ledger_destroy(l), ledger_destroy(part);
}

/* Small parts: several, self-contained, merged in any order to the same
 * totals; past LEDGER_CKPT_PARTS_MAX parts the oldest hours are left out. */
static void checkpoint_parts(void **st)
{
	ledger_t *l, *a;
	ckpt_t c;
	char uid[32];

	(void)st;
	assert_int_equal(ledger_create(&l), GPUQ_OK);
	for (int i = 0; i < 40; i++) { /* 40 hours, one 8-GPU hour each */
		snprintf(uid, sizeof(uid), "w%d", i);
		assert_int_equal(ledger_open(l, uid, i * H, WITHIN, 1), GPUQ_OK);
		assert_int_equal(ledger_close(l, uid, (i + 1) * H), GPUQ_OK);
	}
	ckpt_make(l, 40 * H, 150, &c);
	assert_true(c.info.parts > 1);
	for (size_t i = 0; i < c.info.parts; i++)
		assert_true(c.len[i] <= 150);
	assert_int_equal(ledger_create(&a), GPUQ_OK);
	ckpt_merge(a, &c);
	NEAR(gpu_hours(a, "team-a/lq", 40 * H),
	     8.0 * (c.info.hours)); /* every hour carried, once */
	if (c.info.parts < LEDGER_CKPT_PARTS_MAX)
		assert_int_equal(c.info.hours, 40);
	ckpt_free(&c);
	ledger_destroy(a);
	/* 100-byte parts: one hour each (84 bytes with its names), 8 parts,
	   the 32 oldest left out */
	ckpt_make(l, 40 * H, 100, &c);
	assert_int_equal(c.info.parts, LEDGER_CKPT_PARTS_MAX);
	assert_int_equal(c.info.hours, LEDGER_CKPT_PARTS_MAX);
	assert_int_equal(c.info.hours_left_out, 40 - LEDGER_CKPT_PARTS_MAX);
	assert_int_equal(c.info.oldest_ms, (40 - LEDGER_CKPT_PARTS_MAX) * H);
	assert_int_equal(ledger_create(&a), GPUQ_OK);
	ckpt_merge(a, &c);
	NEAR(gpu_hours(a, "team-a/lq", 40 * H), 8.0 * LEDGER_CKPT_PARTS_MAX);
	ckpt_free(&c);
	ledger_destroy(a), ledger_destroy(l);
}

/* Refused whole with a message naming the fault; the ledger unchanged. */
static void refused(const uint8_t *buf, size_t len, const char *want)
{
	ledger_t *l = history();
	gpuq_diag_t d = {{0}};

	ledger_dirty_clear(l);
	assert_int_equal(ledger_checkpoint_merge(l, buf, len, NULL, &d), GPUQ_ECORRUPT);
	if (!strstr(d.msg, want))
		fail_msg("want \"%s\" in \"%s\"", want, d.msg);
	assert_int_equal(ledger_dirty_count(l), 0);
	NEAR(gpu_hours(l, "team-a/lq", 7 * H), 18.0);
	ledger_destroy(l);
}

static void checkpoint_bad_input(void **st)
{
	ledger_t *l = history();
	ckpt_t c;
	uint8_t *b;
	size_t n;

	(void)st;
	ckpt_make(l, 6 * H, 0, &c);
	n = c.len[0];
	b = malloc(n + 8);
	assert_non_null(b);
	memcpy(b, c.part[0], n);
	for (size_t cut = 0; cut < n; cut++) /* truncated anywhere */
		refused(b, cut, cut < 21 ? "truncated: shorter than its header" : "truncated");
	b[n] = 0;
	refused(b, n + 1, "bytes after its last hour");
	b[4] = 2;
	refused(b, n, "version 2, this gpuq reads version 1");
	b[4] = 1;
	b[0] = 'X';
	refused(b, n, "not a gpuq usage checkpoint (bad magic)");
	b[0] = 'G';
	memset(b + 13, 0xff, 4); /* series: 2^32 - 1 */
	refused(b, n, "more series than LEDGER_SERIES_MAX");
	memcpy(b, c.part[0], n);
	refused(NULL, 0, "usage checkpoint: empty");
	{
		/* huge claims in tiny parts: refused before anything is allocated */
		static const uint8_t series[] = {'G', 'Q', 'L',	 'C',  1, 0, 0, 0, 0,	0,  0,
						 0,   0,   0x50, 0xc3, 0, 0, 9, 0, 'a', 'b'};
		static const uint8_t hours[] = {'G', 'Q', 'L', 'C', 1, 0, 0,	0,    0,    0,	 0,
						0,   0,	  0,   0,   0, 0, 0xff, 0xff, 0xff, 0x7f};
		refused(series, sizeof(series), "truncated, or a series name empty or too long");
		refused(hours, sizeof(hours), "more hours than LEDGER_HOURS_MAX");
	}
	ckpt_free(&c);
	free(b);
	ledger_destroy(l);
}

static void prices_merge(void **st)
{
	static const ledger_price_t flags[] = {{"h100", 3.0}};
	static const ledger_price_t declared[] = {{"l4", 0.8}, {"h100", 2.5}};
	ledger_price_t out[3];
	size_t n;

	(void)st;
	assert_int_equal(ledger_prices_merge(flags, 1, declared, 2, out, 3, &n), GPUQ_OK);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].flavor, "h100");
	NEAR(out[0].per_hour, 3.0); /* the flag wins */
	assert_string_equal(out[1].flavor, "l4");
	assert_int_equal(ledger_prices_merge(flags, 1, declared, 2, out, 1, &n), GPUQ_ELIMIT);
}

/* Checkpoint sizes (printed for docs/chargeback.md): S series busy every
 * hour for D days, 8 GPUs each (amount x ms ~2.9e7: 4-byte varints). */
static void checkpoint_size(void **st)
{
	static const int shapes[][2] = {{10, 30}, {10, 400}, {50, 400}, {200, 400}};

	(void)st;
	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		int series = shapes[k][0], days = shapes[k][1];
		ledger_t *l;
		ckpt_t c;
		char uid[32], lq[32];

		assert_int_equal(ledger_create(&l), GPUQ_OK);
		for (int s = 0; s < series; s++) {
			ledger_part_t p = {lq, "research", "h100-80gb", "nvidia.com/gpu", 6, 2};
			snprintf(lq, sizeof(lq), "team-%03d/default", s);
			snprintf(uid, sizeof(uid), "w%d", s);
			assert_int_equal(ledger_open(l, uid, 0, &p, 1), GPUQ_OK);
			assert_int_equal(ledger_close(l, uid, (int64_t)days * 24 * H), GPUQ_OK);
		}
		ckpt_make(l, (int64_t)days * 24 * H, 0, &c);
		printf("# checkpoint: %d series x %d days (%d hours): %zu parts, %zu bytes, "
		       "%u hours carried, %u left out\n",
		       series, days, days * 24, c.info.parts, c.info.bytes, c.info.hours,
		       c.info.hours_left_out);
		ckpt_free(&c);
		ledger_destroy(l);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(borrowed_apart),	    cmocka_unit_test(unpriced_apart),
	    cmocka_unit_test(windows_cut),	    cmocka_unit_test(records_round_trip),
	    cmocka_unit_test(changed_set),	    cmocka_unit_test(hour_bound),
	    cmocka_unit_test(series_bound),	    cmocka_unit_test(bad_input),
	    cmocka_unit_test(price_parse),	    cmocka_unit_test(checkpoint_failover),
	    cmocka_unit_test(checkpoint_own_hours), cmocka_unit_test(checkpoint_parts),
	    cmocka_unit_test(checkpoint_bad_input), cmocka_unit_test(prices_merge),
	    cmocka_unit_test(checkpoint_size),
	};

	return cmocka_run_group_tests_name("ledger", tests, NULL, NULL);
}

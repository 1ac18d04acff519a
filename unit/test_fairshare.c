/* Unit tests for fairshare: decay, entry penalty, dominant resource share,
 * weights, tenant keys, Jain's index and Slurm's factor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "fairshare/fairshare.h"

static void decay_table(void **st)
{
	static const struct {
		double u, rate;
		int64_t dt, hl;
		double want;
	} cases[] = {
	    {1.0, 0.0, 1000, 1000, 0.5},  /* one half-life halves */
	    {1.0, 0.0, 2000, 1000, 0.25}, /* two quarter */
	    {0.0, 1.0, 1000, 1000, 0.5},  /* rising toward the rate */
	    {0.3, 0.3, 12345, 1000, 0.3}, /* constant rate is a fixed point */
	    {0.8, 0.2, 0, 1000, 0.8},	  /* no time, no change */
	    {0.8, 0.2, -5, 1000, 0.8},	  /* negative dt is no time */
	    {0.8, 0.2, 1, 0, 0.2},	  /* no memory */
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_true(
		    fabs(fairshare_decay(cases[i].u, cases[i].rate, cases[i].dt, cases[i].hl) -
			 cases[i].want) < 1e-12);
	assert_true(fabs(fairshare_decay_factor(500, 1000) - sqrt(0.5)) < 1e-12);
	assert_true(fabs(fairshare_entry_penalty(1000, 1000) - 0.5) < 1e-12);
	assert_true(fairshare_entry_penalty(0, 1000) == 0.0);
}

/* A tenant that stops using decays toward 0, one that keeps using rises
 * toward its rate: ordering by decayed usage flips, nobody starves. */
static void decay_no_starvation(void **st)
{
	double a = 1.0, b = 0.0;
	int steps = 0;

	(void)st;
	while (a >= b) {
		a = fairshare_decay(a, 0.0, 300000, 3600000);
		b = fairshare_decay(b, 0.5, 300000, 3600000);
		steps++;
		assert_true(steps < 100);
	}
	assert_true(steps > 1);
}

static void drs_table(void **st)
{
	static const struct {
		fairshare_res_t r[3];
		size_t n;
		int64_t want_ppm; /* weight 1 */
		size_t dom;
	} cases[] = {
	    {{{4, 4, 10}}, 1, 0, 0},		      /* at nominal: 0 */
	    {{{6, 4, 10}}, 1, 200000, 0},	      /* borrows 2 of 10 */
	    {{{6, 4, 10}, {9, 1, 16}}, 2, 500000, 1}, /* dominant is the second */
	    {{{1, 4, 10}, {3, 1, 0}}, 2, 0, 0},	      /* lent nothing: adds nothing */
	    {{{7, 4, 10}, {3, 1, 0}}, 2, 300000, 0},  /* ... as in Kueue */
	    {{{0, 0, 0}}, 0, 0, 0},
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t dom = 99;
		fairshare_share_t sh = fairshare_drs(cases[i].r, cases[i].n, 1000, &dom);

		assert_int_equal(fairshare_share_ppm(&sh), cases[i].want_ppm);
		assert_int_equal(dom, cases[i].dom);
	}
}

/* Shares compare as Kueue compares them: never rounded, any weight. */
static void shares_compare_exactly(void **st)
{
	/* one borrowed unit out of 3,000,001 and 3,000,002 lendable: the old
	 * ppm arithmetic gave both 0.333 ppm -> 0 and called them equal */
	fairshare_res_t a[] = {{2, 1, 3000001}}, b[] = {{2, 1, 3000002}};
	fairshare_res_t two[] = {{6, 4, 10}};  /* ratio 200 */
	fairshare_res_t four[] = {{8, 4, 10}}; /* ratio 400 */
	fairshare_res_t none[] = {{4, 4, 10}};
	fairshare_share_t x, y;

	(void)st;
	x = fairshare_drs(a, 1, 1000, NULL);
	y = fairshare_drs(b, 1, 1000, NULL);
	assert_true(fairshare_share_cmp(&y, &x) < 0); /* b borrows a smaller share */
	assert_true(fairshare_share_cmp(&x, &y) > 0);
	assert_int_equal(fairshare_share_cmp(&x, &x), 0);
	/* weight 2 halves, 0.5 doubles: 400/2 == 200/1, 200/0.5 == 400/1, and
	 * 200/0.4 > 400/1 */
	x = fairshare_drs(four, 1, 2000, NULL);
	y = fairshare_drs(two, 1, 1000, NULL);
	assert_int_equal(fairshare_share_cmp(&x, &y), 0);
	x = fairshare_drs(two, 1, 500, NULL);
	y = fairshare_drs(four, 1, 1000, NULL);
	assert_int_equal(fairshare_share_cmp(&x, &y), 0);
	x = fairshare_drs(two, 1, 400, NULL);
	assert_true(fairshare_share_cmp(&y, &x) < 0);
	/* a very large weight: a tiny share, still above not borrowing */
	x = fairshare_drs(four, 1, INT64_C(1000000000000000), NULL);
	y = fairshare_drs(none, 1, 1000, NULL);
	assert_true(fairshare_share_cmp(&y, &x) < 0);
	assert_true(fairshare_share_cmp(&x, &y) > 0);
	/* weight 0: never ahead while it borrows; equal to others at 0 */
	x = fairshare_drs(two, 1, 0, NULL);
	y = fairshare_drs(four, 1, 1, NULL); /* weight 0.001: ratio 400,000 */
	assert_true(fairshare_share_cmp(&y, &x) < 0);
	assert_int_equal(fairshare_share_ppm(&x), FAIRSHARE_INF);
	x = fairshare_drs(none, 1, 0, NULL);
	y = fairshare_drs(none, 1, 1000, NULL);
	assert_int_equal(fairshare_share_cmp(&x, &y), 0);
	/* two of weight 0 that borrow: the smaller ratio first */
	x = fairshare_drs(two, 1, 0, NULL);
	y = fairshare_drs(four, 1, 0, NULL);
	assert_true(fairshare_share_cmp(&x, &y) < 0);
}

static void weighted_and_keys(void **st)
{
	fairshare_res_t two[] = {{6, 4, 10}};
	fairshare_share_t sh;

	(void)st;
	sh = fairshare_drs(two, 1, 2000, NULL);
	assert_int_equal(fairshare_share_ppm(&sh), 100000);
	sh = fairshare_drs(two, 1, 500, NULL);
	assert_int_equal(fairshare_share_ppm(&sh), 400000);
	assert_true(fairshare_tenant_key(2.0, 2000) == 1.0);
	assert_true(fairshare_tenant_key(0.0, 0) == 0.0);
	assert_true(isinf(fairshare_tenant_key(1.0, 0)));
	/* heavier weight goes first at equal usage */
	assert_true(fairshare_tenant_key(1.0, 3000) < fairshare_tenant_key(1.0, 1000));
}

static void jain_and_slurm(void **st)
{
	static const double eq[] = {3, 3, 3, 3};
	static const double one[] = {5, 0, 0, 0};
	static const double neg[] = {-1, 2, 2};

	(void)st;
	assert_true(fabs(fairshare_jain_index(eq, 4) - 1.0) < 1e-12);
	assert_true(fabs(fairshare_jain_index(one, 4) - 0.25) < 1e-12);
	assert_true(fairshare_jain_index(NULL, 0) == 1.0);
	assert_true(fabs(fairshare_jain_index(neg, 3) - (16.0 / 24.0)) < 1e-12);
	assert_true(fairshare_slurm_factor(0.0, 1.0) == 1.0);
	assert_true(fabs(fairshare_slurm_factor(1.0, 1.0) - 0.5) < 1e-12);
	assert_true(fairshare_slurm_factor(1.0, 0.0) == 0.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(decay_table),	 cmocka_unit_test(decay_no_starvation),
	    cmocka_unit_test(drs_table),	 cmocka_unit_test(shares_compare_exactly),
	    cmocka_unit_test(weighted_and_keys), cmocka_unit_test(jain_and_slurm),
	};

	return cmocka_run_group_tests_name("fairshare", tests, NULL, NULL);
}

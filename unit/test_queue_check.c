/* queue_check against a core whose state was broken on purpose (white box:
 * the public API cannot break it, which is the point): each invariant it
 * states is caught and named, and a sound core passes. */
#include "unit/queue_fixtures.h"

#include "queue/internal.h"

/* One CQ with 4 GPUs of flavor a, two workloads of 2 admitted. */
static queue_t *two_admitted(void)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"a", 4, U, U}}};
	queue_result_t r;

	add_flavor(q, "a");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "w1", "ns", "lq", 0, 1, 2);
	add_wl(q, "w2", "ns", "lq", 0, 2, 2);
	cycle(q, 10, &r);
	assert_int_equal(r.n_admissions, 2);
	return q;
}

static void sound_core_passes(void **st)
{
	queue_t *q = two_admitted();
	char why[256];

	(void)st;
	assert_int_equal(queue_check(q, why, sizeof(why)), GPUQ_OK);
	assert_string_equal(why, "");
	queue_destroy(q);
}

static void usage_off_by_one_is_named(void **st)
{
	queue_t *q = two_admitted();
	char why[256];

	(void)st;
	q->cqs[0].slots[0].usage++;
	assert_int_equal(queue_check(q, why, sizeof(why)), GPUQ_ECORRUPT);
	assert_non_null(strstr(why, "ClusterQueue cq, flavor a"));
	assert_non_null(strstr(why, "differs from the sum of its admitted workloads"));
	q->cqs[0].slots[0].usage--;
	assert_int_equal(queue_check(q, why, sizeof(why)), GPUQ_OK);
	queue_destroy(q);
}

static void over_nominal_is_named(void **st)
{
	queue_t *q = two_admitted();
	char why[256];

	(void)st;
	q->cqs[0].slots[0].nominal = 3; /* 4 in use, no cohort */
	assert_int_equal(queue_check(q, why, sizeof(why)), GPUQ_ECORRUPT);
	assert_non_null(strstr(why, "above nominal without a cohort"));
	queue_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sound_core_passes),
	    cmocka_unit_test(usage_off_by_one_is_named),
	    cmocka_unit_test(over_nominal_is_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

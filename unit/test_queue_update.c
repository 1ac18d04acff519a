/* Unit tests for queue_workload_update: a pending workload whose object was
 * edited is recomputed whole (issue 31). What a tenant did on the control
 * plane, in the core: a queued Job's parallelism raised from 1 to 8, a queued
 * Job moved to another LocalQueue; and the rules around it: its place kept,
 * a backoff served on, an admitted workload refused, nothing changed on an
 * error. Builders in unit/queue_fixtures.h. */
#include "unit/queue_fixtures.h"

/* spec of one pod set of `count` pods of `gpus` GPUs each */
typedef struct {
	queue_request_t r;
	queue_podset_spec_t ps;
	queue_workload_spec_t s;
} one_t;

static const queue_workload_spec_t *one(one_t *o, const char *uid, const char *ns, const char *lq,
					int32_t prio, int64_t created, int32_t count, int64_t gpus)
{
	o->r = (queue_request_t){"gpu", gpus};
	o->ps = (queue_podset_spec_t){
	    .name = "main", .count = count, .requests = &o->r, .n_requests = 1};
	o->s = (queue_workload_spec_t){.namespace_ = ns,
				       .name = uid,
				       .uid = uid,
				       .local_queue = lq,
				       .priority = prio,
				       .created_ms = created,
				       .podsets = &o->ps,
				       .n_podsets = 1};
	return &o->s;
}

static void invariants(const queue_t *q)
{
	char why[512];

	if (queue_check(q, why, sizeof(why)) != GPUQ_OK)
		fail_msg("queue_check: %s", why);
}

/* Issue 31's first row: raised from 1 pod to 8 while queued, then a 7-GPU
 * workload: the first is admitted for 8, the second waits. Quota 8. */
static void parallelism_raised_while_queued(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 8, U, U}}};
	queue_result_t r;
	one_t o;
	bool changed = false;
	queue_wl_t id;
	queue_workload_view_t v;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "big", "ns", "lq", 0, 1, 8); /* holds the quota first */
	cycle(q, 5, &r);
	assert_true(admitted_in(&r, "big"));
	add_wl(q, "job", "ns", "lq", 0, 10, 1);
	assert_int_equal(
	    queue_workload_update(q, one(&o, "job", "ns", "lq", 0, 10, 8, 1), 11, &changed, NULL),
	    GPUQ_OK);
	assert_true(changed);
	invariants(q);
	assert_int_equal(queue_workload_finish(q, "big", 12), GPUQ_OK);
	add_wl(q, "seven", "ns", "lq", 0, 20, 7);
	cycle(q, 21, &r);
	assert_true(admitted_in(&r, "job"));
	assert_false(admitted_in(&r, "seven"));
	assert_int_equal(state_of(q, "seven"), QUEUE_WL_PENDING);
	assert_int_equal(queue_workload_find(q, "job", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.n_podsets, 1);
	invariants(q);
	queue_destroy(q);
}

/* Issue 31's second row: moved to a LocalQueue of a ClusterQueue of 0 GPUs
 * while queued: never admitted by the old one; moved back, it is. */
static void queue_label_moves_it(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d8 = {.flavors = {{"f", 8, U, U}}}, d0 = {.flavors = {{"f", 0, U, U}}};
	queue_result_t r;
	queue_wl_t id;
	queue_workload_view_t v;
	one_t o;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "eight", &d8);
	add_cq(q, "none", &d0);
	add_lq(q, "ns", "l8", "eight");
	add_lq(q, "ns", "l0", "none");
	add_wl(q, "job", "ns", "l8", 0, 1, 2);
	assert_int_equal(
	    queue_workload_update(q, one(&o, "job", "ns", "l0", 0, 1, 1, 2), 2, NULL, NULL),
	    GPUQ_OK);
	invariants(q);
	cycle(q, 3, &r);
	assert_int_equal(r.n_admissions, 0);
	assert_int_equal(queue_workload_find(q, "job", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_string_equal(queue_cq_name(q, v.cq), "none");
	assert_int_equal(
	    queue_workload_update(q, one(&o, "job", "ns", "l8", 0, 1, 1, 2), 4, NULL, NULL),
	    GPUQ_OK);
	cycle(q, 5, &r);
	assert_true(admitted_in(&r, "job"));
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_string_equal(queue_cq_name(q, v.cq), "eight");
	invariants(q);
	queue_destroy(q);
}

/* An edit that keeps the queue and the order key keeps the place: a, b, c
 * created in that order; b edited (more pods) still goes second. */
static void edit_keeps_its_place(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 4, U, U}}};
	static const char *const want[] = {"a", "b", "c"};
	queue_result_t r;
	one_t o;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_wl(q, "a", "ns", "lq", 0, 1, 4);
	add_wl(q, "b", "ns", "lq", 0, 2, 1);
	add_wl(q, "c", "ns", "lq", 0, 3, 4);
	assert_int_equal(
	    queue_workload_update(q, one(&o, "b", "ns", "lq", 0, 2, 4, 1), 4, NULL, NULL), GPUQ_OK);
	for (int i = 0; i < 3; i++) {
		cycle(q, 10 + i * 2, &r);
		assert_int_equal(r.n_admissions, 1);
		assert_string_equal(r.admissions[0].uid, want[i]);
		assert_int_equal(queue_workload_finish(q, want[i], 11 + i * 2), GPUQ_OK);
	}
	queue_destroy(q);
}

/* The same spec changes nothing; errors leave the workload as it was; an
 * admitted workload is refused with GPUQ_EAGAIN, unless the update asks
 * for what it holds (an event that changed nothing it asks: GPUQ_OK). */
static void refusals_change_nothing(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 4, U, U}}};
	queue_result_t r;
	gpuq_diag_t diag = {{0}};
	queue_wl_t id;
	queue_workload_view_t v;
	one_t o;
	bool changed = true;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	add_lq(q, "other", "lq", "cq");
	add_wl(q, "run", "ns", "lq", 0, 1, 2);
	add_wl(q, "wait", "ns", "lq", 0, 2, 8); /* more than the quota: waits */
	assert_int_equal(
	    queue_workload_update(q, one(&o, "wait", "ns", "lq", 0, 2, 1, 8), 3, &changed, NULL),
	    GPUQ_OK);
	assert_false(changed);
	cycle(q, 4, &r);
	assert_true(admitted_in(&r, "run"));
	changed = true;
	assert_int_equal(
	    queue_workload_update(q, one(&o, "run", "ns", "lq", 0, 1, 1, 2), 5, &changed, &diag),
	    GPUQ_OK);
	assert_false(changed);
	assert_int_equal(
	    queue_workload_update(q, one(&o, "run", "ns", "lq", 0, 1, 2, 2), 5, &changed, &diag),
	    GPUQ_EAGAIN);
	assert_non_null(strstr(diag.msg, "only a pending workload changes"));
	assert_int_equal(
	    queue_workload_update(q, one(&o, "gone", "ns", "lq", 0, 1, 1, 1), 5, NULL, NULL),
	    GPUQ_ENOTFOUND);
	assert_int_equal(
	    queue_workload_update(q, one(&o, "wait", "ns", "nope", 0, 2, 1, 1), 5, NULL, NULL),
	    GPUQ_ENOTFOUND);
	assert_int_equal(
	    queue_workload_update(q, one(&o, "wait", "other", "lq", 0, 2, 1, 1), 5, NULL, NULL),
	    GPUQ_EINVAL);
	assert_int_equal(
	    queue_workload_update(q, one(&o, "wait", "ns", "lq", 0, 2, 0, 1), 5, NULL, NULL),
	    GPUQ_EINVAL);
	assert_int_equal(queue_workload_find(q, "wait", &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(q, id, &v), GPUQ_OK);
	assert_int_equal(v.state, QUEUE_WL_PENDING);
	invariants(q);
	/* still 8 GPUs: never admitted while run holds 2 of 4 */
	assert_int_equal(queue_workload_finish(q, "run", 6), GPUQ_OK);
	cycle(q, 7, &r);
	assert_int_equal(r.n_admissions, 0);
	/* shrunk to what the quota holds, it is */
	assert_int_equal(
	    queue_workload_update(q, one(&o, "wait", "ns", "lq", 0, 2, 1, 4), 8, NULL, NULL),
	    GPUQ_OK);
	cycle(q, 9, &r);
	assert_true(admitted_in(&r, "wait"));
	queue_destroy(q);
}

/* A gang grown while its pods are still arriving waits for the new total;
 * one shrunk to the pods present becomes eligible. */
static void gang_total_follows(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 8, U, U}}};
	wlopt_t g = {.gang_total = 2, .pods_present = 2};
	queue_result_t r;
	one_t o;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	assert_int_equal(add_wl_opt(q, "g", "ns", "lq", 0, 1, 2, 1, &g), GPUQ_OK);
	one(&o, "g", "ns", "lq", 0, 1, 4, 1);
	o.s.gang_total = 4;
	o.s.pods_present = 2;
	assert_int_equal(queue_workload_update(q, &o.s, 2, NULL, NULL), GPUQ_OK);
	assert_int_equal(wait_of(q, "g"), QUEUE_WAIT_GANG);
	cycle(q, 3, &r);
	assert_int_equal(r.n_admissions, 0);
	o.s.gang_total = 3;
	o.ps.count = 3;
	o.s.pods_present = 3;
	assert_int_equal(queue_workload_update(q, &o.s, 4, NULL, NULL), GPUQ_OK);
	invariants(q);
	cycle(q, 5, &r);
	assert_true(admitted_in(&r, "g"));
	queue_destroy(q);
}

/* A gang's pods present follow the pods that exist (a pod group member
 * deleted): a complete gang that loses one waits for its pods again, its
 * pod sets the same; when it is complete again it is admitted. The pod
 * sets' names and counts read back. */
static void gang_present_follows_down(void **st)
{
	queue_t *q = mkq(false);
	cqdef_t d = {.flavors = {{"f", 8, U, U}}};
	wlopt_t g = {.gang_total = 2, .pods_present = 2};
	queue_result_t r;
	one_t o;
	bool changed = false;
	queue_wl_t id;
	const char *name = NULL;
	int32_t count = 0;

	(void)st;
	add_flavor(q, "f");
	add_cq(q, "cq", &d);
	add_lq(q, "ns", "lq", "cq");
	assert_int_equal(add_wl_opt(q, "g", "ns", "lq", 0, 1, 2, 1, &g), GPUQ_OK);
	assert_int_equal(wait_of(q, "g"), QUEUE_WAIT_NONE);
	one(&o, "g", "ns", "lq", 0, 1, 2, 1);
	o.s.gang_total = 2;
	o.s.pods_present = 1;
	assert_int_equal(queue_workload_update(q, &o.s, 2, &changed, NULL), GPUQ_OK);
	assert_true(changed);
	assert_int_equal(wait_of(q, "g"), QUEUE_WAIT_GANG);
	invariants(q);
	cycle(q, 3, &r);
	assert_int_equal(r.n_admissions, 0);
	o.s.pods_present = 2;
	assert_int_equal(queue_workload_update(q, &o.s, 4, &changed, NULL), GPUQ_OK);
	assert_true(changed);
	cycle(q, 5, &r);
	assert_true(admitted_in(&r, "g"));
	invariants(q);
	assert_int_equal(queue_workload_find(q, "g", &id), GPUQ_OK);
	assert_int_equal(queue_workload_podset(q, id, 0, &name, &count), GPUQ_OK);
	assert_string_equal(name, "main");
	assert_int_equal(count, 2);
	assert_int_equal(queue_workload_podset(q, id, 1, &name, &count), GPUQ_ENOTFOUND);
	queue_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parallelism_raised_while_queued),
	    cmocka_unit_test(queue_label_moves_it),
	    cmocka_unit_test(edit_keeps_its_place),
	    cmocka_unit_test(refusals_change_nothing),
	    cmocka_unit_test(gang_total_follows),
	    cmocka_unit_test(gang_present_follows_down),
	};

	return cmocka_run_group_tests_name("queue_update", tests, NULL, NULL);
}

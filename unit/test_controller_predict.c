/* The daemon's prediction pass (controller/econ.c, issue 35): it runs on
 * the controller thread every CONTROLLER_PREDICT_MS, so its cost must follow
 * its cap (predict_workloads), not the queue's depth. The pass lists only
 * what its copy kept; what an earlier pass predicted and this one leaves out
 * is reset to none, as when every pending workload was listed. */
#include <unistd.h>

#include "predict/predict.h"
#include "unit/controller_fixtures.h"

/* Workload uid's predicted start in the core (-1: none). */
static int64_t predicted(const struct controller *c, const char *uid)
{
	queue_workload_view_t v;
	queue_wl_t id;

	assert_int_equal(queue_workload_find(engine_core(c->e), uid, &id), GPUQ_OK);
	assert_int_equal(queue_workload_view(engine_core(c->e), id, &v), GPUQ_OK);
	return v.predicted_ms;
}

/* A Job of team-a's LocalQueue asking for all 8 GPUs of cq. */
static void job(struct controller *c, const char *name)
{
	json_t *j = ctl_job("team-a", name, 8, 1, true, "default");

	ctl_job_event(c, KUBE_EV_ADDED, j);
	json_decref(j);
}

/* One pass, due now, as the loop runs it: begun on the controller's
 * thread, run forward on the runner's, applied at a later step (the loop's
 * next; here, once the run is done). */
static void pass(struct controller *c)
{
	c->econ_predict_ms = 0;
	controller_econ_step(c);
	while (controller_econ_busy(c)) {
		usleep(1000);
		controller_econ_step(c);
	}
}

static void reset_what_a_pass_leaves_out(void **state)
{
	struct controller *c = ctl_new();
	queue_result_t res;

	(void)state;
	assert_int_equal(qmetrics_create(&c->metrics), GPUQ_OK);
	job(c, "running");
	assert_int_equal(ctl_step(c->e, controller_now(c), 1, &res), GPUQ_OK);
	assert_int_equal(ctl_state(c, "running"), QUEUE_WL_ADMITTED);
	job(c, "w1");
	job(c, "w2");
	job(c, "w3");
	c->o.predict_workloads = 3;
	pass(c);
	assert_true(predicted(c, "w1") > 0);
	assert_true(predicted(c, "w2") > predicted(c, "w1"));
	assert_true(predicted(c, "w3") > predicted(c, "w2"));
	assert_int_equal(c->econ_pred_n, 3);
	/* the cap now keeps the head only: w2 and w3 are not listed, and lose
	 * the start the last pass gave them */
	c->o.predict_workloads = 1;
	pass(c);
	assert_true(predicted(c, "w1") > 0);
	assert_int_equal(predicted(c, "w2"), -1);
	assert_int_equal(predicted(c, "w3"), -1);
	assert_int_equal(c->econ_pred_n, 1);
	controller_econ_free(c);
	qmetrics_destroy(c->metrics);
	ctl_free(c);
}

/* One history scan, due now, with no pass due. */
static void scan(struct controller *c)
{
	c->econ_scan_ms = 0;
	controller_econ_step(c);
}

/* The LocalQueues' runtime history (what a pass gives a workload that
 * declares no runtime): a workload one scan saw admitted and a later one
 * sees finished adds what it ran to its LocalQueue's history; a pending
 * one adds nothing. */
static void history_of_finished_runs(void **state)
{
	struct controller *c = ctl_new();
	queue_result_t res;
	int64_t admitted;

	(void)state;
	assert_int_equal(qmetrics_create(&c->metrics), GPUQ_OK);
	c->o.predict_interval_ms = 0; /* scans only */
	job(c, "first");
	job(c, "second");
	admitted = controller_now(c);
	assert_int_equal(ctl_step(c->e, admitted, 1, &res), GPUQ_OK);
	assert_int_equal(ctl_state(c, "first"), QUEUE_WL_ADMITTED);
	assert_int_equal(ctl_state(c, "second"), QUEUE_WL_PENDING);
	scan(c);
	assert_non_null(c->econ_hist);
	assert_int_equal(predict_history_median(c->econ_hist, "team-a/default"), -1);
	usleep(20 * 1000);
	ctl_finish(c, "first");
	scan(c);
	assert_in_range(predict_history_median(c->econ_hist, "team-a/default"), 20,
			controller_now(c) - admitted);
	controller_econ_free(c);
	qmetrics_destroy(c->metrics);
	ctl_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(reset_what_a_pass_leaves_out),
	    cmocka_unit_test(history_of_finished_runs),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

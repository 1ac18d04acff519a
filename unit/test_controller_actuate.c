/* What the controller writes, without an apiserver: a released workload's
 * placement on its flavor, the merge patches that release, suspend and
 * restore a Job, when a suspended Job's pods count as gone, the
 * ClusterQueue and LocalQueue status, the usage checkpoint's ConfigMap (its
 * part merges back whole into a fresh core) and its retry spacing, and a
 * decoded object as the core's pod set. */
#include "unit/controller_fixtures.h"

/* Put Job `name` (2 GPUs, suspended, queue default) into the controller
 * and admit it; returns its cached Job and its workload id. */
static job_t *admitted_job(struct controller *c, const char *name, json_t *obj, queue_wl_t *id)
{
	queue_result_t r;

	ctl_job_event(c, KUBE_EV_ADDED, obj);
	assert_int_equal(queue_cycle_run(c->q, controller_now(c), &r), GPUQ_OK);
	assert_int_equal(ctl_state(c, name), QUEUE_WL_ADMITTED);
	assert_int_equal(queue_workload_find(c->q, name, id), GPUQ_OK);
	return controller_job(c, name);
}

/* The flavor's nodeLabels and tolerations are added to the template's own;
 * the annotation names resource=flavor for a successor to adopt by. */
static void placement_adds_the_flavors_labels_and_tolerations(void **state)
{
	struct controller *c = ctl_new();
	json_t *obj = ctl_job("team-a", "j", 2, 1, true, "default");
	json_t *base_sel = json_pack("{s:s}", "disk", "ssd");
	json_t *base_tols = json_pack("[{s:s, s:s}]", "key", "spot", "operator", "Exists");
	json_t *sel, *tols;
	char flavors[256], *s;
	queue_wl_t id;

	(void)state;
	admitted_job(c, "j", obj, &id);
	assert_int_equal(
	    actuate_placement(c, id, base_sel, base_tols, &sel, &tols, flavors, sizeof(flavors)),
	    GPUQ_OK);
	assert_string_equal(flavors, "nvidia.com/gpu=h100");
	s = ctl_dump(sel);
	assert_string_equal(s, "{\"disk\":\"ssd\",\"nvidia.com/gpu.product\":\"H100\"}");
	free(s);
	s = ctl_dump(tols);
	assert_string_equal(s,
			    "[{\"key\":\"spot\",\"operator\":\"Exists\"},{\"effect\":"
			    "\"NoSchedule\",\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]");
	free(s);
	/* the base is copied, not changed */
	assert_int_equal(json_object_size(base_sel), 1);
	assert_int_equal(json_array_size(base_tols), 1);
	json_decref(sel);
	json_decref(tols);
	json_decref(base_sel);
	json_decref(base_tols);
	json_decref(obj);
	ctl_free(c);
}

/* The release patch: unsuspended, marked admitted on the Job and its pod
 * template, the flavors named, the template's own placement kept in
 * CONTROLLER_ANNOT_ORIGINAL (no tolerations: null, so a restore removes
 * the flavor's), the flavor's added, on the resourceVersion the decision
 * was made on. */
static void release_body_unsuspends_with_the_placement(void **state)
{
	struct controller *c = ctl_new();
	json_t *obj = ctl_job("team-a", "j", 2, 1, true, "default"), *tree, *body;
	queue_wl_t id;
	job_t *j;
	char *got;

	(void)state;
	json_object_set_new(
	    json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"),
	    "nodeSelector", json_pack("{s:s}", "disk", "ssd"));
	j = admitted_job(c, "j", obj, &id);
	tree = job_tree(j);
	body = actuate_release_body(c, tree, id);
	assert_non_null(body);
	got = ctl_dump(body);
	assert_string_equal(
	    got, "{\"metadata\":{\"annotations\":{\"gpuq.dev/admitted\":\"true\","
		 "\"gpuq.dev/flavors\":\"nvidia.com/gpu=h100\",\"gpuq.dev/original-scheduling\":"
		 "\"{\\\"nodeSelector\\\":{\\\"disk\\\":\\\"ssd\\\"},\\\"tolerations\\\":null}\"},"
		 "\"resourceVersion\":\"7\"},"
		 "\"spec\":{\"suspend\":false,\"template\":{\"metadata\":{\"annotations\":{"
		 "\"gpuq.dev/admitted\":\"true\"}},\"spec\":{\"nodeSelector\":{\"disk\":\"ssd\","
		 "\"nvidia.com/gpu.product\":\"H100\"},\"tolerations\":[{\"effect\":\"NoSchedule\","
		 "\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}}}}");
	free(got);
	json_decref(body);
	json_decref(tree);
	json_decref(obj);
	ctl_free(c);
}

/* A release retried on a Job that already carries the release's placement
 * (a crash between the patch and the commit, or a preempted Job released
 * again) starts from the original template: nothing is added twice. */
static void release_body_starts_from_the_original_template(void **state)
{
	struct controller *c = ctl_new();
	json_t *obj = ctl_job("team-a", "j", 2, 1, true, "default"), *tree, *body, *spec;
	queue_wl_t id;
	job_t *j;
	char *got;

	(void)state;
	spec = json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec");
	/* as the first release left it */
	json_object_set_new(spec, "nodeSelector",
			    json_pack("{s:s}", "nvidia.com/gpu.product", "H100"));
	json_object_set_new(spec, "tolerations",
			    json_pack("[{s:s, s:s, s:s}]", "key", "nvidia.com/gpu", "operator",
				      "Exists", "effect", "NoSchedule"));
	json_object_set_new(json_object_get(obj, "metadata"), "annotations",
			    json_pack("{s:s}", CONTROLLER_ANNOT_ORIGINAL, "{}"));
	j = admitted_job(c, "j", obj, &id);
	tree = job_tree(j);
	body = actuate_release_body(c, tree, id);
	got = ctl_dump(
	    json_object_get(json_object_get(json_object_get(body, "spec"), "template"), "spec"));
	assert_string_equal(got, "{\"nodeSelector\":{\"nvidia.com/gpu.product\":\"H100\"},"
				 "\"tolerations\":[{\"effect\":\"NoSchedule\",\"key\":"
				 "\"nvidia.com/gpu\",\"operator\":\"Exists\"}]}");
	free(got);
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(json_object_get(body, "metadata"), "annotations"),
				CONTROLLER_ANNOT_ORIGINAL)),
			    "{}");
	json_decref(body);
	json_decref(tree);
	json_decref(obj);
	ctl_free(c);
}

/* Preempted: suspended, its admission and flavors removed (null in a merge
 * patch), on its resourceVersion. */
static void suspend_body_takes_the_admission_back(void **state)
{
	json_t *job = json_pack("{s:{s:s}}", "metadata", "resourceVersion", "41");
	json_t *body = actuate_suspend_body(job);
	char *got = ctl_dump(body);

	(void)state;
	assert_string_equal(got, "{\"metadata\":{\"annotations\":{\"gpuq.dev/admitted\":null,"
				 "\"gpuq.dev/flavors\":null},\"resourceVersion\":\"41\"},\"spec\":{"
				 "\"suspend\":true}}");
	free(got);
	json_decref(body);
	json_decref(job);
}

/* Its pods gone, the template goes back to what it was: the selector keys
 * the release added are nulled, the original ones set again, the original
 * tolerations back (null when it had none), both annotations removed. */
static void restore_body_puts_the_template_back(void **state)
{
	json_t *job = json_pack(
	    "{s:{s:s, s:{s:s}}, s:{s:{s:{s:{s:s, s:s}, s:[{s:s}, {s:s}]}}}}", "metadata",
	    "resourceVersion", "50", "annotations", CONTROLLER_ANNOT_ORIGINAL,
	    "{\"nodeSelector\":{\"disk\":\"ssd\"},\"tolerations\":[{\"key\":\"spot\"}]}", "spec",
	    "template", "spec", "nodeSelector", "disk", "ssd", "nvidia.com/gpu.product", "H100",
	    "tolerations", "key", "spot", "key", "nvidia.com/gpu");
	json_t *bare =
	    json_pack("{s:{s:s, s:{s:s}}, s:{s:{s:{s:{s:s}}}}}", "metadata", "resourceVersion",
		      "51", "annotations", CONTROLLER_ANNOT_ORIGINAL, "{}", "spec", "template",
		      "spec", "nodeSelector", "nvidia.com/gpu.product", "H100");
	json_t *body = actuate_restore_body(job);
	char *got = ctl_dump(body);

	(void)state;
	assert_string_equal(got, "{\"metadata\":{\"annotations\":{\"gpuq.dev/original-scheduling\":"
				 "null},\"resourceVersion\":\"50\"},\"spec\":{\"template\":{"
				 "\"metadata\":{\"annotations\":{\"gpuq.dev/admitted\":null}},"
				 "\"spec\":{\"nodeSelector\":{\"disk\":\"ssd\","
				 "\"nvidia.com/gpu.product\":null},\"tolerations\":[{\"key\":"
				 "\"spot\"}]}}}}");
	free(got);
	json_decref(body);
	body = actuate_restore_body(bare);
	got = ctl_dump(
	    json_object_get(json_object_get(json_object_get(body, "spec"), "template"), "spec"));
	assert_string_equal(got, "{\"nodeSelector\":{\"nvidia.com/gpu.product\":null},"
				 "\"tolerations\":null}");
	free(got);
	json_decref(body);
	json_decref(bare);
	json_decref(job);
}

/* A suspended Job's quota is free only once the Job controller reports no
 * pod active or terminating and has reset its start time. */
static void quiet_only_when_every_pod_is_gone(void **state)
{
	static const struct {
		const char *status;
		bool quiet;
	} cases[] = {
	    {"{}", true},
	    {"{\"active\":0,\"terminating\":0}", true},
	    {"{\"active\":1}", false},
	    {"{\"terminating\":2}", false},
	    {"{\"startTime\":\"2026-11-25T00:00:00Z\"}", false},
	    {"{\"active\":0,\"terminating\":0,\"succeeded\":3}", true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *st = json_loads(cases[i].status, 0, NULL);
		json_t *job = json_pack("{s:o}", "status", st);
		if (actuate_job_quiet(job) != cases[i].quiet)
			fail_msg("status %s: quiet %d, want %d", cases[i].status, !cases[i].quiet,
				 cases[i].quiet);
		json_decref(job);
	}
}

/* ClusterQueue and LocalQueue status: counts, usage per flavor and
 * resource (what is borrowed above nominal), GPUs in use. */
static void queue_status_counts_and_usage(void **state)
{
	struct controller *c = ctl_new();
	json_t *a = ctl_job("team-a", "a", 2, 2, true, "default"); /* 4 GPUs */
	json_t *b = ctl_job("team-a", "b", 3, 1, true, "default");
	json_t *big = ctl_job("team-a", "big", 8, 1, true, "default");
	queue_result_t r;
	json_t *st;
	char *got;

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, a);
	ctl_job_event(c, KUBE_EV_ADDED, b);
	ctl_job_event(c, KUBE_EV_ADDED, big);
	assert_int_equal(queue_cycle_run(c->q, controller_now(c), &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 2);
	assert_int_equal(queue_cq_count(c->q), 1);
	st = status_cq_body(c, 0);
	assert_non_null(st);
	got = ctl_dump(st);
	assert_string_equal(got, "{\"admittedWorkloads\":2,\"flavorsUsage\":[{\"name\":\"h100\","
				 "\"resources\":[{\"borrowed\":\"0\",\"name\":\"nvidia.com/gpu\","
				 "\"total\":\"7\"}]}],\"gpusInUse\":7,\"pendingWorkloads\":1,"
				 "\"reservingWorkloads\":2}");
	free(got);
	json_decref(st);
	assert_int_equal(queue_lq_count(c->q), 1);
	assert_string_equal(queue_lq_name(c->q, 0), "team-a/default");
	st = status_lq_body(c, 0);
	assert_non_null(st);
	assert_int_equal(json_integer_value(json_object_get(st, "admittedWorkloads")), 2);
	assert_int_equal(json_integer_value(json_object_get(st, "pendingWorkloads")), 1);
	assert_int_equal(json_integer_value(json_object_get(st, "reservingWorkloads")), 2);
	assert_true(json_is_real(json_object_get(st, "decayedUsage")));
	json_decref(st);
	assert_null(status_cq_body(c, 5));
	assert_null(status_lq_body(c, 5));
	json_decref(a);
	json_decref(b);
	json_decref(big);
	ctl_free(c);
}

/* The usage checkpoint ConfigMap: named gpuq-usage-<i> in the Lease's
 * namespace, its part as base64 in binaryData.ledger; that part merges into
 * a replica's fresh core as every GPU-hour the leader counted, and a second
 * merge adds nothing. */
static void usage_checkpoint_configmap_carries_the_ledger(void **state)
{
	struct controller *c = ctl_new(), *other = ctl_new();
	json_t *a = ctl_job("team-a", "a", 2, 1, true, "default");
	uint8_t *parts[LEDGER_CKPT_PARTS_MAX] = {0};
	size_t lens[LEDGER_CKPT_PARTS_MAX] = {0};
	ledger_ckpt_info_t info;
	ledger_merge_info_t mi;
	gpuq_diag_t d = {{0}};
	queue_result_t r;
	json_t *cm;
	const char *b64;
	char *part = NULL;
	size_t len = 0;
	int64_t t0 = 1764000000000; /* ms */

	(void)state;
	ctl_job_event(c, KUBE_EV_ADDED, a);
	assert_int_equal(queue_cycle_run(c->q, t0, &r), GPUQ_OK);
	assert_int_equal(r.n_admissions, 1);
	/* 2 GPUs for an hour and a half */
	assert_int_equal(queue_workload_finish(c->q, "a", t0 + 5400000), GPUQ_OK);
	assert_int_equal(
	    ledger_checkpoint_encode(queue_ledger(c->q), t0 + 7200000, 0, parts, lens, &info),
	    GPUQ_OK);
	assert_int_equal(info.parts, 1);
	c->o.lease_namespace = "gpuq-system";
	cm = usage_cm_body(c, 0, parts[0], lens[0], "summary text");
	assert_non_null(cm);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(cm, "metadata"), "name")),
	    "gpuq-usage-0");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(cm, "metadata"), "namespace")),
	    "gpuq-system");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(cm, "data"), "summary")),
	    "summary text");
	b64 = json_string_value(json_object_get(json_object_get(cm, "binaryData"), "ledger"));
	assert_non_null(b64);
	assert_int_equal(gpuq_base64_decode(b64, LEDGER_CKPT_PART_MAX, &part, &len), GPUQ_OK);
	assert_int_equal(len, lens[0]);
	assert_memory_equal(part, parts[0], len);
	assert_int_equal(queue_ledger_merge(other->q, (const uint8_t *)part, len, &mi, &d),
			 GPUQ_OK);
	assert_true(mi.added_acc_hours > 2.999 && mi.added_acc_hours < 3.001); /* 2 x 1.5 h */
	assert_int_equal(queue_ledger_merge(other->q, (const uint8_t *)part, len, &mi, &d),
			 GPUQ_OK);
	assert_true(mi.added_acc_hours == 0.0);
	free(part);
	for (int i = 0; i < LEDGER_CKPT_PARTS_MAX; i++)
		free(parts[i]);
	json_decref(cm);
	json_decref(a);
	ctl_free(c);
	ctl_free(other);
}

/* A failed checkpoint is tried again 2 s later, doubling with each failure
 * in a row, never later than the checkpoint interval. */
static void usage_retry_doubles_up_to_the_interval(void **state)
{
	struct controller *c = calloc(1, sizeof(*c));
	static const int64_t want[] = {2000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000};

	(void)state;
	assert_non_null(c);
	c->o.usage_checkpoint_ms = 60000;
	for (uint32_t n = 0; n < sizeof(want) / sizeof(want[0]); n++) {
		c->usage_failures = n;
		assert_int_equal(usage_retry_at(c, 1000) - 1000, want[n]);
	}
	c->o.usage_checkpoint_ms = 1000; /* shorter than the first retry */
	c->usage_failures = 5;
	assert_int_equal(usage_retry_at(c, 0), 2000);
	free(c);
}

/* A decoded object as the core's pod set: zero requests left out (they
 * need no quota), selectors and tolerations carried, operators and effects
 * mapped; a toleration whose effect Kubernetes does not know tolerates no
 * taint and is left out (not read as every effect, nor as NoExecute). */
static void podset_from_a_decoded_object(void **state)
{
	static const webhook_toleration_t tols[4] = {
	    {.key = "nvidia.com/gpu", .op = "Exists", .effect = "NoSchedule"},
	    {.key = "spot", .op = "Equal", .value = "yes", .effect = "NoExecute"},
	    {.key = "odd", .op = "Exists", .effect = "Sometimes"},
	    {.key = NULL, .op = "Exists"},
	};
	webhook_object_t *o = calloc(1, sizeof(*o));
	podset_buf_t b;
	queue_podset_spec_t ps;

	(void)state;
	assert_non_null(o);
	snprintf(o->requests[0].name, sizeof(o->requests[0].name), "nvidia.com/gpu");
	o->requests[0].amount = 2;
	snprintf(o->requests[1].name, sizeof(o->requests[1].name), "cpu");
	o->requests[1].amount = 0;
	snprintf(o->requests[2].name, sizeof(o->requests[2].name), "memory");
	o->requests[2].amount = 1 << 20;
	o->n_requests = 3;
	o->node_selector[0] = (webhook_node_label_t){"disk", "ssd"};
	o->n_node_selector = 1;
	memcpy(o->tolerations, tols, sizeof(tols));
	o->n_tolerations = 4;
	controller_podset_from(o, 4, &b, &ps);
	assert_string_equal(ps.name, "main");
	assert_int_equal(ps.count, 4);
	assert_int_equal(ps.n_requests, 2);
	assert_string_equal(ps.requests[0].resource, "nvidia.com/gpu");
	assert_int_equal(ps.requests[0].amount, 2);
	assert_string_equal(ps.requests[1].resource, "memory");
	assert_int_equal(ps.n_node_selector, 1);
	assert_string_equal(ps.node_selector[0].key, "disk");
	assert_int_equal(ps.n_tolerations, 3);
	assert_int_equal(ps.tolerations[0].op, QUEUE_TOLERATE_EXISTS);
	assert_int_equal(ps.tolerations[0].effect, QUEUE_EFFECT_NO_SCHEDULE);
	assert_int_equal(ps.tolerations[1].op, QUEUE_TOLERATE_EQUAL);
	assert_string_equal(ps.tolerations[1].value, "yes");
	assert_int_equal(ps.tolerations[1].effect, QUEUE_EFFECT_NO_EXECUTE);
	assert_string_equal(ps.tolerations[2].key, ""); /* every key */
	assert_int_equal(ps.tolerations[2].effect, QUEUE_EFFECT_ANY);
	free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(placement_adds_the_flavors_labels_and_tolerations),
	    cmocka_unit_test(release_body_unsuspends_with_the_placement),
	    cmocka_unit_test(release_body_starts_from_the_original_template),
	    cmocka_unit_test(suspend_body_takes_the_admission_back),
	    cmocka_unit_test(restore_body_puts_the_template_back),
	    cmocka_unit_test(quiet_only_when_every_pod_is_gone),
	    cmocka_unit_test(queue_status_counts_and_usage),
	    cmocka_unit_test(usage_checkpoint_configmap_carries_the_ledger),
	    cmocka_unit_test(usage_retry_doubles_up_to_the_interval),
	    cmocka_unit_test(podset_from_a_decoded_object),
	};

	return cmocka_run_group_tests_name("controller_actuate", tests, NULL, NULL);
}

/* Fuzz target for the queue core's record decoder (queue_record_apply): the
 * bytes a store hands back after a crash are untrusted. The input is a
 * sequence of up to FUZZ_RECORDS_MAX records, each
 *   [type: 1 byte][key length: 1 byte][value length: 2 bytes, little endian]
 *   [key][value]
 * (a short tail is one last record with whatever bytes remain), applied in
 * order to a fresh queue built from one small fixed policy: flavors f and g,
 * cohort co with CQs cq (gpu and cpu on f, then g) and cq2 (gpu on f),
 * LocalQueues ns/lq and ns/lq2. Whatever applies is then restored, cycled,
 * ticked, explained and re-encoded: nothing may crash, leak or trip a
 * sanitizer, and a record that decodes must encode again. The corpus
 * (fuzz/corpus/queue_record/) holds the records of a small run in this
 * format plus mutations of them. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"

#define FUZZ_RECORDS_MAX 16 /* records per input: enough for a CQ, LQs, workloads */

static queue_t *policy(void)
{
	static const char *const cov[] = {"nvidia.com/gpu", "cpu"};
	static const char *const cov1[] = {"nvidia.com/gpu"};
	queue_quota_spec_t qf[2] = {{4, QUEUE_UNLIMITED, QUEUE_UNLIMITED}, {4000, 2000, 1000}};
	queue_quota_spec_t qg[2] = {{2, 0, QUEUE_UNLIMITED}, {0, 0, QUEUE_UNLIMITED}};
	queue_quota_spec_t q2[1] = {{2, 2, 1}};
	queue_flavor_quota_spec_t fl[2] = {{"f", qf}, {"g", qg}};
	queue_flavor_quota_spec_t fl2[1] = {{"f", q2}};
	queue_group_spec_t g = {cov, 2, fl, 2};
	queue_group_spec_t g2 = {cov1, 1, fl2, 1};
	queue_cq_spec_t s = {.name = "cq", .cohort = "co", .groups = &g, .n_groups = 1};
	queue_cq_spec_t s2 = {.name = "cq2", .cohort = "co", .groups = &g2, .n_groups = 1};
	queue_flavor_spec_t f = {.name = "f"}, fg = {.name = "g"};
	queue_config_t cfg;
	queue_t *q = NULL;

	queue_config_default(&cfg);
	cfg.fair_sharing = true;
	if (queue_create(&cfg, &q))
		return NULL;
	if (queue_flavor_add(q, &f, NULL, NULL) || queue_flavor_add(q, &fg, NULL, NULL) ||
	    queue_cq_add(q, &s, NULL, NULL) || queue_cq_add(q, &s2, NULL, NULL) ||
	    queue_lq_add(q, "ns", "lq", "cq", 0, NULL, NULL) ||
	    queue_lq_add(q, "ns", "lq2", "cq2", 0, NULL, NULL)) {
		queue_destroy(q);
		return NULL;
	}
	return q;
}

/* Every live record must encode again (the decoder accepted it). */
static void reencode(queue_t *q)
{
	static uint8_t buf[1 << 16];
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen, len;

	if (queue_dirty_all(q))
		return;
	while (queue_dirty_next(q, &it, &type, &key, &klen) == GPUQ_OK) {
		int rc = queue_record_encode(q, type, key, klen, buf, sizeof(buf), &len);

		if (rc != GPUQ_OK && rc != GPUQ_ELIMIT && rc != GPUQ_ENOTFOUND)
			abort();
	}
	queue_dirty_clear(q);
}

static void exercise(queue_t *q)
{
	char buf[512];

	if (queue_restore_done(q, NULL))
		return;
	(void)queue_cycle_run(q, 1000, NULL);
	(void)queue_tick(q, 100000000, NULL);
	(void)queue_cycle_run(q, 100000001, NULL);
	for (queue_wl_t id = queue_workload_next(q, QUEUE_NONE); id != QUEUE_NONE;
	     id = queue_workload_next(q, id)) {
		queue_workload_view_t v;

		if (queue_workload_view(q, id, &v) == GPUQ_OK)
			(void)queue_workload_explain(q, v.uid, buf, sizeof(buf));
	}
	(void)queue_next_event(q, 100000001);
	reencode(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	queue_t *q = policy();
	size_t applied = 0;

	if (!q)
		return 0;
	for (int n = 0; n < FUZZ_RECORDS_MAX && size >= 4; n++) {
		queue_rec_type_t type = (queue_rec_type_t)(data[0] % 6); /* 0 and 5: bad types */
		size_t klen = data[1], vlen = (size_t)data[2] | (size_t)data[3] << 8;

		data += 4;
		size -= 4;
		if (klen > size)
			klen = size;
		if (vlen > size - klen)
			vlen = size - klen;
		if (queue_record_apply(q, type, data, klen, data + klen, vlen, NULL) == GPUQ_OK)
			applied++;
		data += klen + vlen;
		size -= klen + vlen;
	}
	if (applied)
		exercise(q);
	queue_destroy(q);
	return 0;
}

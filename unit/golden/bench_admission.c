/* Benchmark of webhook_review_handle: time per review of a ~4 KiB GPU Job
 * (env, volumes, several labels) against unit/golden/policy, for /mutate and
 * /validate. Run by bench/bench_admission.sh (make bench), which also counts
 * its instructions with callgrind; not part of `make test` (no timed
 * asserts). By hand, from the repo root, after building libgpuq.a into
 * build/<dir>:
 *
 *   cc -std=c11 -D_GNU_SOURCE -O2 -I. -o /tmp/bench_admission \
 *      unit/golden/bench_admission.c build/<dir>/libgpuq.a \
 *      $(pkg-config --libs jansson yaml-0.1 libmicrohttpd gnutls) -lpthread -lm
 *   /tmp/bench_admission [iterations [FILE]]
 *
 * With FILE (an AdmissionReview, e.g. bench/fixtures/job_review.json, the
 * body bench_webhook's wrk posts) only /mutate runs, on that body.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/slurp.h"
#include "webhook/webhook.h"

/* The Job as /mutate sees it, or (mutated) as /validate sees it after
 * gpuq's mutation: suspended and labelled with its queue. */
static char *job_review(bool mutated, size_t *len)
{
	size_t cap = 16384, n;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	n = (size_t)snprintf(
	    s, cap,
	    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
	    "{\"uid\":\"9f1c2d3e-0000-4000-8000-000000000001\",\"kind\":{\"group\":\"batch\","
	    "\"version\":\"v1\",\"kind\":\"Job\"},\"resource\":{\"group\":\"batch\",\"version\":"
	    "\"v1\",\"resource\":\"jobs\"},\"requestKind\":{\"group\":\"batch\",\"version\":"
	    "\"v1\",\"kind\":\"Job\"},\"requestResource\":{\"group\":\"batch\",\"version\":\"v1\","
	    "\"resource\":\"jobs\"},\"name\":\"llama-finetune\",\"namespace\":\"team-a\","
	    "\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"alice@example.com\","
	    "\"uid\":\"1234\",\"groups\":[\"system:authenticated\",\"team-a-devs\"]},"
	    "\"object\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
	    "\"llama-finetune\",\"namespace\":\"team-a\",\"labels\":{%s\"app\":\"llama\","
	    "\"team\":\"a\",\"experiment\":\"lr-sweep-17\",\"owner\":\"alice\"},"
	    "\"annotations\":{\"description\":\"fine-tune llama on the support corpus, "
	    "sweep 17 of 40, see the tracking sheet for the learning rates\"}},"
	    "\"spec\":{%s\"parallelism\":2,\"completions\":2,\"backoffLimit\":2,"
	    "\"ttlSecondsAfterFinished\":3600,\"template\":{\"metadata\":{\"labels\":"
	    "{\"app\":\"llama\",\"experiment\":\"lr-sweep-17\"}},\"spec\":{\"restartPolicy\":"
	    "\"Never\",\"serviceAccountName\":\"trainer\",\"tolerations\":[{\"key\":"
	    "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
	    "\"initContainers\":[{\"name\":\"fetch\",\"image\":\"busybox:1.36\",\"command\":"
	    "[\"sh\",\"-c\",\"wget -O /data/corpus.tar https://example.com/corpus.tar\"],"
	    "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"}],\"resources\":"
	    "{\"requests\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"},\"limits\":{\"cpu\":\"1\","
	    "\"memory\":\"512Mi\"}}}],\"containers\":[{\"name\":\"trainer\",\"image\":"
	    "\"nvcr.io/nvidia/pytorch:24.05-py3\",\"command\":[\"torchrun\","
	    "\"--nproc-per-node=8\",\"train.py\",\"--config\",\"/cfg/sweep.yaml\"],\"env\":[",
	    mutated ? "\"gpuq.dev/queue-name\":\"default\"," : "",
	    mutated ? "\"suspend\":true," : "");
	for (int i = 0; i < 24; i++)
		n += (size_t)snprintf(s + n, cap - n,
				      "%s{\"name\":\"TRAIN_SETTING_%02d\",\"value\":"
				      "\"value-of-setting-number-%02d-for-the-sweep\"}",
				      i ? "," : "", i, i);
	n += (size_t)snprintf(
	    s + n, cap - n,
	    "],\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"},{\"name\":\"cfg\","
	    "\"mountPath\":\"/cfg\"},{\"name\":\"shm\",\"mountPath\":\"/dev/shm\"}],"
	    "\"resources\":{\"limits\":{\"nvidia.com/"
	    "gpu\":\"8\",\"cpu\":\"16\",\"memory\":\"64Gi\"},"
	    "\"requests\":{\"cpu\":\"16\",\"memory\":\"64Gi\"}}}],\"volumes\":[{\"name\":"
	    "\"data\",\"emptyDir\":{}},{\"name\":\"cfg\",\"configMap\":{\"name\":\"sweep-17\"}},"
	    "{\"name\":\"shm\",\"emptyDir\":{\"medium\":\"Memory\",\"sizeLimit\":\"16Gi\"}}]}}}},"
	    "\"oldObject\":null,\"dryRun\":false,\"options\":{\"apiVersion\":\"meta.k8s.io/v1\","
	    "\"kind\":\"CreateOptions\"}}}");
	*len = n;
	return s;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
	policy_t *p;
	gpuq_diag_t d = {""};
	size_t len[2];
	char *bodies[2] = {job_review(false, &len[0]), job_review(true, &len[1])};
	int endpoints = 2;

	if (!bodies[0] || !bodies[1] || policy_load_dir("unit/golden/policy", NULL, &p, &d)) {
		fprintf(stderr, "setup failed: %s\n", d.msg);
		return 1;
	}
	if (argc > 2) { /* one file, /mutate only */
		free(bodies[0]);
		bodies[0] = bench_slurp("bench_admission", argv[2], &len[0]);
		endpoints = 1;
	}
	for (int ep = 0; ep < endpoints; ep++) {
		webhook_reply_t r;
		double t0;

		webhook_review_handle(ep, p, NULL, bodies[ep], len[ep], &r);
		printf("%s: %s, reply %zu bytes\n", ep ? "validate" : "mutate", r.decision, r.len);
		webhook_reply_deinit(&r);
		t0 = now_us();
		for (long i = 0; i < iters; i++) {
			webhook_review_handle(ep, p, NULL, bodies[ep], len[ep], &r);
			webhook_reply_deinit(&r);
		}
		printf("%s: %ld reviews of %zu bytes: %.2f us each\n", ep ? "validate" : "mutate",
		       iters, len[ep], (now_us() - t0) / (double)iters);
	}
	policy_unref(p);
	free(bodies[0]);
	free(bodies[1]);
	return 0;
}

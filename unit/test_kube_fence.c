/* unit/test_kube_fence.c: the fence a leader's writes consult (kube.h,
 * "Fencing"): the lease's deadline arithmetic, the plan every wait and
 * attempt goes through, terms, sleeps that end at once on a drop or a stop,
 * and requests on fenced clients that are refused before a byte is sent
 * (their server, https://127.0.0.1:1, would refuse the connection: a
 * fenced write answering GPUQ_EFENCED rather than GPUQ_EHTTP never
 * tried). The live path (a slow, throttling apiserver behind a proxy) is
 * e2e/test_fence.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube/internal.h"
#include "kube/kube.h"

#define FAR_MS 600000 /* a wait that, were it not cut short, would hang the test for 10 min */

static char dir[] = "/tmp/gpuq-test-fence-XXXXXX";

/* A client of https://127.0.0.1:1 (nothing listens on port 1) with qps and
 * burst. */
static void closed_port_client(double qps, unsigned burst, kube_config_t **cfg, kube_client_t **c)
{
	char path[300];
	kube_client_opts_t o;
	gpuq_diag_t diag = {{0}};
	FILE *f;

	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("current-context: c\nclusters:\n- name: k\n  cluster:\n"
	      "    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n"
	      "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
	      "users:\n- name: u\n  user: {token: t}\n",
	      f);
	fclose(f);
	assert_int_equal(kube_config_load(path, cfg, &diag), GPUQ_OK);
	kube_client_opts_default(&o);
	assert_int_equal(o.timeout_ms, KUBE_REQUEST_TIMEOUT_MS);
	assert_false(o.no_retry);
	o.qps = qps;
	o.burst = burst;
	assert_int_equal(kube_client_create(*cfg, &o, c, &diag), GPUQ_OK);
}

/* A client of closed_port_client's, attached to a fence of its own whose
 * lease it needs for writes. */
static void fenced_client(kube_config_t **cfg, kube_client_t **c, kube_fence_t **f)
{
	closed_port_client(0, 1, cfg, c);
	assert_int_equal(kube_fence_create(f), GPUQ_OK);
	kube_client_fence(*c, *f, KUBE_FENCE_WRITES);
}

static void fenced_client_free(kube_config_t *cfg, kube_client_t *c, kube_fence_t *f)
{
	kube_client_destroy(c);
	kube_fence_destroy(f);
	kube_config_destroy(cfg);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char path[300];

	(void)state;
	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

/* The margin is a fifth of the duration, at least 1 s; the deadline counts
 * from when the renewal was sent, so it is always before a standby could
 * take over (sent + duration) by the margin exactly. */
static void lease_deadline_arithmetic(void **state)
{
	(void)state;
	assert_int_equal(kube_lease_margin_ms(15), 3000);
	assert_int_equal(kube_lease_margin_ms(60), 12000);
	assert_int_equal(kube_lease_margin_ms(5), 1000);
	assert_int_equal(kube_lease_margin_ms(2), 1000); /* the floor */
	assert_int_equal(kube_lease_margin_ms(0), 3000); /* unset: the default 15 s */
	assert_int_equal(kube_lease_deadline(1000, 15), 13000);
	assert_int_equal(kube_lease_deadline(-5000, 15), 7000);
	for (int d = 2; d <= 3600; d++) {
		int64_t sent = 123456789, until = kube_lease_deadline(sent, d);
		assert_true(until < sent + (int64_t)d * 1000);
		assert_int_equal(sent + (int64_t)d * 1000 - until, kube_lease_margin_ms(d));
		assert_true(until > sent); /* a lease always leaves some time to act */
	}
}

/* Every wait and attempt of a request goes through kube_fence_plan. */
static void fence_plan_table(void **state)
{
	static const struct {
		int64_t until;
		bool stopping;
		int64_t at;
		long base;
		int rc;
		long timeout;
	} cases[] = {
	    {INT64_MAX, false, 5000, 0, GPUQ_OK, KUBE_REQUEST_TIMEOUT_MS}, /* not fenced */
	    {INT64_MAX, false, 5000, 4000, GPUQ_OK, 4000},		   /* the client's own */
	    {INT64_MAX, true, 5000, 0, GPUQ_ESTOPPED, KUBE_REQUEST_TIMEOUT_MS},
	    {60000, true, 5000, 0, GPUQ_ESTOPPED, KUBE_REQUEST_TIMEOUT_MS}, /* stop wins */
	    {0, false, 5000, 0, GPUQ_EFENCED, KUBE_REQUEST_TIMEOUT_MS},	    /* dropped */
	    {5000, false, 5000, 0, GPUQ_EFENCED, KUBE_REQUEST_TIMEOUT_MS},  /* ends now */
	    {4999, false, 5000, 0, GPUQ_EFENCED, KUBE_REQUEST_TIMEOUT_MS},
	    {5001, false, 5000, 0, GPUQ_OK, 1},		 /* a write may not run past it */
	    {17000, false, 5000, 0, GPUQ_OK, 12000},	 /* cut to the lease left */
	    {17000, false, 5000, 30000, GPUQ_OK, 12000}, /* whichever is shorter */
	    {17000, false, 5000, 2000, GPUQ_OK, 2000},
	    {90000, false, 5000, 0, GPUQ_OK, KUBE_REQUEST_TIMEOUT_MS},
	    /* a Retry-After (or limiter) wait planned past the lease: refused at
	     * once, nobody sleeps toward a send that could not happen */
	    {17000, false, 17000 + 1, 0, GPUQ_EFENCED, KUBE_REQUEST_TIMEOUT_MS},
	    {17000, false, 5000 + 30000, 0, GPUQ_EFENCED, KUBE_REQUEST_TIMEOUT_MS},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long t = -1;
		int rc = kube_fence_plan(cases[i].until, cases[i].stopping, cases[i].at,
					 cases[i].base, &t);
		if (rc != cases[i].rc || t != cases[i].timeout)
			fail_msg("case %zu: rc %d timeout %ld, want %d %ld", i, rc, t, cases[i].rc,
				 cases[i].timeout);
	}
}

/* A hold after a gap starts a new term; a renewal while held does not. */
static void fence_terms(void **state)
{
	kube_fence_t *f;
	int64_t now = gpuq_mono_ms();

	(void)state;
	assert_int_equal(kube_fence_create(&f), GPUQ_OK);
	assert_false(kube_fence_held(f, now));
	assert_int_equal(kube_fence_until(f), 0);
	assert_int_equal(kube_fence_term(f), 0);
	kube_fence_hold(f, now + FAR_MS);
	assert_true(kube_fence_held(f, now));
	assert_false(kube_fence_held(f, now + FAR_MS));
	assert_int_equal(kube_fence_term(f), 1);
	kube_fence_hold(f, now + 2 * FAR_MS); /* renewed in time */
	assert_int_equal(kube_fence_term(f), 1);
	kube_fence_drop(f);
	assert_false(kube_fence_held(f, now));
	kube_fence_hold(f, now + FAR_MS);
	assert_int_equal(kube_fence_term(f), 2);
	kube_fence_hold(f, now - 1); /* a late renewal's deadline already past */
	assert_false(kube_fence_held(f, gpuq_mono_ms()));
	kube_fence_hold(f, gpuq_mono_ms() + FAR_MS); /* after a lapse: a new term */
	assert_int_equal(kube_fence_term(f), 3);
	assert_false(kube_fence_stopping(f));
	kube_fence_stop(f);
	assert_true(kube_fence_stopping(f));
	kube_fence_resume(f);
	assert_false(kube_fence_stopping(f));
	kube_fence_destroy(f);
	kube_fence_destroy(NULL);
}

typedef struct {
	kube_fence_t *f;
	bool lease;
	int rc;
	int64_t slept_ms;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool started;
} sleeper_t;

static void *sleeper_main(void *arg)
{
	sleeper_t *s = arg;
	int64_t t0 = gpuq_mono_ms();

	pthread_mutex_lock(&s->mu);
	s->started = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	s->rc = kube_fence_sleep(s->f, t0 + FAR_MS, s->lease);
	s->slept_ms = gpuq_mono_ms() - t0;
	return NULL;
}

/* Start a sleeper until FAR_MS from now, end it with end(f), and say how
 * it ended. Whether end comes before or after the sleep begins, the sleep
 * must end at once: a sleep that ran its course would hang the test for
 * FAR_MS and then fail the slept_ms check. */
static void sleep_then(kube_fence_t *f, bool lease, void (*end)(kube_fence_t *), int want)
{
	sleeper_t s = {.f = f, .lease = lease, .rc = 99};
	pthread_t t;

	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	assert_int_equal(pthread_create(&t, NULL, sleeper_main, &s), 0);
	pthread_mutex_lock(&s.mu);
	while (!s.started)
		pthread_cond_wait(&s.cv, &s.mu);
	pthread_mutex_unlock(&s.mu);
	end(f);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, want);
	assert_true(s.slept_ms < FAR_MS); /* it woke before its time */
	pthread_cond_destroy(&s.cv);
	pthread_mutex_destroy(&s.mu);
}

static void fence_sleeps_end_at_once(void **state)
{
	kube_fence_t *f;
	int64_t now;

	(void)state;
	assert_int_equal(kube_fence_create(&f), GPUQ_OK);
	/* a leader's wait (lease held well past the wake time) ends on a drop */
	kube_fence_hold(f, gpuq_mono_ms() + 3 * FAR_MS);
	sleep_then(f, true, kube_fence_drop, GPUQ_EFENCED);
	/* any wait ends on a stop: SIGTERM */
	kube_fence_hold(f, gpuq_mono_ms() + 3 * FAR_MS);
	sleep_then(f, true, kube_fence_stop, GPUQ_ESTOPPED);
	kube_fence_resume(f);
	sleep_then(f, false, kube_fence_stop, GPUQ_ESTOPPED);
	kube_fence_resume(f);
	/* a wait past the lease's end is refused without sleeping at all */
	now = gpuq_mono_ms();
	kube_fence_hold(f, now + FAR_MS / 2);
	assert_int_equal(kube_fence_sleep(f, now + FAR_MS, true), GPUQ_EFENCED);
	/* a short one inside the lease runs its course; without the lease too */
	assert_int_equal(kube_fence_sleep(f, gpuq_mono_ms() + 20, true), GPUQ_OK);
	kube_fence_drop(f);
	assert_int_equal(kube_fence_sleep(f, gpuq_mono_ms() + 20, false), GPUQ_OK);
	assert_int_equal(kube_fence_sleep(f, gpuq_mono_ms() + 20, true), GPUQ_EFENCED);
	/* waiting for the lease: a hold ends it (true), a stop too (false) */
	assert_false(kube_fence_await(f, gpuq_mono_ms() + 20));
	kube_fence_hold(f, gpuq_mono_ms() + FAR_MS);
	assert_true(kube_fence_await(f, gpuq_mono_ms() + FAR_MS));
	kube_fence_destroy(f);
}

/* Fenced writes are refused before anything is sent; reads are not fenced
 * by the lease; a stop refuses everything. */
static void fenced_requests_not_sent(void **state)
{
	kube_config_t *cfg;
	kube_client_t *c;
	kube_fence_t *f;
	kube_response_t resp;
	gpuq_diag_t diag = {{0}};
	json_t *body = json_pack("{s:s}", "a", "b");

	(void)state;
	fenced_client(&cfg, &c, &f);
	assert_int_equal(kube_patch(c, "/apis/batch/v1/namespaces/a/jobs/j", KUBE_PATCH_MERGE, body,
				    NULL, &diag),
			 GPUQ_EFENCED);
	assert_non_null(strstr(diag.msg, "PATCH /apis/batch/v1/namespaces/a/jobs/j: not sent: "
					 "the Lease is not held"));
	assert_int_equal(
	    kube_request(c, "DELETE", "/api/v1/namespaces/a/pods/p", NULL, NULL, 0, &resp, &diag),
	    GPUQ_EFENCED);
	kube_response_deinit(&resp);
	assert_int_equal(kube_request_json(c, "POST", "/api/v1/namespaces/a/configmaps", NULL, body,
					   NULL, &diag),
			 GPUQ_EFENCED);
	/* a read goes out (and finds nothing listening) */
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, 0, &resp, &diag), GPUQ_EHTTP);
	kube_response_deinit(&resp);
	/* the lease held: the write goes out too */
	kube_fence_hold(f, gpuq_mono_ms() + FAR_MS);
	assert_int_equal(kube_patch(c, "/apis/batch/v1/namespaces/a/jobs/j", KUBE_PATCH_MERGE, body,
				    NULL, &diag),
			 GPUQ_EHTTP);
	/* stopping: nothing goes out, reads included */
	kube_fence_stop(f);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, 0, &resp, &diag),
			 GPUQ_ESTOPPED);
	assert_non_null(strstr(diag.msg, "GET /api: not sent: stopping"));
	kube_response_deinit(&resp);
	/* stop only: the lease plays no part */
	kube_fence_resume(f);
	kube_fence_drop(f);
	kube_client_fence(c, f, KUBE_FENCE_STOP);
	assert_int_equal(kube_patch(c, "/apis/batch/v1/namespaces/a/jobs/j", KUBE_PATCH_MERGE, body,
				    NULL, &diag),
			 GPUQ_EHTTP);
	json_decref(body);
	fenced_client_free(cfg, c, f);
}

/* The term's token: its form, the fieldManager's 128 characters, the
 * query it joins. */
static void fence_token_table(void **state)
{
	static const struct {
		uint32_t transitions;
		const char *identity;
		int rc;
		const char *want;
	} t[] = {
	    {0, "main", GPUQ_OK, "gpuq-lease-0-main"},
	    {4294967295u, "gpuq-7d9f8b6c4-x2k9p", GPUQ_OK,
	     "gpuq-lease-4294967295-gpuq-7d9f8b6c4-x2k9p"},
	};
	static const struct {
		const char *path, *token, *want;
	} u[] = {
	    {"/apis/batch/v1/namespaces/a/jobs/j", "gpuq-lease-3-main",
	     "/apis/batch/v1/namespaces/a/jobs/j?fieldManager=gpuq-lease-3-main"},
	    {"/api/v1/namespaces/a/pods/p?dryRun=All", "gpuq-lease-3-a b/c",
	     "/api/v1/namespaces/a/pods/p?dryRun=All&fieldManager=gpuq-lease-3-a%20b%2Fc"},
	};
	char out[KUBE_FENCE_TOKEN_MAX + 1], id[KUBE_FENCE_IDENTITY_MAX + 1], big[200],
	    url[KUBE_URL_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		assert_int_equal(
		    kube_fence_token_format(t[i].transitions, t[i].identity, out, sizeof(out)),
		    t[i].rc);
		assert_string_equal(out, t[i].want);
	}
	/* the longest identity fits with the longest count; a longer one may not */
	memset(id, 'x', KUBE_FENCE_IDENTITY_MAX);
	id[KUBE_FENCE_IDENTITY_MAX] = '\0';
	assert_int_equal(kube_fence_token_format(4294967295u, id, out, sizeof(out)), GPUQ_OK);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(kube_fence_token_format(1, big, out, sizeof(out)), GPUQ_ELIMIT);
	assert_string_equal(out, "");
	for (size_t i = 0; i < sizeof(u) / sizeof(*u); i++) {
		assert_int_equal(kube_fenced_path(u[i].path, u[i].token, url, sizeof(url)),
				 GPUQ_OK);
		assert_string_equal(url, u[i].want);
	}
	assert_int_equal(kube_fenced_path("/api", "gpuq-lease-1-a", url, 8), GPUQ_ELIMIT);
}

/* A fenced write names its term's token as its fieldManager (what deploy/'s
 * ValidatingAdmissionPolicy compares with the Lease); a DELETE, a read, a
 * write of an unfenced client, or one with no token name none. The URL
 * each attempt was made to is the client's scratch URL. */
static void fenced_writes_name_their_term(void **state)
{
	kube_config_t *cfg;
	kube_client_t *c;
	kube_fence_t *f;
	kube_response_t resp;
	gpuq_diag_t diag = {{0}};
	json_t *body = json_pack("{s:s}", "a", "b");
	const char *job = "/apis/batch/v1/namespaces/a/jobs/j";

	(void)state;
	fenced_client(&cfg, &c, &f);
	kube_fence_hold(f, gpuq_mono_ms() + FAR_MS);
	/* held, no token yet (a replica without election): none named */
	assert_int_equal(kube_patch(c, job, KUBE_PATCH_MERGE, body, NULL, &diag), GPUQ_EHTTP);
	assert_null(strstr(c->url, "fieldManager"));
	kube_fence_set_token(f, "gpuq-lease-3-main");
	assert_int_equal(kube_patch(c, job, KUBE_PATCH_JSON, body, NULL, &diag), GPUQ_EHTTP);
	assert_non_null(strstr(c->url, "/jobs/j?fieldManager=gpuq-lease-3-main"));
	assert_int_equal(kube_request_json(c, "POST", "/api/v1/namespaces/a/configmaps", NULL, body,
					   NULL, &diag),
			 GPUQ_EHTTP);
	assert_non_null(strstr(c->url, "/configmaps?fieldManager=gpuq-lease-3-main"));
	assert_int_equal(
	    kube_request(c, "DELETE", "/api/v1/namespaces/a/pods/p", NULL, NULL, 0, &resp, &diag),
	    GPUQ_EHTTP);
	kube_response_deinit(&resp);
	assert_null(strstr(c->url, "fieldManager"));
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, 0, &resp, &diag), GPUQ_EHTTP);
	kube_response_deinit(&resp);
	assert_null(strstr(c->url, "fieldManager"));
	/* a new term: its own token */
	kube_fence_set_token(f, "gpuq-lease-4-main");
	assert_int_equal(kube_patch(c, job, KUBE_PATCH_MERGE, body, NULL, &diag), GPUQ_EHTTP);
	assert_non_null(strstr(c->url, "fieldManager=gpuq-lease-4-main"));
	/* a client the fence only stops: its writes are no leader's */
	kube_client_fence(c, f, KUBE_FENCE_STOP);
	assert_int_equal(kube_patch(c, job, KUBE_PATCH_MERGE, body, NULL, &diag), GPUQ_EHTTP);
	assert_null(strstr(c->url, "fieldManager"));
	json_decref(body);
	fenced_client_free(cfg, c, f);
}

typedef struct {
	kube_client_t *c;
	const char *method;
	int rc;
	gpuq_diag_t diag;
	int64_t took_ms;
} caller_t;

static void *caller_main(void *arg)
{
	caller_t *k = arg;
	kube_response_t resp;
	int64_t t0 = gpuq_mono_ms();

	k->rc = kube_request(k->c, k->method, "/api/v1/namespaces/a/configmaps", NULL, NULL, 0,
			     &resp, &k->diag);
	kube_response_deinit(&resp);
	k->took_ms = gpuq_mono_ms() - t0;
	return NULL;
}

/* The rate limiter's wait: a client of 1 request per 1,000 s has spent its
 * one token, so its next request waits for the next one (a minute at a
 * time). A fenced
 * write whose lease ends sooner is refused at once; any request waiting
 * ends the moment the fence stops. */
static void limiter_waits_end(void **state)
{
	kube_config_t *cfg;
	kube_client_t *c;
	kube_fence_t *f;
	kube_response_t resp;
	gpuq_diag_t diag = {{0}};
	caller_t k = {0};
	pthread_t t;

	(void)state;
	closed_port_client(0.001, 1, &cfg, &c);
	assert_int_equal(kube_fence_create(&f), GPUQ_OK);
	kube_client_fence(c, f, KUBE_FENCE_WRITES);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, 0, &resp, &diag), GPUQ_EHTTP);
	kube_response_deinit(&resp);
	/* the limiter waits a minute at a time (kube_limiter_take): a lease of
	 * 30 s does not last that long */
	kube_fence_hold(f, gpuq_mono_ms() + 30000);
	assert_int_equal(kube_request(c, "PUT", "/api/v1/namespaces/a/configmaps/x", NULL, NULL, 0,
				      &resp, &diag),
			 GPUQ_EFENCED);
	kube_response_deinit(&resp);
	/* a read waits for its token... until the stop */
	k.c = c;
	k.method = "GET";
	assert_int_equal(pthread_create(&t, NULL, caller_main, &k), 0);
	kube_fence_stop(f);
	pthread_join(t, NULL);
	assert_int_equal(k.rc, GPUQ_ESTOPPED);
	assert_true(k.took_ms < FAR_MS);
	kube_client_destroy(c);
	kube_fence_destroy(f);
	kube_config_destroy(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(lease_deadline_arithmetic),
	    cmocka_unit_test(fence_plan_table),
	    cmocka_unit_test(fence_terms),
	    cmocka_unit_test(fence_sleeps_end_at_once),
	    cmocka_unit_test(fenced_requests_not_sent),
	    cmocka_unit_test(fence_token_table),
	    cmocka_unit_test(fenced_writes_name_their_term),
	    cmocka_unit_test(limiter_waits_end),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

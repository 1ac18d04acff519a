/* Unit tests of kube_watch_run against a fake apiserver (gpuq's own HTTPS
 * server, http/, answering /apis/ as its app): a collection that may be
 * unserved (a CRD's) is announced KUBE_EV_UNSERVED once while its LIST is
 * answered 404, with no RESET; listed (RESET, its objects, SYNCED) once it is
 * served, without a restart; UNSERVED again when it stops being served. A
 * collection that may not be unserved takes a 404 as a failure: no event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/http.h"
#include "kube/kube.h"

#include "unit/server_fixtures.h"
#include "unit/socket_fixtures.h"

#define PATH "/apis/example.io/v1/widgets"
#define EVENTS_MAX 64
#define WAIT_MS 10000 /* a condition is met within this long, or the test fails */

/* ---- the fake apiserver ---- */

typedef struct {
	atomic_bool served;   /* the collection is served (else 404) */
	atomic_int lists;     /* LIST requests answered */
	atomic_int not_found; /* ... of them 404 */
} fake_t;

static const char LIST_BODY[] =
    "{\"kind\":\"WidgetList\",\"apiVersion\":\"example.io/v1\",\"metadata\":"
    "{\"resourceVersion\":\"5\"},\"items\":[{\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"4\"}}]}";
/* a watch that brings a bookmark and ends (the loop watches again) */
static const char WATCH_BODY[] = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Widget\","
				 "\"apiVersion\":\"example.io/v1\",\"metadata\":"
				 "{\"resourceVersion\":\"5\"}}}\n";
static const char NOT_FOUND[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
				"\"Failure\",\"message\":\"the server could not find the "
				"requested resource\",\"reason\":\"NotFound\",\"code\":404}";

static int fake_app(void *ctx, const http_app_request_t *rq, bool retry, http_app_reply_t *out)
{
	fake_t *f = ctx;
	bool watch = rq->query && strstr(rq->query, "watch=1");

	(void)retry;
	memset(out, 0, sizeof(*out));
	out->content_type = "application/json";
	if (strcmp(rq->path, PATH) != 0 || !atomic_load(&f->served)) {
		if (!watch) {
			atomic_fetch_add(&f->lists, 1);
			atomic_fetch_add(&f->not_found, 1);
		}
		out->status = 404;
		out->body = NOT_FOUND;
		out->len = sizeof(NOT_FOUND) - 1;
		return GPUQ_OK;
	}
	out->status = 200;
	if (watch) {
		usleep(50 * 1000); /* a watch lives a while */
		out->body = WATCH_BODY;
		out->len = sizeof(WATCH_BODY) - 1;
	} else {
		atomic_fetch_add(&f->lists, 1);
		out->body = LIST_BODY;
		out->len = sizeof(LIST_BODY) - 1;
	}
	return GPUQ_OK;
}

/* ---- the watch loop on its own thread, recording what it announces ---- */

typedef struct {
	kube_client_t *client;
	kube_watch_opts_t o;
	atomic_bool stop;
	pthread_mutex_t mu;
	kube_event_type_t ev[EVENTS_MAX]; /* under mu */
	size_t n;			  /* under mu */
	pthread_t thread;
} rec_t;

static int on_event(void *ctx, const kube_event_t *ev)
{
	rec_t *r = ctx;

	pthread_mutex_lock(&r->mu);
	if (r->n < EVENTS_MAX)
		r->ev[r->n++] = ev->type;
	pthread_mutex_unlock(&r->mu);
	return 0;
}

static void *watch_main(void *arg)
{
	rec_t *r = arg;

	(void)kube_watch_run(r->client, &r->o, on_event, r);
	return NULL;
}

/* The events announced so far as letters: U(nserved) R(eset) A(dded)
 * S(ynced) M D; at most cap - 1. */
static void seen(rec_t *r, char *out, size_t cap)
{
	static const char letters[] = "AMDBERSU";
	size_t k = 0;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n && k + 1 < cap; i++)
		out[k++] = letters[r->ev[i]];
	pthread_mutex_unlock(&r->mu);
	out[k] = '\0';
}

/* Wait until the events announced end with tail. */
static bool ends_with(rec_t *r, const char *tail)
{
	char s[EVENTS_MAX + 1];

	for (int64_t until = gpuq_mono_ms() + WAIT_MS; gpuq_mono_ms() < until; usleep(10 * 1000)) {
		size_t n, t = strlen(tail);
		seen(r, s, sizeof(s));
		n = strlen(s);
		if (n >= t && !strcmp(s + n - t, tail))
			return true;
	}
	return false;
}

static void wait_lists(fake_t *f, int n)
{
	int64_t until = gpuq_mono_ms() + WAIT_MS;

	while (atomic_load(&f->lists) < n && gpuq_mono_ms() < until)
		usleep(10 * 1000);
	assert_true(atomic_load(&f->lists) >= n);
}

static void rec_start(rec_t *r, kube_client_t *c, bool may_be_unserved)
{
	memset(r, 0, sizeof(*r));
	r->client = c;
	atomic_init(&r->stop, false);
	pthread_mutex_init(&r->mu, NULL);
	r->o = (kube_watch_opts_t){.path = PATH,
				   .name = "widgets",
				   .stop = &r->stop,
				   .fast = true,
				   .may_be_unserved = may_be_unserved,
				   .unserved_poll_ms = 30};
	assert_int_equal(pthread_create(&r->thread, NULL, watch_main, r), 0);
}

static void rec_stop(rec_t *r)
{
	atomic_store(&r->stop, true);
	pthread_join(r->thread, NULL);
	pthread_mutex_destroy(&r->mu);
}

static void watch_follows_a_collection_that_comes_and_goes(void **state)
{
	const char *certs = tmp_path("certs"), *kdir = tmp_path("kube");
	fake_t f;
	test_pair_t pair;
	http_server_config_t cfg = {0};
	http_server_t *srv = NULL;
	kube_config_t *kc = NULL;
	kube_client_t *c1 = NULL, *c2 = NULL;
	kube_client_opts_t ko;
	gpuq_diag_t d = {{0}};
	char listen[32], text[1024], path[600], s[EVENTS_MAX + 1];
	rec_t r, plain;

	(void)state;
	atomic_init(&f.served, false);
	atomic_init(&f.lists, 0);
	atomic_init(&f.not_found, 0);
	pair_make(0x21, &pair);
	mkdir(certs, 0700);
	pair_write(certs, &pair, &pair);
	pair_free_pem(&pair);
	cfg.port = free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", (unsigned)cfg.port);
	cfg.listen = listen;
	cfg.host = "127.0.0.1";
	cfg.cert_dir = certs;
	cfg.threads = 4;
	cfg.poll_ms = HTTP_POLL_MS_DEFAULT;
	cfg.body_budget = HTTP_BODY_BUDGET_DEFAULT;
	assert_int_equal(http_server_create(&cfg, &srv, &d), GPUQ_OK);
	http_server_app_set(srv, fake_app, NULL, &f);
	assert_int_equal(http_server_start(srv, &d), GPUQ_OK);

	mkdir(kdir, 0700);
	snprintf(text, sizeof(text),
		 "current-context: c\nclusters:\n- name: k\n  cluster:\n"
		 "    server: https://127.0.0.1:%u\n    insecure-skip-tls-verify: true\n"
		 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
		 "users:\n- name: u\n  user:\n    token: t0k\n",
		 (unsigned)cfg.port);
	write_file(kdir, "config", text, strlen(text));
	snprintf(path, sizeof(path), "%s/config", kdir);
	assert_int_equal(kube_config_load(path, &kc, &d), GPUQ_OK);
	kube_client_opts_default(&ko);
	assert_int_equal(kube_client_create(kc, &ko, &c1, &d), GPUQ_OK);
	assert_int_equal(kube_client_create(kc, &ko, &c2, &d), GPUQ_OK);

	/* not served: UNSERVED once, however often it asks; no RESET */
	rec_start(&r, c1, true);
	assert_true(ends_with(&r, "U"));
	wait_lists(&f, 4);
	seen(&r, s, sizeof(s));
	assert_string_equal(s, "U");

	/* served now (its CRD installed): listed without a restart */
	atomic_store(&f.served, true);
	assert_true(ends_with(&r, "URAS"));
	seen(&r, s, sizeof(s));
	assert_string_equal(s, "URAS");

	/* no longer served (its CRD removed): UNSERVED again, once */
	atomic_store(&f.served, false);
	assert_true(ends_with(&r, "URASU"));
	wait_lists(&f, atomic_load(&f.lists) + 3);
	seen(&r, s, sizeof(s));
	assert_string_equal(s, "URASU");

	/* and back */
	atomic_store(&f.served, true);
	assert_true(ends_with(&r, "URASURAS"));
	rec_stop(&r);

	/* a collection that may not be unserved: a 404 is a failure, retried
	 * with backoff, and nothing is announced */
	atomic_store(&f.served, false);
	rec_start(&plain, c2, false);
	wait_lists(&f, atomic_load(&f.lists) + 2);
	seen(&plain, s, sizeof(s));
	assert_string_equal(s, "");
	rec_stop(&plain);

	kube_client_destroy(c1);
	kube_client_destroy(c2);
	kube_config_destroy(kc);
	http_server_stop(srv, 0);
	http_server_destroy(srv);
	rm_tree(tmp_root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(watch_follows_a_collection_that_comes_and_goes),
	};

	return cmocka_run_group_tests_name("kube_watch", tests, NULL, NULL);
}

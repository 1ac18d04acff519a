/* Unit tests for kube: the watch-stream decoder (splits, keep-alives, CRLF,
 * bookmarks, ERROR events, every refusal and its stickiness, the size cap,
 * callback stops), the rate limiter, RFC 3339 times, escaping, status
 * mapping, and the transport failure path against a closed port. The
 * kubeconfig and in-cluster configuration: test_kube_config.c. No
 * apiserver here: e2e/ runs kube against a real one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "unit/kube_fixtures.h"

/* ---- the watch decoder ---- */

#define REC_MAX 32

typedef struct {
	int n;				 /* events seen */
	kube_event_type_t type[REC_MAX]; /* their types */
	char rv[REC_MAX][80];		 /* their resourceVersions */
	long code[REC_MAX];		 /* ERROR codes */
	char name[REC_MAX][64];		 /* metadata.name, or message for ERROR */
	int stop_at;			 /* return stop_rc on this event (1-based), 0 never */
	int stop_rc;			 /* what to return then */
} rec_t;

static int rec_cb(void *ctx, const kube_event_t *ev)
{
	rec_t *r = ctx;
	const char *name;

	assert_true(ev->object || ev->fast);
	assert_false(ev->object && ev->fast);
	assert_non_null(ev->resource_version);
	assert_true(r->n < REC_MAX);
	r->type[r->n] = ev->type;
	r->code[r->n] = ev->code;
	snprintf(r->rv[r->n], sizeof(r->rv[0]), "%s", ev->resource_version);
	if (ev->fast)
		name = ev->type == KUBE_EV_ERROR
			   ? jv_member_str(ev->fast, "message")
			   : jv_member_str(jv_get(ev->fast, "metadata"), "name");
	else
		name = ev->type == KUBE_EV_ERROR
			   ? json_string_value(json_object_get(ev->object, "message"))
			   : json_string_value(
				 json_object_get(json_object_get(ev->object, "metadata"), "name"));
	snprintf(r->name[r->n], sizeof(r->name[0]), "%s", name ? name : "");
	r->n++;
	return r->n == r->stop_at ? r->stop_rc : 0;
}

static void rec_equal(const rec_t *a, const rec_t *b)
{
	assert_int_equal(a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		assert_int_equal(a->type[i], b->type[i]);
		assert_string_equal(a->rv[i], b->rv[i]);
		assert_int_equal(a->code[i], b->code[i]);
		assert_string_equal(a->name[i], b->name[i]);
	}
}

#define JOB_ADDED                                                                                  \
	"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","            \
	"\"metadata\":{\"name\":\"train-1\",\"namespace\":\"team-a\",\"resourceVersion\":"         \
	"\"1001\","                                                                                \
	"\"labels\":{\"kueue.x-k8s.io/queue-name\":\"lq\"}},\"spec\":{\"suspend\":true,"           \
	"\"parallelism\":2}}}"
#define JOB_MODIFIED                                                                               \
	"{\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\","         \
	"\"metadata\":{\"name\":\"train-1\",\"namespace\":\"team-a\",\"resourceVersion\":"         \
	"\"1002\"},"                                                                               \
	"\"spec\":{\"suspend\":false}}}"
#define POD_DELETED                                                                                \
	"{\"type\":\"DELETED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"   \
	"{\"name\":\"train-1-abcde\",\"namespace\":\"team-a\",\"resourceVersion\":\"1003\"}}}"
#define BOOKMARK                                                                                   \
	"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\","         \
	"\"metadata\":{\"resourceVersion\":\"1010\",\"creationTimestamp\":null,\"annotations\":"   \
	"{\"k8s.io/initial-events-end\":\"true\"}}}}"
#define ERROR_410                                                                                  \
	"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{" \
	"},"                                                                                       \
	"\"status\":\"Failure\",\"message\":\"too old resource version: 1 (1010)\","               \
	"\"reason\":\"Expired\",\"code\":410}}"

/* A stream with every event type, keep-alives and a CRLF line. */
static const char stream[] = JOB_ADDED "\n"
				       "\n" JOB_MODIFIED "\r\n"
				       "  \t\r\n" POD_DELETED "\n" BOOKMARK "\n"
				       "\r\n" ERROR_410 "\n";

static void check_stream_events(const rec_t *r)
{
	static const kube_event_type_t types[] = {KUBE_EV_ADDED, KUBE_EV_MODIFIED, KUBE_EV_DELETED,
						  KUBE_EV_BOOKMARK, KUBE_EV_ERROR};
	static const char *const rvs[] = {"1001", "1002", "1003", "1010", ""};
	static const char *const names[] = {"train-1", "train-1", "train-1-abcde", "",
					    "too old resource version: 1 (1010)"};

	assert_int_equal(r->n, 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(r->type[i], types[i]);
		assert_string_equal(r->rv[i], rvs[i]);
		assert_string_equal(r->name[i], names[i]);
		assert_int_equal(r->code[i], i == 4 ? 410 : 0);
	}
}

/* Feed buf in pieces cut at cuts[0..ncuts) (ascending offsets). */
static int feed_cut(kube_watch_decoder_t *d, const char *buf, size_t len, const size_t *cuts,
		    size_t ncuts, gpuq_diag_t *diag)
{
	size_t at = 0;
	int rc;

	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		rc = kube_watch_decoder_feed(d, buf + at, end - at, diag);
		if (rc)
			return rc;
		at = end;
	}
	return GPUQ_OK;
}

static void decoder_whole_stream(void **state)
{
	kube_watch_decoder_t *d;
	rec_t r = {0};
	gpuq_diag_t diag = {{0}};

	(void)state;
	assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, stream, strlen(stream), &diag), GPUQ_OK);
	check_stream_events(&r);
	assert_int_equal(kube_watch_decoder_events(d), 5);
	assert_string_equal(diag.msg, "");
	/* an empty feed and a feed of keep-alives change nothing */
	assert_int_equal(kube_watch_decoder_feed(d, "", 0, &diag), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, "\n\r\n \n", 5, &diag), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_events(d), 5);
	kube_watch_decoder_destroy(d);
	kube_watch_decoder_destroy(NULL);
	/* the fast reader (jv/) delivers the same events */
	memset(&r, 0, sizeof(r));
	assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
	kube_watch_decoder_fast(d, true);
	assert_int_equal(kube_watch_decoder_feed(d, stream, strlen(stream), &diag), GPUQ_OK);
	check_stream_events(&r);
	kube_watch_decoder_destroy(d);
}

/* Every single cut point, every pair of cut points 7 bytes apart and
 * byte-at-a-time feeding give the events of the whole stream. */
static void decoder_every_split(void **state)
{
	size_t len = strlen(stream);
	rec_t whole = {0};
	kube_watch_decoder_t *d;

	(void)state;
	assert_int_equal(kube_watch_decoder_create(0, rec_cb, &whole, &d), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, stream, len, NULL), GPUQ_OK);
	kube_watch_decoder_destroy(d);
	for (size_t i = 0; i <= len; i++) {
		for (size_t gap = 0; gap <= 7; gap += 7) {
			size_t cuts[2] = {i, i + gap < len ? i + gap : len};
			rec_t r = {0};
			assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
			assert_int_equal(feed_cut(d, stream, len, cuts, 2, NULL), GPUQ_OK);
			rec_equal(&whole, &r);
			assert_int_equal(kube_watch_decoder_events(d), 5);
			kube_watch_decoder_destroy(d);
		}
	}
	{
		rec_t r = {0};
		assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
		for (size_t i = 0; i < len; i++)
			assert_int_equal(kube_watch_decoder_feed(d, stream + i, 1, NULL), GPUQ_OK);
		rec_equal(&whole, &r);
		kube_watch_decoder_destroy(d);
	}
}

/* A line is only an event once its newline arrives; CRLF equals LF. */
static void decoder_partial_and_crlf(void **state)
{
	kube_watch_decoder_t *d;
	rec_t r = {0};

	(void)state;
	assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, JOB_ADDED, strlen(JOB_ADDED), NULL), GPUQ_OK);
	assert_int_equal(r.n, 0);
	assert_int_equal(kube_watch_decoder_feed(d, "\r", 1, NULL), GPUQ_OK);
	assert_int_equal(r.n, 0);
	assert_int_equal(kube_watch_decoder_feed(d, "\n", 1, NULL), GPUQ_OK);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.rv[0], "1001");
	assert_int_equal(kube_watch_decoder_feed(d, BOOKMARK "\r\n" BOOKMARK "\n",
						 strlen(BOOKMARK) * 2 + 3, NULL),
			 GPUQ_OK);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.type[1], KUBE_EV_BOOKMARK);
	assert_int_equal(r.type[2], KUBE_EV_BOOKMARK);
	assert_string_equal(r.rv[2], "1010");
	assert_int_equal(kube_watch_decoder_events(d), 3);
	kube_watch_decoder_destroy(d);
}

/* ERROR events: the Status code (410 or any other), "" as resourceVersion,
 * no metadata needed; a code that is not an HTTP status reads as 0. */
static void decoder_error_events(void **state)
{
	static const struct {
		const char *line;
		long code;
	} cases[] = {
	    {ERROR_410 "\n", 410},
	    {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,\"message\":\"x\"}}"
	     "\n",
	     500},
	    {"{\"type\":\"ERROR\",\"object\":{}}\n", 0},
	    {"{\"type\":\"ERROR\",\"object\":{\"code\":\"410\"}}\n", 0},
	    {"{\"type\":\"ERROR\",\"object\":{\"code\":-410}}\n", 0},
	    {"{\"type\":\"ERROR\",\"object\":{\"code\":9223372036854775807}}\n", 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kube_watch_decoder_t *d;
		rec_t r = {0};
		assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
		assert_int_equal(
		    kube_watch_decoder_feed(d, cases[i].line, strlen(cases[i].line), NULL),
		    GPUQ_OK);
		assert_int_equal(r.n, 1);
		assert_int_equal(r.type[0], KUBE_EV_ERROR);
		assert_int_equal(r.code[0], cases[i].code);
		assert_string_equal(r.rv[0], "");
		kube_watch_decoder_destroy(d);
	}
}

#define RV64 "1234567890123456789012345678901234567890123456789012345678901234"

/* Every kind of bad line: GPUQ_ECORRUPT with a diag naming the problem,
 * then sticky: a good event fed afterwards is refused the same way and not
 * delivered. The same refusals whether the object is handed over in jv/'s
 * tree (fast) or as a jansson tree built from it: one reader reads both. */
static void decoder_refusals(void **state)
{
	static const struct {
		const char *line;
		const char *diag; /* expected substring */
	} cases[] = {
	    {"not json", "watch event 2: not JSON"},
	    {"{\"type\":\"ADDED\",\"object\":{}", "not JSON"},
	    {"[1,2]", "watch event 2: not a JSON object"},
	    {"[{\"type\":\"ADDED\"}]", "not a JSON object"},
	    {"\"ADDED\"", "not a JSON object"},
	    {"null", "not a JSON object"},
	    {"{\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}", "no \"type\" string"},
	    {"{\"type\":5,\"object\":{}}", "no \"type\" string"},
	    {"{\"type\":null,\"object\":{}}", "no \"type\" string"},
	    {"{\"type\":\"SNOOZED\",\"object\":{}}", "unknown type \"SNOOZED\""},
	    {"{\"type\":\"added\",\"object\":{}}", "unknown type \"added\""},
	    {"{\"type\":\"\",\"object\":{}}", "unknown type \"\""},
	    {"{\"type\":\"ADDED\"}", "(ADDED): \"object\" is not an object"},
	    {"{\"type\":\"ADDED\",\"object\":[1]}", "\"object\" is not an object"},
	    {"{\"type\":\"ERROR\",\"object\":\"gone\"}", "(ERROR): \"object\" is not an object"},
	    {"{\"type\":\"MODIFIED\",\"object\":{}}",
	     "(MODIFIED): metadata.resourceVersion missing"},
	    {"{\"type\":\"DELETED\",\"object\":{\"metadata\":5}}",
	     "metadata.resourceVersion missing"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":7}}}",
	     "metadata.resourceVersion missing"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"\"}}}",
	     "metadata.resourceVersion missing"},
	    {"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}",
	     "(BOOKMARK): metadata.resourceVersion missing"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"" RV64 "5\"}}}",
	     "metadata.resourceVersion longer than 64 bytes"},
	    /* the event's own keys twice: read, the first counting */
	    {"{\"type\":\"ADDED\",\"type\":\"ADDED\",\"object\":{}}",
	     "(ADDED): metadata.resourceVersion missing"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\\u0000\"}}}",
	     "not JSON"},
	};

	(void)state;
	for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
		size_t c = i % (sizeof(cases) / sizeof(cases[0]));
		bool fast = i >= sizeof(cases) / sizeof(cases[0]);
		const char *want = cases[c].diag;
		kube_watch_decoder_t *d;
		rec_t r = {0};
		gpuq_diag_t diag = {{0}};
		char buf[512];
		int n = snprintf(buf, sizeof(buf), "%s\n%s\n", JOB_ADDED, cases[c].line);

		assert_true(n > 0 && (size_t)n < sizeof(buf));
		assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
		kube_watch_decoder_fast(d, fast);
		assert_int_equal(kube_watch_decoder_feed(d, buf, (size_t)n, &diag), GPUQ_ECORRUPT);
		if (!strstr(diag.msg, want))
			fail_msg("case %zu%s: diag \"%s\" lacks \"%s\"", c, fast ? " (fast)" : "",
				 diag.msg, want);
		assert_int_equal(r.n, 1); /* the good event before it was delivered */
		assert_int_equal(kube_watch_decoder_events(d), 1);
		/* sticky */
		assert_int_equal(
		    kube_watch_decoder_feed(d, JOB_MODIFIED "\n", strlen(JOB_MODIFIED) + 1, NULL),
		    GPUQ_ECORRUPT);
		assert_int_equal(kube_watch_decoder_feed(d, "", 0, NULL), GPUQ_ECORRUPT);
		assert_int_equal(r.n, 1);
		kube_watch_decoder_destroy(d);
	}
}

/* What only a jansson tree cannot hold, refused when the object is handed
 * over as one (as jansson's own parse refused it), read when it is handed
 * over in jv/'s tree: a key twice in the object, an integer past
 * json_int_t, a real that overflows. */
static void decoder_tree_refusals(void **state)
{
#define OBJ_WITH(x)                                                                                \
	"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"2\"}," x "}}"
	static const struct {
		const char *line;
		const char *diag; /* expected substring, not fast */
	} cases[] = {
	    {OBJ_WITH("\"a\":1,\"a\":2"), "watch event 2: not JSON: duplicate object key \"a\""},
	    {OBJ_WITH("\"n\":99999999999999999999"), "too big integer"},
	    {OBJ_WITH("\"r\":1e999"), "real number overflow"},
	};
#undef OBJ_WITH

	(void)state;
	for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
		size_t c = i % (sizeof(cases) / sizeof(cases[0]));
		bool fast = i >= sizeof(cases) / sizeof(cases[0]);
		kube_watch_decoder_t *d;
		rec_t r = {0};
		gpuq_diag_t diag = {{0}};
		char buf[512];
		int n = snprintf(buf, sizeof(buf), "%s\n%s\n", JOB_ADDED, cases[c].line);

		assert_true(n > 0 && (size_t)n < sizeof(buf));
		assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
		kube_watch_decoder_fast(d, fast);
		if (fast) {
			assert_int_equal(kube_watch_decoder_feed(d, buf, (size_t)n, &diag),
					 GPUQ_OK);
			assert_int_equal(r.n, 2);
		} else {
			assert_int_equal(kube_watch_decoder_feed(d, buf, (size_t)n, &diag),
					 GPUQ_ECORRUPT);
			if (!strstr(diag.msg, cases[c].diag))
				fail_msg("case %zu: diag \"%s\" lacks \"%s\"", c, diag.msg,
					 cases[c].diag);
			assert_int_equal(r.n, 1);
		}
		/* the count is of events handed over, the refused one not among them */
		assert_int_equal(kube_watch_decoder_events(d), r.n);
		kube_watch_decoder_destroy(d);
	}
}

/* A 64-byte resourceVersion is fine; the limit is 64. */
static void decoder_rv_exact_fit(void **state)
{
	static const char line[] =
	    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"" RV64 "\"}}}\n";
	kube_watch_decoder_t *d;
	rec_t r = {0};

	(void)state;
	assert_int_equal(strlen(RV64), KUBE_RV_MAX);
	assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, line, strlen(line), NULL), GPUQ_OK);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.rv[0], RV64);
	kube_watch_decoder_destroy(d);
}

/* A line of exactly max_event bytes (newline not counted) is decoded; one
 * byte more is GPUQ_ELIMIT, sticky, also when it arrives in pieces and
 * before its newline; diag NULL is fine. */
static void decoder_event_cap(void **state)
{
	enum { MAX = 300 };
	char line[MAX + 2];
	const char *head =
	    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"},"
	    "\"pad\":\"";
	size_t hl = strlen(head);
	kube_watch_decoder_t *d;
	gpuq_diag_t diag = {{0}};
	rec_t r = {0};

	(void)state;
	/* exactly MAX bytes: head + padding + "\"}}" */
	memcpy(line, head, hl);
	memset(line + hl, 'x', MAX - hl - 3);
	memcpy(line + MAX - 3, "\"}}\n", 4);
	assert_int_equal(kube_watch_decoder_create(MAX, rec_cb, &r, &d), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, line, MAX + 1, &diag), GPUQ_OK);
	assert_int_equal(r.n, 1);
	kube_watch_decoder_destroy(d);

	/* MAX + 1 bytes, fed in three pieces without the newline */
	memcpy(line, head, hl);
	memset(line + hl, 'x', MAX + 1 - hl - 3);
	memcpy(line + MAX + 1 - 3, "\"}}", 3);
	r.n = 0;
	assert_int_equal(kube_watch_decoder_create(MAX, rec_cb, &r, &d), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, line, 100, &diag), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, line + 100, MAX - 100, &diag), GPUQ_OK);
	assert_int_equal(kube_watch_decoder_feed(d, line + MAX, 1, &diag), GPUQ_ELIMIT);
	assert_non_null(strstr(diag.msg, "watch event 1: over 300 bytes"));
	assert_int_equal(kube_watch_decoder_feed(d, "\n", 1, NULL), GPUQ_ELIMIT);
	assert_int_equal(kube_watch_decoder_feed(d, BOOKMARK "\n", strlen(BOOKMARK) + 1, NULL),
			 GPUQ_ELIMIT);
	assert_int_equal(r.n, 0);
	assert_int_equal(kube_watch_decoder_events(d), 0);
	kube_watch_decoder_destroy(d);

	/* the default cap (0) takes a 100 KiB event */
	{
		size_t big = 100u << 10;
		char *ev = malloc(big + 2);
		assert_non_null(ev);
		memcpy(ev, head, hl);
		memset(ev + hl, 'y', big - hl - 3);
		memcpy(ev + big - 3, "\"}}\n", 4);
		r.n = 0;
		assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
		assert_int_equal(kube_watch_decoder_feed(d, ev, big + 1, NULL), GPUQ_OK);
		assert_int_equal(r.n, 1);
		kube_watch_decoder_destroy(d);
		free(ev);
	}
}

/* The callback's non-zero value stops the feed mid-buffer, is returned and
 * sticks (the rest of that buffer was never decoded); events counts what
 * was delivered. */
static void decoder_callback_stop(void **state)
{
	static const int rcs[] = {1, 42, -1, GPUQ_EINVAL};
	static const char three[] = JOB_ADDED "\n" JOB_MODIFIED "\n" POD_DELETED "\n";

	(void)state;
	for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++) {
		kube_watch_decoder_t *d;
		rec_t r = {.stop_at = 2, .stop_rc = rcs[i]};
		assert_int_equal(kube_watch_decoder_create(0, rec_cb, &r, &d), GPUQ_OK);
		assert_int_equal(kube_watch_decoder_feed(d, three, strlen(three), NULL), rcs[i]);
		assert_int_equal(r.n, 2);
		assert_int_equal(kube_watch_decoder_events(d), 2);
		assert_int_equal(kube_watch_decoder_feed(d, three, strlen(three), NULL), rcs[i]);
		assert_int_equal(r.n, 2);
		kube_watch_decoder_destroy(d);
	}
}

/* ---- the rate limiter ---- */

static void limiter_burst_then_spacing(void **state)
{
	double tokens = 3;
	int64_t refill = 0;

	(void)state;
	/* qps 10, burst 3: three at once, then one per 100 ms */
	for (int i = 0; i < 3; i++)
		assert_int_equal(kube_limiter_take(10, 3, &tokens, &refill, 0), 0);
	assert_int_equal(kube_limiter_take(10, 3, &tokens, &refill, 0), 101);
	assert_int_equal(kube_limiter_take(10, 3, &tokens, &refill, 50), 51);
	assert_int_equal(kube_limiter_take(10, 3, &tokens, &refill, 100), 0);
	assert_true(kube_limiter_take(10, 3, &tokens, &refill, 100) > 0);
	assert_int_equal(kube_limiter_take(10, 3, &tokens, &refill, 200), 0);
	/* a long idle refills to the burst, not beyond */
	for (int i = 0; i < 3; i++)
		assert_int_equal(kube_limiter_take(10, 3, &tokens, &refill, 1000000), 0);
	assert_true(kube_limiter_take(10, 3, &tokens, &refill, 1000000) > 0);
	assert_true(tokens >= 0 && tokens < 1);
	/* the clock going back changes nothing */
	assert_true(kube_limiter_take(10, 3, &tokens, &refill, 5) > 0);
	assert_int_equal(refill, 1000000);
}

static void limiter_no_limit(void **state)
{
	static const double qps[] = {0, -5};
	double tokens = 0;
	int64_t refill = 7;

	(void)state;
	for (size_t i = 0; i < 2; i++)
		for (int k = 0; k < 1000; k++)
			assert_int_equal(kube_limiter_take(qps[i], 1, &tokens, &refill, 0), 0);
	assert_int_equal(kube_limiter_take(NAN, 1, &tokens, &refill, 0), 0);
	assert_true(tokens == 0 && refill == 7); /* untouched */
}

static void limiter_edges(void **state)
{
	double tokens = 0;
	int64_t refill = 0;

	(void)state;
	/* burst 0 acts as 1: a request gets through once a token accrues */
	assert_int_equal(kube_limiter_take(1, 0, &tokens, &refill, 0), 1001);
	assert_int_equal(kube_limiter_take(1, 0, &tokens, &refill, 1001), 0);
	/* a tiny qps waits at most a minute at a time */
	tokens = 0;
	refill = 0;
	assert_int_equal(kube_limiter_take(1e-300, 1, &tokens, &refill, 0), 60000);
}

/* Over 10 s of 1 ms steps, qps 50 burst 100 lets 100 + 500 through. */
static void limiter_rate_property(void **state)
{
	double tokens = 100;
	int64_t refill = 0;
	int got = 0;

	(void)state;
	for (int64_t now = 0; now < 10000; now++)
		while (kube_limiter_take(50, 100, &tokens, &refill, now) == 0)
			got++;
	assert_true(got >= 599 && got <= 600);
}

/* ---- time ---- */

static void escape_table(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"", ""},
	    {"team-a", "team-a"},
	    {"A-Z_a.z~09", "A-Z_a.z~09"},
	    {"a b", "a%20b"},
	    {"app=web,tier!=db", "app%3Dweb%2Ctier%21%3Ddb"},
	    {"a/b?c&d#e%f+g", "a%2Fb%3Fc%26d%23e%25f%2Bg"},
	    {"gpuq.dev/queue in (a,b)", "gpuq.dev%2Fqueue%20in%20%28a%2Cb%29"},
	    {"\xc3\xa9\x7f\x01", "%C3%A9%7F%01"},
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(kube_escape(cases[i].in, out, sizeof(out)), GPUQ_OK);
		assert_string_equal(out, cases[i].out);
		/* exact fit works, one byte less does not and leaves a prefix */
		assert_int_equal(kube_escape(cases[i].in, out, strlen(cases[i].out) + 1), GPUQ_OK);
		assert_string_equal(out, cases[i].out);
		if (cases[i].out[0]) {
			assert_int_equal(kube_escape(cases[i].in, out, strlen(cases[i].out)),
					 GPUQ_ELIMIT);
			assert_true(strlen(out) < strlen(cases[i].out));
			assert_memory_equal(out, cases[i].out, strlen(out));
		}
	}
	/* a %XX never splits */
	assert_int_equal(kube_escape("ab cd", out, 4), GPUQ_ELIMIT);
	assert_string_equal(out, "ab");
	assert_int_equal(kube_escape("", out, 0), GPUQ_ELIMIT);
	assert_int_equal(kube_escape("x", out, 0), GPUQ_ELIMIT);
}

static void status_table(void **state)
{
	static const struct {
		long status;
		int rc;
	} cases[] = {
	    {200, GPUQ_OK},	   {201, GPUQ_OK},	{204, GPUQ_OK},	       {299, GPUQ_OK},
	    {0, GPUQ_EHTTP},	   {100, GPUQ_EHTTP},	{301, GPUQ_EHTTP},     {400, GPUQ_EINVAL},
	    {401, GPUQ_EDENIED},   {403, GPUQ_EDENIED}, {404, GPUQ_ENOTFOUND}, {405, GPUQ_EHTTP},
	    {409, GPUQ_ECONFLICT}, {410, GPUQ_EGONE},	{413, GPUQ_EHTTP},     {422, GPUQ_EINVAL},
	    {429, GPUQ_EAGAIN},	   {500, GPUQ_EHTTP},	{503, GPUQ_EAGAIN},    {504, GPUQ_EHTTP},
	    {-1, GPUQ_EHTTP},	   {999, GPUQ_EHTTP},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (kube_status_error(cases[i].status) != cases[i].rc)
			fail_msg("status %ld", cases[i].status);
}

static void patch_unapplied_table(void **state)
{
	static const struct {
		long status;
		const char *body;
		bool yes;
	} cases[] = {
	    {422,
	     "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"the server rejected our "
	     "request due to an error in our request\",\"reason\":\"Invalid\",\"code\":422}",
	     true},
	    {422, "{\"message\":\"testing value /metadata/resourceVersion failed: test failed\"}",
	     true},
	    {422,
	     "{\"message\":\"Job.batch \\\"test\\\" is invalid: spec.parallelism: Invalid value: "
	     "-1\",\"reason\":\"Invalid\",\"code\":422}",
	     false},
	    {409,
	     "{\"message\":\"the server rejected our request due to an error in our request\"}",
	     false},
	    {422, "not json", false},
	    {422, "", false},
	    {422, NULL, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(kube_patch_unapplied(cases[i].status, cases[i].body,
						      cases[i].body ? strlen(cases[i].body) : 0),
				 cases[i].yes);
}

/* ---- requests that never reach an apiserver ---- */

/* A client of https://127.0.0.1:1 (nothing listens on port 1). */
static void closed_port_client(const char *name, const char *user, kube_config_t **cfg,
			       kube_client_t **c)
{
	char dir[300], text[1024];
	kube_client_opts_t o;
	gpuq_diag_t diag;

	make_dir(name, dir, sizeof(dir));
	snprintf(text, sizeof(text),
		 "current-context: c\nclusters:\n- name: k\n  cluster:\n"
		 "    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\n"
		 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
		 "users:\n- name: u\n  user:\n%s",
		 user);
	assert_int_equal(load_text(dir, text, cfg, &diag), GPUQ_OK);
	kube_client_opts_default(&o);
	assert_true(o.qps == 50 && o.burst == 100);
	assert_int_equal(kube_client_create(*cfg, &o, c, &diag), GPUQ_OK);
}

static void request_connection_refused(void **state)
{
	kube_config_t *cfg;
	kube_client_t *c;
	kube_response_t resp;
	gpuq_diag_t diag = {{0}};
	json_t *body = json_pack("{s:s}", "a", "b"), *reply = body;

	(void)state;
	closed_port_client("refused", "    token: t0k\n", &cfg, &c);
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, 0, &resp, &diag), GPUQ_EHTTP);
	assert_int_equal(resp.status, 0);
	assert_null(resp.body);
	assert_non_null(strstr(diag.msg, "GET /api: "));
	assert_true(strlen(diag.msg) > strlen("GET /api: "));
	kube_response_deinit(&resp);

	assert_int_equal(
	    kube_request_json(c, "POST", "/api/v1/namespaces", NULL, body, &reply, &diag),
	    GPUQ_EHTTP);
	assert_null(reply);
	assert_non_null(strstr(diag.msg, "POST /api/v1/namespaces: "));
	assert_int_equal(kube_patch(c, "/apis/batch/v1/namespaces/test/jobs/j", KUBE_PATCH_JSON,
				    body, NULL, NULL),
			 GPUQ_EHTTP);
	assert_int_equal(kube_patch(c, "/apis/batch/v1/namespaces/a/jobs/j", KUBE_PATCH_APPLY, body,
				    NULL, &diag),
			 GPUQ_EHTTP);
	assert_non_null(strstr(diag.msg, "fieldManager=gpuq&force=true"));
	/* the unparsed form: nothing in the reply on an error */
	memset(&resp, 0xff, sizeof(resp));
	assert_int_equal(kube_patch_text(c, "/apis/batch/v1/namespaces/a/jobs/j", KUBE_PATCH_MERGE,
					 body, &resp, &diag),
			 GPUQ_EHTTP);
	assert_null(resp.body);
	assert_int_equal(resp.len, 0);
	assert_non_null(strstr(diag.msg, "PATCH /apis/batch/v1/namespaces/a/jobs/j: "));
	kube_response_deinit(&resp);
	json_decref(body);
	kube_client_destroy(c);
	kube_client_destroy(NULL);
	kube_config_destroy(cfg);
}

/* Refusals before any byte is sent: a URL over KUBE_URL_MAX, an unreadable
 * token file, missing Event and Lease fields, a stop already requested. */
static void request_local_refusals(void **state)
{
	kube_config_t *cfg;
	kube_client_t *c;
	kube_response_t resp;
	gpuq_diag_t diag = {{0}};
	char *path = malloc(KUBE_URL_MAX + 2);
	kube_ref_t ref = {"batch/v1", "Job", "team-a", NULL, NULL};
	kube_lease_opts_t lo = {"gpuq-system", "gpuq-leader", NULL, 0};
	kube_lease_state_t st = {0};
	atomic_bool stop = true;
	kube_watch_opts_t wo = {.path = "/apis/batch/v1/jobs", .name = "jobs", .stop = &stop};
	rec_t r = {0};
	char longname[700];

	(void)state;
	assert_non_null(path);
	path[0] = '/';
	memset(path + 1, 'p', KUBE_URL_MAX);
	path[KUBE_URL_MAX + 1] = '\0';
	closed_port_client("local", "    tokenFile: absent-token\n", &cfg, &c);
	assert_int_equal(kube_request(c, "GET", path, NULL, NULL, 0, &resp, &diag), GPUQ_ELIMIT);
	assert_non_null(strstr(diag.msg, "URL longer than"));
	assert_int_equal(kube_patch(c, path, KUBE_PATCH_APPLY, NULL, NULL, &diag), GPUQ_ELIMIT);
	assert_int_equal(kube_patch_text(c, path, KUBE_PATCH_APPLY, NULL, &resp, &diag),
			 GPUQ_ELIMIT);
	assert_null(resp.body);
	/* the token file is read per request */
	assert_int_equal(kube_request(c, "GET", "/api", NULL, NULL, 0, &resp, &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, "absent-token"));

	assert_int_equal(kube_event_post(c, &ref, "Normal", "Admitted", "Admit", "n", "i", &diag),
			 GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "required"));
	ref.name = "j";
	assert_int_equal(kube_event_post(c, &ref, "Normal", NULL, "Admit", "n", "i", &diag),
			 GPUQ_EINVAL);
	assert_int_equal(kube_lease_try(c, &lo, 0, &st, &diag), GPUQ_EINVAL);
	assert_false(st.leader);
	assert_int_equal(kube_lease_release(c, &lo, &diag), GPUQ_EINVAL);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	lo.identity = "me";
	lo.name = longname;
	assert_int_equal(kube_lease_try(c, &lo, 0, &st, &diag), GPUQ_ELIMIT);
	assert_non_null(strstr(diag.msg, "too long"));

	/* a stop already requested: no request, no event */
	assert_int_equal(kube_watch_run(c, &wo, rec_cb, &r), GPUQ_OK);
	assert_int_equal(r.n, 0);
	kube_client_destroy(c);
	kube_config_destroy(cfg);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(decoder_whole_stream),
	    cmocka_unit_test(decoder_every_split),
	    cmocka_unit_test(decoder_partial_and_crlf),
	    cmocka_unit_test(decoder_error_events),
	    cmocka_unit_test(decoder_refusals),
	    cmocka_unit_test(decoder_tree_refusals),
	    cmocka_unit_test(decoder_rv_exact_fit),
	    cmocka_unit_test(decoder_event_cap),
	    cmocka_unit_test(decoder_callback_stop),
	    cmocka_unit_test(limiter_burst_then_spacing),
	    cmocka_unit_test(limiter_no_limit),
	    cmocka_unit_test(limiter_edges),
	    cmocka_unit_test(limiter_rate_property),
	    cmocka_unit_test(escape_table),
	    cmocka_unit_test(status_table),
	    cmocka_unit_test(patch_unapplied_table),
	    cmocka_unit_test(request_connection_refused),
	    cmocka_unit_test(request_local_refusals),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

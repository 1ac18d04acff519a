/* Unit tests for kube: the watch-stream decoder (splits, keep-alives, CRLF,
 * bookmarks, ERROR events, every refusal and its stickiness, the size cap,
 * callback stops), kubeconfig files and the in-cluster configuration (PEM
 * material as data and as files, tokens, token rotation, every refusal
 * naming its field), the rate limiter, RFC 3339 times, escaping, status
 * mapping, and the transport failure path against a closed port. No
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

/* ---- helpers ---- */

static char tmp_root[256]; /* per-run temp dir, removed at the end */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/gpuq-test-kube-XXXXXX");
	return mkdtemp(tmp_root) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	return nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory tmp_root/name (out: its path). */
static void make_dir(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", tmp_root, name);
	assert_int_equal(mkdir(out, 0700), 0);
}

static void write_bytes(const char *dir, const char *name, const char *text, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	write_bytes(dir, name, text, strlen(text));
}

/* base64 (standard, padded) of p[0..n), with a line break every 76
 * characters when wrap is set, into a new string. */
static char *b64(const char *p, size_t n, int wrap)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc(n / 3 * 4 + n / 57 * 2 + 8);
	size_t o = 0, line = 0;

	assert_non_null(out);
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)p[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)p[i + 2];
		out[o++] = al[v >> 18 & 63];
		out[o++] = al[v >> 12 & 63];
		out[o++] = i + 1 < n ? al[v >> 6 & 63] : (char)'=';
		out[o++] = i + 2 < n ? al[v & 63] : (char)'=';
		if (wrap && (line += 4) >= 76) {
			out[o++] = '\n';
			line = 0;
		}
	}
	out[o] = '\0';
	return out;
}

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
 * delivered. */
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
	    {"\"ADDED\"", "not JSON"}, /* a scalar is not even a JSON text to jansson */
	    {"null", "not JSON"},
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
	    {"{\"type\":\"ADDED\",\"type\":\"ADDED\",\"object\":{}}", "not JSON: duplicate"},
	    {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\\u0000\"}}}",
	     "not JSON"},
	};

	(void)state;
	for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
		/* the second round with the fast reader (jv/): the same refusals,
		 * but a scalar text is JSON to it, and duplicate keys are read */
		static const struct {
			const char *line, *diag;
		} fast_differs[] = {{"\"ADDED\"", "not a JSON object"},
				    {"null", "not a JSON object"},
				    {"{\"type\":\"ADDED\",\"type\":\"ADDED\",\"object\":{}}",
				     "(ADDED): metadata.resourceVersion missing"}};
		size_t c = i % (sizeof(cases) / sizeof(cases[0]));
		bool fast = i >= sizeof(cases) / sizeof(cases[0]);
		const char *want = cases[c].diag;
		kube_watch_decoder_t *d;
		rec_t r = {0};
		gpuq_diag_t diag = {{0}};
		char buf[512];
		int n = snprintf(buf, sizeof(buf), "%s\n%s\n", JOB_ADDED, cases[c].line);

		for (size_t k = 0; fast && k < sizeof(fast_differs) / sizeof(*fast_differs); k++)
			if (!strcmp(cases[c].line, fast_differs[k].line))
				want = fast_differs[k].diag;
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

/* ---- kubeconfig ---- */

static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ3Vy\n"
			       "-----END CERTIFICATE-----\n";
static const char key_pem[] = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKey\n"
			      "-----END EC PRIVATE KEY-----\n";
static const char ca_pem[] = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBADAK\n"
			     "-----END CERTIFICATE-----\n";

/* Write text as dir/config and load it. */
static int load_text(const char *dir, const char *text, kube_config_t **cfg, gpuq_diag_t *diag)
{
	char path[512];

	write_file(dir, "config", text);
	snprintf(path, sizeof(path), "%s/config", dir);
	memset(diag, 0, sizeof(*diag));
	*cfg = NULL;
	return kube_config_load(path, cfg, diag);
}

/* text with every line after the first indented by pad, into out. */
static void indent(const char *text, const char *pad, char *out, size_t cap)
{
	size_t o = 0;

	for (const char *p = text; *p && o + strlen(pad) + 2 < cap; p++) {
		out[o++] = *p;
		if (*p == '\n' && p[1])
			o += (size_t)snprintf(out + o, cap - o, "%s", pad);
	}
	out[o] = '\0';
}

static void config_data_fields(void **state)
{
	char dir[300], text[4096], cert_block[1024];
	char *c64 = b64(cert_pem, strlen(cert_pem), 1), *k64 = b64(key_pem, strlen(key_pem), 0),
	     *a64 = b64(ca_pem, strlen(ca_pem), 0);
	kube_config_t *cfg;
	gpuq_diag_t diag;

	(void)state;
	make_dir("data", dir, sizeof(dir));
	/* the cert's base64 is wrapped in a YAML block scalar, breaks kept */
	assert_non_null(strchr(c64, '\n'));
	indent(c64, "      ", cert_block, sizeof(cert_block));
	snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\ncurrent-context: kind\n"
		 "clusters:\n- name: other\n  cluster:\n    server: https://10.9.9.9\n"
		 "- name: kind\n  cluster:\n    server: https://127.0.0.1:6443//\n"
		 "    certificate-authority-data: %s\n"
		 "contexts:\n- name: kind\n  context:\n    cluster: kind\n    user: admin\n"
		 "    namespace: team-a\n"
		 "users:\n- name: admin\n  user:\n    client-certificate-data: |\n      %s\n"
		 "    client-key-data: %s\n",
		 a64, cert_block, k64);
	assert_int_equal(load_text(dir, text, &cfg, &diag), GPUQ_OK);
	assert_string_equal(kube_config_server(cfg), "https://127.0.0.1:6443");
	assert_string_equal(kube_config_namespace(cfg), "team-a");
	assert_int_equal(cfg->cert_len, strlen(cert_pem));
	assert_memory_equal(cfg->cert, cert_pem, cfg->cert_len);
	assert_int_equal(cfg->key_len, strlen(key_pem));
	assert_memory_equal(cfg->key, key_pem, cfg->key_len);
	assert_int_equal(cfg->ca_len, strlen(ca_pem));
	assert_string_equal(cfg->ca, ca_pem);
	assert_false(cfg->insecure);
	assert_null(cfg->token);
	assert_null(cfg->token_file);
	kube_config_destroy(cfg);
	kube_config_destroy(NULL);
	free(c64);
	free(k64);
	free(a64);
}

/* Files: relative paths resolve against the kubeconfig's directory,
 * absolute ones stay; the kubeconfig may be JSON. */
static void config_file_fields(void **state)
{
	char dir[300], pki[320], text[2048];
	kube_config_t *cfg;
	gpuq_diag_t diag;

	(void)state;
	make_dir("files", dir, sizeof(dir));
	snprintf(pki, sizeof(pki), "%s/pki", dir);
	assert_int_equal(mkdir(pki, 0700), 0);
	write_file(pki, "client.crt", cert_pem);
	write_file(pki, "client.key", key_pem);
	write_file(pki, "ca.crt", ca_pem);
	snprintf(text, sizeof(text),
		 "current-context: c\n"
		 "clusters:\n- name: k\n  cluster:\n    server: https://kube.example:443\n"
		 "    certificate-authority: %s/ca.crt\n"
		 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
		 "users:\n- name: u\n  user:\n    client-certificate: pki/client.crt\n"
		 "    client-key: ./pki/client.key\n",
		 pki);
	assert_int_equal(load_text(dir, text, &cfg, &diag), GPUQ_OK);
	assert_string_equal(cfg->cert, cert_pem);
	assert_string_equal(cfg->key, key_pem);
	assert_string_equal(cfg->ca, ca_pem);
	assert_null(kube_config_namespace(cfg));
	kube_config_destroy(cfg);

	/* the same as JSON, CA relative too */
	assert_int_equal(
	    load_text(
		dir,
		"{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":"
		"{\"server\":\"https://kube.example\",\"certificate-authority\":\"pki/ca.crt\"}}],"
		"\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\",\"user\":\"u\"}}],"
		"\"users\":[{\"name\":\"u\",\"user\":{\"client-certificate\":\"pki/client.crt\","
		"\"client-key\":\"pki/client.key\"}}]}",
		&cfg, &diag),
	    GPUQ_OK);
	assert_string_equal(kube_config_server(cfg), "https://kube.example");
	assert_string_equal(cfg->ca, ca_pem);
	assert_string_equal(cfg->key, key_pem);
	kube_config_destroy(cfg);

	/* a kubeconfig named without a directory: paths resolve against "." */
	{
		char cwd[1024];
		gpuq_diag_t d2 = {{0}};
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_int_equal(chdir(dir), 0);
		cfg = NULL;
		assert_int_equal(kube_config_load("config", &cfg, &d2), GPUQ_OK);
		assert_int_equal(chdir(cwd), 0);
		assert_string_equal(cfg->ca, ca_pem);
		kube_config_destroy(cfg);
	}
}

/* Tokens (inline, from a file relative to the kubeconfig), insecure, an
 * anonymous context, and an empty -data standing for unset. */
static void config_tokens_and_flags(void **state)
{
	char dir[300], tok[64];
	kube_config_t *cfg;
	gpuq_diag_t diag;

	(void)state;
	make_dir("tokens", dir, sizeof(dir));
	assert_int_equal(
	    load_text(dir,
		      "current-context: c\nclusters:\n- name: k\n  cluster:\n"
		      "    server: https://h:6443\n    insecure-skip-tls-verify: true\n"
		      "    certificate-authority-data: \"\"\n"
		      "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: ml}\n"
		      "users:\n- name: u\n  user:\n    token: abc.def-123\n",
		      &cfg, &diag),
	    GPUQ_OK);
	assert_true(cfg->insecure);
	assert_null(cfg->ca);
	assert_string_equal(kube_config_namespace(cfg), "ml");
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "abc.def-123");
	kube_config_destroy(cfg);

	write_file(dir, "sa-token", "file-token-1\n");
	assert_int_equal(load_text(dir,
				   "current-context: c\nclusters:\n- name: k\n  cluster:\n"
				   "    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
				   "users:\n- name: u\n  user:\n    tokenFile: sa-token\n",
				   &cfg, &diag),
			 GPUQ_OK);
	assert_non_null(strstr(cfg->token_file, "/tokens/sa-token"));
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "file-token-1");
	/* too small a buffer */
	assert_int_equal(kube_token_get(cfg, tok, 4, &diag), GPUQ_ELIMIT);
	kube_config_destroy(cfg);

	/* no user: anonymous */
	assert_int_equal(load_text(dir,
				   "current-context: c\nclusters:\n- name: k\n  cluster:\n"
				   "    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k}\n",
				   &cfg, &diag),
			 GPUQ_OK);
	assert_null(cfg->token);
	assert_null(cfg->cert);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "");
	kube_config_destroy(cfg);
}

/* kube_config_at: the same bearer token for another HTTPS server (gpuq's
 * own port): the server as given (no trailing slash), the token from the
 * base (its file) or given, the CA file or none, no client certificate;
 * refused without https:// or without any token. */
static void config_at_other_server(void **state)
{
	char dir[300], tok[64], ca[400];
	kube_config_t *base, *cfg = NULL;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("at", dir, sizeof(dir));
	write_file(dir, "sa-token", "file-token-2\n");
	write_file(dir, "gpuq-ca.crt", ca_pem);
	snprintf(ca, sizeof(ca), "%s/gpuq-ca.crt", dir);
	assert_int_equal(
	    load_text(dir,
		      "current-context: c\nclusters:\n- name: k\n  cluster:\n"
		      "    server: https://h\n"
		      "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: ml}\n"
		      "users:\n- name: u\n  user:\n    tokenFile: sa-token\n",
		      &base, &diag),
	    GPUQ_OK);
	assert_int_equal(kube_config_at(base, "https://gpuq:8443/", ca, false, NULL, &cfg, &diag),
			 GPUQ_OK);
	assert_string_equal(kube_config_server(cfg), "https://gpuq:8443");
	assert_string_equal(kube_config_namespace(cfg), "ml");
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "file-token-2");
	assert_non_null(cfg->ca);
	assert_false(cfg->insecure);
	assert_null(cfg->cert);
	kube_config_destroy(cfg);
	cfg = NULL;
	assert_int_equal(
	    kube_config_at(base, "https://gpuq:8443", NULL, true, "given", &cfg, &diag), GPUQ_OK);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "given");
	assert_true(cfg->insecure);
	assert_null(cfg->ca);
	kube_config_destroy(cfg);
	cfg = NULL;
	assert_int_equal(kube_config_at(base, "http://gpuq:8443", NULL, true, "t", &cfg, &diag),
			 GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "expected https://HOST:PORT"));
	assert_null(cfg);
	kube_config_destroy(base);
	/* a user with a client certificate only: no token to send */
	assert_int_equal(load_text(dir,
				   "current-context: c\nclusters:\n- name: k\n  cluster:\n"
				   "    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k}\n",
				   &base, &diag),
			 GPUQ_OK);
	assert_int_equal(kube_config_at(base, "https://gpuq:8443", NULL, true, NULL, &cfg, &diag),
			 GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "takes a bearer token"));
	kube_config_destroy(base);
}

/* base64 of every length 0..40 and of all 256 byte values, with and
 * without line breaks, decodes to the bytes. */
static void config_base64_roundtrip(void **state)
{
	char dir[300], bytes[256], text[4096];

	(void)state;
	make_dir("b64", dir, sizeof(dir));
	for (int i = 0; i < 256; i++)
		bytes[i] = (char)(i * 7 + 3);
	for (size_t n = 1; n <= 256; n = n < 40 ? n + 1 : n * 2) {
		for (int wrap = 0; wrap <= 1; wrap++) {
			char *e = b64(bytes, n, wrap);
			kube_config_t *cfg;
			gpuq_diag_t diag;
			/* JSON: a string with \n escapes holds the wrapped form */
			size_t o = 0;
			char esc[1024];
			for (const char *p = e; *p; p++) {
				if (*p == '\n') {
					esc[o++] = '\\';
					esc[o++] = 'n';
				} else {
					esc[o++] = *p;
				}
			}
			esc[o] = '\0';
			snprintf(
			    text, sizeof(text),
			    "{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":"
			    "{\"server\":\"https://h\",\"certificate-authority-data\":\"%s\"}}],"
			    "\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\"}}]}",
			    esc);
			assert_int_equal(load_text(dir, text, &cfg, &diag), GPUQ_OK);
			assert_int_equal(cfg->ca_len, n);
			assert_memory_equal(cfg->ca, bytes, n);
			assert_int_equal(cfg->ca[n], '\0');
			kube_config_destroy(cfg);
			free(e);
		}
	}
}

static void config_refusals(void **state)
{
	static const char head[] = "current-context: c\n"
				   "clusters:\n- name: k\n  cluster:\n    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
				   "users:\n- name: u\n  user:\n";
	static const struct {
		const char *text; /* whole kubeconfig, or NULL: head + user */
		const char *user; /* user lines (after head) */
		int rc;
		const char *diag; /* expected substring */
	} cases[] = {
	    {"clusters: []\n", NULL, GPUQ_EINVAL, "current-context: not set"},
	    {"current-context: \"\"\n", NULL, GPUQ_EINVAL, "current-context: not set"},
	    {"current-context: nope\ncontexts:\n- name: c\n  context: {cluster: k}\n", NULL,
	     GPUQ_EINVAL, "contexts: no context \"nope\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {user: u}\n", NULL, GPUQ_EINVAL,
	     "contexts[c].context.cluster: no cluster \"\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: gone}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h}\n",
	     NULL, GPUQ_EINVAL, "contexts[c].context.cluster: no cluster \"gone\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: who}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h}\n",
	     NULL, GPUQ_EINVAL, "contexts[c].context.user: no user \"who\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {server: http://h:8080}\n",
	     NULL, GPUQ_EINVAL,
	     "clusters[k].cluster.server: \"http://h:8080\" is not an https URL"},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {}\n",
	     NULL, GPUQ_EINVAL, "clusters[k].cluster.server: \"\" is not an https URL"},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h, certificate-authority-data: "
	     "5}\n",
	     NULL, GPUQ_EINVAL, "clusters[k].cluster.certificate-authority-data: not a string"},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h, certificate-authority: ''}\n",
	     NULL, GPUQ_EINVAL, "clusters[k].cluster.certificate-authority: not a file name"},
	    {"", NULL, GPUQ_EINVAL, "empty kubeconfig"},
	    {"a: [\n", NULL, GPUQ_EINVAL, "config"},
	    {NULL, "    client-certificate-data: Zm9v\n", GPUQ_EINVAL,
	     "users[u].user: client-certificate and client-key go together"},
	    {NULL, "    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "client-certificate and client-key go together"},
	    {NULL,
	     "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	     "      command: aws\n",
	     GPUQ_EINVAL, "users[u].user: exec and auth-provider plugins are not supported"},
	    {NULL, "    auth-provider: {name: oidc}\n", GPUQ_EINVAL,
	     "exec and auth-provider plugins are not supported"},
	    {NULL, "    client-certificate-data: \"=AAA\"\n    client-key-data: Zm9v\n",
	     GPUQ_EINVAL, "users[u].user.client-certificate-data: not valid base64"},
	    {NULL, "    client-certificate-data: Zm9v\n    client-key-data: Zg=a\n", GPUQ_EINVAL,
	     "users[u].user.client-key-data: not valid base64"},
	    {NULL, "    client-certificate-data: A===\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zm9\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zm9v$\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zg==Zg==\n    client-key-data: Zm9v\n",
	     GPUQ_EINVAL, "not valid base64"},
	    {NULL, "    client-certificate-data: Zm8\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zm9v=\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate: missing.crt\n    client-key-data: Zm9v\n", GPUQ_EIO,
	     "users[u].user.client-certificate: "},
	    {NULL, "    client-certificate-data: Zm9v\n    client-key: /nonexistent/k.pem\n",
	     GPUQ_EIO, "users[u].user.client-key: /nonexistent/k.pem: No such file"},
	    {NULL, "    client-certificate-data: Zm9v\n    client-key: big.pem\n", GPUQ_ELIMIT,
	     "users[u].user.client-key: "},
	    {NULL, "    token: \"abc\\r\\nX-Evil: 1\"\n", GPUQ_EINVAL,
	     "users[u].user.token: holds a control character"},
	};
	char dir[300], text[2048];

	(void)state;
	make_dir("refusals", dir, sizeof(dir));
	/* a key file one byte over the cap */
	{
		char *blob = malloc(KUBE_PEM_MAX + 1);
		assert_non_null(blob);
		memset(blob, 'k', KUBE_PEM_MAX + 1);
		write_bytes(dir, "big.pem", blob, KUBE_PEM_MAX + 1);
		free(blob);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kube_config_t *cfg;
		gpuq_diag_t diag;
		int rc;
		if (cases[i].text)
			snprintf(text, sizeof(text), "%s", cases[i].text);
		else
			snprintf(text, sizeof(text), "%s%s", head, cases[i].user);
		rc = load_text(dir, text, &cfg, &diag);
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d (%s), want %d", i, rc, diag.msg, cases[i].rc);
		assert_null(cfg);
		if (!strstr(diag.msg, cases[i].diag))
			fail_msg("case %zu: diag \"%s\" lacks \"%s\"", i, diag.msg, cases[i].diag);
		/* the diag names the file (the parser's own words name it too) */
		assert_non_null(strstr(diag.msg, dir));
	}
}

/* A missing kubeconfig, one over KUBE_CONFIG_MAX, and a NULL diag. */
static void config_file_errors(void **state)
{
	char dir[300], path[512];
	kube_config_t *cfg = NULL;
	gpuq_diag_t diag = {{0}};
	char *blob;

	(void)state;
	make_dir("cfgfile", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/absent", dir);
	assert_int_equal(kube_config_load(path, &cfg, &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, "absent: No such file"));
	assert_int_equal(kube_config_load(path, &cfg, NULL), GPUQ_EIO);
	assert_int_equal(kube_config_load(dir, &cfg, &diag), GPUQ_EIO); /* a directory */
	assert_null(cfg);

	blob = malloc(KUBE_CONFIG_MAX + 1);
	assert_non_null(blob);
	memset(blob, '#', KUBE_CONFIG_MAX + 1);
	write_bytes(dir, "huge", blob, KUBE_CONFIG_MAX + 1);
	free(blob);
	snprintf(path, sizeof(path), "%s/huge", dir);
	assert_int_equal(kube_config_load(path, &cfg, &diag), GPUQ_ELIMIT);
	assert_non_null(strstr(diag.msg, "larger than"));

	/* a directory part longer than any path */
	{
		char *longp = malloc(5000);
		assert_non_null(longp);
		memset(longp, 'd', 4999);
		longp[4999] = '\0';
		longp[4990] = '/';
		assert_int_equal(kube_config_load(longp, &cfg, &diag), GPUQ_ELIMIT);
		assert_non_null(strstr(diag.msg, "path longer than"));
		free(longp);
	}

	/* errors with diag NULL still return the code */
	write_file(dir, "noctx", "clusters: []\n");
	snprintf(path, sizeof(path), "%s/noctx", dir);
	assert_int_equal(kube_config_load(path, &cfg, NULL), GPUQ_EINVAL);
	assert_null(cfg);
}

/* ---- in cluster ---- */

static void in_cluster_env(const char *host, const char *port)
{
	if (host)
		assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", host, 1), 0);
	else
		unsetenv("KUBERNETES_SERVICE_HOST");
	if (port)
		assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", port, 1), 0);
	else
		unsetenv("KUBERNETES_SERVICE_PORT");
}

static void in_cluster_basics(void **state)
{
	static const struct {
		const char *host, *port, *server;
	} hosts[] = {
	    {"10.96.0.1", "443", "https://10.96.0.1:443"},
	    {"fd00:10:96::1", "443", "https://[fd00:10:96::1]:443"},
	    {"[fd00::1]", "6443", "https://[fd00::1]:6443"},
	    {"kubernetes.default.svc", "443", "https://kubernetes.default.svc:443"},
	};
	char sa[300], tok[64], path[512];
	kube_config_t *cfg;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("sa", sa, sizeof(sa));
	write_file(sa, "ca.crt", ca_pem);
	write_file(sa, "token", "eyJhbGciOi.sa-token\n");
	write_file(sa, "namespace", "gpuq-system\n");
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		in_cluster_env(hosts[i].host, hosts[i].port);
		assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
		assert_string_equal(kube_config_server(cfg), hosts[i].server);
		assert_string_equal(kube_config_namespace(cfg), "gpuq-system");
		assert_string_equal(cfg->ca, ca_pem);
		assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
		assert_string_equal(tok, "eyJhbGciOi.sa-token");
		kube_config_destroy(cfg);
	}
	/* no namespace file, or an empty one: no namespace */
	write_file(sa, "namespace", "\n");
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
	assert_null(kube_config_namespace(cfg));
	kube_config_destroy(cfg);
	snprintf(path, sizeof(path), "%s/namespace", sa);
	assert_int_equal(remove(path), 0);
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
	assert_null(kube_config_namespace(cfg));
	kube_config_destroy(cfg);
}

static void in_cluster_refusals(void **state)
{
	static const struct {
		const char *host, *port;
	} unset[] = {
	    {NULL, "443"}, {"10.96.0.1", NULL}, {"", "443"}, {"10.96.0.1", ""}, {NULL, NULL}};
	char sa[300], path[512];
	kube_config_t *cfg = NULL;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("sa-bad", sa, sizeof(sa));
	for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++) {
		in_cluster_env(unset[i].host, unset[i].port);
		assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_EINVAL);
		assert_non_null(strstr(diag.msg, "KUBERNETES_SERVICE_HOST"));
		assert_null(cfg);
	}
	in_cluster_env("10.96.0.1", "443");
	/* no CA */
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, "ca.crt"));
	/* CA but no token */
	write_file(sa, "ca.crt", ca_pem);
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, "/token"));
	assert_null(cfg);
	/* a token over KUBE_TOKEN_MAX */
	{
		char *blob = malloc(KUBE_TOKEN_MAX + 1);
		assert_non_null(blob);
		memset(blob, 't', KUBE_TOKEN_MAX + 1);
		write_bytes(sa, "token", blob, KUBE_TOKEN_MAX + 1);
		free(blob);
	}
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_ELIMIT);
	snprintf(path, sizeof(path), "%s/token", sa);
	assert_non_null(strstr(diag.msg, path));
}

/* Set path's mtime to sec (no sleeping for the clock to move). */
static void set_mtime(const char *path, time_t sec)
{
	struct timespec ts[2] = {{.tv_sec = sec, .tv_nsec = 0}, {.tv_sec = sec, .tv_nsec = 0}};

	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* kube_token_get re-reads a token file whose size or mtime changed, and
 * only then. */
static void in_cluster_token_rotation(void **state)
{
	char sa[300], path[512], tok[64];
	kube_config_t *cfg;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("sa-rot", sa, sizeof(sa));
	snprintf(path, sizeof(path), "%s/token", sa);
	write_file(sa, "ca.crt", ca_pem);
	write_file(sa, "token", "tokA");
	set_mtime(path, 1700000000);
	in_cluster_env("10.96.0.1", "443");
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokA");

	/* same size, same mtime: the cache stands (proves it is a cache) */
	write_file(sa, "token", "tokX");
	set_mtime(path, 1700000000);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokA");

	/* same size, new mtime */
	write_file(sa, "token", "tokB");
	set_mtime(path, 1700000001);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokB");

	/* new size, old mtime */
	write_file(sa, "token", "token-number-three\r\n");
	set_mtime(path, 1700000001);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "token-number-three");

	/* gone: GPUQ_EIO naming the file */
	assert_int_equal(remove(path), 0);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, path));
	/* back */
	write_file(sa, "token", "tokC");
	assert_int_equal(kube_token_get(cfg, NULL, 0, &diag), GPUQ_OK);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokC");
	kube_config_destroy(cfg);
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

static void time_parse_table(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} good[] = {
	    {"2026-11-23T10:00:00Z", 1795428000000},
	    {"2026-11-23t10:00:00z", 1795428000000},
	    {"2026-11-23T10:00:00.5Z", 1795428000500},
	    {"2026-11-23T10:00:00.123456Z", 1795428000123},
	    {"2026-11-23T10:00:00.123456789Z", 1795428000123},
	    {"2026-11-23T10:00:00.999999Z", 1795428000999},
	    {"2026-11-23T12:00:00+02:00", 1795428000000},
	    {"2026-11-23T04:30:00-05:30", 1795428000000},
	    {"2026-11-23T10:00:00.250+00:00", 1795428000250},
	    {"2024-02-29T12:30:15Z", 1709209815000},
	    {"2000-01-01T00:00:00Z", 946684800000},
	    {"1970-01-01T00:00:00Z", 0},
	    {"1969-12-31T23:59:59.500Z", -500},
	};
	static const char *const bad[] = {
	    "",
	    "2026-11-23",
	    "2026-11-23T10:00Z",
	    "2026-11-23 10:00:00Z",
	    "2026-11-23T10:00:00",
	    "2026-11-23T10:00:00.Z",
	    "2026-11-23T10:00:00.1234567890Z",
	    "2026-11-23T10:00:00+0200",
	    "2026-11-23T10:00:00+02:00x",
	    "2026-11-23T10:00:00+24:00",
	    "2026-11-23T10:00:00+02:60",
	    "2026-11-23T10:00:00Zjunk",
	    "2026-11-23T10:00:00ZZ",
	    "2026-1a-23T10:00:00Z",
	    "2026-00-10T10:00:00Z",
	    "2026-13-01T00:00:00Z",
	    "2026-11-00T00:00:00Z",
	    "2026-11-31T00:00:00Z",
	    "2026-02-29T00:00:00Z",
	    "1900-02-29T00:00:00Z",
	    "2026-11-23T24:00:00Z",
	    "2026-11-23T23:60:00Z",
	    "2026-11-23T23:59:61Z",
	    "-026-11-23T10:00:00Z",
	    "2026/11/23T10:00:00Z",
	};
	int64_t ms;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ms = -1;
		if (kube_time_parse(good[i].s, &ms) != GPUQ_OK || ms != good[i].ms)
			fail_msg("%s: got %lld, want %lld", good[i].s, (long long)ms,
				 (long long)good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kube_time_parse(bad[i], &ms) != GPUQ_EINVAL)
			fail_msg("%s: accepted", bad[i]);
	assert_int_equal(kube_time_parse(NULL, &ms), GPUQ_EINVAL);
}

static void time_format_and_roundtrip(void **state)
{
	static const struct {
		int64_t ms;
		const char *s;
	} cases[] = {
	    {0, "1970-01-01T00:00:00.000000Z"},
	    {1795428000123, "2026-11-23T10:00:00.123000Z"},
	    {1709209815999, "2024-02-29T12:30:15.999000Z"},
	    {-1, "1969-12-31T23:59:59.999000Z"},
	    {-1000, "1969-12-31T23:59:59.000000Z"},
	    {-1001, "1969-12-31T23:59:58.999000Z"},
	};
	char out[40];
	int64_t back;
	uint64_t x = 88172645463325252ull;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kube_time_format_micro(cases[i].ms, out, sizeof(out));
		assert_string_equal(out, cases[i].s);
		assert_int_equal(kube_time_parse(out, &back), GPUQ_OK);
		assert_int_equal(back, cases[i].ms);
	}
	/* random times from 1900 to 2200 round-trip */
	for (int i = 0; i < 2000; i++) {
		int64_t ms;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ms = (int64_t)(x % 9467280000000ull) - 2208988800000;
		kube_time_format_micro(ms, out, sizeof(out));
		if (kube_time_parse(out, &back) != GPUQ_OK || back != ms)
			fail_msg("%lld -> %s -> %lld", (long long)ms, out, (long long)back);
	}
	/* too small a buffer gives "", never garbage; cap 0 writes nothing */
	memset(out, 'z', sizeof(out));
	kube_time_format_micro(1795428000123, out, 10);
	assert_string_equal(out, "");
	out[0] = 'z';
	kube_time_format_micro(0, out, 0);
	assert_int_equal(out[0], 'z');
	/* kube_now_ms is after 2020 */
	assert_true(kube_now_ms() > 1577836800000);
}

/* ---- escaping, status codes, patch conflicts ---- */

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
	kube_watch_opts_t wo = {"/apis/batch/v1/jobs", NULL, "jobs", &stop, false};
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
	    cmocka_unit_test(decoder_rv_exact_fit),
	    cmocka_unit_test(decoder_event_cap),
	    cmocka_unit_test(decoder_callback_stop),
	    cmocka_unit_test(config_data_fields),
	    cmocka_unit_test(config_file_fields),
	    cmocka_unit_test(config_tokens_and_flags),
	    cmocka_unit_test(config_at_other_server),
	    cmocka_unit_test(config_base64_roundtrip),
	    cmocka_unit_test(config_refusals),
	    cmocka_unit_test(config_file_errors),
	    cmocka_unit_test(in_cluster_basics),
	    cmocka_unit_test(in_cluster_refusals),
	    cmocka_unit_test(in_cluster_token_rotation),
	    cmocka_unit_test(limiter_burst_then_spacing),
	    cmocka_unit_test(limiter_no_limit),
	    cmocka_unit_test(limiter_edges),
	    cmocka_unit_test(limiter_rate_property),
	    cmocka_unit_test(time_parse_table),
	    cmocka_unit_test(time_format_and_roundtrip),
	    cmocka_unit_test(escape_table),
	    cmocka_unit_test(status_table),
	    cmocka_unit_test(patch_unapplied_table),
	    cmocka_unit_test(request_connection_refused),
	    cmocka_unit_test(request_local_refusals),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

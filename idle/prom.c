/* idle/prom.c: the Prometheus text exposition format (0.0.4), read line by
 * line within the caps of idle.h. Every sample line is checked the same
 * way whatever its metric, so a damaged scrape is refused whole, naming
 * its first bad line, rather than read in part. Only the labels idle.h
 * lists are kept, and only for the metric asked for. */
#include <math.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "idle/idle.h"

/* The labels kept, each with its slot and rank: a lower rank wins over a
 * higher one whatever their order in the line (namespace over
 * exported_namespace); the same rank twice is a duplicate label. */
enum { S_NS, S_POD, S_CONTAINER, S_LQ, S_HOST, S_UUID, S_GPU, S_GI, S_COUNT };

static const struct {
	const char *name;
	int slot, rank;
} kept[] = {
    {"namespace", S_NS, 0},
    {"exported_namespace", S_NS, 1},
    {"pod", S_POD, 0},
    {"exported_pod", S_POD, 1},
    {"container", S_CONTAINER, 0},
    {"exported_container", S_CONTAINER, 1},
    {"gpuq_dev_queue_name", S_LQ, 0},
    {"kueue_x_k8s_io_queue_name", S_LQ, 1},
    {"Hostname", S_HOST, 0},
    {"hostname", S_HOST, 1},
    {"instance", S_HOST, 2},
    {"UUID", S_UUID, 0},
    {"uuid", S_UUID, 1},
    {"gpu_uuid", S_UUID, 2},
    {"gpu", S_GPU, 0},
    {"GPU_I_ID", S_GI, 0},
};

#define RANK_NONE 99
#define VALUE_TOKEN_MAX 64 /* longest number text read ("-1.7976931348623157e+308" and room) */

typedef struct {
	const char *p, *end; /* the rest of the line */
	uint32_t line;	     /* 1-based, for messages */
	gpuq_diag_t *diag;
} cursor_t;

typedef struct {
	char v[S_COUNT][IDLE_NAME_MAX]; /* kept values by slot */
	int rank[S_COUNT];		/* rank of the value held, RANK_NONE: none */
} labels_t;

static int fail(cursor_t *c, int rc, const char *what)
{
	gpuq_diag_set(c->diag, rc, "line %u: %s", c->line, what);
	return rc;
}

static void blanks(cursor_t *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

static bool name_char(char ch, bool first, bool colon)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_')
		return true;
	if (colon && ch == ':')
		return true;
	return !first && ch >= '0' && ch <= '9';
}

/* A metric name (colon allowed) or a label name at c->p; *len its length. */
static int read_name(cursor_t *c, bool colon, const char **name, size_t *len)
{
	const char *s = c->p;

	if (c->p >= c->end || !name_char(*c->p, true, colon))
		return fail(c, GPUQ_EINVAL,
			    colon ? "expected a metric name" : "expected a label name");
	while (c->p < c->end && name_char(*c->p, false, colon))
		c->p++;
	*name = s;
	*len = (size_t)(c->p - s);
	return GPUQ_OK;
}

/* The kept label's index for name[0..len), or -1. */
static int kept_index(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (strlen(kept[i].name) == len && !memcmp(kept[i].name, name, len))
			return (int)i;
	return -1;
}

/* A quoted label value at c->p, unescaped into out[0..cap) when out is not
 * NULL (GPUQ_ELIMIT when it does not fit). */
static int read_value(cursor_t *c, char *out, size_t cap)
{
	size_t n = 0;

	if (c->p >= c->end || *c->p != '"')
		return fail(c, GPUQ_EINVAL, "expected '\"' to open a label value");
	c->p++;
	for (;;) {
		char ch;

		if (c->p >= c->end)
			return fail(c, GPUQ_EINVAL, "label value not closed by '\"'");
		ch = *c->p++;
		if (ch == '"')
			break;
		if (ch == '\\') {
			if (c->p >= c->end)
				return fail(c, GPUQ_EINVAL, "label value not closed by '\"'");
			ch = *c->p++;
			if (ch == 'n')
				ch = '\n';
			else if (ch != '\\' && ch != '"')
				return fail(
				    c, GPUQ_EINVAL,
				    "invalid escape in a label value (only \\\\, \\\" and \\n)");
		}
		if (out) {
			if (n + 1 >= cap)
				return gpuq_diag_set(c->diag, GPUQ_ELIMIT,
						     "line %u: label value longer than %zu bytes",
						     c->line, cap - 1);
			out[n++] = ch;
		}
	}
	if (out)
		out[n] = '\0';
	return GPUQ_OK;
}

/* One label: name="value", kept in l when l is not NULL and it is kept. */
static int read_label(cursor_t *c, labels_t *l)
{
	const char *name;
	size_t len;
	int rc, k;
	char *out = NULL;

	rc = read_name(c, false, &name, &len);
	if (rc)
		return rc;
	blanks(c);
	if (c->p >= c->end || *c->p != '=')
		return fail(c, GPUQ_EINVAL, "expected '=' after a label name");
	c->p++;
	blanks(c);
	k = l ? kept_index(name, len) : -1;
	if (k >= 0) {
		int slot = kept[k].slot;

		if (l->rank[slot] == kept[k].rank)
			return gpuq_diag_set(c->diag, GPUQ_EINVAL, "line %u: label %s given twice",
					     c->line, kept[k].name);
		if (kept[k].rank < l->rank[slot]) {
			out = l->v[slot];
			l->rank[slot] = kept[k].rank;
		}
	}
	return read_value(c, out, IDLE_NAME_MAX);
}

/* {label="value",...} (a trailing comma allowed, as the format does). */
static int read_labels(cursor_t *c, labels_t *l)
{
	c->p++; /* '{' */
	for (;;) {
		int rc;

		blanks(c);
		if (c->p < c->end && *c->p == '}') {
			c->p++;
			return GPUQ_OK;
		}
		rc = read_label(c, l);
		if (rc)
			return rc;
		blanks(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			continue;
		}
		if (c->p < c->end && *c->p == '}') {
			c->p++;
			return GPUQ_OK;
		}
		return fail(c, GPUQ_EINVAL, "expected ',' or '}' after a label value");
	}
}

/* A token up to the next blank, into buf (NUL-terminated). */
static int read_token(cursor_t *c, char *buf, size_t cap, const char *what)
{
	size_t n = 0;

	while (c->p < c->end && *c->p != ' ' && *c->p != '\t') {
		if (n + 1 >= cap)
			return gpuq_diag_set(c->diag, GPUQ_EINVAL, "line %u: %s too long", c->line,
					     what);
		buf[n++] = *c->p++;
	}
	buf[n] = '\0';
	if (!n)
		return gpuq_diag_set(c->diag, GPUQ_EINVAL, "line %u: expected %s", c->line, what);
	return GPUQ_OK;
}

/* A sample value as Go's ParseFloat reads it for this format: a decimal
 * number, NaN, Inf, +Inf, -Inf (any case). */
static int parse_number(cursor_t *c, const char *tok, double *out)
{
	const char *t = tok;
	char *end;

	if (!strcasecmp(t, "nan")) {
		*out = NAN;
		return GPUQ_OK;
	}
	if (*t == '+' || *t == '-')
		t++;
	if (!strcasecmp(t, "inf") || !strcasecmp(t, "infinity")) {
		*out = tok[0] == '-' ? -INFINITY : INFINITY;
		return GPUQ_OK;
	}
	if (strspn(tok, "0123456789+-.eE") != strlen(tok))
		return gpuq_diag_set(c->diag, GPUQ_EINVAL, "line %u: value \"%s\" is not a number",
				     c->line, tok);
	*out = strtod(tok, &end);
	if (end == tok || *end)
		return gpuq_diag_set(c->diag, GPUQ_EINVAL, "line %u: value \"%s\" is not a number",
				     c->line, tok);
	return GPUQ_OK;
}

/* The value, then an optional integer timestamp (ms since the epoch) into
 * *ts (0 without one; one outside +-2^62 ms is refused). */
static int read_tail(cursor_t *c, double *value, int64_t *ts)
{
	char tok[VALUE_TOKEN_MAX];
	char *end;
	long long t;
	int rc;

	*ts = 0;
	if (c->p >= c->end || (*c->p != ' ' && *c->p != '\t'))
		return fail(c, GPUQ_EINVAL, "expected a blank before the value");
	blanks(c);
	rc = read_token(c, tok, sizeof(tok), "a value");
	if (!rc)
		rc = parse_number(c, tok, value);
	if (rc)
		return rc;
	blanks(c);
	if (c->p == c->end)
		return GPUQ_OK;
	rc = read_token(c, tok, sizeof(tok), "a timestamp");
	if (rc)
		return rc;
	if (strspn(tok + (tok[0] == '-'), "0123456789") != strlen(tok + (tok[0] == '-')) ||
	    !tok[tok[0] == '-'])
		return gpuq_diag_set(c->diag, GPUQ_EINVAL,
				     "line %u: timestamp \"%s\" is not an integer", c->line, tok);
	errno = 0;
	t = strtoll(tok, &end, 10);
	if (errno || t > IDLE_TIME_MAX || t < -IDLE_TIME_MAX)
		return gpuq_diag_set(c->diag, GPUQ_EINVAL,
				     "line %u: timestamp \"%s\" is out of range", c->line, tok);
	*ts = (int64_t)t;
	blanks(c);
	if (c->p != c->end)
		return fail(c, GPUQ_EINVAL, "unexpected text after the timestamp");
	return GPUQ_OK;
}

/* The device id: host/UUID/gpu/GPU_I_ID. */
static int join_device(cursor_t *c, const labels_t *l, char *out)
{
	size_t n = 0;
	const int parts[] = {S_HOST, S_UUID, S_GPU, S_GI};

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t len = strlen(l->v[parts[i]]);

		if (n + len + 2 > IDLE_DEVICE_MAX)
			return gpuq_diag_set(c->diag, GPUQ_ELIMIT,
					     "line %u: device labels longer than %d bytes", c->line,
					     IDLE_DEVICE_MAX - 1);
		if (i)
			out[n++] = '/';
		memcpy(out + n, l->v[parts[i]], len);
		n += len;
	}
	out[n] = '\0';
	return GPUQ_OK;
}

/* One sample line; *match when it is of `metric` (s then filled). */
static int parse_sample(cursor_t *c, const char *metric, idle_sample_t *s, bool *match)
{
	const char *name;
	size_t len;
	labels_t *l = NULL;
	labels_t buf;
	double value = 0;
	int64_t ts = 0;
	int rc;

	rc = read_name(c, true, &name, &len);
	if (rc)
		return rc;
	*match = strlen(metric) == len && !memcmp(metric, name, len);
	if (*match) {
		memset(&buf, 0, sizeof(buf));
		for (int i = 0; i < S_COUNT; i++)
			buf.rank[i] = RANK_NONE;
		l = &buf;
	}
	blanks(c);
	if (c->p < c->end && *c->p == '{') {
		rc = read_labels(c, l);
		if (rc)
			return rc;
	} else {
		c->p = name + len; /* read_tail wants the blank before the value */
	}
	rc = read_tail(c, &value, &ts);
	if (rc || !*match)
		return rc;
	memset(s, 0, sizeof(*s));
	memcpy(s->namespace_, l->v[S_NS], sizeof(s->namespace_));
	memcpy(s->pod, l->v[S_POD], sizeof(s->pod));
	memcpy(s->container, l->v[S_CONTAINER], sizeof(s->container));
	memcpy(s->local_queue, l->v[S_LQ], sizeof(s->local_queue));
	s->value = value;
	s->ts_ms = ts;
	s->line = c->line;
	return join_device(c, l, s->device);
}

/* Room for one more sample in *arr (doubling, up to max). */
static int grow(idle_sample_t **arr, size_t n, size_t *cap, size_t max, const cursor_t *c)
{
	idle_sample_t *p;
	size_t want;

	if (n >= max) {
		gpuq_diag_set(c->diag, GPUQ_ELIMIT, "line %u: more than %zu samples of the metric",
			      c->line, max);
		return GPUQ_ELIMIT;
	}
	if (n < *cap)
		return GPUQ_OK;
	want = *cap ? *cap * 2 : 64;
	if (want > max)
		want = max;
	p = realloc(*arr, want * sizeof(*p));
	if (!p)
		return GPUQ_ENOMEM;
	*arr = p;
	*cap = want;
	return GPUQ_OK;
}

int idle_prom_parse(const char *body, size_t len, const char *metric, size_t max_samples,
		    idle_sample_t **out, size_t *n, gpuq_diag_t *diag)
{
	idle_sample_t *arr = NULL;
	size_t cnt = 0, cap = 0, pos = 0;
	cursor_t c = {.diag = diag};
	idle_sample_t *s = malloc(sizeof(*s)); /* the line being read (1.5 KiB) */
	int rc = GPUQ_OK;

	*out = NULL;
	*n = 0;
	if (max_samples > IDLE_SAMPLES_MAX)
		max_samples = IDLE_SAMPLES_MAX;
	if (!s)
		return GPUQ_ENOMEM;
	if (len > IDLE_PROM_BODY_MAX)
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT, "body of %zu bytes is over the %zu cap", len,
				   IDLE_PROM_BODY_MAX);
	while (pos < len && !rc) {
		const char *nl = memchr(body + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - body) : len;
		bool match = false;

		c.line++;
		c.p = body + pos;
		c.end = body + end;
		pos = end + 1;
		if (c.end > c.p && c.end[-1] == '\r')
			c.end--;
		if ((size_t)(c.end - c.p) > IDLE_PROM_LINE_MAX) {
			rc = gpuq_diag_set(diag, GPUQ_ELIMIT, "line %u: longer than %zu bytes",
					   c.line, IDLE_PROM_LINE_MAX);
			break;
		}
		blanks(&c);
		if (c.p == c.end || *c.p == '#')
			continue;
		rc = parse_sample(&c, metric, s, &match);
		if (!rc && match)
			rc = grow(&arr, cnt, &cap, max_samples, &c);
		if (!rc && match)
			arr[cnt++] = *s;
	}
	free(s);
	if (rc) {
		free(arr);
		return rc;
	}
	*out = arr;
	*n = cnt;
	return GPUQ_OK;
}

size_t idle_samples_drop_stale(idle_sample_t *samples, size_t n, int64_t now_ms, int64_t max_age_ms)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (max_age_ms > 0 && samples[i].ts_ms != 0 &&
		    now_ms - samples[i].ts_ms > max_age_ms)
			continue;
		if (k != i)
			samples[k] = samples[i];
		k++;
	}
	return k;
}

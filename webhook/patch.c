/* webhook/patch.c: the text builders under the admission decisions: a capped
 * growable buffer with JSON string escaping, RFC 6902 JSON Patch operations
 * with RFC 6901 pointer escaping (`~` -> `~0`, `/` -> `~1`), and base64. The
 * reply and the patch are written as text directly, never through a JSON tree,
 * so a review costs one parse and a few appends. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/admit_internal.h"

/* The first heap buffer of a patch that outgrew the caller's stack buffer
 * (or had none); it doubles up to the patch's cap. */
#define PATCH_FIRST_CAP 256u

void webhook_buf_init(webhook_buf_t *b, char *stack, size_t stack_cap, size_t max)
{
	b->p = stack;
	b->len = 0;
	/* never above max: room() may then skip reserve()'s limit test */
	b->cap = stack ? (stack_cap < max ? stack_cap : max) : 0;
	b->max = max;
	b->heap = false;
	b->err = GPUQ_OK;
	if (b->p && b->cap)
		b->p[0] = '\0';
}

void webhook_buf_deinit(webhook_buf_t *b)
{
	if (b->heap)
		free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->heap = false;
}

/* Make room for n more bytes plus a NUL; sticky error on failure. The
 * growth path behind room(). */
static int reserve(webhook_buf_t *b, size_t n)
{
	size_t want, cap;
	char *np;

	if (b->err)
		return b->err;
	if (n > b->max || b->len + n + 1 > b->max) {
		b->err = GPUQ_ELIMIT;
		return b->err;
	}
	want = b->len + n + 1;
	if (want <= b->cap)
		return GPUQ_OK;
	cap = b->cap ? b->cap : PATCH_FIRST_CAP;
	while (cap < want)
		cap *= 2;
	if (cap > b->max)
		cap = b->max;
	if (b->heap) {
		np = realloc(b->p, cap);
	} else {
		np = malloc(cap);
		if (np && b->len)
			memcpy(np, b->p, b->len);
	}
	if (!np) {
		b->err = GPUQ_ENOMEM;
		return b->err;
	}
	b->p = np;
	b->cap = cap;
	b->heap = true;
	return GPUQ_OK;
}

/* Whether n more bytes and a NUL fit already (no error yet, cap <= max): the
 * test every append makes before reserve(). */
static inline bool room(const webhook_buf_t *b, size_t n)
{
	return !b->err && n < b->cap - b->len;
}

/* Append s[0..n) (n may be 0). */
static inline void put(webhook_buf_t *b, const char *s, size_t n)
{
	if (!room(b, n) && reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* Append a string literal. */
#define PUT_LIT(b, lit) put((b), (lit), sizeof(lit) - 1)

void webhook_buf_reserve(webhook_buf_t *b, size_t n)
{
	(void)reserve(b, n);
}

void webhook_buf_putn(webhook_buf_t *b, const char *s, size_t n)
{
	put(b, s, n);
}

void webhook_buf_puts(webhook_buf_t *b, const char *s)
{
	put(b, s, strlen(s));
}

void webhook_buf_printf(webhook_buf_t *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = GPUQ_EINVAL;
		return;
	}
	if (b->p && b->len + (size_t)n < b->cap) {
		b->len += (size_t)n;
		return;
	}
	if (reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void put_buf(void *b, const char *p, size_t n)
{
	put(b, p, n);
}

/* Append s[0..n) JSON-escaped (no quotes): the plain run at its start
 * copied at once, gpuq_json_escape for the rest (rarely any). */
static void put_json(webhook_buf_t *b, const char *s, size_t n)
{
	size_t plain = gpuq_json_plain_len(s, n);

	put(b, s, plain);
	if (plain < n)
		gpuq_json_escape(s + plain, n - plain, put_buf, b);
}

/* Append token as the inside of a JSON string holding an RFC 6901
 * reference token: '~' as "~0", '/' as "~1", the rest JSON-escaped. */
static void put_ptr_token(webhook_buf_t *b, const char *token)
{
	for (;;) {
		size_t run = strcspn(token, "~/");

		put_json(b, token, run);
		if (!token[run])
			return;
		put(b, token[run] == '~' ? "~0" : "~1", 2);
		token += run + 1;
	}
}

void webhook_buf_put_jstr(webhook_buf_t *b, const char *s)
{
	PUT_LIT(b, "\"");
	put_json(b, s, strlen(s));
	PUT_LIT(b, "\"");
}

void webhook_buf_put_jtext(webhook_buf_t *b, const char *s)
{
	put_json(b, s, strlen(s));
}

void webhook_buf_put_ptr_token(webhook_buf_t *b, const char *token)
{
	put_ptr_token(b, token);
}

void webhook_buf_put_base64(webhook_buf_t *b, const char *src, size_t n)
{
	if (reserve(b, GPUQ_BASE64_LEN(n)))
		return;
	b->len += gpuq_base64_encode(src, n, b->p + b->len);
	b->p[b->len] = '\0';
}

void webhook_patch_init(webhook_patch_t *p, char *stack, size_t stack_cap)
{
	webhook_buf_init(&p->text, stack, stack_cap, WEBHOOK_PATCH_MAX);
	p->n_ops = 0;
}

void webhook_patch_deinit(webhook_patch_t *p)
{
	webhook_buf_deinit(&p->text);
}

webhook_buf_t *webhook_patch_open(webhook_patch_t *p, const char *prefix, const char *token)
{
	webhook_buf_t *b = &p->text;

	if (p->n_ops)
		PUT_LIT(b, ",{\"op\":\"add\",\"path\":\"");
	else
		PUT_LIT(b, "[{\"op\":\"add\",\"path\":\"");
	put_json(b, prefix, strlen(prefix));
	if (token) {
		PUT_LIT(b, "/");
		put_ptr_token(b, token);
	}
	PUT_LIT(b, "\",\"value\":");
	return b;
}

void webhook_patch_close(webhook_patch_t *p)
{
	PUT_LIT(&p->text, "}");
	p->n_ops++;
}

void webhook_patch_add(webhook_patch_t *p, const char *prefix, const char *token,
		       const char *value_json)
{
	webhook_buf_t *b = webhook_patch_open(p, prefix, token);

	put(b, value_json, strlen(value_json));
	webhook_patch_close(p);
}

int webhook_patch_finish(webhook_patch_t *p)
{
	if (p->n_ops)
		PUT_LIT(&p->text, "]");
	return p->text.err;
}

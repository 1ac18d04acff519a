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
	b->cap = stack ? stack_cap : 0;
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

/* Make room for n more bytes plus a NUL; sticky error on failure. */
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

void webhook_buf_reserve(webhook_buf_t *b, size_t n)
{
	(void)reserve(b, n);
}

void webhook_buf_putn(webhook_buf_t *b, const char *s, size_t n)
{
	if (reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void webhook_buf_puts(webhook_buf_t *b, const char *s)
{
	webhook_buf_putn(b, s, strlen(s));
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
	webhook_buf_putn(b, p, n);
}

/* Append s[0..n) JSON-escaped (no quotes). With pointer set, also apply
 * RFC 6901 escaping first ('~' as "~0", '/' as "~1"), for a reference token
 * inside a path string. */
static void put_escaped(webhook_buf_t *b, const char *s, size_t n, bool pointer)
{
	size_t run = 0;

	for (size_t i = 0; pointer && i < n; i++) {
		if (s[i] != '~' && s[i] != '/')
			continue;
		gpuq_json_escape(s + run, i - run, put_buf, b);
		webhook_buf_puts(b, s[i] == '~' ? "~0" : "~1");
		run = i + 1;
	}
	gpuq_json_escape(s + run, n - run, put_buf, b);
}

void webhook_buf_put_jstr(webhook_buf_t *b, const char *s)
{
	webhook_buf_putn(b, "\"", 1);
	put_escaped(b, s, strlen(s), false);
	webhook_buf_putn(b, "\"", 1);
}

void webhook_buf_put_jtext(webhook_buf_t *b, const char *s)
{
	put_escaped(b, s, strlen(s), false);
}

void webhook_buf_put_ptr_token(webhook_buf_t *b, const char *token)
{
	put_escaped(b, token, strlen(token), true);
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

void webhook_patch_add(webhook_patch_t *p, const char *prefix, const char *token,
		       const char *value_json)
{
	webhook_buf_t *b = &p->text;

	webhook_buf_puts(b, p->n_ops ? ",{\"op\":\"add\",\"path\":\""
				     : "[{\"op\":\"add\",\"path\":\"");
	webhook_buf_put_jtext(b, prefix);
	if (token) {
		webhook_buf_putn(b, "/", 1);
		webhook_buf_put_ptr_token(b, token);
	}
	webhook_buf_puts(b, "\",\"value\":");
	webhook_buf_puts(b, value_json);
	webhook_buf_putn(b, "}", 1);
	p->n_ops++;
}

int webhook_patch_finish(webhook_patch_t *p)
{
	if (p->n_ops)
		webhook_buf_putn(&p->text, "]", 1);
	return p->text.err;
}

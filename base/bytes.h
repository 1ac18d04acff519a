/*
 * base/bytes.h: the little-endian byte writer and reader of gpuq's stored
 * records (the queue core's and the usage ledger's): one layout, one
 * bounds rule. Inline: encoding and restore call them per field.
 *
 * The writer never writes past cap but counts every byte in len, so a
 * caller learns the size it needs (len > cap). The reader never reads past
 * n: a short read sets bad, zeroes its output and every later read fails.
 * Strings are a 2-byte length and the bytes, no NUL.
 */
#ifndef GPUQ_BYTES_H
#define GPUQ_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	uint8_t *b; /* output (may be NULL when cap is 0) */
	size_t cap; /* its size */
	size_t len; /* bytes produced (may exceed cap) */
} gpuq_wr_t;

static inline void gpuq_put(gpuq_wr_t *w, const void *p, size_t n)
{
	if (w->len + n <= w->cap)
		memcpy(w->b + w->len, p, n);
	w->len += n;
}

static inline void gpuq_put_u8(gpuq_wr_t *w, uint8_t v)
{
	gpuq_put(w, &v, 1);
}

static inline void gpuq_put_u32(gpuq_wr_t *w, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	gpuq_put(w, b, 4);
}

static inline void gpuq_put_u64(gpuq_wr_t *w, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	gpuq_put(w, b, 8);
}

static inline void gpuq_put_f64(gpuq_wr_t *w, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	gpuq_put_u64(w, v);
}

/* s (at most 65,535 bytes: callers bound their names far below). */
static inline void gpuq_put_str(gpuq_wr_t *w, const char *s)
{
	size_t n = strlen(s);

	gpuq_put_u8(w, (uint8_t)(n & 0xff));
	gpuq_put_u8(w, (uint8_t)(n >> 8));
	gpuq_put(w, s, n);
}

typedef struct {
	const uint8_t *p; /* input */
	size_t n;	  /* its length */
	size_t off;	  /* read so far */
	bool bad;	  /* truncated (or, set by a caller, out of range) */
} gpuq_rd_t;

static inline bool gpuq_get(gpuq_rd_t *r, void *out, size_t n)
{
	if (r->bad || r->n - r->off < n) {
		r->bad = true;
		memset(out, 0, n);
		return false;
	}
	memcpy(out, r->p + r->off, n);
	r->off += n;
	return true;
}

static inline uint8_t gpuq_get_u8(gpuq_rd_t *r)
{
	uint8_t v;

	gpuq_get(r, &v, 1);
	return v;
}

static inline uint32_t gpuq_get_u32(gpuq_rd_t *r)
{
	uint8_t b[4];
	uint32_t v = 0;

	gpuq_get(r, b, 4);
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

static inline uint64_t gpuq_get_u64(gpuq_rd_t *r)
{
	uint8_t b[8];
	uint64_t v = 0;

	gpuq_get(r, b, 8);
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* The bits as written; the caller judges the value (finite, in range). */
static inline double gpuq_get_f64(gpuq_rd_t *r)
{
	uint64_t v = gpuq_get_u64(r);
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* A string's 2-byte length (the bytes follow). */
static inline size_t gpuq_get_len16(gpuq_rd_t *r)
{
	size_t n = gpuq_get_u8(r);

	return n | (size_t)gpuq_get_u8(r) << 8;
}

#endif

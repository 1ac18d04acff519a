/*
 * base/bytes.h: the little-endian byte writer and reader of gpuq's stored
 * records (the queue core's and the usage ledger's): one layout, one
 * bounds rule. Inline: encoding and restore call them per field.
 *
 * The writer never writes past cap but counts every byte in len, so a
 * caller learns the size it needs (len > cap). The reader never reads past
 * n: a short read sets bad, zeroes its output and every later read fails.
 * Strings are a 2-byte length and the bytes, no NUL.
 *
 * A record kept by the hundred thousand (the core's workload, version 2)
 * sets varint on its writer and reader: then every u32, u64 and string
 * length is a LEB128 varint of its zigzag (a small or negative number, the
 * common case, takes one byte: -1, "never", too), at most 5 and 10 bytes;
 * f64 stays 8 bytes. A varint that runs past its width or the input is a
 * bad read.
 */
#ifndef GPUQ_BYTES_H
#define GPUQ_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	uint8_t *b;  /* output (may be NULL when cap is 0) */
	size_t cap;  /* its size */
	size_t len;  /* bytes produced (may exceed cap) */
	bool varint; /* u32, u64 and string lengths as zigzag varints */
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

/* The zigzag varint of v, a two's complement number of `bits` bits. */
static inline void gpuq_put_var(gpuq_wr_t *w, uint64_t v, int bits)
{
	uint64_t z = bits == 32 ? (uint64_t)((uint32_t)v << 1 ^ (uint32_t) - (v >> 31 & 1))
				: v << 1 ^ (uint64_t) - (v >> 63);
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n++] = (uint8_t)((z & 0x7f) | (z > 0x7f ? 0x80 : 0));
		z >>= 7;
	} while (z);
	gpuq_put(w, b, n);
}

static inline void gpuq_put_u32(gpuq_wr_t *w, uint32_t v)
{
	uint8_t b[4];

	if (w->varint) {
		gpuq_put_var(w, v, 32);
		return;
	}
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	gpuq_put(w, b, 4);
}

static inline void gpuq_put_u64(gpuq_wr_t *w, uint64_t v)
{
	uint8_t b[8];

	if (w->varint) {
		gpuq_put_var(w, v, 64);
		return;
	}
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	gpuq_put(w, b, 8);
}

static inline void gpuq_put_f64(gpuq_wr_t *w, double d)
{
	uint8_t b[8];
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	gpuq_put(w, b, 8); /* 8 bytes in either form */
}

/* s (at most 65,535 bytes: callers bound their names far below). */
static inline void gpuq_put_str(gpuq_wr_t *w, const char *s)
{
	size_t n = strlen(s);

	if (w->varint) {
		gpuq_put_var(w, n, 32);
		gpuq_put(w, s, n);
		return;
	}
	gpuq_put_u8(w, (uint8_t)(n & 0xff));
	gpuq_put_u8(w, (uint8_t)(n >> 8));
	gpuq_put(w, s, n);
}

typedef struct {
	const uint8_t *p; /* input */
	size_t n;	  /* its length */
	size_t off;	  /* read so far */
	bool bad;	  /* truncated (or, set by a caller, out of range) */
	bool varint;	  /* u32, u64 and string lengths as zigzag varints */
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

/* A zigzag varint of at most `bits` bits (gpuq_put_var). */
static inline uint64_t gpuq_get_var(gpuq_rd_t *r, int bits)
{
	uint64_t z = 0;
	int shift = 0;

	for (;;) {
		uint8_t b = 0;

		if (shift >= bits || !gpuq_get(r, &b, 1) ||
		    (shift && bits - shift < 7 && b >> (bits - shift))) {
			r->bad = true; /* past its width, or truncated */
			return 0;
		}
		z |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return z >> 1 ^ (uint64_t) - (z & 1);
}

static inline uint32_t gpuq_get_u32(gpuq_rd_t *r)
{
	uint8_t b[4];
	uint32_t v = 0;

	if (r->varint)
		return (uint32_t)gpuq_get_var(r, 32);
	gpuq_get(r, b, 4);
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

static inline uint64_t gpuq_get_u64(gpuq_rd_t *r)
{
	uint8_t b[8];
	uint64_t v = 0;

	if (r->varint)
		return gpuq_get_var(r, 64);
	gpuq_get(r, b, 8);
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* The bits as written; the caller judges the value (finite, in range). */
static inline double gpuq_get_f64(gpuq_rd_t *r)
{
	uint8_t b[8];
	uint64_t v = 0;
	double d;

	gpuq_get(r, b, 8); /* 8 bytes in either form */
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	memcpy(&d, &v, sizeof(d));
	return d;
}

/* A string's 2-byte length (the bytes follow); a varint one when
 * r->varint (bad past 65,535). */
static inline size_t gpuq_get_len16(gpuq_rd_t *r)
{
	size_t n;

	if (r->varint) {
		n = (size_t)(uint32_t)gpuq_get_var(r, 32);
		if (n > 0xffff) {
			r->bad = true;
			return 0;
		}
		return n;
	}
	n = gpuq_get_u8(r);
	return n | (size_t)gpuq_get_u8(r) << 8;
}

#endif

/*
 * quota: Kubernetes quantities, resource lists, effective pod requests,
 * LimitRange defaulting and validation, and ResourceQuota checks.
 *
 * Pure: no I/O, no clock, no globals. The design decision that matters:
 * quantities are exact fixed point (a signed 128-bit count of nano-units,
 * 10^-9), never floating point, so `1.5Gi`, `1536Mi` and `1610612736` compare
 * equal and every message quotes values in the apiserver's canonical form.
 */
#ifndef GPUQ_QUOTA_H
#define GPUQ_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- Quantity (k8s.io/apimachinery resource.Quantity) ---- */

typedef enum {
	QUOTA_QTY_DECIMAL_SI = 0,  /* "", n u m k M G T P E */
	QUOTA_QTY_BINARY_SI = 1,   /* Ki Mi Gi Ti Pi Ei */
	QUOTA_QTY_DECIMAL_EXP = 2, /* e3, E-6 */
} quota_qty_format_t;

typedef struct {
	__int128 nano;             /* value * 10^9, rounded up to 1n; |value| <= 2^63-1 */
	quota_qty_format_t format; /* suffix family, kept for canonical output */
} quota_qty_t;

/* Longest quantity string accepted (apimachinery has no cap; 64 bytes covers
 * every value up to 2^63-1 with nine fractional digits and an exponent). */
#define QUOTA_QTY_STR_MAX 64
/* Canonical output never needs more than this (with NUL). */
#define QUOTA_QTY_FMT_MAX 48

/* Parse s[0..len) as a Quantity. Returns GPUQ_OK, or GPUQ_EINVAL (bad
 * syntax: "1.2.3", "1Gb", "") / GPUQ_ERANGE (magnitude above 2^63-1) with a
 * sentence naming the value in diag. Fractions below 1n round up (away from
 * zero for positive values) as apimachinery does. */
int quota_qty_parse(const char *s, size_t len, quota_qty_t *out, gpuq_diag_t *diag);

/* Write the canonical form (`1500m`, `1536Mi`, `1k`, `0`) into buf. Returns
 * GPUQ_OK or GPUQ_ELIMIT if cap is too small. */
int quota_qty_format(const quota_qty_t *q, char *buf, size_t cap);

/* -1, 0, 1 comparing numeric values (formats ignored). */
int quota_qty_cmp(const quota_qty_t *a, const quota_qty_t *b);

/* a + b and a - b into out (format of a); GPUQ_ERANGE past 2^63-1 units. */
int quota_qty_add(const quota_qty_t *a, const quota_qty_t *b, quota_qty_t *out);
int quota_qty_sub(const quota_qty_t *a, const quota_qty_t *b, quota_qty_t *out);

/* A quantity of `units` whole units in the given format. */
quota_qty_t quota_qty_from_units(int64_t units, quota_qty_format_t format);
/* A quantity of `milli` thousandths (decimal SI). */
quota_qty_t quota_qty_from_milli(int64_t milli);

/* Whole units, rounded up (Quantity.Value()); saturates at INT64 bounds. */
int64_t quota_qty_units(const quota_qty_t *q);
/* Thousandths, rounded up (Quantity.MilliValue()); saturates. */
int64_t quota_qty_milli(const quota_qty_t *q);
/* True when the value is a whole number of units. */
bool quota_qty_is_integer(const quota_qty_t *q);
/* True when the value is zero. */
bool quota_qty_is_zero(const quota_qty_t *q);

/* The integer amount the queueing core counts for resource `name`:
 * millicores for "cpu", whole units (rounded up) for everything else. */
int64_t quota_qty_amount(const char *name, const quota_qty_t *q);

#endif

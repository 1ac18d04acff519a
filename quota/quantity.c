/*
 * Quantity parsing, canonical formatting and arithmetic (quota.h).
 *
 * A parsed value is an exact count of nano-units in a signed 128-bit integer.
 * Parsing goes through a small fixed-size big integer so that inputs with
 * many digits, binary suffixes and decimal exponents round exactly once, up
 * (away from zero) to the next nano-unit, as apimachinery does.
 */
#include "quota/quota.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NANO_PER_UNIT 1000000000LL
/* (2^63 - 1) units in nano-units: the largest magnitude a quantity may have. */
#define QTY_MAX_NANO ((__int128)INT64_MAX * NANO_PER_UNIT)

/* v / d and v % d, in 64 bits when v fits them: 2^64 nano-units is over 18
 * billion units, so nearly every quantity does, and 128-bit division is a
 * library call (__udivti3) where 64-bit division by a constant is a
 * multiply. */
static unsigned __int128 udiv(unsigned __int128 v, uint64_t d)
{
	return v <= UINT64_MAX ? (unsigned __int128)((uint64_t)v / d) : v / d;
}

static uint64_t umod(unsigned __int128 v, uint64_t d)
{
	return v <= UINT64_MAX ? (uint64_t)v % d : (uint64_t)(v % d);
}

/* |v|, unsigned (v is within +-QTY_MAX_NANO). */
static unsigned __int128 magnitude(__int128 v)
{
	return v < 0 ? (unsigned __int128)-v : (unsigned __int128)v;
}

/* ---- a little unsigned big integer, base 10^9, little-endian limbs ---- */

/* 12 limbs hold 108 decimal digits; the worst case in qty_scale() is a
 * 63-digit mantissa times 2^60 (82 digits), see the bounds checked there. */
#define BIG_LIMBS 12
#define BIG_BASE 1000000000u

typedef struct {
	uint32_t limb[BIG_LIMBS]; /* value = sum limb[i] * BASE^i */
} big_t;

static void big_mul_small(big_t *b, uint32_t m)
{
	uint64_t carry = 0;

	for (int i = 0; i < BIG_LIMBS; i++) {
		uint64_t v = (uint64_t)b->limb[i] * m + carry;

		b->limb[i] = (uint32_t)(v % BIG_BASE);
		carry = v / BIG_BASE;
	}
	GPUQ_ASSERT(carry == 0); /* callers bound the size beforehand */
}

static void big_add_small(big_t *b, uint32_t a)
{
	uint64_t carry = a;

	for (int i = 0; i < BIG_LIMBS && carry; i++) {
		uint64_t v = (uint64_t)b->limb[i] + carry;

		b->limb[i] = (uint32_t)(v % BIG_BASE);
		carry = v / BIG_BASE;
	}
	GPUQ_ASSERT(carry == 0);
}

/* b /= d; returns the remainder. */
static uint32_t big_div_small(big_t *b, uint32_t d)
{
	uint64_t rem = 0;

	for (int i = BIG_LIMBS - 1; i >= 0; i--) {
		uint64_t v = rem * BIG_BASE + b->limb[i];

		b->limb[i] = (uint32_t)(v / d);
		rem = v % d;
	}
	return (uint32_t)rem;
}

/* The value as unsigned 128 bits; false when it does not fit. */
static bool big_to_u128(const big_t *b, unsigned __int128 *out)
{
	unsigned __int128 v = 0;
	const unsigned __int128 lim = ~(unsigned __int128)0 / BIG_BASE;

	for (int i = BIG_LIMBS - 1; i >= 0; i--) {
		if (v > lim)
			return false;
		v = v * BIG_BASE + b->limb[i];
	}
	*out = v;
	return true;
}

/* ---- grammar ---- */

typedef struct {
	bool negative;		/* leading '-' */
	const char *digits;	/* integer digits then fraction digits, '.' skipped */
	size_t n_int;		/* digits before the '.' */
	size_t n_frac;		/* digits after the '.' */
	const char *frac;	/* first fraction digit */
	int dec_exp;		/* decimal exponent of the suffix (k=3, m=-3, e-6=-6) */
	int bin_exp;		/* binary suffix: value * 1024^bin_exp */
	quota_qty_format_t fmt; /* suffix family */
} lexed_t;

/* Suffixes, by letter (0: none): decimal SI ("k": 10^3) and binary SI by
 * the letter before its "i" ("Ki": 1024^1). Indexed, not searched: every
 * quantity of every review is read. The exponent form is separate. */
static const int dec_exp_of[128] = {['n'] = -9, ['u'] = -6, ['m'] = -3, ['k'] = 3, ['M'] = 6,
				    ['G'] = 9,	['T'] = 12, ['P'] = 15, ['E'] = 18};
static const int bin_exp_of[128] = {
    ['K'] = 1, ['M'] = 2, ['G'] = 3, ['T'] = 4, ['P'] = 5, ['E'] = 6};

/* Exponents beyond this can only overflow or round to 1n; clamping keeps the
 * arithmetic small without changing the outcome. */
#define EXP_CLAMP 100000

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool lex_exponent(const char *s, size_t len, int *exp)
{
	size_t i = 1;
	bool neg = false;
	long v = 0;

	if (len < 2 || (s[0] != 'e' && s[0] != 'E'))
		return false;
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	if (i == len)
		return false;
	for (; i < len; i++) {
		if (!is_digit(s[i]))
			return false;
		if (v < EXP_CLAMP)
			v = v * 10 + (s[i] - '0');
	}
	*exp = (int)(neg ? -v : v);
	return true;
}

static bool lex_suffix(const char *s, size_t len, lexed_t *lx)
{
	lx->dec_exp = 0;
	lx->bin_exp = 0;
	lx->fmt = QUOTA_QTY_DECIMAL_SI;
	unsigned char c = len ? (unsigned char)s[0] : 0;

	if (len == 0)
		return true;
	if (len == 1 && c < 128 && dec_exp_of[c]) {
		lx->dec_exp = dec_exp_of[c];
		return true;
	}
	if (len == 2 && s[1] == 'i' && c < 128 && bin_exp_of[c]) {
		lx->bin_exp = bin_exp_of[c];
		lx->fmt = QUOTA_QTY_BINARY_SI;
		return true;
	}
	if (lex_exponent(s, len, &lx->dec_exp)) {
		lx->fmt = QUOTA_QTY_DECIMAL_EXP;
		return true;
	}
	return false;
}

/* Split s into sign, digits and suffix. Returns a static reason on failure. */
static const char *lex(const char *s, size_t len, lexed_t *lx)
{
	size_t i = 0;

	memset(lx, 0, sizeof(*lx));
	if (i < len && (s[i] == '+' || s[i] == '-'))
		lx->negative = s[i++] == '-';
	lx->digits = s + i;
	while (i < len && is_digit(s[i])) {
		i++;
		lx->n_int++;
	}
	lx->frac = s + i;
	if (i < len && s[i] == '.') {
		i++;
		lx->frac = s + i;
		while (i < len && is_digit(s[i])) {
			i++;
			lx->n_frac++;
		}
	}
	/* No digits at all ("Ki", "e3", ".", "-") reads as zero: apimachinery's
	 * scanner substitutes "0" for an empty mantissa, so the apiserver
	 * accepts these and gpuq must not refuse what it admits. */
	if (!lex_suffix(s + i, len - i, lx))
		return "unknown suffix";
	return NULL;
}

/* The digit at position k of the integer+fraction digit sequence. */
static int digit_at(const lexed_t *lx, size_t k)
{
	if (k < lx->n_int)
		return lx->digits[k] - '0';
	return lx->frac[k - lx->n_int] - '0';
}

/* qty_scale for the common case, exact in 128-bit arithmetic: at most 19
 * significant digits (< 2^64) and no division (p >= 0). The caller has
 * checked sig + p <= 29, so digits * 10^p < 10^29 < 2^97; the binary factor
 * is applied only when the result stays within QTY_MAX_NANO. */
static int qty_scale_fast(const lexed_t *lx, size_t first, long p, __int128 *nano)
{
	size_t n = lx->n_int + lx->n_frac;
	unsigned __int128 v = 0;
	unsigned shift = 10u * (unsigned)lx->bin_exp;

	for (size_t k = first; k < n; k++)
		v = v * 10 + (unsigned)digit_at(lx, k);
	for (; p >= 9; p -= 9)
		v *= 1000000000u;
	for (; p > 0; p--)
		v *= 10;
	if (v > ((unsigned __int128)QTY_MAX_NANO >> shift))
		return GPUQ_ERANGE;
	*nano = (__int128)(v << shift);
	return GPUQ_OK;
}

/* Magnitude in nano-units, rounded up; GPUQ_ERANGE above QTY_MAX_NANO. */
static int qty_scale(const lexed_t *lx, __int128 *nano)
{
	size_t n = lx->n_int + lx->n_frac, first = 0;
	long p, sig;
	big_t b;
	bool sticky = false;
	unsigned __int128 v;

	while (first < n && digit_at(lx, first) == 0)
		first++;
	if (first == n) {
		*nano = 0;
		return GPUQ_OK;
	}
	sig = (long)(n - first);
	/* value = digits * 10^p * 1024^bin_exp, in nano-units */
	p = (long)lx->dec_exp + 9 - (long)lx->n_frac;
	/* >= 10^29 nano-units is far above 2^63-1 units (about 9.2 * 10^27). */
	if (sig + p > 29)
		return GPUQ_ERANGE;
	/* below 10^-1 nano-units even after the largest binary factor (< 10^19). */
	if (sig + p + 19 < 0) {
		*nano = 1;
		return GPUQ_OK;
	}
	if (p >= 0 && sig <= 19)
		return qty_scale_fast(lx, first, p, nano);
	memset(&b, 0, sizeof(b));
	for (size_t k = first; k < n; k++) {
		big_mul_small(&b, 10);
		big_add_small(&b, (uint32_t)digit_at(lx, k));
	}
	for (int k = 0; k < lx->bin_exp; k++)
		big_mul_small(&b, 1024);
	for (long k = 0; k < p; k++)
		big_mul_small(&b, 10);
	for (long k = 0; k < -p; k++)
		sticky |= big_div_small(&b, 10) != 0;
	if (sticky)
		big_add_small(&b, 1);
	if (!big_to_u128(&b, &v) || v > (unsigned __int128)QTY_MAX_NANO)
		return GPUQ_ERANGE;
	*nano = (__int128)v;
	return GPUQ_OK;
}

/* Copy s into buf for quoting in a message: printable ASCII only. */
static const char *quoted(const char *s, size_t len, char *buf, size_t cap)
{
	size_t n = len < cap - 1 ? len : cap - 1;

	for (size_t i = 0; i < n; i++)
		buf[i] = (char)((s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"') ? s[i] : '?');
	buf[n] = '\0';
	return buf;
}

/* Most quantities are a few digits and an SI suffix or none ("16", "500m",
 * "64Gi"): read at once, exactly as qty_scale_fast would. false, out
 * untouched: anything else (a sign, a fraction, an exponent, 17 digits or
 * more, a value near or past the bound) is left to the grammar. */
static bool parse_plain(const char *s, size_t len, quota_qty_t *out)
{
	unsigned __int128 v = 0;
	size_t i = 0;
	int dec = 0, bin = 0;
	long p;
	unsigned char c;

	for (; i < len && i < 16 && is_digit(s[i]); i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	if (i == 0 || i == 16)
		return false;
	c = i < len ? (unsigned char)s[i] : 0;
	if (len - i == 1 && c < 128 && dec_exp_of[c])
		dec = dec_exp_of[c];
	else if (len - i == 2 && s[i + 1] == 'i' && c < 128 && bin_exp_of[c])
		bin = bin_exp_of[c];
	else if (len != i)
		return false;
	/* i digits times 10^p stays below 10^29 < 2^97: no overflow */
	p = 9L + dec;
	if ((long)i + p > 29)
		return false;
	for (; p >= 9; p -= 9)
		v *= 1000000000u;
	for (; p > 0; p--)
		v *= 10;
	if (v > ((unsigned __int128)QTY_MAX_NANO >> (10u * (unsigned)bin)))
		return false;
	v <<= 10u * (unsigned)bin;
	out->nano = (__int128)v;
	/* a binary quantity below one unit is shown in decimal (as apimachinery) */
	out->format = bin && v >= NANO_PER_UNIT ? QUOTA_QTY_BINARY_SI : QUOTA_QTY_DECIMAL_SI;
	return true;
}

int quota_qty_parse(const char *s, size_t len, quota_qty_t *out, gpuq_diag_t *diag)
{
	lexed_t lx;
	const char *why;
	char shown[QUOTA_QTY_STR_MAX + 1];
	__int128 nano = 0;
	int rc;

	if (!s || len == 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "invalid quantity \"\": empty (expected a number with an "
				     "optional suffix, e.g. 1, 500m, 2Gi)");
	if (len <= QUOTA_QTY_STR_MAX && parse_plain(s, len, out))
		return GPUQ_OK;
	if (len > QUOTA_QTY_STR_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "invalid quantity \"%s...\": longer than %d characters",
				     quoted(s, 32, shown, sizeof(shown)), QUOTA_QTY_STR_MAX);
	why = lex(s, len, &lx);
	if (why)
		return gpuq_diag_set(
		    diag, GPUQ_EINVAL,
		    "invalid quantity \"%s\": %s (expected a number with an "
		    "optional suffix n u m k M G T P E Ki Mi Gi Ti Pi Ei or e<exp>)",
		    quoted(s, len, shown, sizeof(shown)), why);
	rc = qty_scale(&lx, &nano);
	if (rc)
		return gpuq_diag_set(diag, rc, "quantity \"%s\" is out of range (above 2^63-1)",
				     quoted(s, len, shown, sizeof(shown)));
	/* A binary quantity below one unit is shown in decimal (as apimachinery). */
	if (lx.fmt == QUOTA_QTY_BINARY_SI && nano < NANO_PER_UNIT)
		lx.fmt = QUOTA_QTY_DECIMAL_SI;
	out->nano = lx.negative ? -nano : nano;
	out->format = lx.fmt;
	return GPUQ_OK;
}

/* ---- canonical form ---- */

static const char *const dec_suffix[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
static const char *const bin_suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

/* Write the decimal digits of v (> 0 or == 0) at the end of tmp. */
static char *u128_digits(unsigned __int128 v, char *end)
{
	*--end = '\0';
	do {
		*--end = (char)('0' + (int)umod(v, 10));
		v = udiv(v, 10);
	} while (v);
	return end;
}

/* Copy text (len bytes) into buf as snprintf would: cut at cap - 1 bytes,
 * GPUQ_ELIMIT when it did not fit. */
static int put_text(char *buf, size_t cap, const char *text, size_t len)
{
	size_t n = len < cap ? len : (cap ? cap - 1 : 0);

	if (cap) {
		memcpy(buf, text, n);
		buf[n] = '\0';
	}
	return len < cap ? GPUQ_OK : GPUQ_ELIMIT;
}

int quota_qty_format(const quota_qty_t *q, char *buf, size_t cap)
{
	unsigned __int128 mag, mant;
	char tmp[48], out[64], *digits;
	const char *suffix = "";
	char expbuf[8] = "";
	quota_qty_format_t fmt = q->format;
	size_t len = 0, n;

	if (q->nano == 0)
		return put_text(buf, cap, "0", 1);
	mag = magnitude(q->nano);
	/* Binary form only for whole values of at least 1024 (CanonicalizeBytes). */
	if (fmt == QUOTA_QTY_BINARY_SI &&
	    (umod(mag, NANO_PER_UNIT) != 0 || mag < (unsigned __int128)1024 * NANO_PER_UNIT))
		fmt = QUOTA_QTY_DECIMAL_SI;
	if (fmt == QUOTA_QTY_BINARY_SI) {
		int k = 0;

		mant = udiv(mag, NANO_PER_UNIT);
		while (k < 6 && umod(mant, 1024) == 0) {
			mant = udiv(mant, 1024);
			k++;
		}
		suffix = bin_suffix[k];
	} else {
		/* Largest exponent e = 3i - 9 such that the mantissa is whole. */
		int i = 0;

		mant = mag;
		while (i < 9 && umod(mant, 1000) == 0) {
			mant = udiv(mant, 1000);
			i++;
		}
		if (fmt == QUOTA_QTY_DECIMAL_EXP) {
			if (3 * i - 9 != 0)
				snprintf(expbuf, sizeof(expbuf), "e%d", 3 * i - 9);
			suffix = expbuf;
		} else {
			suffix = dec_suffix[i];
		}
	}
	/* sign, at most 39 digits and a suffix of at most 3 bytes fit out */
	digits = u128_digits(mant, tmp + sizeof(tmp));
	if (q->nano < 0)
		out[len++] = '-';
	n = strlen(digits);
	memcpy(out + len, digits, n);
	len += n;
	n = strlen(suffix);
	memcpy(out + len, suffix, n);
	len += n;
	return put_text(buf, cap, out, len);
}

/* ---- arithmetic ---- */

int quota_qty_cmp(const quota_qty_t *a, const quota_qty_t *b)
{
	return (a->nano > b->nano) - (a->nano < b->nano);
}

static int qty_result(__int128 nano, quota_qty_format_t format, quota_qty_t *out)
{
	if (nano > QTY_MAX_NANO || nano < -QTY_MAX_NANO)
		return GPUQ_ERANGE;
	out->nano = nano;
	out->format = format;
	return GPUQ_OK;
}

int quota_qty_add(const quota_qty_t *a, const quota_qty_t *b, quota_qty_t *out)
{
	/* Both operands are within +-QTY_MAX_NANO, so the sum fits 128 bits. */
	return qty_result(a->nano + b->nano, a->format, out);
}

int quota_qty_sub(const quota_qty_t *a, const quota_qty_t *b, quota_qty_t *out)
{
	return qty_result(a->nano - b->nano, a->format, out);
}

quota_qty_t quota_qty_from_units(int64_t units, quota_qty_format_t format)
{
	quota_qty_t q;

	/* INT64_MIN is one past the allowed magnitude: clamp to -(2^63-1). */
	if (units == INT64_MIN)
		units = -INT64_MAX;
	q.nano = (__int128)units * NANO_PER_UNIT;
	q.format = format;
	return q;
}

quota_qty_t quota_qty_from_milli(int64_t milli)
{
	quota_qty_t q;

	q.nano = (__int128)milli * 1000000;
	q.format = QUOTA_QTY_DECIMAL_SI;
	return q;
}

/* nano / unit rounded away from zero, saturated to int64. */
static int64_t scaled_up(__int128 nano, uint64_t unit)
{
	unsigned __int128 mag = magnitude(nano);
	unsigned __int128 v = udiv(mag, unit) + (umod(mag, unit) != 0);

	if (v > INT64_MAX)
		v = INT64_MAX;
	return nano < 0 ? -(int64_t)v : (int64_t)v;
}

int64_t quota_qty_units(const quota_qty_t *q)
{
	return scaled_up(q->nano, NANO_PER_UNIT);
}

int64_t quota_qty_milli(const quota_qty_t *q)
{
	return scaled_up(q->nano, 1000000);
}

bool quota_qty_is_integer(const quota_qty_t *q)
{
	return umod(magnitude(q->nano), NANO_PER_UNIT) == 0;
}

bool quota_qty_is_zero(const quota_qty_t *q)
{
	return q->nano == 0;
}

int64_t quota_core_per_unit(const char *name)
{
	return strcmp(name, "cpu") == 0 ? QUOTA_CPU_PER_CORE : 1;
}

int64_t quota_qty_amount(const char *name, const quota_qty_t *q)
{
	if (quota_core_per_unit(name) == QUOTA_CPU_PER_CORE)
		return quota_qty_milli(q);
	return quota_qty_units(q);
}

/* v in decimal and then sfx into buf[cap], cut as snprintf("%" PRId64 "%s")
 * cuts it (the explanations format an amount per pending workload). */
static const char *amount_put(char *buf, size_t cap, int64_t v, const char *sfx)
{
	char t[GPUQ_U64_TEXT_MAX + 8];
	size_t n = 0, m;

	if (v < 0)
		t[n++] = '-';
	n += gpuq_u64_text(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, t + n);
	for (const char *s = sfx; *s && n < sizeof(t) - 1; s++)
		t[n++] = *s;
	if (!cap)
		return buf;
	m = n < cap - 1 ? n : cap - 1;
	memcpy(buf, t, m);
	buf[m] = '\0';
	return buf;
}

const char *quota_amount_format(const char *name, int64_t v, char *buf, size_t cap)
{
	static const char *const sfx[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};

	if (quota_core_per_unit(name) == QUOTA_CPU_PER_CORE) {
		if (v % QUOTA_CPU_PER_CORE == 0)
			return amount_put(buf, cap, v / QUOTA_CPU_PER_CORE, "");
		return amount_put(buf, cap, v, "m");
	}
	if (v > 0 && (strcmp(name, "memory") == 0 || strcmp(name, "ephemeral-storage") == 0 ||
		      strncmp(name, "hugepages-", 10) == 0)) {
		for (int i = 0; i < 6; i++) {
			int64_t unit = (int64_t)1 << (10 * (6 - i));

			if (v % unit == 0)
				return amount_put(buf, cap, v / unit, sfx[i]);
		}
	}
	return amount_put(buf, cap, v, "");
}

int64_t quota_tree_available(const quota_node_t *path, size_t n)
{
	int64_t avail = n ? path[n - 1].sub - path[n - 1].use : 0;

	for (size_t i = n > 1 ? n - 1 : 0; i-- > 0;)
		avail = quota_node_available(avail, &path[i]);
	return avail;
}

int64_t quota_tree_potential(const quota_node_t *path, size_t n)
{
	int64_t pot = n ? path[n - 1].sub : 0;

	for (size_t i = n > 1 ? n - 1 : 0; i-- > 0;)
		pot = quota_node_potential(pot, &path[i]);
	return pot;
}

int64_t quota_lend_idle(int64_t nominal, int64_t usage, int64_t lending_limit)
{
	int64_t unused = nominal > usage ? nominal - usage : 0;
	int64_t lendable = lending_limit >= 0 ? lending_limit : nominal;

	return unused < lendable ? unused : lendable;
}

double quota_lent(int64_t idle, int64_t borrowed, int64_t idle_total)
{
	if (idle_total <= 0)
		return 0;
	return (double)idle *
	       (borrowed >= idle_total ? 1.0 : (double)borrowed / (double)idle_total);
}

static int lend_cmp(const void *a, const void *b)
{
	const quota_lend_t *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

void quota_lent_share(quota_lend_t *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), lend_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		int64_t borrowed = 0, lendable = 0;

		for (j = i; j < n && v[j].group == v[i].group; j++) {
			if (v[j].usage > v[j].nominal)
				borrowed += v[j].usage - v[j].nominal;
			lendable += quota_lend_idle(v[j].nominal, v[j].usage, v[j].lending);
		}
		for (size_t k = i; k < j; k++)
			v[k].lent =
			    quota_lent(quota_lend_idle(v[k].nominal, v[k].usage, v[k].lending),
				       borrowed, lendable);
	}
}

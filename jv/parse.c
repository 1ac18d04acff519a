/* jv/parse.c: the document parser (jv.h). One allocation for every node
 * and a copy of the text, one non-recursive pass to build the tree; for a
 * document that pass refuses, a scan for depth and the values first, then
 * the pass again. The pass reads the
 * caller's bytes and writes only the copy (the arena): a string or number
 * is NUL-terminated in place there, over the byte that ended it (a closing
 * quote, a delimiter), and a string with escapes is decoded down over its
 * own bytes (a decoded string is never longer), so most strings are never
 * copied one by one. A reader that never reads some members
 * (jv_doc_parse_skipping) has their values passed over 64 bytes at a time,
 * from bit masks of the quotes and brackets, with no node made. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jv/jv.h"

/* A skip list (jv_doc_parse_skipping) made ready: the keys, and for each
 * first byte (its low 5 bits: a letter's) the lengths of the keys that
 * start with it (bit n: a key of n bytes), so nearly every member is passed
 * with one load. */
typedef struct {
	const jv_key_t *keys; /* ended by {NULL, 0} */
	uint32_t lens[32];
} skipset_t;

typedef struct {
	const char *p;	 /* next byte */
	const char *end; /* one past the last byte */
	jv_t *nodes;
	size_t n_nodes;	       /* used */
	size_t cap_nodes;      /* allocated (an upper bound from the scan) */
	const char *buf;       /* the first byte */
	char *arena;	       /* the text's copy, len + 1 bytes: byte i of the text is
				  arena[i] until the pass writes a NUL or a decoded
				  string over it */
	char *err;	       /* message buffer */
	size_t err_cap;	       /* its size */
	const skipset_t *skip; /* members left out, or NULL */
} parser_t;

/* Record what went wrong (the caller adds where). */
/* 1 for the bytes a JSON string may hold as they are: printable ASCII other
 * than '"' and '\\'. Control characters, escapes and UTF-8 take the slow
 * path. A table because this test runs on every byte of every string. */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* The runs inside strings, the bulk of a review, are walked a block at a
 * time: a block's flags say which of its bytes stop a run, and the run
 * goes up to the first of them. With SSE2 (every x86-64) a block is 16
 * bytes and a flag a bit per byte; elsewhere 8 bytes in a word (SWAR), a
 * flag the top bit of each byte. */
#ifdef __SSE2__
#include <emmintrin.h>

#define BLOCK 16

static __m128i block_load(const char *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* Flags of the quotes and backslashes of block p. */
static uint64_t block_quotes(const char *p)
{
	__m128i b = block_load(p);

	return (uint64_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('"')),
							_mm_cmpeq_epi8(b, _mm_set1_epi8('\\'))));
}

/* Flags of the bytes of block p that are not plain_byte's: a quote, a
 * backslash, a control character or a non-ASCII byte (a signed compare:
 * those are below 0x20 as signed bytes too). */
static uint64_t block_special(const char *p)
{
	__m128i b = block_load(p);
	__m128i stop = _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('"')),
				    _mm_cmpeq_epi8(b, _mm_set1_epi8('\\')));

	return (uint64_t)_mm_movemask_epi8(
	    _mm_or_si128(stop, _mm_cmplt_epi8(b, _mm_set1_epi8(0x20))));
}

/* The index of the first flagged byte. */
static size_t first_hit(uint64_t flags)
{
	return (size_t)__builtin_ctzll(flags);
}
#else
#define BLOCK 8
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static uint64_t load8(const char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/* The bytes of w equal to c. Exact up to the first one (a borrow only runs
 * upwards), which is all first_hit reads. */
static uint64_t has_byte(uint64_t w, unsigned char c)
{
	uint64_t x = w ^ (ONES * c);

	return (x - ONES) & ~x & HIGHS;
}

static uint64_t block_quotes(const char *p)
{
	uint64_t w = load8(p);

	return has_byte(w, '"') | has_byte(w, '\\');
}

static uint64_t block_special(const char *p)
{
	uint64_t w = load8(p);

	return ((w - ONES * 0x20) & ~w & HIGHS) | (w & HIGHS) | has_byte(w, '"') |
	       has_byte(w, '\\');
}

static size_t first_hit(uint64_t flags)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (size_t)__builtin_clzll(flags) / 8;
#else
	return (size_t)__builtin_ctzll(flags) / 8;
#endif
}
#endif

/* A skipped value is passed over 64 bytes at a time: a chunk's quotes,
 * backslashes, opening and closing brackets as bit masks (bit i: byte i),
 * so its strings and depth come from a few word operations and not a
 * branch per token. */
typedef struct {
	uint64_t quote, bslash, open, close;
} chunk_t;

#ifdef __SSE2__
static chunk_t chunk_masks(const char *p)
{
	chunk_t k = {0, 0, 0, 0};

	for (int i = 0; i < 64; i += 16) {
		__m128i b = block_load(p + i);
		/* '[' and '{' differ only in bit 5 (0x5b, 0x7b), as do ']' and '}' */
		__m128i low = _mm_or_si128(b, _mm_set1_epi8(0x20));

		k.quote |=
		    (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('"')))
		    << i;
		k.bslash |=
		    (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('\\')))
		    << i;
		k.open |=
		    (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(low, _mm_set1_epi8('{')))
		    << i;
		k.close |=
		    (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(low, _mm_set1_epi8('}')))
		    << i;
	}
	return k;
}
#else
static chunk_t chunk_masks(const char *p)
{
	chunk_t k = {0, 0, 0, 0};

	for (int i = 0; i < 64; i++) {
		unsigned char c = (unsigned char)p[i], low = c | 0x20;

		k.quote |= (uint64_t)(c == '"') << i;
		k.bslash |= (uint64_t)(c == '\\') << i;
		k.open |= (uint64_t)(low == '{') << i;
		k.close |= (uint64_t)(low == '}') << i;
	}
	return k;
}
#endif

/* Bit i of the result: the parity of bits 0..i of x. */
static uint64_t prefix_xor(uint64_t x)
{
	x ^= x << 1; /* written out: the compiler keeps a loop of six */
	x ^= x << 2;
	x ^= x << 4;
	x ^= x << 8;
	x ^= x << 16;
	return x ^ x << 32;
}

/* The bytes of a chunk escaped by a backslash (an odd run of them before
 * it); *carry: the chunk before ended in an unescaped backslash, and on
 * return whether this one does. Backslashes are rare: a loop over them. */
static uint64_t escaped(uint64_t bslash, bool *carry)
{
	uint64_t esc = 0;

	if (*carry) {
		esc = 1;
		bslash &= ~(uint64_t)1;
	}
	*carry = false;
	while (bslash) {
		int i = __builtin_ctzll(bslash);

		if (i == 63) {
			*carry = true;
			break;
		}
		esc |= (uint64_t)1 << (i + 1);
		bslash &= ~((uint64_t)3 << i); /* it, and the byte it escapes */
	}
	return esc;
}

static int perr(parser_t *ps, const char *what)
{
	gpuq_strlcpy(ps->err, what, ps->err_cap);
	return GPUQ_EINVAL;
}

/* What each byte outside strings does to the pre-scan: opens or closes a
 * container, or marks one more value (an opening bracket, a comma, a
 * colon). Tables, so the scan's only branches are a string's start and end
 * (a switch mispredicted on every structural byte). */
static const signed char depth_delta[256] = {['['] = 1, ['{'] = 1, [']'] = -1, ['}'] = -1};
static const unsigned char value_mark[256] = {['['] = 1, ['{'] = 1, [','] = 1, [':'] = 1};

/* From i, inside a string: the index of its closing quote (len when it has
 * none). A backslash skips the byte after it. */
static size_t string_end(const char *buf, size_t len, size_t i)
{
	for (;;) {
		while (i + BLOCK <= len) {
			uint64_t hit = block_quotes(buf + i);

			if (hit) {
				i += first_hit(hit);
				break;
			}
			i += BLOCK;
		}
		while (i < len && buf[i] != '"' && buf[i] != '\\')
			i++;
		if (i >= len || buf[i] == '"')
			return i < len ? i : len;
		i += 2; /* the escaped byte */
	}
}

/* Pre-scan: deepest nesting and an upper bound on the values (1 + commas +
 * colons + opening brackets, outside strings); a close without an open
 * counts as nothing. Returns at once past depth_max. */
static size_t scan(const char *buf, size_t len, size_t depth_max, size_t *n_values)
{
	size_t max = 0, n = 1;
	ptrdiff_t depth = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '"') {
			i = string_end(buf, len, i + 1);
			continue;
		}
		n += value_mark[c];
		depth += depth_delta[c];
		depth = depth < 0 ? 0 : depth;
		if ((size_t)depth > max) {
			max = (size_t)depth;
			if (max > depth_max)
				return max;
		}
	}
	*n_values = n;
	return max;
}

/* Whether key (len bytes) is on the skip list. */
static inline bool skipped_key(const skipset_t *sk, const char *key, size_t len)
{
	if (len >= 32 || !(sk->lens[key[0] & 31] >> len & 1))
		return false;
	for (const jv_key_t *k = sk->keys; k->s; k++)
		if (k->len == len && !memcmp(k->s, key, len))
			return true;
	return false;
}

/* Past the array or object at ps->p (its opening bracket), depth levels
 * down already: its strings ended and its brackets balanced (not matched
 * by kind), nothing more read. A chunk at a time, then its brackets
 * outside strings one by one (a loop over set bits: no popcount in the
 * x86-64 baseline); the last bytes from a copy padded with spaces. */
static int skip_container(parser_t *ps, size_t depth)
{
	const char *p = ps->p, *end = ps->end;
	bool in_string = false, carry = false;
	size_t open = 0; /* brackets open in the skipped value */
	char tail[64];

	while (p < end) {
		const char *at = p;
		uint64_t strings, opens, both;
		chunk_t k;

		if (end - p < 64) {
			memset(tail, ' ', sizeof(tail));
			memcpy(tail, p, (size_t)(end - p));
			at = tail;
		}
		k = chunk_masks(at);
		if (k.bslash || carry)
			k.quote &= ~escaped(k.bslash, &carry);
		strings = prefix_xor(k.quote) ^ (in_string ? ~(uint64_t)0 : 0);
		in_string = strings >> 63;
		opens = k.open & ~strings;
		for (both = opens | (k.close & ~strings); both; both &= both - 1) {
			uint64_t bit = both & -both;

			if (opens & bit) {
				if (depth + open >= JV_DEPTH_MAX) {
					ps->p = p + __builtin_ctzll(bit);
					return perr(ps, "nested too deep");
				}
				open++;
			} else if (!--open) {
				ps->p = p + __builtin_ctzll(bit) + 1;
				return GPUQ_OK;
			}
		}
		p += 64;
	}
	ps->p = end;
	return perr(ps, "unexpected end of input");
}

static void skip_ws(parser_t *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
		ps->p++;
}

/* A new node; the caller has checked that one is left (room()). */
static jv_t *node_new(parser_t *ps, jv_type_t type)
{
	jv_t *v = &ps->nodes[ps->n_nodes++];

	*v = (jv_t){.type = type};
	return v;
}

/* Whether a node is left: always after the scan (its count bounds the
 * values); in the first pass, not for a document that is not JSON or holds
 * more than JV_VALUES_MAX values (jv_doc_parse then scans). */
static bool room(const parser_t *ps)
{
	return ps->n_nodes < ps->cap_nodes;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at p (p + 4 <= end checked by the caller). */
static long hex4(const char *p)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static char *put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | (cp >> 6));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | (cp >> 12));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | (cp >> 18));
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* One escape at ps->p (the backslash): decoded to *o, which moves past it. */
static int parse_escape(parser_t *ps, char **o)
{
	static const char plain[] = "\"\\/bfnrt", as[] = "\"\\/\b\f\n\r\t";
	const char *hit;
	long hi, lo;
	char e;

	if (ps->end - ps->p < 2)
		return perr(ps, "unterminated escape");
	e = ps->p[1];
	ps->p += 2;
	if (e != 'u') {
		if (!e || !(hit = strchr(plain, e)))
			return perr(ps, "bad escape");
		*(*o)++ = as[hit - plain];
		return GPUQ_OK;
	}
	if (ps->end - ps->p < 4 || (hi = hex4(ps->p)) < 0)
		return perr(ps, "bad \\u escape");
	ps->p += 4;
	if (hi == 0)
		return perr(ps, "\\u0000 in string");
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return perr(ps, "lone low surrogate");
	if (hi >= 0xd800 && hi <= 0xdbff) {
		if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
		    (lo = hex4(ps->p + 2)) < 0xdc00 || lo > 0xdfff)
			return perr(ps, "lone high surrogate");
		ps->p += 6;
		hi = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
	}
	*o = put_utf8(*o, (unsigned long)hi);
	return GPUQ_OK;
}

/* Where byte p of the text is in the arena. */
static char *shadow(const parser_t *ps, const char *p)
{
	return ps->arena + (p - ps->buf);
}

/* A string starting at the opening quote: its text in the arena, in place
 * (o stays p's shadow) until an escape is decoded, then moved down behind
 * it. A plain run is found a block at a time. */
static int parse_string_slow(parser_t *ps, jv_t *v)
{
	const char *p = ps->p + 1, *end = ps->end;
	char *start = shadow(ps, p), *o = start;

	for (;;) {
		unsigned char c;

		while (end - p >= BLOCK) {
			uint64_t hit = block_special(p);
			size_t k = hit ? first_hit(hit) : BLOCK;

			if (o != shadow(ps, p))
				memcpy(o, p, k);
			o += k;
			p += k;
			if (hit)
				break;
		}
		while (p < end && plain_byte[(unsigned char)*p]) {
			*o = *p; /* in place or moved down: the same byte */
			o++;
			p++;
		}
		ps->p = p;
		if (p >= end)
			return perr(ps, "unterminated string");
		c = (unsigned char)*p;
		if (c == '"')
			break;
		if (c < 0x20)
			return perr(ps, "control character in string");
		if (c == '\\') {
			int rc = parse_escape(ps, &o);

			if (rc)
				return rc;
			p = ps->p;
		} else {
			size_t n =
			    gpuq_utf8_len((const unsigned char *)p, (const unsigned char *)end);

			if (!n)
				return perr(ps, "invalid UTF-8");
			if (o != shadow(ps, p))
				memcpy(o, p, n);
			o += n;
			p += n;
		}
	}
	ps->p = p + 1; /* closing quote */
	*o = '\0';
	v->s = start;
	v->len = (uint32_t)(o - start);
	return GPUQ_OK;
}

/* The parser's hot path: a string of plain bytes only (most keys and
 * values), left in place in the arena with its closing quote made its NUL;
 * any other byte (an escape, UTF-8, a control character, the end) is the
 * slow path's, from the string's start. */
static inline int parse_string(parser_t *ps, jv_t *v)
{
	const char *s = ps->p + 1, *p = s, *end = ps->end;
	char *start;

	for (;;) {
		uint64_t hit;

		if (end - p < BLOCK) {
			while (p < end && plain_byte[(unsigned char)*p])
				p++;
			break;
		}
		hit = block_special(p);
		if (hit) {
			p += first_hit(hit);
			break;
		}
		p += BLOCK;
	}
	if (p >= end || *p != '"')
		return parse_string_slow(ps, v);
	start = shadow(ps, s);
	start[p - s] = '\0';
	v->s = start;
	v->len = (uint32_t)(p - s);
	ps->p = p + 1;
	return GPUQ_OK;
}

static bool digit(const parser_t *ps)
{
	return ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9';
}

static int parse_number(parser_t *ps, jv_t *v)
{
	const char *s = ps->p;

	if (*ps->p == '-')
		ps->p++;
	if (!digit(ps))
		return perr(ps, "bad number");
	if (*ps->p == '0')
		ps->p++;
	else
		while (digit(ps))
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		v->fraction = true;
		if (!digit(ps))
			return perr(ps, "bad number");
		while (digit(ps))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		v->fraction = true;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (!digit(ps))
			return perr(ps, "bad number");
		while (digit(ps))
			ps->p++;
	}
	v->len = (uint32_t)(ps->p - s);
	v->s = shadow(ps, s);
	*shadow(ps, ps->p) = '\0'; /* over the byte after it (the text's end: arena[len]) */
	return GPUQ_OK;
}

static int parse_literal(parser_t *ps, jv_t *v)
{
	/* by the first byte: one compare of the rest, not a search of three */
	static const char *const text[] = {['t'] = "true", ['f'] = "false", ['n'] = "null"};
	static const jv_type_t type[] = {['t'] = JV_TRUE, ['f'] = JV_FALSE, ['n'] = JV_NULL};
	unsigned char c = (unsigned char)*ps->p;
	size_t n;

	if (c >= sizeof(text) / sizeof(*text) || !text[c])
		return perr(ps, "unexpected character");
	n = c == 'f' ? 5 : 4;
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, text[c], n) != 0)
		return perr(ps, "unexpected character");
	ps->p += n;
	v->type = type[c];
	return GPUQ_OK;
}

/* The next byte that is not white space, or -1 at the end (ps->p there). */
static inline int peek(parser_t *ps)
{
	/* the apiserver's JSON is compact: one test for the common case */
	if (ps->p < ps->end && (unsigned char)*ps->p > ' ')
		return (unsigned char)*ps->p;
	skip_ws(ps);
	return ps->p < ps->end ? (unsigned char)*ps->p : -1;
}

/* One value at ps->p: a scalar, or an empty container left for the caller
 * to fill. */
static inline __attribute__((always_inline)) int parse_value(parser_t *ps, jv_t **out)
{
	int c = peek(ps);
	jv_t *v = NULL;

	if (c < 0)
		return perr(ps, "unexpected end of input");
	if (!room(ps))
		return perr(ps, "more values than counted");
	switch (c) {
	case '{':
		ps->p++;
		*out = node_new(ps, JV_OBJECT);
		return GPUQ_OK;
	case '[':
		ps->p++;
		*out = node_new(ps, JV_ARRAY);
		return GPUQ_OK;
	case '"':
		*out = v = node_new(ps, JV_STRING);
		return parse_string(ps, v);
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9':
		*out = v = node_new(ps, JV_NUMBER);
		return parse_number(ps, v);
	default:
		*out = v = node_new(ps, JV_NULL);
		return parse_literal(ps, v);
	}
}

typedef struct {
	jv_t *c;	   /* the open container */
	const jv_t **tail; /* where its next child is linked: its first, or the
			      last child's next */
	bool obj;	   /* c is an object */
	bool skipped;	   /* a member of c was left out (a comma follows it) */
} frame_t;

static frame_t frame_open(jv_t *c)
{
	return (frame_t){c, &c->first, c->type == JV_OBJECT, false};
}

static void link_child(frame_t *f, jv_t *v)
{
	*f->tail = v;
	f->tail = &v->next;
}

static bool is_container(const jv_t *v)
{
	return v->type == JV_OBJECT || v->type == JV_ARRAY;
}

/* The whole document: values and containers, iteratively (an explicit stack
 * of open containers, never deeper than JV_DEPTH_MAX). */
static int parse_tree(parser_t *ps, jv_t **root)
{
	frame_t stack[JV_DEPTH_MAX + 1];
	size_t depth = 0;
	jv_t *v = NULL;
	int rc;

	rc = parse_value(ps, root);
	if (rc)
		return rc;
	if (is_container(*root))
		stack[depth++] = frame_open(*root);
	while (depth) {
		frame_t *f = &stack[depth - 1];
		int c = peek(ps);

		if (c < 0)
			return perr(ps, "unexpected end of input");
		if (c == (f->obj ? '}' : ']')) {
			ps->p++;
			depth--;
			continue;
		}
		if (f->c->n || f->skipped) {
			if (c != ',')
				return perr(ps,
					    f->obj ? "expected ',' or '}'" : "expected ',' or ']'");
			ps->p++;
			if (f->obj)
				c = peek(ps);
		}
		if (f->obj) {
			jv_t *key;

			if (c != '"')
				return perr(ps, "expected a string key");
			if (!room(ps))
				return perr(ps, "more values than counted");
			key = node_new(ps, JV_STRING);
			rc = parse_string(ps, key);
			if (rc)
				return rc;
			if (peek(ps) != ':')
				return perr(ps, "expected ':'");
			ps->p++;
			if (ps->skip && ((c = peek(ps)) == '[' || c == '{') &&
			    skipped_key(ps->skip, key->s, key->len)) {
				ps->n_nodes--; /* the key, the last node made */
				rc = skip_container(ps, depth);
				if (rc)
					return rc;
				f->skipped = true;
				continue;
			}
			link_child(f, key);
		}
		rc = parse_value(ps, &v);
		if (rc)
			return rc;
		link_child(f, v);
		f->c->n++;
		if (is_container(v)) {
			if (depth >= JV_DEPTH_MAX)
				return perr(ps, "nested too deep");
			stack[depth++] = frame_open(v);
		}
	}
	skip_ws(ps);
	if (ps->p != ps->end)
		return perr(ps, "data after the JSON value");
	return GPUQ_OK;
}

/* One pass over the text with room for n values: the nodes, then the
 * text's copy and one byte for a NUL after it, in one allocation. */
static int parse_with(jv_doc_t *d, parser_t *ps, size_t len, size_t n)
{
	d->mem = malloc(n * sizeof(jv_t) + len + 1);
	if (!d->mem)
		return GPUQ_ENOMEM;
	ps->p = ps->buf;
	ps->nodes = (jv_t *)d->mem;
	ps->n_nodes = 0;
	ps->cap_nodes = n;
	ps->arena = d->mem + n * sizeof(jv_t);
	memcpy(ps->arena, ps->buf, len);
	ps->arena[len] = '\0';
	return parse_tree(ps, &d->root);
}

/* The values valid JSON of len bytes holds at most: each value but the
 * first owns the byte before it (a comma, a colon or its container's
 * opening bracket) and a byte of its own, (len + 1) / 2; one more for
 * margin. */
static size_t values_most(size_t len)
{
	size_t n = (len + 1) / 2 + 1;

	return n < JV_VALUES_MAX ? n : JV_VALUES_MAX;
}

static int parse_doc(jv_doc_t *d, const char *buf, size_t len, const skipset_t *skip, char *err,
		     size_t cap)
{
	parser_t ps = {.end = buf + len, .buf = buf, .err = err, .err_cap = cap, .skip = skip};
	size_t n_values = 0;
	int rc;

	memset(d, 0, sizeof(*d));
	err[0] = '\0';
	/* A document that parses within the caps parses in one pass, with room
	 * for values_most (untouched memory past the values it holds). Any
	 * other (not JSON, too deep, too many values, no memory) is parsed
	 * again the way every document was: the scan's caps first, then one
	 * pass with room for the values it counted, so its refusal is the same
	 * code and sentence at the same byte. */
	if (parse_with(d, &ps, len, values_most(len)) == GPUQ_OK)
		return GPUQ_OK;
	jv_doc_free(d);
	err[0] = '\0';
	if (scan(buf, len, JV_DEPTH_MAX, &n_values) > JV_DEPTH_MAX) {
		snprintf(err, cap, "JSON nested deeper than %d levels", JV_DEPTH_MAX);
		return GPUQ_ELIMIT;
	}
	if (n_values > JV_VALUES_MAX) {
		snprintf(err, cap, "more than %d JSON values", JV_VALUES_MAX);
		return GPUQ_ELIMIT;
	}
	rc = parse_with(d, &ps, len, n_values);
	if (rc) {
		char what[128];

		if (rc == GPUQ_ENOMEM) {
			jv_doc_free(d);
			err[0] = '\0';
			return rc;
		}
		gpuq_strlcpy(what, err[0] ? err : "syntax error", sizeof(what));
		snprintf(err, cap, "%s at byte %zu", what, (size_t)(ps.p - buf));
		jv_doc_free(d);
		return rc;
	}
	return GPUQ_OK;
}

int jv_doc_parse(jv_doc_t *d, const char *buf, size_t len, char *err, size_t cap)
{
	return parse_doc(d, buf, len, NULL, err, cap);
}

int jv_doc_parse_skipping(jv_doc_t *d, const char *buf, size_t len, const jv_key_t *skip, char *err,
			  size_t cap)
{
	skipset_t sk = {.keys = skip};

	if (!skip)
		return parse_doc(d, buf, len, NULL, err, cap);
	for (size_t i = 0; skip[i].s; i++) {
		if (i >= JV_SKIP_MAX || !skip[i].len || skip[i].len >= 32) {
			memset(d, 0, sizeof(*d));
			snprintf(
			    err, cap,
			    "skip list: key %zu (\"%.40s\") is not of 1-31 bytes or past %d keys",
			    i, skip[i].s, JV_SKIP_MAX);
			return GPUQ_EINVAL;
		}
		sk.lens[skip[i].s[0] & 31] |= 1u << skip[i].len;
	}
	return parse_doc(d, buf, len, &sk, err, cap);
}

void jv_doc_free(jv_doc_t *d)
{
	free(d->mem);
	d->mem = NULL;
	d->root = NULL;
}

const jv_t *jv_get(const jv_t *obj, const char *key)
{
	if (!obj || obj->type != JV_OBJECT)
		return NULL;
	for (const jv_t *k = obj->first; k; k = k->next->next)
		if (k->s[0] == key[0] && !strcmp(k->s, key)) /* most keys differ at once */
			return k->next;
	return NULL;
}

const jv_t *jv_at(const jv_t *arr, size_t i)
{
	const jv_t *v;

	if (!arr || arr->type != JV_ARRAY || i >= arr->n)
		return NULL;
	for (v = arr->first; v && i; i--)
		v = v->next;
	return v;
}

bool jv_int(const jv_t *v, int64_t *out)
{
	int64_t n = 0;
	const char *s;
	bool neg;

	if (!v || v->type != JV_NUMBER || v->fraction)
		return false;
	s = v->s;
	neg = *s == '-';
	if (neg)
		s++;
	for (; *s; s++) {
		int d = *s - '0';

		if (n > (INT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*out = neg ? -n : n;
	return true;
}

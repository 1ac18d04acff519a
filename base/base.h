/*
 * base: the error codes, diagnostics and logging every gpuq module shares,
 * and a few small tools several need (base64, CRC-32C, FNV-1a, UTF-8, RFC
 * 3339 times, JSON strings, the monotonic clock, the published-snapshot
 * slot): one of each, every module's.
 *
 * One error enum for the whole project: 0 is success, every failure is a
 * negative GPUQ_E* code, and gpuq_strerror() names it. Functions return the
 * code and hand results back through out-parameters. When a failure comes
 * from bad input (a peer's JSON, a manifest, a CLI flag), the function also
 * writes a human sentence naming the field and the value into a caller-owned
 * gpuq_diag_t, so the caller can deny, refuse a reload or print it as is.
 * The design decision that matters: diagnostics are fixed-size caller-owned
 * buffers, so reporting an error can never itself fail or allocate.
 */
#ifndef GPUQ_BASE_H
#define GPUQ_BASE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef enum {
	GPUQ_OK = 0,
	GPUQ_ENOMEM = -1,     /* allocation failed */
	GPUQ_EINVAL = -2,     /* bad input: see the diagnostic for field and value */
	GPUQ_ERANGE = -3,     /* a number is out of its allowed range */
	GPUQ_ENOTFOUND = -4,  /* a named object does not exist */
	GPUQ_EEXIST = -5,     /* an object with that name already exists */
	GPUQ_ELIMIT = -6,     /* a stated cap (size, depth, count) was hit */
	GPUQ_EIO = -7,	      /* a file or socket operation failed */
	GPUQ_ETLS = -8,	      /* TLS / certificate failure */
	GPUQ_ESTORE = -9,     /* the state store failed */
	GPUQ_EHTTP = -10,     /* an HTTP exchange failed */
	GPUQ_ECORRUPT = -11,  /* stored or received data fails its own checks */
	GPUQ_EDENIED = -12,   /* a policy refused the request */
	GPUQ_EAGAIN = -13,    /* try again later (busy, not ready) */
	GPUQ_ECONFLICT = -14, /* the object changed under us (HTTP 409, a failed
				 resourceVersion precondition): read it again */
	GPUQ_EGONE = -15,     /* the resourceVersion is too old (HTTP 410): relist */
	GPUQ_EFENCED = -16,   /* not sent: the Lease is not held (kube.h, "Fencing") */
	GPUQ_ESTOPPED = -17,  /* not sent, or cut off: the daemon is stopping */
} gpuq_err_t;

/* The name of an error code as a static string; never NULL. */
const char *gpuq_strerror(int rc);

/* Diagnostic text for bad input; 1 KiB fits the longest apiserver-style
 * message gpuq writes (a quota denial naming several resources). */
#define GPUQ_DIAG_MAX 1024
typedef struct {
	char msg[GPUQ_DIAG_MAX]; /* NUL-terminated sentence, "" when unset */
} gpuq_diag_t;

/* Write a printf-style message into diag (truncated to fit). diag may be
 * NULL, in which case nothing is written. Returns rc unchanged so callers can
 * write `return gpuq_diag_set(d, GPUQ_EINVAL, "...")`. */
int gpuq_diag_set(gpuq_diag_t *diag, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the existing message with a printf-style context ("file x.yaml:
 * document 2: " + old message). No-op when diag is NULL. */
void gpuq_diag_prefix(gpuq_diag_t *diag, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

typedef enum {
	GPUQ_LOG_DEBUG = 0,
	GPUQ_LOG_INFO = 1,
	GPUQ_LOG_WARN = 2,
	GPUQ_LOG_ERROR = 3,
} gpuq_log_level_t;

/* Set the minimum level written (process-wide, set once by main before any
 * thread starts; the default is INFO). */
void gpuq_log_set_level(gpuq_log_level_t level);

/* Write one line to stderr: `<time> <level> <module>: <message>`, the time
 * in RFC 3339, UTC, to the millisecond (`2026-11-26T16:08:33.123Z info
 * controller: released Job team-a/j1 ...`; the wall clock, read here: the
 * only clock base/ reads). Thread-safe (one write(2) per line). Cores
 * (quota, queue, fairshare) never log. */
void gpuq_log(gpuq_log_level_t level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Bounded copy: copies at most cap-1 bytes and always NUL-terminates.
 * Returns GPUQ_ELIMIT when src did not fit (dst then holds the prefix). */
int gpuq_strlcpy(char *dst, const char *src, size_t cap);

/* a, b and c one after the other into dst, cut and NUL-terminated as
 * snprintf(dst, cap, "%s%s%s", a, b, c) would: the field paths and JSON
 * pointers the admission path writes per review, without a format parse.
 * cap > 0. */
void gpuq_strjoin(char *dst, size_t cap, const char *a, const char *b, const char *c);

/* v in decimal into out, NUL-terminated, as snprintf("%" PRIu64) writes
 * it; returns the length. For indexes in paths built per review. */
#define GPUQ_U64_TEXT_MAX 21 /* UINT64_MAX's 20 digits and a NUL */
size_t gpuq_u64_text(uint64_t v, char out[GPUQ_U64_TEXT_MAX]);

/* Parse a duration: "250" or "250ms" (milliseconds), "1.5s", "2m", "1h"
 * (fractions down to 1 ms). GPUQ_EINVAL (bad form, finer than 1 ms) or
 * GPUQ_ERANGE (over GPUQ_DURATION_MAX_MS) with the value in diag. */
#define GPUQ_DURATION_MAX_MS (1000LL * 86400 * 365 * 10) /* 10 years */
int gpuq_duration_parse(const char *s, int64_t *out_ms, gpuq_diag_t *diag);

/* base64, standard alphabet, '=' padded (RFC 4648). Encode src[0..n) into
 * dst, which holds at least GPUQ_BASE64_LEN(n) bytes; returns the length
 * written (no NUL). */
#define GPUQ_BASE64_LEN(n) (((n) + 2) / 3 * 4)
size_t gpuq_base64_encode(const void *src, size_t n, char *dst);

/* Decode s (as Go's StdEncoding writes it: '=' padding only at the end;
 * line breaks and blanks ignored) into a new NUL-terminated buffer *out of
 * *len bytes (caller frees). GPUQ_EINVAL when s is not base64, GPUQ_ELIMIT
 * when s is longer than 2 * max_out or decodes to more than max_out bytes,
 * GPUQ_ENOMEM. */
int gpuq_base64_decode(const char *s, size_t max_out, char **out, size_t *len);

/* Clock clk's time ms milliseconds from now (ms >= 0): a deadline for
 * pthread_cond_timedwait and the like. */
struct timespec gpuq_clock_after_ms(clockid_t clk, int64_t ms);
/* Milliseconds of CLOCK_MONOTONIC (for durations, never for dates): gpuq's
 * one monotonic clock, every thread's. The pure cores (quota/, queue/,
 * fairshare/) never call it: `now` is their caller's (scripts/arrows.py
 * refuses a clock read there). */
int64_t gpuq_mono_ms(void);
/* The same in nanoseconds, for short durations (metrics). */
uint64_t gpuq_mono_ns(void);

/* CRC-32C (Castagnoli, as iSCSI and ext4 use it) of p[0..n), continuing
 * from crc (0 to start): gpuq_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t gpuq_crc32c(uint32_t crc, const void *p, size_t n);

/* A comparison of two elements, as qsort_r takes it. */
typedef int gpuq_cmp_fn(const void *a, const void *b, void *ctx);

/* Sort ids v[0..n) by cmp, stably, following the order already there
 * (base/sort.c): n - 1 comparisons when v comes sorted, about n log2(r)
 * for r ascending runs. GPUQ_OK, or GPUQ_ENOMEM (v untouched). */
int gpuq_sort_u32(uint32_t *v, size_t n, gpuq_cmp_fn *cmp, void *ctx);

/* FNV-1a, 64 bits: gpuq's one hash for maps, fingerprints and digests
 * (not for anything a peer could aim collisions at). Fold p[0..n) into h:
 * start from GPUQ_FNV1A_BASIS, the function's offset basis
 * (gpuq_fnv1a(GPUQ_FNV1A_BASIS, "a", 1) == 0xaf63dc4c8601ec8c), or from
 * GPUQ_FNV1A_SEED, the start most of gpuq's hashes were written with (the
 * basis's decimal digits less the last one: 1469598103934665603). The seed
 * hashes as well; it stays where values are kept across runs (a simulator
 * state dir's trace hash, policy fingerprints); the controller's maps, the
 * store's digest and new code start from the basis. Inline: the
 * controller's maps hash every key they look up. */
#define GPUQ_FNV1A_BASIS 0xcbf29ce484222325ULL
#define GPUQ_FNV1A_SEED 1469598103934665603ULL
#define GPUQ_FNV1A_PRIME 0x100000001b3ULL
static inline uint64_t gpuq_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= GPUQ_FNV1A_PRIME;
	}
	return h;
}

/* gpuq_fnv1a over the bytes of the string s (not its NUL). */
static inline uint64_t gpuq_fnv1a_str(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= GPUQ_FNV1A_PRIME;
	}
	return h;
}

/* FNV-1a, 32 bits, for the cores' open-addressed tables (queue/, ledger/):
 * fold p[0..n) into h, starting from GPUQ_FNV1A32_BASIS
 * (gpuq_fnv1a32(GPUQ_FNV1A32_BASIS, "a", 1) == 0xe40c292c). */
#define GPUQ_FNV1A32_BASIS 2166136261u
#define GPUQ_FNV1A32_PRIME 16777619u
static inline uint32_t gpuq_fnv1a32(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= GPUQ_FNV1A32_PRIME;
	}
	return h;
}

/* gpuq_fnv1a32 over the bytes of the string s (not its NUL). */
static inline uint32_t gpuq_fnv1a32_str(uint32_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= GPUQ_FNV1A32_PRIME;
	}
	return h;
}

/* Length of the valid UTF-8 sequence at p (1..4, p < end), or 0 when
 * invalid (overlong forms, surrogates, above U+10FFFF, truncated). Inline:
 * the review reader's string loop calls it per byte. */
static inline size_t gpuq_utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n;
	unsigned long cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Whether s[0..n) is valid UTF-8 (gpuq_utf8_len over every sequence). */
bool gpuq_utf8_valid(const char *s, size_t n);

/* ---- Times and JSON strings (text.c) ---- */

/* Days in month m (1..12) of year y (proleptic Gregorian); 0 for a month
 * out of range. */
int gpuq_days_in_month(int64_t y, int m);

/* UTC y-mo-d h:mi:s into ms since the epoch: GPUQ_EINVAL for a field out of
 * range (a year outside 0..9999, a day the month has not: 2024-02-30,
 * 2023-02-29; s may be 60, a leap second, read as the next minute's 0). */
int gpuq_time_from_civil(int64_t y, int mo, int d, int h, int mi, int s, int64_t *ms);

/* RFC 3339 ("2026-11-23T10:00:00Z", "...T10:00:00.123456+05:30"; 'T' and
 * 'Z' in either case; a fraction of any length, cut to the millisecond; an
 * offset up to +-23:59) into ms since the epoch. GPUQ_EINVAL for anything
 * else, an impossible date included. Pure: no clock, no locale, no tz. */
int gpuq_time_parse(const char *s, int64_t *ms);

/* What gpuq_time_format writes: Kubernetes' metav1.Time (seconds), the
 * log's milliseconds, MicroTime's microseconds, or ISO 8601's basic form
 * (a file name's stamp: no separators). */
typedef enum {
	GPUQ_TIME_SECONDS, /* 2026-11-23T10:00:00Z (the ms cut) */
	GPUQ_TIME_MILLIS,  /* 2026-11-23T10:00:00.123Z */
	GPUQ_TIME_MICROS,  /* 2026-11-23T10:00:00.123000Z */
	GPUQ_TIME_BASIC,   /* 20261123T100000Z */
} gpuq_time_form_t;

/* The years written: four digits, 0000 to 9999. */
#define GPUQ_TIME_MIN_MS (-62167219200000LL) /* 0000-01-01T00:00:00Z */
#define GPUQ_TIME_MAX_MS 253402300799999LL   /* 9999-12-31T23:59:59.999Z */
/* Room for any form and its NUL. */
#define GPUQ_TIME_TEXT_MAX 32

/* ms since the epoch in UTC, in form, into out: the length written, or 0
 * and "" when it does not fit cap or ms is outside GPUQ_TIME_MIN_MS ..
 * GPUQ_TIME_MAX_MS (cap 0: nothing written). Pure. */
size_t gpuq_time_format(int64_t ms, gpuq_time_form_t form, char *out, size_t cap);

/* Where gpuq_json_escape writes: append p[0..n) to `to`. */
typedef void gpuq_put_fn(void *to, const char *p, size_t n);

/* s[0..n) as the inside of a JSON string (no quotes), in pieces to put:
 * '"' and '\' escaped, \b \f \n \r \t, other control characters as
 * \u00xx, valid UTF-8 as it is, each byte of no valid sequence as
 * \ufffd (as Go's encoding/json writes it), so the output is always valid
 * JSON text. NULs inside s[0..n) are escaped too. */
void gpuq_json_escape(const char *s, size_t n, gpuq_put_fn *put, void *to);

/* How many bytes at the start of s[0..n) gpuq_json_escape writes as they
 * are (printable ASCII but '"' and '\\'): a writer copies that run itself
 * and hands only the rest to gpuq_json_escape. Pure. */
size_t gpuq_json_plain_len(const char *s, size_t n);

/* A gpuq_put_fn writing to the FILE * file (its errors left in ferror). */
void gpuq_put_file(void *file, const char *p, size_t n);

/* The NUL-terminated s as a quoted JSON string on out (NULL: ""). */
void gpuq_json_fputs(FILE *out, const char *s);

/* Loud abort for a broken invariant, with file:line. Never for bad input. */
#define GPUQ_ASSERT(cond)                                                                          \
	do {                                                                                       \
		if (!(cond))                                                                       \
			gpuq_abort(__FILE__, __LINE__, #cond);                                     \
	} while (0)
_Noreturn void gpuq_abort(const char *file, int line, const char *what);

/* ---- A published snapshot (publish.c) ----
 *
 * One immutable, reference-counted snapshot that a writer thread replaces
 * now and then and any thread reads: the queue metrics' and the web view's
 * (a scrape or a request never waits on the controller). The lock is held
 * for a pointer copy only; the old snapshot's reference is dropped outside
 * it, so a reader still rendering the old one frees it when done. A reader
 * may also wait for a newer one (gpuq_pub_wait). */
typedef struct {
	pthread_mutex_t lock;	   /* guards snap, held for a pointer copy */
	pthread_cond_t changed;	   /* broadcast (under lock) at each swap; CLOCK_MONOTONIC */
	void *snap;		   /* the published snapshot (one reference), or NULL */
	void (*ref)(void *snap);   /* take another reference (atomic) */
	void (*unref)(void *snap); /* drop one; the last frees it; NULL is a no-op */
} gpuq_pub_t;

/* Nothing published yet; ref and unref work on the snapshot type. GPUQ_OK
 * or GPUQ_ENOMEM (no mutex). */
int gpuq_pub_init(gpuq_pub_t *p, void (*ref)(void *snap), void (*unref)(void *snap));

/* Drop the published snapshot's reference and the lock. No reader may be
 * in a call. */
void gpuq_pub_deinit(gpuq_pub_t *p);

/* Publish snap (its reference moves in; NULL: none). Any thread. */
void gpuq_pub_swap(gpuq_pub_t *p, void *snap);

/* The published snapshot with a new reference the caller drops, or NULL.
 * Any thread. */
void *gpuq_pub_get(gpuq_pub_t *p);

/* Whether a snapshot is published now. Any thread. */
bool gpuq_pub_has(gpuq_pub_t *p);

/* Wait while the published snapshot is stale (stale(snap, now), now in
 * monotonic ms; called under the lock, it must not block) until a swap
 * publishes one that is not, none is published, or the monotonic
 * deadline_ms passes. Any thread but the publisher's. */
void gpuq_pub_wait(gpuq_pub_t *p, bool (*stale)(const void *snap, int64_t now_ms),
		   int64_t deadline_ms);

#endif

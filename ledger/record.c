/*
 * ledger/record.c: the ledger's records: keys, the changed set, encoding,
 * applying, and a clone through them. See ledger.h for the layout.
 */
#include "ledger/internal.h"

#include "base/bytes.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_VERSION 1
#define OFFSET_BINARY ((uint64_t)1 << 63) /* hour keys sort as numbers */

int ledger_key(char kind, const ledger_t *l, const void *obj, char *out, size_t cap)
{
	int n;

	switch (kind) {
	case LEDGER_K_META:
		n = snprintf(out, cap, "0meta");
		break;
	case LEDGER_K_SERIES:
		n = snprintf(out, cap, "1series/%08" PRIx32,
			     (uint32_t)((const series_t *)obj - l->series));
		break;
	case LEDGER_K_HOUR:
		n = snprintf(out, cap, "2hour/%016" PRIx64,
			     (uint64_t)((const hour_t *)obj)->h ^ OFFSET_BINARY);
		break;
	default:
		n = snprintf(out, cap, "3open/%s", ((const open_t *)obj)->uid);
		break;
	}
	return n > 0 && (size_t)n < cap ? GPUQ_OK : GPUQ_ELIMIT;
}

static void push(ledger_t *l, char *key)
{
	if (key && l->n_dirty == l->cap_dirty) {
		size_t cap = l->cap_dirty ? l->cap_dirty * 2 : 16;
		char **v = realloc(l->dirty, cap * sizeof(*v));

		if (v) {
			l->dirty = v;
			l->cap_dirty = cap;
		}
	}
	if (!key || l->n_dirty == l->cap_dirty) {
		free(key);
		l->dirty_lost = true; /* the next iteration says GPUQ_ENOMEM */
		return;
	}
	l->dirty[l->n_dirty++] = key;
}

void ledger_mark_deleted(ledger_t *l, char *key)
{
	push(l, key);
}

/* The dirty flag of a live object, NULL for none. */
static bool *flag_of(ledger_t *l, char kind, const void *obj)
{
	switch (kind) {
	case LEDGER_K_META:
		return &l->meta_dirty;
	case LEDGER_K_SERIES:
		return &((series_t *)(uintptr_t)obj)->dirty;
	case LEDGER_K_HOUR:
		return &((hour_t *)(uintptr_t)obj)->dirty;
	default:
		return &((open_t *)(uintptr_t)obj)->dirty;
	}
}

void ledger_mark(ledger_t *l, char kind, const void *obj)
{
	bool *f = flag_of(l, kind, obj);
	char key[LEDGER_KEY_MAX];

	if (*f)
		return;
	*f = true;
	if (ledger_key(kind, l, obj, key, sizeof(key)))
		return; /* no such key: ledger_open refuses uids that long */
	push(l, strdup(key));
}

int ledger_dirty_next(const ledger_t *l, ledger_dirty_iter_t *it, const uint8_t **key, size_t *klen)
{
	if (l->dirty_lost && it->pos == 0)
		return GPUQ_ENOMEM;
	if (it->pos >= l->n_dirty)
		return GPUQ_ENOTFOUND;
	*key = (const uint8_t *)l->dirty[it->pos];
	*klen = strlen(l->dirty[it->pos]);
	it->pos++;
	return GPUQ_OK;
}

size_t ledger_dirty_count(const ledger_t *l)
{
	return l->n_dirty;
}

/* Clear the flag of the live object a changed key names, if any. */
static void unflag(ledger_t *l, const char *key)
{
	uint32_t i;

	if (!strcmp(key, "0meta")) {
		l->meta_dirty = false;
	} else if (!strncmp(key, "1series/", 8)) {
		i = (uint32_t)strtoul(key + 8, NULL, 16);
		if (i < l->n_series)
			l->series[i].dirty = false;
	} else if (!strncmp(key, "2hour/", 6)) {
		int64_t h = (int64_t)(strtoull(key + 6, NULL, 16) ^ OFFSET_BINARY);
		if (ledger_hour_find(l, h, &i) == GPUQ_OK)
			l->hours[i].dirty = false;
	} else if (ledger_open_find(l, key + 6, &i) == GPUQ_OK) {
		l->opens[i].dirty = false;
	}
}

void ledger_dirty_clear(ledger_t *l)
{
	if (l->dirty_lost) { /* flags of lost keys: clear them all */
		l->meta_dirty = false;
		for (uint32_t i = 0; i < l->n_series; i++)
			l->series[i].dirty = false;
		for (uint32_t i = 0; i < l->n_hours; i++)
			l->hours[i].dirty = false;
		for (uint32_t i = 0; i < l->n_open; i++)
			l->opens[i].dirty = false;
	}
	for (size_t i = 0; i < l->n_dirty; i++) {
		unflag(l, l->dirty[i]);
		free(l->dirty[i]);
	}
	l->n_dirty = 0;
	l->dirty_lost = false;
}

int ledger_dirty_all(ledger_t *l)
{
	ledger_dirty_clear(l);
	ledger_mark(l, LEDGER_K_META, NULL);
	for (uint32_t i = 0; i < l->n_series; i++)
		ledger_mark(l, LEDGER_K_SERIES, &l->series[i]);
	for (uint32_t i = 0; i < l->n_hours; i++)
		ledger_mark(l, LEDGER_K_HOUR, &l->hours[i]);
	for (uint32_t i = 0; i < l->n_open; i++)
		ledger_mark(l, LEDGER_K_OPEN, &l->opens[i]);
	return l->dirty_lost ? GPUQ_ENOMEM : GPUQ_OK;
}

/* ---- encoding ---- */

typedef gpuq_wr_t wr_t;

/* Find the object a key names: *kind and *idx. GPUQ_ENOTFOUND. */
static int key_find(const ledger_t *l, const char *key, char *kind, uint32_t *idx)
{
	char *end;

	if (!strcmp(key, "0meta")) {
		*kind = LEDGER_K_META;
		return GPUQ_OK;
	}
	if (!strncmp(key, "1series/", 8) && strlen(key) == 16) {
		unsigned long v = strtoul(key + 8, &end, 16);
		*kind = LEDGER_K_SERIES;
		*idx = (uint32_t)v;
		return !*end && v < l->n_series ? GPUQ_OK : GPUQ_ENOTFOUND;
	}
	if (!strncmp(key, "2hour/", 6) && strlen(key) == 22) {
		uint64_t v = strtoull(key + 6, &end, 16);
		*kind = LEDGER_K_HOUR;
		if (*end)
			return GPUQ_ENOTFOUND;
		return ledger_hour_find(l, (int64_t)(v ^ OFFSET_BINARY), idx);
	}
	if (!strncmp(key, "3open/", 6) && key[6]) {
		*kind = LEDGER_K_OPEN;
		return ledger_open_find(l, key + 6, idx);
	}
	return GPUQ_ENOTFOUND;
}

static void encode_obj(const ledger_t *l, char kind, uint32_t i, wr_t *w)
{
	gpuq_put_u8(w, REC_VERSION);
	if (kind == LEDGER_K_META) {
		gpuq_put_u64(w, (uint64_t)l->clock);
		gpuq_put_f64(w, l->dropped_acc);
		gpuq_put_u64(w, (uint64_t)l->kept_from);
		gpuq_put_u64(w, l->unrecorded);
	} else if (kind == LEDGER_K_SERIES) {
		const series_t *s = &l->series[i];
		gpuq_put_str(w, s->lq), gpuq_put_str(w, s->cq), gpuq_put_str(w, s->flavor),
		    gpuq_put_str(w, s->res);
	} else if (kind == LEDGER_K_HOUR) {
		const hour_t *h = &l->hours[i];
		gpuq_put_u32(w, h->n);
		for (uint32_t j = 0; j < h->n; j++) {
			gpuq_put_u32(w, h->c[j].s);
			gpuq_put_f64(w, h->c[j].nom);
			gpuq_put_f64(w, h->c[j].bor);
		}
	} else {
		const open_t *o = &l->opens[i];
		gpuq_put_u64(w, (uint64_t)o->start);
		gpuq_put_u32(w, o->n);
		for (uint32_t j = 0; j < o->n; j++) {
			gpuq_put_u32(w, o->p[j].s);
			gpuq_put_u64(w, (uint64_t)o->p[j].nom);
			gpuq_put_u64(w, (uint64_t)o->p[j].bor);
		}
	}
}

int ledger_record_encode(const ledger_t *l, const uint8_t *key, size_t klen, uint8_t *buf,
			 size_t cap, size_t *len)
{
	char k[LEDGER_KEY_MAX + 1], kind;
	uint32_t idx = 0;
	wr_t w = {buf, cap, 0, false};

	if (klen == 0 || klen > LEDGER_KEY_MAX || memchr(key, 0, klen))
		return GPUQ_ENOTFOUND;
	memcpy(k, key, klen);
	k[klen] = '\0';
	if (key_find(l, k, &kind, &idx))
		return GPUQ_ENOTFOUND;
	encode_obj(l, kind, idx, &w);
	*len = w.len;
	return w.len <= cap ? GPUQ_OK : GPUQ_ELIMIT;
}

/* ---- applying ---- */

typedef gpuq_rd_t rd_t;

static void get_str(rd_t *r, char out[LEDGER_NAME_MAX + 1])
{
	size_t n = gpuq_get_len16(r);

	if (n == 0 || n > LEDGER_NAME_MAX) {
		r->bad = true;
		out[0] = '\0';
		return;
	}
	gpuq_get(r, out, n);
	out[n] = '\0';
	if (!r->bad && memchr(out, 0, n))
		r->bad = true;
}

static int corrupt(gpuq_diag_t *diag, const char *what)
{
	return gpuq_diag_set(diag, GPUQ_ECORRUPT, "usage record: %s", what);
}

static bool amount_ok(double d)
{
	return isfinite(d) && d >= 0.0;
}

static int apply_meta(ledger_t *l, rd_t *r, gpuq_diag_t *diag)
{
	int64_t clock = (int64_t)gpuq_get_u64(r), kept;
	double dropped = gpuq_get_f64(r);

	kept = (int64_t)gpuq_get_u64(r);
	l->unrecorded = gpuq_get_u64(r);
	if (r->bad || r->off != r->n || !amount_ok(dropped))
		return corrupt(diag, "meta: bad length or tally");
	l->clock = clock;
	l->dropped_acc = dropped;
	l->kept_from = kept;
	return GPUQ_OK;
}

static int apply_series(ledger_t *l, const char *key, rd_t *r, gpuq_diag_t *diag)
{
	char n[4][LEDGER_NAME_MAX + 1], *end;
	unsigned long id = strtoul(key + 8, &end, 16);
	uint32_t got;
	int rc;

	for (int i = 0; i < 4; i++)
		get_str(r, n[i]);
	if (r->bad || r->off != r->n || *end || strlen(key) != 16)
		return corrupt(diag, "series: bad key, length or name");
	if (id >= LEDGER_SERIES_MAX)
		return corrupt(diag, "series id past LEDGER_SERIES_MAX");
	if (id < l->n_series && l->series[id].lq)
		return corrupt(diag, "series: twice");
	if (ledger_series_find(l, n[0], n[1], n[2], n[3], &got) == GPUQ_OK)
		return corrupt(diag, "series: the same names under two ids");
	rc = ledger_series_put(l, (uint32_t)id, n[0], n[1], n[2], n[3]);
	return rc ? gpuq_diag_set(diag, rc, "usage record: out of memory") : GPUQ_OK;
}

static int apply_hour(ledger_t *l, const char *key, rd_t *r, gpuq_diag_t *diag)
{
	char *end;
	int64_t h = (int64_t)(strtoull(key + 6, &end, 16) ^ OFFSET_BINARY);
	uint32_t n = gpuq_get_u32(r), idx;
	cell_t *c;

	if (r->bad || *end || strlen(key) != 22 || (uint64_t)n * 20 != r->n - r->off)
		return corrupt(diag, "hour: bad key or length");
	if (ledger_hour_find(l, h, &idx) == GPUQ_OK || l->n_hours >= LEDGER_HOURS_MAX)
		return corrupt(diag, "hour: twice, or more hours than LEDGER_HOURS_MAX");
	c = calloc(n ? n : 1, sizeof(*c));
	if (!c)
		return gpuq_diag_set(diag, GPUQ_ENOMEM, "usage record: out of memory");
	for (uint32_t i = 0; i < n; i++) {
		c[i].s = gpuq_get_u32(r);
		c[i].nom = gpuq_get_f64(r);
		c[i].bor = gpuq_get_f64(r);
		if (c[i].s >= LEDGER_SERIES_MAX || (i && c[i].s <= c[i - 1].s) ||
		    !amount_ok(c[i].nom) || !amount_ok(c[i].bor)) {
			free(c);
			return corrupt(diag, "hour: a cell's series or amount out of range");
		}
	}
	if (ledger_hour_insert(l, h, &idx)) {
		free(c);
		return gpuq_diag_set(diag, GPUQ_ENOMEM, "usage record: out of memory");
	}
	l->hours[idx].c = c;
	l->hours[idx].n = l->hours[idx].cap = n;
	return GPUQ_OK;
}

static int apply_open(ledger_t *l, const char *key, rd_t *r, gpuq_diag_t *diag)
{
	open_t o = {0};
	uint32_t idx;
	int rc;

	o.start = (int64_t)gpuq_get_u64(r);
	o.n = gpuq_get_u32(r);
	if (r->bad || o.n > LEDGER_PARTS_MAX || (uint64_t)o.n * 20 != r->n - r->off)
		return corrupt(diag, "open interval: bad length or part count");
	if (ledger_open_find(l, key + 6, &idx) == GPUQ_OK)
		return corrupt(diag, "open interval: twice");
	o.p = calloc(o.n ? o.n : 1, sizeof(*o.p));
	o.uid = strdup(key + 6);
	rc = o.p && o.uid ? GPUQ_OK : GPUQ_ENOMEM;
	for (uint32_t i = 0; !rc && i < o.n; i++) {
		o.p[i].s = gpuq_get_u32(r);
		o.p[i].nom = (int64_t)gpuq_get_u64(r);
		o.p[i].bor = (int64_t)gpuq_get_u64(r);
		if (o.p[i].s >= LEDGER_SERIES_MAX || o.p[i].nom < 0 || o.p[i].bor < 0)
			rc = GPUQ_ECORRUPT;
	}
	if (!rc)
		rc = ledger_open_insert(l, &o);
	if (rc) {
		free(o.p);
		free(o.uid);
		if (rc == GPUQ_ECORRUPT)
			return corrupt(diag,
				       "open interval: a part's series or amount out of range");
		return gpuq_diag_set(diag, rc, "usage record: %s", gpuq_strerror(rc));
	}
	return GPUQ_OK;
}

int ledger_record_apply(ledger_t *l, const uint8_t *key, size_t klen, const uint8_t *val,
			size_t vlen, gpuq_diag_t *diag)
{
	char k[LEDGER_KEY_MAX + 1];
	rd_t r = {val, vlen, 0, false, false};
	uint8_t ver = 0;

	if (klen == 0 || klen > LEDGER_KEY_MAX || memchr(key, 0, klen))
		return corrupt(diag, "bad key");
	memcpy(k, key, klen);
	k[klen] = '\0';
	gpuq_get(&r, &ver, 1);
	if (ver != REC_VERSION)
		return corrupt(diag, "unknown encoding version");
	if (!strcmp(k, "0meta"))
		return apply_meta(l, &r, diag);
	if (!strncmp(k, "1series/", 8))
		return apply_series(l, k, &r, diag);
	if (!strncmp(k, "2hour/", 6))
		return apply_hour(l, k, &r, diag);
	if (!strncmp(k, "3open/", 6) && k[6])
		return apply_open(l, k, &r, diag);
	return corrupt(diag, "unknown key");
}

/* ---- clone ---- */

static int copy_one(const ledger_t *src, ledger_t *dst, char kind, const void *obj)
{
	char key[LEDGER_KEY_MAX];
	uint8_t stack[1024], *buf = stack;
	size_t len = 0;
	int rc = ledger_key(kind, src, obj, key, sizeof(key));

	if (!rc)
		rc = ledger_record_encode(src, (const uint8_t *)key, strlen(key), stack,
					  sizeof(stack), &len);
	if (rc == GPUQ_ELIMIT && len > sizeof(stack)) {
		buf = malloc(len);
		rc = buf ? ledger_record_encode(src, (const uint8_t *)key, strlen(key), buf, len,
						&len)
			 : GPUQ_ENOMEM;
	}
	if (!rc)
		rc = ledger_record_apply(dst, (const uint8_t *)key, strlen(key), buf, len, NULL);
	if (buf != stack)
		free(buf);
	return rc;
}

int ledger_clone(const ledger_t *src, ledger_t **out)
{
	int rc = ledger_create(out);

	if (!rc)
		rc = copy_one(src, *out, LEDGER_K_META, NULL);
	for (uint32_t i = 0; !rc && i < src->n_series; i++)
		rc = copy_one(src, *out, LEDGER_K_SERIES, &src->series[i]);
	for (uint32_t i = 0; !rc && i < src->n_hours; i++)
		rc = copy_one(src, *out, LEDGER_K_HOUR, &src->hours[i]);
	for (uint32_t i = 0; !rc && i < src->n_open; i++)
		rc = copy_one(src, *out, LEDGER_K_OPEN, &src->opens[i]);
	if (!rc)
		rc = ledger_restore_done(*out, NULL);
	if (rc) {
		ledger_destroy(*out);
		*out = NULL;
		return rc == GPUQ_ECORRUPT ? GPUQ_ENOMEM : rc;
	}
	return GPUQ_OK;
}

int ledger_restore_done(const ledger_t *l, gpuq_diag_t *diag)
{
	for (uint32_t i = 0; i < l->n_series; i++)
		if (!l->series[i].lq)
			return gpuq_diag_set(diag, GPUQ_ECORRUPT,
					     "usage records: series %" PRIu32 " missing", i);
	for (uint32_t i = 0; i < l->n_hours; i++)
		for (uint32_t j = 0; j < l->hours[i].n; j++)
			if (l->hours[i].c[j].s >= l->n_series)
				return gpuq_diag_set(diag, GPUQ_ECORRUPT,
						     "usage records: an hour names series %" PRIu32
						     ", which has no record",
						     l->hours[i].c[j].s);
	for (uint32_t i = 0; i < l->n_open; i++)
		for (uint32_t j = 0; j < l->opens[i].n; j++)
			if (l->opens[i].p[j].s >= l->n_series)
				return gpuq_diag_set(
				    diag, GPUQ_ECORRUPT,
				    "usage records: workload %s names series %" PRIu32
				    ", which has no record",
				    l->opens[i].uid, l->opens[i].p[j].s);
	return GPUQ_OK;
}

/*
 * ledger/checkpoint.c: the ledger as checkpoint parts (encode) and a part
 * merged into a ledger without counting anything twice (merge). See
 * ledger.h ("Checkpoints") for the layout and the merge rule.
 */
#include "ledger/internal.h"

#include "base/bytes.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "GQLC"
#define MAGIC_LEN 4
#define HEADER_BYTES (MAGIC_LEN + 1 + 8 + 4 + 4) /* magic, version, at, two counts */
#define PART_MIN 64				 /* smallest part_max taken */
#define VARINT_MAX 10				 /* bytes of a LEB128 uint64 */
#define TIME_MAX ((int64_t)1 << 62)		 /* the core's QUEUE_TIME_MAX */
#define HOUR_ABS_MAX (TIME_MAX / LEDGER_HOUR_MS) /* hour numbers within the time range */

typedef gpuq_wr_t wr_t;
typedef gpuq_rd_t rd_t;

static int64_t hour_of(int64_t t)
{
	return t >= 0 ? t / LEDGER_HOUR_MS : -((-t + LEDGER_HOUR_MS - 1) / LEDGER_HOUR_MS);
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(wr_t *w, uint64_t v)
{
	while (v >= 0x80) {
		gpuq_put_u8(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	gpuq_put_u8(w, (uint8_t)v);
}

static uint64_t get_varint(rd_t *r)
{
	uint64_t v = 0;

	for (int i = 0; i < VARINT_MAX; i++) {
		uint8_t b = gpuq_get_u8(r);

		if (i == VARINT_MAX - 1 && b > 1)
			break; /* past 64 bits */
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* An amount x ms as the integer stored: rounded, saturating. */
static uint64_t amount_u64(double d)
{
	if (!(d > 0.0))
		return 0;
	if (d >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)(d + 0.5);
}

/* ---- encoding ---- */

typedef struct {
	const ledger_t *l;  /* the ledger with open work folded in (a clone) */
	uint32_t *stamp;    /* per series: the part that last used it + 1 */
	uint32_t *local;    /* per series: its index in the current part */
	uint32_t part;	    /* the part being built */
	size_t part_max;    /* bytes per part */
	uint32_t n_used;    /* series the current part names */
	size_t names_bytes; /* their names' bytes */
} enc_t;

static size_t names_len(const series_t *s)
{
	return 8 + strlen(s->lq) + strlen(s->cq) + strlen(s->flavor) + strlen(s->res);
}

/* Bytes hour i adds to the current part, counting the names of series the
 * part does not name yet (and stamping them). */
static size_t hour_cost(enc_t *e, uint32_t i, bool stamp)
{
	const hour_t *hr = &e->l->hours[i];
	size_t n = 12;

	for (uint32_t j = 0; j < hr->n; j++) {
		const cell_t *c = &hr->c[j];

		n += 3 /* series index < 2^21 */ + varint_len(amount_u64(c->nom)) +
		     varint_len(amount_u64(c->bor));
		if (e->stamp[c->s] != e->part + 1) {
			n += names_len(&e->l->series[c->s]);
			if (stamp) {
				e->stamp[c->s] = e->part + 1;
				e->n_used++;
			}
		}
	}
	return n;
}

/* Write hours [lo, hi] (ascending) as one part into a new buffer. */
static int part_write(enc_t *e, uint32_t lo, uint32_t hi, int64_t at, uint8_t **out, size_t *len)
{
	const ledger_t *l = e->l;
	wr_t w = {NULL, 0, 0, false};
	uint32_t k = 0;

	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			w.b = malloc(w.len);
			if (!w.b)
				return GPUQ_ENOMEM;
			w.cap = w.len;
			w.len = 0;
		}
		gpuq_put(&w, MAGIC, MAGIC_LEN);
		gpuq_put_u8(&w, LEDGER_CKPT_VERSION);
		gpuq_put_u64(&w, (uint64_t)at);
		gpuq_put_u32(&w, e->n_used);
		k = 0;
		for (uint32_t s = 0; s < l->n_series; s++) {
			if (e->stamp[s] != e->part + 1)
				continue;
			e->local[s] = k++; /* ascending with the series id: cells stay sorted */
			gpuq_put_str(&w, l->series[s].lq), gpuq_put_str(&w, l->series[s].cq);
			gpuq_put_str(&w, l->series[s].flavor), gpuq_put_str(&w, l->series[s].res);
		}
		gpuq_put_u32(&w, hi - lo + 1);
		for (uint32_t i = lo; i <= hi; i++) {
			const hour_t *hr = &l->hours[i];
			gpuq_put_u64(&w, (uint64_t)hr->h);
			gpuq_put_u32(&w, hr->n);
			for (uint32_t j = 0; j < hr->n; j++) {
				put_varint(&w, e->local[hr->c[j].s]);
				put_varint(&w, amount_u64(hr->c[j].nom));
				put_varint(&w, amount_u64(hr->c[j].bor));
			}
		}
	}
	*out = w.b;
	*len = w.len;
	return GPUQ_OK;
}

/* A copy of l with every open interval closed at `at`: its hours hold the
 * usage a checkpoint carries. */
static int folded(const ledger_t *l, int64_t at, ledger_t **out)
{
	int rc = ledger_clone(l, out);

	while (!rc && (*out)->n_open) {
		open_t *o = &(*out)->opens[(*out)->n_open - 1];
		int64_t floor_ms = (hour_of(at) - (int64_t)LEDGER_HOURS_MAX + 1) * LEDGER_HOUR_MS;

		if (o->start < floor_ms && floor_ms < at)
			o->start = floor_ms; /* older work is not carried */
		rc = ledger_close(*out, o->uid, o->start < at ? at : o->start);
	}
	if (rc) {
		ledger_destroy(*out);
		*out = NULL;
	}
	return rc;
}

static void parts_free(uint8_t **parts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(parts[i]);
		parts[i] = NULL;
	}
}

/* Fill the parts from the newest hour down; returns the index below the
 * oldest hour carried (hours 0..that are left out) through *left. */
static int parts_fill(enc_t *e, int64_t at, uint8_t **parts, size_t *lens, ledger_ckpt_info_t *info)
{
	int64_t hi = (int64_t)e->l->n_hours - 1;
	int rc = GPUQ_OK;

	while (hi >= 0 && info->parts < LEDGER_CKPT_PARTS_MAX && !rc) {
		size_t bytes = HEADER_BYTES;
		int64_t lo = hi + 1;

		e->part = (uint32_t)info->parts;
		e->n_used = 0;
		while (lo > 0) {
			size_t add = hour_cost(e, (uint32_t)(lo - 1), false);
			if (bytes + add > e->part_max)
				break;
			bytes += hour_cost(e, (uint32_t)(lo - 1), true);
			lo--;
		}
		if (lo > hi) { /* one hour alone does not fit a part: left out */
			info->hours_left_out++;
			hi--;
			continue;
		}
		rc = part_write(e, (uint32_t)lo, (uint32_t)hi, at, &parts[info->parts],
				&lens[info->parts]);
		if (rc)
			break;
		info->bytes += lens[info->parts];
		info->parts++;
		info->hours += (uint32_t)(hi - lo + 1);
		for (int64_t i = lo; i <= hi; i++)
			info->cells += e->l->hours[i].n;
		info->oldest_ms = e->l->hours[lo].h * LEDGER_HOUR_MS;
		hi = lo - 1;
	}
	info->hours_left_out += (uint32_t)(hi + 1);
	return rc;
}

int ledger_checkpoint_encode(const ledger_t *l, int64_t at, size_t part_max,
			     uint8_t *parts[LEDGER_CKPT_PARTS_MAX],
			     size_t lens[LEDGER_CKPT_PARTS_MAX], ledger_ckpt_info_t *info)
{
	enc_t e = {0};
	ledger_t *f = NULL;
	int rc;

	memset(info, 0, sizeof(*info));
	info->oldest_ms = INT64_MIN;
	rc = folded(l, at, &f);
	if (rc)
		return rc;
	e.l = f;
	e.part_max = part_max == 0		       ? LEDGER_CKPT_PART_MAX
		     : part_max < PART_MIN	       ? PART_MIN
		     : part_max > LEDGER_CKPT_PART_MAX ? LEDGER_CKPT_PART_MAX
						       : part_max;
	e.stamp = calloc((size_t)f->n_series + 1, sizeof(*e.stamp));
	e.local = calloc((size_t)f->n_series + 1, sizeof(*e.local));
	rc = e.stamp && e.local ? parts_fill(&e, at, parts, lens, info) : GPUQ_ENOMEM;
	if (!rc && info->parts == 0) { /* nothing carried: one empty part says so */
		e.n_used = 0;
		e.part = 0;
		rc = part_write(&e, 1, 0, at, &parts[0], &lens[0]);
		if (!rc) {
			info->parts = 1;
			info->bytes = lens[0];
		}
	}
	if (rc) {
		parts_free(parts, info->parts);
		memset(info, 0, sizeof(*info));
	}
	free(e.stamp);
	free(e.local);
	ledger_destroy(f);
	return rc;
}

/* ---- decoding and merging ---- */

static int bad(gpuq_diag_t *diag, const char *what)
{
	return gpuq_diag_set(diag, GPUQ_ECORRUPT, "usage checkpoint: %s", what);
}

typedef struct {
	int64_t at;	     /* the part's time */
	uint32_t n_series;   /* series named */
	size_t series_off;   /* offset of the first series */
	uint32_t n_hours;    /* hours held */
	size_t hours_off;    /* offset of the first hour */
	uint32_t *series_to; /* part series index -> ledger series id (merge) */
	bool *series_ok;     /* ... mapped (false: past LEDGER_SERIES_MAX) */
} part_t;

static bool name_read(rd_t *r, char out[LEDGER_NAME_MAX + 1])
{
	size_t n = gpuq_get_u8(r);

	n |= (size_t)gpuq_get_u8(r) << 8;
	if (r->bad || n == 0 || n > LEDGER_NAME_MAX) {
		r->bad = true;
		return false;
	}
	gpuq_get(r, out, n);
	out[n] = '\0';
	if (!r->bad && memchr(out, 0, n))
		r->bad = true;
	return !r->bad;
}

static int header_read(rd_t *r, part_t *p, gpuq_diag_t *diag)
{
	char magic[MAGIC_LEN];
	uint8_t ver;

	if (r->n < HEADER_BYTES)
		return bad(diag, "truncated: shorter than its header");
	gpuq_get(r, magic, MAGIC_LEN);
	if (memcmp(magic, MAGIC, MAGIC_LEN) != 0)
		return bad(diag, "not a gpuq usage checkpoint (bad magic)");
	ver = gpuq_get_u8(r);
	if (ver != LEDGER_CKPT_VERSION)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "usage checkpoint: version %u, this gpuq reads version %d",
				     (unsigned)ver, LEDGER_CKPT_VERSION);
	p->at = (int64_t)gpuq_get_u64(r);
	if (p->at < -TIME_MAX || p->at > TIME_MAX)
		return bad(diag, "its time is out of range");
	p->n_series = gpuq_get_u32(r);
	if (p->n_series > LEDGER_SERIES_MAX)
		return bad(diag, "more series than LEDGER_SERIES_MAX (50,000)");
	return GPUQ_OK;
}

/* Check the whole part; fill p's counts and offsets. */
static int part_check(const uint8_t *buf, size_t len, part_t *p, gpuq_diag_t *diag)
{
	rd_t r = {buf, len, 0, false, false};
	char name[LEDGER_NAME_MAX + 1];
	int64_t prev_h = INT64_MIN;
	int rc = header_read(&r, p, diag);

	if (rc)
		return rc;
	p->series_off = r.off;
	for (uint32_t i = 0; i < p->n_series * 4; i++)
		if (!name_read(&r, name))
			return bad(diag, "truncated, or a series name empty or too long");
	p->n_hours = gpuq_get_u32(&r);
	if (r.bad)
		return bad(diag, "truncated before its hours");
	if (p->n_hours > LEDGER_HOURS_MAX)
		return bad(diag, "more hours than LEDGER_HOURS_MAX (9,600)");
	p->hours_off = r.off;
	for (uint32_t i = 0; i < p->n_hours; i++) {
		int64_t h = (int64_t)gpuq_get_u64(&r);
		uint32_t n = gpuq_get_u32(&r);
		uint64_t prev_s = 0;

		if (r.bad)
			return bad(diag, "truncated in its hours");
		if (h < -HOUR_ABS_MAX || h > HOUR_ABS_MAX || (i && h <= prev_h))
			return bad(diag, "hours out of range or not ascending");
		if (n > p->n_series)
			return bad(diag, "an hour has more cells than the part has series");
		prev_h = h;
		for (uint32_t j = 0; j < n; j++) {
			uint64_t s = get_varint(&r);
			(void)get_varint(&r), (void)get_varint(&r);
			if (r.bad)
				return bad(diag, "truncated, or a number past 64 bits, in a cell");
			if (s >= p->n_series || (j && s <= prev_s))
				return bad(diag, "a cell's series index out of range or repeated");
			prev_s = s;
		}
	}
	if (r.off != r.n)
		return bad(diag, "bytes after its last hour");
	return GPUQ_OK;
}

/* Each part series to a ledger series (added when new). */
static int series_map(ledger_t *l, const uint8_t *buf, size_t len, part_t *p)
{
	rd_t r = {buf, len, p->series_off, false, false};
	char n[4][LEDGER_NAME_MAX + 1];

	p->series_to = calloc((size_t)p->n_series + 1, sizeof(*p->series_to));
	p->series_ok = calloc((size_t)p->n_series + 1, sizeof(*p->series_ok));
	if (!p->series_to || !p->series_ok)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < p->n_series; i++) {
		uint32_t id;
		int rc;

		for (int k = 0; k < 4; k++)
			(void)name_read(&r, n[k]);
		rc = ledger_series_find(l, n[0], n[1], n[2], n[3], &id);
		if (rc) {
			rc = ledger_series_add(l, n[0], n[1], n[2], n[3], &id);
			if (rc == GPUQ_ELIMIT)
				continue; /* its cells are skipped */
			if (rc)
				return rc;
			ledger_mark(l, LEDGER_K_SERIES, &l->series[id]);
		}
		p->series_to[i] = id;
		p->series_ok[i] = true;
	}
	return GPUQ_OK;
}

typedef struct {
	uint32_t s;  /* series id */
	int64_t t0;  /* start */
	int64_t nom; /* amount within nominal */
	int64_t bor; /* amount borrowed */
} opart_at_t;

typedef struct {
	opart_at_t *v; /* open parts sorted by series */
	size_t n;      /* entries */
} opens_t;

static int opart_cmp(const void *a, const void *b)
{
	const opart_at_t *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

static int opens_index(const ledger_t *l, opens_t *o)
{
	size_t n = 0;

	for (uint32_t i = 0; i < l->n_open; i++)
		n += l->opens[i].n;
	o->v = calloc(n + 1, sizeof(*o->v));
	if (!o->v)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < l->n_open; i++)
		for (uint32_t j = 0; j < l->opens[i].n; j++)
			o->v[o->n++] = (opart_at_t){l->opens[i].p[j].s, l->opens[i].start,
						    l->opens[i].p[j].nom, l->opens[i].p[j].bor};
	qsort(o->v, o->n, sizeof(*o->v), opart_cmp);
	return GPUQ_OK;
}

/* What the ledger itself counts for series s in hour h up to at: closed
 * work plus its open intervals clipped to [hour start, min(hour end, at)]. */
static void own_cell(const ledger_t *l, const opens_t *o, int64_t h, uint32_t s, int64_t at,
		     double *nom, double *bor)
{
	int64_t h0 = h * LEDGER_HOUR_MS, h1 = h0 + LEDGER_HOUR_MS, end = h1 < at ? h1 : at;
	size_t lo = 0, hi = o->n;
	uint32_t idx;

	*nom = *bor = 0;
	if (ledger_hour_find(l, h, &idx) == GPUQ_OK) {
		const hour_t *hr = &l->hours[idx];
		uint32_t a = 0, b = hr->n;

		while (a < b) { /* cells are sorted by series */
			uint32_t mid = a + (b - a) / 2;
			if (hr->c[mid].s < s)
				a = mid + 1;
			else
				b = mid;
		}
		if (a < hr->n && hr->c[a].s == s) {
			*nom = hr->c[a].nom;
			*bor = hr->c[a].bor;
		}
	}
	while (lo < hi) { /* the first open part of s */
		size_t mid = lo + (hi - lo) / 2;
		if (o->v[mid].s < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < o->n && o->v[lo].s == s; lo++) {
		int64_t from = o->v[lo].t0 > h0 ? o->v[lo].t0 : h0;
		if (end > from) {
			*nom += (double)o->v[lo].nom * (double)(end - from);
			*bor += (double)o->v[lo].bor * (double)(end - from);
		}
	}
}

/* What a checkpoint value holds beyond the ledger's own, 0 within the
 * rounding of the stored integers (and a double's precision past 2^53). */
static double deficit(double ckpt, double own)
{
	double slack = own * 1e-12 > 1.0 ? own * 1e-12 : 1.0;

	return ckpt - own > slack ? ckpt - own : 0.0;
}

static int cells_merge(ledger_t *l, const uint8_t *buf, size_t len, const part_t *p,
		       ledger_merge_info_t *info)
{
	rd_t r = {buf, len, p->hours_off, false, false};
	int64_t floor_h = hour_of(p->at) - (int64_t)LEDGER_HOURS_MAX + 1;
	opens_t o = {0};
	int rc = opens_index(l, &o);

	for (uint32_t i = 0; !rc && i < p->n_hours; i++) {
		int64_t h = (int64_t)gpuq_get_u64(&r);
		uint32_t n = gpuq_get_u32(&r);

		for (uint32_t j = 0; !rc && j < n; j++) {
			uint32_t k = (uint32_t)get_varint(&r);
			double nom = (double)get_varint(&r), bor = (double)get_varint(&r), on, ob;
			if (h < floor_h || !p->series_ok[k]) {
				info->cells_skipped++;
				continue;
			}
			own_cell(l, &o, h, p->series_to[k], p->at, &on, &ob);
			nom = deficit(nom, on);
			bor = deficit(bor, ob);
			if (nom == 0 && bor == 0)
				continue;
			rc = ledger_hour_credit(l, h, p->series_to[k], nom, bor);
			if (rc == GPUQ_ERANGE) {
				info->cells_skipped++;
				rc = GPUQ_OK;
				continue;
			}
			info->cells_added += rc ? 0 : 1;
			if (!rc && ledger_resource_accelerator(l->series[p->series_to[k]].res))
				info->added_acc_hours += (nom + bor) / (double)LEDGER_HOUR_MS;
		}
	}
	free(o.v);
	return rc;
}

int ledger_checkpoint_merge(ledger_t *l, const uint8_t *buf, size_t len, ledger_merge_info_t *info,
			    gpuq_diag_t *diag)
{
	ledger_merge_info_t scratch;
	part_t p = {0};
	int rc;

	if (!info)
		info = &scratch;
	memset(info, 0, sizeof(*info));
	if (!buf)
		return bad(diag, "empty");
	rc = part_check(buf, len, &p, diag);
	if (rc)
		return rc;
	info->at = p.at;
	info->series = p.n_series;
	info->hours = p.n_hours;
	rc = series_map(l, buf, len, &p);
	if (!rc)
		rc = cells_merge(l, buf, len, &p, info);
	if (!rc)
		ledger_clock_advance(l, p.at);
	free(p.series_to);
	free(p.series_ok);
	if (rc)
		return gpuq_diag_set(diag, rc, "usage checkpoint: merging: %s", gpuq_strerror(rc));
	return GPUQ_OK;
}

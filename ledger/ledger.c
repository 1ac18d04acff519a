/*
 * ledger/ledger.c: the ledger's tables (series, hour buckets, open
 * intervals) and the changes that feed them: open, close, the hour bound.
 * See ledger.h for the contracts.
 */
#include "ledger/internal.h"

#include <stdlib.h>
#include <string.h>

#define TIME_MAX ((int64_t)1 << 62) /* the core's QUEUE_TIME_MAX */

uint32_t ledger_hash(const char *s, uint32_t h)
{
	/* 0xff, a byte of no name, separates joined names */
	return gpuq_fnv1a32(gpuq_fnv1a32_str(h, s), "\xff", 1);
}

int ledger_grow(void *pp, uint32_t *cap, uint32_t need, size_t size)
{
	void **p = pp;
	uint32_t n = *cap ? *cap : 8;
	void *v;

	if (need <= *cap)
		return GPUQ_OK;
	while (n < need)
		n *= 2;
	v = realloc(*p, (size_t)n * size);
	if (!v)
		return GPUQ_ENOMEM;
	*p = v;
	*cap = n;
	return GPUQ_OK;
}

static uint32_t series_hash(const char *lq, const char *cq, const char *flavor, const char *res)
{
	return ledger_hash(
	    res, ledger_hash(flavor, ledger_hash(cq, ledger_hash(lq, GPUQ_FNV1A32_BASIS))));
}

/* Slot of a hash map (capacity a power of two) where id+1 sits or 0 ends. */
int ledger_series_find(const ledger_t *l, const char *lq, const char *cq, const char *flavor,
		       const char *res, uint32_t *id)
{
	uint32_t h = series_hash(lq, cq, flavor, res), mask = l->smap_cap - 1;

	if (!l->smap_cap)
		return GPUQ_ENOTFOUND;
	for (uint32_t i = h & mask; l->smap[i]; i = (i + 1) & mask) {
		const series_t *s = &l->series[l->smap[i] - 1];
		if (s->hash == h && !strcmp(s->lq, lq) && !strcmp(s->cq, cq) &&
		    !strcmp(s->flavor, flavor) && !strcmp(s->res, res)) {
			*id = l->smap[i] - 1;
			return GPUQ_OK;
		}
	}
	return GPUQ_ENOTFOUND;
}

static void smap_put(uint32_t *map, uint32_t cap, uint32_t hash, uint32_t id)
{
	uint32_t i = hash & (cap - 1);

	while (map[i])
		i = (i + 1) & (cap - 1);
	map[i] = id + 1;
}

/* Keep a map at most half full: rehash into twice the slots. */
static int smap_reserve(ledger_t *l)
{
	uint32_t cap = l->smap_cap ? l->smap_cap * 2 : 64, *map;

	if ((l->n_series + 1) * 2 <= l->smap_cap)
		return GPUQ_OK;
	map = calloc(cap, sizeof(*map));
	if (!map)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < l->n_series; i++)
		if (l->series[i].lq)
			smap_put(map, cap, l->series[i].hash, i);
	free(l->smap);
	l->smap = map;
	l->smap_cap = cap;
	return GPUQ_OK;
}

int ledger_series_add(ledger_t *l, const char *lq, const char *cq, const char *flavor,
		      const char *res, uint32_t *id)
{
	int rc;

	if (l->n_series >= LEDGER_SERIES_MAX)
		return GPUQ_ELIMIT;
	rc = ledger_series_put(l, l->n_series, lq, cq, flavor, res);
	if (!rc)
		*id = l->n_series - 1;
	return rc;
}

/* Series `id` (>= n_series, or an absent slot below it) gets the names. */
int ledger_series_put(ledger_t *l, uint32_t id, const char *lq, const char *cq, const char *flavor,
		      const char *res)
{
	series_t s = {0};

	if (smap_reserve(l) || ledger_grow(&l->series, &l->cap_series, id + 1, sizeof(s)))
		return GPUQ_ENOMEM;
	s.lq = strdup(lq);
	s.cq = strdup(cq);
	s.flavor = strdup(flavor);
	s.res = strdup(res);
	if (!s.lq || !s.cq || !s.flavor || !s.res) {
		free(s.lq), free(s.cq), free(s.flavor), free(s.res);
		return GPUQ_ENOMEM;
	}
	s.hash = series_hash(lq, cq, flavor, res);
	for (; l->n_series <= id; l->n_series++)
		memset(&l->series[l->n_series], 0, sizeof(s)); /* absent until restored */
	l->series[id] = s;
	smap_put(l->smap, l->smap_cap, s.hash, id);
	return GPUQ_OK;
}

int ledger_open_find(const ledger_t *l, const char *uid, uint32_t *idx)
{
	uint32_t h = ledger_hash(uid, GPUQ_FNV1A32_BASIS), mask = l->omap_cap - 1;

	if (!l->omap_cap)
		return GPUQ_ENOTFOUND;
	for (uint32_t i = h & mask; l->omap[i]; i = (i + 1) & mask) {
		const open_t *o = &l->opens[l->omap[i] - 1];
		if (o->hash == h && !strcmp(o->uid, uid)) {
			*idx = l->omap[i] - 1;
			return GPUQ_OK;
		}
	}
	return GPUQ_ENOTFOUND;
}

static int omap_reserve(ledger_t *l)
{
	uint32_t cap = l->omap_cap ? l->omap_cap * 2 : 64, *map;

	if ((l->n_open + 1) * 2 <= l->omap_cap)
		return GPUQ_OK;
	map = calloc(cap, sizeof(*map));
	if (!map)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < l->n_open; i++)
		smap_put(map, cap, l->opens[i].hash, i);
	free(l->omap);
	l->omap = map;
	l->omap_cap = cap;
	return GPUQ_OK;
}

/* Insert o (its uid and parts owned by the ledger from now). */
int ledger_open_insert(ledger_t *l, open_t *o)
{
	if (l->n_open >= LEDGER_OPEN_MAX)
		return GPUQ_ELIMIT;
	if (omap_reserve(l) ||
	    ledger_grow(&l->opens, &l->cap_open, l->n_open + 1, sizeof(*l->opens)))
		return GPUQ_ENOMEM;
	o->hash = ledger_hash(o->uid, GPUQ_FNV1A32_BASIS);
	l->opens[l->n_open] = *o;
	smap_put(l->omap, l->omap_cap, o->hash, l->n_open);
	l->n_open++;
	return GPUQ_OK;
}

/* The map slot holding value idx + 1. */
static uint32_t omap_slot(const ledger_t *l, uint32_t idx)
{
	uint32_t mask = l->omap_cap - 1, i = l->opens[idx].hash & mask;

	while (l->omap[i] != idx + 1)
		i = (i + 1) & mask;
	return i;
}

/* Remove open interval idx (its uid and parts freed): linear probing's
 * backward-shift deletion, then the last interval moves into idx. */
static void open_remove(ledger_t *l, uint32_t idx)
{
	uint32_t mask = l->omap_cap - 1, i = omap_slot(l, idx), j = i, last = l->n_open - 1;

	for (;;) {
		uint32_t k;
		j = (j + 1) & mask;
		if (!l->omap[j])
			break;
		k = l->opens[l->omap[j] - 1].hash & mask;
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			l->omap[i] = l->omap[j];
			i = j;
		}
	}
	l->omap[i] = 0;
	free(l->opens[idx].uid);
	free(l->opens[idx].p);
	if (idx != last) {
		l->omap[omap_slot(l, last)] = idx + 1;
		l->opens[idx] = l->opens[last];
	}
	l->n_open--;
}

int ledger_hour_find(const ledger_t *l, int64_t h, uint32_t *idx)
{
	uint32_t lo = 0, hi = l->n_hours;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (l->hours[mid].h < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	*idx = lo;
	return lo < l->n_hours && l->hours[lo].h == h ? GPUQ_OK : GPUQ_ENOTFOUND;
}

int ledger_hour_insert(ledger_t *l, int64_t h, uint32_t *idx)
{
	if (ledger_hour_find(l, h, idx) == GPUQ_OK)
		return GPUQ_OK;
	if (ledger_grow(&l->hours, &l->cap_hours, l->n_hours + 1, sizeof(*l->hours)))
		return GPUQ_ENOMEM;
	memmove(&l->hours[*idx + 1], &l->hours[*idx], (l->n_hours - *idx) * sizeof(*l->hours));
	memset(&l->hours[*idx], 0, sizeof(*l->hours));
	l->hours[*idx].h = h;
	l->n_hours++;
	return GPUQ_OK;
}

int ledger_create(ledger_t **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return GPUQ_ENOMEM;
	(*out)->kept_from = INT64_MIN;
	return GPUQ_OK;
}

void ledger_destroy(ledger_t *l)
{
	if (!l)
		return;
	ledger_dirty_clear(l); /* first: it looks the dirty keys up */
	for (uint32_t i = 0; i < l->n_series; i++) {
		free(l->series[i].lq), free(l->series[i].cq);
		free(l->series[i].flavor), free(l->series[i].res);
	}
	for (uint32_t i = 0; i < l->n_hours; i++)
		free(l->hours[i].c);
	for (uint32_t i = 0; i < l->n_open; i++)
		free(l->opens[i].uid), free(l->opens[i].p);
	free(l->dirty);
	free(l->series), free(l->smap), free(l->hours), free(l->opens), free(l->omap);
	free(l);
}

bool ledger_resource_accelerator(const char *r)
{
	return strcmp(r, "cpu") != 0 && strcmp(r, "memory") != 0 &&
	       strcmp(r, "ephemeral-storage") != 0 && strcmp(r, "pods") != 0 &&
	       strncmp(r, "hugepages-", 10) != 0;
}

int64_t ledger_clock(const ledger_t *l)
{
	return l->clock;
}

bool ledger_is_open(const ledger_t *l, const char *uid)
{
	uint32_t i;

	return ledger_open_find(l, uid, &i) == GPUQ_OK;
}

static int part_check(const ledger_part_t *p)
{
	const char *names[] = {p->local_queue, p->cluster_queue, p->flavor, p->resource};

	for (size_t i = 0; i < 4; i++) {
		if (!names[i] || !names[i][0])
			return GPUQ_EINVAL;
		if (strlen(names[i]) > LEDGER_NAME_MAX)
			return GPUQ_ELIMIT;
	}
	return p->nominal < 0 || p->borrowed < 0 ? GPUQ_EINVAL : GPUQ_OK;
}

/* Series of every part into o->p (parts with no amount skipped). */
static int open_parts(ledger_t *l, open_t *o, const ledger_part_t *parts, size_t n)
{
	o->p = calloc(n ? n : 1, sizeof(*o->p));
	if (!o->p)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const ledger_part_t *p = &parts[i];
		uint32_t s;
		int rc;

		if (!p->nominal && !p->borrowed)
			continue;
		rc = ledger_series_find(l, p->local_queue, p->cluster_queue, p->flavor, p->resource,
					&s);
		if (rc) {
			rc = ledger_series_add(l, p->local_queue, p->cluster_queue, p->flavor,
					       p->resource, &s);
			if (!rc)
				ledger_mark(l, LEDGER_K_SERIES, &l->series[s]);
		}
		if (rc == GPUQ_ELIMIT) {
			l->unrecorded++;
			ledger_mark(l, LEDGER_K_META, NULL);
			continue;
		}
		if (rc)
			return rc;
		o->p[o->n++] = (opart_t){s, p->nominal, p->borrowed};
	}
	return GPUQ_OK;
}

static void set_clock(ledger_t *l, int64_t now)
{
	if (now > l->clock) {
		l->clock = now;
		ledger_mark(l, LEDGER_K_META, NULL);
	}
}

int ledger_open(ledger_t *l, const char *uid, int64_t now, const ledger_part_t *parts, size_t n)
{
	open_t o = {0};
	uint32_t idx;
	int rc;

	if (!uid || !uid[0] || now < -TIME_MAX || now > TIME_MAX)
		return GPUQ_EINVAL;
	if (n > LEDGER_PARTS_MAX || strlen(uid) + 6 > LEDGER_KEY_MAX)
		return GPUQ_ELIMIT;
	for (size_t i = 0; i < n; i++)
		if ((rc = part_check(&parts[i])))
			return rc;
	if (ledger_open_find(l, uid, &idx) == GPUQ_OK)
		return GPUQ_EEXIST;
	o.uid = strdup(uid);
	o.start = now;
	rc = o.uid ? open_parts(l, &o, parts, n) : GPUQ_ENOMEM;
	if (!rc)
		rc = ledger_open_insert(l, &o);
	if (rc) {
		free(o.uid);
		free(o.p);
		return rc; /* a series added stays: harmless, it is recorded */
	}
	ledger_mark(l, LEDGER_K_OPEN, &l->opens[l->n_open - 1]);
	set_clock(l, now);
	return GPUQ_OK;
}

/* Room for n more cells in hour idx. */
static int cell_add(hour_t *hr, uint32_t s, double nom, double bor)
{
	uint32_t lo = 0, hi = hr->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (hr->c[mid].s < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < hr->n && hr->c[lo].s == s) {
		hr->c[lo].nom += nom;
		hr->c[lo].bor += bor;
		return GPUQ_OK;
	}
	if (ledger_grow(&hr->c, &hr->cap, hr->n + 1, sizeof(*hr->c)))
		return GPUQ_ENOMEM;
	memmove(&hr->c[lo + 1], &hr->c[lo], (hr->n - lo) * sizeof(*hr->c));
	hr->c[lo] = (cell_t){s, nom, bor};
	hr->n++;
	return GPUQ_OK;
}

/* Accelerator amount x ms of a cell or of parts, for the dropped tally. */
static double acc_of(const ledger_t *l, uint32_t s, double amount_ms)
{
	return ledger_resource_accelerator(l->series[s].res) ? amount_ms : 0.0;
}

/* Drop the oldest hour into the tally (past LEDGER_HOURS_MAX). */
static void drop_oldest(ledger_t *l)
{
	hour_t *hr = &l->hours[0];
	int64_t h0 = hr->h;
	char key[LEDGER_KEY_MAX];

	for (uint32_t i = 0; i < hr->n; i++)
		l->dropped_acc += acc_of(l, hr->c[i].s, hr->c[i].nom + hr->c[i].bor);
	if (ledger_key(LEDGER_K_HOUR, l, hr, key, sizeof(key)) == GPUQ_OK)
		ledger_mark_deleted(l, strdup(key));
	free(hr->c);
	memmove(&l->hours[0], &l->hours[1], (l->n_hours - 1) * sizeof(*l->hours));
	l->n_hours--;
	if (l->kept_from == INT64_MIN || l->kept_from <= h0)
		l->kept_from = h0 + 1; /* nothing before it is kept */
	ledger_mark(l, LEDGER_K_META, NULL);
}

/* The parts' amounts x ms straight into the dropped tally. */
static void drop_amount(ledger_t *l, const open_t *o, int64_t ms)
{
	for (uint32_t i = 0; i < o->n; i++)
		l->dropped_acc +=
		    acc_of(l, o->p[i].s, (double)(o->p[i].nom + o->p[i].bor) * (double)ms);
	ledger_mark(l, LEDGER_K_META, NULL);
}

/* Add the parts' amounts x ms to hour h. */
static int hour_add(ledger_t *l, int64_t h, const open_t *o, int64_t ms)
{
	uint32_t idx;

	if ((l->kept_from != INT64_MIN && h < l->kept_from) ||
	    (l->n_hours >= LEDGER_HOURS_MAX && h < l->hours[0].h)) {
		drop_amount(l, o, ms);
		return GPUQ_OK;
	}
	if (ledger_hour_insert(l, h, &idx))
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < o->n; i++)
		if (cell_add(&l->hours[idx], o->p[i].s, (double)o->p[i].nom * (double)ms,
			     (double)o->p[i].bor * (double)ms))
			return GPUQ_ENOMEM;
	ledger_mark(l, LEDGER_K_HOUR, &l->hours[idx]);
	if (l->n_hours > LEDGER_HOURS_MAX)
		drop_oldest(l);
	return GPUQ_OK;
}

int ledger_hour_credit(ledger_t *l, int64_t h, uint32_t s, double nom, double bor)
{
	uint32_t idx;

	if ((l->kept_from != INT64_MIN && h < l->kept_from) ||
	    (l->n_hours >= LEDGER_HOURS_MAX && h < l->hours[0].h))
		return GPUQ_ERANGE;
	if (ledger_hour_insert(l, h, &idx) || cell_add(&l->hours[idx], s, nom, bor))
		return GPUQ_ENOMEM;
	ledger_mark(l, LEDGER_K_HOUR, &l->hours[idx]);
	if (l->n_hours > LEDGER_HOURS_MAX)
		drop_oldest(l);
	return GPUQ_OK;
}

void ledger_clock_advance(ledger_t *l, int64_t now)
{
	set_clock(l, now);
}

static int64_t hour_of(int64_t t)
{
	return t >= 0 ? t / LEDGER_HOUR_MS : -((-t + LEDGER_HOUR_MS - 1) / LEDGER_HOUR_MS);
}

int ledger_close(ledger_t *l, const char *uid, int64_t now)
{
	uint32_t idx;
	open_t *o;
	int64_t t;

	if (ledger_open_find(l, uid, &idx))
		return GPUQ_ENOTFOUND;
	o = &l->opens[idx];
	t = o->start;
	/* hours wholly before the kept range go to the tally at once */
	if (now - t > (int64_t)LEDGER_HOURS_MAX * LEDGER_HOUR_MS) {
		int64_t skip = hour_of(now) - (int64_t)LEDGER_HOURS_MAX;
		int64_t cut = skip * LEDGER_HOUR_MS;
		if (cut > t) {
			drop_amount(l, o, cut - t);
			t = cut;
			while (l->n_hours && l->hours[0].h < skip)
				drop_oldest(l);
			if (l->kept_from == INT64_MIN || l->kept_from < skip)
				l->kept_from = skip; /* nothing before it is kept */
		}
	}
	while (t < now) {
		int64_t h = hour_of(t), end = (h + 1) * LEDGER_HOUR_MS;
		int64_t stop = end < now ? end : now;
		if (hour_add(l, h, o, stop - t)) {
			ledger_mark(l, LEDGER_K_OPEN, o); /* a retry resumes at o->start */
			return GPUQ_ENOMEM;
		}
		t = stop;
		o->start = t;
	}
	{
		char key[LEDGER_KEY_MAX];
		if (ledger_key(LEDGER_K_OPEN, l, o, key, sizeof(key)) == GPUQ_OK)
			ledger_mark_deleted(l, strdup(key));
	}
	open_remove(l, idx);
	set_clock(l, now);
	return GPUQ_OK;
}

size_t ledger_open_count(const ledger_t *l)
{
	return l->n_open;
}

static int uid_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ledger_open_each(const ledger_t *l, int (*fn)(void *ctx, const char *uid), void *ctx)
{
	char **uids = malloc((l->n_open ? l->n_open : 1) * sizeof(*uids));
	int rc = GPUQ_OK;

	if (!uids)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < l->n_open; i++)
		uids[i] = l->opens[i].uid;
	qsort(uids, l->n_open, sizeof(*uids), uid_cmp);
	for (uint32_t i = 0; i < l->n_open && !rc; i++)
		rc = fn(ctx, uids[i]);
	free(uids);
	return rc;
}

size_t ledger_memory_bytes(const ledger_t *l)
{
	size_t n = sizeof(*l) + (size_t)l->cap_series * sizeof(series_t) +
		   (size_t)(l->smap_cap + l->omap_cap) * sizeof(uint32_t) +
		   (size_t)l->cap_hours * sizeof(hour_t) + (size_t)l->cap_open * sizeof(open_t);

	for (uint32_t i = 0; i < l->n_hours; i++)
		n += l->hours[i].cap * sizeof(cell_t);
	for (uint32_t i = 0; i < l->n_open; i++)
		n += l->opens[i].n * sizeof(opart_t) + strlen(l->opens[i].uid) + 1;
	return n;
}

/*
 * ledger/window.c: usage over a window, grouped and priced (the one rule
 * every reader uses), and price parsing. See ledger.h.
 */
#include "ledger/internal.h"
#include "quota/quota.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRICE_TEXT_MAX 32 /* bytes in a price ("2.50") */

typedef struct {
	const ledger_t *l;
	ledger_by_t by;
	uint32_t s; /* series id */
} key_ctx_t;

static int64_t floor_hour(int64_t t)
{
	return t >= 0 ? t / LEDGER_HOUR_MS : -((-t + LEDGER_HOUR_MS - 1) / LEDGER_HOUR_MS);
}

/* The group a series belongs to, into out (a namespace is the LocalQueue's
 * part before '/'). */
static void group_of(const series_t *s, ledger_by_t by, char *out, size_t cap)
{
	const char *slash;

	switch (by) {
	case LEDGER_BY_NAMESPACE:
		slash = strchr(s->lq, '/');
		snprintf(out, cap, "%.*s", slash ? (int)(slash - s->lq) : (int)strlen(s->lq),
			 s->lq);
		break;
	case LEDGER_BY_LOCALQUEUE:
		snprintf(out, cap, "%s", s->lq);
		break;
	case LEDGER_BY_CLUSTERQUEUE:
		snprintf(out, cap, "%s", s->cq);
		break;
	default:
		snprintf(out, cap, "%s", s->flavor);
		break;
	}
}

/* Core units per display unit: cores for cpu (quota_core_per_unit), GiB
 * for memory. */
static double unit_of(const char *res)
{
	if (quota_core_per_unit(res) > 1)
		return (double)quota_core_per_unit(res);
	if (!strcmp(res, "memory"))
		return 1073741824.0;
	return 1.0;
}

/* The price of flavor in the query, or false: it has none. */
static bool price_of(const ledger_query_t *q, const char *flavor, double *per_hour)
{
	for (size_t i = 0; i < q->n_prices; i++)
		if (!strcmp(q->prices[i].flavor, flavor)) {
			*per_hour = q->prices[i].per_hour;
			return true;
		}
	return false;
}

/* Per series amount x ms in the window: acc[2s] nominal, acc[2s+1] borrowed. */
static void accumulate(const ledger_t *l, int64_t from_h, int64_t to_h, int64_t open_to,
		       double *acc)
{
	uint32_t i;

	(void)ledger_hour_find(l, from_h, &i);
	for (; i < l->n_hours && l->hours[i].h <= to_h; i++)
		for (uint32_t j = 0; j < l->hours[i].n; j++) {
			const cell_t *c = &l->hours[i].c[j];
			acc[2 * (size_t)c->s] += c->nom;
			acc[2 * (size_t)c->s + 1] += c->bor;
		}
	for (i = 0; i < l->n_open; i++) {
		const open_t *o = &l->opens[i];
		int64_t lo =
		    o->start > from_h * LEDGER_HOUR_MS ? o->start : from_h * LEDGER_HOUR_MS;

		if (open_to <= lo)
			continue;
		for (uint32_t j = 0; j < o->n; j++) {
			acc[2 * (size_t)o->p[j].s] += (double)o->p[j].nom * (double)(open_to - lo);
			acc[2 * (size_t)o->p[j].s + 1] +=
			    (double)o->p[j].bor * (double)(open_to - lo);
		}
	}
}

typedef struct {
	char group[LEDGER_KEY_MAX]; /* the series' group */
	uint32_t s;		    /* series id */
} sorted_t;

static int sorted_cmp(const void *a, const void *b)
{
	const sorted_t *x = a, *y = b;
	int c = strcmp(x->group, y->group);

	return c ? c : (x->s < y->s ? -1 : x->s > y->s);
}

static int resource_then(const ledger_t *l, const sorted_t *x, const ledger_row_t *row)
{
	return strcmp(row->group, x->group) == 0 && strcmp(row->resource, l->series[x->s].res) == 0;
}

/* Merge the used series, sorted by group, into rows by (group, resource). */
static int build_rows(const ledger_t *l, const ledger_query_t *q, const double *acc, sorted_t *srt,
		      uint32_t n, ledger_report_t *out)
{
	out->rows = calloc(n ? n : 1, sizeof(*out->rows));
	if (!out->rows)
		return GPUQ_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const series_t *s = &l->series[srt[i].s];
		double u = unit_of(s->res) * (double)LEDGER_HOUR_MS;
		double nom = acc[2 * (size_t)srt[i].s] / u, bor = acc[2 * (size_t)srt[i].s + 1] / u;
		ledger_row_t *row = NULL;

		for (size_t k = out->n_rows; k-- > 0;) {
			if (!out->rows[k].group || strcmp(out->rows[k].group, srt[i].group) != 0)
				break; /* rows of one group are adjacent: sorted */
			if (resource_then(l, &srt[i], &out->rows[k]))
				row = &out->rows[k];
		}
		if (!row) {
			row = &out->rows[out->n_rows];
			row->group = strdup(srt[i].group);
			row->resource = strdup(s->res);
			if (!row->group || !row->resource) {
				free(row->group), free(row->resource);
				return GPUQ_ENOMEM;
			}
			row->accelerator = ledger_resource_accelerator(s->res);
			out->n_rows++;
		}
		row->nominal_hours += nom;
		row->borrowed_hours += bor;
		if (row->accelerator) {
			double per_hour;
			if (price_of(q, s->flavor, &per_hour))
				row->cost += (nom + bor) * per_hour;
			else
				row->unpriced_hours += nom + bor;
		}
	}
	return GPUQ_OK;
}

static int row_cmp(const void *a, const void *b)
{
	const ledger_row_t *x = a, *y = b;
	int c = strcmp(x->group, y->group);

	return c ? c : strcmp(x->resource, y->resource);
}

int ledger_window(const ledger_t *l, const ledger_query_t *q, ledger_report_t *out)
{
	int64_t from_h = floor_hour(q->since), to_h = floor_hour(q->until);
	int64_t end = (to_h + 1) * LEDGER_HOUR_MS, open_to = end < q->now ? end : q->now;
	double *acc;
	sorted_t *srt;
	uint32_t n = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (q->since > q->until)
		return GPUQ_EINVAL;
	for (size_t i = 0; i < q->n_prices; i++)
		if (!isfinite(q->prices[i].per_hour) || q->prices[i].per_hour < 0)
			return GPUQ_EINVAL;
	acc = calloc(2 * (size_t)l->n_series + 1, sizeof(*acc));
	srt = calloc((size_t)l->n_series + 1, sizeof(*srt));
	if (!acc || !srt) {
		free(acc), free(srt);
		return GPUQ_ENOMEM;
	}
	accumulate(l, from_h, to_h, open_to, acc);
	for (uint32_t s = 0; s < l->n_series; s++)
		if (acc[2 * (size_t)s] != 0.0 || acc[2 * (size_t)s + 1] != 0.0) {
			group_of(&l->series[s], q->by, srt[n].group, sizeof(srt[n].group));
			srt[n++].s = s;
		}
	qsort(srt, n, sizeof(*srt), sorted_cmp);
	rc = build_rows(l, q, acc, srt, n, out);
	free(acc), free(srt);
	if (rc) {
		ledger_report_deinit(out);
		return rc;
	}
	qsort(out->rows, out->n_rows, sizeof(*out->rows), row_cmp);
	out->from_ms = from_h * LEDGER_HOUR_MS;
	out->to_ms = open_to;
	out->dropped_hours = l->dropped_acc / (double)LEDGER_HOUR_MS;
	out->kept_from_ms = l->kept_from == INT64_MIN ? INT64_MIN : l->kept_from * LEDGER_HOUR_MS;
	out->unrecorded = l->unrecorded;
	return GPUQ_OK;
}

void ledger_report_deinit(ledger_report_t *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->n_rows; i++)
		free(rep->rows[i].group), free(rep->rows[i].resource);
	free(rep->rows);
	memset(rep, 0, sizeof(*rep));
}

int ledger_price_parse(const char *s, double *out, gpuq_diag_t *diag)
{
	size_t n = s ? strlen(s) : 0, dots = 0, digits = 0;
	char *end;
	double v;

	if (n > 0 && n <= PRICE_TEXT_MAX && s[0] == '-')
		return gpuq_diag_set(diag, GPUQ_EINVAL, "price \"%s\": negative", s);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.')
			dots++;
		else if (s[i] >= '0' && s[i] <= '9')
			digits++;
		else
			digits = n + 1; /* not a plain decimal */
	}
	if (n == 0 || n > PRICE_TEXT_MAX || dots > 1 || digits == 0 || digits > n)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "price \"%.40s\": not a decimal number (want e.g. \"2.50\")",
				     s ? s : "");
	v = strtod(s, &end);
	if (*end || !isfinite(v) || v > LEDGER_PRICE_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "price \"%s\": more than %.0f an hour", s,
				     LEDGER_PRICE_MAX);
	*out = v;
	return GPUQ_OK;
}

int ledger_prices_merge(const ledger_price_t *flags, size_t n_flags, const ledger_price_t *declared,
			size_t n_declared, ledger_price_t *out, size_t cap, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < n_flags; i++) {
		if (*n == cap)
			return GPUQ_ELIMIT;
		out[(*n)++] = flags[i];
	}
	for (size_t i = 0; i < n_declared; i++) {
		bool flagged = false;

		for (size_t k = 0; k < n_flags && !flagged; k++)
			flagged = strcmp(flags[k].flavor, declared[i].flavor) == 0;
		if (flagged)
			continue;
		if (*n == cap)
			return GPUQ_ELIMIT;
		out[(*n)++] = declared[i];
	}
	return GPUQ_OK;
}

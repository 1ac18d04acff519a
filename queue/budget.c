/*
 * queue/budget.c: budgets. GPU-hours or their cost per LocalQueue, namespace
 * or ClusterQueue over a window, read from the core's own ledger
 * (ledger_window, the one rule for usage over a window), and what a budget
 * over its limit does to the LocalQueues it covers (Lower, Hold). Each
 * budget's state is a record of its own (QUEUE_REC_BUDGET).
 * See queue.h ("GPU economics") for the contracts, docs/economics.md for the
 * rules.
 */
#include "queue/internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_MS 86400000LL
#define WARN_PCT_DEFAULT 80
#define BUDGET_REC_VERSION 1

static const char scope_letter[] = {'l', 'n', 'c'};
static const char *const scope_words[] = {"LocalQueue", "namespace", "ClusterQueue"};
static const char *const action_words[] = {"Warn", "Lower", "Hold"};

/* ---- calendar (proleptic Gregorian, UTC; Howard Hinnant's algorithms) ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* The window of a budget of window_days holding `now`: [*start, *end). */
static void window_of(int32_t window_days, int64_t now, int64_t *start, int64_t *end)
{
	int64_t y;
	unsigned m, d;

	if (window_days > 0) {
		int64_t p = (int64_t)window_days * DAY_MS;

		*start = floor_div(now, p) * p;
		*end = *start + p;
		return;
	}
	civil_from_days(floor_div(now, DAY_MS), &y, &m, &d);
	*start = days_from_civil(y, m, 1) * DAY_MS;
	*end = days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * DAY_MS;
}

/* The first end of the windows the budgets were evaluated in. */
static void turn_update(queue_t *q)
{
	q->budget_turn = INT64_MAX;
	for (size_t i = 0; i < q->n_budgets; i++) {
		int64_t start, end;

		if (q->budgets[i].window_start == INT64_MIN)
			continue;
		window_of(q->budgets[i].spec.window_days, q->budgets[i].window_start, &start, &end);
		if (end < q->budget_turn)
			q->budget_turn = end;
	}
}

/* "2025-08-01 00:00 UTC" */
static void date_text(int64_t ms, char *buf, size_t cap)
{
	int64_t y, min = floor_div(ms, 60000);
	unsigned m, d;

	civil_from_days(floor_div(min, 1440), &y, &m, &d);
	min -= floor_div(min, 1440) * 1440;
	snprintf(buf, cap, "%04" PRId64 "-%02u-%02u %02d:%02d UTC", y, m, d, (int)(min / 60),
		 (int)(min % 60));
}

/* ---- setting the budgets ---- */

void queue_budgets_free(queue_t *q)
{
	for (size_t i = 0; i < q->n_budgets; i++)
		free(q->budgets[i].name);
	free(q->budgets);
	q->budgets = NULL;
	q->n_budgets = 0;
	for (size_t i = 0; i < q->n_prices; i++)
		free((char *)q->prices[i].flavor);
	free(q->prices);
	q->prices = NULL;
	q->n_prices = 0;
}

static int spec_check(const queue_t *q, const queue_budget_spec_t *s, uint32_t *target,
		      gpuq_diag_t *diag)
{
	size_t n = s->name ? strlen(s->name) : 0;
	uint32_t id = QUEUE_NONE;

	if ((unsigned)s->scope > QUEUE_BUDGET_CLUSTERQUEUE ||
	    (unsigned)s->action > QUEUE_BUDGET_HOLD)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "budget: bad scope or action");
	if (!n || n > 2 * QUEUE_NAME_MAX + 1)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "budget: bad name");
	if (!(s->limit >= 0 && s->limit <= QUEUE_BUDGET_LIMIT_MAX)) /* NaN fails */
		return gpuq_diag_set(diag, GPUQ_EINVAL, "budget of %s %s: limit %g out of range",
				     scope_words[s->scope], s->name, s->limit);
	if (s->window_days < 0 || s->window_days > QUEUE_BUDGET_DAYS_MAX || s->warn_pct < 0 ||
	    s->warn_pct > 100)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "budget of %s %s: window %d days or warning share %d%% out "
				     "of range",
				     scope_words[s->scope], s->name, s->window_days, s->warn_pct);
	if ((s->scope == QUEUE_BUDGET_LOCALQUEUE && queue_names_find(&q->lq_names, s->name, &id)) ||
	    (s->scope == QUEUE_BUDGET_CLUSTERQUEUE && queue_names_find(&q->cq_names, s->name, &id)))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "budget: no %s \"%s\"",
				     scope_words[s->scope], s->name);
	*target = id;
	return GPUQ_OK;
}

/* The index of the budget whose record key is key in v[0..n), or -1. */
static int64_t find_key(const budget_t *v, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].key, key))
			return (int64_t)i;
	return -1;
}

/* Fill v[0..n) from the specs (names copied, targets resolved, keys made;
 * a key twice is GPUQ_EINVAL). keys: scratch names for the duplicate check. */
static int budgets_build(queue_t *q, const queue_budget_spec_t *b, size_t n, budget_t *v,
			 names_t *keys, gpuq_diag_t *diag)
{
	for (size_t i = 0; i < n; i++) {
		budget_t *x = &v[i];
		uint32_t kid;
		size_t before = keys->n;
		int rc = spec_check(q, &b[i], &x->target, diag);

		if (rc)
			return rc;
		x->spec = b[i];
		x->spec.warn_pct = b[i].warn_pct ? b[i].warn_pct : WARN_PCT_DEFAULT;
		x->name = strdup(b[i].name);
		if (!x->name)
			return GPUQ_ENOMEM;
		x->spec.name = x->name;
		snprintf(x->key, sizeof(x->key), "%c/%s", scope_letter[b[i].scope], b[i].name);
		x->evaluated = INT64_MIN;
		x->window_start = INT64_MIN;
		if (queue_names_intern(keys, x->key, &kid))
			return GPUQ_ENOMEM;
		if (keys->n == before)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "budget of %s %s declared twice",
					     scope_words[b[i].scope], b[i].name);
	}
	return GPUQ_OK;
}

static int prices_copy(const ledger_price_t *p, size_t n, ledger_price_t **out)
{
	ledger_price_t *v = calloc(n ? n : 1, sizeof(*v));

	*out = v;
	if (!v)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!(p[i].per_hour >= 0 && p[i].per_hour <= LEDGER_PRICE_MAX))
			return GPUQ_EINVAL;
		v[i].per_hour = p[i].per_hour;
		v[i].flavor = strdup(p[i].flavor ? p[i].flavor : "");
		if (!v[i].flavor)
			return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

/* Every LocalQueue's standing from the budgets' states; a change touches
 * its cohort with capacity up (its set-aside workloads may fit now, or its
 * order changed). */
static void standings(queue_t *q)
{
	for (size_t i = 0; i < q->lq_names.n; i++) {
		lq_t *l = &q->lqs[i];
		int32_t bs[3] = {l->budget, l->ns_budget, q->cqs[l->cq].budget};
		uint8_t st = QUEUE_LQ_IN_BUDGET;

		for (int k = 0; k < 3; k++) {
			const budget_t *b = bs[k] >= 0 ? &q->budgets[bs[k]] : NULL;

			if (!b || b->state != QUEUE_BUDGET_OVER)
				continue;
			if (b->spec.action == QUEUE_BUDGET_HOLD)
				st = QUEUE_LQ_HELD;
			else if (b->spec.action == QUEUE_BUDGET_LOWER && st < QUEUE_LQ_LOWERED)
				st = QUEUE_LQ_LOWERED;
		}
		if (st != l->standing) {
			l->standing = st;
			queue_cohort_touch(q, q->cqs[l->cq].cohort, true);
		}
	}
}

/* Point each LocalQueue and ClusterQueue at its budgets. */
static int link_targets(queue_t *q)
{
	names_t ns = {0};
	int32_t *ns_idx = calloc(q->n_budgets + 1, sizeof(*ns_idx));
	int rc = ns_idx ? GPUQ_OK : GPUQ_ENOMEM;

	for (size_t i = 0; i < q->cq_names.n; i++)
		q->cqs[i].budget = -1;
	for (size_t i = 0; i < q->lq_names.n; i++)
		q->lqs[i].budget = q->lqs[i].ns_budget = -1;
	for (size_t i = 0; !rc && i < q->n_budgets; i++) {
		const budget_t *b = &q->budgets[i];
		uint32_t id;

		if (b->spec.scope == QUEUE_BUDGET_LOCALQUEUE)
			q->lqs[b->target].budget = (int32_t)i;
		else if (b->spec.scope == QUEUE_BUDGET_CLUSTERQUEUE)
			q->cqs[b->target].budget = (int32_t)i;
		else if (!(rc = queue_names_intern(&ns, b->name, &id)))
			ns_idx[id] = (int32_t)i;
	}
	for (size_t i = 0; !rc && ns.n && i < q->lq_names.n; i++) {
		const char *full = q->lqs[i].name, *slash = strchr(full, '/');
		char nsn[QUEUE_NAME_MAX + 1];
		uint32_t id;

		if (!slash || (size_t)(slash - full) > QUEUE_NAME_MAX)
			continue;
		memcpy(nsn, full, (size_t)(slash - full));
		nsn[slash - full] = '\0';
		if (queue_names_find(&ns, nsn, &id) == GPUQ_OK)
			q->lqs[i].ns_budget = ns_idx[id];
	}
	queue_names_free(&ns);
	free(ns_idx);
	return rc;
}

static void mark_budget(queue_t *q, const char *key)
{
	/* mark.c marks by (type, key); budget keys are their own */
	queue_mark_key(q, QUEUE_REC_BUDGET, key);
}

int queue_budgets_set(queue_t *q, const queue_budget_spec_t *b, size_t n,
		      const ledger_price_t *prices, size_t n_prices, gpuq_diag_t *diag)
{
	names_t keys = {0};
	budget_t *v;
	ledger_price_t *pv = NULL;
	int rc;

	if (n > QUEUE_BUDGETS_MAX || n_prices > QUEUE_FLAVORS_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "more than %d budgets or %d prices",
				     QUEUE_BUDGETS_MAX, QUEUE_FLAVORS_MAX);
	v = calloc(n ? n : 1, sizeof(*v));
	rc = v ? budgets_build(q, b, n, v, &keys, diag) : GPUQ_ENOMEM;
	if (!rc)
		rc = prices_copy(prices, n_prices, &pv);
	queue_names_free(&keys);
	if (rc) {
		for (size_t i = 0; v && i < n; i++)
			free(v[i].name);
		free(v);
		for (size_t i = 0; pv && i < n_prices; i++)
			free((char *)pv[i].flavor);
		free(pv);
		if (rc == GPUQ_ENOMEM)
			gpuq_diag_set(diag, rc, "budgets: out of memory");
		else if (rc == GPUQ_EINVAL && diag && !diag->msg[0])
			gpuq_diag_set(diag, rc, "budgets: a price out of range");
		return rc;
	}
	for (size_t i = 0; i < n; i++) { /* a budget kept keeps its state */
		int64_t o = find_key(q->budgets, q->n_budgets, v[i].key);

		if (o >= 0) {
			v[i].state = q->budgets[o].state;
			v[i].used = q->budgets[o].used;
			v[i].window_start = q->budgets[o].window_start;
			v[i].evaluated = q->budgets[o].evaluated;
		}
	}
	for (size_t i = 0; i < q->n_budgets; i++) /* records of budgets gone go */
		if (find_key(v, n, q->budgets[i].key) < 0)
			mark_budget(q, q->budgets[i].key);
	queue_budgets_free(q);
	q->budgets = v;
	q->n_budgets = n;
	q->prices = pv;
	q->n_prices = n_prices;
	q->budget_at = INT64_MIN; /* evaluate at the next tick or cycle */
	turn_update(q);
	rc = link_targets(q);
	if (rc)
		return gpuq_diag_set(diag, rc, "budgets: out of memory");
	standings(q);
	queue_budgets_mark_all(q);
	return GPUQ_OK;
}

/* ---- evaluating ---- */

static int by_window_scope(const void *pa, const void *pb, void *ctx)
{
	const queue_t *q = ctx;
	const budget_t *a = &q->budgets[*(const uint32_t *)pa],
		       *b = &q->budgets[*(const uint32_t *)pb];

	if (a->spec.window_days != b->spec.window_days)
		return a->spec.window_days < b->spec.window_days ? -1 : 1;
	if (a->spec.scope != b->spec.scope)
		return a->spec.scope < b->spec.scope ? -1 : 1;
	return (*(const uint32_t *)pa > *(const uint32_t *)pb) -
	       (*(const uint32_t *)pa < *(const uint32_t *)pb);
}

/* What group `name` used in rep (rows sorted by group): accelerator hours,
 * or their cost. */
static double used_of(const ledger_report_t *rep, const char *name, bool cost)
{
	size_t lo = 0, hi = rep->n_rows;
	double sum = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(rep->rows[mid].group, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < rep->n_rows && !strcmp(rep->rows[lo].group, name); lo++) {
		const ledger_row_t *r = &rep->rows[lo];

		if (r->accelerator)
			sum += cost ? r->cost : r->nominal_hours + r->borrowed_hours;
	}
	return sum;
}

static uint8_t state_of(const budget_t *b)
{
	if (b->used >= b->spec.limit)
		return QUEUE_BUDGET_OVER;
	if (b->used >= b->spec.limit * b->spec.warn_pct / 100.0)
		return QUEUE_BUDGET_WARNING;
	return QUEUE_BUDGET_OK;
}

/* One run of budgets (same window and scope) in idx[0..n): one ledger read. */
static int eval_run(queue_t *q, const uint32_t *idx, size_t n, int64_t now)
{
	const budget_t *first = &q->budgets[idx[0]];
	static const ledger_by_t by[] = {LEDGER_BY_LOCALQUEUE, LEDGER_BY_NAMESPACE,
					 LEDGER_BY_CLUSTERQUEUE};
	int64_t start, end;
	ledger_query_t query;
	ledger_report_t rep;
	int rc;

	window_of(first->spec.window_days, now, &start, &end);
	query = (ledger_query_t){start, now, now, by[first->spec.scope], q->prices, q->n_prices};
	rc = ledger_window(q->ledger, &query, &rep);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		budget_t *b = &q->budgets[idx[i]];
		uint8_t was = b->state;

		b->used = used_of(&rep, b->name, b->spec.cost);
		b->window_start = start;
		b->evaluated = now;
		b->stale = false;
		b->state = state_of(b);
		if (b->state != was)
			(void)queue_emit_budget_change(q, idx[i], was, b->state); /* lost only
										   without memory */
		mark_budget(q, b->key);
	}
	ledger_report_deinit(&rep);
	return GPUQ_OK;
}

static bool any_stale(const queue_t *q)
{
	for (size_t i = 0; i < q->n_budgets; i++)
		if (q->budgets[i].stale)
			return true;
	return false;
}

/* Whether any workload holds quota (usage grows only then). */
static bool anything_runs(const queue_t *q)
{
	for (size_t i = 0; i < q->cq_names.n; i++)
		if (q->cqs[i].adm.n)
			return true;
	return false;
}

static bool any_not_ok(const queue_t *q)
{
	for (size_t i = 0; i < q->n_budgets; i++)
		if (q->budgets[i].state != QUEUE_BUDGET_OK)
			return true;
	return false;
}

int64_t queue_budgets_next(const queue_t *q)
{
	if (!q->n_budgets)
		return INT64_MAX;
	if (q->budget_at == INT64_MIN || any_stale(q))
		return INT64_MIN;
	if (!anything_runs(q)) /* usage stands still: only a window's turn changes a state */
		return any_not_ok(q) ? q->budget_turn : INT64_MAX;
	/* every interval, and when a window turns (a hold lifts then) */
	return q->budget_at + q->cfg.budget_interval_ms < q->budget_turn
		   ? q->budget_at + q->cfg.budget_interval_ms
		   : q->budget_turn;
}

void queue_budgets_tick(queue_t *q, int64_t now)
{
	uint32_t *idx;
	int rc = GPUQ_OK;

	if (!q->n_budgets || queue_budgets_next(q) > now)
		return;
	idx = malloc(q->n_budgets * sizeof(*idx));
	if (!idx)
		return; /* the next call tries again */
	for (uint32_t i = 0; i < q->n_budgets; i++)
		idx[i] = i;
	qsort_r(idx, q->n_budgets, sizeof(*idx), by_window_scope, q);
	for (size_t i = 0, j; i < q->n_budgets && !rc; i = j) {
		const budget_t *a = &q->budgets[idx[i]];

		for (j = i + 1; j < q->n_budgets; j++) {
			const budget_t *b = &q->budgets[idx[j]];

			if (b->spec.window_days != a->spec.window_days ||
			    b->spec.scope != a->spec.scope)
				break;
		}
		rc = eval_run(q, idx + i, j - i, now);
	}
	free(idx);
	if (rc)
		return; /* out of memory: the next call tries again */
	q->budget_at = now;
	turn_update(q);
	standings(q);
}

/* ---- records ---- */

static int64_t key_budget(const queue_t *q, const char *key)
{
	return find_key(q->budgets, q->n_budgets, key);
}

int queue_budget_encode(const queue_t *q, const char *key, gpuq_wr_t *w)
{
	int64_t i = key_budget(q, key);
	const budget_t *b;

	if (i < 0)
		return GPUQ_ENOTFOUND;
	b = &q->budgets[i];
	gpuq_put_u8(w, BUDGET_REC_VERSION);
	gpuq_put_u8(w, b->state);
	gpuq_put_f64(w, b->used);
	gpuq_put_u64(w, (uint64_t)b->window_start);
	gpuq_put_u64(w, (uint64_t)b->evaluated);
	/* the spec it was evaluated under: restored under another, it is stale */
	gpuq_put_f64(w, b->spec.limit);
	gpuq_put_u32(w, (uint32_t)b->spec.window_days);
	gpuq_put_u32(w, (uint32_t)b->spec.warn_pct);
	gpuq_put_u8(w, (uint8_t)b->spec.action);
	gpuq_put_u8(w, b->spec.cost);
	return GPUQ_OK;
}

static bool time_ok(int64_t t)
{
	return t == INT64_MIN || (t >= -QUEUE_TIME_MAX && t <= QUEUE_TIME_MAX);
}

int queue_budget_apply(queue_t *q, const char *key, gpuq_rd_t *r, gpuq_diag_t *diag)
{
	int64_t i = key_budget(q, key);
	uint8_t state = gpuq_get_u8(r), action, cost;
	double used = gpuq_get_f64(r), limit;
	int64_t start = (int64_t)gpuq_get_u64(r), at = (int64_t)gpuq_get_u64(r);
	int32_t days, warn;
	budget_t *b;

	limit = gpuq_get_f64(r);
	days = (int32_t)gpuq_get_u32(r);
	warn = (int32_t)gpuq_get_u32(r);
	action = gpuq_get_u8(r);
	cost = gpuq_get_u8(r);
	if (r->bad || r->off != r->n || state > QUEUE_BUDGET_OVER || !(used >= 0 && used < 1e300) ||
	    !time_ok(start) || !time_ok(at) || action > QUEUE_BUDGET_HOLD || cost > 1)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "budget record %s: malformed", key);
	if (i < 0)
		return GPUQ_OK; /* a budget the policy dropped: its record goes at the next
				   full persist (it encodes as gone) */
	b = &q->budgets[i];
	b->state = state;
	b->used = used;
	b->window_start = start;
	b->evaluated = at;
	b->stale = limit != b->spec.limit || days != b->spec.window_days ||
		   warn != b->spec.warn_pct || action != (uint8_t)b->spec.action ||
		   (bool)cost != b->spec.cost;
	if (at != INT64_MIN && (q->budget_at == INT64_MIN || at > q->budget_at))
		q->budget_at = at;
	return GPUQ_OK;
}

void queue_budgets_restored(queue_t *q)
{
	turn_update(q);
	standings(q);
}

/* ---- views and explanations ---- */

size_t queue_budget_count(const queue_t *q)
{
	return q->n_budgets;
}

int queue_budget_view(const queue_t *q, uint32_t i, queue_budget_view_t *out)
{
	const budget_t *b;
	int64_t end = 0, start = 0;

	if (i >= q->n_budgets)
		return GPUQ_ENOTFOUND;
	b = &q->budgets[i];
	memset(out, 0, sizeof(*out));
	out->scope = b->spec.scope;
	out->name = b->name;
	out->cost = b->spec.cost;
	out->limit = b->spec.limit;
	out->used = b->used;
	out->window_days = b->spec.window_days;
	out->warn_pct = b->spec.warn_pct;
	out->action = b->spec.action;
	out->state = (queue_budget_state_t)b->state;
	out->evaluated_ms = b->evaluated;
	if (b->window_start != INT64_MIN)
		window_of(b->spec.window_days, b->window_start, &start, &end);
	out->window_start_ms = b->window_start;
	out->window_end_ms = end;
	return GPUQ_OK;
}

queue_lq_standing_t queue_lq_standing(const queue_t *q, uint32_t lq)
{
	return lq < q->lq_names.n ? (queue_lq_standing_t)q->lqs[lq].standing : QUEUE_LQ_IN_BUDGET;
}

void queue_budget_explain(const queue_t *q, uint32_t lq, bool figures, char *buf, size_t cap)
{
	const lq_t *l = &q->lqs[lq];
	int32_t bs[3] = {l->budget, l->ns_budget, q->cqs[l->cq].budget};
	queue_budget_action_t want =
	    l->standing == QUEUE_LQ_HELD ? QUEUE_BUDGET_HOLD : QUEUE_BUDGET_LOWER;

	buf[0] = '\0';
	for (int k = 0; k < 3; k++) {
		const budget_t *b = bs[k] >= 0 ? &q->budgets[bs[k]] : NULL;
		int64_t start, end;
		char when[40];

		if (!b || b->state != QUEUE_BUDGET_OVER || b->spec.action != want)
			continue;
		window_of(b->spec.window_days, b->window_start, &start, &end);
		date_text(end, when, sizeof(when));
		if (figures)
			snprintf(
			    buf, cap,
			    "%s %s is over its budget (%.6g of %.6g %s %s; action %s) until %s",
			    scope_words[b->spec.scope], b->name, b->used, b->spec.limit,
			    b->spec.cost ? "in cost" : "GPU-hours",
			    b->spec.window_days ? "in its window" : "this month",
			    action_words[b->spec.action], when);
		else /* nothing that changes while it is over (the coarse status) */
			snprintf(buf, cap, "%s %s is over its budget (action %s) until %s",
				 scope_words[b->spec.scope], b->name, action_words[b->spec.action],
				 when);
		return;
	}
}

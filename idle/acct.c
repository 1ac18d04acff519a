/* idle/acct.c: the accumulator. The series of the last observation are
 * kept sorted by (device, namespace, pod, container), and each observation
 * is sorted the same way and merged with them, so the work is O(n log n)
 * per scrape and the result does not depend on the order of the lines.
 * Tenants are a sorted array (they are few, and only ever added). Room for
 * every tenant an observation could add is taken before anything changes,
 * so an allocation failure leaves the accumulator as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "idle/idle.h"

typedef struct {
	char namespace_[IDLE_NAME_MAX];	 /* tenant key, first part */
	char local_queue[IDLE_NAME_MAX]; /* ... second part ("" unknown) */
	int64_t allocated_gpu_ms;	 /* GPU-ms allocated */
	int64_t idle_gpu_ms;		 /* of which below the threshold */
} tenant_t;

struct idle_acct {
	idle_config_t cfg;	   /* copied at creation */
	idle_sample_t *series;	   /* the last observation's allocated series, sorted */
	size_t n_series;	   /* entries in series */
	tenant_t *tenants;	   /* sorted by (namespace, local_queue) */
	size_t n_tenants;	   /* entries in tenants */
	size_t cap_tenants;	   /* room in tenants */
	bool have_last;		   /* an observation was made */
	int64_t last_ms;	   /* its now */
	int64_t unrecorded_gpu_ms; /* allocated time of tenants past the cap */
	int64_t observations;	   /* successful observe calls */
};

void idle_config_default(idle_config_t *cfg)
{
	cfg->threshold_pct = 10;
	cfg->gap_max_ms = 60000;
	cfg->series_max = IDLE_SAMPLES_MAX;
	cfg->tenants_max = IDLE_TENANTS_MAX;
}

int idle_acct_create(const idle_config_t *cfg, idle_acct_t **out)
{
	idle_acct_t *a;

	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return GPUQ_ENOMEM;
	if (cfg)
		a->cfg = *cfg;
	else
		idle_config_default(&a->cfg);
	if (!(a->cfg.threshold_pct >= 0 && a->cfg.threshold_pct <= 100) || a->cfg.gap_max_ms < 1 ||
	    !a->cfg.series_max || !a->cfg.tenants_max) {
		free(a);
		return GPUQ_EINVAL;
	}
	*out = a;
	return GPUQ_OK;
}

void idle_acct_destroy(idle_acct_t *a)
{
	if (!a)
		return;
	free(a->series);
	free(a->tenants);
	free(a);
}

/* A series' identity: device, namespace, pod, container. */
static int series_cmp(const idle_sample_t *x, const idle_sample_t *y)
{
	int c = strcmp(x->device, y->device);

	if (!c)
		c = strcmp(x->namespace_, y->namespace_);
	if (!c)
		c = strcmp(x->pod, y->pod);
	if (!c)
		c = strcmp(x->container, y->container);
	return c;
}

/* qsort_r over indices into the samples (ctx): equal series keep their
 * order, so the first of duplicates is the one kept. */
static int idx_cmp(const void *pa, const void *pb, void *ctx)
{
	const idle_sample_t *base = ctx;
	size_t x = *(const size_t *)pa, y = *(const size_t *)pb;
	int c = series_cmp(&base[x], &base[y]);

	if (c)
		return c;
	return x < y ? -1 : x > y;
}

/* Where tenant (ns, lq) is or would go; *found says which. */
static size_t tenant_pos(const idle_acct_t *a, const char *ns, const char *lq, bool *found)
{
	size_t lo = 0, hi = a->n_tenants;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(a->tenants[mid].namespace_, ns);

		if (!c)
			c = strcmp(a->tenants[mid].local_queue, lq);
		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Room for `more` tenants (never past tenants_max). */
static int reserve_tenants(idle_acct_t *a, size_t more)
{
	size_t want = a->n_tenants + more;
	tenant_t *t;

	if (want > a->cfg.tenants_max)
		want = a->cfg.tenants_max;
	if (want <= a->cap_tenants)
		return GPUQ_OK;
	if (want < a->cap_tenants * 2 && a->cap_tenants * 2 <= a->cfg.tenants_max)
		want = a->cap_tenants * 2;
	t = realloc(a->tenants, want * sizeof(*t));
	if (!t)
		return GPUQ_ENOMEM;
	a->tenants = t;
	a->cap_tenants = want;
	return GPUQ_OK;
}

/* Add dt GPU-ms of series s to its tenant (room reserved beforehand). */
static void charge(idle_acct_t *a, const idle_sample_t *s, int64_t dt, idle_observe_stats_t *st)
{
	bool found, valid = isfinite(s->value) && s->value >= 0 && s->value <= 100;
	size_t i = tenant_pos(a, s->namespace_, s->local_queue, &found);
	tenant_t *t;

	if (!valid)
		st->invalid++;
	if (!found) {
		if (a->n_tenants >= a->cfg.tenants_max || a->n_tenants >= a->cap_tenants) {
			a->unrecorded_gpu_ms += dt;
			return;
		}
		memmove(&a->tenants[i + 1], &a->tenants[i],
			(a->n_tenants - i) * sizeof(a->tenants[0]));
		t = &a->tenants[i];
		memset(t, 0, sizeof(*t));
		memcpy(t->namespace_, s->namespace_, sizeof(t->namespace_));
		memcpy(t->local_queue, s->local_queue, sizeof(t->local_queue));
		a->n_tenants++;
	}
	t = &a->tenants[i];
	t->allocated_gpu_ms += dt;
	if (valid && s->value < a->cfg.threshold_pct)
		t->idle_gpu_ms += dt;
	st->counted++;
}

/* The allocated samples sorted, duplicates and those past the cap left out:
 * a new array *out of *n copies (NULL when none). */
static int collect(const idle_acct_t *a, const idle_sample_t *samples, size_t n,
		   idle_sample_t **out, size_t *kept, idle_observe_stats_t *st)
{
	size_t *idx = NULL;
	idle_sample_t *arr = NULL;
	size_t m = 0, k = 0;

	*out = NULL;
	*kept = 0;
	if (n) {
		idx = malloc(n * sizeof(*idx));
		if (!idx)
			return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (!samples[i].namespace_[0] || !samples[i].pod[0])
			st->unallocated++;
		else
			idx[m++] = i;
	}
	if (m)
		qsort_r(idx, m, sizeof(*idx), idx_cmp, (void *)samples);
	if (m && !(arr = malloc((m < a->cfg.series_max ? m : a->cfg.series_max) * sizeof(*arr)))) {
		free(idx);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < m; i++) {
		if (k && !series_cmp(&arr[k - 1], &samples[idx[i]]))
			st->duplicates++;
		else if (k == a->cfg.series_max)
			st->over_cap++;
		else
			arr[k++] = samples[idx[i]];
	}
	free(idx);
	*out = arr;
	*kept = k;
	return GPUQ_OK;
}

/* The series of `next` the last observation saw too, charged dt each. */
static void merge(idle_acct_t *a, const idle_sample_t *next, size_t k, int64_t dt,
		  idle_observe_stats_t *st)
{
	size_t i = 0, j = 0;

	while (i < k && j < a->n_series) {
		int c = series_cmp(&next[i], &a->series[j]);

		if (c < 0) {
			i++;
		} else if (c > 0) {
			j++;
		} else {
			charge(a, &next[i], dt, st);
			i++;
			j++;
		}
	}
}

int idle_acct_observe(idle_acct_t *a, const idle_sample_t *samples, size_t n, int64_t now_ms,
		      idle_observe_stats_t *st)
{
	idle_observe_stats_t local;
	idle_sample_t *next;
	size_t k;
	int64_t dt = 0;
	int rc;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	st->samples = n;
	rc = collect(a, samples, n, &next, &k, st);
	if (!rc)
		rc = reserve_tenants(a, k);
	if (rc) {
		free(next);
		return rc;
	}
	if (a->have_last && now_ms <= a->last_ms)
		st->baseline = true;
	else if (a->have_last)
		dt = now_ms - a->last_ms;
	if (dt > a->cfg.gap_max_ms)
		dt = a->cfg.gap_max_ms;
	if (dt > 0) {
		merge(a, next, k, dt, st);
		if (now_ms - a->last_ms > a->cfg.gap_max_ms)
			st->capped = st->counted;
	}
	free(a->series);
	a->series = next;
	a->n_series = k;
	a->have_last = true;
	a->last_ms = now_ms;
	a->observations++;
	return GPUQ_OK;
}

size_t idle_acct_tenant_count(const idle_acct_t *a)
{
	return a->n_tenants;
}

int idle_acct_tenant(const idle_acct_t *a, size_t i, idle_tenant_view_t *v)
{
	if (i >= a->n_tenants)
		return GPUQ_ENOTFOUND;
	v->namespace_ = a->tenants[i].namespace_;
	v->local_queue = a->tenants[i].local_queue;
	v->allocated_gpu_ms = a->tenants[i].allocated_gpu_ms;
	v->idle_gpu_ms = a->tenants[i].idle_gpu_ms;
	return GPUQ_OK;
}

void idle_acct_totals(const idle_acct_t *a, idle_totals_t *t)
{
	t->series = a->n_series;
	t->unrecorded_gpu_ms = a->unrecorded_gpu_ms;
	t->observations = a->observations;
}

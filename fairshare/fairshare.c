/* fairshare: decayed usage, dominant resource share, fairness indices. */
#include "fairshare/fairshare.h"

#include <math.h>
#include <stdbool.h>

double fairshare_decay_factor(int64_t dt_ms, int64_t half_life_ms)
{
	if (dt_ms <= 0)
		return 1.0;
	if (half_life_ms <= 0)
		return 0.0;
	return exp2(-(double)dt_ms / (double)half_life_ms);
}

double fairshare_decay(double usage, double rate, int64_t dt_ms, int64_t half_life_ms)
{
	double f = fairshare_decay_factor(dt_ms, half_life_ms);

	return usage * f + rate * (1.0 - f);
}

double fairshare_entry_penalty(int64_t sample_ms, int64_t half_life_ms)
{
	return 1.0 - fairshare_decay_factor(sample_ms, half_life_ms);
}

fairshare_share_t fairshare_drs(const fairshare_res_t *res, size_t n, int64_t weight_milli,
				size_t *dominant)
{
	fairshare_share_t out = {0.0, weight_milli > 0 ? weight_milli : 0};
	size_t best_i = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t borrowed = res[i].usage - res[i].nominal;
		double ratio;

		if (borrowed <= 0 || res[i].lendable <= 0)
			continue;
		/* Kueue's arithmetic, so equal inputs order as Kueue orders them */
		ratio = (double)borrowed * 1000.0 / (double)res[i].lendable;
		if (ratio > out.ratio) {
			out.ratio = ratio;
			best_i = i;
		}
	}
	if (dominant)
		*dominant = best_i;
	return out;
}

/* Weight 0 and borrowing: after everyone. */
static bool zero_weight_borrows(const fairshare_share_t *s)
{
	return s->weight_milli <= 0 && s->ratio > 0.0;
}

static double weighted(const fairshare_share_t *s)
{
	return s->ratio > 0.0 ? s->ratio / ((double)s->weight_milli / FAIRSHARE_WEIGHT_ONE) : 0.0;
}

int fairshare_share_cmp(const fairshare_share_t *a, const fairshare_share_t *b)
{
	bool za = zero_weight_borrows(a), zb = zero_weight_borrows(b);
	double x, y;

	if (za != zb)
		return za ? 1 : -1;
	x = za ? a->ratio : weighted(a);
	y = za ? b->ratio : weighted(b);
	return x < y ? -1 : x > y;
}

int64_t fairshare_share_ppm(const fairshare_share_t *s)
{
	double v;

	if (zero_weight_borrows(s))
		return FAIRSHARE_INF;
	v = weighted(s) * 1000.0 + 0.5;
	return v >= (double)(FAIRSHARE_INF - 1) ? FAIRSHARE_INF - 1 : (int64_t)v;
}

double fairshare_tenant_key(double usage, int64_t weight_milli)
{
	if (usage <= 0.0)
		return 0.0;
	if (weight_milli <= 0)
		return HUGE_VAL;
	return usage * FAIRSHARE_WEIGHT_ONE / (double)weight_milli;
}

double fairshare_jain_index(const double *x, size_t n)
{
	double sum = 0.0, sq = 0.0;

	for (size_t i = 0; i < n; i++) {
		double v = x[i] > 0.0 ? x[i] : 0.0;

		sum += v;
		sq += v * v;
	}
	if (n == 0 || sq == 0.0)
		return 1.0;
	return sum * sum / ((double)n * sq);
}

double fairshare_slurm_factor(double usage, double shares)
{
	if (shares <= 0.0)
		return 0.0;
	return exp2(-usage / shares);
}

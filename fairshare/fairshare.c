/* fairshare: decayed usage, dominant resource share, fairness indices. */
#include "fairshare/fairshare.h"

#include <math.h>

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

int64_t fairshare_drs(const fairshare_res_t *res, size_t n, size_t *dominant)
{
	int64_t best = 0;
	size_t best_i = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t borrowed = res[i].usage - res[i].nominal;
		int64_t share;

		if (borrowed <= 0)
			continue;
		if (res[i].lendable <= 0) {
			share = FAIRSHARE_INF;
		} else {
			__int128 s = (__int128)borrowed * FAIRSHARE_ONE / res[i].lendable;
			share = s >= FAIRSHARE_INF ? FAIRSHARE_INF - 1 : (int64_t)s;
		}
		if (share > best) {
			best = share;
			best_i = i;
		}
	}
	if (dominant)
		*dominant = best_i;
	return best;
}

int64_t fairshare_weighted(int64_t share, int64_t weight_milli)
{
	__int128 w;

	if (share <= 0)
		return 0;
	if (share == FAIRSHARE_INF || weight_milli <= 0)
		return FAIRSHARE_INF;
	w = (__int128)share * FAIRSHARE_WEIGHT_ONE / weight_milli;
	return w >= FAIRSHARE_INF ? FAIRSHARE_INF - 1 : (int64_t)w;
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

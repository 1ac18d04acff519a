/*
 * fairshare: the arithmetic of fairness, shared by the queueing core and the
 * reports: decayed usage (Kueue admission fair sharing, Slurm), dominant
 * resource share between ClusterQueues of a cohort (Kueue fair sharing),
 * Jain's fairness index and Slurm's classic fair-share factor.
 *
 * Pure: no I/O, no clock, no globals, no allocation. The design decision that
 * matters: shares that decide an ORDER are integers (parts per million,
 * computed with 128-bit intermediates), so two ClusterQueues compare the same
 * way on every machine and after every restart; only the decayed tenant
 * usage, which is a slowly moving tie-breaker, is a double (IEEE-754 binary64,
 * deterministic for the same inputs on the same platform).
 */
#ifndef GPUQ_FAIRSHARE_H
#define GPUQ_FAIRSHARE_H

#include <stddef.h>
#include <stdint.h>

/* One share unit: shares are in parts per million (1.0 = 1,000,000). */
#define FAIRSHARE_ONE 1000000
/* Weights are in thousandths (1.0 = 1000), like a Kubernetes quantity in
 * milli-units; Kueue's default weight 1 is 1000. */
#define FAIRSHARE_WEIGHT_ONE 1000
/* A share that cannot be expressed (something borrowed from nothing, or a
 * weight of 0 with a positive share): larger than any finite share. */
#define FAIRSHARE_INF INT64_MAX

/* 0.5^(dt_ms / half_life_ms): the weight the past keeps after dt_ms.
 * dt_ms <= 0 gives 1.0; half_life_ms <= 0 means "no memory" and gives 0.0
 * for any dt_ms > 0. Result in [0, 1]. */
double fairshare_decay_factor(int64_t dt_ms, int64_t half_life_ms);

/* One decay step: U' = U * f + rate * (1 - f), f = fairshare_decay_factor(
 * dt_ms, half_life_ms). `rate` is the usage observed over the interval (any
 * unit, the same each call). A tenant that stops using decays toward 0 with
 * the given half-life; a constant rate is a fixed point. */
double fairshare_decay(double usage, double rate, int64_t dt_ms, int64_t half_life_ms);

/* The entry penalty for one admission: 1 - 0.5^(sample_ms / half_life_ms),
 * the fraction of a new workload's share a tenant's decayed usage gains at
 * once, so that tenants interleave within one cycle instead of waiting for
 * the next sample (Kueue AFS does the same). */
double fairshare_entry_penalty(int64_t sample_ms, int64_t half_life_ms);

/* One resource of a ClusterQueue as dominant resource share sees it. */
typedef struct {
	int64_t usage;	  /* the CQ's usage of this resource (summed over flavors),
			     including the candidate workload when ranking one */
	int64_t nominal;  /* the CQ's nominal quota of it (summed over flavors) */
	int64_t lendable; /* what the whole cohort can lend of it (sum over its
			     CQs of lendingLimit, or nominal when unset) */
} fairshare_res_t;

/* Dominant resource share of a ClusterQueue in parts per million:
 * max over resources of max(0, usage - nominal) * 10^6 / lendable.
 * A resource borrowed (usage > nominal) with lendable 0 gives FAIRSHARE_INF.
 * 0 when nothing is borrowed or n == 0. When dominant is not NULL it receives
 * the index of the resource that set the maximum (the first one on a tie; 0
 * when the share is 0). Never fails. */
int64_t fairshare_drs(const fairshare_res_t *res, size_t n, size_t *dominant);

/* Weighted share = share * 1000 / weight_milli (share in ppm, weight in
 * thousandths). weight_milli <= 0: 0 when share is 0, else FAIRSHARE_INF.
 * FAIRSHARE_INF stays FAIRSHARE_INF; saturates at FAIRSHARE_INF - 1. */
int64_t fairshare_weighted(int64_t share, int64_t weight_milli);

/* The ordering key of a tenant: decayed usage / weight (weight in
 * thousandths; weight <= 0 behaves as an infinitesimal weight, returning
 * HUGE_VAL for any usage > 0 and 0 for usage 0). Lower goes first. */
double fairshare_tenant_key(double usage, int64_t weight_milli);

/* Jain's fairness index (sum x)^2 / (n * sum x^2) over x[0..n): 1.0 when all
 * equal, 1/n when one value holds everything. n == 0 or all zero gives 1.0
 * (nobody is treated unfairly). Negative values are taken as 0. */
double fairshare_jain_index(const double *x, size_t n);

/* Slurm's classic fair-share factor F = 2^(-usage / shares): 1.0 for a
 * tenant that used nothing, 0.5 for one that used exactly its share.
 * shares <= 0 gives 0.0. */
double fairshare_slurm_factor(double usage, double shares);

#endif

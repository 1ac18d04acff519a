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

/* A ClusterQueue's weighted dominant resource share, kept as Kueue keeps
 * it (pkg/cache/scheduler/fair_sharing.go, DRS) and compared as Kueue
 * compares it (CompareDRS): in floating point, never rounded to an integer,
 * so two different shares never tie for want of digits, and any weight from
 * 0 to very large values and fractions orders queues correctly. */
typedef struct {
	double ratio;	      /* unweighted: max over resources of borrowed *
				 1000 / lendable (0: borrows nothing) */
	int64_t weight_milli; /* fairSharing weight in thousandths (<= 0: 0) */
} fairshare_share_t;

/* The share of a ClusterQueue over res[0..n): per resource borrowed =
 * usage - nominal; a borrowed resource the cohort lends nothing of
 * (lendable 0) adds nothing, as in Kueue. When dominant is not NULL it
 * receives the index that set the maximum (the first one on a tie; 0 when
 * the ratio is 0). Never fails. */
fairshare_share_t fairshare_drs(const fairshare_res_t *res, size_t n, int64_t weight_milli,
				size_t *dominant);

/* Order of two shares: < 0 when a goes first (lower share), 0 when equal,
 * > 0 when b does. A queue of weight 0 that borrows goes after every other
 * (two such: the lower unweighted ratio first); otherwise ratio / weight is
 * compared. */
int fairshare_share_cmp(const fairshare_share_t *a, const fairshare_share_t *b);

/* The weighted share in parts per million (ratio / weight * 1000) for
 * reports and metrics, rounded to nearest; FAIRSHARE_INF for a weight of 0
 * that borrows, saturating at FAIRSHARE_INF - 1. */
int64_t fairshare_share_ppm(const fairshare_share_t *s);

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

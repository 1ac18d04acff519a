/* queue/check.c: the core's quota invariants, checked from its own
 * introspection (queue.h), for tests, property tests and `gpuq simulate
 * --check`. Reads only; allocates one table of sums. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "queue/queue.h"

/* Sum of the admitted (and evicting) workloads' usage per CQ, flavor and
 * resource into sum[(cq * nf + f) * nr + r]; checks each admitted pod set
 * has a flavor for every resource it requests, gangs are whole, and the
 * live workloads are as many as queue_workload_count says. */
static int sum_admitted(const queue_t *q, int64_t *sum, size_t nf, size_t nr, char *why, size_t cap)
{
	queue_wl_t id = QUEUE_NONE;
	size_t live = 0;

	while ((id = queue_workload_next(q, id)) != QUEUE_NONE) {
		queue_workload_view_t v;

		live++;

		if (queue_workload_view(q, id, &v))
			continue;
		if (v.state != QUEUE_WL_ADMITTED && v.state != QUEUE_WL_EVICTING)
			continue;
		if (v.gang_total && v.pods_present != v.gang_total) {
			snprintf(why, cap, "workload %s/%s admitted with %d of its %d gang pods",
				 v.namespace_, v.name, v.pods_present, v.gang_total);
			return GPUQ_ECORRUPT;
		}
		for (size_t p = 0; p < v.n_podsets; p++) {
			for (uint32_t r = 0; r < nr; r++) {
				int64_t per;
				int32_t cnt;
				uint32_t f;
				if (queue_workload_request(q, id, p, r, &per, &cnt) || !per)
					continue;
				if (queue_workload_flavor(q, id, p, r, &f) || f >= nf) {
					snprintf(why, cap,
						 "workload %s/%s admitted without a flavor for %s",
						 v.namespace_, v.name, queue_resource_name(q, r));
					return GPUQ_ECORRUPT;
				}
				sum[((size_t)v.cq * nf + f) * nr + r] += per * cnt;
			}
		}
	}
	if (live != queue_workload_count(q)) {
		snprintf(why, cap, "%zu live workloads, queue_workload_count says %zu", live,
			 queue_workload_count(q));
		return GPUQ_ECORRUPT;
	}
	return GPUQ_OK;
}

static int check_cqs(const queue_t *q, const int64_t *sum, size_t nc, size_t nf, size_t nr,
		     char *why, size_t cap)
{
	for (uint32_t c = 0; c < nc; c++) {
		bool cohort = queue_cq_cohort(q, c) != QUEUE_NONE;
		for (uint32_t f = 0; f < nf; f++) {
			for (uint32_t r = 0; r < nr; r++) {
				int64_t s = sum[((size_t)c * nf + f) * nr + r];
				const char *bad = NULL;
				queue_quota_view_t v;
				if (queue_cq_quota(q, c, f, r, &v)) {
					if (s)
						bad = "usage outside its quota";
				} else if (v.usage != s) {
					bad =
					    "usage differs from the sum of its admitted workloads";
				} else if (!cohort && v.usage > v.nominal) {
					bad = "usage above nominal without a cohort";
				} else if (cohort && v.borrowing_limit >= 0 &&
					   v.usage > v.nominal + v.borrowing_limit) {
					bad = "usage above nominal + borrowingLimit";
				}
				if (bad) {
					snprintf(why, cap,
						 "ClusterQueue %s, flavor %s, %s: %s (admitted "
						 "workloads %" PRId64 ")",
						 queue_cq_name(q, c), queue_flavor_name(q, f),
						 queue_resource_name(q, r), bad, s);
					return GPUQ_ECORRUPT;
				}
			}
		}
	}
	return GPUQ_OK;
}

static int check_cohorts(const queue_t *q, size_t nf, size_t nr, char *why, size_t cap)
{
	for (uint32_t co = 0; co < queue_cohort_count(q); co++) {
		for (uint32_t f = 0; f < nf; f++) {
			for (uint32_t r = 0; r < nr; r++) {
				queue_cohort_view_t v;
				if (queue_cohort_quota(q, co, f, r, &v))
					continue;
				/* a root holds its tree within its subtree quota; a
				 * cohort below takes at most its borrowingLimit more */
				if (queue_cohort_parent(q, co) == QUEUE_NONE
					? v.borrowed <= v.lendable
					: v.borrowing_limit < 0 ||
					      v.borrowed <= v.lendable + v.borrowing_limit)
					continue;
				snprintf(why, cap,
					 "cohort %u, flavor %s, %s: usage %" PRId64
					 " of its subtree quota %" PRId64
					 " (borrowingLimit %" PRId64 ")",
					 co, queue_flavor_name(q, f), queue_resource_name(q, r),
					 v.borrowed, v.lendable, v.borrowing_limit);
				return GPUQ_ECORRUPT;
			}
		}
	}
	return GPUQ_OK;
}

int queue_check(const queue_t *q, char *why, size_t cap)
{
	size_t nf = queue_flavor_count(q), nr = queue_resource_count(q), nc = queue_cq_count(q);
	int64_t *sum;
	int rc;

	if (cap)
		why[0] = '\0';
	sum = calloc(nc * nf * nr + 1, sizeof(*sum));
	if (!sum)
		return GPUQ_ENOMEM;
	rc = sum_admitted(q, sum, nf, nr, why, cap);
	if (!rc)
		rc = check_cqs(q, sum, nc, nf, nr, why, cap);
	if (!rc)
		rc = check_cohorts(q, nf, nr, why, cap);
	if (!rc)
		rc = queue_topology_check(q, why, cap);
	free(sum);
	return rc;
}

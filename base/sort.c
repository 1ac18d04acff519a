/* base/sort.c: a stable sort of uint32_t ids that follows the order already
 * there (a natural merge sort): n - 1 comparisons when the ids come sorted,
 * about n log2(r) for r ascending runs, never more than a merge sort's. */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* Merge the sorted runs a[0..na) and a[na..na+nb) through tmp. */
static void merge(uint32_t *a, size_t na, size_t nb, uint32_t *tmp, gpuq_cmp_fn *cmp, void *ctx)
{
	uint32_t *b = a + na, *out = a;
	size_t i = 0, j = 0;

	if (!na || !nb || cmp(&a[na - 1], &b[0], ctx) <= 0)
		return; /* already in order: the common case */
	memcpy(tmp, a, na * sizeof(*a));
	while (i < na && j < nb)
		*out++ =
		    cmp(&b[j], &tmp[i], ctx) < 0 ? b[j++] : tmp[i++]; /* ties: the left first */
	memcpy(out, tmp + i, (na - i) * sizeof(*a)); /* what is left of b is in place */
}

int gpuq_sort_u32(uint32_t *v, size_t n, gpuq_cmp_fn *cmp, void *ctx)
{
	size_t *ends, n_runs = 0;
	uint32_t *tmp;

	if (n < 2)
		return GPUQ_OK;
	ends = malloc((n / 2 + 1) * sizeof(*ends));
	tmp = malloc(n * sizeof(*tmp));
	if (!ends || !tmp) {
		free(ends);
		free(tmp);
		return GPUQ_ENOMEM;
	}
	/* the ascending runs as they come (a strictly descending one is turned
	 * around, which keeps the sort stable): each but the last has 2 ids
	 * or more */
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		if (j < n && cmp(&v[j], &v[i], ctx) < 0) {
			while (j + 1 < n && cmp(&v[j + 1], &v[j], ctx) < 0)
				j++;
			for (size_t lo = i, hi = j; lo < hi; lo++, hi--) {
				uint32_t t = v[lo];
				v[lo] = v[hi];
				v[hi] = t;
			}
			j++;
		} else if (j < n) { /* v[i + 1] >= v[i]: compared once */
			j++;
			while (j < n && cmp(&v[j], &v[j - 1], ctx) >= 0)
				j++;
		}
		ends[n_runs++] = j;
		i = j;
	}
	/* merge neighbouring runs, pass after pass, until one is left */
	while (n_runs > 1) {
		size_t k = 0;

		for (size_t r = 0; r < n_runs; r += 2) {
			size_t lo = r ? ends[r - 1] : 0;

			if (r + 1 < n_runs)
				merge(v + lo, ends[r] - lo, ends[r + 1] - ends[r], tmp, cmp, ctx);
			ends[k++] = ends[r + 1 < n_runs ? r + 1 : r];
		}
		n_runs = k;
	}
	free(ends);
	free(tmp);
	return GPUQ_OK;
}

/* queue/heads.c: the heads of every ClusterQueue's pending order within a
 * total cap, found by selection rather than by sorting every pending
 * workload (queue_pending_beyond: a prediction pass over 100,000 queued,
 * every 15 s on the controller thread). */
#include <stdlib.h>
#include <string.h>

#include "queue/internal.h"

static int pending_cmp(const void *pa, const void *pb, void *ctx)
{
	return queue_wl_cmp(ctx, *(const uint32_t *)pa, *(const uint32_t *)pb);
}

static void swap_ids(uint32_t *a, uint32_t *b)
{
	uint32_t t = *a;

	*a = *b;
	*b = t;
}

/* Reorder v[0..n) so that v[0..k) are its k first in the cycle's order (in
 * no order among themselves). Quickselect on a median-of-three pivot; past
 * a budget of rounds the range left is sorted instead, so no input makes it
 * quadratic. queue_wl_cmp is a total order: the k first are one set. */
static void quickselect(const queue_t *q, uint32_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n;
	unsigned rounds = 0;

	while (lo < k && k < hi && hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2, st = lo;

		if (++rounds > 128) {
			qsort_r(v + lo, hi - lo, sizeof(*v), pending_cmp, (void *)q);
			return;
		}
		/* the median of v[lo], v[mid], v[hi - 1] into v[hi - 1] */
		if (queue_wl_cmp(q, v[mid], v[lo]) < 0)
			swap_ids(&v[mid], &v[lo]);
		if (queue_wl_cmp(q, v[hi - 1], v[lo]) < 0)
			swap_ids(&v[hi - 1], &v[lo]);
		if (queue_wl_cmp(q, v[mid], v[hi - 1]) < 0)
			swap_ids(&v[mid], &v[hi - 1]);
		for (size_t i = lo; i < hi - 1; i++)
			if (queue_wl_cmp(q, v[i], v[hi - 1]) < 0)
				swap_ids(&v[i], &v[st++]);
		swap_ids(&v[st], &v[hi - 1]); /* the pivot at st: all before it come first */
		if (st == k)
			return;
		if (st < k)
			lo = st + 1;
		else
			hi = st;
	}
}

/* Restore the max-heap h[0..k) (its root the last in the cycle's order)
 * below i. */
static void sift_down(const queue_t *q, uint32_t *h, size_t k, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < k && queue_wl_cmp(q, h[l], h[m]) > 0)
			m = l;
		if (l + 1 < k && queue_wl_cmp(q, h[l + 1], h[m]) > 0)
			m = l + 1;
		if (m == i)
			return;
		swap_ids(&h[i], &h[m]);
		i = m;
	}
}

/* The same as quickselect, by a heap of the k first so far: each of the
 * others is compared with the last of them, held in cache, and read in
 * the order v has it (slot order: memory order), where quickselect reads
 * every workload several times in no order. Slots come mostly in arrival
 * order, so few enter the heap; past n / 8 entries (an order against it)
 * quickselect finishes the job. */
static void select_first(const queue_t *q, uint32_t *v, size_t n, size_t k)
{
	size_t entered = 0;

	if (k == 0 || k >= n)
		return;
	for (size_t i = k / 2; i-- > 0;)
		sift_down(q, v, k, i);
	for (size_t i = k; i < n; i++) {
		if (queue_wl_cmp(q, v[i], v[0]) >= 0)
			continue;
		if (++entered > n / 8) {
			quickselect(q, v, n, k);
			return;
		}
		swap_ids(&v[i], &v[0]);
		sift_down(q, v, k, 0);
	}
}

/* The largest P such that positions 1..P of every CQ (cnt[c] pending in
 * CQ c) number at most total_max. */
static size_t positions_within(const size_t *cnt, size_t n_cq, size_t total_max)
{
	size_t p = 0, total = 0, most = 0, *at_pos;

	for (size_t c = 0; c < n_cq; c++)
		most = cnt[c] > most ? cnt[c] : most;
	at_pos = calloc(most + 2, sizeof(*at_pos)); /* CQs with a workload at position k */
	if (!at_pos)
		return SIZE_MAX;
	for (size_t c = 0; c < n_cq; c++) /* first those with exactly k */
		at_pos[cnt[c]]++;
	for (size_t k = most; k > 1; k--) /* then with k or more */
		at_pos[k - 1] += at_pos[k];
	while (p < most && total + at_pos[p + 1] <= total_max)
		total += at_pos[++p];
	free(at_pos);
	return p;
}

int queue_pending_beyond(const queue_t *q, size_t total_max, uint8_t **beyond, size_t *n_ids)
{
	size_t n_cq = q->cq_names.n, *cnt = calloc(n_cq + 1, sizeof(*cnt)), *at, n = 0, keep;
	uint32_t *all = NULL, *pend, *pend_cq;
	int rc = GPUQ_ENOMEM;

	*beyond = calloc(q->n_wls + 1, 1);
	*n_ids = q->n_wls;
	/* one pass over the workloads: the pending ones and their CQs */
	pend = malloc((q->n_wls + 1) * sizeof(*pend));
	pend_cq = malloc((q->n_wls + 1) * sizeof(*pend_cq));
	for (size_t i = 0; cnt && pend && pend_cq && i < q->n_wls; i++) {
		const wl_t *w = Wc(q, (uint32_t)i);

		if (w->live && w->state == QUEUE_WL_PENDING) {
			cnt[w->cq]++;
			pend_cq[n] = w->cq;
			pend[n++] = (uint32_t)i;
		}
	}
	at = calloc(n_cq + 1, sizeof(*at));
	all = calloc(n + 1, sizeof(*all));
	keep = cnt ? positions_within(cnt, n_cq, total_max) : SIZE_MAX;
	if (!*beyond || !pend || !pend_cq || !at || !all || keep == SIZE_MAX)
		goto out;
	for (size_t c = 1; c <= n_cq; c++) /* each CQ's slice of all[] */
		at[c] = at[c - 1] + cnt[c - 1];
	for (size_t i = 0; i < n; i++) /* in slot order within each */
		all[at[pend_cq[i]]++] = pend[i];
	for (size_t c = 0, s = 0; c < n_cq; s += cnt[c++]) {
		if (cnt[c] <= keep)
			continue;
		select_first(q, all + s, cnt[c], keep);
		for (size_t i = keep; i < cnt[c]; i++)
			(*beyond)[all[s + i]] = 1;
	}
	rc = GPUQ_OK;
out:
	free(cnt);
	free(pend);
	free(pend_cq);
	free(at);
	free(all);
	if (rc) {
		free(*beyond);
		*beyond = NULL;
		*n_ids = 0;
	}
	return rc;
}

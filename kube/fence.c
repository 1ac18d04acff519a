/* kube/fence.c: the Lease's deadline and the stop flag that the requests of
 * attached clients consult (kube.h, "Fencing"), and the pure arithmetic
 * behind them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/internal.h"

#define MARGIN_MIN_MS 1000 /* the margin's floor: a lease of a few seconds keeps 1 s */

struct kube_fence {
	_Atomic int64_t until;	   /* monotonic ms the lease holds until; 0: not held */
	atomic_bool stopping;	   /* every request refused, every wait ended */
	atomic_uint_fast64_t term; /* holds that followed a gap */
	pthread_mutex_t mu;	   /* pairs with cv; guards nothing the atomics do not */
	pthread_cond_t cv;	   /* broadcast on every hold, drop, stop (monotonic clock) */
	char token[KUBE_FENCE_TOKEN_MAX + 1]; /* the term's token (under mu) */
};

int64_t kube_lease_margin_ms(int duration_s)
{
	int64_t d = (int64_t)(duration_s > 0 ? duration_s : 15) * 1000;

	return d / 5 > MARGIN_MIN_MS ? d / 5 : MARGIN_MIN_MS;
}

int64_t kube_lease_deadline(int64_t sent_ms, int duration_s)
{
	int64_t d = (int64_t)(duration_s > 0 ? duration_s : 15) * 1000;

	return sent_ms + d - kube_lease_margin_ms(duration_s);
}

int kube_fence_plan(int64_t until_ms, bool stopping, int64_t at_ms, long base_ms, long *timeout_ms)
{
	*timeout_ms = base_ms > 0 ? base_ms : KUBE_REQUEST_TIMEOUT_MS;
	if (stopping)
		return GPUQ_ESTOPPED;
	if (until_ms <= at_ms)
		return GPUQ_EFENCED;
	if (until_ms - at_ms < (int64_t)*timeout_ms)
		*timeout_ms = (long)(until_ms - at_ms);
	return GPUQ_OK;
}

int kube_fence_create(kube_fence_t **out)
{
	kube_fence_t *f = calloc(1, sizeof(*f));
	pthread_condattr_t ca;

	if (!f)
		return GPUQ_ENOMEM;
	atomic_init(&f->until, 0);
	atomic_init(&f->stopping, false);
	atomic_init(&f->term, 0);
	if (pthread_condattr_init(&ca)) {
		free(f);
		return GPUQ_ENOMEM;
	}
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&f->cv, &ca)) {
		pthread_condattr_destroy(&ca);
		free(f);
		return GPUQ_ENOMEM;
	}
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&f->mu, NULL);
	*out = f;
	return GPUQ_OK;
}

void kube_fence_destroy(kube_fence_t *f)
{
	if (!f)
		return;
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

int kube_fence_token_format(uint32_t transitions, const char *identity, char *out, size_t cap)
{
	int n = snprintf(out, cap, KUBE_FENCE_TOKEN_PREFIX "%u-%s", transitions, identity);

	if (n < 0 || (size_t)n >= cap || n > KUBE_FENCE_TOKEN_MAX) {
		if (cap)
			out[0] = '\0';
		return GPUQ_ELIMIT;
	}
	return GPUQ_OK;
}

void kube_fence_set_token(kube_fence_t *f, const char *token)
{
	pthread_mutex_lock(&f->mu);
	gpuq_strlcpy(f->token, token, sizeof(f->token));
	pthread_mutex_unlock(&f->mu);
}

void kube_fence_token(kube_fence_t *f, char *out, size_t cap)
{
	pthread_mutex_lock(&f->mu);
	gpuq_strlcpy(out, f->token, cap);
	pthread_mutex_unlock(&f->mu);
}

int kube_fenced_path(const char *path, const char *token, char *out, size_t cap)
{
	char esc[3 * KUBE_FENCE_TOKEN_MAX + 1];
	int n;

	if (kube_escape(token, esc, sizeof(esc)))
		return GPUQ_ELIMIT;
	n = snprintf(out, cap, "%s%cfieldManager=%s", path, strchr(path, '?') ? '&' : '?', esc);
	return n < 0 || (size_t)n >= cap ? GPUQ_ELIMIT : GPUQ_OK;
}

static void wake_all(kube_fence_t *f)
{
	pthread_mutex_lock(&f->mu);
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void kube_fence_hold(kube_fence_t *f, int64_t until_ms)
{
	/* the term before the deadline: a reader that sees the new deadline
	 * (kube_fence_held, then kube_fence_term) sees the new term too. One
	 * thread moves the deadline (the Lease's keeper), so load then store. */
	if (atomic_load(&f->until) <= gpuq_mono_ms())
		atomic_fetch_add(&f->term, 1);
	atomic_store(&f->until, until_ms);
	wake_all(f);
}

void kube_fence_drop(kube_fence_t *f)
{
	atomic_store(&f->until, 0);
	wake_all(f);
}

void kube_fence_stop(kube_fence_t *f)
{
	atomic_store(&f->stopping, true);
	wake_all(f);
}

void kube_fence_resume(kube_fence_t *f)
{
	atomic_store(&f->stopping, false);
}

bool kube_fence_stopping(const kube_fence_t *f)
{
	return atomic_load(&((kube_fence_t *)f)->stopping);
}

int64_t kube_fence_until(const kube_fence_t *f)
{
	return atomic_load(&((kube_fence_t *)f)->until);
}

bool kube_fence_held(const kube_fence_t *f, int64_t now_ms)
{
	return kube_fence_until(f) > now_ms;
}

uint64_t kube_fence_term(const kube_fence_t *f)
{
	return atomic_load(&((kube_fence_t *)f)->term);
}

static void mono_ts(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000;
}

int kube_fence_sleep(kube_fence_t *f, int64_t wake_ms, bool lease)
{
	struct timespec ts;
	int rc = GPUQ_OK;

	mono_ts(wake_ms, &ts);
	pthread_mutex_lock(&f->mu);
	for (;;) {
		long unused;
		rc = kube_fence_plan(lease ? atomic_load(&f->until) : INT64_MAX,
				     atomic_load(&f->stopping), wake_ms, 0, &unused);
		if (rc || gpuq_mono_ms() >= wake_ms)
			break;
		if (pthread_cond_timedwait(&f->cv, &f->mu, &ts) == ETIMEDOUT)
			continue; /* re-checked above: the wake time has come */
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

bool kube_fence_await(kube_fence_t *f, int64_t until_ms)
{
	struct timespec ts;
	bool held;

	mono_ts(until_ms, &ts);
	pthread_mutex_lock(&f->mu);
	while (!(held = kube_fence_held(f, gpuq_mono_ms())) && !atomic_load(&f->stopping) &&
	       gpuq_mono_ms() < until_ms)
		(void)pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	pthread_mutex_unlock(&f->mu);
	return held;
}

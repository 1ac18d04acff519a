/* base/publish.c: the published-snapshot slot. See base.h. */
#include "base/base.h"

/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines. */
static int cond_init_mono(pthread_cond_t *cond)
{
	pthread_condattr_t a;
	int rc = pthread_condattr_init(&a);

	if (rc)
		return rc;
	rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(cond, &a);
	pthread_condattr_destroy(&a);
	return rc;
}

int gpuq_pub_init(gpuq_pub_t *p, void (*ref)(void *snap), void (*unref)(void *snap))
{
	p->snap = NULL;
	p->ref = ref;
	p->unref = unref;
	if (pthread_mutex_init(&p->lock, NULL))
		return GPUQ_ENOMEM;
	if (cond_init_mono(&p->changed)) {
		pthread_mutex_destroy(&p->lock);
		return GPUQ_ENOMEM;
	}
	return GPUQ_OK;
}

void gpuq_pub_deinit(gpuq_pub_t *p)
{
	gpuq_pub_swap(p, NULL);
	pthread_cond_destroy(&p->changed);
	pthread_mutex_destroy(&p->lock);
}

void gpuq_pub_swap(gpuq_pub_t *p, void *snap)
{
	void *old;

	pthread_mutex_lock(&p->lock);
	old = p->snap;
	p->snap = snap;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	if (old)
		p->unref(old); /* outside the lock: a reader may hold the last reference */
}

void *gpuq_pub_get(gpuq_pub_t *p)
{
	void *s;

	pthread_mutex_lock(&p->lock);
	s = p->snap;
	if (s)
		p->ref(s);
	pthread_mutex_unlock(&p->lock);
	return s;
}

bool gpuq_pub_has(gpuq_pub_t *p)
{
	bool has;

	pthread_mutex_lock(&p->lock);
	has = p->snap != NULL;
	pthread_mutex_unlock(&p->lock);
	return has;
}

void gpuq_pub_wait(gpuq_pub_t *p, bool (*stale)(const void *snap, int64_t now_ms),
		   int64_t deadline_ms)
{
	struct timespec ts = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000};

	pthread_mutex_lock(&p->lock);
	for (int64_t now = gpuq_mono_ms(); p->snap && stale(p->snap, now) && now < deadline_ms;
	     now = gpuq_mono_ms())
		(void)pthread_cond_timedwait(&p->changed, &p->lock, &ts);
	pthread_mutex_unlock(&p->lock);
}

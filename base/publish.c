/* base/publish.c: the published-snapshot slot. See base.h. */
#include "base/base.h"

int gpuq_pub_init(gpuq_pub_t *p, void (*ref)(void *snap), void (*unref)(void *snap))
{
	p->snap = NULL;
	p->ref = ref;
	p->unref = unref;
	return pthread_mutex_init(&p->lock, NULL) ? GPUQ_ENOMEM : GPUQ_OK;
}

void gpuq_pub_deinit(gpuq_pub_t *p)
{
	gpuq_pub_swap(p, NULL);
	pthread_mutex_destroy(&p->lock);
}

void gpuq_pub_swap(gpuq_pub_t *p, void *snap)
{
	void *old;

	pthread_mutex_lock(&p->lock);
	old = p->snap;
	p->snap = snap;
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

/* controller/patcher.c: the release patches of one pass, sent at once. The
 * controller thread decides and commits; each release is then one PATCH
 * round trip through the apiserver, and sent one after the other they were
 * most of a release's time under load (docs/controller.md, "Latency
 * budget": at 20 Jobs/s a pass's releases waited on each other, and every
 * event behind them waited too). A pass's releases go out together on
 * CONTROLLER_PATCHERS connections of their own, each on its own thread, and
 * the controller thread takes the answers back once all are in: what it
 * does with an answer is unchanged, only the waiting overlaps.
 *
 * Every connection is fenced by the Lease (KUBE_FENCE_WRITES), as the
 * controller thread's own: a release is never sent without it. The
 * controller thread waits for its batch, so a patch, its body and its
 * answer are only ever touched by one thread at a time (the mutex orders the
 * hand-overs). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

struct patcher {
	kube_client_t *client[CONTROLLER_PATCHERS]; /* one connection per thread */
	pthread_t thread[CONTROLLER_PATCHERS];
	size_t n_threads;	/* started */
	pthread_mutex_t mu;	/* guards the batch fields */
	pthread_cond_t work;	/* a batch came, or stop */
	pthread_cond_t done_cv; /* the batch is answered */
	controller_patch_t *ps; /* the batch (the caller's; NULL: none) */
	size_t n, next, done;	/* its size, the next to take, answered */
	bool stop;		/* the threads end */
};

typedef struct {
	struct patcher *p;
	size_t i; /* its connection */
} worker_t;

static void *worker_main(void *arg)
{
	worker_t w = *(worker_t *)arg;
	struct patcher *p = w.p;

	free(arg);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		controller_patch_t *x;

		while (!p->stop && (!p->ps || p->next == p->n))
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stop)
			break;
		x = &p->ps[p->next++];
		pthread_mutex_unlock(&p->mu);
		x->rc =
		    kube_patch_text(p->client[w.i], x->path, x->kind, x->body, &x->reply, &x->diag);
		pthread_mutex_lock(&p->mu);
		if (++p->done == p->n)
			pthread_cond_signal(&p->done_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int controller_patcher_start(const kube_config_t *cfg, const kube_client_opts_t *o,
			     kube_fence_t *fence, controller_patcher_t **out, gpuq_diag_t *diag)
{
	struct patcher *p = calloc(1, sizeof(*p));
	int rc = GPUQ_OK;

	if (!p)
		return GPUQ_ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	for (size_t i = 0; !rc && i < CONTROLLER_PATCHERS; i++) {
		worker_t *w = malloc(sizeof(*w));

		rc = w ? kube_client_create(cfg, o, &p->client[i], diag) : GPUQ_ENOMEM;
		if (!rc) {
			kube_client_fence(p->client[i], fence, KUBE_FENCE_WRITES);
			*w = (worker_t){p, i};
			if (pthread_create(&p->thread[i], NULL, worker_main, w) != 0)
				rc = gpuq_diag_set(diag, GPUQ_ENOMEM,
						   "cannot start a release patcher thread");
		}
		if (rc)
			free(w);
		else
			p->n_threads++;
	}
	if (rc) {
		controller_patcher_stop(p);
		return rc;
	}
	*out = p;
	return GPUQ_OK;
}

void controller_patcher_run(controller_patcher_t *p, controller_patch_t *ps, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&p->mu);
	p->ps = ps;
	p->n = n;
	p->next = p->done = 0;
	pthread_cond_broadcast(&p->work);
	while (p->done < n)
		pthread_cond_wait(&p->done_cv, &p->mu);
	p->ps = NULL;
	p->n = p->next = p->done = 0;
	pthread_mutex_unlock(&p->mu);
}

void controller_patcher_stop(controller_patcher_t *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < p->n_threads; i++)
		pthread_join(p->thread[i], NULL);
	for (size_t i = 0; i < CONTROLLER_PATCHERS; i++)
		kube_client_destroy(p->client[i]);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* controller/elect.c: the Lease thread. Leader election runs on a thread
 * and a connection of its own, so a renewal is never held up behind the
 * controller thread's patches or the status writer's (both at --qps, both
 * waiting out 429s): a round every LEASE_RETRY_MS whatever they do. Each
 * round that holds the Lease moves the fence's deadline to
 * kube_lease_deadline(the round's start): every write of the leader's
 * clients consults that deadline before it is sent, so a replica whose
 * renewals stall stops acting, at the latest, the margin before a standby
 * may take over (docs/controller.md, "Leader election and replicas"). */
#include <stdio.h>
#include <string.h>

#include "controller/internal.h"

#define LEASE_RETRY_MS 2000 /* round spacing (client-go's retry period) */
/* A round's requests (a GET, a PUT) each get at most this long: two of
 * them fit well inside the time a lease gives (12 s of 15 s). A request
 * that times out only costs a round; 429s are not waited out here for the
 * same reason (the next round is 2 s away). */
#define LEASE_REQUEST_MS 5000

static kube_lease_opts_t lease_opts(const struct controller *c)
{
	kube_lease_opts_t lo = {.namespace_ = c->o.lease_namespace,
				.name = c->o.lease_name,
				.identity = c->o.identity,
				.duration_s = c->o.lease_duration_s};
	return lo;
}

/* One round: renew or take the Lease, move the fence, publish what was
 * seen. Returns whether the fence holds after it. */
static bool round_once(struct controller *c, kube_lease_state_t *st, uint32_t *failures)
{
	kube_lease_opts_t lo = lease_opts(c);
	gpuq_diag_t diag = {{0}};
	int64_t sent = gpuq_mono_ms(); /* before anything goes out: the deadline counts from here */
	int rc = kube_lease_try(c->lease_client, &lo, kube_now_ms(), st, &diag);

	if (rc == GPUQ_OK) {
		if (*failures)
			gpuq_log(GPUQ_LOG_INFO, "controller",
				 "leader election: the Lease answers again after %u failed rounds",
				 *failures);
		*failures = 0;
		if (st->leader && !atomic_load(&c->gave_up)) {
			char tok[KUBE_FENCE_TOKEN_MAX + 1];

			/* the term's token first, so no write of the term names
			   another (an identity too long for one was refused at
			   start: cmd/serve_opts.c) */
			(void)kube_fence_token_format(st->transitions, c->o.identity, tok,
						      sizeof(tok));
			kube_fence_set_token(c->fence, tok);
			kube_fence_hold(c->fence, kube_lease_deadline(sent, c->o.lease_duration_s));
		} else {
			kube_fence_drop(c->fence);
		}
	} else if (rc != GPUQ_ESTOPPED) {
		/* the deadline stays: leadership lapses by itself if this goes on */
		uint32_t n = ++*failures;
		if ((n & (n - 1)) == 0)
			gpuq_log(GPUQ_LOG_WARN, "controller",
				 "leader election: %s (failed round %u in a row; leading until "
				 "the Lease's deadline at most)",
				 diag.msg, n);
	}
	pthread_mutex_lock(&c->lease_mu);
	if (rc == GPUQ_OK)
		c->lease_seen = *st;
	c->lease_rounds++;
	pthread_cond_broadcast(&c->lease_cv);
	pthread_mutex_unlock(&c->lease_mu);
	return kube_fence_held(c->fence, gpuq_mono_ms());
}

static void *lease_main(void *arg)
{
	struct controller *c = arg;
	kube_lease_state_t st;
	uint32_t failures = 0;
	bool held = false, released = false;

	memset(&st, 0, sizeof(st));
	while (!atomic_load(&c->stop)) {
		int64_t start = gpuq_mono_ms();
		bool now_held;

		if (atomic_load(&c->gave_up)) {
			/* the controller thread gave up (its store keeps failing):
			 * the Lease handed over at once, and never taken again */
			if (!released)
				controller_elect_release(c);
			released = true;
			kube_fence_drop(c->fence);
			(void)kube_fence_sleep(c->fence, start + LEASE_RETRY_MS, false);
			continue;
		}
		now_held = round_once(c, &st, &failures);
		if (atomic_load(&c->gave_up)) /* given up during the round: its hold undone */
			kube_fence_drop(c->fence);
		if (now_held != held)
			controller_equeue_kick(
			    &c->events); /* the controller thread follows at once */
		held = now_held;
		/* the next round, or earlier the moment the fence is stopped; a
		 * lease that runs out meanwhile wakes the controller thread by
		 * its own deadline (loop.c next_deadline) */
		(void)kube_fence_sleep(c->fence, start + LEASE_RETRY_MS, false);
	}
	return NULL;
}

int controller_elect_start(struct controller *c, gpuq_diag_t *diag)
{
	kube_client_opts_t co = c->o.client;
	int rc;

	if (!c->o.leader_elect)
		return GPUQ_OK;
	co.timeout_ms = LEASE_REQUEST_MS;
	co.no_retry = true;
	rc = kube_client_create(c->o.kube, &co, &c->lease_client, diag);
	if (rc)
		return rc;
	kube_client_fence(c->lease_client, c->fence, KUBE_FENCE_STOP);
	if (pthread_create(&c->lease_thread, NULL, lease_main, c) != 0)
		return gpuq_diag_set(diag, GPUQ_ENOMEM, "cannot start the Lease thread");
	c->lease_running = true;
	return GPUQ_OK;
}

void controller_elect_wait_first(struct controller *c)
{
	if (!c->o.leader_elect)
		return;
	pthread_mutex_lock(&c->lease_mu);
	while (c->lease_rounds == 0 && !atomic_load(&c->stop) && c->lease_running)
		pthread_cond_wait(&c->lease_cv, &c->lease_mu);
	pthread_mutex_unlock(&c->lease_mu);
}

void controller_elect_follow(struct controller *c)
{
	if (!c->o.leader_elect)
		return;
	pthread_mutex_lock(&c->lease_mu);
	c->lease = c->lease_seen;
	pthread_mutex_unlock(&c->lease_mu);
}

void controller_elect_wake(struct controller *c)
{
	pthread_mutex_lock(&c->lease_mu);
	pthread_cond_broadcast(&c->lease_cv);
	pthread_mutex_unlock(&c->lease_mu);
}

void controller_elect_stop(struct controller *c)
{
	controller_elect_wake(c);
	if (c->lease_running) {
		pthread_join(c->lease_thread, NULL);
		c->lease_running = false;
	}
}

void controller_elect_release(struct controller *c)
{
	kube_lease_opts_t lo = lease_opts(c);
	gpuq_diag_t diag = {{0}};
	bool ours;

	if (!c->o.leader_elect || !c->lease_client)
		return;
	pthread_mutex_lock(&c->lease_mu);
	ours = strcmp(c->lease_seen.holder, c->o.identity) == 0;
	pthread_mutex_unlock(&c->lease_mu);
	/* the holder named in the Lease, not the fence: a lapsed lease nobody
	 * took yet is still worth handing over at once */
	if (!ours)
		return;
	if (kube_lease_release(c->lease_client, &lo, &diag))
		gpuq_log(GPUQ_LOG_WARN, "controller", "giving the Lease up: %s", diag.msg);
	else
		gpuq_log(GPUQ_LOG_INFO, "controller", "%s gave the Lease up", c->o.identity);
	kube_fence_drop(c->fence);
}

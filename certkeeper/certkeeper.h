/*
 * certkeeper: the serving certificate kept in a Kubernetes Secret, on every
 * replica of `gpuq serve --cert-secret` (each serves the webhook). The
 * Secret is the one truth: the first replica to find it missing makes a CA
 * and a serving certificate and creates it; a replica that finds the
 * serving certificate in its last third of validity (or naming other
 * hosts) issues a new one from the same CA; the loser of either race reads
 * again. Each replica copies the pair into its cert dir (the HTTP server
 * reloads it) and writes the CA into its webhook configurations' caBundle.
 *
 * On certs/ (OpenSSL) and kube/ (the apiserver), below every other part of
 * the daemon: it shares nothing with the controller or the server. One
 * thread per keeper, with its own connection and a stop-only fence.
 */
#ifndef GPUQ_CERTKEEPER_H
#define GPUQ_CERTKEEPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/base.h"
#include "kube/kube.h"

/* ---- The serving certificate kept in a Secret (every replica) ---- */

typedef struct {
	const char *namespace_; /* the Secret's namespace */
	const char *name;	/* the Secret's name (type kubernetes.io/tls, with
				   ca.crt and ca.key beside tls.crt and tls.key) */
	const char *cert_dir;	/* where the server reads tls.crt and tls.key */
	const char *const *dns; /* the serving certificate's DNS names */
	size_t n_dns;
	const char *const *ips; /* ... and IP addresses */
	size_t n_ips;
	int days;		    /* serving validity (default 365); renewed with a
				       third of it left */
	const char *webhook_config; /* the Mutating- and ValidatingWebhookConfiguration
				       of this name get the CA as every webhook's
				       caBundle; NULL: left alone (cert-manager) */
	int64_t interval_ms;	    /* how often the Secret is checked (default 60 s) */
} certkeeper_opts_t;

void certkeeper_opts_default(certkeeper_opts_t *o);

/* One pass at `now`: read the Secret; create it with a new CA and serving
 * certificate when missing, or put a new serving certificate from its CA
 * into it when a third of the old one's validity or less is left or it names
 * other hosts (the update carries the resourceVersion read; a replica that
 * loses a race reads again); copy tls.crt, tls.key and ca.crt into cert_dir
 * when tls.crt differs (*changed then true); write the caBundles. A Secret
 * whose CA is unusable is an error naming it, never replaced. */
int certkeeper_sync(kube_client_t *c, const certkeeper_opts_t *o, time_t now, bool *changed,
		    gpuq_diag_t *diag);

typedef struct certkeeper certkeeper_t;

/* Sync once (so the files exist when this returns GPUQ_OK), then again every
 * interval_ms on a thread of its own (failures logged and retried). o's
 * strings are borrowed until certkeeper_stop. */
int certkeeper_start(const kube_config_t *cfg, const kube_client_opts_t *co,
		     const certkeeper_opts_t *o, certkeeper_t **out, gpuq_diag_t *diag);

/* Stop the thread and free. NULL is fine. */
void certkeeper_stop(certkeeper_t *k);

#endif

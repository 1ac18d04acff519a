/* certkeeper/certkeeper.c: the serving certificate kept in a Secret, on
 * every replica (each serves the webhook). The Secret is the one truth: the
 * first replica to find it missing makes a CA and a serving certificate and
 * creates it; a replica that finds the serving certificate in its last third
 * of validity (or naming other hosts) issues a new one from the same CA and
 * updates the Secret with its resourceVersion; the loser of either race
 * re-reads. Each replica then puts tls.crt/tls.key/ca.crt into its cert dir
 * (renamed into place, tls.crt last: the server reloads within a second) and
 * writes the CA into its webhook configurations' caBundle when it differs.
 * The CA key lives in the Secret only (and for a moment in a private scratch
 * directory). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "certs/certs.h"
#include "certkeeper/certkeeper.h"

#define MODULE "certs"
#define SYNC_TRIES 3 /* reads after a lost create/update race */

static const char *const pem_keys[] = {CERTS_FILE_CA_CERT, CERTS_FILE_CA_KEY, CERTS_FILE_TLS_CERT,
				       CERTS_FILE_TLS_KEY};
enum { K_CA_CERT, K_CA_KEY, K_TLS_CERT, K_TLS_KEY, K_COUNT };

void certkeeper_opts_default(certkeeper_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->days = CERTS_DAYS_DEFAULT;
	o->interval_ms = (int64_t)60 * 1000;
}

static int scratch_path(const certkeeper_opts_t *o, const char *file, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/.certkeeper%s%s", o->cert_dir, file ? "/" : "",
			 file ? file : "");
	return n < 0 || (size_t)n >= cap ? GPUQ_ELIMIT : GPUQ_OK;
}

static void scratch_clear(const certkeeper_opts_t *o)
{
	char p[4096];

	for (int k = 0; k < K_COUNT; k++)
		if (!scratch_path(o, pem_keys[k], p, sizeof(p)))
			(void)unlink(p);
	if (!scratch_path(o, NULL, p, sizeof(p)))
		(void)rmdir(p);
}

static int scratch_make(const certkeeper_opts_t *o, gpuq_diag_t *diag)
{
	char p[4096];

	scratch_clear(o);
	if (scratch_path(o, NULL, p, sizeof(p)))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "--cert-dir: path too long");
	if (mkdir(p, 0700) && errno != EEXIST)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s: %s", p, strerror(errno));
	return GPUQ_OK;
}

/* The Secret's four PEM blobs, decoded. */
typedef struct {
	char *pem[K_COUNT];
	size_t len[K_COUNT];
	char rv[128]; /* metadata.resourceVersion, "" when none */
} material_t;

static void material_free(material_t *m)
{
	for (int k = 0; k < K_COUNT; k++)
		free(m->pem[k]);
	memset(m, 0, sizeof(*m));
}

/* Decode secret.data into m. GPUQ_ENOTFOUND when tls.crt or tls.key is
 * missing; ca.crt and ca.key may be (then m->pem[...] stays NULL). */
static int material_from_secret(const json_t *secret, material_t *m, const certkeeper_opts_t *o,
				gpuq_diag_t *diag)
{
	const json_t *data = json_object_get(secret, "data");
	const char *rv = json_string_value(
	    json_object_get(json_object_get(secret, "metadata"), "resourceVersion"));

	gpuq_strlcpy(m->rv, rv ? rv : "", sizeof(m->rv));
	for (int k = 0; k < K_COUNT; k++) {
		const char *v = json_string_value(json_object_get(data, pem_keys[k]));
		int rc;

		if (!v && (k == K_CA_KEY || k == K_CA_CERT))
			continue; /* made elsewhere (cert-manager, kustomize): used as is */
		if (!v)
			return gpuq_diag_set(diag, GPUQ_ENOTFOUND,
					     "Secret %s/%s: data[%s] is missing", o->namespace_,
					     o->name, pem_keys[k]);
		rc = gpuq_base64_decode(v, KUBE_PEM_MAX, &m->pem[k], &m->len[k]);
		if (rc)
			return gpuq_diag_set(diag, rc == GPUQ_ENOMEM ? rc : GPUQ_ECORRUPT,
					     "Secret %s/%s: data[%s] is not base64 of at most %u "
					     "bytes",
					     o->namespace_, o->name, pem_keys[k], KUBE_PEM_MAX);
	}
	return GPUQ_OK;
}

static int material_write(const certkeeper_opts_t *o, const material_t *m, gpuq_diag_t *diag)
{
	char dir[4096];
	int rc = scratch_path(o, NULL, dir, sizeof(dir));

	for (int k = 0; k < K_COUNT && !rc; k++)
		if (m->pem[k])
			rc = certs_file_write(dir, pem_keys[k], m->pem[k], m->len[k],
					      k == K_CA_KEY || k == K_TLS_KEY ? 0600 : 0644, diag);
	return rc;
}

static int material_read(const certkeeper_opts_t *o, material_t *m, gpuq_diag_t *diag)
{
	char p[4096];
	int rc = GPUQ_OK;

	for (int k = 0; k < K_COUNT && !rc; k++) {
		free(m->pem[k]);
		m->pem[k] = NULL;
		rc = scratch_path(o, pem_keys[k], p, sizeof(p));
		if (!rc)
			rc = kube_file_read(p, KUBE_PEM_MAX, &m->pem[k], &m->len[k], diag);
	}
	return rc;
}

/* Whether the certificate names exactly the hosts asked for. */
static bool names_match(const certkeeper_opts_t *o, const certs_cert_summary_t *s)
{
	if (s->n_dns != o->n_dns || s->n_ips != o->n_ips)
		return false;
	for (size_t i = 0; i < o->n_dns; i++)
		if (strcmp(s->dns[i], o->dns[i]) != 0)
			return false;
	for (size_t i = 0; i < o->n_ips; i++)
		if (strcmp(s->ips[i], o->ips[i]) != 0)
			return false;
	return true;
}

/* Issue a serving certificate from ca into the scratch dir (and the CA's
 * files when write_ca), then read all four back into m. */
static int issue(const certkeeper_opts_t *o, const certs_ca_t *ca, bool write_ca, time_t now,
		 material_t *m, gpuq_diag_t *diag)
{
	certs_serving_spec_t spec = {o->dns, o->n_dns, o->ips, o->n_ips, o->days};
	certs_serving_t *srv = NULL;
	char dir[4096];
	int rc = certs_serving_issue(ca, &spec, now, &srv, diag);

	if (!rc)
		rc = scratch_path(o, NULL, dir, sizeof(dir));
	if (!rc)
		rc = certs_write_dir(dir, ca, write_ca, srv, diag);
	if (!rc)
		rc = material_read(o, m, diag);
	certs_serving_destroy(srv);
	return rc;
}

static json_t *secret_body(const certkeeper_opts_t *o, const material_t *m)
{
	json_t *data = json_object(), *s;

	for (int k = 0; k < K_COUNT && data; k++) {
		char *b = malloc(GPUQ_BASE64_LEN(m->len[k]) + 1);
		if (!b) {
			json_decref(data);
			return NULL;
		}
		b[gpuq_base64_encode(m->pem[k], m->len[k], b)] = '\0';
		json_object_set_new(data, pem_keys[k], json_string(b));
		free(b);
	}
	s = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:o}", "apiVersion", "v1", "kind",
		      "Secret", "metadata", "name", o->name, "namespace", o->namespace_, "labels",
		      "app.kubernetes.io/name", "gpuq", "type", "kubernetes.io/tls", "data", data);
	if (s && m->rv[0])
		json_object_set_new(json_object_get(s, "metadata"), "resourceVersion",
				    json_string(m->rv));
	return s;
}

/* Rename the scratch files into the cert dir when tls.crt differs from the
 * one there: ca.crt, tls.key, then tls.crt (the server reloads on tls.crt). */
static int install(const certkeeper_opts_t *o, const material_t *m, bool *changed,
		   gpuq_diag_t *diag)
{
	static const int order[] = {K_CA_CERT, K_TLS_KEY, K_TLS_CERT};
	char from[4096], to[4096];
	char *cur = NULL;
	size_t cur_len = 0;

	snprintf(to, sizeof(to), "%s/%s", o->cert_dir, CERTS_FILE_TLS_CERT);
	if (kube_file_read(to, KUBE_PEM_MAX, &cur, &cur_len, NULL) == GPUQ_OK &&
	    cur_len == m->len[K_TLS_CERT] && memcmp(cur, m->pem[K_TLS_CERT], cur_len) == 0) {
		free(cur);
		return GPUQ_OK;
	}
	free(cur);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!m->pem[order[i]])
			continue; /* no ca.crt in a Secret made elsewhere */
		if (scratch_path(o, pem_keys[order[i]], from, sizeof(from)) ||
		    snprintf(to, sizeof(to), "%s/%s", o->cert_dir, pem_keys[order[i]]) >=
			(int)sizeof(to))
			return gpuq_diag_set(diag, GPUQ_ELIMIT, "--cert-dir: path too long");
		if (rename(from, to))
			return gpuq_diag_set(diag, GPUQ_EIO, "rename %s to %s: %s", from, to,
					     strerror(errno));
	}
	*changed = true;
	return GPUQ_OK;
}

/* Put the CA into every webhook's caBundle of one configuration. */
static int ca_bundle(kube_client_t *c, const certkeeper_opts_t *o, const char *kind,
		     const material_t *m, gpuq_diag_t *diag)
{
	char path[1024], en[300];
	char *b64 = malloc(GPUQ_BASE64_LEN(m->len[K_CA_CERT]) + 1);
	json_t *cfg = NULL, *ops = NULL;
	const json_t *hooks;
	const char *rv;
	int rc;

	if (!b64)
		return GPUQ_ENOMEM;
	b64[gpuq_base64_encode(m->pem[K_CA_CERT], m->len[K_CA_CERT], b64)] = '\0';
	rc = kube_escape(o->webhook_config, en, sizeof(en));
	if (!rc) {
		snprintf(path, sizeof(path), "/apis/admissionregistration.k8s.io/v1/%s/%s", kind,
			 en);
		rc = kube_request_json(c, "GET", path, NULL, NULL, &cfg, diag);
	}
	if (rc)
		goto out;
	hooks = json_object_get(cfg, "webhooks");
	rv =
	    json_string_value(json_object_get(json_object_get(cfg, "metadata"), "resourceVersion"));
	ops = json_array();
	if (!ops || !rv) {
		rc = ops ? gpuq_diag_set(diag, GPUQ_ECORRUPT, "%s %s: no resourceVersion", kind,
					 o->webhook_config)
			 : GPUQ_ENOMEM;
		goto out;
	}
	json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "test", "path",
					     "/metadata/resourceVersion", "value", rv));
	for (size_t i = 0; i < json_array_size(hooks); i++) {
		const json_t *cc = json_object_get(json_array_get(hooks, i), "clientConfig");
		const char *have = json_string_value(json_object_get(cc, "caBundle"));
		char p[64];

		if (have && strcmp(have, b64) == 0)
			continue;
		snprintf(p, sizeof(p), "/webhooks/%zu/clientConfig/caBundle", i);
		json_array_append_new(ops,
				      json_pack("{s:s, s:s, s:s}", "op", have ? "replace" : "add",
						"path", p, "value", b64));
	}
	if (json_array_size(ops) > 1) {
		rc = kube_patch(c, path, KUBE_PATCH_JSON, ops, NULL, diag);
		if (!rc)
			gpuq_log(GPUQ_LOG_INFO, MODULE, "wrote the CA into %s %s (%zu webhooks)",
				 kind, o->webhook_config, json_array_size(ops) - 1);
	}
out:
	json_decref(cfg);
	json_decref(ops);
	free(b64);
	return rc;
}

/* One try: GPUQ_ECONFLICT / GPUQ_EEXIST when another replica won a race. */
static int sync_once(kube_client_t *c, const certkeeper_opts_t *o, time_t now, bool *changed,
		     gpuq_diag_t *diag)
{
	char path[1400], coll[1024], ens[300], en[300], dir[4096];
	material_t m = {0};
	json_t *secret = NULL, *body = NULL;
	certs_ca_t *ca = NULL;
	certs_cert_summary_t sum;
	bool missing = false, renew = false, external = false;
	int rc;

	if (kube_escape(o->namespace_, ens, sizeof(ens)) || kube_escape(o->name, en, sizeof(en)))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "--cert-secret: name too long");
	snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/secrets", ens);
	snprintf(path, sizeof(path), "%s/%s", coll, en);
	rc = scratch_make(o, diag);
	if (rc)
		return rc;
	(void)scratch_path(o, NULL, dir, sizeof(dir));
	rc = kube_request_json(c, "GET", path, NULL, NULL, &secret, diag);
	if (rc == GPUQ_ENOTFOUND) {
		missing = true;
		rc = certs_ca_create(CERTS_CA_DAYS_DEFAULT, now, &ca, diag);
		if (!rc)
			rc = issue(o, ca, true, now, &m, diag);
	} else if (!rc) {
		rc = material_from_secret(secret, &m, o, diag);
		if (!rc)
			rc = material_write(o, &m, diag);
		external = !rc && !m.pem[K_CA_KEY];
		if (!rc && !external)
			rc = certs_ca_load(dir, now, &ca, diag);
		if (rc && rc != GPUQ_ENOMEM)
			gpuq_diag_prefix(diag,
					 "Secret %s/%s holds no usable CA (fix or delete it): ",
					 o->namespace_, o->name);
		if (!rc && !external) {
			char p[4096];
			(void)scratch_path(o, CERTS_FILE_TLS_CERT, p, sizeof(p));
			/* an unreadable serving certificate is replaced */
			renew = certs_cert_inspect(p, &sum, NULL) != GPUQ_OK ||
				now >= sum.not_after - (sum.not_after - sum.not_before) / 3 ||
				!names_match(o, &sum);
		}
		if (!rc && renew)
			rc = issue(o, ca, false, now, &m, diag);
	}
	if (!rc && (missing || renew)) {
		body = secret_body(o, &m);
		if (!body)
			rc = GPUQ_ENOMEM;
		else if (missing)
			rc = kube_request_json(c, "POST", coll, NULL, body, NULL, diag);
		else
			rc = kube_request_json(c, "PUT", path, NULL, body, NULL, diag);
		if (!rc)
			gpuq_log(GPUQ_LOG_INFO, MODULE,
				 "%s Secret %s/%s: a serving certificate for %d days",
				 missing ? "created" : "renewed in", o->namespace_, o->name,
				 o->days);
	}
	if (!rc)
		rc = install(o, &m, changed, diag);
	if (!rc && external && *changed)
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "serving the certificate of Secret %s/%s as it is: it has no ca.key, so "
			 "whoever made it renews it",
			 o->namespace_, o->name);
	if (!rc && o->webhook_config && m.pem[K_CA_CERT])
		rc = ca_bundle(c, o, "mutatingwebhookconfigurations", &m, diag);
	if (!rc && o->webhook_config && m.pem[K_CA_CERT])
		rc = ca_bundle(c, o, "validatingwebhookconfigurations", &m, diag);
	scratch_clear(o);
	certs_ca_destroy(ca);
	json_decref(secret);
	json_decref(body);
	material_free(&m);
	return rc;
}

int certkeeper_sync(kube_client_t *c, const certkeeper_opts_t *o, time_t now, bool *changed,
		    gpuq_diag_t *diag)
{
	int rc = GPUQ_OK;

	*changed = false;
	for (int t = 0; t < SYNC_TRIES; t++) {
		rc = sync_once(c, o, now, changed, diag);
		if (rc != GPUQ_ECONFLICT && rc != GPUQ_EEXIST)
			break; /* another replica wrote first: read again */
	}
	return rc;
}

/* Every replica keeps the Secret (each serves the webhook with it), leader
 * or not, so its writes are not fenced by the Lease; its client has a fence
 * of its own for the stop flag only, so a stop ends its waits (429s) and a
 * request in flight at once. */
struct certkeeper {
	certkeeper_opts_t o;   /* options (strings borrowed) */
	kube_client_t *client; /* the keeper's connection */
	kube_fence_t *stopper; /* stop only (KUBE_FENCE_STOP) */
	pthread_t thread;      /* the keeper */
	pthread_mutex_t mu;    /* pairs with cv (stop set under it) */
	pthread_cond_t cv;     /* signalled by stop */
	atomic_bool stop;      /* the keeper ends (set under mu: cv) */
	bool started;	       /* thread created (owner's thread only) */
};

static void *keeper_main(void *arg)
{
	certkeeper_t *k = arg;

	pthread_mutex_lock(&k->mu);
	while (!atomic_load(&k->stop)) {
		struct timespec ts;
		gpuq_diag_t diag = {{0}};
		bool changed;

		ts = gpuq_clock_after_ms(CLOCK_REALTIME, k->o.interval_ms);
		(void)pthread_cond_timedwait(&k->cv, &k->mu, &ts);
		if (atomic_load(&k->stop))
			break;
		pthread_mutex_unlock(&k->mu);
		if (certkeeper_sync(k->client, &k->o, time(NULL), &changed, &diag))
			gpuq_log(GPUQ_LOG_WARN, MODULE,
				 "keeping the serving certificate: %s (will retry)", diag.msg);
		pthread_mutex_lock(&k->mu);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int certkeeper_start(const kube_config_t *cfg, const kube_client_opts_t *co,
		     const certkeeper_opts_t *o, certkeeper_t **out, gpuq_diag_t *diag)
{
	certkeeper_t *k = calloc(1, sizeof(*k));
	bool changed;
	int rc;

	if (!k)
		return GPUQ_ENOMEM;
	k->o = *o;
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	rc = kube_fence_create(&k->stopper);
	if (!rc)
		rc = kube_client_create(cfg, co, &k->client, diag);
	if (!rc) {
		kube_client_fence(k->client, k->stopper, KUBE_FENCE_STOP);
		rc = certkeeper_sync(k->client, o, time(NULL), &changed, diag);
	}
	if (!rc) {
		rc = pthread_create(&k->thread, NULL, keeper_main, k) ? GPUQ_ENOMEM : GPUQ_OK;
		k->started = !rc;
	}
	if (rc) {
		certkeeper_stop(k);
		return rc;
	}
	*out = k;
	return GPUQ_OK;
}

void certkeeper_stop(certkeeper_t *k)
{
	if (!k)
		return;
	if (k->started) {
		kube_fence_stop(k->stopper);
		pthread_mutex_lock(&k->mu);
		atomic_store(&k->stop, true);
		pthread_cond_signal(&k->cv);
		pthread_mutex_unlock(&k->mu);
		pthread_join(k->thread, NULL);
	}
	kube_client_destroy(k->client);
	kube_fence_destroy(k->stopper);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
	free(k);
}

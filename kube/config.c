/* kube/config.c: kubeconfig files and the in-cluster service account. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kube/internal.h"
#include "manifest/manifest.h"

/* Read a whole file of at most cap bytes into a new NUL-terminated buffer. */
int kube_file_read(const char *path, size_t cap, char **out, size_t *len, gpuq_diag_t *diag)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0;
	int rc = GPUQ_OK;

	/* constant codes below, not gpuq_diag_set's value: the analyzer cannot see
	 * that it returns its rc, and would then think *out might be NULL on OK */
	if (!f) {
		gpuq_diag_set(diag, GPUQ_EIO, "%s: %s", path, strerror(errno));
		return GPUQ_EIO;
	}
	buf = malloc(cap + 1);
	if (!buf) {
		fclose(f);
		return GPUQ_ENOMEM;
	}
	n = fread(buf, 1, cap + 1, f);
	if (ferror(f)) {
		rc = GPUQ_EIO;
		gpuq_diag_set(diag, rc, "%s: read failed", path);
	} else if (n > cap) {
		rc = GPUQ_ELIMIT;
		gpuq_diag_set(diag, rc, "%s: larger than %zu bytes", path, cap);
	}
	fclose(f);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return GPUQ_OK;
}

/* base64 (gpuq_base64_decode) into a new NUL-terminated buffer of at most
 * KUBE_PEM_MAX bytes; diag names the field. */
static int b64_decode(const char *field, const char *s, char **out, size_t *len, gpuq_diag_t *diag)
{
	int rc = gpuq_base64_decode(s, KUBE_PEM_MAX, out, len);

	if (rc == GPUQ_ELIMIT)
		return gpuq_diag_set(diag, rc, "%s: more than %u bytes", field, KUBE_PEM_MAX);
	if (rc == GPUQ_EINVAL)
		return gpuq_diag_set(diag, rc, "%s: not valid base64", field);
	return rc;
}

void kube_config_destroy(kube_config_t *cfg)
{
	if (!cfg)
		return;
	free(cfg->server);
	free(cfg->ns);
	free(cfg->ca);
	free(cfg->cert);
	if (cfg->key) {
		memset(cfg->key, 0, cfg->key_len);
		free(cfg->key);
	}
	free(cfg->token_file);
	if (cfg->token) {
		memset(cfg->token, 0, strlen(cfg->token));
		free(cfg->token);
	}
	pthread_mutex_destroy(&cfg->lock);
	free(cfg);
}

const char *kube_config_server(const kube_config_t *cfg)
{
	return cfg->server;
}

const char *kube_config_namespace(const kube_config_t *cfg)
{
	return cfg->ns;
}

static int config_new(kube_config_t **out)
{
	kube_config_t *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return GPUQ_ENOMEM;
	pthread_mutex_init(&cfg->lock, NULL);
	*out = cfg;
	return GPUQ_OK;
}

static int dup_str(const char *s, char **out)
{
	*out = strdup(s);
	return *out ? GPUQ_OK : GPUQ_ENOMEM;
}

/* A path from a kubeconfig: absolute as is, else relative to its dir. */
static int resolve(const char *dir, const char *p, char *out, size_t cap, gpuq_diag_t *diag)
{
	int n = p[0] == '/' ? snprintf(out, cap, "%s", p) : snprintf(out, cap, "%s/%s", dir, p);

	if (n < 0 || (size_t)n >= cap)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "path \"%s\" too long", p);
	return GPUQ_OK;
}

/* PEM material: field-data (base64) or field (a file). Neither: *out NULL. */
static int pem_of(const json_t *obj, const char *dir, const char *field, const char *ctx,
		  char **out, size_t *len, gpuq_diag_t *diag)
{
	char key[64], path[4096], where[360];
	const json_t *v;
	int rc;

	*out = NULL;
	*len = 0;
	snprintf(key, sizeof(key), "%s-data", field);
	snprintf(where, sizeof(where), "%s.%s", ctx, key);
	v = json_object_get(obj, key);
	/* an empty -data is unset, as client-go has it */
	if (v && !json_is_null(v) && !(json_is_string(v) && !json_string_value(v)[0])) {
		if (!json_is_string(v))
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: not a string", where);
		return b64_decode(where, json_string_value(v), out, len, diag);
	}
	v = json_object_get(obj, field);
	if (!v || json_is_null(v))
		return GPUQ_OK;
	snprintf(where, sizeof(where), "%s.%s", ctx, field);
	if (!json_is_string(v) || !json_string_value(v)[0])
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: not a file name", where);
	rc = resolve(dir, json_string_value(v), path, sizeof(path), diag);
	if (!rc)
		rc = kube_file_read(path, KUBE_PEM_MAX, out, len, diag);
	if (rc)
		gpuq_diag_prefix(diag, "%s: ", where);
	return rc;
}

/* The entry named name in list key of doc ("clusters", "users", ...), its
 * inner object (entry[inner]) or NULL. */
static const json_t *named(const json_t *doc, const char *key, const char *inner, const char *name)
{
	const json_t *list = json_object_get(doc, key), *e;
	size_t i;

	if (!json_is_array(list))
		return NULL;
	json_array_foreach(list, i, e)
	{
		const json_t *n = json_object_get(e, "name");
		if (json_is_string(n) && strcmp(json_string_value(n), name) == 0) {
			const json_t *o = json_object_get(e, inner);
			return json_is_object(o) ? o : NULL;
		}
	}
	return NULL;
}

static const char *str_of(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int first_doc(void *ctx, size_t doc, const json_t *obj, gpuq_diag_t *diag)
{
	json_t **out = ctx;

	(void)doc;
	(void)diag;
	if (!*out)
		*out = json_incref((json_t *)obj);
	return GPUQ_OK;
}

static int load_user(kube_config_t *cfg, const json_t *user, const char *dir, const char *uname,
		     gpuq_diag_t *diag)
{
	char ctx[300], path[4096];
	const char *tok, *tfile;
	int rc;

	snprintf(ctx, sizeof(ctx), "users[%s].user", uname);
	rc = pem_of(user, dir, "client-certificate", ctx, &cfg->cert, &cfg->cert_len, diag);
	if (!rc)
		rc = pem_of(user, dir, "client-key", ctx, &cfg->key, &cfg->key_len, diag);
	if (rc)
		return rc;
	if (!cfg->cert != !cfg->key)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s: client-certificate and client-key go together", ctx);
	tok = str_of(user, "token");
	tfile = str_of(user, "tokenFile");
	if (tok) {
		if (strlen(tok) > KUBE_TOKEN_MAX)
			return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s.token: longer than %u bytes",
					     ctx, KUBE_TOKEN_MAX);
		/* it goes into a header line: a CR or LF would start another */
		for (const char *p = tok; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "%s.token: holds a control character", ctx);
		return dup_str(tok, &cfg->token);
	}
	if (tfile) {
		if (resolve(dir, tfile, path, sizeof(path), diag))
			return GPUQ_ELIMIT;
		return dup_str(path, &cfg->token_file);
	}
	if (json_object_get(user, "exec") || json_object_get(user, "auth-provider"))
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "%s: exec and auth-provider plugins are not supported; use a "
				     "client certificate or a token",
				     ctx);
	return GPUQ_OK;
}

static int load_cluster(kube_config_t *cfg, const json_t *cl, const char *dir, const char *cname,
			gpuq_diag_t *diag)
{
	char ctx[300];
	const char *server = str_of(cl, "server");
	const json_t *skip = json_object_get(cl, "insecure-skip-tls-verify");

	snprintf(ctx, sizeof(ctx), "clusters[%s].cluster", cname);
	if (!server || strncmp(server, "https://", 8) != 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s.server: \"%s\" is not an https URL",
				     ctx, server ? server : "");
	if (strlen(server) > 1024)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s.server: too long", ctx);
	cfg->insecure = json_is_true(skip);
	if (dup_str(server, &cfg->server))
		return GPUQ_ENOMEM;
	/* no trailing slash: paths start with one */
	while (strlen(cfg->server) > 8 && cfg->server[strlen(cfg->server) - 1] == '/')
		cfg->server[strlen(cfg->server) - 1] = '\0';
	return pem_of(cl, dir, "certificate-authority", ctx, &cfg->ca, &cfg->ca_len, diag);
}

static int from_doc(kube_config_t *cfg, const json_t *doc, const char *dir, gpuq_diag_t *diag)
{
	const char *cur = str_of(doc, "current-context"), *cname, *uname, *ns;
	const json_t *ctx, *cl, *user;
	int rc;

	if (!cur || !cur[0])
		return gpuq_diag_set(diag, GPUQ_EINVAL, "current-context: not set");
	ctx = named(doc, "contexts", "context", cur);
	if (!ctx)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "contexts: no context \"%s\"", cur);
	cname = str_of(ctx, "cluster");
	uname = str_of(ctx, "user");
	ns = str_of(ctx, "namespace");
	cl = cname ? named(doc, "clusters", "cluster", cname) : NULL;
	if (!cl)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "contexts[%s].context.cluster: no cluster \"%s\"", cur,
				     cname ? cname : "");
	rc = load_cluster(cfg, cl, dir, cname, diag);
	if (rc)
		return rc;
	if (ns && ns[0] && dup_str(ns, &cfg->ns))
		return GPUQ_ENOMEM;
	if (!uname || !uname[0])
		return GPUQ_OK; /* anonymous */
	user = named(doc, "users", "user", uname);
	if (!user)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "contexts[%s].context.user: no user \"%s\"",
				     cur, uname);
	return load_user(cfg, user, dir, uname, diag);
}

int kube_config_load(const char *path, kube_config_t **out, gpuq_diag_t *diag)
{
	kube_config_t *cfg = NULL;
	json_t *doc = NULL;
	char *buf = NULL, dir[4096];
	const char *slash = strrchr(path, '/');
	size_t len = 0;
	int rc;

	if (slash && (size_t)(slash - path) >= sizeof(dir))
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "kubeconfig path longer than %zu bytes",
				     sizeof(dir) - 1);
	if (slash) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
		if (!dir[0])
			gpuq_strlcpy(dir, "/", sizeof(dir));
	} else {
		gpuq_strlcpy(dir, ".", sizeof(dir));
	}
	rc = kube_file_read(path, KUBE_CONFIG_MAX, &buf, &len, diag);
	if (rc)
		return rc;
	rc = manifest_parse(path, buf, len, first_doc, &doc, diag);
	free(buf);
	if (!rc && !doc)
		rc = gpuq_diag_set(diag, GPUQ_EINVAL, "%s: empty kubeconfig", path);
	if (!rc)
		rc = config_new(&cfg);
	if (!rc) {
		rc = from_doc(cfg, doc, dir, diag);
		if (rc)
			gpuq_diag_prefix(diag, "kubeconfig %s: ", path);
	}
	json_decref(doc);
	if (rc) {
		kube_config_destroy(cfg);
		return rc;
	}
	*out = cfg;
	return GPUQ_OK;
}

int kube_config_in_cluster(const char *sa_dir, kube_config_t **out, gpuq_diag_t *diag)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char path[4096], url[1100];
	kube_config_t *cfg = NULL;
	char *ns = NULL;
	int rc;

	if (!sa_dir)
		sa_dir = KUBE_SA_DIR;
	if (!host || !host[0] || !port || !port[0])
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "not in a cluster: KUBERNETES_SERVICE_HOST and "
				     "KUBERNETES_SERVICE_PORT are unset (give --kubeconfig)");
	if (strlen(host) + strlen(port) > 1000)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "KUBERNETES_SERVICE_HOST: too long");
	/* an IPv6 service address needs brackets */
	snprintf(url, sizeof(url),
		 strchr(host, ':') && host[0] != '[' ? "https://[%s]:%s" : "https://%s:%s", host,
		 port);
	rc = config_new(&cfg);
	if (!rc)
		rc = dup_str(url, &cfg->server);
	snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
	if (!rc)
		rc = kube_file_read(path, KUBE_PEM_MAX, &cfg->ca, &cfg->ca_len, diag);
	snprintf(path, sizeof(path), "%s/token", sa_dir);
	if (!rc)
		rc = dup_str(path, &cfg->token_file);
	if (!rc)
		rc = kube_token_get(cfg, NULL, 0, diag); /* readable now */
	snprintf(path, sizeof(path), "%s/namespace", sa_dir);
	if (!rc && kube_file_read(path, 256, &ns, NULL, NULL) == GPUQ_OK) {
		ns[strcspn(ns, "\r\n ")] = '\0';
		if (ns[0])
			cfg->ns = ns;
		else
			free(ns);
	}
	if (rc) {
		kube_config_destroy(cfg);
		return rc;
	}
	*out = cfg;
	return GPUQ_OK;
}

/* The bearer token now: the fixed one, or the token file re-read when its
 * mtime or size changed (kubelet rotates projected tokens). Copies it into
 * out (cap bytes) unless out is NULL. "" when the config has none. */
int kube_token_get(kube_config_t *cfg, char *out, size_t cap, gpuq_diag_t *diag)
{
	struct stat st;
	int rc = GPUQ_OK;

	pthread_mutex_lock(&cfg->lock);
	if (cfg->token_file) {
		if (stat(cfg->token_file, &st) != 0) {
			rc = gpuq_diag_set(diag, GPUQ_EIO, "%s: %s", cfg->token_file,
					   strerror(errno));
		} else if (!cfg->token || st.st_mtim.tv_sec != cfg->token_mtime.tv_sec ||
			   st.st_mtim.tv_nsec != cfg->token_mtime.tv_nsec ||
			   st.st_size != cfg->token_size) {
			char *t = NULL;
			rc = kube_file_read(cfg->token_file, KUBE_TOKEN_MAX, &t, NULL, diag);
			if (!rc) {
				t[strcspn(t, "\r\n")] = '\0';
				if (cfg->token)
					memset(cfg->token, 0, strlen(cfg->token));
				free(cfg->token);
				cfg->token = t;
				cfg->token_mtime = st.st_mtim;
				cfg->token_size = st.st_size;
			}
		}
	}
	if (out && cap) {
		out[0] = '\0';
		if (cfg->token && gpuq_strlcpy(out, cfg->token, cap))
			rc = rc ? rc : GPUQ_ELIMIT;
	}
	pthread_mutex_unlock(&cfg->lock);
	return rc;
}

/* The token of base (its file read now when it has one) into cfg. */
static int token_of(const kube_config_t *base, kube_config_t *cfg, gpuq_diag_t *diag)
{
	if (base->token_file)
		return dup_str(base->token_file, &cfg->token_file)
			   ? GPUQ_ENOMEM
			   : kube_token_get(cfg, NULL, 0, diag);
	return base->token ? dup_str(base->token, &cfg->token) : GPUQ_OK;
}

int kube_config_at(const kube_config_t *base, const char *server, const char *ca_file,
		   bool insecure, const char *token, kube_config_t **out, gpuq_diag_t *diag)
{
	kube_config_t *cfg = NULL;
	size_t n = strlen(server);
	int rc;

	if (strncmp(server, "https://", 8) != 0 || n < 9 || n > 512)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "server \"%.80s\": expected https://HOST:PORT", server);
	rc = config_new(&cfg);
	if (rc)
		return rc;
	rc = dup_str(server, &cfg->server);
	if (!rc && cfg->server[n - 1] == '/')
		cfg->server[n - 1] = '\0';
	if (!rc && base->ns)
		rc = dup_str(base->ns, &cfg->ns);
	if (!rc && ca_file)
		rc = kube_file_read(ca_file, KUBE_PEM_MAX, &cfg->ca, &cfg->ca_len, diag);
	cfg->insecure = insecure;
	if (!rc)
		rc = token ? dup_str(token, &cfg->token) : token_of(base, cfg, diag);
	if (!rc && (!cfg->token || !cfg->token[0]))
		rc = gpuq_diag_set(diag, GPUQ_EINVAL,
				   "%s takes a bearer token, and the kubeconfig's user has none "
				   "(give one with --token)",
				   server);
	if (rc) {
		kube_config_destroy(cfg);
		return rc;
	}
	*out = cfg;
	return GPUQ_OK;
}

/* Unit tests for kube's configuration: kubeconfig files and the in-cluster
 * configuration (PEM material as data and as files, tokens, token
 * rotation, another server, every refusal naming its field). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/internal.h"
#include "kube/kube.h"
#include "unit/kube_fixtures.h"

/* base64 (standard, padded) of p[0..n), with a line break every 76
 * characters when wrap is set, into a new string. */
static char *b64(const char *p, size_t n, int wrap)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc(n / 3 * 4 + n / 57 * 2 + 8);
	size_t o = 0, line = 0;

	assert_non_null(out);
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)p[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)p[i + 2];
		out[o++] = al[v >> 18 & 63];
		out[o++] = al[v >> 12 & 63];
		out[o++] = i + 1 < n ? al[v >> 6 & 63] : (char)'=';
		out[o++] = i + 2 < n ? al[v & 63] : (char)'=';
		if (wrap && (line += 4) >= 76) {
			out[o++] = '\n';
			line = 0;
		}
	}
	out[o] = '\0';
	return out;
}

/* ---- kubeconfig ---- */

static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ3Vy\n"
			       "-----END CERTIFICATE-----\n";
static const char key_pem[] = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKey\n"
			      "-----END EC PRIVATE KEY-----\n";
static const char ca_pem[] = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBADAK\n"
			     "-----END CERTIFICATE-----\n";

/* text with every line after the first indented by pad, into out. */
static void indent(const char *text, const char *pad, char *out, size_t cap)
{
	size_t o = 0;

	for (const char *p = text; *p && o + strlen(pad) + 2 < cap; p++) {
		out[o++] = *p;
		if (*p == '\n' && p[1])
			o += (size_t)snprintf(out + o, cap - o, "%s", pad);
	}
	out[o] = '\0';
}

static void config_data_fields(void **state)
{
	char dir[300], text[4096], cert_block[1024];
	char *c64 = b64(cert_pem, strlen(cert_pem), 1), *k64 = b64(key_pem, strlen(key_pem), 0),
	     *a64 = b64(ca_pem, strlen(ca_pem), 0);
	kube_config_t *cfg;
	gpuq_diag_t diag;

	(void)state;
	make_dir("data", dir, sizeof(dir));
	/* the cert's base64 is wrapped in a YAML block scalar, breaks kept */
	assert_non_null(strchr(c64, '\n'));
	indent(c64, "      ", cert_block, sizeof(cert_block));
	snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\ncurrent-context: kind\n"
		 "clusters:\n- name: other\n  cluster:\n    server: https://10.9.9.9\n"
		 "- name: kind\n  cluster:\n    server: https://127.0.0.1:6443//\n"
		 "    certificate-authority-data: %s\n"
		 "contexts:\n- name: kind\n  context:\n    cluster: kind\n    user: admin\n"
		 "    namespace: team-a\n"
		 "users:\n- name: admin\n  user:\n    client-certificate-data: |\n      %s\n"
		 "    client-key-data: %s\n",
		 a64, cert_block, k64);
	assert_int_equal(load_text(dir, text, &cfg, &diag), GPUQ_OK);
	assert_string_equal(kube_config_server(cfg), "https://127.0.0.1:6443");
	assert_string_equal(kube_config_namespace(cfg), "team-a");
	assert_int_equal(cfg->cert_len, strlen(cert_pem));
	assert_memory_equal(cfg->cert, cert_pem, cfg->cert_len);
	assert_int_equal(cfg->key_len, strlen(key_pem));
	assert_memory_equal(cfg->key, key_pem, cfg->key_len);
	assert_int_equal(cfg->ca_len, strlen(ca_pem));
	assert_string_equal(cfg->ca, ca_pem);
	assert_false(cfg->insecure);
	assert_null(cfg->token);
	assert_null(cfg->token_file);
	kube_config_destroy(cfg);
	kube_config_destroy(NULL);
	free(c64);
	free(k64);
	free(a64);
}

/* Files: relative paths resolve against the kubeconfig's directory,
 * absolute ones stay; the kubeconfig may be JSON. */
static void config_file_fields(void **state)
{
	char dir[300], pki[320], text[2048];
	kube_config_t *cfg;
	gpuq_diag_t diag;

	(void)state;
	make_dir("files", dir, sizeof(dir));
	snprintf(pki, sizeof(pki), "%s/pki", dir);
	assert_int_equal(mkdir(pki, 0700), 0);
	write_file(pki, "client.crt", cert_pem);
	write_file(pki, "client.key", key_pem);
	write_file(pki, "ca.crt", ca_pem);
	snprintf(text, sizeof(text),
		 "current-context: c\n"
		 "clusters:\n- name: k\n  cluster:\n    server: https://kube.example:443\n"
		 "    certificate-authority: %s/ca.crt\n"
		 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
		 "users:\n- name: u\n  user:\n    client-certificate: pki/client.crt\n"
		 "    client-key: ./pki/client.key\n",
		 pki);
	assert_int_equal(load_text(dir, text, &cfg, &diag), GPUQ_OK);
	assert_string_equal(cfg->cert, cert_pem);
	assert_string_equal(cfg->key, key_pem);
	assert_string_equal(cfg->ca, ca_pem);
	assert_null(kube_config_namespace(cfg));
	kube_config_destroy(cfg);

	/* the same as JSON, CA relative too */
	assert_int_equal(
	    load_text(
		dir,
		"{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":"
		"{\"server\":\"https://kube.example\",\"certificate-authority\":\"pki/ca.crt\"}}],"
		"\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\",\"user\":\"u\"}}],"
		"\"users\":[{\"name\":\"u\",\"user\":{\"client-certificate\":\"pki/client.crt\","
		"\"client-key\":\"pki/client.key\"}}]}",
		&cfg, &diag),
	    GPUQ_OK);
	assert_string_equal(kube_config_server(cfg), "https://kube.example");
	assert_string_equal(cfg->ca, ca_pem);
	assert_string_equal(cfg->key, key_pem);
	kube_config_destroy(cfg);

	/* a kubeconfig named without a directory: paths resolve against "." */
	{
		char cwd[1024];
		gpuq_diag_t d2 = {{0}};
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		assert_int_equal(chdir(dir), 0);
		cfg = NULL;
		assert_int_equal(kube_config_load("config", &cfg, &d2), GPUQ_OK);
		assert_int_equal(chdir(cwd), 0);
		assert_string_equal(cfg->ca, ca_pem);
		kube_config_destroy(cfg);
	}
}

/* Tokens (inline, from a file relative to the kubeconfig), insecure, an
 * anonymous context, and an empty -data standing for unset. */
static void config_tokens_and_flags(void **state)
{
	char dir[300], tok[64];
	kube_config_t *cfg;
	gpuq_diag_t diag;

	(void)state;
	make_dir("tokens", dir, sizeof(dir));
	assert_int_equal(
	    load_text(dir,
		      "current-context: c\nclusters:\n- name: k\n  cluster:\n"
		      "    server: https://h:6443\n    insecure-skip-tls-verify: true\n"
		      "    certificate-authority-data: \"\"\n"
		      "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: ml}\n"
		      "users:\n- name: u\n  user:\n    token: abc.def-123\n",
		      &cfg, &diag),
	    GPUQ_OK);
	assert_true(cfg->insecure);
	assert_null(cfg->ca);
	assert_string_equal(kube_config_namespace(cfg), "ml");
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "abc.def-123");
	kube_config_destroy(cfg);

	write_file(dir, "sa-token", "file-token-1\n");
	assert_int_equal(load_text(dir,
				   "current-context: c\nclusters:\n- name: k\n  cluster:\n"
				   "    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
				   "users:\n- name: u\n  user:\n    tokenFile: sa-token\n",
				   &cfg, &diag),
			 GPUQ_OK);
	assert_non_null(strstr(cfg->token_file, "/tokens/sa-token"));
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "file-token-1");
	/* too small a buffer */
	assert_int_equal(kube_token_get(cfg, tok, 4, &diag), GPUQ_ELIMIT);
	kube_config_destroy(cfg);

	/* no user: anonymous */
	assert_int_equal(load_text(dir,
				   "current-context: c\nclusters:\n- name: k\n  cluster:\n"
				   "    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k}\n",
				   &cfg, &diag),
			 GPUQ_OK);
	assert_null(cfg->token);
	assert_null(cfg->cert);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "");
	kube_config_destroy(cfg);
}

/* kube_config_at: the same bearer token for another HTTPS server (gpuq's
 * own port): the server as given (no trailing slash), the token from the
 * base (its file) or given, the CA file or none, no client certificate;
 * refused without https:// or without any token. */
static void config_at_other_server(void **state)
{
	char dir[300], tok[64], ca[400];
	kube_config_t *base, *cfg = NULL;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("at", dir, sizeof(dir));
	write_file(dir, "sa-token", "file-token-2\n");
	write_file(dir, "gpuq-ca.crt", ca_pem);
	snprintf(ca, sizeof(ca), "%s/gpuq-ca.crt", dir);
	assert_int_equal(
	    load_text(dir,
		      "current-context: c\nclusters:\n- name: k\n  cluster:\n"
		      "    server: https://h\n"
		      "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: ml}\n"
		      "users:\n- name: u\n  user:\n    tokenFile: sa-token\n",
		      &base, &diag),
	    GPUQ_OK);
	assert_int_equal(kube_config_at(base, "https://gpuq:8443/", ca, false, NULL, &cfg, &diag),
			 GPUQ_OK);
	assert_string_equal(kube_config_server(cfg), "https://gpuq:8443");
	assert_string_equal(kube_config_namespace(cfg), "ml");
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "file-token-2");
	assert_non_null(cfg->ca);
	assert_false(cfg->insecure);
	assert_null(cfg->cert);
	kube_config_destroy(cfg);
	cfg = NULL;
	assert_int_equal(
	    kube_config_at(base, "https://gpuq:8443", NULL, true, "given", &cfg, &diag), GPUQ_OK);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "given");
	assert_true(cfg->insecure);
	assert_null(cfg->ca);
	kube_config_destroy(cfg);
	cfg = NULL;
	assert_int_equal(kube_config_at(base, "http://gpuq:8443", NULL, true, "t", &cfg, &diag),
			 GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "expected https://HOST:PORT"));
	assert_null(cfg);
	kube_config_destroy(base);
	/* a user with a client certificate only: no token to send */
	assert_int_equal(load_text(dir,
				   "current-context: c\nclusters:\n- name: k\n  cluster:\n"
				   "    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k}\n",
				   &base, &diag),
			 GPUQ_OK);
	assert_int_equal(kube_config_at(base, "https://gpuq:8443", NULL, true, NULL, &cfg, &diag),
			 GPUQ_EINVAL);
	assert_non_null(strstr(diag.msg, "takes a bearer token"));
	kube_config_destroy(base);
}

/* base64 of every length 0..40 and of all 256 byte values, with and
 * without line breaks, decodes to the bytes. */
static void config_base64_roundtrip(void **state)
{
	char dir[300], bytes[256], text[4096];

	(void)state;
	make_dir("b64", dir, sizeof(dir));
	for (int i = 0; i < 256; i++)
		bytes[i] = (char)(i * 7 + 3);
	for (size_t n = 1; n <= 256; n = n < 40 ? n + 1 : n * 2) {
		for (int wrap = 0; wrap <= 1; wrap++) {
			char *e = b64(bytes, n, wrap);
			kube_config_t *cfg;
			gpuq_diag_t diag;
			/* JSON: a string with \n escapes holds the wrapped form */
			size_t o = 0;
			char esc[1024];
			for (const char *p = e; *p; p++) {
				if (*p == '\n') {
					esc[o++] = '\\';
					esc[o++] = 'n';
				} else {
					esc[o++] = *p;
				}
			}
			esc[o] = '\0';
			snprintf(
			    text, sizeof(text),
			    "{\"current-context\":\"c\",\"clusters\":[{\"name\":\"k\",\"cluster\":"
			    "{\"server\":\"https://h\",\"certificate-authority-data\":\"%s\"}}],"
			    "\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"k\"}}]}",
			    esc);
			assert_int_equal(load_text(dir, text, &cfg, &diag), GPUQ_OK);
			assert_int_equal(cfg->ca_len, n);
			assert_memory_equal(cfg->ca, bytes, n);
			assert_int_equal(cfg->ca[n], '\0');
			kube_config_destroy(cfg);
			free(e);
		}
	}
}

static void config_refusals(void **state)
{
	static const char head[] = "current-context: c\n"
				   "clusters:\n- name: k\n  cluster:\n    server: https://h\n"
				   "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
				   "users:\n- name: u\n  user:\n";
	static const struct {
		const char *text; /* whole kubeconfig, or NULL: head + user */
		const char *user; /* user lines (after head) */
		int rc;
		const char *diag; /* expected substring */
	} cases[] = {
	    {"clusters: []\n", NULL, GPUQ_EINVAL, "current-context: not set"},
	    {"current-context: \"\"\n", NULL, GPUQ_EINVAL, "current-context: not set"},
	    {"current-context: nope\ncontexts:\n- name: c\n  context: {cluster: k}\n", NULL,
	     GPUQ_EINVAL, "contexts: no context \"nope\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {user: u}\n", NULL, GPUQ_EINVAL,
	     "contexts[c].context.cluster: no cluster \"\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: gone}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h}\n",
	     NULL, GPUQ_EINVAL, "contexts[c].context.cluster: no cluster \"gone\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: who}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h}\n",
	     NULL, GPUQ_EINVAL, "contexts[c].context.user: no user \"who\""},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {server: http://h:8080}\n",
	     NULL, GPUQ_EINVAL,
	     "clusters[k].cluster.server: \"http://h:8080\" is not an https URL"},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {}\n",
	     NULL, GPUQ_EINVAL, "clusters[k].cluster.server: \"\" is not an https URL"},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h, certificate-authority-data: "
	     "5}\n",
	     NULL, GPUQ_EINVAL, "clusters[k].cluster.certificate-authority-data: not a string"},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
	     "clusters:\n- name: k\n  cluster: {server: https://h, certificate-authority: ''}\n",
	     NULL, GPUQ_EINVAL, "clusters[k].cluster.certificate-authority: not a file name"},
	    {"", NULL, GPUQ_EINVAL, "empty kubeconfig"},
	    {"a: [\n", NULL, GPUQ_EINVAL, "config"},
	    {NULL, "    client-certificate-data: Zm9v\n", GPUQ_EINVAL,
	     "users[u].user: client-certificate and client-key go together"},
	    {NULL, "    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "client-certificate and client-key go together"},
	    {NULL,
	     "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
	     "      command: aws\n",
	     GPUQ_EINVAL, "users[u].user: exec and auth-provider plugins are not supported"},
	    {NULL, "    auth-provider: {name: oidc}\n", GPUQ_EINVAL,
	     "exec and auth-provider plugins are not supported"},
	    {NULL, "    client-certificate-data: \"=AAA\"\n    client-key-data: Zm9v\n",
	     GPUQ_EINVAL, "users[u].user.client-certificate-data: not valid base64"},
	    {NULL, "    client-certificate-data: Zm9v\n    client-key-data: Zg=a\n", GPUQ_EINVAL,
	     "users[u].user.client-key-data: not valid base64"},
	    {NULL, "    client-certificate-data: A===\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zm9\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zm9v$\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zg==Zg==\n    client-key-data: Zm9v\n",
	     GPUQ_EINVAL, "not valid base64"},
	    {NULL, "    client-certificate-data: Zm8\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate-data: Zm9v=\n    client-key-data: Zm9v\n", GPUQ_EINVAL,
	     "not valid base64"},
	    {NULL, "    client-certificate: missing.crt\n    client-key-data: Zm9v\n", GPUQ_EIO,
	     "users[u].user.client-certificate: "},
	    {NULL, "    client-certificate-data: Zm9v\n    client-key: /nonexistent/k.pem\n",
	     GPUQ_EIO, "users[u].user.client-key: /nonexistent/k.pem: No such file"},
	    {NULL, "    client-certificate-data: Zm9v\n    client-key: big.pem\n", GPUQ_ELIMIT,
	     "users[u].user.client-key: "},
	    {NULL, "    token: \"abc\\r\\nX-Evil: 1\"\n", GPUQ_EINVAL,
	     "users[u].user.token: holds a control character"},
	};
	char dir[300], text[2048];

	(void)state;
	make_dir("refusals", dir, sizeof(dir));
	/* a key file one byte over the cap */
	{
		char *blob = malloc(KUBE_PEM_MAX + 1);
		assert_non_null(blob);
		memset(blob, 'k', KUBE_PEM_MAX + 1);
		write_bytes(dir, "big.pem", blob, KUBE_PEM_MAX + 1);
		free(blob);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kube_config_t *cfg;
		gpuq_diag_t diag;
		int rc;
		if (cases[i].text)
			snprintf(text, sizeof(text), "%s", cases[i].text);
		else
			snprintf(text, sizeof(text), "%s%s", head, cases[i].user);
		rc = load_text(dir, text, &cfg, &diag);
		if (rc != cases[i].rc)
			fail_msg("case %zu: rc %d (%s), want %d", i, rc, diag.msg, cases[i].rc);
		assert_null(cfg);
		if (!strstr(diag.msg, cases[i].diag))
			fail_msg("case %zu: diag \"%s\" lacks \"%s\"", i, diag.msg, cases[i].diag);
		/* the diag names the file (the parser's own words name it too) */
		assert_non_null(strstr(diag.msg, dir));
	}
}

/* A missing kubeconfig, one over KUBE_CONFIG_MAX, and a NULL diag. */
static void config_file_errors(void **state)
{
	char dir[300], path[512];
	kube_config_t *cfg = NULL;
	gpuq_diag_t diag = {{0}};
	char *blob;

	(void)state;
	make_dir("cfgfile", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/absent", dir);
	assert_int_equal(kube_config_load(path, &cfg, &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, "absent: No such file"));
	assert_int_equal(kube_config_load(path, &cfg, NULL), GPUQ_EIO);
	assert_int_equal(kube_config_load(dir, &cfg, &diag), GPUQ_EIO); /* a directory */
	assert_null(cfg);

	blob = malloc(KUBE_CONFIG_MAX + 1);
	assert_non_null(blob);
	memset(blob, '#', KUBE_CONFIG_MAX + 1);
	write_bytes(dir, "huge", blob, KUBE_CONFIG_MAX + 1);
	free(blob);
	snprintf(path, sizeof(path), "%s/huge", dir);
	assert_int_equal(kube_config_load(path, &cfg, &diag), GPUQ_ELIMIT);
	assert_non_null(strstr(diag.msg, "larger than"));

	/* a directory part longer than any path */
	{
		char *longp = malloc(5000);
		assert_non_null(longp);
		memset(longp, 'd', 4999);
		longp[4999] = '\0';
		longp[4990] = '/';
		assert_int_equal(kube_config_load(longp, &cfg, &diag), GPUQ_ELIMIT);
		assert_non_null(strstr(diag.msg, "path longer than"));
		free(longp);
	}

	/* errors with diag NULL still return the code */
	write_file(dir, "noctx", "clusters: []\n");
	snprintf(path, sizeof(path), "%s/noctx", dir);
	assert_int_equal(kube_config_load(path, &cfg, NULL), GPUQ_EINVAL);
	assert_null(cfg);
}

/* ---- in cluster ---- */

static void in_cluster_env(const char *host, const char *port)
{
	if (host)
		assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", host, 1), 0);
	else
		unsetenv("KUBERNETES_SERVICE_HOST");
	if (port)
		assert_int_equal(setenv("KUBERNETES_SERVICE_PORT", port, 1), 0);
	else
		unsetenv("KUBERNETES_SERVICE_PORT");
}

static void in_cluster_basics(void **state)
{
	static const struct {
		const char *host, *port, *server;
	} hosts[] = {
	    {"10.96.0.1", "443", "https://10.96.0.1:443"},
	    {"fd00:10:96::1", "443", "https://[fd00:10:96::1]:443"},
	    {"[fd00::1]", "6443", "https://[fd00::1]:6443"},
	    {"kubernetes.default.svc", "443", "https://kubernetes.default.svc:443"},
	};
	char sa[300], tok[64], path[512];
	kube_config_t *cfg;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("sa", sa, sizeof(sa));
	write_file(sa, "ca.crt", ca_pem);
	write_file(sa, "token", "eyJhbGciOi.sa-token\n");
	write_file(sa, "namespace", "gpuq-system\n");
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		in_cluster_env(hosts[i].host, hosts[i].port);
		assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
		assert_string_equal(kube_config_server(cfg), hosts[i].server);
		assert_string_equal(kube_config_namespace(cfg), "gpuq-system");
		assert_string_equal(cfg->ca, ca_pem);
		assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
		assert_string_equal(tok, "eyJhbGciOi.sa-token");
		kube_config_destroy(cfg);
	}
	/* no namespace file, or an empty one: no namespace */
	write_file(sa, "namespace", "\n");
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
	assert_null(kube_config_namespace(cfg));
	kube_config_destroy(cfg);
	snprintf(path, sizeof(path), "%s/namespace", sa);
	assert_int_equal(remove(path), 0);
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
	assert_null(kube_config_namespace(cfg));
	kube_config_destroy(cfg);
}

static void in_cluster_refusals(void **state)
{
	static const struct {
		const char *host, *port;
	} unset[] = {
	    {NULL, "443"}, {"10.96.0.1", NULL}, {"", "443"}, {"10.96.0.1", ""}, {NULL, NULL}};
	char sa[300], path[512];
	kube_config_t *cfg = NULL;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("sa-bad", sa, sizeof(sa));
	for (size_t i = 0; i < sizeof(unset) / sizeof(unset[0]); i++) {
		in_cluster_env(unset[i].host, unset[i].port);
		assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_EINVAL);
		assert_non_null(strstr(diag.msg, "KUBERNETES_SERVICE_HOST"));
		assert_null(cfg);
	}
	in_cluster_env("10.96.0.1", "443");
	/* no CA */
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, "ca.crt"));
	/* CA but no token */
	write_file(sa, "ca.crt", ca_pem);
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, "/token"));
	assert_null(cfg);
	/* a token over KUBE_TOKEN_MAX */
	{
		char *blob = malloc(KUBE_TOKEN_MAX + 1);
		assert_non_null(blob);
		memset(blob, 't', KUBE_TOKEN_MAX + 1);
		write_bytes(sa, "token", blob, KUBE_TOKEN_MAX + 1);
		free(blob);
	}
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_ELIMIT);
	snprintf(path, sizeof(path), "%s/token", sa);
	assert_non_null(strstr(diag.msg, path));
}

/* Set path's mtime to sec (no sleeping for the clock to move). */
static void set_mtime(const char *path, time_t sec)
{
	struct timespec ts[2] = {{.tv_sec = sec, .tv_nsec = 0}, {.tv_sec = sec, .tv_nsec = 0}};

	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* kube_token_get re-reads a token file whose size or mtime changed, and
 * only then. */
static void in_cluster_token_rotation(void **state)
{
	char sa[300], path[512], tok[64];
	kube_config_t *cfg;
	gpuq_diag_t diag = {{0}};

	(void)state;
	make_dir("sa-rot", sa, sizeof(sa));
	snprintf(path, sizeof(path), "%s/token", sa);
	write_file(sa, "ca.crt", ca_pem);
	write_file(sa, "token", "tokA");
	set_mtime(path, 1700000000);
	in_cluster_env("10.96.0.1", "443");
	assert_int_equal(kube_config_in_cluster(sa, &cfg, &diag), GPUQ_OK);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokA");

	/* same size, same mtime: the cache stands (proves it is a cache) */
	write_file(sa, "token", "tokX");
	set_mtime(path, 1700000000);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokA");

	/* same size, new mtime */
	write_file(sa, "token", "tokB");
	set_mtime(path, 1700000001);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokB");

	/* new size, old mtime */
	write_file(sa, "token", "token-number-three\r\n");
	set_mtime(path, 1700000001);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "token-number-three");

	/* gone: GPUQ_EIO naming the file */
	assert_int_equal(remove(path), 0);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_EIO);
	assert_non_null(strstr(diag.msg, path));
	/* back */
	write_file(sa, "token", "tokC");
	assert_int_equal(kube_token_get(cfg, NULL, 0, &diag), GPUQ_OK);
	assert_int_equal(kube_token_get(cfg, tok, sizeof(tok), &diag), GPUQ_OK);
	assert_string_equal(tok, "tokC");
	kube_config_destroy(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(config_data_fields),      cmocka_unit_test(config_file_fields),
	    cmocka_unit_test(config_tokens_and_flags), cmocka_unit_test(config_at_other_server),
	    cmocka_unit_test(config_base64_roundtrip), cmocka_unit_test(config_refusals),
	    cmocka_unit_test(config_file_errors),      cmocka_unit_test(in_cluster_basics),
	    cmocka_unit_test(in_cluster_refusals),     cmocka_unit_test(in_cluster_token_rotation),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

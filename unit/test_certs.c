/* Unit tests for certs: issue a CA and a serving certificate into a temp dir
 * and check them with OpenSSL's own verifier and with GnuTLS (the webhook
 * server's TLS library), then the error cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/base.h"
#include "certs/certs.h"

/* A fixed clock (2026-01-01T00:00:00Z) keeps validity checks exact. */
#define NOW ((time_t)1767225600)
#define DAY 86400

typedef struct {
	char dir[64];  /* mkdtemp'd directory, removed after the test */
	char out[128]; /* dir/out: where certs are written */
} fixture_t;

static void path_in(char *buf, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(buf, cap, "%s/%s", dir, name);

	assert_true(n > 0 && (size_t)n < cap);
}

static void tree_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		path_in(p, sizeof(p), dir, e->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			tree_remove(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static int setup(void **state)
{
	fixture_t *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/gpuq-test-certs.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	path_in(f->out, sizeof(f->out), f->dir, "out");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture_t *f = *state;

	tree_remove(f->dir);
	free(f);
	return 0;
}

static const char *const default_dns[] = {"gpuq.gpuq-system.svc",
					  "gpuq.gpuq-system.svc.cluster.local"};
static const char *const default_ips[] = {"127.0.0.1", "::1"};

static certs_serving_spec_t default_spec(int days)
{
	certs_serving_spec_t s = {default_dns, 2, default_ips, 2, days};

	return s;
}

/* Issue into dir (CA kept when present); returns the created flag. */
static bool issue_into(const char *dir, const certs_serving_spec_t *spec, time_t now)
{
	certs_ca_t *ca = NULL;
	certs_serving_t *s = NULL;
	gpuq_diag_t d = {{0}};
	bool created = false;

	assert_int_equal(
	    certs_ca_load_or_create(dir, CERTS_CA_DAYS_DEFAULT, now, &ca, &created, &d), GPUQ_OK);
	assert_int_equal(certs_serving_issue(ca, spec, now, &s, &d), GPUQ_OK);
	assert_int_equal(certs_write_dir(dir, ca, created, s, &d), GPUQ_OK);
	certs_serving_destroy(s);
	certs_ca_destroy(ca);
	return created;
}

static X509 *cert_load(const char *dir, const char *name)
{
	char p[512];
	FILE *fp;
	X509 *x;

	path_in(p, sizeof(p), dir, name);
	fp = fopen(p, "r");
	assert_non_null(fp);
	x = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	assert_non_null(x);
	return x;
}

static char *file_slurp(const char *dir, const char *name, size_t *len)
{
	char p[512];
	FILE *fp;
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(buf);
	path_in(p, sizeof(p), dir, name);
	fp = fopen(p, "rb");
	assert_non_null(fp);
	n = fread(buf, 1, 65535, fp);
	fclose(fp);
	if (len)
		*len = n;
	return buf;
}

static void file_put(const char *dir, const char *name, const char *text, size_t len)
{
	char p[512];
	FILE *fp;

	path_in(p, sizeof(p), dir, name);
	fp = fopen(p, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	fclose(fp);
}

static void file_copy(const char *from_dir, const char *to_dir, const char *name)
{
	size_t len;
	char *buf = file_slurp(from_dir, name, &len);

	file_put(to_dir, name, buf, len);
	free(buf);
}

/* OpenSSL's verifier with the sslserver purpose, at time `at`. */
static int chain_verify(X509 *leaf, X509 *ca, time_t at)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int ok;

	assert_non_null(store);
	assert_non_null(ctx);
	assert_int_equal(X509_STORE_add_cert(store, ca), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
	X509_STORE_CTX_set_time(ctx, 0, at);
	ok = X509_verify_cert(ctx);
	if (ok != 1)
		print_message("verify: %s\n",
			      X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

static int ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	assert_true(i >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, i));
}

static mode_t file_mode(const char *dir, const char *name)
{
	char p[512];
	struct stat st;

	path_in(p, sizeof(p), dir, name);
	assert_int_equal(stat(p, &st), 0);
	return st.st_mode & 0777;
}

/* ---- tests */

static void spec_check_table(void **state)
{
	static const char *const long_label[] = {
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.x"};
	static const char *const ok_dns[] = {"a", "*.gpuq.svc", "x-1.example.COM"};
	static const char *const bad_dns1[] = {"bad_name"};
	static const char *const bad_dns2[] = {"-lead.x"};
	static const char *const bad_dns3[] = {"a..b"};
	static const char *const bad_dns4[] = {"trailing.dot."};
	static const char *const bad_dns5[] = {"a.*.b"};
	static const char *const bad_dns6[] = {""};
	static const char *const ok_ip[] = {"10.0.0.1", "fe80::1", "::ffff:1.2.3.4"};
	static const char *const bad_ip1[] = {"1.2.3"};
	static const char *const bad_ip2[] = {"256.1.1.1"};
	static const char *const bad_ip3[] = {"localhost"};
	static const char *const bad_ip4[] = {"1.2.3.4/32"};
	static const struct {
		certs_serving_spec_t spec;
		int rc;
		const char *needle; /* substring of the diagnostic */
	} cases[] = {
	    {{ok_dns, 3, ok_ip, 3, 365}, GPUQ_OK, ""},
	    {{ok_dns, 1, NULL, 0, 1}, GPUQ_OK, ""},
	    {{NULL, 0, ok_ip, 1, 3650}, GPUQ_OK, ""},
	    {{NULL, 0, NULL, 0, 365}, GPUQ_EINVAL, "no names"},
	    {{ok_dns, 1, NULL, 0, 0}, GPUQ_ERANGE, "--days: 0"},
	    {{ok_dns, 1, NULL, 0, 3651}, GPUQ_ERANGE, "--days: 3651"},
	    {{ok_dns, 1, NULL, 0, -5}, GPUQ_ERANGE, "--days: -5"},
	    {{bad_dns1, 1, NULL, 0, 365}, GPUQ_EINVAL, "--dns: \"bad_name\""},
	    {{bad_dns2, 1, NULL, 0, 365}, GPUQ_EINVAL, "\"-lead.x\""},
	    {{bad_dns3, 1, NULL, 0, 365}, GPUQ_EINVAL, "\"a..b\""},
	    {{bad_dns4, 1, NULL, 0, 365}, GPUQ_EINVAL, "\"trailing.dot.\""},
	    {{bad_dns5, 1, NULL, 0, 365}, GPUQ_EINVAL, "\"a.*.b\""},
	    {{bad_dns6, 1, NULL, 0, 365}, GPUQ_EINVAL, "--dns: \"\""},
	    {{long_label, 1, NULL, 0, 365}, GPUQ_EINVAL, "--dns"},
	    {{NULL, 0, bad_ip1, 1, 365}, GPUQ_EINVAL, "--ip: \"1.2.3\""},
	    {{NULL, 0, bad_ip2, 1, 365}, GPUQ_EINVAL, "--ip: \"256.1.1.1\""},
	    {{NULL, 0, bad_ip3, 1, 365}, GPUQ_EINVAL, "--ip: \"localhost\""},
	    {{ok_dns, 1, bad_ip4, 1, 365}, GPUQ_EINVAL, "--ip: \"1.2.3.4/32\""},
	    {{ok_dns, CERTS_SAN_MAX + 1, NULL, 0, 365}, GPUQ_ELIMIT, "--dns: 33 names"},
	    {{NULL, 0, ok_ip, CERTS_SAN_MAX + 1, 365}, GPUQ_ELIMIT, "--ip: 33 addresses"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gpuq_diag_t d = {{0}};
		int rc = certs_serving_spec_check(&cases[i].spec, &d);

		if (rc != cases[i].rc || !strstr(d.msg, cases[i].needle))
			fail_msg("case %zu: rc %d (want %d), diag \"%s\" (want \"%s\")", i, rc,
				 cases[i].rc, d.msg, cases[i].needle);
	}
}

static void issue_and_verify(void **state)
{
	fixture_t *f = *state;
	certs_serving_spec_t spec = default_spec(30);
	certs_cert_summary_t s;
	gpuq_diag_t d = {{0}};
	X509 *ca;
	X509 *leaf;

	assert_true(issue_into(f->out, &spec, NOW));
	ca = cert_load(f->out, CERTS_FILE_CA_CERT);
	leaf = cert_load(f->out, CERTS_FILE_TLS_CERT);

	/* Chain verifies for a TLS server, inside validity, not outside. */
	assert_int_equal(chain_verify(leaf, ca, NOW), 1);
	assert_int_equal(chain_verify(leaf, ca, NOW + 29 * DAY), 1);
	assert_int_not_equal(chain_verify(leaf, ca, NOW + 31 * DAY), 1);
	assert_int_not_equal(chain_verify(leaf, ca, NOW - 600), 1);
	assert_int_equal(X509_check_issued(ca, leaf), X509_V_OK);

	/* CA: CA:TRUE critical, keyCertSign + cRLSign, SKI present. */
	assert_true(X509_get_extension_flags(ca) & EXFLAG_CA);
	assert_int_equal(ext_critical(ca, NID_basic_constraints), 1);
	assert_int_equal(X509_get_key_usage(ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_non_null(X509_get0_subject_key_id(ca));

	/* Serving: not a CA, digitalSignature, serverAuth only, AKI present. */
	assert_false(X509_get_extension_flags(leaf) & EXFLAG_CA);
	assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
	assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
	assert_non_null(X509_get0_authority_key_id(leaf));
	assert_int_equal(X509_check_host(leaf, "gpuq.gpuq-system.svc", 0, 0, NULL), 1);
	assert_int_equal(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(leaf, "::1", 0), 1);
	assert_int_not_equal(X509_check_host(leaf, "evil.example", 0, 0, NULL), 1);

	/* The summary reads the same facts back. */
	assert_int_equal(certs_cert_inspect(f->out, &s, &d), GPUQ_EIO); /* a dir */
	{
		char p[512];

		path_in(p, sizeof(p), f->out, CERTS_FILE_TLS_CERT);
		assert_int_equal(certs_cert_inspect(p, &s, &d), GPUQ_OK);
	}
	assert_false(s.is_ca);
	assert_int_equal(s.not_before, NOW - CERTS_BACKDATE_SECONDS);
	assert_int_equal(s.not_after, NOW + 30 * DAY);
	assert_string_equal(s.common_name, "gpuq.gpuq-system.svc");
	assert_int_equal(s.n_dns, 2);
	assert_string_equal(s.dns[0], "gpuq.gpuq-system.svc");
	assert_string_equal(s.dns[1], "gpuq.gpuq-system.svc.cluster.local");
	assert_int_equal(s.n_ips, 2);
	assert_string_equal(s.ips[0], "127.0.0.1");
	assert_string_equal(s.ips[1], "::1");
	assert_true(strlen(s.serial) >= 16 && strlen(s.serial) <= 32);

	/* Modes: keys 0600, certificates 0644; no temp file left behind. */
	assert_int_equal(file_mode(f->out, CERTS_FILE_CA_KEY), 0600);
	assert_int_equal(file_mode(f->out, CERTS_FILE_TLS_KEY), 0600);
	assert_int_equal(file_mode(f->out, CERTS_FILE_CA_CERT), 0644);
	assert_int_equal(file_mode(f->out, CERTS_FILE_TLS_CERT), 0644);
	{
		DIR *dir = opendir(f->out);
		struct dirent *e;
		int n = 0;

		assert_non_null(dir);
		while ((e = readdir(dir)))
			n += e->d_name[0] != '.';
		closedir(dir);
		assert_int_equal(n, 4);
	}
	X509_free(leaf);
	X509_free(ca);
}

static void second_run_keeps_ca(void **state)
{
	fixture_t *f = *state;
	certs_serving_spec_t spec = default_spec(365);
	certs_cert_summary_t first;
	certs_cert_summary_t second;
	gpuq_diag_t d = {{0}};
	char p[512];
	size_t len1;
	size_t len2;
	char *ca1;
	char *key1;
	char *ca2;
	char *key2;
	X509 *ca;
	X509 *leaf;

	assert_true(issue_into(f->out, &spec, NOW));
	path_in(p, sizeof(p), f->out, CERTS_FILE_TLS_CERT);
	assert_int_equal(certs_cert_inspect(p, &first, &d), GPUQ_OK);
	ca1 = file_slurp(f->out, CERTS_FILE_CA_CERT, &len1);
	key1 = file_slurp(f->out, CERTS_FILE_CA_KEY, NULL);

	assert_false(issue_into(f->out, &spec, NOW + DAY));
	assert_int_equal(certs_cert_inspect(p, &second, &d), GPUQ_OK);
	ca2 = file_slurp(f->out, CERTS_FILE_CA_CERT, &len2);
	key2 = file_slurp(f->out, CERTS_FILE_CA_KEY, NULL);

	assert_int_equal(len1, len2);
	assert_memory_equal(ca1, ca2, len1);
	assert_string_equal(key1, key2);
	assert_string_not_equal(first.serial, second.serial);
	assert_int_equal(second.not_after, NOW + DAY + 365 * DAY);

	ca = cert_load(f->out, CERTS_FILE_CA_CERT);
	leaf = cert_load(f->out, CERTS_FILE_TLS_CERT);
	assert_int_equal(chain_verify(leaf, ca, NOW + 2 * DAY), 1);
	X509_free(leaf);
	X509_free(ca);
	free(ca1);
	free(ca2);
	free(key1);
	free(key2);
}

static void ca_key_mismatch_rejected(void **state)
{
	fixture_t *f = *state;
	certs_serving_spec_t spec = default_spec(30);
	certs_ca_t *ca = NULL;
	gpuq_diag_t d = {{0}};
	char other[128];

	path_in(other, sizeof(other), f->dir, "other");
	issue_into(f->out, &spec, NOW);
	issue_into(other, &spec, NOW);
	file_copy(other, f->out, CERTS_FILE_CA_KEY);
	assert_int_equal(certs_ca_load_or_create(f->out, 3650, NOW, &ca, NULL, &d), GPUQ_ECORRUPT);
	assert_null(ca);
	assert_non_null(strstr(d.msg, "ca.crt: does not match the private key in ca.key"));
	assert_int_equal(ERR_peek_error(), 0); /* the adapter left no queued errors */
}

static void half_ca_rejected(void **state)
{
	fixture_t *f = *state;
	certs_serving_spec_t spec = default_spec(30);
	certs_ca_t *ca = NULL;
	gpuq_diag_t d = {{0}};
	char p[512];

	issue_into(f->out, &spec, NOW);
	path_in(p, sizeof(p), f->out, CERTS_FILE_CA_KEY);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(certs_ca_load_or_create(f->out, 3650, NOW, &ca, NULL, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "ca.crt exists but"));
	assert_non_null(strstr(d.msg, "ca.key does not"));
	/* certs_ca_load names the missing file. */
	assert_int_equal(certs_ca_load(f->out, NOW, &ca, &d), GPUQ_ENOTFOUND);
	assert_non_null(strstr(d.msg, "ca.key: cannot open"));
}

static void expired_ca_rejected(void **state)
{
	fixture_t *f = *state;
	certs_ca_t *ca = NULL;
	certs_ca_t *loaded = NULL;
	gpuq_diag_t d = {{0}};

	assert_int_equal(certs_ca_create(1, NOW - 3 * DAY, &ca, &d), GPUQ_OK);
	assert_int_equal(certs_write_dir(f->out, ca, true, NULL, &d), GPUQ_OK);
	assert_int_equal(certs_ca_load(f->out, NOW - 2 * DAY - 3600, &loaded, &d), GPUQ_OK);
	certs_ca_destroy(loaded);
	loaded = NULL;
	assert_int_equal(certs_ca_load(f->out, NOW, &loaded, &d), GPUQ_ERANGE);
	assert_null(loaded);
	assert_non_null(strstr(d.msg, "the CA expired at 2025-12-30T00:00:00Z"));
	assert_int_equal(certs_ca_load(f->out, NOW - 4 * DAY, &loaded, &d), GPUQ_ERANGE);
	assert_non_null(strstr(d.msg, "not valid until"));
	certs_ca_destroy(ca);
}

static void serving_clamped_to_ca(void **state)
{
	certs_serving_spec_t spec = default_spec(365);
	certs_ca_t *ca = NULL;
	certs_serving_t *s = NULL;
	certs_cert_summary_t sum;
	certs_cert_summary_t ca_sum;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(certs_ca_create(2, NOW, &ca, &d), GPUQ_OK);
	assert_int_equal(certs_ca_inspect(ca, &ca_sum, &d), GPUQ_OK);
	assert_true(ca_sum.is_ca);
	assert_non_null(strstr(ca_sum.common_name, "gpuq CA 2026-01-01T00:00:00Z"));
	assert_int_equal(certs_serving_issue(ca, &spec, NOW, &s, &d), GPUQ_OK);
	assert_int_equal(certs_serving_inspect(s, &sum, &d), GPUQ_OK);
	assert_int_equal(sum.not_after, NOW + 2 * DAY);
	assert_int_equal(sum.not_after, ca_sum.not_after);
	certs_serving_destroy(s);
	certs_ca_destroy(ca);
	/* CA validity bounds. */
	assert_int_equal(certs_ca_create(0, NOW, &ca, &d), GPUQ_ERANGE);
	assert_int_equal(certs_ca_create(36501, NOW, &ca, &d), GPUQ_ERANGE);
}

static void issue_rejects_bad_spec(void **state)
{
	static const char *const bad[] = {"no_underscores"};
	certs_serving_spec_t spec = {bad, 1, NULL, 0, 30};
	certs_ca_t *ca = NULL;
	certs_serving_t *s = NULL;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(certs_ca_create(10, NOW, &ca, &d), GPUQ_OK);
	assert_int_equal(certs_serving_issue(ca, &spec, NOW, &s, &d), GPUQ_EINVAL);
	assert_null(s);
	assert_non_null(strstr(d.msg, "no_underscores"));
	certs_ca_destroy(ca);
}

static void ip_only_and_wildcard(void **state)
{
	static const char *const ips[] = {"fd00::10", "10.96.0.5"};
	static const char *const dns[] = {"*.gpuq-system.svc"};
	certs_serving_spec_t ip_only = {NULL, 0, ips, 2, 30};
	certs_serving_spec_t wild = {dns, 1, NULL, 0, 30};
	certs_ca_t *ca = NULL;
	certs_serving_t *s = NULL;
	certs_cert_summary_t sum;
	gpuq_diag_t d = {{0}};

	(void)state;
	assert_int_equal(certs_ca_create(10, NOW, &ca, &d), GPUQ_OK);
	assert_int_equal(certs_serving_issue(ca, &ip_only, NOW, &s, &d), GPUQ_OK);
	assert_int_equal(certs_serving_inspect(s, &sum, &d), GPUQ_OK);
	assert_string_equal(sum.common_name, "fd00::10");
	assert_int_equal(sum.n_dns, 0);
	assert_int_equal(sum.n_ips, 2);
	assert_string_equal(sum.ips[0], "fd00::10");
	assert_string_equal(sum.ips[1], "10.96.0.5");
	certs_serving_destroy(s);
	assert_int_equal(certs_serving_issue(ca, &wild, NOW, &s, &d), GPUQ_OK);
	assert_int_equal(certs_serving_inspect(s, &sum, &d), GPUQ_OK);
	assert_string_equal(sum.dns[0], "*.gpuq-system.svc");
	certs_serving_destroy(s);
	certs_ca_destroy(ca);
}

static void not_a_ca_rejected(void **state)
{
	fixture_t *f = *state;
	certs_serving_spec_t spec = default_spec(30);
	certs_ca_t *ca = NULL;
	gpuq_diag_t d = {{0}};
	char other[128];
	char p[512];

	path_in(other, sizeof(other), f->dir, "other");
	issue_into(other, &spec, NOW);
	assert_int_equal(mkdir(f->out, 0755), 0);
	{
		size_t len;
		char *crt = file_slurp(other, CERTS_FILE_TLS_CERT, &len);
		char *key = file_slurp(other, CERTS_FILE_TLS_KEY, NULL);

		file_put(f->out, CERTS_FILE_CA_CERT, crt, len);
		file_put(f->out, CERTS_FILE_CA_KEY, key, strlen(key));
		free(crt);
		free(key);
	}
	assert_int_equal(certs_ca_load(f->out, NOW, &ca, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "not a CA certificate"));
	/* Garbage in place of PEM. */
	file_put(f->out, CERTS_FILE_CA_CERT, "hello\n", 6);
	assert_int_equal(certs_ca_load(f->out, NOW, &ca, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "ca.crt: not a PEM certificate"));
	path_in(p, sizeof(p), f->out, CERTS_FILE_CA_CERT);
	assert_int_equal(certs_cert_inspect(p, &(certs_cert_summary_t){0}, &d), GPUQ_ECORRUPT);
	file_copy(other, f->out, CERTS_FILE_CA_CERT);
	file_put(f->out, CERTS_FILE_CA_KEY, "-----BEGIN PRIVATE KEY-----\nAAAA\n", 33);
	assert_int_equal(certs_ca_load(f->out, NOW, &ca, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "ca.key: not an unencrypted PEM private key"));
	assert_null(ca);
	assert_int_equal(ERR_peek_error(), 0);
}

static void unwritable_dir(void **state)
{
	fixture_t *f = *state;
	certs_serving_spec_t spec = default_spec(30);
	certs_ca_t *ca = NULL;
	certs_serving_t *s = NULL;
	gpuq_diag_t d = {{0}};
	char file[128];
	char below[192];

	/* A path below a regular file fails even for root. */
	path_in(file, sizeof(file), f->dir, "plain");
	file_put(f->dir, "plain", "x", 1);
	path_in(below, sizeof(below), file, "certs");
	assert_int_equal(certs_ca_create(10, NOW, &ca, &d), GPUQ_OK);
	assert_int_equal(certs_serving_issue(ca, &spec, NOW, &s, &d), GPUQ_OK);
	assert_int_equal(certs_write_dir(below, ca, true, s, &d), GPUQ_EIO);
	assert_non_null(strstr(d.msg, "--out: \""));
	assert_non_null(strstr(d.msg, "plain/certs\": cannot create it: Not a directory"));
	assert_int_equal(certs_write_dir(file, ca, true, s, &d), GPUQ_EIO);
	assert_non_null(strstr(d.msg, "not a directory"));
	certs_serving_destroy(s);
	certs_ca_destroy(ca);
}

/* The webhook server is libmicrohttpd over GnuTLS: it must accept the pair
 * as written, reject a mismatched pair, and trust the CA file. */
static void gnutls_loads_pair(void **state)
{
	fixture_t *f = *state;
	certs_serving_spec_t spec = default_spec(30);
	gnutls_certificate_credentials_t cred;
	gnutls_x509_crt_t crt;
	gnutls_x509_crt_t ca_crt;
	gnutls_datum_t cert_pem;
	gnutls_datum_t key_pem;
	gnutls_datum_t ca_pem;
	unsigned int status = 0;
	size_t len;
	char other[128];
	char *cert_buf;
	char *key_buf;
	char *ca_buf;
	char *other_key;

	path_in(other, sizeof(other), f->dir, "other");
	issue_into(f->out, &spec, time(NULL));
	issue_into(other, &spec, time(NULL));
	cert_buf = file_slurp(f->out, CERTS_FILE_TLS_CERT, &len);
	cert_pem = (gnutls_datum_t){(unsigned char *)cert_buf, (unsigned int)len};
	key_buf = file_slurp(f->out, CERTS_FILE_TLS_KEY, &len);
	key_pem = (gnutls_datum_t){(unsigned char *)key_buf, (unsigned int)len};
	ca_buf = file_slurp(f->out, CERTS_FILE_CA_CERT, &len);
	ca_pem = (gnutls_datum_t){(unsigned char *)ca_buf, (unsigned int)len};

	assert_int_equal(gnutls_global_init(), 0);
	assert_int_equal(gnutls_certificate_allocate_credentials(&cred), 0);
	assert_true(gnutls_certificate_set_x509_key_mem2(cred, &cert_pem, &key_pem,
							 GNUTLS_X509_FMT_PEM, NULL, 0) >= 0);
	assert_int_equal(gnutls_certificate_set_x509_trust_mem(cred, &ca_pem, GNUTLS_X509_FMT_PEM),
			 1);
	gnutls_certificate_free_credentials(cred);

	/* A key from another run does not pass as this certificate's. */
	other_key = file_slurp(other, CERTS_FILE_TLS_KEY, &len);
	key_pem = (gnutls_datum_t){(unsigned char *)other_key, (unsigned int)len};
	assert_int_equal(gnutls_certificate_allocate_credentials(&cred), 0);
	assert_int_equal(gnutls_certificate_set_x509_key_mem2(cred, &cert_pem, &key_pem,
							      GNUTLS_X509_FMT_PEM, NULL, 0),
			 GNUTLS_E_CERTIFICATE_KEY_MISMATCH);
	gnutls_certificate_free_credentials(cred);

	/* GnuTLS's own chain check agrees with OpenSSL's. */
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	assert_int_equal(gnutls_x509_crt_init(&ca_crt), 0);
	assert_int_equal(gnutls_x509_crt_import(crt, &cert_pem, GNUTLS_X509_FMT_PEM), 0);
	assert_int_equal(gnutls_x509_crt_import(ca_crt, &ca_pem, GNUTLS_X509_FMT_PEM), 0);
	assert_int_equal(gnutls_x509_crt_verify(crt, &ca_crt, 1, 0, &status), 0);
	assert_int_equal(status, 0);
	assert_int_not_equal(gnutls_x509_crt_check_hostname(crt, "gpuq.gpuq-system.svc"), 0);
	assert_int_not_equal(
	    gnutls_x509_crt_check_ip(crt, (const unsigned char *)"\x7f\0\0\x01", 4, 0), 0);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_crt_deinit(ca_crt);
	gnutls_global_deinit();
	free(cert_buf);
	free(key_buf);
	free(ca_buf);
	free(other_key);
}

/* Run `$GPUQ_BIN certs ARGS` through the shell; returns the exit code and
 * the combined output in out. */
static int cli_run(const char *args, char *out, size_t cap)
{
	const char *bin = getenv("GPUQ_BIN");
	char cmd[1024];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "%s certs %s 2>&1", bin, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The command line: exit 0 / 1 (bad value) / 2 (usage), messages naming the
 * flag and value. Needs the binary: skipped when GPUQ_BIN is unset. */
static void cli_exit_codes(void **state)
{
	fixture_t *f = *state;
	const char *bin = getenv("GPUQ_BIN");
	char args[512];
	char out[4096];
	static const struct {
		const char *args; /* after --out DIR */
		int code;
		const char *needle;
	} cases[] = {
	    {"--dns a.example --ip 1.2.3", 1, "--ip: \"1.2.3\": not an IPv4 or IPv6 address"},
	    {"", 2, "at least one --dns NAME or --ip ADDR is required"},
	    {"--dns a --days 0", 1, "--days: 0: must be 1 to 3650"},
	    {"--dns a --days 3651", 1, "--days: 3651"},
	    {"--dns a --days ten", 1, "--days: \"ten\": not a whole number"},
	    {"--dns a,,b", 1, "--dns: \"a,,b\": empty name"},
	    {"--dns bad_name", 1, "--dns: \"bad_name\": not a valid DNS name"},
	    {"--dns a --bogus", 2, "unknown option \"--bogus\""},
	    {"--dns", 2, "--dns needs a value"},
	    {"--dns a extra", 2, "unexpected argument \"extra\""},
	};

	if (!bin || access(bin, X_OK)) {
		/* counted as skipped, never passed (make test always sets GPUQ_BIN) */
		print_message("# cli_exit_codes: GPUQ_BIN not set or not executable\n");
		skip();
	}
	assert_int_equal(cli_run("--help", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "usage: gpuq certs --out DIR"));
	assert_int_equal(cli_run("--dns a", out, sizeof(out)), 2);
	assert_non_null(strstr(out, "--out DIR is required"));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(args, sizeof(args), "--out %s %s", f->out, cases[i].args);
		if (cli_run(args, out, sizeof(out)) != cases[i].code ||
		    !strstr(out, cases[i].needle))
			fail_msg("case %zu \"%s\": want exit %d and \"%s\", got \"%s\"", i,
				 cases[i].args, cases[i].code, cases[i].needle, out);
	}
	/* Bad input wrote nothing. */
	assert_int_not_equal(access(f->out, F_OK), 0);
	snprintf(args, sizeof(args), "--out %s --dns gpuq.local --ip 127.0.0.1,::1 --days 7",
		 f->out);
	assert_int_equal(cli_run(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "made a new CA"));
	assert_non_null(strstr(out, "SANs: DNS:gpuq.local IP:127.0.0.1 IP:::1"));
	assert_int_equal(file_mode(f->out, CERTS_FILE_TLS_KEY), 0600);
	assert_int_equal(cli_run(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "kept the CA"));
	/* A CA key that does not match: exit 1 naming the file. */
	file_put(f->out, CERTS_FILE_CA_KEY, "junk\n", 5);
	assert_int_equal(cli_run(args, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "ca.key: not an unencrypted PEM private key"));
	/* An unwritable --out. */
	snprintf(args, sizeof(args), "--out %s/tls.crt/sub --dns a", f->out);
	assert_int_equal(cli_run(args, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "cannot create it: Not a directory"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(spec_check_table),
	    cmocka_unit_test_setup_teardown(issue_and_verify, setup, teardown),
	    cmocka_unit_test_setup_teardown(second_run_keeps_ca, setup, teardown),
	    cmocka_unit_test_setup_teardown(ca_key_mismatch_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(half_ca_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(expired_ca_rejected, setup, teardown),
	    cmocka_unit_test(serving_clamped_to_ca),
	    cmocka_unit_test(issue_rejects_bad_spec),
	    cmocka_unit_test(ip_only_and_wildcard),
	    cmocka_unit_test_setup_teardown(not_a_ca_rejected, setup, teardown),
	    cmocka_unit_test_setup_teardown(unwritable_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(gnutls_loads_pair, setup, teardown),
	    cmocka_unit_test_setup_teardown(cli_exit_codes, setup, teardown),
	};

	gpuq_log_set_level(GPUQ_LOG_ERROR); /* the clamp test warns on purpose */
	return cmocka_run_group_tests_name("certs", tests, NULL, NULL);
}

/* Files and certificates shared by the webhook server tests
 * (test_http.c, test_serve_opts.c): a temporary directory removed
 * at the end, atomic file writes as a rotation does them, and self-signed
 * serving pairs. static inline, so a test that leaves some unused does not
 * warn. */
#ifndef GPUQ_UNIT_SERVER_FIXTURES_H
#define GPUQ_UNIT_SERVER_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char tmp_root[] = "/tmp/gpuq-test-server-XXXXXX";
static bool tmp_made;

static inline const char *tmp_path(const char *name)
{
	static char paths[8][512];
	static int next;
	char *p = paths[next++ % 8];

	if (!tmp_made) {
		assert_non_null(mkdtemp(tmp_root));
		tmp_made = true;
	}
	snprintf(p, 512, "%s/%s", tmp_root, name);
	return p;
}

static inline void rm_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char sub[1024];

	if (lstat(path, &st))
		return;
	if (S_ISDIR(st.st_mode)) {
		d = opendir(path);
		while (d && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >=
			    (int)sizeof(sub))
				continue;
			rm_tree(sub);
		}
		if (d)
			closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

/* Write a file atomically (temporary + rename), as a rotation would. */
static inline void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[1024], tmp[1024];
	FILE *f;

	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

/* A self-signed ECDSA P-256 pair for 127.0.0.1 with serial 0x10 00 00 nn
 * (0x90 00 00 nn, top bit set, when n > 0xff), as PEM (gnutls_free both). */
typedef struct {
	gnutls_datum_t crt; /* PEM certificate */
	gnutls_datum_t key; /* PEM private key */
	char serial[16];    /* upper-case hex, as http_tls_pair_serial prints it */
} test_pair_t;

static inline void pair_make(unsigned n, test_pair_t *out)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	unsigned char serial[5] = {0, n > 0xff ? 0x90 : 0x10, 0, 0, (unsigned char)n};
	unsigned char ip[4] = {127, 0, 0, 1};
	time_t now = time(NULL);

	assert_int_equal(gnutls_x509_privkey_init(&key), 0);
	assert_int_equal(
	    gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
	    0);
	assert_int_equal(gnutls_x509_crt_init(&crt), 0);
	assert_int_equal(gnutls_x509_crt_set_version(crt, 3), 0);
	/* DER: a positive INTEGER whose top bit is set starts with 00 */
	assert_int_equal(
	    gnutls_x509_crt_set_serial(crt, serial + (n <= 0xff), sizeof(serial) - (n <= 0xff)), 0);
	assert_int_equal(gnutls_x509_crt_set_activation_time(crt, now - 3600), 0);
	assert_int_equal(gnutls_x509_crt_set_expiration_time(crt, now + 86400), 0);
	assert_int_equal(
	    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "127.0.0.1", 9), 0);
	assert_int_equal(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip,
							      sizeof(ip), GNUTLS_FSAN_SET),
			 0);
	assert_int_equal(gnutls_x509_crt_set_key(crt, key), 0);
	assert_int_equal(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &out->crt), 0);
	assert_int_equal(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &out->key), 0);
	snprintf(out->serial, sizeof(out->serial), "%s0000%02X", n > 0xff ? "90" : "10", n & 0xff);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
}

static inline void pair_free_pem(test_pair_t *p)
{
	gnutls_free(p->crt.data);
	gnutls_free(p->key.data);
}

static inline void pair_write(const char *dir, const test_pair_t *crt_from,
			      const test_pair_t *key_from)
{
	if (crt_from)
		write_file(dir, "tls.crt", crt_from->crt.data, crt_from->crt.size);
	if (key_from)
		write_file(dir, "tls.key", key_from->key.data, key_from->key.size);
}

#endif

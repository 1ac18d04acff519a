/* certs: CA and serving certificates with OpenSSL 3 (see certs.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "certs/certs.h"

/* The longest CA validity accepted: a hundred years. */
#define CA_DAYS_MAX 36500
/* A PEM file larger than this is not one of ours (a P-256 certificate with
 * 64 SANs is under 8 KiB). */
#define PEM_FILE_MAX ((size_t)64 * 1024)
/* X.520 ub-common-name: a subject CN holds at most 64 characters. */
#define CN_MAX 64
#define SECONDS_PER_DAY 86400L

struct certs_ca {
	X509 *cert;    /* self-signed CA certificate */
	EVP_PKEY *key; /* its private key */
};

struct certs_serving {
	X509 *cert;    /* serving certificate signed by the CA */
	EVP_PKEY *key; /* its private key */
};

/* ---- OpenSSL error translation: the one place OpenSSL errors become ours */

/* Take the oldest queued OpenSSL error as text, then clear the queue. */
static void ssl_error_text(char *buf, size_t cap)
{
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, buf, cap);
	else
		gpuq_strlcpy(buf, "no OpenSSL error queued", cap);
	ERR_clear_error();
}

/* A failure inside OpenSSL that is not the caller's input: log and return
 * GPUQ_ETLS (or GPUQ_ENOMEM when OpenSSL says so). */
static int ssl_fail(gpuq_diag_t *diag, const char *what)
{
	char buf[256];
	unsigned long e = ERR_peek_error();
	int rc = ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE ? GPUQ_ENOMEM : GPUQ_ETLS;

	ssl_error_text(buf, sizeof(buf));
	gpuq_log(GPUQ_LOG_ERROR, "certs", "%s: %s", what, buf);
	return gpuq_diag_set(diag, rc, "%s: %s", what, buf);
}

/* ---- time */

static int asn1_time_to_unix(const ASN1_TIME *t, time_t *out)
{
	struct tm tm;
	int64_t ms;

	if (!t || ASN1_TIME_to_tm(t, &tm) != 1 ||
	    gpuq_time_from_civil(tm.tm_year + 1900LL, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				 tm.tm_min, tm.tm_sec, &ms))
		return GPUQ_ECORRUPT;
	*out = (time_t)(ms / 1000);
	return GPUQ_OK;
}

static void unix_to_text(time_t t, char *buf, size_t cap)
{
	if (!gpuq_time_format((int64_t)t * 1000, GPUQ_TIME_SECONDS, buf, cap))
		gpuq_strlcpy(buf, "?", cap);
}

/* ---- spec checks */

static int dns_label_check(const char *label, size_t len)
{
	if (len == 0 || len > 63 || label[0] == '-' || label[len - 1] == '-')
		return GPUQ_EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = label[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '-';
		if (!ok)
			return GPUQ_EINVAL;
	}
	return GPUQ_OK;
}

static int dns_name_check(const char *name, gpuq_diag_t *diag)
{
	size_t len = strlen(name);
	const char *p = name;

	if (len == 0 || len > CERTS_DNS_NAME_MAX - 1)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--dns: \"%s\": a DNS name must be 1 to %d characters", name,
				     CERTS_DNS_NAME_MAX - 1);
	if (p[0] == '*' && p[1] == '.')
		p += 2; /* one leading wildcard label */
	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (dns_label_check(p, n))
			return gpuq_diag_set(
			    diag, GPUQ_EINVAL,
			    "--dns: \"%s\": not a valid DNS name (labels are 1 to 63 "
			    "letters, digits or inner hyphens, separated by dots)",
			    name);
		if (!dot)
			return GPUQ_OK;
		p = dot + 1;
	}
}

/* Parse textual IPv4/IPv6 into bytes; *len is 4 or 16. */
static int ip_parse(const char *text, unsigned char bytes[16], int *len)
{
	if (inet_pton(AF_INET, text, bytes) == 1) {
		*len = 4;
		return GPUQ_OK;
	}
	if (inet_pton(AF_INET6, text, bytes) == 1) {
		*len = 16;
		return GPUQ_OK;
	}
	return GPUQ_EINVAL;
}

int certs_serving_spec_check(const certs_serving_spec_t *spec, gpuq_diag_t *diag)
{
	unsigned char bytes[16];
	int len;
	int rc;

	if (spec->n_dns + spec->n_ips == 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--dns/--ip: no names given; the serving certificate needs at "
				     "least one DNS name or IP address");
	if (spec->n_dns > CERTS_SAN_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "--dns: %zu names given, at most %d",
				     spec->n_dns, CERTS_SAN_MAX);
	if (spec->n_ips > CERTS_SAN_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "--ip: %zu addresses given, at most %d",
				     spec->n_ips, CERTS_SAN_MAX);
	for (size_t i = 0; i < spec->n_dns; i++) {
		rc = dns_name_check(spec->dns[i], diag);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < spec->n_ips; i++)
		if (ip_parse(spec->ips[i], bytes, &len))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--ip: \"%s\": not an IPv4 or IPv6 address",
					     spec->ips[i]);
	if (spec->days < CERTS_DAYS_MIN || spec->days > CERTS_DAYS_MAX)
		return gpuq_diag_set(diag, GPUQ_ERANGE, "--days: %d: must be %d to %d", spec->days,
				     CERTS_DAYS_MIN, CERTS_DAYS_MAX);
	return GPUQ_OK;
}

/* ---- building certificates */

static int key_generate(EVP_PKEY **out, gpuq_diag_t *diag)
{
	*out = EVP_EC_gen("P-256");
	return *out ? GPUQ_OK : ssl_fail(diag, "generating a P-256 key");
}

/* A random positive 128-bit serial (RFC 5280 allows up to 20 octets). */
static int serial_set(X509 *x, gpuq_diag_t *diag)
{
	BIGNUM *bn = BN_new();
	int rc = GPUQ_OK;

	if (!bn)
		return ssl_fail(diag, "allocating a serial");
	do {
		if (!BN_rand(bn, 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY)) {
			rc = ssl_fail(diag, "drawing a random serial");
			goto done;
		}
	} while (BN_is_zero(bn));
	if (!BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		rc = ssl_fail(diag, "setting the serial");
done:
	BN_free(bn);
	return rc;
}

/* Subject: O=gpuq, CN=cn (cn omitted when empty or over the X.520 cap). */
static int subject_set(X509 *x, const char *cn, gpuq_diag_t *diag)
{
	X509_NAME *name = X509_get_subject_name(x);
	const unsigned char *o = (const unsigned char *)"gpuq";

	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, o, -1, -1, 0))
		return ssl_fail(diag, "setting the subject");
	if (cn[0] && strlen(cn) <= CN_MAX &&
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
					-1, 0))
		return ssl_fail(diag, "setting the subject CN");
	return GPUQ_OK;
}

/* A version-3 certificate for key with serial, subject and validity set;
 * issuer and extensions come later. */
static int cert_start(EVP_PKEY *key, const char *cn, time_t not_before, time_t not_after,
		      X509 **out, gpuq_diag_t *diag)
{
	X509 *x = X509_new();
	int rc;

	if (!x)
		return ssl_fail(diag, "allocating a certificate");
	if (!X509_set_version(x, X509_VERSION_3) || !X509_set_pubkey(x, key) ||
	    !ASN1_TIME_set(X509_getm_notBefore(x), not_before) ||
	    !ASN1_TIME_set(X509_getm_notAfter(x), not_after)) {
		rc = ssl_fail(diag, "filling in a certificate");
		goto fail;
	}
	rc = serial_set(x, diag);
	if (rc)
		goto fail;
	rc = subject_set(x, cn, diag);
	if (rc)
		goto fail;
	*out = x;
	return GPUQ_OK;
fail:
	X509_free(x);
	return rc;
}

/* Add one extension given in OpenSSL's config syntax (fixed strings only:
 * never peer text, whose commas would be read as syntax). */
static int ext_add(X509 *x, X509 *issuer, int nid, const char *value, gpuq_diag_t *diag)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return ssl_fail(diag, "making a certificate extension");
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? GPUQ_OK : ssl_fail(diag, "adding a certificate extension");
}

static int general_name_push(GENERAL_NAMES *names, int type, const void *bytes, int len)
{
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_STRING *s =
	    ASN1_STRING_type_new(type == GEN_DNS ? V_ASN1_IA5STRING : V_ASN1_OCTET_STRING);

	if (!gn || !s || !ASN1_STRING_set(s, bytes, len))
		goto fail;
	GENERAL_NAME_set0_value(gn, type, s);
	s = NULL;
	if (!sk_GENERAL_NAME_push(names, gn))
		goto fail;
	return GPUQ_OK;
fail:
	ASN1_STRING_free(s);
	GENERAL_NAME_free(gn);
	return GPUQ_ENOMEM;
}

/* subjectAltName built from typed values (names were checked already). */
static int san_add(X509 *x, const certs_serving_spec_t *spec, gpuq_diag_t *diag)
{
	GENERAL_NAMES *names = GENERAL_NAMES_new();
	unsigned char bytes[16];
	int len;
	int rc = GPUQ_OK;

	if (!names)
		return ssl_fail(diag, "allocating subjectAltName");
	for (size_t i = 0; i < spec->n_dns && !rc; i++)
		rc = general_name_push(names, GEN_DNS, spec->dns[i], (int)strlen(spec->dns[i]));
	for (size_t i = 0; i < spec->n_ips && !rc; i++) {
		rc = ip_parse(spec->ips[i], bytes, &len);
		if (!rc)
			rc = general_name_push(names, GEN_IPADD, bytes, len);
	}
	if (rc)
		rc = ssl_fail(diag, "building subjectAltName");
	else if (!X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT))
		rc = ssl_fail(diag, "adding subjectAltName");
	GENERAL_NAMES_free(names);
	return rc;
}

static int cert_sign(X509 *x, X509 *issuer, EVP_PKEY *issuer_key, gpuq_diag_t *diag)
{
	if (!X509_set_issuer_name(x, X509_get_subject_name(issuer)))
		return ssl_fail(diag, "setting the issuer");
	if (!X509_sign(x, issuer_key, EVP_sha256()))
		return ssl_fail(diag, "signing the certificate");
	return GPUQ_OK;
}

static void ca_free_parts(X509 *cert, EVP_PKEY *key)
{
	X509_free(cert);
	EVP_PKEY_free(key);
}

int certs_ca_create(int days, time_t now, certs_ca_t **out, gpuq_diag_t *diag)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	certs_ca_t *ca;
	char cn[CN_MAX + 1];
	char stamp[32];
	int rc;

	if (days < 1 || days > CA_DAYS_MAX)
		return gpuq_diag_set(diag, GPUQ_ERANGE, "--ca-days: %d: must be 1 to %d", days,
				     CA_DAYS_MAX);
	rc = key_generate(&key, diag);
	if (rc)
		goto fail;
	/* The creation time in the CN tells successive CAs apart. */
	unix_to_text(now, stamp, sizeof(stamp));
	snprintf(cn, sizeof(cn), "gpuq CA %s", stamp);
	rc = cert_start(key, cn, now - CERTS_BACKDATE_SECONDS, now + days * SECONDS_PER_DAY, &x,
			diag);
	if (rc)
		goto fail;
	rc = ext_add(x, x, NID_basic_constraints, "critical,CA:TRUE", diag);
	if (!rc)
		rc = ext_add(x, x, NID_key_usage, "critical,keyCertSign,cRLSign", diag);
	if (!rc)
		rc = ext_add(x, x, NID_subject_key_identifier, "hash", diag);
	if (!rc)
		rc = cert_sign(x, x, key, diag);
	if (rc)
		goto fail;
	ca = calloc(1, sizeof(*ca));
	if (!ca) {
		rc = gpuq_diag_set(diag, GPUQ_ENOMEM, "allocating a CA");
		goto fail;
	}
	ca->cert = x;
	ca->key = key;
	*out = ca;
	return GPUQ_OK;
fail:
	ca_free_parts(x, key);
	return rc;
}

void certs_ca_destroy(certs_ca_t *ca)
{
	if (!ca)
		return;
	ca_free_parts(ca->cert, ca->key);
	free(ca);
}

int certs_serving_issue(const certs_ca_t *ca, const certs_serving_spec_t *spec, time_t now,
			certs_serving_t **out, gpuq_diag_t *diag)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	certs_serving_t *s;
	time_t not_after = now + spec->days * SECONDS_PER_DAY;
	time_t ca_not_after;
	const char *cn;
	int rc;

	rc = certs_serving_spec_check(spec, diag);
	if (rc)
		return rc;
	if (asn1_time_to_unix(X509_get0_notAfter(ca->cert), &ca_not_after))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "CA notAfter is unreadable");
	if (not_after > ca_not_after) {
		char when[32];

		unix_to_text(ca_not_after, when, sizeof(when));
		gpuq_log(GPUQ_LOG_WARN, "certs",
			 "the CA expires at %s, before the %d days asked; the serving "
			 "certificate ends then too",
			 when, spec->days);
		not_after = ca_not_after;
	}
	rc = key_generate(&key, diag);
	if (rc)
		goto fail;
	cn = spec->n_dns ? spec->dns[0] : spec->ips[0];
	rc = cert_start(key, cn, now - CERTS_BACKDATE_SECONDS, not_after, &x, diag);
	if (rc)
		goto fail;
	rc = ext_add(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE", diag);
	if (!rc)
		rc = ext_add(x, ca->cert, NID_key_usage, "critical,digitalSignature", diag);
	if (!rc)
		rc = ext_add(x, ca->cert, NID_ext_key_usage, "serverAuth", diag);
	if (!rc)
		rc = ext_add(x, ca->cert, NID_subject_key_identifier, "hash", diag);
	if (!rc)
		rc = ext_add(x, ca->cert, NID_authority_key_identifier, "keyid:always", diag);
	if (!rc)
		rc = san_add(x, spec, diag);
	if (!rc)
		rc = cert_sign(x, ca->cert, ca->key, diag);
	if (rc)
		goto fail;
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = gpuq_diag_set(diag, GPUQ_ENOMEM, "allocating a serving certificate");
		goto fail;
	}
	s->cert = x;
	s->key = key;
	*out = s;
	return GPUQ_OK;
fail:
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

void certs_serving_destroy(certs_serving_t *serving)
{
	if (!serving)
		return;
	X509_free(serving->cert);
	EVP_PKEY_free(serving->key);
	free(serving);
}

/* ---- files */

static int path_join(char *buf, size_t cap, const char *dir, const char *name, gpuq_diag_t *diag)
{
	int n = snprintf(buf, cap, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= cap)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "--out: \"%s\": path too long", dir);
	return GPUQ_OK;
}

/* Read a whole file of at most PEM_FILE_MAX bytes into a memory BIO. */
static int file_read_bio(const char *path, BIO **out, gpuq_diag_t *diag)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = GPUQ_OK;

	if (fd < 0)
		return gpuq_diag_set(diag, errno == ENOENT ? GPUQ_ENOTFOUND : GPUQ_EIO,
				     "%s: cannot open: %s", path, strerror(errno));
	buf = malloc(PEM_FILE_MAX + 1);
	if (!buf) {
		rc = gpuq_diag_set(diag, GPUQ_ENOMEM, "%s: no memory to read it", path);
		goto done;
	}
	while (len <= PEM_FILE_MAX && (n = read(fd, buf + len, PEM_FILE_MAX + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = gpuq_diag_set(diag, GPUQ_EIO, "%s: read failed: %s", path,
					   strerror(errno));
			goto done;
		}
		len += (size_t)n;
	}
	if (len > PEM_FILE_MAX) {
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: larger than %zu bytes, not a PEM file",
				   path, PEM_FILE_MAX);
		goto done;
	}
	*out = BIO_new(BIO_s_secmem());
	if (!*out || BIO_write(*out, buf, (int)len) != (int)len) {
		BIO_free(*out);
		*out = NULL;
		rc = ssl_fail(diag, "buffering a PEM file");
	}
done:
	if (buf)
		OPENSSL_cleanse(buf, PEM_FILE_MAX + 1); /* may hold a private key */
	free(buf);
	close(fd);
	return rc;
}

static int pem_cert_read(const char *path, X509 **out, gpuq_diag_t *diag)
{
	BIO *bio = NULL;
	char why[256];
	int rc = file_read_bio(path, &bio, diag);

	if (rc)
		return rc;
	*out = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!*out) {
		ssl_error_text(why, sizeof(why));
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "%s: not a PEM certificate (%s)", path,
				     why);
	}
	return GPUQ_OK;
}

static int pem_key_read(const char *path, EVP_PKEY **out, gpuq_diag_t *diag)
{
	BIO *bio = NULL;
	char why[256];
	int rc = file_read_bio(path, &bio, diag);

	if (rc)
		return rc;
	/* An empty passphrase callback: an encrypted key fails, never prompts. */
	*out = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
	BIO_free(bio);
	if (!*out) {
		ssl_error_text(why, sizeof(why));
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "%s: not an unencrypted PEM private key (%s)", path, why);
	}
	return GPUQ_OK;
}

/* A loaded CA must be usable at `now`: matching key, CA:TRUE, in validity. */
static int ca_check(const char *crt_path, X509 *cert, EVP_PKEY *key, time_t now, gpuq_diag_t *diag)
{
	time_t not_before;
	time_t not_after;
	char when[32];

	if (X509_check_private_key(cert, key) != 1) {
		ERR_clear_error();
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "%s: does not match the private key in %s next to it",
				     crt_path, CERTS_FILE_CA_KEY);
	}
	if (!(X509_get_extension_flags(cert) & EXFLAG_CA) || X509_check_ca(cert) != 1)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "%s: not a CA certificate (basicConstraints CA:TRUE with "
				     "keyCertSign is required)",
				     crt_path);
	if (asn1_time_to_unix(X509_get0_notBefore(cert), &not_before) ||
	    asn1_time_to_unix(X509_get0_notAfter(cert), &not_after))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "%s: unreadable validity dates",
				     crt_path);
	if (now >= not_after) {
		unix_to_text(not_after, when, sizeof(when));
		return gpuq_diag_set(diag, GPUQ_ERANGE,
				     "%s: the CA expired at %s; remove ca.crt and ca.key to make "
				     "a new CA (and update the webhook caBundle)",
				     crt_path, when);
	}
	if (now < not_before) {
		unix_to_text(not_before, when, sizeof(when));
		return gpuq_diag_set(diag, GPUQ_ERANGE, "%s: the CA is not valid until %s",
				     crt_path, when);
	}
	return GPUQ_OK;
}

int certs_ca_load(const char *dir, time_t now, certs_ca_t **out, gpuq_diag_t *diag)
{
	char crt_path[PATH_MAX];
	char key_path[PATH_MAX];
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	certs_ca_t *ca;
	int rc;

	rc = path_join(crt_path, sizeof(crt_path), dir, CERTS_FILE_CA_CERT, diag);
	if (!rc)
		rc = path_join(key_path, sizeof(key_path), dir, CERTS_FILE_CA_KEY, diag);
	if (!rc)
		rc = pem_cert_read(crt_path, &cert, diag);
	if (!rc)
		rc = pem_key_read(key_path, &key, diag);
	if (!rc)
		rc = ca_check(crt_path, cert, key, now, diag);
	if (rc)
		goto fail;
	ca = calloc(1, sizeof(*ca));
	if (!ca) {
		rc = gpuq_diag_set(diag, GPUQ_ENOMEM, "allocating a CA");
		goto fail;
	}
	ca->cert = cert;
	ca->key = key;
	*out = ca;
	return GPUQ_OK;
fail:
	ca_free_parts(cert, key);
	return rc;
}

static bool file_exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if (path_join(path, sizeof(path), dir, name, NULL))
		return false;
	return lstat(path, &st) == 0;
}

int certs_ca_load_or_create(const char *dir, int ca_days, time_t now, certs_ca_t **out,
			    bool *created, gpuq_diag_t *diag)
{
	bool have_crt = file_exists(dir, CERTS_FILE_CA_CERT);
	bool have_key = file_exists(dir, CERTS_FILE_CA_KEY);
	int rc;

	if (have_crt != have_key)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "%s/%s exists but %s/%s does not; restore it, or remove both "
				     "to make a new CA",
				     dir, have_crt ? CERTS_FILE_CA_CERT : CERTS_FILE_CA_KEY, dir,
				     have_crt ? CERTS_FILE_CA_KEY : CERTS_FILE_CA_CERT);
	if (have_crt)
		rc = certs_ca_load(dir, now, out, diag);
	else
		rc = certs_ca_create(ca_days, now, out, diag);
	if (!rc && created)
		*created = !have_crt;
	return rc;
}

int certs_file_write(const char *dir, const char *name, const char *data, size_t len, int mode,
		     gpuq_diag_t *diag)
{
	char path[PATH_MAX];
	char tmp[PATH_MAX];
	size_t off = 0;
	int fd;
	int rc;

	rc = path_join(path, sizeof(path), dir, name, diag);
	if (!rc)
		rc = path_join(tmp, sizeof(tmp), dir, ".gpuq-certs.XXXXXX", diag);
	if (rc)
		return rc;
	fd = mkstemp(tmp); /* created 0600: a key is never readable by others */
	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s: cannot create a file there: %s", dir,
				     strerror(errno));
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		off += (size_t)n;
	}
	if (fchmod(fd, (mode_t)mode) || fsync(fd))
		goto fail;
	if (close(fd)) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path))
		goto fail;
	return GPUQ_OK;
fail:
	rc = gpuq_diag_set(diag, GPUQ_EIO, "%s: write failed: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

/* PEM-encode a certificate or a key and write it atomically. */
static int pem_write(const char *dir, const char *name, X509 *cert, EVP_PKEY *key,
		     gpuq_diag_t *diag)
{
	BIO *bio = BIO_new(key ? BIO_s_secmem() : BIO_s_mem());
	char *data;
	long len;
	int ok;
	int rc;

	if (!bio)
		return ssl_fail(diag, "allocating a PEM buffer");
	if (key)
		ok = PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL);
	else
		ok = PEM_write_bio_X509(bio, cert);
	if (!ok) {
		rc = ssl_fail(diag, "PEM-encoding");
		goto done;
	}
	len = BIO_get_mem_data(bio, &data);
	rc = certs_file_write(dir, name, data, (size_t)len, key ? 0600 : 0644, diag);
done:
	BIO_free(bio);
	return rc;
}

static int dir_ensure(const char *dir, gpuq_diag_t *diag)
{
	struct stat st;

	if (mkdir(dir, 0755) == 0)
		return GPUQ_OK;
	if (errno != EEXIST)
		return gpuq_diag_set(diag, GPUQ_EIO, "--out: \"%s\": cannot create it: %s", dir,
				     strerror(errno));
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return gpuq_diag_set(diag, GPUQ_EIO, "--out: \"%s\": not a directory", dir);
	return GPUQ_OK;
}

/* Make the renames durable. */
static int dir_sync(const char *dir, gpuq_diag_t *diag)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = GPUQ_OK;

	if (fd < 0 || fsync(fd))
		rc = gpuq_diag_set(diag, GPUQ_EIO, "%s: fsync of the directory failed: %s", dir,
				   strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

int certs_write_dir(const char *dir, const certs_ca_t *ca, bool write_ca,
		    const certs_serving_t *serving, gpuq_diag_t *diag)
{
	int rc = dir_ensure(dir, diag);

	if (!rc && write_ca)
		rc = pem_write(dir, CERTS_FILE_CA_KEY, NULL, ca->key, diag);
	if (!rc && write_ca)
		rc = pem_write(dir, CERTS_FILE_CA_CERT, ca->cert, NULL, diag);
	if (!rc && serving)
		rc = pem_write(dir, CERTS_FILE_TLS_KEY, NULL, serving->key, diag);
	if (!rc && serving)
		rc = pem_write(dir, CERTS_FILE_TLS_CERT, serving->cert, NULL, diag);
	if (!rc)
		rc = dir_sync(dir, diag);
	return rc;
}

/* ---- inspection */

static int san_collect(X509 *x, certs_cert_summary_t *out, gpuq_diag_t *diag)
{
	GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int rc = GPUQ_OK;

	for (int i = 0; names && i < sk_GENERAL_NAME_num(names) && !rc; i++) {
		const GENERAL_NAME *gn = sk_GENERAL_NAME_value(names, i);
		const ASN1_STRING *s = gn->d.ia5; /* same union slot for both kinds */
		int len = ASN1_STRING_length(s);
		const unsigned char *p = ASN1_STRING_get0_data(s);

		if (gn->type == GEN_DNS) {
			if (out->n_dns == CERTS_SAN_MAX || len >= CERTS_DNS_NAME_MAX)
				rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
						   "too many or too long DNS SANs");
			else
				memcpy(out->dns[out->n_dns++], p, (size_t)len);
		} else if (gn->type == GEN_IPADD) {
			if (out->n_ips == CERTS_SAN_MAX || (len != 4 && len != 16))
				rc = gpuq_diag_set(diag, GPUQ_ELIMIT, "too many or odd IP SANs");
			else
				inet_ntop(len == 4 ? AF_INET : AF_INET6, p, out->ips[out->n_ips++],
					  CERTS_IP_TEXT_MAX);
		}
	}
	GENERAL_NAMES_free(names);
	return rc;
}

static void cn_collect(X509 *x, certs_cert_summary_t *out)
{
	X509_NAME *name = X509_get_subject_name(x);
	int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
	unsigned char *utf8 = NULL;

	if (i < 0)
		return;
	if (ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i))) >= 0)
		gpuq_strlcpy(out->common_name, (const char *)utf8, sizeof(out->common_name));
	OPENSSL_free(utf8);
}

static int cert_summarize(X509 *x, certs_cert_summary_t *out, gpuq_diag_t *diag)
{
	BIGNUM *bn;
	char *hex;

	memset(out, 0, sizeof(*out));
	if (asn1_time_to_unix(X509_get0_notBefore(x), &out->not_before) ||
	    asn1_time_to_unix(X509_get0_notAfter(x), &out->not_after))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "certificate validity is unreadable");
	out->is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	hex = bn ? BN_bn2hex(bn) : NULL;
	BN_free(bn);
	if (!hex)
		return ssl_fail(diag, "reading the serial");
	gpuq_strlcpy(out->serial, hex, sizeof(out->serial));
	OPENSSL_free(hex);
	cn_collect(x, out);
	return san_collect(x, out, diag);
}

int certs_cert_inspect(const char *path, certs_cert_summary_t *out, gpuq_diag_t *diag)
{
	X509 *x = NULL;
	int rc = pem_cert_read(path, &x, diag);

	if (rc)
		return rc;
	rc = cert_summarize(x, out, diag);
	if (rc)
		gpuq_diag_prefix(diag, "%s: ", path);
	X509_free(x);
	return rc;
}

int certs_serving_inspect(const certs_serving_t *serving, certs_cert_summary_t *out,
			  gpuq_diag_t *diag)
{
	return cert_summarize(serving->cert, out, diag);
}

int certs_ca_inspect(const certs_ca_t *ca, certs_cert_summary_t *out, gpuq_diag_t *diag)
{
	return cert_summarize(ca->cert, out, diag);
}

int certs_names_split(const char *flag, char *list, const char **names, size_t *n,
		      gpuq_diag_t *diag)
{
	size_t len = strlen(list);

	if (!len || list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,"))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: \"%s\": empty name in the list", flag,
				     list);
	for (char *p = list;;) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		if (*n == CERTS_SAN_MAX)
			return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: more than %d values", flag,
					     CERTS_SAN_MAX);
		names[(*n)++] = p;
		if (!comma)
			return GPUQ_OK;
		p = comma + 1;
	}
}

int certs_sha256(const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 0;

	if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1 || n != 32)
		return GPUQ_ETLS;
	return GPUQ_OK;
}

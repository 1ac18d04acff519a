/*
 * certs: the webhook's TLS material, made with OpenSSL. A private CA
 * (ECDSA P-256, self-signed, CA:TRUE) signs a serving certificate whose
 * subjectAltNames are the names the apiserver dials (DNS names of the
 * Service, 127.0.0.1 for a local control plane). The CA's certificate is what
 * goes into the webhook configuration's caBundle.
 *
 * The design decision that matters: the CA outlives serving certificates.
 * Re-running on a directory that already holds a valid CA keeps ca.crt and
 * ca.key and only issues a new serving pair, so the caBundle registered in
 * the cluster stays valid across rotations; a CA that is broken (key does
 * not match, not a CA, expired) is an error, never silently replaced. Every
 * file is written atomically (temporary file in the same directory, fsync,
 * rename), so a server watching the directory never reads half a file.
 *
 * OpenSSL types stay inside this module; OpenSSL errors are translated once
 * here into GPUQ_ETLS / GPUQ_EIO plus a diagnostic naming the file.
 * Thread rules: objects are not shared between threads while in use; the
 * functions keep no global state beyond OpenSSL's own.
 */
#ifndef GPUQ_CERTS_H
#define GPUQ_CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "base/base.h"

/* File names inside a certificate directory (PEM). */
#define CERTS_FILE_CA_CERT "ca.crt"
#define CERTS_FILE_CA_KEY "ca.key"
#define CERTS_FILE_TLS_CERT "tls.crt"
#define CERTS_FILE_TLS_KEY "tls.key"

/* Serving validity bounds in days: at least one day, at most ten years
 * (longer serving certificates only postpone the rotation nobody tests). */
#define CERTS_DAYS_MIN 1
#define CERTS_DAYS_MAX 3650
#define CERTS_DAYS_DEFAULT 365
/* The CA lives ten years by default. */
#define CERTS_CA_DAYS_DEFAULT 3650
/* notBefore is backdated this many seconds to tolerate clock skew between
 * the machine that issues and the apiserver that verifies. */
#define CERTS_BACKDATE_SECONDS 300

/* Caps on subjectAltNames: a webhook Service has a handful of names; 32 of
 * each kind is generous and bounds cert size and certs_cert_summary_t. */
#define CERTS_SAN_MAX 32
/* RFC 1035: a DNS name is at most 253 characters (plus NUL). */
#define CERTS_DNS_NAME_MAX 254
/* Longest textual IPv6 address (INET6_ADDRSTRLEN) including NUL. */
#define CERTS_IP_TEXT_MAX 46
/* Serial as upper-case hex: 20 octets at most (RFC 5280), 40 digits + NUL. */
#define CERTS_SERIAL_HEX_MAX 41

/* A CA: certificate plus private key. Opaque. */
typedef struct certs_ca certs_ca_t;
/* A serving certificate plus its private key, signed by a CA. Opaque. */
typedef struct certs_serving certs_serving_t;

/* What a serving certificate must name. Arrays are borrowed for the call. */
typedef struct {
	const char *const *dns; /* DNS SANs; the first is also the subject CN */
	size_t n_dns;		/* entries in dns, 0..CERTS_SAN_MAX */
	const char *const *ips; /* IP SANs, IPv4 or IPv6 text */
	size_t n_ips;		/* entries in ips, 0..CERTS_SAN_MAX */
	int days;		/* validity, CERTS_DAYS_MIN..CERTS_DAYS_MAX */
} certs_serving_spec_t;

/* What a certificate on disk says, for status output and tests. */
typedef struct {
	time_t not_before;			     /* validity start, UTC */
	time_t not_after;			     /* validity end, UTC */
	bool is_ca;				     /* basicConstraints CA:TRUE */
	char serial[CERTS_SERIAL_HEX_MAX];	     /* upper-case hex */
	char common_name[CERTS_DNS_NAME_MAX];	     /* subject CN, "" if none */
	char dns[CERTS_SAN_MAX][CERTS_DNS_NAME_MAX]; /* DNS SANs in cert order */
	size_t n_dns;				     /* entries used in dns */
	char ips[CERTS_SAN_MAX][CERTS_IP_TEXT_MAX];  /* IP SANs as text */
	size_t n_ips;				     /* entries used in ips */
} certs_cert_summary_t;

/*
 * Check a serving spec without issuing anything: at least one name, at
 * most CERTS_SAN_MAX of each kind, every DNS name a valid hostname (labels
 * of letters, digits and inner hyphens, 63 characters each, 253 in all; a
 * leading "*." wildcard label is allowed), every IP a valid IPv4 or IPv6
 * address, days in range.
 * Returns GPUQ_OK, or GPUQ_EINVAL / GPUQ_ERANGE / GPUQ_ELIMIT with diag
 * naming the flag-like field ("--dns", "--ip", "--days") and the value.
 */
int certs_serving_spec_check(const certs_serving_spec_t *spec, gpuq_diag_t *diag);

/*
 * Make a new CA valid from now - CERTS_BACKDATE_SECONDS for `days` days
 * (1..36500). On GPUQ_OK *out is a new CA owned by the caller
 * (certs_ca_destroy). Errors: GPUQ_ERANGE (days), GPUQ_ETLS, GPUQ_ENOMEM.
 */
int certs_ca_create(int days, time_t now, certs_ca_t **out, gpuq_diag_t *diag);

/*
 * Load DIR/ca.crt and DIR/ca.key and check that they form a usable CA at
 * `now`: the key matches the certificate, basicConstraints says CA:TRUE, and
 * now lies within its validity. On GPUQ_OK *out is owned by the caller.
 * Errors: GPUQ_ENOTFOUND (a file is missing; diag names it), GPUQ_EIO,
 * GPUQ_ECORRUPT (not PEM, key mismatch, not a CA), GPUQ_ERANGE (expired or
 * not yet valid), GPUQ_ETLS.
 */
int certs_ca_load(const char *dir, time_t now, certs_ca_t **out, gpuq_diag_t *diag);

/*
 * Load the CA in DIR if both ca.crt and ca.key exist (as certs_ca_load,
 * with the same errors), or create a new one valid for ca_days when neither
 * exists. Exactly one of the two present is GPUQ_ECORRUPT: a half CA is
 * never completed or replaced silently. *created tells which happened
 * (may be NULL). The new CA is not written; see certs_write_dir.
 */
int certs_ca_load_or_create(const char *dir, int ca_days, time_t now, certs_ca_t **out,
			    bool *created, gpuq_diag_t *diag);

/* Free a CA; NULL is a no-op. */
void certs_ca_destroy(certs_ca_t *ca);

/*
 * Issue a serving certificate from `ca` for `spec` (checked as in
 * certs_serving_spec_check): a fresh P-256 key, a random 128-bit serial,
 * notBefore now - CERTS_BACKDATE_SECONDS, notAfter now + days (clamped to the
 * CA's notAfter, with a warning logged, when the CA expires sooner), keyUsage
 * digitalSignature, extendedKeyUsage serverAuth, basicConstraints CA:FALSE,
 * subject and authority key identifiers, SANs from spec.
 * On GPUQ_OK *out is owned by the caller (certs_serving_destroy).
 */
int certs_serving_issue(const certs_ca_t *ca, const certs_serving_spec_t *spec, time_t now,
			certs_serving_t **out, gpuq_diag_t *diag);

/* Free a serving certificate; NULL is a no-op. */
void certs_serving_destroy(certs_serving_t *serving);

/*
 * Write the material into DIR, creating DIR (mode 0755) if it does not
 * exist: when write_ca, ca.key then ca.crt; then tls.key then tls.crt. Keys
 * are mode 0600, certificates 0644. Each file is replaced atomically, and
 * tls.crt is written last, so a watcher that reloads when tls.crt changes
 * sees a matching pair (a reader that catches tls.key newer than tls.crt
 * gets a key mismatch and should retry). serving may be NULL to write only
 * the CA. Errors: GPUQ_EIO (diag names the file and the system error),
 * GPUQ_ETLS.
 */
int certs_write_dir(const char *dir, const certs_ca_t *ca, bool write_ca,
		    const certs_serving_t *serving, gpuq_diag_t *diag);

/*
 * Read the PEM certificate at path (the first one in the file) into *out.
 * SANs beyond CERTS_SAN_MAX of a kind, and names longer than the fields,
 * give GPUQ_ELIMIT. Errors: GPUQ_ENOTFOUND, GPUQ_EIO, GPUQ_ECORRUPT.
 */
int certs_cert_inspect(const char *path, certs_cert_summary_t *out, gpuq_diag_t *diag);

/*
 * Same facts straight from an issued serving certificate or a CA (no file
 * needed). Same limits as certs_cert_inspect.
 */
int certs_serving_inspect(const certs_serving_t *serving, certs_cert_summary_t *out,
			  gpuq_diag_t *diag);
int certs_ca_inspect(const certs_ca_t *ca, certs_cert_summary_t *out, gpuq_diag_t *diag);

/*
 * Write data to dir/name atomically: a temporary file in dir (so the rename
 * stays on one filesystem), fsync, chmod to mode, rename over the old file.
 * GPUQ_EIO (diag names the file and the system error) or GPUQ_ELIMIT.
 */
int certs_file_write(const char *dir, const char *name, const char *data, size_t len, int mode,
		     gpuq_diag_t *diag);

/*
 * Split a comma-separated list of names (as --dns and --ip take them) in
 * place, appending a pointer to each into names[*n..]. GPUQ_EINVAL for an
 * empty name (diag names the flag and the list), GPUQ_ELIMIT past
 * CERTS_SAN_MAX in all.
 */
int certs_names_split(const char *flag, char *list, const char **names, size_t *n,
		      gpuq_diag_t *diag);

/* SHA-256 of data[0..len) into out (32 bytes). GPUQ_OK, or GPUQ_ETLS when
 * OpenSSL fails. Thread-safe. (The web UI keys its cache of review
 * decisions by the token's digest, never the token.) */
int certs_sha256(const void *data, size_t len, unsigned char out[32]);

#endif

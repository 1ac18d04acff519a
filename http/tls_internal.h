/* http tls internals: the serving pair's layout, shared by tls.c (which
 * loads and swaps pairs) and server.c (whose GnuTLS certificate callback hands
 * the pair to a handshake). Private to the http module. */
#ifndef GPUQ_HTTP_TLS_INTERNAL_H
#define GPUQ_HTTP_TLS_INTERNAL_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdatomic.h>
#include <stdint.h>

/* A PEM file we read: a chain of a few certificates or one key. 1 MiB is
 * hundreds of certificates; anything bigger is not a serving pair. */
#define PEM_FILE_MAX (1u << 20)
/* Certificates in tls.crt: leaf plus intermediates; real chains have 2-4. */
#define CHAIN_MAX 16
/* Serial as hex: at most 20 octets (RFC 5280), 40 digits + NUL. */
#define SERIAL_HEX_MAX 41

struct http_tls_pair {
	atomic_uint refs;	     /* references: the webhook_tls, each connection */
	gnutls_pcert_st *pcerts;     /* the chain, leaf first */
	unsigned n_pcerts;	     /* entries in pcerts */
	gnutls_privkey_t key;	     /* the leaf's private key */
	char serial[SERIAL_HEX_MAX]; /* leaf serial, upper-case hex */
	int64_t not_after;	     /* leaf notAfter, Unix seconds */
};

#endif

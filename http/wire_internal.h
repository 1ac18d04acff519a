/* http wire internals: a TLS connection's socket I/O under GnuTLS, in
 * place of GnuTLS's own, so that one review costs one read and one write.
 *
 * GnuTLS reads a record in two asks (its 5-byte header, then the rest) and
 * libmicrohttpd sends a reply's header and body as two records, each its
 * own send: four system calls and two TCP segments for one review, where
 * nginx makes one read and one write. Here a connection's pull reads ahead
 * (one recv answers both asks and any pipelined record after them), and its
 * push, armed for one reply, keeps the header's record and sends it with
 * the body's in one sendmsg. The decision that matters: a held record is
 * sent before anything else is, the push reports the body sent only once
 * the held bytes are out, and the request's completion sends whatever is
 * still held, so nothing waits on a record that is not coming. Private to
 * the http module; one connection is used by one thread at a time (its
 * libmicrohttpd worker). */
#ifndef GPUQ_HTTP_WIRE_INTERNAL_H
#define GPUQ_HTTP_WIRE_INTERNAL_H

#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>

#define WIRE_AHEAD 8192 /* bytes one recv may read ahead of GnuTLS's asks */
#define WIRE_HELD 1024	/* bytes of a reply's header record that may be held */

/* One TLS connection's transport. Zeroed, then wire_attach. */
typedef struct http_wire {
	gnutls_session_t session; /* the connection's session (NULL: not attached) */
	int fd;			  /* its socket (non-blocking) */
	char *ahead;		  /* WIRE_AHEAD bytes, malloc'd at the first read (owned) */
	size_t ahead_off;	  /* the first byte GnuTLS has not taken */
	size_t ahead_len;	  /* bytes read into ahead */
	bool arm;		  /* hold the next push (a reply's header record) */
	size_t held_off;	  /* the first held byte not yet sent */
	size_t held_len;	  /* bytes in held */
	char held[WIRE_HELD];	  /* the held record */
} http_wire_t;

/* Put w under session as its transport on socket fd (before its
 * handshake). */
void http_wire_attach(http_wire_t *w, gnutls_session_t session, int fd);

/* Hold the next record pushed (a reply's header), to go out with the one
 * after it (its body). Call only for a reply that has a body. */
void http_wire_arm(http_wire_t *w);

/* Send what is held, waiting at most timeout_ms for the socket to take it;
 * false when it could not be sent (the connection is then of no use). The
 * request's completion calls it. */
bool http_wire_flush(http_wire_t *w, int timeout_ms);

/* Free w's buffer (the connection closed; GnuTLS is done with it). */
void http_wire_release(http_wire_t *w);

#endif

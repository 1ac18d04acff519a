/* http share internals: client addresses as keys, and each open address's
 * fair share of the body budget (bytes of request bodies held, bodies in
 * flight), kept by share.c and charged by server.c. Private to the http
 * module.
 *
 * The design decision: one entry per address with open connections, found
 * when a connection opens (under the server's slots lock, which that path
 * already takes) and pinned by its connections; a request charges it with
 * relaxed atomics only, so the review path takes no lock and allocates
 * nothing more than before. Threads: http_share_join/_leave and the
 * offenders' calls under the caller's lock; the charges from any thread. */
#ifndef GPUQ_HTTP_SHARE_INTERNAL_H
#define GPUQ_HTTP_SHARE_INTERNAL_H

#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A client address as a key: the raw bytes of an IPv4 or IPv6 address. */
typedef struct {
	unsigned char b[16]; /* the address (4 or 16 bytes used) */
	unsigned char len;   /* 4 (IPv4), 16 (IPv6), 0 (unknown: never capped) */
} addr_key_t;

/* The key of a client address (len 0 for anything but IPv4 and IPv6). */
addr_key_t http_addr_key(const struct sockaddr *sa);
/* Whether a and b are one known address (an unknown one equals nothing). */
bool http_addr_eq(const addr_key_t *a, const addr_key_t *b);
/* The address as text into out[INET6_ADDRSTRLEN] ("?" when unknown). */
void http_addr_text(const addr_key_t *k, char *out, size_t cap);

/* One address's part of the body budget, while it has connections open. */
typedef struct share {
	addr_key_t addr;     /* the address */
	unsigned conns;	     /* its open connections (under the caller's lock) */
	atomic_size_t bytes; /* body bytes its requests hold */
	atomic_uint bodies;  /* its requests reading a body */
	struct share *next;  /* in the server's list (under the caller's lock) */
} share_t;

/* The entry of addr in *list, made (calloc) when it has none, with one more
 * connection. NULL for an unknown address (never capped) or out of memory.
 * Under the caller's lock; O(addresses open). */
share_t *http_share_join(share_t **list, const addr_key_t *addr);
/* One connection fewer; the last one unlinks and frees s. NULL: no-op.
 * Under the caller's lock. */
void http_share_leave(share_t **list, share_t *s);

/* Take more body bytes for s's address: false (nothing taken) when it
 * would hold more than most. NULL s: true (not capped). */
bool http_share_bytes_take(share_t *s, size_t more, size_t most);
/* Give n bytes back. NULL s: no-op. */
void http_share_bytes_give(share_t *s, size_t n);
/* One more body in flight for s's address: false (not counted) when it has
 * most already. NULL s: true. */
bool http_share_body_begin(share_t *s, unsigned most);
/* That body is in, refused or gone. NULL s: no-op. */
void http_share_body_end(share_t *s);

/* Addresses refused for their share since the last log line, for one line
 * per address: the first SHARE_LOG_ADDRS apart, the rest counted together
 * (the log stays bounded whatever the number of addresses). */
#define SHARE_LOG_ADDRS 8
typedef struct {
	addr_key_t addr[SHARE_LOG_ADDRS]; /* the addresses, in the order first refused */
	uint64_t n[SHARE_LOG_ADDRS];	  /* refusals of each */
	uint64_t others;		  /* refusals of the addresses past them */
	uint64_t used;			  /* entries in addr (at most SHARE_LOG_ADDRS) */
} share_offenders_t;

/* One more refusal of addr. Under the caller's lock. */
void http_share_offender_note(share_offenders_t *o, const addr_key_t *addr);

#endif

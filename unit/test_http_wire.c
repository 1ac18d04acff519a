/* Unit tests for http/wire_internal.h: a TLS connection's socket I/O under
 * GnuTLS. A real GnuTLS server session (the wire under it) and a client
 * session (GnuTLS's own I/O) talk over TCP on 127.0.0.1, TLS 1.3 with a
 * pre-shared key: the pull reads ahead and strands nothing, an armed push
 * holds one record and sends it with the next, the flush sends a lone held
 * record, and a full socket loses and reorders no byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/wire_internal.h"

#define PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:+ECDHE-PSK:+PSK"

typedef struct pair {
	int fd[2];			    /* server's, client's (both non-blocking) */
	gnutls_session_t srv, cli;	    /* the two sessions */
	gnutls_psk_server_credentials_t sc; /* the server's key */
	gnutls_psk_client_credentials_t cc; /* the client's */
	http_wire_t wire;		    /* the server's transport */
} pair_t;

static const unsigned char KEY[16] = "gpuq-wire-test!";

static int psk_lookup(gnutls_session_t s, const char *user, gnutls_datum_t *key)
{
	(void)s;
	(void)user;
	key->data = gnutls_malloc(sizeof(KEY));
	if (!key->data)
		return -1;
	memcpy(key->data, KEY, sizeof(KEY));
	key->size = sizeof(KEY);
	return 0;
}

/* fd[0] and fd[1]: the two ends of a TCP connection on 127.0.0.1 (TCP,
 * not a socketpair: a full TCP socket takes part of a write). buf > 0
 * shrinks both ends' buffers, before the connection is made. */
static void tcp_pair(int fd[2], int buf)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(lfd >= 0);
	fd[1] = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd[1] >= 0);
	if (buf > 0) {
		int fds[2] = {lfd, fd[1]};

		for (int i = 0; i < 2; i++) {
			setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
			setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
		}
	}
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(connect(fd[1], (struct sockaddr *)&a, sizeof(a)), 0);
	fd[0] = accept(lfd, NULL, NULL);
	assert_true(fd[0] >= 0);
	close(lfd);
}

/* A connected pair, its handshake done; sndbuf > 0 shrinks both sockets'
 * buffers. */
static void pair_open(pair_t *p, int sndbuf)
{
	const gnutls_datum_t key = {(unsigned char *)KEY, sizeof(KEY)};
	int srv_rc = GNUTLS_E_AGAIN, cli_rc = GNUTLS_E_AGAIN;

	memset(p, 0, sizeof(*p));
	tcp_pair(p->fd, sndbuf);
	for (int i = 0; i < 2; i++) {
		int on = 1; /* as libmicrohttpd's sockets: no Nagle delay */

		assert_int_equal(setsockopt(p->fd[i], IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)),
				 0);
		assert_int_equal(fcntl(p->fd[i], F_SETFL, O_NONBLOCK), 0);
	}
	assert_int_equal(gnutls_psk_allocate_server_credentials(&p->sc), 0);
	gnutls_psk_set_server_credentials_function(p->sc, psk_lookup);
	assert_int_equal(gnutls_psk_allocate_client_credentials(&p->cc), 0);
	assert_int_equal(gnutls_psk_set_client_credentials(p->cc, "t", &key, GNUTLS_PSK_KEY_RAW),
			 0);
	assert_int_equal(gnutls_init(&p->srv, GNUTLS_SERVER | GNUTLS_NONBLOCK), 0);
	assert_int_equal(gnutls_init(&p->cli, GNUTLS_CLIENT | GNUTLS_NONBLOCK), 0);
	assert_int_equal(gnutls_priority_set_direct(p->srv, PRIORITY, NULL), 0);
	assert_int_equal(gnutls_priority_set_direct(p->cli, PRIORITY, NULL), 0);
	assert_int_equal(gnutls_credentials_set(p->srv, GNUTLS_CRD_PSK, p->sc), 0);
	assert_int_equal(gnutls_credentials_set(p->cli, GNUTLS_CRD_PSK, p->cc), 0);
	gnutls_transport_set_int(p->cli, p->fd[1]);
	gnutls_transport_set_int(p->srv, p->fd[0]); /* as libmicrohttpd does, then: */
	http_wire_attach(&p->wire, p->srv, p->fd[0]);
	for (int i = 0; i < 5000 && (srv_rc || cli_rc); i++) {
		if (i)
			poll(NULL, 0, 1); /* loopback's delivery */
		if (srv_rc)
			srv_rc = gnutls_handshake(p->srv);
		if (cli_rc)
			cli_rc = gnutls_handshake(p->cli);
		assert_true(srv_rc == 0 || srv_rc == GNUTLS_E_AGAIN);
		assert_true(cli_rc == 0 || cli_rc == GNUTLS_E_AGAIN);
	}
	assert_int_equal(srv_rc, 0);
	assert_int_equal(cli_rc, 0);
}

static void pair_close(pair_t *p)
{
	gnutls_deinit(p->srv);
	gnutls_deinit(p->cli);
	gnutls_psk_free_server_credentials(p->sc);
	gnutls_psk_free_client_credentials(p->cc);
	http_wire_release(&p->wire);
	close(p->fd[0]);
	close(p->fd[1]);
}

/* Whether bytes wait in fd's socket (not yet read by anyone), waiting up to
 * 200 ms for loopback to deliver them: a check that none came waits it all
 * (on a correct wire it cannot flake), one that some came, only until they
 * are in. */
static bool socket_has_bytes(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char c;

	return poll(&pfd, 1, 200) == 1 && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

static void send_all(gnutls_session_t s, const char *text)
{
	assert_int_equal(gnutls_record_send(s, text, strlen(text)), (ssize_t)strlen(text));
}

/* gnutls_record_recv on s over socket fd, waiting (5 s at most) for bytes
 * on EAGAIN. */
static ssize_t recv_wait(gnutls_session_t s, int fd, char *buf, size_t cap)
{
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n = gnutls_record_recv(s, buf, cap);

		if (n != GNUTLS_E_AGAIN || poll(&pfd, 1, 5000) != 1)
			return n;
	}
}

static void recv_is(gnutls_session_t s, int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv_wait(s, fd, buf, sizeof(buf));

	assert_int_equal(n, (ssize_t)strlen(want));
	assert_memory_equal(buf, want, strlen(want));
}

/* One recv takes three records; GnuTLS gets them one by one from what was
 * read ahead, and then EAGAIN from the empty socket. */
static void wire_reads_ahead(void **state)
{
	pair_t p;

	(void)state;
	pair_open(&p, 0);
	send_all(p.cli, "one");
	send_all(p.cli, "two");
	send_all(p.cli, "three");
	/* All three records in before the first read: 3 x 22 bytes of TLS 1.3
	 * record and 11 of text. */
	for (int i = 0, have = 0; i < 5000 && have < 3 * 22 + 11; i++) {
		assert_int_equal(ioctl(p.fd[0], FIONREAD, &have), 0);
		if (have < 3 * 22 + 11)
			poll(NULL, 0, 1);
	}
	recv_is(p.srv, p.fd[0], "one");
	assert_false(socket_has_bytes(p.fd[0])); /* all three were read at once */
	assert_true(p.wire.ahead_len > p.wire.ahead_off);
	recv_is(p.srv, p.fd[0], "two");
	recv_is(p.srv, p.fd[0], "three");
	char buf[16];
	assert_int_equal(gnutls_record_recv(p.srv, buf, sizeof(buf)), GNUTLS_E_AGAIN);
	send_all(p.cli, "four"); /* the next read is a real one */
	recv_is(p.srv, p.fd[0], "four");
	pair_close(&p);
}

/* Armed, a reply's header record waits for its body's and both leave in
 * one write; unarmed, each record leaves at once. */
static void wire_holds_header_for_body(void **state)
{
	pair_t p;

	(void)state;
	pair_open(&p, 0);
	send_all(p.srv, "unarmed");
	assert_true(socket_has_bytes(p.fd[1]));
	recv_is(p.cli, p.fd[1], "unarmed");
	http_wire_arm(&p.wire);
	send_all(p.srv, "HTTP/1.1 200 OK\r\n\r\n");
	assert_false(socket_has_bytes(p.fd[1])); /* held */
	send_all(p.srv, "{\"body\":1}");
	assert_true(socket_has_bytes(p.fd[1]));
	recv_is(p.cli, p.fd[1], "HTTP/1.1 200 OK\r\n\r\n");
	recv_is(p.cli, p.fd[1], "{\"body\":1}");
	assert_true(http_wire_flush(&p.wire, 0)); /* nothing left */
	send_all(p.srv, "next");		  /* disarmed after one */
	recv_is(p.cli, p.fd[1], "next");
	pair_close(&p);
}

/* A reply that went out as one record (nothing came after it) is sent by
 * the request's completion. A record too big to hold is not held. */
static void wire_flush_sends_lone_record(void **state)
{
	pair_t p;
	static char big[WIRE_HELD + 100];

	(void)state;
	pair_open(&p, 0);
	http_wire_arm(&p.wire);
	send_all(p.srv, "whole reply");
	assert_false(socket_has_bytes(p.fd[1]));
	assert_true(http_wire_flush(&p.wire, 0));
	recv_is(p.cli, p.fd[1], "whole reply");

	memset(big, 'x', sizeof(big) - 1);
	http_wire_arm(&p.wire);
	send_all(p.srv, big);
	assert_true(socket_has_bytes(p.fd[1]));
	char got[sizeof(big)];
	size_t have = 0;
	while (have < sizeof(big) - 1) {
		ssize_t n = recv_wait(p.cli, p.fd[1], got + have, sizeof(got) - have);
		assert_true(n > 0);
		have += (size_t)n;
	}
	assert_memory_equal(got, big, sizeof(big) - 1);
	pair_close(&p);
}

/* Replies of a held header and a large body through small socket buffers,
 * the client reading a little at a time: every byte arrives, in order,
 * whatever the held record met (a full socket, a partial write). */
static void wire_full_socket_loses_nothing(void **state)
{
	enum { REPLIES = 40, BODY = 48 * 1024, CHUNK = 8192 };
	pair_t p;
	char *want = malloc((size_t)REPLIES * (WIRE_HELD + BODY));
	char *got = malloc((size_t)REPLIES * (WIRE_HELD + BODY));
	char *body = malloc(BODY);
	size_t wlen = 0, glen = 0;
	unsigned seed = 7;

	(void)state;
	assert_non_null(want);
	assert_non_null(got);
	assert_non_null(body);
	pair_open(&p, 4096);
	for (int r = 0; r < REPLIES; r++) {
		char header[WIRE_HELD];
		size_t hlen = 100 + (size_t)(r * 97) % (WIRE_HELD - 200);

		memset(header, 'A' + r % 26, hlen);
		for (size_t i = 0; i < BODY; i++)
			body[i] = (char)('a' + (i + (size_t)r) % 26);
		/* The record holds what TLS adds, so the header's plaintext
		 * stays under WIRE_HELD less the record's overhead. */
		hlen = hlen > WIRE_HELD - 64 ? WIRE_HELD - 64 : hlen;
		http_wire_arm(&p.wire);
		for (size_t off = 0; off < hlen + BODY;) {
			const char *src = off < hlen ? header + off : body + (off - hlen);
			size_t len = off < hlen ? hlen - off : BODY - (off - hlen);
			ssize_t n;

			len = len > CHUNK ? CHUNK : len;
			n = gnutls_record_send(p.srv, src, len);
			if (n == GNUTLS_E_AGAIN) {
				/* The client reads a little: a record or none. */
				ssize_t g =
				    gnutls_record_recv(p.cli, got + glen, 1 + rand_r(&seed) % 3000);
				assert_true(g > 0 || g == GNUTLS_E_AGAIN);
				if (g > 0)
					glen += (size_t)g;
				continue;
			}
			assert_true(n > 0);
			memcpy(want + wlen, src, (size_t)n);
			wlen += (size_t)n;
			off += (size_t)n;
		}
		assert_true(http_wire_flush(&p.wire, 1000));
	}
	while (glen < wlen) {
		ssize_t g = recv_wait(p.cli, p.fd[1], got + glen, wlen - glen);

		assert_true(g > 0);
		glen += (size_t)g;
	}
	assert_int_equal(glen, wlen);
	assert_memory_equal(got, want, wlen);
	pair_close(&p);
	free(want);
	free(got);
	free(body);
}

/* The socket full (raw bytes the client has not read) when a held header
 * and its body go out: the body's push answers EAGAIN and loses nothing;
 * as the client reads, the header and then the body arrive, in order. */
static void wire_held_record_waits_for_room(void **state)
{
	enum { BODY = 8192, STEP = 700 };
	static char junk[4096], body[BODY], got[BODY];
	const char *header = "HTTP/1.1 200 OK\r\nContent-Length: 8192\r\n\r\n";
	size_t filled = 0, drained = 0, have = 0;
	int again = 0;
	ssize_t n;
	pair_t p;

	(void)state;
	pair_open(&p, 4096);
	memset(junk, 'j', sizeof(junk));
	for (size_t i = 0; i < BODY; i++)
		body[i] = (char)('a' + i % 26);
	while ((n = send(p.fd[0], junk, sizeof(junk), MSG_NOSIGNAL)) > 0)
		filled += (size_t)n;
	assert_true(n < 0 && errno == EAGAIN);
	http_wire_arm(&p.wire);
	send_all(p.srv, header);
	while ((n = gnutls_record_send(p.srv, body, BODY)) == GNUTLS_E_AGAIN) {
		char raw[STEP];
		ssize_t r;

		again++;
		assert_true(drained < filled); /* the filler goes before the reply */
		r = recv(p.fd[1], raw, drained + STEP > filled ? filled - drained : STEP, 0);
		if (r < 0 && errno == EAGAIN)
			continue;
		assert_true(r > 0);
		assert_memory_equal(raw, junk, (size_t)r);
		drained += (size_t)r;
	}
	assert_int_equal(n, BODY);
	assert_true(again > 0); /* the socket was full when the body came */
	while (drained < filled) {
		char raw[STEP];
		struct pollfd pfd = {.fd = p.fd[1], .events = POLLIN};
		ssize_t r;

		assert_int_equal(poll(&pfd, 1, 5000), 1);
		r = recv(p.fd[1], raw, drained + STEP > filled ? filled - drained : STEP, 0);
		assert_true(r > 0);
		assert_memory_equal(raw, junk, (size_t)r);
		drained += (size_t)r;
	}
	recv_is(p.cli, p.fd[1], header);
	while (have < BODY) {
		n = recv_wait(p.cli, p.fd[1], got + have, BODY - have);
		assert_true(n > 0);
		have += (size_t)n;
	}
	assert_memory_equal(got, body, BODY);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(wire_reads_ahead),
	    cmocka_unit_test(wire_holds_header_for_body),
	    cmocka_unit_test(wire_flush_sends_lone_record),
	    cmocka_unit_test(wire_full_socket_loses_nothing),
	    cmocka_unit_test(wire_held_record_waits_for_room),
	};

	return cmocka_run_group_tests_name("http_wire", tests, NULL, NULL);
}

/* http wire: a TLS connection's socket I/O under GnuTLS (read ahead, one
 * write per reply). See wire_internal.h. */
#include "http/wire_internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define WIRE_IOV 16 /* iovecs one sendmsg takes: the held record and GnuTLS's */

/* GnuTLS's pull: what was read ahead, else one recv of up to WIRE_AHEAD
 * bytes (its record header's 5-byte ask then finds the body already in). */
static ssize_t wire_pull(gnutls_transport_ptr_t ptr, void *buf, size_t size)
{
	http_wire_t *w = ptr;
	ssize_t r;
	size_t n;

	if (w->ahead_off < w->ahead_len) {
		n = w->ahead_len - w->ahead_off;
		n = n < size ? n : size;
		memcpy(buf, w->ahead + w->ahead_off, n);
		w->ahead_off += n;
		return (ssize_t)n;
	}
	if (size < WIRE_AHEAD && !w->ahead)
		w->ahead = malloc(WIRE_AHEAD); /* NULL: read without it */
	if (size >= WIRE_AHEAD || !w->ahead) {
		r = recv(w->fd, buf, size, 0);
		if (r < 0)
			gnutls_transport_set_errno(w->session, errno);
		return r;
	}
	r = recv(w->fd, w->ahead, WIRE_AHEAD, 0);
	if (r <= 0) {
		if (r < 0)
			gnutls_transport_set_errno(w->session, errno);
		return r;
	}
	n = (size_t)r < size ? (size_t)r : size;
	memcpy(buf, w->ahead, n);
	w->ahead_off = n;
	w->ahead_len = (size_t)r;
	return (ssize_t)n;
}

/* GnuTLS's wait for input: at once when bytes were read ahead. */
static int wire_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
	http_wire_t *w = ptr;
	struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
	int r;

	if (w->ahead_off < w->ahead_len)
		return 1;
	r = poll(&pfd, 1,
		 ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (ms > INT_MAX ? INT_MAX : (int)ms));
	if (r < 0)
		gnutls_transport_set_errno(w->session, errno);
	return r > 0 ? 1 : r;
}

/* GnuTLS's push. Armed, the record is held (the reply's header); else what
 * is held goes first, in the same sendmsg. GnuTLS's bytes are reported
 * sent only once the held ones are out: until then EAGAIN, and GnuTLS
 * offers the same bytes again when the socket can take more. */
static ssize_t wire_push(gnutls_transport_ptr_t ptr, const giovec_t *iov, int iovcnt)
{
	http_wire_t *w = ptr;
	struct iovec v[WIRE_IOV];
	struct msghdr m;
	size_t total = 0, pend = w->held_len - w->held_off;
	int n = 0;
	ssize_t r;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (w->arm) {
		w->arm = false;
		if (!pend && total && total <= WIRE_HELD) {
			for (int i = 0; i < iovcnt; i++) {
				memcpy(w->held + w->held_len, iov[i].iov_base, iov[i].iov_len);
				w->held_len += iov[i].iov_len;
			}
			w->held_off = 0;
			return (ssize_t)total;
		}
	}
	if (pend)
		v[n++] = (struct iovec){w->held + w->held_off, pend};
	for (int i = 0; i < iovcnt && n < WIRE_IOV; i++)
		v[n++] = iov[i];
	memset(&m, 0, sizeof(m));
	m.msg_iov = v;
	m.msg_iovlen = (size_t)n;
	r = sendmsg(w->fd, &m, MSG_NOSIGNAL);
	if (r < 0) {
		gnutls_transport_set_errno(w->session, errno);
		return -1;
	}
	if (pend) {
		if ((size_t)r < pend || ((size_t)r == pend && total)) {
			/* The socket is full: GnuTLS's bytes wait for it. */
			w->held_off += (size_t)r;
			if (w->held_off == w->held_len)
				w->held_off = w->held_len = 0;
			gnutls_transport_set_errno(w->session, EAGAIN);
			return -1;
		}
		w->held_off = w->held_len = 0;
		r -= (ssize_t)pend;
	}
	return r;
}

void http_wire_attach(http_wire_t *w, gnutls_session_t session, int fd)
{
	w->session = session;
	w->fd = fd;
	gnutls_transport_set_ptr(session, w);
	gnutls_transport_set_pull_function(session, wire_pull);
	gnutls_transport_set_pull_timeout_function(session, wire_pull_timeout);
	gnutls_transport_set_vec_push_function(session, wire_push);
}

void http_wire_arm(http_wire_t *w)
{
	if (w->session)
		w->arm = true;
}

bool http_wire_flush(http_wire_t *w, int timeout_ms)
{
	w->arm = false;
	while (w->held_off < w->held_len) {
		ssize_t r =
		    send(w->fd, w->held + w->held_off, w->held_len - w->held_off, MSG_NOSIGNAL);
		struct pollfd pfd = {.fd = w->fd, .events = POLLOUT};

		if (r > 0) {
			w->held_off += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN && poll(&pfd, 1, timeout_ms) > 0)
			continue;
		return false;
	}
	w->held_off = w->held_len = 0;
	return true;
}

void http_wire_release(http_wire_t *w)
{
	free(w->ahead);
	memset(w, 0, sizeof(*w));
}

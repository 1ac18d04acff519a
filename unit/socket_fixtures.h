/* Socket helpers for the in-process server tests (test_http,
 * test_kube_watch): a free port, the server's end of a client's
 * connection, a TCP option. */
#ifndef GPUQ_UNIT_SOCKET_FIXTURES_H
#define GPUQ_UNIT_SOCKET_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A free TCP port on 127.0.0.1 (bound by the kernel, then released). */
static inline uint16_t free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* The server's end of a connection this process serves: the socket whose
 * local port is server_port and whose peer port is peer_port; -1 if none. */
static inline int socket_server_end(uint16_t server_port, long peer_port)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	assert_non_null(d);
	while (found < 0 && (e = readdir(d))) {
		struct sockaddr_in me, peer;
		socklen_t ml = sizeof(me), pl = sizeof(peer);
		char *end;
		int fd = (int)strtol(e->d_name, &end, 10);

		if (end == e->d_name || *end || fd == dirfd(d))
			continue;
		if (!getsockname(fd, (struct sockaddr *)&me, &ml) &&
		    !getpeername(fd, (struct sockaddr *)&peer, &pl) && me.sin_family == AF_INET &&
		    ntohs(me.sin_port) == server_port && ntohs(peer.sin_port) == peer_port)
			found = fd;
	}
	closedir(d);
	return found;
}

/* A TCP option of fd (TCP_CORK, TCP_NODELAY). */
static inline int tcp_opt(int fd, int opt)
{
	int v = -1;
	socklen_t l = sizeof(v);

	assert_int_equal(getsockopt(fd, IPPROTO_TCP, opt, &v, &l), 0);
	return v;
}

#endif

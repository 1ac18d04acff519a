/* http share: client addresses and their fair share of the body budget.
 * See share_internal.h. */
#include "http/share_internal.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

addr_key_t http_addr_key(const struct sockaddr *sa)
{
	addr_key_t k = {{0}, 0};

	if (sa && sa->sa_family == AF_INET) {
		memcpy(k.b, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		k.len = 4;
	} else if (sa && sa->sa_family == AF_INET6) {
		memcpy(k.b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		k.len = 16;
	}
	return k;
}

bool http_addr_eq(const addr_key_t *a, const addr_key_t *b)
{
	return a->len && a->len == b->len && !memcmp(a->b, b->b, a->len);
}

void http_addr_text(const addr_key_t *k, char *out, size_t cap)
{
	if (!k->len || !inet_ntop(k->len == 4 ? AF_INET : AF_INET6, k->b, out, (socklen_t)cap))
		gpuq_strlcpy(out, "?", cap);
}

share_t *http_share_join(share_t **list, const addr_key_t *addr)
{
	share_t *s;

	if (!addr->len)
		return NULL;
	for (s = *list; s; s = s->next)
		if (http_addr_eq(&s->addr, addr)) {
			s->conns++;
			return s;
		}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->addr = *addr;
	s->conns = 1;
	atomic_init(&s->bytes, 0);
	atomic_init(&s->bodies, 0);
	s->next = *list;
	*list = s;
	return s;
}

void http_share_leave(share_t **list, share_t *s)
{
	if (!s || --s->conns)
		return;
	for (share_t **p = list; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	free(s);
}

bool http_share_bytes_take(share_t *s, size_t more, size_t most)
{
	size_t before;

	if (!s)
		return true;
	before = atomic_fetch_add_explicit(&s->bytes, more, memory_order_relaxed);
	if (before + more <= most)
		return true;
	atomic_fetch_sub_explicit(&s->bytes, more, memory_order_relaxed);
	return false;
}

void http_share_bytes_give(share_t *s, size_t n)
{
	if (s)
		atomic_fetch_sub_explicit(&s->bytes, n, memory_order_relaxed);
}

bool http_share_body_begin(share_t *s, unsigned most)
{
	if (!s)
		return true;
	if (atomic_fetch_add_explicit(&s->bodies, 1, memory_order_relaxed) < most)
		return true;
	atomic_fetch_sub_explicit(&s->bodies, 1, memory_order_relaxed);
	return false;
}

void http_share_body_end(share_t *s)
{
	if (s)
		atomic_fetch_sub_explicit(&s->bodies, 1, memory_order_relaxed);
}

void http_share_offender_note(share_offenders_t *o, const addr_key_t *addr)
{
	for (uint64_t i = 0; i < o->used; i++)
		if (http_addr_eq(&o->addr[i], addr)) {
			o->n[i]++;
			return;
		}
	if (o->used < SHARE_LOG_ADDRS) {
		o->addr[o->used] = *addr;
		o->n[o->used++] = 1;
	} else
		o->others++;
}

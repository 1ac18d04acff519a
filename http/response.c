/* http response: a reply's libmicrohttpd response. See response_internal.h. */
#include "http/response_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A reply's response, its body copied. libmicrohttpd 0.9.75 sends a reply
 * made from a buffer with its header "buffered" when the two together are
 * under 1,400 bytes: it corks the socket (TCP_CORK) and, the socket corked
 * for good, pushes that reply and every later one on the connection with a
 * TCP_NODELAY setsockopt, one more system call per reply. A reply whose
 * body comes from a callback has its header "pushed" instead: the socket is
 * never corked and, TCP_NODELAY set once per connection, a reply costs no
 * system call beside its send (http/wire.c still sends header and body as
 * one). So a body up to SMALL_BODY_MAX is served from a callback, in one
 * block; a larger one (its header pushed anyway) from a buffer. */
#define SMALL_BODY_MAX 16384u

typedef struct {
	size_t len;
	char data[];
} small_body_t;

static ssize_t small_body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	const small_body_t *b = cls;
	size_t n;

	if (pos >= b->len)
		return MHD_CONTENT_READER_END_OF_STREAM;
	n = b->len - (size_t)pos < max ? b->len - (size_t)pos : max;
	memcpy(buf, b->data + pos, n);
	return (ssize_t)n;
}

struct MHD_Response *http_response_new(const char *body, size_t len)
{
	struct MHD_Response *resp;
	small_body_t *b;

	if (!len || len > SMALL_BODY_MAX)
		return MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	b = malloc(sizeof(*b) + len);
	if (!b)
		return NULL;
	b->len = len;
	memcpy(b->data, body, len);
	resp = MHD_create_response_from_callback(len, len, small_body_read, b, free);
	if (!resp)
		free(b);
	return resp;
}

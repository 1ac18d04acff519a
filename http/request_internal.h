/* http request internals: the checks of a request's headers that need no
 * server state (routing, RFC 9112's rules that request smuggling exploits,
 * the review's Content-Type), split from server.c, which calls them from
 * libmicrohttpd's request callback. Private to the http module; any thread. */
#ifndef GPUQ_HTTP_REQUEST_INTERNAL_H
#define GPUQ_HTTP_REQUEST_INTERNAL_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"

/* The route a path names (without its query string). */
http_route_t http_request_route(const char *url);

/* Whether a Content-Type header names application/json (parameters such as
 * charset allowed, case-insensitive). NULL: false. */
bool http_request_json(const char *ctype);

/* Whether the request announces a body (a length above 0, or chunks). */
bool http_request_has_body(struct MHD_Connection *conn);

/* Why a request whose headers are in is refused before routing (NULL: it is
 * not), a sentence ending in a newline, static or in buf[0..cap): what
 * HTTP/1.1 (RFC 9112) requires and request smuggling exploits. url is as
 * sent (not unescaped). */
const char *http_request_refusal(struct MHD_Connection *conn, const char *url, const char *version,
				 char *buf, size_t cap);

#endif

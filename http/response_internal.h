/* http response (internal to http/): a reply's libmicrohttpd response, its
 * body copied, made so that libmicrohttpd 0.9.75 never corks the socket
 * (response.c says why). */
#ifndef GPUQ_HTTP_RESPONSE_INTERNAL_H
#define GPUQ_HTTP_RESPONSE_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include <microhttpd.h>

/* A response of len bytes of body (copied; NULL when out of memory). */
struct MHD_Response *http_response_new(const char *body, size_t len);

#endif

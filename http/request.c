/* http request: what a request's headers must be before it is routed, and
 * its route. See request_internal.h. */
#include "http/request_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

http_route_t http_request_route(const char *url)
{
	static const char *const paths[] = {"/mutate", "/validate", "/healthz", "/readyz",
					    "/metrics"};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!strcmp(url, paths[i]))
			return (http_route_t)i;
	if (!strcmp(url, "/ui") || !strncmp(url, "/ui/", 4) || !strncmp(url, "/api/", 5) ||
	    !strncmp(url, "/apis/", 6))
		return HTTP_ROUTE_UI;
	return HTTP_ROUTE_OTHER;
}

/* Whether a Content-Type header names application/json (parameters such as
 * charset allowed, case-insensitive). */
bool http_request_json(const char *ctype)
{
	static const char want[] = "application/json";
	size_t n = sizeof(want) - 1;

	if (!ctype || strncasecmp(ctype, want, n) != 0)
		return false;
	ctype += n;
	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	return *ctype == '\0' || *ctype == ';';
}

/* Whether the request announces a body (a length above 0, or chunks). */
bool http_request_has_body(struct MHD_Connection *conn)
{
	const char *clen, *te;

	te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return te || (clen && strcmp(clen, "0") != 0);
}

/* The characters a served path may hold (no escapes, no spaces, no NUL). */
#define PATH_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/-._~"

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct {
		const char *name;
		int n;
	} *c = cls;

	(void)kind;
	(void)value;
	if (!strcasecmp(key, c->name))
		c->n++;
	return MHD_YES;
}

/* How many times header `name` came. */
static int header_count(struct MHD_Connection *conn, const char *name)
{
	struct {
		const char *name;
		int n;
	} c = {name, 0};

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &c);
	return c.n;
}

/* Why a request whose headers are in is refused before routing (NULL: it is
 * not), into buf: what HTTP/1.1 (RFC 9112) requires and request smuggling
 * exploits. url is as sent (no unescaping: see no_unescape). */
const char *http_request_refusal(struct MHD_Connection *conn, const char *url, const char *version,
				 char *buf, size_t cap)
{
	const char *clen, *te;
	if (!strcmp(version, MHD_HTTP_VERSION_1_1) &&
	    !MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST))
		return "bad request: HTTP/1.1 without a Host header\n";
	if (header_count(conn, MHD_HTTP_HEADER_CONTENT_LENGTH) > 1 ||
	    header_count(conn, MHD_HTTP_HEADER_HOST) > 1)
		return "bad request: more than one Content-Length or Host header\n";
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (clen && (!clen[0] || strspn(clen, "0123456789") != strlen(clen)))
		return "bad request: Content-Length is not a number of bytes\n";
	te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	if (te && strcasecmp(te, "chunked") != 0)
		return "bad request: the only Transfer-Encoding served is chunked\n";
	if (te && clen)
		return "bad request: both Content-Length and Transfer-Encoding\n";
	if (url[0] != '/' || strpbrk(url, "%\\") || strspn(url, PATH_CHARS) != strlen(url)) {
		snprintf(buf, cap, "bad request: path \"%.64s\": not a plain path\n", url);
		return buf;
	}
	return NULL;
}

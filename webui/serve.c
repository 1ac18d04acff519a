/* webui/serve.c: the UI's routes on the HTTP server (http/): the embedded
 * files under /ui/, the JSON API under /api/v1/ and the visibility API
 * under WEBUI_VIS_PREFIX behind the access check, and the UI's
 * lifecycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "webui/internal.h"

#define MODULE "webui"
#define JSON_TYPE "application/json"
#define BEARER "Bearer "

int webui_create(webui_auth_mode_t mode, const kube_config_t *kube, webui_t **out,
		 gpuq_diag_t *diag)
{
	webui_t *ui;
	int rc;

	*out = NULL;
	ui = calloc(1, sizeof(*ui));
	if (!ui)
		return GPUQ_ENOMEM;
	ui->mode = mode;
	ui->kube = kube;
	pthread_mutex_init(&ui->auth_lock, NULL);
	atomic_init(&ui->leader, false);
	atomic_init(&ui->last_api_ms, 0);
	atomic_init(&ui->last_vis_ms, 0);
	atomic_init(&ui->idle_ms, WEBUI_IDLE_MS);
	ui->pages = ui->visibility = true;
	rc = ws_published_init(ui); /* first: webui_destroy deinits it */
	ui->cache = calloc(WEBUI_AUTH_CACHE_MAX, sizeof(*ui->cache));
	if (!ui->cache)
		rc = GPUQ_ENOMEM;
	if (!rc && mode == WEBUI_AUTH_REVIEW && kube) {
		kube_client_opts_t co;

		kube_client_opts_default(&co);
		co.qps = 20; /* reviews: 20/s sustained at most, a burst of 40 */
		co.burst = 40;
		rc = kube_client_create(kube, &co, &ui->client, diag);
	}
	if (rc) {
		webui_destroy(ui);
		return rc;
	}
	*out = ui;
	return GPUQ_OK;
}

void webui_destroy(webui_t *ui)
{
	if (!ui)
		return;
	gpuq_pub_deinit(&ui->published);
	ws_events_free(ui);
	(void)webui_prices_set(ui, NULL, 0); /* frees the prices held */
	free(ui->order[0]);
	free(ui->order[1]);
	ws_names_reset(ui);
	kube_client_destroy(ui->client);
	free(ui->cache);
	pthread_mutex_destroy(&ui->auth_lock);
	free(ui);
}

void webui_routes_set(webui_t *ui, bool pages, bool visibility)
{
	ui->pages = pages;
	ui->visibility = visibility;
}

void webui_idle_set(webui_t *ui, int64_t idle_ms)
{
	atomic_store(&ui->idle_ms, idle_ms > 0 ? idle_ms : WEBUI_IDLE_MS);
}

/* ---- replies ---- */

static void reply_static(http_app_reply_t *out, unsigned status, const char *type, const char *text)
{
	*out = (http_app_reply_t){
	    .status = status, .content_type = type, .body = text, .len = strlen(text)};
}

/* An error: json_text (the web view's Error) on /api/, or a Kubernetes
 * Status with msg on the visibility API. */
static int reply_error(http_app_reply_t *out, bool vis, unsigned status, const char *json_text,
		       const char *msg)
{
	if (vis) {
		char *body;
		size_t len;
		int rc = webui_vis_error(status, msg, &out->status, &body, &len);
		if (rc)
			return rc;
		*out = (http_app_reply_t){.status = status,
					  .content_type = JSON_TYPE,
					  .body = body,
					  .len = len,
					  .body_owned = true};
	} else {
		reply_static(out, status, JSON_TYPE, json_text);
	}
	if (status == 401)
		out->www_authenticate = "Bearer realm=\"gpuq\"";
	return GPUQ_OK;
}

static int serve_asset(const char *path, http_app_reply_t *out)
{
	if (!strcmp(path, "/ui")) {
		reply_static(out, 301, "text/plain; charset=utf-8", "see /ui/\n");
		out->location = "/ui/";
		return GPUQ_OK;
	}
	for (size_t i = 0; i < webui_n_assets; i++)
		if (!strcmp(path, webui_assets[i].path)) {
			*out = (http_app_reply_t){.status = 200,
						  .content_type = webui_assets[i].content_type,
						  .cache_control = "no-cache",
						  .body = webui_assets[i].data,
						  .len = webui_assets[i].len};
			return GPUQ_OK;
		}
	reply_static(out, 404, "text/plain; charset=utf-8", "not found\n");
	return GPUQ_OK;
}

/* ---- access ---- */

/* The bearer token of an Authorization header, or NULL. */
static const char *bearer(const char *authorization)
{
	if (!authorization || strncasecmp(authorization, BEARER, strlen(BEARER)) != 0)
		return NULL;
	authorization += strlen(BEARER);
	while (*authorization == ' ')
		authorization++;
	return *authorization && strlen(authorization) <= KUBE_TOKEN_MAX ? authorization : NULL;
}

/* The scope path needs, into scope (cap bytes): "" or the namespace. */
static void scope_of(const char *path, char *scope, size_t cap)
{
	const char *ns;
	size_t n;

	webui_path_scope(path, &ns, &n);
	if (!ns || n >= cap)
		n = 0;
	memcpy(scope, ns ? ns : "", n);
	scope[n] = '\0';
}

/* The caller's access to path (acc->namespace_ points into scope). Returns
 * WA_ALLOWED (acc filled), WA_FORBIDDEN, WA_UNAUTHENTICATED or
 * WA_UNKNOWN. */
static int access_of(webui_t *ui, const char *token, const char *scope, webui_access_t *acc)
{
	int64_t now = gpuq_mono_ms();
	int cluster = wa_cache_get(ui, token, "", now), d;

	*acc = (webui_access_t){false, NULL};
	if (cluster == WA_ALLOWED || cluster == WA_UNAUTHENTICATED) {
		acc->cluster = cluster == WA_ALLOWED;
		return cluster;
	}
	if (!scope[0])
		return cluster;
	d = wa_cache_get(ui, token, scope, now);
	if (d == WA_ALLOWED)
		acc->namespace_ = scope;
	return d;
}

/* The access check of a request to the JSON APIs (vis: the visibility
 * API): GPUQ_OK with *acc when it may go on; HTTP_APP_SLOW when the
 * decision is not cached yet; else *out holds the refusal (*answered). */
static int check_access(webui_t *ui, const http_app_request_t *rq, bool retry, bool vis,
			const char *scope, webui_access_t *acc, http_app_reply_t *out,
			bool *answered)
{
	const char *token;
	int d;

	*answered = true;
	*acc = (webui_access_t){true, NULL};
	if (ui->mode != WEBUI_AUTH_REVIEW) {
		*answered = false;
		return GPUQ_OK;
	}
	token = bearer(rq->authorization);
	if (!token)
		return reply_error(out, vis, 401,
				   "{\"kind\":\"Error\",\"code\":401,\"message\":\"unauthorized: "
				   "send Authorization: Bearer <a Kubernetes token>\"}",
				   "unauthorized: send Authorization: Bearer <a Kubernetes token>");
	d = access_of(ui, token, scope, acc);
	if (d == WA_UNKNOWN && !retry) {
		*answered = false;
		return HTTP_APP_SLOW;
	}
	if (d == WA_UNKNOWN)
		return reply_error(out, vis, 503,
				   "{\"kind\":\"Error\",\"code\":503,\"message\":\"cannot review "
				   "the token with the apiserver now: retry\"}",
				   "cannot review the token with the apiserver now: retry");
	if (d == WA_UNAUTHENTICATED)
		return reply_error(out, vis, 401,
				   "{\"kind\":\"Error\",\"code\":401,\"message\":\"unauthorized: "
				   "the apiserver does not accept this token\"}",
				   "unauthorized: the apiserver does not accept this token");
	*answered = false; /* WA_FORBIDDEN too: what a path needs is the renderer's rule */
	return GPUQ_OK;
}

/* Whether path is the visibility API's (the rest: the web view's). */
static bool vis_path(const char *path)
{
	return !strncmp(path, "/apis/", 6);
}

int webui_app_handle(void *ctx, const http_app_request_t *rq, bool retry, http_app_reply_t *out)
{
	webui_t *ui = ctx;
	webui_access_t acc;
	char scope[QUEUE_NAME_MAX + 1];
	bool vis = vis_path(rq->path), answered;
	webui_snap_t *s;
	char *body;
	size_t len;
	int rc;

	if (vis ? !ui->visibility : !ui->pages) {
		reply_static(
		    out, 404, "text/plain; charset=utf-8",
		    vis ? "not found: the visibility API is off (gpuq serve --visibility)\n"
			: "not found: the web UI is off (gpuq serve --ui)\n");
		return GPUQ_OK;
	}
	if (!vis && strncmp(rq->path, "/api/", 5) != 0)
		return serve_asset(rq->path, out);
	atomic_store(&ui->last_api_ms, gpuq_mono_ms()); /* snapshots are wanted */
	if (vis) /* ... with every pending workload in them */
		atomic_store(&ui->last_vis_ms, gpuq_mono_ms());
	scope_of(rq->path, scope, sizeof(scope));
	rc = check_access(ui, rq, retry, vis, scope, &acc, out, &answered);
	if (rc || answered)
		return rc;
	s = ws_current(ui);
	if (s && (ws_old(s, gpuq_mono_ms()) || (vis && !s->has_vis))) {
		/* after an idle spell (or a late controller): this request brought
		 * snapshots back; it waits for the next on the slow worker */
		webui_snap_unref(s);
		if (!retry)
			return HTTP_APP_SLOW;
		return reply_error(
		    out, vis, 503,
		    "{\"kind\":\"Error\",\"code\":503,\"message\":\"no fresh "
		    "snapshot: the controller published none in the last 3 s; retry\"}",
		    "no fresh snapshot: the controller published none in the last 3 s; "
		    "retry");
	}
	rc = vis ? webui_vis_render(s, rq->path, rq->query, &acc, &out->status, &body, &len)
		 : webui_render(s, rq->path, &acc, &out->status, &body, &len);
	webui_snap_unref(s);
	if (rc)
		return rc;
	out->content_type = JSON_TYPE;
	out->body = body;
	out->len = len;
	out->body_owned = true;
	return GPUQ_OK;
}

/* The slow part: ask the apiserver about the request's token and scope
 * when no decision is cached, then wait for a snapshot that is not old. */
static void app_slow(void *ctx, const http_app_request_t *rq)
{
	webui_t *ui = ctx;
	const char *token = ui->mode == WEBUI_AUTH_REVIEW ? bearer(rq->authorization) : NULL;
	char scope[QUEUE_NAME_MAX + 1];
	webui_access_t acc;

	scope_of(rq->path, scope, sizeof(scope));
	if (token && access_of(ui, token, scope, &acc) == WA_UNKNOWN)
		wa_review(ui, token, scope, gpuq_mono_ms());
	ws_wait_fresh(ui, vis_path(rq->path), gpuq_mono_ms() + WEBUI_FRESH_WAIT_MS);
}

void webui_attach(webui_t *ui, http_server_t *srv)
{
	http_server_app_set(srv, webui_app_handle, app_slow, ui);
	gpuq_log(GPUQ_LOG_INFO, MODULE, "%s%s%s (%s)",
		 ui->pages ? "web UI on /ui/ and /api/v1/" : "",
		 ui->pages && ui->visibility ? ", " : "",
		 ui->visibility ? "visibility API on " WEBUI_VIS_PREFIX "/" : "",
		 ui->mode == WEBUI_AUTH_NONE ? "no auth: loopback only"
					     : "bearer tokens reviewed by the apiserver");
}

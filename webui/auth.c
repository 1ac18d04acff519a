/* webui/auth.c: who may read what. A bearer token is reviewed by the
 * apiserver (TokenReview), then its user's rights (SubjectAccessReview:
 * get gpuq.dev clusterqueues for cluster scope; list batch jobs in NS for a
 * namespace); the decision is cached by the token's SHA-256 and the scope
 * for WEBUI_AUTH_TTL_MS in a bounded cache. The bodies and replies are pure
 * functions (unit-tested); wa_review runs on the server's slow worker. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs/certs.h"
#include "webui/internal.h"

#define MODULE "webui"

char *webui_token_review_body(const char *token)
{
	json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "authentication.k8s.io/v1",
			      "kind", "TokenReview", "spec", "token", token);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return text;
}

int webui_token_review_parse(const char *reply, size_t len, char *user, char *uid,
			     char *groups_json, size_t cap)
{
	json_t *o = json_loadb(reply, len, 0, NULL), *st, *u, *groups;
	const char *name, *id;
	char *g;
	int rc = GPUQ_ECORRUPT;

	user[0] = uid[0] = groups_json[0] = '\0';
	st = json_object_get(o, "status");
	if (!json_is_object(st))
		goto out;
	if (!json_is_true(json_object_get(st, "authenticated"))) {
		rc = GPUQ_EDENIED;
		goto out;
	}
	u = json_object_get(st, "user");
	name = json_string_value(json_object_get(u, "username"));
	id = json_string_value(json_object_get(u, "uid"));
	groups = json_object_get(u, "groups");
	if (!name || !name[0] || (groups && !json_is_array(groups)))
		goto out;
	g = groups ? json_dumps(groups, JSON_COMPACT) : strdup("[]");
	if (!g) {
		rc = GPUQ_ENOMEM;
		goto out;
	}
	if (gpuq_strlcpy(user, name, cap) || gpuq_strlcpy(uid, id ? id : "", cap) ||
	    gpuq_strlcpy(groups_json, g, cap))
		rc = GPUQ_ELIMIT;
	else
		rc = GPUQ_OK;
	free(g);
out:
	json_decref(o);
	return rc;
}

char *webui_sar_body(const char *user, const char *uid, const char *groups_json, const char *ns)
{
	json_t *groups = json_loads(groups_json, 0, NULL), *attrs, *o;
	char *text;

	if (!json_is_array(groups)) {
		json_decref(groups);
		groups = json_array();
	}
	attrs = ns ? json_pack("{s:s, s:s, s:s, s:s}", "group", "batch", "resource", "jobs", "verb",
			       "list", "namespace", ns)
		   : json_pack("{s:s, s:s, s:s}", "group", "gpuq.dev", "resource", "clusterqueues",
			       "verb", "get");
	o = json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:o}}", "apiVersion", "authorization.k8s.io/v1",
		      "kind", "SubjectAccessReview", "spec", "user", user, "uid", uid, "groups",
		      groups, "resourceAttributes", attrs);
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

int webui_sar_parse(const char *reply, size_t len, bool *allowed)
{
	json_t *o = json_loadb(reply, len, 0, NULL);
	json_t *a = json_object_get(json_object_get(o, "status"), "allowed");
	int rc = json_is_boolean(a) ? GPUQ_OK : GPUQ_ECORRUPT;

	*allowed = json_is_true(a);
	json_decref(o);
	return rc;
}

/* ---- the cache ---- */

static int cache_key(const char *token, const char *scope, uint8_t key[32])
{
	size_t tl = strlen(token), sl = strlen(scope);
	char *buf = malloc(tl + sl + 1);
	int rc;

	if (!buf)
		return GPUQ_ENOMEM;
	memcpy(buf, token, tl);
	buf[tl] = '\0'; /* tokens hold no NUL: "a" + "bc" never meets "ab" + "c" */
	memcpy(buf + tl + 1, scope, sl);
	rc = certs_sha256(buf, tl + sl + 1, key);
	free(buf);
	return rc;
}

int wa_cache_get(webui_t *ui, const char *token, const char *scope, int64_t now_ms)
{
	uint8_t key[32];
	int hit = WA_UNKNOWN;

	if (cache_key(token, scope, key))
		return -1;
	pthread_mutex_lock(&ui->auth_lock);
	for (size_t i = 0; i < WEBUI_AUTH_CACHE_MAX; i++) {
		const wa_entry_t *e = &ui->cache[i];
		if (e->until_ms > now_ms && !memcmp(e->key, key, sizeof(key))) {
			hit = e->decision;
			break;
		}
	}
	pthread_mutex_unlock(&ui->auth_lock);
	return hit;
}

void wa_cache_put(webui_t *ui, const char *token, const char *scope, int decision, const char *user,
		  int64_t now_ms)
{
	uint8_t key[32];
	wa_entry_t *slot = NULL;

	if (cache_key(token, scope, key))
		return;
	pthread_mutex_lock(&ui->auth_lock);
	for (size_t i = 0; i < WEBUI_AUTH_CACHE_MAX; i++) {
		wa_entry_t *e = &ui->cache[i];
		if (!memcmp(e->key, key, sizeof(key)) || e->until_ms <= now_ms) {
			slot = e; /* the same key, or a free or expired entry */
			break;
		}
		if (!slot || e->until_ms < slot->until_ms)
			slot = e; /* else the one expiring first */
	}
	memcpy(slot->key, key, sizeof(key));
	slot->until_ms = now_ms + WEBUI_AUTH_TTL_MS;
	slot->decision = decision;
	gpuq_strlcpy(slot->user, user ? user : "", sizeof(slot->user)); /* truncated is fine */
	pthread_mutex_unlock(&ui->auth_lock);
}

/* ---- asking the apiserver ---- */

/* POST body to path; the reply's body into *resp. */
static int post(webui_t *ui, const char *path, const char *body, kube_response_t *resp)
{
	gpuq_diag_t diag = {{0}};
	int rc;

	if (!body)
		return GPUQ_ENOMEM;
	rc = kube_request(ui->client, "POST", path, "application/json", body, strlen(body), resp,
			  &diag);
	if (rc)
		gpuq_log(GPUQ_LOG_WARN, MODULE, "web UI access review: %s",
			 diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	return rc;
}

/* One SubjectAccessReview: GPUQ_OK and *allowed, or the failure. */
static int sar(webui_t *ui, const char *user, const char *uid, const char *groups, const char *ns,
	       bool *allowed)
{
	kube_response_t resp = {0};
	char *body = webui_sar_body(user, uid, groups, ns);
	int rc = post(ui, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body, &resp);

	free(body);
	if (!rc)
		rc = webui_sar_parse(resp.body, resp.len, allowed);
	kube_response_deinit(&resp);
	return rc;
}

/* The review of token: GPUQ_OK with the user, GPUQ_EDENIED, or a failure. */
static int token_review(webui_t *ui, const char *token, char *user, char *uid, char *groups,
			size_t cap)
{
	kube_response_t resp = {0};
	char *body = webui_token_review_body(token);
	int rc = post(ui, "/apis/authentication.k8s.io/v1/tokenreviews", body, &resp);

	free(body);
	if (!rc)
		rc = webui_token_review_parse(resp.body, resp.len, user, uid, groups, cap);
	kube_response_deinit(&resp);
	return rc;
}

void wa_review(webui_t *ui, const char *token, const char *scope, int64_t now_ms)
{
	char user[4096], uid[4096], groups[4096]; /* the worker's stack */
	bool cluster = false, ns_ok = false;
	int rc;

	if (!ui->client)
		return;
	rc = token_review(ui, token, user, uid, groups, sizeof(user));
	if (rc == GPUQ_ELIMIT) /* the groups list is long: review the user alone */
		rc = GPUQ_OK;
	if (rc == GPUQ_EDENIED) {
		wa_cache_put(ui, token, scope, WA_UNAUTHENTICATED, "", now_ms);
		return;
	}
	if (rc)
		return; /* nothing cached: the request gets 503 and may retry */
	rc = sar(ui, user, uid, groups, NULL, &cluster);
	if (rc)
		return;
	wa_cache_put(ui, token, "", cluster ? WA_ALLOWED : WA_FORBIDDEN, user, now_ms);
	if (!scope[0])
		return;
	if (!cluster && sar(ui, user, uid, groups, scope, &ns_ok))
		return;
	wa_cache_put(ui, token, scope, cluster || ns_ok ? WA_ALLOWED : WA_FORBIDDEN, user, now_ms);
	gpuq_log(GPUQ_LOG_DEBUG, MODULE, "web UI: %s %s %s", user,
		 cluster || ns_ok ? "may read" : "may not read", scope);
}

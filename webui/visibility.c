/* webui/visibility.c: pending work on demand (docs/visibility.md). Every
 * pending workload of the core is copied into the snapshot with its place
 * in its ClusterQueue's admission order and among its LocalQueue's
 * (ws_vis_fill, on the controller's thread, as part of webui_snap_build),
 * and served as Kueue's visibility API serves its pending workloads
 * (visibility.kueue.x-k8s.io: a PendingWorkloadsSummary per ClusterQueue
 * and per LocalQueue, limit and offset, 0-based positions) under gpuq's own
 * group, with what gpuq adds: the ClusterQueue, the core's wait reason and
 * sentence, the total. Pure rendering from the immutable snapshot: any
 * number of requests at once, none reads the core. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "webui/internal.h"

#define PREFIX WEBUI_VIS_PREFIX "/"

/* ---- the snapshot's part: ws_vis_fill ---- */

struct ws_pool {
	atomic_uint refs; /* ui's, and each snapshot's listing from it */
	ws_arena_t arena; /* the strings */
};

/* Bytes of strings no list uses that a pool may keep past twice what the
 * last list used before the next list starts a new one (workloads
 * admitted or deleted leave their names behind). */
#define POOL_SLACK (1u << 20)

void ws_pool_unref(ws_pool_t *pool)
{
	if (!pool || atomic_fetch_sub(&pool->refs, 1) != 1)
		return;
	ws_arena_free(&pool->arena);
	free(pool);
}

void ws_names_reset(webui_t *ui)
{
	ws_pool_unref(ui->pool);
	free(ui->names);
	ui->pool = NULL;
	ui->names = NULL;
	ui->n_names = 0;
	ui->names_q = NULL;
	ui->names_live = 0;
}

/* ui ready to list q's pending workloads: the names of another core
 * forgotten, a pool grown past twice what the last list used (and
 * POOL_SLACK) left to the snapshots that use it, an entry for every id
 * q may have. GPUQ_OK, GPUQ_ENOMEM. */
static int names_ready(webui_t *ui, const queue_t *q)
{
	size_t top = queue_workload_id_limit(q);

	if (ui->names_q != q ||
	    (ui->pool && ui->pool->arena.bytes > 2 * ui->names_live + POOL_SLACK))
		ws_names_reset(ui);
	ui->names_q = q;
	ui->names_live = 0;
	if (!ui->pool) {
		ui->pool = calloc(1, sizeof(*ui->pool));
		if (!ui->pool)
			return GPUQ_ENOMEM;
		atomic_init(&ui->pool->refs, 1);
	}
	if (top > ui->n_names) {
		ws_name_t *v = realloc(ui->names, top * sizeof(*v));

		if (!v)
			return GPUQ_ENOMEM;
		memset(v + ui->n_names, 0, (top - ui->n_names) * sizeof(*v));
		ui->names = v;
		ui->n_names = top;
	}
	return GPUQ_OK;
}

/* Workload id's uid (and *name) as the list keeps them: in ui's pool,
 * copied there the first time it is listed (the entry's ident and uid
 * address tell it is still the same workload), or into s's arena without
 * a ui. NULL when out of memory. */
static const char *names_of(webui_t *ui, webui_snap_t *s, queue_wl_t id,
			    const queue_workload_brief_t *v, const char **name)
{
	ws_name_t *e;

	if (!ui) {
		*name = ws_strdup(s, v->name);
		return ws_strdup(s, v->uid);
	}
	e = &ui->names[id];
	if (!e->uid || e->ident != v->ident || e->key != v->uid) {
		size_t lu = strlen(v->uid) + 1, ln = strlen(v->name) + 1;
		char *p = ws_arena_alloc(&ui->pool->arena, lu + ln);

		*e = (ws_name_t){v->ident, v->uid, p, (uint32_t)lu, (uint32_t)(lu + ln)};
		if (!p)
			return NULL;
		memcpy(p, v->uid, lu);
		memcpy(p + lu, v->name, ln);
	}
	ui->names_live += e->bytes;
	*name = e->uid + e->name_off;
	return e->uid;
}

/* The previous entry's string when equal (most pending workloads of a
 * ClusterQueue share a namespace and a sentence), else a copy. */
static const char *share(webui_snap_t *s, const char *prev, const char *v)
{
	return prev && !strcmp(prev, v) ? prev : ws_strdup(s, v);
}

/* Workload id's reason in s's arena: the copy a workload with the same
 * reason already made (kept[], by memo slot), else the previous entry's
 * when equal, else a new copy (truncated to WEBUI_REASON_MAX, as the web
 * view's lists have it). */
static const char *reason(const queue_t *q, webui_snap_t *s, queue_wl_t id,
			  queue_reason_memo_t *memo, const char *kept[QUEUE_REASON_MEMO],
			  const char *prev)
{
	char msg[WEBUI_REASON_MAX];
	const char *text;
	const char *out;
	uint32_t slot;
	bool fresh;

	(void)queue_workload_reason_memo(q, id, memo, &text, &slot, &fresh); /* truncated is fine */
	if (slot < QUEUE_REASON_MEMO && !fresh && kept[slot])
		return kept[slot];
	snprintf(msg, sizeof(msg), "%s", text);
	out = share(s, prev, msg);
	if (slot < QUEUE_REASON_MEMO)
		kept[slot] = out;
	return out;
}

/* Index s->vis per LocalQueue (a counting sort: each LocalQueue's entries
 * keep the admission order they have in s->vis). */
static int index_lqs(webui_snap_t *s)
{
	size_t *next = calloc(s->n_lqs ? s->n_lqs : 1, sizeof(*next)), at = 0;

	s->lq_vis = malloc((s->n_vis ? s->n_vis : 1) * sizeof(*s->lq_vis));
	if (!next || !s->lq_vis) {
		free(next);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < s->n_vis; i++)
		s->lqs[s->vis[i].lq].n_vis++;
	for (size_t l = 0; l < s->n_lqs; l++) {
		s->lqs[l].vis0 = next[l] = at;
		at += s->lqs[l].n_vis;
	}
	for (size_t i = 0; i < s->n_vis; i++)
		s->lq_vis[next[s->vis[i].lq]++] = (uint32_t)i;
	free(next);
	return GPUQ_OK;
}

/* A visibility list being filled: ws_vis_begin, ws_vis_add for each
 * pending workload in order, ws_vis_end. */
struct ws_vis_build {
	webui_t *ui;			     /* whose pool keeps the names (NULL: s's arena) */
	const queue_t *q;		     /* the core */
	webui_snap_t *s;		     /* the snapshot filled */
	uint32_t *lq_seen;		     /* per LocalQueue: its entries so far */
	uint32_t cur, pos;		     /* the ClusterQueue being listed, entries so far */
	const char *prev_ns;		     /* the entry before's namespace ... */
	const char *prev_msg;		     /* ... and sentence */
	queue_reason_memo_t memo;	     /* sentences made */
	const char *kept[QUEUE_REASON_MEMO]; /* ... and their copies, by slot */
	bool failed;			     /* out of memory */
};

int ws_vis_begin(webui_t *ui, const queue_t *q, webui_snap_t *s, size_t n, ws_vis_build_t **out)
{
	ws_vis_build_t *b = calloc(1, sizeof(*b));

	*out = b;
	if (!b)
		return GPUQ_ENOMEM;
	*b = (ws_vis_build_t){.ui = ui, .q = q, .s = s, .cur = UINT32_MAX};
	b->lq_seen = calloc(s->n_lqs ? s->n_lqs : 1, sizeof(*b->lq_seen));
	s->n_vis = 0;
	s->vis = malloc((n ? n : 1) * sizeof(*s->vis));
	b->failed = !b->lq_seen || !s->vis || (ui && names_ready(ui, q));
	if (!b->failed && ui) { /* the snapshot keeps the pool its names are in */
		s->pool = ui->pool;
		atomic_fetch_add(&s->pool->refs, 1);
	}
	return b->failed ? GPUQ_ENOMEM : GPUQ_OK;
}

int ws_vis_add(ws_vis_build_t *b, queue_wl_t id, const queue_workload_brief_t *v)
{
	webui_snap_t *s = b->s;
	const char *uid, *name = NULL;

	if (b->failed)
		return GPUQ_ENOMEM;
	uid = names_of(b->ui, s, id, v, &name);
	if (!uid) {
		b->failed = true;
		return GPUQ_ENOMEM;
	}
	if (v->cq != b->cur) { /* the next ClusterQueue's list starts */
		b->cur = v->cq;
		b->pos = 0;
		b->prev_msg = NULL;
		s->cqs[b->cur].vis0 = s->n_vis;
	}
	b->prev_ns = share(s, b->prev_ns, v->namespace_);
	b->prev_msg = reason(b->q, s, id, &b->memo, b->kept, b->prev_msg);
	s->vis[s->n_vis++] = (ws_vis_t){.uid = uid,
					.namespace_ = b->prev_ns,
					.name = name,
					.lq = v->lq,
					.cq = v->cq,
					.priority = v->priority,
					.created_ms = v->created_ms,
					.wait = v->wait,
					.pos_cq = b->pos,
					.pos_lq = b->lq_seen[v->lq],
					.message = b->prev_msg,
					.predicted_start_ms = v->predicted_ms};
	b->pos++;
	b->lq_seen[v->lq]++;
	s->cqs[b->cur].n_vis++;
	return GPUQ_OK;
}

int ws_vis_end(ws_vis_build_t *b)
{
	int rc;

	if (!b)
		return GPUQ_ENOMEM;
	rc = b->failed || b->s->arena.failed ? GPUQ_ENOMEM : index_lqs(b->s);
	free(b->lq_seen);
	free(b);
	return rc;
}

/* ---- the API's part: paths, options, JSON ---- */

/* A Kubernetes Status (what kubectl and client-go read from an error). */
static int status_json(unsigned code, const char *reason, const char *msg, unsigned *status,
		       char **body, size_t *len)
{
	json_t *o = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
			      "apiVersion", "v1", "metadata", "status", "Failure", "message", msg,
			      "reason", reason, "code", (int)code);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (!text)
		return GPUQ_ENOMEM;
	*status = code;
	*body = text;
	*len = strlen(text);
	return GPUQ_OK;
}

int webui_vis_error(unsigned code, const char *msg, unsigned *status, char **body, size_t *len)
{
	static const struct {
		unsigned code;
		const char *reason;
	} reasons[] = {{400, "BadRequest"}, {401, "Unauthorized"},  {403, "Forbidden"},
		       {404, "NotFound"},   {500, "InternalError"}, {503, "ServiceUnavailable"}};
	const char *reason = "InternalError";

	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == code)
			reason = reasons[i].reason;
	return status_json(code, reason, msg, status, body, len);
}

/* One decimal query value into *out (0..cap): false when it is not one. */
static bool query_int(const char *v, size_t n, int64_t cap, int64_t *out)
{
	int64_t x = 0;

	if (!n || n > 18)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		x = x * 10 + (v[i] - '0');
	}
	*out = x > cap ? cap : x;
	return true;
}

int webui_vis_options(const char *query, int64_t *limit, int64_t *offset, char *why, size_t cap)
{
	*limit = WEBUI_VIS_LIMIT_DEFAULT;
	*offset = 0;
	for (const char *p = query; p && *p;) {
		const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		size_t kn = eq ? (size_t)(eq - p) : (size_t)(end - p);
		const char *v = eq ? eq + 1 : end;
		size_t vn = (size_t)(end - v);
		int64_t x = 0;

		if (kn == 5 && !strncmp(p, "limit", 5)) {
			if (!query_int(v, vn, WEBUI_VIS_LIMIT_MAX, &x)) {
				snprintf(why, cap, "limit \"%.*s\": expected a whole number 0..%d",
					 (int)(vn > 32 ? 32 : vn), v, WEBUI_VIS_LIMIT_MAX);
				return GPUQ_EINVAL;
			}
			*limit = x ? x : WEBUI_VIS_LIMIT_DEFAULT; /* 0: the default, as Kueue */
		} else if (kn == 6 && !strncmp(p, "offset", 6)) {
			if (!query_int(v, vn, INT32_MAX, &x)) {
				snprintf(why, cap, "offset \"%.*s\": expected a whole number",
					 (int)(vn > 32 ? 32 : vn), v);
				return GPUQ_EINVAL;
			}
			*offset = x;
		} /* other arguments (kubectl's timeout=...) are not ours: ignored */
		p = amp ? amp + 1 : end;
	}
	return GPUQ_OK;
}

/* Unix ms as RFC 3339 seconds, as Kubernetes writes a timestamp. */
static json_t *timestamp(int64_t ms)
{
	char buf[GPUQ_TIME_TEXT_MAX];

	if (ms < 0 || !gpuq_time_format(ms, GPUQ_TIME_SECONDS, buf, sizeof(buf)))
		return json_null();
	return json_string(buf);
}

static json_t *item_json(const webui_snap_t *s, const ws_vis_t *e)
{
	json_t *o = json_pack(
	    "{s:{s:s, s:s, s:s, s:o}, s:i, s:s, s:I, s:I, s:s, s:s, s:s}", "metadata", "name",
	    e->name, "namespace", e->namespace_, "uid", e->uid, "creationTimestamp",
	    timestamp(e->created_ms), "priority", (int)e->priority, "localQueueName",
	    s->lqs[e->lq].name, "positionInClusterQueue", (json_int_t)e->pos_cq,
	    "positionInLocalQueue", (json_int_t)e->pos_lq, "clusterQueueName", s->cqs[e->cq].name,
	    "reason", queue_wait_name(e->wait), "message", e->message);

	if (o && e->predicted_start_ms >= 0)
		json_object_set_new(o, "predictedStartTime", timestamp(e->predicted_start_ms));
	return o;
}

/* A PendingWorkloadsSummary of entries idx[offset .. offset+limit) of n
 * (idx NULL: s->vis[first + i]). */
static json_t *summary(const webui_snap_t *s, const uint32_t *idx, size_t first, size_t n,
		       int64_t limit, int64_t offset)
{
	json_t *items = json_array(), *o;

	for (size_t i = (size_t)offset; items && i < n && i < (size_t)(offset + limit); i++)
		json_array_append_new(items, item_json(s, &s->vis[idx ? idx[i] : first + i]));
	o = json_pack("{s:s, s:s, s:{s:n}, s:o, s:I}", "kind", "PendingWorkloadsSummary",
		      "apiVersion", WEBUI_VIS_GROUP "/" WEBUI_VIS_VERSION, "metadata",
		      "creationTimestamp", "items", items, "total", (json_int_t)n);
	return o;
}

/* The discovery document of the group version (an APIResourceList), for
 * `kubectl get --raw` and an aggregating apiserver. */
static json_t *discovery(void)
{
	return json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:b, s:s, s:[s]}, {s:s, s:s, s:b, s:s, "
			 "s:[s]}]}",
			 "kind", "APIResourceList", "apiVersion", "v1", "groupVersion",
			 WEBUI_VIS_GROUP "/" WEBUI_VIS_VERSION, "resources", "name",
			 "clusterqueues/pendingworkloads", "singularName", "", "namespaced", 0,
			 "kind", "PendingWorkloadsSummary", "verbs", "get", "name",
			 "localqueues/pendingworkloads", "singularName", "", "namespaced", 1,
			 "kind", "PendingWorkloadsSummary", "verbs", "get");
}

static int finish(json_t *o, unsigned *status, char **body, size_t *len)
{
	char *text;

	if (!o)
		return GPUQ_ENOMEM;
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return GPUQ_ENOMEM;
	*len = strlen(text);
	if (*len > WEBUI_JSON_MAX) {
		free(text);
		return GPUQ_ELIMIT;
	}
	*status = 200;
	*body = text;
	return GPUQ_OK;
}

/* Split path's tail after PREFIX into up to 5 '/'-separated segments. */
static size_t segments(const char *tail, char seg[5][QUEUE_NAME_MAX + 1])
{
	size_t n = 0;

	while (*tail && n < 5) {
		size_t k = strcspn(tail, "/");
		if (!k || k > QUEUE_NAME_MAX)
			return 0;
		memcpy(seg[n], tail, k);
		seg[n++][k] = '\0';
		tail += k;
		if (*tail == '/' && !*++tail)
			return 0; /* a trailing slash */
	}
	return *tail ? 0 : n;
}

static const ws_cq_t *cq_named(const webui_snap_t *s, const char *name)
{
	for (size_t i = 0; i < s->n_cqs; i++)
		if (!strcmp(s->cqs[i].name, name))
			return &s->cqs[i];
	return NULL;
}

static const ws_lq_t *lq_named(const webui_snap_t *s, const char *ns, const char *name)
{
	for (size_t i = 0; i < s->n_lqs; i++)
		if (!strcmp(s->lqs[i].namespace_, ns) && !strcmp(s->lqs[i].name, name))
			return &s->lqs[i];
	return NULL;
}

int webui_vis_render(const webui_snap_t *s, const char *path, const char *query,
		     const webui_access_t *acc, unsigned *status, char **body, size_t *len)
{
	char seg[5][QUEUE_NAME_MAX + 1], why[128];
	int64_t limit, offset;
	size_t n;

	*body = NULL;
	*len = 0;
	if (!strcmp(path, WEBUI_VIS_PREFIX))
		return finish(discovery(), status, body, len);
	n = strncmp(path, PREFIX, strlen(PREFIX)) ? 0 : segments(path + strlen(PREFIX), seg);
	if (!(n == 3 && !strcmp(seg[0], "clusterqueues") && !strcmp(seg[2], "pendingworkloads")) &&
	    !(n == 5 && !strcmp(seg[0], "namespaces") && !strcmp(seg[2], "localqueues") &&
	      !strcmp(seg[4], "pendingworkloads")))
		return webui_vis_error(404,
				       "no such path: " WEBUI_VIS_PREFIX
				       "/clusterqueues/CQ/pendingworkloads or " WEBUI_VIS_PREFIX
				       "/namespaces/NS/localqueues/LQ/pendingworkloads",
				       status, body, len);
	if (n == 3 && !acc->cluster)
		return webui_vis_error(403,
				       "forbidden: a ClusterQueue's pending workloads need get on "
				       "clusterqueues.gpuq.dev (tenants: " WEBUI_VIS_PREFIX
				       "/namespaces/NS/localqueues/LQ/pendingworkloads)",
				       status, body, len);
	if (n == 5 && !acc->cluster && (!acc->namespace_ || strcmp(acc->namespace_, seg[1]) != 0))
		return webui_vis_error(403, "forbidden: may not list jobs in that namespace",
				       status, body, len);
	if (webui_vis_options(query, &limit, &offset, why, sizeof(why)))
		return webui_vis_error(400, why, status, body, len);
	if (!s)
		return webui_vis_error(503,
				       "no queue state yet: this replica does not lead, or has not "
				       "synced with the apiserver",
				       status, body, len);
	if (n == 3) {
		const ws_cq_t *cq = cq_named(s, seg[1]);
		if (!cq)
			return webui_vis_error(404, "no such ClusterQueue", status, body, len);
		return finish(summary(s, NULL, cq->vis0, cq->n_vis, limit, offset), status, body,
			      len);
	}
	{
		const ws_lq_t *lq = lq_named(s, seg[1], seg[3]);
		if (!lq)
			return webui_vis_error(404, "no such LocalQueue", status, body, len);
		return finish(summary(s, s->lq_vis + lq->vis0, 0, lq->n_vis, limit, offset), status,
			      body, len);
	}
}

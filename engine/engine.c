/* engine/engine.c: engine_t, what a driver holds: the core built from the
 * policy in force, its store, the step and its commit, the driver's own
 * records, and the read-only views. */
#include "engine/internal.h"

#include <stdlib.h>
#include <string.h>

void engine_opts_init(engine_opts_t *o)
{
	memset(o, 0, sizeof(*o));
}

/* Whether the store holds any record of the core's. */
static bool holds_core_records(const store_info_t *info)
{
	for (unsigned t = 0; t < ENGINE_TYPE_DRIVER_FIRST; t++)
		if (info->counts[t])
			return true;
	return false;
}

/* Open o's store, let the driver check it, and restore the core's records. */
static int open_store(engine_t *e, const engine_opts_t *o, gpuq_diag_t *diag)
{
	store_opts_t so;
	store_info_t info;
	int rc;

	store_opts_init(&so);
	engine_store_types(&so);
	for (size_t i = 0; i < ENGINE_DRIVER_TYPES_MAX; i++)
		if (o->driver_types[i])
			so.types[ENGINE_TYPE_DRIVER_FIRST + i] = o->driver_types[i];
	so.nosync = o->nosync;
	so.read_only = o->read_only;
	so.set_aside_corrupt = o->set_aside_corrupt;
	if (o->map_max)
		so.map_max = o->map_max;
	rc = store_open(o->state_dir, &so, &e->store, diag);
	if (rc)
		return rc;
	e->read_only = o->read_only;
	/* one read snapshot for every record: a writer may keep committing */
	if (o->read_only && (rc = store_snapshot_begin(e->store)))
		return gpuq_diag_set(diag, rc, "state store %s: cannot hold a read snapshot",
				     o->state_dir);
	rc = store_info_get(e->store, &info);
	if (rc)
		return gpuq_diag_set(diag, rc, "state store %s: %s", o->state_dir,
				     gpuq_strerror(rc));
	if (info.schema == 0)
		return GPUQ_OK; /* blank: its creation was interrupted, it holds nothing */
	if (o->check && (rc = o->check(o->check_ctx, e, diag)))
		return rc;
	if (!holds_core_records(&info))
		return GPUQ_OK;
	if (!e->q) {
		e->restore_due = true; /* into the core the first policy builds */
		return GPUQ_OK;
	}
	rc = engine_restore(e->store, e->q, diag);
	e->resumed = rc == GPUQ_OK;
	return rc;
}

int engine_open(policy_t *p, const queue_config_t *cfg, const engine_opts_t *o, engine_t **out,
		gpuq_diag_t *diag)
{
	engine_t *e = calloc(1, sizeof(*e));
	int rc;

	*out = NULL;
	if (!e)
		return gpuq_diag_set(diag, GPUQ_ENOMEM, "engine: out of memory");
	if (cfg)
		e->cfg = *cfg;
	else
		queue_config_default(&e->cfg);
	e->policy = p ? policy_ref(p) : NULL;
	rc = p ? engine_core_build(p, &e->cfg, &e->q, diag) : GPUQ_OK;
	if (!rc && o && o->state_dir)
		rc = open_store(e, o, diag);
	if (rc) {
		engine_close(e);
		return rc;
	}
	*out = e;
	return GPUQ_OK;
}

/* A begun fork: the copy's first half and the configuration. */
struct engine_fork {
	engine_core_copy_t *cp;
	queue_config_t cfg;
};

int engine_fork_begin(const queue_t *live, policy_t *p, const queue_config_t *cfg,
		      engine_copy_keep_fn keep, void *ctx, engine_fork_t **out, gpuq_diag_t *diag)
{
	engine_fork_t *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	if (!f) {
		gpuq_diag_set(diag, GPUQ_ENOMEM, "engine: out of memory");
		return GPUQ_ENOMEM;
	}
	f->cfg = *cfg;
	rc = engine_core_copy_read(live, p, cfg, keep, ctx, &f->cp, diag);
	if (rc) {
		free(f);
		return rc;
	}
	*out = f;
	return GPUQ_OK;
}

int engine_fork_end(engine_fork_t *f, engine_t **out, gpuq_diag_t *diag)
{
	engine_rebuild_report_t rep = {0};
	engine_t *e = calloc(1, sizeof(*e));
	int rc;

	*out = NULL;
	if (!e) {
		engine_fork_free(f);
		return gpuq_diag_set(diag, GPUQ_ENOMEM, "engine: out of memory");
	}
	e->cfg = f->cfg;
	rc = engine_core_copy_finish(f->cp, &e->q, &rep, diag);
	free(f);
	engine_rebuild_report_deinit(&rep);
	if (rc) {
		free(e);
		return rc;
	}
	*out = e;
	return GPUQ_OK;
}

void engine_fork_free(engine_fork_t *f)
{
	if (!f)
		return;
	engine_core_copy_free(f->cp);
	free(f);
}

int engine_fork(const queue_t *live, policy_t *p, const queue_config_t *cfg,
		engine_copy_keep_fn keep, void *ctx, engine_t **out, gpuq_diag_t *diag)
{
	engine_fork_t *f;
	int rc = engine_fork_begin(live, p, cfg, keep, ctx, &f, diag);

	*out = NULL;
	if (rc)
		return rc;
	return f ? engine_fork_end(f, out, diag) : GPUQ_ENOMEM;
}

void engine_close(engine_t *e)
{
	if (!e)
		return;
	store_close(e->store); /* ends a read snapshot; flushes a nosync store */
	queue_destroy(e->q);
	engine_kept_free(&e->kept);
	if (e->policy)
		policy_unref(e->policy);
	free(e);
}

int engine_store_reopen(engine_t *e, gpuq_diag_t *diag)
{
	int rc;

	if (!e->store || e->read_only)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "engine: no store to reopen");
	rc = store_reopen(e->store, diag);
	e->full_next = true; /* whatever the outcome: the next commit rewrites all */
	return rc;
}

const char *engine_store_moved_aside(const engine_t *e)
{
	return e->store ? store_moved_aside(e->store) : NULL;
}

bool engine_resumed(const engine_t *e)
{
	return e->resumed;
}

const policy_t *engine_policy(const engine_t *e)
{
	return e->policy;
}

const queue_config_t *engine_config(const engine_t *e)
{
	return &e->cfg;
}

const queue_t *engine_core(const engine_t *e)
{
	return e->q;
}

int engine_toleration_named(const char *key, const char *op, const char *value, const char *effect,
			    queue_toleration_t *out)
{
	int rc = engine_effect_named(effect, &out->effect);

	if (rc)
		return rc;
	out->key = key ? key : "";
	out->op = op && !strcmp(op, "Exists") ? QUEUE_TOLERATE_EXISTS : QUEUE_TOLERATE_EQUAL;
	out->value = value ? value : "";
	return GPUQ_OK;
}

/* ---- the step (engine_step: step.c) ---- */

int engine_commit(engine_t *e, engine_stage_fn stage, void *ctx, gpuq_diag_t *diag)
{
	int rc;

	if (!e->store)
		return GPUQ_OK;
	if (e->read_only)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "state store: open to read only");
	if (!e->q) /* no policy yet: only the driver's records */
		return gpuq_diag_set(diag, GPUQ_EINVAL, "engine: no policy in force yet");
	rc = engine_batch_commit(e->store, e->q, e->full_next, stage, ctx, NULL, diag);
	if (!rc)
		e->full_next = false;
	return rc;
}

void engine_commit_full_next(engine_t *e)
{
	e->full_next = true;
}

size_t engine_changed_count(const engine_t *e)
{
	return e->q ? queue_dirty_count(e->q) : 0;
}

bool engine_commit_due(const engine_t *e)
{
	return e->q && (e->full_next || queue_dirty_count(e->q) > 0);
}

bool engine_commit_full_due(const engine_t *e)
{
	return e->q && e->full_next;
}

/* ---- the driver's records ---- */

_Static_assert(ENGINE_TYPE_DRIVER_FIRST == STORE_TYPE_DRIVER_FIRST, "the store's numbering");
_Static_assert(ENGINE_TYPE_MAX == STORE_TYPE_MAX, "the store's numbering");

/* Whether a driver may write records of type: its own, never the core's. */
static bool driver_type(unsigned type)
{
	return type >= ENGINE_TYPE_DRIVER_FIRST && type < ENGINE_TYPE_MAX;
}

int engine_record_put(engine_batch_t *b, unsigned type, const void *key, size_t klen,
		      const void *val, size_t vlen)
{
	return driver_type(type) ? store_put(b->txn, type, key, klen, val, vlen) : GPUQ_EINVAL;
}

int engine_record_del(engine_batch_t *b, unsigned type, const void *key, size_t klen)
{
	return driver_type(type) ? store_del(b->txn, type, key, klen) : GPUQ_EINVAL;
}

int engine_record_get(engine_t *e, unsigned type, const void *key, size_t klen, void **val,
		      size_t *vlen)
{
	if (!e->store)
		return GPUQ_ENOTFOUND;
	return store_get(e->store, type, key, klen, val, vlen);
}

int engine_record_scan(engine_t *e, unsigned type, engine_scan_fn cb, void *ctx)
{
	if (!e->store)
		return GPUQ_OK;
	return store_scan(e->store, type, cb, ctx);
}

/* ---- read-only views ---- */

bool engine_budget_holds(const engine_t *e)
{
	if (!e->q)
		return false;
	for (uint32_t i = 0; i < queue_budget_count(e->q); i++) {
		queue_budget_view_t v;

		if (!queue_budget_view(e->q, i, &v) && v.state == QUEUE_BUDGET_OVER &&
		    v.action == QUEUE_BUDGET_HOLD)
			return true;
	}
	return false;
}

/* engine/persist.c: the core's records in the store: their types and
 * structural check, staging the changed ones, full snapshots, restore. */
#include "engine/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sub-database of each core record type; ids are queue_rec_type_t. */
static const struct {
	queue_rec_type_t type; /* record type id */
	const char *name;      /* its sub-database */
} core_types[] = {
    {QUEUE_REC_META, "queue_meta"}, {QUEUE_REC_CQ, "clusterqueues"},
    {QUEUE_REC_TENANT, "tenants"},  {QUEUE_REC_WORKLOAD, "workloads"},
    {QUEUE_REC_USAGE, "usage"},	    {QUEUE_REC_BUDGET, "budgets"},
};
#define N_CORE_TYPES (sizeof(core_types) / sizeof(core_types[0]))

/* Most records encode in well under 4 KiB (one workload); larger ones get a
 * heap buffer of the exact size the encoder asks for (<= QUEUE_RECORD_MAX). */
#define ENCODE_STACK 4096

_Static_assert(QUEUE_REC_BUDGET < STORE_TYPE_DRIVER_FIRST, "core ids below driver ids");
_Static_assert(QUEUE_REC_BUDGET < STORE_TYPE_MAX, "core ids are store type ids");

void engine_store_types(store_opts_t *opts)
{
	for (size_t i = 0; i < N_CORE_TYPES; i++)
		opts->types[core_types[i].type] = core_types[i].name;
}

int engine_record_check(unsigned type, const void *key, size_t klen, const void *val, size_t vlen,
			gpuq_diag_t *diag)
{
	const unsigned char *v = val;
	int max = type == QUEUE_REC_WORKLOAD ? QUEUE_RECORD_VERSION_WORKLOAD : QUEUE_RECORD_VERSION;

	if (type < QUEUE_REC_META || type > QUEUE_REC_BUDGET)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record type %u is not a queue record",
				     type);
	if (klen == 0 || klen > QUEUE_KEY_MAX)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "key of %zu bytes (want 1..%d)", klen,
				     QUEUE_KEY_MAX);
	if (type == QUEUE_REC_META && (klen != 4 || memcmp(key, "meta", 4) != 0))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "meta record key is not \"meta\"");
	if (vlen == 0 || vlen > QUEUE_RECORD_MAX)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "value of %zu bytes (want 1..%d)", vlen,
				     QUEUE_RECORD_MAX);
	if (v[0] == 0 || v[0] > max)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "record version %u unknown (this gpuq reads 1..%d)", v[0],
				     max);
	return GPUQ_OK;
}

/* ---- writing ---- */

/* Encode (type, key) of q and add it to the batch as a put, or as a delete
 * when the object is gone. */
static int stage_one(store_txn_t *txn, const queue_t *q, queue_rec_type_t type, const uint8_t *key,
		     size_t klen)
{
	uint8_t stack[ENCODE_STACK], *buf = stack;
	size_t len = 0;
	int rc = queue_record_encode(q, type, key, klen, stack, sizeof(stack), &len);

	if (rc == GPUQ_ENOTFOUND)
		return store_del(txn, (unsigned)type, key, klen);
	if (rc == GPUQ_ELIMIT && len > sizeof(stack) && len <= QUEUE_RECORD_MAX) {
		buf = malloc(len);
		if (!buf)
			return GPUQ_ENOMEM;
		rc = queue_record_encode(q, type, key, klen, buf, len, &len);
	}
	if (!rc)
		rc = store_put(txn, (unsigned)type, key, klen, buf, len);
	if (buf != stack)
		free(buf);
	return rc;
}

int engine_stage(store_txn_t *txn, const queue_t *q)
{
	queue_dirty_iter_t it = {0};
	queue_rec_type_t type;
	const uint8_t *key;
	size_t klen;
	int rc = store_txn_error(txn);

	while (!rc && (rc = queue_dirty_next(q, &it, &type, &key, &klen)) == GPUQ_OK) {
		rc = stage_one(txn, q, type, key, klen);
		if (rc && !store_txn_error(txn)) {
			/* an encode failure: make it the batch's sticky error */
			gpuq_log(GPUQ_LOG_ERROR, "engine", "encoding a type %d record: %s",
				 (int)type, gpuq_strerror(rc));
			return store_txn_fail(txn, rc);
		}
	}
	return rc == GPUQ_ENOTFOUND ? GPUQ_OK : rc;
}

typedef struct {
	store_txn_t *txn; /* the batch deletes go to */
	const queue_t *q; /* the core whose objects stay */
} stale_ctx_t;

/* Delete a stored core record whose object the core does not hold: the
 * encoder says so (GPUQ_ENOTFOUND) even with no room to encode into (it
 * then only measures: GPUQ_ELIMIT). */
static int stale_one(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
		     size_t vlen)
{
	stale_ctx_t *c = ctx;
	uint8_t probe[1]; /* the version byte fits; the rest is only measured */
	size_t len;

	(void)val;
	(void)vlen;
	if (queue_record_encode(c->q, (queue_rec_type_t)type, key, klen, probe, sizeof(probe),
				&len) != GPUQ_ENOTFOUND)
		return GPUQ_OK;
	return store_del(c->txn, type, key, klen); /* buffered: allowed during a scan */
}

static int stage_full(store_t *s, store_txn_t *txn, queue_t *q)
{
	stale_ctx_t c = {txn, q};
	int rc = queue_dirty_all(q);

	if (rc)
		return store_txn_fail(txn, rc);
	for (size_t i = 0; i < N_CORE_TYPES && !rc; i++)
		if (store_type_name(s, core_types[i].type))
			rc = store_scan(s, core_types[i].type, stale_one, &c);
	if (!rc)
		rc = engine_stage(txn, q);
	return rc;
}

/* The one commit path (engine_commit, engine_persist, engine_persist_full):
 * a batch, the core's changed records (or all of them, with the stale ones
 * deleted, when full), the driver's (stage), the commit; then the core's
 * changed set is cleared. */
int engine_batch_commit(store_t *s, queue_t *q, bool full, engine_stage_fn stage, void *ctx,
			uint64_t *seq, gpuq_diag_t *diag)
{
	store_txn_t *txn;
	int rc = store_txn_begin(s, &txn);

	if (rc)
		return gpuq_diag_set(diag, rc, "state store: no batch: %s", gpuq_strerror(rc));
	rc = full ? stage_full(s, txn, q) : engine_stage(txn, q);
	if (!rc && stage) {
		engine_batch_t b = {txn};
		rc = stage(ctx, &b);
	}
	if (rc) {
		store_txn_abort(txn);
		return gpuq_diag_set(diag, rc, "state store: building the batch: %s",
				     gpuq_strerror(rc));
	}
	rc = store_txn_commit(txn, seq);
	if (rc)
		return gpuq_diag_set(diag, rc, "state store: commit failed: %s", gpuq_strerror(rc));
	queue_dirty_clear(q);
	return GPUQ_OK;
}

int engine_persist(store_t *s, queue_t *q, uint64_t *seq, gpuq_diag_t *diag)
{
	return engine_batch_commit(s, q, false, NULL, NULL, seq, diag);
}

int engine_persist_full(store_t *s, queue_t *q, uint64_t *seq, gpuq_diag_t *diag)
{
	return engine_batch_commit(s, q, true, NULL, NULL, seq, diag);
}

/* ---- restoring ---- */

typedef struct {
	queue_t *q;	   /* queue being restored */
	gpuq_diag_t *diag; /* where the failing record is named */
	const char *name;  /* sub-database being read */
} restore_ctx_t;

/* Write key as printable text for a message: non-printing bytes as \xNN. */
static void key_text(const uint8_t *key, size_t klen, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < klen && n + 5 < cap; i++) {
		if (key[i] >= 0x20 && key[i] < 0x7f && key[i] != '"' && key[i] != '\\')
			out[n++] = (char)key[i];
		else
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", key[i]);
	}
	out[n] = '\0';
}

static int restore_one(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
		       size_t vlen)
{
	restore_ctx_t *r = ctx;
	char text[96]; /* key in messages; longer keys are cut */
	int rc = queue_record_apply(r->q, (queue_rec_type_t)type, key, klen, val, vlen, r->diag);

	if (rc) {
		key_text(key, klen, text, sizeof(text));
		gpuq_diag_prefix(r->diag, "state store: %s record \"%s\": ", r->name, text);
	}
	return rc;
}

int engine_restore(store_t *s, queue_t *q, gpuq_diag_t *diag)
{
	restore_ctx_t r = {q, diag, NULL};

	for (size_t i = 0; i < N_CORE_TYPES; i++) {
		int rc;
		r.name = store_type_name(s, core_types[i].type);
		if (!r.name)
			continue; /* a store made without core types holds none */
		rc = store_scan(s, core_types[i].type, restore_one, &r);
		if (rc)
			return rc;
	}
	return queue_restore_done(q, diag);
}

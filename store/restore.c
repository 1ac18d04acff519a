/* store: persisting the queue core's changed records and restoring them. */
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>

#include "queue/queue.h"

/* Most records encode in well under 4 KiB (one workload); larger ones get a
 * heap buffer of the exact size the encoder asks for (<= QUEUE_RECORD_MAX). */
#define ENCODE_STACK 4096

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

int store_queue_stage(store_txn_t *txn, const queue_t *q)
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
			gpuq_log(GPUQ_LOG_ERROR, "store", "encoding a type %d record: %s",
				 (int)type, gpuq_strerror(rc));
			return store_txn_fail(txn, rc);
		}
	}
	return rc == GPUQ_ENOTFOUND ? GPUQ_OK : rc;
}

int store_queue_persist(store_t *s, queue_t *q, uint64_t *seq)
{
	store_txn_t *txn;
	int rc = store_txn_begin(s, &txn);

	if (rc)
		return rc;
	rc = store_queue_stage(txn, q);
	if (rc) {
		store_txn_abort(txn);
		return rc;
	}
	rc = store_txn_commit(txn, seq);
	if (!rc)
		queue_dirty_clear(q);
	return rc;
}

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

int store_queue_restore(store_t *s, queue_t *q, gpuq_diag_t *diag)
{
	static const queue_rec_type_t order[] = {QUEUE_REC_META, QUEUE_REC_CQ, QUEUE_REC_TENANT,
						 QUEUE_REC_WORKLOAD};
	restore_ctx_t r = {q, diag, NULL};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		int rc;
		r.name = store_type_name(s, order[i]);
		if (!r.name)
			continue; /* a store made without queue types holds none */
		rc = store_scan(s, order[i], restore_one, &r);
		if (rc)
			return rc;
	}
	return queue_restore_done(q, diag);
}

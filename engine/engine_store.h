/*
 * engine/engine_store.h: the core's records in a bare store, the
 * translations engine_t's commits and restores are made of (engine/
 * persist.c), for what works on a store without an engine: `gpuq store`
 * (cmd/), tests and benches. Apart from engine/engine.h because it names
 * store/'s types: a driver that holds an engine includes engine.h only,
 * and reaches store/ through no header.
 *
 * Errors, threads and ownership as engine.h and store/store.h say: the
 * store's codes passed through, one thread per store and core.
 */
#ifndef GPUQ_ENGINE_STORE_H
#define GPUQ_ENGINE_STORE_H

#include "engine/engine.h"
#include "store/store.h"

/* ---- The core's records in a store ----
 *
 * Record type ids 1..6 are the core's queue_rec_type_t values, kept in the
 * sub-databases "queue_meta", "clusterqueues", "tenants", "workloads",
 * "usage" (the usage ledger) and "budgets" (each budget's state; tools
 * recognize core records by id). A driver's own records use ids
 * from STORE_TYPE_DRIVER_FIRST up, in the same batches. */

/* Name the core's record types in opts->types (other ids untouched). */
void engine_store_types(store_opts_t *opts);

/* Structural check of a stored core record without a policy: a core type, a
 * key of 1..QUEUE_KEY_MAX bytes ("meta" for the meta record), a value of
 * 1..QUEUE_RECORD_MAX bytes starting with a known encoding version (1). Deep
 * decoding needs a core (queue_record_apply). GPUQ_OK, or GPUQ_ECORRUPT with
 * diag naming the problem. */
int engine_record_check(unsigned type, const void *key, size_t klen, const void *val, size_t vlen,
			gpuq_diag_t *diag);

/* Add every record q changed since queue_dirty_clear to the batch: a put of
 * its encoding, or a delete when the object is gone. Sticky like store_put
 * (an encode failure becomes the batch's error, logged once). Does not clear
 * q's changed set: do that (queue_dirty_clear) after the commit succeeded.
 * For drivers that commit their own records in the same batch. */
int engine_stage(store_txn_t *txn, const queue_t *q);

/* engine_commit's one commit path for a bare core and store, without a
 * driver's records: engine_stage in a new batch, commit it, and on success
 * queue_dirty_clear; *seq (may be NULL) as store_txn_commit. On failure the changed set is
 * kept, so a later call retries it, and diag (may be NULL) names the step:
 * store_txn_begin's, engine_stage's or store_txn_commit's code (LMDB
 * failures are also logged once by the store). An empty changed set commits
 * nothing. */
int engine_persist(store_t *s, queue_t *q, uint64_t *seq, gpuq_diag_t *diag);

/* Make the store's core records exactly q's, in one batch: mark every live
 * record of q changed (queue_dirty_all), delete every stored core record
 * whose object q does not hold (a ClusterQueue, LocalQueue or workload the
 * core dropped), put every record of q; commit; on success clear q's changed
 * set. Costs a scan of the four core tables: use it after
 * engine_core_rebuild (which may drop objects whose records engine_persist
 * would leave behind, and a restore from such a store fails) and when the
 * store's content is in doubt, not per cycle. Returns as engine_persist,
 * plus store_scan's errors. */
int engine_persist_full(store_t *s, queue_t *q, uint64_t *seq, gpuq_diag_t *diag);

/* Apply every stored core record into q (built from the policy the records
 * were written under, holding no workloads), in type order (meta,
 * ClusterQueues, tenants, workloads) and key order, then queue_restore_done.
 * Returns GPUQ_OK, the store's error, or the core's (GPUQ_ECORRUPT /
 * GPUQ_ENOTFOUND / GPUQ_EEXIST) with diag naming the record type and key
 * ("state store: workloads record \"uid-7\": ..."). After a failure q is
 * unusable: destroy it. */
int engine_restore(store_t *s, queue_t *q, gpuq_diag_t *diag);

#endif

/*
 * store: gpuq's state store, an adapter over LMDB.
 *
 * The queueing core's state (queues, workloads, admissions, usage, history,
 * pending decisions) is kept as records: (record type, key bytes, value
 * bytes). Each record type lives in its own LMDB sub-database, named by a
 * table the caller passes at open (up to STORE_TYPE_MAX types); a `meta`
 * sub-database holds the schema version, that type table and a commit
 * sequence number. A store is self-describing: tools (`gpuq store check`)
 * open it without knowing the types.
 *
 * The design decision that matters: a write batch (store_txn_t) only
 * buffers its puts and deletes; store_txn_commit applies them all in ONE
 * LMDB write transaction. Because the batch is kept, the commit can be
 * replayed: when the memory map is full, the commit aborts the transaction,
 * doubles the map and applies the whole batch again, transparently, up to
 * a cap. Errors in a batch are sticky (as in knot DNS): after the first
 * failed call every later call on the batch returns that error and the
 * commit aborts, so a caller may issue all its puts and check once.
 *
 * Durability: by default every commit is on disk (fsync) before
 * store_txn_commit returns, so a caller that commits BEFORE acting on a
 * decision never loses a decision it acted on, even on power loss. A killed
 * process (kill -9) never loses a committed batch and never exposes part
 * of a batch, in either mode; `nosync` only trades the guarantee for OS
 * crashes and power loss (see docs/store.md).
 *
 * Threads: a store_t and its batch are used by one thread at a time. A
 * process opens a directory at most once (LMDB's locks are per process);
 * other processes may open it read-only at any time (LMDB readers never block
 * the writer and see whole batches only).
 *
 * One writer per store: a writable open takes the directory's writer lock
 * (flock on DIR/writer.lock, which records the holder's pid) and holds it
 * until store_close, across store_reopen; a second writable open, in this
 * process or another, is refused (GPUQ_EAGAIN naming that pid). LMDB's own
 * locks do not refuse a second writing process: it would wait for the
 * write lock and then commit over the first one's view of the store.
 */
#ifndef GPUQ_STORE_H
#define GPUQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* Record types per store: ids 0..15 (each one LMDB sub-database). */
#define STORE_TYPE_MAX 16
/* Longest type name, without NUL: [a-z0-9_-], never "meta". */
#define STORE_TYPE_NAME_MAX 31
/* Longest key: LMDB's compiled-in maximum key size (511 bytes). */
#define STORE_KEY_MAX 511
/* Largest value: 16 MiB; a record is one workload or ledger row, so anything
 * near this is a bug in the caller, not data. */
#define STORE_VALUE_MAX (16u << 20)
/* A batch buffers at most 256 MiB of keys and values: LMDB refuses a write
 * transaction that dirties more than ~512 MiB of pages (MDB_TXN_FULL). */
#define STORE_BATCH_BYTES_MAX (256u << 20)
/* Schema version this build writes and reads. Stores with a newer version
 * are refused. 2: every record's value is stored with a CRC-32C of its
 * type, key and value after it, checked on every read (a mismatch is
 * GPUQ_ECORRUPT naming the record); a writable open of a version 1 store
 * adds them (read-only opens read version 1 unchecked). 3: the meta records
 * (schema, sequence number, type table) are sealed by a CRC-32C under the
 * meta key "sum", rewritten at every commit and checked at every open; a
 * writable open of a version 1 or 2 store adds it. */
#define STORE_SCHEMA_VERSION 3
/* Map size of a new store (64 MiB) and the cap growth stops at (64 GiB). */
#define STORE_MAP_INITIAL_DEFAULT ((size_t)64 << 20)
#define STORE_MAP_MAX_DEFAULT ((size_t)64 << 30)
/* Longest state directory path accepted. */
#define STORE_PATH_MAX 1024

typedef struct store store_t;	      /* an open store (one LMDB environment) */
typedef struct store_txn store_txn_t; /* a write batch of the store */

typedef struct {
	const char *types[STORE_TYPE_MAX]; /* sub-db name of record type i; NULL: unused id */
	bool read_only;		/* open without writing anything (MDB_RDONLY); types ignored */
	bool nosync;		/* MDB_NOSYNC|MDB_NOMETASYNC: no fsync per commit (tests, sim) */
	size_t map_initial;	/* map size of a new store, bytes; 0: STORE_MAP_INITIAL_DEFAULT */
	size_t map_max;		/* growth stops here (GPUQ_ELIMIT); 0: STORE_MAP_MAX_DEFAULT */
	bool set_aside_corrupt; /* writable: a store found corrupt at open
				   (GPUQ_ECORRUPT) is moved aside and a new,
				   empty one created in its place (store_moved_aside
				   names where it went; logged): for a caller that can
				   rebuild its state elsewhere (the daemon, from the
				   cluster); the default refuses */
} store_opts_t;

/* Test seam, off unless set in the environment: with
 * GPUQ_TEST_FAIL_STORE_COMMITS=1 (any value but "" and "0") every non-empty
 * commit fails with GPUQ_EIO before anything is written, as a failing disk
 * would; with an absolute path (GPUQ_TEST_FAIL_STORE_COMMITS=/tmp/x), only
 * while that file exists (a test turns the fault on and off at run time).
 * Read at each commit; logged at each writable open while set. For e2e
 * scenarios and unit tests only: nothing else sets it. */
#define STORE_FAULT_COMMITS_ENV "GPUQ_TEST_FAIL_STORE_COMMITS"

typedef struct {
	uint64_t seq;	  /* commit sequence number: committed non-empty batches */
	uint32_t schema;  /* schema version of the store; 0: never initialized */
	size_t map_size;  /* current size of the memory map, bytes */
	size_t map_used;  /* bytes of the map in use: (last page + 1) * page size */
	size_t map_max;	  /* growth cap, bytes */
	size_t page_size; /* LMDB page size, bytes */
	unsigned readers; /* reader slots ever used (LMDB's high-water mark, all processes) */
	unsigned grows;	  /* map growths done by this store_t since open */
	uint64_t counts[STORE_TYPE_MAX]; /* records per type id (0 for unused ids) */
	uint64_t puts_kept;		 /* puts committed by this store_t whose value was stored
					    already, byte for byte: not written again */
} store_info_t;

/* Fill opts with the defaults: durable, read-write, 64 MiB map growing up to
 * 64 GiB, no types. */
void store_opts_init(store_opts_t *opts);

/* Open the store in directory `dir`, creating the directory (mode 0700) and
 * a new store when absent (unless opts->read_only); a writable open holds
 * the writer lock first (see "One writer per store"). A new store records the
 * schema version and opts->types. An existing store's recorded types must
 * agree with opts->types for every id both name (new ids are added); a
 * read-only open uses the recorded table; when the directory holds an LMDB
 * environment with nothing in it (a store whose creation was interrupted
 * before its first commit), a read-only open succeeds with an empty store:
 * seq 0, schema 0, no types. Runs LMDB's stale reader check.
 * Returns GPUQ_OK and *out (free with store_close), or:
 *   GPUQ_EINVAL    bad opts (type name, sizes) or dir too long;
 *   GPUQ_ENOTFOUND read-only open of a directory without a store;
 *   GPUQ_ESTORE    the store's schema is newer than this build, or the
 *                  type table disagrees;
 *   GPUQ_ECORRUPT  the files are not an LMDB environment, meta is damaged, or
 *                  a page is (every page is checked before LMDB reads it:
 *                  LMDB asserts on a damaged page);
 *   GPUQ_EAGAIN    writable, and another process (or store_t) holds the
 *                  writer lock: diag names its pid when known;
 *   GPUQ_EIO       directory or file system failure; GPUQ_ENOMEM.
 * with a sentence naming the directory in diag (reported there, not logged:
 * the caller prints it). */
int store_open(const char *dir, const store_opts_t *opts, store_t **out, gpuq_diag_t *diag);

/* Open s's directory again after a failed commit: the environment closed
 * (the writer lock kept: no other writer can slip in between) and opened
 * with the options of store_open, corrupt-store handling included. What
 * the last successful commit wrote is there again; nothing of a failed one.
 * No batch may be open and no read or snapshot held. GPUQ_OK, or
 * store_open's errors; on failure s holds no environment: batches fail with
 * GPUQ_ESTORE and reads see an empty store until a store_reopen succeeds.
 * Writable stores only (GPUQ_EINVAL). */
int store_reopen(store_t *s, gpuq_diag_t *diag);

/* Where the last open (or reopen) moved a corrupt store's data.mdb
 * (set_aside_corrupt), or NULL when it did not; valid until the next
 * reopen or close. */
const char *store_moved_aside(const store_t *s);

/* Close the store. NULL is accepted. An open batch is aborted. A nosync
 * store is flushed to disk first (fsync), so a clean close is durable in
 * every mode. No read may be in progress. */
void store_close(store_t *s);

/* Name of record type `type` (valid until store_close), or NULL if unused. */
const char *store_type_name(const store_t *s, unsigned type);

/* Find the type id named `name`. GPUQ_OK, or GPUQ_ENOTFOUND. */
int store_type_find(const store_t *s, const char *name, unsigned *type);

/* ---- Writing: batches ---- */

/* Start the store's write batch (one per store; the buffer is reused).
 * Returns GPUQ_OK and *out, owned by the store until commit or abort;
 * GPUQ_EINVAL if the store is read-only; GPUQ_EAGAIN if a batch is open;
 * GPUQ_ESTORE when a failed store_reopen left no environment. */
int store_txn_begin(store_t *s, store_txn_t **out);

/* Add a put of (key, value) under `type` to the batch; key and value are
 * copied. A later op on the same key in the same batch wins. Returns GPUQ_OK,
 * or (sticky: every later call returns it too) GPUQ_EINVAL for an unused
 * type, an empty key or key > STORE_KEY_MAX, value > STORE_VALUE_MAX;
 * GPUQ_ELIMIT past STORE_BATCH_BYTES_MAX; GPUQ_ENOMEM. */
int store_put(store_txn_t *txn, unsigned type, const void *key, size_t klen, const void *val,
	      size_t vlen);

/* Add a delete of `key` under `type`. Deleting an absent key is not an error.
 * Same returns as store_put. */
int store_del(store_txn_t *txn, unsigned type, const void *key, size_t klen);

/* The batch's sticky error: GPUQ_OK while every call succeeded. */
int store_txn_error(const store_txn_t *txn);

/* Fail the batch with rc (< 0) when producing its ops failed on the caller's
 * side (an encode error): rc becomes the sticky error unless one is set
 * already. Returns the batch's sticky error. */
int store_txn_fail(store_txn_t *txn, int rc);

/* Apply the batch in one LMDB write transaction that also increments the
 * commit sequence number, and end the batch (txn is invalid afterwards, in
 * every case). When the map fills, the transaction is aborted, the map is
 * doubled and the whole batch applied again, up to opts.map_max. An empty
 * batch writes nothing and keeps the sequence number. On GPUQ_OK the batch is
 * durable (unless nosync) and *seq (may be NULL) is the new sequence number.
 * Errors: the sticky error (nothing written); GPUQ_ELIMIT map cap reached or
 * the batch is too big for one LMDB transaction; GPUQ_EIO; GPUQ_ECORRUPT;
 * GPUQ_ESTORE. Nothing of the batch is visible after a failure. LMDB
 * failures are logged once here. Must not be called from a scan callback. */
int store_txn_commit(store_txn_t *txn, uint64_t *seq);
/* (After GPUQ_EIO or GPUQ_ESTORE from a commit, LMDB may refuse every later
 * transaction: close the store and open it again before retrying.) */

/* Drop the batch without writing. NULL is accepted. */
void store_txn_abort(store_txn_t *txn);

/* ---- Reading ---- */

/* Called once per record, in key order (bytewise, shorter first). key and
 * val point into the map and are valid only during the call. Return 0 to go
 * on; any other value stops the scan and is returned by store_scan. */
typedef int (*store_scan_cb)(void *ctx, unsigned type, const void *key, size_t klen,
			     const void *val, size_t vlen);

/* Call cb for every record of `type` in one read snapshot. Returns GPUQ_OK,
 * cb's non-zero value, GPUQ_EINVAL (unused type), or GPUQ_ECORRUPT /
 * GPUQ_ESTORE when LMDB fails (logged). */
int store_scan(store_t *s, unsigned type, store_scan_cb cb, void *ctx);

/* Copy the value of (type, key) into a new malloc'd buffer: *val (caller
 * frees; never NULL on success, even for an empty value) and *vlen. Returns
 * GPUQ_OK, GPUQ_ENOTFOUND, GPUQ_EINVAL, GPUQ_ENOMEM, GPUQ_ESTORE. */
int store_get(store_t *s, unsigned type, const void *key, size_t klen, void **val, size_t *vlen);

/* Hold one read snapshot: until store_snapshot_end, every read
 * (store_scan, store_get, store_seq_get, store_info_get, store_digest) sees
 * the same commit, whatever a writer in another process commits meanwhile.
 * For readers next to a live writer (`gpuq store check`, a simulator's
 * resume check). No write commit in this process may happen under it (the
 * map must not move: an assertion). GPUQ_OK; GPUQ_EINVAL when one is held
 * already; GPUQ_ESTORE. A blank store has nothing to hold: GPUQ_OK. */
int store_snapshot_begin(store_t *s);
void store_snapshot_end(store_t *s);

/* Read the committed sequence number from the store. */
int store_seq_get(store_t *s, uint64_t *seq);

/* Sizes, counts and sequence number, from one read snapshot. */
int store_info_get(store_t *s, store_info_t *info);

/* 64-bit FNV-1a digest of the content: for each used type id in order, the
 * id and name, then every record's key and value with their lengths, in key
 * order. Meta (sequence number, schema) is excluded, so two stores holding
 * the same records digest equal whatever their commit history. Detects
 * differences; it is not a cryptographic hash. */
int store_digest(store_t *s, uint64_t *digest);

/* ---- Record type ids of the queue core and of drivers ----
 *
 * The store does not know what a record holds. By convention ids below
 * STORE_TYPE_DRIVER_FIRST belong to the queue core's records, which
 * engine/ names, persists and restores (engine_store_types, engine_stage,
 * engine_restore: ids 1..4 are queue_rec_type_t); ids from
 * STORE_TYPE_DRIVER_FIRST up are for a driver's own records (the
 * simulator's progress, the daemon's pending decisions). */
#define STORE_TYPE_DRIVER_FIRST 8

#endif

/*
 * store/internal.h: shared by the files of store/ only; the module's
 * interface is store/store.h.
 *
 * Files: pages.c (a structural check of data.mdb's pages, read with pread,
 * never through LMDB), files.c (the directory's files around LMDB's: the
 * header check, the commit marker, the writer lock, a corrupt store moved
 * aside, the tests' commit fault), store.c (the environment, batches,
 * reads).
 */
#ifndef GPUQ_STORE_INTERNAL_H
#define GPUQ_STORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/base.h"

/* Check every page that LMDB snapshot `txnid` reaches in data.mdb (fd, pages
 * of psize bytes), reading them with pread, before LMDB is let near them:
 * LMDB trusts its pages and asserts (abort) or reads outside the map when a
 * damaged page is not what the path to it says. The walk starts from the
 * meta page of txnid (txnid & 1) and visits the free database, the main
 * database and each named database in it: every page in range and reached
 * once, headers naming their own page number, branch pages above and leaf
 * pages at the tree's recorded depth, node offsets and sizes inside their
 * page, overflow pages where their node says, each tree's recorded page and
 * entry counts equal to what was found, free-list records well formed and
 * naming no page a tree holds. Call it inside a read transaction of txnid
 * (so a writer in another process does not reuse those pages meanwhile).
 * Returns GPUQ_OK; GPUQ_ECORRUPT with a sentence in diag ("state store DIR:
 * store corrupt: page 2 of database \"workloads\" ..."); GPUQ_EAGAIN when
 * the meta page already holds a later transaction (a writer committed twice
 * since the snapshot began: begin a new one and call again); GPUQ_EIO;
 * GPUQ_ENOMEM. Cost: one read of every page in use. */
int store_pages_check(int fd, size_t psize, uint64_t txnid, const char *dir, gpuq_diag_t *diag);

/* ---- files.c ---- */

/* mkdir -p dir (mode 0700 for what it creates). GPUQ_EIO with diag. */
int store_dir_make(const char *dir, gpuq_diag_t *diag);
/* The marker beside data.mdb once the store held a commit: from then on a
 * missing or short data.mdb is damage, never a store to create afresh.
 * write: durably; remove: when the store is moved aside. */
bool store_marker_present(const char *dir);
int store_marker_write(const char *dir, gpuq_diag_t *diag);
int store_marker_remove(const char *dir, gpuq_diag_t *diag);
/* Refuse a damaged data.mdb before LMDB maps it (GPUQ_ECORRUPT: missing or
 * short in a store that held commits, no LMDB header, shorter than its
 * header says; GPUQ_EIO). */
int store_data_check(const char *dir, gpuq_diag_t *diag);
/* A read-only open's look at dir: GPUQ_ENOTFOUND when it holds no store;
 * *blank when data.mdb exists but was never initialized. */
int store_dir_probe(const char *dir, bool *blank, gpuq_diag_t *diag);
/* Empty a data.mdb whose creation was interrupted (shorter than its header,
 * no marker), so LMDB initializes it. */
int store_data_reset_short(const char *dir, gpuq_diag_t *diag);

/* Take dir's writer lock (flock on dir/writer.lock, non-blocking) and
 * record this process's pid in it: *fd holds it until store_lock_drop.
 * GPUQ_EAGAIN when another process holds it (diag names its pid when the
 * file says), GPUQ_EIO. */
int store_lock_take(const char *dir, int *fd, gpuq_diag_t *diag);
void store_lock_drop(int fd);

/* Move a corrupt store aside, under the writer lock: data.mdb renamed to
 * data.mdb.corrupt-<UTC time> (its path into to[cap]), LMDB's lock.mdb and
 * the marker removed, logged with why. GPUQ_OK (the directory is ready for
 * a new store) or GPUQ_EIO. */
int store_set_aside(const char *dir, const char *why, char *to, size_t cap, gpuq_diag_t *diag);

/* Whether STORE_FAULT_COMMITS_ENV is set (at open: logged), and whether
 * it fails the commit about to be made (at each commit). */
bool store_fault_set(void);
bool store_fault_commit_now(void);

/* Unaligned little-endian-as-stored reads of LMDB's on-disk fields (the
 * page walk of pages.c and the meta checks of files.c). */
static inline uint16_t get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif

/*
 * store/internal.h: shared by the files of store/ only; the module's
 * interface is store/store.h.
 *
 * Files: pages.c (a structural check of data.mdb's pages, read with pread,
 * never through LMDB), store.c (the environment, batches, reads).
 */
#ifndef GPUQ_STORE_INTERNAL_H
#define GPUQ_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

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

#endif

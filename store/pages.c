/* store: the structural check of data.mdb's pages (store_pages_check, see
 * internal.h). It reads LMDB 0.9's on-disk format (liblmdb's mdb.c:
 * MDB_meta, MDB_db, MDB_page, MDB_node; midl.h's free lists) as a 64-bit
 * little-endian build lays it out, the only build gpuq makes (store.c's
 * data_need reads the same header). */
#include "store/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Page header (MDB_page): page number (u64) at 0, flags (u16) at 10, lower
 * and upper bounds of the free space (u16) at 12 and 14, or an overflow
 * run's page count (u32) at 12; the node offsets (u16 each) from 16. */
#define PG_HDR 16
#define PG_FLAGS_OFF 10
#define PG_LOWER_OFF 12
#define PG_UPPER_OFF 14
#define PG_PAGES_OFF 12
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_OVERFLOW 0x04
#define P_META 0x08
#define P_LEAF2 0x20
#define P_SUBP 0x40
/* The flags that say what a page is (the rest are in-memory states). */
#define P_KIND (P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2 | P_SUBP)
/* Node header (MDB_node): lo and hi (u16: a leaf's data size, or with the
 * flags as top bits a branch's child page), flags (u16), key size (u16). */
#define NODE_HDR 8
#define F_BIGDATA 0x01 /* the value is on overflow pages */
#define F_SUBDATA 0x02 /* the value is a named database's record */
/* A database's record (MDB_db): pad (u32), flags (u16), depth (u16), then
 * branch, leaf and overflow page counts, entries and root (u64 each). */
#define DB_BYTES 48
#define DB_INTEGERKEY 0x08 /* MDB_INTEGERKEY: the free database's keys */
/* The meta page (MDB_meta after the page header): magic, version, address,
 * map size, the free and the main database's records, last page, txnid. */
#define META_MAGIC 0xBEEFC0DEu
#define META_VERSION 1
#define META_DBS (PG_HDR + 24)
#define META_LAST (META_DBS + 2 * DB_BYTES)
#define META_TXNID (META_LAST + 8)
#define NO_PAGE UINT64_MAX /* P_INVALID: the root of an empty tree */
/* Deepest tree LMDB walks (its cursor stack, CURSOR_STACK). */
#define DEPTH_MAX 32
/* Named databases gathered from the main database at most: the store opens
 * STORE_TYPE_MAX + 1 (meta and the types); a file naming more is not a gpuq
 * store. */
#define NAMED_MAX 64
/* LMDB's longest key (its compiled-in maximum, STORE_KEY_MAX). */
#define KEY_MAX 511
/* Page numbers of a free-list record read per pread from overflow pages. */
#define IDL_CHUNK 512

typedef struct {
	uint16_t flags, depth;			  /* md_flags, md_depth */
	uint64_t branch, leaf, overflow, entries; /* pages and records it counts */
	uint64_t root;				  /* NO_PAGE: empty */
} db_t;

typedef struct {
	db_t db;       /* its record in the main database */
	char name[40]; /* the printable part of its name, for messages */
} named_t;

typedef enum { TREE_FREE, TREE_MAIN, TREE_NAMED } tree_kind_t;

typedef struct {
	int fd;					  /* data.mdb */
	size_t psize;				  /* page size */
	uint64_t last;				  /* the snapshot's last page */
	uint64_t txnid;				  /* the snapshot's transaction */
	uint8_t *held;				  /* bitmap: pages a tree holds */
	uint8_t *freed;				  /* bitmap: pages the free list names */
	unsigned char *pages;			  /* DEPTH_MAX pages: the page read at each level */
	tree_kind_t kind;			  /* the tree being walked */
	const char *tree;			  /* its name, for messages */
	char tree_name[64];			  /* a named database's, for messages */
	uint16_t depth;				  /* its recorded depth */
	uint64_t branch, leaf, overflow, entries; /* what the walk found in it */
	unsigned char prev[KEY_MAX];		  /* the tree's last key so far */
	size_t prev_len;			  /* its bytes (valid once entries > 0) */
	named_t named[NAMED_MAX];		  /* named databases, walked after main */
	size_t n_named;
	const char *dir;   /* for messages */
	gpuq_diag_t *diag; /* where a refusal is written */
} walk_t;

/* Refuse the store: "store corrupt: page N of TREE: <what>". */
static int bad(const walk_t *w, uint64_t pgno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(const walk_t *w, uint64_t pgno, const char *fmt, ...)
{
	char what[256]; /* the finding; longer is cut */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	gpuq_diag_set(w->diag, GPUQ_ECORRUPT,
		      "state store %s: store corrupt: page %llu of %s: %s (restore the store, or "
		      "remove it to start empty)",
		      w->dir, (unsigned long long)pgno, w->tree, what);
	return GPUQ_ECORRUPT; /* (a constant: the analyzer sees every caller fail) */
}

static int read_at(const walk_t *w, void *buf, size_t n, uint64_t off, uint64_t pgno)
{
	ssize_t got = pread(w->fd, buf, n, (off_t)off);

	if (got < 0) {
		gpuq_diag_set(w->diag, GPUQ_EIO, "state store %s: reading data.mdb: %s", w->dir,
			      strerror(errno));
		return GPUQ_EIO;
	}
	return (size_t)got == n ? GPUQ_OK : bad(w, pgno, "beyond the end of data.mdb");
}

static bool bit_test_set(uint8_t *map, uint64_t i)
{
	bool was = map[i / 8] & (1u << (i % 8));

	map[i / 8] |= (uint8_t)(1u << (i % 8));
	return was;
}

/* Page pgno joins the tree being walked: in range and reached only once. */
static int take(walk_t *w, uint64_t pgno, uint64_t from)
{
	if (pgno < 2 || pgno > w->last)
		return bad(w, from, "names page %llu, outside 2..%llu", (unsigned long long)pgno,
			   (unsigned long long)w->last);
	if (bit_test_set(w->held, pgno))
		return bad(w, from, "names page %llu, which is reached twice",
			   (unsigned long long)pgno);
	return GPUQ_OK;
}

static void db_decode(const unsigned char *p, db_t *db)
{
	db->flags = get16(p + 4);
	db->depth = get16(p + 6);
	db->branch = get64(p + 8);
	db->leaf = get64(p + 16);
	db->overflow = get64(p + 24);
	db->entries = get64(p + 32);
	db->root = get64(p + 40);
}

/* The pages of a value on overflow pages: a run starting at opg, its header
 * saying so and long enough for vlen bytes. */
static int overflow_take(walk_t *w, uint64_t from, uint64_t opg, uint64_t vlen)
{
	unsigned char hdr[PG_HDR];
	uint64_t need = (PG_HDR - 1 + vlen) / w->psize + 1, run;
	int rc = take(w, opg, from);

	if (!rc)
		rc = read_at(w, hdr, sizeof(hdr), opg * w->psize, opg);
	if (rc)
		return rc;
	run = get32(hdr + PG_PAGES_OFF);
	if (get64(hdr) != opg || (get16(hdr + PG_FLAGS_OFF) & P_KIND) != P_OVERFLOW)
		return bad(w, opg, "not the overflow page its record in page %llu names",
			   (unsigned long long)from);
	if (run < need || run > w->last - opg + 1)
		return bad(w, opg, "an overflow run of %llu pages for a %llu-byte value",
			   (unsigned long long)run, (unsigned long long)vlen);
	for (uint64_t i = 1; i < run && !rc; i++)
		rc = take(w, opg + i, opg);
	w->overflow += run;
	return rc;
}

/* A free-list record's value: [count, page...] in u64 words, count words in
 * use (the rest reserved), the pages strictly descending, in range and
 * named once. inl: the value in the page; else at file offset off. */
static int idl_check(walk_t *w, uint64_t pgno, const unsigned char *inl, uint64_t off,
		     uint64_t vlen)
{
	uint64_t words[IDL_CHUNK], count, prev = UINT64_MAX;
	int rc;

	if (vlen < 8 || vlen % 8)
		return bad(w, pgno, "a free-list record of %llu bytes", (unsigned long long)vlen);
	if (inl)
		memcpy(&count, inl, 8);
	else if ((rc = read_at(w, &count, 8, off, pgno)))
		return rc;
	if (count > vlen / 8 - 1)
		return bad(w, pgno, "a free-list record counts %llu pages in %llu bytes",
			   (unsigned long long)count, (unsigned long long)vlen);
	for (uint64_t i = 1, n; i <= count; i += n) {
		n = count - i + 1 < IDL_CHUNK ? count - i + 1 : IDL_CHUNK;
		if (inl)
			memcpy(words, inl + i * 8, n * 8);
		else if ((rc = read_at(w, words, n * 8, off + i * 8, pgno)))
			return rc;
		for (uint64_t j = 0; j < n; j++) {
			uint64_t p = words[j];
			if (p < 2 || p > w->last || p >= prev || bit_test_set(w->freed, p))
				return bad(w, pgno,
					   "its free list names page %llu (out of range, out of "
					   "order or twice)",
					   (unsigned long long)p);
			prev = p;
		}
	}
	return GPUQ_OK;
}

/* Keys in LMDB's order, strictly rising through the tree: the free list's
 * as integers, the others as bytes, a shorter prefix first. */
static bool key_after(walk_t *w, const unsigned char *key, size_t len)
{
	size_t n = len < w->prev_len ? len : w->prev_len;
	int cmp = memcmp(key, w->prev, n);
	bool after;

	if (w->kind == TREE_FREE)
		after = len == 8 && (w->entries == 0 || get64(key) > get64(w->prev));
	else
		after = w->entries == 0 || cmp > 0 || (cmp == 0 && len > w->prev_len);
	memcpy(w->prev, key, len);
	w->prev_len = len;
	return after;
}

/* One record of a leaf page: its flags allowed in this tree, its value
 * inside the page or on overflow pages; a named database's record kept for
 * later, a free-list record checked. */
static int leaf_node(walk_t *w, uint64_t pgno, const unsigned char *p, size_t off)
{
	const unsigned char *node = p + off, *key = node + NODE_HDR;
	uint16_t flags = get16(node + 4), ksize = get16(node + 6);
	uint64_t vlen = get16(node) | ((uint64_t)get16(node + 2) << 16), opg = 0;
	const unsigned char *val = key + ksize;
	bool big = flags & F_BIGDATA;
	int rc;

	if ((flags & ~(F_BIGDATA | F_SUBDATA)) || (big && (flags & F_SUBDATA)) ||
	    ((flags & F_SUBDATA) && w->kind != TREE_MAIN))
		return bad(w, pgno, "a record with node flags 0x%x", flags);
	if (ksize > KEY_MAX || off + NODE_HDR + ksize + (big ? 8 : vlen) > w->psize)
		return bad(w, pgno, "a record of %u + %llu bytes runs past the page", ksize,
			   (unsigned long long)vlen);
	if (!key_after(w, key, ksize))
		return bad(w, pgno, "a key out of order (%u bytes)", ksize);
	w->entries++;
	if (big) {
		opg = get64(val);
		if ((rc = overflow_take(w, pgno, opg, vlen)))
			return rc;
	}
	if (w->kind == TREE_FREE) {
		if (get64(key) > w->txnid)
			return bad(w, pgno, "a free-list key that is not a past transaction");
		return idl_check(w, pgno, big ? NULL : val, opg * w->psize + PG_HDR, vlen);
	}
	if (!(flags & F_SUBDATA))
		return GPUQ_OK;
	if (vlen != DB_BYTES || w->n_named == NAMED_MAX)
		return bad(w, pgno, "a database record of %llu bytes, or more than %d databases",
			   (unsigned long long)vlen, NAMED_MAX);
	named_t *nd = &w->named[w->n_named++];
	size_t n = ksize < sizeof(nd->name) - 1 ? ksize : sizeof(nd->name) - 1;
	for (size_t i = 0; i < n; i++)
		nd->name[i] =
		    (char)(key[i] >= 0x20 && key[i] < 0x7f && key[i] != '"' ? key[i] : '?');
	nd->name[n] = '\0';
	db_decode(val, &nd->db);
	return GPUQ_OK;
}

static int page_walk(walk_t *w, uint64_t pgno, unsigned level, uint64_t from);

/* The nodes of page p (pgno, at level): offsets inside the page above its
 * free space, keys inside the page; a branch's children walked, a leaf's
 * records checked. */
static int nodes_walk(walk_t *w, uint64_t pgno, unsigned level, const unsigned char *p, unsigned n,
		      bool branch)
{
	uint16_t upper = get16(p + PG_UPPER_OFF);
	int rc = GPUQ_OK;

	for (unsigned i = 0; i < n && !rc; i++) {
		size_t off = get16(p + PG_HDR + (size_t)i * 2);
		const unsigned char *node = p + off;
		if (off < upper || off % 2 || off + NODE_HDR > w->psize ||
		    off + NODE_HDR + get16(node + 6) > w->psize)
			return bad(w, pgno, "node %u at offset %zu is outside the page", i, off);
		if (branch)
			rc = page_walk(w,
				       get16(node) | ((uint64_t)get16(node + 2) << 16) |
					   ((uint64_t)get16(node + 4) << 32),
				       level + 1, pgno);
		else
			rc = leaf_node(w, pgno, p, off);
	}
	return rc;
}

/* Page pgno at level (1 = the root) of the tree being walked: its own
 * number in its header, a branch above the tree's depth and a leaf at it,
 * bounds that fit the page, at least the nodes LMDB needs there. */
static int page_walk(walk_t *w, uint64_t pgno, unsigned level, uint64_t from)
{
	unsigned char *p = w->pages + (size_t)(level - 1) * w->psize;
	bool branch = level < w->depth;
	uint16_t flags, lower, upper;
	unsigned n;
	int rc = take(w, pgno, from);

	if (!rc)
		rc = read_at(w, p, w->psize, pgno * w->psize, pgno);
	if (rc)
		return rc;
	flags = get16(p + PG_FLAGS_OFF) & P_KIND;
	lower = get16(p + PG_LOWER_OFF);
	upper = get16(p + PG_UPPER_OFF);
	if (get64(p) != pgno)
		return bad(w, pgno, "its header names page %llu", (unsigned long long)get64(p));
	if (flags != (branch ? P_BRANCH : P_LEAF))
		return bad(w, pgno, "level %u of %u is not a %s page (flags 0x%04x)", level,
			   w->depth, branch ? "branch" : "leaf", flags);
	if (lower < PG_HDR || (lower - PG_HDR) % 2 || upper > w->psize || lower > upper)
		return bad(w, pgno, "free space bounds %u..%u", lower, upper);
	n = (lower - PG_HDR) / 2u;
	/* LMDB asserts two keys in every branch but the free database's */
	if (n < (branch && w->kind != TREE_FREE ? 2u : 1u))
		return bad(w, pgno, "a %s page with %u node(s)", branch ? "branch" : "leaf", n);
	if (branch)
		w->branch++;
	else
		w->leaf++;
	return nodes_walk(w, pgno, level, p, n, branch);
}

/* One tree: its flags the ones gpuq's databases have, its pages walked, its
 * recorded counts equal to the walk's. */
static int tree_walk(walk_t *w, const db_t *db, tree_kind_t kind, const char *name)
{
	uint16_t want = kind == TREE_FREE ? DB_INTEGERKEY : 0;
	int rc;

	w->kind = kind;
	w->tree = name;
	w->depth = db->depth;
	w->branch = w->leaf = w->overflow = w->entries = 0;
	if (db->flags != want)
		return bad(w, db->root, "database flags 0x%x, gpuq's are 0x%x", db->flags, want);
	if (db->root == NO_PAGE) {
		if (db->depth || db->branch || db->leaf || db->overflow || db->entries)
			return bad(w, db->root, "an empty tree that counts pages or records");
		return GPUQ_OK;
	}
	if (db->depth < 1 || db->depth > DEPTH_MAX)
		return bad(w, db->root, "a tree %u levels deep", db->depth);
	rc = page_walk(w, db->root, 1, db->root);
	if (rc)
		return rc;
	if (w->branch != db->branch || w->leaf != db->leaf || w->overflow != db->overflow ||
	    w->entries != db->entries)
		return bad(w, db->root,
			   "the tree holds %llu branch, %llu leaf, %llu overflow pages and %llu "
			   "records; its record says %llu, %llu, %llu and %llu",
			   (unsigned long long)w->branch, (unsigned long long)w->leaf,
			   (unsigned long long)w->overflow, (unsigned long long)w->entries,
			   (unsigned long long)db->branch, (unsigned long long)db->leaf,
			   (unsigned long long)db->overflow, (unsigned long long)db->entries);
	return GPUQ_OK;
}

/* The meta page of txnid: LMDB's, holding txnid (a later one: EAGAIN). */
static int meta_read(walk_t *w, db_t *free_db, db_t *main_db)
{
	unsigned char m[META_TXNID + 8];
	uint64_t slot = w->txnid & 1, txnid;
	int rc;

	w->tree = "the meta pages";
	rc = read_at(w, m, sizeof(m), slot * w->psize, slot);
	if (rc)
		return rc;
	txnid = get64(m + META_TXNID);
	if (get32(m + PG_HDR) != META_MAGIC || get32(m + PG_HDR + 4) != META_VERSION ||
	    txnid < w->txnid)
		return bad(w, slot, "not the meta page of transaction %llu",
			   (unsigned long long)w->txnid);
	if (txnid > w->txnid)
		return GPUQ_EAGAIN;
	w->last = get64(m + META_LAST);
	/* (a new environment's last page is its second meta page) */
	if (w->last < 1 || w->last >= UINT64_MAX / w->psize / 2)
		return bad(w, slot, "last page %llu", (unsigned long long)w->last);
	db_decode(m + META_DBS, free_db);
	db_decode(m + META_DBS + DB_BYTES, main_db);
	return GPUQ_OK;
}

/* Every tree, then: no page both held by a tree and named free. */
static int walk_all(walk_t *w, const db_t *free_db, const db_t *main_db)
{
	int rc = tree_walk(w, free_db, TREE_FREE, "the free list");

	if (!rc)
		rc = tree_walk(w, main_db, TREE_MAIN, "the main database");
	for (size_t i = 0; i < w->n_named && !rc; i++) {
		snprintf(w->tree_name, sizeof(w->tree_name), "database \"%s\"", w->named[i].name);
		rc = tree_walk(w, &w->named[i].db, TREE_NAMED, w->tree_name);
	}
	w->tree = "the free list";
	for (uint64_t i = 0; i <= w->last / 8 && !rc; i++)
		if (w->held[i] & w->freed[i])
			rc = bad(w, i * 8 + (unsigned)__builtin_ctz(w->held[i] & w->freed[i]),
				 "a page both in use and free");
	return rc;
}

int store_pages_check(int fd, size_t psize, uint64_t txnid, const char *dir, gpuq_diag_t *diag)
{
	walk_t *w;
	db_t free_db = {0}, main_db = {0}; /* (the analyzer cannot follow bad()) */
	int rc;

	/* LMDB's pages: 512 B up to the 64 KiB a 16-bit offset reaches */
	if (psize < 512 || psize > (1u << 16))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state store %s: store corrupt: page size %zu", dir, psize);
	w = calloc(1, sizeof(*w));
	if (!w)
		return GPUQ_ENOMEM;
	w->fd = fd;
	w->psize = psize;
	w->txnid = txnid;
	w->dir = dir;
	w->diag = diag;
	rc = meta_read(w, &free_db, &main_db);
	if (!rc) {
		w->held = calloc(w->last / 8 + 1, 1);
		w->freed = calloc(w->last / 8 + 1, 1);
		w->pages = malloc(DEPTH_MAX * psize);
		rc =
		    w->held && w->freed && w->pages ? walk_all(w, &free_db, &main_db) : GPUQ_ENOMEM;
	}
	free(w->held);
	free(w->freed);
	free(w->pages);
	free(w);
	return rc;
}

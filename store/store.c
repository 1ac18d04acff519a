/* store: the LMDB environment, its meta sub-database, write batches with
 * transparent map growth, scans and the content digest. */
#include "store/store.h"
#include "store/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Smallest map accepted: 1 MiB holds the meta records and the first pages of
 * every sub-database; anything smaller only makes every first commit grow. */
#define MAP_MIN ((size_t)1 << 20)
/* A batch buffer that grew past 1 MiB is released at the end of its batch,
 * so one huge batch does not pin its memory for the life of the store. */
#define BATCH_KEEP_MAX ((size_t)1 << 20)
/* Meta keys. "type.NN" names record type NN. */
#define META_SCHEMA "schema"
#define META_SEQ "seq"
#define META_TYPE_FMT "type.%02u"
/* CRC-32C of every other meta entry (schema 3; see meta_sum). */
#define META_SUM "sum"

enum { OP_PUT = 1, OP_DEL = 2 };

/* Header of one op in the batch buffer, followed by the key and the value. */
typedef struct {
	uint8_t kind;  /* OP_PUT or OP_DEL */
	uint8_t type;  /* record type id */
	uint16_t klen; /* key bytes, 1..STORE_KEY_MAX */
	uint32_t vlen; /* value bytes (0 for a delete) */
} op_hdr_t;

struct store_txn {
	store_t *store;	    /* owner */
	int rc;		    /* sticky error: first failure of this batch */
	bool open;	    /* between store_txn_begin and commit/abort */
	unsigned char *buf; /* ops: op_hdr_t, key, value, ...; cap STORE_BATCH_BYTES_MAX */
	size_t len;	    /* bytes used in buf */
	size_t cap;	    /* bytes allocated in buf */
	size_t ops;	    /* ops in buf */
};

struct store {
	MDB_env *env;					     /* the LMDB environment */
	MDB_dbi meta;					     /* meta sub-database */
	MDB_dbi dbi[STORE_TYPE_MAX];			     /* sub-database of each used type */
	char names[STORE_TYPE_MAX][STORE_TYPE_NAME_MAX + 1]; /* type names, "" if unused */
	bool read_only;					     /* opened with MDB_RDONLY */
	bool blank;		/* read-only view of an environment never initialized: empty */
	bool nosync;		/* commits are not fsynced: flush at close */
	size_t map_size;	/* current map size, bytes */
	size_t map_max;		/* growth cap, bytes */
	unsigned grows;		/* growths since open */
	unsigned reading;	/* read snapshots open (scans in progress) */
	uint64_t seq;		/* last sequence number this process saw */
	size_t file_size;	/* data.mdb's bytes, at the last read_begin */
	bool crc;		/* records carry their CRC-32C (schema >= 2) */
	MDB_txn *snap;		/* store_snapshot_begin's read transaction (NULL: none) */
	uint64_t kept;		/* puts committed whose value was already stored */
	uint64_t kept_txn;	/* ... in the write transaction being applied */
	store_txn_t batch;	/* the store's one write batch */
	size_t map_initial;	/* map size of a new store (store_reopen opens with it) */
	int lock_fd;		/* the writer lock held (files.c), -1: none (read-only) */
	bool set_aside_corrupt; /* opts.set_aside_corrupt */
	char aside[STORE_PATH_MAX + 48]; /* where a corrupt data.mdb went, "" none */
	char dir[STORE_PATH_MAX + 1];	 /* directory, for messages */
};

/* ---- Errors: every MDB and errno code is translated here, once ---- */

static int err_map(int mrc)
{
	switch (mrc) {
	case MDB_SUCCESS:
		return GPUQ_OK;
	case MDB_NOTFOUND:
	case ENOENT:
		return GPUQ_ENOTFOUND;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_DBS_FULL:
	case MDB_READERS_FULL:
	case MDB_CURSOR_FULL:
	case MDB_PAGE_FULL:
	case MDB_TLS_FULL:
		return GPUQ_ELIMIT;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
	case MDB_INCOMPATIBLE:
		return GPUQ_ECORRUPT;
	case MDB_BAD_VALSIZE:
	case EINVAL:
		return GPUQ_EINVAL;
	case ENOMEM:
		return GPUQ_ENOMEM;
	case EAGAIN:
	case EBUSY:
		return GPUQ_EAGAIN;
	case EACCES:
	case EPERM:
	case EIO:
	case ENOSPC:
	case EROFS:
	case ENOTDIR:
	case EISDIR:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
		return GPUQ_EIO;
	default:
		return GPUQ_ESTORE;
	}
}

/* Log an LMDB failure once, with context, and return its gpuq code. */
static int fail(const store_t *s, int mrc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const store_t *s, int mrc, const char *fmt, ...)
{
	char what[512]; /* context sentence; longer is cut */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	gpuq_log(GPUQ_LOG_ERROR, "store", "%s: %s: %s", s->dir, what, mdb_strerror(mrc));
	return err_map(mrc);
}

/* Write an LMDB failure at open into diag (the caller reports it). */
static int fail_diag(const store_t *s, gpuq_diag_t *diag, int mrc, const char *what)
{
	return gpuq_diag_set(diag, err_map(mrc), "state store %s: %s: %s", s->dir, what,
			     mdb_strerror(mrc));
}

/* ---- Little-endian meta values ---- */

static void le_put(unsigned char *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t le_get(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Read the n-byte (4 or 8) integer meta[key]. MDB_NOTFOUND when absent,
 * MDB_CORRUPTED when its length is wrong. */
static int meta_uint_get(MDB_txn *txn, MDB_dbi meta, const char *key, size_t n, uint64_t *out)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	int mrc = mdb_get(txn, meta, &k, &v);

	if (mrc)
		return mrc;
	if (v.mv_size != n)
		return MDB_CORRUPTED;
	*out = le_get(v.mv_data, n);
	return MDB_SUCCESS;
}

static int meta_uint_put(MDB_txn *txn, MDB_dbi meta, const char *key, size_t n, uint64_t val)
{
	unsigned char buf[8];
	MDB_val k = {strlen(key), (void *)key}, v = {n, buf};

	le_put(buf, val, n);
	return mdb_put(txn, meta, &k, &v, 0);
}

/* The CRC-32C of meta's entries but META_SUM, in key order: for each, its key
 * length (u32 LE), key, value length (u32 LE) and value. Record values
 * carry their own checksums; this covers what says how to read them (the
 * schema, the sequence number, the type table). */
static int meta_sum(MDB_txn *txn, MDB_dbi meta, uint32_t *sum)
{
	MDB_cursor *cur;
	MDB_val k, v;
	uint32_t c = 0;
	int mrc = mdb_cursor_open(txn, meta, &cur);

	if (mrc)
		return mrc;
	for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !mrc;
	     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		unsigned char len[4];
		if (k.mv_size == strlen(META_SUM) && !memcmp(k.mv_data, META_SUM, k.mv_size))
			continue;
		le_put(len, k.mv_size, 4);
		c = gpuq_crc32c(c, len, 4);
		c = gpuq_crc32c(c, k.mv_data, k.mv_size);
		le_put(len, v.mv_size, 4);
		c = gpuq_crc32c(c, len, 4);
		c = gpuq_crc32c(c, v.mv_data, v.mv_size);
	}
	mdb_cursor_close(cur);
	*sum = c;
	return mrc == MDB_NOTFOUND ? MDB_SUCCESS : mrc;
}

/* Write META_SUM for meta as it now is: last, after every meta put of a
 * write transaction. */
static int meta_seal(MDB_txn *txn, MDB_dbi meta)
{
	uint32_t sum;
	int mrc = meta_sum(txn, meta, &sum);

	return mrc ? mrc : meta_uint_put(txn, meta, META_SUM, 4, sum);
}

/* ---- Options and type names ---- */

void store_opts_init(store_opts_t *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->map_initial = STORE_MAP_INITIAL_DEFAULT;
	opts->map_max = STORE_MAP_MAX_DEFAULT;
}

static bool name_valid(const char *name, size_t len)
{
	if (len == 0 || len > STORE_TYPE_NAME_MAX || (len == 4 && !memcmp(name, "meta", 4)))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Check the opts' type table and copy it into s->names. */
static int types_copy(store_t *s, const store_opts_t *opts, gpuq_diag_t *diag)
{
	for (unsigned i = 0; i < STORE_TYPE_MAX; i++) {
		const char *name = opts->types[i];
		if (!name)
			continue;
		if (!name_valid(name, strlen(name)))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "store type %u: bad name \"%.64s\" (want 1-%d of "
					     "[a-z0-9_-], not \"meta\")",
					     i, name, STORE_TYPE_NAME_MAX);
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(s->names[j], name))
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "store types %u and %u are both named \"%s\"",
						     j, i, name);
		gpuq_strlcpy(s->names[i], name, sizeof(s->names[i]));
	}
	return GPUQ_OK;
}

const char *store_type_name(const store_t *s, unsigned type)
{
	if (type >= STORE_TYPE_MAX || !s->names[type][0])
		return NULL;
	return s->names[type];
}

int store_type_find(const store_t *s, const char *name, unsigned *type)
{
	for (unsigned i = 0; i < STORE_TYPE_MAX; i++)
		if (s->names[i][0] && !strcmp(s->names[i], name)) {
			*type = i;
			return GPUQ_OK;
		}
	return GPUQ_ENOTFOUND;
}

/* ---- Opening ---- */

/* The first buffer of a write batch; it doubles up to STORE_BATCH_BYTES_MAX. */
#define BATCH_FIRST_CAP 4096u

/* Does the main database hold anything besides "meta"? (A store without a
 * schema key is only new when it holds nothing else.) */
static int main_db_foreign(MDB_txn *txn, bool *foreign)
{
	MDB_dbi main_dbi;
	MDB_cursor *cur;
	MDB_val k, v;
	int mrc = mdb_dbi_open(txn, NULL, 0, &main_dbi);

	if (mrc)
		return mrc;
	mrc = mdb_cursor_open(txn, main_dbi, &cur);
	if (mrc)
		return mrc;
	*foreign = false;
	for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !mrc;
	     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		if (k.mv_size != 4 || memcmp(k.mv_data, "meta", 4) != 0)
			*foreign = true;
	mdb_cursor_close(cur);
	return mrc == MDB_NOTFOUND ? MDB_SUCCESS : mrc;
}

/* Verify meta against its META_SUM; *sealed: it has one. */
static int meta_verify(store_t *s, MDB_txn *txn, bool *sealed, gpuq_diag_t *diag)
{
	uint64_t want;
	uint32_t got;
	int mrc = meta_uint_get(txn, s->meta, META_SUM, 4, &want);

	*sealed = mrc != MDB_NOTFOUND;
	if (mrc == MDB_NOTFOUND)
		return GPUQ_OK;
	if (!mrc)
		mrc = meta_sum(txn, s->meta, &got);
	if (mrc == MDB_CORRUPTED || (!mrc && got != want))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state store %s: store corrupt: its meta records (schema, "
				     "sequence number, type table) fail their checksum",
				     s->dir);
	return mrc ? fail_diag(s, diag, mrc, "reading meta") : GPUQ_OK;
}

/* Check the schema key (sealed: meta has its checksum); initialize a new
 * store. */
static int schema_check(store_t *s, MDB_txn *txn, bool sealed, uint64_t *out, gpuq_diag_t *diag)
{
	uint64_t schema;
	bool foreign;
	int mrc = meta_uint_get(txn, s->meta, META_SCHEMA, 4, &schema);

	if (mrc == MDB_NOTFOUND && !s->read_only) {
		mrc = main_db_foreign(txn, &foreign);
		if (mrc)
			return fail_diag(s, diag, mrc, "reading the database list");
		if (foreign)
			return gpuq_diag_set(
			    diag, GPUQ_ECORRUPT,
			    "state store %s: store corrupt or not a gpuq store: it "
			    "holds LMDB databases but no gpuq schema version",
			    s->dir);
		mrc = meta_uint_put(txn, s->meta, META_SCHEMA, 4, STORE_SCHEMA_VERSION);
		if (!mrc)
			mrc = meta_uint_put(txn, s->meta, META_SEQ, 8, 0);
		*out = STORE_SCHEMA_VERSION;
		return mrc ? fail_diag(s, diag, mrc, "initializing meta") : GPUQ_OK;
	}
	if (mrc == MDB_NOTFOUND)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state store %s: store corrupt: meta holds no schema version",
				     s->dir);
	if (mrc)
		return fail_diag(s, diag, mrc, "reading the schema version");
	if (schema == 0)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state store %s: store corrupt: schema version 0", s->dir);
	if (schema >= 3 && !sealed)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state store %s: store corrupt: schema %llu without the "
				     "checksum of its meta records",
				     s->dir, (unsigned long long)schema);
	if (schema > STORE_SCHEMA_VERSION)
		return gpuq_diag_set(
		    diag, GPUQ_ESTORE,
		    "state store %s: schema version %llu is newer than the %d this "
		    "gpuq understands; use a newer gpuq",
		    s->dir, (unsigned long long)schema, STORE_SCHEMA_VERSION);
	*out = schema;
	return GPUQ_OK;
}

/* A record's checksum: CRC-32C of its type id, key length, key and value. */
static uint32_t rec_crc(unsigned type, const void *key, size_t klen, const void *val, size_t vlen)
{
	unsigned char hdr[5] = {(unsigned char)type, (unsigned char)klen,
				(unsigned char)(klen >> 8), (unsigned char)(klen >> 16),
				(unsigned char)(klen >> 24)};
	uint32_t c = gpuq_crc32c(0, hdr, sizeof(hdr));

	c = gpuq_crc32c(c, key, klen);
	return gpuq_crc32c(c, val, vlen);
}

static void crc_put(unsigned char *at, uint32_t c)
{
	for (int i = 0; i < 4; i++)
		at[i] = (unsigned char)(c >> (8 * i));
}

static uint32_t crc_get(const unsigned char *at)
{
	return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 |
	       (uint32_t)at[3] << 24;
}

/* Put value v of key k into type's database with its checksum after it;
 * a value already stored byte for byte (its checksum too) is left as it
 * is: its leaf page is not copied and written again. (A core marks every
 * workload it moves; a BestEffortFIFO queue's set-aside workloads go back
 * to its heap at each finish and are set aside again, unchanged, in the
 * same cycle: 100,000 of them were a 40 MB commit per finished Job.) */
static int rec_put(store_t *s, MDB_txn *txn, unsigned type, MDB_val *k, const MDB_val *v)
{
	MDB_val r = {.mv_size = v->mv_size + 4, .mv_data = NULL}, old;
	uint32_t c = rec_crc(type, k->mv_data, k->mv_size, v->mv_data, v->mv_size);
	int mrc = mdb_get(txn, s->dbi[type], k, &old);

	if (!mrc && old.mv_size == r.mv_size && !memcmp(old.mv_data, v->mv_data, v->mv_size) &&
	    crc_get((const unsigned char *)old.mv_data + v->mv_size) == c) {
		s->kept_txn++;
		return MDB_SUCCESS;
	}
	mrc = mdb_put(txn, s->dbi[type], k, &r, MDB_RESERVE);
	if (mrc)
		return mrc;
	if (v->mv_size)
		memcpy(r.mv_data, v->mv_data, v->mv_size);
	crc_put((unsigned char *)r.mv_data + v->mv_size, c);
	return MDB_SUCCESS;
}

/* Schema 1 -> 2 inside the open transaction: every record rewritten with
 * its checksum (read whole first: LMDB's cursors do not survive a put that
 * changes a value's size). */
static int migrate_crc(store_t *s, MDB_txn *txn, gpuq_diag_t *diag)
{
	unsigned long long n = 0;

	for (unsigned i = 0; i < STORE_TYPE_MAX; i++) {
		MDB_cursor *cur;
		MDB_val k, v, *recs = NULL;
		size_t nrec = 0, cap = 0;
		int mrc;
		if (!s->names[i][0])
			continue;
		mrc = mdb_cursor_open(txn, s->dbi[i], &cur);
		for (mrc = mrc ? mrc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); !mrc;
		     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			unsigned char *copy;
			if (nrec + 2 > cap) {
				MDB_val *nr =
				    realloc(recs, (cap = cap ? 2 * cap : 64) * sizeof(*nr));
				if (!nr)
					break;
				recs = nr;
			}
			copy = malloc(k.mv_size + v.mv_size + 1);
			if (!copy)
				break;
			memcpy(copy, k.mv_data, k.mv_size);
			memcpy(copy + k.mv_size, v.mv_data, v.mv_size);
			recs[nrec++] = (MDB_val){k.mv_size, copy};
			recs[nrec++] = (MDB_val){v.mv_size, copy + k.mv_size};
		}
		mdb_cursor_close(cur);
		if (mrc == MDB_NOTFOUND)
			mrc = MDB_SUCCESS;
		else if (!mrc)
			mrc = ENOMEM;
		for (size_t r = 0; r < nrec; r += 2) {
			if (!mrc)
				mrc = rec_put(s, txn, i, &recs[r], &recs[r + 1]);
			free(recs[r].mv_data);
		}
		free(recs);
		n += nrec / 2;
		if (mrc) {
			char what[STORE_TYPE_NAME_MAX + 48];
			snprintf(what, sizeof(what), "adding checksums to the %s records",
				 s->names[i]);
			return fail_diag(s, diag, mrc, what);
		}
	}
	gpuq_log(GPUQ_LOG_INFO, "store", "%s: schema 1 -> 2: checksums added to %llu records",
		 s->dir, n);
	return GPUQ_OK;
}

/* Merge the recorded type table with the opts' one (already in s->names):
 * recorded names must match, ids only the opts name are recorded (write). */
static int types_merge(store_t *s, MDB_txn *txn, gpuq_diag_t *diag)
{
	for (unsigned i = 0; i < STORE_TYPE_MAX; i++) {
		char key[16];
		MDB_val k = {0, key}, v;
		int mrc;

		k.mv_size = (size_t)snprintf(key, sizeof(key), META_TYPE_FMT, i);
		mrc = mdb_get(txn, s->meta, &k, &v);
		if (mrc == MDB_NOTFOUND) {
			if (!s->names[i][0] || s->read_only)
				continue;
			v.mv_size = strlen(s->names[i]);
			v.mv_data = s->names[i];
			mrc = mdb_put(txn, s->meta, &k, &v, 0);
			if (mrc)
				return fail_diag(s, diag, mrc, "recording a type");
			continue;
		}
		if (mrc)
			return fail_diag(s, diag, mrc, "reading the type table");
		if (!name_valid(v.mv_data, v.mv_size))
			return gpuq_diag_set(
			    diag, GPUQ_ECORRUPT,
			    "state store %s: store corrupt: type %u has a bad recorded name",
			    s->dir, i);
		if (s->names[i][0] && (strlen(s->names[i]) != v.mv_size ||
				       memcmp(s->names[i], v.mv_data, v.mv_size) != 0))
			return gpuq_diag_set(
			    diag, GPUQ_ESTORE,
			    "state store %s: record type %u is \"%.*s\" in the store "
			    "but \"%s\" in this gpuq",
			    s->dir, i, (int)v.mv_size, (char *)v.mv_data, s->names[i]);
		memcpy(s->names[i], v.mv_data, v.mv_size);
		s->names[i][v.mv_size] = '\0';
	}
	for (unsigned i = 0; i < STORE_TYPE_MAX; i++)
		for (unsigned j = 0; j < i; j++)
			if (s->names[i][0] && !strcmp(s->names[i], s->names[j]))
				return gpuq_diag_set(diag, GPUQ_ESTORE,
						     "state store %s: type %u and %u both named "
						     "\"%s\"",
						     s->dir, j, i, s->names[i]);
	return GPUQ_OK;
}

/* Open (creating when writable) meta and the type sub-databases, check the
 * schema and the type table, read the sequence number; one transaction. */
static int layout_open(store_t *s, gpuq_diag_t *diag)
{
	unsigned create = s->read_only ? 0 : MDB_CREATE;
	uint64_t schema = 0;
	bool sealed = false;
	MDB_txn *txn;
	int rc, mrc = mdb_txn_begin(s->env, NULL, s->read_only ? MDB_RDONLY : 0, &txn);

	if (mrc)
		return fail_diag(s, diag, mrc, "beginning the open transaction");
	mrc = mdb_dbi_open(txn, "meta", create, &s->meta);
	if (mrc == MDB_NOTFOUND) {
		bool foreign = true;
		/* an environment holding nothing is a store whose creation was
		 * interrupted before its first commit: empty, not damaged */
		mrc = main_db_foreign(txn, &foreign);
		if (!mrc && !foreign) {
			s->blank = true;
			mdb_txn_abort(txn);
			return GPUQ_OK;
		}
		rc =
		    mrc ? fail_diag(s, diag, mrc, "reading the database list")
			: gpuq_diag_set(
			      diag, GPUQ_ECORRUPT,
			      "state store %s: store corrupt or not a gpuq store: no meta database",
			      s->dir);
		goto fail;
	}
	rc = mrc ? fail_diag(s, diag, mrc, "opening meta") : meta_verify(s, txn, &sealed, diag);
	if (!rc)
		rc = schema_check(s, txn, sealed, &schema, diag);
	if (rc)
		goto fail;
	rc = types_merge(s, txn, diag);
	if (rc)
		goto fail;
	for (unsigned i = 0; i < STORE_TYPE_MAX && !rc; i++) {
		if (!s->names[i][0])
			continue;
		mrc = mdb_dbi_open(txn, s->names[i], create, &s->dbi[i]);
		if (mrc == MDB_NOTFOUND)
			rc = gpuq_diag_set(
			    diag, GPUQ_ECORRUPT,
			    "state store %s: store corrupt: database of type \"%s\" is missing",
			    s->dir, s->names[i]);
		else if (mrc)
			rc = fail_diag(s, diag, mrc, "opening a type database");
	}
	if (!rc && schema < STORE_SCHEMA_VERSION && !s->read_only) {
		if (schema < 2)
			rc = migrate_crc(s, txn, diag);
		if (!rc && schema >= 2)
			gpuq_log(GPUQ_LOG_INFO, "store",
				 "%s: schema %llu -> %d: meta records sealed with their checksum",
				 s->dir, (unsigned long long)schema, STORE_SCHEMA_VERSION);
		if (!rc &&
		    (mrc = meta_uint_put(txn, s->meta, META_SCHEMA, 4, STORE_SCHEMA_VERSION)))
			rc = fail_diag(s, diag, mrc, "writing the schema version");
		schema = STORE_SCHEMA_VERSION;
	}
	s->crc = schema >= 2;
	if (!rc && (mrc = meta_uint_get(txn, s->meta, META_SEQ, 8, &s->seq)))
		rc =
		    mrc == MDB_NOTFOUND
			? gpuq_diag_set(diag, GPUQ_ECORRUPT,
					"state store %s: store corrupt: no sequence number", s->dir)
			: fail_diag(s, diag, mrc, "reading the sequence number");
	if (!rc && !s->read_only && (mrc = meta_seal(txn, s->meta)))
		rc = fail_diag(s, diag, mrc, "sealing meta");
	if (rc)
		goto fail;
	mrc = mdb_txn_commit(txn); /* keeps the dbi handles, read-only too */
	return mrc ? fail_diag(s, diag, mrc, "committing the open transaction") : GPUQ_OK;
fail:
	mdb_txn_abort(txn);
	return rc;
}

/* Adopt the map size recorded in the file (a grown store stays grown), but
 * never less than map_initial when writable. */
static int map_adopt(store_t *s, size_t initial, gpuq_diag_t *diag)
{
	MDB_envinfo info;
	int mrc = mdb_env_set_mapsize(s->env, 0);

	if (!mrc)
		mrc = mdb_env_info(s->env, &info);
	if (!mrc && info.me_mapsize < initial && !s->read_only) {
		mrc = mdb_env_set_mapsize(s->env, initial);
		info.me_mapsize = initial;
	}
	if (mrc)
		return fail_diag(s, diag, mrc, "setting the map size");
	s->map_size = info.me_mapsize;
	return GPUQ_OK;
}

static int env_open(store_t *s, size_t initial, gpuq_diag_t *diag)
{
	/* MDB_NORDAHEAD: no readahead and no fault-around on the map, so the
	 * pages resident in gpuq's memory are the ones LMDB read, not their
	 * neighbours (the store is small and read at random) */
	unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
	int dead = 0, mrc = mdb_env_create(&s->env);

	if (mrc)
		return fail_diag(s, diag, mrc, "creating the environment");
	if (s->read_only)
		flags |= MDB_RDONLY;
	if (s->nosync)
		flags |= MDB_NOSYNC | MDB_NOMETASYNC;
	mrc = mdb_env_set_maxdbs(s->env, STORE_TYPE_MAX + 1);
	if (!mrc)
		mrc = mdb_env_set_mapsize(s->env, initial);
	if (!mrc)
		mrc = mdb_env_open(s->env, s->dir, flags, 0600);
	if (mrc)
		return fail_diag(s, diag, mrc, "opening the environment");
	if (mdb_env_get_maxkeysize(s->env) < STORE_KEY_MAX)
		return gpuq_diag_set(diag, GPUQ_ESTORE,
				     "state store %s: liblmdb max key size %d < %d", s->dir,
				     mdb_env_get_maxkeysize(s->env), STORE_KEY_MAX);
	mrc = mdb_reader_check(s->env, &dead);
	if (mrc)
		return fail_diag(s, diag, mrc, "checking for stale readers");
	if (dead > 0)
		gpuq_log(GPUQ_LOG_INFO, "store", "%s: cleared %d stale reader slot(s)", s->dir,
			 dead);
	return map_adopt(s, initial, diag);
}

/* Snapshots the page check may take when a writer in another process keeps
 * committing twice while it reads (each try reads the whole store once). */
#define PAGES_TRIES 8

/* Check data.mdb's pages (store_pages_check) inside a read snapshot, before
 * LMDB reads any page of it: LMDB asserts (abort) or reads outside its map
 * on a damaged page, so damage must be found here, as "store corrupt". */
static int pages_check(store_t *s, gpuq_diag_t *diag)
{
	MDB_stat st;
	MDB_txn *txn;
	mdb_filehandle_t fd;
	int rc = GPUQ_EAGAIN, mrc = mdb_env_stat(s->env, &st); /* reads the meta pages only */

	if (!mrc)
		mrc = mdb_env_get_fd(s->env, &fd);
	if (mrc)
		return fail_diag(s, diag, mrc, "reading the environment");
	for (int i = 0; i < PAGES_TRIES && rc == GPUQ_EAGAIN; i++) {
		mrc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn); /* reads no tree page */
		if (mrc)
			return fail_diag(s, diag, mrc, "beginning the page check");
		rc = store_pages_check(fd, st.ms_psize, mdb_txn_id(txn), s->dir, diag);
		mdb_txn_abort(txn);
	}
	if (rc == GPUQ_EAGAIN)
		return gpuq_diag_set(diag, rc,
				     "state store %s: a writer committed throughout %d page checks",
				     s->dir, PAGES_TRIES);
	return rc;
}

/* From the files on: data.mdb checked, LMDB opened, every page checked,
 * meta read, the marker written once the layout is committed (from then on
 * a short data.mdb is damage). */
static int files_open(store_t *s, gpuq_diag_t *diag)
{
	int rc = store_data_check(s->dir, diag);

	if (!rc && !s->read_only)
		rc = store_data_reset_short(s->dir, diag);
	if (!rc && !s->blank) /* a blank read-only store has no environment */
		rc = env_open(s, s->map_initial, diag);
	if (!rc && !s->blank)
		rc = pages_check(s, diag);
	if (!rc && !s->blank)
		rc = layout_open(s, diag);
	if (!rc && !s->read_only && !store_marker_present(s->dir)) {
		int mrc = s->nosync ? mdb_env_sync(s->env, 1) : MDB_SUCCESS;
		rc = mrc ? fail_diag(s, diag, mrc, "flushing the new store")
			 : store_marker_write(s->dir, diag);
	}
	return rc;
}

/* Close the environment, keeping the rest of s (its names, lock, batch). */
static void env_drop(store_t *s)
{
	if (s->env)
		mdb_env_close(s->env);
	s->env = NULL;
	s->meta = 0;
	memset(s->dbi, 0, sizeof(s->dbi));
	s->map_size = s->file_size = 0;
	s->crc = false;
	s->seq = 0;
}

/* files_open; a store it finds corrupt is moved aside and a new one opened
 * in its place when the caller asked (set_aside_corrupt, writable only). */
static int files_open_or_set_aside(store_t *s, gpuq_diag_t *diag)
{
	gpuq_diag_t why = {{0}};
	int rc;

	s->aside[0] = '\0';
	if (!s->read_only && store_fault_set())
		gpuq_log(GPUQ_LOG_WARN, "store",
			 "%s: %s is set: commits fail (fault injection for tests)", s->dir,
			 STORE_FAULT_COMMITS_ENV);
	rc = files_open(s, &why);
	if (rc != GPUQ_ECORRUPT || s->read_only || !s->set_aside_corrupt) {
		if (rc)
			gpuq_diag_set(diag, rc, "%s", why.msg);
		return rc;
	}
	env_drop(s);
	rc = store_set_aside(s->dir, why.msg[0] ? why.msg : "store corrupt", s->aside,
			     sizeof(s->aside), diag);
	return rc ? rc : files_open(s, diag);
}

int store_open(const char *dir, const store_opts_t *opts, store_t **out, gpuq_diag_t *diag)
{
	size_t initial = opts->map_initial ? opts->map_initial : STORE_MAP_INITIAL_DEFAULT;
	size_t max = opts->map_max ? opts->map_max : STORE_MAP_MAX_DEFAULT;
	store_t *s;
	int rc;

	*out = NULL;
	if (!dir || !dir[0] || strlen(dir) > STORE_PATH_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "state store directory: empty or longer than %d",
				     STORE_PATH_MAX);
	if (initial < MAP_MIN || max < initial)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "state store %s: map sizes %zu..%zu invalid (min %zu, "
				     "initial <= max)",
				     dir, initial, max, MAP_MIN);
	s = calloc(1, sizeof(*s));
	if (!s)
		return GPUQ_ENOMEM;
	gpuq_strlcpy(s->dir, dir, sizeof(s->dir));
	s->read_only = opts->read_only;
	s->nosync = opts->nosync;
	s->map_initial = initial;
	s->map_max = max;
	s->set_aside_corrupt = opts->set_aside_corrupt;
	s->lock_fd = -1;
	s->batch.store = s;
	rc = opts->read_only ? store_dir_probe(dir, &s->blank, diag) : types_copy(s, opts, diag);
	if (!rc && !opts->read_only)
		rc = store_dir_make(dir, diag);
	if (!rc && !opts->read_only) /* before any file of the store is touched */
		rc = store_lock_take(dir, &s->lock_fd, diag);
	if (!rc)
		rc = files_open_or_set_aside(s, diag);
	if (rc) {
		store_close(s);
		return rc;
	}
	*out = s;
	return GPUQ_OK;
}

int store_reopen(store_t *s, gpuq_diag_t *diag)
{
	int rc;

	if (s->read_only)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "state store %s: reopen: read-only",
				     s->dir);
	GPUQ_ASSERT(!s->batch.open && s->reading == 0 && !s->snap);
	if (s->env && s->nosync)
		(void)mdb_env_sync(s->env, 1); /* best effort: what committed stays */
	env_drop(s);
	rc = files_open_or_set_aside(s, diag);
	if (rc)
		env_drop(s);
	else
		gpuq_log(GPUQ_LOG_INFO, "store", "%s: reopened at commit %llu", s->dir,
			 (unsigned long long)s->seq);
	return rc;
}

const char *store_moved_aside(const store_t *s)
{
	return s->aside[0] ? s->aside : NULL;
}

void store_close(store_t *s)
{
	if (!s)
		return;
	store_snapshot_end(s);
	GPUQ_ASSERT(s->reading == 0);
	if (s->env && s->nosync && !s->read_only) {
		int mrc = mdb_env_sync(s->env, 1); /* a clean close is durable in every mode */
		if (mrc)
			fail(s, mrc, "flushing at close");
	}
	if (s->env)
		mdb_env_close(s->env);
	store_lock_drop(s->lock_fd); /* last: the files are the next writer's now */
	free(s->batch.buf);
	free(s);
}

/* ---- Transactions ---- */

/* Begin an LMDB transaction; when another process grew the map, adopt its
 * size first (only possible with no snapshot open in this process). */
static int txn_begin(store_t *s, unsigned flags, MDB_txn **txn)
{
	MDB_envinfo info;
	int mrc = mdb_txn_begin(s->env, NULL, flags, txn);

	if (mrc != MDB_MAP_RESIZED || s->reading)
		return mrc;
	mrc = mdb_env_set_mapsize(s->env, 0);
	if (!mrc && !mdb_env_info(s->env, &info))
		s->map_size = info.me_mapsize;
	return mrc ? mrc : mdb_txn_begin(s->env, NULL, flags, txn);
}

/* Double the map (up to the cap). No transaction may be open. */
static int map_grow(store_t *s)
{
	size_t want = s->map_size > s->map_max / 2 ? s->map_max : s->map_size * 2;
	int mrc;

	if (s->map_size >= s->map_max) {
		gpuq_log(GPUQ_LOG_ERROR, "store", "%s: map full at its cap of %zu bytes", s->dir,
			 s->map_max);
		return GPUQ_ELIMIT;
	}
	mrc = mdb_env_set_mapsize(s->env, want);
	if (mrc)
		return fail(s, mrc, "growing the map from %zu to %zu bytes", s->map_size, want);
	gpuq_log(GPUQ_LOG_INFO, "store", "%s: map grown from %zu to %zu bytes", s->dir, s->map_size,
		 want);
	s->map_size = want;
	s->grows++;
	return GPUQ_OK;
}

int store_txn_begin(store_t *s, store_txn_t **out)
{
	*out = NULL;
	if (s->read_only)
		return GPUQ_EINVAL;
	if (s->batch.open)
		return GPUQ_EAGAIN;
	if (!s->env)
		return GPUQ_ESTORE; /* a failed store_reopen */
	s->batch.open = true;
	s->batch.rc = GPUQ_OK;
	s->batch.len = 0;
	s->batch.ops = 0;
	*out = &s->batch;
	return GPUQ_OK;
}

static int batch_add(store_txn_t *t, uint8_t kind, unsigned type, const void *key, size_t klen,
		     const void *val, size_t vlen)
{
	op_hdr_t hdr = {kind, (uint8_t)type, (uint16_t)klen, (uint32_t)vlen};
	size_t need = sizeof(hdr) + klen + vlen;

	GPUQ_ASSERT(t->open);
	if (t->rc)
		return t->rc;
	if (type >= STORE_TYPE_MAX || !t->store->names[type][0] || !key || klen == 0 ||
	    klen > STORE_KEY_MAX || vlen > STORE_VALUE_MAX || (vlen && !val))
		return t->rc = GPUQ_EINVAL;
	if (need > STORE_BATCH_BYTES_MAX - t->len)
		return t->rc = GPUQ_ELIMIT;
	if (t->len + need > t->cap) {
		size_t cap = t->cap ? t->cap : BATCH_FIRST_CAP;
		unsigned char *buf;
		while (cap < t->len + need)
			cap *= 2;
		buf = realloc(t->buf, cap);
		if (!buf)
			return t->rc = GPUQ_ENOMEM;
		t->buf = buf;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, &hdr, sizeof(hdr));
	memcpy(t->buf + t->len + sizeof(hdr), key, klen);
	if (vlen)
		memcpy(t->buf + t->len + sizeof(hdr) + klen, val, vlen);
	t->len += need;
	t->ops++;
	return GPUQ_OK;
}

int store_put(store_txn_t *txn, unsigned type, const void *key, size_t klen, const void *val,
	      size_t vlen)
{
	return batch_add(txn, OP_PUT, type, key, klen, val, vlen);
}

int store_del(store_txn_t *txn, unsigned type, const void *key, size_t klen)
{
	return batch_add(txn, OP_DEL, type, key, klen, NULL, 0);
}

int store_txn_error(const store_txn_t *txn)
{
	return txn->rc;
}

int store_txn_fail(store_txn_t *txn, int rc)
{
	GPUQ_ASSERT(txn->open && rc < 0);
	if (!txn->rc)
		txn->rc = rc;
	return txn->rc;
}

/* Apply every op of the batch and the new sequence number in one write
 * transaction and commit it. Returns an MDB code (MDB_MAP_FULL: retry after
 * growing); *where names the step that failed. */
static int batch_apply(store_t *s, const store_txn_t *t, uint64_t *seq, const char **where)
{
	MDB_txn *txn;
	uint64_t cur;
	int mrc = txn_begin(s, 0, &txn);

	*where = "beginning the write transaction";
	if (mrc)
		return mrc;
	s->kept_txn = 0;
	*where = "reading the sequence number";
	mrc = meta_uint_get(txn, s->meta, META_SEQ, 8, &cur);
	if (!mrc)
		*where = "writing a record";
	for (size_t off = 0; !mrc && off < t->len;) {
		op_hdr_t hdr;
		MDB_val k, v;
		memcpy(&hdr, t->buf + off, sizeof(hdr));
		k.mv_size = hdr.klen;
		k.mv_data = t->buf + off + sizeof(hdr);
		v.mv_size = hdr.vlen;
		v.mv_data = t->buf + off + sizeof(hdr) + hdr.klen;
		off += sizeof(hdr) + hdr.klen + hdr.vlen;
		if (hdr.kind == OP_PUT)
			mrc = rec_put(s, txn, hdr.type, &k, &v);
		else if ((mrc = mdb_del(txn, s->dbi[hdr.type], &k, NULL)) == MDB_NOTFOUND)
			mrc = MDB_SUCCESS;
	}
	if (!mrc) {
		*where = "writing the sequence number";
		mrc = meta_uint_put(txn, s->meta, META_SEQ, 8, cur + 1);
	}
	if (!mrc) {
		*where = "sealing meta";
		mrc = meta_seal(txn, s->meta);
	}
	if (mrc) {
		mdb_txn_abort(txn);
		return mrc;
	}
	*where = "committing";
	mrc = mdb_txn_commit(txn);
	if (!mrc) {
		*seq = cur + 1;
		s->kept += s->kept_txn;
	}
	return mrc;
}

/* End the batch: reset it, release a big buffer. */
static void batch_end(store_txn_t *t)
{
	t->open = false;
	t->len = 0;
	t->ops = 0;
	t->rc = GPUQ_OK;
	if (t->cap > BATCH_KEEP_MAX) {
		free(t->buf);
		t->buf = NULL;
		t->cap = 0;
	}
}

int store_txn_commit(store_txn_t *txn, uint64_t *seq)
{
	store_t *s = txn->store;
	const char *where = "";
	uint64_t next = 0;
	int rc = txn->rc, mrc;

	GPUQ_ASSERT(txn->open);
	GPUQ_ASSERT(s->reading == 0); /* map growth would unmap a scan's records */
	if (rc || txn->ops == 0) {
		if (!rc && seq)
			*seq = s->seq;
		batch_end(txn);
		return rc;
	}
	if (store_fault_commit_now()) {
		gpuq_log(GPUQ_LOG_ERROR, "store", "%s: commit of %zu ops: failed by %s", s->dir,
			 txn->ops, STORE_FAULT_COMMITS_ENV);
		batch_end(txn);
		return GPUQ_EIO;
	}
	while ((mrc = batch_apply(s, txn, &next, &where)) == MDB_MAP_FULL) {
		rc = map_grow(s);
		if (rc)
			break;
	}
	if (!rc && mrc)
		rc = fail(s, mrc, "commit of %zu ops (%zu bytes): %s", txn->ops, txn->len, where);
	if (!rc) {
		s->seq = next;
		if (seq)
			*seq = next;
	}
	batch_end(txn);
	return rc;
}

void store_txn_abort(store_txn_t *txn)
{
	if (txn && txn->open)
		batch_end(txn);
}

/* ---- Reading ---- */

static int read_begin(store_t *s, MDB_txn **txn)
{
	int mrc;

	if (s->snap) { /* every read inside a snapshot shares its transaction */
		*txn = s->snap;
		return GPUQ_OK;
	}
	mrc = txn_begin(s, MDB_RDONLY, txn);
	struct stat st;
	mdb_filehandle_t fd;

	if (mrc)
		return fail(s, mrc, "beginning a read transaction");
	/* data.mdb's size, to bound what a read returns */
	if (mdb_env_get_fd(s->env, &fd) || fstat(fd, &st)) {
		mdb_txn_abort(*txn);
		return fail(s, MDB_PANIC, "reading the store's size");
	}
	s->file_size = (size_t)st.st_size;
	return GPUQ_OK;
}

static void read_end(store_t *s, MDB_txn *txn)
{
	if (txn != s->snap)
		mdb_txn_abort(txn);
}

int store_snapshot_begin(store_t *s)
{
	MDB_txn *txn;
	int rc;

	if (s->snap)
		return GPUQ_EINVAL;
	if (!s->env)
		return GPUQ_OK; /* blank: nothing to hold */
	rc = read_begin(s, &txn);
	if (rc)
		return rc;
	s->snap = txn;
	s->reading++; /* no map growth (and no commit) under it */
	return GPUQ_OK;
}

void store_snapshot_end(store_t *s)
{
	if (!s || !s->snap)
		return;
	mdb_txn_abort(s->snap);
	s->snap = NULL;
	s->reading--;
}

/* A record as LMDB gave it has lengths within the store's bounds and the
 * file's size (a damaged page can give any length; LMDB does not say where
 * its map is, so an address past the file is left to the tools' fault
 * guard, cmd_store_fault_guard). */
static bool record_sane(const store_t *s, const MDB_val *k, const MDB_val *v)
{
	return k->mv_size >= 1 && k->mv_size <= STORE_KEY_MAX &&
	       v->mv_size <= STORE_VALUE_MAX + (s->crc ? 4 : 0) && v->mv_size <= s->file_size;
}

/* A record as read: sane, its checksum verified and stripped from *v.
 * GPUQ_ECORRUPT (logged, naming the record) otherwise. */
static int rec_open(store_t *s, unsigned type, const MDB_val *k, MDB_val *v)
{
	char shown[64];
	size_t n;
	bool sane = record_sane(s, k, v);

	if (sane && s->crc && v->mv_size >= 4) {
		size_t len = v->mv_size - 4;
		if (crc_get((const unsigned char *)v->mv_data + len) ==
		    rec_crc(type, k->mv_data, k->mv_size, v->mv_data, len)) {
			v->mv_size = len;
			return GPUQ_OK;
		}
	} else if (sane && !s->crc) {
		return GPUQ_OK;
	}
	/* the key as far as it is printable */
	n = sane ? k->mv_size : 0;
	if (n > sizeof(shown) - 1)
		n = sizeof(shown) - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = ((const unsigned char *)k->mv_data)[i];
		shown[i] = (char)(ch >= 0x20 && ch < 0x7f ? ch : '?');
	}
	shown[n] = '\0';
	gpuq_log(GPUQ_LOG_ERROR, "store", "%s: store corrupt: %s record \"%s\": %s", s->dir,
		 s->names[type], shown,
		 sane ? "fails its checksum" : "its key or value length is out of bounds");
	return GPUQ_ECORRUPT;
}

/* Walk one type's records inside an open read transaction. */
static int scan_txn(store_t *s, MDB_txn *txn, unsigned type, store_scan_cb cb, void *ctx)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = 0, mrc = mdb_cursor_open(txn, s->dbi[type], &cur);

	if (mrc)
		return fail(s, mrc, "opening a cursor on %s", s->names[type]);
	s->reading++;
	for (mrc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !mrc;
	     mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		rc = rec_open(s, type, &k, &v);
		if (rc)
			break;
		rc = cb(ctx, type, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
		if (rc)
			break;
	}
	s->reading--;
	mdb_cursor_close(cur);
	if (!rc && mrc != MDB_NOTFOUND)
		rc = fail(s, mrc, "scanning %s", s->names[type]);
	return rc;
}

int store_scan(store_t *s, unsigned type, store_scan_cb cb, void *ctx)
{
	MDB_txn *txn;
	int rc;

	if (!store_type_name(s, type))
		return GPUQ_EINVAL;
	rc = read_begin(s, &txn);
	if (rc)
		return rc;
	rc = scan_txn(s, txn, type, cb, ctx);
	read_end(s, txn);
	return rc;
}

int store_get(store_t *s, unsigned type, const void *key, size_t klen, void **val, size_t *vlen)
{
	MDB_val k = {klen, (void *)key}, v;
	MDB_txn *txn;
	int rc, mrc;

	*val = NULL;
	*vlen = 0;
	if (!store_type_name(s, type) || !key || klen == 0 || klen > STORE_KEY_MAX)
		return GPUQ_EINVAL;
	rc = read_begin(s, &txn);
	if (rc)
		return rc;
	mrc = mdb_get(txn, s->dbi[type], &k, &v);
	if (mrc == MDB_NOTFOUND)
		rc = GPUQ_ENOTFOUND;
	else if (mrc)
		rc = fail(s, mrc, "reading a %s record", s->names[type]);
	else if ((rc = rec_open(s, type, &k, &v)))
		; /* logged */
	else if (!(*val = malloc(v.mv_size ? v.mv_size : 1)))
		rc = GPUQ_ENOMEM;
	else {
		memcpy(*val, v.mv_data, v.mv_size);
		*vlen = v.mv_size;
	}
	read_end(s, txn);
	return rc;
}

static int seq_txn(store_t *s, MDB_txn *txn, uint64_t *seq)
{
	int mrc =
	    s->blank ? (*seq = 0, MDB_SUCCESS) : meta_uint_get(txn, s->meta, META_SEQ, 8, seq);

	return mrc ? fail(s, mrc, "reading the sequence number") : GPUQ_OK;
}

int store_seq_get(store_t *s, uint64_t *seq)
{
	MDB_txn *txn;
	int rc;

	*seq = 0;
	if (!s->env)
		return GPUQ_OK; /* blank */
	rc = read_begin(s, &txn);
	if (rc)
		return rc;
	rc = seq_txn(s, txn, seq);
	read_end(s, txn);
	return rc;
}

int store_info_get(store_t *s, store_info_t *info)
{
	MDB_envinfo ei;
	MDB_stat st;
	MDB_txn *txn;
	uint64_t schema = 0;
	int mrc, rc;

	memset(info, 0, sizeof(*info));
	info->map_max = s->map_max;
	info->puts_kept = s->kept;
	if (!s->env)
		return GPUQ_OK; /* blank: nothing, not even a map */
	rc = read_begin(s, &txn);
	if (rc)
		return rc;
	rc = seq_txn(s, txn, &info->seq);
	mrc = s->blank ? MDB_SUCCESS : meta_uint_get(txn, s->meta, META_SCHEMA, 4, &schema);
	if (!rc && mrc)
		rc = fail(s, mrc, "reading the schema version");
	for (unsigned i = 0; i < STORE_TYPE_MAX && !rc; i++) {
		if (!s->names[i][0])
			continue;
		mrc = mdb_stat(txn, s->dbi[i], &st);
		if (mrc)
			rc = fail(s, mrc, "counting %s", s->names[i]);
		info->counts[i] = st.ms_entries;
	}
	if (!rc && ((mrc = mdb_env_info(s->env, &ei)) || (mrc = mdb_env_stat(s->env, &st))))
		rc = fail(s, mrc, "reading environment info");
	read_end(s, txn);
	if (rc)
		return rc;
	info->schema = (uint32_t)schema;
	info->page_size = st.ms_psize;
	info->map_size = ei.me_mapsize;
	info->map_used = (ei.me_last_pgno + 1) * (size_t)st.ms_psize;
	info->map_max = s->map_max;
	info->readers = ei.me_numreaders;
	info->grows = s->grows;
	return GPUQ_OK;
}

/* ---- Digest ---- */

static void fnv(uint64_t *h, const void *p, size_t n)
{
	*h = gpuq_fnv1a(*h, p, n);
}

static void fnv_len(uint64_t *h, size_t n)
{
	unsigned char le[4];

	le_put(le, n, sizeof(le));
	fnv(h, le, sizeof(le));
}

static int digest_record(void *ctx, unsigned type, const void *key, size_t klen, const void *val,
			 size_t vlen)
{
	uint64_t *h = ctx;

	(void)type;
	fnv_len(h, klen);
	fnv(h, key, klen);
	fnv_len(h, vlen);
	fnv(h, val, vlen);
	return 0;
}

int store_digest(store_t *s, uint64_t *digest)
{
	uint64_t h = GPUQ_FNV1A_BASIS;
	MDB_txn *txn;
	int rc;

	*digest = h;
	if (!s->env)
		return GPUQ_OK; /* blank: the digest of no records */
	rc = read_begin(s, &txn);
	if (rc)
		return rc;
	for (unsigned i = 0; i < STORE_TYPE_MAX && !rc; i++) {
		unsigned char id = (unsigned char)i;
		if (!s->names[i][0])
			continue;
		fnv(&h, &id, 1);
		fnv_len(&h, strlen(s->names[i]));
		fnv(&h, s->names[i], strlen(s->names[i]));
		rc = scan_txn(s, txn, i, digest_record, &h);
	}
	read_end(s, txn);
	if (!rc)
		*digest = h;
	return rc;
}

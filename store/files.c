/* store/files.c: the state directory's files around LMDB's own: the
 * directory made, data.mdb's header checked before LMDB maps it, the commit
 * marker, a blank data.mdb reset; the writer lock (one writing process per
 * store); a corrupt store moved aside; the commit fault of the tests. */
#include "store/store.h"
#include "store/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* mkdir -p with mode 0700 for the components it creates. */
int store_dir_make(const char *dir, gpuq_diag_t *diag)
{
	char path[STORE_PATH_MAX + 1];
	struct stat st;
	size_t len = strlen(dir);

	memcpy(path, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0700) && errno != EEXIST)
			return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: cannot create %s: %s",
					     dir, path, strerror(errno));
		path[i] = dir[i];
	}
	if (stat(dir, &st))
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: not a directory", dir);
	return GPUQ_OK;
}

/* The page size when sysconf cannot tell (LMDB's pages are the OS page). */
#define PAGE_FALLBACK 4096

/* data.mdb shorter than LMDB's two meta pages (one OS page each) holds no
 * committed transaction. */
static bool data_short(const struct stat *st)
{
	long page = sysconf(_SC_PAGESIZE);

	return st->st_size < 2 * (off_t)(page > 0 ? page : PAGE_FALLBACK);
}

/* Beside data.mdb once the store held a commit: from then on a missing,
 * emptied or short data.mdb is damage, never a store to create afresh. */
#define MARKER_NAME "committed"
#define MARKER_TEXT                                                                                \
	"gpuq state store: data.mdb here has held commits; if it is missing or short, the "        \
	"store is damaged (restore it, or remove this directory to start empty)\n"

bool store_marker_present(const char *dir)
{
	char path[STORE_PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/" MARKER_NAME, dir);
	return access(path, F_OK) == 0;
}

/* Write the marker (file and directory entry durable). */
int store_marker_write(const char *dir, gpuq_diag_t *diag)
{
	char path[STORE_PATH_MAX + 16];
	size_t len = strlen(MARKER_TEXT);
	int fd, dfd, ok;

	snprintf(path, sizeof(path), "%s/" MARKER_NAME, dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: writing %s: %s", dir,
				     MARKER_NAME, strerror(errno));
	ok = write(fd, MARKER_TEXT, len) == (ssize_t)len && fsync(fd) == 0;
	close(fd);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		ok = ok && fsync(dfd) == 0;
		close(dfd);
	}
	return ok ? GPUQ_OK
		  : gpuq_diag_set(diag, GPUQ_EIO, "state store %s: writing %s: %s", dir,
				  MARKER_NAME, strerror(errno));
}

/* Remove the marker (durably: the directory synced), so a store moved
 * aside leaves room for a new one. */
int store_marker_remove(const char *dir, gpuq_diag_t *diag)
{
	char path[STORE_PATH_MAX + 16];
	int dfd;

	snprintf(path, sizeof(path), "%s/" MARKER_NAME, dir);
	if (unlink(path) && errno != ENOENT)
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: removing %s: %s", dir,
				     MARKER_NAME, strerror(errno));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd); /* the renames and removals above, and this */
		close(dfd);
	}
	return GPUQ_OK;
}

/* LMDB's header, as its meta pages hold it (lmdb's MDB_meta after the
 * 16-byte page header; the page size is in the free database's md_pad). */
#define META_OFF 16			 /* page header */
#define META_MAGIC 0xBEEFC0DEu		 /* mm_magic */
#define META_PSIZE_OFF (META_OFF + 24)	 /* mm_dbs[0].md_pad */
#define META_LASTPG_OFF (META_OFF + 120) /* mm_last_pg */
#define META_TXNID_OFF (META_OFF + 128)	 /* mm_txnid */
#define META_BYTES (META_TXNID_OFF + 8)

/* The file size data.mdb's newest valid meta page needs ((last page + 1) x
 * page size) into *need; GPUQ_ECORRUPT when neither meta page is LMDB's. */
static int data_need(int fd, off_t size, off_t *need)
{
	unsigned char m[2][META_BYTES];
	uint32_t psize;
	uint64_t best = 0;
	bool any = false;

	if (pread(fd, m[0], META_BYTES, 0) != (ssize_t)META_BYTES ||
	    get32(m[0] + META_OFF) != META_MAGIC)
		return GPUQ_ECORRUPT;
	psize = get32(m[0] + META_PSIZE_OFF);
	if (psize < 512 || psize > (1u << 20) || (psize & (psize - 1)) || size < 2 * (off_t)psize)
		return GPUQ_ECORRUPT;
	if (pread(fd, m[1], META_BYTES, psize) != (ssize_t)META_BYTES)
		return GPUQ_ECORRUPT;
	for (int i = 0; i < 2; i++) {
		uint64_t txnid = get64(m[i] + META_TXNID_OFF), last = get64(m[i] + META_LASTPG_OFF);
		if (get32(m[i] + META_OFF) != META_MAGIC || (any && txnid < best))
			continue;
		if (last >= (uint64_t)INT64_MAX / psize)
			return GPUQ_ECORRUPT;
		best = txnid;
		any = true;
		*need = (off_t)((last + 1) * psize);
	}
	return any ? GPUQ_OK : GPUQ_ECORRUPT;
}

/* Refuse a damaged data.mdb before LMDB maps it (a page past the end of the
 * file is a SIGBUS inside LMDB): not a regular file; missing, empty or
 * shorter than its header in a store that held commits (the marker);
 * shorter than its newest meta page says. */
int store_data_check(const char *dir, gpuq_diag_t *diag)
{
	char data[STORE_PATH_MAX + 16];
	bool held = store_marker_present(dir);
	struct stat st;
	off_t need = 0;
	int fd, rc;

	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	if (lstat(data, &st)) {
		if (errno == ENOENT && !held)
			return GPUQ_OK;
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state store %s: store corrupt: data.mdb: %s, but the store "
				     "has held commits (%s)",
				     dir, strerror(errno), MARKER_NAME);
	}
	if (!S_ISREG(st.st_mode))
		return gpuq_diag_set(
		    diag, GPUQ_ECORRUPT,
		    "state store %s: store corrupt: data.mdb is not a regular file", dir);
	if (data_short(&st))
		return held ? gpuq_diag_set(
				  diag, GPUQ_ECORRUPT,
				  "state store %s: store corrupt: data.mdb has %lld bytes, "
				  "less than its header, but the store has held commits (%s)",
				  dir, (long long)st.st_size, MARKER_NAME)
			    : GPUQ_OK; /* creation interrupted: see data_reset_short */
	fd = open(data, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: data.mdb: %s", dir,
				     strerror(errno));
	rc = data_need(fd, st.st_size, &need);
	close(fd);
	if (rc)
		return gpuq_diag_set(
		    diag, GPUQ_ECORRUPT,
		    "state store %s: store corrupt: data.mdb has no valid LMDB header", dir);
	if (st.st_size < need)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "state store %s: store corrupt: data.mdb has %lld bytes, its "
				     "header says %lld (truncated)",
				     dir, (long long)st.st_size, (long long)need);
	return GPUQ_OK;
}

/* A read-only open needs an existing store: say clearly when there is none.
 * *blank: data.mdb exists but was never initialized (see data_reset_short). */
int store_dir_probe(const char *dir, bool *blank, gpuq_diag_t *diag)
{
	char data[STORE_PATH_MAX + 16];
	struct stat st;

	if (stat(dir, &st))
		return gpuq_diag_set(diag, errno == ENOENT ? GPUQ_ENOTFOUND : GPUQ_EIO,
				     "state store %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: not a directory", dir);
	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	if (stat(data, &st) && errno == ENOENT && store_marker_present(dir))
		return store_data_check(dir, diag); /* held commits: damaged, not "no store" */
	if (stat(data, &st))
		return gpuq_diag_set(diag, errno == ENOENT ? GPUQ_ENOTFOUND : GPUQ_EIO,
				     "state store %s: no store here (data.mdb: %s)", dir,
				     strerror(errno));
	*blank = data_short(&st);
	return GPUQ_OK;
}

/* A writer killed inside its first store_open may leave data.mdb shorter
 * than LMDB's two meta pages (the file exists, its header is not written):
 * nothing was ever committed there. LMDB initializes an empty file itself
 * but refuses a partial header, so a partial one is emptied first. */
int store_data_reset_short(const char *dir, gpuq_diag_t *diag)
{
	char data[STORE_PATH_MAX + 16];
	struct stat st;

	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	if (stat(data, &st) || st.st_size == 0 || !data_short(&st) || store_marker_present(dir))
		return GPUQ_OK; /* (with the marker, data_check has refused it) */
	gpuq_log(GPUQ_LOG_WARN, "store",
		 "%s: data.mdb has %lld bytes, less than its header: creation was interrupted; "
		 "initializing",
		 dir, (long long)st.st_size);
	if (truncate(data, 0))
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: emptying data.mdb: %s", dir,
				     strerror(errno));
	return GPUQ_OK;
}

/* ---- One writer per store ---- */

/* The writer lock's file in the state directory: flock(2)ed exclusively by
 * the writing process, holding its pid in decimal for the message a second
 * writer gets. Never removed (removing a lock file races with its next
 * taker); the lock, not the file, is what counts, and the kernel drops it
 * with the process, kill -9 included. */
#define LOCK_NAME "writer.lock"

/* The pid recorded in the lock file fd, or 0 when it holds none. */
static long lock_holder(int fd)
{
	char buf[24];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid = 0;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9' && pid < 1L << 40; i++)
		pid = pid * 10 + (buf[i] - '0');
	return pid;
}

int store_lock_take(const char *dir, int *out, gpuq_diag_t *diag)
{
	char path[STORE_PATH_MAX + 16], pid[24];
	int fd, n;

	*out = -1;
	snprintf(path, sizeof(path), "%s/" LOCK_NAME, dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: %s: %s", dir, LOCK_NAME,
				     strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno;
		long holder = err == EWOULDBLOCK ? lock_holder(fd) : 0;

		close(fd);
		if (err != EWOULDBLOCK)
			return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: locking %s: %s", dir,
					     LOCK_NAME, strerror(err));
		if (holder > 0)
			return gpuq_diag_set(
			    diag, GPUQ_EAGAIN,
			    "state store %s: another process writes this store (pid %ld holds "
			    "%s): one writer per store; stop it or give each its own "
			    "--state-dir",
			    dir, holder, LOCK_NAME);
		return gpuq_diag_set(diag, GPUQ_EAGAIN,
				     "state store %s: another process writes this store (it holds "
				     "%s, its pid unknown): one writer per store; stop it or give "
				     "each its own --state-dir",
				     dir, LOCK_NAME);
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, (size_t)n, 0) != n)
		gpuq_log(GPUQ_LOG_WARN, "store", "%s: cannot record the pid in %s: %s", dir,
			 LOCK_NAME, strerror(errno)); /* the lock holds all the same */
	*out = fd;
	return GPUQ_OK;
}

void store_lock_drop(int fd)
{
	if (fd >= 0)
		close(fd); /* the lock goes with the last descriptor of its file */
}

/* ---- A corrupt store moved aside ---- */

int store_set_aside(const char *dir, const char *why, char *to, size_t cap, gpuq_diag_t *diag)
{
	char data[STORE_PATH_MAX + 16], path[STORE_PATH_MAX + 16], stamp[32];
	time_t now = time(NULL);

	snprintf(data, sizeof(data), "%s/data.mdb", dir);
	if (!gpuq_time_format((int64_t)now * 1000, GPUQ_TIME_BASIC, stamp, sizeof(stamp)))
		snprintf(stamp, sizeof(stamp), "%lld", (long long)now);
	/* a second damage within the same second gets its own name */
	for (int i = 0; i < 100; i++) {
		if (i == 0)
			snprintf(to, cap, "%s/data.mdb.corrupt-%s", dir, stamp);
		else
			snprintf(to, cap, "%s/data.mdb.corrupt-%s.%d", dir, stamp, i);
		if (access(to, F_OK))
			break;
	}
	if (rename(data, to) && errno != ENOENT)
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: moving data.mdb aside: %s",
				     dir, strerror(errno));
	/* LMDB's lock file describes the old file's readers; the marker says
	 * a data.mdb with commits belongs here: both go with it */
	snprintf(path, sizeof(path), "%s/lock.mdb", dir);
	if (unlink(path) && errno != ENOENT)
		return gpuq_diag_set(diag, GPUQ_EIO, "state store %s: removing lock.mdb: %s", dir,
				     strerror(errno));
	if (store_marker_remove(dir, diag))
		return GPUQ_EIO;
	gpuq_log(GPUQ_LOG_WARN, "store",
		 "%s; moved aside to %s (kept for inspection); starting an empty store", why, to);
	return GPUQ_OK;
}

/* ---- Fault injection for tests ---- */

bool store_fault_set(void)
{
	const char *v = getenv(STORE_FAULT_COMMITS_ENV);

	return v && v[0] && strcmp(v, "0") != 0;
}

bool store_fault_commit_now(void)
{
	const char *v = getenv(STORE_FAULT_COMMITS_ENV);

	if (!v || !v[0] || !strcmp(v, "0"))
		return false;
	return v[0] != '/' || access(v, F_OK) == 0;
}

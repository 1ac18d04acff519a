/*
 * Loading a policy directory, or a list of files, (all or nothing) and
 * fingerprinting a directory from stat(2) alone, so the server can poll for
 * changes cheaply.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/internal.h"

typedef struct {
	char *name;	/* file name inside the dir (malloc'd) */
	struct stat st; /* its stat(2), symlinks followed (ConfigMap mounts) */
} entry_t;

typedef struct {
	entry_t *items; /* sorted by name */
	size_t n;	/* entries */
} listing_t;

static void listing_free(listing_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i].name);
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

static bool is_manifest(const char *name)
{
	size_t n = strlen(name);

	if (name[0] == '.')
		return false;
	return (n > 5 && !strcmp(name + n - 5, ".yaml")) ||
	       (n > 4 && !strcmp(name + n - 4, ".yml")) ||
	       (n > 5 && !strcmp(name + n - 5, ".json"));
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const entry_t *)a)->name, ((const entry_t *)b)->name);
}

static void join(char *buf, size_t cap, const char *dir, const char *name)
{
	size_t n = strlen(dir);

	snprintf(buf, cap, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

/* The manifest files of dir, sorted by name. */
static int list_dir(const char *dir, listing_t *out, gpuq_diag_t *diag)
{
	DIR *dh = opendir(dir);
	struct dirent *e;
	int rc = GPUQ_OK;

	memset(out, 0, sizeof(*out));
	if (!dh)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s: cannot open directory: %s", dir,
				     strerror(errno));
	out->items = calloc(POLICY_DIR_FILES_MAX, sizeof(*out->items));
	if (!out->items) {
		closedir(dh);
		return policy_oom(diag);
	}
	while (rc == GPUQ_OK && (e = readdir(dh))) {
		char path[4096];
		entry_t *en;

		if (!is_manifest(e->d_name))
			continue;
		if (out->n == POLICY_DIR_FILES_MAX) {
			rc = gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: more than %d manifest files",
					   dir, POLICY_DIR_FILES_MAX);
			break;
		}
		en = &out->items[out->n];
		join(path, sizeof(path), dir, e->d_name);
		if (stat(path, &en->st)) {
			rc = gpuq_diag_set(diag, GPUQ_EIO, "%s: cannot stat: %s", path,
					   strerror(errno));
			break;
		}
		if (!S_ISREG(en->st.st_mode))
			continue;
		en->name = strdup(e->d_name);
		if (!en->name)
			rc = policy_oom(diag);
		else
			out->n++;
	}
	closedir(dh);
	if (rc) {
		listing_free(out);
		return rc;
	}
	qsort(out->items, out->n, sizeof(*out->items), entry_cmp);
	return GPUQ_OK;
}

static uint64_t listing_hash(const listing_t *l)
{
	uint64_t h = GPUQ_FNV1A_SEED;

	h = gpuq_fnv1a(h, &l->n, sizeof(l->n));
	for (size_t i = 0; i < l->n; i++) {
		const struct stat *st = &l->items[i].st;
		int64_t f[7] = {(int64_t)st->st_size,	      (int64_t)st->st_mtim.tv_sec,
				(int64_t)st->st_mtim.tv_nsec, (int64_t)st->st_ctim.tv_sec,
				(int64_t)st->st_ctim.tv_nsec, (int64_t)st->st_ino,
				(int64_t)st->st_dev};

		h = gpuq_fnv1a(h, l->items[i].name, strlen(l->items[i].name) + 1);
		h = gpuq_fnv1a(h, f, sizeof(f));
	}
	return h ? h : 1; /* 0 means "not loaded from a dir" */
}

int policy_dir_fingerprint(const char *dir, uint64_t *out, gpuq_diag_t *diag)
{
	listing_t l;
	int rc = list_dir(dir, &l, diag);

	if (rc)
		return rc;
	*out = listing_hash(&l);
	listing_free(&l);
	return GPUQ_OK;
}

/* Read all of path (at most POLICY_FILE_MAX bytes) into a malloc'd buffer. */
static int read_file(const char *path, char **buf, size_t *len, gpuq_diag_t *diag)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 64u << 10, n = 0;
	char *b = NULL;
	int rc = GPUQ_OK;

	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s: cannot open: %s", path, strerror(errno));
	for (;;) {
		ssize_t got;

		if (!b || n == cap) {
			char *nb;

			if (b && cap > POLICY_FILE_MAX) {
				rc = gpuq_diag_set(
				    diag, GPUQ_ELIMIT,
				    "%s: larger than the %u bytes a manifest may have", path,
				    POLICY_FILE_MAX);
				break;
			}
			cap = b ? cap * 2 : cap;
			nb = realloc(b, cap);
			if (!nb) {
				rc = policy_oom(diag);
				break;
			}
			b = nb;
		}
		got = read(fd, b + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = gpuq_diag_set(diag, GPUQ_EIO, "%s: cannot read: %s", path,
					   strerror(errno));
			break;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (rc == GPUQ_OK && n > POLICY_FILE_MAX)
		rc = gpuq_diag_set(diag, GPUQ_ELIMIT,
				   "%s: larger than the %u bytes a manifest may have", path,
				   POLICY_FILE_MAX);
	if (rc) {
		free(b);
		return rc;
	}
	*buf = b;
	*len = n;
	return GPUQ_OK;
}

/* Read the manifest at path into p; *total counts the bytes read so far
 * against POLICY_DIR_BYTES_MAX (where names the set in that message). */
static int load_file(policy_t *p, const char *path, const char *where, size_t *total,
		     gpuq_diag_t *diag)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_file(path, &buf, &len, diag);

	if (rc)
		return rc;
	*total += len;
	if (*total > POLICY_DIR_BYTES_MAX) {
		free(buf);
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: manifests larger than %u bytes in all",
				     where, POLICY_DIR_BYTES_MAX);
	}
	rc = policy_add_manifest(p, path, buf, len, diag);
	free(buf);
	return rc;
}

static int load_files(policy_t *p, const char *dir, const listing_t *l, gpuq_diag_t *diag)
{
	size_t total = 0;

	for (size_t i = 0; i < l->n; i++) {
		char path[4096];
		int rc;

		join(path, sizeof(path), dir, l->items[i].name);
		rc = load_file(p, path, dir, &total, diag);
		if (rc)
			return rc;
	}
	return GPUQ_OK;
}

int policy_load_dir(const char *dir, const policy_opts_t *opts, policy_t **out, gpuq_diag_t *diag)
{
	policy_t *p = NULL;
	listing_t l;
	int rc;

	*out = NULL;
	rc = list_dir(dir, &l, diag);
	if (rc)
		return rc;
	rc = policy_create(opts, &p);
	if (rc)
		gpuq_diag_set(diag, rc, "out of memory");
	if (rc == GPUQ_OK) {
		p->fingerprint = listing_hash(&l);
		rc = load_files(p, dir, &l, diag);
	}
	if (rc == GPUQ_OK)
		rc = policy_finish(p, diag);
	listing_free(&l);
	if (rc) {
		policy_unref(p);
		return rc;
	}
	*out = p;
	return GPUQ_OK;
}

int policy_load_files(const char *const *paths, size_t n, const policy_opts_t *opts, policy_t **out,
		      gpuq_diag_t *diag)
{
	policy_t *p = NULL;
	size_t total = 0;
	int rc;

	*out = NULL;
	if (n == 0 || n > POLICY_DIR_FILES_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%zu manifest files (want 1..%d)", n,
				     POLICY_DIR_FILES_MAX);
	rc = policy_create(opts, &p);
	if (rc)
		return gpuq_diag_set(diag, rc, "out of memory");
	for (size_t i = 0; i < n && rc == GPUQ_OK; i++)
		rc = load_file(p, paths[i], "the files given", &total, diag);
	if (rc == GPUQ_OK)
		rc = policy_finish(p, diag);
	if (rc) {
		policy_unref(p);
		return rc;
	}
	*out = p;
	return GPUQ_OK;
}

/* A temporary directory per test for the store tests (test_store.c,
 * test_engine.c): `root` is made by mkdtemp under $TMPDIR (or /tmp) and
 * removed with everything in it after the test; `dir` is a store directory
 * inside it, not yet created. static inline, so a test that leaves some
 * unused does not warn. */
#ifndef GPUQ_UNIT_STORE_FIXTURE_H
#define GPUQ_UNIT_STORE_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

typedef struct {
	char root[256]; /* mkdtemp directory, removed after the test */
	char dir[320];	/* the store directory inside root */
} fixture_t;

static inline int fixture_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* cmocka setup: a fresh root named PREFIX-XXXXXX, dir = root/SUB. */
static inline int fixture_setup(void **state, const char *prefix, const char *sub)
{
	fixture_t *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/%s-XXXXXX", tmp ? tmp : "/tmp", prefix);
	if (!mkdtemp(f->root)) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/%s", f->root, sub);
	*state = f;
	return 0;
}

/* cmocka teardown: remove root and everything in it. */
static inline int fixture_teardown(void **state)
{
	fixture_t *f = *state;

	nftw(f->root, fixture_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

#endif

/* unit/kube_fixtures.h: what kube's tests share (test_kube.c,
 * test_kube_config.c): a per-run temporary directory (made by group_setup,
 * removed by group_teardown) and files written into it. Header-only
 * (static inline), included by test files only. */
#ifndef GPUQ_UNIT_KUBE_FIXTURES_H
#define GPUQ_UNIT_KUBE_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/internal.h"
#include "kube/kube.h"

static char tmp_root[256]; /* per-run temp dir, removed at the end */

static inline int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline int group_setup(void **state)
{
	(void)state;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/gpuq-test-kube-XXXXXX");
	return mkdtemp(tmp_root) ? 0 : -1;
}

static inline int group_teardown(void **state)
{
	(void)state;
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	return nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory tmp_root/name (out: its path). */
static inline void make_dir(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", tmp_root, name);
	assert_int_equal(mkdir(out, 0700), 0);
}

static inline void write_bytes(const char *dir, const char *name, const char *text, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static inline void write_file(const char *dir, const char *name, const char *text)
{
	write_bytes(dir, name, text, strlen(text));
}

/* Write text as dir/config and load it. */
static inline int load_text(const char *dir, const char *text, kube_config_t **cfg,
			    gpuq_diag_t *diag)
{
	char path[512];

	write_file(dir, "config", text);
	snprintf(path, sizeof(path), "%s/config", dir);
	memset(diag, 0, sizeof(*diag));
	*cfg = NULL;
	return kube_config_load(path, cfg, diag);
}

#endif

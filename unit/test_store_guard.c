/* Unit tests for the store's guards (store/files.c, store_reopen): one
 * writer per store (a second writable open refused, in this process or
 * another, naming the holder's pid; read-only opens unaffected; the lock
 * gone with its holder), a failed commit and a reopen (the tests' fault
 * seam GPUQ_TEST_FAIL_STORE_COMMITS), and a corrupt store moved aside when
 * asked, refused otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "unit/store_fixture.h"

enum { T_WORKLOAD = 0 };

static int setup(void **state)
{
	unsetenv(STORE_FAULT_COMMITS_ENV);
	return fixture_setup(state, "gpuq-guard", "state");
}

static int teardown(void **state)
{
	unsetenv(STORE_FAULT_COMMITS_ENV);
	return fixture_teardown(state);
}

static void opts_std(store_opts_t *o)
{
	store_opts_init(o);
	o->types[T_WORKLOAD] = "workloads";
	o->nosync = true;
}

static int open_rc(const fixture_t *f, bool set_aside, store_t **s, gpuq_diag_t *d)
{
	store_opts_t o;

	opts_std(&o);
	o.set_aside_corrupt = set_aside;
	return store_open(f->dir, &o, s, d);
}

static store_t *open_std(const fixture_t *f)
{
	store_t *s = NULL;
	gpuq_diag_t d = {{0}};

	if (open_rc(f, false, &s, &d))
		fail_msg("store_open: %s", d.msg);
	return s;
}

static int put_commit(store_t *s, const char *k, const char *v)
{
	store_txn_t *t;

	assert_int_equal(store_txn_begin(s, &t), GPUQ_OK);
	assert_int_equal(store_put(t, T_WORKLOAD, k, strlen(k), v, strlen(v)), GPUQ_OK);
	return store_txn_commit(t, NULL);
}

static bool stored(store_t *s, const char *k)
{
	void *v = NULL;
	size_t n = 0;
	int rc = store_get(s, T_WORKLOAD, k, strlen(k), &v, &n);

	free(v);
	return rc == GPUQ_OK;
}

static void second_writer_refused(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_std(f), *t = NULL, *ro = NULL;
	store_opts_t o;
	gpuq_diag_t d = {{0}};
	char pid[32];
	int status;
	pid_t child;

	assert_int_equal(put_commit(s, "a", "1"), GPUQ_OK);
	/* in this process */
	assert_int_equal(open_rc(f, false, &t, &d), GPUQ_EAGAIN);
	assert_null(t);
	snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
	assert_non_null(strstr(d.msg, pid));
	assert_non_null(strstr(d.msg, "one writer per store"));
	/* in another */
	fflush(NULL);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		store_t *c = NULL;
		gpuq_diag_t cd = {{0}};
		_exit(open_rc(f, false, &c, &cd) == GPUQ_EAGAIN && strstr(cd.msg, pid) ? 0 : 1);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* a reader is no writer */
	store_opts_init(&o);
	o.read_only = true;
	assert_int_equal(store_open(f->dir, &o, &ro, &d), GPUQ_OK);
	assert_true(stored(ro, "a"));
	store_close(ro);
	/* the lock goes with its holder */
	store_close(s);
	s = open_std(f);
	assert_true(stored(s, "a"));
	store_close(s);
}

static void lock_gone_with_a_killed_holder(void **state)
{
	fixture_t *f = *state;
	int status, fds[2];
	char c;
	pid_t child;
	store_t *s;

	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		store_t *own = open_std(f);
		(void)own;
		(void)!write(fds[1], "x", 1);
		pause(); /* killed while holding it */
		_exit(0);
	}
	assert_int_equal(read(fds[0], &c, 1), 1);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	close(fds[0]);
	close(fds[1]);
	s = open_std(f);
	store_close(s);
}

static void failed_commit_then_reopen(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_std(f), *t = NULL;
	gpuq_diag_t d = {{0}};

	assert_int_equal(put_commit(s, "before", "1"), GPUQ_OK);
	store_close(s);
	setenv(STORE_FAULT_COMMITS_ENV, "1", 1);
	s = open_std(f);
	assert_int_equal(put_commit(s, "lost", "2"), GPUQ_EIO);
	assert_false(stored(s, "lost"));
	/* reopened with the fault still set: it still fails */
	assert_int_equal(store_reopen(s, &d), GPUQ_OK);
	assert_int_equal(put_commit(s, "lost", "2"), GPUQ_EIO);
	/* a path: the fault holds while that file exists */
	{
		char flag[400];
		int fd;

		snprintf(flag, sizeof(flag), "%s/fault", f->root);
		setenv(STORE_FAULT_COMMITS_ENV, flag, 1);
		assert_int_equal(put_commit(s, "while-absent", "4"), GPUQ_OK);
		fd = open(flag, O_WRONLY | O_CREAT, 0600);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(put_commit(s, "lost", "2"), GPUQ_EIO);
		unlink(flag);
	}
	/* the fault gone: the reopened store commits, what was there stays */
	unsetenv(STORE_FAULT_COMMITS_ENV);
	assert_int_equal(store_reopen(s, &d), GPUQ_OK);
	assert_true(stored(s, "before"));
	assert_int_equal(put_commit(s, "after", "3"), GPUQ_OK);
	assert_true(stored(s, "after"));
	assert_null(store_moved_aside(s));
	/* the lock held across the reopens */
	assert_int_equal(open_rc(f, false, &t, &d), GPUQ_EAGAIN);
	store_close(s);
	s = open_std(f);
	assert_true(stored(s, "before") && stored(s, "after") && !stored(s, "lost"));
	store_close(s);
}

/* Damage data.mdb's header (both meta pages' magic). */
static void damage(const fixture_t *f)
{
	char path[400];
	long page = sysconf(_SC_PAGESIZE);
	int fd;

	snprintf(path, sizeof(path), "%s/data.mdb", f->dir);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "garbage!", 8, 16), 8);
	assert_int_equal(pwrite(fd, "garbage!", 8, page + 16), 8);
	close(fd);
}

static void corrupt_store_moved_aside(void **state)
{
	fixture_t *f = *state;
	store_t *s = open_std(f), *t = NULL;
	gpuq_diag_t d = {{0}};
	struct stat st;
	char aside[STORE_PATH_MAX + 64];

	assert_int_equal(put_commit(s, "a", "1"), GPUQ_OK);
	store_close(s);
	damage(f);
	/* refused by default: the damage is the operator's to see */
	assert_int_equal(open_rc(f, false, &t, &d), GPUQ_ECORRUPT);
	assert_non_null(strstr(d.msg, "store corrupt"));
	/* moved aside when asked: a new, empty store in its place */
	assert_int_equal(open_rc(f, true, &t, &d), GPUQ_OK);
	assert_non_null(store_moved_aside(t));
	snprintf(aside, sizeof(aside), "%s", store_moved_aside(t));
	assert_non_null(strstr(aside, "/data.mdb.corrupt-"));
	assert_int_equal(stat(aside, &st), 0);
	assert_false(stored(t, "a"));
	assert_int_equal(put_commit(t, "b", "2"), GPUQ_OK);
	store_close(t);
	/* the new store is sound: it opens without moving anything */
	assert_int_equal(open_rc(f, true, &t, &d), GPUQ_OK);
	assert_null(store_moved_aside(t));
	assert_true(stored(t, "b"));
	store_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(second_writer_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(lock_gone_with_a_killed_holder, setup, teardown),
	    cmocka_unit_test_setup_teardown(failed_commit_then_reopen, setup, teardown),
	    cmocka_unit_test_setup_teardown(corrupt_store_moved_aside, setup, teardown),
	};

	return cmocka_run_group_tests_name("store_guard", tests, NULL, NULL);
}

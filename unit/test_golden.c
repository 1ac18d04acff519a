/* Golden admission cases against the real binary over TLS: makes a CA and a
 * serving certificate with `$GPUQ_BIN certs`, starts `$GPUQ_BIN serve` on a
 * free 127.0.0.1 port with the policy in unit/golden/policy, waits for
 * /readyz, posts every case of unit/golden/cases to /mutate or /validate (one
 * cmocka test per case), compares the reply with the case's expectation
 * (unit/golden/golden_check.h), and stops the server. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "unit/golden/golden_check.h"

#define GOLDEN_DIR "unit/golden"
#define READY_TRIES 100	     /* x 100 ms: the server has 10 s to become ready */
#define REPLY_MAX (1u << 20) /* bytes of one reply kept */

typedef struct {
	char *p;
	size_t len;
} reply_buf_t;

static char g_tmp[64];
static char g_url[64];
static char g_ca[128];
static pid_t g_server = -1;
static CURL *g_curl;
static golden_case_t g_cases[GOLDEN_CASES_MAX];
static size_t g_n_cases;

static size_t on_data(char *ptr, size_t size, size_t n, void *ud)
{
	reply_buf_t *b = ud;
	size_t add = size * n;
	char *np;

	if (b->len + add > REPLY_MAX)
		return 0;
	np = realloc(b->p, b->len + add + 1);
	if (!np)
		return 0;
	memcpy(np + b->len, ptr, add);
	b->p = np;
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

/* One HTTPS request; body NULL means GET. Returns the HTTP status (0 when
 * the exchange failed) and the reply in *out (caller frees out->p). */
static long https(const char *path, const char *body, size_t len, reply_buf_t *out)
{
	char url[160];
	struct curl_slist *hdr = NULL;
	long status = 0;

	out->p = NULL;
	out->len = 0;
	snprintf(url, sizeof(url), "%s%s", g_url, path);
	curl_easy_setopt(g_curl, CURLOPT_URL, url);
	curl_easy_setopt(g_curl, CURLOPT_CAINFO, g_ca);
	curl_easy_setopt(g_curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(g_curl, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(g_curl, CURLOPT_TIMEOUT, 10L);
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(g_curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(g_curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(g_curl, CURLOPT_POSTFIELDSIZE, (long)len);
	} else {
		curl_easy_setopt(g_curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(g_curl, CURLOPT_HTTPHEADER, NULL);
	}
	if (curl_easy_perform(g_curl) == CURLE_OK)
		curl_easy_getinfo(g_curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(g_curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	return status;
}

/* Run argv with stdout and stderr to log; wait when wait_for is set.
 * Returns the exit status (waited) or the child's pid. */
static int spawn(const char *const argv[], const char *log, int wait_for)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(argv[0], (char *const *)argv); /* execv does not write argv */
		_exit(127);
	}
	if (!wait_for)
		return pid;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* A port nothing listens on right now (the kernel's pick). */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &alen))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void dump_log(const char *log)
{
	char line[512];
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "# serve: %s", line);
	fclose(f);
}

static int wait_ready(const char *log)
{
	for (int i = 0; i < READY_TRIES; i++) {
		reply_buf_t b;
		long st = https("/readyz", NULL, 0, &b);
		int wst;

		free(b.p);
		if (st == 200)
			return 0;
		if (waitpid(g_server, &wst, WNOHANG) == g_server) {
			g_server = -1;
			fprintf(stderr, "# gpuq serve exited before it was ready\n");
			dump_log(log);
			return -1;
		}
		nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
	}
	fprintf(stderr, "# gpuq serve not ready after %d s\n", READY_TRIES / 10);
	dump_log(log);
	return -1;
}

static int group_setup(void **state)
{
	const char *bin = getenv("GPUQ_BIN");
	char log[128], certs_log[128], listen[32], state_dir[128], binbuf[512];
	int port;
	(void)state;

	if (!bin || access(bin, X_OK)) {
		fprintf(stderr, "# GPUQ_BIN (\"%s\") is not an executable gpuq\n", bin ? bin : "");
		return -1;
	}
	snprintf(binbuf, sizeof(binbuf), "%s", bin);
	snprintf(g_tmp, sizeof(g_tmp), "/tmp/gpuq-golden-XXXXXX");
	if (!mkdtemp(g_tmp))
		return -1;
	snprintf(certs_log, sizeof(certs_log), "%s/certs.log", g_tmp);
	snprintf(log, sizeof(log), "%s/serve.log", g_tmp);
	snprintf(state_dir, sizeof(state_dir), "%s/state", g_tmp);
	snprintf(g_ca, sizeof(g_ca), "%s/ca.crt", g_tmp);
	{
		const char *argv[] = {binbuf,	   "certs", "--out",	 g_tmp, "--dns",
				      "localhost", "--ip",  "127.0.0.1", NULL};

		if (spawn(argv, certs_log, 1) != 0) {
			fprintf(stderr, "# gpuq certs failed\n");
			dump_log(certs_log);
			return -1;
		}
	}
	port = free_port();
	if (port <= 0)
		return -1;
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(g_url, sizeof(g_url), "https://127.0.0.1:%d", port);
	{
		/* --gpu-resource as unit/golden/gen_cases.py says */
		const char *argv[] = {
		    binbuf,	   "serve",   "--listen",	listen,
		    "--cert-dir",  g_tmp,     "--policy-dir",	GOLDEN_DIR "/policy",
		    "--state-dir", state_dir, "--gpu-resource", "amd.com/gpu",
		    NULL};

		g_server = spawn(argv, log, 0);
	}
	if (g_server <= 0)
		return -1;
	g_curl = curl_easy_init();
	if (!g_curl)
		return -1;
	return wait_ready(log);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int group_teardown(void **state)
{
	(void)state;
	if (g_server > 0) {
		int st;

		kill(g_server, SIGTERM);
		for (int i = 0; i < 50 && waitpid(g_server, &st, WNOHANG) != g_server; i++)
			nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
		if (kill(g_server, 0) == 0) {
			kill(g_server, SIGKILL);
			waitpid(g_server, &st, 0);
		}
		g_server = -1;
	}
	if (g_curl)
		curl_easy_cleanup(g_curl);
	if (g_tmp[0])
		nftw(g_tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	golden_free(g_cases, g_n_cases);
	return 0;
}

static void test_case(void **state)
{
	const golden_case_t *gc = *state;
	char path[64], err[1024];
	reply_buf_t b;
	long st;

	snprintf(path, sizeof(path), "/%s?timeout=10s", gc->mutate ? "mutate" : "validate");
	st = https(path, gc->body, gc->len, &b);
	if (!st)
		fail_msg("%s: no reply from the server", gc->name);
	if (golden_check(gc->c, (int)st, b.p, b.len, err, sizeof(err))) {
		free(b.p);
		fail_msg("%s: %s", gc->name, err);
	}
	free(b.p);
}

int main(void)
{
	struct CMUnitTest tests[GOLDEN_CASES_MAX];
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	g_n_cases = golden_load(GOLDEN_DIR "/cases", g_cases, GOLDEN_CASES_MAX);
	for (size_t i = 0; i < g_n_cases; i++)
		tests[i] = (struct CMUnitTest){g_cases[i].name, test_case, NULL, NULL, &g_cases[i]};
	if (!g_n_cases) {
		fprintf(stderr, "no golden cases under %s/cases\n", GOLDEN_DIR);
		return 1;
	}
	rc = _cmocka_run_group_tests("golden", tests, g_n_cases, group_setup, group_teardown);
	curl_global_cleanup();
	return rc;
}

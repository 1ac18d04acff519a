/*
 * bench_parse: the review body's JSON reader (jv/parse.c, written
 * for the admission path) against jansson on the same bodies, for
 * bench/bench_parse.sh. Each parses the whole body into its tree and frees
 * it, as a review does; jansson with JSON_REJECT_DUPLICATES off (its
 * default) and no depth pre-scan (the hand-written reader includes its own).
 *
 *   bench_parse time FILE [rounds]   ns per parse, both readers, rounds
 *                                    alternating (default 20 x 2,000)
 *   bench_parse hand FILE N          N parses with the hand-written reader
 *   bench_parse jansson FILE N       N parses with jansson
 *
 * The functions named bench_* are what callgrind's --toggle-collect counts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "jv/jv.h"
#include "slurp.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static int bench_hand(const char *buf, size_t len, long n)
{
	char err[128];

	for (long i = 0; i < n; i++) {
		jv_doc_t d;
		if (jv_doc_parse(&d, buf, len, err, sizeof(err)))
			return 1;
		jv_doc_free(&d);
	}
	return 0;
}

__attribute__((noinline)) static int bench_jansson(const char *buf, size_t len, long n)
{
	for (long i = 0; i < n; i++) {
		json_t *j = json_loadb(buf, len, 0, NULL);
		if (!j)
			return 1;
		json_decref(j);
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t len = 0;
	char *buf = argc >= 3 ? bench_slurp("bench_parse", argv[2], &len) : NULL;
	long n = argc >= 4 ? atol(argv[3]) : 20;

	if (!buf) {
		fprintf(stderr, "usage: bench_parse time|hand|jansson FILE [N]\n");
		return 2;
	}
	if (!strcmp(argv[1], "hand"))
		return bench_hand(buf, len, n);
	if (!strcmp(argv[1], "jansson"))
		return bench_jansson(buf, len, n);
	if (strcmp(argv[1], "time") != 0)
		return 2;
	{
		double best_h = 1e30, best_j = 1e30;
		const double per = 2000;
		for (long r = 0; r < n; r++) { /* alternate; the best round counts */
			double t0 = now_ns(), t1, t2;
			if (bench_hand(buf, len, (long)per))
				return 1;
			t1 = now_ns();
			if (bench_jansson(buf, len, (long)per))
				return 1;
			t2 = now_ns();
			if ((t1 - t0) / per < best_h)
				best_h = (t1 - t0) / per;
			if ((t2 - t1) / per < best_j)
				best_j = (t2 - t1) / per;
		}
		printf("bytes %zu\nhand_ns %.0f\njansson_ns %.0f\n", len, best_h, best_j);
	}
	free(buf);
	return 0;
}

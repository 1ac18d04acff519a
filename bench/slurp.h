/* bench/slurp.h: a whole file read into memory, for the bench drivers
 * (included by bench_*.c as "slurp.h": a bench is built from its one .c
 * file against either tree's library, so this is a header, not a module). */
#ifndef GPUQ_BENCH_SLURP_H
#define GPUQ_BENCH_SLURP_H

#include <stdio.h>
#include <stdlib.h>

/* The file at path, NUL-terminated (*len bytes before the NUL), the
 * caller's to free; a file that cannot be read ends the bench (exit 1),
 * naming who and the path. */
static inline char *bench_slurp(const char *who, const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n = -1;

	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET))
		buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: cannot read %s\n", who, path);
		exit(1);
	}
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

#endif

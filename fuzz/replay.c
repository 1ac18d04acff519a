/* Corpus replay: feeds every file under the given directories to the fuzz
 * target compiled in beside this file, printing one TAP line per file. Lets
 * `make test` (gcc, no libFuzzer) rerun every checked-in corpus input. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (8u << 20) /* larger corpus files are a mistake */

static int replay_file(const char *path, int *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t len;

	if (!f) {
		printf("not ok %d - %s: cannot open\n", ++*n, path);
		return 1;
	}
	buf = malloc(REPLAY_MAX_INPUT);
	if (!buf) {
		fclose(f);
		return 1;
	}
	len = fread(buf, 1, REPLAY_MAX_INPUT, f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	printf("ok %d - %s\n", ++*n, path);
	return 0;
}

int main(int argc, char **argv)
{
	int n = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *e;

		if (!d) {
			printf("not ok %d - corpus dir %s missing\n", ++n, argv[i]);
			bad++;
			continue;
		}
		while ((e = readdir(d))) {
			char path[4096];
			struct stat st;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
				bad += replay_file(path, &n);
		}
		closedir(d);
	}
	printf("1..%d\n", n);
	return bad ? 1 : 0;
}

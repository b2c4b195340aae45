/*
 * fuzz_driver.c - the fuzzer's walk over files named on the command line,
 * without libFuzzer: what tests/t-fuzz-regress.sh runs under ASan/UBSan to
 * replay reproducers and mutated seeds.
 *
 *   fuzz_driver [-v] FILE...     exit 0 unless a sanitizer or a signal stops it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walk.h"

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		data = malloc(n ? (size_t)n : 1);
		if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
			free(data);
			data = NULL;
		}
		*size = (size_t)n;
	}
	fclose(f);
	return data;
}

int main(int argc, char **argv)
{
	int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;

	for (int i = 1 + verbose; i < argc; i++) {
		size_t size;
		uint8_t *data = slurp(argv[i], &size);
		unsigned long ops;

		if (!data) {
			fprintf(stderr, "fuzz_driver: %s: cannot read\n", argv[i]);
			return 1;
		}
		ops = walk_image(data, size);
		if (verbose)
			printf("%s: %lu operations\n", argv[i], ops);
		free(data);
	}
	return 0;
}

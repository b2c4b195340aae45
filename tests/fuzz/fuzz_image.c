/*
 * fuzz_image.c - libFuzzer target: the input is a squashfs image (or
 * anything else); walk.c reads all of it through libquash.
 *
 * Built by tests/fuzz/build.sh, not by meson: libFuzzer needs clang.
 */
#include <stddef.h>
#include <stdint.h>

#include "walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	walk_image(data, size);
	return 0;
}

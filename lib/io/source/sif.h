/*
 * sif.h - finding the squashfs filesystem inside a Singularity/Apptainer
 * image (SIF, the format of github.com/sylabs/sif).
 */
#ifndef QUASH_SIF_H
#define QUASH_SIF_H

#include <stdint.h>

#include "source.h"

/*
 * If src is a SIF file, find its primary system partition (or, when none is
 * marked primary, its first partition) and check that it holds squashfs.
 * Returns 1 with the partition's *offset and *size, 0 if src is not SIF
 * (*offset and *size untouched), or -errno with a message if it is SIF but
 * corrupt or its system partition is not squashfs.
 */
int qs_sif_find_squashfs(struct qs_source *src, uint64_t *offset, uint64_t *size);

#endif

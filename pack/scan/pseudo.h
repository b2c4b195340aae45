/*
 * pseudo.h - mksquashfs's pseudo file definitions (-p, -pf, -pd), applied
 * to the tree after the sources (pseudo.c says the format).
 */
#ifndef QUASH_PACK_PSEUDO_H
#define QUASH_PACK_PSEUDO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scan.h"
#include "tree/tree.h"

struct pseudo_def {
	const char *text;           /* a definition, or the name of a file of them */
	bool is_file;               /* -pf */
};

struct pseudo_options {
	const struct pseudo_def *defs;
	size_t count;
	const struct pack_meta *default_dir;    /* -pd: missing directories made with this; NULL: error */
	uint32_t default_time;                  /* of definitions without a time */
	uint32_t block_size;                    /* bounds what a command may produce */
};

/* Apply every definition in order; 0, or -errno after one line saying what is wrong. */
int pseudo_apply(struct pack_tree *t, const struct pseudo_options *o, struct spool *spool);

#endif

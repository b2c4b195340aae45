/*
 * mode.h - permission changes as chmod(1) writes them, octal or symbolic,
 * for mksquashfs 4.7's -force-file-mode and -force-dir-mode.
 */
#ifndef QUASH_PACK_MODE_H
#define QUASH_PACK_MODE_H

#include <stdbool.h>
#include <stdint.h>

/* Clauses ("u+w", "go-w", ...) in one mode, at most. */
#define MODE_OPS_MAX 32

struct mode_op {
	char op;                    /* '=', '+', '-', or '#': the octal number's bits, exactly */
	char copy;                  /* 'u', 'g' or 'o': the bits that class has now; 0: 'bits' */
	bool X;                     /* x too, where the inode is a directory or has an x already */
	uint16_t bits;              /* what is set, added or removed, within 'mask' */
	uint16_t mask;              /* the classes named (u: 04700, g: 02070, o: 01007) */
};

struct mode_spec {
	struct mode_op ops[MODE_OPS_MAX];
	unsigned count;
};

/*
 * Parse an octal mode (at most 07777) or comma-separated symbolic
 * clauses, [ugoa]*([-+=]([rwxXst]*|[ugo]))+, into *out.  Without u, g, o
 * or a a clause names the three classes' rwx (not the set-id and sticky
 * bits).  0, or -1 with *why saying what is wrong.
 */
int mode_parse(const char *s, struct mode_spec *out, const char **why);

/* 'mode' (type bits and all) changed by m; the type bits are kept. */
uint32_t mode_apply(const struct mode_spec *m, uint32_t mode);

#endif

/*
 * pack.h - entry point of the image writer, called by the quash binary.
 */
#ifndef QUASH_PACK_H
#define QUASH_PACK_H

/* quash pack [OPTIONS] SOURCE... IMAGE; argv[0] is "pack". */
int pack_main(int argc, char **argv);

/* mksquashfs SOURCE... DEST [OPTIONS]: its command line (quash linked as mksquashfs). */
int mksquashfs_main(int argc, char **argv);

/* sqfstar [OPTIONS] IMAGE [EXCLUDES...]: a tar on standard input (linked as sqfstar). */
int sqfstar_main(int argc, char **argv);

#endif

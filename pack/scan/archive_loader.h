/*
 * archive_loader.h - libarchive, opened on first use (archive_loader.c,
 * lib/io/lazy_lib.h).
 */
#ifndef QUASH_PACK_ARCHIVE_LOADER_H
#define QUASH_PACK_ARCHIVE_LOADER_H

/* 0, or -ENOSYS with a one-line reason. */
int archive_loader_load(void);
const char *archive_loader_error(void);

#endif

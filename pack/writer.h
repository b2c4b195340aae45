/*
 * writer.h - one pack run: sources in, image out.
 */
#ifndef QUASH_PACK_WRITER_H
#define QUASH_PACK_WRITER_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "codec/compressor.h"
#include "scan/pseudo.h"
#include "scan/scan.h"
#include "tree/tree.h"

struct pack_options {
	const char **sources;
	size_t source_count;
	const char **source_names;  /* per source: nest it under this name (mksquashfs form); NULL: merge */
	int64_t root_mode;          /* -1: as the source's root; else the root's permission bits */
	int64_t root_uid, root_gid; /* -1: as the source's root (after the overrides); else the root's owner */
	int64_t root_time;          /* -1: as the source's root; else the root's mtime */
	uint64_t offset;            /* mksquashfs -offset: the image starts this far into IMAGE */
	bool fake_root;             /* mksquashfs form: a root no source gives (0777, the caller's, now) */
	unsigned input_limit;       /* mksquashfs -limit (100 - -throttle): % of time reading; 0: all */
	bool file_sources;          /* mksquashfs form: a source that is no directory is itself, not an archive */
	bool one_file_system, one_file_system_x;
	bool limit_depth;           /* mksquashfs -max-depth (scan.h) */
	uint32_t max_depth;
	struct pseudo_options pseudo;           /* mksquashfs form: -p, -pf, -pd */
	/*
	 * mksquashfs -pseudo-override: the owner and mode overrides (-all-root,
	 * -force-uid, -force-gid, -force-file-mode, -force-dir-mode) apply to
	 * what the sources gave, and the pseudo definitions keep their own.
	 */
	bool pseudo_override;
	const char *sort_file;                  /* mksquashfs form: -sort FILE, the data's order */
	const char *order_file;                 /* --order FILE: paths whose data comes first, in order */
	const char *image;          /* a path, or s3://BUCKET/KEY */
	bool append;                /* add to the image if one is there (append.c); else replace it */
	const char *endpoint;       /* S3 endpoint for an s3:// image, or NULL */

	const struct qs_compressor *comp;
	struct qs_compress_params params;
	uint32_t block_size;
	unsigned jobs;
	bool fragments, tail_packing, dedup, exportable;
	bool sparse;                /* all-zero blocks stored as holes (mksquashfs -no-sparse: as data) */
	/*
	 * SQFS_FLAG_UNCOMPRESSED_* bits (mksquashfs -noI, -noD, -noF, -noX,
	 * -noId): what is stored uncompressed, and flagged so in the superblock.
	 */
	uint16_t uncompressed;
	/*
	 * --memory / mksquashfs -mem: bytes for the buffers of the data in
	 * flight, the metadata tables being built and the resident part of the
	 * tree (0: their defaults, no bound); the tables and the tree spill to
	 * temporary files beside the image past their shares (writer.c,
	 * spill.c).
	 */
	uint64_t memory;

	struct pack_overrides overrides;
	const char **excludes;
	size_t exclude_count;
	bool exclude_regex;         /* mksquashfs -regex: excludes are POSIX extended regexes, per name */
	const struct scan_devino *exclude_ids;   /* mksquashfs form: -e paths by identity */
	size_t exclude_id_count;
	bool skip_unreadable;
	int64_t mkfs_time;          /* -1: the newest mtime in the tree */
	bool progress;              /* the bar on a terminal (--no-progress: off) */
	bool progress_log;          /* mksquashfs -progress, stdout no terminal: its bar, for a log */
	bool quiet;                 /* -q: no summary */
	bool json;                  /* --json: the summary as one JSON object on stdout */
	bool verity;                /* --verity: append a dm-verity tree (lib/verity), print its root hash */
	bool report;                /* mksquashfs form: its end-of-run report instead of the summary line */
	bool nopad;                 /* mksquashfs -nopad: no zeros up to a 4 KiB multiple */
	bool info;                  /* mksquashfs -info: each file written, a line on stdout */
	FILE *info_out;             /* mksquashfs -info-file: those lines go here instead (NULL: stdout) */
	bool percentage;            /* mksquashfs -percentage: the progress as one number a line, on stdout */
	bool no_hardlinks;          /* mksquashfs -no-hardlinks: each name of a file a file of its own */
	bool ignore_zeros;          /* mksquashfs -ignore-zeros: concatenated tars read as one */
	bool owner_names;           /* mksquashfs -tar: owners by an entry's user and group names (scan.h) */
	bool exit_on_error;         /* mksquashfs -exit-on-error: after any warning, no image */
	/* mksquashfs -no-strip / -cpiostyle: the sources are paths kept whole (scan_paths) */
	bool no_strip, cpio_style;
	const char *root_becomes;   /* mksquashfs -root-becomes: appending, the old root becomes this directory */
	uint32_t id_offset;         /* mksquashfs -uid-gid-offset: added to every uid and gid */
	/* Directories an archive implies but does not list: -1 for 0755, owner 0, group 0. */
	int64_t implicit_mode, implicit_uid, implicit_gid;
};

/* 0, or -errno after printing what went wrong; no image is left on failure. */
int pack_run(const struct pack_options *o);

#endif

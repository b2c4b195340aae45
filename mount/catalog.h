/*
 * catalog.h - `quash mount --catalog`: a directory, web server or bucket of
 * images under one mount point, each image a directory, opened on first use.
 *
 * catalog.c holds the model (the names, the images and their versions, the
 * listing of the source, opening and idle closing); catalog_ops.c answers
 * the FUSE requests over it, handing everything inside an image to the
 * operations of a plain mount (ops.c) with that image's view.
 *
 * Node ids carry the image in their high bits, so that a request names its
 * image with no table: slot 0 is the catalog's own directories (node id =
 * directory index + 1, the root being FUSE_ROOT_ID) and its control files;
 * slot S >= 1 is one version of one image, with S << QC_SLOT_SHIFT | 1 its
 * root (the NAME directory) and S << QC_SLOT_SHIFT | (ref + 2) its other
 * inodes.  A slot is never reused, so node ids and st_ino (S << 32 | the
 * image's inode number) stay the same across an idle close and reopen, and
 * a replaced image gets new ones while the old version's open files go on.
 */
#ifndef QUASH_CATALOG_H
#define QUASH_CATALOG_H

#include "mount_int.h"

#define QC_SLOT_SHIFT 44
#define QC_LOCAL_MASK ((UINT64_C(1) << QC_SLOT_SHIFT) - 1)
#define QC_SLOTS_MAX ((1u << 20) - 1)      /* image versions over a mount's life (node id bits) */
#define QC_ENTRIES_MAX 1000000u            /* images in one catalog */
#define QC_DEPTH_MAX 16                    /* directory levels of a local catalog, or of keys */

#define QC_DEFAULT_IDLE 300                /* s an unused image stays open (autofs's timeout) */
#define QC_DEFAULT_REFRESH 60              /* s between listings of the source */
/*
 * Images open at once (each a descriptor and its tables, about 25 KiB for a
 * small one): bench/catalog.sh's second sweep of 2,000 images took 0.85-1.10 s
 * with 1,024 (half of them reopened) and 0.18-0.34 s with 4,096.  Kept below
 * the descriptor limit, whose soft value is raised to the hard one.
 */
#define QC_DEFAULT_OPEN_MAX 8192
#define QC_FD_RESERVE 128                  /* descriptors kept for everything but images */
#define QC_MISS_REFRESH_S 2                /* a name not found lists again, at most this often */
#define QC_RETRY_S 10                      /* a failed open is tried again after this */
#define QC_DEFAULT_REMOTE_MEMORY (256u << 20)  /* remote chunks in memory, all images together */

/* Control files at the root: looked up by name, never listed. */
#define QC_CTL_STATUS_NAME ".quash-catalog"
#define QC_CTL_REFRESH_NAME ".quash-refresh"
#define QC_CTL_STATUS ((fuse_ino_t)QC_LOCAL_MASK)
#define QC_CTL_REFRESH ((fuse_ino_t)QC_LOCAL_MASK - 1)

struct qc_image;

static inline uint32_t qc_slot_of(fuse_ino_t nodeid)
{
	return (uint32_t)(nodeid >> QC_SLOT_SHIFT);
}

/* Build the catalog from its source (one listing); 0 or -errno, said on stderr. */
int qc_create(struct qm_fs *fs, struct qm_catalog **out);
/* Start watching (inotify, refresh, idle close) once the session is up. */
int qc_start(struct qm_catalog *c);
void qc_destroy(struct qm_catalog *c);

/*
 * The image a node id belongs to, opened if need be and held for one
 * request (qc_unpin).  NULL with *err: -ESTALE for a version that is gone,
 * -EIO for an image that cannot be opened (logged once).
 */
struct qc_image *qc_pin(struct qm_catalog *c, uint32_t slot, int *err);
void qc_unpin(struct qc_image *im);
/* Its view (valid while pinned), or of an image not pinned: only for counting opens. */
struct qm_view *qc_view(struct qc_image *im);
struct qc_image *qc_slot(struct qm_catalog *c, uint32_t slot);

/* ---- the catalog's own directories, for catalog_ops.c ---- */

struct qc_attr {
	fuse_ino_t nodeid;
	bool is_dir;                /* a catalog directory, not an image */
	uint64_t ino;
	int64_t mtime;
	uint32_t nlink;
};

struct qc_listing {                 /* a snapshot of one catalog directory, for readdir */
	size_t count;
	struct qc_attr *attrs;
	char **names;
	uint64_t self_ino, parent_ino;
};

/* The catalog directory node id (slot 0) names, or -ENOENT. */
int qc_dir_attr(struct qm_catalog *c, fuse_ino_t nodeid, struct qc_attr *out);
/* 'name' in catalog directory 'parent' (lists the source again on a miss, at most so often). */
int qc_lookup(struct qm_catalog *c, fuse_ino_t parent, const char *name, struct qc_attr *out);
/* The attributes of an image's NAME directory (its root node id), without opening it. */
int qc_image_attr(struct qm_catalog *c, uint32_t slot, struct qc_attr *out);
int qc_list(struct qm_catalog *c, fuse_ino_t nodeid, struct qc_listing **out);
void qc_listing_free(struct qc_listing *l);

/* The status text of `quash catalog ls` (malloc'd), and a refresh for `quash catalog refresh`. */
char *qc_status(struct qm_catalog *c, size_t *len);
char *qc_refresh_now(struct qm_catalog *c, size_t *len);

extern const struct fuse_lowlevel_ops qm_catalog_ops;

#endif

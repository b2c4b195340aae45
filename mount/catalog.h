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
 * inodes.  Node ids and st_ino (S << 32 | the image's inode number) stay
 * the same across an idle close and reopen, and a replaced image gets new
 * ones while the old version's open files go on.  A superseded version's
 * slot is reused only once the kernel has forgotten every node id of it
 * (FORGET), no file of it is open, and a quarantine has passed, so a
 * directory writer who replaces images in a loop cannot run the slots out.
 */
#ifndef QUASH_CATALOG_H
#define QUASH_CATALOG_H

#include "mount_int.h"

#define QC_SLOT_SHIFT 44
#define QC_LOCAL_MASK ((UINT64_C(1) << QC_SLOT_SHIFT) - 1)
#define QC_SLOTS_MAX ((1u << 20) - 1)      /* image versions alive at once (node id bits) */
#define QC_SLOT_QUARANTINE_S 5             /* a freed slot waits this long: page-cache pushes in flight end */
#define QC_ENTRIES_MAX 1000000u            /* images in one catalog */
#define QC_DEPTH_MAX 16                    /* directory levels of a local catalog, or of keys */

#define QC_FD_RESERVE 128                  /* descriptors kept for everything but images */
#define QC_MISS_REFRESH_S 2                /* a name not found lists again, at most this often */
#define QC_LIST_MIN_MS 1000                /* any two listings (inotify, refresh, misses) at least this apart */
#define QC_DIRS_MAX 100000u                /* directories one local listing walks */
#define QC_WATCH_MAX 8192u                 /* inotify watches: the uid's limit is shared with its other users */
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
/* Stop the watcher: before the session it sends notices through is destroyed. */
void qc_stop(struct qm_catalog *c);
void qc_destroy(struct qm_catalog *c);

/*
 * The image a node id belongs to, opened if need be and held for one
 * request (qc_unpin).  NULL with *err: -ESTALE for a version that is gone,
 * -EIO for an image that cannot be opened (logged once).
 */
struct qc_image *qc_pin(struct qm_catalog *c, uint32_t slot, int *err);
/*
 * The kernel learnt (qc_lookup_ref) or forgot (qc_forget) 'n' lookups of a
 * node id in 'slot'; ops.c counts those it answers itself through the view.
 */
void qc_forget(struct qm_catalog *c, fuse_ino_t nodeid, uint64_t n);
void qc_unpin(struct qc_image *im);
/* Its view (valid while pinned), or of an image not pinned: only for counting opens. */
struct qm_view *qc_view(struct qc_image *im);
struct qc_image *qc_slot(struct qm_catalog *c, uint32_t slot);

/* ---- the catalog's own directories, for catalog_ops.c ---- */

struct qc_attr {
	fuse_ino_t nodeid;
	bool is_dir;                /* a catalog directory, not an image */
	bool is_alias;              /* a symlink to an image of the catalog (catalog_alias.c) */
	uint64_t size;              /* an alias's: the length of its text */
	uint64_t ino;
	int64_t mtime;
	uint32_t nlink;
	uint32_t mode;              /* permission bits (0555, or the image file's read bits as r-x) */
	bool own;                   /* uid and gid below, not the mount's */
	uint32_t uid, gid;
};

struct qc_listing {                 /* a snapshot of one catalog directory, for readdir */
	size_t count;
	struct qc_attr *attrs;
	uint64_t *serials;          /* each image's version, checked before readdirplus hands its node id out */
	char **names;
	uint64_t self_ino, parent_ino;
};

/* The text of the alias node id (slot 0) names: 0, -ENOENT, or -EINVAL for no alias. */
int qc_alias_text(struct qm_catalog *c, fuse_ino_t nodeid, char *buf, size_t size);
/* The catalog directory or alias node id (slot 0) names, or -ENOENT. */
int qc_dir_attr(struct qm_catalog *c, fuse_ino_t nodeid, struct qc_attr *out);
/*
 * 'name' in catalog directory 'parent'; an image's node id comes with one
 * lookup counted.  A miss never lists here: a local file that would list
 * as 'name' is looked at alone, and otherwise the watcher is asked to list
 * (QC_MISS_REFRESH_S at most often).
 */
int qc_lookup(struct qm_catalog *c, fuse_ino_t parent, const char *name, struct qc_attr *out);
/* Count one lookup of listing entry 'a' if its version is still the one listed; false: it is not. */
bool qc_lookup_ref(struct qm_catalog *c, const struct qc_attr *a, uint64_t serial);
/* The attributes of an image's NAME directory (its root node id), without opening it. */
int qc_image_attr(struct qm_catalog *c, uint32_t slot, struct qc_attr *out);
int qc_list(struct qm_catalog *c, fuse_ino_t nodeid, struct qc_listing **out);
void qc_listing_free(struct qc_listing *l);

/*
 * The status text of `quash catalog ls` (malloc'd): names and ETags with
 * bytes below 0x20, 0x7f and '\\' written as \xHH.  Its size is the
 * catalog's; catalog_ops.c shares one text between opens.
 */
char *qc_status(struct qm_catalog *c, size_t *len);
/* A fingerprint of everything the status shows but idle times: equal, and the text is the same. */
uint64_t qc_status_epoch(struct qm_catalog *c);
/*
 * `quash catalog refresh`: qc_refresh_request() asks the watcher for a
 * listing (coalesced with any already asked for, QC_LIST_MIN_MS apart) and
 * returns its number; qc_refresh_state() writes where that listing is:
 * "done N images", "failed ERROR" or "pending".  Neither waits.
 */
uint64_t qc_refresh_request(struct qm_catalog *c);
int qc_refresh_state(struct qm_catalog *c, uint64_t gen, char *buf, size_t size);

/* ---- catalog_ctl.c: the control files, bounded per user ---- */

struct qc_ctl;
struct qc_ctl *qc_ctl_create(void);
void qc_ctl_destroy(struct qc_ctl *t);
struct qc_ctl *qc_ctl_of(struct qm_catalog *c);
/* Each answers its request: EMFILE past a user's or everyone's share of opens. */
void qc_ctl_open(struct qm_catalog *c, struct qc_ctl *t, fuse_req_t req, fuse_ino_t nodeid,
		 struct fuse_file_info *fi);
void qc_ctl_read(struct qm_catalog *c, fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi);
/* Gives the open's place back; the caller answers RELEASE. */
void qc_ctl_release(struct qc_ctl *t, struct fuse_file_info *fi);

/* What a catalog's session serves (catalog_ops.c): its operations, more workers as needed, the watcher. */
extern const struct qm_serve qc_serve;

#endif

/*
 * catalog_model.h - the catalog's model (catalog.c) without a FUSE
 * session: which file names give which names, and listings merged into
 * names and image versions with their slots.  catalog.c uses the name
 * rules itself; the qc_model_* calls are for tests/unit/test_catalog.c,
 * which checks the model apart from any mount.
 */
#ifndef QUASH_CATALOG_MODEL_H
#define QUASH_CATALOG_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qm_catalog;

/* Does the key end in an image's extension (.sqfs, .squashfs, .img, .sif) after at least one byte? */
bool qc_has_image_ext(const char *name);
/* Bytes below 0x20, or 0x7f: such names would forge lines in the status text. */
bool qc_has_control(const char *name);
/* Is a directory entry of a local catalog looked at: not hidden (".x", "." and ".."), no control bytes? */
bool qc_entry_listed(const char *name);
/* The name an image's last key component gives: its extension dropped, in place. */
void qc_strip_ext(char *name);
/* A name an image may take (after qc_strip_ext): not empty, ".", "..", a control file's, no control bytes. */
bool qc_image_name_ok(const char *name);

#define QC_KEY_MAX 1024             /* bytes of a key (a path below the catalog) */

/* Symlinks an alias's target is resolved through, at most. */
#define QC_ALIAS_HOPS 8
/* The rest of absolute path 'abs' below directory 'root' ("" for root itself); NULL: not below it. */
const char *qc_alias_inside(const char *root, const char *abs);
/*
 * The relative symlink text that leads from the entry at path 'from' to
 * the one at 'to' (both "dir/name" below the same root): 0 or -ENAMETOOLONG.
 */
int qc_alias_relative(const char *from, const char *to, char *out, size_t size);
/*
 * The key of the regular file the symlink at 'key' leads to, resolved one
 * name at a time from 'root_fd' (the catalog's root, whose absolute path is
 * 'root') with O_NOFOLLOW, through at most QC_ALIAS_HOPS symlinks, never
 * above the root.  0, or -errno with *why saying what is wrong.
 */
int qc_alias_resolve(int root_fd, const char *root, const char *key, char *out, size_t size, const char **why);

/* One image as a listing gives it; etag NULL or "" for none. */
struct qc_listed {
	const char *key;
	uint64_t size;
	int64_t mtime;
	const char *etag;
};

/* A catalog with no source, session or watcher: listings come from qc_model_merge(). NULL: no memory. */
struct qm_catalog *qc_model_new(void);
void qc_model_free(struct qm_catalog *c);
/* Merge a listing (any order) as a refresh would: 0 or -ENOMEM. */
int qc_model_merge(struct qm_catalog *c, const struct qc_listed *v, size_t n);
/*
 * What 'path' ("dir/name") names: 0 nothing, 1 a directory, 2 an image,
 * with the key, version and slot its current version has.
 */
int qc_model_find(struct qm_catalog *c, const char *path, const char **key, uint32_t *version, uint32_t *slot);
/* Keys the last merge left without a name of their own. */
size_t qc_model_shadowed(struct qm_catalog *c);
/* The kernel learns (n > 0) or forgets (n < 0) n lookups of a node id in 'slot'. */
void qc_model_lookups(struct qm_catalog *c, uint32_t slot, int64_t n);
/*
 * The watcher's sweep: slots of superseded versions nothing names taken
 * back; then every slot taken back so far is made 'age_s' seconds older,
 * as if that long had passed.  Returns the slots taken back now.
 */
size_t qc_model_sweep(struct qm_catalog *c, int64_t age_s);

#endif

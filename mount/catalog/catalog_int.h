/*
 * catalog_int.h - the catalog's model, shared by the files of catalog/
 * and by tests/unit/test_catalog.c: the names the source lists, the
 * images behind them and their versions.  Nothing here needs FUSE.
 *
 * A listing (list.c: a walk of a local directory, or qs_source_list() of
 * an http(s):// index or an s3:// prefix) gives each image a key; its
 * name is the key less its extension, and '/' in keys makes catalog
 * directories (names.c).  A local symlink named like an image whose target
 * is one of the catalog's images (resolved by alias.c at each listing) is
 * an alias: a symlink entry of slot 0 to the target's name.  Nothing of an
 * image is read until a request inside its directory pins it (open.c,
 * qc_pin): that opens the image, through the catalog's one block cache,
 * and the watcher (watcher.c) closes it again once nobody has used it for
 * idle= seconds (or when more than open_max are open).  The watcher also
 * lists the source again: on inotify events for a local directory, every
 * refresh= seconds, on `quash catalog refresh`, and (from a lookup,
 * dirs.c) when a name is not found.  A listing that shows an image with
 * another identity (size, mtime, inode, ETag) gives it a new version with
 * a new slot (merge.c, versions.c): new lookups see it, while files open
 * on the old version read on from the old image, which closes for good
 * once the last of them is closed.
 *
 * Node ids carry the image in their high bits, so that a request names its
 * image with no table: slot 0 is the catalog's own directories (node id =
 * directory index + 1, the root being FUSE_ROOT_ID) and its control files;
 * slot S >= 1 is one version of one image, with S << QC_SLOT_SHIFT | 1 its
 * root (the NAME directory) and S << QC_SLOT_SHIFT | (ref + 2) its other
 * inodes.  Node ids and st_ino (S << 32 | the image's inode number) stay
 * the same across an idle close and reopen, and a replaced image gets new
 * ones while the old version's open files go on.  A held catalog's server
 * writes each directory index and slot down before the kernel sees it
 * (journal.c), so that the next server gives them the same meaning.  A
 * superseded version's slot is reused only once the kernel has forgotten
 * every node id of it (FORGET), no file of it is open, and a quarantine
 * has passed, so a directory writer who replaces images in a loop cannot
 * run the slots out.
 *
 * Locks: c->lock (a rwlock) guards the names and directories; each image
 * version has its own mutex for its state and counters, taken after
 * c->lock when both are held, and never held across I/O: an image being
 * opened is marked so, and its other readers wait on its own condition
 * variable, so a slow server costs only that image's readers.  c->slot_lock
 * guards handing slots out and taking them back, never held with I/O
 * either.  Request threads never list: listings are the watcher's, at most
 * once every QC_LIST_MIN_MS whatever asks for them.  The kernel is told of
 * changed names by the watcher, never by a request's thread: invalidating
 * an entry takes the directory's lock, which a lookup in flight holds.
 */
#ifndef QUASH_CATALOG_INT_H
#define QUASH_CATALOG_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "log.h"
#include "view.h"

#define QC_SLOT_SHIFT 44
#define QC_LOCAL_MASK ((UINT64_C(1) << QC_SLOT_SHIFT) - 1)
#define QC_SLOTS_MAX ((1u << 20) - 1)      /* image versions alive at once (node id bits) */
#define QC_SLOT_QUARANTINE_S 5             /* a freed slot waits this long: page-cache pushes in flight end */
#define QC_ENTRIES_MAX 1000000u            /* images in one catalog */
#define QC_DEPTH_MAX 16                    /* directory levels of a local catalog, or of keys */
#define QC_KEY_MAX 1024                    /* bytes of a key (a path below the catalog) */
#define QC_FD_RESERVE 128                  /* descriptors kept for everything but images */
#define QC_MISS_REFRESH_S 2                /* a name not found lists again, at most this often */
#define QC_LIST_MIN_MS 1000                /* any two listings (inotify, refresh, misses) at least this apart */
#define QC_DIRS_MAX 100000u                /* directories one local listing walks */
#define QC_WATCH_MAX 8192u                 /* inotify watches: the uid's limit is shared with its other users */
#define QC_RETRY_S 10                      /* a failed open is tried again after this */
#define QC_DEFAULT_REMOTE_MEMORY (256u << 20)  /* remote chunks in memory, all images together */
#define QC_SHADOWED_SHOWN 8                /* keys without a name the status text names */
#define QC_ALIAS_HOPS 8                    /* symlinks an alias's target is resolved through, at most */

/* Control files at the root: looked up by name, never listed. */
#define QC_CTL_STATUS_NAME ".quash-catalog"
#define QC_CTL_REFRESH_NAME ".quash-refresh"
#define QC_CTL_STATUS ((uint64_t)QC_LOCAL_MASK)
#define QC_CTL_REFRESH ((uint64_t)QC_LOCAL_MASK - 1)

/* Extensions that make a file an image; anything else needs the squashfs magic (local only). */
#define QC_NEXTS 4
extern const char *const qc_image_exts[QC_NEXTS];

struct qm_fs;
struct qm_options;
struct qc_ctl;

static inline uint32_t qc_slot_of(uint64_t nodeid)
{
	return (uint32_t)(nodeid >> QC_SLOT_SHIFT);
}

struct qc_node {                    /* a name in the catalog: a directory or an image */
	char *name;
	struct qc_node *parent;
	bool is_dir;
	bool is_alias;              /* a symlink entry to an image of the catalog (alias.c) */
	bool seen;                  /* by the listing being merged */
	uint32_t dir_index;         /* directories and aliases: node id - 1 */
	char *target;               /* aliases: the symlink's text, the target's name relative to it */
	struct qc_node **kids;      /* directories: sorted by name */
	uint32_t nkids, kids_cap;
	struct qc_image *cur;       /* images: the version new lookups get */
	uint32_t versions;          /* images: versions the name has had */
};

struct qc_image {                   /* one version of one image: a slot */
	uint32_t slot;
	uint32_t version;           /* the name's 1st, 2nd, ... version: what `quash catalog ls` shows */
	uint64_t serial;            /* unique over the mount's life: a reused slot's new version differs */
	struct qm_catalog *cat;
	char *key;                  /* as listed: the path below the source */
	char *display;              /* the source and key, no secrets, for messages: made at first open */
	uint64_t size, dev, ino;
	int64_t mtime;
	char *etag;                 /* NULL: none */
	char *root_hash;            /* a remote index's verity root hash for it, or NULL (open.c) */
	uint32_t mode, uid, gid;    /* a local image file's: its NAME directory's access */
	bool inherited;             /* from a server before this one (journal.c): its node ids are not counted */

	pthread_mutex_t lock;
	pthread_cond_t opened;      /* an open under way ended */
	struct qm_view view;        /* view.img NULL: closed */
	atomic_bool open;           /* view.img is set: the idle sweep's quick look */
	bool opening;               /* a request is opening it, without the lock */
	unsigned users;             /* requests in flight */
	atomic_int opens;           /* open files and listings (view.opens) */
	_Atomic uint64_t lookups;   /* node ids the kernel holds (view.lookups); never below 0 if all are counted */
	int64_t last_used;
	atomic_bool superseded;     /* a newer version has the name, or the name is gone */
	bool gone;                  /* closed for good: its bytes cannot be found again */
	struct qc_image *lru_prev, *lru_next;   /* on c's list of open images, most recently opened first */
	int error;                  /* of the last failed open */
	char *reason;               /* its message, for `quash catalog ls` */
	int64_t failed_at;
	bool logged;                /* its failure has had its one line */
	uint64_t open_total;        /* times opened */
	_Atomic uint64_t bytes_read, reads;     /* from its source */
};

struct qc_handles {                 /* handles.c: file handle numbers to the objects they name */
	pthread_mutex_t lock;
	struct qc_hentry **buckets;
	size_t nbuckets, count;
	uint64_t next;              /* the next number: odd, never a pointer */
};

struct notice {                     /* an entry the kernel must forget */
	uint64_t parent;
	char *name;
};

struct qm_catalog {
	struct qm_fs *fs;
	const char *spec;           /* SOURCE as given */
	bool remote;
	int root_fd;                /* a local catalog's directory */
	char *root_abs;             /* its absolute path: what an absolute alias target must start with */
	/* -o verity_cert=: every image's NAME.roothash must be signed by one of these (open.c) */
	struct qs_verity_certs *certs;
	char *base;                 /* a remote catalog: what keys are appended to */
	struct qs_cache *cache;     /* the one block cache of every image */
	struct qs_memory_budget remote_memory;  /* the one bound on remote images' chunks in memory */
	unsigned idle, refresh, open_max;

	bool file_modes;            /* allow_other: an image is served to those its file is readable by */
	struct qc_ctl *ctl;         /* the control files' opens and shared status text (ctl.c) */
	struct qc_handles handles;  /* of catalog directories' listings and control files (handles.c) */

	pthread_rwlock_t lock;
	struct qc_node root;
	struct qc_node **dirs;      /* by index; NULL once removed */
	uint32_t ndirs, dirs_cap;
	size_t nimages;
	_Atomic(struct qc_image *) *slots;  /* QC_SLOTS_MAX + 1, calloc'd: untouched pages cost nothing */
	atomic_uint nslots;         /* slots ever handed out; slot 0 is the catalog itself */
	int64_t changed;            /* when a name last came or went: the directories' mtime */

	pthread_mutex_t slot_lock;  /* handing out and taking back slots */
	struct freed { uint32_t slot; int64_t at; } *freed;     /* a FIFO of slots taken back */
	size_t freed_head, freed_n, freed_cap;
	uint64_t next_serial;
	size_t slots_short;         /* changed images the last listing left at their old version */
	size_t nshadowed;           /* listed keys without a name of their own (under c->lock) */
	char shadowed[QC_SHADOWED_SHOWN][QC_KEY_MAX + 48];
	size_t naliases;            /* alias entries (under c->lock) */
	size_t nunserved;           /* symlinks named as images that are no alias, and why */
	char unserved[QC_SHADOWED_SHOWN][QC_KEY_MAX + 64];
	uint64_t *was_unserved, *now_unserved;  /* each line's hash, the last merge's sorted: logged once */
	size_t nwas_unserved, nnow_unserved, was_cap, now_cap;
	size_t nnewly;              /* lines the last merge had not: the first few kept to be logged */
	char newly[QC_SHADOWED_SHOWN][QC_KEY_MAX + 64];

	pthread_mutex_t open_lock;  /* the list of open images */
	struct qc_image *lru_head, *lru_tail;
	unsigned nopen, nopen_old;
	_Atomic int64_t emfile_logged;

	_Atomic uint64_t bytes_read;    /* from every image's source */
	atomic_uint epoch;          /* bumped by anything the status shows but counters */

	pthread_mutex_t list_lock;  /* one listing at a time */
	int64_t listed_at;
	_Atomic int64_t listed_at_ms;   /* when the last listing ended, for the rate limit */
	_Atomic uint64_t gen_started, gen_done; /* listings begun; listings merged and told to the kernel */
	_Atomic uint64_t gen_wanted;    /* the listing a refresh asked for */
	_Atomic int64_t miss_at;    /* when a lookup's miss last asked for a listing */
	_Atomic uint64_t last_hash; /* of the last listing merged: an equal one changes nothing */
	char list_error[256];       /* under nlock */
	int *wds;                   /* the inotify watches of the last listing, sorted */
	size_t nwds, wds_cap;
	unsigned dirs_walked;
	bool watches_full, dirs_full;

	pthread_mutex_t nlock;      /* the notices, and the last listing's result */
	char result[300];           /* for qc_refresh_state: "done N images" or "failed ERROR" */
	struct notice *notices;
	size_t nnotices, notices_cap;
	bool flush_all;

	pthread_mutex_t jlock;      /* the state file (journal.c), innermost of all */
	int jfd;                    /* a held catalog's state file, or -1: set under jlock, read atomically without it */
	size_t jbytes, jlive;       /* its size, and its size when last rewritten */

	int inotify_fd;
	int wake[2];                /* a pipe: refresh now, notices waiting, stop */
	atomic_bool refresh_wanted, stop;
	pthread_t watcher;
	bool watching;
};

struct item {                       /* one image as a listing gives it */
	char *key;
	uint64_t size, dev, ino;
	int64_t mtime;
	char *etag;
	uint32_t mode, uid, gid;
	char *root_hash;            /* a text index's third column, or NULL */
	bool is_link;               /* a symlink named as an image: an alias, or why it is none */
	char *alias;                /* its target's key; NULL: not served, for 'why' */
	const char *why;
};

struct items {
	struct item *v;
	size_t n, cap;
	bool too_many;
	XXH3_state_t *hash;         /* of every item, in order: an unchanged listing merges nothing */
};

static inline int64_t qc_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

static inline int64_t qc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wake the watcher: a listing is wanted, notices wait, or it must stop. */
static inline void qc_wake(struct qm_catalog *c)
{
	char b = 1;

	if (write(c->wake[1], &b, 1) < 0 && errno != EAGAIN)
		qm_log(c->fs, "catalog: wake: %s", strerror(errno));
}

/* A directory's or an alias's node id (slot 0). */
static inline uint64_t qc_dir_nodeid(const struct qc_node *dir)
{
	return (uint64_t)dir->dir_index + 1;
}

/* ---- names.c: the tree of names, and which file names give which names ---- */

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

struct qc_node *qc_find_kid(const struct qc_node *dir, const char *name);
/* The _at forms put a directory or alias at a given index (journal.c's seeding); the others at the next. */
struct qc_node *qc_add_kid_at(struct qm_catalog *c, struct qc_node *dir, const char *name, bool is_dir,
			      uint32_t index);
struct qc_node *qc_add_alias_at(struct qm_catalog *c, struct qc_node *dir, const char *name, const char *target,
				uint32_t index);
/* Entry 'name' of 'parent' for the watcher to tell the kernel to forget. */
void qc_queue_notice(struct qm_catalog *c, const struct qc_node *parent, const char *name);
struct qc_node *qc_add_kid(struct qm_catalog *c, struct qc_node *dir, const char *name, bool is_dir);
struct qc_node *qc_add_alias(struct qm_catalog *c, struct qc_node *dir, const char *name, const char *target);
void qc_remove_kid(struct qm_catalog *c, struct qc_node *n);
void qc_free_node(struct qm_catalog *c, struct qc_node *n);

/* ---- versions.c: image versions and their slots ---- */

void qc_image_free(struct qc_image *im);
char *qc_etag_dup(const char *etag, bool *failed);
bool qc_etag_eq(const char *a, const char *b);
const char *qc_display_of(struct qc_image *im);
struct qc_image *qc_new_version(struct qm_catalog *c, const char *key, const char *etag, int *err);
/* A version in a given slot with a given serial (qc_new_version's, and journal.c's seeding); NULL: no memory. */
struct qc_image *qc_version_at(struct qm_catalog *c, uint32_t slot, uint64_t serial, const char *key,
				const char *etag, int *err);
/* A slot no node id names back on the list of free ones; false: no memory. */
bool qc_slot_release(struct qm_catalog *c, uint32_t slot);
bool qc_reclaim(struct qm_catalog *c, struct qc_image *im);
struct qc_image *qc_slot(struct qm_catalog *c, uint32_t slot);
/*
 * The kernel forgot 'n' lookups of a node id in 'slot'; ops.c counts those
 * it answers itself through the view, qc_lookup() and qc_lookup_ref() the
 * catalog's.
 */
void qc_forget(struct qm_catalog *c, uint64_t nodeid, uint64_t n);

/* ---- open.c: opening a version's image, and the open images ---- */

/*
 * The image a node id belongs to, opened if need be and held for one
 * request (qc_unpin).  NULL with *err: -ESTALE for a version that is gone,
 * -EIO for an image that cannot be opened (logged once).
 */
struct qc_image *qc_pin(struct qm_catalog *c, uint32_t slot, int *err);
void qc_unpin(struct qc_image *im);
/* Its view (valid while pinned), or of an image not pinned: only for counting opens. */
struct qm_view *qc_view(struct qc_image *im);
/* The watcher's: close what is idle or superseded, take back slots nothing names. */
void qc_sweep_idle(struct qm_catalog *c);

/* ---- list.c: listing the source ---- */

int qc_items_add(struct items *it, const char *key, const struct stat *st, const char *etag,
		 const struct qs_list_entry *ent);
void qc_items_free(struct items *it);
/* Is this directory entry an image (a regular file with an extension or the magic)? */
bool qc_local_image(int dfd, const char *name, const struct stat *st);
int qc_list_source(struct qm_catalog *c, struct items *out);

/* ---- merge.c: a listing merged into the names ---- */

int qc_cmp_item(const void *a, const void *b);
int qc_merge_item(struct qm_catalog *c, const struct item *x, const struct items *all);
int qc_merge(struct qm_catalog *c, struct items *items);
int qc_refresh(struct qm_catalog *c);

/* ---- watcher.c ---- */

/* Start watching (inotify, refresh, idle close) once the session is up. */
int qc_start(struct qm_catalog *c);
/* Stop the watcher: before the session it sends notices through is destroyed. */
void qc_stop(struct qm_catalog *c);
/*
 * `quash catalog refresh`: qc_refresh_request() asks the watcher for a
 * listing (coalesced with any already asked for, QC_LIST_MIN_MS apart) and
 * returns its number; qc_refresh_state() writes where that listing is:
 * "done N images", "failed ERROR" or "pending".  Neither waits.
 */
uint64_t qc_refresh_request(struct qm_catalog *c);
int qc_refresh_state(struct qm_catalog *c, uint64_t gen, char *buf, size_t size);

/* ---- dirs.c: the catalog's own directories, for the operations ---- */

struct qc_attr {
	uint64_t nodeid;
	bool is_dir;                /* a catalog directory, not an image */
	bool is_alias;              /* a symlink to an image of the catalog (alias.c) */
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
int qc_alias_text(struct qm_catalog *c, uint64_t nodeid, char *buf, size_t size);
/* The catalog directory or alias node id (slot 0) names, or -ENOENT. */
int qc_dir_attr(struct qm_catalog *c, uint64_t nodeid, struct qc_attr *out);
/*
 * 'name' in catalog directory 'parent'; an image's node id comes with one
 * lookup counted.  A miss never lists here: a local file that would list
 * as 'name' is looked at alone, and otherwise the watcher is asked to list
 * (QC_MISS_REFRESH_S at most often).
 */
int qc_lookup(struct qm_catalog *c, uint64_t parent, const char *name, struct qc_attr *out);
/* Count one lookup of listing entry 'a' if its version is still the one listed; false: it is not. */
bool qc_lookup_ref(struct qm_catalog *c, const struct qc_attr *a, uint64_t serial);
/* The attributes of an image's NAME directory (its root node id), without opening it. */
int qc_image_attr(struct qm_catalog *c, uint32_t slot, struct qc_attr *out);
int qc_list(struct qm_catalog *c, uint64_t nodeid, struct qc_listing **out);
void qc_listing_free(struct qc_listing *l);

/* ---- status.c ---- */

/*
 * The status text of `quash catalog ls` (malloc'd): names and ETags with
 * bytes below 0x20, 0x7f and '\\' written as \xHH.  Its size is the
 * catalog's; ctl.c shares one text between opens.
 */
char *qc_status(struct qm_catalog *c, size_t *len);
/* A fingerprint of everything the status shows but idle times: equal, and the text is the same. */
uint64_t qc_status_epoch(struct qm_catalog *c);

/* ---- catalog.c: life ---- */

/*
 * A catalog with no listing yet, its settings from 'opt': the state the
 * daemon's qc_create() and the unit tests' qc_model_new() share.  NULL when
 * out of memory.
 */
struct qm_catalog *qc_catalog_new(struct qm_fs *fs, const struct qm_options *opt);
void qc_destroy(struct qm_catalog *c);

/* ---- alias.c: resolving a local alias's target ---- */

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

/* ---- handles.c: file handles that are numbers, not pointers ---- */

void qc_handles_init(struct qc_handles *h);
/* free_obj(obj, arg) for each object still named. */
void qc_handles_destroy(struct qc_handles *h, void (*free_obj)(void *obj, void *arg), void *arg);
/* A new handle for obj; 0: no memory. */
uint64_t qc_handle_add(struct qc_handles *h, void *obj);
/* obj under a handle a server before this one made; the object already there if any, NULL: no memory. */
void *qc_handle_set(struct qc_handles *h, uint64_t fh, void *obj);
/* The object of a handle, NULL: none here (a server before this one made it). */
void *qc_handle_get(struct qc_handles *h, uint64_t fh);
/* ... taken out: the handle's release. */
void *qc_handle_take(struct qc_handles *h, uint64_t fh);

/* ---- journal.c, seed.c: a held catalog's state file (mount/holder.h), written and read back ---- */

/*
 * Each is written before the kernel can see what it names: a directory or
 * alias made (its index), a version given a slot or new access bits, and
 * either one gone.  No-ops unless the catalog keeps a state file.
 */
void qc_journal_dir(struct qm_catalog *c, const struct qc_node *n);
void qc_journal_slot(struct qm_catalog *c, const struct qc_image *im);
void qc_journal_gone(struct qm_catalog *c, bool slot, uint32_t id);
/*
 * A new server's first step: the directories and versions the state file
 * 'fd' names, at their indices and slots (c->lock taken for writing), so
 * that the node ids the kernel holds mean what they meant.  0 or -errno.
 */
int qc_journal_seed(struct qm_catalog *c, int fd);
/* Start a state file of this server's with what is live, and hand it to the holder; 0 or -errno. */
int qc_journal_start(struct qm_catalog *c);
/* The watcher's: a state file grown past twice what is live is written again. */
void qc_journal_tidy(struct qm_catalog *c);

/* ---- model.c: the model without a session, for tests/unit/test_catalog.c ---- */

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
/* The node id of catalog directory 'path' ("" the root), 0: none. */
uint64_t qc_model_dir(struct qm_catalog *c, const char *path);
/* Write the state file (journal.c) to fd from now on, as a held catalog's server does; freeing c closes fd. */
void qc_model_journal(struct qm_catalog *c, int fd);
/* The kernel learns (n > 0) or forgets (n < 0) n lookups of a node id in 'slot'. */
void qc_model_lookups(struct qm_catalog *c, uint32_t slot, int64_t n);
/*
 * The watcher's sweep: slots of superseded versions nothing names taken
 * back; then every slot taken back so far is made 'age_s' seconds older,
 * as if that long had passed.  Returns the slots taken back now.
 */
size_t qc_model_sweep(struct qm_catalog *c, int64_t age_s);

#endif

/*
 * tree.h - the in-memory tree that every source is merged into.
 *
 * A pack_dirent is a name in a directory; a pack_inode is what it names.
 * Hard links are several dirents sharing one inode.  Sources only add and
 * replace entries; once all are read, tree_finish() sorts every directory
 * bytewise, counts links and applies the ownership/mode/time overrides, so
 * that everything later is a pure function of the merged tree.
 */
#ifndef QUASH_PACK_TREE_H
#define QUASH_PACK_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <regex.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "mode.h"

/*
 * A directory of a source tree, as the scan saw it.  The data phase never
 * opens a file by its path: it walks down from the source's root
 * descriptor one name at a time with O_NOFOLLOW, checking each
 * directory's (dev, ino) against these, so that a directory swapped for
 * a symlink after the scan cannot send it outside the source.
 */
struct pack_srcdir {
	struct pack_srcdir *parent; /* NULL for a source's root */
	uint32_t index;             /* pack_tree.srcdir_table[index - 1] is this (pack_inode.srcdir) */
	int root_fd;                /* a root's, open for the whole run; -1 below it */
	dev_t dev;
	ino_t ino;
	char *path;                 /* for messages only */
	struct pack_srcdir *next;   /* every srcdir of the tree, for freeing */
	/*
	 * Its files that are mount points (a file bind-mounted over, as in a
	 * running container's /etc): on another device than the directory.
	 * Rare, so a file keeps no device of its own (tree_file_dev()).
	 */
	struct pack_file_dev *file_devs;
	uint32_t file_dev_count;
	char name[];                /* within the parent */
};

struct pack_file_dev {
	const struct pack_inode *file;
	dev_t dev;
};

/*
 * Where a regular file's bytes are read from in the data phase.  A scanned
 * file's name in its directory is kept after its inode (tree_file_name()):
 * the data phase opens it by that name.
 */
struct pack_content {
	union {
		ino_t ino;              /* pack_inode.srcdir: what the scan found at that name (tree_file_dev(): on which device) */
		uint64_t spool_offset;  /* no srcdir: bytes at this offset of the archive spool */
		uint64_t stored_ref;    /* pack_inode.stored: its inode in the image appended to */
	};
};

struct pack_xattr {
	char *name;                 /* full name, "user.foo" */
	uint8_t *value;
	uint32_t len;
};

struct pack_xattrs {                /* an inode's xattrs, sorted by name */
	struct pack_xattr *list;
	uint32_t count;
	uint32_t id;                /* in the xattr id table, once the tables are written (xattr.c) */
};

/*
 * What few inodes have, in one allocation apart from the inode (NULL when
 * it has neither): its xattrs, and a regular file's data blocks: where
 * they start, the bytes stored as holes, and the size words its inode ends
 * with, kept in pages of BLOCK_LIST_PAGE words, 'count' of them.  Most
 * small files are all in a fragment and have no xattrs: at a million files
 * one pointer for both is 8 MB less than two.  A page no data block fell
 * in is never allocated: holes are size 0, and a sparse file costs nothing
 * for them (a 10 KiB tar may declare a file of terabytes).
 */
#define BLOCK_LIST_PAGE 1024u

struct pack_extra {
	struct pack_xattrs xattrs;  /* count 0: none */
	uint64_t start;             /* image offset of the first block */
	uint64_t sparse;            /* bytes in all-zero blocks stored as holes */
	uint32_t count;             /* blocks, holes included */
	bool has_pages;             /* pages[] is there: count / BLOCK_LIST_PAGE + 1 of them */
	uint32_t *pages[];          /* NULL = every word 0 */
};

struct pack_dirent;
struct pack_inode;
struct pack_tree;

/*
 * A directory's child: a name and the inode it names.  Most names in a
 * large tree are the one a regular file was found by, in its source
 * directory or its archive, which tree_file_new() keeps after the inode:
 * such a child is the inode's own pointer, tagged, and costs nothing else.
 * Any other child points at a pack_dirent holding the name.  A dirent for
 * every name was 16-24 bytes a file: 24 MB at a million files of a tar.
 * Read a child only through tree_child_inode() and tree_child_name().
 */
typedef struct {
	uintptr_t bits;             /* a pack_dirent *, or a pack_inode * with bit 0 set */
} pack_child;

/*
 * Fields are ordered so that nothing is padding, and an inode is allocated
 * (in the tree's arena) only as large as its type's part of the union: a
 * tree of a million files holds a million of these, so what most files do
 * not have (xattrs and their id; data blocks, their count, holes; a device
 * of its own) is kept apart, and every field is as wide as squashfs stores
 * it (owners as 16-bit indices into the tree's id table; a source directory
 * as an index too).  A file is 64 bytes.
 */
struct pack_inode {
	uint16_t mode;              /* st_mode, type bits included */
	/* Flags: set by the scan, then by the data phase's main thread only. */
	bool written : 1;           /* its inode is in the table (hard links meet it again) */
	/*
	 * From the image being appended to (append.c): its metadata is kept as
	 * stored (no overrides), and a file's data is already in the image, at
	 * the positions its fields below hold; its bytes are read back through
	 * libquash, by u.file.content.stored_ref, only to compare it with new
	 * files.
	 */
	bool stored : 1;
	bool counted : 1;           /* tree_finish() has met it */
	bool named : 1;             /* a file made by tree_file_new(): its name is kept after it */
	bool data_done : 1;         /* a file's data is written, or queued */
	bool hash_done : 1;         /* a stored file already indexed (hard links meet it again) */
	bool xattrs_pending : 1;    /* to be read when the data phase opens the file (scan_dir.c) */
	bool is_dup : 1;            /* a file whose u.file.dup_blocks, not hash, is set */
	bool prefetched;            /* a byte of its own: the data phase's prefetcher sets it (prefetch.c) */
	/* Owner: indices into pack_tree.ids, as squashfs keeps them (tree_set_owner(), tree_uid()). */
	uint16_t uid, gid;
	/* Names in the tree naming it: a non-directory's link count (tree_nlink()). */
	uint32_t refs;
	/* Assigned while writing; the inode table reference is in image_writer.export. */
	uint32_t ino;               /* 1 .. inode count, 0 = not yet numbered */
	uint32_t mtime;             /* as squashfs stores it: tree_time() clamps */
	/* A scanned file's source directory, pack_tree.srcdir_table[srcdir - 1] (tree_srcdir()); else 0. */
	uint32_t srcdir;
	struct pack_extra *extra;   /* xattrs, data blocks: NULL, none (tree_xattrs(), tree_blocks()) */

	union {
		struct {
			struct pack_content content;
			uint64_t size;
			union {
				uint64_t hash;              /* of the contents, for deduplication */
				/*
				 * is_dup: the blocks of the earlier file whose data this
				 * one shares (its extra, or NULL), its fragment and offset
				 * copied below; never the earlier inode itself, which the
				 * tables phase would then read out of order.
				 */
				const struct pack_extra *dup_blocks;
			};
			uint32_t fragment;          /* SQFS_INVALID_FRAG if none */
			uint32_t frag_offset;
		} file;
		struct {
			char *target;
		} symlink;
		struct {
			uint32_t rdev;      /* Linux "new" encoding, as squashfs stores it */
		} dev;                      /* block and character devices (also the size of a fifo's or socket's) */
		struct {
			pack_child *children;
			size_t count, cap;
			/*
			 * Name lookup (tree.c): open addressing, a child's index + 1
			 * per slot, built on the first lookup in a directory of more
			 * than TREE_LINEAR_LOOKUP_MAX names; NULL otherwise.
			 */
			uint32_t *lookup;
			uint32_t lookup_size;
			uint32_t nlink;             /* 2 + subdirectories, counted by tree_finish() */
			uint32_t parent_ino;
			uint32_t listing_size;      /* directory table bytes, headers included */
			uint32_t start_block;       /* directory table block, relative */
			uint16_t offset;
			struct pack_dir_index *index;
			uint32_t index_count;
		} dir;
	} u;
};

/*
 * A name in a directory that is not the name its inode keeps (a
 * directory's, a symlink's, a hard link's second name, a renamed or
 * replaced entry): it lives in the tree's arena (tree.c), not one malloc()
 * each.  Read it through the pack_child that holds it.
 */
struct pack_dirent {
	struct pack_inode *inode;
	uint32_t name_len;
	char name[];                        /* NUL-terminated */
};

/* An index entry of a large directory: where a header starts, and its first name. */
struct pack_dir_index {
	uint32_t index;             /* byte offset into the listing */
	uint32_t start_block;       /* directory table block, relative to the table */
	const char *name;
	size_t name_len;
};

/* How the user wants ownership, permissions and times changed. */
struct pack_overrides {
	bool all_root;
	int64_t uid, gid;           /* -1: keep */
	int64_t mode;               /* -1: keep; else permission bits for every inode */
	/* mksquashfs -force-file-mode, -force-dir-mode: changes to every non-directory's, directory's mode, or NULL */
	const struct mode_spec *file_mode, *dir_mode;
	int64_t mtime;              /* -1: keep; else every inode's time */
	int64_t mtime_max;          /* -1: keep; else later times become this (mksquashfs's SOURCE_DATE_EPOCH) */
	bool no_xattrs;
	/* mksquashfs -xattrs-include / -xattrs-exclude: xattr names kept / dropped (POSIX EREs), or NULL */
	const regex_t *xattrs_include, *xattrs_exclude;
	/* mksquashfs -xattrs-add: put on every new inode, a user.* name on files and directories only */
	const struct pack_xattr *xattrs_add;
	size_t xattrs_add_count;
};

struct tree_arena;

struct pack_tree {
	struct pack_inode *root;
	struct tree_arena *arena;   /* every inode and dirent (tree.c) */
	struct tree_arena *dir_arena; /* but directories' inodes */
	struct spill *spill;        /* where the arena and child arrays come from (NULL: malloc()) */
	uint64_t file_count;        /* regular-file inodes in the final tree */
	uint64_t inode_count;
	uint64_t data_bytes;        /* sum of regular-file sizes */
	uint64_t dir_count, symlink_count, device_count, fifo_count, socket_count;
	uint64_t hardlinked;        /* inodes with more than one name */
	int64_t newest_mtime;
	struct pack_srcdir *srcdirs; /* every source directory scanned */
	struct pack_srcdir **srcdir_table; /* the same, by pack_srcdir.index - 1 */
	uint32_t srcdir_count, srcdir_cap;
	/*
	 * Every uid and gid an inode has, in the order first met (tree_id()):
	 * the image's id table holds at most TREE_IDS_MAX, and so an inode's
	 * owner is two 16-bit indices here.
	 */
	uint32_t *ids;
	uint32_t id_count;
	uint32_t *id_slots;         /* open addressing: an index + 1 per slot, 0 empty */
	uint32_t id_slot_count;
	/*
	 * The owner every new inode will have once tree_finish() applies the
	 * overrides (-1: its own): taken at once, so that a source of more
	 * owners than an image holds packs with -all-root as it would.
	 */
	int64_t forced_uid, forced_gid;
};

#define TREE_IDS_MAX 65536u

/*
 * Metadata for what a source implies but does not list (an archive's
 * missing directories, -pd's): as given, owners not yet in the tree.
 */
struct pack_meta {
	uint32_t mode, uid, gid, mtime;
};

/* The index of 'id' in t->ids, added if new: 0, -ENOMEM, or -E2BIG (said in one line) past TREE_IDS_MAX. */
int tree_id(struct pack_tree *t, uint32_t id, uint16_t *index);
/* Give 'inode' this owner (or the forced one, unless it is stored): 0 or as tree_id(). */
int tree_set_owner(struct pack_tree *t, struct pack_inode *inode, uint32_t uid, uint32_t gid);
static inline uint32_t tree_uid(const struct pack_tree *t, const struct pack_inode *i)
{
	return t->ids[i->uid];
}
static inline uint32_t tree_gid(const struct pack_tree *t, const struct pack_inode *i)
{
	return t->ids[i->gid];
}
/* A scanned file's source directory, or NULL (an archive's, a pseudo file, a stored file). */
static inline struct pack_srcdir *tree_srcdir(const struct pack_tree *t, const struct pack_inode *file)
{
	return file->srcdir ? t->srcdir_table[file->srcdir - 1] : NULL;
}

int tree_init(struct pack_tree *t);
/* Free the entries (and the sources' descriptors), keeping the counts tree_finish() gathered. */
void tree_release(struct pack_tree *t);
/* The same; a tree released already is left as it is. */
void tree_free(struct pack_tree *t);

/* A source directory below 'parent' (NULL: a root, which takes over root_fd); NULL if out of memory. */
struct pack_srcdir *tree_srcdir_add(struct pack_tree *t, struct pack_srcdir *parent, const char *name,
				    const char *path, dev_t dev, ino_t ino, int root_fd);

/*
 * A new inode of 'mode''s type, in t's arena: it lives as long as the tree
 * (NULL if out of memory).  Only its type's part of the union exists.
 */
struct pack_inode *tree_inode_new(struct pack_tree *t, uint32_t mode);
/*
 * A regular file found as 'name' in a source directory or an archive, the
 * name kept after the inode: a child of that name costs no dirent.
 */
struct pack_inode *tree_file_new(struct pack_tree *t, uint32_t mode, const char *name, size_t len);
/* That name: right after the inode's regular-file part. */
static inline const char *tree_file_name(const struct pack_inode *file)
{
	return (const char *)file + ((offsetof(struct pack_inode, u) + sizeof(file->u.file) + 7) & ~(size_t)7);
}
/* The device a scanned file was found on: its directory's, unless it is a mount point. */
dev_t tree_file_dev(const struct pack_tree *t, const struct pack_inode *file);
/* Record that device (srcdir and content.ino set); 0 or -ENOMEM. */
int tree_set_file_dev(struct pack_tree *t, struct pack_inode *file, dev_t dev);
static inline bool tree_child_is_file_name(pack_child c)
{
	return c.bits & 1;
}
/* The inode child c names. */
static inline struct pack_inode *tree_child_inode(pack_child c)
{
	return tree_child_is_file_name(c) ? (struct pack_inode *)(c.bits - 1) : ((struct pack_dirent *)c.bits)->inode;
}
/* Its name, NUL-terminated. */
static inline const char *tree_child_name(pack_child c)
{
	return tree_child_is_file_name(c) ? tree_file_name((struct pack_inode *)(c.bits - 1))
					  : ((struct pack_dirent *)c.bits)->name;
}
static inline uint32_t tree_child_name_len(pack_child c)
{
	return tree_child_is_file_name(c) ? (uint32_t)strlen(tree_child_name(c)) : ((struct pack_dirent *)c.bits)->name_len;
}
/* qsort() order of two pack_child: their names, bytewise, as squashfs lists them. */
int tree_child_cmp(const void *a, const void *b);
/*
 * Drop one name's hold on an inode; with the last, frees what it owns (a
 * directory's subtree, a file's block list, xattrs).  The inode itself is
 * the arena's.  't' may be NULL only for an inode with nothing of the
 * tree's spill (a directory never given a child): what a directory holds
 * may be the spill file's (spill.c), which only 't' can tell from the heap.
 */
void tree_inode_put(struct pack_tree *t, struct pack_inode *inode);
/*
 * A file's data blocks (their start, holes and size words), or NULL: none,
 * or none yet.  An inode with xattrs only has them all 0.
 */
static inline struct pack_extra *tree_blocks(const struct pack_inode *file)
{
	return file->extra;
}
/* Blocks of a file's data (holes included), as its inode lists them. */
static inline uint32_t tree_block_count(const struct pack_inode *file)
{
	return file->extra ? file->extra->count : 0;
}
/* Give a file a list of 'count' blocks, all holes at offset 0 (once); 0 or -ENOMEM. */
int tree_blocks_new(struct pack_inode *file, uint32_t count);
/* Where word i of b is stored, allocating its page; NULL when out of memory. */
uint32_t *blocks_slot(struct pack_extra *b, uint32_t i);
/* Page p (words p * BLOCK_LIST_PAGE on), or NULL when all of it is 0. */
static inline const uint32_t *blocks_page(const struct pack_extra *b, uint32_t p)
{
	return b && b->has_pages ? b->pages[p] : NULL;
}
/* Its link count: a directory's 2 + subdirectories, any other's names. */
static inline uint32_t tree_nlink(const struct pack_inode *i)
{
	return (i->mode & 0170000) == 0040000 ? i->u.dir.nlink : i->refs;
}
/* Its xattr id (xattr_assign()), or 0xffffffff (SQFS_INVALID_XATTR) without xattrs. */
static inline uint32_t tree_xattr_id(const struct pack_inode *i)
{
	return i->extra && i->extra->xattrs.count ? i->extra->xattrs.id : 0xffffffffu;
}
/* A time as squashfs stores it: 0 before 1970, the last second of 2106 after it. */
static inline uint32_t tree_time(int64_t t)
{
	return t < 0 ? 0 : t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}
/* A device's number; nothing for other types. */
static inline void tree_set_rdev(struct pack_inode *i, uint32_t rdev)
{
	if ((i->mode & 0170000) == 0020000 || (i->mode & 0170000) == 0060000)
		i->u.dev.rdev = rdev;
}

/*
 * A directory met again (another source, a later archive entry, an
 * archive's "./") takes the new one's mode, owner, time and xattrs
 * (moved: 'inode' is left without any).
 */
void tree_take_metadata(struct pack_inode *old, struct pack_inode *inode);

/* The inode at 'path' ('/'-separated, from the root, already clean), or NULL. */
struct pack_inode *tree_find_path(struct pack_tree *t, const char *path);

/* The inode at 'name' in directory 'dir', or NULL. */
struct pack_inode *tree_lookup(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len);

/*
 * Put 'inode' at 'name' in 'dir'; a later entry wins.  Replacing a
 * directory by a directory keeps its children (the sources merge) and
 * takes the new metadata; anything else replaces the old inode.  Returns
 * the inode now at that name (which may be the old directory), or NULL
 * on allocation failure.  Takes over the caller's reference to 'inode'.
 */
struct pack_inode *tree_insert(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len,
			       struct pack_inode *inode);

/*
 * Give child 'c' of directory 'dir' another name (none may exist there);
 * 0 or -ENOMEM.  'c' is replaced by a new child: copies of it go stale.
 */
int tree_rename(struct pack_tree *t, struct pack_inode *dir, pack_child c, const char *name, size_t len);

/* Add one more name for an existing inode (a hard link). */
int tree_link(struct pack_tree *t, struct pack_inode *dir, const char *name, size_t len,
	      struct pack_inode *inode);

/*
 * Walk 'path' ('/'-separated, already made relative and free of "." and
 * "..") from the root, creating missing directories with 'implicit' as
 * their metadata.  Returns the directory that holds the last component
 * and points *leaf at that component.
 */
struct pack_inode *tree_walk_parent(struct pack_tree *t, const char *path, const struct pack_meta *implicit,
				    const char **leaf, size_t *leaf_len);

/*
 * Free the directories' lookup tables: once the data phase starts, the
 * tree is only walked, and they cost 4-8 bytes an entry at the peak.
 * (A later lookup would build its directory's table again.)
 */
void tree_drop_index(struct pack_tree *t);

/* Sort, count links, apply overrides, gather totals. */
int tree_finish(struct pack_tree *t, const struct pack_overrides *o);
/*
 * The owner and mode overrides of 'o' (all_root, uid, gid, file_mode,
 * dir_mode) applied now, once to every inode the tree holds, for
 * mksquashfs's -pseudo-override: what is added after keeps its own, and
 * tree_finish() is then given overrides without them.
 */
int tree_force_owners_modes(struct pack_tree *t, const struct pack_overrides *o);

/* Depth-first, children in sorted order; directories before their contents. */
typedef int (*tree_visit_fn)(struct pack_inode *inode, void *arg);
int tree_walk_files(struct pack_inode *dir, tree_visit_fn fn, void *arg);

void tree_xattrs_free(struct pack_xattrs *x);
/* Append a copy of one xattr; -ENOMEM if out of memory. */
int tree_xattrs_add(struct pack_xattrs *x, const char *name, const void *value, size_t len);
/* An inode's xattrs, to read: none is the empty set. */
static inline const struct pack_xattrs *tree_xattrs(const struct pack_inode *i)
{
	static const struct pack_xattrs none;

	return i->extra ? &i->extra->xattrs : &none;
}
/* The same, to change in place (sort, filter, number): NULL when it has none. */
static inline struct pack_xattrs *tree_xattrs_mut(struct pack_inode *i)
{
	return i->extra && i->extra->xattrs.count ? &i->extra->xattrs : NULL;
}
/* Give 'inode' the set *x, which is taken over (emptied, even on failure); 0 or -ENOMEM. */
int tree_set_xattrs(struct pack_inode *inode, struct pack_xattrs *x);
/* tree_xattrs_add() to the inode's own set, made if it has none. */
int tree_xattr_add(struct pack_inode *inode, const char *name, const void *value, size_t len);
/* Free the inode's set. */
void tree_drop_xattrs(struct pack_inode *inode);
/* Sort by name and drop names squashfs cannot store (outside user/trusted/security). */
void tree_xattrs_normalize(struct pack_xattrs *x);
/* The same, and keep only names 'include' matches and 'exclude' does not (either may be NULL). */
void tree_xattrs_filter(struct pack_xattrs *x, const regex_t *include, const regex_t *exclude);

static inline bool tree_is_dir(const struct pack_inode *i) { return (i->mode & 0170000) == 0040000; }
static inline bool tree_is_reg(const struct pack_inode *i) { return (i->mode & 0170000) == 0100000; }
static inline bool tree_is_symlink(const struct pack_inode *i) { return (i->mode & 0170000) == 0120000; }

#endif

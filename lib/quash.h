/*
 * quash.h - the whole public contract of libquash, a reader of squashfs 4.0
 * images.
 *
 * Conventions
 *  - Every function that can fail returns 0 (or a count) on success and a
 *    negative errno on failure, and leaves a one-line description of what
 *    went wrong, without the image's name, in qs_last_error() for the
 *    calling thread.  Corrupt images give -EIO (or -EINVAL for a bad
 *    superblock), a missing name -ENOENT, a wrong type -ENOTDIR etc.
 *  - Nothing in the library prints, exits or aborts.
 *  - An open image is immutable; every function may be called from any
 *    number of threads at once.  Caches inside are bounded and locked per
 *    shard; no lock is held while reading or decompressing.
 *  - Structures the caller allocates (struct qs_inode, struct qs_dir_iter)
 *    are plain values and may be copied.
 */
#ifndef QUASH_H
#define QUASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "quash_version.h"
#include "source.h"

/* ---- errors ------------------------------------------------------------ */

/* What the calling thread's most recent failure was; never NULL. */
const char *qs_last_error(void);

/* Record a failure for qs_last_error(); returns err (a negative errno) so
 * that "return qs_set_error(-EIO, ...)" reads naturally. */
int qs_set_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- images ------------------------------------------------------------ */

struct qs_image;

#define QS_DEFAULT_CACHE_BYTES (64u << 20)

/*
 * A block cache several images can share, with one byte bound for all of
 * them (a catalog mount's thousands of images).  Each image's blocks carry
 * its own key, so images never see each other's blocks; a closed image's
 * blocks are unreachable and leave as the cache evicts them.  Destroy it
 * after every image using it is closed and every block released.
 */
struct qs_cache;
struct qs_cache *qs_cache_create(size_t limit_bytes);
void qs_cache_destroy(struct qs_cache *cache);

struct qs_image_options {
	uint64_t offset;         /* where the superblock starts within the source */
	bool offset_given;       /* false: detect SIF containers and use their squashfs partition */
	size_t cache_bytes;      /* bound on decompressed blocks held; 0 = QS_DEFAULT_CACHE_BYTES */
	struct qs_cache *cache;  /* a shared cache (cache_bytes then unused), or NULL for the image's own */
};

/*
 * Open the image held in 'src' (ownership passes to the image, even on
 * failure).  Validates the superblock and the tables it points at.
 */
int qs_image_open(struct qs_source *src, const struct qs_image_options *opt, struct qs_image **out);
/* Close the image and its source (NULL: nothing); close its files and release its blocks first. */
void qs_image_close(struct qs_image *img);

/* The source the image reads from (for its name in messages). */
struct qs_source *qs_image_source(const struct qs_image *img);

/* Decoded compressor options; fields not used by the compressor are 0. */
struct qs_comp_options {
	bool present;               /* the image carries an options block */
	uint32_t level;             /* gzip, lzo, zstd */
	uint32_t window_size;       /* gzip */
	uint32_t strategies;        /* gzip: bit mask */
	uint32_t dictionary_size;   /* xz */
	uint32_t filters;           /* xz: bit mask of BCJ filters */
	uint32_t algorithm;         /* lzo */
	uint32_t version;           /* lz4 */
	uint32_t flags;             /* lz4: 1 = high compression */
};

struct qs_info {
	uint64_t offset;            /* of the superblock within the source */
	uint16_t version_major, version_minor;
	uint16_t compressor;        /* enum sqfs_compressor_id */
	const char *compressor_name;
	struct qs_comp_options comp;
	uint32_t block_size;
	uint16_t block_log;
	uint16_t flags;             /* SQFS_FLAG_* */
	uint32_t mkfs_time;
	uint32_t inode_count;
	uint32_t fragment_count;
	uint16_t id_count;
	uint32_t xattr_id_count;
	uint64_t bytes_used;
	uint64_t root_inode_ref;
	uint64_t inode_table_start;
	uint64_t directory_table_start;
	uint64_t fragment_table_start;   /* SQFS_INVALID_TABLE when absent */
	uint64_t export_table_start;
	uint64_t id_table_start;
	uint64_t xattr_id_table_start;
};

/* The superblock's fields, decoded; valid while the image is open. */
const struct qs_info *qs_image_info(const struct qs_image *img);

/* ---- inodes ------------------------------------------------------------ */

/* Basic inode types; an extended inode is reported with 'extended' set. */
enum qs_type {
	QS_DIR = 1, QS_FILE, QS_SYMLINK, QS_BLKDEV, QS_CHRDEV, QS_FIFO, QS_SOCKET,
};

typedef uint64_t qs_ref;            /* inode reference: (block << 16) | offset */

#define QS_NO_XATTR 0xffffffffu
#define QS_NO_FRAGMENT 0xffffffffu
#define QS_SYMLINK_MAX 65535u       /* longest symlink target accepted */

struct qs_inode {
	qs_ref ref;
	uint32_t ino;               /* inode number, 1 .. inode_count */
	enum qs_type type;
	bool extended;
	uint32_t mode;              /* st_mode, type bits included */
	uint32_t uid, gid;          /* resolved through the id table */
	uint32_t mtime;
	uint32_t nlink;
	uint64_t size;              /* file: bytes; dir: as stored (listing + 3); symlink: target length */
	uint32_t xattr;             /* xattr id, or QS_NO_XATTR */
	uint32_t xattr_size;        /* bytes of its key/value pairs, as the xattr id table records */
	uint32_t rdev;              /* devices: Linux encoding as stored */
	union {
		struct {
			uint32_t start_block;   /* directory table block, relative */
			uint16_t offset;
			uint32_t parent_ino;
			uint16_t index_count;
			qs_ref index;           /* position of the directory index (extended only) */
		} dir;
		struct {
			uint64_t blocks_start;  /* absolute image offset of block 0 */
			uint32_t fragment;      /* QS_NO_FRAGMENT if none */
			uint32_t frag_offset;
			uint64_t sparse;        /* bytes saved by sparse blocks (extended only) */
			uint32_t block_count;   /* full blocks stored in the block list */
			qs_ref block_list;      /* position of the block size list */
		} file;
		struct {
			qs_ref target;          /* position of the target string */
		} symlink;
	} u;
};

/* Decode the inode at 'ref' (from a qs_dirent or another inode) into *out. */
int qs_inode_read(struct qs_image *img, qs_ref ref, struct qs_inode *out);
/* The root directory's inode. */
int qs_inode_root(struct qs_image *img, struct qs_inode *out);

/* Through the export table: -ENOTSUP if the image has none. */
int qs_inode_by_number(struct qs_image *img, uint32_t ino, struct qs_inode *out);

/* What stat(2) would report for st_blocks on the kernel's mount. */
uint64_t qs_inode_blocks512(const struct qs_inode *inode);

/* ---- directories ------------------------------------------------------- */

struct qs_dirent {
	char name[256 + 1];         /* NUL-terminated; never contains '/' or NUL, never "." or ".." */
	size_t name_len;
	qs_ref ref;
	uint32_t ino;
	enum qs_type type;
};

struct qs_dir_iter {                /* a value; copy it to remember a position */
	struct qs_image *img;
	uint64_t block;             /* absolute position of the current metadata block */
	uint32_t offset;            /* within that block */
	uint64_t remaining;         /* listing bytes not yet consumed */
	uint32_t header_left;       /* entries left under the current header */
	uint32_t header_start;      /* inode table block of those entries */
	uint32_t header_ino;        /* their base inode number */
	uint64_t position;          /* entries returned so far */
};

/* Start listing directory 'dir' (-ENOTDIR if it is not one); "." and ".." are not listed. */
int qs_dir_open(struct qs_image *img, const struct qs_inode *dir, struct qs_dir_iter *it);
/* 1 and *ent for the next entry, 0 at the end, or -errno. */
int qs_dir_next(struct qs_dir_iter *it, struct qs_dirent *ent);

/* Find 'name' (len bytes, no '/') in 'dir', using the directory index. */
int qs_lookup(struct qs_image *img, const struct qs_inode *dir, const char *name, size_t len,
	      struct qs_inode *out);

/* Resolve a '/'-separated path from the root; symlinks are not followed. */
int qs_lookup_path(struct qs_image *img, const char *path, struct qs_inode *out);

/* ---- symlinks ---------------------------------------------------------- */

/* Copy the target into buf (NUL-terminated); bufsize must exceed inode->size. */
int qs_readlink(struct qs_image *img, const struct qs_inode *link, char *buf, size_t bufsize);

/* ---- regular files ----------------------------------------------------- */

struct qs_file;                     /* an open file with its block index; thread-safe */
struct qs_block;                    /* a decompressed block held in the cache */

/* Open regular file 'inode' (-EISDIR for a directory, -EINVAL for another type). */
int qs_file_open(struct qs_image *img, const struct qs_inode *inode, struct qs_file **out);
/* Free the file (NULL: nothing); before its image is closed. */
void qs_file_close(struct qs_file *file);
/* The file's inode, as given to qs_file_open(). */
const struct qs_inode *qs_file_inode(const struct qs_file *file);

/* Read up to len bytes at off; returns the count (short only at end of file) or -errno. */
ssize_t qs_file_pread(struct qs_file *file, void *buf, size_t len, uint64_t off);

/*
 * The decompressed block 'index' of the file (the last one may be the tail
 * in a fragment).  *data and *size describe the bytes of this file only;
 * they stay valid until qs_block_release().  Sparse blocks return zeros.
 */
int qs_file_block(struct qs_file *file, uint64_t index, struct qs_block **out, const void **data, size_t *size);
/*
 * Give a block back.  'img' may be NULL, or already closed when its cache
 * is shared: a block knows its cache, and a sparse block is the process's
 * one block of zeros.
 */
void qs_block_release(struct qs_image *img, struct qs_block *block);
/*
 * Give a block back whose bytes [data, data + len) the caller has passed on
 * where they will be found again: a FUSE daemon's reply, or its store into
 * the kernel's page cache.  If that was the whole block, the cache keeps it
 * only a short while once nobody holds it (a short list, not its LRU)
 * rather than keep a second copy, so that its memory is reused while hot;
 * else as qs_block_release().
 */
void qs_block_release_passed(struct qs_image *img, struct qs_block *block, const void *data, size_t len);

/*
 * Where the file's stored bytes lie, as image offsets (add qs_info's offset
 * for the source's): its full blocks are [*start, *start + *len) (*len 0 if
 * none), the fragment block holding its tail [*frag_start, *frag_start +
 * *frag_len) (*frag_len 0 if none).  Reads the block list.
 */
int qs_file_extent(struct qs_file *file, uint64_t *start, uint64_t *len, uint64_t *frag_start,
		   uint32_t *frag_len);

/* True if the byte range of block 'index' is a hole (stored as size 0). */
int qs_file_block_is_sparse(struct qs_file *file, uint64_t index);

/*
 * The stored size words of blocks first .. first+count-1, as the file's
 * block list holds them: the low 24 bits the bytes stored (0: a hole),
 * bit 24 (QS_BLOCK_UNCOMPRESSED) set when stored uncompressed.  Block i
 * lies at blocks_start plus the stored sizes before it.  For copying
 * blocks as they are stored, without decompressing them (appending).
 */
#define QS_BLOCK_UNCOMPRESSED (1u << 24)
int qs_file_block_words(struct qs_file *file, uint64_t first, uint32_t *words, size_t count);

/* ---- fragments --------------------------------------------------------- */

/* Where fragment block 'index' is stored and its size word (as above); checked against the image. */
int qs_fragment_get(struct qs_image *img, uint32_t index, uint64_t *start, uint32_t *size_word);

/* ---- extended attributes ----------------------------------------------- */

struct qs_xattr {
	char *name;                 /* full name, "user.foo" */
	void *value;
	size_t value_len;
};

#define QS_XATTR_VALUE_MAX (64u << 10)   /* Linux's limit; larger values are corrupt */
#define QS_XATTR_COUNT_MAX 65536u

/* All xattrs of an inode as a malloc'd array; *count 0 and *out NULL if none. */
int qs_xattr_list(struct qs_image *img, const struct qs_inode *inode, struct qs_xattr **out, size_t *count);
/* Free what qs_xattr_list() returned. */
void qs_xattr_free(struct qs_xattr *xattrs, size_t count);

/* ---- statistics -------------------------------------------------------- */

struct qs_cache_stats {
	uint64_t hits, misses, waits, evictions;
	uint64_t drops;             /* blocks passed on whole (qs_block_release_passed()), since freed */
	uint64_t bytes, limit;
	uint64_t slab_bytes;        /* memory mapped for blocks, recycled and kept while the cache lives */
	uint64_t ahead;             /* qs_image_cache_stats() only: blocks the image decompressed ahead of
				     * their reads, from a prefetch profile's replay */
};
/* The counters of the image's block cache (a shared one's, if it uses one). */
void qs_image_cache_stats(struct qs_image *img, struct qs_cache_stats *out);
/* The counters of a shared cache (qs_cache_create()). */
void qs_cache_stats(struct qs_cache *cache, struct qs_cache_stats *out);

#endif

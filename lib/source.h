/*
 * source.h - byte sources: where an image's bytes come from.
 *
 * The reader never opens files itself.  It reads an image only through this
 * interface: read N bytes at an offset, the total size, and an identity
 * string.  A local file, an HTTP(S) URL and an S3 object are interchangeable
 * behind it, and so are wrappers (an offset window, a chunk cache).
 *
 * Contract for implementations:
 *  - pread() fills exactly len bytes, or returns a negative errno.  Reading
 *    past size is an error (-EIO), never a short read: a source must not
 *    invent or drop bytes.
 *  - pread() is called from many threads at once and must be thread-safe.
 *  - size and identity never change once open.  A source that notices its
 *    backing object changed (another ETag) fails reads with -ESTALE.
 *  - On failure a source sets a message with qs_set_error() naming itself.
 */
#ifndef QUASH_SOURCE_H
#define QUASH_SOURCE_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct qs_source;
struct qs_source_check;

struct qs_source_ops {
	int (*pread)(struct qs_source *src, void *buf, size_t len, uint64_t off);
	void (*close)(struct qs_source *src);
	/*
	 * Optional hint: [off, off+len) will be read soon and often (the image
	 * opener passes every metadata table, which squashfs keeps together at
	 * the end of the image).  A remote source fetches it in a few large
	 * requests and keeps it; a local file reads it in a background thread
	 * and keeps it in memory (at most 64 MiB, beyond that a readahead).
	 * May be NULL; errors are not fatal.
	 */
	int (*prefetch)(struct qs_source *src, uint64_t off, uint64_t len);
	/*
	 * Optional hint: [off, off+len) will be read soon, once (the mount
	 * passes a small file's blocks at open).  A remote source starts
	 * fetching it in the background and returns at once.  May be NULL.
	 */
	int (*willneed)(struct qs_source *src, uint64_t off, uint64_t len);
	/*
	 * Optional hint: fetch [off, off+len) now, in as few requests as the
	 * source can, into whatever cache it has, unpinned (a recorded
	 * profile's replay, from its own threads).  Blocks until the bytes are
	 * in or the source declines (its budget is spent).  A local file asks
	 * the kernel for readahead.  May be NULL; errors are not fatal.
	 */
	int (*warm)(struct qs_source *src, uint64_t off, uint64_t len);
	/*
	 * Optional: the next range of a profile's replay, in the order the
	 * profile first read them, once its bytes are in the source's cache
	 * (waits for them).  *next is a cursor, 0 at first, moved past the
	 * range returned.  1 and the range; 0 when there are no more, or the
	 * replay ended before fetching it.  Lets the image decompress what a
	 * workload is about to read before it asks (lib/format/warm.c).
	 */
	int (*replayed)(struct qs_source *src, size_t *next, uint64_t *off, uint64_t *len);
	/*
	 * Optional: check every unit of bytes with 'check' as it arrives,
	 * before the source keeps it (in memory or its cache directory), and
	 * check again what it reads back from there (a verifying source above
	 * a remote image's chunk cache sets it: lib/verity/).  -EINVAL when the
	 * source cannot check in such units; it then stays as it was.
	 */
	int (*set_check)(struct qs_source *src, const struct qs_source_check *check);
};

/*
 * A check of a source's bytes as they arrive (qs_source_ops.set_check):
 * fn(ctx, off, buf, len) with off a multiple of 'unit' and len a multiple
 * of it, or running to the source's end: 0 when they are right, -EIO with
 * a one-line message naming the first unit that is not, or another -errno
 * when it cannot tell (the units then count as not right).  Called from
 * any thread; ctx must outlive the source's use of it.
 */
struct qs_source_check {
	int (*fn)(void *ctx, uint64_t off, const void *buf, size_t len);
	void *ctx;
	uint32_t unit;
};

struct qs_source {
	const struct qs_source_ops *ops;
	uint64_t size;          /* bytes readable */
	char *name;             /* what the user gave: a path or URL without secrets, for messages */
	char *identity;         /* stable identity of the exact bytes, e.g. "file:DEV:INO:SIZE:MTIME" */
	void *priv;             /* implementation state */
	const char *notice;     /* one line worth logging once after open (e.g. "server unreachable,
				 * serving from the cache"), or NULL; owned by the implementation */
	const char *verity_root;    /* a root hash in hex the object names itself (S3 object metadata
				     * x-amz-meta-verity-roothash), or NULL; owned by the implementation */
};

/*
 * A bound on memory that several sources' caches share (the images of a
 * catalog mount).  A source that goes over it evicts its own least recently
 * used chunks first, then the others' (an idle image's chunks would
 * otherwise stay while the busy one evicts all of its own).  'used' is
 * updated atomically by the sources; set up with qs_memory_budget_init(),
 * and destroyed once no source uses it.
 */
struct chunk_cache;
struct qs_memory_budget {
	uint64_t used;              /* bytes held by all the sources together */
	uint64_t limit;
	pthread_mutex_t lock;       /* over the list of members */
	struct chunk_cache *members;    /* the caches sharing it (lib/io/cache/) */
};
void qs_memory_budget_init(struct qs_memory_budget *budget, uint64_t limit);
void qs_memory_budget_destroy(struct qs_memory_budget *budget);

/* Options for qs_source_open(); zero-initialised means defaults. */
struct qs_source_options {
	const char *endpoint;       /* S3 endpoint URL (else AWS_ENDPOINT_URL, else AWS) */
	const char *region;         /* S3 region (else AWS_REGION / AWS_DEFAULT_REGION) */
	const char *cache_dir;      /* persistent chunk cache shared between processes, or NULL */
	uint64_t cache_dir_limit;   /* bytes; 0 = default */
	size_t chunk_size;          /* remote fetch granularity; 0 = default */
	size_t memory_cache;        /* bytes of remote chunks held in memory; 0 = default */
	struct qs_memory_budget *memory_budget;    /* shared with other sources, or NULL */
	unsigned retry_seconds;     /* total time budget for retries of one request; 0 = default */
	/*
	 * HTTP(S) proxy or caching tier every request goes through, or NULL for
	 * libcurl's own choice (http_proxy, https_proxy, no_proxy, ALL_PROXY).
	 * No credentials in it: those stay in the environment.
	 */
	const char *proxy;
	/*
	 * The same object at another URL (http://, https:// or s3://), asked
	 * when the first does not answer (connection errors, timeouts, 5xx):
	 * the origin behind a caching tier.  It must serve the same version
	 * (the same ETag, as a tier passes on the origin's): a read it answers
	 * with another fails, and the first URL stays the authority on what
	 * the object is.  After REMOTE_FALLBACK_HOLD_MS (30 s) on it, a request
	 * tries the first URL again.  NULL: none.
	 */
	const char *fallback;
	/*
	 * Prefetch profiles (docs/profile.md).  'record': write the byte ranges
	 * read, in first-touch order, to this file (every few seconds and at
	 * close).  'prefetch': replay this profile at open, in the background.
	 * 'prefetch_beside': when 'prefetch' is NULL, replay SPEC.profile if
	 * there is one (a missing one is silent).  A profile names the image it
	 * was recorded against by its superblock, found at 'image_offset' if
	 * 'image_offset_given', else as qs_image_open() finds it.
	 */
	const char *record;
	const char *prefetch;
	bool prefetch_beside;
	uint64_t image_offset;
	bool image_offset_given;
	/*
	 * Verified reads (lib/verity/verity.h, docs/SECURITY.md): with
	 * 'verity_root' (the root hash in hex) every byte is checked against a
	 * dm-verity tree before it is returned, and the source's size is the
	 * data the tree covers.  The tree is in 'verity_file' (a path or URL,
	 * its superblock at 'verity_offset', else 0), or in the image itself:
	 * its superblock at 'verity_offset' if 'verity_offset_given', else
	 * appended after the squashfs image found at image_offset (its
	 * bytes_used, as qs_verity_find_appended looks).  The tree covers the
	 * file from its first byte, so an image at an offset (a SIF
	 * partition) is verified with the bytes before it.  'verity_sig', a
	 * local file, is a PKCS#7 signature of the root hash, checked against
	 * the certificates in the local file 'verity_cert' before anything is
	 * read (lib/verity/verity.h); one without the other is refused.
	 */
	const char *verity_root;
	const char *verity_file;
	uint64_t verity_offset;
	bool verity_offset_given;
	const char *verity_sig;
	const char *verity_cert;
};

/*
 * Open whatever 'spec' names: "http://", "https://", "s3://BUCKET/KEY" or a
 * local path ("/proc/self/fd/N" included).  Returns 0 and *out, or -errno
 * with a message.
 */
int qs_source_open(const char *spec, const struct qs_source_options *opt, struct qs_source **out);

/* Does 'spec' name a remote image (http://, https://, s3://)? */
bool qs_source_spec_is_remote(const char *spec);

/*
 * 'spec' as it may be shown to anyone: in messages, the mount table and
 * the process list.  A URL loses its user:password@ and its query string
 * (a presigned URL's signature and credential); a path is unchanged.
 * Returns a string to free(), or NULL if out of memory.
 */
char *qs_source_display_name(const char *spec);

/* One object of a remote listing; strings valid only during the callback. */
struct qs_list_entry {
	const char *key;        /* relative to the listed prefix or index, '/'-separated, never "", never
				 * starting with '/', no ".." or "." components, no NUL */
	uint64_t size;          /* bytes, or 0 if the listing does not say */
	int64_t mtime;          /* seconds since the epoch, or 0 if unknown */
	const char *etag;       /* without quotes, or "" if unknown */
	/*
	 * An alias (a text index's "NAME -> TARGET" line): the key, as safe as
	 * 'key', that this name stands for, which may itself be an alias;
	 * size, mtime and etag are then 0 and "".  NULL for an object.
	 */
	const char *target;
	/*
	 * The root hash in hex of the object's dm-verity tree, as a text
	 * index's third column gives it ("KEY SIZE ROOTHASH"), or NULL: the
	 * reader verifies the object against it (lib/verity/).
	 */
	const char *root_hash;
};

/* Called once per object; a non-zero return stops the listing and is returned. */
typedef int (*qs_list_fn)(void *arg, const struct qs_list_entry *ent);

/*
 * List the objects a catalog spec names:
 *  - "s3://BUCKET/PREFIX/" (or "s3://BUCKET" / "s3://BUCKET/"; a PREFIX not
 *    ending in '/' is taken as PREFIX/): ListObjectsV2, every page
 *    (continuation tokens), signed like reads (endpoint, region and
 *    credentials as qs_source_open() finds them; anonymous when there are none);
 *  - "http(s)://HOST/PATH/" (ending in '/'): the directory listing as nginx's
 *    `autoindex on; autoindex_format json;` gives it, recursing into
 *    "directory" entries (at most 16 levels below);
 *  - "http(s)://HOST/PATH/FILE" (not ending in '/'): a text index file, one
 *    key per line relative to the file's directory, optionally followed by
 *    whitespace and a size and then the object's verity root hash in hex
 *    (ent->root_hash), or "NAME -> TARGET", an alias of one key for another
 *    (ent->target); blank lines and '#' comments skipped.
 * Every request goes through the options' proxy, with retries and a deadline
 * (retry_seconds).  Hostile servers: at most 1,000,000 entries, 1024-byte
 * keys, 1 GiB of answers in all, 10,000 requests (pages or directories);
 * a malformed answer is -EIO with a one-line message naming the URL (without
 * credentials or query string) and the problem.  Keys that are unsafe
 * (empty, ".." or "." or empty components, a leading or trailing '/', NUL,
 * control characters, longer than 1024 bytes) are skipped, not returned.
 * Returns 0, fn's non-zero return, or -errno with a message.
 */
int qs_source_list(const char *spec, const struct qs_source_options *opt, qs_list_fn fn, void *arg);

/*
 * While *flag is true, remote requests made by the calling thread end
 * within about 100 ms with -EINTR, backoff included; NULL stops watching.
 * A FUSE daemon points it at a request's "interrupted" flag, so that a
 * reader killed while it waits on a slow server is let go at once.
 */
void qs_source_set_interrupt(const bool *flag);
/* Is the calling thread's flag set? */
bool qs_source_interrupted(void);

/*
 * fn(message, seconds) is called, from the requesting thread, whenever a
 * remote request is about to be retried for the first time: message says
 * what failed, seconds how much of the budget is left.  Whether to show it
 * (once, on a terminal) is the caller's choice; the library never prints.
 * NULL (the default) calls nothing.
 */
typedef void (*qs_retry_notice_fn)(const char *message, unsigned seconds);
void qs_source_set_retry_notice(qs_retry_notice_fn fn);

/*
 * fn(name, message) is called, from the thread that noticed, when a source
 * put something right that a log should hear of although no read failed:
 * a chunk of the cache directory that failed its check (a verifier's) and
 * was fetched again.  'name' is the source's.  NULL (the default) calls
 * nothing; the library never prints.
 */
typedef void (*qs_source_event_fn)(const char *name, const char *message);
void qs_source_set_event_notice(qs_source_event_fn fn);

/* A local file, opened read-only. */
int qs_source_open_file(const char *path, struct qs_source **out);

/* Bytes [offset, offset+size) of 'base' as a source of their own; takes ownership of base. */
int qs_source_open_window(struct qs_source *base, uint64_t offset, uint64_t size, struct qs_source **out);

static inline int qs_source_pread(struct qs_source *src, void *buf, size_t len, uint64_t off)
{
	return src->ops->pread(src, buf, len, off);
}

static inline int qs_source_prefetch(struct qs_source *src, uint64_t off, uint64_t len)
{
	return src->ops->prefetch ? src->ops->prefetch(src, off, len) : 0;
}

static inline int qs_source_willneed(struct qs_source *src, uint64_t off, uint64_t len)
{
	return src->ops->willneed ? src->ops->willneed(src, off, len) : 0;
}

static inline int qs_source_warm(struct qs_source *src, uint64_t off, uint64_t len)
{
	return src->ops->warm ? src->ops->warm(src, off, len) : qs_source_willneed(src, off, len);
}

static inline int qs_source_replayed(struct qs_source *src, size_t *next, uint64_t *off, uint64_t *len)
{
	return src->ops->replayed ? src->ops->replayed(src, next, off, len) : 0;
}

static inline int qs_source_set_check(struct qs_source *src, const struct qs_source_check *check)
{
	return src->ops->set_check ? src->ops->set_check(src, check) : -EINVAL;
}

/* Close the source and free it (NULL: nothing); an image closes its own. */
void qs_source_close(struct qs_source *src);

/* ---- prefetch profiles (lib/io/profile/, docs/profile.md) ---- */

#define QS_PROFILE_ID_MAX 128            /* longest identity line kept */
#define QS_PROFILE_MAX_BYTES (16u << 20) /* longest profile read */
#define QS_PROFILE_MAX_RANGES (1u << 20) /* most ranges read or recorded */

struct qs_profile_range {
	uint64_t off, len;                   /* bytes of the source, not of the image */
};

struct qs_profile {
	char identity[QS_PROFILE_ID_MAX];    /* "size=N bytes_used=N super_xxh3=HEX" */
	struct qs_profile_range *ranges;     /* first-touch order */
	size_t count;
};

/*
 * Parse a profile held in memory ('name' for messages).  Bounded: at most
 * QS_PROFILE_MAX_BYTES of text and QS_PROFILE_MAX_RANGES ranges.  Returns 0
 * and *out, or -errno with a one-line message naming the line.
 */
int qs_profile_parse(const char *text, size_t len, const char *name, struct qs_profile **out);
/* Read and parse a local profile file. */
int qs_profile_load(const char *path, struct qs_profile **out);
/* Free a parsed profile (NULL: nothing). */
void qs_profile_free(struct qs_profile *p);

/*
 * The identity a profile records for the image whose superblock starts at
 * 'sb_offset' of 'src': its size, bytes_used and an XXH3 of the superblock.
 * -EINVAL if there is no squashfs superblock there.
 */
int qs_profile_identity(struct qs_source *src, uint64_t sb_offset, char *buf, size_t size);

/* Helpers for implementations: tell the qs_source_set_event_notice() hook, if any. */
void qs_source_event(const char *name, const char *message);

/* Helpers for implementations: allocate a source with name and identity copied. */
struct qs_source *qs_source_alloc(const struct qs_source_ops *ops, const char *name, const char *identity,
				  uint64_t size, void *priv);

#endif

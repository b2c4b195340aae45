/*
 * disk_cache.h - the persistent chunk cache directory shared by processes.
 *
 * One file per chunk, named by a hash of the object's identity, the chunk
 * size and the chunk index, written to a temporary file and renamed into
 * place so that readers only ever see whole chunks; and one per byte range
 * a profile's replay fetched (a "piece", pieces.c), by the identity,
 * the offset and the length.  Each file starts with
 * its full key, checked on read, so a hash collision is a miss, not wrong
 * data, and an XXH3-64 of its bytes, so damage is a miss (the file is
 * removed and the chunk fetched again), never data.  A file's mtime is its
 * last use; when the directory grows past its limit, the process that
 * takes the lock removes the least recently used files.  Objects'
 * identities are recorded too, so that an image can be opened from the
 * cache while its server is unreachable.
 *
 * Who may share it.  What a mount serves from here is served as the
 * image's own bytes, so only the user who reads it may write it: as ssh
 * does with ~/.ssh, the directory is created 0700 and refused when another
 * user owns it or group or others may write it, and so is a file in it
 * that is not this user's own regular file.  (The hash guards against
 * damage, not against a writer: XXH3 is not a signature, and no trusted
 * list of chunk hashes exists to check against.)  Users who are meant to
 * share one configured path get a sticky directory everyone may write,
 * as /tmp: quash then keeps each user's chunks in DIR/u-UID, a 0700
 * directory of their own, so one user's processes share a cache and no
 * user reads what another wrote.  Sharing chunks across users would need
 * a writer all of them trust (a daemon of its own); a root mount serving
 * everyone is one such writer.
 */
#ifndef QUASH_DISK_CACHE_H
#define QUASH_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DISK_CACHE_DEFAULT_LIMIT (10ull << 30)

struct disk_cache;

int disk_cache_open(const char *dir, uint64_t limit, const char *identity, size_t chunk_size,
		    struct disk_cache **out);
void disk_cache_close(struct disk_cache *dc);

/* Chunk 'idx' of exactly 'len' bytes into buf: 0, or -ENOENT when not cached (or damaged). */
int disk_cache_get(struct disk_cache *dc, uint32_t idx, void *buf, size_t len);

/*
 * Is chunk 'idx' of 'len' bytes probably cached?  Only a look at the file's
 * owner and size: a later disk_cache_get() still checks its key and hash.
 */
bool disk_cache_has(struct disk_cache *dc, uint32_t idx, size_t len);

/* Store a chunk; best effort, a full disk only means no caching. */
void disk_cache_put(struct disk_cache *dc, uint32_t idx, const void *buf, size_t len);
/*
 * The same for an exact byte range of the object (what a profile replay
 * fetched): found again only as that very range, checked as chunks are,
 * and evicted with them.
 */
int disk_cache_get_range(struct disk_cache *dc, uint64_t off, void *buf, size_t len);
bool disk_cache_has_range(struct disk_cache *dc, uint64_t off, size_t len);
void disk_cache_put_range(struct disk_cache *dc, uint64_t off, const void *buf, size_t len);

/*
 * Remove chunk 'idx', or the range at off of len bytes, from the
 * directory: a file whose bytes failed a check (a verifier's) is not read
 * again.
 */
void disk_cache_drop(struct disk_cache *dc, uint32_t idx);
void disk_cache_drop_range(struct disk_cache *dc, uint64_t off, size_t len);

/*
 * What the cache knows of the object at 'url': its size, identity and the
 * verity root hash its metadata named ('root': NULL or "" for none), so
 * that an open from the cache verifies as one from the server does.
 * Loading: *identity malloc'ed; *root malloc'ed or NULL (root may be NULL).
 */
int disk_cache_save_object(const char *dir, const char *url, uint64_t size, const char *identity,
			   const char *root);
int disk_cache_load_object(const char *dir, const char *url, uint64_t *size, char **identity, char **root);

#endif

/*
 * disk_cache.c - the persistent chunk cache directory (see disk_cache.h).
 *
 * Layout: DIR/c-HASH is a chunk, DIR/o-HASH what is known of an object,
 * DIR/t-* files being written, DIR/lock serialises eviction.  A chunk file
 * is a header (magic, key length, data length, XXH3-64 of the data), the
 * key, then the data.
 *
 * What is read back is trusted only as far as it was checked (why:
 * disk_cache.h): the directory and every file in it must be this user's
 * and writable by no one else, every file is opened relative to the
 * directory's descriptor with O_NOFOLLOW|O_NOCTTY|O_NONBLOCK and checked
 * with fstat as a regular file, and a chunk's bytes must match its hash.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "disk_cache.h"
#include "quash.h"
#include "squashfs_fs.h"

#define DISK_MAGIC          "QSCHUNK2"    /* "QSCHUNK1" files (no checksum) are evicted, never read */
#define DISK_HEADER_LEN     32
#define DISK_USER_DIR_MAX   32            /* "u-" and a uid: one user's part of a shared directory */
#define DISK_KEY_MAX        8192          /* longer keys (identities) are not cached */
#define DISK_RECORD_MAX     (16u << 10)   /* an object record is at most this long */
#define DISK_EVICT_TO_PCT   90            /* eviction stops at this share of the limit */
#define DISK_TMP_MAX_AGE    3600          /* seconds before a stray temporary file is removed */
#define DISK_MIN_LIMIT      (64ull << 20)

struct disk_cache {
	int dirfd;
	char *identity;
	size_t chunk_size;
	uint64_t limit;
	pthread_mutex_t lock;
	uint64_t bytes;                 /* this process's estimate of the directory's size */
};

struct cache_file {
	char name[24];
	int64_t mtime_ns;
	uint64_t bytes;
};

static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_string(const char *s)
{
	return fnv1a(s, 0xcbf29ce484222325ull);
}

static int chunk_key(const struct disk_cache *dc, uint32_t idx, char *key, size_t size)
{
	int n = snprintf(key, size, "%s\n%zu\n%u", dc->identity, dc->chunk_size, idx);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

/*
 * A byte range of the object (a profile replay's piece): its own key, whose
 * second line is a word where a chunk's is a number, so the two never meet.
 */
static int range_key(const struct disk_cache *dc, uint64_t off, size_t len, char *key, size_t size)
{
	int n = snprintf(key, size, "%s\nrange\n%llu\n%zu", dc->identity, (unsigned long long)off, len);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

static void chunk_file_name(const char *key, char name[24])
{
	snprintf(name, 24, "c-%016llx", (unsigned long long)hash_string(key));
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static int read_all_at(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/* Write a temporary file with the parts given, then rename it to 'name'. */
static int publish_file(int dirfd, const char *name, const void *a, size_t alen, const void *b, size_t blen,
			const void *c, size_t clen)
{
	static unsigned counter;
	unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	char tmp[64];
	int fd, ok;

	snprintf(tmp, sizeof(tmp), "t-%d-%u-%ld", (int)getpid(), n, (long)time(NULL));
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ok = write_all(fd, a, alen) == 0 && write_all(fd, b, blen) == 0 && write_all(fd, c, clen) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || renameat(dirfd, tmp, dirfd, name) < 0) {
		unlinkat(dirfd, tmp, 0);
		return -1;
	}
	return 0;
}

/* May this process trust what 'st' describes: its own, and writable by no one else? */
static bool is_own(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * Open 'name' in the cache as a file this user wrote, or -1.  Anything
 * else there (a symlink, a FIFO or device that would block or redirect
 * us, a file of another user's) is not cache content.
 */
static int open_own_file(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !is_own(&st)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int compare_mtime(const void *a, const void *b)
{
	const struct cache_file *x = a, *y = b;

	return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

/*
 * List the chunk files (and remove stale temporaries); returns the count
 * or -1.  A cache file that is not this user's own regular file is left
 * out, and the first one's name goes to 'foreign' if given.
 */
static long list_chunks(int dirfd, struct cache_file **out, uint64_t *total, char foreign[NAME_MAX + 1])
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct cache_file *files = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	time_t now = time(NULL);

	*total = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rewinddir(d);   /* the dup shares the offset an earlier listing left at the end */
	while ((e = readdir(d))) {
		struct stat st;

		if (strncmp(e->d_name, "c-", 2) && strncmp(e->d_name, "t-", 2) && strncmp(e->d_name, "o-", 2) &&
		    strcmp(e->d_name, "lock"))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISREG(st.st_mode) || !is_own(&st)) {
			if (foreign && !foreign[0])
				snprintf(foreign, NAME_MAX + 1, "%s", e->d_name);
			continue;
		}
		if (e->d_name[0] == 'o' || e->d_name[0] == 'l')
			continue;
		if (e->d_name[0] == 't') {
			if (now - st.st_mtime > DISK_TMP_MAX_AGE)
				unlinkat(dirfd, e->d_name, 0);
			continue;
		}
		if (strlen(e->d_name) >= sizeof(files->name))
			continue;
		if (n == cap) {
			size_t new_cap = cap ? 2 * cap : 256;
			struct cache_file *grown = realloc(files, new_cap * sizeof(*files));

			if (!grown)
				break;
			files = grown;
			cap = new_cap;
		}
		strcpy(files[n].name, e->d_name);
		files[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		files[n].bytes = (uint64_t)st.st_blocks * 512;
		*total += files[n].bytes;
		n++;
	}
	closedir(d);
	*out = files;
	return n;
}

/* Remove least recently used chunks until the directory is back under its limit.  One process at a time. */
static void evict(struct disk_cache *dc)
{
	int lock = open_own_file(dc->dirfd, "lock", O_RDWR | O_CREAT);
	struct cache_file *files = NULL;
	uint64_t total, target = dc->limit / 100 * DISK_EVICT_TO_PCT;
	long n, i;

	if (lock < 0)
		return;
	if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
		close(lock);
		return;
	}
	n = list_chunks(dc->dirfd, &files, &total, NULL);
	if (n > 0) {
		qsort(files, n, sizeof(*files), compare_mtime);
		for (i = 0; i < n && total > target; i++)
			if (unlinkat(dc->dirfd, files[i].name, 0) == 0)
				total -= files[i].bytes;
	}
	free(files);
	pthread_mutex_lock(&dc->lock);
	dc->bytes = total;
	pthread_mutex_unlock(&dc->lock);
	close(lock);
}

/* A sticky directory everyone may write (as /tmp): quash keeps one part per user in it. */
static bool is_shared_parent(const struct stat *st)
{
	return (st->st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH);
}

/* The directory behind 'fd' must be this user's own, or the cache is refused. */
static int check_dir(int fd, const char *shown, const char *dir)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return qs_set_error(-errno, "cache directory %s: %s", shown, strerror(errno));
	if (st.st_uid != geteuid())
		return qs_set_error(-EPERM, "cache directory %s: owned by uid %u, not by you (uid %u): "
				    "use a directory of your own, or a sticky one (chmod 1777 %s) shared per user",
				    shown, (unsigned)st.st_uid, (unsigned)geteuid(), dir);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return qs_set_error(-EPERM, "cache directory %s: writable by group or others (chmod go-w %s)",
				    shown, shown);
	return 0;
}

/*
 * Open the cache directory 'dir', creating it 0700; in a shared sticky
 * directory, this user's part DIR/u-UID.  Returns its descriptor, or
 * -errno with a one-line message that names the directory and the fix.
 */
static int cache_dir_open(const char *dir)
{
	char user[DISK_USER_DIR_MAX], shown[PATH_MAX + DISK_USER_DIR_MAX];
	struct stat st;
	int fd, sub, err;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return qs_set_error(-errno, "cache directory %s: %s", dir, strerror(errno));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return qs_set_error(-errno, "cache directory %s: %s", dir, strerror(errno));
	snprintf(shown, sizeof(shown), "%s", dir);
	if (fstat(fd, &st) == 0 && is_shared_parent(&st)) {
		snprintf(user, sizeof(user), "u-%u", (unsigned)geteuid());
		snprintf(shown, sizeof(shown), "%s/%s", dir, user);
		if (mkdirat(fd, user, 0700) < 0 && errno != EEXIST) {
			err = -errno;
			close(fd);
			return qs_set_error(err, "cache directory %s: %s", shown, strerror(-err));
		}
		sub = openat(fd, user, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		err = -errno;
		close(fd);
		if (sub < 0)
			return qs_set_error(err, "cache directory %s: %s", shown,
					    err == -ELOOP || err == -ENOTDIR ? "not a directory" : strerror(-err));
		fd = sub;
	}
	err = check_dir(fd, shown, dir);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int disk_cache_open(const char *dir, uint64_t limit, const char *identity, size_t chunk_size,
		    struct disk_cache **out)
{
	struct disk_cache *dc;
	uint64_t bytes;
	struct cache_file *files = NULL;
	char foreign[NAME_MAX + 1] = "";
	int fd = cache_dir_open(dir);

	if (fd < 0)
		return fd;
	if (list_chunks(fd, &files, &bytes, foreign) < 0)
		bytes = 0;
	free(files);
	if (foreign[0]) {
		close(fd);
		return qs_set_error(-EPERM, "cache directory %s: %s is not a file of yours, or others may write it "
				    "(remove it)", dir, foreign);
	}
	dc = calloc(1, sizeof(*dc));
	if (!dc || !(dc->identity = strdup(identity))) {
		free(dc);
		close(fd);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	dc->dirfd = fd;
	dc->chunk_size = chunk_size;
	dc->limit = limit ? limit : DISK_CACHE_DEFAULT_LIMIT;
	if (dc->limit < DISK_MIN_LIMIT)
		dc->limit = DISK_MIN_LIMIT;
	dc->bytes = bytes;
	pthread_mutex_init(&dc->lock, NULL);
	*out = dc;
	return 0;
}

void disk_cache_close(struct disk_cache *dc)
{
	close(dc->dirfd);
	pthread_mutex_destroy(&dc->lock);
	free(dc->identity);
	free(dc);
}

/* A chunk file that is damaged or not ours to trust: gone, so the next put can replace it. */
static int drop(struct disk_cache *dc, const char *name, int fd)
{
	close(fd);
	unlinkat(dc->dirfd, name, 0);
	return -ENOENT;
}

/* The entry of 'key' (key_len bytes) of exactly 'len' bytes into buf: 0, or -ENOENT. */
static int get_keyed(struct disk_cache *dc, const char *key, int key_len, void *buf, size_t len)
{
	char stored[DISK_KEY_MAX], name[24];
	uint8_t header[DISK_HEADER_LEN];
	uint32_t stored_key_len;
	uint64_t stored_len;
	struct stat st;
	int fd;

	if (key_len < 0)
		return -ENOENT;
	chunk_file_name(key, name);
	fd = open_own_file(dc->dirfd, name, O_RDONLY);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) < 0 || read_all_at(fd, header, sizeof(header), 0) < 0 ||
	    memcmp(header, DISK_MAGIC, 8))
		return drop(dc, name, fd);
	stored_key_len = sqfs_le32(header + 8);
	stored_len = sqfs_le64(header + 16);
	if ((uint64_t)st.st_size != DISK_HEADER_LEN + (uint64_t)stored_key_len + stored_len)
		return drop(dc, name, fd);
	/* Another key with the same file name (a hash collision) is a miss, not damage. */
	if (stored_key_len != (uint32_t)key_len || stored_len != len ||
	    read_all_at(fd, stored, key_len, DISK_HEADER_LEN) < 0 || memcmp(stored, key, key_len)) {
		close(fd);
		return -ENOENT;
	}
	if (read_all_at(fd, buf, len, DISK_HEADER_LEN + key_len) < 0 ||
	    XXH3_64bits(buf, len) != sqfs_le64(header + 24))
		return drop(dc, name, fd);
	futimens(fd, NULL);     /* mtime is the LRU clock */
	close(fd);
	return 0;
}

int disk_cache_get(struct disk_cache *dc, uint32_t idx, void *buf, size_t len)
{
	char key[DISK_KEY_MAX];

	return get_keyed(dc, key, chunk_key(dc, idx, key, sizeof(key)), buf, len);
}

int disk_cache_get_range(struct disk_cache *dc, uint64_t off, void *buf, size_t len)
{
	char key[DISK_KEY_MAX];

	return get_keyed(dc, key, range_key(dc, off, len, key, sizeof(key)), buf, len);
}

static bool has_keyed(struct disk_cache *dc, const char *key, int key_len, size_t len)
{
	char name[24];
	struct stat st;

	if (key_len < 0)
		return false;
	chunk_file_name(key, name);
	return fstatat(dc->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && is_own(&st) &&
	       (uint64_t)st.st_size == DISK_HEADER_LEN + (uint64_t)key_len + len;
}

bool disk_cache_has(struct disk_cache *dc, uint32_t idx, size_t len)
{
	char key[DISK_KEY_MAX];

	return has_keyed(dc, key, chunk_key(dc, idx, key, sizeof(key)), len);
}

bool disk_cache_has_range(struct disk_cache *dc, uint64_t off, size_t len)
{
	char key[DISK_KEY_MAX];

	return has_keyed(dc, key, range_key(dc, off, len, key, sizeof(key)), len);
}

static void put_keyed(struct disk_cache *dc, const char *key, int key_len, const void *buf, size_t len)
{
	char name[24], header[DISK_HEADER_LEN] = DISK_MAGIC;
	bool over;

	if (key_len < 0)
		return;
	chunk_file_name(key, name);
	sqfs_put32((uint8_t *)header + 8, key_len);
	sqfs_put32((uint8_t *)header + 12, 0);
	sqfs_put64((uint8_t *)header + 16, len);
	sqfs_put64((uint8_t *)header + 24, XXH3_64bits(buf, len));
	if (publish_file(dc->dirfd, name, header, sizeof(header), key, key_len, buf, len) < 0)
		return;
	pthread_mutex_lock(&dc->lock);
	dc->bytes += DISK_HEADER_LEN + key_len + len;
	over = dc->bytes > dc->limit;
	pthread_mutex_unlock(&dc->lock);
	if (over)
		evict(dc);
}

void disk_cache_put(struct disk_cache *dc, uint32_t idx, const void *buf, size_t len)
{
	char key[DISK_KEY_MAX];

	put_keyed(dc, key, chunk_key(dc, idx, key, sizeof(key)), buf, len);
}

void disk_cache_put_range(struct disk_cache *dc, uint64_t off, const void *buf, size_t len)
{
	char key[DISK_KEY_MAX];

	put_keyed(dc, key, range_key(dc, off, len, key, sizeof(key)), buf, len);
}

static void drop_keyed(struct disk_cache *dc, const char *key, int key_len)
{
	char name[24];

	if (key_len < 0)
		return;
	chunk_file_name(key, name);
	unlinkat(dc->dirfd, name, 0);
}

void disk_cache_drop(struct disk_cache *dc, uint32_t idx)
{
	char key[DISK_KEY_MAX];

	drop_keyed(dc, key, chunk_key(dc, idx, key, sizeof(key)));
}

void disk_cache_drop_range(struct disk_cache *dc, uint64_t off, size_t len)
{
	char key[DISK_KEY_MAX];

	drop_keyed(dc, key, range_key(dc, off, len, key, sizeof(key)));
}

static void object_file_name(const char *url, char name[24])
{
	snprintf(name, 24, "o-%016llx", (unsigned long long)hash_string(url));
}

int disk_cache_save_object(const char *dir, const char *url, uint64_t size, const char *identity,
			   const char *root)
{
	char name[24], *text;
	int fd = cache_dir_open(dir), len, ret = 0;

	if (fd < 0)
		return fd;
	len = asprintf(&text, "quash-object 1\n%s\n%llu\n%s\n%s%s", url, (unsigned long long)size, identity,
		       root ? root : "", root && *root ? "\n" : "");
	if (len < 0) {
		close(fd);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	object_file_name(url, name);
	if (len > (int)DISK_RECORD_MAX || publish_file(fd, name, text, len, "", 0, "", 0) < 0)
		ret = qs_set_error(-EIO, "cache directory %s: cannot record the object", dir);
	free(text);
	close(fd);
	return ret;
}

/* The next line of 'p' (NUL-terminated in place), or NULL. */
static char *next_line(char **p)
{
	char *line = *p, *nl = line ? strchr(line, '\n') : NULL;

	if (!nl)
		return NULL;
	*nl = '\0';
	*p = nl + 1;
	return line;
}

int disk_cache_load_object(const char *dir, const char *url, uint64_t *size, char **identity, char **root)
{
	char name[24], text[DISK_RECORD_MAX + 1], *p = text, *line, *end;
	int dirfd = cache_dir_open(dir), fd;
	ssize_t n;

	if (dirfd < 0)
		return dirfd;
	object_file_name(url, name);
	fd = open_own_file(dirfd, name, O_RDONLY);
	close(dirfd);
	if (fd < 0)
		return -ENOENT;
	n = read(fd, text, DISK_RECORD_MAX);
	close(fd);
	if (n <= 0)
		return -ENOENT;
	text[n] = '\0';
	line = next_line(&p);
	if (!line || strcmp(line, "quash-object 1"))
		return -ENOENT;
	line = next_line(&p);
	if (!line || strcmp(line, url))
		return -ENOENT;
	line = next_line(&p);
	if (!line)
		return -ENOENT;
	errno = 0;
	*size = strtoull(line, &end, 10);
	if (errno || *end || end == line)
		return -ENOENT;
	line = next_line(&p);
	if (!line || !*line)
		return -ENOENT;
	*identity = strdup(line);
	if (!*identity)
		return -ENOMEM;
	line = next_line(&p);
	if (root)
		*root = line && *line ? strdup(line) : NULL;
	return 0;
}

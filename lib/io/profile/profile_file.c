/*
 * profile_file.c - the prefetch profile's file format (docs/profile.md):
 * parsing and loading one, the identity that ties it to an image's bytes,
 * and writing one atomically.
 *
 * A profile is a magic line, an "image IDENTITY" line, then one
 * "OFFSET LENGTH" line per range in first-touch order.  The identity is the
 * image's size, bytes_used and an XXH3 of its superblock, so a profile is
 * never replayed against other bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "profile_file.h"
#include "quash.h"
#include "squashfs_fs.h"

#define PROFILE_MAGIC          "quash-profile 1"
#define PROFILE_LINE_MAX       256                 /* longest line of a profile */

void qs_profile_free(struct qs_profile *p)
{
	if (!p)
		return;
	free(p->ranges);
	free(p);
}

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*end = s;
	*out = v;
	return 0;
}

/* One "OFFSET LENGTH" line into the profile. */
static int parse_range(struct qs_profile *p, size_t *cap, const char *line)
{
	const char *end;
	uint64_t off, len;

	if (parse_u64(line, &end, &off) || *end != ' ' || parse_u64(end + 1, &end, &len) || *end ||
	    len == 0 || off > UINT64_MAX - len)
		return -EINVAL;
	if (p->count == QS_PROFILE_MAX_RANGES)
		return -E2BIG;
	if (p->count == *cap) {
		size_t ncap = *cap ? 2 * *cap : 256;
		struct qs_profile_range *r = realloc(p->ranges, ncap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		p->ranges = r;
		*cap = ncap;
	}
	p->ranges[p->count++] = (struct qs_profile_range){ off, len };
	return 0;
}

int qs_profile_parse(const char *text, size_t len, const char *name, struct qs_profile **out)
{
	struct qs_profile *p;
	char line[PROFILE_LINE_MAX];
	size_t pos = 0, cap = 0;
	unsigned lineno = 0;
	bool have_id = false;
	int err = 0;

	if (len > QS_PROFILE_MAX_BYTES)
		return qs_set_error(-E2BIG, "%s: larger than %u MiB; not a profile", name,
				    QS_PROFILE_MAX_BYTES >> 20);
	p = calloc(1, sizeof(*p));
	if (!p)
		return qs_set_error(-ENOMEM, "out of memory");
	while (pos < len && !err) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = (nl ? (size_t)(nl - text) : len) - pos;

		lineno++;
		if (n >= sizeof(line) || memchr(text + pos, '\0', n)) {
			err = qs_set_error(-EINVAL, "%s:%u: line too long or not text", name, lineno);
			break;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		if (n && line[n - 1] == '\r')
			line[n - 1] = '\0';
		pos += n + 1;
		if (lineno == 1) {
			if (strcmp(line, PROFILE_MAGIC) != 0)
				err = qs_set_error(-EINVAL, "%s: not a quash profile (the first line is not '%s')",
						   name, PROFILE_MAGIC);
			continue;
		}
		if (!line[0] || line[0] == '#')
			continue;
		if (strncmp(line, "image ", 6) == 0) {
			if (have_id || p->count)
				err = qs_set_error(-EINVAL, "%s:%u: a second 'image' line, or one after the ranges",
						   name, lineno);
			if (strlen(line + 6) >= sizeof(p->identity)) {
				err = qs_set_error(-EINVAL, "%s:%u: 'image' line too long", name, lineno);
				break;
			}
			memcpy(p->identity, line + 6, strlen(line + 6) + 1);
			have_id = true;
			continue;
		}
		err = parse_range(p, &cap, line);
		if (err == -ENOMEM)
			err = qs_set_error(err, "out of memory");
		else if (err == -E2BIG)
			err = qs_set_error(err, "%s: more than %u ranges", name, QS_PROFILE_MAX_RANGES);
		else if (err)
			err = qs_set_error(err, "%s:%u: expected 'OFFSET LENGTH', found '%.40s'", name, lineno, line);
	}
	if (!err && lineno == 0)
		err = qs_set_error(-EINVAL, "%s: empty; not a quash profile", name);
	if (!err && !have_id)
		err = qs_set_error(-EINVAL, "%s: no 'image' line naming the image it was recorded against", name);
	if (err) {
		qs_profile_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int qs_profile_load(const char *path, struct qs_profile **out)
{
	/* O_NONBLOCK: a FIFO put where a profile was expected must not hang the mount. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), err;
	struct stat st;
	char *text = NULL;
	size_t done = 0;

	if (fd < 0)
		return qs_set_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return qs_set_error(-EINVAL, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > QS_PROFILE_MAX_BYTES) {
		close(fd);
		return qs_set_error(-E2BIG, "%s: larger than %u MiB; not a profile", path,
				    QS_PROFILE_MAX_BYTES >> 20);
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	while (done < (size_t)st.st_size) {
		ssize_t r = read(fd, text + done, (size_t)st.st_size - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	close(fd);
	err = qs_profile_parse(text, done, path, out);
	free(text);
	return err;
}

int qs_profile_identity(struct qs_source *src, uint64_t sb_offset, char *buf, size_t size)
{
	uint8_t raw[SQFS_SUPER_SIZE];
	struct sqfs_super sb;
	int err;

	if (sb_offset > src->size || src->size - sb_offset < SQFS_SUPER_SIZE)
		return qs_set_error(-EINVAL, "no squashfs superblock at %llu", (unsigned long long)sb_offset);
	err = qs_source_pread(src, raw, sizeof(raw), sb_offset);
	if (err)
		return err;
	sqfs_super_decode(&sb, raw);
	if (sb.magic != SQFS_MAGIC)
		return qs_set_error(-EINVAL, "no squashfs superblock at %llu", (unsigned long long)sb_offset);
	snprintf(buf, size, "size=%llu bytes_used=%llu super_xxh3=%016llx", (unsigned long long)src->size,
		 (unsigned long long)sb.bytes_used, (unsigned long long)XXH3_64bits(raw, sizeof(raw)));
	return 0;
}

/* Write the profile to path.tmp.PID, then rename over path. */
int profile_write(const char *path, const char *identity, const struct qs_profile_range *r, size_t n)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
		return qs_set_error(-ENAMETOOLONG, "%s: name too long", path);
	/* A new file of our own: never through a symlink or into a file someone planted there. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return qs_set_error(-errno, "%s: %s", tmp, strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return qs_set_error(err, "%s: %s", tmp, strerror(-err));
	}
	fprintf(f, "%s\nimage %s\n", PROFILE_MAGIC, identity);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%llu %llu\n", (unsigned long long)r[i].off, (unsigned long long)r[i].len);
	if (fflush(f) != 0 || ferror(f))
		err = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err) {
		unlink(tmp);
		return qs_set_error(err, "%s: %s", path, strerror(-err));
	}
	return 0;
}

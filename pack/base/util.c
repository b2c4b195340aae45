/*
 * util.c - messages and hashing shared by the writer's files.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "size.h"
#include "util.h"
#include "format/squashfs_fs.h"
#include "progress.h"

/*
 * The message after PREFIX, its control characters escaped as \xNN: names
 * come from archives and trees, and one with a newline or an escape
 * sequence must not forge a second line or drive the terminal.
 */
static void say(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024], *msg = buf;
	va_list copy;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n >= (int)sizeof(buf) && (msg = malloc((size_t)n + 1)) != NULL)
		vsnprintf(msg, (size_t)n + 1, fmt, copy);
	else if (n >= (int)sizeof(buf))
		msg = buf;
	va_end(copy);
	fputs(prefix, stderr);
	for (const char *c = msg; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			fprintf(stderr, "\\x%02x", (unsigned char)*c);
		else
			fputc(*c, stderr);
	}
	fputc('\n', stderr);
	if (msg != buf)
		free(msg);
}

/* What every message starts with: the form's own name, as its command line's messages have it. */
static const char *prefix = "quash: pack: ";
static const char *warn_prefix = "quash: pack: warning: ";

void pack_set_mksquashfs_form(void)
{
	prefix = "quash: mksquashfs: ";
	warn_prefix = "quash: mksquashfs: warning: ";
}

void pack_error(const char *fmt, ...)
{
	va_list ap;

	progress_lock();
	va_start(ap, fmt);
	say(prefix, fmt, ap);
	va_end(ap);
	progress_unlock();
}

/* Warnings given so far (under the progress lock: any thread may warn). */
static uint64_t warnings;

void pack_warn(const char *fmt, ...)
{
	va_list ap;

	progress_lock();
	warnings++;
	va_start(ap, fmt);
	say(warn_prefix, fmt, ap);
	va_end(ap);
	progress_unlock();
}

uint64_t pack_warnings(void)
{
	uint64_t n;

	progress_lock();
	n = warnings;
	progress_unlock();
	return n;
}

bool pack_parse_owner(const char *s, bool group, uint32_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] >= '0' && s[0] <= '9') {
		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || *end || v > UINT32_MAX)
			return false;
		*out = (uint32_t)v;
		return true;
	}
	if (group) {
		struct group *g = getgrnam(s);

		if (g)
			*out = g->gr_gid;
		return g != NULL;
	}
	struct passwd *pw = getpwnam(s);

	if (pw)
		*out = pw->pw_uid;
	return pw != NULL;
}

bool pack_parse_memory(const char *s, uint64_t *out)
{
	return size_parse(s, out) == 0 && *out >= PACK_MEMORY_MIN;
}

bool pack_parse_block_size(const char *s, uint32_t *out)
{
	uint64_t v;

	if (size_parse(s, &v) != 0 || v < (1u << SQFS_BLOCK_LOG_MIN) || v > (1u << SQFS_BLOCK_LOG_MAX) ||
	    (v & (v - 1)))
		return false;
	*out = (uint32_t)v;
	return true;
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v * 0x87c37b91114253d5ull;
	h = (h << 31 | h >> 33) * 0x4cf5ad432745937full;
	return h;
}

uint64_t pack_hash(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&v, p, 8);
		h = mix(h, v);
	}
	v = 0;
	memcpy(&v, p, len);
	h = mix(h, v ^ (uint64_t)len << 56);
	h ^= h >> 29;
	return h;
}

/*
 * For tests/t-pack-race.sh: the run stops once, just before the data
 * phase opens its first source file, writes "paused" to the FIFO named by
 * QUASH_TEST_PACK_PAUSE and waits for a line back.  The test changes the
 * source tree in between, at a known point rather than against a sleep.
 * Unset, this is one getenv() per run.
 */
void pack_test_pause(void)
{
	static bool done;
	const char *fifo;
	char c;
	int fd;

	if (done)
		return;
	done = true;
	fifo = getenv("QUASH_TEST_PACK_PAUSE");
	if (!fifo || !*fifo)
		return;
	fd = open(fifo, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "paused\n", 7) != 7)
			pack_warn("%s: %s", fifo, strerror(errno));
		close(fd);
	}
	fd = open(fifo, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		while (read(fd, &c, 1) == 1 && c != '\n')
			;
		close(fd);
	}
}

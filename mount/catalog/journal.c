/*
 * journal.c - a held catalog's state file (mount/holder.h): what a new
 * server needs to give the node ids the kernel holds the meaning the dead
 * one gave them.  Node ids name a directory index or an image version's
 * slot (catalog_int.h), handed out in the order listings came, which a new
 * server's listing cannot repeat; so each is written down before the
 * kernel can see it, and the holder keeps the file (a memfd) across
 * servers without reading it.
 *
 * The file is a sequence of records (journal.h).  A new server reads it
 * back (seed.c) before its first listing, then starts a file of its own
 * with only what is live (qc_journal_start); the watcher does the same
 * once the file has grown past twice that.
 *
 * What a seeded version cannot carry is how many node ids of it the kernel
 * holds: such a version's slot is never taken back (qc_reclaim), and one
 * replaced before the restart is read through its key again, which fails
 * with ESTALE once the key names other bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_int.h"
#include "journal.h"
#include "mount_int.h"

struct jbuf {                       /* records being made */
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void put(struct jbuf *b, const void *data, size_t n)
{
	if (b->failed || n > SIZE_MAX / 2 - b->len)
		goto fail;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		void *p;

		while (cap < b->len + n)
			cap *= 2;
		if (!(p = realloc(b->p, cap)))
			goto fail;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return;
fail:
	b->failed = true;
}

static void put_str(struct jbuf *b, const char *s)
{
	put(b, s ? s : "", strlen(s ? s : "") + 1);
}

/* Start a record; its header is filled in by end_record(). */
static size_t begin_record(struct jbuf *b, uint32_t kind, uint32_t id)
{
	struct qc_jhdr h = { 0, 0, kind, id };
	size_t at = b->len;

	put(b, &h, sizeof(h));
	return at;
}

static void end_record(struct jbuf *b, size_t at)
{
	struct qc_jhdr h;

	if (b->failed)
		return;
	memcpy(&h, b->p + at, sizeof(h));
	h.len = (uint32_t)(b->len - at);
	h.sum = XXH32(b->p + at + 8, h.len - 8, 0);
	memcpy(b->p + at, &h, sizeof(h));
}

/* A catalog directory's or alias's path below the root ("a/b"). */
static void put_path(struct jbuf *b, const struct qc_node *n)
{
	const struct qc_node *chain[QC_DEPTH_MAX + 2];
	unsigned depth = 0;

	for (; n && n->parent && depth < QC_DEPTH_MAX + 2; n = n->parent)
		chain[depth++] = n;
	while (depth--) {
		put(b, chain[depth]->name, strlen(chain[depth]->name));
		if (depth)
			put(b, "/", 1);
	}
	put(b, "", 1);
}

static void put_dir(struct jbuf *b, const struct qc_node *n)
{
	size_t at = begin_record(b, QC_J_DIR, n->dir_index);
	uint8_t alias = n->is_alias;

	put(b, &alias, 1);
	put_path(b, n);
	put_str(b, n->is_alias ? n->target : NULL);
	end_record(b, at);
}

static void put_slot(struct jbuf *b, const struct qc_image *im)
{
	struct qc_jslot j = { im->serial, im->size, im->dev, im->ino, im->mtime, im->version, im->mode, im->uid, im->gid };
	size_t at = begin_record(b, QC_J_SLOT, im->slot);

	put(b, &j, sizeof(j));
	put_str(b, im->key);
	put_str(b, im->etag);
	put_str(b, im->root_hash);
	end_record(b, at);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The file cannot be kept: the holder learns that this server's death ends the mount. */
static void journal_failed(struct qm_catalog *c, int err)
{
	qm_log(c->fs, "catalog: %s: cannot keep its state for a restart (%s): the mount ends with this server",
	       c->fs->name, strerror(-err));
	close(c->jfd);
	__atomic_store_n(&c->jfd, -1, __ATOMIC_RELAXED);
	qm_server_send_state(c->fs, -1);
}

/* Is a state file kept?  A first look without c->jlock, under which c->jfd changes. */
static bool journaling(struct qm_catalog *c)
{
	return __atomic_load_n(&c->jfd, __ATOMIC_RELAXED) >= 0;
}

/* Append b's records (c->jlock held). */
static void append(struct qm_catalog *c, struct jbuf *b)
{
	int err = b->failed ? -ENOMEM : 0;

	if (c->jfd < 0)
		return;
	if (!err)
		err = write_all(c->jfd, b->p, b->len);
	if (err)
		journal_failed(c, err);
	else
		c->jbytes += b->len;
}

static void append_one(struct qm_catalog *c, struct jbuf *b)
{
	pthread_mutex_lock(&c->jlock);
	append(c, b);
	pthread_mutex_unlock(&c->jlock);
	free(b->p);
}

void qc_journal_dir(struct qm_catalog *c, const struct qc_node *n)
{
	struct jbuf b = { 0 };

	if (!journaling(c))
		return;
	put_dir(&b, n);
	append_one(c, &b);
}

void qc_journal_slot(struct qm_catalog *c, const struct qc_image *im)
{
	struct jbuf b = { 0 };

	if (!journaling(c))
		return;
	put_slot(&b, im);
	append_one(c, &b);
}

void qc_journal_gone(struct qm_catalog *c, bool slot, uint32_t id)
{
	struct jbuf b = { 0 };

	if (!journaling(c))
		return;
	end_record(&b, begin_record(&b, slot ? QC_J_SLOT_GONE : QC_J_DIR_GONE, id));
	append_one(c, &b);
}

/*
 * Every live directory and version into a new file, which the holder keeps
 * from now on (c->lock read, c->jlock held).  Versions and directories are
 * made under c->lock written and slots taken back by the watcher, which is
 * the caller or not running yet: nothing changes while this reads.
 */
static int rewrite(struct qm_catalog *c)
{
	struct jbuf b = { 0 };
	unsigned n = atomic_load(&c->nslots);
	int fd, err;

	for (uint32_t d = 1; d < c->ndirs; d++)
		if (c->dirs[d])
			put_dir(&b, c->dirs[d]);
	for (unsigned s = 1; s < n; s++) {
		struct qc_image *im = atomic_load(&c->slots[s]);

		if (im)
			put_slot(&b, im);
	}
	fd = memfd_create("quash-catalog-state", MFD_CLOEXEC);
	err = fd < 0 ? -errno : b.failed ? -ENOMEM : write_all(fd, b.p, b.len);
	if (!err)
		err = qm_server_send_state(c->fs, fd);
	free(b.p);
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (c->jfd >= 0)
		close(c->jfd);
	__atomic_store_n(&c->jfd, fd, __ATOMIC_RELAXED);
	c->jbytes = c->jlive = b.len;
	return 0;
}

int qc_journal_start(struct qm_catalog *c)
{
	int err;

	pthread_rwlock_rdlock(&c->lock);
	pthread_mutex_lock(&c->jlock);
	err = rewrite(c);
	pthread_mutex_unlock(&c->jlock);
	pthread_rwlock_unlock(&c->lock);
	return err;
}

void qc_journal_tidy(struct qm_catalog *c)
{
	int err;

	if (!journaling(c))
		return;
	pthread_rwlock_rdlock(&c->lock);
	pthread_mutex_lock(&c->jlock);
	if (c->jfd >= 0 && c->jbytes > 2 * c->jlive + QC_J_SLACK && (err = rewrite(c)) != 0)
		journal_failed(c, err);
	pthread_mutex_unlock(&c->jlock);
	pthread_rwlock_unlock(&c->lock);
}

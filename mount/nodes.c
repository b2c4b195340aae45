/*
 * nodes.c - open files and directory listings held by node id.
 *
 * The kernel lets a FUSE filesystem decline OPEN and OPENDIR (ENOSYS): it
 * then opens and closes files and directories without asking, keeps their
 * page cache, and sends reads and readdirs with no file handle.  That saves
 * two round trips per file opened, most of the cost of `md5sum` over a
 * tree of small files.  The state a handle would have held (the qs_file
 * with its block index, the directory listing) lives here instead, found
 * by node id: a bounded table, sharded by node id, whose unused entries go
 * least recently used first.  A shard's lock is held only to find, insert
 * or unlink an entry; opening and reading happen outside it.
 */
#include <errno.h>
#include <stdlib.h>

#include "mount_int.h"

#define QM_NODE_SHARDS 64
#define QM_NODES_PER_SHARD 64       /* 4096 files and directories held at most */

struct qm_node {
	fuse_ino_t nodeid;
	bool is_dir;
	atomic_int refs;
	uint64_t used;              /* shard clock at the last get */
	void *obj;                  /* struct qs_file or struct qm_dir */
	struct qm_node *next;
};

struct shard {
	pthread_mutex_t lock;
	struct qm_node *head;
	unsigned count;
	uint64_t clock;
};

struct qm_nodes {
	struct shard shards[QM_NODE_SHARDS];
};

struct qm_nodes *qm_nodes_create(void)
{
	struct qm_nodes *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	for (unsigned i = 0; i < QM_NODE_SHARDS; i++)
		pthread_mutex_init(&t->shards[i].lock, NULL);
	return t;
}

static void close_obj(bool is_dir, void *obj)
{
	if (is_dir)
		qm_dir_free(obj);
	else
		qs_file_close(obj);
}

static void free_obj(struct qm_node *n)
{
	close_obj(n->is_dir, n->obj);
	free(n);
}

void qm_nodes_destroy(struct qm_nodes *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < QM_NODE_SHARDS; i++) {
		struct qm_node *n = t->shards[i].head, *next;

		for (; n; n = next) {
			next = n->next;
			free_obj(n);
		}
		pthread_mutex_destroy(&t->shards[i].lock);
	}
	free(t);
}

static struct shard *shard_of(struct qm_nodes *t, fuse_ino_t nodeid)
{
	return &t->shards[(nodeid * 0x9e3779b97f4a7c15ull) >> 58];
}

static struct qm_node *find(struct shard *s, fuse_ino_t nodeid, bool is_dir)
{
	for (struct qm_node *n = s->head; n; n = n->next) {
		if (n->nodeid == nodeid && n->is_dir == is_dir) {
			atomic_fetch_add(&n->refs, 1);
			n->used = ++s->clock;
			return n;
		}
	}
	return NULL;
}

/* Unlink the least recently used entry nobody holds, if the shard is over its bound. */
static struct qm_node *unlink_victim(struct shard *s)
{
	struct qm_node **victim = NULL;

	if (s->count <= QM_NODES_PER_SHARD)
		return NULL;
	for (struct qm_node **p = &s->head; *p; p = &(*p)->next)
		if (atomic_load(&(*p)->refs) == 0 && (!victim || (*p)->used < (*victim)->used))
			victim = p;
	if (victim) {
		struct qm_node *n = *victim;

		*victim = n->next;
		s->count--;
		return n;
	}
	return NULL;
}

static int open_obj(const struct qm_view *v, fuse_ino_t nodeid, bool is_dir, void **obj)
{
	struct qs_inode in;
	int err = qs_inode_read(v->img, qm_ref_of(v, nodeid), &in);

	if (err)
		return err;
	if (is_dir)
		return in.type == QS_DIR ? qm_dir_load(v->img, &in, (struct qm_dir **)obj) : -ENOTDIR;
	return qs_file_open(v->img, &in, (struct qs_file **)obj);
}

/* The node's open file or listing, held until qm_nodes_put(). */
int qm_nodes_get(const struct qm_view *v, fuse_ino_t nodeid, bool is_dir, struct qm_node **out)
{
	struct shard *s = shard_of(v->nodes, nodeid);
	struct qm_node *n, *mine, *victim;
	void *obj;
	int err;

	pthread_mutex_lock(&s->lock);
	n = find(s, nodeid, is_dir);
	pthread_mutex_unlock(&s->lock);
	if (n) {
		*out = n;
		return 0;
	}

	err = open_obj(v, nodeid, is_dir, &obj);
	if (err)
		return err;
	mine = calloc(1, sizeof(*mine));
	if (!mine) {
		close_obj(is_dir, obj);
		return -ENOMEM;
	}
	mine->nodeid = nodeid;
	mine->is_dir = is_dir;
	mine->obj = obj;
	atomic_init(&mine->refs, 1);

	pthread_mutex_lock(&s->lock);
	n = find(s, nodeid, is_dir);        /* another thread may have been quicker */
	if (!n) {
		mine->used = ++s->clock;
		mine->next = s->head;
		s->head = mine;
		s->count++;
		n = mine;
		mine = NULL;
	}
	victim = unlink_victim(s);
	pthread_mutex_unlock(&s->lock);
	if (mine)
		free_obj(mine);
	if (victim)
		free_obj(victim);
	*out = n;
	return 0;
}

void *qm_node_obj(const struct qm_node *n)
{
	return n->obj;
}

void qm_nodes_put(struct qm_node *n)
{
	atomic_fetch_sub(&n->refs, 1);
}

void qm_nodes_each_file(struct qm_nodes *t, void (*fn)(void *file, void *arg), void *arg)
{
	for (unsigned i = 0; t && i < QM_NODE_SHARDS; i++) {
		pthread_mutex_lock(&t->shards[i].lock);
		for (struct qm_node *n = t->shards[i].head; n; n = n->next)
			if (!n->is_dir)
				fn(n->obj, arg);
		pthread_mutex_unlock(&t->shards[i].lock);
	}
}

void qm_nodes_hold(struct qm_node *n)
{
	atomic_fetch_add(&n->refs, 1);
}

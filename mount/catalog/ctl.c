/*
 * ctl.c - the control files at a catalog mount's root, which any
 * user who can reach the mount may open: `.quash-catalog` (the status text
 * of `quash catalog ls`) and `.quash-refresh` (`quash catalog refresh`).
 *
 * Neither may let one user cost the others memory or time.  Opens are
 * counted per user (QC_CTL_USER_OPEN_MAX) and in all (QC_CTL_OPEN_MAX).
 * The status text is a snapshot shared by every open while the catalog
 * shows nothing new (qc_status_epoch()), so holding many opens costs one
 * text, and a user who keeps changing what it shows causes at most
 * QC_CTL_BUILDS_PER_S fresh ones a second.  A refresh only asks the
 * watcher for a listing and never waits: its file reads "pending" until
 * that listing is merged and the kernel told, then its result, and
 * `quash catalog refresh` reads it again until then.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

#define QC_CTL_USER_OPEN_MAX 16     /* control files one user holds open */
#define QC_CTL_OPEN_MAX 1024        /* control files all users hold open */
#define QC_CTL_USERS 64             /* users counted apart; any more share one count */
#define QC_CTL_MAX_AGE_MS 1000      /* a snapshot is shared this long at most (its idle times age) */
#define QC_CTL_BUILDS_PER_S 10      /* fresh snapshots one user's opens may cause a second */
#define QC_CTL_REFRESH_TEXT 320     /* bytes of a refresh's state */

/*
 * One status text.  Counted, because the reply to the last read is still
 * in our writev() when the kernel, which copied the bytes before it
 * returned, lets the reader close and sends RELEASE to another worker: the
 * reads hold a reference across their reply, each open one until RELEASE.
 */
struct snapshot {
	char *text;
	size_t len;
	int refs;
	uint64_t epoch;
	int64_t built_ms;
};

struct ctl_user {
	uint32_t uid;
	bool used;
	unsigned open;              /* control files open */
	int64_t window_s;           /* the second its builds are counted in */
	unsigned builds;
};

struct qc_ctl {
	pthread_mutex_t lock;       /* the users, the count and cur: never held while a text is built */
	struct ctl_user users[QC_CTL_USERS + 1];        /* the last: everyone beyond the first QC_CTL_USERS */
	unsigned open;
	struct snapshot *cur;
	pthread_mutex_t build_lock; /* one build at a time; the others share the last */
	struct qc_handles files;    /* the open ones by handle (handles.c) */
};

struct ctl_file {                   /* an open control file */
	struct ctl_user *user;
	struct snapshot *snap;      /* .quash-catalog */
	uint64_t gen;               /* .quash-refresh: the listing it asked for */
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void snapshot_put(struct snapshot *s)
{
	if (s && __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(s->text);
		free(s);
	}
}

static struct snapshot *snapshot_get(struct snapshot *s)
{
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

struct qc_ctl *qc_ctl_create(void)
{
	struct qc_ctl *t = calloc(1, sizeof(*t));

	if (t) {
		pthread_mutex_init(&t->lock, NULL);
		pthread_mutex_init(&t->build_lock, NULL);
		qc_handles_init(&t->files);
	}
	return t;
}

static void free_file(void *obj, void *arg)
{
	struct ctl_file *f = obj;

	(void)arg;
	snapshot_put(f->snap);
	free(f);
}

void qc_ctl_destroy(struct qc_ctl *t)
{
	if (!t)
		return;
	qc_handles_destroy(&t->files, free_file, NULL);
	snapshot_put(t->cur);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->build_lock);
	free(t);
}

/*
 * The caller's count (t->lock held): its own, else a new one in a place no
 * user holds a file open in nor built a text in this second (so closing
 * and opening again does not clear a build count), else the one everyone
 * beyond QC_CTL_USERS shares.
 */
static struct ctl_user *user_of(struct qc_ctl *t, uint32_t uid)
{
	struct ctl_user *free_one = NULL;
	int64_t now_s = mono_ms() / 1000;

	for (unsigned i = 0; i < QC_CTL_USERS; i++) {
		struct ctl_user *u = &t->users[i];

		if (u->used && u->uid == uid)
			return u;
		if (!free_one && (!u->used || (u->open == 0 && u->window_s != now_s)))
			free_one = u;
	}
	if (!free_one)
		return &t->users[QC_CTL_USERS];
	*free_one = (struct ctl_user){ .uid = uid, .used = true };
	return free_one;
}

/* A place for one more open control file of 'uid', or NULL: EMFILE. */
static struct ctl_user *take_place(struct qc_ctl *t, uint32_t uid)
{
	struct ctl_user *u;

	pthread_mutex_lock(&t->lock);
	u = user_of(t, uid);
	if (u->open >= QC_CTL_USER_OPEN_MAX || t->open >= QC_CTL_OPEN_MAX) {
		u = NULL;
	} else {
		u->open++;
		t->open++;
	}
	pthread_mutex_unlock(&t->lock);
	return u;
}

static void give_place(struct qc_ctl *t, struct ctl_user *u)
{
	pthread_mutex_lock(&t->lock);
	u->open--;
	t->open--;
	pthread_mutex_unlock(&t->lock);
}

/* The snapshot to share, if it still shows the catalog (t->lock held); else NULL. */
static struct snapshot *shareable(struct qc_ctl *t, struct ctl_user *u, uint64_t epoch, int64_t now)
{
	struct snapshot *s = t->cur;

	if (!s)
		return NULL;
	if (s->epoch == epoch && now - s->built_ms < QC_CTL_MAX_AGE_MS)
		return snapshot_get(s);
	if (u->window_s == now / 1000 && u->builds >= QC_CTL_BUILDS_PER_S)
		return snapshot_get(s);         /* this user has had its fresh ones this second */
	return NULL;
}

/* The status text for one open: the shared snapshot, or a fresh one; NULL: out of memory. */
static struct snapshot *status_for(struct qm_catalog *c, struct qc_ctl *t, struct ctl_user *u)
{
	uint64_t epoch = qc_status_epoch(c);
	int64_t now = mono_ms();
	struct snapshot *s;

	pthread_mutex_lock(&t->lock);
	s = shareable(t, u, epoch, now);
	if (!s) {
		if (u->window_s != now / 1000) {
			u->window_s = now / 1000;
			u->builds = 0;
		}
		u->builds++;
	}
	pthread_mutex_unlock(&t->lock);
	if (s)
		return s;
	/* someone else is building: theirs is as fresh as ours would be; wait only if there is none yet */
	if (pthread_mutex_trylock(&t->build_lock) != 0) {
		pthread_mutex_lock(&t->lock);
		s = t->cur ? snapshot_get(t->cur) : NULL;
		pthread_mutex_unlock(&t->lock);
		if (s)
			return s;
		pthread_mutex_lock(&t->build_lock);
	}
	s = calloc(1, sizeof(*s));
	if (s && !(s->text = qc_status(c, &s->len))) {
		free(s);
		s = NULL;
	}
	if (s) {
		s->refs = 2;            /* the caller's and t->cur's */
		s->epoch = epoch;
		s->built_ms = now;
		pthread_mutex_lock(&t->lock);
		snapshot_put(t->cur);
		t->cur = s;
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&t->build_lock);
	return s;
}

/* An open control file for the caller of req; NULL with *err (a positive errno). */
static struct ctl_file *make_file(struct qm_catalog *c, struct qc_ctl *t, fuse_req_t req, fuse_ino_t nodeid,
				  int *err)
{
	struct ctl_file *f = calloc(1, sizeof(*f));

	*err = ENOMEM;
	if (f && !(f->user = take_place(t, fuse_req_ctx(req)->uid)))
		*err = EMFILE;
	if (f && f->user) {
		if (nodeid == QC_CTL_STATUS)
			f->snap = status_for(c, t, f->user);
		else
			f->gen = qc_refresh_request(c);
		if (nodeid != QC_CTL_STATUS || f->snap)
			return f;
		give_place(t, f->user);
	}
	free(f);
	return NULL;
}

void qc_ctl_open(struct qm_catalog *c, struct qc_ctl *t, fuse_req_t req, fuse_ino_t nodeid,
		 struct fuse_file_info *fi)
{
	int err;
	struct ctl_file *f = make_file(c, t, req, nodeid, &err);

	if (f && !(fi->fh = qc_handle_add(&t->files, f))) {
		give_place(t, f->user);
		free_file(f, NULL);
		f = NULL;
	}
	if (!f) {
		fuse_reply_err(req, err);
		return;
	}
	fi->direct_io = 1;          /* the size is not known to stat, and a refresh's state changes: read to the end */
	if (fuse_reply_open(req, fi) != 0)
		qc_ctl_release(t, fi);
}

/* The open file of a handle; one opened under a server before this one is opened again now. */
static struct ctl_file *file_of(struct qm_catalog *c, struct qc_ctl *t, fuse_req_t req, fuse_ino_t nodeid,
				uint64_t fh, int *err)
{
	struct ctl_file *f = qc_handle_get(&t->files, fh), *have;

	if (f || !(f = make_file(c, t, req, nodeid, err)))
		return f;
	have = qc_handle_set(&t->files, fh, f);
	if (have != f) {
		give_place(t, f->user);
		free_file(f, NULL);
		*err = ENOMEM;
	}
	return have;
}

void qc_ctl_read(struct qm_catalog *c, fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off,
		 struct fuse_file_info *fi)
{
	struct qc_ctl *t = c->ctl;
	char state[QC_CTL_REFRESH_TEXT];
	struct snapshot *s = NULL;
	const char *text = state;
	struct ctl_file *f;
	size_t len;
	int err;

	if (!(f = file_of(c, t, req, nodeid, fi->fh, &err))) {
		fuse_reply_err(req, err);
		return;
	}
	if (f->snap) {
		s = snapshot_get(f->snap);
		text = s->text;
		len = s->len;
	} else {
		int n = qc_refresh_state(c, f->gen, state, sizeof(state));

		len = n < 0 ? 0 : (size_t)n < sizeof(state) ? (size_t)n : sizeof(state) - 1;
	}
	if (off < 0 || (size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, text + off, len - (size_t)off < size ? len - (size_t)off : size);
	snapshot_put(s);
}

void qc_ctl_release(struct qc_ctl *t, struct fuse_file_info *fi)
{
	struct ctl_file *f = qc_handle_take(&t->files, fi->fh);

	if (!f)
		return;         /* opened under a server before this one, and never read here */
	give_place(t, f->user);
	free_file(f, NULL);
}

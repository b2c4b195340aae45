/*
 * catalog.c - a catalog's life: made from its source (the root directory
 * or the remote base, the descriptors, the block cache, the first
 * listing) and destroyed.  The rest of the model is in the files beside
 * this one (catalog_int.h says which does what), the FUSE operations over
 * it in ops.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "ctl.h"
#include "verity/verity.h"

static int open_root(struct qm_catalog *c)
{
	struct stat st;

	c->root_fd = open(c->spec, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->root_fd < 0 || fstat(c->root_fd, &st) != 0) {
		int err = errno;

		fprintf(stderr, "%s: catalog %s: %s\n", c->fs->opt->msgname, c->spec,
			err == ENOTDIR ? "not a directory (a catalog is a directory of images, "
			"an http(s):// index or an s3:// prefix)" : strerror(err));
		return -err;
	}
	return 0;
}

/*
 * Each open image holds a descriptor: raise the soft limit to the hard one
 * (1,024 by default, often 524,288 hard) and keep open_max below it.
 */
static void fit_descriptors(struct qm_catalog *c)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)c->open_max + QC_FD_RESERVE) {
		unsigned fit = rl.rlim_cur > 2 * QC_FD_RESERVE ? (unsigned)(rl.rlim_cur - QC_FD_RESERVE) : QC_FD_RESERVE;

		if (c->fs->opt->catalog_open_max)
			fprintf(stderr, "%s: -o open_max=%u: only %llu descriptors; keeping %u images open at most\n",
				c->fs->opt->msgname, c->open_max, (unsigned long long)rl.rlim_cur, fit);
		c->open_max = fit;
	}
}

/*
 * What a remote catalog's keys are appended to: "s3://BUCKET/PREFIX/", or
 * the http(s) URL's scheme and authority and the directory of its path
 * ("/" when it has none), its query and fragment dropped.  The authority
 * is found before any key is seen, so no key can choose the host.
 */
static char *remote_base(const char *spec)
{
	size_t len = strlen(spec), path, end, dir;
	const char *sep = strstr(spec, "://");
	char *base;

	if (strncmp(spec, "s3://", 5) == 0) {
		base = malloc(len + 2);
		if (base)
			snprintf(base, len + 2, "%s%s", spec, spec[len - 1] == '/' ? "" : "/");
		return base;
	}
	path = sep ? (size_t)(sep - spec) + 3 : 0;
	path += strcspn(spec + path, "/?#");
	end = path + strcspn(spec + path, "?#");
	dir = end;
	while (dir > path && spec[dir - 1] != '/')
		dir--;
	if (dir == path) {          /* no path: the server's root */
		base = malloc(path + 2);
		if (base)
			snprintf(base, path + 2, "%.*s/", (int)path, spec);
		return base;
	}
	return strndup(spec, dir);
}

/*
 * A catalog with no listing yet, its settings from 'opt': the state the
 * daemon's qc_create() and the unit tests' qc_model_new() share.  NULL when
 * out of memory.
 */
struct qm_catalog *qc_catalog_new(struct qm_fs *fs, const struct qm_options *opt)
{
	struct qm_catalog *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fs = fs;
	c->spec = opt->image;
	c->remote = qs_source_spec_is_remote(opt->image);
	c->root_fd = c->inotify_fd = c->wake[0] = c->wake[1] = c->jfd = -1;
	c->idle = opt->catalog_idle ? opt->catalog_idle : QC_DEFAULT_IDLE;
	c->refresh = opt->catalog_refresh ? opt->catalog_refresh : QC_DEFAULT_REFRESH;
	c->open_max = opt->catalog_open_max ? opt->catalog_open_max : QC_DEFAULT_OPEN_MAX;
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->list_lock, NULL);
	pthread_mutex_init(&c->nlock, NULL);
	pthread_mutex_init(&c->slot_lock, NULL);
	pthread_mutex_init(&c->open_lock, NULL);
	pthread_mutex_init(&c->jlock, NULL);
	qc_handles_init(&c->handles);
	qs_memory_budget_init(&c->remote_memory,
			      opt->source.memory_cache ? opt->source.memory_cache : QC_DEFAULT_REMOTE_MEMORY);
	c->root.is_dir = true;
	c->dirs_cap = 64;
	c->dirs = calloc(c->dirs_cap, sizeof(*c->dirs));
	c->slots = calloc((size_t)QC_SLOTS_MAX + 1, sizeof(*c->slots));
	atomic_init(&c->nslots, 1);
	c->changed = time(NULL);
	if (!c->dirs || !c->slots) {
		qc_destroy(c);
		return NULL;
	}
	c->dirs[c->ndirs++] = &c->root;
	return c;
}

/*
 * A held catalog's server: the names the last server gave the kernel come
 * back from the holder's state file before the first listing, which then
 * keeps each that is unchanged (journal.c).
 */
static int hold(struct qm_catalog *c)
{
	struct qm_fs *fs = c->fs;
	int err = fs->state_fd >= 0 ? qc_journal_seed(c, fs->state_fd) : 0;

	if (fs->state_fd >= 0)
		close(fs->state_fd);
	fs->state_fd = -1;
	if (!err)
		err = qc_journal_start(c);
	if (err) {
		qm_log(fs, "catalog: %s: cannot take over the last server's names: %s", fs->name, strerror(-err));
		qm_server_send_state(fs, -1);   /* the holder gives the mount up rather than serve other names */
	}
	return err;
}

int qc_create(struct qm_fs *fs, struct qm_catalog **out)
{
	const struct qm_options *opt = fs->opt;
	struct qm_catalog *c = qc_catalog_new(fs, opt);
	int err;

	if (!c) {
		fprintf(stderr, "%s: out of memory\n", opt->msgname);
		return -ENOMEM;
	}
	fit_descriptors(c);
	c->file_modes = qm_has_kernel_opt(opt, "allow_other") && !opt->catalog_any_reader;
	c->cache = qs_cache_create(opt->cache_bytes ? opt->cache_bytes : QS_DEFAULT_CACHE_BYTES);
	c->ctl = qc_ctl_create();
	if (!c->cache || !c->ctl || pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		qc_destroy(c);
		fprintf(stderr, "%s: out of memory\n", opt->msgname);
		return -ENOMEM;
	}
	if (c->remote) {
		c->base = remote_base(c->spec);
		if (!c->base) {
			qc_destroy(c);
			return -ENOMEM;
		}
	} else {
		err = open_root(c);
		if (err) {
			qc_destroy(c);
			return err;
		}
		c->root_abs = realpath(c->spec, NULL);  /* NULL: absolute alias targets are refused */
		c->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	}
	/* Loaded once: the same certificates check every image's signature (a remote catalog is refused it). */
	if (opt->source.verity_cert && (err = qs_verity_certs_load(opt->source.verity_cert, &c->certs)) < 0) {
		fprintf(stderr, "%s: %s\n", opt->msgname, qs_last_error());
		qc_destroy(c);
		return err;
	}
	err = fs->holder_fd >= 0 ? hold(c) : 0;
	if (err) {
		qc_destroy(c);
		return err;
	}
	err = qc_refresh(c);
	if (err) {
		fprintf(stderr, "%s: catalog %s: %s\n", opt->msgname, fs->name, c->list_error);
		qc_destroy(c);
		return err;
	}
	*out = c;
	return 0;
}

struct qc_ctl *qc_ctl_of(struct qm_catalog *c)
{
	return c->ctl;
}

static void free_listing(void *l, void *arg)
{
	(void)arg;
	qc_listing_free(l);
}

void qc_destroy(struct qm_catalog *c)
{
	unsigned n;

	if (!c)
		return;
	qc_stop(c);
	if (c->jfd >= 0)            /* what is freed below is gone for this server only */
		close(c->jfd);
	c->jfd = -1;
	n = c->slots ? atomic_load(&c->nslots) : 0;
	for (unsigned s = 1; s < n; s++)
		qc_image_free(c->slots[s]);
	free(c->slots);
	if (c->dirs && c->ndirs)
		qc_free_node(c, &c->root);
	free(c->dirs);
	for (size_t i = 0; i < c->nnotices; i++)
		free(c->notices[i].name);
	free(c->notices);
	if (c->cache)
		qs_cache_destroy(c->cache);
	if (c->root_fd >= 0)
		close(c->root_fd);
	if (c->inotify_fd >= 0)
		close(c->inotify_fd);
	if (c->wake[0] >= 0) {
		close(c->wake[0]);
		close(c->wake[1]);
	}
	free(c->base);
	free(c->root_abs);
	qs_verity_certs_free(c->certs);
	free(c->was_unserved);
	free(c->now_unserved);
	qc_ctl_destroy(c->ctl);
	qc_handles_destroy(&c->handles, free_listing, NULL);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->list_lock);
	pthread_mutex_destroy(&c->nlock);
	pthread_mutex_destroy(&c->slot_lock);
	pthread_mutex_destroy(&c->open_lock);
	pthread_mutex_destroy(&c->jlock);
	free(c->freed);
	free(c->wds);
	qs_memory_budget_destroy(&c->remote_memory);
	free(c);
}

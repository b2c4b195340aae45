/*
 * session.c - the FUSE session: mounting, the request loop, and the ways
 * a mount ends.
 *
 * The loop is our own: N worker threads each call fuse_session_receive_buf()
 * and fuse_session_process_buf() on the one /dev/fuse descriptor, which
 * serves several times the requests per second of libfuse's
 * fuse_session_loop_mt() (bench/mount.sh, docs/benchmarks.md).  What is
 * served (the operations) and what happens once it is up or going down
 * come from mount_main.c (struct qm_serve): the session knows neither a
 * plain mount nor a catalog.
 *
 * A mount ends when the kernel ends the connection: fusermount3 -u, umount,
 * or our own lazy unmount on SIGTERM/SIGINT/SIGHUP or after timeout= idle
 * seconds.  A lazy unmount lets processes that still use the mount finish;
 * the workers then read ENODEV and return.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"
#include "log.h"
#include "mount_int.h"
#include "uring.h"

static void *worker(void *arg);

/* One more worker, if the limit allows (a growing session's, when the last idle one took a request). */
static void add_worker(struct qm_fs *fs)
{
	pthread_mutex_lock(&fs->workers_lock);
	if (fs->nworkers < QM_MAX_WORKERS &&
	    pthread_create(&fs->workers[fs->nworkers], NULL, worker, fs) == 0)
		fs->nworkers++;
	pthread_mutex_unlock(&fs->workers_lock);
}

static void *worker(void *arg)
{
	struct qm_fs *fs = arg;
	struct fuse_buf buf = { 0 };

	while (!fuse_session_exited(fs->se) && !atomic_load(&fs->draining)) {
		int r, idle;

		atomic_fetch_add(&fs->idle_workers, 1);
		r = fuse_session_receive_buf(fs->se, &buf);
		idle = atomic_fetch_sub(&fs->idle_workers, 1) - 1;
		if (r == -EINTR)
			continue;       /* a drain (server.c) ends the loop above */
		if (r <= 0)
			break;
		if (idle == 0 && fs->grow_workers)
			add_worker(fs);
		fuse_session_process_buf(fs->se, &buf);
	}
	free(buf.mem);
	atomic_fetch_add(&fs->workers_done, 1);

	pthread_mutex_lock(&fs->ready_lock);
	fs->ended = true;
	pthread_cond_broadcast(&fs->ready_cond);
	pthread_mutex_unlock(&fs->ready_lock);
	return NULL;
}

void qm_request_unmount(struct qm_fs *fs)
{
	if (atomic_exchange(&fs->unmounting, true))
		return;
	if (qm_lazy_unmount(fs->mountpoint) != 0) {
		qm_log(fs, "cannot unmount %s; exiting", fs->mountpoint);
		fuse_session_exit(fs->se);
		_exit(1);
	}
}

/*
 * The signals signal_waiter takes.  A held mount's server leaves SIGTERM,
 * SIGINT and SIGHUP at their default: they end the server, and its holder
 * starts another; the mount ends by the holder's signals.
 */
static void waited_signals(const struct qm_fs *fs, sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGUSR1);
	if (fs->holder_fd >= 0)
		return;
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

static void *signal_waiter(void *arg)
{
	struct qm_fs *fs = arg;
	sigset_t set;
	int sig;

	waited_signals(fs, &set);
	while (sigwait(&set, &sig) == 0) {
		if (sig == SIGUSR1)
			qm_counters_report(fs);     /* one line: requests by transport and opcode */
		else
			qm_request_unmount(fs);
	}
	return NULL;
}

/* squashfuse_ll's timeout=: unmount once nothing is open and nothing was asked for a while. */
static void *idle_watcher(void *arg)
{
	struct qm_fs *fs = arg;
	const struct timespec tick = { 1, 0 };

	while (!atomic_load(&fs->unmounting)) {
		nanosleep(&tick, NULL);
		if (atomic_load(&fs->open_count) == 0 &&
		    time(NULL) - atomic_load(&fs->last_access) > (int64_t)fs->opt->idle_timeout) {
			qm_request_unmount(fs);
			break;
		}
	}
	return NULL;
}

/* squashfuse_ll's notify_pipe=: 's' once mounted.  Opening a FIFO blocks until its reader comes. */
static void *pipe_notifier(void *arg)
{
	struct qm_fs *fs = arg;
	int fd = open(fs->opt->notify_pipe, O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		qm_log(fs, "notify_pipe %s: %s", fs->opt->notify_pipe, strerror(errno));
		return NULL;
	}
	if (write(fd, "s", 1) != 1)
		qm_log(fs, "notify_pipe %s: %s", fs->opt->notify_pipe, strerror(errno));
	close(fd);
	return NULL;
}

static int start_detached(void *(*fn)(void *), struct qm_fs *fs)
{
	pthread_attr_t attr;
	pthread_t tid;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&tid, &attr, fn, fs);
	pthread_attr_destroy(&attr);
	return -err;
}

/* "-o" for libfuse: the kernel flags, then fsname= (commas escaped) and subtype=. */
static int session_args(struct qm_fs *fs, struct fuse_args *args)
{
	char opts[sizeof(fs->opt->kernel_opts) + 2 * 4096 + 64];
	size_t n = (size_t)snprintf(opts, sizeof(opts), "%s,subtype=quash,fsname=", fs->opt->kernel_opts);

	for (const char *p = fs->opt->fsname ? fs->opt->fsname : fs->name; *p && n + 3 < sizeof(opts); p++) {
		if (*p == ',' || *p == '\\')
			opts[n++] = '\\';
		opts[n++] = *p;
	}
	opts[n] = '\0';
	if (fuse_opt_add_arg(args, fs->opt->progname) || fuse_opt_add_arg(args, "-o") ||
	    fuse_opt_add_arg(args, opts) || (fs->opt->debug && fuse_opt_add_arg(args, "-d")))
		return -ENOMEM;
	return 0;
}

/*
 * The kernel gives a FUSE mount 128 KiB of readahead, which the mount keeps
 * unless -o readahead= asks otherwise (QM_DEFAULT_READAHEAD_KB says why).
 * Only root may write the bdi's setting; others keep the kernel's.
 */
static void set_readahead(struct qm_fs *fs)
{
	char path[64], value[16];
	struct stat st;
	int fd;

	if (fs->opt->readahead_kb <= 0 || stat(fs->mountpoint, &st) != 0)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev), minor(st.st_dev));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(value, sizeof(value), "%d", fs->opt->readahead_kb);
	if (write(fd, value, strlen(value)) < 0 && fs->opt->debug)
		qm_log(fs, "%s: %s", path, strerror(errno));
	close(fd);
}

unsigned qm_default_threads(void)
{
	unsigned n = cpus_usable();

	return n < QM_DEFAULT_THREADS_MIN ? QM_DEFAULT_THREADS_MIN : n > QM_DEFAULT_THREADS_MAX ? QM_DEFAULT_THREADS_MAX : n;
}

static unsigned thread_count(const struct qm_options *opt)
{
	if (opt->single_thread)
		return 1;
	return opt->threads ? opt->threads : qm_default_threads();
}

static bool wait_ready(struct qm_fs *fs)
{
	bool ready;

	pthread_mutex_lock(&fs->ready_lock);
	while (!fs->ready && !fs->ended)
		pthread_cond_wait(&fs->ready_cond, &fs->ready_lock);
	ready = fs->ready;
	pthread_mutex_unlock(&fs->ready_lock);
	return ready;
}

/* Longest message of libfuse or fusermount3 kept for the one line. */
#define QM_MOUNT_MSG_MAX 512

/* The last line in buf (trailing newlines dropped), without a "fusermount3: " or "fuse: " prefix. */
static const char *last_line(char *buf)
{
	size_t len = strlen(buf);
	char *line;

	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		buf[--len] = '\0';
	line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	if (strncmp(line, "fusermount3: ", 13) == 0)
		line += 13;
	else if (strncmp(line, "fuse: ", 6) == 0)
		line += 6;
	return line;
}

/*
 * fuse_session_mount(), with what libfuse and the fusermount3 it runs print
 * to stderr caught in a pipe, so that a failure is one line of ours that
 * carries their reason.  Nothing else writes to stderr at this point: no
 * thread has started.  The pipe holds far more than those few lines.
 */
static int mount_quietly(struct qm_fs *fs)
{
	char msg[QM_MOUNT_MSG_MAX];
	int p[2], saved, rc;
	ssize_t n;

	/* With auto_unmount fusermount3 stays, holding its stderr: it must not be our pipe. */
	fflush(stderr);
	saved = qm_has_kernel_opt(fs->opt, "auto_unmount") ? -1 : dup(STDERR_FILENO);
	if (saved < 0 || pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		if (saved >= 0)
			close(saved);
		rc = fuse_session_mount(fs->se, fs->mountpoint);
		if (rc != 0)
			fprintf(stderr, "%s: %s: cannot mount\n", fs->opt->msgname, fs->mountpoint);
		return rc;
	}
	dup2(p[1], STDERR_FILENO);
	rc = fuse_session_mount(fs->se, fs->mountpoint);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(p[1]);
	n = read(p[0], msg, sizeof(msg) - 1);
	close(p[0]);
	msg[n > 0 ? n : 0] = '\0';
	if (rc != 0)
		fprintf(stderr, "%s: %s: cannot mount: %s\n", fs->opt->msgname, fs->mountpoint,
			msg[0] ? last_line(msg) : "the kernel refused");
	else if (msg[0])
		fprintf(stderr, "%s: %s: %s\n", fs->opt->msgname, fs->mountpoint, last_line(msg));
	return rc;
}

int qm_session_mount(struct qm_fs *fs)
{
	static const struct fuse_lowlevel_ops none;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);

	if (session_args(fs, &args))
		return -ENOMEM;
	fs->se = fuse_session_new(&args, &none, sizeof(none), fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		fprintf(stderr, "%s: cannot start a FUSE session\n", fs->opt->msgname);
		return -EIO;
	}
	if (mount_quietly(fs) != 0) {
		fuse_session_destroy(fs->se);
		fs->se = NULL;
		return -EIO;
	}
	return 0;
}

/* A held mount's server: the holder mounts, and libfuse takes its descriptor as "/dev/fd/N". */
static int attach_to_holder(struct qm_fs *fs)
{
	char path[32];
	int fd;

	if (qm_server_attach(fs, &fd) != 0)
		return -EIO;
	snprintf(path, sizeof(path), "/dev/fd/%d", fd);
	if (fuse_session_mount(fs->se, path) != 0) {
		close(fd);
		return -EIO;
	}
	return 0;
}

int qm_session_run(struct qm_fs *fs, const struct qm_serve *serve, int ready_fd)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	unsigned n = thread_count(fs->opt), started = 0;
	sigset_t set;
	int err = 0;

	if (session_args(fs, &args))
		return -ENOMEM;
	fs->grow_workers = serve->grow_workers;
	fs->se = fuse_session_new(&args, serve->ops, sizeof(*serve->ops), fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		fprintf(stderr, "%s: cannot start a FUSE session\n", fs->opt->msgname);
		return -EIO;
	}
	if (fs->holder_fd >= 0 ? attach_to_holder(fs) != 0 : mount_quietly(fs) != 0) {
		fuse_session_destroy(fs->se);
		return -EIO;
	}

	/* every thread from here on leaves these signals to signal_waiter */
	waited_signals(fs, &set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = qm_transport_install(fs);
	/* a later server of a held mount: the kernel sent INIT to the first; replay it before any worker reads */
	if (!err && qm_server_replay_init(fs) != 0) {
		fprintf(stderr, "%s: %s: the mount's INIT could not be replayed\n", fs->opt->msgname, fs->mountpoint);
		err = -EPROTO;
	}

	if (!err && fs->opt->notify_store && !(fs->fill = qm_fill_start(fs->se)))
		err = -ENOMEM;
	/* one CPU: the reader's worker decompresses on it already, and a loader would only take turns with it */
	if (!err && fs->opt->decompress_ahead && cpus_usable() > 1 &&
	    !(fs->ahead = qm_ahead_start(fs->opt->cache_bytes ? fs->opt->cache_bytes : QS_DEFAULT_CACHE_BYTES)))
		err = -ENOMEM;
	pthread_mutex_init(&fs->workers_lock, NULL);
	pthread_mutex_lock(&fs->workers_lock);
	for (; !err && started < n; started++)
		err = -pthread_create(&fs->workers[started], NULL, worker, fs);
	fs->nworkers = err ? started - 1 : started;
	pthread_mutex_unlock(&fs->workers_lock);
	if (!err)
		err = start_detached(signal_waiter, fs);
	if (err) {
		fprintf(stderr, "%s: cannot start threads: %s\n", fs->opt->msgname, strerror(-err));
		if (fs->holder_fd >= 0)
			_exit(1);       /* the holder, not this server, decides the mount's fate */
		qm_request_unmount(fs);
	} else if (!wait_ready(fs)) {
		fprintf(stderr, "%s: %s: the kernel ended the mount before it was ready\n",
			fs->opt->msgname, fs->mountpoint);
		err = -EIO;
	} else {
		if (fs->opt->idle_timeout) {
			atomic_store(&fs->last_access, (int64_t)time(NULL));
			start_detached(idle_watcher, fs);
		}
		set_readahead(fs);
		if (serve->started)
			serve->started(fs);
		if (fs->holder_fd >= 0 && qm_server_ready(fs) != 0)
			qm_log(fs, "cannot report readiness to the mount's holder: %s", strerror(errno));
		if (fs->opt->notify_pipe && !fs->replay_init_len)    /* said once, by a held mount's first server */
			start_detached(pipe_notifier, fs);
		if (ready_fd >= 0) {
			if (write(ready_fd, "", 1) != 1)
				qm_log(fs, "cannot report readiness: %s", strerror(errno));
			close(ready_fd);
		}
		if (serve->ready)
			serve->ready(fs);
	}

	/* workers added meanwhile are joined too: each is added before the one that added it returns */
	for (unsigned i = 0;; i++) {
		pthread_mutex_lock(&fs->workers_lock);
		n = fs->nworkers;
		pthread_mutex_unlock(&fs->workers_lock);
		if (i >= n)
			break;
		pthread_join(fs->workers[i], NULL);
	}
	qm_server_stop(fs);     /* a drain in progress uses workers_lock */
	pthread_mutex_destroy(&fs->workers_lock);
	qm_transport_stop(fs);
	qm_ahead_stop(fs->ahead, fs->opt->debug || getenv("QUASH_FILL_STATS"));
	fs->ahead = NULL;
	qm_fill_stop(fs->fill, fs->opt->debug || getenv("QUASH_FILL_STATS"));
	fs->fill = NULL;
	/* before the session ends: a catalog's watcher tells the kernel of changed names through fs->se */
	if (serve->stopping)
		serve->stopping(fs);
	fuse_session_unmount(fs->se);
	fuse_session_destroy(fs->se);
	fs->se = NULL;
	return err;
}

/*
 * mount_main.c - `quash mount`, `quash umount` and the squashfuse_ll
 * drop-in: check everything that can be checked before mounting, then
 * daemonize so that the command returns only once the mount is ready.
 *
 * The parent forks; the child opens the image, mounts and serves.  The
 * child writes one byte to a pipe once the kernel's INIT is answered; the
 * parent exits 0 on that byte, or with the child's status if the pipe
 * closes first.  Errors before that point reach the terminal, one line each.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <inttypes.h>

#include "catalog/catalog.h"
#include "holder.h"
#include "log.h"
#include "mount.h"
#include "format/squashfs_fs.h"

/* squashfuse_ll's notify_pipe= on failure: 'f', written before exiting. */
static void notify_failure(const struct qm_options *opt)
{
	int fd;

	if (!opt->notify_pipe)
		return;
	fd = open(opt->notify_pipe, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "f", 1) != 1)
			fprintf(stderr, "%s: notify_pipe %s: %s\n", opt->msgname, opt->notify_pipe, strerror(errno));
		close(fd);
	}
}

/* An existing directory, nothing mounted on it yet; its absolute path into fs->mountpoint. */
static int check_mountpoint(const struct qm_options *opt, struct qm_fs *fs)
{
	char parent[PATH_MAX + 4];
	struct stat st, pst;

	/* A mount left by a daemon that died is in the way, and of no use to anyone: detach it. */
	if (qm_detach_dead(opt->mountpoint) > 0)
		fprintf(stderr, "%s: mount point %s: the mount there had lost its daemon (%s); detached it\n",
			opt->msgname, opt->mountpoint, strerror(ENOTCONN));
	if (!realpath(opt->mountpoint, fs->mountpoint) || stat(fs->mountpoint, &st) != 0) {
		int err = errno;

		fprintf(stderr, "%s: mount point %s: %s\n", opt->msgname, opt->mountpoint, strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: mount point %s: not a directory\n", opt->msgname, opt->mountpoint);
		return -ENOTDIR;
	}
	snprintf(parent, sizeof(parent), "%s/..", fs->mountpoint);
	if (strcmp(fs->mountpoint, "/") == 0 || (stat(parent, &pst) == 0 && pst.st_dev != st.st_dev)) {
		fprintf(stderr, "%s: mount point %s: busy: something is mounted there already; unmount it first\n",
			opt->msgname, opt->mountpoint);
		return -EBUSY;
	}
	return 0;
}

/* Is "user_allow_other" set in /etc/fuse.conf, as fusermount3 reads it? */
static bool user_allow_other(void)
{
	FILE *f = fopen(QM_FUSE_CONF, "re");
	char line[256];
	bool set = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");

		if (strncmp(p, "user_allow_other", 16) == 0 && strchr(" \t\r\n", p[16]))
			set = true;
	}
	fclose(f);
	return set;
}

/*
 * What fusermount3 would refuse, said before trying, with the fix: libfuse
 * and fusermount3 print their own lines and then only "cannot mount".
 */
static int check_fuse_access(const struct qm_options *opt)
{
	if (access(QM_FUSE_DEVICE, R_OK | W_OK) != 0) {
		int err = errno;

		if (err == ENOENT)
			fprintf(stderr, "%s: %s is missing; load the fuse module (modprobe fuse), or give a "
				"container the device (--device /dev/fuse)\n", opt->msgname, QM_FUSE_DEVICE);
		else
			fprintf(stderr, "%s: no access to %s (%s); it is usually crw-rw-rw-: ask an "
				"administrator to allow it\n", opt->msgname, QM_FUSE_DEVICE, strerror(err));
		return -err;
	}
	if (geteuid() != 0 && (qm_has_kernel_opt(opt, "allow_other") || qm_has_kernel_opt(opt, "allow_root")) &&
	    !user_allow_other()) {
		fprintf(stderr, "%s: -o %s needs 'user_allow_other' in %s; root can add it, or mount "
			"without it\n", opt->msgname, qm_has_kernel_opt(opt, "allow_other") ? "allow_other" :
			"allow_root", QM_FUSE_CONF);
		return -EPERM;
	}
	return 0;
}

static int open_image(const struct qm_options *opt, struct qm_fs *fs)
{
	struct qs_image_options io = {
		.offset = opt->offset, .offset_given = opt->offset_given, .cache_bytes = opt->cache_bytes,
	};
	struct qs_source *src;
	struct qs_inode root;
	int err;

	err = qs_source_open(opt->image, &opt->source, &src);
	if (!err && src->notice)
		fprintf(stderr, "%s: %s: %s\n", opt->msgname, fs->name, src->notice);
	if (!err)
		err = qs_image_open(src, &io, &fs->view.img);
	if (!err && opt->subdir) {
		err = qs_lookup_path(fs->view.img, opt->subdir, &root);
		/* The image is fine; what is missing is the subdir inside it. */
		if (err == -ENOENT)
			err = qs_set_error(err, "-o subdir=%s: no such directory in the image", opt->subdir);
	} else if (!err) {
		err = qs_inode_root(fs->view.img, &root);
	}
	if (!err && root.type != QS_DIR)
		err = qs_set_error(-ENOTDIR, "-o subdir=%s: not a directory in the image", opt->subdir);
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", opt->msgname, fs->name, qs_last_error());
		if (fs->view.img)
			qs_image_close(fs->view.img);
		fs->view.img = NULL;
		return err;
	}
	qm_view_init(&fs->view, fs->view.img, root.ref, qs_source_spec_is_remote(opt->image));
	fs->view.name = fs->name;
	fs->view.labels = &fs->labels;
	return 0;
}

/*
 * -o log=FILE: appended to, created 0640 if need be, never through a
 * symlink, and only a regular file (a host without /dev/log loses syslog's
 * lines; this keeps them).  0, or -errno said in one line.
 */
static int open_log(const struct qm_options *opt, struct qm_fs *fs)
{
	struct stat st;

	fs->log_fd = -1;
	if (!opt->log_file)
		return 0;
	fs->log_fd = open(opt->log_file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
			  O_CLOEXEC, 0640);
	if (fs->log_fd < 0 || fstat(fs->log_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int err = fs->log_fd < 0 ? errno : EINVAL;

		fprintf(stderr, "%s: -o log=%s: %s\n", opt->msgname, opt->log_file,
			err == ELOOP ? "a symlink; give the file itself" : err == EINVAL ? "not a regular file" :
			strerror(err));
		if (fs->log_fd >= 0)
			close(fs->log_fd);
		fs->log_fd = -1;
		return -err;
	}
	return 0;
}

/* From here on the daemon talks to syslog, or -o log='s file; its terminal may be gone. */
static void detach_stdio(struct qm_fs *fs)
{
	int null = open("/dev/null", O_RDWR);

	if (fs->log_fd < 0) {
		openlog(fs->opt->progname, LOG_PID, LOG_DAEMON);
		fs->use_syslog = true;
	}
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	if (chdir("/") != 0)
		qm_log(fs, "chdir /: %s", strerror(errno));
}

/*
 * The image as messages and the mount table show it: secrets hidden, and a
 * local path made absolute (as mount(8) does), so that /proc/mounts names
 * the file whatever directory the mount was made from.
 */
static char *display_name(const char *image)
{
	char abs[PATH_MAX];

	if (!qs_source_spec_is_remote(image) && image[0] != '/' && realpath(image, abs))
		return qs_source_display_name(abs);
	return qs_source_display_name(image);
}

/* The plain mount's session ends: with -d or QUASH_FILL_STATS, a line on its block cache. */
static void cache_report(struct qm_fs *fs)
{
	struct qs_cache_stats cs;

	if (!fs->view.img || !(fs->opt->debug || getenv("QUASH_FILL_STATS")))
		return;
	qs_image_cache_stats(fs->view.img, &cs);
	fprintf(stderr, "quash: block cache: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
		" blocks decompressed ahead of their reads\n", cs.hits, cs.misses, cs.ahead);
}

/*
 * The holder for a plain mount or a catalog unless -o noholder.  Requests
 * in FUSE io_uring entries die with their server (holder.h), so -o uring
 * is served in one process.
 */
static bool held(const struct qm_options *opt)
{
	return opt->holder && !opt->uring;
}

static int serve(const struct qm_options *opt, int argc, char **argv, int ready_fd, int holder_fd, int state_fd)
{
	struct qm_fs *fs = calloc(1, sizeof(*fs));
	struct qm_serve how = opt->catalog ? qc_serve : (struct qm_serve){ .ops = &qm_ops, .stopping = cache_report };
	int err;

	if (!fs)
		return -ENOMEM;
	fs->opt = opt;
	fs->holder_fd = holder_fd;
	fs->state_fd = state_fd;
	/* odd, and another from each server: ops.c */
	fs->fh_tag = holder_fd >= 0 ? ((uint64_t)getpid() << 32 | (uint64_t)time(NULL) << 1 | 1) : 0;
	/* Messages and the mount table (fsname) show the image without its secrets. */
	fs->name = display_name(opt->image);
	if (!fs->name) {
		free(fs);
		return -ENOMEM;
	}
	pthread_mutex_init(&fs->ready_lock, NULL);
	pthread_cond_init(&fs->ready_cond, NULL);
	err = open_log(opt, fs);
	if (!err)
		qm_log_source_events(fs);
	if (!err && holder_fd < 0)
		err = check_fuse_access(opt);
	if (!err && holder_fd < 0)
		err = check_mountpoint(opt, fs);
	if (!err && holder_fd < 0 && held(opt)) {
		int status = qm_holder_run(fs, argc, argv, ready_fd, ready_fd >= 0 ? detach_stdio : NULL);

		if (fs->log_fd >= 0)
			close(fs->log_fd);
		free(fs->name);
		free(fs);
		return status;
	}
	if (!err)
		err = opt->catalog ? qc_create(fs, &fs->catalog) : open_image(opt, fs);
	if (!err && !(fs->nodes = fs->view.nodes = qm_nodes_create()))
		err = -ENOMEM;
	/* a held mount's later servers start without a terminal: the holder let it go */
	how.ready = ready_fd >= 0 || (holder_fd >= 0 && !opt->foreground) ? detach_stdio : NULL;
	if (!err)
		err = qm_session_run(fs, &how, ready_fd);
	if (err)
		notify_failure(opt);
	qm_nodes_destroy(fs->nodes);
	free((void *)atomic_load(&fs->parents));
	qc_destroy(fs->catalog);
	if (fs->view.img)
		qs_image_close(fs->view.img);
	pthread_mutex_destroy(&fs->ready_lock);
	pthread_cond_destroy(&fs->ready_cond);
	if (fs->log_fd >= 0)
		close(fs->log_fd);
	free(fs->name);
	free(fs);
	return err ? 1 : 0;
}

/* Is there a syslog to hear a daemon (a socket at /dev/log, as glibc's syslog() needs)? */
static bool syslog_here(void)
{
	struct stat st;

	return stat(QM_SYSLOG_SOCKET, &st) == 0 && S_ISSOCK(st.st_mode);
}

/*
 * Fork.  The parent waits for the child's byte and returns the exit status
 * for the command; the child gets the pipe's write end in *ready_fd and -1
 * is returned to it.
 */
static int daemonize(int *ready_fd)
{
	int p[2], status;
	ssize_t r;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) != 0 || (pid = fork()) < 0) {
		perror("quash: cannot daemonize");
		return 1;
	}
	if (pid == 0) {
		close(p[0]);
		setsid();
		*ready_fd = p[1];
		return -1;
	}
	close(p[1]);
	do
		r = read(p[0], &c, 1);
	while (r < 0 && errno == EINTR);
	close(p[0]);
	if (r == 1)
		return 0;
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status))
		return WEXITSTATUS(status);
	return 1;
}

int mount_main(int argc, char **argv, bool squashfuse_compat)
{
	struct qm_options opt;
	int ready_fd = -1;

	if (!squashfuse_compat && argc == 3 && strcmp(argv[1], "--upgrade") == 0)
		return qm_holder_upgrade(argv[2]);
	switch (qm_parse_args(argc, argv, squashfuse_compat, &opt)) {
	case QM_PARSE_HELP:
		qm_usage(&opt);
		return 0;
	case QM_PARSE_ERROR:
		notify_failure(&opt);
		return 2;
	case QM_PARSE_OK:
		break;
	}
	/* Only root may write a mount's readahead (/sys/class/bdi): said once, to the person who mounts. */
	if (opt.readahead_given && geteuid() != 0)
		fprintf(stderr, "%s: -o readahead=%d needs root; the kernel's default (128 KiB) stays\n",
			opt.msgname, opt.readahead_kb);
	if (!opt.foreground) {
		int status;

		/* Said once, to the person who mounts: later the daemon has no terminal to say it on. */
		if (!opt.log_file && !syslog_here() && isatty(STDERR_FILENO))
			fprintf(stderr, "%s: note: no syslog on this host (%s): the daemon's messages are lost; "
				"-o log=FILE keeps them\n", opt.msgname, QM_SYSLOG_SOCKET);
		status = daemonize(&ready_fd);

		if (status >= 0)
			return status;
	}
	return serve(&opt, argc, argv, ready_fd, -1, -1);
}

int mount_server_main(void)
{
	struct qm_options opt;
	bool compat;
	char **argv;
	int argc, status, state_fd = -1, sock = qm_server_args(&argc, &argv, &compat, &state_fd);

	if (sock < 0)
		return 2;
	prctl(PR_SET_NAME, compat ? "squashfuse_ll" : "quash");    /* not "exe", from /proc/self/exe */
	status = qm_parse_args(argc, argv, compat, &opt) == QM_PARSE_OK ? serve(&opt, argc, argv, -1, sock, state_fd) : 2;
	free(argv);
	return status;
}

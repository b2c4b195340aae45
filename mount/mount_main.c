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
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "mount.h"
#include "mount_int.h"
#include "squashfs_fs.h"

/* squashfuse_ll's notify_pipe= on failure: 'f', written before exiting. */
static void notify_failure(const struct qm_options *opt)
{
	int fd;

	if (!opt->notify_pipe)
		return;
	fd = open(opt->notify_pipe, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "f", 1) != 1)
			fprintf(stderr, "%s: notify_pipe %s: %s\n", opt->progname, opt->notify_pipe, strerror(errno));
		close(fd);
	}
}

/* An existing directory, nothing mounted on it yet; its absolute path into fs->mountpoint. */
static int check_mountpoint(const struct qm_options *opt, struct qm_fs *fs)
{
	char parent[PATH_MAX + 4];
	struct stat st, pst;

	if (!realpath(opt->mountpoint, fs->mountpoint) || stat(fs->mountpoint, &st) != 0) {
		int err = errno;

		fprintf(stderr, "%s: %s: %s\n", opt->progname, opt->mountpoint, strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: %s: not a directory\n", opt->progname, opt->mountpoint);
		return -ENOTDIR;
	}
	snprintf(parent, sizeof(parent), "%s/..", fs->mountpoint);
	if (strcmp(fs->mountpoint, "/") == 0 || (stat(parent, &pst) == 0 && pst.st_dev != st.st_dev)) {
		fprintf(stderr, "%s: %s: busy: something is mounted there already\n", opt->progname,
			opt->mountpoint);
		return -EBUSY;
	}
	return 0;
}

static int open_image(const struct qm_options *opt, struct qm_fs *fs)
{
	struct qs_image_options io = {
		.offset = opt->offset, .offset_given = opt->offset_given, .cache_bytes = opt->cache_bytes,
	};
	const struct qs_info *info;
	struct qs_source *src;
	struct qs_inode root;
	int err;

	err = qs_source_open(opt->image, &opt->source, &src);
	if (!err && src->notice)
		fprintf(stderr, "%s: %s: %s\n", opt->progname, fs->name, src->notice);
	if (!err)
		err = qs_image_open(src, &io, &fs->img);
	if (!err && opt->subdir)
		err = qs_lookup_path(fs->img, opt->subdir, &root);
	else if (!err)
		err = qs_inode_root(fs->img, &root);
	if (!err && root.type != QS_DIR)
		err = qs_set_error(-ENOTDIR, "subdir %s: not a directory", opt->subdir);
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", opt->progname, fs->name, qs_last_error());
		if (fs->img)
			qs_image_close(fs->img);
		fs->img = NULL;
		return err;
	}
	info = qs_image_info(fs->img);
	fs->root_ref = root.ref;
	fs->block_size = info->block_size;
	fs->bytes_used = info->bytes_used;
	fs->inode_count = info->inode_count;
	fs->has_xattrs = info->xattr_id_table_start != SQFS_INVALID_TABLE && info->xattr_id_count > 0;
	fs->remote = qs_source_spec_is_remote(opt->image);
	return 0;
}

/* From here on the daemon talks to syslog; its terminal may be gone. */
static void detach_stdio(struct qm_fs *fs)
{
	int null = open("/dev/null", O_RDWR);

	openlog(fs->opt->progname, LOG_PID, LOG_DAEMON);
	fs->use_syslog = true;
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

static int serve(const struct qm_options *opt, int ready_fd)
{
	struct qm_fs *fs = calloc(1, sizeof(*fs));
	int err;

	if (!fs)
		return -ENOMEM;
	fs->opt = opt;
	/* Messages and the mount table (fsname) show the image without its secrets. */
	fs->name = qs_source_display_name(opt->image);
	if (!fs->name) {
		free(fs);
		return -ENOMEM;
	}
	pthread_mutex_init(&fs->ready_lock, NULL);
	pthread_cond_init(&fs->ready_cond, NULL);
	err = check_mountpoint(opt, fs);
	if (!err)
		err = open_image(opt, fs);
	if (!err && !(fs->nodes = qm_nodes_create()))
		err = -ENOMEM;
	if (!err)
		err = qm_session_run(fs, ready_fd, ready_fd >= 0 ? detach_stdio : NULL);
	if (err)
		notify_failure(opt);
	qm_nodes_destroy(fs->nodes);
	if (fs->img)
		qs_image_close(fs->img);
	pthread_mutex_destroy(&fs->ready_lock);
	pthread_cond_destroy(&fs->ready_cond);
	free(fs->name);
	free(fs);
	return err;
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
	if (!opt.foreground) {
		int status = daemonize(&ready_fd);

		if (status >= 0)
			return status;
	}
	return serve(&opt, ready_fd) ? 1 : 0;
}

/* quash umount [-z] MOUNTPOINT: fusermount3 does it, for root and users alike. */
int umount_main(int argc, char **argv)
{
	bool lazy = argc == 3 && strcmp(argv[1], "-z") == 0;
	const char *mp = argv[argc - 1];

	if (argc != 2 && !lazy) {
		fprintf(stderr, "usage: quash umount [-z] MOUNTPOINT\n");
		return 2;
	}
	if (lazy)
		execlp("fusermount3", "fusermount3", "-u", "-z", "--", mp, (char *)NULL);
	else
		execlp("fusermount3", "fusermount3", "-u", "--", mp, (char *)NULL);
	fprintf(stderr, "quash: cannot run fusermount3: %s\n", strerror(errno));
	return 1;
}

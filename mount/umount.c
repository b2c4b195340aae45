/*
 * umount.c - `quash umount [-z] MOUNTPOINT...`: unmount quash (or any FUSE)
 * mounts, and say in one line why not when it cannot.
 *
 * Root unmounts with umount2() and so knows the errno; everyone else goes
 * through fusermount3, the setuid helper that checks the mount is theirs,
 * whose stderr is read back and turned into the same one-line messages.
 * Before either, /proc/self/mountinfo says whether anything is mounted
 * there at all: "not mounted" is the commonest mistake, and fusermount3's
 * "Invalid argument" does not say it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount.h"
#include "mount_int.h"
#include "quash.h"

#define UMOUNT_EXIT_OK    0
#define UMOUNT_EXIT_ERROR 1
#define UMOUNT_EXIT_USAGE 2

/* Longest fusermount3 message kept (it prints one line). */
#define UMOUNT_HELPER_MSG_MAX 512

static void umount_usage(FILE *f)
{
	fprintf(f,
		"Usage: quash umount [-z] MOUNTPOINT...\n"
		"Unmount quash mounts (any FUSE mount of yours; root: any FUSE mount).\n"
		"\n"
		"Options:\n"
		"  -z, --lazy      detach now, finish when the last file is closed\n"
		"  -h, --help      show this help and exit\n"
		"  -V, --version   show the version and exit\n"
		"\n"
		"Ordinary users unmount through fusermount3 (as 'fusermount3 -u' would);\n"
		"root unmounts directly.  A busy mount stays mounted: see who holds it with\n"
		"'fuser -m MOUNTPOINT', or detach it with -z.\n"
		"\n"
		"Exit status:\n"
		"  0  every MOUNTPOINT was unmounted\n"
		"  1  one was not mounted, busy, not a FUSE mount, or not yours\n"
		"  2  the command line is wrong\n");
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_mountinfo(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/*
 * The absolute path of MOUNTPOINT as mountinfo spells it.  realpath() fails
 * on the mount point of a daemon that died (ENOTCONN), which is exactly one
 * that needs unmounting: then the parent is resolved and the name appended.
 */
static int absolute_mountpoint(const char *path, char out[PATH_MAX])
{
	char copy[PATH_MAX], parent[PATH_MAX], *slash, *name;
	size_t len;

	if (realpath(path, out))
		return 0;
	/* A dead daemon's mount point (ENOTCONN, EIO), or another user's FUSE mount (EACCES). */
	if (errno != ENOTCONN && errno != EIO && errno != EACCES)
		return -errno;
	len = strlen(path);
	if (len >= sizeof(copy))
		return -ENAMETOOLONG;
	memcpy(copy, path, len + 1);
	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = '\0';
	slash = strrchr(copy, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
	} else {
		name = copy;
	}
	if (!realpath(slash ? (copy[0] ? copy : "/") : ".", parent))
		return -errno;
	if ((size_t)snprintf(out, PATH_MAX, "%s/%s", strcmp(parent, "/") ? parent : "", name) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The filesystem type mounted at 'abs' ("fuse.quash", "squashfs", ...) and
 * its device, the topmost when mounts are stacked; 0, or -ENOENT if nothing
 * is mounted there.  Nothing is asked of the filesystem itself.
 */
static int mount_entry(const char *abs, char *type, size_t type_len, dev_t *dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int found = -ENOENT;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *fields[5], *sep, *save = NULL, *tok = strtok_r(line, " ", &save);
		int n = 0;

		for (; tok && n < 5; tok = strtok_r(NULL, " ", &save))
			fields[n++] = tok;
		if (n < 5 || !tok)
			continue;
		unescape_mountinfo(fields[4]);
		if (strcmp(fields[4], abs) != 0)
			continue;
		/* After the optional fields, " - TYPE SOURCE OPTIONS". */
		for (sep = tok; sep && strcmp(sep, "-") != 0; sep = strtok_r(NULL, " ", &save))
			;
		sep = sep ? strtok_r(NULL, " ", &save) : NULL;
		snprintf(type, type_len, "%s", sep ? sep : "?");
		if (dev) {
			unsigned maj = 0, min = 0;

			sscanf(fields[2], "%u:%u", &maj, &min);
			*dev = makedev(maj, min);
		}
		found = 0;
	}
	free(line);
	fclose(f);
	return found;
}

static int mounted_type(const char *abs, char *type, size_t type_len)
{
	return mount_entry(abs, type, type_len, NULL);
}

int qm_mounted_dev(const char *abs, dev_t *dev)
{
	char type[64];

	return mount_entry(abs, type, sizeof(type), dev);
}

/* Detach the mount; the kernel ends the connection once nobody uses it. */
int qm_lazy_unmount(const char *mountpoint)
{
	int status;
	pid_t pid;

	if (geteuid() == 0 && umount2(mountpoint, MNT_DETACH) == 0)
		return 0;
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);     /* the daemon's threads block its signals: not fusermount3's */
		sigprocmask(SIG_SETMASK, &none, NULL);
		execlp("fusermount3", "fusermount3", "-u", "-q", "-z", "--", mountpoint, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* Run fusermount3 -u [-z] -- MP; its stderr into msg.  Returns its exit status, or -errno. */
static int run_fusermount(const char *mp, bool lazy, char *msg, size_t msg_len)
{
	int pipefd[2], status;
	ssize_t n;
	size_t got = 0;
	pid_t pid;

	msg[0] = '\0';
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(pipefd[0]);
		close(pipefd[1]);
		return -err;
	}
	if (pid == 0) {
		dup2(pipefd[1], STDERR_FILENO);
		if (lazy)
			execlp("fusermount3", "fusermount3", "-u", "-z", "--", mp, (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "--", mp, (char *)NULL);
		dprintf(STDERR_FILENO, "cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], msg + got, msg_len - 1 - got)) > 0 && got + (size_t)n < msg_len - 1)
		got += (size_t)n;
	if (n > 0)
		got += (size_t)n;
	msg[got] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Is the FUSE mount at 'abs' one whose daemon is gone?  The kernel answers
 * stat(2) from its cache even then: only a forced GETATTR asks the
 * connection, and a dead one says ENOTCONN.
 */
static bool daemon_gone(const char *abs)
{
	struct statx stx;

	return statx(AT_FDCWD, abs, AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &stx) < 0 && errno == ENOTCONN;
}

int qm_detach_dead(const char *path)
{
	char abs[PATH_MAX], type[64], msg[UMOUNT_HELPER_MSG_MAX];
	int err;

	err = absolute_mountpoint(path, abs);
	if (err < 0)
		return err;
	if (mounted_type(abs, type, sizeof(type)) < 0 || (strcmp(type, "fuse") != 0 && strncmp(type, "fuse.", 5) != 0))
		return 0;
	if (!daemon_gone(abs))
		return 0;
	if (geteuid() == 0)
		err = umount2(abs, MNT_DETACH | UMOUNT_NOFOLLOW) == 0 ? 0 : -errno;
	else
		err = run_fusermount(abs, true, msg, sizeof(msg)) == 0 ? 0 : -EPERM;
	return err < 0 ? err : 1;
}

static int say(const char *mp, const char *what)
{
	fprintf(stderr, "quash: umount: %s: %s\n", mp, what);
	return UMOUNT_EXIT_ERROR;
}

static int busy(const char *mp)
{
	fprintf(stderr, "quash: umount: %s: busy (try -z, or see fuser -m %s)\n", mp, mp);
	return UMOUNT_EXIT_ERROR;
}

/* A mount whose daemon had died is unmounted all the same, and said so. */
static int said_dead(const char *mp)
{
	fprintf(stderr, "quash: umount: %s: its daemon was gone (%s); unmounted\n", mp, strerror(ENOTCONN));
	return UMOUNT_EXIT_OK;
}

static int umount_one(const char *mp, bool lazy)
{
	char abs[PATH_MAX], type[64], msg[UMOUNT_HELPER_MSG_MAX];
	bool dead;
	int err, rc;

	err = absolute_mountpoint(mp, abs);
	if (err < 0)
		return say(mp, strerror(-err));
	err = mounted_type(abs, type, sizeof(type));
	if (err == -ENOENT)
		return say(mp, "not mounted");
	if (err < 0)
		return say(mp, strerror(-err));
	if (strcmp(type, "fuse") != 0 && strncmp(type, "fuse.", 5) != 0) {
		fprintf(stderr, "quash: umount: %s: %s %s mount, not a quash (FUSE) one; use umount(8)\n", mp,
			type[0] && strchr("aeiouAEIOU", type[0]) ? "an" : "a", type);
		return UMOUNT_EXIT_ERROR;
	}
	dead = daemon_gone(abs);
	if (geteuid() == 0) {
		/* abs was resolved a moment ago: a symlink put there since is not followed. */
		if (umount2(abs, (lazy ? MNT_DETACH : 0) | UMOUNT_NOFOLLOW) == 0)
			return dead ? said_dead(mp) : UMOUNT_EXIT_OK;
		if (errno == EBUSY)
			return busy(mp);
		return say(mp, strerror(errno));
	}
	rc = run_fusermount(abs, lazy, msg, sizeof(msg));
	if (rc == 0)
		return dead ? said_dead(mp) : UMOUNT_EXIT_OK;
	if (rc < 0)
		return say(mp, strerror(-rc));
	if (strstr(msg, "busy"))
		return busy(mp);
	if (strstr(msg, "not found in") || strstr(msg, "Operation not permitted") || strstr(msg, "Permission denied"))
		return say(mp, "not mounted by you (only its owner or root can unmount it)");
	/* fusermount3 says "fusermount3: failed to unmount X: reason": keep the reason. */
	{
		const char *reason = strrchr(msg, ':');

		return say(mp, reason && reason[1] ? reason + 2 : msg[0] ? msg : "fusermount3 failed");
	}
}

int umount_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lazy", no_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	bool lazy = false;
	int opt, status = UMOUNT_EXIT_OK;

	argv[0] = "quash: umount";
	while ((opt = getopt_long(argc, argv, "zhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'z':
			lazy = true;
			break;
		case 'h':
			umount_usage(stdout);
			return UMOUNT_EXIT_OK;
		case 'V':
			printf("quash %s\n", QUASH_VERSION);
			return UMOUNT_EXIT_OK;
		default:
			fprintf(stderr, "Try 'quash umount --help' for more information.\n");
			return UMOUNT_EXIT_USAGE;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "quash: umount: missing MOUNTPOINT\nTry 'quash umount --help' for more information.\n");
		return UMOUNT_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		if (umount_one(argv[i], lazy) != UMOUNT_EXIT_OK)
			status = UMOUNT_EXIT_ERROR;
	}
	return status;
}

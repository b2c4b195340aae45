/*
 * holder.c - the process that holds a mount while servers come and go
 * (holder.h says why).  One thread, one poll() loop over a signalfd, the
 * sockets of its servers and the socket `quash mount --upgrade` talks to.
 *
 * A server has one of three roles: active (answers requests), incoming
 * (an upgrade's new server, not yet serving) or draining (an upgrade's old
 * one, answering what it holds).  The holder never waits on anything but
 * poll(), never reads /dev/fuse, and reaps only the servers it started.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "handoff.h"
#include "holder.h"
#include "log.h"
#include "mount_int.h"

#define QM_FUSE_NOTIFY_RESEND 7     /* include/uapi/linux/fuse.h, 7.40 (Linux 6.9) */
#define QM_HOLDER_LISTEN_TRIES 50   /* binding the --upgrade socket ... */
#define QM_HOLDER_LISTEN_RETRY_MS 200       /* ... this often, while its name is taken */
#define QM_HOLDER_SERVERS 8         /* at once: active, incoming, draining, and dying ones not yet reaped */
#define QM_HOLDER_WATCH_MS 20       /* how often a server is looked at for a death not yet reported */

/* DYING: its death is handled (a replacement started) and it is not reaped yet. */
enum role { NONE, ACTIVE, INCOMING, DRAINING, DYING };

struct server {
	enum role role;
	pid_t pid;
	int sock;
	bool hup;                   /* its end is closed: the death follows as SIGCHLD */
	bool ending;                /* it said its session is over: its exit is no death */
	bool ready;
	bool upgrade;               /* a catalog's upgrade started it: its readiness answers the caller */
	struct timespec started;    /* a restart's: when its predecessor's death was seen */
	struct timespec ready_at;
};

struct holder {
	struct qm_fs *fs;
	int argc;
	char **argv;
	char exe[PATH_MAX];         /* the binary as installed, for upgrades */
	char cwd[PATH_MAX];         /* where the command ran: its relative paths are from there */
	int fuse_fd;                /* -1 until mounted */
	dev_t dev;
	uint8_t init[QM_HOLDER_INIT_MAX];
	uint32_t init_len;
	int state_fd;               /* a catalog's state file, as the last server to send one left it; -1: none */
	bool state_lost;            /* a server said its state file is incomplete */
	bool upgrade_pending;       /* a catalog's upgrade: the new server starts once the old one has ended */
	struct server srv[QM_HOLDER_SERVERS];
	int sigfd, listen_fd, client_fd;
	bool client_asked;          /* client_fd's request is read: it waits for the answer */
	int ready_fd;
	void (*detach)(struct qm_fs *fs);
	time_t deaths[QM_HOLDER_CRASH_MAX + 1];
	unsigned ndeaths;
	bool served;                /* a server has served: the mount is up */
	unsigned listen_tries;      /* binding the --upgrade socket again, every QM_HOLDER_LISTEN_RETRY_MS */
	bool unmounting, resend_refused;
	int status;                 /* the exit status once done; -1 while running */
};

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The child's side of a start: a new session, default signals, the socket, exec. */
static void exec_server(struct holder *h, int sock, const char *exe)
{
	char env[32];
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();               /* the terminal's ^C is the holder's to act on, not the server's */
	if (h->cwd[0] && chdir(h->cwd) != 0)
		dprintf(STDERR_FILENO, "%s: %s: %s\n", h->fs->opt->msgname, h->cwd, strerror(errno));
	if (fcntl(sock, F_SETFD, 0) < 0)
		_exit(127);
	snprintf(env, sizeof(env), "%d", sock);
	setenv(QM_HOLDER_ENV, env, 1);
	execl(exe, h->fs->opt->progname, "mount-server", h->fs->mountpoint, (char *)NULL);
	dprintf(STDERR_FILENO, "%s: cannot start a server from %s: %s\n", h->fs->opt->msgname, exe, strerror(errno));
	_exit(127);
}

/* The command line, NUL-separated, as the server parses it. */
static int send_args(struct holder *h, int sock)
{
	static char buf[QM_HOLDER_ARGS_MAX];
	size_t n = 0;

	for (int i = 0; i < h->argc; i++) {
		size_t len = strlen(h->argv[i]) + 1;

		if (len > sizeof(buf) - n)
			return -E2BIG;
		memcpy(buf + n, h->argv[i], len);
		n += len;
	}
	return qm_hmsg_send(sock, QM_H_ARGS, h->fs->opt->squashfuse_compat, buf, n, h->state_fd);
}

/* Start a server in slot 'i' from 'exe'; 0 or -errno. */
static int start_server(struct holder *h, unsigned i, enum role role, const char *exe)
{
	struct server *s = &h->srv[i];
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		exec_server(h, sv[1], exe);
	}
	close(sv[1]);
	if (pid < 0 || send_args(h, sv[0]) != 0) {
		int err = pid < 0 ? -errno : -EIO;

		close(sv[0]);
		return err;
	}
	*s = (struct server){ .role = role, .pid = pid, .sock = sv[0] };
	clock_gettime(CLOCK_MONOTONIC, &s->started);
	return 0;
}

static struct server *find_role(struct holder *h, enum role role)
{
	for (unsigned i = 0; i < QM_HOLDER_SERVERS; i++)
		if (h->srv[i].role == role)
			return &h->srv[i];
	return NULL;
}

static int free_slot(struct holder *h)
{
	for (unsigned i = 0; i < QM_HOLDER_SERVERS; i++)
		if (h->srv[i].role == NONE)
			return (int)i;
	return -1;
}

/* Detach the mount and let go of the connection: every reader gets ENOTCONN, none hangs. */
static void give_up(struct holder *h, const char *why)
{
	qm_info(h->fs, "%s: %s; detaching the mount", h->fs->mountpoint, why);
	for (unsigned i = 0; i < QM_HOLDER_SERVERS; i++)
		if (h->srv[i].role != NONE)
			kill(h->srv[i].pid, SIGKILL);
	if (h->fs->se) {
		/* closes the descriptor, then detaches: the connection ends with the last server's copy */
		fuse_session_unmount(h->fs->se);
		h->fuse_fd = -1;
	}
	h->status = 1;
}

/* Put the requests a dead server had read back in the kernel's queue. */
static void resend(struct holder *h)
{
	const struct { uint32_t len; int32_t error; uint64_t unique; } note = { 16, QM_FUSE_NOTIFY_RESEND, 0 };

	if (h->fuse_fd < 0 || write(h->fuse_fd, &note, sizeof(note)) == (ssize_t)sizeof(note) || h->resend_refused)
		return;
	h->resend_refused = true;
	qm_info(h->fs, "%s: the kernel refuses FUSE_NOTIFY_RESEND (%s; Linux 6.9+ has it): requests a dead server "
		"held stay unanswered", h->fs->mountpoint, strerror(errno));
}

/*
 * More than QM_HOLDER_CRASH_MAX young deaths in the window?  A server that
 * served for QM_HOLDER_CRASH_YOUNG seconds was not crashing at start (an
 * image that cannot open, a resent request that kills every server):
 * something killed it, and its death does not count.
 */
static bool crash_loop(struct holder *h, const struct server *dead, time_t now)
{
	unsigned kept = 0;

	if (dead->ready && ms_since(&dead->ready_at) >= QM_HOLDER_CRASH_YOUNG * 1e3)
		return false;

	for (unsigned i = 0; i < h->ndeaths; i++)
		if (now - h->deaths[i] < QM_HOLDER_CRASH_WINDOW)
			h->deaths[kept++] = h->deaths[i];
	h->deaths[kept++] = now;
	h->ndeaths = kept;
	if (kept > QM_HOLDER_CRASH_MAX) {
		h->ndeaths = QM_HOLDER_CRASH_MAX;
		memmove(h->deaths, h->deaths + 1, QM_HOLDER_CRASH_MAX * sizeof(h->deaths[0]));
		return true;
	}
	return false;
}

static void describe(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

static void reply_client(struct holder *h, bool ok, const char *line)
{
	if (h->client_fd < 0)
		return;
	qm_hmsg_send(h->client_fd, QM_H_UPGRADE, !ok, line, strlen(line) + 1, -1);
	close(h->client_fd);
	h->client_fd = -1;
	h->client_asked = false;
}

/* The active server is gone ('what' says how), not by the mount's end: start another, or give up. */
static void replace_active(struct holder *h, struct server *dead, const char *what)
{
	struct timespec seen;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &seen);
	if (crash_loop(h, dead, time(NULL))) {
		char why[160];

		snprintf(why, sizeof(why), "servers keep dying (the last %s; more than %d in %d s)", what,
			 QM_HOLDER_CRASH_MAX, QM_HOLDER_CRASH_WINDOW);
		give_up(h, why);
		return;
	}
	if (h->fs->opt->catalog && (h->state_fd < 0 || h->state_lost)) {
		char why[160];

		snprintf(why, sizeof(why), "server %d %s and the catalog's state is lost", (int)dead->pid, what);
		give_up(h, why);
		return;
	}
	qm_info(h->fs, "%s: server %d %s; starting another", h->fs->mountpoint, (int)dead->pid, what);
	resend(h);
	i = free_slot(h);
	if (i < 0 || start_server(h, (unsigned)i, ACTIVE, "/proc/self/exe") != 0) {
		give_up(h, "cannot start a server");
		return;
	}
	h->srv[i].started = seen;
}

static void absorb(struct holder *h, struct server *s);
static void drained(struct holder *h, bool clean);

static void reaped(struct holder *h, struct server *s, int status)
{
	enum role role = s->role;
	char what[96];

	absorb(h, s);               /* a state file it sent before it died is the one to keep */
	close(s->sock);
	s->role = NONE;
	if (role == DYING) {
		/* it was replaced while dying: a request its last threads took after the first resend is resent now */
		resend(h);
		return;
	}
	if (role == DRAINING) {
		drained(h, WIFEXITED(status));
		return;
	}
	if (role == INCOMING) {
		describe(status, what, sizeof(what));
		qm_info(h->fs, "%s: upgrade failed: the new server %s; the old one serves on", h->fs->mountpoint, what);
		reply_client(h, false, "the new server did not start (see the mount's log)");
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && s->ready) {
		h->status = 0;      /* the kernel ended the connection: the mount is over */
		return;
	}
	if (!h->served) {
		/* the first server failed: it said why on the terminal */
		if (h->fuse_fd >= 0)
			give_up(h, "the server did not start");
		h->status = WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1;
		return;
	}
	describe(status, what, sizeof(what));
	if (s->upgrade && !s->ready) {
		qm_info(h->fs, "%s: upgrade failed: the new server %s; a server of the running build takes over",
			h->fs->mountpoint, what);
		reply_client(h, false, "the new server did not start (see the mount's log)");
	}
	replace_active(h, s, what);
}

static void reap(struct holder *h)
{
	for (unsigned i = 0; i < QM_HOLDER_SERVERS; i++) {
		int status;

		if (h->srv[i].role != NONE && waitpid(h->srv[i].pid, &status, WNOHANG) == h->srv[i].pid)
			reaped(h, &h->srv[i], status);
	}
}

/*
 * Is the process dying (a zombie leader, or SIGKILL pending) though not
 * yet reaped?  Its last thread may wait in the kernel for a request that
 * only a server can answer: a page-cache store waits on a page a reader
 * holds locked while its READ sits unanswered with the dead workers.
 */
static bool dying(pid_t pid)
{
	char path[64], line[256];
	bool gone = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!gone && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "State:", 6) == 0)
			gone = strchr(line, 'Z') != NULL;
		else if (strncmp(line, "SigPnd:", 7) == 0 || strncmp(line, "ShdPnd:", 7) == 0)
			gone = strtoull(line + 7, NULL, 16) & (1ull << (SIGKILL - 1));
	}
	fclose(f);
	return gone;
}

/* A death the kernel has not reported (SIGCHLD waits for the last thread): act on it now. */
static void watch(struct holder *h)
{
	for (unsigned i = 0; i < QM_HOLDER_SERVERS && h->status < 0; i++) {
		struct server *s = &h->srv[i];

		if ((s->role != ACTIVE && s->role != DRAINING) || !s->ready || s->ending || !dying(s->pid))
			continue;
		absorb(h, s);
		if (s->ending)
			continue;       /* its goodbye was waiting: the exit is reaped as one */
		if (s->role == DRAINING) {
			s->role = DYING;
			drained(h, false);
		} else {
			s->role = DYING;
			replace_active(h, s, "died");
		}
	}
}

/* Mount (once), then hand the server the descriptor and what it needs to take over. */
static void on_mount(struct holder *h, struct server *s)
{
	static struct qm_hmsg_fd m;

	if (h->fuse_fd < 0) {
		if (qm_session_mount(h->fs) != 0 || qm_mounted_dev(h->fs->mountpoint, &h->dev) != 0) {
			qm_hmsg_send(s->sock, QM_H_FAIL, 0, NULL, 0, -1);
			h->status = 1;
			return;
		}
		h->fuse_fd = fuse_session_fd(h->fs->se);
	}
	memset(&m, 0, sizeof(m));
	m.dev_major = major(h->dev);
	m.dev_minor = minor(h->dev);
	m.init_len = h->init_len;
	memcpy(m.init, h->init, h->init_len);
	snprintf(m.mountpoint, sizeof(m.mountpoint), "%s", h->fs->mountpoint);
	if (qm_hmsg_send(s->sock, QM_H_FD, 0, &m, sizeof(m), h->fuse_fd) != 0)
		kill(s->pid, SIGKILL);      /* reaped as a death */
}

static void listen_for_upgrades(struct holder *h);

static void on_ready(struct holder *h, struct server *s)
{
	struct server *old;
	char line[128];

	s->ready = true;
	clock_gettime(CLOCK_MONOTONIC, &s->ready_at);
	if (!h->served) {
		h->served = true;
		if (h->ready_fd >= 0 && write(h->ready_fd, "", 1) != 1)
			qm_log(h->fs, "cannot report readiness: %s", strerror(errno));
		if (h->ready_fd >= 0)
			close(h->ready_fd);
		h->ready_fd = -1;
		listen_for_upgrades(h);
		if (h->detach)
			h->detach(h->fs);
		return;
	}
	if (s->role == INCOMING && (old = find_role(h, ACTIVE))) {
		qm_hmsg_send(old->sock, QM_H_DRAIN, 0, NULL, 0, -1);
		old->role = DRAINING;
		s->role = ACTIVE;
		qm_info(h->fs, "%s: upgraded: server %d (%s) serves, server %d finishes what it holds",
			h->fs->mountpoint, (int)s->pid, h->exe, (int)old->pid);
		snprintf(line, sizeof(line), "upgraded: server %d serves", (int)s->pid);
		reply_client(h, true, line);
		return;
	}
	if (s->upgrade) {
		qm_info(h->fs, "%s: upgraded: server %d (%s) serves, %.1f ms after the old one stopped",
			h->fs->mountpoint, (int)s->pid, h->exe, ms_since(&s->started));
		snprintf(line, sizeof(line), "upgraded: server %d serves", (int)s->pid);
		reply_client(h, true, line);
		return;
	}
	qm_info(h->fs, "%s: server %d took over %.1f ms after the last one died", h->fs->mountpoint, (int)s->pid,
		ms_since(&s->started));
}

/* A catalog's state file from now on (fd), or none: the server could not keep it (fd -1). */
static void take_state(struct holder *h, int fd)
{
	if (h->state_fd >= 0)
		close(h->state_fd);
	h->state_fd = fd;
	h->state_lost = fd < 0;
}

/* One message from a server, with the descriptor it carries (*fd, else -1); its length, 0 at its end, -1: none. */
static ssize_t recv_server(struct server *s, void *buf, size_t cap, int *fd)
{
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } c;
	struct iovec iov = { buf, cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	ssize_t n = recvmsg(s->sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*fd = -1;
	for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		s->hup = true;
	return n;
}

/* A server that died: of what it sent and the holder has not read, only a state file and a goodbye count. */
static void absorb(struct holder *h, struct server *s)
{
	uint8_t buf[sizeof(struct qm_hmsg_hdr) + QM_HOLDER_INIT_MAX];
	struct qm_hmsg_hdr hdr;
	ssize_t n;
	int fd;

	while (!s->hup && (n = recv_server(s, buf, sizeof(buf), &fd)) > 0) {
		memcpy(&hdr, buf, sizeof(hdr) < (size_t)n ? sizeof(hdr) : (size_t)n);
		if ((size_t)n >= sizeof(hdr) && hdr.type == QM_H_STATE)
			take_state(h, fd);
		else if (fd >= 0)
			close(fd);
		if ((size_t)n >= sizeof(hdr) && hdr.type == QM_H_BYE)
			s->ending = true;       /* an exit it announced: no death */
	}
}

static void on_server_msg(struct holder *h, struct server *s)
{
	static uint8_t buf[sizeof(struct qm_hmsg_hdr) + QM_HOLDER_INIT_MAX];
	struct qm_hmsg_hdr hdr;
	int fd;
	ssize_t n = recv_server(s, buf, sizeof(buf), &fd);

	if (n < (ssize_t)sizeof(hdr)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.type == QM_H_STATE) {   /* a dying server's too: it was the last word on the state */
		take_state(h, fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	if (s->role == DYING)
		return;
	if (hdr.type == QM_H_BYE) {
		s->ending = true;
	} else if (hdr.type == QM_H_MOUNT) {
		on_mount(h, s);
	} else if (hdr.type == QM_H_INIT && h->init_len == 0 && hdr.len <= QM_HOLDER_INIT_MAX &&
		   (size_t)n == sizeof(hdr) + hdr.len) {
		memcpy(h->init, buf + sizeof(hdr), hdr.len);
		h->init_len = hdr.len;
	} else if (hdr.type == QM_H_READY) {
		on_ready(h, s);
	}
}

/* The abstract socket name of the holder of the mount with device 'dev'. */
static socklen_t holder_addr(dev_t dev, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "quash-holder:%u:%u", major(dev), minor(dev));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/*
 * Abstract sockets are open to every user of the network namespace, so
 * each caller's credentials are checked (on_client); a name already taken
 * leaves this mount without --upgrade, said once (SIGUSR2 still works).
 */
static void listen_for_upgrades(struct holder *h)
{
	struct sockaddr_un a;
	socklen_t len = holder_addr(h->dev, &a);
	int err;

	h->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (h->listen_fd < 0 || (bind(h->listen_fd, (struct sockaddr *)&a, len) == 0 && listen(h->listen_fd, 4) == 0)) {
		h->listen_tries = 0;
		return;
	}
	err = errno;
	close(h->listen_fd);
	h->listen_fd = -1;
	/* a mount that just ended may have had this device number: its holder is on its way out */
	if (err == EADDRINUSE && ++h->listen_tries < QM_HOLDER_LISTEN_TRIES)
		return;
	h->listen_tries = 0;
	qm_info(h->fs, "%s: no --upgrade for this mount (its socket: %s); SIGUSR2 to %d upgrades it",
		h->fs->mountpoint, strerror(err), (int)getpid());
}

/* Start an upgrade: a server from the installed binary, which takes over once it serves. */
/*
 * Start an upgrade: a server from the installed binary, which takes over
 * once it serves.  A catalog's servers never overlap, since both would
 * hand out node ids: the old one finishes what it holds and exits, and
 * the new one starts from the state it left (drained()).
 */
static const char *upgrade(struct holder *h)
{
	struct server *active = find_role(h, ACTIVE);
	int i;

	if (!active || !active->ready)
		return "no server serves yet; try again";
	if (find_role(h, INCOMING) || find_role(h, DRAINING) || h->upgrade_pending)
		return "an upgrade is under way";
	if (access(h->exe, X_OK) != 0)
		return "the binary it was started from is gone";
	if (h->fs->opt->catalog) {
		qm_hmsg_send(active->sock, QM_H_DRAIN, 0, NULL, 0, -1);
		active->role = DRAINING;
		h->upgrade_pending = true;
		return NULL;
	}
	i = free_slot(h);
	if (i < 0 || start_server(h, (unsigned)i, INCOMING, h->exe) != 0)
		return "cannot start a server";
	return NULL;
}

/* A draining server is done ('clean': it exited); a catalog's upgrade starts its new server now. */
static void drained(struct holder *h, bool clean)
{
	int i;

	if (!clean)
		resend(h);          /* it died holding requests: the next server answers them */
	if (!h->upgrade_pending)
		return;
	h->upgrade_pending = false;
	i = free_slot(h);
	if (i >= 0 && start_server(h, (unsigned)i, ACTIVE, h->exe) == 0) {
		h->srv[i].upgrade = true;
		return;
	}
	reply_client(h, false, "cannot start a server");
	if (i < 0 || start_server(h, (unsigned)i, ACTIVE, "/proc/self/exe") != 0)
		give_up(h, "cannot start a server");
}

/* A caller of --upgrade: only root and the mount's owner, one at a time; its request is read when it comes. */
static void on_client(struct holder *h)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != 0 && cred.uid != geteuid()) ||
	    h->client_fd >= 0) {
		const char *why = h->client_fd >= 0 ? "an upgrade is under way" : "refused: not root or the mount's owner";

		qm_hmsg_send(fd, QM_H_UPGRADE, 1, why, strlen(why) + 1, -1);
		close(fd);
		return;
	}
	h->client_fd = fd;
	h->client_asked = false;
}

static void on_client_msg(struct holder *h)
{
	struct qm_hmsg_hdr hdr;
	const char *err;

	if (recv(h->client_fd, &hdr, sizeof(hdr), MSG_DONTWAIT) != (ssize_t)sizeof(hdr) || hdr.type != QM_H_UPGRADE) {
		close(h->client_fd);            /* hung up, or not our protocol */
		h->client_fd = -1;
		return;
	}
	h->client_asked = true;
	err = upgrade(h);
	if (err)
		reply_client(h, false, err);
}

static void on_signal(struct holder *h)
{
	struct signalfd_siginfo si;
	struct server *s;
	const char *err;

	while (read(h->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap(h);
			break;
		case SIGUSR1:       /* the counters are the server's */
			if ((s = find_role(h, ACTIVE)))
				kill(s->pid, SIGUSR1);
			break;
		case SIGUSR2:
			if ((err = upgrade(h)))
				qm_info(h->fs, "%s: upgrade failed: %s", h->fs->mountpoint, err);
			break;
		default:            /* SIGTERM, SIGINT, SIGHUP: the mount ends once its users leave */
			if (!h->unmounting && h->fuse_fd >= 0 && qm_lazy_unmount(h->fs->mountpoint) != 0)
				qm_log(h->fs, "cannot unmount %s", h->fs->mountpoint);
			h->unmounting = true;
			if (!h->served)
				h->status = 1;
			break;
		}
	}
}

static void loop(struct holder *h)
{
	while (h->status < 0) {
		struct pollfd p[3 + QM_HOLDER_SERVERS];
		struct server *who[3 + QM_HOLDER_SERVERS] = { NULL };
		int timeout = h->listen_tries ? QM_HOLDER_LISTEN_RETRY_MS : QM_HOLDER_WATCH_MS;
		unsigned n = 0;

		p[n++] = (struct pollfd){ .fd = h->sigfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = h->listen_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = h->client_asked ? -1 : h->client_fd, .events = POLLIN };
		for (unsigned i = 0; i < QM_HOLDER_SERVERS; i++)
			if (h->srv[i].role != NONE && !h->srv[i].hup) {
				who[n] = &h->srv[i];
				p[n++] = (struct pollfd){ .fd = h->srv[i].sock, .events = POLLIN };
			}
		if (poll(p, n, timeout) == 0 && h->listen_tries)
			listen_for_upgrades(h);
		if (p[0].revents)
			on_signal(h);
		if (h->status < 0 && p[1].revents)
			on_client(h);
		if (h->status < 0 && p[2].revents)
			on_client_msg(h);
		for (unsigned i = 3; i < n && h->status < 0; i++)
			if (p[i].revents & POLLIN && who[i]->role != NONE)
				on_server_msg(h, who[i]);
		watch(h);       /* last: a goodbye read above makes an exit no death */
	}
}

int qm_holder_run(struct qm_fs *fs, int argc, char **argv, int ready_fd, void (*detach)(struct qm_fs *fs))
{
	static struct holder h;
	sigset_t set;
	ssize_t n;

	h = (struct holder){ .fs = fs, .argc = argc, .argv = argv, .fuse_fd = -1, .listen_fd = -1, .client_fd = -1,
			     .state_fd = -1,
			     .ready_fd = ready_fd, .detach = detach, .status = -1 };
	/* a path, not a descriptor: the holder must not keep the command's directory busy */
	if (!getcwd(h.cwd, sizeof(h.cwd)))
		h.cwd[0] = '\0';
	n = readlink("/proc/self/exe", h.exe, sizeof(h.exe) - 1);
	h.exe[n > 0 ? n : 0] = '\0';
	if (n > 10 && strcmp(h.exe + n - 10, " (deleted)") == 0)
		h.exe[n - 10] = '\0';
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	h.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (h.sigfd < 0 || start_server(&h, 0, ACTIVE, "/proc/self/exe") != 0) {
		fprintf(stderr, "%s: cannot start the server: %s\n", fs->opt->msgname, strerror(errno));
		return 1;
	}
	loop(&h);
	for (unsigned i = 0; i < QM_HOLDER_SERVERS; i++)
		if (h.srv[i].role != NONE)
			close(h.srv[i].sock);
	if (h.listen_fd >= 0)
		close(h.listen_fd);
	if (h.state_fd >= 0)
		close(h.state_fd);
	if (fs->se) {
		fuse_session_unmount(fs->se);
		fuse_session_destroy(fs->se);
		fs->se = NULL;
	}
	return h.status;
}

int qm_holder_upgrade(const char *mountpoint)
{
	static char line[256];
	struct timeval wait = { QM_HOLDER_UPGRADE_WAIT, 0 };
	struct qm_hmsg_hdr hdr = { QM_H_UPGRADE, 0, 0 };
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { line, sizeof(line) - 1 } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	char abs[PATH_MAX];
	struct sockaddr_un a;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	dev_t dev;
	ssize_t n = -1;
	int fd;

	if (!realpath(mountpoint, abs) || qm_mounted_dev(abs, &dev) != 0) {
		fprintf(stderr, "quash: mount --upgrade: %s: %s\n", mountpoint, errno ? strerror(errno) : "not mounted");
		return 1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, holder_addr(dev, &a)) != 0) {
		fprintf(stderr, "quash: mount --upgrade: %s: no holder answers for it (%s): "
			"not a quash mount, or mounted with -o noholder or -o uring\n", mountpoint, strerror(errno));
		return 1;
	}
	/* a name anyone could have taken: the holder is root's or the caller's */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    (cred.uid != 0 && cred.uid != getuid() && getuid() != 0)) {
		fprintf(stderr, "quash: mount --upgrade: %s: the socket that answers is uid %u's, not the mount's holder\n",
			mountpoint, (unsigned)cred.uid);
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
	if (send(fd, &hdr, sizeof(hdr), MSG_NOSIGNAL) != (ssize_t)sizeof(hdr) ||
	    (n = recvmsg(fd, &m, 0)) < (ssize_t)sizeof(hdr)) {
		fprintf(stderr, "quash: mount --upgrade: %s: the holder did not answer: %s\n", mountpoint,
			n < 0 ? strerror(errno) : "it hung up");
		return 1;
	}
	line[n - (ssize_t)sizeof(hdr)] = '\0';
	close(fd);
	fprintf(hdr.arg ? stderr : stdout, "quash: mount --upgrade: %s: %s%s\n", mountpoint,
		hdr.arg ? "upgrade failed: " : "", line);
	return hdr.arg ? 1 : 0;
}

/*
 * server.c - a server's side of a held mount (holder.h): its command line
 * and the mount's descriptor come from the holder, the kernel's INIT is
 * replayed from the holder's copy when this is not the first server, and a
 * thread listens to the holder for the rest of the server's life.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "handoff.h"
#include "log.h"
#include "mount_int.h"

/* Between two signals to the workers, while they stop for a drain. */
#define QM_DRAIN_POLL_NS (5 * 1000 * 1000)

static ssize_t recv_msg(int sock, struct qm_hmsg_hdr *hdr, void *data, size_t cap, int *fd)
{
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } c;
	struct iovec iov[2] = { { hdr, sizeof(*hdr) }, { data, cap } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	ssize_t n;

	if (fd)
		*fd = -1;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)sizeof(*hdr) || (size_t)n - sizeof(*hdr) != hdr->len)
		return n < 0 ? -errno : -EPROTO;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && fd)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return (ssize_t)hdr->len;
}

static int send_hdr(int sock, uint32_t type, const void *data, size_t len)
{
	return qm_hmsg_send(sock, type, 0, data, len, -1);
}

int qm_server_send_state(struct qm_fs *fs, int fd)
{
	return qm_hmsg_send(fs->holder_fd, QM_H_STATE, 0, NULL, 0, fd);
}

int qm_server_args(int *argc, char ***argv, bool *squashfuse_compat, int *state_fd)
{
	static char buf[QM_HOLDER_ARGS_MAX + 1];
	const char *env = getenv(QM_HOLDER_ENV);
	struct qm_hmsg_hdr hdr;
	char *end;
	long sock;
	ssize_t n;
	int count = 0;

	if (!env)
		return -1;
	sock = strtol(env, &end, 10);
	unsetenv(QM_HOLDER_ENV);        /* not for the programs this one runs */
	if (*end || sock < 0 || sock > 1 << 20 ||
	    (n = recv_msg((int)sock, &hdr, buf, QM_HOLDER_ARGS_MAX, state_fd)) <= 0 || hdr.type != QM_H_ARGS) {
		fprintf(stderr, "quash: a mount server without its holder; mount with quash mount\n");
		exit(2);
	}
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		count += buf[i] == '\0';
	*argv = calloc((size_t)count + 1, sizeof(char *));
	if (!*argv)
		exit(1);
	*argc = 0;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		(*argv)[(*argc)++] = p;
	*squashfuse_compat = hdr.arg != 0;
	return (int)sock;
}

int qm_server_attach(struct qm_fs *fs, int *fuse_fd)
{
	static struct qm_hmsg_fd m;
	struct qm_hmsg_hdr hdr;
	ssize_t n;

	if (send_hdr(fs->holder_fd, QM_H_MOUNT, NULL, 0) != 0 ||
	    (n = recv_msg(fs->holder_fd, &hdr, &m, sizeof(m), fuse_fd)) < 0 || hdr.type != QM_H_FD ||
	    (size_t)n != sizeof(m) || *fuse_fd < 0 || m.init_len > QM_HOLDER_INIT_MAX) {
		if (*fuse_fd >= 0)
			close(*fuse_fd);
		return -EIO;        /* the holder said why, or died */
	}
	m.mountpoint[sizeof(m.mountpoint) - 1] = '\0';
	snprintf(fs->mountpoint, sizeof(fs->mountpoint), "%s", m.mountpoint);
	fs->held_dev = makedev(m.dev_major, m.dev_minor);
	memcpy(fs->replay_init, m.init, m.init_len);
	fs->replay_init_len = m.init_len;
	return 0;
}

int qm_server_replay_init(struct qm_fs *fs)
{
	struct fuse_buf buf = { .size = fs->replay_init_len, .mem = fs->replay_init };
	uint64_t unique;

	if (!fs->replay_init_len)
		return 0;
	if (fs->replay_init_len < 40)
		return -EPROTO;
	memcpy(&unique, fs->replay_init + 8, sizeof(unique));
	atomic_store(&fs->replay_unique, unique);
	fuse_session_process_buf(fs->se, &buf);
	return fs->ready ? 0 : -EPROTO;
}

static void on_usr2(int sig)
{
	(void)sig;                  /* only to end a worker's read with EINTR */
}

/* Stop reading: each worker ends its read with EINTR, or finishes the request it has. */
static void drain(struct qm_fs *fs)
{
	const struct timespec pause = { 0, QM_DRAIN_POLL_NS };

	atomic_store(&fs->draining, true);
	for (;;) {
		unsigned n;

		pthread_mutex_lock(&fs->workers_lock);
		n = fs->nworkers;
		for (unsigned i = 0; i < n; i++)
			pthread_kill(fs->workers[i], SIGUSR2);
		pthread_mutex_unlock(&fs->workers_lock);
		if ((unsigned)atomic_load(&fs->workers_done) >= n)
			return;
		nanosleep(&pause, NULL);
	}
}

/* The holder is gone: detach the mount (if it is still this one) so that it is not left without one. */
static void orphaned(struct qm_fs *fs)
{
	dev_t dev;

	if (qm_mounted_dev(fs->mountpoint, &dev) != 0 || dev != fs->held_dev)
		return;
	qm_info(fs, "%s: the mount's holder is gone; detaching the mount (its users finish first)", fs->mountpoint);
	if (qm_lazy_unmount(fs->mountpoint) != 0)
		qm_log(fs, "cannot detach %s: %s", fs->mountpoint, strerror(errno));
}

static void *listen_holder(void *arg)
{
	struct qm_fs *fs = arg;
	struct qm_hmsg_hdr hdr;
	char data[64];

	for (;;) {
		ssize_t n = recv_msg(fs->holder_fd, &hdr, data, sizeof(data), NULL);

		if (atomic_load(&fs->holder_closing))
			return NULL;            /* qm_server_stop(): the session is over */
		if (n >= 0 && hdr.type == QM_H_DRAIN) {
			drain(fs);
			return NULL;
		}
		if (n < 0) {                    /* end of file (-EPROTO) or a socket error: the holder is gone */
			orphaned(fs);
			return NULL;
		}
	}
}

int qm_server_ready(struct qm_fs *fs)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	int err;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);  /* no SA_RESTART: a worker's read ends */
	if (fs->init_req_len && send_hdr(fs->holder_fd, QM_H_INIT, fs->init_req, fs->init_req_len) != 0)
		return -EIO;
	if (send_hdr(fs->holder_fd, QM_H_READY, NULL, 0) != 0)
		return -EIO;
	err = pthread_create(&fs->holder_listener, NULL, listen_holder, fs);
	fs->holder_listening = err == 0;
	return -err;
}

void qm_server_stop(struct qm_fs *fs)
{
	if (!fs->holder_listening)
		return;
	send_hdr(fs->holder_fd, QM_H_BYE, NULL, 0);     /* an exit to come, not a death to act on */
	atomic_store(&fs->holder_closing, true);
	shutdown(fs->holder_fd, SHUT_RD);       /* ends the listener's read, not the holder's */
	pthread_join(fs->holder_listener, NULL);
	fs->holder_listening = false;
}

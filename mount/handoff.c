/*
 * handoff.c - sending one message between a mount's holder and its servers
 * (handoff.h), with a descriptor when there is one.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "handoff.h"

int qm_hmsg_send(int sock, uint32_t type, uint32_t arg, const void *data, size_t len, int fd)
{
	struct qm_hmsg_hdr hdr = { type, arg, (uint32_t)len };
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { (void *)data, len } };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } c;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	if (fd >= 0) {
		struct cmsghdr *cm;

		m.msg_control = c.buf;
		m.msg_controllen = sizeof(c.buf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

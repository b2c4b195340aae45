/*
 * handoff.h - what a mount's holder (holder.c) and its servers (server.c)
 * say to each other over their socketpair (SOCK_SEQPACKET: one message a
 * datagram, a header and its data).  holder.h says why there are two.
 */
#ifndef QUASH_MOUNT_HANDOFF_H
#define QUASH_MOUNT_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#define QM_HOLDER_ENV "QUASH_SERVER_FD" /* a server's environment: its socket to the holder */
#define QM_HOLDER_INIT_MAX 256          /* the INIT request kept (header and fuse_init_in) */
#define QM_HOLDER_ARGS_MAX 65536        /* a server's command line, NUL-separated */
#define QM_HOLDER_UPGRADE_WAIT 30       /* s --upgrade waits for the new server */

/* Messages on the socket between the holder and a server (SOCK_SEQPACKET). */
enum qm_hmsg_type {
	QM_H_ARGS = 1,      /* holder → server: the command line (data, NUL-separated; arg = squashfuse_compat),
			       and the catalog's state file (SCM_RIGHTS) once a server has made one */
	QM_H_MOUNT,         /* server → holder: the image is open; mount (if not yet) and send the descriptor */
	QM_H_FD,            /* holder → server: the descriptor (SCM_RIGHTS), the mount point, the INIT kept */
	QM_H_INIT,          /* server → holder: the kernel's INIT request as read */
	QM_H_READY,         /* server → holder: serving */
	QM_H_DRAIN,         /* holder → server: another server serves now; answer what you hold and exit */
	QM_H_FAIL,          /* holder → server: the mount failed; exit */
	QM_H_UPGRADE,       /* client → holder: upgrade; holder → client: the result (data: one line) */
	QM_H_BYE,           /* server → holder: the session is over (the mount ended, or a drain): exiting */
	QM_H_STATE,         /* server → holder: the catalog's state file from now on (SCM_RIGHTS); none: lost */
};

struct qm_hmsg_hdr {               /* each message: this, then 'len' bytes of data */
	uint32_t type;
	uint32_t arg;
	uint32_t len;
};

struct qm_hmsg_fd {                 /* QM_H_FD's data */
	uint32_t dev_major, dev_minor;  /* the mount's, to tell it from whatever is mounted there later */
	uint32_t init_len;              /* 0: no INIT yet (the first server reads it from the kernel) */
	uint8_t init[QM_HOLDER_INIT_MAX];
	char mountpoint[4096];
};

/* Send one message (the header, then len bytes of data) on sock, with descriptor fd if >= 0; 0 or -errno. */
int qm_hmsg_send(int sock, uint32_t type, uint32_t arg, const void *data, size_t len, int fd);

#endif

/*
 * uring.h - FUSE over io_uring (Linux 6.14+, ABI 7.42), beside the
 * /dev/fuse loop of session.c.
 *
 * The kernel keeps one request queue per CPU and hands a request to the
 * queue of the CPU that made it.  A thread pinned to that CPU waits on it,
 * so the request is served where it was made: no wakeup of the other core,
 * which on a VM is an inter-processor interrupt and an exit (a cold ls -lR
 * gains most: docs/benchmarks.md).
 *
 * libfuse 3.14 knows nothing of it.  The session's reads and writes to
 * /dev/fuse go through the hooks below (fuse_session_custom_io): they
 * answer INIT with the io_uring flag when the kernel offers it, start the
 * queues once the answer is in, and send each reply of a request that came
 * from a queue back to that queue.  Everything else (INIT, FORGET,
 * INTERRUPT, the page-cache fill's notifications) stays on /dev/fuse.
 */
#ifndef QUASH_MOUNT_URING_H
#define QUASH_MOUNT_URING_H

#include <stdbool.h>
#include <stdint.h>

struct qm_fs;
struct qm_uring;

/* The hooks, installed on the session whatever the transport; 0 or -errno. */
int qm_transport_install(struct qm_fs *fs);
/* Stop the queue threads (after the /dev/fuse loop has ended) and free. */
void qm_transport_stop(struct qm_fs *fs);

/* One line of the requests served (struct qm_counters), for SIGUSR1. */
void qm_counters_report(struct qm_fs *fs);

#endif

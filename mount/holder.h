/*
 * holder.h - a mount that outlives its server.
 *
 * Two processes make a mount.  The holder (holder.c) mounts, keeps the
 * mount's /dev/fuse descriptor and the mount's identity, and does nothing
 * else: it parses no image, talks to no network and reads no request, so
 * it has little that can fail.  The server (server.c, with session.c and
 * the operations) is this program run again: it gets its command line and
 * the descriptor from the holder over a socket (SCM_RIGHTS), opens the
 * image and answers requests.
 *
 * When a server dies (any signal, an abort, an OOM kill) the holder writes
 * FUSE_NOTIFY_RESEND (Linux 6.9+), which puts every request the dead server
 * had read and not answered back in the kernel's queue, and starts another
 * server.  The kernel does not send INIT twice, so the holder keeps the
 * first INIT request's bytes (opaque to it) and each later server replays
 * them into its libfuse session, whose answer it drops: the session then
 * agrees with the kernel on what was negotiated.  Node ids derive from the
 * image (view.h) and a restartable server's file handles name no memory of
 * its own (ops.c), so a new server answers for whatever the kernel holds.
 *
 * Kernels without FUSE_NOTIFY_RESEND refuse it (EINVAL): new requests are
 * served, but those the dead server held are never answered; the holder
 * says so once.  FUSE over io_uring keeps requests in ring entries that die
 * with the server and are not resent, so -o uring is served without a
 * holder (mount_main.c).
 *
 * A catalog's node ids name directories and image versions in the order
 * its listings found them, which a new server's listing would not repeat:
 * its server writes each down before the kernel sees it, in a state file
 * (catalog/journal.c) that the holder keeps across servers without reading
 * it (QM_H_ARGS hands it to each server, QM_H_STATE replaces it).  Two
 * servers of a catalog never run at once, since both would hand out ids:
 * its upgrade lets the old server finish what it holds and exit first.
 *
 * The holder gives up (detaches the mount lazily and closes the descriptor,
 * so every reader gets ENOTCONN rather than a hang) when servers keep dying
 * young: more than QM_HOLDER_CRASH_MAX deaths in QM_HOLDER_CRASH_WINDOW
 * seconds of servers that had served less than QM_HOLDER_CRASH_YOUNG.
 * A server whose holder is gone detaches the mount lazily and serves until
 * the last user leaves.
 *
 * `quash mount --upgrade MNT` (or SIGUSR2 to the holder) starts a server from
 * the binary installed where the holder's came from; once it serves, the
 * old one stops reading, answers what it holds and exits.
 */
#ifndef QUASH_MOUNT_HOLDER_H
#define QUASH_MOUNT_HOLDER_H

#include <stdbool.h>

struct qm_fs;

#define QM_HOLDER_CRASH_MAX 5           /* deaths ... */
#define QM_HOLDER_CRASH_WINDOW 30       /* ... in this many seconds make a crash loop, */
#define QM_HOLDER_CRASH_YOUNG 1         /* counting servers that had served less than this (s) */

/*
 * holder.c.  Hold the mount described by fs (its options, absolute mount
 * point and log; checked, not mounted) for the command line argc, argv
 * (kept as given, so that each server parses it again): mount once the
 * first server has opened its image, then keep servers running until the
 * mount ends.  ready_fd (if >= 0) gets one byte once the first server
 * serves, and detach (if not NULL) is called then.  Returns the exit
 * status for the command.
 */
int qm_holder_run(struct qm_fs *fs, int argc, char **argv, int ready_fd, void (*detach)(struct qm_fs *fs));

/* `quash mount --upgrade MOUNTPOINT`: ask its holder to upgrade; the exit status. */
int qm_holder_upgrade(const char *mountpoint);

#endif

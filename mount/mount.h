/*
 * mount.h - entry points of the FUSE mount, called by the quash binary.
 */
#ifndef QUASH_MOUNT_H
#define QUASH_MOUNT_H

#include <stdbool.h>

/* quash mount [-o OPTIONS] IMAGE MOUNTPOINT; argv[0] is "mount".
 * squashfuse_compat: invoked as squashfuse_ll, accept its command line. */
int mount_main(int argc, char **argv, bool squashfuse_compat);

/*
 * A held mount's server, started by its holder with QUASH_SERVER_FD in
 * the environment (mount/holder.h): its command line comes from the holder.
 */
int mount_server_main(void);

/* quash umount MOUNTPOINT */
int umount_main(int argc, char **argv);

#endif

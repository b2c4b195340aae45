/* Placeholder until the mount lands (issue 3). */
#include <stdio.h>
#include "mount.h"

int mount_main(int argc, char **argv, bool squashfuse_compat)
{
	(void)argc; (void)argv; (void)squashfuse_compat;
	fprintf(stderr, "quash: mount is not built yet\n");
	return 1;
}

int umount_main(int argc, char **argv)
{
	(void)argc; (void)argv;
	fprintf(stderr, "quash: umount is not built yet\n");
	return 1;
}

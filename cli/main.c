/* Placeholder dispatch until the offline tools land (issue 2). */
#include <stdio.h>
#include <string.h>
#include "quash.h"
#include "mount.h"
#include "pack.h"

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "squashfuse_ll") == 0 || strcmp(base, "squashfuse") == 0)
		return mount_main(argc, argv, true);
	if (argc > 1 && strcmp(argv[1], "mount") == 0)
		return mount_main(argc - 1, argv + 1, false);
	if (argc > 1 && strcmp(argv[1], "umount") == 0)
		return umount_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "pack") == 0)
		return pack_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("quash %s\n", QUASH_VERSION);
		return 0;
	}
	fprintf(stderr, "usage: quash COMMAND ...\n");
	return 2;
}

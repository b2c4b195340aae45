/*
 * main.c - the quash binary: finds the subcommand and runs it.
 *
 * Invoked as squashfuse_ll (or squashfuse) through a link, it is the FUSE
 * mount with squashfuse's command line, so scripts written for squashfuse
 * work unchanged.  Invoked as mksquashfs, it takes mksquashfs's command
 * line (pack/mksquashfs_cli.c).  Invoked as mount.fuse.quash, it is
 * mount(8)'s helper for the type fuse.quash.  Invoked by mount.fuse3 (mount -t fuse.quash, fstab), it
 * is given "quash IMAGE MOUNTPOINT -o OPTIONS" and mounts too.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "mount.h"
#include "pack.h"

static const struct cli_command *const offline_commands[] = {
	&cmd_info, &cmd_ls, &cmd_stat, &cmd_cat, &cmd_extract, &cmd_profile,
	&cmd_verity,
};

#define N_OFFLINE_COMMANDS (sizeof(offline_commands) / sizeof(offline_commands[0]))

/* getopt names the program in its messages as argv[0]: make that "quash CMD". */
#define CLI_PROGNAME_MAX 32

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: quash COMMAND [OPTIONS] ARGS...\n"
		"Build, mount and read squashfs images.\n"
		"\n"
		"Commands:\n"
		"  pack      build an image from directories or archives\n"
		"  mksquashfs  the same with mksquashfs's command line (also as a link named mksquashfs)\n"
		"  mount     mount an image (local file, HTTP(S) or S3) through FUSE\n"
		"  umount    unmount it again\n"
		"  catalog   the images of a catalog mount (mount --catalog): ls, refresh\n");
	for (size_t i = 0; i < N_OFFLINE_COMMANDS; i++)
		fprintf(f, "  %-9s %s\n", offline_commands[i]->name, offline_commands[i]->summary);
	fprintf(f,
		"\n"
		"Options:\n"
		"  -h, --help      show this help and exit\n"
		"  -V, --version   show the version and exit\n"
		"\n"
		"'quash COMMAND --help' describes each command.  IMAGE may be a path, an\n"
		"http:// or https:// URL, or s3://BUCKET/KEY.\n"
		"\n"
		CLI_EXIT_STATUS_HELP);
}

/* mount.fuse3's calling form: the first argument names an image, not a command. */
static bool names_an_image(int argc, char **argv)
{
	const char *arg = argv[1];

	return argc >= 3 && arg[0] != '-' &&
	       (strchr(arg, '/') || strstr(arg, "://") || access(arg, F_OK) == 0);
}

/* Most arguments mount(8) hands a helper: "-o" and its list, the two paths. */
#define MOUNT_HELPER_ARGS_MAX 8

/*
 * mount(8) runs /sbin/mount.fuse.quash SPEC DIR [-sfnv] [-N NS] [-o OPTS]
 * [-t fuse.quash] for `mount -t fuse.quash` and fstab lines.  Its -s
 * (sloppy), -n (no mtab), -v and -t mean nothing here; -f (fake) means do
 * nothing; a namespace is not ours to enter.
 */
static int mount_helper_main(int argc, char **argv)
{
	char *args[MOUNT_HELPER_ARGS_MAX] = { "mount" };
	int n = 1;

	if (argc < 3) {
		fprintf(stderr, "quash: mount.fuse.quash: need SPEC and DIR (mount(8) runs this)\n");
		return CLI_EXIT_USAGE;
	}
	args[n++] = argv[1];
	args[n++] = argv[2];
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			args[n++] = "-o";
			args[n++] = argv[++i];
		} else if (strcmp(a, "-t") == 0 && i + 1 < argc) {
			i++;
		} else if (a[0] == '-' && a[1] && strspn(a + 1, "snvf") == strlen(a + 1)) {
			if (strchr(a, 'f'))
				return CLI_EXIT_OK;
		} else {
			fprintf(stderr, "quash: mount.fuse.quash: %s: not supported\n", a);
			return CLI_EXIT_USAGE;
		}
		if (n > MOUNT_HELPER_ARGS_MAX - 2) {
			fprintf(stderr, "quash: mount.fuse.quash: too many -o lists\n");
			return CLI_EXIT_USAGE;
		}
	}
	return mount_main(n, args, false);
}

static int run_offline(const struct cli_command *cmd, int argc, char **argv)
{
	static char progname[CLI_PROGNAME_MAX];

	snprintf(progname, sizeof(progname), "quash: %s", cmd->name);
	argv[0] = progname;
	return cmd->run(argc, argv);
}

/*
 * The first retry of a remote request, told once to a person at a terminal:
 * a server that is down costs the whole retry budget, and silence for 30 s
 * looks like a hang.  Scripts (stderr not a terminal) get only the result.
 */
static void retry_notice(const char *message, unsigned seconds)
{
	static atomic_flag told = ATOMIC_FLAG_INIT;

	if (isatty(STDERR_FILENO) && !atomic_flag_test_and_set(&told))
		fprintf(stderr, "quash: %s; retrying for up to %u s\n", message, seconds);
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	const char *name;

	base = base ? base + 1 : argv[0];
	if (getenv("QUASH_SERVER_FD"))
		return mount_server_main();
	cli_hide_secrets(argc, argv);
	qs_source_set_retry_notice(retry_notice);
	if (strcmp(base, "squashfuse_ll") == 0 || strcmp(base, "squashfuse") == 0)
		return mount_main(argc, argv, true);
	if (strcmp(base, "mksquashfs") == 0)
		return mksquashfs_main(argc, argv);
	if (strcmp(base, "sqfstar") == 0)
		return sqfstar_main(argc, argv);   /* sqfstar [OPTIONS] IMAGE: a tar on stdin */
	if (strcmp(base, "mount.fuse.quash") == 0)
		return mount_helper_main(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	name = argv[1];
	if (strcmp(name, "mount") == 0)
		return mount_main(argc - 1, argv + 1, false);
	if (strcmp(name, "umount") == 0)
		return umount_main(argc - 1, argv + 1);
	if (strcmp(name, "pack") == 0)
		return pack_main(argc - 1, argv + 1);
	if (strcmp(name, "mksquashfs") == 0)
		return mksquashfs_main(argc - 1, argv + 1);
	if (strcmp(name, "catalog") == 0)
		return catalog_main(argc - 1, argv + 1);
	for (size_t i = 0; i < N_OFFLINE_COMMANDS; i++) {
		if (strcmp(name, offline_commands[i]->name) == 0)
			return run_offline(offline_commands[i], argc - 1, argv + 1);
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
		printf("quash %s\n", QUASH_VERSION);
		return cli_finish_stdout(CLI_EXIT_OK);
	}
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
		usage(stdout);
		return cli_finish_stdout(CLI_EXIT_OK);
	}
	if (names_an_image(argc, argv))
		return mount_main(argc, argv, false);
	fprintf(stderr, "quash: unknown command '%s'\nTry 'quash --help' for more information.\n", name);
	return CLI_EXIT_USAGE;
}

/*
 * cmd_catalog.c - quash catalog SUBCOMMAND: catalogs, the directories of
 * images that one `quash mount --catalog` serves.
 *
 *   list SPEC   every object a remote catalog lists (qs_source_list()), one
 *               "KEY<TAB>SIZE<TAB>MTIME<TAB>ETAG" line each: a developer's
 *               and the tests' window on the library, so not in the
 *               command list of `quash --help`.
 *
 * Each subcommand is a struct cli_command named "catalog SUB", so that its
 * messages read "quash: catalog SUB: ..." like the other commands'.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "source.h"

static int list_print(void *arg, const struct qs_list_entry *ent)
{
	(void)arg;
	printf("%s\t%" PRIu64 "\t%" PRId64 "\t%s\n", ent->key, ent->size, ent->mtime, ent->etag);
	return ferror(stdout) ? -EIO : 0;
}

static int list_main(int argc, char **argv);

static const struct cli_command cmd_catalog_list = {
	.name = "catalog list",
	.usage = "quash catalog list [OPTIONS] SPEC",
	.summary = "list the objects of a remote catalog",
	.help =
		"SPEC is s3://BUCKET/PREFIX/ (ListObjectsV2, every page), an http(s):// URL\n"
		"ending in '/' (nginx's autoindex_format json listing, directories\n"
		"included) or an http(s):// URL of a text index (one KEY [SIZE] a line).\n"
		"Prints KEY<TAB>SIZE<TAB>MTIME<TAB>ETAG for each object, keys relative to\n"
		"SPEC; unsafe keys (\"..\", control characters, ...) are left out.\n"
		"\n"
		"Options:\n"
		"      --endpoint URL    S3 endpoint (else AWS_ENDPOINT_URL), addressed path-style\n"
		"      --region NAME     S3 region (else AWS_REGION or AWS_DEFAULT_REGION)\n"
		"      --retry-seconds N  give up a request after N seconds in all (default 30)\n"
		"      --proxy URL       send requests through this HTTP proxy\n"
		"  -h, --help            show this help and exit\n"
		"  -V, --version         show the version and exit\n"
		"\n"
		"Exit status:\n"
		"  0  success\n"
		"  1  the catalog could not be listed, or output failed\n"
		"  2  the command line is wrong\n",
	.run = list_main,
};

static int list_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "endpoint", required_argument, NULL, CLI_OPT_ENDPOINT },
		{ "region", required_argument, NULL, CLI_OPT_REGION },
		{ "retry-seconds", required_argument, NULL, CLI_OPT_RETRY_SECONDS },
		{ "proxy", required_argument, NULL, CLI_OPT_PROXY },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	struct cli_common co = { .cmd = &cmd_catalog_list };
	int opt, st;

	while ((opt = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		st = cli_common_option(&co, opt, optarg);
		if (st != CLI_CONTINUE)
			return st;
	}
	if (optind + 1 != argc)
		return cli_usage(co.cmd, optind == argc ? "missing SPEC" : "one SPEC only");
	if (qs_source_list(argv[optind], &co.source, list_print, NULL) != 0) {
		fflush(stdout);
		fprintf(stderr, "quash: catalog list: %s\n", ferror(stdout) ? "standard output: write error"
									  : qs_last_error());
		return CLI_EXIT_ERROR;
	}
	return cli_finish_stdout(CLI_EXIT_OK);
}

/* ---- the subcommand dispatcher ------------------------------------------------ */

struct catalog_sub {
	const char *name;
	const struct cli_command *cmd;
};

static const struct catalog_sub catalog_subs[] = {
	{ "list", &cmd_catalog_list },
};

#define N_CATALOG_SUBS (sizeof(catalog_subs) / sizeof(catalog_subs[0]))

static void catalog_usage(FILE *f)
{
	fprintf(f, "Usage: quash catalog SUBCOMMAND [OPTIONS] ARGS...\n"
		"Catalogs: directories of images served by one 'quash mount --catalog'.\n"
		"\n"
		"Subcommands:\n");
	for (size_t i = 0; i < N_CATALOG_SUBS; i++)
		fprintf(f, "  %-9s %s\n", catalog_subs[i].name, catalog_subs[i].cmd->summary);
	fprintf(f, "\n'quash catalog SUBCOMMAND --help' describes each one.\n");
}

/* getopt names the program as argv[0]: "quash: catalog SUB". */
#define CATALOG_PROGNAME_MAX 48

int catalog_main(int argc, char **argv)
{
	static char progname[CATALOG_PROGNAME_MAX];
	const char *sub = argc >= 2 ? argv[1] : NULL;

	if (!sub) {
		catalog_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		catalog_usage(stdout);
		return cli_finish_stdout(CLI_EXIT_OK);
	}
	if (!strcmp(sub, "-V") || !strcmp(sub, "--version"))
		return cli_print_version();
	for (size_t i = 0; i < N_CATALOG_SUBS; i++) {
		if (strcmp(sub, catalog_subs[i].name))
			continue;
		snprintf(progname, sizeof(progname), "quash: %s", catalog_subs[i].cmd->name);
		argv[1] = progname;
		return catalog_subs[i].cmd->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "quash: catalog: unknown subcommand '%s'\nTry 'quash catalog --help' for more information.\n",
		sub);
	return CLI_EXIT_USAGE;
}

/*
 * cmd_profile.c - quash profile: recorded prefetch profiles (docs/profile.md).
 *
 * record: mount IMAGE with -o record=FILE on a temporary directory, run a
 * command with the mount's path in $QUASH_MOUNT, unmount, and wait for the
 * mount's daemon to write the profile.
 *
 * paths PROFILE IMAGE: the files a recorded profile touched, in first-touch
 * order, one path a line: the list `quash pack --order` lays out first.
 *
 * A profile holds byte ranges of the image, not names.  Every regular
 * file's stored bytes (its run of full blocks and the fragment block of its
 * tail) are collected from the image the profile was recorded against,
 * sorted by offset, and each range of the profile names the files whose
 * bytes it overlaps.  A fragment block names every file with a tail in it:
 * the writer packs tails in the order it writes files, so listing them
 * together keeps them together.  A file with full blocks that only its
 * fragment block named comes after the files the profile read: laid out
 * among them, its unread blocks would split the run a replay fetches.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "mount.h"
#include "source.h"

#define RECORD_MAX_O_LISTS   8        /* -o lists quash profile record passes on */
#define RECORD_MOUNT_WAIT_MS 60000    /* a mount not ready by then has failed */
#define RECORD_POLL_MS       20

/*
 * Every open reads the source's first bytes to look for a SIF header
 * (lib/io/source/sif.c), past the superblock into the first file's data: those
 * bytes of a profile name no file.
 */
#define PATHS_OPEN_PROBE 128

struct extent {
	uint64_t start, end;        /* source offsets */
	size_t file;
	bool later;                 /* the fragment block of a file with full blocks: names it last */
};

struct profile_walk {
	struct qs_image *img;
	const char *image;
	uint64_t base;              /* the superblock's offset in the source */
	struct cli_path path;
	char **paths;
	size_t npaths, paths_cap;
	struct extent *ext;
	size_t next, ext_cap;
};

static int add_extent(struct profile_walk *w, uint64_t start, uint64_t len, size_t file, bool later)
{
	if (w->next == w->ext_cap) {
		size_t cap = w->ext_cap ? 2 * w->ext_cap : 1024;
		struct extent *e = realloc(w->ext, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		w->ext = e;
		w->ext_cap = cap;
	}
	w->ext[w->next++] = (struct extent){ w->base + start, w->base + start + len, file, later };
	return 0;
}

/* One regular file: its path (without the leading '/') and its extents. */
static int add_file(struct profile_walk *w, const struct qs_inode *inode)
{
	uint64_t start, len, frag_start;
	uint32_t frag_len;
	struct qs_file *f;
	int err;

	/* A name with a newline cannot be one line of the list: it keeps the tree's order. */
	if (strchr(w->path.buf, '\n'))
		return 0;
	err = qs_file_open(w->img, inode, &f);
	if (!err) {
		err = qs_file_extent(f, &start, &len, &frag_start, &frag_len);
		qs_file_close(f);
	}
	if (err) {
		cli_error(w->image, w->path.buf, "%s", qs_last_error());
		return err;
	}
	if (!len && !frag_len)
		return 0;
	if (w->npaths == w->paths_cap) {
		size_t cap = w->paths_cap ? 2 * w->paths_cap : 1024;
		char **p = realloc(w->paths, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		w->paths = p;
		w->paths_cap = cap;
	}
	if (!(w->paths[w->npaths] = strdup(w->path.buf + 1)))
		return -ENOMEM;
	w->npaths++;
	if (len && (err = add_extent(w, start, len, w->npaths - 1, false)))
		return err;
	if (frag_len && (err = add_extent(w, frag_start, frag_len, w->npaths - 1, len != 0)))
		return err;
	return 0;
}

static int walk_dir(struct profile_walk *w, const struct qs_inode *dir, int depth)
{
	struct qs_dir_iter it;
	struct qs_dirent ent;
	int r, err;

	if (depth > CLI_DEPTH_MAX) {
		cli_error(w->image, w->path.buf, "directories nested deeper than %d", CLI_DEPTH_MAX);
		return -ELOOP;
	}
	err = qs_dir_open(w->img, dir, &it);
	while (!err && (r = qs_dir_next(&it, &ent)) > 0) {
		struct qs_inode inode;
		ssize_t back;

		if (ent.type != QS_DIR && ent.type != QS_FILE)
			continue;
		back = cli_path_push(&w->path, ent.name, ent.name_len);
		if (back < 0)
			return -ENOMEM;
		err = qs_inode_read(w->img, ent.ref, &inode);
		if (err)
			cli_error(w->image, w->path.buf, "%s", qs_last_error());
		else if (inode.type == QS_DIR)
			err = walk_dir(w, &inode, depth + 1);
		else if (inode.type == QS_FILE)
			err = add_file(w, &inode);
		cli_path_pop(&w->path, (size_t)back);
	}
	if (!err && r < 0) {
		cli_error(w->image, w->path.buf, "%s", qs_last_error());
		err = r;
	}
	return err;
}

static int by_start(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	/* The files of one fragment block in the tree's order, whatever qsort does with equal keys. */
	return x->file < y->file ? -1 : x->file > y->file;
}

/*
 * One past the last extent before 'p' that ends at or before 'off', or 0:
 * the extents from there up to 'p' all reach past 'off'.  'min_end' is a
 * tree over the sorted extents, node 1 its root, nodes 2k and 2k+1 the
 * halves of node k, each holding the smallest end below it; node 'node'
 * covers the extents lo..hi-1.  It goes down one path and looks at a
 * sibling of each node on it, so it costs O(log n).
 */
static size_t reach_back(const uint64_t *min_end, size_t node, size_t lo, size_t hi, size_t p, uint64_t off)
{
	size_t mid = lo + (hi - lo) / 2, j;

	if (lo >= p || min_end[node] > off)
		return 0;
	if (hi - lo == 1)
		return hi;
	j = reach_back(min_end, 2 * node + 1, mid, hi, p, off);
	return j ? j : reach_back(min_end, 2 * node, lo, mid, p, off);
}

/* The first extent at or after 'i' not yet spent: skip[] jumps over the spent ones (union-find). */
static size_t next_live(size_t *skip, size_t i)
{
	while (skip[i] != i) {
		skip[i] = skip[skip[i]];
		i = skip[i];
	}
	return i;
}

enum { FILE_UNSEEN, FILE_LATER, FILE_PRINTED };     /* print_paths()'s state of a file */

/*
 * Print every file whose bytes the profile's ranges overlap, first touch
 * first.  A range names the files of a run of the sorted extents: from the
 * first one starting at or after it, back over those before it that reach
 * into it, on to the last one starting inside it.  A visited extent's file
 * is printed, so the extent is spent: the skip pointers pass over it from
 * then on, each extent is visited once in all rather than once per range
 * over it, and the walk ends when every file is printed.  A file named
 * only by a 'later' extent waits in later[] and is printed at the end,
 * unless a range reads its blocks first.
 */
static int print_paths(struct profile_walk *w, const struct qs_profile *prof)
{
	size_t n = w->next, size = 1, left = w->npaths, nlater = 0;
	unsigned char *state = calloc(w->npaths ? w->npaths : 1, 1);     /* FILE_* */
	size_t *later = malloc((w->npaths ? w->npaths : 1) * sizeof(*later));
	size_t *skip = malloc((n + 1) * sizeof(*skip));
	uint64_t *min_end;
	int err = 0;

	while (size < n)
		size *= 2;
	min_end = malloc(2 * size * sizeof(*min_end));
	if (!state || !later || !skip || !min_end) {
		err = -ENOMEM;
		goto out;
	}
	if (n)          /* an image without file data has no extent array at all */
		qsort(w->ext, n, sizeof(*w->ext), by_start);
	for (size_t i = 0; i <= n; i++)
		skip[i] = i;
	for (size_t i = 0; i < size; i++)
		min_end[size + i] = i < n ? w->ext[i].end : UINT64_MAX;
	for (size_t k = size - 1; k > 0; k--)
		min_end[k] = min_end[2 * k] < min_end[2 * k + 1] ? min_end[2 * k] : min_end[2 * k + 1];

	for (size_t r = 0; r < prof->count && left; r++) {
		uint64_t off = prof->ranges[r].off, end = off + prof->ranges[r].len;
		size_t lo = 0, hi = n;

		if (off < PATHS_OPEN_PROBE)
			off = PATHS_OPEN_PROBE;
		if (end <= off)
			continue;

		while (lo < hi) {                   /* the first extent starting at or after off */
			size_t mid = lo + (hi - lo) / 2;

			if (w->ext[mid].start < off)
				lo = mid + 1;
			else
				hi = mid;
		}
		lo = reach_back(min_end, 1, 0, size, lo, off);      /* and those before it that reach in */
		for (size_t i = next_live(skip, lo); i < n && w->ext[i].start < end; i = next_live(skip, i + 1)) {
			size_t file = w->ext[i].file;

			/* Only an end wrapped past 2^64 (a corrupt image) is before off: a later range may name it. */
			if (w->ext[i].end <= off)
				continue;
			if (state[file] != FILE_PRINTED && !w->ext[i].later) {
				state[file] = FILE_PRINTED;
				left--;
				printf("%s\n", w->paths[file]);
			} else if (state[file] == FILE_UNSEEN) {
				state[file] = FILE_LATER;
				later[nlater++] = file;
			}
			skip[i] = i + 1;
		}
	}
	for (size_t i = 0; i < nlater; i++)
		if (state[later[i]] == FILE_LATER)
			printf("%s\n", w->paths[later[i]]);
out:
	free(min_end);
	free(skip);
	free(later);
	free(state);
	return err;
}

static int paths_main(struct cli_common *co, const char *profile, const char *image)
{
	struct profile_walk w = { .image = image };
	char identity[QS_PROFILE_ID_MAX];
	struct qs_profile *prof;
	struct qs_inode root;
	int st, err;

	if (qs_profile_load(profile, &prof) < 0) {
		fprintf(stderr, "quash: profile: %s\n", qs_last_error());
		return CLI_EXIT_ERROR;
	}
	st = cli_open_image(co, image, &w.img);
	if (st) {
		qs_profile_free(prof);
		return st;
	}
	w.base = qs_image_info(w.img)->offset;
	if (qs_profile_identity(qs_image_source(w.img), w.base, identity, sizeof(identity)) < 0 ||
	    strcmp(identity, prof->identity) != 0) {
		fprintf(stderr, "quash: profile: %s was recorded against another image than %s; "
			"give the image it was recorded on\n", profile, image);
		st = CLI_EXIT_ERROR;
		goto out;
	}
	err = qs_inode_root(w.img, &root);
	if (err)
		cli_error(image, NULL, "%s", qs_last_error());
	else if ((err = cli_path_set_image(&w.path, "/")) == 0)
		err = walk_dir(&w, &root, 0);
	if (err == -ENOMEM)
		fprintf(stderr, "quash: profile: out of memory\n");
	if (err) {
		st = CLI_EXIT_ERROR;
		goto out;
	}
	if (print_paths(&w, prof) < 0) {
		fprintf(stderr, "quash: profile: out of memory\n");
		st = CLI_EXIT_ERROR;
		goto out;
	}
	st = cli_finish_stdout(CLI_EXIT_OK);
out:
	for (size_t i = 0; i < w.npaths; i++)
		free(w.paths[i]);
	free(w.paths);
	free(w.ext);
	cli_path_free(&w.path);
	qs_image_close(w.img);
	qs_profile_free(prof);
	return st;
}

/* ---- record ------------------------------------------------------------------ */

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Is something mounted on 'dir' (another device than its parent's)? */
static bool mounted_on(const char *dir)
{
	char parent[PATH_MAX + 4];
	struct stat st, pst;

	snprintf(parent, sizeof(parent), "%s/..", dir);
	return stat(dir, &st) == 0 && stat(parent, &pst) == 0 && st.st_dev != pst.st_dev;
}

/* The mount, in the foreground, in a child: 0 once ready, else -1 (the child said why). */
static int start_mount(const char *image, const char *const *lists, int nlists, const char *mp, pid_t *pid)
{
	int waited = 0, status;

	*pid = fork();
	if (*pid < 0) {
		fprintf(stderr, "quash: profile: fork: %s\n", strerror(errno));
		return -1;
	}
	if (*pid == 0) {
		char *margv[4 + 2 * RECORD_MAX_O_LISTS + 1];
		int n = 0;

		margv[n++] = "mount";
		margv[n++] = "-f";
		for (int i = 0; i < nlists; i++) {
			margv[n++] = "-o";
			margv[n++] = (char *)lists[i];
		}
		margv[n++] = (char *)image;
		margv[n++] = (char *)mp;
		margv[n] = NULL;
		_exit(mount_main(n, margv, false));
	}
	while (!mounted_on(mp)) {
		if (waitpid(*pid, &status, WNOHANG) == *pid)
			return -1;
		if (waited >= RECORD_MOUNT_WAIT_MS) {
			fprintf(stderr, "quash: profile: %s: not mounted after %d s\n", image, RECORD_MOUNT_WAIT_MS / 1000);
			kill(*pid, SIGTERM);
			waitpid(*pid, &status, 0);
			return -1;
		}
		sleep_ms(RECORD_POLL_MS);
		waited += RECORD_POLL_MS;
	}
	return 0;
}

/* COMMAND with $QUASH_MOUNT set; its exit status as a shell gives it. */
static int run_command(char **cmd, const char *mp)
{
	pid_t pid = fork();
	int status;

	if (pid < 0) {
		fprintf(stderr, "quash: profile: fork: %s\n", strerror(errno));
		return CLI_EXIT_ERROR;
	}
	if (pid == 0) {
		setenv("QUASH_MOUNT", mp, 1);
		execvp(cmd[0], cmd);
		fprintf(stderr, "quash: profile: %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return CLI_EXIT_ERROR;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int record_main(int argc, char **argv)
{
	const char *image = NULL, *lists[RECORD_MAX_O_LISTS];
	char mp[PATH_MAX], *uargv[4];
	const char *tmp = getenv("TMPDIR");
	int nlists = 0, i, st, status;
	bool record = false;
	pid_t mpid;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *list;

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strncmp(a, "-o", 2) == 0) {
			list = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
			if (!list)
				return cli_usage(&cmd_profile, "-o needs a list of mount options");
			if (nlists == RECORD_MAX_O_LISTS)
				return cli_usage(&cmd_profile, "more than %d -o lists", RECORD_MAX_O_LISTS);
			record = record || strncmp(list, "record=", 7) == 0 || strstr(list, ",record=");
			lists[nlists++] = list;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage(&cmd_profile, "record: unknown option '%s'", a);
		} else if (!image) {
			image = a;
		} else {
			return cli_usage(&cmd_profile, "record: unexpected '%s' (the command goes after --)", a);
		}
	}
	if (!image || i >= argc)
		return cli_usage(&cmd_profile, "record needs IMAGE, -o record=FILE and -- COMMAND");
	if (!record)
		return cli_usage(&cmd_profile, "record needs -o record=FILE");
	snprintf(mp, sizeof(mp), "%s/quash-profile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(mp)) {
		fprintf(stderr, "quash: profile: %s: %s\n", mp, strerror(errno));
		return CLI_EXIT_ERROR;
	}
	if (start_mount(image, lists, nlists, mp, &mpid) < 0) {
		rmdir(mp);
		return CLI_EXIT_ERROR;
	}
	st = run_command(argv + i, mp);
	/* Unmount; if the command left something open there, detach it lazily. */
	uargv[0] = "umount";
	uargv[1] = mp;
	uargv[2] = NULL;
	optind = 1;
	if (umount_main(2, uargv) != 0) {
		uargv[1] = "-z";
		uargv[2] = mp;
		uargv[3] = NULL;
		optind = 1;
		umount_main(3, uargv);
	}
	/* The daemon writes the profile as it exits. */
	while (waitpid(mpid, &status, 0) < 0 && errno == EINTR)
		;
	rmdir(mp);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "quash: profile: the mount of %s did not end cleanly; the profile may be partial\n",
			image);
		return st ? st : CLI_EXIT_ERROR;
	}
	return st;
}

static int profile_main(int argc, char **argv)
{
	struct cli_common co = { .cmd = &cmd_profile };
	int st;

	/* record's -o is the mount's, not --offset: it has its own command line. */
	if (argc > 1 && strcmp(argv[1], "record") == 0)
		return record_main(argc - 1, argv + 1);
	st = cli_parse_common_only(&co, argc, argv);

	if (st != CLI_CONTINUE)
		return st;
	if (argc - optind < 1)
		return cli_usage(&cmd_profile, "missing the action (record or paths)");
	if (strcmp(argv[optind], "paths") != 0)
		return cli_usage(&cmd_profile, "unknown action '%s' (record or paths)", argv[optind]);
	if (argc - optind != 3)
		return cli_usage(&cmd_profile, argc - optind < 3 ? "paths needs PROFILE and IMAGE" :
				 "paths takes PROFILE and IMAGE only");
	return paths_main(&co, argv[optind + 1], argv[optind + 2]);
}

const struct cli_command cmd_profile = {
	.name = "profile",
	.usage = "quash profile record [-o MOUNT-OPTIONS] IMAGE -o record=PROFILE -- COMMAND [ARGS...]\n"
		 "       quash profile paths [--offset N] PROFILE IMAGE",
	.summary = "record a prefetch profile; list the files one touched",
	.help =
		"record: mounts IMAGE on a temporary directory with the mount options given\n"
		"(record=PROFILE among them; see quash mount --help), runs COMMAND with the\n"
		"mount's path in $QUASH_MOUNT, unmounts, and waits until the profile is written.\n"
		"The exit status is COMMAND's.\n"
		"\n"
		"paths: prints the regular files of IMAGE whose stored bytes the prefetch profile\n"
		"PROFILE (recorded with quash mount -o record=PROFILE IMAGE) read, in the order\n"
		"it first read them (files whose blocks it did not read, named only by a\n"
		"fragment block, last), one path a line.  quash pack --order takes that list and\n"
		"lays those files out first, so that replaying the profile on the new image\n"
		"(after recording it again there) costs one or two requests.  PROFILE must have\n"
		"been recorded against IMAGE itself.  The format is in docs/profile.md.\n"
		"\n"
		"Options of paths:\n"
		CLI_COMMON_HELP
		"\n"
		CLI_EXIT_STATUS_HELP
		"\n"
		"Examples:\n"
		"  quash profile record app.sqfs -o record=app.profile -- sh -c 'cd \"$QUASH_MOUNT\" && ./run'\n"
		"  quash profile paths app.profile app.sqfs >app.order\n"
		"  quash pack --order app.order app/ app2.sqfs\n",
	.run = profile_main,
};

/*
 * writer.c - one pack run, in the order mksquashfs lays an image out:
 *
 *   superblock, compressor options, data blocks and fragments,
 *   inode table, directory table, fragment table, export table,
 *   id table, xattr table, padding to 4 KiB.
 *
 * Sources are read into the tree first, so that the image depends only
 * on the merged tree and never on listing order or timing.
 */
#include <errno.h>
#include <grp.h>
#include <malloc.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "writer.h"
#include "sink/append.h"
#include "data/data.h"
#include "table/image.h"
#include "json.h"
#include "base/progress.h"
#include "scan/scan.h"
#include "sink/sink.h"
#include "data/sort.h"
#include "tree/spill.h"
#include "verity/verity.h"
#include "table/super.h"
#include "base/util.h"

#define IMAGE_PAD 4096          /* images end on a 4 KiB boundary, as loop devices want */

/* The superblock flags that say what is stored uncompressed. */
#define UNCOMPRESSED_FLAGS (SQFS_FLAG_UNCOMPRESSED_INODES | SQFS_FLAG_UNCOMPRESSED_DATA | \
			    SQFS_FLAG_UNCOMPRESSED_FRAGMENTS | SQFS_FLAG_UNCOMPRESSED_XATTRS | \
			    SQFS_FLAG_UNCOMPRESSED_IDS)

/* --memory: the share of the bound for the tables being built, the data in flight, and the tree. */
#define MEMORY_TABLES_SHARE 4       /* a quarter */
#define MEMORY_RING_SHARE   4       /* a quarter of input; the output buffers double it */
#define MEMORY_TREE_SHARE   4       /* a quarter resident; the rest of it in a file (spill.c) */
/*
 * Without --memory the tables still spill past this: their streams are
 * written once and read once, so through the page cache they cost little,
 * and a tree of a million small files has 45 MB of them.  They are made
 * while the whole tree is still held, the pack's peak, and a larger share
 * here only raises that peak, for no time gained (docs/benchmarks.md).
 */
#define TABLES_MEMORY_DEFAULT (4u << 20)

static int read_sources(const struct pack_options *o, struct pack_tree *t, struct spool *spool)
{
	struct scan_options so = {
		.excludes = o->excludes,
		.exclude_count = o->exclude_count,
		.exclude_regex = o->exclude_regex,
		.exclude_ids = o->exclude_ids,
		.exclude_id_count = o->exclude_id_count,
		.xattrs = !o->overrides.no_xattrs,
		.skip_unreadable = o->skip_unreadable,
		.implicit_mtime = o->overrides.mtime >= 0 ? o->overrides.mtime : 0,
		.implicit_mode = o->implicit_mode >= 0 ? (uint32_t)o->implicit_mode : 0755,
		.implicit_uid = o->implicit_uid >= 0 ? (uint32_t)o->implicit_uid : 0,
		.implicit_gid = o->implicit_gid >= 0 ? (uint32_t)o->implicit_gid : 0,
		.no_hardlinks = o->no_hardlinks,
		.ignore_zeros = o->ignore_zeros,
		.owner_names = o->owner_names,
		.block_size = o->block_size,
		.spool = spool,
		.one_file_system = o->one_file_system,
		.one_file_system_x = o->one_file_system_x,
		.limit_depth = o->limit_depth,
		.max_depth = o->max_depth,
		.ignore_archive_root = o->fake_root,
		.threads = o->jobs,
	};
	int err = 0;

	if (o->no_strip || o->cpio_style)
		return scan_paths(t, o->sources, o->source_count, o->no_strip, &so);
	if (o->fake_root) {
		/*
		 * Sources nested by name, or a tar read as mksquashfs -tar reads it,
		 * stand in a root no source gave: mksquashfs
		 * makes it 0777, owned by whoever runs it, made now (-all-time,
		 * -force-uid and the like still apply).
		 */
		t->root->mode = S_IFDIR | 0777;
		t->root->mtime = tree_time(time(NULL));
		err = tree_set_owner(t, t->root, geteuid(), getegid());
	}
	for (size_t i = 0; !err && i < o->source_count; i++) {
		const char *src = o->sources[i];
		struct stat st;

		so.as_name = o->source_names ? o->source_names[i] : NULL;
		if (strcmp(src, "-") == 0) {
			err = scan_archive(t, src, &so);
			continue;
		}
		if ((o->file_sources ? lstat(src, &st) : stat(src, &st)) < 0) {
			err = -errno;
			pack_error("%s: %s", src, strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			err = scan_dir(t, src, &so);
		} else if (o->file_sources) {
			err = scan_file(t, src, &so);
		} else {
			err = scan_archive(t, src, &so);
		}
	}
	return err;
}

/* The regular files in the order their data is written (hard links once per name). */
struct data_pass {
	struct data_writer *w;
};

struct file_list {
	struct pack_inode **files;
	size_t n, cap;
};

static int list_file(struct pack_inode *inode, void *arg)
{
	struct file_list *l = arg;

	if (!tree_is_reg(inode))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1024;
		void *p = realloc(l->files, cap * sizeof(*l->files));

		if (!p) {
			pack_error("out of memory");
			return -ENOMEM;
		}
		l->files = p;
		l->cap = cap;
	}
	l->files[l->n++] = inode;
	return 0;
}

/* -sort, --order: the files in their order; else nothing (the tree is walked as it is). */
static int data_order(const struct pack_options *o, struct pack_tree *t, struct file_list *l)
{
	struct sort_entry *order = NULL;
	size_t n = 0;
	int err;

	if (!o->sort_file && !o->order_file)
		return 0;
	/* Never NULL once sorted, even empty: NULL means the tree's order. */
	l->files = malloc(sizeof(*l->files));
	if (!l->files) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	l->cap = 1;
	err = sort_order(t, o->order_file ? o->order_file : o->sort_file, o->order_file != NULL, &order, &n);
	for (size_t i = 0; !err && i < n; i++)
		err = list_file(order[i].inode, l);
	free(order);
	return err;
}

/* Distinct uids or gids of the tree, for the report: squashfs holds at most 65536 ids. */
#define REPORT_IDS_MAX   65536
#define REPORT_IDS_SLOTS (2 * REPORT_IDS_MAX)

struct id_set {
	uint32_t ids[REPORT_IDS_MAX];
	size_t n;
	int32_t slot[REPORT_IDS_SLOTS];     /* index into ids + 1; 0: empty */
};

static void id_set_add(struct id_set *s, uint32_t id)
{
	size_t i = (size_t)((id * 0x9e3779b1u) % REPORT_IDS_SLOTS);

	for (; s->slot[i]; i = (i + 1) % REPORT_IDS_SLOTS)
		if (s->ids[s->slot[i] - 1] == id)
			return;
	if (s->n < REPORT_IDS_MAX) {
		s->ids[s->n++] = id;
		s->slot[i] = (int32_t)s->n;
	}
}

struct owners {
	struct id_set uids, gids;
	const struct pack_tree *t;
};

static int collect_owner(struct pack_inode *inode, void *arg)
{
	struct owners *ow = arg;

	id_set_add(&ow->uids, tree_uid(ow->t, inode));
	id_set_add(&ow->gids, tree_gid(ow->t, inode));
	return 0;
}

/* The report's owners, gathered before the tree is let go (NULL if out of memory: not listed). */
static struct owners *collect_owners(struct pack_tree *t)
{
	struct owners *ow = calloc(1, sizeof(*ow));

	if (ow) {
		ow->t = t;
		collect_owner(t->root, ow);
		tree_walk_files(t->root, collect_owner, ow);
	}
	return ow;
}

/* What the summary reports beyond the tree's own counts. */
struct pack_stats {
	struct owners *owners;      /* the mksquashfs form's report only */
	uint64_t image_size;
	uint64_t dedup_files, dedup_bytes;
	uint32_t fragments, ids;
	uint64_t inode_bytes, inode_raw, dir_bytes, dir_raw;    /* the two tables, compressed and not */
	uint64_t xattr_bytes, xattr_raw;    /* the pairs: as stored, and their sets' sizes uncompressed */
	uint64_t empty_files;       /* mksquashfs's report counts them among the duplicates */
	uint64_t bytes_used;        /* the superblock's: the image without its padding */
	char verity_root[2 * QS_VERITY_MAX_DIGEST + 1];    /* --verity: the root hash in hex, else "" */
};

static int write_one(struct data_writer *w, struct pack_inode *inode)
{
	int err;

	if (!tree_is_reg(inode) || inode->data_done)
		return 0;
	err = data_write_file(w, inode);
	progress_add(0, 1);
	return err;
}

static int write_visit(struct pack_inode *inode, void *arg)
{
	return write_one(arg, inode);
}

static int write_data(const struct pack_options *o, struct pack_tree *t, struct pack_sink *sink, int spool_fd,
		      const struct append_base *base, struct sqfs_super *sb, uint8_t **frag_table,
		      uint32_t *frag_count, struct pack_stats *stats)
{
	uint32_t old = base ? base->fragment_count : 0;
	struct data_config cfg = {
		.comp = o->comp,
		.params = &o->params,
		.block_size = o->block_size,
		.jobs = o->jobs,
		.fragments = o->fragments,
		.tail_packing = o->tail_packing,
		.dedup = o->dedup,
		.sparse = o->sparse,
		.store_data = (o->uncompressed & SQFS_FLAG_UNCOMPRESSED_DATA) != 0,
		.store_fragments = (o->uncompressed & SQFS_FLAG_UNCOMPRESSED_FRAGMENTS) != 0,
		.spool_fd = spool_fd,
		.stored = base ? base->img : NULL,
		.fragment_base = old,
		.xattrs_include = o->overrides.xattrs_include,
		.xattrs_exclude = o->overrides.xattrs_exclude,
		.ring_bytes = o->memory / MEMORY_RING_SHARE,
		.input_limit = o->input_limit,
	};
	struct file_list files = { 0 };
	struct data_pass dp;
	int err = data_order(o, t, &files);

	tree_drop_index(t);         /* names were looked up for the last time by the sort */
	/*
	 * Those tables lie between the tree's arena chunks on the heap, so
	 * free() keeps their pages: hand them back before the data phase's
	 * own allocations (8 bytes an entry of the peak, at a million files).
	 */
	malloc_trim(0);

	if (!err)
		err = data_writer_start(&cfg, sink, t, files.files, files.n, &dp.w);
	if (err) {
		free(files.files);
		return err;
	}
	if (!files.files)
		err = tree_walk_files(t->root, write_visit, dp.w);
	for (size_t i = 0; !err && i < files.n; i++)
		err = write_one(dp.w, files.files[i]);
	if (!err)
		err = data_writer_finish(dp.w);
	if (!err) {
		const struct sqfs_fragment_entry *f = data_fragments(dp.w);
		uint32_t fresh = data_fragment_count(dp.w);

		/* Appending: the old image's fragments keep their numbers, the new ones follow. */
		*frag_count = old + fresh;
		*frag_table = malloc((size_t)*frag_count * SQFS_FRAGMENT_ENTRY_SIZE + 1);
		if (!*frag_table || (fresh && !f))
			err = -ENOMEM;
		for (uint32_t i = 0; !err && i < *frag_count; i++) {
			uint8_t *p = *frag_table + (size_t)i * SQFS_FRAGMENT_ENTRY_SIZE;
			const struct sqfs_fragment_entry *e = i < old ? &base->fragments[i] : &f[i - old];

			sqfs_put64(p, e->start);
			sqfs_put32(p + 8, e->size);
			sqfs_put32(p + 12, 0);
		}
	}
	sb->fragment_count = *frag_count;
	stats->dedup_files = data_dedup_files(dp.w);
	stats->empty_files = data_empty_files(dp.w);
	stats->dedup_bytes = data_dedup_bytes(dp.w);
	data_writer_free(dp.w);
	free(files.files);
	return err;
}

/*
 * mksquashfs -info: a line for every new inode in its order (a directory's
 * entries by name, each directory after its contents), with the inode's
 * final reference; a second name of a file it has told of says LINK.
 */
struct info_walk {
	const struct image_writer *iw;
	FILE *out;
	uint8_t *told;              /* by inode number - 1 */
	char *path;
	size_t cap;
};

static const char *info_kind(const struct pack_inode *inode)
{
	switch (inode->mode & 0170000) {
	case 0120000: return "symbolic link";
	case 0020000: return "character device";
	case 0060000: return "block device";
	case 0010000: return "fifo";
	default: return "unix domain socket";
	}
}

static int info_dir(struct info_walk *w, const struct pack_inode *dir, size_t len)
{
	for (size_t i = 0; i < dir->u.dir.count; i++) {
		pack_child d = dir->u.dir.children[i];
		const struct pack_inode *inode = tree_child_inode(d);
		size_t name_len = tree_child_name_len(d);
		uint64_t ref = w->iw->export[inode->ino - 1];
		bool link = w->told[inode->ino - 1];
		int err;

		if (len + name_len + 2 > w->cap) {
			char *p = realloc(w->path, w->cap = 2 * (len + name_len + 2));

			if (!p)
				return -ENOMEM;
			w->path = p;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, tree_child_name(d), name_len + 1);
		w->told[inode->ino - 1] = 1;
		if (inode->stored)
			continue;       /* the image's own: mksquashfs tells only of what it adds */
		if (tree_is_dir(inode)) {
			if ((err = info_dir(w, inode, len + 1 + name_len)) != 0)
				return err;
			w->path[len] = '/';
			memcpy(w->path + len + 1, tree_child_name(d), name_len + 1);
			fprintf(w->out, "directory %s inode 0x%llx\n", w->path, (unsigned long long)ref);
		} else if (tree_is_reg(inode)) {
			fprintf(w->out, "file %s, uncompressed size %llu bytes %s\n", w->path,
			       (unsigned long long)inode->u.file.size,
			       link ? "LINK" : inode->is_dup ? "DUPLICATE" : "");
		} else {
			fprintf(w->out, "%s %s inode 0x%llx%s\n", info_kind(inode), w->path, (unsigned long long)ref,
			       link ? " LINK" : "");
		}
	}
	return 0;
}

static int print_info(const struct image_writer *iw, const struct pack_tree *t, FILE *out)
{
	struct info_walk w = { .iw = iw, .out = out, .told = calloc(iw->inode_count + 1, 1), .path = malloc(256), .cap = 256 };
	int err = w.told && w.path ? info_dir(&w, t->root, 0) : -ENOMEM;

	if (!err)
		fprintf(out, "directory / inode 0x%llx\n", (unsigned long long)iw->root_ref);
	free(w.told);
	free(w.path);
	return err;
}

/* mksquashfs -uid-gid-offset: every id of the table moved by it, none beyond 32 bits. */
static int offset_ids(struct image_writer *iw, uint32_t offset)
{
	for (uint32_t i = 0; i < iw->ids.count; i++) {
		if (iw->ids.ids[i] > UINT32_MAX - offset) {
			pack_error("-uid-gid-offset %u: id %u would be beyond %u", offset, iw->ids.ids[i], UINT32_MAX);
			return -ERANGE;
		}
		iw->ids.ids[i] += offset;
	}
	return 0;
}

static int write_tables(const struct pack_options *o, struct pack_tree *t, struct pack_sink *sink,
			struct sqfs_super *sb, const uint8_t *frag_table, uint32_t frag_count,
			const char *tmp_dir, struct pack_stats *stats)
{
	/* mksquashfs tries gzip's strategies on data blocks only; metadata gets the default. */
	struct qs_compress_params meta_params = o->params;
	struct image_writer iw;
	int err;

	meta_params.gzip_strategies = 0;
	image_init(&iw, o->comp, &meta_params, o->uncompressed, o->jobs,
		   o->memory ? o->memory / MEMORY_TABLES_SHARE : TABLES_MEMORY_DEFAULT, tmp_dir);
	iw.tree = t;
	err = inode_number_tree(&iw, t);
	if (!err)
		err = inode_write_tree(&iw, t);
	if (!err && o->report && !o->quiet && !o->json)
		stats->owners = collect_owners(t);
	/*
	 * The tables' streams hold everything the tree still had to say: let it
	 * go before they are compressed, which is the pack's peak otherwise (a
	 * million files: the tree's 190 MiB and the tables' 36).  -info walks
	 * it once more, with the final references.
	 */
	if (!err && !o->info)
		tree_release(t);
	if (!err)
		err = inode_compress_tables(&iw);
	if (!err && o->info)
		err = print_info(&iw, t, o->info_out ? o->info_out : stdout);
	if (!err) {
		sb->inode_table_start = sink->written;
		err = meta_emit(&iw.inodes, sink);
		stats->inode_bytes = iw.inodes.out_len;
		/* mksquashfs counts each block's 2-byte header in the uncompressed size too. */
		stats->inode_raw = iw.inodes.raw_len + 2 * (uint64_t)iw.inodes.starts_count;
		stats->dir_bytes = iw.dirs.out_len;
		stats->dir_raw = iw.dirs.raw_len + 2 * (uint64_t)iw.dirs.starts_count;
	}
	if (!err) {
		sb->directory_table_start = sink->written;
		err = meta_emit(&iw.dirs, sink);
	}
	sb->fragment_table_start = SQFS_INVALID_TABLE;
	if (!err && frag_count)
		err = meta_write_table(sink, image_comp(&iw, SQFS_FLAG_UNCOMPRESSED_FRAGMENTS), &meta_params, o->jobs,
				       frag_table,
				       (size_t)frag_count * SQFS_FRAGMENT_ENTRY_SIZE,
				       &sb->fragment_table_start);
	sb->export_table_start = SQFS_INVALID_TABLE;
	if (!err && o->exportable)
		err = export_table_write(&iw, sink, &sb->export_table_start);
	if (!err && o->id_offset)
		err = offset_ids(&iw, o->id_offset);
	if (!err)
		err = id_table_write(&iw, sink, &sb->id_table_start);
	if (!err)
		err = xattr_table_write(&iw, sink, &sb->xattr_id_table_start);
	stats->xattr_bytes = iw.xattrs.kv.out_len;
	for (uint32_t i = 0; i < iw.xattrs.count; i++)
		stats->xattr_raw += sqfs_le32(iw.xattrs.ids + (size_t)i * SQFS_XATTR_ID_SIZE + 12);
	sb->inode_count = iw.inode_count;
	sb->id_count = (uint16_t)iw.ids.count;
	sb->root_inode_ref = iw.root_ref;
	if (err == -ENOMEM)
		pack_error("out of memory");
	image_free(&iw);
	return err;
}

static uint16_t image_flags(const struct pack_options *o, const struct sqfs_super *sb, bool options)
{
	uint16_t flags = 0;

	if (!o->fragments)
		flags |= SQFS_FLAG_NO_FRAGMENTS;
	if (o->fragments && o->tail_packing)
		flags |= SQFS_FLAG_ALWAYS_FRAGMENTS;
	if (o->dedup)
		flags |= SQFS_FLAG_DUPLICATES;
	if (o->exportable)
		flags |= SQFS_FLAG_EXPORTABLE;
	if (sb->xattr_id_table_start == SQFS_INVALID_TABLE)
		flags |= SQFS_FLAG_NO_XATTRS;
	if (options)
		flags |= SQFS_FLAG_COMPRESSOR_OPTIONS;
	return flags | (o->uncompressed & UNCOMPRESSED_FLAGS);
}

static int pad_image(struct pack_sink *sink)
{
	static const uint8_t zeros[IMAGE_PAD];
	size_t pad = (IMAGE_PAD - sink->written % IMAGE_PAD) % IMAGE_PAD;

	return pad ? sink_append(sink, zeros, pad) : 0;
}

/* "12.3 MiB", "4.0 KiB", "42 bytes": a size a person reads at a glance. */
static const char *human_size(uint64_t n, char *buf, size_t size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, size, "%llu bytes", (unsigned long long)n);
		return buf;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

/*
 * The ratio is left out below SUMMARY_RATIO_MIN bytes of data: an image's
 * tables and its 4 KiB padding would make it thousands of percent.
 */
#define SUMMARY_RATIO_MIN (64u << 10)

static void print_summary(const struct pack_tree *t, uint64_t image_size)
{
	char in[32], out[32], ratio[32] = "";

	if (t->data_bytes >= SUMMARY_RATIO_MIN)
		snprintf(ratio, sizeof(ratio), " (%.1f%%)", 100.0 * (double)image_size / (double)t->data_bytes);
	printf("quash: %llu file%s, %s in, %s image%s, %.2f s\n", (unsigned long long)t->file_count,
	       t->file_count == 1 ? "" : "s",
	       human_size(t->data_bytes, in, sizeof(in)), human_size(image_size, out, sizeof(out)), ratio,
	       progress_seconds());
}

static void print_summary_json(const struct pack_options *o, const struct pack_tree *t,
			       const struct pack_stats *s)
{
	fputs("{\"image\": ", stdout);
	json_print_string(stdout, o->image);
	printf(", \"image_bytes\": %llu, \"data_bytes\": %llu, \"ratio\": %.4f",
	       (unsigned long long)s->image_size, (unsigned long long)t->data_bytes,
	       t->data_bytes ? (double)s->image_size / (double)t->data_bytes : 0.0);
	printf(", \"compressor\": \"%s\", \"level\": %d, \"block_size\": %u", o->comp->name, o->params.level,
	       o->block_size);
	printf(", \"inodes\": %llu, \"files\": %llu, \"directories\": %llu, \"symlinks\": %llu"
	       ", \"devices\": %llu, \"fifos\": %llu, \"sockets\": %llu, \"hard_linked\": %llu",
	       (unsigned long long)t->inode_count, (unsigned long long)t->file_count,
	       (unsigned long long)t->dir_count, (unsigned long long)t->symlink_count,
	       (unsigned long long)t->device_count, (unsigned long long)t->fifo_count,
	       (unsigned long long)t->socket_count, (unsigned long long)t->hardlinked);
	printf(", \"duplicate_files\": %llu, \"duplicate_bytes\": %llu, \"fragments\": %u, \"ids\": %u"
	       ", \"seconds\": %.3f",
	       (unsigned long long)s->dedup_files, (unsigned long long)s->dedup_bytes, s->fragments, s->ids,
	       progress_seconds());
	if (s->verity_root[0])
		printf(", \"verity_root_hash\": \"%s\"", s->verity_root);
	fputs("}\n", stdout);
}

static void print_ids(const char *what, const struct id_set *s, bool group)
{
	printf("Number of %s %zu\n", what, s->n);
	for (size_t i = 0; i < s->n; i++) {
		const char *name = NULL;

		if (group) {
			struct group *g = getgrgid(s->ids[i]);

			name = g ? g->gr_name : NULL;
		} else {
			struct passwd *pw = getpwuid(s->ids[i]);

			name = pw ? pw->pw_name : NULL;
		}
		printf("\t%s (%u)\n", name ? name : "unknown", s->ids[i]);
	}
}

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const char *how_stored(const struct pack_options *o, uint16_t flags)
{
	return o->uncompressed & flags ? "uncompressed" : "compressed";
}

/* mksquashfs's bar counts blocks: each new regular file's, a partial last one included. */
struct units {
	uint32_t block_size;
	uint64_t n;
};

static int count_units(struct pack_inode *inode, void *arg)
{
	struct units *u = arg;

	if (tree_is_reg(inode) && !inode->stored)
		u->n += (inode->u.file.size + u->block_size - 1) / u->block_size;
	return 0;
}

static uint64_t log_units(struct pack_tree *t, uint32_t block_size)
{
	struct units u = { block_size, 0 };

	tree_walk_files(t->root, count_units, &u);
	return u.n;
}

/* The mksquashfs form's first lines, which build logs look for, as mksquashfs prints them. */
static void print_header(const struct pack_options *o, const struct append_base *base)
{
	printf("Parallel mksquashfs: Using %u processor%s\n", o->jobs, o->jobs == 1 ? "" : "s");
	if (base) {
		printf("Appending to existing 4.0 filesystem on %s, block size %u\n", o->image, base->block_size);
		printf("All -b, -noI, -noD, -noF, -noX, -noId, -no-duplicates, -no-fragments,\n"
		       "-always-use-fragments, -exportable and -comp options ignored\n"
		       "\nIf appending is not wanted, please re-run with -noappend specified!\n\n");
	} else {
		printf("Creating 4.0 filesystem on %s, block size %u.\n", o->image, o->block_size);
	}
	fflush(stdout);
}

/* The mksquashfs form's end-of-run report, laid out as mksquashfs prints it. */
static void print_report(const struct pack_options *o, const struct pack_tree *t, const struct pack_stats *s)
{
	uint64_t raw = t->data_bytes + s->inode_raw + s->dir_raw;
	const struct owners *ow = s->owners;

	printf("\n%sSquashfs 4.0 filesystem, %s compressed, data block size %u\n",
	       o->exportable ? "Exportable " : "", o->comp->name, o->block_size);
	printf("\t%s data, %s metadata, %s fragments,\n\t%s xattrs, %s ids\n", how_stored(o, SQFS_FLAG_UNCOMPRESSED_DATA),
	       how_stored(o, SQFS_FLAG_UNCOMPRESSED_INODES),
	       o->fragments ? how_stored(o, SQFS_FLAG_UNCOMPRESSED_FRAGMENTS) : "no",
	       o->overrides.no_xattrs ? "no" : how_stored(o, SQFS_FLAG_UNCOMPRESSED_XATTRS),
	       how_stored(o, SQFS_FLAG_UNCOMPRESSED_INODES | SQFS_FLAG_UNCOMPRESSED_IDS));
	printf("\tduplicates are %sremoved\n", o->dedup ? "" : "not ");
	printf("Filesystem size %.2f Kbytes (%.2f Mbytes)\n", (double)s->bytes_used / 1024,
	       (double)s->bytes_used / 1048576);
	printf("\t%.2f%% of uncompressed filesystem size (%.2f Kbytes)\n", percent(s->bytes_used, raw),
	       (double)raw / 1024);
	printf("Inode table size %llu bytes (%.2f Kbytes)\n", (unsigned long long)s->inode_bytes,
	       (double)s->inode_bytes / 1024);
	printf("\t%.2f%% of uncompressed inode table size (%llu bytes)\n", percent(s->inode_bytes, s->inode_raw),
	       (unsigned long long)s->inode_raw);
	printf("Directory table size %llu bytes (%.2f Kbytes)\n", (unsigned long long)s->dir_bytes,
	       (double)s->dir_bytes / 1024);
	printf("\t%.2f%% of uncompressed directory table size (%llu bytes)\n", percent(s->dir_bytes, s->dir_raw),
	       (unsigned long long)s->dir_raw);
	if (s->xattr_raw) {
		printf("Xattr table size %llu bytes (%.2f Kbytes)\n", (unsigned long long)s->xattr_bytes,
		       (double)s->xattr_bytes / 1024);
		printf("\t%.2f%% of uncompressed xattr table size (%llu bytes)\n", percent(s->xattr_bytes, s->xattr_raw),
		       (unsigned long long)s->xattr_raw);
	}
	/* mksquashfs counts files it did not look for duplicates of, the empty ones, as duplicates. */
	if (o->dedup)
		printf("Number of duplicate files found %llu\n", (unsigned long long)(s->dedup_files + s->empty_files));
	else
		printf("No duplicate files removed\n");
	printf("Number of inodes %llu\n", (unsigned long long)t->inode_count);
	printf("Number of files %llu\n", (unsigned long long)t->file_count);
	if (o->fragments)
		printf("Number of fragments %u\n", s->fragments);
	printf("Number of symbolic links %llu\n", (unsigned long long)t->symlink_count);
	printf("Number of device nodes %llu\n", (unsigned long long)t->device_count);
	printf("Number of fifo nodes %llu\n", (unsigned long long)t->fifo_count);
	printf("Number of socket nodes %llu\n", (unsigned long long)t->socket_count);
	printf("Number of directories %llu\n", (unsigned long long)t->dir_count);
	printf("Number of hard-links %llu\n", (unsigned long long)t->hardlinked);
	printf("Number of ids (unique uids + gids) %u\n", s->ids);
	if (ow) {
		print_ids("uids", &ow->uids, false);
		print_ids("gids", &ow->gids, true);
	}
}

#define HEAD_MAX (SQFS_SUPER_SIZE + 2 + QS_COMP_OPTIONS_MAX)

/*
 * Everything but the head, which is returned for the sink's finish.
 * Appending, the head is the superblock alone: the old options block is
 * copied with the old data area that follows it.
 */
static int pack_image(const struct pack_options *o, struct pack_tree *t, struct pack_sink *sink, int spool_fd,
		      const char *tmp_dir, const struct append_base *base, uint8_t head[HEAD_MAX],
		      size_t *head_len_out, struct pack_stats *stats)
{
	uint8_t options[QS_COMP_OPTIONS_MAX];
	size_t options_len = base ? 0 : o->comp->write_options(&o->params, options);
	bool has_options = base ? (base->flags & SQFS_FLAG_COMPRESSOR_OPTIONS) != 0 : options_len > 0;
	size_t head_len = super_head_size(options_len);
	struct sqfs_super sb = { 0 };
	uint8_t *frag_table = NULL;
	uint32_t frag_count = 0;
	int err;

	memset(head, 0, HEAD_MAX);
	err = sink_append(sink, head, head_len);
	if (!err && base)
		err = append_copy_data((struct append_base *)base, sink);
	if (!err)
		err = write_data(o, t, sink, spool_fd, base, &sb, &frag_table, &frag_count, stats);
	if (!err)
		err = write_tables(o, t, sink, &sb, frag_table, frag_count, tmp_dir, stats);
	free(frag_table);
	if (err)
		return err;

	stats->fragments = sb.fragment_count;
	stats->ids = sb.id_count;
	sb.magic = SQFS_MAGIC;
	sb.mkfs_time = (uint32_t)(o->mkfs_time >= 0 ? o->mkfs_time : t->newest_mtime);
	sb.block_size = o->block_size;
	sb.compressor = o->comp->id;
	for (sb.block_log = 0; (1u << sb.block_log) < o->block_size; sb.block_log++)
		;
	sb.flags = image_flags(o, &sb, has_options);
	sb.version_major = SQFS_VERSION_MAJOR;
	sb.version_minor = SQFS_VERSION_MINOR;
	sb.bytes_used = sink->written;
	stats->bytes_used = sb.bytes_used;
	err = o->nopad ? 0 : pad_image(sink);
	if (err)
		return err;
	super_encode_head(&sb, options, options_len, head);
	*head_len_out = head_len;
	return 0;
}

/*
 * Appending: the old image's compressor, its options, block size and
 * fragment, duplicate, export and uncompressed settings replace the
 * command line's, as mksquashfs ignores those options when it appends.
 */
static void take_base_settings(struct pack_options *o, const struct append_base *b)
{
	o->comp = b->comp;
	o->params = b->params;
	o->block_size = b->block_size;
	o->pseudo.block_size = b->block_size;
	o->fragments = !(b->flags & SQFS_FLAG_NO_FRAGMENTS);
	o->tail_packing = (b->flags & SQFS_FLAG_ALWAYS_FRAGMENTS) != 0;
	o->dedup = (b->flags & SQFS_FLAG_DUPLICATES) != 0;
	o->exportable = (b->flags & SQFS_FLAG_EXPORTABLE) != 0;
	o->uncompressed = b->flags & UNCOMPRESSED_FLAGS;
}

/*
 * The tree the image is written from: the sources, the pseudo files, the
 * image appended to ('base', or NULL), then the overrides and the root's
 * own settings.
 */
static int build_tree(const struct pack_options *o, struct pack_tree *tree, struct spool *spool,
		      struct append_base *base)
{
	struct pack_overrides finish_overrides = o->overrides;
	int err;

	tree->forced_uid = o->overrides.uid >= 0 ? o->overrides.uid : o->overrides.all_root ? 0 : -1;
	tree->forced_gid = o->overrides.gid >= 0 ? o->overrides.gid : o->overrides.all_root ? 0 : -1;
	err = read_sources(o, tree, spool);
	if (!err && o->pseudo_override) {
		err = tree_force_owners_modes(tree, &o->overrides);
		finish_overrides.all_root = false;
		finish_overrides.uid = finish_overrides.gid = -1;
		finish_overrides.file_mode = finish_overrides.dir_mode = NULL;
		tree->forced_uid = tree->forced_gid = -1;
	}
	if (!err && o->pseudo.count)
		err = pseudo_apply(tree, &o->pseudo, spool);
	if (!err)
		err = spool_flush(spool);     /* the data phase reads it */
	if (!err && base)
		err = append_merge(base, tree, o->root_becomes);
	if (!err)
		err = tree_finish(tree, &finish_overrides);
	/* As mksquashfs: -force-dir-mode, which the root had with every directory, outranks -root-mode. */
	if (!err && o->root_mode >= 0 && !o->overrides.dir_mode)
		tree->root->mode = (tree->root->mode & 0170000) | ((uint32_t)o->root_mode & 07777);
	if (!err && o->root_uid >= 0)
		err = tree_id(tree, (uint32_t)o->root_uid, &tree->root->uid);
	if (!err && o->root_gid >= 0)
		err = tree_id(tree, (uint32_t)o->root_gid, &tree->root->gid);
	if (!err && o->root_time >= 0)
		tree->root->mtime = tree_time(o->root_time);
	return err;
}

/* The tree into the sink, with the progress shown; the sink finished, or aborted on failure. */
static int write_image(const struct pack_options *o, struct pack_tree *tree, const struct spool *spool,
		       struct append_base *base, bool appending, struct pack_stats *stats)
{
	struct pack_sink *sink = NULL;
	uint8_t head[HEAD_MAX];
	size_t head_len = 0;
	int err;

	err = strncmp(o->image, "s3://", 5) == 0 ? sink_s3_open(o->image, o->endpoint, &sink)
						 : sink_file_open(o->image, o->offset, &sink);
	if (err)
		return err;
	if (o->progress_log)
		progress_set_units(log_units(tree, o->block_size));
	progress_start(o->percentage ? PROGRESS_PERCENTAGE : o->progress_log ? PROGRESS_LOG :
		       o->progress ? PROGRESS_BAR : PROGRESS_OFF,
		       tree->data_bytes - base->bytes, tree->file_count - base->files);
	err = pack_image(o, tree, sink, spool->fd, spool->dir, appending ? base : NULL, head, &head_len, stats);
	if (!err)
		progress_done();
	progress_end();
	stats->image_size = sink->written;
	if (!err && o->exit_on_error && pack_warnings()) {
		pack_error("-exit-on-error: %llu warning%s above, so no image is written",
			   (unsigned long long)pack_warnings(), pack_warnings() == 1 ? "" : "s");
		err = -ECANCELED;
	}
	if (err)
		sink->ops->abort(sink);
	else
		err = sink->ops->finish(sink, head, head_len);
	return err;
}

/* --verity: the tree after the finished image, as quash verity format IMAGE appends it. */
static int append_verity(const struct pack_options *o, struct pack_stats *stats)
{
	struct qs_verity_params vp;
	struct qs_verity_geometry vg;
	uint8_t root[QS_VERITY_MAX_DIGEST];
	int err;

	qs_verity_params_init(&vp);
	err = qs_verity_append_file(o->image, &vp, QS_VERITY_DERIVE_SALT | QS_VERITY_DERIVE_UUID | QS_VERITY_AT_END,
				    root, &vg);
	if (err)
		pack_error("%s: %s", o->image, qs_last_error());
	else
		qs_verity_format_hex(root, vg.digest_size, stats->verity_root);
	return err;
}

int pack_run(const struct pack_options *given)
{
	struct pack_options settings = *given;
	const struct pack_options *o = &settings;
	struct append_base base = { 0 };
	bool appending = false;
	struct stat st;
	struct pack_tree tree;
	char *dir = strdup(o->image);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	struct spool spool = { .fd = -1, .dir = "." };
	struct pack_stats stats = { 0 };
	struct spill spill;
	bool is_s3 = strncmp(o->image, "s3://", 5) == 0;
	int err;

	if (!dir)
		return -ENOMEM;
	if (o->append && !is_s3 && stat(o->image, &st) == 0 && S_ISREG(st.st_mode)) {
		/* Read before the sources, so that a DEST that cannot be appended to costs nothing. */
		err = append_open(o->image, &base);
		base.notices = o->report;
		if (err) {
			append_close(&base);
			free(dir);
			return err;
		}
		appending = true;
		take_base_settings(&settings, &base);
	}
	if (o->report && !o->quiet)
		print_header(o, appending ? &base : NULL);
	if (slash)
		*slash = '\0';
	if (is_s3)
		spool.dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	else if (slash && slash != dir)
		spool.dir = dir;
	else if (slash)
		spool.dir = "/";
	progress_start(PROGRESS_OFF, 0, 0);
	err = tree_init(&tree);
	tree.spill = &spill;
	if (spill_init(&spill, o->memory / MEMORY_TREE_SHARE, spool.dir) < 0 && !err)
		err = -EIO;         /* said */
	if (!err)
		err = build_tree(o, &tree, &spool, appending ? &base : NULL);
	if (!err)
		err = write_image(o, &tree, &spool, &base, appending, &stats);
	if (!err && o->verity)
		err = append_verity(o, &stats);
	if (!err && o->json)
		print_summary_json(o, &tree, &stats);
	else if (!err && o->report && !o->quiet)
		print_report(o, &tree, &stats);
	else if (!err && !o->quiet)
		print_summary(&tree, stats.image_size);
	if (!err && stats.verity_root[0] && !o->json)
		printf("Root hash:      \t%s\n", stats.verity_root);
	spool_close(&spool);
	free(stats.owners);
	tree_free(&tree);
	spill_close(&spill);
	append_close(&base);
	free(dir);
	return err;
}

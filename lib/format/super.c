/*
 * super.c - opening an image: the superblock, its checks, the compressor
 * and its options, and loading the small tables every lookup needs.
 *
 * The superblock is the only structure at a fixed place; everything else is
 * reached through the table positions it holds, so they are checked here
 * once (in order, inside bytes_used, inside the source) and later code can
 * rely on them.  A squashfs image written by mksquashfs or squashfs-tools-ng
 * keeps its tables in this order after the data:
 *   inode table < directory table < fragment, export, id, xattr tables.
 */
#include <byteswap.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sif.h"

/* Tags for images sharing a cache: 32 bits, starting at 1 (an image's own cache uses 0). */
static atomic_uint next_cache_tag = 1;

static const char *const compressor_names[] = {
	[SQFS_COMP_GZIP] = "gzip", [SQFS_COMP_LZMA] = "lzma", [SQFS_COMP_LZO] = "lzo",
	[SQFS_COMP_XZ] = "xz", [SQFS_COMP_LZ4] = "lz4", [SQFS_COMP_ZSTD] = "zstd",
};

static int check_table(const struct sqfs_super *sb, const char *what, uint64_t start, int optional)
{
	if (optional && start == SQFS_INVALID_TABLE)
		return 0;
	if (start < SQFS_SUPER_SIZE || start >= sb->bytes_used || start < sb->directory_table_start)
		return qs_set_error(-EINVAL, "bad superblock: %s table at %llu is outside the image", what,
				    (unsigned long long)start);
	return 0;
}

static int check_super(const struct sqfs_super *sb, uint64_t room)
{
	int err;

	/*
	 * Squashfs 1.x-3.x could be written in either byte order (old embedded
	 * firmware is big-endian: "sqsh" on disk); every version keeps the
	 * magic at 0 and the major and minor version at 28 and 30, so an old
	 * image can be named rather than called garbage.
	 */
	if (sb->magic == SQFS_MAGIC_SWAPPED)
		return qs_set_error(-EINVAL, "squashfs %u.%u, big-endian: not supported (only 4.0)",
				    bswap_16(sb->version_major), bswap_16(sb->version_minor));
	if (sb->magic != SQFS_MAGIC)
		return qs_set_error(-EINVAL, "not a squashfs image (bad magic)");
	if (sb->version_major != SQFS_VERSION_MAJOR || sb->version_minor != SQFS_VERSION_MINOR)
		return qs_set_error(-EINVAL, "squashfs %u.%u: not supported (only 4.0)",
				    sb->version_major, sb->version_minor);
	if (sb->block_log < SQFS_BLOCK_LOG_MIN || sb->block_log > SQFS_BLOCK_LOG_MAX ||
	    sb->block_size != 1u << sb->block_log)
		return qs_set_error(-EINVAL, "bad superblock: block size %u (log %u)", sb->block_size,
				    sb->block_log);
	if (sb->bytes_used < SQFS_SUPER_SIZE || sb->bytes_used > room)
		return qs_set_error(-EINVAL, "image is truncated: superblock says %llu bytes, file holds %llu",
				    (unsigned long long)sb->bytes_used, (unsigned long long)room);
	if (sb->inode_count == 0)
		return qs_set_error(-EINVAL, "bad superblock: no inodes");
	if (sb->inode_table_start < SQFS_SUPER_SIZE || sb->inode_table_start >= sb->directory_table_start ||
	    sb->directory_table_start >= sb->bytes_used)
		return qs_set_error(-EINVAL, "bad superblock: inode and directory tables out of order");
	if (sqfs_ref_block(sb->root_inode_ref) >= sb->directory_table_start - sb->inode_table_start)
		return qs_set_error(-EINVAL, "bad superblock: root inode outside the inode table");
	err = check_table(sb, "id", sb->id_table_start, 0);
	if (!err && sb->fragment_count)
		err = check_table(sb, "fragment", sb->fragment_table_start, 0);
	if (!err)
		err = check_table(sb, "export", sb->export_table_start, 1);
	if (!err)
		err = check_table(sb, "xattr", sb->xattr_id_table_start, 1);
	return err;
}

/* The options block is a metadata block right after the superblock. */
static int read_comp_options(struct qs_image *img)
{
	struct qs_block *b;
	int err;

	if (!(img->sb.flags & SQFS_FLAG_COMPRESSOR_OPTIONS))
		return img->comp->options_required ?
		       qs_set_error(-EINVAL, "bad superblock: an %s image without its compressor options",
				    img->comp->name) : 0;
	err = qs_metadata_block(img, SQFS_SUPER_SIZE, &b);
	if (err)
		return err;
	err = img->comp->parse_options(b->data, b->size, &img->comp_opts);
	qs_block_release(img, b);
	if (!err)
		img->comp_opts.present = true;
	return err;
}

static void fill_info(struct qs_image *img, uint64_t offset)
{
	const struct sqfs_super *sb = &img->sb;
	struct qs_info *i = &img->info;

	i->offset = offset;
	i->version_major = sb->version_major;
	i->version_minor = sb->version_minor;
	i->compressor = sb->compressor;
	i->compressor_name = compressor_names[sb->compressor];
	i->block_size = sb->block_size;
	i->block_log = sb->block_log;
	i->flags = sb->flags;
	i->mkfs_time = sb->mkfs_time;
	i->inode_count = sb->inode_count;
	i->fragment_count = sb->fragment_count;
	i->id_count = sb->id_count;
	i->bytes_used = sb->bytes_used;
	i->root_inode_ref = sb->root_inode_ref;
	i->inode_table_start = sb->inode_table_start;
	i->directory_table_start = sb->directory_table_start;
	/* As the superblock says it: -no-fragments images record a start with 0 fragments. */
	i->fragment_table_start = sb->fragment_table_start;
	i->export_table_start = sb->export_table_start;
	i->id_table_start = sb->id_table_start;
	i->xattr_id_table_start = sb->xattr_id_table_start;
}

/*
 * Where the squashfs image starts, and how many bytes from there it may
 * use: the given offset and the rest of the file, or a SIF container's
 * partition, so that a corrupt image never reads into the next object.
 */
static int find_offset(struct qs_source *src, const struct qs_image_options *opt, uint64_t *offset,
		       uint64_t *room)
{
	uint64_t size;
	int r;

	*offset = opt && opt->offset_given ? opt->offset : 0;
	if (*offset > src->size)
		return qs_set_error(-EINVAL, "offset %llu is past the end of the file (%llu bytes)",
				    (unsigned long long)*offset, (unsigned long long)src->size);
	*room = src->size - *offset;
	if (opt && opt->offset_given)
		return 0;
	r = qs_sif_find_squashfs(src, offset, &size);
	if (r < 0)
		return r;
	if (r > 0) {
		if (*offset > src->size || size > src->size - *offset)
			return qs_set_error(-EINVAL, "SIF partition lies outside the file");
		*room = size;
	}
	return 0;
}

static int load_tables(struct qs_image *img)
{
	struct qs_inode root;
	int err;

	err = read_comp_options(img);
	if (!err)
		err = qs_id_table_load(img);
	if (!err)
		err = qs_fragment_table_load(img);
	if (!err)
		err = qs_export_table_load(img);
	if (!err)
		err = qs_xattr_table_load(img);
	if (!err)
		err = qs_inode_root(img, &root);
	if (!err && root.type != QS_DIR)
		err = qs_set_error(-EINVAL, "bad superblock: the root inode is not a directory");
	return err;
}

int qs_image_open(struct qs_source *src, const struct qs_image_options *opt, struct qs_image **out)
{
	uint8_t raw[SQFS_SUPER_SIZE];
	struct qs_image *img;
	uint64_t offset = 0, room = 0;
	int err;

	*out = NULL;
	err = find_offset(src, opt, &offset, &room);
	if (err)
		goto fail_src;
	if (room < SQFS_SUPER_SIZE) {
		if (offset)
			err = qs_set_error(-EINVAL, "too small to be a squashfs image (%llu bytes after offset %llu)",
					   (unsigned long long)room, (unsigned long long)offset);
		else
			err = qs_set_error(-EINVAL, "too small to be a squashfs image (%llu bytes)",
					   (unsigned long long)room);
		goto fail_src;
	}
	err = qs_source_pread(src, raw, sizeof(raw), offset);
	if (err)
		goto fail_src;

	img = calloc(1, sizeof(*img));
	if (!img) {
		err = qs_set_error(-ENOMEM, "out of memory");
		goto fail_src;
	}
	img->src = src;
	sqfs_super_decode(&img->sb, raw);
	err = check_super(&img->sb, room);
	if (err)
		goto fail;
	img->comp = qs_compressor_by_id(img->sb.compressor);
	if (!img->comp) {
		err = qs_set_error(-EINVAL, "unknown compressor id %u", img->sb.compressor);
		goto fail;
	}
	fill_info(img, offset);
	/* All metadata lies between the inode table and the end: one hint brings it all. */
	qs_source_prefetch(src, offset + img->sb.inode_table_start,
			   img->sb.bytes_used - img->sb.inode_table_start);
	if (opt && opt->cache) {
		img->cache = opt->cache;
		img->cache_tag = (uint64_t)atomic_fetch_add(&next_cache_tag, 1) << 32;
	} else {
		img->cache = qs_cache_create(opt && opt->cache_bytes ? opt->cache_bytes : QS_DEFAULT_CACHE_BYTES);
		img->own_cache = true;
	}
	if (!img->cache || !qs_zero_block()) {
		err = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	err = load_tables(img);
	if (err)
		goto fail;
	img->info.comp = img->comp_opts;
	img->info.xattr_id_count = img->xattr_table.count;
	qs_warm_start(img);
	*out = img;
	return 0;

fail:
	qs_image_close(img);
	return err;
fail_src:
	qs_source_close(src);
	return err;
}

void qs_image_close(struct qs_image *img)
{
	if (!img)
		return;
	qs_warm_stop(img);
	if (img->own_cache)
		qs_cache_destroy(img->cache);
	qs_source_close(img->src);
	free(img->ids);
	free(img->fragment_index);
	free(img->export_index);
	free(img->xattr_index);
	free(img);
}

struct qs_source *qs_image_source(const struct qs_image *img)
{
	return img->src;
}

const struct qs_info *qs_image_info(const struct qs_image *img)
{
	return &img->info;
}

void qs_image_cache_stats(struct qs_image *img, struct qs_cache_stats *out)
{
	qs_cache_stats(img->cache, out);
	out->ahead = __atomic_load_n(&img->warmed, __ATOMIC_RELAXED);
}

/*
 * sif.c - the Singularity Image Format, just enough to find the squashfs
 * partition that holds a container's root filesystem.
 *
 * A SIF file starts with a 128-byte global header (a launch script line,
 * "SIF_MAGIC", a version, an architecture, a UUID, timestamps and where the
 * descriptor table lies), then a table of fixed-size object descriptors,
 * then the objects.  All integers are little-endian and nothing is padded:
 * the Go reference (pkg/sif in sylabs/sif) reads the structures with
 * encoding/binary, so a bool is one byte and fields follow each other.
 *
 * Everything here comes from a stranger's file: the descriptor count is
 * bounded, and every offset is checked against the source's size before use.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "quash.h"
#include "sif.h"
#include "squashfs_fs.h"

/* Global header. */
#define SIF_HEADER_SIZE		128
#define SIF_MAGIC_OFFSET	32
#define SIF_MAGIC		"SIF_MAGIC"	/* NUL-terminated in its 10-byte field */
#define SIF_MAGIC_LEN		10
#define SIF_VERSION_OFFSET	42
#define SIF_VERSION		"01"		/* NUL-terminated in its 3-byte field */
#define SIF_VERSION_LEN		3
#define SIF_DESCR_TOTAL_OFFSET	88
#define SIF_DESCR_START_OFFSET	96
#define SIF_DESCR_SIZE_OFFSET	104

/* One object descriptor. */
#define SIF_DESCR_SIZE		585
#define SIF_D_DATATYPE		0	/* s32 */
#define SIF_D_USED		4	/* bool, one byte */
#define SIF_D_OFFSET		17	/* s64 */
#define SIF_D_SIZE		25	/* s64 */
#define SIF_D_EXTRA		201	/* type-specific: for a partition, fstype s32, parttype s32, arch */

#define SIF_DATA_PARTITION	0x4004
#define SIF_FS_SQUASHFS		1
#define SIF_PART_PRIMARY_SYSTEM	2

/* siftool makes 48 descriptors; no real image has anywhere near this many. */
#define SIF_DESCRIPTORS_MAX	4096u
/* Descriptors read per pread, to bound memory and round trips to remote sources. */
#define SIF_DESCRIPTOR_BATCH	64u

static const char *const fs_type_names[] = {
	[1] = "squashfs", [2] = "ext3", [3] = "an immutable object archive", [4] = "raw data",
	[5] = "encrypted squashfs",
};

struct sif_partition {
	bool found;
	bool primary;		/* marked as the primary system partition */
	int64_t offset, size;
	int32_t fs_type;
};

static int sif_read(struct qs_source *src, void *buf, size_t len, uint64_t off, const char *what)
{
	if (off > src->size || len > src->size - off)
		return qs_set_error(-EINVAL, "SIF: %s (%zu bytes at %llu) lies past the end of the file",
				    what, len, (unsigned long long)off);
	return qs_source_pread(src, buf, len, off);
}

static bool is_sif_header(const uint8_t *h)
{
	return memcmp(h + SIF_MAGIC_OFFSET, SIF_MAGIC, SIF_MAGIC_LEN) == 0;
}

/* Keep the primary system partition, or else the first partition of all. */
static void consider_descriptor(const uint8_t *d, struct sif_partition *best)
{
	int32_t part_type = (int32_t)sqfs_le32(d + SIF_D_EXTRA + 4);
	bool primary = part_type == SIF_PART_PRIMARY_SYSTEM;

	if (!d[SIF_D_USED] || (int32_t)sqfs_le32(d + SIF_D_DATATYPE) != SIF_DATA_PARTITION)
		return;
	if (best->found && (best->primary || !primary))
		return;
	best->found = true;
	best->primary = primary;
	best->offset = (int64_t)sqfs_le64(d + SIF_D_OFFSET);
	best->size = (int64_t)sqfs_le64(d + SIF_D_SIZE);
	best->fs_type = (int32_t)sqfs_le32(d + SIF_D_EXTRA);
}

static int find_partition(struct qs_source *src, uint64_t table, uint32_t count, struct sif_partition *best)
{
	uint8_t *buf = malloc(SIF_DESCRIPTOR_BATCH * SIF_DESCR_SIZE);
	int err = 0;

	if (!buf)
		return qs_set_error(-ENOMEM, "out of memory");
	for (uint32_t i = 0; i < count && !err; i += SIF_DESCRIPTOR_BATCH) {
		uint32_t n = count - i < SIF_DESCRIPTOR_BATCH ? count - i : SIF_DESCRIPTOR_BATCH;

		err = sif_read(src, buf, (size_t)n * SIF_DESCR_SIZE, table + (uint64_t)i * SIF_DESCR_SIZE,
			       "descriptor table");
		for (uint32_t k = 0; k < n && !err; k++)
			consider_descriptor(buf + (size_t)k * SIF_DESCR_SIZE, best);
	}
	free(buf);
	return err;
}

static const char *fs_type_name(int32_t t)
{
	if (t > 0 && (size_t)t < sizeof(fs_type_names) / sizeof(fs_type_names[0]))
		return fs_type_names[t];
	return "of an unknown type";
}

static int check_partition(struct qs_source *src, const struct sif_partition *p)
{
	uint8_t magic[4];
	int err;

	if (!p->found)
		return qs_set_error(-EINVAL, "SIF: the container has no partition");
	if (p->fs_type != SIF_FS_SQUASHFS)
		return qs_set_error(-ENOTSUP, "SIF: the system partition is %s, not squashfs",
				    fs_type_name(p->fs_type));
	if (p->offset < 0 || p->size < SQFS_SUPER_SIZE || (uint64_t)p->offset > src->size ||
	    (uint64_t)p->size > src->size - (uint64_t)p->offset)
		return qs_set_error(-EINVAL, "SIF: partition at %lld (%lld bytes) lies outside the file",
				    (long long)p->offset, (long long)p->size);
	err = qs_source_pread(src, magic, sizeof(magic), (uint64_t)p->offset);
	if (err)
		return err;
	if (sqfs_le32(magic) != SQFS_MAGIC)
		return qs_set_error(-EINVAL, "SIF: the squashfs partition at %lld has no squashfs superblock",
				    (long long)p->offset);
	return 0;
}

int qs_sif_find_squashfs(struct qs_source *src, uint64_t *offset, uint64_t *size)
{
	struct sif_partition best = { 0 };
	uint8_t h[SIF_HEADER_SIZE];
	int64_t total, table, table_size;
	int err;

	if (src->size < SIF_HEADER_SIZE)
		return 0;
	err = qs_source_pread(src, h, sizeof(h), 0);
	if (err)
		return err;
	if (!is_sif_header(h))
		return 0;

	if (memcmp(h + SIF_VERSION_OFFSET, SIF_VERSION, SIF_VERSION_LEN) != 0)
		return qs_set_error(-ENOTSUP, "SIF: unsupported version (only %s is known)", SIF_VERSION);
	total = (int64_t)sqfs_le64(h + SIF_DESCR_TOTAL_OFFSET);
	table = (int64_t)sqfs_le64(h + SIF_DESCR_START_OFFSET);
	table_size = (int64_t)sqfs_le64(h + SIF_DESCR_SIZE_OFFSET);
	if (total < 0 || total > SIF_DESCRIPTORS_MAX)
		return qs_set_error(-EINVAL, "SIF: %lld descriptors (at most %u are accepted)",
				    (long long)total, SIF_DESCRIPTORS_MAX);
	if (table < 0 || table_size < total * SIF_DESCR_SIZE)
		return qs_set_error(-EINVAL, "SIF: descriptor table at %lld of %lld bytes cannot hold %lld "
				    "descriptors", (long long)table, (long long)table_size, (long long)total);

	err = find_partition(src, (uint64_t)table, (uint32_t)total, &best);
	if (!err)
		err = check_partition(src, &best);
	if (err)
		return err;
	*offset = (uint64_t)best.offset;
	*size = (uint64_t)best.size;
	return 1;
}

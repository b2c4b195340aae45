/*
 * open_verified.c - the verity options of struct qs_source_options turned
 * into a verifying source: where the tree is, its parameters from its
 * superblock, the root hash from the command line.
 */
#include <errno.h>
#include <string.h>

#include "quash.h"
#include "verity.h"

#define SQUASHFS_MAGIC 0x73717368u
#define SQUASHFS_BYTES_USED_AT 40

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * The end of the squashfs image at 'offset' of src: after it an appended
 * tree's superblock is looked for.
 */
static int image_end(struct qs_source *src, uint64_t offset, uint64_t *end)
{
	uint8_t sb[48];
	int ret;

	if (offset > src->size || src->size - offset < sizeof(sb))
		return qs_set_error(-EINVAL, "verity: no squashfs image at offset %llu to find an appended tree "
				    "after (give the tree's offset or file)", (unsigned long long)offset);
	ret = qs_source_pread(src, sb, sizeof(sb), offset);
	if (ret < 0)
		return ret;
	if ((uint32_t)(sb[0] | sb[1] << 8 | sb[2] << 16 | (uint32_t)sb[3] << 24) != SQUASHFS_MAGIC)
		return qs_set_error(-EINVAL, "verity: no squashfs image at offset %llu to find an appended tree "
				    "after (give the tree's offset or file)", (unsigned long long)offset);
	*end = offset + le64(sb + SQUASHFS_BYTES_USED_AT);
	return 0;
}

int qs_source_open_verified(struct qs_source *src, struct qs_source *tree, const struct qs_source_options *opt,
			    struct qs_source **out)
{
	struct qs_verity_params p;
	uint8_t root[QS_VERITY_MAX_DIGEST];
	struct qs_source *hash = tree ? tree : src;
	uint64_t end = 0;
	int len, ret;

	if (!opt->verity_root) {
		ret = qs_set_error(-EINVAL, "verity: a tree file or offset is given without the root hash");
		goto fail;
	}
	len = qs_verity_parse_hex(opt->verity_root, root, sizeof(root));
	if (len <= 0) {
		ret = qs_set_error(-EINVAL, "verity: root hash '%.140s' is not a hash in hex", opt->verity_root);
		goto fail;
	}
	qs_verity_params_init(&p);
	if (tree) {
		ret = qs_verity_read_superblock(tree, opt->verity_offset_given ? opt->verity_offset : 0, &p);
	} else if (opt->verity_offset_given) {
		ret = qs_verity_read_superblock(src, opt->verity_offset, &p);
	} else {
		ret = image_end(src, opt->image_offset_given ? opt->image_offset : 0, &end);
		if (ret == 0)
			ret = qs_verity_find_appended(src, end, &p);
	}
	if (ret < 0)
		goto fail;
	return qs_source_open_verity(src, hash, &p, root, (size_t)len, out);
fail:
	if (hash != src)
		qs_source_close(hash);
	qs_source_close(src);
	return ret;
}

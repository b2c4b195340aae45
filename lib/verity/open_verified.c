/*
 * open_verified.c - the verity options of struct qs_source_options turned
 * into a verifying source: where the tree is, its parameters from its
 * superblock, the root hash from the command line and, when one is given,
 * its signature checked against the admin's certificates.
 */
#include <errno.h>
#include <string.h>

#include "quash.h"
#include "squashfs_fs.h"
#include "verity.h"

int qs_verity_image_end(struct qs_source *src, uint64_t offset, uint64_t *end)
{
	uint8_t buf[SQFS_SUPER_SIZE];
	struct sqfs_super sb;
	int ret;

	if (offset > src->size || src->size - offset < sizeof(buf))
		return qs_set_error(-EINVAL, "verity: no squashfs image at offset %llu to find an appended tree "
				    "after (give the tree's offset or file)", (unsigned long long)offset);
	ret = qs_source_pread(src, buf, sizeof(buf), offset);
	if (ret < 0)
		return ret;
	sqfs_super_decode(&sb, buf);
	if (sb.magic != SQFS_MAGIC)
		return qs_set_error(-EINVAL, "verity: no squashfs image at offset %llu to find an appended tree "
				    "after (give the tree's offset or file)", (unsigned long long)offset);
	*end = offset + sb.bytes_used;
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
		ret = qs_set_error(-EINVAL, "verity: a %s is given without the root hash",
				   opt->verity_sig || opt->verity_cert ? "root hash signature or certificate"
				   : "tree file or offset");
		goto fail;
	}
	len = qs_verity_parse_hex(opt->verity_root, root, sizeof(root));
	if (len <= 0) {
		ret = qs_set_error(-EINVAL, "verity: root hash '%.140s' is not a hash in hex", opt->verity_root);
		goto fail;
	}
	/* A signed root hash is checked before any byte of the image or tree is read. */
	if (!opt->verity_sig != !opt->verity_cert) {
		ret = opt->verity_sig ? qs_set_error(-EINVAL, "verity: root hash signature %.200s is given without "
						     "a certificate to check it against", opt->verity_sig)
				      : qs_set_error(-EINVAL, "verity: certificate %.200s is given without a root "
						     "hash signature to check", opt->verity_cert);
		goto fail;
	}
	if (opt->verity_sig &&
	    (ret = qs_verity_check_signature_files(opt->verity_sig, opt->verity_cert, root, (size_t)len)) < 0)
		goto fail;
	qs_verity_params_init(&p);
	if (tree) {
		ret = qs_verity_read_superblock(tree, opt->verity_offset_given ? opt->verity_offset : 0, &p);
	} else if (opt->verity_offset_given) {
		ret = qs_verity_read_superblock(src, opt->verity_offset, &p);
	} else {
		ret = qs_verity_image_end(src, opt->image_offset_given ? opt->image_offset : 0, &end);
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

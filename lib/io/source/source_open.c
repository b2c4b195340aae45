/*
 * source_open.c - qs_source_open(): choosing an implementation from the name
 * the user gave (a local file, or HTTP(S) and S3 through remote/), and
 * putting the profile wrapper (profile/) over it when asked to record or
 * replay.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "profile.h"
#include "verity.h"
#include "quash.h"
#include "source_remote.h"

/*
 * "ftp://host/x" that is no local file: a URL of a scheme quash does not
 * speak, said as such rather than as a missing file.
 */
static bool unknown_scheme(const char *spec)
{
	size_t n = strspn(spec, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");

	return n > 0 && isalpha((unsigned char)spec[0]) && strncmp(spec + n, "://", 3) == 0;
}

/* The image's source wrapped in a verifying one (lib/verity/), its tree file opened here: 0 or -errno. */
static int open_verified(struct qs_source *src, const struct qs_source_options *opt, struct qs_source **out)
{
	struct qs_source_options tree_opt = *opt;
	struct qs_source *tree = NULL;
	int ret;

	if (opt->verity_file) {
		/* The tree file is fetched as the image is, but verifies nothing itself and records no profile. */
		tree_opt.verity_root = tree_opt.verity_file = tree_opt.verity_sig = tree_opt.verity_cert = NULL;
		tree_opt.verity_offset_given = false;
		tree_opt.record = tree_opt.prefetch = NULL;
		tree_opt.prefetch_beside = false;
		ret = qs_source_open(opt->verity_file, &tree_opt, &tree);
		if (ret < 0) {
			qs_source_close(src);
			return ret;
		}
	}
	return qs_source_open_verified(src, tree, opt, out);
}

int qs_source_open(const char *spec, const struct qs_source_options *opt, struct qs_source **out)
{
	struct qs_source *src;
	int ret;

	if (qs_source_spec_is_remote(spec)) {
		/* libcurl is opened only now (lazy_lib.h): say so if it cannot be. */
		if (qs_curl_load() < 0)
			return qs_set_error(-ENOSYS, "%s", qs_curl_error());
		ret = qs_source_open_remote(spec, opt, &src);
	} else {
		ret = qs_source_open_file(spec, &src);
		if (ret == -ENOENT && unknown_scheme(spec))
			return qs_set_error(-EPROTONOSUPPORT, "unsupported URL scheme '%.*s' (http, https and s3 are)",
					    (int)strcspn(spec, ":"), spec);
	}
	if (ret < 0)
		return ret;
	/*
	 * Verification sits above the remote chunk cache, so nothing unverified
	 * reaches a reader, and has it check each chunk as it arrives.  The
	 * root hash: the caller's (the command line, a catalog's index), else
	 * the one the object's own metadata names (docs/SECURITY.md).
	 */
	if (opt && (opt->verity_root || opt->verity_file || opt->verity_offset_given || opt->verity_sig ||
		    opt->verity_cert)) {
		ret = open_verified(src, opt, &src);
	} else if (src->verity_root) {
		struct qs_source_options vo = opt ? *opt : (struct qs_source_options){ 0 };
		uint8_t root[QS_VERITY_MAX_DIGEST];

		vo.verity_root = src->verity_root;
		if (qs_verity_parse_hex(src->verity_root, root, sizeof(root)) <= 0) {
			ret = qs_set_error(-EINVAL, "object metadata verity-roothash '%s' is not a hash in hex",
					   src->verity_root);
			qs_source_close(src);
			return ret;
		}
		ret = open_verified(src, &vo, &src);
	}
	if (ret < 0)
		return ret;
	/* Recording and replaying profiles wrap whatever was opened (profile.c). */
	if (opt && (opt->record || opt->prefetch || opt->prefetch_beside))
		return qs_source_open_profiled(src, spec, opt, out);
	*out = src;
	return 0;
}

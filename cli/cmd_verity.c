/*
 * cmd_verity.c - quash verity format and quash verity verify: a dm-verity
 * hash tree for an image, written and checked as veritysetup does it (the
 * same options where they overlap, the same header block), through
 * lib/verity.  verify reads the image through the verifying source, so it
 * checks exactly what a verified mount would, local or remote.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "size.h"
#include "verity/verity.h"

/*
 * Bytes read per request while verifying: a local file's pieces stay in the
 * CPU's cache between the copy out of the page cache and the hash; a
 * remote image's are few requests.
 */
#define VERIFY_CHUNK_LOCAL (64u << 10)
#define VERIFY_CHUNK_REMOTE (4u << 20)
/* Readers at most: hashing is what they share out. */
#define VERIFY_THREADS 4

static int verity_run(int argc, char **argv);

const struct cli_command cmd_verity = {
	.name = "verity",
	.usage = "quash verity format [OPTIONS] IMAGE [HASHFILE]\n"
		 "       quash verity verify [OPTIONS] IMAGE [HASHFILE] ROOTHASH",
	.summary = "add a dm-verity hash tree to an image, or check an image against one",
	.help =
		"format computes the tree of IMAGE (any squashfs writer's, or any file) and\n"
		"writes it to HASHFILE, or appends it to IMAGE when there is no HASHFILE, and\n"
		"prints its parameters and root hash as veritysetup format does.  verify reads\n"
		"all of IMAGE (a path, an http(s):// URL or s3://BUCKET/KEY) and checks every\n"
		"block up to ROOTHASH.  The format is veritysetup's: either tool reads the\n"
		"other's trees.\n"
		"\n"
		"Options (veritysetup's spelling):\n"
		"      --hash NAME       sha1, sha224, sha256 (default), sha384 or sha512\n"
		"      --data-block-size N  bytes per data block, 512 to 524288 (default 4096)\n"
		"      --hash-block-size N  bytes per hash block, 512 to 524288 (default 4096)\n"
		"      --data-blocks N   cover only the first N data blocks\n"
		"      --hash-offset N   where the tree (its superblock) starts in HASHFILE, or in\n"
		"                        IMAGE when appended (default: after the image's end,\n"
		"                        rounded up to 4 KiB)\n"
		"  -s, --salt HEX        the salt, or - for none (default: the SHA-256 of the\n"
		"                        first data block, so that format is reproducible)\n"
		"      --no-superblock   no verity superblock: verify must then be given the\n"
		"                        same options format was\n"
		"      --uuid UUID       the superblock's UUID (default: from the root hash)\n"
		"      --format 1        the hash type (only 1, the normal one)\n"
		"      --root-hash-file FILE  format writes the root hash to FILE; verify reads it\n"
		"                        from there instead of ROOTHASH\n"
		"      --root-hash-signature FILE  verify: FILE is a PKCS#7 signature (DER) of\n"
		"                        the root hash, as veritysetup open takes it; it must\n"
		"                        be signed by a certificate in --cert before any block\n"
		"                        is read\n"
		"      --cert FILE       the certificates (PEM, or one DER) the signature must\n"
		"                        come from or chain to (where the kernel uses its keyring)\n"
		"  -j, --json            print the parameters and root hash as JSON\n"
		"      --endpoint URL    S3 endpoint for s3:// images (else AWS_ENDPOINT_URL)\n"
		"      --region NAME     S3 region (else AWS_REGION or AWS_DEFAULT_REGION)\n"
		"      --cache-dir DIR   keep fetched parts of remote images in DIR\n"
		"      --cache-dir-limit SIZE  bound on DIR (suffix K, M or G)\n"
		"      --retry-seconds N  give up a remote request after N seconds in all\n"
		"      --proxy URL       send remote requests through this HTTP proxy\n"
		"      --fallback URL    the same image elsewhere, read while the first does not\n"
		"                        answer\n"
		"  -h, --help            show this help and exit\n"
		"  -V, --version         show the version and exit\n"
		"\n"
		"Exit status:\n"
		"  0  success: the tree is written, or every block matches ROOTHASH\n"
		"  1  a block or tree block does not match, the root hash signature does not\n"
		"     check out, or the image or tree is unreadable, too short or has an\n"
		"     unsupported superblock, or output failed\n"
		"  2  the command line is wrong (a root hash that is not hex of the right\n"
		"     length, an unsupported --hash, a bad size)\n",
	.run = verity_run,
};

enum {
	OPT_HASH = 512, OPT_DATA_BLOCK_SIZE, OPT_HASH_BLOCK_SIZE, OPT_DATA_BLOCKS, OPT_HASH_OFFSET,
	OPT_NO_SUPERBLOCK, OPT_UUID, OPT_FORMAT, OPT_ROOT_HASH_FILE, OPT_ROOT_HASH_SIGNATURE, OPT_CERT,
};

struct verity_cli {
	struct cli_common co;
	struct qs_verity_params p;
	bool json, salt_given, uuid_given, offset_given, blocks_given;
	bool verified;          /* verify read every block: --json says so */
	const char *root_hash_file;
	const char *signature, *cert;   /* --root-hash-signature, --cert */
	const char *image, *hashfile, *roothash;
};

static int parse_u32_block(const char *arg, const char *what, uint32_t *out)
{
	uint64_t v;

	if (size_parse(arg, &v) || v > UINT32_MAX)
		return cli_usage(&cmd_verity, "invalid %s '%s'", what, arg);
	*out = (uint32_t)v;
	return CLI_CONTINUE;
}

static int parse_options(struct verity_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "hash", required_argument, NULL, OPT_HASH },
		{ "data-block-size", required_argument, NULL, OPT_DATA_BLOCK_SIZE },
		{ "hash-block-size", required_argument, NULL, OPT_HASH_BLOCK_SIZE },
		{ "data-blocks", required_argument, NULL, OPT_DATA_BLOCKS },
		{ "hash-offset", required_argument, NULL, OPT_HASH_OFFSET },
		{ "salt", required_argument, NULL, 's' },
		{ "no-superblock", no_argument, NULL, OPT_NO_SUPERBLOCK },
		{ "uuid", required_argument, NULL, OPT_UUID },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "root-hash-file", required_argument, NULL, OPT_ROOT_HASH_FILE },
		{ "root-hash-signature", required_argument, NULL, OPT_ROOT_HASH_SIGNATURE },
		{ "cert", required_argument, NULL, OPT_CERT },
		{ "json", no_argument, NULL, 'j' },
		CLI_REMOTE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int opt, st = CLI_CONTINUE, n;

	while (st == CLI_CONTINUE && (opt = getopt_long(argc, argv, "s:jhV", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_HASH:
			if (qs_verity_set_hash(&c->p, optarg) < 0)
				st = cli_usage(&cmd_verity, "%s", qs_last_error());
			break;
		case OPT_DATA_BLOCK_SIZE:
			st = parse_u32_block(optarg, "data block size", &c->p.data_block_size);
			break;
		case OPT_HASH_BLOCK_SIZE:
			st = parse_u32_block(optarg, "hash block size", &c->p.hash_block_size);
			break;
		case OPT_DATA_BLOCKS:
			if (size_parse(optarg, &c->p.data_blocks) || c->p.data_blocks == 0)
				st = cli_usage(&cmd_verity, "invalid number of data blocks '%s'", optarg);
			c->blocks_given = true;
			break;
		case OPT_HASH_OFFSET:
			if (size_parse(optarg, &c->p.hash_offset))
				st = cli_usage(&cmd_verity, "invalid hash offset '%s'", optarg);
			c->offset_given = true;
			break;
		case 's':
			n = qs_verity_parse_hex(optarg, c->p.salt, QS_VERITY_MAX_SALT);
			if (n < 0)
				st = cli_usage(&cmd_verity, "salt '%s' is not hex of at most 256 bytes, or -", optarg);
			c->p.salt_size = (uint16_t)(n < 0 ? 0 : n);
			c->salt_given = true;
			break;
		case OPT_NO_SUPERBLOCK:
			c->p.no_superblock = true;
			break;
		case OPT_UUID:
			if (qs_verity_parse_uuid(optarg, c->p.uuid) < 0)
				st = cli_usage(&cmd_verity, "invalid UUID '%s'", optarg);
			c->uuid_given = true;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "1") != 0)
				st = cli_usage(&cmd_verity, "hash type '%s' is not supported (1 is)", optarg);
			break;
		case OPT_ROOT_HASH_FILE:
			c->root_hash_file = optarg;
			break;
		case OPT_ROOT_HASH_SIGNATURE:
			c->signature = optarg;
			break;
		case OPT_CERT:
			c->cert = optarg;
			break;
		case 'j':
			c->json = true;
			break;
		default:
			st = cli_common_option(&c->co, opt, optarg);
			break;
		}
	}
	if (st != CLI_CONTINUE)
		return st;
	if (!c->signature != !c->cert)
		return cli_usage(&cmd_verity, c->signature ? "--root-hash-signature needs --cert to check it against"
							   : "--cert is given without --root-hash-signature");
	/* The block sizes and offset on their own, before any file is touched. */
	if (qs_verity_check_params(&c->p) < 0)
		return cli_usage(&cmd_verity, "%s", qs_last_error());
	return CLI_CONTINUE;
}

/* The squashfs image's bytes_used, or 0 when IMAGE does not start with a squashfs superblock. */
static uint64_t squashfs_bytes_used(struct qs_source *src)
{
	uint64_t end;

	return qs_verity_image_end(src, 0, &end) == 0 ? end : 0;
}

static void print_header(const struct verity_cli *c, const char *hashdev, const struct qs_verity_geometry *g,
			 const uint8_t *root)
{
	char hex[2 * QS_VERITY_MAX_SALT + 1], uuid[37] = "";

	if (c->json) {
		fputs("{\n  \"image\": ", stdout);
		json_print_string(stdout, c->image);
		fputs(",\n  \"hash_file\": ", stdout);
		json_print_string(stdout, hashdev);
		qs_verity_format_hex(root, g->digest_size, hex);
		printf(",\n  \"root_hash\": \"%s\",\n", hex);
		printf("  \"hash_algorithm\": \"%s\",\n  \"hash_type\": %u,\n", c->p.hash_name, c->p.hash_type);
		qs_verity_format_hex(c->p.salt, c->p.salt_size, hex);
		printf("  \"salt\": \"%s\",\n", hex);
		printf("  \"data_block_size\": %u,\n  \"hash_block_size\": %u,\n", c->p.data_block_size,
		       c->p.hash_block_size);
		printf("  \"data_blocks\": %llu,\n  \"hash_blocks\": %llu,\n", (unsigned long long)g->data_blocks,
		       (unsigned long long)g->hash_blocks);
		printf("  \"hash_offset\": %llu,\n  \"tree_offset\": %llu,\n  \"hash_end\": %llu,\n",
		       (unsigned long long)c->p.hash_offset, (unsigned long long)g->tree_offset,
		       (unsigned long long)g->hash_end);
		printf("  \"superblock\": %s,\n", c->p.no_superblock ? "false" : "true");
		if (c->verified)
			fputs("  \"verified\": true,\n", stdout);
		if (c->p.no_superblock) {
			fputs("  \"uuid\": null\n}\n", stdout);
		} else {
			qs_verity_format_uuid(c->p.uuid, uuid);
			printf("  \"uuid\": \"%s\"\n}\n", uuid);
		}
		return;
	}
	/* veritysetup 2.6's crypt_dump() for a verity device, line for line. */
	if (!c->p.no_superblock)
		qs_verity_format_uuid(c->p.uuid, uuid);
	printf("VERITY header information for %s\n", hashdev);
	printf("UUID:            \t%s\n", uuid);
	printf("Hash type:       \t%u\n", c->p.hash_type);
	printf("Data blocks:     \t%llu\n", (unsigned long long)g->data_blocks);
	printf("Data block size: \t%u\n", c->p.data_block_size);
	printf("Hash blocks:     \t%llu\n", (unsigned long long)g->hash_blocks);
	printf("Hash block size: \t%u\n", c->p.hash_block_size);
	printf("Hash algorithm:  \t%s\n", c->p.hash_name);
	if (c->p.salt_size) {
		qs_verity_format_hex(c->p.salt, c->p.salt_size, hex);
		printf("Salt:            \t%s\n", hex);
	} else {
		printf("Salt:            \t-\n");
	}
	qs_verity_format_hex(root, g->digest_size, hex);
	printf("Root hash:      \t%s\n", hex);
	if (c->p.hash_offset == 0)
		printf("Hash device size: \t%llu [bytes]\n", (unsigned long long)g->hash_end);
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int write_root_hash_file(const char *path, const uint8_t *root, unsigned len)
{
	char hex[2 * QS_VERITY_MAX_DIGEST + 1];
	FILE *f = fopen(path, "w");

	qs_verity_format_hex(root, len, hex);
	if (!f || fputs(hex, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "quash: %s: cannot write the root hash: %s\n", path, strerror(errno));
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
}

static int do_format(struct verity_cli *c)
{
	const char *hashdev = c->hashfile ? c->hashfile : c->image;
	bool appended = !c->hashfile || same_file(c->image, c->hashfile);
	struct qs_verity_geometry g;
	struct qs_source *src = NULL;
	uint8_t root[QS_VERITY_MAX_DIGEST], sb[QS_VERITY_SB_SIZE];
	int fd = -1, ret = CLI_EXIT_ERROR;

	if (appended) {
		unsigned flags = (c->salt_given ? 0 : QS_VERITY_DERIVE_SALT) | (c->uuid_given ? 0 : QS_VERITY_DERIVE_UUID) |
				 (c->offset_given ? 0 : QS_VERITY_AT_END);

		if (qs_source_spec_is_remote(c->image)) {
			cli_error(c->image, NULL, "verity: appending a tree needs a local file; give HASHFILE");
			return CLI_EXIT_ERROR;
		}
		if (qs_verity_append_file(c->image, &c->p, flags, root, &g) < 0) {
			cli_error(c->image, NULL, "%s", qs_last_error());
			return CLI_EXIT_ERROR;
		}
	} else {
		/* A tree file of its own is emptied first, unless it is placed at an offset in a larger file. */
		fd = open(c->hashfile, O_WRONLY | O_CREAT | O_CLOEXEC | (c->offset_given ? 0 : O_TRUNC), 0644);
		if (fd < 0) {
			cli_error(c->hashfile, NULL, "%s", strerror(errno));
			return CLI_EXIT_ERROR;
		}
		if (qs_source_open(c->image, &c->co.source, &src) < 0) {
			cli_error(c->image, NULL, "%s", qs_last_error());
			goto out;
		}
		if (!c->blocks_given)
			c->p.data_blocks = qs_verity_data_blocks_for(&c->p, src->size);
		if (c->p.data_blocks == 0) {
			cli_error(c->image, NULL, "verity: the image is empty");
			goto out;
		}
		if (!c->salt_given && qs_verity_default_salt(src, &c->p) < 0) {
			cli_error(c->image, NULL, "%s", qs_last_error());
			goto out;
		}
		if (qs_verity_format(src, &c->p, fd, root, &g) < 0) {
			cli_error(hashdev, NULL, "verity: %s", qs_last_error());
			goto out;
		}
		if (!c->p.no_superblock && !c->uuid_given) {
			qs_verity_uuid_from_root(root, c->p.uuid);
			if (qs_verity_encode_superblock(&c->p, sb) < 0 ||
			    pwrite(fd, sb, sizeof(sb), (off_t)c->p.hash_offset) != (ssize_t)sizeof(sb)) {
				cli_error(hashdev, NULL, "verity: cannot write the superblock: %s", strerror(errno));
				goto out;
			}
		}
		if (fsync(fd) < 0 && errno != EINVAL) {
			cli_error(hashdev, NULL, "%s", strerror(errno));
			goto out;
		}
	}
	if (c->root_hash_file && write_root_hash_file(c->root_hash_file, root, g.digest_size) != CLI_EXIT_OK)
		goto out;
	print_header(c, hashdev, &g, root);
	ret = cli_finish_stdout(CLI_EXIT_OK);
out:
	qs_source_close(src);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* The root hash from the operand or --root-hash-file into root; CLI_CONTINUE or the exit status. */
static int read_root_hash(const struct verity_cli *c, unsigned digest_size, uint8_t *root)
{
	char text[2 * QS_VERITY_MAX_DIGEST + 2] = "";
	const char *hex = c->roothash;
	int n;

	if (c->root_hash_file) {
		FILE *f = fopen(c->root_hash_file, "r");
		size_t len;

		if (!f || !fgets(text, sizeof(text), f)) {
			fprintf(stderr, "quash: %s: cannot read the root hash: %s\n", c->root_hash_file,
				f ? "empty file" : strerror(errno));
			if (f)
				fclose(f);
			return CLI_EXIT_ERROR;
		}
		fclose(f);
		len = strcspn(text, "\r\n");
		text[len] = '\0';
		hex = text;
	}
	n = qs_verity_parse_hex(hex, root, QS_VERITY_MAX_DIGEST);
	if (n < 0 || strcmp(hex, "-") == 0)
		return cli_usage(&cmd_verity, "root hash '%s' is not hexadecimal", hex);
	if ((unsigned)n != digest_size)
		return cli_usage(&cmd_verity, "root hash '%s' has %d bytes, %s's have %u", hex, n, c->p.hash_name,
				 digest_size);
	return CLI_CONTINUE;
}

/*
 * Reading everything through the verifying source, in chunks that a few
 * threads take in turn (the source is made for concurrent readers).  The
 * failure reported is the one in the lowest chunk, the first a single
 * reader would have met; chunks past it are not read.
 */
struct verify_run {
	struct qs_source *v;
	size_t chunk;
	uint64_t next;              /* the next chunk's offset, taken atomically */
	pthread_mutex_t lock;       /* over bad_off and message */
	uint64_t bad_off;
	char message[512];
};

static void *verify_worker(void *arg)
{
	struct verify_run *r = arg;
	uint8_t *buf = malloc(r->chunk);

	for (;;) {
		uint64_t off = __atomic_fetch_add(&r->next, r->chunk, __ATOMIC_RELAXED), bad;
		size_t len;
		int ret;

		pthread_mutex_lock(&r->lock);
		bad = r->bad_off;
		pthread_mutex_unlock(&r->lock);
		if (off >= r->v->size || off > bad)
			break;
		len = r->v->size - off < r->chunk ? (size_t)(r->v->size - off) : r->chunk;
		ret = buf ? qs_source_pread(r->v, buf, len, off) : qs_set_error(-ENOMEM, "out of memory");
		if (ret < 0) {
			pthread_mutex_lock(&r->lock);
			if (off < r->bad_off) {
				r->bad_off = off;
				snprintf(r->message, sizeof(r->message), "%s", qs_last_error());
			}
			pthread_mutex_unlock(&r->lock);
			break;
		}
	}
	free(buf);
	return NULL;
}

static int verify_all(struct qs_source *v, const char *image)
{
	struct verify_run r = { .v = v, .bad_off = UINT64_MAX,
				.chunk = qs_source_spec_is_remote(image) ? VERIFY_CHUNK_REMOTE : VERIFY_CHUNK_LOCAL };
	pthread_t t[VERIFY_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus < 1 ? 1 : cpus > VERIFY_THREADS ? VERIFY_THREADS : (int)cpus, started = 0;

	pthread_mutex_init(&r.lock, NULL);
	for (int i = 1; i < n; i++) {
		if (pthread_create(&t[started], NULL, verify_worker, &r) == 0)
			started++;
	}
	verify_worker(&r);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&r.lock);
	if (r.bad_off != UINT64_MAX) {
		cli_error(image, NULL, "%s", r.message);
		return -1;
	}
	return 0;
}

static int do_verify(struct verity_cli *c)
{
	struct qs_source *data = NULL, *hash = NULL, *v = NULL;
	const char *hashdev = c->hashfile ? c->hashfile : c->image;
	struct qs_verity_geometry g;
	uint8_t root[QS_VERITY_MAX_DIGEST];
	size_t cache = c->p.cache_bytes;
	int st = CLI_EXIT_ERROR;

	if (qs_source_open(c->image, &c->co.source, &data) < 0) {
		cli_error(c->image, NULL, "%s", qs_last_error());
		return CLI_EXIT_ERROR;
	}
	if (c->hashfile && qs_source_open(c->hashfile, &c->co.source, &hash) < 0) {
		cli_error(c->hashfile, NULL, "%s", qs_last_error());
		goto out;
	}
	if (!hash)
		hash = data;
	if (!c->p.no_superblock) {
		int ret;

		if (c->hashfile || c->offset_given) {
			ret = qs_verity_read_superblock(hash, c->p.hash_offset, &c->p);
		} else {
			uint64_t used = squashfs_bytes_used(data);

			if (!used) {
				cli_error(c->image, NULL, "verity: not a squashfs image: give --hash-offset of its "
					  "appended tree, or HASHFILE");
				goto out;
			}
			ret = qs_verity_find_appended(data, used, &c->p);
		}
		if (ret < 0) {
			cli_error(hashdev, NULL, "%s", qs_last_error());
			goto out;
		}
	} else if (!c->hashfile) {
		if (!c->offset_given) {
			uint64_t used = squashfs_bytes_used(data);

			if (!used) {
				cli_error(c->image, NULL, "verity: not a squashfs image: give --hash-offset of its "
					  "appended tree, or HASHFILE");
				goto out;
			}
			c->p.hash_offset = qs_verity_appended_offset(&c->p, used);
		}
		if (!c->blocks_given)
			c->p.data_blocks = c->p.hash_offset / c->p.data_block_size;
	}
	c->p.cache_bytes = cache;
	if (qs_verity_geometry(&c->p, c->p.data_blocks ? c->p.data_blocks
						       : qs_verity_data_blocks_for(&c->p, data->size), &g) < 0) {
		cli_error(hashdev, NULL, "%s", qs_last_error());
		goto out;
	}
	st = read_root_hash(c, g.digest_size, root);
	if (st != CLI_CONTINUE)
		goto out;
	st = CLI_EXIT_ERROR;
	/* A signed root hash: the signature is checked before a block is hashed. */
	if (c->signature && qs_verity_check_signature_files(c->signature, c->cert, root, g.digest_size) < 0) {
		fprintf(stderr, "quash: %s\n", qs_last_error());
		goto out;
	}
	if (qs_source_open_verity(data, hash, &c->p, root, g.digest_size, &v) < 0) {
		data = hash = NULL;
		cli_error(c->image, NULL, "verity: %s", qs_last_error());
		goto out;
	}
	data = hash = NULL;
	if (verify_all(v, c->image) < 0)
		goto out;
	c->verified = true;
	if (c->json)
		print_header(c, hashdev, &g, root);
	st = cli_finish_stdout(CLI_EXIT_OK);
out:
	qs_source_close(v);
	if (hash && hash != data)
		qs_source_close(hash);
	qs_source_close(data);
	return st;
}

static void verity_usage(FILE *f)
{
	fprintf(f, "Usage: %s\n", cmd_verity.usage);
}

static int verity_run(int argc, char **argv)
{
	struct verity_cli c = { .co.cmd = &cmd_verity };
	const char *sub = argc >= 2 ? argv[1] : NULL;
	bool format;
	int st, n;

	qs_verity_params_init(&c.p);
	if (!sub) {
		verity_usage(stderr);
		fprintf(stderr, "Try 'quash verity --help' for more information.\n");
		return CLI_EXIT_USAGE;
	}
	if (strcmp(sub, "format") && strcmp(sub, "verify")) {
		if (sub[0] == '-') {
			st = parse_options(&c, argc, argv);
			return st == CLI_CONTINUE ? cli_usage(&cmd_verity, "missing format or verify") : st;
		}
		return cli_usage(&cmd_verity, "unknown subcommand '%s' (format and verify are)", sub);
	}
	format = strcmp(sub, "format") == 0;
	argv[1] = argv[0];
	st = parse_options(&c, argc - 1, argv + 1);
	if (st != CLI_CONTINUE)
		return st;
	argv += 1;
	argc -= 1;
	n = argc - optind;
	if (format) {
		if (n < 1 || n > 2)
			return cli_usage(&cmd_verity, n < 1 ? "format: missing IMAGE" : "format: too many arguments");
		if (c.signature)
			return cli_usage(&cmd_verity, "format: --root-hash-signature and --cert are for verify");
		c.image = argv[optind];
		c.hashfile = n == 2 ? argv[optind + 1] : NULL;
		return do_format(&c);
	}
	if (c.root_hash_file) {
		if (n < 1 || n > 2)
			return cli_usage(&cmd_verity, n < 1 ? "verify: missing IMAGE" : "verify: too many arguments");
		c.image = argv[optind];
		c.hashfile = n == 2 ? argv[optind + 1] : NULL;
	} else {
		if (n < 2 || n > 3)
			return cli_usage(&cmd_verity, n < 2 ? "verify: need IMAGE [HASHFILE] ROOTHASH"
						   : "verify: too many arguments");
		c.image = argv[optind];
		c.hashfile = n == 3 ? argv[optind + 1] : NULL;
		c.roothash = argv[optind + n - 1];
	}
	return do_verify(&c);
}

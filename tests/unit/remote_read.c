/*
 * remote_read.c - read a source through qs_source_open() and compare every
 * byte with a local copy.  Used by tests/t-remote-*.sh against real servers.
 *
 *   remote_read [options] SPEC LOCAL
 *     -c BYTES   chunk size              -m BYTES  memory cache
 *     -d DIR     persistent cache dir    -r SECS   retry budget
 *     -t N       reader threads (each reads N random ranges, see -n)
 *     -n N       random reads per thread -s BYTES  sequential read size
 *     -p         pin [size/2, size) first, like the image open pins metadata
 *     -x CMD     run CMD after the first half of the sequential pass
 *     -E ERRNO   expect reads to fail with this errno (number) after -x
 *     -e URL     S3 endpoint (else AWS_ENDPOINT_URL)
 *
 * Exit 0 when everything matched (and the expected error came), 1 on a
 * read error, 2 on a mismatch, 3 on usage or setup errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quash.h"

struct job {
	struct qs_source *src;
	int fd;
	uint64_t size;
	unsigned reads;
	unsigned seed;
	int result;
};

static int compare_range(struct qs_source *src, int fd, uint64_t off, size_t len)
{
	char *a = malloc(len ? len : 1), *b = malloc(len ? len : 1);
	int ret = 0, err;

	if (!a || !b) {
		free(a);
		free(b);
		return 3;
	}
	err = qs_source_pread(src, a, len, off);
	if (err < 0) {
		fprintf(stderr, "remote_read: read %zu at %llu: %s (%s)\n", len, (unsigned long long)off,
			qs_last_error(), strerror(-err));
		ret = -err;
	} else if (pread(fd, b, len, off) != (ssize_t)len || memcmp(a, b, len)) {
		fprintf(stderr, "remote_read: MISMATCH: %zu bytes at %llu\n", len, (unsigned long long)off);
		ret = -1;
	}
	free(a);
	free(b);
	return ret;
}

static void *random_reader(void *arg)
{
	struct job *j = arg;

	for (unsigned i = 0; i < j->reads && j->result == 0; i++) {
		uint64_t off = ((uint64_t)rand_r(&j->seed) << 20 ^ rand_r(&j->seed)) % j->size;
		size_t len = 1 + rand_r(&j->seed) % (1u << 19);

		if (len > j->size - off)
			len = j->size - off;
		j->result = compare_range(j->src, j->fd, off, len);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct qs_source_options opt = { 0 };
	unsigned threads = 0, reads = 50, expect = 0;
	size_t step = 128 << 10;
	const char *cmd = NULL;
	struct qs_source *src;
	bool pin = false, failed_as_expected = false;
	struct stat st;
	int c, fd, ret;

	while ((c = getopt(argc, argv, "c:m:d:r:t:n:s:px:E:e:")) != -1) {
		switch (c) {
		case 'c': opt.chunk_size = strtoull(optarg, NULL, 0); break;
		case 'm': opt.memory_cache = strtoull(optarg, NULL, 0); break;
		case 'd': opt.cache_dir = optarg; break;
		case 'r': opt.retry_seconds = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'n': reads = atoi(optarg); break;
		case 's': step = strtoull(optarg, NULL, 0); break;
		case 'p': pin = true; break;
		case 'x': cmd = optarg; break;
		case 'E': expect = atoi(optarg); break;
		case 'e': opt.endpoint = optarg; break;
		default: return 3;
		}
	}
	if (optind + 2 != argc) {
		fprintf(stderr, "usage: remote_read [options] SPEC LOCAL\n");
		return 3;
	}
	fd = open(argv[optind + 1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[optind + 1]);
		return 3;
	}
	ret = qs_source_open(argv[optind], &opt, &src);
	if (ret < 0) {
		fprintf(stderr, "remote_read: %s (%s)\n", qs_last_error(), strerror(-ret));
		return 1;
	}
	if (src->notice)
		fprintf(stderr, "remote_read: notice: %s\n", src->notice);
	if (src->size != (uint64_t)st.st_size) {
		fprintf(stderr, "remote_read: size %llu, local %llu\n", (unsigned long long)src->size,
			(unsigned long long)st.st_size);
		qs_source_close(src);
		return 2;
	}
	if (pin && (ret = qs_source_prefetch(src, src->size / 2, src->size - src->size / 2)) < 0)
		fprintf(stderr, "remote_read: prefetch: %s\n", qs_last_error());

	/* Random readers race with the sequential pass below over the same chunks. */
	struct job *jobs = calloc(threads ? threads : 1, sizeof(*jobs));
	pthread_t *tids = calloc(threads ? threads : 1, sizeof(*tids));

	for (unsigned i = 0; i < threads; i++) {
		jobs[i] = (struct job){ src, fd, src->size, reads, 12345 + i, 0 };
		pthread_create(&tids[i], NULL, random_reader, &jobs[i]);
	}
	ret = 0;
	for (uint64_t off = 0; off < src->size && ret == 0; off += step) {
		size_t len = src->size - off < step ? src->size - off : step;

		if (cmd && off >= src->size / 2) {
			if (system(cmd) != 0) {
				fprintf(stderr, "remote_read: %s failed\n", cmd);
				ret = 3;
				break;
			}
			cmd = NULL;
		}
		ret = compare_range(src, fd, off, len);
		if (expect && ret == (int)expect) {
			failed_as_expected = true;
			ret = 0;
			break;
		}
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(tids[i], NULL);
		if (jobs[i].result && !(expect && jobs[i].result == (int)expect) && !ret)
			ret = jobs[i].result;
	}
	free(jobs);
	free(tids);
	qs_source_close(src);
	close(fd);
	if (ret == 0 && expect && !failed_as_expected) {
		fprintf(stderr, "remote_read: expected errno %u, every read succeeded\n", expect);
		return 1;
	}
	return ret < 0 ? 2 : ret ? 1 : 0;
}

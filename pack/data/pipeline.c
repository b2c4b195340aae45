/*
 * pipeline.c - the ordered parallel compressor behind data.c.
 *
 * Sequence numbers, not queues: job n lives in slot n % ring.  Counters
 * say how far the producer (submitted), the workers (taken) and the writer
 * (written) have got, and one mutex guards them; the work inside a job
 * (compressing, writing) happens outside it.  Because the writer takes
 * jobs strictly in sequence, which thread compressed what never shows in
 * the output.
 *
 * The buffers are not the slots': a slot takes an input and output pair
 * from a stack when it is filled and gives it back once written, so the
 * pairs in use are the most recently used ones.  A pack whose blocks are
 * few or slow to come (a million tiny files make 60 fragment blocks)
 * touches a few pairs, not one per slot in turn: 15 MiB less at its peak.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"
#include "sink/sink.h"
#include "format/squashfs_fs.h"
#include "base/util.h"
#include "base/progress.h"

#define PIPELINE_RING_BYTES (64u << 20)   /* input bytes in flight, whatever the block size */
#define PIPELINE_RING_MIN   8u            /* slots per worker at least */
#define PIPELINE_JOBS_MAX   256u

/*
 * Blocks that are compressed data already (archives, images, wheels) do
 * not shrink, and the strong zstd levels spend as long failing on them as
 * they spend on text.  A sample of the block is tested first: where equal
 * bytes are as rare as in uniformly random data, zstd's fastest level
 * (about a hundredth of level 15's time) confirms it, since random bytes
 * can still repeat at a distance (an archive stored twice in one block).
 * If that saves under 1/32 too, the block is stored as it is.  Both tests
 * read only the block's bytes, so the image still depends on its input
 * alone (what it saves and costs: docs/benchmarks.md).
 */
#define RANDOM_SAMPLE_CHUNKS 32u        /* pieces spread over the block */
#define RANDOM_SAMPLE_CHUNK  512u       /* bytes per piece */
#define RANDOM_MIN_LEN       4096u      /* shorter blocks are always compressed */
#define RANDOM_COLLISION_INV 239u       /* random: two sampled bytes equal with p < 1/239 (uniform: 1/256) */
#define RANDOM_PROBE_LEVEL   1          /* zstd level of the confirming trial */
#define RANDOM_PROBE_GAIN    32u        /* the trial must save len / 32 for the block to be compressed */

enum job_state { JOB_FREE, JOB_QUEUED, JOB_DONE };

struct pipeline {
	const struct qs_compressor *comp;
	const struct qs_compress_params *params;
	struct pack_sink *sink;
	uint32_t block_size;

	struct pipeline_job *ring;
	uint64_t ring_size;
	uint8_t *bufs;              /* ring_size input buffers, then ring_size output buffers */
	uint32_t *free_bufs;        /* the pairs no slot holds, a stack of their numbers */
	uint64_t free_count;
	uint64_t submitted, taken, written;
	bool stopping;
	int error;

	pthread_mutex_t lock;
	pthread_cond_t work;        /* workers: something to compress, or stop */
	pthread_cond_t done;        /* writer: a job finished compressing */
	pthread_cond_t space;       /* producer: a slot became free */

	pthread_t *workers;
	unsigned nworkers;
	pthread_t writer;
	bool writer_started;
};

static void fail(struct pipeline *p, int err)
{
	if (!p->error)
		p->error = err;
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->done);
	pthread_cond_broadcast(&p->space);
}

static bool looks_random(const uint8_t *p, uint32_t len)
{
	uint32_t count[256] = { 0 };
	uint64_t n, pairs = 0;

	if (len < RANDOM_MIN_LEN)
		return false;
	for (uint32_t k = 0; k < RANDOM_SAMPLE_CHUNKS; k++) {
		uint64_t at = (uint64_t)(len - RANDOM_SAMPLE_CHUNK) * k / (RANDOM_SAMPLE_CHUNKS - 1);

		for (uint32_t i = 0; i < RANDOM_SAMPLE_CHUNK; i++)
			count[p[at + i]]++;
	}
	n = (uint64_t)RANDOM_SAMPLE_CHUNKS * RANDOM_SAMPLE_CHUNK;
	for (unsigned b = 0; b < 256; b++)
		if (count[b])
			pairs += (uint64_t)count[b] * (count[b] - 1);
	/* pairs / (n (n - 1)) is the chance that two sampled bytes are equal. */
	return pairs * RANDOM_COLLISION_INV < n * (n - 1);
}

/* Is the block not worth compressing?  'scratch' has room for len bytes. */
static bool incompressible(const uint8_t *in, uint32_t len, uint8_t *scratch)
{
	static const struct qs_compress_params probe = { .level = RANDOM_PROBE_LEVEL };
	ssize_t n;

	if (!looks_random(in, len))
		return false;
	n = qs_zstd_compressor.compress(&probe, in, len, scratch, len);
	return n >= 0 && (n == 0 || (uint64_t)n > len - len / RANDOM_PROBE_GAIN);
}

static void *worker_main(void *arg)
{
	struct pipeline *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pipeline_job *job;

		while (p->taken == p->submitted && !p->stopping && !p->error)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->error || p->taken == p->submitted)
			break;
		job = &p->ring[p->taken++ % p->ring_size];
		pthread_mutex_unlock(&p->lock);

		job->out_len = 0;
		if (job->len > 0 && !job->store && !incompressible(job->in, job->len, job->out))
			job->out_len = p->comp->compress(p->params, job->in, job->len, job->out, job->len);

		pthread_mutex_lock(&p->lock);
		if (job->out_len < 0) {
			pack_error("compression failed: %s", qs_last_error());
			fail(p, (int)job->out_len);
			break;
		}
		job->state = JOB_DONE;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static int write_job(struct pipeline *p, struct pipeline_job *job)
{
	const void *data = job->out;
	uint32_t word = (uint32_t)job->out_len;

	if (job->out_len == 0) {
		data = job->in;
		word = job->len | SQFS_BLOCK_UNCOMPRESSED;
	}
	if (job->pos_slot)
		*job->pos_slot = p->sink->written;
	if (job->size_slot)
		*job->size_slot = word;
	if (job->len == 0)
		return 0;
	progress_add(job->len, 0);
	return sink_append(p->sink, data, word & SQFS_BLOCK_SIZE_MASK);
}

static void *writer_main(void *arg)
{
	struct pipeline *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pipeline_job *job = &p->ring[p->written % p->ring_size];
		int err;

		while (!p->error && !(p->written < p->submitted && job->state == JOB_DONE) &&
		       !(p->stopping && p->written == p->submitted))
			pthread_cond_wait(&p->done, &p->lock);
		if (p->error || p->written == p->submitted)
			break;
		pthread_mutex_unlock(&p->lock);

		err = write_job(p, job);

		pthread_mutex_lock(&p->lock);
		if (err) {
			fail(p, err);
			break;
		}
		job->state = JOB_FREE;
		p->free_bufs[p->free_count++] = job->buf;
		job->in = job->out = NULL;
		p->written++;
		pthread_cond_signal(&p->space);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void stop_threads(struct pipeline *p)
{
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->work);
	pthread_cond_broadcast(&p->done);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nworkers; i++)
		pthread_join(p->workers[i], NULL);
	p->nworkers = 0;
	if (p->writer_started)
		pthread_join(p->writer, NULL);
	p->writer_started = false;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	stop_threads(p);
	free(p->bufs);
	free(p->free_bufs);
	free(p->ring);
	free(p->workers);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->space);
	free(p);
}

int pipeline_start(const struct qs_compressor *comp, const struct qs_compress_params *params,
		   uint32_t block_size, unsigned jobs, uint64_t ring_bytes, struct pack_sink *sink,
		   struct pipeline **out)
{
	struct pipeline *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	if (jobs < 1)
		jobs = 1;
	if (jobs > PIPELINE_JOBS_MAX)
		jobs = PIPELINE_JOBS_MAX;
	p->comp = comp;
	p->params = params;
	p->sink = sink;
	p->block_size = block_size;
	if (!ring_bytes || ring_bytes > PIPELINE_RING_BYTES)
		ring_bytes = PIPELINE_RING_BYTES;
	p->ring_size = ring_bytes / block_size;
	if (p->ring_size < PIPELINE_RING_MIN * jobs)
		p->ring_size = PIPELINE_RING_MIN * jobs;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	pthread_cond_init(&p->space, NULL);
	p->ring = calloc(p->ring_size, sizeof(*p->ring));
	p->free_bufs = calloc(p->ring_size, sizeof(*p->free_bufs));
	p->workers = calloc(jobs, sizeof(*p->workers));
	if (!p->ring || !p->free_bufs || !p->workers)
		goto nomem;
	/*
	 * One allocation (so mapped, not from the heap): a page is resident
	 * only once a block was put in it.  A malloc() each wrote a chunk
	 * header in a page of every buffer: 4 MiB before the first block.
	 */
	p->bufs = malloc(2 * p->ring_size * block_size);
	if (!p->bufs)
		goto nomem;
	/* Pair 0 on top: the stack hands out the same few pairs while few are in use. */
	for (p->free_count = 0; p->free_count < p->ring_size; p->free_count++)
		p->free_bufs[p->free_count] = (uint32_t)(p->ring_size - 1 - p->free_count);
	for (; p->nworkers < jobs; p->nworkers++)
		if (pthread_create(&p->workers[p->nworkers], NULL, worker_main, p) != 0)
			goto nomem;
	if (pthread_create(&p->writer, NULL, writer_main, p) != 0)
		goto nomem;
	p->writer_started = true;
	*out = p;
	return 0;
nomem:
	pack_error("out of memory starting %u compression threads", jobs);
	pipeline_free(p);
	return -ENOMEM;
}

struct pipeline_job *pipeline_get(struct pipeline *p)
{
	struct pipeline_job *job;

	pthread_mutex_lock(&p->lock);
	while (!p->error && p->submitted - p->written >= p->ring_size)
		pthread_cond_wait(&p->space, &p->lock);
	job = p->error ? NULL : &p->ring[p->submitted % p->ring_size];
	/* A slot taken and not submitted keeps its pair; slots holding one are never more than the pairs. */
	if (job && !job->in) {
		job->buf = p->free_bufs[--p->free_count];
		job->in = p->bufs + (size_t)job->buf * p->block_size;
		job->out = p->bufs + (size_t)(p->ring_size + job->buf) * p->block_size;
	}
	pthread_mutex_unlock(&p->lock);
	if (job) {
		job->len = 0;
		job->store = false;
		job->size_slot = NULL;
		job->pos_slot = NULL;
	}
	return job;
}

void pipeline_submit(struct pipeline *p, struct pipeline_job *job)
{
	pthread_mutex_lock(&p->lock);
	job->state = JOB_QUEUED;
	p->submitted++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

int pipeline_finish(struct pipeline *p)
{
	int err;

	stop_threads(p);
	pthread_mutex_lock(&p->lock);
	err = p->error;
	if (!err && p->written != p->submitted)
		err = -EIO;
	pthread_mutex_unlock(&p->lock);
	return err;
}

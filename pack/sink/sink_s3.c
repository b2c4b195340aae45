/*
 * sink_s3.c - the image written straight to S3: one PUT, or a multipart
 * upload for a large image.
 *
 * The image is cut into parts of S3_PART_SIZE bytes.  Part 1 holds the
 * superblock, which is only known at finish, so it stays in memory; every
 * later part is handed to a few upload threads as soon as it is full, while
 * packing goes on.  Until a second part is full nothing could be sent
 * early anyway, so the first S3_PUT_MAX bytes are only buffered: an image
 * that ends within them goes up as one PUT at finish (one request instead
 * of four: create, two parts, complete).  Only once it grows past them is
 * the multipart upload created and the second part queued.
 *
 * Either way the object appears only once it is whole: S3 stores a PUT
 * only when all of its body arrived, and a multipart upload only when it
 * is completed, which happens once every part has arrived.  Until then an
 * object already at the key stays as it was.  On error, or
 * SIGINT/SIGTERM/SIGHUP, the upload is aborted so that S3 keeps nothing.
 *
 * Signals are caught with a signalfd read by a watcher thread (they are
 * blocked from the sink's open on, so the threads started later block them
 * too): an abort needs HTTP requests, which a signal handler cannot make.
 * A signal the parent set to be ignored (SIGINT of a background job in a
 * script) stays ignored.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "base/util.h"
#include "quash.h"
#include "sink.h"
#include "io/source_remote.h"

#define S3_PART_SIZE        (8u << 20)  /* at least 5 MiB: S3's minimum for every part but the last */
#define S3_PUT_MAX          (2 * S3_PART_SIZE) /* images up to this size go up as one PUT */
#define S3_MAX_PARTS        10000u      /* S3's limit: images up to 78 GiB */
#define S3_UPLOAD_THREADS   4
#define S3_PARTS_QUEUED_MAX 6           /* full parts waiting or being sent: bounds memory */
#define S3_ABORT_SECONDS    10          /* retry budget of the abort request */

struct part {
	unsigned number;
	char *data;
	size_t len;
	struct part *next;
};

struct s3_sink {
	struct pack_sink sink;
	struct remote_target t;
	pthread_mutex_t create_lock;    /* held while the multipart upload is created */
	char *upload_query;             /* "uploadId=ID" once the multipart upload exists, else NULL */

	char *first;                    /* the image's first S3_PUT_MAX bytes; then part 1 */
	size_t first_len;               /* bytes in it */
	char *cur;                      /* multipart: the part being filled (number cur_number) */
	size_t cur_len;
	unsigned cur_number;            /* 0 until the multipart upload starts */

	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct part *queue, **queue_tail;
	unsigned queued;                /* parts in the queue or being sent */
	bool stopping;
	int error;                      /* first failed upload's -errno */
	char error_msg[512];
	char (*etags)[REMOTE_VALIDATOR_MAX];
	pthread_t workers[S3_UPLOAD_THREADS];
	int nworkers;

	bool ending;                    /* finish, abort or a signal has begun: the first one owns it */
	int sigfd, stopfd;
	sigset_t old_mask;
	pthread_t watcher;
};

static void part_free(struct part *p)
{
	free(p->data);
	free(p);
}

static int upload_part(struct s3_sink *s, struct part *p)
{
	struct remote_reply reply;
	char query[600];
	int ret;

	snprintf(query, sizeof(query), "partNumber=%u&%s", p->number, s->upload_query);
	ret = remote_call(&s->t, "PUT", query, p->data, p->len, 0, &reply);
	if (ret == 0 && !reply.etag[0])
		ret = qs_set_error(-EIO, "part %u: the answer has no ETag", p->number);
	if (ret == 0)
		snprintf(s->etags[p->number], sizeof(s->etags[p->number]), "%s", reply.etag);
	remote_reply_clear(&reply);
	return ret;
}

static void *upload_worker(void *arg)
{
	struct s3_sink *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct part *p;
		int ret;

		while (!s->stopping && !s->queue)
			pthread_cond_wait(&s->changed, &s->lock);
		if (s->stopping)
			break;
		p = s->queue;
		s->queue = p->next;
		if (!s->queue)
			s->queue_tail = &s->queue;
		pthread_mutex_unlock(&s->lock);
		ret = s->error ? 0 : upload_part(s, p);
		pthread_mutex_lock(&s->lock);
		if (ret < 0 && !s->error) {
			s->error = ret;
			snprintf(s->error_msg, sizeof(s->error_msg), "%s", qs_last_error());
		}
		part_free(p);
		s->queued--;
		pthread_cond_broadcast(&s->changed);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Hand a part to the workers, waiting while too many are queued. */
static int queue_part(struct s3_sink *s, unsigned number, char *data, size_t len)
{
	struct part *p = calloc(1, sizeof(*p));
	int ret;

	if (!p) {
		free(data);
		pack_error("out of memory");
		return -ENOMEM;
	}
	*p = (struct part){ number, data, len, NULL };
	pthread_mutex_lock(&s->lock);
	while (!s->error && s->queued >= S3_PARTS_QUEUED_MAX)
		pthread_cond_wait(&s->changed, &s->lock);
	ret = s->error;
	if (ret == 0) {
		*s->queue_tail = p;
		s->queue_tail = &p->next;
		s->queued++;
		pthread_cond_signal(&s->changed);
	}
	pthread_mutex_unlock(&s->lock);
	if (ret < 0) {
		part_free(p);
		pack_error("%s: %s", s->t.name, s->error_msg);
	}
	return ret;
}

static int create_upload(struct s3_sink *s);
static int start_workers(struct s3_sink *s);

/*
 * The image outgrew one PUT: create the multipart upload, start the upload
 * threads and queue the second part; part 1 stays.
 */
static int start_multipart(struct s3_sink *s)
{
	char *second = malloc(S3_PART_SIZE);
	int ret;

	if (!second) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	/* A signal's abort waits for this, so that an upload created meanwhile is aborted too. */
	pthread_mutex_lock(&s->create_lock);
	ret = __atomic_load_n(&s->stopping, __ATOMIC_RELAXED) ? qs_set_error(-ECANCELED, "cancelled")
							       : create_upload(s);
	pthread_mutex_unlock(&s->create_lock);
	if (ret == 0)
		ret = start_workers(s);
	else
		pack_error("%s: %s", s->t.name, qs_last_error());
	if (ret < 0) {
		free(second);
		return ret;
	}
	memcpy(second, s->first + S3_PART_SIZE, S3_PART_SIZE);
	s->first_len = S3_PART_SIZE;
	s->cur_number = 3;
	return queue_part(s, 2, second, S3_PART_SIZE);
}

/* Buffer the image's first S3_PUT_MAX bytes. */
static size_t append_first(struct s3_sink *s, const char *src, size_t len)
{
	size_t n = S3_PUT_MAX - s->first_len;

	if (n > len)
		n = len;
	memcpy(s->first + s->first_len, src, n);
	s->first_len += n;
	return n;
}

static int s3_append(struct pack_sink *sink, const void *buf, size_t len)
{
	struct s3_sink *s = (struct s3_sink *)sink;
	const char *src = buf;

	if (!s->cur_number && len) {
		size_t n;

		if (!s->first && !(s->first = malloc(S3_PUT_MAX))) {
			pack_error("out of memory");
			return -ENOMEM;
		}
		n = append_first(s, src, len);
		src += n;
		len -= n;
		if (s->first_len == S3_PUT_MAX && len) {
			int ret = start_multipart(s);

			if (ret < 0)
				return ret;
		}
	}
	while (len) {
		size_t n = S3_PART_SIZE - s->cur_len;
		int ret;

		if (!s->cur && !(s->cur = malloc(S3_PART_SIZE))) {
			pack_error("out of memory");
			return -ENOMEM;
		}
		if (n > len)
			n = len;
		memcpy(s->cur + s->cur_len, src, n);
		s->cur_len += n;
		src += n;
		len -= n;
		if (s->cur_len < S3_PART_SIZE)
			break;
		if (s->cur_number == S3_MAX_PARTS) {
			pack_error("%s: image larger than %u parts of %u MiB", s->t.name, S3_MAX_PARTS,
				   S3_PART_SIZE >> 20);
			return -EFBIG;
		}
		ret = queue_part(s, s->cur_number, s->cur, s->cur_len);
		s->cur = NULL;
		s->cur_len = 0;
		if (ret < 0)
			return ret;
		s->cur_number++;
	}
	return 0;
}

/* Stop and join the upload threads; queued parts are dropped. */
static void stop_workers(struct s3_sink *s)
{
	pthread_mutex_lock(&s->lock);
	__atomic_store_n(&s->stopping, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	s->nworkers = 0;
	while (s->queue) {
		struct part *p = s->queue;

		s->queue = p->next;
		part_free(p);
	}
}

static void abort_upload(struct s3_sink *s)
{
	struct remote_reply reply;

	stop_workers(s);        /* their requests in flight end at once: t.cancel is s->stopping */
	pthread_mutex_lock(&s->create_lock);
	pthread_mutex_unlock(&s->create_lock);
	if (!s->upload_query)
		return;         /* nothing stored yet; a PUT cut short stores nothing */
	s->t.cancel = NULL;
	if (remote_call(&s->t, "DELETE", s->upload_query, NULL, 0, S3_ABORT_SECONDS, &reply) < 0)
		pack_error("%s: aborting the upload: %s; the parts already sent stay until the bucket's "
			   "lifecycle rules remove them", s->t.name, qs_last_error());
	remote_reply_clear(&reply);
}

static void *signal_watcher(void *arg)
{
	struct s3_sink *s = arg;
	struct pollfd fds[2] = { { s->sigfd, POLLIN, 0 }, { s->stopfd, POLLIN, 0 } };
	struct signalfd_siginfo si;
	sigset_t set;

	while (poll(fds, 2, -1) < 0 && errno == EINTR)
		;
	if (!(fds[0].revents & POLLIN) || read(s->sigfd, &si, sizeof(si)) != sizeof(si))
		return NULL;
	pthread_mutex_lock(&s->lock);
	if (s->ending) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	s->ending = true;
	pthread_mutex_unlock(&s->lock);
	abort_upload(s);
	pack_error("%s: interrupted; nothing is stored%s", s->t.name,
		   s->upload_query ? ": the multipart upload is aborted" : "");
	/* Die of the signal, as without the sink. */
	signal(si.ssi_signo, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, si.ssi_signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(si.ssi_signo);
	return NULL;
}

static int start_signal_watcher(struct s3_sink *s)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	s->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	s->stopfd = eventfd(0, EFD_CLOEXEC);
	if (s->sigfd < 0 || s->stopfd < 0)
		return -errno;
	pthread_sigmask(SIG_BLOCK, &set, &s->old_mask);
	if (pthread_create(&s->watcher, NULL, signal_watcher, s) != 0) {
		pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
		return -EAGAIN;
	}
	return 0;
}

/* Stop the watcher, unless a signal came first: then it aborts and the process dies of the signal. */
static void stop_signal_watcher(struct s3_sink *s)
{
	uint64_t one = 1;

	pthread_mutex_lock(&s->lock);
	if (s->ending) {
		pthread_mutex_unlock(&s->lock);
		for (;;)
			pause();
	}
	s->ending = true;
	pthread_mutex_unlock(&s->lock);
	if (write(s->stopfd, &one, sizeof(one)) != sizeof(one))
		return;
	pthread_join(s->watcher, NULL);
	pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
}

static void s3_free(struct s3_sink *s)
{
	close(s->sigfd);
	close(s->stopfd);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->create_lock);
	pthread_cond_destroy(&s->changed);
	remote_target_clear(&s->t);
	free(s->upload_query);
	free(s->first);
	free(s->cur);
	free(s->etags);
	free(s);
}

static void s3_abort(struct pack_sink *sink)
{
	struct s3_sink *s = (struct s3_sink *)sink;

	stop_signal_watcher(s);
	abort_upload(s);
	s3_free(s);
}

/* The CompleteMultipartUpload body: every part's number and ETag. */
static char *complete_body(const struct s3_sink *s, unsigned parts, size_t *len)
{
	size_t cap = 128 + (size_t)parts * (64 + REMOTE_VALIDATOR_MAX), n;
	char *body = malloc(cap);

	if (!body)
		return NULL;
	n = snprintf(body, cap, "<CompleteMultipartUpload>");
	for (unsigned i = 1; i <= parts; i++)
		n += snprintf(body + n, cap - n, "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>", i,
			      s->etags[i]);
	n += snprintf(body + n, cap - n, "</CompleteMultipartUpload>");
	*len = n;
	return body;
}

static int complete_upload(struct s3_sink *s, unsigned parts)
{
	struct remote_reply reply;
	size_t len;
	char *body = complete_body(s, parts, &len);
	int ret;

	if (!body)
		return qs_set_error(-ENOMEM, "out of memory");
	ret = remote_call(&s->t, "POST", s->upload_query, body, len, 0, &reply);
	/* S3 may answer 200 and still report a failure in the body. */
	if (ret == 0 && (!reply.body || strstr(reply.body, "<Error>") ||
			 !strstr(reply.body, "CompleteMultipartUploadResult")))
		ret = qs_set_error(-EIO, "completing the upload failed: %.200s",
				   reply.body ? reply.body : "empty answer");
	remote_reply_clear(&reply);
	free(body);
	return ret;
}

/* The whole image in one PUT; S3 stores it only once the body has arrived whole. */
static int put_whole(struct s3_sink *s)
{
	struct remote_reply reply;
	int ret = remote_call(&s->t, "PUT", NULL, s->first, s->first_len, 0, &reply);

	remote_reply_clear(&reply);
	if (ret < 0)
		pack_error("%s: %s", s->t.name, qs_last_error());
	return ret;
}

/* Send the last part and part 1, wait for every part, complete the upload. */
static int finish_multipart(struct s3_sink *s)
{
	unsigned parts = s->cur_len ? s->cur_number : s->cur_number - 1;
	int ret = 0;

	if (s->cur_len) {
		ret = queue_part(s, s->cur_number, s->cur, s->cur_len);
		s->cur = NULL;
	}
	if (ret == 0) {
		ret = queue_part(s, 1, s->first, s->first_len);
		s->first = NULL;
	}
	pthread_mutex_lock(&s->lock);
	while (s->queued && !s->error)
		pthread_cond_wait(&s->changed, &s->lock);
	if (ret == 0 && s->error) {
		ret = s->error;
		pack_error("%s: %s", s->t.name, s->error_msg);
	}
	pthread_mutex_unlock(&s->lock);
	if (ret == 0) {
		ret = complete_upload(s, parts);
		if (ret < 0)
			pack_error("%s: %s", s->t.name, qs_last_error());
	}
	return ret;
}

static int s3_finish(struct pack_sink *sink, const uint8_t *head, size_t head_len)
{
	struct s3_sink *s = (struct s3_sink *)sink;
	int ret;

	if (head_len > s->first_len) {
		pack_error("%s: image shorter than its head", s->t.name);
		s3_abort(sink);
		return -EINVAL;
	}
	memcpy(s->first, head, head_len);
	ret = s->cur_number ? finish_multipart(s) : put_whole(s);
	if (ret < 0) {
		s3_abort(sink);
		return ret;
	}
	stop_signal_watcher(s);
	stop_workers(s);
	s3_free(s);
	return 0;
}

static const struct pack_sink_ops s3_sink_ops = {
	.append = s3_append,
	.finish = s3_finish,
	.abort = s3_abort,
};

/* CreateMultipartUpload: the upload's id into s->upload_query. */
static int create_upload(struct s3_sink *s)
{
	struct remote_reply reply;
	const char *start, *end;
	int ret = remote_call(&s->t, "POST", "uploads=", NULL, 0, 0, &reply);

	start = ret == 0 && reply.body ? strstr(reply.body, "<UploadId>") : NULL;
	end = start ? strstr(start, "</UploadId>") : NULL;
	if (ret == 0 && !end)
		ret = qs_set_error(-EIO, "starting a multipart upload: no UploadId in the answer");
	if (ret == 0) {
		char *id = strndup(start + 10, end - start - 10);

		s->upload_query = strdup("uploadId=");
		if (!id || !s->upload_query || remote_append_encoded(&s->upload_query, id) < 0)
			ret = qs_set_error(-ENOMEM, "out of memory");
		free(id);
	}
	remote_reply_clear(&reply);
	return ret;
}

static int start_workers(struct s3_sink *s)
{
	for (int i = 0; i < S3_UPLOAD_THREADS; i++)
		if (pthread_create(&s->workers[i], NULL, upload_worker, s) == 0)
			s->nworkers++;
	if (s->nworkers == 0) {
		pack_error("%s: cannot start the upload threads", s->t.name);
		return -EAGAIN;
	}
	return 0;
}

int sink_s3_open(const char *spec, const char *endpoint, struct pack_sink **out)
{
	struct qs_source_options opt = { .endpoint = endpoint };
	struct s3_sink *s = calloc(1, sizeof(*s));
	int ret;

	if (!s) {
		pack_error("out of memory");
		return -ENOMEM;
	}
	s->sink.ops = &s3_sink_ops;
	s->sigfd = s->stopfd = -1;
	s->queue_tail = &s->queue;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->create_lock, NULL);
	pthread_cond_init(&s->changed, NULL);
	s->etags = calloc(S3_MAX_PARTS + 1, sizeof(*s->etags));
	ret = s->etags ? s3_target(spec, &opt, &s->t) : qs_set_error(-ENOMEM, "out of memory");
	s->t.cancel = &s->stopping;
	if (ret < 0) {
		pack_error("%s: %s", spec, qs_last_error());
		s3_free(s);
		return ret;
	}
	/* The watcher first: the upload threads, started later, inherit the blocked signals. */
	ret = start_signal_watcher(s);
	if (ret < 0) {
		pack_error("%s: cannot watch for signals", spec);
		s3_free(s);
		return ret;
	}
	*out = &s->sink;
	return 0;
}

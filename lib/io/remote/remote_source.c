/*
 * remote_source.c - an image on an HTTP(S) server or in S3 as a source:
 * range requests through the request engine (http.c), with the object
 * pinned to the version seen at open, behind the chunk cache.
 *
 * The open request asks for the first chunk: its Content-Range gives the
 * object's size and its ETag (or Last-Modified) the version, so opening
 * costs one round trip and the superblock is already at hand.  Every later
 * request carries If-Match (If-Unmodified-Since without a strong ETag) and
 * its answer is checked: a 412 or another validator means the object
 * changed (-ESTALE); a Content-Range other than the one asked for, or a
 * body longer or shorter than it, is an error and never data.
 *
 * A request that the engine would retry goes, on its retry, to the
 * fallback URL (-o fallback=: the origin behind a caching tier, say) if
 * there is one and the last try did not.  Easy handles are pooled so that
 * connections are reused.  Messages name the object by
 * remote_display_name(): no credentials, no query string.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws_auth.h"
#include "chunk_cache.h"
#include "disk_cache.h"
#include "http.h"
#include "quash.h"

#define REMOTE_POOL_MAX         16        /* idle connections kept */
#define REMOTE_ERRBODY_MAX      1024      /* bytes of an error answer kept for its message */
/*
 * With a prefetch profile given, the open request asks for this much
 * rather than a whole chunk: the profile says what else to fetch, and the
 * rest of a first chunk delays the mount's start (docs/benchmarks.md, the
 * fleet bench).  A superblock and a SIF header fit.
 */
#define REMOTE_OPEN_PROFILED    (64u << 10)
/*
 * Once a request failed over to the fallback URL, requests stay there this
 * long before one tries the first URL again: a tier that is down is not
 * asked (and waited for) on every read, and one that is back gets its load
 * back within this time.
 */
#define REMOTE_FALLBACK_HOLD_MS 30000

enum { TARGET_FIRST, TARGET_FALLBACK, TARGETS };

struct remote {
	struct remote_target t;
	struct remote_target alt;                 /* -o fallback=: the same object elsewhere, or url NULL */
	atomic_bool on_alt;                       /* requests go to alt (since alt_since_ms) */
	_Atomic uint64_t alt_since_ms;
	char *key;                                /* the URL without secrets: keys the cache directory */
	uint64_t size;
	char etag[REMOTE_VALIDATOR_MAX];          /* strong ETag seen at open, or "" */
	char last_modified[REMOTE_VALIDATOR_MAX]; /* Last-Modified seen at open, or "" */
	char verity_root[REMOTE_ROOTHASH_MAX];    /* the object's metadata's root hash, or "" (http.h) */
	unsigned retry_seconds;
	long stall_seconds;
	pthread_mutex_t pool_lock;
	CURL *pool[TARGETS][REMOTE_POOL_MAX];     /* idle handles, by the target they are set up for */
	int npool[TARGETS];
};

/* One request's answer as it arrives. */
struct response {
	const struct iovec *iov;        /* where the body goes */
	int iovcnt, cur;
	size_t cur_off;
	size_t capacity, got;
	bool overflow;                  /* more body than asked for, or than Content-Range announced */
	bool cut;                       /* an error or non-206 body was cut at REMOTE_ERRBODY_MAX */
	struct http_head head;          /* status, Content-Range, validators */
	char errbody[REMOTE_ERRBODY_MAX + 1];
	size_t errlen;
	/*
	 * A streamed read (remote_fetch_stream()): 'progress' hears of every
	 * byte once the answer is trusted, that is once its headers, complete
	 * when the body starts, are the ones asked for: 206, this very range of
	 * this size, the pinned version.  Bytes of an answer not trusted are
	 * never announced, so nobody reads them.
	 */
	void (*progress)(void *arg, size_t filled);
	void *progress_arg;
	size_t progress_base;           /* bytes earlier attempts delivered before this one's */
	bool trusted, judged;
	const struct remote *rm;
	int which;
	uint64_t want_first, want_last;
};

enum request_kind { REQUEST_OPEN, REQUEST_READ };

static bool changed_version(const struct remote *rm, const struct response *r);

/* curl's progress callback for reads: non-zero aborts the transfer. */
static int read_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	(void)arg, (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return qs_source_interrupted();
}

/* The range handles' header callback: the engine's one header parser. */
static size_t on_header(char *line, size_t size, size_t nitems, void *arg)
{
	struct response *r = arg;

	http_head_line(&r->head, line, size * nitems);
	return size * nitems;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct response *r = arg;
	size_t len = size * nmemb, left = len;

	if (r->head.status != 206) {
		/* An error's text, or a whole object sent despite the Range: keep a little, never wait for more. */
		size_t keep = REMOTE_ERRBODY_MAX - r->errlen;

		if (keep > len)
			keep = len;
		memcpy(r->errbody + r->errlen, data, keep);
		r->errlen += keep;
		r->errbody[r->errlen] = '\0';
		if (keep < len) {
			r->cut = true;
			return 0;
		}
		return len;
	}
	/* Never more than Content-Range announced (nor than asked for): the rest is not data. */
	if (r->head.has_range && r->head.range_last - r->head.range_first + 1 < r->capacity)
		r->capacity = r->head.range_last - r->head.range_first + 1;
	if (len > r->capacity - r->got) {
		r->overflow = true;
		return 0;       /* aborts the transfer: more bytes than asked for is never data */
	}
	while (left) {
		const struct iovec *v = &r->iov[r->cur];
		size_t n = v->iov_len - r->cur_off;

		if (n > left)
			n = left;
		memcpy((char *)v->iov_base + r->cur_off, data, n);
		data += n;
		left -= n;
		r->cur_off += n;
		if (r->cur_off == v->iov_len) {
			r->cur++;
			r->cur_off = 0;
		}
	}
	r->got += len;
	if (r->progress) {
		if (!r->judged) {
			r->judged = true;
			r->trusted = r->head.has_range && r->head.range_first == r->want_first && r->head.range_last == r->want_last &&
				     r->head.range_total == r->rm->size && !changed_version(r->rm, r);
		}
		if (r->trusted)
			r->progress(r->progress_arg, r->progress_base + r->got);
	}
	return len;
}

static const struct remote_target *target(const struct remote *rm, int which)
{
	return which == TARGET_FALLBACK ? &rm->alt : &rm->t;
}

static CURL *handle_get(struct remote *rm, int which)
{
	CURL *h = NULL;

	pthread_mutex_lock(&rm->pool_lock);
	if (rm->npool[which])
		h = rm->pool[which][--rm->npool[which]];
	pthread_mutex_unlock(&rm->pool_lock);
	if (h)
		return h;
	h = curl_easy_init();
	if (!h)
		return NULL;
	http_handle_setup(h, target(rm, which), rm->stall_seconds);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, read_progress);
	return h;
}

static void handle_put(struct remote *rm, int which, CURL *h, bool reusable)
{
	pthread_mutex_lock(&rm->pool_lock);
	if (reusable && rm->npool[which] < REMOTE_POOL_MAX) {
		rm->pool[which][rm->npool[which]++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&rm->pool_lock);
	if (h)
		curl_easy_cleanup(h);
}

static struct curl_slist *request_headers(const struct remote *rm, int which, uint64_t off, size_t len,
					  enum request_kind kind)
{
	struct curl_slist *list;
	char line[REMOTE_VALIDATOR_MAX + 64];

	snprintf(line, sizeof(line), "Range: bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	list = http_append_header(NULL, line);
	line[0] = '\0';
	if (kind == REQUEST_READ && rm->etag[0])
		snprintf(line, sizeof(line), "If-Match: %s", rm->etag);
	else if (kind == REQUEST_READ && rm->last_modified[0])
		snprintf(line, sizeof(line), "If-Unmodified-Since: %s", rm->last_modified);
	if (list && line[0])
		list = http_append_header(list, line);
	return list ? http_s3_headers(target(rm, which), list) : NULL;
}

/* Whether the answer's validators say it is another version than the one opened. */
static bool changed_version(const struct remote *rm, const struct response *r)
{
	if (rm->etag[0])
		return r->head.etag[0] && strcmp(r->head.etag, rm->etag);
	if (rm->last_modified[0])
		return r->head.last_modified[0] && strcmp(r->head.last_modified, rm->last_modified);
	return false;
}

/*
 * Judge a finished request.  Returns 0, -EAGAIN (worth retrying; the
 * message says why), or another -errno.  For REQUEST_OPEN the answer may be
 * shorter than asked when the object is.
 */
static int judge(struct remote *rm, int which, CURLcode rc, const char *curl_msg, struct response *r,
		 uint64_t off, size_t len, enum request_kind kind)
{
	uint64_t expect_last = off + len - 1;
	char code[96];

	if (r->overflow)
		return qs_set_error(-EIO, "server sent more bytes than the range asked for");
	if (rc == CURLE_ABORTED_BY_CALLBACK && qs_source_interrupted())
		return qs_set_error(-EINTR, "interrupted");
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return qs_set_error(-EAGAIN, "%s", curl_msg[0] ? curl_msg : curl_easy_strerror(rc));
	/* A body cut on purpose (r->cut) is judged by its status below. */
	if (rc != CURLE_OK && !r->cut) {
		int err = http_retryable(rc, curl_msg) ? -EAGAIN : -EIO;

		return qs_set_error(err, "%s%s", curl_msg[0] ? curl_msg : curl_easy_strerror(rc),
				    rc == CURLE_SSL_CONNECT_ERROR && err == -EIO ?
				    " (the server speaks no TLS there: http:// rather than https://?)" : "");
	}
	http_s3_error_code(r->errbody, code, sizeof(code));
	switch (r->head.status) {
	case 206:
		break;
	case 200:
		return qs_set_error(-EIO, "server ignores range requests (200 instead of 206)");
	case 412:
		/* The first URL says what the object is: another version at the fallback is its fault. */
		if (which == TARGET_FALLBACK)
			return qs_set_error(-EIO, "the fallback %s has another version of the object", rm->alt.name);
		return qs_set_error(-ESTALE, "the object changed since it was opened; "
				    "reopen to see the new version");
	case 416:
		return qs_set_error(-EIO, "range not satisfiable (empty object?)");
	case 401:
	case 403:
	case 404:
		return http_refusal_error(target(rm, which), "", r->head.status, r->errbody);
	case 408:
	case 429:
		return qs_set_error(-EAGAIN, "HTTP %ld%s", r->head.status, code);
	default:
		return qs_set_error(r->head.status >= 500 ? -EAGAIN : -EIO, "HTTP %ld%s",
				    r->head.status, code);
	}
	if (kind == REQUEST_READ && changed_version(rm, r) && which == TARGET_FALLBACK)
		return qs_set_error(-EIO, "the fallback %s has another version of the object (%s, not %s)",
				    rm->alt.name, rm->etag[0] ? r->head.etag : r->head.last_modified,
				    rm->etag[0] ? rm->etag : rm->last_modified);
	if (kind == REQUEST_READ && changed_version(rm, r))
		return qs_set_error(-ESTALE, "the object changed since it was opened (%s, now %s); "
				    "reopen to see the new version",
				    rm->etag[0] ? rm->etag : rm->last_modified,
				    rm->etag[0] ? r->head.etag : r->head.last_modified);
	if (!r->head.has_range)
		return qs_set_error(-EIO, "answer without a valid Content-Range");
	if (kind == REQUEST_OPEN && r->head.range_total - 1 < expect_last)
		expect_last = r->head.range_total - 1;
	if (r->head.range_first != off || r->head.range_last != expect_last ||
	    (kind == REQUEST_READ && r->head.range_total != rm->size))
		return qs_set_error(-EIO, "asked for bytes %llu-%llu, got Content-Range %llu-%llu/%llu",
				    (unsigned long long)off, (unsigned long long)expect_last,
				    (unsigned long long)r->head.range_first, (unsigned long long)r->head.range_last,
				    (unsigned long long)r->head.range_total);
	if (r->got > expect_last - off + 1)
		return qs_set_error(-EIO, "answer longer than announced: %zu of %llu bytes", r->got,
				    (unsigned long long)(expect_last - off + 1));
	if (r->got != expect_last - off + 1)
		return qs_set_error(-EAGAIN, "short answer: %zu of %llu bytes", r->got,
				    (unsigned long long)(expect_last - off + 1));
	return 0;
}

/* Where the next request goes: the fallback while it stands in for the first URL. */
static int target_now(struct remote *rm)
{
	if (!rm->alt.url || !atomic_load(&rm->on_alt))
		return TARGET_FIRST;
	/* Held long enough: this request tries the first URL again. */
	return http_now_ms() - atomic_load(&rm->alt_since_ms) >= REMOTE_FALLBACK_HOLD_MS ? TARGET_FIRST
										  : TARGET_FALLBACK;
}

/* A request to 'which' ended in 'ret': where should the next one go? */
static void target_after(struct remote *rm, int which, int ret)
{
	if (!rm->alt.url)
		return;
	if (which == TARGET_FIRST && ret == 0 && atomic_load(&rm->on_alt))
		atomic_store(&rm->on_alt, false);
	else if (which == TARGET_FIRST && ret == -EAGAIN) {
		atomic_store(&rm->alt_since_ms, http_now_ms());
		atomic_store(&rm->on_alt, true);
	} else if (which == TARGET_FALLBACK && ret == -EAGAIN)
		atomic_store(&rm->on_alt, false);
}

static int request_once(struct remote *rm, const struct iovec *iov, int iovcnt, uint64_t off, size_t len,
			enum request_kind kind, uint64_t deadline_ms, struct response *r,
			const struct response *stream)
{
	char curl_msg[CURL_ERROR_SIZE] = "";
	int which = target_now(rm);
	struct curl_slist *headers;
	CURL *h;
	CURLcode rc;
	int ret;

	memset(r, 0, sizeof(*r));
	r->iov = iov;
	r->iovcnt = iovcnt;
	r->capacity = len;
	if (stream) {
		r->progress = stream->progress;
		r->progress_arg = stream->progress_arg;
		r->progress_base = stream->progress_base;
		r->rm = rm;
		r->want_first = off;
		r->want_last = off + len - 1;
	}
	headers = request_headers(rm, which, off, len, kind);
	h = headers ? handle_get(rm, which) : NULL;
	if (!h) {
		curl_slist_free_all(headers);
		return qs_set_error(-ENOMEM, "cannot set up a request");
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_msg);
	/* The whole transfer, not only the wait for its first byte, ends with the budget. */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, http_remaining_ms(deadline_ms));
	rc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(headers);
	ret = judge(rm, which, rc, curl_msg, r, off, len, kind);
	handle_put(rm, which, h, rc == CURLE_OK);
	target_after(rm, which, ret);
	return ret;
}

struct range_request {
	struct remote *rm;
	const struct iovec *iov;
	int iovcnt;
	uint64_t off;
	size_t len;
	enum request_kind kind;
	struct response *r;
	struct response *stream;        /* a streamed read: its hook and what earlier attempts delivered */
};

static int range_request_once(void *arg, uint64_t deadline)
{
	struct range_request *q = arg;
	struct iovec rest;
	size_t done;
	int ret;

	if (!q->stream)
		return request_once(q->rm, q->iov, q->iovcnt, q->off, q->len, q->kind, deadline, q->r, NULL);
	/* A streamed read resumes where the last trusted answer broke off: those bytes were announced. */
	done = q->stream->progress_base;
	rest.iov_base = (char *)q->iov[0].iov_base + done;
	rest.iov_len = q->len - done;
	ret = request_once(q->rm, &rest, 1, q->off + done, q->len - done, q->kind, deadline, q->r, q->stream);
	if (ret < 0 && q->r->trusted && !q->r->overflow)
		q->stream->progress_base += q->r->got;
	return ret;
}

/* A range request with retries; *r holds the last answer. */
static int request(struct remote *rm, const struct iovec *iov, int iovcnt, uint64_t off, size_t len,
		   enum request_kind kind, unsigned max_attempts, struct response *r)
{
	struct range_request q = { rm, iov, iovcnt, off, len, kind, r, NULL };

	return http_with_retries(rm->retry_seconds, max_attempts, range_request_once, &q);
}

static int remote_fetch(void *ctx, const struct iovec *iov, int iovcnt, uint64_t off)
{
	struct remote *rm = ctx;
	struct response *r = malloc(sizeof(*r));
	size_t len = 0;
	int ret;

	if (!r)
		return qs_set_error(-ENOMEM, "out of memory");
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	ret = request(rm, iov, iovcnt, off, len, REQUEST_READ, 0, r);
	free(r);
	return ret;
}

/* [off, off+len) into buf, telling 'progress' of each byte as it arrives (chunk_cache.h). */
static int remote_fetch_stream(void *ctx, void *buf, size_t len, uint64_t off,
			       void (*progress)(void *arg, size_t filled), void *arg)
{
	struct remote *rm = ctx;
	struct response *r = malloc(sizeof(*r)), *stream = calloc(1, sizeof(*stream));
	struct iovec iov = { buf, len };
	struct range_request q = { rm, &iov, 1, off, len, REQUEST_READ, r, stream };
	int ret;

	if (!r || !stream) {
		free(r);
		free(stream);
		return qs_set_error(-ENOMEM, "out of memory");
	}
	stream->progress = progress;
	stream->progress_arg = arg;
	ret = http_with_retries(rm->retry_seconds, 0, range_request_once, &q);
	free(r);
	free(stream);
	return ret;
}

static void remote_free(void *ctx)
{
	struct remote *rm = ctx;

	for (int w = 0; w < TARGETS; w++)
		while (rm->npool[w])
			curl_easy_cleanup(rm->pool[w][--rm->npool[w]]);
	pthread_mutex_destroy(&rm->pool_lock);
	remote_target_clear(&rm->t);
	remote_target_clear(&rm->alt);
	free(rm->key);
	free(rm);
}

static char *remote_identity(const struct remote *rm)
{
	char *id;

	if (asprintf(&id, "%s:%llu:%s", rm->key, (unsigned long long)rm->size,
		     rm->etag[0] ? rm->etag : rm->last_modified) < 0)
		return NULL;
	return id;
}

/* The object's size and version, and its first 'len' bytes (or all, if fewer) into 'first'. */
static int remote_first_request(struct remote *rm, char *first, size_t len, bool quick)
{
	struct iovec iov = { first, len };
	struct response *r = malloc(sizeof(*r));
	int ret;

	if (!r)
		return qs_set_error(-ENOMEM, "out of memory");
	ret = request(rm, &iov, 1, 0, len, REQUEST_OPEN, quick ? 1 : 0, r);
	if (ret == 0) {
		rm->size = r->head.range_total;
		/* A weak ETag cannot be used with If-Match; Last-Modified then pins the version. */
		if (r->head.etag[0] && strncmp(r->head.etag, "W/", 2))
			snprintf(rm->etag, sizeof(rm->etag), "%s", r->head.etag);
		snprintf(rm->last_modified, sizeof(rm->last_modified), "%s", r->head.last_modified);
		snprintf(rm->verity_root, sizeof(rm->verity_root), "%s", r->head.verity_root);
		if (!rm->etag[0] && !rm->last_modified[0])
			ret = qs_set_error(-EIO, "no ETag or Last-Modified: cannot tell if the object "
					   "changes");
	}
	free(r);
	return ret;
}

/* The validator part of an identity remote_identity() made for this object, or NULL. */
static const char *identity_validator(const struct remote *rm, const char *identity)
{
	char prefix[64];
	size_t name_len = strlen(rm->key);

	snprintf(prefix, sizeof(prefix), ":%llu:", (unsigned long long)rm->size);
	if (strncmp(identity, rm->key, name_len) || strncmp(identity + name_len, prefix, strlen(prefix)))
		return NULL;
	return identity + name_len + strlen(prefix);
}

/* What the open request asks for: the first chunk, or 64 KiB of it when a profile says what else to fetch. */
static size_t open_len(const struct qs_source_options *opt)
{
	size_t chunk_size;

	if (chunk_cache_chunk_size(opt, &chunk_size) < 0)
		return 0;
	return opt->prefetch && chunk_size > REMOTE_OPEN_PROFILED ? REMOTE_OPEN_PROFILED : chunk_size;
}

/* The server did not answer: open what the cache directory knows of the object, if anything. */
static int open_from_cache(struct remote *rm, const struct qs_source_options *opt, int err,
			   struct qs_source **out)
{
	const struct chunk_fetcher fetcher = { remote_fetch, remote_free, rm, remote_fetch_stream };
	char *identity, *notice, *root = NULL, *why = strdup(qs_last_error());
	const char *validator;
	uint64_t size;
	int ret;

	if (!why || disk_cache_load_object(opt->cache_dir, rm->key, &size, &identity, &root) < 0) {
		free(why);
		return err;
	}
	snprintf(rm->verity_root, sizeof(rm->verity_root), "%s", root ? root : "");
	free(root);
	rm->size = size;
	/* The identity ends with the validator: keep pinning to it, should the server come back. */
	validator = identity_validator(rm, identity);
	if (!validator) {
		free(why);
		free(identity);
		return err;
	}
	if (validator[0] == '"')
		snprintf(rm->etag, sizeof(rm->etag), "%s", validator);
	else
		snprintf(rm->last_modified, sizeof(rm->last_modified), "%s", validator);
	if (asprintf(&notice, "server unreachable (%s); serving the version recorded in cache "
		     "directory %s", why, opt->cache_dir) < 0)
		notice = NULL;
	free(why);
	ret = chunk_cache_open(&fetcher, rm->t.name, identity, size, opt, NULL, open_len(opt), notice, out);
	if (ret == 0 && rm->verity_root[0])
		(*out)->verity_root = rm->verity_root;
	free(notice);
	free(identity);
	return ret;
}

/* Where requests for 'spec' (http://, https://, s3://) go, through opt->proxy if set. */
static int spec_target(const char *spec, const struct qs_source_options *opt, struct remote_target *t)
{
	int ret;

	if (!strncmp(spec, "s3://", 5)) {
		ret = s3_target(spec, opt, t);
	} else if (!strncmp(spec, "http://", 7) || !strncmp(spec, "https://", 8)) {
		t->url = strdup(spec);
		t->name = remote_display_name(spec);
		ret = t->url && t->name ? 0 : qs_set_error(-ENOMEM, "out of memory");
	} else {
		ret = qs_set_error(-EINVAL, "not an http://, https:// or s3:// URL");
	}
	if (ret == 0 && opt->proxy)
		ret = remote_set_proxy(t, opt->proxy);
	return ret;
}

int qs_source_open_remote(const char *spec, const struct qs_source_options *opt, struct qs_source **out)
{
	static const struct qs_source_options defaults;
	struct chunk_fetcher fetcher;
	struct remote *rm;
	char *first = NULL, *identity = NULL;
	size_t chunk_size, first_len;
	bool cached = false;
	int ret;

	if (!opt)
		opt = &defaults;
	ret = http_init();
	if (ret == 0)
		ret = chunk_cache_chunk_size(opt, &chunk_size);
	if (ret < 0)
		return ret;
	rm = calloc(1, sizeof(*rm));
	if (!rm)
		return qs_set_error(-ENOMEM, "out of memory");
	pthread_mutex_init(&rm->pool_lock, NULL);
	rm->retry_seconds = opt->retry_seconds ? opt->retry_seconds : REMOTE_DEFAULT_RETRY_SECONDS;
	/* A stall may use a quarter of the budget: time must remain to retry elsewhere. */
	rm->stall_seconds = rm->retry_seconds / 4;
	if (rm->stall_seconds > REMOTE_STALL_SECONDS)
		rm->stall_seconds = REMOTE_STALL_SECONDS;
	if (rm->stall_seconds < 1)
		rm->stall_seconds = 1;
	ret = spec_target(spec, opt, &rm->t);
	if (ret == 0 && opt->fallback) {
		ret = spec_target(opt->fallback, opt, &rm->alt);
		if (ret < 0)
			ret = qs_set_error(ret, "-o fallback: %s", qs_last_error());
	}
	if (ret == 0 && !(rm->key = remote_cache_key(rm->t.url)))
		ret = qs_set_error(-ENOMEM, "out of memory");
	if (ret < 0)
		goto fail;
	first_len = open_len(opt);
	first = malloc(first_len);
	if (!first) {
		ret = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	if (opt->cache_dir) {
		uint64_t size;

		cached = disk_cache_load_object(opt->cache_dir, rm->key, &size, &identity, NULL) == 0;
		free(identity);
		identity = NULL;
	}
	/* With a recorded identity, an unreachable server is not waited for: the cache stands in. */
	ret = remote_first_request(rm, first, first_len, cached);
	if (ret == -EAGAIN) {
		free(first);
		if (cached)
			return open_from_cache(rm, opt, ret, out);
		first = NULL;
		goto fail;
	}
	if (ret < 0)
		goto fail;
	if (first_len > rm->size)
		first_len = rm->size;
	identity = remote_identity(rm);
	if (!identity) {
		ret = qs_set_error(-ENOMEM, "out of memory");
		goto fail;
	}
	if (opt->cache_dir && disk_cache_save_object(opt->cache_dir, rm->key, rm->size, identity, rm->verity_root) < 0) {
		ret = -EIO;
		goto fail;
	}
	fetcher = (struct chunk_fetcher){ remote_fetch, remote_free, rm, remote_fetch_stream };
	ret = chunk_cache_open(&fetcher, rm->t.name, identity, rm->size, opt, first, first_len, NULL, out);
	if (ret == 0 && rm->verity_root[0])
		(*out)->verity_root = rm->verity_root;
	free(first);
	free(identity);
	return ret;
fail:
	free(first);
	free(identity);
	remote_free(rm);
	return ret;
}

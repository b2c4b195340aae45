/*
 * source_http.c - range requests to an HTTP(S) server or S3, with retries
 * and the object pinned to the version seen at open.
 *
 * The open request asks for the first chunk: its Content-Range gives the
 * object's size and its ETag (or Last-Modified) the version, so opening
 * costs one round trip and the superblock is already at hand.  Every later
 * request carries If-Match (If-Unmodified-Since without a strong ETag) and
 * its answer is checked: a 412 or another validator means the object
 * changed (-ESTALE); a Content-Range other than the one asked for, or a
 * body longer or shorter than it, is an error and never data.
 *
 * Connection errors, timeouts, stalls, 5xx and 429 are retried with
 * jittered exponential backoff until the retry budget is spent, each retry
 * going to the fallback URL (-o fallback=: the origin behind a caching
 * tier, say) if there is one and the last try did not; what no
 * retry can fix (a host name that does not resolve, a certificate that
 * does not verify, 401/403/404) fails at once.  Easy
 * handles are pooled so that connections are reused.  Messages name the
 * object by remote_display_name(): no credentials, no query string.
 *
 * CA certificates: libcurl's default bundle, or the file in CURL_CA_BUNDLE
 * or SSL_CERT_FILE (AWS_CA_BUNDLE first for S3), or the directory in
 * SSL_CERT_DIR.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "aws_auth.h"
#include "chunk_cache.h"
#include "disk_cache.h"
#include "quash.h"
#include "source_remote.h"

#define REMOTE_CONNECT_TIMEOUT  10        /* seconds to establish a connection */
#define REMOTE_STALL_SECONDS    15        /* a transfer this long below REMOTE_MIN_RATE is retried */
/*
 * Bytes per second under which a transfer counts as stalled.  curl's own
 * notion (1 byte/s) let a server that drips 4 bytes a second hold a read
 * for ever; 1 KiB/s is far below any link an image is read over.
 */
#define REMOTE_MIN_RATE         1024
/*
 * Uploads (a multipart upload's 8 MiB parts) get at least the time to send
 * their body at this rate, however little of the retry budget is left.
 */
#define REMOTE_UPLOAD_MIN_RATE  (256u << 10)
#define REMOTE_INTERRUPT_POLL_MS 100      /* backoff sleeps check for an interrupt this often */
#define REMOTE_BACKOFF_FIRST_MS 50
#define REMOTE_BACKOFF_MAX_MS   4000
#define REMOTE_POOL_MAX         16        /* idle connections kept */
#define REMOTE_ERRBODY_MAX      1024      /* bytes of an error answer kept for its message */
#define REMOTE_MAX_REDIRECTS    5
/*
 * With a prefetch profile given, the open request asks for this much
 * rather than a whole chunk: the profile says what else to fetch, and the
 * rest of a 4 MiB first chunk cost 0.15 s before the mount was ready on
 * bench/fleet.sh's 200 Mbit/s link.  A superblock and a SIF header fit.
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
	long status;
	bool has_range;
	uint64_t range_first, range_last, range_total;
	char etag[REMOTE_VALIDATOR_MAX];
	char last_modified[REMOTE_VALIDATOR_MAX];
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

static bool interrupted(void)
{
	return qs_source_interrupted();
}

/* curl's progress callback for reads: non-zero aborts the transfer. */
static int read_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	(void)arg, (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return interrupted();
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

/*
 * remote_call()'s requests share one connection cache (and DNS and TLS
 * sessions), so that the requests of an upload reuse connections: over TLS
 * each new one costs a handshake.  Process-wide, never freed.
 */
static CURLSH *call_share;
static pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *arg)
{
	(void)h, (void)access, (void)arg;
	pthread_mutex_lock(&share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *arg)
{
	(void)h, (void)arg;
	pthread_mutex_unlock(&share_locks[data]);
}

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (curl_init_result != CURLE_OK)
		return;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&share_locks[i], NULL);
	/* Without a share every request connects anew: slower, still correct. */
	call_share = curl_share_init();
	if (call_share && (curl_share_setopt(call_share, CURLSHOPT_LOCKFUNC, share_lock) ||
			   curl_share_setopt(call_share, CURLSHOPT_UNLOCKFUNC, share_unlock) ||
			   curl_share_setopt(call_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) ||
			   curl_share_setopt(call_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) ||
			   curl_share_setopt(call_share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION))) {
		curl_share_cleanup(call_share);
		call_share = NULL;
	}
}

/* Why curl_init() failed: libcurl missing (it is opened on first use), or its own init. */
static int curl_init_failed(void)
{
	if (qs_curl_load() < 0)
		return qs_set_error(-ENOSYS, "%s", qs_curl_error());
	return qs_set_error(-EIO, "cannot initialise libcurl");
}

/* ---- one request ---------------------------------------------------------- */

static bool header_is(const char *line, size_t len, const char *name, const char **value, size_t *vlen)
{
	size_t n = strlen(name);

	if (len <= n || strncasecmp(line, name, n) || line[n] != ':')
		return false;
	line += n + 1;
	len -= n + 1;
	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	while (len && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' '))
		len--;
	*value = line;
	*vlen = len;
	return true;
}

static void copy_validator(char *dst, const char *v, size_t n)
{
	if (n >= REMOTE_VALIDATOR_MAX)
		n = REMOTE_VALIDATOR_MAX - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* "bytes FIRST-LAST/TOTAL"; false if it is anything else. */
static bool parse_content_range(const char *v, size_t n, struct response *r)
{
	char buf[128], *p, *end;

	if (n >= sizeof(buf) || n < 6 || strncasecmp(v, "bytes ", 6))
		return false;
	memcpy(buf, v + 6, n - 6);
	buf[n - 6] = '\0';
	p = buf;
	errno = 0;
	r->range_first = strtoull(p, &end, 10);
	if (end == p || *end != '-')
		return false;
	p = end + 1;
	r->range_last = strtoull(p, &end, 10);
	if (end == p || *end != '/')
		return false;
	p = end + 1;
	r->range_total = strtoull(p, &end, 10);
	if (end == p || *end || errno || r->range_last < r->range_first || r->range_last >= r->range_total)
		return false;
	return true;
}

static size_t on_header(char *line, size_t size, size_t nitems, void *arg)
{
	struct response *r = arg;
	size_t len = size * nitems, vlen;
	const char *v;

	if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
		/* A new answer (after a redirect or a 100 Continue): forget the last one's headers. */
		const char *sp = memchr(line, ' ', len);

		r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		r->has_range = false;
		r->etag[0] = r->last_modified[0] = '\0';
		return len;
	}
	if (header_is(line, len, "content-range", &v, &vlen))
		r->has_range = parse_content_range(v, vlen, r);
	else if (header_is(line, len, "etag", &v, &vlen))
		copy_validator(r->etag, v, vlen);
	else if (header_is(line, len, "last-modified", &v, &vlen))
		copy_validator(r->last_modified, v, vlen);
	return len;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct response *r = arg;
	size_t len = size * nmemb, left = len;

	if (r->status != 206) {
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
	if (r->has_range && r->range_last - r->range_first + 1 < r->capacity)
		r->capacity = r->range_last - r->range_first + 1;
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
			r->trusted = r->has_range && r->range_first == r->want_first && r->range_last == r->want_last &&
				     r->range_total == r->rm->size && !changed_version(r->rm, r);
		}
		if (r->trusted)
			r->progress(r->progress_arg, r->progress_base + r->got);
	}
	return len;
}

/* Options every request to 't' has: timeouts, CA, signing, redirects. */
static void handle_setup(CURL *h, const struct remote_target *t, long stall_seconds)
{
	const char *ca;

	curl_easy_setopt(h, CURLOPT_URL, t->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)REMOTE_CONNECT_TIMEOUT);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)REMOTE_MIN_RATE);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_seconds);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (t->proxy)
		curl_easy_setopt(h, CURLOPT_PROXY, t->proxy);
	ca = t->sigv4 ? getenv("AWS_CA_BUNDLE") : NULL;
	if (!ca || !*ca)
		ca = getenv("CURL_CA_BUNDLE");
	if (!ca || !*ca)
		ca = getenv("SSL_CERT_FILE");
	if (ca && *ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	ca = getenv("SSL_CERT_DIR");
	if (ca && *ca)
		curl_easy_setopt(h, CURLOPT_CAPATH, ca);
	if (t->sigv4 && t->creds && t->creds->access_key) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, t->sigv4);
		curl_easy_setopt(h, CURLOPT_USERNAME, t->creds->access_key);
		curl_easy_setopt(h, CURLOPT_PASSWORD, t->creds->secret_key);
	} else if (!t->sigv4) {
		/* Plain HTTP may redirect; signed requests may not (the signature covers the host). */
		curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(h, CURLOPT_MAXREDIRS, (long)REMOTE_MAX_REDIRECTS);
	}
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
	handle_setup(h, target(rm, which), rm->stall_seconds);
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

static struct curl_slist *append_header(struct curl_slist *list, const char *line)
{
	struct curl_slist *next = curl_slist_append(list, line);

	if (!next)
		curl_slist_free_all(list);
	return next;
}

/* What S3 needs besides the signature curl makes; frees 'list' and returns NULL on failure. */
static struct curl_slist *s3_headers(const struct remote_target *t, struct curl_slist *list)
{
	const char *token = t->creds ? t->creds->session_token : NULL;
	char *line;

	if (!t->sigv4)
		return list;
	/* curl 7.88 signs the payload as unsigned but does not say so itself. */
	list = append_header(list, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (list && token && t->creds->access_key) {
		if (asprintf(&line, "x-amz-security-token: %s", token) < 0) {
			curl_slist_free_all(list);
			return NULL;
		}
		list = append_header(list, line);
		explicit_bzero(line, strlen(line));
		free(line);
	}
	return list;
}

static struct curl_slist *request_headers(const struct remote *rm, int which, uint64_t off, size_t len,
					  enum request_kind kind)
{
	struct curl_slist *list;
	char line[REMOTE_VALIDATOR_MAX + 64];

	snprintf(line, sizeof(line), "Range: bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	list = append_header(NULL, line);
	line[0] = '\0';
	if (kind == REQUEST_READ && rm->etag[0])
		snprintf(line, sizeof(line), "If-Match: %s", rm->etag);
	else if (kind == REQUEST_READ && rm->last_modified[0])
		snprintf(line, sizeof(line), "If-Unmodified-Since: %s", rm->last_modified);
	if (list && line[0])
		list = append_header(list, line);
	return list ? s3_headers(target(rm, which), list) : NULL;
}

/* The <Code> of an S3 error body, or "". */
static void s3_error_code(const char *body, char *code, size_t size)
{
	const char *s = strstr(body, "<Code>"), *e = s ? strstr(s, "</Code>") : NULL;

	code[0] = '\0';
	if (s && e && (size_t)(e - s - 6) < size)
		snprintf(code, size, " (%.*s)", (int)(e - s - 6), s + 6);
}

/*
 * A refusal (401, 403) or a 404, said so that the fix is plain: an S3
 * request that went unsigned because no credentials were found says that,
 * since "access denied" alone sends people to the bucket policy; S3's
 * NoSuchBucket and NoSuchKey are said in words.  prefix: "" or "PUT: ".
 */
static int refusal_error(const struct remote_target *t, const char *prefix, long status, const char *body)
{
	char code[96];

	s3_error_code(body, code, sizeof(code));
	if (status == 404 && strcmp(code, " (NoSuchBucket)") == 0)
		return qs_set_error(-ENOENT, "%sno such bucket (S3 NoSuchBucket)", prefix);
	if (status == 404 && strcmp(code, " (NoSuchKey)") == 0)
		return qs_set_error(-ENOENT, "%sno such object in the bucket (S3 NoSuchKey)", prefix);
	if (status == 404)
		return qs_set_error(-ENOENT, "%snot found: HTTP 404%s", prefix, code);
	if (t->sigv4 && (!t->creds || !t->creds->access_key))
		return qs_set_error(-EACCES, "%saccess denied: HTTP %ld%s; no AWS credentials were found "
				    "(AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws/credentials), so the request "
				    "went unsigned", prefix, status, code);
	return qs_set_error(-EACCES, "%saccess denied: HTTP %ld%s", prefix, status, code);
}

/*
 * Whether waiting can fix it: a refused or reset connection, a timeout, a
 * cut answer may be gone on the next attempt.  A host name that does not
 * resolve, a certificate that does not verify, a bad URL will not: those
 * fail at once instead of spending the retry budget.
 */
static bool retryable_curl_error(CURLcode rc, const char *msg)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	case CURLE_SSL_CONNECT_ERROR:
		/* A handshake cut short may work next time; a server that speaks no TLS at all never will. */
		return !strstr(msg, "wrong version number") && !strstr(msg, "unknown protocol") &&
		       !strstr(msg, "packet length too long") && !strstr(msg, "http request");
	default:
		return false;
	}
}

/* Whether the answer's validators say it is another version than the one opened. */
static bool changed_version(const struct remote *rm, const struct response *r)
{
	if (rm->etag[0])
		return r->etag[0] && strcmp(r->etag, rm->etag);
	if (rm->last_modified[0])
		return r->last_modified[0] && strcmp(r->last_modified, rm->last_modified);
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
	if (rc == CURLE_ABORTED_BY_CALLBACK && interrupted())
		return qs_set_error(-EINTR, "interrupted");
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return qs_set_error(-EAGAIN, "%s", curl_msg[0] ? curl_msg : curl_easy_strerror(rc));
	/* A body cut on purpose (r->cut) is judged by its status below. */
	if (rc != CURLE_OK && !r->cut) {
		int err = retryable_curl_error(rc, curl_msg) ? -EAGAIN : -EIO;

		return qs_set_error(err, "%s%s", curl_msg[0] ? curl_msg : curl_easy_strerror(rc),
				    rc == CURLE_SSL_CONNECT_ERROR && err == -EIO ?
				    " (the server speaks no TLS there: http:// rather than https://?)" : "");
	}
	s3_error_code(r->errbody, code, sizeof(code));
	switch (r->status) {
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
		return refusal_error(target(rm, which), "", r->status, r->errbody);
	case 408:
	case 429:
		return qs_set_error(-EAGAIN, "HTTP %ld%s", r->status, code);
	default:
		return qs_set_error(r->status >= 500 ? -EAGAIN : -EIO, "HTTP %ld%s",
				    r->status, code);
	}
	if (kind == REQUEST_READ && changed_version(rm, r) && which == TARGET_FALLBACK)
		return qs_set_error(-EIO, "the fallback %s has another version of the object (%s, not %s)",
				    rm->alt.name, rm->etag[0] ? r->etag : r->last_modified,
				    rm->etag[0] ? rm->etag : rm->last_modified);
	if (kind == REQUEST_READ && changed_version(rm, r))
		return qs_set_error(-ESTALE, "the object changed since it was opened (%s, now %s); "
				    "reopen to see the new version",
				    rm->etag[0] ? rm->etag : rm->last_modified,
				    rm->etag[0] ? r->etag : r->last_modified);
	if (!r->has_range)
		return qs_set_error(-EIO, "answer without a valid Content-Range");
	if (kind == REQUEST_OPEN && r->range_total - 1 < expect_last)
		expect_last = r->range_total - 1;
	if (r->range_first != off || r->range_last != expect_last ||
	    (kind == REQUEST_READ && r->range_total != rm->size))
		return qs_set_error(-EIO, "asked for bytes %llu-%llu, got Content-Range %llu-%llu/%llu",
				    (unsigned long long)off, (unsigned long long)expect_last,
				    (unsigned long long)r->range_first, (unsigned long long)r->range_last,
				    (unsigned long long)r->range_total);
	if (r->got > expect_last - off + 1)
		return qs_set_error(-EIO, "answer longer than announced: %zu of %llu bytes", r->got,
				    (unsigned long long)(expect_last - off + 1));
	if (r->got != expect_last - off + 1)
		return qs_set_error(-EAGAIN, "short answer: %zu of %llu bytes", r->got,
				    (unsigned long long)(expect_last - off + 1));
	return 0;
}

static uint64_t now_ms(void);

/* Milliseconds left before 'deadline', at least 1 (0 would mean no limit to curl). */
static long remaining_ms(uint64_t deadline)
{
	uint64_t now = now_ms();

	return deadline > now ? (long)(deadline - now) : 1;
}

/* Where the next request goes: the fallback while it stands in for the first URL. */
static int target_now(struct remote *rm)
{
	if (!rm->alt.url || !atomic_load(&rm->on_alt))
		return TARGET_FIRST;
	/* Held long enough: this request tries the first URL again. */
	return now_ms() - atomic_load(&rm->alt_since_ms) >= REMOTE_FALLBACK_HOLD_MS ? TARGET_FIRST
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
		atomic_store(&rm->alt_since_ms, now_ms());
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
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, remaining_ms(deadline_ms));
	rc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(headers);
	ret = judge(rm, which, rc, curl_msg, r, off, len, kind);
	handle_put(rm, which, h, rc == CURLE_OK);
	target_after(rm, which, ret);
	return ret;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Full jitter in [delay/2, delay]: retrying clients spread out instead of arriving together. */
static unsigned jitter(unsigned delay_ms)
{
	static __thread unsigned short seed[3];

	if (!seed[0] && !seed[1] && !seed[2]) {
		uint64_t t = now_ms() ^ ((uint64_t)getpid() << 16) ^ (uintptr_t)&seed;

		seed[0] = t, seed[1] = t >> 16, seed[2] = t >> 32;
	}
	return delay_ms / 2 + (unsigned)(nrand48(seed) % (delay_ms / 2 + 1));
}

/* Sleep 'ms', or less if this thread is interrupted: -EINTR then. */
static int backoff_sleep(unsigned ms)
{
	while (ms > 0) {
		unsigned step = ms < REMOTE_INTERRUPT_POLL_MS ? ms : REMOTE_INTERRUPT_POLL_MS;

		if (interrupted())
			return qs_set_error(-EINTR, "interrupted");
		usleep(step * 1000u);
		ms -= step;
	}
	return 0;
}

/*
 * Call once(arg, deadline) until it returns something other than -EAGAIN,
 * backing off between attempts, within 'retry_seconds' in all: 'deadline'
 * (CLOCK_MONOTONIC ms) bounds every attempt's whole transfer too, so the
 * budget holds against a server that drips or never ends its answer.
 * 'max_attempts' 0 means as many as the budget allows.  Running out gives
 * -EIO (-EAGAIN when max_attempts is 1, so that the caller can tell
 * "unreachable" from other errors).
 */
static int with_retries(unsigned retry_seconds, unsigned max_attempts, int (*once)(void *arg, uint64_t deadline),
			void *arg)
{
	uint64_t deadline = now_ms() + (uint64_t)retry_seconds * 1000;
	unsigned delay = REMOTE_BACKOFF_FIRST_MS, attempt;
	char last[512];
	int ret;

	for (attempt = 1;; attempt++) {
		unsigned wait;

		ret = once(arg, deadline);
		if (ret != -EAGAIN)
			return ret;
		wait = jitter(delay);
		if ((max_attempts && attempt >= max_attempts) || now_ms() + wait >= deadline)
			break;
		if (attempt == 1)
			qs_source_retry_notice(qs_last_error(), (unsigned)((deadline - now_ms() + 999) / 1000));
		if (backoff_sleep(wait) < 0)
			return -EINTR;
		if (delay < REMOTE_BACKOFF_MAX_MS)
			delay *= 2;
	}
	if (max_attempts == 1)
		return -EAGAIN;
	snprintf(last, sizeof(last), "%s", qs_last_error());
	return qs_set_error(-EIO, "%s; gave up after %u attempts in %u s", last, attempt, retry_seconds);
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

	return with_retries(rm->retry_seconds, max_attempts, range_request_once, &q);
}

/* ---- other requests: what the S3 sink's multipart upload sends ------------ */

struct call {
	const struct remote_target *t;
	const char *method;
	char *url;
	const char *body;
	size_t body_len, sent;
	struct remote_reply *reply;
};

static size_t call_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct call *c = arg;
	size_t n = size * nitems;

	if (n > c->body_len - c->sent)
		n = c->body_len - c->sent;
	memcpy(buf, c->body + c->sent, n);
	c->sent += n;
	return n;
}

static size_t call_header(char *line, size_t size, size_t nitems, void *arg)
{
	struct remote_reply *r = arg;
	size_t len = size * nitems, vlen;
	const char *v;

	if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
		const char *sp = memchr(line, ' ', len);

		r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		r->etag[0] = '\0';
	} else if (header_is(line, len, "etag", &v, &vlen)) {
		copy_validator(r->etag, v, vlen);
	}
	return len;
}

static size_t call_write(char *data, size_t size, size_t nmemb, void *arg)
{
	const struct call *c = arg;
	struct remote_reply *r = c->reply;
	size_t len = size * nmemb, keep = len, max = c->t->reply_max ? c->t->reply_max : REMOTE_REPLY_MAX;
	char *grown;

	if (keep > max - r->body_len)
		keep = max - r->body_len;
	if (r->body_len + keep + 1 > r->body_cap) {
		/* Doubling: a listing's megabytes arrive 16 KiB at a time. */
		size_t cap = r->body_cap ? 2 * r->body_cap : 4096;

		while (cap < r->body_len + keep + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		grown = realloc(r->body, cap);
		if (!grown)
			return 0;
		r->body = grown;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, keep);
	r->body_len += keep;
	r->body[r->body_len] = '\0';
	if (keep < len) {
		r->cut = true;      /* no answer of ours is this long: stop reading, judge by the status */
		return 0;
	}
	return len;
}

/* A progress callback: non-zero ends the transfer once the caller cancels. */
static int call_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			 curl_off_t ulnow)
{
	const struct call *c = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return (c->t->cancel && __atomic_load_n(c->t->cancel, __ATOMIC_RELAXED)) || interrupted();
}

static int call_judge(const struct call *c, CURLcode rc, const char *curl_msg)
{
	long st = c->reply->status;
	char code[96];

	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return interrupted() ? qs_set_error(-EINTR, "%s interrupted", c->method)
				     : qs_set_error(-ECANCELED, "%s cancelled", c->method);
	if (rc != CURLE_OK && !c->reply->cut)
		return qs_set_error(retryable_curl_error(rc, curl_msg) ? -EAGAIN : -EIO, "%s %s", c->method,
				    curl_msg[0] ? curl_msg : curl_easy_strerror(rc));
	if (st >= 200 && st < 300)
		return 0;
	if (st == 401 || st == 403 || st == 404) {
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "%s: ", c->method);
		return refusal_error(c->t, prefix, st, c->reply->body ? c->reply->body : "");
	}
	s3_error_code(c->reply->body ? c->reply->body : "", code, sizeof(code));
	return qs_set_error(st >= 500 || st == 408 || st == 429 ? -EAGAIN : -EIO, "%s: HTTP %ld%s",
			    c->method, st, code);
}

static int call_once(void *arg, uint64_t deadline)
{
	struct call *c = arg;
	long min_ms = (long)((uint64_t)c->body_len * 1000 / REMOTE_UPLOAD_MIN_RATE);
	char curl_msg[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers;
	CURL *h = curl_easy_init();
	CURLcode rc;

	remote_reply_clear(c->reply);
	c->sent = 0;
	/* Never "Expect:" to remove a header: curl 7.88 would sign it, yet not send it. */
	headers = append_header(NULL, "Content-Type: application/octet-stream");
	headers = headers ? s3_headers(c->t, headers) : NULL;
	if (!h || !headers) {
		curl_slist_free_all(headers);
		if (h)
			curl_easy_cleanup(h);
		return qs_set_error(-ENOMEM, "cannot set up a request");
	}
	handle_setup(h, c->t, REMOTE_STALL_SECONDS);
	if (call_share)
		curl_easy_setopt(h, CURLOPT_SHARE, call_share);
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, call_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c->reply);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, call_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_msg);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, call_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, remaining_ms(deadline) > min_ms ? remaining_ms(deadline) : min_ms);
	if (!strcmp(c->method, "PUT")) {
		curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);    /* no 100-continue round trip */
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, call_read);
		curl_easy_setopt(h, CURLOPT_READDATA, c);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->body_len);
	} else if (!strcmp(c->method, "POST")) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body ? c->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
	} else if (strcmp(c->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
	}
	rc = curl_easy_perform(h);
	curl_easy_cleanup(h);
	curl_slist_free_all(headers);
	return call_judge(c, rc, curl_msg);
}

int remote_call(const struct remote_target *t, const char *method, const char *query, const void *body,
		size_t len, unsigned retry_seconds, struct remote_reply *reply)
{
	struct call c = { t, method, NULL, body, len, 0, reply };
	int ret;

	memset(reply, 0, sizeof(*reply));
	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK)
		return curl_init_failed();
	if (asprintf(&c.url, "%s%s%s", t->url, query ? "?" : "", query ? query : "") < 0)
		return qs_set_error(-ENOMEM, "out of memory");
	ret = with_retries(retry_seconds ? retry_seconds : REMOTE_DEFAULT_RETRY_SECONDS, 0, call_once, &c);
	free(c.url);
	return ret;
}

void remote_reply_clear(struct remote_reply *reply)
{
	free(reply->body);
	memset(reply, 0, sizeof(*reply));
}

/* ---- the source ------------------------------------------------------------ */

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
	ret = with_retries(rm->retry_seconds, 0, range_request_once, &q);
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
		rm->size = r->range_total;
		/* A weak ETag cannot be used with If-Match; Last-Modified then pins the version. */
		if (r->etag[0] && strncmp(r->etag, "W/", 2))
			snprintf(rm->etag, sizeof(rm->etag), "%s", r->etag);
		snprintf(rm->last_modified, sizeof(rm->last_modified), "%s", r->last_modified);
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
	char *identity, *notice, *why = strdup(qs_last_error());
	const char *validator;
	uint64_t size;
	int ret;

	if (!why || disk_cache_load_object(opt->cache_dir, rm->key, &size, &identity) < 0) {
		free(why);
		return err;
	}
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
	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK)
		return curl_init_failed();
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

		cached = disk_cache_load_object(opt->cache_dir, rm->key, &size, &identity) == 0;
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
	if (opt->cache_dir && disk_cache_save_object(opt->cache_dir, rm->key, rm->size, identity) < 0) {
		ret = -EIO;
		goto fail;
	}
	fetcher = (struct chunk_fetcher){ remote_fetch, remote_free, rm, remote_fetch_stream };
	ret = chunk_cache_open(&fetcher, rm->t.name, identity, rm->size, opt, first, first_len, NULL, out);
	free(first);
	free(identity);
	return ret;
fail:
	free(first);
	free(identity);
	remote_free(rm);
	return ret;
}

/*
 * http.c - the one HTTP request engine: libcurl's set-up, the answer's
 * headers, retries with backoff, and what a failed request is said as.
 * The range source (remote_source.c) and remote_call() below both send
 * their requests through it.
 *
 * Connection errors, timeouts, stalls, 5xx and 429 are retried with
 * jittered exponential backoff until the retry budget is spent; what no
 * retry can fix (a host name that does not resolve, a certificate that does
 * not verify, 401/403/404) fails at once.  remote_call() is what the S3
 * sink's multipart upload and the listings send: one request with a small
 * body kept, its requests sharing one connection cache.
 *
 * CA certificates: libcurl's default bundle, or the file in CURL_CA_BUNDLE
 * or SSL_CERT_FILE (AWS_CA_BUNDLE first for S3), or the directory in
 * SSL_CERT_DIR.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "aws_auth.h"
#include "http.h"
#include "quash.h"

#define REMOTE_CONNECT_TIMEOUT  10        /* seconds to establish a connection */
/*
 * Bytes per second under which a transfer counts as stalled.  curl's own
 * notion (1 byte/s) lets a server that drips 4 bytes a second hold a read
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
#define REMOTE_MAX_REDIRECTS    5

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

int http_init(void)
{
	pthread_once(&curl_once, curl_init);
	return curl_init_result == CURLE_OK ? 0 : curl_init_failed();
}

/* ---- the answer's headers ------------------------------------------------- */

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

/* The value as it came if it is short and printable (a message may show it), else "?". */
static void copy_root_hash(char *dst, const char *v, size_t n)
{
	bool ok = n < REMOTE_ROOTHASH_MAX;

	for (size_t i = 0; ok && i < n; i++)
		ok = v[i] > ' ' && v[i] < 0x7f;
	if (!ok) {
		v = "?";
		n = 1;
	}
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* "bytes FIRST-LAST/TOTAL"; false if it is anything else. */
static bool parse_content_range(const char *v, size_t n, struct http_head *r)
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

void http_head_line(struct http_head *h, const char *line, size_t len)
{
	size_t vlen;
	const char *v;

	if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
		/* A new answer (after a redirect or a 100 Continue): forget the last one's headers. */
		const char *sp = memchr(line, ' ', len);

		h->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		h->has_range = false;
		h->etag[0] = h->last_modified[0] = h->verity_root[0] = '\0';
		return;
	}
	if (header_is(line, len, "content-range", &v, &vlen))
		h->has_range = parse_content_range(v, vlen, h);
	else if (header_is(line, len, "etag", &v, &vlen))
		copy_validator(h->etag, v, vlen);
	else if (header_is(line, len, "last-modified", &v, &vlen))
		copy_validator(h->last_modified, v, vlen);
	else if (header_is(line, len, "x-amz-meta-verity-roothash", &v, &vlen))
		copy_root_hash(h->verity_root, v, vlen);
}

/* ---- set-up, errors, retries ---------------------------------------------- */

/* Options every request to 't' has: timeouts, CA, signing, redirects. */
void http_handle_setup(CURL *h, const struct remote_target *t, long stall_seconds)
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

struct curl_slist *http_append_header(struct curl_slist *list, const char *line)
{
	struct curl_slist *next = curl_slist_append(list, line);

	if (!next)
		curl_slist_free_all(list);
	return next;
}

/* What S3 needs besides the signature curl makes; frees 'list' and returns NULL on failure. */
struct curl_slist *http_s3_headers(const struct remote_target *t, struct curl_slist *list)
{
	const char *token = t->creds ? t->creds->session_token : NULL;
	char *line;

	if (!t->sigv4)
		return list;
	/* curl 7.88 signs the payload as unsigned but does not say so itself. */
	list = http_append_header(list, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	if (list && token && t->creds->access_key) {
		if (asprintf(&line, "x-amz-security-token: %s", token) < 0) {
			curl_slist_free_all(list);
			return NULL;
		}
		list = http_append_header(list, line);
		explicit_bzero(line, strlen(line));
		free(line);
	}
	return list;
}

/* The <Code> of an S3 error body, or "". */
void http_s3_error_code(const char *body, char *code, size_t size)
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
int http_refusal_error(const struct remote_target *t, const char *prefix, long status, const char *body)
{
	char code[96];

	http_s3_error_code(body, code, sizeof(code));
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
bool http_retryable(CURLcode rc, const char *msg)
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

uint64_t http_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before 'deadline', at least 1 (0 would mean no limit to curl). */
long http_remaining_ms(uint64_t deadline)
{
	uint64_t now = http_now_ms();

	return deadline > now ? (long)(deadline - now) : 1;
}

/* Full jitter in [delay/2, delay]: retrying clients spread out instead of arriving together. */
static unsigned jitter(unsigned delay_ms)
{
	static __thread unsigned short seed[3];

	if (!seed[0] && !seed[1] && !seed[2]) {
		uint64_t t = http_now_ms() ^ ((uint64_t)getpid() << 16) ^ (uintptr_t)&seed;

		seed[0] = t, seed[1] = t >> 16, seed[2] = t >> 32;
	}
	return delay_ms / 2 + (unsigned)(nrand48(seed) % (delay_ms / 2 + 1));
}

/* Sleep 'ms', or less if this thread is interrupted: -EINTR then. */
static int backoff_sleep(unsigned ms)
{
	while (ms > 0) {
		unsigned step = ms < REMOTE_INTERRUPT_POLL_MS ? ms : REMOTE_INTERRUPT_POLL_MS;

		if (qs_source_interrupted())
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
int http_with_retries(unsigned retry_seconds, unsigned max_attempts, int (*once)(void *arg, uint64_t deadline),
			void *arg)
{
	uint64_t deadline = http_now_ms() + (uint64_t)retry_seconds * 1000;
	unsigned delay = REMOTE_BACKOFF_FIRST_MS, attempt;
	char last[512];
	int ret;

	for (attempt = 1;; attempt++) {
		unsigned wait;

		ret = once(arg, deadline);
		if (ret != -EAGAIN)
			return ret;
		wait = jitter(delay);
		if ((max_attempts && attempt >= max_attempts) || http_now_ms() + wait >= deadline)
			break;
		if (attempt == 1)
			qs_source_retry_notice(qs_last_error(), (unsigned)((deadline - http_now_ms() + 999) / 1000));
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

/* ---- remote_call(): what the S3 sink's multipart upload and the listings send ---- */

struct call {
	const struct remote_target *t;
	const char *method;
	char *url;
	const char *body;
	size_t body_len, sent;
	struct remote_reply *reply;
	struct http_head head;          /* this attempt's answer, as it arrives */
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
	struct call *c = arg;
	size_t len = size * nitems;

	http_head_line(&c->head, line, len);
	c->reply->status = c->head.status;
	memcpy(c->reply->etag, c->head.etag, sizeof(c->reply->etag));
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
	return (c->t->cancel && __atomic_load_n(c->t->cancel, __ATOMIC_RELAXED)) || qs_source_interrupted();
}

static int call_judge(const struct call *c, CURLcode rc, const char *curl_msg)
{
	long st = c->reply->status;
	char code[96];

	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return qs_source_interrupted() ? qs_set_error(-EINTR, "%s interrupted", c->method)
				     : qs_set_error(-ECANCELED, "%s cancelled", c->method);
	if (rc != CURLE_OK && !c->reply->cut)
		return qs_set_error(http_retryable(rc, curl_msg) ? -EAGAIN : -EIO, "%s %s", c->method,
				    curl_msg[0] ? curl_msg : curl_easy_strerror(rc));
	if (st >= 200 && st < 300)
		return 0;
	if (st == 401 || st == 403 || st == 404) {
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "%s: ", c->method);
		return http_refusal_error(c->t, prefix, st, c->reply->body ? c->reply->body : "");
	}
	http_s3_error_code(c->reply->body ? c->reply->body : "", code, sizeof(code));
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
	memset(&c->head, 0, sizeof(c->head));
	c->sent = 0;
	/* Never "Expect:" to remove a header: curl 7.88 would sign it, yet not send it. */
	headers = http_append_header(NULL, "Content-Type: application/octet-stream");
	headers = headers ? http_s3_headers(c->t, headers) : NULL;
	if (!h || !headers) {
		curl_slist_free_all(headers);
		if (h)
			curl_easy_cleanup(h);
		return qs_set_error(-ENOMEM, "cannot set up a request");
	}
	http_handle_setup(h, c->t, REMOTE_STALL_SECONDS);
	if (call_share)
		curl_easy_setopt(h, CURLOPT_SHARE, call_share);
	curl_easy_setopt(h, CURLOPT_URL, c->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, call_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, call_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_msg);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, call_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, http_remaining_ms(deadline) > min_ms ? http_remaining_ms(deadline) : min_ms);
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
	ret = http_init();
	if (ret < 0)
		return ret;
	if (asprintf(&c.url, "%s%s%s", t->url, query ? "?" : "", query ? query : "") < 0)
		return qs_set_error(-ENOMEM, "out of memory");
	ret = http_with_retries(retry_seconds ? retry_seconds : REMOTE_DEFAULT_RETRY_SECONDS, 0, call_once, &c);
	free(c.url);
	return ret;
}

void remote_reply_clear(struct remote_reply *reply)
{
	free(reply->body);
	memset(reply, 0, sizeof(*reply));
}

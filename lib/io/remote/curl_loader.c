/*
 * curl_loader.c - the libcurl functions quash uses, forwarded to libcurl
 * opened with dlopen() on first use (why: lazy_lib.h).
 *
 * Each function here has libcurl's own name and prototype, so http.c
 * and remote_source.c are written against <curl/curl.h> as usual.  The
 * variadic ones forward their one argument by the type that libcurl itself
 * reads for the option (CURLOPTTYPE_* ranges, CURLINFO_*, CURLSHOPT_*): that
 * is libcurl's documented calling convention, not a guess.
 */
#define CURL_DISABLE_TYPECHECK 1   /* the macros would rename our definitions */
#include <curl/curl.h>
#include <stdarg.h>
#include <dlfcn.h>
#include <stddef.h>

#include "lazy_lib.h"
#include "source_remote.h"

/* libcurl's ABI version since 7.16 (2006). */
#define CURL_SONAME "libcurl.so.4"

#define CURL_FUNCTIONS(X) \
	X(curl_global_init) \
	X(curl_easy_init) \
	X(curl_easy_setopt) \
	X(curl_easy_getinfo) \
	X(curl_easy_perform) \
	X(curl_easy_cleanup) \
	X(curl_easy_strerror) \
	X(curl_slist_append) \
	X(curl_slist_free_all) \
	X(curl_share_init) \
	X(curl_share_setopt) \
	X(curl_share_cleanup)

static struct {
#define X(name) __typeof__(&name) name;
	CURL_FUNCTIONS(X)
#undef X
} real;

static const char *resolve(void *handle)
{
#define X(name) \
	real.name = (__typeof__(real.name))dlsym(handle, #name); \
	if (!real.name) \
		return #name;
	CURL_FUNCTIONS(X)
#undef X
	return NULL;
}


static struct lazy_lib curl_lib = LAZY_LIB_INIT(CURL_SONAME, resolve);

int qs_curl_load(void)
{
	return lazy_lib_load(&curl_lib);
}

const char *qs_curl_error(void)
{
	return lazy_lib_error(&curl_lib);
}

CURLcode curl_global_init(long flags)
{
	return qs_curl_load() ? CURLE_FAILED_INIT : real.curl_global_init(flags);
}

CURL *curl_easy_init(void)
{
	return qs_curl_load() ? NULL : real.curl_easy_init();
}

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	CURLcode ret;
	va_list ap;

	if (qs_curl_load())
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		ret = real.curl_easy_setopt(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		ret = real.curl_easy_setopt(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		ret = real.curl_easy_setopt(curl, option, va_arg(ap, void (*)(void)));
	else if (option < CURLOPTTYPE_BLOB)
		ret = real.curl_easy_setopt(curl, option, va_arg(ap, curl_off_t));
	else
		ret = real.curl_easy_setopt(curl, option, va_arg(ap, void *));
	va_end(ap);
	return ret;
}

CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	CURLcode ret;
	va_list ap;

	if (qs_curl_load())
		return CURLE_FAILED_INIT;
	/* Every CURLINFO_* takes one pointer to where the answer goes. */
	va_start(ap, info);
	ret = real.curl_easy_getinfo(curl, info, va_arg(ap, void *));
	va_end(ap);
	return ret;
}

CURLcode curl_easy_perform(CURL *curl)
{
	return qs_curl_load() ? CURLE_FAILED_INIT : real.curl_easy_perform(curl);
}

void curl_easy_cleanup(CURL *curl)
{
	if (!qs_curl_load())
		real.curl_easy_cleanup(curl);
}

const char *curl_easy_strerror(CURLcode code)
{
	return qs_curl_load() ? qs_curl_error() : real.curl_easy_strerror(code);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *string)
{
	return qs_curl_load() ? NULL : real.curl_slist_append(list, string);
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (!qs_curl_load())
		real.curl_slist_free_all(list);
}

CURLSH *curl_share_init(void)
{
	return qs_curl_load() ? NULL : real.curl_share_init();
}

CURLSHcode curl_share_setopt(CURLSH *share, CURLSHoption option, ...)
{
	CURLSHcode ret;
	va_list ap;

	if (qs_curl_load())
		return CURLSHE_NOT_BUILT_IN;
	/* The argument's type by option, as libcurl's own share.c reads it. */
	va_start(ap, option);
	switch (option) {
	case CURLSHOPT_SHARE:
	case CURLSHOPT_UNSHARE:
		ret = real.curl_share_setopt(share, option, va_arg(ap, int));
		break;
	case CURLSHOPT_LOCKFUNC:
	case CURLSHOPT_UNLOCKFUNC:
		ret = real.curl_share_setopt(share, option, va_arg(ap, void (*)(void)));
		break;
	default:
		ret = real.curl_share_setopt(share, option, va_arg(ap, void *));
		break;
	}
	va_end(ap);
	return ret;
}

CURLSHcode curl_share_cleanup(CURLSH *share)
{
	return qs_curl_load() ? CURLSHE_INVALID : real.curl_share_cleanup(share);
}

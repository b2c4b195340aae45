/*
 * error.c - the per-thread "what went wrong" message behind qs_last_error().
 *
 * Library functions return a negative errno; the text that says which table,
 * which offset and which check failed lives here, one buffer per thread, so
 * that concurrent FUSE workers never see each other's messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "quash.h"

#define QS_ERROR_MAX 512

static _Thread_local char last_error[QS_ERROR_MAX];

const char *qs_last_error(void)
{
	return last_error[0] ? last_error : "unknown error";
}

/* Formatted aside first: callers may pass qs_last_error() itself as an argument. */
int qs_set_error(int err, const char *fmt, ...)
{
	char msg[QS_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(last_error, msg, sizeof(msg));
	return err;
}

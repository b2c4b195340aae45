/*
 * log.c - the daemon's messages (log.h): the rate limit, and where a line
 * goes (stderr, syslog, or -o log=FILE).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mount_int.h"
#include "source.h"

/* One line to -o log=FILE, written whole so that lines of several threads never mix. */
static void log_line(struct qm_fs *fs, const char *level, const char *msg)
{
	char stamp[32], line[768];
	struct tm tm;
	time_t now = time(NULL);
	int n;

	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
	n = snprintf(line, sizeof(line), "%s %s[%d] %s: %s: %s\n", stamp, fs->opt->progname, (int)getpid(),
		     level, fs->name, msg);
	if (n > 0 && write(fs->log_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
		return;         /* nowhere left to say it */
}

void qm_log(struct qm_fs *fs, const char *fmt, ...)
{
	int n = atomic_fetch_add(&fs->log_count, 1);
	char msg[512];
	va_list ap;

	if (n > QM_LOG_MAX)
		return;
	if (n == QM_LOG_MAX) {
		snprintf(msg, sizeof(msg), "more than %d errors, no more are logged", QM_LOG_MAX);
	} else {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	if (fs->log_fd >= 0)
		log_line(fs, "error", msg);
	else if (fs->use_syslog)
		syslog(LOG_ERR, "%s: %s", fs->name, msg);
	else
		fprintf(stderr, "%s: %s: %s\n", fs->opt->msgname, fs->name, msg);
}

static struct qm_fs *_Atomic events_fs;

static void source_event(const char *name, const char *message)
{
	struct qm_fs *fs = events_fs;

	/* A catalog's log names the catalog: the image is named in the line. */
	if (fs && strcmp(name, fs->name))
		qm_info(fs, "%s: %s", name, message);
	else if (fs)
		qm_info(fs, "%s", message);
}

void qm_log_source_events(struct qm_fs *fs)
{
	events_fs = fs;
	qs_source_set_event_notice(source_event);
}

void qm_info(struct qm_fs *fs, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* a daemon's stderr is its caller's terminal until it detaches: syslog from the start */
	if (fs->log_fd >= 0)
		log_line(fs, "info", msg);
	else if (fs->use_syslog || !fs->opt->foreground)
		syslog(LOG_INFO, "%s: %s", fs->name, msg);
	else
		fprintf(stderr, "%s: %s: %s\n", fs->opt->msgname, fs->name, msg);
}

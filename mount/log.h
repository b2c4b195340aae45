/*
 * log.h - the daemon's messages: one line each, to stderr in the
 * foreground, to syslog once daemonized, or to -o log=FILE.
 */
#ifndef QUASH_MOUNT_LOG_H
#define QUASH_MOUNT_LOG_H

struct qm_fs;

/* Failures logged before the daemon falls silent (a scan of a corrupt image). */
#define QM_LOG_MAX 100

/* One line of an error; rate-limited by QM_LOG_MAX. */
void qm_log(struct qm_fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line of information (not an error, not rate-limited): to stderr in the foreground, else syslog. */
void qm_info(struct qm_fs *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What the library's sources put right (qs_source_set_event_notice()): one info line each, to fs's log. */
void qm_log_source_events(struct qm_fs *fs);

#endif

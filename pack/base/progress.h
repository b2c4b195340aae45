/*
 * progress.h - the progress bar (on a terminal only) and the summary line.
 */
#ifndef QUASH_PACK_PROGRESS_H
#define QUASH_PACK_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

enum progress_mode {
	PROGRESS_OFF,
	PROGRESS_BAR,               /* a bar on stderr, if it is a terminal */
	PROGRESS_PERCENTAGE,        /* mksquashfs -percentage: each new percentage a line on stdout */
	PROGRESS_LOG,               /* mksquashfs -progress to a log: its own bar on stdout, every 100 units */
};

/* Start timing, and show the progress as 'mode' says. */
void progress_start(enum progress_mode mode, uint64_t total_bytes, uint64_t total_files);
/* PROGRESS_LOG counts in 'units' (blocks) what the bytes measure, as mksquashfs's bar does. */
void progress_set_units(uint64_t units);
/* Input bytes and files done; safe from any thread. */
void progress_add(uint64_t bytes, uint64_t files);
/* Around printing a message: erase the bar and keep it from being redrawn meanwhile. */
void progress_lock(void);
void progress_unlock(void);
/* The run succeeded: -percentage ends on 100. */
void progress_done(void);
void progress_end(void);
/* Seconds since the pack began (the first progress_start(): the scan included). */
double progress_seconds(void);

#endif

/*
 * progress.h - the progress bar (on a terminal only) and the summary line.
 */
#ifndef QUASH_PACK_PROGRESS_H
#define QUASH_PACK_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* Start timing; draw a bar on stderr if it is a terminal and 'enabled'. */
void progress_start(bool enabled, uint64_t total_bytes, uint64_t total_files);
void progress_add(uint64_t bytes, uint64_t files);
/* Erase the bar so that a message can be printed (then redrawn on the next update). */
void progress_clear(void);
void progress_end(void);
double progress_seconds(void);

#endif

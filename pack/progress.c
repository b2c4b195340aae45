/*
 * progress.c - what the user sees while packing.
 *
 * Only the packing thread updates the counters; the bar is redrawn at
 * most every PROGRESS_INTERVAL, so a huge tree costs nothing extra.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define PROGRESS_INTERVAL 0.2   /* seconds between redraws */
#define PROGRESS_BAR_WIDTH 24

static struct {
	bool on, drawn;
	uint64_t total_bytes, total_files, bytes, files;
	double start, last;
} pr;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_start(bool enabled, uint64_t total_bytes, uint64_t total_files)
{
	pr.on = enabled && isatty(STDERR_FILENO);
	pr.total_bytes = total_bytes;
	pr.total_files = total_files;
	pr.start = pr.last = now();
}

double progress_seconds(void)
{
	return now() - pr.start;
}

static void draw(double t)
{
	double frac = pr.total_bytes ? (double)pr.bytes / (double)pr.total_bytes : 1.0;
	double rate = t > pr.start ? (double)pr.bytes / (t - pr.start) : 0;
	double left = rate > 0 ? (double)(pr.total_bytes - pr.bytes) / rate : 0;
	char bar[PROGRESS_BAR_WIDTH + 1];
	int fill = (int)(frac * PROGRESS_BAR_WIDTH);

	for (int i = 0; i < PROGRESS_BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[PROGRESS_BAR_WIDTH] = '\0';
	fprintf(stderr, "\r\033[K[%s] %3d%%  %.1f/%.1f MiB  %llu/%llu files  %.1f MiB/s  %d:%02d left",
		bar, (int)(frac * 100), (double)pr.bytes / 1048576, (double)pr.total_bytes / 1048576,
		(unsigned long long)pr.files, (unsigned long long)pr.total_files, rate / 1048576,
		(int)left / 60, (int)left % 60);
	pr.drawn = true;
}

void progress_add(uint64_t bytes, uint64_t files)
{
	double t;

	pr.bytes += bytes;
	pr.files += files;
	if (!pr.on)
		return;
	t = now();
	if (t - pr.last >= PROGRESS_INTERVAL) {
		pr.last = t;
		draw(t);
	}
}

void progress_clear(void)
{
	if (pr.drawn)
		fputs("\r\033[K", stderr);
	pr.drawn = false;
}

void progress_end(void)
{
	progress_clear();
	pr.on = false;
}

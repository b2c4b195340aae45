/*
 * progress.c - what the user sees while packing.
 *
 * Counters are updated from the packing and writing threads (bytes count
 * once they are written, or once found to be holes or duplicates); a
 * thread of its own redraws the bar every PROGRESS_INTERVAL, so that it
 * moves even while the pipeline drains.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define PROGRESS_INTERVAL_NS 200000000L   /* between redraws */
#define PROGRESS_BAR_WIDTH   24

static struct {
	bool on, drawn;
	bool percentage;            /* lines of percentages, not the bar */
	bool log;                   /* mksquashfs's bar on stdout, for a log */
	uint64_t units;             /* PROGRESS_LOG's whole, in blocks */
	int64_t logged;             /* the units last printed, -1: none yet */
	bool done;                  /* progress_done: everything is written */
	int shown;                  /* the percentage last printed, -1: none yet */
	uint64_t total_bytes, total_files;
	_Atomic uint64_t bytes, files;
	double start;               /* of the data phase: the bar's rate */
	double begun;               /* of the pack: the first progress_start() */
	pthread_t thread;
	pthread_mutex_t lock;       /* one writer on stderr at a time: the bar or a message */
	pthread_cond_t stop;
	bool stopping;
} pr = { .lock = PTHREAD_MUTEX_INITIALIZER, .stop = PTHREAD_COND_INITIALIZER };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double progress_seconds(void)
{
	return now() - pr.begun;
}

static void draw(void)
{
	uint64_t bytes = atomic_load(&pr.bytes), files = atomic_load(&pr.files);
	double t = now() - pr.start;
	double frac = pr.total_bytes ? (double)bytes / (double)pr.total_bytes : 1.0;
	double rate = t > 0 ? (double)bytes / t : 0;
	double left = rate > 0 && pr.total_bytes > bytes ? (double)(pr.total_bytes - bytes) / rate : 0;
	char bar[PROGRESS_BAR_WIDTH + 1];
	int fill = (int)(frac * PROGRESS_BAR_WIDTH);

	for (int i = 0; i < PROGRESS_BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[PROGRESS_BAR_WIDTH] = '\0';
	fprintf(stderr, "\r\033[K[%s] %3d%%  %.1f/%.1f MiB  %llu/%llu files  %.1f MiB/s  %d:%02d left",
		bar, (int)(frac * 100), (double)bytes / 1048576, (double)pr.total_bytes / 1048576,
		(unsigned long long)files, (unsigned long long)pr.total_files, rate / 1048576,
		(int)left / 60, (int)left % 60);
	pr.drawn = true;
}

/* mksquashfs -percentage: a line when the percentage changes, for dialog --gauge and the like. */
static void show_percentage(void)
{
	uint64_t bytes = atomic_load(&pr.bytes);
	int pc = pr.total_bytes ? (int)(100 * (double)bytes / (double)pr.total_bytes) : 100;

	if (pc > 100)
		pc = 100;
	if (pc != pr.shown) {
		printf("%d\n", pc);
		fflush(stdout);
		pr.shown = pc;
	}
}

#define PROGRESS_LOG_COLUMNS 80      /* mksquashfs's width where stdout is no terminal */
#define PROGRESS_LOG_EVERY   100     /* ...and how often it prints there: every 100 units, and the last */

/*
 * mksquashfs's bar, as a build log holds it: "\r[====|   ] 300/1000  30%",
 * the count in blocks, printed when it reaches a multiple of 100 and at
 * the end, so that logs stay small.
 */
static void show_log(bool last)
{
	static const char spin[] = "|/-\\";
	int64_t max = pr.units ? (int64_t)pr.units : 1, cur;
	int digits = 1, used, hashes;

	cur = last || !pr.total_bytes ? max : (int64_t)((double)atomic_load(&pr.bytes) / (double)pr.total_bytes * (double)max);
	if (cur > max)
		cur = max;
	if (!last)
		cur -= cur % PROGRESS_LOG_EVERY;     /* the last multiple of 100 passed, as mksquashfs's steps */
	if (cur <= pr.logged || (!last && cur == 0))
		return;
	for (int64_t m = max; m >= 10; m /= 10)
		digits++;
	used = digits * 2 + 11;
	if (PROGRESS_LOG_COLUMNS - used < 0)
		return;
	hashes = (int)(cur * (PROGRESS_LOG_COLUMNS - used) / max);
	putchar('\r');
	putchar('[');
	for (int i = 0; i < hashes; i++)
		putchar('=');
	putchar(last ? '|' : spin[(pr.logged + 1) & 3]);     /* mksquashfs ends on '|' */
	for (int i = hashes; i < PROGRESS_LOG_COLUMNS - used; i++)
		putchar(' ');
	printf("] %*lld/%*lld %3lld%%", digits, (long long)cur, digits, (long long)max, (long long)(cur * 100 / max));
	fflush(stdout);
	pr.logged = cur;
}

void progress_set_units(uint64_t units)
{
	pr.units = units;
}

static void *progress_main(void *arg)
{
	struct timespec next;

	(void)arg;
	pthread_mutex_lock(&pr.lock);
	clock_gettime(CLOCK_REALTIME, &next);
	while (!pr.stopping) {
		next.tv_nsec += PROGRESS_INTERVAL_NS;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&pr.stop, &pr.lock, &next);
		if (!pr.stopping && pr.percentage)
			show_percentage();
		else if (!pr.stopping && pr.log)
			show_log(false);
		else if (!pr.stopping)
			draw();
	}
	pthread_mutex_unlock(&pr.lock);
	return NULL;
}

void progress_start(enum progress_mode mode, uint64_t total_bytes, uint64_t total_files)
{
	bool shown = mode == PROGRESS_PERCENTAGE || mode == PROGRESS_LOG || (mode == PROGRESS_BAR && isatty(STDERR_FILENO));

	pr.total_bytes = total_bytes;
	pr.total_files = total_files;
	atomic_store(&pr.bytes, 0);
	atomic_store(&pr.files, 0);
	pr.start = now();
	if (pr.begun == 0)
		pr.begun = pr.start;
	pr.stopping = false;
	pr.percentage = mode == PROGRESS_PERCENTAGE;
	pr.log = mode == PROGRESS_LOG;
	pr.logged = -1;
	pr.shown = -1;
	if (pr.percentage)
		show_percentage();
	pr.on = shown && pthread_create(&pr.thread, NULL, progress_main, NULL) == 0;
}

void progress_add(uint64_t bytes, uint64_t files)
{
	atomic_fetch_add(&pr.bytes, bytes);
	atomic_fetch_add(&pr.files, files);
}

/* Called with pr.lock held, or when no bar thread runs. */
static void clear_line(void)
{
	if (pr.drawn)
		fputs("\r\033[K", stderr);
	pr.drawn = false;
}

void progress_lock(void)
{
	pthread_mutex_lock(&pr.lock);
	clear_line();
}

void progress_unlock(void)
{
	pthread_mutex_unlock(&pr.lock);
}

void progress_done(void)
{
	pr.done = true;
}

void progress_end(void)
{
	if (pr.on) {
		pthread_mutex_lock(&pr.lock);
		pr.stopping = true;
		pthread_cond_signal(&pr.stop);
		pthread_mutex_unlock(&pr.lock);
		pthread_join(pr.thread, NULL);
	}
	if (pr.percentage && pr.done) {
		atomic_store(&pr.bytes, pr.total_bytes);
		show_percentage();      /* the run is done: 100 */
	}
	if (pr.log && pr.done)
		show_log(true);         /* the run is done: N/N 100% */
	pr.percentage = pr.log = pr.done = false;
	clear_line();
	pr.on = false;
}

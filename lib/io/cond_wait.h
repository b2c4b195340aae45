/*
 * cond_wait.h - a condition wait bounded by a poll interval: the remote
 * sources' waiters wake at least that often to look for an interrupt
 * (qs_source_interrupted()) or a stale source, which no signal announces.
 */
#ifndef QUASH_COND_WAIT_H
#define QUASH_COND_WAIT_H

#include <pthread.h>
#include <time.h>

/* pthread_cond_timedwait() for at most ns nanoseconds (less than a second) from now. */
static inline void qs_cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *lock, long ns)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += ns;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(cond, lock, &until);
}

#endif

/*
 * chunk_fetcher.h - where the chunk cache's bytes come from: the slower
 * source under it (remote_source.c's range requests), as the cache calls it.
 */
#ifndef QUASH_CHUNK_FETCHER_H
#define QUASH_CHUNK_FETCHER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Where chunks come from: fetch() fills the iovecs, in order, with exactly
 * their total length of bytes starting at 'off', or returns -errno with a
 * message.  Called from several threads at once. */
struct chunk_fetcher {
	int (*fetch)(void *ctx, const struct iovec *iov, int iovcnt, uint64_t off);
	void (*close)(void *ctx);
	void *ctx;
	/*
	 * Optional: the same into one buffer, calling progress(arg, n) as the
	 * bytes arrive in order, each time the first n of them are in and
	 * trusted (from any thread; n only grows).  A retry resumes after the
	 * bytes already announced.
	 */
	int (*fetch_stream)(void *ctx, void *buf, size_t len, uint64_t off,
			    void (*progress)(void *arg, size_t filled), void *arg);
};

#endif

/*
 * lazy_lib.h - shared libraries opened on first use instead of at start.
 *
 * libcurl and libarchive each drag in dozens of further libraries (TLS,
 * Kerberos, LDAP, ICU, libxml2, ...).  Loading and relocating them costs a
 * process milliseconds before main() runs, several times what the kernel
 * needs to mount an image, paid again by every `quash mount`, `quash ls`
 * and squashfuse_ll invocation that never sees a URL or an archive.  So the
 * binary is not linked against them.  A forwarding file per library
 * (curl_loader.c, pack/archive_loader.c) defines the functions quash calls,
 * with the library's own names and prototypes from its own headers, and
 * opens the library with dlopen() the first time one of them is called.
 * The code that uses the library stays written against its real API and is
 * type-checked by the compiler as before.
 *
 * A library that cannot be opened is not fatal: every forwarding function
 * then returns that function's failure value, and callers that want a good
 * message call lazy_lib_load() first and report lazy_lib_error().
 */
#ifndef QUASH_LAZY_LIB_H
#define QUASH_LAZY_LIB_H

#include <pthread.h>

struct lazy_lib {
	/* The library's soname, e.g. "libcurl.so.4": its ABI version, so a
	 * library with a different ABI is never picked up. */
	const char *soname;
	/* Looks up every symbol in the freshly opened handle; returns NULL, or
	 * the name of the first symbol that is missing. */
	const char *(*resolve)(void *handle);

	pthread_mutex_t lock;
	int state;              /* 0 not tried yet, 1 loaded, -1 failed */
	char error[256];        /* why it failed */
};

#define LAZY_LIB_INIT(soname, resolve) { (soname), (resolve), PTHREAD_MUTEX_INITIALIZER, 0, "" }

/* Opens the library once per process (thread-safe; later calls cost one
 * atomic load).  Returns 0, or -ENOSYS if it cannot be opened or lacks a
 * symbol; it is not retried. */
int lazy_lib_load(struct lazy_lib *lib);

/* Why the last lazy_lib_load() failed: one line naming the library. */
const char *lazy_lib_error(const struct lazy_lib *lib);

#endif

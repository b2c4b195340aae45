/*
 * lazy_lib.c - dlopen() on first use, once per process (see lazy_lib.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "lazy_lib.h"

static int open_library(struct lazy_lib *lib)
{
	const char *missing;
	void *handle;

	/* RTLD_NOW: a missing symbol fails here, once, not at some later call;
	 * RTLD_LOCAL: the library's own dependencies stay out of our namespace. */
	handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		snprintf(lib->error, sizeof(lib->error), "cannot load %s: %s", lib->soname, dlerror());
		return -1;
	}
	missing = lib->resolve(handle);
	if (missing) {
		snprintf(lib->error, sizeof(lib->error), "cannot load %s: it has no %s", lib->soname, missing);
		dlclose(handle);
		return -1;
	}
	/* The handle is never closed: the functions stay in use until exit. */
	return 1;
}

int lazy_lib_load(struct lazy_lib *lib)
{
	int state = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);

	if (state == 0) {
		pthread_mutex_lock(&lib->lock);
		state = lib->state;
		if (state == 0) {
			state = open_library(lib);
			__atomic_store_n(&lib->state, state, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&lib->lock);
	}
	return state > 0 ? 0 : -ENOSYS;
}

const char *lazy_lib_error(const struct lazy_lib *lib)
{
	return lib->error;
}

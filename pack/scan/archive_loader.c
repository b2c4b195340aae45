/*
 * archive_loader.c - the libarchive functions `quash pack` uses, forwarded
 * to libarchive opened with dlopen() on first use (why: lib/io/lazy_lib.h).
 *
 * Each function keeps libarchive's name and prototype, so scan_archive.c
 * is written against <archive.h> as usual.  Until libarchive is loaded
 * every function returns its failure value; scan_archive.c checks
 * archive_loader_load() before its first call, to report why.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <stddef.h>

#include "io/lazy_lib.h"
#include "archive_loader.h"

/* libarchive's ABI version since 3.0 (2011). */
#define ARCHIVE_SONAME "libarchive.so.13"

/* X(return type, name, parameters, arguments, value when not loaded) */
#define ARCHIVE_FUNCTIONS(X) \
	X(struct archive *, archive_read_new, (void), (), NULL) \
	X(int, archive_read_free, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_filter_gzip, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_filter_bzip2, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_filter_xz, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_filter_lzma, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_filter_zstd, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_filter_lz4, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_format_tar, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_format_gnutar, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_format_cpio, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_support_format_zip, (struct archive *a), (a), ARCHIVE_FATAL) \
	X(int, archive_read_set_format_option, (struct archive *a, const char *m, const char *o, const char *v), \
	  (a, m, o, v), ARCHIVE_FATAL) \
	X(int, archive_read_open_fd, (struct archive *a, int fd, size_t block_size), (a, fd, block_size), ARCHIVE_FATAL) \
	X(int, archive_read_open_filename, (struct archive *a, const char *name, size_t block_size), \
	  (a, name, block_size), ARCHIVE_FATAL) \
	X(int, archive_read_next_header, (struct archive *a, struct archive_entry **e), (a, e), ARCHIVE_FATAL) \
	X(int, archive_read_data_block, (struct archive *a, const void **buf, size_t *len, la_int64_t *off), \
	  (a, buf, len, off), ARCHIVE_FATAL) \
	X(const char *, archive_error_string, (struct archive *a), (a), NULL) \
	X(const char *, archive_entry_pathname, (struct archive_entry *e), (e), NULL) \
	X(const char *, archive_entry_hardlink, (struct archive_entry *e), (e), NULL) \
	X(const char *, archive_entry_symlink, (struct archive_entry *e), (e), NULL) \
	X(__LA_MODE_T, archive_entry_mode, (struct archive_entry *e), (e), 0) \
	X(la_int64_t, archive_entry_uid, (struct archive_entry *e), (e), 0) \
	X(la_int64_t, archive_entry_gid, (struct archive_entry *e), (e), 0) \
	X(const char *, archive_entry_uname, (struct archive_entry *e), (e), NULL) \
	X(const char *, archive_entry_gname, (struct archive_entry *e), (e), NULL) \
	X(time_t, archive_entry_mtime, (struct archive_entry *e), (e), 0) \
	X(la_int64_t, archive_entry_size, (struct archive_entry *e), (e), 0) \
	X(int, archive_entry_size_is_set, (struct archive_entry *e), (e), 0) \
	X(int, archive_entry_sparse_count, (struct archive_entry *e), (e), 0) \
	X(dev_t, archive_entry_rdevmajor, (struct archive_entry *e), (e), 0) \
	X(dev_t, archive_entry_rdevminor, (struct archive_entry *e), (e), 0) \
	X(int, archive_entry_xattr_reset, (struct archive_entry *e), (e), 0) \
	X(int, archive_entry_xattr_next, (struct archive_entry *e, const char **name, const void **value, size_t *len), \
	  (e, name, value, len), ARCHIVE_WARN)

static struct {
#define X(ret, name, params, args, fail) __typeof__(&name) name;
	ARCHIVE_FUNCTIONS(X)
#undef X
} real;

static const char *resolve(void *handle)
{
#define X(ret, name, params, args, fail) \
	real.name = (__typeof__(real.name))dlsym(handle, #name); \
	if (!real.name) \
		return #name;
	ARCHIVE_FUNCTIONS(X)
#undef X
	return NULL;
}

static struct lazy_lib archive_lib = LAZY_LIB_INIT(ARCHIVE_SONAME, resolve);

int archive_loader_load(void)
{
	return lazy_lib_load(&archive_lib);
}

const char *archive_loader_error(void)
{
	return lazy_lib_error(&archive_lib);
}

#define X(ret, name, params, args, fail) \
	ret name params \
	{ \
		return archive_loader_load() ? (fail) : real.name args; \
	}
ARCHIVE_FUNCTIONS(X)
#undef X

/*
 * mount_int.h - what the pieces of the FUSE mount share: the options, the
 * mounted filesystem's state, and the entry points of each file.
 *
 *   options.c   the command lines (quash mount, squashfuse_ll, mount.fuse3)
 *   ops.c       the FUSE low-level operations over libquash, on a view (view.h)
 *   dir.c       directory listings
 *   nodes.c     open files and listings by node id, for the kernel's handle-less opens
 *   fill.c      the threads that push decompressed blocks into the page cache
 *   siblings.c  the small files sharing a fragment block, pushed with the one read
 *   ahead.c     the threads that decompress a sequential reader's next blocks
 *   session.c   the session: the /dev/fuse loop, signals, idle timeout, unmount
 *   uring.c     the other transport: FUSE over io_uring, one queue per CPU
 *   log.c       the daemon's messages
 *   holder.c    the process that holds a mount while servers come and go (holder.h)
 *   server.c    a server's side of that: its arguments, the descriptor, INIT replayed
 *   mount_main.c  entry points, daemonizing, readiness; picks the plain
 *               mount's operations or the catalog's (catalog/, README.md)
 */
#ifndef QUASH_MOUNT_INT_H
#define QUASH_MOUNT_INT_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "handoff.h"
#include "quash.h"
#include "view.h"

/*
 * Worker threads by default: one per CPU the daemon may use (common/cpus.h:
 * its affinity and cgroup quota), since a request's work is decompression
 * on one core; at least 2, so that one request waiting on its source does
 * not hold up the rest; at most 16, past which the one /dev/fuse queue the
 * workers share limits before the cores do (io_uring serves a queue per CPU).
 */
#define QM_DEFAULT_THREADS_MIN 2
#define QM_DEFAULT_THREADS_MAX 16
#define QM_MAX_THREADS 64
/*
 * A session that grows (a catalog's) adds a worker whenever none is idle,
 * up to this many: a request waiting on one slow image (its open, a remote
 * read) then holds a thread, not the other users' requests.
 */
#define QM_MAX_WORKERS 256

/* A catalog's settings when -o idle=, refresh= and open_max= are not given (shown by --help). */
#define QC_DEFAULT_IDLE 300                /* s an unused image stays open (autofs's timeout) */
#define QC_DEFAULT_REFRESH 60              /* s between listings of the source */
/*
 * Images open at once (each a descriptor and its tables, about 25 KiB for a
 * small one): bench/catalog.sh's second sweep of 2,000 images reopens
 * images when this is below the count (docs/benchmarks.md).  Kept below
 * the descriptor limit, whose soft value is raised to the hard one.
 */
#define QC_DEFAULT_OPEN_MAX 8192

/* An image never changes under its node ids, so the kernel may cache for ever. */
#define QM_CACHE_TIMEOUT (365.0 * 24 * 3600)

/*
 * Readahead of the mount's bdi, KiB; 0 leaves the kernel's 128 KiB.  The
 * kernel reads around every page fault of an mmap()ed file by this much, so
 * more makes each fault of a library decompress more: programs start
 * fastest at the kernel's value, though sequential reads gain from more
 * (docs/benchmarks.md), and an unprivileged mount cannot raise it anyway.
 */
#define QM_DEFAULT_READAHEAD_KB 0

/* Where fusermount3 opens the device and reads user_allow_other. */
#define QM_FUSE_DEVICE "/dev/fuse"
#define QM_FUSE_CONF   "/etc/fuse.conf"
#define QM_SYSLOG_SOCKET "/dev/log"    /* where a daemonized mount's messages go without -o log= */

/* -o prefetch (bare) and noprefetch: whether to look for IMAGE.profile beside the image. */
enum qm_beside { QM_BESIDE_DEFAULT, QM_BESIDE_YES, QM_BESIDE_NO };

struct qm_options {
	const char *progname;       /* "quash" or "squashfuse_ll": syslog's name for the daemon */
	const char *msgname;        /* what messages start with: "quash: mount" or "squashfuse_ll" */
	const char *fsname;         /* -o fsname=: the mount table's source (else the image, secrets hidden) */
	const char *log_file;       /* -o log=: the daemon's messages go here, not to syslog */
	bool readahead_given;       /* -o readahead= was given, not defaulted */
	enum qm_beside prefetch_beside;
	unsigned max_read;          /* -o max_read=: 0 for the kernel's */
	const char *image;          /* or with catalog, the catalog's SOURCE */
	const char *mountpoint;
	bool catalog;               /* --catalog: SOURCE is a directory, index or prefix of images */
	unsigned catalog_idle;      /* -o idle=: seconds an unused image stays open; 0: the default */
	unsigned catalog_refresh;   /* -o refresh=: seconds between listings; 0: the default */
	unsigned catalog_open_max;  /* -o open_max=: images open at once; 0: the default */
	bool catalog_any_reader;    /* -o image_access=all: with allow_other, ignore image files' modes */
	bool foreground, debug, single_thread;
	bool squashfuse_compat;
	unsigned threads;           /* 0: qm_default_threads() */
	bool notify_store;          /* push whole blocks into the page cache */
	bool decompress_ahead;      /* decompress a sequential reader's next blocks on every core */
	bool uring;                 /* serve over FUSE io_uring where offered (uring.h: not yet faster here) */
	bool holder;                /* a holder process keeps the mount while servers come and go (holder.h) */
	size_t cache_bytes;         /* 0: the library's default */
	uint64_t offset;
	bool offset_given;
	bool uid_set, gid_set;
	uid_t uid;
	gid_t gid;
	const char *subdir;
	const char *notify_pipe;
	unsigned idle_timeout;      /* seconds; 0: never */
	int readahead_kb;           /* 0: leave the kernel's */
	struct qs_source_options source;    /* remote images: endpoint=, cache_dir=, ... */
	char kernel_opts[1024];     /* comma-separated options for the FUSE mount */
	char strings[8192];         /* copies of the -o lists; subdir= etc. point here */
	size_t strings_used;
};

enum qm_parse_result { QM_PARSE_OK, QM_PARSE_ERROR, QM_PARSE_HELP };

enum qm_parse_result qm_parse_args(int argc, char **argv, bool squashfuse_compat, struct qm_options *opt);

/* Is 'name' among the kernel mount flags given (-o allow_other, ...)? */
bool qm_has_kernel_opt(const struct qm_options *opt, const char *name);
void qm_usage(const struct qm_options *opt);

struct qm_fill;
struct qm_ahead;
struct qm_nodes;
struct qm_node;

struct qm_dirent {
	qs_ref ref;
	uint32_t ino;
	uint32_t name_off;          /* into qm_dir.names */
	uint16_t name_len;
	uint8_t type;               /* enum qs_type */
};

struct qm_dir {
	uint32_t self_ino, parent_ino;
	size_t count;
	struct qm_dirent *ents;
	char *names;
};

struct qm_catalog;

/* Requests served, by transport and by opcode (uring.c counts them; SIGUSR1 prints them). */
struct qm_counters {
	_Atomic uint64_t ring, dev;
	_Atomic uint64_t by_opcode[64];
};

/* The mounted filesystem: the userdata of every FUSE request. */
struct qm_fs {
	struct qm_view view;        /* a plain mount's image (unused by a catalog) */
	struct qm_catalog *catalog; /* --catalog: the images, each a directory; else NULL */
	struct fuse_session *se;
	const struct qm_options *opt;
	char *name;                 /* the image (or catalog) as shown to anyone: no secrets */
	struct qm_fill *fill;       /* NULL: no page-cache fill */
	struct qm_ahead *ahead;     /* NULL: no decompression ahead of sequential readers */
	struct qm_nodes *nodes;     /* files and listings for requests without a handle */
	_Atomic(_Atomic uint64_t *) parents;    /* siblings.c: the directory that listed each file */
	bool no_open;               /* the kernel opens without asking (FUSE_CAP_NO_OPEN_SUPPORT) */
	atomic_int labels;          /* the plain mount's view.labels */

	/* readiness: set by the INIT request */
	pthread_mutex_t ready_lock;
	pthread_cond_t ready_cond;
	bool ready;
	bool ended;                 /* a worker has returned */

	/* idle timeout: only maintained when opt->idle_timeout is set */
	_Atomic int64_t last_access;
	atomic_int open_count;

	/* the /dev/fuse workers: a session that grows adds one when none is idle */
	pthread_mutex_t workers_lock;
	pthread_t workers[QM_MAX_WORKERS];
	unsigned nworkers;
	bool grow_workers;
	atomic_int idle_workers;

	atomic_int log_count;
	bool use_syslog;            /* daemonized: stderr is gone */
	int log_fd;                 /* -o log=FILE, or -1 */
	atomic_bool unmounting;
	char mountpoint[4096];      /* absolute */
	/* transport (uring.c): INIT as the kernel sent it, the queues, what was served */
	uint64_t init_unique;
	uint32_t init_in_flags, init_in_flags2;
	bool init_error;
	struct qm_uring *uring;     /* NULL: /dev/fuse only */
	struct qm_counters counters;

	/* a held mount's server (holder.h): -1 when the mount is not held */
	int holder_fd;
	dev_t held_dev;
	uint8_t init_req[QM_HOLDER_INIT_MAX];      /* the kernel's INIT as this server read it, for the holder */
	uint32_t init_req_len;
	uint8_t replay_init[QM_HOLDER_INIT_MAX];   /* the first server's INIT, replayed by a later one */
	uint32_t replay_init_len;
	_Atomic uint64_t replay_unique;     /* the replayed INIT's: its answer goes nowhere */
	atomic_bool draining;       /* an upgrade's new server serves: stop reading */
	pthread_t holder_listener;  /* server.c: hears the holder */
	bool holder_listening;
	atomic_bool holder_closing;
	atomic_int workers_done;
	uint64_t fh_tag;            /* a restartable server's file handles (ops.c) */
	int state_fd;               /* a held catalog's state file as the last server left it, or -1 */
};

extern const struct fuse_lowlevel_ops qm_ops;

/*
 * ops.c: the operations on one image, each answering its request.  The
 * plain mount's handlers (qm_ops) pass fs->view; the catalog's pass the
 * view of the image a node id belongs to.
 */
/* count_opens: OPEN and RELEASE are wanted whatever the options (a catalog counts open files). */
void qm_init_conn(struct qm_fs *fs, struct fuse_conn_info *conn, bool count_opens);
void qm_img_lookup(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t parent, const char *name);
void qm_img_getattr(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid);
void qm_img_readlink(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid);
void qm_img_open(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
		 struct fuse_file_info *fi);
void qm_img_release(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, struct fuse_file_info *fi);
void qm_img_read(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid, size_t size,
		 off_t off, struct fuse_file_info *fi);
void qm_img_opendir(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
		    struct fuse_file_info *fi);
void qm_img_releasedir(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, struct fuse_file_info *fi);
void qm_img_readdir(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid, size_t size,
		    off_t off, struct fuse_file_info *fi, bool plus);
void qm_img_statfs(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req);
void qm_img_getxattr(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid,
		     const char *name, size_t size);
void qm_img_listxattr(struct qm_fs *fs, const struct qm_view *v, fuse_req_t req, fuse_ino_t nodeid, size_t size);
int qm_xattr_name_error(const char *name);

/* dir.c */
int qm_dir_load(struct qs_image *img, const struct qs_inode *dir, struct qm_dir **out);
void qm_dir_free(struct qm_dir *d);

/* nodes.c */
struct qm_nodes *qm_nodes_create(void);
void qm_nodes_destroy(struct qm_nodes *nodes);
/* The open file or listing of a node id of view v (v->nodes, v->img), held until qm_nodes_put(). */
int qm_nodes_get(const struct qm_view *v, fuse_ino_t nodeid, bool is_dir, struct qm_node **out);
void *qm_node_obj(const struct qm_node *node);
/* fn for each open file (struct qs_file) in t, under its shard's lock: before t and its image close. */
void qm_nodes_each_file(struct qm_nodes *t, void (*fn)(void *file, void *arg), void *arg);
void qm_nodes_put(struct qm_node *node);
/* Another reference to a node already held (a block loaded ahead of its read holds one). */
void qm_nodes_hold(struct qm_node *node);

/* siblings.c: READDIRPLUS notes each file's directory, a READ of a fragment tail pushes the files after it */
void qm_siblings_note(struct qm_fs *fs, const struct qm_view *v, uint64_t dir, const struct qs_inode *in);
void qm_siblings_push(struct qm_fs *fs, const struct qm_view *v, const struct qs_inode *in);

/* fill.c */
struct qm_fill *qm_fill_start(struct fuse_session *se);
/*
 * umount.c: if PATH is a FUSE mount whose daemon is gone (ENOTCONN), detach
 * it lazily (fusermount3 -u -z for an ordinary user).  1 if one was
 * detached, 0 if there was none, or -errno.
 */
int qm_detach_dead(const char *path);
/* The device of what is mounted at the absolute path 'abs' (mountinfo: no request to it); 0 or -ENOENT. */
int qm_mounted_dev(const char *abs, dev_t *dev);
/* Detach the mount at 'mountpoint' lazily (umount2 as root, else fusermount3 -u -z); 0 or -errno. */
int qm_lazy_unmount(const char *mountpoint);

/* Stop and free; report: one line of counters on stderr. */
void qm_fill_stop(struct qm_fill *fill, bool report);
/* Hand over 'block' (a reference the caller owns) to be stored at 'off' of 'nodeid'; the
 * image may close meanwhile (qs_block_release needs no image). */
void qm_fill_push(struct qm_fill *fill, fuse_ino_t nodeid, uint64_t index, off_t off,
		  struct qs_block *block, const void *data, size_t len);

/* ahead.c: the pool, with threads for the CPUs the daemon may use; blocks ahead are
 * bounded by a quarter of cache_bytes (the block cache's limit). */
struct qm_ahead *qm_ahead_start(size_t cache_bytes);
/* Stop and free, after the last READ; report: one line of counters on stderr. */
void qm_ahead_stop(struct qm_ahead *ahead, bool report);
/*
 * A READ of blocks [first, first + count) of 'file' (block size bs): if it
 * continues the file's stream, queue the blocks ahead of it; elsewhere,
 * drop what was queued.  'node': the reference the READ holds on the file,
 * for one held by each block queued; NULL when the file has a handle,
 * which qm_ahead_forget() before it is closed.
 */
void qm_ahead_read(struct qm_ahead *ahead, struct qs_file *file, struct qm_node *node, uint64_t first,
		   uint64_t count, size_t bs);
/* The file is closing: drop its queued blocks and wait for those being loaded. */
void qm_ahead_forget(struct qm_ahead *ahead, const struct qs_file *file);

/*
 * session.c: what a session serves and the hooks of its life, given by
 * mount_main.c: the plain mount's or the catalog's.
 */
struct qm_serve {
	const struct fuse_lowlevel_ops *ops;
	bool grow_workers;          /* add a worker whenever none is idle, up to QM_MAX_WORKERS */
	/* Once the kernel's INIT is answered, before readiness is reported (the catalog's watcher). */
	void (*started)(struct qm_fs *fs);
	/* After readiness is reported (the daemon lets its terminal go). */
	void (*ready)(struct qm_fs *fs);
	/* The workers and the page-cache fill have stopped; the session (notices go through it) is not ended yet. */
	void (*stopping)(struct qm_fs *fs);
};
/*
 * Mount, serve until the kernel ends the connection, clean up.  Once the
 * kernel's INIT is answered a byte goes to ready_fd (if >= 0).  Returns 0,
 * or -errno if the mount failed (the error was reported).
 */
int qm_session_run(struct qm_fs *fs, const struct qm_serve *serve, int ready_fd);
void qm_request_unmount(struct qm_fs *fs);
/* The holder's mount: fs->se made (it serves nothing) and mounted; 0, or -errno said in one line. */
int qm_session_mount(struct qm_fs *fs);

/* server.c (holder.h): a held mount's server. */
/*
 * If this process is a server (QUASH_SERVER_FD set: handoff.h), read the
 * command line from the holder into *argc, *argv and a held catalog's
 * state file into *state_fd (-1: none yet), and return the socket (>= 0);
 * -1 if not a server; exits if the holder cannot be heard.
 */
int qm_server_args(int *argc, char ***argv, bool *squashfuse_compat, int *state_fd);
/*
 * A held catalog's state file from now on (fd, or -1: the state is lost
 * and the mount cannot outlive this server); 0 or -errno.  The holder
 * reads it before acting on this server's death.
 */
int qm_server_send_state(struct qm_fs *fs, int fd);

/* Ask the holder for the mounted descriptor (into *fuse_fd), the mount point and its INIT; 0 or -EIO. */
int qm_server_attach(struct qm_fs *fs, int *fuse_fd);
/* A later server: feed the session the first server's INIT; 0 or -EPROTO. */
int qm_server_replay_init(struct qm_fs *fs);
/* Serving: tell the holder (with the INIT this server read, if any) and listen to it from now on. */
int qm_server_ready(struct qm_fs *fs);
/* The session is over: stop listening to the holder (joins the listener). */
void qm_server_stop(struct qm_fs *fs);

/* The worker threads a session starts when -o threads= is not given. */
unsigned qm_default_threads(void);

#endif

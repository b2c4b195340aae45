/*
 * uring.c - FUSE over io_uring: the kernel ABI (include/uapi/linux/fuse.h,
 * 7.42; Documentation/filesystems/fuse-io-uring.rst), one queue per CPU,
 * and the /dev/fuse hooks that switch it on.  See uring.h.
 *
 * The protocol, as the kernel's fs/fuse/dev_uring.c implements it:
 *
 *  - INIT is answered on /dev/fuse with FUSE_OVER_IO_URING in flags2.
 *  - Each ring entry is a header buffer (struct qm_ur_header: the in or out
 *    header, the opcode's own header, and the entry's commit id and payload
 *    size) and a payload buffer of at least max(8 KiB, max_write,
 *    max_pages pages).  FUSE_IO_URING_CMD_REGISTER hands both to the kernel
 *    for queue qid; the command completes when a request is in them.
 *  - The reply goes into the same buffers, and COMMIT_AND_FETCH both
 *    returns it and waits for the next request.
 *  - Once every CPU's queue has an entry, the kernel sends requests there
 *    instead of /dev/fuse; until then they wait (so the queues must come up,
 *    or be switched off: see give_up()).
 *
 * Each thread owns one io_uring and one entry and is pinned to its queue's
 * CPU; QM_URING_THREADS_PER_CPU threads share a queue so that a request
 * waiting on the disk or the network does not hold up the next one from
 * that CPU.
 */
#include <errno.h>
#ifdef QUASH_HAVE_URING
#include <liburing.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "mount_int.h"
#include "uring.h"

/* ---- the kernel ABI (7.42) that Debian 12's headers predate ----------- */

#define QM_FUSE_INIT_EXT            (1u << 30)
#define QM_FUSE_MAX_PAGES           (1u << 22)
#define QM_FUSE_OVER_IO_URING_HI    (1u << 9)   /* FUSE_OVER_IO_URING (1ULL << 41), in flags2 */
#define QM_FUSE_INIT                26
#define QM_FUSE_IO_URING_CMD_REGISTER 1
#define QM_FUSE_IO_URING_CMD_COMMIT_AND_FETCH 2
#define QM_FUSE_URING_IN_OUT_HEADER_SZ 128
#define QM_FUSE_URING_OP_IN_OUT_SZ  128

struct qm_fuse_in_header {
	uint32_t len, opcode;
	uint64_t unique, nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen, padding;
};

struct qm_fuse_out_header {
	uint32_t len;
	int32_t error;
	uint64_t unique;
};

struct qm_ur_ent_in_out {                   /* struct fuse_uring_ent_in_out */
	uint64_t flags;
	uint64_t commit_id;
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

struct qm_ur_header {                       /* struct fuse_uring_req_header */
	char in_out[QM_FUSE_URING_IN_OUT_HEADER_SZ];
	char op_in[QM_FUSE_URING_OP_IN_OUT_SZ];
	struct qm_ur_ent_in_out ent;
};

struct qm_ur_cmd_req {                      /* struct fuse_uring_cmd_req, in the SQE's cmd area */
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

/* Offsets in fuse_init_in / fuse_init_out (after the 40/16-byte headers). */
#define INIT_IN_FLAGS   12
#define INIT_IN_FLAGS2  16
#define INIT_OUT_FLAGS  12
#define INIT_OUT_MAX_WRITE 20
#define INIT_OUT_MAX_PAGES 28
#define INIT_OUT_FLAGS2 32

/* ---- limits ------------------------------------------------------------- */

/* Threads per CPU queue: one serves, the other takes the next request while the first waits on I/O. */
#define QM_URING_THREADS_PER_CPU 2
#define QM_URING_MAX_THREADS 512
/* SQ entries per thread: one command in flight, room to spare. */
#define QM_URING_DEPTH 4
/* Times a queue thread registers a new entry after an unexpected error. */
#define QM_URING_REREGISTER_MAX 3
/* How often an idle thread looks at the stop flag. */
#define QM_URING_POLL_SECONDS 1
/* The kernel's smallest payload buffer (FUSE_MIN_READ_BUFFER) and default max_pages. */
#define QM_FUSE_MIN_READ_BUFFER 8192u
#define QM_FUSE_DEFAULT_MAX_PAGES 32u

/* One request served, by transport and opcode (opcodes past the table count as "op0"). */
static void count_request(struct qm_fs *fs, _Atomic uint64_t *transport, uint32_t opcode)
{
	size_t n = sizeof(fs->counters.by_opcode) / sizeof(fs->counters.by_opcode[0]);

	atomic_fetch_add_explicit(transport, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&fs->counters.by_opcode[opcode < n ? opcode : 0], 1, memory_order_relaxed);
}

#ifdef QUASH_HAVE_URING
struct qm_ur_thread {
	struct qm_uring *u;
	pthread_t tid;
	bool started;
	int qid;
	int cpu;                    /* -1: not pinned (a possible CPU that is offline) */
	struct io_uring ring;
	bool ring_ok;
	struct qm_ur_header *hdr;   /* the entry's buffers */
	uint8_t *payload;
	uint8_t *flat;              /* the request as /dev/fuse would give it */
	uint64_t unique;            /* of the request being served */
	bool replied;
};

struct qm_uring {
	struct qm_fs *fs;
	int fd;                     /* /dev/fuse */
	size_t payload_size;
	unsigned nthreads;
	atomic_bool stop;
	/* setup: each thread says whether its ring and registration are up */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned reported, failed;
	struct qm_ur_thread threads[];
};

/* The entry the calling thread is serving, if any: its reply goes back there. */
static __thread struct qm_ur_thread *current_ent;

/* ---- one queue thread --------------------------------------------------- */

static struct io_uring_sqe *prep_cmd(struct qm_ur_thread *t, uint32_t cmd_op, uint64_t commit_id,
				     const struct iovec *iov)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	struct qm_ur_cmd_req *req;

	if (!sqe)
		return NULL;
	memset(sqe, 0, 2 * sizeof(*sqe));      /* SQE128: the command sits in the second half */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->u->fd;
	sqe->cmd_op = cmd_op;
	if (iov) {
		sqe->addr = (uint64_t)(uintptr_t)iov;
		sqe->len = 2;
	}
	req = (struct qm_ur_cmd_req *)sqe->cmd;
	req->commit_id = commit_id;
	req->qid = (uint16_t)t->qid;
	io_uring_sqe_set_data(sqe, t);
	return sqe;
}

static int ring_setup(struct qm_ur_thread *t)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_DEFER_TASKRUN };
	int err = io_uring_queue_init_params(QM_URING_DEPTH, &t->ring, &p);

	if (err == -EINVAL) {           /* kernels before 6.1: no deferred task work */
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQE128;
		err = io_uring_queue_init_params(QM_URING_DEPTH, &t->ring, &p);
	}
	if (err < 0)
		return err;
	t->ring_ok = true;
	if (!t->hdr)
		t->hdr = calloc(1, sizeof(*t->hdr));
	if (!t->payload)
		t->payload = malloc(t->u->payload_size);
	if (!t->flat)
		t->flat = malloc(sizeof(struct qm_fuse_in_header) + QM_FUSE_URING_OP_IN_OUT_SZ + t->u->payload_size);
	if (!t->hdr || !t->payload || !t->flat)
		return -ENOMEM;
	return 0;
}

/* Lay the request out as one /dev/fuse message: in header, the opcode's header, the payload.  Its length or -EINVAL. */
static ssize_t flatten(struct qm_ur_thread *t)
{
	struct qm_fuse_in_header in;
	uint32_t payload = t->hdr->ent.payload_sz;
	size_t op_len;

	memcpy(&in, t->hdr->in_out, sizeof(in));
	if (in.len < sizeof(in) || payload > t->u->payload_size || in.len - sizeof(in) < payload)
		return -EINVAL;
	op_len = in.len - sizeof(in) - payload;
	if (op_len > QM_FUSE_URING_OP_IN_OUT_SZ)
		return -EINVAL;
	memcpy(t->flat, &in, sizeof(in));
	memcpy(t->flat + sizeof(in), t->hdr->op_in, op_len);
	memcpy(t->flat + sizeof(in) + op_len, t->payload, payload);
	t->unique = in.unique;
	return in.len;
}

static void serve(struct qm_ur_thread *t)
{
	struct qm_fs *fs = t->u->fs;
	ssize_t len = flatten(t);

	t->replied = false;
	if (len > 0) {
		struct fuse_buf buf = { .mem = t->flat, .size = (size_t)len };
		uint32_t opcode;

		memcpy(&opcode, t->flat + 4, sizeof(opcode));
		count_request(fs, &fs->counters.ring, opcode);
		current_ent = t;
		fuse_session_process_buf(fs->se, &buf);
		current_ent = NULL;
	}
	if (!t->replied) {
		/* Every request the kernel put in an entry needs an answer to free the entry. */
		struct qm_fuse_out_header out = { .len = sizeof(out), .error = -EIO, .unique = t->unique };

		memcpy(t->hdr->in_out, &out, sizeof(out));
		t->hdr->ent.payload_sz = 0;
	}
}

static void report_setup(struct qm_uring *u, bool ok)
{
	pthread_mutex_lock(&u->lock);
	u->reported++;
	u->failed += !ok;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* A ring and an entry registered for the thread's queue: 0 or -errno. */
static int register_entry(struct qm_ur_thread *t)
{
	struct iovec iov[2];
	int err = ring_setup(t);

	if (err)
		return err;
	iov[0] = (struct iovec){ .iov_base = t->hdr, .iov_len = sizeof(*t->hdr) };
	iov[1] = (struct iovec){ .iov_base = t->payload, .iov_len = t->u->payload_size };
	return prep_cmd(t, QM_FUSE_IO_URING_CMD_REGISTER, 0, iov) && io_uring_submit(&t->ring) == 1 ? 0 : -EIO;
}

/*
 * Serve the thread's entry until the session stops (0), the connection
 * ends (-ENOTCONN), or something unexpected happens (another -errno).
 */
static int serve_entry(struct qm_ur_thread *t)
{
	while (!atomic_load(&t->u->stop)) {
		struct __kernel_timespec ts = { .tv_sec = QM_URING_POLL_SECONDS };
		struct io_uring_cqe *cqe = NULL;
		int err = io_uring_submit_and_wait_timeout(&t->ring, &cqe, 1, &ts, NULL);
		int res;

		if (err == -ETIME || err == -EINTR || err == -EAGAIN)
			continue;
		if (err < 0)
			return err;
		/* It may return what it submitted without a completion (the timeout ran out first). */
		if (!cqe && io_uring_peek_cqe(&t->ring, &cqe) != 0)
			continue;
		res = cqe->res;
		io_uring_cqe_seen(&t->ring, cqe);
		if (res < 0)
			return res;
		serve(t);
		if (!prep_cmd(t, QM_FUSE_IO_URING_CMD_COMMIT_AND_FETCH, t->hdr->ent.commit_id, NULL))
			return -EBUSY;
	}
	return 0;
}

static void *queue_thread(void *arg)
{
	struct qm_ur_thread *t = arg;
	struct qm_uring *u = t->u;
	int err, tries = 0;

	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	err = register_entry(t);
	report_setup(u, err == 0);
	if (err)
		return NULL;            /* uring_start() says so, and switches io_uring off */
	/*
	 * An entry given up on an unexpected error is no longer the kernel's to
	 * fill: closing the ring cancels it, and a new one takes its place, so
	 * that the queue's requests never wait for an entry nobody serves.
	 */
	while ((err = serve_entry(t)) != 0 && err != -ENOTCONN && tries++ < QM_URING_REREGISTER_MAX) {
		qm_log(u->fs, "FUSE over io_uring: queue %d: %s; registering its entry again", t->qid, strerror(-err));
		io_uring_queue_exit(&t->ring);
		t->ring_ok = false;
		if ((err = register_entry(t)) != 0)
			break;
	}
	if (err && err != -ENOTCONN && !atomic_load(&u->stop))
		qm_log(u->fs, "FUSE over io_uring: queue %d lost a thread: %s", t->qid, strerror(-err));
	return NULL;
}

/* ---- the hooks on /dev/fuse --------------------------------------------- */

/* A reply to the request this thread serves from a queue goes back into its entry. */
static bool reply_to_ring(struct qm_ur_thread *t, const struct iovec *iov, int count, ssize_t *res)
{
	struct qm_fuse_out_header out;
	size_t total = 0;

	if (count < 1 || iov[0].iov_len != sizeof(out))
		return false;
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (out.unique != t->unique || t->replied)
		return false;
	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > t->u->payload_size - total) {
			out.error = -EIO;       /* cannot happen: the kernel sized the buffer for any reply */
			total = 0;
			break;
		}
		memcpy(t->payload + total, iov[i].iov_base, iov[i].iov_len);
		total += iov[i].iov_len;
	}
	out.len = (uint32_t)(sizeof(out) + total);
	memcpy(t->hdr->in_out, &out, sizeof(out));
	t->hdr->ent.payload_sz = (uint32_t)total;
	t->replied = true;
	*res = (ssize_t)(sizeof(out) + total);
	return true;
}

static size_t payload_size(const uint8_t *init_out, size_t len)
{
	uint32_t flags, max_write = 0;
	uint16_t max_pages = 0;
	long page = sysconf(_SC_PAGESIZE);
	size_t size = QM_FUSE_MIN_READ_BUFFER;

	memcpy(&flags, init_out + INIT_OUT_FLAGS, 4);
	if (len >= INIT_OUT_MAX_WRITE + 4)
		memcpy(&max_write, init_out + INIT_OUT_MAX_WRITE, 4);
	if ((flags & QM_FUSE_MAX_PAGES) && len >= INIT_OUT_MAX_PAGES + 2)
		memcpy(&max_pages, init_out + INIT_OUT_MAX_PAGES, 2);
	if (max_pages < QM_FUSE_DEFAULT_MAX_PAGES)
		max_pages = QM_FUSE_DEFAULT_MAX_PAGES;
	if (max_write > size)
		size = max_write;
	if ((size_t)max_pages * (size_t)page > size)
		size = (size_t)max_pages * (size_t)page;
	return size;
}

static struct qm_uring *uring_new(struct qm_fs *fs, int fd, size_t payload)
{
	long possible = sysconf(_SC_NPROCESSORS_CONF);
	cpu_set_t online;
	unsigned n = 0;
	struct qm_uring *u;

	if (possible < 1 || possible * QM_URING_THREADS_PER_CPU > QM_URING_MAX_THREADS)
		return NULL;
	if (sched_getaffinity(0, sizeof(online), &online) != 0)
		CPU_ZERO(&online);
	u = calloc(1, sizeof(*u) + (size_t)possible * QM_URING_THREADS_PER_CPU * sizeof(u->threads[0]));
	if (!u)
		return NULL;
	u->fs = fs;
	u->fd = fd;
	u->payload_size = payload;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	for (int cpu = 0; cpu < possible; cpu++) {
		/* The kernel wants every possible CPU's queue; one that cannot run here gets one unpinned thread. */
		bool here = CPU_ISSET(cpu, &online);

		for (int k = 0; k < (here ? QM_URING_THREADS_PER_CPU : 1); k++)
			u->threads[n++] = (struct qm_ur_thread){ .u = u, .qid = cpu, .cpu = here ? cpu : -1 };
	}
	u->nthreads = n;
	return u;
}

static void uring_free(struct qm_uring *u)
{
	for (unsigned i = 0; i < u->nthreads; i++) {
		struct qm_ur_thread *t = &u->threads[i];

		if (t->ring_ok)
			io_uring_queue_exit(&t->ring);
		free(t->hdr);
		free(t->payload);
		free(t->flat);
	}
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
}

/*
 * A queue could not come up after INIT said io_uring: the kernel would hold
 * every request until it does.  A registration it refuses (a payload buffer
 * too small) makes it switch io_uring off for the connection and serve
 * /dev/fuse again (fuse_uring_cmd() clears fc->io_uring).
 */
static void give_up(struct qm_uring *u)
{
	struct qm_ur_thread probe = { .u = u, .qid = 0 };
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };
	static uint8_t small[1];
	struct qm_ur_header hdr;
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { small, sizeof(small) } };
	struct io_uring_cqe *cqe;

	if (io_uring_queue_init_params(QM_URING_DEPTH, &probe.ring, &p) < 0)
		return;
	if (prep_cmd(&probe, QM_FUSE_IO_URING_CMD_REGISTER, 0, iov) && io_uring_submit(&probe.ring) == 1 &&
	    io_uring_wait_cqe(&probe.ring, &cqe) == 0)
		io_uring_cqe_seen(&probe.ring, cqe);
	io_uring_queue_exit(&probe.ring);
}

/* INIT is answered: bring the queues up (or switch io_uring off again). */
static void uring_start(struct qm_fs *fs)
{
	struct qm_uring *u = fs->uring;
	unsigned started = 0;

	for (unsigned i = 0; i < u->nthreads; i++)
		if (pthread_create(&u->threads[i].tid, NULL, queue_thread, &u->threads[i]) == 0) {
			u->threads[i].started = true;
			started++;
		}
	pthread_mutex_lock(&u->lock);
	while (u->reported < started)
		pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
	if (started < u->nthreads || u->failed) {
		qm_info(fs, "FUSE over io_uring: %u of %u queue threads failed to start; serving /dev/fuse",
		     u->nthreads - started + u->failed, u->nthreads);
		give_up(u);
		return;
	}
	if (fs->opt->debug)
		qm_info(fs, "FUSE over io_uring: %u threads on %ld CPU queues, %zu-byte payloads",
		     u->nthreads, sysconf(_SC_NPROCESSORS_CONF), u->payload_size);
}

#define QM_URING_NO_QUEUES "cannot set up the queues"
#else
/*
 * Built without liburing (meson -During=disabled, or none found): the hooks
 * still count requests, and -o uring serves /dev/fuse, saying why once.
 */
#define QM_URING_NO_QUEUES "quash was built without liburing"
struct qm_ur_thread;
static __thread struct qm_ur_thread *current_ent;

static bool reply_to_ring(struct qm_ur_thread *t, const struct iovec *iov, int count, ssize_t *res)
{
	(void)t, (void)iov, (void)count, (void)res;
	return false;
}

static size_t payload_size(const uint8_t *init_out, size_t len)
{
	(void)init_out, (void)len;
	return 0;
}

static struct qm_uring *uring_new(struct qm_fs *fs, int fd, size_t payload)
{
	(void)fs, (void)fd, (void)payload;
	return NULL;
}

static void uring_free(struct qm_uring *u) { (void)u; }
static void uring_start(struct qm_fs *fs) { (void)fs; }
#endif

/* Why io_uring is off, for the one line the fallback logs. */
static const char *why_not(uint32_t in_flags)
{
	FILE *f;
	char c = '?';

	if (!(in_flags & QM_FUSE_INIT_EXT))
		return "the kernel predates it";
	f = fopen("/sys/module/fuse/parameters/enable_uring", "re");
	if (!f)
		return "the kernel lacks it (no /sys/module/fuse/parameters/enable_uring)";
	if (fread(&c, 1, 1, f) != 1)
		c = '?';
	fclose(f);
	return c == 'N' ? "off in /sys/module/fuse/parameters/enable_uring" : "the kernel does not offer it";
}

/* The INIT answer: add FUSE_OVER_IO_URING if the kernel offered it and we can serve it. */
static ssize_t answer_init(struct qm_fs *fs, int fd, const struct iovec *iov, int count)
{
	struct iovec v[8];
	uint8_t out[128];
	uint32_t flags, flags2;
	ssize_t res;
	bool on = false, offered;

	if (count != 2 || iov[1].iov_len < INIT_OUT_FLAGS2 + 4 || iov[1].iov_len > sizeof(out) ||
	    fs->init_error)
		goto plain;
	memcpy(out, iov[1].iov_base, iov[1].iov_len);
	offered = (fs->init_in_flags & QM_FUSE_INIT_EXT) && (fs->init_in_flags2 & QM_FUSE_OVER_IO_URING_HI);
	if (fs->opt->uring && offered) {
		fs->uring = uring_new(fs, fd, payload_size(out, iov[1].iov_len));
		on = fs->uring != NULL;
	}
	if (!on) {
		if (fs->opt->uring)
			qm_info(fs, "FUSE over io_uring: not used (%s); serving /dev/fuse",
			     offered ? QM_URING_NO_QUEUES : why_not(fs->init_in_flags));
		goto plain;
	}
	memcpy(&flags, out + INIT_OUT_FLAGS, 4);
	memcpy(&flags2, out + INIT_OUT_FLAGS2, 4);
	flags |= QM_FUSE_INIT_EXT;
	flags2 |= QM_FUSE_OVER_IO_URING_HI;
	memcpy(out + INIT_OUT_FLAGS, &flags, 4);
	memcpy(out + INIT_OUT_FLAGS2, &flags2, 4);
	v[0] = iov[0];
	v[1] = (struct iovec){ out, iov[1].iov_len };
	res = writev(fd, v, 2);
	if (res >= 0)
		uring_start(fs);    /* the kernel took the answer: it is initialized now */
	return res;
plain:
	return writev(fd, iov, count);
}

/* The answer to a replayed INIT (server.c): the kernel had its answer from the first server. */
static bool replayed_init_answer(struct qm_fs *fs, const struct iovec *iov, int count, ssize_t *res)
{
	uint64_t unique = atomic_load(&fs->replay_unique);
	size_t total = 0;

	if (!unique || count < 1 || iov[0].iov_len < sizeof(struct qm_fuse_out_header) ||
	    ((const struct qm_fuse_out_header *)iov[0].iov_base)->unique != unique ||
	    !atomic_compare_exchange_strong(&fs->replay_unique, &unique, 0))
		return false;
	for (int i = 0; i < count; i++)
		total += iov[i].iov_len;
	*res = (ssize_t)total;
	return true;
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct qm_fs *fs = userdata;
	struct qm_ur_thread *t = current_ent;
	ssize_t res;

	if (t && reply_to_ring(t, iov, count, &res))
		return res;
	if (replayed_init_answer(fs, iov, count, &res))
		return res;
	if (count >= 1 && iov[0].iov_len >= 16 && fs->init_unique &&
	    ((const struct qm_fuse_out_header *)iov[0].iov_base)->unique == fs->init_unique) {
		fs->init_unique = 0;
		fs->init_error = ((const struct qm_fuse_out_header *)iov[0].iov_base)->error != 0;
		return answer_init(fs, fd, iov, count);
	}
	return writev(fd, iov, count);
}

static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata)
{
	struct qm_fs *fs = userdata;
	ssize_t n = read(fd, buf, len);
	struct qm_fuse_in_header in;

	if (n < (ssize_t)sizeof(in))
		return n;
	memcpy(&in, buf, sizeof(in));
	count_request(fs, &fs->counters.dev, in.opcode);
	if (in.opcode == QM_FUSE_INIT && (size_t)n >= sizeof(in) + INIT_IN_FLAGS2 + 4) {
		memcpy(&fs->init_in_flags, (uint8_t *)buf + sizeof(in) + INIT_IN_FLAGS, 4);
		memcpy(&fs->init_in_flags2, (uint8_t *)buf + sizeof(in) + INIT_IN_FLAGS2, 4);
		if (!(fs->init_in_flags & QM_FUSE_INIT_EXT))
			fs->init_in_flags2 = 0;
		fs->init_unique = in.unique;
		if ((size_t)n <= sizeof(fs->init_req)) {       /* a held mount's holder keeps it (holder.h) */
			memcpy(fs->init_req, buf, (size_t)n);
			fs->init_req_len = (uint32_t)n;
		}
	}
	return n;
}

int qm_transport_install(struct qm_fs *fs)
{
	static const struct fuse_custom_io io = { .writev = hook_writev, .read = hook_read };

	return fuse_session_custom_io(fs->se, &io, fuse_session_fd(fs->se)) == 0 ? 0 : -EIO;
}

void qm_transport_stop(struct qm_fs *fs)
{
	struct qm_uring *u = fs->uring;

	if (!u)
		return;
#ifdef QUASH_HAVE_URING
	atomic_store(&u->stop, true);
	for (unsigned i = 0; i < u->nthreads; i++)
		if (u->threads[i].started)
			pthread_join(u->threads[i].tid, NULL);
#endif
	uring_free(u);
	fs->uring = NULL;
}

/* ---- counters ----------------------------------------------------------- */

void qm_counters_report(struct qm_fs *fs)
{
	static const char *const names[64] = {
		[1] = "LOOKUP", [2] = "FORGET", [3] = "GETATTR", [5] = "READLINK", [14] = "OPEN",
		[15] = "READ", [17] = "STATFS", [18] = "RELEASE", [22] = "GETXATTR", [23] = "LISTXATTR",
		[25] = "FLUSH", [26] = "INIT", [27] = "OPENDIR", [28] = "READDIR", [29] = "RELEASEDIR",
		[34] = "ACCESS", [36] = "INTERRUPT", [39] = "IOCTL", [40] = "POLL", [42] = "BATCH_FORGET",
		[44] = "READDIRPLUS", [46] = "LSEEK", [51] = "STATX",
	};
	char line[1024];
	size_t n = (size_t)snprintf(line, sizeof(line), "requests: %llu over io_uring, %llu over /dev/fuse;",
				    (unsigned long long)atomic_load(&fs->counters.ring),
				    (unsigned long long)atomic_load(&fs->counters.dev));

	for (int op = 0; op < 64 && n < sizeof(line); op++) {
		uint64_t c = atomic_load(&fs->counters.by_opcode[op]);

		if (!c)
			continue;
		if (names[op])
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %s %llu", names[op], (unsigned long long)c);
		else
			n += (size_t)snprintf(line + n, sizeof(line) - n, " op%d %llu", op, (unsigned long long)c);
	}
	qm_info(fs, "%s", line);
}

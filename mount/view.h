/*
 * view.h - one image as the FUSE operations (ops.c) see it, and its node
 * ids.  Without FUSE's headers, so that the catalog's model (catalog/),
 * which keeps a view of each image version, builds without them too;
 * node ids are FUSE's fuse_ino_t, a uint64_t.
 */
#ifndef QUASH_MOUNT_VIEW_H
#define QUASH_MOUNT_VIEW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "quash.h"

struct qm_nodes;

/*
 * One image as the operations see it: the whole image of a plain mount, or
 * one version of one image in a catalog (catalog/).  Node ids and inode
 * numbers are offset so that a catalog's images never share one.
 */
struct qm_view {
	struct qs_image *img;
	const char *name;           /* the image as messages show it: no secrets */
	qs_ref root_ref;            /* root_nodeid stands for this inode */
	uint64_t root_nodeid;       /* FUSE_ROOT_ID, or the catalog entry's directory */
	uint64_t id_base;           /* every other node id is id_base + ref + QM_NODEID_BIAS */
	uint64_t ino_base;          /* added to the image's inode numbers for st_ino */
	uint32_t block_size;
	uint64_t bytes_used;
	uint32_t inode_count;
	bool has_xattrs;
	bool remote;                /* reads may wait on a server: they heed FUSE INTERRUPT */
	bool log_name;              /* messages name the image (a catalog's: fs->name is the catalog) */
	/* does an inode carry security.selinux: 0 not known yet, 1 no, 2 yes; NULL: never asked (a catalog's) */
	atomic_int *labels;
	atomic_int *opens;          /* open files and listings are counted here too, or NULL */
	_Atomic uint64_t *lookups;  /* node ids handed to the kernel and not yet forgotten, or NULL */
	uint64_t generation;        /* of every node id handed out: a catalog slot's reuse changes it */
	struct qm_nodes *nodes;     /* files and listings read without a handle (nodes.c), or NULL */
};

/* Node ids: the view's root_nodeid is its root inode, every other one id_base + inode reference + 2. */
#define QM_NODEID_BIAS 2

static inline qs_ref qm_ref_of(const struct qm_view *v, uint64_t nodeid)
{
	return nodeid == v->root_nodeid ? v->root_ref : (qs_ref)(nodeid - v->id_base - QM_NODEID_BIAS);
}

static inline uint64_t qm_nodeid_of(const struct qm_view *v, qs_ref ref)
{
	return ref == v->root_ref ? v->root_nodeid : v->id_base + (uint64_t)ref + QM_NODEID_BIAS;
}

/* A view of the whole image 'img' with its root at root_ref: node and inode numbers as in a plain mount (ops.c). */
void qm_view_init(struct qm_view *v, struct qs_image *img, qs_ref root_ref, bool remote);

#endif

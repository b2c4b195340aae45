/*
 * ctl.h - the control files at a catalog mount's root (.quash-catalog and
 * .quash-refresh), bounded per user; ctl.c says how.
 */
#ifndef QUASH_CATALOG_CTL_H
#define QUASH_CATALOG_CTL_H

#include "catalog_int.h"
#include "mount_int.h"

struct qc_ctl;
struct qc_ctl *qc_ctl_create(void);
void qc_ctl_destroy(struct qc_ctl *t);
/* Each answers its request: EMFILE past a user's or everyone's share of opens. */
void qc_ctl_open(struct qm_catalog *c, struct qc_ctl *t, fuse_req_t req, fuse_ino_t nodeid,
		 struct fuse_file_info *fi);
/* A handle opened under a server before this one is opened again, for the reader. */
void qc_ctl_read(struct qm_catalog *c, fuse_req_t req, fuse_ino_t nodeid, size_t size, off_t off,
		 struct fuse_file_info *fi);
/* Gives the open's place back; the caller answers RELEASE. */
void qc_ctl_release(struct qc_ctl *t, struct fuse_file_info *fi);

#endif

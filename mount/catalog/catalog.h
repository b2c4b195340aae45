/*
 * catalog.h - `quash mount --catalog`: a directory, web server or bucket of
 * images under one mount point, each image a directory, opened on first
 * use.  What mount_main.c and the catalog's operations (ops.c) see: making
 * and destroying a catalog (catalog.c) and what its session serves.  The
 * model itself is catalog_int.h's, the folder's README says which file
 * does what.
 */
#ifndef QUASH_CATALOG_H
#define QUASH_CATALOG_H

#include "catalog_int.h"
#include "mount_int.h"

/* Build the catalog from its source (one listing); 0 or -errno, said on stderr. */
int qc_create(struct qm_fs *fs, struct qm_catalog **out);
/* qc_destroy() (catalog_int.h) stops the watcher and frees everything. */

/* The control files' state (ctl.h), made with the catalog. */
struct qc_ctl *qc_ctl_of(struct qm_catalog *c);

/* What a catalog's session serves (ops.c): its operations, more workers as needed, the watcher. */
extern const struct qm_serve qc_serve;

#endif

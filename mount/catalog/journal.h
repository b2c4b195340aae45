/*
 * journal.h - the records of a held catalog's state file: what journal.c
 * writes and seed.c reads back (journal.c says why the file exists).
 * Each record is a struct qc_jhdr, then its data; a later record of a kind
 * and id replaces an earlier one, and a GONE record ends it.
 */
#ifndef QUASH_CATALOG_JOURNAL_H
#define QUASH_CATALOG_JOURNAL_H

#include <stdint.h>

#define QC_J_DIR 1                  /* a directory or an alias at index id: is_alias, path, target */
#define QC_J_SLOT 2                 /* an image version in slot id: struct qc_jslot, key, ETag, root hash */
#define QC_J_DIR_GONE 3
#define QC_J_SLOT_GONE 4
#define QC_J_FILE_MAX (UINT64_C(1) << 32)   /* bytes of a state file a server reads */
#define QC_J_DIR_IDS_MAX (1u << 26)         /* directory indices a state file may name */
#define QC_J_SLACK (1u << 20)               /* bytes the file grows past twice its live records before a rewrite */

struct qc_jhdr {
	uint32_t len;               /* the whole record, this header included */
	uint32_t sum;               /* XXH32 of what follows it */
	uint32_t kind, id;
};

struct qc_jslot {
	uint64_t serial, size, dev, ino;
	int64_t mtime;
	uint32_t version, mode, uid, gid;
};

#endif

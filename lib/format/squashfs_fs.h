/*
 * squashfs_fs.h - the squashfs 4.0 on-disk format.
 *
 * Everything on disk is little-endian and packed.  The structures here are
 * never overlaid on raw bytes: each has a decode function (squashfs_fs.c)
 * that reads fields one at a time, so alignment and host byte order never
 * matter and a short buffer is detected instead of over-read.
 *
 * References: doc/format.adoc in squashfs-tools-ng, and fs/squashfs/squashfs_fs.h
 * in Linux.  Both the reader (lib/) and the writer (pack/) use this file.
 */
#ifndef QUASH_SQUASHFS_FS_H
#define QUASH_SQUASHFS_FS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SQFS_MAGIC              0x73717368u  /* "hsqs" read as little-endian */
#define SQFS_MAGIC_SWAPPED      0x68737173u  /* "sqsh": a big-endian squashfs 1.x-3.x */
#define SQFS_VERSION_MAJOR      4
#define SQFS_VERSION_MINOR      0
#define SQFS_SUPER_SIZE         96

#define SQFS_META_SIZE          8192         /* uncompressed metadata block */
#define SQFS_META_UNCOMPRESSED  0x8000u      /* bit in the 16-bit metadata header */
#define SQFS_META_SIZE_MASK     0x7fffu

#define SQFS_BLOCK_UNCOMPRESSED (1u << 24)   /* bit in a data/fragment size word */
#define SQFS_BLOCK_SIZE_MASK    0x00ffffffu

#define SQFS_BLOCK_LOG_MIN      12           /* 4 KiB */
#define SQFS_BLOCK_LOG_MAX      20           /* 1 MiB */

#define SQFS_INVALID_FRAG       0xffffffffu
#define SQFS_INVALID_XATTR      0xffffffffu
#define SQFS_INVALID_TABLE      0xffffffffffffffffull

#define SQFS_NAME_MAX           256          /* a directory entry name, bytes */
#define SQFS_DIR_HEADER_MAX     256          /* entries that one directory header may cover */

/* Superblock flags. */
#define SQFS_FLAG_UNCOMPRESSED_INODES    0x0001
#define SQFS_FLAG_UNCOMPRESSED_DATA      0x0002
#define SQFS_FLAG_CHECK                  0x0004
#define SQFS_FLAG_UNCOMPRESSED_FRAGMENTS 0x0008
#define SQFS_FLAG_NO_FRAGMENTS           0x0010
#define SQFS_FLAG_ALWAYS_FRAGMENTS       0x0020
#define SQFS_FLAG_DUPLICATES             0x0040
#define SQFS_FLAG_EXPORTABLE             0x0080
#define SQFS_FLAG_UNCOMPRESSED_XATTRS    0x0100
#define SQFS_FLAG_NO_XATTRS              0x0200
#define SQFS_FLAG_COMPRESSOR_OPTIONS     0x0400
#define SQFS_FLAG_UNCOMPRESSED_IDS       0x0800

/* Compressor ids. */
enum sqfs_compressor_id {
	SQFS_COMP_GZIP = 1,
	SQFS_COMP_LZMA = 2,
	SQFS_COMP_LZO  = 3,
	SQFS_COMP_XZ   = 4,
	SQFS_COMP_LZ4  = 5,
	SQFS_COMP_ZSTD = 6,
};

/* Inode types as stored; extended types are basic + 7. */
enum sqfs_inode_type {
	SQFS_INODE_DIR = 1,
	SQFS_INODE_FILE = 2,
	SQFS_INODE_SYMLINK = 3,
	SQFS_INODE_BLKDEV = 4,
	SQFS_INODE_CHRDEV = 5,
	SQFS_INODE_FIFO = 6,
	SQFS_INODE_SOCKET = 7,
	SQFS_INODE_EXT_DIR = 8,
	SQFS_INODE_EXT_FILE = 9,
	SQFS_INODE_EXT_SYMLINK = 10,
	SQFS_INODE_EXT_BLKDEV = 11,
	SQFS_INODE_EXT_CHRDEV = 12,
	SQFS_INODE_EXT_FIFO = 13,
	SQFS_INODE_EXT_SOCKET = 14,
};
#define SQFS_INODE_EXT_DELTA 7

/* Xattr key prefixes: the low byte of an xattr entry's type. */
#define SQFS_XATTR_USER        0
#define SQFS_XATTR_TRUSTED     1
#define SQFS_XATTR_SECURITY    2
#define SQFS_XATTR_PREFIX_MASK 0x00ff
#define SQFS_XATTR_VALUE_OOL   0x0100     /* value is a reference to another value */

/* Inode and directory references: (metadata block start << 16) | offset. */
static inline uint64_t sqfs_ref_block(uint64_t ref) { return ref >> 16; }
static inline uint16_t sqfs_ref_offset(uint64_t ref) { return (uint16_t)(ref & 0xffff); }
static inline uint64_t sqfs_make_ref(uint64_t block, uint16_t offset) { return (block << 16) | offset; }

struct sqfs_super {
	uint32_t magic;
	uint32_t inode_count;
	uint32_t mkfs_time;
	uint32_t block_size;
	uint32_t fragment_count;
	uint16_t compressor;
	uint16_t block_log;
	uint16_t flags;
	uint16_t id_count;
	uint16_t version_major;
	uint16_t version_minor;
	uint64_t root_inode_ref;
	uint64_t bytes_used;
	uint64_t id_table_start;
	uint64_t xattr_id_table_start;
	uint64_t inode_table_start;
	uint64_t directory_table_start;
	uint64_t fragment_table_start;
	uint64_t export_table_start;
};

struct sqfs_fragment_entry {          /* 16 bytes on disk */
	uint64_t start;
	uint32_t size;                    /* with SQFS_BLOCK_UNCOMPRESSED */
	uint32_t unused;
};
#define SQFS_FRAGMENT_ENTRY_SIZE 16

struct sqfs_dir_header {              /* 12 bytes on disk */
	uint32_t count;                   /* entries that follow, minus one */
	uint32_t start_block;             /* inode table block of their inodes */
	uint32_t inode_number;            /* base inode number */
};
#define SQFS_DIR_HEADER_SIZE 12

struct sqfs_dir_entry {               /* 8 bytes on disk + name */
	uint16_t offset;                  /* inode's offset in its metadata block */
	int16_t inode_offset;             /* inode number relative to the header's */
	uint16_t type;                    /* basic inode type */
	uint16_t size;                    /* name length minus one */
};
#define SQFS_DIR_ENTRY_SIZE 8

struct sqfs_dir_index {               /* 12 bytes on disk + name */
	uint32_t index;                   /* byte offset into the directory listing */
	uint32_t start_block;             /* directory table block, relative to the table */
	uint32_t size;                    /* name length minus one */
};
#define SQFS_DIR_INDEX_SIZE 12

struct sqfs_xattr_id_table {          /* 16 bytes on disk */
	uint64_t kv_start;
	uint32_t count;
	uint32_t unused;
};
#define SQFS_XATTR_ID_TABLE_SIZE 16

struct sqfs_xattr_id {                /* 16 bytes on disk */
	uint64_t ref;                     /* key/value pairs, a metadata reference */
	uint32_t count;
	uint32_t size;
};
#define SQFS_XATTR_ID_SIZE 16

/* Little-endian field access on byte buffers. */
static inline uint16_t sqfs_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t sqfs_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t sqfs_le64(const uint8_t *p)
{
	return (uint64_t)sqfs_le32(p) | (uint64_t)sqfs_le32(p + 4) << 32;
}
static inline void sqfs_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void sqfs_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void sqfs_put64(uint8_t *p, uint64_t v)
{
	sqfs_put32(p, (uint32_t)v);
	sqfs_put32(p + 4, (uint32_t)(v >> 32));
}

/* Decoders: buffers must hold the structure's on-disk size. */
void sqfs_super_decode(struct sqfs_super *s, const uint8_t buf[SQFS_SUPER_SIZE]);
void sqfs_super_encode(const struct sqfs_super *s, uint8_t buf[SQFS_SUPER_SIZE]);
void sqfs_dir_header_decode(struct sqfs_dir_header *h, const uint8_t buf[SQFS_DIR_HEADER_SIZE]);
void sqfs_dir_entry_decode(struct sqfs_dir_entry *e, const uint8_t buf[SQFS_DIR_ENTRY_SIZE]);
void sqfs_dir_index_decode(struct sqfs_dir_index *i, const uint8_t buf[SQFS_DIR_INDEX_SIZE]);
void sqfs_fragment_entry_decode(struct sqfs_fragment_entry *f, const uint8_t buf[SQFS_FRAGMENT_ENTRY_SIZE]);
void sqfs_xattr_id_decode(struct sqfs_xattr_id *x, const uint8_t buf[SQFS_XATTR_ID_SIZE]);
void sqfs_xattr_id_table_decode(struct sqfs_xattr_id_table *t, const uint8_t buf[SQFS_XATTR_ID_TABLE_SIZE]);

#endif

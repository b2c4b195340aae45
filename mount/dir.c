/*
 * dir.c - a directory's whole listing, read once into an array: readdir
 * offsets are indexes into it, and readdirplus reads each entry's inode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mount_int.h"

/* A hostile image gets no longer listing than this. */
#define QM_DIR_ENTRIES_MAX (1u << 22)

void qm_dir_free(struct qm_dir *d)
{
	if (d) {
		free(d->ents);
		free(d->names);
		free(d);
	}
}

static int dir_append(struct qm_dir *d, size_t *ents_cap, size_t *names_len, size_t *names_cap,
		      const struct qs_dirent *ent)
{
	if (d->count == QM_DIR_ENTRIES_MAX)
		return qs_set_error(-EIO, "directory has more than %u entries", QM_DIR_ENTRIES_MAX);
	if (d->count == *ents_cap) {
		size_t cap = *ents_cap ? *ents_cap * 2 : 64;
		void *p = realloc(d->ents, cap * sizeof(*d->ents));

		if (!p)
			return -ENOMEM;
		d->ents = p;
		*ents_cap = cap;
	}
	if (*names_len + ent->name_len + 1 > *names_cap) {
		size_t cap = *names_cap ? *names_cap * 2 : 1024;
		void *p;

		while (cap < *names_len + ent->name_len + 1)
			cap *= 2;
		p = realloc(d->names, cap);
		if (!p)
			return -ENOMEM;
		d->names = p;
		*names_cap = cap;
	}
	d->ents[d->count++] = (struct qm_dirent){
		.ref = ent->ref, .ino = ent->ino, .name_off = (uint32_t)*names_len,
		.name_len = (uint16_t)ent->name_len, .type = (uint8_t)ent->type,
	};
	memcpy(d->names + *names_len, ent->name, ent->name_len + 1);
	*names_len += ent->name_len + 1;
	return 0;
}

/* The whole listing, read once; readdir offsets are indexes into it. */
int qm_dir_load(struct qs_image *img, const struct qs_inode *in, struct qm_dir **out)
{
	struct qm_dir *d = calloc(1, sizeof(*d));
	size_t ents_cap = 0, names_len = 0, names_cap = 0;
	struct qs_dir_iter it;
	struct qs_dirent ent;
	int err;

	if (!d)
		return -ENOMEM;
	d->self_ino = in->ino;
	d->parent_ino = in->u.dir.parent_ino;
	err = qs_dir_open(img, in, &it);
	while (!err && (err = qs_dir_next(&it, &ent)) == 1)
		err = dir_append(d, &ents_cap, &names_len, &names_cap, &ent);
	if (err < 0) {
		qm_dir_free(d);
		return err;
	}
	*out = d;
	return 0;
}

/*
 * mode.c - octal and symbolic permission changes (mode.h), applied to
 * every inode by tree.c for mksquashfs's -force-file-mode and
 * -force-dir-mode.  The clauses are compiled once and run per inode.
 */
#include <stddef.h>

#include "mode.h"

#define MODE_TYPE_BITS 0170000u
#define MODE_DIR       0040000u

static int add_op(struct mode_spec *m, struct mode_op op, const char **why)
{
	if (m->count == MODE_OPS_MAX) {
		*why = "too many clauses";
		return -1;
	}
	m->ops[m->count++] = op;
	return 0;
}

/* One clause, from s up to its comma or end ('end'). */
static int parse_clause(const char *s, const char *end, struct mode_spec *m, const char **why)
{
	uint16_t mask = 0;
	bool named = false;

	for (; s < end && (*s == 'u' || *s == 'g' || *s == 'o' || *s == 'a'); s++, named = true)
		mask |= *s == 'u' ? 04700 : *s == 'g' ? 02070 : *s == 'o' ? 01007 : 07777;
	if (!named)
		mask = 0777;
	if (s == end || (*s != '+' && *s != '-' && *s != '=')) {
		*why = "expected u, g, o, a or an operator (+, - or =)";
		return -1;
	}
	while (s < end) {
		struct mode_op op = { .op = *s++, .mask = mask };

		if (op.op != '+' && op.op != '-' && op.op != '=') {
			*why = "expected an operator (+, - or =)";
			return -1;
		}
		if (s < end && (*s == 'u' || *s == 'g' || *s == 'o')) {
			op.copy = *s++;
		} else {
			for (; s < end && *s != '+' && *s != '-' && *s != '='; s++) {
				switch (*s) {
				case 'r': op.bits |= 0444; break;
				case 'w': op.bits |= 0222; break;
				case 'x': op.bits |= 0111; break;
				case 's': op.bits |= 06000; break;
				case 't': op.bits |= 01000; break;
				case 'X': op.X = true; break;
				default:
					*why = "expected permissions (r, w, x, X, s, t) or a class to copy (u, g, o)";
					return -1;
				}
			}
			op.bits &= mask;
		}
		if (add_op(m, op, why))
			return -1;
	}
	return 0;
}

int mode_parse(const char *s, struct mode_spec *out, const char **why)
{
	const char *p = s;
	unsigned octal = 0;

	out->count = 0;
	if (*s >= '0' && *s <= '7') {
		for (; *p >= '0' && *p <= '7' && octal <= 07777; p++)
			octal = octal * 8 + (unsigned)(*p - '0');
		if (*p || octal > 07777) {
			*why = "an octal mode is at most 7777, and alone";
			return -1;
		}
		out->ops[0] = (struct mode_op){ .op = '#', .bits = (uint16_t)octal, .mask = 07777 };
		out->count = 1;
		return 0;
	}
	while (*p) {
		const char *end = p;

		while (*end && *end != ',')
			end++;
		if (end > p && parse_clause(p, end, out, why))
			return -1;
		p = *end ? end + 1 : end;
	}
	if (out->count == 0) {
		*why = "no mode given";
		return -1;
	}
	return 0;
}

uint32_t mode_apply(const struct mode_spec *m, uint32_t mode)
{
	uint32_t perm = mode & 07777;

	for (unsigned i = 0; i < m->count; i++) {
		const struct mode_op *op = &m->ops[i];
		uint32_t bits = op->bits;

		if (op->copy) {
			unsigned shift = op->copy == 'u' ? 6 : op->copy == 'g' ? 3 : 0;
			uint32_t rwx = (perm >> shift) & 07;

			bits = (rwx << 6 | rwx << 3 | rwx) & op->mask;
		} else if (op->X && ((mode & MODE_TYPE_BITS) == MODE_DIR || (perm & 0111))) {
			bits |= 0111 & op->mask;
		}
		switch (op->op) {
		case '#': perm = bits; break;
		case '=': perm = (perm & ~(uint32_t)op->mask) | bits; break;
		case '+': perm |= bits; break;
		default:  perm &= ~bits; break;
		}
	}
	return (mode & MODE_TYPE_BITS) | perm;
}

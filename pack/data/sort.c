/*
 * sort.c - mksquashfs's -sort FILE: the order regular files' data is laid
 * out in.  Each line of FILE is "PATH PRIORITY" (the last word is the
 * priority, -32768 to 32767; the path is from the image's root and may hold
 * spaces).  A directory's priority applies to everything below it that has
 * none of its own; the default is 0.  Higher priorities come first, nearer
 * the start of the image; files of one priority keep the tree's order, so
 * the image stays a function of the tree and the sort file.
 *
 * quash pack's --order FILE is the same walk over a plainer list: one PATH
 * a line (what `quash profile paths` prints), the first line first.  Line
 * n of N gets priority N - n + 1, so listed files come before all others
 * (priority 0), in the list's order; a path listed twice keeps its first
 * place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "base/util.h"

#define SORT_LINE_MAX 8192
#define SORT_PRIORITY_MIN (-32768)
#define SORT_PRIORITY_MAX 32767
#define ORDER_MAX_LINES   (1u << 24)   /* an --order list's longest */

struct sort_rule {
	char *path;                 /* cleaned: no leading or repeated '/' */
	int priority;
};

struct sort_walk {
	const struct sort_rule *rules;
	size_t nrules;
	struct sort_entry *out;
	size_t n, cap;
	char path[SORT_LINE_MAX];
};

static int rule_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sort_rule *)a)->path, ((const struct sort_rule *)b)->path);
}

static void clean(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		if (out != p)
			*out++ = '/';
		while (*in && *in != '/')
			*out++ = *in++;
	}
	*out = '\0';
}

static int rule_cmp_first(const void *a, const void *b)
{
	const struct sort_rule *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (x->priority > y->priority ? -1 : x->priority < y->priority);
}

/* --order: priorities from the line numbers; of a path listed twice the first place stays. */
static void order_priorities(struct sort_rule *rules, size_t *count)
{
	size_t n = *count, m = 0;

	for (size_t i = 0; i < n; i++)
		rules[i].priority = (int)(n - i);
	qsort(rules, n, sizeof(*rules), rule_cmp_first);
	for (size_t i = 0; i < n; i++) {
		if (m && strcmp(rules[m - 1].path, rules[i].path) == 0) {
			free(rules[i].path);
			continue;
		}
		rules[m++] = rules[i];
	}
	*count = m;
}

static int read_rules(const char *file, bool order, struct sort_rule **out, size_t *count)
{
	const char *what = order ? "--order" : "-sort";
	char line[SORT_LINE_MAX];
	FILE *f = fopen(file, "re");
	struct sort_rule *rules = NULL;
	size_t n = 0, cap = 0;
	unsigned lineno = 0;
	int err = 0;

	*out = NULL;
	*count = 0;
	if (!f) {
		err = -errno;
		pack_error("%s %s: %s", what, file, strerror(errno));
		return err;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *end, *space;
		long prio;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			pack_error("%s %s:%u: line longer than %d bytes", what, file, lineno, SORT_LINE_MAX - 2);
			err = -EINVAL;
			break;
		}
		line[strcspn(line, "\r\n")] = '\0';
		space = strrchr(line, ' ');
		if (!line[0] || line[0] == '#')
			continue;
		if (order) {
			prio = 0;
			if (n == ORDER_MAX_LINES) {
				pack_error("--order %s: more than %u paths", file, ORDER_MAX_LINES);
				err = -E2BIG;
				break;
			}
		} else if (!space) {
			pack_error("-sort %s:%u: expected PATH PRIORITY", file, lineno);
			err = -EINVAL;
			break;
		} else {
			errno = 0;
			prio = strtol(space + 1, &end, 10);
			if (errno || end == space + 1 || *end || prio < SORT_PRIORITY_MIN ||
			    prio > SORT_PRIORITY_MAX) {
				pack_error("-sort %s:%u: priority '%s' is not in %d..%d", file, lineno, space + 1,
					   SORT_PRIORITY_MIN, SORT_PRIORITY_MAX);
				err = -EINVAL;
				break;
			}
			while (space > line && space[-1] == ' ')
				space--;
			*space = '\0';
		}
		clean(line);
		if (n == cap) {
			struct sort_rule *r = realloc(rules, (cap = cap ? 2 * cap : 64) * sizeof(*r));

			if (!r) {
				err = -ENOMEM;
				break;
			}
			rules = r;
		}
		rules[n].priority = (int)prio;
		if (!(rules[n++].path = strdup(line)))
			err = -ENOMEM;
	}
	fclose(f);
	if (err == -ENOMEM)
		pack_error("out of memory");
	if (!err && order)
		order_priorities(rules, &n);
	else if (!err)
		qsort(rules, n, sizeof(*rules), rule_cmp);
	*out = rules;
	*count = n;
	return err;
}

static const struct sort_rule *find_rule(const struct sort_walk *w, const char *path)
{
	struct sort_rule key = { .path = (char *)path };

	return bsearch(&key, w->rules, w->nrules, sizeof(*w->rules), rule_cmp);
}

static int add(struct sort_walk *w, struct pack_inode *inode, int priority)
{
	if (w->n == w->cap) {
		struct sort_entry *e = realloc(w->out, (w->cap = w->cap ? 2 * w->cap : 1024) * sizeof(*e));

		if (!e)
			return -ENOMEM;
		w->out = e;
	}
	w->out[w->n].inode = inode;
	w->out[w->n].priority = priority;
	w->out[w->n].seq = w->n;
	w->n++;
	return 0;
}

static int walk(struct sort_walk *w, struct pack_inode *dir, size_t len, int inherited)
{
	for (size_t i = 0; i < dir->u.dir.count; i++) {
		pack_child d = dir->u.dir.children[i];
		struct pack_inode *inode = tree_child_inode(d);
		size_t name_len = tree_child_name_len(d);
		const struct sort_rule *r;
		size_t sub = len + (len ? 1 : 0) + name_len;
		int prio = inherited, err = 0;

		if (sub >= sizeof(w->path))
			continue;               /* longer than any rule: keeps its directory's priority */
		if (len)
			w->path[len] = '/';
		memcpy(w->path + len + (len ? 1 : 0), tree_child_name(d), name_len);
		w->path[sub] = '\0';
		r = find_rule(w, w->path);
		if (r)
			prio = r->priority;
		if (tree_is_dir(inode))
			err = walk(w, inode, sub, prio);
		else if (tree_is_reg(inode))
			err = add(w, inode, prio);
		w->path[len] = '\0';
		if (err)
			return err;
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sort_entry *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int sort_order(struct pack_tree *t, const char *file, bool order, struct sort_entry **out, size_t *count)
{
	struct sort_walk w = { 0 };
	struct sort_rule *rules = NULL;
	size_t nrules = 0;
	int err = read_rules(file, order, &rules, &nrules);

	if (!err) {
		w.rules = rules;
		w.nrules = nrules;
		err = walk(&w, t->root, 0, 0);
		if (err == -ENOMEM)
			pack_error("out of memory");
	}
	for (size_t i = 0; i < nrules; i++)
		free(rules[i].path);
	free(rules);
	if (err) {
		free(w.out);
		return err;
	}
	qsort(w.out, w.n, sizeof(*w.out), entry_cmp);
	*out = w.out;
	*count = w.n;
	return 0;
}

/*
 * cpus.c - the CPUs this process may use, from its affinity and its
 * cgroup's quota: sysconf() counts the machine's, which a cpuset or a
 * container limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpus.h"

/* Where the cgroup v2 hierarchy is mounted on every current distribution. */
#define CGROUP_ROOT "/sys/fs/cgroup"
#define CGROUP_PATH_MAX 4096

unsigned cpus_of_quota(const char *cpu_max)
{
	unsigned long long quota, period;
	char extra;

	if (sscanf(cpu_max, "%llu %llu %c", &quota, &period, &extra) != 2 || period == 0 || quota == 0)
		return 0;
	quota = (quota + period - 1) / period;
	return quota > 1u << 20 ? 1u << 20 : (unsigned)quota;
}

/* Read a small file whole into buf (NUL-terminated): 0 or -errno. */
static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* The lowest cpu.max limit on the way from this process's cgroup to the root, or 0 for none. */
static unsigned cgroup_limit(void)
{
	char self[CGROUP_PATH_MAX], path[CGROUP_PATH_MAX + sizeof(CGROUP_ROOT "/cpu.max")], text[128], *dir, *nl;
	unsigned best = 0;

	/* cgroup v2 has a single line "0::/PATH"; v1 hierarchies are not looked at. */
	if (read_small("/proc/self/cgroup", self, sizeof(self)) || strncmp(self, "0::/", 4) != 0)
		return 0;
	dir = self + 3;
	if ((nl = strchr(dir, '\n')))
		*nl = '\0';
	for (;;) {
		unsigned n;

		snprintf(path, sizeof(path), CGROUP_ROOT "%s/cpu.max", strcmp(dir, "/") ? dir : "");
		if (!read_small(path, text, sizeof(text)) && (n = cpus_of_quota(text)) && (!best || n < best))
			best = n;
		if (strcmp(dir, "/") == 0)
			break;
		*strrchr(dir, '/') = '\0';
		if (!*dir)
			strcpy(dir, "/");
	}
	return best;
}

unsigned cpus_usable(void)
{
	cpu_set_t set;
	unsigned n = 0, limit = cgroup_limit();

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = (unsigned)CPU_COUNT(&set);
	if (n == 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);

		n = online > 0 ? (unsigned)online : 1;
	}
	return limit && limit < n ? limit : n;
}

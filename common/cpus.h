/*
 * cpus.h - how many CPUs this process may really use: the threads a mount
 * or a pack starts by default follow it, so that one build serves a
 * 2-core VM and a 64-core node alike.
 */
#ifndef QUASH_COMMON_CPUS_H
#define QUASH_COMMON_CPUS_H

/*
 * The CPUs of the calling thread's affinity mask (taskset, a batch
 * system's cpuset), lowered to the cgroup's CPU quota rounded up (cgroup
 * v2 cpu.max of this process's cgroup and every ancestor; a container's
 * --cpus): at least 1.  Read anew at each call.
 */
unsigned cpus_usable(void);

/*
 * The CPUs a cgroup v2 "cpu.max" text ("QUOTA PERIOD" or "max PERIOD")
 * allows, rounded up, or 0 when it sets no limit or is not that text.
 */
unsigned cpus_of_quota(const char *cpu_max);

#endif

#!/bin/bash
# Run every benchmark side by side with its peers and print the ratio tables.
# Not part of `make check`: absolute numbers on shared machines are noisy,
# so each script measures quash and its peers in the same run.
set -u
cd "$(dirname "$0")"
for b in mount.sh pack.sh pack-sizes.sh pack-many.sh remote.sh catalog.sh fleet.sh fleet-node.sh verity.sh \
	scaling.sh stream.sh holder.sh; do
	[ -x "$b" ] || continue
	echo "== $b"
	./"$b" || echo "$b failed (status $?)"
done

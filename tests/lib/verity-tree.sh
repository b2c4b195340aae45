# verity-tree.sh - sourced by the verity tests: the tree they pack and tamper with.
#
#   verity_tree DIR   DIR/big: whole data blocks of random bytes; DIR/d/text:
#                     compressible whole blocks (no tail in the fragment);
#                     DIR/frag/: small random files packed into one fragment
#                     block, stored raw (so their bytes can be found in the
#                     image); DIR/many/: empty files with random names and
#                     times, enough that the inode and directory tables span
#                     many 4 KiB blocks
verity_tree() {
	mkdir -p "$1/d" "$1/many" "$1/frag"
	head -c 3000000 /dev/urandom >"$1/big"
	seq 1 300000 | head -c $((12 * 131072)) >"$1/d/text"
	head -c 3000 /dev/urandom >"$1/frag/r1"
	head -c 3000 /dev/urandom >"$1/frag/r2"
	python3 -c "
import os, random, sys
for i in range(6000):
    p = os.path.join(sys.argv[1], os.urandom(16).hex())
    open(p, 'w').close()
    t = random.randrange(1 << 30, 1 << 31)
    os.utime(p, (t, t))" "$1/many"
}

#!/bin/bash
# t-remote-profile.sh - prefetch profiles (docs/profile.md) over a real
# nginx, requests counted by the fault proxy's log: a mount records the
# ranges a workload read (-o record=); a cold mount replays them
# (-o prefetch=, or URL.profile beside the image) in a few coalesced
# requests and reads the same bytes as the local image; a profile of another
# image or a malformed one is one warning line and changes nothing; quash
# profile record, profile paths and pack --order lay the workload's files out first, so
# that the prefetch of the repacked image takes at most two requests.
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/remote.sh"
. "$(dirname "$0")/lib/mount.sh"

W=$WORK/remote-profile
rm -rf "$W" && mkdir -p "$W/www" "$W/m" "$W/local"
trap 'unmount_all; remote_cleanup' EXIT

make_test_image "$W"
cp "$W/image.sqfs" "$W/www/a.sqfs"
HTTP=$(free_port) PROXY=$(free_port)
start_nginx "$W/nginx" "$W/www" "$HTTP" || not_ok "nginx starts" "$(tail -3 "$W/nginx/error.log")"
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" pass --log "$W/requests.log"
BASE=http://127.0.0.1:$PROXY
CS=chunk_size=64K       # small chunks: a miss per 64 KiB, so that coalescing shows

# The workload: a few files spread over the image, two small ones (in a
# fragment), a large one, and a listing of everything.
workload() {   # workload DIR OUT
	(cd "$1" && cat file2 file5 file8 file11 sub/s1.txt sub/s50.txt sub/deeper/big | sha256sum &&
		ls -lR --time-style=+%s . | sha256sum) >"$2" 2>&1
}
requests() { wc -l <"$W/requests.log"; }
# fg_mount MP OPTS IMAGE: a foreground mount in the background ($FG_PID), stderr to $W/fg.err
fg_mount() {
	"$QUASH_ASAN" mount -f -o "$2" "$3" "$1" 2>"$W/fg.err" &
	FG_PID=$!
	wait_mounted "$1"
}
fg_umount() {   # until the daemon has exited (and written its profile)
	fusermount3 -u "$1"
	wait "$FG_PID"
}
# settled: wait until the proxy has seen no new request for 0.3 s (10 s at most)
settled() {
	local last=-1 n i
	for i in $(seq 33); do
		n=$(requests)
		[ "$n" = "$last" ] && return 0
		last=$n
		sleep 0.3
	done
}

# The oracle: the kernel's own mount of the local image.  Its workload
# output is two lines, the first the sha256 of the source files themselves.
kmount "$W/image.sqfs" "$W/local"
workload "$W/local" "$W/want"
srcsum() { (cd "$W/tree" && cat file2 file5 file8 file11 sub/s1.txt sub/s50.txt sub/deeper/big | sha256sum); }
check "the workload on the kernel's mount: the source files' bytes and a listing" \
	bash -c "[ \$(wc -l <'$W/want') = 2 ] && [ \"\$(head -1 '$W/want')\" = '$(srcsum)' ]"

# ---- record --------------------------------------------------------------------
: >"$W/requests.log"
if fg_mount "$W/m" "record=$W/a.profile,$CS,noprefetch" "$BASE/a.sqfs"; then
	workload "$W/m" "$W/got"
	fg_umount "$W/m"; st=$?
	cold=$(requests)
	check "recording mount: same bytes as the local image" cmp -s "$W/want" "$W/got"
	check "recording mount exits cleanly" clean_exit $st "$W/fg.err"
else
	not_ok "recording mount" "$(cat "$W/fg.err")"
fi
nranges=$(($(wc -l <"$W/a.profile") - 2))
check "the profile: a header, the image line and $nranges ranges" \
	bash -c "head -1 '$W/a.profile' | grep -qx 'quash-profile 1' && sed -n 2p '$W/a.profile' | grep -q '^image size=' && [ $nranges -ge 5 ]"
check "the profile's ranges are OFFSET LENGTH lines" \
	bash -c "tail -n +3 '$W/a.profile' | grep -qvE '^[0-9]+ [1-9][0-9]*\$' && exit 1 || exit 0"

# ---- replay, cold cache ----------------------------------------------------------
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/a.profile,$CS" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
settled
prefetch_a=$(requests)
workload "$W/m" "$W/got"
settled
warm=$(requests)
fusermount3 -u -z "$W/m"
check "replaying mount: same bytes as the local image" cmp -s "$W/want" "$W/got"
check "replaying mount: nothing said" test ! -s "$W/err"
if [ "$warm" -ge 2 ] && [ "$warm" -le $((cold / 3)) ] && [ "$warm" -le 16 ]; then
	ok "cold mount with the profile: $warm requests (open and prefetch $prefetch_a), without: $cold"
else
	not_ok "cold mount with the profile takes few requests" "$warm with, $cold without: $(cat "$W/requests.log")"
fi

# With the default 4 MiB chunks the replay fetches the profile's bytes, not
# the chunks around them: at most the open request (64 KiB with a profile),
# the pinned metadata (the image's last chunk), the profile's ranges and the
# gaps merged between them.
bytes() { awk '{ n += $4 } END { print n + 0 }' "$W/requests.log"; }
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/a.profile" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
workload "$W/m" "$W/got"
settled
fetched=$(bytes)
fusermount3 -u -z "$W/m"
size=$(stat -c %s "$W/www/a.sqfs")
pbytes=$(awk 'NR > 2 { n += $2 } END { print n }' "$W/a.profile")
bound=$((pbytes + 65536 + size % 4194304 + nranges * 65536))
check "4 MiB chunks, replayed: same bytes as the local image" cmp -s "$W/want" "$W/got"
check "4 MiB chunks, replayed: $fetched bytes fetched for a profile of $pbytes (at least that; bound $bound; the image: $size)" \
	test "$fetched" -ge "$pbytes" -a "$fetched" -le "$bound" -a "$fetched" -lt "$size"

# A cache directory keeps what a replay fetched, range by range: the next
# mount with the same profile and directory asks the server only for the
# open request (a node starting the same job again, its own server down or
# not).  A range damaged in the directory is a miss: fetched again, never
# served.
replay_cached() {   # replay_cached OUT: mount with the profile and $W/pc, run the workload, unmount
	: >"$W/requests.log"
	fg_mount "$W/m" "prefetch=$W/a.profile,cache_dir=$W/pc" "$BASE/a.sqfs"
	workload "$W/m" "$1"
	fg_umount "$W/m"        # the daemon gone: its replay's ranges are all written
}
# kept_ranges: the cache files holding a range (their key's second line is "range")
kept_ranges() {
	python3 - "$W"/pc/c-* <<'PY'
import struct, sys
for f in sys.argv[1:]:
    head = open(f, "rb").read(8192)
    n = struct.unpack_from("<I", head, 8)[0]
    if b"\nrange\n" in head[32:32 + n]:
        print(f)
PY
}
replay_cached "$W/got"
first_bytes=$(bytes)
ranges_kept=$(kept_ranges | wc -l)
check "cache_dir, first replay: same bytes as the local image" cmp -s "$W/want" "$W/got"
check "cache_dir, first replay: the ranges fetched are kept ($ranges_kept files)" test "$ranges_kept" -gt 0
replay_cached "$W/got2"
again=$(requests) again_bytes=$(bytes)
check "cache_dir, second replay: same bytes as the local image" cmp -s "$W/want" "$W/got2"
check "cache_dir, second replay: $again request of $again_bytes bytes, the open's (the first: $first_bytes)" \
	test "$again" = 1 -a "$again_bytes" -ge 1 -a "$again_bytes" -le 65536 -a "$first_bytes" -gt 65536
check "cache_dir, second replay: nothing said" test ! -s "$W/fg.err"
# The server gone (its port closed): the node starts from its directory,
# the open request's bytes included, and says so in one line.
MAIN_PROXY=$PROXY_PID
stop_pid "$MAIN_PROXY"
replay_cached "$W/got-down"
check "cache_dir, the server unreachable: same bytes as the local image" cmp -s "$W/want" "$W/got-down"
check "cache_dir, the server unreachable: one line says the cache stands in" \
	test "$(grep -c "server unreachable.*serving the version recorded in cache directory" "$W/fg.err")" = 1 \
	-a "$(wc -l <"$W/fg.err")" = 1
start_faultproxy "$PROXY" "http://127.0.0.1:$HTTP" pass --log "$W/requests.log"
# Damage the last byte of one kept range the replay needs. Not the
# open's first 64 KiB (offset 0): the open fetches those anyway, so damage
# there costs no second request. The cache's names hash a key holding the
# server's ETag, so which file sorts first changes from run to run; and the
# byte is flipped, not overwritten, so it always changes.
python3 - "$W"/pc/c-* <<'PY'
import struct, sys
for f in sys.argv[1:]:
    head = open(f, "rb").read(8192)
    n = struct.unpack_from("<I", head, 8)[0]
    key = head[32:32 + n].split(b"\n")
    if len(key) > 2 and key[1] == b"range" and key[2] != b"0":
        with open(f, "r+b") as fp:
            fp.seek(-1, 2)
            b = fp.read(1)[0]
            fp.seek(-1, 2)
            fp.write(bytes([b ^ 0xff]))
        break
else:
    sys.exit("no kept range past the open's")
PY
replay_cached "$W/got3"
check "cache_dir, a kept range damaged: same bytes as the local image" cmp -s "$W/want" "$W/got3"
check "cache_dir, a kept range damaged: fetched again ($(requests) requests)" test "$(requests)" -ge 2

# Streamed: one range of 5 MB (sub/deeper/big, random bytes) takes 2.5 s
# over a 16 Mbit/s link; a read of its first bytes goes on as they arrive,
# while that request is still under way (the proxy logs a request when it
# has sent all of it).
: >"$W/requests.log"
if fg_mount "$W/m" "record=$W/big.profile,$CS,noprefetch" "$BASE/a.sqfs"; then
	cat "$W/m/sub/deeper/big" >/dev/null
	fg_umount "$W/m"
fi
SLOW=$(free_port)
start_faultproxy "$SLOW" "http://127.0.0.1:$HTTP" pass --log "$W/slow.log" --rate-mbit 16
: >"$W/slow.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/big.profile,$CS" "http://127.0.0.1:$SLOW/a.sqfs" "$W/m" 2>"$W/err"
sleep 0.5
head -c 65536 "$W/m/sub/deeper/big" >"$W/got.head"
big_done=$(awk '$4 >= 4000000' "$W/slow.log" | wc -l)
cmp -s "$W/m/sub/deeper/big" "$W/tree/sub/deeper/big"; st=$?
fusermount3 -u -z "$W/m"
check "streamed: the first 64 KiB of a 5 MB range being fetched, read before the range is in" \
	bash -c "cmp -s '$W/got.head' <(head -c 65536 '$W/tree/sub/deeper/big') && [ $big_done = 0 ]"
check "streamed: the whole file right, in one request for the range" \
	bash -c "[ $st = 0 ] && [ \$(awk '\$4 >= 4000000' '$W/slow.log' | wc -l) = 1 ]"

# A streamed range cut half way is asked again from where it broke off, not
# from its start: the bytes already announced to readers are never rewritten.
TRUNC=$(free_port)
# (the second and third requests are cut: the range's and the metadata pin's, in either order)
start_faultproxy "$TRUNC" "http://127.0.0.1:$HTTP" truncate,truncate --skip 1 --log "$W/trunc.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/big.profile,$CS" "http://127.0.0.1:$TRUNC/a.sqfs" "$W/m" 2>"$W/err"
cmp -s "$W/m/sub/deeper/big" "$W/tree/sub/deeper/big"; st=$?
fusermount3 -u -z "$W/m"
first=$(awk '$3 == "truncate" && $4 > 1000000 { split($2, r, "[=-]"); print r[2] + 0, r[3] + 0 }' "$W/trunc.log")
resumed=$(echo "$first" | awk '{ printf "bytes=%d-%d", $1 + ($2 - $1 + 1) / 2, $2 }')
check "streamed, cut half way: the file right; the rest asked from where it broke off ($resumed)" \
	bash -c "[ $st = 0 ] && [ -n '$first' ] && grep -q '^GET $resumed pass' '$W/trunc.log'"

# A run read out of its bytes' order is fetched in 256 KiB requests, each in
# the turn of the earliest touch it holds: the same 5 MB file's profile, its
# ranges given again as 64 KiB read from the end backwards.  The first 12
# requests out (PROFILE_REPLAY_THREADS) are the file's last 3 MiB, so the
# first to come back is one of them.
# (the file: the ranges that adjoin its largest one)
read -r big_off big_end < <(awk 'NR > 2 { print $1, $1 + $2 }' "$W/big.profile" | sort -n | awk '
	{ off[NR] = $1; end[NR] = $2; if ($2 - $1 > end[big] - off[big]) big = NR }
	END { lo = big; hi = big
	      while (lo > 1 && end[lo - 1] == off[lo]) lo--
	      while (hi < NR && off[hi + 1] == end[hi]) hi++
	      print off[lo], end[hi] }')
{
	head -2 "$W/big.profile"
	awk -v lo="$big_off" -v hi="$big_end" 'NR > 2 && ($1 + $2 <= lo || $1 >= hi)' "$W/big.profile"
	for ((o = big_end - 65536; o >= big_off; o -= 65536)); do echo "$o 65536"; done
	[ $(((big_end - big_off) % 65536)) = 0 ] || echo "$big_off $(((big_end - big_off) % 65536))"
} >"$W/backwards.profile"
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/backwards.profile,$CS" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
settled
cmp -s "$W/m/sub/deeper/big" "$W/tree/sub/deeper/big"; st=$?
fusermount3 -u -z "$W/m"
awk -v lo="$big_off" -v hi="$big_end" '{ split($2, r, "[=-]") } r[2] >= lo && r[2] < hi { print r[2], r[3] - r[2] + 1 }' \
	"$W/requests.log" >"$W/backwards.got"
pieces=$(wc -l <"$W/backwards.got")
largest=$(sort -k2n "$W/backwards.got" | tail -1 | cut -d' ' -f2)
first_off=$(head -1 "$W/backwards.got" | cut -d' ' -f1)
check "read backwards: the file right, in $pieces requests of at most 256 KiB ($largest), the end's first" \
	test "$st" = 0 -a "$pieces" -ge 19 -a "${largest:-0}" -le 262144 -a "${first_off:-0}" -ge $((big_end - 12 * 262144))
check "read backwards: nothing said" test ! -s "$W/err"

# URL.profile beside the image, with -o prefetch: fetched once and replayed.
# Without the option it is never asked for: a server logs each absent one.
cp "$W/a.profile" "$W/www/a.sqfs.profile"
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "$CS" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
fusermount3 -u -z "$W/m"
check "without -o prefetch a remote mount asks for no URL.profile ($(grep -c 'profile' "$W/requests.log") requests for it)" \
	bash -c "[ -s '$W/requests.log' ] && ! grep -q 'a.sqfs.profile' '$W/requests.log'"
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "$CS,prefetch" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
settled
workload "$W/m" "$W/got"
settled
beside=$(requests)
fusermount3 -u -z "$W/m"
check "URL.profile: same bytes" cmp -s "$W/want" "$W/got"
check "URL.profile: replayed ($beside requests, its own fetch included; $warm with -o prefetch)" \
	test "$beside" -ge 3 -a "$beside" -le $((warm + 2))
echo "not a profile" >"$W/www/a.sqfs.profile"
qmount "$W/m" "$QUASH_ASAN" mount -o "$CS,prefetch" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
workload "$W/m" "$W/got"
fusermount3 -u -z "$W/m"
check "a malformed URL.profile: one warning line naming it, the mount works" \
	bash -c "[ \$(wc -l <'$W/err') = 1 ] && grep -q 'ignored: $BASE/a.sqfs.profile: not a quash profile' '$W/err' && cmp -s '$W/want' '$W/got'"
rm "$W/www/a.sqfs.profile"
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "$CS,prefetch" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
fusermount3 -u -z "$W/m"
check "a missing URL.profile is silent" test ! -s "$W/err"

# ---- a stale profile, a malformed one ------------------------------------------------
echo "a new file" >"$W/tree/new"
mksquashfs "$W/tree" "$W/www/a.sqfs.new" -noappend -quiet -no-progress >/dev/null
mv "$W/www/a.sqfs.new" "$W/www/a.sqfs"
unmount_all
cp "$W/www/a.sqfs" "$W/image2.sqfs"
kmount "$W/image2.sqfs" "$W/local"
workload "$W/local" "$W/want2"
qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/a.profile,$CS" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
workload "$W/m" "$W/got"
cp "$W/m/new" "$W/got.new" 2>/dev/null || rm -f "$W/got.new"
fusermount3 -u -z "$W/m"
check "stale profile: one warning line" \
	bash -c "[ \$(wc -l <'$W/err') = 1 ] && grep -q 'recorded against another image.*ignored' '$W/err'"
check "stale profile: the new image reads correctly" cmp -s "$W/want2" "$W/got"
check "stale profile: the new file is there, in the mount under test" cmp -s "$W/tree/new" "$W/got.new"

printf 'quash-profile 1\nimage size=1\n12 apples\n' >"$W/bad.profile"
head -c 100000 /dev/urandom >"$W/random.profile"
mkfifo "$W/fifo.profile"
for bad in bad random missing fifo; do
	qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/$bad.profile,$CS" "$BASE/a.sqfs" "$W/m" 2>"$W/err"
	workload "$W/m" "$W/got"
	fusermount3 -u -z "$W/m"
	check "$bad profile: one warning line, the mount works" \
		bash -c "[ \$(wc -l <'$W/err') = 1 ] && grep -q 'prefetch profile ignored' '$W/err' && cmp -s '$W/want2' '$W/got'"
done
check_fails "quash profile paths: a malformed profile is an error naming its line" 1 \
	"^quash: profile: $W/bad.profile:3: expected 'OFFSET LENGTH', found '12 apples'" \
	"$QUASH_ASAN" profile paths "$W/bad.profile" "$W/image.sqfs"
check_fails "quash profile paths: another image's profile is an error" 1 \
	"^quash: profile: $W/a.profile was recorded against another image than $W/image2.sqfs" \
	"$QUASH_ASAN" profile paths "$W/a.profile" "$W/image2.sqfs"
"$QUASH_ASAN" profile paths "$W/bad.profile" "$W/image.sqfs" 2>"$W/err"
check "quash profile paths: one line naming the line" \
	bash -c "[ \$(wc -l <'$W/err') = 1 ] && grep -q 'bad.profile:3' '$W/err'"
# Beside a local image: IMAGE.profile is used when there, silent when not, warned about when stale.
qmount "$W/m" "$QUASH_ASAN" mount "$W/image2.sqfs" "$W/m" 2>"$W/err"
fusermount3 -u -z "$W/m"
check "local image, no IMAGE.profile: nothing said" test ! -s "$W/err"
cp "$W/a.profile" "$W/image2.sqfs.profile"
qmount "$W/m" "$QUASH_ASAN" mount "$W/image2.sqfs" "$W/m" 2>"$W/err"
workload "$W/m" "$W/got"
fusermount3 -u -z "$W/m"
check "local image, a stale IMAGE.profile: one warning line naming it, the mount works" \
	bash -c "[ \$(wc -l <'$W/err') = 1 ] && grep -q 'image2.sqfs.profile was recorded against another image' '$W/err' && cmp -s '$W/want2' '$W/got'"
rm "$W/image2.sqfs.profile"
check_fails "-o record to an unwritable place fails the mount, naming the file and why" 1 \
	"^quash: mount: $W/image.sqfs: -o record=/nonexistent/dir/p: /nonexistent/dir/p[^:]*: No such file or directory\$" \
	"$QUASH_ASAN" mount -o "record=/nonexistent/dir/p" "$W/image.sqfs" "$W/m"

# ---- profile paths, pack --order -------------------------------------------------------
"$QUASH_ASAN" profile paths "$W/a.profile" "$W/image.sqfs" >"$W/order" 2>"$W/err"
check "quash profile paths lists the workload's files first-touch first" \
	bash -c "[ \"\$(head -4 '$W/order' | sort | tr '\n' ' ')\" = 'file11 file2 file5 file8 ' ] && grep -qx sub/deeper/big '$W/order' && grep -qx sub/s50.txt '$W/order'"
"$QUASH" pack -q --no-progress --order "$W/order" "$W/tree" "$W/www/b.sqfs" 2>"$W/err"
check "pack --order builds the image" test -s "$W/www/b.sqfs"
unmount_all
kmount "$W/www/b.sqfs" "$W/local"
workload "$W/local" "$W/want3"
check "pack --order: the same files" cmp -s "$W/want2" "$W/want3"

: >"$W/requests.log"
# Recorded again on the new image, by quash profile record this time.
"$QUASH_ASAN" profile record "$BASE/b.sqfs" -o "record=$W/b.profile,$CS,noprefetch" -- \
	bash -c "cd \"\$QUASH_MOUNT\" && (cat file2 file5 file8 file11 sub/s1.txt sub/s50.txt sub/deeper/big | sha256sum && ls -lR --time-style=+%s . | sha256sum) >'$W/got' 2>&1; exit 7"
st=$?
check "quash profile record: COMMAND's exit status, its bytes, nothing left mounted" \
	bash -c "[ $st = 7 ] && cmp -s '$W/want3' '$W/got' && ! grep -q quash-profile- /proc/mounts"
check "quash profile record: the profile is written" test "$(wc -l <"$W/b.profile")" -gt 3
# The prefetch alone: requests of a mount with the profile less those of one without.
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "$CS,noprefetch" "$BASE/b.sqfs" "$W/m"
settled; base=$(requests); fusermount3 -u -z "$W/m"
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "prefetch=$W/b.profile,$CS" "$BASE/b.sqfs" "$W/m"
settled; with=$(requests)
workload "$W/m" "$W/got"
fusermount3 -u -z "$W/m"
check "pack --order, replayed: same bytes" cmp -s "$W/want3" "$W/got"
: >"$W/requests.log"
qmount "$W/m" "$QUASH_ASAN" mount -o "$CS,noprefetch" "$BASE/a.sqfs" "$W/m"
settled; base_a=$(requests); fusermount3 -u -z "$W/m"
if [ $((with - base)) -ge 1 ] && [ $((with - base)) -le 2 ]; then
	ok "pack --order: the prefetch takes $((with - base)) requests (before the repack: $((prefetch_a - base_a)))"
else
	not_ok "pack --order: the prefetch takes at most 2 requests" "$with - $base: $(cat "$W/requests.log")"
fi

# ---- profile paths at scale ------------------------------------------------------
# A million ranges against 30,000 small files, most of them in one 1 MiB
# fragment block that nearly every range falls in, and one file whose
# blocks only the last range reads.  Each extent is visited once in all,
# not once for every range over it, so this takes well under the bound.
# The oracle reads the extents from the image itself (quash stat, the
# fragment table) and applies the rule in Python: for each range, the files
# of the extents it overlaps, in their order, each the first time only; a
# file with full blocks that only its fragment block named, at the end.
P=$W/paths
rm -rf "$P" && mkdir -p "$P"
# The tree as a tar on a pipe: 30,000 files are slow to create on a busy disk.
python3 - "$P/files.json" <<'PY' | "$QUASH" pack -q --no-progress -c gzip -b 1M - "$P/image.sqfs" 2>"$P/err" &&
import io, json, os, random, sys, tarfile
rnd, files = random.Random(36), []
tar = tarfile.open(fileobj=sys.stdout.buffer, mode="w|")
def add(name, data=None, link=None):
    ti = tarfile.TarInfo(name)
    if link is None:
        ti.size = len(data)
        files.append(name)
    else:
        ti.type, ti.linkname = tarfile.SYMTYPE, link
    tar.addfile(ti, None if data is None else io.BytesIO(data))
for d in range(30):
    for f in range(1000):
        add(f"d{d:02d}/f{f:04d}", f"d{d:02d}/f{f:04d} {'x' * rnd.randrange(10)}\n".encode())
for b in range(10):     # a full block and a tail each; two of them twice (the same blocks)
    data = os.urandom(rnd.randrange(1100000, 1300000))
    for name in ("b", "c") if b % 5 == 0 else ("b",):
        add(f"big/{name}{b:02d}", data)
add("big/whole", os.urandom(2 << 20))      # full blocks only
add("empty", b"")
add("odd\nname", b"a name with a newline is not listed\n")
add("link", link="big/b00")
tar.close()
json.dump(files, open(sys.argv[1], "w"))
PY
	"$QUASH" profile record "$P/image.sqfs" -o "record=$P/recorded.profile" -- true 2>>"$P/err"
check "profile paths at scale: the image packs, a profile of it records" test -s "$P/recorded.profile"
python3 - "$QUASH" "$P/image.sqfs" "$P/files.json" "$P/recorded.profile" "$P/big.profile" "$P/want" <<'PY'
import bisect, json, os, random, struct, subprocess, sys, zlib

quash, image, listed, recorded, profile, want = sys.argv[1:7]
PROBE = 128         # the bytes every open reads name no file

# The regular files in the image's order: each directory's names sorted as bytes.
files = sorted((os.fsencode(f) for f in json.load(open(listed))), key=lambda f: f.split(b"/"))
stats = json.loads(subprocess.check_output([quash, "stat", "--json", image] + [os.fsdecode(f) for f in files]))

img = open(image, "rb").read()
magic, _, _, block_size, nfrags, comp = struct.unpack_from("<IIIIIH", img, 0)
assert magic == 0x73717368 and comp == 1          # gzip: zlib reads its metadata
frag_table = struct.unpack_from("<Q", img, 80)[0]
entries = b""
for i in range((nfrags + 511) // 512):
    ptr = struct.unpack_from("<Q", img, frag_table + 8 * i)[0]
    head = struct.unpack_from("<H", img, ptr)[0]
    raw = img[ptr + 2:ptr + 2 + (head & 0x7fff)]
    entries += raw if head & 0x8000 else zlib.decompress(raw)
frags = [struct.unpack_from("<QI", entries, 16 * i) for i in range(nfrags)]

# Each file's extents: its full blocks (random bytes, stored whole) and its fragment block.
extents = {}        # (start, end): the indexes of its files, in the image's order
paths, runs, keep, blocks = [], set(), None, set()
for st, path in zip(stats, files):
    if b"\n" in path or st["size"] == 0:
        continue
    k = len(paths)
    paths.append(path)
    if st["block_count"]:
        run = (st["blocks_start"], st["blocks_start"] + st["block_count"] * block_size)
        extents.setdefault(run, []).append(k)
        runs.add(run)
        blocks.add(k)
        if st["fragment"] is None:
            keep = run
    if st["fragment"] is not None:
        start, size = frags[st["fragment"]]
        extents.setdefault((start, start + (size & 0xffffff)), []).append(k)
iv = sorted(extents)
assert all(a[1] <= b[0] for a, b in zip(iv, iv[1:])), "extents overlap"
starts, ends = [a for a, _ in iv], [b for _, b in iv]

# The ranges: a few at the edges, then short ones, most in a fragment block
# (chosen by its files), a few long ones; never over the file of full
# blocks only, which the last range reads.
rnd = random.Random(11).random
size = len(img)
byfile = [x for x in iv if x not in runs for _ in extents[x]]
ranges = [(0, 100), (0, PROBE + 1), (size - 8, 8), (size, 4096)]
while len(ranges) < 999_999:
    if rnd() < 0.97:
        s, e = byfile[int(rnd() * len(byfile))]
        off = s + int(rnd() * (e - s))
    else:
        off = PROBE + int(rnd() * (size - PROBE))
    n = 1 + int(rnd() * (2000 if rnd() < 0.999 else 300000))
    if off < keep[1] and off + n > keep[0]:
        continue
    ranges.append((off, n))
ranges.append((keep[0] + 5, 1))
with open(profile, "w") as f:
    f.write("quash-profile 1\n" + open(recorded).read().splitlines()[1] + "\n")
    f.write("".join(f"{o} {n}\n" for o, n in ranges))

done, spent, later = [False] * len(paths), [False] * len(iv), []
with open(want, "wb") as f:
    for off, n in ranges:
        end, off = off + n, max(off, PROBE)
        i = bisect.bisect_right(ends, off)
        while i < len(iv) and starts[i] < end:
            if not spent[i]:
                spent[i] = True
                for k in extents[iv[i]]:
                    if done[k]:
                        continue
                    if iv[i] in runs or k not in blocks:
                        f.write(paths[k] + b"\n")
                        done[k] = True
                    elif k not in later:
                        later.append(k)
            i += 1
    f.write(b"".join(paths[k] + b"\n" for k in later if not done[k]))
print(f"# {len(ranges)} ranges, {len(paths)} files, {sum(map(len, extents.values()))} extents at {len(iv)} places")
PY
check "profile paths at scale: the oracle lists the file of full blocks last" \
	test "$(tail -1 "$P/want")" = big/whole
t0=$EPOCHREALTIME
timeout 10 "$QUASH" profile paths "$P/big.profile" "$P/image.sqfs" >"$P/got" 2>"$P/err"
st=$? took=$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $t0 }")
check "profile paths, 1,000,000 ranges over $(wc -l <"$P/want") files: done in ${took}s (bound 10 s)" test $st = 0
check "profile paths at scale: the files the oracle lists, in its order" cmp -s "$P/want" "$P/got"
timeout 20 "$QUASH_ASAN" profile paths "$P/big.profile" "$P/image.sqfs" >"$P/got-asan" 2>"$P/err"
st=$?
check "profile paths at scale, sanitized build: the same list, a clean exit" \
	bash -c "[ $st = 0 ] && cmp -s '$P/want' '$P/got-asan' && ! [ -s '$P/err' ]"

# An image without file data: no extents at all.
mkdir -p "$P/empty/d" && "$QUASH" pack -q --no-progress "$P/empty" "$P/empty.sqfs" &&
	"$QUASH" profile record "$P/empty.sqfs" -o "record=$P/empty.profile" -- true 2>"$P/err"
echo "0 4096" >>"$P/empty.profile"
"$QUASH_ASAN" profile paths "$P/empty.profile" "$P/empty.sqfs" >"$P/got" 2>"$P/err"; st=$?
check "profile paths, an image without file data: nothing listed, a clean exit" \
	bash -c "[ $st = 0 ] && ! [ -s '$P/got' ] && ! [ -s '$P/err' ]"

# ---- decompressed ahead (lib/format/warm.c) ---------------------------------------
# A zstd image of compressible files: the replay's blocks are decompressed
# into the cache before the workload reads them, counted by the daemon's
# statistics line at exit (QUASH_FILL_STATS).
mkdir -p "$W/z/tree/d"
for i in $(seq 12); do seq $((i * 1000)) $((i * 1000 + 70000)) >"$W/z/tree/f$i"; done
for i in $(seq 40); do echo "small file $i" >"$W/z/tree/d/s$i"; done
mksquashfs "$W/z/tree" "$W/www/z.sqfs" -comp zstd -noappend -quiet -no-progress >/dev/null
zload() { (cd "$1" && cat f3 f7 f11 d/s5 d/s33 | sha256sum) >"$2" 2>&1; }
(cd "$W/z/tree" && cat f3 f7 f11 d/s5 d/s33 | sha256sum) >"$W/z/want"
ahead() { sed -n 's/.* \([0-9]*\) blocks decompressed ahead.*/\1/p' "$W/fg.err"; }
QUASH_FILL_STATS=1 fg_mount "$W/m" "record=$W/z.profile,$CS,noprefetch" "$BASE/z.sqfs" &&
	{ zload "$W/m" "$W/z/got"; fg_umount "$W/m"; }
check "zstd image, recorded: same bytes, nothing decompressed ahead ($(ahead))" \
	bash -c "cmp -s '$W/z/want' '$W/z/got' && [ '$(ahead)' = 0 ]"
QUASH_FILL_STATS=1 fg_mount "$W/m" "prefetch=$W/z.profile,$CS" "$BASE/z.sqfs" && {
	settled; sleep 0.5      # the replay over, the warm thread through it
	zload "$W/m" "$W/z/got"; fg_umount "$W/m"; st=$?; }
check "zstd image, replayed: same bytes, $(ahead) blocks decompressed before the reads, a clean exit" \
	bash -c "cmp -s '$W/z/want' '$W/z/got' && [ '$(ahead)' -ge 6 ] && [ $st = 0 ] && ! grep -q Sanitizer '$W/fg.err'"
# A hostile profile: every range a byte into its block, so no walk finds a
# block boundary; or ranges over the whole image from offset 1.  The reads
# stay right.
awk 'NR <= 2 { print; next } { print $1 + 1, $2 }' "$W/z.profile" >"$W/zshift.profile"
QUASH_FILL_STATS=1 fg_mount "$W/m" "prefetch=$W/zshift.profile,$CS" "$BASE/z.sqfs" && {
	settled; sleep 0.5; zload "$W/m" "$W/z/got"; fg_umount "$W/m"; st=$?; }
check "ranges starting inside blocks: same bytes ($(ahead) decompressed ahead), a clean exit" \
	bash -c "cmp -s '$W/z/want' '$W/z/got' && [ $st = 0 ] && ! grep -q Sanitizer '$W/fg.err'"
{ head -2 "$W/z.profile"; echo "1 $(($(stat -c %s "$W/www/z.sqfs") - 1))"; } >"$W/zall.profile"
QUASH_FILL_STATS=1 fg_mount "$W/m" "prefetch=$W/zall.profile,$CS" "$BASE/z.sqfs" && {
	settled; sleep 0.5; zload "$W/m" "$W/z/got"; fg_umount "$W/m"; st=$?; }
check "one range over the whole image from offset 1: same bytes, a clean exit" \
	bash -c "cmp -s '$W/z/want' '$W/z/got' && [ $st = 0 ] && ! grep -q Sanitizer '$W/fg.err'"
# Unmounted while the replay (at 16 Mbit/s) and the warm thread are under way.
SECONDS=0
QUASH_FILL_STATS=1 fg_mount "$W/m" "prefetch=$W/z.profile,$CS" "http://127.0.0.1:$SLOW/z.sqfs" &&
	{ fg_umount "$W/m"; st=$?; }
check "unmounted during the replay: a clean exit in ${SECONDS}s" \
	bash -c "[ $st = 0 ] && [ $SECONDS -le 10 ] && ! grep -q Sanitizer '$W/fg.err'"

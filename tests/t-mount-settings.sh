#!/bin/bash
# t-mount-settings.sh - the mount settings quash-mount(1) documents, each
# exercised and read back from the kernel (/proc/mounts, what a program is
# allowed) rather than from quash's own word:
#
#   - nosuid,nodev by default (as fusermount3 does), suid,dev on request,
#     noexec: the flags in /proc/mounts, and noexec refusing a program;
#   - allow_root: an ordinary user's mount that root may read and a third
#     user may neither read nor list, even a file whose entry root's read
#     left in the kernel's cache; without it root may not read either;
#   - -d: every FUSE request on standard error, the mount serving as usual;
#   - SIGTERM, SIGINT and SIGHUP: the mount detached lazily, a file held
#     open still read to the end, the daemon gone with status 0 once it is
#     closed;
#   - refresh=N on a local catalog: an image changed through a hard link
#     outside the catalog (which inotify on the catalog cannot see) shows
#     its new contents within N seconds, and not without the setting.
# The mksquashfs here is Debian's (tests/run.sh puts it first on PATH).
. "$(dirname "$0")/lib/tap.sh"
. "$(dirname "$0")/lib/mount.sh"

M=$WORK/t-mount-settings
FUSE_MODE=$(stat -c %a /dev/fuse)
cp /etc/fuse.conf "$WORK/fuse.conf.saved" 2>/dev/null
restore() {
	unmount_all
	chmod "$FUSE_MODE" /dev/fuse
	if [ -e "$WORK/fuse.conf.saved" ]; then cp "$WORK/fuse.conf.saved" /etc/fuse.conf; else rm -f /etc/fuse.conf; fi
}
trap restore EXIT
rm -rf "$M" && mkdir -p "$M/src/bin" "$M/m" "$M/nm"
chmod 755 "$M" "$M/m" && chown nobody "$M/nm"
printf '#!/bin/sh\necho ran from the image\n' >"$M/src/bin/hello"
chmod 755 "$M/src/bin/hello"
head -c 2000000 /dev/urandom >"$M/src/data"
mksquashfs "$M/src" "$M/img.sqfs" -noappend -quiet -no-progress >/dev/null
chmod 644 "$M/img.sqfs"

flags() {   # flags DIR: the mount's options as /proc/mounts has them, or nothing
	awk -v d="$1" '$2 == d { print $4 }' /proc/mounts
}
has_flag() {   # has_flag DIR FLAG
	flags "$1" | tr , '\n' | grep -qx "$2"
}

# ---- nosuid, nodev, noexec ----------------------------------------------------
qmount "$M/m" "$QUASH" mount "$M/img.sqfs" "$M/m"
f=$(flags "$M/m")
check "by default the kernel holds the mount nosuid,nodev ($f)" bash -c "$(declare -f flags has_flag); has_flag '$M/m' nosuid && has_flag '$M/m' nodev && ! has_flag '$M/m' noexec"
check "by default a program from the image runs" bash -c "[ \"\$('$M/m/bin/hello')\" = 'ran from the image' ]"
fusermount3 -u "$M/m"

qmount "$M/m" "$QUASH" mount -o suid,dev "$M/img.sqfs" "$M/m"
f=$(flags "$M/m")
check "-o suid,dev: neither nosuid nor nodev ($f)" bash -c "$(declare -f flags has_flag); has_flag '$M/m' ro && ! has_flag '$M/m' nosuid && ! has_flag '$M/m' nodev"
fusermount3 -u "$M/m"

qmount "$M/m" "$QUASH" mount -o noexec "$M/img.sqfs" "$M/m"
f=$(flags "$M/m")
check "-o noexec: in the mount's flags ($f)" bash -c "$(declare -f flags has_flag); has_flag '$M/m' noexec"
"$M/m/bin/hello" >/dev/null 2>"$M/noexec.err"; st=$?
check "-o noexec: a program from the image is refused ($st: $(head -c 100 "$M/noexec.err"))" \
	bash -c "[ $st = 126 ] && grep -q 'Permission denied' '$M/noexec.err'"
fusermount3 -u "$M/m"

# ---- allow_root -----------------------------------------------------------------
# An ordinary user's mount: root may not look in without allow_root, may with
# it; a third user may not in either case.  allow_root needs user_allow_other.
chmod 0666 /dev/fuse
{ cat "$WORK/fuse.conf.saved" 2>/dev/null; echo user_allow_other; } >/etc/fuse.conf
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
as_other=(setpriv --reuid=4242 --regid=4242 --clear-groups)
for opt in "" allow_root; do
	label=${opt:-"no allow_root"}
	if "${as_nobody[@]}" "$QUASH" mount ${opt:+-o $opt} "$M/img.sqfs" "$M/nm" 2>"$M/nobody.err"; then
		QM_MOUNTS+=("f:$M/nm")
		cmp -s "$M/src/data" "$M/nm/data" 2>/dev/null && root=reads || root=refused
		# Root's look at data first: the entry is in the kernel's cache when the other user opens it.
		"${as_other[@]}" cat "$M/nm/data" >/dev/null 2>&1 && other=reads || other=refused
		"${as_other[@]}" ls "$M/nm/bin" >/dev/null 2>&1 && other+=/lists || other+=/refused
		"${as_nobody[@]}" cmp -s "$M/src/data" "$M/nm/data" && owner=reads || owner=refused
		want=refused; [ -n "$opt" ] && want=reads
		check "nobody's mount, $label: nobody reads, root is $want, another user refused (nobody $owner, root $root, other $other)" \
			test "$owner $root $other" = "reads $want refused/refused"
		"${as_nobody[@]}" fusermount3 -u "$M/nm"
	else
		not_ok "nobody's mount, $label" "$(head -c 300 "$M/nobody.err")"
	fi
done
restore; trap restore EXIT

# ---- -d ----------------------------------------------------------------------------
"$QUASH" mount -d "$M/img.sqfs" "$M/m" 2>"$M/debug.err" &
pid=$!
QM_MOUNTS+=("f:$M/m")
wait_mounted "$M/m"
cmp -s "$M/src/data" "$M/m/data"; st=$?
check "-d: the mount serves reads" test $st = 0
check "-d: it stays in the foreground" kill -0 $pid
check "-d: every request on stderr ($(grep -c 'opcode:' "$M/debug.err") lines with an opcode)" \
	bash -c "grep -q 'opcode: LOOKUP' '$M/debug.err' && grep -q 'opcode: READ' '$M/debug.err' && grep -q 'opcode: INIT' '$M/debug.err'"
fusermount3 -u "$M/m"; wait $pid

# ---- signals --------------------------------------------------------------------------
for sig in TERM INT HUP; do
	"$QUASH" mount -f "$M/img.sqfs" "$M/m" 2>"$M/$sig.err" &
	pid=$!
	QM_MOUNTS+=("f:$M/m")
	wait_mounted "$M/m"
	exec 3<"$M/m/data"
	head -c 1000 <&3 >"$M/$sig.head"
	kill -$sig $pid
	wait_unmounted "$M/m"; detached=$?
	alive=$(kill -0 $pid 2>/dev/null && echo alive || echo gone)
	cat <&3 >"$M/$sig.tail"
	exec 3<&-
	for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	kill -0 $pid 2>/dev/null && { status=running; kill -KILL $pid; } || { wait $pid; status=$?; }
	check "SIG$sig: the mount is detached, the daemon serves the open file (detached: $([ $detached = 0 ] && echo yes || echo no), daemon $alive)" \
		test "$detached $alive" = "0 alive"
	check "SIG$sig: the file held open reads to the end" bash -c "cat '$M/$sig.head' '$M/$sig.tail' | cmp -s - '$M/src/data'"
	check "SIG$sig: once it is closed the daemon exits 0 (status $status)" test "$status" = 0
done

# ---- refresh= on a local catalog ----------------------------------------------------
# A write through a hard link outside the catalog reaches the image's inode,
# but no inotify watch of the catalog's directories: only a listing sees it.
mkdir -p "$M/cat" "$M/outside" "$M/v1" "$M/v2" "$M/cm"
echo one >"$M/v1/version"; echo two >"$M/v2/version"; head -c 5000 /dev/urandom >"$M/v2/more"
mksquashfs "$M/v1" "$M/one.sqfs" -noappend -quiet -no-progress >/dev/null
mksquashfs "$M/v2" "$M/two.sqfs" -noappend -quiet -no-progress >/dev/null
for refresh in 2 ""; do
	label=${refresh:+refresh=$refresh}; label=${label:-the default refresh}
	rm -f "$M/cat/a.sqfs" "$M/outside/a.sqfs"
	cp "$M/one.sqfs" "$M/cat/a.sqfs" && ln "$M/cat/a.sqfs" "$M/outside/a.sqfs"
	qmount "$M/cm" "$QUASH" mount --catalog ${refresh:+-o refresh=$refresh} "$M/cat" "$M/cm"
	before=$(cat "$M/cm/a/version" 2>&1)
	cat "$M/two.sqfs" >"$M/outside/a.sqfs"
	after=
	for _ in $(seq 40); do       # 4 s: refresh=2 and a listing at most a second late
		after=$(cat "$M/cm/a/version" 2>&1)
		[ "$after" = two ] && break
		sleep 0.1
	done
	if [ -n "$refresh" ]; then
		check "$label: a change inotify cannot see shows within its period ($before, then $after)" test "$before $after" = "one two"
	else
		check "$label (60 s): the same change is not seen 4 s later ($before, then $after)" test "$before $after" = "one one"
	fi
	fusermount3 -u "$M/cm"
done

# ---- a mount whose daemon died --------------------------------------------------
# kill -9 of both the holder and its server (t-mount-holder: either alone
# is survived) leaves a mount point where every access fails with ENOTCONN:
# quash mount over it detaches it and mounts, quash umount unmounts it; each
# says so in one line.  As root (umount2) and as nobody (fusermount3 -z).
chmod 0666 /dev/fuse
for who in root nobody; do
	as=(); mp=$M/m
	[ $who = nobody ] && as=("${as_nobody[@]}") mp=$M/nm
	"${as[@]}" "$QUASH" mount "$M/img.sqfs" "$mp" && QM_MOUNTS+=("f:$mp")
	pkill -STOP -f "mount $M/img.sqfs $mp\$|mount-server $mp\$"      # neither sees the other go
	pkill -KILL -f "mount $M/img.sqfs $mp\$|mount-server $mp\$"
	for _ in $(seq 50); do stat "$mp" 2>&1 | grep -q 'not connected' && break; sleep 0.1; done
	"${as[@]}" "$QUASH" mount "$M/img.sqfs" "$mp" >/dev/null 2>"$M/dead.err"; st=$?
	check "$who: quash mount over a dead mount detaches it and mounts, one line (exit $st: $(cat "$M/dead.err"))" \
		bash -c "[ $st = 0 ] && [ \"\$(cat '$M/dead.err')\" = 'quash: mount: mount point $mp: the mount there had lost its daemon (Transport endpoint is not connected); detached it' ] &&
			${as[*]} cmp -s '$M/src/data' '$mp/data'"
	pkill -STOP -f "mount $M/img.sqfs $mp\$|mount-server $mp\$"      # neither sees the other go
	pkill -KILL -f "mount $M/img.sqfs $mp\$|mount-server $mp\$"
	for _ in $(seq 50); do stat "$mp" 2>&1 | grep -q 'not connected' && break; sleep 0.1; done
	"${as[@]}" "$QUASH" umount "$mp" >/dev/null 2>"$M/dead.err"; st=$?
	check "$who: quash umount of a dead mount unmounts it, one line (exit $st: $(cat "$M/dead.err"))" \
		bash -c "[ $st = 0 ] && [ \"\$(cat '$M/dead.err')\" = 'quash: umount: $mp: its daemon was gone (Transport endpoint is not connected); unmounted' ] &&
			! grep -q ' $mp ' /proc/mounts"
done
chmod "$FUSE_MODE" /dev/fuse

# ---- no syslog -----------------------------------------------------------------------
# Started from a terminal on a host without /dev/log, a daemonized mount says
# its messages would be lost (not with -o log=, not to a script).
if [ -S /dev/log ]; then want_note=0; else want_note=1; fi
for how in tty "tty log=" script; do
	opts=(); [ "$how" = "tty log=" ] && opts=(-o "log=$M/daemon.log")
	cmd="'$QUASH' mount ${opts[*]} '$M/img.sqfs' '$M/m'"
	if [ "$how" = script ]; then bash -c "$cmd" >"$M/note.out" 2>&1; else script -qec "$cmd" /dev/null >"$M/note.out" 2>&1; fi
	QM_MOUNTS+=("f:$M/m")
	n=$(grep -c 'note: no syslog on this host (/dev/log)' "$M/note.out")
	want=$want_note; [ "$how" != tty ] && want=0
	check "mount from a $how: $n syslog note (want $want; /dev/log $([ -S /dev/log ] && echo is || echo is not) here)" \
		bash -c "[ $n = $want ] && [ \$(wc -l <'$M/note.out') = $n ] && cmp -s '$M/src/data' '$M/m/data'"
	fusermount3 -u "$M/m"
done

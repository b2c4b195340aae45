# workload.sh - sourced by bench/fleet.sh and bench/fleet-node.sh: the fleet
# workload and its reference.  The image's own interpreter (with its
# libpython) imports $PY_IMPORTS, then every file it loaded (the modules'
# sources and bytecode, the interpreter, libpython) is hashed from the mount.
#
#   workload_setup                 writes $W/loaded.py (W: the bench's work dir)
#   workload MNT OUT               the workload on MNT; OUT: "sha256  path" lines,
#                                  OUT.t: when the import ended (date +%s.%N)
#   kernel_warm REF MANIFEST       the median of three runs on REF after one that
#                                  warms it; fails if a run's files differ from MANIFEST

PY_IMPORTS=${PY_IMPORTS:-boto3, json, email.mime.multipart, http.client, asyncio, decimal, argparse, logging, csv, zipfile}

workload_setup() {
	cat >"$W/loaded.py" <<'PY'
import os, sys
root = sys.argv[1]
seen = {os.path.realpath(sys.executable)}
for m in list(sys.modules.values()):
    for f in (getattr(m, "__file__", None), getattr(m, "__cached__", None)):
        if f and os.path.isfile(f):
            seen.add(os.path.realpath(f))
for line in open("/proc/self/maps"):
    p = line.split()[-1]
    if p.startswith(root):
        seen.add(os.path.realpath(p))
for f in sorted(seen):
    if f.startswith(root + "/"):
        print(f[len(root) + 1:])
PY
}

workload() {
	local m=$1 out=$2
	PYTHONDONTWRITEBYTECODE=1 LD_LIBRARY_PATH=$m/lib "$m/bin/python3" -c \
		"import $PY_IMPORTS; import runpy, sys; sys.argv = ['', '$m']; runpy.run_path('$W/loaded.py')" \
		>"$out.list" 2>"$out.err" || return 1
	date +%s.%N >"$out.t"
	(cd "$m" && xargs -d '\n' sha256sum <"$out.list") >"$out" 2>>"$out.err"
}

kernel_warm() {
	local ref=$1 manifest=$2 t0 t1 i times=()
	workload "$ref" "$W/kwarm"
	for i in 1 2 3; do
		t0=$(date +%s.%N); workload "$ref" "$W/kwarm"; t1=$(date +%s.%N)
		cmp -s "$manifest" "$W/kwarm" || return 1
		times+=("$(echo "$t1 - $t0" | bc)")
	done
	printf '%s\n' "${times[@]}" | sort -n | sed -n 2p
}

#!/bin/bash
# bench/plot.sh - bar chart of bench/mount.sh's ratios against the kernel's
# squashfs: one group of bars per test, one bar per mounter, a line at 1.0x.
# Reads the CSV bench/mount.sh writes (test,mounter,ratio,value,unit,better)
# and writes a PNG; gnuplot (Debian's gnuplot-nox) is installed if missing.
#
#   bench/plot.sh [CSV [PNG]]    defaults: bench/results/mount.csv docs/bench-mount.png
#   env: YMAX (3), where the y axis ends
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
CSV=${1:-$top/bench/results/mount.csv}
PNG=${2:-$top/docs/bench-mount.png}
YMAX=${YMAX:-3}

die() { echo "bench/plot.sh: $*" >&2; exit 1; }
[ -s "$CSV" ] || die "$CSV: missing or empty (run bench/mount.sh first)"
if ! command -v gnuplot >/dev/null; then
	[ "$(id -u)" -eq 0 ] || die "gnuplot is missing (apt-get install gnuplot-nox)"
	apt-get install -y -q gnuplot-nox >/dev/null || die "cannot install gnuplot-nox"
fi
mkdir -p "$(dirname "$PNG")"

# gnuplot's histograms want one row per test and one column per mounter;
# the label says which way is better, since ratios of times and of
# throughputs point opposite ways
dat=$(mktemp)
trap 'rm -f "$dat"' EXIT
python3 - "$CSV" >"$dat" <<'PY'
import csv, sys
rows, tests, mounters = {}, [], []
for r in csv.DictReader(open(sys.argv[1])):
    label = r["test"] + (" (↑ better)" if r["better"] == "higher" else " (↓ better)")
    if label not in rows:
        rows[label] = {}
        tests.append(label)
    if r["mounter"] not in mounters:
        mounters.append(r["mounter"])
    rows[label][r["mounter"]] = r["ratio"]
print("test\t" + "\t".join(mounters))
for t in tests:
    print('"' + t + '"\t' + "\t".join(rows[t].get(m, "NaN") for m in mounters))
PY
ncols=$(head -1 "$dat" | awk -F'\t' '{print NF}')

gnuplot <<GP
set terminal pngcairo size 1100,600 font "sans,10"
set output "$PNG"
set datafile separator "\t"
set title "ratio to the kernel squashfs' figure (1.0 = kernel; bars cut at ${YMAX}x)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top left
set grid ytics
# squashfuse_ll runs to 40x on some rows: cut there so that ratios near 1 stay readable
set yrange [0:$YMAX]
set ylabel "x kernel"
set xtics rotate by -25 left noenhanced
set key noenhanced
set rmargin 18
set bmargin 10
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 dt 2 lc rgb "black" front
plot for [c=2:$ncols] "$dat" using c:xtic(1) title columnheader(c)
GP
echo "bench/plot.sh: wrote $PNG"

#!/usr/bin/env python3
"""fleet-plot.py - ASCII plot of bench/fleet.sh's CSV: origin bytes and each
node's median time against N, one line per (tier, the tier with the image
laid out by pack --order, or origin; profile or not).
gnuplot is not needed; the output goes in docs/bench-fleet.txt.

    bench/fleet-plot.py [CSV] > docs/bench-fleet.txt
"""
import csv
import sys

WIDTH = 50


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/fleet.csv"
    names = {"tier": "via the tier", "tier-ordered": "the tier, image laid out", "origin": "origin only"}
    rows = [r for r in csv.DictReader(open(path)) if r["via"] in names]
    series = {}
    for r in rows:
        key = "%s, %s profile" % (names[r["via"]], "with" if r["profile"] == "yes" else "no")
        series.setdefault(key, {}).setdefault(int(r["n"]), []).append(r)
    ns = sorted({int(r["n"]) for r in rows})
    for title, field, scale, unit in (("origin MiB served", "origin_bytes", 2**20, "MiB"),
                                      ("node time to a finished workload, median", "median_s", 1, "s")):
        top = max(float(r[field]) / scale for r in rows if r[field]) or 1
        print("%s (bar: %.0f %s full width)" % (title, top, unit))
        for n in ns:
            for key in sorted(series):
                v = [float(r[field]) / scale for r in series[key].get(n, []) if r[field]]
                if not v:
                    continue
                x = max(v)      # the worse round
                print("  N=%-3d %-38s |%-*s %8.1f %s" % (n, key, WIDTH, "#" * max(1, round(x / top * WIDTH)), x, unit))
            print()


if __name__ == "__main__":
    main()

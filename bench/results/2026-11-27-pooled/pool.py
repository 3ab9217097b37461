#!/usr/bin/env python3
"""pool.py RATIOS GRID... : the simulator table of issue 12 pooled over
several cluster grids run with one protocol.

RATIOS is what ../2026-11-27-plateau/reprice.sh prints: one line per grid
and point, "grid;pattern;bytes;algorithm;measured;predicted;ratio", each
grid's fixed algorithms measured by that grid and priced by the current
nbr_sim with that grid's own calibration. GRID names the grids to pool
(g4 g5 ...; "g4-g13" is a range).

Per point: the measured speedup over naive as the median over the grids
(a point measured that many times, on as many days), likewise the
prediction (each grid's calibration), their ratio, the geometric mean of
the per-grid ratios beside it, and the spread of the measurement (max/min
over the grids). Then each grid alone, for comparison. The rule is the
grid's: a prediction is within 25 % when predicted/measured is 0.75-1.25."""
import collections
import math
import signal
import statistics
import sys

TOLERANCE = 0.25


def grids_named(args):
    out = []
    for a in args:
        if "-" in a:
            lo, hi = (int(x[1:]) for x in a.split("-"))
            out += ["g%d" % i for i in range(lo, hi + 1)]
        else:
            out.append(a)
    return out


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under head
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    wanted = grids_named(sys.argv[2:])
    points = collections.defaultdict(dict)
    for line in open(sys.argv[1]):
        g, pat, b, alg, m, p, _ = line.strip().split(";")
        if g in wanted:
            points[(pat, int(b), alg)][g] = (float(m), float(p))
    present = sorted({g for v in points.values() for g in v}, key=lambda g: int(g[1:]))
    missing = [g for g in wanted if g not in present]
    if missing:
        sys.exit("pool.py: no lines for %s" % " ".join(missing))
    inside = 0
    rows = []
    per_grid = collections.Counter()
    for key in sorted(points):
        v = points[key]
        meas = statistics.median(x[0] for x in v.values())
        pred = statistics.median(x[1] for x in v.values())
        geo = math.exp(statistics.mean(math.log(x[1] / x[0]) for x in v.values()))
        spread = max(x[0] for x in v.values()) / min(x[0] for x in v.values())
        ok = abs(pred / meas - 1) <= TOLERANCE
        inside += ok
        for g, (m, p) in v.items():
            per_grid[g] += abs(p / m - 1) <= TOLERANCE
        rows.append((key, len(v), meas, pred, geo, spread, ok))
    print("pooled over %s: %d of %d points within %d %% (median measured against median predicted)"
          % (" ".join(present), inside, len(rows), 100 * TOLERANCE))
    print("each grid alone: " + "  ".join("%s %d" % (g, per_grid[g]) for g in present)
          + " of %d" % len(rows))
    print()
    print("%-18s %8s %-10s %5s %9s %9s %7s %7s %7s" % (
        "pattern", "bytes", "algorithm", "runs", "measured", "predicted", "error",
        "geomean", "spread"))
    # the points nearest the edge first, then the rest in order
    rows.sort(key=lambda r: -abs(math.log(r[3] / r[2])))
    for key, n, meas, pred, geo, spread, ok in rows:
        print("%-18s %8d %-10s %5d %9.2f %9.2f %+6.0f%% %+6.0f%% %6.2fx%s" % (
            key[0], key[1], key[2], n, meas, pred, 100 * (pred / meas - 1), 100 * (geo - 1),
            spread, "" if ok else "  outside"))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""grid_report.py: the verdicts, the simulator table and the plots of a bench
grid (bench/grid.sh).

Reads nbr_bench CSVs named CONFIG-PATTERN-PASS.csv and nbr_sim CSVs named
CONFIG-PATTERN-sim.csv, writes OUT/report.txt and, when gnuplot is there,
OUT/CONFIG.png (speedup over mpi against size, one panel per pattern).

Verdict per point (config, pattern, size): auto's median against the best
fixed nbrcoll algorithm's (>= 0.95) and against mpi's (>= 0.97). Noise is
judged from the run itself: auto runs exactly the code of the algorithm it
chose, so the spread of auto / chosen over all points of a config is what
two identical runs differ by there. A point that misses a target by less
than that spread (its 90th percentile) is a tie within noise; one that
misses by more is a loss.

By that rule about one point in ten of two identical runs would miss, so
grid.sh measures every point that is not ok again, in fresh runs
(CONFIG-PATTERN-BYTES-confirmK.csv, --confirm): a point measured more than
once is judged on the median over its runs of auto's ratio to the best
fixed algorithm (the best by its median over the runs) and to mpi in each
run, and its line shows the range of those ratios and the first run's
verdict. A run times the algorithms side by side, so its ratios compare
like with like; the machine's state moves between runs (on one node of 8,
RSG 0.05 at 16 B, mpi's median was 11.3, 7.9 and 7.0 us in three runs),
and each algorithm's median over the runs could pair auto's time from one
with mpi's from another.
grid.sh --runs N times the whole grid N times (CONFIG-PATTERN-PASS-runK.csv
for K = 2..N): every point then has N runs or more, judged as above.

The simulator table compares each prediction of a fixed algorithm's
speedup over naive (nbr_sim) with the measured one: the median over the
point's runs of each run's naive / algorithm, both timed side by side.
A point where a prediction is more than 25 % off the first run is
measured again as an auto verdict that is not ok is, for the same reason
(one run's spread), and its line shows the runs' range and the first
run's error.
--flagged FILE writes the points that are not ok or whose predictions
miss the first run ("config tag bytes" per line) for grid.sh to measure
again; --sim-configs limits the second to the configs named (grid.sh:
those calibrated in the run, whose predictions are judged).
"""
import argparse
import csv
import math
import os
import re
import statistics
import sys
from collections import defaultdict

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import gnuplot_png  # noqa: E402 (bench/gnuplot_png.py, beside this script)

FIXED = ["naive", "halving", "combining", "leader"]
PLOTTED = ["naive", "halving", "combining", "leader", "auto"]
BEST_TARGET, MPI_TARGET, SIM_TOLERANCE = 0.95, 0.97, 0.25


def size_label(b):
    for unit, shift in (("Mi", 20), ("Ki", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d%s" % (b >> shift, unit)
    return str(b)


def split_name(path):
    """(config, kind) of CONFIG-PATTERN-KIND.csv"""
    base = os.path.basename(path)[:-4]
    return base.split("-", 1)[0], base.rsplit("-", 1)[-1]


def run_rank(kind):
    """Where a file's run goes in a point's list of runs: the first run's
    passes (tiny, small, large), then the whole grid's further runs
    (runK, grid.sh --runs), then the fresh runs of points not ok
    (confirmK)."""
    if re.fullmatch(r"run\d+", kind):
        return 1
    return 2 if kind.startswith("confirm") else 0


def load(paths):
    """bench[config][(pattern, bytes)][algorithm] = [row of each run, the
    first run first]; sim likewise with predicted speedups over naive;
    picks[config][(pattern, bytes)] = the algorithm nbr_sim predicts auto
    runs; tags[(config, pattern)] = the file tag of the pattern; pattern
    order as first seen."""
    bench = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    sim = defaultdict(lambda: defaultdict(dict))
    picks = defaultdict(dict)  # what nbr_sim says auto would run
    tags = {}
    order = []
    # the first run before the others, whatever order the shell globbed
    for path in sorted(paths, key=lambda p: run_rank(split_name(p)[1])):
        config, kind = split_name(path)
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["pattern"], int(row["bytes"]))
                if row["pattern"] not in order:
                    order.append(row["pattern"])
                if kind == "sim":
                    sim[config][key][row["algorithm"]] = float(
                        row["speedup_vs_naive"])
                    if row["algorithm"] == "auto" and row.get("runs"):
                        picks[config][key] = row["runs"]
                else:
                    row["run"] = kind if run_rank(kind) else "first"
                    bench[config][key][row["algorithm"]].append(row)
                    if not run_rank(kind):
                        base = os.path.basename(path)[:-4]
                        tags[(config, row["pattern"])] = base[len(config) + 1:-len(kind) - 1]
    return bench, sim, picks, tags, order


def med(runs):
    """An algorithm's time at a point: the median over its runs of each
    run's median."""
    return statistics.median(float(r["median_us"]) for r in runs)


def first(runs):
    return float(runs[0]["median_us"])


def quantile(values, q):
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(math.ceil(q * len(s))) - 1)]


def noise_of(points):
    """90th percentile of max(a/b, b/a) - 1 over auto and the algorithm it
    chose: the same code, timed side by side."""
    spread = []
    for algs in points.values():
        a = algs.get("auto")
        if a and a[0]["chosen"] in algs:
            x, y = first(a), first(algs[a[0]["chosen"]])
            spread.append(max(x / y, y / x) - 1)
    return quantile(spread, 0.9), len(spread)


def judge(algs, noise, first_only=False):
    """(verdict, auto / best fixed, auto / mpi, the best fixed, and those two
    ratios in each run) of one point: the best fixed algorithm by its
    median over the runs, each ratio the median of the runs' (run_ratios);
    first_only: the first run alone."""
    if first_only:
        algs = {a: runs[:1] for a, runs in algs.items()}
    fixed = [a for a in FIXED if a in algs]
    best = min(fixed, key=lambda a: med(algs[a]))
    rb, rm = run_ratios(algs, best)
    if rb:
        r_best, r_mpi = statistics.median(rb), statistics.median(rm)
    else:  # no run timed all three: medians over the runs apart
        auto = med(algs["auto"])
        r_best = med(algs[best]) / auto
        r_mpi = med(algs["mpi"]) / auto
    worst = min(r_best / BEST_TARGET, r_mpi / MPI_TARGET)
    if worst >= 1:
        v = "ok"
    elif worst * (1 + noise) >= 1:
        v = "tie (noise)"
    else:
        v = "LOSS"
    return v, r_best, r_mpi, best, rb, rm


def per_run(algs, names):
    """Each named algorithm's median time at one point, by run."""
    return {a: {r["run"]: float(r["median_us"]) for r in algs[a]} for a in names}


def run_ratios(algs, best):
    """auto's ratio to best (the best fixed algorithm by the median over
    runs) and to mpi in each run that timed all three."""
    by_run = per_run(algs, ("auto", "mpi", best))
    runs = [k for k in by_run["auto"] if k in by_run["mpi"] and k in by_run[best]]
    return ([by_run[best][k] / by_run["auto"][k] for k in runs],
            [by_run["mpi"][k] / by_run["auto"][k] for k in runs])


def speedups(algs, a):
    """Algorithm a's measured speedup over naive at one point, in each run
    that timed both (a run times them side by side)."""
    by_run = per_run(algs, ("naive", a))
    return [by_run["naive"][k] / by_run[a][k] for k in by_run[a] if k in by_run["naive"]]


def sim_errors(algs, pred, first_only=False):
    """(algorithm, measured speedup over naive, predicted, error, the runs'
    speedups) of each fixed algorithm the simulator priced at one point.
    The measured speedup is the median over the runs of each run's naive /
    algorithm; first_only: the first run's alone."""
    out = []
    for a in FIXED[1:]:
        if "naive" not in algs or a not in algs or a not in pred:
            continue
        if first_only:
            runs = [first(algs["naive"]) / first(algs[a])]
        else:  # no run timed both: the medians over the runs apart
            runs = speedups(algs, a) or [med(algs["naive"]) / med(algs[a])]
        meas = statistics.median(runs)
        out.append((a, meas, pred[a], pred[a] / meas - 1, runs))
    return out


def flagged(config, points, noise, tags, predicted):
    """(config, tag, bytes) of every point whose first run is not ok, or
    where the simulator's prediction is outside its tolerance of the first
    run: both are measured again, in fresh runs."""
    out = []
    for (p, b), algs in sorted(points.items()):
        if (config, p) not in tags:
            continue
        auto_off = "auto" in algs and "mpi" in algs and \
            judge(algs, noise, first_only=True)[0] != "ok"
        sim_off = any(abs(e[3]) > SIM_TOLERANCE
                      for e in sim_errors(algs, predicted.get((p, b), {}), first_only=True))
        if auto_off or sim_off:
            out.append((config, tags[(config, p)], b))
    return out


def verdicts(config, points, picks, order, out):
    noise, n = noise_of(points)
    out.append("## %s: auto against the best fixed algorithm and mpi" % config)
    out.append("noise: auto vs the algorithm it chose (same code) differ by "
               "up to %.1f %% at 90 %% of %d points" % (100 * noise, n))
    out.append("%-18s %7s %10s %-10s %10s %-15s %-10s %7s %7s  %s" % (
        "pattern", "bytes", "mpi_us", "best", "best_us", "auto(chose)",
        "sim_picks", "a/best", "a/mpi", "verdict"))
    tally, first_tally = defaultdict(int), defaultdict(int)
    repeated = False
    for pattern in order:
        for (p, b) in sorted(k for k in points if k[0] == pattern):
            algs = points[(p, b)]
            if "auto" not in algs or "mpi" not in algs:
                continue
            v, r_best, r_mpi, best, rb, rm = judge(algs, noise)
            v_first = judge(algs, noise, first_only=True)[0]
            tally[v] += 1
            first_tally[v_first] += 1
            chose = "/".join(sorted({r["chosen"] for r in algs["auto"]}))
            line = "%-18s %7s %10.1f %-10s %10.1f %-15s %-10s %7.2f %7.2f  %s" % (
                p, size_label(b), med(algs["mpi"]), best, med(algs[best]),
                "auto(%s)" % chose, picks.get((p, b), "-"), r_best, r_mpi, v)
            runs = len(algs["auto"])
            if runs > 1:
                repeated = True
                line += "  (%d runs: a/best %.2f-%.2f, a/mpi %.2f-%.2f; first run %s)" % (
                    runs, min(rb), max(rb), min(rm), max(rm), v_first)
            out.append(line)
    out.append("%s: %s" % (config, ", ".join(
        "%d %s" % (tally[k], k) for k in ("ok", "tie (noise)", "LOSS"))))
    if repeated:
        out.append("%s, first runs alone: %s" % (config, ", ".join(
            "%d %s" % (first_tally[k], k) for k in ("ok", "tie (noise)", "LOSS"))))
    out.append("")


def sim_table(config, points, predicted, order, out):
    out.append("## %s: simulator's speedup over naive against the measured"
               % config)
    out.append("%-18s %7s %-10s %9s %9s %7s" % (
        "pattern", "bytes", "algorithm", "measured", "predicted", "error"))
    inside = first_inside = total = 0
    repeated = False
    for pattern in order:
        for key in sorted(k for k in points if k[0] == pattern):
            algs, pred = points[key], predicted.get(key, {})
            firsts = {e[0]: e[3] for e in sim_errors(algs, pred, first_only=True)}
            for a, meas, p, err, runs in sim_errors(algs, pred):
                total += 1
                inside += abs(err) <= SIM_TOLERANCE
                first_inside += abs(firsts[a]) <= SIM_TOLERANCE
                line = "%-18s %7s %-10s %9.2f %9.2f %+6.0f%%%s" % (
                    key[0], size_label(key[1]), a, meas, p, 100 * err,
                    "" if abs(err) <= SIM_TOLERANCE else "  outside")
                if len(runs) > 1:
                    repeated = True
                    line += "  (%d runs: measured %.2f-%.2f; first run %+.0f%%)" % (
                        len(runs), min(runs), max(runs), 100 * firsts[a])
                out.append(line)
    out.append("%s: %d of %d predictions within %d %% of the measurement"
               % (config, inside, total, 100 * SIM_TOLERANCE))
    if repeated:
        out.append("%s, first runs alone: %d of %d" % (config, first_inside, total))
    out.append("")


def plot(config, points, order, outdir):
    """OUT/CONFIG.png via gnuplot; returns the path or None."""
    if not gnuplot_png.have_gnuplot():
        return None
    panels = []
    for pattern in order:
        keys = sorted(k for k in points if k[0] == pattern)
        series = []
        for a in PLOTTED:
            rows = [(b, med(points[(p, b)]["mpi"]) / med(points[(p, b)][a]))
                    for (p, b) in keys
                    if a in points[(p, b)] and "mpi" in points[(p, b)]]
            if rows:
                series.append((a, rows))
        if series:
            panels.append((pattern, series))
    if not panels:
        return None
    return gnuplot_png.speedup_panels(
        os.path.join(outdir, config + ".png"),
        "nbrcoll %s: speedup over MPI_Neighbor_allgather (median; > 1 is "
        "faster)" % config, panels,
        ["set logscale x 4", "set logscale y 2", "set grid",
         "set xtics 16, 64", "set format x '%.0b%BB'",
         "set xlabel 'bytes per neighbor'", "set key top left"],
        dat=os.path.join(outdir, config + ".dat"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory for the report")
    ap.add_argument("--flagged", metavar="FILE",
                    help="write the points to measure again here (not ok, or a "
                    "prediction missed), and nothing else")
    ap.add_argument("--sim-configs", metavar="LIST",
                    help="with --flagged: the configs (comma-separated) whose "
                    "predictions that miss are flagged too [all]")
    ap.add_argument("csv", nargs="+", help="nbr_bench and nbr_sim CSVs")
    args = ap.parse_args()
    bench, sim, picks, tags, order = load(args.csv)
    if args.flagged:
        with open(args.flagged, "w") as f:
            for config in sorted(bench):
                noise = noise_of(bench[config])[0]
                judged = args.sim_configs is None or config in args.sim_configs.split(",")
                for point in flagged(config, bench[config], noise, tags,
                                     sim.get(config, {}) if judged else {}):
                    f.write("%s %s %d\n" % point)
        return
    out = []
    for config in sorted(bench):
        verdicts(config, bench[config], picks[config], order, out)
        if config in sim:
            sim_table(config, bench[config], sim[config], order, out)
        png = plot(config, bench[config], order, args.out)
        out.append("plot: %s" % (png or "(no gnuplot: not drawn)"))
        out.append("")
    text = "\n".join(out) + "\n"
    with open(os.path.join(args.out, "report.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()

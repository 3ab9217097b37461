#!/usr/bin/env python3
"""plot.py: PNG plots of nbr_bench, nbr_sim and nbr_spmm CSVs.

    bench/plot.py [--out DIR] CSV...

Which program wrote a CSV is read from its header. nbr_bench: speedup over
mpi (median times) against the bytes per neighbor, one panel per pattern,
one line per algorithm; nbr_sim: the same, predicted. One PNG per
collective, memory and job shape in the CSV. nbr_spmm: speedup over mpi
per matrix, one bar per algorithm, of the whole product and of the
exchange alone; one PNG per job shape, dense columns and partition.

PNGs go to DIR (default: beside each CSV) as CSVNAME-GROUP.png; each one's
path is printed on a line of its own. Needs gnuplot (Debian: gnuplot-nox).
"""
import argparse
import csv
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
import gnuplot_png  # noqa: E402 (bench/gnuplot_png.py, beside this script)

# the columns each kind is told by and plotted from (older nbr_bench CSVs
# lack some of the rest, e.g. chosen)
KINDS = {
    "nbr_bench": ["pattern", "ranks", "nodes", "collective", "algorithm", "bytes",
                  "median_us", "speedup_vs_mpi"],
    "nbr_sim": ["pattern", "ranks", "ranks_per_node", "node_model", "machine",
                "collective", "memory", "bytes", "algorithm", "seconds",
                "speedup_vs_naive"],
    "nbr_spmm": ["matrix", "ranks", "nodes", "cols", "partition", "memory", "kernel",
                 "algorithm", "total_us", "speedup_vs_mpi",
                 "exchange_speedup_vs_mpi"],
}
# y tics of the log-2 speedup axis, coarse to fine: the first set with
# enough tics inside the range is used, so that a wide range shows powers
# of 2 and a narrow one still reads
POW2 = [2.0 ** e for e in range(-10, 11)]
ROUND = [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9, 1.25, 1.5, 1.75, 2.5, 3, 3.5,
         5, 6, 7, 10, 12, 14, 20, 24, 28]
YTICS = [POW2, POW2 + [1.5 * t for t in POW2], POW2 + ROUND,
         POW2 + ROUND + [0.85, 0.95, 1.05, 1.1, 1.15]]


class Bad(Exception):
    pass


def size_label(b):
    for unit, shift in (("Mi", 20), ("Ki", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d%s" % (b >> shift, unit)
    return str(b)


def number(row, column, path, line):
    """The column as a float, None for '-' (not measured)."""
    v = (row.get(column) or "").strip()
    if v == "-":
        return None
    try:
        return float(v)
    except ValueError:
        raise Bad("%s:%d: %s is %r, not a number" % (path, line, column, v))


def read(path):
    """(kind, [(line number, row dict)]) of one CSV."""
    try:
        with open(path, newline="") as f:
            lines = list(csv.reader(f))
    except OSError as e:
        raise Bad("%s: %s" % (path, e.strerror))
    except (csv.Error, UnicodeDecodeError) as e:
        raise Bad("%s: not a CSV file (%s)" % (path, e))
    if not lines or not any(lines[0]):
        raise Bad("%s: empty, no header line" % path)
    head = [h.strip() for h in lines[0]]
    kind = next((k for k, cols in KINDS.items() if all(c in head for c in cols)), None)
    if kind is None:
        raise Bad("%s: unknown header (not nbr_bench's, nbr_sim's or nbr_spmm's): %s"
                  % (path, ",".join(head)[:100]))
    rows = [(i + 1, dict(zip(head, r))) for i, r in enumerate(lines) if i and any(r)]
    if not rows:
        raise Bad("%s: %s header but no rows: nothing to plot" % (path, kind))
    return kind, rows


def slug(*parts):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(str(p) for p in parts))


def curves(rows, path):
    """nbr_bench: {group: (title lines, name, {pattern: {algorithm: {bytes:
    speedup}}})}, speedups over mpi; mpi's own line (all 1) left out."""
    groups = {}
    for line, r in rows:
        coll, mem = r["collective"], r.get("memory") or "host"
        key = (coll, mem, r["ranks"], r["nodes"])
        if key not in groups:
            groups[key] = (
                ["nbr_bench: speedup over MPI_Neighbor_%s (median times; > 1 is "
                 "faster)" % coll,
                 "%s ranks on %s nodes, %s buffers" % (r["ranks"], r["nodes"], mem)],
                slug(coll, mem, "%sr%sn" % (r["ranks"], r["nodes"])), {})
        s = number(r, "speedup_vs_mpi", path, line)
        if r["algorithm"] != "mpi" and s is not None and s > 0:
            b = int(number(r, "bytes", path, line))
            groups[key][2].setdefault(r["pattern"], {}).setdefault(
                r["algorithm"], {})[b] = s
    return groups


def sim_curves(rows, path):
    """nbr_sim: as curves(), predicted; over mpi's row where the CSV has
    one, else over naive's (the simulator prices mpi as naive's plan)."""
    times = {}  # group: {(pattern, bytes): {algorithm: seconds}}
    heads = {}
    for line, r in rows:
        key = (r["collective"], r["memory"], r["ranks"], r["ranks_per_node"],
               r["node_model"], r["machine"])
        heads.setdefault(key, r)
        t = number(r, "seconds", path, line)
        if t is not None and t > 0:
            b = int(number(r, "bytes", path, line))
            at = times.setdefault(key, {}).setdefault((r["pattern"], b), {})
            at[r["algorithm"]] = t
    groups = {}
    for key, r in heads.items():
        points = times.get(key, {})
        base = "mpi" if any("mpi" in algs for algs in points.values()) else "naive"
        nodes = -(-int(r["ranks"]) // max(1, int(r["ranks_per_node"])))
        over = ("MPI_Neighbor_%s" % r["collective"] if base == "mpi" else
                "naive, its stand-in for MPI")
        lines = {}
        for (pattern, b), algs in points.items():
            for a, t in algs.items():
                if a != base and base in algs:
                    lines.setdefault(pattern, {}).setdefault(a, {})[b] = algs[base] / t
        groups[key] = (
            ["nbr_sim: predicted speedup over %s (> 1 is faster)" % over,
             "%s, %s ranks on %d nodes, %s buffers"
             % (r["collective"], r["ranks"], nodes, r["memory"]),
             "node model %s, machine %s" % (r["node_model"], r["machine"])],
            slug(r["collective"], r["memory"], "%sr%dn" % (r["ranks"], nodes),
                 r["node_model"], r["machine"]), lines)
    return groups


def draw_lines(png, title, lines):
    """Speedup against size, one panel per pattern; None when no points."""
    panels = [(p, [(a, sorted(pts.items())) for a, pts in algs.items() if pts])
              for p, algs in lines.items()]
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    sizes = sorted({b for _, series in panels for _, pts in series for b, _ in pts})
    ys = [s for _, series in panels for _, pts in series for _, s in pts]
    lo, hi = min(ys + [1.0]) / 1.15, max(ys + [1.0]) * 1.15
    for level in YTICS:
        tics = sorted({t for t in level if lo <= t <= hi})
        if len(tics) >= 4:
            break
    step = (len(sizes) + 7) // 8  # at most 8 size labels
    xtics = ", ".join("'%s' %d" % (size_label(b), b) for b in sizes[::step])
    setup = ["set logscale x 2", "set logscale y 2", "set grid",
             "set xrange [%g:%g]" % (sizes[0] / 1.3, sizes[-1] * 1.3),
             "set yrange [%g:%g]" % (lo, hi),
             "set xtics (%s)" % xtics,
             "set ytics (%s)" % ", ".join("'%g' %r" % (t, t) for t in tics),
             "set xlabel 'bytes per neighbor'", "set ylabel 'speedup'",
             "set key outside right top vertical"]
    return gnuplot_png.speedup_panels(png, title, panels, setup,
                                      panel_size=(620, 440))


def spmm_groups(rows, path):
    """nbr_spmm: {group: {title, name, matrices and algorithms in order,
    values: {(matrix, algorithm): (total speedup, exchange speedup)}, ran:
    {matrix: what auto ran}, failed: matrix/algorithm of failed checks}}."""
    groups = {}
    for line, r in rows:
        key = (r["ranks"], r["nodes"], r["cols"], r["partition"], r["memory"],
               r["kernel"])
        g = groups.setdefault(key, {
            "title": ["nbr_spmm: speedup over MPI_Neighbor_allgatherv (median times; "
                      "> 1 is faster)",
                      "%s ranks on %s nodes, %s dense columns, %s partition, "
                      "%s memory, %s kernel" % key],
            "name": slug("%sr%sn" % key[:2], "k" + key[2], key[3], key[4]),
            "matrices": [], "algs": [], "values": {}, "ran": {}, "failed": []})
        m = re.sub(r"\.mtx(\.gz)?$", "", r["matrix"])
        if m not in g["matrices"]:
            g["matrices"].append(m)
        if r["algorithm"] == "mpi":
            continue
        if r["algorithm"] not in g["algs"]:
            g["algs"].append(r["algorithm"])
        if (r.get("check") or "").strip() == "fail":
            g["failed"].append("%s/%s" % (m, r["algorithm"]))
            continue  # a wrong product's time means nothing
        total = number(r, "speedup_vs_mpi", path, line)
        if total is None:
            continue
        g["values"][(m, r["algorithm"])] = (
            total, number(r, "exchange_speedup_vs_mpi", path, line))
        ran = (r.get("ran") or "").strip()
        if r["algorithm"] == "auto" and ran not in ("", "-", "auto"):
            g["ran"][m] = ran
    return groups


def draw_bars(png, g):
    """Grouped bars per matrix, one per algorithm: the whole iteration's
    speedup over mpi, then the exchange's."""
    algs = [a for a in g["algs"] if any((m, a) in g["values"] for m in g["matrices"])]
    matrices = [m for m in g["matrices"] if any((m, a) in g["values"] for a in algs)]
    title = g["title"]
    if g["ran"]:
        title = title + ["(under each matrix: the algorithm auto ran)"]
    if g["failed"]:
        title = title + ["check failed, not drawn: " + ", ".join(g["failed"])]
    script = []
    for i, name in enumerate(("total", "exchange")):
        script.append("$%s << EOD" % name)
        for m in matrices:
            cells = [g["values"].get((m, a), (None, None))[i] for a in algs]
            script.append(" ".join("?" if v is None else "%.4f" % v for v in cells))
        script.append("EOD")
    # clustered histograms centre cluster i on x = i; labels as explicit
    # tics, since only a script string (not data) can hold a line break
    tics = ", ".join("%s %d" % (gnuplot_png.quote_lines(
        [m] + (["(%s)" % g["ran"][m]] if m in g["ran"] else [])), i)
        for i, m in enumerate(matrices))
    width = max(700, 180 + len(matrices) * (22 * len(algs) + 30))
    top = max([1.0] + [v for pair in g["values"].values() for v in pair
                       if v is not None])
    script = gnuplot_png.header(png, title, 2, (width, 380), most=1) + script + [
        "set datafile missing '?'", "set style data histograms",
        "set style histogram clustered gap 1", "set style fill solid 0.85 border -1",
        "set boxwidth 0.9", "set grid ytics",
        "set xrange [-0.6:%g]" % (len(matrices) - 0.4),
        "set yrange [0:%g]" % (top * 1.15), "set ylabel 'speedup over mpi'",
        "set key outside right top vertical",
        "set xtics nomirror (%s)%s"
        % (tics, " rotate by 25 right" if len(matrices) > 6 else ""),
        # gnuplot leaves room for one line of tic labels only
        "set bmargin %d" % (4 + (len(matrices) > 6) * 3),
    ]
    for name, what in (("total", "exchange + local product (one iteration)"),
                       ("exchange", "exchange alone")):
        parts = []
        for j, a in enumerate(algs):
            colour = gnuplot_png.COLOURS.get(a)
            parts.append("$%s using %d title %s%s" % (
                name, j + 1, gnuplot_png.quote(a),
                " lc rgb '%s'" % colour if colour else ""))
        parts.append("1 with lines notitle lc rgb '#555555' dt 2")
        script += ["set title %s" % gnuplot_png.quote(what), "plot " + ", ".join(parts)]
    script.append("unset multiplot")
    gnuplot_png.run(script, png)
    return png


def jobs_of(path, outdir):
    """[(png, draw, its arguments)] of one CSV: a plot per group that has
    something to draw."""
    kind, rows = read(path)
    base = os.path.join(outdir, os.path.splitext(os.path.basename(path))[0])
    jobs = []
    if kind == "nbr_spmm":
        for g in spmm_groups(rows, path).values():
            if g["values"]:
                jobs.append(("%s-%s.png" % (base, g["name"]), draw_bars, (g,)))
    else:
        groups = curves(rows, path) if kind == "nbr_bench" else sim_curves(rows, path)
        for title, name, lines in groups.values():
            if any(pts for algs in lines.values() for pts in algs.values()):
                jobs.append(("%s-%s.png" % (base, name), draw_lines, (title, lines)))
    if not jobs:
        base = "mpi or naive" if kind == "nbr_sim" else "mpi"
        raise Bad("%s: nothing to plot: no speedups over %s (was %s among the "
                  "algorithms?)" % (path, base, base))
    return jobs


def main():
    ap = argparse.ArgumentParser(
        description="PNG plots of nbr_bench, nbr_sim and nbr_spmm CSVs")
    ap.add_argument("--out", metavar="DIR",
                    help="directory for the PNGs [beside each CSV]")
    ap.add_argument("csv", nargs="+", help="CSV files")
    args = ap.parse_args()
    if not gnuplot_png.have_gnuplot():
        sys.exit("plot.py: gnuplot not found (Debian: apt-get install gnuplot-nox)")
    try:
        # every CSV read before anything is drawn: bad input draws nothing
        jobs = []
        for path in args.csv:
            jobs += jobs_of(path, args.out or os.path.dirname(os.path.abspath(path)))
        pngs = [j[0] for j in jobs]
        dup = next((p for p in pngs if pngs.count(p) > 1), None)
        if dup:
            raise Bad("two plots would both be %s (CSVs of one name from two "
                      "folders? plot them with different --out)" % dup)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
        for png, draw, what in jobs:
            draw(png, *what)
            print(png, flush=True)
    except (Bad, gnuplot_png.GnuplotError, OSError) as e:
        sys.exit("plot.py: %s" % e)


if __name__ == "__main__":
    main()

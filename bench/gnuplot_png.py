"""gnuplot_png.py: the gnuplot driving that bench/plot.py and
bench/grid_report.py share: PNG figures of speedup-against-size panels.

Python's standard library only; gnuplot (Debian: gnuplot-nox) draws.
"""
import os
import shutil
import subprocess

# one colour per algorithm in every figure, so that figures compare at a
# glance; auto is drawn heaviest, since it is what users get
COLOURS = {"auto": "black", "naive": "#888888", "halving": "#1f77b4",
           "combining": "#2ca02c", "leader": "#d62728", "aggregate": "#9467bd",
           "dedup": "#ff7f0e", "mpi": "#8c564b"}


def style(name):
    """gnuplot line style of an algorithm (gnuplot's own colours for
    names not above)."""
    if name not in COLOURS:
        return ""
    return ("lw 3 " if name == "auto" else "") + "lc rgb '%s'" % COLOURS[name]


class GnuplotError(Exception):
    pass


def have_gnuplot():
    return shutil.which("gnuplot") is not None


def quote(text):
    """A gnuplot string literal: single quotes take everything literally
    but themselves, doubled."""
    return "'" + text.replace("'", "''") + "'"


def quote_lines(lines):
    """A gnuplot string of several lines (only double quotes read \\n)."""
    esc = [l.replace("\\", "\\\\").replace('"', '\\"') for l in lines]
    return '"' + "\\n".join(esc) + '"'


def layout(n, most=4):
    """(rows, cols) of a grid of n panels, at most `most` wide."""
    cols = most if n > most else n
    return (n + cols - 1) // cols, cols


def header(png, title, n, panel_size=(420, 340), most=4):
    """The terminal and the multiplot of n panels: list of gnuplot lines.
    title: one string or a list of lines."""
    rows, cols = layout(n, most)
    title = quote(title) if isinstance(title, str) else quote_lines(title)
    return ["set terminal pngcairo noenhanced size %d,%d font ',9'"
            % (panel_size[0] * cols, panel_size[1] * rows),
            "set output %s" % quote(png),
            "set multiplot layout %d,%d title %s" % (rows, cols, title)]


def run(script, png):
    """Runs gnuplot on the script's lines; raises GnuplotError unless it
    wrote a PNG."""
    if not have_gnuplot():
        raise GnuplotError("gnuplot not found (Debian: apt-get install gnuplot-nox)")
    out = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True,
                         capture_output=True)
    if out.returncode != 0 or not os.path.isfile(png) or os.path.getsize(png) == 0:
        raise GnuplotError("gnuplot failed on %s: %s" % (png, out.stderr.strip()))


def speedup_panels(png, title, panels, setup, dat=None, panel_size=(420, 340)):
    """One panel of lines per entry of panels, [(panel title, [(algorithm,
    [(bytes, speedup), ...]), ...]), ...], each with a dashed line at 1,
    after the gnuplot lines `setup` (axes, key). The points go to the file
    dat (gnuplot's index blocks, kept for a look at the numbers) or, with
    no dat, inline into the script."""
    script = header(png, title, len(panels), panel_size)
    blocks, kept = [], []
    for ptitle, series in panels:
        for name, points in series:
            rows = ["%d %.4f" % p for p in points]
            if dat:
                kept += ["# %s %s" % (ptitle, name)] + rows + ["", ""]
                blocks.append("%s index %d" % (quote(dat), len(blocks)))
            else:
                script += ["$s%d << EOD" % len(blocks)] + rows + ["EOD"]
                blocks.append("$s%d" % len(blocks))
    if dat:
        with open(dat, "w") as f:
            f.write("".join(line + "\n" for line in kept))
    script += setup
    k = 0
    for ptitle, series in panels:
        script.append("set title %s" % quote(ptitle))
        parts = ["1 notitle lc rgb '#bbbbbb' dt 2"]
        for name, _ in series:
            parts.append("%s with linespoints %s title %s"
                         % (blocks[k], style(name), quote(name)))
            k += 1
        script.append("plot " + ", ".join(parts))
    script.append("unset multiplot")
    run(script, png)
    return png

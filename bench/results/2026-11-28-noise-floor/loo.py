"""loo.py RATIOS [FIRST]: how close to the measured speedups any predictor
can come. For each grid (from g<FIRST> on, default 1) and point, the
"prediction" is the median of the same point's measured speedup over naive
in the other grids (leave one out): what a predictor that knew every other
grid would say. Prints each grid's points within 25 % of it beside the
model's own count (the ratio column of reprice.sh's lines, RATIOS)."""
import collections, statistics, sys

first = int(sys.argv[2]) if len(sys.argv) > 2 else 1
measured = collections.defaultdict(dict)  # point -> grid -> speedup
model = {}                                # (grid, point) -> predicted/measured
for line in open(sys.argv[1]):
    g, pat, b, alg, m, p, r = line.strip().split(';')
    if g[1:].isdigit() and int(g[1:]) >= first:
        measured[(pat, b, alg)][g] = float(m)
        model[(g, (pat, b, alg))] = float(r)
grids = sorted({g for d in measured.values() for g in d}, key=lambda g: int(g[1:]))
within = lambda q: 0.75 <= q <= 1.25
sums = [0, 0, 0]
print('grid  points  leave-one-out median  model')
for g in grids:
    n = loo = own = 0
    for point, by_grid in measured.items():
        if g not in by_grid or len(by_grid) < 3:
            continue
        others = statistics.median(v for h, v in by_grid.items() if h != g)
        n += 1
        loo += within(others / by_grid[g])
        own += within(model[(g, point)])
    sums = [sums[0] + n, sums[1] + loo, sums[2] + own]
    print('%-5s %6d  %20d  %5d' % (g, n, loo, own))
print('all   %6d  %20d  %5d' % tuple(sums))

"""stats.py RATIOS [N]: each grid's points within 25 % (and the total), then
the N points missed most often over the grids: measured/predicted per grid
and the geometric mean of predicted over measured."""
import collections, math, sys
points = collections.defaultdict(dict)
ok, total = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    g, pat, b, alg, m, p, r = line.strip().split(';')
    points[(pat, int(b), alg)][g] = (float(m), float(p), float(r))
    total[g] += 1
    ok[g] += abs(float(r) - 1) <= 0.25
def grid_order(g):  # g1 < g2 < g10, then other labels (g26x) by name
    return (0, int(g[1:]), '') if g[1:].isdigit() else (1, 0, g)
print('  '.join('%s %d/%d' % (g, ok[g], total[g]) for g in sorted(total, key=grid_order)),
      ' all %d/%d' % (sum(ok.values()), sum(total.values())))
rows = []
for k, v in points.items():
    miss = sum(abs(x[2] - 1) > 0.25 for x in v.values())
    geo = math.exp(sum(math.log(x[2]) for x in v.values()) / len(v))
    rows.append((miss, abs(math.log(geo)), k, geo, v))
rows.sort(key=lambda r: (-r[0], -r[1]))
for miss, _, k, geo, v in rows[:int(sys.argv[2]) if len(sys.argv) > 2 else 12]:
    if miss:
        print('%-16s %8d %-9s missed %d, predicted/measured %.2f: %s' % (k[0], k[1], k[2], miss, geo,
              ' '.join('%s %.2f/%.2f' % (g, v[g][0], v[g][1]) for g in sorted(v, key=grid_order))))

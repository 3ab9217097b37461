#!/usr/bin/env python3
"""naive_fit.py DIR...: for each cluster grid directory, naive's median at
16 B on the grid's seven graphs against the messages a rank sends between
nodes and inside a node (the job's counts from the grid's own *-sim.csv,
over 16 ranks), fitted by least squares: us = a + b x between + c x inside.
Prints the fit and each graph's residual."""
import csv, glob, statistics as st, sys

def solve(rows, ys):
    k = len(rows[0])
    m = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    v = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(k)]
    for i in range(k):
        for j in range(i + 1, k):
            f = m[j][i] / m[i][i]
            m[j] = [a - f * b for a, b in zip(m[j], m[i])]
            v[j] -= f * v[i]
    x = [0.0] * k
    for i in reversed(range(k)):
        x[i] = (v[i] - sum(m[i][c] * x[c] for c in range(i + 1, k))) / m[i][i]
    return x

for d in sys.argv[1:]:
    meas, counts = {}, {}
    for f in glob.glob(d + '/cluster-*.csv'):
        for r in csv.DictReader(open(f)):
            if r['algorithm'] != 'naive' or int(r['bytes']) != 16:
                continue
            if f.endswith('-sim.csv'):
                inside = int(r['socket_messages']) + int(r['node_messages'])
                counts[r['pattern']] = (int(r['network_messages']) / 16, inside / 16)
            else:
                meas.setdefault(r['pattern'], []).append(float(r['median_us']))
    names = sorted(p for p in counts if p in meas)
    if len(names) < 4:
        continue
    rows = [[1, counts[p][0], counts[p][1]] for p in names]
    ys = [st.median(meas[p]) for p in names]
    a, b, c = solve(rows, ys)
    print('%s: %.0f us + %.1f us a message between nodes + %.1f us inside (a rank)' % (d, a, b, c))
    for p, r, y in zip(names, rows, ys):
        print('    %-16s between %5.2f inside %5.2f measured %6.0f fit %+5.0f' %
              (p, r[1], r[2], y, a + b * r[1] + c * r[2] - y))

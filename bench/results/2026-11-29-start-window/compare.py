#!/usr/bin/env python3
"""compare.py A B: two reprice.sh outputs of the same grids (lines
grid;pattern;bytes;algorithm;measured;predicted;ratio). Prints the points
within 25 % in each, over all grids and over g16 on (this host), then each
pattern, size and algorithm whose geometric-mean predicted/measured ratio
moved by more than 2 % or whose count of misses changed."""
import collections
import math
import sys


def load(path):
    d = {}
    for line in open(path):
        g, p, b, a, m, pr, _ = line.strip().split(';')
        d[(g, p, int(b), a)] = (float(m), float(pr))
    return d


def grid_number(label):
    return int(''.join(ch for ch in label[1:] if ch.isdigit()))


def within(v):
    return 0.75 <= v[1] / v[0] <= 1.25


a, b = load(sys.argv[1]), load(sys.argv[2])
for name, keep in (('all', lambda g: True), ('g16 on', lambda g: grid_number(g) >= 16)):
    count = lambda d: (sum(1 for k, v in d.items() if keep(k[0]) and within(v)),
                       sum(1 for k in d if keep(k[0])))
    print(name, count(a), count(b))
groups = collections.defaultdict(lambda: [0.0, 0.0, 0, 0, 0])
for k in a:
    x = groups[k[1:]]
    x[0] += math.log(a[k][1] / a[k][0])
    x[1] += math.log(b[k][1] / b[k][0])
    x[2] += 1
    x[3] += not within(a[k])
    x[4] += not within(b[k])
for (p, by, al), v in sorted(groups.items()):
    if abs(v[0] - v[1]) / v[2] > 0.02 or v[3] != v[4]:
        print(f"{p:16s} {by:9d} {al:9s} ratio {math.exp(v[0] / v[2]):.2f} -> "
              f"{math.exp(v[1] / v[2]):.2f}  missed {v[3]} -> {v[4]}")

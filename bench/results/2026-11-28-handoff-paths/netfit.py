#!/usr/bin/env python3
"""netfit.py MACHINE: the machine file with its hand-off for messages
between nodes only (message_paths=network), start and hand-off refitted
as nbr_calibrate now fits them: its small calls' times against the
messages a rank sends to other nodes. A calibration's comment lines give
each call's messages a rank in all; the share of them between nodes is
that of the calibration's graphs on 16 ranks, 4 a node (random graphs of
density 0.3 and 0.8, seeds 101 and 102, as nbr_sim counts them). Files
with message_paths already, or without small calls, pass unchanged.
NETFIT_ALGS (later, 2026-11-29-sparse-relay; comma-separated) fits only
those algorithms' calls, e.g. naive's: one phase, no relays; then files
with message_paths are refitted too, from the messages between nodes
their comment gives in parentheses."""
import os, re, sys

SHARE = {('naive', 0.3): 3.88 / 4.94, ('halving', 0.3): 1.88 / 3.81,
         ('combining', 0.3): 3.56 / 4.50, ('naive', 0.8): 10.06 / 12.50,
         ('halving', 0.8): 2.00 / 4.94, ('combining', 0.8): 5.94 / 8.19}
lines = open(sys.argv[1]).read().split('\n')
points, one, small = [], None, False
for line in lines:
    if 'small calls' in line:
        small = True
        continue
    if small and line.startswith('#     '):
        for item in line[6:].split(','):
            words = item.split()
            algs = os.environ.get('NETFIT_ALGS')
            if algs and words and words[0] not in algs.split(','):
                continue
            if len(words) == 4 and (words[0], round(float(words[1]), 1)) in SHARE:
                share = SHARE[(words[0], round(float(words[1]), 1))]
                points.append((float(words[2]) * share, float(words[3])))
            elif algs and len(words) == 5 and words[3].startswith('('):
                points.append((float(words[3].strip('()')), float(words[4])))
        continue
    small = False
    found = re.search(r'less ([0-9.]+) us for the slowest message alone', line)
    if found:
        one = float(found.group(1))
fit = len(points) >= 2 and one is not None and (
    os.environ.get('NETFIT_ALGS') or not any('message_paths' in l for l in lines))
if fit:
    n = len(points)
    sx, sy = sum(x for x, _ in points), sum(y for _, y in points)
    sxx, sxy = sum(x * x for x, _ in points), sum(x * y for x, y in points)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    at_zero = (sy - slope * sx) / n
for line in lines:
    if fit and line.startswith('cores ') and 'message_us=' in line:
        cores = int(line.split()[1])  # per=job: 16 ranks over them
        line = re.sub(r' message_paths=\S+', '', line)
        line = re.sub(r'message_us=\S+', 'message_us=%g message_paths=network' % (slope * cores / 16), line)
    if fit and line.startswith('call '):
        line = re.sub(r'start_us=\S+', 'start_us=%g' % max(at_zero - one, 0), line)
    print(line)

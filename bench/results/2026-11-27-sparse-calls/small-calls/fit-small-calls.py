"""fit-small-calls.py: prices the small calls of this directory (nbr_bench
CSVs: allgather of 16 B on RSG 0.05-0.3, seed 101, the emulated 4 x 4
cluster, 2026-11-27 00:46) with build/bench/nbr_sim on the calibration
taken just before them (../calibrate-before.machine) and prints the root
mean square of the relative errors: as calibrated, then for hand-offs
(message_us) and turns (turn_us) tried, each with the start fitted by
least squares. The 0.8 calls are that calibration's own. Run from the
repository root."""
import csv, glob, re, subprocess
here = 'bench/results/2026-11-27-sparse-calls/'
measured = {}
for f in glob.glob(here + 'small-calls/rsg-*.csv'):
    if f.endswith('block1.csv'):
        continue
    for r in csv.DictReader(open(f)):
        if r['algorithm'] in ('naive', 'halving', 'combining'):
            d = re.search(r'd=([0-9.]+)', r['pattern']).group(1)
            measured[("%.2f" % float(d), r['algorithm'])] = float(r['median_us'])
machine = open(here + 'calibrate-before.machine').read()
for line in machine.splitlines():  # the calibration's own calls at 0.8
    if line.startswith('#     naive 0.8'):
        for part in line[1:].split(','):
            a, d, _, us = part.split()
            measured[('0.80', a)] = float(us)
base = re.sub(r'^call .*$', '', machine, flags=re.M)

def price(handoff, turn, start=0):
    text = re.sub(r'message_us=[0-9.e+-]*', 'message_us=%g' % handoff, base)
    text += 'call start_us=%g turn_us=%g\n' % (start, turn)
    open('/tmp/fit-small-calls.machine', 'w').write(text)
    out = {}
    for d in sorted({k[0] for k in measured}):
        run = subprocess.run(['build/bench/nbr_sim', '--machine', '/tmp/fit-small-calls.machine',
                              '--pattern', 'rsg', '--density', d, '--seed', '101', '--ranks', '16',
                              '--ranks-per-node', '4', '--min-bytes', '16', '--max-bytes', '16',
                              '--algorithms', 'naive,halving,combining'],
                             capture_output=True, text=True, check=True).stdout
        for line in run.splitlines():
            f = line.split()
            if len(f) > 3 and f[1] == '16' and f[0] != 'auto':
                out[('%.2f' % float(d), f[0])] = float(f[2])
    return out

def rms(pred, start):
    return (sum(((start + pred[k]) / measured[k] - 1) ** 2 for k in measured) / len(measured)) ** 0.5

def fit(handoff, turn):
    pred = price(handoff, turn)
    num = sum((1 - pred[k] / measured[k]) / measured[k] for k in measured)
    den = sum(1 / measured[k] ** 2 for k in measured)
    start = max(0, num / den)
    return rms(pred, start), start

m = re.search(r'message_us=([0-9.e+-]+)', machine).group(1)
s = re.search(r'start_us=([0-9.e+-]+)', machine).group(1)
print('as calibrated (line fit: start %.1f us, hand-off %.2f us): rms %.3f'
      % (float(s), float(m), rms(price(float(m), 0), float(s))))
for turn in (0, 10, 20, 30):
    for handoff in (4.3, 6, 8):
        e, start = fit(handoff, turn)
        print('hand-off %4.1f us turn %2d us: start %5.1f us, rms %.3f' % (handoff, turn, start, e))

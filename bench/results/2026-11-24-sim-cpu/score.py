"""score.py CONFIG SIM_DIR MAX_BYTES CONST_US RESULT_DIR... [-v]

Counts the points where nbr_sim's predicted speedup over naive (CSV files
SIM_DIR/CONFIG-*.csv from predict.sh) is within 25 % of the measured one
(the median over the grid runs in RESULT_DIRs, relative to bench/results/),
for halving, combining and leader at sizes up to MAX_BYTES. CONST_US is
added to every predicted time (a per-call start common to all plans)."""
import csv, glob, statistics as st, sys

here = __file__.rsplit('/', 1)[0] + '/../'
cfg, sim_dir, max_bytes, const = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
verbose = '-v' in sys.argv
measured = {}
for d in (a for a in sys.argv[5:] if a != '-v'):
    for f in glob.glob(here + d + '/*.csv'):
        if f.endswith('-sim.csv') or f.split('/')[-1].split('-')[0] != cfg:
            continue
        for row in csv.DictReader(open(f)):
            key = (row['pattern'], int(row['bytes']), row['algorithm'])
            measured.setdefault(key, []).append(float(row['median_us']))
predicted = {}
for f in glob.glob(sim_dir + '/%s-*.csv' % cfg):
    for row in csv.DictReader(open(f)):
        key = (row['pattern'], int(row['bytes']), row['algorithm'])
        predicted[key] = float(row['seconds']) * 1e6 + const
ok = total = 0
for key in sorted(predicted):
    if key[2] in ('naive', 'auto') or key not in measured or key[1] > max_bytes:
        continue
    naive = (key[0], key[1], 'naive')
    m = st.median(measured[naive]) / st.median(measured[key])
    p = predicted[naive] / predicted[key]
    total += 1
    ok += abs(p / m - 1) <= 0.25
    if verbose and abs(p / m - 1) > 0.25:
        print('%-18s %9d %-10s measured %5.2f predicted %5.2f' % (key + (m, p)))
print('%d/%d within 25%%' % (ok, total))

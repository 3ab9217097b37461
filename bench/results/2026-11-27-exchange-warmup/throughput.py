"""throughput.py GRID_DIR: for each pattern and large size of a cluster grid,
each plan's network megabytes (from the grid's nbr_sim CSV: bytes between
nodes, the whole job) over its measured median time (median over the
grid's runs): the rate the job's interfaces actually carried."""
import csv, glob, statistics as st, sys
d = sys.argv[1]
for p in ['rsg-0_05', 'rsg-0_2', 'rsg-0_4', 'rsg-0_7', 'moore-2-1', 'moore-2-2', 'moore-3-1']:
    sim = {(int(r['bytes']), r['algorithm']): r for r in csv.DictReader(open(f'{d}/cluster-{p}-sim.csv'))}
    meas = {}
    for f in glob.glob(f'{d}/cluster-{p}-*.csv'):
        if f.endswith('-sim.csv'):
            continue
        for r in csv.DictReader(open(f)):
            meas.setdefault((int(r['bytes']), r['algorithm']), []).append(float(r['median_us']) / 1e6)
    for b in [1048576, 4194304, 16777216]:
        out = []
        for a in ['naive', 'halving', 'combining', 'leader']:
            if (b, a) in sim and (b, a) in meas:
                mb = float(sim[(b, a)]['network_bytes']) / 1e6
                out.append('%-9s %3s msgs %5.0f MB %4.0f MB/s' % (a, sim[(b, a)]['max_rank_net_messages'], mb,
                                                               mb / st.median(meas[(b, a)])))
        if out:
            print('%-10s %8d  %s' % (p, b, ' | '.join(out)))

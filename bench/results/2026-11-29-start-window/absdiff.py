#!/usr/bin/env python3
"""absdiff.py DIR: for one cluster grid directory, each pattern's naive
median (measured, and nbr_sim's prediction from the grid's own -sim.csv)
at 16 B-16 KiB, and each other algorithm's time above naive, measured /
predicted, in us."""
import csv,glob,sys
d=sys.argv[1]
for pat in ['rsg-0_05','rsg-0_2','rsg-0_4','rsg-0_7','moore-2-1','moore-2-2','moore-3-1']:
    meas={}
    for f in glob.glob(f'{d}/cluster-{pat}-tiny.csv')+glob.glob(f'{d}/cluster-{pat}-small.csv'):
        for r in csv.DictReader(open(f)):
            meas[(r['algorithm'],int(r['bytes']))]=float(r['median_us'])
    pred={}
    for r in csv.DictReader(open(f'{d}/cluster-{pat}-sim.csv')):
        pred[(r['algorithm'],int(r['bytes']))]=float(r['seconds'])*1e6
    print(pat)
    for b in [16,256,1024,4096,16384]:
        if ('naive',b) not in meas: continue
        mn=meas[('naive',b)]; pn=pred[('naive',b)]
        s=f"  {b:6d} naive meas {mn:6.0f} pred {pn:6.0f} |"
        for a in ['halving','combining','leader']:
            s+=f" {a[:4]} {meas[(a,b)]-mn:+5.0f}/{pred[(a,b)]-pn:+5.0f}"
        print(s)

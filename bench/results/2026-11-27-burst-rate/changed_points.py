import sys
def load(f):
    d = {}
    for line in open(f):
        g, pat, b, alg, m, p, r = line.strip().split(';')
        d[(g, pat, int(b), alg)] = (float(m), float(p), float(r))
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in sorted(a):
    ma = abs(a[k][2] - 1) > 0.25; mb = abs(b[k][2] - 1) > 0.25
    if ma != mb:
        print('%s %-16s %8d %-9s %s meas %.2f pred %.2f -> %.2f' % (k[0], k[1], k[2], k[3], 'FIXED' if ma else 'NEW  ', a[k][0], a[k][1], b[k][1]))

#!/usr/bin/env python3
"""Checks median_machine.py on hand-made machine files: each number the
median (the rates of the paths inside a node the largest), a field in two
of three files kept and in one left out, the name replaced, and files
that disagree on a line, a word or a text value refused, and starts
more than 3x apart refused. With an nbr_sim
path as argument, also that nbr_sim prices with the merged file. Exit
status 0 when every check holds."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, 'median_machine.py')


def machine(start, pair=None, alpha=150.0, first=None, paths='network', nics='1', inside=1.8):
    cores = 'cores 2 per=job network_gbytes_per_s=0.16 eager_bytes=65472'
    if pair is not None:
        cores += ' pair_gbytes_per_s=%g' % pair
    if first is not None:
        cores += ' pair_first_gbytes_per_s=%g' % first
    cores += ' message_us=9 message_paths=%s' % paths
    return '\n'.join([
        '# a calibration', 'nbrcoll-machine 1', 'name one-day',
        'path copy    alpha_us=0.001 gbytes_per_s=24',
        'path device  alpha_us=0.001 gbytes_per_s=24',
        'path socket  alpha_us=48 gbytes_per_s=%g overhead_us=0.04' % inside,
        'path node    alpha_us=48 gbytes_per_s=%g overhead_us=0.04' % inside,
        'path gpu     alpha_us=48 gbytes_per_s=%g overhead_us=0.04' % inside,
        'path network alpha_us=%g gbytes_per_s=0.12 overhead_us=9' % alpha,
        'nics %s gbytes_per_s=0.118 burst_bytes=125000' % nics, cores,
        'call start_us=%g' % start, ''])


def run(files, tmp):
    paths = []
    for k, text in enumerate(files):
        p = os.path.join(tmp, 'c%d.machine' % k)
        with open(p, 'w') as f:
            f.write(text)
        paths.append(p)
    return subprocess.run([sys.executable, TOOL, 'merged'] + paths,
                          capture_output=True, text=True)


def fields(text):
    """{(line key, field): value} of a machine file's text."""
    out = {}
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith('#'):
            continue
        key = ' '.join(words[:2]) if words[0] == 'path' else words[0]
        for w in words:
            if '=' in w:
                k, v = w.split('=', 1)
                out[(key, k)] = v
    return out


def main():
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        r = run([machine(900, 0.12, 160, first=0.15, inside=2.5),
                 machine(1300, 0.14, 150, first=0.17, inside=1.25),
                 machine(1000, None, 290, inside=0.85)], tmp)
        check(r.returncode == 0, 'three calibrations merge (%s)' % r.stderr.strip())
        got = fields(r.stdout)
        check(got.get(('call', 'start_us')) and float(got[('call', 'start_us')]) == 1000,
              'start_us is the median 1000: %s' % got.get(('call', 'start_us')))
        check(float(got.get(('path network', 'alpha_us'), 0)) == 160,
              'network alpha_us is the median 160: %s' % got.get(('path network', 'alpha_us')))
        check(float(got.get(('cores', 'pair_gbytes_per_s'), 0)) == 0.13,
              'a field in two of three is kept at their median 0.13: %s'
              % got.get(('cores', 'pair_gbytes_per_s')))
        check(abs(float(got.get(('cores', 'pair_first_gbytes_per_s'), 0)) - 0.16) < 1e-12,
              'pair_first in two of three kept: %s'
              % got.get(('cores', 'pair_first_gbytes_per_s')))
        for path in ('socket', 'node', 'gpu'):
            check(float(got.get(('path ' + path, 'gbytes_per_s'), 0)) == 2.5,
                  'the %s path takes its fastest rate 2.5: %s'
                  % (path, got.get(('path ' + path, 'gbytes_per_s'))))
        check(got.get(('cores', 'message_paths')) == 'network', 'text values carried')
        check('name merged' in r.stdout.splitlines(), 'the name is replaced')
        check('nics 1 gbytes_per_s=' in r.stdout and 'cores 2 per=job ' in r.stdout,
              'the words without = are kept')
        check('#   call start_us: 900-1300' in r.stdout, 'the spread is a comment')
        merged = os.path.join(tmp, 'merged.machine')
        with open(merged, 'w') as f:
            f.write(r.stdout)

        r = run([machine(900, 0.12), machine(1300), machine(1000)], tmp)
        check(r.returncode == 0 and ('cores', 'pair_gbytes_per_s') not in fields(r.stdout),
              'a field in one of three is left out')
        check('pair_gbytes_per_s: in 1 of 3, left out' in r.stdout, 'and the comment says so')

        r = run([machine(900), machine(1000).replace('call start_us=1000\n', '')], tmp)
        check(r.returncode == 1 and 'different lines' in r.stderr,
              'files with different lines are refused: %d %s' % (r.returncode, r.stderr.strip()))
        r = run([machine(900), machine(1000, nics='2')], tmp)
        check(r.returncode == 1 and 'line nics differs' in r.stderr,
              'a different interface count is refused: %s' % r.stderr.strip())
        r = run([machine(900), machine(1000, paths='all')], tmp)
        check(r.returncode == 1 and 'message_paths differs' in r.stderr,
              'different text values are refused: %s' % r.stderr.strip())
        r = run([machine(1080), machine(10898), machine(5666)], tmp)
        check(r.returncode == 1 and 'more than 3x apart' in r.stderr,
              'starts over 3x apart (a busy host) are refused: %d %s'
              % (r.returncode, r.stderr.strip()))
        r = run([machine(990), machine(1380), machine(2900)], tmp)
        check(r.returncode == 0, 'starts under 3x apart merge: %s' % r.stderr.strip())
        r = subprocess.run([sys.executable, TOOL, 'x'], capture_output=True, text=True)
        check(r.returncode == 2, 'no files: usage')
        r = run([machine(900)], tmp)
        check(r.returncode == 0 and float(fields(r.stdout)[('call', 'start_us')]) == 900,
              'one file passes through')

        if len(sys.argv) > 1:
            r = subprocess.run([sys.argv[1], '--machine', merged, '--pattern', 'rsg',
                                '--density', '0.3', '--ranks', '16', '--ranks-per-node', '4',
                                '--min-bytes', '16', '--max-bytes', '16',
                                '--algorithms', 'naive,halving'], capture_output=True, text=True)
            check(r.returncode == 0 and 'halving' in r.stdout,
                  'nbr_sim prices with the merged file: %d %s' % (r.returncode, r.stderr.strip()))

    for f in failures:
        print('FAILED: ' + f)
    print('%s: %d failed' % (os.path.basename(__file__), len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())

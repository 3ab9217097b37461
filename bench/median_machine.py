#!/usr/bin/env python3
"""median_machine.py NAME FILE... : one machine file (topo/README.md's
format) from several calibrations of the same machine, on stdout.

Every key=value number is the median of the files' values; the lines, the
words without '=' (nics 1, cores 2 per=job) and the other values must be
the same in every file. A field that only some files write (nbr_calibrate
leaves out pair rates when its large pair is no slower) is kept, at the
median of those that have it, when more than half of them do, and left
out otherwise. Comment lines name the sources and each number's spread.

Why: on the emulated cluster one calibration's figures move from one MPI
job to the next more than within a job (naive's small call on RSG 0.3:
1068-1810 us over fourteen calibrations of one day), and a grid's many
jobs see the machine's usual state; the median of three calibrations
re-priced five grids 986 of 993 points within 25 % against 981 with their
own (docs/decisions.md, D35).

Except the rates of the paths inside a node (FASTEST): those take the
largest. A ping-pong inside a node shares the cores with the job's other
ranks, whose turns only ever slow it, and its rate moved 0.84-7.9 GB/s
over 86 calibrations of the emulated cluster. Priced at one rate, g1-g28
barely move between 2.5 and 5 GB/s (5939 and 5935 of 6036 points within
25 %, 5936 at their own) and fall to 5745 at 1.25; g29's median of three
(2.49, 1.25, 0.85) was 1.25 and missed 5 of its 225 points, which its
fastest prices right (docs/decisions.md, D36).

Refused: calibrations whose per-call starts lie more than SPREAD's
factor apart. A busy host makes them so (the ranks wait in sched_yield, and any
runnable process takes their turns): g33's were 1080, 5666 and 10898 us,
where the merged grids before spread 1.03-1.39x
(docs/decisions.md, D37)."""
import statistics
import sys


# (line key, field): merged as the largest of the files' values
FASTEST = {(('path', p), 'gbytes_per_s') for p in ('socket', 'node', 'gpu')}
# (line key, field): refused when the files' values lie further apart
SPREAD = {(('call',), 'start_us'): 3.0}


class MergeError(Exception):
    pass


def read_machine(path):
    """A machine file's lines (not comments): [(key, words, fields)], where
    key is what names the line (its first word; with the path's for path
    lines), words those without '=' and fields the key=value pairs in order."""
    lines = []
    with open(path) as f:
        for text in f:
            words = text.split()
            if not words or words[0].startswith('#'):
                continue
            plain = [w for w in words if '=' not in w]
            fields = [tuple(w.split('=', 1)) for w in words if '=' in w]
            key = tuple(plain[:2]) if plain[0] == 'path' else (plain[0],)
            lines.append((key, plain, fields))
    return lines


def number(value):
    try:
        return float(value)
    except ValueError:
        return None


def merge(name, paths):
    """The merged file's text."""
    files = [read_machine(p) for p in paths]
    keys = [[key for key, _, _ in lines] for lines in files]
    if any(k != keys[0] for k in keys[1:]):
        raise MergeError('the files have different lines: %s' % ' / '.join(
            ','.join(' '.join(k) for k in ks) for ks in keys))
    out = ['# %s: the median of %d calibrations (%s), the paths inside a node at '
           'their fastest; each number below, least-most:' % (name, len(paths), ' '.join(paths))]
    body = []
    for i, key in enumerate(keys[0]):
        plains = [lines[i][1] for lines in files]
        if any(p != plains[0] for p in plains[1:]):
            raise MergeError('line %s differs: %s' % (' '.join(key), ' / '.join(
                ' '.join(p) for p in plains)))
        if key == ('name',):
            body.append('name %s' % name)
            continue
        order, values = [], {}
        for lines in files:
            for field, value in lines[i][2]:
                if field not in values:
                    order.append(field)
                    values[field] = []
                values[field].append(value)
        words = list(plains[0])
        for field in order:
            vals = values[field]
            if 2 * len(vals) <= len(files):
                out.append('#   %s %s: in %d of %d, left out' % (' '.join(key), field,
                                                                  len(vals), len(files)))
                continue
            nums = [number(v) for v in vals]
            if any(n is None for n in nums):
                if any(v != vals[0] for v in vals[1:]):
                    raise MergeError('%s %s differs: %s' % (' '.join(key), field, ' / '.join(vals)))
                words.append('%s=%s' % (field, vals[0]))
                continue
            limit = SPREAD.get((key, field))
            if limit and min(nums) > 0 and max(nums) > limit * min(nums):
                raise MergeError('%s %s %.6g-%.6g: more than %gx apart; was the host busy while '
                                 'they ran? calibrate again with nothing beside'
                                 % (' '.join(key), field, min(nums), max(nums), limit))
            pick = max if (key, field) in FASTEST else statistics.median
            words.append('%s=%.17g' % (field, pick(nums)))
            if min(nums) != max(nums):
                out.append('#   %s %s: %.6g-%.6g' % (' '.join(key), field, min(nums), max(nums)))
        body.append(' '.join(words))
    return '\n'.join(out + body) + '\n'


def main(argv):
    if len(argv) < 3:
        sys.stderr.write('usage: median_machine.py NAME FILE...\n')
        return 2
    try:
        sys.stdout.write(merge(argv[1], argv[2:]))
    except (OSError, MergeError) as e:
        sys.stderr.write('median_machine: %s\n' % e)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""dropin_speedup.py RUN.txt | PLAIN.txt DROPIN.txt: the speedup table of
plain_mpi_bench under the drop-in against MPI's own collectives.

With one file (a run with --reference yes): each row set against the
"reference" rows of the same run, MPI's collective on a communicator the
drop-in leaves alone, timed interleaved with it; the way to compare on a
machine whose runs drift. With two files: the same binary run as it is
and under the drop-in. Each row: MPI's and the drop-in's time per call
(median and the min-max of the repeats) and their ratio (MPI / drop-in:
above 1, the drop-in is faster; 'worst' divides MPI's fastest repeat by
the drop-in's slowest). Fails (exit 1) unless every byte received was
right and the checksums of what was received agree row by row."""
import re
import sys

LINE = re.compile(r"^(reference )?(\w+) (\w+) (\d+) B: min ([\d.]+) median ([\d.]+) max ([\d.]+) us, "
                  r"wrong bytes (\d+), checksum ([0-9a-f]+)$")


def read(path):
    """The run's rows and its reference rows, by (collective, form, bytes)."""
    rows, reference = {}, {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line.strip())
            if m:
                key = (m.group(2), m.group(3), int(m.group(4)))
                (reference if m.group(1) else rows)[key] = dict(
                    min=float(m.group(5)), median=float(m.group(6)), max=float(m.group(7)),
                    wrong=int(m.group(8)), checksum=m.group(9))
    return rows, reference


def main():
    if len(sys.argv) == 2:
        dropin, plain = read(sys.argv[1])
    elif len(sys.argv) == 3:
        plain, dropin = read(sys.argv[1])[0], read(sys.argv[2])[0]
    else:
        sys.exit(__doc__)
    problems = []
    if not plain or set(plain) != set(dropin):
        problems.append("the two runs do not have the same rows")
    print("| collective | form | bytes | MPI median us (min-max) | drop-in median us (min-max) "
          "| speedup (median) | worst |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for key in sorted(plain, key=lambda k: (k[0], k[2], k[1])):
        p, d = plain[key], dropin.get(key)
        if d is None:
            continue
        if p["wrong"] or d["wrong"]:
            problems.append(f"{key}: wrong bytes (MPI {p['wrong']}, drop-in {d['wrong']})")
        if p["checksum"] != d["checksum"]:
            problems.append(f"{key}: checksums differ")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {p['median']:.1f} ({p['min']:.1f}-{p['max']:.1f}) "
              f"| {d['median']:.1f} ({d['min']:.1f}-{d['max']:.1f}) "
              f"| {p['median'] / d['median']:.2f}x | {p['min'] / d['max']:.2f}x |")
    for problem in problems:
        print("dropin_speedup:", problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

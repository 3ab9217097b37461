#!/usr/bin/env python3
"""nbr_spmm end to end on N ranks: every matrix of tests/data/matrices,
every algorithm, --check, on host buffers split by rows and on emulated
device buffers split by nonzeros. The graph each run builds (its --graph
file, read back from the communicators) must equal the one this script
works out on its own from the Matrix Market file; every row of the CSV must
say "ok". With --errors, malformed inputs must fail cleanly instead. With
--gpu, device buffers on a real GPU: the GPU kernel's C checked against the
serial CPU product, its time shown beside the CPU kernel's on host buffers;
exit 77 (skip) with the reason where there is no GPU.

usage: test_spmm.py --spmm BIN --ranks N [--mpirun CMD] [--errors | --gpu]
"""
import argparse
import csv
import glob
import gzip
import os
import re
import subprocess
import sys
import tempfile

ALGORITHMS = "mpi,naive,halving,combining,leader,auto"
MATRICES = sorted(glob.glob(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
    "matrices", "*.mtx.gz")))


def read_pattern(path):
    """(rows, cols, [sorted distinct columns of each row]), mirrored."""
    with gzip.open(path, "rt") as f:
        header = f.readline().split()
        symmetric = header[4].lower() in ("symmetric", "skew-symmetric")
        line = f.readline()
        while line.startswith("%") or not line.strip():
            line = f.readline()
        rows, cols, entries = (int(v) for v in line.split())
        rowsets = [set() for _ in range(rows)]
        for _ in range(entries):
            i, j = (int(v) - 1 for v in f.readline().split()[:2])
            rowsets[i].add(j)
            if symmetric:
                rowsets[j].add(i)
    return rows, cols, [sorted(s) for s in rowsets]


def split(rows, cols, pattern, ranks, how):
    """First row of A and of B of every rank, ranks + 1 entries each."""
    if how == "nnz":
        offsets = [0]
        for r in pattern:
            offsets.append(offsets[-1] + len(r))
        nnz = offsets[-1]
        a_first = []
        for r in range(ranks + 1):
            i = 0
            while i < rows and offsets[i] * ranks < r * nnz:
                i += 1
            a_first.append(rows if r == ranks else i)
    else:
        a_first = [r * rows // ranks for r in range(ranks + 1)]
    b_first = a_first if rows == cols else [r * cols // ranks
                                            for r in range(ranks + 1)]
    return a_first, b_first


def expected_graph(path, ranks, how):
    """{(dst, src): rows} of the allgatherv: src sends dst all of its B rows
    any other rank needs."""
    rows, cols, pattern = read_pattern(path)
    a_first, b_first = split(rows, cols, pattern, ranks, how)
    owner = [0] * cols
    for q in range(ranks):
        for c in range(b_first[q], b_first[q + 1]):
            owner[c] = q
    needed = set()
    sources = {}
    for r in range(ranks):
        for i in range(a_first[r], a_first[r + 1]):
            for c in pattern[i]:
                if owner[c] != r:
                    needed.add(c)
                    sources.setdefault(r, set()).add(owner[c])
    sent = [sum(1 for c in range(b_first[q], b_first[q + 1]) if c in needed)
            for q in range(ranks)]
    return {(r, q): sent[q] for r in sources for q in sources[r]}


def read_graphs(path):
    """{matrix: [(dst, src, rows), ...]} from an nbr_spmm --graph file."""
    graphs, current = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("# matrix "):
                current = graphs.setdefault(line.split()[2], [])
            else:
                current.append(tuple(int(v) for v in line.split()))
    return graphs


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=600)


def check_runs(args, tmp):
    failures = []
    launch = args.mpirun.split() + ["-np", str(args.ranks)]
    for memory, how in (("host", "rows"), ("device", "nnz")):
        graph = os.path.join(tmp, "graph-%s.txt" % memory)
        table = os.path.join(tmp, "spmm-%s.csv" % memory)
        cmd = launch + [args.spmm, "--partition", how, "--memory", memory,
                        "--algorithms", ALGORITHMS, "--check", "--cols", "5",
                        "--iters", "2", "--warmup", "0", "--graph", graph,
                        "--csv", table]
        if args.ranks > 1:
            cmd += ["--ranks-per-node", str((args.ranks + 1) // 2)]
        for m in MATRICES:
            cmd += ["--matrix", m]
        env = dict(os.environ, NBR_DEVICE="emulate" if memory == "device"
                   else "off")
        p = run(cmd, env)
        if p.returncode != 0:
            failures.append("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode,
                                                   p.stdout[-3000:],
                                                   p.stderr[-3000:]))
            continue
        built = read_graphs(graph)
        for m in MATRICES:
            name = os.path.basename(m)
            want = expected_graph(m, args.ranks, how)
            got = {(d, s): n for d, s, n in built.get(name, [])}
            if got != want:
                wrong = sorted(set(got.items()) ^ set(want.items()))[:6]
                failures.append("%s, %s split, %d ranks: the graph differs "
                                "(first differences (dst, src): rows %s)"
                                % (name, how, args.ranks, wrong))
            # in-lists ascending, as the allgatherv's counts assume
            dsts = [(d, s) for d, s, _ in built.get(name, [])]
            if dsts != sorted(dsts):
                failures.append("%s: sources not ascending" % name)
        with open(table) as f:
            rows = list(csv.DictReader(f))
        seen = {(r["matrix"], r["algorithm"]) for r in rows}
        for m in MATRICES:
            for a in ALGORITHMS.split(","):
                if (os.path.basename(m), a) not in seen:
                    failures.append("%s %s: no CSV row" % (m, a))
        for r in rows:
            if r["check"] != "ok" or r["memory"] != memory:
                failures.append("%s %s %s: check %s" % (r["matrix"], memory,
                                                        r["algorithm"],
                                                        r["check"]))
        print("%d ranks, %s buffers, %s split: %d matrices, %d rows checked"
              % (args.ranks, memory, how, len(MATRICES), len(rows)))
    return failures


def write(path, data, gz=False):
    with (gzip.open(path, "wb") if gz else open(path, "wb")) as f:
        f.write(data)


def check_errors(args, tmp):
    """Malformed files end the run with the file and line, no crash."""
    failures = []
    general = b"%%MatrixMarket matrix coordinate real general\n"
    cases = {
        "header.mtx": (b"%%MatrixMarket matrix coordinate complex general\n",
                       ":1: field 'complex'"),
        "counts.mtx": (general + b"3 3 4\n1 1 1.0\n2 2 1.0\n",
                       ":4: the file ends after 2 of 4"),
        "range.mtx": (general + b"3 3 1\n4 1 1.0\n", ":3: row"),
    }
    for name, (text, _) in cases.items():
        write(os.path.join(tmp, name), text)
    # a gzip stream cut in half: zlib reports the missing end
    full = os.path.join(tmp, "whole.mtx.gz")
    lines = [general, b"200 200 400\n"] + [
        b"%d %d %d.5\n" % (1 + i % 200, 1 + (i * 7) % 200, i) for i in range(400)]
    write(full, b"".join(lines), gz=True)
    with open(full, "rb") as f:
        data = f.read()
    write(os.path.join(tmp, "cut.mtx.gz"), data[:len(data) // 2])
    cases["cut.mtx.gz"] = (None, "truncated or corrupt gzip data")
    cases["missing.mtx"] = (None, "cannot open")
    launch = args.mpirun.split() + ["-np", str(args.ranks)]
    for name, (_, expect) in cases.items():
        p = run(launch + [args.spmm, "--matrix", os.path.join(tmp, name),
                          "--iters", "1", "--warmup", "0"])
        said = p.stdout + p.stderr
        if p.returncode == 0 or expect not in said or "Segmentation" in said:
            failures.append("%s: exit %d, expected a message with '%s':\n%s"
                            % (name, p.returncode, expect, said[-2000:]))
    p = run([args.spmm, "--cols", "0"])
    if p.returncode != 2 or "bad value '0' for --cols" not in p.stderr:
        failures.append("--cols 0: exit %d: %s" % (p.returncode, p.stderr))
    p = run([args.spmm, "--matrix", MATRICES[0], "--algorithms", "copy"])
    if p.returncode != 2 or "'copy'" not in p.stderr:
        failures.append("--algorithms copy: exit %d: %s" % (p.returncode,
                                                            p.stderr))
    print("%d malformed inputs and 2 bad options refused" % (len(cases)))
    return failures


SKIP = 77


def check_gpu(args, tmp):
    """The GPU kernel against the CPU: returns (failures, skip reason)."""
    launch = args.mpirun.split() + ["-np", str(args.ranks)]
    compute = {}
    for memory in ("host", "device"):
        table = os.path.join(tmp, "gpu-%s.csv" % memory)
        cmd = launch + [args.spmm, "--memory", memory, "--check", "--iters", "5",
                        "--warmup", "1", "--algorithms", "mpi,auto", "--csv", table]
        for m in MATRICES:
            cmd += ["--matrix", m]
        env = dict(os.environ)
        env.pop("NBR_DEVICE", None)  # auto: the GPU runtime if there is one
        p = run(cmd, env)
        said = p.stdout + p.stderr
        if memory == "device":
            kernels = set(re.findall(r"kernel ([\w-]+);", p.stdout))
            if p.returncode != 0 and "nbr_mem_alloc failed" in said:
                return [], "no GPU here: nbr_mem_alloc failed"
            if p.returncode == 0 and kernels == {"cpu"}:
                return [], "no GPU here: the device buffers are not GPU memory"
        if p.returncode != 0:
            return ["%s: exit %d\n%s" % (" ".join(cmd), p.returncode, said[-3000:])], None
        if memory == "device" and kernels - {"cuda", "hip"}:
            return ["GPU run used kernels %s" % sorted(kernels)], None
        with open(table) as f:
            for r in csv.DictReader(f):
                if r["check"] != "ok":
                    return ["%s %s %s: check %s" % (r["matrix"], memory, r["algorithm"],
                                                    r["check"])], None
                if r["algorithm"] == "mpi":
                    compute[(r["matrix"], memory)] = (r["kernel"], float(r["compute_us"]))
    print("%-22s %16s %16s" % ("matrix", "cpu kernel us", "gpu kernel us"))
    for m in MATRICES:
        name = os.path.basename(m)
        host, dev = compute[(name, "host")], compute[(name, "device")]
        print("%-22s %16.1f %12.1f %s" % (name, host[1], dev[1], dev[0]))
    return [], None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spmm", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--mpirun", default="mpirun --oversubscribe")
    ap.add_argument("--errors", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    args = ap.parse_args()
    if len(MATRICES) < 9:
        print("test_spmm: expected the 9 matrices of tests/data/matrices, "
              "found %d" % len(MATRICES))
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        if args.gpu:
            failures, skip = check_gpu(args, tmp)
            if skip:
                print("test_spmm: SKIP: " + skip)
                return SKIP
        else:
            failures = (check_errors if args.errors else check_runs)(args, tmp)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks plot.py on hand-made CSVs of nbr_bench, nbr_sim and nbr_spmm:
one PNG per group, named after the CSV and the group, its paths (and
nothing else) on stdout, the panel layout in the PNG's size; and that bad
input (an unknown header, an empty file, no rows, no mpi, a bad number, no
gnuplot) fails with a message and draws nothing; and what is drawn, read
back from plot.py's own tables: speedups over mpi (over naive for nbr_sim
without mpi), mpi's line left out, failed checks not drawn. Exit status 0
when every check holds, 77 (skipped) when gnuplot is not installed."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(HERE, "plot.py")
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import plot  # noqa: E402
BENCH_HEAD = ("pattern,ranks,nodes,collective,algorithm,bytes,median_us,min_us,"
              "max_us,speedup_vs_mpi,inter_msgs_per_rank,inter_bytes_per_rank,"
              "offsocket_msgs_per_rank,counted,bandwidth_GBps,memory,"
              "intrasocket_msgs_per_rank,offsocket_msgs_max_per_rank,chosen\n")
SIM_HEAD = ("pattern,ranks,ranks_per_node,node_model,machine,collective,memory,"
            "bytes,algorithm,seconds,mean_seconds,speedup_vs_naive,"
            "max_rank_net_messages,net_bytes,floor_bytes,setup_seconds,"
            "estimate_seconds,runs,network_messages,network_bytes\n")
SPMM_HEAD = ("matrix,rows,nnz,cols,ranks,nodes,partition,memory,kernel,algorithm,"
             "ran,exchange_us,compute_us,total_us,total_min_us,total_max_us,"
             "speedup_vs_mpi,exchange_speedup_vs_mpi,inter_bytes,check\n")


def bench_csv(path, groups, with_mpi=True):
    """groups: [(collective, ranks, nodes, [patterns])]"""
    with open(path, "w") as f:
        f.write(BENCH_HEAD)
        for coll, ranks, nodes, patterns in groups:
            for p in patterns:
                for b in (8, 64, 512, 4096, 32768):
                    for alg, us in (("mpi", 100.0), ("naive", 110.0),
                                    ("halving", 60.0 + b / 1000), ("auto", 62.0)):
                        sp = "%.4f" % (100.0 / us) if with_mpi else "-"
                        if alg == "mpi" and not with_mpi:
                            continue
                        f.write('"%s",%d,%d,%s,%s,%d,%.3f,%.3f,%.3f,%s,1,8,0,'
                                'measured,0.1,host,0,0,%s\n'
                                % (p, ranks, nodes, coll, alg, b, us, us, us, sp, alg))


def sim_csv(path, mpi):
    with open(path, "w") as f:
        f.write(SIM_HEAD)
        algs = (("mpi",) if mpi else ()) + ("naive", "halving", "leader", "auto")
        for b in (1024, 4096, 16384):
            for alg in algs:
                t = {"halving": 5e-5, "leader": 2e-4 / (b / 1024)}.get(alg, 1e-4)
                f.write('"moore(d=2,r=1)",64,8,m,mach,allgatherv,host,%d,%s,%g,%g,'
                        '%.4f,3,100,50,0,%g,%s,3,100\n'
                        % (b, alg, t, t, 1e-4 / t, t, alg))


def spmm_csv(path):
    with open(path, "w") as f:
        f.write(SPMM_HEAD)
        for m in ("crack.mtx.gz", "can_256.mtx.gz", "ash292.mtx"):
            leader = "fail" if m == "crack.mtx.gz" else "ok"
            for alg, total, ex, check in (
                    ("mpi", 300, 200, "ok"), ("naive", 310, 210, "-"),
                    ("halving", 200, 100, "ok"), ("leader", 250, 150, leader),
                    ("auto", 205, 105, "ok")):
                ran = "halving" if alg == "auto" else alg
                f.write("%s,1000,9000,32,8,2,rows,host,cpu,%s,%s,%.3f,100.000,%.3f,"
                        "%.3f,%.3f,%.4f,%.4f,4096,%s\n"
                        % (m, alg, ran, ex, total, total, total, 300.0 / total,
                           200.0 / ex, check))


def png_size(path):
    """(width, height) of a PNG, None when the file is not one."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def run(args, path_env=None):
    env = dict(os.environ)
    if path_env is not None:
        env["PATH"] = path_env
    return subprocess.run([sys.executable, PLOT] + args, capture_output=True,
                          text=True, env=env)


def main():
    failures = []

    def check(name, ok, detail=""):
        if not ok:
            failures.append(name + (": " + detail if detail else ""))

    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good.csv")
        bench_csv(good, [("allgather", 8, 2, ["rsg(d=0.40,s=1)", "moore(d=2,r=1)"])])

        # the numbers behind the lines and bars
        kind, rows = plot.read(good)
        lines = plot.curves(rows, good)
        (title, name, per_pattern), = lines.values()
        check("bench kind", kind == "nbr_bench", kind)
        check("bench: patterns in order",
              list(per_pattern) == ["rsg(d=0.40,s=1)", "moore(d=2,r=1)"],
              str(per_pattern))
        algs = per_pattern["moore(d=2,r=1)"]
        check("bench: mpi's own line left out",
              sorted(algs) == ["auto", "halving", "naive"], str(sorted(algs)))
        check("bench: speedup over mpi", abs(algs["naive"][64] - 100 / 110) < 1e-3
              and abs(algs["auto"][32768] - 100 / 62) < 1e-3, str(algs["naive"]))
        check("bench: title", "MPI_Neighbor_allgather" in title[0] and
              "8 ranks on 2 nodes" in title[1], str(title))
        for mpi in (True, False):
            sp = os.path.join(d, "unit-sim.csv")
            sim_csv(sp, mpi)
            kind, rows = plot.read(sp)
            (title, name, per_pattern), = plot.sim_curves(rows, sp).values()
            algs = per_pattern["moore(d=2,r=1)"]
            base = "mpi" if mpi else "naive"
            check("sim kind", kind == "nbr_sim", kind)
            check("sim over %s: its own line left out" % base, base not in algs and
                  "halving" in algs and ("naive" in algs) == mpi, str(sorted(algs)))
            check("sim over %s: 2x for halving" % base,
                  all(abs(v - 2) < 1e-9 for v in algs["halving"].values()),
                  str(algs["halving"]))
            check("sim over %s: leader by size" % base,
                  abs(algs["leader"][4096] - 2) < 1e-9, str(algs["leader"]))
            check("sim over %s: title" % base,
                  ("MPI_Neighbor_allgatherv" if mpi else "over naive") in title[0],
                  str(title))
        sp = os.path.join(d, "unit-spmm.csv")
        spmm_csv(sp)
        kind, rows = plot.read(sp)
        (g,) = plot.spmm_groups(rows, sp).values()
        check("spmm kind", kind == "nbr_spmm", kind)
        check("spmm: matrices in order, .mtx(.gz) cut",
              g["matrices"] == ["crack", "can_256", "ash292"], str(g["matrices"]))
        check("spmm: mpi left out", g["algs"] == ["naive", "halving", "leader", "auto"],
              str(g["algs"]))
        check("spmm: total and exchange speedups",
              g["values"].get(("can_256", "halving")) == (1.5, 2.0), str(g["values"]))
        check("spmm: a failed check is not drawn",
              ("crack", "leader") not in g["values"]
              and g["failed"] == ["crack/leader"], str(g["failed"]))
        check("spmm: what auto ran", g["ran"].get("ash292") == "halving", str(g["ran"]))

        # without gnuplot: a clear message, whatever else is installed
        out = run([good, "--out", os.path.join(d, "nognuplot")], path_env=d)
        check("no gnuplot fails",
              out.returncode != 0 and "gnuplot not found" in out.stderr, out.stderr)
        check("no gnuplot draws nothing",
              not os.path.exists(os.path.join(d, "nognuplot")))
        if not shutil.which("gnuplot"):
            print("gnuplot not installed: plot checks skipped")
            return 77 if not failures else 1

        # nbr_bench: two groups (collectives) in one CSV, two patterns each
        two = os.path.join(d, "two.csv")
        bench_csv(two, [("allgather", 8, 2, ["rsg(d=0.40,s=1)", "moore(d=2,r=1)"]),
                        ("alltoallv", 8, 2, ["rsg(d=0.40,s=1)", "moore(d=2,r=1)"])])
        sim_mpi, sim_naive = os.path.join(d, "sim.csv"), os.path.join(d, "simnaive.csv")
        sim_csv(sim_mpi, True)
        sim_csv(sim_naive, False)
        spmm = os.path.join(d, "spmm.csv")
        spmm_csv(spmm)
        outdir = os.path.join(d, "png")
        out = run(["--out", outdir, two, sim_mpi, sim_naive, spmm])
        check("plot.py succeeds", out.returncode == 0, out.stderr)
        check("nothing on stderr", out.stderr == "", out.stderr)
        want = ["two-allgather-host-8r2n.png", "two-alltoallv-host-8r2n.png",
                "sim-allgatherv-host-64r8n-m-mach.png",
                "simnaive-allgatherv-host-64r8n-m-mach.png",
                "spmm-8r2n-k32-rows-host.png"]
        printed = out.stdout.splitlines()
        check("one path per PNG, in order",
              printed == [os.path.join(outdir, w) for w in want], repr(printed))
        sizes = {}
        for w in want:
            p = os.path.join(outdir, w)
            if not os.path.isfile(p):
                check("%s written" % w, False)
                continue
            sizes[w] = png_size(p)
            check("%s is a PNG" % w, sizes[w] is not None)
            check("%s is not blank (%d bytes)" % (w, os.path.getsize(p)),
                  os.path.getsize(p) > 10000)
        # two patterns: two panels side by side; one pattern: one panel;
        # spmm: total and exchange stacked
        if sizes.get(want[0]) and sizes.get(want[2]) and sizes.get(want[4]):
            w2, h2 = sizes[want[0]]
            w1, h1 = sizes[want[2]]
            check("two panels side by side", w2 == 2 * w1 and h2 == h1,
                  "%s vs %s" % (sizes[want[0]], sizes[want[2]]))
            check("spmm: two panels stacked", sizes[want[4]][1] == 2 * 380,
                  str(sizes[want[4]]))
        # default folder: beside the CSV
        out = run([good])
        check("default: beside the CSV",
              out.returncode == 0 and out.stdout.split() == [
                  os.path.join(d, "good-allgather-host-8r2n.png")],
              out.stdout + out.stderr)

        # bad input: a message naming the file and the fault; nothing drawn,
        # not even for the good CSV given with it
        bad = {"unknown.csv": ("a,b,c\n1,2,3\n", "unknown header"),
               "empty.csv": ("", "empty"),
               "headonly.csv": (BENCH_HEAD, "nothing to plot"),
               "badnumber.csv": (BENCH_HEAD + '"p",8,2,allgather,naive,xx,1,1,1,'
                                 'fast,0,0,0,measured,0,host,0,0,naive\n',
                                 "not a number"),
               "nompi.csv": (None, "nothing to plot")}
        nompi = os.path.join(d, "nompi.csv")
        bench_csv(nompi, [("allgather", 8, 2, ["p"])], with_mpi=False)
        for name, (text, message) in bad.items():
            p = os.path.join(d, name)
            if text is not None:
                with open(p, "w") as f:
                    f.write(text)
            o = os.path.join(d, "bad-" + name)
            out = run(["--out", o, good, p])
            check("%s fails" % name, out.returncode != 0)
            check("%s: message names the file and says %r" % (name, message),
                  p in out.stderr and message in out.stderr, out.stderr)
            check("%s: nothing printed on stdout" % name, out.stdout == "", out.stdout)
            check("%s: nothing drawn" % name, not os.path.exists(o))
        out = run([os.path.join(d, "missing.csv")])
        check("missing file fails", out.returncode != 0 and "missing.csv" in out.stderr,
              out.stderr)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("plot checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# The demo: installs what is missing, builds nbr_bench, nbr_sim and the
# drop-in library (Release, host code only) in ${DEMO_BUILD_DIR:-build-demo}
# (its own directory: scripts/test.sh builds build/ with the tests), and
# times nbrcoll's default algorithm (auto) against the MPI library's own
# MPI_Neighbor_allgather, the results of both checked bit-exact before
# timing, 4 KiB to 1 MiB per neighbor, on two graphs: a Moore stencil
# (2-D, radius 2: 24 neighbors) and a dense random graph (RSG, edge
# probability 0.7).
#
# As root where network namespaces work: on an emulated cluster of 4 nodes
# of 4 ranks joined by 1 Gbit/s links (bench/cluster/local-cluster.sh,
# which removes them again), auto pricing plans with that cluster's
# calibrated machine file (topo/emulated-4x4-1gbit.machine; calibrate your
# own with nbr_calibrate where the host differs). Elsewhere: on 4 virtual
# nodes of 2 ranks on this machine (shared memory only: little for auto to
# win), and nbr_sim's prediction of the same graphs (64 B to 1 MiB) on a Frontier-like
# machine of 64 nodes of 8 ranks (topo/frontier-slingshot.machine,
# topo/frontier-mi250x.topo).
#
# Then one unmodified MPI program run without and with the drop-in, the
# plot of the timings (a PNG; bench/plot.py, gnuplot) and, as the last
# line, what auto gained over MPI's own collective.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${DEMO_BUILD_DIR:-build-demo}
out=$build/demo
echo "demo: building nbr_bench, nbr_sim and the drop-in in $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DNBR_BUILD_TESTS=OFF \
  -DNBR_BUILD_BENCH=ON -DNBR_ENABLE_HIP=OFF -DNBR_ENABLE_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target nbr_bench nbr_sim nbrcoll_mpi >/dev/null
bench=$build/bench/nbr_bench
sim=$build/tools/nbr_sim
rm -rf "$out"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

graphs=(
  "moore --pattern moore --dims 2 --radius 2"
  "rsg --pattern rsg --density 0.7 --seed 1"
)
# each round times 5 calls of one algorithm in a row, as a program calls
# its collective; 4 rounds a size
# shellcheck disable=SC2054 # mpi,auto is one argument
timing=(--collective allgather --min-bytes 4Ki --max-bytes 1Mi --step 4
        --warmup 5 --iters 20 --block 5 --algorithms mpi,auto)
# bytes, algorithm (auto: the plan it ran), median us, speedup over mpi
table() { awk '$1 ~ /^[0-9]+(Ki|Mi)?$/ && $2 ~ /^(mpi|auto)/ {printf "  %6s  %-16s %12s us  %5sx\n", $1, $2, $3, $6}' "$1"; }

# Where the emulated cluster can run: root, and a network namespace can
# be made (containers often forbid it).
# DEMO_CLUSTER=0 takes the single-machine path anyway.
why=""
if [[ ${DEMO_CLUSTER:-1} == 0 ]]; then
  why="DEMO_CLUSTER=0"
elif ((EUID != 0)); then
  why="not root (network namespaces and tc need it)"
elif ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  why="ip or tc missing (iproute2)"
elif ! { ip netns add "nbrdemo-probe-$$" 2>/dev/null && ip netns delete "nbrdemo-probe-$$"; }; then
  why="'ip netns add' failed (no permission for network namespaces here)"
fi

# All ranks share this machine's cores and yield them to any other busy
# process: timings from a busy host say little. Busy: under half the CPU
# time idle over a second (the load average would still count the build).
busy=$(awk '/^cpu /{print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat
       sleep 1
       awk '/^cpu /{print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat)
if awk '{i[NR] = $1; t[NR] = $2} END { exit !(t[2] > t[1] && (i[2] - i[1]) / (t[2] - t[1]) < 0.5) }' <<<"$busy"; then
  echo "demo: warning: this host is busy (under half its CPU time idle); the timings below are slowed and noisy"
fi

# One launcher for either path; the rest of a graph's run is the same.
if [[ -z $why ]]; then
  nodes=4 rpn=4
  where="on $nodes emulated nodes"
  echo "demo: $nodes emulated nodes x $rpn ranks, 1 Gbit/s links (bench/cluster/local-cluster.sh)"
  launch=(env NBR_MACHINE=topo/emulated-4x4-1gbit.machine bench/cluster/local-cluster.sh "$nodes" "$rpn")
  layout=()
else
  nodes=4 rpn=2
  where="on $nodes virtual nodes of one machine"
  echo "demo: no emulated cluster: $why; running on $nodes virtual nodes of $rpn ranks on this machine, and nbr_sim's prediction for a Frontier-like machine"
  launch=(mpirun --oversubscribe -np $((nodes * rpn)))
  layout=(--ranks-per-node "$rpn")
fi
for g in "${graphs[@]}"; do
  read -r name args <<<"$g"
  echo "demo: $name"
  # shellcheck disable=SC2086 # $args: the graph's options, split on purpose
  "${launch[@]}" "$bench" $args "${layout[@]}" "${timing[@]}" --csv "$out/$name.csv" \
    >"$out/$name.txt" 2>&1 || { cat "$out/$name.txt" >&2; exit 1; }
  table "$out/$name.txt"
  if [[ -n $why ]]; then
    # shellcheck disable=SC2086
    "$sim" --machine topo/frontier-slingshot.machine --node-model topo/frontier-mi250x.topo \
      --ranks 512 --ranks-per-node 8 $args --collective allgather --algorithms mpi,auto \
      --min-bytes 64 --max-bytes 1Mi --step 4 --csv "$out/$name-frontier.csv" >"$out/$name-frontier.txt"
  fi
done
# one CSV (one header), so that the plot shows both graphs side by side
{
  head -n 1 "$out/${graphs[0]%% *}.csv"
  for g in "${graphs[@]}"; do tail -n +2 "$out/${g%% *}.csv"; done
} >"$out/demo.csv"
echo "demo: CSV $out/demo.csv"

# One unmodified MPI program (it knows nothing of nbrcoll: nonblocking
# neighborhood collectives waited on beside its own requests), without and
# with the drop-in: the same answer, and nbrcoll's log says it carried them.
# (GCC takes Open MPI's MPI_UNWEIGHTED sentinel for an empty array)
mpicc -O2 -Wno-stringop-overread tests/dropin/rsg_nonblocking.c -o "$out/rsg_nonblocking"
echo "plain MPI:  $(mpirun --oversubscribe -np 8 "$out/rsg_nonblocking")"
echo "drop-in:    $(mpirun --oversubscribe -np 8 -x LD_PRELOAD="$PWD/$build/src/libnbrcoll_mpi.so" \
  -x NBR_RANKS_PER_NODE=4 -x NBR_LOG=info "$out/rsg_nonblocking" 2>"$out/dropin.log")"
grep -m2 "info\] comm 0" "$out/dropin.log" || true

# The timings as a figure: auto's speedup over mpi against the message
# size, one panel per graph (bench/plot.py, gnuplot).
python3 bench/plot.py "$out/demo.csv" | sed 's/^/plot: /'
if [[ -n $why ]]; then
  {
    head -n 1 "$out/${graphs[0]%% *}-frontier.csv"
    for g in "${graphs[@]}"; do tail -n +2 "$out/${g%% *}-frontier.csv"; done
  } >"$out/frontier.csv"
  python3 bench/plot.py "$out/frontier.csv" | sed 's/^/plot (predicted): /'
fi

# The gain, in one line: auto's speedups over MPI's own collective (each
# size's median time), lowest to highest over the sizes, per graph.
python3 - "$out" "$where" "${graphs[@]%% *}" <<'EOF'
import csv, sys
out, where, names = sys.argv[1], sys.argv[2], sys.argv[3:]

def span(xs):
    lo, hi = min(xs), max(xs)
    return "%.2fx" % lo if abs(hi - lo) < 0.005 else "%.2fx-%.2fx" % (lo, hi)

def label(name):
    return "Moore" if name == "moore" else "RSG" if name == "rsg" else name

measured, predicted = [], []
for name in names:
    rows = list(csv.DictReader(open("%s/%s.csv" % (out, name))))
    xs = [float(r["speedup_vs_mpi"]) for r in rows
          if r["algorithm"] == "auto" and r["speedup_vs_mpi"] not in ("", "-")]
    if not xs:
        sys.exit("demo: no auto speedups in %s/%s.csv" % (out, name))
    measured.append("%s (%s)" % (span(xs), label(name)))
    try:
        sim = list(csv.DictReader(open("%s/%s-frontier.csv" % (out, name))))
    except FileNotFoundError:
        continue
    # the speedup over naive's plan: MPI's own collective (one message per edge)
    ys = [float(r["speedup_vs_naive"]) for r in sim if r["algorithm"] == "auto"]
    if ys:
        predicted.append("%s (%s)" % (span(ys), label(name)))
line = "auto vs MPI's own neighbor allgather %s, 4 KiB-1 MiB per neighbor: speedup %s" % (
    where, ", ".join(measured))
if predicted:
    line += "; predicted for a Frontier-like machine of 64 nodes x 8 ranks, 64 B-1 MiB: %s" % ", ".join(predicted)
print(line)
EOF

#!/usr/bin/env bash
# grid.sh: the allgather grid. Times mpi, naive, halving, combining,
# leader and auto (interleaved, checked bit-exact first) over RSG densities
# and Moore stencils, sizes in powers of 4, on the emulated 4 x 4 cluster
# (bench/cluster/local-cluster.sh, as root) and on one node of 8 ranks; asks
# nbr_sim for its prediction of the same points; measures every point that
# is not ok, or whose prediction misses, again in fresh runs (--confirm),
# the whole grid again with --runs; then bench/grid_report.py writes the
# verdict per point, the simulator table and the plots.
#
# Run with --help for usage.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD_DIR:-build}
OUT=""
CONFIGS="cluster,node"
PATTERNS="rsg:0.05,rsg:0.2,rsg:0.4,rsg:0.7,moore:2:1,moore:2:2,moore:3:1"
MIN=16 MAX=16Mi TINY=1Ki SPLIT=64Ki MAXMEM=640Mi
# warm-up: nbr_bench adds auto's trial calls itself (nbr_comm_trial_pending)
ITERS_TINY=1000 ITERS_SMALL=200 ITERS_LARGE=7 NODE_ITERS_LARGE=75 WARMUP=5
# Blocks of 5 calls of one algorithm in a row, as a program calls its
# collective, algorithms still taking turns block by block. One call each
# measured what the other plans' calls leave behind: on one node of 8,
# halving ran 0.86-0.94x of MPI's call with all six timed in turns and
# 1.08-1.16x alone (docs/decisions.md, D27).
BLOCK=5
ALGS=mpi,naive,halving,combining,leader,auto
CLUSTER_MACHINE=calibrate
NODE_MACHINE=default
CONFIRM=2
RUNS=1
CALIBRATIONS=3

usage() {
  cat <<EOF
Usage: bench/grid.sh --out DIR [options]

  --out DIR          where CSVs, logs, report and plots go (required)
  --configs LIST     cluster (4 emulated nodes x 4 ranks, needs root and
                     iproute2) and/or node (8 ranks on this node) [$CONFIGS]
  --patterns LIST    rsg:DENSITY and moore:DIMS:RADIUS items [$PATTERNS]
  --min-bytes B --max-bytes B   per-neighbor sizes, powers of 4 [$MIN, $MAX]
  --tiny B           sizes up to B get --iters-tiny timed rounds: calls of
                     a few hundred us whose medians need many samples to
                     settle within a few % [$TINY]
  --split B          larger sizes up to B get --iters-small timed rounds,
                     larger ones --iters-large [$SPLIT]
  --iters-tiny N --iters-small N --iters-large N --warmup N
                     [$ITERS_TINY, $ITERS_SMALL, $ITERS_LARGE, $WARMUP]
  --node-iters-large N  --iters-large of the node config: its large calls
                     cost 0.3-300 ms, not seconds as on the cluster, and its
                     single calls there spread by 2x: 7 calls left
                     medians 10-15 % apart between two runs of one call,
                     25 (5 blocks) 0.84-1.15x between auto running MPI's
                     call and the mpi row [$NODE_ITERS_LARGE]
  --block K          nbr_bench --block: each round times K calls of an
                     algorithm in a row (as a program calls it); 1: one
                     call each [$BLOCK]
  --algorithms LIST  [$ALGS]
  --max-mem B        nbr_bench skips sizes needing more buffer memory per
                     rank (16 ranks share this machine's memory) [$MAXMEM]
  --cluster-machine F  machine file auto prices plans with on the cluster
                     (NBR_MACHINE) and nbr_sim predicts with; 'calibrate':
                     nbr_calibrate measures the configuration first and
                     writes DIR/cluster.machine (70-80 s a run; the emulated
                     cluster's start-ups move with the host's load from day
                     to day, topo/emulated-4x4-1gbit.machine is one such
                     day) [$CLUSTER_MACHINE]
  --calibrations N   with 'calibrate': nbr_calibrate runs N times, each
                     its own MPI job (DIR/CONFIG-calK.machine), and the
                     machine file is each number's median over them
                     (median_machine.py): one job's figures move from job
                     to job more than within one (naive's small call
                     1068-1810 us over fourteen calibrations of a day) [$CALIBRATIONS]
  --node-machine F   the same for the node config ('default': the
                     library's built-in machine, NBR_MACHINE unset, what a
                     user who sets nothing gets) [$NODE_MACHINE]
  --runs N           time the whole grid N times, config by config (one
                     calibration each), every point judged and priced on
                     the medians over its runs: a point's measured speedup
                     over naive moves 1.1-1.2x between grids on the
                     emulated cluster (docs/decisions.md, D51);
                     run K (from 2) takes --order-seed 100+K, the first
                     nbr_bench's default order [$RUNS]
  --confirm N        fresh runs of each point whose first verdict is not ok
                     (a tie or a loss) or where a prediction of nbr_sim is
                     more than 25 % off (on a config calibrated in the
                     run), N rounds over them all; those points are judged
                     over their runs (the noise rule alone flags about one
                     point in ten of two identical runs) [$CONFIRM]

Needs a build with the bench and tools ($BUILD/bench/nbr_bench,
$BUILD/tools/nbr_sim, nbr_calibrate), python3 and
gnuplot for the plots (the report is written without gnuplot).
EOF
}

while (($#)); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --configs) CONFIGS=$2; shift 2 ;;
    --patterns) PATTERNS=$2; shift 2 ;;
    --min-bytes) MIN=$2; shift 2 ;;
    --max-bytes) MAX=$2; shift 2 ;;
    --tiny) TINY=$2; shift 2 ;;
    --split) SPLIT=$2; shift 2 ;;
    --iters-tiny) ITERS_TINY=$2; shift 2 ;;
    --iters-small) ITERS_SMALL=$2; shift 2 ;;
    --iters-large) ITERS_LARGE=$2; shift 2 ;;
    --node-iters-large) NODE_ITERS_LARGE=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --block) BLOCK=$2; shift 2 ;;
    --algorithms) ALGS=$2; shift 2 ;;
    --max-mem) MAXMEM=$2; shift 2 ;;
    --cluster-machine) CLUSTER_MACHINE=$2; shift 2 ;;
    --node-machine) NODE_MACHINE=$2; shift 2 ;;
    --confirm) CONFIRM=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --calibrations) CALIBRATIONS=$2; shift 2 ;;
    --help|-h) usage; exit 0 ;;
    *) echo "grid: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $OUT ]] || { echo "grid: --out DIR is required" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "grid: --runs takes a count of 1 or more" >&2; exit 2; }
[[ $CALIBRATIONS =~ ^[1-9][0-9]*$ ]] ||
  { echo "grid: --calibrations takes a count of 1 or more" >&2; exit 2; }
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# bytes of a size with an optional Ki/Mi suffix
to_bytes() {
  local v=$1
  case $v in
    *Ki|*K) echo $(( ${v%%K*} * 1024 )) ;;
    *Mi|*M) echo $(( ${v%%M*} * 1048576 )) ;;
    *) echo "$v" ;;
  esac
}
min_b=$(to_bytes "$MIN") max_b=$(to_bytes "$MAX") split_b=$(to_bytes "$SPLIT")
tiny_b=$(to_bytes "$TINY")
((tiny_b <= split_b)) || tiny_b=$split_b

# nbr_bench / nbr_sim graph options of one pattern item; its file tag
graph_args() {
  IFS=: read -r kind a b <<<"$1"
  case $kind in
    rsg) echo "--pattern rsg --density $a --seed 1" ;;
    moore) echo "--pattern moore --dims $a --radius $b" ;;
    *) echo "grid: bad pattern '$1'" >&2; exit 2 ;;
  esac
}
tag_of() { echo "$1" | tr ':.' '-_'; }
item_of() { echo "$1" | tr -- '-_' ':.'; } # a tag's pattern item

# launch_of NAME: sets launch, the command line a config's runs start with
launch_of() {
  case $1 in
    cluster) launch=(bench/cluster/local-cluster.sh 4 4) ;;
    node) launch=(mpirun --oversubscribe -np 8) ;;
    *) echo "grid: unknown config '$1'" >&2; exit 2 ;;
  esac
}

# iters_of CONFIG BYTES: the timed rounds of a size's pass
iters_of() {
  if (($2 <= tiny_b)); then echo "$ITERS_TINY"
  elif (($2 <= split_b)); then echo "$ITERS_SMALL"
  elif [[ $1 == node ]]; then echo "$NODE_ITERS_LARGE"
  else echo "$ITERS_LARGE"; fi
}

# the machine file each config's runs price with ('' or default: none)
declare -A MACHINE_OF=()
# the CSVs this run writes: the report reads these, not older ones in OUT
CSVS=()
CALIBRATED=() # configs whose machine nbr_calibrate measured in this run

# bench NAME MACHINE CSV LOG NBR_BENCH_ARGS...: one nbr_bench run of a config
bench() {
  local name=$1 machine=$2 csv=$3 log=$4
  shift 4
  local -a launch env=()
  launch_of "$name"
  [[ -n $machine && $machine != default ]] && env=(env "NBR_MACHINE=$machine")
  local -a cmd=("${env[@]}" "${launch[@]}" "$BUILD/bench/nbr_bench" "$@"
    --algorithms "$ALGS" --step 4 --warmup "$WARMUP" --block "$BLOCK" --max-mem "$MAXMEM"
    --csv "$csv")
  echo "grid: ${cmd[*]}" | tee "$log"
  # stdin from nowhere: mpirun forwards its stdin to rank 0
  "${cmd[@]}" </dev/null >>"$log" 2>&1 || { echo "grid: failed, see $log" >&2; exit 1; }
  CSVS+=("$csv")
}

# passes NAME MACHINE ITEM SUFFIX [SEED]: one pattern's bench passes, into
# CONFIG-TAG-PASS$SUFFIX.csv, in the orders of --order-seed SEED if given
passes() {
  local name=$1 machine=$2 item=$3 suffix=$4 seed=${5:-}
  local g tag pass lo hi iters
  local -a order=()
  [[ -z $seed ]] || order=(--order-seed "$seed")
  g=$(graph_args "$item")
  tag=$(tag_of "$item")
  # the smaller the calls, the more rounds (large ones cost seconds each)
  for pass in tiny small large; do
    case $pass in
      tiny) lo=$min_b hi=$tiny_b ;;
      small) lo=$((tiny_b * 4)) hi=$split_b ;;
      large) lo=$((split_b * 4)) hi=$max_b ;;
    esac
    ((lo >= min_b)) || lo=$min_b
    ((hi <= max_b)) || hi=$max_b
    ((lo <= hi)) || continue
    iters=$(iters_of "$name" "$lo")
    # shellcheck disable=SC2086
    bench "$name" "$machine" "$OUT/$name-$tag-$pass$suffix.csv" "$OUT/$name-$tag-$pass$suffix.txt" \
      $g --min-bytes "$lo" --max-bytes "$hi" --iters "$iters" "${order[@]}"
  done
}

# simulate NAME MACHINE ITEM RANKS RPN: nbr_sim on one pattern's points
simulate() {
  local name=$1 machine=$2 item=$3 ranks=$4 rpn=$5
  local g tag
  g=$(graph_args "$item")
  tag=$(tag_of "$item")
  # shellcheck disable=SC2086
  local -a sim=("$BUILD/tools/nbr_sim" --machine "$machine" $g
    --ranks "$ranks" --ranks-per-node "$rpn" --step 4
    --min-bytes "$min_b" --max-bytes "$max_b"
    --algorithms naive,halving,combining,leader
    --csv "$OUT/$name-$tag-sim.csv")
  echo "grid: ${sim[*]}" >"$OUT/$name-$tag-sim.txt"
  "${sim[@]}" >>"$OUT/$name-$tag-sim.txt"
  CSVS+=("$OUT/$name-$tag-sim.csv")
}

# run_config NAME RANKS RPN MACHINE: the bench passes of every pattern,
# each followed by nbr_sim on the same points; then again for each further
# run (--runs: files CONFIG-TAG-PASS-runK.csv), under the same calibration.
run_config() {
  local name=$1 ranks=$2 rpn=$3 machine=$4
  local -a launch
  launch_of "$name"
  if [[ $machine == calibrate ]]; then
    CALIBRATED+=("$name")
    machine=$OUT/$name.machine
    local -a files=()
    : >"$OUT/$name-calibrate.txt"
    local c
    for ((c = 1; c <= CALIBRATIONS; c++)); do
      files+=("$OUT/$name-cal$c.machine")
      local -a cal=("${launch[@]}" "$BUILD/tools/nbr_calibrate" --name "grid-$name"
        --max-bytes 16Mi --sweep 1 --output "${files[-1]}")
      # local-cluster.sh's links: 1 Gbit/s, a bucket of 1 ms of that (125 kB)
      [[ $name == cluster ]] && cal+=(--link-gbit 1 --link-burst-bytes 125000)
      echo "grid: ${cal[*]}" | tee -a "$OUT/$name-calibrate.txt"
      "${cal[@]}" >>"$OUT/$name-calibrate.txt" 2>&1 ||
        { echo "grid: calibration failed, see $OUT/$name-calibrate.txt" >&2; exit 1; }
    done
    echo "grid: python3 bench/median_machine.py grid-$name ${files[*]} > $machine" |
      tee -a "$OUT/$name-calibrate.txt"
    python3 "bench/median_machine.py" "grid-$name" "${files[@]}" >"$machine" ||
      { echo "grid: merging the calibrations failed" >&2; exit 1; }
  fi
  MACHINE_OF[$name]=$machine
  IFS=, read -ra items <<<"$PATTERNS"
  local k item
  for item in "${items[@]}"; do
    passes "$name" "$machine" "$item" ""
    [[ -z $machine ]] || simulate "$name" "$machine" "$item" "$ranks" "$rpn"
  done
  # run K in orders of its own, as the confirming rounds are (seeds 100+K,
  # clear of theirs)
  for ((k = 2; k <= RUNS; k++)); do
    for item in "${items[@]}"; do
      passes "$name" "$machine" "$item" "-run$k" $((100 + k))
    done
  done
}

IFS=, read -ra configs <<<"$CONFIGS"
for c in "${configs[@]}"; do
  case $c in
    cluster) run_config cluster 16 4 "$CLUSTER_MACHINE" ;;
    node) run_config node 8 8 "$NODE_MACHINE" ;;
    *) echo "grid: unknown config '$c'" >&2; exit 2 ;;
  esac
done

# fresh runs of the points that are not ok, round by round, so that one
# point's runs fall at different times of the machine's day, each round in
# orders of its own (--order-seed K): with one seed every run of a point
# took the same two orders, so a slow predecessor repeated in all three
# (docs/decisions.md, D28)
rm -f "$OUT"/*-confirm*.csv "$OUT"/*-confirm*.txt
# a missed prediction is measured again where the machine was calibrated in
# the run (the node's built-in machine is not, and misses half its points)
python3 bench/grid_report.py --out "$OUT" --flagged "$OUT/flagged.txt" \
  --sim-configs "$(IFS=,; echo "${CALIBRATED[*]}")" "${CSVS[@]}"
for ((k = 1; k <= CONFIRM; k++)); do
  while read -r -u 3 name tag bytes; do
    # shellcheck disable=SC2046
    bench "$name" "${MACHINE_OF[$name]}" "$OUT/$name-$tag-$bytes-confirm$k.csv" \
      "$OUT/$name-$tag-$bytes-confirm$k.txt" $(graph_args "$(item_of "$tag")") \
      --min-bytes "$bytes" --max-bytes "$bytes" --iters "$(iters_of "$name" "$bytes")" \
      --order-seed "$k"
  done 3<"$OUT/flagged.txt"
done
# every flagged point got its runs (a loop that lost its input would not say)
want=$(($(wc -l <"$OUT/flagged.txt") * CONFIRM)) got=$(find "$OUT" -name '*-confirm*.csv' | wc -l)
((got == want)) || { echo "grid: $got confirming runs of $want" >&2; exit 1; }

python3 bench/grid_report.py --out "$OUT" "${CSVS[@]}"

#!/bin/bash
# reprice.sh [COPY_GBPS]: nbr_sim ($NBR_SIM, default build/bench/nbr_sim,
# through ../2026-11-24-sim-cpu/predict.sh) prices the grid's seven
# patterns for each cluster grid below with that grid's own calibration,
# and prints one line per point: grid, pattern,
# bytes, algorithm, measured and predicted speedup over naive, their ratio
# (score.py's rule: a point is within 25 % when the ratio is in 0.75-1.25).
# COPY_GBPS (0 or absent: as calibrated) sets the large copies' rate, CN
# (later, 2026-11-27-trial-fix; GB/s a core) the cores' network rate, CNX
# (later, 2026-11-27-exchange-warmup) multiplies the calibrated one; PAIRX
# (later, 2026-11-28-duplex) gives a calibration without a pair rate one,
# that many times its calibrated cores' rate (before CNX), with PAIRB its
# pair_after_bytes. NETFIT=1 (later, 2026-11-28-handoff-paths) refits a
# calibration's start and hand-off for messages between nodes only, as
# nbr_calibrate now does (netfit.py there); SD (later,
# 2026-11-28-sim-confirm) multiplies the per-call start; SOCKBW (later,
# 2026-11-28-pair-trials; GB/s) sets the paths inside a node, and SOCKCB
# (bytes) and SOCKCR (GB/s) give the socket and node paths a cached rate
# (nbr_sim refuses them without that directory's socket-cached.diff). The
# calibrations of 2026-11-25/26 lack some fields: burst_bytes=125000 and
# eager_bytes=65472 are added as score-grids.sh of ../2026-11-26-cached-copies
# does, and CB=65536 CR=35 gives them a cached copy rate as later
# calibrations measure one (24-38 GB/s). The experiment's knobs
# (variants.diff: XA, XB, XT, XN, XS, XK) pass to nbr_sim through the
# environment. START (us) and HANDOFF (us; later, 2026-11-28-noise-floor)
# set every priced calibration's per-call start and hand-off (after
# NETFIT). NETFIT_ALGS (later, 2026-11-29-sparse-relay; e.g. naive)
# refits start and hand-off on those algorithms' small calls only (a
# merged grid: its calibrations' median). ONLY (labels, space-separated)
# prices just those grids. Run
# from the repository root; stats.py sums the lines up.
set -euo pipefail
sim=${NBR_SIM:-build/bench/nbr_sim} copy=${1:-0}
R=bench/results
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# BR (later, 2026-11-27-burst-rate): a burst rate for every calibration
# without one: a number (GB/s), or "sweep" for the one nbr_calibrate now
# fits (burst_rate.awk, from the file's own network sweep)
burst_rate() {
  case ${BR:-} in
    "") echo 0 ;;
    sweep) awk -f "$(dirname "$0")/../2026-11-27-burst-rate/burst_rate.awk" "$1" ;;
    *) echo "$BR" ;;
  esac
}
fields() { # machine file -> the fields it lacks, the copy rates asked for
  local br; br=$(burst_rate "$1")
  sed -e "/burst_bytes/!s/^nics \(.*\)$/nics \1 burst_bytes=125000/" \
      -e "s/^cores \([0-9]* per=job network_gbytes_per_s=[0-9.e+-]*\) message/cores \1 eager_bytes=65472 message/" "$1" |
  awk -v r="$copy" -v cb="${CB:-0}" -v cr="${CR:-0}" -v br="$br" -v cn="${CN:-0}" -v cnx="${CNX:-0}" \
      -v px="${PAIRX:-0}" -v pb="${PAIRB:-0}" -v sk="${SOCKBW:-0}" \
      -v scb="${SOCKCB:-0}" -v scr="${SOCKCR:-0}" '
    function set(key, value,  i) { for (i = 1; i <= NF; i++) if ($i ~ "^" key "=") $i = key "=" value }
    function get(key,  i) { for (i = 1; i <= NF; i++) if ($i ~ "^" key "=") return substr($i, length(key) + 2) }
    /^nics / && br > 0 && !/burst_gbytes/ { $0 = $0 " burst_gbytes_per_s=" br }
    /^path (socket|node|gpu) / && sk > 0 { set("gbytes_per_s", sk) }
    /^path (socket|node) / && scb > 0 && !/cached/ { $0 = $0 " cached_bytes=" scb " cached_gbytes_per_s=" scr }
    /^path copy/ && r > 0 { set("gbytes_per_s", r) }
    /^cores / && cn > 0 { set("network_gbytes_per_s", cn) }
    /^cores / && px > 0 && !/pair_gbytes/ && /network_gbytes/ {
      $0 = $0 " pair_gbytes_per_s=" get("network_gbytes_per_s") * px " pair_after_bytes=" pb }
    /^cores / && cnx > 0 { set("network_gbytes_per_s", get("network_gbytes_per_s") * cnx) }
    /^path copy/ && cb > 0 && !/cached/ { $0 = $0 " cached_bytes=" cb " cached_gbytes_per_s=" cr } { print }'
}
# 2026-11-25: no cores line then (the one ../2026-11-26-handoff used);
# 2026-11-27 grid/: the experiment's start and turn replaced by what the
# line through its small calls gives (its README: 340 us, 4.97 us)
grep -v '^call' $R/2026-11-25-grid-confirm/grid/cluster.machine >"$tmp/g1.in"
echo "cores 2 per=job network_gbytes_per_s=0.165 message_us=6.79" >>"$tmp/g1.in"
echo "call start_us=423" >>"$tmp/g1.in"
sed -e 's/^call .*/call start_us=340/' -e 's/message_us=[0-9.]*/message_us=4.97/' \
    $R/2026-11-27-sparse-calls/grid/cluster.machine >"$tmp/g7.in"
grids=("g1 2026-11-25-grid-confirm/grid $tmp/g1.in"
       "g2 2026-11-26-handoff/grid"
       "g3 2026-11-26-fair-nics/grid"
       "g4 2026-11-26-fair-nics/grid-cluster-block5"
       "g5 2026-11-26-blocks-default/grid"
       "g6 2026-11-26-blocks-default/grid-cluster-2"
       "g7 2026-11-27-sparse-calls/grid $tmp/g7.in"
       "g8 2026-11-27-sparse-calls/grid-cluster-final"
       "g9 2026-11-27-plateau/grid-cluster"
       "g10 2026-11-27-plateau/grid-cluster-2"
       "g11 2026-11-27-trial-budget/grid-cluster"
       "g12 2026-11-27-trial-budget/grid-cluster-2"
       "g13 2026-11-27-pooled/grid-cluster"
       "g14 2026-11-27-pooled/grid-cluster-runs2"
       "g15 2026-11-27-runs3/grid-cluster"
       "g16 2026-11-27-trial-fix/grid-cluster"
       "g17 2026-11-28-grid-again/grid-cluster"
       "g18 2026-11-28-trial-200ms/grid-cluster"
       "g19 2026-11-28-trial-side-100ms/grid-cluster"
       "g20 2026-11-28-duplex/grid-cluster $R/2026-11-28-duplex/grid-cluster/cluster-first.machine"
       "g21 2026-11-28-duplex/grid-cluster-moore"
       "g22 2026-11-28-handoff-paths/grid-cluster"
       "g23 2026-11-28-handoff-paths/grid-cluster-2"
       "g24 2026-11-28-sim-confirm/grid-cluster"
       "g25 2026-11-28-sim-confirm/grid-cluster-moore"
       "g26 2026-11-28-pair-trials/grid-cluster"
       "g27 2026-11-28-median-calibration/grid-cluster"
       "g28 2026-11-29-g28/grid-cluster"
       "g29 2026-11-29-g29/grid-cluster"
       "g30 2026-11-29-g29/grid-cluster-moore"
       "g31 2026-11-29-g31/grid-cluster"
       "g34 2026-11-29-g34/grid-cluster")
# a grid priced with a calibration other than its own: not a grid of its
# own, so priced only when ONLY names it (ONLY="g15 g15r": just those)
# OTHERS (later, 2026-11-28-pair-trials) adds such items, comma-separated:
# OTHERS="g24x 2026-11-28-sim-confirm/grid-cluster /tmp/x.machine" ONLY=g24x
others=("g15r 2026-11-27-runs3/grid-cluster $R/2026-11-27-runs3/recalibrated/cluster.machine")
IFS=, read -ra extra <<<"${OTHERS:-}"
others+=("${extra[@]}")
for item in "${grids[@]}" "${others[@]}"; do
  set -- $item
  [[ -d $R/$2 ]] || continue
  if [[ -n ${ONLY:-} ]]; then
    [[ " $ONLY " == *" $1 "* ]] || continue
  elif [[ " ${others[*]} " == *" $1 "* ]]; then
    continue
  fi
  fields "${3:-$R/$2/cluster.machine}" >"$tmp/m"
  if [[ -n ${NETFIT:-} ]]; then
    python3 $R/2026-11-28-handoff-paths/netfit.py "$tmp/m" >"$tmp/m.fit" && mv "$tmp/m.fit" "$tmp/m"
  fi
  # NETFIT_ALGS (later, 2026-11-29-sparse-relay; netfit.py): a merged file
  # has no small calls of its own, so its calibrations' fits, the median
  if [[ -n ${NETFIT_ALGS:-} ]] && compgen -G "$R/$2/cluster-cal*.machine" >/dev/null; then
    for c in "$R/$2"/cluster-cal*.machine; do
      python3 $R/2026-11-28-handoff-paths/netfit.py "$c" |
        awk '/^call /{split($2, a, "="); s = a[2]} /^cores /{for (i = 1; i <= NF; i++) if ($i ~ /^message_us=/) h = substr($i, 12)} END {print s, h}'
    done | sort -g | awk '{s[NR] = $1; h[NR] = $2} END {print s[int((NR + 1) / 2)], h[int((NR + 1) / 2)]}' >"$tmp/fit"
    read -r fs fh <"$tmp/fit"
    sed -e "s/^call start_us=[0-9.e+-]*/call start_us=$fs/" -e "s/message_us=[0-9.e+-]*/message_us=$fh/" "$tmp/m" >"$tmp/m2" &&
      mv "$tmp/m2" "$tmp/m"
  fi
  if [[ -n ${SD:-} ]]; then
    awk -v sd="$SD" '/^call /{split($2,a,"="); $2="start_us=" (a[2]*sd)} {print}' "$tmp/m" >"$tmp/m2" &&
      mv "$tmp/m2" "$tmp/m"
  fi
  if [[ -n ${START:-} || -n ${HANDOFF:-} ]]; then
    sed -e "${START:+s/^call start_us=[0-9.e+-]*/call start_us=$START/}" \
        -e "${HANDOFF:+s/message_us=[0-9.e+-]*/message_us=$HANDOFF/}" "$tmp/m" >"$tmp/m2" &&
      mv "$tmp/m2" "$tmp/m"
  fi
  NBR_SIM=$sim $R/2026-11-24-sim-cpu/predict.sh "$tmp/p" cluster "$tmp/m" 16 4
  python3 - "$1" "$R/$2" "$tmp" <<'PY'
import csv, glob, statistics as st, sys
label, res, tmp = sys.argv[1:4]
meas, pred = {}, {}
for f in glob.glob(res + '/cluster-*.csv'):
    if not f.endswith('-sim.csv'):
        for row in csv.DictReader(open(f)):
            meas.setdefault((row['pattern'], int(row['bytes']), row['algorithm']), []).append(float(row['median_us']))
for f in glob.glob(tmp + '/p/cluster-*.csv'):
    for row in csv.DictReader(open(f)):
        pred[(row['pattern'], int(row['bytes']), row['algorithm'])] = float(row['seconds'])
for k in sorted(pred):
    if k[2] in ('naive', 'auto') or k not in meas:
        continue
    n = (k[0], k[1], 'naive')
    m = st.median(meas[n]) / st.median(meas[k]); p = pred[n] / pred[k]
    print('%s;%s;%d;%s;%.3f;%.3f;%.3f' % (label, k[0], k[1], k[2], m, p, p / m))
PY
  rm -rf "$tmp/p"
done

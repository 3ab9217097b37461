#!/bin/bash
# calibrations.sh: one line per cluster grid's calibration (the grids
# ../2026-11-27-plateau/reprice.sh prices, g15r, and cal1-cal3 here) with
# the fields that moved between hosts. Run from the repository root.
R=bench/results D=$R/2026-11-28-regime
printf "%-5s %-8s %-8s %-9s %-9s %-8s %-8s %-8s %-8s\n" grid copy cached sock_a net_a net_ovh cores msg_us start
{ sed -n '/^grids=/,/)$/p' $R/2026-11-27-plateau/reprice.sh | grep -o '"g[0-9]* [^ "]*' | tr -d '"' |
    while read -r g d; do echo "$g $R/$d/cluster.machine"; done
  echo "g15r $R/2026-11-27-runs3/recalibrated/cluster.machine"
  for i in 1 2 3; do echo "cal$i $D/cal$i.machine"; done; } |
while read -r g f; do
  [[ -f $f ]] || continue
  awk -v g="$g" '
    function v(k,  i) { for (i = 1; i <= NF; i++) if ($i ~ "^" k "=") return substr($i, length(k) + 2); return "-" }
    function f(x) { return x == "-" || x == "" ? "-" : sprintf("%.3g", x) }
    /^path copy/ { c = v("gbytes_per_s"); cc = v("cached_gbytes_per_s") }
    /^path socket/ { sa = v("alpha_us") }
    /^path network/ { na = v("alpha_us"); no = v("overhead_us") }
    /^cores/ { cr = v("network_gbytes_per_s"); mu = v("message_us") }
    /^call/ { st = v("start_us") }
    END { printf "%-5s %-8s %-8s %-9s %-9s %-8s %-8s %-8s %-8s\n", g, f(c), f(cc), f(sa), f(na), f(no), f(cr), f(mu), f(st) }' "$f"
done

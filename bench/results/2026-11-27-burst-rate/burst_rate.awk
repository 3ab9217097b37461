# burst_rate.awk MACHINE_FILE: the rate (GB/s) a calibration's network
# sweep says bytes pass at on the links' burst, as nbr_calibrate fits it:
# the least-squares slope through zero of each size's one-way time past
# alpha, over the sizes up to half the burst. Prints 0 without a sweep.
/^path network/ { for (i = 1; i <= NF; i++) if ($i ~ /^alpha_us=/) { split($i, a, "="); alpha = a[2] } }
/^nics / { for (i = 1; i <= NF; i++) if ($i ~ /^burst_bytes=/) { split($i, b, "="); burst = b[2] } }
/^# sweep network/ { on = 1; next }
/^# sweep/ { on = 0 }
on && /^# +[0-9]/ { size[++n] = $2; oneway[n] = $3 }
END {
  if (!burst) burst = 125000
  for (k = 1; k <= n; k++)
    if (size[k] <= burst / 2) { sy += size[k] * (oneway[k] - alpha); ss += size[k] * size[k] }
  print (sy > 0 ? ss / sy * 1e-3 : 0)
}

#!/usr/bin/env bash
# run_legal.sh: the legal-programs suite. Runs legal_programs' seeded MPI
# programs (tests/legal/legal_programs.c) at one rank count under a list of
# configurations and holds each to plain MPI:
#
#   plain            legal_programs, no nbrcoll at all: its digest lines are
#                    the reference, and it must pass its own checks (if it
#                    fails or hangs, the generator made an illegal program)
#   dropin:ALG       legal_programs with LD_PRELOAD=libnbrcoll_mpi.so
#   api:ALG          legal_programs_api (nbrcoll's nbr_ API)
#
# with NBR_ALGORITHM=ALG (none for auto), NBR_RANKS_PER_NODE=2 (virtual
# nodes, so that leader and aggregate relay) and NBR_DEVICE=off. A
# configuration fails on a FAIL line, a digest line that is not plain's, a
# missing line, a non-zero exit or a timeout ("HANG at seed S under CONFIG",
# from the last "begin S" the program wrote).
#
# usage: run_legal.sh --mpiexec MPIEXEC --program PATH --api-program PATH
#            --dropin LIB [--np N] [--seeds FIRST-LAST] [--calls K]
#            [--configs "plain dropin:naive api:auto ..."] [--timeout S]
#            [--resume N] [--long] [--keep DIR] [--program-args "ARGS"]
#   --long      ten times the seeds (and a longer time limit per launch)
#   --resume N  after a hang, go on from the next seed, N times per
#               configuration (default 0: the configuration stops there;
#               after a crash it always goes on, up to 20 times)
#   --keep DIR  keep every launch's output in DIR
#   --program-args "ARGS"  more arguments for every launch, e.g. "--avoid
#               allgather-sizes" (legal_programs --help)
set -uo pipefail

mpiexec=mpiexec program='' api_program='' dropin='' np=4 seeds=1-50 calls=''
configs='' timeout_s=120 resume=0 long=0 keep='' program_args=''
algorithms="auto naive mpi leader halving combining aggregate dedup"
while (($#)); do
  case $1 in
    --mpiexec) mpiexec=$2; shift ;;
    --program) program=$2; shift ;;
    --api-program) api_program=$2; shift ;;
    --dropin) dropin=$2; shift ;;
    --np) np=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    --calls) calls=$2; shift ;;
    --configs) configs=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
    --resume) resume=$2; shift ;;
    --long) long=1 ;;
    --keep) keep=$2; shift ;;
    --program-args) program_args=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_legal.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done
[[ -n $program && -x $program ]] || { echo "run_legal.sh: --program is required" >&2; exit 2; }
if [[ -z $configs ]]; then
  configs=plain
  for a in $algorithms; do configs+=" dropin:$a api:$a"; done
fi
[[ $seeds =~ ^([0-9]+)-([0-9]+)$ ]] || { echo "run_legal.sh: --seeds FIRST-LAST" >&2; exit 2; }
first=${BASH_REMATCH[1]} last=${BASH_REMATCH[2]}
if ((long)); then
  last=$((first + (last - first + 1) * 10 - 1))
  timeout_s=$((timeout_s * 10))
fi
count=$((last - first + 1))

source "$(dirname "$0")/../scripts/launcher.sh"
nbr_launcher "$mpiexec"

work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[[ -n $keep ]] || trap 'rm -rf "$work"' EXIT

# launch_batch CONFIG FIRST COUNT OUT: one mpiexec of COUNT programs from FIRST;
# stdout in OUT.out, stderr in OUT.err; returns the exit status (124: timeout).
launch_batch() {
  local config=$1 from=$2 n=$3 out=$4 exe=$program
  local -a vars=()
  if [[ $config == plain ]]; then
    # no nbrcoll in it: under the sanitizer pass Open MPI's own leaks (its
    # persistent collectives) are not this suite's to report
    [[ -z ${ASAN_OPTIONS:-} ]] || vars=(ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0")
  else
    local alg=${config#*:}
    vars=(NBR_RANKS_PER_NODE=2 NBR_DEVICE=off)
    [[ $alg == auto ]] || vars+=(NBR_ALGORITHM="$alg")
    case $config in
      dropin:*) vars+=(LD_PRELOAD="$dropin") ;;
      api:*) exe=$api_program ;;
    esac
  fi
  local -a args=(--first "$from" --count "$n")
  [[ -z $calls ]] || args+=(--calls-per-program "$calls")
  # shellcheck disable=SC2206 # words on purpose
  args+=($program_args)
  timeout -k 10 "$timeout_s" "${launch[@]}" -np "$np" env "${vars[@]}" "$exe" "${args[@]}" \
    >"$out.out" 2>"$out.err"
}

# What to type to see seed SEED again [after the seeds from FROM on, in one
# job: a hang or crash may need what the programs before it left].
repro() {
  local config=$1 seed=$2 from=${3:-$2} env_words="" exe=$program
  if [[ $config != plain ]]; then
    local alg=${config#*:}
    env_words="NBR_RANKS_PER_NODE=2 NBR_DEVICE=off "
    [[ $alg == auto ]] || env_words+="NBR_ALGORITHM=$alg "
    [[ $config == dropin:* ]] && env_words+="LD_PRELOAD=$dropin "
    [[ $config == api:* ]] && exe=$api_program
  fi
  local words="--first $from --count $((seed - from + 1))${calls:+ --calls-per-program $calls}"
  echo "${launch[*]} -np $np env $env_words$exe $words${program_args:+ $program_args} --trace"
}

ref=$work/reference.digests
total_programs=0 total_calls=0 failed_configs=0 failures=0
declare -a report=()
start=$(date +%s)
echo "legal programs: seeds $first-$last ($count programs) at $np ranks," \
  "at most ${timeout_s}s per launch"
need() { [[ -n $2 && -e $2 ]] || { echo "run_legal.sh: $1 needs $3" >&2; exit 2; }; }

for config in $configs; do
  case $config in
    plain) ;;
    dropin:*) need "$config" "$dropin" --dropin ;;
    api:*) need "$config" "$api_program" --api-program ;;
    *) echo "run_legal.sh: unknown configuration $config" >&2; exit 2 ;;
  esac
  if [[ $config != plain && ! -s $ref ]]; then
    echo "run_legal.sh: no plain reference; put plain first in --configs" >&2
    exit 2
  fi
  t0=$(date +%s)
  tag=${config/:/_}
  : >"$work/$tag.digests"
  : >"$work/$tag.fails"
  problems=()
  from=$first resumes=0 crashes=0 launches=0 stuck_from=''
  while ((from <= last)); do
    out=$work/$tag.$launches
    launch_batch "$config" "$from" $((last - from + 1)) "$out"
    rc=$?
    launches=$((launches + 1))
    grep '^program ' "$out.out" >>"$work/$tag.digests"
    grep '^FAIL ' "$out.err" >>"$work/$tag.fails"
    done_to=$(awk '/^program /{s=$2} END{print s ? s : ""}' "$out.out")
    if ((rc == 0)); then
      break
    fi
    stuck=$(awk '/^begin /{s=$2} END{print s}' "$out.err")
    [[ -n $stuck ]] || stuck=$from
    if ((rc == 124 || rc == 137)); then
      problems+=("HANG at seed $stuck under $config (killed after ${timeout_s}s)")
      [[ -n $stuck_from ]] || stuck_from="$stuck $from"
      ((resumes < resume)) || break
      resumes=$((resumes + 1))
    elif [[ -n $done_to && $done_to -ge $last ]]; then
      problems+=("exit status $rc under $config")
      break
    else
      problems+=("CRASH at seed $stuck under $config (exit status $rc)")
      [[ -n $stuck_from ]] || stuck_from="$stuck $from"
      # the first crash's messages, without the FAIL lines
      if ((crashes == 0)); then
        grep -v -e '^FAIL ' -e '^begin ' -e '^--------' "$out.err" | grep -m8 . |
          cut -c1-200 | sed 's/^/      | /' >"$work/$tag.crash"
      fi
      ((crashes < 20)) || break
      crashes=$((crashes + 1))
    fi
    from=$((stuck + 1))
  done

  # compare with plain, seed by seed (plain: with the seeds asked for)
  calls_run=$(awk '{c += $6} END{print c + 0}' "$work/$tag.digests")
  programs_run=$(wc -l <"$work/$tag.digests")
  total_programs=$((total_programs + programs_run))
  total_calls=$((total_calls + calls_run))
  if [[ $config == plain ]]; then
    cp "$work/$tag.digests" "$ref"
    mismatched=""
    missing=$(seq "$first" "$last" | awk 'NR == FNR {have[$2] = 1; next} !($1 in have)' \
      "$ref" - | tr '\n' ' ')
  else
    mismatched=$(awk 'NR == FNR {want[$2] = $0; next}
                      $2 in want && want[$2] != $0 {printf "%s ", $2}' "$ref" "$work/$tag.digests")
    missing=$(awk 'NR == FNR {have[$2] = 1; next} !($2 in have) {printf "%s ", $2}' \
      "$work/$tag.digests" "$ref")
  fi
  nfail=$(wc -l <"$work/$tag.fails")
  failseeds=$(awk '{print $3}' "$work/$tag.fails" | sort -un | tr '\n' ' ')
  # a failure: a seed with a FAIL line, a digest not plain's or no digest
  # (hangs and crashes), or a non-zero exit with every seed there
  # shellcheck disable=SC2086 # seed lists, split on purpose
  bad=$(printf '%s\n' $failseeds $mismatched $missing | sort -un | wc -w)
  ((bad > 0 || ${#problems[@]} == 0)) || bad=1
  ok=$((bad == 0))
  secs=$(($(date +%s) - t0))
  if ((ok)); then
    printf '  %-18s ok      %d programs, %d calls, %ds\n' "$config" "$programs_run" "$calls_run" "$secs"
  else
    failed_configs=$((failed_configs + 1))
    failures=$((failures + bad))
    printf '  %-18s FAILED  %d programs, %d calls, %ds: %d digests differ, %d missing, %d FAIL lines\n' \
      "$config" "$programs_run" "$calls_run" "$secs" "$(wc -w <<<"$mismatched")" \
      "$(wc -w <<<"$missing")" "$nfail"
    for p in "${problems[@]:0:6}"; do echo "      $p"; done
    ((${#problems[@]} <= 6)) || echo "      ... $((${#problems[@]} - 6)) more hangs and crashes"
    crash_seeds=$(printf '%s\n' "${problems[@]}" | awk '/^CRASH/{printf "%s ", $4}')
    [[ -z $crash_seeds ]] || echo "      crashed at seeds: $(cut -d' ' -f1-25 <<<"$crash_seeds")"
    [[ ! -s $work/$tag.crash ]] || cat "$work/$tag.crash"
    [[ -z $failseeds ]] || echo "      seeds with FAIL lines: $(cut -d' ' -f1-25 <<<"$failseeds")"
    [[ -z $mismatched ]] || echo "      seeds whose digest differs: $(cut -d' ' -f1-25 <<<"$mismatched")"
    if ((nfail)); then
      echo "      first FAIL: $(head -1 "$work/$tag.fails")"
    fi
    # shellcheck disable=SC2086
    first_bad=$(printf '%s\n' $failseeds $mismatched | sort -n | head -1)
    [[ -z $first_bad ]] || echo "      again: $(repro "$config" "$first_bad")"
    # shellcheck disable=SC2086 # "seed from"
    [[ -z $stuck_from ]] || echo "      first hang or crash again: $(repro "$config" $stuck_from)"
    report+=("$config")
    if [[ $config == plain ]]; then
      echo "run_legal.sh: plain MPI fails its own programs: the generator made an illegal program" >&2
    fi
  fi
done

nconf=$(wc -w <<<"$configs")
echo "summary: $count programs x $nconf configurations at $np ranks: $total_programs programs" \
  "and $total_calls calls run, $failures failures (a configuration's failing seeds)," \
  "$failed_configs configurations failed${report[*]:+ (${report[*]})}, $(($(date +%s) - start))s"
((failed_configs == 0))

#!/usr/bin/env bash
# slurm-local.sh: a private one-node Slurm on this machine (munged,
# slurmctld and slurmd from Debian's slurm-wlm and munge), for testing the
# batch scripts of bench/batch without a cluster. Everything it makes lives
# in one state directory: its own slurm.conf, MUNGE key and socket, state,
# spool, logs and pid files, on ports nobody else listens on. `stop` kills
# every daemon `start` started (and any job step left behind) and removes
# the directory; `start` first does the same to what a killed run left.
#
# Usage: scripts/slurm-local.sh start|stop|status|env [--dir DIR]
#
#   start   start the daemons, wait until the node is idle, print SLURM_CONF
#   stop    cancel jobs, stop the daemons, remove DIR (nothing left behind)
#   status  exit 0 if the controller answers (prints sinfo and squeue)
#   env     print the export line that points Slurm's commands at DIR
#
# DIR defaults to $NBR_SLURM_DIR, else /tmp/nbrcoll-slurm-<uid>. Client
# commands (sbatch, squeue, sinfo, scontrol, srun) find the private
# cluster through SLURM_CONF=DIR/slurm.conf; nothing under /etc is used.
# Exit codes: 0 ok, 1 failure, 2 usage, 3 Slurm or MUNGE not installed
# (scripts/install-deps.sh installs them).
set -euo pipefail

DIR=${NBR_SLURM_DIR:-/tmp/nbrcoll-slurm-$(id -u)}
ACTION=""
FAILED=""
while (($#)); do
  case $1 in
    start|stop|status|env) ACTION=$1; shift ;;
    --dir) DIR=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "slurm-local: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $ACTION ]] || { echo "slurm-local: say start, stop, status or env (see --help)" >&2; exit 2; }
[[ $DIR == /* ]] || DIR=$PWD/$DIR
CONF=$DIR/slurm.conf
# Every daemon is started with this variable in its environment; slurmd
# passes it to the slurmstepd processes it forks, so stop can find all of
# them by it, even when the pid files are gone.
MARK="NBR_SLURM_LOCAL=$DIR"
STAMP=$DIR/.nbrcoll-slurm-local   # only a directory with it is removed

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: $*" >&2; exit 1; }

# pids of live processes of this cluster: those carrying our marker, and
# the processes of its jobs (SLURM_JOB_ID with our SLURM_CONF, which sbatch
# passes on from the submitter), but not this shell or its callers.
marked_pids() {
  local env_file pid env mine=" $$ " p=$$
  while p=$(ps -o ppid= -p "$p" 2>/dev/null) && p=${p// /} && ((p > 1)); do
    mine+="$p "
  done
  for env_file in /proc/[0-9]*/environ; do
    pid=${env_file#/proc/}; pid=${pid%/environ}
    [[ $mine == *" $pid "* ]] && continue
    env=$({ tr '\0' '\n' <"$env_file"; } 2>/dev/null) || continue
    if grep -qxF "$MARK" <<<"$env" ||
      { grep -qxF "SLURM_CONF=$CONF" <<<"$env" && grep -q '^SLURM_JOB_ID=' <<<"$env"; }; then
      echo "$pid"
    fi
  done
}

alive() { kill -0 "$1" 2>/dev/null; }

# TERM, then KILL after a few seconds, the given pids; waits until gone.
terminate() {
  local pid left i
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    left=()
    for pid; do alive "$pid" && left+=("$pid"); done
    ((${#left[@]})) || return 0
    sleep 0.2
  done
  kill -KILL "${left[@]}" 2>/dev/null || true
  for ((i = 0; i < 25; i++)); do
    left=()
    for pid; do alive "$pid" && left+=("$pid"); done
    ((${#left[@]})) || return 0
    sleep 0.2
  done
  die "could not end pids ${left[*]}"
}

controller_up() {
  [[ -f $CONF && -n $(pid_of slurmctld.pid) ]] &&
    SLURM_CONF=$CONF timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'
}

do_stop() {
  if [[ ! -d $DIR ]]; then
    # A marker without its directory: a run whose files were removed by hand.
    local orphans
    mapfile -t orphans < <(marked_pids)
    terminate "${orphans[@]}"
    return 0
  fi
  [[ -f $STAMP ]] || die "$DIR exists but was not made by this script: not touching it"
  # Cancel jobs first so that slurmd ends their processes itself.
  if controller_up; then
    export SLURM_CONF=$CONF
    local jobs i
    jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [[ -n $jobs ]]; then
      # shellcheck disable=SC2086 # job ids, one word each
      scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [[ -z $(squeue -h -t running,completing -o %i 2>/dev/null) ]] && break
        sleep 0.2
      done
    fi
  fi
  # slurmd and slurmctld together (each takes a second or two), munged
  # after them (they authenticate their last messages), then whatever else
  # carries the marker (slurmstepd, processes of a job scancel missed).
  local pids=()
  mapfile -t pids < <(pid_of slurmd.pid; pid_of slurmctld.pid)
  terminate "${pids[@]}"
  mapfile -t pids < <(pid_of munge/munged.pid)
  terminate "${pids[@]}"
  mapfile -t pids < <(marked_pids)
  terminate "${pids[@]}"
  rm -rf -- "$DIR"
}

# The live pid in DIR/FILE, if it is one of ours (a stale pid file may name
# someone else's process by now).
pid_of() {
  local pid
  [[ -s $DIR/$1 ]] || return 0
  pid=$(<"$DIR/$1")
  if alive "$pid" && { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "$MARK"; then
    echo "$pid"
  fi
  return 0
}

# A TCP port that no socket uses, and the one after it too, below the
# kernel's range for outgoing connections (a port from that range can be
# taken by any client between our check and the daemon's bind).
free_port_pair() {
  local p i low=10000 high
  read -r high _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || high=32768
  ((high > low + 1000)) || { low=20000; high=30000; }
  for ((i = 0; i < 100; i++)); do
    p=$(shuf -i "$low-$((high - 2))" -n 1)
    if [[ -z $(ss -Hatn "( sport = :$p or sport = :$((p + 1)) )" 2>/dev/null) ]]; then
      echo "$p"
      return 0
    fi
  done
  die "no free TCP port pair found"
}

do_start() {
  local cmd missing=() attempt rc
  for cmd in munged slurmctld slurmd sinfo sbatch squeue scontrol scancel ss shuf; do
    command -v "$cmd" >/dev/null || missing+=("$cmd")
  done
  if ((${#missing[@]})); then
    echo "slurm-local: not installed: ${missing[*]} (Debian: slurm-wlm munge; scripts/install-deps.sh)" >&2
    exit 3
  fi
  for attempt in 1 2 3; do
    do_stop   # leftovers of a run killed before its stop, or of the last try
    rc=0
    start_once || rc=$?
    ((rc == 0)) && return 0
    ((rc == 2)) || fail_start "$FAILED"
    say "a port was taken before the daemons bound it; again with others ($attempt of 3)"
  done
  fail_start "$FAILED"
}

# Whether the daemon of pid file $1 is gone, its log $2 saying of what.
port_clash() {
  [[ -s $DIR/$1 && -z $(pid_of "$1") ]] && grep -qs 'Address already in use' "$DIR/log/$2"
}

# One try: 0 up, 1 failed (FAILED says why), 2 a port was taken.
start_once() {
  local node user port cpus deadline state=""
  node=$(hostname -s)
  user=$(id -un)
  cpus=$(nproc)
  port=$(free_port_pair)
  FAILED="ports $port-$((port + 1)) taken"
  # munged insists that every directory above its socket is searchable by
  # all (clients of other users must reach it), and the key unreadable.
  mkdir -p -- "$DIR"
  chmod 0711 "$DIR"
  : >"$STAMP"
  mkdir -m 0755 "$DIR/munge"
  mkdir -m 0700 "$DIR/state" "$DIR/log"
  mkdir -m 0755 "$DIR/spool"
  : >"$DIR/plugstack.conf"   # keeps /etc/slurm/plugstack.conf.d out

  # A fresh random key for this run only.
  head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
  chmod 0600 "$DIR/munge/munge.key"

  cat >"$CONF" <<END_OF_CONF
# Private one-node cluster made by scripts/slurm-local.sh; removed by stop.
ClusterName=nbrlocal
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
# MUNGE is the only documented authentication of Slurm 22.05: our own
# munged, key and socket, so that the system's munge (if any) is not used.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
# No cgroups, accounting or PMI by default: nothing outside DIR to set up.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PlugStackConfig=$DIR/plugstack.conf
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# Bind slurmd and client sockets to the node's address (127.0.0.1).
CommunicationParameters=NoInAddrAny
# The node takes the resources written here, not what slurmd probes (a
# container may report other sockets/cores), and comes back by itself.
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$node CPUs=$cpus RealMemory=1024 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
END_OF_CONF
  export SLURM_CONF=$CONF

  # The daemons fork away and close stdio; </dev/null and the log keep them
  # off the caller's pipes (ctest waits for those to close).
  if ! env "$MARK" munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
    --seed-file="$DIR/munge/munged.seed" </dev/null >>"$DIR/log/start.log" 2>&1; then
    FAILED="munged did not start"
    return 1
  fi

  if ! env "$MARK" slurmctld -f "$CONF" </dev/null >>"$DIR/log/start.log" 2>&1; then
    FAILED="slurmctld did not start"
    return 1
  fi
  deadline=$((SECONDS + 20))
  until controller_up; do
    port_clash slurmctld.pid slurmctld.log && return 2
    if [[ -s $DIR/slurmctld.pid && -z $(pid_of slurmctld.pid) ]] || ((SECONDS > deadline)); then
      FAILED="slurmctld is not answering"
      return 1
    fi
    sleep 0.2
  done

  if ! env "$MARK" slurmd -f "$CONF" -N "$node" </dev/null >>"$DIR/log/start.log" 2>&1; then
    FAILED="slurmd did not start"
    return 1
  fi
  deadline=$((SECONDS + 30))
  until [[ $state == idle ]]; do
    port_clash slurmd.pid slurmd.log && return 2
    if ((SECONDS > deadline)); then
      FAILED="node $node is '${state:-not known}', not idle, after 30 s"
      return 1
    fi
    sleep 0.2
    state=$(timeout 5 sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
  done
  say "up: node $node, $cpus CPUs, partition 'local', ports $port-$((port + 1)), state in $DIR"
  echo "export SLURM_CONF=$CONF"
}

fail_start() {
  echo "slurm-local: $*; last log lines:" >&2
  local f
  for f in "$DIR"/log/*.log "$DIR/munge/munged.log"; do
    if [[ -s $f ]]; then
      echo "== $f" >&2
      tail -n 15 "$f" >&2
    fi
  done
  do_stop || true
  exit 1
}

case $ACTION in
  start) do_start ;;
  stop)
    do_stop
    say "stopped; $DIR removed"
    ;;
  status)
    if controller_up; then
      export SLURM_CONF=$CONF
      sinfo
      squeue
    else
      say "not running (no controller for $CONF)"
      exit 1
    fi
    ;;
  env) echo "export SLURM_CONF=$CONF" ;;
esac

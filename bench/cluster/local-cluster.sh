#!/usr/bin/env bash
# local-cluster.sh: run an MPI program on a simulated cluster of K nodes on
# this one machine.  Each node is a Linux network namespace with its own host
# name; the nodes hang off one bridge that lives in a separate "switch"
# namespace, and every node link is rate limited with tc.  Ranks on the same
# node talk through shared memory (Open MPI's vader, MPICH's posix), ranks on
# different nodes through TCP over the limited links, so inter-node traffic
# costs roughly what it would on a real cluster with that link speed.
#
# Nothing is created in the root namespace: every address, link and the
# bridge live in namespaces made here, and all of it is removed on exit,
# error, Ctrl-C or SIGTERM.  Names carry this script's PID so that parallel
# runs do not clash.  Needs root (network namespaces and tc).
#
# Run with --help for usage.

set -euo pipefail

readonly PROG=${0##*/}
readonly PREFIX="nbrlc-$$"        # namespace names: $PREFIX-sw, $PREFIX-n1..
readonly NET=10.77.0              # private /24, exists only inside our netns
readonly SUBNET="$NET.0/24"
readonly NODE_IF=lc0              # node-side interface name (per namespace)
readonly BRIDGE=br0               # bridge name inside the switch namespace

RATE=1gbit
DELAY=""
MPI_KIND=${LC_MPI:-openmpi}       # openmpi (mpirun) or mpich (Hydra's mpiexec)
NODES=0
RPN=0
CMD=()
CREATED_NS=()                     # namespaces to delete on exit
CREATED_ETC=()                    # /etc/netns/<ns> dirs to delete on exit
MADE_ETC_NETNS=0                  # did we create /etc/netns itself?
TMPDIR_LC=""
MPI_PID=""
GUARD_DIR=""                      # finalize_guard.c's status files (MPICH)

usage() {
    cat <<EOF
Usage: $PROG [--mpi openmpi|mpich] [--rate RATE] [--delay D] K R CMD [ARGS...]
       $PROG --clean-stale
       $PROG --help

Simulate a cluster of K nodes with R MPI ranks each on this machine and run
CMD on it with Open MPI's mpirun or MPICH's mpiexec (Hydra), e.g.

  sudo $PROG 2 2 build/bench/nbr_bench --pattern rsg
  sudo $PROG --rate 100mbit 4 1 /tmp/netcheck
  sudo $PROG --mpi mpich 4 2 build-mpich/bench/nbr_bench --pattern rsg

Options:
  --mpi KIND    openmpi (default) or mpich; CMD must be built against the
                same MPI.  Also settable as LC_MPI.
  --rate RATE   link speed of every node, in tc units (default 1gbit;
                e.g. 100mbit, 10gbit, 500mbit).  Applies per direction.
  --delay D     extra one-way latency between nodes, tc units (e.g. 100us,
                1ms).  Needs the kernel's netem qdisc.
  --clean-stale remove namespaces and temp dirs left by runs of this
                script that were killed with SIGKILL (their PID no longer
                exists), then exit.
  --help        show this text.

Nodes are namespaces $PREFIX-n1..nK (hostnames node1..nodeK, addresses
$NET.1..$NET.K) bridged in namespace $PREFIX-sw; the launcher starts in
node1.  Ranks 0..R-1 run on node1, R..2R-1 on node2, and so on.

Environment:
  LC_MPIRUN_ARGS  extra launcher arguments, split on whitespace.  With Open
                  MPI, a default MCA parameter (pml, btl,
                  mpi_yield_when_idle, ...) or --bind-to named here is not
                  passed by the script, so this can override it, e.g.
                  LC_MPIRUN_ARGS="--mca pml ucx".
  LC_MPIEXEC      MPICH's launcher (default mpiexec.mpich, else mpiexec).
  UCX_*, MPIR_CVAR_*
                  with MPICH: the script sets UCX_NET_DEVICES=lc0,
                  UCX_TLS=tcp,self and MPIR_CVAR_POLLS_BEFORE_YIELD=1
                  unless already set; Hydra forwards the environment.
  LC_FINALIZE_GRACE, LC_FINALIZE_GUARD, LC_MPICC
                  with MPICH the ranks run under finalize_guard.c (built
                  with LC_MPICC, default mpicc.mpich; LD_PRELOAD is kept
                  after it): a rank whose MPI_Finalize hangs (UCX's TCP
                  transport) exits with its program's status after
                  LC_FINALIZE_GRACE s (default 10).  LC_FINALIZE_GUARD=0
                  runs without it.
  LC_GSO_SIZE, LC_GSO_SEGS, LC_BURST
                  for experiments: the largest packet the links hand their
                  shapers (bytes, segments) and the token bucket (bytes);
                  see "Links" in bench/README.md.
  NBR_*, PATH, LD_LIBRARY_PATH are forwarded to all ranks; ranks start in
  the current directory.
EOF
}

say() { echo "local-cluster: $*"; }
die() { echo "local-cluster: error: $*" >&2; exit 1; }

# ---------------------------------------------------------------- arguments

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --help|-h) usage; exit 0 ;;
            --clean-stale) check_prereqs; clean_stale; exit 0 ;;
            --rate) [[ $# -ge 2 ]] || die "--rate needs a value"
                    RATE=$2; shift 2 ;;
            --rate=*) RATE=${1#--rate=}; shift ;;
            --delay) [[ $# -ge 2 ]] || die "--delay needs a value"
                     DELAY=$2; shift 2 ;;
            --delay=*) DELAY=${1#--delay=}; shift ;;
            --mpi) [[ $# -ge 2 ]] || die "--mpi needs a value"
                   MPI_KIND=$2; shift 2 ;;
            --mpi=*) MPI_KIND=${1#--mpi=}; shift ;;
            --) shift; break ;;
            -*) die "unknown option $1 (see --help)" ;;
            *) break ;;
        esac
    done
    [[ $# -ge 3 ]] || { usage >&2; exit 2; }
    [[ $1 =~ ^[1-9][0-9]*$ && $1 -le 250 ]] || die "K must be 1..250, got '$1'"
    [[ $2 =~ ^[1-9][0-9]*$ ]] || die "R must be a positive integer, got '$2'"
    NODES=$1 RPN=$2
    shift 2
    [[ $MPI_KIND == openmpi || $MPI_KIND == mpich ]] ||
        die "--mpi must be openmpi or mpich, got '$MPI_KIND'"
    CMD=("$@")
    rate_to_bytes "$RATE" >/dev/null || die "bad --rate '$RATE' (e.g. 1gbit)"
    if [[ -n $DELAY && ! $DELAY =~ ^[0-9]+(\.[0-9]+)?(s|ms|us|usec|msec)$ ]]; then
        die "bad --delay '$DELAY' (e.g. 100us, 1ms)"
    fi
}

# Prints a tc rate such as "100mbit" or "1.5gbit" in bytes per second; fails
# on anything else.  Needed to size the token bucket.
rate_to_bytes() {
    local r=${1,,}
    [[ $r =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)$ ]] ||
        return 1
    awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" 'BEGIN {
        m["bit"] = 1/8; m["kbit"] = 1e3/8; m["mbit"] = 1e6/8
        m["gbit"] = 1e9/8; m["tbit"] = 1e12/8
        m["bps"] = 1; m["kbps"] = 1e3; m["mbps"] = 1e6; m["gbps"] = 1e9
        m["tbps"] = 1e12
        b = n * m[u]; if (b < 1000) exit 1
        printf "%d\n", b }'
}

check_prereqs() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (network namespaces and tc need it); try: sudo $0 ..."
    local tool launcher=mpirun
    if [[ $MPI_KIND == mpich ]]; then
        MPIEXEC=${LC_MPIEXEC:-$(command -v mpiexec.mpich || echo mpiexec)}
        launcher=$MPIEXEC
    fi
    for tool in ip tc unshare hostname "$launcher" awk; do
        command -v "$tool" >/dev/null ||
            die "'$tool' not found (need iproute2, util-linux, hostname, $MPI_KIND)"
    done
}

# ------------------------------------------------------------ setup helpers

ns_node() { echo "$PREFIX-n$1"; }
ns_switch() { echo "$PREFIX-sw"; }

# Creates a namespace and remembers it for teardown; refuses to reuse one,
# since that would mean a stale run with our PID (see --clean-stale).
make_ns() {
    local ns=$1
    [[ ! -e /var/run/netns/$ns ]] ||
        die "namespace $ns already exists (stale run? try --clean-stale)"
    ip netns add "$ns"
    CREATED_NS+=("$ns")
    ip -n "$ns" link set lo up
    # No IPv6: avoids link-local chatter and keeps the only addresses the
    # IPv4 ones we assign.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
}

# Shapes egress of one interface to RATE (token bucket), plus optional netem
# delay as its child.  Shaping both ends of a node's veth limits the node's
# upload and download separately, like a full-duplex NIC.
#
# The bucket holds ~1 ms of traffic but at least 64 KiB, so that one
# segmentation-offload packet (up to 64 KiB) fits and the kernel need not
# split it.  The price: a message that finds the bucket full leaves at
# once, so single messages of 8-128 KiB cross about twice as fast as the
# rate (bench/README.md, "Links", has the measurements). Smaller packets
# and buckets pace them, but then the timers of the shaper and the CPU cost
# of each packet lose 20-50 % of the rate, and under the load of a 4 x 4
# job an allgather of 64 KiB blocks took 10-16 ms instead of 6.5 ms. Neither
# netem nor fq, which pace without a bucket, exists in every kernel (this
# one has tbf and htb only). LC_GSO_SIZE / LC_GSO_SEGS / LC_BURST override
# the packet size and bucket for experiments.
shape() {
    local ns=$1 dev=$2 delay=$3 bytes burst
    bytes=$(rate_to_bytes "$RATE")
    if [[ -n ${LC_GSO_SIZE:-}${LC_GSO_SEGS:-} ]]; then
        ip -n "$ns" link set dev "$dev" gso_max_size "${LC_GSO_SIZE:-65536}" \
            gso_max_segs "${LC_GSO_SEGS:-64}"
    fi
    # 50 ms of queue keeps TCP from dropping (a drop costs a 200 ms
    # retransmit timeout, ruining timings).
    burst=${LC_BURST:-$(( bytes / 1000 > 65536 ? bytes / 1000 : 65536 ))}
    tc -n "$ns" qdisc add dev "$dev" root handle 1: \
        tbf rate "$RATE" burst "$burst" latency 50ms
    if [[ -n $delay ]]; then
        tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: \
            netem delay "$delay" limit 100000 2>/dev/null ||
            die "cannot add netem delay (kernel lacks sch_netem?); run without --delay"
    fi
}

make_switch() {
    local sw
    sw=$(ns_switch)
    make_ns "$sw"
    ip -n "$sw" link add "$BRIDGE" type bridge
    ip -n "$sw" link set "$BRIDGE" up
}

# Node i: namespace with a veth whose other end is a bridge port in the
# switch.  Both ends are created directly in their namespaces, so no link
# ever shows up in the root namespace.
make_node() {
    local i=$1 ns sw port
    ns=$(ns_node "$i")
    sw=$(ns_switch)
    port="p$i"
    make_ns "$ns"
    ip -n "$sw" link add "$port" type veth peer name "$NODE_IF" netns "$ns"
    ip -n "$sw" link set "$port" master "$BRIDGE" up
    ip -n "$ns" addr add "$NET.$i/24" dev "$NODE_IF"
    ip -n "$ns" link set "$NODE_IF" up
    shape "$ns" "$NODE_IF" "$DELAY"     # node -> switch (upload, + delay)
    shape "$sw" "$port" ""              # switch -> node (download)
    write_etc "$ns"
}

# `ip netns exec NS` bind-mounts /etc/netns/NS/* over /etc/*, which gives
# each node an /etc/hosts that resolves node1..nodeK to our private
# addresses (Open MPI looks the hostfile names up).
write_etc() {
    local ns=$1 i
    if [[ ! -d /etc/netns ]]; then
        mkdir -p /etc/netns
        MADE_ETC_NETNS=1
    fi
    mkdir "/etc/netns/$ns"
    CREATED_ETC+=("/etc/netns/$ns")
    {
        echo "127.0.0.1 localhost"
        for ((i = 1; i <= NODES; i++)); do
            echo "$NET.$i node$i"
        done
    } >"/etc/netns/$ns/hosts"
}

# mpirun's launcher calls "AGENT [options] HOST COMMAND..." the way it would
# call ssh; ours runs COMMAND in HOST's namespace under HOST's host name.
write_agent() {
    local agent=$TMPDIR_LC/agent
    cat >"$agent" <<EOF
#!/bin/sh
# Generated by $PROG (run $$): fake ssh into node namespaces.
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case \$host in
    node[1-9]*) ns="$PREFIX-n\${host#node}" ;;
    *) echo "local-cluster agent: unknown host '\$host'" >&2; exit 255 ;;
esac
# Like ssh, join the words and let a shell parse them.
exec ip netns exec "\$ns" unshare --uts -- \\
    sh -c 'hostname "\$1" && shift && exec sh -c "\$*"' sh "\$host" "\$@"
EOF
    chmod 755 "$agent"
}

write_hostfile() {
    local i
    for ((i = 1; i <= NODES; i++)); do
        if [[ $MPI_KIND == mpich ]]; then echo "node$i:$RPN"
        else echo "node$i slots=$RPN"; fi
    done >"$TMPDIR_LC/hostfile"
}

# ------------------------------------------------------------------ running

# True if LC_MPIRUN_ARGS mentions WORD, so the user's value wins over ours
# (Open MPI rejects an MCA parameter given twice).
user_has() { [[ " ${LC_MPIRUN_ARGS:-} " == *[[:space:]]"$1"[[:space:]]* ]]; }

# Fills the array MPIRUN with the whole launcher command line.
build_mpirun() {
    if [[ $MPI_KIND == mpich ]]; then build_mpiexec_mpich; else build_mpirun_ompi; fi
}

# Hydra starts one proxy per host through the agent (as it would ssh) and
# forwards the whole environment to the ranks, so settings travel as
# variables.  -iface makes the proxies call back to node1's bridge address.
build_mpiexec_mpich() {
    local extra=()
    # UCX carries the inter-node traffic: only over the node link and over
    # TCP, never over shared memory, which spans the fake nodes.
    export UCX_NET_DEVICES=${UCX_NET_DEVICES:-$NODE_IF}
    export UCX_TLS=${UCX_TLS:-tcp,self}
    # MPICH's knob for what Open MPI's mpi_yield_when_idle does (see
    # there); on ch4:ucx small calls still wait in 4 ms steps with it
    # (bench/README.md, MPICH on the emulated cluster).
    export MPIR_CVAR_POLLS_BEFORE_YIELD=${MPIR_CVAR_POLLS_BEFORE_YIELD:-1}
    MPIRUN=("$MPIEXEC" -f "$TMPDIR_LC/hostfile" -n $((NODES * RPN))
            -wdir "$PWD" -launcher ssh -launcher-exec "$TMPDIR_LC/agent"
            -iface "$NODE_IF")
    if [[ ${LC_FINALIZE_GUARD:-1} != 0 ]]; then
        build_finalize_guard
        GUARD_DIR=$TMPDIR_LC/guard
        mkdir "$GUARD_DIR"
        MPIRUN+=(-genv LD_PRELOAD "$TMPDIR_LC/finalize_guard.so${LD_PRELOAD:+:$LD_PRELOAD}"
                 -genv LC_GUARD_DIR "$GUARD_DIR")
    fi
    # shellcheck disable=SC2206
    if [[ -n ${LC_MPIRUN_ARGS:-} ]]; then extra=($LC_MPIRUN_ARGS); fi
    MPIRUN+=("${extra[@]}" "${CMD[@]}")
}

# MPICH over UCX's TCP transport can hang in MPI_Finalize after the
# program is done (see finalize_guard.c); the ranks get a guard that bounds it.
build_finalize_guard() {
    local src mpicc=${LC_MPICC:-mpicc.mpich}
    src=$(dirname "$(readlink -f "$0")")/finalize_guard.c
    [[ -r $src ]] || die "$src not found (set LC_FINALIZE_GUARD=0 to run without it)"
    "$mpicc" -shared -fPIC -O2 -o "$TMPDIR_LC/finalize_guard.so" "$src" -ldl ||
        die "building $src with $mpicc failed (set LC_MPICC, or LC_FINALIZE_GUARD=0)"
}

# After a guarded run in which a guard cut a finalize short: when every
# rank got to its exit (left a status file), the job's status is the
# programs' (OR-ed, as Hydra does), not what the launcher, upset by ranks
# leaving its barrier, reported or did to the ranks still in it.  Prints
# that status; fails where the launcher's status stands.
guarded_status() {
    local rc=$1 f n=0 cut=0 status word all=0
    for f in "$GUARD_DIR"/rank-*; do
        [[ -r $f ]] || continue
        read -r status word <"$f" || return 1
        [[ $status =~ ^[0-9]+$ && $word =~ ^(returned|cut|finalizing)$ ]] ||
            return 1
        n=$((n + 1)) all=$((all | status))
        [[ $word == cut ]] && cut=$((cut + 1))
    done
    [[ $n -eq $((NODES * RPN)) && $cut -gt 0 ]] || return 1
    say "$cut of $n ranks were cut off in MPI_Finalize after the grace" \
        "time (finalize_guard.c); exit status $all from the programs" \
        "(launcher: $rc)" >&2
    echo "$all"
}

build_mpirun_ompi() {
    local var extra=()
    MPIRUN=(mpirun --allow-run-as-root --oversubscribe
            --hostfile "$TMPDIR_LC/hostfile" -np $((NODES * RPN))
            --wdir "$PWD"
            --mca plm_rsh_agent "$TMPDIR_LC/agent"
            --mca plm_rsh_no_tree_spawn 1
            --mca btl_tcp_if_include "$SUBNET"
            --mca oob_tcp_if_include "$SUBNET")
    user_has pml || MPIRUN+=(--mca pml ob1)
    user_has btl || MPIRUN+=(--mca btl "self,vader,tcp")
    # All ranks of all "nodes" share this machine's few cores. Open MPI only
    # yields the CPU when it sees a node oversubscribed, and ours are not
    # (R slots each): busy-polling ranks then hold a core for whole time
    # slices while the rank with the next message waits, and an 8-byte
    # allgather on 4 x 4 took 64 ms, in steps of the scheduler's tick.
    user_has mpi_yield_when_idle || MPIRUN+=(--mca mpi_yield_when_idle 1)
    # 2 cores are shared by all "nodes"; binding would pin ranks of
    # different nodes onto the same core.
    user_has --bind-to || MPIRUN+=(--bind-to none)
    for var in PATH LD_LIBRARY_PATH $(compgen -e | grep '^NBR_' || true); do
        if [[ -n ${!var+x} ]]; then MPIRUN+=(-x "$var"); fi
    done
    # Word splitting of the user's string is intended here.
    # shellcheck disable=SC2206
    if [[ -n ${LC_MPIRUN_ARGS:-} ]]; then extra=($LC_MPIRUN_ARGS); fi
    MPIRUN+=("${extra[@]}" "${CMD[@]}")
}

print_header() {
    say "nodes=$NODES ranks/node=$RPN ranks=$((NODES * RPN))" \
        "rate=$RATE delay=${DELAY:-none} subnet=$SUBNET"
    say "namespaces $PREFIX-n1..n$NODES, switch $PREFIX-sw; $MPI_KIND's launcher in node1"
}

# mpirun runs in the background so that a signal reaches our trap at once
# (bash defers traps until a foreground child exits).
run_mpirun() {
    # The inner shell expands $1/$@, not us.
    # shellcheck disable=SC2016
    ip netns exec "$(ns_node 1)" unshare --uts -- \
        sh -c 'hostname "$1" && shift && exec "$@"' sh node1 "${MPIRUN[@]}" &
    MPI_PID=$!
    local rc=0
    wait "$MPI_PID" || rc=$?
    MPI_PID=""
    return "$rc"
}

# ----------------------------------------------------------------- teardown

# Kills every process still inside namespace $1 (ranks, orteds, agents).
kill_ns_procs() {
    local ns=$1 sig pids
    for sig in TERM KILL; do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [[ -n $pids ]] || return 0
        # shellcheck disable=SC2086
        kill -"$sig" $pids 2>/dev/null || true
        sleep 1
    done
}

# Asks mpirun to stop (it then stops its daemons and ranks), waits up to 10 s.
stop_mpirun() {
    [[ -n $MPI_PID ]] && kill -0 "$MPI_PID" 2>/dev/null || return 0
    kill -TERM "$MPI_PID" 2>/dev/null || true
    local t
    for ((t = 0; t < 20; t++)); do
        kill -0 "$MPI_PID" 2>/dev/null || break
        sleep 0.5
    done
    kill -KILL "$MPI_PID" 2>/dev/null || true
    wait "$MPI_PID" 2>/dev/null || true
}

# Runs on every exit path.  A process left in a namespace would keep its
# links alive after "ip netns del", so processes go first.
cleanup() {
    local rc=$? ns dir
    trap '' INT TERM HUP          # a second Ctrl-C must not cut teardown short
    trap - EXIT
    stop_mpirun
    for ns in "${CREATED_NS[@]}"; do kill_ns_procs "$ns"; done
    for ns in "${CREATED_NS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    for dir in "${CREATED_ETC[@]}"; do rm -rf -- "$dir"; done
    if [[ $MADE_ETC_NETNS -eq 1 ]]; then rmdir /etc/netns 2>/dev/null || true; fi
    if [[ -n $TMPDIR_LC ]]; then rm -rf -- "$TMPDIR_LC"; fi
    if [[ ${#CREATED_NS[@]} -gt 0 ]]; then
        say "torn down (${#CREATED_NS[@]} namespaces removed), exit status $rc"
    fi
    exit "$rc"
}

on_signal() {
    say "caught SIG$1, tearing down" >&2
    exit "$2"                     # runs cleanup via the EXIT trap
}

# For --clean-stale: removes nbrlc-PID-* namespaces (and /tmp/nbrlc-PID.*
# temp dirs) whose PID is gone.
clean_stale() {
    local ns pid n=0
    while read -r ns _; do
        [[ $ns =~ ^nbrlc-([0-9]+)- ]] || continue
        pid=${BASH_REMATCH[1]}
        kill -0 "$pid" 2>/dev/null && continue   # that run is still alive
        kill_ns_procs "$ns"
        ip netns del "$ns" && rm -rf -- "/etc/netns/$ns" && n=$((n + 1))
        say "removed stale namespace $ns"
    done < <(ip netns list)
    local dir
    for dir in /tmp/nbrlc-*.*; do
        [[ -d $dir && ${dir#/tmp/} =~ ^nbrlc-([0-9]+)\.[A-Za-z0-9]+$ ]] || continue
        kill -0 "${BASH_REMATCH[1]}" 2>/dev/null && continue
        rm -rf -- "$dir" && say "removed stale temp dir $dir"
    done
    rmdir /etc/netns 2>/dev/null || true
    say "$n stale namespaces removed"
}

main() {
    parse_args "$@"
    check_prereqs
    # Open MPI refuses to run as root without these (and --allow-run-as-root).
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    trap cleanup EXIT
    trap 'on_signal INT 130' INT
    trap 'on_signal TERM 143' TERM
    trap 'on_signal HUP 129' HUP
    TMPDIR_LC=$(mktemp -d "/tmp/$PREFIX.XXXXXX")
    print_header
    make_switch
    local i
    for ((i = 1; i <= NODES; i++)); do make_node "$i"; done
    write_agent
    write_hostfile
    build_mpirun
    say "running: ${MPIRUN[*]}"
    local rc=0 status
    run_mpirun || rc=$?
    if [[ -n $GUARD_DIR ]] && status=$(guarded_status "$rc"); then
        rc=$status
    fi
    return "$rc"
}

main "$@"

#!/usr/bin/env bash
# Regenerates the fake KFD sysfs tree of one Frontier node (OLCF; the same
# layout as LUMI-G) under this directory: 1 CPU (4 NUMA domains, KFD nodes
# 0-3) and 4 MI250X = 8 GCDs (KFD nodes 4-11). Files follow amdkfd's
# kfd_topology.c: "key value" lines, io_links/<i>/properties per node.
# The tree is committed; run this only to change it, then commit the result.
#
# Facts encoded below:
#  - GCD PCI buses c1 c6 c9 ce d1 d6 d9 de (domain 0), location_id =
#    bus << 8 | device << 3 | function (pci_dev_id);
#  - GCD -> NUMA domain: 0,1 -> 3; 2,3 -> 1; 4,5 -> 0; 6,7 -> 2 (OLCF
#    Frontier user guide, "NUMA and GCD" mapping);
#  - xGMI links (count per GCD pair; the two GCDs of one MI250X share 4,
#    other pairs 2, 1 or none), as rocm-smi --shownodesbw reports them on a
#    4 x MI250(X) node: 50000 MB/s per link, max = links x 50000, min =
#    50000, both 0 for pairs not directly linked;
#  - KFD lists an xGMI io_link to every GCD of the hive, direct or not,
#    weight = 15 x physical xGMI hops (KFD_CRAT_XGMI_WEIGHT);
#  - each GCD's first io_link goes to its CPU NUMA node, type 11 too
#    (Frontier's CPU-GPU links are Infinity Fabric).
set -euo pipefail
cd "$(dirname "$0")"

BUS=(c1 c6 c9 ce d1 d6 d9 de)
NUMA=(3 3 1 1 0 0 2 2)
GPU_ID=(21846 37612 60430 5412 16953 47205 29112 52611) # arbitrary, unique
LINKS="0 1 4
2 3 4
4 5 4
6 7 4
0 2 1
0 6 2
1 3 1
1 5 1
2 4 2
3 7 1
4 6 1
5 7 1"
CPUS=4
GPUS=8
PER_LINK=50000

declare -A links
for a in $(seq 0 $((GPUS - 1))); do
  for b in $(seq 0 $((GPUS - 1))); do links[$a,$b]=0; done
done
while read -r a b n; do links[$a,$b]=$n; links[$b,$a]=$n; done <<< "$LINKS"

# Physical xGMI hops: Floyd-Warshall over the direct links.
declare -A hops
for a in $(seq 0 $((GPUS - 1))); do
  for b in $(seq 0 $((GPUS - 1))); do
    if [ "$a" = "$b" ]; then hops[$a,$b]=0
    elif [ "${links[$a,$b]}" -gt 0 ]; then hops[$a,$b]=1
    else hops[$a,$b]=99; fi
  done
done
for k in $(seq 0 $((GPUS - 1))); do
  for a in $(seq 0 $((GPUS - 1))); do
    for b in $(seq 0 $((GPUS - 1))); do
      via=$((hops[$a,$k] + hops[$k,$b]))
      [ "$via" -lt "${hops[$a,$b]}" ] && hops[$a,$b]=$via
    done
  done
done

NODES=sys/class/kfd/kfd/topology/nodes
rm -rf sys
mkdir -p "$NODES"

link() { # dir type from to weight min max
  mkdir -p "$1"
  cat > "$1/properties" <<PROPS
type $2
version_major 0
version_minor 0
node_from $3
node_to $4
weight $5
min_latency 0
max_latency 0
min_bandwidth $6
max_bandwidth $7
recommended_transfer_size 0
flags 1
PROPS
}

cpu_node() { # node
  local dir=$NODES/$1
  mkdir -p "$dir/io_links"
  echo 0 > "$dir/gpu_id"
  echo "" > "$dir/name"
  cat > "$dir/properties" <<PROPS
cpu_cores_count 16
simd_count 0
mem_banks_count 0
caches_count 0
io_links_count $((CPUS - 1 + 2))
p2p_links_count 0
cpu_core_id_base $(($1 * 16))
simd_id_base 0
max_waves_per_simd 0
lds_size_in_kb 0
gds_size_in_kb 0
num_gws 0
wave_front_size 0
array_count 0
simd_arrays_per_engine 0
cu_per_simd_array 0
simd_per_cu 0
max_slots_scratch_cu 0
gfx_target_version 0
vendor_id 0
device_id 0
location_id 0
domain 0
drm_render_minor 0
hive_id 0
num_sdma_engines 0
num_sdma_xgmi_engines 0
num_sdma_queues_per_engine 0
num_cp_queues 0
max_engine_clk_ccompute 2000
PROPS
  local i=0 c g
  for c in $(seq 0 $((CPUS - 1))); do
    [ "$c" = "$1" ] && continue
    link "$dir/io_links/$i" 2 "$1" "$c" 32 0 0; i=$((i + 1))
  done
  for g in $(seq 0 $((GPUS - 1))); do
    [ "${NUMA[$g]}" = "$1" ] || continue
    link "$dir/io_links/$i" 11 "$1" $((CPUS + g)) 15 $PER_LINK $PER_LINK; i=$((i + 1))
  done
}

gpu_node() { # gcd
  local g=$1 node=$((CPUS + $1)) dir=$NODES/$((CPUS + $1))
  mkdir -p "$dir/io_links"
  echo "${GPU_ID[$g]}" > "$dir/gpu_id"
  echo "aldebaran" > "$dir/name"
  cat > "$dir/properties" <<PROPS
cpu_cores_count 0
simd_count 440
mem_banks_count 0
caches_count 0
io_links_count $GPUS
p2p_links_count 0
cpu_core_id_base 0
simd_id_base $((2147487744 + g * 256))
max_waves_per_simd 8
lds_size_in_kb 64
gds_size_in_kb 0
num_gws 64
wave_front_size 64
array_count 8
simd_arrays_per_engine 1
cu_per_simd_array 14
simd_per_cu 4
max_slots_scratch_cu 32
gfx_target_version 90010
vendor_id 4098
device_id 29704
location_id $((16#${BUS[$g]} << 8))
domain 0
drm_render_minor $((128 + g))
hive_id 1287633846392842112
num_sdma_engines 2
num_sdma_xgmi_engines 3
num_sdma_queues_per_engine 8
num_cp_queues 24
max_engine_clk_fcompute 1700
local_mem_size 0
fw_version 76
capability 746554112
debug_prop 1495
sdma_fw_version 8
unique_id $((1000 + g))
num_xcc 1
max_engine_clk_ccompute 2000
PROPS
  link "$dir/io_links/0" 11 "$node" "${NUMA[$g]}" 15 $PER_LINK $PER_LINK
  local i=1 p n
  for p in $(seq 0 $((GPUS - 1))); do
    [ "$p" = "$g" ] && continue
    n=${links[$g,$p]}
    if [ "$n" -gt 0 ]; then
      link "$dir/io_links/$i" 11 "$node" $((CPUS + p)) 15 $PER_LINK $((n * PER_LINK))
    else
      link "$dir/io_links/$i" 11 "$node" $((CPUS + p)) $((15 * hops[$g,$p])) 0 0
    fi
    i=$((i + 1))
  done
}

for c in $(seq 0 $((CPUS - 1))); do cpu_node "$c"; done
for g in $(seq 0 $((GPUS - 1))); do gpu_node "$g"; done

# One socket: the CPU tree nbrcoll counts sockets from (two CPUs suffice).
for cpu in 0 127; do
  mkdir -p "sys/devices/system/cpu/cpu$cpu/topology"
  echo 0 > "sys/devices/system/cpu/cpu$cpu/topology/physical_package_id"
done
echo "wrote $(find sys -type f | wc -l) files under $(pwd)/sys"

#!/usr/bin/env bash
# Builds a copy of gIM (LIS-Laboratory/gim) with two compiled limits raised, so that it is compared
# where its shipped build stops before solving. Nothing else changes:
#   - MAX_NUMBER_OF_RR_SETS (IM.h, shipped 30,000,000): its OPT estimation exits when a round asks for
#     more RR sets than this ("Required number of RR sets exceeded MAX_NUMBER_OF_RR_SETS").
#   - the CUDA malloc heap (IM.cu, shipped 128 MiB): the sampling kernels malloc overflow chunks of
#     their per-block queues there and exit with "Heap size on GPU is too small!" when it runs out.
# The heap is reserved before gIM sizes its RR-set store (90 % of the memory then free), so a larger
# heap leaves less room for RR sets: the figures of a raised build name both limits.
#   usage: bash benchmarks/gim_raise_limits.sh GIM_SOURCE_DIR OUT_DIR [HEAP_MIB] [MAX_RR_SETS]
#   GIM_SOURCE_DIR holds gIM's sources and a build.sh that builds ./gIM (the im-vs-gim kit's gim/).
#   Defaults: HEAP_MIB 8192, MAX_RR_SETS 120000000. Writes OUT_DIR/gIM.
set -euo pipefail
src=${1:?usage: gim_raise_limits.sh GIM_SOURCE_DIR OUT_DIR [HEAP_MIB] [MAX_RR_SETS]}
out=${2:?usage: gim_raise_limits.sh GIM_SOURCE_DIR OUT_DIR [HEAP_MIB] [MAX_RR_SETS]}
heap=${3:-8192}
max_rr=${4:-120000000}
for f in IM.h IM.cu build.sh; do
  [ -f "$src/$f" ] || { echo "gim_raise_limits.sh: $src/$f: no such file (is $src gIM's source folder?)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out"
cp -r "$src"/. "$out"/
rm -f "$out/gIM"
# Each substitution must hit exactly one line of upstream's text, or the build stops.
sub() {  # file, pattern, replacement
  local n
  n=$(grep -c -- "$2" "$out/$1" || true)
  [ "$n" = 1 ] || { echo "gim_raise_limits.sh: $1: expected one line matching '$2', found $n" >&2; exit 1; }
  sed -i "s/$2/$3/" "$out/$1"
}
sub IM.h '#define MAX_NUMBER_OF_RR_SETS 30000000' "#define MAX_NUMBER_OF_RR_SETS ${max_rr}"
sub IM.cu 'size_t heap_size = 1024ULL\*1024UL\*128UL;' "size_t heap_size = 1024ULL*1024UL*${heap}UL;"
bash "$out/build.sh"
echo "gIM with MAX_NUMBER_OF_RR_SETS=${max_rr} and a ${heap} MiB heap: $out/gIM"

#!/usr/bin/env bash
# Copies gIM's sources (LIS-Laboratory/gim d84b81a, as the im-vs-gim kit ships them) and changes three
# constants, so that gIM can run the large-spread cells of issue 15's Table 3; no algorithm changes:
#   1. its RR-set store: gIM sizes it at 90 % of free device memory, in uint32 entries, and hands that size
#      to its sampling kernel as a uint32 (max_rr_offset), which keeps it modulo 2^32: on an H200 the
#      kernel thinks about 1.2 G entries fit (how many depends on free memory). A set that ends past that
#      bound is counted but never written, and its warp stops. The patched store holds at most 0xF0000000
#      entries, all of which its 32-bit offsets can address (the margin keeps offset + size below 2^32);
#   2. its device malloc heap, from which each sampling warp chains 2 KB chunks while its set grows
#      (128 MiB: "Heap size on GPU is too small!" once about 4,000 warps hold sets of 30,000 entries);
#   3. MAX_NUMBER_OF_RR_SETS, its compiled bound on the sets one IMM phase may ask for (30 M).
#   usage: bash benchmarks/gim_patch.sh SRC DST [HEAP_GIB (16)] [MAX_SETS (120000000)]; then bash DST/build.sh
# Each substitution is checked; a source that does not match stops the script (exit 1) and DST is removed.
set -euo pipefail
src=$1 dst=$2 heap=${3:-16} max_sets=${4:-120000000}
rm -rf "$dst"
cp -r "$src" "$dst"
fail() { echo "gim_patch.sh: $1 not found in $src; nothing patched" >&2; rm -rf "$dst"; exit 1; }
store='d_rr_sets = thrust::device_vector<uint32_t>((l_free/sizeof(uint32_t)/10)*9, 0);'
grep -qF "$store" "$dst/IM.cu" || fail "the RR-set store's allocation"
grep -qF 'size_t heap_size = 1024ULL*1024UL*128UL;' "$dst/IM.cu" || fail "the heap size"
grep -qF '#define MAX_NUMBER_OF_RR_SETS 30000000' "$dst/IM.h" || fail "MAX_NUMBER_OF_RR_SETS"
sed -i 's|d_rr_sets = thrust::device_vector<uint32_t>((l_free/sizeof(uint32_t)/10)\*9, 0);|d_rr_sets = thrust::device_vector<uint32_t>(((l_free/sizeof(uint32_t)/10)*9 < 0xF0000000ULL ? (l_free/sizeof(uint32_t)/10)*9 : 0xF0000000ULL), 0);  /* gim_patch.sh 1 */|' "$dst/IM.cu"
sed -i "s|size_t heap_size = 1024ULL\*1024UL\*128UL;|size_t heap_size = ${heap}ULL*1024ULL*1024ULL*1024ULL;  /* gim_patch.sh 2 */|" "$dst/IM.cu"
sed -i "s|#define MAX_NUMBER_OF_RR_SETS 30000000|#define MAX_NUMBER_OF_RR_SETS ${max_sets}  /* gim_patch.sh 3 */|" "$dst/IM.h"
[ "$(grep -c 'gim_patch.sh [123]' "$dst/IM.cu" "$dst/IM.h" | awk -F: '{s += $2} END {print s}')" = 3 ] || fail "a patched line"
echo "patched gIM in $dst: store <= 0xF0000000 entries, heap ${heap} GiB, at most ${max_sets} RR sets"

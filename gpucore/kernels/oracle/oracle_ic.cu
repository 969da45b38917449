// oracle_ic.cu: forward IC Monte-Carlo of the oracle, 64 simulations packed per 64-bit word.
//
// Written for gpucore/oracle only (no solver shares it). Semantics (docs/oracle.md):
// simulation j of a batch has world seed w_j and first link h1_j = mix(w_j); arc k (original edge
// id = out-CSR position) is live in it iff  uniform(step(h1_j, k)) < p_k, i.e. gc_ic_live(w_j, k,
// p_k), since mix(w, k) = step(mix(w), k). The activated set of a simulation is everything reachable
// from the seeds over its live arcs, so it does not depend on the order in which arcs are tried.
//
// State of a batch of W words (64 W simulations), all indexed by entry x = w * n + v (uint64):
//   visited[x]   bit j: v active in simulation 64 w + j (bits only ever set, by atomicOr)
//   mask[2][x]   bits of v that became active at the previous level and still have to be expanded
//   queue[2][]   entries x with a non-zero mask of the current level (each at most once per level)
// Level L reads queue/mask of parity L and writes those of parity L+1; oracle_ic_clear zeroes the
// consumed masks afterwards. Counters live in device memory (one per level), so the host launches
// several levels without waiting and only reads a counter to see whether the frontier is empty.
//
// Work split: oracle_ic_expand_light gives each entry `group` lanes (striding over its out-arcs);
// entries of out-degree > light_max are deferred to oracle_ic_expand_heavy (one block per entry).
// No kernel uses __syncthreads or shared memory, and warp intrinsics only in oracle_reserve (whose
// non-GPU branch is a plain atomicAdd): every thread works alone, so any interleaving of threads
// (including the sequential one of gpucore/oracle/emulator.py) is valid.
#include "gc_loops.cuh"
#include "gc_random.cuh"
#include "oracle_queue.cuh"


// uniform(h) < p  <=>  (h >> 11) * 2^-53 < p  <=>  (h >> 11) < ceil(p * 2^53): both sides are exact
// in double (h >> 11 < 2^53, p a float32), so this integer test is gc_bernoulli(h, p) bit for bit.
__device__ __forceinline__ gc_u64 oic_live_bound(float p) {
    if (!(p > 0.0f)) return 0ULL;
    if (p >= 1.0f) return 9007199254740992ULL;  // 2^53: always live
    return (gc_u64)ceil((double)p * 9007199254740992.0);
}

// Expand arcs k = first, first + step, ... < end of entry x (node u in word w) for the bits in mask.
__device__ __forceinline__ void oic_scan(gc_i64 first, gc_i64 end, gc_i64 step, gc_u64 base, gc_u64 mask,
                                         const gc_u64* __restrict__ h1w, const int* __restrict__ out_dst,
                                         const float* __restrict__ out_prob, gc_u64* next_mask, gc_u64* visited,
                                         gc_u64* queue_out, gc_u64* cnt_out) {
    for (gc_i64 k = first; k < end; k += step) {
        const gc_u64 y = base + (gc_u64)(gc_i64)out_dst[k];
        // A stale read only makes us try bits that are already set; atomicOr below decides.
        gc_u64 cand = mask & ~visited[y];
        if (cand == 0ULL) continue;
        const gc_u64 bound = oic_live_bound(out_prob[k]);
        if (bound == 0ULL) continue;
        gc_u64 live = 0ULL;
        while (cand != 0ULL) {
            const int j = __ffsll((long long)cand) - 1;
            cand &= cand - 1ULL;
            if ((gc_step(h1w[j], (gc_u64)k) >> 11) < bound) live |= 1ULL << j;
        }
        if (live == 0ULL) continue;
        const gc_u64 claimed = live & ~atomicOr(&visited[y], live);  // bits this thread activated
        if (claimed == 0ULL) continue;
        if (atomicOr(&next_mask[y], claimed) == 0ULL) {  // first claim of y at this level: enqueue once
            queue_out[oracle_reserve(cnt_out)] = y;
        }
    }
}

extern "C" __global__ void oracle_ic_expand_light(const gc_i64* __restrict__ out_indptr,
                                                  const int* __restrict__ out_dst,
                                                  const float* __restrict__ out_prob, gc_i64 n,
                                                  const gc_u64* __restrict__ h1, const gc_u64* queue_in,
                                                  const gc_u64* cnt_in, const gc_u64* cur_mask, gc_u64* next_mask,
                                                  gc_u64* visited, gc_u64* queue_out, gc_u64* cnt_out,
                                                  gc_u64* heavy_queue, gc_u64* heavy_cnt, gc_i64 light_max,
                                                  int group) {
    const gc_u64 count = *cnt_in;
    const gc_u64 tid = (gc_u64)gc_thread_id();
    const gc_u64 groups = (gc_u64)gc_thread_count() / (gc_u64)group;
    const gc_i64 lane = (gc_i64)(tid % (gc_u64)group);
    for (gc_u64 i = tid / (gc_u64)group; i < count; i += groups) {
        const gc_u64 x = queue_in[i];
        const gc_u64 w = x / (gc_u64)n;
        const gc_i64 u = (gc_i64)(x - w * (gc_u64)n);
        const gc_i64 begin = out_indptr[u];
        const gc_i64 end = out_indptr[u + 1];
        if (end - begin > light_max) {
            if (lane == 0) heavy_queue[oracle_reserve(heavy_cnt)] = x;
            continue;
        }
        oic_scan(begin + lane, end, (gc_i64)group, w * (gc_u64)n, cur_mask[x], h1 + 64 * w, out_dst, out_prob,
                 next_mask, visited, queue_out, cnt_out);
    }
}

extern "C" __global__ void oracle_ic_expand_heavy(const gc_i64* __restrict__ out_indptr,
                                                  const int* __restrict__ out_dst,
                                                  const float* __restrict__ out_prob, gc_i64 n,
                                                  const gc_u64* __restrict__ h1, const gc_u64* heavy_queue,
                                                  const gc_u64* heavy_cnt, const gc_u64* cur_mask, gc_u64* next_mask,
                                                  gc_u64* visited, gc_u64* queue_out, gc_u64* cnt_out) {
    const gc_u64 count = *heavy_cnt;
    GC_FOR_GRID_BLOCKS(i, 0, count) {
        const gc_u64 x = heavy_queue[i];
        const gc_u64 w = x / (gc_u64)n;
        const gc_i64 u = (gc_i64)(x - w * (gc_u64)n);
        oic_scan(out_indptr[u] + (gc_i64)threadIdx.x, out_indptr[u + 1], (gc_i64)blockDim.x, w * (gc_u64)n,
                 cur_mask[x], h1 + 64 * w, out_dst, out_prob, next_mask, visited, queue_out, cnt_out);
    }
}

// Zero the masks consumed at this level (they become the next-mask array two levels later).
extern "C" __global__ void oracle_ic_clear(const gc_u64* queue_in, const gc_u64* cnt_in, gc_u64* cur_mask) {
    const gc_u64 count = *cnt_in;
    GC_FOR_GRID(i, 0, count) cur_mask[queue_in[i]] = 0ULL;
}

// counts[64 w + j] += number of v with bit j of visited[w * n + v] set.
// A tile is `per_thread * blockDim.x` consecutive nodes of one word; thread t of the tile reads
// nodes t, t + blockDim.x, ... (coalesced) and adds each word into bit-sliced counters (plane p
// holds bit p of 64 per-simulation counts), so a word costs a few logic operations, not 64.
#define OIC_PLANES 16
extern "C" __global__ void oracle_ic_count(const gc_u64* visited, gc_i64 n, gc_i64 words, gc_i64 per_thread,
                                           gc_u64* counts) {
    const gc_i64 tile_nodes = per_thread * (gc_i64)blockDim.x;  // < 2^OIC_PLANES * blockDim.x
    const gc_i64 tiles_per_word = (n + tile_nodes - 1) / tile_nodes;
    const gc_i64 tiles = tiles_per_word * words;
    GC_FOR_GRID_BLOCKS(tile, 0, tiles) {
        const gc_i64 w = tile / tiles_per_word;
        const gc_i64 first = (tile - w * tiles_per_word) * tile_nodes + (gc_i64)threadIdx.x;
        gc_i64 last = (tile - w * tiles_per_word + 1) * tile_nodes;
        if (last > n) last = n;
        gc_u64 plane[OIC_PLANES];
#pragma unroll
        for (int p = 0; p < OIC_PLANES; ++p) plane[p] = 0ULL;
        bool any = false;
        for (gc_i64 v = first; v < last; v += blockDim.x) {
            gc_u64 carry = visited[w * n + v];
            if (carry == 0ULL) continue;
            any = true;
#pragma unroll
            for (int p = 0; p < OIC_PLANES; ++p) {
                const gc_u64 t = plane[p] & carry;
                plane[p] ^= carry;
                carry = t;
            }
        }
        if (!any) continue;
        for (int j = 0; j < 64; ++j) {
            gc_u64 c = 0ULL;
#pragma unroll
            for (int p = 0; p < OIC_PLANES; ++p) c |= ((plane[p] >> j) & 1ULL) << p;
            if (c != 0ULL) atomicAdd(&counts[64 * w + j], c);
        }
    }
}

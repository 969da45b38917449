// oracle_lt.cu: forward LT Monte-Carlo of the oracle, one simulation per entry x = s * n + v.
//
// Written for gpucore/oracle only. Semantics (docs/oracle.md, gpucore/random/worlds.py): fixed-point
// weights q_k = gc_lt_fixed_weight(w_k) (floor(w_k 2^40)), thresholds T_v = mix(world_s, v) >> 24
// = step(h1_s, v) >> 24 with h1_s = mix(world_s); v becomes active once the q of its active in-arcs
// sum to MORE than T_v. acc[x] accumulates that sum with 64-bit atomicAdd; since q >= 0 the partial
// sums of one x are increasing, so exactly one addition crosses from <= T_v to > T_v: that thread
// activates v and enqueues it. Seeds are active before the first level, so they are never enqueued
// twice. The activated set is the least fixed point, independent of the order of additions.
//
// Queues hold entries x (uint64); each x is enqueued at most once overall. Counters live in device
// memory, one per level (see oracle_ic.cu). Entries of out-degree > light_max go to the heavy kernel
// (one block per entry). No __syncthreads or shared memory; warp intrinsics only in oracle_reserve.
#include "gc_loops.cuh"
#include "gc_random.cuh"
#include "oracle_queue.cuh"


__device__ __forceinline__ void olt_scan(gc_i64 first, gc_i64 end, gc_i64 step, gc_u64 base, gc_u64 h1s,
                                         const int* __restrict__ out_dst, const float* __restrict__ out_weight,
                                         gc_u64* acc, unsigned char* active, gc_u64* queue_out, gc_u64* cnt_out) {
    for (gc_i64 k = first; k < end; k += step) {
        const gc_i64 v = (gc_i64)out_dst[k];
        const gc_u64 y = base + (gc_u64)v;
        if (active[y] != 0) continue;  // stale reads are harmless: an active v never crosses again
        const gc_i64 q = gc_lt_fixed_weight(out_weight[k]);
        if (q <= 0) continue;
        const gc_i64 before = (gc_i64)atomicAdd(&acc[y], (gc_u64)q);
        const gc_i64 threshold = (gc_i64)(gc_step(h1s, (gc_u64)v) >> (64 - GC_LT_FIXED_BITS));
        if (before <= threshold && before + q > threshold) {  // the unique crossing addition
            active[y] = 1;
            queue_out[oracle_reserve(cnt_out)] = y;
        }
    }
}

extern "C" __global__ void oracle_lt_expand_light(const gc_i64* __restrict__ out_indptr,
                                                  const int* __restrict__ out_dst,
                                                  const float* __restrict__ out_weight, gc_i64 n,
                                                  const gc_u64* __restrict__ h1, const gc_u64* queue_in,
                                                  const gc_u64* cnt_in, gc_u64* acc, unsigned char* active,
                                                  gc_u64* queue_out, gc_u64* cnt_out, gc_u64* heavy_queue,
                                                  gc_u64* heavy_cnt, gc_i64 light_max, int group) {
    const gc_u64 count = *cnt_in;
    const gc_u64 tid = (gc_u64)gc_thread_id();
    const gc_u64 groups = (gc_u64)gc_thread_count() / (gc_u64)group;
    const gc_i64 lane = (gc_i64)(tid % (gc_u64)group);
    for (gc_u64 i = tid / (gc_u64)group; i < count; i += groups) {
        const gc_u64 x = queue_in[i];
        const gc_u64 s = x / (gc_u64)n;
        const gc_i64 u = (gc_i64)(x - s * (gc_u64)n);
        const gc_i64 begin = out_indptr[u];
        const gc_i64 end = out_indptr[u + 1];
        if (end - begin > light_max) {
            if (lane == 0) heavy_queue[oracle_reserve(heavy_cnt)] = x;
            continue;
        }
        olt_scan(begin + lane, end, (gc_i64)group, s * (gc_u64)n, h1[s], out_dst, out_weight, acc, active, queue_out,
                 cnt_out);
    }
}

extern "C" __global__ void oracle_lt_expand_heavy(const gc_i64* __restrict__ out_indptr,
                                                  const int* __restrict__ out_dst,
                                                  const float* __restrict__ out_weight, gc_i64 n,
                                                  const gc_u64* __restrict__ h1, const gc_u64* heavy_queue,
                                                  const gc_u64* heavy_cnt, gc_u64* acc, unsigned char* active,
                                                  gc_u64* queue_out, gc_u64* cnt_out) {
    const gc_u64 count = *heavy_cnt;
    GC_FOR_GRID_BLOCKS(i, 0, count) {
        const gc_u64 x = heavy_queue[i];
        const gc_u64 s = x / (gc_u64)n;
        const gc_i64 u = (gc_i64)(x - s * (gc_u64)n);
        olt_scan(out_indptr[u] + (gc_i64)threadIdx.x, out_indptr[u + 1], (gc_i64)blockDim.x, s * (gc_u64)n, h1[s],
                 out_dst, out_weight, acc, active, queue_out, cnt_out);
    }
}

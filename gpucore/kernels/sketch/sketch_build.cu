// sketch_build.cu: DiFuseR's sketch construction (Göktürk & Kaya, arXiv 2410.14047, Algorithms 1-2).
//
// Mapping of the paper: one block per vertex (grid-stride over the vertices), one thread per world
// (blockDim.x = the slice's worlds, a multiple of 32, at most 1024). Layout and keys:
// sketch_common.cuh.
//   sk_arc_hashes  h(u, v) of every arc, a warp per vertex (xor sampling, once per solve);
//   sk_fill        Algorithm 1 with the spec's fix: registers that are not -1 restart at clz64(h_r(u));
//   sk_simulate    one pull sweep of Algorithm 2 in place: M_u[j] = max(M_u[j], M_v[j]) over the
//                  out-arcs u -> v live in world j, visited (-1) registers of u untouched. No
//                  atomics: registers only grow, so a stale read is repaired by a later sweep, and
//                  every writer of a flag writes the same 1. changed[u] = 1 and *any = 1 when a
//                  register of u grew. With `dirty` (the changed flags of the previous sweep), a
//                  vertex none of whose out-neighbours grew is skipped: it already read their final
//                  values. The host sweeps until *any stays 0 (the global "changed" flag).
#include "sketch_common.cuh"

extern "C" __global__ void sk_arc_hashes(const gc_i64* __restrict__ indptr, const int* __restrict__ dst, gc_i64 n,
                                         unsigned int seed32, unsigned int* __restrict__ hashes) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    for (gc_i64 u = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; u < n; u += warps)
        for (gc_i64 e = indptr[u] + lane; e < indptr[u + 1]; e += 32)
            hashes[e] = sk_edge_hash((unsigned int)u, (unsigned int)dst[e], seed32);
}

extern "C" __global__ void __launch_bounds__(1024)
sk_fill(signed char* __restrict__ registers, gc_i64 n, gc_i64 stride, gc_i64 j0,
        const gc_u64* __restrict__ register_keys) {
    const gc_i64 j = j0 + threadIdx.x;
    const gc_u64 key = register_keys[j];
    for (gc_i64 u = blockIdx.x; u < n; u += gridDim.x) {
        signed char* r = registers + u * stride + j;
        if (*r != SK_VISITED) *r = sk_register_start(key, u);
    }
}

extern "C" __global__ void __launch_bounds__(1024)
sk_simulate(const gc_i64* __restrict__ indptr, const int* __restrict__ dst,
            const unsigned int* __restrict__ hashes,
            const unsigned int* __restrict__ thresholds,
            const gc_u64* __restrict__ live_keys, int keyed, signed char* registers,
            gc_i64 n, gc_i64 stride, gc_i64 j0, const unsigned char* __restrict__ dirty,
            int use_dirty, unsigned char* __restrict__ changed, int* __restrict__ any) {
    const gc_i64 j = j0 + threadIdx.x;
    const gc_u64 key = live_keys[j];
    for (gc_i64 u = blockIdx.x; u < n; u += gridDim.x) {
        const gc_i64 beg = indptr[u], end = indptr[u + 1];
        if (use_dirty) {
            bool stale = false;
            for (gc_i64 e = beg + threadIdx.x; e < end && !stale; e += blockDim.x) stale = dirty[dst[e]] != 0;
            if (!__syncthreads_or(stale)) continue;  // block-uniform
        }
        signed char* mine = registers + u * stride + j;
        const signed char cur = *mine;
        signed char best = cur;
        if (cur != SK_VISITED) {
            for (gc_i64 e = beg; e < end; ++e) {
                if (keyed) {  // a coin costs a 64-bit hash, a register one byte of a coalesced row: load first
                    const signed char mv = registers[(gc_i64)dst[e] * stride + j];
                    if (mv > best && sk_live(1, key, 0u, e, thresholds[e])) best = mv;
                } else if (sk_live(0, key, hashes[e], e, thresholds[e])) {  // one XOR: test first
                    const signed char mv = registers[(gc_i64)dst[e] * stride + j];
                    best = mv > best ? mv : best;
                }
            }
            if (best != cur) *mine = best;
        }
        if (__syncthreads_or(best != cur) && threadIdx.x == 0) {
            changed[u] = 1;
            *any = 1;
        }
    }
}

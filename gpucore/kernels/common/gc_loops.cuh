// gc_loops.cuh: the loop and warp idioms every kernel family shares (amcss, im, oracle, sketch, sds).
//
// Who covers which items:
//   GC_FOR_GRID(i, begin, end)        every thread of the grid, one item each (grid-stride loop)
//   GC_FOR_GRID_WARPS(i, begin, end)  every warp of the grid, one item per warp (warp-stride loop)
//   GC_FOR_GRID_WARP_CHUNKS(b, begin, end)  every warp of the grid, 32 items per step: lane l takes
//                                     item b + l (which may be >= end); warp-uniform trip count, so the
//                                     body may use warp collectives (full warps: blockDim.x % 32 == 0)
//   GC_FOR_GRID_BLOCKS(i, begin, end) every block of the grid, one item per block (block-stride loop)
//   GC_FOR_BLOCK(i, begin, end)       the threads of one block over [begin, end) (stride blockDim.x)
//   GC_FOR_BLOCK_CHUNKS(b, begin, end) one block, blockDim.x items per step: thread t takes item b + t
//                                     (which may be >= end); block-uniform trip count, so the body
//                                     may use __syncthreads and block-wide scans
//   GC_FOR_WARP(i, begin, end)        the 32 lanes of one warp over [begin, end) (stride 32)
// The index i is a gc_i64 declared by the macro; end is converted to gc_i64 (counts below 2^63).
// Every loop visits [begin, end) exactly once over its participants, whatever the launch size, so
// a kernel written with them is correct for any grid (the emulator runs small ones).
//
// Lane arithmetic and warp collectives (all 32 lanes must call the collectives, mask GC_FULL_MASK):
//   gc_lane(), gc_warp(), gc_warps_per_block(), gc_lanes_below()
//   gc_thread_id(), gc_thread_count(), gc_warp_id(), gc_warp_count()      (over the whole grid)
//   gc_warp_inclusive_sum(x)    lane l gets x_0 + ... + x_l   (int, long long, unsigned long long)
//   gc_warp_sum(x)              every lane gets x_0 + ... + x_31
//   gc_row_next(...)            a warp's next step over an IC in-row: 32 arcs, or 32 geometric jumps at a
//                               skipping node (gpucore/im/skipping.py)
#ifndef GC_LOOPS_CUH
#define GC_LOOPS_CUH
#include "gc_random.cuh"  // gc_i64, gc_u64

#define GC_FULL_MASK 0xffffffffu

__device__ __forceinline__ int gc_lane() { return (int)(threadIdx.x & 31u); }
__device__ __forceinline__ int gc_warp() { return (int)(threadIdx.x >> 5); }
__device__ __forceinline__ int gc_warps_per_block() { return (int)((blockDim.x + 31u) >> 5); }
// bit l set for every lane l below this one: __popc(ballot & gc_lanes_below()) is the lane's rank
__device__ __forceinline__ unsigned gc_lanes_below() { return (1u << gc_lane()) - 1u; }

__device__ __forceinline__ gc_i64 gc_thread_id() { return (gc_i64)blockIdx.x * (gc_i64)blockDim.x + threadIdx.x; }
__device__ __forceinline__ gc_i64 gc_thread_count() { return (gc_i64)gridDim.x * (gc_i64)blockDim.x; }
__device__ __forceinline__ gc_i64 gc_warp_id() { return gc_thread_id() >> 5; }
__device__ __forceinline__ gc_i64 gc_warp_count() { return gc_thread_count() >> 5; }

#define GC_FOR_GRID(i, begin, end) \
    for (gc_i64 i = (gc_i64)(begin) + gc_thread_id(); i < (gc_i64)(end); i += gc_thread_count())
#define GC_FOR_GRID_WARPS(i, begin, end) \
    for (gc_i64 i = (gc_i64)(begin) + gc_warp_id(); i < (gc_i64)(end); i += gc_warp_count())
#define GC_FOR_GRID_WARP_CHUNKS(b, begin, end) \
    for (gc_i64 b = (gc_i64)(begin) + 32 * gc_warp_id(); b < (gc_i64)(end); b += 32 * gc_warp_count())
#define GC_FOR_GRID_BLOCKS(i, begin, end) \
    for (gc_i64 i = (gc_i64)(begin) + (gc_i64)blockIdx.x; i < (gc_i64)(end); i += (gc_i64)gridDim.x)
#define GC_FOR_BLOCK(i, begin, end) \
    for (gc_i64 i = (gc_i64)(begin) + (gc_i64)threadIdx.x; i < (gc_i64)(end); i += (gc_i64)blockDim.x)
#define GC_FOR_BLOCK_CHUNKS(b, begin, end) \
    for (gc_i64 b = (gc_i64)(begin); b < (gc_i64)(end); b += (gc_i64)blockDim.x)
#define GC_FOR_WARP(i, begin, end) \
    for (gc_i64 i = (gc_i64)(begin) + (gc_i64)gc_lane(); i < (gc_i64)(end); i += 32)

// Inclusive prefix sum over the lanes of a full warp (Hillis-Steele with shuffles).
template <typename T>
__device__ __forceinline__ T gc_warp_inclusive_sum(T x) {
    const int lane = gc_lane();
    for (int d = 1; d < 32; d <<= 1) {
        const T y = __shfl_up_sync(GC_FULL_MASK, x, d);
        if (lane >= d) x += y;
    }
    return x;
}

// Sum over the lanes of a full warp, returned to every lane (butterfly with shuffles).
template <typename T>
__device__ __forceinline__ T gc_warp_sum(T x) {
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(GC_FULL_MASK, x, off);
    return x;
}

// A warp's next step over a row of d arcs (all lanes call it with the same arguments): this lane's position in
// the row (>= d: none). A row with coins takes 32 consecutive arcs a step; a skipping row (rlq < 0) takes the next
// 32 live positions, lane i's jump drawn by jump(gc_step(hv, jumps + i), rlq, d) (a geometric gap, the caller's
// gc_skip_jump or a non-inlined wrapper of it) and placed by a warp prefix sum (SUBSIM, Guo et al., SIGMOD 2020,
// sec. 4). next: the first position of the step (advanced past it); jumps: the jumps drawn so far (+= 32).
template <typename Jump>
__device__ __forceinline__ gc_i64 gc_row_next(bool skipping, gc_u64 hv, double rlq, gc_i64 d, gc_i64& next, int& jumps,
                                              Jump jump) {
    const int lane = gc_lane();
    if (!skipping) {
        next += 32;
        return next - 32 + lane;
    }
    const gc_i64 at = next + gc_warp_inclusive_sum(jump(gc_step(hv, (gc_u64)(jumps + lane)), rlq, d) + 1) - 1;
    jumps += 32;
    next = __shfl_sync(GC_FULL_MASK, at, 31) + 1;
    return at;
}

#endif  // GC_LOOPS_CUH

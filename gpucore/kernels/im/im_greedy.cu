// im_greedy.cu: gIM's greedy max-cover on the GPU (TPDS 2021, section 3.8, Algorithm 7).
//
// counts[e] = number of not-yet-covered RR sets holding element e (-1 or less: not selectable).
// Each greedy step: im_argmax (ties to the lowest id), then im_cover: a warp per RR set looks for
// the chosen element in every uncovered set and, where found, marks the set covered and
// decrements the counts of all its members. The host then blocks the chosen element (and, in
// MRIM, the elements of a round that holds k seeds).
#include "gc_random.cuh"

#define IM_FULL 0xffffffffu

// counts[elements[x]] += 1 for every element of every set.
extern "C" __global__ void im_count(const int* __restrict__ elements, gc_i64 total, int* __restrict__ counts) {
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    for (gc_i64 x = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; x < total; x += stride)
        atomicAdd(&counts[elements[x]], 1);
}

// result[0] = max over e with counts[e] >= 0 of (counts[e] << 32 | (0xFFFFFFFF - e)): the largest
// count, and among equal counts the lowest e. result[0] must be 0 before the launch.
extern "C" __global__ void im_argmax(const int* __restrict__ counts, gc_i64 universe,
                                     unsigned long long* __restrict__ result) {
    __shared__ unsigned long long part[32];
    unsigned long long best = 0ULL;
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    for (gc_i64 e = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; e < universe; e += stride) {
        const int c = counts[e];
        if (c >= 0) {
            const unsigned long long key =
                ((unsigned long long)(unsigned int)c << 32) | (unsigned long long)(0xFFFFFFFFu - (unsigned int)e);
            best = key > best ? key : best;
        }
    }
    for (int d = 16; d > 0; d >>= 1) {
        const unsigned long long o = __shfl_down_sync(IM_FULL, best, d);
        best = o > best ? o : best;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) part[warp] = best;
    __syncthreads();
    if (warp == 0) {
        const int warps = (blockDim.x + 31) >> 5;
        best = lane < warps ? part[lane] : 0ULL;
        for (int d = 16; d > 0; d >>= 1) {
            const unsigned long long o = __shfl_down_sync(IM_FULL, best, d);
            best = o > best ? o : best;
        }
        if (lane == 0 && best) atomicMax(result, best);
    }
}

// A warp per set (grid-stride): uncovered sets holding `chosen` become covered; their members'
// counts drop by one. newly[0] counts the sets covered by this call.
extern "C" __global__ void im_cover(const gc_i64* __restrict__ offsets, const int* __restrict__ elements,
                                    gc_i64 num_sets, int chosen, unsigned char* __restrict__ covered,
                                    int* __restrict__ counts, unsigned long long* __restrict__ newly) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    for (gc_i64 i = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < num_sets; i += warps) {
        if (covered[i]) continue;  // same value for the whole warp
        const gc_i64 beg = offsets[i], end = offsets[i + 1];
        bool found = false;
        for (gc_i64 base = beg; base < end; base += 32) {
            const gc_i64 x = base + lane;
            const bool hit = (x < end) && (elements[x] == chosen);
            if (__any_sync(IM_FULL, hit)) {
                found = true;
                break;
            }
        }
        if (!found) continue;
        if (lane == 0) {
            covered[i] = 1;
            atomicAdd(newly, 1ULL);
        }
        for (gc_i64 x = beg + lane; x < end; x += 32) atomicSub(&counts[elements[x]], 1);
    }
}

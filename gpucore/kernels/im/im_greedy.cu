// im_greedy.cu: greedy max-cover on the GPU through an inverted index (rework of gIM's Algorithm 7,
// TPDS 2021, section 3.8, which scans every uncovered set for every pick).
//
// State of one selection (host code: gpucore/im/cuda.py):
//   counts[e]      uncovered RR sets holding element e (e = t * n + u: node u in round t);
//   inv_ptr/inv_sets  the inverted index: the sets holding e are inv_sets[inv_ptr[e] .. inv_ptr[e+1]);
//   covered[i]     set i is covered; taken[e]: e was chosen; per_round[t]: seeds chosen in round t;
//   keys[s]        step s's choice packed as count << 32 | (2^32 - 1 - e) (0: nothing was allowed).
// A greedy step is im_argmax (writes keys[s]) then im_take (reads keys[s] on the device), so the k
// steps run back to back without a host round trip; the host reads keys once at the end; small
// collections run every step in one launch of one block instead (im_greedy_block). A pick
// costs the length of its element's list plus the sizes of the sets it newly covers: O(total) for
// the whole greedy instead of O(k * total).
#include "gc_random.cuh"

#define IM_FULL 0xffffffffu

// counts[elements[x]] += 1 for every element of every set.
extern "C" __global__ void im_count(const int* __restrict__ elements, gc_i64 total, int* __restrict__ counts) {
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    for (gc_i64 x = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; x < total; x += stride)
        atomicAdd(&counts[elements[x]], 1);
}

// Inverted index: a warp per set appends the set's index to the list of each of its elements;
// fill[e] starts at inv_ptr[e] (the order inside a list is arbitrary and never matters).
extern "C" __global__ void im_index(const gc_i64* __restrict__ offsets, const int* __restrict__ elements,
                                    gc_i64 num_sets, unsigned long long* __restrict__ fill,
                                    int* __restrict__ inv_sets) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    for (gc_i64 i = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < num_sets; i += warps) {
        const gc_i64 end = offsets[i + 1];
        for (gc_i64 x = offsets[i] + lane; x < end; x += 32) {
            const unsigned long long pos = atomicAdd(&fill[elements[x]], 1ULL);
            inv_sets[pos] = (int)i;
        }
    }
}

// This thread's largest key counts[e] << 32 | (2^32 - 1 - e) over the allowed e it visits (u = first,
// first + stride, ... in every open round): the largest count, and among equal counts the lowest e.
// Allowed: taken[e] == 0 and per_round[e / n] < k. 0 when it visits none.
__device__ __forceinline__ unsigned long long im_best_key(const int* __restrict__ counts,
                                                          const unsigned char* __restrict__ taken,
                                                          const int* __restrict__ per_round, int k, gc_i64 n,
                                                          gc_i64 rounds, gc_i64 first, gc_i64 stride) {
    unsigned long long best = 0ULL;
    for (gc_i64 t = 0; t < rounds; ++t) {
        if (per_round[t] >= k) continue;  // a closed round (MRIM): the same for every thread
        const gc_i64 base = t * n;
        for (gc_i64 u = first; u < n; u += stride) {
            const gc_i64 e = base + u;
            if (taken[e]) continue;
            const unsigned long long key = ((unsigned long long)(unsigned int)counts[e] << 32) |
                                           (unsigned long long)(0xFFFFFFFFu - (unsigned int)e);
            best = key > best ? key : best;
        }
    }
    return best;
}

// The block's largest key, valid in thread 0 (every thread calls it; `part` holds 32 keys).
__device__ __forceinline__ unsigned long long im_block_max(unsigned long long best, unsigned long long* part) {
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
    }
    return best;
}

// Covers the uncovered sets of e's list q = inv_ptr[e] + warp, + warps, ... (a warp per set; their members'
// counts drop by one); returns, in lane 0, the sets this warp covered. A set lists an element once, so no
// two warps hold the same set.
__device__ __forceinline__ unsigned long long im_cover(const gc_i64* __restrict__ inv_ptr,
                                                       const int* __restrict__ inv_sets,
                                                       const gc_i64* __restrict__ offsets,
                                                       const int* __restrict__ elements, gc_i64 e, gc_i64 warp,
                                                       gc_i64 warps, unsigned char* __restrict__ covered,
                                                       int* __restrict__ counts) {
    const int lane = threadIdx.x & 31;
    const gc_i64 end = inv_ptr[e + 1];
    unsigned long long mine = 0ULL;
    for (gc_i64 q = inv_ptr[e] + warp; q < end; q += warps) {
        const int i = inv_sets[q];
        const bool done = covered[i] != 0;
        __syncwarp();  // every lane has read the flag before lane 0 may set it
        if (done) continue;
        const gc_i64 stop = offsets[i + 1];
        for (gc_i64 x = offsets[i] + lane; x < stop; x += 32) atomicSub(&counts[elements[x]], 1);
        if (lane == 0) {
            covered[i] = 1;
            mine += 1ULL;
        }
    }
    return mine;
}

// The element of a nonzero key.
__device__ __forceinline__ gc_i64 im_key_element(unsigned long long key) {
    return (gc_i64)(0xFFFFFFFFu - (unsigned int)(key & 0xFFFFFFFFULL));
}

// keys[step] = the largest allowed key (im_best_key) over every element. keys[step] must be 0 before the launch.
extern "C" __global__ void im_argmax(const int* __restrict__ counts, const unsigned char* __restrict__ taken,
                                     const int* __restrict__ per_round, int k, gc_i64 n, gc_i64 rounds,
                                     unsigned long long* __restrict__ keys, gc_i64 step) {
    __shared__ unsigned long long part[32];
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    const unsigned long long best = im_block_max(
        im_best_key(counts, taken, per_round, k, n, rounds, (gc_i64)blockIdx.x * blockDim.x + threadIdx.x, stride),
        part);
    if (threadIdx.x == 0 && best) atomicMax(&keys[step], best);
}

// Takes the element of keys[step]: marks it taken, counts it in its round, and covers its uncovered sets
// (im_cover). newly[0] += sets covered.
extern "C" __global__ void im_take(const gc_i64* __restrict__ inv_ptr, const int* __restrict__ inv_sets,
                                   const gc_i64* __restrict__ offsets, const int* __restrict__ elements,
                                   const unsigned long long* __restrict__ keys, gc_i64 step, gc_i64 n,
                                   unsigned char* __restrict__ covered, int* __restrict__ counts,
                                   unsigned char* __restrict__ taken, int* __restrict__ per_round,
                                   unsigned long long* __restrict__ newly) {
    const unsigned long long key = keys[step];
    if (key == 0ULL) return;  // nothing was allowed: the host reports it
    const gc_i64 e = im_key_element(key);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        taken[e] = 1;
        per_round[e / n] += 1;
    }
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    const unsigned long long mine = im_cover(inv_ptr, inv_sets, offsets, elements, e,
                                             ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, warps, covered,
                                             counts);
    if ((threadIdx.x & 31) == 0 && mine) atomicAdd(newly, mine);
}

// The whole greedy, `steps` picks, in one launch of ONE block: each step the argmax and the take above,
// separated by __syncthreads (global writes of a block are visible to the block after it). For small
// collections, where 2 x steps launches cost more than their work; same keys, same state, same result.
// Stops at the first step where nothing is allowed (its key and the later ones stay 0).
extern "C" __global__ void im_greedy_block(const gc_i64* __restrict__ inv_ptr, const int* __restrict__ inv_sets,
                                           const gc_i64* __restrict__ offsets, const int* __restrict__ elements,
                                           gc_i64 n, gc_i64 rounds, int k, gc_i64 steps,
                                           unsigned char* __restrict__ covered, int* __restrict__ counts,
                                           unsigned char* __restrict__ taken, int* __restrict__ per_round,
                                           unsigned long long* __restrict__ keys,
                                           unsigned long long* __restrict__ newly) {
    __shared__ unsigned long long part[32];
    __shared__ unsigned long long chosen;
    const gc_i64 warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    unsigned long long mine = 0ULL;
    for (gc_i64 step = 0; step < steps; ++step) {
        const unsigned long long best = im_block_max(
            im_best_key(counts, taken, per_round, k, n, rounds, threadIdx.x, blockDim.x), part);
        if (threadIdx.x == 0) {
            chosen = best;
            keys[step] = best;
            if (best) {
                const gc_i64 e = im_key_element(best);
                taken[e] = 1;
                per_round[e / n] += 1;
            }
        }
        __syncthreads();
        const unsigned long long key = chosen;
        if (key == 0ULL) break;  // the same for every thread
        mine += im_cover(inv_ptr, inv_sets, offsets, elements, im_key_element(key), warp, warps, covered, counts);
        __syncthreads();  // counts, taken, per_round and part settled before the next argmax
    }
    if ((threadIdx.x & 31) == 0 && mine) atomicAdd(newly, mine);
}

// hits[0] += the sets holding at least one marked element (mark[e] != 0): a warp per set. Scores
// seeds on sets that did not choose them (the spread estimate of gpucore/im/driver.py).
extern "C" __global__ void im_hits(const gc_i64* __restrict__ offsets, const int* __restrict__ elements,
                                   gc_i64 num_sets, const unsigned char* __restrict__ mark,
                                   unsigned long long* __restrict__ hits) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    unsigned long long mine = 0ULL;
    for (gc_i64 i = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < num_sets; i += warps) {
        const gc_i64 end = offsets[i + 1];
        for (gc_i64 base = offsets[i]; base < end; base += 32) {
            const gc_i64 x = base + lane;
            if (__any_sync(IM_FULL, x < end && mark[elements[x]] != 0)) {
                mine += 1ULL;
                break;
            }
        }
    }
    if (lane == 0 && mine) atomicAdd(hits, mine);
}

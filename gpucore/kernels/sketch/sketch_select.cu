// sketch_select.cu: DiFuseR's seed selection and cascade (Göktürk & Kaya, arXiv 2410.14047,
// Algorithm 3 and lines 9-21 of Algorithm 4). Layout and keys: sketch_common.cuh.
//   sk_cascade  one level of the merged multi-world BFS (Algorithm 3 with the spec's fixes): a block
//               per queued vertex u, a thread per world j; where u is visited in world j (-1), every
//               out-arc u -> v live in j whose register is not -1 sets it to -1. A warp vote follows
//               each arc; lane 0 of a warp that set one appends v to the next queue unless this level
//               already holds it (atomicMax on stamp[v] with the level number: queues hold distinct
//               vertices, no clearing between levels), so at most one queue atomic per warp and arc.
//               The host swaps the queues and repeats until the next queue is empty.
//   sk_probe_start, sk_probe  the same traversal from a candidate seed without changing a register
//               (our refinement of the selection, docs/difuser.md): bit j of marks[v][j / 32] is set
//               when v would be reached in world j; a warp ORs its ballot into the word with one
//               atomicOr and adds the bits that were new to *gain (the exact marginal gain).
//   sk_count    the number of -1 registers (Count(M, -1)).
//   sk_score    scores[u] (+)= sum over the slice's worlds of table[0][0] (visited) or
//               table[0][M_u[j] + 1] - table[1][s + 1], s = the register start of u (with `own`).
//   sk_argmax   per block, the not-chosen vertex of largest score, ties to the lowest id; the host
//               reduces the blocks' answers the same way.
#include "sketch_common.cuh"

extern "C" __global__ void __launch_bounds__(1024)
sk_cascade(const gc_i64* __restrict__ indptr, const int* __restrict__ dst,
           const unsigned int* __restrict__ hashes,
           const unsigned int* __restrict__ thresholds,
           const gc_u64* __restrict__ live_keys, int keyed, signed char* registers,
           gc_i64 stride, gc_i64 j0, const int* __restrict__ queue, gc_i64 queued,
           int* __restrict__ next, int* __restrict__ next_size, int* __restrict__ stamp,
           int level) {
    const gc_i64 j = j0 + threadIdx.x;
    const int lane = threadIdx.x & 31;
    const gc_u64 key = live_keys[j];
    for (gc_i64 i = blockIdx.x; i < queued; i += gridDim.x) {
        const int u = queue[i];
        const bool active = registers[(gc_i64)u * stride + j] == SK_VISITED;
        if (!__syncthreads_or(active)) continue;  // block-uniform: u is new in none of these worlds
        if (!__any_sync(SK_FULL, active)) continue;  // warp-uniform
        for (gc_i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            const int v = dst[e];
            bool flag = false;
            if (active) {
                signed char* r = registers + (gc_i64)v * stride + j;
                if (keyed ? (*r != SK_VISITED && sk_live(1, key, 0u, e, thresholds[e]))  // load, then hash
                          : (sk_live(0, key, hashes[e], e, thresholds[e]) && *r != SK_VISITED)) {
                    *r = SK_VISITED;
                    flag = true;
                }
            }
            if (__any_sync(SK_FULL, flag) && lane == 0 && atomicMax(&stamp[v], level) < level)
                next[atomicAdd(next_size, 1)] = v;
        }
    }
}

extern "C" __global__ void sk_probe_start(const signed char* __restrict__ registers, gc_i64 stride, gc_i64 v,
                                          unsigned int* __restrict__ marks, unsigned long long* __restrict__ gain) {
    const gc_i64 step = (gc_i64)gridDim.x * blockDim.x;  // a multiple of 32, as stride is
    for (gc_i64 j = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; j < stride; j += step) {
        const unsigned int bits = __ballot_sync(SK_FULL, registers[v * stride + j] != SK_VISITED);
        if ((threadIdx.x & 31) == 0) {
            marks[(v * stride + j) >> 5] = bits;
            if (bits) atomicAdd(gain, (unsigned long long)__popc(bits));
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024)
sk_probe(const gc_i64* __restrict__ indptr, const int* __restrict__ dst,
         const unsigned int* __restrict__ hashes, const unsigned int* __restrict__ thresholds,
         const gc_u64* __restrict__ live_keys, int keyed,
         const signed char* __restrict__ registers, gc_i64 stride, gc_i64 j0,
         unsigned int* marks, const int* __restrict__ queue, gc_i64 queued,
         int* __restrict__ next, int* __restrict__ next_size, int* __restrict__ stamp,
         int level, unsigned long long* __restrict__ gain) {
    const gc_i64 j = j0 + threadIdx.x;  // j0 is a multiple of 32: lane = j mod 32
    const int lane = threadIdx.x & 31;
    const gc_u64 key = live_keys[j];
    for (gc_i64 i = blockIdx.x; i < queued; i += gridDim.x) {
        const int u = queue[i];
        const bool active = (marks[((gc_i64)u * stride + j) >> 5] >> lane) & 1u;
        if (!__syncthreads_or(active)) continue;  // block-uniform
        if (!__any_sync(SK_FULL, active)) continue;  // warp-uniform
        for (gc_i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            const int v = dst[e];
            unsigned int* word = marks + (((gc_i64)v * stride + j) >> 5);
            const bool flag = active && !((*word >> lane) & 1u) && registers[(gc_i64)v * stride + j] != SK_VISITED &&
                              sk_live(keyed, key, keyed ? 0u : hashes[e], e, thresholds[e]);
            const unsigned int bits = __ballot_sync(SK_FULL, flag);
            if (bits && lane == 0) {
                const unsigned int fresh = bits & ~atomicOr(word, bits);
                if (fresh) {
                    atomicAdd(gain, (unsigned long long)__popc(fresh));
                    if (atomicMax(&stamp[v], level) < level) next[atomicAdd(next_size, 1)] = v;
                }
            }
        }
    }
}

extern "C" __global__ void sk_count(const unsigned int* __restrict__ words, gc_i64 nwords,
                                    unsigned long long* __restrict__ total) {
    unsigned long long c = 0;
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    for (gc_i64 i = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += stride) {
        const unsigned int w = words[i];
        for (int b = 0; b < 32; b += 8) c += ((w >> b) & 0xFFu) == 0xFFu;
    }
    for (int d = 16; d > 0; d >>= 1) c += __shfl_down_sync(SK_FULL, c, d);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(total, c);
}

// Sum of a block's values in thread 0 (blockDim.x a multiple of 32); every thread must call it.
__device__ gc_i64 sk_block_sum(gc_i64 x) {
    __shared__ gc_i64 part[32];
    for (int d = 16; d > 0; d >>= 1) x += __shfl_down_sync(SK_FULL, x, d);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) part[warp] = x;
    __syncthreads();
    if (warp == 0) {
        x = lane < (int)(blockDim.x >> 5) ? part[lane] : 0;
        for (int d = 16; d > 0; d >>= 1) x += __shfl_down_sync(SK_FULL, x, d);
    }
    __syncthreads();  // part[] is reused by the next call
    return x;
}

extern "C" __global__ void __launch_bounds__(1024)
sk_score(const signed char* __restrict__ registers, gc_i64 n, gc_i64 stride, gc_i64 j0,
         const gc_u64* __restrict__ register_keys, const gc_i64* __restrict__ table,
         int own, gc_i64* __restrict__ scores, int accumulate) {
    __shared__ gc_i64 tab[2 * 66];
    for (int i = threadIdx.x; i < 2 * 66; i += blockDim.x) tab[i] = table[i];
    __syncthreads();
    const gc_i64 j = j0 + threadIdx.x;
    const gc_u64 key = register_keys[j];
    for (gc_i64 u = blockIdx.x; u < n; u += gridDim.x) {
        const signed char m = registers[u * stride + j];
        gc_i64 term = tab[m + 1];  // m = -1: tab[0], the visited term
        if (m != SK_VISITED && own) term -= tab[66 + sk_register_start(key, u) + 1];
        const gc_i64 s = sk_block_sum(term);
        if (threadIdx.x == 0) scores[u] = (accumulate ? scores[u] : 0) + s;
    }
}

// Is (a, ia) a better candidate than (b, ib)? Larger score; among equal scores the lower id; -1 = none.
__device__ __forceinline__ bool sk_better(gc_i64 a, gc_i64 ia, gc_i64 b, gc_i64 ib) {
    return ia >= 0 && (ib < 0 || a > b || (a == b && ia < ib));
}

extern "C" __global__ void sk_argmax(const gc_i64* __restrict__ scores, const unsigned char* __restrict__ chosen,
                                     gc_i64 n, gc_i64* __restrict__ block_value, gc_i64* __restrict__ block_vertex) {
    __shared__ gc_i64 val[32], idx[32];
    gc_i64 best = 0, at = -1;
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    for (gc_i64 u = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; u < n; u += stride)
        if (!chosen[u] && sk_better(scores[u], u, best, at)) {
            best = scores[u];
            at = u;
        }
    for (int d = 16; d > 0; d >>= 1) {
        const gc_i64 b = __shfl_down_sync(SK_FULL, best, d), ib = __shfl_down_sync(SK_FULL, at, d);
        if (sk_better(b, ib, best, at)) {
            best = b;
            at = ib;
        }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        val[warp] = best;
        idx[warp] = at;
    }
    __syncthreads();
    if (warp == 0) {
        best = lane < (int)(blockDim.x >> 5) ? val[lane] : 0;
        at = lane < (int)(blockDim.x >> 5) ? idx[lane] : -1;
        for (int d = 16; d > 0; d >>= 1) {
            const gc_i64 b = __shfl_down_sync(SK_FULL, best, d), ib = __shfl_down_sync(SK_FULL, at, d);
            if (sk_better(b, ib, best, at)) {
                best = b;
                at = ib;
            }
        }
        if (lane == 0) {
            block_value[blockIdx.x] = best;
            block_vertex[blockIdx.x] = at;
        }
    }
}

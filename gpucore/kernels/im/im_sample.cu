// im_sample.cu: gIM's RR-set sampler (Shahrouz et al., TPDS 2021, sections 3.2-3.7), keyed.
//
// Workers are warps (gIM's one-warp blocks, packed IM_WARPS to a block so that more of them are
// resident per SM: gIM's one-warp blocks stop at the 32-blocks-per-SM limit, half of an H100's
// warp slots); `workers` persistent warps take set indices from an atomic counter until `count`
// sets are done, each with its own shared-memory queue, bitmap, staging buffer and reservoir, and
// no synchronisation between the warps of a block. A worker builds one RR set at a time:
//   - visited marks: 1 bit per node in the block's own bitmap; a node is enqueued only by the lane
//     whose atomicOr returned the OLD word without its bit (so never twice); after each round the
//     words of that round's members are cleared (nothing else is ever set);
//   - IC: reverse BFS; frontier in a shared-memory circular queue of IM_QS entries; before each
//     32-arc step, if the queue holds more than IM_QS - 32 entries, the 32 newest move to the
//     block's overflow reservoir in global memory (a stack of 32-entry chunks), reloaded when the
//     queue runs empty (gIM Algorithms 4, 5); every lane runs every step (uniform trip counts);
//   - IC skipping nodes (skip[u] = 1 / ln(1 - p) < 0, gpucore/im/skipping.py): instead of a coin per arc,
//     each step draws 32 geometric jumps (jump i of mix(seed, SKIP, s, u, i) on lane i % 32), a warp
//     prefix sum turns them into the positions of the next live arcs, and the lanes whose position
//     lies in the row offer that arc, so a step costs 32 live arcs, not 32 arcs (SUBSIM, Guo et al.,
//     SIGMOD 2020, sec. 4);
//   - LT: reverse random walk; the warp finds the in-arc whose fixed-point interval [Q_{a-1}, Q_a)
//     holds r (im_lt_pick: an interpolated probe, then 32-ary narrowing), stopping on none or on a
//     visited node;
//   - members (root first) are appended to the block's staging buffer as they are enqueued;
//     element = t * n + node for round t (MRIM; t = 0 for IM);
//   - a finished set reserves its size in `pool` with one atomicAdd and is copied there; its
//     start and size are written at index (j - j_begin), so the host can compact the sets in
//     order of j afterwards (im_compact below);
//   - a set larger than the staging buffer is abandoned (its marks cleared) and its j appended to
//     `deferred`; the host re-runs those with a staging buffer of T * n (tier 2, fewer blocks);
//   - if the pool would overflow, counters[4] is set and the host retries the batch with a larger pool.
// counters (host-zeroed): [0] next set index, [1] pool tail, [2] deferred sets, [3] sets finished,
// [4] pool overflow; the host reads all five with one copy per batch.
// Keys (docs/im.md): root = mix(seed, ROOT, j, 0, 0) mod n; round t uses s = j * T + t;
// IC coin of arc e = bernoulli(step(mix(seed, COIN, s), e), p), or at a skipping node v the jumps
// gc_skip_jump(mix(seed, SKIP, s, v, i), skip[v], d); LT r = mix(seed, LT_CHOICE, s, v, 0) >> 24.
#include "gc_loops.cuh"
#include "gc_random.cuh"

#ifndef IM_QS
#define IM_QS 1024
#endif
#ifndef IM_WARPS
#define IM_WARPS 1
#endif
static_assert(IM_QS >= 64 && (IM_QS & (IM_QS - 1)) == 0, "IM_QS must be a power of two >= 64");
static_assert(IM_WARPS >= 1 && IM_WARPS <= 32, "IM_WARPS: 1 .. 32 warps per block");

#define IM_FULL 0xffffffffu
#define IM_QMASK (IM_QS - 1)

// LT's choice at a node whose in-arcs are [beg, end): the first a with qcum[a] > r (the caller has checked
// qcum[end - 1] > r), i.e. the arc whose interval [Q_{a-1}, Q_a) holds r, found by the whole warp. First one
// coalesced probe of the 32 arcs around the interpolated position beg + d r / Q_last, which holds the answer
// when the weights are equal (weighted cascade); then 32-ary narrowing, each round one read per lane, so a
// hub of 200,000 in-arcs costs about four rounds where a linear scan costs thousands.
// Invariant: the answer lies in [lo, hi], qcum[hi] > r, and lo == beg or qcum[lo - 1] <= r.
__device__ __forceinline__ gc_i64 im_lt_pick(const gc_i64* __restrict__ qcum, gc_i64 beg, gc_i64 end, gc_i64 r,
                                             int lane) {
    gc_i64 lo = beg, hi = end - 1;
    if (hi - lo >= 32) {
        const double frac = (double)r / (double)qcum[hi];
        gc_i64 w0 = beg + (gc_i64)(frac * (double)(end - beg)) - 15;
        w0 = w0 < lo ? lo : (w0 > hi - 31 ? hi - 31 : w0);
        const unsigned m = __ballot_sync(IM_FULL, qcum[w0 + lane] > r);
        if (m == 0u) {
            lo = w0 + 32;
        } else {
            const int f = __ffs(m) - 1;
            if (f > 0 || w0 == lo) return w0 + f;
            hi = w0;
        }
    }
    while (hi - lo >= 32) {
        const gc_i64 span = hi - lo;
        const unsigned m = __ballot_sync(IM_FULL, qcum[lo + span * (lane + 1) / 32] > r);  // lane 31 reads hi
        const int f = __ffs(m) - 1;
        const gc_i64 top = lo + span * (f + 1) / 32;
        if (f > 0) lo = lo + span * f / 32 + 1;
        hi = top;
    }
    const gc_i64 a = lo + lane;
    const unsigned m = __ballot_sync(IM_FULL, a <= hi && qcum[a] > r);
    return lo + (__ffs(m) - 1);
}

// Builds RR set j in `stage` (all lanes call it with the same arguments). Returns its size, or -1
// when it does not fit in stage_cap (then every mark it set is cleared again).
__device__ long long im_build_set(const gc_i64* __restrict__ in_indptr, const int* __restrict__ in_src,
                                  const int* __restrict__ in_eid, const float* __restrict__ in_prob,
                                  const gc_i64* __restrict__ qcum, const double* __restrict__ skip, int lt,
                                  gc_i64 n, gc_u64 seed, gc_i64 rounds,
                                  gc_i64 j, unsigned int* __restrict__ bm, int* __restrict__ stage, gc_i64 stage_cap,
                                  int* __restrict__ res, gc_i64 res_cap, int* q) {
    const int lane = threadIdx.x & 31;
    const int root = (int)gc_index_below(gc_mix5(seed, GC_STREAM_ROOT, (gc_u64)j, 0ULL, 0ULL), (gc_u64)n);
    gc_i64 size = 0;
    bool failed = false;
    for (gc_i64 t = 0; t < rounds && !failed; ++t) {
        const gc_u64 s = (gc_u64)j * (gc_u64)rounds + (gc_u64)t;
        const int off = (int)(t * n);
        const gc_i64 start = size;
        if (size >= stage_cap) return -1;  // earlier rounds are already cleared
        if (lane == 0) {
            atomicOr(&bm[root >> 5], 1u << (root & 31));
            stage[size] = root + off;
        }
        size += 1;
        __syncwarp();
        if (lt) {
            int v = root;
            while (true) {
                const gc_i64 r = gc_lt_draw(gc_mix5(seed, GC_STREAM_LT_CHOICE, s, (gc_u64)v, 0ULL));
                const gc_i64 beg = in_indptr[v], end = in_indptr[v + 1];
                if (beg == end || qcum[end - 1] <= r) break;  // no live in-arc
                const gc_i64 pick = im_lt_pick(qcum, beg, end, r, lane);
                const int u = in_src[pick];
                unsigned old = 0;
                if (lane == 0) old = atomicOr(&bm[u >> 5], 1u << (u & 31));
                old = __shfl_sync(IM_FULL, old, 0);
                if (old & (1u << (u & 31))) break;  // reached a visited node
                if (size >= stage_cap) {
                    failed = true;
                    if (lane == 0) bm[u >> 5] = 0u;
                    break;
                }
                if (lane == 0) stage[size] = u + off;
                size += 1;
                v = u;
                __syncwarp();
            }
        } else {
            const gc_u64 prefix = gc_mix3(seed, GC_STREAM_COIN, s);
            const gc_u64 sprefix = gc_mix3(seed, GC_STREAM_SKIP, s);
            int qhead = 0, qcount = 1;
            gc_i64 rcount = 0;
            if (lane == 0) q[0] = root;
            __syncwarp();
            while (!failed) {
                if (qcount == 0) {
                    if (rcount == 0) break;
                    rcount -= 32;  // reload the newest chunk of the reservoir
                    q[(qhead + lane) & IM_QMASK] = res[rcount + lane];
                    qcount = 32;
                    __syncwarp();
                }
                const int u = q[qhead];
                __syncwarp();  // every lane has read the slot before it can be reused
                qhead = (qhead + 1) & IM_QMASK;
                qcount -= 1;
                const gc_i64 beg = in_indptr[u], d = in_indptr[u + 1] - beg;
                const double rlq = skip[u];
                const bool skipping = rlq < 0.0;  // warp-uniform
                const gc_u64 hv = gc_step(sprefix, (gc_u64)u);
                // next: coins, the first arc of this step; skipping, one past the last live position
                // found (the steps end once a position reaches d); jumps: the jumps drawn so far
                int jumps = 0;
                for (gc_i64 next = 0; next < d;) {
                    if (qcount > IM_QS - 32) {  // offload the 32 newest entries
                        if (rcount + 32 > res_cap) {
                            failed = true;
                            break;
                        }
                        res[rcount + lane] = q[(qhead + qcount - 32 + lane) & IM_QMASK];
                        rcount += 32;
                        qcount -= 32;
                        __syncwarp();
                    }
                    const gc_i64 at = gc_row_next(skipping, hv, rlq, d, next, jumps, gc_skip_jump);  // >= d: none
                    bool want = false;
                    int v = 0;
                    if (at < d) {
                        const gc_i64 a = beg + at;
                        v = in_src[a];
                        const unsigned bit = 1u << (v & 31);
                        unsigned int* w = &bm[v >> 5];
                        if (!(*((volatile unsigned int*)w) & bit) &&
                            (skipping ||  // a skipping node's positions are its live arcs
                             gc_bernoulli(gc_step(prefix, (gc_u64)(unsigned int)in_eid[a]), in_prob[a]))) {
                            const unsigned old = atomicOr(w, bit);
                            want = !(old & bit);
                        }
                    }
                    const unsigned mask = __ballot_sync(IM_FULL, want);
                    const int cnt = __popc(mask);
                    if (cnt) {
                        if (size + cnt > stage_cap) {
                            failed = true;
                            if (want) bm[v >> 5] = 0u;
                            __syncwarp();
                            break;
                        }
                        const int rank = __popc(mask & ((1u << lane) - 1u));
                        if (want) {
                            q[(qhead + qcount + rank) & IM_QMASK] = v;
                            stage[size + rank] = v + off;
                        }
                        qcount += cnt;
                        size += cnt;
                    }
                    __syncwarp();
                }
            }
        }
        __syncwarp();
        for (gc_i64 x = start + lane; x < size; x += 32) {  // clear this round's marks only
            const int v = stage[x] - off;
            bm[v >> 5] = 0u;
        }
        __syncwarp();
    }
    return failed ? -1 : size;
}

// Generates sets (j_begin + i) for i < count (use_list = 0), or j_list[i] (use_list = 1), with
// `workers` warps (blockDim.x = 32 * IM_WARPS; the warps past `workers` in the last block leave).
extern "C" __global__ void im_sample(const gc_i64* __restrict__ in_indptr, const int* __restrict__ in_src,
                                     const int* __restrict__ in_eid, const float* __restrict__ in_prob,
                                     const gc_i64* __restrict__ qcum, const double* __restrict__ skip, int lt,
                                     gc_i64 n, gc_u64 seed, gc_i64 rounds,
                                     gc_i64 j_begin, gc_i64 count, int use_list, const gc_i64* __restrict__ j_list,
                                     gc_i64 workers, unsigned int* __restrict__ bitmaps, gc_i64 words,
                                     int* __restrict__ stages, gc_i64 stage_cap, int* __restrict__ reservoirs,
                                     gc_i64 res_cap, int* __restrict__ pool, gc_i64 pool_cap,
                                     gc_i64* __restrict__ set_start, int* __restrict__ set_size,
                                     gc_i64* __restrict__ deferred, gc_u64* __restrict__ counters) {
    __shared__ int queues[IM_WARPS][IM_QS];
    if (blockDim.x != 32 * IM_WARPS) return;  // the launch must match the compiled block shape
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const gc_i64 worker = (gc_i64)blockIdx.x * IM_WARPS + warp;
    if (worker >= workers) return;  // the whole warp leaves together
    int* q = queues[warp];
    unsigned int* bm = bitmaps + worker * words;
    int* stage = stages + worker * stage_cap;
    int* res = reservoirs + worker * res_cap;
    gc_u64 finished = 0;
    while (true) {
        gc_u64 idx = 0;
        int stop = 0;
        if (lane == 0) {
            idx = atomicAdd(&counters[0], 1ULL);
            stop = *((volatile gc_u64*)&counters[4]) != 0ULL;
        }
        idx = __shfl_sync(IM_FULL, idx, 0);
        stop = __shfl_sync(IM_FULL, stop, 0);
        if (idx >= (gc_u64)count || stop) break;
        const gc_i64 j = use_list ? j_list[idx] : j_begin + (gc_i64)idx;
        const gc_i64 rel = j - j_begin;
        const gc_i64 size =
            im_build_set(in_indptr, in_src, in_eid, in_prob, qcum, skip, lt, n, seed, rounds, j, bm, stage, stage_cap,
                         res, res_cap, q);
        if (size < 0) {
            if (lane == 0) deferred[atomicAdd(&counters[2], 1ULL)] = j;
            continue;
        }
        gc_u64 start = 0;
        if (lane == 0) start = atomicAdd(&counters[1], (gc_u64)size);
        start = __shfl_sync(IM_FULL, start, 0);
        if (start + (gc_u64)size > (gc_u64)pool_cap) {
            if (lane == 0) atomicExch(&counters[4], 1ULL);
            break;
        }
        for (gc_i64 x = lane; x < size; x += 32) pool[start + x] = stage[x];
        if (lane == 0) {
            set_start[rel] = (gc_i64)start;
            set_size[rel] = (int)size;
        }
        finished += 1;
        __syncwarp();
    }
    if (lane == 0 && finished) atomicAdd(&counters[3], finished);
}

// out[dst[i] .. dst[i] + size[i]) = pool[start[i] ..): the sets in order of j (a warp per set).
extern "C" __global__ void im_compact(const int* __restrict__ pool, const gc_i64* __restrict__ set_start,
                                      const int* __restrict__ set_size, const gc_i64* __restrict__ dst, gc_i64 count,
                                      int* __restrict__ out) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    for (gc_i64 i = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < count; i += warps) {
        const int* src = pool + set_start[i];
        int* d = out + dst[i];
        const int size = set_size[i];
        for (int x = lane; x < size; x += 32) d[x] = src[x];
    }
}

// amcss_select.cu: MERIT's Select (argmax of cnt/c by parallel reduction, paper Algorithm 4) and
// Discover (Algorithm 3), trimming, and per-segment bookkeeping on the layout of gpucore/amcss/layout.py.
//
// Select runs b steps without a host round trip: amcss_argmax_partial (grid-stride over V_i, one
// (ratio, id) per block) then amcss_argmax_final (one block) writes the chosen node to seeds[q], adds
// its count to the coverage and excludes it; amcss_discover then reads the node from seeds[q].
// The ratio is (double)cnt[v] / (double)cost[v] (IEEE division, as kernels_cpu.argmax_ratio), the
// maximum wins, ties go to the lowest id; an empty candidate set gives -1, and so does a pick after
// the first whose best count is 0 (nothing left to cover: the batch ends, CudaPrimitives.select).
// Discover: one warp per set (global index g: segment g % S, slot g / S), ballot-early-exit scan,
// then the warp takes the set's members out of cnt with atomicSub.
#include "gc_loops.cuh"
#include "gc_random.cuh"

#define AMS_NONE 0x7fffffff

__device__ __forceinline__ void ams_better(double& br, int& bv, double r, int v) {
    if (r > br || (r == br && v < bv)) {
        br = r;
        bv = v;
    }
}

// Block-wide reduction of (ratio, id) pairs to thread 0 (blockDim.x a multiple of 32, <= 1024).
__device__ void ams_reduce(double& br, int& bv) {
    __shared__ double sr[32];
    __shared__ int sv[32];
    const int lane = gc_lane(), warp = gc_warp(), nw = gc_warps_per_block();
    for (int off = 16; off > 0; off >>= 1) {
        const double r = __shfl_sync(GC_FULL_MASK, br, lane ^ off);
        const int v = __shfl_sync(GC_FULL_MASK, bv, lane ^ off);
        ams_better(br, bv, r, v);
    }
    if (lane == 0) {
        sr[warp] = br;
        sv[warp] = bv;
    }
    __syncthreads();
    if (warp == 0) {
        br = lane < nw ? sr[lane] : -1.0;
        bv = lane < nw ? sv[lane] : AMS_NONE;
        for (int off = 16; off > 0; off >>= 1) {
            const double r = __shfl_sync(GC_FULL_MASK, br, lane ^ off);
            const int v = __shfl_sync(GC_FULL_MASK, bv, lane ^ off);
            ams_better(br, bv, r, v);
        }
    }
}

extern "C" __global__ void amcss_argmax_partial(const int* __restrict__ cnt, const float* __restrict__ cost,
                                                const int* __restrict__ residual, gc_i64 n_res,
                                                const unsigned char* __restrict__ excluded,
                                                double* __restrict__ part_r, int* __restrict__ part_v) {
    double br = -1.0;
    int bv = AMS_NONE;
    GC_FOR_GRID(i, 0, n_res) {
        const int v = residual[i];
        if (excluded[v]) continue;
        ams_better(br, bv, (double)cnt[v] / (double)cost[v], v);
    }
    ams_reduce(br, bv);
    if (threadIdx.x == 0) {
        part_r[blockIdx.x] = br;
        part_v[blockIdx.x] = bv;
    }
}

extern "C" __global__ void amcss_argmax_final(const double* __restrict__ part_r, const int* __restrict__ part_v,
                                              int nparts, const int* __restrict__ cnt,
                                              unsigned char* __restrict__ excluded, gc_i64* __restrict__ seeds, int q,
                                              unsigned long long* __restrict__ coverage) {
    double br = -1.0;
    int bv = AMS_NONE;
    GC_FOR_BLOCK(i, 0, nparts) ams_better(br, bv, part_r[i], part_v[i]);
    ams_reduce(br, bv);
    if (threadIdx.x == 0) {
        // the batch ends at the first pick with nothing left to cover (every later pick too)
        if (bv == AMS_NONE || (q > 0 && (seeds[q - 1] < 0 || cnt[bv] == 0))) {
            seeds[q] = -1;
        } else {
            seeds[q] = bv;
            coverage[0] += (unsigned long long)cnt[bv];
            excluded[bv] = 1;
        }
    }
}

// One warp takes the len members of a set (physical start sp of a segment of length l) out of cnt.
__device__ __forceinline__ void ams_uncount(const int* seg, gc_i64 sp, gc_i64 len, gc_i64 l, int* cnt) {
    GC_FOR_WARP(i, 0, len) {
        gc_i64 p = sp + i;
        if (p >= l) p -= l;
        atomicSub(&cnt[seg[p]], 1);
    }
}

// Flag the unflagged sets holding node *node_ptr (use_node = 1; nothing when it is -1) or any v with
// mask[v] != 0 (use_node = 0), and take their members out of cnt; newly[0] += sets flagged.
extern "C" __global__ void amcss_discover(int S, gc_i64 L, gc_i64 l, const int* __restrict__ mrr,
                                          const gc_i64* __restrict__ offset, unsigned char* __restrict__ flag,
                                          const gc_i64* __restrict__ count, gc_i64 theta, int use_node,
                                          const gc_i64* __restrict__ node_ptr, const unsigned char* __restrict__ mask,
                                          int* __restrict__ cnt, unsigned long long* __restrict__ newly) {
    const int lane = gc_lane();
    const gc_i64 node = use_node ? node_ptr[0] : -1;
    if (use_node && node < 0) return;
    GC_FOR_GRID_WARPS(gi, 0, theta) {
        const gc_i64 s = gi % S, r = gi / S;
        if (r >= count[s]) continue;
        const gc_i64 o = s * L + r;
        if (flag[o]) continue;
        const gc_i64 start = offset[o], len = offset[o + 1] - start;
        const gc_i64 sp = start % l;
        const int* seg = mrr + s * l;
        bool hit = false;
        for (gc_i64 base = 0; base < len && !hit; base += 32) {
            const gc_i64 i = base + lane;
            bool h = false;
            if (i < len) {
                gc_i64 p = sp + i;
                if (p >= l) p -= l;
                const int v = seg[p];
                h = use_node ? (v == node) : (mask[v] != 0);
            }
            hit = __ballot_sync(GC_FULL_MASK, h) != 0u;
        }
        if (hit) {
            if (lane == 0) {
                flag[o] = 1;
                atomicAdd(newly, 1ULL);
            }
            ams_uncount(seg, sp, len, l, cnt);
        }
        __syncwarp();
    }
}

// Trim, step 1: the dropped sets (global index in [theta_keep, theta)) that are unflagged leave cnt.
extern "C" __global__ void amcss_trim_sets(int S, gc_i64 L, gc_i64 l, const int* __restrict__ mrr,
                                           const gc_i64* __restrict__ offset, const unsigned char* __restrict__ flag,
                                           const gc_i64* __restrict__ count, gc_i64 theta_keep, gc_i64 theta,
                                           int* __restrict__ cnt) {
    GC_FOR_GRID_WARPS(gi, theta_keep, theta) {
        const gc_i64 s = gi % S, r = gi / S;
        if (r >= count[s]) continue;
        const gc_i64 o = s * L + r;
        if (flag[o]) continue;
        const gc_i64 start = offset[o], len = offset[o + 1] - start;
        const gc_i64 sp = start % l;
        const int* seg = mrr + s * l;
        ams_uncount(seg, sp, len, l, cnt);
    }
}

// Trim, step 2: segment s keeps theta_keep / S + (s < theta_keep % S) sets.
extern "C" __global__ void amcss_trim_segments(int S, gc_i64 L, const gc_i64* __restrict__ offset,
                                               gc_i64* __restrict__ count, gc_i64* __restrict__ hi,
                                               gc_i64 theta_keep) {
    GC_FOR_GRID(s, 0, S) {
        const gc_i64 keep = theta_keep / S + ((theta_keep % S) > s ? 1 : 0);
        if (keep < count[s]) {
            count[s] = keep;
            hi[s] = offset[s * L + keep];
        }
    }
}

// Per segment: number of flagged sets among its count[s] slots (polluted[s]), its entries (entries[s]) and
// the entries of its unflagged sets (clean_entries[s]: what an Update copies instead of probing).
// One warp per block (the host launches 32 threads): the sums are warp reductions.
extern "C" __global__ void amcss_segment_stats(int S, gc_i64 L, const gc_i64* __restrict__ offset,
                                               const unsigned char* __restrict__ flag,
                                               const gc_i64* __restrict__ count, int* __restrict__ polluted,
                                               gc_i64* __restrict__ entries, gc_i64* __restrict__ clean_entries) {
    GC_FOR_GRID_BLOCKS(s, 0, S) {
        const gc_i64 r = count[s];
        int c = 0;
        gc_i64 ce = 0;
        GC_FOR_BLOCK(i, 0, r) {
            if (flag[s * L + i] != 0)
                c += 1;
            else
                ce += offset[s * L + i + 1] - offset[s * L + i];
        }
        c = gc_warp_sum(c);
        ce = gc_warp_sum(ce);
        if (threadIdx.x == 0) {
            polluted[s] = c;
            entries[s] = offset[s * L + r] - offset[s * L];
            clean_entries[s] = ce;
        }
        __syncwarp();
    }
}

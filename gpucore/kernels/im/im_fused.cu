// im_fused.cu: fused reverse traversals for RR sets (FuseIM, Neff et al., ICS '24, sections 3-4), keyed.
//
// G batches are in flight at once, each of B = 32 W traversals ("slots"); batch g owns, per vertex x of
// the traversal layout, W 32-bit words of
//   vis[g][x]: the slots that reached x (set at discovery, by atomicOr: the bits a call newly sets
//              are its own, so no (vertex, slot) is discovered twice and no (arc, slot) is tried twice);
//   nxt[g][x]: the slots that reached x and still have to be expanded from it;
// and a list touched[g] of the (x * W + w) whose vis word is not zero (one entry each: appended by the
// call that turns the word non-zero, dropped when an extraction clears it).
// The frontier is a list of entries (g << 32 | x), pushed by the call that turns a nxt word of (g, x)
// non-zero; expanding an entry takes (atomicExch) all W words of nxt[g][x], so a later duplicate
// entry finds them empty. A word that is not zero always has an entry that will take it, so no bit is
// lost; a bit added before its vertex's entry is taken is expanded early, which cannot change a set
// (reachability with keyed coins does not depend on the order of expansion). A list that overflows
// keeps its bits in nxt; the host then rebuilds the list from nxt (fz_rescan).
//
// A level is three launches:
//   fz_expand: a warp per entry; IC: the nonzero words of the entry's mask are spread over groups of
//              1, 2, 4 or 8 lanes (one 32-bit word per lane), 32 / group arcs at a time; each lane
//              flips the coin of its arc for every slot of its word not yet at the arc's source,
//              bernoulli(step(mix(seed, COIN, s), eid), p); LT: a lane per slot draws its in-arc
//              (fixed-point prefix sums, binary search) and moves unless it was there;
//   fz_active: OR of the nxt masks of the new list per batch = the slots still running;
//   fz_refill: a block per batch: once enough slots ended (all, or the tail threshold), counts their
//              members (pass 1 over touched), reserves their space in the pool, writes old ids + t n
//              (pass 2, clearing their bits and compacting touched), then loads the next traversals of
//              the dispatch order into the free slots (root bits in vis and nxt).
// Keys (docs/im.md): traversal i of a call is (set i / T, round i % T), s = j * T + t, root
// index_below(mix(seed, ROOT, j, 0, 0), n) (an old id, mapped by new_of_old); LT r = mix(seed,
// LT_CHOICE, s, old id, 0) >> 24.
#include "gc_random.cuh"

#define FZ_FULL 0xffffffffu
// ctl words
#define FZ_COUNT0 0
#define FZ_COUNT1 1
#define FZ_DISPATCH 2
#define FZ_POOL 3
#define FZ_FLAGS 4
#define FZ_LIST_OVERFLOW 1ULL
#define FZ_POOL_OVERFLOW 2ULL
// stats words (gpucore/im/fused/stats.py KERNEL_COUNTERS)
#define FZ_S_ENTRIES 0
#define FZ_S_BITS 1
#define FZ_S_READS 2
#define FZ_S_LEVELS 3
#define FZ_S_PEAK 4
#define FZ_S_EXTRACT 5
#define FZ_S_TRAV 6
#define FZ_S_UNFUSED 7
#define FZ_REFILL_THREADS 256

__device__ __forceinline__ unsigned fz_lanemask_lt(int lane) { return (1u << lane) - 1u; }

__device__ __forceinline__ int fz_kth_bit(unsigned m, int k) {  // position of the k-th set bit (k < popc)
    for (int i = 0; i < k; ++i) m &= m - 1u;
    return __ffs(m) - 1;
}

// Appends `want` lanes' values to list[count ..) with one atomicAdd per warp (all lanes call it).
// Returns false on every lane when some value did not fit (the count still grows).
__device__ __forceinline__ bool fz_push_warp(bool want, gc_u64 value, gc_u64* list, gc_u64 cap, gc_u64* count,
                                             int lane) {
    const unsigned m = __ballot_sync(FZ_FULL, want);
    if (!m) return true;
    const int leader = __ffs(m) - 1;
    gc_u64 base = 0;
    if (lane == leader) base = atomicAdd(count, (gc_u64)__popc(m));
    base = __shfl_sync(FZ_FULL, base, leader);
    if (want) {
        const gc_u64 at = base + (gc_u64)__popc(m & fz_lanemask_lt(lane));
        if (at < cap) list[at] = value;
    }
    return base + (gc_u64)__popc(m) <= cap;
}

// Appends the `want` lanes' words to touched[count ..) (capacity n W: cannot overflow, see above).
__device__ __forceinline__ void fz_touch_warp(bool want, int word, int* touched, int* count, int lane) {
    const unsigned m = __ballot_sync(FZ_FULL, want);
    if (!m) return;
    const int leader = __ffs(m) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(m));
    base = __shfl_sync(FZ_FULL, base, leader);
    if (want) touched[base + __popc(m & fz_lanemask_lt(lane))] = word;
}

// Block-wide sum of per-thread counters, then one atomicAdd per nonzero counter (all threads call it).
__device__ __forceinline__ void fz_flush(gc_u64* stats, const int* which, gc_u64* vals, int k) {
    __shared__ gc_u64 acc[8];
    if (threadIdx.x < 8) acc[threadIdx.x] = 0;
    __syncthreads();
    for (int i = 0; i < k; ++i)
        if (vals[i]) atomicAdd(&acc[i], vals[i]);
    __syncthreads();
    if (threadIdx.x < k && acc[threadIdx.x]) atomicAdd(&stats[which[threadIdx.x]], acc[threadIdx.x]);
}

// keys[i] = new-id root of traversal i << 32 | i, for the sort of sorted sources.
extern "C" __global__ void fz_keys(gc_u64 seed, gc_i64 j_begin, gc_i64 total, gc_i64 rounds, gc_i64 n,
                                   const gc_i64* __restrict__ new_of_old, gc_i64* __restrict__ keys) {
    for (gc_i64 i = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (gc_i64)gridDim.x * blockDim.x) {
        const gc_i64 j = j_begin + i / rounds;
        const gc_i64 root = gc_index_below(gc_mix5(seed, GC_STREAM_ROOT, (gc_u64)j, 0ULL, 0ULL), (gc_u64)n);
        keys[i] = (new_of_old[root] << 32) | i;
    }
}

extern "C" __global__ void fz_expand(int lt, const gc_i64* __restrict__ ind, const int* __restrict__ src,
                                     const int* __restrict__ eid, const float* __restrict__ warc,
                                     const gc_i64* __restrict__ qcum, const int* __restrict__ old_of_new, gc_i64 n,
                                     int W, gc_u64 seed, const gc_u64* __restrict__ slot_key,
                                     unsigned int* __restrict__ vis, unsigned int* __restrict__ nxt,
                                     int* __restrict__ touched, int* __restrict__ tcount,
                                     const gc_u64* __restrict__ cur, gc_u64* __restrict__ nlist, gc_u64 cap,
                                     gc_u64* __restrict__ ctl, int cur_idx, gc_u64* __restrict__ stats) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    const int B = 32 * W;
    const gc_i64 nW = n * W;
    gc_u64 count = ((volatile gc_u64*)ctl)[cur_idx];
    if (count > cap) count = cap;
    gc_u64* ncount = &ctl[cur_idx ^ 1];
    gc_u64 vals[3] = {0, 0, 0};  // entries, bits, reads (lane 0 of each warp)
    bool fits = true;
    for (gc_i64 i = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < (gc_i64)count; i += warps) {
        const gc_u64 e = cur[i];
        const int g = (int)(e >> 32);
        const gc_i64 x = (gc_i64)(e & 0xffffffffULL);
        const gc_i64 xbase = (gc_i64)g * nW + x * W;
        unsigned fr = 0;
        if (lane < W) fr = atomicExch(&nxt[xbase + lane], 0u);
        const unsigned nz = __ballot_sync(FZ_FULL, fr != 0u);
        if (!nz) continue;  // a duplicate entry: its vertex was taken already
        const int bits = __reduce_add_sync(FZ_FULL, (unsigned)__popc(fr));
        const gc_i64 beg = ind[x], end = ind[x + 1];
        if (lane == 0) {
            vals[0] += 1;
            vals[1] += (gc_u64)bits;
            vals[2] += (gc_u64)(end - beg);
        }
        int* gtouched = touched + (gc_i64)g * nW;
        int* gtcount = tcount + g;
        const gc_u64* keys = slot_key + (gc_i64)g * B;
        if (lt) {
            const gc_u64 vid = (gc_u64)(unsigned)old_of_new[x];
            for (int w = 0; w < W; ++w) {  // lane l takes the l-th slot of word w
                const unsigned f = __shfl_sync(FZ_FULL, fr, w);
                if (!f) continue;
                bool touch = false, push = false;
                int y = 0;
                if (lane < __popc(f)) {
                    const int b = fz_kth_bit(f, lane);
                    const gc_i64 r = gc_lt_draw(gc_mix5(seed, GC_STREAM_LT_CHOICE, keys[w * 32 + b], vid, 0ULL));
                    if (beg < end && qcum[end - 1] > r) {
                        gc_i64 lo = beg, hi = end - 1;  // first a with qcum[a] > r
                        while (lo < hi) {
                            const gc_i64 mid = (lo + hi) >> 1;
                            if (qcum[mid] > r) hi = mid;
                            else lo = mid + 1;
                        }
                        y = src[lo];
                        const gc_i64 yw = (gc_i64)g * nW + (gc_i64)y * W + w;
                        const unsigned bit = 1u << b;
                        const unsigned o = atomicOr(&vis[yw], bit);
                        if (!(o & bit)) {
                            touch = (o == 0u);
                            push = (atomicOr(&nxt[yw], bit) == 0u);
                        }
                    }
                }
                fz_touch_warp(touch, y * W + w, gtouched, gtcount, lane);
                fits &= fz_push_warp(push, ((gc_u64)g << 32) | (gc_u64)y, nlist, cap, ncount, lane);
            }
        } else {
            const int nnz = __popc(nz);
            const int gs = nnz <= 1 ? 1 : (nnz <= 2 ? 2 : (nnz <= 4 ? 4 : 8));
            const int k = lane & (gs - 1), grp = lane / gs, groups = 32 / gs;
            const int w = k < nnz ? fz_kth_bit(nz, k) : 0;
            unsigned f = __shfl_sync(FZ_FULL, fr, w);
            if (k >= nnz) f = 0u;
            const unsigned gmask = (gs == 32 ? FZ_FULL : ((1u << gs) - 1u)) << (grp * gs);
            const gc_u64* wkeys = keys + w * 32;
            for (gc_i64 base = beg; base < end; base += groups) {
                const gc_i64 a = base + grp;
                bool touch = false, push = false;
                int y = 0;
                if (a < end && f) {
                    y = src[a];
                    const gc_i64 yw = (gc_i64)g * nW + (gc_i64)y * W + w;
                    unsigned cand = f & ~*((volatile unsigned int*)&vis[yw]);
                    if (cand) {
                        const float p = warc[a];
                        unsigned kept = 0u;
                        if (p >= 1.0f) {
                            kept = cand;
                        } else if (p > 0.0f) {
                            const gc_u64 ea = (gc_u64)(unsigned)eid[a];
                            while (cand) {
                                const int b = __ffs(cand) - 1;
                                cand &= cand - 1u;
                                if (gc_bernoulli(gc_step(wkeys[b], ea), p)) kept |= 1u << b;
                            }
                        }
                        if (kept) {
                            const unsigned o = atomicOr(&vis[yw], kept);
                            const unsigned fresh = kept & ~o;
                            if (fresh) {
                                touch = (o == 0u);
                                push = (atomicOr(&nxt[yw], fresh) == 0u);
                            }
                        }
                    }
                }
                fz_touch_warp(touch, y * W + w, gtouched, gtcount, lane);
                const unsigned pm = __ballot_sync(FZ_FULL, push);
                const bool lead = push && !(pm & gmask & fz_lanemask_lt(lane));  // one push per arc
                fits &= fz_push_warp(lead, ((gc_u64)g << 32) | (gc_u64)y, nlist, cap, ncount, lane);
            }
        }
    }
    if (!fits && lane == 0) atomicOr(&ctl[FZ_FLAGS], FZ_LIST_OVERFLOW);
    const int which[3] = {FZ_S_ENTRIES, FZ_S_BITS, FZ_S_READS};
    fz_flush(stats, which, vals, 3);
}

// act[g] |= nxt masks of the entries of list `idx`; resets the count of the list just expanded.
extern "C" __global__ void fz_active(const gc_u64* __restrict__ list, gc_u64 cap, gc_u64* __restrict__ ctl, int idx,
                                     const unsigned int* __restrict__ nxt, unsigned int* __restrict__ act, gc_i64 n,
                                     int W, gc_u64* __restrict__ stats) {
    gc_u64 count = ((volatile gc_u64*)ctl)[idx];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        if (ctl[idx ^ 1]) atomicAdd(&stats[FZ_S_LEVELS], 1ULL);  // the list just expanded was not empty
        ctl[idx ^ 1] = 0;
        atomicMax(&stats[FZ_S_PEAK], count);
    }
    if (count > cap) count = cap;
    for (gc_i64 i = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; i < (gc_i64)count;
         i += (gc_i64)gridDim.x * blockDim.x) {
        const gc_u64 e = list[i];
        const gc_i64 g = (gc_i64)(e >> 32);
        const gc_i64 base = (g * n + (gc_i64)(e & 0xffffffffULL)) * W;
        for (int w = 0; w < W; ++w) {
            const unsigned m = nxt[base + w];
            if (m) atomicOr(&act[g * W + w], m);
        }
    }
}

// Exclusive block scan of a 0/1 flag over FZ_REFILL_THREADS threads; *total gets the sum.
__device__ __forceinline__ int fz_block_rank(bool flag, int* warp_sums, int* total) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const unsigned m = __ballot_sync(FZ_FULL, flag);
    if (lane == 0) warp_sums[wid] = __popc(m);
    __syncthreads();
    int before = 0, sum = 0;
    for (int i = 0; i < FZ_REFILL_THREADS / 32; ++i) {
        if (i < wid) before += warp_sums[i];
        sum += warp_sums[i];
    }
    *total = sum;
    __syncthreads();
    return before + __popc(m & fz_lanemask_lt(lane));
}

extern "C" __global__ void fz_refill(int lt, gc_i64 n, int W, gc_u64 seed, gc_i64 rounds, gc_i64 j_begin,
                                     gc_i64 total, int use_order, const gc_i64* __restrict__ order, int threshold,
                                     const gc_i64* __restrict__ ind, const int* __restrict__ old_of_new,
                                     const gc_i64* __restrict__ new_of_old, unsigned int* __restrict__ vis,
                                     unsigned int* __restrict__ nxt, int* __restrict__ touched,
                                     int* __restrict__ tcount, unsigned int* __restrict__ occ,
                                     unsigned int* __restrict__ act, gc_i64* __restrict__ slot_tr,
                                     gc_u64* __restrict__ slot_key, int* __restrict__ slot_off,
                                     gc_u64* __restrict__ list, gc_u64 cap, gc_u64* __restrict__ ctl, int idx,
                                     int* __restrict__ pool, gc_u64 pool_cap, gc_i64* __restrict__ trav_start,
                                     int* __restrict__ trav_size, gc_u64* __restrict__ stats) {
    __shared__ unsigned s_occ[8], s_fin[8];
    __shared__ int s_cnt[FZ_REFILL_THREADS];
    __shared__ gc_i64 s_pos[FZ_REFILL_THREADS];
    __shared__ int s_warp[FZ_REFILL_THREADS / 32];
    __shared__ int s_mode, s_nfin, s_abort;
    __shared__ gc_i64 s_base;
    __shared__ gc_u64 s_unfused;
    const int tid = threadIdx.x;
    const int g = blockIdx.x;
    const int B = 32 * W;
    const gc_i64 nW = n * W;
    if (blockDim.x != FZ_REFILL_THREADS) return;
    unsigned int* gvis = vis + (gc_i64)g * nW;
    unsigned int* gnxt = nxt + (gc_i64)g * nW;
    int* gtouched = touched + (gc_i64)g * nW;
    const bool skip = (((volatile gc_u64*)ctl)[FZ_FLAGS] & FZ_LIST_OVERFLOW) != 0;  // act is incomplete
    if (tid < W) {
        s_occ[tid] = occ[g * W + tid];
        s_fin[tid] = s_occ[tid] & ~act[g * W + tid];
        act[g * W + tid] = 0u;
    }
    __syncthreads();
    if (tid == 0) {
        int nocc = 0, nfin = 0;
        for (int w = 0; w < W; ++w) {
            nocc += __popc(s_occ[w]);
            nfin += __popc(s_fin[w]);
        }
        const bool more = ((volatile gc_u64*)ctl)[FZ_DISPATCH] < (gc_u64)total;
        // 0: nothing, 1: load free slots, 2: extract ended slots then load
        s_mode = skip ? 0 : (nocc == 0 ? (more ? 1 : 0) : ((nfin && (nfin == nocc || nfin >= threshold)) ? 2 : 0));
        s_nfin = nfin;
        s_abort = 0;
        s_unfused = 0;
    }
    __syncthreads();
    const int mode = s_mode;
    if (mode == 0) return;
    if (mode == 2) {
        if (tid < B) s_cnt[tid] = 0;
        __syncthreads();
        const int tc = tcount[g];
        gc_u64 unfused = 0;
        for (int i = tid; i < tc; i += FZ_REFILL_THREADS) {  // pass 1: members per ended slot
            const int word = gtouched[i];
            unsigned m = gvis[word] & s_fin[word % W];
            if (m) {
                const gc_i64 x = word / W;
                unfused += (gc_u64)__popc(m) * (gc_u64)(ind[x + 1] - ind[x]);
            }
            while (m) {
                const int b = __ffs(m) - 1;
                m &= m - 1u;
                atomicAdd(&s_cnt[(word % W) * 32 + b], 1);
            }
        }
        if (unfused) atomicAdd(&s_unfused, unfused);
        __syncthreads();
        if (tid == 0) {  // reserve the ended sets' space in the pool, only if it fits
            gc_u64 need = 0;
            for (int b = 0; b < B; ++b)
                if ((s_fin[b >> 5] >> (b & 31)) & 1u) need += (gc_u64)s_cnt[b];
            gc_u64 old = ((volatile gc_u64*)ctl)[FZ_POOL];
            while (true) {
                if (old + need > pool_cap) {
                    atomicOr(&ctl[FZ_FLAGS], FZ_POOL_OVERFLOW);
                    s_abort = 1;
                    break;
                }
                const gc_u64 seen = atomicCAS(&ctl[FZ_POOL], old, old + need);
                if (seen == old) break;
                old = seen;
            }
            if (!s_abort) {
                gc_i64 at = (gc_i64)old;
                for (int b = 0; b < B; ++b) {
                    if (!((s_fin[b >> 5] >> (b & 31)) & 1u)) continue;
                    const gc_i64 tr = slot_tr[(gc_i64)g * B + b];
                    s_pos[b] = at;
                    trav_start[tr] = at;
                    trav_size[tr] = s_cnt[b];
                    at += s_cnt[b];
                }
                atomicAdd(&stats[FZ_S_EXTRACT], 1ULL);
                atomicAdd(&stats[FZ_S_TRAV], (gc_u64)s_nfin);
                atomicAdd(&stats[FZ_S_UNFUSED], s_unfused);
            }
        }
        __syncthreads();
        if (s_abort) return;  // nothing changed; the host grows the pool and a later level retries
        int kept_total = 0, out = 0;
        for (int base = 0; base < tc; base += FZ_REFILL_THREADS) {  // pass 2: write, clear, compact
            const int i = base + tid;
            int word = 0;
            bool keep = false;
            if (i < tc) {
                word = gtouched[i];
                const int w = word % W;
                unsigned v = gvis[word];
                unsigned m = v & s_fin[w];
                if (m) {
                    const int u = old_of_new[word / W];
                    while (m) {
                        const int b = __ffs(m) - 1;
                        m &= m - 1u;
                        const int slot = w * 32 + b;
                        const gc_i64 at = (gc_i64)atomicAdd((unsigned long long*)&s_pos[slot], 1ULL);
                        pool[at] = u + slot_off[(gc_i64)g * B + slot];
                    }
                    v &= ~s_fin[w];
                    gvis[word] = v;
                }
                keep = v != 0u;
            }
            const int rank = fz_block_rank(keep, s_warp, &kept_total);  // synchronises: all reads done
            if (keep) gtouched[out + rank] = word;
            out += kept_total;
            __syncthreads();
        }
        if (tid == 0) tcount[g] = out;
        if (tid < W) s_occ[tid] &= ~s_fin[tid];
        __syncthreads();
    }
    // load the next traversals of the dispatch order into the free slots
    const bool is_free = tid < B && !((s_occ[tid >> 5] >> (tid & 31)) & 1u);
    int nfree = 0;
    const int rank = fz_block_rank(is_free, s_warp, &nfree);
    if (tid == 0) s_base = (gc_i64)atomicAdd(&ctl[FZ_DISPATCH], (gc_u64)nfree);
    __syncthreads();
    const gc_i64 k = s_base + rank;
    bool push = false;
    gc_i64 x = 0;
    if (is_free && k < total) {
        const int b = tid, w = b >> 5;
        const gc_i64 i = use_order ? (order[k] & 0xffffffffLL) : k;
        const gc_i64 t = i % rounds;
        const gc_i64 j = j_begin + i / rounds;
        const gc_u64 s = (gc_u64)j * (gc_u64)rounds + (gc_u64)t;
        x = new_of_old[gc_index_below(gc_mix5(seed, GC_STREAM_ROOT, (gc_u64)j, 0ULL, 0ULL), (gc_u64)n)];
        slot_tr[(gc_i64)g * B + b] = i;
        slot_key[(gc_i64)g * B + b] = lt ? s : gc_mix3(seed, GC_STREAM_COIN, s);
        slot_off[(gc_i64)g * B + b] = (int)(t * n);
        atomicOr(&s_occ[w], 1u << (b & 31));
        const gc_i64 word = x * W + w;
        const unsigned o = atomicOr(&gvis[word], 1u << (b & 31));
        if (o == 0u) gtouched[atomicAdd(&tcount[g], 1)] = (int)word;
        push = atomicOr(&gnxt[word], 1u << (b & 31)) == 0u;
    }
    const bool fits = fz_push_warp(push, ((gc_u64)g << 32) | (gc_u64)x, list, cap, &ctl[idx], tid & 31);
    if (!fits && (tid & 31) == 0) atomicOr(&ctl[FZ_FLAGS], FZ_LIST_OVERFLOW);
    __syncthreads();
    if (tid < W) occ[g * W + tid] = s_occ[tid];
}

// Rebuilds list `idx` from nxt after an overflow: one entry per (batch, vertex) with a nonzero word.
extern "C" __global__ void fz_rescan(const unsigned int* __restrict__ nxt, gc_i64 batches, gc_i64 n, int W,
                                     gc_u64* __restrict__ list, gc_u64 cap, gc_u64* __restrict__ ctl, int idx) {
    const int lane = threadIdx.x & 31;
    const gc_i64 total = batches * n;
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    bool fits = true;
    for (gc_i64 base = (gc_i64)blockIdx.x * blockDim.x; base < total; base += stride) {  // uniform per warp
        const gc_i64 v = base + threadIdx.x;
        bool want = false;
        if (v < total)
            for (int w = 0; w < W; ++w) want |= nxt[v * W + w] != 0u;
        const gc_u64 g = (gc_u64)(v / n), x = (gc_u64)(v % n);
        fits &= fz_push_warp(want, (g << 32) | x, list, cap, &ctl[idx], lane);
    }
    if (!fits && lane == 0) atomicOr(&ctl[FZ_FLAGS], FZ_LIST_OVERFLOW);
}

// im_fused.cu: fused reverse traversals for RR sets (FuseIM, Neff et al., ICS '24, sections 3-4), keyed.
//
// G batches are in flight at once, each of B = 32 W traversals ("slots"). Batch g owns, per vertex x
// of the traversal layout, W 32-bit words of
//   vis[g][x]: the slots that reached x (set at discovery, by atomicOr: the bits a call newly sets
//              are its own, so no (vertex, slot) is discovered twice and no (arc, slot) is tried twice);
//   nxt[g][x]: the slots that reached x and still have to be expanded from it;
// and a ring list touched[g] (capacity n W, live part [tbase, tbase + tcount)) of the words x * W + w
// whose vis word is not zero: one entry each, appended by the call that turns the word non-zero,
// dropped when an extraction clears it.
// The frontier is a list of entries (g << 32 | x), pushed by the call that turns a nxt word of (g, x)
// non-zero; expanding an entry takes (atomicExch) all W words of nxt[g][x], so a later duplicate
// entry finds them empty. A word that is not zero always has an entry that will take it, so no bit is
// lost; a bit added before its vertex's entry is taken is expanded early, which cannot change a set
// (reachability with keyed coins does not depend on the order of expansion). A list that overflows
// keeps its bits in nxt; the host then rebuilds the list from nxt (fz_rescan).
//
// A level is three launches:
//   fz_expand_ic / fz_expand_lt:  a warp per entry; IC: the nonzero words of the entry's mask are spread over groups of
//               1, 2, 4 or 8 lanes (one 32-bit word per lane), 32 / group arcs at a time; each lane
//               flips the coin of its arc for every slot of its word not yet at the arc's source,
//               bernoulli(step(mix(seed, COIN, s), eid), p); at a skipping node (skip[x] < 0,
//               gpucore/im/skipping.py) a lane per slot walks that slot's geometric jumps over the row
//               instead, jump i keyed by mix(seed, SKIP, s, old id, i); LT: a lane per slot draws its in-arc
//               (fixed-point prefix sums, binary search) and moves unless it was there. Every slot
//               that discovers a vertex is marked in act[g]. A level expands every pending entry,
//               so after it the pending slots are among those marked: an occupied slot that is not
//               marked has ended;
//   fz_decide:  X blocks per batch: decide (ended slots, tail threshold), count the ended slots'
//               members over a share of the batch's words (the touched list, or all n W words when
//               the list holds more than half of them); the last block of the batch reserves the
//               ended sets' space in the pool (or flags the pool full and leaves the batch as is);
//   fz_extract: the same X blocks write the members (old ids + t n), clear the ended slots' bits and
//               append the words still non-zero to a fresh part of the ring; the last block
//               finishes the batch and loads the next traversals of the dispatch order into its
//               free slots (root bits in vis and nxt, entries in the new list).
// Evicted traversals (FzEvict) are run again by the team pass, fz_team_ic (a block per traversal; end of file).
// Keys (docs/im.md): traversal i of a call is (set i / T, round i % T), s = j * T + t, root
// index_below(mix(seed, ROOT, j, 0, 0), n) (an old id, mapped by new_of_old); LT r = mix(seed,
// LT_CHOICE, s, old id, 0) >> 24.
#include "gc_loops.cuh"
#include "gc_random.cuh"

#define FZ_FULL 0xffffffffu
#define FZ_THREADS 256  // threads of fz_decide / fz_extract blocks (>= the widest batch)
// ctl words
#define FZ_DISPATCH 2
#define FZ_POOL 3
#define FZ_FLAGS 4
#define FZ_WRITTEN 5  // traversals whose sets are written, this call
#define FZ_TEAM_NEXT 6  // the team pass's next list index
#define FZ_EVICTED 7  // traversals evicted from batches, this call (their ids in FzEvict::list)
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
#define FZ_S_JUMPS 8
#define FZ_S_RING 9  // resident levels that found their pending words in the ring
#define FZ_S_EVICT 10
// extraction modes (emode)
#define FZ_IDLE 0
#define FZ_LOAD 1
#define FZ_EXTRACT 2
#define FZ_ABORT 3

__device__ __forceinline__ unsigned fz_lanemask_lt(int lane) { return (1u << lane) - 1u; }

__device__ __forceinline__ int fz_kth_bit(unsigned m, int k) {  // position of the k-th set bit (k < popc)
    for (int i = 0; i < k; ++i) m &= m - 1u;
    return __ffs(m) - 1;
}

// Appends the `want` lanes' values to list[count ..) with one atomicAdd per warp (all lanes call it).
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

// Appends the `want` lanes' words to the ring ring[(start + count + k) % cap] (all lanes call it);
// the ring never overflows (one entry per non-zero word, see above).
__device__ __forceinline__ void fz_ring_warp(bool want, int word, int* ring, gc_i64 cap, int start, int* count,
                                             int lane) {
    const unsigned m = __ballot_sync(FZ_FULL, want);
    if (!m) return;
    const int leader = __ffs(m) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(m));
    base = __shfl_sync(FZ_FULL, base, leader);
    if (want) ring[((gc_i64)start + base + __popc(m & fz_lanemask_lt(lane))) % cap] = word;
}

// The sum of v over the 32 lanes of a warp (all lanes call it), on every lane: one shared-memory atomic a warp
// after it, where one a thread made the 64-bit add (a compare-and-swap loop in shared memory) spin.
__device__ __forceinline__ gc_u64 fz_warp_sum(gc_u64 v) {
    for (int d = 16; d; d >>= 1) v += __shfl_xor_sync(FZ_FULL, v, d);
    return v;
}

// Marks in act the slots that discovered a vertex (skips the atomic when they are marked already).
__device__ __forceinline__ void fz_mark(unsigned int* act, unsigned fresh) {
    if (fresh & ~*((volatile unsigned int*)act)) atomicOr(act, fresh);
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

// A geometric jump (gc_random.cuh), not inlined: inlined, its double arithmetic raised fz_expand_ic
// from 64 to 74 registers (3 instead of 4 resident blocks of 256 threads), for every node.
__device__ __noinline__ gc_i64 fz_jump(gc_u64 h, double rlq, gc_i64 d) { return gc_skip_jump(h, rlq, d); }

#define FZ_ENTRY_PARAMS                                                                                         \
    const gc_i64 *ind, const int *src, const int *eid, const float *warc, const gc_i64 *qcum, const double *skip,   \
        const int *old_of_new, gc_i64 n, int W, gc_u64 seed, const gc_u64 *slot_key, const gc_u64 *slot_skey,      \
        unsigned int *vis, unsigned int *nxt, unsigned int *act, int *touched, int rstart, int *rcount,             \
        gc_u64 *nlist, gc_u64 cap, gc_u64 *ncount, int lane, gc_u64 &entries, gc_u64 &bits_total, gc_u64 &reads,   \
        gc_u64 *s_jumps, bool &fits
#define FZ_ENTRY_ARGS                                                                                            \
    ind, src, eid, warc, qcum, skip, old_of_new, n, W, seed, slot_key, slot_skey, vis, nxt, act, touched, rstart,   \
        rcount, nlist, cap, ncount, lane, entries, bits_total, reads, s_jumps, fits

// Adds the fresh bits to the pending word *nxt of a vertex whose visited word held vis_old before they were set
// in it; returns whether *nxt was zero (a list entry is due). The pending bits are a subset of the visited ones,
// so where vis_old is zero (the rule at tiny sets) *nxt was zero too: the bits are then set without waiting for
// the old word (a reduction, no round trip).
__device__ __forceinline__ bool fz_pend(unsigned int* nxt, unsigned fresh, unsigned vis_old) {
    if (vis_old == 0u) {
        atomicOr(nxt, fresh);
        return true;
    }
    return atomicOr(nxt, fresh) == 0u;
}

// IC: the slots f (not zero) of word w try an arc of probability p and arc id ea into y (word yw of batch g):
// each slot flips its keyed coin, bernoulli(step(wkeys[slot], ea), p), and the fresh (vertex, slot) pairs go
// into vis, nxt and gact. The caller loads the arc's source, probability and id together, so that an arc
// costs one round trip to memory before its coins. A mask of one slot (the rule at tiny sets) flips its coin
// without reading vis first: most coins fail there, and such an arc then never touches vis; a wider mask
// first drops the slots already at y, whose coins cannot matter.
// touch: the vis word was zero (a ring entry is due); returns whether the nxt word was zero (a list entry is due).
__device__ __forceinline__ bool fz_try_arc(unsigned f, float p, gc_u64 ea, gc_i64 yw, const gc_u64* wkeys,
                                           unsigned int* vis, unsigned int* nxt, unsigned int* gact, bool& touch) {
    const int b0 = __ffs(f) - 1;
    const gc_u64 k0 = wkeys[b0];
    unsigned cand = f;
    if (f & (f - 1u)) cand &= ~*((volatile unsigned int*)&vis[yw]);
    unsigned kept = 0u;
    if (p >= 1.0f) {
        kept = cand;
    } else if (p > 0.0f) {
        while (cand) {
            const int b = __ffs(cand) - 1;
            cand &= cand - 1u;
            if (gc_bernoulli(gc_step(b == b0 ? k0 : wkeys[b], ea), p)) kept |= 1u << b;
        }
    }
    if (!kept) return false;
    const unsigned o = atomicOr(&vis[yw], kept);
    const unsigned fresh = kept & ~o;
    if (!fresh) return false;
    touch = (o == 0u);
    fz_mark(gact, fresh);
    return fz_pend(&nxt[yw], fresh, o);
}

// Expands the pending slots fr of vertex x of batch g, taken from nxt[g][x] by the caller (a warp; every lane
// calls it with the same g, x, lane l < W holding word l; all zero: a duplicate entry, whose vertex was taken
// already): IC flips the coins of x's in-arcs or walks its skipping jumps, LT draws each slot's in-arc;
// discovered (vertex, slot) pairs go into vis and nxt, the ring (rstart, rcount) and, unless nlist is null, the
// next frontier list. Lane 0 adds to entries, bits_total and reads; the skip jumps go to *s_jumps (shared).
template <bool LT>
__device__ __forceinline__ void fz_expand_taken(int g, gc_i64 x, unsigned fr, FZ_ENTRY_PARAMS) {
    const int B = 32 * W;
    const gc_i64 nW = n * W;
    const unsigned nz = __ballot_sync(FZ_FULL, fr != 0u);
    if (!nz) return;  // a duplicate entry: its vertex was taken already
    const int bits = __reduce_add_sync(FZ_FULL, (unsigned)__popc(fr));
    const gc_i64 beg = ind[x], end = ind[x + 1];
    const double rlq = LT ? 0.0 : skip[x];  // IC: < 0 at a skipping node, whose row is not read
    if (lane == 0) {
        entries += 1;
        bits_total += (gc_u64)bits;
        if (rlq >= 0.0) reads += (gc_u64)(end - beg);
    }
    int* ring = touched + (gc_i64)g * nW;
    unsigned int* gact = act;  // batch g's words
    const gc_u64* keys = slot_key + (gc_i64)g * B;
    if (LT) {
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
                        push = fz_pend(&nxt[yw], bit, o);
                        fz_mark(&gact[w], bit);
                    }
                }
            }
            fz_ring_warp(touch, y * W + w, ring, nW, rstart, rcount, lane);
            if (nlist) fits &= fz_push_warp(push, ((gc_u64)g << 32) | (gc_u64)y, nlist, cap, ncount, lane);
        }
    } else if (rlq < 0.0) {
        const gc_u64 vid = (gc_u64)(unsigned)old_of_new[x];
        const gc_u64* skeys = slot_skey + (gc_i64)g * B;
        const gc_i64 d = end - beg;
        gc_u64 drawn = 0;              // the skip jumps this lane drew
        for (int w = 0; w < W; ++w) {  // lane l walks the jumps of the l-th slot of word w
            const unsigned f = __shfl_sync(FZ_FULL, fr, w);
            if (!f) continue;
            unsigned bit = 0u;
            gc_u64 hv = 0;
            gc_i64 pos = d;  // the lane's next live position (>= d: its walk has ended)
            int i = 0;       // the jumps it drew
            if (lane < __popc(f)) {
                bit = 1u << fz_kth_bit(f, lane);
                hv = gc_step(skeys[w * 32 + __ffs(bit) - 1], vid);
                pos = fz_jump(gc_step(hv, 0ULL), rlq, d);
                i = 1;
            }
            while (__any_sync(FZ_FULL, pos < d)) {
                bool touch = false, push = false;
                int y = 0;
                if (pos < d) {
                    y = src[beg + pos];
                    const gc_i64 yw = (gc_i64)g * nW + (gc_i64)y * W + w;
                    const unsigned o = atomicOr(&vis[yw], bit);
                    if (!(o & bit)) {
                        touch = (o == 0u);
                        push = fz_pend(&nxt[yw], bit, o);
                        fz_mark(&gact[w], bit);
                    }
                    pos += 1 + fz_jump(gc_step(hv, (gc_u64)i), rlq, d);
                    i += 1;
                }
                fz_ring_warp(touch, y * W + w, ring, nW, rstart, rcount, lane);
                if (nlist) fits &= fz_push_warp(push, ((gc_u64)g << 32) | (gc_u64)y, nlist, cap, ncount, lane);
            }
            drawn += (gc_u64)i;
        }
        drawn = fz_warp_sum(drawn);  // the skip jumps the lanes drew
        if (lane == 0 && drawn) atomicAdd(s_jumps, drawn);
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
                push = fz_try_arc(f, warc[a], (gc_u64)(unsigned)eid[a], (gc_i64)g * nW + (gc_i64)y * W + w, wkeys,
                                  vis, nxt, &gact[w], touch);
            }
            fz_ring_warp(touch, y * W + w, ring, nW, rstart, rcount, lane);
            const unsigned pm = __ballot_sync(FZ_FULL, push);
            const bool lead = push && !(pm & gmask & fz_lanemask_lt(lane));  // one push per arc
            if (nlist) fits &= fz_push_warp(lead, ((gc_u64)g << 32) | (gc_u64)y, nlist, cap, ncount, lane);
        }
    }
}

// fz_expand_taken of entry (g, x) after taking its pending words: all W words of nxt[g][x] (a warp; every lane
// calls it with the same g, x).
template <bool LT>
__device__ __forceinline__ void fz_expand_entry(int g, gc_i64 x, FZ_ENTRY_PARAMS) {
    unsigned fr = 0;
    if (lane < W) fr = atomicExch(&nxt[(gc_i64)g * n * W + x * W + lane], 0u);
    fz_expand_taken<LT>(g, x, fr, FZ_ENTRY_ARGS);
}

#define FZ_GROUP_ROW 16  // the longest row a lane group expands

// Lanes per entry of a grouped expansion: at least the W words of the widest mask, one a lane. A level with more
// entries than a block's groups of FZ_GROUP lanes (32 at 256 threads) takes groups of FZ_GROUP_SMALL lanes
// instead where the mask fits them (W <= 4), so that its entries run at once rather than in two rounds (groups of
// 4 lanes for every level were no faster on the H100: results/reference/fuseim/resident-groups-h100.md).
#define FZ_GROUP 8
#define FZ_GROUP_SMALL 4

// IC, one batch g: the warp expands up to 32 / gs entries at once, entry x (when valid) by the group of
// gs >= W lanes (FZ_GROUP or FZ_GROUP_SMALL) the calling lane belongs to (all lanes call it). Tiny sets make
// entries of one or two slots on short rows, so a warp per entry would leave most lanes idle and the level's
// chain of global accesses would run once per entry. Each group takes its entry's W words (lane k of the group
// takes word k);
// a group whose vertex is not skipping and whose row has at most FZ_GROUP_ROW arcs tries them itself (lane k:
// arcs k, k + gs, ..., each for every word); the other entries then run one after another on the whole warp
// (fz_expand_taken). The discoveries, counters and list entries are those of one fz_expand_entry per entry.
// The entries a block's lane groups leave to whole warps (long or skipping rows), queued in shared memory so
// that every warp of the block takes some (fz_expand_block) instead of the warp whose group met them: n (the
// count, zero between levels), x[FZ_DEFER] and the W pending words of each, words[8 * FZ_DEFER].
#ifndef FZ_DEFER  // a test compiles a tiny one
#define FZ_DEFER 64
#endif
struct FzDefer {
    int* n;
    gc_i64* x;
    unsigned* words;
};

__device__ __forceinline__ void fz_expand_groups(int gs, int g, gc_i64 x, bool valid, const FzDefer& dq,
                                                 FZ_ENTRY_PARAMS) {
    const gc_i64 nW = n * W;
    const int k = lane & (gs - 1), lead = lane & ~(gs - 1);
    // a vertex listed twice in one warp's entries is taken by the first group only (taking its words in one
    // instruction, two groups would split them and read the row twice)
    const unsigned same = __match_any_sync(FZ_FULL, valid ? x : (gc_i64)-1);
    if (__ffs(same) - 1 < lead) valid = false;
    gc_i64 beg = 0, len = 0;
    double rlq = 0.0;
    if (valid) {  // the row is read before the words are taken, so that the two round trips overlap
        beg = ind[x];
        len = ind[x + 1] - beg;
        rlq = skip[x];
    }
    unsigned fr = 0u;
    if (valid && k < W) fr = atomicExch(&nxt[(gc_i64)g * nW + x * W + k], 0u);
    const bool live = ((__ballot_sync(FZ_FULL, fr != 0u) >> lead) & ((1u << gs) - 1u)) != 0u;
    const bool grouped = live && rlq >= 0.0 && len <= FZ_GROUP_ROW;
    unsigned bits = grouped ? __popc(fr) : 0u;  // the group's slots, summed over its lanes
    for (int d = 1; d < gs; d <<= 1) bits += __shfl_xor_sync(FZ_FULL, bits, d);
    if (grouped && k == 0) {  // fz_expand_taken's counters, on the group's first lane
        entries += 1;
        bits_total += (gc_u64)bits;
        reads += (gc_u64)len;
    }
    if (!grouped) len = 0;
    int* ring = touched + (gc_i64)g * nW;
    unsigned int* gact = act;  // batch g's words
    const gc_u64* keys = slot_key + (gc_i64)g * 32 * W;
    for (int base = 0; __any_sync(FZ_FULL, base < len); base += gs) {  // uniform
        const bool on = base + k < len;
        const gc_i64 a = beg + base + k;
        int y = 0;
        float p = 0.0f;
        gc_u64 ea = 0;
        if (on) {  // one round trip for the arc's source, probability and id
            y = src[a];
            p = warc[a];
            ea = (gc_u64)(unsigned)eid[a];
        }
        bool push = false;
        for (int w = 0; w < W; ++w) {  // uniform
            const unsigned f = __shfl_sync(FZ_FULL, fr, lead + w);
            bool touch = false;
            if (on && f)
                push |= fz_try_arc(f, p, ea, (gc_i64)g * nW + (gc_i64)y * W + w, keys + w * 32, vis, nxt, &gact[w],
                                   touch);
            fz_ring_warp(touch, y * W + w, ring, nW, rstart, rcount, lane);
        }
        if (nlist) fits &= fz_push_warp(push, ((gc_u64)g << 32) | (gc_u64)y, nlist, cap, ncount, lane);
    }
    // the other entries go to the block's queue; those that do not fit run here, one after another
    int slot = FZ_DEFER;
    if (live && !grouped && k == 0) slot = atomicAdd(dq.n, 1);
    slot = __shfl_sync(FZ_FULL, slot, lead);
    if (slot < FZ_DEFER) {
        if (k == 0) dq.x[slot] = x;
        if (k < W) dq.words[slot * 8 + k] = fr;
    }
    for (unsigned rest = __ballot_sync(FZ_FULL, live && !grouped && k == 0 && slot >= FZ_DEFER); rest;
         rest &= rest - 1u) {  // uniform
        const int q = __ffs(rest) - 1;
        const gc_i64 xq = __shfl_sync(FZ_FULL, x, q);
        const unsigned fq = __shfl_sync(FZ_FULL, fr, q + k);
        fz_expand_taken<false>(g, xq, lane < W ? fq : 0u, FZ_ENTRY_ARGS);
    }
}

// Expands entries 0 .. count - 1 of batch g, entry e at vertex x_of(e) (a block; all threads call it): LT a
// warp per entry, IC 32 / FZ_GROUP entries per warp, or 32 / FZ_GROUP_SMALL where there are more entries
// than that and the masks fit (fz_expand_groups), then the entries the groups queued in dq, a warp each
// (the warps of a level all wait for its slowest: a warp that met two long rows took both, one after the other).
template <bool LT, class XOf>
__device__ __forceinline__ void fz_expand_block(int g, int count, XOf x_of, const FzDefer& dq, FZ_ENTRY_PARAMS) {
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (LT) {
        for (int e = warp; e < count; e += warps) fz_expand_entry<true>(g, x_of(e), FZ_ENTRY_ARGS);
    } else {
        const int gs = (W <= FZ_GROUP_SMALL && count > warps * (32 / FZ_GROUP)) ? FZ_GROUP_SMALL : FZ_GROUP;
        const int per_warp = 32 / gs;
        for (int e0 = warp * per_warp; e0 < count; e0 += warps * per_warp) {  // uniform per warp
            const int e = e0 + lane / gs;
            fz_expand_groups(gs, g, e < count ? x_of(e) : 0, e < count, dq, FZ_ENTRY_ARGS);
        }
        __syncthreads();  // the queue is full
        const int queued = *dq.n < FZ_DEFER ? *dq.n : FZ_DEFER;
        for (int i = warp; i < queued; i += warps)
            fz_expand_taken<false>(g, dq.x[i], lane < W ? dq.words[i * 8 + lane] : 0u, FZ_ENTRY_ARGS);
        __syncthreads();  // every warp has read its entries
        if (threadIdx.x == 0) *dq.n = 0;
    }
}

// The body of fz_expand_ic / fz_expand_lt (a warp per entry of list cur_idx, grid-stride).
template <bool LT>
__device__ __forceinline__ void fz_expand(const gc_i64* __restrict__ ind, const int* __restrict__ src,
                                          const int* __restrict__ eid, const float* __restrict__ warc,
                                          const gc_i64* __restrict__ qcum, const double* __restrict__ skip,
                                          const int* __restrict__ old_of_new, gc_i64 n, int W, gc_u64 seed,
                                          const gc_u64* __restrict__ slot_key, const gc_u64* __restrict__ slot_skey,
                                          unsigned int* __restrict__ vis, unsigned int* __restrict__ nxt,
                                          unsigned int* __restrict__ act, int* __restrict__ touched,
                                          const int* __restrict__ tbase, int* __restrict__ tcount,
                                          const gc_u64* __restrict__ cur, gc_u64* __restrict__ nlist, gc_u64 cap,
                                          gc_u64* __restrict__ ctl, int cur_idx, gc_u64* __restrict__ stats) {
    __shared__ gc_u64 s_acc[4];  // entries, mask bits, edge reads, skip jumps
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    if (threadIdx.x < 4) s_acc[threadIdx.x] = 0;
    __syncthreads();
    gc_u64 count = ((volatile gc_u64*)ctl)[cur_idx];
    if (count > cap) count = cap;
    gc_u64* ncount = &ctl[cur_idx ^ 1];
    gc_u64 entries = 0, bits_total = 0, reads = 0;  // lane 0 of each warp
    bool fits = true;
    for (gc_i64 i = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < (gc_i64)count; i += warps) {
        const gc_u64 e = cur[i];
        const int g = (int)(e >> 32);
        fz_expand_entry<LT>(g, (gc_i64)(e & 0xffffffffULL), ind, src, eid, warc, qcum, skip, old_of_new, n, W, seed,
                            slot_key, slot_skey, vis, nxt, act + (gc_i64)g * W, touched, tbase[g], tcount + g, nlist,
                            cap, ncount, lane, entries, bits_total, reads, &s_acc[3], fits);
    }
    if (!fits && lane == 0) atomicOr(&ctl[FZ_FLAGS], FZ_LIST_OVERFLOW);
    if (entries) {  // one atomic per warp into shared, one per block into global
        atomicAdd(&s_acc[0], entries);
        atomicAdd(&s_acc[1], bits_total);
        atomicAdd(&s_acc[2], reads);
    }
    __syncthreads();
    if (threadIdx.x < 3 && s_acc[threadIdx.x]) atomicAdd(&stats[FZ_S_ENTRIES + threadIdx.x], s_acc[threadIdx.x]);
    if (threadIdx.x == 3 && s_acc[3]) atomicAdd(&stats[FZ_S_JUMPS], s_acc[3]);
}

#define FZ_EXPAND_PARAMS                                                                                        \
    const gc_i64 *__restrict__ ind, const int *__restrict__ src, const int *__restrict__ eid,                 \
        const float *__restrict__ warc, const gc_i64 *__restrict__ qcum, const double *__restrict__ skip,     \
        const int *__restrict__ old_of_new, gc_i64 n, int W, gc_u64 seed, const gc_u64 *__restrict__ slot_key, \
        const gc_u64 *__restrict__ slot_skey, unsigned int *__restrict__ vis,                                 \
        unsigned int *__restrict__ nxt, unsigned int *__restrict__ act, int *__restrict__ touched,            \
        const int *__restrict__ tbase, int *__restrict__ tcount, const gc_u64 *__restrict__ cur,              \
        gc_u64 *__restrict__ nlist, gc_u64 cap, gc_u64 *__restrict__ ctl, int cur_idx, gc_u64 *__restrict__ stats
#define FZ_EXPAND_ARGS                                                                                         \
    ind, src, eid, warc, qcum, skip, old_of_new, n, W, seed, slot_key, slot_skey, vis, nxt, act, touched, tbase, \
        tcount, cur, nlist, cap, ctl, cur_idx, stats

// Blocks of fz_expand_* one SM holds at once (their registers are capped to fit: left free, ptxas took 78
// for fz_expand_ic, 3 blocks an SM).
#define FZ_EXPAND_BLOCKS 4
extern "C" __global__ void __launch_bounds__(256, FZ_EXPAND_BLOCKS) fz_expand_ic(FZ_EXPAND_PARAMS) {
    fz_expand<false>(FZ_EXPAND_ARGS);
}
extern "C" __global__ void __launch_bounds__(256, FZ_EXPAND_BLOCKS) fz_expand_lt(FZ_EXPAND_PARAMS) {
    fz_expand<true>(FZ_EXPAND_ARGS);
}

// ---- extraction (fz_decide, fz_extract): grid (X, batches), FZ_THREADS threads ----------------------

struct FzBatch {  // the arrays of all batches, and what a block needs to walk its share of batch g
    gc_i64 n, nW;
    int W, B, g, x, X;
    unsigned int* vis;  // batch g's
    int* ring;          // batch g's
};

// Eviction (the level mapping, IC; after == 0: none). A running slot is old once `after` levels of its batch have
// passed since it was loaded; a decide step that finds old slots extracts the batch, and the old slots are
// evicted there: their bits are cleared with the ended slots', their slots refilled, and their traversal ids
// appended to list (ctl[FZ_EVICTED] of them) for the team pass (fz_team_ic), which runs each again from its root
// with the same keys, so the sets do not change. The host evicts only in pieces whose traversals are expected
// to be a small share of the graph (gpucore/im/fused/cuda.py EVICT_BELOW): there the rare traversal that runs
// long is a giant among short ones, shares few row reads with them, and would hold its batch's extractions to
// its own words, while a block of its own runs it at the unfused sampler's cost without a warp's latency.
struct FzEvict {
    int after;
    int* born;      // per slot (G B): its batch's level count when it was loaded
    int* blev;      // per batch (G): levels so far (fz_extract's launches; approximate where read, harmlessly)
    unsigned* eev;  // per batch (G W): the slots evicted at the current extraction (read by fz_extract)
    gc_i64* list;   // the evicted traversals
};
#define FZ_EVICT_PARAMS int evict_after, int *born, int *blev, unsigned int *eev, gc_i64 *evicted

// Block x of the X blocks of batch g.
__device__ __forceinline__ FzBatch fz_batch(gc_i64 n, int W, unsigned int* vis, int* touched, int g, int x, int X) {
    FzBatch b;
    b.n = n;
    b.W = W;
    b.B = 32 * W;
    b.nW = n * W;
    b.g = g;
    b.x = x;
    b.X = X;
    b.vis = vis + (gc_i64)b.g * b.nW;
    b.ring = touched + (gc_i64)b.g * b.nW;
    return b;
}

// The eviction step of an extraction of batch b (warp 0 of its last block): the old slots s_old go to E.eev[g] and
// their traversal ids to E.list.
__device__ void fz_evict(const FzEvict& E, const FzBatch& b, const unsigned* s_old, const gc_i64* slot_tr,
                         gc_u64* ctl, int lane) {
    for (int q = 0; q < b.W; ++q) {
        const unsigned ev = s_old[q];
        gc_u64 at = 0;
        if (lane == 0 && ev) at = atomicAdd(&ctl[FZ_EVICTED], (gc_u64)__popc(ev));
        at = __shfl_sync(FZ_FULL, at, 0);
        if ((ev >> lane) & 1u)
            E.list[at + __popc(ev & fz_lanemask_lt(lane))] = slot_tr[(gc_i64)b.g * b.B + q * 32 + lane];
        if (lane == q) E.eev[b.g * b.W + q] = ev;
    }
}

// The word of item i of this block's share: ring entry (start + i) % nW, or word i itself (dense).
__device__ __forceinline__ int fz_item_word(const FzBatch& b, int dense, int start, gc_i64 i) {
    return dense ? (int)i : b.ring[((gc_i64)start + i) % b.nW];
}

// Per-slot counts (shared, FZ_THREADS entries) of the ended slots' members among this block's items,
// and (unless `unfused` is null) the in-arcs an unfused sampler reads for them (none at a skipping
// node: `skip` is the IC skip table, null for LT); all threads call it.
__device__ void fz_count_share(const FzBatch& b, int dense, int start, gc_i64 items, const unsigned* fin,
                               const gc_i64* __restrict__ ind, const double* __restrict__ skip, int* cnt,
                               gc_u64* unfused) {
    if (threadIdx.x < b.B) cnt[threadIdx.x] = 0;
    __syncthreads();
    gc_u64 reads = 0;
    for (gc_i64 i = (gc_i64)b.x * FZ_THREADS + threadIdx.x; i < items; i += (gc_i64)b.X * FZ_THREADS) {
        const int word = fz_item_word(b, dense, start, i);
        const int w = word % b.W;
        unsigned m = b.vis[word] & fin[w];
        if (!m) continue;
        const gc_i64 x = word / b.W;
        if (unfused && !(skip && skip[x] < 0.0)) reads += (gc_u64)__popc(m) * (gc_u64)(ind[x + 1] - ind[x]);
        while (m) {
            const int bit = __ffs(m) - 1;
            m &= m - 1u;
            atomicAdd(&cnt[w * 32 + bit], 1);
        }
    }
    if (unfused) {
        reads = fz_warp_sum(reads);
        if ((threadIdx.x & 31) == 0 && reads) atomicAdd(unfused, reads);
    }
    __syncthreads();
}

// Is this the last block of batch g to arrive here (the others' writes then visible)? All threads call it.
// A batch of one block (the resident mapping, or a level-mapping grid of X = 1, whose steps are separate
// launches) is its own last block: a __syncthreads makes its writes visible to itself, and no fence or
// counter is needed.
__device__ __forceinline__ bool fz_last_block(int* done, int X, int* s_flag) {
    if (X == 1) {
        __syncthreads();
        return true;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        *s_flag = atomicAdd(done, 1) == X - 1;
        if (*s_flag) *done = 0;
    }
    __syncthreads();
    if (*s_flag) __threadfence();
    return *s_flag != 0;
}

// The decide step of batch b (all threads of the block call it): the ended slots go to s_fin (shared,
// W words); returns the mode on every thread (FZ_IDLE, FZ_LOAD, or, once the ended slots' members are
// counted, FZ_EXTRACT, or FZ_ABORT when their sets do not fit the pool), or -1 on a block that is not
// its batch's last to count them. start / count: the batch's live ring. The mode is also published in
// emode[g] (with efin, edense) for fz_extract; *s_dense gets the walk mode (shared) in every mode.
__device__ int fz_decide_batch(const FzBatch& b, gc_i64 total, int threshold, const gc_i64* ind, int start, int count,
                               const unsigned int* occ, const unsigned int* act, int* emode, int* edense,
                               unsigned int* efin, int* gcnt, gc_i64* cursor, int* tnew, int* done,
                               const gc_i64* slot_tr, gc_i64* trav_start, int* trav_size, gc_u64* ctl,
                               gc_u64 pool_cap, const FzEvict& E, unsigned* s_fin, int* s_dense, int* s_nocc) {
    __shared__ int s_cnt[FZ_THREADS];
    __shared__ int s_mode, s_flag;
    __shared__ unsigned s_old[8];
    const int tid = threadIdx.x, g = b.g, W = b.W;
    if (tid < b.B) {  // the old running slots (FzEvict); warp w takes word w
        const int w = tid >> 5;
        const bool old = E.after && ((occ[g * W + w] & act[w]) >> (tid & 31)) & 1u &&
                         E.blev[g] - E.born[(gc_i64)g * b.B + tid] >= E.after;
        const unsigned m = __ballot_sync(FZ_FULL, old);
        if ((tid & 31) == 0) s_old[w] = m;
    }
    __syncthreads();
    if (tid == 0) {
        int nocc = 0, nfin = 0, nold = 0;
        for (int w = 0; w < W; ++w) {
            const unsigned o = occ[g * W + w];
            s_fin[w] = o & ~act[w];
            nocc += __popc(o);
            nfin += __popc(s_fin[w]);
            nold += __popc(s_old[w]);
        }
        const bool more = ((volatile gc_u64*)ctl)[FZ_DISPATCH] < (gc_u64)total;
        const bool skip = (((volatile gc_u64*)ctl)[FZ_FLAGS] & FZ_LIST_OVERFLOW) != 0;  // act is incomplete
        s_mode = skip ? FZ_IDLE
                      : (nocc == 0 ? (more ? FZ_LOAD : FZ_IDLE)
                                   : ((nold || (nfin && (nfin == nocc || nfin >= threshold))) ? FZ_EXTRACT : FZ_IDLE));
        *s_nocc = nocc;
        *s_dense = (gc_i64)count * 2 > b.nW;
    }
    __syncthreads();
    const int mode = s_mode;
    if (mode != FZ_EXTRACT) {
        if (b.x == 0 && tid == 0) emode[g] = mode;
        return mode;
    }
    const int dense = *s_dense;
    const gc_i64 items = dense ? b.nW : count;
    fz_count_share(b, dense, start, items, s_fin, ind, nullptr, s_cnt, nullptr);
    if (b.X > 1 && tid < b.B && s_cnt[tid]) atomicAdd(&gcnt[g * b.B + tid], s_cnt[tid]);
    if (!fz_last_block(&done[2 * g], b.X, &s_flag)) return -1;
    if (tid < 32) {  // warp 0 reserves the ended sets' space in the pool, only if it fits
        // lane l takes the slots l, l + 32, ... (word q of the masks); the sets go to the pool in that order
        const int lane = tid;
        volatile int* vc = b.X > 1 ? gcnt + g * b.B : s_cnt;  // the batch's counts (one block: its own)
        int c[8];
        gc_u64 mine = 0;
        for (int q = 0; q < W; ++q) {
            c[q] = ((s_fin[q] >> lane) & 1u) ? vc[q * 32 + lane] : 0;
            mine += (gc_u64)c[q];
        }
        gc_u64 incl = mine;  // inclusive scan over the lanes
        for (int d = 1; d < 32; d <<= 1) {
            const gc_u64 y = __shfl_up_sync(FZ_FULL, incl, d);
            if (lane >= d) incl += y;
        }
        const gc_u64 need = __shfl_sync(FZ_FULL, incl, 31);
        gc_u64 old = 0;
        int ok = 1;
        if (lane == 0) {  // one atomic, never retried (a CAS loop here livelocked hundreds of blocks)
            old = atomicAdd(&ctl[FZ_POOL], need);
            if (old + need > pool_cap) {  // the counter stays past the pool: every later reservation fails too
                atomicOr(&ctl[FZ_FLAGS], FZ_POOL_OVERFLOW);
                ok = 0;
            }
        }
        old = __shfl_sync(FZ_FULL, old, 0);
        ok = __shfl_sync(FZ_FULL, ok, 0);
        if (ok) {
            gc_i64 at = (gc_i64)(old + incl - mine);
            for (int q = 0; q < W; ++q) {
                if (!((s_fin[q] >> lane) & 1u)) continue;
                const int s = q * 32 + lane;
                const gc_i64 tr = slot_tr[(gc_i64)g * b.B + s];
                cursor[(gc_i64)g * b.B + s] = at;
                trav_start[tr] = at;
                trav_size[tr] = c[q];
                at += c[q];
            }
            if (lane < W) efin[g * W + lane] = s_fin[lane];
            if (lane == 0) {
                edense[g] = dense;
                tnew[g] = 0;
            }
            if (E.after) fz_evict(E, b, s_old, slot_tr, ctl, lane);
        }
        if (lane == 0) {
            s_mode = ok ? FZ_EXTRACT : FZ_ABORT;
            emode[g] = s_mode;
        }
    }
    __syncthreads();
    return s_mode;
}

extern "C" __global__ void fz_decide(gc_i64 n, int W, gc_i64 total, int threshold, const gc_i64* __restrict__ ind,
                                     unsigned int* __restrict__ vis, int* __restrict__ touched,
                                     const int* __restrict__ tbase, const int* __restrict__ tcount,
                                     const unsigned int* __restrict__ occ, const unsigned int* __restrict__ act,
                                     int* __restrict__ emode, int* __restrict__ edense, unsigned int* __restrict__ efin,
                                     int* __restrict__ gcnt, gc_i64* __restrict__ cursor, int* __restrict__ tnew,
                                     int* __restrict__ done, const gc_i64* __restrict__ slot_tr,
                                     gc_i64* __restrict__ trav_start, int* __restrict__ trav_size,
                                     gc_u64* __restrict__ ctl, int idx, gc_u64 pool_cap, FZ_EVICT_PARAMS,
                                     gc_u64* __restrict__ stats) {
    __shared__ unsigned s_fin[8];
    __shared__ int s_dense, s_nocc;
    const FzEvict E{evict_after, born, blev, eev, evicted};
    const FzBatch b = fz_batch(n, W, vis, touched, blockIdx.y, blockIdx.x, gridDim.x);
    if (blockDim.x != FZ_THREADS) return;
    if (threadIdx.x == 0 && b.x == 0 && b.g == 0) {  // level bookkeeping: the list just expanded is consumed
        const gc_u64 consumed = ((volatile gc_u64*)ctl)[idx ^ 1];
        if (consumed) atomicAdd(&stats[FZ_S_LEVELS], 1ULL);
        atomicMax(&stats[FZ_S_PEAK], consumed);
        ctl[idx ^ 1] = 0;
    }
    fz_decide_batch(b, total, threshold, ind, tbase[b.g], tcount[b.g], occ, act + b.g * W, emode, edense, efin, gcnt,
                    cursor, tnew, done, slot_tr, trav_start, trav_size, ctl, pool_cap, E, s_fin, &s_dense, &s_nocc);
}

// Loads the next traversals of the dispatch order into the free slots of batch g (born, unless null: born_now for
// each, FzEvict), then publishes the batch's
// slots (occ) and the live part of its ring (tbase, tcount), and pushes the roots to list (unless null; its count
// is *lcount, and an overflow sets FZ_LIST_OVERFLOW in *lflags); all threads call it. The caller hands over what
// every thread needs in shared memory or as a value, never through global memory another thread of the block has
// just written: s_occ (occupied slots) and *s_tc (live ring entries), set before the call, and rstart (the ring's
// start). (nvcc may reuse a load of a __restrict__ array made before a __syncthreads: a thread that re-read
// tbase[g] here after thread 0 rewrote it got the old start, so reloaded roots went outside the live ring, their
// sets lost them and their bits were never cleared.)
__device__ void fz_load(const FzBatch& b, int lt, gc_u64 seed, gc_i64 rounds, gc_i64 j_begin, gc_i64 total,
                        int use_order, const gc_i64* __restrict__ order, const gc_i64* __restrict__ new_of_old,
                        unsigned int* __restrict__ nxt, int rstart, int* tbase, int* tcount, unsigned int* occ,
                        gc_i64* __restrict__ slot_tr, gc_u64* __restrict__ slot_key, gc_u64* __restrict__ slot_skey,
                        int* __restrict__ slot_off, int* born, int born_now, gc_u64* list, gc_u64 cap,
                        gc_u64* lcount, gc_u64* lflags, gc_u64* __restrict__ ctl, unsigned* s_occ, int* s_tc,
                        int* s_warp, gc_i64* s_base) {
    const int tid = threadIdx.x, lane = tid & 31, g = b.g;
    __syncthreads();  // the caller's s_occ and *s_tc
    const bool is_free = tid < b.B && !((s_occ[tid >> 5] >> (tid & 31)) & 1u);
    const unsigned m = __ballot_sync(FZ_FULL, is_free);
    if (lane == 0) s_warp[tid >> 5] = __popc(m);
    __syncthreads();
    int rank = __popc(m & fz_lanemask_lt(lane)), nfree = 0;
    for (int i = 0; i < FZ_THREADS / 32; ++i) {
        if (i < (tid >> 5)) rank += s_warp[i];
        nfree += s_warp[i];
    }
    if (tid == 0) *s_base = (gc_i64)atomicAdd(&ctl[FZ_DISPATCH], (gc_u64)nfree);  // a run of the order
    __syncthreads();
    const gc_i64 k = *s_base + rank;
    bool push = false, touch = false;
    gc_i64 x = 0, word = 0;
    if (is_free && k < total) {
        const int s = tid, w = s >> 5;
        const gc_i64 i = use_order ? (order[k] & 0xffffffffLL) : k;
        const gc_i64 t = i % rounds;
        const gc_i64 j = j_begin + i / rounds;
        const gc_u64 key = (gc_u64)j * (gc_u64)rounds + (gc_u64)t;
        x = new_of_old[gc_index_below(gc_mix5(seed, GC_STREAM_ROOT, (gc_u64)j, 0ULL, 0ULL), (gc_u64)b.n)];
        slot_tr[(gc_i64)g * b.B + s] = i;
        slot_key[(gc_i64)g * b.B + s] = lt ? key : gc_mix3(seed, GC_STREAM_COIN, key);
        if (!lt) slot_skey[(gc_i64)g * b.B + s] = gc_mix3(seed, GC_STREAM_SKIP, key);
        slot_off[(gc_i64)g * b.B + s] = (int)(t * b.n);
        if (born) born[(gc_i64)g * b.B + s] = born_now;
        atomicOr(&s_occ[w], 1u << (s & 31));
        word = x * b.W + w;
        const unsigned o = atomicOr(&b.vis[word], 1u << (s & 31));
        touch = o == 0u;
        push = fz_pend(&nxt[(gc_i64)g * b.nW + word], 1u << (s & 31), o);
    }
    fz_ring_warp(touch, (int)word, b.ring, b.nW, rstart, s_tc, lane);
    if (list) {
        const bool fits = fz_push_warp(push, ((gc_u64)g << 32) | (gc_u64)x, list, cap, lcount, lane);
        if (!fits && lane == 0) atomicOr(lflags, FZ_LIST_OVERFLOW);
    }
    __syncthreads();
    if (tid < b.W) occ[g * b.W + tid] = s_occ[tid];
    if (tid == 0) {
        tbase[g] = rstart;
        tcount[g] = *s_tc;
    }
}

// The extract step of batch b in mode `mode` (fz_decide_batch's; all threads of the block call it, also
// for mode -1): clears act (block 0), loads an empty batch (FZ_LOAD, block 0), or writes the ended slots'
// members (s_fin, shared) over this block's share of the words (`dense`, or the ring start / count), clears
// their bits and appends the words still non-zero to a fresh part of the ring; the last block of the batch
// then loads the next traversals into the free slots (roots pushed to list unless it is null, as fz_load).
__device__ void fz_extract_batch(const FzBatch& b, int mode, const unsigned* s_fin, const unsigned* s_ev,
                                 const FzEvict& E, int dense, int start, int count,
                                 int lt, gc_u64 seed, gc_i64 rounds, gc_i64 j_begin, gc_i64 total, int use_order,
                                 const gc_i64* order, const gc_i64* ind, const int* old_of_new,
                                 const gc_i64* new_of_old, unsigned int* nxt, int* tbase, int* tcount,
                                 unsigned int* occ, unsigned int* act, int* gcnt, gc_i64* cursor, int* tnew, int* done,
                                 const double* skip, gc_i64* slot_tr, gc_u64* slot_key, gc_u64* slot_skey,
                                 int* slot_off, gc_u64* list, gc_u64 cap, gc_u64* lcount, gc_u64* lflags,
                                 gc_u64* ctl, int* pool, gc_u64* stats) {
    __shared__ unsigned s_occ[8];
    __shared__ int s_cnt[FZ_THREADS];
    __shared__ gc_i64 s_pos[FZ_THREADS];  // the start of each ended slot's run (this block's part of it)
    __shared__ int s_off[FZ_THREADS];     // the members written into it so far (a 32-bit atomic: native)
    __shared__ int s_warp[FZ_THREADS / 32];
    __shared__ int s_flag, s_tc;
    __shared__ gc_i64 s_base;
    __shared__ gc_u64 s_unfused;
    const int tid = threadIdx.x, lane = tid & 31, g = b.g, W = b.W;
    if (b.x == 0 && tid < W) act[tid] = 0u;  // decide has read it; the next level marks anew
    if (E.after && b.x == 0 && tid == 0) E.blev[g] += 1;
    if (mode == FZ_ABORT && b.x == 0 && tid < b.B) gcnt[g * b.B + tid] = 0;  // counts are redone next time
    if (mode == FZ_LOAD && b.x == 0) {
        if (tid < W) s_occ[tid] = occ[g * W + tid];
        if (tid == 0) s_tc = count;
        fz_load(b, lt, seed, rounds, j_begin, total, use_order, order, new_of_old, nxt, start, tbase, tcount, occ,
                slot_tr, slot_key, slot_skey, slot_off, E.after ? E.born : nullptr,
                E.after ? ((volatile int*)E.blev)[g] : 0, list, cap, lcount, lflags, ctl, s_occ, &s_tc, s_warp,
                &s_base);
    }
    if (mode != FZ_EXTRACT) return;
    // A batch of one block walks its words once: each ended slot's run is the whole of what decide reserved,
    // the unfused reads are counted during the walk, and the new ring part is counted in shared memory.
    const bool one = b.X == 1;
    if (tid == 0) {
        s_unfused = 0;
        s_tc = 0;
    }
    __syncthreads();
    const int fresh_start = dense ? 0 : (int)(((gc_i64)start + count) % b.nW);
    const gc_i64 items = dense ? b.nW : count;
    if (tid < b.B) s_off[tid] = 0;
    if (one) {
        if (tid < b.B && ((s_fin[tid >> 5] >> (tid & 31)) & 1u)) s_pos[tid] = cursor[(gc_i64)g * b.B + tid];
    } else {
        fz_count_share(b, dense, start, items, s_fin, ind, lt ? nullptr : skip, s_cnt, &s_unfused);
        if (tid < b.B && s_cnt[tid])  // this block's run of each ended slot
            s_pos[tid] = (gc_i64)atomicAdd((unsigned long long*)&cursor[(gc_i64)g * b.B + tid],
                                           (unsigned long long)s_cnt[tid]);
        if (tid == 0 && s_unfused) atomicAdd(&stats[FZ_S_UNFUSED], s_unfused);
    }
    __syncthreads();
    gc_u64 reads = 0;  // one block: the in-arcs an unfused sampler reads for the members this thread writes
    for (gc_i64 base = (gc_i64)b.x * FZ_THREADS; base < items; base += (gc_i64)b.X * FZ_THREADS) {  // warp-uniform
        const gc_i64 i = base + tid;
        int word = 0;
        bool keep = false;
        if (i < items) {
            word = fz_item_word(b, dense, start, i);
            const int w = word % W;
            unsigned v = b.vis[word];
            unsigned m = v & s_fin[w];
            const unsigned e = v & s_ev[w];  // evicted slots: their bits go, unwritten (nxt too)
            if (e) {
                nxt[(gc_i64)g * b.nW + word] &= ~e;
                v &= ~e;
                b.vis[word] = v;
            }
            if (m) {
                const gc_i64 x = word / W;
                const int u = old_of_new[x];
                if (one && (lt || skip[x] >= 0.0)) reads += (gc_u64)__popc(m) * (gc_u64)(ind[x + 1] - ind[x]);
                while (m) {
                    const int bit = __ffs(m) - 1;
                    m &= m - 1u;
                    const int s = w * 32 + bit;
                    const gc_i64 at = s_pos[s] + atomicAdd(&s_off[s], 1);
                    pool[at] = u + slot_off[(gc_i64)g * b.B + s];
                }
                v &= ~s_fin[w];
                b.vis[word] = v;
            }
            keep = v != 0u;
        }
        fz_ring_warp(keep, word, b.ring, b.nW, fresh_start, one ? &s_tc : tnew + g, lane);
    }
    reads = fz_warp_sum(reads);  // the walk's loop is warp-uniform: every lane is here
    if (lane == 0 && reads) atomicAdd(&s_unfused, reads);
    if (!fz_last_block(&done[2 * g + 1], b.X, &s_flag)) return;
    if (tid == 0) {  // the batch's new ring part (fz_load publishes it), the counters
        if (one && s_unfused) atomicAdd(&stats[FZ_S_UNFUSED], s_unfused);
        if (!one) s_tc = ((volatile int*)tnew)[g];
        int nfin = 0;
        for (int w = 0; w < W; ++w) nfin += __popc(s_fin[w]);
        atomicAdd(&stats[FZ_S_EXTRACT], 1ULL);
        atomicAdd(&stats[FZ_S_TRAV], (gc_u64)nfin);
        atomicAdd(&ctl[FZ_WRITTEN], (gc_u64)nfin);
        int nev = 0;
        for (int w = 0; w < W; ++w) nev += __popc(s_ev[w]);
        if (nev) atomicAdd(&stats[FZ_S_EVICT], (gc_u64)nev);
    }
    if (tid < W) s_occ[tid] = occ[g * W + tid] & ~(s_fin[tid] | s_ev[tid]);  // the ended and evicted slots are free
    if (!one && tid < b.B) gcnt[g * b.B + tid] = 0;            // the counts for next time
    fz_load(b, lt, seed, rounds, j_begin, total, use_order, order, new_of_old, nxt, fresh_start, tbase, tcount, occ,
            slot_tr, slot_key, slot_skey, slot_off, E.after ? E.born : nullptr,
            E.after ? ((volatile int*)E.blev)[g] : 0, list, cap, lcount, lflags, ctl, s_occ, &s_tc, s_warp, &s_base);
}

extern "C" __global__ void fz_extract(int lt, gc_i64 n, int W, gc_u64 seed, gc_i64 rounds, gc_i64 j_begin,
                                      gc_i64 total, int use_order, const gc_i64* __restrict__ order,
                                      const gc_i64* __restrict__ ind, const int* __restrict__ old_of_new,
                                      const gc_i64* __restrict__ new_of_old, unsigned int* __restrict__ vis,
                                      unsigned int* __restrict__ nxt, int* __restrict__ touched,
                                      int* __restrict__ tbase, int* __restrict__ tcount,
                                      unsigned int* __restrict__ occ, unsigned int* __restrict__ act,
                                      const int* __restrict__ emode, const int* __restrict__ edense,
                                      const unsigned int* __restrict__ efin, int* __restrict__ gcnt,
                                      gc_i64* __restrict__ cursor, int* __restrict__ tnew, int* __restrict__ done,
                                      const double* __restrict__ skip, gc_i64* __restrict__ slot_tr,
                                      gc_u64* __restrict__ slot_key, gc_u64* __restrict__ slot_skey,
                                      int* __restrict__ slot_off, gc_u64* __restrict__ list, gc_u64 cap,
                                      gc_u64* __restrict__ ctl, int idx, int* __restrict__ pool, FZ_EVICT_PARAMS,
                                      gc_u64* __restrict__ stats) {
    __shared__ unsigned s_fin[8], s_ev[8];
    const FzBatch b = fz_batch(n, W, vis, touched, blockIdx.y, blockIdx.x, gridDim.x);
    if (blockDim.x != FZ_THREADS) return;
    const FzEvict E{evict_after, born, blev, eev, evicted};
    const int g = b.g, mode = emode[g];
    if (threadIdx.x < W) {
        s_fin[threadIdx.x] = efin[g * W + threadIdx.x];
        s_ev[threadIdx.x] = evict_after && mode == FZ_EXTRACT ? eev[g * W + threadIdx.x] : 0u;
    }
    fz_extract_batch(b, mode, s_fin, s_ev, E, edense[g], tbase[g], tcount[g], lt, seed, rounds, j_begin, total,
                     use_order, order, ind, old_of_new, new_of_old, nxt, tbase, tcount, occ, act + g * W, gcnt, cursor,
                     tnew, done, skip, slot_tr, slot_key, slot_skey, slot_off, list, cap, &ctl[idx], &ctl[FZ_FLAGS],
                     ctl, pool, stats);
}

// ---- the resident mapping (fz_resident_ic / fz_resident_lt): grid (batches), FZ_THREADS threads ---------
//
// Block g owns batch g for the whole piece and runs its levels itself, with __syncthreads between the
// steps of a level instead of launches: expand, decide, extract (X = 1), until its batch is empty and the
// dispatch order is exhausted. A level expands the entries of a frontier list kept in shared memory (two
// of FZ_RESIDENT_LIST entries, this level's and the next's): the level's discoveries and the roots loaded
// after it go to the next list, by the same rule as the level mapping's global list (an entry for every
// nxt word that turns non-zero). When a list overflows, or its entries are lost (a relaunch), the level
// finds its pending words in the ring instead: the block lists, a chunk of FZ_THREADS ring entries at a
// time, the words whose nxt is not zero (every pending bit lies in a word of the ring, since nxt is a
// subset of vis), and builds the next list as it expands them. IC expands four entries per warp
// (fz_expand_groups), LT one. The batch's act words are in shared memory (each level marks them anew), and
// so is the ring's live count during a level (written back after it). The batch's other state is in global
// memory, so
// a block that finds the pool full (FZ_ABORT) returns and a relaunch with first = 0 resumes it with a
// level found in the ring (the host grows the pool in between); first = 1 starts with a load. Arrays
// written and read inside the launch are passed without __restrict__ (no read-only-cache loads of them).
// Levels: stats[FZ_S_LEVELS] gets the most levels one batch ran in one launch, stats[FZ_S_RING] the levels
// found in the ring; FZ_S_PEAK is the level mapping's (its global list), so it is left alone.
#ifndef FZ_RESIDENT_LIST  // entries of each shared frontier list (a test compiles a tiny one)
#define FZ_RESIDENT_LIST 1024
#endif
// Blocks of the resident kernels that one SM must hold at once (their registers are capped to fit): the
// narrow batches' default count of batches in flight (INFLIGHT_PER_SM in gpucore/im/fused/cuda.py) needs 4.
#define FZ_RESIDENT_BLOCKS 4
template <bool LT>
__device__ void fz_resident(int first, gc_i64 n, int W, gc_u64 seed, gc_i64 rounds, gc_i64 j_begin, gc_i64 total,
                            int threshold, int use_order, const gc_i64* order, const gc_i64* ind, const int* src,
                            const int* eid, const float* warc, const gc_i64* qcum, const double* skip,
                            const int* old_of_new, const gc_i64* new_of_old, unsigned int* vis, unsigned int* nxt,
                            int* touched, int* tbase, int* tcount, unsigned int* occ, unsigned int* act, int* emode,
                            int* edense, unsigned int* efin, int* gcnt, gc_i64* cursor, int* tnew, int* done,
                            gc_i64* slot_tr, gc_u64* slot_key, gc_u64* slot_skey, int* slot_off,
                            gc_i64* trav_start, int* trav_size, gc_u64* ctl, gc_u64 pool_cap, int* pool,
                            gc_u64* stats) {
    __shared__ unsigned s_fin[8], s_ev[8];  // s_ev: no eviction here (all zero)
    __shared__ int s_dense, s_nocc;
    __shared__ gc_u64 s_acc[4];  // entries, mask bits, edge reads, skip jumps
    __shared__ int s_pend[FZ_THREADS], s_np;
    __shared__ gc_u64 s_list[2][FZ_RESIDENT_LIST];
    __shared__ gc_u64 s_lc[2], s_lf[2];  // the lists' counts and FZ_LIST_OVERFLOW flags
    __shared__ unsigned s_act[8];        // act of the batch (a level marks it, decide reads it, extract clears it)
    __shared__ int s_rc;                 // the ring's live count while a level appends to it
    __shared__ int s_dq_n;               // the whole-warp entries of a level (fz_expand_block)
    __shared__ gc_i64 s_dq_x[FZ_DEFER];
    __shared__ unsigned s_dq_w[8 * FZ_DEFER];
    const FzBatch b = fz_batch(n, W, vis, touched, blockIdx.x, 0, 1);
    if (blockDim.x != FZ_THREADS) return;
    const int tid = threadIdx.x, lane = tid & 31, g = b.g;
    if (tid < 4) s_acc[tid] = 0;
    if (tid < 8) s_act[tid] = s_ev[tid] = 0u;
    if (tid == 0) s_dq_n = 0;
    const FzEvict E{0, nullptr, nullptr, nullptr, nullptr};
    const FzDefer dq{&s_dq_n, s_dq_x, s_dq_w};
    int cur = 0;  // the list the next level expands; that level and the loads after it fill list cur ^ 1
    if (tid == 0) {
        s_lc[0] = s_lc[1] = 0;
        s_lf[0] = FZ_LIST_OVERFLOW;  // a relaunch's first level: the entries are in the ring only
        s_lf[1] = 0;
    }
    gc_u64 entries = 0, bits_total = 0, reads = 0;  // lane 0 of each warp
    gc_u64 levels = 0, ring_levels = 0;
    volatile int* vbase = tbase;
    volatile int* vcount = tcount;
    const volatile unsigned int* vnxt = nxt + (gc_i64)g * b.nW;
    for (bool expand = !first;; expand = true) {
        __syncthreads();  // the last step's writes (ring, occ, slots, lists) before they are read
        gc_u64* nlist = s_list[cur ^ 1];
        gc_u64* ncount = &s_lc[cur ^ 1];
        if (expand) {
            const int start = vbase[g], count = vcount[g];
            const bool in_ring = s_lf[cur] != 0;
            const int listed = (int)s_lc[cur];
            bool fits = true;
            if (tid == 0) s_rc = count;
            __syncthreads();  // every thread holds the level's ring before an append moves its count
            gc_u64* s_jumps = &s_acc[3];
            int* rcount = &s_rc;
            unsigned int* act = s_act;
            const gc_u64 cap = FZ_RESIDENT_LIST;
            const int rstart = start;
            if (!in_ring) {
                const gc_u64* listing = s_list[cur];
                fz_expand_block<LT>(g, listed, [&](int e) { return (gc_i64)(listing[e] & 0xffffffffULL); }, dq,
                                    FZ_ENTRY_ARGS);
            } else {
                ring_levels += 1;
                for (int base = 0; base < count; base += FZ_THREADS) {  // a chunk of the ring: uniform
                    if (tid == 0) s_np = 0;
                    __syncthreads();
                    const int i = base + tid;
                    if (i < count) {  // the chunk's pending words, listed in shared memory
                        const int word = b.ring[((gc_i64)start + i) % b.nW];
                        if (vnxt[word] != 0u) s_pend[atomicAdd(&s_np, 1)] = word;
                    }
                    __syncthreads();
                    fz_expand_block<LT>(g, s_np, [&](int e) { return (gc_i64)(s_pend[e] / W); }, dq, FZ_ENTRY_ARGS);
                    __syncthreads();  // s_pend and s_np are reused
                }
            }
            if (!fits) s_lf[cur ^ 1] = FZ_LIST_OVERFLOW;
            levels += 1;
            __syncthreads();  // the level's discoveries (vis, nxt, act, ring, list) before decide
            if (tid == 0) tcount[g] = s_rc;  // for a relaunch (fz_load rewrites it in this launch)
        }
        const int start = vbase[g], count = expand ? s_rc : vcount[g];
        const int mode = fz_decide_batch(b, total, threshold, ind, start, count, occ, s_act, emode, edense, efin, gcnt,
                                         cursor, tnew, done, slot_tr, trav_start, trav_size, ctl, pool_cap, E, s_fin,
                                         &s_dense, &s_nocc);
        fz_extract_batch(b, mode, s_fin, s_ev, E, s_dense, start, count, LT ? 1 : 0, seed, rounds, j_begin, total,
                         use_order, order, ind, old_of_new, new_of_old, nxt, tbase, tcount, occ, s_act, gcnt, cursor,
                         tnew, done, skip, slot_tr, slot_key, slot_skey, slot_off, nlist, FZ_RESIDENT_LIST, ncount,
                         &s_lf[cur ^ 1], ctl, pool, stats);
        if (mode == FZ_ABORT || (mode == FZ_IDLE && s_nocc == 0)) break;  // uniform: shared or returned values
        cur ^= 1;  // list cur ^ 1 (the one just expanded) is refilled after the next __syncthreads
        if (tid == 0) {
            s_lc[cur ^ 1] = 0;
            s_lf[cur ^ 1] = 0;
        }
    }
    if (entries) {
        atomicAdd(&s_acc[0], entries);
        atomicAdd(&s_acc[1], bits_total);
        atomicAdd(&s_acc[2], reads);
    }
    __syncthreads();
    if (tid < 3 && s_acc[tid]) atomicAdd(&stats[FZ_S_ENTRIES + tid], s_acc[tid]);
    if (tid == 3 && s_acc[3]) atomicAdd(&stats[FZ_S_JUMPS], s_acc[3]);
    if (tid == 0 && levels) atomicMax(&stats[FZ_S_LEVELS], levels);
    if (tid == 0 && ring_levels) atomicAdd(&stats[FZ_S_RING], ring_levels);
}

#define FZ_RESIDENT_PARAMS                                                                                      \
    int first, gc_i64 n, int W, gc_u64 seed, gc_i64 rounds, gc_i64 j_begin, gc_i64 total, int threshold,        \
        int use_order, const gc_i64 *order, const gc_i64 *ind, const int *src, const int *eid, const float *warc, \
        const gc_i64 *qcum, const double *skip, const int *old_of_new, const gc_i64 *new_of_old,                \
        unsigned int *vis, unsigned int *nxt, int *touched, int *tbase, int *tcount, unsigned int *occ,          \
        unsigned int *act, int *emode, int *edense, unsigned int *efin, int *gcnt, gc_i64 *cursor, int *tnew,    \
        int *done, gc_i64 *slot_tr, gc_u64 *slot_key, gc_u64 *slot_skey, int *slot_off, gc_i64 *trav_start,     \
        int *trav_size, gc_u64 *ctl, gc_u64 pool_cap, int *pool, gc_u64 *stats
#define FZ_RESIDENT_ARGS                                                                                         \
    first, n, W, seed, rounds, j_begin, total, threshold, use_order, order, ind, src, eid, warc, qcum, skip,      \
        old_of_new, new_of_old, vis, nxt, touched, tbase, tcount, occ, act, emode, edense, efin, gcnt, cursor,   \
        tnew, done, slot_tr, slot_key, slot_skey, slot_off, trav_start, trav_size, ctl, pool_cap, pool, stats

extern "C" __global__ void __launch_bounds__(FZ_THREADS, FZ_RESIDENT_BLOCKS) fz_resident_ic(FZ_RESIDENT_PARAMS) {
    fz_resident<false>(FZ_RESIDENT_ARGS);
}
extern "C" __global__ void __launch_bounds__(FZ_THREADS, FZ_RESIDENT_BLOCKS) fz_resident_lt(FZ_RESIDENT_PARAMS) {
    fz_resident<true>(FZ_RESIDENT_ARGS);
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

// ---- the team pass (fz_team_ic): one traversal at a time per block, for traversals evicted from batches ----
//
// A traversal that a batch evicted (FzEvict: it was still running `after` levels after its load, in a piece
// whose traversals are expected to be a small share of the graph) is run again from its root by a whole block,
// with the keys it had in the batch, so its set is the same. Persistent blocks take list
// indices from ctl[FZ_TEAM_NEXT]. A block owns a bitmap of the traversal layout's vertices (`words` words,
// all zero between traversals) and a stage of n entries that is both its frontier and its set: the
// members in order of discovery, a level being the range [lo, hi) the previous level appended. Each
// thread takes one frontier vertex: a row of at most FZ_TEAM_ROW arcs, not skipping, is tried by that
// thread alone, one keyed coin per arc, bernoulli(step(mix(seed, COIN, s), eid), p); longer and skipping
// rows are queued in shared memory and taken by whole warps, 32 arcs (or, at a skipping node, 32
// geometric jumps keyed by mix(seed, SKIP, s, old id, i), a warp prefix sum giving their positions) a
// step. A discovery is the atomicOr that sets the vertex's bit, so no vertex is staged twice. A finished
// traversal reserves its size in the pool with one atomicAdd on ctl[FZ_POOL] (past the pool: the flag
// FZ_POOL_OVERFLOW, the traversal left unwritten, and every block stops taking traversals) and writes its
// members (old id + t n), start and size; its bits are cleared by a walk of the stage.
#ifndef FZ_TEAM_THREADS
#define FZ_TEAM_THREADS 256
#endif
#ifndef FZ_TEAM_ROW
#define FZ_TEAM_ROW 32
#endif

// Sets vertex y's bit in the block's bitmap; true when it was not set (y is new to the traversal).
__device__ __forceinline__ bool fz_team_visit(int y, unsigned int* bm) {
    const unsigned bit = 1u << (y & 31);
    return !(atomicOr(&bm[y >> 5], bit) & bit);
}

// The warps' part of a level: vertex x's whole row, expanded by the calling warp (all lanes call it with the
// same x); reads (rows read) and jumps_drawn are counted on lane 0.
__device__ __forceinline__ void fz_team_row(gc_i64 x, const gc_i64* __restrict__ ind, const int* __restrict__ src,
                                            const int* __restrict__ eid, const float* __restrict__ warc,
                                            const double* __restrict__ skip, const int* __restrict__ old_of_new,
                                            gc_u64 ckey, gc_u64 skey, unsigned int* bm, int* stage, int* s_size,
                                            gc_u64& reads, gc_u64& jumps_drawn) {
    const int lane = threadIdx.x & 31;
    const gc_i64 beg = ind[x], d = ind[x + 1] - beg;
    const double rlq = skip[x];
    const bool skipping = rlq < 0.0;  // warp-uniform
    const gc_u64 hv = gc_step(skey, (gc_u64)(unsigned)old_of_new[x]);
    if (!skipping && lane == 0) reads += (gc_u64)d;
    int jumps = 0;
    for (gc_i64 next = 0; next < d;) {
        const gc_i64 at = gc_row_next(skipping, hv, rlq, d, next, jumps, fz_jump);  // >= d: none
        bool fresh = false;
        int y = 0;
        if (at < d) {
            const gc_i64 a = beg + at;
            y = src[a];
            if (skipping || gc_bernoulli(gc_step(ckey, (gc_u64)(unsigned)eid[a]), warc[a]))
                fresh = fz_team_visit(y, bm);
        }
        const unsigned m = __ballot_sync(FZ_FULL, fresh);
        if (m) {
            int base = 0;
            if (lane == __ffs(m) - 1) base = atomicAdd(s_size, __popc(m));
            base = __shfl_sync(FZ_FULL, base, __ffs(m) - 1);
            if (fresh) stage[base + __popc(m & fz_lanemask_lt(lane))] = y;
        }
    }
    if (lane == 0) jumps_drawn += (gc_u64)jumps;  // every lane drew 32 a step
}

extern "C" __global__ void __launch_bounds__(FZ_TEAM_THREADS)
    fz_team_ic(const gc_i64* __restrict__ ind, const int* __restrict__ src, const int* __restrict__ eid,
               const float* __restrict__ warc, const double* __restrict__ skip, const int* __restrict__ old_of_new,
               const gc_i64* __restrict__ new_of_old, gc_i64 n, gc_u64 seed, gc_i64 rounds, gc_i64 j_begin,
               const gc_i64* __restrict__ list, gc_i64 count, unsigned int* bitmaps, gc_i64 words, int* stages,
               int* pool, gc_u64 pool_cap, gc_i64* __restrict__ trav_start, int* __restrict__ trav_size, gc_u64* ctl,
               gc_u64* __restrict__ stats) {
    __shared__ gc_i64 s_k;
    __shared__ int s_size, s_nq, s_stop;
    __shared__ gc_u64 s_at;
    __shared__ int s_q[FZ_TEAM_THREADS];
    if (blockDim.x != FZ_TEAM_THREADS) return;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    unsigned int* bm = bitmaps + (gc_i64)blockIdx.x * words;
    int* stage = stages + (gc_i64)blockIdx.x * n;
    gc_u64 reads = 0, jumps = 0, done = 0;
    while (true) {
        if (tid == 0) {
            s_k = (gc_i64)atomicAdd(&ctl[FZ_TEAM_NEXT], 1ULL);
            s_stop = (((volatile gc_u64*)ctl)[FZ_FLAGS] & FZ_POOL_OVERFLOW) != 0;
        }
        __syncthreads();
        const gc_i64 k = s_k;
        if (k >= count || s_stop) break;  // uniform
        const gc_i64 i = list[k], t = i % rounds, j = j_begin + i / rounds;
        const gc_u64 key = (gc_u64)j * (gc_u64)rounds + (gc_u64)t;
        const gc_u64 ckey = gc_mix3(seed, GC_STREAM_COIN, key), skey = gc_mix3(seed, GC_STREAM_SKIP, key);
        if (tid == 0) {
            const int root = (int)new_of_old[gc_index_below(gc_mix5(seed, GC_STREAM_ROOT, (gc_u64)j, 0ULL, 0ULL),
                                                             (gc_u64)n)];
            bm[root >> 5] = 1u << (root & 31);  // the bitmap is clean
            stage[0] = root;
            s_size = 1;
        }
        __syncthreads();
        int lo = 0, hi = 1;
        while (lo < hi) {  // a level: the stage's [lo, hi)
            for (int base = lo; base < hi; base += FZ_TEAM_THREADS) {
                if (tid == 0) s_nq = 0;
                __syncthreads();
                const int at = base + tid;
                if (at < hi) {
                    const int x = stage[at];
                    const gc_i64 beg = ind[x], end = ind[x + 1];
                    if (skip[x] < 0.0 || end - beg > FZ_TEAM_ROW) {
                        s_q[atomicAdd(&s_nq, 1)] = x;
                    } else {
                        reads += (gc_u64)(end - beg);
                        for (gc_i64 a = beg; a < end; ++a) {
                            const int y = src[a];
                            if (gc_bernoulli(gc_step(ckey, (gc_u64)(unsigned)eid[a]), warc[a]) && fz_team_visit(y, bm))
                                stage[atomicAdd(&s_size, 1)] = y;
                        }
                    }
                }
                __syncthreads();
                for (int q = warp; q < s_nq; q += FZ_TEAM_THREADS / 32)
                    fz_team_row(s_q[q], ind, src, eid, warc, skip, old_of_new, ckey, skey, bm, stage, &s_size,
                                reads, jumps);
                __syncthreads();  // every warp is past its loop over s_nq before it is reset
            }
            lo = hi;
            hi = s_size;
            __syncthreads();  // every thread has read s_size before the next level appends to it
        }
        const int size = hi;
        if (tid == 0) {
            s_at = atomicAdd(&ctl[FZ_POOL], (gc_u64)size);
            if (s_at + (gc_u64)size > pool_cap) atomicOr(&ctl[FZ_FLAGS], FZ_POOL_OVERFLOW);
        }
        __syncthreads();
        const gc_u64 start = s_at;
        const bool ok = start + (gc_u64)size <= pool_cap;
        const int off = (int)(t * n);
        for (int x = tid; x < size; x += FZ_TEAM_THREADS) {
            const int v = stage[x];
            if (ok) pool[start + x] = old_of_new[v] + off;
            bm[v >> 5] = 0u;
        }
        if (tid == 0 && ok) {
            trav_start[i] = (gc_i64)start;
            trav_size[i] = size;
            done += 1;
        }
        __syncthreads();  // the bitmap is clean and s_k is read before the next traversal
    }
    reads = fz_warp_sum(reads);
    if (lane == 0 && reads) {
        atomicAdd(&stats[FZ_S_READS], reads);
        atomicAdd(&stats[FZ_S_UNFUSED], reads);
    }
    if (lane == 0 && jumps) atomicAdd(&stats[FZ_S_JUMPS], jumps);
    if (tid == 0 && done) {
        atomicAdd(&ctl[FZ_WRITTEN], done);
        atomicAdd(&stats[FZ_S_TRAV], done);
    }
}

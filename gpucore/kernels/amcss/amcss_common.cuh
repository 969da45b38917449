// amcss_common.cuh: MERIT's block-cooperative construction of one mRR-set on the segment layout.
//
// The layout, the keys and the CPU reference are in gpucore/amcss/__init__.py, layout.py and
// kernels_cpu.py; am_build_set below is the CUDA twin of kernels_cpu.build_set: for the same keys it
// writes the same set (as a set; roots first, then members, in any order) and returns the same status.
//
// One thread block (32 * w threads, w <= 16 warps) builds one set at a time in its segment:
//   - visited marks: two bit planes per node in the block's own bitmap, word pairs (V, R) per 32
//     nodes: V = member, R = root; (R without V) = excluded, only inside the complement root draw.
//     After a set every word it touched is zeroed again (only the set's members are visited);
//   - root draws (warp 0): 32 keyed draws at a time, duplicates among the 32 resolved by shuffles,
//     the first ones that are not roots yet are taken in draw order (the sequential rule exactly);
//   - Probe: level-synchronous reverse BFS; the set's own entries are the queue; warps take 32
//     frontier nodes at a time (shared counter); IC: the warp walks the concatenated in-arcs of its
//     32 nodes (coin first, then active / visited), LT: each lane draws its node's choice;
//     appends are ballot-compacted per warp and reserved with one shared atomicAdd per warp;
//   - every write is checked against the guard (the oldest data still needed + l): a reservation
//     that would pass it is refused, the set is abandoned (coverage undone, marks cleared) and the
//     caller stops the segment with a resumable state (status NEED_SPACE), as on the CPU;
//   - coverage cnt[v] is incremented with atomics as members are appended.
#ifndef AMCSS_COMMON_CUH
#define AMCSS_COMMON_CUH

#include "gc_loops.cuh"
#include "gc_random.cuh"

#define AM_MAX_THREADS 512
#define AM_MAX_WARPS (AM_MAX_THREADS / 32)

#define AM_MODE_FRESH 0
#define AM_MODE_CLEAN 1
#define AM_MODE_POLLUTED 2

#define AM_ST_DONE 0
#define AM_ST_NEED_SPACE 1
#define AM_ST_PENDING 2

// errors[] slots (the host raises on any nonzero entry)
#define AM_ERR_LT 0      // an LT reverse choice exceeded AM_LT_MAX_ATTEMPTS (inconsistent active set)
#define AM_ERR_BLOCK 1   // block size not a multiple of 32 or above AM_MAX_THREADS
#define AM_ERR_LAYOUT 2  // a segment invariant did not hold (write position more than l after the source)
#define AM_NERR 4

#define AM_LT_MAX_ATTEMPTS (1ULL << 24)

struct am_graph {
    const gc_i64* in_indptr;
    const int* in_src;
    const int* in_eid;
    const float* in_w;
    const gc_i64* lt_cum;
    const unsigned char* active;
    const int* residual;
    gc_i64 n_res;
    int is_lt;
    int* errors;
    unsigned long long* probes;  // arcs probed (IC: coins drawn; LT: choices drawn), for throughput figures
};

// The graph view of one launch (the kernels' graph arguments gathered).
__device__ __forceinline__ am_graph am_make_graph(const gc_i64* in_indptr, const int* in_src, const int* in_eid,
                                                  const float* in_w, const gc_i64* lt_cum,
                                                  const unsigned char* active, const int* residual, gc_i64 n_res,
                                                  int is_lt, int* errors, unsigned long long* probes) {
    am_graph g;
    g.in_indptr = in_indptr;
    g.in_src = in_src;
    g.in_eid = in_eid;
    g.in_w = in_w;
    g.lt_cum = lt_cum;
    g.active = active;
    g.residual = residual;
    g.n_res = n_res;
    g.is_lt = is_lt;
    g.errors = errors;
    g.probes = probes;
    return g;
}

struct am_shared {
    unsigned long long pos;   // next free logical position of the set being built
    unsigned long long fail;  // smallest refused reservation: the committed end after an overflow
    unsigned long long head;  // next frontier index of the level (relative to the level start)
    unsigned long long arcs;  // arcs probed for the set being built
    gc_i64 lvl_end;
    int overflow;
    int lvl_overflow;
    int promoted;  // members the root draw turned into roots (they stay where they are)
    int scan[AM_MAX_WARPS];
    int scan_ex[AM_MAX_WARPS];
    int scan_total;
    // results of am_build_set
    int st;
    gc_i64 end, ms, me, mn;
    // root partition scratch: positions relative to the region start (a set is shorter than 2^31)
    int pa[AM_MAX_THREADS];
    int pb[AM_MAX_THREADS];
};

__device__ __forceinline__ unsigned am_bit(int u) { return 1u << (u & 31); }
__device__ __forceinline__ unsigned* am_vw(unsigned* bm, int u) { return bm + 2 * (gc_i64)(u >> 5); }
__device__ __forceinline__ unsigned* am_rw(unsigned* bm, int u) { return bm + 2 * (gc_i64)(u >> 5) + 1; }
__device__ __forceinline__ unsigned am_ld(const unsigned* p) { return *((const volatile unsigned*)p); }
// q in [0, 2l) -> q mod l
__device__ __forceinline__ gc_i64 am_wrap(gc_i64 q, gc_i64 l) { return q >= l ? q - l : q; }

// floor(k + u_j), u_j = uniform(mix(seed, ROOT_COUNT, j)), clamped to [1, n_res] (kernels_cpu.root_count)
__device__ __forceinline__ gc_i64 am_root_count(gc_u64 seed, gc_i64 j, double k, gc_i64 n_res) {
    const double u = gc_uniform(gc_mix3(seed, GC_STREAM_ROOT_COUNT, (gc_u64)j));
    gc_i64 c = (gc_i64)floor(k + u);
    if (c > n_res) c = n_res;
    if (c < 1) c = 1;
    return c;
}

// Exclusive block-wide prefix count of `pred` (every thread of the block calls it); *total = count.
__device__ int am_block_scan(bool pred, int* total, am_shared* sh) {
    const int lane = gc_lane(), warp = gc_warp(), nw = gc_warps_per_block();
    const unsigned m = __ballot_sync(GC_FULL_MASK, pred);
    const int r = __popc(m & gc_lanes_below());
    if (lane == 0) sh->scan[warp] = __popc(m);
    __syncthreads();
    if (warp == 0) {
        const int v = lane < nw ? sh->scan[lane] : 0;
        const int incl = gc_warp_inclusive_sum(v);
        if (lane < nw) sh->scan_ex[lane] = incl - v;
        if (lane == 31) sh->scan_total = incl;
    }
    __syncthreads();
    const int res = sh->scan_ex[warp] + r;
    *total = sh->scan_total;
    __syncthreads();
    return res;
}

// Warp-uniform: has any warp of the block hit the guard?
__device__ __forceinline__ bool am_stopped(am_shared* sh) {
    int f = 0;
    if (gc_lane() == 0) f = *((volatile int*)&sh->overflow);
    return __shfl_sync(GC_FULL_MASK, f, 0) != 0;
}

// Warp-level append: every lane with `want` holds a node u it has claimed (its V bit set by this
// lane). One reservation per warp; if it would pass the guard nothing is written, the claims are
// released, overflow is raised and false is returned to the whole warp.
__device__ __forceinline__ bool am_append(bool want, int u, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys,
                                          gc_i64 guard, unsigned* bm, int* cnt, bool set_root, am_shared* sh) {
    const int lane = gc_lane();
    const unsigned m = __ballot_sync(GC_FULL_MASK, want);
    if (m == 0u) return true;
    const int c = __popc(m);
    unsigned long long base = 0ULL;
    if (lane == 0) base = atomicAdd(&sh->pos, (unsigned long long)c);
    base = __shfl_sync(GC_FULL_MASK, base, 0);
    if ((gc_i64)base + c > guard) {
        if (lane == 0) {
            atomicMin(&sh->fail, base);
            *((volatile int*)&sh->overflow) = 1;
        }
        if (want) atomicAnd(am_vw(bm, u), ~am_bit(u));
        __syncwarp();
        return false;
    }
    if (want) {
        const gc_i64 p = (gc_i64)base + __popc(m & gc_lanes_below());
        seg[am_wrap(bw_phys + (p - bw), l)] = u;
        if (set_root) atomicOr(am_rw(bm, u), am_bit(u));
        atomicAdd(&cnt[u], 1);
    }
    __syncwarp();
    return true;
}

// One BFS level [lb, le) under IC: a warp takes 32 frontier nodes and walks their in-arcs together
// (lane x of a 32-arc step handles arc x of the concatenation; owner found by a shuffle search).
__device__ void am_level_ic(gc_i64 lb, gc_i64 le, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys, gc_i64 guard,
                            gc_u64 prefix, const am_graph& g, unsigned* bm, int* cnt, am_shared* sh) {
    const int lane = gc_lane();
    const gc_i64 nf = le - lb;
    while (true) {
        unsigned long long idx = 0ULL;
        if (lane == 0) idx = atomicAdd(&sh->head, 32ULL);
        idx = __shfl_sync(GC_FULL_MASK, idx, 0);
        if ((gc_i64)idx >= nf || am_stopped(sh)) break;
        const gc_i64 x = (gc_i64)idx + lane;
        gc_i64 beg = 0;
        int deg = 0;
        if (x < nf) {
            const int v = seg[am_wrap(bw_phys + (lb + x - bw), l)];
            beg = g.in_indptr[v];
            deg = (int)(g.in_indptr[v + 1] - beg);
        }
        const int incl = gc_warp_inclusive_sum(deg);
        const int total = __shfl_sync(GC_FULL_MASK, incl, 31);
        const int excl = incl - deg;
        if (lane == 0) atomicAdd(&sh->arcs, (unsigned long long)total);
        bool ok = true;
        for (int base = 0; base < total; base += 32) {
            const int xa = base + lane;
            int lo = 0, hi = 31;  // smallest lane whose inclusive sum exceeds xa
            for (int it = 0; it < 5; ++it) {
                const int mid = (lo + hi) >> 1;
                const int im = __shfl_sync(GC_FULL_MASK, incl, mid);
                if (im > xa) hi = mid; else lo = mid + 1;
            }
            const gc_i64 obeg = __shfl_sync(GC_FULL_MASK, beg, lo & 31);
            const int oex = __shfl_sync(GC_FULL_MASK, excl, lo & 31);
            bool want = false;
            int u = 0;
            if (xa < total) {
                const gc_i64 a = obeg + (xa - oex);
                if (gc_uniform(gc_step(prefix, (gc_u64)(unsigned int)g.in_eid[a])) < (double)g.in_w[a]) {
                    u = g.in_src[a];
                    if (!g.active[u]) {
                        unsigned* w = am_vw(bm, u);
                        const unsigned b = am_bit(u);
                        if (!(am_ld(w) & b)) want = !(atomicOr(w, b) & b);
                    }
                }
            }
            ok = am_append(want, u, seg, l, bw, bw_phys, guard, bm, cnt, false, sh);
            if (!ok) break;
            if (base + 32 < total && am_stopped(sh)) {
                ok = false;
                break;
            }
        }
        if (!ok) break;
    }
}

// One BFS level [lb, le) under LT: lane x draws frontier node x's choice (attempts a = 0, 1, ...,
// rejecting active sources: correction 4) and appends the chosen in-neighbour if it is new.
__device__ void am_level_lt(gc_i64 lb, gc_i64 le, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys, gc_i64 guard,
                            gc_u64 seed, gc_i64 j, const am_graph& g, unsigned* bm, int* cnt, am_shared* sh) {
    const int lane = gc_lane();
    const gc_i64 nf = le - lb;
    while (true) {
        unsigned long long idx = 0ULL;
        if (lane == 0) idx = atomicAdd(&sh->head, 32ULL);
        idx = __shfl_sync(GC_FULL_MASK, idx, 0);
        if ((gc_i64)idx >= nf || am_stopped(sh)) break;
        const gc_i64 x = (gc_i64)idx + lane;
        int u = -1;
        if (x < nf) {
            const int v = seg[am_wrap(bw_phys + (lb + x - bw), l)];
            const gc_i64 klo = g.in_indptr[v], khi = g.in_indptr[v + 1];
            if (khi > klo) {
                const gc_i64 last = g.lt_cum[khi - 1];
                gc_u64 a = 0;
                for (;; ++a) {
                    if (a >= AM_LT_MAX_ATTEMPTS) {
                        atomicAdd(&g.errors[AM_ERR_LT], 1);
                        break;
                    }
                    const gc_i64 r = gc_lt_draw(gc_mix5(seed, GC_STREAM_LT_CHOICE, (gc_u64)j, (gc_u64)v, a));
                    if (r >= last) break;  // no in-arc chosen
                    gc_i64 lo = klo, hi = khi - 1;
                    while (lo < hi) {
                        const gc_i64 c = (lo + hi) >> 1;
                        if (r < g.lt_cum[c]) hi = c; else lo = c + 1;
                    }
                    const int w = g.in_src[lo];
                    if (g.active[w]) continue;  // rejection: condition on "not yet active"
                    u = w;
                    break;
                }
                atomicAdd(&sh->arcs, (unsigned long long)(a + 1));
            }
        }
        bool want = false;
        if (u >= 0) {
            unsigned* w = am_vw(bm, u);
            const unsigned b = am_bit(u);
            if (!(am_ld(w) & b)) want = !(atomicOr(w, b) & b);
        }
        if (!am_append(want, u, seg, l, bw, bw_phys, guard, bm, cnt, false, sh)) break;
    }
}

// Level-synchronous reverse BFS from the entries [lb, sh->pos) (block-wide).
__device__ void am_probe(gc_i64 lb, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys, gc_i64 guard, gc_u64 seed,
                         gc_i64 j, const am_graph& g, unsigned* bm, int* cnt, am_shared* sh) {
    const gc_u64 prefix = gc_mix3(seed, GC_STREAM_COIN, (gc_u64)j);
    while (true) {
        __syncthreads();
        if (threadIdx.x == 0) {
            sh->lvl_end = (gc_i64)sh->pos;
            sh->head = 0ULL;
            sh->lvl_overflow = sh->overflow;
        }
        __syncthreads();
        const gc_i64 le = sh->lvl_end;
        if (sh->lvl_overflow || lb >= le) break;
        if (g.is_lt)
            am_level_lt(lb, le, seg, l, bw, bw_phys, guard, seed, j, g, bm, cnt, sh);
        else
            am_level_ic(lb, le, seg, l, bw, bw_phys, guard, prefix, g, bm, cnt, sh);
        lb = le;
    }
    __syncthreads();
}

// Warp 0: draw t new roots (rejection form): draw d gives residual[mix(seed, ROOT, j, rnd, d) mod n_res];
// a draw that is already a root is skipped; a member is promoted (R only); anything else is a fresh
// root appended at sh->pos. On a guard hit, overflow is raised with fail = the committed end.
__device__ void am_draw_roots(gc_i64 t, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys, gc_i64 guard, gc_u64 seed,
                              gc_i64 j, gc_i64 rnd, const am_graph& g, unsigned* bm, int* cnt, am_shared* sh) {
    const int lane = gc_lane();
    const gc_u64 nres = (gc_u64)g.n_res;
    gc_i64 pos = (gc_i64)sh->pos;
    gc_i64 got = 0;
    gc_u64 d = 0;
    while (got < t) {
        const gc_u64 h = gc_mix5(seed, GC_STREAM_ROOT, (gc_u64)j, (gc_u64)rnd, d + (gc_u64)lane);
        const int u = g.residual[gc_index_below(h, nres)];
        bool dup = false;
        for (int s = 1; s < 32; ++s) {
            const int o = __shfl_sync(GC_FULL_MASK, u, (lane - s) & 31);
            if (lane >= s && o == u) dup = true;
        }
        const unsigned b = am_bit(u);
        const bool isr = (am_ld(am_rw(bm, u)) & b) != 0u;
        const bool isv = (am_ld(am_vw(bm, u)) & b) != 0u;
        const bool valid = !dup && !isr;
        const unsigned m = __ballot_sync(GC_FULL_MASK, valid);
        const gc_i64 need = t - got;
        const bool take = valid && (gc_i64)__popc(m & gc_lanes_below()) < need;
        const bool fresh = take && !isv;
        const unsigned fm = __ballot_sync(GC_FULL_MASK, fresh);
        const int nf = __popc(fm);
        if (pos + nf > guard) {
            if (lane == 0) {
                sh->fail = (unsigned long long)pos;
                sh->overflow = 1;
            }
            break;
        }
        if (take) {
            atomicOr(am_rw(bm, u), b);
            if (fresh) {
                const gc_i64 p = pos + __popc(fm & gc_lanes_below());
                seg[am_wrap(bw_phys + (p - bw), l)] = u;
                atomicOr(am_vw(bm, u), b);
                atomicAdd(&cnt[u], 1);
            }
        }
        pos += nf;
        const unsigned tm = __ballot_sync(GC_FULL_MASK, take);
        if (lane == 0) sh->promoted += __popc(tm & ~fm);
        const gc_i64 pm = __popc(m);
        got += pm < need ? pm : need;
        d += 32;
        __syncwarp();
    }
    if (lane == 0) sh->pos = (unsigned long long)pos;
    __syncwarp();
}

// Complement root draw (more than half of V_i minus the roots become roots): warp 0 draws the
// e = m - t nodes that do NOT become roots (marked excluded: R set, V cleared), then the block turns
// every other node of V_i that is not a root into a root (members promoted, others appended), and
// the marks are restored (excluded members -> members, excluded others -> unmarked).
__device__ void am_complement(gc_i64 e, gc_i64 mem_lo, gc_i64 mem_hi, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys,
                              gc_i64 guard, gc_u64 seed, gc_i64 j, gc_i64 rnd, const am_graph& g, unsigned* bm,
                              int* cnt, am_shared* sh) {
    const int lane = gc_lane();
    const gc_i64 nres = g.n_res;
    if (gc_warp() == 0 && e > 0) {
        gc_i64 got = 0;
        gc_u64 d = 0;
        while (got < e) {
            const gc_u64 h = gc_mix5(seed, GC_STREAM_ROOT, (gc_u64)j, (gc_u64)rnd, d + (gc_u64)lane);
            const int u = g.residual[gc_index_below(h, (gc_u64)nres)];
            bool dup = false;
            for (int s = 1; s < 32; ++s) {
                const int o = __shfl_sync(GC_FULL_MASK, u, (lane - s) & 31);
                if (lane >= s && o == u) dup = true;
            }
            const unsigned b = am_bit(u);
            const bool valid = !dup && !(am_ld(am_rw(bm, u)) & b);  // neither a root nor excluded yet
            const unsigned m = __ballot_sync(GC_FULL_MASK, valid);
            const gc_i64 need = e - got;
            const bool take = valid && (gc_i64)__popc(m & gc_lanes_below()) < need;
            if (take) {
                atomicOr(am_rw(bm, u), b);
                atomicAnd(am_vw(bm, u), ~b);
            }
            const gc_i64 pm = __popc(m);
            got += pm < need ? pm : need;
            d += 32;
            __syncwarp();
        }
    }
    __syncthreads();
    GC_FOR_BLOCK_CHUNKS(base, 0, nres) {
        const gc_i64 i = base + threadIdx.x;
        bool want = false;
        int u = 0;
        if (i < nres) {
            u = g.residual[i];
            const unsigned b = am_bit(u);
            if (!(am_ld(am_rw(bm, u)) & b)) {
                if (am_ld(am_vw(bm, u)) & b) {
                    atomicOr(am_rw(bm, u), b);  // promoted member
                } else {
                    atomicOr(am_vw(bm, u), b);
                    want = true;
                }
            }
        }
        if (!am_append(want, u, seg, l, bw, bw_phys, guard, bm, cnt, true, sh)) break;
        if (am_stopped(sh)) break;
    }
    __syncthreads();
    if (sh->overflow) return;  // the caller clears the whole bitmap
    GC_FOR_BLOCK(p, mem_lo, mem_hi) {
        const int u = seg[am_wrap(bw_phys + (p - bw), l)];
        const unsigned b = am_bit(u);
        if ((am_ld(am_rw(bm, u)) & b) && !(am_ld(am_vw(bm, u)) & b)) {
            atomicOr(am_vw(bm, u), b);
            atomicAnd(am_rw(bm, u), ~b);
        }
    }
    __syncthreads();
    GC_FOR_BLOCK(i, 0, nres) {
        const int u = g.residual[i];
        const unsigned b = am_bit(u);
        if ((am_ld(am_rw(bm, u)) & b) && !(am_ld(am_vw(bm, u)) & b)) atomicAnd(am_rw(bm, u), ~b);
    }
    __syncthreads();
}

// Roots first: in [a, e) exactly rn entries are roots (R bit); swap the non-roots of [a, a+rn) with
// the roots of [a+rn, e), pairing them chunk by chunk in position order.
__device__ void am_partition_roots(gc_i64 a, gc_i64 rn, gc_i64 e, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys,
                                   unsigned* bm, am_shared* sh) {
    gc_i64 pm = a, pr = a + rn;
    const gc_i64 em = a + rn;
    const int B = blockDim.x;
    while (pm < em && pr < e) {
        const gc_i64 xm = pm + threadIdx.x, xr = pr + threadIdx.x;
        bool bad_m = false, bad_r = false;
        if (xm < em) {
            const int u = seg[am_wrap(bw_phys + (xm - bw), l)];
            bad_m = !(am_ld(am_rw(bm, u)) & am_bit(u));
        }
        if (xr < e) {
            const int u = seg[am_wrap(bw_phys + (xr - bw), l)];
            bad_r = (am_ld(am_rw(bm, u)) & am_bit(u)) != 0u;
        }
        int tm, tr;
        const int rm = am_block_scan(bad_m, &tm, sh);
        const int rr = am_block_scan(bad_r, &tr, sh);
        if (bad_m) sh->pa[rm] = (int)(xm - a);
        if (bad_r) sh->pb[rr] = (int)(xr - a);
        __syncthreads();
        const int pairs = tm < tr ? tm : tr;
        if ((int)threadIdx.x < pairs) {
            const gc_i64 i1 = am_wrap(bw_phys + (a + sh->pa[threadIdx.x] - bw), l);
            const gc_i64 i2 = am_wrap(bw_phys + (a + sh->pb[threadIdx.x] - bw), l);
            const int v1 = seg[i1];
            seg[i1] = seg[i2];
            seg[i2] = v1;
        }
        const gc_i64 npm = tm > pairs ? a + sh->pa[pairs] : pm + B;
        const gc_i64 npr = tr > pairs ? a + sh->pb[pairs] : pr + B;
        __syncthreads();
        pm = npm;
        pr = npr;
    }
}

// Roots first when no member was promoted: [a, f) holds the old non-root members and [f, f + t) the
// t fresh roots (appended by the draw before any probe); swapping the first x = min(t, f - a)
// members with the last x fresh roots puts every root before a + t. O(t) instead of a scan of the set.
__device__ void am_swap_fresh_roots(gc_i64 a, gc_i64 f, gc_i64 t, int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys) {
    const gc_i64 x = t < f - a ? t : f - a;
    GC_FOR_BLOCK(i, 0, x) {
        const gc_i64 i1 = am_wrap(bw_phys + (a + i - bw), l);
        const gc_i64 i2 = am_wrap(bw_phys + (f + t - x + i - bw), l);
        const int v1 = seg[i1];
        seg[i1] = seg[i2];
        seg[i2] = v1;
    }
}

// Copy n entries from logical src to logical dst of the segment (dst >= src, dst - src <= l:
// chunks in increasing order, each read completely before it is written, never overwrite an entry
// not yet read). mode 0 (clean source): copy all, mark V (and R for source index < nroot_mark).
// mode 1 (polluted source roots): keep the inactive ones only (compacted), mark V + R, count them.
// Returns the number of entries written.
__device__ gc_i64 am_move(int mode, gc_i64 src, gc_i64 n, gc_i64 dst, gc_i64 nroot_mark, int* seg, gc_i64 l,
                          const am_graph& g, unsigned* bm, int* cnt, am_shared* sh) {
    const gc_i64 sp = src % l, dp = dst % l;
    gc_i64 w = 0;
    GC_FOR_BLOCK_CHUNKS(base, 0, n) {
        const gc_i64 i = base + threadIdx.x;
        int v = 0;
        bool keep = false;
        if (i < n) {
            v = seg[am_wrap(sp + i, l)];
            keep = (mode == 0) || !g.active[v];
        }
        int tot, rank;
        if (mode == 0) {  // everything is kept: no compaction, one barrier orders this chunk's reads before its writes
            tot = n - base < (gc_i64)blockDim.x ? (int)(n - base) : (int)blockDim.x;
            rank = (int)threadIdx.x;
            __syncthreads();
        } else {
            rank = am_block_scan(keep, &tot, sh);  // all reads of this chunk happen before its writes
        }
        if (keep) {
            seg[am_wrap(dp + w + rank, l)] = v;
            const unsigned b = am_bit(v);
            atomicOr(am_vw(bm, v), b);
            if (mode == 1 || i < nroot_mark) atomicOr(am_rw(bm, v), b);
            if (mode == 1) atomicAdd(&cnt[v], 1);
        }
        w += tot;
    }
    __syncthreads();
    return w;
}

// Number of the first n entries at logical src whose node is not active (block-wide).
__device__ gc_i64 am_count_inactive(gc_i64 src, gc_i64 n, const int* seg, gc_i64 l, const am_graph& g, am_shared* sh) {
    const gc_i64 sp = src % l;
    gc_i64 c = 0;
    GC_FOR_BLOCK_CHUNKS(base, 0, n) {
        const gc_i64 i = base + threadIdx.x;
        bool keep = false;
        if (i < n) keep = !g.active[seg[am_wrap(sp + i, l)]];
        int tot;
        am_block_scan(keep, &tot, sh);
        c += tot;
    }
    return c;
}

// Zero the bitmap words of the nodes at logical [p0, p1) (all marks of one set live there).
__device__ void am_clear_marks(gc_i64 p0, gc_i64 p1, const int* seg, gc_i64 l, gc_i64 bw, gc_i64 bw_phys,
                               unsigned* bm) {
    GC_FOR_BLOCK(p, p0, p1) {
        const int u = seg[am_wrap(bw_phys + (p - bw), l)];
        bm[2 * (gc_i64)(u >> 5)] = 0u;
        bm[2 * (gc_i64)(u >> 5) + 1] = 0u;
    }
}

// End of am_build_set (block-wide): publish status st and end, count the set's probed arcs.
__device__ __forceinline__ void am_set_result(int st, gc_i64 end, const am_graph& g, am_shared* sh) {
    __syncthreads();
    if (threadIdx.x == 0) {
        sh->st = st;
        sh->end = end;
        if (g.probes) atomicAdd(g.probes, sh->arcs);
    }
    __syncthreads();
}

// Build set j at logical position bw of the segment (all threads of the block call it with the same
// arguments); never writes at or past `guard`. Results in sh->st (0 done, 1 guard hit), sh->end (the
// set's end), and for a guard hit sh->ms/me/mn: where the source now is (-1: untouched), as
// kernels_cpu.build_set returns them. Marks are clean again on return; coverage of an abandoned set
// is undone.
__device__ void am_build_set(int mode, int* seg, gc_i64 l, gc_i64 bw, gc_i64 guard, gc_i64 src_start, gc_i64 src_end,
                             gc_i64 src_nroots, gc_i64 j, gc_i64 target, gc_u64 seed, gc_i64 rnd, const am_graph& g,
                             unsigned* bm, gc_i64 bm_words, int* cnt, am_shared* sh) {
    const gc_i64 bw_phys = bw % l;
    __syncthreads();
    if (threadIdx.x == 0) {
        sh->pos = (unsigned long long)bw;
        sh->promoted = 0;
        sh->arcs = 0ULL;
        sh->fail = ~0ULL;
        sh->overflow = 0;
        sh->st = 0;
        sh->end = bw;
        sh->ms = -1;
        sh->me = -1;
        sh->mn = 0;
    }
    __syncthreads();
    gc_i64 c = 0, counted_from = bw, probe_from = bw, mem_lo = bw, mem_hi = bw;
    if (mode == AM_MODE_CLEAN || mode == AM_MODE_POLLUTED) {
        if (bw - src_start > l) {
            if (threadIdx.x == 0) atomicAdd(&g.errors[AM_ERR_LAYOUT], 1);
        }
    }
    if (mode == AM_MODE_CLEAN) {
        const gc_i64 ln = src_end - src_start;
        if (bw + ln > guard) {
            if (threadIdx.x == 0) sh->st = 1;
            __syncthreads();
            return;
        }
        am_move(0, src_start, ln, bw, src_nroots, seg, l, g, bm, cnt, sh);
        c = src_nroots;
        counted_from = bw + ln;
        probe_from = bw + ln;
        mem_lo = bw + src_nroots;
        mem_hi = bw + ln;
        if (threadIdx.x == 0) {
            sh->pos = (unsigned long long)(bw + ln);
            sh->ms = bw;
            sh->me = bw + ln;
            sh->mn = src_nroots;
        }
    } else if (mode == AM_MODE_POLLUTED) {
        const gc_i64 nk = am_count_inactive(src_start, src_nroots, seg, l, g, sh);
        if (bw + nk > guard) {
            if (threadIdx.x == 0) sh->st = 1;
            __syncthreads();
            return;
        }
        am_move(1, src_start, src_nroots, bw, 0, seg, l, g, bm, cnt, sh);
        c = nk;
        if (threadIdx.x == 0) {
            sh->pos = (unsigned long long)(bw + nk);
            sh->ms = bw;
            sh->me = bw + nk;
            sh->mn = nk;
        }
    }
    __syncthreads();
    const gc_i64 t = target - c;
    const gc_i64 m = g.n_res - c;
    bool complement = false;
    if (t > 0 && 2 * t <= m) {
        if (gc_warp() == 0) am_draw_roots(t, seg, l, bw, bw_phys, guard, seed, j, rnd, g, bm, cnt, sh);
        __syncthreads();
    } else if (t > 0) {
        complement = true;
        am_complement(m - t, mem_lo, mem_hi, seg, l, bw, bw_phys, guard, seed, j, rnd, g, bm, cnt, sh);
    }
    am_probe(probe_from, seg, l, bw, bw_phys, guard, seed, j, g, bm, cnt, sh);
    // am_probe ends with a barrier: overflow, pos and fail are final
    if (sh->overflow) {
        const gc_i64 end = (gc_i64)sh->fail;
        GC_FOR_BLOCK(p, counted_from, end)
            atomicSub(&cnt[seg[am_wrap(bw_phys + (p - bw), l)]], 1);
        if (complement) {
            GC_FOR_BLOCK(w, 0, bm_words) bm[w] = 0u;
        } else {
            am_clear_marks(bw, end, seg, l, bw, bw_phys, bm);
        }
        am_set_result(1, end, g, sh);
        return;
    }
    const gc_i64 end = (gc_i64)sh->pos;
    if (mode == AM_MODE_CLEAN && t > 0) {
        if (!complement && sh->promoted == 0)  // the t new roots sit right after the old members
            am_swap_fresh_roots(bw + c, mem_hi, t, seg, l, bw, bw_phys);
        else
            am_partition_roots(bw + c, t, end, seg, l, bw, bw_phys, bm, sh);
    }
    __syncthreads();
    am_clear_marks(bw, end, seg, l, bw, bw_phys, bm);
    am_set_result(0, end, g, sh);
}

#endif  // AMCSS_COMMON_CUH

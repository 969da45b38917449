// sds_ego.cuh: the steps of scoring one ego-network, as device functions of one item (a row, an
// edge): the block-per-ego-network kernel (sds_score.cu) and the whole-device kernels for giant
// ego-networks (sds_flat.cu) run the same steps, with a block or the grid sweeping the items.
//
// An ego-network is given by its first flat row r0 and first flat edge e0 (gpucore/sds/layout.py);
// local vertex i is row r0 + i, local edge e is flat edge e0 + e.
//   comp : union-find over the ego edges; components of >= k vertices count.
//   core : the H-index iteration to coreness (Sarıyüce et al.): c = degree, then rounds in which a
//          warp per vertex recomputes H = the largest h <= c with >= h neighbours of c >= h (a warp
//          count of the row, then a binary search on h), in place, until a round changes nothing;
//          union-find over the edges between vertices of c >= k; every component counts.
//   truss: supports by sorted-list intersection (a warp per edge), then PKT-style level peeling of
//          levels 0 .. stop_level-1: a thread per edge files the alive edges of support == level
//          into ``curr`` (a level without edges is skipped); while curr is not empty, a warp per
//          curr edge e1 = (i, j) intersects the rows of i and j and, for every triangle (i, j, w)
//          with e2, e3 the other edges and none of them DEAD: both e2, e3 not in curr -> both lose
//          one; exactly one of them in curr -> the other loses one if e1 has the smaller id of the
//          two curr edges; both in curr -> nothing: every triangle is taken off each surviving edge
//          exactly once. A loss is an atomicCAS that never takes a support below the level; the
//          edge that reaches the level goes to ``next``. Then curr becomes DEAD, next becomes curr.
//          Edges left ALIVE have trussness >= stop_level + 2 (a DEAD edge keeps its level in sup);
//          union-find over them, every component counts.
// Labels: parent[r] = the flat row of the smallest member of r's context, -1 outside contexts.
// Twin: gpucore/sds/kernels_cpu.py (sequential forms of the same algorithms).
#ifndef SDS_EGO_CUH
#define SDS_EGO_CUH

#include "sds_common.cuh"

struct sds_arena {
    const gc_i64* row_base;
    const gc_i64* edge_base;
    const gc_i64* row_start;
    const int* row_deg;
    const int* row_owner;
    const int* nbr;
    const int* eid;
    const int* el_i;
    const int* el_j;
    int* sup;
    unsigned char* state;
    int* parent;
    int* aux;
};

// Warp: union row r (local i = r - r0) with its larger neighbours (core: only between c >= k).
__device__ __forceinline__ void sds_union_row(const sds_arena& a, int model, int k, int r, int r0) {
    if (model == SDS_CORE && a.aux[r] < k) return;
    const int i = r - r0;
    const gc_i64 s0 = a.row_start[r], s1 = s0 + a.row_deg[r];
    for (gc_i64 x = s0 + (threadIdx.x & 31); x < s1; x += 32) {
        const int j = a.nbr[x];
        if (j > i && (model != SDS_CORE || a.aux[r0 + j] >= k)) sds_uf_union(a.parent, r, r0 + j);
    }
}

// Warp: one H-index step of row r: aux[r] <- the largest h <= aux[r] with >= h neighbours of
// aux >= h. Returns (on every lane) whether it lowered aux[r].
__device__ __forceinline__ bool sds_hindex_row(const sds_arena& a, int r, int r0) {
    const int lane = threadIdx.x & 31;
    const int cr = __shfl_sync(SDS_FULL, a.aux[r], 0);  // one value for the whole warp
    if (cr == 0) return false;
    const gc_i64 s0 = a.row_start[r], s1 = s0 + a.row_deg[r];
    int lo = 0, hi = cr, probe = cr;
    while (lo < hi) {  // feasible(h): #{neighbours with aux >= h} >= h; probe cr first, then bisect
        int c = 0;
        for (gc_i64 x = s0 + lane; x < s1; x += 32) c += a.aux[r0 + a.nbr[x]] >= probe;
        c = sds_warp_sum(c);
        if (c >= probe)
            lo = probe;
        else
            hi = probe - 1;
        probe = (lo + hi + 1) >> 1;
    }
    if (lo < cr && lane == 0) a.aux[r] = lo;
    return lo < cr;
}

// Warp: support of local edge e of the ego-network at (r0, e0); lane 0 stores it, state ALIVE.
// stop_level 0 (k <= 2) keeps every edge: no support is needed.
__device__ __forceinline__ void sds_edge_support(const sds_arena& a, int stop_level, int e, int r0, gc_i64 e0) {
    int c = 0;
    if (stop_level > 0) {
        const gc_i64 ri = r0 + a.el_i[e0 + e], rj = r0 + a.el_j[e0 + e];
        c = sds_warp_intersect_count(a.nbr, a.row_start[ri], a.row_start[ri] + a.row_deg[ri], a.row_start[rj],
                                     a.row_start[rj] + a.row_deg[rj]);
    }
    if ((threadIdx.x & 31) == 0) {
        a.sup[e0 + e] = c;
        a.state[e0 + e] = SDS_ALIVE;
    }
}

// Thread: file flat edge f: alive with support == level -> CURR, queue[qbase + slot] = value; any
// other alive edge lowers *low to its support.
__device__ __forceinline__ void sds_file_edge(const sds_arena& a, gc_i64 f, int level, int* queue, gc_i64 qbase,
                                              int value, int* ncurr, int* low) {
    if (a.state[f] != SDS_ALIVE) return;
    const int s = a.sup[f];
    if (s == level) {
        a.state[f] = SDS_CURR;
        queue[qbase + atomicAdd(ncurr, 1)] = value;
    } else {
        atomicMin(low, s);
    }
}

// A support loss of local edge e (flat e0 + e) at level l: never below l; the edge reaching l
// goes to next[qbase + slot] = qoff + e.
__device__ __forceinline__ void sds_lose(const sds_arena& a, gc_i64 e0, int e, int level, int* next, int* nnext,
                                         gc_i64 qbase, gc_i64 qoff) {
    int* sup = a.sup + e0 + e;
    int old = *sup;
    while (old > level) {
        const int seen = atomicCAS(sup, old, old - 1);
        if (seen == old) {
            if (old == level + 1) {
                a.state[e0 + e] = SDS_NEXT;
                next[qbase + atomicAdd(nnext, 1)] = (int)(qoff + e);
            }
            return;
        }
        old = seen;
    }
}

// Warp: peel local edge e1 of the ego-network at (r0, e0) at level l (the PKT rules above).
__device__ __forceinline__ void sds_peel_edge(const sds_arena& a, int e1, int r0, gc_i64 e0, int level, int* next,
                                              int* nnext, gc_i64 qbase, gc_i64 qoff) {
    gc_i64 ra = r0 + a.el_i[e0 + e1], rb = r0 + a.el_j[e0 + e1];
    if (a.row_deg[ra] > a.row_deg[rb]) {
        const gc_i64 t = ra;
        ra = rb;
        rb = t;
    }
    const gc_i64 a0 = a.row_start[ra], a1 = a0 + a.row_deg[ra];
    const gc_i64 b0 = a.row_start[rb], b1 = b0 + a.row_deg[rb];
    for (gc_i64 x = a0 + (threadIdx.x & 31); x < a1; x += 32) {
        const gc_i64 y = sds_find(a.nbr, b0, b1, a.nbr[x]);
        if (y < 0) continue;
        const int ea = a.eid[x], eb = a.eid[y];
        const int sa = a.state[e0 + ea], sb = a.state[e0 + eb];
        if (sa == SDS_DEAD || sb == SDS_DEAD) continue;
        const bool ca = sa == SDS_CURR, cb = sb == SDS_CURR;
        if (!ca && !cb) {
            sds_lose(a, e0, ea, level, next, nnext, qbase, qoff);
            sds_lose(a, e0, eb, level, next, nnext, qbase, qoff);
        } else if (ca && !cb) {
            if (e1 < ea) sds_lose(a, e0, eb, level, next, nnext, qbase, qoff);
        } else if (!ca && cb) {
            if (e1 < eb) sds_lose(a, e0, ea, level, next, nnext, qbase, qoff);
        }
    }
}

// Thread: union the endpoints of flat edge f if it is in the k-truss (marks them members).
__device__ __forceinline__ void sds_union_alive(const sds_arena& a, gc_i64 f, int r0) {
    if (a.state[f] != SDS_ALIVE) return;
    const int ri = r0 + a.el_i[f], rj = r0 + a.el_j[f];
    a.aux[ri] = 1;
    a.aux[rj] = 1;
    sds_uf_union(a.parent, ri, rj);
}

// Thread, after the roots are final: label row r; returns 1 if r is the root of a context.
__device__ __forceinline__ int sds_label_row(const sds_arena& a, int model, int k, int r) {
    const int root = a.parent[r];
    const bool member = model == SDS_COMP ? a.aux[root] >= k : model == SDS_CORE ? a.aux[r] >= k : a.aux[r] == 1;
    if (!member) {
        a.parent[r] = -1;
        return 0;
    }
    return root == r;
}

#endif

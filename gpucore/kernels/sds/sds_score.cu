// sds_score.cu: the score of every ego-network of a batch, a thread block per ego-network.
//
// Blocks pull ego-networks from a work counter (``order`` = largest first), as the paper's blocks
// take the next ego-network when they finish. Within a block (any multiple of 32 threads):
//   comp : union-find over the ego edges (a warp per local vertex, lanes over its larger neighbours);
//          components of >= k vertices count.
//   core : the H-index iteration to coreness (Sarıyüce et al.): c = degree, then rounds in which a
//          warp per vertex recomputes H = the largest h <= c with >= h neighbours of c >= h (a warp
//          count of the row, then a binary search on h), in place, until a round changes nothing;
//          then union-find over the edges between vertices of c >= k; every component counts.
//   truss: supports by sorted-list intersection (a warp per edge), then PKT-style level peeling of
//          levels 0 .. stop_level-1: a thread per edge files the alive edges of support == level
//          into ``curr`` (levels without edges are skipped); while curr is not empty, a warp per
//          curr edge e1 = (i, j) intersects the rows of i and j and, for every triangle (i, j, w)
//          with e2, e3 the other edges and none of them DEAD: both e2, e3 not in curr -> both lose
//          one; exactly one of them in curr -> the other loses one if e1 has the smaller id of the
//          two curr edges; both in curr -> nothing: every triangle is taken off each surviving edge
//          once. A loss is an atomicCAS that never takes a support below the level; the edge that
//          reaches the level goes to ``next``. Then curr becomes DEAD, next becomes curr. Edges
//          left ALIVE have trussness >= stop_level + 2 (a DEAD edge keeps its level in sup);
//          union-find over them, every component counts.
// Labels: parent[r] = the flat row of the smallest member of r's context, -1 outside contexts.
// Twin: gpucore/sds/kernels_cpu.py score_batch (sequential forms of the same algorithms).
#include "sds_common.cuh"

struct sds_ego {
    const gc_i64* row_start;
    const int* row_deg;
    const int* nbr;
    int* parent;
    int* aux;
    int r0;
    int d;
};

// Union-find over the kept edges of the ego-network: a warp per row, lanes over its larger neighbours.
// model core: an edge is kept when both ends have c >= k; comp: every edge.
__device__ void sds_union_rows(const sds_ego& g, int model, int k) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int i = warp; i < g.d; i += warps) {
        const int r = g.r0 + i;
        if (model == SDS_CORE && g.aux[r] < k) continue;
        const gc_i64 s0 = g.row_start[r], s1 = s0 + g.row_deg[r];
        for (gc_i64 x = s0 + lane; x < s1; x += 32) {
            const int j = g.nbr[x];
            if (j > i && (model != SDS_CORE || g.aux[g.r0 + j] >= k)) sds_uf_union(g.parent, r, g.r0 + j);
        }
    }
}

// The H-index iteration: aux[r] ends as the coreness of every local vertex.
__device__ void sds_coreness(const sds_ego& g, int* s_changed) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int i = threadIdx.x; i < g.d; i += blockDim.x) g.aux[g.r0 + i] = g.row_deg[g.r0 + i];
    while (true) {
        if (threadIdx.x == 0) *s_changed = 0;
        __syncthreads();
        for (int i = warp; i < g.d; i += warps) {
            const int r = g.r0 + i;
            const int cr = g.aux[r];
            if (cr == 0) continue;
            const gc_i64 s0 = g.row_start[r], s1 = s0 + g.row_deg[r];
            int lo = 0, hi = cr, probe = cr;
            while (lo < hi) {  // largest h in [lo, hi] with #{neighbours of c >= h} >= h; h = cr first
                int c = 0;
                for (gc_i64 x = s0 + lane; x < s1; x += 32) c += g.aux[g.r0 + g.nbr[x]] >= probe;
                c = sds_warp_sum(c);
                if (c >= probe)
                    lo = probe;
                else
                    hi = probe - 1;
                probe = (lo + hi + 1) >> 1;
            }
            if (lo < cr && lane == 0) {
                g.aux[r] = lo;
                *s_changed = 1;
            }
        }
        __syncthreads();
        const int changed = *s_changed;
        __syncthreads();
        if (!changed) break;
    }
}

// A support loss of edge e (flat) at level l: never below l; reaching l files it into next.
__device__ __forceinline__ void sds_lose(int* sup, unsigned char* state, int* next, int* s_nnext, gc_i64 e0, int e,
                                         int level) {
    int old = sup[e0 + e];
    while (old > level) {
        const int seen = atomicCAS(&sup[e0 + e], old, old - 1);
        if (seen == old) {
            if (old == level + 1) {
                state[e0 + e] = SDS_NEXT;
                next[e0 + atomicAdd(s_nnext, 1)] = e;
            }
            return;
        }
        old = seen;
    }
}

struct sds_truss_shared {
    int ncurr, nnext, low, removed;
};

__device__ void sds_peel(const sds_ego& g, gc_i64 e0, int ne, int stop_level, const int* eid, const int* el_i,
                         const int* el_j, int* sup, unsigned char* state, int* qa, int* qb, sds_truss_shared* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int e = warp; e < ne; e += warps) {  // supports: a warp per edge
        const gc_i64 ri = g.r0 + el_i[e0 + e], rj = g.r0 + el_j[e0 + e];
        const int c = sds_warp_intersect_count(g.nbr, g.row_start[ri], g.row_start[ri] + g.row_deg[ri],
                                               g.row_start[rj], g.row_start[rj] + g.row_deg[rj]);
        if (lane == 0) {
            sup[e0 + e] = c;
            state[e0 + e] = SDS_ALIVE;
        }
    }
    if (threadIdx.x == 0) {
        sh->ncurr = 0;
        sh->nnext = 0;
        sh->low = stop_level;
        sh->removed = 0;
    }
    __syncthreads();
    int level = 0;
    int* curr = qa;
    int* next = qb;
    while (level < stop_level && sh->removed < ne) {
        for (int e = threadIdx.x; e < ne; e += blockDim.x) {  // filing: a thread per edge
            if (state[e0 + e] != SDS_ALIVE) continue;
            const int s = sup[e0 + e];
            if (s == level) {
                state[e0 + e] = SDS_CURR;
                curr[e0 + atomicAdd(&sh->ncurr, 1)] = e;
            } else {
                atomicMin(&sh->low, s);
            }
        }
        __syncthreads();
        int ncurr = sh->ncurr;
        if (ncurr == 0) {  // no edge at this level: go to the lowest support left
            level = sh->low;
            __syncthreads();
            if (threadIdx.x == 0) sh->low = stop_level;
            __syncthreads();
            continue;
        }
        while (ncurr > 0) {
            for (int q = warp; q < ncurr; q += warps) {  // peeling: a warp per curr edge
                const int e1 = curr[e0 + q];
                gc_i64 ra = g.r0 + el_i[e0 + e1], rb = g.r0 + el_j[e0 + e1];
                if (g.row_deg[ra] > g.row_deg[rb]) {
                    const gc_i64 t = ra;
                    ra = rb;
                    rb = t;
                }
                const gc_i64 a0 = g.row_start[ra], a1 = a0 + g.row_deg[ra];
                const gc_i64 b0 = g.row_start[rb], b1 = b0 + g.row_deg[rb];
                for (gc_i64 x = a0 + lane; x < a1; x += 32) {
                    const gc_i64 y = sds_find(g.nbr, b0, b1, g.nbr[x]);
                    if (y < 0) continue;
                    const int ea = eid[x], eb = eid[y];
                    const int sa = state[e0 + ea], sb = state[e0 + eb];
                    if (sa == SDS_DEAD || sb == SDS_DEAD) continue;
                    const bool ca = sa == SDS_CURR, cb = sb == SDS_CURR;
                    if (!ca && !cb) {
                        sds_lose(sup, state, next, &sh->nnext, e0, ea, level);
                        sds_lose(sup, state, next, &sh->nnext, e0, eb, level);
                    } else if (ca && !cb) {
                        if (e1 < ea) sds_lose(sup, state, next, &sh->nnext, e0, eb, level);
                    } else if (!ca && cb) {
                        if (e1 < eb) sds_lose(sup, state, next, &sh->nnext, e0, ea, level);
                    }
                }
            }
            __syncthreads();
            const int nnext = sh->nnext;
            for (int q = threadIdx.x; q < ncurr; q += blockDim.x) state[e0 + curr[e0 + q]] = SDS_DEAD;
            for (int q = threadIdx.x; q < nnext; q += blockDim.x) state[e0 + next[e0 + q]] = SDS_CURR;
            __syncthreads();
            if (threadIdx.x == 0) {
                sh->removed += ncurr;
                sh->ncurr = nnext;
                sh->nnext = 0;
            }
            int* t = curr;
            curr = next;
            next = t;
            ncurr = nnext;
            __syncthreads();
        }
        if (threadIdx.x == 0) sh->low = stop_level;  // sh->ncurr is 0 here
        ++level;
        __syncthreads();
    }
}

extern "C" __global__ void sds_score(int model, int k, int stop_level, const int* __restrict__ order, gc_i64 batch,
                                     int* __restrict__ work, const gc_i64* __restrict__ row_base,
                                     const gc_i64* __restrict__ edge_base, const gc_i64* __restrict__ row_start,
                                     const int* __restrict__ row_deg, const int* __restrict__ nbr,
                                     const int* __restrict__ eid, const int* __restrict__ el_i,
                                     const int* __restrict__ el_j, int* __restrict__ sup,
                                     unsigned char* __restrict__ state, int* __restrict__ qa, int* __restrict__ qb,
                                     int* __restrict__ parent, int* __restrict__ aux, int* __restrict__ score,
                                     int* __restrict__ errors) {
    __shared__ int s_item, s_changed, s_score;
    __shared__ sds_truss_shared s_truss;
    if (blockDim.x & 31) {
        if (threadIdx.x == 0) errors[SDS_ERR_BLOCK] = 1;
        return;
    }
    while (true) {
        if (threadIdx.x == 0) {
            s_item = atomicAdd(work, 1);
            s_score = 0;
        }
        __syncthreads();
        const gc_i64 item = s_item;
        if (item >= batch) return;
        const int b = order[item];
        sds_ego g;
        g.row_start = row_start;
        g.row_deg = row_deg;
        g.nbr = nbr;
        g.parent = parent;
        g.aux = aux;
        g.r0 = (int)row_base[b];
        g.d = (int)(row_base[b + 1] - row_base[b]);
        for (int i = threadIdx.x; i < g.d; i += blockDim.x) {
            parent[g.r0 + i] = g.r0 + i;
            if (model != SDS_CORE) aux[g.r0 + i] = 0;
        }
        if (model == SDS_CORE) sds_coreness(g, &s_changed);
        if (model == SDS_TRUSS) {
            const gc_i64 e0 = edge_base[b];
            const int ne = (int)(edge_base[b + 1] - e0);
            sds_peel(g, e0, ne, stop_level, eid, el_i, el_j, sup, state, qa, qb, &s_truss);
            for (int e = threadIdx.x; e < ne; e += blockDim.x) {
                if (state[e0 + e] != SDS_ALIVE) continue;
                const int ri = g.r0 + el_i[e0 + e], rj = g.r0 + el_j[e0 + e];
                aux[ri] = 1;
                aux[rj] = 1;
                sds_uf_union(parent, ri, rj);
            }
        } else {
            __syncthreads();
            sds_union_rows(g, model, k);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < g.d; i += blockDim.x) parent[g.r0 + i] = sds_uf_find(parent, g.r0 + i);
        __syncthreads();
        if (model == SDS_COMP) {
            for (int i = threadIdx.x; i < g.d; i += blockDim.x) atomicAdd(&aux[parent[g.r0 + i]], 1);
            __syncthreads();
        }
        int mine = 0;
        for (int i = threadIdx.x; i < g.d; i += blockDim.x) {
            const int r = g.r0 + i, root = parent[r];
            const bool member = model == SDS_COMP ? aux[root] >= k : model == SDS_CORE ? aux[r] >= k : aux[r] == 1;
            if (!member)
                parent[r] = -1;
            else if (root == r)
                ++mine;
        }
        if (mine) atomicAdd(&s_score, mine);
        __syncthreads();
        if (threadIdx.x == 0) score[b] = s_score;
        __syncthreads();
    }
}

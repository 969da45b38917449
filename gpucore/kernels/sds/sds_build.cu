// sds_build.cu: the ego CSRs of a batch, side by side in the arena (gpucore/sds/layout.py).
//
// 1. sds_gather_rows (a warp per ego-network b): the ego degree of every local vertex i (the
//    support of slot (v_b, u_i)) and the owner of every flat row.
//    (host: row_start = exclusive prefix sum of row_deg over the batch, CuPy's cumsum)
// 2. sds_fill_rows (a warp per flat row r = local vertex i of ego b, global u): the local ids j of
//    N(u) & N(v_b) in ascending order, written at row_start[r]; the warp scans the shorter list 32
//    entries at a time, each lane binary-searches its entry in the other list, and the hits are
//    compacted in order with a ballot (ascending global ids give ascending local ids, because local
//    ids are positions in v_b's sorted row). row_lower[r] counts the entries < i. This replaces the
//    paper's atomic degree count + single-thread fill (Algorithm 2): the supports give the degrees,
//    every row is built independently and comes out sorted.
//    (host, truss: row_edge = exclusive prefix sum of row_deg - row_lower)
// 3. sds_edge_ids (truss; a warp per flat row): the local edge id of every slot and the endpoints
//    el_i < el_j of every edge; edges are numbered in (i, j) order within their ego-network.
// Twins: gpucore/sds/kernels_cpu.py gather_rows, fill_rows, edge_ids.
#include "sds_common.cuh"

extern "C" __global__ void sds_gather_rows(const gc_i64* __restrict__ indptr, const int* __restrict__ sup,
                                           const int* __restrict__ vertices, gc_i64 batch,
                                           const gc_i64* __restrict__ row_base, int* __restrict__ row_deg,
                                           int* __restrict__ row_owner) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    for (gc_i64 b = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; b < batch; b += warps) {
        const gc_i64 s0 = indptr[vertices[b]], r0 = row_base[b], d = row_base[b + 1] - r0;
        for (gc_i64 i = lane; i < d; i += 32) {
            row_deg[r0 + i] = sup[s0 + i];
            row_owner[r0 + i] = (int)b;
        }
    }
}

extern "C" __global__ void sds_fill_rows(const gc_i64* __restrict__ indptr, const int* __restrict__ adj,
                                         const int* __restrict__ vertices, const gc_i64* __restrict__ row_base,
                                         const int* __restrict__ row_owner, const gc_i64* __restrict__ row_start,
                                         const int* __restrict__ row_deg, gc_i64 rows, int* __restrict__ nbr,
                                         int* __restrict__ row_lower, int* __restrict__ errors) {
    const int lane = threadIdx.x & 31;
    const unsigned below = (1u << lane) - 1u;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    for (gc_i64 r = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
        const int b = row_owner[r];
        const int v = vertices[b];
        const int i = (int)(r - row_base[b]);
        const gc_i64 v0 = indptr[v], v1 = indptr[v + 1];
        const int u = adj[v0 + i];
        const gc_i64 u0 = indptr[u], u1 = indptr[u + 1];
        gc_i64 pos = row_start[r];
        int lower = 0;
        if (row_deg[r] > 0) {
            const bool scan_u = (u1 - u0) <= (v1 - v0);
            const gc_i64 s0 = scan_u ? u0 : v0, s1 = scan_u ? u1 : v1;
            for (gc_i64 base = s0; base < s1; base += 32) {
                const gc_i64 x = base + lane;
                int j = -1;
                if (x < s1) {
                    if (scan_u) {
                        const gc_i64 p = sds_find(adj, v0, v1, adj[x]);
                        j = p >= 0 ? (int)(p - v0) : -1;
                    } else {
                        j = sds_find(adj, u0, u1, adj[x]) >= 0 ? (int)(x - v0) : -1;
                    }
                }
                const unsigned hit = __ballot_sync(SDS_FULL, j >= 0);
                if (j >= 0) nbr[pos + __popc(hit & below)] = j;
                lower += __popc(__ballot_sync(SDS_FULL, j >= 0 && j < i));
                pos += __popc(hit);
            }
        }
        if (lane == 0) {
            row_lower[r] = lower;
            if (pos - row_start[r] != row_deg[r]) errors[SDS_ERR_ROW] = 1;
        }
    }
}

extern "C" __global__ void sds_edge_ids(const int* __restrict__ row_owner, const gc_i64* __restrict__ row_base,
                                        const gc_i64* __restrict__ edge_base, const gc_i64* __restrict__ row_start,
                                        const int* __restrict__ row_deg, const int* __restrict__ row_lower,
                                        const gc_i64* __restrict__ row_edge, gc_i64 rows, const int* __restrict__ nbr,
                                        int* __restrict__ eid, int* __restrict__ el_i, int* __restrict__ el_j) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    for (gc_i64 r = ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
        const int b = row_owner[r];
        const gc_i64 rb = row_base[b], e0 = edge_base[b];
        const int i = (int)(r - rb);
        const gc_i64 s0 = row_start[r], up0 = s0 + row_lower[r];
        for (gc_i64 x = s0 + lane; x < s0 + row_deg[r]; x += 32) {
            const int j = nbr[x];
            if (j > i) {
                const gc_i64 e = row_edge[r] - e0 + (x - up0);
                eid[x] = (int)e;
                el_i[e0 + e] = i;
                el_j[e0 + e] = j;
            } else {
                const gc_i64 rj = rb + j;
                const gc_i64 t0 = row_start[rj] + row_lower[rj];
                const gc_i64 p = sds_lower_bound(nbr, t0, row_start[rj] + row_deg[rj], i);
                eid[x] = (int)(row_edge[rj] - e0 + (p - t0));
            }
        }
    }
}

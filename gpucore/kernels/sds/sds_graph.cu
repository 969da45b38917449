// sds_graph.cu: the global steps of structural diversity search (gpucore/sds/cuda.py).
//
// sds_supports: sup[s] = |N(u) & N(v)| for every slot s = (u, v) of the simple CSR (the triangle
//   listing every ego-network is built from: the supports are the ego degrees). A warp takes 32
//   consecutive slots: each lane finds its slot's row (binary search in indptr), then for every
//   slot with u < v the warp intersects the two sorted rows (lanes scan the shorter, binary-search
//   the longer), and lane 0 writes the count to the slot and to its mirror (v, u). Over several
//   devices (part p of P), only the tiles t = p (mod P) of 32 slots: sup must start zeroed, and the
//   sum over the parts is the whole (each pair is counted by the part of its slot with u < v).
// sds_counts: per vertex (a thread each), the slots with sup >= threshold and |E(G_v)| = sum / 2.
// Twins: gpucore/sds/kernels_cpu.py edge_supports, ego_counts.
#include "sds_common.cuh"

extern "C" __global__ void sds_supports(const gc_i64* __restrict__ indptr, const int* __restrict__ adj, gc_i64 n,
                                        gc_i64 slots, gc_i64 part, gc_i64 parts, int* __restrict__ sup,
                                        int* __restrict__ errors) {
    const int lane = threadIdx.x & 31;
    const gc_i64 warps = ((gc_i64)gridDim.x * blockDim.x) >> 5;
    const gc_i64 first = ((((gc_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * parts + part) * 32;
    for (gc_i64 tile = first; tile < slots; tile += warps * parts * 32) {
        const gc_i64 mine = tile + lane;
        int my_u = 0, my_v = 0;
        if (mine < slots) {
            my_u = (int)sds_owner(indptr, n, mine);
            my_v = adj[mine];
        }
        const int count = (int)((slots - tile) < 32 ? (slots - tile) : 32);
        for (int x = 0; x < count; ++x) {
            const int u = __shfl_sync(SDS_FULL, my_u, x);
            const int v = __shfl_sync(SDS_FULL, my_v, x);
            if (v < u) continue;  // the mirror slot (v, u) writes this one
            const int c = sds_warp_intersect_count(adj, indptr[u], indptr[u + 1], indptr[v], indptr[v + 1]);
            if (lane == 0) {
                sup[tile + x] = c;
                const gc_i64 mirror = sds_find(adj, indptr[v], indptr[v + 1], u);
                if (mirror >= 0)
                    sup[mirror] = c;
                else
                    errors[SDS_ERR_MIRROR] = 1;
            }
        }
    }
}

extern "C" __global__ void sds_counts(const gc_i64* __restrict__ indptr, const int* __restrict__ sup, gc_i64 n,
                                      int threshold, gc_i64* __restrict__ count, gc_i64* __restrict__ edges) {
    const gc_i64 stride = (gc_i64)gridDim.x * blockDim.x;
    for (gc_i64 v = (gc_i64)blockIdx.x * blockDim.x + threadIdx.x; v < n; v += stride) {
        gc_i64 c = 0, e = 0;
        for (gc_i64 s = indptr[v]; s < indptr[v + 1]; ++s) {
            const int x = sup[s];
            e += x;
            c += x >= threshold;
        }
        count[v] = c;
        edges[v] = e / 2;
    }
}

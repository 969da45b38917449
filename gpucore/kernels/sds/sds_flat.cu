// sds_flat.cu: the steps of sds_ego.cuh for the giant ego-networks of a batch, with the whole grid
// sweeping their rows and edges (the prefix 0 .. G-1 of the batch: rows [0, rows), edges [0, edges)).
// A single ego-network of millions of edges would leave one block working alone; here every SM
// shares it. The host (gpucore/sds/cuda.py) drives the rounds: H-index rounds until no change,
// truss levels and PKT sub-rounds, reading the counters back between launches. Queues hold flat
// edge ids; an item finds its ego-network by binary search in row_base / edge_base.
// counters: [0] ncurr, [1] nnext, [2] low (the least support of an alive edge off the level),
// [3] changed (H-index round).
#include "sds_ego.cuh"

#define SDS_GRID_THREADS ((gc_i64)gridDim.x * blockDim.x)
#define SDS_GRID_WARPS (SDS_GRID_THREADS >> 5)
#define SDS_THREAD_ID ((gc_i64)blockIdx.x * blockDim.x + threadIdx.x)

// The ego-network of flat position p in base[0..giants]: the largest b with base[b] <= p.
__device__ __forceinline__ int sds_ego_of(const gc_i64* base, gc_i64 giants, gc_i64 p) {
    gc_i64 lo = 0, hi = giants - 1;
    while (lo < hi) {
        const gc_i64 mid = (lo + hi + 1) >> 1;
        if (base[mid] <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (int)lo;
}

#define SDS_ARENA                                                                                                   \
    const sds_arena a = {row_base, edge_base, row_start, row_deg, row_owner, nbr, eid, el_i, el_j, sup, state,     \
                         parent, aux}
#define SDS_ARENA_PARAMS                                                                                            \
    const gc_i64 *__restrict__ row_base, const gc_i64 *__restrict__ edge_base,                                      \
        const gc_i64 *__restrict__ row_start, const int *__restrict__ row_deg, const int *__restrict__ row_owner, \
        const int *__restrict__ nbr, const int *__restrict__ eid, const int *__restrict__ el_i,                     \
        const int *__restrict__ el_j, int *__restrict__ sup, unsigned char *__restrict__ state,                    \
        int *__restrict__ parent, int *__restrict__ aux

extern "C" __global__ void sds_flat_init(int model, gc_i64 rows, SDS_ARENA_PARAMS) {
    for (gc_i64 r = SDS_THREAD_ID; r < rows; r += SDS_GRID_THREADS) {
        parent[r] = (int)r;
        aux[r] = model == SDS_CORE ? row_deg[r] : 0;
    }
}

// One H-index round over every row (a warp per row); counters[3] = 1 if a value went down.
extern "C" __global__ void sds_flat_hindex(gc_i64 rows, int* __restrict__ counters, SDS_ARENA_PARAMS) {
    SDS_ARENA;
    for (gc_i64 r = SDS_THREAD_ID >> 5; r < rows; r += SDS_GRID_WARPS)
        if (sds_hindex_row(a, (int)r, (int)row_base[row_owner[r]]) && (threadIdx.x & 31) == 0) counters[3] = 1;
}

extern "C" __global__ void sds_flat_union(int model, int k, gc_i64 rows, SDS_ARENA_PARAMS) {
    SDS_ARENA;
    for (gc_i64 r = SDS_THREAD_ID >> 5; r < rows; r += SDS_GRID_WARPS)
        sds_union_row(a, model, k, (int)r, (int)row_base[row_owner[r]]);
}

extern "C" __global__ void sds_flat_supports(int stop_level, gc_i64 giants, gc_i64 edges, SDS_ARENA_PARAMS) {
    SDS_ARENA;
    for (gc_i64 f = SDS_THREAD_ID >> 5; f < edges; f += SDS_GRID_WARPS) {
        const int b = sds_ego_of(edge_base, giants, f);
        sds_edge_support(a, stop_level, (int)(f - edge_base[b]), (int)row_base[b], edge_base[b]);
    }
}

extern "C" __global__ void sds_flat_file(int level, gc_i64 edges, int* __restrict__ curr, int* __restrict__ counters,
                                         SDS_ARENA_PARAMS) {
    SDS_ARENA;
    for (gc_i64 f = SDS_THREAD_ID; f < edges; f += SDS_GRID_THREADS)
        sds_file_edge(a, f, level, curr, 0, (int)f, &counters[0], &counters[2]);
}

extern "C" __global__ void sds_flat_peel(int level, gc_i64 giants, gc_i64 ncurr, const int* __restrict__ curr,
                                         int* __restrict__ next, int* __restrict__ counters, SDS_ARENA_PARAMS) {
    SDS_ARENA;
    for (gc_i64 q = SDS_THREAD_ID >> 5; q < ncurr; q += SDS_GRID_WARPS) {
        const gc_i64 f = curr[q];
        const int b = sds_ego_of(edge_base, giants, f);
        const gc_i64 e0 = edge_base[b];
        sds_peel_edge(a, (int)(f - e0), (int)row_base[b], e0, level, next, &counters[1], 0, e0);
    }
}

// curr edges become DEAD, next edges become CURR.
extern "C" __global__ void sds_flat_retire(gc_i64 ncurr, const int* __restrict__ curr, gc_i64 nnext,
                                           const int* __restrict__ next, unsigned char* __restrict__ state) {
    for (gc_i64 q = SDS_THREAD_ID; q < ncurr + nnext; q += SDS_GRID_THREADS) {
        if (q < ncurr)
            state[curr[q]] = SDS_DEAD;
        else
            state[next[q - ncurr]] = SDS_CURR;
    }
}

extern "C" __global__ void sds_flat_union_alive(gc_i64 giants, gc_i64 edges, SDS_ARENA_PARAMS) {
    SDS_ARENA;
    for (gc_i64 f = SDS_THREAD_ID; f < edges; f += SDS_GRID_THREADS)
        sds_union_alive(a, f, (int)row_base[sds_ego_of(edge_base, giants, f)]);
}

extern "C" __global__ void sds_flat_roots(gc_i64 rows, int* __restrict__ parent) {
    for (gc_i64 r = SDS_THREAD_ID; r < rows; r += SDS_GRID_THREADS) parent[r] = sds_uf_find(parent, (int)r);
}

extern "C" __global__ void sds_flat_sizes(gc_i64 rows, const int* __restrict__ parent, int* __restrict__ aux) {
    for (gc_i64 r = SDS_THREAD_ID; r < rows; r += SDS_GRID_THREADS) atomicAdd(&aux[parent[r]], 1);
}

extern "C" __global__ void sds_flat_count(int model, int k, gc_i64 rows, int* __restrict__ score, SDS_ARENA_PARAMS) {
    SDS_ARENA;
    for (gc_i64 r = SDS_THREAD_ID; r < rows; r += SDS_GRID_THREADS)
        if (sds_label_row(a, model, k, (int)r)) atomicAdd(&score[row_owner[r]], 1);
}

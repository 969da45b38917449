// sds_score.cu: the score of the ego-networks start .. batch-1 of a batch, a thread block per
// ego-network (the paper's Fig. 1): blocks pull the next ego-network from a work counter, the
// largest first (the batch is stored largest first), as the paper's blocks take the next
// ego-network when they finish. Inside a block the steps of sds_ego.cuh run with the paper's
// levels of parallelism: a warp per vertex (union-find rows, H-index), a warp per edge (supports,
// peeling), a thread per edge (filing, union of the truss edges), a thread per vertex (roots,
// labels). Ego-networks 0 .. start-1 (the giant ones) go to the whole-device kernels of sds_flat.cu.
#include "sds_ego.cuh"

struct sds_block_shared {
    int item, changed, score, ncurr, nnext, low, removed;
};

__device__ void sds_block_coreness(const sds_arena& a, int r0, int d, sds_block_shared* sh) {
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    while (true) {
        if (threadIdx.x == 0) sh->changed = 0;
        __syncthreads();
        for (int i = warp; i < d; i += warps)
            if (sds_hindex_row(a, r0 + i, r0) && (threadIdx.x & 31) == 0) sh->changed = 1;
        __syncthreads();
        const int changed = sh->changed;
        __syncthreads();
        if (!changed) return;
    }
}

__device__ void sds_block_peel(const sds_arena& a, int r0, gc_i64 e0, int ne, int stop_level, int* qa, int* qb,
                               sds_block_shared* sh) {
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int e = warp; e < ne; e += warps) sds_edge_support(a, stop_level, e, r0, e0);
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
        for (int e = threadIdx.x; e < ne; e += blockDim.x)
            sds_file_edge(a, e0 + e, level, curr, e0, e, &sh->ncurr, &sh->low);
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
            for (int q = warp; q < ncurr; q += warps)
                sds_peel_edge(a, curr[e0 + q], r0, e0, level, next, &sh->nnext, e0, 0);
            __syncthreads();
            const int nnext = sh->nnext;
            for (int q = threadIdx.x; q < ncurr; q += blockDim.x) a.state[e0 + curr[e0 + q]] = SDS_DEAD;
            for (int q = threadIdx.x; q < nnext; q += blockDim.x) a.state[e0 + next[e0 + q]] = SDS_CURR;
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

extern "C" __global__ void sds_score(int model, int k, int stop_level, gc_i64 start, gc_i64 batch,
                                     int* __restrict__ work, const gc_i64* __restrict__ row_base,
                                     const gc_i64* __restrict__ edge_base, const gc_i64* __restrict__ row_start,
                                     const int* __restrict__ row_deg, const int* __restrict__ nbr,
                                     const int* __restrict__ eid, const int* __restrict__ el_i,
                                     const int* __restrict__ el_j, int* __restrict__ sup,
                                     unsigned char* __restrict__ state, int* __restrict__ qa, int* __restrict__ qb,
                                     int* __restrict__ parent, int* __restrict__ aux, int* __restrict__ score,
                                     int* __restrict__ errors) {
    __shared__ sds_block_shared sh;
    if (blockDim.x & 31) {
        if (threadIdx.x == 0) errors[SDS_ERR_BLOCK] = 1;
        return;
    }
    const sds_arena a = {row_base, edge_base, row_start, row_deg, nullptr, nbr, eid, el_i, el_j, sup, state,
                         parent, aux};
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    while (true) {
        if (threadIdx.x == 0) {
            sh.item = atomicAdd(work, 1);
            sh.score = 0;
        }
        __syncthreads();
        const gc_i64 b = start + sh.item;
        if (b >= batch) return;
        const int r0 = (int)row_base[b], d = (int)(row_base[b + 1] - row_base[b]);
        for (int i = threadIdx.x; i < d; i += blockDim.x) {
            parent[r0 + i] = r0 + i;
            aux[r0 + i] = model == SDS_CORE ? row_deg[r0 + i] : 0;
        }
        __syncthreads();
        if (model == SDS_TRUSS) {
            const gc_i64 e0 = edge_base[b];
            const int ne = (int)(edge_base[b + 1] - e0);
            sds_block_peel(a, r0, e0, ne, stop_level, qa, qb, &sh);
            for (int e = threadIdx.x; e < ne; e += blockDim.x) sds_union_alive(a, e0 + e, r0);
        } else {
            if (model == SDS_CORE) sds_block_coreness(a, r0, d, &sh);
            for (int i = warp; i < d; i += warps) sds_union_row(a, model, k, r0 + i, r0);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < d; i += blockDim.x) parent[r0 + i] = sds_uf_find(parent, r0 + i);
        __syncthreads();
        if (model == SDS_COMP) {
            for (int i = threadIdx.x; i < d; i += blockDim.x) atomicAdd(&aux[parent[r0 + i]], 1);
            __syncthreads();
        }
        int mine = 0;
        for (int i = threadIdx.x; i < d; i += blockDim.x) mine += sds_label_row(a, model, k, r0 + i);
        if (mine) atomicAdd(&sh.score, mine);
        __syncthreads();
        if (threadIdx.x == 0) score[b] = sh.score;
        __syncthreads();
    }
}

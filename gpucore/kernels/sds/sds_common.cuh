// sds_common.cuh: device helpers of structural diversity search (gpucore/sds; layout in layout.py).
//
// Sorted-list searches, the warp-cooperative intersection of two sorted ranges, and the lock-free
// union-find whose representative is the smallest member (hook the larger root under the smaller
// with atomicCAS; path halving only ever points a vertex at an older ancestor, so parent[x] <= x
// always holds and no cycle can form).
#ifndef SDS_COMMON_CUH
#define SDS_COMMON_CUH

#include "gc_random.cuh"

#define SDS_FULL 0xffffffffu

// model codes (gpucore.sds.bounds.MODEL_CODE) and truss edge states (gpucore.sds.layout)
#define SDS_COMP 0
#define SDS_CORE 1
#define SDS_TRUSS 2
#define SDS_ALIVE 0
#define SDS_CURR 1
#define SDS_NEXT 2
#define SDS_DEAD 3

// errors[] slots (the host raises on any nonzero entry)
#define SDS_ERR_ROW 0    // an ego-network row did not hold as many entries as its support
#define SDS_ERR_BLOCK 1  // a block-per-ego kernel was launched with a block that is not whole warps
#define SDS_ERR_MIRROR 2 // an edge (u, v) has no slot (v, u): the CSR is not symmetric

// First position p in [lo, hi) with a[p] >= x (hi if none); a[lo:hi] ascending.
__device__ __forceinline__ gc_i64 sds_lower_bound(const int* __restrict__ a, gc_i64 lo, gc_i64 hi, int x) {
    while (lo < hi) {
        const gc_i64 mid = (lo + hi) >> 1;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// Position of x in a[lo:hi], or -1.
__device__ __forceinline__ gc_i64 sds_find(const int* __restrict__ a, gc_i64 lo, gc_i64 hi, int x) {
    const gc_i64 p = sds_lower_bound(a, lo, hi, x);
    return (p < hi && a[p] == x) ? p : -1;
}

// The row u of CSR slot s: the largest u in [0, n) with indptr[u] <= s.
__device__ __forceinline__ gc_i64 sds_owner(const gc_i64* __restrict__ indptr, gc_i64 n, gc_i64 s) {
    gc_i64 lo = 0, hi = n - 1;
    while (lo < hi) {
        const gc_i64 mid = (lo + hi + 1) >> 1;
        if (indptr[mid] <= s)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

__device__ __forceinline__ int sds_warp_sum(int x) {
    for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(SDS_FULL, x, d);
    return x;
}

// |a[a0:a1] & a[b0:b1]| by the whole warp: each lane takes elements of the shorter range and
// binary-searches them in the longer one. Every lane returns the count.
__device__ __forceinline__ int sds_warp_intersect_count(const int* __restrict__ a, gc_i64 a0, gc_i64 a1, gc_i64 b0,
                                                        gc_i64 b1) {
    if (a1 - a0 > b1 - b0) {
        gc_i64 t = a0;
        a0 = b0;
        b0 = t;
        t = a1;
        a1 = b1;
        b1 = t;
    }
    const int lane = threadIdx.x & 31;
    int c = 0;
    for (gc_i64 x = a0 + lane; x < a1; x += 32) c += sds_find(a, b0, b1, a[x]) >= 0;
    return sds_warp_sum(c);
}

__device__ __forceinline__ int sds_uf_find(int* parent, int x) {
    int p = parent[x];
    while (p != x) {
        const int g = parent[p];
        if (g != p) parent[x] = g;  // path halving: g is an ancestor of x too
        x = p;
        p = parent[x];
    }
    return x;
}

__device__ __forceinline__ void sds_uf_union(int* parent, int a, int b) {
    while (true) {
        a = sds_uf_find(parent, a);
        b = sds_uf_find(parent, b);
        if (a == b) return;
        if (a > b) {
            const int t = a;
            a = b;
            b = t;
        }
        const int old = atomicCAS(&parent[b], b, a);  // hook root b under the smaller root a
        if (old == b) return;
        b = old;  // b was hooked meanwhile: retry from where it points
    }
}

#endif

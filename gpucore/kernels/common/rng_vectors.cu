// rng_vectors.cu: evaluates the keyed hash on the GPU for the test vectors of gpucore.random.
#include "gc_random.cuh"

// out[i] = mix(words[i*arity .. i*arity+arity-1]) for arity in 1..5.
extern "C" __global__ void gc_mix_rows(const gc_u64* words, int arity, int rows, gc_u64* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const gc_u64* w = words + (gc_i64)i * arity;
    gc_u64 h = 0ULL;
    for (int k = 0; k < arity; ++k) h = gc_step(h, w[k]);
    out[i] = h;
}

// uniform, bernoulli and index draws of given hashes (to pin the derived functions too).
extern "C" __global__ void gc_derived(const gc_u64* h, const float* p, const gc_u64* n, int rows, double* u,
                                      int* coin, gc_i64* idx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    u[i] = gc_uniform(h[i]);
    coin[i] = gc_bernoulli(h[i], p[i]) ? 1 : 0;
    idx[i] = gc_index_below(h[i], n[i]);
}

// World functions: IC liveness of arc ids[i], LT threshold of node ids[i], fixed-point weight of w[i].
extern "C" __global__ void gc_worlds(gc_u64 world_seed, const gc_u64* ids, const float* w, int rows, int* live,
                                     gc_i64* threshold, gc_i64* q) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    live[i] = gc_ic_live(world_seed, ids[i], w[i]) ? 1 : 0;
    threshold[i] = gc_lt_threshold(world_seed, ids[i]);
    q[i] = gc_lt_fixed_weight(w[i]);
}

// Geometric jumps: ln U of hash h[i], and the jump of h[i] at rlq[i] (= 1 / ln(1 - p)) over d[i] coins.
extern "C" __global__ void gc_skips(const gc_u64* h, const double* rlq, const gc_i64* d, int rows, double* log_u,
                                    gc_i64* jump) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    log_u[i] = gc_log_uniform(h[i]);
    jump[i] = gc_skip_jump(h[i], rlq[i], d[i]);
}

// ln(1 + x[i]) by the series of gc_random.cuh (a skipping node's rlq is 1 / log1p_series(-p)).
extern "C" __global__ void gc_log1p_rows(const double* x, int rows, double* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    out[i] = gc_log1p_series(x[i]);
}

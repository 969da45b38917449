// gc_random.cuh: the keyed hash of gpucore.random, as CUDA device functions.
//
// Definition (docs/randomness.md): fmix64 is SplitMix64's output function,
//   step(h, w) = fmix64((h ^ w) + 0x9E3779B97F4A7C15),  mix(w0..wr) = step(..step(step(0,w0),w1)..,wr)
//   uniform(h) = (h >> 11) * 2^-53,  bernoulli(h, p) = uniform(h) < (double)p,  index(h, n) = h % n.
// Every function must give bit-identical results to gpucore/random/hashing.py; the test vectors
// are checked on the GPU by tests/gpu/test_random_cuda.py.
#ifndef GC_RANDOM_CUH
#define GC_RANDOM_CUH

typedef unsigned long long gc_u64;
typedef long long gc_i64;

#define GC_GOLDEN 0x9E3779B97F4A7C15ULL

// Stream identifiers: mirror of gpucore/random/streams.py (never renumber).
#define GC_STREAM_COIN 1ULL
#define GC_STREAM_ROOT 2ULL
#define GC_STREAM_LT_CHOICE 3ULL
#define GC_STREAM_ROOT_COUNT 4ULL
#define GC_STREAM_WEIGHT 16ULL
#define GC_STREAM_COST 17ULL
#define GC_STREAM_GENERATOR 18ULL
#define GC_STREAM_ORACLE 19ULL
#define GC_STREAM_WORLD 20ULL
#define GC_STREAM_SKETCH_EDGE 40ULL
#define GC_STREAM_SKETCH_X 41ULL
#define GC_STREAM_SKETCH_REGISTER 42ULL
#define GC_STREAM_SKETCH_COIN 43ULL

__device__ __forceinline__ gc_u64 gc_fmix64(gc_u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ gc_u64 gc_step(gc_u64 h, gc_u64 w) { return gc_fmix64((h ^ w) + GC_GOLDEN); }

__device__ __forceinline__ gc_u64 gc_mix1(gc_u64 a) { return gc_step(0ULL, a); }
__device__ __forceinline__ gc_u64 gc_mix2(gc_u64 a, gc_u64 b) { return gc_step(gc_mix1(a), b); }
__device__ __forceinline__ gc_u64 gc_mix3(gc_u64 a, gc_u64 b, gc_u64 c) { return gc_step(gc_mix2(a, b), c); }
__device__ __forceinline__ gc_u64 gc_mix4(gc_u64 a, gc_u64 b, gc_u64 c, gc_u64 d) {
    return gc_step(gc_mix3(a, b, c), d);
}
__device__ __forceinline__ gc_u64 gc_mix5(gc_u64 a, gc_u64 b, gc_u64 c, gc_u64 d, gc_u64 e) {
    return gc_step(gc_mix4(a, b, c, d), e);
}

__device__ __forceinline__ double gc_uniform(gc_u64 h) { return (double)(h >> 11) * 1.1102230246251565e-16; }

__device__ __forceinline__ bool gc_bernoulli(gc_u64 h, float p) { return gc_uniform(h) < (double)p; }

__device__ __forceinline__ gc_i64 gc_index_below(gc_u64 h, gc_u64 n) { return (gc_i64)(h % n); }

// World realizations (gpucore/random/worlds.py): IC arc liveness, LT fixed-point weights/thresholds.
#define GC_LT_FIXED_BITS 40
#define GC_LT_FIXED_ONE (1LL << GC_LT_FIXED_BITS)

__device__ __forceinline__ bool gc_ic_live(gc_u64 world_seed, gc_u64 eid, float p) {
    return gc_bernoulli(gc_mix2(world_seed, eid), p);
}
__device__ __forceinline__ gc_i64 gc_lt_threshold(gc_u64 world_seed, gc_u64 v) {
    return (gc_i64)(gc_mix2(world_seed, v) >> (64 - GC_LT_FIXED_BITS));
}
__device__ __forceinline__ gc_i64 gc_lt_fixed_weight(float w) {
    return (gc_i64)floor((double)w * 1099511627776.0);
}
__device__ __forceinline__ gc_i64 gc_lt_draw(gc_u64 h) { return (gc_i64)(h >> (64 - GC_LT_FIXED_BITS)); }

#endif  // GC_RANDOM_CUH

// sketch_common.cuh: DiFuseR's per-arc live test, edge hash and register start (gpucore.im.sketch.hashing).
//
// Registers: int8 [n, J] vertex-major (row u = u's registers in increasing world order), -1 = visited.
// A kernel covers the worlds j0 .. j0 + blockDim.x - 1 of the row (a slice of at most 1024 worlds);
// thread t handles world j = j0 + t. Per-world keys come from the host (one 64-bit word each):
//   live_keys[j]: X_r (xor sampling) or the coin prefix mix(seed, SKETCH_COIN, r) (keyed);
//   register_keys[j]: mix(seed, SKETCH_REGISTER, r).
// Arc e (out-CSR position, the original edge id): threshold W_e = floor(p_e 2^31), hash h(e) (xor).
#ifndef SKETCH_COMMON_CUH
#define SKETCH_COMMON_CUH

#include "gc_random.cuh"

#define SK_FULL 0xffffffffu
#define SK_VISITED ((signed char)-1)

// Arc e live in the world of `world_key`: xor: (X_r ^ h(e)) < W_e; keyed: (step(prefix, e) >> 33) < W_e.
__device__ __forceinline__ bool sk_live(int keyed, gc_u64 world_key, unsigned int hash, gc_i64 e,
                                        unsigned int threshold) {
    const gc_u64 x = keyed ? (gc_step(world_key, (gc_u64)e) >> 33) : (world_key ^ (gc_u64)hash);
    return x < (gc_u64)threshold;
}

// Initial register of u in a world: clz64(step(register_key, u)) (64 for a zero hash).
__device__ __forceinline__ signed char sk_register_start(gc_u64 register_key, gc_i64 u) {
    return (signed char)__clzll((long long)gc_step(register_key, (gc_u64)u));
}

__device__ __forceinline__ unsigned int sk_rotl32(unsigned int x, int r) { return (x << r) | (x >> (32 - r)); }

__device__ __forceinline__ unsigned int sk_murmur_block(unsigned int h, unsigned int k) {
    k *= 0xCC9E2D51u;
    k = sk_rotl32(k, 15);
    k *= 0x1B873593u;
    h ^= k;
    h = sk_rotl32(h, 13);
    return h * 5u + 0xE6546B64u;
}

// h(u, v) = MurmurHash3_x86_32(u || v, seed32) mod 2^31, u and v as little-endian 32-bit words.
__device__ __forceinline__ unsigned int sk_edge_hash(unsigned int u, unsigned int v, unsigned int seed32) {
    unsigned int h = sk_murmur_block(sk_murmur_block(seed32, u), v);
    h ^= 8u;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h & 0x7FFFFFFFu;
}

#endif  // SKETCH_COMMON_CUH

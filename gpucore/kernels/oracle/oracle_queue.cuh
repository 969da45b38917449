// oracle_queue.cuh: queue-slot reservation shared by the oracle's level-synchronous kernels.
#ifndef ORACLE_QUEUE_CUH
#define ORACLE_QUEUE_CUH
#include "gc_random.cuh"

// One slot of a queue whose length counter every thread shares. On the GPU the lanes of a warp
// that push together take consecutive slots with a single atomicAdd (warp-aggregated: a level
// pushes millions of entries onto one counter). Elsewhere (the sequential emulator) one atomicAdd.
__device__ __forceinline__ gc_u64 oracle_reserve(gc_u64* counter) {
#ifdef __CUDA_ARCH__
    const unsigned active = __activemask();
    const unsigned peers = __match_any_sync(active, (unsigned long long)counter);  // lanes on this counter
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    const int leader = __ffs((int)peers) - 1;
    gc_u64 base = 0ULL;
    if ((int)lane == leader) base = atomicAdd(counter, (gc_u64)__popc(peers));
    base = __shfl_sync(active, base, leader);
    return base + (gc_u64)__popc(peers & ((1u << lane) - 1u));
#else
    return atomicAdd(counter, 1ULL);
#endif
}

#endif  // ORACLE_QUEUE_CUH

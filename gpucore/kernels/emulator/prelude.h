// The emulator's CUDA prelude: CUDA's names (__global__, threadIdx, __shared__, warp collectives,
// atomics, intrinsics ...) as host C++, placed before the unmodified .cu sources of a module.
// Threads of a block are user-level contexts on one OS thread, switched with _setjmp/_longjmp.
// Compiled by gpucore.kernels.emulator (its docstring states the execution model), which defines
// EMU_MAX_DYNAMIC_SHARED (bytes of dynamic shared memory per block) before this file.
#ifndef EMU_MAX_DYNAMIC_SHARED
#error "EMU_MAX_DYNAMIC_SHARED must be defined (gpucore.kernels.emulator defines it)"
#endif
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <setjmp.h>
#include <ucontext.h>
#include <sys/mman.h>
#define GPUCORE_EMULATOR 1
using std::floor; using std::ceil;
struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };
static uint3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static const int warpSize = 32;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __shared__ static
#define __constant__ static
#define __align__(n) alignas(n)
#define __launch_bounds__(...)

// ---- threads of the current block: user-level contexts, switched with _setjmp/_longjmp -------
enum { EMU_E_CONFIG = 1, EMU_E_SMEM = 2, EMU_E_NARGS = 3, EMU_E_LANE = 11, EMU_E_LIMIT = 12, EMU_E_BLOCK = 13,
       EMU_E_DEADLOCK = 14, EMU_E_MISMATCH = 15, EMU_E_TRAP = 16, EMU_E_ASSERT = 17 };
struct emu_thread {
    jmp_buf jb;                        // where a suspended thread resumes
    jmp_buf start;                     // its parked trampoline (runs the next body from the top)
    int state;                         // 0 parked, 1 running or suspended, 2 returned
    const long long* wait_gen;         // waiting at a barrier until *wait_gen != wait_val
    long long wait_val;
};
static const int EMU_MAX_THREADS = 1024;
static const size_t EMU_STACK = 1 << 18;
static emu_thread emu_th[EMU_MAX_THREADS];
static int emu_slots = 0;              // threads with a stack and a parked trampoline
static int emu_cur = 0;                // linear id of the running thread
static unsigned emu_nthreads = 0;
static jmp_buf emu_sched;
static int emu_error = 0;
static long long emu_blocked = 0;      // threads waiting at a barrier that has not completed
static unsigned emu_returned = 0;      // threads of this block that returned
static unsigned long long emu_rng = 0; // 0: round robin, no preemption
static unsigned long long emu_preempt_below = 0;
static unsigned long long emu_flags = 0;  // 1: atomics are preemption points
static int emu_ops = 0;                // atomics/fences since the last switch
static long long emu_clock = 0;
extern "C" { const char* emu_assert_text = ""; const char* emu_assert_file = ""; int emu_assert_line = 0; }
static inline unsigned long long emu_next() {
    emu_rng ^= emu_rng << 13; emu_rng ^= emu_rng >> 7; emu_rng ^= emu_rng << 17; return emu_rng;
}
static inline void emu_yield() {
    if (!_setjmp(emu_th[emu_cur].jb)) _longjmp(emu_sched, 1);
}
[[noreturn]] static inline void emu_fail(int code) { emu_error = code; _longjmp(emu_sched, 1); }
static inline void emu_preempt() {
    if (emu_rng != 0ULL && (emu_next() >> 11) < emu_preempt_below) emu_yield();
}
static inline void emu_point(bool atomic) {
    if (!atomic || (emu_flags & 1ULL)) emu_preempt();
    if (++emu_ops >= 1024) emu_yield();
}
static inline void emu_wait(const long long* gen, long long g) {
    ++emu_blocked;
    emu_th[emu_cur].wait_gen = gen; emu_th[emu_cur].wait_val = g;
    do emu_yield(); while (*gen == g);  // the scheduler skips this thread until the barrier completes
    emu_th[emu_cur].wait_gen = nullptr;
}
[[noreturn]] static inline void __trap() { emu_fail(EMU_E_TRAP); }
[[noreturn]] static inline void emu_assert_failed(const char* text, const char* file, int line) {
    emu_assert_text = text; emu_assert_file = file; emu_assert_line = line; emu_fail(EMU_E_ASSERT);
}
#undef assert
#define assert(c) ((c) ? (void)0 : emu_assert_failed(#c, __FILE__, __LINE__))

// ---- warps: one barrier + exchange buffer each ------------------------------------------------
enum { EMU_SYNC = 1, EMU_SHFL, EMU_BALLOT, EMU_RADD, EMU_RMIN_U, EMU_RMAX_U, EMU_RMIN_S, EMU_RMAX_S, EMU_RAND,
       EMU_ROR, EMU_RXOR, EMU_MATCH_ANY, EMU_MATCH_ALL };
struct emu_warp {
    unsigned present, arrived, want, exited;  // lane masks
    int op; long long gen;
    unsigned long long x[32], out[32]; int src[32];
};
static emu_warp emu_warps[EMU_MAX_THREADS / 32];
static inline unsigned emu_lane() { return (unsigned)emu_cur & 31u; }
static void emu_complete(emu_warp& w) {
    const unsigned m = w.want;
    unsigned long long r = 0;
    switch (w.op) {
    case EMU_SYNC: return;
    case EMU_SHFL:
        for (int l = 0; l < 32; ++l)
            if (m >> l & 1u) { const int s = w.src[l]; w.out[l] = (s >= 0 && s < 32 && (m >> s & 1u)) ? w.x[s] : w.x[l]; }
        return;
    case EMU_MATCH_ANY:
        for (int l = 0; l < 32; ++l) if (m >> l & 1u) {
            unsigned peers = 0;
            for (int k = 0; k < 32; ++k) if ((m >> k & 1u) && w.x[k] == w.x[l]) peers |= 1u << k;
            w.out[l] = peers;
        }
        return;
    case EMU_MATCH_ALL: {
        int first = __builtin_ctz(m); r = m;
        for (int l = 0; l < 32; ++l) if ((m >> l & 1u) && w.x[l] != w.x[first]) r = 0;
        break;
    }
    case EMU_BALLOT: for (int l = 0; l < 32; ++l) if ((m >> l & 1u) && w.x[l]) r |= 1ULL << l; break;
    default: {
        bool first = true;
        for (int l = 0; l < 32; ++l) if (m >> l & 1u) {
            const unsigned long long v = w.x[l];
            if (first) { r = v; first = false; continue; }
            switch (w.op) {
            case EMU_RADD: r = (unsigned)(r + v); break;
            case EMU_RMIN_U: r = (unsigned)v < (unsigned)r ? v : r; break;
            case EMU_RMAX_U: r = (unsigned)v > (unsigned)r ? v : r; break;
            case EMU_RMIN_S: r = (int)v < (int)r ? v : r; break;
            case EMU_RMAX_S: r = (int)v > (int)r ? v : r; break;
            case EMU_RAND: r &= v; break;
            case EMU_ROR: r |= v; break;
            case EMU_RXOR: r ^= v; break;
            }
        }
    }
    }
    for (int l = 0; l < 32; ++l) w.out[l] = r;
}
// Every lane of mask (restricted to the warp's lanes) arrives with the same op and mask; the last
// one computes every lane's result, then all go on (one synchronization point, as on the GPU).
static unsigned long long emu_collective(unsigned mask, int op, unsigned long long value, int src) {
    emu_warp& w = emu_warps[emu_cur >> 5];
    const unsigned lane = emu_lane(), me = 1u << lane;
    mask &= w.present;
    if (!(mask & me)) emu_fail(EMU_E_MISMATCH);
    if (mask & w.exited) emu_fail(EMU_E_LANE);
    if (w.arrived == 0) { w.want = mask; w.op = op; }
    else if (mask != w.want || op != w.op) emu_fail(EMU_E_MISMATCH);
    w.x[lane] = value; w.src[lane] = src;
    w.arrived |= me;
    if (w.arrived == w.want) {
        emu_complete(w);
        emu_blocked -= __builtin_popcount(w.want) - 1;
        w.arrived = 0; ++w.gen;
        return w.out[lane];
    }
    emu_wait(&w.gen, w.gen);
    return w.out[lane];
}
template <typename T> static inline unsigned long long emu_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "warp exchange of a wide type");
    unsigned long long b = 0; std::memcpy(&b, &v, sizeof(T)); return b;
}
template <typename T> static inline T emu_from_bits(unsigned long long b) { T v; std::memcpy(&v, &b, sizeof(T)); return v; }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { emu_collective(mask, EMU_SYNC, 0, 0); }
static inline unsigned __ballot_sync(unsigned mask, int p) { return (unsigned)emu_collective(mask, EMU_BALLOT, p != 0, 0); }
static inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0u; }
static inline int __all_sync(unsigned mask, int p) {
    const unsigned m = mask & emu_warps[emu_cur >> 5].present;
    return __ballot_sync(mask, p) == m;
}
static inline unsigned __activemask() { const emu_warp& w = emu_warps[emu_cur >> 5]; return w.present & ~w.exited; }
template <typename T> static inline T emu_shfl(unsigned mask, T v, int src) {
    return emu_from_bits<T>(emu_collective(mask, EMU_SHFL, emu_bits(v), src));
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    const int l = (int)emu_lane();
    return emu_shfl(mask, v, (l & ~(width - 1)) + (src & (width - 1)));
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    const int l = (int)emu_lane();
    return emu_shfl(mask, v, (l & (width - 1)) < (int)d ? l : l - (int)d);
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    const int l = (int)emu_lane();
    return emu_shfl(mask, v, (l & (width - 1)) + (int)d >= width ? l : l + (int)d);
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
    const int l = (int)emu_lane(), s = l ^ m;
    return emu_shfl(mask, v, s >= ((l | (width - 1)) + 1) ? l : s);
}
template <typename T> static inline unsigned __match_any_sync(unsigned mask, T v) {
    return (unsigned)emu_collective(mask, EMU_MATCH_ANY, emu_bits(v), 0);
}
template <typename T> static inline unsigned __match_all_sync(unsigned mask, T v, int* pred) {
    const unsigned r = (unsigned)emu_collective(mask, EMU_MATCH_ALL, emu_bits(v), 0);
    *pred = r != 0u;
    return r;
}
static inline unsigned __reduce_add_sync(unsigned m, unsigned v) { return (unsigned)emu_collective(m, EMU_RADD, v, 0); }
static inline int __reduce_add_sync(unsigned m, int v) { return (int)(unsigned)emu_collective(m, EMU_RADD, (unsigned)v, 0); }
static inline unsigned __reduce_min_sync(unsigned m, unsigned v) { return (unsigned)emu_collective(m, EMU_RMIN_U, v, 0); }
static inline unsigned __reduce_max_sync(unsigned m, unsigned v) { return (unsigned)emu_collective(m, EMU_RMAX_U, v, 0); }
static inline int __reduce_min_sync(unsigned m, int v) { return (int)(unsigned)emu_collective(m, EMU_RMIN_S, (unsigned)v, 0); }
static inline int __reduce_max_sync(unsigned m, int v) { return (int)(unsigned)emu_collective(m, EMU_RMAX_S, (unsigned)v, 0); }
static inline unsigned __reduce_and_sync(unsigned m, unsigned v) { return (unsigned)emu_collective(m, EMU_RAND, v, 0); }
static inline unsigned __reduce_or_sync(unsigned m, unsigned v) { return (unsigned)emu_collective(m, EMU_ROR, v, 0); }
static inline unsigned __reduce_xor_sync(unsigned m, unsigned v) { return (unsigned)emu_collective(m, EMU_RXOR, v, 0); }

// ---- the block barrier ------------------------------------------------------------------------
struct emu_block_barrier { unsigned arrived; long long gen; int count, result; };
static emu_block_barrier emu_bar;
static inline int emu_syncthreads(int op, int pred) {  // op 0: count, 1: and, 2: or
    if (emu_returned) emu_fail(EMU_E_BLOCK);
    emu_bar.count += pred != 0;
    if (++emu_bar.arrived == emu_nthreads) {
        const int c = emu_bar.count;
        emu_bar.result = op == 0 ? c : op == 1 ? (c == (int)emu_nthreads) : (c != 0);
        emu_blocked -= emu_nthreads - 1;
        emu_bar.arrived = 0; emu_bar.count = 0; ++emu_bar.gen;
        return emu_bar.result;
    }
    emu_wait(&emu_bar.gen, emu_bar.gen);
    return emu_bar.result;
}
static inline void __syncthreads() { emu_syncthreads(0, 0); }
static inline int __syncthreads_count(int p) { return emu_syncthreads(0, p); }
static inline int __syncthreads_and(int p) { return emu_syncthreads(1, p); }
static inline int __syncthreads_or(int p) { return emu_syncthreads(2, p); }

// ---- dynamic shared memory (extern __shared__ T name[] is rewritten to point here) -------------
alignas(16) static unsigned char emu_dynamic_smem[EMU_MAX_DYNAMIC_SHARED];

// ---- fences, time, atomics (as CUDA declares them: other types do not compile) ---------------
static inline void __threadfence() { emu_point(false); }
static inline void __threadfence_block() { emu_point(false); }
static inline void __threadfence_system() { emu_point(false); }
static inline void __nanosleep(unsigned) { emu_yield(); }
static inline long long clock64() { return ++emu_clock; }
template <typename T> static inline T __ldg(const T* p) { return *p; }
#define EMU_RMW(name, T, expr) static inline T name(T* a, T v) { emu_point(true); T o = *a; *a = (expr); return o; }
EMU_RMW(atomicAdd, int, o + v) EMU_RMW(atomicAdd, unsigned, o + v) EMU_RMW(atomicAdd, unsigned long long, o + v)
EMU_RMW(atomicAdd, float, o + v) EMU_RMW(atomicAdd, double, o + v)
EMU_RMW(atomicSub, int, o - v) EMU_RMW(atomicSub, unsigned, o - v)
EMU_RMW(atomicExch, int, v) EMU_RMW(atomicExch, unsigned, v) EMU_RMW(atomicExch, unsigned long long, v)
EMU_RMW(atomicExch, float, v)
EMU_RMW(atomicMin, int, v < o ? v : o) EMU_RMW(atomicMin, unsigned, v < o ? v : o)
EMU_RMW(atomicMin, long long, v < o ? v : o) EMU_RMW(atomicMin, unsigned long long, v < o ? v : o)
EMU_RMW(atomicMax, int, v > o ? v : o) EMU_RMW(atomicMax, unsigned, v > o ? v : o)
EMU_RMW(atomicMax, long long, v > o ? v : o) EMU_RMW(atomicMax, unsigned long long, v > o ? v : o)
EMU_RMW(atomicInc, unsigned, o >= v ? 0u : o + 1u) EMU_RMW(atomicDec, unsigned, (o == 0u || o > v) ? v : o - 1u)
EMU_RMW(atomicAnd, int, o & v) EMU_RMW(atomicAnd, unsigned, o & v) EMU_RMW(atomicAnd, unsigned long long, o & v)
EMU_RMW(atomicOr, int, o | v) EMU_RMW(atomicOr, unsigned, o | v) EMU_RMW(atomicOr, unsigned long long, o | v)
EMU_RMW(atomicXor, int, o ^ v) EMU_RMW(atomicXor, unsigned, o ^ v) EMU_RMW(atomicXor, unsigned long long, o ^ v)
#undef EMU_RMW
#define EMU_CAS(T) static inline T atomicCAS(T* a, T c, T v) { emu_point(true); T o = *a; if (o == c) *a = v; return o; }
EMU_CAS(int) EMU_CAS(unsigned) EMU_CAS(unsigned long long) EMU_CAS(unsigned short)
#undef EMU_CAS
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicExch_block atomicExch
#define atomicMin_block atomicMin
#define atomicMax_block atomicMax
#define atomicCAS_block atomicCAS
#define atomicAnd_block atomicAnd
#define atomicOr_block atomicOr
#define atomicXor_block atomicXor
#define atomicCAS_system atomicCAS
#define atomicOr_system atomicOr

// ---- integer and bit intrinsics -----------------------------------------------------------------
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline unsigned __brev(unsigned x) {
    unsigned r = 0; for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i); return r;
}
static inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline float __int_as_float(int x) { return emu_from_bits<float>((unsigned)x); }
static inline float __uint_as_float(unsigned x) { return emu_from_bits<float>(x); }
static inline int __float_as_int(float x) { return (int)(unsigned)emu_bits(x); }
static inline unsigned __float_as_uint(float x) { return (unsigned)emu_bits(x); }
static inline double __longlong_as_double(long long x) { return emu_from_bits<double>((unsigned long long)x); }
static inline long long __double_as_longlong(double x) { return (long long)emu_bits(x); }

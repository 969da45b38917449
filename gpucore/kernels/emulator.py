"""Run CUDA kernels (``gpucore/kernels/<family>/*.cu``) on the CPU: a test harness, no GPU needed.

The unmodified ``.cu`` sources are compiled as C++17 with ``g++`` behind a prelude that maps the
CUDA names (``__global__``, ``threadIdx``, ``__shared__``, warp collectives, atomics ...) to host
code; every ``extern "C" __global__`` kernel becomes a callable with CuPy's calling convention on
NumPy arrays. Drivers written for CuPy run unchanged when their arrays come from
``gpucore.backend.get_backend("cpu")`` (NumPy) and their kernels from here.

API
---
``available() -> bool``
    g++ is on the PATH.
``compile_modules(modules, defines=(), prelude="") -> Library``
    One shared library from the ``.cu`` modules (names in ``gpucore/kernels``, or paths to ``.cu``
    files) in one translation unit, with ``-D`` style ``defines`` (pairs or a dict) and extra C++
    ``prelude`` text (a caller's hooks) placed after the generic prelude. Built once: cached on
    disk under the temp folder keyed by the hash of the generated source, the headers (``*.cuh``,
    ``*.h``) of the include folders and the compiler, and in memory per process.
``load_module(name, defines=()) -> Library`` / ``get_kernel(module, name, defines=()) -> Kernel``
    Drop-ins for ``gpucore.kernels.load_module`` / ``get_kernel`` (a ``Library`` is the stand-in
    for ``cupy.RawModule``: ``library.get_function(name)``).
``Library``: ``.kernel_names``, ``.get_function(name)`` (a cached ``Kernel`` on the default round
    robin schedule), ``.kernel(name, schedule=None)`` (a new ``Kernel``).
``Kernel(library, name, schedule=None)``: ``kernel(grid, block, args, shared_mem=0)``, grid/block an
    int or a tuple of up to 3 ints, ``args`` NumPy arrays (C-contiguous; passed as pointers) and
    NumPy scalars (``np.int64(5)``, as CuPy needs typed scalars). ``.signature``: [(kind, size)]
    per parameter; ``.launches``; ``.switches`` (thread switches of the last launch).
``Schedule(seed=0, preempt=0.25, switch_limit=400_000_000, preempt_atomics=True)``
    How launches interleave threads (below); launch i of a schedule draws its own seed.
``EmulatorError`` (a ``GpucoreError``): a failed launch or a refused argument.

Argument checks. Every launch checks each argument against the kernel's C parameter type
(pointer vs scalar, element size, signedness): the mistakes CuPy passes silently (an int32 array
where the kernel reads int64, a Python int). A ``void*`` parameter takes any array.

Execution model. Blocks run one after another (x fastest, then y, z). The threads of a block are
user-level contexts on one OS thread (own stacks with a guard page, switched with
``_setjmp``/``_longjmp``); a thread runs until it waits at a barrier, pauses (``__nanosleep``), is
preempted, or returns; then the scheduler resumes another one: round robin (seed 0), or a thread
drawn at random (seed != 0). Warps are 32 consecutive linear thread ids (the last one may be
partial). Supported:

- barriers: ``__syncthreads`` (and ``_count``/``_and``/``_or``); warp collectives ``__syncwarp``,
  ``__ballot_sync``, ``__any_sync``, ``__all_sync``, ``__shfl_sync``/``_up``/``_down``/``_xor``
  (with ``width``), ``__match_any_sync``, ``__match_all_sync``, ``__reduce_*_sync``: every lane of
  the mask (restricted to the lanes that exist) must arrive at the same kind of collective with
  the same mask; ``__activemask()`` is the lanes that have not returned;
- atomics as CUDA declares them (``atomicAdd``/``Sub``/``Exch``/``Min``/``Max``/``Inc``/``Dec``/
  ``CAS``/``And``/``Or``/``Xor`` on 32- and 64-bit types, float/double add; ``_block``/``_system``
  aliases), fences ``__threadfence*``, ``__nanosleep``, ``clock64`` (a counter), ``__ldg``, bit
  intrinsics (``__popc``, ``__ffs``, ``__clz``, ``__brev`` and 64-bit forms), ``__trap`` and
  ``assert`` (reported as launch errors);
- ``__shared__`` arrays (static storage: one block runs at a time) and dynamic shared memory
  (``extern __shared__ T name[];``, size ``shared_mem`` bytes, at most 227 KiB, filled with 0xA5
  before every block so that code relying on zeroed shared memory fails);
- preemption points: with a seed != 0, every atomic, fence and ``emu_preempt()`` call (a hook a
  kernel may call under ``#ifdef GPUCORE_EMULATOR``) switches to a random thread with probability
  ``preempt`` (atomics only with ``preempt_atomics``); ``emu_yield()`` always switches. A thread
  that performs 1024 atomics/fences without a switch yields (spins on atomics do not hang).

Errors are reported, never hung: a lane that returns while lanes of its warp wait for it at a
collective (or a collective naming a lane that has returned), a thread that returns while others
wait at ``__syncthreads``, lanes meeting at different collectives or masks, a deadlock (every
thread waits at a barrier no running thread can complete), more than ``switch_limit`` switches in
one launch (a livelock: a spin that never ends), ``__trap``/``assert``, bad launch sizes.

Limits. Each run is one sequentially consistent interleaving: every memory access between two
switches is atomic, so the harness cannot find weak-memory races (missing fences, stale L1 reads,
``volatile`` vs relaxed atomics): that is for the GPU tests. Blocks never run concurrently, so a
kernel that waits for a later block (grid-wide spin barriers, cooperative groups) livelocks
here; independent-block kernels and persistent ones that only wait for blocks that have started
are fine. A spin on plain (volatile) loads without a yield point hangs the emulator: spin with
``__nanosleep``, an atomic or a fence. Collectives of disjoint lane groups of one warp at the same
time are reported as mismatched. No bounds checks (use small arrays and compare with a
reference). Slow (tens of nanoseconds per switch): keep grids and inputs small.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.kernels import include_dirs as _include_dirs
from gpucore.kernels import source_path

__all__ = ["EmulatorError", "Kernel", "Library", "Schedule", "available", "compile_modules", "get_kernel",
           "kernel_names", "load_module", "MAX_DYNAMIC_SHARED"]

MAX_DYNAMIC_SHARED = 227 * 1024  # bytes per block (H100/H200 opt-in maximum)


class EmulatorError(GpucoreError):
    """A kernel launch the emulator refused or that failed (one line: kernel, problem)."""


_PRELUDE = r"""
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
"""

_LAUNCHER = r"""
// kind: 0 pointer, 1 signed integer, 2 unsigned integer (and bool), 3 floating point, 4 struct;
// size: sizeof of the scalar or of the pointee (0: void*, any array).
template <typename T> static constexpr int emu_kind() {
    return std::is_pointer<T>::value ? 0 : std::is_floating_point<T>::value ? 3 : std::is_class<T>::value ? 4
         : std::is_signed<T>::value ? 1 : 2;
}
template <typename T> static constexpr long long emu_size() {
    if constexpr (std::is_pointer<T>::value) {
        if constexpr (std::is_void<std::remove_cv_t<std::remove_pointer_t<T>>>::value) return 0;
        else return (long long)sizeof(std::remove_pointer_t<T>);
    } else return (long long)sizeof(T);
}
template <typename... A, std::size_t... I>
static void emu_call(void (*f)(A...), void** args, std::index_sequence<I...>) { f(*reinterpret_cast<A*>(args[I])...); }
template <typename... A> struct emu_job {
    void (*f)(A...); void** args;
    static void run(void* p) { auto* j = static_cast<emu_job*>(p); emu_call(j->f, j->args, std::index_sequence_for<A...>{}); }
};
static void (*emu_body)(void*) = nullptr;
static void* emu_body_arg = nullptr;
static void emu_thread_returned() {
    emu_th[emu_cur].state = 2;
    emu_warp& w = emu_warps[emu_cur >> 5];
    const unsigned me = 1u << emu_lane();
    w.exited |= me;
    if (w.arrived != 0u && (w.want & me)) emu_error = EMU_E_LANE;  // its warp waits for it at a collective
    ++emu_returned;
    if (emu_bar.arrived != 0u) emu_error = EMU_E_BLOCK;        // others wait for it at __syncthreads
}
// Bottom frame of every thread's stack: parks (ready for a body), runs one, parks again. A thread
// abandoned by a failed launch is restarted from its park point, whose frame is never left.
static void emu_trampoline(int slot) {
    volatile int t = slot;
    for (;;) {
        if (!_setjmp(emu_th[t].start)) _longjmp(emu_sched, 1);
        emu_body(emu_body_arg);
        emu_thread_returned();
    }
}
static bool emu_new_slot() {
    const int t = emu_slots;
    char* mem = static_cast<char*>(mmap(nullptr, EMU_STACK + 4096, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (mem == MAP_FAILED) return false;
    mprotect(mem, 4096, PROT_NONE);  // guard page: a stack overflow faults instead of corrupting
    ucontext_t uc;
    getcontext(&uc);
    uc.uc_stack.ss_sp = mem + 4096;
    uc.uc_stack.ss_size = EMU_STACK;
    uc.uc_link = nullptr;
    makecontext(&uc, (void (*)())emu_trampoline, 1, t);
    if (!_setjmp(emu_sched)) setcontext(&uc);
    emu_th[t].state = 0;
    emu_slots = t + 1;
    return true;
}
// cfg: grid x y z, block x y z, seed, preempt threshold, switch limit, flags, dynamic shared bytes.
// out: switches, block and thread of a failure. Returns 0, 1 + i (argument i mismatched) or -code.
template <typename... A>
static int emu_launch(void (*f)(A...), const unsigned long long* cfg, void** args, const long long* kinds,
                      const long long* sizes, int nargs, long long* out) {
    out[0] = 0; out[1] = -1; out[2] = -1;
    if (nargs != (int)sizeof...(A)) return -EMU_E_NARGS;
    const long long want_kind[] = {0, (long long)emu_kind<A>()...};
    const long long want_size[] = {0, emu_size<A>()...};
    for (int i = 0; i < nargs; ++i)
        if (kinds[i] != want_kind[i + 1] || (sizes[i] != want_size[i + 1] && !(kinds[i] == 0 && want_size[i + 1] == 0)))
            return 1 + i;
    const unsigned long long gx = cfg[0], gy = cfg[1], gz = cfg[2], bx = cfg[3], by = cfg[4], bz = cfg[5];
    if (!gx || !gy || !gz || !bx || !by || !bz || gx >= (1ULL << 31) || gy > 65535 || gz > 65535 || bz > 64 ||
        bx * by * bz > (unsigned long long)EMU_MAX_THREADS) return -EMU_E_CONFIG;
    if (cfg[10] > sizeof(emu_dynamic_smem)) return -EMU_E_SMEM;
    const unsigned n = (unsigned)(bx * by * bz);
    emu_rng = cfg[6]; emu_preempt_below = cfg[7]; emu_flags = cfg[9];
    const long long limit = (long long)cfg[8];
    while (emu_slots < (int)n) if (!emu_new_slot()) return -EMU_E_CONFIG;
    gridDim = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
    blockDim = {(unsigned)bx, (unsigned)by, (unsigned)bz};
    emu_nthreads = n;
    emu_job<A...> job{f, args};
    emu_body = &emu_job<A...>::run;
    emu_body_arg = &job;
    emu_error = 0; emu_clock = 0;
    volatile long long switches = 0;
    for (unsigned long long b = 0; b < gx * gy * gz; ++b) {
        blockIdx = {(unsigned)(b % gx), (unsigned)(b / gx % gy), (unsigned)(b / (gx * gy))};
        for (unsigned w = 0; w * 32 < n; ++w) {
            const unsigned lanes = n - 32 * w < 32 ? n - 32 * w : 32;
            emu_warps[w].present = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
            emu_warps[w].arrived = emu_warps[w].want = emu_warps[w].exited = 0; emu_warps[w].gen = 0;
        }
        emu_bar = emu_block_barrier{0, 0, 0, 0};
        if (cfg[10]) std::memset(emu_dynamic_smem, 0xA5, cfg[10]);
        for (unsigned t = 0; t < n; ++t) { emu_th[t].state = 0; emu_th[t].wait_gen = nullptr; }
        emu_blocked = 0; emu_returned = 0;
        volatile unsigned alive = n, next = 0;
        while (alive) {
            unsigned t = emu_rng != 0ULL ? (unsigned)(emu_next() % n) : next;
            while (emu_th[t].state == 2 || (emu_th[t].wait_gen && *emu_th[t].wait_gen == emu_th[t].wait_val))
                t = t + 1 == n ? 0 : t + 1;
            emu_cur = (int)t;
            threadIdx = {t % (unsigned)bx, t / (unsigned)bx % (unsigned)by, t / (unsigned)(bx * by)};
            emu_ops = 0;
            if (!_setjmp(emu_sched)) {
                if (emu_th[t].state == 0) { emu_th[t].state = 1; _longjmp(emu_th[t].start, 1); }
                _longjmp(emu_th[t].jb, 1);
            }
            switches = switches + 1;
            if (emu_error) { out[0] = switches; out[1] = (long long)b; out[2] = t; return -emu_error; }
            if (emu_th[t].state == 2) alive = alive - 1;
            next = t + 1 == n ? 0 : t + 1;
            if (switches > limit) { out[0] = switches; out[1] = (long long)b; return -EMU_E_LIMIT; }
            if (alive && emu_blocked == (long long)alive) {
                out[0] = switches; out[1] = (long long)b; return -EMU_E_DEADLOCK;
            }
        }
    }
    out[0] = switches;
    return 0;
}
template <typename... A> static int emu_nargs(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> static void emu_describe(void (*)(A...), long long* kinds, long long* sizes) {
    const long long k[] = {0, (long long)emu_kind<A>()...};
    const long long s[] = {0, emu_size<A>()...};
    for (std::size_t i = 0; i < sizeof...(A); ++i) { kinds[i] = k[i + 1]; sizes[i] = s[i + 1]; }
}
"""

_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?void\s+'
                        r'(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\(')
# extern __shared__ [__align__(n)] T name[];  ->  a pointer into the emulator's dynamic shared buffer
_DYN_SHARED_RE = re.compile(r'extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w\s:<>,*]*?)\s*'
                            r'\b(\w+)\s*\[\s*\]\s*;')

_ERRORS = {
    -1: "grid or block size out of range (block: 1..1024 threads, z <= 64; grid: x < 2^31, y, z <= 65535)",
    -2: f"dynamic shared memory above {MAX_DYNAMIC_SHARED} bytes",
    -3: "wrong number of arguments",
    -11: "a lane left its warp while the others waited at a warp collective (or a collective named a lane that "
         "had returned)",
    -12: "the switch limit was reached (livelock, or a kernel that waits forever)",
    -13: "a thread returned while others waited at __syncthreads (or reached it after another thread returned)",
    -14: "deadlock: every running thread waits at a barrier that none of them can complete",
    -15: "lanes of a warp met at different warp collectives or with different masks (or a lane not in its own mask)",
    -16: "__trap() was called",
}

_KIND_NAMES = {0: "pointer", 1: "signed integer", 2: "unsigned integer", 3: "floating point", 4: "struct"}


def available() -> bool:
    """Whether g++ (the emulator's compiler) is on the PATH."""
    return shutil.which("g++") is not None


def _module_path(module: str | Path) -> Path:
    p = Path(module)
    if p.suffix != ".cu":
        p = source_path(str(module))
    if not p.is_file():
        raise EmulatorError(f"emulator: no kernel source {p}")
    return p.resolve()


def kernel_names(module: str | Path) -> list[str]:
    """The ``extern "C" __global__`` kernels of a module (a name in gpucore/kernels or a .cu path)."""
    return _KERNEL_RE.findall(_module_path(module).read_text())


def _rewrite(text: str) -> str:
    return _DYN_SHARED_RE.sub(lambda m: f"static {m.group(1)}* const {m.group(2)} = "
                                        f"reinterpret_cast<{m.group(1)}*>(emu_dynamic_smem);", text)


@lru_cache(maxsize=1)
def _compiler_version() -> str:
    return subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout


_FLAGS = ("-std=c++17", "-O1", "-U_FORTIFY_SOURCE", "-shared", "-fPIC", "-Wall", "-Wno-unused-function",
          "-Wno-unknown-pragmas", "-Wno-missing-field-initializers", "-Wno-unused-variable")


def _normalize_defines(defines) -> tuple[tuple[str, str], ...]:
    items = defines.items() if isinstance(defines, Mapping) else defines
    return tuple((str(k), str(v)) for k, v in items)


def compile_modules(modules: Iterable[str | Path] | str, defines=(), prelude: str = "") -> Library:
    """One ``Library`` of the kernels of ``modules`` (see the module docstring); cached."""
    if isinstance(modules, (str, Path)):
        modules = [modules]
    paths = tuple(_module_path(m) for m in modules)
    if not paths:
        raise EmulatorError("emulator: no modules to compile")
    return _compile(paths, _normalize_defines(defines), str(prelude))


@lru_cache(maxsize=None)
def _compile(paths: tuple[Path, ...], defines: tuple[tuple[str, str], ...], prelude: str) -> Library:
    if not available():
        raise EmulatorError("the CUDA kernel emulator needs g++ on the PATH")
    names: list[str] = []
    parts = [_PRELUDE.replace("EMU_MAX_DYNAMIC_SHARED", str(MAX_DYNAMIC_SHARED))]
    parts += [f"#define {k} {v}\n" for k, v in defines]
    parts.append(prelude + "\n")
    for path in paths:
        text = path.read_text()
        names += _KERNEL_RE.findall(text)
        parts.append(f'#line 1 "{path}"\n{_rewrite(text)}\n')
    parts.append('#line 1 "gpucore-emulator-launcher"\n' + _LAUNCHER)
    for name in names:
        parts.append(
            f'extern "C" int emu_launch_{name}(const unsigned long long* c, void** a, const long long* k, '
            f"const long long* s, int n, long long* o) {{ return emu_launch({name}, c, a, k, s, n, o); }}\n"
            f'extern "C" int emu_nargs_{name}() {{ return emu_nargs({name}); }}\n'
            f'extern "C" void emu_describe_{name}(long long* k, long long* s) {{ emu_describe({name}, k, s); }}\n')
    source = "".join(parts)
    include_dirs = sorted({d for p in paths for d in _include_dirs(p)})
    cmd = ["g++", *_FLAGS, *(f"-I{d}" for d in include_dirs)]
    key = hashlib.sha256()
    for text in [source, " ".join(cmd), _compiler_version()]:
        key.update(text.encode() + b"\0")
    for d in include_dirs:
        for header in sorted([*d.glob("*.cuh"), *d.glob("*.h")]):
            key.update(str(header).encode() + b"\0" + header.read_bytes() + b"\0")
    folder = Path(tempfile.gettempdir()) / f"gpucore-emu-{key.hexdigest()[:20]}"
    lib_path = folder / "kernels.so"
    if not lib_path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cpp = folder / "kernels.cpp"
        cpp.write_text(source)
        tmp = folder / f".kernels.{np.random.default_rng().integers(1 << 40)}.so"
        proc = subprocess.run([*cmd, "-o", str(tmp), str(cpp)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise EmulatorError(f"emulator build of {', '.join(p.name for p in paths)} failed: "
                                f"{proc.stderr.strip()[:4000]}")
        tmp.replace(lib_path)
    if lib_path not in _LOADED:  # one Library (and lock) per loaded file: its state is global
        _LOADED[lib_path] = Library(ctypes.CDLL(str(lib_path)), tuple(names), paths, lib_path)
    return _LOADED[lib_path]


_LOADED: dict[Path, Library] = {}


def load_module(name: str, defines: tuple[tuple[str, str], ...] = ()) -> Library:
    """Emulated ``gpucore.kernels.load_module``: the ``Library`` (cupy.RawModule stand-in) of one module."""
    return compile_modules([name], defines)


def get_kernel(module: str, kernel: str, defines: tuple[tuple[str, str], ...] = ()) -> Kernel:
    """Emulated ``gpucore.kernels.get_kernel``."""
    return load_module(module, defines).get_function(kernel)


class Library:
    """The compiled kernels of some modules; ``get_function(name)`` as ``cupy.RawModule``'s."""

    def __init__(self, cdll, kernel_names: tuple[str, ...], sources: tuple[Path, ...], path: Path):
        self.cdll, self.kernel_names, self.sources, self.path = cdll, kernel_names, sources, path
        self.lock = threading.Lock()  # one launch at a time: the emulator's state is global
        self._functions: dict[str, Kernel] = {}

    def kernel(self, name: str, schedule: Schedule | None = None) -> Kernel:
        return Kernel(self, name, schedule)

    def get_function(self, name: str) -> Kernel:
        if name not in self._functions:
            self._functions[name] = Kernel(self, name)
        return self._functions[name]

    def __repr__(self):
        return f"Library({', '.join(p.name for p in self.sources)}: {', '.join(self.kernel_names)})"


class Schedule:
    """How launches interleave the threads of a block.

    ``seed`` 0: round robin, no preemption (deterministic). Otherwise launch i draws its own
    xorshift seed from (seed, i); the scheduler resumes a random thread after each switch, and
    preemption points (atomics if ``preempt_atomics``, fences, ``emu_preempt()``) switch with
    probability ``preempt``. ``switch_limit``: switches in one launch before it fails as a livelock.
    """

    def __init__(self, seed: int = 0, preempt: float = 0.25, switch_limit: int = 400_000_000,
                 preempt_atomics: bool = True):
        if not 0.0 <= preempt <= 1.0:
            raise EmulatorError(f"emulator schedule: preempt {preempt} outside [0, 1]")
        self.seed, self.preempt, self.switch_limit = int(seed), float(preempt), int(switch_limit)
        self.preempt_atomics, self.launches = bool(preempt_atomics), 0

    def next_seed(self) -> int:
        self.launches += 1
        if not self.seed:
            return 0
        z = (self.seed + self.launches * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
        return ((z ^ (z >> 27)) | 1) & ((1 << 64) - 1)


def _describe_arg(a):
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise EmulatorError("emulated kernel argument arrays must be C-contiguous")
        return 0, a.dtype.itemsize, ctypes.c_void_p(a.ctypes.data)
    if isinstance(a, np.generic):
        kind = {"i": 1, "u": 2, "b": 2, "f": 3, "V": 4}.get(a.dtype.kind)
        if kind is None:
            raise EmulatorError(f"emulated kernel: unsupported scalar type {a.dtype}")
        if kind == 4:
            return kind, a.dtype.itemsize, (ctypes.c_char * a.dtype.itemsize).from_buffer_copy(a.tobytes())
        return kind, a.dtype.itemsize, np.ctypeslib.as_ctypes_type(a.dtype)(a.item())
    raise EmulatorError(f"emulated kernel: pass NumPy arrays or NumPy scalars (CuPy needs typed scalars), "
                        f"got {type(a).__name__}")


def _dims(d, what: str) -> tuple[int, int, int]:
    t = tuple(int(x) for x in d) if isinstance(d, (tuple, list)) else (int(d),)
    if not 1 <= len(t) <= 3 or min(t) < 1:
        raise EmulatorError(f"emulated kernel: bad {what} {d!r}")
    return t + (1,) * (3 - len(t))


class Kernel:
    """A kernel callable as CuPy's: ``k(grid, block, args, shared_mem=0)``; raises ``EmulatorError``."""

    def __init__(self, library: Library, name: str, schedule: Schedule | None = None):
        if name not in library.kernel_names:
            raise EmulatorError(f"emulator: no kernel {name!r} in {library!r}")
        self.name, self.library = name, library
        self.schedule = schedule if schedule is not None else Schedule()
        lib = library.cdll
        self._f = getattr(lib, f"emu_launch_{name}")
        self._f.restype = ctypes.c_int
        nargs = getattr(lib, f"emu_nargs_{name}")()
        kinds, sizes = (ctypes.c_longlong * nargs)(), (ctypes.c_longlong * nargs)()
        getattr(lib, f"emu_describe_{name}")(kinds, sizes)
        self.signature = list(zip(kinds, sizes))
        self.launches = 0
        self.switches = 0  # of the last launch

    def __call__(self, grid, block, args, shared_mem: int = 0):
        described = [_describe_arg(a) for a in args]
        n = len(described)
        if n != len(self.signature):
            raise EmulatorError(f"{self.name}: {n} arguments given, the kernel takes {len(self.signature)}")
        for i, ((kind, size, _), (want_kind, want_size)) in enumerate(zip(described, self.signature)):
            if kind != want_kind or (size != want_size and not (kind == 0 and want_size == 0)):
                raise EmulatorError(f"{self.name}: argument {i} is a {size}-byte {_KIND_NAMES[kind]}, the kernel "
                                    f"wants a {want_size}-byte {_KIND_NAMES[want_kind]}")
        values = [v for _, _, v in described]
        ptrs = (ctypes.c_void_p * n)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        kinds = (ctypes.c_longlong * n)(*[k for k, _, _ in described])
        sizes = (ctypes.c_longlong * n)(*[s for _, s, _ in described])
        s = self.schedule
        cfg = (ctypes.c_ulonglong * 11)(*_dims(grid, "grid"), *_dims(block, "block"), s.next_seed(),
                                        int(s.preempt * 9007199254740992.0), max(0, s.switch_limit),
                                        int(s.preempt_atomics), int(shared_mem))
        out = (ctypes.c_longlong * 3)()
        with self.library.lock:
            rc = self._f(cfg, ptrs, kinds, sizes, ctypes.c_int(n), out)
            self.switches = out[0]
            if rc == -17:
                lib = self.library.cdll
                why = (f"assert({ctypes.c_char_p.in_dll(lib, 'emu_assert_text').value.decode()}) failed at "
                       f"{ctypes.c_char_p.in_dll(lib, 'emu_assert_file').value.decode()}:"
                       f"{ctypes.c_int.in_dll(lib, 'emu_assert_line').value}")
        self.launches += 1
        if rc > 0:  # the C side disagrees with the checks above: never expected
            raise EmulatorError(f"{self.name}: argument {rc - 1} refused by the launcher")
        if rc != 0:
            if rc != -17:
                why = _ERRORS.get(rc, f"code {rc}")
            where = "" if out[1] < 0 else f" (block {out[1]}" + ("" if out[2] < 0 else f", thread {out[2]}") + ")"
            raise EmulatorError(f"{self.name}: emulated launch failed: {why}{where}")

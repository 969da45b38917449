"""Run the oracle's CUDA kernels on the CPU (a test harness).

This module compiles the unmodified ``gpucore/kernels/oracle_*.cu`` sources as C++ with ``g++``
(a small prelude maps ``__global__``, ``threadIdx``, ``atomicOr``, the warp collectives ... to host
code) and exposes an ``Engine`` whose kernels take the same ``f(grid, block, args)`` calls as
CuPy's, on NumPy arrays. Every call checks each argument against the kernel's C parameter type
(pointer vs scalar, element size, signedness), which catches the mistakes CuPy would pass silently
(an int32 where the kernel reads an int64).

Execution model. Blocks run one after another. The threads of a block are user-level contexts on
one OS thread (``makecontext`` stacks, switched with ``_setjmp``/``_longjmp``); a thread runs until
it reaches a warp collective (``__syncwarp``, ``__shfl_sync``, ``__shfl_up_sync``,
``__ballot_sync``: barriers of its warp, every lane must arrive), a pause (``__nanosleep`` in the
kernels' spin loops) or a preemption point, then the scheduler resumes another thread. Every
memory access between two switches is atomic, so each run is one sequentially consistent
interleaving; a CUDA schedule can differ only by weaker memory ordering, which the kernels' fences
and the GPU tests cover. With ``schedule_seed`` != 0 the next thread is drawn at random and
``oc_preempt()`` (called by the queue protocol of ``oracle_icw.cu`` at every shared access and
fence) switches with probability ``preempt``: different seeds explore different interleavings of
the warps of a block. Sequential blocks are a legal schedule for every oracle kernel (none waits
for a block that has not started). Errors are reported, not hung: a lane leaving while its warp
waits at a collective, or more than ``switch_limit`` switches in one launch (a livelock).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.kernels import KERNEL_DIR
from gpucore.oracle.gpu import Engine

MODULES = ("oracle_ic", "oracle_lt", "oracle_icw")

_PRELUDE = r"""
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>
#include <setjmp.h>
#include <ucontext.h>
#define OIC_EMULATOR 1
using std::floor; using std::ceil;
struct oc_dim3 { unsigned int x, y, z; };
static oc_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(...)

// ---- threads of the current block: user-level contexts, switched with _setjmp/_longjmp
struct oc_thread { jmp_buf jb; ucontext_t uc; int state; };  // state: 0 new, 1 started, 2 done
static std::vector<oc_thread> oc_th;
static std::vector<char*> oc_stacks;
static const size_t OC_STACK = 1 << 17;
static int oc_cur = 0;
static jmp_buf oc_sched;
static unsigned long long oc_rng = 0;        // 0: round robin, no preemption
static unsigned long long oc_preempt_below = 0;
static long long oc_switch_limit = 400000000LL;
static int oc_error = 0;                     // 1: lane left during a collective, 2: livelock
static inline unsigned long long oc_next() {
    oc_rng ^= oc_rng << 13; oc_rng ^= oc_rng >> 7; oc_rng ^= oc_rng << 17; return oc_rng;
}
static inline void oc_yield() {
    if (!_setjmp(oc_th[oc_cur].jb)) _longjmp(oc_sched, 1);
}
static inline void oc_preempt() {
    if (oc_rng != 0ULL && (oc_next() >> 11) < oc_preempt_below) oc_yield();
}

// ---- warps: barrier + exchange buffer
struct oc_warp { int size, arrived, exited; long long gen; unsigned long long x[32]; };
static oc_warp oc_warps[64];
static inline void oc_warp_wait() {
    oc_warp& w = oc_warps[threadIdx.x >> 5];
    if (w.exited) { oc_error = 1; oc_yield(); }
    const long long g = w.gen;
    if (++w.arrived == w.size) { w.arrived = 0; ++w.gen; return; }
    while (w.gen == g) oc_yield();
}
static inline void __syncwarp(unsigned = 0xffffffffu) { oc_warp_wait(); }
template <typename T> static inline T oc_exchange(T v, int src, bool keep_own) {
    static_assert(sizeof(T) <= 8, "shuffle of a wide type");
    oc_warp& w = oc_warps[threadIdx.x >> 5];
    unsigned long long bits = 0; std::memcpy(&bits, &v, sizeof(T));
    w.x[threadIdx.x & 31] = bits;
    oc_warp_wait();
    T out = v;
    if (!keep_own) { unsigned long long b = w.x[src & 31]; std::memcpy(&out, &b, sizeof(T)); }
    oc_warp_wait();
    return out;
}
template <typename T> static inline T __shfl_sync(unsigned, T v, int src) { return oc_exchange(v, src, false); }
template <typename T> static inline T __shfl_up_sync(unsigned, T v, unsigned d) {
    const int l = (int)(threadIdx.x & 31);
    return oc_exchange(v, l - (int)d, l < (int)d);
}
static inline unsigned __ballot_sync(unsigned, bool p) {
    oc_warp& w = oc_warps[threadIdx.x >> 5];
    w.x[threadIdx.x & 31] = p ? 1ULL : 0ULL;
    oc_warp_wait();
    unsigned m = 0;
    for (int i = 0; i < w.size; ++i) if (w.x[i]) m |= 1u << i;
    oc_warp_wait();
    return m;
}
static inline void __threadfence() { oc_preempt(); }
static inline void __nanosleep(unsigned) { oc_yield(); }
static inline unsigned long long atomicOr(unsigned long long* a, unsigned long long v) { unsigned long long o = *a; *a = o | v; return o; }
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) { unsigned long long o = *a; *a = o + v; return o; }
static inline unsigned int atomicAdd(unsigned int* a, unsigned int v) { unsigned int o = *a; *a = o + v; return o; }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
"""

_LAUNCHER = r"""
// kind: 0 pointer, 1 signed integer, 2 unsigned integer, 3 floating point; size: sizeof of the
// scalar, or of the pointee for pointers.
template <typename T> static constexpr int oc_kind() {
    return std::is_pointer<T>::value ? 0 : std::is_floating_point<T>::value ? 3 : std::is_signed<T>::value ? 1 : 2;
}
template <typename T> static constexpr long long oc_size() {
    if constexpr (std::is_pointer<T>::value) return (long long)sizeof(std::remove_pointer_t<T>);
    else return (long long)sizeof(T);
}
template <typename... A, std::size_t... I>
static void oc_call(void (*f)(A...), void** args, std::index_sequence<I...>) { f(*reinterpret_cast<A*>(args[I])...); }
static void (*oc_body)(void*) = nullptr;
static void* oc_body_arg = nullptr;
static void oc_entry() {
    oc_body(oc_body_arg);
    oc_th[oc_cur].state = 2;
    oc_warp& w = oc_warps[threadIdx.x >> 5];
    ++w.exited;
    if (w.arrived != 0) oc_error = 1;  // lanes of this warp wait at a collective this lane never reaches
    _longjmp(oc_sched, 1);
}
template <typename... A> struct oc_job {
    void (*f)(A...); void** args;
    static void run(void* p) { auto* j = static_cast<oc_job*>(p); oc_call(j->f, j->args, std::index_sequence_for<A...>{}); }
};
extern "C" void oc_configure(unsigned long long seed, double preempt, long long switch_limit) {
    oc_rng = seed;
    oc_preempt_below = (unsigned long long)(preempt * 9007199254740992.0);
    oc_switch_limit = switch_limit;
}
extern "C" long long oc_last_switches = 0;
template <typename... A>
static int oc_launch(void (*f)(A...), unsigned grid, unsigned block, void** args, const long long* kinds,
                     const long long* sizes, int nargs) {
    if (nargs != (int)sizeof...(A)) return -1000 - (int)sizeof...(A);
    const long long want_kind[] = {(long long)oc_kind<A>()...};
    const long long want_size[] = {oc_size<A>()...};
    for (int i = 0; i < nargs; ++i)
        if (kinds[i] != want_kind[i] || sizes[i] != want_size[i]) return 1 + i;
    if (block == 0 || block > 2048) return -1;
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    oc_job<A...> job{f, args};
    oc_body = &oc_job<A...>::run;
    oc_body_arg = &job;
    while (oc_stacks.size() < block) oc_stacks.push_back(static_cast<char*>(std::malloc(OC_STACK)));
    oc_th.resize(block);
    oc_error = 0;
    volatile long long switches = 0;
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx = {b, 0, 0};
        for (unsigned w = 0; w * 32 < block; ++w) {
            oc_warps[w].size = (int)(block - 32 * w < 32 ? block - 32 * w : 32);
            oc_warps[w].arrived = 0; oc_warps[w].exited = 0; oc_warps[w].gen = 0;
        }
        for (unsigned t = 0; t < block; ++t) oc_th[t].state = 0;
        volatile unsigned alive = block;
        volatile unsigned next = 0;
        while (alive) {
            unsigned t = next;
            if (oc_rng != 0ULL) t = (unsigned)(oc_next() % block);
            while (oc_th[t].state == 2) t = (t + 1) % block;
            oc_cur = (int)t;
            threadIdx = {t, 0, 0};
            if (!_setjmp(oc_sched)) {
                if (oc_th[t].state == 0) {
                    oc_th[t].state = 1;
                    getcontext(&oc_th[t].uc);
                    oc_th[t].uc.uc_stack.ss_sp = oc_stacks[t];
                    oc_th[t].uc.uc_stack.ss_size = OC_STACK;
                    oc_th[t].uc.uc_link = nullptr;
                    makecontext(&oc_th[t].uc, oc_entry, 0);
                    setcontext(&oc_th[t].uc);
                } else {
                    _longjmp(oc_th[t].jb, 1);
                }
            }
            if (oc_th[t].state == 2) alive = alive - 1;
            next = (t + 1) % block;
            if (oc_error) { oc_last_switches = switches; return -10 - oc_error; }
            switches = switches + 1;
            if (switches > oc_switch_limit) { oc_last_switches = switches; return -12; }
        }
    }
    oc_last_switches = switches;
    return 0;
}
template <typename... A> static int oc_nargs(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> static void oc_describe(void (*)(A...), long long* kinds, long long* sizes) {
    const long long k[] = {(long long)oc_kind<A>()...};
    const long long s[] = {oc_size<A>()...};
    for (std::size_t i = 0; i < sizeof...(A); ++i) { kinds[i] = k[i]; sizes[i] = s[i]; }
}
"""

_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(')

_ERRORS = {-11: "a lane left its warp while the others waited at a warp collective",
           -12: "the switch limit was reached (livelock, or a kernel that waits forever)",
           -1: "block size outside 1..2048"}


def kernel_names(module: str) -> list[str]:
    return _KERNEL_RE.findall((KERNEL_DIR / f"{module}.cu").read_text())


def _source() -> str:
    parts = [_PRELUDE]
    for module in MODULES:  # one translation unit: the kernels and helpers have distinct names
        parts.append(f'#include "{module}.cu"\n')
    parts.append(_LAUNCHER)
    for module in MODULES:
        for name in kernel_names(module):
            parts.append(
                f'extern "C" int emu_{name}(unsigned g, unsigned b, void** a, const long long* k, const long long* s, int n)'
                f" {{ return oc_launch({name}, g, b, a, k, s, n); }}\n"
                f'extern "C" int emu_nargs_{name}() {{ return oc_nargs({name}); }}\n'
                f'extern "C" void emu_describe_{name}(long long* k, long long* s) {{ oc_describe({name}, k, s); }}\n'
            )
    return "".join(parts)


def available() -> bool:
    return shutil.which("g++") is not None


@lru_cache(maxsize=1)
def _library():
    if not available():
        raise GpucoreError("the oracle kernel emulator needs g++ on the PATH")
    src = _source()
    texts = src + "".join((KERNEL_DIR / f"{m}.cu").read_text() for m in MODULES)
    texts += (KERNEL_DIR / "gc_random.cuh").read_text()
    digest = hashlib.sha256(texts.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"gpucore-oracle-emu-{digest}"
    lib = folder / "oracle_emu.so"
    if not lib.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cpp = folder / "oracle_emu.cpp"
        cpp.write_text(src)
        tmp = folder / f".oracle_emu.{np.random.default_rng().integers(1 << 30)}.so"
        cmd = ["g++", "-std=c++17", "-O1", "-U_FORTIFY_SOURCE", "-shared", "-fPIC", "-Wall", "-Wno-unused-function",
               "-Wno-unknown-pragmas", "-Wno-missing-field-initializers", f"-I{KERNEL_DIR}", "-o", str(tmp), str(cpp)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise GpucoreError(f"emulator build failed: {proc.stderr.strip()[:3000]}")
        tmp.replace(lib)
    lib = ctypes.CDLL(str(lib))
    lib.oc_configure.argtypes = [ctypes.c_ulonglong, ctypes.c_double, ctypes.c_longlong]
    lib.oc_configure.restype = None
    return lib


_KIND_NAMES = {0: "pointer", 1: "signed integer", 2: "unsigned integer", 3: "floating point"}


def _describe_arg(a) -> tuple[int, int, ctypes._SimpleCData | ctypes.c_void_p]:
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise GpucoreError("emulated kernel argument arrays must be C-contiguous")
        return 0, a.dtype.itemsize, ctypes.c_void_p(a.ctypes.data)
    if isinstance(a, np.generic):
        kind = {"i": 1, "u": 2, "f": 3}.get(a.dtype.kind)
        if kind is None:
            raise GpucoreError(f"emulated kernel: unsupported scalar type {a.dtype}")
        ctype = np.ctypeslib.as_ctypes_type(a.dtype)
        return kind, a.dtype.itemsize, ctype(a.item())
    raise GpucoreError(f"emulated kernel: pass NumPy arrays or NumPy scalars (CuPy needs typed scalars), got {type(a).__name__}")


class _Schedule:
    """Seeds of the emulated schedules: launch i of an engine uses its own seed (0: round robin)."""

    def __init__(self, seed: int, preempt: float, switch_limit: int):
        self.seed, self.preempt, self.switch_limit, self.launches = int(seed), float(preempt), int(switch_limit), 0

    def next_seed(self) -> int:
        self.launches += 1
        if not self.seed:
            return 0
        z = (self.seed + self.launches * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
        return ((z ^ (z >> 27)) | 1) & ((1 << 64) - 1)


class _EmulatedKernel:
    def __init__(self, lib, name: str, schedule: _Schedule):
        self.name = name
        self._lib = lib
        self._schedule = schedule
        self._f = getattr(lib, f"emu_{name}")
        self._f.restype = ctypes.c_int
        nargs = getattr(lib, f"emu_nargs_{name}")()
        kinds = (ctypes.c_longlong * nargs)()
        sizes = (ctypes.c_longlong * nargs)()
        getattr(lib, f"emu_describe_{name}")(kinds, sizes)
        self.signature = list(zip(kinds, sizes))

    def __call__(self, grid, block, args):
        described = [_describe_arg(a) for a in args]
        n = len(described)
        if n != len(self.signature):
            raise GpucoreError(f"{self.name}: {n} arguments given, the kernel takes {len(self.signature)}")
        for i, ((kind, size, _), (want_kind, want_size)) in enumerate(zip(described, self.signature)):
            if (kind, size) != (want_kind, want_size):
                raise GpucoreError(
                    f"{self.name}: argument {i} is a {size}-byte {_KIND_NAMES[kind]}, the kernel wants a "
                    f"{want_size}-byte {_KIND_NAMES[want_kind]}"
                )
        values = [v for _, _, v in described]
        ptrs = (ctypes.c_void_p * n)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        kinds = (ctypes.c_longlong * n)(*[k for k, _, _ in described])
        sizes = (ctypes.c_longlong * n)(*[s for _, s, _ in described])
        grid_x = int(grid[0] if isinstance(grid, tuple) else grid)
        block_x = int(block[0] if isinstance(block, tuple) else block)
        s = self._schedule
        self._lib.oc_configure(ctypes.c_ulonglong(s.next_seed()), ctypes.c_double(s.preempt),
                               ctypes.c_longlong(s.switch_limit))
        rc = self._f(ctypes.c_uint(grid_x), ctypes.c_uint(block_x), ptrs, kinds, sizes, ctypes.c_int(n))
        self.switches = ctypes.c_longlong.in_dll(self._lib, "oc_last_switches").value  # of this launch
        if rc != 0:
            why = _ERRORS.get(rc, f"code {rc}")
            raise GpucoreError(f"{self.name}: emulated launch failed: {why}")


def emulator_engine(blocks: int = 3, block: int = 32, free_bytes: int = 1 << 30, *, schedule_seed: int = 0,
                    preempt: float = 0.25, switch_limit: int = 400_000_000) -> Engine:
    """An ``Engine`` running the CUDA kernels on the CPU (small grids keep it fast).

    ``schedule_seed`` 0: threads resumed round robin, no preemption; otherwise random schedules
    with preemption probability ``preempt`` at the queue protocol's points (see module docstring).
    """
    lib = _library()
    schedule = _Schedule(schedule_seed, preempt, switch_limit)
    cache: dict[str, _EmulatedKernel] = {}

    def kernel(module: str, name: str):
        if module not in MODULES:
            raise GpucoreError(f"emulator: unknown kernel module {module!r}")
        if name not in cache:
            cache[name] = _EmulatedKernel(lib, name, schedule)
        return cache[name]

    return Engine(name="emulator", xp=np, blocks=blocks, block=block, _kernel=kernel, _free=lambda: free_bytes,
                  info={"backend": "emulator", "device": "sequential C++ emulation of the CUDA kernels"})

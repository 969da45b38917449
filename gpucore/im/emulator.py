"""Run the IM CUDA kernels (``kernels/im_*.cu``) on the CPU, for GPU-less tests of kernels and driver.

The unmodified ``.cu`` sources are compiled as C++17 with ``g++``; a prelude maps the CUDA names
to host code. Blocks run one after another; the threads of a block are user-level contexts
(``ucontext``) on one OS thread, resumed round robin, and the warp primitives (``__syncwarp``,
``__ballot_sync``, ``__any_sync``, ``__shfl_sync``, ``__shfl_down_sync``) and ``__syncthreads``
are barriers among them at which a thread yields, so warp-synchronous code runs as on a GPU (one
legal interleaving per barrier interval). Shared memory is one static array (one block at a time). Each launch checks every argument against the C
parameter type (pointer vs scalar, element size, signedness), the mistakes CuPy passes silently.

``emulated_engine(graph, model, rounds, seed)`` is a ``CUDAEngine`` whose arrays are NumPy arrays and
whose kernels are these; it exercises the driver code of ``gpucore.im.cuda`` too. It cannot find
races between blocks (the GPU tests do that). Slow: keep graphs and grids small.
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

MODULES = ("im_sample", "im_greedy")

_PRELUDE = r"""
#include <cmath>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <type_traits>
#include <utility>
#include <ucontext.h>
using std::floor;
struct em_dim3 { unsigned int x, y, z; };
static em_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
// The threads of a block are user-level contexts on one OS thread, resumed round robin; a thread
// runs until it waits at a barrier (then it yields) or returns.
static ucontext_t em_main;
static std::vector<ucontext_t> em_ctx;
static std::vector<char*> em_stacks;
static std::vector<int> em_done;
static int em_cur = 0;
static const size_t EM_STACK = 1 << 16;
static inline void em_yield() { swapcontext(&em_ctx[em_cur], &em_main); threadIdx.x = (unsigned)em_cur; }
struct em_barrier {
    int n = 0, count = 0; long long gen = 0;
    void wait() {
        long long g = gen;
        if (++count == n) { count = 0; ++gen; return; }
        while (gen == g) em_yield();
    }
};
static em_barrier em_warp_bar[64];
static em_barrier em_block_bar;
static unsigned long long em_x[64][32];
static inline void __syncwarp(unsigned = 0xffffffffu) { em_warp_bar[threadIdx.x >> 5].wait(); }
static inline void __syncthreads() { em_block_bar.wait(); }
static inline unsigned __ballot_sync(unsigned, bool p) {
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    em_x[w][l] = p ? 1ULL : 0ULL;
    __syncwarp();
    unsigned m = 0;
    for (int i = 0; i < 32; ++i) if (em_x[w][i]) m |= 1u << i;
    __syncwarp();
    return m;
}
static inline bool __any_sync(unsigned mask, bool p) { return __ballot_sync(mask, p) != 0u; }
template <typename T> static inline T em_exchange(T v, int src, bool keep_own) {
    static_assert(sizeof(T) <= 8, "shuffle of a wide type");
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    unsigned long long bits = 0; std::memcpy(&bits, &v, sizeof(T));
    em_x[w][l] = bits;
    __syncwarp();
    T out = v;
    if (!keep_own) { unsigned long long b = em_x[w][src & 31]; std::memcpy(&out, &b, sizeof(T)); }
    __syncwarp();
    return out;
}
template <typename T> static inline T __shfl_sync(unsigned, T v, int src) { return em_exchange(v, src, false); }
template <typename T> static inline T __shfl_down_sync(unsigned, T v, unsigned d) {
    const int l = threadIdx.x & 31;
    return em_exchange(v, l + (int)d, l + (int)d >= 32);
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned atomicOr(unsigned* a, unsigned v) { unsigned o = *a; *a = o | v; return o; }
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) { unsigned long long o = *a; *a = o + v; return o; }
static inline int atomicAdd(int* a, int v) { int o = *a; *a = o + v; return o; }
static inline int atomicSub(int* a, int v) { int o = *a; *a = o - v; return o; }
static inline int atomicExch(int* a, int v) { int o = *a; *a = v; return o; }
static inline unsigned long long atomicMax(unsigned long long* a, unsigned long long v) { unsigned long long o = *a; if (v > o) *a = v; return o; }
"""

_LAUNCHER = r"""
template <typename T> static constexpr int em_kind() {
    return std::is_pointer<T>::value ? 0 : std::is_floating_point<T>::value ? 3 : std::is_signed<T>::value ? 1 : 2;
}
template <typename T> static constexpr long long em_size() {
    if constexpr (std::is_pointer<T>::value) return (long long)sizeof(std::remove_pointer_t<T>);
    else return (long long)sizeof(T);
}
template <typename... A, std::size_t... I>
static void em_call(void (*f)(A...), void** args, std::index_sequence<I...>) { f(*reinterpret_cast<A*>(args[I])...); }
static void (*em_body)(void*) = nullptr;
static void* em_body_arg = nullptr;
static void em_entry() {
    threadIdx.x = (unsigned)em_cur;
    em_body(em_body_arg);
    em_done[em_cur] = 1;
}
template <typename... A> struct em_job {
    void (*f)(A...); void** args;
    static void run(void* p) { auto* j = static_cast<em_job*>(p); em_call(j->f, j->args, std::index_sequence_for<A...>{}); }
};
template <typename... A>
static int em_launch(void (*f)(A...), unsigned grid, unsigned block, void** args, const long long* kinds,
                     const long long* sizes, int nargs) {
    if (nargs != (int)sizeof...(A)) return -1000 - (int)sizeof...(A);
    const long long want_kind[] = {(long long)em_kind<A>()...};
    const long long want_size[] = {em_size<A>()...};
    for (int i = 0; i < nargs; ++i)
        if (kinds[i] != want_kind[i] || sizes[i] != want_size[i]) return 1 + i;
    if (block == 0 || block % 32 != 0 || block > 2048) return -1;
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    em_job<A...> job{f, args};
    em_body = &em_job<A...>::run;
    em_body_arg = &job;
    while (em_stacks.size() < block) em_stacks.push_back(static_cast<char*>(std::malloc(EM_STACK)));
    em_ctx.resize(block);
    em_done.assign(block, 0);
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx = {b, 0, 0};
        for (unsigned w = 0; w < block / 32; ++w) em_warp_bar[w] = em_barrier{32, 0, 0};
        em_block_bar = em_barrier{(int)block, 0, 0};
        for (unsigned t = 0; t < block; ++t) {
            em_done[t] = 0;
            getcontext(&em_ctx[t]);
            em_ctx[t].uc_stack.ss_sp = em_stacks[t];
            em_ctx[t].uc_stack.ss_size = EM_STACK;
            em_ctx[t].uc_link = &em_main;
            makecontext(&em_ctx[t], em_entry, 0);
        }
        unsigned alive = block;
        long long spins = 0;
        while (alive) {
            alive = 0;
            for (unsigned t = 0; t < block; ++t) {
                if (em_done[t]) continue;
                em_cur = (int)t;
                threadIdx.x = t;
                swapcontext(&em_main, &em_ctx[t]);
                if (!em_done[t]) ++alive;
            }
            if (++spins > (1LL << 40)) return -2;
        }
    }
    return 0;
}
template <typename... A> static int em_nargs(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> static void em_describe(void (*)(A...), long long* kinds, long long* sizes) {
    const long long k[] = {(long long)em_kind<A>()...};
    const long long s[] = {em_size<A>()...};
    for (std::size_t i = 0; i < sizeof...(A); ++i) { kinds[i] = k[i]; sizes[i] = s[i]; }
}
"""

_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


def kernel_names(module: str) -> list[str]:
    return _KERNEL_RE.findall((KERNEL_DIR / f"{module}.cu").read_text())


def available() -> bool:
    return shutil.which("g++") is not None


def _source(queue_size: int) -> str:
    parts = [_PRELUDE, f"#define IM_QS {int(queue_size)}\n"]
    for module in MODULES:
        parts.append(f'#include "{module}.cu"\n')
    parts.append(_LAUNCHER)
    for module in MODULES:
        for name in kernel_names(module):
            parts.append(
                f'extern "C" int em_{name}(unsigned g, unsigned b, void** a, const long long* k, const long long* s, int n)'
                f" {{ return em_launch({name}, g, b, a, k, s, n); }}\n"
                f'extern "C" int em_nargs_{name}() {{ return em_nargs({name}); }}\n'
                f'extern "C" void em_describe_{name}(long long* k, long long* s) {{ em_describe({name}, k, s); }}\n'
            )
    return "".join(parts)


@lru_cache(maxsize=4)
def _library(queue_size: int):
    if not available():
        raise GpucoreError("the IM kernel emulator needs g++ on the PATH")
    src = _source(queue_size)
    texts = src + "".join((KERNEL_DIR / f"{m}.cu").read_text() for m in MODULES)
    texts += (KERNEL_DIR / "gc_random.cuh").read_text()
    digest = hashlib.sha256(texts.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"gpucore-im-emu-{digest}"
    lib = folder / "im_emu.so"
    if not lib.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cpp = folder / "im_emu.cpp"
        cpp.write_text(src)
        tmp = folder / f".im_emu.{np.random.default_rng().integers(1 << 30)}.so"
        cmd = ["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-Wall", "-Wno-unused-function",
               "-Wno-unknown-pragmas", "-Wno-missing-field-initializers", f"-I{KERNEL_DIR}", "-o", str(tmp), str(cpp)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise GpucoreError(f"IM emulator build failed: {proc.stderr.strip()[:2000]}")
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


_KIND_NAMES = {0: "pointer", 1: "signed integer", 2: "unsigned integer", 3: "floating point"}


def _describe_arg(a):
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise GpucoreError("emulated kernel argument arrays must be C-contiguous")
        return 0, a.dtype.itemsize, ctypes.c_void_p(a.ctypes.data)
    if isinstance(a, np.generic):
        kind = {"i": 1, "u": 2, "f": 3}.get(a.dtype.kind)
        if kind is None:
            raise GpucoreError(f"emulated kernel: unsupported scalar type {a.dtype}")
        return kind, a.dtype.itemsize, np.ctypeslib.as_ctypes_type(a.dtype)(a.item())
    raise GpucoreError(f"emulated kernel: pass NumPy arrays or NumPy scalars (CuPy needs typed scalars), "
                       f"got {type(a).__name__}")


class EmulatedKernel:
    """A kernel callable as CuPy's: ``k(grid, block, args)``."""

    def __init__(self, lib, name: str):
        self.name = name
        self._f = getattr(lib, f"em_{name}")
        self._f.restype = ctypes.c_int
        nargs = getattr(lib, f"em_nargs_{name}")()
        kinds = (ctypes.c_longlong * nargs)()
        sizes = (ctypes.c_longlong * nargs)()
        getattr(lib, f"em_describe_{name}")(kinds, sizes)
        self.signature = list(zip(kinds, sizes))
        self.launches = 0

    def __call__(self, grid, block, args):
        described = [_describe_arg(a) for a in args]
        n = len(described)
        if n != len(self.signature):
            raise GpucoreError(f"{self.name}: {n} arguments given, the kernel takes {len(self.signature)}")
        for i, ((kind, size, _), (want_kind, want_size)) in enumerate(zip(described, self.signature)):
            if (kind, size) != (want_kind, want_size):
                raise GpucoreError(f"{self.name}: argument {i} is a {size}-byte {_KIND_NAMES[kind]}, the kernel "
                                   f"wants a {want_size}-byte {_KIND_NAMES[want_kind]}")
        values = [v for _, _, v in described]
        ptrs = (ctypes.c_void_p * n)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        kinds = (ctypes.c_longlong * n)(*[k for k, _, _ in described])
        sizes = (ctypes.c_longlong * n)(*[s for _, s, _ in described])
        grid_x = int(grid[0] if isinstance(grid, tuple) else grid)
        block_x = int(block[0] if isinstance(block, tuple) else block)
        rc = self._f(ctypes.c_uint(grid_x), ctypes.c_uint(block_x), ptrs, kinds, sizes, ctypes.c_int(n))
        if rc != 0:
            raise GpucoreError(f"{self.name}: emulated launch refused (code {rc})")
        self.launches += 1


class _Module:
    def __init__(self, lib):
        self.lib = lib
        self.cache = {}

    def get_function(self, name):
        if name not in self.cache:
            self.cache[name] = EmulatedKernel(self.lib, name)
        return self.cache[name]


def emulated_engine(graph, model: str, rounds: int = 1, seed: int = 0, *, sms: int = 1, blocks_per_sm: int = 3,
                    free_bytes: int = 1 << 28, queue_size: int | None = None, **kw):
    """A ``CUDAEngine`` on NumPy arrays whose kernels run in the emulator (see module docstring)."""
    from gpucore.backend import get_backend
    from gpucore.im import cuda as cuda_mod

    qs = int(queue_size or cuda_mod.QUEUE_SIZE)
    lib = _library(qs)
    module = _Module(lib)

    class EmulatedCUDAEngine(cuda_mod.CUDAEngine):
        name = "cuda-emulator"

        def _load(self, name, defines=()):
            return module

        def _device_facts(self):
            return sms, blocks_per_sm

        def _free_memory(self):
            return free_bytes

    return EmulatedCUDAEngine(graph, model, rounds, seed, get_backend("cpu"), **kw)

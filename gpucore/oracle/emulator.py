"""Run the oracle's CUDA kernels on the CPU, one thread after another (a test harness).

The kernels of ``gpucore/kernels/oracle_*.cu`` use no barriers, shared memory or warp intrinsics,
so executing their threads sequentially is one legal schedule of the GPU. This module compiles
the unmodified ``.cu`` sources as C++ with ``g++`` (a small prelude maps ``__global__``,
``threadIdx``, ``atomicOr`` ... to host code) and exposes an ``Engine`` whose kernels take the same
``f(grid, block, args)`` calls as CuPy's, on NumPy arrays. Every call checks each argument against
the kernel's C parameter type (pointer vs scalar, element size, signedness), which catches the
mistakes CuPy would pass silently (an int32 where the kernel reads an int64).

It tests the kernels' logic and the Python driver on machines without a GPU; it cannot find data
races (the GPU tests of ``tests/gpu`` do that part).
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

MODULES = ("oracle_ic", "oracle_lt")

_PRELUDE = r"""
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>
using std::floor; using std::ceil;
struct oc_dim3 { unsigned int x, y, z; };
static oc_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
static inline unsigned long long atomicOr(unsigned long long* a, unsigned long long v) { unsigned long long o = *a; *a = o | v; return o; }
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) { unsigned long long o = *a; *a = o + v; return o; }
static inline unsigned int atomicAdd(unsigned int* a, unsigned int v) { unsigned int o = *a; *a = o + v; return o; }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
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
template <typename... A>
static int oc_launch(void (*f)(A...), unsigned grid, unsigned block, void** args, const long long* kinds,
                     const long long* sizes, int nargs) {
    if (nargs != (int)sizeof...(A)) return -1000 - (int)sizeof...(A);
    const long long want_kind[] = {(long long)oc_kind<A>()...};
    const long long want_size[] = {oc_size<A>()...};
    for (int i = 0; i < nargs; ++i)
        if (kinds[i] != want_kind[i] || sizes[i] != want_size[i]) return 1 + i;
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    for (unsigned b = 0; b < grid; ++b)
        for (unsigned t = 0; t < block; ++t) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            oc_call(f, args, std::index_sequence_for<A...>{});
        }
    return 0;
}
template <typename... A> static int oc_nargs(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> static void oc_describe(void (*)(A...), long long* kinds, long long* sizes) {
    const long long k[] = {(long long)oc_kind<A>()...};
    const long long s[] = {oc_size<A>()...};
    for (std::size_t i = 0; i < sizeof...(A); ++i) { kinds[i] = k[i]; sizes[i] = s[i]; }
}
"""

_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


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
        cmd = ["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-Wall", "-Wno-unused-function",
               "-Wno-unknown-pragmas", f"-I{KERNEL_DIR}", "-o", str(tmp), str(cpp)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise GpucoreError(f"emulator build failed: {proc.stderr.strip().splitlines()[0] if proc.stderr else ''}")
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


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


class _EmulatedKernel:
    def __init__(self, lib, name: str):
        self.name = name
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
        rc = self._f(ctypes.c_uint(grid_x), ctypes.c_uint(block_x), ptrs, kinds, sizes, ctypes.c_int(n))
        if rc != 0:
            raise GpucoreError(f"{self.name}: emulated launch refused (code {rc})")


def emulator_engine(blocks: int = 3, block: int = 32, free_bytes: int = 1 << 30) -> Engine:
    """An ``Engine`` running the CUDA kernels sequentially on the CPU (small grids keep it fast)."""
    lib = _library()
    cache: dict[str, _EmulatedKernel] = {}

    def kernel(module: str, name: str):
        if module not in MODULES:
            raise GpucoreError(f"emulator: unknown kernel module {module!r}")
        if name not in cache:
            cache[name] = _EmulatedKernel(lib, name)
        return cache[name]

    return Engine(name="emulator", xp=np, blocks=blocks, block=block, _kernel=kernel, _free=lambda: free_bytes,
                  info={"backend": "emulator", "device": "sequential C++ emulation of the CUDA kernels"})

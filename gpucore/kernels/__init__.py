"""CUDA C++ kernel sources (``*.cu``, ``*.cuh``) and their loader.

``load_module("name")`` compiles ``gpucore/kernels/name.cu`` with NVRTC through ``cupy.RawModule``
for the current device's architecture, once per process (CuPy also caches the binary on disk).
Headers in this folder are on the include path. Every source must also compile with plain
``nvcc -arch=sm_90`` (CI checks that), so keep them free of CuPy-only includes.
"""

import hashlib
from functools import lru_cache
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def load_module(name: str, defines: tuple[tuple[str, str], ...] = ()):
    """Compile (or fetch from cache) ``name.cu`` as a ``cupy.RawModule``. ``defines``: (-D pairs)."""
    import cupy

    source = (KERNEL_DIR / f"{name}.cu").read_text()
    options = ["-std=c++17", f"-I{KERNEL_DIR}"] + [f"-D{k}={v}" for k, v in defines]
    # The include path does not enter CuPy's cache key; fold the headers' text into the source.
    headers = "".join(p.read_text() for p in sorted(KERNEL_DIR.glob("*.cuh")))
    tag = f"\n// headers-digest {hashlib.sha1(headers.encode()).hexdigest()}\n"
    return cupy.RawModule(code=source + tag, options=tuple(options))


def get_kernel(module: str, kernel: str, defines: tuple[tuple[str, str], ...] = ()):
    """Return one kernel function from a loaded module."""
    return load_module(module, defines).get_function(kernel)

"""CUDA C++ kernel sources and their loader.

Sources live in one folder per family: ``common/`` (headers every family may include, such as the
counter-based RNG ``gc_random.cuh``), ``amcss/``, ``im/``, ``oracle/`` and the folders of newer
families. A module is named by its path below this folder without the suffix, e.g.
``load_module("im/im_sample")``. The include path of a module is ``common/`` plus the module's own
folder, so a family's kernels see the shared headers and their family's headers, never another
family's (the oracle's independence, tested, rests on that).

``load_module(name)`` compiles ``name.cu`` with NVRTC through ``cupy.RawModule`` for the current
device's architecture, once per process (CuPy also caches the binary on disk). Every source must
also compile with plain ``nvcc -arch=sm_90`` and the same include path (CI checks that), so keep
them free of CuPy-only includes.
"""

import hashlib
from functools import lru_cache
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent
COMMON_DIR = KERNEL_DIR / "common"


def source_path(name: str) -> Path:
    """The ``.cu`` file of module ``name`` (``family/module``)."""
    return KERNEL_DIR / f"{name}.cu"


def include_dirs(source: Path) -> list[Path]:
    """The include path of a kernel source: ``common/`` and the source's own folder."""
    return sorted({COMMON_DIR, Path(source).resolve().parent})


@lru_cache(maxsize=None)
def load_module(name: str, defines: tuple[tuple[str, str], ...] = ()):
    """Compile (or fetch from cache) ``name.cu`` as a ``cupy.RawModule``. ``defines``: (-D pairs)."""
    import cupy

    path = source_path(name)
    dirs = include_dirs(path)
    options = ["-std=c++17", *(f"-I{d}" for d in dirs)] + [f"-D{k}={v}" for k, v in defines]
    # The include path does not enter CuPy's cache key; fold the headers' text into the source.
    headers = "".join(p.read_text() for d in dirs for p in sorted(d.glob("*.cuh")))
    tag = f"\n// headers-digest {hashlib.sha1(headers.encode()).hexdigest()}\n"
    return cupy.RawModule(code=path.read_text() + tag, options=tuple(options))


def get_kernel(module: str, kernel: str, defines: tuple[tuple[str, str], ...] = ()):
    """Return one kernel function from a loaded module."""
    return load_module(module, defines).get_function(kernel)

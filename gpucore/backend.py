"""Backend selection: the one place that knows whether CuPy/CUDA or NumPy/Numba runs.

``cuda`` is CuPy arrays and CUDA C++ kernels (``gpucore.kernels``); ``cpu`` is NumPy + Numba with
the same algorithm and data layout. ``auto`` picks ``cuda`` when CuPy sees a device. Asking for
``cuda`` where there is none is a ``GpucoreError`` saying why.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType

import numpy as np

from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes

BACKENDS = ("auto", "cpu", "cuda")


@lru_cache(maxsize=1)
def _cupy_probe() -> tuple[ModuleType | None, str]:
    """Import CuPy and count devices once; returns (cupy or None, reason when None)."""
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        return None, f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"CuPy sees no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return None, "CuPy sees no CUDA device"
    return cupy, ""


def cuda_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    return _cupy_probe()[0] is not None


@dataclass(frozen=True)
class Backend:
    """An execution backend. ``xp`` is the array module (numpy or cupy)."""

    name: str
    xp: ModuleType

    @property
    def is_cuda(self) -> bool:
        return self.name == "cuda"

    def asarray(self, array, dtype=None, what: str = "array"):
        """Copy a host array to this backend (no copy on cpu). Out-of-memory names the size."""
        if not self.is_cuda:
            return np.asarray(array, dtype=dtype)
        return guard_oom(lambda: self.xp.asarray(array, dtype=dtype), int(np.asarray(array).nbytes), what)

    def empty(self, shape, dtype, what: str = "array"):
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return guard_oom(lambda: self.xp.empty(shape, dtype=dtype), nbytes, what)

    def zeros(self, shape, dtype, what: str = "array"):
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return guard_oom(lambda: self.xp.zeros(shape, dtype=dtype), nbytes, what)

    def to_host(self, array) -> np.ndarray:
        return array.get() if self.is_cuda else np.asarray(array)

    def synchronize(self) -> None:
        if self.is_cuda:
            self.xp.cuda.get_current_stream().synchronize()

    def free_memory(self) -> int:
        """Bytes of free memory on the device (cuda) or available RAM (cpu)."""
        if self.is_cuda:
            free, _total = self.xp.cuda.runtime.memGetInfo()
            return int(free) + int(self.xp.get_default_memory_pool().free_bytes())
        return available_ram()

    def peak_memory(self) -> int:
        """Peak bytes held by CuPy's pool since the last ``reset_peak`` (0 on cpu)."""
        if not self.is_cuda:
            return 0
        return _peak_tracker().peak

    def reset_peak(self) -> None:
        if self.is_cuda:
            _peak_tracker().reset(self.xp)

    def device_info(self) -> dict:
        """Facts for result files: backend, device name, memory, SMs, driver, library versions."""
        import numba

        info = {
            "backend": self.name,
            "host": platform.node(),
            "cpu_count": os.cpu_count(),
            "numpy": np.__version__,
            "numba": numba.__version__,
        }
        if self.is_cuda:
            cp = self.xp
            dev = cp.cuda.Device()
            props = cp.cuda.runtime.getDeviceProperties(dev.id)
            name = props["name"]
            info.update(
                device=name.decode() if isinstance(name, bytes) else str(name),
                device_id=dev.id,
                device_memory_bytes=int(props["totalGlobalMem"]),
                sm_count=int(props["multiProcessorCount"]),
                compute_capability=f"{props['major']}.{props['minor']}",
                driver_version=int(cp.cuda.runtime.driverGetVersion()),
                runtime_version=int(cp.cuda.runtime.runtimeGetVersion()),
                cupy=cp.__version__,
            )
        else:
            info.update(device=platform.processor() or platform.machine(), numba_threads=_numba_threads())
        return info


class _PeakTracker:
    """Tracks the CuPy pool's high-water mark by sampling at allocation (cheap, conservative)."""

    def __init__(self):
        self.peak = 0

    def reset(self, cp) -> None:
        self.peak = int(cp.get_default_memory_pool().used_bytes())

    def sample(self, cp) -> None:
        self.peak = max(self.peak, int(cp.get_default_memory_pool().used_bytes()))


@lru_cache(maxsize=1)
def _peak_tracker() -> _PeakTracker:
    return _PeakTracker()


def guard_oom(make, nbytes: int, what: str):
    """Run an allocating callable; turn CuPy's out-of-memory into ``OutOfMemoryError`` naming sizes."""
    cp = _cupy_probe()[0]
    try:
        out = make()
    except Exception as exc:
        if cp is not None and isinstance(exc, cp.cuda.memory.OutOfMemoryError):
            free, total = cp.cuda.runtime.memGetInfo()
            raise OutOfMemoryError(
                f"out of GPU memory allocating {what}: needed {format_bytes(nbytes)}, "
                f"free {format_bytes(free)} of {format_bytes(total)}"
            ) from None
        raise
    if cp is not None:
        _peak_tracker().sample(cp)
    return out


def available_ram() -> int:
    """Available host memory in bytes (MemAvailable), or total physical memory as a fallback."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _numba_threads() -> int:
    import numba

    return int(numba.get_num_threads())


def get_backend(name: str = "auto") -> Backend:
    """Resolve ``auto|cpu|cuda`` to a Backend. ``cuda`` without a usable GPU raises GpucoreError."""
    if name not in BACKENDS:
        raise GpucoreError(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")
    if name == "cpu":
        return Backend("cpu", np)
    cupy, reason = _cupy_probe()
    if cupy is None:
        if name == "cuda":
            raise GpucoreError(f"backend 'cuda' requested but unavailable: {reason}")
        return Backend("cpu", np)
    return Backend("cuda", cupy)


def use_local_device(local_rank: int) -> int | None:
    """One rank per GPU: make device ``local_rank % visible devices`` current for this process.

    Called by ``gpucore.dist`` before any CuPy work, with the rank's index among the ranks of its
    node. Where the launcher gives each rank its own GPU (``CUDA_VISIBLE_DEVICES`` of one device)
    that is device 0; where ranks outnumber the GPUs they share them round-robin (correct, slower).
    Returns the device id, or None where CuPy sees no device.
    """
    cupy = _cupy_probe()[0]
    if cupy is None:
        return None
    device = int(local_rank) % int(cupy.cuda.runtime.getDeviceCount())
    cupy.cuda.Device(device).use()
    return device


def set_cpu_threads(threads: int | None) -> None:
    """Bound Numba's worker threads (None leaves the default: all cores)."""
    if threads is None:
        return
    import numba

    if threads < 1:
        raise GpucoreError(f"--threads must be >= 1, got {threads}")
    numba.set_num_threads(min(int(threads), numba.config.NUMBA_NUM_THREADS))


def scan_total(values) -> int:
    """The sum of ``values`` (booleans count 1) as a Python int, read off the last element of an int64
    inclusive scan. Not ``.sum()``, ``.any()``, ``.all()`` or ``count_nonzero``: CuPy runs those through CUB
    reductions that it compiles per size class of the input, so a warm-up on a small input does not cover a
    large one, and a first solve compiled inside its timed phases (seconds in a fresh kernel cache); the scan
    is one kernel per dtype (its int64 buffer is no larger than what ``flagged`` already takes in the same phase).
    ``values``: a NumPy or CuPy array; NumPy sums directly, without the scan's buffer."""
    if isinstance(values, np.ndarray):
        return int(values.sum(dtype=np.int64))
    if values.size == 0:
        return 0
    return int(values.reshape(-1).cumsum(dtype=np.int64)[-1])

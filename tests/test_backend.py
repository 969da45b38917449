"""Backend selection: auto/cpu/cuda, clear errors, device facts, OOM messages."""

import numpy as np
import pytest

from gpucore import backend as backend_mod
from gpucore.backend import get_backend, scan_total, set_cpu_threads
from gpucore.errors import GpucoreError, OutOfMemoryError, format_bytes


def test_cpu_backend_is_numpy():
    b = get_backend("cpu")
    assert b.name == "cpu" and b.xp is np and not b.is_cuda
    info = b.device_info()
    assert info["backend"] == "cpu" and info["numba_threads"] >= 1 and "numpy" in info


def test_unknown_backend():
    with pytest.raises(GpucoreError, match="unknown backend 'tpu'"):
        get_backend("tpu")


def test_cuda_without_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(backend_mod, "_cupy_probe", lambda: (None, "CuPy is not importable (ImportError: x)"))
    with pytest.raises(GpucoreError, match="backend 'cuda' requested but unavailable: CuPy is not importable"):
        get_backend("cuda")
    assert get_backend("auto").name == "cpu"


@pytest.mark.skipif(backend_mod.cuda_available(), reason="a GPU is present")
def test_auto_is_cpu_here():
    assert get_backend("auto").name == "cpu"


def test_guard_oom_names_the_size(monkeypatch):
    class FakeOOM(Exception):
        pass

    class FakeCupy:
        class cuda:
            class memory:
                OutOfMemoryError = FakeOOM

            class runtime:
                @staticmethod
                def memGetInfo():
                    return (2 * 1024**3, 80 * 1024**3)

    monkeypatch.setattr(backend_mod, "_cupy_probe", lambda: (FakeCupy, ""))

    def alloc():
        raise FakeOOM("cudaErrorMemoryAllocation")

    with pytest.raises(OutOfMemoryError, match=r"allocating RR sets: needed 12.00 GiB, free 2.00 GiB of 80.00 GiB"):
        backend_mod.guard_oom(alloc, 12 * 1024**3, "RR sets")


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(3 * 1024**3) == "3.00 GiB"


def test_set_cpu_threads_rejects_zero():
    with pytest.raises(GpucoreError, match="--threads"):
        set_cpu_threads(0)


def test_scan_total_is_the_sum():
    rng = np.random.default_rng(3)
    flags = rng.random((7, 11)) < 0.3
    assert scan_total(flags) == int(flags.sum())
    counts = rng.integers(0, 2**40, size=1000, dtype=np.uint64)
    assert scan_total(counts) == int(counts.sum(dtype=np.uint64))
    assert scan_total(np.zeros(0, dtype=bool)) == 0
    assert scan_total(np.array([False])) == 0


class _DeviceLike:
    """An array that is not a NumPy array (as a CuPy one): scan_total takes the scan path."""

    def __init__(self, a):
        self.a = np.asarray(a)
        self.size = self.a.size

    def reshape(self, *shape):
        return _DeviceLike(self.a.reshape(*shape))

    def cumsum(self, dtype=None):
        return self.a.cumsum(dtype=dtype)


def test_scan_total_scan_path_is_the_sum():
    flags = np.random.default_rng(4).random((5, 9)) < 0.4
    assert scan_total(_DeviceLike(flags)) == int(flags.sum())
    assert scan_total(_DeviceLike(np.zeros(0, dtype=bool))) == 0

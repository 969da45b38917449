"""gpucore/kernels/common/gc_loops.cuh on a real GPU (pytest -m gpu): the kernels of
tests/test_kernel_loops.py compiled by NVRTC, every loop visits each item once and the warp sums
equal NumPy's, for the same launch shapes as in the emulator."""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.kernels import COMMON_DIR
from tests.test_kernel_loops import SOURCE


@pytest.fixture(scope="module")
def module():
    import cupy

    return cupy.RawModule(code=SOURCE, options=("-std=c++17", f"-I{COMMON_DIR}"))


@pytest.mark.parametrize("grid,block,begin,end", [(1, 32, 0, 5), (3, 64, 0, 1000), (2, 96, 7, 300), (5, 32, 3, 3),
                                                  (80, 256, 0, 1000)])
def test_every_item_is_visited_once(module, grid, block, begin, end):
    import cupy

    n = 1100
    hits = cupy.zeros(7 * n, dtype=cupy.int32)
    module.get_function("loops")((grid,), (block,), (hits, np.int64(begin), np.int64(end), np.int64(n)))
    want = np.zeros(n, dtype=np.int32)
    want[begin:end] = 1
    got = hits.get()
    for kind in range(7):
        assert np.array_equal(got[kind * n:(kind + 1) * n], want), kind


def test_warp_sums_and_ranks(module):
    import cupy

    x = np.random.default_rng(3).integers(-(1 << 40), 1 << 40, 96).astype(np.int64)
    incl, total, ranks = (cupy.zeros(96, np.int64), cupy.zeros(96, np.int64), cupy.zeros(96, np.int32))
    module.get_function("sums")((1,), (96,), (cupy.asarray(x), incl, total, ranks))
    incl, total, ranks = incl.get(), total.get(), ranks.get()
    for w in range(3):
        seg = x[32 * w: 32 * (w + 1)]
        assert np.array_equal(incl[32 * w: 32 * (w + 1)], np.cumsum(seg))
        assert np.all(total[32 * w: 32 * (w + 1)] == seg.sum())
        odd = (seg & 1).astype(np.int32)
        assert np.array_equal(ranks[32 * w: 32 * (w + 1)], np.cumsum(odd) - odd)

"""The shared loop and warp idioms of gpucore/kernels/common/gc_loops.cuh.

Exact, in the kernel emulator: every loop macro visits each item of [begin, end) exactly once over
its participants for several launch shapes (more threads than items, fewer, ragged), and the warp
sums equal NumPy's. Then the families that adopted the header (amcss, oracle) keep no hand-written
copy of these idioms.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gpucore.kernels import KERNEL_DIR
from gpucore.kernels import emulator as emu

pytestmark = pytest.mark.skipif(not emu.available(), reason="the kernel emulator needs g++")

SOURCE = r"""
#include "gc_loops.cuh"
// hits[kind * n + i] counts the visits of item i by loop kind (0 grid, 1 grid warps, 2 grid blocks,
// 3 block 0's threads, 4 warp 0 of block 0's lanes, 5 warp chunks, 6 block 0's chunks)
extern "C" __global__ void loops(int* hits, long long begin, long long end, long long n) {
    GC_FOR_GRID(i, begin, end) atomicAdd(&hits[0 * n + i], 1);
    GC_FOR_GRID_WARPS(i, begin, end) if (gc_lane() == 0) atomicAdd(&hits[1 * n + i], 1);
    GC_FOR_GRID_BLOCKS(i, begin, end) if (threadIdx.x == 0) atomicAdd(&hits[2 * n + i], 1);
    if (blockIdx.x == 0) {
        GC_FOR_BLOCK(i, begin, end) atomicAdd(&hits[3 * n + i], 1);
        if (gc_warp() == 0) GC_FOR_WARP(i, begin, end) atomicAdd(&hits[4 * n + i], 1);
        GC_FOR_BLOCK_CHUNKS(b, begin, end) {
            __syncthreads();  // block-uniform trip count: a barrier inside is legal
            if (b + (long long)threadIdx.x < end) atomicAdd(&hits[6 * n + b + threadIdx.x], 1);
        }
    }
    GC_FOR_GRID_WARP_CHUNKS(b, begin, end) {
        const unsigned inside = __ballot_sync(GC_FULL_MASK, b + gc_lane() < end);  // warp-uniform
        if (inside >> gc_lane() & 1u) atomicAdd(&hits[5 * n + b + gc_lane()], 1);
    }
}
extern "C" __global__ void sums(const long long* x, long long* incl, long long* total, int* ranks) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    incl[t] = gc_warp_inclusive_sum(x[t]);
    total[t] = gc_warp_sum(x[t]);
    ranks[t] = __popc(__ballot_sync(GC_FULL_MASK, (x[t] & 1) != 0) & gc_lanes_below());
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("loops") / "loops.cu"
    path.write_text(SOURCE)
    return emu.compile_modules([path])


@pytest.mark.parametrize("grid,block,begin,end", [(1, 32, 0, 5), (3, 64, 0, 1000), (2, 96, 7, 300), (5, 32, 3, 3)])
def test_every_item_is_visited_once(lib, grid, block, begin, end):
    n = 1100
    hits = np.zeros(7 * n, dtype=np.int32)
    lib.get_function("loops")((grid,), (block,), (hits, np.int64(begin), np.int64(end), np.int64(n)))
    want = np.zeros(n, dtype=np.int32)
    want[begin:end] = 1
    for kind in range(7):
        assert np.array_equal(hits[kind * n:(kind + 1) * n], want), kind


def test_warp_sums_and_ranks(lib):
    x = np.random.default_rng(3).integers(-(1 << 40), 1 << 40, 96).astype(np.int64)
    incl, total, ranks = np.zeros(96, np.int64), np.zeros(96, np.int64), np.zeros(96, np.int32)
    lib.get_function("sums")((1,), (96,), (x, incl, total, ranks))
    for w in range(3):
        seg = x[32 * w: 32 * (w + 1)]
        assert np.array_equal(incl[32 * w: 32 * (w + 1)], np.cumsum(seg))
        assert np.all(total[32 * w: 32 * (w + 1)] == seg.sum())
        odd = (seg & 1).astype(np.int32)
        assert np.array_equal(ranks[32 * w: 32 * (w + 1)], np.cumsum(odd) - odd)


#: hand-written forms of what gc_loops.cuh provides
IDIOMS = {
    "lane": re.compile(r"threadIdx\.x\s*&\s*31"),
    "warp in block": re.compile(r"threadIdx\.x\s*>>\s*5"),
    "full mask": re.compile(r"0xffffffffu\b"),
    "grid size": re.compile(r"gridDim\.x\s*\*\s*\(?\s*(?:\(gc_[iu]64\)\s*)?blockDim\.x"),
    "lane loop": re.compile(r"for\s*\([^;]*=\s*[^;]*\blane\b[^;]*;[^;]*;[^)]*\+=\s*32\s*\)"),
    "block loop": re.compile(r"for\s*\([^;]*=\s*[^;]*threadIdx\.x\s*;[^;]*;[^)]*\+=\s*blockDim\.x\s*\)"),
}


@pytest.mark.parametrize("family", ["amcss", "oracle"])
def test_families_use_the_shared_header(family):
    sources = sorted((KERNEL_DIR / family).glob("*.cu*"))
    assert sources
    for path in sources:
        text = re.sub(r"//[^\n]*", "", Path(path).read_text())  # comments may name the idioms
        for name, pattern in IDIOMS.items():
            assert not pattern.search(text), f"{path.name}: hand-written {name} ({pattern.search(text).group(0)})"
    assert any('#include "gc_loops.cuh"' in p.read_text() for p in sources)

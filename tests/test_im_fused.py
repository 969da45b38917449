"""The fused sampler on the CPU: set-for-set equality with the unfused (gIM-style) sampler.

A fused batch must yield exactly the RR sets the unfused sampler yields for the same keys, for IC and
LT, one and several rounds, every batch width, every vertex order, sorted or unsorted sources, both
tail strategies, calls whose size is not a multiple of the width, and after the output buffers had
to grow. IMM then chooses identical seeds whatever the sampler (run through the sampler registry, as
``gpucore im --sampler fused`` runs it). Equality with the unfused sampler
(itself checked against a plain-Python rebuild of the keys and against exact distributions in
``test_im_sampler.py``) is the whole correctness argument, so these tests are exact, not statistical.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.errors import GpucoreError, OutOfMemoryError
from gpucore.graph import from_arcs
from gpucore.im import imm
from gpucore.im.cpu import CPUSampler, CPUSelector
from gpucore.im.engine import make_engine, make_sampler
from gpucore.im.fused import batching
from gpucore.im.fused.cpu import FusedCPUSampler
from gpucore.im.rrsets import ESTIMATE_OFFSET
from gpucore.im.sampling import canonical, engine_sets
from gpucore.random import Stream, mix_py
from tests.im_graphs import dense_graph, hubs_graph, wc_graph

CPU = get_backend("cpu")


def unfused(g, model, rounds, seed, j0, count):
    return canonical(*engine_sets(CPUSampler(g, model, rounds, seed, CPU), j0, count))


def same(a, b):
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@pytest.fixture(scope="module")
def graphs():
    return {"wc": wc_graph(), "dense": dense_graph()}


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 2), ("LT", 3)])
@pytest.mark.parametrize("width", [32, 64, 128, 256])
def test_equal_to_unfused_every_width_order_and_tail(graphs, model, rounds, width):
    for name, g in graphs.items():
        for j0 in (0, ESTIMATE_OFFSET):
            want = unfused(g, model, rounds, 7, j0, 333)
            for order in ("none", "rcm", "community"):
                for tail in ("none", "refill"):
                    for sorted_sources in (True, False):
                        eng = FusedCPUSampler(g, model, rounds, 7, CPU, batch_width=width, order=order, tail=tail,
                                              sorted_sources=sorted_sources)
                        got = canonical(*engine_sets(eng, j0, 333, batch=130))  # 130, 130, 73: no multiple
                        same(want, got)
                        assert eng.stats()["traversals"] == 333 * rounds
                        assert eng.stats()["sorted_pieces"] == (3 if sorted_sources else 0)  # every piece


@pytest.mark.parametrize("rounds", [1, 2])
def test_skipping_hubs_equal_to_unfused(rounds):
    """Traversals that reach a skipping hub walk its jumps bit by bit: the unfused sampler's sets, every width
    and order; the jumps are counted apart from the rows read."""
    g = hubs_graph()
    want = unfused(g, "IC", rounds, 5, 3, 257)
    for width in batching.WIDTHS:
        for order, tail in (("none", "refill"), ("rcm", "none"), ("community", "refill")):
            eng = FusedCPUSampler(g, "IC", rounds, 5, CPU, batch_width=width, order=order, tail=tail)
            same(want, canonical(*engine_sets(eng, 3, 257, batch=100)))
            stats = eng.stats()
            assert stats["skip_jumps"] > 0 and stats["traversals"] == 257 * rounds
            assert stats["edge_reads"] < stats["edge_reads_unfused"]


def test_every_set_is_there_once_with_its_root(graphs):
    g = graphs["wc"]
    eng = make_sampler(g, "IC", 1, 3, CPU, "fused", batch_width=64)
    offsets, elems = engine_sets(eng, 0, 101)
    assert offsets.shape[0] == 102 and np.all(np.diff(offsets) >= 1)
    for i in range(101):
        members = elems[offsets[i] : offsets[i + 1]]
        assert mix_py(3, Stream.ROOT, i, 0, 0) % g.n in members
        assert np.unique(members).size == members.size


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_independent_of_workers_and_pieces(graphs, model, monkeypatch):
    g = graphs["dense"]
    want = unfused(g, model, 2, 11, 50, 700)
    for workers in (1, 3):
        got = canonical(*engine_sets(FusedCPUSampler(g, model, 2, 11, CPU, batch_width=32, workers=workers), 50, 700))
        same(want, got)
    monkeypatch.setattr(batching, "MAX_PIECE_TRAVERSALS", 90)  # 45 sets per piece, sorted within each
    got = canonical(*engine_sets(FusedCPUSampler(g, model, 2, 11, CPU, batch_width=64), 50, 700))
    same(want, got)


def test_output_regrowth_keeps_sets():
    # p = 1 on a cycle: every set is the whole graph, far above the first size estimate
    n = 500
    g = from_arcs(n, np.arange(n), (np.arange(n) + 1) % n, 1.0)
    eng = FusedCPUSampler(g, "IC", 1, 1, CPU, batch_width=32, workers=2)
    offsets, elems = canonical(*engine_sets(eng, 0, 70))
    assert np.all(np.diff(offsets) == n)
    assert np.array_equal(elems.reshape(70, n), np.tile(np.arange(n), (70, 1)))
    assert eng.stats()["regrowths"] >= 1


def test_fusing_saves_edge_reads_and_counts_occupancy(graphs):
    g = graphs["dense"]
    eng = FusedCPUSampler(g, "IC", 1, 5, CPU, batch_width=64, order="rcm")
    engine_sets(eng, 0, 640)
    s = eng.stats()
    assert s["edge_reads"] * 4 < s["edge_reads_unfused"]  # many traversals per adjacency read
    assert 0.25 < s["occupancy"] <= 1.0
    assert s["mask_bits"] >= s["entries"] > 0 and s["levels"] > 0 and s["extractions"] > 0
    assert s["mask_bytes"] > 0 and s["frontier_bytes_peak"] > 0
    assert set(s["seconds_by_phase"]) == {"reorder", "roots", "traverse", "compact"}


def test_tail_refill_uses_fewer_levels_than_waiting_for_the_batch():
    # a long chain hanging off a star: few traversals run long, the rest end at once
    n = 2000
    src = list(range(1, n)) + list(range(2, 400))
    dst = [0] * (n - 1) + list(range(1, 399))
    g = from_arcs(n, src, dst, 1.0)
    levels = {}
    for tail in ("none", "refill"):
        eng = FusedCPUSampler(g, "IC", 1, 4, CPU, batch_width=32, tail=tail, workers=1, sorted_sources=False)
        engine_sets(eng, 0, 600)
        levels[tail] = eng.stats()["levels"]
    assert levels["refill"] < levels["none"]


def test_registry_pairs_the_fused_sampler_with_the_cpu_selector(graphs):
    eng = make_engine(graphs["wc"], "IC", 1, 0, CPU, "fused", batch_width=128, tail="none")
    assert isinstance(eng.sampler, FusedCPUSampler) and isinstance(eng.selector, CPUSelector)
    assert eng.sampler.options.batch_width == 128 and eng.sampler.options.tail == "none"
    assert eng.sampler_stats()["batch_width"] == 128
    assert make_engine(graphs["wc"], "IC", 1, 0, CPU).sampler_stats() is None  # gim: no instrumentation


def same_imm(a, b):
    """Two IMM results agree on everything the sets decide."""
    for key in ("seeds", "seed_ids", "marginal_coverage", "theta", "lower_bound", "lb_iteration", "lb_sets",
                "lb_iterations", "covered", "estimated_spread", "estimated_spread_stderr", "estimate_sets",
                "rr_elements"):
        assert a[key] == b[key], key


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 3)])
def test_imm_identical_whatever_the_sampler(graphs, model, rounds):
    g = graphs["wc"]
    want = imm(g, 5, 0.5, model, rounds=rounds, seed=3, backend="cpu", sampler="gim")
    assert want["sampler"] == "gim" and "sampler_stats" not in want
    for opts in ({"batch_width": 32}, {"batch_width": 256, "order": "community", "tail": "none",
                                       "sorted_sources": False}):
        got = imm(g, 5, 0.5, model, rounds=rounds, seed=3, backend="cpu", sampler="fused", sampler_options=opts)
        same_imm(want, got)
        assert got["sampler"] == "fused" and got["sampler_options"] == opts
        stats = got["sampler_stats"]
        assert {k: stats[k] for k in opts} == opts
        # the warm-up's sets are not counted: exactly the selection's and the estimate's traversals
        assert stats["traversals"] == (got["theta"] + got["estimate_sets"]["count"]) * rounds
        assert set(stats["seconds_by_phase"]) == {"reorder", "roots", "traverse", "compact"}


def test_imm_identical_whatever_the_sampler_with_skipping_hubs():
    g = hubs_graph()
    want = imm(g, 4, 0.5, "IC", seed=8, backend="cpu", sampler="gim")
    got = imm(g, 4, 0.5, "IC", seed=8, backend="cpu", sampler="fused", sampler_options={"batch_width": 64})
    same_imm(want, got)
    assert got["sampler_stats"]["skip_jumps"] > 0


@pytest.mark.parametrize("options,msg", [
    ({"batch_width": 48}, "--batch-width 48: choose one of 32, 64, 128, 256"),
    ({"batch_width": True}, "--batch-width True"),
    ({"order": "metis"}, "--order 'metis'"),
    ({"tail": "pause"}, "--tail 'pause'"),
])
def test_bad_options(graphs, options, msg):
    with pytest.raises(GpucoreError, match=msg) as err:
        make_sampler(graphs["wc"], "IC", 1, 0, CPU, "fused", **options)
    assert "\n" not in str(err.value)


def test_masks_beyond_memory_name_the_bytes(graphs):
    with pytest.raises(OutOfMemoryError, match=r"one batch of 256 traversals needs [0-9.]+ KiB of masks") as err:
        make_sampler(graphs["wc"], "IC", 1, 0, CPU, "fused", batch_width=256, memory_limit=4096)
    assert "\n" not in str(err.value)

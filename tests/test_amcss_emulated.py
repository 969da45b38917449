"""The AMCSS CUDA backend in the CPU emulator against the CPU backend: identical collections (as
``set_id -> (roots, members)``), coverage counters, flags, seeds and whole adaptive runs.

These run the unmodified ``amcss_build.cu`` / ``amcss_select.cu`` (``gpucore.kernels.emulator``)
through the real driver code of ``gpucore.amcss.cuda`` on NumPy arrays (``emulated``): Generate,
Update (clean / polluted / promoted roots / complement draws), the overflow -> grow -> resume path,
the beta groups with 32 x beta threads per block, multi-warp Generate, Select's fused argmax and
Discover, trimming and whole MERIT / regenerate runs. Blocks run one after another in the emulator:
races between blocks are left to ``tests/gpu/test_amcss_cuda.py``; random schedules interleave the
warps of a block.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.amcss import make_primitives, run_amcss
from gpucore.amcss.driver import sample_seed_of
from gpucore.kernels import emulator
from gpucore.oracle import replay
from gpucore.random import world_seed_of
from tests.test_amcss_exact import check_counts, check_sets
from tests.test_amcss_ref import dedup_graph, pa_graph, random_graph

pytestmark = pytest.mark.skipif(not emulator.available(), reason="g++ not available")


def emulated(graph, model, **kw):
    from gpucore.amcss.emulated import emulated_primitives

    preplan = kw.pop("preplan", True)
    prims = emulated_primitives(graph, model, **kw)
    prims.preplan = preplan
    return prims


def cpu(graph, model, segments=4, preplan=True):
    prims = make_primitives(graph, model, "cpu", memory_budget=2**30, segments=segments)
    prims.preplan = preplan
    return prims


def snapshot(prims):
    return prims.collection_sets(), prims.coverage().tolist(), prims.flags()


def scenario(prims, graph, model, eta, rounds=4, seed=11, theta=120, b=3, exact=False, trim_at=None):
    """Generate / select / diffuse / discover / update for a few rounds; a list of snapshots."""
    ws, ss = world_seed_of(seed, 0), sample_seed_of(seed, 0)
    prims.start(ws, ss)
    eta_i = eta
    out = []
    for rnd in range(1, rounds + 1):
        n_i = prims.n_residual
        k = n_i / eta_i
        if rnd > 1:
            before = prims.collection_sets()
            if trim_at == rnd:
                prims.trim(prims.theta * 2 // 3)
                out.append(("trim", snapshot(prims)))
                before = prims.collection_sets()
            stats = prims.update(k, rnd)
            keys = ("sets", "polluted", "clean", "entries_before", "entries_clean", "entries_after")
            out.append(("update", {key: stats[key] for key in keys}, snapshot(prims)))
            if exact:
                check_sets(prims, graph, model, ss, rnd, k, before=before)
                check_counts(prims)
        prims.generate(prims.theta + theta, k, rnd)
        out.append(("generate", snapshot(prims)))
        if exact:
            check_counts(prims)
        seeds, coverage = prims.select(b)
        out.append(("select", seeds.tolist(), coverage, snapshot(prims)))
        prims.commit()
        newly = prims.diffuse(seeds)
        eta_i -= newly.size
        out.append(("diffuse", sorted(newly.tolist())))
        if eta_i <= 0:
            break
        flagged = prims.discover_active()
        out.append(("discover", flagged, snapshot(prims)))
    return out


@pytest.fixture(scope="module")
def ic_graph():
    return random_graph(60, 220, seed=5, prob=0.25, name="ic60")


@pytest.fixture(scope="module")
def lt_graph():
    return random_graph(60, 240, seed=6, prob=None, name="wc60")


@pytest.fixture(scope="module")
def pa_small():
    return pa_graph(400, 1600, seed=2)


def graph_of(model, ic_graph, lt_graph):
    return ic_graph if model == "IC" else lt_graph


@pytest.fixture(scope="module")
def reference(ic_graph, lt_graph):
    """The CPU backend's scenario per model (computed once)."""
    return {model: scenario(cpu(graph_of(model, ic_graph, lt_graph), model), graph_of(model, ic_graph, lt_graph),
                            model, eta=45, trim_at=3)
            for model in ("IC", "LT")}


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_scenario_equals_cpu_and_reference_bfs(model, ic_graph, lt_graph, reference):
    """Every set after every Generate / Update equals the plain-Python BFS of its roots under its keys;
    every snapshot (sets, cnt, flags, seeds, coverage, newly active) equals the CPU backend's."""
    graph = graph_of(model, ic_graph, lt_graph)
    got = scenario(emulated(graph, model, segments=5, beta=2), graph, model, eta=45, exact=True, trim_at=3)
    assert len(got) >= 8
    assert got == reference[model]


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("config", [
    {"segments": 1, "beta": 1},
    {"segments": 7, "beta": 4, "preplan": False},
    {"segments": 3, "beta": 16, "preplan": False, "schedule_seed": 5},
    {"segments": 4, "beta": 8, "bitmaps": 64},  # multi-warp Generate (8 warps per block)
])
def test_scenario_independent_of_layout_beta_and_schedule(model, config, ic_graph, lt_graph, reference):
    graph = graph_of(model, ic_graph, lt_graph)
    got = scenario(emulated(graph, model, **config), graph, model, eta=45, trim_at=3)
    assert got == reference[model], config


def test_overflow_grows_segments_and_resumes(lt_graph):
    """One segment, no preplanning: Generate and Update hit the guard, the host relayouts and resumes;
    the result equals the CPU's and the reference BFS."""
    cpu_p = cpu(lt_graph, "LT", segments=1, preplan=False)
    gpu_p = emulated(lt_graph, "LT", segments=1, beta=2, preplan=False)
    for p in (cpu_p, gpu_p):
        p.start(1, 2)
        p.generate(400, 3.0, 1)
        p.mark_active([0, 1, 2, 3])
        p.discover_active()
    before = gpu_p.collection_sets()
    for p in (cpu_p, gpu_p):
        p.update(5.0, 2)
    assert gpu_p.stats["relayouts"] >= 2
    assert gpu_p.stats["generate_overflows"] >= 1
    check_sets(gpu_p, lt_graph, "LT", 2, 2, 5.0, before=before)
    check_counts(gpu_p)
    assert snapshot(gpu_p) == snapshot(cpu_p)


@pytest.mark.parametrize("segments", [1, 3])
def test_overflow_at_every_step_of_the_update(ic_graph, segments):
    """Tiny segments that must grow many times inside Generate and Update (clean, polluted and
    promoted-root sets abandoned at the guard and resumed): still the CPU's collection."""
    cpu_p = cpu(ic_graph, "IC", segments=2)
    gpu_p = emulated(ic_graph, "IC", segments=segments, beta=1, preplan=False)
    for p in (cpu_p, gpu_p):
        p.start(7, 8)
        p.generate(300, 2.0, 1)
        p.mark_active([4, 9, 11, 30])
        p.discover_active()
        p.update(3.5, 2)
        p.mark_active([12, 13])
        p.discover_active()
        p.update(6.0, 3)
    assert gpu_p.stats["relayouts"] >= 3 and gpu_p.stats["update_overflows"] >= 2
    assert snapshot(gpu_p) == snapshot(cpu_p)


def test_complement_root_draws(ic_graph):
    """k_i close to n_i: roots drawn by exclusion (fresh and clean sets, promoted members)."""
    cpu_p = cpu(ic_graph, "IC", segments=3)
    gpu_p = emulated(ic_graph, "IC", segments=2, beta=2)
    for p in (cpu_p, gpu_p):
        p.start(5, 6)
        p.generate(50, 60 / 2, 1)  # k = 30 of 60: both draw forms
    assert snapshot(gpu_p) == snapshot(cpu_p)
    check_sets(gpu_p, ic_graph, "IC", 6, 1, 30.0, fresh_ids=set(range(50)))
    for p in (cpu_p, gpu_p):
        p.mark_active(list(range(0, 60, 7)))
        p.discover_active()
    before = gpu_p.collection_sets()
    n2 = gpu_p.n_residual
    for p in (cpu_p, gpu_p):
        p.update(n2 / 1.6, 2)  # complement for most sets, with members promoted
    check_sets(gpu_p, ic_graph, "IC", 6, 2, n2 / 1.6, before=before)
    assert snapshot(gpu_p) == snapshot(cpu_p)
    for p in (cpu_p, gpu_p):
        p.update(float(n2), 3)  # eta_i = 1: every residual node is a root
    assert snapshot(gpu_p) == snapshot(cpu_p)
    residual = frozenset(np.flatnonzero(gpu_p.active_mask() == 0).tolist())
    assert all(roots == residual for roots, _m in gpu_p.collection_sets().values())


def test_complement_overflow_clears_marks(ic_graph):
    """A complement draw that hits the guard leaves every mark clean (later sets stay exact)."""
    cpu_p = cpu(ic_graph, "IC", segments=1, preplan=False)
    gpu_p = emulated(ic_graph, "IC", segments=1, beta=1, preplan=False)
    for p in (cpu_p, gpu_p):
        p.start(3, 4)
        p.generate(40, 40.0, 1)
        p.generate(80, 2.0, 1)
    assert gpu_p.stats["relayouts"] >= 1
    assert snapshot(gpu_p) == snapshot(cpu_p)
    assert not gpu_p.bitmaps.any()


def test_select_ties_and_exclusion():
    """Equal ratios resolve to the lowest id; chosen nodes are excluded; coverage counts sets."""
    # four disjoint stars of equal shape: many exact ties of cnt/c
    src, dst = [], []
    for c in range(4):
        hub = 10 * c
        for leaf in range(1, 6):
            src.append(hub + leaf)
            dst.append(hub)
    graph = dedup_graph(40, src, dst, prob=[1.0] * len(src), cost=np.ones(40, dtype=np.float32), name="stars")
    cpu_p = cpu(graph, "IC", segments=2)
    gpu_p = emulated(graph, "IC", segments=3)
    for p in (cpu_p, gpu_p):
        p.start(1, 1)
        p.generate(500, 2.0, 1)
    a = cpu_p.select(4)
    b = gpu_p.select(4)
    assert a[0].tolist() == b[0].tolist() and a[1] == b[1]
    assert snapshot(gpu_p) == snapshot(cpu_p)
    assert not gpu_p.excluded.any()


def test_auto_beta_follows_the_roots_per_set():
    """One warp per set below 2,048 roots per set, then a power of two per 1,024 roots, at most 8."""
    from gpucore.amcss.cuda import auto_beta

    assert [auto_beta(k) for k in (0.5, 200, 2047.9, 2048, 4095, 4096, 8192, 1e7)] == [1, 1, 1, 2, 2, 4, 8, 8]


def test_select_ends_the_batch_when_every_set_is_covered():
    """A hub in every set (a sure arc to each node) covers all sets with the first pick: the batch
    stops there on both backends instead of adding zero-gain seeds (ties would take the lowest
    ids), while b picks are made when each still covers something."""
    n = 30
    src = [0] * (n - 1) + list(range(1, n - 1))
    dst = list(range(1, n)) + list(range(2, n))
    graph = dedup_graph(n, src, dst, prob=[1.0] * (n - 1) + [0.0] * (n - 2),
                        cost=np.ones(n, dtype=np.float32), name="hub")
    cpu_p = cpu(graph, "IC", segments=2)
    gpu_p = emulated(graph, "IC", segments=3)
    for p in (cpu_p, gpu_p):
        p.start(1, 1)
        p.generate(200, 1.0, 1)
    for p in (cpu_p, gpu_p):
        seeds, coverage = p.select(4)
        assert seeds.tolist() == [0] and coverage == 200
    assert snapshot(gpu_p) == snapshot(cpu_p)
    assert not gpu_p.excluded.any() and not cpu_p.excluded.any()
    # without the hub's sure arcs every pick covers new sets: a full batch of 4
    free = dedup_graph(n, src, dst, prob=[0.0] * (2 * n - 3), cost=np.ones(n, dtype=np.float32), name="free")
    for p in (cpu(free, "IC", segments=2), emulated(free, "IC", segments=3)):
        p.start(1, 1)
        p.generate(200, 1.0, 1)
        assert len(p.select(4)[0]) == 4


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("update", [True, False])
def test_whole_runs_equal_cpu_and_replay(model, update, pa_small):
    """run_amcss on the emulated GPU == on the CPU: seeds, costs, newly active, theta per round."""
    kw = dict(model=model, eta=60, batch=3, eps=0.5, realizations=2, seed=3, update=update)
    want = run_amcss(pa_small, backend="cpu", memory_budget=2**30, segments=6, **kw)
    got = run_amcss(pa_small, primitives=emulated(pa_small, model, segments=4, beta=4), **kw)
    fields = ("seed_ids", "cost", "newly_active", "theta", "coverage", "trials", "k")
    for rw, rg in zip(want["realizations"], got["realizations"]):
        assert [[rd[f] for f in fields] for rd in rg["rounds"]] == [[rd[f] for f in fields] for rd in rw["rounds"]]
        assert rg["total_cost"] == rw["total_cost"]
        rep = replay(pa_small, rg["rounds"], model, rg["world_seed"], 60)
        assert rep.passed, rep.first_mismatch
    if update:
        assert any("update" in rd for rd in got["realizations"][0]["rounds"][1:])


def test_update_equals_regenerate_on_small_graph(pa_small):
    """MERIT's updated sets are the sets a regeneration from the same roots and keys gives."""
    model = "IC"
    gpu_p = emulated(pa_small, model, segments=3, beta=2)
    gpu_p.start(4, 5)
    gpu_p.generate(300, 6.0, 1)
    gpu_p.mark_active([0, 1, 2, 5, 8, 13])
    gpu_p.discover_active()
    before = gpu_p.collection_sets()
    gpu_p.update(8.0, 2)
    check_sets(gpu_p, pa_small, model, 5, 2, 8.0, before=before)
    check_counts(gpu_p)


def test_bad_beta_is_a_clear_error(ic_graph):
    from gpucore.errors import GpucoreError

    for beta in (0, 17, 2.5):
        with pytest.raises(GpucoreError, match="--beta"):
            emulated(ic_graph, "IC", beta=beta)


def test_memory_budget_too_small_names_the_bytes(pa_small):
    from gpucore.errors import OutOfMemoryError

    with pytest.raises(OutOfMemoryError, match=r"needs [0-9.]+ (KiB|MiB)"):
        emulated(pa_small, "IC", budget=20_000)

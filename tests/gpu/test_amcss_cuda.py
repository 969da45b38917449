"""AMCSS on the GPU (MERIT's kernels) against the CPU backend: identical collections, coverage, seeds
and whole adaptive runs for the same keys (issue 5, item 2), at every beta and through the
overflow -> grow -> resume fallback; scale, memory reporting and errors.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_amcss_cuda.py -v``.
Real graphs come from $GPUCORE_SHARED_DATA, ./.shared_data or ../shared/data/snap (skipped if absent).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from gpucore.amcss import make_primitives, run_amcss
from gpucore.amcss.cuda import auto_beta
from gpucore.errors import OutOfMemoryError
from gpucore.oracle import replay
from tests.test_amcss_emulated import scenario, snapshot
from tests.test_amcss_exact import check_counts, check_sets
from tests.test_amcss_ref import pa_graph, random_graph

REPO = Path(__file__).resolve().parents[2]
ROUND_FIELDS = ("seed_ids", "cost", "newly_active", "theta", "coverage", "trials", "k", "n_residual")


def gpu(graph, model, segments=None, beta=None, preplan=True, budget=16 << 30):
    prims = make_primitives(graph, model, "cuda", memory_budget=budget, segments=segments, beta=beta)
    assert prims.name == "cuda"
    prims.preplan = preplan
    return prims


def cpu(graph, model, segments=64, preplan=True):
    prims = make_primitives(graph, model, "cpu", memory_budget=16 << 30, segments=segments)
    prims.preplan = preplan
    return prims


def rounds_of(result):
    return [[[rd[f] for f in ROUND_FIELDS] for rd in rec["rounds"]] for rec in result["realizations"]]


def check_replay(graph, result):
    for rec in result["realizations"]:
        rep = replay(graph, rec["rounds"], result["model"], rec["world_seed"], result["eta"])
        assert rep.passed, rep.first_mismatch
        assert rep.reached and rep.total_active == rec["active"]


def lt_consistent(graph, nodes) -> list[int]:
    """``nodes`` plus every node whose in-neighbours all end up active: the state an LT diffusion can
    leave under weighted cascade (an inactive node always has an inactive in-neighbour), which the
    conditioned reverse walk (correction 4) requires; ``mark_active`` takes the state as given."""
    active = np.zeros(graph.n, dtype=bool)
    active[np.asarray(nodes)] = True
    indeg = np.diff(graph.in_indptr)
    dst = np.repeat(np.arange(graph.n), indeg)
    while True:
        inactive_in = np.bincount(dst, weights=~active[graph.in_src], minlength=graph.n)
        grow = (~active) & (indeg > 0) & (inactive_in == 0)
        if not grow.any():
            return np.flatnonzero(active).tolist()
        active |= grow


@pytest.fixture(scope="module")
def mid():
    """A mid-size preferential-attachment graph (weighted cascade, so LT is valid too)."""
    return pa_graph(20000, 160000, seed=3)


@pytest.fixture(scope="module")
def small_ic():
    return random_graph(60, 220, seed=5, prob=0.25, name="ic60")


@pytest.fixture(scope="module")
def reference(mid):
    """The CPU backend's step-by-step scenario on the mid graph, per model."""
    return {model: scenario(cpu(mid, model), mid, model, eta=400, rounds=4, theta=1500, b=8, trim_at=3)
            for model in ("IC", "LT")}


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_collections_cnt_flags_seeds_equal_cpu(model, mid, reference):
    """Generate, Select (+Discover), diffuse, Discover(A_i), trim, Update: every snapshot (sets as
    set_id -> (roots, members), cnt, flags, seeds, coverage, newly active) equals the CPU's."""
    got = scenario(gpu(mid, model), mid, model, eta=400, rounds=4, theta=1500, b=8, trim_at=3)
    assert len(got) >= 10
    for i, (g, c) in enumerate(zip(got, reference[model])):
        assert g == c, f"step {i} ({c[0]}) differs"
    assert len(got) == len(reference[model])


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("beta", [1, 2, 4, 16])
def test_results_independent_of_beta(model, beta, mid, reference):
    got = scenario(gpu(mid, model, beta=beta), mid, model, eta=400, rounds=4, theta=1500, b=8, trim_at=3)
    assert got == reference[model], f"beta {beta}"


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_forced_overrun_falls_back_to_larger_segments(model, mid, reference):
    """No preplanning and few segments: Generate and Update overrun their segments, stop with a
    resumable state, the collection is re-laid out and the work resumes: same result, no corruption."""
    prims = gpu(mid, model, segments=16, beta=2, preplan=False)
    got = scenario(prims, mid, model, eta=400, rounds=4, theta=1500, b=8, trim_at=3)
    assert prims.stats["relayouts"] >= 2 and prims.stats["generate_overflows"] >= 1
    assert got == reference[model]


@pytest.mark.parametrize("segments", [1, 5])
def test_overflow_inside_update_resumes(mid, segments):
    cpu_p = cpu(mid, "LT", segments=8)
    gpu_p = gpu(mid, "LT", segments=segments, beta=4, preplan=False)
    for p in (cpu_p, gpu_p):
        p.start(7, 8)
        p.generate(600, 20.0, 1)
        p.mark_active(lt_consistent(mid, range(0, mid.n, 97)))
        p.discover_active()
        p.update(35.0, 2)
    assert gpu_p.stats["update_overflows"] >= 1
    assert snapshot(gpu_p) == snapshot(cpu_p)


def test_updated_sets_equal_fresh_bfs(mid):
    """Correction 1 on the GPU: each updated set is the reverse-reachable set of its new roots on G_i
    under its own keys (plain-Python reference BFS), clean and polluted alike."""
    prims = gpu(mid, "IC", beta=8)
    prims.start(3, 4)
    prims.generate(300, 30.0, 1)
    prims.mark_active(list(range(0, mid.n, 53)))
    prims.discover_active()
    before = prims.collection_sets()
    prims.update(45.0, 2)
    check_sets(prims, mid, "IC", 4, 2, 45.0, before=before)
    check_counts(prims)


def test_complement_draws_and_multiwarp_generate(small_ic, mid):
    """k_i near n_i (roots by exclusion, promoted members), and Generate with several warps per set
    (fewer new sets than bitmaps): equal to the CPU."""
    cpu_p, gpu_p = cpu(small_ic, "IC", segments=3), gpu(small_ic, "IC", segments=2)
    for p in (cpu_p, gpu_p):
        p.start(5, 6)
        p.generate(50, 30.0, 1)
        p.mark_active(list(range(0, 60, 7)))
        p.discover_active()
    n2 = gpu_p.n_residual
    for p in (cpu_p, gpu_p):
        p.update(n2 / 1.6, 2)
        p.update(float(n2), 3)
    assert snapshot(gpu_p) == snapshot(cpu_p)
    cpu_p, gpu_p = cpu(mid, "LT"), gpu(mid, "LT")
    for p in (cpu_p, gpu_p):
        p.start(1, 2)
        p.generate(40, 2000.0, 1)  # 40 big sets: 8 warps per block
        p.generate(90, 2000.0, 1)
    assert snapshot(gpu_p) == snapshot(cpu_p)


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("update", [True, False])
def test_whole_runs_equal_cpu(model, update, mid):
    """MERIT (update) and the regenerating GAMCSS stand-in on the GPU == MERIT-CPU / PASTI: seeds,
    costs, newly active, theta, coverage and trials per round; replayed by the oracle."""
    kw = dict(model=model, eta=500, batch=4, eps=0.5, realizations=2, seed=1, update=update)
    want = run_amcss(mid, backend="cpu", memory_budget=16 << 30, **kw)
    got = run_amcss(mid, backend="cuda", memory_budget=16 << 30, **kw)
    assert rounds_of(got) == rounds_of(want)
    assert got["algorithm"] == ("MERIT" if update else "GAMCSS") and got["backend"] == "cuda"
    assert got["device_memory"]["peak_bytes"] > 0 and got["beta"] == "auto"
    for rd in (r for real in got["realizations"] for r in real["rounds"] if "update" in r):
        assert rd["update"]["beta"] == auto_beta(rd["k"])
    check_replay(mid, got)


def _real_graph(tmp_path_factory, name):
    from gpucore.graph import load_graph, preprocess

    for base in (os.environ.get("GPUCORE_SHARED_DATA"), REPO / ".shared_data", REPO.parent / "shared" / "data" / "snap"):
        if base and (Path(base) / name).is_file():
            out = tmp_path_factory.mktemp("g") / (name.split(".")[0] + ".gcsr")
            preprocess(Path(base) / name, out, show_progress=False)
            return load_graph(out)
    pytest.skip(f"{name} not available")


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_real_graph_runs_equal_cpu(model, tmp_path_factory):
    graph = _real_graph(tmp_path_factory, "wiki-Vote.txt.gz")
    kw = dict(model=model, eta=300, batch=4, eps=0.5, realizations=1, seed=2)
    want = run_amcss(graph, backend="cpu", memory_budget=16 << 30, **kw)
    got = run_amcss(graph, backend="cuda", memory_budget=16 << 30, **kw)
    assert rounds_of(got) == rounds_of(want)
    check_replay(graph, got)


@pytest.mark.parametrize("model,eta,b", [("IC", 3000, 16), ("LT", 1500, 4)])
def test_larger_graph_runs_and_replays(model, eta, b):
    """200k nodes / 2M arcs: MERIT and the regenerating baseline reach eta, replay exactly, report memory."""
    graph = pa_graph(200_000, 2_000_000, seed=9)
    for update in (True, False):
        res = run_amcss(graph, model=model, eta=eta, batch=b, eps=0.5, realizations=1, seed=0, update=update,
                        backend="cuda")
        check_replay(graph, res)
        mem = res["device_memory"]
        assert 0 < mem["peak_bytes"] <= mem["pool_total_bytes"] + (1 << 20)
        assert mem["fixed_bytes"] < mem["budget_bytes"]


def test_device_out_of_memory_is_a_clear_error(mid):
    """A budget larger than the device: the allocation fails on the device and is reported with the
    bytes needed (never a CuPy traceback); a small budget fails before allocating."""
    prims = gpu(mid, "IC", budget=1 << 50)
    prims.start(1, 2)
    with pytest.raises(OutOfMemoryError, match=r"needed|allocating"):
        prims.generate(2**30, 5000.0, 1)
    with pytest.raises(OutOfMemoryError, match=r"needs [0-9.]+ (KiB|MiB|GiB)"):
        run_amcss(mid, eta=500, batch=4, backend="cuda", memory_budget=2_000_000)


def test_cli_selects_gpu_modes(mid, tmp_path):
    from gpucore.cli import main
    from gpucore.graph import save_graph

    path = save_graph(mid, tmp_path / "mid.gcsr")
    out = tmp_path / "r.json"
    assert main(["amcss", "--graph", str(path), "--model", "LT", "--eta", "300", "--batch", "4",
                 "--backend", "cuda", "--no-update", "--beta", "4", "-o", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["algorithm"] == "GAMCSS" and res["beta"] == 4 and res["device_memory"]["peak_bytes"] > 0
    assert main(["amcss", "--graph", str(path), "--model", "IC", "--eta", "300", "--batch", "4",
                 "--backend", "auto", "-o", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["algorithm"] == "MERIT" and res["backend"] == "cuda"
    assert np.isfinite(res["summary"]["mean_total_cost"])

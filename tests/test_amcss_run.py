"""End-to-end AMCSS runs (MERIT, PASTI, ASTI; IC and LT), each replayed by the independent oracle;
determinism across segment and thread counts; the result JSON; bad input, one test per case."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from gpucore.amcss import run_amcss
from gpucore.errors import GpucoreError, OutOfMemoryError
from gpucore.oracle import replay
from tests.test_amcss_ref import pa_graph, random_graph

ROUND_FIELDS = {"seeds", "seed_ids", "cost", "newly_active", "theta", "seconds"}
PHASE_FIELDS = {"generate", "update", "select", "diffuse"}


def check_with_oracle(graph, result):
    """Every realization replays exactly and reaches eta; costs add up."""
    assert result["kind"] == "amcss"
    assert {"graph", "model", "eta", "batch", "epsilon", "algorithm", "backend", "realizations",
            "summary"} <= set(result)
    assert result["graph"]["sha256"] == graph.sha256
    for rec in result["realizations"]:
        assert {"world_seed", "rounds", "total_cost", "active", "reached", "seconds"} <= set(rec)
        for rd in rec["rounds"]:
            assert ROUND_FIELDS <= set(rd) and PHASE_FIELDS <= set(rd["seconds"])
            assert rd["seeds"] == [int(graph.original_id[i]) for i in rd["seed_ids"]]
            assert rd["cost"] == pytest.approx(float(np.asarray(graph.cost, dtype=np.float64)[rd["seed_ids"]].sum()))
            assert 1 <= len(rd["seed_ids"]) <= result["batch"]
        rep = replay(graph, rec["rounds"], result["model"], rec["world_seed"], result["eta"])
        assert rep.passed, rep.first_mismatch  # the oracle's own count reaches eta
        assert rep.total_active == rec["active"]
        assert rec["total_cost"] == pytest.approx(sum(rd["cost"] for rd in rec["rounds"]))
    json.dumps(result)  # JSON-serialisable as is


@pytest.fixture(scope="module")
def pa():
    return pa_graph(1500, 6000, seed=2)


@pytest.fixture(scope="module")
def sparse():
    return random_graph(400, 1200, seed=3, prob=0.15, name="sparse400")


@pytest.mark.parametrize("model", ["IC", "LT"])
@pytest.mark.parametrize("update", [True, False])
def test_small_graphs_reach_eta_and_replay(model, update, pa, sparse):
    for graph, eta, b in ((pa, 300, 4), (sparse, 120, 2)):
        result = run_amcss(graph, model=model, eta=eta, batch=b, eps=0.5, realizations=2, seed=7, update=update)
        assert result["algorithm"] == ("MERIT" if update else "PASTI")
        check_with_oracle(graph, result)


def test_asti_is_one_thread_regeneration(sparse):
    result = run_amcss(sparse, model="IC", eta=80, batch=1, eps=0.5, realizations=1, seed=1, update=False, threads=1)
    assert result["algorithm"] == "ASTI" and result["threads"] == 1
    check_with_oracle(sparse, result)
    import numba

    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_results_independent_of_segments_and_threads(model, sparse):
    def seeds(**kw):
        r = run_amcss(sparse, model=model, eta=150, batch=3, eps=0.5, realizations=1, seed=4, **kw)
        check_with_oracle(sparse, r)
        return [(rd["seed_ids"], rd["newly_active"], rd["theta"]) for rd in r["realizations"][0]["rounds"]]

    base = seeds(segments=16)
    assert len(base) >= 3
    assert seeds(segments=1) == base
    assert seeds(segments=5, threads=1) == base
    import numba

    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_merit_reuses_sets_and_pasti_does_not(sparse):
    merit_run = run_amcss(sparse, model="IC", eta=150, batch=2, eps=0.5, seed=5)
    pasti_run = run_amcss(sparse, model="IC", eta=150, batch=2, eps=0.5, seed=5, update=False)
    check_with_oracle(sparse, merit_run)
    check_with_oracle(sparse, pasti_run)
    merit = merit_run["realizations"][0]["rounds"]
    pasti = pasti_run["realizations"][0]["rounds"]
    assert merit[0]["seed_ids"] == pasti[0]["seed_ids"]  # round 1 is the same computation
    assert any("update" in rd for rd in merit[1:]) and not any("update" in rd for rd in pasti)
    assert all(rd["seconds"]["update"] == 0.0 for rd in pasti)
    assert all(rd["theta"] >= rd["theta_0"] for rd in merit + pasti)


def test_real_graph_replayed_by_oracle(shared_data, tmp_path_factory):
    from gpucore.graph import load_graph, preprocess

    out = tmp_path_factory.mktemp("amcss") / "email.gcsr"
    preprocess(shared_data / "email-Eu-core.txt.gz", out, show_progress=False)
    graph = load_graph(out)
    for model, update, reps in (("IC", True, 2), ("LT", True, 2), ("IC", False, 1)):
        result = run_amcss(graph, model=model, eta=100, batch=4, eps=0.5, realizations=reps, seed=1, update=update)
        check_with_oracle(graph, result)


# ---- bad input: one test per case ------------------------------------------------------------

@pytest.mark.parametrize("eta", [0, -5])
def test_eta_not_positive(sparse, eta):
    with pytest.raises(GpucoreError, match="--eta"):
        run_amcss(sparse, eta=eta)


def test_eta_above_n(sparse):
    with pytest.raises(GpucoreError, match=r"--eta .*n=400"):
        run_amcss(sparse, eta=401)


def test_batch_below_one(sparse):
    with pytest.raises(GpucoreError, match="--batch"):
        run_amcss(sparse, eta=10, batch=0)


@pytest.mark.parametrize("eps", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_eps_outside_unit_interval(sparse, eps):
    with pytest.raises(GpucoreError, match="--eps"):
        run_amcss(sparse, eta=10, eps=eps)


def test_unknown_model(sparse):
    with pytest.raises(GpucoreError, match="--model"):
        run_amcss(sparse, model="SIR", eta=10)


def test_missing_costs(sparse):
    with pytest.raises(GpucoreError, match="no seed cost"):
        run_amcss(dataclasses.replace(sparse, cost=np.zeros(0, dtype=np.float32)), eta=10)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_non_positive_costs(sparse, bad):
    cost = np.array(sparse.cost, copy=True)
    cost[17] = bad
    with pytest.raises(GpucoreError, match="costs"):
        run_amcss(dataclasses.replace(sparse, cost=cost), eta=10)


def test_memory_budget_exceeded_names_the_size(pa):
    with pytest.raises(OutOfMemoryError, match=r"needs [0-9.]+ (KiB|MiB|GiB)"):
        run_amcss(pa, eta=1000, batch=1, eps=0.1, memory_budget=600_000)


def test_collection_over_budget_fails_before_allocating(pa):
    """The fixed arrays fit, the collection does not: OutOfMemoryError naming the collection."""
    with pytest.raises(OutOfMemoryError, match="collection"):
        run_amcss(pa, model="IC", eta=1400, batch=1, eps=0.05, memory_budget=3_000_000)


def test_cuda_backend_without_gpu_is_a_clear_error(sparse):
    from gpucore.backend import cuda_available

    if cuda_available():
        pytest.skip("a GPU is present")
    with pytest.raises(GpucoreError, match="cuda"):
        run_amcss(sparse, eta=10, backend="cuda")


def test_shrink_policy_and_keep_all(sparse):
    """Default MERIT trims its newest sets when k_i grows (never below theta_0); --keep-all keeps
    the paper's never-shrinking collection. Both replay exactly."""
    shrunk = run_amcss(sparse, model="LT", eta=300, batch=2, eps=0.5, seed=3)
    kept = run_amcss(sparse, model="LT", eta=300, batch=2, eps=0.5, seed=3, shrink=False)
    assert shrunk["shrink"] and not kept["shrink"]
    rounds_s = shrunk["realizations"][0]["rounds"]
    rounds_k = kept["realizations"][0]["rounds"]
    assert any(rd.get("update", {}).get("shrunk") for rd in rounds_s)
    assert all(rd["theta"] >= rd["theta_0"] for rd in rounds_s)
    thetas = [rd["theta"] for rd in rounds_k]
    assert thetas == sorted(thetas) and not any("shrunk" in rd.get("update", {}) for rd in rounds_k)
    check_with_oracle(sparse, shrunk)
    check_with_oracle(sparse, kept)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_pollution_limit_switches_rounds_to_regeneration(model, sparse):
    """A round whose Update would re-probe at least ``pollution_limit`` of what a regeneration probes
    (``reprobe_fraction`` of the pollution the last round left and the growth of k) regenerates:
    with limit 0 every round does, which is exactly PASTI (same seeds, costs and theta); above 1
    none does; in between exactly those rounds. All replay exactly."""
    from gpucore.amcss.driver import reprobe_fraction

    kw = dict(model=model, eta=200, batch=2, eps=0.5, seed=4)
    pasti = run_amcss(sparse, update=False, **kw)
    always = run_amcss(sparse, pollution_limit=0.0, **kw)
    never = run_amcss(sparse, pollution_limit=1.01, **kw)
    middle = run_amcss(sparse, pollution_limit=0.05, **kw)

    def fields(res):
        return [(rd["seed_ids"], rd["cost"], rd["theta"]) for rd in res["realizations"][0]["rounds"]]

    assert fields(always) == fields(pasti)
    assert all(rd.get("regenerated") for rd in always["realizations"][0]["rounds"][1:])
    assert not any(rd.get("regenerated") for rd in never["realizations"][0]["rounds"])
    rounds = middle["realizations"][0]["rounds"]
    switched = [rd.get("regenerated", False) for rd in rounds[1:]]
    assert any(switched) and not all(switched)
    for before, rd in zip(rounds, rounds[1:]):
        assert before["pollution"] == (before["coverage"] + before["polluted"]) / before["theta"]
        assert rd.get("regenerated", False) == (reprobe_fraction(before["pollution"], before["k"], rd["k"]) >= 0.05)
        assert ("update" in rd) != rd.get("regenerated", False)
    assert run_amcss(sparse, **kw)["pollution_limit"] == 0.9 and pasti["pollution_limit"] is None
    for res in (always, never, middle):
        check_with_oracle(sparse, res)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_extreme_eta_one_and_n(model):
    """eta = 1 (one round) and eta = n (every user, k_i = 1 to the end; batches shrink to n_i)."""
    graph = random_graph(40, 90, seed=2, prob=0.3, name="tiny40")
    for eta in (1, graph.n):
        for update in (True, False):
            check_with_oracle(graph, run_amcss(graph, model=model, eta=eta, batch=3, realizations=2, seed=1,
                                               update=update))

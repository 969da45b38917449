"""IMM driver: the lower-bound loop, fresh final sets, theta, memory errors, MRIM, end-to-end runs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpucore.im.driver as imm_mod
from gpucore.errors import GpucoreError, OutOfMemoryError
from gpucore.graph import from_arcs
from gpucore.im import ESTIMATE_OFFSET, imm, imm_parameters


class FakeEngine:
    """Stands in for a backend: records requests, returns a scripted covered fraction per call."""

    def __init__(self, fractions, mean=3.0):
        self.fractions = list(fractions)
        self.calls = []
        self.collections = []
        self.mean = mean
        self.n = None
        self.rounds = 1
        from gpucore.backend import get_backend

        self.backend = get_backend("cpu")

    def collection(self, j_begin):
        outer = self

        class Coll:
            def __init__(self):
                self.j_begin, self.count, self.total, self.projected_bytes = j_begin, 0, 0, 0

            @property
            def mean_size(self):
                return outer.mean

            def reserve(self, *a):
                pass

            def nbytes(self):
                return 0

            def release(self):
                pass

        c = Coll()
        self.collections.append(c)
        return c

    def warm_up(self, k=1):
        pass

    def reserve(self, nbytes):
        pass

    def reset_stats(self):
        pass

    def sampler_stats(self):
        return None  # a sampler without instrumentation

    def sample_into(self, coll, count, mean):
        coll.count += count
        coll.total += int(count * self.mean)

    def synchronize(self):
        pass

    def greedy(self, coll, k):
        self.calls.append(coll.count)
        frac = self.fractions.pop(0) if self.fractions else 0.0
        return np.arange(k), np.zeros(k), int(round(frac * coll.count))

    def coverage(self, coll, elements):
        return coll.count // 2

    def coverage_bound(self, coll, k):
        return coll.count  # never rules a greedy out (a test scripts bounds below)


def run_fake(monkeypatch, n, k, eps, fractions):
    g = from_arcs(n, [0], [1], 0.5)
    eng = FakeEngine(fractions)
    eng.n = n
    monkeypatch.setattr(imm_mod, "make_engine", lambda *a, **kw: eng)
    return imm(g, k, eps, "IC", backend="cpu", sampler="gim"), eng  # a named sampler: no probe on the CPU


def test_lb_loop_stops_at_first_pass(monkeypatch):
    n, k, eps = 4096, 3, 0.5
    p = imm_parameters(n, k, eps)
    # fail i = 1, 2; pass at i = 3: need n F >= (1 + eps') n / 8
    f3 = (1 + p.epsilon_prime) / 8 + 0.01
    res, eng = run_fake(monkeypatch, n, k, eps, [0.01, 0.01, f3, 0.5])
    assert eng.calls[:3] == [p.theta_i(1), p.theta_i(2), p.theta_i(3)]
    covered3 = int(round(f3 * p.theta_i(3)))
    lb = n * covered3 / p.theta_i(3) / (1 + p.epsilon_prime)
    assert res["lower_bound"] == pytest.approx(lb)
    # LB rounded down to the grid n 2^(-j/16), then lambda* / L, never fewer than the search's sets
    j = math.ceil(16 * math.log2(n / lb))
    assert n * 2 ** (-j / 16) <= lb < n * 2 ** (-(j - 1) / 16)
    assert res["theta"] == max(p.theta_i(3), math.ceil(p.lambda_star / (n * 2 ** (-j / 16))))
    # the final phase extends the search's collection (j = 0 ...) and selects on all theta sets
    assert len(eng.collections) == 2 and eng.collections[0].j_begin == 0
    assert eng.calls[3] == res["theta"]
    assert res["lb_iteration"] == 3 and res["lb_sets"] == p.theta_i(3)
    # the estimate scores the seeds on other sets, j = 2^40 ...
    assert eng.collections[1].j_begin == ESTIMATE_OFFSET == 2**40
    assert res["estimate_sets"]["j_begin"] == 2**40 and res["estimate_sets"]["count"] <= res["theta"]


def test_bound_skips_greedies_that_cannot_pass(monkeypatch):
    n, k, eps = 4096, 3, 0.5
    p = imm_parameters(n, k, eps)
    f3 = (1 + p.epsilon_prime) / 8 + 0.01
    g = from_arcs(n, [0], [1], 0.5)
    eng = FakeEngine([f3, 0.5])
    eng.n = n
    # iterations 1 and 2: no k seeds can cover (1 + eps') x_i of the sets; iteration 3 may pass
    bounds = iter([int(0.2 * p.theta_i(1)), int(0.2 * p.theta_i(2)), p.theta_i(3)])
    eng.coverage_bound = lambda coll, k: next(bounds)
    monkeypatch.setattr(imm_mod, "make_engine", lambda *a, **kw: eng)
    res = imm(g, k, eps, "IC", backend="cpu", sampler="gim")
    assert eng.calls[0] == p.theta_i(3)  # the first greedy ran at iteration 3
    first, second, third = res["lb_iterations"]
    assert "covered" not in first and "covered" not in second and third["covered"] == round(f3 * p.theta_i(3))
    assert res["lb_iteration"] == 3


def test_lb_falls_back_to_one_after_the_capped_loop(monkeypatch):
    n, k, eps = 1000, 2, 0.9
    p = imm_parameters(n, k, eps)
    res, eng = run_fake(monkeypatch, n, k, eps, [0.0] * 50)
    assert p.max_iterations == 8  # floor(log2 1000) - 1
    assert res["lower_bound"] == 1.0 and res["lb_iteration"] is None
    # LB = 1 rounds down to the grid level n 2^(-160/16) = 1000 / 1024
    assert res["theta"] == max(p.theta_i(8), math.ceil(p.lambda_star / (1000 / 1024)))
    # greedies where covering every set could pass (eps' = 1.27: not at i = 1), and a final one only
    # when theta exceeds the search's sets (else its last greedy is the selection)
    ran = [p.theta_i(i) for i in range(1, 9) if n >= (1 + p.epsilon_prime) * p.x(i)]
    assert ran[0] == p.theta_i(2)
    assert eng.calls == ran + ([res["theta"]] if res["theta"] > p.theta_i(8) else [])


def path_graph(n=30, p=0.4):
    return from_arcs(n, np.arange(n - 1), np.arange(1, n), p)


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_end_to_end_deterministic(model):
    g = path_graph()
    a = imm(g, 3, 0.5, model, backend="cpu", seed=4)
    b = imm(g, 3, 0.5, model, backend="cpu", seed=4)
    assert a["seed_ids"] == b["seed_ids"] and a["theta"] == b["theta"]
    assert a["kind"] == "im" and a["model"] == model and a["k"] == 3 and a["epsilon"] == 0.5
    assert a["seeds"] == a["seed_ids"]  # from_arcs keeps ids
    assert len(set(a["seed_ids"])) == 3
    assert a["graph"]["sha256"] == g.sha256
    assert 3 <= a["estimated_spread"] <= g.n


def test_star_graph_picks_the_hub():
    # arcs hub -> leaves with p = 1: the hub reaches everyone
    n = 50
    g = from_arcs(n, np.zeros(n - 1, dtype=int), np.arange(1, n), 1.0)
    res = imm(g, 1, 0.3, "IC", backend="cpu")
    assert res["seed_ids"] == [0]
    assert res["estimated_spread"] == pytest.approx(n)
    res = imm(g, 1, 0.3, "LT", backend="cpu")
    assert res["seed_ids"] == [0]


def test_mrim_rounds():
    n = 40
    g = from_arcs(n, np.zeros(n - 1, dtype=int), np.arange(1, n), 0.3)
    res = imm(g, 2, 0.5, "IC", rounds=3, backend="cpu")
    assert res["algorithm"] == "CR-NAIMM" and res["rounds"] == 3
    assert len(res["seed_ids"]) == 3 and all(len(r) == 2 for r in res["seed_ids"])
    # the hub is worth seeding in every round (independent rounds)
    assert all(0 in r for r in res["seed_ids"])
    # union over 3 rounds of the hub's spread: 1 + (n-1)(1 - 0.7^3) for the hub alone
    hub_only = 1 + (n - 1) * (1 - 0.7**3)
    assert res["estimated_spread"] >= 0.8 * hub_only


@pytest.mark.parametrize(
    "kwargs,msg",
    [({"k": 0}, "--k 0"), ({"k": 31}, "--k 31"), ({"epsilon": 0.0}, "--eps"), ({"epsilon": 1.5}, "--eps"),
     ({"model": "SIR"}, "--model"), ({"rounds": 0}, "--rounds"), ({"ell": -1.0}, "--ell")],
)
def test_bad_input(kwargs, msg):
    g = path_graph()
    args = {"k": 2, "epsilon": 0.5, "model": "IC"} | kwargs
    with pytest.raises(GpucoreError, match=msg):
        imm(g, args.pop("k"), args.pop("epsilon"), args.pop("model"), backend="cpu", **args)


def test_theta_beyond_memory_names_the_size():
    g = path_graph(200, 0.9)
    with pytest.raises(OutOfMemoryError, match=r"needs about [0-9.]+ [KMG]?i?B for theta = [0-9,]+ RR sets"):
        imm(g, 5, 0.01, "IC", backend="cpu", memory_limit=200_000)


def test_memory_limit_is_the_budget_named():
    """An explicit limit is the whole budget: the error names it (not limit + what is already held)."""
    from gpucore.errors import format_bytes

    g = path_graph(200, 0.9)
    need = imm(g, 5, 0.05, "IC", backend="cpu")["memory_projected"]
    limit = need - 1
    with pytest.raises(OutOfMemoryError) as info:
        imm(g, 5, 0.05, "IC", backend="cpu", memory_limit=limit)
    assert f"but {format_bytes(limit)} is available" in str(info.value)
    assert imm(g, 5, 0.05, "IC", backend="cpu", memory_limit=need)["memory_projected"] == need


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc/self/clear_refs")
@pytest.mark.parametrize("nodes,p,eps", [(20000, 0.1, 0.1), (3000, 0.3, 0.1)])
def test_memory_projection_bounds_the_peak(nodes, p, eps):
    """The projection covers the measured resident peak of a run (many small sets; few large ones),
    without overshooting it by half (a projection that large would refuse runs that fit)."""
    script = Path(__file__).with_name("im_memory_probe.py")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, str(script), str(nodes), str(p), str(eps)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    slack = 16 << 20  # interpreter and allocator noise
    assert got["peak"] <= got["projected"] + slack, got
    assert got["projected"] <= 1.5 * got["peak"] + slack, got


def test_engine_counts_are_exact_on_a_fixed_collection():
    g = path_graph(10, 1.0)
    eng = imm_mod.make_engine(g, "IC", 1, 0, imm_mod.get_backend("cpu"))
    coll = eng.collection(0)
    eng.sample_into(coll, 100, 0.0)
    off, el = coll.offsets, coll.nodes
    # on a p = 1 path, the RR set of root r is {0..r}
    for i in range(100):
        s = np.sort(el[off[i] : off[i + 1]])
        np.testing.assert_array_equal(s, np.arange(s[-1] + 1))
    chosen, gains, covered = eng.greedy(coll, 1)
    assert chosen[0] == 0 and covered == 100


def test_real_run_theta_from_lb(shared_data, tmp_path):
    """A run on NetHEPT (WC): theta = max(search sets, ceil(lambda* / L)) with L the grid point below LB."""
    from gpucore.graph import load_graph, preprocess

    out = tmp_path / "nethept.gcsr"
    preprocess(shared_data / "nethept.txt.gz", out, show_progress=False)
    g = load_graph(out)
    res = imm(g, 50, 0.5, "IC", seed=0, backend="cpu")
    p = imm_parameters(g.n, 50, 0.5)
    last = res["lb_iterations"][-1]
    assert res["lb_iteration"] == last["i"] and last["theta_i"] == p.theta_i(last["i"])
    assert res["lb_sets"] == last["theta_i"]
    lb = g.n * last["covered"] / last["theta_i"] / (1 + p.epsilon_prime)
    assert lb >= p.x(last["i"]) and res["lower_bound"] == pytest.approx(lb)
    level = max(L for L in (g.n * 2 ** (-j / 16) for j in range(400)) if L <= lb)
    assert res["theta"] == max(res["lb_sets"], math.ceil(p.lambda_star / level))
    for it in res["lb_iterations"][:-1]:  # earlier iterations failed the test, by the bound or the greedy
        value = it["estimate"] if "estimate" in it else g.n * it["bound"] / it["theta_i"]
        assert value < (1 + p.epsilon_prime) * it["x"]
        assert it["bound"] >= it.get("covered", 0)


@pytest.mark.parametrize("weights", ["wc", "const:0.05", "trivalency", "uniform:0,0.2", "normal:0.05,0.02"])
def test_every_weight_scheme(tmp_path, weights):
    from gpucore.graph import load_graph, preprocess
    from gpucore.graph.generators import preferential_attachment, write_edge_list
    from gpucore.oracle import verify_result

    src, dst = preferential_attachment(400, 2400, 0.3, 5)
    text = tmp_path / "g.txt"
    write_edge_list(text, src, dst)
    out = tmp_path / "g.gcsr"
    preprocess(text, out, weights=weights, seed=3, show_progress=False)
    g = load_graph(out)
    for model in ("IC", "LT"):
        res = imm(g, 5, 0.3, model, seed=1, backend="cpu")
        rep = verify_result(res, g, runs=3000, seed=2, backend="cpu")
        assert rep["passed"], (weights, model, rep["failures"])


def test_lt_weights_above_one_warn_and_are_recorded():
    # node 3's in-weights sum to 0.7 + 0.6 = 1.3 > 1 (rescaled for LT); node 4's to 0.5
    g = from_arcs(5, [0, 1, 2, 0], [3, 3, 4, 4], [0.7, 0.6, 0.25, 0.25])
    with pytest.warns(UserWarning, match=r"LT in-weights of 1 nodes sum above 1; they are rescaled"):
        res = imm(g, 1, 0.5, "LT", backend="cpu")
    assert res["lt_rescaled_nodes"] == 1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = imm(path_graph(10, 0.5), 1, 0.5, "LT", backend="cpu")
        assert ok["lt_rescaled_nodes"] == 0
        assert "lt_rescaled_nodes" not in imm(g, 1, 0.5, "IC", backend="cpu")


def test_warm_up_is_outside_the_phases():
    res = imm(path_graph(), 2, 0.5, "IC", backend="cpu")
    assert res["warm_up_seconds"] > 0
    assert set(res["seconds_by_phase"]) == {"lb_sampling", "lb_selection", "final_sampling", "final_selection",
                                            "estimate"}
    assert sum(res["seconds_by_phase"].values()) <= res["seconds"]

"""``--sampler auto`` (``gpucore.im.auto``): the probe's rule, its pick on graphs on either side of it, and
that the pick never changes an answer (auto == gim == fused, in the API, the CLI and on the emulated
CUDA engines); the result records the choice.

The rule gives the fused sampler only IC runs on a GPU. To run its fused pick through the driver here,
the ``fused_on_cpu`` fixture adds the cpu backend to ``AUTO_BACKENDS`` (the emulated CUDA engines run on
the cpu backend too); without it the CPU runs gim, with a note."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gpucore.im.auto as auto_mod
import gpucore.im.driver as driver
from gpucore.backend import get_backend
from gpucore.errors import GpucoreError, OutOfMemoryError
from gpucore.graph import save_graph
from gpucore.im import imm
from gpucore.im.auto import AUTO_MIN_MEAN, AUTO_WIDTH, PROBE_SETS, Probe, choose, probe
from gpucore.im.engine import SAMPLERS, make_engine
from tests.im_graphs import dense_graph, giant_minority_graph, pa_graph, wc_graph

CPU = get_backend("cpu")
ANSWER = ("seed_ids", "seeds", "marginal_coverage", "theta", "lower_bound", "covered", "estimated_spread",
          "rr_elements")


@pytest.fixture(scope="module")
def graphs():
    return {"wc": wc_graph(), "dense": dense_graph(), "pa": pa_graph(1000, 4000, prob=0.3)}


@pytest.fixture
def fused_on_cpu(monkeypatch):
    """Auto may pick the fused sampler on the cpu backend (the rule's GPU pick, run here)."""
    monkeypatch.setattr(auto_mod, "AUTO_BACKENDS", ("cuda", "cpu"))


def _probe(graph, rounds=1, model="IC", seed=0, **kw):
    return probe(make_engine(graph, model, rounds, seed, CPU, "gim"), **kw)


@pytest.mark.parametrize("traversal_mean,rounds,want", [
    (AUTO_MIN_MEAN, 1, "fused"), (AUTO_MIN_MEAN - 0.01, 1, "gim"), (AUTO_MIN_MEAN, 3, "fused"),
    (AUTO_MIN_MEAN - 0.01, 3, "gim"), (1.0, 2, "gim"), (1000.0, 1, "fused")])
def test_the_rule_compares_elements_per_traversal(traversal_mean, rounds, want):
    """The mean elements per traversal (per set divided by the rounds) against AUTO_MIN_MEAN."""
    sets = 100
    seen = Probe(None, sets, int(round(traversal_mean * rounds * sets)), rounds)
    choice = choose(seen, "IC", "cuda")
    assert choice.sampler == want
    assert choice.options == ({"batch_width": AUTO_WIDTH} if want == "fused" else {})
    assert choice.to_dict() == {"mode": "auto", "probe_sets": sets, "probe_mean_size": seen.mean_size,
                                "probe_traversal_mean": seen.traversal_mean, "threshold": AUTO_MIN_MEAN}


@pytest.mark.parametrize("model,backend,note", [
    ("LT", "cuda", "LT: the fused sampler is not measured on LT traversals"),
    ("IC", "cpu", "cpu: the fused sampler is not faster than gim on the cpu backend")])
def test_the_rule_gives_lt_and_cpu_runs_to_gim(model, backend, note):
    """The fused sampler was measured to win on IC runs on a GPU only: elsewhere auto runs gim, saying so where
    the mean was large."""
    large = choose(Probe(None, 10, 10 * 1000, 1), model, backend)
    assert large.sampler == "gim" and large.options == {} and large.to_dict()["note"] == note
    assert "note" not in choose(Probe(None, 10, 10, 1), model, backend).to_dict()


def test_probe_picks_gim_on_weighted_cascade(graphs):
    seen = _probe(graphs["wc"])
    assert seen.sets == PROBE_SETS and seen.traversal_mean < AUTO_MIN_MEAN  # small sets: the whole probe
    assert choose(seen, "IC", "cuda").sampler == "gim"


@pytest.mark.parametrize("name,rounds", [("dense", 1), ("dense", 2), ("pa", 1)])
def test_probe_picks_fused_on_constant_p(graphs, name, rounds):
    """Constant p = 0.3: large overlapping traversals. The probe stops once the pick is certain, and the
    whole probe picks the same."""
    seen = _probe(graphs[name], rounds)
    assert seen.elements >= AUTO_MIN_MEAN * rounds * PROBE_SETS
    full = _probe(graphs[name], rounds, threshold=float("inf"))
    assert full.sets == PROBE_SETS and full.traversal_mean >= AUTO_MIN_MEAN
    assert choose(seen, "IC", "cuda").sampler == choose(full, "IC", "cuda").sampler == "fused"
    if name == "dense":
        assert seen.sets < PROBE_SETS  # stopped early


def test_probe_gives_a_giant_minority_to_fused():
    """A mean above the threshold from 2 % of the sets (4,000 elements each; the others 1): the fused sampler
    evicts such traversals to its team pass, so the mean decides; the probe stops once it is certain, and the
    whole probe picks the same."""
    seen = _probe(giant_minority_graph())
    full = _probe(giant_minority_graph(), threshold=float("inf"))
    sizes = np.diff(full.coll.offsets)
    assert full.sets == PROBE_SETS and set(np.unique(sizes)) == {1, 4000}
    assert 0 < np.mean(sizes >= AUTO_MIN_MEAN) < 0.04 and full.traversal_mean >= AUTO_MIN_MEAN
    assert seen.sets <= PROBE_SETS and seen.elements >= AUTO_MIN_MEAN * PROBE_SETS
    assert choose(seen, "IC", "cuda").sampler == choose(full, "IC", "cuda").sampler == "fused"


def test_probe_draws_the_first_keys():
    """The probe's sets are sets j = 0, 1, ... of the gim sampler, in order (hence the same on every rank)."""
    g = wc_graph(120, 4, seed=6)
    seen = _probe(g)
    eng = make_engine(g, "IC", 1, 0, CPU, "gim")
    ref = eng.collection(0)
    eng.sample_into(ref, seen.sets, 0.0)
    np.testing.assert_array_equal(seen.coll.offsets, ref.offsets)
    np.testing.assert_array_equal(seen.coll.nodes, ref.nodes)


@pytest.mark.parametrize("name,model,rounds,fused_rule", [
    ("wc", "IC", 1, True), ("pa", "IC", 1, True), ("dense", "IC", 2, True), ("wc", "LT", 1, True),
    ("pa", "IC", 1, False)])
def test_auto_gives_the_answer_of_gim_and_fused(graphs, monkeypatch, name, model, rounds, fused_rule):
    """``fused_rule``: the GPU's rule (cpu in AUTO_BACKENDS), else the CPU's (gim, with a note on "pa")."""
    if fused_rule:
        monkeypatch.setattr(auto_mod, "AUTO_BACKENDS", ("cuda", "cpu"))
    g = graphs[name]
    auto = imm(g, 4, 0.5, model, rounds=rounds, seed=3, backend="cpu")  # auto: the default
    gim = imm(g, 4, 0.5, model, rounds=rounds, seed=3, backend="cpu", sampler="gim")
    fused = imm(g, 4, 0.5, model, rounds=rounds, seed=3, backend="cpu", sampler="fused")
    for key in ANSWER:
        assert auto[key] == gim[key] == fused[key], key
    seen = _probe(g, rounds, model, seed=3)
    want = choose(seen, model, "cpu")
    assert want.sampler == ("fused" if fused_rule and name != "wc" else "gim")
    choice = auto["sampler_choice"]
    assert auto["sampler"] == want.sampler and auto["sampler_options"] == want.options
    assert choice["mode"] == "auto" and choice["probe_sets"] == seen.sets
    assert choice["probe_traversal_mean"] == pytest.approx(seen.traversal_mean)
    assert choice.get("note", "") == want.note
    assert gim["sampler_choice"] == fused["sampler_choice"] == {"mode": "given"}
    assert (auto["sampler"] == "fused") == ("sampler_stats" in auto)  # the fused sampler's instrumentation
    if auto["sampler"] == "fused":  # counts of the timed phases only, as with --sampler fused
        assert auto["sampler_stats"]["traversals"] == fused["sampler_stats"]["traversals"]


def test_auto_falls_back_to_narrower_widths_then_gim(graphs, monkeypatch, fused_on_cpu):
    """Auto's fused engine takes the widest width whose masks fit; none fitting, gim, and the choice says why."""
    real = driver.make_engine
    fits = {"widths": (64,)}

    def limited(graph, model, rounds, seed, backend, sampler="gim", **options):
        if sampler == "fused" and options["batch_width"] not in fits["widths"]:
            raise OutOfMemoryError(f"width {options['batch_width']} does not fit")
        return real(graph, model, rounds, seed, backend, sampler, **options)

    monkeypatch.setattr(driver, "make_engine", limited)
    res = imm(graphs["dense"], 2, 0.5, "IC", backend="cpu")
    assert res["sampler"] == "fused" and res["sampler_options"] == {"batch_width": 64}
    fits["widths"] = ()
    res = imm(graphs["dense"], 2, 0.5, "IC", backend="cpu")
    assert res["sampler"] == "gim" and res["sampler_options"] == {}
    assert res["sampler_choice"]["note"] == "the fused sampler's masks do not fit"


def test_auto_takes_no_options(graphs):
    with pytest.raises(GpucoreError, match="--sampler auto takes no sampler options") as err:
        imm(graphs["wc"], 2, 0.5, "IC", backend="cpu", sampler_options={"batch_width": 64})
    assert "\n" not in str(err.value)


def test_unknown_sampler_is_one_line(graphs):
    with pytest.raises(GpucoreError) as err:
        imm(graphs["wc"], 2, 0.5, "IC", backend="cpu", sampler="fastest")
    assert str(err.value) == "--sampler 'fastest': choose one of auto, gim, fused"


@pytest.mark.parametrize("name", ["wc", "pa"])
def test_cli_auto_gim_fused_same_seeds(graphs, name, tmp_path, capsys, fused_on_cpu):
    from gpucore.cli import main

    path = tmp_path / "g.gcsr"
    save_graph(graphs[name], path)
    res = {}
    for sampler in ("auto", "gim", "fused"):
        out = tmp_path / f"{sampler}.json"
        args = ["im", "--graph", str(path), "--k", "3", "--eps", "0.5", "--backend", "cpu", "-o", str(out)]
        assert main(args + (["--sampler", sampler] if sampler != "auto" else [])) == 0, capsys.readouterr().err
        res[sampler] = json.loads(out.read_text())
    for key in ANSWER:
        assert res["auto"][key] == res["gim"][key] == res["fused"][key], key
    assert res["auto"]["sampler"] == ("gim" if name == "wc" else "fused")
    assert res["auto"]["sampler_choice"]["mode"] == "auto" and res["gim"]["sampler_choice"] == {"mode": "given"}
    assert res["auto"]["warm_up_seconds"] > 0


def test_cli_default_on_the_cpu_is_gim_with_a_note(graphs, tmp_path):
    """A fresh ``gpucore im`` process on the cpu backend: auto probes, runs gim and says why not fused."""
    import subprocess
    import sys

    path = tmp_path / "g.gcsr"
    save_graph(graphs["pa"], path)
    proc = subprocess.run([sys.executable, "-m", "gpucore", "im", "--graph", str(path), "--k", "3", "--backend", "cpu"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["sampler"] == "gim" and res["sampler_options"] == {} and res["warm_up_seconds"] > 0
    choice = res["sampler_choice"]
    assert choice["mode"] == "auto" and choice["probe_traversal_mean"] >= AUTO_MIN_MEAN
    assert choice["note"] == "cpu: the fused sampler is not faster than gim on the cpu backend"


def test_cli_bad_sampler_one_line(graphs, tmp_path, capsys):
    from gpucore.cli import main

    path = tmp_path / "g.gcsr"
    save_graph(graphs["wc"], path)
    code = main(["im", "--graph", str(path), "--k", "3", "--backend", "cpu", "--sampler", "fastest"])
    err = capsys.readouterr().err
    assert code == 2 and err == "gpucore: error: --sampler 'fastest': choose one of auto, gim, fused\n"


@pytest.fixture
def emulated_samplers(monkeypatch):
    """make_engine of the IMM driver on the emulated CUDA engines: gim -> ``emulated_engine``, fused -> the
    emulated fused sampler (``gpucore.im.fused.emulated``)."""
    from gpucore.im.emulated import available, emulated_engine

    if not available():
        pytest.skip("g++ not available")
    monkeypatch.setitem(SAMPLERS, "fused-emulated", ("gpucore.im.fused.emulated", "emulated_fused_sampler"))
    made = []

    def emulated(graph, model, rounds, seed, backend, sampler="gim", **options):
        made.append((sampler, options))
        if sampler == "gim":
            return emulated_engine(graph, model, rounds, seed, backend=backend, **options)
        return make_engine(graph, model, rounds, seed, backend, "fused-emulated", **options)

    monkeypatch.setattr(driver, "make_engine", emulated)
    return made


@pytest.mark.parametrize("name,want", [("wc", "gim"), ("dense", "fused")])
def test_auto_on_emulated_cuda_engines(graphs, emulated_samplers, monkeypatch, fused_on_cpu, name, want):
    """The CUDA path of auto, kernels in the emulator: the gim engine probes, the pick replaces it, and the
    answer is the CPU gim sampler's."""
    res = imm(graphs[name], 3, 0.6, "IC", seed=2, backend="cpu")
    with monkeypatch.context() as m:
        m.setattr(driver, "make_engine", make_engine)  # the CPU engines
        ref = imm(graphs[name], 3, 0.6, "IC", seed=2, backend="cpu", sampler="gim")
    assert res["sampler"] == want
    assert emulated_samplers == [("gim", {})] + ([("fused", {"batch_width": AUTO_WIDTH})] if want == "fused" else [])
    for key in ANSWER:
        assert res[key] == ref[key], key


@pytest.mark.parametrize("name,k,eps", [("pa", 10, 0.5), ("pa", 5, 0.2), ("wc", 10, 0.5)])
def test_the_pool_reservation_projects_the_final_collection(graphs, name, k, eps):
    """On a GPU the driver reserves, from the probe, about the final collection's projected peak
    (``pool_bytes``): checked against the peak projected from a run's real theta and elements (the
    estimate's LB is halved, so it errs large, within 3x), and capped at half a memory limit."""
    from gpucore.im import imm_parameters

    g = graphs[name]
    eng = make_engine(g, "IC", 1, 0, CPU, "gim")
    seen = probe(eng)
    params = imm_parameters(g.n, k, eps)
    res = imm(g, k, eps, "IC", backend="cpu", sampler="gim")
    real = driver.bytes_needed(eng, res["theta"], res["rr_elements"])
    assert real <= driver.pool_bytes(eng, seen, params, k, None) <= 3 * real
    assert driver.pool_bytes(eng, seen, params, k, real // 4) == real // 8

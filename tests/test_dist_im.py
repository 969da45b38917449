"""IMM over several ranks: the same answer for 1, 2 and 3 ranks as for one process (issue 17, item 3).

One process: a collection's key ranges (``RRCollection.seek``), the sampler appending at a moved
``j_end``, the distributed greedy's certified candidates against the dense all-reduce and a brute
force (every candidate count, MRIM's round blocking, the given counts), and the communication timer.

Real ranks (``mpiexec -n 1/2/3`` on the CPU, MPICH from the ``test`` extra; skipped with the reason
where mpiexec or mpi4py is missing): this file is also the rank program (``_CASES`` at the bottom).
Every rank runs the same list of IMM solves (IC and LT, rounds 1 and MRIM rounds > 1, the dense and
the candidate greedy, a theta that no rank count divides) and rank 0 prints their answers as one
JSON line: seeds, gains, theta, lower bound and its iterations, the estimate and its hits must equal
the one-process run field by field, and the ranks' set shares must add up to theta.
"""

from __future__ import annotations

import importlib.util
import json
import time

import numpy as np
import pytest

from tests.test_dist import ArrayCover, brute_greedy, synthetic_sets
from tests.test_dist_mpi import case, mpirun, needs_mpi, rank_main

#: result fields that must not depend on the rank count
SAME = ("seed_ids", "marginal_coverage", "theta", "lower_bound", "lb_iteration", "lb_sets", "lb_iterations",
        "covered", "selection_spread", "estimated_spread", "estimated_spread_stderr", "estimate_sets",
        "rr_elements", "rr_mean_size", "lb_mean_size", "parameters")

#: (name, model, rounds, k, eps, candidates): the solves every rank count runs
SOLVES = (
    ("ic", "IC", 1, 4, 0.5, None),
    ("ic-dense", "IC", 1, 4, 0.5, 0),
    ("ic-one-candidate", "IC", 1, 4, 0.5, 1),
    ("lt", "LT", 1, 3, 0.4, None),
    ("mrim-ic", "IC", 3, 2, 0.5, 2),
    ("mrim-lt", "LT", 2, 2, 0.5, None),
)


def small_graph():
    """A 300-node random digraph (1,500 arc draws, probabilities 0.05..0.3): LT in-weights above 1 are rescaled."""
    from gpucore.graph import from_arcs

    rng = np.random.default_rng(3)
    pairs = {(int(u), int(v)) for u, v in rng.integers(0, 300, size=(1500, 2)) if u != v}
    src, dst = zip(*sorted(pairs))
    return from_arcs(300, list(src), list(dst), rng.uniform(0.05, 0.3, len(src)).tolist(), name="r300")


def solve(comm, name, model, rounds, k, eps, candidates, sampler="gim"):
    """One IMM run on ``comm``: the fields that must agree, and what each rank held."""
    import warnings

    from gpucore.im import imm

    options = {} if candidates is None else {"candidates": candidates}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LT rescaling of the random graph's in-weights
        res = imm(small_graph(), k, eps, model, rounds=rounds, seed=7, backend="cpu", comm=comm, sampler=sampler,
                  **options)
    out = {key: res[key] for key in SAME}
    out["ranks"] = res["ranks"]
    out["per_rank"] = {key: res["per_rank"][key] for key in ("selection_sets", "estimate_sets")}
    out["phases"] = res["seconds_by_phase"]
    out["seconds"] = res["seconds"]
    out["communication"] = res.get("communication")
    return out


# ---------------------------------------------------------------------------------------------
# one process


def test_a_collection_records_its_key_ranges():
    from gpucore.backend import get_backend
    from gpucore.im.rrsets import RRCollection

    coll = RRCollection(np, get_backend("cpu"), 10, 5, 1)
    coll.seek(40)  # still empty: the first range moves
    assert coll.blocks == [(40, 0)] and coll.j_end == 40
    coll.append(np.array([1, 2, 1]), [(0, np.array([0, 1, 2, 3], dtype=np.int32))])
    coll.seek(43)  # already the next key: no new range
    assert coll.blocks == [(40, 0)]
    coll.seek(100)
    coll.append(np.array([1, 1]), [(0, np.array([4, 0], dtype=np.int32))])
    coll.seek(7)
    coll.append(np.array([2]), [(0, np.array([1, 2], dtype=np.int32))])
    assert coll.blocks == [(40, 0), (100, 3), (7, 5)] and coll.j_end == 8
    assert coll.keys().tolist() == [40, 41, 42, 100, 101, 7]
    coll.release()
    assert coll.blocks == [(10, 0)] and coll.keys().tolist() == []


def test_a_sampler_appends_at_the_moved_key():
    """A rank's collection of two ranges holds exactly the one-process sets of those keys."""
    from gpucore.backend import get_backend
    from gpucore.im.engine import make_sampler
    from gpucore.im.sampling import canonical, rr_sets

    g = small_graph()
    sampler = make_sampler(g, "IC", 2, 5, get_backend("cpu"))
    coll = sampler.collection(0)
    coll.seek(17)
    sampler.sample_into(coll, 30, 0.0)
    coll.seek(200)
    sampler.sample_into(coll, 25, coll.mean_size)
    got = canonical(*coll.host_sets())
    ref_a = rr_sets(g, "IC", 17, 30, seed=5, rounds=2)
    ref_b = rr_sets(g, "IC", 200, 25, seed=5, rounds=2)
    want = canonical(np.concatenate([ref_a[0], ref_b[0][1:] + ref_a[0][-1]]), np.concatenate([ref_a[1], ref_b[1]]))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("candidates", [0, 1, 2, 3, 7, 30, 1000])
def test_candidates_give_the_dense_greedy(candidates):
    from gpucore.dist import SingleComm, greedy_max_cover

    offsets, nodes = synthetic_sets(universe=30, sets=400, seed=8)
    want = brute_greedy(30, offsets, nodes, 12)
    res = greedy_max_cover(ArrayCover(30, offsets, nodes), 12, 400, SingleComm(), candidates=candidates)
    assert (res.chosen, res.gains) == want
    if candidates == 0:
        assert res.refreshes == 12  # a dense all-reduce per pick
    elif candidates >= 30:
        assert res.refreshes == 1  # every element a candidate: the first pick's reduction only
    else:
        assert 1 <= res.refreshes <= 12


def test_the_largest_keys_by_partition_and_by_sort():
    """The host's partition and the device's sort (here NumPy's sort behind another module) agree."""
    from types import SimpleNamespace

    from gpucore.dist.cover import _largest

    keys = np.random.default_rng(1).permutation(10_000).astype(np.int64) * 7
    for count in (1, 2, 1025, 10_000):
        want = np.sort(keys)[-count:]
        np.testing.assert_array_equal(_largest(np, keys, count), want)
        np.testing.assert_array_equal(_largest(SimpleNamespace(sort=np.sort), keys, count), want)


def test_candidates_with_rounds_blocked_and_given_counts():
    """MRIM's blocking and counts reduced before the greedy (the LB test's): the same picks, one fewer refresh."""
    from gpucore.dist import SingleComm, greedy_max_cover
    from gpucore.im.driver import close_full_round
    from tests.test_dist import ArrayCover as Cover

    n, rounds, k = 10, 3, 2
    offsets, nodes = synthetic_sets(universe=n * rounds, sets=300, seed=4)
    block = close_full_round(n, k)
    want = brute_greedy(n * rounds, offsets, nodes, k * rounds,
                        lambda chosen: set(range(*block(chosen).indices(n * rounds))) if block(chosen) else set())
    for candidates in (0, 2, 5):
        plain = greedy_max_cover(Cover(n * rounds, offsets, nodes), k * rounds, 300, SingleComm(), block=block,
                                 candidates=candidates)
        local = Cover(n * rounds, offsets, nodes)
        given = greedy_max_cover(local, k * rounds, 300, SingleComm(), block=block, counts=local.counts().copy(),
                                 candidates=candidates)
        assert (plain.chosen, plain.gains) == (given.chosen, given.gains) == want, candidates
        assert given.refreshes == plain.refreshes - 1
    assert sorted(c // n for c in want[0]) == [0, 0, 1, 1, 2, 2]


def test_the_greedy_through_an_im_selection_equals_the_im_greedy():
    """``SelectionCover`` + ``greedy_max_cover`` on one rank is the selector's own greedy (MRIM too)."""
    from gpucore.backend import get_backend
    from gpucore.dist import SingleComm, greedy_max_cover
    from gpucore.im.driver import SelectionCover, close_full_round
    from gpucore.im.engine import make_engine

    g = small_graph()
    for rounds, k in ((1, 6), (3, 2)):
        eng = make_engine(g, "IC", rounds, 3, get_backend("cpu"))
        coll = eng.collection(0)
        eng.sample_into(coll, 3000, 0.0)
        chosen, gains, covered = eng.greedy(coll, k)
        block = close_full_round(g.n, k) if rounds > 1 else None
        for candidates in (0, 4, 64):
            res = greedy_max_cover(SelectionCover(eng.start(coll, k)), k * rounds, coll.count, SingleComm(),
                                   block=block, candidates=candidates)
            assert res.chosen == chosen.tolist() and res.gains == gains.tolist() and res.covered == covered


def test_nested_phases_count_communication_once():
    from gpucore.dist import NestedPhases, SingleComm, TimedComm

    phases = NestedPhases(("selection",))
    comm = TimedComm(SingleComm(), phases)
    t0 = time.perf_counter()
    with phases.phase("selection"):
        time.sleep(0.02)
        with phases.phase("communication"):
            time.sleep(0.03)
            comm.allreduce(np.zeros(10, dtype=np.int32))  # a nested phase inside the nested one
        comm.allgather("x")
    wall = time.perf_counter() - t0
    s = phases.seconds
    assert s["communication"] >= 0.03 and 0.02 <= s["selection"] < wall - 0.03
    assert abs(sum(s.values()) - wall) < 0.005  # each second counted once
    assert (comm.calls, comm.bytes) == (2, 40)


def test_one_process_records_one_rank_and_no_communication():
    from gpucore.dist import SingleComm

    out = solve(SingleComm(), *SOLVES[0])
    assert out["ranks"] == 1 and out["communication"] is None and "communication" not in out["phases"]
    assert out["per_rank"]["selection_sets"] == [out["theta"]]
    assert out["per_rank"]["estimate_sets"] == [out["estimate_sets"]["count"]]


# ---------------------------------------------------------------------------------------------
# real ranks


@pytest.fixture(scope="module")
def reference():
    from gpucore.dist import SingleComm

    return {spec[0]: _answer(solve(SingleComm(), *spec)) for spec in SOLVES}


@pytest.fixture(scope="module")
def ranked():
    """Every solve on 1, 2 and 3 ranks (three mpiexec runs, about 10 s each)."""
    return {n: case(n, "solves", script=__file__, timeout=300) for n in (1, 2, 3)}


def _answer(out: dict) -> dict:
    return {key: out[key] for key in SAME}


@needs_mpi
@pytest.mark.parametrize("name", [spec[0] for spec in SOLVES])
def test_every_rank_count_gives_the_one_process_answer(reference, ranked, name):
    for n, outs in ranked.items():
        out = outs[name]
        assert _answer(out) == reference[name], f"{name} on {n} ranks"
        assert out["ranks"] == n
        shares = out["per_rank"]
        assert len(shares["selection_sets"]) == n and sum(shares["selection_sets"]) == out["theta"]
        assert max(shares["selection_sets"]) - min(shares["selection_sets"]) <= len(out["lb_iterations"]) + 1
        assert sum(shares["estimate_sets"]) == out["estimate_sets"]["count"]
        assert sum(out["phases"].values()) <= out["seconds"]
        if n > 1:
            comm = out["communication"]
            assert out["phases"]["communication"] > 0 and comm["collectives"] > comm["picks"] > 0
            assert comm["dense_reductions"] >= 1


@needs_mpi
def test_the_solves_cover_what_they_must(reference, ranked):
    """Thetas no rank count divides; several LB extensions (several key ranges per rank); the one-candidate
    greedy refreshing more often than the default, the dense one at every pick."""
    thetas = [ref["theta"] for ref in reference.values()]
    assert any(t % 2 for t in thetas) and any(t % 3 for t in thetas)
    assert all(len(ref["lb_iterations"]) >= 2 for ref in reference.values())
    comm = {name: ranked[2][name]["communication"] for name in ("ic", "ic-dense", "ic-one-candidate")}
    assert comm["ic-dense"]["dense_reductions"] >= comm["ic-dense"]["picks"]
    assert comm["ic-one-candidate"]["dense_reductions"] > comm["ic"]["dense_reductions"]
    assert comm["ic"]["bytes"] < comm["ic-dense"]["bytes"]


@needs_mpi
@pytest.mark.slow
def test_the_cuda_selection_over_two_ranks_in_the_emulator(reference):
    """The CUDA sampler and selector (kernels in the emulator) on two ranks: the same answer."""
    out = case(2, "emulated", script=__file__, timeout=300)
    assert _answer(out) == reference["ic"] and out["ranks"] == 2


@needs_mpi
@pytest.mark.skipif(importlib.util.find_spec("gpucore.im.fused") is None, reason="gpucore.im.fused is not there yet")
def test_the_fused_sampler_over_ranks(reference):
    for n in (1, 2, 3):
        out = case(n, "fused", script=__file__, timeout=300)
        assert _answer(out) == reference["ic"], f"fused on {n} ranks"


@needs_mpi
def test_auto_picks_alike_on_every_rank():
    """--sampler auto over ranks: the probe (the same keys on every rank) picks the fused sampler on a dense
    graph at p = 0.3 and gim on the small one; the answer is gim's on one process."""
    from gpucore.dist import SingleComm

    want = _auto(SingleComm())
    assert want["dense"]["sampler"] == "fused" and want["small"]["sampler"] == "gim"
    assert want["dense"]["answer"] == want["dense"]["gim"] and want["small"]["answer"] == want["small"]["gim"]
    for n in (2, 3):
        out = case(n, "auto", script=__file__, timeout=300)
        for name in ("dense", "small"):
            assert out[name]["answer"] == want[name]["gim"], f"auto on {name}, {n} ranks"
            assert out[name]["sampler"] == want[name]["sampler"]
            assert out[name]["sampler_choice"] == want[name]["sampler_choice"]


@needs_mpi
def test_keys_of_growing_extensions_cover_each_set_once():
    out = case(3, "keys", script=__file__)
    assert out["union"] == list(range(0, 1001)) + list(range(2**40, 2**40 + 20))
    assert out["blocks"] == [3, 3, 3]


@needs_mpi
def test_ranks_that_disagree_stop_together():
    out = case(3, "mismatch", script=__file__)
    assert out["messages"] == ["the 3 ranks of this IMM run disagree on k: every rank must run the same solve"] * 3


@needs_mpi
@pytest.mark.slow
def test_gpucore_im_under_mpiexec(tmp_path, reference):
    """The command: rank 0 writes one result file, with the one-process answer and the ranks' record."""
    from gpucore.graph import save_graph

    path = save_graph(small_graph(), tmp_path / "g.gcsr")
    out = tmp_path / "out"
    out.mkdir()
    proc = mpirun(2, "-m", "gpucore", "im", "--graph", path, "--k", 4, "--eps", 0.5, "--seed", 7, "--backend", "cpu",
                  "-o", out / "im.json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out.iterdir()] == ["im.json"] and proc.stdout == ""
    res = json.loads((out / "im.json").read_text())
    want = reference["ic"]
    assert res["seed_ids"] == want["seed_ids"] and res["theta"] == want["theta"]
    assert res["estimated_spread"] == want["estimated_spread"] and res["ranks"] == 2
    assert "communication" in res["seconds_by_phase"] and len(res["per_rank"]["seconds_by_phase"]) == 2


# ---------------------------------------------------------------------------------------------
# the rank program


def _solves(comm) -> dict:
    return {spec[0]: solve(comm, *spec) for spec in SOLVES}


def _emulated(comm) -> dict:
    import gpucore.im.driver as driver
    from gpucore.im.emulated import emulated_engine

    driver.make_engine = lambda graph, model, rounds, seed, backend, sampler, **options: emulated_engine(
        graph, model, rounds, seed)
    return solve(comm, *SOLVES[0])


def _fused(comm) -> dict:
    return solve(comm, *SOLVES[0], sampler="fused")


def _auto(comm) -> dict:
    """IMM with --sampler auto on a dense graph at p = 0.3 and on the small one, and gim's answer on each;
    auto under its GPU rule (the cpu backend added to ``AUTO_BACKENDS`` for the call)."""
    import gpucore.im.auto as auto_mod
    from gpucore.im import imm
    from tests.im_graphs import dense_graph

    out = {}
    backends, auto_mod.AUTO_BACKENDS = auto_mod.AUTO_BACKENDS, ("cuda", "cpu")
    try:
        for name, graph in (("dense", dense_graph()), ("small", small_graph())):
            auto = imm(graph, 3, 0.5, "IC", seed=7, backend="cpu", comm=comm)
            gim = imm(graph, 3, 0.5, "IC", seed=7, backend="cpu", comm=comm, sampler="gim")
            out[name] = {"answer": _answer(auto), "gim": _answer(gim), "sampler": auto["sampler"],
                         "sampler_choice": auto["sampler_choice"]}
    finally:
        auto_mod.AUTO_BACKENDS = backends
    return out


def _keys(comm) -> dict:
    """Three extensions of the selection sets (to 10, 400, 1001) and one of the estimate's (20)."""
    from gpucore.backend import get_backend
    from gpucore.dist.timed import NestedPhases
    from gpucore.im.driver import Ranks
    from gpucore.im.engine import make_engine
    from gpucore.im.rrsets import ESTIMATE_OFFSET

    eng = make_engine(small_graph(), "IC", 1, 1, get_backend("cpu"))
    ranks = Ranks(comm, NestedPhases())
    coll = eng.collection(0)
    for target in (10, 400, 1001):
        ranks.extend(eng, coll, target, None, 0.0, "test")
    est = eng.collection(ESTIMATE_OFFSET)
    ranks.extend(eng, est, 20, None, 0.0, "test")
    keys = np.concatenate([coll.keys(), est.keys()])
    union = np.sort(comm.allgather_array(keys))
    return {"union": union.tolist(), "blocks": comm.allgather(len(coll.blocks))}


def _mismatch(comm):
    from gpucore.errors import GpucoreError
    from gpucore.im import imm

    try:
        imm(small_graph(), 3 if comm.rank == 1 else 4, 0.5, "IC", backend="cpu", comm=comm)
    except GpucoreError as exc:
        return {"messages": comm.allgather(str(exc))}
    return {"messages": comm.allgather("no error")}


_CASES = {"solves": _solves, "emulated": _emulated, "fused": _fused, "auto": _auto, "keys": _keys,
          "mismatch": _mismatch}

if __name__ == "__main__":
    rank_main(_CASES)

"""DiFuseR over several ranks: the same answer for 1, 2 and 3 ranks as for one process (issue 17, item 4).

One process: the splits (``gpucore.im.sketch.split``: naive and FASST orders, shares of 32 worlds,
the rule when R / 32 is not a multiple of the rank count), the local graphs of a split's shares
(their union is the one-process local graph; FASST keeps fewer arcs than the naive split under xor
sampling on a low-probability graph).

Real ranks (``mpiexec -n 1/2/3`` on the CPU, MPICH from the ``test`` extra; skipped with the reason
where mpiexec or mpi4py is missing): this file is also the rank program (``_CASES`` at the bottom).
Every rank runs the same DiFuseR solves (xor and keyed sampling, naive and FASST splits, R = 96
worlds: three quanta of 32, so 2 ranks get 64 + 32) and rank 0 prints their answers as one JSON line:
seeds, selection scores, the spread after every seed, the rebuild points must equal the one-process
run (the sweeps of a build are each rank's own: its worlds settle when they do).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_dist_mpi import case, mpirun, needs_mpi, rank_main

#: result fields that must not depend on the rank count nor the split
SAME = ("seed_ids", "selection_scores", "spread_after_seed", "estimated_spread", "rebuild_rounds")
REGISTERS = 96
#: (name, sampling, split, refine): the solves every rank count runs
SOLVES = (
    ("xor-fasst", "xor", "fasst", 8),
    ("xor-naive", "xor", "naive", 8),
    ("keyed-fasst", "keyed", "fasst", 0),
    ("keyed-naive", "keyed", "naive", 0),
)


def small_graph():
    """A 200-node random digraph (900 arc draws, probabilities 0.02..0.25)."""
    from gpucore.graph import from_arcs

    rng = np.random.default_rng(5)
    pairs = {(int(u), int(v)) for u, v in rng.integers(0, 200, size=(900, 2)) if u != v}
    src, dst = zip(*sorted(pairs))
    return from_arcs(200, list(src), list(dst), rng.uniform(0.02, 0.25, len(src)).tolist(), name="r200")


def solve(comm, name, sampling, split, refine, graph=None) -> dict:
    from gpucore.im.sketch import difuser

    res = difuser(graph or small_graph(), 6, registers=REGISTERS, sampling=sampling, seed=11, backend="cpu",
                  refine=refine, world_split=split, rebuild_threshold=0.05, comm=comm)
    out = {key: res[key] for key in SAME}
    out["rebuilds_after"] = [b["after_seed"] for b in res["builds"]]
    out.update(ranks=res["ranks"], per_rank={key: res["per_rank"][key] for key in ("worlds", "local_arcs",
                                                                                    "local_vertices")},
               phases=res["seconds_by_phase"], seconds=res["seconds"], communication=res.get("communication"))
    return out


# ---------------------------------------------------------------------------------------------
# one process


@pytest.mark.parametrize("size,share", [(0, 0.0), (1, 1.0), (7, 0.0), (1000, 0.3), (4096, 1.0)])
def test_flagged_arcs_are_the_nonzero_flags_in_order(size, share):
    """The local graph's arcs: ``flagged`` (a scan and a scatter, no CUB count) is ``flatnonzero``."""
    from gpucore.im.sketch.local import flagged

    flags = (np.random.default_rng(size).random(size) < share).astype(np.uint8) * 3
    got = flagged(np, flags)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.flatnonzero(flags))


@pytest.mark.parametrize("fasst", [True, False])
def test_splits_deal_every_world_once_in_their_order(fasst):
    from gpucore.im.sketch.hashing import world_draws, world_numbers
    from gpucore.im.sketch.split import rank_worlds, world_order

    x = world_numbers(3, 320, fasst)
    draw_of = {int(v): i for i, v in enumerate(world_draws(3, 320))}  # the draws are distinct here
    assert len(draw_of) == 320
    for split in ("fasst", "naive"):
        order = world_order(3, 320, "xor", fasst, split)
        assert sorted(order.tolist()) == list(range(320))
        if split == "fasst":
            assert np.all(np.diff(x[order].astype(np.int64)) >= 0)  # increasing X
        else:
            assert [draw_of[int(v)] for v in x[order]] == list(range(320))  # draw order
        for size in (1, 2, 3, 4, 10):
            shares = [rank_worlds(order, size, r) for r in range(size)]
            lengths = [s.size for s in shares]
            assert all(n % 32 == 0 for n in lengths) and max(lengths) - min(lengths) <= 32
            assert lengths == sorted(lengths, reverse=True)  # the longer shares first
            assert sorted(np.concatenate(shares).tolist()) == list(range(320))
            assert all(np.all(np.diff(s) > 0) for s in shares)  # increasing world index on a rank
            if split == "fasst" and size > 1:  # consecutive X values per rank
                assert all(x[a].max() <= x[b].min() for a, b in zip(shares, shares[1:]))
    if fasst:
        assert world_order(3, 320, "xor", True, "fasst").tolist() == list(range(320))
    assert world_order(3, 320, "keyed", fasst, "naive").tolist() == list(range(320))


def test_too_many_ranks_and_bad_split_are_refused():
    from gpucore.errors import GpucoreError
    from gpucore.im.sketch.split import rank_worlds, world_order

    with pytest.raises(GpucoreError, match="--registers 96: 4 ranks need at least 128 worlds"):
        rank_worlds(np.arange(96), 4, 0)
    with pytest.raises(GpucoreError, match="--world-split 'random'"):
        world_order(1, 96, "xor", True, "random")


def local_sizes(graph, sampling, split, size, registers=256, seed=11):
    from gpucore.backend import get_backend
    from gpucore.im.sketch.cpu import CPUEngine
    from gpucore.im.sketch.hashing import world_keys
    from gpucore.im.sketch.split import rank_worlds, world_order

    order = world_order(seed, registers, sampling, True, split)
    engines = [CPUEngine(graph, world_keys(seed, registers, rank_worlds(order, size, r), sampling, True), seed,
                         get_backend("cpu")) for r in range(size)]
    return [e.local for e in engines]


@pytest.mark.parametrize("sampling", ["xor", "keyed"])
def test_the_ranks_local_graphs_cover_the_whole_local_graph(sampling):
    g = small_graph()
    (whole,) = local_sizes(g, sampling, "fasst", 1)
    for split in ("fasst", "naive"):
        parts = local_sizes(g, sampling, split, 4)
        assert max(p.arcs for p in parts) <= whole.arcs <= sum(p.arcs for p in parts)
        src = np.repeat(np.arange(g.n), np.diff(whole.indptr))
        union = set()
        for p in parts:
            psrc = np.repeat(np.arange(g.n), np.diff(p.indptr))
            union |= set(zip(psrc.tolist(), p.dst.tolist()))
        assert union == set(zip(src.tolist(), whole.dst.tolist()))


def test_fasst_keeps_fewer_arcs_than_the_naive_split():
    """The paper's Table 5/7 effect under xor sampling with small probabilities (p = 0.01, 256 worlds on
    4 ranks; fixed seeds, a deterministic check): fewer arcs in all and on the largest rank."""
    from gpucore.graph import from_arcs

    rng = np.random.default_rng(2)
    pairs = np.unique(rng.integers(0, 2000, size=(20000, 2)), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    g = from_arcs(2000, pairs[:, 0], pairs[:, 1], 0.01)
    fasst = local_sizes(g, "xor", "fasst", 4)
    naive = local_sizes(g, "xor", "naive", 4)
    assert sum(p.arcs for p in fasst) < 0.8 * sum(p.arcs for p in naive)
    assert max(p.arcs for p in fasst) < max(p.arcs for p in naive)
    keyed = [local_sizes(g, "keyed", split, 4) for split in ("fasst", "naive")]
    assert [p.sizes() for p in keyed[0]] == [p.sizes() for p in keyed[1]]  # no X_r: the same split


def test_one_process_records_one_rank_and_no_communication():
    from gpucore.dist import SingleComm

    out = solve(SingleComm(), *SOLVES[0])
    assert out["ranks"] == 1 and out["communication"] is None and "communication" not in out["phases"]
    assert out["per_rank"]["worlds"] == [REGISTERS]


# ---------------------------------------------------------------------------------------------
# real ranks


@pytest.fixture(scope="module")
def reference():
    from gpucore.dist import SingleComm

    return {spec[0]: _answer(solve(SingleComm(), *spec)) for spec in SOLVES}


@pytest.fixture(scope="module")
def ranked():
    """Every solve on 1, 2 and 3 ranks (three mpiexec runs)."""
    return {n: case(n, "solves", script=__file__, timeout=300) for n in (1, 2, 3)}


def _answer(out: dict) -> dict:
    return {key: out[key] for key in (*SAME, "rebuilds_after")}


@needs_mpi
@pytest.mark.parametrize("name", [spec[0] for spec in SOLVES])
def test_every_rank_count_gives_the_one_process_answer(reference, ranked, name):
    for n, outs in ranked.items():
        out = outs[name]
        assert _answer(out) == reference[name], f"{name} on {n} ranks"
        assert out["ranks"] == n and out["per_rank"]["worlds"] == {1: [96], 2: [64, 32], 3: [32, 32, 32]}[n]
        assert sum(out["phases"].values()) <= out["seconds"]
        if n > 1:
            comm = out["communication"]
            assert out["phases"]["communication"] > 0 and comm["collectives"] > 6 and comm["bytes"] >= 6 * 200 * 8


@needs_mpi
def test_the_splits_give_one_answer_and_their_own_local_graphs(reference, ranked):
    """Every rank count and split gives the one-process answer (above), so the two splits agree; the
    xor splits put other worlds (and arcs) on the ranks, the keyed ones do not (no X_r to sort)."""
    for sampling in ("xor", "keyed"):
        for n in (2, 3):
            assert _answer(ranked[n][f"{sampling}-fasst"]) == _answer(ranked[n][f"{sampling}-naive"])
    fasst, naive = ranked[3]["xor-fasst"]["per_rank"], ranked[3]["xor-naive"]["per_rank"]
    assert fasst["local_arcs"] != naive["local_arcs"]  # other worlds on each rank
    keyed = ranked[3]["keyed-fasst"]["per_rank"], ranked[3]["keyed-naive"]["per_rank"]
    assert keyed[0] == keyed[1]


@needs_mpi
def test_the_cuda_engine_over_two_ranks_in_the_emulator(reference):
    """The CUDA engine (sk_live_any and the compaction, the kernels in the emulator) on two ranks:
    the same answer, and the CPU's local graphs."""
    out = case(2, "emulated", script=__file__, timeout=600)
    assert _answer(out) == reference["xor-naive"] and out["ranks"] == 2
    want = local_sizes(small_graph(), "xor", "naive", 2, registers=REGISTERS)
    assert out["per_rank"]["local_arcs"] == [p.arcs for p in want]
    assert out["per_rank"]["local_vertices"] == [p.vertices for p in want]


@needs_mpi
def test_gpucore_im_difuser_under_mpiexec(tmp_path, reference):
    """The command: rank 0 writes one result file, with the one-process answer and the ranks' record."""
    from gpucore.graph import save_graph

    path = save_graph(small_graph(), tmp_path / "g.gcsr")
    out = tmp_path / "out"
    out.mkdir()
    proc = mpirun(3, "-m", "gpucore", "im", "--algorithm", "difuser", "--graph", path, "--k", 6, "--registers",
                  REGISTERS, "--sampling", "xor", "--world-split", "naive", "--refine", 8, "--rebuild-threshold",
                  0.05, "--seed", 11, "--backend", "cpu", "-o", out / "im.json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out.iterdir()] == ["im.json"] and proc.stdout == ""
    res = json.loads((out / "im.json").read_text())
    assert {key: res[key] for key in SAME} == {key: reference["xor-naive"][key] for key in SAME}
    assert [b["after_seed"] for b in res["builds"]] == reference["xor-naive"]["rebuilds_after"]
    assert res["ranks"] == 3 and res["world_split"] == "naive"
    assert res["per_rank"]["worlds"] == [32, 32, 32] and "communication" in res["seconds_by_phase"]


@needs_mpi
def test_ranks_that_disagree_stop_together():
    out = case(2, "mismatch", script=__file__)
    assert out["messages"] == ["the 2 ranks of this DiFuseR run disagree on world_split: every rank must run the "
                               "same solve"] * 2


# ---------------------------------------------------------------------------------------------
# the rank program


def _solves(comm) -> dict:
    return {spec[0]: solve(comm, *spec) for spec in SOLVES}


def _emulated(comm) -> dict:
    import gpucore.im.sketch.driver as driver
    from gpucore.im.sketch.emulated import emulated_engine

    driver.make_engine = lambda graph, keys, seed, backend, mapping, live_bits: emulated_engine(
        graph, keys, seed, mapping=mapping, slice_width=32, live_bits=live_bits)
    return solve(comm, *SOLVES[1])


def _mismatch(comm):
    from gpucore.errors import GpucoreError
    from gpucore.im.sketch import difuser

    try:
        difuser(small_graph(), 2, registers=64, backend="cpu", world_split="naive" if comm.rank else "fasst",
                comm=comm)
    except GpucoreError as exc:
        return {"messages": comm.allgather(str(exc))}
    return {"messages": comm.allgather("no error")}


_CASES = {"solves": _solves, "emulated": _emulated, "mismatch": _mismatch}

if __name__ == "__main__":
    rank_main(_CASES)

"""IMM on two GPUs (pytest -m gpu; skipped unless 2 GPUs, mpi4py and mpiexec are present).

``mpiexec -n 2 python tests/gpu/test_dist_im_cuda.py solves [NAMES]``: each rank takes its own GPU,
samples its share of every phase's keys on it, and the counts are all-reduced by NCCL (with
``GPUCORE_NCCL=0``: staged through the host over MPI). The seeds, gains, theta, lower bound and its
iterations and the estimate must equal the one-GPU run of this process, for IC and MRIM on LT, for
the certified-candidates greedy and the dense one, and for the fused sampler when it is installed
(its sets are gim's, key by key). About a minute in all (CuPy, the IM kernels and NCCL start in
each rank of the two launches).
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.gpu.test_dist_cuda import _two_gpus
from tests.test_dist_mpi import case, rank_main

pytestmark = pytest.mark.skipif(_two_gpus() is not None, reason=str(_two_gpus()))

#: result fields that must not depend on the rank count
SAME = ("seed_ids", "marginal_coverage", "theta", "lower_bound", "lb_iteration", "lb_sets", "lb_iterations",
        "covered", "estimated_spread", "estimated_spread_stderr", "estimate_sets", "rr_elements", "rr_mean_size")

#: name -> (model, rounds, k, eps, candidates, sampler)
SOLVES = {
    "ic": ("IC", 1, 20, 0.2, None, "gim"),
    "ic-dense": ("IC", 1, 20, 0.2, 0, "gim"),
    "mrim-lt": ("LT", 3, 5, 0.3, None, "gim"),
    "ic-fused": ("IC", 1, 20, 0.2, None, "fused"),
}
HAS_FUSED = importlib.util.find_spec("gpucore.im.fused") is not None


def graph():
    """A 20,000-node preferential-attachment graph with weighted-cascade probabilities."""
    from tests.gpu.test_im_cuda import pa_graph

    return pa_graph(nodes=20_000, edges=200_000, seed=5)


def solve(comm, name: str) -> dict:
    from gpucore.im import imm

    model, rounds, k, eps, candidates, sampler = SOLVES[name]
    options = {} if candidates is None else {"candidates": candidates}
    res = imm(graph(), k, eps, model, rounds=rounds, seed=11, backend="cuda", comm=comm, sampler=sampler, **options)
    out = {key: res[key] for key in SAME}
    out.update(ranks=res["ranks"], communication=res.get("communication"), per_rank=res["per_rank"]["selection_sets"],
               phases=res["seconds_by_phase"])
    return out


@pytest.fixture(scope="module")
def one_gpu():
    from gpucore.dist import SingleComm

    names = [name for name in SOLVES if name != "ic-fused"]
    return {name: {key: value for key, value in solve(SingleComm(), name).items() if key in SAME} for name in names}


def test_two_gpus_give_the_one_gpu_answer(one_gpu):
    names = [name for name in SOLVES if HAS_FUSED or name != "ic-fused"]
    out = case(2, "solves", *names, script=__file__, timeout=300)
    assert out["kind"] == "nccl" and len(set(out["bus_ids"])) == 2  # one GPU per rank, NCCL for the counts
    for name in names:
        got = out["solves"][name]
        want = one_gpu["ic" if name == "ic-fused" else name]
        assert {key: got[key] for key in SAME} == want, name
        assert got["ranks"] == 2 and sum(got["per_rank"]) == got["theta"]
        assert got["phases"]["communication"] > 0 and got["communication"]["picks"] > 0
    dense, cand = out["solves"]["ic-dense"]["communication"], out["solves"]["ic"]["communication"]
    assert dense["dense_reductions"] > cand["dense_reductions"] and dense["bytes"] > cand["bytes"]


def test_device_counts_through_the_host_give_the_same_answer(one_gpu):
    out = case(2, "solves", "ic", script=__file__, timeout=300, env={"GPUCORE_NCCL": "0"})
    assert out["kind"] == "mpi"
    assert {key: out["solves"]["ic"][key] for key in SAME} == one_gpu["ic"]


# ---------------------------------------------------------------------------------------------
# the rank program


def _solves(comm) -> dict:
    import sys

    import cupy

    names = sys.argv[2:]
    return {"kind": comm.kind, "bus_ids": comm.allgather(cupy.cuda.Device().pci_bus_id),
            "solves": {name: solve(comm, name) for name in names}}


if __name__ == "__main__":
    rank_main({"solves": _solves})

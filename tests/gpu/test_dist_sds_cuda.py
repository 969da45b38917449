"""Structural diversity search on two GPUs (pytest -m gpu; skipped unless 2 GPUs, mpi4py and mpiexec
are present).

``mpiexec -n 2 python tests/gpu/test_dist_sds_cuda.py solves``: each rank takes its own GPU, the
edge supports of its slot tiles are all-reduced by NCCL, the cost model is timed on both GPUs, and
the search runs under the three stealing policies (with the default chunks and with tiny ones, so
that the ranks claim and steal often). The top t with scores and contexts, the t-th score and its
ties must equal the one-GPU run of this process for comp, core and truss; with ``GPUCORE_NCCL=0``
the supports go through the host (truss). About a minute in all (CuPy and the sds kernels start in
each rank of the two launches).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.test_dist_cuda import _two_gpus
from tests.test_dist_mpi import case, rank_main

pytestmark = pytest.mark.skipif(_two_gpus() is not None, reason=str(_two_gpus()))

MODELS = ("comp", "core", "truss")
POLICIES = ("dynamic", "exhausted", "none")
SAME = ("top", "t_score", "ties_at_t", "ties_in_top", "candidates", "must_score", "degree_bound_candidates")
K, T = 4, 100


def graph():
    """An undirected R-MAT graph of 20,000 vertices (200,000 edge draws, duplicates dropped)."""
    from gpucore.graph import from_arcs
    from gpucore.graph.generators import generate

    src, dst = generate("rmat", 20_000, 200_000, seed=3)
    pairs = np.unique(np.sort(np.stack([src, dst], axis=1), axis=1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return from_arcs(20_000, pairs[:, 0], pairs[:, 1], 0.1, directed=False, name="rmat20k")


def answer(res) -> dict:
    return {key: res[key] for key in SAME}


@pytest.fixture(scope="module")
def one_gpu():
    from gpucore.dist import SingleComm
    from gpucore.sds import run_sds

    g = graph()
    return {model: answer(run_sds(g, model, K, T, backend="cuda", comm=SingleComm())) for model in MODELS}


def test_two_gpus_give_the_one_gpu_answer(one_gpu):
    out = case(2, "solves", script=__file__, timeout=300)
    assert out["kind"] == "nccl" and len(set(out["bus_ids"])) == 2  # one GPU per rank, NCCL for the supports
    steals = 0
    for key, got in out["solves"].items():
        model = key.split("/")[0]
        assert got["answer"] == one_gpu[model], key
        assert got["ranks"] == 2 and sum(got["scored_by_rank"]) == got["scored"] >= got["answer"]["must_score"]
        assert got["communication"] > 0 and got["cost_model"]["kind"] == "fit"
        steals += sum(got["steals_made"]) if "/dynamic/" in key else 0
    assert steals > 0


def test_supports_through_the_host_give_the_same_answer(one_gpu):
    out = case(2, "solves", "truss", script=__file__, timeout=300, env={"GPUCORE_NCCL": "0"})
    assert out["kind"] == "mpi" and len(out["solves"]) == 2 * len(POLICIES)
    assert all(got["answer"] == one_gpu["truss"] for got in out["solves"].values())


# ---------------------------------------------------------------------------------------------
# the rank program


def _solves(comm) -> dict:
    """Every model (or those named after the case) under every policy, tiny and default chunks."""
    import sys

    import cupy

    from gpucore.sds import run_sds

    g = graph()
    out = {}
    for model in sys.argv[2:] or MODELS:
        for policy in POLICIES:
            for chunk in (1e-4, 0.1):
                res = run_sds(g, model, K, T, backend="cuda", comm=comm, stealing=policy, chunk_seconds=chunk)
                out[f"{model}/{policy}/{chunk}"] = {
                    "answer": answer(res), "ranks": res["ranks"], "scored": res["scored"],
                    "scored_by_rank": res["per_rank"]["scored"], "steals_made": res["per_rank"]["steals_made"],
                    "communication": res["seconds_by_phase"]["communication"], "cost_model": res["cost_model"]}
    return {"kind": comm.kind, "bus_ids": comm.allgather(cupy.cuda.Device().pci_bus_id), "solves": out}


if __name__ == "__main__":
    rank_main({"solves": _solves})

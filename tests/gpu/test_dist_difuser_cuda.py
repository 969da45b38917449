"""DiFuseR on two GPUs (pytest -m gpu; skipped unless 2 GPUs, mpi4py and mpiexec are present).

``mpiexec -n 2 python tests/gpu/test_dist_difuser_cuda.py solves``: each rank takes its own GPU,
builds its local graph there (``sk_live_any``, then the compaction in CuPy) for its share of the
worlds, and the per-vertex score parts, the refinement's gains and the visited counts are
all-reduced by NCCL on the devices (with ``GPUCORE_NCCL=0``: staged through the host over MPI). The
seeds, selection scores, the spread after every seed and the rebuild points must equal the one-GPU
run of this process, for xor and keyed sampling and for both world splits; each rank's local graph
must be the one the CPU builds for the same worlds. About a minute in all (CuPy, the sketch kernels
and NCCL start in each rank of the two launches).
"""

from __future__ import annotations

import pytest

from tests.gpu.test_dist_cuda import _two_gpus
from tests.test_dist_mpi import case, rank_main

pytestmark = pytest.mark.skipif(_two_gpus() is not None, reason=str(_two_gpus()))

#: result fields that must not depend on the rank count nor the split
SAME = ("seed_ids", "selection_scores", "spread_after_seed", "estimated_spread", "rebuild_rounds")
REGISTERS = 512
#: name -> (sampling, split, refine)
SOLVES = {
    "xor-fasst": ("xor", "fasst", 8),
    "xor-naive": ("xor", "naive", 0),
    "keyed-fasst": ("keyed", "fasst", 8),
}


def graph():
    """A 20,000-node preferential-attachment graph, probabilities uniform in [0, 0.05]."""
    from tests.gpu.test_sketch_cuda import pa_graph

    return pa_graph(nodes=20_000, edges=150_000, seed=5, high=0.05)


def solve(comm, name: str) -> dict:
    from gpucore.im.sketch import difuser

    sampling, split, refine = SOLVES[name]
    res = difuser(graph(), 10, registers=REGISTERS, sampling=sampling, seed=11, backend="cuda", refine=refine,
                  world_split=split, comm=comm)
    out = {key: res[key] for key in SAME}
    out["rebuilds_after"] = [b["after_seed"] for b in res["builds"]]
    out.update(ranks=res["ranks"], communication=res.get("communication"), phases=res["seconds_by_phase"],
               local_arcs=res["per_rank"]["local_arcs"], local_vertices=res["per_rank"]["local_vertices"])
    return out


def cpu_local_sizes(name: str, size: int) -> list[dict]:
    """The local graphs the CPU builds for each rank's worlds (sizes only)."""
    import numpy as np

    from gpucore.im.sketch.cpu import local_arcs
    from gpucore.im.sketch.hashing import world_keys
    from gpucore.im.sketch.split import rank_worlds, world_order

    sampling, split, _ = SOLVES[name]
    g = graph()
    order = world_order(11, REGISTERS, sampling, True, split)
    out = []
    for rank in range(size):
        keys = world_keys(11, REGISTERS, rank_worlds(order, size, rank), sampling, True)
        live = keys.live if keys.keyed else keys.live.astype(np.uint32)
        out.append(local_arcs(g, live, keys.keyed, 11).sizes())
    return out


@pytest.fixture(scope="module")
def one_gpu():
    from gpucore.dist import SingleComm

    return {name: solve(SingleComm(), name) for name in SOLVES}


def _answer(out: dict) -> dict:
    return {key: out[key] for key in (*SAME, "rebuilds_after")}


def test_two_gpus_give_the_one_gpu_answer(one_gpu):
    out = case(2, "solves", script=__file__, timeout=300)
    assert out["kind"] == "nccl" and len(set(out["bus_ids"])) == 2  # one GPU per rank, NCCL for the scores
    for name in SOLVES:
        got = out["solves"][name]
        assert _answer(got) == _answer(one_gpu[name]), name
        assert got["ranks"] == 2 and got["phases"]["communication"] > 0 and got["communication"]["collectives"] > 10
        cpu = cpu_local_sizes(name, 2)
        assert got["local_arcs"] == [c["local_arcs"] for c in cpu], name
        assert got["local_vertices"] == [c["local_vertices"] for c in cpu], name
        assert one_gpu[name]["local_arcs"] == [c["local_arcs"] for c in cpu_local_sizes(name, 1)], name
    fasst, naive = out["solves"]["xor-fasst"]["local_arcs"], out["solves"]["xor-naive"]["local_arcs"]
    assert sum(fasst) < sum(naive)  # FASST copies fewer arcs to both ranks (low probabilities, xor)


def test_device_scores_through_the_host_give_the_same_answer(one_gpu):
    out = case(2, "solves", "xor-fasst", script=__file__, timeout=300, env={"GPUCORE_NCCL": "0"})
    assert out["kind"] == "mpi"
    assert _answer(out["solves"]["xor-fasst"]) == _answer(one_gpu["xor-fasst"])


# ---------------------------------------------------------------------------------------------
# the rank program


def _solves(comm) -> dict:
    import sys

    import cupy

    names = sys.argv[2:] or list(SOLVES)
    return {"kind": comm.kind, "bus_ids": comm.allgather(cupy.cuda.Device().pci_bus_id),
            "solves": {name: solve(comm, name) for name in names}}


if __name__ == "__main__":
    rank_main({"solves": _solves})

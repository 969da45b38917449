"""gpucore.dist on two GPUs (pytest -m gpu; skipped unless 2 GPUs, mpi4py and mpiexec are present).

``mpiexec -n 2 python tests/gpu/test_dist_cuda.py CASE``: each rank takes its own GPU (local rank
modulo the visible devices), the communicator is ``NCCLComm``, and CuPy arrays are all-reduced,
reduced, broadcast and gathered by NCCL (checked on every rank against the NumPy answer); the
distributed greedy max-cover on device counts and the oracle's spread on two GPUs equal the
one-process CPU results exactly. With ``GPUCORE_NCCL=0`` the same device collectives run through
the host over MPI. About 30 s in all (CuPy, NCCL and the oracle kernels start in each rank).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_dist_mpi import _cover_summary, case, find_mpiexec, rank_main


def _two_gpus() -> str | None:
    try:
        import cupy
        import mpi4py  # noqa: F401
    except ImportError as exc:
        return f"needs CuPy and mpi4py ({exc})"
    if find_mpiexec() is None:
        return "no mpiexec"
    if cupy.cuda.runtime.getDeviceCount() < 2:
        return "needs 2 GPUs"
    return None


pytestmark = pytest.mark.skipif(_two_gpus() is not None, reason=str(_two_gpus()))


@pytest.mark.parametrize("nccl, kind", [("1", "nccl"), ("0", "mpi")])
def test_device_collectives_on_two_gpus(nccl, kind):
    from gpucore.dist.nccl import nccl_available

    if kind == "nccl" and not nccl_available():
        pytest.skip("this CuPy has no NCCL (cupy.cuda.nccl.available is False)")
    out = case(2, "collectives", script=__file__, env={"GPUCORE_NCCL": nccl})
    assert out["kind"] == kind and out["ok"]
    assert out["devices"] == [0, 1] and len(set(out["bus_ids"])) == 2  # one GPU per rank
    assert out["nccl_used"] == (kind == "nccl")


def test_greedy_cover_on_device_counts_equals_one_cpu_process():
    from tests.test_dist import ArrayCover, synthetic_sets

    offsets, nodes = synthetic_sets(universe=40, sets=301, seed=5)
    ref = _cover_summary(ArrayCover(40, offsets, nodes), len(offsets) - 1)
    assert case(2, "cover", script=__file__) == ref


def test_spread_on_two_gpus_equals_one_cpu_process():
    from gpucore.dist import SingleComm
    from gpucore.oracle import spread

    g, seeds = _graph()
    ref = spread(g, seeds, "IC", runs=4001, seed=3, backend="cpu", comm=SingleComm())
    out = case(2, "spread", script=__file__, timeout=300)  # the oracle's kernels compile on first use
    assert out["counts_sha"] == _sha(ref.counts) and (out["mean"], out["ci"]) == (ref.mean, list(ref.ci))
    assert out["backend"] == "cuda" and out["ranks"] == 2


# ---------------------------------------------------------------------------------------------
# the rank program


def _sha(array) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _graph():
    from gpucore.graph import from_arcs

    rng = np.random.default_rng(11)
    n = 2000
    src = rng.integers(0, n, 16000)
    dst = rng.integers(0, n, 16000)
    keep = src != dst
    pairs = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0)
    prob = rng.uniform(0.02, 0.2, len(pairs))
    return from_arcs(n, pairs[:, 0].tolist(), pairs[:, 1].tolist(), prob.tolist(), name="r2000"), [1, 50, 300]


def _collectives(comm) -> dict:
    import cupy

    r, n = comm.rank, comm.size
    x = cupy.arange(1000, dtype=cupy.int64) * (r + 1)
    total = comm.allreduce(x)
    assert isinstance(total, cupy.ndarray) and total.get().tolist() == (np.arange(1000) * 3).tolist()
    f = cupy.full(7, r + 0.5, dtype=cupy.float32)
    assert comm.allreduce(f, "max").get().tolist() == [n - 0.5] * 7
    red = comm.reduce(cupy.ones(5, dtype=cupy.int32) * (r + 2), root=1)
    assert (red is None) == (r == 0) and (red is None or red.get().tolist() == [5] * 5)
    data = cupy.arange(12, dtype=cupy.float64).reshape(3, 4)
    got = comm.bcast_array(data if r == 0 else None)
    assert isinstance(got, cupy.ndarray) and got.get().tolist() == np.arange(12.0).reshape(3, 4).tolist()
    flags = comm.bcast_array(cupy.asarray([True, False, True]) if r == 1 else cupy.zeros(3, dtype=bool), root=1)
    assert flags.get().tolist() == [True, False, True]
    rows = cupy.full((r + 1, 2), r, dtype=cupy.int32)
    gathered = comm.allgather_array(rows)
    assert isinstance(gathered, cupy.ndarray) and gathered[:, 0].get().tolist() == [0, 1, 1]
    host = comm.allreduce(np.array([r], dtype=np.int64))  # host arrays still over MPI
    assert isinstance(host, np.ndarray) and host.tolist() == [1]
    cupy.cuda.get_current_stream().synchronize()
    dev = cupy.cuda.Device()
    return {"kind": comm.kind, "ok": True, "devices": comm.allgather(dev.id),
            "bus_ids": comm.allgather(dev.pci_bus_id),
            "nccl_used": getattr(comm, "_device_comm", None) is not None}


def _cover(comm) -> dict:
    import cupy

    from gpucore.dist import partition
    from tests.test_dist import ArrayCover, synthetic_sets

    class DeviceCounts(ArrayCover):
        def counts(self):
            return cupy.asarray(self.live)

    offsets, nodes = synthetic_sets(universe=40, sets=301, seed=5)
    begin, end = partition(len(offsets) - 1, comm.size, comm.rank)
    mine = DeviceCounts(40, offsets[begin : end + 1] - offsets[begin], nodes[offsets[begin] : offsets[end]])
    return _cover_summary(mine, end - begin, comm)


def _spread(comm) -> dict:
    from gpucore.oracle import spread

    g, seeds = _graph()
    res = spread(g, seeds, "IC", runs=4001, seed=3, backend="cuda", comm=comm)
    return {"counts_sha": _sha(res.counts), "mean": res.mean, "ci": list(res.ci), "backend": res.backend,
            "ranks": res.ranks}


if __name__ == "__main__":
    rank_main({"collectives": _collectives, "cover": _cover, "spread": _spread})

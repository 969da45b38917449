"""gpucore.dist over real MPI ranks: ``mpiexec -n 1/2/3`` on the CPU (MPICH from the package registry).

This file is also the program the ranks run: ``mpiexec -n N python tests/test_dist_mpi.py CASE``
(see ``_CASES`` at the bottom). Each case checks itself on every rank; rank 0 prints one JSON line
that the test reads. Skipped, with the reason, where ``mpiexec`` or mpi4py is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # a terminal control sequence


def find_mpiexec() -> str | None:
    """The mpiexec beside this Python (the venv's MPICH), else the first on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _skip_reason() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install -e '.[test]')"
    if find_mpiexec() is None:
        return "no mpiexec (pip install -e '.[test]' installs MPICH's)"
    return None


needs_mpi = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def mpirun(n: int, *args, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """``mpiexec -n n python ARGS`` from the repository root, one Numba thread per rank."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    full_env = {**os.environ, "PYTHONPATH": path, "NUMBA_NUM_THREADS": "1", "GPUCORE_PROGRESS": "0", **(env or {})}
    cmd = [find_mpiexec(), "-n", str(n), sys.executable, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO)


def case(n: int, name: str, *args, script: str = __file__, **kwargs) -> dict:
    """Run case ``name`` of ``script`` (default: this file) on n ranks; the JSON line rank 0 printed."""
    proc = mpirun(n, script, name, *args, **kwargs)
    assert proc.returncode == 0, f"mpiexec -n {n} {name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    # a library may write a terminal escape to stdout (one did before rank 0's line on the GPU machine, in the sds
    # solves: ESC[0m); the answer is the JSON line after such codes
    lines = [line for line in (ANSI.sub("", raw) for raw in proc.stdout.splitlines()) if line.startswith("{")]
    assert len(lines) == 1, f"expected one JSON line from rank 0, got:\n{proc.stdout}"
    return json.loads(lines[0])


# ---------------------------------------------------------------------------------------------
# the tests


@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 3])
def test_collectives(n):
    out = case(n, "collectives")
    assert out == {"kind": "single" if n == 1 else "mpi", "size": n, "ok": True}


@needs_mpi
def test_greedy_cover_is_the_same_on_1_2_3_ranks():
    from tests.test_dist import ArrayCover, synthetic_sets

    offsets, nodes = synthetic_sets(universe=40, sets=301, seed=5)
    ref = _cover_summary(ArrayCover(40, offsets, nodes), len(offsets) - 1)
    for n in (1, 2, 3):
        assert case(n, "cover") == ref, f"{n} ranks"


@needs_mpi
def test_failing_rank_ends_every_rank_with_its_message():
    t0 = time.perf_counter()
    proc = mpirun(3, __file__, "fail", timeout=60)
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 2  # the GpucoreError's status, through MPI_Abort
    assert "gpucore: error: [rank 1] rank 1 fails on purpose" in proc.stderr
    assert "survived" not in proc.stdout  # the other ranks were ended while they waited
    assert elapsed < 30, f"the run took {elapsed:.1f} s to end"


@needs_mpi
def test_crashing_rank_ends_every_rank_with_its_traceback():
    proc = mpirun(2, __file__, "crash", timeout=60)
    assert proc.returncode == 1
    assert "ZeroDivisionError" in proc.stderr and "gpucore: error: [rank 0] internal error" in proc.stderr


@needs_mpi
def test_launcher_and_mpi_disagreeing_is_an_error():
    """A launcher's variables without its MPI (mpi4py would run N lone copies): refused on the spot."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0"}
    proc = subprocess.run([sys.executable, "-m", "gpucore", "info", "--help"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=60)
    assert proc.returncode == 0  # --help exits before any rank exists
    proc = subprocess.run([sys.executable, "-c", "import gpucore.dist as d; d.init()"], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=60)
    assert proc.returncode != 0
    assert "Open MPI started rank 0 of 2, but MPI sees rank 0 of 1" in proc.stderr


# ---- the CLI under mpiexec: gpucore verify splits the Monte-Carlo runs; rank 0 alone writes


@pytest.fixture(scope="module")
def im_case(tmp_path_factory):
    """A 60-node random graph on disk and an IM result file for seeds [0, 7, 19]."""
    from gpucore.graph import from_arcs, load_graph, save_graph

    tmp = tmp_path_factory.mktemp("dist_verify")
    rng = np.random.default_rng(3)
    pairs = {(int(u), int(v)) for u, v in rng.integers(0, 60, size=(240, 2)) if u != v}
    src, dst = zip(*sorted(pairs))
    g = load_graph(save_graph(from_arcs(60, src, dst, rng.uniform(0.05, 0.4, len(src)).tolist(), name="r60"),
                              tmp / "r60.gcsr"))
    result = {"kind": "im", "graph": {"path": str(g.path), "sha256": g.sha256}, "model": "IC", "k": 3,
              "seed_ids": [0, 7, 19], "estimated_spread": 1.0}
    path = tmp / "im.json"
    path.write_text(json.dumps(result))
    return tmp, g, path


@needs_mpi
def test_verify_report_is_the_same_on_1_2_3_ranks(im_case):
    from gpucore.oracle import spread

    tmp, g, result = im_case
    ref = spread(g, [0, 7, 19], "IC", runs=301, seed=4, backend="cpu")
    for n in (1, 2, 3):
        out = tmp / f"verify{n}"
        out.mkdir()
        proc = mpirun(n, "-m", "gpucore", "verify", result, "--graph", g.path, "--runs", 301, "--seed", 4,
                      "--backend", "cpu", "--tolerance", 0.5, "-o", out / "v.json")
        assert proc.returncode == 1, proc.stderr  # the estimate 1.0 is far below the spread: a failed check
        assert proc.stdout.count("gpucore verify im.json (im): FAILED") == 1  # rank 0 alone prints
        assert sorted(p.name for p in out.iterdir()) == ["v.json"]  # rank 0 alone writes, atomically
        report = json.loads((out / "v.json").read_text())
        assert (report["mean"], report["stderr"], report["ci"]) == (ref.mean, ref.stderr, list(ref.ci)), n
        assert report["spread"]["ranks"] == n and report["runs"] == 301


@needs_mpi
def test_json_on_standard_output_is_printed_once(im_case):
    tmp, g, result = im_case
    proc = mpirun(3, "-m", "gpucore", "verify", result, "--graph", g.path, "--runs", 20, "--backend", "cpu")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["runs"] == 20  # one JSON document, not three


@needs_mpi
def test_cli_error_on_every_rank_ends_the_run(im_case):
    tmp, g, _ = im_case
    proc = mpirun(2, "-m", "gpucore", "verify", tmp / "missing.json", "--graph", g.path, timeout=60)
    assert proc.returncode != 0
    assert "gpucore: error: [rank" in proc.stderr and "missing.json: no such result file" in proc.stderr


@needs_mpi
@pytest.mark.parametrize("n", [2, 3])
def test_spread_with_more_ranks_than_runs(n):
    out = case(n, "spread_tiny")
    assert out["runs"] == 2 and out["ranks"] == n and out["same_as_one_rank"]


# ---------------------------------------------------------------------------------------------
# the rank program


def _cover_summary(local, local_sets: int, comm=None) -> dict:
    from gpucore.dist import greedy_max_cover

    res = greedy_max_cover(local, 12, local_sets, comm)
    return {"chosen": res.chosen, "gains": res.gains, "covered": res.covered, "theta": res.theta}


def _collectives(comm) -> dict:
    from gpucore.errors import GpucoreError

    r, n = comm.rank, comm.size
    assert comm.bcast({"a": [1, 2]} if r == 0 else None) == {"a": [1, 2]}
    assert comm.bcast(f"from {n - 1}" if r == n - 1 else None, root=n - 1) == f"from {n - 1}"
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = comm.bcast_array(data if r == 0 else None)
    assert got.dtype == np.float32 and np.array_equal(got, data)
    buf = np.zeros((3, 4), dtype=np.float32)
    assert comm.bcast_array(data if r == n - 1 else buf, root=n - 1) is (data if r == n - 1 else buf)
    assert np.array_equal(buf if r != n - 1 else data, data)
    ints = np.array([r, 10 * r, -r], dtype=np.int64)
    assert comm.allreduce(ints).tolist() == [sum(range(n)), 10 * sum(range(n)), -sum(range(n))]
    assert comm.allreduce(ints, "max").tolist() == [n - 1, 10 * (n - 1), 0]
    assert ints.tolist() == [r, 10 * r, -r]  # inputs untouched
    red = comm.reduce(np.full(5, r + 1, dtype=np.uint32), "sum", root=n - 1)
    assert (red is None) == (r != n - 1)
    if red is not None:
        assert red.dtype == np.uint32 and red.tolist() == [n * (n + 1) // 2] * 5
    assert comm.allgather((r, "x")) == [(q, "x") for q in range(n)]
    rows = np.full((r + 1, 2), r, dtype=np.int16)  # rank r contributes r + 1 rows
    gathered = comm.allgather_array(rows)
    assert gathered.dtype == np.int16 and gathered[:, 0].tolist() == [q for q in range(n) for _ in range(q + 1)]
    empty = comm.allgather_array(np.empty(0 if r else 3, dtype=np.float64))
    assert empty.shape == (3,)
    for bad, what in ((np.zeros((1, r + 1)), "trailing shapes"), (np.zeros(2, dtype=bool), "cannot be reduced")):
        try:
            (comm.allgather_array if bad.ndim == 2 else comm.allreduce)(bad)
        except GpucoreError as exc:
            assert what in str(exc), exc
        else:
            assert n == 1 and bad.ndim == 2, "no error raised"
    _point_to_point(comm)
    comm.barrier()
    return {"kind": comm.kind, "size": n, "ok": True}


def _point_to_point(comm) -> None:
    """A ring of messages, two tags received out of order, a probe, a thread that serves."""
    import threading

    from gpucore.errors import GpucoreError

    r, n = comm.rank, comm.size
    nxt, prev = (r + 1) % n, (r - 1) % n
    if n == 1:
        return
    assert comm.thread_level in ("serialized", "multiple")
    sent = comm.send({"from": r, "array": np.full(3, r)}, nxt, tag=3)
    comm.send(f"late {r}", nxt, tag=9)
    deadline = time.time() + 30
    while (probe := comm.iprobe(prev, 9)) is None:
        assert time.time() < deadline, "the message never showed"
    assert probe == (prev, 9)
    got = comm.recv(tag=9)  # the later message first, by tag
    assert (got.obj, got.source, got.tag) == (f"late {prev}", prev, 9)
    got = comm.recv(prev, 3)
    assert got.obj["from"] == prev and got.obj["array"].tolist() == [prev] * 3 and got.nbytes == sent
    assert comm.iprobe() is None
    for bad in (lambda: comm.send(1, n), lambda: comm.send(1, 0, tag=2**20)):
        try:
            bad()
        except GpucoreError:
            pass
        else:
            raise AssertionError("no error raised")
    comm.barrier()
    # rank 0 answers every other rank from a thread while its main thread waits in a collective-free loop
    if r == 0:
        def serve():
            for _ in range(n - 1):
                got = comm.recv(tag=11)
                comm.send(got.obj * 2, got.source, tag=12)

        thread = threading.Thread(target=serve)
        thread.start()
        thread.join()
    else:
        comm.send(r, 0, tag=11)
        assert comm.recv(0, 12).obj == 2 * r


def _cover(comm) -> dict:
    from gpucore.dist import partition
    from tests.test_dist import ArrayCover, synthetic_sets

    offsets, nodes = synthetic_sets(universe=40, sets=301, seed=5)
    begin, end = partition(len(offsets) - 1, comm.size, comm.rank)
    mine_off = offsets[begin : end + 1] - offsets[begin]
    mine = ArrayCover(40, mine_off, nodes[offsets[begin] : offsets[end]])
    return _cover_summary(mine, end - begin, comm)


def _fail(comm) -> dict:
    from gpucore.dist import run_guarded
    from gpucore.errors import GpucoreError

    def work():
        if comm.rank == 1:
            raise GpucoreError("rank 1 fails on purpose")
        comm.barrier()  # the others wait for rank 1, which never comes
        print("survived", flush=True)
        return 0

    sys.exit(run_guarded(comm, work))


def _crash(comm) -> dict:
    from gpucore.dist import run_guarded

    def work():
        if comm.rank == 0:
            return 1 // 0
        comm.allreduce(np.zeros(3))
        return 0

    sys.exit(run_guarded(comm, work))


def _spread_tiny(comm) -> dict:
    from gpucore.dist import SingleComm
    from gpucore.graph import from_arcs
    from gpucore.oracle import spread

    g = from_arcs(4, [0, 1, 2], [1, 2, 3], [0.5, 0.5, 0.5], name="path")
    many = spread(g, [0], "IC", runs=2, seed=9, backend="cpu", comm=comm)
    one = spread(g, [0], "IC", runs=2, seed=9, backend="cpu", comm=SingleComm())
    same = np.array_equal(many.counts, one.counts) and (many.mean, many.ci) == (one.mean, one.ci)
    return {"runs": many.runs, "ranks": many.ranks, "same_as_one_rank": bool(same)}


def rank_main(cases: dict) -> None:
    """The rank program: run case ``sys.argv[1]`` on this rank; rank 0 prints its answer as JSON."""
    from gpucore.dist import init

    world = init()
    answer = cases[sys.argv[1]](world)
    if world.is_root:
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    rank_main({"collectives": _collectives, "cover": _cover, "fail": _fail, "crash": _crash,
               "spread_tiny": _spread_tiny})

"""gpucore.dist in one process: launcher detection (every launcher's variables emulated, srun
included), key partition, greedy packing, the single-process communicator, failure reporting,
device choice by local rank, and the distributed greedy max-cover against a brute-force greedy.
The same code over real MPI ranks: ``tests/test_dist_mpi.py``."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from gpucore.dist import Launch, SingleComm, detect, greedy_max_cover, pack_greedy, partition, run_guarded
from gpucore.errors import GpucoreError

# ---------------------------------------------------------------------------------------------
# launcher detection

SRUN_STEP = {"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "8", "SLURM_NTASKS": "8",
             "SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NODEID": "1"}


@pytest.mark.parametrize("env, expected", [
    ({}, None),
    ({"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
     Launch("Open MPI", 4, 2, 0)),
    ({"PMI_SIZE": "3", "PMI_RANK": "1", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "3"},
     Launch("PMI (MPICH Hydra, Intel MPI)", 3, 1, 1)),
    ({"PMI_SIZE": "3", "PMI_RANK": "2", "PMI_LOCAL_RANK": "0"}, Launch("PMI (MPICH Hydra, Intel MPI)", 3, 2, 0)),
    ({"PMI_SIZE": "2", "PMI_RANK": "1"}, Launch("PMI (MPICH Hydra, Intel MPI)", 2, 1, None)),
    ({"MV2_COMM_WORLD_SIZE": "2", "MV2_COMM_WORLD_RANK": "1", "MV2_COMM_WORLD_LOCAL_RANK": "1"},
     Launch("MVAPICH", 2, 1, 1)),
    (SRUN_STEP, Launch("SLURM srun", 8, 5, 1)),
    # an older srun without SLURM_STEP_NUM_TASKS: the task count of the step is SLURM_NTASKS
    ({k: v for k, v in SRUN_STEP.items() if k != "SLURM_STEP_NUM_TASKS"}, Launch("SLURM srun", 8, 5, 1)),
    # `srun -n 2` inside an `sbatch --ntasks=8` job: the step's count, not the job's
    (SRUN_STEP | {"SLURM_STEP_NUM_TASKS": "2", "SLURM_PROCID": "1"}, Launch("SLURM srun", 2, 1, 1)),
    # the batch script of `sbatch --ntasks=4`, no srun: one process, not four ranks
    ({"SLURM_JOB_ID": "77", "SLURM_NTASKS": "4", "SLURM_PROCID": "0", "SLURM_LOCALID": "0"}, None),
    # a one-task srun step, `mpiexec -n 1`: alone
    (SRUN_STEP | {"SLURM_STEP_NUM_TASKS": "1", "SLURM_NTASKS": "1", "SLURM_PROCID": "0"}, None),
    ({"PMI_SIZE": "1", "PMI_RANK": "0"}, None),
    # mpiexec started inside a SLURM step: the MPI launcher's world wins
    (SRUN_STEP | {"PMI_SIZE": "2", "PMI_RANK": "0", "MPI_LOCALRANKID": "0"},
     Launch("PMI (MPICH Hydra, Intel MPI)", 2, 0, 0)),
])
def test_detect(env, expected):
    assert detect(env) == expected


@pytest.mark.parametrize("env, message", [
    ({"PMI_SIZE": "two", "PMI_RANK": "0"}, "PMI_SIZE='two' is not an integer"),
    ({"OMPI_COMM_WORLD_SIZE": "2"}, "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not"),
    ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "2"}, "rank 2 of a world of size 2"),
    (SRUN_STEP | {"SLURM_PROCID": "-1"}, "SLURM_PROCID='-1' is negative"),
])
def test_detect_refuses_malformed_variables(env, message):
    with pytest.raises(GpucoreError, match=message):
        detect(env)


def test_detect_reads_the_process_environment(monkeypatch):
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_ID"):
        monkeypatch.delenv(name, raising=False)
    assert detect() is None
    monkeypatch.setenv("PMI_SIZE", "5")
    monkeypatch.setenv("PMI_RANK", "4")
    assert detect() == Launch("PMI (MPICH Hydra, Intel MPI)", 5, 4, None)


# ---------------------------------------------------------------------------------------------
# device choice by local rank


class _FakeCupy:
    """The two calls of CuPy that use_local_device makes, recording the device made current."""

    def __init__(self, devices: int):
        self.current = None
        fake = self
        self.cuda = SimpleNamespace(
            runtime=SimpleNamespace(getDeviceCount=lambda: devices),
            Device=lambda d: SimpleNamespace(use=lambda: setattr(fake, "current", d)),
        )


def test_local_rank_picks_its_device_modulo_the_visible_ones(monkeypatch):
    from gpucore import backend

    fake = _FakeCupy(4)
    monkeypatch.setattr(backend, "_cupy_probe", lambda: (fake, ""))
    for local, device in [(0, 0), (1, 1), (3, 3), (4, 0), (6, 2)]:
        assert backend.use_local_device(local) == device and fake.current == device
    one = _FakeCupy(1)  # srun --gpus-per-task=1: each rank sees only its own GPU, device 0
    monkeypatch.setattr(backend, "_cupy_probe", lambda: (one, ""))
    assert backend.use_local_device(3) == 0 and one.current == 0
    monkeypatch.setattr(backend, "_cupy_probe", lambda: (None, "no CuPy"))
    assert backend.use_local_device(2) is None


# ---------------------------------------------------------------------------------------------
# key partition and greedy packing


@pytest.mark.parametrize("total, size", [(t, s) for t in (0, 1, 2, 7, 10, 301) for s in (1, 2, 3, 4, 7)])
def test_partition_covers_the_keys_contiguously_and_evenly(total, size):
    ranges = [partition(total, size, r, start=1000) for r in range(size)]
    assert ranges[0][0] == 1000 and ranges[-1][1] == 1000 + total
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))  # contiguous, in rank order
    lengths = [e - b for b, e in ranges]
    assert max(lengths) - min(lengths) <= 1 and lengths == sorted(lengths, reverse=True)


def test_partition_refuses_bad_worlds():
    for args, message in [((5, 0, 0), "world size must be >= 1"), ((5, 2, 2), "rank 2 outside a world of 2"),
                          ((-1, 2, 0), "cannot partition -1 keys")]:
        with pytest.raises(GpucoreError, match=message):
            partition(*args)


def test_pack_greedy_is_list_scheduling_in_the_given_order():
    owner, loads = pack_greedy([5, 1, 1, 1, 3, 2, 0], 3)
    # loads (5,0,0) -> 5 on bin 0; 1 -> bin 1 (tie 0/0: lowest); 1 -> bin 2; 1 -> bin 1 (tie 1/1);
    # 3 -> bin 2 (load 1); 2 -> bin 1 (load 2); 0 -> bin 1 (tie 4/4: lowest)
    assert owner.tolist() == [0, 1, 2, 1, 2, 1, 1] and loads.tolist() == [5.0, 4.0, 4.0]


def test_pack_greedy_puts_each_item_on_a_least_loaded_bin():
    costs = np.random.default_rng(1).pareto(1.5, 500)
    owner, loads = pack_greedy(costs, 4)
    run = np.zeros(4)
    for c, b in zip(costs, owner):
        assert run[b] == run.min() and b == int(np.flatnonzero(run == run.min())[0])
        run[b] += c
    assert np.allclose(run, loads) and loads.sum() == pytest.approx(costs.sum())
    assert loads.max() - loads.min() <= costs.max()  # list scheduling's bound


@pytest.mark.parametrize("costs, message", [([1, -1], "finite and >= 0"), ([1, np.nan], "finite and >= 0"),
                                            ([[1, 2]], "one-dimensional")])
def test_pack_greedy_refuses_bad_costs(costs, message):
    with pytest.raises(GpucoreError, match=message):
        pack_greedy(costs, 2)


# ---------------------------------------------------------------------------------------------
# the single-process communicator and failure reporting


def test_single_comm_collectives_are_the_identity_without_aliasing():
    comm = SingleComm()
    a = np.arange(4, dtype=np.int64)
    assert (comm.rank, comm.size, comm.is_root, comm.kind) == (0, 1, True, "single")
    assert comm.bcast({"x": 1}) == {"x": 1} and comm.allgather(3) == [3]
    assert comm.bcast_array(a) is a
    for out in (comm.allreduce(a), comm.allreduce(a, "max"), comm.reduce(a), comm.allgather_array(a)):
        assert np.array_equal(out, a) and out is not a
    comm.barrier()


def test_single_comm_point_to_point_queues_copies_by_tag():
    import threading

    comm = SingleComm()
    payload = {"v": np.arange(3)}
    assert comm.iprobe() is None
    nbytes = comm.send(payload, 0, tag=5)
    payload["v"][0] = 99  # the message is a copy taken at send time
    comm.send("second", 0, tag=4)
    assert nbytes > 0 and comm.iprobe() == (0, 5) and comm.iprobe(0, 4) == (0, 4) and comm.iprobe(tag=6) is None
    got = comm.recv(tag=4)  # by tag, out of order
    assert (got.obj, got.source, got.tag) == ("second", 0, 4) and got.nbytes > 0
    got = comm.recv()
    assert got.tag == 5 and got.nbytes == nbytes and got.obj["v"].tolist() == [0, 1, 2]
    assert comm.iprobe() is None and comm.thread_level == "multiple"
    later = threading.Timer(0.05, lambda: comm.send("from a thread", 0, tag=1))
    later.start()
    assert comm.recv(0, 1).obj == "from a thread"  # recv waits for another thread's send
    later.join()


@pytest.mark.parametrize("call, message", [
    (lambda c: c.allreduce(np.zeros(2), "min"), "reduction op 'min'"),
    (lambda c: c.reduce(np.zeros(2, dtype=bool)), "cannot be reduced"),
    (lambda c: c.bcast(1, root=1), "root rank 1 outside the world of 1"),
    (lambda c: c.bcast_array(None), "the root passed no array"),
    (lambda c: c.send(1, 1), "destination rank 1 outside the world of 1"),
    (lambda c: c.send(1, 0, tag=-1), "message tag -1 outside"),
    (lambda c: c.iprobe(source=2), "source rank 2 outside"),
    (lambda c: c.recv(tag=40000), "message tag 40000 outside"),
])
def test_single_comm_refuses_what_mpi_would(call, message):
    with pytest.raises(GpucoreError, match=message):
        call(SingleComm())


def test_run_guarded_in_one_process(capsys):
    comm = SingleComm()
    assert run_guarded(comm, lambda: 0) == 0

    def user_error():
        raise GpucoreError("graph.gcsr: bad header")

    assert run_guarded(comm, user_error) == 2
    assert capsys.readouterr().err == "gpucore: error: graph.gcsr: bad header\n"  # no [rank r] alone

    def interrupted():
        raise KeyboardInterrupt

    assert run_guarded(comm, interrupted) == 130
    with pytest.raises(ZeroDivisionError):  # a bug keeps its traceback
        run_guarded(comm, lambda: 1 // 0)


# ---------------------------------------------------------------------------------------------
# distributed greedy max-cover (one rank here; 1/2/3 ranks in test_dist_mpi.py)


def synthetic_sets(universe: int, sets: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR sets (offsets, members) of 1..6 distinct elements drawn with skewed popularity."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, universe + 1) ** 0.8
    sizes = rng.integers(1, 7, size=sets)
    members = [rng.choice(universe, size=s, replace=False, p=weights / weights.sum()) for s in sizes]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return offsets, np.concatenate(members).astype(np.int64)


class ArrayCover:
    """A ``LocalCover`` over CSR sets in NumPy (the shape the IM selectors expose)."""

    def __init__(self, universe: int, offsets: np.ndarray, nodes: np.ndarray):
        self.offsets, self.nodes = offsets, nodes
        self.covered = np.zeros(len(offsets) - 1, dtype=bool)
        self.live = np.bincount(nodes, minlength=universe).astype(np.int64)
        self.holders = [[] for _ in range(universe)]
        for i in range(len(offsets) - 1):
            for e in nodes[offsets[i] : offsets[i + 1]]:
                self.holders[e].append(i)

    def counts(self):
        return self.live

    def cover(self, element: int) -> int:
        newly = [i for i in self.holders[element] if not self.covered[i]]
        for i in newly:
            self.covered[i] = True
            np.subtract.at(self.live, self.nodes[self.offsets[i] : self.offsets[i + 1]], 1)
        return len(newly)


def brute_greedy(universe, offsets, nodes, picks, blocked_after=None):
    """Sequential greedy from scratch each pick: argmax of uncovered-set counts, ties to the lowest id."""
    sets = [set(nodes[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(offsets) - 1)]
    alive, chosen, gains, excluded = list(range(len(sets))), [], [], set()
    for _ in range(picks):
        counts = [-1 if e in excluded else sum(e in sets[i] for i in alive) for e in range(universe)]
        best = max(range(universe), key=lambda e: (counts[e], -e))
        chosen.append(best)
        gains.append(counts[best])
        alive = [i for i in alive if best not in sets[i]]
        excluded |= {best} | (blocked_after(chosen) if blocked_after else set())
    return chosen, gains


def test_greedy_cover_equals_the_brute_force_greedy():
    offsets, nodes = synthetic_sets(universe=30, sets=200, seed=2)
    res = greedy_max_cover(ArrayCover(30, offsets, nodes), 10, 200, SingleComm())
    assert (res.chosen, res.gains) == brute_greedy(30, offsets, nodes, 10)
    assert res.theta == 200 and res.covered == sum(res.gains) and res.fraction == res.covered / 200


def test_greedy_cover_first_pick_is_the_best_single_element():
    offsets, nodes = synthetic_sets(universe=8, sets=40, seed=9)
    res = greedy_max_cover(ArrayCover(8, offsets, nodes), 1, 40, SingleComm())
    cover = [sum(e in nodes[offsets[i] : offsets[i + 1]] for i in range(40)) for e in range(8)]
    assert res.gains == [max(cover)] and res.chosen == [cover.index(max(cover))]


def test_greedy_cover_keeps_picking_after_everything_is_covered():
    offsets, nodes = np.array([0, 1, 2]), np.array([3, 3])
    res = greedy_max_cover(ArrayCover(5, offsets, nodes), 4, 2, SingleComm())
    assert res.chosen == [3, 0, 1, 2] and res.gains == [2, 0, 0, 0] and res.fraction == 1.0


def test_greedy_cover_blocks_a_full_round_like_mrim():
    """Universe = n x rounds, k picks per round: a round holding k seeds is closed (MRIM's rule)."""
    n, rounds, k = 10, 3, 2
    offsets, nodes = synthetic_sets(universe=n * rounds, sets=150, seed=4)

    def full_round(chosen):
        t = chosen[-1] // n
        return slice(t * n, (t + 1) * n) if sum(c // n == t for c in chosen) == k else None

    def full_round_ids(chosen):
        block = full_round(chosen)
        return set(range(block.start, block.stop)) if block else set()

    res = greedy_max_cover(ArrayCover(n * rounds, offsets, nodes), k * rounds, 150, SingleComm(), block=full_round)
    assert (res.chosen, res.gains) == brute_greedy(n * rounds, offsets, nodes, k * rounds, full_round_ids)
    assert sorted(c // n for c in res.chosen) == [0, 0, 1, 1, 2, 2]


def test_greedy_cover_refusals():
    offsets, nodes = np.array([0, 1]), np.array([0])
    with pytest.raises(GpucoreError, match="every element is excluded after 2 picks"):
        greedy_max_cover(ArrayCover(2, offsets, nodes), 3, 1, SingleComm())

    class Unsigned(ArrayCover):
        def counts(self):
            return self.live.astype(np.uint32)

    with pytest.raises(GpucoreError, match="signed integers"):
        greedy_max_cover(Unsigned(2, offsets, nodes), 1, 1, SingleComm())

    class Liar(ArrayCover):
        def cover(self, element):
            return super().cover(element) + 1

    with pytest.raises(RuntimeError, match="counts\\(\\) and cover\\(\\) disagree"):
        greedy_max_cover(Liar(2, offsets, nodes), 1, 1, SingleComm())


def test_importing_gpucore_dist_does_not_import_mpi4py():
    import subprocess

    code = "import gpucore.cli, gpucore.dist as d, sys; d.current(); print('mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert out.stdout.strip() == "False"


def test_partition_of_sets_gives_every_rank_its_share():
    """What the MPI test relies on: slices of the CSR sets by partition rebuild the whole."""
    offsets, nodes = synthetic_sets(universe=12, sets=31, seed=1)
    for size in (1, 2, 3):
        pieces = []
        for r in range(size):
            b, e = partition(31, size, r)
            pieces.append(nodes[offsets[b] : offsets[e]])
        assert np.array_equal(np.concatenate(pieces), nodes)

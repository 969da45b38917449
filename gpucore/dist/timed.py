"""The communication of a solve as its own phase: seconds, collective calls and payload bytes.

``TimedComm(comm, phases)`` is a ``Communicator`` that forwards every call to ``comm`` and runs each
collective inside ``phases.phase("communication")``; ``calls`` and ``bytes`` count the collectives
and the bytes of the arrays each rank passed in (its payload; what crosses the wire depends on the
algorithm: a ring all-reduce moves about 2 (p - 1) / p times the payload per rank). Python objects
(``bcast``, ``allgather``) are counted as calls, not bytes. Point-to-point messages (``send``,
``recv``) count in ``messages`` and in ``bytes`` with their pickled size, sent or received; a
``recv`` is timed while it waits, an ``iprobe`` is not timed.

A collective is called from inside another phase (the greedy's all-reduce inside the selection),
so its seconds must not be counted twice: ``NestedPhases`` is a ``gpucore.timing.Phases`` whose
nested phase's seconds are taken out of the phase around it. ``sum(seconds.values())`` then stays
the wall time of the outermost phases, and ``seconds["communication"]`` is the time spent in
collectives (including the wait for the slowest rank, which a collective also measures). With
``sync`` (the backend's ``synchronize``) the device is waited for before the clock starts, so the
kernels launched before a collective count for the phase that launched them.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from gpucore.dist.comm import Communicator
from gpucore.timing import Phases

#: the phase name of the collectives
COMMUNICATION = "communication"


class NestedPhases(Phases):
    """``Phases`` where a phase entered inside another is not also counted in the outer one."""

    def __init__(self, names=(), sync=None):
        super().__init__(names, sync)
        self._inner: list[float] = []  # seconds of the nested phases of each open phase

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self._sync is not None:
            self._sync()
        start = time.perf_counter()
        self._inner.append(0.0)
        try:
            yield
        finally:
            if self._sync is not None:
                self._sync()
            elapsed = time.perf_counter() - start
            inner = self._inner.pop()
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed - inner
            if self._inner:
                self._inner[-1] += elapsed


class TimedComm(Communicator):
    """``comm`` with its collectives timed as the ``communication`` phase of ``phases``."""

    def __init__(self, comm: Communicator, phases: Phases):
        self.comm = comm
        self.phases = phases
        self.kind, self.rank, self.size = comm.kind, comm.rank, comm.size
        self.thread_level = comm.thread_level
        self.calls = 0
        self.bytes = 0
        self.messages = 0

    @contextmanager
    def _timed(self, array=None) -> Iterator[None]:
        self.calls += 1
        self.bytes += int(array.nbytes) if array is not None else 0
        with self.phases.phase(COMMUNICATION):
            yield

    def barrier(self) -> None:
        with self._timed():
            self.comm.barrier()

    def bcast(self, obj, root: int = 0):
        with self._timed():
            return self.comm.bcast(obj, root)

    def bcast_array(self, array, root: int = 0):
        with self._timed(array if self.rank == root else None):
            return self.comm.bcast_array(array, root)

    def allreduce(self, array, op: str = "sum"):
        with self._timed(array):
            return self.comm.allreduce(array, op)

    def reduce(self, array, op: str = "sum", root: int = 0):
        with self._timed(array):
            return self.comm.reduce(array, op, root)

    def allgather(self, obj) -> list:
        with self._timed():
            return self.comm.allgather(obj)

    def allgather_array(self, array):
        with self._timed(array):
            return self.comm.allgather_array(array)

    def send(self, obj, dest: int, tag: int = 0) -> int:
        with self.phases.phase(COMMUNICATION):
            nbytes = self.comm.send(obj, dest, tag)
        self.messages += 1
        self.bytes += nbytes
        return nbytes

    def recv(self, source: int | None = None, tag: int | None = None):
        with self.phases.phase(COMMUNICATION):
            got = self.comm.recv(source, tag)
        self.messages += 1
        self.bytes += got.nbytes
        return got

    def iprobe(self, source: int | None = None, tag: int | None = None):
        return self.comm.iprobe(source, tag)

    def abort(self, code: int = 1):
        self.comm.abort(code)

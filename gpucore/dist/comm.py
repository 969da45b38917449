"""The communicator contract, and its single-process implementation.

Every collective is called by EVERY rank of the communicator, in the same order, with arrays of
the same shape and dtype (SPMD); a rank that skips one leaves the others waiting (a failing rank
ends them all instead: ``gpucore.dist.failure``). Arrays are NumPy or CuPy; a result has the kind
(host or device) of the array passed in, and is a new array unless stated otherwise.

- ``rank``, ``size``, ``is_root`` (rank 0), ``kind`` ("single", "mpi", "nccl")
- ``barrier()``
- ``bcast(obj, root=0)``: a picklable Python object from ``root`` to every rank
- ``bcast_array(array, root=0)``: ``root``'s array to every rank (the root gets its own array
  back); the others pass None (the result then has root's shape, dtype and kind) or a buffer of
  that shape and dtype, filled and returned
- ``allreduce(array, op="sum"|"max")``: the element-wise reduction over ranks, on every rank
- ``reduce(array, op, root=0)``: the same on ``root``; None on the other ranks
- ``allgather(obj)``: the list of every rank's object, in rank order
- ``allgather_array(array)``: every rank's array concatenated along axis 0 in rank order (the
  lengths along axis 0 may differ; the other axes and the dtype may not)
- ``abort(code)``: end every rank of the world now with exit status ``code`` (never returns)

Point-to-point (not collective: between two ranks, any order; for a rank that serves requests
while the others work, as the work-stealing table of ``gpucore.dist.service``):

- ``send(obj, dest, tag=0) -> int``: a picklable object to rank ``dest``; returns its pickled size in
  bytes. It may block until ``dest`` receives it (large messages), so a rank never sends to itself
  under MPI (``SingleComm`` queues it)
- ``recv(source=None, tag=None) -> Received``: the oldest message from ``source`` with ``tag`` (None:
  any), waited for: ``Received(obj, source, tag, nbytes)``
- ``iprobe(source=None, tag=None)``: ``(source, tag)`` of a message waiting to be received, else None
- ``thread_level``: "single", "funneled", "serialized" or "multiple": what MPI lets threads do
  (a serving thread needs "serialized" at least: two threads never in MPI at once)

Sums over ranks are exact for integers; for floating point, the order of the additions depends on
the number of ranks, so quantities that must not depend on it (the counts of the solvers) are
reduced as integers.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from typing import NamedTuple

import numpy as np

from gpucore.errors import GpucoreError

#: reduction operations every implementation supports
OPS = ("sum", "max")
#: MPI's thread support levels, weakest first
THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")


class Received(NamedTuple):
    """A point-to-point message: the object, who sent it, its tag, its pickled size in bytes."""

    obj: object
    source: int
    tag: int
    nbytes: int


def check_op(op: str) -> str:
    if op not in OPS:
        raise GpucoreError(f"reduction op {op!r}: choose one of {', '.join(OPS)}")
    return op


def check_numeric(array, what: str) -> None:
    """Reductions take integer or floating-point arrays only."""
    if np.dtype(array.dtype).kind not in "iuf":
        raise GpucoreError(f"{what}: arrays of dtype {array.dtype} cannot be reduced (integers or floats only)")


def is_device_array(array) -> bool:
    """True for a CuPy array (checked without importing CuPy)."""
    return type(array).__module__.split(".")[0] == "cupy"


class Communicator:
    """The interface (see the module docstring); ``SingleComm``, ``MPIComm``, ``NCCLComm`` implement it."""

    kind = "abstract"
    rank = 0
    size = 1

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        raise NotImplementedError

    def bcast(self, obj, root: int = 0):
        raise NotImplementedError

    def bcast_array(self, array, root: int = 0):
        raise NotImplementedError

    def allreduce(self, array, op: str = "sum"):
        raise NotImplementedError

    def reduce(self, array, op: str = "sum", root: int = 0):
        raise NotImplementedError

    def allgather(self, obj) -> list:
        raise NotImplementedError

    def allgather_array(self, array):
        raise NotImplementedError

    def abort(self, code: int = 1):
        raise NotImplementedError

    thread_level = "single"

    def send(self, obj, dest: int, tag: int = 0) -> int:
        raise NotImplementedError

    def recv(self, source: int | None = None, tag: int | None = None) -> Received:
        raise NotImplementedError

    def iprobe(self, source: int | None = None, tag: int | None = None) -> tuple[int, int] | None:
        raise NotImplementedError


class SingleComm(Communicator):
    """One process, no MPI: every collective is the identity (a copy, so results never alias);
    point-to-point messages go to the process itself, queued (pickled, so a sent object is a copy),
    and ``recv`` waits for another thread to send when none is queued."""

    kind = "single"
    thread_level = "multiple"

    def __init__(self):
        self._queue: list[tuple[int, bytes]] = []
        self._arrived = threading.Condition()

    def send(self, obj, dest: int, tag: int = 0) -> int:
        check_root(dest, 1, "destination rank")
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        with self._arrived:
            self._queue.append((check_tag(tag), data))
            self._arrived.notify_all()
        return len(data)

    def _match(self, source, tag) -> int | None:
        if source is not None:
            check_root(source, 1, "source rank")
        tag = None if tag is None else check_tag(tag)
        return next((i for i, (t, _data) in enumerate(self._queue) if tag is None or t == tag), None)

    def recv(self, source: int | None = None, tag: int | None = None) -> Received:
        with self._arrived:
            while (i := self._match(source, tag)) is None:
                self._arrived.wait()
            t, data = self._queue.pop(i)
        return Received(pickle.loads(data), 0, t, len(data))

    def iprobe(self, source: int | None = None, tag: int | None = None) -> tuple[int, int] | None:
        with self._arrived:
            i = self._match(source, tag)
            return None if i is None else (0, self._queue[i][0])

    def barrier(self) -> None:
        pass

    def bcast(self, obj, root: int = 0):
        check_root(root, 1)
        return obj

    def bcast_array(self, array, root: int = 0):
        check_root(root, 1)
        if array is None:
            raise GpucoreError("bcast_array: the root passed no array")
        return array

    def allreduce(self, array, op: str = "sum"):
        check_numeric(array, "allreduce")
        check_op(op)
        return array.copy()

    def reduce(self, array, op: str = "sum", root: int = 0):
        check_numeric(array, "reduce")
        check_op(op)
        check_root(root, 1)
        return array.copy()

    def allgather(self, obj) -> list:
        return [obj]

    def allgather_array(self, array):
        return array.copy()

    def abort(self, code: int = 1):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))


def check_root(root: int, size: int, what: str = "root rank") -> None:
    if isinstance(root, bool) or not 0 <= int(root) < size:
        raise GpucoreError(f"{what} {root} outside the world of {size} rank(s)")


def check_tag(tag: int) -> int:
    """Message tags are integers in [0, 32767] (the least upper bound MPI guarantees)."""
    if isinstance(tag, bool) or not 0 <= int(tag) <= 32767:
        raise GpucoreError(f"message tag {tag!r} outside [0, 32767]")
    return int(tag)


def as_host(array) -> np.ndarray:
    """A C-contiguous NumPy array holding ``array`` (a device array is copied to the host)."""
    if is_device_array(array):
        array = array.get()
    return np.ascontiguousarray(array)

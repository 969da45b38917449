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

Sums over ranks are exact for integers; for floating point, the order of the additions depends on
the number of ranks, so quantities that must not depend on it (the counts of the solvers) are
reduced as integers.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from gpucore.errors import GpucoreError

#: reduction operations every implementation supports
OPS = ("sum", "max")


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


class SingleComm(Communicator):
    """One process, no MPI: every collective is the identity (a copy, so results never alias)."""

    kind = "single"

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


def check_root(root: int, size: int) -> None:
    if not 0 <= int(root) < size:
        raise GpucoreError(f"root rank {root} outside the world of {size} rank(s)")


def as_host(array) -> np.ndarray:
    """A C-contiguous NumPy array holding ``array`` (a device array is copied to the host)."""
    if is_device_array(array):
        array = array.get()
    return np.ascontiguousarray(array)

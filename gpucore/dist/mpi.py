"""The communicator over MPI ranks (mpi4py), for host data.

Python objects travel pickled (``bcast``, ``allgather``, ``send``/``recv``); NumPy arrays travel as
buffers, without pickling. ``recv`` waits by polling (a matched probe, then a sleep that grows from
``POLL_MIN`` to ``POLL_MAX`` seconds) instead of MPI's blocking receive, which spins: a rank that
waits for its next piece of work leaves its core to the ranks that compute. A CuPy array is staged
through the host (copied down, communicated, copied back up): correct anywhere, and the fallback
where NCCL is absent; ``NCCLComm`` keeps device arrays on the device. mpi4py is imported here only,
when a launcher started more than one rank.
"""

from __future__ import annotations

import os
import pickle
import sys
import time

import numpy as np

from gpucore.dist.comm import (
    THREAD_LEVELS,
    Communicator,
    Received,
    as_host,
    check_numeric,
    check_op,
    check_root,
    check_tag,
    is_device_array,
)
from gpucore.errors import GpucoreError

#: first and longest sleep (seconds) between two probes of a waiting ``recv``
POLL_MIN = 20e-6
POLL_MAX = 500e-6


def _mpi():
    from mpi4py import MPI

    return MPI


def _to_kind(host: np.ndarray, like):
    """``host`` as the kind of ``like``: a CuPy array when ``like`` is one, else ``host`` itself."""
    if is_device_array(like):
        import cupy

        return cupy.asarray(host)
    return host


class MPIComm(Communicator):
    """``Communicator`` over an mpi4py communicator (default: ``MPI.COMM_WORLD``)."""

    kind = "mpi"

    def __init__(self, comm=None):
        MPI = _mpi()
        self._MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self._ops = {"sum": MPI.SUM, "max": MPI.MAX}
        levels = (MPI.THREAD_SINGLE, MPI.THREAD_FUNNELED, MPI.THREAD_SERIALIZED, MPI.THREAD_MULTIPLE)
        self.thread_level = THREAD_LEVELS[levels.index(MPI.Query_thread())]

    def node_rank(self) -> int:
        """This rank's index among the ranks of its node (MPI's shared-memory split; collective)."""
        node = self.comm.Split_type(self._MPI.COMM_TYPE_SHARED, key=self.rank)
        try:
            return node.Get_rank()
        finally:
            node.Free()

    # ---- host objects

    def barrier(self) -> None:
        self.comm.Barrier()

    def bcast(self, obj, root: int = 0):
        check_root(root, self.size)
        return self.comm.bcast(obj, root=root)

    def allgather(self, obj) -> list:
        return self.comm.allgather(obj)

    # ---- arrays

    def _meta(self, array, root: int):
        """Root's (shape, dtype, on device) on every rank."""
        meta = None
        if self.rank == root:
            if array is None:
                raise GpucoreError("bcast_array: the root passed no array")
            meta = (tuple(array.shape), np.dtype(array.dtype).str, is_device_array(array))
        shape, dtype, device = self.comm.bcast(meta, root=root)
        return shape, np.dtype(dtype), device

    def _receiver(self, array, shape, dtype, device):
        """The buffer a non-root rank fills: the one it passed (checked), or a new one."""
        if array is None:
            if device:
                import cupy

                return cupy.empty(shape, dtype=dtype)
            return np.empty(shape, dtype=dtype)
        if tuple(array.shape) != shape or np.dtype(array.dtype) != dtype:
            raise GpucoreError(f"bcast_array: rank {self.rank} passed a {array.dtype}{list(array.shape)} buffer, "
                               f"the root sends {dtype}{list(shape)}")
        return array

    def bcast_array(self, array, root: int = 0):
        check_root(root, self.size)
        return self._bcast_host(array, root, *self._meta(array, root))

    def _bcast_host(self, array, root: int, shape, dtype, device):
        """``bcast_array`` over MPI (a device array staged through the host)."""
        if self.rank == root:
            self.comm.Bcast(as_host(array), root=root)
            return array
        out = self._receiver(array, shape, dtype, device)
        host = np.empty(shape, dtype=dtype)
        self.comm.Bcast(host, root=root)
        if is_device_array(out):
            out.set(host)
        else:
            out[...] = host
        return out

    def allreduce(self, array, op: str = "sum"):
        check_numeric(array, "allreduce")
        send = as_host(array)
        recv = np.empty_like(send)
        self.comm.Allreduce(send, recv, op=self._ops[check_op(op)])
        return _to_kind(recv, array)

    def reduce(self, array, op: str = "sum", root: int = 0):
        check_numeric(array, "reduce")
        check_root(root, self.size)
        send = as_host(array)
        recv = np.empty_like(send) if self.rank == root else None
        self.comm.Reduce(send, recv, op=self._ops[check_op(op)], root=root)
        return None if recv is None else _to_kind(recv, array)

    def lengths(self, array) -> list[int]:
        """Every rank's length of ``array`` along axis 0 (the other axes and the dtype must agree)."""
        if array.ndim == 0:
            raise GpucoreError("allgather_array: needs an array with at least one axis")
        shapes = self.comm.allgather((tuple(array.shape[1:]), np.dtype(array.dtype).str, int(array.shape[0])))
        if any(shape[:2] != shapes[0][:2] for shape in shapes):
            raise GpucoreError("allgather_array: ranks passed arrays of different trailing shapes or dtypes "
                               f"{[shape[:2] for shape in shapes]}")
        return [shape[2] for shape in shapes]

    def allgather_array(self, array):
        lengths = self.lengths(array)
        send = as_host(array)
        row = int(np.prod(send.shape[1:], dtype=np.int64))
        recv = np.empty((sum(lengths),) + send.shape[1:], dtype=send.dtype)
        self.comm.Allgatherv(send, [recv, [n * row for n in lengths]])
        return _to_kind(recv, array)

    # ---- point to point

    def _envelope(self, source, tag) -> tuple[int, int]:
        MPI = self._MPI
        if source is not None:
            check_root(source, self.size, "source rank")
        return (MPI.ANY_SOURCE if source is None else int(source),
                MPI.ANY_TAG if tag is None else check_tag(tag))

    def send(self, obj, dest: int, tag: int = 0) -> int:
        check_root(dest, self.size, "destination rank")
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        self.comm.Send([data, self._MPI.BYTE], dest=int(dest), tag=check_tag(tag))
        return len(data)

    def iprobe(self, source: int | None = None, tag: int | None = None) -> tuple[int, int] | None:
        status = self._MPI.Status()
        if not self.comm.Iprobe(*self._envelope(source, tag), status=status):
            return None
        return status.Get_source(), status.Get_tag()

    def recv(self, source: int | None = None, tag: int | None = None) -> Received:
        """A matched probe (``Improbe``: no other thread can take the message in between), polled."""
        source, tag = self._envelope(source, tag)
        status = self._MPI.Status()
        delay = POLL_MIN
        while (message := self.comm.Improbe(source, tag, status)) is None:
            time.sleep(delay)
            delay = min(2 * delay, POLL_MAX)
        data = bytearray(status.Get_count(self._MPI.BYTE))
        message.Recv([data, self._MPI.BYTE])
        return Received(pickle.loads(data), status.Get_source(), status.Get_tag(), len(data))

    def abort(self, code: int = 1):
        sys.stdout.flush()
        sys.stderr.flush()
        self.comm.Abort(int(code))
        os._exit(int(code))  # not reached: Abort ends the process

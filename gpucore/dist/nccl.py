"""The communicator for device buffers: NCCL through ``cupy.cuda.nccl``, host data over MPI.

One rank per GPU (the device was made current by ``gpucore.dist.runtime.init`` before any CuPy
work). CuPy arrays are reduced, broadcast and gathered by NCCL on the current stream, so they never
leave the GPUs; NumPy arrays and Python objects go over MPI (``MPIComm``). The NCCL communicator
is created at the first collective on a device array, from a unique id that rank 0 draws and
broadcasts over MPI: every rank reaches that collective, as SPMD code does, so creation is
collective too, and a run that never communicates device arrays never starts NCCL.

NCCL calls are asynchronous on the stream: a result is ready for the kernels that follow on that
stream, and a host read of it (``.get()``, ``int(x)``) waits for it.
"""

from __future__ import annotations

import numpy as np

from gpucore.dist.comm import check_numeric, check_op, check_root, is_device_array
from gpucore.dist.mpi import MPIComm
from gpucore.errors import GpucoreError

#: NumPy dtype name -> name of the NCCL data type constant in ``cupy.cuda.nccl``
_NCCL_TYPES = {
    "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "uint32": "NCCL_UINT32",
    "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
    "float64": "NCCL_FLOAT64",
}
_NCCL_OPS = {"sum": "NCCL_SUM", "max": "NCCL_MAX"}
_INT_MAX = 2**31 - 1  # NCCL's broadcast takes a C int count


def nccl_available() -> bool:
    """True when CuPy was built with NCCL."""
    try:
        from cupy.cuda import nccl
    except Exception:
        return False
    return bool(getattr(nccl, "available", False))


class NCCLComm(MPIComm):
    """``MPIComm`` whose collectives on CuPy arrays run on NCCL."""

    kind = "nccl"

    def __init__(self, comm=None):
        super().__init__(comm)
        from cupy.cuda import nccl

        self._nccl = nccl
        self._device_comm = None

    def device_comm(self):
        """The NCCL communicator (created on first use; collective)."""
        if self._device_comm is None:
            uid = self._nccl.get_unique_id() if self.rank == 0 else None
            uid = self.comm.bcast(uid, root=0)
            self._device_comm = self._nccl.NcclCommunicator(self.size, uid, self.rank)
        return self._device_comm

    def _type(self, array):
        name = _NCCL_TYPES.get(np.dtype(array.dtype).name)
        if name is None:
            raise GpucoreError(f"NCCL cannot communicate arrays of dtype {array.dtype}")
        return getattr(self._nccl, name)

    @staticmethod
    def _stream() -> int:
        import cupy

        return cupy.cuda.get_current_stream().ptr

    def bcast_array(self, array, root: int = 0):
        check_root(root, self.size)
        shape, dtype, device = self._meta(array, root)
        if not device:
            return self._bcast_host(array, root, shape, dtype, device)
        import cupy

        if self.rank == root:
            buf = cupy.ascontiguousarray(array)
        else:
            buf = self._receiver(array, shape, dtype, device)
            if not is_device_array(buf) or not buf.flags.c_contiguous:
                raise GpucoreError(f"bcast_array: rank {self.rank} must pass None or a C-contiguous CuPy buffer "
                                   "when the root sends a device array")
        raw = buf.reshape(-1).view(np.uint8)  # as bytes: any dtype
        if raw.size > _INT_MAX:
            raise GpucoreError(f"bcast_array: {raw.size} bytes exceed NCCL's broadcast count of 2^31-1")
        if raw.size:
            self.device_comm().bcast(raw.data.ptr, raw.size, self._nccl.NCCL_UINT8, root, self._stream())
        if self.rank == root and buf is not array:
            return array
        return buf

    def allreduce(self, array, op: str = "sum"):
        if not is_device_array(array):
            return super().allreduce(array, op)
        check_numeric(array, "allreduce")
        import cupy

        send = cupy.ascontiguousarray(array)
        recv = cupy.empty_like(send)
        self.device_comm().allReduce(send.data.ptr, recv.data.ptr, send.size, self._type(send),
                                     getattr(self._nccl, _NCCL_OPS[check_op(op)]), self._stream())
        return recv

    def reduce(self, array, op: str = "sum", root: int = 0):
        if not is_device_array(array):
            return super().reduce(array, op, root)
        check_numeric(array, "reduce")
        check_root(root, self.size)
        import cupy

        send = cupy.ascontiguousarray(array)
        recv = cupy.empty_like(send) if self.rank == root else None
        target = send if recv is None else recv  # NCCL ignores the receive buffer off the root
        self.device_comm().reduce(send.data.ptr, target.data.ptr, send.size, self._type(send),
                                  getattr(self._nccl, _NCCL_OPS[check_op(op)]), root, self._stream())
        return recv

    def allgather_array(self, array):
        if not is_device_array(array):
            return super().allgather_array(array)
        import cupy

        lengths = self.lengths(array)
        send = cupy.zeros((max(lengths),) + tuple(array.shape[1:]), dtype=array.dtype)
        send[: array.shape[0]] = array
        recv = cupy.empty((self.size,) + send.shape, dtype=array.dtype)
        if send.size:  # as bytes: any dtype
            self.device_comm().allGather(send.data.ptr, recv.data.ptr, send.nbytes, self._nccl.NCCL_UINT8,
                                         self._stream())
        return cupy.concatenate([recv[r, : lengths[r]] for r in range(self.size)], axis=0)

"""This process's communicator: ``init()`` builds it once, ``current()`` returns it.

- No launcher (or a launcher that started one rank): ``SingleComm``; mpi4py is never imported.
- Started by ``mpiexec``/``mpirun``/``srun`` with more ranks (``gpucore.dist.launch.detect``):
  mpi4py initialises MPI; the world size MPI reports must equal the launcher's (else the MPI that
  mpi4py is built on is not the launcher's, and every rank would run alone: an error). Then one
  rank per GPU: the device ``local rank % visible devices`` is made current before any CuPy work
  (``gpucore.backend.use_local_device``), the local rank taken from the launcher's variables or,
  where it sets none, from MPI's shared-memory split. With a GPU and NCCL in CuPy the
  communicator is ``NCCLComm`` (device arrays over NCCL), else ``MPIComm`` (device arrays staged
  through the host). ``GPUCORE_NCCL=0`` forces ``MPIComm``.

The ``gpucore`` command calls ``init()`` first thing; a script run under ``mpiexec`` should too,
before it touches CuPy, so that its rank is on its own GPU.
"""

from __future__ import annotations

import os

from gpucore.dist.comm import Communicator, SingleComm
from gpucore.dist.launch import Launch, detect
from gpucore.errors import GpucoreError

_CURRENT: Communicator | None = None


def current() -> Communicator:
    """The communicator of this process (``init()`` on first use)."""
    return _CURRENT if _CURRENT is not None else init()


def init() -> Communicator:
    """Build this process's communicator (once; later calls return the same one)."""
    global _CURRENT
    if _CURRENT is None:
        launch = detect()
        _CURRENT = SingleComm() if launch is None else _mpi_world(launch)
    return _CURRENT


def _mpi_world(launch: Launch) -> Communicator:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise GpucoreError(f"started by {launch.launcher} as rank {launch.rank} of {launch.size}, but mpi4py is "
                           "not installed (pip install 'gpucore[mpi]')") from None
    from gpucore.backend import use_local_device
    from gpucore.dist.mpi import MPIComm

    comm = MPIComm()
    if comm.size != launch.size or comm.rank != launch.rank:
        raise GpucoreError(f"{launch.launcher} started rank {launch.rank} of {launch.size}, but MPI sees rank "
                           f"{comm.rank} of {comm.size}: mpi4py is built on another MPI than this launcher "
                           "(use the mpiexec of mpi4py's MPI: python -c 'import mpi4py; print(mpi4py.get_config())')")
    local_rank = launch.local_rank if launch.local_rank is not None else comm.node_rank()
    device = use_local_device(local_rank)
    if device is not None and os.environ.get("GPUCORE_NCCL", "1") != "0":
        from gpucore.dist.nccl import NCCLComm, nccl_available

        if nccl_available():
            return NCCLComm(comm.comm)
    return comm

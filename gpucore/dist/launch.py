"""Which launcher started this process, read from its environment (no MPI import).

A process started by ``mpiexec``/``mpirun`` (Open MPI, MPICH's Hydra, Intel MPI, MVAPICH) or by
``srun`` carries its world size, its rank and its rank on the node in environment variables.
``detect(environ)`` turns them into a ``Launch``, or ``None`` for a plain process (no launcher, or
a launcher that started one rank). It is a pure function of the mapping, so the launchers that
cannot run here (SLURM) are tested by emulating their variables.

Variables, first match wins (MPI launchers before SLURM, so an ``mpiexec`` run inside a SLURM job
step reports the ``mpiexec`` world):

| launcher | size | rank | local rank |
|---|---|---|---|
| Open MPI | ``OMPI_COMM_WORLD_SIZE`` | ``OMPI_COMM_WORLD_RANK`` | ``OMPI_COMM_WORLD_LOCAL_RANK`` |
| MPICH Hydra, Intel MPI, ``srun --mpi=pmi2`` | ``PMI_SIZE`` | ``PMI_RANK`` | ``MPI_LOCALRANKID`` or ``PMI_LOCAL_RANK`` |
| MVAPICH | ``MV2_COMM_WORLD_SIZE`` | ``MV2_COMM_WORLD_RANK`` | ``MV2_COMM_WORLD_LOCAL_RANK`` |
| SLURM ``srun`` | ``SLURM_STEP_NUM_TASKS`` (else ``SLURM_NTASKS``) | ``SLURM_PROCID`` | ``SLURM_LOCALID`` |

SLURM counts only inside a job *step* (``SLURM_STEP_ID`` set, which ``srun`` does): a batch
script of an ``sbatch --ntasks=4`` job also carries ``SLURM_NTASKS=4``, but a command run there
without ``srun`` is one process, not four ranks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from gpucore.errors import GpucoreError


@dataclass(frozen=True)
class Launch:
    """What the launcher says: ``size`` ranks, this one is ``rank``; ``local_rank`` is its index
    among the ranks of its node (None when the launcher does not say)."""

    launcher: str
    size: int
    rank: int
    local_rank: int | None


#: (launcher, size variables, rank variable, local-rank variables)
_MPI_LAUNCHERS = (
    ("Open MPI", ("OMPI_COMM_WORLD_SIZE",), "OMPI_COMM_WORLD_RANK", ("OMPI_COMM_WORLD_LOCAL_RANK",)),
    ("PMI (MPICH Hydra, Intel MPI)", ("PMI_SIZE",), "PMI_RANK", ("MPI_LOCALRANKID", "PMI_LOCAL_RANK")),
    ("MVAPICH", ("MV2_COMM_WORLD_SIZE",), "MV2_COMM_WORLD_RANK", ("MV2_COMM_WORLD_LOCAL_RANK",)),
)
_SLURM = ("SLURM srun", ("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"), "SLURM_PROCID", ("SLURM_LOCALID",))


def _int(environ: Mapping[str, str], name: str, launcher: str) -> int:
    text = environ[name]
    try:
        value = int(text)
    except ValueError:
        raise GpucoreError(f"{launcher}: environment variable {name}={text!r} is not an integer") from None
    if value < 0:
        raise GpucoreError(f"{launcher}: environment variable {name}={text!r} is negative")
    return value


def _first(environ: Mapping[str, str], names) -> str | None:
    return next((name for name in names if name in environ), None)


def _read(environ: Mapping[str, str], launcher: str, size_names, rank_name, local_names) -> Launch | None:
    size_name = _first(environ, size_names)
    if size_name is None:
        return None
    size = _int(environ, size_name, launcher)
    if rank_name not in environ:
        raise GpucoreError(f"{launcher}: {size_name} is set but {rank_name} is not")
    rank = _int(environ, rank_name, launcher)
    if size < 1 or rank >= size:
        raise GpucoreError(f"{launcher}: rank {rank} of a world of size {size} ({rank_name}, {size_name})")
    local_name = _first(environ, local_names)
    local = _int(environ, local_name, launcher) if local_name else None
    return Launch(launcher, size, rank, local)


def detect(environ: Mapping[str, str] | None = None) -> Launch | None:
    """The launcher's world as this process sees it, or None when it runs alone (size 1 included)."""
    environ = os.environ if environ is None else environ
    launch = None
    for entry in _MPI_LAUNCHERS:
        launch = _read(environ, *entry)
        if launch is not None:
            break
    if launch is None and "SLURM_STEP_ID" in environ:
        launch = _read(environ, *_SLURM)
    if launch is None or launch.size == 1:
        return None
    return launch

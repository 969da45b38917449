"""Run the oracle's CUDA kernels on the CPU (a test harness): an ``Engine`` over ``gpucore.kernels.emulator``.

The unmodified ``gpucore/kernels/oracle/*.cu`` are compiled by the generic emulator (its module
docstring describes the execution model: blocks one after another, the threads of a block as
interleaved user-level contexts, warp collectives as barriers of the warp, argument type checks,
sequentially consistent memory, errors instead of hangs). ``emulator_engine`` is an ``Engine``
whose kernels take CuPy's ``f(grid, block, args)`` calls on NumPy arrays.

Oracle hooks: ``OIC_EMULATOR`` is defined, and ``oc_preempt()`` / ``oc_yield()`` (called by the
queue protocol of ``oracle_icw.cu`` at every shared access and fence, and in its spin waits) are
the emulator's preemption point / pause. With ``schedule_seed`` != 0 the next thread is drawn at
random and every preemption point (those hooks, atomics) switches with probability ``preempt``:
different seeds explore different interleavings of the warps of a block. Sequential blocks are a
legal schedule for every oracle kernel (none waits for a block that has not started).
"""

from __future__ import annotations

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.kernels import emulator as _emu
from gpucore.oracle.cuda import Engine

MODULES = ("oracle/oracle_ic", "oracle/oracle_lt", "oracle/oracle_icw")

_HOOKS = r"""
#define OIC_EMULATOR 1
static inline void oc_preempt() { emu_preempt(); }
static inline void oc_yield() { emu_yield(); }
"""

available = _emu.available


def kernel_names(module: str) -> list[str]:
    return _emu.kernel_names(module)


def _library():
    return _emu.compile_modules(MODULES, prelude=_HOOKS)  # one library: the kernels have distinct names


def emulator_engine(blocks: int = 3, block: int = 32, free_bytes: int = 1 << 30, *, schedule_seed: int = 0,
                    preempt: float = 0.25, switch_limit: int = 400_000_000) -> Engine:
    """An ``Engine`` running the CUDA kernels on the CPU (small grids keep it fast).

    ``schedule_seed`` 0: threads resumed round robin, no preemption; otherwise random schedules
    with preemption probability ``preempt`` (see module docstring). Kernels report ``switches``.
    """
    lib = _library()
    schedule = _emu.Schedule(schedule_seed, preempt, switch_limit)
    cache: dict[str, _emu.Kernel] = {}

    def kernel(module: str, name: str):
        if module not in MODULES:
            raise GpucoreError(f"emulator: unknown kernel module {module!r}")
        if name not in cache:
            cache[name] = lib.kernel(name, schedule)
        return cache[name]

    return Engine(name="emulator", xp=np, blocks=blocks, block=block, _kernel=kernel,
                  _free=lambda: free_bytes,
                  info={"backend": "emulator", "device": "sequential C++ emulation of the CUDA kernels"})

"""Run CUDA kernels (``gpucore/kernels/<family>/*.cu``) on the CPU: a test harness, no GPU needed.

The unmodified ``.cu`` sources are compiled as C++17 with ``g++`` behind a prelude that maps the
CUDA names (``__global__``, ``threadIdx``, ``__shared__``, warp collectives, atomics ...) to host
code; every ``extern "C" __global__`` kernel becomes a callable with CuPy's calling convention on
NumPy arrays. Drivers written for CuPy run unchanged when their arrays come from
``gpucore.backend.get_backend("cpu")`` (NumPy) and their kernels from here.

The harness's C++ is in real source files beside this module: ``prelude.h`` (the CUDA names as host
C++, placed before the kernels) and ``launcher.h`` (argument checks and the block/thread scheduler,
placed after them); this module generates only the per-kernel ``extern "C"`` entry points.

API
---
``available() -> bool``
    g++ is on the PATH.
``compile_modules(modules, defines=(), prelude="") -> Library``
    One shared library from the ``.cu`` modules (names in ``gpucore/kernels``, or paths to ``.cu``
    files) in one translation unit, with ``-D`` style ``defines`` (pairs or a dict) and extra C++
    ``prelude`` text (a caller's hooks) placed after the generic prelude. Built once: cached on
    disk under the temp folder keyed by the hash of the generated source, the headers (``*.cuh``,
    ``*.h``) of the include folders and the compiler, and in memory per process.
``load_module(name, defines=()) -> Library`` / ``get_kernel(module, name, defines=()) -> Kernel``
    Drop-ins for ``gpucore.kernels.load_module`` / ``get_kernel`` (a ``Library`` is the stand-in
    for ``cupy.RawModule``: ``library.get_function(name)``).
``Library``: ``.kernel_names``, ``.get_function(name)`` (a cached ``Kernel`` on the default round
    robin schedule), ``.kernel(name, schedule=None)`` (a new ``Kernel``).
``Kernel(library, name, schedule=None)``: ``kernel(grid, block, args, shared_mem=0)``, grid/block an
    int or a tuple of up to 3 ints, ``args`` NumPy arrays (C-contiguous; passed as pointers) and
    NumPy scalars (``np.int64(5)``, as CuPy needs typed scalars). ``.signature``: [(kind, size)]
    per parameter; ``.launches``; ``.switches`` (thread switches of the last launch).
``Schedule(seed=0, preempt=0.25, switch_limit=400_000_000, preempt_atomics=True)``
    How launches interleave threads (below); launch i of a schedule draws its own seed.
``EmulatorError`` (a ``GpucoreError``): a failed launch or a refused argument.

Argument checks. Every launch checks each argument against the kernel's C parameter type
(pointer vs scalar, element size, signedness): the mistakes CuPy passes silently (an int32 array
where the kernel reads int64, a Python int). A ``void*`` parameter takes any array.

Execution model. Blocks run one after another (x fastest, then y, z). The threads of a block are
user-level contexts on one OS thread (own stacks with a guard page, switched with
``_setjmp``/``_longjmp``); a thread runs until it waits at a barrier, pauses (``__nanosleep``), is
preempted, or returns; then the scheduler resumes another one: round robin (seed 0), or a thread
drawn at random (seed != 0). Warps are 32 consecutive linear thread ids (the last one may be
partial). Supported:

- barriers: ``__syncthreads`` (and ``_count``/``_and``/``_or``); warp collectives ``__syncwarp``,
  ``__ballot_sync``, ``__any_sync``, ``__all_sync``, ``__shfl_sync``/``_up``/``_down``/``_xor``
  (with ``width``), ``__match_any_sync``, ``__match_all_sync``, ``__reduce_*_sync``: every lane of
  the mask (restricted to the lanes that exist) must arrive at the same kind of collective with
  the same mask; ``__activemask()`` is the lanes that have not returned;
- atomics as CUDA declares them (``atomicAdd``/``Sub``/``Exch``/``Min``/``Max``/``Inc``/``Dec``/
  ``CAS``/``And``/``Or``/``Xor`` on 32- and 64-bit types, float/double add; ``_block``/``_system``
  aliases), fences ``__threadfence*``, ``__nanosleep``, ``clock64`` (a counter), ``__ldg``, bit
  intrinsics (``__popc``, ``__ffs``, ``__clz``, ``__brev`` and 64-bit forms), ``__trap`` and
  ``assert`` (reported as launch errors);
- ``__shared__`` arrays (static storage: one block runs at a time) and dynamic shared memory
  (``extern __shared__ T name[];``, size ``shared_mem`` bytes, at most 227 KiB, filled with 0xA5
  before every block so that code relying on zeroed shared memory fails);
- preemption points: with a seed != 0, every atomic, fence and ``emu_preempt()`` call (a hook a
  kernel may call under ``#ifdef GPUCORE_EMULATOR``) switches to a random thread with probability
  ``preempt`` (atomics only with ``preempt_atomics``); ``emu_yield()`` always switches. A thread
  that performs 1024 atomics/fences without a switch yields (spins on atomics do not hang).

Errors are reported, never hung: a lane that returns while lanes of its warp wait for it at a
collective (or a collective naming a lane that has returned), a thread that returns while others
wait at ``__syncthreads``, lanes meeting at different collectives or masks, a deadlock (every
thread waits at a barrier no running thread can complete), more than ``switch_limit`` switches in
one launch (a livelock: a spin that never ends), ``__trap``/``assert``, bad launch sizes.

Limits. Each run is one sequentially consistent interleaving: every memory access between two
switches is atomic, so the harness cannot find weak-memory races (missing fences, stale L1 reads,
``volatile`` vs relaxed atomics): that is for the GPU tests. Blocks never run concurrently, so a
kernel that waits for a later block (grid-wide spin barriers, cooperative groups) livelocks
here; independent-block kernels and persistent ones that only wait for blocks that have started
are fine. A spin on plain (volatile) loads without a yield point hangs the emulator: spin with
``__nanosleep``, an atomic or a fence. Collectives of disjoint lane groups of one warp at the same
time are reported as mismatched. No bounds checks (use small arrays and compare with a
reference). Slow (tens of nanoseconds per switch): keep grids and inputs small.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.kernels import include_dirs as _include_dirs
from gpucore.kernels import source_path

__all__ = ["EmulatorError", "Kernel", "Library", "Schedule", "available", "compile_modules", "get_kernel",
           "kernel_names", "load_module", "MAX_DYNAMIC_SHARED"]

MAX_DYNAMIC_SHARED = 227 * 1024  # bytes per block (H100/H200 opt-in maximum)
#: the C++ sources of the harness: the CUDA prelude (before the kernels) and the launcher (after them)
PRELUDE = Path(__file__).resolve().parent / "prelude.h"
LAUNCHER = Path(__file__).resolve().parent / "launcher.h"


class EmulatorError(GpucoreError):
    """A kernel launch the emulator refused or that failed (one line: kernel, problem)."""




_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?void\s+'
                        r'(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\(')
# extern __shared__ [__align__(n)] T name[];  ->  a pointer into the emulator's dynamic shared buffer
_DYN_SHARED_RE = re.compile(r'extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w\s:<>,*]*?)\s*'
                            r'\b(\w+)\s*\[\s*\]\s*;')

_ERRORS = {
    -1: "grid or block size out of range (block: 1..1024 threads, z <= 64; grid: x < 2^31, y, z <= 65535)",
    -2: f"dynamic shared memory above {MAX_DYNAMIC_SHARED} bytes",
    -3: "wrong number of arguments",
    -11: "a lane left its warp while the others waited at a warp collective (or a collective named a lane that "
         "had returned)",
    -12: "the switch limit was reached (livelock, or a kernel that waits forever)",
    -13: "a thread returned while others waited at __syncthreads (or reached it after another thread returned)",
    -14: "deadlock: every running thread waits at a barrier that none of them can complete",
    -15: "lanes of a warp met at different warp collectives or with different masks (or a lane not in its own mask)",
    -16: "__trap() was called",
}

_KIND_NAMES = {0: "pointer", 1: "signed integer", 2: "unsigned integer", 3: "floating point", 4: "struct"}


def available() -> bool:
    """Whether g++ (the emulator's compiler) is on the PATH."""
    return shutil.which("g++") is not None


def _module_path(module: str | Path) -> Path:
    p = Path(module)
    if p.suffix != ".cu":
        p = source_path(str(module))
    if not p.is_file():
        raise EmulatorError(f"emulator: no kernel source {p}")
    return p.resolve()


def kernel_names(module: str | Path) -> list[str]:
    """The ``extern "C" __global__`` kernels of a module (a name in gpucore/kernels or a .cu path)."""
    return _KERNEL_RE.findall(_module_path(module).read_text())


def _rewrite(text: str) -> str:
    return _DYN_SHARED_RE.sub(lambda m: f"static {m.group(1)}* const {m.group(2)} = "
                                        f"reinterpret_cast<{m.group(1)}*>(emu_dynamic_smem);", text)


@lru_cache(maxsize=1)
def _compiler_version() -> str:
    return subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout


# -fno-gnu-unique: a __shared__ array is a function-local static, and in a template or inline function g++
# would make it a process-wide unique symbol, so two builds of one module with different defines (array
# sizes) loaded together would share the first one's storage.
_FLAGS = ("-std=c++17", "-O1", "-U_FORTIFY_SOURCE", "-shared", "-fPIC", "-fno-gnu-unique", "-Wall",
          "-Wno-unused-function", "-Wno-unknown-pragmas", "-Wno-missing-field-initializers", "-Wno-unused-variable")


def _normalize_defines(defines) -> tuple[tuple[str, str], ...]:
    items = defines.items() if isinstance(defines, Mapping) else defines
    return tuple((str(k), str(v)) for k, v in items)


def compile_modules(modules: Iterable[str | Path] | str, defines=(), prelude: str = "") -> Library:
    """One ``Library`` of the kernels of ``modules`` (see the module docstring); cached."""
    if isinstance(modules, (str, Path)):
        modules = [modules]
    paths = tuple(_module_path(m) for m in modules)
    if not paths:
        raise EmulatorError("emulator: no modules to compile")
    return _compile(paths, _normalize_defines(defines), str(prelude))


@lru_cache(maxsize=None)
def _compile(paths: tuple[Path, ...], defines: tuple[tuple[str, str], ...], prelude: str) -> Library:
    if not available():
        raise EmulatorError("the CUDA kernel emulator needs g++ on the PATH")
    names: list[str] = []
    parts = [f"#define EMU_MAX_DYNAMIC_SHARED {MAX_DYNAMIC_SHARED}\n",
             f'#line 1 "{PRELUDE}"\n', PRELUDE.read_text()]
    parts += [f"#define {k} {v}\n" for k, v in defines]
    parts.append(prelude + "\n")
    for path in paths:
        text = path.read_text()
        names += _KERNEL_RE.findall(text)
        parts.append(f'#line 1 "{path}"\n{_rewrite(text)}\n')
    parts.append(f'#line 1 "{LAUNCHER}"\n' + LAUNCHER.read_text())
    for name in names:
        parts.append(
            f'extern "C" int emu_launch_{name}(const unsigned long long* c, void** a, const long long* k, '
            f"const long long* s, int n, long long* o) {{ return emu_launch({name}, c, a, k, s, n, o); }}\n"
            f'extern "C" int emu_nargs_{name}() {{ return emu_nargs({name}); }}\n'
            f'extern "C" void emu_describe_{name}(long long* k, long long* s) {{ emu_describe({name}, k, s); }}\n')
    source = "".join(parts)
    include_dirs = sorted({d for p in paths for d in _include_dirs(p)})
    cmd = ["g++", *_FLAGS, *(f"-I{d}" for d in include_dirs)]
    key = hashlib.sha256()
    for text in [source, " ".join(cmd), _compiler_version()]:
        key.update(text.encode() + b"\0")
    for d in include_dirs:
        for header in sorted([*d.glob("*.cuh"), *d.glob("*.h")]):
            key.update(str(header).encode() + b"\0" + header.read_bytes() + b"\0")
    folder = Path(tempfile.gettempdir()) / f"gpucore-emu-{key.hexdigest()[:20]}"
    lib_path = folder / "kernels.so"
    if not lib_path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cpp = folder / "kernels.cpp"
        cpp.write_text(source)
        tmp = folder / f".kernels.{np.random.default_rng().integers(1 << 40)}.so"
        proc = subprocess.run([*cmd, "-o", str(tmp), str(cpp)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise EmulatorError(f"emulator build of {', '.join(p.name for p in paths)} failed: "
                                f"{proc.stderr.strip()[:4000]}")
        tmp.replace(lib_path)
    if lib_path not in _LOADED:  # one Library (and lock) per loaded file: its state is global
        _LOADED[lib_path] = Library(ctypes.CDLL(str(lib_path)), tuple(names), paths, lib_path)
    return _LOADED[lib_path]


_LOADED: dict[Path, Library] = {}


def load_module(name: str, defines: tuple[tuple[str, str], ...] = ()) -> Library:
    """Emulated ``gpucore.kernels.load_module``: the ``Library`` (cupy.RawModule stand-in) of one module."""
    return compile_modules([name], defines)


def get_kernel(module: str, kernel: str, defines: tuple[tuple[str, str], ...] = ()) -> Kernel:
    """Emulated ``gpucore.kernels.get_kernel``."""
    return load_module(module, defines).get_function(kernel)


class Library:
    """The compiled kernels of some modules; ``get_function(name)`` as ``cupy.RawModule``'s."""

    def __init__(self, cdll, kernel_names: tuple[str, ...], sources: tuple[Path, ...], path: Path):
        self.cdll, self.kernel_names, self.sources, self.path = cdll, kernel_names, sources, path
        self.lock = threading.Lock()  # one launch at a time: the emulator's state is global
        self._functions: dict[str, Kernel] = {}

    def kernel(self, name: str, schedule: Schedule | None = None) -> Kernel:
        return Kernel(self, name, schedule)

    def get_function(self, name: str) -> Kernel:
        if name not in self._functions:
            self._functions[name] = Kernel(self, name)
        return self._functions[name]

    def __repr__(self):
        return f"Library({', '.join(p.name for p in self.sources)}: {', '.join(self.kernel_names)})"


class Schedule:
    """How launches interleave the threads of a block.

    ``seed`` 0: round robin, no preemption (deterministic). Otherwise launch i draws its own
    xorshift seed from (seed, i); the scheduler resumes a random thread after each switch, and
    preemption points (atomics if ``preempt_atomics``, fences, ``emu_preempt()``) switch with
    probability ``preempt``. ``switch_limit``: switches in one launch before it fails as a livelock.
    """

    def __init__(self, seed: int = 0, preempt: float = 0.25, switch_limit: int = 400_000_000,
                 preempt_atomics: bool = True):
        if not 0.0 <= preempt <= 1.0:
            raise EmulatorError(f"emulator schedule: preempt {preempt} outside [0, 1]")
        self.seed, self.preempt, self.switch_limit = int(seed), float(preempt), int(switch_limit)
        self.preempt_atomics, self.launches = bool(preempt_atomics), 0

    def next_seed(self) -> int:
        self.launches += 1
        if not self.seed:
            return 0
        z = (self.seed + self.launches * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
        return ((z ^ (z >> 27)) | 1) & ((1 << 64) - 1)


def _describe_arg(a):
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise EmulatorError("emulated kernel argument arrays must be C-contiguous")
        return 0, a.dtype.itemsize, ctypes.c_void_p(a.ctypes.data)
    if isinstance(a, np.generic):
        kind = {"i": 1, "u": 2, "b": 2, "f": 3, "V": 4}.get(a.dtype.kind)
        if kind is None:
            raise EmulatorError(f"emulated kernel: unsupported scalar type {a.dtype}")
        if kind == 4:
            return kind, a.dtype.itemsize, (ctypes.c_char * a.dtype.itemsize).from_buffer_copy(a.tobytes())
        return kind, a.dtype.itemsize, np.ctypeslib.as_ctypes_type(a.dtype)(a.item())
    raise EmulatorError(f"emulated kernel: pass NumPy arrays or NumPy scalars (CuPy needs typed scalars), "
                        f"got {type(a).__name__}")


def _dims(d, what: str) -> tuple[int, int, int]:
    t = tuple(int(x) for x in d) if isinstance(d, (tuple, list)) else (int(d),)
    if not 1 <= len(t) <= 3 or min(t) < 1:
        raise EmulatorError(f"emulated kernel: bad {what} {d!r}")
    return t + (1,) * (3 - len(t))


class Kernel:
    """A kernel callable as CuPy's: ``k(grid, block, args, shared_mem=0)``; raises ``EmulatorError``."""

    def __init__(self, library: Library, name: str, schedule: Schedule | None = None):
        if name not in library.kernel_names:
            raise EmulatorError(f"emulator: no kernel {name!r} in {library!r}")
        self.name, self.library = name, library
        self.schedule = schedule if schedule is not None else Schedule()
        lib = library.cdll
        self._f = getattr(lib, f"emu_launch_{name}")
        self._f.restype = ctypes.c_int
        nargs = getattr(lib, f"emu_nargs_{name}")()
        kinds, sizes = (ctypes.c_longlong * nargs)(), (ctypes.c_longlong * nargs)()
        getattr(lib, f"emu_describe_{name}")(kinds, sizes)
        self.signature = list(zip(kinds, sizes))
        self.launches = 0
        self.switches = 0  # of the last launch

    def __call__(self, grid, block, args, shared_mem: int = 0):
        described = [_describe_arg(a) for a in args]
        n = len(described)
        if n != len(self.signature):
            raise EmulatorError(f"{self.name}: {n} arguments given, the kernel takes {len(self.signature)}")
        for i, ((kind, size, _), (want_kind, want_size)) in enumerate(zip(described, self.signature)):
            if kind != want_kind or (size != want_size and not (kind == 0 and want_size == 0)):
                raise EmulatorError(f"{self.name}: argument {i} is a {size}-byte {_KIND_NAMES[kind]}, the kernel "
                                    f"wants a {want_size}-byte {_KIND_NAMES[want_kind]}")
        values = [v for _, _, v in described]
        ptrs = (ctypes.c_void_p * n)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        kinds = (ctypes.c_longlong * n)(*[k for k, _, _ in described])
        sizes = (ctypes.c_longlong * n)(*[s for _, s, _ in described])
        s = self.schedule
        cfg = (ctypes.c_ulonglong * 11)(*_dims(grid, "grid"), *_dims(block, "block"), s.next_seed(),
                                        int(s.preempt * 9007199254740992.0), max(0, s.switch_limit),
                                        int(s.preempt_atomics), int(shared_mem))
        out = (ctypes.c_longlong * 3)()
        with self.library.lock:
            rc = self._f(cfg, ptrs, kinds, sizes, ctypes.c_int(n), out)
            self.switches = out[0]
            if rc == -17:
                lib = self.library.cdll
                why = (f"assert({ctypes.c_char_p.in_dll(lib, 'emu_assert_text').value.decode()}) failed at "
                       f"{ctypes.c_char_p.in_dll(lib, 'emu_assert_file').value.decode()}:"
                       f"{ctypes.c_int.in_dll(lib, 'emu_assert_line').value}")
        self.launches += 1
        if rc > 0:  # the C side disagrees with the checks above: never expected
            raise EmulatorError(f"{self.name}: argument {rc - 1} refused by the launcher")
        if rc != 0:
            if rc != -17:
                why = _ERRORS.get(rc, f"code {rc}")
            where = "" if out[1] < 0 else f" (block {out[1]}" + ("" if out[2] < 0 else f", thread {out[2]}") + ")"
            raise EmulatorError(f"{self.name}: emulated launch failed: {why}{where}")

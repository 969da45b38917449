"""The oracle is independent: it imports only the graph loader, the backend selection, the kernel
loader, the phase timer, the progress bar, the rank layer (gpucore.dist: which runs a rank
simulates) and the documented world-realization functions, never solver code; and no solver imports
the oracle (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_MODULES = ("gpucore.oracle", "gpucore.backend", "gpucore.graph", "gpucore.kernels", "gpucore.errors",
                   "gpucore.atomic", "gpucore.commands.common", "gpucore.random", "gpucore.timing",
                   "gpucore.progress", "gpucore.dist")
# from gpucore.random: the keyed hash and the world realizations of docs/oracle.md, nothing else
ALLOWED_RANDOM = {"Stream", "ic_live", "lt_fixed_weight", "lt_threshold", "mix", "mix3", "mix4"}
#: solver packages: none of them may import the oracle (a solver must not grade its own answers)
SOLVERS = ("amcss", "im", "sds")


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpucore"):
            yield node.module, {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gpucore"):
                    yield a.name, set()


def test_oracle_imports_only_shared_foundation():
    files = sorted((ROOT / "gpucore" / "oracle").glob("*.py")) + [ROOT / "gpucore" / "commands" / "verify.py"]
    assert len(files) >= 6
    for path in files:
        for module, names in _imports(path):
            assert module.startswith(ALLOWED_MODULES), f"{path.name} imports {module}"
            if module.startswith("gpucore.random"):
                assert names <= ALLOWED_RANDOM, f"{path.name} imports {names - ALLOWED_RANDOM} from gpucore.random"


def test_no_solver_imports_the_oracle():
    files = [p for name in SOLVERS for p in sorted((ROOT / "gpucore" / name).rglob("*.py"))]
    assert len(files) >= 10
    for path in files:
        for module, names in _imports(path):
            assert not module.startswith("gpucore.oracle"), f"{path.relative_to(ROOT)} imports {module}"
            assert not (module == "gpucore" and "oracle" in names), f"{path.relative_to(ROOT)} imports gpucore.oracle"


def test_oracle_kernels_include_only_the_world_header_and_their_own():
    """Oracle kernels include the documented world header, the shared loop idioms (gc_loops.cuh) and
    oracle_* headers, never solver headers."""
    sources = sorted((ROOT / "gpucore" / "kernels" / "oracle").glob("*.cu*"))
    assert len(sources) >= 4
    for path in sources:
        includes = re.findall(r'#include\s+[<"]([^>"]+)[>"]', path.read_text())
        foreign = [name for name in includes if name not in ("gc_random.cuh", "gc_loops.cuh")
                   and not name.startswith("oracle_")]
        assert not foreign, (path.name, foreign)
    assert "gc_random.cuh" in re.findall(r'#include\s+[<"]([^>"]+)[>"]', (ROOT / "gpucore" / "kernels" / "oracle" / "oracle_ic.cu").read_text())

"""The seams distributed runs will cut along (issue 11, item 3): the AMCSS round and the CPU set
construction are split into named, documented steps matching their CUDA twin, and the solvers time
their phases with gpucore.timing.Phases rather than pairs of perf_counter calls."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from gpucore.amcss import driver, kernels_cpu

ROOT = Path(__file__).resolve().parents[1]


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text())
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("module", [driver, kernels_cpu])
def test_no_long_functions(module):
    for name, node in _functions(Path(module.__file__)).items():
        assert node.end_lineno - node.lineno < 90, f"{module.__name__}.{name}: {node.end_lineno - node.lineno + 1} lines"


def test_the_round_is_three_documented_steps():
    source = inspect.getsource(driver.run_realization)
    for step in ("prepare_collection", "select_batch", "observe_batch", "round_record"):
        fn = getattr(driver, step)
        assert fn.__doc__ and len(fn.__doc__.split()) > 15, step
        assert f"{step}(" in source, step


def test_build_set_is_cut_where_its_cuda_twin_is():
    """Each step of kernels_cpu.build_set names the am_* function of amcss_common.cuh it mirrors."""
    cuda = (ROOT / "gpucore" / "kernels" / "amcss" / "amcss_common.cuh").read_text()
    source = inspect.getsource(kernels_cpu.build_set.py_func)
    steps = {"copy_clean_set": "am_move", "keep_inactive_roots": "am_count_inactive", "draw_roots": "am_draw_roots",
             "draw_complement": "am_complement", "probe_ic": "am_level_ic", "probe_lt": "am_level_lt",
             "roots_first": "am_partition_roots"}
    for step, twin in steps.items():
        doc = getattr(kernels_cpu, step).py_func.__doc__
        assert f"{step}(" in source and twin in doc and f" {twin}(" in cuda, step


@pytest.mark.parametrize("pattern", ["amcss/**/*.py", "oracle/**/*.py", "commands/**/*.py", "graph/**/*.py",
                                     "im/**/*.py"])
def test_phases_not_perf_counter_pairs(pattern):
    paths = sorted((ROOT / "gpucore").glob(pattern))
    assert paths, pattern
    for path in paths:
        assert "perf_counter" not in path.read_text(), f"{path.relative_to(ROOT)} times with perf_counter"

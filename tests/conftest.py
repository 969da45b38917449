"""Shared fixtures: the real SNAP graphs beside the project, GPU detection, small graphs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """``../shared/data/snap`` beside the checkout (or $GPUCORE_SHARED_DATA)."""
    env = os.environ.get("GPUCORE_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data" / "snap"


def manifest_rows() -> list[dict]:
    """Rows of ``../shared/data/MANIFEST.md``: file, dataset, type, nodes, arcs, self_loops, sha256."""
    manifest = shared_data_dir().parent / "MANIFEST.md"
    rows = []
    for line in manifest.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0].endswith(".gz"):
            num = lambda s: int(re.sub(r"[^0-9]", "", s))  # noqa: E731
            rows.append(
                {
                    "file": cells[0],
                    "dataset": cells[1],
                    "undirected": cells[2].startswith("undirected"),
                    "nodes": num(cells[4]),
                    "arcs": num(cells[5]),
                    "self_loops": num(cells[6]),
                    "sha256": cells[7],
                }
            )
    return rows


@pytest.fixture(scope="module")
def workflow_scripts():
    """import_script(name) -> a module of workflow/scripts/ (the aggregation glue imports its
    siblings by name, as Snakemake runs it), with that folder on sys.path for the test module."""
    import importlib
    import sys

    scripts = str(REPO / "workflow" / "scripts")
    sys.path.insert(0, scripts)
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(scripts)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real graphs; tests using it skip cleanly when it is absent."""
    path = shared_data_dir()
    if not (path.is_dir() and (path.parent / "MANIFEST.md").is_file()):
        pytest.skip(f"real SNAP graphs not available at {path}")
    return path


def _gpu_available() -> bool:
    from gpucore.backend import cuda_available

    return cuda_available()


def pytest_collection_modifyitems(config, items):
    """Mark everything under tests/gpu with ``gpu``; skip ``gpu`` tests where no GPU is visible."""
    for item in items:
        if "/tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
    if any(item.get_closest_marker("gpu") for item in items) and not _gpu_available():
        skip = pytest.mark.skip(reason="no CUDA GPU visible to CuPy")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)

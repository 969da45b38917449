"""What `pip install` ships: every non-Python file the package reads at run time (kernel sources by
family, the emulator's C++) is package data, and the metadata states what the project needs."""

from __future__ import annotations

import fnmatch
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _tracked(prefix: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", prefix], cwd=ROOT, capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        return [ROOT / line for line in out.stdout.splitlines()]
    return [p for p in (ROOT / prefix).rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def test_every_data_file_of_the_package_is_package_data():
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    files = [p for p in _tracked("gpucore") if p.suffix != ".py" and p.exists()]
    assert any(p.suffix == ".cu" for p in files) and any(p.suffix == ".h" for p in files)
    for path in files:
        rel = path.relative_to(ROOT)
        covered = False
        for package, patterns in data.items():
            base = Path(*package.split("."))
            if base in rel.parents:
                inner = rel.relative_to(base).as_posix()
                covered |= any(fnmatch.fnmatch(inner, pat) and inner.count("/") == pat.count("/") for pat in patterns)
        assert covered, f"{rel} is not in [tool.setuptools.package-data]: a pip install would lack it"


def test_python_version_and_test_tools():
    project = PYPROJECT["project"]
    assert project["requires-python"] == ">=3.11"  # Snakemake 8 needs 3.11
    test_extra = " ".join(project["optional-dependencies"]["test"])
    assert "pytest" in test_extra and "snakefmt" in test_extra


def test_conda_environment_installs_the_checkout():
    import yaml

    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "python>=3.11" in deps and "pip" in deps and any(d.startswith("snakemake") for d in deps)
    assert pip == ["-e ."]
    text = (ROOT / "environment.yml").read_text()
    assert "cupy" in text  # the optional CUDA section, commented
    readme = (ROOT / "README.md").read_text()
    assert "conda env create -f environment.yml" in readme and "pip install -e ." in readme
    rules_env = yaml.safe_load((ROOT / "workflow" / "envs" / "gpucore.yaml").read_text())
    assert "python>=3.11" in rules_env["dependencies"]

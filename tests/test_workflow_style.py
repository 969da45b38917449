"""The workflow as Snakemake's best practices ask (issue 11, item 5): snakefmt-clean rule files, no
lambda in a rule (named helpers in rules/common.smk), schemas beside the workflow, and the threads
that define an algorithm a schema-validated key of that algorithm. Fast: no workflow run."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RULE_FILES = [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]
SCHEMAS = ROOT / "workflow" / "schemas"


def _snakefmt() -> str | None:
    beside = Path(sys.executable).parent / "snakefmt"
    return str(beside) if beside.exists() else shutil.which("snakefmt")


@pytest.mark.skipif(_snakefmt() is None, reason="snakefmt is not installed (pip install -e .[test])")
def test_snakefmt_check_is_clean():
    proc = subprocess.run([_snakefmt(), "--check", "Snakefile", "rules"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_lambda_in_the_workflow():
    for path in RULE_FILES:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            assert not re.search(r"\blambda\b", code), f"{path.relative_to(ROOT)}:{number}: {line.strip()}"


def test_schemas_live_beside_the_workflow():
    assert (SCHEMAS / "config.schema.yaml").is_file() and (SCHEMAS / "datasets.schema.yaml").is_file()
    assert not (ROOT / "config" / "schema").exists()
    assert 'check_schema(config, "workflow/schemas/config.schema.yaml", "config")' in (ROOT / "Snakefile").read_text()
    assert '"workflow/schemas/datasets.schema.yaml"' in (ROOT / "rules" / "common.smk").read_text()


def _config(**algorithm) -> dict:
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    base["algorithms"]["pasti"] = {"command": "amcss", "update": False, **algorithm}
    return base


@pytest.fixture(scope="module")
def validator():
    schema = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text())
    return jsonschema.Draft202012Validator(schema)


def test_the_embedded_default_validates(validator):
    validator.validate(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))


@pytest.mark.parametrize("algorithm,ok", [
    ({"threads": 16}, True), ({"threads": 1}, True), ({"threads": 0}, False), ({"threads": "16"}, False),
    ({"options": "--threads 16"}, False), ({"options": "--backend cuda"}, False),
    ({"options": "--pollution-limit 2 --keep-all"}, True), ({"rounds": 3}, True), ({"rounds": 0}, False),
    ({"options": "--rounds 2"}, False),
])
def test_algorithm_threads_is_a_validated_key(validator, algorithm, ok):
    errors = list(validator.iter_errors(_config(**algorithm)))
    assert (not errors) == ok, [e.message for e in errors]


def _with_algorithm(**algorithm) -> dict:
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    base["algorithms"]["extra"] = algorithm
    return base


@pytest.mark.parametrize("algorithm,ok", [
    ({"command": "im", "sampler": "fused", "batch_width": 128, "order": "rcm", "sorted_sources": False,
      "tail": "none"}, True),
    ({"command": "im", "sampler": "fused", "batch_width": 48}, False),
    ({"command": "im", "sampler": "ripples"}, False),
    ({"command": "im", "order": "random"}, False),
    ({"command": "im", "algorithm": "difuser", "registers": 1024, "rebuild_threshold": 0.01, "sampling": "xor",
      "refine": 0}, True),
    ({"command": "im", "algorithm": "difuser", "registers": 1000}, False),
    ({"command": "im", "algorithm": "difuser", "rebuild_threshold": 1.0}, False),
    ({"command": "im", "algorithm": "celf"}, False),
    ({"command": "sds", "bound": "degree", "threads": 1}, True),
    ({"command": "sds", "bound": "tight"}, False),
    ({"command": "im", "options": "--sampler fused"}, False),
    ({"command": "im", "options": "--batch-width 64"}, False),
    ({"command": "im", "options": "--algorithm difuser"}, False),
    ({"command": "sds", "options": "--t 5"}, False),
    ({"command": "sds", "options": "--batch 64"}, False),
])
def test_family_algorithm_keys_are_validated(validator, algorithm, ok):
    errors = list(validator.iter_errors(_with_algorithm(**algorithm)))
    assert (not errors) == ok, [e.message for e in errors]


@pytest.mark.parametrize("experiment,ok", [
    ({"kind": "sds", "dataset": "pa2k", "model": ["comp", "truss"], "k": [2, 3], "t": [10], "algorithms": ["a"]}, True),
    ({"kind": "sds", "dataset": "pa2k", "model": "core", "k": [2], "t": [10], "algorithms": ["a"], "gpus": 2}, True),
    ({"kind": "sds", "dataset": "pa2k", "model": "IC", "k": [2], "t": [10], "algorithms": ["a"]}, False),
    ({"kind": "sds", "dataset": "pa2k", "model": "comp", "k": [2], "algorithms": ["a"]}, False),
    ({"kind": "sds", "dataset": "pa2k", "model": "comp", "k": [0], "t": [10], "algorithms": ["a"]}, False),
    ({"kind": "im", "dataset": "pa2k", "model": "IC", "k": [5], "algorithms": ["a"], "gpus": 2}, True),
    ({"kind": "im", "dataset": "pa2k", "model": "IC", "k": [5], "algorithms": ["a"], "gpus": 0}, False),
    ({"kind": "im", "dataset": "pa2k", "model": "IC", "k": [5], "t": [3], "algorithms": ["a"]}, False),
    ({"kind": "amcss", "dataset": "pa2k", "model": "IC", "batch": 2, "eta": [5], "algorithms": ["a"], "gpus": 2},
     False),
])
def test_experiment_kinds_are_validated(validator, experiment, ok):
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    base["experiments"] = [experiment]
    errors = list(validator.iter_errors(base))
    assert (not errors) == ok, [e.message for e in errors]


def test_threads_are_not_configuration_and_paper_algorithms_fix_theirs(validator):
    for path in sorted((ROOT / "config").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text()) or {}
        assert "threads" not in cfg, f"{path.name}: job threads belong to the profile, not the config"
    merit = yaml.safe_load((ROOT / "config" / "merit.yaml").read_text())
    assert merit["algorithms"]["pasti"]["threads"] == 16  # PASTI-16
    gim = yaml.safe_load((ROOT / "config" / "gim.yaml").read_text())
    assert gim["algorithms"]["imm1"]["threads"] == 1 and gim["algorithms"]["imm16"]["threads"] == 16
    assert all(a.get("sampler") == "gim" and "options" not in a for a in gim["algorithms"].values())  # gIM's sampler
    slurm = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    assert "set-threads" not in slurm and slurm["max-threads"] >= 1  # set-threads would override PASTI-16's 16

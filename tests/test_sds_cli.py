"""``gpucore sds`` and ``gpucore verify`` on its result, through subprocesses: the result file,
verification passing and failing (exit 0 / 1), bad input exiting 2 with one error line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpucore.graph import save_graph
from tests.sds_graphs import to_graph
from tests.test_sds_exact import cliques_at_hubs


def gpucore(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "gpucore", *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ), timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"gpucore {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    return save_graph(to_graph(cliques_at_hubs()), tmp_path_factory.mktemp("sds_cli") / "hubs.gcsr")


@pytest.fixture(scope="module")
def result_file(graph_file):
    out = graph_file.parent / "truss.json"
    proc = gpucore("sds", "--graph", graph_file, "--model", "truss", "--k", 3, "--t", 10, "--backend", "cpu",
                   "--threads", 2, "--memory-budget", "256MiB", "-o", out)
    summary = json.loads(proc.stdout)
    assert summary["output"] == str(out) and summary["t_score"] == 21 and summary["backend"] == "cpu"
    return out


def test_result_file(result_file, graph_file):
    result = json.loads(result_file.read_text())
    assert result["kind"] == "sds" and (result["model"], result["k"], result["t"]) == ("truss", 3, 10)
    assert [e["vertex"] for e in result["top"]] == list(range(29, 19, -1))
    assert all(len(e["contexts"]) == e["score"] for e in result["top"])
    assert all(len(c) == 5 for e in result["top"] for c in e["contexts"])
    assert result["graph"]["path"] == str(graph_file) and result["memory_budget"] == 256 << 20
    assert set(result["seconds_by_phase"]) == {"graph", "supports", "bounds", "egonets", "scoring", "contexts"}
    assert result["backend"]["backend"] == "cpu" and result["tie_rule"].startswith("score descending")


def test_verify_passes_and_fails(result_file, graph_file, tmp_path):
    report = tmp_path / "verify.json"
    proc = gpucore("verify", result_file, "--graph", graph_file, "-o", report)
    assert "(sds): passed" in proc.stdout and json.loads(report.read_text())["passed"]
    bad = json.loads(result_file.read_text())
    bad["top"][4]["contexts"].pop()
    bad_file = tmp_path / "bad.json"
    bad_file.write_text(json.dumps(bad))
    proc = gpucore("verify", bad_file, "--graph", graph_file, "-o", report, check=False)
    assert proc.returncode == 1 and "FAILED" in proc.stdout and not json.loads(report.read_text())["passed"]


@pytest.mark.parametrize("args, text", [
    (("--k", 0), "--k 0: must be >= 1"),
    (("--t", 0), "--t 0: must be >= 1"),
    (("--t", 10**6), "larger than the graph's"),
    (("--model", "clique"), "--model 'clique'"),
    (("--memory-budget", "lots"), "--memory-budget 'lots'"),
    (("--memory-budget", "2KiB"), "needs"),
    (("--threads", 0), "--threads 0"),
])
def test_bad_input_exits_2_with_one_line(graph_file, tmp_path, args, text):
    base = {"--model": "core", "--k": 3, "--t": 5}
    base.update(dict(zip(args[::2], args[1::2])))
    flat = [str(x) for kv in base.items() for x in kv]
    out = tmp_path / "never.json"
    proc = gpucore("sds", "--graph", graph_file, *flat, "--backend", "cpu", "-o", out, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("gpucore: error:") and text in lines[0]
    assert not out.exists()


def test_missing_graph(tmp_path):
    proc = gpucore("sds", "--graph", tmp_path / "nope.gcsr", "--model", "comp", check=False)
    assert proc.returncode == 2 and "nope.gcsr" in proc.stderr

"""``gpucore amcss`` through a subprocess: a generated graph, the result JSON replayed by the
oracle, the progress line per round, and bad input exiting 2 with one error line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest


def gpucore(*args, env=None, check=True):
    proc = subprocess.run([sys.executable, "-m", "gpucore", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"gpucore {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("amcss_cli") / "pa.gcsr"
    gpucore("generate", "pa", "--nodes", 800, "--edges", 4000, "--seed", 3, "-o", path)
    return path


def test_cli_run_writes_replayable_json(graph_file, tmp_path):
    from gpucore.graph import load_graph
    from gpucore.oracle import replay

    out = tmp_path / "out.json"
    proc = gpucore("amcss", "--graph", graph_file, "--model", "LT", "--eta", 200, "--batch", 4, "--eps", 0.5,
                   "--realizations", 2, "--seed", 9, "--threads", 2, "--backend", "cpu", "-o", out,
                   env={"GPUCORE_PROGRESS": "1"})
    # one bar over eta per realization (tqdm redraws it in place), not a line per round
    for r in (1, 2):
        assert f"realization {r}/2:" in proc.stderr and "200/200" in proc.stderr, proc.stderr
    assert "round 1:" not in proc.stderr, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["algorithm"] == "MERIT"
    result = json.loads(out.read_text())
    assert result["kind"] == "amcss" and result["model"] == "LT" and result["eta"] == 200
    assert result["epsilon"] == 0.5 and result["batch"] == 4 and result["backend"] == "cpu"
    graph = load_graph(graph_file)
    assert result["graph"] == {**result["graph"], "path": str(graph_file), "sha256": graph.sha256}
    for rec in result["realizations"]:
        rep = replay(graph, rec["rounds"], "LT", rec["world_seed"], 200)
        assert rep.passed, rep.first_mismatch


def test_cli_no_update_is_pasti(graph_file, tmp_path):
    out = tmp_path / "pasti.json"
    proc = gpucore("amcss", "--graph", graph_file, "--eta", 100, "--no-update", "--backend", "cpu", "-o", out,
                   env={"GPUCORE_PROGRESS": "0"})
    assert proc.stderr == ""  # quiet in logs
    result = json.loads(out.read_text())
    assert result["algorithm"] == "PASTI" and result["update"] is False and result["model"] == "IC"


@pytest.mark.parametrize("args,needle", [
    (["--eta", 0], "--eta"),
    (["--eta", 801], "--eta"),
    (["--eta", 10, "--batch", 0], "--batch"),
    (["--eta", 10, "--eps", 1.0], "--eps"),
    (["--eta", 10, "--eps", 0], "--eps"),
    (["--eta", 10, "--model", "XX"], "--model"),
    (["--eta", 10, "--memory-budget", "lots"], "--memory-budget"),
    (["--eta", 10, "--memory-budget", "64KiB"], "memory budget"),
])
def test_cli_bad_input_exits_2(graph_file, tmp_path, args, needle):
    out = tmp_path / "never.json"
    proc = gpucore("amcss", "--graph", graph_file, "--backend", "cpu", *args, "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpucore: error:") and needle in lines[0], proc.stderr
    assert not out.exists()


def test_cli_missing_graph_file(tmp_path):
    proc = gpucore("amcss", "--graph", tmp_path / "nope.gcsr", "--eta", 5, check=False)
    assert proc.returncode == 2 and "gpucore: error:" in proc.stderr


def test_cli_non_positive_costs(tmp_path):
    from gpucore.graph import save_graph
    from tests.test_amcss_ref import dedup_graph

    rng = np.random.default_rng(1)
    graph = dedup_graph(50, rng.integers(0, 50, 150), rng.integers(0, 50, 150), prob=0.2, cost=0.0)
    path = save_graph(graph, tmp_path / "zero_cost.gcsr")
    proc = gpucore("amcss", "--graph", path, "--eta", 5, "--backend", "cpu", check=False)
    assert proc.returncode == 2 and "costs" in proc.stderr


def test_cli_pollution_limit_zero_is_pasti_seed_for_seed(graph_file, tmp_path):
    """--pollution-limit 0 regenerates every round: the run is PASTI's, seed for seed (docs/amcss.md)."""
    from gpucore.cli import main

    common = ["amcss", "--graph", str(graph_file), "--model", "IC", "--eta", "150", "--batch", "3",
              "--realizations", "2", "--seed", "4", "--backend", "cpu"]
    assert main([*common, "--pollution-limit", "0", "-o", str(tmp_path / "zero.json")]) == 0
    assert main([*common, "--no-update", "-o", str(tmp_path / "pasti.json")]) == 0
    zero, pasti = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("zero", "pasti"))
    assert zero["algorithm"] == "MERIT" and zero["pollution_limit"] == 0.0

    def rounds(res):
        return [[(rd["seed_ids"], rd["cost"], rd["theta"], rd["newly_active"]) for rd in r["rounds"]]
                for r in res["realizations"]]

    assert rounds(zero) == rounds(pasti)
    assert sum(len(r["rounds"]) for r in zero["realizations"]) >= 4


def test_cli_negative_pollution_limit_is_one_line(graph_file, tmp_path):
    proc = gpucore("amcss", "--graph", graph_file, "--eta", 10, "--pollution-limit", -0.5, check=False)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "--pollution-limit" in proc.stderr


def test_cli_graph_directory_is_named_a_directory(tmp_path):
    proc = gpucore("amcss", "--graph", tmp_path, "--eta", 5, check=False)
    assert proc.returncode == 2 and proc.stderr.strip() == f"gpucore: error: {tmp_path}: is a directory, not a .gcsr file"


WARM_UP_PROBE = """
import json, statistics, sys
from gpucore.amcss import run_amcss
from gpucore.graph import load_graph
graph = load_graph(sys.argv[1])
out = {}
for name, update in (("PASTI", False), ("MERIT", True)):
    kw = dict(model="IC", eta=100, batch=4, eps=0.5, realizations=1, first_realization=1, seed=0, update=update)
    first = run_amcss(graph, **kw)
    again = [run_amcss(graph, **kw, warm_up=False)["realizations"][0]["seconds"] for _ in range(3)]
    out[name] = {"first": first["realizations"][0]["seconds"], "again": statistics.median(again),
                 "warm_up": first["summary"]["warm_up_seconds"], "rounds": len(first["realizations"][0]["rounds"])}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_warm_up_keeps_compilation_out_of_the_realizations(tmp_path):
    """Issue 12 item 1: a default-sized cell (pa3k of config/config.yaml, IC, eta 100, b 4) in a
    fresh process with an empty Numba cache, so that every kernel really compiles: the warm-up takes
    it (``warm_up_seconds``) and the first realization is at most 1.5x (+ 0.25 s) the median of the
    same world run again (the same work, three times). Without the warm-up the first realization of this
    probe took 90 s against 2 s (checked by hand with ``warm_up=False``)."""
    graph = tmp_path / "pa3k.gcsr"
    gpucore("generate", "pa", "--nodes", 3000, "--edges", 15000, "--seed", 3, "--reciprocity", 0.6, "-o", graph)
    proc = subprocess.run([sys.executable, "-c", WARM_UP_PROBE, str(graph)], capture_output=True, text=True,
                          timeout=1200, env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
                                             "GPUCORE_PROGRESS": "0"})
    assert proc.returncode == 0, proc.stderr
    times = json.loads(proc.stdout)
    assert times["PASTI"]["warm_up"] > 5 * times["PASTI"]["first"], times  # the compilation happened there...
    for name, t in times.items():
        assert t["rounds"] >= 3, (name, t)
        # ...not in the first realization: compiling there costs seconds; the 0.25 s of slack absorbs the
        # noise of a busy 2-core machine on realizations of about 0.1 s (CI once saw 0.124 s against 0.081 s)
        assert t["first"] <= 1.5 * t["again"] + 0.25, (name, t)

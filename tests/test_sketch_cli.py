"""gpucore im --algorithm difuser from the command line: result JSON, gpucore verify, errors exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpucore.graph import from_arcs, save_graph
from tests.test_im_cli import gpucore


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    rng = np.random.default_rng(2)
    n = 150
    src, dst = rng.integers(0, n, 900), rng.integers(0, n, 900)
    key = np.unique(src[src != dst] * n + dst[src != dst])
    g = from_arcs(n, key // n, key % n, 0.1)
    path = tmp_path_factory.mktemp("sketch_cli") / "g.gcsr"
    save_graph(g, path)
    return path, g


def test_difuser_result_and_verify(graph_file, tmp_path):
    path, g = graph_file
    out = tmp_path / "out.json"
    proc = gpucore("im", "--graph", path, "--algorithm", "difuser", "--k", 4, "--registers", 256,
                   "--rebuild-threshold", 0.05, "--sampling", "keyed", "--refine", 8, "--backend", "cpu", "--seed", 3,
                   "-o", out)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert res["kind"] == "im" and res["algorithm"] == "DiFuseR" and res["k"] == 4 and res["registers"] == 256
    assert res["sampling"] == "keyed" and res["rebuild_threshold"] == 0.05 and res["run_seed"] == 3
    assert res["refine"] == 8
    assert res["graph"]["sha256"] == g.sha256 and len(res["seed_ids"]) == 4
    report = tmp_path / "verify.json"
    proc = gpucore("verify", out, "--graph", path, "--runs", 4000, "--backend", "cpu", "-o", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(report.read_text())["passed"]


def test_imm_stays_the_default(graph_file):
    path, _g = graph_file
    proc = gpucore("im", "--graph", path, "--k", 2, "--backend", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["algorithm"] == "IMM"


@pytest.mark.parametrize("args,msg", [
    (["--registers", 1000], "--registers 1000: must be a multiple of 32"),
    (["--registers", 2**23], "--registers 8388608"),
    (["--rebuild-threshold", 1.0], "--rebuild-threshold 1.0: must lie in [0, 1)"),
    (["--rebuild-threshold", -0.5], "--rebuild-threshold -0.5"),
    (["--model", "LT"], "--model LT: DiFuseR runs the IC model only"),
    (["--rounds", 2], "--rounds 2"),
    (["--k", 0], "--k 0"),
    (["--refine", -2], "--refine -2"),
    (["--memory-budget", "10KiB"], "DiFuseR needs about"),
])
def test_bad_input_exits_2(graph_file, args, msg, capsys):
    from gpucore.cli import main

    path, _g = graph_file
    base = {"--k": 2}
    code = main(["im", "--graph", str(path), "--algorithm", "difuser", "--backend", "cpu",
                 *[str(x) for kv in base.items() if kv[0] not in args for x in kv], *map(str, args)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("gpucore: error: ") and msg in err and len(err.strip().splitlines()) == 1


def test_an_unknown_mapping_is_one_line():
    from gpucore.errors import GpucoreError
    from gpucore.im.sketch import difuser

    g = from_arcs(4, [0, 1, 2], [1, 2, 3], 0.5)
    with pytest.raises(GpucoreError, match=r"--mapping 'grid': choose one of warp, block"):
        difuser(g, 1, registers=32, backend="cpu", mapping="grid")

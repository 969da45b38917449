"""gpucore im from the command line (subprocess): result JSON, verification, errors exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gpucore.graph import from_arcs, save_graph


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 200
    src, dst = rng.integers(0, n, 1200), rng.integers(0, n, 1200)
    key = np.unique(src[src != dst] * n + dst[src != dst])
    src, dst = key // n, key % n
    indeg = np.bincount(dst, minlength=n)
    g = from_arcs(n, src, dst, 1.0 / indeg[dst])
    path = tmp_path_factory.mktemp("cli") / "g.gcsr"
    save_graph(g, path)
    return path, g


def gpucore(*args):
    return subprocess.run([sys.executable, "-m", "gpucore", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def test_im_writes_the_result(graph_file, tmp_path):
    path, g = graph_file
    out = tmp_path / "out.json"
    proc = gpucore("im", "--graph", path, "--k", 5, "--eps", 0.5, "--model", "IC", "--backend", "cpu",
                   "--verify", 2000, "-o", out)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert res["kind"] == "im" and res["model"] == "IC" and res["k"] == 5 and res["epsilon"] == 0.5
    assert res["graph"] == {"path": str(path), "sha256": g.sha256, "n": g.n, "m": g.m}
    assert len(res["seeds"]) == 5 and res["seeds"] == [int(g.original_id[i]) for i in res["seed_ids"]]
    for key in ("estimated_spread", "theta", "seconds", "lower_bound", "backend", "parameters"):
        assert key in res
    assert res["verification"]["passed"], res["verification"]
    assert res["verification"]["runs"] == 2000


def test_im_lt_mrim_to_stdout(graph_file):
    path, _g = graph_file
    proc = gpucore("im", "--graph", path, "--k", 2, "--eps", 0.5, "--model", "lt", "--rounds", 3,
                   "--backend", "cpu")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["rounds"] == 3 and res["model"] == "LT" and [len(r) for r in res["seeds"]] == [2, 2, 2]


@pytest.mark.parametrize(
    "args,msg",
    [(["--k", 0], "--k 0"), (["--k", 201], "--k 201"), (["--k", 3, "--eps", 1.0], "--eps 1.0"),
     (["--k", 3, "--eps", 0], "--eps 0"), (["--k", 3, "--eps", 0.01, "--memory-budget", "100KiB"], "needs about"),
     (["--k", 3, "--memory-budget", "lots"], "--memory-budget"), (["--k", 3, "--model", "XX"], "--model"),
     (["--k", 3, "--threads", 0], "--threads 0"), (["--k", 3, "--backend", "gpu"], "--backend"), (["--k", 3, "--rounds", 0], "--rounds 0"),
     (["--k", 3, "--sampler", "nope"], "--sampler 'nope': choose one of auto, gim, fused"),
     (["--k", 3, "--sampler", "fused", "--batch-width", 48], "--batch-width 48: choose one of 32, 64, 128, 256"),
     (["--k", 3, "--sampler", "fused", "--batch-width", "wide"], "--batch-width 'wide': expected a whole number"),
     (["--k", 3, "--sampler", "fused", "--order", "metis"], "--order 'metis': choose one of none, rcm, community"),
     (["--k", 3, "--sampler", "fused", "--tail", "pause"], "--tail 'pause': choose one of none, refill"),
     (["--k", 3, "--sampler", "fused", "--evict", "always"], "--evict 'always': the CPU fused sampler evicts nothing"),
     (["--k", 3, "--sampler", "gim", "--evict", "never"], "--evict: an option of --sampler fused"),
     (["--k", 3, "--batch-width", 64], "--batch-width: an option of --sampler fused, not of --sampler auto"),
     (["--k", 3, "--sampler", "gim", "--no-sorted-sources"], "--[no-]sorted-sources: an option of --sampler fused"),
     (["--k", 3, "--order", "rcm", "--tail", "none"], "--order: an option of --sampler fused")],
)
def test_bad_input_exits_2(graph_file, args, msg, capsys):
    from gpucore.cli import main

    path, _g = graph_file
    code = main(["im", "--graph", str(path), "--backend", "cpu", *map(str, args)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("gpucore: error: ") and msg in err and len(err.strip().splitlines()) == 1


def test_im_fused_sampler_options(graph_file, tmp_path):
    from gpucore.im import imm

    path, g = graph_file
    out = tmp_path / "fused.json"
    proc = gpucore("im", "--graph", path, "--k", 4, "--eps", 0.5, "--backend", "cpu", "--sampler", "fused",
                   "--batch-width", 32, "--order", "rcm", "--no-sorted-sources", "--tail", "none", "--evict", "never", "-o", out)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    opts = {"batch_width": 32, "order": "rcm", "sorted_sources": False, "tail": "none"}
    assert res["sampler"] == "fused" and res["sampler_options"] == {**opts, "evict": "never"}
    stats = res["sampler_stats"]
    assert {k: stats[k] for k in opts} == opts and stats["backend"] == "cpu"
    for key in ("edge_reads", "edge_reads_unfused", "occupancy", "levels", "frontier_bytes_peak", "mask_bytes"):
        assert stats[key] > 0, key
    assert set(stats["seconds_by_phase"]) == {"reorder", "roots", "traverse", "compact"}
    want = imm(g, 4, 0.5, "IC", seed=0, backend="cpu")  # the gim sampler: the same sets, the same answer
    for key in ("seeds", "marginal_coverage", "theta", "estimated_spread"):
        assert res[key] == want[key], key


def test_missing_graph(tmp_path):
    proc = gpucore("im", "--graph", tmp_path / "nope.gcsr", "--k", 3)
    assert proc.returncode == 2 and "nope.gcsr" in proc.stderr

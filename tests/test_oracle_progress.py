"""The oracle while it runs: warm-up outside the timed region, batches, the progress bar of
``gpucore verify`` (runs, rate, ETA on a terminal, nothing in logs) and Ctrl-C within a second."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from gpucore.cli import main
from gpucore.graph import from_arcs, load_graph
from gpucore.oracle import api, batches as batches_module, emulated as emulator, spread
from gpucore.oracle.batches import batches
from tests.test_oracle_exact import graph_of, random_arcs

REPO = Path(__file__).resolve().parents[1]


# ---- batches -------------------------------------------------------------------------------------


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_batches_cover_the_runs_in_multiples_of_the_step_and_follow_the_rate(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(batches_module.time, "monotonic", clock)
    seen = []
    for lo, hi in batches(10_000, first=8, step=8, seconds=0.25):
        seen.append((lo, hi))
        clock.now += (hi - lo) * 0.001  # 1 ms per run: batches of 250 runs take 0.25 s
    assert seen[0] == (0, 8) and seen[-1][1] == 10_000
    assert all(a[1] == b[0] for a, b in zip(seen, seen[1:]))
    sizes = [hi - lo for lo, hi in seen[:-1]]
    assert all(s % 8 == 0 for s in sizes)
    assert sizes[:4] == [8, 32, 128, 248]  # at most 4x larger, then the rate's 0.25 s (rounded to the step)
    assert set(sizes[3:]) == {248}


def test_batches_shrink_when_a_batch_is_slow(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(batches_module.time, "monotonic", clock)
    sizes = []
    for lo, hi in batches(100_000, first=4096, step=64, seconds=0.25):
        sizes.append(hi - lo)
        clock.now += (hi - lo) * 0.01  # 10 ms per run
        if len(sizes) == 4:
            break
    assert sizes == [4096, 1024, 256, 64]  # at most 4x smaller per batch, never below the step


def test_batched_counts_equal_one_call(monkeypatch):
    """Batches never change a run: the per-run sizes equal those of one call over every world."""
    rng = np.random.default_rng(3)
    g = graph_of(60, random_arcs(60, 400, rng, 0.05, 0.5))
    monkeypatch.setattr(batches_module, "BATCH_SECONDS", 1e-9)  # every batch is the smallest one
    for model in ("IC", "LT"):
        worlds = api.mc_world_seeds(9, 500)
        whole = api.Simulator(*api._model_arrays(g, model), model, 1).counts(np.array([0, 7]), worlds)
        got = spread(g, [0, 7], model, runs=500, seed=9, backend="cpu", threads=2)
        assert np.array_equal(got.counts, whole)


@pytest.mark.skipif(not emulator.available(), reason="g++ not available for the kernel emulator")
def test_gpu_batches_through_the_emulated_kernels(monkeypatch):
    g = graph_of(40, random_arcs(40, 200, np.random.default_rng(4), 0.05, 0.6))
    monkeypatch.setattr(api, "GPU_FIRST_BATCH", 64)
    monkeypatch.setattr(batches_module, "BATCH_SECONDS", 1e-9)
    engine = emulator.emulator_engine(blocks=3, block=32)
    for model in ("IC", "LT"):
        cpu = spread(g, [0, 5], model, runs=300, seed=2, backend="cpu")
        gpu = spread(g, [0, 5], model, runs=300, seed=2, backend=engine)
        assert gpu.backend == "emulator" and np.array_equal(cpu.counts, gpu.counts)
        assert gpu.warm_up_seconds >= 0


# ---- warm-up -------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_warm_up_graph_has_the_array_types_of_the_real_one(tmp_path, model):
    from gpucore.backend import get_backend
    from gpucore.graph import save_graph

    rng = np.random.default_rng(5)
    mapped = load_graph(save_graph(graph_of(30, random_arcs(30, 200, rng, 0.3, 0.9)), tmp_path / "g.gcsr"))
    for g in (mapped, from_arcs(3, [0, 1], [1, 2], 0.5)):  # read-only memory maps, writable arrays
        tiny = api._TinyGraph(g, model)
        real, small = api._model_arrays(g, model), api._model_arrays(tiny, model)
        for a, b in zip(real, small):
            assert (a.dtype, a.flags.writeable, a.flags.c_contiguous) == (b.dtype, b.flags.writeable,
                                                                            b.flags.c_contiguous)
        on_device = tiny.device_arrays(get_backend("cpu"), api._device_names(model))
        assert all(on_device[k] is arr for k, arr in zip(api._device_names(model), small))  # cpu: no copy

_TIMING_SCRIPT = r"""
import json, sys
from gpucore.graph import load_graph
from gpucore.oracle import spread
g = load_graph(sys.argv[1])
out = []
for model in ("IC", "LT", "IC"):
    r = spread(g, [0, 1, 2], model, runs=400, seed=1, backend="cpu", threads=2)
    out.append({"model": model, "seconds": r.seconds, "warm_up_seconds": r.warm_up_seconds})
print(json.dumps(out))
"""


def test_compiling_is_not_timed(tmp_path):
    """In a fresh process with an empty Numba cache, compiling the kernels takes seconds: it must show
    in ``warm_up_seconds`` and not in ``seconds`` (the first spread's simulation then takes about what
    a repeated one does)."""
    path = tmp_path / "g.gcsr"
    assert main(["generate", "pa", "--nodes", "3000", "--edges", "20000", "--seed", "1", "-o", str(path)]) == 0
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"), PYTHONPATH=str(REPO))
    run = subprocess.run([sys.executable, "-c", _TIMING_SCRIPT, str(path)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    first_ic, lt, again_ic = json.loads(run.stdout)
    assert first_ic["warm_up_seconds"] > 1.0 and lt["warm_up_seconds"] > 0.3  # compiled here, not loaded
    assert first_ic["seconds"] <= 1.5 * again_ic["seconds"] + 0.1, (first_ic, again_ic)  # compiling: seconds
    assert again_ic["warm_up_seconds"] < 0.5


def test_verify_report_keeps_warm_up_apart(tmp_path, capsys):
    g = from_arcs(4, [0, 1, 2], [1, 2, 3], 0.5)
    gpath = tmp_path / "g.gcsr"
    from gpucore.graph import save_graph

    save_graph(g, gpath)
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"kind": "im", "model": "IC", "k": 1, "seed_ids": [0], "estimated_spread": 1.75,
                                  "graph": {"sha256": g.sha256}}))
    assert main(["verify", str(result), "--graph", str(gpath), "--runs", "2000", "--backend", "cpu"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["warm_up_seconds"] >= 0 and report["spread"]["warm_up_seconds"] >= 0
    assert report["seconds"] >= report["spread"]["seconds"]


# ---- gpucore verify: bar and Ctrl-C --------------------------------------------------------------


@pytest.fixture(scope="module")
def long_check(tmp_path_factory):
    """A graph and an IM result whose verification with many runs takes minutes on one thread."""
    d = tmp_path_factory.mktemp("long")
    path = d / "g.gcsr"
    assert main(["generate", "pa", "--nodes", "20000", "--edges", "200000", "--weights", "const:0.08", "--seed", "2",
                 "-o", str(path)]) == 0
    g = load_graph(path)
    result = d / "r.json"
    result.write_text(json.dumps({"kind": "im", "model": "IC", "k": 3, "seed_ids": [0, 1, 2], "estimated_spread": 9.0,
                                  "graph": {"sha256": g.sha256}}))
    return path, result


def _verify(long_check, runs, env=None, **kwargs):
    path, result = long_check
    return subprocess.Popen([sys.executable, "-m", "gpucore", "verify", str(result), "--graph", str(path),
                             "--runs", str(runs), "--backend", "cpu", "--threads", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, **kwargs)


def _progress_env():
    return dict(os.environ, GPUCORE_PROGRESS="1", PYTHONPATH=str(REPO))


def test_verify_shows_runs_rate_and_eta_on_a_terminal(long_check):
    proc = _verify(long_check, 3000, env=_progress_env())
    out, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 1), err
    frames = err.replace("\r", "\n")
    assert "oracle:" in frames and "run/s" in frames, err[-2000:]
    assert any("/3000 [" in line and "<" in line for line in frames.splitlines()), err[-2000:]  # done/total, ETA


def test_verify_is_quiet_in_logs(long_check):
    proc = _verify(long_check, 300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode in (0, 1) and err == "", err
    assert json.loads(out)["runs"] == 300


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
                    reason="this test process ignores SIGINT (started as a background job), and so do its children")
def test_ctrl_c_stops_verify_within_a_second(long_check, tmp_path):
    output = tmp_path / "v.json"
    path, result = long_check
    proc = subprocess.Popen([sys.executable, "-m", "gpucore", "verify", str(result), "--graph", str(path),
                             "--runs", "10000000", "--backend", "cpu", "--threads", "1", "-o", str(output)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_progress_env(), text=True)
    running = threading.Event()
    tail = []

    def watch():
        for chunk in iter(lambda: proc.stderr.read(1), ""):
            tail.append(chunk)
            if "run/s" in "".join(tail[-200:]):
                running.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert running.wait(120), "no progress bar: " + "".join(tail)[-2000:]
        time.sleep(1.0)  # well inside the simulation
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        reaction = time.perf_counter() - sent
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    time.sleep(0.1)
    assert "gpucore: interrupted" in "".join(tail)
    assert reaction < 1.0, f"stopped {reaction:.2f} s after Ctrl-C"
    assert not output.exists()

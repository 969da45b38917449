"""The CLI for graphs, run as users run it: `gpucore preprocess|info|generate` in a subprocess."""

import json
import os
import subprocess
import sys

import pytest


def gpucore(*args, env=None, check=True):
    result = subprocess.run([sys.executable, "-m", "gpucore", *map(str, args)], capture_output=True, text=True,
                            env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"gpucore {args} failed ({result.returncode}): {result.stderr}")
    return result


def test_generate_preprocess_info(tmp_path):
    text = tmp_path / "g.txt"
    gpucore("generate", "pa", "--nodes", 500, "--edges", 4000, "--seed", 3, "-o", text)
    out = tmp_path / "g.gcsr"
    stats = json.loads(gpucore("preprocess", text, "-o", out, "--weights", "trivalency", "--cost", "uniform:1,2").stdout)
    assert stats["n"] == 500 and stats["weights"] == "trivalency"
    info = json.loads(gpucore("info", out, "--verify").stdout)
    assert info["verified"] and info["sha256"] == stats["sha256"] and info["m"] == stats["m"]
    assert info["arrays"]["in_eid"]["length"] == stats["m"]


def test_generate_straight_to_gcsr(tmp_path):
    out = tmp_path / "r.gcsr"
    stats = json.loads(gpucore("generate", "rmat", "--nodes", 1000, "--edges", 8000, "-o", out).stdout)
    assert stats["m"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.gcsr", "r.gcsr.json"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["preprocess", "{missing}", "-o", "{out}"], "no such file"),
        (["preprocess", "{bad}", "-o", "{out}"], "line 2: malformed edge line"),
        (["preprocess", "{good}", "-o", "{out}", "--weights", "const:7"], "outside [0, 1]"),
        (["preprocess", "{good}", "-o", "{out}", "--cost", "const:-1"], "positive"),
        (["info", "{bad}"], "bad magic"),
        (["generate", "pa", "--nodes", "10", "--edges", "5", "-o", "{out}"], "--edges >= 2"),
    ],
)
def test_errors_are_one_line_with_exit_2_and_no_output(tmp_path, args, message):
    (tmp_path / "bad.txt").write_text("1 2\n1 two\n")
    (tmp_path / "good.txt").write_text("1 2\n2 3\n")
    paths = {"missing": tmp_path / "nope.txt", "bad": tmp_path / "bad.txt", "good": tmp_path / "good.txt",
             "out": tmp_path / "o" / "out.gcsr"}
    result = gpucore(*[a.format(**paths) for a in args], check=False)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpucore: error: ") and message in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists() or list((tmp_path / "o").iterdir()) == []


def test_progress_bar_shows_when_forced_and_not_in_logs(tmp_path):
    text = tmp_path / "g.txt"
    gpucore("generate", "pa", "--nodes", 200, "--edges", 2000, "-o", text)
    quiet = gpucore("preprocess", text, "-o", tmp_path / "a.gcsr")
    assert quiet.stderr == ""
    env = dict(os.environ, GPUCORE_PROGRESS="1")
    loud = gpucore("preprocess", text, "-o", tmp_path / "b.gcsr", env=env)
    assert "read g.txt" in loud.stderr

"""CLI edge cases: outputs that cannot be written, outputs that are inputs, altered or malformed graphs,
``--version``. Each is one ``gpucore: error:`` line with exit 2, before anything is computed, and
never a traceback or a crash."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np
import pytest

import gpucore
from gpucore.atomic import write_json
from gpucore.cli import main
from gpucore.errors import GpucoreError
from gpucore.graph import load_graph, preprocess
from gpucore.graph.gcsr import ARRAY_ORDER, read_header, write_gcsr

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """An edge list, its graph, and a (made-up but well-formed) IM result on it."""
    d = tmp_path_factory.mktemp("edges")
    text = d / "g.txt"
    text.write_text("".join(f"{u} {(u * 7 + j) % 40}\n" for u in range(40) for j in (1, 2, 3)))
    graph = d / "g.gcsr"
    preprocess(text, graph, show_progress=False)
    g = load_graph(graph)
    result = d / "r.json"
    result.write_text(json.dumps({"kind": "im", "model": "IC", "k": 2, "seed_ids": [0, 1], "estimated_spread": 3.0,
                                  "graph": {"path": str(graph), "sha256": g.sha256}}))
    return {"text": text, "graph": graph, "result": result, "dir": d}


def _argv(command, files, output):
    return {
        "preprocess": ["preprocess", files["text"], "-o", output],
        "amcss": ["amcss", "--graph", files["graph"], "--eta", "5", "--backend", "cpu", "-o", output],
        "im": ["im", "--graph", files["graph"], "--k", "2", "--backend", "cpu", "-o", output],
        "verify": ["verify", files["result"], "--graph", files["graph"], "--runs", "50", "--backend", "cpu",
                   "-o", output],
    }[command]


def _one_line(capsys, needle):
    err = capsys.readouterr().err
    assert err.startswith("gpucore: error: ") and err.count("\n") == 1 and needle in err, err
    return err


def _unwritable_folder(tmp_path) -> Path:
    """A folder where no file can be made: a read-only one, or (for root, whom permissions do not stop)
    /sys, which refuses everyone."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    for candidate in (folder, Path("/sys")):
        try:
            tempfile.TemporaryFile(dir=candidate).close()
        except OSError:
            return candidate
    pytest.skip("no folder here refuses new files")


COMMANDS = ("preprocess", "amcss", "im", "verify")


@pytest.mark.parametrize("command", COMMANDS)
def test_output_that_is_a_folder(command, files, tmp_path, capsys):
    assert main(list(map(str, _argv(command, files, tmp_path)))) == 2
    _one_line(capsys, f"-o {tmp_path}: is a folder, not a file")


@pytest.mark.parametrize("command", COMMANDS)
def test_output_under_a_file(command, files, tmp_path, capsys):
    blocker = tmp_path / "plain"
    blocker.write_text("a file\n")
    assert main(list(map(str, _argv(command, files, blocker / "sub" / "out.json")))) == 2
    _one_line(capsys, f"{blocker} is a file, not a folder")
    assert blocker.read_text() == "a file\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_output_in_an_unwritable_place(command, files, tmp_path, capsys):
    folder = _unwritable_folder(tmp_path)
    assert main(list(map(str, _argv(command, files, folder / "out.json")))) == 2
    _one_line(capsys, f"cannot write in {folder}")


@pytest.mark.parametrize("command,key", [("preprocess", "text"), ("amcss", "graph"), ("im", "graph"),
                                         ("verify", "result"), ("verify", "graph")])
def test_output_that_is_an_input_is_refused(command, key, files, capsys):
    before = files[key].read_bytes()
    assert main(list(map(str, _argv(command, files, files[key])))) == 2
    _one_line(capsys, f"would overwrite the input {files[key]}")
    assert files[key].read_bytes() == before


def test_output_that_is_an_input_by_another_name(files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(files["dir"])
    alias = tmp_path / "alias.txt"
    alias.symlink_to(files["text"])
    assert main(["preprocess", "g.txt", "-o", str(alias)]) == 2
    _one_line(capsys, "would overwrite the input g.txt")


def test_preprocess_sidecar_may_not_overwrite_the_input(tmp_path, capsys):
    text = tmp_path / "g.gcsr.json"
    text.write_text("0 1\n1 2\n")
    assert main(["preprocess", str(text), "-o", str(tmp_path / "g.gcsr")]) == 2
    _one_line(capsys, "would overwrite the input")
    assert text.read_text() == "0 1\n1 2\n"


def test_late_write_failures_are_one_line_and_never_replace_a_device(tmp_path):
    blocker = tmp_path / "plain"
    blocker.write_text("x")
    with pytest.raises(GpucoreError, match="is a file, not a folder"):
        write_json(blocker / "out.json", {})
    with pytest.raises(GpucoreError, match="is a folder, not a file"):
        write_json(tmp_path, {})
    with pytest.raises(GpucoreError, match="/dev/null: is not a regular file"):
        write_json("/dev/null", {})
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]  # no temporary file left behind


# ---- graphs whose bytes were altered -------------------------------------------------------------


def _gpucore(*args):
    return subprocess.run([sys.executable, "-m", "gpucore", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def _copy_graph(files, tmp_path) -> Path:
    path = tmp_path / "g.gcsr"
    preprocess(files["text"], path, show_progress=False)
    return path


def _solve_and_check(graph: Path, result: Path):
    """gpucore amcss, im and verify on ``graph``: (returncode, stderr) of each."""
    runs = [_gpucore("amcss", "--graph", graph, "--eta", "5", "--backend", "cpu"),
            _gpucore("im", "--graph", graph, "--k", "2", "--backend", "cpu"),
            _gpucore("verify", result, "--graph", graph, "--runs", "50", "--backend", "cpu")]
    return [(r.returncode, r.stderr) for r in runs]


def test_altered_array_bytes_are_refused_before_any_solve(files, tmp_path):
    graph = _copy_graph(files, tmp_path)
    result = tmp_path / "r.json"
    result.write_text(files["result"].read_text().replace(load_graph(files["graph"]).sha256,
                                                          load_graph(graph).sha256))
    offset = read_header(graph)["arrays"]["out_prob"][1]
    data = bytearray(graph.read_bytes())
    data[offset + 1] ^= 0x40  # one probability changes, the header is intact
    graph.write_bytes(bytes(data))
    for rc, err in _solve_and_check(graph, result):
        assert rc == 2 and err.count("\n") == 1 and "content checksum mismatch" in err, err


def test_out_of_range_ids_never_crash(files, tmp_path):
    """A file whose digest is right but whose ids are not (written by a faulty tool): refused, exit 2
    (it used to end in a segmentation fault, exit 139)."""
    graph = _copy_graph(files, tmp_path)
    g = load_graph(graph)
    arrays = {name: np.array(getattr(g, name)) for name in ARRAY_ORDER}
    arrays["in_src"][:] = 10**9
    arrays["out_dst"][:] = 10**9
    digest = write_gcsr(graph, g.n, g.m, arrays, dict(g.meta), directed=g.directed, cost_scale=g.cost_scale)
    result = tmp_path / "r.json"
    result.write_text(files["result"].read_text().replace(load_graph(files["graph"]).sha256, digest))
    for rc, err in _solve_and_check(graph, result):
        assert rc == 2 and "holds vertex id 1000000000, outside [0, 40)" in err, (rc, err)


def test_version():
    run = _gpucore("--version")
    assert run.returncode == 0 and run.stdout.strip() == f"gpucore {gpucore.__version__}"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["version"] == gpucore.__version__

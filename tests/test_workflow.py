"""The Snakemake workflow, run for real (subprocess `snakemake`) in temporary copies of the workflow.

(a) the embedded default configuration end to end (tables, figures, report), (e) a second run does
nothing, rerunning one cell / changing one eta touches only that cell, (b) graphs the tests write
themselves (SNAP-style and KONECT files, with a registry of their own) served by an HTTP server on
127.0.0.1 as a mirror through the download rule, preprocessed, solved, verified, aggregated, (c)
corrupt and truncated downloads, over HTTP and in a mirror folder, fail that dataset with a clear
message and leave no partial file, (d) `snakemake --lint` is clean; plus config validation errors.
(b) and (c) run everywhere; the real SNAP graphs (the ``shared_data`` fixture) get one more run
through the real registry when they are present.
"""

from __future__ import annotations

import bz2
import csv
import functools
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.conftest import manifest_rows

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SNAKEMAKE = BIN / "snakemake"
WORKFLOW_FILES = ("Snakefile", "rules", "workflow", "config", "profiles")

pytestmark = pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed beside this Python")

# registry key of each real SNAP file of the shared_data fixture (config/reference-gpu.yaml's mirror)
REGISTRY_KEYS = {
    "wiki-Vote.txt.gz": "wiki-vote",
    "email-Eu-core.txt.gz": "email-eu-core",
    "soc-Epinions1.txt.gz": "epinions",
    "facebook_combined.txt.gz": "facebook",
    "ca-GrQc.txt.gz": "ca-grqc",
    "nethept.txt.gz": "nethept",
}


def workdir(tmp_path: Path) -> Path:
    """A fresh copy of the workflow (so the repository's results/ stays clean)."""
    wd = tmp_path / "wf"
    wd.mkdir()
    for name in WORKFLOW_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, wd / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, wd / name)
    return wd


def snakemake(wd: Path, *args, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # the `gpucore` of this environment
    env["GPUCORE_PROGRESS"] = "0"
    proc = subprocess.run([str(SNAKEMAKE), *map(str, args)], cwd=wd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc


def job_counts(output: str) -> dict:
    """The 'Job stats' table of a (dry) run: rule -> count."""
    counts, inside = {}, False
    for line in output.splitlines():
        if line.startswith("Job stats:"):
            inside = True
            continue
        if inside:
            m = re.match(r"^([A-Za-z_]\w*)\s+(\d+)$", line.strip())
            if m and m.group(1) != "total":
                counts[m.group(1)] = int(m.group(2))
            elif line.strip().startswith("total"):
                break
    return counts


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_yaml(path: Path, obj) -> Path:
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """`snakemake --cores 2` on the embedded default, then `--report`; shared by the tests below."""
    wd = workdir(tmp_path_factory.mktemp("default"))
    snakemake(wd, "--cores", "2")
    snakemake(wd, "--report", "report.html")
    return wd


# ---------------------------------------------------------------------------------------------
# (a) the embedded default end to end, (e) nothing to do the second time, one cell reruns
# ---------------------------------------------------------------------------------------------


def test_default_end_to_end(default_run):
    wd = default_run
    config = yaml.safe_load((wd / "config" / "config.yaml").read_text())
    amcss = [e for e in config["experiments"] if e["kind"] == "amcss"]
    im = [e for e in config["experiments"] if e["kind"] == "im"]
    n_amcss = sum(len(e["eta"]) * len(e["algorithms"]) for e in amcss)
    n_im = sum(len(e["k"]) * len(e["algorithms"]) for e in im)
    assert n_amcss > 0 and n_im > 0
    out = wd / config["output"]
    assert config["output"] == "results/default"

    for e in amcss:
        for alg in e["algorithms"]:
            for eta in e["eta"]:
                cell = out / f"cells/{e['dataset']}/{e['model']}/{alg}/eta{eta}"
                result = json.loads(cell.with_suffix(".json").read_text())
                verify = json.loads((cell.parent / f"eta{eta}.verify.json").read_text())
                assert result["kind"] == "amcss" and result["eta"] == eta and result["batch"] == e["batch"]
                assert len(result["realizations"]) == config["realizations"]
                assert all(r["reached"] and r["active"] >= eta for r in result["realizations"])
                assert verify["passed"] is True
                assert (out / f"logs/cells/{e['dataset']}/{e['model']}/{alg}/eta{eta}.log").exists()
                assert (out / f"benchmarks/cells/{e['dataset']}/{e['model']}/{alg}/eta{eta}.tsv").exists()

    tables = out / "tables"
    for stem in ("datasets", "amcss_summary", "im_summary"):
        for ext in ("csv", "md", "tex", "html"):
            assert (tables / f"{stem}.{ext}").stat().st_size > 0, f"{stem}.{ext}"
    summary = read_csv(tables / "amcss_summary.csv")
    assert len(summary) == n_amcss
    for row in summary:
        assert row["verified"] == "True" and row["reached_all"] == "True"
        assert float(row["cost_norm_mean"]) > 0 and float(row["time_mean"]) > 0
        if row["algorithm"] == "pasti":
            assert float(row["speedup"]) == pytest.approx(1.0)
    realizations = read_csv(tables / "amcss_realizations.csv")
    assert len(realizations) == n_amcss * config["realizations"]
    sidecars = {d: json.loads((wd / f"resources/graphs/{d}.gcsr.json").read_text()) for d in config["datasets"]}
    for row in realizations:  # normalised cost = raw cost / the graph's cost scale
        assert float(row["cost_norm"]) == pytest.approx(
            float(row["total_cost"]) / sidecars[row["dataset"]]["cost_scale"], rel=1e-9)
    im_rows = read_csv(tables / "im_summary.csv")
    assert len(im_rows) == n_im and all(r["verified"] == "True" for r in im_rows)
    # a multi-round IM cell (rounds > 1) passes its verify rule: the oracle's multi-round check
    multi = [(e, alg) for e in im for alg in e["algorithms"] if config["algorithms"][alg].get("rounds", 1) > 1]
    assert multi, "the default config has a multi-round IM cell"
    for e, alg in multi:
        for k in e["k"]:
            cell = out / f"cells/{e['dataset']}/{e['model']}/{alg}/k{k}"
            result = json.loads(cell.with_suffix(".json").read_text())
            verify = json.loads((cell.parent / f"k{k}.verify.json").read_text())
            rounds = config["algorithms"][alg]["rounds"]
            assert result["rounds"] == rounds and [len(s) for s in result["seed_ids"]] == [k] * rounds
            assert verify["passed"] is True and verify["checked"] == "mrim" and verify["rounds"] == rounds
    assert {r["rounds"] for r in im_rows} == {"1", str(config["algorithms"][multi[0][1]]["rounds"])}
    assert "\\begin{tabular}" in (tables / "amcss_summary.tex").read_text()
    assert (tables / "amcss_summary.md").read_text().count("\n| ") == n_amcss + 1

    figures = out / "figures"
    models = sorted({e["model"] for e in amcss})
    expected = [f"amcss_{f}_{m}.png" for f in ("cost", "time", "breakdown") for m in models]
    expected.append("amcss_verification.png")
    for name in expected:
        assert (figures / name).read_bytes()[:4] == b"\x89PNG", name

    report = (wd / "report.html").read_text()
    for caption in ("AMCSS summary: one row per cell", "Seed cost vs eta", "Running time vs eta",
                    "Time breakdown", "Verification: one row per AMCSS cell", "IM summary",
                    "Datasets: every graph used", "The configuration of this run"):
        assert caption in report, caption
    merged = yaml.safe_load((out / "config.yaml").read_text())
    assert merged["experiments"] == config["experiments"] and merged["output"] == config["output"]


def test_configurations_write_their_own_output_trees(default_run, tmp_path):
    """Another configuration run in the same folder writes only under its own `output`: the default's
    tree is left as it was (same files, same bytes), and the default still has nothing to do."""
    wd = default_run
    tree = wd / "results" / "default"
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file() and "logs" not in p.parts}
    other = {"output": "results/other", "realizations": 1, "verify": {"runs": 100}, "experiments": [
        {"kind": "amcss", "dataset": "pa2k", "model": "IC", "batch": 4, "eta": [100], "algorithms": ["merit"]},
        {"kind": "im", "dataset": "pa2k", "model": "IC", "k": [5], "algorithms": ["imm"]}]}
    snakemake(wd, "--cores", "2", "--configfile", write_yaml(tmp_path / "other.yaml", other))
    after = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file() and "logs" not in p.parts}
    assert after == before
    mine = wd / "results" / "other"
    assert read_csv(mine / "tables" / "amcss_summary.csv")[0]["realizations"] == "1"
    assert (mine / "cells/pa2k/IC/merit/eta100.verify.json").exists() and (mine / "figures").is_dir()
    assert yaml.safe_load((mine / "config.yaml").read_text())["output"] == "results/other"
    proc = snakemake(wd, "--cores", "2", "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_every_shipped_configuration_has_its_own_tree():
    outputs = {}
    for path in sorted((REPO / "config").glob("*.yaml")):
        config = yaml.safe_load(path.read_text()) or {}
        if "experiments" in config:
            outputs[path.name] = config.get("output")
    assert outputs["config.yaml"] == "results/default"
    assert all(outputs.values()) and len(set(outputs.values())) == len(outputs), outputs


def test_second_run_does_nothing(default_run):
    proc = snakemake(default_run, "--cores", "2")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    assert job_counts(proc.stdout + proc.stderr) == {}


def test_changing_one_eta_reruns_only_that_cell(default_run, tmp_path):
    wd = default_run
    config = yaml.safe_load((wd / "config" / "config.yaml").read_text())
    experiments = config["experiments"]
    first = next(e for e in experiments if e["kind"] == "amcss")
    first["eta"] = first["eta"][:-1] + [first["eta"][-1] + 50]
    override = write_yaml(tmp_path / "override.yaml", {"experiments": experiments})
    proc = snakemake(wd, "-n", "--cores", "2", "--configfile", override)
    counts = job_counts(proc.stdout)
    n_alg = len(first["algorithms"])
    assert counts.get("solve_amcss") == n_alg and counts.get("verify") == n_alg
    assert "solve_im" not in counts and "preprocess" not in counts and "generate" not in counts
    assert counts.get("amcss_tables") == 1


def test_single_cell_target_and_forcerun(default_run):
    wd = default_run
    # an eta that is not in the config, of a configured experiment: only that cell is built
    proc = snakemake(wd, "-n", "--cores", "2", "results/default/cells/pa2k/IC/merit/eta150.verify.json")
    assert job_counts(proc.stdout) == {"solve_amcss": 1, "verify": 1}
    proc = snakemake(wd, "results/default/cells/pa2k/IC/merit/eta100.verify.json", "-n", "-p", "--cores", "2",
                     "--forcerun", "results/default/cells/pa2k/IC/merit/eta100.json", "--config", "realizations=1")
    assert job_counts(proc.stdout) == {"solve_amcss": 1, "verify": 1}
    assert "--realizations 1" in proc.stdout
    # a cell of an experiment that does not exist is a clear error
    proc = snakemake(wd, "-n", "--cores", "2", "results/default/cells/pa2k/IC/gamcss/eta100.json", check=False)
    assert proc.returncode != 0 and "no amcss experiment in the config runs algorithm 'gamcss'" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------------
# (d) lint, config validation, paper configs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("configfile", [None, "config/merit.yaml", "config/gim.yaml", "config/reference-gpu.yaml"])
def test_lint_is_clean(tmp_path, configfile):
    wd = workdir(tmp_path)
    if configfile and not (wd / configfile).exists():
        pytest.skip(f"{configfile} not present")
    args = ["--lint"] + (["--configfile", configfile] if configfile else [])
    proc = snakemake(wd, *args)
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr


@pytest.mark.parametrize("configfiles", ["config/merit.yaml", "config/gim.yaml", "config/reference-gpu.yaml"])
def test_paper_configs_validate_and_plan(tmp_path, configfiles):
    wd = workdir(tmp_path)
    files = configfiles.split()
    if not all((wd / f).exists() for f in files):
        pytest.skip(f"{configfiles} not present")
    proc = snakemake(wd, "-n", "-p", "--cores", "16", "--configfile", *files)
    counts = job_counts(proc.stdout)
    config = yaml.safe_load((wd / files[-1]).read_text())
    # the plan says what it will download and store before anything runs
    notice = re.search(r"gpucore: this configuration needs (\d+) graph\(s\).*? ([0-9.]+) (GB|MB) of disk in all",
                       proc.stderr)
    assert notice and int(notice.group(1)) == len({e["dataset"] for e in config["experiments"]}), proc.stderr[:2000]
    if configfiles == "config/merit.yaml":
        assert notice.group(3) == "GB" and float(notice.group(2)) >= 2, notice.group(0)
    cells = sum(len(e.get("eta", e.get("k", []))) * len(e["algorithms"]) for e in config["experiments"])
    assert counts.get("solve_amcss", 0) + counts.get("solve_im", 0) == cells
    assert counts.get("verify") == cells
    assert "generate" not in counts  # paper configs use real graphs only
    # an algorithm's own threads (PASTI-16, the 1-thread IMM baseline) reach its solves; others take --cores
    fixed = {name: a["threads"] for name, a in (config.get("algorithms") or {}).items() if "threads" in a}
    assert fixed, "each paper config fixes the threads of its CPU baseline"
    for name, threads in fixed.items():
        commands = [line for line in proc.stdout.splitlines()
                    if f"/{name}/" in line and ("gpucore amcss " in line or "gpucore im " in line)]
        assert commands and all(f"--threads {threads} " in line for line in commands), name


def test_merit_config_matches_the_paper(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "merit.yaml").read_text())
    assert cfg["eps"] == 0.5 and cfg["realizations"] == 10
    cells = {(e["dataset"], e["model"]): e for e in cfg["experiments"]}
    assert set(cells) == {(d, m) for d in ("dblp", "youtube", "flickr", "livejournal") for m in ("IC", "LT")}
    assert cells["dblp", "IC"]["batch"] == 4 and cells["youtube", "IC"]["batch"] == 16
    assert all(cells[d, "LT"]["batch"] == 4 for d in ("dblp", "youtube", "flickr", "livejournal"))
    assert cells["livejournal", "IC"]["eta"] == [5000, 10000, 15000, 20000, 25000]
    assert cells["flickr", "LT"]["eta"] == [2000, 3000, 4000, 5000, 6000]
    assert all(set(e["algorithms"]) >= {"merit", "pasti"} for e in cfg["experiments"])


@pytest.mark.parametrize("override,message", [
    ("backend=gpu", "config: backend: 'gpu' is not one of ['cpu', 'cuda', 'auto']"),
    ("realizations=0", "config: realizations: 0 is less than the minimum of 1"),
    ("realisations=3", "config: unknown key 'realisations' (known keys here: aggregate, algorithms, backend,"),
])
def test_bad_config_is_rejected_by_the_schema_in_one_line(tmp_path, override, message):
    wd = workdir(tmp_path)
    proc = snakemake(wd, "-n", "--config", override, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and message in out, out[-3000:]
    assert "Failed validating" not in out and "$schema" not in out and len(out.splitlines()) < 12, out[-3000:]


def test_bad_registry_entry_is_one_line(tmp_path):
    wd = workdir(tmp_path)
    registry = yaml.safe_load((wd / "config" / "datasets.yaml").read_text())
    registry["dblp"]["nodes"] = 5
    write_yaml(wd / "config" / "bad-registry.yaml", registry)
    proc = snakemake(wd, "-n", "--config", "registry=config/bad-registry.yaml", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "registry config/bad-registry.yaml: dblp: unknown key 'nodes'" in out, out[-3000:]
    assert "Failed validating" not in out


def test_unknown_dataset_and_wrong_algorithm_kind(tmp_path):
    wd = workdir(tmp_path)
    bad = write_yaml(tmp_path / "bad.yaml", {"experiments": [
        {"kind": "amcss", "dataset": "nosuchgraph", "model": "IC", "batch": 2, "eta": [10], "algorithms": ["merit"]}]})
    proc = snakemake(wd, "-n", "--configfile", bad, check=False)
    assert proc.returncode != 0 and "dataset 'nosuchgraph' is neither in config `datasets` nor in the registry" in \
        proc.stdout + proc.stderr
    bad = write_yaml(tmp_path / "bad2.yaml", {"experiments": [
        {"kind": "im", "dataset": "pa2k", "model": "IC", "k": [5], "algorithms": ["merit"]}]})
    proc = snakemake(wd, "-n", "--configfile", bad, check=False)
    assert proc.returncode != 0 and "algorithm 'merit' runs `gpucore amcss`, not a im cell" in proc.stdout + proc.stderr
    bad = write_yaml(tmp_path / "bad3.yaml", {"algorithms": {"pasti": {"command": "amcss", "update": False, "rounds": 3}}})
    proc = snakemake(wd, "-n", "--configfile", bad, check=False)
    assert proc.returncode != 0 and "algorithms.pasti.rounds: only an im algorithm has rounds" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------------
# (b) graphs of our own through an HTTP mirror; (c) corrupt / truncated downloads
# ---------------------------------------------------------------------------------------------


def _edge_lines(rng, ids, lines, self_loops, duplicates):
    """Random edge lines over ``ids`` with some self-loops and repeated lines (as real files have)."""
    src, dst = rng.choice(ids, lines), rng.choice(ids, lines)
    src[:self_loops] = dst[:self_loops]
    src[-duplicates:], dst[-duplicates:] = src[:duplicates][::-1], dst[:duplicates][::-1]
    return src, dst


def _expected(src, dst, directed):
    """n = distinct ids on edge lines; m = distinct arcs without self-loops (both arcs of an undirected edge)."""
    keep = src != dst
    pairs = np.stack([src[keep], dst[keep]], axis=1)
    if not directed:
        pairs = np.concatenate([pairs, pairs[:, ::-1]])
    return int(np.unique(np.concatenate([src, dst])).size), int(np.unique(pairs, axis=0).shape[0])


@pytest.fixture(scope="module")
def toy_mirror(tmp_path_factory):
    """Three graph files the test writes itself, as the origins serve them (a SNAP .txt.gz with a
    comment header, an undirected one listing each pair once, a KONECT .tar.bz2), and a registry of
    their own (config/test-registry.yaml: origin URLs that are never contacted, SHA-256, exact n, m)."""
    folder = tmp_path_factory.mktemp("toy-mirror")
    rng = np.random.default_rng(2024)
    ids = rng.choice(10**7, 600, replace=False)  # sparse original ids: preprocessing relabels them
    graphs, registry = {}, {}
    for key, directed, fmt in (("toy-directed", True, "snap"), ("toy-undirected", False, "snap"),
                               ("toy-konect", True, "konect-tar")):
        src, dst = _edge_lines(rng, ids[: 400 if directed else 300], 2400, 12, 30)
        if not directed:  # each unordered pair listed once, as SNAP's undirected files do
            lo, hi = np.minimum(src, dst), np.maximum(src, dst)
            pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
            src, dst = pairs[:, 0], pairs[:, 1]
        text = "".join(f"{u}\t{v}\n" for u, v in zip(src, dst))
        if fmt == "snap":
            file = f"{key}.txt.gz"
            data = gzip.compress(f"# {key}: written by tests/test_workflow.py\n{text}".encode(), mtime=0)
        else:
            file = f"download.tsv.{key}.tar.bz2"
            member = f"% asym unweighted\n{text.replace(chr(9), ' ')}".encode()
            raw = io.BytesIO()
            with tarfile.open(fileobj=raw, mode="w") as tar:
                info = tarfile.TarInfo(f"{key}/out.{key}")
                info.size = len(member)
                tar.addfile(info, io.BytesIO(member))
            data = bz2.compress(raw.getvalue())
        (folder / file).write_bytes(data)
        n, m = _expected(src, dst, directed)
        graphs[key] = {"file": file, "sha256": hashlib.sha256(data).hexdigest(), "n": n, "m": m}
        registry[key] = {"title": key, "url": f"https://origin.invalid/graphs/{file}", "format": fmt,
                         "directed": directed, "n": n, "m": m, "exact": True, "sha256": graphs[key]["sha256"],
                         "sha256_scope": "origin"}
    return folder, graphs, registry


def toy_workdir(tmp_path: Path, registry: dict) -> Path:
    wd = workdir(tmp_path)
    write_yaml(wd / "config" / "test-registry.yaml", registry)
    return wd


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_mirror():
    """serve(directory) -> base URL of an HTTP server on 127.0.0.1 (random free port)."""
    servers = []

    def serve(directory: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield serve
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def test_own_graphs_through_http_mirror(toy_mirror, http_mirror, tmp_path):
    folder, graphs, registry = toy_mirror
    wd = toy_workdir(tmp_path, registry)
    url = http_mirror(folder)
    config = {
        "registry": "config/test-registry.yaml",
        "mirror": url + "/",
        "realizations": 1,
        "verify": {"runs": 300},
        "experiments": [
            {"kind": "amcss", "dataset": key, "model": "IC", "batch": 4, "eta": [40], "algorithms": ["merit"]}
            for key in graphs
        ] + [
            {"kind": "amcss", "dataset": "toy-konect", "model": "LT", "batch": 4, "eta": [40],
             "algorithms": ["merit", "pasti"]},
            {"kind": "im", "dataset": "toy-undirected", "model": "IC", "k": [3], "algorithms": ["imm"]},
        ],
    }
    snakemake(wd, "--cores", "2", "--configfile", write_yaml(tmp_path / "mirror.yaml", config))

    for key, g in graphs.items():
        raw = wd / "resources" / "raw" / key / g["file"]
        assert hashlib.sha256(raw.read_bytes()).hexdigest() == g["sha256"]
        assert not raw.with_name(g["file"] + ".part").exists()
        log = (wd / "logs" / "download" / key / f"{g['file']}.log").read_text()
        assert url in log and "checked" in log and "not checked" not in log
        stats = json.loads((wd / "resources" / "graphs" / f"{key}.gcsr.json").read_text())
        assert (stats["n"], stats["m"]) == (g["n"], g["m"])
    assert not (wd / "resources" / "extracted" / "toy-konect.txt").exists()  # temp(): removed after use
    datasets = {r["dataset"]: r for r in read_csv(wd / "results" / "default" / "tables" / "datasets.csv")}
    assert set(datasets) == set(graphs)
    assert all(r["size_check"] == "match (exact)" for r in datasets.values())
    # (the table compares with the preprocessed file's digest: an archive's is checked by the download only)
    assert all(datasets[key]["sha256_check"] == "match" for key in ("toy-directed", "toy-undirected"))
    summary = read_csv(wd / "results" / "default" / "tables" / "amcss_summary.csv")
    assert len(summary) == 5 and all(r["verified"] == "True" for r in summary)
    im = read_csv(wd / "results" / "default" / "tables" / "im_summary.csv")
    assert len(im) == 1 and im[0]["verified"] == "True"
    # second run: nothing to do, even though the mirror's port would differ next time
    proc = snakemake(wd, "--cores", "2", "--configfile", tmp_path / "mirror.yaml")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def _corrupt(data: bytes, at: int) -> bytes:
    bad = bytearray(data)
    bad[at] ^= 0x40
    return bytes(bad)


def _assert_failed_cleanly(wd: Path, out: str, key: str, file: str) -> None:
    log = (wd / "logs" / "download" / key / f"{file}.log").read_text()
    assert f"dataset '{key}'" in log and "sha256 mismatch" in log and "nothing was kept" in log
    assert f"download failed: dataset '{key}'" in out
    raw = wd / "resources" / "raw" / key
    assert not raw.exists() or list(raw.iterdir()) == [], f"left behind: {list(raw.iterdir())}"
    assert not (wd / "resources" / "graphs" / f"{key}.gcsr").exists()


def test_corrupt_and_truncated_downloads_fail_cleanly(toy_mirror, http_mirror, tmp_path):
    folder, graphs, registry = toy_mirror
    served = tmp_path / "served"
    served.mkdir()
    bad = graphs["toy-directed"]["file"]
    (served / bad).write_bytes(_corrupt((folder / bad).read_bytes(), 40))
    short = graphs["toy-undirected"]["file"]
    (served / short).write_bytes((folder / short).read_bytes()[:-100])
    shutil.copy2(folder / graphs["toy-konect"]["file"], served)
    wd = toy_workdir(tmp_path, registry)
    url = http_mirror(served)
    proc = snakemake(wd, *(f"resources/graphs/{key}.gcsr" for key in graphs), "--cores", "2", "--keep-going",
                     "--config", "registry=config/test-registry.yaml", f"mirror={url}", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    _assert_failed_cleanly(wd, out, "toy-directed", bad)
    _assert_failed_cleanly(wd, out, "toy-undirected", short)
    # the good dataset of the same run went through (--keep-going), extracted from its archive
    assert (wd / "resources" / "graphs" / "toy-konect.gcsr").exists()


def test_corrupt_file_in_a_local_mirror_directory(toy_mirror, tmp_path):
    folder, graphs, registry = toy_mirror
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    file = graphs["toy-undirected"]["file"]
    (mirror / file).write_bytes(_corrupt((folder / file).read_bytes(), 100))
    wd = toy_workdir(tmp_path, registry)
    proc = snakemake(wd, "resources/graphs/toy-undirected.gcsr", "--cores", "1", "--config",
                     "registry=config/test-registry.yaml", f"mirror={mirror}", check=False)
    assert proc.returncode != 0
    _assert_failed_cleanly(wd, proc.stdout + proc.stderr, "toy-undirected", file)


def test_origin_file_with_other_bytes_rebuilds_the_reference_graph(toy_mirror, http_mirror, tmp_path):
    """A registry entry whose `sha256` is a curated copy's (scope mirror) and whose `arcs_sha256` is that
    copy's graph: the origin's file (other compression, line order and header, repeated lines) is not
    byte-checked but its graph is, and it preprocesses to the reference .gcsr; a file holding another
    graph fails preprocessing with a message naming both digests."""
    from gpucore.graph import preprocess

    folder, graphs, registry = toy_mirror
    key, curated = "toy-directed", folder / graphs["toy-directed"]["file"]
    reference = preprocess(curated, tmp_path / "reference.gcsr", undirected=False, show_progress=False)
    lines = gzip.decompress(curated.read_bytes()).decode().splitlines()[1:]
    rng = np.random.default_rng(7)
    origin_lines = list(rng.permutation(lines)) + lines[:25]
    served = {"same": "# SNAP header\n" + "\n".join(origin_lines) + "\n",
              "other": "\n".join(lines[:100] + lines[103:]) + "\n"}
    for case, text in served.items():
        site = tmp_path / f"site-{case}"
        site.mkdir()
        (site / "toy.txt.bz2").write_bytes(bz2.compress(text.encode()))
        url = http_mirror(site)
        entry = dict(registry[key], url=f"{url}/toy.txt.bz2", sha256_scope="mirror",
                     arcs_sha256=reference["arcs_sha256"])
        (tmp_path / case).mkdir()
        wd = toy_workdir(tmp_path / case, {key: entry})
        proc = snakemake(wd, f"resources/graphs/{key}.gcsr", "--cores", "1", "--config",
                         "registry=config/test-registry.yaml", check=False)
        log = (wd / "logs" / "preprocess" / f"{key}.log").read_text()
        if case == "same":
            assert proc.returncode == 0, proc.stderr[-3000:]
            stats = json.loads((wd / "resources" / "graphs" / f"{key}.gcsr.json").read_text())
            assert stats["sha256"] == reference["sha256"] and "ok: arc set = the reference copy's" in log
        else:
            assert proc.returncode != 0 and "this file holds another graph than the reference copy" in log
            assert reference["arcs_sha256"][:16] in log
            assert not (wd / "resources" / "graphs" / f"{key}.gcsr").exists()


def test_reference_config_works_from_its_mirror(shared_data, tmp_path):
    """config/reference-gpu.yaml from a folder holding the files it lists: every download is checked."""
    wd = workdir(tmp_path)
    config = yaml.safe_load((wd / "config" / "reference-gpu.yaml").read_text())
    registry = yaml.safe_load((wd / "config" / "datasets.yaml").read_text())
    raw = [f"resources/raw/{key}/{registry[key].get('file') or registry[key]['url'].rsplit('/', 1)[-1]}"
           for key in sorted({e["dataset"] for e in config["experiments"]})]
    snakemake(wd, *raw, "--cores", "2", "--configfile", "config/reference-gpu.yaml", "--config",
              f"mirror={shared_data}")
    for path in raw:
        log = (wd / "logs" / "download" / Path(path).relative_to("resources/raw")).with_suffix(
            Path(path).suffix + ".log").read_text()
        assert (wd / path).is_file() and "checked" in log and "not checked" not in log, path


@pytest.mark.slow
def test_real_snap_graphs_through_http_mirror(shared_data, http_mirror, tmp_path):
    """The real registry entries of the six small SNAP graphs, from a mirror of the real files."""
    rows = {r["file"]: r for r in manifest_rows()}
    assert set(rows) == set(REGISTRY_KEYS), "MANIFEST.md and the registry disagree on the local graphs"
    wd = workdir(tmp_path)
    url = http_mirror(shared_data)
    config = {
        "mirror": url + "/",
        "realizations": 1,
        "verify": {"runs": 300},
        "experiments": [
            {"kind": "amcss", "dataset": k, "model": "IC", "batch": 16, "eta": [50], "algorithms": ["merit"]}
            for k in REGISTRY_KEYS.values()
        ],
    }
    snakemake(wd, "--cores", "2", "--configfile", write_yaml(tmp_path / "mirror.yaml", config))
    registry = yaml.safe_load((wd / "config" / "datasets.yaml").read_text())
    for file, key in REGISTRY_KEYS.items():
        raw = wd / "resources" / "raw" / key / file
        assert hashlib.sha256(raw.read_bytes()).hexdigest() == rows[file]["sha256"] == registry[key]["sha256"]
        stats = json.loads((wd / "resources" / "graphs" / f"{key}.gcsr.json").read_text())
        assert (stats["n"], stats["m"]) == (rows[file]["nodes"], rows[file]["arcs"])
    summary = read_csv(wd / "results" / "default" / "tables" / "amcss_summary.csv")
    assert len(summary) == 6 and all(r["verified"] == "True" for r in summary)


def test_failed_verification_fails_the_workflow(tmp_path):
    wd = workdir(tmp_path)
    cell = "results/default/cells/pa2k/IC/merit/eta30"
    snakemake(wd, f"{cell}.verify.json", "--cores", "2", "--config", "realizations=1")
    result = json.loads((wd / f"{cell}.json").read_text())
    assert json.loads((wd / f"{cell}.verify.json").read_text())["passed"] is True
    result["realizations"][0]["rounds"][0]["newly_active"] += 1  # a solver log that the world contradicts
    (wd / f"{cell}.json").write_text(json.dumps(result))
    proc = snakemake(wd, f"{cell}.verify.json", "--cores", "2", "--config", "realizations=1", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "verification failed" in out
    assert job_counts(out) == {"verify": 1}  # the result is newer than its verification: only verify reruns
    assert not (wd / f"{cell}.verify.json").exists()
    kept = json.loads((wd / "results/default/logs/cells/pa2k/IC/merit/eta30.verify.log.json").read_text())
    assert kept["passed"] is False


def test_report_files_are_ignored_by_git(tmp_path):
    """`snakemake --report NAME` at the top of the checkout, whatever NAME, never shows as a new file."""
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    names = ["report.html", "merit-report.html", "gim_report.html", "report.zip", "reference-gpu.html"]
    proc = subprocess.run(["git", "check-ignore", "--no-index", *names], cwd=REPO, capture_output=True, text=True)
    assert sorted(proc.stdout.split()) == sorted(names)
    kept = "results/reference/workflow-h100/report.html"
    assert subprocess.run(["git", "check-ignore", "--no-index", "-q", kept], cwd=REPO).returncode == 1

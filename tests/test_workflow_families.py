"""Every family of the workflow run for real (subprocess `snakemake`, temporary copies of the
workflow, as tests/test_workflow.py does), each in a CPU-sized version of its paper configuration:
the algorithms of config/sds.yaml, config/fuseim.yaml and config/difuser.yaml on small generated
graphs, every cell verified by the oracle, the tables and figures each configuration promises; a
tampered sds result fails its verification; a `gpus: 2` IM cell runs under MPICH's `mpiexec -n 2`
and says `ranks: 2`; the paper configurations validate, plan and pass `snakemake --lint`; the
algorithm keys of the new families are checked with one-line messages."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.test_workflow import BIN, REPO, SNAKEMAKE, job_counts, read_csv, snakemake, workdir, write_yaml

pytestmark = pytest.mark.skipif(not SNAKEMAKE.exists(), reason="snakemake is not installed beside this Python")


def paper(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())


def on_cpu(algorithms: dict, keep) -> dict:
    """The paper configuration's algorithms named in `keep`, each on the CPU backend."""
    return {name: {**algorithms[name], "backend": "cpu"} for name in keep}


# ---------------------------------------------------------------------------------------------
# structural diversity search (config/sds.yaml)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sds_run(tmp_path_factory):
    """config/sds.yaml's algorithms and experiment shape (Table 2 on two graphs, a k sweep and a t
    sweep of truss), CPU-sized: generated graphs of 1,500 and 2,000 vertices."""
    tmp = tmp_path_factory.mktemp("sds")
    wd = workdir(tmp)
    cfg = paper("sds")
    small = {
        "output": "results/sds-cpu",
        "backend": "cpu",
        "verify": {"runs": 100},
        "datasets": {"rmat-small": {"generate": {"kind": "rmat", "nodes": 1500, "edges": 9000, "seed": 1,
                                                 "abcd": "0.57,0.19,0.19,0.05"}},
                     "pa-small": {"generate": {"kind": "pa", "nodes": 2000, "edges": 12000, "seed": 1}}},
        "algorithms": on_cpu(cfg["algorithms"], ("gpu", "cpu1")),
        "aggregate": {"baseline": "cpu1"},
        "experiments": [
            {"kind": "sds", "dataset": "rmat-small", "model": ["comp", "core", "truss"], "k": [4], "t": [10],
             "algorithms": ["gpu", "cpu1"]},
            {"kind": "sds", "dataset": "pa-small", "model": ["comp", "truss"], "k": [4], "t": [10],
             "algorithms": ["gpu"]},
            {"kind": "sds", "dataset": "rmat-small", "model": "truss", "k": [2, 3, 4], "t": [10],
             "algorithms": ["gpu"]},
            {"kind": "sds", "dataset": "rmat-small", "model": "truss", "k": [3], "t": [5, 10, 20],
             "algorithms": ["gpu"]},
        ],
    }
    config = write_yaml(tmp / "sds-cpu.yaml", small)
    snakemake(wd, "--cores", "2", "--configfile", "config/sds.yaml", config)
    return wd, small, config


@pytest.mark.slow
def test_sds_cells_tables_and_figures(sds_run):
    wd, small, _ = sds_run
    out = wd / small["output"]
    cells = read_csv(out / "tables" / "sds_cells.csv")
    expected = {("rmat-small", m, "4", "10", a) for m in ("comp", "core", "truss") for a in ("gpu", "cpu1")}
    expected |= {("pa-small", m, "4", "10", "gpu") for m in ("comp", "truss")}
    expected |= {("rmat-small", "truss", k, "10", "gpu") for k in ("2", "3")}
    expected |= {("rmat-small", "truss", "3", t, "gpu") for t in ("5", "20")}
    assert {(r["dataset"], r["model"], r["k"], r["t"], r["algorithm"]) for r in cells} == expected
    assert all(r["verified"] == "True" and r["backend"] == "cpu" for r in cells)
    for r in cells:  # the cell file the workflow wrote, under its documented path, and its verification
        path = out / f"cells/{r['dataset']}/sds-{r['model']}/{r['algorithm']}/k{r['k']}-t{r['t']}"
        result = json.loads(path.with_suffix(".json").read_text())
        assert result["kind"] == "sds" and len(result["top"]) == int(r["t"])
        assert json.loads((path.parent / f"{path.name}.verify.json").read_text())["checked"] == "sds"
    # CPU-1 ran with one thread (the algorithm's own), the others with the job's
    one = json.loads((out / "cells/rmat-small/sds-comp/cpu1/k4-t10.json").read_text())
    assert one["backend"]["numba_threads"] == 1
    summary = read_csv(out / "tables" / "sds_summary.csv")
    labels = [f"{cfg['label']} (s)" for cfg in small["algorithms"].values()]
    assert list(summary[0]) == ["model", "dataset", "k", "t", *labels, "speedup", "verified"]
    assert [r["model"] for r in summary][:2] == ["comp", "comp"] and summary[-1]["model"] == "truss"
    table2 = {(r["model"], r["dataset"], r["k"], r["t"]): r for r in summary}
    for model in ("comp", "core", "truss"):
        row = table2[model, "rmat-small", "4", "10"]
        times = [float(row[lab]) for lab in labels]
        assert float(row["speedup"]) == pytest.approx(times[1] / min(times))  # sequential / fastest
    assert table2["comp", "pa-small", "4", "10"]["speedup"] == ""  # no sequential run there
    assert "Structural diversity search" in (out / "tables" / "sds_summary.md").read_text()
    for name in ("sds_time_k.png", "sds_time_t.png"):
        assert (out / "figures" / name).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_tampered_sds_result_fails_its_verification(sds_run):
    wd, small, config = sds_run
    cell = f"{small['output']}/cells/pa-small/sds-truss/gpu/k4-t10"
    result = json.loads((wd / f"{cell}.json").read_text())
    result["top"][0]["score"] += 1  # a score the graph does not give
    (wd / f"{cell}.json").write_text(json.dumps(result))
    proc = snakemake(wd, f"{cell}.verify.json", "--cores", "2", "--configfile", "config/sds.yaml", config, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "verification failed" in out
    assert job_counts(out) == {"verify": 1}
    assert not (wd / f"{cell}.verify.json").exists()
    kept = json.loads((wd / f"{small['output']}/logs/cells/pa-small/sds-truss/gpu/k4-t10.verify.log.json").read_text())
    assert kept["passed"] is False and kept["failures"]


# ---------------------------------------------------------------------------------------------
# FuseIM's p-sweep (config/fuseim.yaml) and DiFuseR's Table 3 (config/difuser.yaml)
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_fuseim_p_sweep_cpu_sized(tmp_path):
    """config/fuseim.yaml's samplers on one small graph at p = 0.05, 0.2 and weighted cascade: the
    weight variants share one generated edge list, fused and unfused cells choose the same seeds,
    and the occupancy table and speedup figure cover every fused cell."""
    wd = workdir(tmp_path)
    cfg = paper("fuseim")
    gen = {"kind": "pa", "nodes": 1500, "edges": 9000, "seed": 1}
    small = {
        "output": "results/fuseim-cpu",
        "backend": "cpu",
        "verify": {"runs": 200},
        "datasets": {"g": {"generate": gen}, "g-p005": {"generate": gen, "weights": "const:0.05"},
                     "g-p02": {"generate": gen, "weights": "const:0.2"}},
        "experiments": [{"kind": "im", "dataset": d, "model": "IC", "k": [5],
                         "algorithms": ["gim", "fused32", "fused256"]} for d in ("g-p005", "g-p02", "g")],
    }
    proc = snakemake(wd, "--cores", "2", "--configfile", "config/fuseim.yaml",
                     write_yaml(tmp_path / "fuseim-cpu.yaml", small))
    assert job_counts(proc.stdout + proc.stderr)["generate"] == 1  # one edge list for the three settings
    out = wd / small["output"]
    rows = read_csv(out / "tables" / "im_summary.csv")
    assert len(rows) == 9 and all(r["verified"] == "True" for r in rows)
    assert {(r["dataset"], r["graph"], r["weights"]) for r in rows} == {
        ("g-p005", "g", "const:0.05"), ("g-p02", "g", "const:0.2"), ("g", "g", "wc")}
    for d in ("g-p005", "g-p02", "g"):
        seeds = {alg: json.loads((out / f"cells/{d}/IC/{alg}/k5.json").read_text())["seeds"]
                 for alg in ("gim", "fused32", "fused256")}
        assert seeds["gim"] == seeds["fused32"] == seeds["fused256"], d
    fused = json.loads((out / "cells/g-p02/IC/fused256/k5.json").read_text())
    assert fused["sampler"] == "fused" and fused["sampler_options"]["batch_width"] == 256
    occupancy = read_csv(out / "tables" / "fuseim_occupancy.csv")
    assert [(r["weights"], r["B"]) for r in occupancy] == [
        (w, b) for w in ("const:0.05", "const:0.2", "wc") for b in ("32", "256")]
    assert all(0 < float(r["occupancy"]) <= 1 and float(r["sampling speedup"]) > 0 for r in occupancy)
    assert (out / "figures" / "fuseim_speedup.png").read_bytes()[:4] == b"\x89PNG"
    compare = read_csv(out / "tables" / "im_compare.csv")
    fused32 = cfg["algorithms"]["fused32"]["label"]
    assert len(compare) == 3 and f"{fused32} speedup" in compare[0] and all(r["verified"] == "True" for r in compare)


@pytest.mark.slow
def test_difuser_table_3_cpu_sized(tmp_path):
    """config/difuser.yaml's DiFuseR and IMM on a small graph at the paper's five weight settings."""
    wd = workdir(tmp_path)
    cfg = paper("difuser")
    gen = {"kind": "pa", "nodes": 1500, "edges": 9000, "seed": 2}
    settings = {"p0005": "const:0.005", "p001": "const:0.01", "p01": "const:0.1", "n005": "normal:0.05,0.025",
                "u01": "uniform:0,0.1"}
    assert {cfg["datasets"][f"pokec-{key}"]["weights"] for key in settings} == set(settings.values())
    small = {
        "output": "results/difuser-cpu",
        "backend": "cpu",
        "verify": {"runs": 200},
        "algorithms": {"difuser": {"registers": 128}},  # merged into config/difuser.yaml's (J = 1024 there)
        "datasets": {f"g-{key}": {"generate": gen, "weights": w} for key, w in settings.items()},
        "experiments": [{"kind": "im", "dataset": f"g-{key}", "model": "IC", "k": [5], "algorithms": ["difuser", "imm"]}
                        for key in settings],
    }
    snakemake(wd, "--cores", "2", "--configfile", "config/difuser.yaml",
              write_yaml(tmp_path / "difuser-cpu.yaml", small))
    out = wd / small["output"]
    result = json.loads((out / "cells/g-u01/IC/difuser/k5.json").read_text())
    assert result["algorithm"] == "DiFuseR" and result["registers"] == 128
    assert result["rebuild_threshold"] == cfg["algorithms"]["difuser"]["rebuild_threshold"]
    compare = read_csv(out / "tables" / "im_compare.csv")
    assert [r["weights"] for r in compare] == ["const:0.005", "const:0.01", "const:0.1", "normal:0.05,0.025",
                                              "uniform:0,0.1"]
    difuser, imm = cfg["algorithms"]["difuser"]["label"], cfg["algorithms"]["imm"]["label"]
    for r in compare:
        assert r["verified"] == "True" and r["graph"] == "g-n005"  # the first name of the shared edge list
        ratio = float(r[f"{imm} time (s)"]) / float(r[f"{difuser} time (s)"])
        assert float(r[f"{difuser} speedup"]) == pytest.approx(ratio)
        assert 0.5 < float(r[f"{difuser} spread ratio"]) < 2


# ---------------------------------------------------------------------------------------------
# several GPUs per cell: MPI ranks
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif(not (BIN / "mpiexec").exists(), reason="MPICH's mpiexec is not installed beside this Python")
def test_a_gpus_2_cell_runs_under_mpiexec(tmp_path):
    pytest.importorskip("mpi4py")
    wd = workdir(tmp_path)
    config = write_yaml(tmp_path / "ranks.yaml", {"verify": {"runs": 300}, "experiments": [
        {"kind": "im", "dataset": "pa2k", "model": "IC", "k": [5], "algorithms": ["imm"], "gpus": 2}]})
    cell = "results/default/cells/pa2k/IC/imm/k5"
    proc = snakemake(wd, f"{cell}.verify.json", "--cores", "2", "-n", "-p", "--configfile", config)
    commands = [line for line in proc.stdout.splitlines() if "gpucore im " in line or "gpucore verify " in line]
    assert len(commands) == 2 and all("mpiexec -n 2 gpucore" in c and "--threads 1 " in c for c in commands)
    assert "tasks=2" in proc.stdout and "mpi=mpiexec" in proc.stdout
    snakemake(wd, f"{cell}.verify.json", "--cores", "2", "--configfile", config)
    result = json.loads((wd / f"{cell}.json").read_text())
    verify = json.loads((wd / f"{cell}.verify.json").read_text())
    assert result["ranks"] == 2 and len(result["per_rank"]["selection_sets"]) == 2
    assert verify["passed"] is True and verify["spread"]["ranks"] == 2
    # one rank, the same seeds (the answer does not depend on the rank count)
    config1 = write_yaml(tmp_path / "one.yaml", {"output": "results/one", "verify": {"runs": 300}, "experiments": [
        {"kind": "im", "dataset": "pa2k", "model": "IC", "k": [5], "algorithms": ["imm"]}]})
    proc = snakemake(wd, "results/one/cells/pa2k/IC/imm/k5.json", "--cores", "2", "-p", "--configfile", config1)
    assert "mpiexec" not in proc.stdout
    assert json.loads((wd / "results/one/cells/pa2k/IC/imm/k5.json").read_text())["seeds"] == result["seeds"]


def test_slurm_profile_launches_several_ranks_with_srun(tmp_path):
    slurm = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert "mpi=srun" in slurm["config"]
    wd = workdir(tmp_path)
    config = write_yaml(tmp_path / "ranks.yaml", {"backend": "cuda", "experiments": [
        {"kind": "sds", "dataset": "pa2k", "model": "truss", "k": [4], "t": [10], "algorithms": ["sds"], "gpus": 4}]})
    proc = snakemake(wd, "-n", "-p", "--cores", "8", "--resources", "gpu=4", "--configfile", config, "--config",
                     "mpi=srun")
    commands = [line for line in proc.stdout.splitlines() if "gpucore sds " in line or "gpucore verify " in line]
    assert len(commands) == 2 and all("Shell command: srun -n 4 gpucore" in c for c in commands)
    assert proc.stdout.count("gpu=4, tasks=4, tasks_per_gpu=1, mpi=srun") == 2, proc.stdout


# ---------------------------------------------------------------------------------------------
# the paper configurations: validate, plan, lint; bad algorithm keys
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,rule,cells", [("fuseim", "solve_im", 27 * 5), ("difuser", "solve_im", 20 * 2),
                                             ("sds", "solve_sds", None)])
def test_family_configs_plan_and_lint(tmp_path, name, rule, cells):
    wd = workdir(tmp_path)
    cfg = paper(name)
    proc = snakemake(wd, "-n", "-p", "--cores", "16", "--configfile", f"config/{name}.yaml")
    counts = job_counts(proc.stdout)
    if cells is None:  # sds: a cell in two sweeps is solved once
        paths = {(e["dataset"], m, a, k, t) for e in cfg["experiments"]
                 for m in (e["model"] if isinstance(e["model"], list) else [e["model"]])
                 for a in e["algorithms"] for k in e["k"] for t in e["t"]}
        cells = len(paths)
    assert counts[rule] == cells and counts["verify"] == cells
    assert "--options" not in proc.stdout and "--threads 16 " in proc.stdout
    if name == "sds":
        assert counts["sds_tables"] == 1 and counts["sds_figures"] == 1 and "--threads 1 " in proc.stdout
    else:
        assert counts["im_compare"] == 1 and counts.get("fuseim", 0) == (name == "fuseim")
    if name == "fuseim":  # every p variant of a generated graph reads one edge list
        assert counts["generate"] == 3 and "--sampler fused --batch-width 256" in proc.stdout
    if name == "difuser":
        assert "--algorithm difuser --seed 0 --registers 1024 --rebuild-threshold 0.01" in proc.stdout
    lint = snakemake(wd, "--lint", "--configfile", f"config/{name}.yaml")
    assert "Congratulations, your workflow is in a good condition!" in lint.stdout + lint.stderr


@pytest.mark.parametrize("algorithms,message", [
    ({"imm": {"command": "im", "batch_width": 64}},
     "config algorithms.imm.batch_width: an option of `sampler: fused` only"),
    ({"imm": {"command": "im", "registers": 64}},
     "config algorithms.imm.registers: an option of `algorithm: difuser` only"),
    ({"imm": {"command": "im", "algorithm": "difuser", "rounds": 2}},
     "config algorithms.imm.rounds: DiFuseR (`algorithm: difuser`) samples no RR sets and selects one round"),
    ({"sds": {"command": "sds", "sampler": "fused"}},
     "config algorithms.sds.sampler: only an im algorithm has sampler"),
    ({"pasti": {"command": "amcss", "update": False, "bound": "degree"}},
     "config algorithms.pasti.bound: only an sds algorithm has bound"),
])
def test_algorithm_keys_belong_to_their_command(tmp_path, algorithms, message):
    wd = workdir(tmp_path)
    proc = snakemake(wd, "-n", "--configfile", write_yaml(tmp_path / "bad.yaml", {"algorithms": algorithms}),
                     check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and message in out, out[-2000:]


def test_experiment_errors_of_the_new_kinds(tmp_path):
    wd = workdir(tmp_path)
    cases = [
        ({"algorithms": {"dfr": {"command": "im", "algorithm": "difuser"}}, "experiments": [
            {"kind": "im", "dataset": "pa2k", "model": "LT", "k": [5], "algorithms": ["dfr"]}]},
         "algorithm 'dfr' is DiFuseR, which runs the IC model only"),
        ({"experiments": [
            {"kind": "sds", "dataset": "pa2k", "model": "truss", "k": [3], "t": [5], "algorithms": ["sds"]},
            {"kind": "sds", "dataset": "pa2k", "model": ["truss"], "k": [4], "t": [5], "algorithms": ["sds"],
             "gpus": 2}]},
         "sds cells of (pa2k, truss, sds) are already defined by experiments[0] with other settings"),
        ({"experiments": [{"kind": "sds", "dataset": "pa2k", "model": "IC", "k": [3], "t": [5],
                           "algorithms": ["sds"]}]},
         "config: experiments[0].model"),
        ({"experiments": [{"kind": "amcss", "dataset": "pa2k", "model": "IC", "batch": 4, "eta": [50],
                           "algorithms": ["merit"], "gpus": 2}]},
         "config: experiments[0]: unknown key 'gpus'"),
    ]
    for i, (override, message) in enumerate(cases):
        proc = snakemake(wd, "-n", "--configfile", write_yaml(tmp_path / f"bad{i}.yaml", override), check=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0 and message in out, (message, out[-2000:])
        assert "Failed validating" not in out

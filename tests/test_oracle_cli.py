"""gpucore verify on real result files written by hand (AMCSS and IM), and its refusals."""

from __future__ import annotations

import json

import pytest

from gpucore.cli import main
from gpucore.graph import from_arcs, load_graph, save_graph
from gpucore.oracle import spread
from tests.test_oracle_exact import IC_ARCS
from tests.test_oracle_reference import exact_ic_spread
from tests.test_oracle_replay import DET


@pytest.fixture()
def det_file(tmp_path):
    g = from_arcs(8, [a[0] for a in DET], [a[1] for a in DET], [a[2] for a in DET], name="det")
    path = save_graph(g, tmp_path / "det.gcsr")
    return load_graph(path)


@pytest.fixture()
def ic_file(tmp_path):
    g = from_arcs(7, [a[0] for a in IC_ARCS], [a[1] for a in IC_ARCS], [a[2] for a in IC_ARCS], name="ic")
    return load_graph(save_graph(g, tmp_path / "ic.gcsr"))


def amcss_result(g, rounds_per_real, eta=8, model="IC"):
    """A result file as gpucore amcss writes it (fields the verifier reads, plus a few others)."""
    reals = []
    for world, rounds in rounds_per_real:
        logged, active = [], 0
        for ids, new in rounds:
            active += new
            logged.append({"seeds": [int(g.original_id[i]) for i in ids], "seed_ids": list(ids),
                           "cost": float(sum(g.cost[i] for i in ids)), "newly_active": new, "theta": 100})
        reals.append({"world_seed": world, "rounds": logged, "total_cost": sum(r["cost"] for r in logged),
                      "active": active, "reached": active >= eta})
    return {"kind": "amcss", "graph": {"path": str(g.path), "sha256": g.sha256}, "model": model, "eta": eta,
            "algorithm": "merit", "realizations": reals}


def write(tmp_path, obj, name="result.json"):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


def run_verify(capsys, *argv):
    code = main(["verify", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_amcss_result_passes(tmp_path, det_file, capsys):
    res = amcss_result(det_file, [(11, [([0], 3), ([3], 3), ([6], 2)]), (2**64 - 1, [([6, 3], 7), ([0], 1)])])
    out = tmp_path / "r.verify.json"
    code, stdout, _ = run_verify(capsys, write(tmp_path, res), "--graph", det_file.path, "-o", out)
    report = json.loads(out.read_text())
    assert code == 0 and report["passed"] is True and "passed" in stdout
    assert report["checked"] == "amcss" and report["graph"]["sha256"] == det_file.sha256
    assert [r["newly_active"] for r in report["realizations"]] == [[3, 3, 2], [7, 1]]
    assert all(r["passed"] for r in report["realizations"]) and report["failures"] == []


def test_amcss_tampered_log_fails_with_exit_1(tmp_path, det_file, capsys):
    res = amcss_result(det_file, [(11, [([0], 3), ([3], 3), ([6], 2)]), (7, [([0], 3), ([3], 4), ([6], 1)])])
    out = tmp_path / "v.json"
    code, stdout, _ = run_verify(capsys, write(tmp_path, res), "--graph", det_file.path, "-o", out)
    report = json.loads(out.read_text())  # written even when the verification fails
    assert code == 1 and report["passed"] is False and "FAILED" in stdout
    assert [r["passed"] for r in report["realizations"]] == [True, False]
    assert report["failures"] == ["realization 1 (world_seed 7): round 1: logged newly_active 4, replay activates 3"]


def test_amcss_eta_not_reached_fails(tmp_path, det_file, capsys):
    res = amcss_result(det_file, [(11, [([0], 3)])], eta=5)
    res["realizations"][0]["reached"] = True  # the solver claims it
    code, stdout, _ = run_verify(capsys, write(tmp_path, res), "--graph", det_file.path)
    report = json.loads(stdout)
    assert code == 1 and not report["passed"]
    probs = report["realizations"][0]["problems"]
    assert "eta=5 not reached: 3 active after 1 rounds" in probs and "logged reached=True, replay reached=False" in probs


def test_amcss_seed_ids_must_match_original_ids(tmp_path, det_file, capsys):
    res = amcss_result(det_file, [(11, [([0], 3), ([3], 3), ([6], 2)])])
    res["realizations"][0]["rounds"][1]["seeds"] = [4]
    code, stdout, _ = run_verify(capsys, write(tmp_path, res), "--graph", det_file.path)
    assert code == 1 and "seed_ids do not map to the logged original seeds" in json.loads(stdout)["failures"][0]


def test_im_result_passes_and_reports_ratio(tmp_path, ic_file, capsys):
    exact = exact_ic_spread(7, IC_ARCS, [0, 3])
    res = {"kind": "im", "graph": {"path": str(ic_file.path), "sha256": ic_file.sha256}, "model": "IC", "k": 2,
           "seeds": [0, 3], "seed_ids": [0, 3], "estimated_spread": exact}
    out = tmp_path / "im.verify.json"
    code, _, _ = run_verify(capsys, write(tmp_path, res), "--graph", ic_file.path, "--runs", 4000, "--backend", "cpu",
                            "-o", out)
    report = json.loads(out.read_text())
    assert code == 0 and report["passed"] and report["runs"] == 4000 and report["checked"] == "im"
    assert report["ci_low"] <= exact <= report["ci_high"]
    assert report["ratio"] == pytest.approx(exact / report["mean"])
    ref = spread(ic_file, [0, 3], "IC", runs=4000, seed=0, backend="cpu")
    assert report["mean"] == ref.mean  # the documented worlds of --seed 0


def test_im_wrong_estimate_fails(tmp_path, ic_file, capsys):
    res = {"kind": "im", "graph": {"sha256": ic_file.sha256}, "model": "IC", "k": 2, "seed_ids": [0, 3],
           "estimated_spread": 6.9}
    code, stdout, _ = run_verify(capsys, write(tmp_path, res), "--graph", ic_file.path, "--runs", 2000)
    report = json.loads(stdout)
    assert code == 1 and report["ratio"] > 1.2 and "outside the oracle's CI" in report["failures"][0]


def test_im_duplicate_seeds_fail(tmp_path, ic_file, capsys):
    res = {"kind": "im", "graph": {"sha256": ic_file.sha256}, "model": "LT", "k": 3, "seed_ids": [0, 3, 0],
           "estimated_spread": 3.0}
    code, stdout, _ = run_verify(capsys, write(tmp_path, res), "--graph", ic_file.path, "--runs", 100)
    assert code == 1 and "appears more than once" in json.loads(stdout)["failures"][0]


def test_checksum_mismatch_is_refused(tmp_path, det_file, ic_file, capsys):
    res = amcss_result(det_file, [(11, [([0], 3)])], eta=3)
    out = tmp_path / "never.json"
    code, _, err = run_verify(capsys, write(tmp_path, res), "--graph", ic_file.path, "-o", out)
    assert code == 2 and not out.exists()
    assert err.startswith("gpucore: error: ") and err.count("\n") == 1
    assert "differs from" in err and "computed on another graph" in err


def test_unknown_kind_is_refused(tmp_path, det_file, capsys):
    code, _, err = run_verify(capsys, write(tmp_path, {"kind": "clique", "graph": {"sha256": det_file.sha256}}),
                              "--graph", det_file.path)
    assert code == 2 and "unknown result kind 'clique'" in err and err.count("\n") == 1


def test_unknown_model_in_result_is_refused(tmp_path, det_file, capsys):
    res = amcss_result(det_file, [(11, [([0], 3)])], eta=3, model="SIS")
    code, _, err = run_verify(capsys, write(tmp_path, res), "--graph", det_file.path)
    assert code == 2 and "model 'SIS' is unknown" in err


def test_missing_and_malformed_result_files(tmp_path, det_file, capsys):
    code, _, err = run_verify(capsys, tmp_path / "nope.json", "--graph", det_file.path)
    assert code == 2 and "no such result file" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run_verify(capsys, bad, "--graph", det_file.path)
    assert code == 2 and "not a readable JSON result" in err and err.count("\n") == 1


def test_round_ids_out_of_range_are_refused(tmp_path, det_file, capsys):
    res = amcss_result(det_file, [(11, [([0], 3)])], eta=3)
    res["realizations"][0]["rounds"][0]["seed_ids"] = [99]
    code, _, err = run_verify(capsys, write(tmp_path, res), "--graph", det_file.path)
    assert code == 2 and "internal id 99 is out of range" in err

"""``gpucore verify`` on AMCSS results checks the books, not only the diffusion (issue 13, item 3):
the seed costs are recomputed from the graph and compared with every logged cost field, the seed
counts, and every realization the run was asked for is present exactly once. Each tampering of a
real result fails with the field named; the untouched result passes."""

from __future__ import annotations

import copy
import json

import pytest

from gpucore.amcss import run_amcss
from gpucore.cli import main
from gpucore.graph import load_graph, save_graph
from gpucore.oracle.verify import verify_result
from tests.test_amcss_ref import random_graph


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    g = random_graph(300, 900, seed=8, prob=0.2, name="verify300")
    return load_graph(save_graph(g, tmp_path_factory.mktemp("verify") / "g.gcsr"))


@pytest.fixture(scope="module")
def result(graph):
    res = run_amcss(graph, model="IC", eta=90, batch=3, eps=0.5, realizations=3, seed=5)
    assert all(len(r["rounds"]) >= 2 for r in res["realizations"])
    return json.loads(json.dumps(res))


def failures(graph, res):
    report = verify_result(res, graph, "r.json")
    assert report["passed"] == (not report["failures"])
    return report["failures"]


def test_untouched_result_passes(graph, result):
    assert failures(graph, result) == []
    assert result["realization_ids"] == [0, 1, 2]


def test_halving_every_cost_field_fails(graph, result):
    bad = copy.deepcopy(result)
    for real in bad["realizations"]:
        for rd in real["rounds"]:
            rd["cost"] /= 2
        real["total_cost"] /= 2
        real["total_cost_normalized"] /= 2
    bad["summary"]["mean_total_cost"] /= 2
    bad["summary"]["mean_total_cost_normalized"] /= 2
    got = failures(graph, bad)
    assert len(got) == 4 and all("round 0 cost: logged" in f for f in got[:3])
    assert got[3].startswith("summary mean_total_cost: logged")
    report = verify_result(bad, graph, "r.json")
    problems = report["realizations"][0]["problems"]
    assert any(p.startswith("total_cost:") for p in problems)
    assert any(p.startswith("total_cost_normalized:") for p in problems)


@pytest.mark.parametrize("field,needle", [
    (("rounds", 1, "cost"), "round 1 cost"),
    (("total_cost",), "total_cost: logged"),
    (("total_cost_normalized",), "total_cost_normalized: logged"),
])
def test_one_cost_field_changed_fails(graph, result, field, needle):
    bad = copy.deepcopy(result)
    target = bad["realizations"][1]
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] *= 1.01
    got = failures(graph, bad)
    assert got[0].startswith("realization 1 ") and needle in got[0], got
    # the summary's mean of the normalised costs is taken from the logged ones: it disagrees too
    assert got[1:] == ([] if field[-1] != "total_cost_normalized" else [got[1]]), got


def test_summary_cost_changed_fails(graph, result):
    for key in ("mean_total_cost", "mean_total_cost_normalized", "mean_seeds", "mean_rounds"):
        bad = copy.deepcopy(result)
        bad["summary"][key] += 1.0
        got = failures(graph, bad)
        assert got == [got[0]] and got[0].startswith(f"summary {key}: logged"), (key, got)


def test_seed_count_edited_fails(graph, result):
    bad = copy.deepcopy(result)
    bad["realizations"][0]["seeds_count"] += 1
    got = failures(graph, bad)
    assert len(got) == 1 and "seeds_count: logged" in got[0]


def test_batch_larger_than_the_batch_size_fails(graph, result):
    bad = copy.deepcopy(result)
    bad["batch"] = 1
    assert any("seeds in a batch of 1" in f for f in failures(graph, bad))


def test_dropped_realization_fails(graph, result):
    bad = copy.deepcopy(result)
    del bad["realizations"][1]
    bad["summary"]["realizations"] = 2  # even with a consistent count the parameters list realization 1
    got = failures(graph, bad)
    assert any("realization_ids: realization 1 is missing" in f for f in got), got
    bad = copy.deepcopy(result)
    del bad["realizations"][2]
    assert any(f.startswith("summary realizations: logged 3") for f in failures(graph, bad))


def test_duplicated_realization_fails(graph, result):
    bad = copy.deepcopy(result)
    bad["realizations"][2] = copy.deepcopy(bad["realizations"][0])
    got = failures(graph, bad)
    assert any("realization 2 duplicates realization 0" in f for f in got), got
    assert any("realization_ids: realization 2 is missing" in f for f in got), got


def test_relabelled_realization_fails(graph, result):
    """A realization presented as another (index changed, world kept): its world seed is not the
    run's world of that index."""
    bad = copy.deepcopy(result)
    bad["realizations"][1]["realization"] = 7
    got = failures(graph, bad)
    assert any("is not mix(seed, WORLD, 7)" in f for f in got), got
    assert any("realization 7 is not in realization_ids" in f for f in got), got


def test_cli_names_the_field_and_exits_1(graph, result, tmp_path, capsys):
    bad = copy.deepcopy(result)
    for real in bad["realizations"]:
        for rd in real["rounds"]:
            rd["cost"] /= 2
    path = tmp_path / "halved.json"
    path.write_text(json.dumps(bad))
    code = main(["verify", str(path), "--graph", str(graph.path), "-o", str(tmp_path / "v.json")])
    out = capsys.readouterr().out
    assert code == 1 and "FAILED" in out and "round 0 cost: logged" in out

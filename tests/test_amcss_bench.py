"""The paired part of ``benchmarks/bench_merit_gpu.py`` runs on the GPU machine only, with little
device time: its cell and its report are exercised here on the CPU backend (same code path but the
backend name), so the first device run cannot fail on them."""

from __future__ import annotations

import json
from argparse import Namespace

from benchmarks.bench_merit_gpu import Report, paired_cell
from tests.test_amcss_ref import random_graph


def test_paired_cell_and_its_report(tmp_path):
    graph = random_graph(500, 1000, seed=21, prob=None, name="wc500-1000")
    args = Namespace(eps=0.5, realizations=2, seed=3)
    row, res = paired_cell(graph, "LT", 400, 3, args, backend="cpu")
    t = row["totals"]
    assert row["status"] == "ok" and res["paired"] and row["realizations"] == 2
    assert t["rounds"] == sum(len(r["rounds"]) - 1 for r in res["realizations"]) == len(row["rounds_detail"]) >= 4
    assert t["updated"] + t["regenerated"] == t["rounds"] and 0 <= t["update_faster"] <= t["rounds"]
    assert t["ratio_min"] <= t["ratio_median"] <= t["ratio_max"]
    assert len(t["probed_share_measured"]) == len(t["probed_share_predicted"]) == len(t["size_ratio"]) == t["rounds"]
    facts = {"date": "today", "commit": "abc", "device": {}, "copy_bandwidth": {}, "cpu_model": "cpu", "cpu_count": 2,
             "threads": 2, "eps": 0.5, "seed": 3, "realizations": 2}
    report = Report(tmp_path, facts)
    report.paired.append({"graph": "wc500", "costs": "degree", "model": "LT", "eta": 400, "b": 3, "cell": row})
    report.paired.append({"graph": "wc500", "costs": "unit", "model": "IC", "eta": 9, "b": 3,
                          "cell": {"status": "skipped (time budget)"}})
    report.save()
    md = (tmp_path / "bench-merit-gpu.md").read_text()
    assert "## Update vs regeneration per round, on the same collection state (paired)" in md
    assert f"| {t['rounds']} | {t['updated']} / {t['regenerated']} |" in md
    assert "### wc500, degree costs, LT eta 400: rounds" in md and "skipped (time budget)" in md
    assert md.count("\n| ") >= 2 + 2 + t["rounds"]
    data = json.loads((tmp_path / "bench-merit-gpu.json").read_text())
    assert data["paired"][0]["cell"]["totals"]["rounds"] == t["rounds"]

"""Aggregation of cell results into tables and figures (workflow/scripts/results_io.py, plots.py),
on result JSON written by hand following the documented fields of `gpucore amcss` / `im` / `verify`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def mods(workflow_scripts):
    return workflow_scripts("results_io"), workflow_scripts("plots")


def _round(seeds, cost, newly, gen, upd, sel=0.01, dif=0.02, theta=1000):
    return {"seeds": seeds, "seed_ids": [s + 100 for s in seeds], "cost": cost, "newly_active": newly, "theta": theta,
            "seconds": {"generate": gen, "update": upd, "select": sel, "diffuse": dif}}


def amcss_result(eta, algorithm, update, scale=1.0):
    """Two realizations; the second round of MERIT updates instead of generating."""
    reals = []
    for w in range(2):
        rounds = [_round([1, 2], 1.5 + w, eta // 2 + 3, 0.4, 0.0),
                  _round([3, 4], 2.0, eta // 2 + w, 0.0 if update else 0.3, 0.1 if update else 0.0, theta=2000)]
        total = sum(sum(r["seconds"].values()) for r in rounds) + 0.05
        reals.append({"world_seed": 1000 + w, "rounds": rounds, "total_cost": 3.5 + w,
                      "active": sum(r["newly_active"] for r in rounds), "reached": True, "seconds": total})
    return {"kind": "amcss", "graph": {"path": "g.gcsr", "sha256": "0" * 64}, "model": "IC", "eta": eta, "batch": 2,
            "epsilon": 0.5, "algorithm": algorithm, "backend": {"backend": "cpu", "numba_threads": 2},
            "realizations": reals, "summary": {}}


def write(path: Path, obj) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return str(path)


@pytest.fixture
def amcss_cells(tmp_path):
    cells = []
    for alg, update in (("merit", True), ("pasti", False)):
        for eta in (10, 20):
            base = tmp_path / "results" / "cells" / "toy" / "IC" / alg
            r = write(base / f"eta{eta}.json", amcss_result(eta, alg, update))
            v = write(base / f"eta{eta}.verify.json", {"kind": "verify", "passed": True})
            cells.append({"dataset": "toy", "algorithm": alg, "label": alg.upper(), "result": r, "verify": v})
    return cells


def test_amcss_rows_fields(mods):
    rio, _ = mods
    rows = rio.amcss_rows(amcss_result(10, "merit", True), {"passed": True}, 2.0, dataset="toy", algorithm="merit")
    assert len(rows) == 2
    r = rows[0]
    assert r["eta"] == 10 and r["model"] == "IC" and r["backend"] == "cpu" and r["batch"] == 2
    assert r["total_cost"] == 3.5 and r["cost_norm"] == pytest.approx(1.75)
    assert r["seeds"] == 4 and r["rounds"] == 2 and r["active"] == 2 * 5 + 3 and r["reached"] is True
    assert r["t_generate"] == pytest.approx(0.4) and r["t_update"] == pytest.approx(0.1)
    assert r["t_select"] == pytest.approx(0.02) and r["t_diffuse"] == pytest.approx(0.04)
    assert r["seconds"] == pytest.approx(0.4 + 0.1 + 0.02 + 0.04 + 0.05)
    assert r["t_other"] == pytest.approx(r["seconds"] - 0.5)
    assert r["theta_max"] == 2000 and r["verified"] is True and r["world_seed"] == 1000


def test_seconds_as_dict_and_per_realization_verdicts(mods):
    rio, _ = mods
    res = amcss_result(10, "merit", True)
    res["realizations"][0]["seconds"] = {"total": 9.0, "io": 1.0}
    res["realizations"][1]["seconds"] = {"a": 1.0, "b": 2.0}
    report = {"status": "fail", "realizations": [{"world_seed": 1000, "passed": True}, {"world_seed": 1001, "passed": False}]}
    rows = rio.amcss_rows(res, report, 1.0, dataset="toy", algorithm="merit")
    assert [r["seconds"] for r in rows] == [9.0, 3.0]
    assert [r["verified"] for r in rows] == [True, False]


@pytest.mark.parametrize("report,expected", [
    ({"passed": True}, True), ({"pass": False}, False), ({"ok": True}, True), ({"status": "PASS"}, True),
    ({"result": "fail"}, False), ({"verdict": "passed"}, True), (None, None),
])
def test_verify_verdicts(mods, report, expected):
    rio, _ = mods
    assert rio.verify_passed(report) is expected


def test_verify_without_verdict_is_an_error(mods):
    rio, _ = mods
    with pytest.raises(ValueError, match="pass/fail"):
        rio.verify_passed({"kind": "verify"})


def test_summary_normalised_cost_and_speedup(mods, amcss_cells):
    rio, _ = mods
    df = rio.collect_amcss(amcss_cells, {"toy": {"cost_scale": 0.5}})
    assert len(df) == 8 and list(df.columns) == rio.AMCSS_COLUMNS
    s = rio.amcss_summary(df, baseline="pasti")
    assert list(s.columns) == rio.SUMMARY_COLUMNS and len(s) == 4
    m10 = s[(s.algorithm == "merit") & (s.eta == 10)].iloc[0]
    p10 = s[(s.algorithm == "pasti") & (s.eta == 10)].iloc[0]
    assert m10.realizations == 2 and m10.cost_mean == pytest.approx(4.0) and m10.cost_std == pytest.approx(math.sqrt(0.5))
    assert m10.cost_norm_mean == pytest.approx(8.0)  # cost / cost_scale
    assert m10.active_min == 13 and bool(m10.reached_all) and bool(m10.verified) is True
    assert p10.speedup == pytest.approx(1.0)
    assert m10.speedup == pytest.approx(p10.time_mean / m10.time_mean)
    assert m10.update_mean > 0 and p10.update_mean == 0


def test_summary_without_baseline_has_nan_speedup(mods, amcss_cells):
    rio, _ = mods
    df = rio.collect_amcss(amcss_cells, {"toy": {"cost_scale": 1.0}})
    assert rio.amcss_summary(df, baseline="absent")["speedup"].isna().all()
    assert rio.amcss_summary(df.iloc[0:0], baseline=None).empty


def test_collect_rejects_wrong_kind(mods, tmp_path):
    rio, _ = mods
    r = write(tmp_path / "r.json", {"kind": "im"})
    with pytest.raises(ValueError, match="expected 'amcss'"):
        rio.collect_amcss([{"dataset": "toy", "algorithm": "a", "result": r}], {"toy": {"cost_scale": 1}})


def test_im_rows(mods, tmp_path):
    rio, _ = mods
    res = {"kind": "im", "model": "LT", "k": 3, "epsilon": 0.5, "seeds": [1, 2, 3], "seed_ids": [1, 2, 3],
           "estimated_spread": 42.5, "theta": 777, "seconds": 0.25, "backend": "cuda"}
    r = write(tmp_path / "k3.json", res)
    v = write(tmp_path / "k3.verify.json", {"passed": True, "spread": {"mean": 41.0}, "ci": [39.5, 42.5]})
    df = rio.collect_im([{"dataset": "toy", "algorithm": "imm", "label": "IMM", "result": r, "verify": v}],
                        {"toy": {"cost_scale": 1.0}})
    row = df.iloc[0]
    assert row.k == 3 and row.model == "LT" and row.backend == "cuda" and row.estimated_spread == 42.5
    assert row.oracle_spread == 41.0 and row.oracle_ci_low == 39.5 and row.oracle_ci_high == 42.5
    assert row.theta == 777 and row.seconds == 0.25 and bool(row.verified) is True and row.label == "IMM"
    assert row.rounds == 1


def test_multi_round_im_rows(mods, tmp_path):
    """A multi-round cell: seeds are one list per round, k is per round, the oracle's report is "mrim"."""
    rio, _ = mods
    res = {"kind": "im", "model": "IC", "k": 2, "rounds": 3, "epsilon": 0.5, "seed_ids": [[1, 2], [3, 4], [1, 5]],
           "seeds": [[1, 2], [3, 4], [1, 5]], "estimated_spread": 30.0, "theta": 500, "seconds": 0.5,
           "backend": "cpu"}
    r = write(tmp_path / "k2.json", res)
    v = write(tmp_path / "k2.verify.json", {"passed": True, "checked": "mrim", "spread": {"mean": 29.0},
                                            "ci": [28.0, 30.0]})
    df = rio.collect_im([{"dataset": "toy", "algorithm": "mrim", "label": "MRIM", "result": r, "verify": v}],
                        {"toy": {"cost_scale": 1.0}})
    row = df.iloc[0]
    assert row.k == 2 and row.rounds == 3 and row.oracle_spread == 29.0 and bool(row.verified) is True


def test_dataset_rows(mods):
    rio, _ = mods
    stats = {"n": 5, "m": 8, "directed_source": False, "source_sha256": "a" * 64, "cost_scale": 0.05}
    row = rio.dataset_row("toy", stats, {"source": "registry", "expected_n": 5, "expected_m": 8, "exact": True,
                                         "sha256": "a" * 64})
    assert row["size_check"] == "match (exact)" and row["sha256_check"] == "match" and row["directed"] == "undirected"
    row = rio.dataset_row("toy", stats, {"source": "registry", "expected_n": 5, "expected_m": 9})
    assert row["size_check"] == "differs (origin's numbers)" and row["sha256_check"] == "not in registry"
    assert rio.dataset_row("gen", stats, {"source": "generated"})["size_check"] == "-"


def test_table_writers(mods, tmp_path):
    rio, _ = mods
    df = pd.DataFrame({"dataset": ["a_b", "c"], "eta": [1000, 20000], "cost": [1.23456, float("nan")],
                       "verified": [True, False]})
    paths = {ext: tmp_path / f"t.{ext}" for ext in ("csv", "md", "tex", "html")}
    rio.write_table(df, paths, title="Toy table", label="tab:toy")
    assert pd.read_csv(paths["csv"]).shape == (2, 4)
    md = paths["md"].read_text().splitlines()
    assert md[0] == "**Toy table**" and md[2] == "| dataset | eta | cost | verified |"
    assert md[4] == "| a_b | 1,000 | 1.235 | yes |" and md[5] == "| c | 20,000 | - | NO |"
    tex = paths["tex"].read_text()
    assert "\\begin{tabular}{lrrl}" in tex and "a\\_b & 1,000 & 1.235 & yes \\\\" in tex
    assert "\\caption{Toy table}" in tex and "\\label{tab:toy}" in tex and "\\toprule" in tex
    html = paths["html"].read_text()
    assert "<table" in html and "Toy table" in html and "20,000" in html
    assert not list(tmp_path.glob(".*tmp"))


def test_figures(mods, amcss_cells, tmp_path):
    rio, plots = mods
    df = rio.collect_amcss(amcss_cells, {"toy": {"cost_scale": 1.0}})
    out = {}
    for name, call in {
        "cost": lambda p: plots.metric_vs_eta(df, "IC", "cost", p),
        "time": lambda p: plots.metric_vs_eta(df, "IC", "time", p),
        "breakdown": lambda p: plots.breakdown(df, "IC", p),
        "verification": lambda p: plots.verification(df, p),
        "empty": lambda p: plots.metric_vs_eta(df, "LT", "cost", p),
    }.items():
        out[name] = tmp_path / f"{name}.png"
        call(out[name])
    for path in out.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 2000


# ---- what the figures show (issue 12 item 2) -----------------------------------------------------


def _realizations(per_cell: int, etas=(100, 200, 400), datasets=("alpha", "beta"), single=("gamma", 200)):
    """A realization table: two algorithms on datasets with several etas, one dataset with a single eta;
    times spread over two decades (the log axis), costs positive."""
    rows = []
    cells = [(ds, eta) for ds in datasets for eta in etas] + [single]
    for ci, (ds, eta) in enumerate(cells):
        for ai, (alg, label) in enumerate((("merit", "MERIT"), ("pasti", "PASTI"))):
            for r in range(per_cell):
                seconds = (0.03 + 0.01 * r) * (60 if alg == "pasti" else 1) * (1 + eta / 400)
                rows.append({"dataset": ds, "model": "IC", "algorithm": alg, "label": label, "eta": eta,
                             "realization": r, "total_cost": 0.5 + 0.1 * r + eta / 100, "seconds": seconds,
                             "t_generate": seconds / 2, "t_update": seconds / 4, "t_other": seconds / 4,
                             "active": eta + r, "verified": True, "result": f"{ds}/{alg}/eta{eta}.json"})
    return pd.DataFrame(rows)


def _drawn(fig):
    fig.canvas.draw()
    return fig


def test_few_realizations_are_drawn_as_points_never_as_bands(mods):
    _, plots = mods
    from matplotlib.collections import PathCollection, PolyCollection

    df = _realizations(per_cell=3)
    for metric in ("time", "cost"):
        fig = _drawn(plots.metric_figure(df, "IC", metric))
        for ax in fig.axes:
            assert not [c for c in ax.collections if isinstance(c, PolyCollection)], metric  # no band
            points = sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))
            assert points == 3 * 2 * len(ax.get_xticks()), (metric, ax.get_title())  # every realization


def test_many_realizations_get_a_min_max_band_inside_the_data(mods):
    _, plots = mods
    from matplotlib.collections import PolyCollection

    df = _realizations(per_cell=plots.POINTS_BELOW)
    fig = _drawn(plots.metric_figure(df, "IC", "time"))
    for ax in fig.axes:
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert bands
        part = df[df["dataset"] == ax.get_title()]
        for band in bands:
            y = band.get_paths()[0].vertices[:, 1]
            assert y.min() >= part["seconds"].min() - 1e-12 and y.max() <= part["seconds"].max() + 1e-12


def test_log_axes_have_plain_labels_and_no_minor_labels(mods):
    _, plots = mods
    fig = _drawn(plots.metric_figure(_realizations(per_cell=3), "IC", "time"))
    for ax in fig.axes:
        assert ax.get_yscale() == "log"
        major = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert len(major) >= 2 and all(re.fullmatch(r"[0-9.]+", t) for t in major), major  # 0.05, 1, 20
        assert [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()] == []


def test_a_single_eta_is_one_tick_on_a_sensible_axis(mods):
    _, plots = mods
    fig = _drawn(plots.metric_figure(_realizations(per_cell=3), "IC", "cost"))
    single = next(ax for ax in fig.axes if ax.get_title() == "gamma")
    assert list(single.get_xticks()) == [200] and [t.get_text() for t in single.get_xticklabels()] == ["200"]
    lo, hi = single.get_xlim()
    assert lo < 200 < hi and hi - lo == pytest.approx(40)  # +-10%, not 190-210
    several = next(ax for ax in fig.axes if ax.get_title() == "alpha")
    assert list(several.get_xticks()) == [100, 200, 400]
    assert single.get_ylim()[0] == 0  # costs from zero


def test_every_eta_axis_has_the_same_label_and_figures_fit_the_report(mods):
    _, plots = mods
    df = _realizations(per_cell=3, datasets=("a", "b", "c", "d", "e"))
    figures = [plots.metric_figure(df, "IC", "cost"), plots.metric_figure(df, "IC", "time"),
               plots.breakdown_figure(df, "IC")]
    for fig in figures:
        _drawn(fig)
        assert fig.get_supxlabel() == plots.ETA_LABEL
        assert all(ax.get_xlabel() == "" for ax in fig.axes)
    for fig in figures + [plots.verification_figure(df)]:
        assert fig.get_figwidth() * plots.DPI <= plots.MAX_WIDTH * plots.DPI + 1


def test_verification_figure_has_a_row_per_cell(mods):
    _, plots = mods
    df = _realizations(per_cell=3)
    df.loc[df.index[0], "verified"] = False
    fig = _drawn(plots.verification_figure(df))
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == sorted(rows) and len(rows) == df[["dataset", "eta"]].drop_duplicates().shape[0]
    assert "oracle: FAILED" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert "of 14 cells" in ax.get_title() and "42 of 42 realizations reach eta" in ax.get_title()

"""Aggregation of the IM comparisons (DiFuseR's Table 3 shape, FuseIM's Table 2 and Fig. 7) and of
structural diversity search cells (Table 2 and Exp-7 of Huang et al.): workflow/scripts/results_im.py,
results_sds.py, plots_sweep.py, on result JSON written by hand following the documented fields of
`gpucore im` (docs/im.md, docs/fuseim.md), `gpucore sds` (docs/sds.md) and `gpucore verify`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def mods(workflow_scripts):
    return tuple(workflow_scripts(m) for m in ("results_io", "results_im", "results_sds", "plots_sweep"))


def write(path: Path, obj) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return str(path)


# ---- IM: solve time, sampler instrumentation, comparisons ----------------------------------------


def im_result(*, seconds, warm_up, sampler="gim", method="IMM", backend="cuda", width=None, sampling=(0.5, 1.0, 0.5)):
    result = {"kind": "im", "algorithm": method, "model": "IC", "k": 5, "epsilon": 0.5, "seed_ids": [1, 2, 3, 4, 5],
              "estimated_spread": 100.0, "theta": 1000, "seconds": seconds, "warm_up_seconds": warm_up,
              "backend": {"backend": backend}, "ranks": 1}
    if method == "IMM":
        result.update(sampler=sampler, seconds_by_phase=dict(zip(("lb_sampling", "final_sampling", "estimate"),
                                                                 sampling), lb_selection=0.1))
    else:
        result["seconds_by_phase"] = {"fill": 0.2, "simulate": 0.3}
    if width:
        result["sampler_stats"] = {"batch_width": width, "occupancy": 0.25, "edge_read_ratio": 3.0,
                                   "frontier_bytes_peak": 2_000_000, "mask_bytes": 5_000_000, "levels": 40,
                                   "traversals": 2000}
    return result


def im_cells(tmp_path, specs):
    """specs: (dataset, algorithm, label, result, spread, passed) -> cells for collect_im."""
    cells = []
    for dataset, alg, label, result, spread, passed in specs:
        base = tmp_path / dataset / alg
        cells.append({"dataset": dataset, "algorithm": alg, "label": label, "result": write(base / "k5.json", result),
                      "verify": write(base / "k5.verify.json", {"passed": passed, "spread": {"mean": spread},
                                                                  "ci": [spread - 1, spread + 1]})})
    return cells


def test_im_rows_time_without_warm_up_and_the_fused_stats(mods, tmp_path):
    rio, *_ = mods
    cells = im_cells(tmp_path, [
        ("g-p01", "gim", "gIM", im_result(seconds=5.0, warm_up=3.0), 50.0, True),
        ("g-p01", "fused64", "B=64", im_result(seconds=4.0, warm_up=3.5, sampler="fused", width=64,
                                               sampling=(0.1, 0.2, 0.1)), 50.0, True),
    ])
    df = rio.collect_im(cells, {"g-p01": {"weights": "const:0.1"}},
                        {"g-p01": {"graph": "g", "weights": "const:0.1"}})
    gim, fused = df.set_index("algorithm").loc["gim"], df.set_index("algorithm").loc["fused64"]
    assert gim.solve_seconds == pytest.approx(2.0) and gim.seconds == 5.0
    assert gim.sampling_seconds == pytest.approx(2.0) and fused.sampling_seconds == pytest.approx(0.4)
    assert fused.fused_batch_width == 64 and fused.fused_occupancy == 0.25 and math.isnan(gim.fused_occupancy)
    assert fused.graph == "g" and fused.weights == "const:0.1" and fused.sampler == "fused" and fused.method == "IMM"
    # without the dataset -> graph map, the dataset is its own graph and the sidecar gives the weights
    df = rio.collect_im(cells[:1], {"g-p01": {"weights": "const:0.1"}})
    assert df.iloc[0].graph == "g-p01" and df.iloc[0].weights == "const:0.1"


def test_weight_settings_order_constants_by_p_then_the_others(mods):
    _, rim, *_ = mods
    assert rim.weight_value("const:0.05") == 0.05 and math.isnan(rim.weight_value("wc"))
    assert rim.weight_order(["wc", "const:0.3", "uniform:0,0.1", "const:0.05", "const:0.3"]) == [
        "const:0.05", "const:0.3", "uniform:0,0.1", "wc"]


def _difuser_summary(mods, tmp_path):
    rio, *_ = mods
    specs, graphs = [], {}
    for graph in ("big", "small"):
        for w, weights in (("u", "uniform:0,0.1"), ("p1", "const:0.1"), ("p05", "const:0.005")):
            ds = f"{graph}-{w}"
            graphs[ds] = {"graph": graph, "weights": weights}
            specs.append((ds, "imm", "IMM", im_result(seconds=9.0, warm_up=1.0), 200.0, True))
            specs.append((ds, "difuser", "DiFuseR", im_result(seconds=2.5, warm_up=0.5, method="DiFuseR"), 196.0,
                          ds != "small-p1"))
    specs.append(("alone", "imm", "IMM", im_result(seconds=1.0, warm_up=0.0), 10.0, True))  # one algorithm only
    graphs["alone"] = {"graph": "alone", "weights": "wc"}
    return rio.collect_im(im_cells(tmp_path, specs), {ds: {} for ds in graphs}, graphs)


def test_compare_table_has_the_shape_of_difuser_table_3(mods, tmp_path):
    _, rim, *_ = mods
    table = rim.compare_table(_difuser_summary(mods, tmp_path), "imm")
    assert list(table[["graph", "weights"]].itertuples(index=False, name=None)) == [
        (g, w) for g in ("big", "small") for w in ("const:0.005", "const:0.1", "uniform:0,0.1")]
    assert list(table.columns) == ["graph", "weights", "model", "k", "DiFuseR time (s)", "DiFuseR spread",
                                   "IMM time (s)", "IMM spread", "DiFuseR speedup", "DiFuseR spread ratio", "verified"]
    assert list(table["DiFuseR speedup"]) == pytest.approx([4.0] * 6)  # (9 - 1) / (2.5 - 0.5)
    assert list(table["DiFuseR spread ratio"]) == pytest.approx([0.98] * 6)
    assert list(table["verified"]) == [True, True, True, True, False, True]
    # without a baseline among them: times and spreads only
    plain = rim.compare_table(_difuser_summary(mods, tmp_path), "pasti")
    assert not any(c.endswith("speedup") for c in plain.columns) and len(plain) == 6


def test_fused_cells_meet_their_unfused_twin_on_the_same_backend(mods, tmp_path):
    rio, rim, *_ = mods
    specs, graphs = [], {}
    for w, p in (("p3", 0.3), ("p05", 0.05)):
        ds = f"g-{w}"
        graphs[ds] = {"graph": "g", "weights": f"const:{p}"}
        specs.append((ds, "gim", "gIM", im_result(seconds=3.0, warm_up=1.0, sampling=(0.4, 0.8, 0.4)), 50.0, True))
        specs.append((ds, "gimcpu", "gIM CPU", im_result(seconds=30.0, warm_up=1.0, backend="cpu"), 50.0, True))
        for width, share in ((32, 4), (256, 8 if p > 0.1 else 0.5)):
            specs.append((ds, f"fused{width}", f"B={width}",
                          im_result(seconds=1.0 + 1.6 / share, warm_up=1.0, sampler="fused", width=width,
                                    sampling=(0.4 / share, 0.8 / share, 0.4 / share)), 50.0, True))
    df = rio.collect_im(im_cells(tmp_path, specs), {ds: {} for ds in graphs}, graphs)
    speedups = rim.sampler_speedups(df)
    assert len(speedups) == 4 and set(speedups["unfused"]) == {"gIM"}  # never the CPU twin
    got = {(r.weights, r.fused_batch_width): r.speedup_sampling for r in speedups.itertuples()}
    assert got == pytest.approx({("const:0.3", 32): 4, ("const:0.3", 256): 8, ("const:0.05", 32): 4,
                                 ("const:0.05", 256): 0.5})
    table = rim.occupancy_table(speedups)
    assert list(table["weights"]) == ["const:0.05", "const:0.05", "const:0.3", "const:0.3"]
    assert list(table["B"]) == [32, 256, 32, 256]
    assert table["frontier peak (MB)"].iloc[0] == pytest.approx(2.0) and table["masks (MB)"].iloc[0] == 5.0
    assert table["solve speedup"].iloc[0] == pytest.approx(2.0 / 0.4)

    fig = mods[3].speedup_figure(speedups)
    fig.canvas.draw()
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.05", "0.3"]
    lines = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
    assert len(lines) == 2 and sorted(tuple(ln.get_ydata()) for ln in lines) == sorted([(4.0, 4.0), (0.5, 8.0)])
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] < 0.5 and ax.get_ylim()[1] > 8


def test_no_twin_gives_an_empty_speedup_figure(mods):
    *_, sweep = mods
    fig = sweep.speedup_figure(pd.DataFrame())
    assert "no fused-sampler cell" in fig.axes[0].texts[0].get_text()


# ---- structural diversity search ------------------------------------------------------------------


def sds_result(model, k, t, seconds, backend="cpu"):
    return {"kind": "sds", "model": model, "k": k, "t": t, "bound": "support", "t_score": 3, "ties_at_t": 4,
            "scored": 50, "pruned": 950, "candidates": 60, "batches": 2, "stop": "bound", "seconds": seconds,
            "graph": {"undirected_edges": 9000, "triangles": 640}, "peak_device_memory": 0,
            "backend": {"backend": backend}, "top": []}


def sds_cells(tmp_path):
    cells = []
    timings = {"gpu": 1.0, "cpu16": 4.0, "cpu1": 20.0}
    for ds in ("ep", "wv"):
        for model in ("truss", "comp", "core"):
            for alg, base in timings.items():
                sweep = [(k, 10) for k in (2, 3, 4)] + [(3, t) for t in (5, 20)] if (ds, model) == ("ep", "truss") \
                    else [(4, 100)]
                for k, t in sweep:
                    path = tmp_path / ds / f"sds-{model}" / alg / f"k{k}-t{t}.json"
                    seconds = base * (5 - k) * t / 10
                    cells.append({"dataset": ds, "algorithm": alg, "label": alg.upper(),
                                  "result": write(path, sds_result(model, k, t, seconds,
                                                                   "cuda" if alg == "gpu" else "cpu")),
                                  "verify": write(path.with_suffix(".verify.json"),
                                                  {"passed": not (ds == "wv" and alg == "cpu1"), "rescored": 7})})
    return cells


def test_sds_rows_and_the_table_2_summary(mods, tmp_path):
    _, _, rsds, _ = mods
    df = rsds.collect_sds(sds_cells(tmp_path), {"ep": {"graph": "epinions"}})
    assert len(df) == 3 * (2 * 2 + 5 + 1)
    row = df[(df["dataset"] == "ep") & (df["model"] == "truss") & (df["k"] == 2) & (df["algorithm"] == "gpu")].iloc[0]
    assert row.seconds == 3.0 and row.triangles == 640 and row.rescored == 7 and row.backend == "cuda"
    assert row.graph == "epinions" and df[df["dataset"] == "wv"].iloc[0].graph == "wv"
    summary = rsds.sds_summary(df, "cpu1")
    assert list(summary.columns) == ["model", "dataset", "k", "t", "GPU (s)", "CPU16 (s)", "CPU1 (s)", "speedup",
                                     "verified"]
    assert list(summary["model"]) == ["comp"] * 2 + ["core"] * 2 + ["truss"] * 6  # the paper's order
    assert list(summary["speedup"]) == pytest.approx([20.0] * len(summary))  # CPU1 / GPU, the fastest
    assert list(summary[summary["dataset"] == "wv"]["verified"]) == [False] * 3
    assert summary[summary["dataset"] == "ep"]["verified"].all()
    assert math.isnan(rsds.sds_summary(df, "merit")["speedup"].iloc[0])


def test_sds_rejects_other_kinds(mods, tmp_path):
    _, _, rsds, _ = mods
    r = write(tmp_path / "r.json", {"kind": "im"})
    with pytest.raises(ValueError, match="expected 'sds'"):
        rsds.collect_sds([{"dataset": "x", "algorithm": "a", "result": r}])


def test_time_against_k_and_t_panels_per_sweep(mods, tmp_path):
    _, _, rsds, sweep = mods
    df = rsds.collect_sds(sds_cells(tmp_path))
    assert sweep.sweep_groups(df, "k") == [("ep", "truss", 10)]
    assert sweep.sweep_groups(df, "t") == [("ep", "truss", 3)]
    for by, xs in (("k", [2, 3, 4]), ("t", [5, 10, 20])):
        fig = sweep.sds_time_figure(df, by)
        fig.canvas.draw()
        (ax,) = fig.axes
        assert list(ax.get_xticks()) == xs and ax.get_yscale() == "log"
        assert len(ax.get_lines()) == 3 and all(list(ln.get_xdata()) == xs for ln in ax.get_lines())
        assert fig.get_supxlabel() == sweep.AXIS_LABELS[by]
    out = tmp_path / "k.png"
    sweep.sds_time(df, "k", out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    single = df[df["k"] == 4]
    assert "no sds cells vary k" in sweep.sds_time_figure(single, "k").axes[0].texts[0].get_text()

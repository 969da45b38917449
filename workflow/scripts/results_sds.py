"""Read structural diversity search cells (`gpucore sds` JSON, kind `sds`) and their verification into
a table of one row per cell, and pivot it into the shape of Table 2 of Huang et al., "GPU-accelerated
Structural Diversity Search in Graphs" (running time per model and graph, one column per method, and
the speedup of the fastest over a baseline). Bookkeeping only, no solver code.
"""

from __future__ import annotations

import math

import pandas as pd

from results_io import backend_name, load_json, verify_passed

#: the models in the order of the paper's tables
MODELS = ("comp", "core", "truss")

SDS_COLUMNS = [
    "dataset", "graph", "model", "k", "t", "algorithm", "label", "backend", "ranks", "bound", "seconds", "t_score",
    "ties_at_t", "scored", "pruned", "candidates", "batches", "stop", "undirected_edges", "triangles",
    "peak_device_memory", "rescored", "verified", "result",
]


def sds_row(result: dict, report: dict | None, *, dataset: str, algorithm: str, label: str | None = None,
            graph: str | None = None, path: str = "") -> dict:
    """One row per sds cell: its parameters, time, answer summary and the oracle's verdict."""
    facts = result.get("graph") or {}
    return {
        "dataset": dataset,
        "graph": graph or dataset,
        "model": result.get("model"),
        "k": int(result["k"]),
        "t": int(result["t"]),
        "algorithm": algorithm,
        "label": label or algorithm,
        "backend": backend_name(result.get("backend")),
        "ranks": int(result.get("ranks", 1)),
        "bound": result.get("bound"),
        "seconds": float(result["seconds"]),
        "t_score": result.get("t_score"),
        "ties_at_t": result.get("ties_at_t"),
        "scored": result.get("scored"),
        "pruned": result.get("pruned"),
        "candidates": result.get("candidates"),
        "batches": result.get("batches"),
        "stop": result.get("stop"),
        "undirected_edges": facts.get("undirected_edges"),
        "triangles": facts.get("triangles"),
        "peak_device_memory": result.get("peak_device_memory"),
        "rescored": (report or {}).get("rescored"),
        "verified": verify_passed(report),
        "result": path,
    }


def collect_sds(cells: list[dict], graphs: dict[str, dict] | None = None) -> pd.DataFrame:
    """`cells`: [{'dataset', 'algorithm', 'label', 'result', 'verify'}] (in the configuration's order)
    -> one row per cell; ``graphs``: dataset -> {'graph': the graph it is} (default: itself)."""
    rows = []
    for cell in cells:
        result = load_json(cell["result"])
        if result.get("kind") != "sds":
            raise ValueError(f"{cell['result']}: kind {result.get('kind')!r}, expected 'sds'")
        report = load_json(cell["verify"]) if cell.get("verify") else None
        rows.append(sds_row(result, report, dataset=cell["dataset"], algorithm=cell["algorithm"],
                            label=cell.get("label"), graph=((graphs or {}).get(cell["dataset"]) or {}).get("graph"),
                            path=str(cell["result"])))
    return pd.DataFrame(rows, columns=SDS_COLUMNS)


def _model_rank(model) -> int:
    return MODELS.index(model) if model in MODELS else len(MODELS)


def sds_summary(df: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Table 2's shape: one row per (model, dataset, k, t), the seconds of every algorithm in a column
    ``<label> (s)`` (in the order the algorithms first appear), ``speedup`` = the baseline's time over
    the fastest algorithm's (NaN without the baseline in that row), ``verified`` = every cell of the
    row passed the oracle."""
    keys = ["model", "dataset", "k", "t"]
    labels = list(dict.fromkeys(df["label"]))
    if df.empty:
        return pd.DataFrame(columns=keys + [f"{lab} (s)" for lab in labels] + ["speedup", "verified"])
    times = df.pivot_table(index=keys, columns="label", values="seconds", aggfunc="first")
    times = times.reindex(columns=labels)
    base_label = df.loc[df["algorithm"] == baseline, "label"].iloc[0] if baseline in set(df["algorithm"]) else None
    out = times.rename(columns=lambda lab: f"{lab} (s)").reset_index()
    fastest = times.min(axis=1).to_numpy()
    out["speedup"] = times[base_label].to_numpy() / fastest if base_label is not None else math.nan
    verdicts = df.groupby(keys)["verified"].agg(lambda s: bool(s.fillna(False).astype(bool).all()))
    out["verified"] = verdicts.reindex(pd.MultiIndex.from_frame(out[keys])).to_numpy()
    order = out["model"].map(_model_rank)
    return out.assign(_order=order).sort_values(["_order", "dataset", "k", "t"]).drop(columns="_order") \
        .reset_index(drop=True)

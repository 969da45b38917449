"""Comparisons between the IM cells of one configuration, from the IM summary (results_io.collect_im):

- ``compare_table``: the shape of Table 3 of Göktürk and Kaya, "DiFuseR: A Distributed Sketch-based
  Influence Maximization Algorithm for GPUs" (graphs x weight settings; time and oracle spread of
  every algorithm, and each one's speedup and spread ratio against a baseline);
- ``sampler_speedups`` and ``occupancy_table``: the fused sampler against the unfused (gIM) one on
  the same cell, as in Fig. 7 (speedup against the edge probability, per batch width) and Table 2
  (batch occupancy and frontier memory per probability) of Neff et al., "FuseIM: Fusing
  Probabilistic Traversals for Influence Maximization on Exascale Systems", ICS 2024.

Bookkeeping only, no solver code.
"""

from __future__ import annotations

import math
import re

import pandas as pd

#: what makes two IM cells comparable: the same graph and weights (so the same dataset), model and k
CELL = ["dataset", "model", "k"]
MB = 1e6


def weight_value(weights) -> float:
    """The constant edge probability of a weight setting `const:P`, else NaN (wc, uniform, normal)."""
    m = re.fullmatch(r"const:([0-9.eE+-]+)", str(weights))
    return float(m.group(1)) if m else math.nan


def weight_order(values) -> list:
    """Weight settings in the order of a p axis: constants by p, then the others by name."""
    values = list(dict.fromkeys(values))
    const = sorted((v for v in values if not math.isnan(weight_value(v))), key=weight_value)
    return const + sorted(v for v in values if math.isnan(weight_value(v)))


def compared_cells(summary: pd.DataFrame) -> pd.DataFrame:
    """The IM rows whose cell (dataset, model, k) was run by more than one algorithm."""
    counts = summary.groupby(CELL)["algorithm"].transform("count")
    return summary[counts > 1]


def compare_table(summary: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """One row per compared cell, rows ordered by graph then weight setting: ``<label> time (s)``
    (solve, warm-up excluded) and ``<label> spread`` (the oracle's) of every algorithm; with a
    baseline algorithm, ``<label> speedup`` (baseline time / time) and ``<label> spread ratio``
    (spread / baseline spread) of every other; ``verified``: every cell of the row passed."""
    rows = compared_cells(summary)
    keys = ["graph", "weights", "model", "k", "dataset"]
    labels = list(dict.fromkeys(rows.sort_values("algorithm", kind="stable")["label"]))
    if rows.empty:
        return pd.DataFrame(columns=keys[:-1] + ["verified"])
    wide = rows.set_index(keys + ["label"])[["solve_seconds", "oracle_spread"]].unstack("label")
    out = wide.index.to_frame(index=False)
    for lab in labels:
        out[f"{lab} time (s)"] = wide["solve_seconds"].reindex(columns=labels)[lab].to_numpy()
        out[f"{lab} spread"] = wide["oracle_spread"].reindex(columns=labels)[lab].to_numpy()
    base = rows.loc[rows["algorithm"] == baseline, "label"]
    if len(base):
        b = base.iloc[0]
        for lab in labels:
            if lab != b:
                out[f"{lab} speedup"] = out[f"{b} time (s)"] / out[f"{lab} time (s)"]
                out[f"{lab} spread ratio"] = out[f"{lab} spread"] / out[f"{b} spread"]
    verdicts = rows.groupby(keys)["verified"].agg(lambda s: bool(s.fillna(False).astype(bool).all()))
    out["verified"] = verdicts.reindex(wide.index).to_numpy()
    order = {w: i for i, w in enumerate(weight_order(out["weights"]))}
    out = out.assign(_w=out["weights"].map(order)).sort_values(["graph", "_w", "model", "k"], kind="stable")
    return out.drop(columns=["_w", "dataset"]).reset_index(drop=True)


def sampler_speedups(summary: pd.DataFrame) -> pd.DataFrame:
    """Every fused-sampler cell with its unfused twin: the gim-sampler IMM cell of the same dataset,
    model, k and backend (the first by algorithm name when there are several). Adds
    ``speedup_sampling`` (the twin's RR-set sampling seconds over the fused cell's: lower-bound,
    final and estimate phases) and ``speedup_solve`` (the same for the solve, warm-up excluded)."""
    imm = summary[summary["method"].isin(["IMM", "CR-NAIMM"])]
    fused = imm[imm["sampler"] == "fused"]
    twins = imm[imm["sampler"] == "gim"].sort_values("algorithm").drop_duplicates(CELL + ["backend"])
    twins = twins[CELL + ["backend", "label", "sampling_seconds", "solve_seconds"]].rename(
        columns={"label": "unfused", "sampling_seconds": "unfused_sampling_seconds",
                 "solve_seconds": "unfused_solve_seconds"})
    out = fused.merge(twins, on=CELL + ["backend"], how="inner")
    out["speedup_sampling"] = out["unfused_sampling_seconds"] / out["sampling_seconds"]
    out["speedup_solve"] = out["unfused_solve_seconds"] / out["solve_seconds"]
    return out


OCCUPANCY_COLUMNS = {
    "graph": "graph", "weights": "weights", "model": "model", "k": "k", "label": "algorithm",
    "fused_batch_width": "B", "fused_occupancy": "occupancy", "fused_edge_read_ratio": "edge reads saved (x)",
    "frontier_mb": "frontier peak (MB)", "mask_mb": "masks (MB)", "sampling_seconds": "sampling (s)",
    "speedup_sampling": "sampling speedup", "speedup_solve": "solve speedup", "verified": "verified",
}


def occupancy_table(speedups: pd.DataFrame) -> pd.DataFrame:
    """FuseIM's Table 2 in our terms, one row per fused cell (graph, then weight setting, then
    batch width): batch occupancy (traversals per expanded entry over B), edge reads saved by
    fusing, the peak frontier list and the masks in MB, and the speedups over the unfused sampler."""
    d = speedups.assign(frontier_mb=speedups["fused_frontier_bytes_peak"] / MB,
                        mask_mb=speedups["fused_mask_bytes"] / MB,
                        fused_batch_width=speedups["fused_batch_width"].astype("Int64"))
    order = {w: i for i, w in enumerate(weight_order(d["weights"]))}
    d = d.assign(_w=d["weights"].map(order)).sort_values(["graph", "_w", "model", "k", "fused_batch_width"],
                                                         kind="stable")
    return d[list(OCCUPANCY_COLUMNS)].rename(columns=OCCUPANCY_COLUMNS).reset_index(drop=True)

"""Seaborn figures of the AMCSS cells, mirroring MERIT's figures (no solver code here).

- cost vs eta (Figs 5 and 7) and time vs eta (Figs 6 and 8): one panel per dataset, one figure per
  diffusion model, algorithms as hue, mean over realizations with a standard-deviation band;
- time breakdown (Figs 11-12): per dataset and eta, one stacked bar per algorithm, split into
  mRR-set generation, mRR-set update and other (selection, diffusion, bookkeeping);
- verification: the final active count of every realization against eta (all points must lie on or
  above the diagonal), marker filled when the oracle passed the cell.

Input: the realization table of results_io.collect_amcss.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

PHASE_COLUMNS = (("t_generate", "generate"), ("t_update", "update"), ("t_other", "other"))


def _save(fig, path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=150, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def _empty(path, message: str) -> None:
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    _save(fig, path)


def _hue_order(df):
    return list(dict.fromkeys(df.sort_values(["algorithm"])["label"]))


def metric_vs_eta(df: pd.DataFrame, model: str, metric: str, path) -> None:
    """metric: 'cost' (raw total seed cost) or 'time' (seconds per realization, log scale)."""
    sns.set_theme(style="whitegrid", context="paper")
    sub = df[df["model"] == model]
    if sub.empty:
        _empty(path, f"no {model} cells")
        return
    y, ylabel = {"cost": ("total_cost", "total seed cost"), "time": ("seconds", "time per realization (s)")}[metric]
    datasets = list(dict.fromkeys(sub["dataset"]))
    g = sns.relplot(
        data=sub, x="eta", y=y, hue="label", hue_order=_hue_order(sub), style="label", col="dataset",
        col_order=datasets, col_wrap=min(4, len(datasets)), kind="line", marker="o", errorbar="sd",
        facet_kws={"sharex": False, "sharey": False}, height=2.8, aspect=1.1,
    )
    g.set_axis_labels("eta (influence threshold)", ylabel)
    g.set_titles("{col_name}")
    if metric == "time":
        for ax in g.axes.flat:
            ax.set_yscale("log")
    if g.legend is not None:
        g.legend.set_title("algorithm")
    g.figure.suptitle(f"{'Seed cost' if metric == 'cost' else 'Running time'} vs eta, {model} model", y=1.03)
    _save(g.figure, path)


def breakdown(df: pd.DataFrame, model: str, path) -> None:
    """Stacked bars: mean generate / update / other seconds per (dataset, eta, algorithm)."""
    sns.set_theme(style="whitegrid", context="paper")
    sub = df[df["model"] == model]
    if sub.empty:
        _empty(path, f"no {model} cells")
        return
    cols = [c for c, _ in PHASE_COLUMNS]
    mean = sub.groupby(["dataset", "eta", "label"], sort=True)[cols].mean().reset_index()
    datasets = list(dict.fromkeys(sub["dataset"]))
    labels = _hue_order(sub)
    palette = sns.color_palette("colorblind", len(PHASE_COLUMNS))
    hatches = ["", "//", "..", "xx", "\\\\", "oo"]
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.4 * len(datasets), 3.0), squeeze=False)
    width = 0.8 / max(1, len(labels))
    for ax, ds in zip(axes[0], datasets):
        part = mean[mean["dataset"] == ds]
        etas = sorted(part["eta"].unique())
        x = np.arange(len(etas))
        for j, lab in enumerate(labels):
            rows = part[part["label"] == lab].set_index("eta").reindex(etas)
            bottom = np.zeros(len(etas))
            for (col, name), color in zip(PHASE_COLUMNS, palette):
                vals = rows[col].fillna(0).to_numpy()
                ax.bar(x + (j - (len(labels) - 1) / 2) * width, vals, width * 0.95, bottom=bottom, color=color,
                       hatch=hatches[j % len(hatches)], edgecolor="black", linewidth=0.4,
                       label=name if j == 0 else None)
                bottom += vals
        ax.set_xticks(x, [str(e) for e in etas])
        ax.set_xlabel("eta")
        ax.set_title(ds)
    axes[0][0].set_ylabel("mean time per realization (s)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, ec="black", lw=0.4) for c in palette]
    handles += [plt.Rectangle((0, 0), 1, 1, fc="white", ec="black", hatch=hatches[j % len(hatches)]) for j in range(len(labels))]
    names = [n for _, n in PHASE_COLUMNS] + [f"bar {j + 1}: {lab}" for j, lab in enumerate(labels)]
    fig.legend(handles, names, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.suptitle(f"Time breakdown, {model} model (bars left to right: {', '.join(labels)})", y=1.02)
    fig.tight_layout()
    _save(fig, path)


def verification(df: pd.DataFrame, path) -> None:
    """Final active count of every realization vs eta, per (dataset, model); the diagonal is eta."""
    sns.set_theme(style="whitegrid", context="paper")
    if df.empty:
        _empty(path, "no AMCSS cells")
        return
    d = df.rename(columns={"algorithm": "algorithm_key", "label": "algorithm"})
    d["panel"] = d["dataset"] + " / " + d["model"]
    # dodge the algorithms a little along x so that equal counts stay visible
    order = list(dict.fromkeys(d.sort_values("algorithm_key")["algorithm"]))
    span = d.groupby("panel")["eta"].transform(lambda s: max(1.0, float(s.max() - s.min()) or float(s.max())))
    shift = d["algorithm"].map({a: i - (len(order) - 1) / 2 for i, a in enumerate(order)})
    d["eta_dodged"] = d["eta"] + shift * 0.015 * span
    d["oracle"] = d["verified"].map({True: "passed", False: "FAILED"}).fillna("not verified")
    panels = list(dict.fromkeys(d.sort_values(["dataset", "model"])["panel"]))
    g = sns.relplot(
        data=d, x="eta_dodged", y="active", hue="algorithm", hue_order=order, style="oracle",
        style_order=[s for s in ("passed", "FAILED", "not verified") if s in set(d["oracle"])],
        col="panel", col_order=panels, col_wrap=min(4, len(panels)), kind="scatter", alpha=0.75, s=28,
        facet_kws={"sharex": False, "sharey": False}, height=2.8, aspect=1.1,
    )
    for ax, panel in zip(g.axes.flat, panels):
        etas = d.loc[d["panel"] == panel, "eta"]
        lo, hi = float(etas.min()), float(etas.max())
        pad = max(1.0, 0.05 * (hi - lo))
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="black", lw=0.8, ls="--", zorder=0)
    g.set_axis_labels("eta (influence threshold)", "final active users")
    g.set_titles("{col_name}")
    n_real = len(d)
    n_ok = int((d["active"] >= d["eta"]).sum())
    g.figure.suptitle(f"Verification: {n_ok} of {n_real} realizations reach eta (dashed: active = eta)", y=1.03)
    _save(g.figure, path)

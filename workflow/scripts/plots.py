"""Figures of the AMCSS cells, mirroring MERIT's figures (no solver code here).

- cost vs eta (Figs 5 and 7) and time vs eta (Figs 6 and 8): one panel per dataset, one figure per
  diffusion model, one line per algorithm through the mean over realizations; the spread is shown
  as the realizations themselves when a cell has fewer than ``POINTS_BELOW`` of them, else as a
  min-max band (a standard-deviation band of three values says little, and on a log axis it
  reaches below zero);
- time breakdown (Figs 11-12): per dataset and eta, one stacked bar per algorithm, split into
  mRR-set generation, mRR-set update and other (selection, diffusion, bookkeeping);
- verification: every realization's final active count over eta, one row per cell (at or right of
  the dashed line at 1: eta reached), marker by the oracle's verdict.

Every eta axis has the ticks of the etas run (a single eta is one tick, not an axis of 190-210) and
the label ``ETA_LABEL``; log axes have plain labels (0.05, 1, 20), no minor labels. Figures are at
most ``MAX_WIDTH`` inches wide (the report's content width at 150 dpi). The ``*_figure`` functions
return the matplotlib figure (tests inspect it); the others write it.

Input: the realization table of results_io.collect_amcss.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator  # noqa: E402

PHASE_COLUMNS = (("t_generate", "generate"), ("t_update", "update"), ("t_other", "other"))
ETA_LABEL = "eta (users to activate)"
#: cells with fewer realizations show them as points; from this many on, a min-max band
POINTS_BELOW = 5
#: widest figure (inches; 1,350 pixels at 150 dpi) and panels per row
MAX_WIDTH = 9.0
COLUMNS = 3
DPI = 150
MARKERS = "osD^v<>P*"


def _save(fig, path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def _empty(message: str):
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


def _hue_order(df):
    return list(dict.fromkeys(df.sort_values(["algorithm"])["label"]))


def _style(labels):
    """(colour, marker) of every algorithm label, the same in every figure of a run."""
    palette = sns.color_palette("colorblind", max(3, len(labels)))
    return {lab: (palette[i], MARKERS[i % len(MARKERS)]) for i, lab in enumerate(labels)}


def _grid(panels: int, height: float = 2.6):
    """A figure of ``panels`` axes, ``COLUMNS`` to a row, at most ``MAX_WIDTH`` wide (unused axes removed)."""
    cols = min(COLUMNS, panels)
    rows = math.ceil(panels / cols)
    width = min(MAX_WIDTH, max(5.0, 3.0 * cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width, height * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[panels:]:
        ax.remove()
    return fig, flat[:panels]


def _eta_axis(ax, etas) -> None:
    """Ticks at the etas run (plain numbers), with room around them; one eta: one tick, +-10%."""
    etas = sorted(float(e) for e in etas)
    lo, hi = etas[0], etas[-1]
    pad = 0.1 * lo if hi == lo else 0.08 * (hi - lo)
    ax.set_xlim(lo - pad, hi + pad)
    ax.xaxis.set_major_locator(FixedLocator(etas))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.xaxis.set_minor_locator(NullLocator())


def _dodge(labels, etas):
    """x offset of each algorithm's marks (so that equal values stay apart): 2.5% of the axis between
    neighbours."""
    lo, hi = float(min(etas)), float(max(etas))
    width = 0.2 * lo if hi == lo else 1.16 * (hi - lo)
    return {lab: (i - (len(labels) - 1) / 2) * 0.025 * width for i, lab in enumerate(labels)}


def _log_axis(ax, values) -> None:
    """A log y axis labelled with plain numbers at 1-2-5, 1-3 or 1 times powers of ten (fewer marks the
    more decades the values span), no minor labels, and limits that hold the values and two marks."""
    values = np.asarray([v for v in values if v > 0], dtype=float)
    ax.set_yscale("log")
    if values.size == 0:
        return
    lo, hi = values.min() / 1.3, values.max() * 1.3
    decades = math.log10(hi / lo)
    subs = (1, 2, 5) if decades <= 1.5 else (1, 3) if decades <= 3 else (1,)
    ticks = [m * 10.0**k for k in range(-7, 8) for m in subs]
    if sum(lo <= t <= hi for t in ticks) < 2:
        lo = max([t for t in ticks if t <= lo], default=lo)
    if sum(lo <= t <= hi for t in ticks) < 2:
        hi = min([t for t in ticks if t >= hi], default=hi)
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_locator(FixedLocator([t for t in ticks if lo <= t <= hi]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _legend(fig, handles, names, note: str | None = None) -> None:
    """The legend below the panels (rows of entries no wider than the figure, ``note`` above them)."""
    ncol = min(len(names), max(2, int(fig.get_figwidth() // 1.5)))
    fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol,
               frameon=False, fontsize="small", title=note, title_fontsize="small")


# ---- cost / time vs eta ----------------------------------------------------------------------------


def metric_figure(df: pd.DataFrame, model: str, metric: str):
    """metric: 'cost' (raw total seed cost, linear axis from 0) or 'time' (seconds per realization, log axis)."""
    sns.set_theme(style="whitegrid", context="paper")
    sub = df[df["model"] == model]
    if sub.empty:
        return _empty(f"no {model} cells")
    y, ylabel = {"cost": ("total_cost", "total seed cost"), "time": ("seconds", "time per realization (s)")}[metric]
    datasets = list(dict.fromkeys(sub["dataset"]))
    labels = _hue_order(sub)
    style = _style(labels)
    few = int(sub.groupby(["dataset", "eta", "label"])[y].count().min()) < POINTS_BELOW
    fig, axes = _grid(len(datasets))
    for ax, ds in zip(axes, datasets):
        part = sub[sub["dataset"] == ds]
        etas = sorted(part["eta"].unique())
        shift = _dodge(labels, etas)
        for lab in labels:
            cell = part[part["label"] == lab]
            if cell.empty:
                continue
            color, marker = style[lab]
            stats = cell.groupby("eta")[y].agg(["mean", "min", "max"])
            x = stats.index + shift[lab]
            ax.plot(x, stats["mean"], color=color, marker=marker, lw=1.4, ms=5, zorder=3)
            if few:
                ax.scatter(cell["eta"] + shift[lab], cell[y], color=color, s=9, alpha=0.55, lw=0, zorder=2)
            else:
                ax.fill_between(x, stats["min"], stats["max"], color=color, alpha=0.15, lw=0, zorder=1)
        _eta_axis(ax, etas)
        if metric == "time":
            _log_axis(ax, part[y])
        else:
            ax.set_ylim(bottom=0, top=1.08 * float(part[y].max()) if part[y].max() > 0 else 1)
        ax.set_title(ds)
    fig.supxlabel(ETA_LABEL)
    fig.supylabel(ylabel)
    spread = f"points: the realizations (fewer than {POINTS_BELOW})" if few else "band: min to max over realizations"
    handles = [plt.Line2D([], [], color=style[lab][0], marker=style[lab][1], lw=1.4, ms=5) for lab in labels]
    _legend(fig, handles, labels, f"lines: mean over realizations; {spread}")
    fig.suptitle(f"{'Seed cost' if metric == 'cost' else 'Running time'} vs eta, {model} model")
    fig.tight_layout()
    return fig


def metric_vs_eta(df: pd.DataFrame, model: str, metric: str, path) -> None:
    _save(metric_figure(df, model, metric), path)


# ---- time breakdown --------------------------------------------------------------------------------


def breakdown_figure(df: pd.DataFrame, model: str):
    """Stacked bars: mean generate / update / other seconds per (dataset, eta, algorithm)."""
    sns.set_theme(style="whitegrid", context="paper")
    sub = df[df["model"] == model]
    if sub.empty:
        return _empty(f"no {model} cells")
    cols = [c for c, _ in PHASE_COLUMNS]
    mean = sub.groupby(["dataset", "eta", "label"], sort=True)[cols].mean().reset_index()
    datasets = list(dict.fromkeys(sub["dataset"]))
    labels = _hue_order(sub)
    palette = sns.color_palette("colorblind", len(PHASE_COLUMNS))
    hatches = ["", "//", "..", "xx", "\\\\", "oo"]
    fig, axes = _grid(len(datasets), height=2.4)
    width = 0.8 / max(1, len(labels))
    for ax, ds in zip(axes, datasets):
        part = mean[mean["dataset"] == ds]
        etas = sorted(part["eta"].unique())
        x = np.arange(len(etas))
        for j, lab in enumerate(labels):
            rows = part[part["label"] == lab].set_index("eta").reindex(etas)
            bottom = np.zeros(len(etas))
            for (col, _name), color in zip(PHASE_COLUMNS, palette):
                vals = rows[col].fillna(0).to_numpy()
                ax.bar(x + (j - (len(labels) - 1) / 2) * width, vals, width * 0.95, bottom=bottom, color=color,
                       hatch=hatches[j % len(hatches)], edgecolor="black", linewidth=0.4)
                bottom += vals
        ax.set_xticks(x, [f"{e:,}" for e in etas])
        ax.set_title(ds)
    fig.supxlabel(ETA_LABEL)
    fig.supylabel("mean time per realization (s)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, ec="black", lw=0.4) for c in palette]
    handles += [plt.Rectangle((0, 0), 1, 1, fc="white", ec="black", hatch=hatches[j % len(hatches)])
                for j in range(len(labels))]
    names = [n for _, n in PHASE_COLUMNS] + [f"bar {j + 1}: {lab}" for j, lab in enumerate(labels)]
    _legend(fig, handles, names)
    fig.suptitle(f"Time breakdown, {model} model")
    fig.tight_layout()
    return fig


def breakdown(df: pd.DataFrame, model: str, path) -> None:
    _save(breakdown_figure(df, model), path)


# ---- verification ----------------------------------------------------------------------------------

_VERDICTS = {"passed": ("o", True), "FAILED": ("X", True), "not verified": ("o", False)}


def verification_figure(df: pd.DataFrame):
    """One row per cell (dataset, model, eta): every realization's final active count over eta, coloured
    by algorithm; the dashed line at 1 is eta; hollow markers: not verified, crosses: the oracle failed."""
    sns.set_theme(style="whitegrid", context="paper")
    if df.empty:
        return _empty("no AMCSS cells")
    d = df.copy()
    d["ratio"] = d["active"] / d["eta"]
    d["oracle"] = d["verified"].map({True: "passed", False: "FAILED"}).fillna("not verified")
    cells = d[["dataset", "model", "eta"]].drop_duplicates().sort_values(["dataset", "model", "eta"])
    rows = [f"{r.dataset} {r.model} {r.eta:,}" for r in cells.itertuples()]
    d["row"] = [f"{r.dataset} {r.model} {r.eta:,}" for r in d.itertuples()]
    labels = _hue_order(d)
    style = _style(labels)
    fig, ax = plt.subplots(figsize=(min(MAX_WIDTH, 7.0), 1.3 + 0.26 * len(rows)))
    index = {row: i for i, row in enumerate(rows)}
    for j, lab in enumerate(labels):
        for verdict, (marker, filled) in _VERDICTS.items():
            part = d[(d["label"] == lab) & (d["oracle"] == verdict)]
            if part.empty:
                continue
            y = part["row"].map(index) + (j - (len(labels) - 1) / 2) * 0.18
            color = style[lab][0]
            ax.scatter(part["ratio"], y, marker=marker, s=22, alpha=0.8, zorder=3,
                       facecolors=color if filled else "none", edgecolors=color, linewidths=0.8)
    ax.axvline(1.0, color="black", lw=0.8, ls="--", zorder=1)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(left=min(0.95, float(d["ratio"].min()) - 0.02))
    ax.set_xlabel("final active users / eta (at or right of the dashed line: eta reached)")
    n_ok, n_all = int((d["active"] >= d["eta"]).sum()), len(d)
    verdicts = d.groupby("result")["oracle"].first() if "result" in d else d["oracle"]
    passed = int((verdicts == "passed").sum())
    ax.set_title(f"Verification: {n_ok} of {n_all} realizations reach eta; the oracle passed {passed} of "
                 f"{len(verdicts)} cells", fontsize="medium")
    handles = [plt.Line2D([], [], color=style[lab][0], marker="o", ls="none") for lab in labels]
    names = list(labels)
    for verdict in ("FAILED", "not verified"):
        if (d["oracle"] == verdict).any():
            marker, filled = _VERDICTS[verdict]
            handles.append(plt.Line2D([], [], color="black", marker=marker, ls="none",
                                      markerfacecolor="black" if filled else "none"))
            names.append(f"oracle: {verdict}")
    ax.legend(handles, names, loc="lower right", fontsize="small", frameon=True)
    fig.tight_layout()
    return fig


def verification(df: pd.DataFrame, path) -> None:
    _save(verification_figure(df), path)

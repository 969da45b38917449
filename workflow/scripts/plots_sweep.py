"""Figures of a metric against a swept parameter, one panel per group of cells, one line per algorithm:

- structural diversity search, time against k at a fixed t and against t at a fixed k (Exp-7 of
  Huang et al., "GPU-accelerated Structural Diversity Search in Graphs": Figures 9 and 10), from
  the sds cell table (results_sds.collect_sds);
- the fused sampler's speedup over the unfused one against the edge probability p, one line per
  batch width (Fig. 7 of Neff et al., "FuseIM", ICS 2024), from results_im.sampler_speedups.

The ``*_figure`` functions return the matplotlib figure (tests inspect it); the others write it.
Axes, legends, sizes and colours follow plots.py.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

import plots
from plots import plt, sns
from results_im import weight_order, weight_value

#: the parameter held fixed while the other is swept
FIXED = {"k": "t", "t": "k"}
AXIS_LABELS = {"k": "k (context threshold)", "t": "t (vertices returned)"}


def sweep_groups(df: pd.DataFrame, by: str) -> list[tuple]:
    """(dataset, model, fixed value) of every group of sds cells with at least two values of ``by``."""
    fixed = FIXED[by]
    counts = df.groupby(["dataset", "model", fixed])[by].nunique()
    return [key for key, count in counts.items() if count >= 2]


def sds_time_figure(df: pd.DataFrame, by: str):
    """Seconds per cell against ``by`` ('k' or 't'), log axes, one panel per (dataset, model, fixed value)."""
    sns.set_theme(style="whitegrid", context="paper")
    groups = sweep_groups(df, by)
    fixed = FIXED[by]
    if not groups:
        return plots._empty(f"no sds cells vary {by} at a fixed {fixed}")
    labels = list(dict.fromkeys(df["label"]))
    style = plots._style(labels)
    fig, axes = plots._grid(len(groups))
    for ax, (dataset, model, value) in zip(axes, groups):
        part = df[(df["dataset"] == dataset) & (df["model"] == model) & (df[fixed] == value)]
        for lab in labels:
            line = part[part["label"] == lab].sort_values(by)
            if not line.empty:
                color, marker = style[lab]
                ax.plot(line[by], line["seconds"], color=color, marker=marker, lw=1.4, ms=5)
        xs = sorted(part[by].unique())
        if by == "t":
            ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(xs))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
        ax.xaxis.set_minor_locator(NullLocator())
        plots._log_axis(ax, part["seconds"])
        ax.set_title(f"{dataset}, {model} ({fixed} = {value})")
    fig.supxlabel(AXIS_LABELS[by])
    fig.supylabel("time (s)")
    handles = [plt.Line2D([], [], color=style[lab][0], marker=style[lab][1], lw=1.4, ms=5) for lab in labels]
    plots._legend(fig, handles, labels)
    fig.suptitle(f"Structural diversity search: time against {by}")
    fig.tight_layout()
    return fig


def sds_time(df: pd.DataFrame, by: str, path) -> None:
    plots._save(sds_time_figure(df, by), path)


def speedup_figure(speedups: pd.DataFrame):
    """Fused over unfused RR-set sampling time against the weight setting (constant p in increasing
    order, then the others), one panel per (graph, model, k), one line per fused algorithm; the
    dashed line at 1 is parity."""
    sns.set_theme(style="whitegrid", context="paper")
    if speedups.empty:
        return plots._empty("no fused-sampler cell has an unfused twin (same dataset, model, k, backend)")
    panels = list(dict.fromkeys(zip(speedups["graph"], speedups["model"], speedups["k"])))
    labels = list(dict.fromkeys(speedups.sort_values(["fused_batch_width", "algorithm"])["label"]))
    style = plots._style(labels)
    fig, axes = plots._grid(len(panels))
    for ax, (graph, model, k) in zip(axes, panels):
        part = speedups[(speedups["graph"] == graph) & (speedups["model"] == model) & (speedups["k"] == k)]
        order = weight_order(part["weights"])
        position = {w: i for i, w in enumerate(order)}
        for lab in labels:
            line = part[part["label"] == lab]
            if not line.empty:
                line = line.assign(x=line["weights"].map(position)).sort_values("x")
                color, marker = style[lab]
                ax.plot(line["x"], line["speedup_sampling"], color=color, marker=marker, lw=1.4, ms=5)
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_xticks(range(len(order)), [f"{weight_value(w):g}" if weight_value(w) == weight_value(w) else w
                                          for w in order])
        ax.set_xlim(-0.4, len(order) - 0.6)
        plots._log_axis(ax, list(part["speedup_sampling"]) + [1.0])
        ax.set_title(f"{graph}, {model}, k = {k}")
    fig.supxlabel("edge probability p (or weight setting)")
    fig.supylabel("sampling speedup over gIM's sampler")
    handles = [plt.Line2D([], [], color=style[lab][0], marker=style[lab][1], lw=1.4, ms=5) for lab in labels]
    plots._legend(fig, handles, labels, "dashed: parity")
    fig.suptitle("Fused RR-set sampling: speedup over the unfused sampler")
    fig.tight_layout()
    return fig


def speedup(speedups: pd.DataFrame, path) -> None:
    plots._save(speedup_figure(speedups), path)

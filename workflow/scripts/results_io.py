"""Read cell results (gpucore amcss / im JSON), their verification and the graph sidecars into
tidy tables, and write tables as CSV, Markdown, LaTeX and HTML. No solver code: only bookkeeping.

Used by the aggregation glue scripts (aggregate_amcss.py, aggregate_im.py, datasets_table.py) and
by tests/test_aggregate.py.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd

PHASES = ("generate", "update", "select", "diffuse")


def load_json(path) -> dict:
    with open(path) as fh:
        return json.load(fh)


def read_cells(path) -> pd.DataFrame:
    """A table of cells written by write_table (CSV), with its `verified` column as True / False / None."""
    df = pd.read_csv(path)
    df["verified"] = df["verified"].map(lambda v: None if pd.isna(v) else str(v) == "True")
    return df


# ---------------------------------------------------------------------------------------------
# verification
# ---------------------------------------------------------------------------------------------


def verify_passed(report: dict | None) -> bool | None:
    """The pass/fail verdict of a `gpucore verify` report (None when there is no report)."""
    if report is None:
        return None
    for key in ("passed", "pass", "ok", "verified", "success"):
        if isinstance(report.get(key), bool):
            return report[key]
    for key in ("status", "result", "verdict", "outcome"):
        value = report.get(key)
        if isinstance(value, str):
            return value.strip().lower() in ("pass", "passed", "ok", "success", "verified")
    raise ValueError(f"verify report without a pass/fail field (keys: {', '.join(sorted(report))})")


def _verify_realizations(report: dict | None) -> dict:
    """world_seed or index -> passed, when the report lists realizations one by one."""
    out = {}
    if not report:
        return out
    for i, r in enumerate(report.get("realizations") or []):
        if not isinstance(r, dict):
            continue
        verdict = None
        for key in ("passed", "pass", "ok"):
            if isinstance(r.get(key), bool):
                verdict = r[key]
                break
        if verdict is None:
            continue
        out[("index", i)] = verdict
        if "world_seed" in r:
            out[("seed", r["world_seed"])] = verdict
    return out


# ---------------------------------------------------------------------------------------------
# AMCSS
# ---------------------------------------------------------------------------------------------


def backend_name(value) -> str | None:
    """The backend of a result: a plain string, or the `backend` / `name` field of a device record."""
    if isinstance(value, dict):
        return value.get("backend") or value.get("name")
    return value


def _seconds_total(value) -> float:
    if value is None:
        return math.nan
    if isinstance(value, dict):
        if "total" in value:
            return float(value["total"])
        return float(sum(v for v in value.values() if isinstance(v, (int, float))))
    return float(value)


def amcss_rows(result: dict, report: dict | None, cost_scale: float, *, dataset: str, algorithm: str,
               label: str | None = None, path: str = "") -> list[dict]:
    """One row per world realization of an AMCSS cell."""
    verdict = verify_passed(report)
    per_real = _verify_realizations(report)
    rows = []
    for i, real in enumerate(result.get("realizations") or []):
        rounds = real.get("rounds") or []
        phase = {p: 0.0 for p in PHASES}
        for rnd in rounds:
            secs = rnd.get("seconds") or {}
            for p in PHASES:
                phase[p] += float(secs.get(p, 0.0) or 0.0)
        total = _seconds_total(real.get("seconds"))
        if math.isnan(total):
            total = sum(phase.values())
        seeds = sum(len(r.get("seeds") or r.get("seed_ids") or []) for r in rounds)
        cost = float(real.get("total_cost", sum(float(r.get("cost", 0.0)) for r in rounds)))
        thetas = [r.get("theta") for r in rounds if isinstance(r.get("theta"), (int, float))]
        ok = per_real.get(("seed", real.get("world_seed")), per_real.get(("index", i), verdict))
        rows.append({
            "dataset": dataset,
            "model": result.get("model"),
            "algorithm": algorithm,
            "label": label or algorithm,
            "backend": backend_name(result.get("backend")),
            "eta": int(result.get("eta")),
            "batch": result.get("batch"),
            "eps": result.get("epsilon", result.get("eps")),
            "realization": i,
            "world_seed": real.get("world_seed"),
            "total_cost": cost,
            "cost_scale": cost_scale,
            "cost_norm": cost / cost_scale if cost_scale else math.nan,
            "seeds": seeds,
            "rounds": len(rounds),
            "active": real.get("active"),
            "reached": real.get("reached"),
            "seconds": total,
            "t_generate": phase["generate"],
            "t_update": phase["update"],
            "t_select": phase["select"],
            "t_diffuse": phase["diffuse"],
            "t_other": max(0.0, total - phase["generate"] - phase["update"]),
            "theta_max": max(thetas) if thetas else None,
            "verified": ok,
            "result": path,
        })
    return rows


def collect_amcss(cells: list[dict], sidecars: dict[str, dict]) -> pd.DataFrame:
    """`cells`: [{'dataset', 'algorithm', 'label', 'result': path, 'verify': path}] -> realization rows."""
    rows = []
    for cell in cells:
        result = load_json(cell["result"])
        if result.get("kind", "amcss") != "amcss":
            raise ValueError(f"{cell['result']}: kind {result.get('kind')!r}, expected 'amcss'")
        report = load_json(cell["verify"]) if cell.get("verify") else None
        scale = float(sidecars[cell["dataset"]].get("cost_scale") or math.nan)
        rows += amcss_rows(result, report, scale, dataset=cell["dataset"], algorithm=cell["algorithm"],
                           label=cell.get("label"), path=str(cell["result"]))
    return pd.DataFrame(rows, columns=AMCSS_COLUMNS)


AMCSS_COLUMNS = [
    "dataset", "model", "algorithm", "label", "backend", "eta", "batch", "eps", "realization", "world_seed",
    "total_cost", "cost_scale", "cost_norm", "seeds", "rounds", "active", "reached", "seconds",
    "t_generate", "t_update", "t_select", "t_diffuse", "t_other", "theta_max", "verified", "result",
]


def amcss_summary(df: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """One row per cell: means over realizations, normalised cost, verification, speedup vs baseline."""
    keys = ["dataset", "model", "eta", "algorithm", "label", "backend", "batch"]
    if df.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    g = df.groupby(keys, sort=True, dropna=False)
    out = g.agg(
        realizations=("realization", "count"),
        cost_mean=("total_cost", "mean"),
        cost_std=("total_cost", "std"),
        cost_norm_mean=("cost_norm", "mean"),
        seeds_mean=("seeds", "mean"),
        rounds_mean=("rounds", "mean"),
        active_min=("active", "min"),
        active_mean=("active", "mean"),
        time_mean=("seconds", "mean"),
        generate_mean=("t_generate", "mean"),
        update_mean=("t_update", "mean"),
        other_mean=("t_other", "mean"),
    ).reset_index()
    out["cost_std"] = out["cost_std"].fillna(0.0)
    out["reached_all"] = g["reached"].apply(lambda s: bool(s.fillna(False).astype(bool).all())).values
    out["verified"] = g["verified"].apply(_all_true).values
    out["speedup"] = math.nan
    if baseline and baseline in set(out["algorithm"]):
        base = out[out["algorithm"] == baseline].set_index(["dataset", "model", "eta"])["time_mean"]
        idx = pd.MultiIndex.from_frame(out[["dataset", "model", "eta"]])
        base_time = base.reindex(idx).to_numpy()
        out["speedup"] = base_time / out["time_mean"].to_numpy()
    return out[SUMMARY_COLUMNS]


def _all_true(s: pd.Series):
    values = [v for v in s if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not values:
        return None
    return bool(all(values))


SUMMARY_COLUMNS = [
    "dataset", "model", "eta", "algorithm", "label", "backend", "batch", "realizations",
    "cost_mean", "cost_std", "cost_norm_mean", "seeds_mean", "rounds_mean", "active_min", "active_mean",
    "reached_all", "time_mean", "generate_mean", "update_mean", "other_mean", "speedup", "verified",
]


# ---------------------------------------------------------------------------------------------
# IM
# ---------------------------------------------------------------------------------------------


def _first_number(d: dict | None, keys):
    if not d:
        return None
    for key in keys:
        v = d.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        if isinstance(v, dict):
            for sub in ("mean", "estimate", "value"):
                if isinstance(v.get(sub), (int, float)):
                    return float(v[sub])
    return None


def solve_seconds(result: dict) -> float:
    """The solve's seconds without the warm-up (compiling and loading kernels, recorded apart)."""
    return _seconds_total(result.get("seconds")) - float(result.get("warm_up_seconds") or 0.0)


#: the IMM phases that draw RR sets (the sampler's share of the solve)
SAMPLING_PHASES = ("lb_sampling", "final_sampling", "estimate")
#: fields of a fused sampler's instrumentation (`sampler_stats`) kept per IM cell
SAMPLER_STATS = ("batch_width", "occupancy", "edge_read_ratio", "frontier_bytes_peak", "mask_bytes", "levels",
                 "traversals")


def im_row(result: dict, report: dict | None, cost_scale: float, *, dataset: str, algorithm: str,
           label: str | None = None, path: str = "", graph: dict | None = None) -> dict:
    """One row per IM cell. ``graph``: {'graph': the dataset's graph without its weights, 'weights':
    the weight setting} (a p-sweep or a weight-setting table groups by them)."""
    seeds = result.get("seed_ids") or result.get("seeds") or []
    oracle = _first_number(report, ("spread", "oracle_spread", "spread_mean", "mean", "estimate"))
    lo = _first_number(report, ("ci_low", "spread_ci_low", "lower"))
    hi = _first_number(report, ("ci_high", "spread_ci_high", "upper"))
    ci = (report or {}).get("ci") or (report or {}).get("spread_ci")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        lo, hi = float(ci[0]), float(ci[1])
    phases = result.get("seconds_by_phase") or {}
    stats = result.get("sampler_stats") or {}
    sampling = [float(phases[p]) for p in SAMPLING_PHASES if isinstance(phases.get(p), (int, float))]
    return {
        "dataset": dataset,
        "graph": (graph or {}).get("graph", dataset),
        "weights": (graph or {}).get("weights"),
        "model": result.get("model"),
        "k": int(result.get("k", len(seeds))),
        "rounds": int(result.get("rounds", 1)),
        "algorithm": algorithm,
        "label": label or algorithm,
        "method": result.get("algorithm"),
        "sampler": result.get("sampler"),
        "backend": backend_name(result.get("backend")),
        "ranks": int(result.get("ranks", 1)),
        "eps": result.get("epsilon", result.get("eps")),
        "estimated_spread": result.get("estimated_spread"),
        "oracle_spread": oracle,
        "oracle_ci_low": lo,
        "oracle_ci_high": hi,
        "theta": result.get("theta"),
        "seconds": _seconds_total(result.get("seconds")),
        "solve_seconds": solve_seconds(result),
        "sampling_seconds": sum(sampling) if sampling else math.nan,
        **{f"fused_{key}": stats.get(key) for key in SAMPLER_STATS},
        "peak_device_memory": result.get("peak_device_memory"),
        "total_cost": result.get("total_cost"),
        "verified": verify_passed(report),
        "result": path,
    }


IM_COLUMNS = [
    "dataset", "graph", "weights", "model", "k", "rounds", "algorithm", "label", "method", "sampler", "backend",
    "ranks", "eps", "estimated_spread", "oracle_spread", "oracle_ci_low", "oracle_ci_high", "theta", "seconds",
    "solve_seconds", "sampling_seconds", *(f"fused_{key}" for key in SAMPLER_STATS), "peak_device_memory",
    "total_cost", "verified", "result",
]


def collect_im(cells: list[dict], sidecars: dict[str, dict], graphs: dict[str, dict] | None = None) -> pd.DataFrame:
    """`cells`: [{'dataset', 'algorithm', 'label', 'result', 'verify'}] -> one row per cell; ``graphs``:
    dataset -> {'graph', 'weights'} (default: the dataset itself, the sidecar's weights)."""
    rows = []
    for cell in cells:
        result = load_json(cell["result"])
        if result.get("kind", "im") != "im":
            raise ValueError(f"{cell['result']}: kind {result.get('kind')!r}, expected 'im'")
        report = load_json(cell["verify"]) if cell.get("verify") else None
        sidecar = sidecars[cell["dataset"]]
        scale = float(sidecar.get("cost_scale") or math.nan)
        graph = (graphs or {}).get(cell["dataset"]) or {"graph": cell["dataset"], "weights": sidecar.get("weights")}
        rows.append(im_row(result, report, scale, dataset=cell["dataset"], algorithm=cell["algorithm"],
                           label=cell.get("label"), path=str(cell["result"]), graph=graph))
    df = pd.DataFrame(rows, columns=IM_COLUMNS)
    return df.sort_values(["dataset", "model", "k", "algorithm"], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# datasets
# ---------------------------------------------------------------------------------------------


def dataset_row(name: str, stats: dict, spec: dict) -> dict:
    """`spec`: {'source': 'generated'|'registry', 'title', 'expected_n', 'expected_m', 'exact', 'sha256',
    'arcs_sha256'}. `sha256_check` is about the file's bytes, `arcs_check` about the graph (the one that
    decides whether a reference run can be rebuilt; preprocessing already failed on a mismatch)."""
    exp_n, exp_m = spec.get("expected_n"), spec.get("expected_m")
    if exp_n is None and exp_m is None:
        size_check = "-"
    elif (exp_n is None or exp_n == stats["n"]) and (exp_m is None or exp_m == stats["m"]):
        size_check = "match" + (" (exact)" if spec.get("exact") else "")
    else:
        size_check = "differs (exact!)" if spec.get("exact") else "differs (origin's numbers)"
    want = spec.get("sha256")
    if not want:
        sha_check = "not in registry"
    elif want == stats.get("source_sha256"):
        sha_check = "match"
    else:
        sha_check = "not checked (origin)"
    want_arcs = spec.get("arcs_sha256")
    if not want_arcs:
        arcs_check = "not in registry"
    else:
        arcs_check = "match" if want_arcs == stats.get("arcs_sha256") else "DIFFERS"
    return {
        "dataset": name,
        "title": spec.get("title") or name,
        "source": spec.get("source"),
        "directed": {True: "directed", False: "undirected"}.get(stats.get("directed_source"), "-"),
        "n": stats["n"],
        "m": stats["m"],
        "expected_n": exp_n,
        "expected_m": exp_m,
        "size_check": size_check,
        "self_loops_dropped": stats.get("self_loops_dropped"),
        "duplicates_dropped": stats.get("duplicates_dropped"),
        "max_in_degree": stats.get("max_in_degree"),
        "max_out_degree": stats.get("max_out_degree"),
        "weights": stats.get("weights"),
        "cost": stats.get("cost"),
        "cost_scale": stats.get("cost_scale"),
        "source_sha256": stats.get("source_sha256"),
        "sha256_check": sha_check,
        "arcs_sha256": stats.get("arcs_sha256"),
        "arcs_check": arcs_check,
    }


# ---------------------------------------------------------------------------------------------
# writers
# ---------------------------------------------------------------------------------------------


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) >= 100:
            return f"{value:,.1f}"
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    try:
        if pd.isna(value):
            return "-"
    except (TypeError, ValueError):
        pass
    return str(value)


def _cells(df: pd.DataFrame) -> list[list[str]]:
    return [[_fmt(v.item() if hasattr(v, "item") else v) for v in row] for row in df.itertuples(index=False)]


def to_markdown(df: pd.DataFrame, title: str | None = None) -> str:
    lines = [f"**{title}**", ""] if title else []
    header = [str(c) for c in df.columns]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    for row in _cells(df):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return "\n".join(lines) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def to_latex(df: pd.DataFrame, caption: str = "", label: str = "") -> str:
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in df.columns]
    spec = "".join("r" if n else "l" for n in numeric)
    out = ["% generated by the gpucore workflow; needs \\usepackage{booktabs}", "\\begin{table}[t]", "\\centering",
           "\\small", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
           " & ".join(_tex(str(c)) for c in df.columns) + " \\\\", "\\midrule"]
    for row in _cells(df):
        out.append(" & ".join(_tex(c) for c in row) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    if caption:
        out.append(f"\\caption{{{_tex(caption)}}}")
    if label:
        out.append(f"\\label{{{label}}}")
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


def to_html(df: pd.DataFrame, title: str = "") -> str:
    body = pd.DataFrame(_cells(df), columns=[str(c) for c in df.columns]).to_html(index=False, border=0, escape=True)
    style = ("<style>body{font-family:sans-serif;font-size:13px} table{border-collapse:collapse}"
             " th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right} th{background:#f3f3f3}</style>")
    head = f"<h3>{title}</h3>" if title else ""
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'>{style}</head><body>{head}{body}</body></html>\n"


def _atomic_write(path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_configuration(config: dict, yaml_path, html_path) -> None:
    """The merged configuration of a run as YAML, and as an HTML page (the report's Configuration item)."""
    import html

    import yaml

    text = yaml.safe_dump(config, sort_keys=False, default_flow_style=None, width=110)
    _atomic_write(yaml_path, text)
    style = ("<style>body{font-family:sans-serif;font-size:13px}"
             " pre{font-size:12px;background:#f6f6f6;padding:8px}</style>")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'>{style}</head><body><h3>Configuration of this run"
            f"</h3><p>Every --configfile and --config merged, with the schema's defaults filled in.</p>"
            f"<pre>{html.escape(text)}</pre></body></html>\n")
    _atomic_write(html_path, page)


def write_table(df: pd.DataFrame, paths: dict, title: str = "", label: str = "") -> None:
    """paths: {'csv', 'md', 'tex', 'html'} -> file (any subset). The CSV keeps full precision."""
    if "csv" in paths:
        path = Path(paths["csv"])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        df.to_csv(tmp, index=False)
        os.replace(tmp, path)
    if "md" in paths:
        _atomic_write(paths["md"], to_markdown(df, title))
    if "tex" in paths:
        _atomic_write(paths["tex"], to_latex(df, title, label))
    if "html" in paths:
        _atomic_write(paths["html"], to_html(df, title))

"""Rule `amcss_tables`: realization rows (CSV) and the per-cell summary (CSV, Markdown, LaTeX, HTML)."""

import sys
from pathlib import Path

from results_io import amcss_summary, collect_amcss, load_json, write_table

COMPACT = {
    "dataset": "dataset", "model": "model", "eta": "eta", "label": "algorithm", "backend": "backend",
    "batch": "b", "realizations": "R", "cost_mean": "cost", "cost_norm_mean": "cost/max c",
    "seeds_mean": "seeds", "rounds_mean": "rounds", "active_min": "min active", "time_mean": "time (s)",
    "speedup": "speedup", "verified": "verified",
}


def cell_meta(path: str, labels: dict) -> dict:
    """<output>/cells/{dataset}/{model}/{algorithm}/eta{eta}.json -> dataset, algorithm, label."""
    parts = Path(path).parts
    dataset, algorithm = parts[-4], parts[-2]
    return {"dataset": dataset, "algorithm": algorithm, "label": labels.get(algorithm, algorithm)}


def sidecars_by_dataset(paths) -> dict:
    return {Path(p).name[: -len(".gcsr.json")]: load_json(p) for p in paths}


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    cells = [dict(cell_meta(r, smk.params.labels), result=r, verify=v)
             for r, v in zip(smk.input.results, smk.input.verify)]
    df = collect_amcss(cells, sidecars_by_dataset(smk.input.graphs))
    df.to_csv(smk.output.realizations, index=False)
    summary = amcss_summary(df, smk.params.baseline)
    write_table(summary, {"csv": smk.output.csv})
    compact = summary[list(COMPACT)].rename(columns=COMPACT)
    base = smk.params.baseline
    title = "AMCSS cells: mean over realizations" + (f"; speedup = time of {base} / time" if base else "")
    write_table(compact, {"md": smk.output.md, "tex": smk.output.tex, "html": smk.output.html},
                title=title, label="tab:amcss")
    print(f"{len(df)} realizations in {len(summary)} cells", file=sys.stderr)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""Rule `im_tables`: one row per IM cell (CSV: every column; Markdown, LaTeX, HTML: the main ones)."""

import sys

from aggregate_amcss import cell_meta, sidecars_by_dataset
from results_io import collect_im, write_table

COMPACT = {
    "dataset": "dataset", "weights": "weights", "model": "model", "k": "k", "rounds": "rounds", "label": "algorithm",
    "backend": "backend", "ranks": "ranks", "eps": "eps", "estimated_spread": "est. spread",
    "oracle_spread": "oracle spread", "oracle_ci_low": "CI low", "oracle_ci_high": "CI high", "theta": "theta",
    "solve_seconds": "time (s)", "verified": "verified",
}


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    cells = [dict(cell_meta(r, smk.params.labels), result=r, verify=v)
             for r, v in zip(smk.input.results, smk.input.verify)]
    df = collect_im(cells, sidecars_by_dataset(smk.input.graphs), smk.params.graphs)
    write_table(df, {"csv": smk.output.csv})
    write_table(df[list(COMPACT)].rename(columns=COMPACT), {"md": smk.output.md, "tex": smk.output.tex,
                "html": smk.output.html}, title="IM cells: estimated spread and the oracle's", label="tab:im")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""Rule `sds_tables`: one row per structural diversity search cell (sds_cells.csv) and the Table 2
summary (running time per model and graph, one column per algorithm; CSV, Markdown, LaTeX, HTML)."""

import sys

from aggregate_amcss import cell_meta
from results_io import write_table
from results_sds import collect_sds, sds_summary


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    cells = [dict(cell_meta(r, smk.params.labels), result=r, verify=v)
             for r, v in zip(smk.input.results, smk.input.verify)]
    df = collect_sds(cells, smk.params.graphs)
    write_table(df, {"csv": smk.output.cells})
    summary = sds_summary(df, smk.params.baseline)
    base = smk.params.baseline if smk.params.baseline in set(df["algorithm"]) else None
    title = "Structural diversity search: time (s) per model and graph" + (
        f"; speedup = time of {base} / the fastest time" if base else "")
    write_table(summary, {"csv": smk.output.csv, "md": smk.output.md, "tex": smk.output.tex,
                          "html": smk.output.html}, title=title, label="tab:sds")
    print(f"{len(df)} sds cells, {len(summary)} rows", file=sys.stderr)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

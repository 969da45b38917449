"""Rule `datasets_table`: the statistics of every graph used, checked against the registry."""

import sys

import pandas as pd

from aggregate_amcss import sidecars_by_dataset
from results_io import dataset_row, write_table

COMPACT = ["dataset", "title", "source", "directed", "n", "m", "size_check", "self_loops_dropped",
           "duplicates_dropped", "max_in_degree", "max_out_degree", "cost_scale", "sha256_check", "arcs_check"]


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    stats = sidecars_by_dataset(smk.input.graphs)
    df = pd.DataFrame([dataset_row(name, stats[name], smk.params.specs[name]) for name in sorted(stats)])
    write_table(df, {"csv": smk.output.csv})
    write_table(df[COMPACT], {"md": smk.output.md, "tex": smk.output.tex, "html": smk.output.html},
                title="Datasets after preprocessing", label="tab:datasets")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

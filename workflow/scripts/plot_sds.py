"""Rule `sds_figures`: time against k and against t (Exp-7) from the sds cell table."""

import sys

import plots_sweep
from results_io import read_cells


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    df = read_cells(smk.input[0])
    plots_sweep.sds_time(df, "k", smk.output.time_k)
    plots_sweep.sds_time(df, "t", smk.output.time_t)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

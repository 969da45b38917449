"""Rule `amcss_figures`: every AMCSS figure from the realization table (one job: one seaborn import)."""

import re
import sys
from pathlib import Path

import plots
from results_io import read_cells


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    df = read_cells(smk.input[0])
    for path in smk.output:
        name = Path(path).stem
        if name == "amcss_verification":
            plots.verification(df, path)
            continue
        figure, model = re.fullmatch(r"amcss_(cost|time|breakdown)_(IC|LT)", name).groups()
        if figure == "breakdown":
            plots.breakdown(df, model, path)
        else:
            plots.metric_vs_eta(df, model, figure, path)
        print(f"wrote {path}", file=sys.stderr)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""Rule `amcss_figures`: every AMCSS figure from the realization table (one job: one seaborn import)."""

import re
import sys
from pathlib import Path

import pandas as pd

import plots


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    df = pd.read_csv(smk.input[0])
    df["verified"] = df["verified"].map(lambda v: None if pd.isna(v) else str(v) == "True")
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

"""Rules `amcss_figure` and `amcss_verification_figure`: one PNG from the realization table."""

import sys

import pandas as pd

import plots


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    df = pd.read_csv(smk.input[0])
    df["verified"] = df["verified"].map(lambda v: None if pd.isna(v) else bool(v) if isinstance(v, bool) else str(v) == "True")
    figure = smk.wildcards.get("figure", "verification")
    if figure == "verification":
        plots.verification(df, smk.output[0])
    elif figure == "breakdown":
        plots.breakdown(df, smk.wildcards.model, smk.output[0])
    else:
        plots.metric_vs_eta(df, smk.wildcards.model, figure, smk.output[0])


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

"""Rule `im_compare`: the IM cells run by several algorithms side by side (DiFuseR's Table 3 shape:
graphs x weight settings, time and oracle spread per algorithm, ratios against the baseline)."""

import sys

from results_im import compare_table
from results_io import read_cells, write_table


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    table = compare_table(read_cells(smk.input[0]), smk.params.baseline)
    base = f"; speedup and spread ratio against {smk.params.baseline}" if any(
        c.endswith(" speedup") for c in table.columns) else ""
    write_table(table, {"csv": smk.output.csv, "md": smk.output.md, "tex": smk.output.tex, "html": smk.output.html},
                title=f"IM algorithms compared: solve time (s) and oracle spread{base}", label="tab:im-compare")


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

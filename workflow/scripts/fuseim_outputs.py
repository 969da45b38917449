"""Rule `fuseim`: the fused sampler against the unfused one on the same cells: occupancy and memory
table (FuseIM's Table 2) and the speedup figure (its Fig. 7), from the IM summary."""

import sys

import plots_sweep
from results_im import occupancy_table, sampler_speedups
from results_io import read_cells, write_table


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    speedups = sampler_speedups(read_cells(smk.input[0]))
    write_table(occupancy_table(speedups), {"csv": smk.output.csv, "md": smk.output.md, "tex": smk.output.tex,
                                            "html": smk.output.html},
                title="Fused sampler: batch occupancy, memory and speedup over the unfused sampler",
                label="tab:fuseim")
    plots_sweep.speedup(speedups, smk.output.figure)
    print(f"{len(speedups)} fused cells with an unfused twin", file=sys.stderr)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

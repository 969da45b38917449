"""Rule `configuration`: the merged configuration of this run (YAML, and HTML for the report)."""

import sys

from results_io import write_configuration


def main(smk) -> None:
    sys.stderr = open(smk.log[0], "w")
    write_configuration(smk.params.config, smk.output.yaml, smk.output.html)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

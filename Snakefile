# gpucore workflow: download (or generate) graphs, preprocess them to .gcsr, solve one job per
# experiment cell with gpucore, verify every cell with the independent oracle, aggregate tables,
# figures and the report. See README.md ("The pipeline").
#
#   snakemake --cores all                                   # embedded default (offline, CPU, minutes)
#   snakemake --cores all --configfile config/merit.yaml    # MERIT Section 5 (GPU, downloads)
#   (config/gim.yaml, fuseim.yaml, difuser.yaml, sds.yaml: the other papers)
#   snakemake --cores all results/default/cells/pa2k/IC/merit/eta200.verify.json   # one cell
#
# Every configuration writes into its own output tree, config `output` (results/default,
# results/merit, ...); downloads and preprocessed graphs in resources/ are shared.

from snakemake.utils import min_version

min_version("8.0")


configfile: "config/config.yaml"


include: "rules/config.smk"


check_schema(config, "workflow/schemas/config.schema.yaml", "config")


include: "rules/common.smk"
include: "rules/download.smk"
include: "rules/preprocess.smk"
include: "rules/solve.smk"
include: "rules/verify.smk"
include: "rules/aggregate.smk"


report: "workflow/report/workflow.rst"


wildcard_constraints:
    dataset="[A-Za-z0-9][A-Za-z0-9_-]*",
    model="IC|LT",
    algorithm="[A-Za-z0-9][A-Za-z0-9_-]*",
    eta="[0-9]+",
    k="[0-9]+",


# Light jobs run on the submit host under a cluster executor (compute nodes may lack internet).
localrules:
    all,
    configuration,
    download,
    datasets_table,
    amcss_tables,
    amcss_figures,
    im_tables,
    im_compare,
    fuseim,
    sds_tables,
    sds_figures,


# Every table and figure of the configured experiments (and so every cell, verified). (A comment,
# not a docstring: snakefmt 2.1 places default_target before a docstring and then cannot parse it.)
rule all:
    default_target: True
    input:
        all_targets(),

# Tables and seaborn figures from the verified cells, in this configuration's output tree (config
# `output`). The report (snakemake --report NAME.html) holds each table once, as HTML (the CSV,
# Markdown and LaTeX files are beside it in <output>/tables/), every figure, and the configuration.


rule amcss_tables:
    """Collect every AMCSS cell and its verification: per-realization rows and the per-cell summary."""
    input:
        results=[c["path"] for c in cells_of("amcss")],
        verify=[verify_path(c["path"]) for c in cells_of("amcss")],
        graphs=sorted({sidecar_path(c["dataset"]) for c in cells_of("amcss")}),
    output:
        realizations=out("tables/amcss_realizations.csv"),
        csv=out("tables/amcss_summary.csv"),
        md=out("tables/amcss_summary.md"),
        tex=out("tables/amcss_summary.tex"),
        html=report(
            out("tables/amcss_summary.html"),
            caption="../workflow/report/amcss_summary.rst",
            category="AMCSS",
            subcategory="Tables",
        ),
    log:
        out("logs/aggregate/amcss_tables.log"),
    benchmark:
        out("benchmarks/aggregate/amcss_tables.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        labels={name: algorithm_label(name) for name in ALGORITHMS},
        baseline=config.get("aggregate", {}).get("baseline"),
    script:
        "../workflow/scripts/aggregate_amcss.py"


rule amcss_figures:
    """Cost vs eta and time vs eta (MERIT Figs 5-8), time breakdown (Figs 11-12) per model, verification."""
    input:
        out("tables/amcss_realizations.csv"),
    output:
        [
            report(
                out(f"figures/amcss_{figure}_{model}.png"),
                caption=f"../workflow/report/amcss_{figure}.rst",
                category="AMCSS",
                subcategory="Figures",
                labels={"figure": figure, "model": model},
            )
            for figure in AMCSS_FIGURES
            for model in amcss_models()
        ],
        verification=report(
            out("figures/amcss_verification.png"),
            caption="../workflow/report/amcss_verification.rst",
            category="AMCSS",
            subcategory="Figures",
            labels={"figure": "verification", "model": "all"},
        ),
    log:
        out("logs/aggregate/amcss_figures.log"),
    benchmark:
        out("benchmarks/aggregate/amcss_figures.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    script:
        "../workflow/scripts/plot_amcss.py"


rule im_tables:
    """Collect every IM cell and its verification into the IM summary table."""
    input:
        results=[c["path"] for c in cells_of("im")],
        verify=[verify_path(c["path"]) for c in cells_of("im")],
        graphs=sorted({sidecar_path(c["dataset"]) for c in cells_of("im")}),
    output:
        csv=out("tables/im_summary.csv"),
        md=out("tables/im_summary.md"),
        tex=out("tables/im_summary.tex"),
        html=report(out("tables/im_summary.html"), caption="../workflow/report/im_summary.rst", category="IM"),
    log:
        out("logs/aggregate/im_tables.log"),
    benchmark:
        out("benchmarks/aggregate/im_tables.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        labels={name: algorithm_label(name) for name in ALGORITHMS},
        graphs=dataset_graphs("im"),
    script:
        "../workflow/scripts/aggregate_im.py"


rule im_compare:
    """IM cells run by several algorithms side by side (DiFuseR Table 3: graphs x weight settings)."""
    input:
        out("tables/im_summary.csv"),
    output:
        csv=out("tables/im_compare.csv"),
        md=out("tables/im_compare.md"),
        tex=out("tables/im_compare.tex"),
        html=report(out("tables/im_compare.html"), caption="../workflow/report/im_compare.rst", category="IM"),
    log:
        out("logs/aggregate/im_compare.log"),
    benchmark:
        out("benchmarks/aggregate/im_compare.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        baseline=config.get("aggregate", {}).get("baseline"),
    script:
        "../workflow/scripts/compare_im.py"


rule fuseim:
    """Fused vs unfused sampler on the same cells: occupancy table (FuseIM Table 2), speedup (Fig. 7)."""
    input:
        out("tables/im_summary.csv"),
    output:
        csv=out("tables/fuseim_occupancy.csv"),
        md=out("tables/fuseim_occupancy.md"),
        tex=out("tables/fuseim_occupancy.tex"),
        html=report(
            out("tables/fuseim_occupancy.html"),
            caption="../workflow/report/fuseim_occupancy.rst",
            category="IM",
        ),
        figure=report(
            out("figures/fuseim_speedup.png"),
            caption="../workflow/report/fuseim_speedup.rst",
            category="IM",
        ),
    log:
        out("logs/aggregate/fuseim.log"),
    benchmark:
        out("benchmarks/aggregate/fuseim.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    script:
        "../workflow/scripts/fuseim_outputs.py"


rule sds_tables:
    """Collect every structural diversity search cell and its verification: cell rows and Table 2."""
    input:
        results=[c["path"] for c in cells_of("sds")],
        verify=[verify_path(c["path"]) for c in cells_of("sds")],
    output:
        cells=out("tables/sds_cells.csv"),
        csv=out("tables/sds_summary.csv"),
        md=out("tables/sds_summary.md"),
        tex=out("tables/sds_summary.tex"),
        html=report(
            out("tables/sds_summary.html"),
            caption="../workflow/report/sds_summary.rst",
            category="Structural diversity",
        ),
    log:
        out("logs/aggregate/sds_tables.log"),
    benchmark:
        out("benchmarks/aggregate/sds_tables.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        labels={name: algorithm_label(name) for name in ALGORITHMS},
        baseline=config.get("aggregate", {}).get("baseline"),
        graphs=dataset_graphs("sds"),
    script:
        "../workflow/scripts/aggregate_sds.py"


rule sds_figures:
    """Time against k and against t (structural diversity search, Exp-7: Figures 9 and 10)."""
    input:
        out("tables/sds_cells.csv"),
    output:
        time_k=report(
            out("figures/sds_time_k.png"),
            caption="../workflow/report/sds_time.rst",
            category="Structural diversity",
            labels={"figure": "time against k"},
        ),
        time_t=report(
            out("figures/sds_time_t.png"),
            caption="../workflow/report/sds_time.rst",
            category="Structural diversity",
            labels={"figure": "time against t"},
        ),
    log:
        out("logs/aggregate/sds_figures.log"),
    benchmark:
        out("benchmarks/aggregate/sds_figures.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    script:
        "../workflow/scripts/plot_sds.py"


rule datasets_table:
    """Statistics of every graph used by the cells, checked against the registry."""
    input:
        graphs=[sidecar_path(d) for d in datasets_used()],
    output:
        csv=out("tables/datasets.csv"),
        md=out("tables/datasets.md"),
        tex=out("tables/datasets.tex"),
        html=report(out("tables/datasets.html"), caption="../workflow/report/datasets.rst", category="Datasets"),
    log:
        out("logs/aggregate/datasets_table.log"),
    benchmark:
        out("benchmarks/aggregate/datasets_table.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        specs={d: dataset_table_spec(d) for d in datasets_used()},
    script:
        "../workflow/scripts/datasets_table.py"


rule configuration:
    """The merged configuration of this run: YAML beside the results, HTML in the report."""
    output:
        yaml=out("config.yaml"),
        html=report(out("config.html"), caption="../workflow/report/configuration.rst", category="Configuration"),
    log:
        out("logs/aggregate/configuration.log"),
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        config=merged_config(),
    script:
        "../workflow/scripts/configuration.py"

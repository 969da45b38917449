# Tables (CSV, Markdown, LaTeX, HTML) and seaborn figures from the verified cells; every table and
# figure goes into the report (snakemake --report report.html) with its caption.


rule amcss_tables:
    """Collect every AMCSS cell and its verification: per-realization rows and the per-cell summary."""
    input:
        results=[c["path"] for c in cells_of("amcss")],
        verify=[verify_path(c["path"]) for c in cells_of("amcss")],
        graphs=sorted({sidecar_path(c["dataset"]) for c in cells_of("amcss")}),
    output:
        realizations=report(
            "results/tables/amcss_realizations.csv",
            caption="../workflow/report/amcss_realizations.rst",
            category="AMCSS",
            subcategory="Tables",
        ),
        csv=report(
            "results/tables/amcss_summary.csv",
            caption="../workflow/report/amcss_summary.rst",
            category="AMCSS",
            subcategory="Tables",
        ),
        md=report(
            "results/tables/amcss_summary.md",
            caption="../workflow/report/amcss_summary.rst",
            category="AMCSS",
            subcategory="Tables",
        ),
        tex=report(
            "results/tables/amcss_summary.tex",
            caption="../workflow/report/amcss_summary.rst",
            category="AMCSS",
            subcategory="Tables",
        ),
        html=report(
            "results/tables/amcss_summary.html",
            caption="../workflow/report/amcss_summary.rst",
            category="AMCSS",
            subcategory="Tables",
        ),
    log:
        "logs/aggregate/amcss_tables.log",
    benchmark:
        "results/benchmarks/aggregate/amcss_tables.tsv"
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
        "results/tables/amcss_realizations.csv",
    output:
        [
            report(
                f"results/figures/amcss_{figure}_{model}.png",
                caption=f"../workflow/report/amcss_{figure}.rst",
                category="AMCSS",
                subcategory="Figures",
                labels={"figure": figure, "model": model},
            )
            for figure in AMCSS_FIGURES
            for model in amcss_models()
        ],
        verification=report(
            "results/figures/amcss_verification.png",
            caption="../workflow/report/amcss_verification.rst",
            category="AMCSS",
            subcategory="Figures",
            labels={"figure": "verification", "model": "all"},
        ),
    log:
        "logs/aggregate/amcss_figures.log",
    benchmark:
        "results/benchmarks/aggregate/amcss_figures.tsv"
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
        csv=report("results/tables/im_summary.csv", caption="../workflow/report/im_summary.rst", category="IM"),
        md=report("results/tables/im_summary.md", caption="../workflow/report/im_summary.rst", category="IM"),
        tex=report("results/tables/im_summary.tex", caption="../workflow/report/im_summary.rst", category="IM"),
        html=report("results/tables/im_summary.html", caption="../workflow/report/im_summary.rst", category="IM"),
    log:
        "logs/aggregate/im_tables.log",
    benchmark:
        "results/benchmarks/aggregate/im_tables.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        labels={name: algorithm_label(name) for name in ALGORITHMS},
    script:
        "../workflow/scripts/aggregate_im.py"


rule datasets_table:
    """Statistics of every graph used by the cells, checked against the registry."""
    input:
        graphs=[sidecar_path(d) for d in datasets_used()],
    output:
        csv=report("results/tables/datasets.csv", caption="../workflow/report/datasets.rst", category="Datasets"),
        md=report("results/tables/datasets.md", caption="../workflow/report/datasets.rst", category="Datasets"),
        tex=report("results/tables/datasets.tex", caption="../workflow/report/datasets.rst", category="Datasets"),
        html=report("results/tables/datasets.html", caption="../workflow/report/datasets.rst", category="Datasets"),
    log:
        "logs/aggregate/datasets_table.log",
    benchmark:
        "results/benchmarks/aggregate/datasets_table.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        specs={d: dataset_table_spec(d) for d in datasets_used()},
    script:
        "../workflow/scripts/datasets_table.py"

# Edge list -> .gcsr binary graph + .gcsr.json statistics (edge probabilities and seed costs from
# config `preprocess`, per-dataset overrides in config `datasets`), checked against the registry.


rule preprocess:
    """gpucore preprocess, then compare n and m with the registry (exact entries fail on a difference)."""
    input:
        edge_list_of,
    output:
        gcsr="resources/graphs/{dataset}.gcsr",
        stats="resources/graphs/{dataset}.gcsr.json",
    log:
        "logs/preprocess/{dataset}.log",
    benchmark:
        "results/benchmarks/preprocess/{dataset}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    threads: all_cores
    params:
        graph=preprocess_params,
    script:
        "../workflow/scripts/preprocess.py"

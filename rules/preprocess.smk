# Edge list -> .gcsr binary graph + .gcsr.json statistics (edge probabilities and seed costs from
# config `preprocess`, per-dataset overrides in config `datasets`), checked against the registry.


rule preprocess:
    """gpucore preprocess, then compare n and m with the registry (exact entries fail on a difference)."""
    input:
        lambda wildcards: edge_list_path(wildcards.dataset),
    output:
        gcsr="resources/graphs/{dataset}.gcsr",
        stats="resources/graphs/{dataset}.gcsr.json",
    params:
        direction=lambda wildcards: direction_flag(wildcards.dataset),
        weights=lambda wildcards: dataset_spec(wildcards.dataset)["weights"],
        cost=lambda wildcards: dataset_spec(wildcards.dataset)["cost"],
        seed=lambda wildcards: dataset_spec(wildcards.dataset)["seed"],
        expected=lambda wildcards: expected_size(wildcards.dataset),
    threads: job_threads
    log:
        "logs/preprocess/{dataset}.log",
    benchmark:
        "results/benchmarks/preprocess/{dataset}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    script:
        "../workflow/scripts/preprocess.py"

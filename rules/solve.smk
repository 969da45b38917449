# One job per cell: (dataset, model, eta, algorithm) for AMCSS, (dataset, model, k, algorithm) for
# IM; an AMCSS job runs all the world realizations of its cell. Parameters are looked up per cell,
# so editing one eta (or k) in the config reruns only the cells that changed.


rule solve_amcss:
    """gpucore amcss: adaptive minimum-cost seed selection (MERIT with update, PASTI/GAMCSS without)."""
    input:
        graph="resources/graphs/{dataset}.gcsr",
    output:
        "results/cells/{dataset}/{model}/{algorithm}/eta{eta}.json",
    params:
        batch=cell_param("amcss", "batch"),
        eps=cell_param("amcss", "eps"),
        realizations=cell_param("amcss", "realizations"),
        seed=cell_param("amcss", "seed"),
        update_flag=cell_param("amcss", "update"),
        backend=cell_param("amcss", "backend"),
        options=cell_param("amcss", "options"),
    threads: job_threads
    resources:
        gpu=cell_gpus,
    log:
        "logs/cells/{dataset}/{model}/{algorithm}/eta{eta}.log",
    benchmark:
        "results/benchmarks/cells/{dataset}/{model}/{algorithm}/eta{eta}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    shell:
        "gpucore amcss --graph {input.graph} --model {wildcards.model} --eta {wildcards.eta}"
        " --batch {params.batch} --eps {params.eps} --realizations {params.realizations} --seed {params.seed}"
        " {params.update_flag} --threads {threads} --backend {params.backend} {params.options}"
        " -o {output} > {log} 2>&1"


rule solve_im:
    """gpucore im: k seeds maximising the expected spread (IMM-style, (1-1/e-eps) guarantee)."""
    input:
        graph="resources/graphs/{dataset}.gcsr",
    output:
        "results/cells/{dataset}/{model}/{algorithm}/k{k}.json",
    params:
        eps=cell_param("im", "eps"),
        seed=cell_param("im", "seed"),
        backend=cell_param("im", "backend"),
        options=cell_param("im", "options"),
    threads: job_threads
    resources:
        gpu=cell_gpus,
    log:
        "logs/cells/{dataset}/{model}/{algorithm}/k{k}.log",
    benchmark:
        "results/benchmarks/cells/{dataset}/{model}/{algorithm}/k{k}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    shell:
        "gpucore im --graph {input.graph} --model {wildcards.model} --k {wildcards.k} --eps {params.eps}"
        " --seed {params.seed} --threads {threads} --backend {params.backend} {params.options}"
        " -o {output} > {log} 2>&1"

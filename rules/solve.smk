# One job per cell: (dataset, model, eta, algorithm) for AMCSS, (dataset, model, k, algorithm) for
# IM; an AMCSS job runs all the world realizations of its cell. Parameters are looked up per cell,
# so editing one eta (or k) in the config reruns only the cells that changed.


rule solve_amcss:
    """gpucore amcss: adaptive minimum-cost seed selection (MERIT with update, PASTI/GAMCSS without)."""
    input:
        graph="resources/graphs/{dataset}.gcsr",
    output:
        out("cells/{dataset}/{model}/{algorithm}/eta{eta}.json"),
    log:
        out("logs/cells/{dataset}/{model}/{algorithm}/eta{eta}.log"),
    benchmark:
        out("benchmarks/cells/{dataset}/{model}/{algorithm}/eta{eta}.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    threads: solve_threads
    resources:
        gpu=cell_gpus,
    params:
        args=amcss_args,
    shell:
        "gpucore amcss --graph {input.graph} --model {wildcards.model} --eta {wildcards.eta}"
        " {params.args} --threads {threads} -o {output} > {log} 2>&1"


rule solve_im:
    """gpucore im: k seeds maximising the expected spread (IMM-style, (1-1/e-eps) guarantee)."""
    input:
        graph="resources/graphs/{dataset}.gcsr",
    output:
        out("cells/{dataset}/{model}/{algorithm}/k{k}.json"),
    log:
        out("logs/cells/{dataset}/{model}/{algorithm}/k{k}.log"),
    benchmark:
        out("benchmarks/cells/{dataset}/{model}/{algorithm}/k{k}.tsv")
    conda:
        "../workflow/envs/gpucore.yaml"
    threads: solve_threads
    resources:
        gpu=cell_gpus,
    params:
        args=im_args,
    shell:
        "gpucore im --graph {input.graph} --model {wildcards.model} --k {wildcards.k}"
        " {params.args} --threads {threads} -o {output} > {log} 2>&1"

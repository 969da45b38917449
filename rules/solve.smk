# One job per cell: (dataset, model, eta, algorithm) for AMCSS, (dataset, model, k, algorithm) for
# IM, (dataset, model, k, t, algorithm) for structural diversity search; an AMCSS job runs all the
# world realizations of its cell. Parameters are looked up per cell, so editing one eta (or k, t)
# in the config reruns only the cells that changed. A cell of an experiment with `gpus: N` (IM,
# sds) runs as N MPI ranks, `<mpi> -n N gpucore ...`, one GPU each on the cuda backend.


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
        args=cell_args,
    shell:
        "gpucore amcss --graph {input.graph} --model {wildcards.model} --eta {wildcards.eta}"
        " {params.args} --threads {threads} -o {output} > {log} 2>&1"


rule solve_im:
    """gpucore im: k seeds maximising the expected spread (IMM with either sampler, or DiFuseR)."""
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
        tasks=cell_ranks,
        tasks_per_gpu=1,
        mpi=cell_mpi,
    params:
        args=cell_args,
        launch=launch,
        threads=rank_threads,
    shell:
        "{params.launch} gpucore im --graph {input.graph} --model {wildcards.model} --k {wildcards.k}"
        " {params.args} --threads {params.threads} -o {output} > {log} 2>&1"


rule solve_sds:
    """gpucore sds: the top-t vertices by structural diversity (comp, core or truss contexts)."""
    input:
        graph="resources/graphs/{dataset}.gcsr",
    output:
        out("cells/{dataset}/sds-{model}/{algorithm}/k{k}-t{t}.json"),
    log:
        out("logs/cells/{dataset}/sds-{model}/{algorithm}/k{k}-t{t}.log"),
    benchmark:
        out("benchmarks/cells/{dataset}/sds-{model}/{algorithm}/k{k}-t{t}.tsv")
    wildcard_constraints:
        model="comp|core|truss",
        t="[0-9]+",
    conda:
        "../workflow/envs/gpucore.yaml"
    threads: solve_threads
    resources:
        gpu=cell_gpus,
        tasks=cell_ranks,
        tasks_per_gpu=1,
        mpi=cell_mpi,
    params:
        args=cell_args,
        launch=launch,
        threads=rank_threads,
    shell:
        "{params.launch} gpucore sds --graph {input.graph} --model {wildcards.model} --k {wildcards.k}"
        " --t {wildcards.t} {params.args} --threads {params.threads} -o {output} > {log} 2>&1"

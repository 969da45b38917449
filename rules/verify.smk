# Every cell is checked by the independent oracle (gpucore verify): adaptive replay of each AMCSS
# realization (eta reached, logged activations reproduced), Monte-Carlo spread of IM seed sets,
# exact re-scoring of sds answers (returned vertices and every vertex that could beat the t-th).
# `gpucore verify` exits non-zero on a failed check, which fails the job and so the workflow; the
# failing report is kept beside the log as <log>.json (Snakemake deletes the outputs of failed jobs).
# A cell with `gpus: N` is verified by N MPI ranks too (the oracle splits its Monte-Carlo runs).


rule verify:
    """gpucore verify on one cell result; a failed verification fails the workflow."""
    input:
        result=out("cells/{dataset}/{model}/{algorithm}/{cell}.json"),
        graph="resources/graphs/{dataset}.gcsr",
    output:
        out("cells/{dataset}/{model}/{algorithm}/{cell}.verify.json"),
    log:
        out("logs/cells/{dataset}/{model}/{algorithm}/{cell}.verify.log"),
    benchmark:
        out("benchmarks/cells/{dataset}/{model}/{algorithm}/{cell}.verify.tsv")
    wildcard_constraints:
        model="IC|LT|sds-(comp|core|truss)",
        cell="(eta|k)[0-9]+|k[0-9]+-t[0-9]+",
    conda:
        "../workflow/envs/gpucore.yaml"
    threads: all_cores
    resources:
        gpu=verify_gpus,
        tasks=cell_ranks,
        tasks_per_gpu=1,
        mpi=cell_mpi,
    params:
        runs=config["verify"]["runs"],
        backend=verify_backend,
        launch=launch,
        threads=rank_threads,
    shell:
        "{params.launch} gpucore verify {input.result} --graph {input.graph} --runs {params.runs}"
        " --backend {params.backend} --threads {params.threads} -o {output} > {log} 2>&1"
        ' || {{ status=$?; cp {output} {log}.json 2>/dev/null; echo "verification failed (exit $status): see {log}" >&2; exit $status; }}'

# Every cell is checked by the independent oracle (gpucore verify): adaptive replay of each AMCSS
# realization (eta reached, logged activations reproduced), Monte-Carlo spread of IM seed sets.
# `gpucore verify` exits non-zero on a failed check, which fails the job and so the workflow; the
# failing report is kept beside the log as <log>.json (Snakemake deletes the outputs of failed jobs).


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
    conda:
        "../workflow/envs/gpucore.yaml"
    threads: all_cores
    resources:
        gpu=verify_gpus,
    params:
        runs=config["verify"]["runs"],
        backend=verify_backend,
    shell:
        "gpucore verify {input.result} --graph {input.graph} --runs {params.runs} --backend {params.backend} --threads {threads}"
        " -o {output} > {log} 2>&1"
        ' || {{ status=$?; cp {output} {log}.json 2>/dev/null; echo "verification failed (exit $status): see {log}" >&2; exit $status; }}'

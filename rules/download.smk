# Raw data: downloaded real graphs (registry) and generated graphs (config `datasets.*.generate`).


rule download:
    """Fetch a registry dataset from its origin, or from `mirror:` (streaming, resume, retries, sha256)."""
    output:
        "resources/raw/{dataset}/{file}",
    log:
        "logs/download/{dataset}/{file}.log",
    benchmark:
        "results/benchmarks/download/{dataset}/{file}.tsv"
    wildcard_constraints:
        dataset=registry_keys_pattern(),
        file="[^/]+",
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        source=download_source,
    script:
        "../workflow/scripts/download.py"


rule extract:
    """KONECT archives (.tar.bz2): extract the out.* edge list (temporary, removed after preprocessing)."""
    input:
        archive_of,
    output:
        temp("resources/extracted/{dataset}.txt"),
    log:
        "logs/extract/{dataset}.log",
    benchmark:
        "results/benchmarks/extract/{dataset}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        member=archive_member,
    script:
        "../workflow/scripts/extract.py"


rule generate:
    """A synthetic graph (gpucore generate) as a gzip edge list: the offline datasets of the default config."""
    output:
        "resources/generated/{dataset}.txt.gz",
    log:
        "logs/generate/{dataset}.log",
    benchmark:
        "results/benchmarks/generate/{dataset}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    params:
        args=generate_args,
    shell:
        "gpucore generate {params.args} -o {output} > {log} 2>&1"

# Raw data: downloaded real graphs (registry) and generated graphs (config `datasets.*.generate`).


rule download:
    """Fetch a registry dataset from its origin, or from `mirror:` (streaming, resume, retries, sha256)."""
    output:
        "resources/raw/{dataset}/{file}",
    params:
        file=lambda wildcards: REGISTRY[wildcards.dataset]["file"],
        url=lambda wildcards: REGISTRY[wildcards.dataset].get("url"),
        sha256=lambda wildcards: REGISTRY[wildcards.dataset].get("sha256"),
        sha256_scope=lambda wildcards: REGISTRY[wildcards.dataset].get("sha256_scope", "origin"),
    wildcard_constraints:
        dataset="|".join(re.escape(k) for k in REGISTRY),
        file="[^/]+",
    log:
        "logs/download/{dataset}/{file}.log",
    benchmark:
        "results/benchmarks/download/{dataset}/{file}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    script:
        "../workflow/scripts/download.py"


rule extract:
    """KONECT archives (.tar.bz2): extract the out.* edge list (temporary, removed after preprocessing)."""
    input:
        lambda wildcards: raw_download_path(wildcards.dataset),
    output:
        temp("resources/extracted/{dataset}.txt"),
    params:
        member=lambda wildcards: REGISTRY[wildcards.dataset].get("member"),
    log:
        "logs/extract/{dataset}.log",
    benchmark:
        "results/benchmarks/extract/{dataset}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    script:
        "../workflow/scripts/extract.py"


rule generate:
    """A synthetic graph (gpucore generate) as a gzip edge list: the offline datasets of the default config."""
    output:
        "resources/generated/{dataset}.txt.gz",
    params:
        kind=lambda wildcards: DATASETS[wildcards.dataset]["generate"]["kind"],
        nodes=lambda wildcards: DATASETS[wildcards.dataset]["generate"]["nodes"],
        edges=lambda wildcards: DATASETS[wildcards.dataset]["generate"]["edges"],
        seed=lambda wildcards: DATASETS[wildcards.dataset]["generate"].get("seed", 0),
        extra=lambda wildcards: generate_options(wildcards.dataset),
    log:
        "logs/generate/{dataset}.log",
    benchmark:
        "results/benchmarks/generate/{dataset}.tsv"
    conda:
        "../workflow/envs/gpucore.yaml"
    shell:
        "gpucore generate {params.kind} --nodes {params.nodes} --edges {params.edges} --seed {params.seed}"
        " {params.extra} -o {output} > {log} 2>&1"

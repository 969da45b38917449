# Helpers shared by the rules: the dataset registry, dataset resolution, the list of cells, the
# parameters of one cell and the targets of `rule all`. No rule is defined here. Every input,
# params and threads function a rule uses is a named function of this file (no lambda in a rule).

import os
import posixpath
import re
import sys
import urllib.parse

import yaml
from snakemake.exceptions import WorkflowError

# ---------------------------------------------------------------------------------------------
# registry and datasets
# ---------------------------------------------------------------------------------------------


def load_registry(path):
    if not os.path.isfile(path):
        raise WorkflowError(f"registry {path}: no such file (config key `registry`)")
    with open(path) as fh:
        registry = yaml.safe_load(fh) or {}
    check_schema(registry, "workflow/schemas/datasets.schema.yaml", f"registry {path}")
    for key, entry in registry.items():
        if not entry.get("file"):
            if not entry.get("url"):
                raise WorkflowError(f"registry {path}: dataset {key!r} has neither url nor file")
            entry["file"] = posixpath.basename(urllib.parse.urlparse(entry["url"]).path)
    return registry


REGISTRY = load_registry(config["registry"])
DATASETS = config.get("datasets") or {}
MODELS = ("IC", "LT")


def dataset_spec(name):
    """What a dataset name means: {'name', 'generate' | 'registry' (+ 'entry'), 'weights', 'cost', 'seed'}."""
    pre = config["preprocess"]
    if name in DATASETS:
        local = DATASETS[name]
        spec = {"name": name}
        if "generate" in local:
            spec["generate"] = local["generate"]
        else:
            key = local["registry"]
            if key not in REGISTRY:
                raise WorkflowError(f"config datasets.{name}.registry: {key!r} is not in {config['registry']}")
            spec["registry"] = key
            spec["entry"] = REGISTRY[key]
    elif name in REGISTRY:
        local = {}
        spec = {"name": name, "registry": name, "entry": REGISTRY[name]}
    else:
        raise WorkflowError(
            f"dataset {name!r} is neither in config `datasets` nor in the registry {config['registry']} "
            f"(known: {', '.join(sorted(set(DATASETS) | set(REGISTRY)))})"
        )
    spec["weights"] = local.get("weights", pre["weights"])
    spec["cost"] = local.get("cost", pre["cost"])
    spec["seed"] = local.get("seed", pre["seed"])
    return spec


def raw_download_path(key):
    """The downloaded file of registry dataset `key` (the origin's own file name)."""
    return f"resources/raw/{key}/{REGISTRY[key]['file']}"


def generated_source(name):
    """The dataset whose generated edge list `name` reads: the first, by name, with the same `generate`
    settings, so that the weight variants of one generated graph (a p-sweep) share one edge list."""
    gen = DATASETS[name]["generate"]
    return min(other for other, local in DATASETS.items() if local.get("generate") == gen)


def dataset_graph(name):
    """{'graph', 'weights'}: the graph a dataset is, whatever its weights (the registry key, or the
    generated dataset whose edge list it reads), and its weight setting. Tables group by them."""
    spec = dataset_spec(name)
    graph = generated_source(name) if "generate" in spec else spec["registry"]
    return {"graph": graph, "weights": spec["weights"]}


def edge_list_path(name):
    """The edge list that rule preprocess reads for dataset `name`."""
    spec = dataset_spec(name)
    if "generate" in spec:
        return f"resources/generated/{generated_source(name)}.txt.gz"
    key = spec["registry"]
    if spec["entry"]["format"] == "konect-tar":
        return f"resources/extracted/{key}.txt"
    return raw_download_path(key)


def graph_path(name):
    return f"resources/graphs/{name}.gcsr"


def sidecar_path(name):
    return f"resources/graphs/{name}.gcsr.json"


def direction_flag(name):
    spec = dataset_spec(name)
    if "generate" in spec:
        return "--directed"
    return "--directed" if spec["entry"]["directed"] else "--undirected"


def expected_graph(name):
    """{'n', 'm', 'exact', 'arcs_sha256'} from the registry (None for generated graphs)."""
    spec = dataset_spec(name)
    if "entry" not in spec:
        return {"n": None, "m": None, "exact": False, "arcs_sha256": None}
    entry = spec["entry"]
    return {
        "n": entry.get("n"),
        "m": entry.get("m"),
        "exact": bool(entry.get("exact")),
        "arcs_sha256": entry.get("arcs_sha256"),
    }


# ---------------------------------------------------------------------------------------------
# algorithms, cells
# ---------------------------------------------------------------------------------------------

ALGORITHMS = {name: (a or {}) for name, a in config["algorithms"].items()}
#: this configuration's output tree (config `output`): cells, tables, figures, logs and benchmarks of
#: its jobs, its merged configuration. Downloads and graphs (resources/) are shared by configurations.
OUT = config["output"].rstrip("/")


def out(path):
    """`path` inside this configuration's output tree."""
    return f"{OUT}/{path}"


def merged_config():
    """The configuration after every --configfile / --config and the schema's defaults (report item)."""
    return {key: config[key] for key in sorted(config)}


def algorithm(name):
    if name not in ALGORITHMS:
        raise WorkflowError(
            f"algorithm {name!r} is not in config `algorithms` (known: {', '.join(sorted(ALGORITHMS))})"
        )
    return ALGORITHMS[name]


def algorithm_backend(name):
    return algorithm(name).get("backend") or config["backend"]


def algorithm_label(name):
    return algorithm(name).get("label") or name


#: the configuration keys of an algorithm that belong to one command (checked: no key of another)
COMMAND_KEYS = {
    "amcss": ("update",),
    "im": (
        "rounds",
        "algorithm",
        "sampler",
        "batch_width",
        "order",
        "sorted_sources",
        "tail",
        "registers",
        "rebuild_threshold",
        "sampling",
        "refine",
    ),
    "sds": ("bound",),
}
#: im keys that only the fused sampler takes, and those that only DiFuseR takes
FUSED_KEYS = ("batch_width", "order", "sorted_sources", "tail")
DIFUSER_KEYS = ("registers", "rebuild_threshold", "sampling", "refine")
#: the list of an experiment that its cells run over, per kind (sds: every k with every t)
CELL_LISTS = {"amcss": ("eta",), "im": ("k",), "sds": ("k", "t")}


def _check_algorithm(name):
    """An algorithm's keys fit its command (one line naming the key otherwise)."""
    alg = algorithm(name)
    command = alg["command"]
    for other, keys in COMMAND_KEYS.items():
        for key in keys:
            if other != command and key in alg:
                raise WorkflowError(
                    f"config algorithms.{name}.{key}: only an {other} algorithm has {key} "
                    f"({name} runs `gpucore {command}`)"
                )
    if command != "im":
        return
    difuser = alg.get("algorithm", "imm") == "difuser"
    for key in FUSED_KEYS:
        if key in alg and (difuser or alg.get("sampler", "gim") != "fused"):
            raise WorkflowError(f"config algorithms.{name}.{key}: an option of `sampler: fused` only")
    for key in DIFUSER_KEYS:
        if key in alg and not difuser:
            raise WorkflowError(f"config algorithms.{name}.{key}: an option of `algorithm: difuser` only")
    if difuser and ("sampler" in alg or alg.get("rounds", 1) > 1):
        key = "sampler" if "sampler" in alg else "rounds"
        raise WorkflowError(
            f"config algorithms.{name}.{key}: DiFuseR (`algorithm: difuser`) samples no RR sets and selects one round"
        )


def experiment_models(exp):
    """The models of an experiment: one (amcss, im) or a list (sds)."""
    return exp["model"] if isinstance(exp["model"], list) else [exp["model"]]


def experiment_settings(exp):
    """What an experiment sets for its cells besides dataset, model, algorithms and the swept lists."""
    skip = {"kind", "dataset", "model", "algorithms", *CELL_LISTS[exp["kind"]]}
    return {key: value for key, value in exp.items() if key not in skip}


def cell_stem(kind, x, t=None):
    """The file name of a cell without .json: eta<eta> (amcss), k<k> (im), k<k>-t<t> (sds)."""
    return {"amcss": f"eta{x}", "im": f"k{x}", "sds": f"k{x}-t{t}"}[kind]


def model_folder(kind, model):
    """The folder of a model under a dataset: IC, LT; sds-comp, sds-core, sds-truss."""
    return f"sds-{model}" if kind == "sds" else model


def cell_path(kind, dataset, model, alg, x, t=None):
    return out(f"cells/{dataset}/{model_folder(kind, model)}/{alg}/{cell_stem(kind, x, t)}.json")


def verify_path(result):
    return result[: -len(".json")] + ".verify.json"


def _experiment_cells(exp):
    """(model, x, t) of every cell of an experiment (t is None but for sds)."""
    lists = [exp[key] for key in CELL_LISTS[exp["kind"]]]
    t_values = lists[1] if len(lists) > 1 else [None]
    return [(model, x, t) for model in experiment_models(exp) for x in lists[0] for t in t_values]


def _check_experiments():
    cells, seen, paths = [], {}, set()
    for name in ALGORITHMS:
        _check_algorithm(name)
    for i, exp in enumerate(config["experiments"]):
        kind = exp["kind"]
        where = f"config experiments[{i}] ({kind} {exp['dataset']} {'/'.join(experiment_models(exp))})"
        dataset_spec(exp["dataset"])  # raises on an unknown dataset
        for alg in exp["algorithms"]:
            command = algorithm(alg)["command"]
            if command != kind:
                raise WorkflowError(f"{where}: algorithm {alg!r} runs `gpucore {command}`, not a {kind} cell")
            if algorithm(alg).get("algorithm") == "difuser" and exp["model"] != "IC":
                raise WorkflowError(f"{where}: algorithm {alg!r} is DiFuseR, which runs the IC model only")
            for model in experiment_models(exp):
                key = (kind, exp["dataset"], model, alg)
                if key in seen and experiment_settings(config["experiments"][seen[key]]) != experiment_settings(exp):
                    raise WorkflowError(
                        f"{where}: {kind} cells of ({exp['dataset']}, {model}, {alg}) are already defined by "
                        f"experiments[{seen[key]}] with other settings; merge the two (one batch / eps / gpus per "
                        f"dataset, model and algorithm)"
                    )
                seen.setdefault(key, i)
        for alg in exp["algorithms"]:
            for model, x, t in _experiment_cells(exp):
                path = cell_path(kind, exp["dataset"], model, alg, x, t)
                if path not in paths:  # an sds cell may be in a k sweep and in a t sweep
                    paths.add(path)
                    cells.append(
                        {
                            "kind": kind,
                            "dataset": exp["dataset"],
                            "model": model,
                            "algorithm": alg,
                            "x": x,
                            "t": t,
                            "path": path,
                        }
                    )
    return cells


CELLS = _check_experiments()


def experiment_of(kind, dataset, model, alg):
    """The experiment defining the cells (kind, dataset, model, alg); any eta / k (/ t) of it can be built."""
    for exp in config["experiments"]:
        if (
            exp["kind"] == kind
            and exp["dataset"] == dataset
            and model in experiment_models(exp)
            and alg in exp["algorithms"]
        ):
            return exp
    raise WorkflowError(
        f"no {kind} experiment in the config runs algorithm {alg!r} on dataset {dataset!r} with model {model}: "
        f"add one to `experiments` (or pass --configfile with the paper config that has it)"
    )


def cell_kind(wildcards):
    """amcss, im or sds: what the cell of a solve or verify job is. Solve rules have an eta, k or t
    wildcard; the verify rule a `cell` (eta200, k10, k4-t100) and a model folder (IC, sds-truss)."""
    keys = wildcards.keys()
    if "t" in keys or wildcards.model.startswith("sds-"):
        return "sds"
    if "eta" in keys or wildcards.get("cell", "").startswith("eta"):
        return "amcss"
    return "im"


def cell_experiment(wildcards):
    """The experiment of a solve or verify job's cell."""
    model = wildcards.model.removeprefix("sds-")
    return experiment_of(cell_kind(wildcards), wildcards.dataset, model, wildcards.algorithm)


def algorithm_threads(name):
    """The CPU threads that define an algorithm (config `algorithms.<name>.threads`: PASTI-16's 16,
    ASTI's 1), or None when the algorithm takes the threads of its job."""
    return algorithm(name).get("threads")


#: im algorithm keys -> their command-line flags (booleans: --flag / --no-flag)
IM_FLAGS = {
    "sampler": "--sampler",
    "batch_width": "--batch-width",
    "order": "--order",
    "sorted_sources": "--sorted-sources",
    "tail": "--tail",
    "registers": "--registers",
    "rebuild_threshold": "--rebuild-threshold",
    "sampling": "--sampling",
    "refine": "--refine",
}


def _flag(flag, value):
    if isinstance(value, bool):
        return flag if value else f"--no-{flag[2:]}"
    return f"{flag} {value}"


def cell_args(wildcards):
    """The command-line flags of one cell's solve besides graph, model, eta / k / t, threads and output."""
    kind = cell_kind(wildcards)
    exp = cell_experiment(wildcards)
    alg = algorithm(wildcards.algorithm)
    args = []
    if kind == "amcss":
        args.append(f"--eps {exp.get('eps', config['eps'])} --seed {exp.get('seed', config['seed'])}")
        args.append(f"--batch {exp['batch']}")
        args.append(f"--realizations {exp.get('realizations', config['realizations'])}")
        if not alg.get("update", True):
            args.append("--no-update")
    elif kind == "im":
        if alg.get("algorithm", "imm") == "difuser":
            args.append("--algorithm difuser")
        else:
            args.append(f"--eps {exp.get('eps', config['eps'])}")
        args.append(f"--seed {exp.get('seed', config['seed'])}")
        if alg.get("rounds", 1) > 1:
            args.append(f"--rounds {alg['rounds']}")
        args += [_flag(flag, alg[key]) for key, flag in IM_FLAGS.items() if key in alg]
    elif "bound" in alg:
        args.append(f"--bound {alg['bound']}")
    args.append(f"--backend {algorithm_backend(wildcards.algorithm)}")
    if alg.get("options"):
        args.append(alg["options"])
    return " ".join(args)


def verify_backend(wildcards):
    return config["verify"].get("backend") or algorithm_backend(wildcards.algorithm)


# ---- several GPUs per cell: MPI ranks --------------------------------------------------------


def cell_ranks(wildcards):
    """MPI ranks of a cell's solve and verification: its experiment's `gpus` (default 1)."""
    return cell_experiment(wildcards).get("gpus", 1)


def cell_gpus(wildcards):
    return cell_ranks(wildcards) if algorithm_backend(wildcards.algorithm) == "cuda" else 0


def verify_gpus(wildcards):
    return cell_ranks(wildcards) if verify_backend(wildcards) == "cuda" else 0


def cell_mpi(wildcards):
    """The launcher resource: set only for several ranks (the SLURM plugin treats a job with a
    non-empty `mpi` as an MPI job, and refuses one of a single task)."""
    return config["mpi"] if cell_ranks(wildcards) > 1 else ""


def launch(wildcards, resources):
    """Shell prefix of a solve or verify: `<mpi> -n N` for N > 1 ranks, nothing for one."""
    return f"{resources.mpi} -n {resources.tasks}" if resources.tasks > 1 else ""


def rank_threads(wildcards, threads):
    """CPU threads per rank: the job's threads shared by its ranks (one node, one job)."""
    return max(1, threads // cell_ranks(wildcards))


def all_cores(wildcards=None):
    """Threads of a job whose algorithm fixes none: every core given to Snakemake (`--cores`). Under
    a cluster executor, where --cores bounds nothing, the profile's `max-threads` (a node's cores),
    else this host's cores. A profile's `set-threads` or `max-threads` overrides it per rule."""
    cores = workflow.cores
    if isinstance(cores, int) and 0 < cores <= 4096:
        return cores
    settings = getattr(workflow, "resource_settings", None)
    max_threads = getattr(settings, "max_threads", None)
    return max_threads if isinstance(max_threads, int) and max_threads > 0 else (os.cpu_count() or 1)


def solve_threads(wildcards):
    """Threads of a solve job: the algorithm's own (`algorithms.<name>.threads`), else all cores."""
    return algorithm_threads(wildcards.algorithm) or all_cores()


# ---- input and params functions of the data rules --------------------------------------------


def download_source(wildcards):
    """params of the download rule: a registry dataset's file name, origin URL, SHA-256, its scope."""
    entry = REGISTRY[wildcards.dataset]
    return {key: entry.get(key) for key in ("file", "url", "sha256")} | {
        "sha256_scope": entry.get("sha256_scope", "origin")
    }


def registry_keys_pattern():
    """wildcard_constraints of the download rule: exactly the registry's keys."""
    return "|".join(re.escape(k) for k in REGISTRY)


def archive_of(wildcards):
    """input of the extract rule: the downloaded archive of a KONECT dataset."""
    return raw_download_path(wildcards.dataset)


def archive_member(wildcards):
    """params of the extract rule: the archive member holding the edge list, or None for the first
    member named out.*"""
    return REGISTRY[wildcards.dataset].get("member")


def generate_args(wildcards):
    """params of the generate rule: the `gpucore generate` arguments of a generated dataset."""
    gen = DATASETS[wildcards.dataset]["generate"]
    args = [gen["kind"], f"--nodes {gen['nodes']}", f"--edges {gen['edges']}", f"--seed {gen.get('seed', 0)}"]
    if "reciprocity" in gen:
        args.append(f"--reciprocity {gen['reciprocity']}")
    if "abcd" in gen:
        args.append(f"--abcd {gen['abcd']}")
    return " ".join(args)


def edge_list_of(wildcards):
    """input of the preprocess rule: the edge list of a dataset (downloaded, extracted or generated)."""
    return edge_list_path(wildcards.dataset)


def preprocess_params(wildcards):
    """params of the preprocess rule: direction flag, weight and cost schemes, their seed, and what the
    registry expects of the graph (size, arc-set digest)."""
    spec = dataset_spec(wildcards.dataset)
    return {
        "direction": direction_flag(wildcards.dataset),
        "weights": spec["weights"],
        "cost": spec["cost"],
        "seed": spec["seed"],
        "expected": expected_graph(wildcards.dataset),
    }


# ---------------------------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------------------------


def cells_of(kind):
    return [c for c in CELLS if c["kind"] == kind]


def datasets_used():
    return sorted({c["dataset"] for c in CELLS})


def amcss_models():
    return sorted({c["model"] for c in cells_of("amcss")})


AMCSS_FIGURES = ("cost", "time", "breakdown")
TABLE_FORMATS = ("csv", "md", "tex", "html")


def table_files(stem):
    return [out(f"tables/{stem}.{ext}") for ext in TABLE_FORMATS]


def compared_im_cells():
    """True when some IM cell (dataset, model, k) is run by several algorithms (table im_compare)."""
    runs = {}
    for c in cells_of("im"):
        runs.setdefault((c["dataset"], c["model"], c["x"]), set()).add(c["algorithm"])
    return any(len(algs) > 1 for algs in runs.values())


def fused_im_cells():
    """True when some IM cell uses the fused sampler (FuseIM's table and figure)."""
    return any(algorithm(c["algorithm"]).get("sampler") == "fused" for c in cells_of("im"))


def dataset_graphs(kind):
    """params of the IM and sds tables: dataset -> dataset_graph() of every dataset of `kind` cells."""
    return {d: dataset_graph(d) for d in sorted({c["dataset"] for c in cells_of(kind)})}


def all_targets():
    targets = [out("config.yaml"), out("config.html")]
    if CELLS:
        targets += table_files("datasets")
    if cells_of("amcss"):
        targets += table_files("amcss_summary") + [out("tables/amcss_realizations.csv")]
        targets += [out(f"figures/amcss_{fig}_{m}.png") for fig in AMCSS_FIGURES for m in amcss_models()]
        targets.append(out("figures/amcss_verification.png"))
    if cells_of("im"):
        targets += table_files("im_summary")
    if compared_im_cells():
        targets += table_files("im_compare")
    if fused_im_cells():
        targets += table_files("fuseim_occupancy") + [out("figures/fuseim_speedup.png")]
    if cells_of("sds"):
        targets += table_files("sds_summary") + [out("tables/sds_cells.csv")]
        targets += [out("figures/sds_time_k.png"), out("figures/sds_time_t.png")]
    return targets


def dataset_table_spec(name):
    """What the datasets table needs to know about `name` besides its sidecar."""
    spec = dataset_spec(name)
    if "generate" in spec:
        gen = spec["generate"]
        return {"source": f"generated ({gen['kind']}, seed {gen.get('seed', 0)})", "title": name}
    entry = spec["entry"]
    return {
        "source": "registry" + (f" ({spec['registry']})" if spec["registry"] != name else ""),
        "title": entry.get("title"),
        "expected_n": entry.get("n"),
        "expected_m": entry.get("m"),
        "exact": bool(entry.get("exact")),
        "sha256": entry.get("sha256"),
        "arcs_sha256": entry.get("arcs_sha256"),
    }


# ---------------------------------------------------------------------------------------------
# what a run will download and store (printed once, before the plan, when there is any)
# ---------------------------------------------------------------------------------------------

#: compressed bytes per edge line of a SNAP / KONECT file (the six curated copies: 2.5 to 4.6)
BYTES_PER_EDGE_LINE = 4


def gcsr_bytes(n, m):
    """Size of a .gcsr (gpucore/graph/gcsr.py): two int64 offsets per vertex, five 4-byte arrays per
    arc (in_eid of 8 bytes from 2^31 arcs), a float32 cost and an int64 original id per vertex."""
    return 16 * (n + 1) + (20 if m < 2**31 else 24) * m + 12 * n + 4096


def download_plan():
    """(dataset, estimated download bytes or None, .gcsr bytes or None) of every registry graph the
    cells use whose graph and downloaded file are both absent."""
    plan = []
    for name in datasets_used():
        spec = dataset_spec(name)
        if "entry" not in spec or os.path.exists(graph_path(name)):
            continue
        if os.path.exists(raw_download_path(spec["registry"])):
            continue
        entry = spec["entry"]
        n, m = entry.get("n"), entry.get("m")
        lines = None if m is None else (m if entry["directed"] else m // 2)
        plan.append(
            (
                name,
                None if lines is None else lines * BYTES_PER_EDGE_LINE,
                None if n is None or m is None else gcsr_bytes(n, m),
            )
        )
    return plan


def _gb(nbytes):
    return f"{nbytes / 1e9:.1f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:.0f} MB"


def download_notice(plan):
    """One paragraph: how many graphs, from where, about how many bytes to download and to store."""
    names = ", ".join(name for name, _, _ in plan)
    where = (
        f"the mirror {config['mirror']}" if config.get("mirror") else "their origins (or a copy: `--config mirror=DIR`)"
    )
    download = sum(b for _, b, _ in plan if b)
    stored = sum(b for _, _, b in plan if b)
    unknown = sum(1 for _, b, _ in plan if b is None)
    return (
        f"gpucore: this configuration needs {len(plan)} graph(s) that are not on disk yet ({names}), downloaded "
        f"from {where}: about {_gb(download)} to download (estimated at {BYTES_PER_EDGE_LINE} bytes per edge "
        f"line{f', {unknown} of unknown size' if unknown else ''}) and {_gb(download + stored)} of disk in all, "
        f"{_gb(stored)} of it the preprocessed graphs (resources/graphs/*.gcsr)."
    )


DOWNLOADS = download_plan() if workflow.is_main_process else []
if DOWNLOADS:
    print(download_notice(DOWNLOADS), file=sys.stderr)

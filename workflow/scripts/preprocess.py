"""Rule `preprocess`: run `gpucore preprocess`, then check the graph's size against the registry.

A registry entry marked `exact` must match n and m exactly (the job fails, and Snakemake removes
the outputs); other entries only log a warning, since their numbers come from the origin's page.
"""

import json
import subprocess
import sys


def check_size(stats: dict, expected: dict) -> list[str]:
    """Differences between the sidecar `stats` and the registry's expected n / m."""
    problems = []
    for key in ("n", "m"):
        want = expected.get(key)
        if want is not None and stats[key] != want:
            problems.append(f"{key} = {stats[key]:,}, registry says {want:,}")
    return problems


def main(smk) -> None:
    """Rule `preprocess`: params.graph = {direction, weights, cost, seed, expected} (rules/common.smk)."""
    graph = smk.params.graph
    cmd = [
        "gpucore", "preprocess", str(smk.input[0]), "-o", smk.output.gcsr, graph["direction"],
        "--weights", str(graph["weights"]), "--cost", str(graph["cost"]), "--seed", str(graph["seed"]),
        "--threads", str(smk.threads),
    ]
    with open(smk.log[0], "w") as log:
        print("$ " + " ".join(cmd), file=log, flush=True)
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            sys.exit(f"gpucore preprocess failed with exit code {rc}; see {smk.log[0]}")
        with open(smk.output.stats) as fh:
            stats = json.load(fh)
        problems = check_size(stats, graph["expected"])
        if problems and graph["expected"].get("exact"):
            msg = f"{smk.input[0]}: " + "; ".join(problems) + " (exact registry entry: wrong file or reader bug)"
            print("ERROR: " + msg, file=log)
            sys.exit(msg)
        for p in problems:
            print(f"warning: {p} (the registry's numbers are the origin's, not checked by us)", file=log)
        print(f"ok: n = {stats['n']:,}, m = {stats['m']:,}", file=log)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

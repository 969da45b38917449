"""Rule `preprocess`: run `gpucore preprocess`, then check the graph against the registry.

- `arcs_sha256` (when the registry has one): the digest of the graph itself (its vertices and arcs
  in canonical order, `gpucore.graph.csr.arc_set_sha256`, whatever the file's compression, line
  order or comments) must be the reference copy's, or the job fails (Snakemake removes the
  outputs): the reference runs are rebuilt exactly from any file that passes, the origin's included.
- n and m: an entry marked `exact` must match exactly (the job fails otherwise); other entries only
  log a warning, since their numbers come from the origin's page.
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


def check_arcs(stats: dict, expected: dict, source) -> str | None:
    """Why the graph is not the registry's reference graph (None when it is, or when no digest is known)."""
    want, got = expected.get("arcs_sha256"), stats.get("arcs_sha256")
    if not want or got == want:
        return None
    return (f"{source}: the graph's arc-set digest {str(got)[:16]}... is not the registry's {want[:16]}... "
            f"(n = {stats['n']:,}, m = {stats['m']:,}): this file holds another graph than the reference copy")


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
        mismatch = check_arcs(stats, graph["expected"], smk.input[0])
        if mismatch:
            print("ERROR: " + mismatch, file=log)
            sys.exit(mismatch)
        if graph["expected"].get("arcs_sha256"):
            print(f"ok: arc set = the reference copy's (arcs_sha256 {stats['arcs_sha256']})", file=log)
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

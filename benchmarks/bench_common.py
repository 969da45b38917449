"""What the benchmark scripts share: provenance (commit, CPU model) and the graphs they build.

Graphs are cached by name in one folder (default ``/tmp/gpucore-bench-graphs``), so benchmarks run
in the same session reuse each other's graphs: a name always means the same graph (a SNAP file, or
a preferential-attachment graph with seed 1, reciprocity 0.3, weighted cascade, degree costs).
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GRAPH_CACHE = "/tmp/gpucore-bench-graphs"


def git_commit() -> str:
    """GPUCORE_COMMIT when set (the GPU machine has no .git), else ``git rev-parse HEAD`` (+dirty)."""
    env = os.environ.get("GPUCORE_COMMIT", "").strip()
    if env:
        return env
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "-q", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        sha = out.stdout.strip()
        if out.returncode == 0 and len(sha) == 40 and all(c in "0123456789abcdef" for c in sha):
            dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "gpucore", "benchmarks"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_facts() -> dict:
    return {"cpu_model": cpu_model(), "cpu_count": os.cpu_count()}


def build_graph(name: str, spec: dict, shared: Path | None, cache: Path, log=print) -> Path:
    """``cache/name.gcsr``, built once: from ``spec["file"]`` under ``shared`` (``spec["undirected"]``,
    default directed), or a generated graph of ``spec["nodes"]`` nodes and ``spec["edges"]`` arcs:
    ``spec["generator"]`` pa (default) or rmat (what ``gpucore generate KIND --nodes N --edges M --seed 1``
    + ``gpucore preprocess`` do); edge probabilities ``spec["weights"]`` (a ``--weights`` scheme, default wc);
    seed costs ``spec["cost"]`` (a ``gpucore preprocess --cost`` scheme, default degree)."""
    from gpucore.graph import preprocess

    cache.mkdir(parents=True, exist_ok=True)
    out = cache / f"{name}.gcsr"
    if out.exists():
        return out
    t = time.perf_counter()
    undirected = bool(spec.get("undirected", False))
    weights = str(spec.get("weights", "wc"))
    cost = spec.get("cost", "degree")
    if "file" in spec:
        if shared is None or not (shared / spec["file"]).is_file():
            raise FileNotFoundError(f"{spec['file']} not found under --data {shared}")
        preprocess(shared / spec["file"], out, undirected=undirected, weights=weights, cost=cost, show_progress=False)
    else:
        from gpucore.graph.generators import generate, write_edge_list

        kind = spec.get("generator", "pa")
        src, dst = generate(kind, spec["nodes"], spec["edges"], seed=1, reciprocity=0.3)
        text = cache / f"{name}.txt"
        write_edge_list(text, src, dst, f"gpucore generate {kind} --nodes {spec['nodes']} --edges {spec['edges']} --seed 1")
        del src, dst
        try:
            preprocess(text, out, undirected=undirected, weights=weights, cost=cost, seed=1, show_progress=False)
        finally:
            text.unlink(missing_ok=True)
    log(f"built {name} in {time.perf_counter() - t:.1f}s -> {out}")
    return out

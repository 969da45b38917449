"""Edge list -> ``.gcsr`` (+ JSON sidecar): the whole preprocessing step.

``preprocess(input, output, ...)`` reads the edge list, relabels ids, builds both CSRs without
self-loops and duplicates, draws edge probabilities and seed costs, checks the LT condition and
writes ``output`` and ``output + ".json"`` (statistics), each atomically: a failure leaves no
partial file behind.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpucore.errors import GpucoreError
from gpucore.graph.costs import parse_cost, vertex_costs
from gpucore.graph.csr import arc_set_sha256, build_csr, relabel
from gpucore.graph.edgelist import read_edge_list
from gpucore.graph.gcsr import VERSION, write_gcsr
from gpucore.graph.integrity import write_sidecar
from gpucore.graph.weights import count_lt_violations, edge_probabilities, parse_weights
from gpucore.progress import status
from gpucore.timing import Phases


def preprocess(
    source,
    output,
    undirected: bool | None = None,
    weights: str = "wc",
    cost: str = "degree",
    seed: int = 0,
    threads: int | None = None,
    show_progress: bool = True,
) -> dict:
    """Turn an edge list into a ``.gcsr`` file; returns the statistics written to the sidecar.

    ``undirected=None`` takes the direction from a KONECT header (``% sym``) and otherwise treats
    the file as directed.
    """
    source, output = Path(source), Path(output)
    parse_weights(weights)  # fail on bad parameters before reading a large file
    parse_cost(cost)
    phases = Phases(("read", "csr", "weights_costs", "write"))
    with phases.phase("read"):
        edges = read_edge_list(source, threads=threads, show_progress=show_progress)
        if edges.konect_kind == "bip":
            raise GpucoreError(f"{source}: bipartite KONECT networks are not supported")
        if undirected is None:
            undirected = edges.konect_kind == "sym"

    with phases.phase("csr"):
        status(f"relabel {edges.src.size:,} edge lines")
        src32, dst32, original = relabel(edges.src, edges.dst)
        edge_lines = int(edges.src.size)
        del edges.src, edges.dst
        status(f"build CSR ({original.size:,} vertices)")
        csr = build_csr(src32, dst32, int(original.size), undirected)
        del src32, dst32

    with phases.phase("weights_costs"):
        out_prob = edge_probabilities(weights, csr.out_dst, csr.in_indptr, seed)
        in_prob = out_prob[csr.in_eid]
        out_degree = np.diff(csr.out_indptr)
        in_degree = np.diff(csr.in_indptr)
        costs = vertex_costs(cost, out_degree, original, seed)
        lt_violations = count_lt_violations(csr.in_indptr, in_prob)

    stats = {
        "format_version": VERSION,
        "source": source.name,
        "source_sha256": edges.sha256,
        "arcs_sha256": arc_set_sha256(original, csr.out_indptr, csr.out_dst),
        "source_lines": edges.lines,
        "edge_lines": edge_lines,
        "directed_source": not undirected,
        "n": csr.n,
        "m": csr.m,
        "self_loops_dropped": csr.self_loops_dropped,
        "duplicates_dropped": csr.duplicates_dropped,
        "max_in_degree": int(in_degree.max()),
        "max_out_degree": int(out_degree.max()),
        "weights": weights,
        "cost": cost,
        "seed": int(seed),
        "cost_scale": float(costs.max()),
        "cost_min": float(costs.min()),
        "lt_normalised_nodes": lt_violations,
        "prob_min": float(out_prob.min()),
        "prob_max": float(out_prob.max()),
    }
    with phases.phase("write"):
        status(f"write {output}")
        digest = write_gcsr(
            output,
            csr.n,
            csr.m,
            {
                "out_indptr": csr.out_indptr,
                "out_dst": csr.out_dst,
                "out_prob": out_prob,
                "in_indptr": csr.in_indptr,
                "in_src": csr.in_src,
                "in_eid": csr.in_eid,
                "in_prob": in_prob,
                "cost": costs,
                "original_id": original,
            },
            stats,
            directed=not undirected,
            cost_scale=stats["cost_scale"],
        )
    seconds = dict(phases.seconds, total=phases.total)
    sidecar = dict(stats, sha256=digest, seconds={k: round(v, 3) for k, v in seconds.items()})
    return write_sidecar(output, sidecar)  # with the content record: the first load need not hash the arrays

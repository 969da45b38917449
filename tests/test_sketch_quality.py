"""Quality (issue 15, item 6): the oracle spread of DiFuseR's seeds against IMM's (eps = 0.05).

Every case runs DiFuseR with its defaults (J = 1024 registers, threshold 0.01, log score, refinement
of the 32 best, default sampling) and IMM at eps = 0.05 on the same graph, then scores both seed sets
with the independent oracle on the *same* 10,000 Monte-Carlo worlds (common random numbers). The
test is paired: with d_s = spread_s(DiFuseR) - 0.98 spread_s(IMM) per world s, it fails when
mean(d) + 2.326 sd(d) / sqrt(10,000) < 0, i.e. when the one-sided 99 % confidence bound says
DiFuseR is below 0.98 x IMM. If DiFuseR truly reaches 0.98 x IMM, a case fails with probability at
most 1 % over the oracle's worlds (the solvers' seeds are fixed, so the outcome is deterministic for
the fixed seeds below). Graphs: a generated preferential-attachment graph and the real SNAP graphs
(``shared_data``), every weight setting of the paper (section 5). ca-GrQc with N(0.05, 0.025) weights
fell short (0.975x) while the refinement chose among the current 32 best sketch scores only; with the
earlier candidates kept (``gpucore.im.sketch.refine``) it reaches 0.998x (docs/difuser.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucore.graph import load_graph, preprocess
from gpucore.graph.generators import generate, write_edge_list
from gpucore.im import imm
from gpucore.im.sketch import difuser
from gpucore.oracle import spread

SETTINGS = ["const:0.005", "const:0.01", "const:0.1", "normal:0.05,0.025", "uniform:0,0.1"]
RUNS = 10_000
Z99 = 2.326


def paired_ratio_bound(graph, ours, ref) -> tuple[float, float]:
    """(mean of d, one-sided 99 % upper bound of mean d) for d = ours - 0.98 ref on the same worlds."""
    a = spread(graph, ours, "IC", runs=RUNS, seed=11, backend="cpu").counts.astype(np.float64)
    b = spread(graph, ref, "IC", runs=RUNS, seed=11, backend="cpu").counts.astype(np.float64)
    d = a - 0.98 * b
    return float(d.mean()), float(d.mean() + Z99 * d.std(ddof=1) / math.sqrt(RUNS))


def check(graph, k):
    ours = difuser(graph, k, seed=3, backend="cpu")
    ref = imm(graph, k, 0.05, "IC", seed=3, backend="cpu")
    mean, upper = paired_ratio_bound(graph, ours["seed_ids"], ref["seed_ids"])
    assert upper >= 0.0, (graph.path, mean, ours["estimated_spread"], ref["estimated_spread"])


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sketch_quality")

    def get(source, weights, undirected=False):
        out = folder / f"{source.stem}-{weights.replace(':', '_').replace(',', '_')}.gcsr"
        if not out.exists():
            preprocess(source, out, undirected=undirected, weights=weights, seed=1, show_progress=False)
        return load_graph(out)

    return get


@pytest.fixture(scope="module")
def pa_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("sketch_pa") / "pa2k.txt"
    src, dst = generate("pa", 2000, 12000, seed=1, reciprocity=0.3)
    write_edge_list(path, src, dst)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("weights", SETTINGS)
def test_generated_graph(build, pa_file, weights):
    check(build(pa_file, weights), 20)


@pytest.mark.slow
@pytest.mark.parametrize("weights", SETTINGS)
def test_email_eu_core(build, shared_data, weights):
    check(build(shared_data / "email-Eu-core.txt.gz", weights), 20)


@pytest.mark.slow
@pytest.mark.parametrize("weights", SETTINGS)
def test_ca_grqc(build, shared_data, weights):
    check(build(shared_data / "ca-GrQc.txt.gz", weights, undirected=True), 20)

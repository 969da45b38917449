"""Structural diversity search on the GPU against the CPU backend, on every graph of the shared data:
identical supports, ego-network sizes and bounds, the score of *every* vertex for comp / core /
truss and k = 2..6, the top-t answers for t = 10, 100, 1000 (vertices, scores, contexts, ties),
full trussness, several block sizes, and the oracle on GPU results. Quick (well under two minutes
on an H100, most of it the CPU references)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from gpucore.backend import get_backend
from gpucore.oracle.verify import verify_result
from gpucore.sds import make_engine, run_sds, simple_graph
from gpucore.sds.bounds import MODELS
from tests.conftest import REPO
from tests.sds_graphs import brute_top

KS = (2, 3, 4, 5, 6)
TS = (10, 100, 1000)


#: the shared data (``../shared/data/snap``): file -> (name, undirected)
FILES = {"wiki-Vote.txt.gz": ("wiki-Vote", False), "email-Eu-core.txt.gz": ("email-Eu-core", False),
         "soc-Epinions1.txt.gz": ("soc-Epinions1", False), "facebook_combined.txt.gz": ("ego-Facebook", True),
         "ca-GrQc.txt.gz": ("ca-GrQc", True), "nethept.txt.gz": ("NetHEPT", True)}


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """Every shared graph, from $GPUCORE_SHARED_DATA, ./.shared_data or ../shared/data/snap."""
    from gpucore.graph import load_graph, preprocess

    folders = (os.environ.get("GPUCORE_SHARED_DATA"), REPO / ".shared_data", REPO.parent / "shared" / "data" / "snap")
    for base in folders:
        if base and all((Path(base) / f).is_file() for f in FILES):
            break
    else:
        pytest.skip("the shared SNAP graphs are not available")
    folder = tmp_path_factory.mktemp("sds_gpu")
    out = {}
    for file, (name, undirected) in FILES.items():
        path = folder / f"{name}.gcsr"
        preprocess(Path(base) / file, path, undirected=undirected, show_progress=False)
        out[name] = load_graph(path)
    return out


@pytest.fixture(scope="module")
def engines(graphs):
    """(cpu engine, cuda engine, all-vertex CPU scores per (model, k)) per dataset."""
    out = {}
    for name, graph in graphs.items():
        sg = simple_graph(graph)
        cpu, gpu = make_engine(sg, "cpu"), make_engine(sg, "cuda")
        cpu.prepare()
        gpu.prepare()
        everyone = np.arange(graph.n, dtype=np.int32)
        scores = {(model, k): cpu.score(everyone, model, k) for model in MODELS for k in KS}
        out[name] = (cpu, gpu, scores)
    return out


def test_supports_sizes_and_bounds(engines):
    for name, (cpu, gpu, _scores) in engines.items():
        assert np.array_equal(cpu.sup, get_backend("cuda").to_host(gpu.sup)), name
        for a, b in zip(cpu.ego_sizes(), gpu.ego_sizes()):
            assert np.array_equal(a, b), name
        for model in MODELS:
            for k in KS:
                ra, rb = cpu.rank(model, k), gpu.rank(model, k)
                assert np.array_equal(ra.bound, rb.bound) and np.array_equal(ra.candidates, rb.candidates)


def test_every_vertex_scores_equal(engines):
    for name, (_cpu, gpu, scores) in engines.items():
        everyone = np.arange(gpu.n, dtype=np.int32)
        for (model, k), want in scores.items():
            assert np.array_equal(gpu.score(everyone, model, k), want), (name, model, k)


def test_top_t_equal(graphs, engines):
    for name, graph in graphs.items():
        cpu, gpu, scores = engines[name]
        for (model, k), all_scores in scores.items():
            for t in TS:
                if t > graph.n:
                    continue
                res = run_sds(graph, model, k, t, engine=gpu)
                want_v, want_s = brute_top(all_scores.astype(np.int64), t)
                got_v = graph.internal_ids([e["vertex"] for e in res["top"]])
                assert np.array_equal(got_v, want_v) and [e["score"] for e in res["top"]] == want_s.tolist(), \
                    (name, model, k, t)
                assert res["ties_at_t"] == int(np.count_nonzero(all_scores == want_s[-1]))
                positive = want_v[want_s > 0][:100]  # contexts of the first 100 answers
                if positive.size:
                    _s, contexts = cpu.score(positive, model, k, contexts=True)
                    assert [e["contexts"] for e in res["top"][:positive.size]] == contexts, (name, model, k, t)
                assert res["backend"]["backend"] == "cuda"


def test_trussness_and_block_sizes(graphs, engines):
    for name in ("ego-Facebook", "soc-Epinions1", "email-Eu-core"):
        if name not in graphs:
            continue
        cpu, gpu, scores = engines[name]
        heavy = np.argsort(-cpu.ego_sizes()[1], kind="stable")[:500].astype(np.int32)
        assert np.array_equal(cpu.trussness(heavy), gpu.trussness(heavy)), name
        sg = simple_graph(graphs[name])
        for threads in (64, 1024):
            from gpucore.sds.cuda import CudaEngine

            other = CudaEngine(sg, get_backend("cuda"), gpu.budget, score_threads=threads)
            other.prepare()
            for model, k in (("comp", 3), ("core", 4), ("truss", 5)):
                assert np.array_equal(other.score(heavy, model, k), scores[(model, k)][heavy]), (name, threads)


def test_gpu_results_pass_the_oracle(graphs, engines):
    graph = graphs["wiki-Vote"]
    for model in MODELS:
        res = run_sds(graph, model, 4, 100, engine=engines["wiki-Vote"][1])
        report = verify_result(res, graph, "gpu.json")
        assert report["passed"], report["failures"]

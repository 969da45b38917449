"""Quality (issue 7, item 7): the oracle spread of IMM's seeds against a CELF greedy with Monte-Carlo.

On the real SNAP graphs (the ``shared_data`` fixture) small enough for CELF in CI (wiki-Vote, NetHEPT, ca-GrQc,
email-Eu-core; WC weights), IMM's seeds must reach 0.98x CELF's spread: the upper end of the 95% CI
of our oracle spread (10,000 runs) must be at least 0.98 times the oracle mean of CELF's seeds.
With both estimates from 10,000 runs the false-alarm rate is far below 1% when IMM is as good as
CELF (the 2% margin is many standard errors here). Fixed seeds throughout.
"""

from __future__ import annotations

import pytest

from gpucore.graph import load_graph, preprocess
from gpucore.im import imm
from gpucore.oracle import spread, verify_result
from tests.im_reference import celf

CASES = [
    ("wiki-Vote.txt.gz", "IC", 20, 200),
    ("wiki-Vote.txt.gz", "LT", 20, 200),
    ("nethept.txt.gz", "IC", 20, 100),
    ("ca-GrQc.txt.gz", "LT", 20, 100),
    ("email-Eu-core.txt.gz", "IC", 10, 50),
]


@pytest.fixture(scope="module")
def graphs(shared_data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("quality")
    cache = {}

    def get(name):
        if name not in cache:
            out = folder / (name.split(".")[0] + ".gcsr")
            preprocess(shared_data / name, out, weights="wc", show_progress=False)
            cache[name] = load_graph(out)
        return cache[name]

    return get


@pytest.mark.parametrize("name,model,k,worlds", CASES)
def test_imm_reaches_098_of_celf(graphs, name, model, k, worlds):
    g = graphs(name)
    ours = imm(g, k, 0.1, model, seed=3, backend="cpu")
    ref = celf(g, k, model, worlds=worlds, seed=5)
    a = spread(g, ours["seed_ids"], model, runs=10000, seed=11, backend="cpu")
    b = spread(g, ref["seed_ids"], model, runs=10000, seed=11, backend="cpu")
    assert a.ci_high >= 0.98 * b.mean, (name, model, a.mean, b.mean)
    # and the IMM estimate itself is close to the oracle's (within 10% of its CI, as gpucore verify asks)
    assert 0.9 * a.ci_low <= ours["estimated_spread"] <= 1.1 * a.ci_high


@pytest.mark.parametrize("model,rounds", [("IC", 1), ("LT", 1), ("IC", 3), ("LT", 2)])
def test_oracle_verification_10000_runs(graphs, model, rounds):
    """The result check of `gpucore im --verify 10000` (the oracle's ``verify_result``): estimate within the oracle's CI widened by 10%."""
    g = graphs("nethept.txt.gz")
    res = imm(g, 10, 0.2, model, rounds=rounds, seed=2, backend="cpu")
    report = verify_result(res, g, runs=10000, seed=4, backend="cpu")
    assert report["passed"], report["failures"]
    assert report["runs"] == 10000
    assert report["ci"][0] <= report["mean"] <= report["ci"][1]

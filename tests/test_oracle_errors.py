"""Bad input to the oracle: one clear one-line GpucoreError per case."""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.oracle import replay, simulate_world, spread
from tests.test_oracle_replay import det_graph


def _raises(fn, match):
    with pytest.raises(GpucoreError, match=match) as info:
        fn()
    assert "\n" not in str(info.value)
    return str(info.value)


def test_seed_out_of_range():
    g = det_graph()
    _raises(lambda: spread(g, [0, 8], "IC", runs=10, backend="cpu"), r"seeds: internal id 8 is out of range \[0, 8\)")


def test_negative_seed():
    _raises(lambda: simulate_world(det_graph(), [-1], "IC", 0), r"seeds: internal id -1 is out of range")


def test_duplicated_seed():
    _raises(lambda: spread(det_graph(), [3, 1, 3], "IC", runs=10, backend="cpu"), r"seeds: internal id 3 appears more than once")


def test_empty_seed_set():
    _raises(lambda: spread(det_graph(), [], "LT", runs=10, backend="cpu"), r"seeds: empty seed set")


def test_non_integer_seeds():
    _raises(lambda: simulate_world(det_graph(), [0.5], "IC", 0), r"internal ids must be integers")


def test_unknown_model():
    _raises(lambda: spread(det_graph(), [0], "SIR", runs=10, backend="cpu"), r"model 'SIR' is unknown: choose IC or LT")


def test_unknown_model_in_replay():
    _raises(lambda: replay(det_graph(), [[0]], "ic", 1, eta=1), r"model 'ic' is unknown")


def test_too_few_runs():
    _raises(lambda: spread(det_graph(), [0], "IC", runs=1, backend="cpu"), r"runs must be an integer >= 2")


def test_bad_monte_carlo_seed():
    _raises(lambda: spread(det_graph(), [0], "IC", runs=10, seed=-3, backend="cpu"), r"seed must be an integer in \[0, 2\^64\)")


def test_bad_confidence():
    _raises(lambda: spread(det_graph(), [0], "IC", runs=10, confidence=1.0, backend="cpu"), r"confidence must lie in \(0, 1\)")


def test_bad_world_seed():
    _raises(lambda: simulate_world(det_graph(), [0], "IC", 2**64), r"world_seed must be an integer in \[0, 2\^64\)")


def test_replay_seed_out_of_range():
    _raises(lambda: replay(det_graph(), [[0], [9]], "IC", 1, eta=3), r"round 1 seed_ids: internal id 9 is out of range")


def test_replay_bad_eta():
    _raises(lambda: replay(det_graph(), [[0]], "IC", 1, eta=0), r"eta must be an integer >= 1")


def test_replay_round_without_seed_ids():
    _raises(lambda: replay(det_graph(), [{"seeds": [0]}], "IC", 1, eta=1), r"round 0: no 'seed_ids'")


def test_unknown_backend():
    _raises(lambda: spread(det_graph(), [0], "IC", runs=10, backend="tpu"), r"unknown backend 'tpu'")


def test_two_dimensional_seeds():
    _raises(lambda: spread(det_graph(), np.zeros((2, 2), dtype=int), "IC", runs=10, backend="cpu"), r"flat list")

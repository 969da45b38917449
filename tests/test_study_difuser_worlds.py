"""``benchmarks/study_difuser_worlds.py`` rebuilds DiFuseR's worlds outside the solver; its own check
(DiFuseR's seeds score their internal estimate there) must hold for both samplings, on the CPU, so
that its first GPU run is about the answer, not the script."""

from __future__ import annotations

import json

import pytest

from benchmarks import study_difuser_worlds


@pytest.mark.parametrize("sampling", ["keyed", "xor"])
def test_own_seeds_score_their_estimate_on_the_rebuilt_worlds(tmp_path, sampling):
    rc = study_difuser_worlds.main([str(tmp_path), "--graph", "custom", "--custom", "1500,4500,undirected",
                                    "--setting", "p1", "--refines", "0,8", "--k", "6", "--registers", "64",
                                    "--sampling", sampling, "--backend", "cpu", "--oracle-runs", "200"])
    assert rc == 0
    rows = json.loads((tmp_path / "study_difuser_worlds.json").read_text())["rows"]
    assert [r["solver"] for r in rows] == [f"difuser-{sampling}-refine0", f"difuser-{sampling}-refine8", "imm-eps0.5"]
    for r in rows[:2]:
        assert r["on_difuser_worlds"] == pytest.approx(r["estimated_spread"], rel=1e-12)
    assert rows[2]["on_difuser_worlds"] > 6  # IMM's seeds are scored on the same worlds, not skipped
    assert "| imm-eps0.5 |" in (tmp_path / "study_difuser_worlds.md").read_text()


def test_a_different_world_seed_breaks_the_check(tmp_path, monkeypatch):
    real = study_difuser_worlds.spread_on_worlds
    monkeypatch.setattr(study_difuser_worlds, "spread_on_worlds",
                        lambda graph, seeds, registers, sampling, seed, backend:
                        real(graph, seeds, registers, sampling, seed + 1, backend))
    with pytest.raises(SystemExit, match="not the same worlds"):
        study_difuser_worlds.main([str(tmp_path), "--graph", "custom", "--custom", "1500,4500,undirected",
                                   "--setting", "p1", "--refines", "8", "--k", "6", "--registers", "64",
                                   "--backend", "cpu", "--oracle-runs", "100"])

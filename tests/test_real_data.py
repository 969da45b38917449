"""Every real graph in ../shared/data preprocesses to the n and m of its MANIFEST."""

import pytest

from gpucore.graph import load_graph, preprocess
from tests.conftest import manifest_rows, shared_data_dir

ROWS = manifest_rows() if (shared_data_dir().parent / "MANIFEST.md").is_file() else []


@pytest.mark.parametrize("row", ROWS, ids=[r["dataset"] for r in ROWS])
def test_real_graph_matches_manifest(shared_data, tmp_path, row):
    out = tmp_path / "g.gcsr"
    stats = preprocess(shared_data / row["file"], out, undirected=row["undirected"], show_progress=False)
    assert stats["source_sha256"] == row["sha256"]
    assert stats["n"] == row["nodes"]
    assert stats["m"] == row["arcs"]
    assert stats["self_loops_dropped"] == row["self_loops"]
    g = load_graph(out, verify=True)
    assert (g.n, g.m) == (row["nodes"], row["arcs"])


def test_manifest_lists_the_six_graphs(shared_data):
    assert len(ROWS) == 6

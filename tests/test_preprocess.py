"""preprocess(): sidecar statistics, direction, and no partial output on failure."""

import gzip
import json

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import load_graph, preprocess, sidecar_path


def test_statistics_and_sidecar(tmp_path):
    src = tmp_path / "g.txt.gz"
    src.write_bytes(gzip.compress(b"# t\n10 20\n20 30\n10 20\n30 30\n40 10\n"))
    stats = preprocess(src, tmp_path / "g.gcsr", show_progress=False)
    side = json.loads(sidecar_path(tmp_path / "g.gcsr").read_text())
    assert side == stats
    assert (stats["n"], stats["m"], stats["self_loops_dropped"], stats["duplicates_dropped"]) == (4, 3, 1, 1)
    assert stats["max_in_degree"] == 1 and stats["max_out_degree"] == 1
    g = load_graph(tmp_path / "g.gcsr", verify=True)
    assert g.sha256 == stats["sha256"] and g.meta["source_sha256"] == stats["source_sha256"]
    assert g.original_id.tolist() == [10, 20, 30, 40]
    np.testing.assert_array_equal(g.cost, np.float32(0.01 + 0.01 * g.out_degree))


def test_undirected_and_konect_direction(tmp_path):
    plain = tmp_path / "u.txt"
    plain.write_text("1 2\n2 3\n")
    assert preprocess(plain, tmp_path / "d.gcsr", show_progress=False)["m"] == 2
    assert preprocess(plain, tmp_path / "u.gcsr", undirected=True, show_progress=False)["m"] == 4
    konect = tmp_path / "out.k"
    konect.write_text("% sym unweighted\n1 2\n2 3\n")
    assert preprocess(konect, tmp_path / "k.gcsr", show_progress=False)["m"] == 4
    assert preprocess(konect, tmp_path / "k2.gcsr", undirected=False, show_progress=False)["m"] == 2


def test_bipartite_konect_is_refused(tmp_path):
    konect = tmp_path / "out.b"
    konect.write_text("% bip unweighted\n1 2\n")
    with pytest.raises(GpucoreError, match="bipartite"):
        preprocess(konect, tmp_path / "b.gcsr", show_progress=False)
    assert not (tmp_path / "b.gcsr").exists()


@pytest.mark.parametrize(
    "text, kwargs, message",
    [
        ("1 2\nbad\n", {}, "line 2"),
        ("# nothing\n", {}, "empty graph"),
        ("1 1\n2 2\n", {}, "empty graph"),
        ("1 2\n", {"weights": "const:2"}, "outside"),
        ("1 2\n", {"cost": "const:0"}, "positive"),
    ],
)
def test_failures_leave_no_partial_output(tmp_path, text, kwargs, message):
    src = tmp_path / "in.txt"
    src.write_text(text)
    out = tmp_path / "out" / "g.gcsr"
    with pytest.raises(GpucoreError, match=message):
        preprocess(src, out, show_progress=False, **kwargs)
    assert not out.exists() and not sidecar_path(out).exists()
    assert not out.parent.exists() or list(out.parent.iterdir()) == []

"""Edge-list reading: formats, compression, chunking, and one test per kind of bad input."""

import bz2
import gzip
import hashlib

import numpy as np
import pytest

import gpucore.graph.edgelist as edgelist
from gpucore.errors import GpucoreError
from gpucore.graph.edgelist import parse_buffer, read_edge_list


def _write(path, text: str, compress=None) -> None:
    data = text.encode()
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "bz2":
        data = bz2.compress(data)
    path.write_bytes(data)


SAMPLE = "# comment\n% konect-style comment\n\n1\t2\n  3 4 0.5 extra\n5\t\t6\r\n7 8"


@pytest.mark.parametrize("compress", [None, "gz", "bz2"])
def test_formats_and_compression(tmp_path, compress):
    path = tmp_path / "g.txt"  # name says nothing: compression comes from magic bytes
    _write(path, SAMPLE, compress)
    edges = read_edge_list(path, show_progress=False)
    assert edges.src.tolist() == [1, 3, 5, 7]
    assert edges.dst.tolist() == [2, 4, 6, 8]
    assert edges.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert edges.konect_kind is None


def test_konect_header(tmp_path):
    path = tmp_path / "out.test"
    _write(path, "% sym unweighted\n% 2 3 3\n1 2\n2 3\n")
    edges = read_edge_list(path, show_progress=False)
    assert edges.konect_kind == "sym"
    assert edges.src.tolist() == [1, 2]


def test_chunk_boundaries_do_not_change_the_result(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    src = rng.integers(0, 10**9, 5000)
    dst = rng.integers(0, 10**9, 5000)
    lines = [f"{a}\t{b}" for a, b in zip(src, dst)]
    path = tmp_path / "big.txt"
    path.write_text("# header\n" + "\n".join(lines) + "\n")
    monkeypatch.setattr(edgelist, "CHUNK_BYTES", 997)  # many chunks, cut mid-line
    for threads in (1, 3):
        edges = read_edge_list(path, threads=threads, show_progress=False)
        assert edges.src.tolist() == src.tolist()
        assert edges.dst.tolist() == dst.tolist()


def test_parallel_parse_equals_serial():
    text = "".join(f"{i} {i * 7 % 13}\n" for i in range(1000)).encode()
    buf = np.frombuffer(text, dtype=np.uint8)
    a = parse_buffer(buf, 1)
    b = parse_buffer(buf, 7)
    assert a[2] == b[2] == -1
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()


@pytest.mark.parametrize(
    "bad_line",
    ["1 x", "a 2", "1", "1 2x", "1,2", "-1 2", "1 99999999999999999999"],
)
def test_malformed_line_names_file_line_and_text(tmp_path, bad_line):
    path = tmp_path / "bad.txt"
    path.write_text(f"# header\n1 2\n{bad_line}\n3 4\n")
    with pytest.raises(GpucoreError) as err:
        read_edge_list(path, show_progress=False)
    message = str(err.value)
    assert str(path) in message and "line 3" in message and bad_line in message
    assert "\n" not in message


def test_malformed_line_number_counts_across_chunks(tmp_path, monkeypatch):
    path = tmp_path / "bad.txt"
    path.write_text("".join(f"{i} {i + 1}\n" for i in range(500)) + "oops\n")
    monkeypatch.setattr(edgelist, "CHUNK_BYTES", 64)
    with pytest.raises(GpucoreError, match="line 501"):
        read_edge_list(path, show_progress=False)


def test_truncated_gzip(tmp_path):
    path = tmp_path / "t.txt.gz"
    data = gzip.compress(("1 2\n" * 10000).encode())
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(GpucoreError, match="corrupt or truncated gzip"):
        read_edge_list(path, show_progress=False)


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "c.txt.gz"
    data = bytearray(gzip.compress(("1 2\n" * 10000).encode()))
    data[20:40] = b"\xff" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(GpucoreError, match="corrupt or truncated gzip"):
        read_edge_list(path, show_progress=False)


def test_corrupt_bz2(tmp_path):
    path = tmp_path / "c.txt.bz2"
    data = bytearray(bz2.compress(("1 2\n" * 10000).encode()))
    data[10:30] = b"\x00" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(GpucoreError, match="corrupt or truncated bz2"):
        read_edge_list(path, show_progress=False)


@pytest.mark.parametrize("text", ["", "# only comments\n% and more\n\n"])
def test_empty_graph(tmp_path, text):
    path = tmp_path / "empty.txt"
    path.write_text(text)
    with pytest.raises(GpucoreError, match="empty graph"):
        read_edge_list(path, show_progress=False)


def test_missing_file(tmp_path):
    with pytest.raises(GpucoreError, match="no such file"):
        read_edge_list(tmp_path / "nope.txt", show_progress=False)

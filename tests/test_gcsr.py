"""The .gcsr format: round trip, alignment, checksums, corruption, versions, atomic writes."""

import struct

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs, load_graph, save_graph
from gpucore.graph.gcsr import ALIGN, ARRAY_ORDER, read_header


@pytest.fixture
def saved(tmp_path):
    g = from_arcs(5, [0, 1, 2, 3, 0], [1, 2, 3, 4, 4], [0.1, 0.2, 0.3, 0.4, 0.5], cost=[1, 2, 3, 4, 5])
    path = save_graph(g, tmp_path / "g.gcsr")
    return g, path


def test_round_trip_is_exact(saved):
    g, path = saved
    h = load_graph(path, verify=True)
    assert (h.n, h.m, h.sha256, h.cost_scale) == (g.n, g.m, g.sha256, 5.0)
    for name in ARRAY_ORDER:
        np.testing.assert_array_equal(getattr(h, name), getattr(g, name))
        assert not getattr(h, name).flags.writeable  # memory-mapped read-only


def test_arrays_are_64_byte_aligned(saved):
    _g, path = saved
    header = read_header(path)
    assert header["version"] == 1
    for _dt, offset, _length in header["arrays"].values():
        assert offset % ALIGN == 0


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_header_is_detected(saved):
    _g, path = saved
    _flip(path, 20)  # inside n
    with pytest.raises(GpucoreError, match="CRC mismatch"):
        load_graph(path)


def test_corrupt_array_is_detected_by_verify(saved):
    _g, path = saved
    header = read_header(path)
    _flip(path, header["arrays"]["out_prob"][1] + 1)
    load_graph(path)  # the header is intact: loading alone is cheap and succeeds
    with pytest.raises(GpucoreError, match="content checksum mismatch"):
        load_graph(path, verify=True)


def test_truncated_file(saved):
    _g, path = saved
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(GpucoreError, match="truncated"):
        load_graph(path)


def test_not_a_gcsr_file(tmp_path):
    path = tmp_path / "x.gcsr"
    path.write_bytes(b"hello world" * 20)
    with pytest.raises(GpucoreError, match="bad magic"):
        load_graph(path)


def test_unsupported_version(saved):
    _g, path = saved
    data = bytearray(path.read_bytes())
    data[8:12] = struct.pack("<I", 99)
    path.write_bytes(bytes(data))
    with pytest.raises(GpucoreError, match="version 99 is not supported"):
        load_graph(path)


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    g = from_arcs(3, [0, 1], [1, 2], 0.5)
    target = tmp_path / "out.gcsr"
    import gpucore.graph.gcsr as gcsr

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(gcsr.os, "fsync", boom)
    with pytest.raises(OSError):
        save_graph(g, target)
    assert list(tmp_path.iterdir()) == []


def test_internal_ids(saved):
    g, _ = saved
    assert g.internal_ids([4, 0]).tolist() == [4, 0]
    with pytest.raises(GpucoreError, match="unknown vertex id 9"):
        g.internal_ids([9])

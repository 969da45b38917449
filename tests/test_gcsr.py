"""The .gcsr format: round trip, alignment, checksums (cached per file version), structure checks,
corruption, versions, atomic writes."""

import re
import shutil
import struct
import time

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.graph import from_arcs, integrity, load_graph, preprocess, save_graph, sidecar_path
from gpucore.graph.gcsr import ALIGN, ARRAY_ORDER, read_header, write_gcsr


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


def test_altered_array_is_refused_on_load(saved):
    _g, path = saved
    header = read_header(path)
    _flip(path, header["arrays"]["out_prob"][1] + 1)
    with pytest.raises(GpucoreError, match="content checksum mismatch"):
        load_graph(path)  # no sidecar: the digest is computed on every load
    load_graph(path, verify=False)  # the header and the structure are intact: only the digest sees it
    with pytest.raises(GpucoreError, match="content checksum mismatch"):
        load_graph(path, verify=True)


def _preprocessed(tmp_path):
    text = tmp_path / "g.txt"
    text.write_text("".join(f"{u} {v}\n" for u in range(30) for v in range(30) if (u * 7 + v) % 5 == 0 and u != v))
    preprocess(text, tmp_path / "g.gcsr", show_progress=False)
    return tmp_path / "g.gcsr"


def _counting_digests(monkeypatch):
    calls = []
    real = integrity.content_digest

    def counted(path, header):
        calls.append(path)
        return real(path, header)

    monkeypatch.setattr(integrity, "content_digest", counted)
    return calls


def test_digest_is_computed_once_per_file_version(tmp_path, monkeypatch):
    path = _preprocessed(tmp_path)
    calls = _counting_digests(monkeypatch)
    load_graph(path)
    load_graph(path)
    assert calls == []  # preprocess recorded its own digest in the sidecar
    copy = tmp_path / "copy.gcsr"
    shutil.copyfile(path, copy)
    shutil.copyfile(sidecar_path(path), sidecar_path(copy))  # the record names the original's mtime
    load_graph(copy)
    assert calls == [copy]
    time.sleep(0.02)  # the copy's record was written in the tick of the copy: trusted once the clock moved
    load_graph(copy)
    load_graph(copy)
    assert len(calls) <= 2
    load_graph(copy, verify=True)
    assert calls[-1] == copy and len(calls) <= 3


def test_edit_after_preprocessing_is_refused(tmp_path):
    path = _preprocessed(tmp_path)
    load_graph(path)
    header = read_header(path)
    _flip(path, header["arrays"]["in_prob"][1] + 4)  # an edit right after preprocessing: same size
    with pytest.raises(GpucoreError, match="content checksum mismatch"):
        load_graph(path)


def _rewrite(path, **changes):
    """The graph at ``path`` written again with some arrays replaced (a valid digest of invalid arrays)."""
    g = load_graph(path)
    arrays = {name: np.array(getattr(g, name)) for name in ARRAY_ORDER}
    for name, edit in changes.items():
        arrays[name] = edit(arrays[name])
    write_gcsr(path, g.n, g.m, arrays, dict(g.meta), directed=g.directed, cost_scale=g.cost_scale)


def _set(index, value):
    def edit(arr):
        arr[index] = value
        return arr

    return edit


@pytest.mark.parametrize("changes,message", [
    ({"out_dst": _set(2, 10**9)}, "array out_dst holds vertex id 1000000000, outside [0, 5)"),
    ({"in_src": _set(0, -3)}, "array in_src holds vertex id -3"),
    ({"in_eid": _set(1, 5)}, "array in_eid holds arc id 5, outside [0, 5)"),
    ({"out_indptr": _set(2, 0)}, "array out_indptr decreases after vertex 1"),
    ({"in_indptr": _set(-1, 4)}, "array in_indptr runs from 0 to 4, expected 0 to m = 5"),
    ({"in_eid": lambda a: a.astype(np.int16)}, "array in_eid has dtype <i2"),
    ({"cost": lambda a: a[:3]}, "array cost has 3 entries, expected n = 5"),
])
def test_out_of_range_structure_is_refused_whatever_the_digest(saved, changes, message):
    _g, path = saved
    _rewrite(path, **changes)
    with pytest.raises(GpucoreError, match=re.escape(message)):
        load_graph(path, verify=False)


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

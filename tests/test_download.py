"""The download glue of the workflow (workflow/scripts/download.py) against a local HTTP server, and
the graph check after preprocessing (arcs_sha256, workflow/scripts/preprocess.py).

The server runs on 127.0.0.1 on a free port and can misbehave on purpose: ignore Range, close the
connection early, answer 5xx a few times, serve corrupt bytes. Name resolution failures are made by
replacing ``socket.getaddrinfo``. No network is needed.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import http.server
import importlib.util
import random
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpucore.graph import preprocess

REPO = Path(__file__).resolve().parents[1]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


download = _load("wf_download", REPO / "workflow" / "scripts" / "download.py")
extract = _load("wf_extract", REPO / "workflow" / "scripts" / "extract.py")
preprocess_rule = _load("wf_preprocess", REPO / "workflow" / "scripts" / "preprocess.py")

PAYLOAD = bytes((i * 7919 + (i >> 8)) % 251 for i in range(300_000))
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class Behaviour:
    def __init__(self):
        self.reset()

    def reset(self):
        self.files = {"/data.bin": PAYLOAD}
        self.fail_first = 0          # answer fail_status to the first N requests
        self.fail_status = 503
        self.cut_at = None           # close the connection after this many body bytes
        self.cut_times = 0           # ... for this many responses (then serve fully)
        self.honour_range = True
        self.requests = []           # (path, Range header)


class Handler(http.server.BaseHTTPRequestHandler):
    behaviour: Behaviour = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        b = self.behaviour
        b.requests.append((self.path, self.headers.get("Range")))
        if b.fail_first > 0:
            b.fail_first -= 1
            self.send_response(b.fail_status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = b.files.get(self.path)
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start = 0
        rng = self.headers.get("Range")
        if rng and b.honour_range:
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if b.cut_at is not None and b.cut_times > 0:
            b.cut_times -= 1
            self.wfile.write(body[: b.cut_at])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server():
    behaviour = Behaviour()
    handler = type("H", (Handler,), {"behaviour": behaviour})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", behaviour
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def srv(server):
    base, behaviour = server
    behaviour.reset()
    return base, behaviour


def _fetch(source, out, **kw):
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 10)
    messages = []
    info = download.fetch(source, out, log=messages.append, **kw)
    return info, messages


def test_plain_download_checks_sha(srv, tmp_path):
    base, _ = srv
    out = tmp_path / "d" / "data.bin"
    info, _ = _fetch(f"{base}/data.bin", out, sha256=SHA)
    assert out.read_bytes() == PAYLOAD
    assert info["checked"] and info["sha256"] == SHA and info["bytes"] == len(PAYLOAD)
    assert not (tmp_path / "d" / "data.bin.part").exists()


def test_unknown_sha_is_computed_not_checked(srv, tmp_path):
    base, _ = srv
    info, messages = _fetch(f"{base}/data.bin", tmp_path / "x.bin")
    assert info["sha256"] == SHA and not info["checked"]
    assert any("not checked" in m for m in messages)


def test_resume_partial_file_with_range(srv, tmp_path):
    base, behaviour = srv
    out = tmp_path / "data.bin"
    part = tmp_path / "data.bin.part"
    part.write_bytes(PAYLOAD[:100_000])
    _fetch(f"{base}/data.bin", out, sha256=SHA)
    assert out.read_bytes() == PAYLOAD
    assert behaviour.requests == [("/data.bin", "bytes=100000-")]
    assert not part.exists()


def test_resume_when_server_ignores_range_restarts(srv, tmp_path):
    base, behaviour = srv
    behaviour.honour_range = False
    out = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(b"garbage that is not the start of the file")
    _fetch(f"{base}/data.bin", out, sha256=SHA)
    assert out.read_bytes() == PAYLOAD


def test_stale_partial_file_is_discarded_and_fetched_again(srv, tmp_path):
    base, behaviour = srv
    out = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(b"\0" * 1000)  # wrong bytes: resumed file fails sha256
    info, messages = _fetch(f"{base}/data.bin", out, sha256=SHA)
    assert out.read_bytes() == PAYLOAD
    assert any("one fresh try" in m for m in messages)
    assert behaviour.requests[0][1] == "bytes=1000-" and behaviour.requests[-1][1] is None


def test_connection_cut_is_retried_and_resumed(srv, tmp_path):
    base, behaviour = srv
    behaviour.cut_at, behaviour.cut_times = 120_000, 2
    out = tmp_path / "data.bin"
    info, messages = _fetch(f"{base}/data.bin", out, sha256=SHA, retries=5)
    assert out.read_bytes() == PAYLOAD
    ranges = [r for _, r in behaviour.requests]
    assert ranges[0] is None and ranges[1] == "bytes=120000-" and ranges[2] == "bytes=240000-"
    assert sum("retrying" in m for m in messages) == 2


def test_server_errors_are_retried_with_backoff(srv, tmp_path):
    base, behaviour = srv
    behaviour.fail_first = 2
    info, messages = _fetch(f"{base}/data.bin", tmp_path / "data.bin", sha256=SHA, retries=3)
    assert info["bytes"] == len(PAYLOAD)
    assert len(behaviour.requests) == 3
    assert sum("HTTP 503" in m for m in messages) == 2


def test_gives_up_after_retries_and_leaves_nothing(srv, tmp_path):
    base, behaviour = srv
    behaviour.cut_at, behaviour.cut_times = 50_000, 100
    behaviour.honour_range = False  # every attempt starts over and is cut again
    out = tmp_path / "data.bin"
    with pytest.raises(download.DownloadError, match="giving up after 3 attempts"):
        _fetch(f"{base}/data.bin", out, sha256=SHA, retries=2)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_file_fails_with_clear_message_and_no_partial(srv, tmp_path):
    base, behaviour = srv
    corrupt = bytearray(PAYLOAD)
    corrupt[1234] ^= 0xFF
    behaviour.files["/data.bin"] = bytes(corrupt)
    out = tmp_path / "data.bin"
    with pytest.raises(download.DownloadError) as err:
        _fetch(f"{base}/data.bin", out, sha256=SHA, dataset="toy")
    msg = str(err.value)
    assert "dataset 'toy'" in msg and "sha256 mismatch" in msg and SHA in msg and "nothing was kept" in msg
    assert list(tmp_path.iterdir()) == []
    assert len(behaviour.requests) == 1  # not resumed: no second try


def test_truncated_file_fails(srv, tmp_path):
    base, behaviour = srv
    behaviour.files["/data.bin"] = PAYLOAD[:200_000]
    with pytest.raises(download.DownloadError, match="sha256 mismatch"):
        _fetch(f"{base}/data.bin", tmp_path / "data.bin", sha256=SHA)
    assert list(tmp_path.iterdir()) == []


def test_not_found_fails_at_once(srv, tmp_path):
    base, behaviour = srv
    with pytest.raises(download.DownloadError, match="HTTP 404"):
        _fetch(f"{base}/missing.bin", tmp_path / "m.bin", retries=5)
    assert len(behaviour.requests) == 1
    assert list(tmp_path.iterdir()) == []


def test_interruption_keeps_partial_file_for_resume(srv, tmp_path, monkeypatch):
    base, _ = srv
    out = tmp_path / "data.bin"

    def interrupted(*args, **kwargs):
        (tmp_path / "data.bin.part").write_bytes(PAYLOAD[:10])
        raise KeyboardInterrupt

    monkeypatch.setattr(download, "_http_once", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _fetch(f"{base}/data.bin", out, sha256=SHA)
    assert (tmp_path / "data.bin.part").read_bytes() == PAYLOAD[:10]
    assert not out.exists()


def test_local_mirror_directory(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "g.txt.gz").write_bytes(PAYLOAD)
    src = download.source_of("g.txt.gz", "https://example.org/x/g.txt.gz", str(mirror))
    assert src == str(mirror / "g.txt.gz")
    out = tmp_path / "out" / "g.txt.gz"
    _fetch(src, out, sha256=SHA)
    assert out.read_bytes() == PAYLOAD
    (mirror / "bad.gz").write_bytes(PAYLOAD[:-1])
    with pytest.raises(download.DownloadError, match="sha256 mismatch"):
        _fetch(str(mirror / "bad.gz"), tmp_path / "out" / "bad.gz", sha256=SHA)
    with pytest.raises(download.DownloadError, match="no such file in the mirror"):
        _fetch(str(mirror / "absent.gz"), tmp_path / "out" / "absent.gz")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["g.txt.gz"]


def test_source_of():
    assert download.source_of("a.gz", "https://o.org/p/a.gz", None) == "https://o.org/p/a.gz"
    assert download.source_of("a b.gz", None, "http://127.0.0.1:8/m/") == "http://127.0.0.1:8/m/a%20b.gz"
    assert download.source_of("a.gz", None, "file:///srv/m") == "/srv/m/a.gz"
    with pytest.raises(download.DownloadError, match="no origin URL"):
        download.source_of("a.gz", None, None)


def test_extract_konect_member(tmp_path):
    import io
    import tarfile

    archive = tmp_path / "download.tsv.toy.tar.bz2"
    with tarfile.open(archive, "w:bz2") as tar:
        for name, data in (("toy/README.toy", b"readme\n"), ("toy/out.toy", b"% asym unweighted\n1 2\n2 3\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = tmp_path / "toy.txt"
    assert extract.extract(archive, out, None, log=lambda m: None) == "toy/out.toy"
    assert out.read_bytes() == b"% asym unweighted\n1 2\n2 3\n"
    with pytest.raises(SystemExit, match="no member 'out.other'"):
        extract.extract(archive, tmp_path / "o2.txt", "out.other", log=lambda m: None)
    assert not (tmp_path / "o2.txt").exists()


# ---- failures that retrying cannot fix -----------------------------------------------------------


@pytest.fixture
def no_dns(monkeypatch):
    """Every host name fails to resolve, as on a machine without network or DNS."""
    def fail(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)


def test_host_that_does_not_resolve_fails_within_seconds_with_a_mirror_hint(no_dns, tmp_path):
    """With the rule's defaults (5 retries, backoff 2 s: 62 s of waiting) a DNS failure used to be retried."""
    messages = []
    start = time.monotonic()
    with pytest.raises(download.DownloadError) as err:
        download.fetch("https://snap.example.invalid/data/g.txt.gz", tmp_path / "g.txt.gz", log=messages.append,
                       hint=download.mirror_hint("g.txt.gz"))
    assert time.monotonic() - start < 5
    msg = str(err.value)
    assert "cannot resolve the host name" in msg and "--config mirror=" in msg and "g.txt.gz" in msg, msg
    assert not any("retrying" in m for m in messages)
    assert list(tmp_path.iterdir()) == []


def test_download_rule_without_mirror_names_the_mirror_option(no_dns, tmp_path, capsys):
    smk = SimpleNamespace(
        log=[str(tmp_path / "dl.log")], config={}, output=[str(tmp_path / "raw" / "g.txt.gz")],
        wildcards=SimpleNamespace(dataset="toy"),
        params=SimpleNamespace(source={"file": "g.txt.gz", "url": "https://snap.example.invalid/g.txt.gz",
                                       "sha256": None, "sha256_scope": "origin"}))
    start = time.monotonic()
    with pytest.raises(SystemExit):
        download.main(smk)
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err
    assert "download failed: dataset 'toy'" in err and "--config mirror=" in err


def test_refused_connection_fails_at_once(tmp_path):
    with socket.socket() as sock:  # a port on which nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    messages = []
    with pytest.raises(download.DownloadError, match="connection was refused"):
        download.fetch(f"http://127.0.0.1:{port}/g.gz", tmp_path / "g.gz", log=messages.append, backoff=5)
    assert not any("retrying" in m for m in messages)


@pytest.mark.parametrize("status,retried", [(403, False), (418, False), (429, True), (408, True), (502, True)])
def test_only_answers_that_may_change_are_retried(srv, tmp_path, status, retried):
    base, behaviour = srv
    behaviour.fail_first, behaviour.fail_status = 1, status
    if retried:
        info, messages = _fetch(f"{base}/data.bin", tmp_path / "data.bin", sha256=SHA, retries=2)
        assert info["bytes"] == len(PAYLOAD) and len(behaviour.requests) == 2
    else:
        with pytest.raises(download.DownloadError, match=f"HTTP {status}"):
            _fetch(f"{base}/data.bin", tmp_path / "data.bin", sha256=SHA, retries=2)
        assert len(behaviour.requests) == 1


def test_final_reason_looks_through_the_causes():
    try:
        try:
            raise socket.gaierror(-3, "Temporary failure in name resolution")
        except OSError as inner:
            raise ConnectionError("wrapped") from inner
    except ConnectionError as exc:
        assert "cannot resolve the host name" in download.final_reason(exc)
    assert download.final_reason(TimeoutError("read timed out")) is None


# ---- the graph check: the same graph from any file -------------------------------------------------


def _edge_lines(seed=5, n=300, m=2500):
    rng = random.Random(seed)
    lines = set()
    while len(lines) < m:
        u, v = rng.randrange(n), rng.randrange(n)
        lines.add(f"{u}\t{v}")
    return sorted(lines)


def _arcs_digest(path, tmp_path, undirected=False):
    return preprocess(path, tmp_path / f"{path.name}.gcsr", undirected=undirected, show_progress=False)["arcs_sha256"]


@pytest.mark.parametrize("undirected", [False, True])
def test_arc_digest_is_the_same_for_every_file_of_the_same_graph(tmp_path, undirected):
    """Another compression, line order, comment header, repeated lines and a self-loop on a vertex that
    has other lines (what separates SNAP's files from the curated copies) leave the digest unchanged;
    one arc more does not."""
    lines = _edge_lines()
    curated = tmp_path / "curated.txt.gz"
    curated.write_bytes(gzip.compress(("# curated copy\n" + "\n".join(lines) + "\n").encode()))
    shuffled = lines[:] + lines[:40]
    random.Random(1).shuffle(shuffled)
    u = lines[0].split("\t")[0]
    origin = tmp_path / "origin.txt.bz2"
    origin.write_bytes(bz2.compress(("# Directed graph\n# Nodes: 300\r\n" + "\r\n".join(shuffled)
                                     + f"\r\n{u} {u}\r\n").encode()))
    if undirected:  # the other direction of every edge line: the same undirected graph
        flipped = tmp_path / "flipped.txt"
        flipped.write_text("\n".join("\t".join(x.split("\t")[::-1]) for x in lines) + "\n")
        assert _arcs_digest(flipped, tmp_path, True) == _arcs_digest(curated, tmp_path, True)
    want = _arcs_digest(curated, tmp_path, undirected)
    assert _arcs_digest(origin, tmp_path, undirected) == want
    more = tmp_path / "more.txt"
    more.write_text("\n".join(lines) + "\n299\t298\n298\t297\n")
    assert _arcs_digest(more, tmp_path, undirected) != want


def test_preprocess_rule_refuses_another_graph(tmp_path):
    lines = _edge_lines()
    good = tmp_path / "good.txt"
    good.write_text("\n".join(lines) + "\n")
    stats = preprocess(good, tmp_path / "g.gcsr", show_progress=False)
    expected = {"n": stats["n"], "m": stats["m"], "exact": True, "arcs_sha256": stats["arcs_sha256"]}
    assert preprocess_rule.check_arcs(stats, expected, "good.txt") is None
    other = tmp_path / "other.txt"
    other.write_text("\n".join(lines[:-1]) + "\n")
    changed = preprocess(other, tmp_path / "o.gcsr", show_progress=False)
    problem = preprocess_rule.check_arcs(changed, expected, "other.txt")
    assert problem.startswith("other.txt: the graph's arc-set digest") and stats["arcs_sha256"][:16] in problem
    assert preprocess_rule.check_arcs(changed, {"arcs_sha256": None}, "other.txt") is None  # unknown: not checked


def test_registry_arc_digests_are_those_of_the_curated_copies(shared_data, tmp_path):
    """The registry's arcs_sha256 of the six curated graphs, recomputed from the files (which are read
    as SNAP's would be: same reader, same direction flag)."""
    import yaml

    registry = yaml.safe_load((REPO / "config" / "datasets.yaml").read_text())
    checked = 0
    for key, entry in registry.items():
        name = entry.get("file") or entry["url"].rsplit("/", 1)[-1]
        path = shared_data / name
        if not entry.get("arcs_sha256") or not path.exists():
            continue
        stats = preprocess(path, tmp_path / f"{key}.gcsr", undirected=not entry["directed"], show_progress=False)
        assert stats["arcs_sha256"] == entry["arcs_sha256"], key
        assert (stats["n"], stats["m"]) == (entry["n"], entry["m"]), key
        checked += 1
    assert checked == 6

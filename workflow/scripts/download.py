"""Fetch one dataset file: the glue of rule `download` (rules/download.smk), importable for tests.

- HTTP(S) with `requests`, streamed in 1 MiB chunks, raw bytes (no transparent gunzip even when a
  server labels a .gz with Content-Encoding), `Accept-Encoding: identity`.
- The bytes go to `<output>.part`; a later attempt (a retry, or the next run after an interruption)
  resumes it with an HTTP Range request; a server that ignores Range restarts it from zero.
- Retries, with exponential backoff, only where waiting can help: timeouts, dropped connections,
  short reads, 408/425/429/5xx. What waiting cannot fix fails at once, with a hint to use
  `mirror=` when the origin was asked: a host that does not resolve (no network or no DNS), a
  refused connection, an unreachable network, a TLS failure, any other 4xx.
- The SHA-256 of the bytes is checked against the registry when it applies (`sha256_scope`); the
  file is renamed onto the output only when it matches (no partial or corrupt file ever sits at the output path). A definitive failure (bad
  checksum, size mismatch after all retries, missing file) also removes the `.part` file; only an
  interruption (Ctrl-C, SIGTERM) leaves it to be resumed.
- `mirror`: a local directory or a base URL replacing the origin (`<mirror>/<file>`).
- The graph itself (its vertices and arcs, whatever the file's bytes) is checked after
  preprocessing against the registry's `arcs_sha256` (workflow/scripts/preprocess.py).
- Progress: a tqdm bar when standard error is a terminal, nothing in logs.
"""

import errno
import hashlib
import os
import shutil
import socket
import ssl
import sys
import time
import urllib.parse
from pathlib import Path

import requests
import urllib3

CHUNK = 1 << 20
#: 4xx answers that a later attempt may not get (every other 4xx is final)
RETRY_STATUS_4XX = {408, 425, 429}
_UNREACHABLE = {errno.ENETUNREACH: "the network is unreachable", errno.EHOSTUNREACH: "the host is unreachable",
                errno.ECONNREFUSED: "the connection was refused"}


class DownloadError(Exception):
    """A definitive failure: the message says which dataset, where from and what went wrong."""


class _Retryable(Exception):
    pass


class _Final(Exception):
    """A failure that waiting cannot fix (the message says what happened)."""


def final_reason(exc: BaseException) -> str | None:
    """What makes a connection error final (name resolution, refused, unreachable, TLS), or None when a
    retry may succeed (timeouts, resets). Looks through the chain of causes requests and urllib3 build."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, socket.gaierror):
            return f"cannot resolve the host name ({e.strerror or e})"
        if isinstance(e, ssl.SSLError):
            return f"TLS failure ({e})"
        if isinstance(e, OSError) and e.errno in _UNREACHABLE:
            return _UNREACHABLE[e.errno]
        todo += [e.__cause__, e.__context__, getattr(e, "reason", None)]
        todo += [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
    return None


def source_of(file_name: str, url: str | None, mirror: str | None) -> str:
    """Where the file comes from: `<mirror>/<file>` when a mirror is set, else the origin URL."""
    if mirror:
        if mirror.startswith(("http://", "https://")):
            return mirror.rstrip("/") + "/" + urllib.parse.quote(file_name)
        if mirror.startswith("file://"):
            mirror = urllib.parse.urlparse(mirror).path
        return str(Path(mirror) / file_name)
    if not url:
        raise DownloadError(f"{file_name}: no origin URL in the registry; set `mirror:` to a directory or URL holding it")
    return url


def sha256_of(path, chunk: int = CHUNK) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _bar(total, desc, initial=0):
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                file=sys.stderr, leave=False)


def _http_once(session, url, part: Path, timeout, log) -> None:
    """One attempt: (resume and) stream `url` into `part`. Raises _Retryable or DownloadError."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        with session.get(url, stream=True, timeout=timeout, headers=headers, allow_redirects=True) as r:
            if r.status_code == 416 and offset:
                log(f"  server answered 416 to Range bytes={offset}-: the partial file is complete or stale")
                return
            if 400 <= r.status_code < 500 and r.status_code not in RETRY_STATUS_4XX:
                raise _Final(f"HTTP {r.status_code} {r.reason}")
            if r.status_code >= 400:
                raise _Retryable(f"HTTP {r.status_code} {r.reason}")
            if offset and r.status_code == 206:
                start = _content_range_start(r.headers.get("Content-Range"))
                if start != offset:
                    log(f"  server resumed at {start}, not {offset}: restarting from zero")
                    offset, mode = 0, "wb"
                    r.close()
                    part.unlink(missing_ok=True)
                    raise _Retryable("inconsistent Content-Range")
                mode = "ab"
                log(f"  resuming at byte {offset:,}")
            else:
                if offset:
                    log(f"  server ignored the Range request (HTTP {r.status_code}): restarting from zero")
                offset, mode = 0, "wb"
            length = r.headers.get("Content-Length")
            expected = offset + int(length) if length is not None else None
            bar = _bar(expected, part.name.removesuffix(".part"), initial=offset)
            try:
                with open(part, mode) as fh:
                    for block in r.raw.stream(CHUNK, decode_content=False):
                        fh.write(block)
                        if bar is not None:
                            bar.update(len(block))
            finally:
                if bar is not None:
                    bar.close()
            size = part.stat().st_size
            if expected is not None and size != expected:
                raise _Retryable(f"short read: {size:,} of {expected:,} bytes")
    except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
            urllib3.exceptions.HTTPError) as exc:
        reason = final_reason(exc)
        if reason:
            raise _Final(reason) from None
        raise _Retryable(f"{type(exc).__name__}: {exc}") from None


def _content_range_start(value):
    # "bytes 100-199/200"
    try:
        return int(value.split()[1].split("-")[0])
    except (AttributeError, IndexError, ValueError):
        return None


def fetch(source: str, output, sha256: str | None = None, retries: int = 5, backoff: float = 2.0,
          timeout: float = 60, log=None, dataset: str = "", hint: str = "") -> dict:
    """Copy or download `source` (URL or local path) to `output` with the checks described above.

    Returns {"source", "bytes", "sha256", "seconds", "checked"}. Raises DownloadError; `hint` is added
    to the message of a failure that retrying cannot fix (e.g. how to use a mirror instead).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    part = output.with_name(output.name + ".part")
    label = f"dataset {dataset!r}: " if dataset else ""
    t0 = time.monotonic()
    log(f"{label}fetching {source} -> {output}")
    resumed = part.exists()
    if resumed:
        log(f"  found {part.name} ({part.stat().st_size:,} bytes) from an interrupted run")
    try:
        for fresh_try in (0, 1):
            if source.startswith(("http://", "https://")):
                with requests.Session() as session:
                    session.headers["User-Agent"] = "gpucore-workflow (+requests)"
                    attempt = 0
                    while True:
                        try:
                            _http_once(session, source, part, timeout, log)
                            break
                        except _Final as exc:
                            raise DownloadError(f"{label}{source}: {exc}{hint}") from None
                        except _Retryable as exc:
                            attempt += 1
                            if attempt > retries:
                                raise DownloadError(f"{label}{source}: giving up after {retries + 1} attempts: "
                                                    f"{exc}{hint}") from None
                            wait = min(60.0, backoff * 2 ** (attempt - 1))
                            log(f"  attempt {attempt} failed ({exc}); retrying in {wait:g} s")
                            time.sleep(wait)
            else:
                src = Path(source)
                if not src.is_file():
                    raise DownloadError(f"{label}{src}: no such file in the mirror")
                with open(src, "rb") as fin, open(part, "wb") as fout:
                    shutil.copyfileobj(fin, fout, CHUNK)
            got = sha256_of(part)
            size = part.stat().st_size
            if sha256 is None or got == sha256:
                break
            part.unlink(missing_ok=True)
            if fresh_try == 0 and resumed and source.startswith(("http://", "https://")):
                log(f"  sha256 mismatch (expected {sha256}, got {got}); discarding the partial file, one fresh try")
                continue
            raise DownloadError(
                f"{label}{source}: sha256 mismatch: expected {sha256}, got {got} ({size:,} bytes); "
                f"the file is corrupt, truncated or was changed at the origin; nothing was kept"
            )
        os.replace(part, output)
    except Exception:
        part.unlink(missing_ok=True)
        raise
    seconds = time.monotonic() - t0
    log(f"{label}done: {size:,} bytes in {seconds:.1f} s, sha256 {got} ({'checked' if sha256 else 'not checked: unknown in the registry'})")
    return {"source": source, "bytes": size, "sha256": got, "seconds": round(seconds, 3), "checked": sha256 is not None}


def mirror_hint(file_name: str) -> str:
    return (f"; to fetch {file_name} from elsewhere, put it in a folder (or behind a URL) and pass "
            f"`--config mirror=FOLDER_OR_URL` to snakemake")


def main(smk) -> None:
    """Rule `download`: params.source = {file, url, sha256 (None: not checked), sha256_scope}."""
    with open(smk.log[0], "w") as logfh:
        def log(msg):
            print(msg, file=logfh, flush=True)
            if sys.stderr.isatty():
                print(msg, file=sys.stderr, flush=True)

        dl = smk.config.get("download", {})
        mirror = smk.config.get("mirror")
        try:
            entry = smk.params.source
            source = source_of(entry["file"], entry["url"], mirror)
            sha = entry["sha256"]
            if sha and entry["sha256_scope"] == "mirror" and not mirror:
                log("note: the registry's sha256 is that of the curated copy (mirror), not of the origin's bytes; "
                    "the graph is checked after preprocessing instead (arcs_sha256)")
                sha = None
            fetch(source, smk.output[0], sha256=sha, retries=dl.get("retries", 5), backoff=dl.get("backoff", 2.0),
                  timeout=dl.get("timeout", 60), log=log, dataset=smk.wildcards.dataset,
                  hint="" if mirror else mirror_hint(entry["file"]))
        except DownloadError as exc:
            log(f"ERROR: {exc}")
            sys.stderr.write(f"download failed: {exc}\n")
            raise SystemExit(1) from None


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

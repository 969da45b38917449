"""Fetch one dataset file: the glue of rule `download` (rules/download.smk), importable for tests.

- HTTP(S) with `requests`, streamed in 1 MiB chunks, raw bytes (no transparent gunzip even when a
  server labels a .gz with Content-Encoding), `Accept-Encoding: identity`.
- The bytes go to `<output>.part`; a later attempt (a retry, or the next run after an interruption)
  resumes it with an HTTP Range request; a server that ignores Range restarts it from zero.
- Retries with exponential backoff for connection errors, timeouts, short reads, 408/429/5xx;
  other 4xx fail at once.
- The SHA-256 is checked against the registry; the file is renamed onto the output only when it
  matches (no partial or corrupt file ever sits at the output path). A definitive failure (bad
  checksum, size mismatch after all retries, missing file) also removes the `.part` file; only an
  interruption (Ctrl-C, SIGTERM) leaves it to be resumed.
- `mirror`: a local directory or a base URL replacing the origin (`<mirror>/<file>`).
- Progress: a tqdm bar when standard error is a terminal, nothing in logs.
"""

import hashlib
import os
import shutil
import sys
import time
import urllib.parse
from pathlib import Path

import requests
import urllib3

CHUNK = 1 << 20
PERMANENT_STATUS = {400, 401, 403, 404, 405, 410, 451}


class DownloadError(Exception):
    """A definitive failure: the message says which dataset, where from and what went wrong."""


class _Retryable(Exception):
    pass


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
            if r.status_code in PERMANENT_STATUS:
                raise DownloadError(f"{url}: HTTP {r.status_code} {r.reason}")
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
        raise _Retryable(f"{type(exc).__name__}: {exc}") from None


def _content_range_start(value):
    # "bytes 100-199/200"
    try:
        return int(value.split()[1].split("-")[0])
    except (AttributeError, IndexError, ValueError):
        return None


def fetch(source: str, output, sha256: str | None = None, retries: int = 5, backoff: float = 2.0,
          timeout: float = 60, log=None, dataset: str = "") -> dict:
    """Copy or download `source` (URL or local path) to `output` with the checks described above.

    Returns {"source", "bytes", "sha256", "seconds", "checked"}. Raises DownloadError.
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
                        except _Retryable as exc:
                            attempt += 1
                            if attempt > retries:
                                raise DownloadError(f"{label}{source}: giving up after {retries + 1} attempts: {exc}") from None
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
                log(f"note: the registry's sha256 is that of the curated copy (mirror); the origin's file is not checked against it")
                sha = None
            fetch(source, smk.output[0], sha256=sha, retries=dl.get("retries", 5), backoff=dl.get("backoff", 2.0),
                  timeout=dl.get("timeout", 60), log=log, dataset=smk.wildcards.dataset)
        except DownloadError as exc:
            log(f"ERROR: {exc}")
            sys.stderr.write(f"download failed: {exc}\n")
            raise SystemExit(1) from None


if "snakemake" in globals():
    main(snakemake)  # noqa: F821

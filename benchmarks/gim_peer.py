"""gIM (the public CUDA IMM code of LIS-Laboratory/gim) as a peer in our benchmarks.

gIM is not part of this project: build it yourself (for example with the im-vs-gim kit's
``gim/build.sh``) and pass the executable's path. This module only writes its input, runs it and
reads what it prints.

- ``write_input(graph, path)``: gIM's edge-list text, one line ``u v p`` per arc (our internal ids,
  the arc's float32 probability in a form that reads back to the same float32). gIM numbers its
  vertices by the ids it reads, so its seeds are our internal ids.
- ``run(binary, path, k, eps, model, timeout)``: one run, ``gIM FILE K EPS MODEL`` (MODEL 1 = IC,
  0 = LT). Returns ``seconds`` (gIM's own CUDA-event timer around its solve: no file parsing, no CSR
  build, no host-to-device copies), ``wall`` (the whole process), ``estimated_spread``, ``theta``
  (RR sets of its final phase), ``lower_bound_search`` (the [i, sets] pairs its OPT estimation printed),
  ``seed_ids``, or ``failed`` (why: a non-zero exit, an out-of-memory
  message, no timing line, the time limit) with the last lines it printed.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import numpy as np
from numba import njit

from gpucore.graph.generators import put_pair

#: lines of gIM's output kept in a failure record
TAIL_LINES = 6
#: the longest line ``write_input`` writes: two 10-digit ids, ``d.dddddddde-XX``, two spaces and a newline
_LINE_MAX = 10 + 1 + 10 + 1 + 15 + 1


def write_input(graph, path: Path) -> int:
    """Write every arc of ``graph`` as ``u v p``; return the number of lines. ``p`` has nine significant
    digits (``d.dddddddde-XX``; ``0`` and ``1`` as such), which read back as the same float32, so gIM sees
    our probabilities bit for bit. The text is formatted by a compiled loop (pandas took a minute for the
    30M arcs of a Pokec-size graph)."""
    src = np.repeat(np.arange(graph.n, dtype=np.int64), np.diff(graph.out_indptr))
    dst = np.asarray(graph.out_dst, dtype=np.int64)
    prob = np.asarray(graph.out_prob, dtype=np.float32).astype(np.float64)
    buf = np.empty(int(src.shape[0]) * _LINE_MAX, dtype=np.uint8)
    used = _format_arcs(src, dst, prob, buf)
    with open(path, "wb") as fh:
        fh.write(memoryview(buf[:used]))
    return int(src.shape[0])


@njit(cache=True)
def _format_arcs(src, dst, prob, out):
    """Lines ``u v p`` of the arcs into ``out``; returns the bytes written."""
    at = 0
    digits = np.empty(20, dtype=np.uint8)
    for i in range(src.shape[0]):
        at = put_pair(out, at, src[i], dst[i], 32, digits)
        out[at] = 32
        at += 1
        p = prob[i]
        if p == 0.0 or p == 1.0:
            out[at] = 48 if p == 0.0 else 49
            at += 1
        else:  # nine significant digits: q in [1e8, 1e9), p ~ q 10^(e - 8)
            e = int(np.floor(np.log10(p)))
            q = int(np.round(p * 10.0 ** (8 - e)))
            if q >= 1_000_000_000:
                q = int(np.round(p * 10.0 ** (7 - e)))
                e += 1
            elif q < 100_000_000:
                q = int(np.round(p * 10.0 ** (9 - e)))
                e -= 1
            for j in range(8, -1, -1):
                digits[j] = 48 + q % 10
                q //= 10
            out[at] = digits[0]
            out[at + 1] = 46
            for j in range(1, 9):
                out[at + 1 + j] = digits[j]
            at += 10
            out[at] = 101
            out[at + 1] = 45 if e < 0 else 43
            at += 2
            e = abs(e)
            if e >= 10:
                out[at] = 48 + e // 10
                at += 1
            out[at] = 48 + e % 10
            at += 1
        out[at] = 10
        at += 1
    return at


def parse_output(text: str) -> dict:
    """gIM's printed figures, or ``{"failed": why}`` when it did not finish a solve."""
    time_m = re.search(r"^Time: ([0-9.eE+-]+) ms\s*$", text, re.M)
    seeds_m = re.search(r"^List of nodes in the seed set:((?: \d+)*)\s*$", text, re.M)
    if not time_m or not seeds_m:
        low = text.lower()
        why = "out of memory" if ("out of memory" in low or "bad_alloc" in low) else "no timing line"
        return {"failed": why, "tail": text.strip().splitlines()[-TAIL_LINES:]}
    after = text[time_m.end():].strip().splitlines()
    theta_m = re.search(r"^# of required RR sets: (\d+)", text, re.M)
    search = [[int(x), int(c)] for x, c in re.findall(r"^x: (\d+) ,ci: (\d+)", text, re.M)]
    return {"seconds": float(time_m.group(1)) / 1000.0,
            "estimated_spread": float(after[0]) if after else None,
            "theta": int(theta_m.group(1)) if theta_m else None,
            "lower_bound_search": search,
            "seed_ids": [int(x) for x in seeds_m.group(1).split()]}


def run(binary: str, path: Path, k: int, eps: float, model: str, timeout: float) -> dict:
    """One gIM run on ``path``; see the module docstring for the record."""
    cmd = [str(binary), str(path), str(k), str(eps), "1" if model == "IC" else "0"]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return {"failed": f"time limit {timeout:.0f}s", "tail": out.strip().splitlines()[-TAIL_LINES:],
                "wall": time.perf_counter() - t0}
    text = proc.stdout + proc.stderr
    rec = parse_output(text)
    if proc.returncode != 0 and "failed" not in rec:
        rec = {"failed": f"exit {proc.returncode}", "tail": text.strip().splitlines()[-TAIL_LINES:]}
    elif proc.returncode != 0:
        rec["failed"] += f" (exit {proc.returncode})"
    rec["wall"] = time.perf_counter() - t0
    return rec

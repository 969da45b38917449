"""Monte-Carlo runs in batches of about a quarter of a second each.

A long simulation (10,000 runs on a graph of millions of arcs takes minutes on a CPU) is cut into
batches so that the progress bar moves and a Ctrl-C (``KeyboardInterrupt``, which Python delivers
only between two calls into compiled code) is acted on within a batch. The first batch is small;
each next one is scaled by how long the last took (at most 4x larger or smaller), towards
``BATCH_SECONDS``. Batches never change a result: run ``s`` is the same world in any batch.
"""

from __future__ import annotations

import time
from typing import Iterator

#: wall-clock seconds one batch aims at (the bar's refresh period and the reaction time to Ctrl-C)
BATCH_SECONDS = 0.25


def batches(total: int, first: int, step: int = 1, seconds: float = BATCH_SECONDS) -> Iterator[tuple[int, int]]:
    """Consecutive slices ``(lo, hi)`` covering ``range(total)``: ``first`` items, then sizes scaled so that
    one batch takes about ``seconds`` (timed from one ``next`` to the following), multiples of ``step``."""
    step = max(1, int(step))
    size = max(step, int(first) // step * step)
    lo = 0
    while lo < total:
        hi = min(total, lo + size)
        start = time.monotonic()  # pacing only: reported timings go through gpucore.timing.Phases
        yield lo, hi
        elapsed = time.monotonic() - start
        scale = 4.0 if elapsed <= 0 else min(4.0, max(0.25, seconds / elapsed))
        size = max(step, int(size * scale) // step * step)
        lo = hi

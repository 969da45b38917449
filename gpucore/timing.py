"""Wall-clock seconds per named phase of a solve: ``with phases.phase("sampling"): ...``.

Every solver reports ``seconds_by_phase`` in its result; this is the one timer they use, instead
of pairs of ``time.perf_counter()`` calls. GPU work is asynchronous, so a ``Phases`` built with
``sync=backend.synchronize`` waits for the device before it stops a phase's clock: the seconds of a
phase then include the kernels it launched, not only their launch.

    phases = Phases(("sampling", "selection"), sync=backend.synchronize)
    with phases.phase("sampling"):
        ...
    result["seconds_by_phase"] = phases.seconds      # {"sampling": 1.2, "selection": 0.3}

A phase entered several times accumulates. Names given up front appear (as 0.0) even when never
entered, so result files of one solver always have the same keys.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator


class Phases:
    """Accumulated seconds per phase name (insertion order kept)."""

    def __init__(self, names: Iterable[str] = (), sync: Callable[[], None] | None = None):
        self.seconds: dict[str, float] = {str(name): 0.0 for name in names}
        self._sync = sync

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the body; with ``sync``, the device is waited for at both ends."""
        if self._sync is not None:
            self._sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            if self._sync is not None:
                self._sync()
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    @property
    def total(self) -> float:
        """Sum over every phase."""
        return sum(self.seconds.values())

"""The phase timer: accumulation, fixed keys, device waits at both ends, exceptions still timed."""

import time

import pytest

from gpucore.timing import Phases


def test_phases_accumulate_and_keep_declared_keys():
    phases = Phases(("a", "b", "c"))
    with phases.phase("a"):
        time.sleep(0.02)
    with phases.phase("a"):
        time.sleep(0.02)
    with phases.phase("b"):
        pass
    assert list(phases.seconds) == ["a", "b", "c"]
    assert phases.seconds["a"] >= 0.04
    assert phases.seconds["c"] == 0.0
    assert phases.total == pytest.approx(sum(phases.seconds.values()))


def test_sync_is_called_before_and_after_and_an_exception_is_still_timed():
    calls = []
    phases = Phases(sync=lambda: calls.append(time.perf_counter()))
    with pytest.raises(ValueError):
        with phases.phase("x"):
            time.sleep(0.01)
            raise ValueError("boom")
    assert len(calls) == 2
    assert phases.seconds["x"] >= 0.01

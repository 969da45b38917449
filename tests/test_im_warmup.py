"""The warm-up runs every kernel and device-array operation the IMM phases run (``Engine.warm_up``).

A fresh process pays the first use of each kernel (loading a RawModule function, compiling or loading
each of CuPy's own sort, scan and reduction kernels per dtype and shape) where it first happens; the
warm-up is there so that it happens before the timed phases. Without a GPU this is observed on the
emulated CUDA engines: every RawModule kernel launch is recorded by name, and every operation on a
device array (the backend's arrays are a recording subclass of ``numpy.ndarray``: NumPy functions,
ufuncs and copies into slices, with their dtypes, the dimensions CuPy's kernels see (one element:
none; a contiguous run: one) and ``dtype``/``axis`` arguments, the calls CuPy turns into kernels) is
recorded with the stage it ran in. The phases must add nothing to what the warm-up and
the probe ran. (Array sizes are not recorded: where a CUDA library picks kernels by size, as CUB's
radix sort does beyond one tile, the warm-up uses a phase-sized array: the fused sampler's sort.)
"""

from __future__ import annotations

import numpy as np
import pytest

import gpucore.im.driver as driver
from gpucore.backend import Backend
from gpucore.im import imm
from gpucore.im.emulated import available, emulated_engine
from gpucore.im.engine import SAMPLERS, Engine
from gpucore.kernels import emulator
from tests.im_graphs import dense_graph, hubs_graph, wc_graph

pytestmark = pytest.mark.skipif(not available(), reason="g++ not available")


class Recorder:
    """What ran in which stage: 'prepare' (engine set-up, warm-up, probe) until the first phase, then 'phases'."""

    def __init__(self):
        self.stage = "prepare"
        self.seen = {"prepare": set(), "phases": set()}

    def note(self, item) -> None:
        self.seen[self.stage].add(item)

    def added_by_phases(self) -> set:
        return self.seen["phases"] - self.seen["prepare"]


def _signature(values) -> tuple:
    out = []
    for v in values:
        if isinstance(v, np.ndarray):
            out.append((v.dtype.str, v.ndim, v.size == 1))  # CuPy may treat one element apart (below)
        elif isinstance(v, (list, tuple)):
            out.append(("seq", _signature(v)))
        else:
            out.append(type(v).__name__)
    return tuple(out)


def _kernel_dims(a) -> int:
    """The dimensions CuPy's elementwise kernels index ``a`` with (size-1 axes and contiguous runs merged)."""
    return 0 if a.size == 1 else (1 if a.flags.c_contiguous else a.ndim)


def _plain(v):
    return v.view(np.ndarray) if isinstance(v, RecordingArray) else v


class RecordingArray(np.ndarray):
    """A device array of the recording backend: NumPy functions and ufuncs on it are noted."""

    recorder: Recorder | None = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if RecordingArray.recorder is not None:
            RecordingArray.recorder.note(("ufunc", ufunc.__name__, method, _signature(inputs),
                                          str(kwargs.get("dtype")), str(kwargs.get("axis"))))
        inputs = tuple(_plain(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(x) for x in kwargs["out"])
        result = getattr(ufunc, method)(*inputs, **kwargs)
        return result.view(RecordingArray) if isinstance(result, np.ndarray) and result.ndim else result

    def __setitem__(self, key, value):
        # CuPy copies into a slice with an elementwise kernel compiled per dtype and per reduced dimension
        # count: a contiguous run is one dimension, one element none; an empty copy launches nothing
        target = self.view(np.ndarray)[key]
        if RecordingArray.recorder is not None and np.size(target):
            RecordingArray.recorder.note(("setitem", self.dtype.str, _kernel_dims(target), _signature([value])))
        super().__setitem__(key, _plain(value))

    def __array_function__(self, func, types, args, kwargs):
        if RecordingArray.recorder is not None:
            RecordingArray.recorder.note(("function", func.__name__, _signature(args), str(kwargs.get("dtype")),
                                          str(kwargs.get("axis"))))
        return super().__array_function__(func, types, args, kwargs)


class RecordingBackend(Backend):
    """The cpu backend whose arrays are ``RecordingArray`` views (the emulated engines' device arrays)."""

    def asarray(self, array, dtype=None, what: str = "array"):
        return np.array(array, dtype=dtype, copy=True).view(RecordingArray)

    def empty(self, shape, dtype, what: str = "array"):
        return np.empty(shape, dtype=dtype).view(RecordingArray)

    def zeros(self, shape, dtype, what: str = "array"):
        return np.zeros(shape, dtype=dtype).view(RecordingArray)


class RecordingLibrary:
    """An emulator library whose kernels note their launches."""

    def __init__(self, library, recorder):
        self.library, self.recorder = library, recorder

    def get_function(self, name):
        kernel = self.library.get_function(name)

        def launch(grid, block, args, shared_mem=0):
            self.recorder.note(("kernel", name))
            return kernel(grid, block, args, shared_mem)

        return launch


@pytest.fixture
def recorder(monkeypatch):
    rec = Recorder()
    load = emulator.load_module
    monkeypatch.setattr(emulator, "load_module", lambda name, defines=(): RecordingLibrary(load(name, defines), rec))
    monkeypatch.setattr(RecordingArray, "recorder", rec)

    class StagedPhases(driver.Phases):
        def phase(self, name):
            if name in driver.PHASES:  # not the clock of the whole run and of its warm-up
                rec.stage = "phases"
            return super().phase(name)

    monkeypatch.setattr(driver, "Phases", StagedPhases)
    return rec


def check(rec: Recorder) -> None:
    assert any(item[0] == "kernel" for item in rec.seen["phases"])  # the recording works
    assert not rec.added_by_phases(), sorted(rec.added_by_phases())


@pytest.mark.parametrize("model,rounds,graph", [("IC", 1, "hubs"), ("LT", 1, "wc"), ("IC", 2, "wc")])
def test_gim_engine_phases_use_nothing_the_warm_up_did_not(recorder, monkeypatch, model, rounds, graph):
    g = hubs_graph(leaves=120) if graph == "hubs" else wc_graph(120, 4, seed=6)
    be = RecordingBackend("cpu", np)
    monkeypatch.setattr(driver, "make_engine", lambda graph, m, r, s, b, *a, **kw: emulated_engine(graph, m, r, s,
                                                                                                   backend=b))
    imm(g, 3, 0.6, model, rounds=rounds, seed=9, backend=be, sampler="gim")
    check(recorder)
    kernels = {item[1] for item in recorder.seen["prepare"] if item[0] == "kernel"}
    assert {"im_sample", "im_compact", "im_count", "im_index", "im_argmax", "im_take", "im_hits"} <= kernels


@pytest.mark.parametrize("model", ["IC", "LT"])
def test_fused_engine_phases_use_nothing_the_warm_up_did_not(recorder, monkeypatch, model):
    monkeypatch.setitem(SAMPLERS, "fused-emulated", ("gpucore.im.fused.emulated", "emulated_fused_sampler"))
    be = RecordingBackend("cpu", np)
    imm(hubs_graph(leaves=120), 3, 0.6, model, seed=4, backend=be, sampler="fused-emulated",
        sampler_options={"batch_width": 64, "max_batches": 2, "levels_per_sync": 2})
    check(recorder)
    kernels = {item[1] for item in recorder.seen["prepare"] if item[0] == "kernel"}
    assert {"fz_keys", "fz_decide", "fz_extract", "fz_rescan", "im_compact", f"fz_expand_{model.lower()}",
            f"fz_resident_{model.lower()}"} <= kernels


@pytest.mark.parametrize("graph,picked", [("wc", "gim"), ("dense", "fused")])
def test_auto_engine_phases_use_nothing_the_warm_up_did_not(recorder, monkeypatch, graph, picked):
    """Under --sampler auto the picked engine is warmed up (the fused one after the gim one probed; the GPU's
    rule, the cpu backend added to its backends)."""
    import gpucore.im.auto as auto_mod

    monkeypatch.setattr(auto_mod, "AUTO_BACKENDS", ("cuda", "cpu"))
    monkeypatch.setitem(SAMPLERS, "fused-emulated", ("gpucore.im.fused.emulated", "emulated_fused_sampler"))
    real = driver.make_engine

    def emulated(graph, m, r, s, b, sampler="gim", **kw):
        if sampler == "gim":
            return emulated_engine(graph, m, r, s, backend=b)
        return real(graph, m, r, s, b, "fused-emulated", max_batches=2, **kw)

    monkeypatch.setattr(driver, "make_engine", emulated)
    g = wc_graph(120, 4, seed=6) if graph == "wc" else dense_graph(100)
    res = imm(g, 3, 0.6, "IC", seed=9, backend=RecordingBackend("cpu", np))
    assert res["sampler"] == picked
    check(recorder)


def test_the_recording_sees_a_missing_warm_up(recorder, monkeypatch):
    """Negative control: with a warm-up that only samples, the phases' greedy and bound show up as new."""
    be = RecordingBackend("cpu", np)
    monkeypatch.setattr(driver, "make_engine", lambda graph, m, r, s, b, *a, **kw: emulated_engine(graph, m, r, s,
                                                                                                   backend=b))
    monkeypatch.setattr(driver, "probe", _sampling_only)
    monkeypatch.setattr(Engine, "warm_up", lambda self, k=1, sets=64: None)
    imm(wc_graph(120, 4, seed=6), 3, 0.6, "IC", seed=9, backend=be, sampler="gim")
    added = recorder.added_by_phases()
    assert ("kernel", "im_greedy_block") in added and ("kernel", "im_index") in added
    assert any(item[:2] == ("function", "sort") for item in added)


def _sampling_only(engine):
    from gpucore.im.auto import Probe

    coll = engine.collection(0)
    engine.sample_into(coll, 16, 0.0)
    return Probe(coll, coll.count, coll.total, engine.rounds)

"""``--sampler auto``: a probe of throw-away RR sets picks the gim or the fused sampler for the run.

The two samplers draw the same set for the same key (``docs/fuseim.md``), so the choice changes time,
never an answer. What decides is the size of a traversal (an RR set of T rounds is T traversals), on the
mean and on the share of large ones: the fused sampler shares each adjacency-row read among the traversals
of a batch that reach the vertex, which pays when traversals are large and overlap, and costs its level-synchronous
steps and mask extraction when they are tiny. Measured on one H100 (``results/reference/fuseim``,
``benchmarks/bench_fuseim.py``, the same sets for both samplers): fused at width 256 was 3.9x faster
at a mean of 235 elements (web-Google size, p = 0.1), 9.7x to 58x for larger sets, 1.0x (width 64-128)
at 1.4 and 0.2x (5x slower) at 6.3 (weighted cascade). Interpolating the speedup log-linearly in the
mean size between 6.3 and 235 puts the break-even near 44; ``AUTO_MIN_MEAN`` = 64 keeps a margin, so
auto never picks the fused sampler where the measurements say it loses. (The fused sampler's resident
mapping later brought the tiny-set cells to 0.9-1.04x in calls of 20,000 sets, but 0.46-0.52x in calls
of 200,000 on the web-Google- and web-BerkStan-size graphs: the threshold stays.) Width 256 was the fastest
width at every mean size where fused won.

The mean alone decides. At p = 0.05 to 0.2 on those PA graphs a minority of traversals reach the giant
component and hold tens of thousands of elements while the rest hold one or two, so the mean is large and
the median 1 or 2. Where that minority was small (2 %), calls of 200,000 sets once ran 0.18-0.55x of gim, and
auto then also asked that 4 % of the probe's traversals be large. The fused sampler now evicts such long-running
traversals from its batches and runs them in its team pass, a block per traversal (``docs/fuseim.md``,
"Eviction"); the same calls run 3.1-4.0x faster than gim on one H200 (``results/reference/fuseim``), so the
second condition is gone.

The probe: sets j = 0, 1, ... (the first keys of the lower-bound search, drawn once more and thrown
away) with the gim sampler, 16, 16, 32, then ``PROBE_STEP`` at a time, up to ``PROBE_SETS``; the fused sampler is
chosen when the mean elements per traversal of the ``PROBE_SETS`` sets reach ``AUTO_MIN_MEAN``. The probe stops as
soon as that is certain (the elements drawn already reach ``AUTO_MIN_MEAN`` x T x ``PROBE_SETS``), so large sets
cost a few steps; the choice is the same as with the whole probe.
Keys are the same on every rank of a distributed run, hence so is the choice.

Only where the fused sampler was measured to win does the rule send runs to it: IC runs on a GPU
(``AUTO_MODELS``, ``AUTO_BACKENDS``). An LT traversal is a walk (one live in-arc per step, found by a
binary search of the row's prefix sums), so a batch shares little reading while its walks pay one
level-synchronous step per step, and no LT run was measured. On the CPU the fused sampler (Numba) took
about twice the gim sampler's solve time in ``benchmarks/bench_im.py`` (soc-Epinions1 at p = 0.02
and 0.05, mean sets of 74 and 696 elements, k = 10, eps = 0.5, 2 cores). There auto runs gim, and its
choice carries a ``note`` when the probe's mean reached the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: mean elements per traversal from which auto picks the fused sampler
AUTO_MIN_MEAN = 64.0
#: the models and backends whose runs auto may give the fused sampler (where it was measured to win)
AUTO_MODELS = ("IC",)
AUTO_BACKENDS = ("cuda",)
#: the fused sampler's batch width under auto
AUTO_WIDTH = 256
#: sets of the probe, and sets per step of it
PROBE_SETS = 512
PROBE_STEP = 64


@dataclass
class Probe:
    """The probe's collection (kept for the memory projection) and what it saw."""

    coll: object
    sets: int
    elements: int
    rounds: int

    @property
    def mean_size(self) -> float:
        """Mean elements per RR set."""
        return self.elements / self.sets

    @property
    def traversal_mean(self) -> float:
        """Mean elements per traversal (per round of a set)."""
        return self.mean_size / self.rounds


def probe(engine, sets: int = PROBE_SETS, step: int = PROBE_STEP, threshold: float = AUTO_MIN_MEAN) -> Probe:
    """Draw sets j = 0, 1, ... with ``engine`` until ``sets`` are drawn, or until their elements already reach
    ``threshold`` x rounds x ``sets`` (module docstring; ``threshold`` = inf draws them all)."""
    coll = engine.collection(0)
    certain = threshold * engine.rounds * sets
    while coll.count < sets and coll.total < certain:
        engine.sample_into(coll, min(step, sets - coll.count, max(16, coll.count)), coll.mean_size)
    engine.synchronize()
    return Probe(coll, int(coll.count), int(coll.total), int(engine.rounds))


@dataclass
class SamplerChoice:
    """Which sampler a run uses and why (the result's ``sampler``, ``sampler_options``, ``sampler_choice``)."""

    mode: str  # "auto", or "given" (--sampler named one)
    sampler: str
    options: dict = field(default_factory=dict)
    probe_sets: int = 0
    probe_mean_size: float = 0.0  # elements per RR set
    probe_traversal_mean: float = 0.0  # elements per traversal: what the rule compares
    threshold: float = AUTO_MIN_MEAN
    note: str = ""  # why gim runs although the probe's mean reached the threshold (model, backend, no masks fit)

    def to_dict(self) -> dict:
        if self.mode != "auto":
            return {"mode": self.mode}
        out = {"mode": "auto", "probe_sets": self.probe_sets, "probe_mean_size": self.probe_mean_size,
               "probe_traversal_mean": self.probe_traversal_mean, "threshold": self.threshold}
        if self.note:
            out["note"] = self.note
        return out


def choose(seen: Probe, model: str, backend: str, threshold: float = AUTO_MIN_MEAN) -> SamplerChoice:
    """The auto rule on a probe: for a ``model`` of ``AUTO_MODELS`` on a ``backend`` (its name) of
    ``AUTO_BACKENDS``, fused at ``AUTO_WIDTH`` from ``threshold`` elements per traversal on the mean, else gim
    (with a note where only the model or the backend ruled fused out)."""
    large = seen.traversal_mean >= threshold
    fused = large and model in AUTO_MODELS and backend in AUTO_BACKENDS
    note = ""
    if large and not fused:
        note = (f"{model}: the fused sampler is not measured on {model} traversals" if model not in AUTO_MODELS
                else f"{backend}: the fused sampler is not faster than gim on the {backend} backend")
    return SamplerChoice("auto", "fused" if fused else "gim", {"batch_width": AUTO_WIDTH} if fused else {},
                         seen.sets, seen.mean_size, seen.traversal_mean, threshold, note)

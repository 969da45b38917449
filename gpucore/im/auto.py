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

The mean is not enough. At p = 0.05 to 0.2 on those PA graphs a minority of traversals reach the giant
component and hold tens of thousands of elements while the rest hold one or two, so the mean is large and
the median 1 or 2. Where that minority is small, calls of 200,000 sets ran 0.55x (web-Google size, p = 0.1,
2.1 % of the traversals at 64 elements or more) and 0.25x (web-BerkStan size, p = 0.05, 1.6 %) of gim at
the best width (30691b2, ``results/reference/fuseim/bench_fuseim-h100-large-calls-p-30691b2.md``): a batch
that holds a giant traversal walks its whole visited-word list at every extraction of its short ones, and
those come every level or two. (Calls of 20,000 sets had shown 1.4x-3.5x there: gim's time was then its
longest sets', not its throughput.) Where it is large, fused won: 11.3x (web-Google size, p = 0.2, 21.7 %),
4.7x (web-BerkStan size, p = 0.1, 19.9 %), and in earlier records 5.4x (soc-Pokec size, p = 0.05, 13.3 %) and
3.9x (wiki-topcats size, p = 0.05, 8.0 %; the fractions from 300 to 512 sets of each graph drawn on the CPU).
The giant traversals share their reads only with each other, and a width-256 batch held about 5 of them at
2 % and 20 at 8 %. So auto also asks that at least ``AUTO_MIN_LARGE`` = 4 % of the probe's traversals hold
``AUTO_MIN_MEAN`` elements or more (a factor of about 2 from 2.1 % and from 8 %). Few points decide it: one
H100, four graphs, and the winning cells were calls of at most 3,300 sets (the elements of larger calls do
not fit).

The probe: sets j = 0, 1, ... (the first keys of the lower-bound search, drawn once more and thrown
away) with the gim sampler, 16, 16, 32, then ``PROBE_STEP`` at a time, up to ``PROBE_SETS``; the fused sampler is
chosen when the mean elements per traversal of the ``PROBE_SETS`` sets reach ``AUTO_MIN_MEAN`` and at least
``AUTO_MIN_LARGE`` of them (a set counts by its elements divided by T) reach it too. The probe stops as soon as
both are certain (the elements drawn already reach ``AUTO_MIN_MEAN`` x T x ``PROBE_SETS`` and the large sets
drawn ``AUTO_MIN_LARGE`` x ``PROBE_SETS``), so large sets cost a few steps; the choice is the same as with the
whole probe.
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

import numpy as np

#: mean elements per traversal from which auto picks the fused sampler
AUTO_MIN_MEAN = 64.0
#: fraction of the probe's traversals that must hold AUTO_MIN_MEAN elements or more, too
AUTO_MIN_LARGE = 0.04
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
    large: int = 0  # sets of at least AUTO_MIN_MEAN x rounds elements

    @property
    def large_fraction(self) -> float:
        """Fraction of the sets that hold at least ``AUTO_MIN_MEAN`` elements per traversal."""
        return self.large / self.sets if self.sets else 0.0

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
    ``threshold`` x rounds x ``sets`` and ``AUTO_MIN_LARGE`` x ``sets`` of them hold ``AUTO_MIN_MEAN`` x rounds
    elements or more (module docstring; ``threshold`` = inf draws them all)."""
    coll = engine.collection(0)
    certain, big = threshold * engine.rounds * sets, AUTO_MIN_MEAN * engine.rounds
    large = 0
    while coll.count < sets and (coll.total < certain or large < AUTO_MIN_LARGE * sets):
        first = coll.count
        engine.sample_into(coll, min(step, sets - coll.count, max(16, coll.count)), coll.mean_size)
        large += int(np.count_nonzero(np.diff(coll.backend.to_host(coll.offsets[first:])) >= big))
    engine.synchronize()
    return Probe(coll, int(coll.count), int(coll.total), int(engine.rounds), large)


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
    probe_large_fraction: float = 0.0  # share of sets of AUTO_MIN_MEAN elements per traversal or more: compared too
    note: str = ""  # why gim runs although the probe met both conditions (model, backend, no masks fit)

    def to_dict(self) -> dict:
        if self.mode != "auto":
            return {"mode": self.mode}
        out = {"mode": "auto", "probe_sets": self.probe_sets, "probe_mean_size": self.probe_mean_size,
               "probe_traversal_mean": self.probe_traversal_mean, "threshold": self.threshold,
               "probe_large_fraction": self.probe_large_fraction, "min_large_fraction": AUTO_MIN_LARGE}
        if self.note:
            out["note"] = self.note
        return out


def choose(seen: Probe, model: str, backend: str, threshold: float = AUTO_MIN_MEAN) -> SamplerChoice:
    """The auto rule on a probe: for a ``model`` of ``AUTO_MODELS`` on a ``backend`` (its name) of
    ``AUTO_BACKENDS``, fused at ``AUTO_WIDTH`` from ``threshold`` elements per traversal on the mean and on at
    least ``AUTO_MIN_LARGE`` of the sets, else gim (with a note where only the model or the backend ruled fused
    out)."""
    large = seen.traversal_mean >= threshold and seen.large_fraction >= AUTO_MIN_LARGE
    fused = large and model in AUTO_MODELS and backend in AUTO_BACKENDS
    note = ""
    if large and not fused:
        note = (f"{model}: the fused sampler is not measured on {model} traversals" if model not in AUTO_MODELS
                else f"{backend}: the fused sampler is not faster than gim on the {backend} backend")
    return SamplerChoice("auto", "fused" if fused else "gim", {"batch_width": AUTO_WIDTH} if fused else {},
                         seen.sets, seen.mean_size, seen.traversal_mean, threshold, seen.large_fraction, note)

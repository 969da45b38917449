"""Paired measurement of MERIT's two ways through a round: Update against regeneration on the same
collection state (issue 13; ``run_amcss(..., paired=True)``, ``benchmarks/bench_merit_gpu.py
--parts paired``, ``benchmarks/bench_amcss.py --paired``).

Before each round after the first, the collection and its coverage counters are copied
(``Primitives.snapshot``); the way MERIT's rule did *not* choose is run from that copy (its
collection steps only: trim + Update or clear, Generate while the batch fails the acceptance
test, Select), timed, and the copy is restored (``Primitives.restore``); then the chosen way runs
as in an unpaired run. So both ways start from the same round, the same residual graph, the same
activated set and the same sets, and the trajectory is exactly the unpaired run's (tested).

Each paired round's record gains ``paired``::

    {"chosen": "update" | "regenerate",
     "update":     {"seconds", "update", "generate", "select", "discover_before", "theta", "trials",
                    "coverage", "seeds", "entries", "entries_clean", "arcs"},
     "regenerate": {"seconds", "update", "generate", "select", "theta", "trials", "coverage", "seeds",
                    "entries", "arcs"}}

``seconds`` is the way's cost of the round: its collection steps, plus for Update the Discover(A)
that ended the previous round (a regenerating run does not need it); ``entries`` the collection's
entries when the batch was accepted, ``entries_clean`` those an Update copied instead of probing;
``arcs`` the in-arcs probed (CUDA backend; None on the CPU). ``summarize`` totals a realization.
"""

from __future__ import annotations

import math
import statistics

from gpucore.amcss.primitives import Primitives
from gpucore.timing import Phases

#: the phases of a way through a round (its collection steps)
WAY_PHASES = ("update", "generate", "select")


def arcs_probed(prims: Primitives) -> int | None:
    """In-arcs probed so far by Generate + Update, where the backend counts them (CUDA)."""
    counter = getattr(prims, "arcs_probed", None)
    if counter is None:
        return None
    arcs = counter()
    return int(arcs["generate"] + arcs["update"])


def way_record(prims: Primitives, phases: Phases, stats: dict | None, trials: int, coverage: int, seeds,
               arcs_before: int | None) -> dict:
    """What one way through a round cost and gave, from its phases (``WAY_PHASES``)."""
    seconds = {name: float(phases.seconds.get(name, 0.0)) for name in WAY_PHASES}
    arcs = arcs_probed(prims)
    return {**seconds, "seconds": sum(seconds.values()), "theta": int(prims.theta), "trials": int(trials),
            "coverage": int(coverage), "seeds": [int(x) for x in seeds], "entries": int(prims.coll.entries),
            "entries_clean": int(stats["entries_clean"]) if stats else 0,
            "arcs": None if arcs is None or arcs_before is None else arcs - arcs_before}


def paired_record(chosen: dict, other: dict, regenerated: bool, discover_before: float) -> dict:
    """The round's ``paired`` entry from its two ways (the chosen one measured in the run itself)."""
    update, regen = (other, chosen) if regenerated else (chosen, other)
    update = {**update, "discover_before": float(discover_before)}
    update["seconds"] += update["discover_before"]
    return {"chosen": "regenerate" if regenerated else "update", "update": update, "regenerate": regen}


def reprobe_fraction(pollution: float, k_prev: float, k: float) -> float:
    """The share of a regeneration's probing that an Update of the same sets still does
    (docs/amcss.md, "What an Update can save"): a polluted set (fraction ``pollution`` of the
    collection) is rebuilt in full, a clean one keeps its entries and probes only what its new roots
    add, about a share 1 - k_{i-1}/k_i of its new size (sets grow about linearly with their roots)."""
    r = min(1.0, k_prev / k) if k > 0 else 1.0
    return pollution + (1.0 - pollution) * (1.0 - r)


def pollution_model(entries_per_set: float, activated: int, n_residual: int) -> float:
    """The fraction of sets that ``activated`` newly active users pollute (docs/amcss.md, "What an
    Update can save"): if they were typical members, a set of e entries out of n residual users
    would miss all of them with probability about (1 - activated / n)^e ~ exp(-e activated / n).
    A set holds about k times the entries of a one-root set, so pollution grows with the roots per
    set: 1 - exp(-e1 activated / eta_i) for e1 entries per root (k = n / eta_i)."""
    return 1.0 - math.exp(-entries_per_set * activated / n_residual) if n_residual > 0 else 1.0


def pollution_check(rounds: list[dict]) -> list[tuple[float, float]]:
    """(recorded, modelled) pollution of each round that a next round updated: the recorded
    ``pollution`` against ``pollution_model`` with the round's mean set size (the next Update's
    ``entries_before / sets``: the sets as the round left them), its ``newly_active`` and
    ``n_residual``."""
    out = []
    for rd, nxt in zip(rounds, rounds[1:]):
        upd = nxt.get("update")
        if upd and upd["sets"] and rd.get("pollution") is not None:
            out.append((rd["pollution"], pollution_model(upd["entries_before"] / upd["sets"], rd["newly_active"],
                                                         rd["n_residual"])))
    return out


def cost_fit(pairs: list[dict]) -> dict:
    """Unit costs of building sets, fitted by least squares (no intercept) over ``paired`` records
    (docs/amcss.md, "What an Update can save": the cost of a kept entry):

    - regeneration: build seconds (``generate`` + ``update``) = ``arc`` x arcs probed;
    - Update: build seconds = ``update_arc`` x arcs probed + ``kept`` x entries kept (``entries_clean``:
      copied, marked in the block's bitmap, unmarked at the end).

    Also ``arcs_per_entry`` of the regenerated collections and ``kept_vs_probed``, the cost of keeping
    an entry against probing one (``kept / (arc x arcs_per_entry)``): the Update of a collection whose
    probed share is f costs at least f + (1 - f) ``kept_vs_probed`` of a regeneration (``update_bound``).
    Only records with ``arcs`` (the CUDA backend counts them)."""
    import numpy as np

    rows = [(p["update"], p["regenerate"]) for p in pairs
            if p["update"].get("arcs") is not None and p["regenerate"].get("arcs") is not None]
    if len(rows) < 2:
        return {"rounds": len(rows)}
    upd = np.array([(u["update"] + u["generate"], u["arcs"], u["entries_clean"]) for u, _g in rows], dtype=float)
    reg = np.array([(g["update"] + g["generate"], g["arcs"], g["entries"]) for _u, g in rows], dtype=float)
    arc = float(np.linalg.lstsq(reg[:, [1]], reg[:, 0], rcond=None)[0][0])
    update_arc, kept = (float(x) for x in np.linalg.lstsq(upd[:, 1:], upd[:, 0], rcond=None)[0])
    per_entry = float(reg[:, 1].sum() / reg[:, 2].sum())
    return {"rounds": len(rows), "arc": arc, "update_arc": update_arc, "kept": kept, "arcs_per_entry": per_entry,
            "kept_vs_probed": kept / (arc * per_entry)}


def update_bound(probed_share: float, kept_vs_probed: float) -> float:
    """The most an Update can gain over regenerating as many sets (regeneration seconds / Update
    seconds) when it probes a share ``probed_share`` of the entries and keeps the rest at
    ``kept_vs_probed`` the cost of probing one (``cost_fit``), selection and trials left out."""
    f = min(1.0, max(0.0, float(probed_share)))
    return 1.0 / (f + (1.0 - f) * float(kept_vs_probed))


def summarize(rounds: list[dict]) -> dict:
    """Totals of a realization's paired rounds: rounds updated / regenerated by MERIT's rule, seconds
    of each way summed over the paired rounds, MERIT's choice and the faster way per round, the
    per-round ratio regeneration / Update (median, min, max), and per round the share of the
    updated collection's entries that were probed (measured: 1 - entries copied / entries;
    predicted: ``reprobe_fraction`` from the pollution the last round left) and the size
    of the updated collection against the regenerated one (entries): their product is the
    Update's probing against the regeneration's."""
    paired = [(prev, rd) for prev, rd in zip(rounds, rounds[1:]) if "paired" in rd]
    if not paired:
        return {"rounds": 0}
    ups = [rd["paired"]["update"]["seconds"] for _p, rd in paired]
    regens = [rd["paired"]["regenerate"]["seconds"] for _p, rd in paired]
    chosen = [u if rd["paired"]["chosen"] == "update" else g for (_p, rd), u, g in zip(paired, ups, regens)]
    ratios = [g / u for u, g in zip(ups, regens) if u > 0]
    measured, predicted, size = [], [], []
    for prev, rd in paired:
        upd, regen = rd["paired"]["update"], rd["paired"]["regenerate"]
        if upd["entries"] > 0 and regen["entries"] > 0 and prev.get("pollution") is not None:
            measured.append(1.0 - upd["entries_clean"] / upd["entries"])
            predicted.append(reprobe_fraction(prev["pollution"], prev["k"], rd["k"]))
            size.append(upd["entries"] / regen["entries"])
    return {
        "rounds": len(paired),
        "updated": sum(rd["paired"]["chosen"] == "update" for _p, rd in paired),
        "regenerated": sum(rd["paired"]["chosen"] == "regenerate" for _p, rd in paired),
        "update_seconds": sum(ups),
        "regenerate_seconds": sum(regens),
        "chosen_seconds": sum(chosen),
        "best_seconds": sum(min(u, g) for u, g in zip(ups, regens)),
        "update_faster": sum(u < g for u, g in zip(ups, regens)),
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_min": min(ratios) if ratios else None,
        "ratio_max": max(ratios) if ratios else None,
        "probed_share_measured": measured,
        "probed_share_predicted": predicted,
        "size_ratio": size,
    }

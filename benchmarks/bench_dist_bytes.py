#!/usr/bin/env python3
"""What the distributed greedy's pick exchange costs in bytes, three ways, measured in one process on the CPU.

    python3 benchmarks/bench_dist_bytes.py OUT [--cases im200k,mrim50k] [--cache DIR]

A rank's payload per greedy of k * T picks over a universe of U = n * T elements (int32 counts):

- dense: the whole count vector all-reduced at every pick: 4 U bytes per pick;
- sparse decrements: after the first (dense) pick, each rank sends the elements of the sets it
  newly covered, 4 bytes each (an all-gather of variable length): the sum of the covered sets' sizes;
- certified candidates (``gpucore.dist.greedy_max_cover``, c candidates): 4c bytes per pick, plus
  4 U bytes at every refresh (the first pick, and each pick whose best candidate the bounds cannot
  certify).

Which picks refresh depends on the global counts alone, never on how the sets are split, so one
process running ``greedy_max_cover`` on a ``SingleComm`` counts exactly the refreshes of any rank
count; the sparse volume is read from the counts' drop at each pick. Cases: ``im200k``: a
preferential-attachment graph of 200,000 nodes and 3,000,000 arcs (weighted cascade), IC, theta =
400,000, k = 50; ``mrim50k``: 50,000 / 750,000, MRIM with T = 4, theta = 200,000, k = 10 per round.
Writes OUT/bench_dist_bytes.json and .md (a few minutes on two cores).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_common import GRAPH_CACHE, build_graph, cpu_facts, git_commit  # noqa: E402

#: name -> (nodes, arcs, theta, k, rounds)
CASES = {"im200k": (200_000, 3_000_000, 400_000, 50, 1), "mrim50k": (50_000, 750_000, 200_000, 10, 4)}
CANDIDATES = (0, 16, 64, 256, 1024, 4096)


class Probe:
    """A ``LocalCover`` over an IM selection that records each pick's drop of the counts."""

    def __init__(self, selection):
        self.selection = selection
        self.dropped = []  # per pick: sum of the drops (the covered sets' sizes)

    def counts(self):
        return self.selection.counts

    def cover(self, element: int) -> int:
        before = self.selection.counts.copy()
        newly = self.selection.cover(element)
        self.dropped.append(int((before - self.selection.counts).sum()))
        return newly


def measure(name: str, cache: Path) -> dict:
    from gpucore.backend import get_backend
    from gpucore.dist import SingleComm, greedy_max_cover
    from gpucore.graph import load_graph
    from gpucore.im.driver import close_full_round
    from gpucore.im.engine import make_engine

    nodes, arcs, theta, k, rounds = CASES[name]
    graph = load_graph(build_graph(f"pa{nodes}", {"nodes": nodes, "edges": arcs}, None, cache))
    engine = make_engine(graph, "IC", rounds, 0, get_backend("cpu"))
    coll = engine.collection(0)
    while coll.count < theta:
        engine.sample_into(coll, min(200_000, theta - coll.count), coll.mean_size)
    universe, picks = graph.n * rounds, k * rounds
    block = close_full_round(graph.n, k) if rounds > 1 else None
    out = {"case": name, "n": graph.n, "m": graph.m, "rounds": rounds, "k": k, "theta": theta, "picks": picks,
           "elements": int(coll.total), "schemes": {}}
    answer = None
    for c in CANDIDATES:
        probe = Probe(engine.start(coll, k))
        res = greedy_max_cover(probe, picks, coll.count, SingleComm(), block=block, candidates=c)
        answer = answer or (res.chosen, res.gains)
        if (res.chosen, res.gains) != answer:
            raise RuntimeError(f"{name}: candidates {c} changed the picks")
        label = "dense" if c == 0 else f"candidates {c}"
        out["schemes"][label] = {"refreshes": res.refreshes,
                                 "bytes": 4 * universe * res.refreshes + (4 * c * (picks - 1) if c else 0)}
        if c == 0:
            out["covered_fraction"] = res.covered / theta
            out["schemes"]["sparse decrements"] = {"refreshes": 1, "first_pick_entries": probe.dropped[0],
                                                   "bytes": 4 * universe + 4 * sum(probe.dropped[:-1])}
    return out


def markdown(rep: dict) -> str:
    lines = ["# Bytes per greedy of the distributed pick exchange (one rank's payload)", "",
             f"- date: {rep['date']}; commit: {rep['commit']}; {rep['host']['cpu_model']}", "",
             "| case | n | T | picks | theta | covered | scheme | dense all-reduces | bytes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for case in rep["cases"]:
        for label, s in case["schemes"].items():
            lines.append(f"| {case['case']} | {case['n']:,} | {case['rounds']} | {case['picks']} | {case['theta']:,} | "
                         f"{case['covered_fraction']:.1%} | {label} | {s['refreshes']} | {s['bytes']:,} |")
    return "\n".join(lines + [""])


def main(argv=None) -> int:
    from gpucore.atomic import atomic_path, write_json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--cache", default=GRAPH_CACHE)
    args = p.parse_args(argv)
    out = Path(args.out)
    t = time.time()
    rep = {"benchmark": "bench_dist_bytes", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "commit": git_commit(), "host": cpu_facts(),
           "cases": [measure(name.strip(), Path(args.cache)) for name in args.cases.split(",") if name.strip()]}
    rep["total_seconds"] = time.time() - t
    write_json(out / "bench_dist_bytes.json", rep)
    with atomic_path(out / "bench_dist_bytes.md") as tmp:
        tmp.write_text(markdown(rep))
    print(markdown(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Structural diversity search over several ranks: the one-process answer for 1, 2 and 3 ranks under
every stealing policy (issue 17, item 5).

One process: the work-stealing table (each policy, every item claimed once, the thief's half, the
victim and thief both robbable again, work in flight never stolen, the live cut), the service
without ranks, the cost model (the keyed sample, the non-negative fit), the search table's tau, the
edge supports split by slot tiles (CPU and the CUDA kernel in the emulator), and the distributed
search on one rank.

Real ranks (``mpiexec -n 1/2/3`` on the CPU, MPICH from the ``test`` extra; skipped with the reason
where mpiexec or mpi4py is missing): this file is also the rank program (``_CASES`` at the bottom).
Every rank count runs the three models under the three policies on small graphs, with chunks of one
vertex (many claims, many steals) and with the default chunks; the top t with scores and contexts,
the t-th score and its ties must equal the one-process answer; so must the CUDA engine's code on
two ranks, its kernels run by the emulator. On a graph built so that static
packing by count gives one rank all the heavy ego-networks, ``none`` leaves the other rank idle and
``dynamic`` steals and evens out the busy seconds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.sds_graphs import small_graphs, to_graph
from tests.test_dist_mpi import case, mpirun, needs_mpi, rank_main

MODELS = ("comp", "core", "truss")
POLICIES = ("dynamic", "exhausted", "none")
#: result fields that must not depend on the rank count or the policy
SAME = ("top", "t_score", "ties_at_t", "ties_in_top", "candidates", "must_score", "degree_bound_candidates", "model",
        "k", "t")
#: (graph, k, t) of the solves every rank count runs; hub with t = 36 fills the answer with zeros
SOLVES = (("plc", 3, 10), ("hub", 4, 36), ("caveman", 2, 7))


def graphs():
    return {name: to_graph(g, name=name) for name, g in small_graphs().items()}


# ---------------------------------------------------------------------------------------------
# the work-stealing table


def _drain(table, order):
    """Claim in the given rank order until every rank is done; the (rank, list, begin, end) claims."""
    claims, done = [], set()
    while len(done) < table.size:
        for rank in order:
            if rank in done:
                continue
            chunk = table.claim(rank)
            if chunk is None:
                done.add(rank)
            else:
                claims.append((rank, *chunk))
    return claims


def _covered(claims, lengths):
    seen = [np.zeros(n, dtype=int) for n in lengths]
    for _rank, lst, begin, end in claims:
        seen[lst][begin:end] += 1
    return seen


def test_without_stealing_each_rank_does_its_own_list_in_chunks():
    from gpucore.dist import WorkTable

    table = WorkTable([np.ones(10), np.ones(3)], "none", chunk_cost=2.0)
    claims = _drain(table, [0, 1])
    # guided chunks: at most min(2, unclaimed cost of both ranks / 4), at least one item:
    # 13 / 4 -> 2, 11 / 4 -> 2, 9 / 4 -> 2, 7 / 4 -> 1, then single items
    assert claims == [(0, 0, 0, 2), (1, 1, 0, 2), (0, 0, 2, 4), (1, 1, 2, 3)] + [(0, 0, b, b + 1) for b in range(4, 10)]
    assert table.claim(1) is None and table.claim(0) is None
    assert [r.to_dict()["items"] for r in table.records] == [10, 3]
    assert [r.initial_load for r in table.records] == [10.0, 3.0] and [r.steals_made for r in table.records] == [0, 0]


def test_dynamic_stealing_takes_the_back_half_of_the_heaviest_rank():
    from gpucore.dist import WorkTable

    table = WorkTable([np.ones(10), np.zeros(0), [4.0, 1.0, 1.0]], "dynamic", chunk_cost=1.0)
    assert table.claim(0) == (0, 0, 1)  # rank 0 has 9 items of cost 1 unclaimed, rank 2 six
    assert table.claim(1) == (0, 5, 6)  # rank 1 has none: it takes items 5..9 (cost 5 >= the 4 kept)
    assert table.segments[0].end == 5 and table.segments[1].end == 10
    assert table.records[1].steals_made == 1 and table.records[0].steals_suffered == 1
    assert table.records[1].cost_stolen == table.records[0].cost_lost == 5.0
    # the thief is robbed in turn once it holds the most
    table.segments[2].begin = 3  # rank 2's list is done
    assert table.claim(0) == (0, 1, 2)  # rank 0 keeps 2..4 (cost 3), rank 1 holds 6..9 (cost 4)
    assert table.claim(2) == (0, 8, 9)  # rank 1 keeps 6, 7 (cost 2), rank 2 takes 8, 9 (cost 2)
    assert table.records[1].steals_suffered == 1 and table.records[2].steals_made == 1


def test_exhausted_stealing_takes_everything_unclaimed():
    from gpucore.dist import WorkTable

    table = WorkTable([np.ones(10), np.zeros(0)], "exhausted", chunk_cost=1.0)
    assert table.claim(0) == (0, 0, 1)
    assert table.claim(1) == (0, 1, 2)
    assert table.segments[0].begin == table.segments[0].end == 1  # rank 0 keeps only its chunk in flight
    assert table.claim(0) == (0, 2, 3)  # and robs it back


@pytest.mark.parametrize("policy", POLICIES)
def test_every_item_is_claimed_once_under_any_claim_order(policy):
    from gpucore.dist import WorkTable

    rng = np.random.default_rng(4)
    for trial in range(20):
        lengths = rng.integers(0, 40, size=3)
        costs = [rng.exponential(1.0, n) * (rng.random(n) < 0.9) for n in lengths]
        table = WorkTable(costs, policy, chunk_cost=float(rng.uniform(0.5, 5)))
        claims = []
        done = set()
        while len(done) < 3:
            rank = int(rng.integers(3))
            if rank in done:
                continue
            chunk = table.claim(rank)
            if chunk is None:
                done.add(rank)
                if policy != "none":  # nothing unclaimed anywhere
                    assert all(s.begin >= s.end for s in table.segments), trial
            else:
                claims.append((rank, *chunk))
        for seen in _covered(claims, lengths):
            assert np.all(seen == 1), (policy, trial)
        if policy == "none":
            assert all(r == lst for r, lst, _b, _e in claims)
        steals = sum(r.steals_made for r in table.records)
        assert steals == sum(r.steals_suffered for r in table.records)


def test_items_past_the_live_cut_are_neither_claimed_nor_stolen():
    from gpucore.dist import WorkTable

    cut = {0: 10}
    table = WorkTable([np.ones(10), np.zeros(0)], "dynamic", chunk_cost=1.0,
                      live=lambda lst, begin, end: min(end, cut[lst]))
    assert table.claim(0) == (0, 0, 1)
    cut[0] = 6  # the items 6.. are no longer worth doing
    assert table.remaining(0) == 5.0
    assert table.claim(1) == (0, 3, 4)  # the back half of 1..5 (cost 3 >= the 2 kept)
    claims = _drain(table, [0, 1])
    assert sorted(e for _r, _l, _b, e in claims) == [2, 3, 5, 6]
    assert table.claim(0) is None and table.claim(1) is None


def test_work_table_refusals():
    from gpucore.dist import WorkTable
    from gpucore.errors import GpucoreError

    with pytest.raises(GpucoreError, match="--stealing 'half'"):
        WorkTable([np.ones(2)], "half", 1.0)
    with pytest.raises(GpucoreError, match="chunk cost"):
        WorkTable([np.ones(2)], "none", 0.0)
    with pytest.raises(GpucoreError, match="finite and >= 0"):
        WorkTable([np.array([1.0, -1.0])], "none", 1.0)


def test_the_service_on_one_rank_calls_the_handler():
    from gpucore.dist import Service, SingleComm

    seen = []
    with Service(SingleComm(), lambda rank, payload: seen.append((rank, payload)) or len(seen)) as service:
        assert service.ask("a") == 1 and service.ask("b") == 2
        service.finish()
    assert seen == [(0, "a"), (0, "b")]
    with pytest.raises(RuntimeError, match="finish"):
        with Service(SingleComm(), lambda rank, payload: None):
            pass


# ---------------------------------------------------------------------------------------------
# the cost model


def test_the_sample_is_keyed_stratified_and_covers_every_stratum():
    from gpucore.random import Stream, mix_py
    from gpucore.sds import cost

    degree = np.array([1] * 300 + [3] * 120 + [40] * 2 + [1000], dtype=np.int64)
    cands = np.arange(degree.size, dtype=np.int32)[::-1].copy()
    batches = cost.sample_batches(cands, degree, 0.01)
    sample = np.concatenate(batches)
    strata = {int(np.log2(d)) for d in degree[sample]}
    assert strata == {0, 1, 5, 9}  # every stratum, highest first
    assert [int(degree[b[0]]) for b in batches][0] == 1000
    assert sample.size == 3 + 2 + 1 + 1  # ceil(1 % of 300, 120, 2, 1)
    key = {int(v): mix_py(0, int(Stream.SDS_SAMPLE), int(v)) for v in cands}
    low = sorted(range(300), key=lambda v: key[v])[:3]  # the 3 of smallest key among degree 1
    assert sorted(int(v) for v in sample if degree[v] == 1) == sorted(low)
    again = cost.sample_batches(cands[::-1].copy(), degree, 0.01)  # the order given does not matter
    assert [b.tolist() for b in again] == [b.tolist() for b in batches]
    assert max(b.size for b in cost.sample_batches(cands, degree, 0.5)) <= -(-150 // cost.BATCHES_PER_STRATUM)
    owner = cost.spread(batches, "truss", degree, np.full_like(degree, 5), 2)
    assert sorted(set(owner.tolist())) == [0, 1]
    assert cost.work("truss", [3, 4], [0, 10]).tolist() == [3, 4 + 10 * 3] and cost.work("core", [3], [10]) == [13]


def test_the_fit_recovers_a_known_cost_and_stays_non_negative():
    from gpucore.sds import cost

    rng = np.random.default_rng(2)
    rows = []
    for _ in range(12):
        d = rng.integers(1, 200, size=rng.integers(1, 30))
        e = rng.integers(0, 2000, size=d.size)
        secs = 0.003 + 2e-6 * d.sum() + 5e-8 * (e.astype(float) ** 1.5).sum()
        rows.append(cost.timing_row("fit", "truss", np.arange(d.size), d, e, secs))
    fitted = cost.fit("fit", "truss", rows, 0.01)
    assert fitted.coefficients == pytest.approx((2e-6, 5e-8), rel=1e-6)
    assert fitted.intercept == pytest.approx(0.003, rel=1e-6) and fitted.r2 == pytest.approx(1.0)
    assert fitted.costs(np.array([10]), np.array([100]))[0] == pytest.approx(2e-5 + 5e-5 + cost.FLOOR, rel=1e-9)
    # seconds that fall with |V|: the |V| coefficient is held at 0, not negative
    rows = [[1.0 - 0.001 * d, 1, d, 10.0 * d] for d in range(1, 50)]
    fitted = cost.fit("fit", "core", rows, 0.01)
    assert min(fitted.coefficients) >= 0 and fitted.intercept >= 0
    flat = cost.fit("count", "comp", [[0.5, 3, 3.0], [0.5, 7, 7.0]], 0.01)
    assert flat.features == ("1",) and flat.coefficients == (0.0,) and "every vertex costs the same" in flat.notes[0]
    assert cost.fit("fit", "comp", [], 0.01).notes == ["no candidates: nothing to time"]


def test_cost_sample_rate_is_checked():
    from gpucore.errors import GpucoreError
    from gpucore.sds import cost

    for bad in (0, -0.1, 1.5):
        with pytest.raises(GpucoreError, match="--cost-sample"):
            cost.sample_batches(np.arange(3, dtype=np.int32), np.ones(3, dtype=np.int64), bad)


def test_the_search_table_drops_what_falls_below_tau():
    from gpucore.sds.distributed import SearchTable

    lists = [np.array([10, 11, 12, 13], dtype=np.int32), np.array([20, 21], dtype=np.int32)]
    bounds = [np.array([5, 4, 2, 1]), np.array([5, 3])]
    table = SearchTable(lists, bounds, [np.ones(4), np.ones(2)], 2, "none", 1e-9, np.array([], dtype=np.int64))
    assert table.tau() == 0
    reply = table(0, None)
    assert reply["vertices"].tolist() == [10] and reply["tau"] == 0
    reply = table(0, np.array([3, 4]))  # two scores known: tau = 3
    assert reply["tau"] == 3 and reply["vertices"].tolist() == [11]
    assert table(0, None) is None  # 12 and 13 have bounds 2 and 1 < 3
    assert table(1, np.array([2]))["vertices"].tolist() == [20] and table(1, None)["vertices"].tolist() == [21]


# ---------------------------------------------------------------------------------------------
# the supports split over ranks


@pytest.mark.parametrize("emulated", [False, True])
def test_supports_of_the_parts_add_up_to_the_whole(emulated):
    from gpucore.sds import make_engine, simple_graph
    from gpucore.sds.emulated import emulated_engine

    g = graphs()["plc"]
    make = (lambda: emulated_engine(simple_graph(g))) if emulated else (lambda: make_engine(simple_graph(g), "cpu"))
    whole = make()
    whole.prepare()
    for parts in (2, 3, 5):
        total = np.zeros_like(np.asarray(whole.sup))
        for part in range(parts):
            eng = make()
            eng._supports(part, parts)
            total += np.asarray(eng.sup)
        assert np.array_equal(total, whole.sup), parts


def test_the_distributed_search_on_one_rank_gives_the_answer():
    from gpucore.dist import SingleComm
    from gpucore.dist.timed import NestedPhases, TimedComm
    from gpucore.sds import make_engine, run_sds, simple_graph
    from gpucore.sds.distributed import search
    from gpucore.sds.driver import RANK_PHASES, finish

    g = graphs()["plc"]
    for policy in POLICIES:
        ref = run_sds(g, "core", 2, 10, backend="cpu")
        eng = make_engine(simple_graph(g), "cpu")
        eng.prepare()
        ranking = eng.rank("core", 2)
        phases = NestedPhases(RANK_PHASES)
        found = search(eng, ranking, "core", 2, 10, TimedComm(SingleComm(), phases), phases, policy, "fit", 0.05,
                       1e-9)
        top, _scored, ties, _stop = finish(found.vertices, found.scores, 10, eng.n, ranking.candidates.size)
        assert [(e["vertex"], e["score"]) for e in ref["top"]] == list(zip(top[0].tolist(), top[1].tolist()))
        assert ties == ref["ties_at_t"]
        assert found.record["chunks"] > 1 and found.shared["table"][0]["steals_made"] == 0


# ---------------------------------------------------------------------------------------------
# real ranks


def one_process(name, k, t, model):
    from gpucore.sds import run_sds

    res = run_sds(graphs()[name], model, k, t, backend="cpu")
    return {key: res[key] for key in SAME}


@pytest.fixture(scope="module")
def reference():
    return {f"{name}/{model}": one_process(name, k, t, model) for name, k, t in SOLVES for model in MODELS}


@pytest.fixture(scope="module")
def ranked():
    """Every rank count's answers (three launches)."""
    return {n: case(n, "solves", script=__file__, timeout=600) for n in (1, 2, 3)}


@needs_mpi
@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_rank_count_and_policy_gives_the_one_process_answer(reference, ranked, n):
    out = ranked[n]
    assert out["ranks"] == n
    for key, got in out["solves"].items():
        name, model, policy, chunk = key.split("/")
        assert got["answer"] == reference[f"{name}/{model}"], key
        if n > 1:
            rec = got["record"]
            assert got["stealing"] == policy and sum(rec["scored"]) == got["scored"]
            assert got["scored"] >= got["answer"]["must_score"]
            if policy == "none":
                assert sum(rec["steals_made"]) == 0
            assert sum(rec["steals_made"]) == sum(rec["steals_suffered"])
            assert got["phases"]["communication"] > 0 and "idle" in got["phases"]


@needs_mpi
def test_the_solves_cover_what_they_must(reference, ranked):
    """Zero fill, ties at the t-th score beyond the answer, contexts, steals under 2 and 3 ranks."""
    answers = reference.values()
    assert any(a["t_score"] == 0 for a in answers)
    assert any(a["ties_at_t"] > a["ties_in_top"] for a in answers)
    assert all(any(e["contexts"] for e in a["top"]) for a in answers)
    for n in (2, 3):
        steals = [sum(s["record"]["steals_made"]) for key, s in ranked[n]["solves"].items() if "/dynamic/" in key]
        assert sum(steals) > 0, n


@needs_mpi
def test_the_cuda_engine_over_two_ranks_in_the_emulator(reference):
    """The CUDA backend's code (supports of a share of the tiles, all-reduced; chunks scored by the
    kernels in the emulator) over two ranks gives the one-process answer."""
    out = case(2, "emulated", script=__file__, timeout=600)
    for model in MODELS:
        assert out[model]["answer"] == reference[f"plc/{model}"], model
        assert out[model]["stealing"] == "dynamic" and sum(out[model]["record"]["chunks"]) > 2


@needs_mpi
def test_dynamic_stealing_evens_out_a_skewed_packing():
    """Static packing by count gives rank 0 every heavy ego-network (K_160, 12,720 edges) and rank 1
    every light one (40 disjoint K_4): without stealing rank 1 waits; with dynamic stealing it
    takes the back half of rank 0's list, again and again."""
    out = case(2, "skew", script=__file__, timeout=600)
    none, dyn = out["none"], out["dynamic"]
    assert none["answer"] == dyn["answer"] == out["reference"]
    assert none["heavy_on_rank0"] == skew_heavy_count()  # the precondition: all heavy ones packed on rank 0
    busy = {p: out[p]["record"]["busy_seconds"] for p in ("none", "dynamic")}
    ratio = {p: max(b) / max(min(b), 1e-6) for p, b in busy.items()}
    assert sum(none["record"]["steals_made"]) == 0 and ratio["none"] > 5, busy
    assert dyn["record"]["steals_made"][1] > 0 and dyn["record"]["steals_suffered"][0] > 0, dyn["record"]
    assert ratio["dynamic"] < ratio["none"] / 2, busy
    assert none["record"]["idle_seconds"][1] > 2 * none["record"]["idle_seconds"][0]


@needs_mpi
def test_gpucore_sds_under_mpiexec(tmp_path, reference):
    """The command: rank 0 writes one result file with the one-process answer and the ranks' record."""
    from gpucore.graph import save_graph

    path = save_graph(graphs()["plc"], tmp_path / "g.gcsr")
    out = tmp_path / "out"
    out.mkdir()
    proc = mpirun(2, "-m", "gpucore", "sds", "--graph", path, "--model", "truss", "--k", 3, "--t", 10,
                  "--backend", "cpu", "--stealing", "exhausted", "--chunk-seconds", 1e-9, "-o", out / "sds.json",
                  timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out.iterdir()] == ["sds.json"]
    assert json.loads(proc.stdout)["ranks"] == 2  # the summary, printed once
    res = json.loads((out / "sds.json").read_text())
    assert {key: res[key] for key in SAME if key != "graph"} == reference["plc/truss"]
    assert res["ranks"] == 2 and res["stealing"] == "exhausted" and len(res["per_rank"]["busy_seconds"]) == 2
    assert "communication" in res["seconds_by_phase"] and res["cost_model"]["kind"] == "fit"


@needs_mpi
def test_ranks_that_disagree_stop_together():
    out = case(2, "mismatch", script=__file__)
    assert len(set(out["messages"])) == 1 and "disagree on stealing" in out["messages"][0]


# ---------------------------------------------------------------------------------------------
# the rank program

#: the skewed graph: K_(M+1) components (heavy) and hubs of M / 4 disjoint K_4 (light), degree M each
SKEW_M = 160


def skew_heavy_count() -> int:
    return 2 * (SKEW_M + 1)


def skew_graph():
    """Group ids 0 .. 2H-1 (H = 2 (M+1)): heavy vertices (two K_(M+1)) and light hubs (M/4 disjoint K_4
    each), all of degree M and bound M/4 under truss k = 4, so they come first in the search order,
    by id. The cost-model sample (rate 0.001) removes one vertex of the group; the others are packed
    by count in turn onto ranks 0, 1, 0, ...: heavy ids sit where rank 0's turns fall."""
    from gpucore.graph import from_arcs
    from gpucore.sds.cost import _keys

    heavy_count = skew_heavy_count()
    group = 2 * heavy_count
    sampled = int(np.argmin(_keys(np.arange(group, dtype=np.int32))))  # the sample's vertex of the group
    turns = [i for i in range(group) if i != sampled]
    heavy = [v for slot, v in enumerate(turns) if slot % 2 == 0][:heavy_count]
    light = sorted(set(range(group)) - set(heavy))
    edges = []
    for comp in (heavy[: SKEW_M + 1], heavy[SKEW_M + 1:]):
        edges += [(a, b) for i, a in enumerate(comp) for b in comp[i + 1:]]
    nxt = group
    for hub in light:
        for _ in range(SKEW_M // 4):
            members = list(range(nxt, nxt + 4))
            nxt += 4
            edges += [(a, b) for i, a in enumerate(members) for b in members[i + 1:]] + [(hub, x) for x in members]
    src, dst = zip(*edges)
    return from_arcs(nxt, src, dst, 0.1, directed=False, name="skew"), set(heavy)


def _answer(res) -> dict:
    return {key: res[key] for key in SAME}


def _summary(res) -> dict:
    keys = ("scored", "busy_seconds", "idle_seconds", "chunks") + (("steals_made", "steals_suffered")
                                                                   if res["ranks"] > 1 else ())
    return {"answer": _answer(res), "record": {key: res["per_rank"][key] for key in keys}, "scored": res["scored"],
            "stealing": res["stealing"], "phases": res["seconds_by_phase"]}


def _solves(comm) -> dict:
    from gpucore.sds import run_sds

    gs = graphs()
    out = {}
    for name, k, t in SOLVES:
        for model in MODELS:
            for policy in POLICIES:
                for chunk in (1e-9, 0.1):
                    res = run_sds(gs[name], model, k, t, backend="cpu", comm=comm, stealing=policy,
                                  chunk_seconds=chunk, cost_sample=0.05)
                    out[f"{name}/{model}/{policy}/{chunk}"] = _summary(res)
    return {"ranks": comm.size, "solves": out}


def _emulated(comm) -> dict:
    from gpucore.sds import run_sds, simple_graph
    from gpucore.sds.emulated import emulated_engine

    g = graphs()["plc"]
    return {model: _summary(run_sds(g, model, 3, 10, engine=emulated_engine(simple_graph(g)), comm=comm,
                                    chunk_seconds=1e-9)) for model in MODELS}


def _skew(comm) -> dict:
    from gpucore.dist import SingleComm
    from gpucore.sds import run_sds
    from gpucore.sds.distributed import _pack

    g, heavy = skew_graph()
    out = {"reference": _answer(run_sds(g, "truss", 4, 10, backend="cpu", comm=SingleComm()))}
    for policy in ("none", "dynamic"):
        res = run_sds(g, "truss", 4, 10, backend="cpu", comm=comm, stealing=policy, cost_model="count",
                      cost_sample=0.001, chunk_seconds=1e-9)
        out[policy] = _summary(res)
    if comm.is_root:  # the precondition: where the packing put the heavy vertices
        from gpucore.sds import make_engine, simple_graph
        from gpucore.sds.cost import sample_batches

        eng = make_engine(simple_graph(g), "cpu")
        eng.prepare()
        ranking = eng.rank("truss", 4)
        sampled = np.concatenate(sample_batches(ranking.candidates, eng.ego_sizes()[0], 0.001))

        class Count:
            def costs(self, d, e):
                return np.ones(len(d))

        lists = _pack(ranking, sampled, Count(), eng, 2)[0]
        out["none"]["heavy_on_rank0"] = len(heavy & set(lists[0].tolist()))
    return out


def _mismatch(comm):
    from gpucore.errors import GpucoreError
    from gpucore.sds import run_sds

    try:
        run_sds(graphs()["plc"], "comp", 3, 5, backend="cpu", comm=comm, stealing="none" if comm.rank else "dynamic")
    except GpucoreError as exc:
        return {"messages": comm.allgather(str(exc))}
    return {"messages": comm.allgather("no error")}


_CASES = {"solves": _solves, "emulated": _emulated, "skew": _skew, "mismatch": _mismatch}

if __name__ == "__main__":
    rank_main(_CASES)

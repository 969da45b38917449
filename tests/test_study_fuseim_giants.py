"""``benchmarks/study_fuseim_giants.py`` times the fused sampler's passes, its team pass and gim's list mode over
explicit lists of traversals; each must yield the unfused sets of exactly the traversals listed (the kernels in the
CPU emulator)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.study_fuseim_giants import fused_pass, gim_pass, team_pass
from gpucore.backend import get_backend
from gpucore.im.cpu import CPUSampler
from gpucore.im.emulated import emulated_engine
from gpucore.im.fused.emulated import available, emulated_fused_sampler
from gpucore.im.sampling import engine_sets
from tests.im_graphs import pa_graph

pytestmark = pytest.mark.skipif(not available(), reason="g++ not available")


def test_passes_over_a_list_give_the_unfused_sets_of_the_listed_traversals():
    be = get_backend("cpu")
    g = pa_graph(2000, 20_000, seed=12, prob=0.05)
    sizes = np.diff(engine_sets(CPUSampler(g, "IC", 1, 0, be), 0, 400)[0])
    large = sizes >= 8
    assert 5 < large.sum() < 100  # a minority of long traversals
    gim = emulated_engine(g, "IC", 1, 0, sms=2).sampler
    eng = emulated_fused_sampler(g, "IC", 1, 0, batch_width=32, max_batches=2)
    for sel in (large, ~large):
        ids = np.flatnonzero(sel).astype(np.int64)
        runs = [gim_pass(gim, 400, ids, int(sizes[sel].sum()))]
        runs += [fused_pass(eng, 400, ids, int(sizes[sel].sum()), resident) for resident in (False, True)]
        runs.append(team_pass(eng, 400, eng.backend.asarray(ids), int(sizes[sel].sum())))
        for got in runs:
            np.testing.assert_array_equal(got[sel], sizes[sel])
            assert (got[~sel] == -1).all()  # nothing outside the list ran

"""Numba kernels of the CPU backend: Generate, Update, Discover, Select and Diffuse on the layout.

Each kernel processes the segments in parallel (``prange``; one segment = one GPU block) and every
random decision is keyed (``gpucore.amcss`` documents the keys), so the result never depends on
the thread count or the schedule. Per-thread scratch (rows of ``[T, n]`` arrays, indexed by
``numba.get_thread_id()``):

- ``mark``: int32 stamps. For the set in progress with stamp s (``base = 4 s``):
  ``base`` member, ``base+1`` root, ``base+2`` excluded (complement root draw, not a member),
  ``base+3`` excluded member; anything below ``base`` is "not in the set".
- ``delta``: int32 coverage changes of this thread, folded into ``cnt`` by ``fold_delta``.
- ``buf``: int32 work list (kept roots of a polluted set, excluded nodes of a complement draw).
"""

from __future__ import annotations

import types

import numba
import numpy as np
from numba import njit, prange

from gpucore.random.hashing import index_below, mix3, mix5, step, uniform
from gpucore.random.worlds import ic_live, lt_draw, lt_fixed_weight, lt_threshold

def _parallel_and_serial(fn):
    """Compile ``fn`` twice: parallel over segments, and serial (for small work, where a parallel
    launch costs more than it saves, especially on a loaded machine). Returns (parallel, serial)."""
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_serial"
    twin.__doc__ = fn.__doc__
    return njit(parallel=True, cache=True)(fn), njit(cache=True)(twin)


COIN = np.uint64(1)  # Stream.COIN
ROOT = np.uint64(2)  # Stream.ROOT
LT_CHOICE = np.uint64(3)  # Stream.LT_CHOICE
ROOT_COUNT = np.uint64(4)  # Stream.ROOT_COUNT

MODE_FRESH = 0
MODE_CLEAN = 1
MODE_POLLUTED = 2
STAMP_LIMIT = (1 << 29) - 2

ST_DONE = 0
ST_NEED_SPACE = 1
ST_PENDING = 2


@njit(inline="always", cache=True)
def root_count(seed, j, k, n_res):
    """floor(k + u_j) with u_j = uniform(mix(seed, ROOT_COUNT, j)), at most n_res."""
    u = uniform(mix3(seed, ROOT_COUNT, np.uint64(j)))
    c = np.int64(np.floor(k + u))
    if c > n_res:
        c = n_res
    if c < 1:
        c = 1
    return c


@njit(cache=True)
def _next_stamp(stamps, mark, tid):
    s = stamps[tid] + 1
    if s >= STAMP_LIMIT:
        mark[tid, :] = 0
        s = 1
    stamps[tid] = s
    return s


@njit(cache=True)
def _lt_pick(lt_cum, lo, hi, r):
    """Smallest k in [lo, hi) with r < lt_cum[k] (caller checked r < lt_cum[hi-1])."""
    a = lo
    b = hi - 1
    while a < b:
        c = (a + b) >> 1
        if r < lt_cum[c]:
            b = c
        else:
            a = c + 1
    return a


# ---- build_set and its steps (the seams of its CUDA twin am_build_set, amcss_common.cuh) --------
# Each step takes the segment (mrr, seg_base, l), the thread's scratch (mark[tid], delta[tid],
# buf[tid]) and the stamp base of the set in progress; positions are logical (entry p lives at
# mrr[seg_base + p % l]); a step that would write at or past `guard` stops and reports overflow.


@njit(inline="always", cache=True)
def _root_draw(seed, jj, rr, d, residual, n_res):
    """Root draw ``d`` of set ``jj`` in round ``rr``: residual[mix(seed, ROOT, j, rnd, d) mod n_res]."""
    return residual[index_below(mix5(seed, ROOT, jj, rr, np.uint64(d)), n_res)]


@njit(inline="always", cache=True)
def _append(u, stamp, pos, mrr, seg_base, l, mark, tid, delta):
    """Append ``u`` at logical ``pos`` with mark ``stamp`` and count it; returns pos + 1 (the caller
    checked the guard)."""
    mrr[seg_base + pos % l] = u
    mark[tid, u] = stamp
    delta[tid, u] += 1
    return pos + 1


@njit(cache=True)
def copy_clean_set(mrr, seg_base, l, src_start, src_end, src_nroots, bw, mark, tid, base):
    """Copy a clean source set to logical ``bw`` and mark it (its first ``src_nroots`` entries as
    roots, the rest as members); its coverage stays counted (am_move, mode 0). Returns its end."""
    for i in range(src_end - src_start):
        v = mrr[seg_base + (src_start + i) % l]
        mrr[seg_base + (bw + i) % l] = v
        mark[tid, v] = base + 1 if i < src_nroots else base
    return bw + src_end - src_start


@njit(cache=True)
def keep_inactive_roots(mrr, seg_base, l, src_start, src_nroots, bw, guard, active, mark, tid, base, buf, delta):
    """Polluted source set: write its roots that are not active (K1) at logical ``bw``, marked as
    roots and counted (am_count_inactive + am_move, mode 1). Returns |K1|, or -1 (nothing written)
    when they would pass ``guard``."""
    nk = 0
    for i in range(src_nroots):
        v = mrr[seg_base + (src_start + i) % l]
        if active[v] == 0:
            buf[tid, nk] = v
            nk += 1
    if bw + nk > guard:
        return -1
    for i in range(nk):
        v = buf[tid, i]
        mrr[seg_base + (bw + i) % l] = v
        mark[tid, v] = base + 1
        delta[tid, v] += 1
    return nk


@njit(cache=True)
def draw_roots(t, pos, guard, mrr, seg_base, l, seed, jj, rr, residual, n_res, mark, tid, base, delta):
    """Add ``t`` roots by rejection (am_draw_roots): draw d is ``residual[mix(seed, ROOT, j, rnd, d) mod
    n_res]``; a root already is skipped, a member is promoted (marked root where it is: its reverse
    BFS is done, Lemma 3.4), any other node is a fresh root appended at ``pos``.
    Returns (new pos, overflow)."""
    member = base
    root = base + 1
    d = 0
    got = 0
    while got < t:
        u = _root_draw(seed, jj, rr, d, residual, n_res)
        d += 1
        mu = mark[tid, u]
        if mu == root:
            continue
        got += 1
        if mu == member:
            mark[tid, u] = root
            continue
        if pos >= guard:
            return pos, True
        pos = _append(u, root, pos, mrr, seg_base, l, mark, tid, delta)
    return pos, False


@njit(cache=True)
def draw_complement(e, pos, guard, mrr, seg_base, l, seed, jj, rr, residual, n_res, mark, tid, base, buf, delta):
    """Complement root draw (am_complement), for root counts above half of V_i minus the roots: the
    same draws pick the ``e`` nodes that do NOT become roots (marked excluded), then every other node
    of V_i that is no root yet becomes one (members promoted, others appended at ``pos``), and the
    exclusion marks are undone. Returns (new pos, overflow); on overflow the marks are left as they
    are (the set is abandoned)."""
    member = base
    root = base + 1
    excl = base + 2
    excl_member = base + 3
    d = 0
    got = 0
    while got < e:
        u = _root_draw(seed, jj, rr, d, residual, n_res)
        d += 1
        mu = mark[tid, u]
        if mu == root or mu == excl or mu == excl_member:
            continue
        buf[tid, got] = u
        got += 1
        mark[tid, u] = excl_member if mu == member else excl
    for idx in range(n_res):
        u = residual[idx]
        mu = mark[tid, u]
        if mu == root or mu == excl or mu == excl_member:
            continue
        if mu == member:
            mark[tid, u] = root
            continue
        if pos >= guard:
            return pos, True
        pos = _append(u, root, pos, mrr, seg_base, l, mark, tid, delta)
    for i in range(e):
        u = buf[tid, i]
        mark[tid, u] = member if mark[tid, u] == excl_member else 0
    return pos, False


@njit(cache=True)
def probe_lt(rp, pos, guard, mrr, seg_base, l, seed, jj, in_indptr, in_src, lt_cum, active, mark, tid, base, delta):
    """LT reverse BFS from the entries [rp, pos) (am_probe / am_level_lt; the set's entries are the
    queue): node v takes attempts a = 0, 1, ... ``lt_draw(mix(seed, LT_CHOICE, j, v, a))`` until it
    picks no in-arc or an inactive source (correction 4); a new source is appended as a member.
    Returns (new pos, overflow)."""
    while rp < pos:
        v = mrr[seg_base + rp % l]
        rp += 1
        klo = in_indptr[v]
        khi = in_indptr[v + 1]
        if khi == klo:
            continue
        last = lt_cum[khi - 1]
        a = 0
        while True:
            r = lt_draw(mix5(seed, LT_CHOICE, jj, np.uint64(v), np.uint64(a)))
            a += 1
            if r >= last:
                break  # no in-arc chosen
            u = in_src[_lt_pick(lt_cum, klo, khi, r)]
            if active[u] != 0:
                continue  # rejection: condition on "u not yet active" (correction 4)
            if mark[tid, u] < base:
                if pos >= guard:
                    return pos, True
                pos = _append(u, base, pos, mrr, seg_base, l, mark, tid, delta)
            break
    return pos, False


@njit(cache=True)
def probe_ic(rp, pos, guard, mrr, seg_base, l, seed, jj, in_indptr, in_src, in_eid, in_w, active, mark, tid, base,
             delta):
    """IC reverse BFS from the entries [rp, pos) (am_probe / am_level_ic): in-arc (u -> v) with
    original id e is live iff ``uniform(step(mix(seed, COIN, j), e)) < p_e`` (correction 3); an
    inactive source not yet in the set is appended as a member. Returns (new pos, overflow)."""
    prefix = mix3(seed, COIN, jj)
    while rp < pos:
        v = mrr[seg_base + rp % l]
        rp += 1
        for k in range(in_indptr[v], in_indptr[v + 1]):
            u = in_src[k]
            if active[u] != 0 or mark[tid, u] >= base:
                continue
            if uniform(step(prefix, np.uint64(in_eid[k]))) < np.float64(in_w[k]):
                if pos >= guard:
                    return pos, True
                pos = _append(u, base, pos, mrr, seg_base, l, mark, tid, delta)
    return pos, False


@njit(cache=True)
def roots_first(first, pos, mrr, seg_base, l, mark, tid, base):
    """Move the entries marked root in logical [first, pos) before the others, in place (a stable
    pass; am_partition_roots / am_swap_fresh_roots give the same set, roots first, in another order)."""
    w = first
    for p in range(first, pos):
        ip = seg_base + p % l
        v = mrr[ip]
        if mark[tid, v] == base + 1:
            if p != w:
                iw = seg_base + w % l
                mrr[ip] = mrr[iw]
                mrr[iw] = v
            w += 1


@njit(cache=True)
def build_set(
    mode, mrr, seg_base, l, bw, guard, src_start, src_end, src_nroots,
    j, target, seed, rnd, is_lt,
    in_indptr, in_src, in_eid, in_w, lt_cum,
    active, residual, n_res,
    mark, tid, base, buf, delta,
):
    """Write set ``j`` at logical position ``bw`` of a segment; never at or past ``guard``.

    mode FRESH: ``target`` roots drawn from V_i, reverse BFS from all of them.
    mode CLEAN: copy the source set (its first ``src_nroots`` entries are its roots), extend the
    roots to ``target`` by uniform draws from V_i minus the roots (a draw inside the set promotes
    that member, Lemma 3.4; a draw outside is a fresh root), reverse BFS from the fresh roots only.
    mode POLLUTED: keep the source roots that are not active (K1), draw the rest from V_i minus K1
    (Lemma 3.6), reverse BFS from all roots.
    In every mode the result is the reverse-reachable set of the new roots on G_i under set j's
    own keys, roots first. Returns (status, end, moved_start, moved_end, moved_nroots): status 1 =
    the guard was hit; then the source has been moved to ``[moved_start, moved_end)`` (or
    moved_start = -1 when it was not touched) and the coverage changes are undone.

    Steps (as in am_build_set): source (``copy_clean_set`` / ``keep_inactive_roots``), roots
    (``draw_roots``, or ``draw_complement`` for more than half of the candidates), reverse BFS
    (``probe_ic`` / ``probe_lt``), then ``roots_first``; on a guard hit the coverage is undone.
    """
    pos = bw
    c = 0
    moved_start = -1
    moved_end = -1
    moved_nroots = 0
    if mode == MODE_CLEAN:
        if bw + (src_end - src_start) > guard:
            return 1, bw, -1, -1, 0
        pos = copy_clean_set(mrr, seg_base, l, src_start, src_end, src_nroots, bw, mark, tid, base)
        c = src_nroots
        moved_start, moved_end, moved_nroots = bw, pos, src_nroots
    elif mode == MODE_POLLUTED:
        c = keep_inactive_roots(mrr, seg_base, l, src_start, src_nroots, bw, guard, active, mark, tid, base, buf,
                                delta)
        if c < 0:
            return 1, bw, -1, -1, 0
        pos = bw + c
        moved_start, moved_end, moved_nroots = bw, pos, c
    counted_from = pos if mode == MODE_CLEAN else bw  # entries whose coverage this call added
    probe_from = counted_from  # a clean set's members are already closed under reverse reachability

    t = target - c
    m = n_res - c
    jj = np.uint64(j)
    overflow = False
    if t > 0 and 2 * t <= m:
        pos, overflow = draw_roots(t, pos, guard, mrr, seg_base, l, seed, jj, np.uint64(rnd), residual, n_res, mark,
                                   tid, base, delta)
    elif t > 0:
        pos, overflow = draw_complement(m - t, pos, guard, mrr, seg_base, l, seed, jj, np.uint64(rnd), residual,
                                        n_res, mark, tid, base, buf, delta)
    if not overflow:
        if is_lt:
            pos, overflow = probe_lt(probe_from, pos, guard, mrr, seg_base, l, seed, jj, in_indptr, in_src, lt_cum,
                                     active, mark, tid, base, delta)
        else:
            pos, overflow = probe_ic(probe_from, pos, guard, mrr, seg_base, l, seed, jj, in_indptr, in_src, in_eid,
                                     in_w, active, mark, tid, base, delta)
    if overflow:
        for p in range(counted_from, pos):
            delta[tid, mrr[seg_base + p % l]] -= 1
        return 1, pos, moved_start, moved_end, moved_nroots
    if t > 0:
        roots_first(bw + c, pos, mrr, seg_base, l, mark, tid, base)
    return 0, pos, moved_start, moved_end, moved_nroots


def generate_kernel(
    S, L, l, mrr, offset, nroots, set_id, flag, count, lo, hi, status,
    theta_prev, theta_new, id_base, k, seed, rnd, is_lt,
    in_indptr, in_src, in_eid, in_w, lt_cum, active, residual, n_res,
    mark, stamps, buf, delta, errors,
):
    """Grow every segment to its share of ``theta_new`` sets (fresh sets, ids by global index)."""
    T = mark.shape[0]
    for s in prange(S):
        tid = numba.get_thread_id()
        if tid >= T:
            errors[0] = 1
            continue
        ob = s * L
        seg_base = s * l
        r1 = count[s]
        r2 = theta_new // S + (1 if s < theta_new % S else 0)
        bw = offset[ob + r1]
        guard = offset[ob] + l
        status[s] = ST_DONE
        while r1 < r2:
            g = r1 * S + s
            j = id_base + (g - theta_prev)
            target = root_count(seed, j, k, n_res)
            stamp = _next_stamp(stamps, mark, tid)
            st, end, _a, _b, _c = build_set(
                MODE_FRESH, mrr, seg_base, l, bw, guard, 0, 0, 0, j, target, seed, rnd, is_lt,
                in_indptr, in_src, in_eid, in_w, lt_cum, active, residual, n_res,
                mark, tid, 4 * stamp, buf, delta,
            )
            if st != 0:
                status[s] = ST_NEED_SPACE
                break
            set_id[ob + r1] = j
            nroots[ob + r1] = target
            flag[ob + r1] = 0
            r1 += 1
            offset[ob + r1] = end
            bw = end
        count[s] = r1
        lo[s] = offset[ob]
        hi[s] = bw


def update_init_kernel(S, L, offset, nroots, count, status, upd):
    """Start an Update: every segment pending at slot 0, writing after its tail."""
    for s in prange(S):
        ob = s * L
        r = count[s]
        upd[s, 0] = 0
        upd[s, 1] = offset[ob + r]
        if r > 0:
            upd[s, 2] = offset[ob]
            upd[s, 3] = offset[ob + 1]
            upd[s, 4] = nroots[ob]
            status[s] = ST_PENDING
        else:
            status[s] = ST_DONE


def update_kernel(
    S, L, l, mrr, offset, nroots, set_id, flag, count, lo, hi, status, upd,
    k, seed, rnd, is_lt,
    in_indptr, in_src, in_eid, in_w, lt_cum, active, residual, n_res,
    mark, stamps, buf, delta, errors,
):
    """Update every set of every segment for round ``rnd`` (clean: extend; polluted: re-probe).

    Segment s rewrites its sets in slot order 0..r-1 after its tail (circularly). While set t is
    processed the oldest data still needed is the next pending set t+1 (or, for the last set, the
    new first set), so writes stay below that start + l: then a set never overwrites anything but
    its own, already read, source. If a write would pass that guard, the segment stops with its
    state in ``upd`` (resumable after the driver has enlarged the segments).
    """
    T = mark.shape[0]
    for s in prange(S):
        if status[s] != ST_PENDING and status[s] != ST_NEED_SPACE:
            continue
        tid = numba.get_thread_id()
        if tid >= T:
            errors[0] = 1
            continue
        ob = s * L
        seg_base = s * l
        r = count[s]
        t = upd[s, 0]
        bw = upd[s, 1]
        src_start = upd[s, 2]
        src_end = upd[s, 3]
        src_nr = upd[s, 4]
        status[s] = ST_DONE
        while t < r:
            j = set_id[ob + t]
            if t + 1 < r:
                guard = offset[ob + t + 1] + l
            elif t > 0:
                guard = offset[ob] + l
            else:
                guard = bw + l
            target = root_count(seed, j, k, n_res)
            mode = MODE_POLLUTED if flag[ob + t] != 0 else MODE_CLEAN
            stamp = _next_stamp(stamps, mark, tid)
            st, end, ms, me, mn = build_set(
                mode, mrr, seg_base, l, bw, guard, src_start, src_end, src_nr, j, target, seed, rnd, is_lt,
                in_indptr, in_src, in_eid, in_w, lt_cum, active, residual, n_res,
                mark, tid, 4 * stamp, buf, delta,
            )
            if st != 0:
                if ms >= 0:
                    src_start = ms
                    src_end = me
                    src_nr = mn
                upd[s, 0] = t
                upd[s, 1] = bw
                upd[s, 2] = src_start
                upd[s, 3] = src_end
                upd[s, 4] = src_nr
                low = src_start
                if t + 1 < r:
                    low = min(low, offset[ob + t + 1])
                elif t > 0:
                    low = min(low, offset[ob])
                lo[s] = low
                hi[s] = max(bw, src_end)
                status[s] = ST_NEED_SPACE
                break
            offset[ob + t] = bw
            nroots[ob + t] = target
            flag[ob + t] = 0
            bw = end
            t += 1
            if t < r:
                src_start = offset[ob + t]
                src_end = offset[ob + t + 1]
                src_nr = nroots[ob + t]
        if t == r:
            offset[ob + r] = bw
            upd[s, 0] = r
            lo[s] = offset[ob]
            hi[s] = bw


def relayout_kernel(S, l_old, mrr_old, l_new, mrr_new, lo, hi):
    """Copy each segment's live logical range into a collection with longer segments."""
    for s in prange(S):
        for p in range(lo[s], hi[s]):
            mrr_new[s * l_new + p % l_new] = mrr_old[s * l_old + p % l_old]


def reslot_kernel(S, L_old, L_new, offset_o, nroots_o, set_id_o, flag_o, offset_n, nroots_n, set_id_n, flag_n, count):
    """Copy the per-slot arrays to a layout with more slots per segment."""
    for s in prange(S):
        r = count[s]
        for i in range(r + 1):
            offset_n[s * L_new + i] = offset_o[s * L_old + i]
        for i in range(r):
            nroots_n[s * L_new + i] = nroots_o[s * L_old + i]
            set_id_n[s * L_new + i] = set_id_o[s * L_old + i]
            flag_n[s * L_new + i] = flag_o[s * L_old + i]


def discover_kernel(S, L, l, mrr, offset, flag, count, node, mask, delta, newly, errors):
    """Flag the unflagged sets that contain ``node`` (node >= 0) or any v with mask[v] != 0
    (node < 0), and take their members out of the coverage (delta -= 1); ``newly[s]`` = number of
    sets of segment s flagged by this call."""
    T = delta.shape[0]
    for s in prange(S):
        newly[s] = 0
        tid = numba.get_thread_id()
        if tid >= T:
            errors[0] = 1
            continue
        ob = s * L
        seg_base = s * l
        for r in range(count[s]):
            if flag[ob + r] != 0:
                continue
            start = offset[ob + r]
            end = offset[ob + r + 1]
            hit = False
            if node >= 0:
                for p in range(start, end):
                    if mrr[seg_base + p % l] == node:
                        hit = True
                        break
            else:
                for p in range(start, end):
                    if mask[mrr[seg_base + p % l]] != 0:
                        hit = True
                        break
            if hit:
                flag[ob + r] = 1
                newly[s] += 1
                for p in range(start, end):
                    delta[tid, mrr[seg_base + p % l]] -= 1


def trim_kernel(S, L, l, mrr, offset, flag, count, hi, theta_keep, delta):
    """Keep the sets of global index < theta_keep (segment s keeps theta_keep // S + (s <
    theta_keep % S)); the dropped unflagged sets leave the coverage (delta -= 1)."""
    T = delta.shape[0]
    for s in prange(S):
        tid = numba.get_thread_id()
        if tid >= T:
            tid = 0
        keep = theta_keep // S + (1 if s < theta_keep % S else 0)
        ob = s * L
        seg_base = s * l
        for r in range(keep, count[s]):
            if flag[ob + r] == 0:
                for p in range(offset[ob + r], offset[ob + r + 1]):
                    delta[tid, mrr[seg_base + p % l]] -= 1
        if keep < count[s]:
            count[s] = keep
            hi[s] = offset[ob + keep]


def fold_delta(cnt, delta):
    """cnt += sum of the per-thread deltas; deltas back to zero."""
    T = delta.shape[0]
    n = cnt.shape[0]
    for v in prange(n):
        acc = 0
        for t in range(T):
            d = delta[t, v]
            if d != 0:
                acc += d
                delta[t, v] = 0
        if acc != 0:
            cnt[v] += acc


def flag_stats(S, L, offset, flag, count):
    """(flagged sets, entries of the unflagged sets): what an Update re-probes and what it copies."""
    # per-segment counts, summed after the loop: a scalar reduction over this prange fails to
    # compile under Python 3.12 (Numba 0.68 parfor: "unexpected cycle in lookup()")
    polluted = np.zeros(S, dtype=np.int64)
    clean = np.zeros(S, dtype=np.int64)
    for s in prange(S):
        c = 0
        e = 0
        for r in range(count[s]):
            if flag[s * L + r] != 0:
                c += 1
            else:
                e += offset[s * L + r + 1] - offset[s * L + r]
        polluted[s] = c
        clean[s] = e
    return polluted.sum(), clean.sum()


def clear_flags(S, L, flag, count):
    for s in prange(S):
        for r in range(count[s]):
            flag[s * L + r] = 0


def argmax_ratio(cnt, cost, residual, n_res, excluded):
    """argmax over v in residual[:n_res] with excluded[v] == 0 of cnt[v] / cost[v]; ties -> lowest id."""
    chunks = 64
    best_v = np.full(chunks, -1, dtype=np.int64)
    best_r = np.full(chunks, -1.0, dtype=np.float64)
    step_ = (n_res + chunks - 1) // chunks
    for c in prange(chunks):
        bv = -1
        br = -1.0
        for i in range(c * step_, min(n_res, (c + 1) * step_)):
            v = residual[i]
            if excluded[v] != 0:
                continue
            ratio = np.float64(cnt[v]) / np.float64(cost[v])
            if ratio > br or (ratio == br and v < bv):
                br = ratio
                bv = v
        best_v[c] = bv
        best_r[c] = br
    bv = -1
    br = -1.0
    for c in range(chunks):
        if best_v[c] < 0:
            continue
        if best_r[c] > br or (best_r[c] == br and best_v[c] < bv):
            br = best_r[c]
            bv = best_v[c]
    return bv


@njit(inline="always", cache=True)
def _activate_seeds(seeds, active, queue):
    """Mark the not yet active seeds active and list them in ``queue``; returns how many."""
    tail = 0
    for i in range(seeds.shape[0]):
        v = seeds[i]
        if active[v] == 0:
            active[v] = 1
            queue[tail] = v
            tail += 1
    return tail


@njit(cache=True)
def diffuse_ic(seeds, active, out_indptr, out_dst, out_prob, world_seed, queue):
    """Forward IC from ``seeds`` on the world: arc e live iff ic_live(world_seed, e, p_e).
    Activates into ``active``; returns the number of newly active nodes (seeds included), listed
    in ``queue[:count]``."""
    tail = _activate_seeds(seeds, active, queue)
    head = 0
    while head < tail:
        u = queue[head]
        head += 1
        for e in range(out_indptr[u], out_indptr[u + 1]):
            v = out_dst[e]
            if active[v] != 0:
                continue
            if ic_live(world_seed, np.uint64(e), out_prob[e]):
                active[v] = 1
                queue[tail] = v
                tail += 1
    return tail


@njit(cache=True)
def diffuse_lt(seeds, active, out_indptr, out_dst, q_out, acc, world_seed, queue):
    """Forward LT: v activates once the fixed-point weights of its active in-arcs sum to more than
    T_v = lt_threshold(world_seed, v). ``acc`` carries the sums of inactive nodes across rounds."""
    tail = _activate_seeds(seeds, active, queue)
    head = 0
    while head < tail:
        u = queue[head]
        head += 1
        for e in range(out_indptr[u], out_indptr[u + 1]):
            v = out_dst[e]
            if active[v] != 0:
                continue
            acc[v] += q_out[e]
            if acc[v] > lt_threshold(world_seed, np.uint64(v)):
                active[v] = 1
                queue[tail] = v
                tail += 1
    return tail


@njit(parallel=True, cache=True)
def lt_prefix(in_indptr, q_in, out):
    """Inclusive prefix sums of the fixed-point LT weights within each node's in-arcs."""
    n = in_indptr.shape[0] - 1
    for v in prange(n):
        acc = np.int64(0)
        for k in range(in_indptr[v], in_indptr[v + 1]):
            acc += q_in[k]
            out[k] = acc


@njit(parallel=True, cache=True)
def fixed_weights(w, out):
    for i in prange(w.shape[0]):
        out[i] = lt_fixed_weight(w[i])


def total_entries(S, L, offset, count):
    tot = 0
    for s in prange(S):
        tot += offset[s * L + count[s]] - offset[s * L]
    return tot


generate_kernel, generate_kernel_serial = _parallel_and_serial(generate_kernel)
update_init_kernel, update_init_kernel_serial = _parallel_and_serial(update_init_kernel)
update_kernel, update_kernel_serial = _parallel_and_serial(update_kernel)
relayout_kernel, relayout_kernel_serial = _parallel_and_serial(relayout_kernel)
reslot_kernel, reslot_kernel_serial = _parallel_and_serial(reslot_kernel)
discover_kernel, discover_kernel_serial = _parallel_and_serial(discover_kernel)
fold_delta, fold_delta_serial = _parallel_and_serial(fold_delta)
trim_kernel, trim_kernel_serial = _parallel_and_serial(trim_kernel)
flag_stats, flag_stats_serial = _parallel_and_serial(flag_stats)
clear_flags, clear_flags_serial = _parallel_and_serial(clear_flags)
argmax_ratio, argmax_ratio_serial = _parallel_and_serial(argmax_ratio)
total_entries, total_entries_serial = _parallel_and_serial(total_entries)

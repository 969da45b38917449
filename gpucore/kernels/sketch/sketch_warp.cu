// sketch_warp.cu: DiFuseR's Simulate, Cascade and exact-gain probes with a warp per (vertex, group of 32
// worlds) (our mapping, docs/difuser.md "Kernels"), beside the paper's block per vertex
// (sketch_build.cu, sketch_select.cu), with the same registers and answers.
//
// Why: the paper's mapping gives each vertex a whole block, which walks the vertex's arcs one after
// another and waits at a block barrier; a sweep then costs about as much when nothing changes as when
// everything does (7 ms against 33 ms at YouTube size on an H100), and a traversal whose vertex is
// new in 2 of 1,024 worlds still runs 1,024 threads over its arcs. Here a warp is the unit: lane l
// of item (u, g) handles world j = 32 g + l, warps never wait for one another, and work lists hold
// only what can change.
//
// Groups: G = stride / 32 (stride = the process's worlds, a multiple of 32); an item or queue entry
// x = u * G + g (uint32: the driver checks n * G < 2^32).
// Live bits (when memory allows; `use_bits`): bits[g * m + e] holds arc e's coins in the 32 worlds
// of group g (bit l: world 32 g + l), computed once per solve by sk_live_bits with the same sk_live
// test, so a kernel reads one broadcast word per arc instead of hashing a coin per world, and skips
// an arc live in none of the group's worlds (or of its active ones) without loading a register.
//   sk_live_bits  the live bits of every (group, arc).
//   sk_world_counts  counts[j] += the set bits of world j over a (vertex, group) bitmap (a probe's marks).
// Anchored probes (a batch of candidates on the same registers): the batch's first candidate a is
// probed in full and its marks kept (`anchor_marks`). A later candidate b that reaches a in world j
// while a reached b there (bit j of anchor_marks[b]) has exactly a's reach in world j: the world is
// `done` (bit set), its exploration stops, and the host takes a's count for it.
//   sk_sweep   one pull sweep of Algorithm 2 in place over the vertices of `list` (all n when `all`):
//              M_u[j] = max(M_u[j], M_v[j]) over the out-arcs u -> v live in j, visited registers
//              untouched; registers are never written with atomics (they only grow, a stale read
//              is repaired by a later sweep). A vertex whose registers grew is appended once to
//              `changed` (a stamp per vertex holds the last sweep that appended it).
//   sk_stale   the next sweep's list: every u with an out-neighbour in `changed` (in-CSR of the local
//              arcs), each once (a second stamp). Only they can grow: the others read final values.
//   sk_cascade_warp, sk_probe_warp  one level of the multi-world BFS from a seed (registers := -1)
//              or from a candidate (bits of `marks`, the exact marginal gain), over queue entries
//              (v, g): `fresh[x]` holds the worlds of the group where v was newly reached; the warp
//              takes them (atomicExch) and explores those worlds only. A warp that reaches v in new
//              worlds of group g ORs them into fresh[v * G + g] and appends the entry unless this level
//              already holds it (stamp per entry, atomicMax with the level number). Every fresh bit is
//              taken by a later entry, so each (vertex, world) is explored once.
#include "gc_loops.cuh"
#include "sketch_common.cuh"

extern "C" __global__ void sk_live_bits(const unsigned int* __restrict__ words,
                                        const unsigned int* __restrict__ thresholds,
                                        const gc_u64* __restrict__ live_keys, int keyed, gc_i64 m, gc_i64 groups,
                                        unsigned int* __restrict__ bits) {
    GC_FOR_GRID(i, 0, m * groups) {
        const gc_i64 g = i / m, e = i - g * m;
        const gc_u64 word = words[e];
        const unsigned int w = thresholds[e];
        unsigned int out = 0;
        for (int l = 0; l < 32; ++l) out |= (sk_live(keyed, live_keys[g * 32 + l], word, w) ? 1u : 0u) << l;
        bits[i] = out;
    }
}

// The worlds of `todo` (a mask of the group's lanes) where arc e is live: from the table, or from the
// coins of those lanes (a warp collective).
__device__ __forceinline__ unsigned int sk_arc_bits(const unsigned int* __restrict__ bits, int use_bits, gc_i64 m,
                                                    gc_i64 g, gc_i64 e, const unsigned int* __restrict__ words,
                                                    const unsigned int* __restrict__ thresholds, gc_u64 key, int keyed,
                                                    unsigned int todo) {
    if (use_bits) return bits[g * m + e] & todo;
    return __ballot_sync(GC_FULL_MASK, ((todo >> gc_lane()) & 1u) && sk_live(keyed, key, words[e], thresholds[e]));
}

// With live bits: the largest register of an out-neighbour of u in this lane's world over the arcs
// [beg, end) live in it, at least `best`; an arc live in none of the group's worlds is skipped.
__device__ __forceinline__ signed char sk_pull_bits(const int* __restrict__ dst, const unsigned int* __restrict__ bits,
                                                    gc_i64 m, gc_i64 g, const signed char* registers, gc_i64 stride,
                                                    gc_i64 j, gc_i64 beg, gc_i64 end, signed char best) {
    const unsigned int me = 1u << gc_lane();
    const unsigned int* row = bits + g * m;
    for (gc_i64 e = beg; e < end; ++e) {
        const unsigned int w = row[e];
        if (w & me) {
            const signed char mv = registers[(gc_i64)dst[e] * stride + j];
            best = mv > best ? mv : best;
        }
    }
    return best;
}

// Without live bits: the same from the coins. Four arcs at a time: their targets and registers are
// loaded before any coin (a coin costs a 64-bit hash under keyed sampling).
__device__ __forceinline__ signed char sk_pull(const int* __restrict__ dst, const unsigned int* __restrict__ words,
                                               const unsigned int* __restrict__ thresholds, gc_u64 key, int keyed,
                                               const signed char* registers, gc_i64 stride, gc_i64 j, gc_i64 beg,
                                               gc_i64 end, signed char best) {
    gc_i64 e = beg;
    for (; e + 4 <= end; e += 4) {
        signed char mv[4];
#pragma unroll
        for (int t = 0; t < 4; ++t) mv[t] = registers[(gc_i64)dst[e + t] * stride + j];
#pragma unroll
        for (int t = 0; t < 4; ++t)
            if (mv[t] > best && sk_live(keyed, key, words[e + t], thresholds[e + t])) best = mv[t];
    }
    for (; e < end; ++e) {
        const signed char mv = registers[(gc_i64)dst[e] * stride + j];
        if (mv > best && sk_live(keyed, key, words[e], thresholds[e])) best = mv;
    }
    return best;
}

// Append item x to list (size *size) unless stamp[x] already holds tag; lane-local (no collective).
template <typename T>
__device__ __forceinline__ void sk_append_once(int* __restrict__ stamp, int tag, T x, T* __restrict__ list,
                                               int* __restrict__ size) {
    if (atomicMax(&stamp[x], tag) < tag) list[atomicAdd(size, 1)] = x;
}

extern "C" __global__ void sk_sweep(const gc_i64* __restrict__ indptr, const int* __restrict__ dst,
                                    const unsigned int* __restrict__ words,
                                    const unsigned int* __restrict__ thresholds,
                                    const gc_u64* __restrict__ live_keys, int keyed,
                                    const unsigned int* __restrict__ bits, int use_bits, gc_i64 m,
                                    signed char* registers, gc_i64 n, gc_i64 stride, const int* __restrict__ list,
                                    const int* __restrict__ list_size, int all, int* __restrict__ changed,
                                    int* __restrict__ changed_size, int* __restrict__ changed_stamp, int tag) {
    const gc_i64 groups = stride >> 5;
    const gc_i64 count = all ? n : (gc_i64)*list_size;
    GC_FOR_GRID_WARPS(item, 0, count * groups) {  // warp-uniform
        const gc_i64 at = item / groups;
        const int u = all ? (int)at : list[at];
        const gc_i64 g = item - at * groups, j = g * 32 + gc_lane();
        signed char* mine = registers + (gc_i64)u * stride + j;
        const signed char cur = *mine;
        signed char best = cur;
        if (cur != SK_VISITED) {
            best = use_bits ? sk_pull_bits(dst, bits, m, g, registers, stride, j, indptr[u], indptr[u + 1], cur)
                        : sk_pull(dst, words, thresholds, live_keys[j], keyed, registers, stride, j, indptr[u],
                                  indptr[u + 1], cur);
            if (best != cur) *mine = best;
        }
        if (__any_sync(GC_FULL_MASK, best != cur) && gc_lane() == 0)
            sk_append_once(changed_stamp, tag, u, changed, changed_size);
    }
}

extern "C" __global__ void sk_stale(const gc_i64* __restrict__ in_indptr, const int* __restrict__ in_src,
                                    const int* __restrict__ changed, const int* __restrict__ changed_size,
                                    int* __restrict__ stale_stamp, int tag, int* __restrict__ list,
                                    int* __restrict__ list_size) {
    GC_FOR_GRID_WARPS(i, 0, *changed_size) {
        const int v = changed[i];
        GC_FOR_WARP(a, in_indptr[v], in_indptr[v + 1]) sk_append_once(stale_stamp, tag, in_src[a], list, list_size);
    }
}

// Lane 0 offers the worlds `bits` of entry x = v * G + g, newly reached: ORed into fresh[x], and x
// appended to the next queue unless this level already holds it.
__device__ __forceinline__ void sk_offer(unsigned int x, unsigned int bits, unsigned int* __restrict__ fresh,
                                         int* __restrict__ stamp, int level, unsigned int* __restrict__ next,
                                         int* __restrict__ next_size) {
    atomicOr(&fresh[x], bits);
    sk_append_once(stamp, level, x, next, next_size);
}

// Every lane gets the worlds of entry x that lane 0 takes from fresh[x] (atomicExch), less those of
// group g marked in `done` (when not null, read as it is now: a stale read costs work, not truth).
__device__ __forceinline__ unsigned int sk_take(unsigned int* __restrict__ fresh, unsigned int x,
                                                const unsigned int* done, unsigned int g) {
    unsigned int todo = 0;
    if (gc_lane() == 0) {
        todo = atomicExch(&fresh[x], 0u);
        if (done) todo &= ~*(const volatile unsigned int*)&done[g];
    }
    return __shfl_sync(GC_FULL_MASK, todo, 0);
}

extern "C" __global__ void sk_cascade_warp(const gc_i64* __restrict__ indptr, const int* __restrict__ dst,
                                           const unsigned int* __restrict__ words,
                                           const unsigned int* __restrict__ thresholds,
                                           const gc_u64* __restrict__ live_keys, int keyed,
                                           const unsigned int* __restrict__ bits, int use_bits, gc_i64 m,
                                           signed char* registers, gc_i64 stride, unsigned int* __restrict__ fresh,
                                           const unsigned int* __restrict__ queue, gc_i64 queued,
                                           unsigned int* __restrict__ next, int* __restrict__ next_size,
                                           int* __restrict__ stamp, int level) {
    const unsigned int groups = (unsigned int)(stride >> 5);
    const int lane = gc_lane();
    GC_FOR_GRID_WARPS(i, 0, queued) {  // warp-uniform
        const unsigned int x = queue[i];
        const unsigned int u = x / groups, g = x - u * groups;
        const unsigned int todo = sk_take(fresh, x, nullptr, g);  // the worlds of the group where u is new
        if (!todo) continue;  // warp-uniform
        const gc_i64 j = (gc_i64)g * 32 + lane;
        const gc_u64 key = live_keys[j];
        for (gc_i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            const unsigned int live = sk_arc_bits(bits, use_bits, m, g, e, words, thresholds, key, keyed, todo);
            if (!live) continue;  // warp-uniform
            const int v = dst[e];
            bool flag = false;
            if ((live >> lane) & 1u) {
                signed char* r = registers + (gc_i64)v * stride + j;
                if (*r != SK_VISITED) {
                    *r = SK_VISITED;
                    flag = true;
                }
            }
            const unsigned int reached = __ballot_sync(GC_FULL_MASK, flag);
            if (reached && lane == 0) sk_offer((unsigned int)v * groups + g, reached, fresh, stamp, level, next, next_size);
        }
    }
}

extern "C" __global__ void sk_probe_warp(const gc_i64* __restrict__ indptr, const int* __restrict__ dst,
                                         const unsigned int* __restrict__ words,
                                         const unsigned int* __restrict__ thresholds,
                                         const gc_u64* __restrict__ live_keys, int keyed,
                                         const unsigned int* __restrict__ bits, int use_bits, gc_i64 m,
                                         const signed char* __restrict__ registers, gc_i64 stride,
                                         unsigned int* marks, unsigned int* __restrict__ fresh,
                                         const unsigned int* __restrict__ queue, gc_i64 queued,
                                         unsigned int* __restrict__ next, int* __restrict__ next_size,
                                         int* __restrict__ stamp, int level, unsigned long long* __restrict__ gain,
                                         gc_i64 start, gc_i64 anchor, const unsigned int* __restrict__ anchor_marks,
                                         unsigned int* done) {
    const unsigned int groups = (unsigned int)(stride >> 5);
    const int lane = gc_lane();
    unsigned long long found = 0;  // lane 0's new bits, added to *gain once per warp
    GC_FOR_GRID_WARPS(i, 0, queued) {  // warp-uniform
        const unsigned int x = queue[i];
        const unsigned int u = x / groups, g = x - u * groups;
        const unsigned int todo = sk_take(fresh, x, anchor >= 0 ? done : nullptr, g);  // new, not done
        if (!todo) continue;  // warp-uniform
        const gc_i64 j = (gc_i64)g * 32 + lane;
        const gc_u64 key = live_keys[j];
        for (gc_i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            const unsigned int live = sk_arc_bits(bits, use_bits, m, g, e, words, thresholds, key, keyed, todo);
            if (!live) continue;  // warp-uniform
            const int v = dst[e];
            const unsigned int y = (unsigned int)v * groups + g;
            const bool flag = ((live >> lane) & 1u) && !((marks[y] >> lane) & 1u) &&
                              registers[(gc_i64)v * stride + j] != SK_VISITED;
            const unsigned int reached = __ballot_sync(GC_FULL_MASK, flag);
            if (reached && lane == 0) {
                const unsigned int added = reached & ~atomicOr(&marks[y], reached);
                if (added) {
                    found += (unsigned long long)__popc(added);
                    if ((gc_i64)v == anchor) {  // b reached a: the worlds where a reached b are done
                        const unsigned int same = added & anchor_marks[(gc_u64)start * groups + g];
                        if (same) atomicOr(&done[g], same);
                    }
                    sk_offer(y, added, fresh, stamp, level, next, next_size);
                }
            }
        }
    }
    if (lane == 0 && found) atomicAdd(gain, found);
}

// counts[32 g + l] += the vertices whose word of group g in `bitmap` has bit l set: a warp per group
// and run of SK_COUNT_RUN x 32 vertices, one ballot per bit.
#define SK_COUNT_RUN 64
extern "C" __global__ void sk_world_counts(const unsigned int* __restrict__ bitmap, gc_i64 n, gc_i64 groups,
                                           unsigned long long* __restrict__ counts) {
    const int lane = gc_lane();
    const gc_i64 span = 32 * SK_COUNT_RUN, runs = (n + span - 1) / span;
    GC_FOR_GRID_WARPS(item, 0, groups * runs) {  // warp-uniform
        const gc_i64 g = item / runs, v0 = (item - g * runs) * span;
        unsigned long long mine = 0;  // lane l: world 32 g + l
        for (gc_i64 v = v0 + lane; v < v0 + span && v - lane < n; v += 32) {
            const unsigned int w = v < n ? bitmap[v * groups + g] : 0u;
            for (int b = 0; b < 32; ++b) {
                const int c = __popc(__ballot_sync(GC_FULL_MASK, (w >> b) & 1u));
                if (lane == b) mine += (unsigned long long)c;
            }
        }
        if (mine) atomicAdd(&counts[g * 32 + lane], mine);
    }
}

// The probe's start: marks and fresh bits of v = the worlds where v is not visited (its own gain),
// and the queue entries (v, g) for every group (an entry without fresh bits is skipped).
extern "C" __global__ void sk_probe_start_warp(const signed char* __restrict__ registers, gc_i64 stride, gc_i64 v,
                                               unsigned int* __restrict__ marks, unsigned int* __restrict__ fresh,
                                               unsigned int* __restrict__ queue,
                                               unsigned long long* __restrict__ gain) {
    const gc_i64 groups = stride >> 5;
    GC_FOR_GRID_WARPS(g, 0, groups) {
        const unsigned int bits = __ballot_sync(GC_FULL_MASK, registers[v * stride + g * 32 + gc_lane()] != SK_VISITED);
        if (gc_lane() == 0) {
            const unsigned int x = (unsigned int)(v * groups + g);
            marks[x] = bits;
            fresh[x] = bits;
            queue[g] = x;
            if (bits) atomicAdd(gain, (unsigned long long)__popc(bits));
        }
    }
}

// The cascade's start: v's registers := -1 in every world, fresh bits of all of them, one entry per group.
extern "C" __global__ void sk_cascade_start_warp(signed char* registers, gc_i64 stride, gc_i64 v,
                                                 unsigned int* __restrict__ fresh, unsigned int* __restrict__ queue) {
    const gc_i64 groups = stride >> 5;
    GC_FOR_GRID_WARPS(g, 0, groups) {
        registers[v * stride + g * 32 + gc_lane()] = SK_VISITED;
        if (gc_lane() == 0) {
            const unsigned int x = (unsigned int)(v * groups + g);
            fresh[x] = GC_FULL_MASK;
            queue[g] = x;
        }
    }
}

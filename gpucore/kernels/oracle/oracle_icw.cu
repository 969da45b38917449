// oracle_icw.cu: forward IC Monte-Carlo of the oracle, warp-cooperative expansion (variants "warp"
// and "async" of gpucore/oracle/gpu.py; the original level-synchronous kernels are oracle_ic.cu).
//
// Semantics are those of oracle_ic.cu (docs/oracle.md): simulation 64 w + j has first link
// h1[64 w + j] = mix(world); arc k is live in it iff (step(h1, k) >> 11) < ceil(p_k 2^53). The
// activated set is everything reachable from the seeds over live arcs: order-independent, so any
// schedule that expands every (simulation, node) activation exactly once gives the CPU's sets.
//
// State: visited[w * n + v] bit j = v active in simulation 64 w + j (bits only ever set, by
// atomicOr; the thread whose atomicOr sets a bit "claims" it and is the only one to push it).
// An entry is (key, mask) with key = (w << 32) | v: expand node v for the simulations of word w
// whose bits are in mask.
//
// Expansion (oicw_expand): a warp takes up to 32 entries (one per lane), scans their out-degrees
// and walks the concatenated arc list 32 arcs at a time, every lane finding the entry that owns
// its arc by a binary search over the scan (shuffles). So a warp is balanced whatever the degrees
// and reads each adjacency with consecutive lanes. Per arc, the coins of the entry's simulations
// are drawn FIRST (the hash is cheap, a random visited read is not); only a live arc reads its
// target and touches visited (a plain read that may be stale, then atomicOr, which decides).
// Pushes are staged per warp in shared memory and reserved with one atomicAdd per flush.
//
// "warp" (oracle_icw_level): level-synchronous like oracle_ic.cu: entries of a level are keys with
// their masks in cur_mask (read and zeroed by the expanding lane), new bits are merged into
// next_mask and a key is enqueued by the claim that makes its next_mask non-zero (once per level).
//
// "async" (oracle_icw_async): one persistent launch, no levels. Entries live in a linear queue of
// `capacity` 16-byte slots {key, mask}; mask == 0 means "not yet written" (the host zeroes the
// queue). Counters (u64, separate 128-byte lines of ctl): HEAD tickets handed out, TAIL slots
// reserved, DONE entries expanded, FLAG overflow. Protocol (see docs/oracle.md section 7):
//  - a warp takes 32 tickets with atomicAdd(HEAD, 32) only when it holds no pending ticket;
//  - a ticket t < min(TAIL, capacity) is reserved: its producer writes key, fences, writes mask,
//    with no wait in between, so it becomes readable in bounded time;
//  - the warp expands those of its tickets whose mask is readable (relaxed load, then a fence
//    before reading keys), never waiting for the others; pushes go through the stage and a flush
//    (atomicAdd TAIL, keys, fence, masks); a slot t >= capacity does not exist: its bits are ORed
//    into pend[w * n + v] and FLAG is set (the host moves pend into the queue and relaunches);
//  - a warp adds the number of entries it expanded to DONE only when it is about to wait or exit,
//    after a fence that orders its TAIL reservations before that addition;
//  - a waiting warp polls its lowest pending ticket; it exits when DONE == min(TAIL, capacity)
//    (DONE read before TAIL): then every reserved entry was expanded, none is in flight, so no
//    entry can ever appear again. Tickets at or above capacity are never waited for.
// No wait depends on a block that has not started, so blocks need not be co-resident, and the
// sequential-block schedule of gpucore/oracle/emulator.py is a legal one (its warps interleave).
#include "gc_loops.cuh"
#include "gc_random.cuh"

#define OICW_STAGE 64      // staged pushes per warp (>= 32)
#define OICW_MAX_WARPS 8   // warps per block (block <= 256 threads)
#define OICW_HEAD 0
#define OICW_TAIL 16
#define OICW_DONE 32
#define OICW_FLAG 48
#define OICW_ERR 49    // set by a warp whose wait saw no progress for ctl[OICW_LIMIT] ns (watchdog)
#define OICW_LIMIT 50  // watchdog in ns (0: none), written by the host
#define OICW_SPIN_BASE 51  // wait: ns per batch of 32 tickets between the awaited one and TAIL (0: default)
#define OICW_SPIN_MAX 52   // wait: longest sleep in ns (0: default)
#define OICW_CTL_WORDS 64
#define OICW_SPIN_SHORT 64       // ns: the awaited slot is reserved, its producer is writing it
#define OICW_SPIN_BASE_NS 128    // defaults of ctl[OICW_SPIN_BASE], ctl[OICW_SPIN_MAX]
#define OICW_SPIN_MAX_NS 8192

#if defined(OIC_EMULATOR)
// Sequential emulation: every access is atomic; oc_preempt() may switch to another thread there.
#define OICW_PREEMPT() oc_preempt()
__device__ __forceinline__ gc_u64 oicw_ld(const gc_u64* p) { oc_preempt(); return *(const volatile gc_u64*)p; }
__device__ __forceinline__ void oicw_st(gc_u64* p, gc_u64 v) { oc_preempt(); *(volatile gc_u64*)p = v; }
__device__ __forceinline__ void oicw_pause(unsigned) { oc_yield(); }
__device__ __forceinline__ void oicw_fence() { oc_preempt(); }
static gc_u64 oicw_ticks = 0;
__device__ __forceinline__ gc_u64 oicw_clock() { return ++oicw_ticks; }  // one tick per poll
#else
#define OICW_PREEMPT() ((void)0)
// Morally strong (relaxed, gpu scope) accesses: they are not served from a stale L1 line.
__device__ __forceinline__ gc_u64 oicw_ld(const gc_u64* p) {
    gc_u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void oicw_st(gc_u64* p, gc_u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void oicw_pause(unsigned ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }
// Acquire-release fence at gpu scope: enough for the message passing of the queue (writer: data,
// fence, flag; reader: flag, fence, data) and for reading DONE before TAIL.
__device__ __forceinline__ void oicw_fence() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ gc_u64 oicw_clock() {
    gc_u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif


// uniform(h) < p  <=>  (h >> 11) < ceil(p 2^53), both sides exact (see oracle_ic.cu).
__device__ __forceinline__ gc_u64 oicw_live_bound(float p) {
    if (!(p > 0.0f)) return 0ULL;
    if (p >= 1.0f) return 9007199254740992ULL;
    return (gc_u64)ceil((double)p * 9007199254740992.0);
}

struct OicwGraph {
    const gc_i64* indptr;
    const int* dst;
    const float* prob;
    gc_i64 n;
    const gc_u64* h1;
    gc_u64* visited;
};

// Expand with the whole warp the entries of the lanes with have = true (node u of word w, the
// simulations in mask). Must be called by all 32 lanes (warp-uniform control flow); it calls
// push(claimed, key, y) with all 32 lanes once per 32 arcs (claimed == 0: nothing to push).
template <class Push>
__device__ void oicw_expand(const OicwGraph& g, bool have, gc_u64 w, gc_i64 u, gc_u64 mask, Push& push) {
    const int lane = gc_lane();
    gc_i64 begin = 0, deg = 0;
    if (have) {
        begin = g.indptr[u];
        deg = g.indptr[u + 1] - begin;
    }
    const gc_i64 incl = gc_warp_inclusive_sum(deg);  // inclusive scan of the degrees over the lanes
    const gc_i64 total = __shfl_sync(GC_FULL_MASK, incl, 31);
    const gc_i64 shift = begin - (incl - deg);  // arc a of the concatenation owned by this lane: shift + a
    const unsigned w32 = (unsigned)w;
    for (gc_i64 base = 0; base < total; base += 32) {
        const gc_i64 a = base + lane;
        int o = 0;  // owner: the number of lanes whose inclusive scan is <= a (< 32 when a < total)
        for (int s = 16; s > 0; s >>= 1) {
            const gc_i64 probe = __shfl_sync(GC_FULL_MASK, incl, o + s - 1);
            if (probe <= a) o += s;
        }
        const gc_i64 shift_o = __shfl_sync(GC_FULL_MASK, shift, o);
        const gc_u64 mask_o = __shfl_sync(GC_FULL_MASK, mask, o);
        const unsigned w_o = __shfl_sync(GC_FULL_MASK, w32, o);
        gc_u64 claimed = 0ULL, key = 0ULL, y = 0ULL;
        if (a < total) {
            const gc_i64 k = shift_o + a;
            const gc_u64 bound = oicw_live_bound(g.prob[k]);
            if (bound != 0ULL) {
                const gc_u64* h1w = g.h1 + 64ULL * (gc_u64)w_o;
                gc_u64 live = 0ULL, cand = mask_o;
                while (cand != 0ULL) {
                    const int j = __ffsll((long long)cand) - 1;
                    cand &= cand - 1ULL;
                    if ((gc_step(h1w[j], (gc_u64)k) >> 11) < bound) live |= 1ULL << j;
                }
                if (live != 0ULL) {
                    const gc_u64 v = (gc_u64)(unsigned)g.dst[k];
                    y = (gc_u64)w_o * (gc_u64)g.n + v;
                    key = ((gc_u64)w_o << 32) | v;
                    // A stale read only lacks bits (they are never cleared): then atomicOr decides.
                    if ((live & ~g.visited[y]) != 0ULL) {
                        OICW_PREEMPT();
                        claimed = live & ~atomicOr(&g.visited[y], live);
                    }
                }
            }
        }
        push(claimed, key, y);
    }
}

// ------------------------------------------------------------------------------------------
// "warp": level-synchronous.

struct OicwLevelPush {
    gc_u64* next_mask;
    gc_u64* queue_out;
    gc_u64* cnt_out;
    gc_u64* stage;  // this warp's OICW_STAGE keys in shared memory
    int count;      // warp-uniform

    __device__ void flush() {
        __syncwarp();
        if (count != 0) {
            gc_u64 base = 0ULL;
            if (gc_lane() == 0) base = atomicAdd(cnt_out, (gc_u64)count);
            base = __shfl_sync(GC_FULL_MASK, base, 0);
            GC_FOR_WARP(i, 0, count) queue_out[base + (gc_u64)i] = stage[i];
            count = 0;
        }
        __syncwarp();
    }
    __device__ void operator()(gc_u64 claimed, gc_u64 key, gc_u64 y) {
        // The claim that turns next_mask[y] non-zero enqueues key, once per level.
        const bool first = claimed != 0ULL && atomicOr(&next_mask[y], claimed) == 0ULL;
        const unsigned b = __ballot_sync(GC_FULL_MASK, first);
        if (b == 0u) return;
        const int np = __popc(b);
        if (count + np > OICW_STAGE) flush();
        if (first) stage[count + __popc(b & gc_lanes_below())] = key;
        count += np;
    }
};

// One level: expand the keys queue_in[0 .. *cnt_in) (each once per level) with masks cur_mask[x],
// zeroing cur_mask[x]; enqueue the next level's keys into queue_out (counter cnt_out).
__device__ __forceinline__ void oicw_level_body(const gc_i64* __restrict__ out_indptr,
                                                const int* __restrict__ out_dst, const float* __restrict__ out_prob,
                                                gc_i64 n, const gc_u64* __restrict__ h1, gc_u64* visited,
                                                const gc_u64* queue_in, const gc_u64* cnt_in, gc_u64* cur_mask,
                                                gc_u64* next_mask, gc_u64* queue_out, gc_u64* cnt_out,
                                                gc_u64* stage) {
    const OicwGraph g{out_indptr, out_dst, out_prob, n, h1, visited};
    OicwLevelPush push{next_mask, queue_out, cnt_out, stage + gc_warp() * OICW_STAGE, 0};
    const gc_u64 count = *cnt_in;
    GC_FOR_GRID_WARP_CHUNKS(b, 0, count) {  // warp-uniform
        const gc_u64 i = (gc_u64)(b + gc_lane());
        const bool have = i < count;
        gc_u64 w = 0ULL, mask = 0ULL;
        gc_i64 u = 0;
        if (have) {
            const gc_u64 key = queue_in[i];
            w = key >> 32;
            u = (gc_i64)(key & 0xFFFFFFFFULL);
            const gc_u64 x = w * (gc_u64)n + (gc_u64)u;
            mask = cur_mask[x];
            cur_mask[x] = 0ULL;  // consumed (x is in queue_in once); it is the next-mask array next level
        }
        oicw_expand(g, have, w, u, mask, push);
    }
    push.flush();
}

#define OICW_LEVEL_PARAMS                                                                                      \
    const gc_i64 *__restrict__ out_indptr, const int *__restrict__ out_dst, const float *__restrict__ out_prob, \
        gc_i64 n, const gc_u64 *__restrict__ h1, gc_u64 *visited, const gc_u64 *queue_in, const gc_u64 *cnt_in,  \
        gc_u64 *cur_mask, gc_u64 *next_mask, gc_u64 *queue_out, gc_u64 *cnt_out
#define OICW_LEVEL_ARGS out_indptr, out_dst, out_prob, n, h1, visited, queue_in, cnt_in, cur_mask, next_mask, queue_out, cnt_out

extern "C" __global__ void oracle_icw_level(OICW_LEVEL_PARAMS) {
    __shared__ gc_u64 stage[OICW_MAX_WARPS * OICW_STAGE];
    oicw_level_body(OICW_LEVEL_ARGS, stage);
}

// The same, compiled for 8 blocks of 256 threads per SM (32 registers: full occupancy, a few spills).
extern "C" __global__ void __launch_bounds__(256, 8) oracle_icw_level8(OICW_LEVEL_PARAMS) {
    __shared__ gc_u64 stage[OICW_MAX_WARPS * OICW_STAGE];
    oicw_level_body(OICW_LEVEL_ARGS, stage);
}

// ------------------------------------------------------------------------------------------
// "async": persistent work queue.

struct OicwQueuePush {
    gc_u64* queue;  // 2 * capacity words: slot t = {key, mask}
    gc_u64 capacity;
    gc_u64* ctl;
    gc_u64* pend;
    gc_u64 n;
    gc_u64* skey;  // this warp's stage in shared memory
    gc_u64* smask;
    int count;  // warp-uniform

    __device__ void flush() {
        __syncwarp();
        if (count != 0) {
            const int lane = gc_lane();
            gc_u64 base = 0ULL;
            if (lane == 0) base = atomicAdd(&ctl[OICW_TAIL], (gc_u64)count);
            base = __shfl_sync(GC_FULL_MASK, base, 0);
            OICW_PREEMPT();
            GC_FOR_WARP(i, 0, count) {
                const gc_u64 t = base + (gc_u64)i;
                if (t < capacity) oicw_st(&queue[2 * t], skey[i]);
            }
            oicw_fence();  // keys before masks: a readable mask means a readable key
            GC_FOR_WARP(i, 0, count) {
                const gc_u64 t = base + (gc_u64)i;
                if (t < capacity) {
                    oicw_st(&queue[2 * t + 1], smask[i]);
                } else {  // no such slot: keep the bits for the host's refill
                    const gc_u64 key = skey[i];
                    atomicOr(&pend[(key >> 32) * n + (key & 0xFFFFFFFFULL)], smask[i]);
                    oicw_st(&ctl[OICW_FLAG], 1ULL);
                }
            }
            count = 0;
        }
        __syncwarp();
    }
    __device__ void operator()(gc_u64 claimed, gc_u64 key, gc_u64) {
        const unsigned b = __ballot_sync(GC_FULL_MASK, claimed != 0ULL);
        if (b == 0u) return;
        const int np = __popc(b);
        if (count + np > OICW_STAGE) flush();
        if (claimed != 0ULL) {
            const int at = count + __popc(b & gc_lanes_below());
            skey[at] = key;
            smask[at] = claimed;
        }
        count += np;
    }
};

// Lane 0 of a warp whose tickets are all unreadable waits for ticket `low` (its lowest pending
// one). Returns 1 when its slot became readable, 2 when the work is finished, 3 when neither TAIL
// nor DONE moved for ctl[OICW_LIMIT] nanoseconds (a watchdog against a broken protocol; 0: none).
// It polls the slot every round and the shared counters every 4th round (they are hot lines);
// it sleeps ctl[OICW_SPIN_BASE] ns per batch of 32 tickets between `low` and TAIL, at most
// ctl[OICW_SPIN_MAX] ns (0: the compiled defaults).
__device__ __noinline__ int oicw_wait(const gc_u64* queue, gc_u64 capacity, gc_u64* ctl, gc_u64 low) {
    gc_u64 seen_tail = ~0ULL, seen_done = ~0ULL, since = 0ULL;
    unsigned ns = OICW_SPIN_SHORT;
    for (unsigned round = 0;; ++round) {
        if (oicw_ld(&queue[2 * low + 1]) != 0ULL) return 1;
        if ((round & 3u) == 0u) {
            const gc_u64 tail = oicw_ld(&ctl[OICW_TAIL]);
            gc_u64 done = seen_done;
            ns = OICW_SPIN_SHORT;  // reserved: its producer is writing it
            if (low >= tail) {     // not reserved yet: maybe nothing is left at all
                done = oicw_ld(&ctl[OICW_DONE]);
                oicw_fence();  // DONE before TAIL (see the protocol above)
                const gc_u64 tail2 = oicw_ld(&ctl[OICW_TAIL]);
                if (done == (tail2 < capacity ? tail2 : capacity)) return 2;
                gc_u64 base_ns = oicw_ld(&ctl[OICW_SPIN_BASE]), max_ns = oicw_ld(&ctl[OICW_SPIN_MAX]);
                if (base_ns == 0ULL) base_ns = OICW_SPIN_BASE_NS;
                if (max_ns == 0ULL) max_ns = OICW_SPIN_MAX_NS;
                const gc_u64 batches = (low - tail) >> 5;
                const gc_u64 want = batches >= max_ns / base_ns ? max_ns : base_ns * (batches + 1);
                ns = (unsigned)(want < 1000000ULL ? want : 1000000ULL);
            }
            const gc_u64 limit_ns = oicw_ld(&ctl[OICW_LIMIT]);
            if (limit_ns != 0ULL) {
                const gc_u64 now = oicw_clock();
                if (tail != seen_tail || done != seen_done) {
                    seen_tail = tail;
                    seen_done = done;
                    since = now;
                } else if (now - since > limit_ns) {
                    return 3;
                }
            }
        }
        oicw_pause(ns);
    }
}

// Publish the warp's expanded-entry count after ordering its TAIL reservations before it.
__device__ __forceinline__ void oicw_credit(gc_u64* ctl, gc_u64& credit) {
    oicw_fence();
    __syncwarp();
    if (credit != 0ULL) {
        if (gc_lane() == 0) {
            oicw_fence();
            OICW_PREEMPT();
            atomicAdd(&ctl[OICW_DONE], credit);
        }
        credit = 0ULL;
    }
    __syncwarp();
}

__device__ __forceinline__ void oicw_async_body(const gc_i64* __restrict__ out_indptr,
                                                const int* __restrict__ out_dst, const float* __restrict__ out_prob,
                                                gc_i64 n, const gc_u64* __restrict__ h1, gc_u64* visited,
                                                gc_u64* pend, gc_u64* queue, gc_u64 capacity, gc_u64* ctl,
                                                gc_u64* skey, gc_u64* smask) {
    const OicwGraph g{out_indptr, out_dst, out_prob, n, h1, visited};
    const unsigned warp = (unsigned)gc_warp();
    const int lane = gc_lane();
    OicwQueuePush push{queue, capacity, ctl, pend, (gc_u64)n, skey + warp * OICW_STAGE, smask + warp * OICW_STAGE, 0};
    gc_u64 credit = 0ULL;  // warp-uniform: expanded entries not yet added to DONE
    gc_u64 tick = 0ULL;
    bool pending = false;  // this lane holds ticket `tick`, not yet expanded
    for (;;) {
        unsigned held = __ballot_sync(GC_FULL_MASK, pending);
        if (held == 0u) {
            gc_u64 base = 0ULL;
            if (lane == 0) base = atomicAdd(&ctl[OICW_HEAD], 32ULL);
            base = __shfl_sync(GC_FULL_MASK, base, 0);
            if (base >= capacity) break;  // every later ticket is beyond the queue: nothing to wait for
            tick = base + (gc_u64)lane;
            pending = tick < capacity;
            held = __ballot_sync(GC_FULL_MASK, pending);
        }
        const bool ready = pending && oicw_ld(&queue[2 * tick + 1]) != 0ULL;
        const unsigned rb = __ballot_sync(GC_FULL_MASK, ready);
        if (rb == 0u) {
            push.flush();
            oicw_credit(ctl, credit);
            const gc_u64 low = __shfl_sync(GC_FULL_MASK, tick, __ffs((int)held) - 1);
            int state = 0;
            if (lane == 0) {
                state = oicw_wait(queue, capacity, ctl, low);
                if (state == 3) oicw_st(&ctl[OICW_ERR], 1ULL);
            }
            state = __shfl_sync(GC_FULL_MASK, state, 0);
            if (state >= 2) break;
            continue;
        }
        oicw_fence();  // masks seen readable before their keys are read
        gc_u64 key = 0ULL, mask = 0ULL;
        if (ready) {
            mask = oicw_ld(&queue[2 * tick + 1]);
            key = oicw_ld(&queue[2 * tick]);
            pending = false;
        }
        oicw_expand(g, ready, key >> 32, (gc_i64)(key & 0xFFFFFFFFULL), mask, push);
        push.flush();
        credit += (gc_u64)__popc(rb);
    }
    push.flush();
    oicw_credit(ctl, credit);
}

#define OICW_ASYNC_PARAMS                                                                                      \
    const gc_i64 *__restrict__ out_indptr, const int *__restrict__ out_dst, const float *__restrict__ out_prob, \
        gc_i64 n, const gc_u64 *__restrict__ h1, gc_u64 *visited, gc_u64 *pend, gc_u64 *queue, gc_u64 capacity,  \
        gc_u64 *ctl
#define OICW_ASYNC_ARGS out_indptr, out_dst, out_prob, n, h1, visited, pend, queue, capacity, ctl

// Expand every entry reachable from the queue's initial ctl[TAIL] entries (see the protocol).
extern "C" __global__ void oracle_icw_async(OICW_ASYNC_PARAMS) {
    __shared__ gc_u64 skey[OICW_MAX_WARPS * OICW_STAGE];
    __shared__ gc_u64 smask[OICW_MAX_WARPS * OICW_STAGE];
    oicw_async_body(OICW_ASYNC_ARGS, skey, smask);
}

// The same, compiled for 8 blocks of 256 threads per SM (32 registers: full occupancy, a few spills).
extern "C" __global__ void __launch_bounds__(256, 8) oracle_icw_async8(OICW_ASYNC_PARAMS) {
    __shared__ gc_u64 skey[OICW_MAX_WARPS * OICW_STAGE];
    __shared__ gc_u64 smask[OICW_MAX_WARPS * OICW_STAGE];
    oicw_async_body(OICW_ASYNC_ARGS, skey, smask);
}

// Move the bits kept in pend (slots that did not exist) into the queue from ctl[TAIL] on: a pend
// word becomes the entry {key, bits} and is zeroed if its slot exists; otherwise it stays and
// FLAG is set (another launch and refill will take it).
extern "C" __global__ void oracle_icw_refill(gc_u64* pend, gc_i64 total, gc_i64 n, gc_u64* queue, gc_u64 capacity,
                                             gc_u64* ctl) {
    const int lane = gc_lane();
    GC_FOR_GRID_WARP_CHUNKS(b, 0, total) {  // warp-uniform
        const gc_i64 x = b + lane;
        const gc_u64 m = x < total ? pend[x] : 0ULL;
        const unsigned bal = __ballot_sync(GC_FULL_MASK, m != 0ULL);
        if (bal == 0u) continue;
        gc_u64 base = 0ULL;
        if (lane == 0) base = atomicAdd(&ctl[OICW_TAIL], (gc_u64)__popc(bal));
        base = __shfl_sync(GC_FULL_MASK, base, 0);
        if (m != 0ULL) {
            const gc_u64 t = base + (gc_u64)__popc(bal & gc_lanes_below());
            if (t < capacity) {
                const gc_u64 w = (gc_u64)(x / n);
                queue[2 * t] = (w << 32) | (gc_u64)(x - (gc_i64)w * n);
                queue[2 * t + 1] = m;
                pend[x] = 0ULL;
            } else {
                ctl[OICW_FLAG] = 1ULL;
            }
        }
    }
}

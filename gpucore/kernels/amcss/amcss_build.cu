// amcss_build.cu: MERIT's Generate and Update kernels (paper Algorithms 2 and 5) on the segment layout
// of gpucore/amcss/layout.py; twins of kernels_cpu.generate_kernel / update_kernel (same slot order,
// same guards, same resumable state), the set construction is am_build_set (amcss_common.cuh).
//
// Generate: block b takes segments b, b + grid, ... (grid <= number of bitmaps) and grows each to its
//   share of theta_new sets (theta_new / S + (s < theta_new % S)); the set of global index
//   g = r * S + s gets id id_base + g - theta_prev. A set that would pass the guard (offset[first] + l)
//   stops the segment (status NEED_SPACE, nothing of that set kept); the host enlarges l, relaunches.
// Update: block b of a launch updates segments seg_list[b], seg_list[b + grid], ... (one beta group
//   of the host, 32 * beta threads per block); the sets of a segment are rewritten in slot order
//   after its tail, circularly, as on the CPU; a guard hit saves the state in upd[s] (slot, write
//   position, source start/end/nroots) and lo/hi, and the host resumes after enlarging l.
// Bitmaps: block b uses bitmaps[b * bm_words .. (b + 1) * bm_words) (zero on entry and on exit).
#include "amcss_common.cuh"

extern "C" __global__ void __launch_bounds__(AM_MAX_THREADS) amcss_generate(
    int S, gc_i64 L, gc_i64 l, int* __restrict__ mrr, gc_i64* __restrict__ offset, int* __restrict__ nroots,
    gc_i64* __restrict__ set_id, unsigned char* __restrict__ flag, gc_i64* __restrict__ count, gc_i64* __restrict__ lo,
    gc_i64* __restrict__ hi, signed char* __restrict__ status, gc_i64 theta_prev, gc_i64 theta_new, gc_i64 id_base,
    double k, gc_u64 seed, gc_i64 rnd, int is_lt, const gc_i64* __restrict__ in_indptr, const int* __restrict__ in_src,
    const int* __restrict__ in_eid, const float* __restrict__ in_w, const gc_i64* __restrict__ lt_cum,
    const unsigned char* __restrict__ active, const int* __restrict__ residual, gc_i64 n_res,
    unsigned int* __restrict__ bitmaps, gc_i64 bm_words, int* __restrict__ cnt, int* __restrict__ errors,
    unsigned long long* __restrict__ probes) {
    __shared__ am_shared sh;
    if ((blockDim.x & 31) != 0 || blockDim.x > AM_MAX_THREADS) {
        if (threadIdx.x == 0) atomicAdd(&errors[AM_ERR_BLOCK], 1);
        return;
    }
    const am_graph g =
        am_make_graph(in_indptr, in_src, in_eid, in_w, lt_cum, active, residual, n_res, is_lt, errors, probes);
    unsigned int* bm = bitmaps + (gc_i64)blockIdx.x * bm_words;
    GC_FOR_GRID_BLOCKS(s, 0, S) {
        const gc_i64 ob = (gc_i64)s * L;
        int* seg = mrr + (gc_i64)s * l;
        gc_i64 r1 = count[s];
        const gc_i64 r2 = theta_new / S + ((theta_new % S) > (gc_i64)s ? 1 : 0);
        gc_i64 bw = offset[ob + r1];
        const gc_i64 guard = offset[ob] + l;
        bool failed = false;
        while (r1 < r2) {
            const gc_i64 gi = r1 * S + s;
            const gc_i64 j = id_base + (gi - theta_prev);
            const gc_i64 target = am_root_count(seed, j, k, n_res);
            am_build_set(AM_MODE_FRESH, seg, l, bw, guard, 0, 0, 0, j, target, seed, rnd, g, bm, bm_words, cnt, &sh);
            const int st = sh.st;
            const gc_i64 end = sh.end;
            __syncthreads();
            if (st) {
                failed = true;
                break;
            }
            if (threadIdx.x == 0) {
                set_id[ob + r1] = j;
                nroots[ob + r1] = (int)target;
                flag[ob + r1] = 0;
                offset[ob + r1 + 1] = end;
            }
            r1 += 1;
            bw = end;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            status[s] = failed ? AM_ST_NEED_SPACE : AM_ST_DONE;
            count[s] = r1;
            lo[s] = offset[ob];
            hi[s] = bw;
        }
        __syncthreads();
    }
}

// Start an Update: every segment pending at slot 0, writing after its tail (kernels_cpu.update_init_kernel).
extern "C" __global__ void amcss_update_init(int S, gc_i64 L, const gc_i64* __restrict__ offset,
                                             const int* __restrict__ nroots, const gc_i64* __restrict__ count,
                                             signed char* __restrict__ status, gc_i64* __restrict__ upd) {
    GC_FOR_GRID(s, 0, S) {
        const gc_i64 ob = s * L;
        const gc_i64 r = count[s];
        upd[5 * s + 0] = 0;
        upd[5 * s + 1] = offset[ob + r];
        if (r > 0) {
            upd[5 * s + 2] = offset[ob];
            upd[5 * s + 3] = offset[ob + 1];
            upd[5 * s + 4] = nroots[ob];
            status[s] = AM_ST_PENDING;
        } else {
            status[s] = AM_ST_DONE;
        }
    }
}

// Update the segments seg_list[0 .. nseg) that are pending (block b takes entries b, b + grid, ...).
__device__ void am_update_segment(int s, gc_i64 L, gc_i64 l, int* __restrict__ mrr, gc_i64* __restrict__ offset,
                                  int* __restrict__ nroots, const gc_i64* __restrict__ set_id,
                                  unsigned char* __restrict__ flag, const gc_i64* __restrict__ count,
                                  gc_i64* __restrict__ lo, gc_i64* __restrict__ hi, signed char* __restrict__ status,
                                  gc_i64* __restrict__ upd, double k, gc_u64 seed, gc_i64 rnd, const am_graph& g,
                                  unsigned int* bm, gc_i64 bm_words, int* __restrict__ cnt, am_shared* sh) {
    const gc_i64 ob = (gc_i64)s * L;
    int* seg = mrr + (gc_i64)s * l;
    const gc_i64 r = count[s];
    gc_i64 t = upd[5 * (gc_i64)s + 0];
    gc_i64 bw = upd[5 * (gc_i64)s + 1];
    gc_i64 src_start = upd[5 * (gc_i64)s + 2];
    gc_i64 src_end = upd[5 * (gc_i64)s + 3];
    gc_i64 src_nr = upd[5 * (gc_i64)s + 4];
    __syncthreads();
    bool stopped = false;
    while (t < r) {
        const gc_i64 j = set_id[ob + t];
        gc_i64 guard;
        if (t + 1 < r)
            guard = offset[ob + t + 1] + l;
        else if (t > 0)
            guard = offset[ob] + l;
        else
            guard = bw + l;
        const gc_i64 target = am_root_count(seed, j, k, g.n_res);
        const int mode = flag[ob + t] != 0 ? AM_MODE_POLLUTED : AM_MODE_CLEAN;
        am_build_set(mode, seg, l, bw, guard, src_start, src_end, src_nr, j, target, seed, rnd, g, bm, bm_words, cnt,
                     sh);
        const int st = sh->st;
        const gc_i64 end = sh->end, ms = sh->ms, me = sh->me, mn = sh->mn;
        __syncthreads();
        if (st) {
            if (ms >= 0) {
                src_start = ms;
                src_end = me;
                src_nr = mn;
            }
            if (threadIdx.x == 0) {
                upd[5 * (gc_i64)s + 0] = t;
                upd[5 * (gc_i64)s + 1] = bw;
                upd[5 * (gc_i64)s + 2] = src_start;
                upd[5 * (gc_i64)s + 3] = src_end;
                upd[5 * (gc_i64)s + 4] = src_nr;
                gc_i64 low = src_start;
                if (t + 1 < r) {
                    const gc_i64 o = offset[ob + t + 1];
                    if (o < low) low = o;
                } else if (t > 0) {
                    const gc_i64 o = offset[ob];
                    if (o < low) low = o;
                }
                lo[s] = low;
                hi[s] = bw > src_end ? bw : src_end;
                status[s] = AM_ST_NEED_SPACE;
            }
            stopped = true;
            break;
        }
        if (threadIdx.x == 0) {
            offset[ob + t] = bw;
            nroots[ob + t] = (int)target;
            flag[ob + t] = 0;
        }
        bw = end;
        t += 1;
        __syncthreads();
        if (t < r) {
            src_start = offset[ob + t];
            src_end = offset[ob + t + 1];
            src_nr = nroots[ob + t];
        }
    }
    __syncthreads();
    if (!stopped && threadIdx.x == 0) {
        offset[ob + r] = bw;
        upd[5 * (gc_i64)s + 0] = r;
        lo[s] = offset[ob];
        hi[s] = bw;
        status[s] = AM_ST_DONE;
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(AM_MAX_THREADS) amcss_update(
    const int* __restrict__ seg_list, int nseg, int S, gc_i64 L, gc_i64 l, int* __restrict__ mrr,
    gc_i64* __restrict__ offset, int* __restrict__ nroots, gc_i64* __restrict__ set_id,
    unsigned char* __restrict__ flag, gc_i64* __restrict__ count, gc_i64* __restrict__ lo, gc_i64* __restrict__ hi,
    signed char* __restrict__ status, gc_i64* __restrict__ upd, double k, gc_u64 seed, gc_i64 rnd, int is_lt,
    const gc_i64* __restrict__ in_indptr, const int* __restrict__ in_src, const int* __restrict__ in_eid,
    const float* __restrict__ in_w, const gc_i64* __restrict__ lt_cum, const unsigned char* __restrict__ active,
    const int* __restrict__ residual, gc_i64 n_res, unsigned int* __restrict__ bitmaps, gc_i64 bm_words,
    int* __restrict__ cnt, int* __restrict__ errors, unsigned long long* __restrict__ probes) {
    __shared__ am_shared sh;
    if ((blockDim.x & 31) != 0 || blockDim.x > AM_MAX_THREADS) {
        if (threadIdx.x == 0) atomicAdd(&errors[AM_ERR_BLOCK], 1);
        return;
    }
    const am_graph g =
        am_make_graph(in_indptr, in_src, in_eid, in_w, lt_cum, active, residual, n_res, is_lt, errors, probes);
    unsigned int* bm = bitmaps + (gc_i64)blockIdx.x * bm_words;
    GC_FOR_GRID_BLOCKS(i, 0, nseg) {
        const int s = seg_list[i];
        if (s < 0 || s >= S) continue;
        const int st0 = status[s];
        if (st0 != AM_ST_PENDING && st0 != AM_ST_NEED_SPACE) continue;
        am_update_segment(s, L, l, mrr, offset, nroots, set_id, flag, count, lo, hi, status, upd, k, seed, rnd, g, bm,
                          bm_words, cnt, &sh);
    }
}

// Copy each segment's live logical range [lo, hi) into a collection with longer segments.
extern "C" __global__ void amcss_relayout(int S, gc_i64 l_old, const int* __restrict__ mrr_old, gc_i64 l_new,
                                          int* __restrict__ mrr_new, const gc_i64* __restrict__ lo,
                                          const gc_i64* __restrict__ hi) {
    GC_FOR_GRID_BLOCKS(s, 0, S) {
        const gc_i64 a = lo[s], b = hi[s];
        GC_FOR_BLOCK(p, a, b) mrr_new[s * l_new + p % l_new] = mrr_old[s * l_old + p % l_old];
    }
}

// Copy the per-slot arrays to a layout with more slots per segment.
extern "C" __global__ void amcss_reslot(int S, gc_i64 L_old, gc_i64 L_new, const gc_i64* __restrict__ offset_o,
                                        const int* __restrict__ nroots_o, const gc_i64* __restrict__ set_id_o,
                                        const unsigned char* __restrict__ flag_o, gc_i64* __restrict__ offset_n,
                                        int* __restrict__ nroots_n, gc_i64* __restrict__ set_id_n,
                                        unsigned char* __restrict__ flag_n, const gc_i64* __restrict__ count) {
    GC_FOR_GRID_BLOCKS(s, 0, S) {
        const gc_i64 r = count[s];
        GC_FOR_BLOCK(i, 0, r + 1) {
            offset_n[s * L_new + i] = offset_o[s * L_old + i];
            if (i < r) {
                nroots_n[s * L_new + i] = nroots_o[s * L_old + i];
                set_id_n[s * L_new + i] = set_id_o[s * L_old + i];
                flag_n[s * L_new + i] = flag_o[s * L_old + i];
            }
        }
    }
}

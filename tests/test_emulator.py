"""The generic CUDA-on-CPU harness ``gpucore.kernels.emulator``, on a small test kernel file.

Exact checks against NumPy of warp collectives (full and partial warps), ``__syncthreads``
ordering (and a missing barrier that the harness exposes), static and dynamic shared memory,
atomics incl. 64-bit and CAS, 3-D launches, random schedules; then the errors: argument types,
livelock (switch limit), deadlock, lanes leaving during a collective, mismatched collectives,
``__trap`` and ``assert``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucore.errors import GpucoreError
from gpucore.kernels import emulator as emu

pytestmark = pytest.mark.skipif(not emu.available(), reason="g++ not available for the kernel emulator")

SOURCE = r"""
#define FULL 0xffffffffu

extern "C" __global__ void warp_sum(const int* __restrict__ in, long long n, unsigned long long* out) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(FULL, v, d);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, (unsigned long long)v);
}

extern "C" __global__ void warp_ops(const int* in, unsigned* out) {
    const int t = threadIdx.x, v = in[t];
    unsigned* o = out + 10 * t;
    o[0] = __ballot_sync(FULL, v & 1);
    o[1] = __any_sync(FULL, v == 7);
    o[2] = __all_sync(FULL, v >= 0);
    o[3] = __shfl_sync(FULL, v, 3);
    o[4] = __shfl_up_sync(FULL, v, 1);
    o[5] = __shfl_xor_sync(FULL, v, 5);
    o[6] = __match_any_sync(FULL, v % 3);
    o[7] = __reduce_add_sync(FULL, (unsigned)v);
    o[8] = (unsigned)__reduce_max_sync(FULL, v);
    o[9] = __shfl_sync(FULL, v, 1, 8);  // width 8: lane 1 of each group of 8
}

extern "C" __global__ void partial_ballot(unsigned* out) {
    out[threadIdx.x] = __ballot_sync(FULL, 1);
}

extern "C" __global__ void reverse_block(const int* in, int* out) {
    __shared__ int s[1024];
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    s[t] = in[base + t];
    __syncthreads();
    out[base + t] = s[blockDim.x - 1 - t];
}

extern "C" __global__ void reverse_no_barrier(const int* in, int* out) {
    __shared__ int s[1024];
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    s[t] = in[base + t];
    out[base + t] = s[blockDim.x - 1 - t];
}

extern "C" __global__ void reverse_dynamic(const int* in, int* out, int* untouched) {
    extern __shared__ int dyn[];
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    if (t == 0) untouched[blockIdx.x] = dyn[blockDim.x];  // never written: the 0xA5 fill
    __syncthreads();
    dyn[t] = in[base + t];
    const int odd = __syncthreads_count(in[base + t] & 1);
    out[base + t] = dyn[blockDim.x - 1 - t] + 1000 * odd;
}

extern "C" __global__ void atomics(const int* in, int n, int* i32, unsigned* u32, unsigned long long* u64,
                                   long long* i64, float* f32, double* f64) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int v = in[i];
        atomicAdd(&i32[0], v);
        atomicSub(&i32[1], v);
        atomicMax(&i32[2], v);
        atomicMin(&i32[3], v);
        atomicOr(&u32[0], 1u << (v & 31));
        atomicXor(&u32[1], (unsigned)v);
        atomicInc(&u32[2], 9u);
        atomicAdd(&u64[0], (unsigned long long)v << 33);
        unsigned long long old = u64[1], seen;  // 64-bit maximum by compare-and-swap
        do {
            seen = old;
            const unsigned long long want = (unsigned long long)v > seen ? (unsigned long long)v : seen;
            old = atomicCAS(&u64[1], seen, want);
        } while (old != seen);
        atomicMin(&i64[0], -(long long)v * 1000000007LL);
        atomicMax(&i64[1], (long long)v * 1000000007LL);
        atomicAdd(f32, 0.5f);
        atomicAdd(f64, (double)v);
        __threadfence();
    }
}

extern "C" __global__ void where_am_i(int* out) {
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int* o = out + 6 * (b * blockDim.x * blockDim.y * blockDim.z + t);
    o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
    o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
}

extern "C" __global__ void typed(const long long* a, int n, unsigned m, double x, const void* any, float* out) {
    out[0] = (float)(a[0] + n + m + x) + (any != nullptr);
}

extern "C" __global__ void wait_for_flag(int* flag, int sleep) {
    if (threadIdx.x == 0) {
        if (sleep) { while (atomicAdd(flag, 0) == 0) __nanosleep(100); }
        else { while (atomicAdd(flag, 0) == 0) {} }
    }
}

extern "C" __global__ void mixed_barriers(int* out) {
    if (threadIdx.x == 0) __syncwarp(); else __syncthreads();
    out[threadIdx.x] = 1;
}

extern "C" __global__ void early_return(int* out, unsigned mask) {
    if ((threadIdx.x & 31) < 16) return;
    __syncwarp(mask);
    out[threadIdx.x] = 1;
}

extern "C" __global__ void early_return_block(int* out) {
    if (threadIdx.x == 5) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

extern "C" __global__ void mismatched(unsigned* out) {
    if (threadIdx.x & 1) out[threadIdx.x] = __ballot_sync(FULL, 1); else __syncwarp();
}

extern "C" __global__ void traps(int how) {
    if (threadIdx.x == 3) {
        if (how == 0) __trap();
        assert(how == 0);
    }
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("emu") / "emu_test.cu"
    path.write_text(SOURCE)
    return emu.compile_modules([path])


def i32(a):
    return np.asarray(a, dtype=np.int32)


def test_names_and_caching(lib):
    assert lib.kernel_names[:2] == ("warp_sum", "warp_ops")
    assert emu.kernel_names(lib.sources[0]) == list(lib.kernel_names)
    assert emu.compile_modules(lib.sources) is lib  # cached per process (and on disk)
    assert lib.get_function("warp_sum") is lib.get_function("warp_sum")
    with pytest.raises(emu.EmulatorError, match="no kernel 'nope'"):
        lib.get_function("nope")
    with pytest.raises(GpucoreError, match="no kernel source"):
        emu.compile_modules(["no_such_module"])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_warp_reduction_and_atomic_add(lib, seed):
    rng = np.random.default_rng(seed)
    x = i32(rng.integers(-1000, 1000, 1000))
    out = np.zeros(1, dtype=np.uint64)
    k = lib.kernel("warp_sum", emu.Schedule(seed, preempt=0.5))
    k((5,), (64,), (x, np.int64(len(x)), out))  # grid-stride not used: 320 threads, 1000 values
    assert int(out[0].astype(np.int64)) == int(x[:320].sum())
    out[:] = 0
    k((16,), (64,), (x, np.int64(len(x)), out))
    assert int(out[0].astype(np.int64)) == int(x.sum()) and k.switches > 0 and k.launches == 2


def test_warp_collectives(lib):
    rng = np.random.default_rng(4)
    v = i32(rng.integers(0, 50, 64))
    v[40] = 7
    out = np.zeros(64 * 10, dtype=np.uint32)
    lib.get_function("warp_ops")((1,), (64,), (v, out))
    o = out.reshape(64, 10)
    for w in range(2):
        lanes = np.arange(32)
        vw = v[32 * w:32 * w + 32]
        ow = o[32 * w:32 * w + 32]
        assert (ow[:, 0] == np.sum(((vw & 1) != 0) << lanes.astype(np.uint64))).all()
        assert (ow[:, 1] == int((vw == 7).any())).all() and (ow[:, 2] == 1).all()
        assert (ow[:, 3] == vw[3]).all()
        assert (ow[:, 4] == np.concatenate([vw[:1], vw[:-1]])).all()
        assert (ow[:, 5] == vw[lanes ^ 5]).all()
        for lane in range(32):
            assert ow[lane, 6] == sum(1 << k for k in range(32) if vw[k] % 3 == vw[lane] % 3)
        assert (ow[:, 7] == vw.sum()).all() and (ow[:, 8] == vw.max()).all()
        assert (ow[:, 9] == vw[(lanes & ~7) + 1]).all()


def test_partial_warp(lib):
    out = np.zeros(40, dtype=np.uint32)
    lib.get_function("partial_ballot")(1, 40, (out,))
    assert (out[:32] == 0xFFFFFFFF).all() and (out[32:] == 0xFF).all()


@pytest.mark.parametrize("seed", [0, 7, 8])
def test_syncthreads_orders_shared_memory(lib, seed):
    x = i32(np.arange(3 * 96))
    out = np.zeros_like(x)
    lib.kernel("reverse_block", emu.Schedule(seed))((3,), (96,), (x, out))
    assert np.array_equal(out, x.reshape(3, 96)[:, ::-1].ravel())


def test_missing_barrier_is_exposed(lib):
    x = i32(np.arange(1, 65))
    out = np.zeros_like(x)
    lib.get_function("reverse_no_barrier")((1,), (64,), (x, out))  # round robin: thread 0 reads first
    assert not np.array_equal(out, x[::-1])


def test_dynamic_shared_memory(lib):
    x = i32(np.arange(2 * 64))
    out = np.zeros_like(x)
    untouched = np.zeros(2, dtype=np.int32)
    k = lib.get_function("reverse_dynamic")
    k((2,), (64,), (x, out, untouched), shared_mem=4 * 65)
    want = x.reshape(2, 64)[:, ::-1] + 1000 * (x.reshape(2, 64) & 1).sum(axis=1, keepdims=True)
    assert np.array_equal(out, want.ravel())
    assert (untouched.view(np.uint32) == 0xA5A5A5A5).all()
    with pytest.raises(emu.EmulatorError, match="dynamic shared memory above"):
        k((1,), (64,), (x, out, untouched), shared_mem=emu.MAX_DYNAMIC_SHARED + 1)


@pytest.mark.parametrize("seed", [0, 11])
def test_atomics(lib, seed):
    rng = np.random.default_rng(seed + 5)
    x = i32(rng.integers(0, 5000, 777))
    i32s = i32([0, 0, -(2**31), 2**31 - 1])
    u32s = np.array([0, 0, 0], dtype=np.uint32)
    u64s = np.zeros(2, dtype=np.uint64)
    i64s = np.array([0, 0], dtype=np.int64)
    f32, f64 = np.zeros(1, np.float32), np.zeros(1, np.float64)
    lib.kernel("atomics", emu.Schedule(seed, preempt=0.3))((3,), (64,), (x, np.int32(len(x)), i32s, u32s, u64s,
                                                                       i64s, f32, f64))
    assert i32s.tolist() == [x.sum(), -x.sum(), x.max(), x.min()]
    assert u32s[0] == np.bitwise_or.reduce(np.uint32(1) << (x & 31).astype(np.uint32))
    assert u32s[1] == np.bitwise_xor.reduce(x.astype(np.uint32)) and u32s[2] == len(x) % 10
    assert int(u64s[0]) == (int(x.sum()) << 33) % 2**64 and int(u64s[1]) == x.max()
    assert i64s.tolist() == [-int(x.max()) * 1000000007, int(x.max()) * 1000000007]
    assert f32[0] == 0.5 * len(x) and f64[0] == float(x.sum())


def test_three_dimensional_launch(lib):
    grid, block = (2, 3, 1), (4, 2, 3)
    out = np.full(6 * 6 * 24, -1, dtype=np.int32)
    lib.get_function("where_am_i")(grid, block, (out,))
    o = out.reshape(6, 24, 6)
    for b in range(6):
        for t in range(24):
            assert o[b, t].tolist() == [t % 4, t // 4 % 2, t // 8, b % 2, b // 2 % 3, 0]


def test_argument_types_are_checked(lib):
    k = lib.get_function("typed")
    a, out = np.array([5], dtype=np.int64), np.zeros(1, dtype=np.float32)
    assert k.signature == [(0, 8), (1, 4), (2, 4), (3, 8), (0, 0), (0, 4)]
    k(1, 1, (a, np.int32(2), np.uint32(3), np.float64(0.5), np.zeros(3, np.uint8), out))  # void*: any array
    assert out[0] == 11.5
    cases = [((a.astype(np.int32), np.int32(2), np.uint32(3), np.float64(0.5), a, out),
              "argument 0 is a 4-byte pointer, the kernel wants a 8-byte pointer"),
             ((a, np.int64(2), np.uint32(3), np.float64(0.5), a, out),
              "argument 1 is a 8-byte signed integer, the kernel wants a 4-byte signed integer"),
             ((a, np.int32(2), np.int32(3), np.float64(0.5), a, out),
              "argument 2 is a 4-byte signed integer, the kernel wants a 4-byte unsigned integer"),
             ((a, np.int32(2), np.uint32(3), np.float32(0.5), a, out), "argument 3 is a 4-byte floating point"),
             ((a, np.int32(2), np.uint32(3), np.float64(0.5), a, np.float32(1)), "argument 5 is a 4-byte floating"),
             ((a, 2, np.uint32(3), np.float64(0.5), a, out), "typed scalars"),
             ((a, np.int32(2)), "2 arguments given, the kernel takes 6")]
    for args, message in cases:
        with pytest.raises(emu.EmulatorError, match=message):
            k(1, 1, args)
    with pytest.raises(emu.EmulatorError, match="C-contiguous"):
        k(1, 1, (np.zeros(4, np.int64)[::2], np.int32(2), np.uint32(3), np.float64(0.5), a, out))
    with pytest.raises(emu.EmulatorError, match="out of range"):
        k(1, 1025, (a, np.int32(2), np.uint32(3), np.float64(0.5), a, out))


@pytest.mark.parametrize("sleep", [1, 0])
def test_livelock_is_reported(lib, sleep):
    k = lib.kernel("wait_for_flag", emu.Schedule(switch_limit=20_000))
    flag = np.zeros(1, dtype=np.int32)
    with pytest.raises(emu.EmulatorError, match="switch limit was reached"):
        k(1, 32, (flag, np.int32(sleep)))
    flag[0] = 1
    k(1, 32, (flag, np.int32(sleep)))  # the same harness runs again after a failed launch


def test_barrier_errors(lib):
    out = np.zeros(64, dtype=np.int32)
    with pytest.raises(emu.EmulatorError, match="deadlock"):
        lib.get_function("mixed_barriers")(1, 64, (out,))
    with pytest.raises(emu.EmulatorError, match="a lane left its warp"):
        lib.get_function("early_return")(1, 64, (out, np.uint32(0xFFFFFFFF)))
    lib.get_function("early_return")(1, 64, (out, np.uint32(0xFFFF0000)))  # the mask names the lanes that stay
    assert out.reshape(2, 32)[:, 16:].all() and not out.reshape(2, 32)[:, :16].any()
    with pytest.raises(emu.EmulatorError, match="returned while others waited at __syncthreads"):
        lib.get_function("early_return_block")(1, 64, (out,))
    with pytest.raises(emu.EmulatorError, match="different warp collectives"):
        lib.get_function("mismatched")(1, 32, (out.view(np.uint32),))


def test_trap_and_assert(lib):
    k = lib.get_function("traps")
    with pytest.raises(emu.EmulatorError, match=r"__trap\(\) was called \(block 0, thread 3\)"):
        k(1, 8, (np.int32(0),))
    with pytest.raises(emu.EmulatorError, match=r"assert\(how == 0\) failed at .*emu_test.cu:\d+"):
        k(1, 8, (np.int32(1),))


def test_schedules_are_reproducible(lib):
    x = i32(np.arange(2000) % 17)
    counts = []
    for seed in (5, 5, 6):
        out = np.zeros(1, dtype=np.uint64)
        k = lib.kernel("warp_sum", emu.Schedule(seed, preempt=0.5))
        k(4, 128, (x, np.int64(len(x)), out))
        assert int(out[0]) == int(x[:512].sum())
        counts.append(k.switches)
    assert counts[0] == counts[1]

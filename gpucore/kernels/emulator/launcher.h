// The emulator's launcher: type-checks a launch's arguments against the kernel's C parameters and
// runs its blocks one after another, scheduling the block's threads (round robin or random), with
// errors for deadlocks, livelocks, lanes leaving collectives and bad launch sizes. Placed after the
// kernels of a module by gpucore.kernels.emulator, which adds one emu_launch_<kernel> entry point
// per kernel (extern "C", called through ctypes). Needs prelude.h before it.
// kind: 0 pointer, 1 signed integer, 2 unsigned integer (and bool), 3 floating point, 4 struct;
// size: sizeof of the scalar or of the pointee (0: void*, any array).
template <typename T> static constexpr int emu_kind() {
    return std::is_pointer<T>::value ? 0 : std::is_floating_point<T>::value ? 3 : std::is_class<T>::value ? 4
         : std::is_signed<T>::value ? 1 : 2;
}
template <typename T> static constexpr long long emu_size() {
    if constexpr (std::is_pointer<T>::value) {
        if constexpr (std::is_void<std::remove_cv_t<std::remove_pointer_t<T>>>::value) return 0;
        else return (long long)sizeof(std::remove_pointer_t<T>);
    } else return (long long)sizeof(T);
}
template <typename... A, std::size_t... I>
static void emu_call(void (*f)(A...), void** args, std::index_sequence<I...>) { f(*reinterpret_cast<A*>(args[I])...); }
template <typename... A> struct emu_job {
    void (*f)(A...); void** args;
    static void run(void* p) { auto* j = static_cast<emu_job*>(p); emu_call(j->f, j->args, std::index_sequence_for<A...>{}); }
};
static void (*emu_body)(void*) = nullptr;
static void* emu_body_arg = nullptr;
static void emu_thread_returned() {
    emu_th[emu_cur].state = 2;
    emu_warp& w = emu_warps[emu_cur >> 5];
    const unsigned me = 1u << emu_lane();
    w.exited |= me;
    if (w.arrived != 0u && (w.want & me)) emu_error = EMU_E_LANE;  // its warp waits for it at a collective
    ++emu_returned;
    if (emu_bar.arrived != 0u) emu_error = EMU_E_BLOCK;        // others wait for it at __syncthreads
}
// Bottom frame of every thread's stack: parks (ready for a body), runs one, parks again. A thread
// abandoned by a failed launch is restarted from its park point, whose frame is never left.
static void emu_trampoline(int slot) {
    volatile int t = slot;
    for (;;) {
        if (!_setjmp(emu_th[t].start)) _longjmp(emu_sched, 1);
        emu_body(emu_body_arg);
        emu_thread_returned();
    }
}
static bool emu_new_slot() {
    const int t = emu_slots;
    char* mem = static_cast<char*>(mmap(nullptr, EMU_STACK + 4096, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (mem == MAP_FAILED) return false;
    mprotect(mem, 4096, PROT_NONE);  // guard page: a stack overflow faults instead of corrupting
    ucontext_t uc;
    getcontext(&uc);
    uc.uc_stack.ss_sp = mem + 4096;
    uc.uc_stack.ss_size = EMU_STACK;
    uc.uc_link = nullptr;
    makecontext(&uc, (void (*)())emu_trampoline, 1, t);
    if (!_setjmp(emu_sched)) setcontext(&uc);
    emu_th[t].state = 0;
    emu_slots = t + 1;
    return true;
}
// cfg: grid x y z, block x y z, seed, preempt threshold, switch limit, flags, dynamic shared bytes.
// out: switches, block and thread of a failure. Returns 0, 1 + i (argument i mismatched) or -code.
template <typename... A>
static int emu_launch(void (*f)(A...), const unsigned long long* cfg, void** args, const long long* kinds,
                      const long long* sizes, int nargs, long long* out) {
    out[0] = 0; out[1] = -1; out[2] = -1;
    if (nargs != (int)sizeof...(A)) return -EMU_E_NARGS;
    const long long want_kind[] = {0, (long long)emu_kind<A>()...};
    const long long want_size[] = {0, emu_size<A>()...};
    for (int i = 0; i < nargs; ++i)
        if (kinds[i] != want_kind[i + 1] || (sizes[i] != want_size[i + 1] && !(kinds[i] == 0 && want_size[i + 1] == 0)))
            return 1 + i;
    const unsigned long long gx = cfg[0], gy = cfg[1], gz = cfg[2], bx = cfg[3], by = cfg[4], bz = cfg[5];
    if (!gx || !gy || !gz || !bx || !by || !bz || gx >= (1ULL << 31) || gy > 65535 || gz > 65535 || bz > 64 ||
        bx * by * bz > (unsigned long long)EMU_MAX_THREADS) return -EMU_E_CONFIG;
    if (cfg[10] > sizeof(emu_dynamic_smem)) return -EMU_E_SMEM;
    const unsigned n = (unsigned)(bx * by * bz);
    emu_rng = cfg[6]; emu_preempt_below = cfg[7]; emu_flags = cfg[9];
    const long long limit = (long long)cfg[8];
    while (emu_slots < (int)n) if (!emu_new_slot()) return -EMU_E_CONFIG;
    gridDim = {(unsigned)gx, (unsigned)gy, (unsigned)gz};
    blockDim = {(unsigned)bx, (unsigned)by, (unsigned)bz};
    emu_nthreads = n;
    emu_job<A...> job{f, args};
    emu_body = &emu_job<A...>::run;
    emu_body_arg = &job;
    emu_error = 0; emu_clock = 0;
    volatile long long switches = 0;
    for (unsigned long long b = 0; b < gx * gy * gz; ++b) {
        blockIdx = {(unsigned)(b % gx), (unsigned)(b / gx % gy), (unsigned)(b / (gx * gy))};
        for (unsigned w = 0; w * 32 < n; ++w) {
            const unsigned lanes = n - 32 * w < 32 ? n - 32 * w : 32;
            emu_warps[w].present = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
            emu_warps[w].arrived = emu_warps[w].want = emu_warps[w].exited = 0; emu_warps[w].gen = 0;
        }
        emu_bar = emu_block_barrier{0, 0, 0, 0};
        if (cfg[10]) std::memset(emu_dynamic_smem, 0xA5, cfg[10]);
        for (unsigned t = 0; t < n; ++t) { emu_th[t].state = 0; emu_th[t].wait_gen = nullptr; }
        emu_blocked = 0; emu_returned = 0;
        volatile unsigned alive = n, next = 0;
        while (alive) {
            unsigned t = emu_rng != 0ULL ? (unsigned)(emu_next() % n) : next;
            while (emu_th[t].state == 2 || (emu_th[t].wait_gen && *emu_th[t].wait_gen == emu_th[t].wait_val))
                t = t + 1 == n ? 0 : t + 1;
            emu_cur = (int)t;
            threadIdx = {t % (unsigned)bx, t / (unsigned)bx % (unsigned)by, t / (unsigned)(bx * by)};
            emu_ops = 0;
            if (!_setjmp(emu_sched)) {
                if (emu_th[t].state == 0) { emu_th[t].state = 1; _longjmp(emu_th[t].start, 1); }
                _longjmp(emu_th[t].jb, 1);
            }
            switches = switches + 1;
            if (emu_error) { out[0] = switches; out[1] = (long long)b; out[2] = t; return -emu_error; }
            if (emu_th[t].state == 2) alive = alive - 1;
            next = t + 1 == n ? 0 : t + 1;
            if (switches > limit) { out[0] = switches; out[1] = (long long)b; return -EMU_E_LIMIT; }
            if (alive && emu_blocked == (long long)alive) {
                out[0] = switches; out[1] = (long long)b; return -EMU_E_DEADLOCK;
            }
        }
    }
    out[0] = switches;
    return 0;
}
template <typename... A> static int emu_nargs(void (*)(A...)) { return (int)sizeof...(A); }
template <typename... A> static void emu_describe(void (*)(A...), long long* kinds, long long* sizes) {
    const long long k[] = {0, (long long)emu_kind<A>()...};
    const long long s[] = {0, emu_size<A>()...};
    for (std::size_t i = 0; i < sizeof...(A); ++i) { kinds[i] = k[i + 1]; sizes[i] = s[i + 1]; }
}

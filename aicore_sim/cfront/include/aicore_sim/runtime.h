// aicore-sim's Ascend C shim: the entry runner the simulator calls once per core.
//
// Written for aicore-sim; no vendor code. aicore_sim_init lends the library the callback and
// the argument block; aicore_sim_enter runs one core's copy of a kernel entry on the calling
// thread and says how it ended: 0 returned, 1 the simulator refused a call (its error waits on
// the Python side), 2 a C++ exception left the kernel, 100 + N the kernel raised signal N
// (a crash: SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT), caught so that the simulator can name
// the core and the last instruction instead of dying with it. SIGXCPU is the simulator's own
// watchdog telling a core that has made no Ascend C call for too long to stop (a kernel that
// never returns); it is ignored when it finds the core inside a call.
#pragma once

#include <csetjmp>
#include <csignal>
#include <cstdlib>

#include "aicore_sim/abi.h"

namespace aicore_sim {

inline thread_local sigjmp_buf t_crash;
inline thread_local char t_altstack[1 << 16];
inline struct sigaction g_previous[NSIG];
inline bool g_handlers_installed = false;
constexpr int CRASH_SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGXCPU};

inline void on_crash(int sig, siginfo_t* info, void* uctx) {
    if (t_running && !t_in_callback) {
        t_running = false;
        siglongjmp(t_crash, sig);
    }
    // not a kernel of this library: whoever handled the signal before us does
    const struct sigaction& prev = g_previous[sig];
    if (sig == SIGXCPU && !(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_DFL)
        return;  // the watchdog's stop found no kernel code running: it asks again later
    if (prev.sa_flags & SA_SIGINFO) {
        if (prev.sa_sigaction != nullptr) prev.sa_sigaction(sig, info, uctx);
        return;
    }
    if (prev.sa_handler == SIG_IGN) return;
    if (prev.sa_handler == SIG_DFL) {
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    prev.sa_handler(sig);
}

inline void install_crash_handlers() {
    if (g_handlers_installed) return;
    g_handlers_installed = true;
    for (int sig : CRASH_SIGNALS) {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_crash;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, &g_previous[sig]);
    }
}

typedef uint8_t* A;
// A kernel entry of n GM_ADDR parameters, called with args[0..n).
inline void call_entry(void* fn, int n, A* a) {
#define AICORE_SIM_P(...) reinterpret_cast<void (*)(__VA_ARGS__)>(fn)
    switch (n) {
        case 0: AICORE_SIM_P()(); break;
        case 1: AICORE_SIM_P(A)(a[0]); break;
        case 2: AICORE_SIM_P(A, A)(a[0], a[1]); break;
        case 3: AICORE_SIM_P(A, A, A)(a[0], a[1], a[2]); break;
        case 4: AICORE_SIM_P(A, A, A, A)(a[0], a[1], a[2], a[3]); break;
        case 5: AICORE_SIM_P(A, A, A, A, A)(a[0], a[1], a[2], a[3], a[4]); break;
        case 6: AICORE_SIM_P(A, A, A, A, A, A)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
        case 7: AICORE_SIM_P(A, A, A, A, A, A, A)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
        case 8:
            AICORE_SIM_P(A, A, A, A, A, A, A, A)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
            break;
        case 9:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
            break;
        case 10:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
            break;
        case 11:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]);
            break;
        case 12:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]);
            break;
        case 13:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]);
            break;
        case 14:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12],
             a[13]);
            break;
        case 15:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12],
             a[13], a[14]);
            break;
        case 16:
            AICORE_SIM_P(A, A, A, A, A, A, A, A, A, A, A, A, A, A, A, A)
            (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12],
             a[13], a[14], a[15]);
            break;
        default: std::abort();
    }
#undef AICORE_SIM_P
}

}  // namespace aicore_sim

extern "C" {

__attribute__((visibility("default"), used)) inline void aicore_sim_init(
    aicore_sim::callback_t callback, int64_t* args) {
    aicore_sim::g_callback = callback;
    aicore_sim::g_args = args;
    aicore_sim::install_crash_handlers();
}

__attribute__((visibility("default"), used)) inline int aicore_sim_enter(
    void* entry, int32_t nargs, uint8_t** args, int64_t tiling_key, int64_t block_idx,
    int64_t block_num, uint64_t ub_base) {
    using namespace aicore_sim;
    if (nargs < 0 || nargs > 16) return 3;
    t_tiling_key = tiling_key;
    t_block_idx = block_idx;
    t_block_num = block_num;
    t_ub_base = static_cast<uintptr_t>(ub_base);
    t_calls.clear();  // call ids are the simulator's for this core of this launch
    stack_t ss;
    ss.ss_sp = t_altstack;
    ss.ss_size = sizeof t_altstack;
    ss.ss_flags = 0;
    sigaltstack(&ss, nullptr);
    int sig = sigsetjmp(t_crash, 1);
    if (sig != 0) {
        t_running = false;
        t_in_callback = false;
        return 100 + sig;
    }
    t_running = true;
    int rc = 0;
    try {
        call_entry(entry, nargs, args);
    } catch (const Abort&) {
        rc = 1;
    } catch (...) {
        rc = 2;
    }
    t_running = false;
    return rc;
}
}

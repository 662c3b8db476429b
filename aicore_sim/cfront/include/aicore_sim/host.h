// aicore-sim's CPU-debug harness: the host-side C entry point (tikicpulib.h's GM buffers and
// launches).
//
// Written for aicore-sim; no vendor code. This is a second C ABI, separate from the
// kernel-side one of abi.h: during a launch the simulated cores use abi.h's argument block and
// callback, while the test's own thread waits here inside the host callback. Python lends the
// callback through aicore_sim_host_init; each call passes its own slot array (on the caller's
// stack), so nothing is shared with the cores.
//
// Host calls: ALLOC [size] -> address of a zeroed GM buffer the simulator can map (Python
// owns it and names it gm0, gm1, ...); FREE [address]; LAUNCH [entry name, entry address,
// block dim, tiling key, file, line, message buffer, message size, argument count, the
// GM_ADDR arguments...] -> 0, or non-zero with the reason in the message buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace aicore_sim {
namespace host {

extern "C" {
typedef int64_t (*host_callback_t)(int64_t op, int64_t* slots, int32_t nslots);
}

constexpr int64_t OP_ALLOC = 1;
constexpr int64_t OP_FREE = 2;
constexpr int64_t OP_LAUNCH = 3;
constexpr int MAX_ARGS = 16;
constexpr int MESSAGE_BYTES = 4096;

inline host_callback_t g_host = nullptr;
inline uint64_t g_tiling_key = 0;  // ICPU_SET_TILING_KEY: the key of the next launches

inline int64_t call(int64_t op, int64_t* slots, int32_t n) {
    if (g_host == nullptr) {
        std::fprintf(stderr, "aicore-sim: tikicpulib.h used outside 'aicore-sim ut' (no host "
                             "callback)\n");
        std::abort();
    }
    std::fflush(stdout);  // the test's own output and the simulator's stay in order
    std::fflush(stderr);
    return g_host(op, slots, n);
}

inline void* gm_alloc(size_t size) {
    int64_t s[1] = {static_cast<int64_t>(size)};
    return reinterpret_cast<void*>(call(OP_ALLOC, s, 1));
}

inline void gm_free(void* p) {
    int64_t s[1] = {reinterpret_cast<int64_t>(p)};
    call(OP_FREE, s, 1);
}

template <typename T> inline int64_t as_slot(T* p) {
    return reinterpret_cast<int64_t>(const_cast<void*>(static_cast<const volatile void*>(p)));
}
inline int64_t as_slot(std::nullptr_t) { return 0; }

}  // namespace host
}  // namespace aicore_sim

extern "C" {
// Defined by the test runner (aicore_sim/ut_runner.h): a failure of the running TEST.
void aicore_sim_ut_fail(const char* file, int line, const char* message);

__attribute__((visibility("default"), used)) inline void aicore_sim_host_init(
    aicore_sim::host::host_callback_t callback) {
    aicore_sim::host::g_host = callback;
}
}

namespace aicore_sim {
namespace host {

// One launch of `entry` on `block_dim` cores with the GM_ADDR arguments `args...`; a launch
// the simulator refused or a kernel that failed fails the running TEST (non-fatally, as the
// rest of the TEST still frees its buffers).
template <typename... A>
inline void launch(const char* name, void* entry, uint32_t block_dim, const char* file,
                   int line, A... args) {
    static_assert(sizeof...(A) <= MAX_ARGS, "ICPU_RUN_KF: at most 16 kernel arguments");
    char message[MESSAGE_BYTES];
    message[0] = '\0';
    int64_t s[9 + sizeof...(A) + 1] = {reinterpret_cast<int64_t>(name),
                                       reinterpret_cast<int64_t>(entry),
                                       static_cast<int64_t>(block_dim),
                                       static_cast<int64_t>(g_tiling_key),
                                       reinterpret_cast<int64_t>(file),
                                       static_cast<int64_t>(line),
                                       reinterpret_cast<int64_t>(message),
                                       static_cast<int64_t>(MESSAGE_BYTES),
                                       static_cast<int64_t>(sizeof...(A)),
                                       as_slot(args)...};
    if (call(OP_LAUNCH, s, static_cast<int32_t>(9 + sizeof...(A))) != 0)
        aicore_sim_ut_fail(file, line, message);
}

}  // namespace host
}  // namespace aicore_sim

// aicore-sim's Ascend C shim: the one C ABI every API call crosses into the simulator.
//
// Written for aicore-sim from the public Ascend C API reference and the call sites of the
// kernels it runs; it contains no vendor code. Every shim call packs its arguments, as tagged
// 64-bit slots, into the argument block the simulator lent at load time and calls the one
// callback; the Python package (aicore_sim.ascendc) records, checks and computes, exactly as
// for a kernel written in Python, and answers in the same block.
//
// Slot layout of a call: [0] name of the API item (a string literal's address), [1] the call
// site's key, [2] its file, [3] its function, [4] its line, then the arguments, each a tag
// followed by its value slots (see Tag). The Python side reads the enums of this file (their
// members, in order) so the two never disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

// half: the compiler's IEEE binary16 (conversions round to nearest even).
using half = _Float16;

// bfloat16_t: the top 16 bits of a float; conversion from float rounds to nearest even (NaN
// kept quiet). Only the kernel's own scalar casts use it: tensors' numbers are computed by the
// simulator.
struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    template <typename T, typename = typename std::enable_if<std::is_arithmetic<T>::value>::type>
    constexpr bfloat16_t(T v) : bits(from_float(static_cast<float>(v))) {}
    bfloat16_t(half v) : bits(from_float(static_cast<float>(v))) {}
    operator float() const {
        uint32_t u = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    }
    static constexpr uint16_t from_float(float f) {
        uint32_t u = __builtin_bit_cast(uint32_t, f);
        if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
            return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN stays NaN
        uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
        return static_cast<uint16_t>((u + rounding) >> 16);
    }
    static bfloat16_t from_bits(uint16_t b) {
        bfloat16_t r;
        r.bits = b;
        return r;
    }
};

namespace aicore_sim {

// What follows a tag: INT one int64; FLT one double (bits); BOOL one int64; NUL nothing;
// LOC two (buffer id << 8 | dtype, address << 32 | limit); LOCS three (LOC + element count);
// GLB three (address, dtype | cache mode << 8, element count or -1); ENUM two (enum name,
// value); STRUCT two (struct name, field count) then the fields as tagged values; DTYPE one
// (dtype); HANDLE one (object id); STR one (string address); LIST one (count) then the items.
enum Tag : int64_t { TAG_NONE, INT, FLT, BOOL, NUL, LOC, LOCS, GLB, ENUM, STRUCT, DTYPE, HANDLE,
                     STR, LIST };

// Element types, as codes the Python side maps to numpy dtypes: DT_NONE, then DT_<type> of
// each type of this list in its order (1, 2, ...). The same list makes dtype_of below.
#define AICORE_SIM_DTYPES(X)                                                                  \
    X(half) X(float) X(bfloat16_t) X(int8_t) X(uint8_t) X(int16_t) X(uint16_t) X(int32_t)   \
    X(uint32_t) X(int64_t) X(uint64_t) X(bool) X(double)
#define AICORE_SIM_DTYPE_CODE(T) DT_##T,
enum DTypeCode : int64_t { DT_NONE, AICORE_SIM_DTYPES(AICORE_SIM_DTYPE_CODE) };
#undef AICORE_SIM_DTYPE_CODE

constexpr int ARG_SLOTS = 1024;
constexpr int ERR_SLOT = ARG_SLOTS - 1;
constexpr int ID_SLOT = ARG_SLOTS - 2;  // the id the simulator gave a call it saw first

extern "C" {
typedef int64_t (*callback_t)(int32_t nslots);
}

// One per loaded kernel library: set by aicore_sim_init.
inline callback_t g_callback = nullptr;
inline int64_t* g_args = nullptr;

// Per core (each core's kernel runs on a thread of its own).
inline thread_local int64_t t_block_idx = 0;
inline thread_local int64_t t_block_num = 1;
inline thread_local int64_t t_tiling_key = 0;
inline thread_local uintptr_t t_ub_base = 0;  // address standing for UB byte 0
inline thread_local bool t_running = false;     // the kernel entry is running on this thread
inline thread_local bool t_in_callback = false; // the simulator is answering a call

// Thrown when the simulator refused a call: it unwinds the kernel back to the entry runner,
// which hands the simulator's own error back to Python.
struct Abort {};

// Where the kernel called the API: the defaulted argument every shim call ends with, so the
// instruction carries the user's own file:line.
struct Site {
    const char* file;
    const char* func;
    int line;
    Site(const char* f = __builtin_FILE(), const char* fn = __builtin_FUNCTION(),
         int l = __builtin_LINE())
        : file(f), func(fn), line(l) {}
};

struct Enc {
    int n;
    void put(int64_t v) { g_args[n++] = v; }
    void put_double(double d) {
        int64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        g_args[n++] = bits;
    }
};

template <typename T> struct dtype_of { static constexpr int64_t value = DT_NONE; };

// Enum types the calls pass: their names, which the Python side resolves.
template <typename E> struct enum_name { static constexpr const char* value = nullptr; };

// A template argument that names a type (SetAtomicAdd<T>, GetSortLen<T>).
template <typename T> struct DType {};

template <typename T> inline void enc(Enc& e, DType<T>) {
    e.put(DTYPE);
    e.put(dtype_of<T>::value);
}
inline void enc(Enc& e, std::nullptr_t) { e.put(NUL); }
inline void enc(Enc& e, const char* s) {
    e.put(STR);
    e.put(reinterpret_cast<int64_t>(s));
}
inline void enc(Enc& e, bool b) {
    e.put(BOOL);
    e.put(b ? 1 : 0);
}
template <typename T>
inline typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value>::type
enc(Enc& e, T v) {
    e.put(INT);
    e.put(static_cast<int64_t>(v));
}
template <typename T>
inline typename std::enable_if<std::is_enum<T>::value>::type enc(Enc& e, T v) {
    if constexpr (enum_name<T>::value != nullptr) {
        e.put(ENUM);
        e.put(reinterpret_cast<int64_t>(enum_name<T>::value));
        e.put(static_cast<int64_t>(v));
    } else {
        e.put(INT);
        e.put(static_cast<int64_t>(v));
    }
}

inline void enc(Enc& e, double v) {
    e.put(FLT);
    e.put_double(v);
}
inline void enc(Enc& e, float v) { enc(e, static_cast<double>(v)); }
inline void enc(Enc& e, half v) { enc(e, static_cast<double>(v)); }
inline void enc(Enc& e, bfloat16_t v) { enc(e, static_cast<double>(static_cast<float>(v))); }

#define AICORE_SIM_DTYPE_OF(T) \
    template <> struct dtype_of<T> { static constexpr int64_t value = DT_##T; };
AICORE_SIM_DTYPES(AICORE_SIM_DTYPE_OF)
#undef AICORE_SIM_DTYPE_OF

// A value of T from the callback's answer: floats come back as a double in slot 0, integers
// as the return value.
template <typename T> inline T answer_as(int64_t r) {
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value ||
                  std::is_same<T, half>::value) {
        double d;
        std::memcpy(&d, &g_args[0], sizeof d);
        return static_cast<T>(d);
    } else if constexpr (std::is_same<T, bfloat16_t>::value) {
        double d;
        std::memcpy(&d, &g_args[0], sizeof d);
        return bfloat16_t(static_cast<float>(d));
    } else {
        return static_cast<T>(r);
    }
}

// The site key: the file string's address with the line in the top bits (user-space
// addresses stay below 2^47).
inline int64_t site_key(const Site& s) {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(s.file) ^
                                (static_cast<uint64_t>(s.line) << 48));
}

// The calls a core has made, by their slots: a call repeated with the same slots (most are)
// reaches the simulator as its id, so it decodes each distinct call once. Slots are compared
// whole, so an entry is only ever the same call again.
struct CallCache {
    struct Entry {
        uint64_t hash = 0;
        uint32_t off = 0;
        int32_t n = -1;  // -1: empty
        int64_t id = 0;
    };
    std::vector<int64_t> slots;
    std::vector<Entry> table = std::vector<Entry>(1 << 12);
    size_t used = 0;

    static uint64_t hash_of(const int64_t* a, int n) {
        uint64_t h = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(n);
        for (int i = 0; i < n; ++i) {
            h ^= static_cast<uint64_t>(a[i]);
            h *= 0xff51afd7ed558ccdull;
            h ^= h >> 32;
        }
        return h;
    }
    Entry* find(const int64_t* a, int n, uint64_t h) {
        size_t mask = table.size() - 1;
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            Entry& e = table[i];
            if (e.n < 0) return &e;
            if (e.hash == h && e.n == n &&
                std::memcmp(&slots[e.off], a, sizeof(int64_t) * n) == 0)
                return &e;
        }
    }
    void grow() {
        std::vector<Entry> old(table.size() * 2);
        old.swap(table);
        size_t mask = table.size() - 1;
        for (const Entry& e : old) {
            if (e.n < 0) continue;
            size_t i = e.hash & mask;
            while (table[i].n >= 0) i = (i + 1) & mask;
            table[i] = e;
        }
    }
    void clear() {
        slots.clear();
        table.assign(1 << 12, Entry{});
        used = 0;
    }
};
inline thread_local CallCache t_calls;

inline int64_t dispatch(int n) {
    CallCache& c = t_calls;
    uint64_t h = CallCache::hash_of(g_args, n);
    CallCache::Entry* e = c.find(g_args, n, h);
    int64_t r;
    t_in_callback = true;
    if (e->n >= 0) {
        r = g_callback(static_cast<int32_t>(-1 - e->id));
    } else {
        uint32_t off = static_cast<uint32_t>(c.slots.size());
        c.slots.insert(c.slots.end(), g_args, g_args + n);
        g_args[ID_SLOT] = -1;
        r = g_callback(n);
        int64_t id = g_args[ID_SLOT];
        if (id >= 0) {
            if (2 * (c.used + 1) > c.table.size()) {
                c.grow();
                e = c.find(&c.slots[off], n, h);
            }
            e->hash = h;
            e->off = off;
            e->n = n;
            e->id = id;
            ++c.used;
        } else {
            c.slots.resize(off);
        }
    }
    t_in_callback = false;
    if (g_args[ERR_SLOT]) {
        g_args[ERR_SLOT] = 0;
        throw Abort{};
    }
    return r;
}

// Call the API item `name` with `args`; returns the callback's answer (an int, or 0 with
// the answer in the argument block).
template <typename... A> inline int64_t call(const char* name, const Site& s, const A&... args) {
    g_args[0] = reinterpret_cast<int64_t>(name);
    g_args[1] = site_key(s);
    g_args[2] = reinterpret_cast<int64_t>(s.file);
    g_args[3] = reinterpret_cast<int64_t>(s.func);
    g_args[4] = s.line;
    Enc e{5};
    (enc(e, args), ...);
    return dispatch(e.n);
}

}  // namespace aicore_sim

// aicore-sim's host shim: the logging and check macros host tilings use (OP_LOGE, OP_LOGW,
// OP_LOGI, OP_LOGD, OP_CHECK_IF, OP_CHECK_NULL_WITH_CONTEXT and their older spellings).
//
// Written for aicore-sim from the call sites of host tilings; no vendor code. A message is
// formatted printf-style and kept with its level for the simulator, which prints an error
// line as the op's own when the tiling fails. The first argument names the node: a context,
// a C string or a std::string; a lone string is the message itself.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "aicore_sim_host/gert.h"

namespace aicore_sim_host {

struct LogLine {
    char level;
    std::string text;
};

inline std::vector<LogLine>& log_lines() {
    static thread_local std::vector<LogLine> lines;
    return lines;
}
inline bool& debug_enabled() {
    static thread_local bool on = false;
    return on;
}

inline std::string node_of(const char* s) { return s ? s : ""; }
inline std::string node_of(const std::string& s) { return s; }
inline std::string node_of(const gert::TilingContext* c) { return c ? c->GetNodeName() : ""; }
inline std::string node_of(const gert::TilingParseContext* c) { return c ? c->GetNodeName() : ""; }
inline std::string node_of(const gert::NodeView* c) { return c ? c->GetNodeName() : ""; }

inline void emit(char level, const std::string& node, const std::string& text) {
    if (level == 'D' && !debug_enabled()) return;
    log_lines().push_back({level, node.empty() ? text : node + ": " + text});
}

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
template <typename N, typename... A>
inline void log(char level, const N& node, const char* fmt, A... args) {
    if (level == 'D' && !debug_enabled()) return;
    char buf[2048];
    if constexpr (sizeof...(A) == 0) {
        std::snprintf(buf, sizeof buf, "%s", fmt);
    } else {
        std::snprintf(buf, sizeof buf, fmt, args...);
    }
    emit(level, node_of(node), buf);
}
template <typename N, typename... A>
inline void log(char level, const N& node, const std::string& fmt, A... args) {
    log(level, node, fmt.c_str(), args...);
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
inline void log(char level, const char* message) { emit(level, "", message ? message : ""); }
inline void log(char level, const std::string& message) { emit(level, "", message); }

// the structured error reports (OP_LOGE_FOR_INVALID_*): what was wrong, then each argument
inline std::string text(const char* s) { return s ? s : ""; }
inline std::string text(const std::string& s) { return s; }
template <typename T>
inline std::string text(const T& v) { return std::to_string(v); }
template <typename N, typename... A>
inline void report(const N& node, const char* what, const A&... args) {
    std::string out = what;
    const char* sep = ": ";
    ((out += sep + text(args), sep = ", "), ...);
    emit('E', node_of(node), out);
}

}  // namespace aicore_sim_host

// the slog levels and its module-level entry, as trees that wrap their own macros call them
enum { DLOG_DEBUG = 0, DLOG_INFO = 1, DLOG_WARN = 2, DLOG_ERROR = 3 };
template <typename N, typename... A>
inline void OpLogSub(int, int level, const N& node, const char* fmt, A... args) {
    ::aicore_sim_host::log("DIWE"[level < 0 || level > 3 ? 3 : level], node, fmt, args...);
}
#define REPORT_INNER_ERR_MSG(code, ...) ((void)(code))

#define OP_LOGE(...) ::aicore_sim_host::log('E', __VA_ARGS__)
#define OP_LOGW(...) ::aicore_sim_host::log('W', __VA_ARGS__)
#define OP_LOGI(...) ::aicore_sim_host::log('I', __VA_ARGS__)
#define OP_LOGD(...) ::aicore_sim_host::log('D', __VA_ARGS__)
#define OP_EVENT(...) ::aicore_sim_host::log('I', __VA_ARGS__)
#define OPS_LOG_E(...) OP_LOGE(__VA_ARGS__)
#define OPS_LOG_W(...) OP_LOGW(__VA_ARGS__)
#define OPS_LOG_I(...) OP_LOGI(__VA_ARGS__)
#define OPS_LOG_D(...) OP_LOGD(__VA_ARGS__)
#define OP_LOGE_WITHOUT_REPORT(...) OP_LOGE(__VA_ARGS__)
#define VECTOR_INNER_ERR_REPORT_TILIING(...) OP_LOGE(__VA_ARGS__)
#define OPS_REPORT_VECTOR_INNER_ERR(...) OP_LOGE(__VA_ARGS__)
#define OPS_REPORT_CUBE_INNER_ERR(...) OP_LOGE(__VA_ARGS__)
#define AICORE_SIM_REPORT(node, what, ...) ::aicore_sim_host::report(node, what, __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_VALUE(node, ...) AICORE_SIM_REPORT(node, "invalid value", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_VALUE_WITH_REASON(node, ...) \
    OP_LOGE_FOR_INVALID_VALUE(node, __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_VALUES_WITH_REASON(node, ...) \
    AICORE_SIM_REPORT(node, "invalid values", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_SHAPE(node, ...) AICORE_SIM_REPORT(node, "invalid shape", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_SHAPE_WITH_REASON(node, ...) \
    OP_LOGE_FOR_INVALID_SHAPE(node, __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_SHAPES_WITH_REASON(node, ...) \
    AICORE_SIM_REPORT(node, "invalid shapes", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_SHAPEDIM(node, ...) \
    AICORE_SIM_REPORT(node, "invalid shape dimension", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_SHAPEDIM_WITH_REASON(node, ...) \
    OP_LOGE_FOR_INVALID_SHAPEDIM(node, __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_SHAPEDIMS_WITH_REASON(node, ...) \
    AICORE_SIM_REPORT(node, "invalid shape dimensions", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_SHAPESIZE(node, ...) \
    AICORE_SIM_REPORT(node, "invalid shape size", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_DTYPE(node, ...) AICORE_SIM_REPORT(node, "invalid dtype", __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_DTYPE_WITH_REASON(node, ...) \
    OP_LOGE_FOR_INVALID_DTYPE(node, __VA_ARGS__)
#define OP_LOGE_FOR_INVALID_DTYPES_WITH_REASON(node, ...) \
    AICORE_SIM_REPORT(node, "invalid dtypes", __VA_ARGS__)
#define OP_LOGE_WITH_INVALID_ATTR(node, ...) AICORE_SIM_REPORT(node, "invalid attribute", __VA_ARGS__)
#define OP_LOGE_WITH_INVALID_ATTR_SIZE(node, ...) \
    AICORE_SIM_REPORT(node, "invalid attribute size", __VA_ARGS__)
#define OP_LOGE_WITH_INVALID_INPUT(node, ...) AICORE_SIM_REPORT(node, "invalid input", __VA_ARGS__)

// on `cond`: the log expression, then the exit expression (a return)
#define OP_CHECK_IF(cond, log_expr, exit_expr) \
    do {                                       \
        if (cond) {                            \
            log_expr;                          \
            exit_expr;                         \
        }                                      \
    } while (0)
#define OP_TILING_CHECK(cond, log_expr, exit_expr) OP_CHECK_IF(cond, log_expr, exit_expr)
#define OPS_CHECK(cond, log_expr, exit_expr) OP_CHECK_IF(cond, log_expr, exit_expr)

// a null pointer fails the call, naming the pointer
#define OP_CHECK_NULL_WITH_CONTEXT_RET(context, ptr, ret)                        \
    do {                                                                         \
        if ((ptr) == nullptr) {                                                  \
            OP_LOGE(context, "%s is nullptr", #ptr);                             \
            return ret;                                                          \
        }                                                                        \
    } while (0)
#define OP_CHECK_NULL_WITH_CONTEXT(context, ptr) \
    OP_CHECK_NULL_WITH_CONTEXT_RET(context, ptr, ge::GRAPH_FAILED)
#define OPS_CHECK_NULL_WITH_CONTEXT(context, ptr) OP_CHECK_NULL_WITH_CONTEXT(context, ptr)

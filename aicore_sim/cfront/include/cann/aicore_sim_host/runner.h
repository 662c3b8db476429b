// aicore-sim's host shim: the C entry points the simulator calls into a compiled host library.
//
// Written for aicore-sim; no vendor code. aicore_sim_host_tiling runs one registered tiling
// function on a context the simulator describes in a small text request (one line per item,
// strings hex-encoded, floats in C99 hex) and answers in text: the status, what the tiling set
// (key, block dim, schedule mode, workspace sizes), its log lines, and the tiling bytes in the
// caller's buffer. A crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) or a C++ exception in the
// tiling is caught and answered as such, so the simulator can name it instead of dying.
// aicore_sim_host_fields describes the tiling-data class an op registered (the layout check).
#pragma once

#include <algorithm>
#include <csetjmp>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "aicore_sim_host/registry.h"
#include "aicore_sim_host/tiling_data.h"

namespace aicore_sim_host {

inline std::string unhex(const std::string& h) {
    std::string out;
    for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
    return h == "-" ? std::string() : out;
}
inline std::string hex(const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out.empty() ? "-" : out;
}

inline ge::DataType dtype_of(const std::string& tok) {
    if (!tok.empty() && tok[0] == '#') return static_cast<ge::DataType>(std::stol(tok.substr(1)));
    int32_t v = aicore_sim_host_dtype_value(tok.c_str());
    return static_cast<ge::DataType>(v < 0 ? ge::DT_UNDEFINED : v);
}

inline gert::Port read_port(std::istringstream& in, bool present) {
    gert::Port p;
    p.present = present;
    std::string dtype;
    int format = 0;
    size_t ndim = 0;
    in >> dtype >> format >> ndim;
    p.tensor.desc_.SetDataType(dtype_of(dtype));
    p.tensor.desc_.SetFormat(static_cast<ge::Format>(format), static_cast<ge::Format>(format));
    for (size_t i = 0; i < ndim; ++i) {
        int64_t d = 0;
        in >> d;
        p.tensor.shape_.MutableOriginShape().AppendDim(d);
        p.tensor.shape_.MutableStorageShape().AppendDim(d);
    }
    return p;
}

inline void read_attr(std::istringstream& in, gert::RuntimeAttrs::Value& v) {
    int present = 0;
    in >> present >> v.kind;
    v.present = present != 0;
    if (v.kind == 'b') {
        int b = 0;
        in >> b;
        bool value = b != 0;
        std::memcpy(v.raw, &value, sizeof value);
    } else if (v.kind == 'i') {
        int64_t value = 0;
        in >> value;
        std::memcpy(v.raw, &value, sizeof value);
    } else if (v.kind == 'f') {
        std::string tok;
        in >> tok;
        float value = std::strtof(tok.c_str(), nullptr);
        std::memcpy(v.raw, &value, sizeof value);
    } else if (v.kind == 's') {
        std::string tok;
        in >> tok;
        v.text = unhex(tok);
    } else if (v.kind == 'I') {
        size_t n = 0;
        in >> n;
        v.ints.resize(n);
        for (auto& x : v.ints) in >> x;
    } else if (v.kind == 'F') {
        size_t n = 0;
        in >> n;
        v.floats.resize(n);
        for (auto& x : v.floats) {
            std::string tok;
            in >> tok;
            x = std::strtof(tok.c_str(), nullptr);
        }
    }
}

inline thread_local sigjmp_buf t_host_crash;
inline thread_local bool t_host_running = false;

inline void on_host_crash(int sig) {
    if (t_host_running) {
        t_host_running = false;
        siglongjmp(t_host_crash, sig);
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

// the request's lines into `ctx` (a TilingContext, or an infershape / infer-datatype view);
// returns the op type
template <typename Ctx>
inline std::string read_request(const char* request, Ctx& ctx, fe::PlatFormInfos* platform,
                                size_t* outputs) {
    std::istringstream lines(request);
    std::string line, op;
    log_lines().clear();
    debug_enabled() = false;
    *outputs = 0;
    while (std::getline(lines, line)) {
        std::istringstream in(line);
        std::string what;
        in >> what;
        if (what == "op") {
            in >> op;
            ctx.node_.type = op;
        } else if (what == "node") {
            std::string h;
            in >> h;
            ctx.node_.name = unhex(h);
        } else if (what == "platform" && platform != nullptr) {
            in >> platform->soc_version >> platform->npu_arch >> platform->aiv_num >>
                platform->aic_num >> platform->ub_size >> platform->l1_size >> platform->l2_size >>
                platform->l0a_size >> platform->l0b_size >> platform->l0c_size >>
                platform->hbm_size >> platform->lib_api_workspace;
        } else if (what == "res" && platform != nullptr) {
            std::string label, key, value;
            in >> label >> key >> value;
            platform->res[unhex(label) + "/" + unhex(key)] = unhex(value);
        } else if (what == "input") {
            int present = 0, required = 0;
            in >> present >> required;
            ctx.inputs.push_back(read_port(in, present != 0));
            ctx.required.push_back(required != 0);
        } else if (what == "output") {
            int present = 0;
            in >> present;
            gert::Port port = read_port(in, present != 0);
            if constexpr (std::is_same<Ctx, gert::TilingContext>::value) ctx.outputs.push_back(port);
            ++*outputs;
        } else if (what == "attr") {
            ctx.attrs.values.emplace_back();
            read_attr(in, ctx.attrs.values.back());
        } else if (what == "attrs_null") {
            if constexpr (std::is_same<Ctx, gert::TilingContext>::value) ctx.attrs_null = true;
        } else if (what == "debug") {
            debug_enabled() = true;
        }
    }
    for (auto& v : ctx.attrs.values) {
        if (v.kind == 'I') v.list.Set(v.ints.data(), v.ints.size());
        if (v.kind == 'F') v.list.Set(v.floats.data(), v.floats.size());
    }
    if (ctx.node_.name.empty()) ctx.node_.name = op;
    ctx.node_.inputs_num = 0;
    for (size_t i = 0; i < ctx.inputs.size(); ++i)
        if (ctx.inputs[i].present || ctx.required[i]) ++ctx.node_.inputs_num;
    ctx.node_.outputs_num = *outputs;
    return op;
}

// runs `fn` with the crash signals caught: "" when it returned, else what ended it
template <typename F>
inline std::string guarded(F fn) {
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction previous[5];
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_host_crash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    for (int i = 0; i < 5; ++i) sigaction(sigs[i], &sa, &previous[i]);
    std::string ended;
    int sig = sigsetjmp(t_host_crash, 1);
    if (sig == 0) {
        t_host_running = true;
        try {
            fn();
            t_host_running = false;
        } catch (const std::exception& e) {
            t_host_running = false;
            ended = "exception " + hex(e.what());
        } catch (...) {
            t_host_running = false;
            ended = "exception -";
        }
    } else {
        ended = "crash " + std::to_string(sig);
    }
    for (int i = 0; i < 5; ++i) sigaction(sigs[i], &previous[i], nullptr);
    return ended;
}

inline void write_log(std::ostringstream& out) {
    for (const LogLine& l : log_lines()) out << "log " << l.level << " " << hex(l.text) << "\n";
}

inline int reply_with(const std::ostringstream& out, char* reply, size_t reply_cap) {
    std::string text = out.str();
    if (text.size() + 1 > reply_cap) return -1;
    std::memcpy(reply, text.c_str(), text.size() + 1);
    return 0;
}

}  // namespace aicore_sim_host

extern "C" {

// answers 0 (the reply written) or -1 (the reply does not fit: `reply_cap` too small)
__attribute__((visibility("default"))) int aicore_sim_host_tiling(
    const char* request, char* reply, size_t reply_cap, unsigned char* tiling, size_t tiling_cap) {
    using namespace aicore_sim_host;
    gert::TilingContext ctx;
    fe::PlatFormInfos platform;
    size_t outputs = 0;
    std::string op = read_request(request, ctx, &platform, &outputs);
    auto it = op_impls().find(op);
    const OpImpl* impl = it == op_impls().end() ? nullptr : &it->second;
    // the compile info: zeroed bytes, or the op's struct which its parse step fills first
    size_t info_size = std::max<size_t>(4096, impl ? impl->compile_info_size : 0);
    std::vector<std::max_align_t> compile_info((info_size + sizeof(std::max_align_t) - 1) /
                                          sizeof(std::max_align_t));
    std::memset(compile_info.data(), 0, compile_info.size() * sizeof(std::max_align_t));
    ctx.platform = &platform;
    ctx.compile_info = compile_info.data();
    ctx.raw.Bind(tiling, tiling_cap);

    std::ostringstream out;
    if (impl == nullptr || impl->tiling == nullptr) {
        out << "missing " << hex(op) << "\n";
    } else {
        ge::graphStatus status = ge::GRAPH_SUCCESS;
        std::string ended;
        bool made = impl->parse != nullptr && impl->make_compile_info != nullptr;
        if (made) {  // the parse step, as GE runs it once before a node's tilings
            impl->make_compile_info(compile_info.data());
            gert::TilingParseContext parse;
            parse.compiled = compile_info.data();
            parse.platform = &platform;
            parse.node = ctx.GetNodeName();
            ended = guarded([&] { status = impl->parse(&parse); });
        }
        if (ended.empty() && status == ge::GRAPH_SUCCESS)
            ended = guarded([&] { status = impl->tiling(&ctx); });
        out << (ended.empty() ? "status " + std::to_string(status) : ended) << "\n";
        if (made && ended.empty()) impl->drop_compile_info(compile_info.data());
    }
    if (ctx.tiling_key_set) out << "key " << ctx.tiling_key << "\n";
    if (ctx.block_dim_set) out << "block_dim " << ctx.block_dim << "\n";
    out << "schedule_mode " << ctx.schedule_mode << "\n";
    out << "workspace " << ctx.workspace_num;
    for (size_t i = 0; i < ctx.workspace_num; ++i) out << " " << ctx.workspace[i];
    out << "\n";
    out << "tiling_size " << ctx.raw.GetDataSize() << "\n";
    write_log(out);
    return reply_with(out, reply, reply_cap);
}

// the op's infershape (and infer-datatype, when registered) on the request's inputs: "status",
// then "shape <i> <ndim> <dims>" and "dtype <i> <value>" per output, or "missing"
__attribute__((visibility("default"))) int aicore_sim_host_infer(const char* request,
                                                                  char* reply, size_t reply_cap) {
    using namespace aicore_sim_host;
    gert::InferShapeContext shapes;
    size_t outputs = 0;
    std::string op = read_request(request, shapes, nullptr, &outputs);
    shapes.out_shapes.resize(outputs);
    std::ostringstream out;
    auto it = op_impls().find(op);
    if (it == op_impls().end() || it->second.infer_shape == nullptr) {
        out << "missing " << hex(op) << "\n";
        write_log(out);
        return reply_with(out, reply, reply_cap);
    }
    ge::graphStatus status = ge::GRAPH_FAILED;
    std::string ended = guarded([&] { status = it->second.infer_shape(&shapes); });
    out << (ended.empty() ? "status " + std::to_string(status) : ended) << "\n";
    for (size_t i = 0; i < outputs; ++i) {
        const gert::Shape& s = shapes.out_shapes[i];
        out << "shape " << i << " " << s.GetDimNum();
        for (size_t d = 0; d < s.GetDimNum(); ++d) out << " " << s.GetDim(d);
        out << "\n";
    }
    if (ended.empty() && status == ge::GRAPH_SUCCESS && it->second.infer_dtype != nullptr) {
        gert::InferDataTypeContext types;
        size_t n = 0;
        read_request(request, types, nullptr, &n);
        types.out_dtypes.assign(n, ge::DT_UNDEFINED);
        ge::graphStatus ts = ge::GRAPH_FAILED;
        std::string e2 = guarded([&] { ts = it->second.infer_dtype(&types); });
        out << (e2.empty() ? "dtype_status " + std::to_string(ts) : e2) << "\n";
        for (size_t i = 0; i < n; ++i)
            out << "dtype " << i << " " << ge::TypeUtils::DataTypeToSerialString(types.out_dtypes[i])
                << "\n";
    }
    write_log(out);
    return reply_with(out, reply, reply_cap);
}

// the registered tiling-data class of `op`: "name type offset size count" lines, "" if none
__attribute__((visibility("default"))) int aicore_sim_host_fields(const char* op, char* reply,
                                                                   size_t reply_cap) {
    using namespace aicore_sim_host;
    std::string text;
    auto it = tiling_classes().find(op);
    if (it != tiling_classes().end()) {
        auto obj = it->second();
        text = "size " + std::to_string(obj->GetDataSize()) + "\n";
        obj->describe(text, "", 0);
    }
    if (text.size() + 1 > reply_cap) return -1;
    std::memcpy(reply, text.c_str(), text.size() + 1);
    return 0;
}

// the op types with a registered tiling, one per line
__attribute__((visibility("default"))) int aicore_sim_host_ops(char* reply, size_t reply_cap) {
    std::string text;
    for (const auto& kv : aicore_sim_host::op_impls())
        if (kv.second.tiling != nullptr) text += kv.first + "\n";
    if (text.size() + 1 > reply_cap) return -1;
    std::memcpy(reply, text.c_str(), text.size() + 1);
    return 0;
}

}  // extern "C"

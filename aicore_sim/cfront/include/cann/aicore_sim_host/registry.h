// aicore-sim's host shim: the operator registrations of host sources (IMPL_OP_OPTILING,
// IMPL_OP_INFERSHAPE, the op definition macros), kept as a registry the simulator reads.
//
// Written for aicore-sim from the call sites of host tilings; no vendor code.
#pragma once

#include <initializer_list>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "aicore_sim_host/gert.h"

namespace aicore_sim_host {

struct OpImpl {
    gert::TilingKernelFunc tiling = nullptr;
    gert::TilingParseFunc parse = nullptr;
    gert::InferShapeKernelFunc infer_shape = nullptr;
    gert::InferDataTypeKernelFunc infer_dtype = nullptr;
    size_t compile_info_size = 0;
    void (*make_compile_info)(void*) = nullptr;  // constructs the parse step's struct in place
    void (*drop_compile_info)(void*) = nullptr;  // and destroys it
};

inline std::map<std::string, OpImpl>& op_impls() {
    static std::map<std::string, OpImpl> m;
    return m;
}

// what IMPL_OP_OPTILING / IMPL_OP_INFERSHAPE start: a chain of setters on one op's entry
class OpImplRegister {
public:
    explicit OpImplRegister(const char* op) : op_(op) { op_impls()[op_]; }
    OpImplRegister& Tiling(gert::TilingKernelFunc f) {
        op_impls()[op_].tiling = f;
        return *this;
    }
    OpImplRegister& Tiling(gert::TilingKernelFunc f, size_t) { return Tiling(f); }
    template <typename T>
    OpImplRegister& TilingParse(gert::TilingParseFunc f) {
        OpImpl& impl = op_impls()[op_];
        impl.parse = f;
        impl.compile_info_size = sizeof(T);
        impl.make_compile_info = [](void* p) { new (p) T(); };
        impl.drop_compile_info = [](void* p) { static_cast<T*>(p)->~T(); };
        return *this;
    }
    OpImplRegister& InferShape(gert::InferShapeKernelFunc f) {
        op_impls()[op_].infer_shape = f;
        return *this;
    }
    OpImplRegister& InferDataType(gert::InferDataTypeKernelFunc f) {
        op_impls()[op_].infer_dtype = f;
        return *this;
    }
    template <typename... A>
    OpImplRegister& InputsDataDependency(A...) { return *this; }
    template <typename... A>
    OpImplRegister& TilingInputsDataDependency(A...) { return *this; }
    template <typename... A>
    OpImplRegister& PrivateAttr(A...) { return *this; }
    template <typename F>
    OpImplRegister& InferShapeRange(F) { return *this; }
    OpImplRegister& InputsDataDependency(std::initializer_list<int64_t>) { return *this; }
    OpImplRegister& TilingInputsDataDependency(std::initializer_list<int64_t>) { return *this; }

private:
    std::string op_;
};

}  // namespace aicore_sim_host

#ifndef AICORE_SIM_CAT
#define AICORE_SIM_CAT2(a, b) a##b
#define AICORE_SIM_CAT(a, b) AICORE_SIM_CAT2(a, b)
#endif
#define IMPL_OP_OPTILING(op_type)                                                       \
    static ::aicore_sim_host::OpImplRegister AICORE_SIM_CAT(aicore_sim_op_impl_, __COUNTER__) = \
        ::aicore_sim_host::OpImplRegister(#op_type)
#define IMPL_OP_INFERSHAPE(op_type) IMPL_OP_OPTILING(op_type)
#define IMPL_OP(op_type) IMPL_OP_OPTILING(op_type)

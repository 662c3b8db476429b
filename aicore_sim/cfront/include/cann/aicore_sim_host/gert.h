// aicore-sim's host shim: the gert runtime objects a host tiling reads and writes - shapes,
// tensor descriptions, attributes, the raw tiling buffer and gert::TilingContext itself.
//
// Written for aicore-sim from the public CANN API reference (gert::TilingContext,
// gert::StorageShape, gert::RuntimeAttrs, gert::ContinuousVector, gert::TilingData) and the call
// sites of host tilings; no vendor code. Inputs are read by *instance* index (GetInputShape,
// GetInputDesc, GetInputTensor: an absent optional input owns no instance, the later ones
// shift) or by IR index (GetOptional*: nullptr when absent), as gert reads them. The
// simulator fills one context per tiling call (aicore_sim_host/runner.h).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aicore_sim_host/ge.h"
#include "aicore_sim_host/platform.h"
#include "util/math_util.h"

namespace gert {

class Shape {
public:
    static constexpr size_t kMaxDimNum = 25;
    static constexpr int64_t kInvalidDimValue = std::numeric_limits<int64_t>::min();

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) {
        for (int64_t d : dims) AppendDim(d);
    }
    size_t GetDimNum() const { return num_; }
    void SetDimNum(size_t n) { num_ = n > kMaxDimNum ? kMaxDimNum : n; }
    int64_t GetDim(size_t i) const { return i < num_ ? dims_[i] : kInvalidDimValue; }
    void SetDim(size_t i, int64_t v) {
        if (i < kMaxDimNum) dims_[i] = v;
    }
    Shape& AppendDim(int64_t v) {
        if (num_ < kMaxDimNum) dims_[num_++] = v;
        return *this;
    }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (size_t i = 0; i < num_; ++i) n *= dims_[i];
        return n;
    }
    bool IsScalar() const { return num_ == 0; }
    int64_t& operator[](size_t i) { return dims_[i]; }
    const int64_t& operator[](size_t i) const { return dims_[i]; }
    bool operator==(const Shape& o) const {
        if (num_ != o.num_) return false;
        for (size_t i = 0; i < num_; ++i)
            if (dims_[i] != o.dims_[i]) return false;
        return true;
    }
    bool operator!=(const Shape& o) const { return !(*this == o); }

private:
    size_t num_ = 0;
    int64_t dims_[kMaxDimNum] = {};
};

class StorageShape {
public:
    StorageShape() = default;
    StorageShape(std::initializer_list<int64_t> origin, std::initializer_list<int64_t> storage)
        : origin_(origin), storage_(storage) {}
    const Shape& GetOriginShape() const { return origin_; }
    const Shape& GetStorageShape() const { return storage_; }
    Shape& MutableOriginShape() { return origin_; }
    Shape& MutableStorageShape() { return storage_; }

private:
    Shape origin_, storage_;
};

// a format as gert keeps it: the storage format of a tensor
class StorageFormat {
public:
    StorageFormat() = default;
    StorageFormat(ge::Format origin, ge::Format storage) : origin_(origin), storage_(storage) {}
    ge::Format GetOriginFormat() const { return origin_; }
    ge::Format GetStorageFormat() const { return storage_; }

private:
    ge::Format origin_ = ge::FORMAT_ND, storage_ = ge::FORMAT_ND;
};

// what the compiler knows of a tensor: its data type and formats
class CompileTimeTensorDesc {
public:
    ge::DataType GetDataType() const { return dtype_; }
    ge::Format GetOriginFormat() const { return format_.GetOriginFormat(); }
    ge::Format GetStorageFormat() const { return format_.GetStorageFormat(); }
    const StorageFormat& GetFormat() const { return format_; }
    void SetDataType(ge::DataType t) { dtype_ = t; }
    void SetFormat(ge::Format origin, ge::Format storage) { format_ = StorageFormat(origin, storage); }

private:
    ge::DataType dtype_ = ge::DT_UNDEFINED;
    StorageFormat format_;
};

// a runtime tensor as a tiling sees it: shapes, type, format; its data is not on the host
class Tensor {
public:
    const Shape& GetStorageShape() const { return shape_.GetStorageShape(); }
    const Shape& GetOriginShape() const { return shape_.GetOriginShape(); }
    const StorageShape& GetShape() const { return shape_; }
    int64_t GetShapeSize() const { return shape_.GetStorageShape().GetShapeSize(); }
    ge::DataType GetDataType() const { return desc_.GetDataType(); }
    ge::Format GetOriginFormat() const { return desc_.GetOriginFormat(); }
    ge::Format GetStorageFormat() const { return desc_.GetStorageFormat(); }
    const void* GetAddr() const { return nullptr; }
    template <typename T>
    const T* GetData() const { return nullptr; }

    StorageShape shape_;
    CompileTimeTensorDesc desc_;
};

// a list attribute: its element count and its elements
class ContinuousVector {
public:
    size_t GetSize() const { return size_; }
    size_t GetCapacity() const { return size_; }
    const void* GetData() const { return data_; }
    void* MutableData() { return data_; }
    void Set(void* data, size_t size) { data_ = data; size_ = size; }

private:
    void* data_ = nullptr;
    size_t size_ = 0;
};

// a list attribute as GetListInt / GetListFloat give it: the same storage, typed elements
template <typename T>
class TypedContinuousVector : public ContinuousVector {
public:
    const T* GetData() const { return static_cast<const T*>(ContinuousVector::GetData()); }
    T* MutableData() { return static_cast<T*>(ContinuousVector::MutableData()); }
};

// the attributes of one call, by IR index; an absent one gives nullptr. Each value is kept
// in raw bytes, so a getter of another type reads them as gert would.
class RuntimeAttrs {
public:
    struct Value {
        bool present = false;
        char kind = 0;  // b, i, f, s (text), I (int list), F (float list)
        alignas(8) unsigned char raw[16] = {};  // a list read from a scalar sees size 0
        std::string text;
        std::vector<int64_t> ints;
        std::vector<float> floats;
        ContinuousVector list;
    };

    template <typename T>
    const T* GetAttrPointer(size_t index) const {
        const Value* v = at(index);
        if (v == nullptr) return nullptr;
        if (v->kind == 's') return reinterpret_cast<const T*>(v->text.c_str());
        if (v->kind == 'I' || v->kind == 'F') return reinterpret_cast<const T*>(&v->list);
        return reinterpret_cast<const T*>(v->raw);
    }
    const int64_t* GetInt(size_t i) const { return GetAttrPointer<int64_t>(i); }
    const bool* GetBool(size_t i) const { return GetAttrPointer<bool>(i); }
    const float* GetFloat(size_t i) const { return GetAttrPointer<float>(i); }
    const char* GetStr(size_t i) const { return GetAttrPointer<char>(i); }
    const TypedContinuousVector<int64_t>* GetListInt(size_t i) const {
        return GetAttrPointer<TypedContinuousVector<int64_t>>(i);
    }
    const TypedContinuousVector<float>* GetListFloat(size_t i) const {
        return GetAttrPointer<TypedContinuousVector<float>>(i);
    }
    size_t GetAttrNum() const { return values.size(); }

    std::vector<Value> values;

private:
    const Value* at(size_t i) const {
        return i < values.size() && values[i].present ? &values[i] : nullptr;
    }
};

// the buffer a tiling serialises its tiling data into
class TilingData {
public:
    size_t GetCapacity() const { return capacity_; }
    size_t GetDataSize() const { return size_; }
    ge::graphStatus SetDataSize(size_t size) {
        if (size > capacity_) return ge::GRAPH_FAILED;
        size_ = size;
        return ge::GRAPH_SUCCESS;
    }
    void* GetData() { return data_; }
    const void* GetData() const { return data_; }
    template <typename T>
    ge::graphStatus Append(const T& value) {
        if (size_ + sizeof(T) > capacity_) return ge::GRAPH_FAILED;
        std::memcpy(static_cast<unsigned char*>(data_) + size_, &value, sizeof(T));
        size_ += sizeof(T);
        return ge::GRAPH_SUCCESS;
    }
    void Bind(void* data, size_t capacity) { data_ = data; capacity_ = capacity; size_ = 0; }

private:
    void* data_ = nullptr;
    size_t capacity_ = 0, size_ = 0;
};

class ComputeNodeInfo {
public:
    const char* GetNodeName() const { return name.c_str(); }
    const char* GetNodeType() const { return type.c_str(); }
    size_t GetInputsNum() const { return inputs_num; }
    size_t GetOutputsNum() const { return outputs_num; }
    std::string name, type;
    size_t inputs_num = 0, outputs_num = 0;
};

// one IR input or output of the call: absent (an optional one not given) or a tensor
struct Port {
    bool present = false;
    Tensor tensor;
};

// what every context of a call reads: the node, its inputs (IR order; by instance index an
// absent optional input owns no instance, a required one always does) and its attributes
class NodeView {
public:
    const char* GetNodeName() const { return node_.GetNodeName(); }
    const char* GetNodeType() const { return node_.GetNodeType(); }
    const ComputeNodeInfo* GetComputeNodeInfo() const { return &node_; }
    size_t GetComputeNodeInputNum() const { return node_.GetInputsNum(); }
    const RuntimeAttrs* GetAttrs() const { return &attrs; }
    const Tensor* GetInputTensor(size_t index) const { return instance(index); }
    const Tensor* GetOptionalInputTensor(size_t ir_index) const { return ir(ir_index); }

    ComputeNodeInfo node_;
    std::vector<Port> inputs;
    std::vector<bool> required;
    RuntimeAttrs attrs;

protected:
    // the tensor of port i, or null where it is absent or there is no port i
    static const Tensor* present(const std::vector<Port>& ports, size_t i) {
        return i < ports.size() && ports[i].present ? &ports[i].tensor : nullptr;
    }
    // a part of a tensor (its shape, its description), or null for no tensor
    template <typename M>
    static const M* part(const Tensor* t, M Tensor::*member) {
        return t ? &(t->*member) : nullptr;
    }
    // the input by its IR index / by its instance index
    const Tensor* ir(size_t i) const { return present(inputs, i); }
    const Tensor* instance(size_t index) const {
        size_t n = 0;
        for (size_t i = 0; i < inputs.size(); ++i) {
            if (!inputs[i].present && !(i < required.size() && required[i])) continue;
            if (n++ == index) return present(inputs, i);
        }
        return nullptr;
    }
};

// the context of one tiling call: what it reads (shapes, types, attributes, platform) and
// what it writes (tiling key, block dim, workspace sizes, the tiling bytes)
class TilingContext : public NodeView {
public:
    const StorageShape* GetInputShape(size_t index) const {
        return part(instance(index), &Tensor::shape_);
    }
    const StorageShape* GetOptionalInputShape(size_t ir_index) const {
        return part(ir(ir_index), &Tensor::shape_);
    }
    const CompileTimeTensorDesc* GetInputDesc(size_t index) const {
        return part(instance(index), &Tensor::desc_);
    }
    const CompileTimeTensorDesc* GetOptionalInputDesc(size_t ir_index) const {
        return part(ir(ir_index), &Tensor::desc_);
    }
    const StorageShape* GetOutputShape(size_t index) const {
        return part(present(outputs, index), &Tensor::shape_);
    }
    const CompileTimeTensorDesc* GetOutputDesc(size_t index) const {
        return part(present(outputs, index), &Tensor::desc_);
    }
    const RuntimeAttrs* GetAttrs() const { return attrs_null ? nullptr : &attrs; }
    fe::PlatFormInfos* GetPlatformInfo() const { return platform; }
    const void* GetCompileInfo() const { return compile_info; }
    template <typename T>
    const T* GetCompileInfo() const { return static_cast<const T*>(compile_info); }

    ge::graphStatus SetBlockDim(uint32_t dim) {
        block_dim = dim;
        block_dim_set = true;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetBlockDim() const { return block_dim; }
    ge::graphStatus SetTilingKey(uint64_t key) {
        tiling_key = key;
        tiling_key_set = true;
        return ge::GRAPH_SUCCESS;
    }
    uint64_t GetTilingKey() const { return tiling_key; }
    ge::graphStatus SetScheduleMode(uint32_t mode) {
        schedule_mode = mode;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetScheduleMode() const { return schedule_mode; }
    ge::graphStatus SetLocalMemorySize(uint32_t bytes) {
        local_memory_size = bytes;
        return ge::GRAPH_SUCCESS;
    }
    ge::graphStatus SetNeedAtomic(bool atomic) {
        need_atomic = atomic;
        return ge::GRAPH_SUCCESS;
    }
    size_t* GetWorkspaceSizes(size_t num) {
        if (num > workspace.size()) workspace.resize(num, 0);
        workspace_num = num;
        return workspace.data();
    }
    size_t GetWorkspaceNum() const { return workspace_num; }
    TilingData* GetRawTilingData() { return &raw; }
    // a tiling written as a plain struct: the buffer viewed as T, its size T's
    template <typename T>
    T* GetTilingData() {
        if (sizeof(T) > raw.GetCapacity()) return nullptr;
        raw.SetDataSize(sizeof(T));
        return static_cast<T*>(raw.GetData());
    }

    // filled by the simulator (runner.h) before the call, read after it
    std::vector<Port> outputs;
    bool attrs_null = false;  // a null attribute set
    fe::PlatFormInfos* platform = nullptr;
    const void* compile_info = nullptr;
    TilingData raw;
    uint64_t tiling_key = 0;
    bool tiling_key_set = false;
    uint32_t block_dim = 0;
    bool block_dim_set = false;
    uint32_t schedule_mode = 0;
    bool need_atomic = false;
    uint32_t local_memory_size = 0;
    std::vector<size_t> workspace;
    size_t workspace_num = 0;

};

// the context of a tiling's parse step: the op's compile-info struct to fill (constructed by
// the runner before the step) and the platform, as the tiling that follows sees them
class TilingParseContext {
public:
    template <typename T>
    T* GetCompiledInfo() { return static_cast<T*>(compiled); }
    fe::PlatFormInfos* GetPlatformInfo() const { return platform; }
    const char* GetNodeName() const { return node; }

    void* compiled = nullptr;
    fe::PlatFormInfos* platform = nullptr;
    const char* node = "";
};

template <typename T>
class Range {
public:
    const T* GetMin() const { return &min_; }
    const T* GetMax() const { return &max_; }
    T* GetMin() { return &min_; }
    T* GetMax() { return &max_; }

private:
    T min_, max_;
};

// infershape: the output shapes from the inputs' shapes and the attributes
class InferShapeContext : public NodeView {
public:
    const Shape* GetInputShape(size_t index) const { return storage_shape(instance(index)); }
    const Shape* GetOptionalInputShape(size_t ir_index) const {
        return storage_shape(ir(ir_index));
    }
    Shape* GetOutputShape(size_t index) {
        return index < out_shapes.size() ? &out_shapes[index] : nullptr;
    }
    const Range<Shape>* GetInputShapeRange(size_t) const { return nullptr; }
    Range<Shape>* GetOutputShapeRange(size_t) { return nullptr; }

    std::vector<Shape> out_shapes;

private:
    static const Shape* storage_shape(const Tensor* t) {
        return t ? &t->GetStorageShape() : nullptr;
    }
};

// infer-datatype: the output data types from the inputs'
class InferDataTypeContext : public NodeView {
public:
    ge::DataType GetInputDataType(size_t index) const { return data_type(instance(index)); }
    ge::DataType GetOptionalInputDataType(size_t ir_index) const {
        return data_type(ir(ir_index));
    }
    ge::DataType GetOutputDataType(size_t index) const {
        return index < out_dtypes.size() ? out_dtypes[index] : ge::DT_UNDEFINED;
    }
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType t) {
        if (index >= out_dtypes.size()) return ge::GRAPH_FAILED;
        out_dtypes[index] = t;
        return ge::GRAPH_SUCCESS;
    }

    std::vector<ge::DataType> out_dtypes;

private:
    static ge::DataType data_type(const Tensor* t) {
        return t ? t->GetDataType() : ge::DT_UNDEFINED;
    }
};

using TilingKernelFunc = ge::graphStatus (*)(TilingContext*);
using TilingParseFunc = ge::graphStatus (*)(TilingParseContext*);
using InferShapeKernelFunc = ge::graphStatus (*)(InferShapeContext*);
using InferDataTypeKernelFunc = ge::graphStatus (*)(InferDataTypeContext*);

}  // namespace gert

// aicore-sim's host shim: tiling-data classes (BEGIN_TILING_DATA_DEF, TILING_DATA_FIELD_DEF,
// ..._ARR, ..._STRUCT, END_TILING_DATA_DEF, REGISTER_TILING_DATA_CLASS) with their setters,
// getters, SaveToBuffer and GetDataSize.
//
// Written for aicore-sim from the public Ascend C tiling documentation and the call sites of
// host tilings; no vendor code. Each field registers itself (name, offset, size) in
// declaration order; SaveToBuffer lays the fields out as aicore_sim/cfront/tiling_header.py
// lays out the struct the kernel's GET_TILING_DATA copies (each scalar aligned to its size, a
// nested struct to 8 bytes, the size a multiple of 8): the one layout of both sides, checked
// by a test through aicore_sim_host_fields().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <type_traits>
#include <string>
#include <vector>

#include "aicore_sim_host/log.h"

namespace aicore_sim_host {

class TilingFields;

struct FieldInfo {
    const char* name;
    std::ptrdiff_t offset;  // of the value inside its object
    size_t elem_size;
    size_t count;
    bool nested;
    char type;  // a C type letter: b B h H i I q Q f d ? (scalars), s (a nested struct)
};

// the Python struct-module letter of a field's C type (tiling_header.py's SCALARS)
template <typename T> constexpr char type_letter() {
    if (std::is_same<T, bool>::value) return '?';
    if (std::is_same<T, float>::value) return 'f';
    if (std::is_same<T, double>::value) return 'd';
    constexpr bool s = std::is_signed<T>::value;
    switch (sizeof(T)) {
        case 1: return s ? 'b' : 'B';
        case 2: return s ? 'h' : 'H';
        case 4: return s ? 'i' : 'I';
        default: return s ? 'q' : 'Q';
    }
}

class TilingFields {
public:
    explicit TilingFields(const char* name) : class_name_(name) {}
    virtual ~TilingFields() = default;
    TilingFields(const TilingFields&) = default;
    TilingFields& operator=(const TilingFields& o) {
        // the fields stay this object's own: only the values are copied by the members
        (void)o;
        return *this;
    }

    void add(const void* where, const char* name, size_t elem, size_t count, char type) {
        fields_.push_back({name, static_cast<const char*>(where) - reinterpret_cast<const char*>(this),
                           elem, count, false, type});
    }
    void add_nested(const TilingFields* where, const char* name) {
        fields_.push_back({name, reinterpret_cast<const char*>(where) - reinterpret_cast<const char*>(this),
                           0, 1, true, 's'});
    }

    size_t GetDataSize() const {
        size_t offset = 0;
        for (const FieldInfo& f : fields_) {
            size_t align = f.nested ? 8 : f.elem_size;
            offset = (offset + align - 1) / align * align;
            offset += f.nested ? nested(f)->GetDataSize() : f.elem_size * f.count;
        }
        return (offset + 7) / 8 * 8;
    }

    // the fields' bytes into `buf` (nothing when it cannot hold them: the error is logged)
    void SaveToBuffer(void* buf, size_t capacity) const {
        size_t size = GetDataSize();
        if (buf == nullptr || size > capacity) {
            OP_LOGE(class_name_, "tiling data of %zu bytes does not fit the buffer of %zu", size,
                    capacity);
            return;
        }
        std::memset(buf, 0, size);
        write(static_cast<unsigned char*>(buf));
    }

    const char* GetClassName() const { return class_name_; }
    const std::vector<FieldInfo>& fields() const { return fields_; }
    const TilingFields* nested(const FieldInfo& f) const {
        return reinterpret_cast<const TilingFields*>(reinterpret_cast<const char*>(this) + f.offset);
    }

    // "name type offset size count" lines, nested structs flattened as a.b
    void describe(std::string& out, const std::string& prefix, size_t base) const {
        size_t offset = 0;
        for (const FieldInfo& f : fields_) {
            size_t align = f.nested ? 8 : f.elem_size;
            offset = (offset + align - 1) / align * align;
            if (f.nested) {
                nested(f)->describe(out, prefix + f.name + ".", base + offset);
                offset += nested(f)->GetDataSize();
            } else {
                out += prefix + f.name + " " + f.type + " " + std::to_string(base + offset) + " " +
                       std::to_string(f.elem_size) + " " + std::to_string(f.count) + "\n";
                offset += f.elem_size * f.count;
            }
        }
    }

private:
    void write(unsigned char* out) const {
        size_t offset = 0;
        for (const FieldInfo& f : fields_) {
            size_t align = f.nested ? 8 : f.elem_size;
            offset = (offset + align - 1) / align * align;
            if (f.nested) {
                nested(f)->write(out + offset);
                offset += nested(f)->GetDataSize();
            } else {
                std::memcpy(out + offset, reinterpret_cast<const char*>(this) + f.offset,
                            f.elem_size * f.count);
                offset += f.elem_size * f.count;
            }
        }
    }

    const char* class_name_;
    std::vector<FieldInfo> fields_;
};

// registers one member at construction (declaration order is the layout's order)
struct FieldRegistrar {
    template <typename T>
    FieldRegistrar(TilingFields* owner, const char* name, const T* value, size_t count) {
        owner->add(value, name, sizeof(T), count, type_letter<T>());
    }
    FieldRegistrar(TilingFields* owner, const char* name, const TilingFields* nested) {
        owner->add_nested(nested, name);
    }
    FieldRegistrar(const FieldRegistrar&) {}  // a copy registers nothing: its owner has its own
    FieldRegistrar& operator=(const FieldRegistrar&) { return *this; }
};

// op type -> a fresh tiling-data object of its registered class
inline std::map<std::string, std::function<std::unique_ptr<TilingFields>()>>& tiling_classes() {
    static std::map<std::string, std::function<std::unique_ptr<TilingFields>()>> m;
    return m;
}
struct TilingClassRegistrar {
    TilingClassRegistrar(const char* op, std::function<std::unique_ptr<TilingFields>()> make) {
        tiling_classes().emplace(op, std::move(make));
    }
};

}  // namespace aicore_sim_host

#define BEGIN_TILING_DATA_DEF(class_name)                                        \
    class class_name : public ::aicore_sim_host::TilingFields {                  \
    public:                                                                      \
        class_name() : ::aicore_sim_host::TilingFields(#class_name) {}           \
        class_name(const class_name&) = default;                                 \
        class_name& operator=(const class_name&) = default;

#define TILING_DATA_FIELD_DEF(data_type, field_name)                                           \
    public:                                                                                    \
        data_type field_name##_value_ = data_type();                                           \
    private:                                                                                   \
        ::aicore_sim_host::FieldRegistrar field_name##_field_{this, #field_name,               \
                                                              &field_name##_value_, 1};        \
    public:                                                                                    \
        void set_##field_name(data_type v) { field_name##_value_ = v; }                        \
        data_type get_##field_name() const { return field_name##_value_; }

#define TILING_DATA_FIELD_DEF_ARR(data_type, arr_size, field_name)                             \
    public:                                                                                    \
        data_type field_name##_value_[arr_size] = {};                                          \
    private:                                                                                   \
        ::aicore_sim_host::FieldRegistrar field_name##_field_{this, #field_name,               \
                                                              &field_name##_value_[0], arr_size}; \
    public:                                                                                    \
        void set_##field_name(const data_type* v) {                                            \
            std::memcpy(field_name##_value_, v, sizeof(field_name##_value_));                  \
        }                                                                                      \
        data_type* get_##field_name() { return field_name##_value_; }

#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field_name)                                  \
    public:                                                                                    \
        struct_type field_name;                                                                \
    private:                                                                                   \
        ::aicore_sim_host::FieldRegistrar field_name##_field_{this, #field_name, &field_name}; \
    public:

#define END_TILING_DATA_DEF };

#define AICORE_SIM_CAT2(a, b) a##b
#define AICORE_SIM_CAT(a, b) AICORE_SIM_CAT2(a, b)
#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                                        \
    static ::aicore_sim_host::TilingClassRegistrar AICORE_SIM_CAT(                             \
        aicore_sim_tiling_class_, __COUNTER__)(#op_type, [] {                                  \
        return std::unique_ptr<::aicore_sim_host::TilingFields>(new class_name());             \
    });

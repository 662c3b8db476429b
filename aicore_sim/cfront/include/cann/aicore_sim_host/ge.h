// aicore-sim's host shim: the GE graph types a host tiling reads (data types, formats, status
// codes, sizes and their printable names).
//
// Written for aicore-sim from the public CANN API reference (ge::DataType, ge::Format,
// ge::graphStatus) and the call sites of host tilings; no vendor code. The enumerator values
// are the public ABI's (a tiling may compare a raw value); aicore_sim_host_dtype() maps the
// names the Python side sends.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ge {

using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFu;
constexpr graphStatus GRAPH_PARAM_INVALID = 50331649u;
constexpr graphStatus GRAPH_NOT_CHANGED = 1343242304u;

// an unknown dimension; the one dimension of a shape whose rank is unknown
constexpr int64_t UNKNOWN_DIM = -1;
constexpr int64_t UNKNOWN_DIM_NUM = -2;

// name, value, bytes per element (0: not a whole byte or not a tensor element type)
#define AICORE_SIM_GE_DTYPES(X)                                                            \
    X(DT_FLOAT, 0, 4) X(DT_FLOAT16, 1, 2) X(DT_INT8, 2, 1) X(DT_INT32, 3, 4)               \
    X(DT_UINT8, 4, 1) X(DT_INT16, 6, 2) X(DT_UINT16, 7, 2) X(DT_UINT32, 8, 4)              \
    X(DT_INT64, 9, 8) X(DT_UINT64, 10, 8) X(DT_DOUBLE, 11, 8) X(DT_BOOL, 12, 1)            \
    X(DT_STRING, 13, 0) X(DT_DUAL_SUB_INT8, 14, 1) X(DT_DUAL_SUB_UINT8, 15, 1)             \
    X(DT_COMPLEX64, 16, 8) X(DT_COMPLEX128, 17, 16) X(DT_QINT8, 18, 1) X(DT_QINT16, 19, 2) \
    X(DT_QINT32, 20, 4) X(DT_QUINT8, 21, 1) X(DT_QUINT16, 22, 2) X(DT_RESOURCE, 23, 8)     \
    X(DT_STRING_REF, 24, 0) X(DT_DUAL, 25, 5) X(DT_VARIANT, 26, 0) X(DT_BF16, 27, 2)       \
    X(DT_UNDEFINED, 28, 0) X(DT_INT4, 29, 0) X(DT_UINT1, 30, 0) X(DT_INT2, 31, 0)          \
    X(DT_UINT2, 32, 0) X(DT_COMPLEX32, 33, 4) X(DT_HIFLOAT8, 34, 1)                        \
    X(DT_FLOAT8_E5M2, 35, 1) X(DT_FLOAT8_E4M3FN, 36, 1) X(DT_FLOAT8_E8M0, 37, 1)           \
    X(DT_FLOAT6_E3M2, 38, 0) X(DT_FLOAT6_E2M3, 39, 0) X(DT_FLOAT4_E2M1, 40, 0)             \
    X(DT_FLOAT4_E1M2, 41, 0)

enum DataType {
#define AICORE_SIM_X(n, v, s) n = v,
    AICORE_SIM_GE_DTYPES(AICORE_SIM_X)
#undef AICORE_SIM_X
    DT_MAX
};

enum Format {
    FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_ND = 2, FORMAT_NC1HWC0 = 3, FORMAT_FRACTAL_Z = 4,
    FORMAT_NC1C0HWPAD = 5, FORMAT_NHWC1C0 = 6, FORMAT_FSR_NCHW = 7, FORMAT_FRACTAL_DECONV = 8,
    FORMAT_C1HWNC0 = 9, FORMAT_FRACTAL_DECONV_TRANSPOSE = 10,
    FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS = 11, FORMAT_NC1HWC0_C04 = 12,
    FORMAT_FRACTAL_Z_C04 = 13, FORMAT_CHWN = 14, FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS = 15,
    FORMAT_HWCN = 16, FORMAT_NC1KHKWHWC0 = 17, FORMAT_BN_WEIGHT = 18, FORMAT_FILTER_HWCK = 19,
    FORMAT_HASHTABLE_LOOKUP_LOOKUPS = 20, FORMAT_HASHTABLE_LOOKUP_KEYS = 21,
    FORMAT_HASHTABLE_LOOKUP_VALUE = 22, FORMAT_HASHTABLE_LOOKUP_OUTPUT = 23,
    FORMAT_HASHTABLE_LOOKUP_HITS = 24, FORMAT_C1HWNCoC0 = 25, FORMAT_MD = 26,
    FORMAT_NDHWC = 27, FORMAT_FRACTAL_ZZ = 28, FORMAT_FRACTAL_NZ = 29, FORMAT_NCDHW = 30,
    FORMAT_DHWCN = 31, FORMAT_NDC1HWC0 = 32, FORMAT_FRACTAL_Z_3D = 33, FORMAT_CN = 34,
    FORMAT_NC = 35, FORMAT_DHWNC = 36, FORMAT_FRACTAL_Z_3D_TRANSPOSE = 37,
    FORMAT_FRACTAL_ZN_LSTM = 38, FORMAT_FRACTAL_Z_G = 39, FORMAT_RESERVED = 40,
    FORMAT_ALL = 41, FORMAT_NULL = 42, FORMAT_ND_RNN_BIAS = 43, FORMAT_FRACTAL_ZN_RNN = 44,
    FORMAT_NYUV = 45, FORMAT_NYUV_A = 46, FORMAT_NCL = 47, FORMAT_MAX = 0xff
};

// bytes per element; -1 for a type without a whole-byte size (ge::GetSizeByDataType)
inline int GetSizeByDataType(DataType t) {
    switch (t) {
#define AICORE_SIM_X(n, v, s) \
    case n:                   \
        return (s) == 0 ? -1 : (s);
        AICORE_SIM_GE_DTYPES(AICORE_SIM_X)
#undef AICORE_SIM_X
        default:
            return -1;
    }
}

inline int32_t GetPrimaryFormat(int32_t format) { return format & 0xff; }
inline int32_t GetSubFormat(int32_t format) { return (format >> 8) & 0xffff; }

// a string as GE's interfaces return it
class AscendString {
public:
    AscendString() = default;
    AscendString(const char* s) : s_(s ? s : "") {}
    const char* GetString() const { return s_.c_str(); }
    size_t GetLength() const { return s_.size(); }

private:
    std::string s_;
};

// a graph-level shape: its dimensions
class Shape {
public:
    Shape() = default;
    explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
    std::vector<int64_t> GetDims() const { return dims_; }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (int64_t d : dims_) n *= d;
        return dims_.empty() ? 0 : n;
    }
    void SetDim(size_t i, int64_t v) {
        if (i < dims_.size()) dims_[i] = v;
    }

private:
    std::vector<int64_t> dims_;
};

class TypeUtils {
public:
    static std::string DataTypeToSerialString(DataType t) {
        switch (t) {
#define AICORE_SIM_X(n, v, s) \
    case n:                   \
        return #n;
            AICORE_SIM_GE_DTYPES(AICORE_SIM_X)
#undef AICORE_SIM_X
            default:
                return "UNDEFINED";
        }
    }
    static AscendString DataTypeToAscendString(DataType t) {
        return AscendString(DataTypeToSerialString(t).c_str());
    }
    static std::string FormatToSerialString(Format f) {
        switch (f) {
            case FORMAT_NCHW: return "NCHW";
            case FORMAT_NHWC: return "NHWC";
            case FORMAT_ND: return "ND";
            case FORMAT_NC1HWC0: return "NC1HWC0";
            case FORMAT_FRACTAL_Z: return "FRACTAL_Z";
            case FORMAT_FRACTAL_NZ: return "FRACTAL_NZ";
            case FORMAT_NCDHW: return "NCDHW";
            case FORMAT_NDHWC: return "NDHWC";
            default: return "FORMAT_" + std::to_string(static_cast<int>(f));
        }
    }
    static AscendString FormatToAscendString(Format f) {
        return AscendString(FormatToSerialString(f).c_str());
    }
};

}  // namespace ge

// the Python side names data types by their GE names: the one table above decides the value
inline int32_t aicore_sim_host_dtype_value(const char* name) {
#define AICORE_SIM_X(n, v, s) \
    if (std::strcmp(name, #n) == 0) return v;
    AICORE_SIM_GE_DTYPES(AICORE_SIM_X)
#undef AICORE_SIM_X
    return -1;
}

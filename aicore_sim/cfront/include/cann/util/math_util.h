// aicore-sim host shim: the integer helpers host tilings call as Ops::Base::CeilDiv,
// FloorDiv, CeilAlign, FloorAlign (written from their names and call sites; no vendor code).
// ASSUMPTION (no public reference found): a zero divisor or alignment gives 0.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace Ops {
namespace Base {

template <typename T, typename U>
inline auto CeilDiv(T a, U b) -> typename std::common_type<T, U>::type {
    using R = typename std::common_type<T, U>::type;
    return b == 0 ? R(0) : (static_cast<R>(a) + static_cast<R>(b) - 1) / static_cast<R>(b);
}
template <typename T, typename U>
inline auto FloorDiv(T a, U b) -> typename std::common_type<T, U>::type {
    using R = typename std::common_type<T, U>::type;
    return b == 0 ? R(0) : static_cast<R>(a) / static_cast<R>(b);
}
template <typename T, typename U>
inline auto CeilAlign(T a, U b) -> typename std::common_type<T, U>::type {
    return CeilDiv(a, b) * b;
}
template <typename T, typename U>
inline auto FloorAlign(T a, U b) -> typename std::common_type<T, U>::type {
    return FloorDiv(a, b) * b;
}
// a number, a text, or a shape (anything with GetDimNum / GetDim) as text
template <typename T>
inline std::string ToString(const T& v) {
    if constexpr (std::is_arithmetic<T>::value) {
        return std::to_string(v);
    } else if constexpr (std::is_enum<T>::value) {
        return std::to_string(static_cast<long long>(v));
    } else if constexpr (std::is_convertible<T, std::string>::value) {
        return std::string(v);
    } else {
        std::string out = "[";
        for (size_t i = 0; i < v.GetDimNum(); ++i) out += (i ? ", " : "") + std::to_string(v.GetDim(i));
        return out + "]";
    }
}

}  // namespace Base
}  // namespace Ops

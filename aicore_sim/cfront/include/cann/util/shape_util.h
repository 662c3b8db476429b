// aicore-sim host shim: Ops::Base's shape helpers infershape code calls (written from their
// names, the public meaning of GE's unknown dimensions and the call sites; no vendor code).
// A dimension of -1 is unknown; a shape of the one dimension -2 has an unknown rank.
#pragma once

#include <cstdint>

#include "aicore_sim_host/gert.h"

namespace Ops {
namespace Base {

constexpr int64_t UNKNOWN_DIM = -1;
constexpr int64_t UNKNOWN_RANK_DIM = -2;

inline bool IsUnknownRank(const gert::Shape& s) {
    return s.GetDimNum() == 1 && s.GetDim(0) == UNKNOWN_RANK_DIM;
}
inline bool IsUnknownShape(const gert::Shape& s) {
    for (size_t i = 0; i < s.GetDimNum(); ++i)
        if (s.GetDim(i) == UNKNOWN_DIM) return true;
    return false;
}
inline void SetUnknownRank(gert::Shape& s) {
    s.SetDimNum(1);
    s.SetDim(0, UNKNOWN_RANK_DIM);
}
inline void SetUnknownShape(size_t rank, gert::Shape& s) {
    s.SetDimNum(rank);
    for (size_t i = 0; i < rank; ++i) s.SetDim(i, UNKNOWN_DIM);
}
inline const gert::Shape& EnsureNotScalar(const gert::Shape& s) {
    static const gert::Shape one{1};
    return s.IsScalar() ? one : s;
}

}  // namespace Base
}  // namespace Ops

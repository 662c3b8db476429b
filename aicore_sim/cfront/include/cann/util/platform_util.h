// aicore-sim host shim: Ops::Base's platform constants host tilings size buffers with
// (written from their names and call sites; no vendor code). The figures are the Ascend C
// programming model's: UB is addressed in 32-byte blocks (the DataCopy unit), and a vector
// register / one repeat of a vector instruction covers 256 bytes on A2/A3 and Ascend 950.
#pragma once

#include <cstdint>

namespace Ops {
namespace Base {

template <typename Context>
inline uint32_t GetUbBlockSize(Context*) { return 32; }
template <typename Context>
inline uint32_t GetVRegSize(Context*) { return 256; }

}  // namespace Base
}  // namespace Ops

// Shape validation shared by every backend: a conv or pooling shape that cannot produce an output is
// bad input (InputError naming the op and the shape), checked the same way on the CPU and the GPU.
#pragma once
#include <string>

#include "base/error.h"
#include "core/backend.h"

namespace tt {

inline std::string shape_string(const Conv2dShape& s) {
  return "B=" + std::to_string(s.B) + " IC=" + std::to_string(s.IC) + " H=" + std::to_string(s.H) +
         " W=" + std::to_string(s.W) + " OC=" + std::to_string(s.OC) + " K=" + std::to_string(s.KH) + "x" +
         std::to_string(s.KW) + " stride=" + std::to_string(s.stride) + " pad=" + std::to_string(s.pad);
}

inline void check_conv_shape(const Conv2dShape& s) {
  if (s.B <= 0 || s.IC <= 0 || s.OC <= 0 || s.KH <= 0 || s.KW <= 0 || s.stride <= 0 || s.pad < 0 ||
      s.OH() <= 0 || s.OW() <= 0) {
    throw InputError("conv2d: invalid shape " + shape_string(s));
  }
}

inline void check_pool_shape(const Pool2dShape& s, const char* op) {
  if (s.B <= 0 || s.C <= 0 || s.k <= 0 || s.stride <= 0 || s.pad < 0 || 2 * s.pad > s.k || s.OH() <= 0 ||
      s.OW() <= 0) {
    throw InputError(std::string(op) + ": invalid pooling shape H=" + std::to_string(s.H) +
                     " W=" + std::to_string(s.W) + " k=" + std::to_string(s.k) +
                     " stride=" + std::to_string(s.stride) + " pad=" + std::to_string(s.pad));
  }
}

}  // namespace tt

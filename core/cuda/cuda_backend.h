// The CUDA backend's public entry points. Only these two functions are visible outside
// core/cuda; the class itself (cuda_backend_impl.h) needs the CUDA headers, which code built
// by the host compiler alone should not have to see.
#pragma once
#include <memory>

#include "core/backend.h"

namespace tt {

// Creates the CUDA backend on device `device_ordinal` (0-based, as cudaSetDevice counts). tf32 = true
// lets cuBLAS and cuDNN use TF32 tensor cores for FP32 matmuls and convolutions (faster, ~1e-3
// relative error); false keeps full FP32 arithmetic for exact comparisons with the CPU backend.
// Throws InputError for an ordinal that is not visible, RunError when CUDA itself fails.
std::unique_ptr<Backend> make_cuda_backend(int device_ordinal, bool tf32);

}  // namespace tt

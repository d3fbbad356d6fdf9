// Every CUDA, cuBLASLt, cuDNN and NCCL call is checked: a failure throws tandem::Error naming the
// call, the library's own error name and text, and what Tandem was doing.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "backend/kernel_registry.h"
#include "tandem/errors.h"

namespace tandem::backend::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const std::string& what);

inline void check(cudaError_t e, const char* call, const std::string& what) {
  if (e != cudaSuccess) throw_cuda_error(e, call, what);
}

// "kernel 'relu' of 'dense_1'": what an error in a kernel names. A closure keeps its own copy:
// the KernelInit it was made from is gone when it runs.
inline std::string kernel_label(const KernelInit& k) {
  return "kernel '" + k.node.op + "'" + (k.node.scope.empty() ? "" : " of '" + k.node.scope + "'");
}

}  // namespace tandem::backend::cuda

// CUDA_CHECK(cudaMalloc(...), "the arena of gpu:0")
#define CUDA_CHECK(call, what) ::tandem::backend::cuda::check((call), #call, (what))

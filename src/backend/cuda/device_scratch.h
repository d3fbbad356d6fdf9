// Device memory that one kernel keeps for its own use (a permuted filter, a padded image, partial
// sums): allocated when its factory runs, never while a step runs, and freed with the last closure
// that holds it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "backend/cuda/check.h"
#include "backend/cuda/context.h"

namespace tandem::backend::cuda {

template <class T>
std::shared_ptr<T> device_scratch(const Context& ctx, int64_t count, const std::string& label) {
  const std::string what = "allocating the scratch of " + label;
  CUDA_CHECK(cudaSetDevice(ctx.ordinal), what);
  void* data = nullptr;
  CUDA_CHECK(cudaMalloc(&data, static_cast<std::size_t>(count > 0 ? count : 1) * sizeof(T)), what);
  const int ordinal = ctx.ordinal;
  // A destructor cannot report; a failed free leaves the memory to the driver.
  return std::shared_ptr<T>(static_cast<T*>(data), [ordinal](T* p) {
    cudaSetDevice(ordinal);
    cudaFree(p);
  });
}

}  // namespace tandem::backend::cuda

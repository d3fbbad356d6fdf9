// What a CUDA kernel factory receives as KernelInit::context: the device's compute stream, its
// library handles and a workspace for them. Kernels launch on `stream` only; the runtime waits for
// it at the end of a step (CudaDevice::synchronize).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime.h>

struct cublasLtContext;
struct cudnnContext;

namespace tandem::backend::cuda {

// Errors that only device code can see (an id out of range): a kernel claims the device's fault
// word with its code (the first fault of a step wins) and records two numbers; the device reads
// it after the step and throws the message registered for the code. The word lives in pinned
// host memory mapped into the device, so reading it costs no copy.
struct Faults {
  unsigned long long* device = nullptr;  // [code, first number, second number], as kernels see it
  volatile unsigned long long* host = nullptr;
  // Registers a fault a kernel may report: `describe(a, b)` turns its two numbers into the
  // message. Returns the code (from 1). At plan-binding time, from any thread.
  using Describe = std::string (*)(const std::string& label, int64_t a, int64_t b, int64_t limit);
  unsigned long long add(std::string label, Describe describe, int64_t limit);
  // After a step: throws the registered message if a kernel reported a fault, and clears it.
  void raise_if_any();

 private:
  struct Entry {
    std::string label;
    Describe describe;
    int64_t limit;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

struct Context {
  int ordinal = 0;                  // the physical GPU (cudaSetDevice)
  cudaStream_t stream = nullptr;    // compute
  cudaStream_t copies = nullptr;    // host<->device copies of inputs, fetches and variables
  cudaStream_t comm = nullptr;      // the communication thread's copies and collectives
  cublasLtContext* blas = nullptr;  // cublasLtHandle_t
  cudnnContext* dnn = nullptr;      // cudnnHandle_t, bound to `stream`
  void* workspace = nullptr;        // scratch for cuBLASLt and cuDNN, used by one kernel at a time
  std::size_t workspace_bytes = 0;
  int sm_count = 0;                 // for grid sizes
  Faults* faults = nullptr;
};

}  // namespace tandem::backend::cuda

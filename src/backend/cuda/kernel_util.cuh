// Small helpers shared by the CUDA kernels (.cu files only). A kernel factory runs once per Plan
// on the host: it reads attributes and shapes there, and returns a closure that only launches on
// the device's compute stream. Scalars a step changes (the step counter, the learning rate) stay in
// device memory and are read by the device code, never by the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/check.h"
#include "backend/cuda/context.h"
#include "backend/kernel_registry.h"

namespace tandem::backend::cuda {

inline Context& context(const KernelInit& k) { return *static_cast<Context*>(k.context); }
inline cudaStream_t stream(const KernelInit& k) { return context(k).stream; }
template <class T>
const T* in(const KernelInit& k, int i) { return static_cast<const T*>(k.in[static_cast<std::size_t>(i)]); }
template <class T>
T* out(const KernelInit& k, int i = 0) { return static_cast<T*>(k.out[static_cast<std::size_t>(i)]); }
inline int64_t numel(const TensorType& t) { return t.shape.num_elements(); }

constexpr int kBlock = 256;  // threads per block of the elementwise kernels
// Blocks for n elements with a grid-stride loop: enough to fill every SM a few times, no more.
inline unsigned blocks_for(int64_t n, const Context& c) {
  const int64_t needed = (n + kBlock - 1) / kBlock;
  const int64_t cap = int64_t(c.sm_count > 0 ? c.sm_count : 1) * 8;
  return static_cast<unsigned>(needed < 1 ? 1 : (needed < cap ? needed : cap));
}

// Throws if the last launch was refused (a bad configuration); faults inside the kernel surface
// at the step's synchronisation, naming the step.
inline void check_launch(const std::string& label) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw_cuda_error(e, "a kernel launch", label);
}

// Device code's report of a fault registered with Faults::add: the first report of a step wins
// the word; the host reads it once the step has finished.
__device__ inline void report_fault(unsigned long long* word, unsigned long long code, int64_t a, int64_t b) {
  if (atomicCAS(word, 0ull, code) == 0ull) {
    word[1] = static_cast<unsigned long long>(a);
    word[2] = static_cast<unsigned long long>(b);
    __threadfence_system();
  }
}

// The closure most factories return: `launch(grid, stream)` issues a kernel over n elements with
// blocks_for's grid on the compute stream, and a refused launch throws naming the kernel.
template <class Launch>
KernelFn launch_over(const KernelInit& k, int64_t n, Launch launch) {
  const unsigned grid = blocks_for(n, context(k));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    if (n == 0) return;
    launch(grid, s);
    check_launch(label);
  };
}

// for (i in [0, n)) over a grid-stride loop.
#define TANDEM_CUDA_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(blockDim.x) * gridDim.x)

}  // namespace tandem::backend::cuda

// Registers make<float> and make<double> for an op on CUDA devices.
#define REGISTER_CUDA_FLOAT_KERNEL(op, make)                                                     \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cuda, ::tandem::DType::F32, make<float>); \
  REGISTER_KERNEL(op, ::tandem::backend::DeviceKind::Cuda, ::tandem::DType::F64, make<double>)

// assign_moving_average on CUDA devices: variable = variable·momentum + value·(1 − momentum), in
// place, in the variable's dtype, with the CPU kernel's formula (backend/elementwise_math.h).
#include "backend/cuda/kernel_util.cuh"
#include "backend/elementwise_math.h"

namespace tandem::backend::cuda {

namespace {
template <class T>
__global__ void moving_average_kernel(T* variable, const T* value, int64_t n, T keep, T take) {
  TANDEM_CUDA_LOOP(i, n) variable[i] = moving_average(variable[i], value[i], keep, take);
}

template <class T>
KernelFn make_assign_moving_average(const KernelInit& k) {
  T* variable = static_cast<T*>(k.in[0]);
  const T* value = in<T>(k, 1);
  const int64_t n = numel(k.in_types[0]);
  const double momentum = k.node.attrs.f("momentum");
  const T keep = T(momentum), take = T(1.0 - momentum);
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { moving_average_kernel<<<grid, kBlock, 0, s>>>(variable, value, n, keep, take); });
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("assign_moving_average", make_assign_moving_average);

}  // namespace tandem::backend::cuda

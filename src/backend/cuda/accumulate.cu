// micro_sum on CUDA devices: copies its input on a step's first micro-batch and adds it on the others.
#include "backend/cuda/kernel_util.cuh"

namespace tandem::backend::cuda {

namespace {
template <class T>
__global__ void add_into_kernel(T* sum, const T* v, int64_t n) {
  TANDEM_CUDA_LOOP(i, n) sum[i] += v[i];
}

template <class T>
KernelFn make_micro_sum(const KernelInit& k) {
  const T* v = in<T>(k, 0);
  T* sum = out<T>(k);
  const int64_t n = numel(k.in_types[0]);
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  if (n == 0) return {};
  if (k.micro_batch == 0)
    return [=] { CUDA_CHECK(cudaMemcpyAsync(sum, v, std::size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, s), label); };
  const unsigned grid = blocks_for(n, context(k));
  return [=] {
    add_into_kernel<<<grid, kBlock, 0, s>>>(sum, v, n);
    check_launch(label);
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("micro_sum", make_micro_sum);

}  // namespace tandem::backend::cuda

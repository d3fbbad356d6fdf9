// causal_mask over (..., T, S) on CUDA devices: in query row i, keys j > i + offset take the fill
// value (the mask value forward, 0 for the gradient); the rest are copied. Which keys a row sees
// is the CPU kernel's rule (backend/elementwise_math.h).
#include "backend/cuda/kernel_util.cuh"
#include "backend/elementwise_math.h"

namespace tandem::backend::cuda {

namespace {
template <class T>
__global__ void causal_mask_kernel(T* y, const T* x, int64_t n, int64_t queries, int64_t keys, int64_t offset, T fill) {
  TANDEM_CUDA_LOOP(i, n) {
    const int64_t row = i / keys, key = i % keys;
    y[i] = key < causal_visible_keys(row, queries, offset, keys) ? x[i] : fill;
  }
}

template <class T>
KernelFn make_causal_mask(const KernelInit& k) {
  const Shape& shape = k.in_types[0].shape;
  const int64_t queries = shape[-2], keys = shape[-1], n = numel(k.in_types[0]);
  const int64_t offset = k.node.attrs.i("offset");
  const T fill = static_cast<T>(k.node.attrs.f("value"));
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  if (n == 0) return {};
  const unsigned grid = blocks_for(n, context(k));
  cudaStream_t s = stream(k);
  const std::string label = kernel_label(k);
  return [=] {
    causal_mask_kernel<<<grid, kBlock, 0, s>>>(y, x, n, queries, keys, offset, fill);
    check_launch(label);
  };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("causal_mask", make_causal_mask);

}  // namespace tandem::backend::cuda

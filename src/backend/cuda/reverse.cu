// reverse along one axis on CUDA devices: x viewed as (outer, n, inner), the middle index mirrored.
#include "backend/cuda/kernel_util.cuh"
#include "ops/ops.h"

namespace tandem::backend::cuda {

namespace {
template <class T>
__global__ void reverse_kernel(T* y, const T* x, int64_t total, int64_t n, int64_t inner) {
  TANDEM_CUDA_LOOP(i, total) {
    const int64_t j = i % inner, r = i / inner, o = r / n, t = r % n;
    y[(o * n + (n - 1 - t)) * inner + j] = x[i];
  }
}

template <class T>
KernelFn make_reverse(const KernelInit& k) {
  const Shape& s = k.in_types[0].shape;
  const int axis = ops::normalize_axis(k.node.attrs.i("axis"), s.rank(), "reverse");
  int64_t inner = 1;
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
  const int64_t n = s[axis], total = numel(k.in_types[0]);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  return launch_over(k, total, [=](unsigned grid, cudaStream_t st) { reverse_kernel<<<grid, kBlock, 0, st>>>(y, x, total, n, inner); });
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("reverse", make_reverse);

}  // namespace tandem::backend::cuda

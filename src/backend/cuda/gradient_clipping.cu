// clip_by_value and scale_by_norm on CUDA devices, with the CPU kernels' clip and factor
// (backend/elementwise_math.h).
#include "backend/cuda/elementwise.cuh"
#include "backend/elementwise_math.h"

namespace tandem::backend::cuda {

namespace {
template <class T>
struct ClipToLimit {
  T limit;
  __device__ T operator()(T x) const { return clip_to_limit(x, limit); }
};
template <class T>
KernelFn make_clip_by_value(const KernelInit& k) { return map1<T>(k, ClipToLimit<T>{static_cast<T>(k.node.attrs.f("limit"))}); }

// The sum of squares is this step's, in device memory: every thread reads it (one cached load) and
// derives the factor itself, so no pass has to go first.
template <class T>
__global__ void scale_by_norm_kernel(T* y, const T* x, const T* sum_of_squares, int64_t n, T limit) {
  const T factor = norm_clip_factor(*sum_of_squares, limit);
  TANDEM_CUDA_LOOP(i, n) y[i] = x[i] * factor;
}

template <class T>
KernelFn make_scale_by_norm(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  const T* sum_of_squares = in<T>(k, 1);
  T* y = out<T>(k);
  const T limit = static_cast<T>(k.node.attrs.f("limit"));
  const int64_t n = numel(k.out_type());
  return launch_over(k, n, [=](unsigned grid, cudaStream_t s) { scale_by_norm_kernel<<<grid, kBlock, 0, s>>>(y, x, sum_of_squares, n, limit); });
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("clip_by_value", make_clip_by_value);
REGISTER_CUDA_FLOAT_KERNEL("scale_by_norm", make_scale_by_norm);

}  // namespace tandem::backend::cuda

// activation_bias_grad(dy, y) -> (dx, dbias) on CUDA devices: one pass that writes the
// activation's gradient and sums each column of it. A column is a line of the reduction machinery
// (reduction.cuh), so its sum has a fixed order and the same bits on every run. For the 16-bit
// types the sum runs in float32 over dx as stored, as the unfused gradient and reduce_sum give,
// and is rounded to the 16-bit type or, with output_dtype float32 (a float32 bias's gradient under
// mixed precision), written as it is.
#include "backend/cuda/low_precision.cuh"
#include "backend/cuda/reduction.cuh"
#include "backend/fused_activation.h"

namespace tandem::backend::cuda {

namespace {
template <class Group, class T, class Out, class Grad>
__global__ void activation_bias_grad_kernel(T* dx, Out* dbias, const T* dy, const T* y, AxisLines columns, Grad grad) {
  for (int64_t c = Group::first_line(); c < columns.count(); c += Group::line_stride()) {
    const int64_t base = columns.base(c);
    using C = compute_t<T>;
    const C sum = line_reduce<Group>(columns.n, C(0), Plus{}, [&](int64_t r) {
      const int64_t i = base + r * columns.inner;
      const T d = apply_rounded<T>(grad, dy[i], y[i]);
      dx[i] = d;
      return static_cast<C>(d);
    });
    if (Group::lane() == 0) dbias[c] = static_cast<Out>(sum);
  }
}

template <class T, class Out>
KernelFn make_fused_gradient(const KernelInit& k) {
  const T* dy = in<T>(k, 0);
  const T* y = in<T>(k, 1);
  T* dx = out<T>(k, 0);
  Out* dbias = out<Out>(k, 1);
  const int64_t cols = k.in_types[0].shape.back(), rows = numel(k.in_types[0]) / (cols > 0 ? cols : 1);
  // Column c holds the rows' elements c, cols apart.
  const LineLaunch shape(AxisLines(1, rows, cols), context(k));
  return with_activation_grad(parse_activation(k.node.attrs.s("activation")), [&](auto grad) {
    return line_kernel(k, shape, [=](auto group, unsigned grid, cudaStream_t s) {
      activation_bias_grad_kernel<decltype(group)><<<grid, kBlock, 0, s>>>(dx, dbias, dy, y, shape.lines, grad);
    });
  });
}

template <class T>
KernelFn make_activation_bias_grad(const KernelInit& k) {
  if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double>)
    if (k.out_type(1).dtype == DType::F32) return make_fused_gradient<T, float>(k);
  return make_fused_gradient<T, T>(k);
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("activation_bias_grad", make_activation_bias_grad);
REGISTER_CUDA_16BIT_KERNEL("activation_bias_grad", make_activation_bias_grad);

}  // namespace tandem::backend::cuda

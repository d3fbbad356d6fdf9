// matmul (leading axes of the left operand folded into rows) through cuBLASLt, and bias_add, on
// CUDA devices.
#include "backend/cuda/elementwise.cuh"
#include "backend/cuda/gemm.h"

namespace tandem::backend::cuda {

namespace {
template <class T>
KernelFn make_matmul(const KernelInit& k) {
  const Shape& as = k.in_types[0].shape;
  const Shape& bs = k.in_types[1].shape;
  GemmShape s{.transpose_a = k.node.attrs.b("transpose_a"), .transpose_b = k.node.attrs.b("transpose_b")};
  s.k = s.transpose_a ? as[0] : as.back();
  s.m = 1;  // with transpose_a the left operand is a matrix; otherwise every axis but the last is rows
  if (s.transpose_a) s.m = as[1];
  else
    for (int i = 0; i + 1 < as.rank(); ++i) s.m *= as[i];
  s.n = s.transpose_b ? bs[0] : bs[1];
  const Gemm gemm(context(k), k.in_types[0].dtype, s, in<T>(k, 0), in<T>(k, 1), out<T>(k), kernel_label(k));
  return [gemm] { gemm.run(); };
}

struct Add { template <class T> __device__ T operator()(T x, T bias) const { return x + bias; } };

// The bias, of the last axis's length, broadcasts against x.
template <class T> KernelFn make_bias_add(const KernelInit& k) { return broadcast2<T>(k, Add{}); }
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("matmul", make_matmul);
REGISTER_CUDA_FLOAT_KERNEL("bias_add", make_bias_add);

}  // namespace tandem::backend::cuda

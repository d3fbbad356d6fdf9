// matmul (leading axes of the left operand folded into rows) through cuBLASLt, bias_add, and
// fused_matmul (the product, then bias and activation in one pass), on CUDA devices.
#include "backend/cuda/bias_activation.cuh"
#include "backend/cuda/elementwise.cuh"
#include "backend/cuda/gemm.h"

namespace tandem::backend::cuda {

namespace {
// The product of inputs 0 and 1 into the output.
template <class T>
Gemm product(const KernelInit& k) {
  const Shape& as = k.in_types[0].shape;
  const Shape& bs = k.in_types[1].shape;
  GemmShape s{.transpose_a = k.node.attrs.b("transpose_a"), .transpose_b = k.node.attrs.b("transpose_b")};
  s.k = s.transpose_a ? as[0] : as.back();
  s.m = 1;  // with transpose_a the left operand is a matrix; otherwise every axis but the last is rows
  if (s.transpose_a) s.m = as[1];
  else
    for (int i = 0; i + 1 < as.rank(); ++i) s.m *= as[i];
  s.n = s.transpose_b ? bs[0] : bs[1];
  s.wide_c = k.out_type().dtype != k.in_types[0].dtype;  // matmul's output_dtype float32 on 16-bit operands
  return Gemm(context(k), k.in_types[0].dtype, s, in<T>(k, 0), in<T>(k, 1), k.out[0], kernel_label(k));
}

template <class T>
KernelFn make_matmul(const KernelInit& k) {
  const Gemm gemm = product<T>(k);
  return [gemm] { gemm.run(); };
}

// Inputs (a, b, bias), attrs as matmul's and "activation".
template <class T>
KernelFn make_fused_matmul(const KernelInit& k) {
  const Gemm gemm = product<T>(k);
  const BiasActivation<T> epilogue(k, in<T>(k, 2));
  T* y = out<T>(k);
  return [gemm, epilogue, y] {
    gemm.run();
    epilogue(y);
  };
}

struct Add { template <class T> __device__ T operator()(T x, T bias) const { return x + bias; } };

// The bias, of the last axis's length, broadcasts against x.
template <class T> KernelFn make_bias_add(const KernelInit& k) { return broadcast2<T>(k, Add{}); }
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("matmul", make_matmul);
REGISTER_CUDA_16BIT_KERNEL("matmul", make_matmul);
REGISTER_CUDA_FLOAT_KERNEL("bias_add", make_bias_add);
REGISTER_CUDA_16BIT_KERNEL("bias_add", make_bias_add);
REGISTER_CUDA_FLOAT_KERNEL("fused_matmul", make_fused_matmul);
REGISTER_CUDA_16BIT_KERNEL("fused_matmul", make_fused_matmul);

}  // namespace tandem::backend::cuda

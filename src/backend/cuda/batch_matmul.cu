// batch_matmul on CUDA devices: one strided-batched cuBLASLt GEMM over the leading axes.
#include "backend/cuda/gemm.h"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/low_precision.cuh"

namespace tandem::backend::cuda {

namespace {
template <class T>
KernelFn make_batch_matmul(const KernelInit& k) {
  const Shape &as = k.in_types[0].shape, &bs = k.in_types[1].shape;
  GemmShape s{.transpose_a = k.node.attrs.b("transpose_a"), .transpose_b = k.node.attrs.b("transpose_b")};
  s.m = s.transpose_a ? as[-1] : as[-2];
  s.k = s.transpose_a ? as[-2] : as[-1];
  s.n = s.transpose_b ? bs[-2] : bs[-1];
  for (int i = 0; i < as.rank() - 2; ++i) s.batch *= as[i];
  s.a_stride = s.m * s.k, s.b_stride = s.k * s.n, s.c_stride = s.m * s.n;
  const Gemm gemm(context(k), k.in_types[0].dtype, s, in<T>(k, 0), in<T>(k, 1), out<T>(k), kernel_label(k));
  return [gemm] { gemm.run(); };
}
}  // namespace

REGISTER_CUDA_FLOAT_KERNEL("batch_matmul", make_batch_matmul);
REGISTER_CUDA_16BIT_KERNEL("batch_matmul", make_batch_matmul);

}  // namespace tandem::backend::cuda

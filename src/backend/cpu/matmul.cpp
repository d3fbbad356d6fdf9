// matmul (leading axes of the left operand folded into rows), bias_add, and fused_matmul: the
// product with the bias and activation applied by the GEMM's epilogue to each thread's block.
#include <Eigen/Core>

#include <functional>

#include "backend/cpu/convert16.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_util.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_product(const KernelInit& k, Epilogue<T> epilogue) {
  const bool ta = k.node.attrs.b("transpose_a"), tb = k.node.attrs.b("transpose_b");
  const Shape& as = k.in_types[0].shape;
  const Shape& bs = k.in_types[1].shape;
  const int64_t kk = ta ? as[0] : as.back();
  const int64_t m = ta ? as[1] : as.num_elements() / kk;
  const int64_t n = tb ? bs[0] : bs[1];
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  T* c = out<T>(k);
  Context* ctx = &context(k);
  return [=] { gemm<T>(*ctx, ta, tb, m, n, kk, a, b, c, T(0), epilogue); };
}

template <class T>
KernelFn make_matmul(const KernelInit& k) {
  if constexpr (is_low_precision_v<T>) {
    if (k.out_type().dtype == DType::F32) {  // output_dtype: the float32 sums of 16-bit operands, kept
      const bool ta = k.node.attrs.b("transpose_a"), tb = k.node.attrs.b("transpose_b");
      const Shape& as = k.in_types[0].shape;
      const int64_t kk = ta ? as[0] : as.back(), m = ta ? as[1] : as.num_elements() / kk;
      const int64_t n = tb ? k.in_types[1].shape[0] : k.in_types[1].shape[1];
      const T* a = in<T>(k, 0);
      const T* b = in<T>(k, 1);
      float* c = out<float>(k);
      Context* ctx = &context(k);
      return [=] { gemm_wide<T>(*ctx, ta, tb, m, n, kk, a, b, c, 0.0f); };
    }
  }
  return make_product<T>(k, {});
}

template <class T>
KernelFn make_fused_matmul(const KernelInit& k) {
  return make_product<T>(k, {in<T>(k, 2), parse_activation(k.node.attrs.s("activation"))});
}

template <class T>
KernelFn make_bias_add(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  const T* bias = in<T>(k, 1);
  T* y = out<T>(k);
  const int64_t cols = k.in_types[1].shape[0];
  const int64_t rows = numel(k.out_type()) / cols;
  Context* ctx = &context(k);
  return [=] {
    ctx->parallel_for(rows, kElementwiseGrain / cols + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        if constexpr (is_low_precision_v<T>) map_chunked(0, cols, y + r * cols, std::plus<>{}, x + r * cols, bias);
        else for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] + bias[c];
    });
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("matmul", make_matmul);
REGISTER_CPU_16BIT_KERNEL("matmul", make_matmul);
REGISTER_CPU_FLOAT_KERNEL("bias_add", make_bias_add);
REGISTER_CPU_16BIT_KERNEL("bias_add", make_bias_add);
REGISTER_CPU_FLOAT_KERNEL("fused_matmul", make_fused_matmul);
REGISTER_CPU_16BIT_KERNEL("fused_matmul", make_fused_matmul);

}  // namespace tandem::backend::cpu

// batch_matmul: one GEMM per batch item. With at least as many items as threads, threads take
// whole items (each GEMM single-threaded); otherwise items run in turn, each GEMM split across the
// device's threads. Never both: a GEMM inside a pool task must not wait on the same pool.
#include <Eigen/Core>

#include <algorithm>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_util.h"

namespace tandem::backend::cpu {

namespace {
// A context without a pool: its parallel_for runs inline on the calling thread, from any thread.
Context& inline_context() {
  static Context serial(1);
  return serial;
}

template <class T>
KernelFn make_batch_matmul(const KernelInit& k) {
  const bool ta = k.node.attrs.b("transpose_a"), tb = k.node.attrs.b("transpose_b");
  const Shape &as = k.in_types[0].shape, &bs = k.in_types[1].shape;
  const int r = as.rank();
  const int64_t m = ta ? as[-1] : as[-2], kk = ta ? as[-2] : as[-1], n = tb ? bs[-2] : bs[-1];
  int64_t batch = 1;
  for (int i = 0; i < r - 2; ++i) batch *= as[i];
  const int64_t a_step = m * kk, b_step = kk * n, c_step = m * n;
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  T* c = out<T>(k);
  Context* ctx = &context(k);
  if (batch * c_step == 0) return {};
  if (kk == 0)  // an empty inner dimension: the product is all zeros
    return [=] { std::fill(c, c + batch * c_step, T(0)); };
  if (batch >= ctx->threads()) {
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / (m * n * kk));
    return [=] {
      ctx->parallel_for(batch, grain, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i)
          gemm<T>(inline_context(), ta, tb, m, n, kk, a + i * a_step, b + i * b_step, c + i * c_step);
      });
    };
  }
  return [=] {
    for (int64_t i = 0; i < batch; ++i) gemm<T>(*ctx, ta, tb, m, n, kk, a + i * a_step, b + i * b_step, c + i * c_step);
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("batch_matmul", make_batch_matmul);
REGISTER_CPU_16BIT_KERNEL("batch_matmul", make_batch_matmul);

}  // namespace tandem::backend::cpu

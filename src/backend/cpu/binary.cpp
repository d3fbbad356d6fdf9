// add, sub, mul, div with broadcasting, and broadcast_to.
#include "backend/cpu/kernel_util.h"
#include "backend/cpu/strided.h"

namespace tandem::backend::cpu {

namespace {
template <class T, class F>
KernelFn binary(const KernelInit& k, F f) {
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  T* y = out<T>(k);
  const int64_t n = numel(k.out_type());
  Context* ctx = &context(k);
  if (k.in_types[0].shape == k.in_types[1].shape)  // the common case: no broadcasting
    return [=] {
      ctx->parallel_for(n, kElementwiseGrain, [&](int64_t s, int64_t e) { for (int64_t i = s; i < e; ++i) y[i] = f(a[i], b[i]); });
    };
  BroadcastPlan plan(k.out_type().shape, k.in_types[0].shape, k.in_types[1].shape);
  return [=] { plan.run([&](int64_t i, int64_t ia, int64_t ib) { y[i] = f(a[ia], b[ib]); }); };
}

template <class T> KernelFn make_add(const KernelInit& k) { return binary<T>(k, [](T x, T z) { return x + z; }); }
template <class T> KernelFn make_sub(const KernelInit& k) { return binary<T>(k, [](T x, T z) { return x - z; }); }
template <class T> KernelFn make_mul(const KernelInit& k) { return binary<T>(k, [](T x, T z) { return x * z; }); }
template <class T> KernelFn make_div(const KernelInit& k) { return binary<T>(k, [](T x, T z) { return x / z; }); }

template <class T>
KernelFn make_broadcast_to(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  BroadcastPlan plan(k.out_type().shape, k.in_types[0].shape, k.in_types[0].shape);
  return [=] { plan.run([&](int64_t i, int64_t ix, int64_t) { y[i] = x[ix]; }); };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("add", make_add);
REGISTER_CPU_FLOAT_KERNEL("sub", make_sub);
REGISTER_CPU_FLOAT_KERNEL("mul", make_mul);
REGISTER_CPU_FLOAT_KERNEL("div", make_div);
REGISTER_CPU_FLOAT_KERNEL("broadcast_to", make_broadcast_to);

}  // namespace tandem::backend::cpu

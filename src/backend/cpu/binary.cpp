// add, sub, mul, div with broadcasting, and broadcast_to.
#include <Eigen/Core>

#include "backend/cpu/elementwise.h"

namespace tandem::backend::cpu {

namespace {
template <class T> KernelFn make_add(const KernelInit& k) { return broadcast2<T>(k, [](auto x, auto z) { return x + z; }); }
template <class T> KernelFn make_sub(const KernelInit& k) { return broadcast2<T>(k, [](auto x, auto z) { return x - z; }); }
template <class T> KernelFn make_mul(const KernelInit& k) { return broadcast2<T>(k, [](auto x, auto z) { return x * z; }); }
template <class T> KernelFn make_div(const KernelInit& k) { return broadcast2<T>(k, [](auto x, auto z) { return x / z; }); }

template <class T>
KernelFn make_broadcast_to(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  BroadcastPlan plan(k.out_type().shape, k.in_types[0].shape, k.in_types[0].shape);
  return [=] { plan.run([&](int64_t i, int64_t ix, int64_t) { y[i] = x[ix]; }); };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("add", make_add);
REGISTER_CPU_16BIT_KERNEL("add", make_add);
REGISTER_CPU_FLOAT_KERNEL("sub", make_sub);
REGISTER_CPU_16BIT_KERNEL("sub", make_sub);
REGISTER_CPU_FLOAT_KERNEL("mul", make_mul);
REGISTER_CPU_16BIT_KERNEL("mul", make_mul);
REGISTER_CPU_FLOAT_KERNEL("div", make_div);
REGISTER_CPU_16BIT_KERNEL("div", make_div);
REGISTER_CPU_FLOAT_KERNEL("broadcast_to", make_broadcast_to);

}  // namespace tandem::backend::cpu

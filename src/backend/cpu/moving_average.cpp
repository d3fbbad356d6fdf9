// assign_moving_average: variable = variable·momentum + value·(1 − momentum), in place, computed in
// the variable's dtype like Keras's BatchNormalization does (backend/elementwise_math.h, shared
// with the CUDA kernel).
#include "backend/cpu/kernel_util.h"
#include "backend/elementwise_math.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_assign_moving_average(const KernelInit& k) {
  T* variable = static_cast<T*>(k.in[0]);
  const T* value = in<T>(k, 1);
  const int64_t n = numel(k.in_types[0]);
  const double momentum = k.node.attrs.f("momentum");
  const T keep = T(momentum), take = T(1.0 - momentum);
  return [=] {
    for (int64_t i = 0; i < n; ++i) variable[i] = moving_average(variable[i], value[i], keep, take);
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("assign_moving_average", make_assign_moving_average);

}  // namespace tandem::backend::cpu

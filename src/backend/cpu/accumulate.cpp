// accumulate (acc += g) and assign_zero (acc = 0) over variables.
#include <algorithm>

#include "backend/cpu/kernel_util.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_accumulate(const KernelInit& k) {
  T* acc = static_cast<T*>(k.in[0]);
  const T* g = in<T>(k, 1);
  const int64_t n = numel(k.in_types[0]);
  return [=] { for (int64_t i = 0; i < n; ++i) acc[i] += g[i]; };
}

template <class T>
KernelFn make_assign_zero(const KernelInit& k) {
  T* acc = static_cast<T*>(k.in[0]);
  const int64_t n = numel(k.in_types[0]);
  return [=] { std::fill(acc, acc + n, T(0)); };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("accumulate", make_accumulate);
REGISTER_CPU_FLOAT_KERNEL("assign_zero", make_assign_zero);

}  // namespace tandem::backend::cpu

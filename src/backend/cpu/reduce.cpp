// reduce_sum and reduce_mean. Summation order is fixed (input order), so results are deterministic.
#include <algorithm>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/strided.h"
#include "ops/ops.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_reduce(const KernelInit& k, bool mean) {
  std::vector<int64_t> axes;
  for (int64_t a : k.node.attrs.ints("axes")) axes.push_back(ops::normalize_axis(a, k.in_types[0].shape.rank(), "reduce"));
  ReducePlan plan(k.in_types[0].shape, axes);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const int64_t n_out = plan.out_count;
  const T factor = mean ? T(plan.out_count) / T(std::max<int64_t>(1, plan.in_count)) : T(1);
  return [=] {
    std::fill(y, y + n_out, T(0));
    plan.run([&](int64_t i, int64_t o) { y[o] += x[i]; });
    if (mean)
      for (int64_t o = 0; o < n_out; ++o) y[o] *= factor;
  };
}

template <class T> KernelFn make_sum(const KernelInit& k) { return make_reduce<T>(k, false); }
template <class T> KernelFn make_mean(const KernelInit& k) { return make_reduce<T>(k, true); }
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("reduce_sum", make_sum);
REGISTER_CPU_FLOAT_KERNEL("reduce_mean", make_mean);

}  // namespace tandem::backend::cpu

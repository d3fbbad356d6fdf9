// reduce_sum, reduce_mean and reduce_max. The summation order depends only on the shapes and the device's
// thread count, so results are deterministic.
#include <algorithm>
#include <limits>
#include <memory>

#include "backend/cpu/column_sums.h"
#include "backend/cpu/kernel_util.h"
#include "backend/strided.h"
#include "ops/ops.h"

namespace tandem::backend::cpu {

namespace {
ReducePlan plan_of(const KernelInit& k) {
  std::vector<int64_t> axes;
  for (int64_t a : k.node.attrs.ints("axes")) axes.push_back(ops::normalize_axis(a, k.in_types[0].shape.rank(), k.node.op.c_str()));
  return ReducePlan(k.in_types[0].shape, axes);
}

template <class T>
KernelFn make_reduce(const KernelInit& k, bool mean) {
  const ReducePlan plan = plan_of(k);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const int64_t n_out = plan.out_count;
  const T factor = mean ? T(plan.out_count) / T(std::max<int64_t>(1, plan.in_count)) : T(1);
  Context* ctx = &context(k);
  auto finish = [=] {
    if (mean)
      for (int64_t o = 0; o < n_out; ++o) y[o] *= factor;
  };

  // Column sums of a (rows, cols) view: bias gradients, batch means.
  if (plan.dims.size() == 2 && plan.out_strides[0] == 0 && plan.out_strides[1] == 1) {
    const int64_t rows = plan.dims[0], cols = plan.dims[1];
    const ColumnSums<T> sums(*ctx, rows, cols);
    return [=] {
      sums.run(y, [&](int64_t r, T* acc) {
        for (int64_t c = 0; c < cols; ++c) acc[c] += x[r * cols + c];
      });
      finish();
    };
  }
  return [=] {
    std::fill(y, y + n_out, T(0));
    plan.run([&](int64_t i, int64_t o) { y[o] += x[i]; });
    finish();
  };
}

// NaN wins, as in NumPy and PyTorch.
template <class T>
KernelFn make_max(const KernelInit& k) {
  const ReducePlan plan = plan_of(k);
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  const int64_t n_out = plan.out_count;
  return [=] {
    std::fill(y, y + n_out, -std::numeric_limits<T>::infinity());
    plan.run([&](int64_t i, int64_t o) {
      if (x[i] != x[i] || x[i] > y[o]) y[o] = x[i];
    });
  };
}

template <class T> KernelFn make_sum(const KernelInit& k) { return make_reduce<T>(k, false); }
template <class T> KernelFn make_mean(const KernelInit& k) { return make_reduce<T>(k, true); }
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("reduce_sum", make_sum);
REGISTER_CPU_FLOAT_KERNEL("reduce_mean", make_mean);
REGISTER_CPU_FLOAT_KERNEL("reduce_max", make_max);

}  // namespace tandem::backend::cpu

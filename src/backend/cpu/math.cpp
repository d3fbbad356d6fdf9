// Elementwise math, comparisons, maximum/minimum, select and one_hot. The per-element math is in
// backend/elementwise_math.h, shared with the CUDA kernels.
#include <algorithm>

#include "backend/cpu/elementwise.h"
#include "backend/elementwise_math.h"

namespace tandem::backend::cpu {

namespace {
template <class T> KernelFn make_exp(const KernelInit& k) { return map1<T>(k, Exp{}); }
template <class T> KernelFn make_log(const KernelInit& k) { return map1<T>(k, Log{}); }
template <class T> KernelFn make_sqrt(const KernelInit& k) { return map1<T>(k, Sqrt{}); }
template <class T> KernelFn make_square(const KernelInit& k) { return map1<T>(k, Square{}); }
template <class T> KernelFn make_abs(const KernelInit& k) { return map1<T>(k, Abs{}); }
template <class T> KernelFn make_sign(const KernelInit& k) { return map1<T>(k, Sign{}); }

template <class T> KernelFn make_greater(const KernelInit& k) { return broadcast2<T>(k, Greater{}); }
template <class T> KernelFn make_greater_equal(const KernelInit& k) { return broadcast2<T>(k, GreaterEqual{}); }
template <class T> KernelFn make_less(const KernelInit& k) { return broadcast2<T>(k, Less{}); }
template <class T> KernelFn make_less_equal(const KernelInit& k) { return broadcast2<T>(k, LessEqual{}); }
template <class T> KernelFn make_equal_to(const KernelInit& k) { return broadcast2<T>(k, EqualTo{}); }
template <class T> KernelFn make_not_equal(const KernelInit& k) { return broadcast2<T>(k, NotEqual{}); }
template <class T> KernelFn make_maximum(const KernelInit& k) { return broadcast2<T>(k, Maximum{}); }
template <class T> KernelFn make_minimum(const KernelInit& k) { return broadcast2<T>(k, Minimum{}); }

template <class T>
KernelFn make_select(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  const T* y = in<T>(k, 1);
  const T* c = in<T>(k, 2);
  T* z = out<T>(k);
  Context* ctx = &context(k);
  const int64_t n = numel(k.out_type());
  return [=] {
    ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) z[i] = c[i] != T(0) ? x[i] : y[i]; });
  };
}

template <class Id, class T>
KernelFn one_hot_rows(const KernelInit& k) {
  const Id* ids = in<Id>(k, 0);
  T* y = out<T>(k);
  const int64_t depth = k.node.attrs.i("depth"), rows = numel(k.in_types[0]);
  return [=] {
    std::fill(y, y + rows * depth, T(0));
    for (int64_t r = 0; r < rows; ++r)
      if (ids[r] >= 0 && ids[r] < depth) y[r * depth + static_cast<int64_t>(ids[r])] = T(1);
  };
}
template <class Id>
KernelFn make_one_hot(const KernelInit& k) {
  return k.out_type().dtype == DType::F64 ? one_hot_rows<Id, double>(k) : one_hot_rows<Id, float>(k);
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("exp", make_exp);
REGISTER_CPU_FLOAT_KERNEL("log", make_log);
REGISTER_CPU_FLOAT_KERNEL("sqrt", make_sqrt);
REGISTER_CPU_FLOAT_KERNEL("square", make_square);
REGISTER_CPU_FLOAT_KERNEL("abs", make_abs);
REGISTER_CPU_FLOAT_KERNEL("sign", make_sign);
REGISTER_CPU_FLOAT_KERNEL("greater", make_greater);
REGISTER_CPU_FLOAT_KERNEL("greater_equal", make_greater_equal);
REGISTER_CPU_FLOAT_KERNEL("less", make_less);
REGISTER_CPU_FLOAT_KERNEL("less_equal", make_less_equal);
REGISTER_CPU_FLOAT_KERNEL("equal_to", make_equal_to);
REGISTER_CPU_FLOAT_KERNEL("not_equal", make_not_equal);
REGISTER_CPU_FLOAT_KERNEL("maximum", make_maximum);
REGISTER_CPU_FLOAT_KERNEL("minimum", make_minimum);
REGISTER_CPU_FLOAT_KERNEL("select", make_select);
REGISTER_KERNEL("one_hot", DeviceKind::Cpu, DType::I32, make_one_hot<int32_t>);
REGISTER_KERNEL("one_hot", DeviceKind::Cpu, DType::I64, make_one_hot<int64_t>);

}  // namespace tandem::backend::cpu

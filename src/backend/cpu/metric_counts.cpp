// confusion_counts and in_top_k (ops/metric_counts.cpp).
#include <algorithm>
#include <cmath>
#include <memory>

#include "backend/cpu/kernel_util.h"
#include "backend/loss_math.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_confusion_counts(const KernelInit& k) {
  const T* p = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  const T* w = k.in.size() == 3 ? in<T>(k, 2) : nullptr;  // each element's weight; none: 1
  T* y = out<T>(k);
  const int64_t n = numel(k.in_types[0]), thresholds = k.node.attrs.i("num_thresholds");
  const double single = thresholds == 1 ? k.node.attrs.f("threshold") : 0.0;
  auto cut = std::make_shared<std::vector<T>>();  // built once, when the kernel is made
  for (int64_t i = 0; i < thresholds; ++i) cut->push_back(loss::confusion_threshold<T>(i, thresholds, single));
  return [=] {
    std::fill(y, y + 2 * thresholds + 2, T(0));
    for (int64_t e = 0; e < n; ++e) {
      const bool positive = t[e] != T(0);
      const T weight = w ? w[e] : T(1);
      T* counts = y + (positive ? 0 : thresholds);
      for (int64_t c = 0; c < thresholds; ++c) counts[c] += p[e] > (*cut)[static_cast<std::size_t>(c)] ? weight : T(0);
      y[2 * thresholds + (positive ? 0 : 1)] += weight;
    }
  };
}

template <class T, class Id>
KernelFn top_k_rows(const KernelInit& k) {
  const T* p = in<T>(k, 0);
  const Id* ids = in<Id>(k, 1);
  T* y = out<T>(k);
  const int64_t rows = k.in_types[0].shape[0], classes = k.in_types[0].shape[1], top = k.node.attrs.i("k");
  return [=] {
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = p + r * classes;
      const int64_t id = static_cast<int64_t>(ids[r]);
      if (id < 0 || id >= classes || std::isnan(row[id])) {  // no class to find: a miss, as in Keras
        y[r] = T(0);
        continue;
      }
      int64_t above = 0;
      for (int64_t c = 0; c < classes; ++c) above += row[c] > row[id];
      y[r] = above < top ? T(1) : T(0);
    }
  };
}
template <class T>
KernelFn make_in_top_k(const KernelInit& k) {
  return k.in_types[1].dtype == DType::I64 ? top_k_rows<T, int64_t>(k) : top_k_rows<T, int32_t>(k);
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("confusion_counts", make_confusion_counts);
REGISTER_CPU_FLOAT_KERNEL("in_top_k", make_in_top_k);

}  // namespace tandem::backend::cpu

// dropout (counter-based mask), argmax, equal and binary_accuracy.
#include <Eigen/Core>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/low_precision.h"
#include "core/random.h"
#include "ops/ops.h"

namespace tandem::backend::cpu {

namespace {
template <class T>
KernelFn make_dropout(const KernelInit& k) {
  const T* x = in<T>(k, 0);
  const int64_t* step = in<int64_t>(k, 1);
  T* y = out<T>(k);
  const double rate = k.node.attrs.f("rate");
  const auto seed = static_cast<uint64_t>(k.node.attrs.i("seed"));
  // Micro-batch j of a step holds the global rows from j × micro_rows on.
  const int64_t row_offset = k.node.attrs.i("row_offset", 0) + k.micro_batch * k.node.attrs.i("micro_rows", 0);
  const int64_t rows = k.in_types[0].shape[0], cols = numel(k.in_types[0]) / std::max<int64_t>(1, rows);
  using C = compute_t<T>;  // the 16-bit types scale in float32 and round once
  const C keep_scale = C(1) / C(1 - rate);
  const int64_t period = k.node.attrs.i("mask_period", 0);  // > 0: columns this far apart share a mask
  Context* ctx = &context(k);
  return [=] {
    const auto s = static_cast<uint64_t>(*step);
    ctx->parallel_for(rows, kElementwiseGrain / (cols + 1) + 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t key = period > 0 ? c % period : c;
          const bool keep = rng::uniform(seed, s, static_cast<uint64_t>(row_offset + r), static_cast<uint64_t>(key)) >= rate;
          // Multiplying by 0 instead of writing 0 keeps a dropped NaN or inf visible (NaN), as
          // PyTorch's dropout does; the gradient runs this same kernel on dy.
          y[r * cols + c] = static_cast<T>(static_cast<C>(x[r * cols + c]) * (keep ? keep_scale : C(0)));
        }
    });
  };
}

template <class T>
KernelFn make_argmax(const KernelInit& k) {
  const Shape& s = k.in_types[0].shape;
  const int axis = ops::normalize_axis(k.node.attrs.i("axis"), s.rank(), "argmax");
  int64_t outer = 1, n = s[axis], inner = 1;
  for (int i = 0; i < s.rank(); ++i)
    if (i != axis) (i < axis ? outer : inner) *= s[i];
  const T* x = in<T>(k, 0);
  int64_t* y = out<int64_t>(k);
  return [=] {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* line = x + o * n * inner + i;
        int64_t best = 0;
        // The first maximum wins, and a NaN beats every number (the first NaN wins): PyTorch's and
        // NumPy's argmax, so a NaN prediction is not hidden behind a finite class.
        for (int64_t j = 1; j < n; ++j) {
          const T v = line[j * inner], b = line[best * inner];
          if (v > b || (v != v && b == b)) best = j;
        }
        y[o * inner + i] = best;
      }
  };
}

template <class T>
KernelFn make_equal(const KernelInit& k) {
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  float* y = out<float>(k);
  const int64_t n = numel(k.out_type());
  return [=] { for (int64_t i = 0; i < n; ++i) y[i] = a[i] == b[i] ? 1.0f : 0.0f; };
}
template <class T>
KernelFn make_binary_accuracy(const KernelInit& k) {
  const T* p = in<T>(k, 0);
  const T* t = in<T>(k, 1);
  float* y = out<float>(k);
  const T threshold = static_cast<T>(k.node.attrs.f("threshold"));
  const int64_t c = k.in_types[0].shape.back(), rows = numel(k.in_types[0]) / c;
  return [=] {
    for (int64_t r = 0; r < rows; ++r) {
      int64_t hits = 0;
      for (int64_t j = 0; j < c; ++j) hits += (p[r * c + j] > threshold) == (t[r * c + j] > T(0.5));
      y[r] = static_cast<float>(hits) / static_cast<float>(c);
    }
  };
}
}  // namespace

REGISTER_CPU_FLOAT_KERNEL("binary_accuracy", make_binary_accuracy);
REGISTER_CPU_FLOAT_KERNEL("dropout", make_dropout);
REGISTER_CPU_16BIT_KERNEL("dropout", make_dropout);
REGISTER_CPU_FLOAT_KERNEL("argmax", make_argmax);
REGISTER_CPU_FLOAT_KERNEL("equal", make_equal);
REGISTER_KERNEL("equal", DeviceKind::Cpu, DType::I64, make_equal<int64_t>);
REGISTER_KERNEL("equal", DeviceKind::Cpu, DType::I32, make_equal<int32_t>);

}  // namespace tandem::backend::cpu

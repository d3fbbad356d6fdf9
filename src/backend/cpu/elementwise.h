// Loops shared by the elementwise kernels: one input, two same-shaped inputs, and two inputs with
// NumPy broadcasting. Each returns the kernel that applies `f` per element, in T's compute type
// (float32 for bfloat16 and float16, rounded once at the store; low_precision.h), so `f` is
// generic: a functor of elementwise_math.h or a lambda taking `auto`. The 16-bit types convert a
// chunk at a time (convert16.h), with vector instructions.
#pragma once

#include "backend/cpu/convert16.h"
#include "backend/cpu/kernel_util.h"
#include "backend/cpu/low_precision.h"
#include "backend/strided.h"

namespace tandem::backend::cpu {

// y[i] = f(x[i]).
template <class T, class F>
KernelFn map1(const KernelInit& k, F f) {
  const T* x = in<T>(k, 0);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  const int64_t n = numel(k.out_type());
  return [=] {
    ctx->parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      if constexpr (is_low_precision_v<T>) map_chunked(b, e, y, f, x);
      else for (int64_t i = b; i < e; ++i) y[i] = apply_rounded<T>(f, x[i]);
    });
  };
}

// y[i] = f(a[i], b[i]) for same-shaped inputs (activation gradients: dy and the forward value).
template <class T, class F>
KernelFn map2(const KernelInit& k, F f) {
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  T* y = out<T>(k);
  Context* ctx = &context(k);
  const int64_t n = numel(k.out_type());
  return [=] {
    ctx->parallel_for(n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      if constexpr (is_low_precision_v<T>) map_chunked(s, e, y, f, a, b);
      else for (int64_t i = s; i < e; ++i) y[i] = apply_rounded<T>(f, a[i], b[i]);
    });
  };
}

// y = f(a, b) with broadcasting; same shapes (the common case) take map2's flat loop.
template <class T, class F>
KernelFn broadcast2(const KernelInit& k, F f) {
  if (k.in_types[0].shape == k.in_types[1].shape) return map2<T>(k, f);
  const T* a = in<T>(k, 0);
  const T* b = in<T>(k, 1);
  T* y = out<T>(k);
  BroadcastPlan plan(k.out_type().shape, k.in_types[0].shape, k.in_types[1].shape);
  return [=] { plan.run([&](int64_t i, int64_t ia, int64_t ib) { y[i] = apply_rounded<T>(f, a[ia], b[ib]); }); };
}

}  // namespace tandem::backend::cpu

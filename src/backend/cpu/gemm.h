// Row-major GEMM on one CPU device: C = alpha·op(A)·op(B) + beta·C.
#pragma once

#include <cstdint>

#include "backend/cpu/context.h"
#include "backend/fused_activation.h"

namespace tandem::backend::cpu {

// What a fused op does to each block of C right after the product wrote it, while the block is
// still in cache: C = activation(C + bias), the bias by column (none where null).
template <class T>
struct Epilogue {
  const T* bias = nullptr;
  Activation activation = Activation::Linear;
};

template <class T>
void gemm(Context& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c,
          T beta = T(0), const Epilogue<T>& epilogue = {});

// Applies `e` to rows [r0, r1) and columns [c0, c1) of C (row stride ldc).
template <class T>
void apply_epilogue(const Epilogue<T>& e, T* c, int64_t ldc, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (!e.bias && e.activation == Activation::Linear) return;
  with_activation(e.activation, [&](auto activate) {
    for (int64_t r = r0; r < r1; ++r) {
      T* row = c + r * ldc;
      if (e.bias)
        for (int64_t j = c0; j < c1; ++j) row[j] = activate(row[j] + e.bias[j]);
      else
        for (int64_t j = c0; j < c1; ++j) row[j] = activate(row[j]);
    }
  });
}

}  // namespace tandem::backend::cpu

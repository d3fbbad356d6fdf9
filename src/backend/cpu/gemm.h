// Row-major GEMM on one CPU device: C = alpha·op(A)·op(B) + beta·C.
#pragma once

#include <cstdint>

#include "backend/cpu/context.h"

namespace tandem::backend::cpu {

template <class T>
void gemm(Context& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c,
          T beta = T(0));

}  // namespace tandem::backend::cpu

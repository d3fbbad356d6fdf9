// Row-major GEMM on one CPU device: C = alpha·op(A)·op(B) + beta·C.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/cpu/context.h"
#include "backend/cpu/low_precision.h"
#include "backend/fused_activation.h"

namespace tandem::backend::cpu {

// What a fused op does to each block of C right after the product wrote it, while the block is
// still in cache: C = activation(C + bias), the bias by column (none where null).
template <class T>
struct Epilogue {
  const T* bias = nullptr;
  Activation activation = Activation::Linear;
};

// T is float, double, Eigen::bfloat16 or Eigen::half. The 16-bit products accumulate in float32 and
// round once, after the epilogue (which runs in float32 too); their beta must be 0 (a sum that goes
// on is kept in float32 by gemm_wide instead).
template <class T>
void gemm(Context& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c,
          T beta = T(0), const Epilogue<T>& epilogue = {});

// The product with C in T's compute type (float32 for the 16-bit types, T itself otherwise): for
// sums that go on after the product, such as a convolution's per-image filter gradients or the
// overlapping windows of its input gradient, which must not round at every step.
template <class T>
void gemm_wide(Context& ctx, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b,
               compute_t<T>* c, compute_t<T> beta = 0);

// Which code runs the bfloat16 and the float16 products on this CPU, in words, for benchmarks and
// docs: "oneDNN gemm:jit, avx512_core_bf16 (AVX512-BF16 dot products)", or the float32 fallback.
std::string bf16_path();
std::string f16_path();
// Tests only: false makes the bfloat16 products take the float32 fallback, true restores the
// detected path (the fallback stays where oneDNN has no bfloat16 path).
void use_onednn_bf16(bool use);

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

namespace gemm_detail {
// Throws unless m, n and k fit the libraries' 32-bit sizes.
void check_sizes(int64_t m, int64_t n, int64_t k);
// Before a oneDNN call on this thread: oneDNN sizes its work by the calling thread's OpenMP
// thread count, and one keeps it on this thread (and never starts OpenMP's pool, which would spin
// against the device's).
void one_openmp_thread();
// One float block on the calling thread: C = op(A)·op(B) + beta·C with the given row strides.
// `short_product` says whether the whole product (not just this block) has a side of 16 or fewer
// (OpenBLAS) or not (oneDNN); -1 decides by this block.
void sgemm(bool ta, bool tb, int64_t rows, int64_t cols, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
           int64_t ldc, float beta, int short_product = -1);
constexpr int64_t kShortSide = 16;

// The 16-bit products (gemm_low_precision.cpp): C in T, or in float32 for the wide form.
template <class T>
void low_gemm(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, const Epilogue<T>& e);
template <class T>
void low_gemm_wide(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, float* c, float beta);

// Calls block(r0, r1, c0, c1) on independent blocks of the (m, n) product over the device's
// threads: the larger output side is split, in parts of at least about a million flops. The cut
// depends only on the shapes and the thread count.
template <class Block>
void for_blocks(Context& ctx, int64_t m, int64_t n, int64_t k, const Block& block) {
  check_sizes(m, n, k);
  if (m == 0 || n == 0) return;
  constexpr int64_t kMinFlopsPerThread = 1 << 20;
  const int64_t grain = std::max<int64_t>(1, kMinFlopsPerThread / std::max<int64_t>(1, k * (m >= n ? n : m)));
  if (m >= n) ctx.parallel_for(m, grain, [&](int64_t r0, int64_t r1) { block(r0, r1, int64_t{0}, n); });
  else ctx.parallel_for(n, grain, [&](int64_t c0, int64_t c1) { block(int64_t{0}, m, c0, c1); });
}
// Calls block(r0, r1, c0, c1) on blocks of C that the device's threads share out. The blocks are
// cut by the product's shape alone: the larger side in at most 8 parts, each of at least 64 rows
// (or columns: the other operand is packed once per block) and about a million flops. So an element
// is always computed in a block of the same shape, whatever the thread count: oneDNN's and
// OpenBLAS's GEMMs may sum an element in another order in a block of another shape (seen with Aᵀ
// and k in the hundreds). The 16-bit GEMMs use this; the float GEMM splits by for_blocks.
template <class Block>
void for_fixed_blocks(Context& ctx, int64_t m, int64_t n, int64_t k, const Block& block) {
  check_sizes(m, n, k);
  if (m == 0 || n == 0) return;
  constexpr int64_t kMinFlopsPerBlock = 1 << 20, kMaxBlocks = 8, kMinSide = 64;
  const bool by_rows = m >= n;
  const int64_t side = by_rows ? m : n, other = by_rows ? n : m;
  const int64_t part = std::max({kMinSide, kMinFlopsPerBlock / std::max<int64_t>(1, k * other), (side + kMaxBlocks - 1) / kMaxBlocks});
  const int64_t blocks = (side + part - 1) / part;
  ctx.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t begin = b * part, end = std::min(side, (b + 1) * part);
      if (by_rows) block(begin, end, int64_t{0}, n);
      else block(int64_t{0}, m, begin, end);
    }
  });
}
}  // namespace gemm_detail

}  // namespace tandem::backend::cpu

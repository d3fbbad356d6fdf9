#include "backend/cpu/gemm.h"

#include <Eigen/Core>

namespace tandem::backend::cpu {

namespace {
template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstMap = Eigen::Map<const RowMat<T>>;
template <class T>
using OuterStrided = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using ConstOuterStrided = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;

// One thread's share: rows [r0, r1) and columns [c0, c1) of C, with Eigen's single-threaded GEMM.
template <class T>
void gemm_block(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, T beta, int64_t r0,
                int64_t r1, int64_t c0, int64_t c1) {
  // op(A) rows r0..r1: for A stored (m,k) take rows; for Aᵀ stored (k,m) take columns.
  ConstOuterStrided<T> A(ta ? a + r0 : a + r0 * k, ta ? k : r1 - r0, ta ? r1 - r0 : k, Eigen::OuterStride<>(ta ? m : k));
  ConstOuterStrided<T> B(tb ? b + c0 * k : b + c0, tb ? c1 - c0 : k, tb ? k : c1 - c0, Eigen::OuterStride<>(tb ? k : n));
  OuterStrided<T> C(c + r0 * n + c0, r1 - r0, c1 - c0, Eigen::OuterStride<>(n));
  auto opA = [&](auto&& rhs) {
    if (beta == T(0)) C.noalias() = rhs;
    else C = beta * C + rhs;
  };
  if (!ta && !tb) opA(A * B);
  else if (ta && !tb) opA(A.transpose() * B);
  else if (!ta && tb) opA(A * B.transpose());
  else opA(A.transpose() * B.transpose());
}
}  // namespace

template <class T>
void gemm(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, T beta) {
  // Split the larger output side across the device's threads; each part is an independent GEMM.
  constexpr int64_t kMinFlopsPerThread = 1 << 20;
  const int64_t grain = std::max<int64_t>(1, kMinFlopsPerThread / std::max<int64_t>(1, k * (m >= n ? n : m)));
  if (m >= n) {
    ctx.parallel_for(m, grain, [&](int64_t r0, int64_t r1) { gemm_block(ta, tb, m, n, k, a, b, c, beta, r0, r1, 0, n); });
  } else {
    ctx.parallel_for(n, grain, [&](int64_t c0, int64_t c1) { gemm_block(ta, tb, m, n, k, a, b, c, beta, 0, m, c0, c1); });
  }
}

template void gemm<float>(Context&, bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*, float);
template void gemm<double>(Context&, bool, bool, int64_t, int64_t, int64_t, const double*, const double*, double*, double);

}  // namespace tandem::backend::cpu

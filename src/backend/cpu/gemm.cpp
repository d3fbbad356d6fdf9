// The CPU GEMM, called from the device's own threads on independent blocks of C, each call on its
// caller's thread, so the device's pool stays the only one that works. Float products go to
// oneDNN's sgemm, which ran 1.1–1.7× OpenBLAS's on one core at the models' shapes, most at small
// or thin products; products with a side of 16 or fewer stay with OpenBLAS, ≈8 % faster there
// (bench/bench_gemm.cpp, docs/benchmarks.md). Double products (the f64 gradient checks) go to
// OpenBLAS; its pthread build is the one linked, for Debian's single-threaded build is not safe to
// call from several threads at once (its shared buffers gave wrong products under Mirrored).
#include "backend/cpu/gemm.h"

#include <Eigen/Core>
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <climits>
#include <string>

#include "tandem/errors.h"

namespace tandem::backend::cpu {

namespace {
// Before any product: every call runs on the thread that makes it.
const bool kOneThread = [] {
  openblas_set_num_threads(1);
  return true;
}();

// "MxK by KxN", for errors.
std::string product(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m).append("x").append(std::to_string(k)).append(" by ").append(std::to_string(k)).append("x").append(std::to_string(n));
}
blasint int32(int64_t v) { return static_cast<blasint>(v); }  // gemm checked the sizes fit
CBLAS_TRANSPOSE op(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

void blas(bool ta, bool tb, int64_t rows, int64_t cols, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          int64_t ldc, float beta) {
  gemm_detail::sgemm(ta, tb, rows, cols, k, a, lda, b, ldb, c, ldc, beta);
}
void blas(bool ta, bool tb, int64_t rows, int64_t cols, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb, double* c,
          int64_t ldc, double beta) {
  cblas_dgemm(CblasRowMajor, op(ta), op(tb), int32(rows), int32(cols), int32(k), 1.0, a, int32(lda), b, int32(ldb), beta, c, int32(ldc));
}

// One thread's share: rows [r0, r1) and columns [c0, c1) of C.
template <class T>
void gemm_block(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, T beta, const Epilogue<T>& e, int64_t r0,
                int64_t r1, int64_t c0, int64_t c1) {
  // op(A) rows r0..r1: for A stored (m,k) take rows; for Aᵀ stored (k,m) take columns.
  const T* ab = ta ? a + r0 : a + r0 * k;
  const T* bb = tb ? b + c0 * k : b + c0;
  blas(ta, tb, r1 - r0, c1 - c0, k, ab, ta ? m : k, bb, tb ? k : n, c + r0 * n + c0, n, beta);
  apply_epilogue(e, c, n, r0, r1, c0, c1);
}
}  // namespace

template <class T>
void gemm(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, T beta, const Epilogue<T>& e) {
  if constexpr (is_low_precision_v<T>) {
    if (static_cast<float>(beta) != 0.0f) throw Error("internal: a 16-bit GEMM with beta other than 0");
    gemm_detail::low_gemm(ctx, ta, tb, m, n, k, a, b, c, e);
  } else {
    gemm_detail::for_blocks(ctx, m, n, k, [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      gemm_block(ta, tb, m, n, k, a, b, c, beta, e, r0, r1, c0, c1);
    });
  }
}

template <class T>
void gemm_wide(Context& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, const T* b, compute_t<T>* c, compute_t<T> beta) {
  if constexpr (is_low_precision_v<T>) gemm_detail::low_gemm_wide(ctx, ta, tb, m, n, k, a, b, c, beta);
  else gemm<T>(ctx, ta, tb, m, n, k, a, b, c, beta);
}

namespace gemm_detail {
void check_sizes(int64_t m, int64_t n, int64_t k) {
  (void)kOneThread;
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    throw Error(std::string("gemm: a product of ").append(product(m, n, k)).append(" exceeds the BLAS's 32-bit sizes"));
}

void one_openmp_thread() {
  thread_local const bool once = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)once;
}

void sgemm(bool ta, bool tb, int64_t rows, int64_t cols, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
           int64_t ldc, float beta, int short_product) {
  // A product with an inner or outer side this short (a one-channel 3×3 convolution: k = 9, or its
  // filter gradient: rows = 9) ran ≈8 % faster in OpenBLAS.
  if (short_product < 0 ? k <= kShortSide || rows <= kShortSide : short_product == 1) {
    cblas_sgemm(CblasRowMajor, op(ta), op(tb), int32(rows), int32(cols), int32(k), 1.0f, a, int32(lda), b, int32(ldb), beta, c, int32(ldc));
    return;
  }
  one_openmp_thread();
  const dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', rows, cols, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success)
    throw Error(std::string("gemm: oneDNN's sgemm failed for ").append(product(rows, cols, k)).append(" (status ")
                    .append(std::to_string(static_cast<int>(status))).append(")"));
}
}  // namespace gemm_detail

template void gemm<float>(Context&, bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*, float, const Epilogue<float>&);
template void gemm<double>(Context&, bool, bool, int64_t, int64_t, int64_t, const double*, const double*, double*, double,
                           const Epilogue<double>&);
template void gemm<Eigen::bfloat16>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::bfloat16*, const Eigen::bfloat16*,
                                    Eigen::bfloat16*, Eigen::bfloat16, const Epilogue<Eigen::bfloat16>&);
template void gemm<Eigen::half>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::half*, const Eigen::half*, Eigen::half*,
                                Eigen::half, const Epilogue<Eigen::half>&);
template void gemm_wide<Eigen::bfloat16>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::bfloat16*, const Eigen::bfloat16*,
                                         float*, float);
template void gemm_wide<Eigen::half>(Context&, bool, bool, int64_t, int64_t, int64_t, const Eigen::half*, const Eigen::half*, float*, float);
template void gemm_wide<float>(Context&, bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*, float);
template void gemm_wide<double>(Context&, bool, bool, int64_t, int64_t, int64_t, const double*, const double*, double*, double);

}  // namespace tandem::backend::cpu

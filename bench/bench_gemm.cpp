// GEMM at the benchmark models' shapes, in GFLOP/s: Eigen's, OpenBLAS's and oneDNN's products on
// one thread each, and Tandem's CPU gemm (oneDNN on blocks of C over the device's pool) on 1 and 2
// threads; first the machine's FP32 FMA peak on 1 and 2 threads, measured by a loop of independent
// AVX-512 FMAs, for the products to be read against. Shapes: the MLP's layers at batch 32 and 512
// (forward, weight gradient Aᵀ·B, input gradient A·Bᵀ), the CNN's per-image convolution products
// (im2col rows × filters × patch), and the Transformer example's projections and feed-forward at
// 64 × 64 rows.
//
// With --dtype bf16 (or f16) it compares instead Tandem's float32 gemm with its bfloat16 (float16)
// gemm at the same shapes, on 1 and 2 threads, and says which code runs the 16-bit products
// (backend::cpu::bf16_path()).
//
// Usage: bench_gemm [--dtype bf16|f16]     (run it as the other benchmarks: with OPENBLAS_CORETYPE unset)
#include <Eigen/Core>
#include <cblas.h>
#include <immintrin.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <functional>
#include <thread>
#include <vector>

#include "backend/cpu/context.h"
#include "backend/cpu/gemm.h"

namespace {
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// GFLOP/s of `f` over at least 0.3 s after one untimed call.
double rate(double flops, const std::function<void()>& f) {
  f();
  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  double seconds = 0;
  do {
    f();
    ++runs;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (seconds < 0.3);
  return flops * runs / seconds / 1e9;
}

// Twelve independent chains of 16-lane FMAs: more than latency × ports, so both FMA units stay busy.
constexpr int kChains = 12;
__attribute__((target("avx512f"))) float fma_chains(long iterations) {
  __m512 acc[kChains];
  const __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(-1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return _mm512_reduce_add_ps(sum);
}

double fma_rate(int threads) {
  const long iterations = 20'000'000;
  std::vector<float> sink(threads);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { sink[t] = fma_chains(iterations); });
  for (std::thread& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sink[0] == 12345.0f) std::printf(" ");  // keeps the loop's result alive
  return threads * iterations * kChains * 16.0 * 2.0 / seconds / 1e9;
}

// The best of five runs: a run that shares a core with anything else only reads lower.
double fma_peak(int threads) {
  double best = 0;
  for (int run = 0; run < 5; ++run) best = std::max(best, fma_rate(threads));
  return best;
}
struct Shape {
  const char* what;
  bool ta, tb;
  int m, n, k;
};

// Tandem's float32 gemm against its 16-bit gemm T (Eigen::bfloat16 or Eigen::half) on the same
// values, rounded to T, in GFLOP/s.
template <class T>
void compare_16bit(const char* name, const std::string& path, const Shape* shapes, std::size_t count) {
  std::printf("%s path: %s\n\n", name, path.c_str());
  std::printf("| shape | op (m x n x k) | float32, 1 thread | %s, 1 thread | speed-up | float32, 2 threads | %s, 2 threads | speed-up |\n",
              name, name);
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  tandem::backend::cpu::Context one(1), two(2);
  for (std::size_t i = 0; i < count; ++i) {
    const Shape& s = shapes[i];
    const Matrix a = s.ta ? Matrix::Random(s.k, s.m) : Matrix::Random(s.m, s.k);
    const Matrix b = s.tb ? Matrix::Random(s.n, s.k) : Matrix::Random(s.k, s.n);
    Matrix c(s.m, s.n);
    std::vector<T> al(static_cast<std::size_t>(a.size())), bl(static_cast<std::size_t>(b.size())), cl(static_cast<std::size_t>(c.size()));
    for (std::size_t j = 0; j < al.size(); ++j) al[j] = static_cast<T>(a.data()[j]);
    for (std::size_t j = 0; j < bl.size(); ++j) bl[j] = static_cast<T>(b.data()[j]);
    const double flops = 2.0 * s.m * s.n * s.k;
    const auto f32 = [&](tandem::backend::cpu::Context& ctx) {
      return rate(flops, [&] { tandem::backend::cpu::gemm(ctx, s.ta, s.tb, s.m, s.n, s.k, a.data(), b.data(), c.data()); });
    };
    const auto low = [&](tandem::backend::cpu::Context& ctx) {
      return rate(flops, [&] { tandem::backend::cpu::gemm<T>(ctx, s.ta, s.tb, s.m, s.n, s.k, al.data(), bl.data(), cl.data()); });
    };
    const double f1 = f32(one), l1 = low(one), f2 = f32(two), l2 = low(two);
    std::printf("| %s | %s·%s (%d x %d x %d) | %.1f | %.1f | %.2f× | %.1f | %.1f | %.2f× |\n", s.what, s.ta ? "Aᵀ" : "A", s.tb ? "Bᵀ" : "B",
                s.m, s.n, s.k, f1, l1, l1 / f1, f2, l2, l2 / f2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);
  std::string dtype;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) dtype = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_gemm [--dtype bf16|f16]\n");
      return 2;
    }
  }
  if (!dtype.empty() && dtype != "bf16" && dtype != "f16") {
    std::fprintf(stderr, "bench_gemm: --dtype takes bf16 or f16, got %s\n", dtype.c_str());
    return 2;
  }
  std::printf("FP32 FMA peak: %.1f GFLOP/s on 1 thread, %.1f on 2\n\n", fma_peak(1), fma_peak(2));
  const Shape shapes[] = {{"MLP 784->256, batch 32", false, false, 32, 256, 784},
                          {"MLP 784->256, batch 512", false, false, 512, 256, 784},
                          {"MLP 256->256, batch 512", false, false, 512, 256, 256},
                          {"MLP 256->10, batch 512", false, false, 512, 10, 256},
                          {"MLP dW 784x256 = xT dy, batch 512", true, false, 784, 256, 512},
                          {"MLP dW 256x256 = xT dy, batch 512", true, false, 256, 256, 512},
                          {"MLP dx = dy WT, 512x256 from 256", false, true, 512, 256, 256},
                          {"MLP dx = dy WT, batch 32", false, true, 32, 256, 256},
                          {"CNN conv1 per image", false, false, 676, 32, 9},
                          {"CNN conv1 dW per image", true, false, 9, 32, 676},
                          {"CNN conv2 per image", false, false, 121, 64, 288},
                          {"CNN conv2 dW per image", true, false, 288, 64, 121},
                          {"CNN conv2 dx per image", false, true, 121, 288, 64},
                          {"CNN dense 1600->128, batch 128", false, false, 128, 128, 1600},
                          {"Transformer q/k/v/o", false, false, 4096, 128, 128},
                          {"Transformer up", false, false, 4096, 512, 128},
                          {"Transformer down", false, false, 4096, 128, 512},
                          {"Transformer dW 128x128", true, false, 128, 128, 4096}};
  if (dtype == "bf16") {
    compare_16bit<Eigen::bfloat16>("bfloat16", tandem::backend::cpu::bf16_path(), shapes, std::size(shapes));
    return 0;
  }
  if (dtype == "f16") {
    compare_16bit<Eigen::half>("float16", tandem::backend::cpu::f16_path(), shapes, std::size(shapes));
    return 0;
  }
  tandem::backend::cpu::Context one(1), two(2);
  std::printf("| shape | op (m x n x k) | Eigen, 1 thread | OpenBLAS, 1 thread | oneDNN, 1 thread | Tandem gemm, 1 thread | Tandem gemm, 2 threads |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (const Shape& s : shapes) {
    // Stored as the product reads them: A is (m,k) or, transposed, (k,m); B likewise.
    const Matrix a = s.ta ? Matrix::Random(s.k, s.m) : Matrix::Random(s.m, s.k);
    const Matrix b = s.tb ? Matrix::Random(s.n, s.k) : Matrix::Random(s.k, s.n);
    Matrix c(s.m, s.n);
    const double flops = 2.0 * s.m * s.n * s.k;
    const double eigen = rate(flops, [&] {
      if (s.ta) c.noalias() = a.transpose() * b;
      else if (s.tb) c.noalias() = a * b.transpose();
      else c.noalias() = a * b;
    });
    const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const double blas = rate(flops, [&] {
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), lda,
                  b.data(), ldb, 0.0f, c.data(), s.n);
    });
    const double dnnl = rate(flops, [&] {
      dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    });
    const auto tandem_gemm = [&](tandem::backend::cpu::Context& ctx) {
      return rate(flops, [&] { tandem::backend::cpu::gemm(ctx, s.ta, s.tb, s.m, s.n, s.k, a.data(), b.data(), c.data()); });
    };
    const double t1 = tandem_gemm(one), t2 = tandem_gemm(two);
    std::printf("| %s | %s·%s (%d x %d x %d) | %.1f | %.1f | %.1f | %.1f | %.1f |\n", s.what, s.ta ? "Aᵀ" : "A", s.tb ? "Bᵀ" : "B", s.m, s.n,
                s.k, eigen, blas, dnnl, t1, t2);
  }
  return 0;
}

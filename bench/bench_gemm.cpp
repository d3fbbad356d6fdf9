// GEMM at the benchmark models' shapes: Eigen's single-threaded product against OpenBLAS's (one
// thread each), and Tandem's CPU gemm (OpenBLAS on blocks of C over the device's pool) on 1 and 2
// threads, in GFLOP/s. Shapes: the MLP's layers at batch 32 and 512 (forward and both gradient
// products), and the Transformer example's projections and feed-forward at 64 × 64 rows.
//
// Usage: bench_gemm      (run it as the other benchmarks: with OPENBLAS_CORETYPE unset)
#include <Eigen/Core>
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <functional>

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
}  // namespace

int main() {
  struct Shape {
    const char* what;
    int m, n, k;
  };
  const Shape shapes[] = {{"MLP 784->256, batch 32", 32, 256, 784},   {"MLP 784->256, batch 512", 512, 256, 784},
                          {"MLP 256->256, batch 512", 512, 256, 256}, {"MLP dW 784x256, batch 512", 784, 256, 512},
                          {"MLP dx 512x784", 512, 784, 256},          {"Transformer q/k/v/o 4096x128x128", 4096, 128, 128},
                          {"Transformer up 4096x512x128", 4096, 512, 128}, {"Transformer down 4096x128x512", 4096, 128, 512},
                          {"Transformer dW 128x128 over 4096", 128, 128, 4096}};
  tandem::backend::cpu::Context one(1), two(2);
  std::printf("| shape (m x n x k) | Eigen, 1 thread | OpenBLAS, 1 thread | Tandem gemm, 1 thread | Tandem gemm, 2 threads |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (const Shape& s : shapes) {
    const Matrix a = Matrix::Random(s.m, s.k), b = Matrix::Random(s.k, s.n);
    Matrix c(s.m, s.n);
    const double flops = 2.0 * s.m * s.n * s.k;
    const double eigen = rate(flops, [&] { c.noalias() = a * b; });
    const double blas = rate(flops, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
    });
    const double t1 = rate(flops, [&] { tandem::backend::cpu::gemm(one, false, false, s.m, s.n, s.k, a.data(), b.data(), c.data()); });
    const double t2 = rate(flops, [&] { tandem::backend::cpu::gemm(two, false, false, s.m, s.n, s.k, a.data(), b.data(), c.data()); });
    std::printf("| %s (%d x %d x %d) | %.1f | %.1f | %.1f | %.1f |\n", s.what, s.m, s.n, s.k, eigen, blas, t1, t2);
  }
  return 0;
}

// The CPU GEMM (backend/cpu/gemm.h) against a plain triple loop in double, for float products on
// both of its libraries (oneDNN for most shapes, OpenBLAS where a side is 16 or fewer), every
// transpose, accumulation into C, the bias-and-activation epilogue, more threads than cores, and
// several devices calling it at once, as Mirrored's do; and its refusal of sizes the libraries
// cannot take.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/context.h"
#include "backend/cpu/gemm.h"
#include "tandem/errors.h"

namespace cpu = tandem::backend::cpu;

namespace {

struct Product {
  bool ta, tb;
  int64_t m, n, k;
};

std::vector<float> random_floats(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(size);
  for (float& x : v) x = u(rng);
  return v;
}

// Checks C (row-major m×n) = ReLU(beta·C0 + op(A)·op(B) + bias) element by element, to a bound of
// k + 2 float roundings of the products' magnitudes.
void check(const Product& p, const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c0, float beta,
           const std::vector<float>& bias, const std::vector<float>& c) {
  const double eps = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = beta * double(c0[i * p.n + j]), magnitude = std::fabs(sum);
      for (int64_t q = 0; q < p.k; ++q) {
        const double x = p.ta ? a[q * p.m + i] : a[i * p.k + q];
        const double y = p.tb ? b[j * p.k + q] : b[q * p.n + j];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      if (!bias.empty()) {
        sum = std::max(0.0, sum + bias[j]);
        magnitude += std::fabs(bias[j]);
      }
      const double bound = double(p.k + 2) * eps * magnitude + 1e-30;
      if (std::fabs(c[i * p.n + j] - sum) > bound) {
        FAIL_CHECK("C[" << i << "," << j << "] = " << c[i * p.n + j] << ", expected " << sum << " within " << bound);
        return;
      }
    }
}

void run(cpu::Context& ctx, const Product& p, float beta, bool epilogue, unsigned seed) {
  const auto a = random_floats(size_t(p.m * p.k), seed), b = random_floats(size_t(p.k * p.n), seed + 1);
  const auto c0 = random_floats(size_t(p.m * p.n), seed + 2);
  const std::vector<float> bias = epilogue ? random_floats(size_t(p.n), seed + 3) : std::vector<float>{};
  std::vector<float> c = c0;
  cpu::Epilogue<float> e;
  if (epilogue) e = {.bias = bias.data(), .activation = tandem::backend::Activation::Relu};
  cpu::gemm(ctx, p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data(), c.data(), beta, e);
  check(p, a, b, c0, beta, bias, c);
}

// The models' shapes, shrunk where a loop in double would be slow, and the short-side class.
const Product kProducts[] = {
    {false, false, 32, 256, 784},  // a Dense layer at batch 32 (oneDNN)
    {true, false, 96, 64, 200},    // a weight gradient, Aᵀ·B (oneDNN)
    {false, true, 121, 288, 64},   // a convolution's input gradient, A·Bᵀ (oneDNN)
    {true, true, 40, 33, 17},      // both transposed, odd sizes (oneDNN)
    {false, false, 676, 32, 9},    // a one-channel 3×3 convolution, k = 9 (OpenBLAS)
    {true, false, 9, 32, 676},     // its filter gradient, 9 rows (OpenBLAS)
    {false, false, 1, 10, 1},      // the smallest
};

std::string name(const Product& p) {
  return std::string(p.ta ? "Aᵀ" : "A").append(p.tb ? "·Bᵀ " : "·B ").append(std::to_string(p.m)).append("x").append(std::to_string(p.n))
      .append("x").append(std::to_string(p.k));
}

}  // namespace

TEST_CASE("cpu gemm: float products match a double triple loop on 1 and 3 threads, with accumulation and epilogue") {
  cpu::Context one(1), three(3);
  unsigned seed = 1;
  for (const Product& p : kProducts) {
    CAPTURE(name(p));
    run(one, p, 0.0f, false, seed++);
    run(three, p, 0.0f, false, seed++);
    run(three, p, 1.0f, false, seed++);
    run(three, p, 0.0f, true, seed++);
  }
}

TEST_CASE("cpu gemm: four devices multiplying at once each get their own correct product") {
  std::vector<std::thread> devices;
  for (int d = 0; d < 4; ++d)
    devices.emplace_back([d] {
      cpu::Context ctx(2);
      for (int round = 0; round < 5; ++round)
        for (const Product& p : {kProducts[0], kProducts[1], kProducts[4]}) run(ctx, p, 0.0f, false, unsigned(100 * d + round));
    });
  for (std::thread& t : devices) t.join();
}

TEST_CASE("cpu gemm: a product too large for the libraries' 32-bit sizes is refused, naming its shape") {
  cpu::Context ctx(1);
  const int64_t rows = int64_t(1) << 31;
  CHECK_THROWS_WITH_AS(cpu::gemm<float>(ctx, false, false, rows, 4, 3, nullptr, nullptr, nullptr),
                       "gemm: a product of 2147483648x3 by 3x4 exceeds the BLAS's 32-bit sizes", tandem::Error);
}

// The bfloat16 and float16 CPU kernels against a float64 reference computed here from the same
// inputs. The inputs are random values rounded to the 16-bit type, so they are exact in float32
// and in float64 and the reference sees exactly what the kernel sees.
//
// The bound. A kernel accumulates in float32 and rounds once to the output type. An element's
// float32 sum of k products (exact in float32: two 8- or 11-bit significands multiply into at
// most 22 bits) differs from the exact sum by at most (k + 2)·2⁻²⁴·M, M = Σ|aᵢbᵢ| (+ |bias|), the
// usual recursive-summation bound γ_k ≤ k·u₃₂ (u₃₂ = 2⁻²⁴) with room for the bias and a
// 1-Lipschitz activation's own float32 rounding. Rounding to the output type then adds at most
// u·|value|, u = 2⁻⁸ for bfloat16 (8 significant bits) and 2⁻¹¹ for float16 (11). So
//     |y − ref| ≤ u·|ref| + (1 + u)·(k + 2)·2⁻²⁴·M,
// about 2⁻⁸·|ref| — a bound the output's own rounding nearly reaches, far tighter than the
// c·k·u·M bound of a sum done in the 16-bit type (which these kernels would fail at k in the
// hundreds). Each check reports the largest ratio |err| / bound it saw.
#include <doctest/doctest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/context.h"
#include "backend/cpu/gemm.h"

namespace cpu = tandem::backend::cpu;
using tandem::backend::Activation;

namespace {

// Unit roundoff of the output type.
template <class T> constexpr double unit_roundoff() { return std::is_same_v<T, Eigen::bfloat16> ? 0x1p-8 : 0x1p-11; }
template <class T> const char* type_name() { return std::is_same_v<T, Eigen::bfloat16> ? "bfloat16" : "float16"; }

template <class T>
std::vector<T> random_low(std::size_t size, unsigned seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> v(size);
  for (T& x : v) x = static_cast<T>(static_cast<float>(scale) * u(rng));
  return v;
}

double activate(Activation a, double x) {
  switch (a) {
    case Activation::Relu: return x < 0 ? 0 : x;
    case Activation::Sigmoid: return 1 / (1 + std::exp(-x));
    case Activation::Tanh: return std::tanh(x);
    case Activation::Linear: break;
  }
  return x;
}

// The largest |err| / bound over the elements; fails the test case at the first element past it.
struct WorstRatio {
  double ratio = 0;
  void see(double got, double ref, double bound, const std::string& where) {
    const double err = std::fabs(got - ref);
    ratio = std::max(ratio, err / bound);
    if (!(err <= bound)) FAIL_CHECK(where << ": got " << got << ", expected " << ref << " within " << bound);
  }
};

template <class T>
double bound(double ref, double magnitude, int64_t k) {
  const double u = unit_roundoff<T>();
  return u * std::fabs(ref) + (1 + u) * double(k + 2) * 0x1p-24 * magnitude + 1e-30;
}

struct Product {
  bool ta, tb;
  int64_t m, n, k;
};

std::string name(const Product& p) {
  return std::string(p.ta ? "Aᵀ" : "A").append(p.tb ? "·Bᵀ " : "·B ").append(std::to_string(p.m)).append("x").append(std::to_string(p.n))
      .append("x").append(std::to_string(p.k));
}

// C (m×n) against the float64 product of the same 16-bit inputs, with bias and activation.
template <class T, class C>
double check_product(const Product& p, const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& bias, Activation act,
                     const std::vector<C>& c, const std::vector<float>& c0 = {}, float beta = 0) {
  WorstRatio worst;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = c0.empty() ? 0.0 : beta * double(c0[size_t(i * p.n + j)]), magnitude = std::fabs(sum);
      for (int64_t q = 0; q < p.k; ++q) {
        const double x = double(static_cast<float>(p.ta ? a[size_t(q * p.m + i)] : a[size_t(i * p.k + q)]));
        const double y = double(static_cast<float>(p.tb ? b[size_t(j * p.k + q)] : b[size_t(q * p.n + j)]));
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      if (!bias.empty()) {
        sum += double(static_cast<float>(bias[size_t(j)]));
        magnitude += std::fabs(double(static_cast<float>(bias[size_t(j)])));
      }
      const double ref = activate(act, sum);
      // A wide C (float32) is not rounded to T: only the accumulation term applies.
      const double limit = std::is_same_v<C, float> ? (double(p.k + 2) * 0x1p-24 * magnitude + 1e-30) : bound<T>(ref, magnitude, p.k);
      worst.see(double(static_cast<float>(c[size_t(i * p.n + j)])), ref, limit,
                std::string("C[").append(std::to_string(i)).append(",").append(std::to_string(j)).append("]"));
    }
  return worst.ratio;
}

// The models' shapes (shrunk where the float64 loop would be slow), every transpose, and the edges.
const Product kProducts[] = {
    {false, false, 32, 256, 784},  // a Dense layer at batch 32
    {true, false, 96, 64, 200},    // a weight gradient, Aᵀ·B
    {false, true, 121, 288, 64},   // a convolution's input gradient, A·Bᵀ
    {true, true, 40, 33, 17},      // both transposed, odd sizes
    {false, false, 676, 32, 9},    // a one-channel 3×3 convolution, k = 9
    {false, false, 1, 10, 1},      // the smallest
    {false, false, 3, 5, 0},       // an empty sum: the epilogue of 0
};

template <class T>
void gemm_cases(const char* path) {
  cpu::Context one(1), four(4);
  unsigned seed = 11;
  double worst = 0;
  for (const Product& p : kProducts) {
    CAPTURE(name(p));
    CAPTURE(path);
    for (Activation act : {Activation::Linear, Activation::Relu, Activation::Sigmoid, Activation::Tanh})
      for (bool with_bias : {false, true}) {
        const auto a = random_low<T>(size_t(p.m * p.k), seed), b = random_low<T>(size_t(p.k * p.n), seed + 1);
        const auto bias = with_bias ? random_low<T>(size_t(p.n), seed + 2) : std::vector<T>{};
        seed += 3;
        const cpu::Epilogue<T> e{.bias = with_bias ? bias.data() : nullptr, .activation = act};
        std::vector<T> c1(size_t(p.m * p.n)), c4(c1.size());
        cpu::gemm<T>(one, p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data(), c1.data(), T(0), e);
        cpu::gemm<T>(four, p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data(), c4.data(), T(0), e);
        worst = std::max(worst, check_product(p, a, b, bias, act, c1));
        CHECK_MESSAGE(std::memcmp(c1.data(), c4.data(), c1.size() * sizeof(T)) == 0, "1 and 4 threads differ");
      }
    // The wide form: float32 C, overwritten and then added to.
    const auto a = random_low<T>(size_t(p.m * p.k), seed), b = random_low<T>(size_t(p.k * p.n), seed + 1);
    const auto c0 = random_low<float>(size_t(p.m * p.n), seed + 2);
    seed += 3;
    for (float beta : {0.0f, 1.0f}) {
      std::vector<float> c1 = c0, c4 = c0;
      cpu::gemm_wide<T>(one, p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data(), c1.data(), beta);
      cpu::gemm_wide<T>(four, p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data(), c4.data(), beta);
      check_product(p, a, b, std::vector<T>{}, Activation::Linear, c1, c0, beta);
      CHECK_MESSAGE(std::memcmp(c1.data(), c4.data(), c1.size() * sizeof(float)) == 0, "wide: 1 and 4 threads differ");
    }
  }
  MESSAGE(std::string(type_name<T>()) << " GEMM (" << std::string(path) << "): largest |err| / bound " << worst);
}

}  // namespace

TEST_CASE("low precision: bfloat16 GEMM (oneDNN where the CPU has a path) within bf16's bound of a float64 product, same bits on 1 and 4 threads") {
  MESSAGE("bfloat16 path: " << cpu::bf16_path());
  gemm_cases<Eigen::bfloat16>("detected");
}

TEST_CASE("low precision: bfloat16 GEMM's float32 fallback within bf16's bound, same bits on 1 and 4 threads") {
  cpu::use_onednn_bf16(false);
  gemm_cases<Eigen::bfloat16>("fallback");
  cpu::use_onednn_bf16(true);
}

TEST_CASE("low precision: float16 GEMM within float16's bound of a float64 product, same bits on 1 and 4 threads") {
  MESSAGE("float16 path: " << cpu::f16_path());
  gemm_cases<Eigen::half>("fallback");
}

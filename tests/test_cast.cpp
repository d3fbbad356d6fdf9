// The cast op between every pair of dtypes, the 16-bit floats included: closed-form bit patterns
// for the CPU kernel (exact values, ties to even, subnormals, overflow, infinities, NaN), and the
// gradient through casts down to a 16-bit float and back (the gradient is cast back to each
// input's dtype), against finite differences taken where the narrow type holds the steps exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "autodiff/autodiff.h"
#include "ops/ops.h"
#include "tests/op_runner.h"

using tandem::bfloat16;
using tandem::DType;
using tandem::float16;
using tandem::Shape;
using tandem::Tensor;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Casts `x` (fed as a placeholder) to `to` with the op, on the CPU.
Tensor cast_op(const Tensor& x, DType to) {
  Graph g;
  const Value in = g.placeholder("x", x.type());
  const Value y = ops::cast(g, in, to);
  return op_runner::run(g, {{"x", x}}, {y}).at(0);
}

template <class T>
std::vector<uint16_t> bits_of(const Tensor& t) {
  std::vector<uint16_t> b;
  for (const T& v : t.values<T>()) b.push_back(v.bits);
  return b;
}

Tensor f64(std::vector<double> v) { return Tensor::from(Shape{static_cast<int64_t>(v.size())}, std::span<const double>(v)); }

}  // namespace

TEST_CASE("cast to bfloat16 and float16 rounds once to nearest, ties to even") {
  // Each entry: a float64 input and the bfloat16 and float16 bits it must become.
  struct Case {
    double x;
    uint16_t bf, hf;
  };
  const Case cases[] = {
      {1.0, 0x3F80, 0x3C00},
      {-2.0, 0xC000, 0xC000},
      {0.1, 0x3DCD, 0x2E66},
      {1.0 + 0x1p-8, 0x3F80, 0x3C04},           // a bfloat16 tie: to even
      {1.0 + 3 * 0x1p-8, 0x3F82, 0x3C0C},       // a bfloat16 tie: to even (up)
      {1.0 + 0x1p-8 + 0x1p-40, 0x3F81, 0x3C04},  // just above a tie, below float32's precision
      {1.0 + 0x1p-11, 0x3F80, 0x3C00},          // a float16 tie: to even
      {1.0 + 3 * 0x1p-11, 0x3F80, 0x3C02},
      {1.0 + 0x1p-11 + 0x1p-40, 0x3F80, 0x3C01},
      {0x1p-24, 0x3380, 0x0001},  // float16's smallest subnormal
      {0x1p-25, 0x3300, 0x0000},  // halfway to it: to even (zero)
      {0x1p-25 + 0x1p-60, 0x3300, 0x0001},
      {65504.0, 0x4780, 0x7BFF},
      {65520.0, 0x4780, 0x7C00},  // float16 overflows to infinity from 65520
      {-1e6, 0xC974, 0xFC00},
      {1e39, 0x7F80, 0x7C00},  // beyond float32 too
      {kInf, 0x7F80, 0x7C00},
      {-kInf, 0xFF80, 0xFC00},
      {-0.0, 0x8000, 0x8000},
  };
  std::vector<double> x;
  for (const Case& c : cases) x.push_back(c.x);
  // Not here: bfloat16's subnormals, which are float32's and may be flushed to zero by the CPU
  // kernels (FTZ and DAZ, backend/cpu/denormals.h); Tensor::cast keeps them (test_low_float).
  x.push_back(kNaN);
  const Tensor from64 = f64(x);
  const std::vector<uint16_t> bf = bits_of<bfloat16>(cast_op(from64, DType::BF16));
  const std::vector<uint16_t> hf = bits_of<float16>(cast_op(from64, DType::F16));
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    INFO("x = " << cases[i].x);
    CHECK(bf[i] == cases[i].bf);
    CHECK(hf[i] == cases[i].hf);
  }
  CHECK(((bf.back() & 0x7F80) == 0x7F80 && (bf.back() & 0x7F) != 0));
  CHECK(((hf.back() & 0x7C00) == 0x7C00 && (hf.back() & 0x3FF) != 0));

  // From float32 the same (the cases that float32 holds exactly); from int32 too.
  const std::vector<float> xf = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-11f, 65520.0f, 0x1p-25f, -0.0f};
  const Tensor from32 = Tensor::from(Shape{5}, std::span<const float>(xf));
  CHECK(bits_of<bfloat16>(cast_op(from32, DType::BF16)) == std::vector<uint16_t>{0x3F80, 0x3F80, 0x4780, 0x3300, 0x8000});
  CHECK(bits_of<float16>(cast_op(from32, DType::F16)) == std::vector<uint16_t>{0x3C04, 0x3C02, 0x7C00, 0x0000, 0x8000});
  const std::vector<int32_t> xi = {257, -259, 1 << 30};
  const Tensor from_int = Tensor::from(Shape{3}, std::span<const int32_t>(xi));
  CHECK(bits_of<bfloat16>(cast_op(from_int, DType::BF16)) == std::vector<uint16_t>{0x4380, 0xC382, 0x4E80});
  CHECK(bits_of<float16>(cast_op(from_int, DType::F16)) == std::vector<uint16_t>{0x5C04, 0xDC0C, 0x7C00});
}

TEST_CASE("cast from bfloat16 and float16 is exact to float, truncates to integers") {
  const std::vector<bfloat16> b = {bfloat16::from_bits(0x3F81), bfloat16::from_bits(0x0080), bfloat16::from_bits(0xFF80),
                                   bfloat16::from_bits(0xC030), bfloat16::from_bits(0x4780)};
  const Tensor tb = Tensor::from(Shape{5}, std::span<const bfloat16>(b));
  const Tensor b32 = cast_op(tb, DType::F32);
  CHECK(b32.values<float>()[0] == 1.0078125f);
  CHECK(b32.values<float>()[2] == -std::numeric_limits<float>::infinity());
  CHECK(b32.values<float>()[3] == -2.75f);
  const Tensor b64 = cast_op(tb, DType::F64);
  CHECK(cast_op(tb, DType::I32).values<int32_t>()[3] == -2);
  CHECK(cast_op(tb, DType::I64).values<int64_t>()[4] == 65536);
  CHECK(b32.values<float>()[1] == 0x1p-126f);  // bfloat16's smallest normal
  // bfloat16 -> float16: 1.0078125 is exact in float16; 2^-126 underflows to 0; 65536 overflows.
  CHECK(bits_of<float16>(cast_op(tb, DType::F16)) == std::vector<uint16_t>{0x3C08, 0x0000, 0xFC00, 0xC180, 0x7C00});

  const std::vector<float16> h = {float16::from_bits(0x7BFF), float16::from_bits(0x0001), float16::from_bits(0x3C01), float16::from_bits(0x7E00)};
  const Tensor th = Tensor::from(Shape{4}, std::span<const float16>(h));
  const Tensor h32 = cast_op(th, DType::F32);
  CHECK(h32.values<float>()[0] == 65504.0f);
  CHECK(h32.values<float>()[1] == 0x1p-24f);
  CHECK(h32.values<float>()[2] == 1.0f + 0x1p-10f);
  CHECK(std::isnan(h32.values<float>()[3]));
  // float16 -> bfloat16: 65504 rounds to 65536; 1 + 2^-10 is below bfloat16's tie (1 + 2^-8): 1.
  const std::vector<uint16_t> hb = bits_of<bfloat16>(cast_op(th, DType::BF16));
  CHECK(hb[0] == 0x4780);
  CHECK(hb[1] == 0x3380);
  CHECK(hb[2] == 0x3F80);
  CHECK(((hb[3] & 0x7F80) == 0x7F80 && (hb[3] & 0x7F) != 0));
}

namespace {

// x (float64) cast through `chain` and back to float64; L = Σ y ⊙ w. Returns dL/dx from the
// graph and, by central differences with step h, from L itself.
struct ChainGradient {
  std::vector<double> analytic, numeric, w;
};
ChainGradient chain_gradient(const std::vector<DType>& chain, const std::vector<double>& x, const std::vector<double>& w, double h) {
  Graph g;
  const Shape shape{static_cast<int64_t>(x.size())};
  const Value in = g.placeholder("x", {shape, DType::F64});
  const Value weights = g.placeholder("w", {shape, DType::F64});
  Value y = in;
  for (DType t : chain) y = ops::cast(g, y, t);
  y = ops::cast(g, y, DType::F64);
  const Value loss = ops::reduce_sum(g, ops::mul(g, y, weights), {0});
  const Value dx = tandem::autodiff::gradients(g, loss, {in}).at(0);
  REQUIRE(dx.valid());
  auto run = [&](const std::vector<double>& at) { return op_runner::run(g, {{"x", f64(at)}, {"w", f64(w)}}, {loss, dx}); };
  ChainGradient out;
  const Tensor d = run(x).at(1);
  out.analytic.assign(d.values<double>().begin(), d.values<double>().end());
  for (std::size_t j = 0; j < x.size(); ++j) {
    std::vector<double> plus = x, minus = x;
    plus[j] += h, minus[j] -= h;
    out.numeric.push_back((run(plus).at(0).item(0) - run(minus).at(0).item(0)) / (2 * h));
  }
  return out;
}

}  // namespace

TEST_CASE("gradient through casts to float32, bfloat16 and float16 and back") {
  // x on a grid of 2^-4 in [-2, 2) and steps of 2^-4: every x ± h is exact in all three types, so
  // the finite differences are exactly w; the analytic gradient is w cast down the same chain in
  // reverse (float32, then the 16-bit type, ...), so it differs from w by that type's rounding.
  std::vector<double> x, w;
  for (int i = 0; i < 12; ++i) x.push_back(-2.0 + 0x1p-4 * ((i * 37) % 64)), w.push_back(std::sin(1.3 * i + 0.4));
  const double h = 0x1p-4;
  struct Chain {
    std::vector<DType> dtypes;
    double tolerance;  // relative: the narrowest type's rounding of w
  };
  const Chain chains[] = {{{DType::F32}, 0x1p-24}, {{DType::F32, DType::BF16, DType::F32}, 0x1p-8}, {{DType::F32, DType::F16, DType::F32}, 0x1p-11},
                          {{DType::BF16}, 0x1p-8}, {{DType::F16}, 0x1p-11}};
  for (const Chain& c : chains) {
    std::string name;
    for (DType t : c.dtypes) name += std::string(tandem::dtype_name(t)) + " ";
    INFO("float64 -> " << name << "-> float64");
    const ChainGradient r = chain_gradient(c.dtypes, x, w, h);
    for (std::size_t j = 0; j < x.size(); ++j) {
      CHECK(r.numeric[j] == doctest::Approx(w[j]).epsilon(1e-12));
      CHECK(std::abs(r.analytic[j] - r.numeric[j]) <= c.tolerance * std::abs(w[j]));
      // The closed form: w rounded through the chain's types, last cast first.
      double expected = w[j];
      for (auto t = c.dtypes.rbegin(); t != c.dtypes.rend(); ++t) expected = Tensor(f64({expected})).cast(*t).item(0);
      CHECK(r.analytic[j] == expected);
    }
  }
}

TEST_CASE("cast of a large tensor (split across the CPU's threads) equals Tensor::cast element by element") {
  // Random magnitudes from 2^-120 to 2^120 (float32's normal range, so nothing is flushed), random
  // signs, and every 7th value put on a bfloat16 or float16 tie.
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> exponent(-120, 120), mantissa(1, 2);
  std::vector<double> x(200003);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = std::ldexp(mantissa(gen), static_cast<int>(exponent(gen))) * (gen() % 2 ? -1 : 1);
    if (i % 7 == 0) x[i] = (1.0 + (i % 14 == 0 ? 0x1p-8 : 0x1p-11) * static_cast<double>(2 * (i % 5) + 1)) * std::ldexp(1.0, static_cast<int>(i % 20));
  }
  const Tensor t = f64(x);
  for (DType to : {DType::BF16, DType::F16}) {
    INFO(tandem::dtype_name(to));
    const Tensor op = cast_op(t, to), host = t.cast(to);
    CHECK(std::memcmp(op.raw(), host.raw(), host.bytes()) == 0);
    const Tensor back = cast_op(op, DType::F32), host_back = host.cast(DType::F32);
    CHECK(std::memcmp(back.raw(), host_back.raw(), host_back.bytes()) == 0);
  }
}

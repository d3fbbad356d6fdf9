// The bfloat16 and float16 CPU kernels against a float64 reference computed here from the same
// inputs. The inputs are random values rounded to the 16-bit type, so they are exact in float32
// and in float64 and the reference sees exactly what the kernel sees.
//
// The bound. A kernel accumulates in float32 and rounds once to the output type. An element's
// float32 sum of k products (exact in float32: two 8- or 11-bit significands multiply into at
// most 22 bits) differs from the exact sum by at most (k + 2)·2⁻²⁴·M, M = Σ|aᵢbᵢ| (+ |bias|), the
// usual recursive-summation bound γ_k ≤ k·u₃₂ (u₃₂ = 2⁻²⁴) with room for the bias and a
// 1-Lipschitz activation's own float32 rounding. Rounding to the output type then adds at most
// u·|value|, u = 2⁻⁸ for bfloat16 (8 significant bits) and 2⁻¹¹ for float16 (11), or half the
// smallest subnormal (2⁻²⁵ for float16) below the normal range. So
//     |y − ref| ≤ u·|ref| + (1 + u)·(k + 2)·2⁻²⁴·M (+ 2⁻²⁵ for float16),
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
#include "backend/kernel_registry.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "tests/op_runner.h"

namespace cpu = tandem::backend::cpu;
using tandem::DType;
using tandem::Shape;
using tandem::TensorType;
using tandem::backend::Activation;

namespace {

// Unit roundoff of the output type, and half its smallest subnormal: the absolute error of a
// rounding below the normal range (float16's starts at 2⁻¹⁴ ≈ 6.1e-5; bfloat16's, float32's).
template <class T> constexpr double unit_roundoff() { return std::is_same_v<T, Eigen::bfloat16> ? 0x1p-8 : 0x1p-11; }
template <class T> constexpr double subnormal_error() { return std::is_same_v<T, Eigen::bfloat16> ? 0x1p-134 : 0x1p-25; }
template <class T> const char* type_name() { return std::is_same_v<T, Eigen::bfloat16> ? "bfloat16" : "float16"; }
template <class T> DType dtype_of() { return std::is_same_v<T, Eigen::bfloat16> ? DType::BF16 : DType::F16; }
template <class T> double wide(T x) { return double(static_cast<float>(x)); }

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
  return u * std::fabs(ref) + (1 + u) * double(k + 2) * 0x1p-24 * magnitude + subnormal_error<T>() + 1e-30;
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
    {false, true, 400, 200, 256},  // large enough to split into row blocks
    {true, false, 40, 900, 700},   // wide: blocks of columns, k in the hundreds
    {true, false, 520, 200, 300},  // tall: blocks of rows, k in the hundreds
    {false, false, 200, 40, 12},   // short k, many rows (OpenBLAS in the fallback)
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

// --- The registered kernels (matmul, fused_matmul, batch_matmul, the convolutions, elementwise) ---

namespace {

// Runs the CPU kernel of `op` for T once on `threads` threads: inputs of the given types and
// contents, one output of `out_type` (two where out2 is given), of type Out (float for an op's
// output_dtype float32).
template <class T, class Out = T>
std::vector<Out> run_kernel(const std::string& op, tandem::graph::Attrs attrs, const std::vector<Shape>& in_shapes,
                            const std::vector<const std::vector<T>*>& inputs, const Shape& out_shape, int threads,
                            std::vector<T>* out2 = nullptr, const Shape& out2_shape = {}) {
  tandem::graph::Node node;
  node.op = op;
  node.attrs = std::move(attrs);
  node.outputs = {TensorType{out_shape, std::is_same_v<Out, float> ? DType::F32 : dtype_of<T>()}};
  if (out2) node.outputs.push_back(TensorType{out2_shape, dtype_of<T>()});
  std::vector<TensorType> in_types;
  std::vector<void*> in;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in_types.push_back(TensorType{in_shapes[i], dtype_of<T>()});
    in.push_back(const_cast<T*>(inputs[i]->data()));
  }
  std::vector<Out> y(static_cast<std::size_t>(out_shape.num_elements()));
  std::vector<void*> out{y.data()};
  if (out2) {
    out2->assign(static_cast<std::size_t>(out2_shape.num_elements()), T(0));
    out.push_back(out2->data());
  }
  cpu::Context ctx(threads);
  const tandem::backend::KernelInit init{node, in_types, in, out, &ctx};
  const tandem::backend::KernelFn fn = tandem::backend::find_kernel(op, tandem::backend::DeviceKind::Cpu, dtype_of<T>())(init);
  if (fn) fn();
  return y;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// An element's float64 value and the size of what it sums: Σ|terms| and their number.
struct Sum {
  double value = 0, magnitude = 0;
  int64_t terms = 0;
  void add(double t) { value += t, magnitude += std::fabs(t), ++terms; }
};

template <class T>
double check_sums(const std::vector<T>& got, const std::vector<Sum>& want, const std::string& what, Activation act = Activation::Linear) {
  WorstRatio worst;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double ref = activate(act, want[i].value);
    worst.see(wide(got[i]), ref, bound<T>(ref, want[i].magnitude, want[i].terms), what + "[" + std::to_string(i) + "]");
  }
  return worst.ratio;
}

// A weight's gradient with output_dtype float32: the float32 sums as they are, so the float32
// part of the bound alone, (k + 2)·2⁻²⁴·M — 2⁸ times tighter than bfloat16's rounding.
double check_wide_sums(const std::vector<float>& got, const std::vector<Sum>& want, const std::string& what) {
  WorstRatio worst;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst.see(got[i], want[i].value, double(want[i].terms + 2) * 0x1p-24 * want[i].magnitude + 1e-30, what + "[" + std::to_string(i) + "]");
  return worst.ratio;
}

tandem::graph::Attrs with_float32_output(tandem::graph::Attrs a) { return a.set("output_dtype", static_cast<int64_t>(DType::F32)); }

template <class T>
void matmul_kernels() {
  double worst = 0, worst_wide = 0;
  unsigned seed = 101;
  // matmul and fused_matmul with a left operand of rank 3 (rows folded), every activation.
  for (bool tb : {false, true}) {
    const int64_t b0 = 4, m = 24, k = 300, n = 40;
    const auto a = random_low<T>(size_t(b0 * m * k), seed), w = random_low<T>(size_t(k * n), seed + 1), bias = random_low<T>(size_t(n), seed + 2);
    seed += 3;
    const Shape as{b0, m, k}, ws = tb ? Shape{n, k} : Shape{k, n}, ys{b0, m, n};
    std::vector<Sum> sums(size_t(b0 * m * n));
    for (int64_t r = 0; r < b0 * m; ++r)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t q = 0; q < k; ++q) sums[size_t(r * n + j)].add(wide(a[size_t(r * k + q)]) * wide(w[size_t(tb ? j * k + q : q * n + j)]));
    const tandem::graph::Attrs mm{{"transpose_a", false}, {"transpose_b", tb}};
    const auto y1 = run_kernel<T>("matmul", mm, {as, ws}, {&a, &w}, ys, 1), y4 = run_kernel<T>("matmul", mm, {as, ws}, {&a, &w}, ys, 4);
    worst = std::max(worst, check_sums(y1, sums, "matmul"));
    CHECK_MESSAGE(same_bits(y1, y4), "matmul: 1 and 4 threads differ");
    const tandem::graph::Attrs wide_mm = with_float32_output(mm);
    const auto w1 = run_kernel<T, float>("matmul", wide_mm, {as, ws}, {&a, &w}, ys, 1), w4 = run_kernel<T, float>("matmul", wide_mm, {as, ws}, {&a, &w}, ys, 4);
    worst_wide = std::max(worst_wide, check_wide_sums(w1, sums, "matmul with output_dtype float32"));
    CHECK_MESSAGE(same_bits(w1, w4), "matmul with output_dtype float32: 1 and 4 threads differ");
    std::vector<Sum> biased = sums;
    for (int64_t r = 0; r < b0 * m; ++r)
      for (int64_t j = 0; j < n; ++j) biased[size_t(r * n + j)].add(wide(bias[size_t(j)]));
    for (const char* act : {"linear", "relu", "sigmoid", "tanh"}) {
      tandem::graph::Attrs fa = mm;
      fa.set("activation", std::string(act));
      const auto f1 = run_kernel<T>("fused_matmul", fa, {as, ws, Shape{n}}, {&a, &w, &bias}, ys, 1);
      const auto f4 = run_kernel<T>("fused_matmul", fa, {as, ws, Shape{n}}, {&a, &w, &bias}, ys, 4);
      worst = std::max(worst, check_sums(f1, biased, std::string("fused_matmul ").append(act), tandem::backend::parse_activation(act)));
      CHECK_MESSAGE(same_bits(f1, f4), "fused_matmul " << act << ": 1 and 4 threads differ");
    }
  }
  // batch_matmul over (2, 3) items, every transpose.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t m = 17, k = 130, n = 23, items = 6;
      const auto a = random_low<T>(size_t(items * m * k), seed), b = random_low<T>(size_t(items * k * n), seed + 1);
      seed += 2;
      const Shape as = ta ? Shape{2, 3, k, m} : Shape{2, 3, m, k}, bs = tb ? Shape{2, 3, n, k} : Shape{2, 3, k, n}, ys{2, 3, m, n};
      std::vector<Sum> sums(size_t(items * m * n));
      for (int64_t it = 0; it < items; ++it)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            for (int64_t q = 0; q < k; ++q)
              sums[size_t((it * m + i) * n + j)].add(wide(a[size_t(it * m * k + (ta ? q * m + i : i * k + q))]) *
                                                     wide(b[size_t(it * k * n + (tb ? j * k + q : q * n + j))]));
      const tandem::graph::Attrs attrs{{"transpose_a", ta}, {"transpose_b", tb}};
      const auto y1 = run_kernel<T>("batch_matmul", attrs, {as, bs}, {&a, &b}, ys, 1);
      const auto y4 = run_kernel<T>("batch_matmul", attrs, {as, bs}, {&a, &b}, ys, 4);
      worst = std::max(worst, check_sums(y1, sums, "batch_matmul"));
      CHECK_MESSAGE(same_bits(y1, y4), "batch_matmul: 1 and 4 threads differ");
    }
  MESSAGE(std::string(type_name<T>()) << " matmul, fused_matmul, batch_matmul: largest |err| / bound " << worst
                                      << "; matmul with float32 output, against float32's bound " << worst_wide);
}

struct ConvCase {
  Shape x, kernel;
  int64_t stride, dilation;
  const char* padding;
};

template <class T>
void conv_kernels() {
  // A 3×3 "same" convolution as the CNN's, a strided dilated "valid" one, a 5×5 "same" one with
  // stride 2 (odd padding), and a pointwise one (the GEMM-only path).
  const ConvCase cases[] = {{{5, 12, 12, 8}, {3, 3, 8, 16}, 1, 1, "same"},
                            {{3, 13, 11, 6}, {3, 2, 6, 5}, 2, 2, "valid"},
                            {{2, 9, 10, 4}, {5, 5, 4, 7}, 2, 1, "same"},
                            {{3, 6, 7, 24}, {1, 1, 24, 9}, 1, 1, "valid"}};
  double worst_fwd = 0, worst_input = 0, worst_filter = 0, worst_wide_filter = 0;
  unsigned seed = 301;
  for (const ConvCase& cc : cases) {
    const tandem::graph::Attrs attrs{{"strides", std::vector<int64_t>{cc.stride, cc.stride}},
                                     {"dilation", std::vector<int64_t>{cc.dilation, cc.dilation}},
                                     {"padding", std::string(cc.padding)}};
    const tandem::ops::Window2D w = tandem::ops::window2d(cc.x, cc.kernel[0], cc.kernel[1], attrs, "conv2d");
    const int64_t f = cc.kernel[3];
    const Shape ys{w.n, w.oh, w.ow, f};
    CAPTURE(cc.x.str());
    CAPTURE(cc.kernel.str());
    const auto x = random_low<T>(size_t(cc.x.num_elements()), seed), kernel = random_low<T>(size_t(cc.kernel.num_elements()), seed + 1);
    const auto dy = random_low<T>(size_t(ys.num_elements()), seed + 2);
    seed += 3;
    std::vector<Sum> y_ref(size_t(ys.num_elements())), dx_ref(size_t(cc.x.num_elements())), dk_ref(size_t(cc.kernel.num_elements()));
    // Every (output position, tap, channel, filter) product once, in float64.
    for (int64_t b = 0; b < w.n; ++b)
      for (int64_t oy = 0; oy < w.oh; ++oy)
        for (int64_t ox = 0; ox < w.ow; ++ox)
          for (int64_t ky = 0; ky < w.kh; ++ky)
            for (int64_t kx = 0; kx < w.kw; ++kx) {
              const int64_t iy = oy * w.sh - w.pad_top + ky * w.dh, ix = ox * w.sw - w.pad_left + kx * w.dw;
              if (iy < 0 || iy >= w.h || ix < 0 || ix >= w.w) continue;
              for (int64_t c = 0; c < w.c; ++c)
                for (int64_t o = 0; o < f; ++o) {
                  const size_t xi = size_t(((b * w.h + iy) * w.w + ix) * w.c + c), yi = size_t(((b * w.oh + oy) * w.ow + ox) * f + o);
                  const size_t ki = size_t(((ky * w.kw + kx) * w.c + c) * f + o);
                  y_ref[yi].add(wide(x[xi]) * wide(kernel[ki]));
                  dx_ref[xi].add(wide(dy[yi]) * wide(kernel[ki]));
                  dk_ref[ki].add(wide(x[xi]) * wide(dy[yi]));
                }
            }
    const auto y1 = run_kernel<T>("conv2d", attrs, {cc.x, cc.kernel}, {&x, &kernel}, ys, 1);
    const auto y4 = run_kernel<T>("conv2d", attrs, {cc.x, cc.kernel}, {&x, &kernel}, ys, 4);
    worst_fwd = std::max(worst_fwd, check_sums(y1, y_ref, "conv2d"));
    CHECK_MESSAGE(same_bits(y1, y4), "conv2d: 1 and 4 threads differ");

    tandem::graph::Attrs input_attrs = attrs;
    input_attrs.set("input_shape", cc.x.dims());
    const auto dx1 = run_kernel<T>("conv2d_backprop_input", input_attrs, {ys, cc.kernel}, {&dy, &kernel}, cc.x, 1);
    const auto dx4 = run_kernel<T>("conv2d_backprop_input", input_attrs, {ys, cc.kernel}, {&dy, &kernel}, cc.x, 4);
    worst_input = std::max(worst_input, check_sums(dx1, dx_ref, "conv2d_backprop_input"));
    CHECK_MESSAGE(same_bits(dx1, dx4), "conv2d_backprop_input: 1 and 4 threads differ");

    tandem::graph::Attrs filter_attrs = attrs;
    filter_attrs.set("kernel_shape", cc.kernel.dims());
    const auto dk1 = run_kernel<T>("conv2d_backprop_filter", filter_attrs, {cc.x, ys}, {&x, &dy}, cc.kernel, 1);
    const auto dk4 = run_kernel<T>("conv2d_backprop_filter", filter_attrs, {cc.x, ys}, {&x, &dy}, cc.kernel, 4);
    worst_filter = std::max(worst_filter, check_sums(dk1, dk_ref, "conv2d_backprop_filter"));
    CHECK_MESSAGE(same_bits(dk1, dk4), "conv2d_backprop_filter: 1 and 4 threads differ");
    const auto wk1 = run_kernel<T, float>("conv2d_backprop_filter", with_float32_output(filter_attrs), {cc.x, ys}, {&x, &dy}, cc.kernel, 1);
    const auto wk4 = run_kernel<T, float>("conv2d_backprop_filter", with_float32_output(filter_attrs), {cc.x, ys}, {&x, &dy}, cc.kernel, 4);
    worst_wide_filter = std::max(worst_wide_filter, check_wide_sums(wk1, dk_ref, "conv2d_backprop_filter with output_dtype float32"));
    CHECK_MESSAGE(same_bits(wk1, wk4), "conv2d_backprop_filter with output_dtype float32: 1 and 4 threads differ");
  }
  MESSAGE(std::string(type_name<T>()) << " conv2d: largest |err| / bound " << worst_fwd << "; conv2d_backprop_input " << worst_input
                                      << "; conv2d_backprop_filter " << worst_filter << "; with float32 output, against float32's bound "
                                      << worst_wide_filter);
}

// Max and average pooling and their gradients: a maximum is exact (the same bits as the input's
// largest element), the gradient of a max goes where float64's argmax says, and every sum (the
// average, the gradients where windows overlap) is within the 16-bit type's bound of float64's.
template <class T>
void pool_kernels() {
  struct PoolCase {
    Shape x;
    int64_t pool, stride;
    const char* padding;
  };
  // The CNN's 2×2 stride 2, overlapping 3×3 stride 1 "same" windows, and 3×3 stride 2 "valid" ones.
  const PoolCase cases[] = {{{3, 8, 8, 5}, 2, 2, "valid"}, {{2, 7, 6, 3}, 3, 1, "same"}, {{2, 9, 9, 4}, 3, 2, "valid"}};
  double worst = 0;
  unsigned seed = 701;
  for (const PoolCase& pc : cases) {
    CAPTURE(pc.x.str());
    const tandem::graph::Attrs attrs{{"pool", std::vector<int64_t>{pc.pool, pc.pool}}, {"strides", std::vector<int64_t>{pc.stride, pc.stride}},
                                     {"padding", std::string(pc.padding)}};
    const tandem::ops::Window2D w = tandem::ops::window2d(pc.x, pc.pool, pc.pool, attrs, "max_pool2d");
    const Shape ys{w.n, w.oh, w.ow, w.c};
    const auto x = random_low<T>(size_t(pc.x.num_elements()), seed), dy = random_low<T>(size_t(ys.num_elements()), seed + 1);
    seed += 2;
    std::vector<double> max_ref(size_t(ys.num_elements()));
    std::vector<Sum> avg_ref(size_t(ys.num_elements())), max_grad_ref(size_t(pc.x.num_elements())), relu_grad_ref(size_t(pc.x.num_elements())),
        avg_grad_ref(size_t(pc.x.num_elements()));
    for (int64_t b = 0; b < w.n; ++b)
      for (int64_t oy = 0; oy < w.oh; ++oy)
        for (int64_t ox = 0; ox < w.ow; ++ox)
          for (int64_t c = 0; c < w.c; ++c) {
            const size_t yi = size_t(((b * w.oh + oy) * w.ow + ox) * w.c + c);
            const int64_t top = oy * w.sh - w.pad_top, left = ox * w.sw - w.pad_left;
            double best = -INFINITY;
            size_t best_at = 0;
            std::vector<size_t> window;
            for (int64_t iy = std::max<int64_t>(top, 0); iy < std::min(top + w.kh, w.h); ++iy)
              for (int64_t ix = std::max<int64_t>(left, 0); ix < std::min(left + w.kw, w.w); ++ix) {
                const size_t xi = size_t(((b * w.h + iy) * w.w + ix) * w.c + c);
                window.push_back(xi);
                if (wide(x[xi]) > best) best = wide(x[xi]), best_at = xi;  // the first maximum wins ties
              }
            max_ref[yi] = best;
            max_grad_ref[best_at].add(wide(dy[yi]));
            if (best > 0) relu_grad_ref[best_at].add(wide(dy[yi]));
            for (size_t xi : window) {
              avg_ref[yi].add(wide(x[xi]) / double(window.size()));
              avg_grad_ref[xi].add(wide(dy[yi]) / double(window.size()));
            }
          }
    for (int threads : {1, 4}) {
      const auto y = run_kernel<T>("max_pool2d", attrs, {pc.x}, {&x}, ys, threads);
      for (size_t i = 0; i < y.size(); ++i) REQUIRE(wide(y[i]) == max_ref[i]);  // exact
      const auto dx = run_kernel<T>("max_pool2d_grad", attrs, {pc.x, ys}, {&x, &dy}, pc.x, threads);
      worst = std::max(worst, check_sums(dx, max_grad_ref, "max_pool2d_grad"));
      tandem::graph::Attrs masked = attrs;
      masked.set("relu", true);
      const auto dx_relu = run_kernel<T>("max_pool2d_grad", masked, {pc.x, ys}, {&x, &dy}, pc.x, threads);
      worst = std::max(worst, check_sums(dx_relu, relu_grad_ref, "max_pool2d_grad with relu"));
      worst = std::max(worst, check_sums(run_kernel<T>("avg_pool2d", attrs, {pc.x}, {&x}, ys, threads), avg_ref, "avg_pool2d"));
      tandem::graph::Attrs grad_attrs = attrs;
      grad_attrs.set("input_shape", pc.x.dims());
      worst = std::max(worst, check_sums(run_kernel<T>("avg_pool2d_grad", grad_attrs, {ys}, {&dy}, pc.x, threads), avg_grad_ref, "avg_pool2d_grad"));
    }
  }
  MESSAGE(std::string(type_name<T>()) << " pooling: maxima exact; sums' largest |err| / bound " << worst);
}

}  // namespace

TEST_CASE("low precision: bfloat16 matmul, fused_matmul and batch_matmul kernels within bf16's bound of float64, same bits on 1 and 4 threads") {
  matmul_kernels<Eigen::bfloat16>();
}

TEST_CASE("low precision: float16 matmul, fused_matmul and batch_matmul kernels within float16's bound of float64, same bits on 1 and 4 threads") {
  matmul_kernels<Eigen::half>();
}

TEST_CASE("low precision: bfloat16 and float16 max and average pooling with their gradients: maxima exact, sums within the bound of float64") {
  pool_kernels<Eigen::bfloat16>();
  pool_kernels<Eigen::half>();
}

TEST_CASE("low precision: bfloat16 conv2d and both its gradients within bf16's bound of float64 sums") {
  conv_kernels<Eigen::bfloat16>();
}

TEST_CASE("low precision: float16 conv2d and both its gradients within float16's bound of float64 sums") {
  conv_kernels<Eigen::half>();
}

// --- Elementwise kernels: float32 inside, one rounding ---
//
// From exact 16-bit inputs a kernel's float32 value is within a few float32 ulps of the exact one,
// so its output is within u·|ref| + 32·2⁻²⁴·(|ref| + |inputs|): the rounding to the output type
// (2⁻⁸ or 2⁻¹¹ relative) and a margin for the float32 evaluation thousands of times smaller.

namespace {

double phi(double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); }     // the normal CDF
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct UnaryCase {
  const char* op;
  double (*f)(double);
  tandem::graph::Attrs attrs;
};
struct BinaryCase {  // (dy, v) -> dx, v the forward's output or input as the op takes it
  const char* op;
  double (*f)(double dy, double v);
  tandem::graph::Attrs attrs;
  bool v_is_output_of = false;  // v is sigmoid(x) or tanh(x): fed in (0, 1) or (-1, 1)
};

template <class T>
double elementwise_bound(double ref, double inputs) {
  return unit_roundoff<T>() * std::fabs(ref) + 32 * 0x1p-24 * (std::fabs(ref) + inputs) + subnormal_error<T>() + 1e-30;
}

template <class T>
void elementwise_kernels() {
  const int64_t n = 3000;
  const Shape s{30, 100};
  double worst = 0;
  unsigned seed = 501;
  const auto x = random_low<T>(size_t(n), seed++, 4.0), dy = random_low<T>(size_t(n), seed++), unit = random_low<T>(size_t(n), seed++);
  const UnaryCase unary[] = {
      {"relu", [](double v) { return v < 0 ? 0.0 : v; }, {}},
      {"sigmoid", sigmoid, {}},
      {"tanh", [](double v) { return std::tanh(v); }, {}},
      {"gelu", [](double v) { return v * phi(v); }, {{"approximate", false}}},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, {{"approximate", true}}},
      {"silu", [](double v) { return v * sigmoid(v); }, {}},
      {"elu", [](double v) { return v > 0 ? v : std::expm1(v); }, {{"alpha", 1.0}}},
      {"softplus", [](double v) { return std::log1p(std::exp(v)); }, {}},
      {"mish", [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }, {}},
  };
  for (const UnaryCase& u : unary) {
    CAPTURE(u.op);
    const auto y1 = run_kernel<T>(u.op, u.attrs, {s}, {&x}, s, 1), y4 = run_kernel<T>(u.op, u.attrs, {s}, {&x}, s, 4);
    WorstRatio w;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = u.f(wide(x[size_t(i)]));
      w.see(wide(y1[size_t(i)]), ref, elementwise_bound<T>(ref, std::fabs(wide(x[size_t(i)]))), std::string(u.op) + "[" + std::to_string(i) + "]");
    }
    worst = std::max(worst, w.ratio);
    CHECK_MESSAGE(same_bits(y1, y4), u.op << ": 1 and 4 threads differ");
  }
  const BinaryCase grads[] = {
      {"relu_grad", [](double d, double y) { return y <= 0 ? 0.0 : d; }, {}},
      {"sigmoid_grad", [](double d, double y) { return d * y * (1 - y); }, {}, true},
      {"tanh_grad", [](double d, double y) { return d * (1 - y * y); }, {}, true},
      {"gelu_grad", [](double d, double v) { return d * (phi(v) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * M_PI)); }, {{"approximate", false}}},
      {"silu_grad", [](double d, double v) { return d * sigmoid(v) * (1 + v * (1 - sigmoid(v))); }, {}},
  };
  for (const BinaryCase& g : grads) {
    CAPTURE(g.op);
    const std::vector<T>& v = g.v_is_output_of ? unit : x;
    const auto y1 = run_kernel<T>(g.op, g.attrs, {s, s}, {&dy, &v}, s, 1), y4 = run_kernel<T>(g.op, g.attrs, {s, s}, {&dy, &v}, s, 4);
    WorstRatio w;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = g.f(wide(dy[size_t(i)]), wide(v[size_t(i)]));
      w.see(wide(y1[size_t(i)]), ref, elementwise_bound<T>(ref, std::fabs(wide(dy[size_t(i)])) * (1 + std::fabs(wide(v[size_t(i)])))),
            std::string(g.op) + "[" + std::to_string(i) + "]");
    }
    worst = std::max(worst, w.ratio);
    CHECK_MESSAGE(same_bits(y1, y4), g.op << ": 1 and 4 threads differ");
  }
  // add, sub, mul, div: same shapes and a broadcast row; bias_add.
  const auto b = random_low<T>(size_t(n), seed++, 2.0), row = random_low<T>(size_t(s[1]), seed++, 2.0);
  const std::pair<const char*, double (*)(double, double)> binary[] = {{"add", [](double p, double q) { return p + q; }},
                                                                       {"sub", [](double p, double q) { return p - q; }},
                                                                       {"mul", [](double p, double q) { return p * q; }},
                                                                       {"div", [](double p, double q) { return p / q; }},
                                                                       {"bias_add", [](double p, double q) { return p + q; }}};
  for (const auto& [op, f] : binary)
    for (bool broadcast : {false, true}) {
      if (std::string(op) == "bias_add" && !broadcast) continue;
      CAPTURE(op);
      CAPTURE(broadcast);
      const std::vector<T>& rhs = broadcast ? row : b;
      const Shape rs = broadcast ? Shape{s[1]} : s;
      const auto y1 = run_kernel<T>(op, {}, {s, rs}, {&x, &rhs}, s, 1), y4 = run_kernel<T>(op, {}, {s, rs}, {&x, &rhs}, s, 4);
      WorstRatio w;
      for (int64_t i = 0; i < n; ++i) {
        const double p = wide(x[size_t(i)]), q = wide(rhs[size_t(broadcast ? i % s[1] : i)]), ref = f(p, q);
        w.see(wide(y1[size_t(i)]), ref, elementwise_bound<T>(ref, std::fabs(p) + std::fabs(q)), std::string(op) + "[" + std::to_string(i) + "]");
      }
      worst = std::max(worst, w.ratio);
      CHECK_MESSAGE(same_bits(y1, y4), op << ": 1 and 4 threads differ");
    }
  // activation_bias_grad: dx as sigmoid_grad / tanh_grad / relu_grad, and dbias the column sums of
  // dx as stored, in float32: each stored dx is within u of its exact value, the sum of `rows`
  // of them within rows·2⁻²⁴ of theirs, and the result rounds once.
  for (const char* act : {"relu", "sigmoid", "tanh"}) {
    CAPTURE(act);
    const std::vector<T>& v = std::string(act) == "relu" ? x : unit;
    std::vector<T> dbias1, dbias4;
    const tandem::graph::Attrs attrs{{"activation", std::string(act)}};
    const auto dx1 = run_kernel<T>("activation_bias_grad", attrs, {s, s}, {&dy, &v}, s, 1, &dbias1, Shape{s[1]});
    const auto dx4 = run_kernel<T>("activation_bias_grad", attrs, {s, s}, {&dy, &v}, s, 4, &dbias4, Shape{s[1]});
    const Activation a = tandem::backend::parse_activation(act);
    WorstRatio w;
    for (int64_t c = 0; c < s[1]; ++c) {
      double sum = 0, magnitude = 0;
      for (int64_t r = 0; r < s[0]; ++r) {
        const double d = wide(dy[size_t(r * s[1] + c)]), y = wide(v[size_t(r * s[1] + c)]);
        const double ref = a == Activation::Relu ? (y <= 0 ? 0.0 : d) : a == Activation::Sigmoid ? d * y * (1 - y) : d * (1 - y * y);
        w.see(wide(dx1[size_t(r * s[1] + c)]), ref, elementwise_bound<T>(ref, std::fabs(d)), "dx");
        sum += ref;
        magnitude += std::fabs(ref);
      }
      const double u = unit_roundoff<T>();
      const double stored = s[0] * subnormal_error<T>();  // each stored dx may be subnormal
      w.see(wide(dbias1[size_t(c)]), sum,
            u * std::fabs(sum) + (1 + u) * ((u + (s[0] + 34) * 0x1p-24) * magnitude + stored) + subnormal_error<T>() + 1e-30, "dbias");
    }
    worst = std::max(worst, w.ratio);
    // The column sums split rows by thread, as reduce_sum's do for float32: compare dx only.
    CHECK_MESSAGE(same_bits(dx1, dx4), act << ": 1 and 4 threads differ");
  }
  MESSAGE(std::string(type_name<T>()) << " elementwise kernels: largest |err| / bound " << worst);
}

}  // namespace

TEST_CASE("low precision: transpose moves 16-bit values unchanged") {
  const Shape s{3, 4, 5};
  const auto x = random_low<Eigen::bfloat16>(60, 7);
  const auto y = run_kernel<Eigen::bfloat16>("transpose", {{"perm", std::vector<int64_t>{2, 0, 1}}}, {s}, {&x}, Shape{5, 3, 4}, 2);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k) CHECK(wide(y[size_t((k * 3 + i) * 4 + j)]) == wide(x[size_t((i * 4 + j) * 5 + k)]));
}

TEST_CASE("low precision: bfloat16 elementwise kernels (activations, their gradients, add/sub/mul/div, bias_add, activation_bias_grad) round once from float32") {
  elementwise_kernels<Eigen::bfloat16>();
}

TEST_CASE("low precision: float16 elementwise kernels round once from float32") {
  elementwise_kernels<Eigen::half>();
}

TEST_CASE("low precision: dropout in bfloat16 and float16 keeps or zeroes each value, kept ones scaled in float32 and rounded once") {
  const auto check = [](auto zero) {
    using T = decltype(zero);
    const Shape s{40, 50};
    const auto x = random_low<T>(2000, 11);
    const std::vector<int64_t> step{3};
    const tandem::graph::Attrs attrs{{"rate", 0.3}, {"seed", int64_t{7}}};
    // The step input is int64: run_kernel takes T inputs, so pass its bytes as T's (4 of them).
    std::vector<T> step_bits(4);
    std::memcpy(static_cast<void*>(step_bits.data()), step.data(), sizeof(int64_t));
    const auto y1 = run_kernel<T>("dropout", attrs, {s, Shape{}}, {&x, &step_bits}, s, 1);
    const auto y4 = run_kernel<T>("dropout", attrs, {s, Shape{}}, {&x, &step_bits}, s, 4);
    CHECK(same_bits(y1, y4));
    WorstRatio worst;
    int64_t kept = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (wide(y1[i]) == 0 && wide(x[i]) != 0) continue;
      ++kept;
      const double ref = wide(x[i]) / 0.7;
      worst.see(wide(y1[i]), ref, bound<T>(ref, std::fabs(ref), 1), "dropout");
    }
    CHECK(kept > 1200);  // 70 % of 2000 expected, 1400 ± 20
    CHECK(kept < 1600);
    MESSAGE(std::string(type_name<T>()) << " dropout: largest |err| / bound " << worst.ratio);
  };
  check(Eigen::bfloat16(0.0f));
  check(Eigen::half(0.0f));
}

TEST_CASE("low precision: a bfloat16 graph (matmul, bias_add, relu) runs through the planner and runtime on cpu:0 within bf16's bound") {
  tandem::graph::Graph g;
  const int64_t m = 48, k = 200, n = 24;
  const auto a = random_low<Eigen::bfloat16>(size_t(m * k), 901), w = random_low<Eigen::bfloat16>(size_t(k * n), 902),
             b = random_low<Eigen::bfloat16>(size_t(n), 903);
  const auto tensor = [](const Shape& s, const std::vector<Eigen::bfloat16>& v) {
    std::vector<tandem::bfloat16> bits(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) bits[i] = tandem::bfloat16(static_cast<float>(v[i]));  // exact: the same value
    return tandem::Tensor::from(s, std::span<const tandem::bfloat16>(bits));
  };
  const auto pa = g.placeholder("a", {Shape{m, k}, DType::BF16}), pw = g.placeholder("w", {Shape{k, n}, DType::BF16}),
             pb = g.placeholder("b", {Shape{n}, DType::BF16});
  const auto y = tandem::ops::relu(g, tandem::ops::bias_add(g, tandem::ops::matmul(g, pa, pw), pb));
  const tandem::Tensor out = op_runner::run(g, {{"a", tensor({m, k}, a)}, {"w", tensor({k, n}, w)}, {"b", tensor({n}, b)}}, {y}).at(0);
  REQUIRE(out.dtype() == DType::BF16);
  WorstRatio worst;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Sum s;
      for (int64_t q = 0; q < k; ++q) s.add(wide(a[size_t(i * k + q)]) * wide(w[size_t(q * n + j)]));
      // The unfused graph rounds twice (the product, then bias and relu): 2u.
      const double product = s.value, ref = std::max(0.0, product + wide(b[size_t(j)]));
      const double limit = 0x1p-8 * (std::fabs(product) + std::fabs(ref)) + bound<Eigen::bfloat16>(0, s.magnitude + std::fabs(wide(b[size_t(j)])), k);
      worst.see(out.item(i * n + j), ref, limit, "y");
    }
  MESSAGE("bfloat16 graph: largest |err| / bound " << worst.ratio);
}

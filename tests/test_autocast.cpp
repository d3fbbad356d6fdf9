// Mixed precision's casts (graph/autocast.h), read from the graph: a layer of a 16-bit compute
// dtype runs its matrix products and the elementwise work after them in 16 bits, softmax and
// reductions in float32, each weight converted once; gradients have their values' dtypes and
// reach float32 weights as float32; a graph without 16-bit values is left exactly as it was.
// The numbers: a bf16 Dense + softmax against a float64 reference within bf16's bound.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "autodiff/autodiff.h"
#include "graph/autocast.h"
#include "graph/graph.h"
#include "op_runner.h"
#include "ops/ops.h"

using tandem::DType;
using tandem::Shape;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {

// Each op of the graph with the dtype of its first input (or its output, without inputs).
std::multimap<std::string, DType> op_dtypes(const Graph& g) {
  std::multimap<std::string, DType> m;
  for (int i = 0; i < g.size(); ++i) {
    const auto& n = g.node(i);
    m.emplace(n.op, n.inputs.empty() ? n.outputs[0].dtype : g.type(n.inputs[0]).dtype);
  }
  return m;
}

int count(const Graph& g, const std::string& op) {
  int c = 0;
  for (int i = 0; i < g.size(); ++i) c += g.node(i).op == op;
  return c;
}

// Dense(4) on a (3, 5) batch with softmax and a sum, the kernel read twice.
struct DenseGraph {
  Graph g;
  Value x, w, b, logits, probs, loss;
  explicit DenseGraph(std::optional<DType> compute) {
    g.autocast = true;
    x = g.placeholder("x", {Shape{3, 5}, DType::F32});
    w = g.variable({0, "dense/kernel", {Shape{5, 4}, DType::F32}, true});
    b = g.variable({1, "dense/bias", {Shape{4}, DType::F32}, true});
    {
      tandem::graph::ComputeDtypeGuard layer(g, compute);
      logits = ops::relu(g, ops::bias_add(g, ops::matmul(g, x, w), b));
      logits = ops::add(g, logits, ops::matmul(g, ops::relu(g, x), w));  // the kernel again
      probs = ops::softmax(g, logits, -1);
    }
    loss = ops::reduce_sum(g, probs, {0, 1});
  }
};

}  // namespace

TEST_CASE("autocast: in a bfloat16 layer, products and the elementwise work after them run in bf16, softmax in float32") {
  DenseGraph d(DType::BF16);
  const auto dtypes = op_dtypes(d.g);
  auto dtype_of = [&](const std::string& op) {
    std::set<DType> s;
    for (auto [it, end] = dtypes.equal_range(op); it != end; ++it) s.insert(it->second);
    return s;
  };
  CHECK(dtype_of("matmul") == std::set<DType>{DType::BF16});
  CHECK(dtype_of("bias_add") == std::set<DType>{DType::BF16});
  CHECK(dtype_of("add") == std::set<DType>{DType::BF16});
  CHECK(dtype_of("softmax") == std::set<DType>{DType::F32});
  CHECK(d.g.type(d.logits).dtype == DType::BF16);
  CHECK(d.g.type(d.probs).dtype == DType::F32);
  // The kernel, read by two products, is converted once; the bias once; x once (and relu(x)
  // stays float32: an elementwise op with only float32 inputs is not cast).
  CHECK(count(d.g, "cast") == 5);  // x, kernel, bias, relu(x), and logits back to float32 for softmax
}

TEST_CASE("autocast: gradients have their values' dtypes, and float32 weights get float32 gradients") {
  DenseGraph d(DType::BF16);
  const auto grads = tandem::autodiff::gradients(d.g, d.loss, {d.w, d.b});
  CHECK(d.g.type(grads[0]).dtype == DType::F32);
  CHECK(d.g.type(grads[1]).dtype == DType::F32);
  // The kernel's gradient products ran in bf16 (the forward operands' dtype).
  int bf16_products = 0;
  for (int i = 0; i < d.g.size(); ++i)
    if (d.g.node(i).phase == tandem::graph::Phase::Backward && d.g.node(i).op == "matmul")
      bf16_products += d.g.type(d.g.node(i).inputs[0]).dtype == DType::BF16;
  CHECK(bf16_products >= 3);
}

TEST_CASE("autocast: a graph that does not ask for casts gets none") {
  Graph g;
  const Value h = g.cast(g.placeholder("x", {Shape{2, 3}, DType::F32}), DType::BF16);
  tandem::graph::ComputeDtypeGuard layer(g, DType::F32);
  CHECK(g.type(ops::reduce_sum(g, h, {0})).dtype == DType::BF16);  // what a strategy's rewrite adds keeps its dtype
}

TEST_CASE("autocast: a float32 graph is left exactly as it was") {
  DenseGraph f32(DType::F32), none(std::nullopt);
  CHECK(count(f32.g, "cast") == 0);
  CHECK(count(none.g, "cast") == 0);
  CHECK(f32.g.size() == none.g.size());
  tandem::autodiff::gradients(f32.g, f32.loss, {f32.w, f32.b});
  CHECK(count(f32.g, "cast") == 0);
}

TEST_CASE("autocast: a float32 layer takes 16-bit inputs as float32; outside layers, operands that disagree meet in float32") {
  Graph g;
  g.autocast = true;
  const Value h = g.cast(g.placeholder("x", {Shape{2, 3}, DType::F32}), DType::BF16);
  const Value w = g.variable({0, "k", {Shape{3, 3}, DType::F32}, true});
  {
    tandem::graph::ComputeDtypeGuard layer(g, DType::F32);
    CHECK(g.type(ops::matmul(g, h, w)).dtype == DType::F32);
    CHECK(g.type(ops::relu(g, h)).dtype == DType::F32);
  }
  CHECK(g.type(ops::add(g, h, g.placeholder("y", {Shape{2, 3}, DType::F32}))).dtype == DType::F32);
  CHECK(g.type(ops::relu(g, h)).dtype == DType::BF16);  // inputs agree and relu has 16-bit kernels
  CHECK(g.type(ops::reduce_sum(g, h, {0})).dtype == DType::F32);  // no 16-bit reduction: float32
}

TEST_CASE("autocast: a bf16 Dense + softmax computes within bf16's bound of a float64 reference") {
  DenseGraph d(DType::BF16);
  std::vector<float> xs(15), ws(20), bs(4);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(float(i) * 0.7f);
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i] = std::cos(float(i) * 1.3f) * 0.5f;
  for (std::size_t i = 0; i < bs.size(); ++i) bs[i] = 0.1f * float(i);
  // Variables are fed through their read nodes' placeholders here: rebuild with placeholders.
  Graph g;
  g.autocast = true;
  const Value x = g.placeholder("x", {Shape{3, 5}, DType::F32}), w = g.placeholder("w", {Shape{5, 4}, DType::F32}),
              b = g.placeholder("b", {Shape{4}, DType::F32});
  Value probs;
  {
    tandem::graph::ComputeDtypeGuard layer(g, DType::BF16);
    probs = ops::softmax(g, ops::relu(g, ops::bias_add(g, ops::matmul(g, x, w), b)), -1);
  }
  const auto out = op_runner::run(g, {{"x", tandem::Tensor::from({3, 5}, std::span<const float>(xs))},
                                      {"w", tandem::Tensor::from({5, 4}, std::span<const float>(ws))},
                                      {"b", tandem::Tensor::from({4}, std::span<const float>(bs))}},
                                  {probs});
  REQUIRE(out[0].dtype() == DType::F32);
  auto bf16 = [](double v) { return double(float(tandem::bfloat16(v))); };
  for (int r = 0; r < 3; ++r) {
    double z[4], zmax = -1e30, sum = 0;
    for (int c = 0; c < 4; ++c) {
      double acc = 0;
      for (int k = 0; k < 5; ++k) acc += bf16(xs[std::size_t(r * 5 + k)]) * bf16(ws[std::size_t(k * 4 + c)]);
      z[c] = std::max(0.0, acc + bf16(bs[std::size_t(c)]));
      zmax = std::max(zmax, z[c]);
    }
    for (double& v : z) sum += std::exp(v - zmax);
    for (int c = 0; c < 4; ++c) {
      // Logits carry about two bf16 roundings (the product, the bias sum) of at most 2^-8 relative
      // each; softmax's relative error is at most twice the logits' absolute error.
      const double p = std::exp(z[c] - zmax) / sum, bound = 2 * 2 * std::ldexp(1.0, -8) * (std::fabs(z[c]) + 1);
      CHECK(std::fabs(out[0].data<float>()[r * 4 + c] - p) <= bound * p + 1e-7);
    }
  }
}

// A weight's gradient summed over a batch of 300 rows: rounded to bfloat16 it would be off by up
// to 2^-9 relative; kept as the product's float32 sums it is within float32's rounding.
TEST_CASE("autocast: a float32 weight's gradient through a bf16 product keeps the product's float32 sums") {
  Graph g;
  g.autocast = true;
  const Value x = g.placeholder("x", {Shape{300, 3}, DType::F32}), w = g.placeholder("w", {Shape{3, 2}, DType::F32});
  Value y;
  {
    tandem::graph::ComputeDtypeGuard layer(g, DType::BF16);
    y = ops::matmul(g, x, w);
  }
  const Value loss = ops::reduce_sum(g, y, {0, 1});
  const Value dw = tandem::autodiff::gradients(g, loss, {w})[0];
  const auto& made = g.node(dw.node);
  CHECK(made.op == "matmul");  // the product itself, not a cast of its 16-bit result
  CHECK(g.type(made.inputs[0]).dtype == DType::BF16);
  CHECK(g.type(dw).dtype == DType::F32);

  std::vector<float> xs(900), ws(6, 0.5f);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(float(i) * 0.37f) * float(1 + i % 7);
  const auto out = op_runner::run(g, {{"x", tandem::Tensor::from({300, 3}, std::span<const float>(xs))},
                                      {"w", tandem::Tensor::from({3, 2}, std::span<const float>(ws))}},
                                  {dw});
  REQUIRE(out[0].dtype() == DType::F32);
  auto bf16 = [](double v) { return double(float(tandem::bfloat16(v))); };
  int not_bf16 = 0;  // elements that are no bfloat16 value: the sums were not rounded to 16 bits
  for (int k = 0; k < 3; ++k) {
    double sum = 0, magnitude = 0;
    for (int r = 0; r < 300; ++r) sum += bf16(xs[std::size_t(r * 3 + k)]), magnitude += std::fabs(bf16(xs[std::size_t(r * 3 + k)]));
    for (int c = 0; c < 2; ++c) {
      const double got = out[0].data<float>()[k * 2 + c];
      CHECK(std::fabs(got - sum) <= 300 * std::ldexp(1.0, -24) * magnitude);
      not_bf16 += got != bf16(got);
    }
  }
  CHECK(not_bf16 > 0);
}

// The fusion pass (compile/fusion.h). Every fused kernel is checked against float64 central finite
// differences, both where the pass makes it (the gradient check's program must contain the fused
// op) and as an op of its own (its gradient rule); training with the pass and without it
// (TANDEM_FUSION=0) must end at the same weights; and what must not fuse does not.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>

#include "ops/conv.h"
#include "tests/op_runner.h"
#include "tests/gradient_check.h"
#include "tests/strategy_helpers.h"
#include "lower_with.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
using gradcheck::GradCheck;
using tandem::Shape;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {

// How many nodes of each op the program of device 0 runs.
std::map<std::string, int> ops_run(const tandem::compile::Plan& plan) {
  std::map<std::string, int> count;
  const tandem::compile::Program& p = plan.programs[0];
  for (const tandem::compile::Block& b : p.blocks)
    for (int n : b.nodes) ++count[p.graph.node(n).op];
  return count;
}

// Sets TANDEM_FUSION for one scope.
struct FusionOff {
  FusionOff() { setenv("TANDEM_FUSION", "0", 1); }
  ~FusionOff() { unsetenv("TANDEM_FUSION"); }
  FusionOff(const FusionOff&) = delete;
  FusionOff& operator=(const FusionOff&) = delete;
};

Value activate(Graph& g, const std::string& activation, Value x) {
  if (activation == "relu") return ops::relu(g, x);
  if (activation == "sigmoid") return ops::sigmoid(g, x);
  if (activation == "tanh") return ops::tanh(g, x);
  return x;
}

}  // namespace

TEST_CASE("fusion: matmul, bias and activation become fused_matmul and activation_bias_grad, with exact gradients") {
  for (const std::string activation : {"relu", "sigmoid", "tanh", "linear"}) {
    for (const bool rank3 : {false, true}) {
      GradCheck c(7);
      const Shape xs = rank3 ? Shape{2, 3, 5} : Shape{6, 5};
      const Value x = c.uniform(xs), w = c.uniform({5, 4}), b = c.uniform({4}, -0.5, 0.5);
      const Value y = activate(c.g, activation, ops::bias_add(c.g, ops::matmul(c.g, x, w), b));
      c.check(y, "dense with " + activation + (rank3 ? ", rank-3 input" : ""));
      const auto run = ops_run(*c.plan);
      CHECK(run.count("fused_matmul") == 1);
      CHECK(run.count("bias_add") == 0);
      CHECK(run.count(activation) == 0);
      // The bias gradient comes out of the activation's gradient; a linear layer's is dy's column sum.
      CHECK(run.count("activation_bias_grad") == (activation == "linear" ? 0u : 1u));
      CHECK(run.count(activation + "_grad") == 0);
    }
  }
}

TEST_CASE("fusion: conv2d, bias, relu and max pooling become fused_conv2d and a masked max_pool2d_grad, with exact gradients") {
  for (const std::string padding : {"valid", "same"}) {
    GradCheck c(9);
    const Value x = c.uniform({2, 6, 6, 2}), k = c.uniform({3, 3, 2, 3}), b = c.uniform({3}, -0.5, 0.5);
    const Value h = ops::relu(c.g, ops::bias_add(c.g, ops::conv2d(c.g, x, k, {1, 1}, {1, 1}, padding), b));
    c.check(ops::max_pool2d(c.g, h, {2, 2}, {2, 2}, "valid"), "conv, relu and pool, padding " + padding);
    const auto run = ops_run(*c.plan);
    CHECK(run.count("fused_conv2d") == 1);
    CHECK(run.count("relu_grad") == 0);
    CHECK(run.count("relu") == 0);
    CHECK(run.count("max_pool2d_grad") == 1);
    bool masked = false;
    for (const auto& b2 : c.plan->programs[0].blocks)
      for (int n : b2.nodes)
        if (c.plan->programs[0].graph.node(n).op == "max_pool2d_grad") masked = c.plan->programs[0].graph.node(n).attrs.b("relu");
    CHECK(masked);
  }
}

TEST_CASE("fusion: the fused ops' own gradient rules are exact") {
  for (const std::string activation : {"relu", "tanh", "linear"}) {
    GradCheck c(5);
    const Value x = c.uniform({4, 3}), w = c.uniform({4, 5}), b = c.uniform({5});
    // Transposed left operand: (4, 3)ᵀ · (4, 5).
    c.check(c.g.add("fused_matmul", {x, w, b}, {{"transpose_a", true}, {"transpose_b", false}, {"activation", activation}}),
            "fused_matmul, transpose_a, " + activation);
  }
  GradCheck c(6);
  const Value x = c.uniform({2, 5, 5, 2}), k = c.uniform({2, 2, 2, 3}), b = c.uniform({3});
  c.check(c.g.add("fused_conv2d", {x, k, b},
                  {{"strides", std::vector<int64_t>{2, 1}}, {"dilation", std::vector<int64_t>{1, 1}}, {"padding", std::string("same")},
                   {"activation", std::string("sigmoid")}}),
          "fused_conv2d, strides (2, 1), sigmoid");
}

TEST_CASE("fusion: a value read twice, fetched, or an activation whose gradient needs its input does not fuse") {
  {
    GradCheck c(3);  // the pre-activation is read by gelu_grad: only matmul and bias fuse
    const Value x = c.uniform({4, 3}), w = c.uniform({3, 2}), b = c.uniform({2});
    c.check(ops::gelu(c.g, ops::bias_add(c.g, ops::matmul(c.g, x, w), b)), "gelu");
    const auto run = ops_run(*c.plan);
    CHECK(run.count("fused_matmul") == 1);
    CHECK(run.count("gelu") == 1);
    CHECK(run.count("gelu_grad") == 1);
  }
  {
    GradCheck c(4);  // the product is read by the bias_add and by the output: nothing fuses
    const Value x = c.uniform({4, 3}), w = c.uniform({3, 2}), b = c.uniform({2});
    const Value p = ops::matmul(c.g, x, w);
    c.check(ops::add(c.g, ops::relu(c.g, ops::bias_add(c.g, p, b)), p), "a product read twice");
    const auto run = ops_run(*c.plan);
    CHECK(run.count("fused_matmul") == 0);
    CHECK(run.count("bias_add") == 1);
    CHECK(run.count("activation_bias_grad") == 1);  // the backward chain still fuses
  }
}

TEST_CASE("fusion: training fused and unfused ends at the same weights (MLP and CNN, Default and Mirrored)") {
  const std::string trace = "fusion_trace_test.json";
  auto train = [&](bool cnn, dist::StrategyPtr strategy, bool traced) {
    tandem::set_random_seed(5);
    std::vector<tandem::LayerRef> layers;
    if (cnn)
      layers = {tl::InputLayer({6, 6, 1}), tl::Conv2D(4, 3, {.activation = "relu"}), tl::MaxPooling2D(2), tl::Flatten(),
                tl::Dense(16, "tanh"), tl::Dense(5)};
    else
      layers = {tl::InputLayer({36}), tl::Dense(32, "relu"), tl::Dense(16, "sigmoid"), tl::Dense(5)};
    tandem::Sequential model(layers);
    model.compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
    tandem::Dataset data = blobs(160, 36, 5);
    if (cnn) data = tandem::Dataset{data.x().reshape({160, 6, 6, 1}), data.y()};
    model.fit(data, {.batch_size = 32, .shuffle = false, .verbose = 0, .trace_path = traced ? trace : "", .trace_step = 1});
    return model.get_weights();
  };
  auto ops_traced = [&] {
    std::ifstream in(trace);
    REQUIRE(in.good());
    std::map<std::string, int> names;
    const nlohmann::json events = nlohmann::json::parse(in)["traceEvents"];
    for (const auto& e : events)
      if (e.contains("name") && e["name"].is_string()) ++names[e["name"].get<std::string>()];
    return names;
  };
  for (const bool cnn : {false, true}) {
    INFO((cnn ? "CNN" : "MLP"));
    std::vector<tandem::Tensor> unfused;
    {
      const FusionOff off;
      unfused = train(cnn, dist::Default(), true);
      const auto names = ops_traced();
      CHECK(names.count("fused_matmul") == 0);
      CHECK(names.count("relu") == 1);
    }
    const auto fused = train(cnn, dist::Default(), true);
    const auto names = ops_traced();
    CHECK(names.count("fused_matmul") == 1);
    CHECK(names.count("activation_bias_grad") == 1);
    CHECK(names.count("relu") == 0);
    if (cnn) CHECK(names.count("fused_conv2d") == 1);
    CHECK(max_relative_difference(fused, unfused) <= 1e-6);  // 0 here: the same operations in the same order
    CHECK(max_relative_difference(train(cnn, dist::Mirrored(cpus(2)), false), unfused) <= 1e-5);
  }
  std::remove(trace.c_str());
}

// Under mixed_bfloat16 a Dense layer's bias is float32: its gradient is the float32 column sum of
// the 16-bit activation gradient cast to float32. The pass fuses across that cast into one
// activation_bias_grad that keeps the float32 sums: the same bits as unfused (both sum the
// rounded 16-bit gradient in float32, in the same order), within float32's bound of float64.
TEST_CASE("fusion: a 16-bit activation gradient cast to float32 and summed by columns becomes activation_bias_grad with float32 sums") {
  const int64_t rows = 300, cols = 7;
  std::vector<tandem::bfloat16> dy_bits, y_bits;
  for (int64_t i = 0; i < rows * cols; ++i) {
    dy_bits.push_back(tandem::bfloat16(static_cast<float>(std::sin(0.37 * double(i)))));
    y_bits.push_back(tandem::bfloat16(static_cast<float>(0.9 * std::cos(0.11 * double(i)))));
  }
  const tandem::Tensor dy = tandem::Tensor::from({rows, cols}, std::span<const tandem::bfloat16>(dy_bits));
  const tandem::Tensor y = tandem::Tensor::from({rows, cols}, std::span<const tandem::bfloat16>(y_bits));
  for (const std::string grad : {"relu_grad", "tanh_grad"}) {
    CAPTURE(grad);
    Graph g;
    const Value pdy = g.placeholder("dy", {Shape{rows, cols}, tandem::DType::BF16}), py = g.placeholder("y", {Shape{rows, cols}, tandem::DType::BF16});
    const Value dx = g.add(grad, {pdy, py});
    const Value db = ops::reduce_sum(g, ops::cast(g, dx, tandem::DType::F32), {0}, false);
    const auto fused_plan = lower_with(tandem::distribute::Default(), g, {dx, db});
    CHECK(ops_run(fused_plan).count("activation_bias_grad") == 1);
    CHECK(ops_run(fused_plan).count("reduce_sum") == 0);
    const auto fused = op_runner::run(g, {{"dy", dy}, {"y", y}}, {dx, db});
    std::vector<tandem::Tensor> unfused;
    {
      const FusionOff off;
      CHECK(ops_run(lower_with(tandem::distribute::Default(), g, {dx, db})).count("activation_bias_grad") == 0);
      unfused = op_runner::run(g, {{"dy", dy}, {"y", y}}, {dx, db});
    }
    REQUIRE(fused[1].dtype() == tandem::DType::F32);
    CHECK(std::memcmp(fused[0].raw(), unfused[0].raw(), fused[0].bytes()) == 0);
    CHECK(std::memcmp(fused[1].raw(), unfused[1].raw(), fused[1].bytes()) == 0);
    for (int64_t c = 0; c < cols; ++c) {  // the float64 sum of the rounded gradient, within float32's (rows + 2)·2⁻²⁴·Σ|dx|
      double sum = 0, magnitude = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const double d = static_cast<float>(fused[0].values<tandem::bfloat16>()[static_cast<std::size_t>(r * cols + c)]);
        sum += d, magnitude += std::fabs(d);
      }
      CHECK(std::fabs(fused[1].values<float>()[static_cast<std::size_t>(c)] - sum) <= double(rows + 2) * 0x1p-24 * magnitude);
    }
  }
}

TEST_CASE("fusion: a fused op with a bias that does not match its output is refused with both shapes") {
  GradCheck c(2);
  const Value x = c.uniform({4, 3}), w = c.uniform({3, 5}), b = c.uniform({4});
  CHECK_THROWS_WITH_AS(c.g.add("fused_matmul", {x, w, b}, {{"transpose_a", false}, {"transpose_b", false}, {"activation", std::string("relu")}}),
                       doctest::Contains("fused_matmul: expected a bias of shape (5,) and dtype float64 for the output (4, 5), got (4,)"),
                       tandem::ShapeError);
  const Value img = c.uniform({1, 4, 4, 2}), k = c.uniform({3, 3, 2, 3});
  CHECK_THROWS_WITH_AS(c.g.add("fused_conv2d", {img, k, b},
                               {{"strides", std::vector<int64_t>{1, 1}}, {"dilation", std::vector<int64_t>{1, 1}},
                                {"padding", std::string("valid")}, {"activation", std::string("elu")}}),
                       doctest::Contains("fused_conv2d: activation must be linear, relu, sigmoid or tanh, got 'elu'"), tandem::ShapeError);
}

// TensorParallel2D on virtual CPU devices: an MLP with biases trains to Default's weights on 2×2,
// 1×4 and 4×1 meshes (SGD with momentum, Adam); from the lowered programs, each device holds its
// blocks of the kernels, does a quarter of Default's matrix products, gathers no weight and
// communicates only within its row or its column; weights set on the host reach the blocks; bad
// meshes are errors; summary() prints the splits and memory_per_device() counts the blocks.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <map>
#include <set>

#include "plan_helpers.h"
#include "strategy_helpers.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
namespace graph = tandem::graph;
using tandem::Tensor;

namespace {
// Five Dense layers with biases: a 20 → 64, b 64 → 32, c 32 → 32, d 32 → 16, e 16 → 4 (logits).
std::unique_ptr<tandem::Model> mlp(int64_t first_units = 64) {
  return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({20}), tl::Dense(first_units, "relu", {.name = "a"}), tl::Dense(32, "tanh", {.name = "b"}),
      tl::Dense(32, "relu", {.name = "c"}), tl::Dense(16, "relu", {.name = "d"}), tl::Dense(4, "", {.name = "e"})});
}

// Five training steps (batch 16) of the MLP under a strategy, from seed 3; the weights after them.
std::vector<Tensor> five_steps(dist::StrategyPtr strategy, tandem::OptimizerPtr optimizer) {
  tandem::set_random_seed(3);
  auto model = mlp();
  model->compile({.optimizer = std::move(optimizer), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}, .strategy = strategy});
  model->fit(blobs(80, 20, 4), {.epochs = 1, .batch_size = 16, .verbose = 0});
  CHECK(model->optimizer()->iterations() == 5);
  return model->get_weights();
}

// The device groups of a program's collectives of `op`.
std::set<std::vector<int64_t>> groups(const tandem::compile::Program& p, const std::string& op) {
  std::set<std::vector<int64_t>> out;
  for (int id = 0; id < p.graph.size(); ++id)
    if (p.graph.node(id).op == op) {
      const std::vector<int>& group = p.graph.node(id).communication->group;
      out.insert(std::vector<int64_t>(group.begin(), group.end()));
    }
  return out;
}
}  // namespace

TEST_CASE("tensor parallel 2-D: an MLP with biases on 2×2, 1×4 and 4×1 meshes ends five steps with Default's weights (SGD, Adam)") {
  for (const bool adam : {false, true}) {
    auto optimizer = [adam] { return adam ? tandem::optimizers::Adam(1e-2) : tandem::optimizers::SGD(0.1, {.momentum = 0.9}); };
    const auto reference = five_steps(dist::Default(), optimizer());
    for (const auto& [rows, columns] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {1, 4}, {4, 1}}) {
      const std::string mesh = std::string(adam ? "Adam, " : "SGD, ") + std::to_string(rows) + " × " + std::to_string(columns);
      INFO(mesh);
      CHECK(max_relative_difference(five_steps(dist::TensorParallel2D(cpus(4), rows, columns), optimizer()), reference) <= 1e-5);
    }
  }
}

TEST_CASE("tensor parallel 2-D: on a 2×2 mesh each device holds a quarter of each kernel, does a quarter of Default's matrix products, gathers no weight, and communicates within its row or column") {
  // Default's step on a batch of 16: each layer's product and kernel gradient, and the input
  // gradient of every layer but the first (its input is the batch).
  const int64_t B = 16;
  const std::vector<std::pair<int64_t, int64_t>> layers = {{20, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 4}};
  int64_t whole = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) whole += (l ? 3 : 2) * 2 * B * layers[l].first * layers[l].second;
  auto run = [](dist::StrategyPtr s) {
    auto recording = std::make_shared<Recording>(std::move(s));
    const auto weights = five_steps(recording, tandem::optimizers::Adam(1e-2));
    REQUIRE(recording->graphs.size() == 1);  // the training step, lowered once
    return std::pair{weights, recording->plan(0)};
  };
  const auto [reference, default_plan] = run(dist::Default());
  REQUIRE(default_plan.programs.size() == 1);
  CHECK(product_flops(default_plan.programs[0]) == whole);

  const auto [weights, plan] = run(dist::TensorParallel2D(cpus(4), 2, 2));
  CHECK(max_relative_difference(weights, reference) <= 1e-5);
  REQUIRE(plan.programs.size() == 4);
  // a by units over both axes, b by rows over the mesh's rows and units over its columns, c the
  // other way round, d by units over both (so that e can be cut by rows over both).
  const std::map<std::string, tandem::Shape> blocks = {{"a/kernel", {20, 16}}, {"b/kernel", {32, 16}}, {"c/kernel", {16, 16}},
                                                       {"d/kernel", {32, 4}},  {"e/kernel", {4, 4}},   {"a/bias", {16}},
                                                       {"b/bias", {16}},       {"c/bias", {16}},       {"d/bias", {4}},
                                                       {"e/bias", {4}},        {"optimizer/b/kernel/momentum", {32, 16}}};
  for (int d = 0; d < 4; ++d) {
    const auto& p = plan.programs[static_cast<std::size_t>(d)];
    INFO("device " << d << " (" << p.device << ")");
    const int i = d / 2, j = d % 2;
    CHECK(p.device == "cpu:" + std::to_string(d));
    CHECK(product_flops(p) == whole / 4);
    CHECK_FALSE(gathers_a_weight(p));
    int found = 0;
    for (const auto& v : p.graph.variables())
      if (auto it = blocks.find(v.path); it != blocks.end()) {
        CHECK_MESSAGE(v.type.shape == it->second, v.path);
        ++found;
      }
    CHECK(found == static_cast<int>(blocks.size()));
    // Activations are gathered among the two devices of a row or of a column, never all four;
    // partial sums are added there too, except the last layer's (partial over both axes: one
    // all-reduce over the four, cheaper than one per axis). No gradient needs summing (every
    // weight's gradient is its block's).
    const std::set<std::vector<int64_t>> row{{2 * i, 2 * i + 1}}, column{{j, 2 + j}};
    std::set<std::vector<int64_t>> both = row;
    both.insert(column.begin(), column.end());
    std::set<std::vector<int64_t>> sums = both;
    sums.insert({0, 1, 2, 3});
    CHECK(groups(p, "all_reduce_start") == sums);
    CHECK(groups(p, "all_gather") == both);
    CHECK(count_ops_run(p, "reduce_scatter") == 0);
    for (int id = 0; id < p.graph.size(); ++id) {
      const graph::Node& n = p.graph.node(id);
      if (n.def->gradient_input >= 0)
        CHECK_MESSAGE(p.graph.node(n.inputs[static_cast<std::size_t>(n.def->gradient_input)].node).op != "all_reduce_wait", n.scope);
    }
  }
}

TEST_CASE("tensor parallel 2-D: bad meshes and layers too narrow to split are errors naming the argument") {
  CHECK_THROWS_WITH_AS(dist::TensorParallel2D(cpus(4), 2, 3), "TensorParallel2D: a mesh of 2 × 3 needs 6 devices, got 4", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::TensorParallel2D(cpus(4), 0, 4), "TensorParallel2D: rows must be >= 1, got 0", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::TensorParallel2D(cpus(4), 4, -1), "TensorParallel2D: columns must be >= 1, got -1", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::TensorParallel2D({"cpu:0", "cpu:0"}, 1, 2), "TensorParallel2D: device 'cpu:0' is listed twice", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::TensorParallel2D({}, 1, 1), "TensorParallel2D: expected at least one device, got none", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::TensorParallel2D(cpus(2), 1, 2, {.timeout_ms = 0}), "TensorParallel2D: timeout_ms must be >= 1, got 0",
                       tandem::ValueError);
  // The first layer's 2 units cannot be cut over the 4 devices of both axes.
  auto model = mlp(2);
  model->compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .strategy = dist::TensorParallel2D(cpus(4), 2, 2)});
  CHECK_THROWS_WITH_AS(model->fit(blobs(16, 20, 4), {.epochs = 1, .batch_size = 16, .verbose = 0}),
                       "TensorParallel2D: weight 'a/kernel' of shape (20, 2) is split along axis 1 over mesh axes row × col: expected at "
                       "least 4 there, got 2",
                       tandem::ValueError);
}

TEST_CASE("tensor parallel 2-D: summary() prints each weight's split and block, and each device's memory holds its blocks") {
  auto model = mlp();
  model->compile({.optimizer = tandem::optimizers::Adam(1e-3), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .strategy = dist::TensorParallel2D(cpus(4), 2, 2)});
  const std::string text = model->summary_string();
  const std::string title = "TensorParallel2D: mesh 2 × 2 (row, col) over cpu:0, cpu:1, cpu:2, cpu:3";
  CHECK(text.find(title) != std::string::npos);
  CHECK(placement_row(text, title, "a/kernel").find("(None, row×col)") != std::string::npos);
  CHECK(placement_row(text, title, "b/kernel").find("(row, col)") != std::string::npos);
  CHECK(placement_row(text, title, "b/kernel").find("(32, 16)") != std::string::npos);
  CHECK(placement_row(text, title, "c/kernel").find("(col, row)") != std::string::npos);
  CHECK(placement_row(text, title, "e/kernel").find("(row×col, None)") != std::string::npos);
  CHECK(placement_row(text, title, "b/bias").find("(col,)") != std::string::npos);
  CHECK(placement_row(text, title, "e/bias").find("whole") != std::string::npos);
  // a 20·16 + 16, b 32·16 + 16, c 16·16 + 16, d 32·4 + 4, e 4·4 + 4 floats of the 5,076.
  const std::size_t block_bytes = 4 * (336 + 528 + 272 + 132 + 20);
  CHECK(text.find("Each device holds " + std::to_string(block_bytes) + " of the " + std::to_string(4 * 5076) + " weight bytes") !=
        std::string::npos);
  model->fit(blobs(32, 20, 4), {.epochs = 1, .batch_size = 16, .verbose = 0});
  const auto memory = model->memory_per_device();
  REQUIRE(memory.size() == 4);
  for (const auto& m : memory) {
    INFO(m.device);
    CHECK(m.weights == block_bytes);
    CHECK(m.optimizer_state == 8 + 4 + 2 * block_bytes);  // the iteration, the learning rate, Adam's two slots per block
  }
}

TEST_CASE("tensor parallel 2-D: weights set on the host reach each device's blocks, and predictions equal Default's") {
  tandem::set_random_seed(5);
  auto reference = mlp();
  reference->compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto split = mlp();
  split->compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .strategy = dist::TensorParallel2D(cpus(4), 2, 2)});
  split->set_weights(reference->get_weights());  // other values than its own initial ones
  const tandem::Dataset data = blobs(24, 20, 4);
  CHECK(max_relative_difference({split->predict(data.x())}, {reference->predict(data.x())}) <= 1e-6);
}

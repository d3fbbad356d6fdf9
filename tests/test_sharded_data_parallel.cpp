// Data parallelism with sharded weights (Mirrored's ShardLevel::Weights: ZeRO stage 3, FSDP):
// five steps equal Default's (MLP, CNN with BatchNormalization; Adam, AdamW) on 2 and 4 virtual
// devices; each device holds a k-th of the sharded weights and slots; the plan gathers each
// weight separately for forward and for backward and reduce-scatters the gradients; the files
// stay the logical ones.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <cstdio>

#include "plan_helpers.h"
#include "strategy_helpers.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
using tandem::Tensor;

namespace {
dist::StrategyPtr sharded(int k) { return dist::Mirrored(cpus(k), {.shard = dist::ShardLevel::Weights}); }

tandem::OptimizerPtr optimizer(bool adamw) {
  return adamw ? tandem::optimizers::AdamW(1e-3, {.weight_decay = 0.01}) : tandem::optimizers::Adam(1e-3);
}

// An MLP whose kernels' rows (20, 32, 16) 2 and 4 devices divide; the last bias (5) they do not.
std::unique_ptr<tandem::Model> mlp() {
  return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({20}), tl::Dense(32, "relu"), tl::Dense(16, "tanh"), tl::Dense(5)});
}

std::unique_ptr<tandem::Model> cnn() {
  return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({100}), tl::Reshape({10, 10, 1}), tl::Conv2D(8, 3, {.activation = "relu"}), tl::BatchNormalization(),
      tl::MaxPooling2D(2), tl::Flatten(), tl::Dense(5)});
}

struct Trained {
  std::unique_ptr<tandem::Model> model;
  std::vector<Tensor> weights;
};

Trained five_steps(std::unique_ptr<tandem::Model> model, int64_t features, dist::StrategyPtr strategy, bool adamw) {
  model->compile({.optimizer = optimizer(adamw), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}, .strategy = std::move(strategy)});
  model->fit(blobs(80, features, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
  CHECK(model->optimizer()->iterations() == 5);
  auto weights = model->get_weights();
  return {std::move(model), std::move(weights)};
}
}  // namespace

TEST_CASE("sharded data parallel: five steps on 2 and 4 devices end at Default's weights (MLP and CNN with BatchNormalization, Adam and AdamW)") {
  for (const bool adamw : {false, true})
    for (const bool conv : {false, true}) {
      auto make = [conv] { return conv ? cnn() : mlp(); };
      const int64_t features = conv ? 100 : 20;
      tandem::set_random_seed(5);
      const auto reference = five_steps(make(), features, dist::Default(), adamw).weights;
      for (int k : {2, 4}) {
        INFO((conv ? "CNN" : "MLP") << ", " << (adamw ? "AdamW" : "Adam") << ", " << k << " devices");
        tandem::set_random_seed(5);
        CHECK(max_relative_difference(five_steps(make(), features, sharded(k), adamw).weights, reference) <= 1e-5);
      }
    }
}

TEST_CASE("sharded data parallel: each of 4 devices holds a quarter of the weights and optimizer slots, gathers each kernel for forward and again for backward, and reduce-scatters the gradients") {
  tandem::set_random_seed(5);
  const auto whole = five_steps(mlp(), 20, dist::Mirrored(cpus(4)), false);
  tandem::set_random_seed(5);
  auto recording = std::make_shared<Recording>(sharded(4));
  const auto split = five_steps(mlp(), 20, recording, false);
  const auto full = whole.model->memory_per_device(), mine = split.model->memory_per_device();
  REQUIRE(full.size() == 4);
  REQUIRE(mine.size() == 4);
  for (std::size_t d = 0; d < 4; ++d) {
    INFO("device " << d << ": weights " << mine[d].weights << " of " << full[d].weights << ", optimizer state " << mine[d].optimizer_state
                   << " of " << full[d].optimizer_state);
    // Everything but the last bias (5 rows) is split; the step counter and learning rate stay whole.
    CHECK(double(mine[d].weights) <= 0.25 * double(full[d].weights) * 1.05);
    CHECK(double(mine[d].optimizer_state) <= 0.25 * double(full[d].optimizer_state) * 1.05);
    // The step's arena holds the gathered weights, each only from its gather to its last reader
    // in a phase, so at most one whole copy of them more than plain Mirrored's (on this small
    // batch they outweigh the activations); in all, a device holds less.
    CHECK(mine[d].arena <= full[d].arena + full[d].weights);
    CHECK(mine[d].total() < full[d].total());
  }
  const tandem::compile::Plan plan = recording->plan(0);
  for (const auto& p : plan.programs) {
    INFO(p.device);
    // Three kernels and two biases split: each gathered in forward; backward gathers the kernels
    // of the two layers whose input gradient it computes (the first layer's input needs none).
    int forward = 0, backward = 0;
    for (const auto& block : p.blocks)
      for (int id : block.nodes)
        if (p.graph.node(id).op == "all_gather") (block.phase == tandem::graph::Phase::Forward ? forward : backward) += 1;
    CHECK(forward == 5);
    CHECK(backward == 2);
    CHECK(count_ops_run(p, "reduce_scatter") >= 1);
  }
}

TEST_CASE("sharded data parallel: a model trained sharded saves the logical weights file, which loads under Default with the same predictions") {
  tandem::set_random_seed(5);
  auto trained = five_steps(mlp(), 20, sharded(2), false);
  const std::string path = "sharded_data_parallel_test.weights.h5";
  trained.model->save_weights(path);
  auto plain = mlp();
  plain->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  plain->load_weights(path);
  std::remove(path.c_str());
  std::vector<float> xs(16 * 20);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * static_cast<float>(i));
  const Tensor x = Tensor::from({16, 20}, std::span<const float>(xs));
  CHECK(max_relative_difference(plain->get_weights(), trained.weights) == 0.0);
  CHECK(max_relative_difference({plain->predict(x)}, {trained.model->predict(x)}) <= 1e-6);
}

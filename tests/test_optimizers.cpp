// Optimizers against PyTorch: a tiny MLP trained 3 full-batch steps from the same initial
// weights must end with the weights and per-step losses that PyTorch computed (tests/data/
// optimizer_refs.json, made by tests/data/make_optimizer_refs.py with Keras 3's update rules).
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tl = tandem::layers;
using nlohmann::json;

namespace {
json load_refs() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/optimizer_refs.json");
  REQUIRE(in.good());
  return json::parse(in);
}

tandem::Tensor tensor_from(const json& values, tandem::Shape shape) {
  std::vector<float> v;
  for (const auto& x : values) v.push_back(x.get<float>());
  return tandem::Tensor::from(std::move(shape), std::span<const float>(v));
}

tandem::OptimizerPtr optimizer_for(const json& c) {
  const std::string kind = c["optimizer"];
  const double lr = c["learning_rate"];
  if (kind == "sgd") return tandem::optimizers::SGD(lr, {.momentum = c["momentum"], .nesterov = c["nesterov"]});
  if (kind == "adam")
    return tandem::optimizers::Adam(lr, {.beta_1 = c["beta_1"], .beta_2 = c["beta_2"], .epsilon = c["epsilon"]});
  if (kind == "adamw")
    return tandem::optimizers::AdamW(lr, {.weight_decay = c["weight_decay"], .beta_1 = c["beta_1"], .beta_2 = c["beta_2"],
                                          .epsilon = c["epsilon"]});
  return tandem::optimizers::RMSprop(lr, {.rho = c["rho"], .momentum = c["momentum"], .epsilon = c["epsilon"]});
}
}  // namespace

TEST_CASE("optimizers: three steps match PyTorch for every optimizer") {
  const json refs = load_refs();
  std::vector<float> xs;
  for (const auto& row : refs["x"])
    for (const auto& v : row) xs.push_back(v.get<float>());
  std::vector<int32_t> ys;
  for (const auto& v : refs["y"]) ys.push_back(v.get<int32_t>());
  const tandem::Dataset data(tandem::Tensor::from({8, 4}, std::span<const float>(xs)),
                             tandem::Tensor::from({8}, std::span<const int32_t>(ys)));

  for (const json& c : refs["cases"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      auto x = tandem::Input({4});
      auto h = tl::Dense(5, "relu")(x);
      tandem::Model model(x, tl::Dense(3)(h));
      const json& init = refs["init"];
      model.set_weights({tensor_from(init["kernel1"], {4, 5}), tensor_from(init["bias1"], {5}),
                         tensor_from(init["kernel2"], {5, 3}), tensor_from(init["bias2"], {3})});
      model.compile({.optimizer = optimizer_for(c),
                     .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
      // One epoch of one full batch = one step; History's loss is the loss before that update.
      const tandem::History h3 = model.fit(data, {.epochs = 3, .batch_size = 8, .shuffle = false, .verbose = 0});
      for (int step = 0; step < 3; ++step)
        CHECK(h3.history.at("loss")[static_cast<std::size_t>(step)] == doctest::Approx(c["losses"][step].get<double>()).epsilon(1e-5));
      const auto weights = model.get_weights();
      const char* names[] = {"kernel1", "bias1", "kernel2", "bias2"};
      for (int w = 0; w < 4; ++w) {
        const json& expected = c["final"][names[w]];
        REQUIRE(static_cast<std::size_t>(weights[static_cast<std::size_t>(w)].size()) == expected.size());
        double worst = 0;
        for (std::size_t i = 0; i < expected.size(); ++i)
          worst = std::max(worst, std::abs(weights[static_cast<std::size_t>(w)].item(static_cast<int64_t>(i)) - expected[i].get<double>()));
        INFO(name << " " << names[w] << ": max |tandem - pytorch| = " << worst);
        CHECK(worst <= 1e-5);
      }
      CHECK(model.optimizer()->iterations() == 3);
    }
  }
}

TEST_CASE("optimizers: Keras 3 defaults") {
  CHECK(tandem::optimizers::SGD()->learning_rate() == doctest::Approx(0.01));
  CHECK(tandem::optimizers::Adam()->learning_rate() == doctest::Approx(0.001));
  CHECK(tandem::optimizers::AdamW()->learning_rate() == doctest::Approx(0.001));
  CHECK(tandem::optimizers::RMSprop()->learning_rate() == doctest::Approx(0.001));
  CHECK(tandem::optimizers::get("adam")->name() == "adam");
  CHECK_THROWS_WITH_AS(tandem::optimizers::get("adamax"), doctest::Contains("unknown optimizer 'adamax'"), tandem::ValueError);
}

TEST_CASE("optimizers: clipnorm, global_clipnorm and clipvalue match PyTorch's clip_grad_norm_ and clip_grad_value_") {
  // tests/data/clipping_refs.json, made by tests/data/make_clipping_refs.py: one SGD step at rate
  // 1 from the same weights, the gradients clipped first.
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/clipping_refs.json");
  REQUIRE(in.good());
  const json refs = json::parse(in);
  std::vector<int32_t> ys;
  for (const auto& v : refs["y"]) ys.push_back(v.get<int32_t>());
  const tandem::Dataset data(tensor_from(refs["x"], {8, 6}), tandem::Tensor::from({8}, std::span<const int32_t>(ys)));
  for (const char* name : {"none", "clipnorm", "global_clipnorm", "clipvalue"}) {
    INFO("case " << name);
    tandem::GradientClipping clipping;
    if (std::string(name) == "clipnorm") clipping.clipnorm = refs["limits"]["clipnorm"].get<double>();
    if (std::string(name) == "global_clipnorm") clipping.global_clipnorm = refs["limits"]["global_clipnorm"].get<double>();
    if (std::string(name) == "clipvalue") clipping.clipvalue = refs["limits"]["clipvalue"].get<double>();
    auto x = tandem::Input({6});
    tandem::Model model(x, tl::Dense(3)(tl::Dense(4, "tanh")(x)));
    std::vector<tandem::Tensor> start;
    for (std::size_t w = 0; w < 4; ++w) start.push_back(tensor_from(refs["start"][w], tandem::Shape(refs["shapes"][w].get<std::vector<int64_t>>())));
    model.set_weights(start);
    model.compile({.optimizer = tandem::optimizers::SGD(1.0, {.clipping = clipping}),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    model.fit(data, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
    const auto weights = model.get_weights();
    double worst = 0;
    for (std::size_t w = 0; w < 4; ++w)
      for (std::size_t i = 0; i < refs["cases"][name][w].size(); ++i)
        worst = std::max(worst, std::abs(weights[w].item(static_cast<int64_t>(i)) - refs["cases"][name][w][i].get<double>()));
    INFO("max |tandem - pytorch| = " << worst);
    CHECK(worst <= 1e-5);
  }
  CHECK_THROWS_WITH_AS(tandem::optimizers::SGD(0.1, {.clipping = {.clipnorm = 1.0, .clipvalue = 0.5}}),
                       "optimizer: only one of clipnorm, global_clipnorm and clipvalue can be set", tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::optimizers::Adam(0.1, {.clipping = {.global_clipnorm = 0.0}}), doctest::Contains("global_clipnorm must be > 0"),
                       tandem::ValueError);
}

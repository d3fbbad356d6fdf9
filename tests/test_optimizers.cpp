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

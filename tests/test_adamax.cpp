// Adamax against Keras 3: a tiny MLP trained 3 full-batch steps from Keras's initial weights ends
// with Keras's losses, weights and optimizer variables (tests/data/training_refs.json, made by
// tests/data/make_training_refs.py); Keras's own .weights.h5 of that state loads and the next step
// equals Keras's; Tandem's saved state loads back.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scratch_dir.h"

namespace tl = tandem::layers;
using nlohmann::json;
using tandem::Tensor;

namespace {
const ScratchRoot scratch("test_adamax");

const json& refs() {
  static const json r = [] {
    std::ifstream in(std::string(TANDEM_TEST_DATA) + "/training_refs.json");
    REQUIRE(in.good());
    return json::parse(in)["adamax"];
  }();
  return r;
}

Tensor floats(const json& values, tandem::Shape shape) {
  std::vector<float> v;
  for (const auto& x : values) v.push_back(x.get<float>());
  return Tensor::from(std::move(shape), std::span<const float>(v));
}

const tandem::Shape kShapes[] = {{4, 5}, {5}, {5, 3}, {3}};

// Keras's MLP (4 -> 5 relu -> 3) with its initial weights, compiled with Adamax(0.01).
std::unique_ptr<tandem::Model> mlp() {
  auto x = tandem::Input({4});
  auto h = tl::Dense(5, "relu", {.name = "dense"})(x);
  auto model = std::make_unique<tandem::Model>(x, tl::Dense(3, "", {.name = "dense_1"})(h));
  std::vector<Tensor> init;
  for (std::size_t i = 0; i < 4; ++i) init.push_back(floats(refs()["init"][i], kShapes[i]));
  model->set_weights(init);
  model->compile({.optimizer = tandem::optimizers::Adamax(0.01), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  return model;
}

tandem::Dataset data() {
  std::vector<int32_t> ys;
  for (const auto& v : refs()["y"]) ys.push_back(v.get<int32_t>());
  return {floats(refs()["x"], {8, 4}), Tensor::from({8}, std::span<const int32_t>(ys))};
}

double worst_difference(const Tensor& t, const json& expected) {
  REQUIRE(static_cast<std::size_t>(t.size()) == expected.size());
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(t.item(static_cast<int64_t>(i)) - expected[i].get<double>()));
  return worst;
}

void check_weights(const tandem::Model& model, const json& expected) {
  const std::vector<Tensor> w = model.get_weights();
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("weight " << i);
    CHECK(worst_difference(w[i], expected[i]) <= 1e-5);
  }
}

// The optimizer's variables in Keras's order (iteration, learning_rate, then momentum and norm per
// weight) against Keras's.
void check_optimizer_state(const tandem::Model& model) {
  const std::vector<tandem::VariablePtr> vars = model.optimizer()->keras_variables(model.trainable_weights());
  const json& keras = refs()["optimizer_variables"];
  REQUIRE(vars.size() == keras.size());
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const std::string name = keras[i]["name"];
    INFO("optimizer variable " << i << " (Keras's " << name << ", Tandem's " << vars[i]->path() << ")");
    const std::string suffix = name.substr(name.rfind('_') + 1);
    if (i >= 2) CHECK(vars[i]->path().ends_with(suffix));  // momentum / norm, as Keras names them
    CHECK(worst_difference(vars[i]->value(), keras[i]["values"]) <= 1e-5);
  }
}
}  // namespace

TEST_CASE("Adamax: three steps match Keras's losses, weights and optimizer variables") {
  auto model = mlp();
  const tandem::History h = model->fit(data(), {.epochs = 3, .batch_size = 8, .shuffle = false, .verbose = 0});
  for (std::size_t step = 0; step < 3; ++step)
    CHECK(h.history.at("loss")[step] == doctest::Approx(refs()["losses"][step].get<double>()).epsilon(1e-5));
  check_weights(*model, refs()["final"]);
  check_optimizer_state(*model);
  CHECK(model->optimizer()->iterations() == 3);
}

TEST_CASE("Adamax: Keras's .weights.h5 loads with its optimizer state, and the next step equals Keras's") {
  auto model = mlp();
  // Build the optimizer's slots: a weights file holds them once the model has trained.
  model->fit(data(), {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
  model->load_weights(std::string(TANDEM_TEST_DATA) + "/adamax_mlp.weights.h5");
  check_weights(*model, refs()["final"]);
  check_optimizer_state(*model);
  const tandem::History h = model->fit(data(), {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
  CHECK(h.history.at("loss")[0] == doctest::Approx(refs()["fourth_loss"].get<double>()).epsilon(1e-5));
  check_weights(*model, refs()["after_fourth"]);
}

TEST_CASE("Adamax: a saved model keeps its optimizer config and state") {
  auto model = mlp();
  model->fit(data(), {.epochs = 3, .batch_size = 8, .shuffle = false, .verbose = 0});
  for (const char* file : {"adamax.keras", "adamax.h5"}) {
    INFO(file);
    const std::string path = (scratch.fresh(file) / file).string();
    model->save(path);
    const std::unique_ptr<tandem::Model> loaded = tandem::load_model(path);
    CHECK(loaded->optimizer()->name() == "adamax");
    CHECK(loaded->optimizer()->config_json() == model->optimizer()->config_json());
    check_optimizer_state(*loaded);
    const tandem::History h = loaded->fit(data(), {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
    CHECK(h.history.at("loss")[0] == doctest::Approx(refs()["fourth_loss"].get<double>()).epsilon(1e-5));
    check_weights(*loaded, refs()["after_fourth"]);
  }
  // Keras's get_config values for every key Tandem writes (the learning rate as the float32 Keras
  // stores); Adamax's own keys among them.
  const json config = json::parse(tandem::optimizers::Adamax(0.01)->config_json());
  const json& keras = refs()["config"];
  CHECK(config["learning_rate"].get<double>() == doctest::Approx(keras["learning_rate"].get<double>()).epsilon(1e-7));
  for (const char* key : {"beta_1", "beta_2", "epsilon"}) CHECK(config.contains(key));
  for (const auto& [key, value] : config.items())
    if (key != "learning_rate") {
      INFO(key);
      CHECK(value == keras.at(key));
    }
  CHECK(tandem::optimizers::get("adamax")->name() == "adamax");
  CHECK_THROWS_AS(tandem::optimizers::Adamax(0.01, {.beta_1 = 1.0}), tandem::ValueError);
}

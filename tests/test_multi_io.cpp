// Models with several inputs and outputs: a two-input, two-output functional model with one loss
// per output and loss weights must train as Keras 3 trains it from the same weights and data
// (tests/data/multi_io/reference.json, made by make_reference.py there with pip Keras), save and
// load whole, and give the same result under Mirrored.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/scratch_dir.h"

namespace tl = tandem::layers;
using nlohmann::json;
using tandem::Shape;
using tandem::Symbol;
using tandem::Tensor;

namespace {

const ScratchRoot scratch("test_multi_io");

json reference() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/multi_io/reference.json");
  REQUIRE(in.good());
  return json::parse(in);
}

template <class T>
Tensor tensor(const json& values, Shape shape) {
  std::vector<T> v;
  for (const auto& x : values) v.push_back(x.get<T>());
  return Tensor::from(std::move(shape), std::span<const T>(v));
}

double relative_difference(const Tensor& a, const json& b) {
  const auto av = a.values<float>();
  REQUIRE(av.size() == b.size());
  double diff = 0, scale = 1e-12;
  for (std::size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(double(av[i]) - b[i].get<double>()));
    scale = std::max(scale, std::abs(b[i].get<double>()));
  }
  return diff / scale;
}

// The reference's model, with its layer names, weights and compile settings.
std::unique_ptr<tandem::Model> build(const json& ref, tandem::distribute::StrategyPtr strategy = nullptr) {
  const Symbol img = tandem::Input({4, 4, 1}, tandem::DType::F32, "img");
  const Symbol tab = tandem::Input({5}, tandem::DType::F32, "tab");
  const Symbol a = tl::Dense(6, "relu", {.name = "img_dense"})(tl::Flatten("flat")(img));
  const Symbol b = tl::Dense(6, "tanh", {.name = "tab_dense"})(tab);
  const Symbol h = tl::Dense(8, "relu", {.name = "trunk"})(tl::Concatenate({.name = "join"})({a, b}));
  const Symbol cls = tl::Dense(3, "softmax", {.name = "cls"})(h);
  const Symbol reg = tl::Dense(1, "", {.name = "reg"})(h);
  auto model = std::make_unique<tandem::Model>(std::vector<Symbol>{img, tab}, std::vector<Symbol>{cls, reg});
  // Keras's weight order is the layers' order here: img_dense, tab_dense, trunk, cls, reg.
  const Shape shapes[] = {{16, 6}, {6}, {5, 6}, {6}, {12, 8}, {8}, {8, 3}, {3}, {8, 1}, {1}};
  std::vector<Tensor> init;
  for (std::size_t i = 0; i < 10; ++i) init.push_back(tensor<float>(ref["initial"][i], shapes[i]));
  model->set_weights(init);
  model->compile({.optimizer = tandem::optimizers::SGD(0.1, {.momentum = 0.9}),
                  .losses = {"sparse_categorical_crossentropy", "mse"},
                  .loss_weights = {1.0, 0.5},
                  .output_metrics = {{"accuracy"}, {"mae"}},
                  .strategy = strategy});
  return model;
}

struct Data {
  std::vector<Tensor> x, y;
};
Data data(const json& ref) {
  return {{tensor<float>(ref["inputs"]["img"], {24, 4, 4, 1}), tensor<float>(ref["inputs"]["tab"], {24, 5})},
          {tensor<int32_t>(ref["targets"]["cls"], {24}), tensor<float>(ref["targets"]["reg"], {24, 1})}};
}

}  // namespace

TEST_CASE("a two-input, two-output model with per-output losses and loss weights trains as Keras 3 does") {
  const json ref = reference();
  const auto model = build(ref);
  const Data d = data(ref);
  const tandem::History h = model->fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .shuffle = false, .verbose = 0});
  for (const auto& [key, values] : ref["history"].items()) {
    INFO(key);
    REQUIRE(h.history.count(key));
    for (std::size_t e = 0; e < values.size(); ++e) CHECK(h.history.at(key)[e] == doctest::Approx(values[e].get<double>()).epsilon(1e-5));
  }
  CHECK(h.history.size() == ref["history"].size());
  const std::vector<Tensor> w = model->get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO(ref["weight_names"][i].get<std::string>());
    CHECK(relative_difference(w[i], ref["final"][i]) <= 1e-5);
  }
  const tandem::Logs e = model->evaluate(d.x, d.y, {.batch_size = 8, .verbose = 0});
  for (const auto& [key, value] : ref["evaluate"].items()) {
    INFO(key);
    CHECK(e.at(key) == doctest::Approx(value.get<double>()).epsilon(1e-5));
  }
  const std::vector<Tensor> p = model->predict(d.x, {.batch_size = 8});
  REQUIRE(p.size() == 2);
  CHECK(p[0].shape() == Shape{24, 3});
  CHECK(p[1].shape() == Shape{24, 1});
  CHECK(relative_difference(p[0], ref["predictions"]["cls"]) <= 1e-5);
  CHECK(relative_difference(p[1], ref["predictions"]["reg"]) <= 1e-5);
}

TEST_CASE("a two-input, two-output model saves and loads whole, compile settings included") {
  const json ref = reference();
  const auto model = build(ref);
  const Data d = data(ref);
  model->fit(d.x, d.y, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
  const auto dir = scratch.fresh("save");
  for (const char* file : {"model.keras", "model.h5"}) {
    INFO(file);
    const std::string path = (dir / file).string();
    model->save(path);
    const auto loaded = tandem::load_model(path);
    const auto p0 = model->predict(d.x), p1 = loaded->predict(d.x);
    for (std::size_t i = 0; i < 2; ++i)
      CHECK(std::equal(p0[i].values<float>().begin(), p0[i].values<float>().end(), p1[i].values<float>().begin()));
    const tandem::Logs e0 = model->evaluate(d.x, d.y, {.verbose = 0}), e1 = loaded->evaluate(d.x, d.y, {.verbose = 0});
    CHECK(e0 == e1);  // the same losses, weights and metrics came back
    // Training continues from the saved optimizer state to the same weights.
    const auto again = tandem::load_model(path);
    again->fit(d.x, d.y, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
    if (std::string(file) == "model.h5") {
      model->fit(d.x, d.y, {.epochs = 1, .batch_size = 8, .shuffle = false, .verbose = 0});
      const auto w0 = model->get_weights(), w1 = again->get_weights();
      for (std::size_t i = 0; i < w0.size(); ++i)
        CHECK(std::equal(w0[i].values<float>().begin(), w0[i].values<float>().end(), w1[i].values<float>().begin()));
    }
  }
}

TEST_CASE("a two-input, two-output model under Mirrored, Pipeline and ModelSplit on 2 devices ends as on one") {
  const json ref = reference();
  const Data d = data(ref);
  namespace dist = tandem::distribute;
  const std::pair<const char*, dist::StrategyPtr> strategies[] = {
      {"Mirrored", dist::Mirrored({"cpu:0", "cpu:1"})},
      {"Pipeline", dist::Pipeline({"cpu:0", "cpu:1"}, {.micro_batches = 2})},
      {"ModelSplit", dist::ModelSplit({"cpu:0", "cpu:1"})}};
  for (const auto& [what, strategy] : strategies) {
    INFO(what);
    const auto one = build(ref);
    const auto two = build(ref, strategy);
    const auto h1 = one->fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .shuffle = false, .verbose = 0});
    const auto h2 = two->fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .shuffle = false, .verbose = 0});
    for (const auto& [key, values] : h1.history)
      for (std::size_t e = 0; e < values.size(); ++e) CHECK(h2.history.at(key)[e] == doctest::Approx(values[e]).epsilon(1e-5));
    const auto w1 = one->get_weights(), w2 = two->get_weights();
    for (std::size_t i = 0; i < w1.size(); ++i)
      for (std::size_t j = 0; j < std::size_t(w1[i].size()); ++j)
        CHECK(w2[i].values<float>()[j] == doctest::Approx(w1[i].values<float>()[j]).epsilon(1e-5));
  }
}

TEST_CASE("several inputs and outputs: clear errors") {
  const json ref = reference();
  const auto model = build(ref);
  const Data d = data(ref);
  CHECK_THROWS_WITH_AS(model->fit({d.x[0]}, d.y, {.verbose = 0}), doctest::Contains("expected 2 x and 2 y tensors (one per input and output), got 1 and 2"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(model->predict(d.x[0]), doctest::Contains("predict(x) is for one input and one output"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(model->fit({d.x[1], d.x[0]}, d.y, {.verbose = 0}),
                       doctest::Contains("expected input of shape (None, 4, 4, 1), got x[0] (input \"img\") of shape (24, 5)"), tandem::ShapeError);
  CHECK_THROWS_WITH_AS(model->compile({.optimizer = "sgd", .losses = {"mse"}}), doctest::Contains("losses has 1 entries, the model has 2 outputs"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(model->compile({.optimizer = "sgd", .loss = "mse", .loss_weights = {1.0}}),
                       doctest::Contains("loss_weights has 1 entries, the model has 2 outputs"), tandem::ValueError);
  const Symbol a = tandem::Input({2}, tandem::DType::F32, "a"), b = tandem::Input({2}, tandem::DType::F32, "b");
  CHECK_THROWS_WITH_AS(tandem::Model({a, b}, {tl::Dense(1)(a)}), doctest::Contains("no output depends on input \"b\""), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::Dataset({d.x[0], d.x[1].rows(0, 3)}, d.y), doctest::Contains("x[1] has 3"), tandem::ValueError);
}

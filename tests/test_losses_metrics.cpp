// Huber, LogCosh, Poisson, KLDivergence and label smoothing; F1Score, R2Score and MeanIoU; against
// Keras 3 on fixed data (tests/data/training_refs.json, made by tests/data/make_training_refs.py),
// with float64 finite differences of the new ops, and the configs as Keras writes them.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "gradient_check.h"
#include "metrics/stateful.h"
#include "model/model_config.h"

namespace tl = tandem::layers;
using gradcheck::GradCheck;
using nlohmann::json;
using tandem::Shape;
using tandem::Tensor;

namespace {

const json& refs() {
  static const json r = [] {
    std::ifstream in(std::string(TANDEM_TEST_DATA) + "/training_refs.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return r;
}

std::vector<double> doubles(const json& values) {
  std::vector<double> v;
  for (const auto& x : values) v.push_back(x.get<double>());
  return v;
}
Tensor floats(const json& values, Shape shape) {
  std::vector<float> v;
  for (const auto& x : values) v.push_back(x.get<float>());
  return Tensor::from(std::move(shape), std::span<const float>(v));
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", Keras " << want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tolerance * std::max(1.0, std::abs(want[i])));
  }
}

tandem::LossPtr loss_for(const std::string& name) {
  namespace L = tandem::losses;
  if (name == "huber") return L::Huber();
  if (name == "huber_half") return L::Huber(0.5);
  if (name == "log_cosh") return L::LogCosh();
  if (name == "poisson") return L::Poisson();
  if (name == "kl_divergence") return L::KLDivergence();
  if (name == "cce_smooth") return L::CategoricalCrossentropy({.label_smoothing = 0.2});
  if (name == "cce_smooth_logits") return L::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1});
  if (name == "bce_smooth") return L::BinaryCrossentropy({.label_smoothing = 0.2});
  if (name == "bce_smooth_logits") return L::BinaryCrossentropy({.from_logits = true, .label_smoothing = 0.3});
  FAIL("training_refs.json has a loss case \"" << name << "\" the test does not know");
  return nullptr;
}

// A model whose predictions are its inputs: fit and evaluate score the given values.
std::unique_ptr<tandem::Model> identity_model(int64_t width) {
  const auto x = tandem::Input({width});
  return std::make_unique<tandem::Model>(x, tl::Activation("linear")(x));
}

}  // namespace

TEST_CASE("losses: per-sample values equal Keras's, and their float64 gradients finite differences") {
  const json& r = refs()["losses"];
  const Shape shape{r["rows"].get<int64_t>(), r["columns"].get<int64_t>()};
  for (const json& c : r["cases"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      const tandem::LossPtr loss = loss_for(name);
      GradCheck check;
      const auto pred = check.given(shape, doubles(c["y_pred"]));
      // Cross-entropy has no gradient for its targets; the elementwise losses are checked for both.
      const bool categorical = name.starts_with("cce");
      const auto target = categorical ? check.fixed(shape, doubles(c["y_true"])) : check.given(shape, doubles(c["y_true"]));
      const gradcheck::Outcome o = check.check(loss->per_sample(check.g, pred, target), name);
      check_close(o.y, doubles(c["per_sample"]));
    }
  }
}

TEST_CASE("losses: the loss of a batch, and with row weights, equals Keras's (sum_over_batch_size)") {
  const json& r = refs()["losses"];
  const Shape shape{r["rows"].get<int64_t>(), r["columns"].get<int64_t>()};
  const Tensor weights = floats(r["sample_weight"], {shape[0]});
  for (const json& c : r["cases"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      auto model = identity_model(shape[1]);
      model->compile({.optimizer = tandem::optimizers::SGD(0.0), .loss = loss_for(name)});
      const Tensor x = floats(c["y_pred"], shape), y = floats(c["y_true"], shape);
      CHECK(model->evaluate(x, y, {.batch_size = 4, .verbose = 0}).at("loss") == doctest::Approx(c["loss"].get<double>()).epsilon(1e-5));
      const tandem::History h = model->fit(x, y, {.batch_size = 4, .shuffle = false, .sample_weight = weights, .verbose = 0});
      CHECK(h.history.at("loss")[0] == doctest::Approx(c["weighted_loss"].get<double>()).epsilon(1e-5));
    }
  }
}

TEST_CASE("losses: configs are Keras's, and compile settings rebuild each loss") {
  for (const json& c : refs()["losses"]["cases"]) {
    const std::string name = c["name"];
    INFO(name);
    const tandem::LossPtr loss = loss_for(name);
    json config = json::parse(loss->config_json());
    // Keras's Huber leaves delta out of its config; Tandem writes it, which Keras's from_config takes.
    if (c["class_name"] == "Huber") {
      CHECK(config["delta"].get<double>() == (name == "huber" ? 1.0 : 0.5));
      config.erase("delta");
    }
    CHECK(config == c["config"]);
    tandem::detail::CompileSettings s;
    s.optimizer = tandem::optimizers::Adam();
    s.losses = {loss};
    for (auto form : {tandem::detail::ConfigForm::archive, tandem::detail::ConfigForm::hdf5}) {
      const tandem::detail::Json saved = tandem::detail::compile_config(s, form);
      const tandem::detail::CompileSettings back = tandem::detail::compile_from_config(saved);
      REQUIRE(back.losses.size() == 1);
      CHECK(back.losses[0]->name() == loss->name());
      CHECK(back.losses[0]->config_json() == loss->config_json());
    }
  }
  // Keras's Huber config (no delta) means delta 1.
  const tandem::detail::Json keras_huber = {
      {"optimizer", "adam"}, {"loss", {{"class_name", "Huber"}, {"config", {{"name", "huber_loss"}, {"reduction", "sum_over_batch_size"}}}}}};
  CHECK(json::parse(tandem::detail::compile_from_config(keras_huber).losses[0]->config_json())["delta"] == 1.0);
  for (const char* n : {"huber", "log_cosh", "poisson", "kl_divergence", "kld", "KLD"}) CHECK(tandem::losses::get(n) != nullptr);
  CHECK_THROWS_AS(tandem::losses::SparseCategoricalCrossentropy({.label_smoothing = 0.1}), tandem::ValueError);
  CHECK_THROWS_AS(tandem::losses::CategoricalCrossentropy({.label_smoothing = 1.5}), tandem::ValueError);
  CHECK_THROWS_AS(tandem::losses::Huber(-1), tandem::ValueError);
}

TEST_CASE("gradient: huber, log_cosh, poisson and kl_divergence ops") {
  namespace ops = tandem::ops;
  const Shape s{3, 4};
  SUBCASE("huber") {
    for (double delta : {1.0, 0.3}) {
      // |p − t| away from delta (and from 0), beyond it and within it; t = 0.
      GradCheck beyond;
      const auto large = beyond.signed_away(s, delta * 1.2, 2.0), zero = beyond.fixed(s, 0.0, 0.0);
      beyond.check(ops::huber(beyond.g, large, zero, delta), "huber, errors beyond delta");
      GradCheck c;
      const auto small = c.signed_away(s, 0.02, delta * 0.8), target = c.fixed(s, 0.0, 0.0);
      const gradcheck::Outcome o = c.check(ops::huber(c.g, small, target, delta), "huber, errors within delta");
      const auto& x = c.values(small);
      for (int64_t r = 0; r < 3; ++r) {  // closed form: mean of ½e²
        double m = 0;
        for (int64_t j = 0; j < 4; ++j) m += 0.5 * x[r * 4 + j] * x[r * 4 + j] / 4;
        CHECK(o.y[r] == doctest::Approx(m).epsilon(1e-12));
      }
    }
  }
  SUBCASE("log_cosh") {
    GradCheck c;
    const auto pred = c.uniform(s, -3, 3), target = c.uniform(s, -3, 3);
    const gradcheck::Outcome o = c.check(ops::log_cosh(c.g, pred, target), "log_cosh");
    const auto &p = c.values(pred), &t = c.values(target);
    for (int64_t r = 0; r < 3; ++r) {
      double m = 0;
      for (int64_t j = 0; j < 4; ++j) m += std::log(std::cosh(p[r * 4 + j] - t[r * 4 + j])) / 4;
      CHECK(o.y[r] == doctest::Approx(m).epsilon(1e-12));
    }
  }
  SUBCASE("poisson") {
    GradCheck c;
    const auto pred = c.uniform(s, 0.1, 3), target = c.uniform(s, 0, 4);
    c.check(ops::poisson(c.g, pred, target), "poisson");
  }
  SUBCASE("kl_divergence") {
    GradCheck c;
    // Inside the clip range [1e-7, 1]: probabilities of both.
    const auto pred = c.uniform(s, 0.05, 0.95), target = c.uniform(s, 0.05, 0.95);
    const gradcheck::Outcome o = c.check(ops::kl_divergence(c.g, pred, target), "kl_divergence");
    const auto &p = c.values(pred), &t = c.values(target);
    for (int64_t r = 0; r < 3; ++r) {  // a sum over the row, not a mean
      double sum = 0;
      for (int64_t j = 0; j < 4; ++j) sum += t[r * 4 + j] * std::log(t[r * 4 + j] / p[r * 4 + j]);
      CHECK(o.y[r] == doctest::Approx(sum).epsilon(1e-12));
    }
  }
}

// The metric's counts for each batch (float64, through the graph the step runs), summed, then its
// result: what fit computes at the end of an epoch.
std::vector<double> metric_over_batches(const tandem::metrics::StatefulMetric& m, const json& c, bool weighted) {
  const std::vector<int64_t> ts = c["true_shape"], ps = c["pred_shape"];
  std::vector<double> sums;
  int64_t rows = 0;
  for (std::size_t b = 0; b < 2; ++b) {
    GradCheck check;
    const auto target = check.fixed(Shape(ts), doubles(c["y_true"][b]));
    const auto pred = check.fixed(Shape(ps), doubles(c["y_pred"][b]));
    const tandem::graph::Value w = weighted ? check.fixed(Shape{ps[0]}, doubles(c["sample_weight"][b])) : tandem::graph::Value{};
    const gradcheck::Outcome o = check.check(m.counts(check.g, pred, target, w), c["name"].get<std::string>());
    if (sums.empty()) sums.assign(o.y.size(), 0.0);
    for (std::size_t i = 0; i < o.y.size(); ++i) sums[i] += o.y[i];
    rows += ps[0];
  }
  return m.result(sums, rows);
}

std::string make_metric(const json& c) {
  // Keras's configs name MeanIoU "mean_io_u_<n>"; the case's own name keeps the variants apart.
  json object{{"class_name", c["class_name"]}, {"config", c["config"]}};
  object["config"]["name"] = c["name"];
  return tandem::metrics::stateful_from_config(tandem::detail::Json::parse(object.dump()));
}

TEST_CASE("metrics: F1Score, R2Score and MeanIoU over two batches equal Keras's, without and with sample weights") {
  for (const json& c : refs()["metrics"]["cases"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      const tandem::metrics::StatefulPtr m = tandem::metrics::find_stateful(make_metric(c));
      REQUIRE(m);
      check_close(metric_over_batches(*m, c, false), doubles(c["result"]));
      check_close(metric_over_batches(*m, c, true), doubles(c["weighted_result"]));
      json config = json::parse(m->config().dump());
      config["name"] = c["config"]["name"];
      CHECK(config == c["config"]);
    }
  }
}

TEST_CASE("metrics: in evaluate, over two batches and under Mirrored, the epoch's value equals Keras's") {
  for (const json& c : refs()["metrics"]["cases"]) {
    const std::string name = c["name"];
    const std::vector<int64_t> ts = c["true_shape"], ps = c["pred_shape"];
    if (ps.size() != 2) continue;
    SUBCASE(name.c_str()) {
      const std::string metric = make_metric(c);
      std::vector<float> xf, yf;  // both batches, one after the other
      for (std::size_t b = 0; b < 2; ++b) {
        for (const auto& v : c["y_pred"][b]) xf.push_back(v.get<float>());
        for (const auto& v : c["y_true"][b]) yf.push_back(v.get<float>());
      }
      std::vector<int64_t> ys = ts;
      ys[0] *= 2;
      const Tensor xs = Tensor::from({2 * ps[0], ps[1]}, std::span<const float>(xf)), targets = Tensor::from(Shape(ys), std::span<const float>(yf));
      const std::vector<double> keras = c["result"];  // one value, or one per class / output
      for (bool mirrored : {false, true}) {
        INFO((mirrored ? "Mirrored on 2 devices" : "Default"));
        auto model = identity_model(ps[1]);
        model->compile({.optimizer = "sgd",
                        .loss = ts.size() == 1 ? "sparse_categorical_crossentropy" : "mse",  // class ids or same-shaped targets
                        .metrics = {metric},
                        .strategy = mirrored ? tandem::distribute::Mirrored({"cpu:0", "cpu:1"}) : nullptr});
        // Default: two batches of 5; Mirrored: one batch of 10, 5 rows per device.
        const tandem::Logs logs = model->evaluate(xs, targets, {.batch_size = mirrored ? 2 * ps[0] : ps[0], .verbose = 0});
        if (keras.size() == 1) {
          CHECK(logs.at(metric) == doctest::Approx(keras[0]).epsilon(1e-5));
          continue;
        }
        // Per class as `name[i]`, and their mean (the number Keras's progress bar shows) as `name`.
        double mean = 0;
        for (std::size_t i = 0; i < keras.size(); ++i) {
          CHECK(logs.at(metric + "[" + std::to_string(i) + "]") == doctest::Approx(keras[i]).epsilon(1e-5));
          mean += keras[i] / double(keras.size());
        }
        CHECK(logs.at(metric) == doctest::Approx(mean).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("metrics: saved in compile_config as Keras's metric objects and rebuilt from them") {
  const std::string f1 = tandem::metrics::F1Score({.average = "macro", .threshold = 0.4, .name = "f1_macro_04"});
  const std::string iou = tandem::metrics::MeanIoU(3, {.sparse_y_pred = false});
  const std::string r2 = tandem::metrics::R2Score({.num_regressors = 1, .name = "r2_adjusted"});
  tandem::detail::CompileSettings s;
  s.optimizer = tandem::optimizers::Adam();
  s.losses = {tandem::losses::MeanSquaredError()};
  s.metrics = {{"mae", f1, iou, r2}};
  const tandem::detail::Json saved = tandem::detail::compile_config(s, tandem::detail::ConfigForm::archive);
  const json metrics = json::parse(saved["metrics"].dump());
  CHECK(metrics[0] == "mae");
  CHECK(metrics[1] == json::parse(R"({"module": "keras.metrics", "class_name": "F1Score", "config": {"name": "f1_macro_04",
        "dtype": "float32", "average": "macro", "threshold": 0.4}, "registered_name": null})"));
  CHECK(metrics[2]["config"] == json::parse(R"({"num_classes": 3, "name": "mean_io_u", "dtype": "int32", "ignore_class": null,
        "sparse_y_true": true, "sparse_y_pred": false, "axis": -1})"));
  CHECK(metrics[3]["config"]["num_regressors"] == 1);
  const tandem::detail::CompileSettings back = tandem::detail::compile_from_config(saved);
  CHECK(back.metrics == s.metrics);
  // The same name with other arguments is refused; the same arguments again are the same metric.
  CHECK(tandem::metrics::F1Score({.average = "macro", .threshold = 0.4, .name = "f1_macro_04"}) == f1);
  CHECK_THROWS_AS(tandem::metrics::F1Score({.average = "micro", .name = "f1_macro_04"}), tandem::ValueError);
  CHECK_THROWS_AS(tandem::metrics::F1Score({.average = "samples"}), tandem::ValueError);
  CHECK_THROWS_AS(tandem::metrics::MeanIoU(0), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::metrics::R2Score({.name = "mae"}), doctest::Contains("built-in metric's name"), tandem::ValueError);
}

TEST_CASE("metrics: a per-class F1Score trains and reports each class in History, and its mean in the progress bar as Keras does") {
  // Three rows, one per class, predicted as classes 0, 2, 2: class 0 F1 = 1, class 1 = 0 (never
  // predicted), class 2 = 2·(1/2·1)/(1/2 + 1) = 2/3 — with Keras's 1e-7 terms, within 1e-6.
  auto model = identity_model(3);
  model->compile({.optimizer = tandem::optimizers::SGD(0.0), .loss = "mse", .metrics = {tandem::metrics::F1Score({.name = "f1_per_class"})}});
  const Tensor x = Tensor::from({3, 3}, std::vector<float>{0.9f, 0.05f, 0.05f, 0.1f, 0.3f, 0.6f, 0.0f, 0.2f, 0.8f});
  const Tensor y = Tensor::from({3, 3}, std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  std::ostringstream bar;
  const tandem::History h = model->fit(x, y, {.epochs = 1, .batch_size = 3, .verbose = 2, .callbacks = {std::make_shared<tandem::ProgbarLogger>(bar)}});
  CHECK(h.history.at("f1_per_class[0]")[0] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(h.history.at("f1_per_class[1]")[0] == doctest::Approx(0.0).epsilon(1e-6));
  CHECK(h.history.at("f1_per_class[2]")[0] == doctest::Approx(2.0 / 3).epsilon(1e-6));
  CHECK(h.history.at("f1_per_class")[0] == doctest::Approx(5.0 / 9).epsilon(1e-6));
  CHECK(bar.str().find("f1_per_class: 0.5556") != std::string::npos);
  CHECK(bar.str().find("f1_per_class[") == std::string::npos);
}

// Metrics that are not plain means — Precision, Recall, AUC (counts per threshold, combined at the
// end of an epoch) and top-k accuracy — against Keras 3 updating its metrics batch by batch on the
// same values (tests/data/metrics/reference.json, made by make_reference.py there), under Default
// and Mirrored; and metrics registered as functions of symbols.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace tl = tandem::layers;
using nlohmann::json;
using tandem::Tensor;

namespace {

json reference() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/metrics/reference.json");
  REQUIRE(in.good());
  return json::parse(in);
}

template <class T>
Tensor tensor(const json& values, tandem::Shape shape) {
  std::vector<T> v;
  for (const auto& x : values) v.push_back(x.get<T>());
  return Tensor::from(std::move(shape), std::span<const T>(v));
}

// A model whose predictions are its inputs, so evaluate scores the given values.
tandem::Logs score(int64_t width, const std::string& loss, const std::vector<std::string>& metrics, const Tensor& pred, const Tensor& y,
                   tandem::distribute::StrategyPtr strategy = nullptr) {
  const auto x = tandem::Input({width});
  tandem::Model model(x, tl::Activation("linear")(x));
  model.compile({.optimizer = "sgd", .loss = loss, .metrics = metrics, .strategy = strategy});
  return model.evaluate(pred, y, {.batch_size = 8, .verbose = 0});
}

}  // namespace

TEST_CASE("precision, recall and AUC over batches equal Keras's") {
  const json ref = reference();
  const Tensor prob = tensor<float>(ref["prob"], {40, 1}), label = tensor<float>(ref["label"], {40, 1});
  for (const bool mirrored : {false, true}) {
    INFO((mirrored ? "Mirrored on 2 devices" : "Default"));
    const auto logs = score(1, "binary_crossentropy", {"precision", "recall", "auc"}, prob, label,
                            mirrored ? tandem::distribute::Mirrored({"cpu:0", "cpu:1"}) : nullptr);
    for (const char* m : {"precision", "recall", "auc"}) {
      INFO(m);
      CHECK(logs.at(m) == doctest::Approx(ref[m].get<double>()).epsilon(1e-6));
    }
  }
}

TEST_CASE("top-k accuracy (k = 5) with class ids and with one-hot targets equals Keras's") {
  const json ref = reference();
  const Tensor scores = tensor<float>(ref["scores"], {40, 8});
  const Tensor ids = tensor<int32_t>(ref["ids"], {40});
  std::vector<float> onehot(40 * 8, 0.0f);
  for (std::size_t i = 0; i < 40; ++i) onehot[i * 8 + std::size_t(ref["ids"][i].get<int>())] = 1.0f;
  CHECK(score(8, "sparse_categorical_crossentropy", {"sparse_top_k_categorical_accuracy"}, scores, ids)
            .at("sparse_top_k_categorical_accuracy") == doctest::Approx(ref["sparse_top_k_categorical_accuracy"].get<double>()));
  CHECK(score(8, "categorical_crossentropy", {"top_k_categorical_accuracy"}, scores, Tensor::from({40, 8}, std::span<const float>(onehot)))
            .at("top_k_categorical_accuracy") == doctest::Approx(ref["top_k_categorical_accuracy"].get<double>()));
}

TEST_CASE("a registered metric function is the mean of its per-sample values, saved by name") {
  static const bool registered = [] {
    tandem::metrics::register_metric("mean_overshoot", [](const tandem::Symbol& y_true, const tandem::Symbol& y_pred) {
      return tandem::ops::mean(tandem::ops::relu(y_pred - y_true), {-1});
    });
    return true;
  }();
  CHECK(registered);
  const float p[] = {1, 2, 3, 4, 5, 6}, t[] = {2, 2, 2, 2, 2, 2};
  const Tensor pred = Tensor::from({3, 2}, std::span<const float>(p)), y = Tensor::from({3, 2}, std::span<const float>(t));
  // Per row: mean(max(p - t, 0)) = 0, 1.5, 3.5; the mean over rows is 5/3.
  CHECK(score(2, "mse", {"mean_overshoot"}, pred, y).at("mean_overshoot") == doctest::Approx(5.0 / 3.0));
  CHECK_THROWS_WITH_AS(tandem::metrics::register_metric("auc", [](const tandem::Symbol&, const tandem::Symbol& p) { return p; }),
                       doctest::Contains("\"auc\" is a built-in metric's name"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(score(2, "mse", {"no_such_metric"}, pred, y), doctest::Contains("unknown metric 'no_such_metric'"), tandem::ValueError);
  const int32_t ids[] = {0, 1, 1};
  CHECK_THROWS_WITH_AS(score(2, "sparse_categorical_crossentropy", {"auc"}, pred, Tensor::from({3}, std::span<const int32_t>(ids))),
                       doctest::Contains("metric 'auc': expected targets shaped like the predictions (None, 2), got (None,)"), tandem::ShapeError);
}

// train_on_batch / test_on_batch / predict_on_batch, sample_weight and class_weight, checked on a
// linear model where one SGD step has a closed form: for y = x·k and the mean squared error with
// row weights w (1 when unweighted), L = Σᵢ wᵢ rᵢ² / N with rᵢ = xᵢ·k − yᵢ, and
// dL/dk = (2/N) Σᵢ wᵢ rᵢ xᵢ.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>

#include "tests/scratch_dir.h"

namespace tl = tandem::layers;
using tandem::Shape;
using tandem::Tensor;

namespace {

constexpr double kRate = 0.1;
const std::vector<float> kX{1, 2, -1, 0.5f, 0, -2, 3, 1};  // 4 rows of 2
const std::vector<float> kY{1, 0, 2, 1};                    // also class ids 0..2
const std::vector<float> kK{0.5f, -0.25f};

std::unique_ptr<tandem::Model> linear_model() {
  const auto x = tandem::Input({2});
  auto dense = tl::Dense(1, "", {.use_bias = false});
  auto model = std::make_unique<tandem::Model>(x, dense(x));
  model->set_weights({Tensor::from({2, 1}, std::span<const float>(kK))});
  model->compile({.optimizer = tandem::optimizers::SGD(kRate), .loss = "mse", .metrics = {"mae"}});
  return model;
}

struct Step {
  double loss, mae;
  std::vector<double> k;  // after the update
};

// The closed form of one SGD step on the first `rows` rows with weights w.
Step closed_form(const std::vector<double>& w, std::size_t rows = 4) {
  double loss = 0, mae = 0, g0 = 0, g1 = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const double r = kX[2 * i] * kK[0] + kX[2 * i + 1] * kK[1] - kY[i];
    loss += w[i] * r * r, mae += std::abs(r);
    g0 += 2 * w[i] * r * kX[2 * i], g1 += 2 * w[i] * r * kX[2 * i + 1];
  }
  const double n = double(rows);
  return {loss / n, mae / n, {kK[0] - kRate * g0 / n, kK[1] - kRate * g1 / n}};
}

Tensor x_rows(int64_t rows = 4) { return Tensor::from({rows, 2}, std::span<const float>(kX.data(), std::size_t(2 * rows))); }
Tensor y_rows(int64_t rows = 4) { return Tensor::from({rows, 1}, std::span<const float>(kY.data(), std::size_t(rows))); }

void check_kernel(const tandem::Model& model, const std::vector<double>& k) {
  const Tensor got = model.get_weights()[0];
  CHECK(got.values<float>()[0] == doctest::Approx(k[0]).epsilon(1e-6));
  CHECK(got.values<float>()[1] == doctest::Approx(k[1]).epsilon(1e-6));
}

}  // namespace

TEST_CASE("train_on_batch runs one update and reports the batch before it; test_on_batch and predict_on_batch follow") {
  auto model = linear_model();
  const Step want = closed_form({1, 1, 1, 1});
  const tandem::Logs logs = model->train_on_batch(x_rows(), y_rows());
  CHECK(logs.at("loss") == doctest::Approx(want.loss).epsilon(1e-6));
  CHECK(logs.at("mae") == doctest::Approx(want.mae).epsilon(1e-6));
  check_kernel(*model, want.k);
  CHECK(model->optimizer()->iterations() == 1);

  double loss = 0;
  std::vector<double> pred;
  for (std::size_t i = 0; i < 4; ++i) {
    pred.push_back(kX[2 * i] * want.k[0] + kX[2 * i + 1] * want.k[1]);
    loss += (pred[i] - kY[i]) * (pred[i] - kY[i]) / 4;
  }
  CHECK(model->test_on_batch(x_rows(), y_rows()).at("loss") == doctest::Approx(loss).epsilon(1e-6));
  const Tensor p = model->predict_on_batch(x_rows());
  REQUIRE(p.shape() == Shape{4, 1});
  for (std::size_t i = 0; i < 4; ++i) CHECK(p.values<float>()[i] == doctest::Approx(pred[i]).epsilon(1e-6));
}

TEST_CASE("sample_weight scales each row's loss; the mean stays over all rows and metrics stay unweighted") {
  auto model = linear_model();
  const std::vector<float> w{2, 0, 0.5f, 1};
  const Step want = closed_form({2, 0, 0.5, 1});
  const tandem::History h = model->fit(x_rows(), y_rows(),
                                       {.batch_size = 4, .shuffle = false, .sample_weight = Tensor::from({4}, std::span<const float>(w)), .verbose = 0});
  CHECK(h.history.at("loss")[0] == doctest::Approx(want.loss).epsilon(1e-6));
  CHECK(h.history.at("mae")[0] == doctest::Approx(want.mae).epsilon(1e-6));
  check_kernel(*model, want.k);
}

TEST_CASE("sample_weight follows validation_split: the training rows keep their own weights") {
  auto model = linear_model();
  const std::vector<float> w{2, 0, 0.5f, 1};
  const Step want = closed_form({2, 0, 0.5}, 3);  // floor(4 · 0.75) = 3 training rows
  model->fit(x_rows(), y_rows(),
             {.batch_size = 4, .shuffle = false, .validation_split = 0.25, .sample_weight = Tensor::from({4}, std::span<const float>(w)), .verbose = 0});
  check_kernel(*model, want.k);
}

TEST_CASE("class_weight weighs each row by its target class; unlisted classes weigh 1") {
  auto model = linear_model();
  // Targets 1, 0, 2, 1: class 1 weighs 3, class 2 weighs 0.5, class 0 is not listed.
  const Step want = closed_form({3, 1, 0.5, 3});
  const tandem::History h = model->fit(x_rows(), y_rows(), {.batch_size = 4, .shuffle = false, .class_weight = {{1, 3.0}, {2, 0.5}}, .verbose = 0});
  CHECK(h.history.at("loss")[0] == doctest::Approx(want.loss).epsilon(1e-6));
  check_kernel(*model, want.k);
}

TEST_CASE("sample_weight and class_weight: clear errors") {
  auto model = linear_model();
  const std::vector<float> w3{1, 1, 1};
  CHECK_THROWS_WITH_AS(model->fit(x_rows(), y_rows(), {.sample_weight = Tensor::from({3}, std::span<const float>(w3)), .verbose = 0}),
                       doctest::Contains("sample_weight must have shape (4,), one weight per row of x, got (3,)"), tandem::ShapeError);
  CHECK_THROWS_WITH_AS(model->fit(x_rows(), y_rows(), {.sample_weight = Tensor::from({3}, std::span<const float>(w3)), .class_weight = {{0, 2.0}}, .verbose = 0}),
                       doctest::Contains("either sample_weight or class_weight, not both"), tandem::ValueError);
  const auto a = tandem::Input({2});
  tandem::Model two({a}, {tl::Dense(1)(a), tl::Dense(1)(a)});
  two.compile({.optimizer = "sgd", .loss = "mse"});
  CHECK_THROWS_WITH_AS(two.fit({x_rows()}, {y_rows(), y_rows()}, {.class_weight = {{0, 2.0}}, .verbose = 0}),
                       doctest::Contains("class_weight is for a model with one output, this one has 2"), tandem::ValueError);
}

namespace {
// Records the batch indices callbacks see, per epoch.
struct BatchLog : tandem::Callback {
  std::vector<std::vector<int64_t>> seen;
  void on_epoch_begin(int, const tandem::Logs&) override { seen.emplace_back(); }
  void on_train_batch_begin(int64_t b, const tandem::Logs&) override { seen.back().push_back(b); }
};
}  // namespace

TEST_CASE("steps_per_epoch: epochs continue through the data and end early at its end, as Keras's epoch iterator does") {
  // 4 rows in batches of 1 with 3 steps per epoch: epochs run rows 0-2, then 3 (the data ends),
  // then 0-2 of a new pass. The same updates one by one with train_on_batch end at the same bits.
  auto model = linear_model();
  auto log = std::make_shared<BatchLog>();
  const tandem::History h = model->fit(x_rows(), y_rows(), {.epochs = 3, .batch_size = 1, .shuffle = false, .verbose = 0, .callbacks = {log},
                                                            .steps_per_epoch = 3});
  CHECK(log->seen == std::vector<std::vector<int64_t>>{{0, 1, 2}, {0}, {0, 1, 2}});
  CHECK(model->optimizer()->iterations() == 7);
  CHECK(h.history.at("loss").size() == 3);
  auto by_hand = linear_model();
  for (int64_t row : {0, 1, 2, 3, 0, 1, 2}) by_hand->train_on_batch(x_rows(4).rows(row, row + 1), y_rows(4).rows(row, row + 1));
  const Tensor a = model->get_weights()[0], b = by_hand->get_weights()[0];
  CHECK(std::equal(a.values<float>().begin(), a.values<float>().end(), b.values<float>().begin()));
  CHECK_THROWS_WITH_AS(model->fit(x_rows(), y_rows(), {.verbose = 0, .steps_per_epoch = -1}), doctest::Contains("steps_per_epoch must be >= 0"),
                       tandem::ValueError);
}

TEST_CASE("evaluate and predict call every Keras hook, in Keras's order") {
  struct Hooks : tandem::Callback {
    std::vector<std::string> calls;
    void on_test_begin(const tandem::Logs&) override { calls.push_back("test_begin"); }
    void on_test_batch_begin(int64_t b, const tandem::Logs&) override { calls.push_back("test_batch_begin " + std::to_string(b)); }
    void on_test_batch_end(int64_t b, const tandem::Logs&) override { calls.push_back("test_batch_end " + std::to_string(b)); }
    void on_test_end(const tandem::Logs&) override { calls.push_back("test_end"); }
    void on_predict_begin(const tandem::Logs&) override { calls.push_back("predict_begin"); }
    void on_predict_batch_begin(int64_t b, const tandem::Logs&) override { calls.push_back("predict_batch_begin " + std::to_string(b)); }
    void on_predict_batch_end(int64_t b, const tandem::Logs&) override { calls.push_back("predict_batch_end " + std::to_string(b)); }
    void on_predict_end(const tandem::Logs&) override { calls.push_back("predict_end"); }
  };
  auto model = linear_model();
  auto hooks = std::make_shared<Hooks>();
  model->evaluate(x_rows(), y_rows(), {.batch_size = 2, .verbose = 0, .callbacks = {hooks}});
  model->predict(x_rows(), {.batch_size = 3, .callbacks = {hooks}});
  CHECK(hooks->calls == std::vector<std::string>{"test_begin", "test_batch_begin 0", "test_batch_end 0", "test_batch_begin 1", "test_batch_end 1",
                                                 "test_end", "predict_begin", "predict_batch_begin 0", "predict_batch_end 0",
                                                 "predict_batch_begin 1", "predict_batch_end 1", "predict_end"});
}

TEST_CASE("weight_decay on every optimizer: w -= w·wd·lr before the update, as Keras 3 applies it; Adam with it is AdamW") {
  // SGD: one step on the linear model, the gradient taken at the weights before the decay.
  auto model = linear_model();
  model->compile({.optimizer = tandem::optimizers::SGD(kRate, {.weight_decay = 0.5}), .loss = "mse"});
  model->train_on_batch(x_rows(), y_rows());
  const Step plain = closed_form({1, 1, 1, 1});
  check_kernel(*model, {plain.k[0] - kRate * 0.5 * kK[0], plain.k[1] - kRate * 0.5 * kK[1]});
  // Adam(weight_decay) and AdamW end at the same bits, and the decay is saved and read back.
  auto adam = linear_model(), adamw = linear_model();
  adam->compile({.optimizer = tandem::optimizers::Adam(0.01, {.weight_decay = 0.2}), .loss = "mse"});
  adamw->compile({.optimizer = tandem::optimizers::AdamW(0.01, {.weight_decay = 0.2}), .loss = "mse"});
  for (int i = 0; i < 3; ++i) adam->train_on_batch(x_rows(), y_rows()), adamw->train_on_batch(x_rows(), y_rows());
  const Tensor a = adam->get_weights()[0], b = adamw->get_weights()[0];
  CHECK(std::equal(a.values<float>().begin(), a.values<float>().end(), b.values<float>().begin()));
  CHECK(adam->optimizer()->config_json().find("\"weight_decay\":0.2") != std::string::npos);
  CHECK(tandem::optimizers::Lion().get()->config_json().find("\"weight_decay\":null") != std::string::npos);
  const ScratchRoot scratch("test_fit_options");
  const std::string path = (scratch.fresh("wd") / "adam.keras").string();
  adam->save(path);
  CHECK(tandem::load_model(path)->optimizer()->config_json() == adam->optimizer()->config_json());
  CHECK_THROWS_WITH_AS(tandem::optimizers::Nadam(0.001, {.weight_decay = -1.0}), doctest::Contains("weight_decay must be >= 0, got -1"),
                       tandem::ValueError);
}

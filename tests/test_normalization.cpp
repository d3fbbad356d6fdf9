// Normalisation: f64 finite-difference checks of the fused ops (batch_norm_train, batch_norm_infer,
// layer_norm), BatchNormalization and LayerNormalization against PyTorch (tests/data/
// normalization_refs.json, made by tests/data/make_normalization_refs.py), the moving statistics
// after fit against closed-form values, and the errors for bad configurations.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "layer_base/call_context.h"
#include "ops/normalization.h"
#include "tests/gradient_check.h"
#include "lower_with.h"

namespace tl = tandem::layers;
using gradcheck::GradCheck;
using gradcheck::Outcome;
using nlohmann::json;
using tandem::DType;
using tandem::Shape;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {
constexpr double kEpsilon = 1e-3;

// Per-channel mean and biased variance of x viewed as (outer, channels, inner).
struct Stats {
  std::vector<double> mean, var;
};
Stats channel_stats(const std::vector<double>& x, const Shape& s, int axis) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
  const int64_t c = s[axis];
  const double count = static_cast<double>(outer * inner);
  Stats st{std::vector<double>(static_cast<std::size_t>(c)), std::vector<double>(static_cast<std::size_t>(c))};
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          const double v = x[static_cast<std::size_t>((o * c + ch) * inner + i)];
          const auto k = static_cast<std::size_t>(ch);
          if (pass == 0) st.mean[k] += v / count;
          else st.var[k] += (v - st.mean[k]) * (v - st.mean[k]) / count;
        }
  return st;
}

int64_t channel_of(const Shape& s, int axis, int64_t flat) {
  int64_t inner = 1;
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
  return (flat / inner) % s[axis];
}

void check_batch_norm_train(const Shape& s, int axis) {
  GradCheck c;
  const Shape ch{s[axis]};
  const Value x = c.uniform(s, -1, 3), gamma = c.uniform(ch, 0.5, 1.5), beta = c.uniform(ch);
  const auto r = ops::batch_norm_train(c.g, x, gamma, beta, axis, kEpsilon);
  const Outcome o = c.check(r.y, "batch_norm_train y " + s.str() + " axis " + std::to_string(axis));
  const Stats st = channel_stats(c.values(x), s, axis);
  for (std::size_t i = 0; i < o.y.size(); ++i) {
    const auto k = static_cast<std::size_t>(channel_of(s, axis, static_cast<int64_t>(i)));
    const double want = (c.values(x)[i] - st.mean[k]) / std::sqrt(st.var[k] + kEpsilon) * c.values(gamma)[k] + c.values(beta)[k];
    CHECK(o.y[i] == doctest::Approx(want).epsilon(1e-12));
  }
}

// The mean and variance outputs on their own (only x is differentiated: they do not depend on
// gamma and beta).
void check_batch_norm_stats(const Shape& s, int axis, bool variance) {
  GradCheck c;
  const Shape ch{s[axis]};
  const Value x = c.uniform(s, -1, 3), gamma = c.fixed(ch, 0.5, 1.5), beta = c.fixed(ch, -1, 1);
  const auto r = ops::batch_norm_train(c.g, x, gamma, beta, axis, kEpsilon);
  const Outcome o = c.check(variance ? r.variance : r.mean, variance ? "batch_norm_train variance" : "batch_norm_train mean");
  const Stats st = channel_stats(c.values(x), s, axis);
  for (std::size_t k = 0; k < o.y.size(); ++k) CHECK(o.y[k] == doctest::Approx(variance ? st.var[k] : st.mean[k]).epsilon(1e-12));
}

void check_batch_norm_infer(const Shape& s, int axis) {
  GradCheck c;
  const Shape ch{s[axis]};
  const Value x = c.uniform(s), gamma = c.uniform(ch, 0.5, 1.5), beta = c.uniform(ch);
  const Value mean = c.fixed(ch, -1, 1), var = c.fixed(ch, 0.5, 2);
  const Outcome o = c.check(ops::batch_norm_infer(c.g, x, gamma, beta, mean, var, axis, kEpsilon), "batch_norm_infer " + s.str());
  for (std::size_t i = 0; i < o.y.size(); ++i) {
    const auto k = static_cast<std::size_t>(channel_of(s, axis, static_cast<int64_t>(i)));
    const double want = (c.values(x)[i] - c.values(mean)[k]) / std::sqrt(c.values(var)[k] + kEpsilon) * c.values(gamma)[k] +
                        c.values(beta)[k];
    CHECK(o.y[i] == doctest::Approx(want).epsilon(1e-12));
  }
}

void check_layer_norm(const Shape& s) {
  GradCheck c;
  const Shape d{s.back()};
  const Value x = c.uniform(s, -1, 3), gamma = c.uniform(d, 0.5, 1.5), beta = c.uniform(d);
  const Outcome o = c.check(ops::layer_norm(c.g, x, gamma, beta, kEpsilon), "layer_norm " + s.str());
  const int64_t n = s.back();
  for (int64_t r = 0; r < s.num_elements() / n; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += c.values(x)[static_cast<std::size_t>(r * n + j)] / double(n);
    for (int64_t j = 0; j < n; ++j) var += std::pow(c.values(x)[static_cast<std::size_t>(r * n + j)] - mean, 2) / double(n);
    for (int64_t j = 0; j < n; ++j) {
      const auto i = static_cast<std::size_t>(r * n + j), k = static_cast<std::size_t>(j);
      CHECK(o.y[i] == doctest::Approx((c.values(x)[i] - mean) / std::sqrt(var + kEpsilon) * c.values(gamma)[k] + c.values(beta)[k]).epsilon(1e-12));
    }
  }
}

// Rows of features spread unevenly over rows and channels, and a target per row, for the tests of
// the moving statistics.
struct Rows {
  std::vector<float> xs, ys;
  tandem::Tensor x, y;
  Rows(int64_t rows, int64_t features) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t f = 0; f < features; ++f) xs.push_back(static_cast<float>(0.25 * double(r * r % 7) + 1.5 * double(f) - 0.3 * double(r % 3)));
      ys.push_back(static_cast<float>(0.1 * double(r) - 0.4));
    }
    x = tandem::Tensor::from({rows, features}, std::span<const float>(xs));
    y = tandem::Tensor::from({rows, 1}, std::span<const float>(ys));
  }
};

}  // namespace

TEST_CASE("normalization: gradient of batch_norm_train") {
  SUBCASE("rank 2 (N, C)") { check_batch_norm_train({5, 3}, 1); }
  SUBCASE("rank 4 (N, H, W, C)") { check_batch_norm_train({2, 3, 2, 4}, 3); }
  SUBCASE("rank 4, channels on axis 1") { check_batch_norm_train({2, 3, 2, 2}, 1); }
  SUBCASE("mean output") { check_batch_norm_stats({2, 2, 3, 3}, 3, false); }
  SUBCASE("variance output") { check_batch_norm_stats({2, 2, 3, 3}, 3, true); }
}

// Inputs large enough that the per-channel sums span several blocks of rows (summed on several
// threads and combined in block order); x is held fixed so the finite differences stay few.
TEST_CASE("normalization: batch_norm_train and layer_norm sums over many rows") {
  SUBCASE("batch_norm_train") {
    GradCheck c;
    const Shape s{40, 10, 10, 8}, ch{8};
    const Value x = c.fixed(s, -1, 3), gamma = c.uniform(ch, 0.5, 1.5), beta = c.uniform(ch);
    const Outcome o = c.check(ops::batch_norm_train(c.g, x, gamma, beta, 3, kEpsilon).y, "batch_norm_train, 32000 elements");
    const Stats st = channel_stats(c.values(x), s, 3);
    for (std::size_t i = 0; i < o.y.size(); i += 97) {
      const std::size_t k = i % 8;
      CHECK(o.y[i] == doctest::Approx((c.values(x)[i] - st.mean[k]) / std::sqrt(st.var[k] + kEpsilon) * c.values(gamma)[k] +
                                      c.values(beta)[k]).epsilon(1e-12));
    }
  }
  SUBCASE("layer_norm") {
    GradCheck c;
    const Value x = c.fixed({3000, 12}, -1, 3), gamma = c.uniform({12}, 0.5, 1.5), beta = c.uniform({12});
    c.check(ops::layer_norm(c.g, x, gamma, beta, kEpsilon), "layer_norm, 3000 rows");
  }
}

TEST_CASE("normalization: gradient of batch_norm_infer") {
  SUBCASE("rank 2 (N, C)") { check_batch_norm_infer({5, 3}, 1); }
  SUBCASE("rank 4 (N, H, W, C)") { check_batch_norm_infer({2, 3, 2, 4}, 3); }
}

TEST_CASE("normalization: gradient of layer_norm") {
  SUBCASE("rank 2") { check_layer_norm({4, 5}); }
  SUBCASE("rank 3") { check_layer_norm({2, 3, 4}); }
}

namespace {
json load_refs() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/normalization_refs.json");
  REQUIRE(in.good());
  return json::parse(in);
}

std::vector<float> floats(const json& values) {
  std::vector<float> v;
  for (const auto& x : values) v.push_back(x.get<float>());
  return v;
}

tandem::Tensor tensor(const json& values, Shape shape) {
  return tandem::Tensor::from(std::move(shape), std::span<const float>(floats(values)));
}

Shape shape_of(const json& c) { return Shape(c["shape"].get<std::vector<int64_t>>()); }

void expect_close(const float* got, const json& want, const char* what) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = want[i].get<double>();
    worst = std::max(worst, std::abs(double(got[i]) - w) / std::max(1.0, std::abs(w)));
  }
  INFO(std::string(what) << ": max relative |tandem - pytorch| = " << worst);
  CHECK(worst <= 1e-5);
}

// Runs the layer once on x in a graph built here and returns y and the gradients of Σ y ⊙ w with
// respect to x and `wrt` (weights of the layer), in that order.
std::vector<std::vector<float>> run_layer(tandem::Layer& layer, const Shape& shape, const json& x, const json& w, bool training,
                                          const std::vector<tandem::VariablePtr>& wrt) {
  tandem::graph::Graph g;
  const Value xp = g.placeholder("x", {shape, DType::F32});
  const Value wp = g.placeholder("w", {shape, DType::F32});
  tandem::CallContext ctx(g, training, ops::fill(g, {Shape{}, DType::I64}, 0));
  Value y;
  {
    tandem::graph::ScopeGuard scope(g, layer.name());
    y = layer.emit(ctx, {xp});
  }
  const Value loss = ops::reduce_sum(g, ops::mul(g, y, wp), gradcheck::all_axes(shape.rank()));
  std::vector<Value> of{xp};
  for (const auto& v : wrt) of.push_back(ctx.variable(*v));
  std::vector<Value> fetches{y};
  for (Value d : tandem::autodiff::gradients(g, loss, of)) {
    REQUIRE(d.valid());
    fetches.push_back(d);
  }
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
  tandem::runtime::Executable exe(
      plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
      [&](int, int id) -> void* {
        for (const auto& v : layer.weights())
          if (v->id() == id) return v->value().raw();
        FAIL("unknown variable");
        return nullptr;
      });
  const std::vector<float> xs = floats(x), ws = floats(w);
  std::copy(xs.begin(), xs.end(), static_cast<float*>(exe.feed(0, "x")));
  std::copy(ws.begin(), ws.end(), static_cast<float*>(exe.feed(0, "w")));
  exe.run();
  std::vector<std::vector<float>> out;
  for (std::size_t i = 0; i < fetches.size(); ++i) {
    const auto* p = static_cast<const float*>(exe.fetch(0, static_cast<int>(i)));
    out.emplace_back(p, p + g.type(fetches[i]).shape.num_elements());
  }
  return out;
}
}  // namespace

TEST_CASE("normalization: BatchNormalization matches PyTorch in training and inference") {
  const json refs = load_refs();
  for (const json& c : refs["batch_norm"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      const Shape s = shape_of(c);
      const bool affine = c["affine"], training = c["training"];
      auto bn = tl::BatchNormalization({.momentum = c["momentum"].get<double>(), .epsilon = c["epsilon"].get<double>(),
                                        .center = affine, .scale = affine});
      bn->build_for({s.without_batch()});
      const Shape ch{s.back()};
      std::vector<tandem::Tensor> weights;
      if (affine) weights = {tensor(c["gamma"], ch), tensor(c["beta"], ch)};
      weights.push_back(tensor(c["moving_mean"], ch));
      weights.push_back(tensor(c["moving_variance"], ch));
      bn->set_weights(weights);
      std::vector<tandem::VariablePtr> wrt;
      if (affine) wrt = {bn->weights()[0], bn->weights()[1]};
      const auto out = run_layer(*bn, s, c["x"], c["w"], training, wrt);
      expect_close(out[0].data(), c["y"], "y");
      expect_close(out[1].data(), c["dx"], "dx");
      if (affine) {
        expect_close(out[2].data(), c["dgamma"], "dgamma");
        expect_close(out[3].data(), c["dbeta"], "dbeta");
      }
      // Moving statistics: moved towards the batch's (biased variance) in training, untouched in
      // inference.
      const std::size_t m = affine ? 2 : 0;
      expect_close(bn->weights()[m]->value().data<float>(), c["moving_mean_after"], "moving_mean");
      expect_close(bn->weights()[m + 1]->value().data<float>(), c["moving_variance_after"], "moving_variance");
    }
  }
}

TEST_CASE("normalization: LayerNormalization matches PyTorch") {
  const json refs = load_refs();
  for (const json& c : refs["layer_norm"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      const Shape s = shape_of(c);
      auto ln = tl::LayerNormalization({.epsilon = c["epsilon"].get<double>()});
      ln->build_for({s.without_batch()});
      ln->set_weights({tensor(c["gamma"], {s.back()}), tensor(c["beta"], {s.back()})});
      for (bool training : {true, false}) {
        INFO("training = " << training);
        const auto out = run_layer(*ln, s, c["x"], c["w"], training, ln->weights());
        expect_close(out[0].data(), c["y"], "y");
        expect_close(out[1].data(), c["dx"], "dx");
        expect_close(out[2].data(), c["dgamma"], "dgamma");
        expect_close(out[3].data(), c["dbeta"], "dbeta");
      }
    }
  }
}

TEST_CASE("normalization: Keras weights, names and defaults") {
  auto x = tandem::Input({4, 4, 3});
  auto bn = tl::BatchNormalization({.name = "bn"});
  bn(x);
  const auto& w = bn->weights();
  REQUIRE(w.size() == 4);
  const char* names[] = {"gamma", "beta", "moving_mean", "moving_variance"};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(w[i]->name() == names[i]);
    CHECK(w[i]->path() == std::string("bn/") + names[i]);
    CHECK(w[i]->value().shape() == Shape{3});
    CHECK(w[i]->trainable() == (i < 2));
    for (int64_t k = 0; k < 3; ++k) CHECK(w[i]->value().item(k) == (i == 0 || i == 3 ? 1.0 : 0.0));
  }
  CHECK(bn->class_name() == "BatchNormalization");
  CHECK(bn->count_params() == 12);

  auto plain = tl::BatchNormalization({.center = false, .scale = false});
  plain(tandem::Input({5}));
  REQUIRE(plain->weights().size() == 2);
  CHECK(plain->weights()[0]->name() == "moving_mean");
  CHECK(plain->name().rfind("batch_normalization", 0) == 0);

  auto ln = tl::LayerNormalization();
  ln(tandem::Input({2, 6}));
  REQUIRE(ln->weights().size() == 2);
  CHECK(ln->weights()[0]->name() == "gamma");
  CHECK(ln->weights()[1]->name() == "beta");
  CHECK(ln->weights()[0]->value().shape() == Shape{6});
  CHECK(ln->weights()[1]->trainable());
  CHECK(ln->class_name() == "LayerNormalization");
  auto scale_only = tl::LayerNormalization({.center = false});
  scale_only(tandem::Input({6}));
  REQUIRE(scale_only->weights().size() == 1);
  CHECK(scale_only->weights()[0]->name() == "gamma");
}

// Batch normalisation is the first layer, so its input in every step is a known batch of x and the
// moving statistics after fit follow in closed form. predict and evaluate must use them (inference)
// and must not move them.
TEST_CASE("normalization: fit updates the moving statistics, evaluate and predict use them") {
  constexpr int64_t kRows = 12, kFeatures = 3, kBatch = 4;
  constexpr double kMomentum = 0.6;
  const Rows data(kRows, kFeatures);
  const std::vector<float>&xs = data.xs;
  const tandem::Tensor &x = data.x, &y = data.y;

  auto in = tandem::Input({kFeatures});
  auto bn = tl::BatchNormalization({.momentum = kMomentum});
  tandem::Model model(in, tl::Dense(1)(bn(in)));
  model.compile({.optimizer = tandem::optimizers::SGD(0.05), .loss = tandem::losses::MeanSquaredError()});
  model.fit(x, y, {.epochs = 2, .batch_size = kBatch, .shuffle = false, .verbose = 0});

  std::vector<double> mean(kFeatures, 0.0), var(kFeatures, 1.0);  // the initializers: zeros, ones
  for (int epoch = 0; epoch < 2; ++epoch)
    for (int64_t b = 0; b < kRows / kBatch; ++b) {
      std::vector<double> batch(xs.begin() + b * kBatch * kFeatures, xs.begin() + (b + 1) * kBatch * kFeatures);
      const Stats st = channel_stats(batch, {kBatch, kFeatures}, 1);
      for (std::size_t f = 0; f < kFeatures; ++f) {
        mean[f] = mean[f] * kMomentum + st.mean[f] * (1 - kMomentum);
        var[f] = var[f] * kMomentum + st.var[f] * (1 - kMomentum);  // biased, as in Keras 3
      }
    }
  const auto& w = bn->weights();
  for (std::size_t f = 0; f < kFeatures; ++f) {
    CHECK(w[2]->value().item(static_cast<int64_t>(f)) == doctest::Approx(mean[f]).epsilon(1e-5));
    CHECK(w[3]->value().item(static_cast<int64_t>(f)) == doctest::Approx(var[f]).epsilon(1e-5));
  }
  // gamma and beta were trained (they receive gradients in training mode).
  CHECK(w[0]->value().item(0) != 1.0);
  CHECK(w[1]->value().item(0) != 0.0);

  const std::vector<tandem::Tensor> before = model.get_weights();
  model.evaluate(tandem::Dataset(x, y), {.batch_size = kBatch, .verbose = 0});
  const tandem::Tensor pred = model.predict(x, {.batch_size = 5});  // a partial last batch too
  const std::vector<tandem::Tensor> after = model.get_weights();
  for (std::size_t i = 0; i < before.size(); ++i)
    for (int64_t k = 0; k < before[i].size(); ++k) CHECK(after[i].item(k) == before[i].item(k));

  // Inference: dense(gamma·(x − moving_mean)/sqrt(moving_var + ε) + beta), from the weights.
  const auto& kernel = after[4];
  const double bias = after[5].item(0);
  REQUIRE(pred.shape() == Shape{kRows, 1});
  for (int64_t r = 0; r < kRows; ++r) {
    double want = bias;
    for (int64_t f = 0; f < kFeatures; ++f) {
      const double normed = (double(xs[static_cast<std::size_t>(r * kFeatures + f)]) - after[2].item(f)) /
                            std::sqrt(after[3].item(f) + 1e-3);
      want += (after[0].item(f) * normed + after[1].item(f)) * kernel.item(f);
    }
    CHECK(pred.item(r) == doctest::Approx(want).epsilon(1e-5));
  }
}

// Micro-batches (GPipe): each micro-batch is normalised by its own statistics, so the first step's
// loss is that of the micro-batches' normalisations; the moving statistics move once per step
// towards the whole batch's (deferred batch norm). BatchNormalization is the first layer, so both
// follow in closed form from the input. Before, the moving statistics followed the last
// micro-batch alone.
TEST_CASE("normalization: under micro-batches each is normalised by its own statistics, the moving statistics by the whole batch's") {
  constexpr int64_t kRows = 16, kFeatures = 3, kBatch = 8, kMicro = 4;
  constexpr double kMomentum = 0.6;
  const Rows data(kRows, kFeatures);
  const std::vector<float>&xs = data.xs, &ys = data.ys;
  const tandem::Tensor &x = data.x, &y = data.y;
  const auto rows = [&](int64_t first, int64_t count) {
    return std::vector<double>(xs.begin() + first * kFeatures, xs.begin() + (first + count) * kFeatures);
  };

  namespace dist = tandem::distribute;
  const std::vector<std::pair<std::string, std::function<dist::StrategyPtr()>>> strategies{
      {"Default", [] { return dist::Default("cpu:0", {.micro_batches = kMicro}); }},
      {"Pipeline GPipe", [] { return dist::Pipeline({"cpu:0", "cpu:1"}, {.boundaries = {"head"}, .micro_batches = kMicro, .schedule = dist::PipelineSchedule::GPipe}); }},
      {"Pipeline 1F1B", [] { return dist::Pipeline({"cpu:0", "cpu:1"}, {.boundaries = {"head"}, .micro_batches = kMicro}); }}};
  for (const auto& [name, strategy] : strategies) {
    CAPTURE(name);
    auto in = tandem::Input({kFeatures});
    auto bn = tl::BatchNormalization({.momentum = kMomentum});
    tandem::Model model(in, tl::Dense(1, "", {.name = "head"})(bn(in)));
    model.compile({.optimizer = tandem::optimizers::SGD(0.05), .loss = tandem::losses::MeanSquaredError(), .strategy = strategy()});
    const std::vector<tandem::Tensor> initial = model.get_weights();

    // The first step's loss, from the initial weights (gamma 1, beta 0) and each micro-batch's
    // statistics: the mean over the batch of (kernel · (x − mean_m)/sqrt(var_m + ε) + bias − y)².
    const tandem::History first = model.fit(x.rows(0, kBatch), y.rows(0, kBatch), {.epochs = 1, .batch_size = kBatch, .shuffle = false, .verbose = 0});
    double loss = 0;
    const int64_t micro_rows = kBatch / kMicro;
    for (int64_t m = 0; m < kMicro; ++m) {
      const Stats st = channel_stats(rows(m * micro_rows, micro_rows), {micro_rows, kFeatures}, 1);
      for (int64_t r = m * micro_rows; r < (m + 1) * micro_rows; ++r) {
        double pred = initial[5].item(0);
        for (int64_t f = 0; f < kFeatures; ++f) {
          const auto k = static_cast<std::size_t>(f);
          pred += (xs[static_cast<std::size_t>(r * kFeatures + f)] - st.mean[k]) / std::sqrt(st.var[k] + kEpsilon) * initial[4].item(f);
        }
        loss += (pred - ys[static_cast<std::size_t>(r)]) * (pred - ys[static_cast<std::size_t>(r)]) / double(kBatch);
      }
    }
    CHECK(first.history.at("loss").at(0) == doctest::Approx(loss).epsilon(1e-5));

    // The rest of the data: the moving statistics after every step, from the whole batches.
    model.fit(x.rows(kBatch, kRows), y.rows(kBatch, kRows), {.epochs = 1, .batch_size = kBatch, .shuffle = false, .verbose = 0});
    std::vector<double> mean(kFeatures, 0.0), var(kFeatures, 1.0);
    for (int64_t b = 0; b < kRows / kBatch; ++b) {
      const Stats st = channel_stats(rows(b * kBatch, kBatch), {kBatch, kFeatures}, 1);
      for (std::size_t f = 0; f < kFeatures; ++f) {
        mean[f] = mean[f] * kMomentum + st.mean[f] * (1 - kMomentum);
        var[f] = var[f] * kMomentum + st.var[f] * (1 - kMomentum);
      }
    }
    const auto& w = bn->weights();
    for (std::size_t f = 0; f < kFeatures; ++f) {
      CHECK(w[2]->value().item(static_cast<int64_t>(f)) == doctest::Approx(mean[f]).epsilon(1e-5));
      CHECK(w[3]->value().item(static_cast<int64_t>(f)) == doctest::Approx(var[f]).epsilon(1e-5));
    }
  }
}

TEST_CASE("normalization: errors name the layer, the argument and the values") {
  SUBCASE("epsilon <= 0") {
    CHECK_THROWS_WITH_AS(tl::BatchNormalization({.epsilon = 0.0, .name = "bn_e"}),
                         doctest::Contains("BatchNormalization \"bn_e\": epsilon must be positive, got 0"), tandem::ValueError);
    CHECK_THROWS_WITH_AS(tl::LayerNormalization({.epsilon = -1e-3, .name = "ln_e"}),
                         doctest::Contains("LayerNormalization \"ln_e\": epsilon must be positive, got -0.001"), tandem::ValueError);
  }
  SUBCASE("momentum outside [0, 1]") {
    CHECK_THROWS_WITH_AS(tl::BatchNormalization({.momentum = 1.5}), doctest::Contains("momentum must be in [0, 1], got 1.5"),
                         tandem::ValueError);
  }
  SUBCASE("axis out of range") {
    auto bn = tl::BatchNormalization({.axis = 3, .name = "bn_axis"});
    CHECK_THROWS_WITH_AS(bn(tandem::Input({4, 5})),
                         doctest::Contains("BatchNormalization \"bn_axis\": axis 3 is out of range for input (None, 4, 5)"),
                         tandem::ValueError);
    CHECK_THROWS_WITH_AS(tl::BatchNormalization({.axis = 0}), doctest::Contains("axis 0 is the batch axis"), tandem::ValueError);
    auto neg = tl::BatchNormalization({.axis = -4});
    CHECK_THROWS_WITH_AS(neg(tandem::Input({4, 5})), doctest::Contains("axis -4 is out of range"), tandem::ValueError);
    auto ln = tl::LayerNormalization({.axis = 2, .name = "ln_axis"});
    CHECK_THROWS_WITH_AS(ln(tandem::Input({4})), doctest::Contains("LayerNormalization \"ln_axis\": axis 2 is out of range"),
                         tandem::ValueError);
    auto ln_mid = tl::LayerNormalization({.axis = 1});
    CHECK_THROWS_WITH_AS(ln_mid(tandem::Input({4, 5})), doctest::Contains("only the last axis is supported"), tandem::ValueError);
  }
  SUBCASE("wrong rank") {
    auto bn = tl::BatchNormalization({.name = "bn_rank"});
    CHECK_THROWS_WITH_AS(bn(tandem::Input({})), doctest::Contains("BatchNormalization \"bn_rank\": expected one input of rank >= 2"),
                         tandem::ShapeError);
    auto bn2 = tl::BatchNormalization({.name = "bn_rank2"});
    bn2(tandem::Input({4}));
    CHECK_THROWS_WITH_AS(bn2(tandem::Input({2, 2, 4})),
                         doctest::Contains("BatchNormalization \"bn_rank2\": expected input of rank 2 with 4 channels on axis 1, got (None, 2, 2, 4)"),
                         tandem::ShapeError);
    CHECK_THROWS_WITH_AS(bn2(tandem::Input({5})), doctest::Contains("got (None, 5)"), tandem::ShapeError);
    auto ln = tl::LayerNormalization({.name = "ln_rank"});
    CHECK_THROWS_WITH_AS(ln(tandem::Input({})), doctest::Contains("LayerNormalization \"ln_rank\": expected one input of rank >= 2"),
                         tandem::ShapeError);
    auto ln2 = tl::LayerNormalization({.name = "ln_dim"});
    ln2(tandem::Input({3, 6}));
    CHECK_THROWS_WITH_AS(ln2(tandem::Input({6, 3})), doctest::Contains("expected input of rank >= 2 with last dimension 6, got (None, 6, 3)"),
                         tandem::ShapeError);
  }
  SUBCASE("ops check their per-channel inputs") {
    tandem::graph::Graph g;
    const Value x = g.placeholder("x", {Shape{2, 3}, DType::F32});
    const Value v4 = g.placeholder("v4", {Shape{4}, DType::F32}), v3 = g.placeholder("v3", {Shape{3}, DType::F32});
    CHECK_THROWS_WITH_AS(ops::batch_norm_train(g, x, v4, v3, -1, kEpsilon),
                         doctest::Contains("batch_norm_train: expected gamma of shape (3,) for input (2, 3)"), tandem::ShapeError);
    CHECK_THROWS_WITH_AS(ops::batch_norm_infer(g, x, v3, v3, v3, v4, 1, kEpsilon), doctest::Contains("expected variance of shape"),
                         tandem::ShapeError);
    CHECK_THROWS_WITH_AS(ops::batch_norm_train(g, x, v3, v3, 2, kEpsilon), doctest::Contains("axis 2 is out of range for rank 2"),
                         tandem::ShapeError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(g, x, v3, v4, kEpsilon), doctest::Contains("layer_norm: expected beta of shape (3,)"),
                         tandem::ShapeError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(g, x, v3, v3, 0.0), doctest::Contains("epsilon must be positive"), tandem::ShapeError);
  }
}

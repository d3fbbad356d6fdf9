// Regularizers and constraints: a regularized model's loss and its weights after one SGD step
// against Keras 3's on the same weights and batch (tests/data/regularizer_refs.json, made by
// tests/data/make_regularizer_refs.py), each constraint against its closed form, the penalty
// counted once under Mirrored and Pipeline, and configs written and read as Keras's.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "backend/device.h"
#include "config/config_reader.h"
#include "io/zip_archive.h"
#include "layers/config.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace R = tandem::regularizers;
namespace C = tandem::constraints;
using Json = nlohmann::json;
using tandem::DType;
using tandem::Shape;
using tandem::Tensor;

namespace {

const fs::path kData = fs::path(TANDEM_TEST_DATA);
const ScratchRoot scratch_root("tandem_regularizers");

Json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p);
  return Json::parse(in);
}

Tensor tensor_of(const Json& t, DType dtype) {
  const std::vector<double> v = t.at("values").get<std::vector<double>>();
  return Tensor::from(Shape(t.at("shape").get<std::vector<int64_t>>()), std::span<const double>(v)).cast(dtype);
}

double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const Tensor x = a.cast(DType::F64), y = b.cast(DType::F64);
  double d = 0;
  for (int64_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x.values<double>()[i] - y.values<double>()[i]));
  return d;
}

// The models of make_regularizer_refs.py, layer for layer.
tandem::Model dense_model() {
  auto x = tandem::Input({4});
  auto h = tl::Dense(3, "tanh",
                     {.kernel_regularizer = R::L1L2(0.01, 0.02), .bias_regularizer = R::L2(0.03), .activity_regularizer = R::L1(0.05),
                      .kernel_constraint = C::MaxNorm(0.8, {0}), .bias_constraint = C::NonNeg(), .name = "d1"})(x);
  h = tl::Dense(3, "", {.kernel_regularizer = R::OrthogonalRegularizer(0.1, "rows"), .kernel_constraint = C::UnitNorm({0}),
                        .bias_constraint = C::MinMaxNorm(0.2, 0.5, 0.7, {0}), .name = "d2"})(h);
  auto y = tl::Dense(2, "", {.kernel_regularizer = R::OrthogonalRegularizer(0.2, "columns"), .activity_regularizer = R::L2(0.02),
                             .kernel_constraint = C::MaxNorm(0.6, {1}), .name = "d3"})(h);
  return tandem::Model(x, y);
}

tandem::Model conv_model() {
  auto x = tandem::Input({5, 5, 2});
  auto h = tl::Conv2D(3, 2, {.activation = "relu", .kernel_regularizer = R::L2(0.01), .bias_regularizer = R::L1(0.02),
                             .activity_regularizer = R::L2(0.003), .kernel_constraint = C::MaxNorm(0.9, {0, 1, 2}),
                             .bias_constraint = C::NonNeg(), .name = "c2"})(x);
  h = tl::Reshape({16, 3})(h);
  h = tl::Conv1D(2, 3, {.kernel_regularizer = R::L1L2(0.01, 0.01), .bias_regularizer = R::L2(0.5), .kernel_constraint = C::UnitNorm({0, 1}),
                        .bias_constraint = C::MaxNorm(0.05), .name = "c1"})(h);
  auto y = tl::Dense(1, "", {.kernel_regularizer = R::L1(0.001), .name = "out"})(tl::Flatten()(h));
  return tandem::Model(x, y);
}

tandem::Model seq_model() {
  auto x = tandem::Input({5}, DType::I32);
  auto h = tl::Embedding(7, 3, {.embeddings_regularizer = R::L2(0.02), .activity_regularizer = R::L1(0.01),
                                .embeddings_constraint = C::MinMaxNorm(0.3, 0.6, 0.5, {1}), .name = "emb"})(x);
  h = tl::GRU(4, {.kernel_regularizer = R::L1(0.01), .recurrent_regularizer = R::OrthogonalRegularizer(0.05), .bias_regularizer = R::L2(0.1),
                  .activity_regularizer = R::L2(0.01), .kernel_constraint = C::MaxNorm(0.7), .recurrent_constraint = C::UnitNorm({1}), .bias_constraint = C::NonNeg(),
                  .return_sequences = true, .name = "gru"})(h);
  h = tl::SimpleRNN(3, {.kernel_regularizer = R::L2(0.02), .recurrent_regularizer = R::L1(0.01), .bias_regularizer = R::L1L2(0.01, 0.02),
                        .recurrent_constraint = C::MaxNorm(0.5, {0}), .return_sequences = true,
                        .name = "rnn"})(h);
  h = tl::LSTM(2, {.kernel_regularizer = R::L1L2(0.0, 0.03), .recurrent_regularizer = R::L2(0.01), .bias_regularizer = R::L1(0.01),
                   .kernel_constraint = C::MinMaxNorm(0.1, 0.4, 1.0, {0}), .bias_constraint = C::MaxNorm(0.9), .name = "lstm"})(h);
  auto y = tl::Dense(1, "", {.name = "out"})(h);
  return tandem::Model(x, y);
}

tandem::Model vision_model() {
  auto x = tandem::Input({6, 6, 2});
  auto h = tl::DepthwiseConv2D(2, {.depth_multiplier = 2, .activation = "tanh", .depthwise_regularizer = R::L2(0.02), .bias_regularizer = R::L1(0.03),
                                   .activity_regularizer = R::L1(0.01), .depthwise_constraint = C::MaxNorm(0.7, {0, 1}),
                                   .bias_constraint = C::NonNeg(), .name = "dw"})(x);
  h = tl::BatchNormalization({.beta_regularizer = R::L1(0.02), .gamma_regularizer = R::L2(0.05), .beta_constraint = C::MaxNorm(0.4),
                              .gamma_constraint = C::NonNeg(), .name = "bn"})(h);
  h = tl::SeparableConv2D(3, 2, {.depthwise_regularizer = R::L1L2(0.01, 0.02), .pointwise_regularizer = R::L2(0.03), .bias_regularizer = R::L2(0.1),
                                 .activity_regularizer = R::L2(0.01), .depthwise_constraint = C::UnitNorm({0, 1}),
                                 .pointwise_constraint = C::MaxNorm(0.8, {0, 1, 2}), .bias_constraint = C::MinMaxNorm(0.1, 0.3, 0.5),
                                 .name = "sep"})(h);
  h = tl::Conv2DTranspose(2, 2, {.strides = 2, .kernel_regularizer = R::L1(0.02), .bias_regularizer = R::L2(0.05),
                                 .activity_regularizer = R::L1(0.005), .kernel_constraint = C::MaxNorm(0.5, {0, 1, 3}),
                                 .bias_constraint = C::NonNeg(), .name = "tconv"})(h);
  h = tl::GroupNormalization({.groups = 2, .beta_regularizer = R::L2(0.03), .gamma_regularizer = R::L1(0.02), .beta_constraint = C::UnitNorm(),
                              .gamma_constraint = C::MaxNorm(1.2), .name = "gn"})(h);
  h = tl::PReLU({.shared_axes = {1, 2}, .alpha_regularizer = R::L2(0.1), .alpha_constraint = C::NonNeg(), .name = "prelu"})(h);
  return tandem::Model(x, tl::Dense(1, "", {.name = "out"})(tl::Flatten()(h)));
}

tandem::Model attention_model() {
  auto x = tandem::Input({4, 3});
  auto h = tl::MultiHeadAttention(2, 3, {.kernel_regularizer = R::L2(0.02), .bias_regularizer = R::L1(0.01), .activity_regularizer = R::L2(0.005),
                                         .kernel_constraint = C::MaxNorm(0.6, {0}), .bias_constraint = C::NonNeg(), .name = "mha"})({x, x});
  h = tl::LayerNormalization({.beta_regularizer = R::L1(0.02), .gamma_regularizer = R::L2(0.03), .beta_constraint = C::MaxNorm(0.3),
                              .gamma_constraint = C::MinMaxNorm(0.5, 1.0, 0.8), .name = "ln"})(h);
  return tandem::Model(x, tl::Dense(1, "", {.name = "out"})(tl::Flatten()(h)));
}

tandem::Model make(const std::string& name) {
  if (name == "dense") return dense_model();
  if (name == "conv") return conv_model();
  if (name == "vision") return vision_model();
  if (name == "attention") return attention_model();
  return seq_model();
}
const char* const kModels[] = {"dense", "conv", "seq", "vision", "attention"};

struct Ref {
  Json m;
  Tensor x, y;
  std::vector<Tensor> weights;
};
Ref reference(const std::string& name) {
  const Json all = read_json(kData / "regularizer_refs.json");
  Ref r{all.at("models").at(name), {}, {}, {}};
  r.x = tensor_of(r.m.at("x"), name == "seq" ? DType::I32 : DType::F32);
  r.y = tensor_of(r.m.at("y"), DType::F32);
  for (const Json& w : r.m.at("weights")) r.weights.push_back(tensor_of(w, DType::F32));
  return r;
}

void compile(tandem::Model& model, tandem::distribute::StrategyPtr strategy = {}) {
  model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = "mse", .strategy = std::move(strategy)});
}

}  // namespace

TEST_CASE("regularizers: a regularized model's loss and its weights after one SGD step with constraints equal Keras 3's") {
  // dense, conv, seq: Dense, Conv2D, Conv1D, Embedding and the recurrent layers; vision:
  // DepthwiseConv2D, BatchNormalization, SeparableConv2D, Conv2DTranspose, GroupNormalization and
  // PReLU; attention: MultiHeadAttention (its regularizers on every projection) and LayerNormalization.
  for (const std::string name : kModels) {
    INFO(name);
    const Ref r = reference(name);
    tandem::Model model = make(name);
    compile(model);
    model.set_weights(r.weights);
    // The penalties matter: without them the loss is plain_loss.
    CHECK(std::abs(r.m.at("eval_loss").get<double>() - r.m.at("plain_loss").get<double>()) > 1e-2);
    const double tolerance = 1e-5 * std::max(1.0, std::abs(r.m.at("eval_loss").get<double>()));
    CHECK(std::abs(model.test_on_batch(r.x, r.y).at("loss") - r.m.at("eval_loss").get<double>()) <= tolerance);
    CHECK(std::abs(model.train_on_batch(r.x, r.y).at("loss") - r.m.at("train_loss").get<double>()) <= tolerance);
    const std::vector<Tensor> after = model.get_weights();
    REQUIRE(after.size() == r.m.at("weights_after").size());
    for (std::size_t i = 0; i < after.size(); ++i) {
      INFO(r.m.at("weight_paths")[i].get<std::string>());
      CHECK(max_difference(after[i], tensor_of(r.m.at("weights_after")[i], DType::F32)) <= 1e-5);
    }
  }
}

TEST_CASE("regularizers: each weight's penalty counts once per step under Mirrored, Pipeline micro-batches and ModelSplit") {
  // dense: Dense layers; attention: MultiHeadAttention, whose activity penalties come from inside
  // its call (one per projection), and LayerNormalization. `second` starts the second stage.
  for (const auto& [name, second, sample] : {std::tuple<std::string, std::string, Shape>{"dense", "d2", Shape{4}},
                                             std::tuple<std::string, std::string, Shape>{"attention", "ln", Shape{4, 3}}}) {
    INFO(name);
    const Ref r = reference(name);
    // Six rows (two per device or micro-batch) drawn from the reference batch's pattern.
    std::vector<int64_t> dims{6};
    for (int64_t d : sample.dims()) dims.push_back(d);
    Tensor x{Shape(dims), DType::F32}, y({6, name == "dense" ? 2 : 1}, DType::F32);
    for (int64_t i = 0; i < x.size(); ++i) x.values<float>()[i] = float(std::sin(0.7 * double(i)));
    for (int64_t i = 0; i < y.size(); ++i) y.values<float>()[i] = float(std::cos(0.3 * double(i)));
    auto run = [&](tandem::distribute::StrategyPtr strategy) {
      tandem::Model model = make(name);
      compile(model, std::move(strategy));
      model.set_weights(r.weights);
      const double loss = model.train_on_batch(x, y).at("loss");
      return std::make_pair(loss, model.get_weights());
    };
    const auto [loss, weights] = run({});
    for (auto strategy : {tandem::distribute::Mirrored({"cpu:0", "cpu:1"}), tandem::distribute::Mirrored({"cpu:0", "cpu:1", "cpu:2"}),
                          tandem::distribute::Pipeline({"cpu:0", "cpu:1"}, {.boundaries = {second}, .micro_batches = 3}),
                          tandem::distribute::ModelSplit({"cpu:0", "cpu:1"}, {.placement = {{second, "cpu:1"}}})}) {
      const auto [l, w] = run(strategy);
      CHECK(std::abs(l - loss) <= 1e-5);
      for (std::size_t i = 0; i < w.size(); ++i) CHECK(max_difference(w[i], weights[i]) <= 1e-6);
    }
  }
}

TEST_CASE("constraints: MaxNorm, NonNeg, UnitNorm and MinMaxNorm after an update equal their closed forms") {
  // A Dense layer with a zero gradient (the loss does not depend on it... except through the
  // kernel's constraint): lr 0 makes the update leave w, so the step applies the constraint alone.
  const Tensor w0 = Tensor::from(Shape{3, 2}, std::span<const double>(std::vector<double>{3, -0.1, 4, 0.2, 0, -0.3}));
  struct Case {
    tandem::Constraint c;
    std::function<double(double w, double norm_col, double norm_row)> expect;  // w's new value
  };
  const double eps = 1e-7;
  const std::vector<Case> cases{
      {C::MaxNorm(2.0, {0}), [&](double w, double n, double) { return w * std::min(n, 2.0) / (eps + n); }},
      {C::MaxNorm(0.3, {1}), [&](double w, double, double n) { return w * std::min(n, 0.3) / (eps + n); }},
      {C::NonNeg(), [](double w, double, double) { return std::max(w, 0.0); }},
      {C::UnitNorm({0}), [&](double w, double n, double) { return w / (eps + n); }},
      {C::UnitNorm({0, 1}), [&](double w, double, double) { return w / (eps + std::sqrt(9 + 0.01 + 16 + 0.04 + 0.09)); }},
      {C::MinMaxNorm(0.5, 1.0, 0.25, {0}),
       [&](double w, double n, double) { return w * (0.25 * std::clamp(n, 0.5, 1.0) + 0.75 * n) / (eps + n); }},
  };
  for (const Case& k : cases) {
    INFO(k.c.class_name);
    for (DType dtype : {DType::F32, DType::F64}) {
      auto x = tandem::Input({3}, dtype);
      tandem::Model model(x, tl::Dense(2, "", {.use_bias = false, .kernel_constraint = k.c})(x));
      model.compile({.optimizer = tandem::optimizers::SGD(0.0), .loss = "mse"});
      model.set_weights({w0.cast(dtype)});
      model.train_on_batch(Tensor({2, 3}, dtype), Tensor({2, 2}, dtype));
      const Tensor w = model.get_weights()[0].cast(DType::F64);
      const auto v0 = w0.values<double>();
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 2; ++j) {
          double col = 0, row = 0;
          for (int64_t a = 0; a < 3; ++a) col += v0[a * 2 + j] * v0[a * 2 + j];
          for (int64_t b = 0; b < 2; ++b) row += v0[i * 2 + b] * v0[i * 2 + b];
          CHECK(w.values<double>()[i * 2 + j] ==
                doctest::Approx(k.expect(v0[i * 2 + j], std::sqrt(col), std::sqrt(row))).epsilon(dtype == DType::F32 ? 1e-6 : 1e-12));
        }
    }
  }
}

TEST_CASE("regularizers: bad arguments are refused naming the class, the argument and the value") {
  CHECK_THROWS_WITH_AS(R::L2(-1), doctest::Contains("L2: l2 must be a non-negative finite number"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(R::OrthogonalRegularizer(0.1, "diagonal"), doctest::Contains("mode must be \"rows\" or \"columns\", got \"diagonal\""),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Dense(2, "", {.kernel_regularizer = "l3"}), doctest::Contains("unknown regularizer 'l3'"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Dense(2, "", {.kernel_constraint = "max"}), doctest::Contains("unknown constraint 'max'"), tandem::ValueError);
  // OrthogonalRegularizer needs a 2-D weight: a Conv2D kernel is refused when the loss is built.
  auto x = tandem::Input({4, 4, 1});
  tandem::Model model(x, tl::Flatten()(tl::Conv2D(2, 2, {.kernel_regularizer = R::OrthogonalRegularizer()})(x)));
  compile(model);
  CHECK_THROWS_WITH_AS(model.train_on_batch(Tensor({1, 4, 4, 1}, DType::F32), Tensor({1, 18}, DType::F32)),
                       doctest::Contains("OrthogonalRegularizer needs a 2-D value"), tandem::ValueError);
}

TEST_CASE("regularizers: configs hold regularizers and constraints as Keras 3 serialises them, and read back") {
  namespace cfg = tandem::config;
  CHECK(cfg::regularizer_json(R::L2(0.5)) ==
        cfg::Json::parse(R"({"module": "keras.regularizers", "class_name": "L2", "config": {"l2": 0.5}, "registered_name": null})"));
  CHECK(cfg::regularizer_json(R::OrthogonalRegularizer(0.1, "columns")).at("config") == cfg::Json::parse(R"({"factor": 0.1, "mode": "columns"})"));
  CHECK(cfg::regularizer_json({}).is_null());
  CHECK(cfg::constraint_json(C::MaxNorm(3, {0, 1})) ==
        cfg::Json::parse(R"({"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 3.0, "axis": [0, 1]}, "registered_name": null})"));
  CHECK(cfg::constraint_json(C::NonNeg()).at("config") == cfg::Json::object());
  CHECK(cfg::constraint_json(C::MinMaxNorm()).at("config") == cfg::Json::parse(R"({"min_value": 0.0, "max_value": 1.0, "rate": 1.0, "axis": 0})"));
  // Read back from Keras's dicts and from names.
  const cfg::Json config = cfg::Json::parse(R"({"a": {"module": "keras.regularizers", "class_name": "L1L2", "config": {"l1": 0.25, "l2": 0.5}, "registered_name": null},
      "b": "l2", "c": {"module": "keras.constraints", "class_name": "UnitNorm", "config": {"axis": [0, 2]}, "registered_name": null},
      "d": {"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 2, "axis": 0}, "registered_name": null},
      "e": {"class_name": "L2", "config": {"l2": 0.1, "l3": 1}}})");
  const cfg::ConfigReader c("Dense", config);
  CHECK(c.regularizer("a") == R::L1L2(0.25, 0.5));
  CHECK(c.regularizer("b") == R::L2());
  CHECK(c.constraint("c") == C::UnitNorm({0, 2}));
  CHECK(c.constraint("d") == C::MaxNorm(2, {0}));
  CHECK_THROWS_WITH_AS(c.regularizer("e"), doctest::Contains("no argument \"l3\""), tandem::ValueError);
}

TEST_CASE("regularizers: a model with regularizers and constraints saves and loads with them") {
  const fs::path dir = scratch_root.fresh("save");
  const Ref r = reference("seq");
  tandem::Model model = seq_model();
  compile(model);
  model.set_weights(r.weights);
  model.save((dir / "seq.keras").string());
  std::unique_ptr<tandem::Model> loaded = tandem::load_model((dir / "seq.keras").string());
  // The same loss with its penalties, and the same constrained step, as Keras's.
  CHECK(std::abs(loaded->test_on_batch(r.x, r.y).at("loss") - r.m.at("eval_loss").get<double>()) <= 1e-5 * r.m.at("eval_loss").get<double>());
  loaded->train_on_batch(r.x, r.y);
  for (std::size_t i = 0; i < loaded->get_weights().size(); ++i)
    CHECK(max_difference(loaded->get_weights()[i], tensor_of(r.m.at("weights_after")[i], DType::F32)) <= 1e-5);
}

namespace {
std::string zip_entry(const fs::path& archive, const std::string& name) {
  for (const auto& e : tandem::io::read_zip(archive.string()))
    if (e.name == name) return e.bytes;
  FAIL("no entry " << name << " in " << archive);
  return {};
}
// Every "*_regularizer" and "*_constraint" entry of a model config's layers, by layer and key.
std::map<std::string, Json> penalties(const Json& config) {
  std::map<std::string, Json> out;
  for (const Json& layer : config.at("config").at("layers"))
    for (const auto& [key, value] : layer.at("config").items())
      if (key.ends_with("_regularizer") || key.ends_with("_constraint")) {
        Json v = value;
        if (v.is_object()) v.erase("shared_object_id");  // Keras's id of an object its LSTM shares with its cell
        out[layer.at("config").at("name").get<std::string>() + "/" + key] = v;
      }
  return out;
}

// A Keras-made model (tests/data/keras/<name>.keras and .h5, tests/data/make_keras_files.py) loads
// and predicts as Keras did, with `regularized` weights that have a regularizer and `constrained`
// with a constraint, and Tandem writes every regularizer and constraint of its config back as
// Keras wrote it.
void check_keras_file(const std::string& name, const std::vector<Tensor>& x, int regularized, int constrained) {
  const fs::path dir = kData / "keras";
  const Json m = read_json(dir / "models.json").at(name);
  for (const std::string ext : {".keras", ".h5"}) {
    INFO(name << ext);
    std::unique_ptr<tandem::Model> model = tandem::load_model((dir / (name + ext)).string());
    CHECK(max_difference(model->predict(x)[0], tensor_of(m.at("y"), DType::F32)) <= 1e-5);
    int r = 0, c = 0;
    for (const tandem::VariablePtr& w : model->weights()) r += bool(w->regularizer()), c += bool(w->constraint());
    CHECK(r == regularized);
    CHECK(c == constrained);
  }
  const fs::path mine = scratch_root.fresh("keras_file_" + name) / (name + ".keras");
  tandem::load_model((dir / (name + ".keras")).string())->save(mine.string());
  const auto keras = penalties(Json::parse(zip_entry(dir / (name + ".keras"), "config.json")));
  const auto ours = penalties(Json::parse(zip_entry(mine, "config.json")));
  CHECK(keras.size() >= 20);
  for (const auto& [key, value] : keras) {
    INFO(key);
    REQUIRE(ours.count(key));
    CHECK(ours.at(key) == value);
  }
  CHECK(ours.size() == keras.size());
}
}  // namespace

TEST_CASE("regularizers: a Keras-made model with regularizers and constraints loads, predicts, and is written back with them") {
  // Embedding, LSTM, Conv2D and Dense layers with every regularizer and constraint class, two inputs.
  const Json m = read_json(kData / "keras" / "models.json").at("regularized");
  check_keras_file("regularized", {tensor_of(m.at("x")[0], DType::I32), tensor_of(m.at("x")[1], DType::F32)}, 7, 8);
}

TEST_CASE("regularizers: a Keras-made model with regularized vision, normalisation, PReLU and attention layers loads with them") {
  // DepthwiseConv2D, BatchNormalization, SeparableConv2D, Conv2DTranspose, GroupNormalization,
  // PReLU, MultiHeadAttention and LayerNormalization, each weight with a regularizer and a
  // constraint (22 of each: MultiHeadAttention's 8 projections' kernels and biases among them).
  const Json m = read_json(kData / "keras" / "models.json").at("regularized_layers");
  check_keras_file("regularized_layers", {tensor_of(m.at("x")[0], DType::F32), tensor_of(m.at("x")[1], DType::F32)}, 22, 22);
}

namespace {
// Keras's regularizer and constraint classes are serialised like this (keras.regularizers.serialize).
const char* const kL1L2 = R"({"module": "keras.regularizers", "class_name": "L1L2", "config": {"l1": 0.25, "l2": 0.5}, "registered_name": null})";
const char* const kMaxNorm =
    R"({"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 3.0, "axis": [0, 1]}, "registered_name": null})";
struct PenaltyArgs {
  const char* class_name;
  const char* required;  // the config's other arguments
  std::vector<const char*> regularizers, constraints;
};
const std::vector<PenaltyArgs> kPenaltyArgs{
    {"Conv2DTranspose", R"({"filters": 2, "kernel_size": [2, 2]})", {"kernel_regularizer", "bias_regularizer", "activity_regularizer"},
     {"kernel_constraint", "bias_constraint"}},
    {"DepthwiseConv2D", R"({"kernel_size": [2, 2]})", {"depthwise_regularizer", "bias_regularizer", "activity_regularizer"},
     {"depthwise_constraint", "bias_constraint"}},
    {"SeparableConv2D", R"({"filters": 2, "kernel_size": [2, 2]})",
     {"depthwise_regularizer", "pointwise_regularizer", "bias_regularizer", "activity_regularizer"},
     {"depthwise_constraint", "pointwise_constraint", "bias_constraint"}},
    {"PReLU", "{}", {"alpha_regularizer"}, {"alpha_constraint"}},
    {"BatchNormalization", "{}", {"beta_regularizer", "gamma_regularizer"}, {"beta_constraint", "gamma_constraint"}},
    {"LayerNormalization", "{}", {"beta_regularizer", "gamma_regularizer"}, {"beta_constraint", "gamma_constraint"}},
    {"GroupNormalization", R"({"groups": 2})", {"beta_regularizer", "gamma_regularizer"}, {"beta_constraint", "gamma_constraint"}},
    {"MultiHeadAttention", R"({"num_heads": 2, "key_dim": 3})", {"kernel_regularizer", "bias_regularizer", "activity_regularizer"},
     {"kernel_constraint", "bias_constraint"}},
};
}  // namespace

TEST_CASE("regularizers: every regularizer and constraint argument of the vision, normalisation, PReLU and attention layers round-trips") {
  namespace cfg = tandem::config;
  for (const PenaltyArgs& p : kPenaltyArgs) {
    std::vector<std::pair<const char*, const char*>> args;
    for (const char* key : p.regularizers) args.emplace_back(key, kL1L2);
    for (const char* key : p.constraints) args.emplace_back(key, kMaxNorm);
    for (const auto& [key, value] : args) {
      INFO(p.class_name << " " << key);
      cfg::Json config = cfg::Json::parse(p.required);
      config["name"] = "x";
      config[key] = cfg::Json::parse(value);
      const std::shared_ptr<tandem::Layer> layer = tl::layer_from_config(p.class_name, config);
      const Json written = Json::parse(layer->config_json());
      CHECK(written.at(key) == Json::parse(value));
      // Every other penalty argument is written null, as Keras writes "none".
      for (const auto& [other, ignored] : args)
        if (std::string(other) != key) CHECK(written.at(other).is_null());
      // MultiHeadAttention hands its activity regularizer to its projections: the layer's own
      // output has none (Keras's base Layer holds None); the convolutions' is their output's.
      if (std::string(key) == "activity_regularizer")
        CHECK(bool(layer->activity_regularizer()) == (std::string(p.class_name) != "MultiHeadAttention"));
      // The rebuilt layer writes the same again.
      CHECK(Json::parse(tl::layer_from_config(p.class_name, cfg::Json::parse(layer->config_json()))->config_json()) == written);

      // A value Tandem cannot read is refused naming the layer and the argument.
      config[key] = std::string(key).ends_with("_constraint") ? "max" : "l3";
      std::string error;
      try {
        tl::layer_from_config(p.class_name, config);
      } catch (const tandem::ValueError& e) {
        error = e.what();
      }
      INFO(error);
      CHECK(error.find(std::string(p.class_name) + " \"x\"") != std::string::npos);
      CHECK(error.find(key) != std::string::npos);
    }
  }
}

TEST_CASE("regularizers: a bad regularizer or constraint given to the vision, normalisation, PReLU or attention layers names the layer and argument") {
  auto refused = [](auto make, const std::string& message) {
    CHECK_THROWS_WITH_AS(make(), doctest::Contains(message.c_str()), tandem::ValueError);
  };
  tandem::Regularizer negative = R::L2();
  negative.l2 = -1;  // what a config could hold; the factories refuse it at once
  refused([] { return tl::Conv2DTranspose(2, 2, {.kernel_regularizer = "l3", .name = "t"}); },
          "Conv2DTranspose \"t\": kernel_regularizer: unknown regularizer 'l3'");
  refused([] { return tl::Conv2DTranspose(2, 2, {.bias_constraint = "max", .name = "t"}); },
          "Conv2DTranspose \"t\": bias_constraint: unknown constraint 'max'");
  refused([&] { return tl::DepthwiseConv2D(2, {.depthwise_regularizer = negative, .name = "d"}); },
          "DepthwiseConv2D \"d\": depthwise_regularizer: regularizer L2: l2 must be a non-negative finite number");
  refused([] { return tl::DepthwiseConv2D(2, {.depthwise_constraint = "unit", .name = "d"}); }, "DepthwiseConv2D \"d\": depthwise_constraint");
  refused([] { return tl::SeparableConv2D(2, 2, {.pointwise_regularizer = "l3", .name = "s"}); }, "SeparableConv2D \"s\": pointwise_regularizer");
  refused([] { return tl::SeparableConv2D(2, 2, {.activity_regularizer = "l3", .name = "s"}); }, "SeparableConv2D \"s\": activity_regularizer");
  refused([] { return tl::SeparableConv2D(2, 2, {.pointwise_constraint = "max", .name = "s"}); }, "SeparableConv2D \"s\": pointwise_constraint");
  refused([] { return tl::PReLU({.alpha_regularizer = "l3", .name = "p"}); }, "PReLU \"p\": alpha_regularizer");
  refused([] { return tl::PReLU({.alpha_constraint = "max", .name = "p"}); }, "PReLU \"p\": alpha_constraint");
  refused([] { return tl::BatchNormalization({.gamma_regularizer = "l3", .name = "b"}); }, "BatchNormalization \"b\": gamma_regularizer");
  refused([] { return tl::LayerNormalization({.beta_constraint = "max", .name = "l"}); }, "LayerNormalization \"l\": beta_constraint");
  refused([] { return tl::GroupNormalization({.groups = 2, .gamma_constraint = "max", .name = "g"}); },
          "GroupNormalization \"g\": gamma_constraint");
  refused([] { return tl::MultiHeadAttention(2, 3, {.activity_regularizer = "l3", .name = "m"}); },
          "MultiHeadAttention \"m\": activity_regularizer");
  refused([] { return tl::MultiHeadAttention(2, 3, {.bias_constraint = "max", .name = "m"}); }, "MultiHeadAttention \"m\": bias_constraint");
}

TEST_CASE("regularizers: the gradient of a regularized float64 loss matches finite differences of that loss") {
  // One SGD step with learning rate 1 moves each weight by minus its gradient; the loss's central
  // differences (test_on_batch on shifted weights) must give the same. Every penalty kind: L1L2
  // and L2 on weights, OrthogonalRegularizer by rows and by columns, L1 and L2 activity penalties.
  auto x = tandem::Input({4}, DType::F64);
  auto h = tl::Dense(3, "tanh", {.kernel_regularizer = R::L1L2(0.03, 0.02), .bias_regularizer = R::L2(0.1), .activity_regularizer = R::L1(0.05)})(x);
  h = tl::Dense(3, "", {.kernel_regularizer = R::OrthogonalRegularizer(0.3, "rows"), .activity_regularizer = R::L2(0.04)})(h);
  tandem::Model model(x, tl::Dense(2, "", {.kernel_regularizer = R::OrthogonalRegularizer(0.2, "columns")})(h));
  model.compile({.optimizer = tandem::optimizers::SGD(1.0), .loss = "mse"});
  Tensor xs({5, 4}, DType::F64), ys({5, 2}, DType::F64);
  for (int64_t i = 0; i < 20; ++i) xs.values<double>()[i] = std::sin(1.3 * double(i));
  for (int64_t i = 0; i < 10; ++i) ys.values<double>()[i] = std::cos(0.9 * double(i));
  std::vector<Tensor> w0 = model.get_weights();
  for (Tensor& w : w0)
    for (int64_t i = 0; i < w.size(); ++i) w.values<double>()[i] = 0.4 * std::sin(2.1 * double(i) + double(w.size()));
  model.set_weights(w0);
  model.train_on_batch(xs, ys);
  const std::vector<Tensor> w1 = model.get_weights();
  const double eps = 1e-6;
  for (std::size_t k = 0; k < w0.size(); ++k)
    for (int64_t i = 0; i < w0[k].size(); ++i) {
      auto loss_at = [&](double shift) {
        std::vector<Tensor> w = w0;
        w[k] = w0[k].cast(DType::F64);
        w[k].values<double>()[i] += shift;
        model.set_weights(w);
        return model.test_on_batch(xs, ys).at("loss");
      };
      const double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps), analytic = w0[k].values<double>()[i] - w1[k].values<double>()[i];
      INFO("weight " << k << " element " << i);
      CHECK(analytic == doctest::Approx(numeric).epsilon(1e-6).scale(1.0));
    }
}

TEST_CASE("regularizers: a weight split by ModelSplit's layout is penalised whole and constrained block by block") {
  // a's kernel (4, 4) split by columns: its L2 penalty sums over both blocks, its MaxNorm over axis 0
  // stays within each block. A norm across the split axis is refused, naming the axis.
  auto model_of = [](const tandem::Constraint& b_constraint) {
    auto x = tandem::Input({3});
    auto h = tl::Dense(4, "tanh", {.kernel_regularizer = R::L2(0.05), .activity_regularizer = R::L1(0.02), .kernel_constraint = C::MaxNorm(0.7),
                                   .name = "a"})(x);
    return tandem::Model(x, tl::Dense(2, "", {.kernel_regularizer = R::OrthogonalRegularizer(0.1, "columns"), .kernel_constraint = b_constraint,
                                              .name = "b"})(h));
  };
  Tensor x({4, 3}, DType::F32), y({4, 2}, DType::F32);
  for (int64_t i = 0; i < 12; ++i) x.values<float>()[i] = float(std::sin(0.9 * double(i)));
  for (int64_t i = 0; i < 8; ++i) y.values<float>()[i] = float(std::cos(0.4 * double(i)));
  const tandem::distribute::DeviceMesh mesh{{1, 2}, {"batch", "model"}, {"cpu:0", "cpu:1"}};
  auto run = [&](const tandem::Constraint& b_constraint, tandem::distribute::StrategyPtr strategy) {
    tandem::Model model = model_of(b_constraint);
    compile(model, std::move(strategy));
    std::vector<Tensor> w = model.get_weights();
    for (Tensor& t : w)
      for (int64_t i = 0; i < t.size(); ++i) t.values<float>()[i] = float(0.6 * std::sin(1.7 * double(i) + double(t.size())));
    model.set_weights(w);
    const double loss = model.train_on_batch(x, y).at("loss");
    return std::make_pair(loss, model.get_weights());
  };
  const auto [loss, weights] = run(C::UnitNorm({1}), {});
  const auto [l, w] = run(C::UnitNorm({1}), tandem::distribute::ModelSplit(mesh, {{"a/kernel", {"", "model"}}, {"b/kernel", {"model", ""}}}));
  CHECK(std::abs(l - loss) <= 1e-5);
  for (std::size_t i = 0; i < w.size(); ++i) CHECK(max_difference(w[i], weights[i]) <= 1e-6);
  CHECK_THROWS_WITH_AS(run(C::UnitNorm({0}), tandem::distribute::ModelSplit(mesh, {{"b/kernel", {"model", ""}}})),
                       doctest::Contains("split along axis 0, which its constraint's norm runs over"), tandem::ShapeError);
}

TEST_CASE("regularizers: on gpu:0 the penalties and the constraints' kernel give the CPU's loss and weights") {
  const std::string missing = tandem::backend::unavailable_reason("gpu:0");
  if (!missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  for (const std::string name : kModels) {
    INFO(name);
    const Ref r = reference(name);
    auto run = [&](const std::string& device) {
      tandem::Model model = make(name);
      compile(model, tandem::distribute::Default(device));
      model.set_weights(r.weights);
      const double loss = model.train_on_batch(r.x, r.y).at("loss");
      return std::make_pair(loss, model.get_weights());
    };
    const auto [gpu_loss, gpu_weights] = run("gpu:0");
    const auto [cpu_loss, cpu_weights] = run("cpu:0");
    CHECK(std::abs(gpu_loss - cpu_loss) <= 1e-5 * std::max(1.0, std::abs(cpu_loss)));
    for (std::size_t i = 0; i < cpu_weights.size(); ++i) CHECK(max_difference(gpu_weights[i], cpu_weights[i]) <= 1e-5);
  }
}

// Activations: f64 finite-difference checks of every activation op's gradient; values of the ops,
// the activation names and the activation layers against PyTorch and Keras 3 (tests/data/
// make_activation_refs.py); Keras-made files with every activation layer and name
// (tests/data/make_keras_files.py, "activations"); configs and error messages.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <span>

#include "layers/config.h"
#include "ops/activation_functions.h"
#include "scratch_dir.h"
#include "tests/gradient_check.h"
#include "lower_with.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
using gradcheck::GradCheck;
using Json = nlohmann::json;
using tandem::DType;
using tandem::Shape;
using tandem::Tensor;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {

using OpFn = std::function<Value(Graph&, Value)>;

const fs::path kData = fs::path(TANDEM_TEST_DATA);

Json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p);
  return Json::parse(in);
}
const Json& refs() {
  static const Json j = read_json(kData / "activation_refs.json");
  return j;
}

// The activations under test: how each reference entry (make_activation_refs.py's key) is built
// as an op, and where its derivative jumps (the gradient check keeps its inputs away from those).
struct Case {
  std::string key;
  OpFn op;
  std::vector<double> kinks;
};

ops::ReluOptions relu_options(double slope, std::optional<double> max_value, double threshold) {
  return {.negative_slope = slope, .max_value = max_value, .threshold = threshold};
}
OpFn relu_general(double slope, std::optional<double> max_value, double threshold) {
  return [=](Graph& g, Value x) { return ops::relu_general(g, x, relu_options(slope, max_value, threshold)); };
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c{
      {"silu", ops::silu, {}},
      {"selu", ops::selu, {0}},
      {"elu", [](Graph& g, Value x) { return ops::elu(g, x, 1.0); }, {0}},
      {"elu(alpha=0.5)", [](Graph& g, Value x) { return ops::elu(g, x, 0.5); }, {0}},
      {"softplus", ops::softplus, {}},
      {"softsign", ops::softsign, {0}},
      {"mish", ops::mish, {}},
      {"relu6", ops::relu6, {0, 6}},
      {"leaky_relu", [](Graph& g, Value x) { return ops::leaky_relu(g, x); }, {0}},
      {"leaky_relu(negative_slope=0.3)", [](Graph& g, Value x) { return ops::leaky_relu(g, x, 0.3); }, {0}},
      {"hard_sigmoid", ops::hard_sigmoid, {-3, 3}},
      {"hard_silu", ops::hard_silu, {-3, 3}},
      {"relu(negative_slope=0.1, max_value=None, threshold=0.0)", relu_general(0.1, std::nullopt, 0.0), {0}},
      {"relu(negative_slope=0.0, max_value=6.0, threshold=0.0)", relu_general(0.0, 6.0, 0.0), {0, 6}},
      {"relu(negative_slope=0.2, max_value=4.0, threshold=1.0)", relu_general(0.2, 4.0, 1.0), {0, 1, 4}},
      {"relu(negative_slope=0.0, max_value=None, threshold=0.5)", relu_general(0.0, std::nullopt, 0.5), {0.5}},
      {"relu(negative_slope=0.3, max_value=6.0, threshold=0.0)", relu_general(0.3, 6.0, 0.0), {0, 6}},
      {"relu(negative_slope=0.0, max_value=2.5, threshold=1.5)", relu_general(0.0, 2.5, 1.5), {0, 1.5, 2.5}},
  };
  return c;
}

// op(x) run forward on cpu:0 in `dtype`.
std::vector<double> forward(const OpFn& op, const std::vector<double>& x, DType dtype) {
  Graph g;
  const Shape shape{static_cast<int64_t>(x.size())};
  const Value xv = g.placeholder("x", {shape, dtype});
  const Value y = op(g, xv);
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, {y}));
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
                                  [](int, int) -> void* { return nullptr; });
  const Tensor in = Tensor::from(shape, std::span<const double>(x)).cast(dtype);
  exe.device(0).copy_in(exe.feed(0, "x"), in.raw(), static_cast<std::size_t>(in.size()) * tandem::dtype_size(dtype));
  exe.run();
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = dtype == DType::F32 ? static_cast<const float*>(exe.fetch(0, 0))[i] : static_cast<const double*>(exe.fetch(0, 0))[i];
  return out;
}

// max_i |got_i − want_i| / max(1, |want_i|).
double max_relative(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(1.0, std::abs(want[i])));
  return worst;
}

std::vector<double> values_of(const Tensor& t) {
  const Tensor d = t.cast(DType::F64);
  return {d.values<double>().begin(), d.values<double>().end()};
}

Tensor tensor_of(const Json& t, DType dtype = DType::F32) {
  const std::vector<double> v = t.at("values").get<std::vector<double>>();
  return Tensor::from(Shape(t.at("shape").get<std::vector<int64_t>>()), std::span<const double>(v)).cast(dtype);
}

// A one-layer model on a 1-D sample of the reference inputs; its predictions in float32.
std::vector<double> predict_layer(const tandem::LayerRef& layer, const std::vector<double>& x) {
  const tandem::Symbol in = tandem::Input({static_cast<int64_t>(x.size())});
  tandem::Model m(in, layer(in));
  return values_of(m.predict(Tensor::from(Shape{1, static_cast<int64_t>(x.size())}, std::span<const double>(x))));
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const tandem::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("activations: every activation op's gradient matches float64 finite differences") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-8, 8);
  for (const Case& a : cases()) {
    // 24 inputs: 0.3 either side of each kink (every piece is reached), the rest over [-8, 8],
    // none within 0.05 of a kink, so no finite difference straddles one.
    std::vector<double> x;
    for (double k : a.kinks) x.insert(x.end(), {k - 0.3, k + 0.3});
    while (x.size() < 24) {
      const double v = u(rng);
      bool near = false;
      for (double k : a.kinks) near = near || std::abs(v - k) < 0.05;
      if (!near) x.push_back(v);
    }
    GradCheck c;
    const Value xv = c.given({4, 6}, x);
    c.check(a.op(c.g, xv), a.key);
  }
}

TEST_CASE("activations: op values match PyTorch and Keras 3 in float32 (1e-5) and float64 (1e-12)") {
  const std::vector<double> x = refs().at("x").get<std::vector<double>>();
  for (const Case& a : cases()) {
    INFO(a.key);
    const std::vector<double> want = refs().at("functions").at(a.key).get<std::vector<double>>();
    const double f32 = max_relative(forward(a.op, x, DType::F32), want);
    const double f64 = max_relative(forward(a.op, x, DType::F64), want);
    INFO("float32 " << f32 << ", float64 " << f64);
    CHECK(f32 <= 1e-5);
    CHECK(f64 <= 1e-12);
  }
}

TEST_CASE("activations: the names Keras accepts apply Keras's functions, aliases and default parameters") {
  const std::vector<double> x = refs().at("x").get<std::vector<double>>();
  const Json& f = refs().at("functions");
  const std::vector<std::pair<std::string, std::string>> names{
      {"silu", "silu"},   {"swish", "silu"},       {"leaky_relu", "leaky_relu"},     {"selu", "selu"},
      {"elu", "elu"},     {"softplus", "softplus"}, {"softsign", "softsign"},        {"hard_sigmoid", "hard_sigmoid"},
      {"hard_silu", "hard_silu"}, {"hard_swish", "hard_silu"}, {"mish", "mish"},     {"relu6", "relu6"}};
  for (const auto& [name, key] : names) {
    INFO(name);
    CHECK(max_relative(predict_layer(tl::Activation(name), x), f.at(key).get<std::vector<double>>()) <= 1e-5);
  }
  std::vector<double> e(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) e[i] = std::exp(x[i]);
  CHECK(max_relative(predict_layer(tl::Activation("exponential"), x), e) <= 1e-5);
  CHECK(max_relative(predict_layer(tl::Activation("linear"), x), x) == 0);
  // Keras writes an alias as its function's name.
  CHECK(Json::parse(tl::Activation("swish")->config_json()).at("activation") == "silu");
  CHECK(Json::parse(tl::Dense(2, "hard_swish")->config_json()).at("activation") == "hard_silu");
  CHECK(Json::parse(tl::Dense(2)->config_json()).at("activation") == "linear");
}

TEST_CASE("activations: ReLU, LeakyReLU and ELU layers match Keras's relu and PyTorch") {
  const std::vector<double> x = refs().at("x").get<std::vector<double>>();
  const Json& f = refs().at("functions");
  struct LayerCase {
    std::string key;
    tandem::LayerRef layer;
  };
  const std::vector<LayerCase> layers{
      {"relu(negative_slope=0.1, max_value=None, threshold=0.0)", tl::ReLU(std::nullopt, 0.1)},
      {"relu(negative_slope=0.0, max_value=6.0, threshold=0.0)", tl::ReLU(6.0)},
      {"relu(negative_slope=0.2, max_value=4.0, threshold=1.0)", tl::ReLU(4.0, 0.2, 1.0)},
      {"relu(negative_slope=0.0, max_value=None, threshold=0.5)", tl::ReLU(std::nullopt, 0.0, 0.5)},
      {"relu(negative_slope=0.3, max_value=6.0, threshold=0.0)", tl::ReLU(6.0, 0.3)},
      {"relu(negative_slope=0.0, max_value=2.5, threshold=1.5)", tl::ReLU(2.5, 0.0, 1.5)},
      {"relu6", tl::ReLU(6.0)},
      {"leaky_relu(negative_slope=0.3)", tl::LeakyReLU()},
      {"elu", tl::ELU()},
      {"elu(alpha=0.5)", tl::ELU(0.5)},
  };
  for (const LayerCase& c : layers) {
    INFO(c.layer->class_name() << " for " << c.key);
    CHECK(max_relative(predict_layer(c.layer, x), f.at(c.key).get<std::vector<double>>()) <= 1e-5);
  }
  std::vector<double> relu(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) relu[i] = std::max(x[i], 0.0);
  CHECK(max_relative(predict_layer(tl::ReLU(), x), relu) == 0);
}

TEST_CASE("activations: PReLU with shared axes matches PyTorch's prelu; its alpha trains") {
  const Json& p = refs().at("prelu");
  const tandem::Symbol in = tandem::Input({3, 4});
  const tandem::LayerRef prelu = tl::PReLU({.shared_axes = {1}});
  tandem::Model m(in, prelu(in));
  REQUIRE(prelu->weights().size() == 1);
  CHECK(prelu->weights()[0]->name() == "alpha");
  CHECK(prelu->weights()[0]->value().shape() == Shape{1, 4});
  prelu->set_weights({tensor_of(p.at("alpha"))});
  CHECK(max_relative(values_of(m.predict(tensor_of(p.at("x")))), p.at("y").get<std::vector<double>>()) <= 1e-5);

  // d/dalpha through the layer, in float64 by finite differences: alpha is a graph input here.
  GradCheck c;
  const Value x = c.signed_away({2, 3, 4}, 0.05, 2.0), alpha = c.uniform({1, 4}, -0.5, 1.5);
  const Value y = ops::sub(c.g, ops::relu(c.g, x), ops::mul(c.g, alpha, ops::relu(c.g, ops::scale(c.g, x, -1.0))));
  c.check(y, "prelu as the layer emits it");
}

TEST_CASE("activations: Softmax layer along an axis") {
  const tandem::Symbol in = tandem::Input({3, 2});
  tandem::Model m(in, tl::Softmax(1)(in));
  const std::vector<double> x{1, 2, 3, 4, 5, 7};
  const std::vector<double> y = values_of(m.predict(Tensor::from(Shape{1, 3, 2}, std::span<const double>(x))));
  // Columns (1, 3, 5) and (2, 4, 7) each sum to one.
  for (int col = 0; col < 2; ++col) {
    double z = 0;
    for (int r = 0; r < 3; ++r) z += std::exp(x[static_cast<std::size_t>(r * 2 + col)]);
    for (int r = 0; r < 3; ++r)
      CHECK(y[static_cast<std::size_t>(r * 2 + col)] == doctest::Approx(std::exp(x[static_cast<std::size_t>(r * 2 + col)]) / z).epsilon(1e-6));
  }
}

TEST_CASE("activations: Softmax with a mask broadcasts it as Keras does and gives masked positions 0") {
  // Masking makes a (batch, steps) mask; Keras's Softmax aligns it with the input's last axes, so
  // on a (1, 3, 3) input the mask of the steps masks the features of every row.
  const tandem::Symbol in = tandem::Input({3, 3});
  tandem::Model m(in, tl::Softmax()(tl::Masking(0.0)(in)));
  const std::vector<double> x{1, 2, 3, 0, 0, 0, 4, 6, 5};  // step 1 is all zeros: masked
  const std::vector<double> y = values_of(m.predict(Tensor::from(Shape{1, 3, 3}, std::span<const double>(x))));
  for (std::size_t r = 0; r < 3; ++r) {
    const double a = std::exp(x[r * 3]), c = std::exp(x[r * 3 + 2]);
    CHECK(y[r * 3] == doctest::Approx(a / (a + c)).epsilon(1e-6));
    CHECK(y[r * 3 + 1] == 0);
    CHECK(y[r * 3 + 2] == doctest::Approx(c / (a + c)).epsilon(1e-6));
  }
  const std::string wrong = error_of([] {
    const tandem::Symbol in = tandem::Input({3, 4});
    tandem::Model m(in, tl::Softmax(-1, "s")(tl::Masking(0.0)(in)));
    m.predict(Tensor(Shape{2, 3, 4}, DType::F32));
  });
  CHECK(wrong.find("Softmax \"s\": the mask must broadcast to the input") == 0);
}

TEST_CASE("activations: a Keras-made model with every activation layer and name loads and predicts as Keras did") {
  const Json m = read_json(kData / "keras" / "models.json").at("activations");
  const Tensor x = tensor_of(m.at("x")), want = tensor_of(m.at("y"));
  static const ScratchRoot scratch("tandem_activations");
  const fs::path dir = scratch.fresh("files");
  for (const std::string ext : {".keras", ".h5"}) {
    INFO("activations" << ext);
    std::unique_ptr<tandem::Model> model = tandem::load_model((kData / "keras" / ("activations" + ext)).string());
    CHECK(max_relative(values_of(model->predict(x)), values_of(want)) <= 1e-5);
    // Written by Tandem and read back: the same predictions.
    const fs::path mine = dir / ("again" + ext);
    model->save(mine.string());
    CHECK(max_relative(values_of(tandem::load_model(mine.string())->predict(x)), values_of(want)) <= 1e-5);
  }
}

TEST_CASE("activations: layer configs are Keras's and bad arguments are refused naming the layer and argument") {
  CHECK(Json::parse(tl::ReLU()->config_json()).at("max_value").is_null());
  const Json relu = Json::parse(tl::ReLU(6.0, 0.1, 0.5, "r")->config_json());
  CHECK(relu.at("max_value") == 6.0);
  CHECK(relu.at("negative_slope") == 0.1);
  CHECK(relu.at("threshold") == 0.5);
  CHECK(Json::parse(tl::LeakyReLU()->config_json()).at("negative_slope") == 0.3);
  CHECK(Json::parse(tl::ELU()->config_json()).at("alpha") == 1.0);
  CHECK(Json::parse(tl::Softmax()->config_json()).at("axis") == -1);
  const Json prelu = Json::parse(tl::PReLU({.shared_axes = {1, 2}})->config_json());
  CHECK(prelu.at("shared_axes") == Json::array({1, 2}));
  CHECK(prelu.at("alpha_initializer").at("class_name") == "Zeros");
  CHECK(prelu.at("alpha_regularizer").is_null());
  CHECK(prelu.at("alpha_constraint").is_null());
  CHECK(Json::parse(tl::PReLU()->config_json()).at("shared_axes").is_null());
  // Keras's automatic names: the snake case of the class.
  CHECK(tl::ReLU()->name().rfind("re_lu", 0) == 0);
  CHECK(tl::LeakyReLU()->name().rfind("leaky_re_lu", 0) == 0);
  CHECK(tl::PReLU()->name().rfind("p_re_lu", 0) == 0);

  CHECK(error_of([] {
          Graph g;
          ops::silu(g, g.placeholder("ids", {Shape{2}, DType::I32}));
        }) == "silu: expected a float tensor, got int32");
  CHECK(error_of([] { tl::ReLU(-1.0, 0, 0, "r"); }) == "ReLU \"r\": max_value must be non-negative or none, got -1");
  CHECK(error_of([] { tl::ReLU(std::nullopt, -0.5, 0, "r"); }) == "ReLU \"r\": negative_slope must be non-negative, got -0.5");
  CHECK(error_of([] { tl::ReLU(std::nullopt, 0, -2, "r"); }) == "ReLU \"r\": threshold must be non-negative, got -2");
  CHECK(error_of([] { tl::LeakyReLU(-0.1, "l"); }) == "LeakyReLU \"l\": negative_slope must be non-negative, got -0.1");
  CHECK(error_of([] { tl::PReLU({.shared_axes = {0}, .name = "p"}); }).find("PReLU \"p\": shared_axes must be axes counted with the batch axis") == 0);
  CHECK(error_of([] {
          const tandem::Symbol in = tandem::Input({4});
          tl::PReLU({.shared_axes = {2}, .name = "p"})(in);
        }).find("PReLU \"p\": shared_axes [2] name an axis beyond input (None, 4)") == 0);
  CHECK(error_of([] {
          const tandem::Symbol in = tandem::Input({4});
          tl::Softmax(2, "s")(in);
        }).find("Softmax \"s\": axis 2 is out of range") == 0);
  const std::string unknown = error_of([] { tl::Dense(2, "swishy", {.name = "d"}); });
  CHECK(unknown.find("Dense \"d\": unknown activation 'swishy'; expected one of linear, relu") == 0);
  CHECK(unknown.find("hard_swish") != std::string::npos);
  // Keras 2's LeakyReLU config names the slope "alpha"; Keras 3 reads it, and writes it back as negative_slope.
  const auto legacy = tl::layer_from_config("LeakyReLU", tl::Json::parse(R"({"name": "l", "trainable": true, "alpha": 0.1})"));
  CHECK(Json::parse(legacy->config_json()).at("negative_slope") == 0.1);
  CHECK_FALSE(Json::parse(legacy->config_json()).contains("alpha"));
  CHECK(error_of([] { tl::layer_from_config("Softmax", tl::Json::parse(R"({"name": "s", "axis": [1, 2]})")); })
            .find("one integer axis") != std::string::npos);
  CHECK(error_of([] { tl::layer_from_config("PReLU", tl::Json::parse(R"({"name": "p", "alpha_regularizer": {"class_name": "L3", "config": {}}})")); })
            .find("alpha_regularizer") != std::string::npos);
}

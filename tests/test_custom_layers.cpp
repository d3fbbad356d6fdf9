// Custom layers and losses written only with the public headers (tandem/tandem.h): a layer with
// its own weights and a residual connection, a layer that holds a built-in layer, and a Huber
// loss. Trained in a functional model they must end where PyTorch ends from the same weights
// (tests/data/custom_layer/reference.json, made by make_reference.py there), and the model must
// save and load with load_model. Also: the public ops on a model's symbols, and the errors.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "tests/scratch_dir.h"

namespace tl = tandem::layers;
namespace ops = tandem::ops;
using nlohmann::json;
using tandem::Symbol;

namespace {

const ScratchRoot scratch("test_custom_layers");

// h + tanh(h · kernel + bias) * gate: its own three weights and a residual connection.
class ResidualDense : public tandem::Layer {
 public:
  explicit ResidualDense(int64_t units, const std::string& name = "") : Layer("residual_dense", name), units_(units) {}
  std::string class_name() const override { return "ResidualDense"; }

 protected:
  void build(const std::vector<tandem::Shape>& in) override {
    if (in.size() != 1 || in[0].back() != units_)
      throw tandem::ShapeError("ResidualDense \"" + name() + "\": expected one input of last dimension " + std::to_string(units_));
    kernel_ = add_weight("kernel", {units_, units_}, "glorot_uniform");
    bias_ = add_weight("bias", {units_}, "zeros");
    gate_ = add_weight("gate", {units_}, "ones");
  }
  Symbol call(const std::vector<Symbol>& in, bool) override {
    const Symbol& h = in[0];
    return h + ops::tanh(ops::matmul(h, kernel_) + bias_) * gate_;
  }
  tandem::LayerConfig get_config() const override { return tandem::LayerConfig().set("units", units_); }

 private:
  int64_t units_;
  tandem::VariablePtr kernel_, bias_, gate_;
};

// dense(h) * scale, where dense is a built-in layer the custom one holds: its weights become this
// layer's, after `scale`.
class ScaledHead : public tandem::Layer {
 public:
  explicit ScaledHead(int64_t units, const std::string& name = "")
      : Layer("scaled_head", name), units_(units), dense_(tl::Dense(units)) {}
  std::string class_name() const override { return "ScaledHead"; }

 protected:
  void build(const std::vector<tandem::Shape>&) override { scale_ = add_weight("scale", {units_}, "ones"); }
  Symbol call(const std::vector<Symbol>& in, bool) override { return dense_(in[0]) * scale_; }
  tandem::LayerConfig get_config() const override { return tandem::LayerConfig().set("units", units_); }

 private:
  int64_t units_;
  tandem::LayerRef dense_;
  tandem::VariablePtr scale_;
};

// Huber loss with delta 1, averaged over the last axis (torch.nn.functional.huber_loss).
Symbol huber(const Symbol& y_true, const Symbol& y_pred) {
  const Symbol d = y_pred - y_true;
  const Symbol a = ops::abs(d);
  return ops::mean(ops::where(ops::less_equal(a, ops::full_like(a, 1.0)), ops::square(d) * 0.5, a - 0.5), {-1});
}

[[maybe_unused]] const bool registered = [] {
  tandem::register_layer("ResidualDense", [](const tandem::LayerConfig& c) {
    return std::make_shared<ResidualDense>(c.integer("units"), c.name());
  });
  tandem::register_layer("ScaledHead", [](const tandem::LayerConfig& c) {
    return std::make_shared<ScaledHead>(c.integer("units"), c.name());
  });
  tandem::losses::register_loss("huber_delta_1", huber);
  return true;
}();

json reference() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/custom_layer/reference.json");
  REQUIRE(in.good());
  return json::parse(in);
}

template <class T = float>
tandem::Tensor tensor(const json& values, tandem::Shape shape) {
  std::vector<T> v;
  for (const auto& x : values) {
    if (x.is_array())
      for (const auto& e : x) v.push_back(e.get<T>());
    else
      v.push_back(x.get<T>());
  }
  return tandem::Tensor::from(std::move(shape), std::span<const T>(v));
}

// Largest |a − b| over the tensor, relative to the largest |b|.
double relative_difference(const tandem::Tensor& a, const json& b) {
  const tandem::Tensor a64 = a.cast(tandem::DType::F64);
  const auto av = a64.values<double>();
  REQUIRE(av.size() == b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(av[i] - b[i].get<double>()));
    scale = std::max(scale, std::abs(b[i].get<double>()));
  }
  return diff / scale;
}

struct Built {
  std::unique_ptr<tandem::Model> model;
  tandem::LayerRef dense, residual, head;
};

Built build_model(const json& ref, tandem::DType dtype = tandem::DType::F32, tandem::distribute::StrategyPtr strategy = nullptr) {
  Built b{nullptr, tl::Dense(16, "relu"), tandem::LayerRef(std::make_shared<ResidualDense>(16, "residual")),
          tandem::LayerRef(std::make_shared<ScaledHead>(3, "head"))};
  const Symbol x = tandem::Input({8}, dtype);
  b.model = std::make_unique<tandem::Model>(x, b.head(b.residual(b.dense(x))));
  const json& w = ref["initial"];
  b.dense->set_weights({tensor<double>(w["dense/kernel"], {8, 16}), tensor<double>(w["dense/bias"], {16})});
  b.residual->set_weights({tensor<double>(w["residual/kernel"], {16, 16}), tensor<double>(w["residual/bias"], {16}), tensor<double>(w["residual/gate"], {16})});
  b.head->set_weights({tensor<double>(w["head/scale"], {3}), tensor<double>(w["head/kernel"], {16, 3}), tensor<double>(w["head/bias"], {3})});
  b.model->compile({.optimizer = tandem::optimizers::SGD(0.0625, {.momentum = 0.9}), .loss = "huber_delta_1", .strategy = strategy});
  return b;
}

}  // namespace

TEST_CASE("custom layers and a custom loss train as PyTorch does from the same weights") {
  const json ref = reference();
  Built b = build_model(ref);
  // The sublayer's weights are the head's, after its own.
  REQUIRE(b.head->weights().size() == 3);
  CHECK(b.head->weights()[0]->name() == "scale");
  CHECK(b.model->weights().size() == 8);
  CHECK(b.model->summary_string().find("ResidualDense") != std::string::npos);

  const tandem::Tensor x = tensor(ref["x"], {32, 8}), y = tensor(ref["y"], {32, 3});
  const tandem::History h = b.model->fit(x, y, {.epochs = 3, .batch_size = 16, .shuffle = false, .verbose = 0});
  for (int e = 0; e < 3; ++e)
    CHECK(h.history.at("loss")[std::size_t(e)] == doctest::Approx(ref["epoch_losses"][e].get<double>()).epsilon(1e-5));

  const std::vector<tandem::Tensor> got = b.model->get_weights();
  const char* names[] = {"dense/kernel", "dense/bias", "residual/kernel", "residual/bias", "residual/gate", "head/scale", "head/kernel", "head/bias"};
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(names[i]);
    CHECK(relative_difference(got[i], ref["final"][names[i]]) <= 1e-5);
  }
  json flat = json::array();
  for (const auto& row : ref["predictions"])
    for (const auto& v : row) flat.push_back(v);
  CHECK(relative_difference(b.model->predict(x), flat) <= 1e-5);
}

TEST_CASE("float64 end to end: the same model in float64 ends at PyTorch's float64 weights within 1e-12") {
  const json ref = reference();
  Built b = build_model(ref, tandem::DType::F64);
  for (const auto& w : b.model->weights()) CHECK(w->value().dtype() == tandem::DType::F64);
  CHECK(b.head->dtype() == tandem::DType::F64);
  const tandem::Tensor x = tensor<double>(ref["x"], {32, 8}), y = tensor<double>(ref["y"], {32, 3});
  const tandem::History h = b.model->fit(x, y, {.epochs = 3, .batch_size = 16, .shuffle = false, .verbose = 0});
  for (int e = 0; e < 3; ++e)
    CHECK(h.history.at("loss")[std::size_t(e)] == doctest::Approx(ref["epoch_losses"][e].get<double>()).epsilon(1e-12));
  const std::vector<tandem::Tensor> got = b.model->get_weights();
  const char* names[] = {"dense/kernel", "dense/bias", "residual/kernel", "residual/bias", "residual/gate", "head/scale", "head/kernel", "head/bias"};
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(names[i]);
    CHECK(got[i].dtype() == tandem::DType::F64);
    CHECK(relative_difference(got[i], ref["final"][names[i]]) <= 1e-12);
  }
  const tandem::Tensor p = b.model->predict(x);
  CHECK(p.dtype() == tandem::DType::F64);
  // Under Mirrored on 2 devices it ends at the same weights, to float64's precision.
  Built m = build_model(ref, tandem::DType::F64, tandem::distribute::Mirrored({"cpu:0", "cpu:1"}));
  m.model->fit(x, y, {.epochs = 3, .batch_size = 16, .shuffle = false, .verbose = 0});
  for (std::size_t i = 0; i < got.size(); ++i) {
    json flat = json::array();
    for (double v : got[i].values<double>()) flat.push_back(v);
    CHECK(relative_difference(m.model->get_weights()[i], flat) <= 1e-12);
  }
  // Saved and loaded, it stays float64 and predicts the same bits.
  const auto dir = scratch.fresh("f64");
  for (const char* file : {"model.keras", "model.h5"}) {
    INFO(file);
    b.model->save((dir / file).string());
    const auto loaded = tandem::load_model((dir / file).string());
    CHECK(loaded->weights()[0]->value().dtype() == tandem::DType::F64);
    const tandem::Tensor q = loaded->predict(x);
    REQUIRE(q.dtype() == tandem::DType::F64);
    CHECK(std::equal(p.values<double>().begin(), p.values<double>().end(), q.values<double>().begin()));
  }
}

TEST_CASE("a model with custom layers and a custom loss saves and loads with load_model") {
  const json ref = reference();
  Built b = build_model(ref);
  const tandem::Tensor x = tensor(ref["x"], {32, 8}), y = tensor(ref["y"], {32, 3});
  b.model->fit(x, y, {.epochs = 1, .batch_size = 16, .shuffle = false, .verbose = 0});
  const auto dir = scratch.fresh("save");
  for (const char* file : {"model.keras", "model.h5"}) {
    INFO(file);
    const std::string path = (dir / file).string();
    b.model->save(path);
    const std::unique_ptr<tandem::Model> loaded = tandem::load_model(path);
    const auto layers = loaded->layers();
    REQUIRE(layers.size() == 3);
    CHECK(layers[1]->class_name() == "ResidualDense");
    CHECK(layers[1]->name() == "residual");
    CHECK(layers[2]->class_name() == "ScaledHead");
    CHECK(layers[2]->config_json() == b.head->config_json());
    const tandem::Tensor p0 = b.model->predict(x), p1 = loaded->predict(x);
    CHECK(std::equal(p0.values<float>().begin(), p0.values<float>().end(), p1.values<float>().begin()));
    // The loss came back by its registered name, and the optimizer's momentum with the weights:
    // one more epoch on each ends at the same weights.
    CHECK(loaded->evaluate(x, y, {.verbose = 0}).at("loss") == doctest::Approx(b.model->evaluate(x, y, {.verbose = 0}).at("loss")));
  }
  const std::unique_ptr<tandem::Model> loaded = tandem::load_model((dir / "model.keras").string());
  b.model->fit(x, y, {.epochs = 1, .batch_size = 16, .shuffle = false, .verbose = 0});
  loaded->fit(x, y, {.epochs = 1, .batch_size = 16, .shuffle = false, .verbose = 0});
  const auto w0 = b.model->get_weights(), w1 = loaded->get_weights();
  REQUIRE(w0.size() == w1.size());
  for (std::size_t i = 0; i < w0.size(); ++i)
    CHECK(std::equal(w0[i].values<float>().begin(), w0[i].values<float>().end(), w1[i].values<float>().begin()));
}

TEST_CASE("ops on a model's symbols build a functional model") {
  // y = relu(x) - 0.5 * x, summed over the features: a residual-style graph with no layer class.
  const Symbol x = tandem::Input({3});
  const Symbol y = ops::sum(ops::maximum(x, ops::full_like(x, 0.0)) - 0.5 * x, {-1}, true);
  tandem::Model model(x, y);
  const float xs[] = {1, -2, 3, -1, 0.5f, 4};
  const tandem::Tensor p = model.predict(tandem::Tensor::from({2, 3}, std::span<const float>(xs)));
  CHECK(p.shape() == tandem::Shape{2, 1});
  CHECK(p.values<float>()[0] == doctest::Approx((1 + 0 + 3) - 0.5 * (1 - 2 + 3)));
  CHECK(p.values<float>()[1] == doctest::Approx((0 + 0.5 + 4) - 0.5 * (-1 + 0.5 + 4)));
  const auto dir = scratch.fresh("ops");
  CHECK_THROWS_WITH_AS(model.save((dir / "m.keras").string()), doctest::Contains("cannot be saved with Model::save"), tandem::ValueError);
}

TEST_CASE("custom layers: clear errors") {
  const Symbol x = tandem::Input({4});
  SUBCASE("a weight used as a symbol outside call") {
    auto dense = tl::Dense(2);
    dense(x);
    CHECK_THROWS_WITH_AS(Symbol(dense->weights()[0]), doctest::Contains("outside a Layer's call()"), tandem::ValueError);
  }
  SUBCASE("a layer without call") {
    class Empty : public tandem::Layer {
     public:
      Empty() : Layer("empty", "") {}
      std::string class_name() const override { return "Empty"; }
    };
    auto layer = std::make_shared<Empty>();
    CHECK_THROWS_WITH_AS((*layer)(x), doctest::Contains("must override call(inputs, training)"), tandem::ValueError);
  }
  SUBCASE("a symbol kept past its call") {
    struct Keeper : tandem::Layer {
      Keeper() : Layer("keeper", "") {}
      std::string class_name() const override { return "Keeper"; }
      Symbol kept;
      Symbol call(const std::vector<Symbol>& in, bool) override {
        if (kept.node()) return in[0] + kept;
        kept = in[0];
        return in[0];
      }
    };
    auto layer = std::make_shared<Keeper>();
    (*layer)(x);
    CHECK_THROWS_WITH_AS((*layer)(x), doctest::Contains("used after that call ended"), tandem::ValueError);
  }
  SUBCASE("a model symbol inside call") {
    struct Mixer : tandem::Layer {
      explicit Mixer(Symbol outside) : Layer("mixer", ""), outside(std::move(outside)) {}
      std::string class_name() const override { return "Mixer"; }
      Symbol outside;
      Symbol call(const std::vector<Symbol>& in, bool) override { return in[0] + outside; }
    };
    auto layer = std::make_shared<Mixer>(x);
    CHECK_THROWS_WITH_AS((*layer)(x), doctest::Contains("mixes symbols of Mixer"), tandem::ValueError);
  }
  SUBCASE("shape errors name the layer and the op") {
    struct Bad : tandem::Layer {
      Bad() : Layer("bad", "") {}
      std::string class_name() const override { return "Bad"; }
      Symbol call(const std::vector<Symbol>& in, bool) override { return ops::matmul(in[0], in[0]); }
    };
    auto layer = std::make_shared<Bad>();
    CHECK_THROWS_WITH_AS((*layer)(x), doctest::Contains("Bad \"bad"), tandem::ShapeError);
  }
  SUBCASE("a loss that does not return per-sample values") {
    static const tandem::LossPtr scalar_loss =
        tandem::losses::register_loss("scalar_loss", [](const Symbol& t, const Symbol& p) { return ops::mean(p - t); });
    tandem::Model model(x, tl::Dense(1)(x));
    model.compile({.optimizer = "sgd", .loss = scalar_loss});
    const float xs[] = {1, 2, 3, 4}, ys[] = {1};
    CHECK_THROWS_WITH_AS(model.fit(tandem::Tensor::from({1, 4}, std::span<const float>(xs)), tandem::Tensor::from({1, 1}, std::span<const float>(ys)),
                                   {.verbose = 0}),
                         doctest::Contains("loss \"scalar_loss\": the function must return per-sample float losses"), tandem::ShapeError);
  }
  SUBCASE("a layer without get_config cannot be saved whole") {
    struct NoConfig : tandem::Layer {
      NoConfig() : Layer("no_config", "") {}
      std::string class_name() const override { return "NoConfig"; }
      Symbol call(const std::vector<Symbol>& in, bool) override { return ops::relu(in[0]); }
    };
    tandem::Model model(x, (*std::make_shared<NoConfig>())(x));
    const auto dir = scratch.fresh("noconfig");
    CHECK_THROWS_WITH_AS(model.save((dir / "m.keras").string()), doctest::Contains("override get_config and register the class"),
                         tandem::ValueError);
  }
  SUBCASE("an unregistered class on load names the class") {
    class Unregistered : public ResidualDense {
     public:
      Unregistered() : ResidualDense(4, "") {}
      std::string class_name() const override { return "Unregistered"; }
    };
    tandem::Model model(x, (*std::make_shared<Unregistered>())(x));
    const auto dir = scratch.fresh("unregistered");
    model.save((dir / "m.keras").string());
    CHECK_THROWS_WITH_AS(tandem::load_model((dir / "m.keras").string()), doctest::Contains("unknown layer class \"Unregistered\""),
                         tandem::ValueError);
  }
}

namespace {
// The model's prediction for x: a (2, 3) batch.
std::vector<float> predict_with(const std::function<Symbol(const Symbol&)>& f, const std::vector<float>& xs,
                                tandem::Shape sample = {3}) {
  const Symbol x = tandem::Input(sample);
  tandem::Model model(x, f(x));
  const tandem::Tensor p = model.predict(tandem::Tensor::from(sample.with_batch(2), std::span<const float>(xs)));
  return {p.values<float>().begin(), p.values<float>().end()};
}
}  // namespace

TEST_CASE("public ops compute what their names say") {
  const std::vector<float> xs{0.5f, -1.5f, 2.0f, -0.25f, 1.0f, 3.0f};
  struct Elementwise {
    const char* name;
    std::function<Symbol(const Symbol&)> op;
    double (*f)(double);
  };
  const Elementwise cases[] = {
      {"exp", [](const Symbol& x) { return ops::exp(x); }, [](double x) { return std::exp(x); }},
      {"log", [](const Symbol& x) { return ops::log(ops::abs(x)); }, [](double x) { return std::log(std::abs(x)); }},
      {"sqrt", [](const Symbol& x) { return ops::sqrt(ops::abs(x)); }, [](double x) { return std::sqrt(std::abs(x)); }},
      {"sign", [](const Symbol& x) { return ops::sign(x); }, [](double x) { return x > 0 ? 1.0 : -1.0; }},
      {"relu", [](const Symbol& x) { return ops::relu(x); }, [](double x) { return std::max(x, 0.0); }},
      {"sigmoid", [](const Symbol& x) { return ops::sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"gelu", [](const Symbol& x) { return ops::gelu(x); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"negative", [](const Symbol& x) { return -x; }, [](double x) { return -x; }},
      {"c - x", [](const Symbol& x) { return 2.0 - x; }, [](double x) { return 2.0 - x; }},
      {"c / x", [](const Symbol& x) { return 2.0 / x; }, [](double x) { return 2.0 / x; }},
      {"x / x²", [](const Symbol& x) { return x / ops::square(x); }, [](double x) { return 1.0 / x; }},
      {"minimum", [](const Symbol& x) { return ops::minimum(x, ops::full_like(x, 1.0)); }, [](double x) { return std::min(x, 1.0); }},
      {"greater", [](const Symbol& x) { return ops::greater(x, ops::full_like(x, 1.0)); }, [](double x) { return x > 1.0 ? 1.0 : 0.0; }},
      {"not_equal", [](const Symbol& x) { return ops::not_equal(x, ops::full_like(x, 1.0)); }, [](double x) { return x != 1.0 ? 1.0 : 0.0; }},
      {"cast twice", [](const Symbol& x) { return ops::cast(ops::cast(x, tandem::DType::F64), tandem::DType::F32); }, [](double x) { return x; }},
  };
  for (const Elementwise& c : cases) {
    INFO(c.name);
    const std::vector<float> y = predict_with(c.op, xs);
    REQUIRE(y.size() == xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) CHECK(y[i] == doctest::Approx(c.f(xs[i])).epsilon(1e-6));
  }
  SUBCASE("softmax, log_softmax and max over a row") {
    const std::vector<float> s = predict_with([](const Symbol& x) { return ops::softmax(x); }, xs);
    const std::vector<float> l = predict_with([](const Symbol& x) { return ops::log_softmax(x); }, xs);
    const std::vector<float> m = predict_with([](const Symbol& x) { return ops::max(x, {1}); }, xs);
    for (int r = 0; r < 2; ++r) {
      double z = 0;
      for (int j = 0; j < 3; ++j) z += std::exp(xs[std::size_t(3 * r + j)]);
      for (int j = 0; j < 3; ++j) {
        const std::size_t i = std::size_t(3 * r + j);
        CHECK(s[i] == doctest::Approx(std::exp(xs[i]) / z).epsilon(1e-6));
        CHECK(l[i] == doctest::Approx(xs[i] - std::log(z)).epsilon(1e-6));
      }
    }
    CHECK(m == std::vector<float>{2.0f, 3.0f});
  }
  SUBCASE("shapes: reshape, transpose, concatenate, slice") {
    // (2, 3) rows -> (2, 3, 1) -> transposed (2, 1, 3) -> flattened back: the same values.
    CHECK(predict_with([](const Symbol& x) { return ops::reshape(ops::transpose(ops::reshape(x, {-1, 3, 1}), {0, 2, 1}), {-1, 3}); }, xs) == xs);
    CHECK(predict_with([](const Symbol& x) { return ops::concatenate({ops::slice(x, 1, 2, 1), ops::slice(x, -1, 0, 2)}); }, xs) ==
          std::vector<float>{2.0f, 0.5f, -1.5f, 3.0f, -0.25f, 1.0f});
  }
  SUBCASE("batched matmul and sum") {
    // Each sample (3,) as a (3, 1) column times its (1, 3) row: the outer product, summed.
    const auto y = predict_with(
        [](const Symbol& x) { return ops::sum(ops::matmul(ops::reshape(x, {-1, 3, 1}), ops::reshape(x, {-1, 1, 3})), {1, 2}); }, xs);
    const double s0 = 0.5 - 1.5 + 2.0, s1 = -0.25 + 1.0 + 3.0;
    CHECK(y[0] == doctest::Approx(s0 * s0));
    CHECK(y[1] == doctest::Approx(s1 * s1));
  }
  SUBCASE("take and one_hot on integer ids") {
    const Symbol ids = tandem::Input({2}, tandem::DType::I64);
    tandem::Model model(ids, ops::sum(ops::one_hot(ids, 4), {1}));
    const int64_t raw[] = {3, 1, 0, 0};
    const tandem::Tensor p = model.predict(tandem::Tensor::from({2, 2}, std::span<const int64_t>(raw)));
    CHECK(std::vector<float>(p.values<float>().begin(), p.values<float>().end()) == std::vector<float>{0, 1, 0, 1, 2, 0, 0, 0});
  }
  SUBCASE("reshape errors name the shapes") {
    CHECK_THROWS_WITH_AS(predict_with([](const Symbol& x) { return ops::reshape(x, {-1, 5}); }, xs),
                         doctest::Contains("cannot reshape (1, 3) (3 elements) into (-1, 5)"), tandem::ValueError);
  }
}

TEST_CASE("a custom layer works in a Sequential model, which saves and loads whole") {
  const json ref = reference();
  tandem::Sequential model({tl::InputLayer({8}), tl::Dense(16, "relu"), tandem::LayerRef(std::make_shared<ResidualDense>(16, "res_seq")),
                            tandem::LayerRef(std::make_shared<ScaledHead>(3, "head_seq"))});
  model.compile({.optimizer = tandem::optimizers::SGD(0.0625, {.momentum = 0.9}), .loss = "huber_delta_1"});
  const tandem::Tensor x = tensor(ref["x"], {32, 8}), y = tensor(ref["y"], {32, 3});
  const auto before = model.evaluate(x, y, {.verbose = 0}).at("loss");
  model.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0});
  CHECK(model.evaluate(x, y, {.verbose = 0}).at("loss") < before);
  const auto dir = scratch.fresh("sequential");
  model.save((dir / "seq.keras").string());
  const auto loaded = tandem::load_model((dir / "seq.keras").string());
  CHECK(loaded->layers()[1]->class_name() == "ResidualDense");
  const tandem::Tensor p0 = model.predict(x), p1 = loaded->predict(x);
  CHECK(std::equal(p0.values<float>().begin(), p0.values<float>().end(), p1.values<float>().begin()));
}

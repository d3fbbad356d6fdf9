// Subtract, Average, Maximum, Minimum and Dot against Keras 3's outputs and configs
// (tests/data/training_refs.json, made by tests/data/make_training_refs.py) and in a Keras-made
// model file ("merge", tests/data/keras/, made by tests/data/make_keras_files.py); the Lambda layer
// of a registered C++ function saved and loaded, and its errors.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "layers/config.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
namespace ops = tandem::ops;
namespace tl = tandem::layers;
using nlohmann::json;
using tandem::Shape;
using tandem::Tensor;

namespace {
const ScratchRoot scratch("test_merge_lambda");

json load(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  return json::parse(in);
}

// {"shape", "values"} as a float32 tensor.
Tensor tensor(const json& t) {
  std::vector<float> v;
  for (const auto& x : t["values"]) v.push_back(x.get<float>());
  return Tensor::from(Shape(t["shape"].get<std::vector<int64_t>>()), std::span<const float>(v));
}

double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double d = 0;
  for (int64_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a.item(i) - b.item(i)));
  return d;
}

tandem::LayerRef layer_for(const std::string& name) {
  if (name == "subtract") return tl::Subtract();
  if (name == "average") return tl::Average();
  if (name == "maximum" || name == "maximum_masked" || name == "maximum_one_masked") return tl::Maximum();
  if (name == "minimum" || name == "minimum_masked") return tl::Minimum();
  if (name == "dot_vectors") return tl::Dot({1});
  if (name == "dot_normalize") return tl::Dot({1}, {.normalize = true});
  if (name == "dot_last") return tl::Dot({2, 2});
  if (name == "dot_mixed") return tl::Dot({1, 2});
  if (name == "dot_negative") return tl::Dot({-1}, {.normalize = true});
  FAIL("training_refs.json has a merge case \"" << name << "\" the test does not know");
  return tl::Add();
}
}  // namespace

TEST_CASE("merge layers: outputs equal Keras's (Maximum and Minimum with masked inputs too); configs are Keras's and read back") {
  const json refs = load(fs::path(TANDEM_TEST_DATA) / "training_refs.json");
  for (const json& c : refs["merge"]["cases"]) {
    const std::string name = c["name"];
    SUBCASE(name.c_str()) {
      std::vector<tandem::Symbol> inputs, merged;
      std::vector<Tensor> xs;
      const std::vector<int> masked = c.value("masked", std::vector<int>{});  // inputs behind Masking(0.0)
      for (const json& in : c["inputs"]) {
        xs.push_back(tensor(in));
        inputs.push_back(tandem::Input(xs.back().shape().without_batch()));
        const bool mask = std::find(masked.begin(), masked.end(), static_cast<int>(merged.size())) != masked.end();
        merged.push_back(mask ? tl::Masking(0.0)(inputs.back()) : inputs.back());
      }
      const tandem::LayerRef layer = layer_for(name);
      tandem::Model model(inputs, {layer(merged)});
      const Tensor y = model.predict(xs).at(0);
      CHECK(max_difference(y, tensor(c["output"])) <= 1e-5);
      // Keras's config but the automatic name (Keras's counter differs from this process's).
      json config = json::parse(layer->config_json());
      json keras = c["config"];
      config.erase("name"), keras.erase("name");
      CHECK(config == keras);
      CHECK(tl::layer_from_config(c["class_name"], json::parse(layer->config_json()))->config_json() == layer->config_json());
    }
  }
}

TEST_CASE("merge layers: wrong inputs are refused with the layer's name") {
  const auto a = tandem::Input({3, 4}), b = tandem::Input({3, 4}), c = tandem::Input({3, 4}), v = tandem::Input({5});
  CHECK_THROWS_WITH_AS(tl::Subtract("sub")({a, b, c}), doctest::Contains("Subtract \"sub\": a Subtract layer takes exactly 2 inputs, got 3"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Dot({1}, {.name = "d"})({a, v}), doctest::Contains("Dot \"d\": incompatible input shapes"), tandem::ShapeError);
  CHECK_THROWS_WITH_AS(tl::Dot({0}, {.name = "d0"})({a, b}), doctest::Contains("the batch axis cannot be reduced"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Dot({1}, {.name = "d3"})({a, b, c}), doctest::Contains("exactly 2 inputs"), tandem::ValueError);
  CHECK_THROWS_AS(tl::Dot({1, 2, 3}), tandem::ValueError);
}

TEST_CASE("merge layers: Keras's model file with every merge loads and predicts as Keras did, and written back reads again") {
  const fs::path data = fs::path(TANDEM_TEST_DATA) / "keras";
  const json m = load(data / "models.json").at("merge");
  const std::vector<Tensor> x{tensor(m["x"][0]), tensor(m["x"][1])};
  const Tensor y = tensor(m["y"]);
  for (const std::string ext : {".keras", ".h5"}) {
    INFO("merge" << ext);
    const std::unique_ptr<tandem::Model> model = tandem::load_model((data / ("merge" + ext)).string());
    CHECK(max_difference(model->predict(x).at(0), y) <= 1e-5);
    const std::string again = (scratch.fresh("merge" + ext) / ("again" + ext)).string();
    model->save(again);
    CHECK(max_difference(tandem::load_model(again)->predict(x).at(0), y) <= 1e-5);
  }
}

TEST_CASE("Lambda: a registered C++ function; the model saves its name and loads in Tandem") {
  tl::register_lambda("test_scaled_square", [](const std::vector<tandem::Symbol>& in) { return in[0] * in[0] * 0.5 + 1.0; });
  tl::register_lambda("test_pair_difference", [](const std::vector<tandem::Symbol>& in) { return in[0] - in[1]; });
  const auto x = tandem::Input({4}), z = tandem::Input({4});
  const auto h = tl::Lambda("test_scaled_square", {.output_shape = Shape{4}, .name = "square"})(x);
  const auto d = tl::Lambda("test_pair_difference")({h, z});
  tandem::Model model({x, z}, {tl::Dense(2)(d)});
  json config;
  for (const auto& layer : model.layers())
    if (layer->name() == "square") config = json::parse(layer->config_json());
  CHECK(config["function"] == json::parse(R"({"module": "builtins", "class_name": "function", "config": "test_scaled_square",
        "registered_name": "function"})"));
  CHECK(config["output_shape"] == json::array({4}));
  CHECK(config["arguments"] == json::object());
  std::vector<float> xs(12), zs(12);
  for (std::size_t i = 0; i < 12; ++i) xs[i] = 0.25f * float(i) - 1.0f, zs[i] = 0.1f * float(i);
  const std::vector<Tensor> in{Tensor::from({3, 4}, std::span<const float>(xs)), Tensor::from({3, 4}, std::span<const float>(zs))};
  const Tensor before = model.predict(in).at(0);
  for (const char* file : {"lambda.keras", "lambda.h5"}) {
    INFO(file);
    const std::string path = (scratch.fresh(file) / file).string();
    model.save(path);
    CHECK(max_difference(tandem::load_model(path)->predict(in).at(0), before) == 0);
  }
  // The function's value: Dense of (x²/2 + 1 − z) with the model's weights.
  const std::vector<Tensor> w = model.get_weights();
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 2; ++j) {
      double v = w[1].item(j);
      for (int64_t k = 0; k < 4; ++k) {
        const double xv = xs[static_cast<std::size_t>(r * 4 + k)], zv = zs[static_cast<std::size_t>(r * 4 + k)];
        v += (xv * xv * 0.5 + 1.0 - zv) * w[0].item(k * 2 + j);
      }
      CHECK(before.item(r * 2 + j) == doctest::Approx(v).epsilon(1e-5));
    }
}

TEST_CASE("Lambda: an unregistered name, a Python lambda and a wrong output_shape are clear errors") {
  CHECK_THROWS_WITH_AS(tl::Lambda("test_never_registered"), doctest::Contains("no function is registered as \"test_never_registered\""),
                       tandem::ValueError);
  const json unregistered = json::parse(R"({"name": "lam", "trainable": true, "dtype": "float32",
      "function": {"module": "builtins", "class_name": "function", "config": "test_missing_fn", "registered_name": "function"},
      "arguments": {}})");
  CHECK_THROWS_WITH_AS(tl::layer_from_config("Lambda", unregistered), doctest::Contains("register_lambda(\"test_missing_fn\""), tandem::ValueError);
  // What Keras writes for keras.layers.Lambda(lambda x: x + 1): Python bytecode.
  const json python = json::parse(R"({"name": "lambda", "trainable": true, "dtype": "float32",
      "function": {"class_name": "__lambda__", "config": {"code": "4wEAAAAAAAAAAAAAAAEAAAADAAAA", "defaults": null, "closure": null}},
      "arguments": {}})");
  CHECK_THROWS_WITH_AS(tl::layer_from_config("Lambda", python), doctest::Contains("Python lambda (Python bytecode)"), tandem::ValueError);
  tl::register_lambda("test_identity", [](const std::vector<tandem::Symbol>& in) { return in[0]; });
  const auto x = tandem::Input({4});
  CHECK_THROWS_WITH_AS(tl::Lambda("test_identity", {.output_shape = Shape{3}, .name = "shaped"})(x),
                       doctest::Contains("output_shape is (None, 3)"), tandem::ShapeError);
  CHECK_THROWS_AS(tl::register_lambda("", [](const std::vector<tandem::Symbol>& in) { return in[0]; }), tandem::ValueError);
}

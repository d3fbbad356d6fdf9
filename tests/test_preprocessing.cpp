// Preprocessing layers (Rescaling, Normalization, Resizing, UpSampling2D, CategoryEncoding) against
// Keras 3 on JAX (tests/data/preprocessing_refs.json, made by tests/data/make_preprocessing_refs.py):
// outputs, configs written back as Keras writes them, and Normalization.adapt's statistics; float64
// finite-difference checks of resize2d and its adjoint; Keras-made model files with these layers
// (tests/data/keras/, made by tests/data/make_keras_files.py) loaded and predicting as Keras did;
// Tandem's own files round-tripping; and the errors for bad arguments.
#include <doctest/doctest.h>
#include <tandem/tandem.h>
#include <tandem/text.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "layers/config.h"
#include "ops/resize.h"
#include "scratch_dir.h"
#include "tests/gradient_check.h"
#include "lower_with.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
using gradcheck::GradCheck;
using gradcheck::Outcome;
using nlohmann::json;
using tandem::DType;
using tandem::Shape;
using tandem::Tensor;
namespace ops = tandem::ops;

namespace {

constexpr double kTolerance = 1e-5;

json read_json(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p);
  return json::parse(in);
}

DType dtype_of(const std::string& name) {
  if (name == "int32") return DType::I32;
  if (name == "int64") return DType::I64;
  if (name == "float64") return DType::F64;
  return DType::F32;
}

Tensor tensor_of(const json& t, DType dtype) {
  const std::vector<double> v = t.at("values").get<std::vector<double>>();
  return Tensor::from(Shape(t.at("shape").get<std::vector<int64_t>>()), std::span<const double>(v)).cast(dtype);
}
Tensor tensor_of(const json& t) { return tensor_of(t, t.contains("dtype") ? dtype_of(t.at("dtype")) : DType::F32); }

double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const Tensor x = a.cast(DType::F64), y = b.cast(DType::F64);
  double d = 0;
  for (int64_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x.values<double>()[i] - y.values<double>()[i]));
  return d;
}

const json& refs() {
  static const json j = read_json(fs::path(TANDEM_TEST_DATA) / "preprocessing_refs.json");
  return j;
}
const json& entry(const std::string& label) {
  for (const json& e : refs().at("layers"))
    if (e.at("label") == label) return e;
  FAIL("no case " << label);
  return refs();
}

std::shared_ptr<tandem::Layer> layer_of(const json& e) {
  return tl::layer_from_config(e.at("class_name").get<std::string>(), tl::Json::parse(e.at("config").dump()));
}

// The layer alone in a model on inputs like x; its prediction on x.
Tensor predict_alone(const std::shared_ptr<tandem::Layer>& layer, const Tensor& x) {
  const tandem::Symbol in = tandem::Input(x.shape().without_batch(), x.dtype());
  tandem::Model model(in, tandem::LayerRef(layer)(in));
  return model.predict(x);
}

const ScratchRoot scratch_root("tandem_preprocessing");
fs::path scratch(const std::string& name) {
  static const fs::path dir = scratch_root.fresh("files");
  return dir / name;
}

}  // namespace

TEST_CASE("preprocessing: every layer gives Keras 3's outputs, writes Keras's config, and adapts as Keras does") {
  REQUIRE(refs().at("layers").size() >= 25);
  for (const json& e : refs().at("layers")) {
    const std::string label = e.at("label");
    INFO("case " << label << " (Keras " << refs().at("keras_version").get<std::string>() << ", " << refs().at("backend").get<std::string>() << ")");
    std::shared_ptr<tandem::Layer> layer = layer_of(e);
    const Tensor x = tensor_of(e.at("x"));
    if (e.contains("adapt")) {
      tl::NormalizationRef(layer).adapt(tensor_of(e.at("adapt")));
      CHECK(max_difference(layer->weights().at(0)->value(), tensor_of(e.at("mean"), DType::F32)) <= kTolerance);
      CHECK(max_difference(layer->weights().at(1)->value(), tensor_of(e.at("variance"), DType::F32)) <= kTolerance);
    }
    const Tensor y = predict_alone(layer, x);
    CHECK(y.dtype() == DType::F32);
    CHECK(max_difference(y, tensor_of(e.at("y"), DType::F32)) <= kTolerance);
    CHECK(json::parse(layer->config_json()) == e.at("config"));
  }
}

TEST_CASE("preprocessing: Normalization.adapt on a Dataset (its row map applied) gives Keras's statistics") {
  const json& e = entry("normalization_adapt");
  const Tensor data = tensor_of(e.at("adapt"));
  // The same rows as float64 in a dataset whose map casts them to float32.
  const tandem::Dataset ds = tandem::Dataset(data.cast(DType::F64), Tensor(Shape{data.shape()[0]}, DType::I32)).map_x(tandem::datasets::cast(DType::F32));
  tl::NormalizationRef norm = tl::Normalization();
  norm.adapt(ds);
  CHECK(max_difference(norm->weights().at(0)->value(), tensor_of(e.at("mean"), DType::F32)) <= kTolerance);
  CHECK(max_difference(norm->weights().at(1)->value(), tensor_of(e.at("variance"), DType::F32)) <= kTolerance);
  CHECK(norm->weights().at(2)->value().dtype() == DType::I32);  // count, as Keras on JAX keeps it
  CHECK(max_difference(predict_alone(norm.ptr(), tensor_of(e.at("x"))), tensor_of(e.at("y"), DType::F32)) <= kTolerance);
}

TEST_CASE("preprocessing: resize2d and its adjoint, float64 finite differences") {
  for (const auto method : {ops::ResizeMethod::bilinear, ops::ResizeMethod::nearest}) {
    const char* name = method == ops::ResizeMethod::bilinear ? "bilinear" : "nearest";
    for (const auto& [in, out] : std::vector<std::pair<Shape, Shape>>{{{2, 3, 4, 2}, {7, 9}}, {{1, 8, 7, 3}, {3, 4}}, {{2, 2, 9, 1}, {5, 3}}, {{1, 1, 4, 2}, {3, 4}}}) {
      INFO(name << " " << in.str() << " -> " << out.str());
      GradCheck c;
      const Outcome o = c.check(ops::resize2d(c.g, c.uniform(in), out[0], out[1], method), "resize2d");
      CHECK(o.y.size() == static_cast<std::size_t>(in[0] * out[0] * out[1] * in[3]));
      GradCheck back;
      back.check(ops::resize2d_grad(back.g, back.uniform({in[0], out[0], out[1], in[3]}), in[1], in[2], method), "resize2d_grad");
    }
  }
}

TEST_CASE("preprocessing: resize2d's sampling positions (closed form)") {
  // Nearest: floor((o + 0.5) · in / out); a whole factor repeats each pixel (UpSampling2D).
  const ops::ResizeAxis up = ops::resize_axis(3, 6, ops::ResizeMethod::nearest);
  CHECK(up.index == std::vector<int64_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  const ops::ResizeAxis down = ops::resize_axis(7, 3, ops::ResizeMethod::nearest);
  CHECK(down.index == std::vector<int64_t>{1, 1, 3, 3, 5, 5});
  // Bilinear 2 -> 4: samples −0.25 (clamped), 0.25, 0.75, 1.25 (clamped).
  const ops::ResizeAxis b = ops::resize_axis(2, 4, ops::ResizeMethod::bilinear);
  CHECK(b.index == std::vector<int64_t>{0, 0, 0, 1, 0, 1, 1, 1});
  CHECK(b.weight == std::vector<double>{1, 0, 0.75, 0.25, 0.25, 0.75, 1, 0});
  // The reverse lists: input 0 is read by outputs 0, 1, 2 with weights 1, 0.75, 0.25.
  CHECK(b.start == std::vector<int64_t>{0, 3, 6});
  CHECK(b.source == std::vector<int64_t>{0, 1, 2, 1, 2, 3});
  CHECK(b.share == std::vector<double>{1, 0.75, 0.25, 0.25, 0.75, 1});
}

TEST_CASE("preprocessing: a model with Rescaling and an adapted Normalization saves and loads whole, both formats") {
  std::vector<float> pixels(6 * 4);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>((i * 37) % 256);
  const Tensor x = Tensor::from({6, 4}, std::span<const float>(pixels)).cast(DType::I32);
  tl::NormalizationRef norm = tl::Normalization();
  norm.adapt(Tensor::from({6, 4}, std::span<const float>(pixels)).cast(DType::F64));
  const tandem::Symbol in = tandem::Input({4}, DType::I32);
  const tandem::Symbol h = norm(tl::Rescaling(1 / 255.0)(in));
  tandem::Model model(in, tl::Dense(2)(h));
  // Normalization sees pixels / 255: its statistics, adapted on raw pixels, are 255 times too large,
  // which the test does not mind; what matters is that they travel with the model.
  const Tensor before = model.predict(x);
  for (const char* ext : {".keras", ".h5"}) {
    INFO(ext);
    const fs::path file = scratch(std::string("rescale_norm") + ext);
    model.save(file.string());
    std::unique_ptr<tandem::Model> loaded = tandem::load_model(file.string());
    CHECK(max_difference(loaded->predict(x), before) == 0.0);
    bool found = false;
    for (const auto& layer : loaded->layers())
      if (layer->class_name() == "Normalization") {
        CHECK(max_difference(layer->weights().at(0)->value(), norm->weights().at(0)->value()) == 0.0);
        CHECK(max_difference(layer->weights().at(1)->value(), norm->weights().at(1)->value()) == 0.0);
        found = true;
      }
    CHECK(found);
  }
}

TEST_CASE("preprocessing: Keras-made models with the preprocessing layers load and predict as Keras did") {
  const fs::path dir = fs::path(TANDEM_TEST_DATA) / "keras";
  const json models = read_json(dir / "models.json");
  // prep_lookup's adapted IntegerLookup keeps its vocabulary in the archive's assets, as Keras
  // writes an adapted lookup layer; Keras's legacy .h5 file has no place for it.
  for (const std::string name : {"prep_image", "prep_norm", "prep_encode", "prep_lookup"}) {
    const json& m = models.at(name);
    const Tensor x = tensor_of(m.at("x"), name == "prep_norm" ? DType::F32 : name == "prep_lookup" ? DType::I64 : DType::I32);
    for (const std::string ext : {".keras", ".h5"}) {
      INFO(name << ext);
      if (name == "prep_lookup" && ext == ".h5") {  // the legacy file holds no assets: Keras's own load of it fails too
        CHECK_THROWS_WITH_AS(tandem::load_model((dir / (name + ext)).string()),
                             doctest::Contains("IntegerLookup \"integer_lookup_1\": has no vocabulary"), tandem::ValueError);
        continue;
      }
      std::unique_ptr<tandem::Model> model = tandem::load_model((dir / (name + ext)).string());
      CHECK(max_difference(model->predict(x), tensor_of(m.at("y"), DType::F32)) <= kTolerance);
    }
  }
}

TEST_CASE("preprocessing: bad arguments name the layer, the argument, what it accepts and what came") {
  CHECK_THROWS_WITH_AS(tl::Resizing(0, 4, {.name = "rs"}), doctest::Contains("Resizing \"rs\": height must be positive, got 0"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Resizing(4, 4, {.interpolation = "bicubic", .name = "rs"}),
                       doctest::Contains("interpolation must be \"bilinear\" or \"nearest\", got \"bicubic\""), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Resizing(4, 4, {.crop_to_aspect_ratio = true, .pad_to_aspect_ratio = true, .name = "rs"}),
                       doctest::Contains("only one of crop_to_aspect_ratio and pad_to_aspect_ratio"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::UpSampling2D({2, 0}, {.name = "up"}), doctest::Contains("UpSampling2D \"up\": size must be positive integers"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::CategoryEncoding(5, {.output_mode = "tf_idf", .name = "ce"}),
                       doctest::Contains("CategoryEncoding \"ce\": output_mode must be \"one_hot\", \"multi_hot\" or \"count\", got \"tf_idf\""),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::CategoryEncoding(0, {.name = "ce"}), doctest::Contains("num_tokens must be positive, got 0"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Normalization({.mean = {1.0}, .name = "n"}),
                       doctest::Contains("Normalization \"n\": mean and variance must be given together; got mean only"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Normalization({.mean = {1.0, 2.0}, .variance = {1.0}, .name = "n"}),
                       doctest::Contains("mean and variance must have the same shape; got mean (2,) and variance ()"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Normalization({.mean = {1.0}, .variance = {1.0}, .name = "n"}).adapt(Tensor(Shape{2, 3}, DType::F32)),
                       doctest::Contains("adapt() cannot change the mean and variance given to the layer"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Normalization({.axis = {0}, .name = "n"}).adapt(Tensor(Shape{2, 3}, DType::F32)),
                       doctest::Contains("Normalization \"n\": axis 0 is the batch axis"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::Normalization({.axis = {3}, .name = "n"}).adapt(Tensor(Shape{2, 3}, DType::F32)),
                       doctest::Contains("axis 3 is out of range"), tandem::ValueError);
  tl::NormalizationRef norm = tl::Normalization({.name = "n"});
  norm.adapt(Tensor(Shape{2, 3}, DType::F32));
  CHECK_THROWS_WITH_AS(norm.adapt(Tensor(Shape{2, 4}, DType::F32)), doctest::Contains("built for rows of shape (3,), adapt() got data of shape (2, 4)"),
                       tandem::ShapeError);
  CHECK_THROWS_WITH_AS(tl::NormalizationRef(tl::Dense(3).ptr()).adapt(Tensor(Shape{2, 3}, DType::F32)),
                       doctest::Contains("adapt() is for a Normalization layer"), tandem::ValueError);
  const tandem::Symbol ints = tandem::Input({4, 4, 1}, DType::I32);
  CHECK_THROWS_WITH_AS(tl::Resizing(2, 2, {.name = "rs"})(ints), doctest::Contains("Resizing \"rs\": expected float images, got int32"),
                       tandem::ValueError);
  const tandem::Symbol ids3 = tandem::Input({2, 3}, DType::I32);
  CHECK_THROWS_WITH_AS(tl::CategoryEncoding(4, {.name = "ce"})(ids3),
                       doctest::Contains("CategoryEncoding \"ce\": output_mode \"multi_hot\" expects ids of shape (batch, n), got (None, 2, 3)"),
                       tandem::ShapeError);
}

namespace {
Tensor ints(Shape shape, std::vector<int64_t> v) { return Tensor::from(std::move(shape), std::span<const int64_t>(v)); }
std::vector<double> values_of(const Tensor& t) {
  const Tensor d = t.cast(DType::F64);
  return {d.values<double>().begin(), d.values<double>().end()};
}
}  // namespace

TEST_CASE("preprocessing: IntegerLookup gives the indices and encodings of Keras's documented examples") {
  // keras/src/layers/preprocessing/integer_lookup.py's examples (Keras 3's IntegerLookup itself needs
  // TensorFlow, so these documented values are the reference).
  const std::vector<int64_t> vocab{12, 36, 1138, 42};
  const Tensor data = ints({2, 3}, {12, 1138, 42, 42, 1000, 36});
  SUBCASE("a given vocabulary; 1000 is out of it (index 0)") {
    const Tensor y = predict_alone(tl::IntegerLookup({.vocabulary = vocab}).ptr(), data);
    CHECK(y.dtype() == DType::I64);
    CHECK(values_of(y) == std::vector<double>{1, 3, 4, 4, 0, 2});
  }
  SUBCASE("adapt: by descending count, ties by descending value") {
    tl::IntegerLookupRef layer = tl::IntegerLookup();
    layer.adapt(data);
    CHECK(layer.get_vocabulary() == std::vector<int64_t>{-1, 42, 1138, 1000, 36, 12});
    CHECK(layer.vocabulary_size() == 6);
    CHECK(values_of(predict_alone(layer.ptr(), data)) == std::vector<double>{5, 2, 1, 1, 3, 4});
  }
  SUBCASE("two OOV indices: value mod 2") {
    const Tensor y = predict_alone(tl::IntegerLookup({.num_oov_indices = 2, .vocabulary = vocab}).ptr(), ints({2, 3}, {12, 1138, 42, 37, 1000, 36}));
    CHECK(values_of(y) == std::vector<double>{2, 4, 5, 1, 0, 3});
    const Tensor z = predict_alone(tl::IntegerLookup({.num_oov_indices = 4, .vocabulary = {10, 20, 30}}).ptr(),
                                   ints({6, 1}, {100, 300, 700, 1100, 1700, 2000}));
    CHECK(values_of(z) == std::vector<double>{0, 0, 0, 0, 0, 0});
  }
  SUBCASE("one_hot, multi_hot and count") {
    const Tensor one = predict_alone(tl::IntegerLookup({.vocabulary = vocab, .output_mode = "one_hot"}).ptr(), ints({5, 1}, {12, 36, 1138, 42, 7}));
    CHECK(one.shape() == Shape{5, 5});
    CHECK(values_of(one) == std::vector<double>{0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0});
    const Tensor rows = ints({2, 4}, {12, 1138, 42, 42, 42, 7, 36, 7});
    CHECK(values_of(predict_alone(tl::IntegerLookup({.vocabulary = vocab, .output_mode = "multi_hot"}).ptr(), rows)) ==
          std::vector<double>{0, 1, 0, 1, 1, 1, 0, 1, 0, 1});
    CHECK(values_of(predict_alone(tl::IntegerLookup({.vocabulary = vocab, .output_mode = "count"}).ptr(), rows)) ==
          std::vector<double>{0, 1, 0, 1, 2, 2, 0, 1, 0, 1});
  }
  SUBCASE("invert: indices back to values, -1 for an unknown one") {
    const Tensor y = predict_alone(tl::IntegerLookup({.vocabulary = vocab, .invert = true}).ptr(), ints({2, 3}, {1, 3, 4, 4, 0, 2}));
    CHECK(values_of(y) == std::vector<double>{12, 1138, 42, 42, -1, 36});
  }
  SUBCASE("a mask token: index 0, the OOV index 1, the vocabulary from 2; inverted, 0 gives the mask token") {
    tl::IntegerLookupRef layer = tl::IntegerLookup({.mask_token = 0, .vocabulary = vocab});
    CHECK(layer.get_vocabulary() == std::vector<int64_t>{0, -1, 12, 36, 1138, 42});
    CHECK(values_of(predict_alone(layer.ptr(), ints({1, 4}, {12, 0, 7, 42}))) == std::vector<double>{2, 0, 1, 5});
    const Tensor back = predict_alone(tl::IntegerLookup({.mask_token = 0, .vocabulary = vocab, .invert = true}).ptr(), ints({1, 4}, {2, 0, 1, 5}));
    CHECK(values_of(back) == std::vector<double>{12, 0, -1, 42});
  }
}

TEST_CASE("preprocessing: IntegerLookup writes Keras's config with its vocabulary, and a model with it saves and loads") {
  tl::IntegerLookupRef lookup = tl::IntegerLookup({.name = "ids"});
  lookup.adapt(ints({2, 3}, {12, 1138, 42, 42, 1000, 36}));
  const nlohmann::ordered_json config = nlohmann::ordered_json::parse(lookup->config_json());
  std::vector<std::string> keys;
  for (const auto& [key, value] : config.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"name", "trainable", "dtype", "invert", "max_tokens", "num_oov_indices", "oov_token", "mask_token",
                                         "output_mode", "sparse", "pad_to_max_tokens", "vocabulary_dtype", "idf_weights", "vocabulary",
                                         "vocabulary_size", "oov_method", "salt"});
  CHECK(config.at("vocabulary") == nlohmann::ordered_json::array({42, 1138, 1000, 36, 12}));
  CHECK(config.at("vocabulary_size") == 6);
  CHECK(config.at("max_tokens").is_null());
  const tandem::Symbol in = tandem::Input({3}, DType::I64);
  tandem::Model model(in, tl::Dense(2)(tl::IntegerLookup({.vocabulary = {42, 1138, 1000, 36, 12}, .output_mode = "multi_hot"})(lookup(in))));
  const Tensor x = ints({2, 3}, {12, 1138, 7, 42, 1000, 36});
  const Tensor before = model.predict(x);
  const fs::path file = scratch("lookup.keras");
  model.save(file.string());
  CHECK(max_difference(tandem::load_model(file.string())->predict(x), before) == 0.0);
}

TEST_CASE("preprocessing: IntegerLookup's bad arguments are refused as Keras refuses them") {
  CHECK_THROWS_WITH_AS(tl::IntegerLookup({.max_tokens = 1, .name = "l"}), doctest::Contains("IntegerLookup \"l\": max_tokens must be greater than 1"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::IntegerLookup({.vocabulary = {1, 2}, .invert = true, .output_mode = "count", .name = "l"}),
                       doctest::Contains("output_mode must be \"int\" when invert is true"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::IntegerLookup({.vocabulary = {3, 4, 3}, .name = "l"}), doctest::Contains("the vocabulary repeats 3"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::IntegerLookup({.mask_token = 0, .vocabulary = {3, 0}, .name = "l"}), doctest::Contains("holds the mask token 0"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::IntegerLookup({.max_tokens = 3, .vocabulary = {3, 4, 5}, .name = "l"}),
                       doctest::Contains("a vocabulary of 4 indices is larger than max_tokens 3"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tl::IntegerLookup({.vocabulary = {1, 2}, .name = "l"}).adapt(ints({1, 1}, {1})),
                       doctest::Contains("cannot adapt a layer given a vocabulary"), tandem::ValueError);
  const tandem::Symbol in = tandem::Input({3}, DType::I32);
  CHECK_THROWS_WITH_AS(tl::IntegerLookup({.name = "l"})(in), doctest::Contains("IntegerLookup \"l\": has no vocabulary"), tandem::ValueError);
}

TEST_CASE("preprocessing: text::StringLookup gives the indices of Keras's documented StringLookup examples, on the host") {
  // keras/src/layers/preprocessing/string_lookup.py's examples (Keras 3's StringLookup needs TensorFlow).
  const std::vector<std::string> vocab{"a", "b", "c", "d"};
  const std::vector<std::string> data{"a", "c", "d", "d", "z", "b"};
  const tandem::text::StringLookup given({.vocabulary = vocab});
  const Tensor ids = given(data, Shape{2, 3});
  CHECK(ids.shape() == Shape{2, 3});
  CHECK(values_of(ids) == std::vector<double>{1, 3, 4, 4, 0, 2});
  CHECK(given.decode(ids) == std::vector<std::string>{"a", "c", "d", "d", "[UNK]", "b"});

  tandem::text::StringLookup adapted;
  adapted.adapt(data);
  CHECK(adapted.get_vocabulary() == std::vector<std::string>{"[UNK]", "d", "z", "c", "b", "a"});
  CHECK(values_of(adapted(data)) == std::vector<double>{5, 3, 1, 1, 2, 4});

  // A mask token takes index 0 and moves the OOV index to 1.
  const tandem::text::StringLookup masked({.mask_token = "", .vocabulary = vocab});
  CHECK(values_of(masked(std::vector<std::string>{"", "a", "q"})) == std::vector<double>{0, 2, 1});
  CHECK(masked.decode(ints({3}, {0, 2, 9})) == std::vector<std::string>{"", "a", "[UNK]"});
}

TEST_CASE("preprocessing: text::StringLookup reads and writes Keras's StringLookup config and vocabulary.txt asset") {
  tandem::text::StringLookup lookup({.mask_token = "", .name = "words"});
  lookup.adapt(std::vector<std::string>{"b", "a", "b", "", "c", "[UNK]"});
  const nlohmann::ordered_json config = nlohmann::ordered_json::parse(lookup.config_json());
  CHECK(config.at("vocabulary") == nlohmann::ordered_json::array({"b", "c", "a"}));
  CHECK(config.at("vocabulary_size") == 5);
  CHECK(config.at("mask_token") == "");
  const tandem::text::StringLookup again = tandem::text::StringLookup::from_config(lookup.config_json());
  CHECK(again.get_vocabulary() == std::vector<std::string>{"", "[UNK]", "b", "c", "a"});
  // The asset file: one token per line, the special tokens first, as Keras's save_assets writes it.
  const fs::path file = scratch("vocabulary.txt");
  lookup.save_vocabulary(file.string());
  std::ifstream in(file);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "\n[UNK]\nb\nc\na");
  tandem::text::StringLookup loaded({.mask_token = ""});
  loaded.load_vocabulary(file.string());
  CHECK(loaded.get_vocabulary() == lookup.get_vocabulary());
  nlohmann::ordered_json bad = config;
  bad["output_mode"] = "one_hot";
  CHECK_THROWS_WITH_AS(tandem::text::StringLookup::from_config(bad.dump()),
                       doctest::Contains("StringLookup \"words\": config key \"output_mode\": expected \"int\""), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::text::StringLookup({.num_oov_indices = 2}), doctest::Contains("num_oov_indices must be 0 or 1"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(tandem::text::StringLookup({.num_oov_indices = 0, .vocabulary = {"a"}}).lookup("b"),
                       doctest::Contains("\"b\" is not in the vocabulary and num_oov_indices is 0"), tandem::ValueError);
}

TEST_CASE("preprocessing: resize2d and resize2d_grad are bitwise the same on 1 and 4 threads") {
  // Big enough that the rows are split between threads.
  const Shape in{8, 40, 50, 8}, out{8, 70, 30, 8};
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  auto draw = [&](const Shape& s) {
    std::vector<float> v(static_cast<std::size_t>(s.num_elements()));
    for (float& e : v) e = u(rng);
    return v;
  };
  const std::vector<float> x = draw(in), dy = draw(out);
  for (const auto method : {ops::ResizeMethod::bilinear, ops::ResizeMethod::nearest}) {
    std::vector<float> results[2][2];
    for (int r = 0; r < 2; ++r) {
      tandem::graph::Graph g;
      const tandem::graph::Value xv = g.placeholder("x", {in, DType::F32}), dv = g.placeholder("dy", {out, DType::F32});
      const std::vector<tandem::graph::Value> fetches{ops::resize2d(g, xv, out[1], out[2], method), ops::resize2d_grad(g, dv, in[1], in[2], method)};
      auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
      tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0", r == 0 ? 1 : 4)},
                                      [](int, int) -> void* { return nullptr; });
      exe.device(0).copy_in(exe.feed(0, "x"), x.data(), x.size() * sizeof(float));
      exe.device(0).copy_in(exe.feed(0, "dy"), dy.data(), dy.size() * sizeof(float));
      exe.run();
      for (int f = 0; f < 2; ++f) {
        const auto* p = static_cast<const float*>(exe.fetch(0, f));
        results[r][f].assign(p, p + g.type(fetches[static_cast<std::size_t>(f)]).shape.num_elements());
      }
    }
    CHECK(results[0][0] == results[1][0]);
    CHECK(results[0][1] == results[1][1]);
  }
}

TEST_CASE("preprocessing: Normalization's count loads whether Keras stored it as int32 (JAX) or int64 (TensorFlow)") {
  const json& e = refs().at("int64_count");
  tandem::Sequential model({tl::InputLayer({3}), tl::Normalization(), tl::Dense(2)});
  model.load_weights((fs::path(TANDEM_TEST_DATA) / "normalization_int64_count.weights.h5").string());
  CHECK(max_difference(model.predict(tensor_of(e.at("x"))), tensor_of(e.at("y"), DType::F32)) <= kTolerance);
}

namespace {
const json& lookup_refs() {
  static const json j = read_json(fs::path(TANDEM_TEST_DATA) / "lookup_refs.json");
  return j;
}
// A nested JSON list of integers as an int64 tensor of its shape.
Tensor int64s(const json& nested) {
  std::vector<int64_t> shape, values;
  for (const json* at = &nested; at->is_array(); at = &at->at(0)) shape.push_back(static_cast<int64_t>(at->size()));
  const auto collect = [&](const auto& self, const json& j) -> void {
    if (!j.is_array()) return values.push_back(j.get<int64_t>());
    for (const json& e : j) self(self, e);
  };
  collect(collect, nested);
  return Tensor::from(Shape(shape), std::span<const int64_t>(values));
}
}  // namespace

TEST_CASE("preprocessing: IntegerLookup built from Keras's configs gives Keras 3's vocabularies and outputs") {
  // tests/data/make_lookup_refs.py: Keras 3 with TensorFlow, which its lookup layers need.
  REQUIRE(lookup_refs().at("integer").size() >= 15);
  for (const auto& [name, c] : lookup_refs().at("integer").items()) {
    INFO("IntegerLookup case " << name << " " << c.at("arguments").dump());
    const std::shared_ptr<tandem::Layer> layer = tl::layer_from_config("IntegerLookup", tl::Json::parse(c.at("config").dump()));
    if (!c.at("adapt").is_null()) tl::IntegerLookupRef(layer).adapt(int64s(c.at("adapt")));
    CHECK(tl::IntegerLookupRef(layer).get_vocabulary() == c.at("vocabulary").get<std::vector<int64_t>>());
    const Tensor y = predict_alone(layer, int64s(c.at("x")));
    CHECK(max_difference(y, int64s(c.at("y"))) == 0.0);
  }
}

TEST_CASE("preprocessing: text::StringLookup built from Keras's configs and assets gives Keras 3's vocabularies, indices and decodings") {
  REQUIRE(lookup_refs().at("string").size() >= 7);
  for (const auto& [name, c] : lookup_refs().at("string").items()) {
    INFO("StringLookup case " << name << " " << c.at("arguments").dump());
    const std::vector<std::string> words = c.at("x"), vocabulary = c.at("vocabulary");
    const std::vector<int64_t> ids = c.at("ids");
    const Tensor id_tensor = Tensor::from(Shape{static_cast<int64_t>(ids.size())}, std::span<const int64_t>(ids));
    // As Keras made it (from the config, then adapted), and as Keras rebuilds it from the config
    // and the vocabulary.txt asset (the same, unless load_assets dropped an adapted "" at the end).
    tandem::text::StringLookup made = tandem::text::StringLookup::from_config(c.at("config").dump());
    tandem::text::StringLookup rebuilt = made;
    if (!c.at("adapt").is_null()) {
      made.adapt(c.at("adapt").get<std::vector<std::string>>());
      const fs::path asset = scratch("vocabulary_" + name + ".txt");
      made.save_vocabulary(asset.string());
      std::ifstream in(asset);
      CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == c.at("vocabulary_txt").get<std::string>());
      std::ofstream(asset, std::ios::trunc) << c.at("vocabulary_txt").get<std::string>();
      rebuilt.load_vocabulary(asset.string());
    }
    CHECK(made.get_vocabulary() == vocabulary);
    CHECK(values_of(made(words)) == c.at("y").get<std::vector<double>>());
    CHECK(made.decode(id_tensor) == c.at("decoded").get<std::vector<std::string>>());
    CHECK(rebuilt.get_vocabulary() == c.at("reloaded_vocabulary").get<std::vector<std::string>>());
    CHECK(values_of(rebuilt(words)) == c.at("reloaded_y").get<std::vector<double>>());
  }
}

// The augmentation layers (RandomFlip, RandomTranslation, RandomRotation, RandomZoom,
// RandomContrast) and the ops under them, against independent truth: image_affine_transform
// against Keras 3's ops.image.affine_transform (tests/data/augmentation_refs.json, made by
// tests/data/make_augmentation_refs.py); its gradient and each layer's by float64 finite
// differences; the parameters each layer draws against Keras's matrices and ranges, given the
// documented draws rng::uniform(seed, step, row, k); identity outside training; determinism across
// runs, threads, Mirrored and Pipeline; Keras-made `.keras`/`.h5` files with these layers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <random>
#include <tandem/tandem.h>

#include "autodiff/autodiff.h"
#include "backend/device.h"
#include "core/random.h"
#include "distribute/strategy.h"
#include "gradient_check.h"
#include "keras_file_helpers.h"
#include "layer_base/call_context.h"
#include "ops/image.h"
#include "runtime/executable.h"
#include "scratch_dir.h"
#include "strategy_helpers.h"
#include "lower_with.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
using gradcheck::GradCheck;
using keras_file_helpers::Json;
using tandem::DType;
using tandem::Shape;
using tandem::Tensor;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {

const fs::path kData = fs::path(TANDEM_TEST_DATA);

struct Feed {
  std::string name;
  DType dtype;
  std::vector<double> values;
};

// Runs `fetches` of g on one CPU device (`threads` in its pool; 0: the default) and returns them
// as doubles.
std::vector<std::vector<double>> run_graph(Graph& g, const std::vector<Value>& fetches, const std::vector<Feed>& feeds,
                                           const std::string& device = "cpu:0", int threads = 0) {
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device(device, threads)},
                                  [](int, int) -> void* { return nullptr; });
  for (const Feed& f : feeds) {
    void* p = exe.feed(0, f.name);
    if (!p) continue;  // the step does not read it
    for (std::size_t i = 0; i < f.values.size(); ++i) {
      if (f.dtype == DType::F32) static_cast<float*>(p)[i] = static_cast<float>(f.values[i]);
      else if (f.dtype == DType::F64) static_cast<double*>(p)[i] = f.values[i];
      else static_cast<int64_t*>(p)[i] = static_cast<int64_t>(f.values[i]);
    }
  }
  exe.run();
  std::vector<std::vector<double>> out;
  for (std::size_t k = 0; k < fetches.size(); ++k) {
    const tandem::TensorType& t = g.type(fetches[k]);
    const void* p = exe.fetch(0, static_cast<int>(k));
    std::vector<double> v(static_cast<std::size_t>(t.shape.num_elements()));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = t.dtype == DType::F32 ? static_cast<const float*>(p)[i] : static_cast<const double*>(p)[i];
    out.push_back(std::move(v));
  }
  return out;
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

std::vector<double> uniform_values(int64_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& e : v) e = u(gen);
  return v;
}

// ---- Keras's parameters, written from Keras 3's layer sources, for the documented draws ----------

double draw(uint64_t seed, int64_t step, int64_t row, int k) {
  return tandem::rng::uniform(seed, static_cast<uint64_t>(step), static_cast<uint64_t>(row), static_cast<uint64_t>(k));
}
double between(double lo, double hi, double u) { return lo + (hi - lo) * u; }

// RandomTranslation._get_translation_matrix: [1, 0, -dx, 0, 1, -dy, 0, 0], dy = U(h) · height.
std::vector<double> keras_translation(double hl, double hu, double wl, double wu, int64_t h, int64_t w, uint64_t seed, int64_t step,
                                      int64_t row) {
  const double dy = between(hl, hu, draw(seed, step, row, 0)) * double(h), dx = between(wl, wu, draw(seed, step, row, 1)) * double(w);
  return {1, 0, -dx, 0, 1, -dy, 0, 0};
}
// BaseImagePreprocessingLayer._compute_affine_matrix with angle U(lower·360, upper·360) degrees.
std::vector<double> keras_rotation(double lower, double upper, int64_t h, int64_t w, uint64_t seed, int64_t step, int64_t row) {
  const double angle = between(lower * 360.0, upper * 360.0, draw(seed, step, row, 0)) * std::numbers::pi / 180.0;
  const double cx = 0.5 * double(w - 1), cy = 0.5 * double(h - 1);
  const double a0 = std::cos(angle), a1 = -std::sin(angle), b0 = std::sin(angle), b1 = std::cos(angle);
  return {a0, a1, cx - cx * a0 - cy * a1, b0, b1, cy - cx * b0 - cy * b1, 0, 0};
}
// RandomZoom._get_zoom_matrix: [zx, 0, (w−1)/2·(1−zx), 0, zy, (h−1)/2·(1−zy), 0, 0].
std::vector<double> keras_zoom(double hl, double hu, std::optional<std::pair<double, double>> wr, int64_t h, int64_t w, uint64_t seed,
                               int64_t step, int64_t row) {
  const double zy = between(1 + hl, 1 + hu, draw(seed, step, row, 0));
  const double zx = wr ? between(1 + wr->first, 1 + wr->second, draw(seed, step, row, 1)) : zy;
  return {zx, 0, (double(w) - 1) / 2 * (1 - zx), 0, zy, (double(h) - 1) / 2 * (1 - zy), 0, 0};
}

// A layer called in training on images x (N, H, W, C) at step `step`, and (to exercise the
// backward) the gradient of Σ y ⊙ w with respect to x.
struct TrainingCall {
  Graph g;
  Value x, step, y, dx;
  TrainingCall(const tandem::LayerRef& layer, const Shape& shape, DType dtype = DType::F32) {
    layer->build_for({shape.without_batch()});
    x = g.placeholder("x", {shape, dtype});
    step = g.placeholder("step", {Shape{}, DType::I64});
    tandem::CallContext ctx(g, true, step);
    y = layer->emit(ctx, {x});
    const Value w = g.placeholder("w", {shape, dtype});
    dx = tandem::autodiff::gradients(g, ops::reduce_sum(g, ops::mul(g, y, w), {0, 1, 2, 3}), {x})[0];
  }
  std::vector<std::vector<double>> run(const std::vector<double>& xv, int64_t s, const std::string& device = "cpu:0", int threads = 0) {
    const std::vector<double> wv = uniform_values(static_cast<int64_t>(xv.size()), -1, 1, 5);
    return run_graph(g, {y, dx}, {{"x", g.type(x).dtype, xv}, {"step", DType::I64, {double(s)}}, {"w", g.type(x).dtype, wv}}, device, threads);
  }
};

// The sampling of x (N, H, W, C) under `transforms` (N·8 values), by the op (checked against
// Keras by the first test).
std::vector<double> sampled(const Shape& shape, const std::vector<double>& x, const std::vector<double>& transforms, const std::string& interpolation,
                            const std::string& fill_mode, double fill_value) {
  Graph g;
  const Value xv = g.placeholder("x", {shape, DType::F64}), t = g.placeholder("t", {Shape{shape[0], 8}, DType::F64});
  return run_graph(g, {ops::image_affine_transform(g, xv, t, interpolation, fill_mode, fill_value)},
                   {{"x", DType::F64, x}, {"t", DType::F64, transforms}})[0];
}

const Shape kImages{16, 6, 7, 2};

}  // namespace

TEST_CASE("augmentation: image_affine_transform equals Keras's ops.image.affine_transform for every interpolation and fill_mode") {
  const Json refs = keras_file_helpers::read_json(kData / "augmentation_refs.json");
  const Shape shape(refs.at("shape").get<std::vector<int64_t>>());
  const auto images = refs.at("images").get<std::vector<double>>(), transforms = refs.at("transforms").get<std::vector<double>>();
  int cases = 0;
  double worst[2] = {0, 0};  // float32, float64
  for (const Json& c : refs.at("cases"))
    for (DType dtype : {DType::F32, DType::F64}) {
      const std::string interpolation = c.at("interpolation"), fill_mode = c.at("fill_mode");
      const double fill_value = c.at("fill_value");
      INFO(interpolation << ", " << fill_mode << ", fill_value " << fill_value << ", " << tandem::dtype_name(dtype) << " (Keras "
                         << refs.at("keras_version").get<std::string>() << ")");
      Graph g;
      const Value x = g.placeholder("x", {shape, dtype}), t = g.placeholder("t", {Shape{shape[0], 8}, dtype});
      const Value y = ops::image_affine_transform(g, x, t, interpolation, fill_mode, fill_value);
      const auto got = run_graph(g, {y}, {{"x", dtype, images}, {"t", dtype, transforms}})[0];
      const double diff = max_abs_difference(got, c.at("output").get<std::vector<double>>());
      CHECK(diff <= (dtype == DType::F32 ? 1e-5 : 1e-12));
      worst[dtype == DType::F64] = std::max(worst[dtype == DType::F64], diff);
      ++cases;
    }
  CHECK(cases == 20);
  MESSAGE("largest difference from Keras: float32 " << worst[0] << ", float64 " << worst[1]);
}

TEST_CASE("augmentation: the projective part divides by c0·x + c1·y + 1, as Keras documents the transform") {
  // One image 3 × 4, nearest: output pixel (x, y) reads round((a0x + a1y + a2)/k), round((b0x + b1y + b2)/k).
  const Shape shape{1, 3, 4, 1};
  std::vector<double> x(12);
  for (int i = 0; i < 12; ++i) x[static_cast<std::size_t>(i)] = i;
  const std::vector<double> t{1.5, 0.25, 0.1, 0.3, 1.2, 0.05, 0.2, 0.1};
  const auto y = sampled(shape, x, t, "nearest", "constant", -1);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      const double k = t[6] * c + t[7] * r + 1;
      const double sx = std::round((t[0] * c + t[1] * r + t[2]) / k), sy = std::round((t[3] * c + t[4] * r + t[5]) / k);
      const double expect = sx >= 0 && sx < 4 && sy >= 0 && sy < 3 ? x[static_cast<std::size_t>(sy * 4 + sx)] : -1;
      CHECK(y[static_cast<std::size_t>(r * 4 + c)] == expect);
    }
}

TEST_CASE("augmentation: image_affine_transform's gradient (and its adjoint's) by float64 finite differences") {
  const std::vector<double> transforms{0.9, -0.45, 1.7, 0.4, 1.1, -0.8, 0, 0,  // rotation with zoom and shift
                                       1.0, 0.0, -2.3, 0.0, 1.0, 1.6, 0, 0};   // a shift out of the image
  for (const char* interpolation : {"nearest", "bilinear"})
    for (const char* fill_mode : {"reflect", "wrap", "constant", "nearest"})
      for (const char* op : {"image_affine_transform", "image_affine_transform_grad"}) {
        GradCheck c;
        const Value x = c.uniform({2, 4, 5, 2});
        const Value t = c.fixed({2, 8}, transforms);
        c.check(c.g.add(op, {x, t}, {{"interpolation", std::string(interpolation)}, {"fill_mode", std::string(fill_mode)}, {"fill_value", 0.0}}),
                std::string(op) + " " + interpolation + " " + fill_mode);
      }
}

TEST_CASE("augmentation: each layer's gradient in training by float64 finite differences") {
  const std::vector<std::pair<std::string, std::function<tandem::LayerRef()>>> layers{
      {"RandomFlip", [] { return tl::RandomFlip("horizontal_and_vertical", 3); }},
      {"RandomTranslation", [] { return tl::RandomTranslation(0.3, 0.3, {.seed = 4}); }},
      {"RandomRotation", [] { return tl::RandomRotation(0.2, {.fill_mode = "wrap", .seed = 5}); }},
      {"RandomZoom", [] { return tl::RandomZoom(0.3, tl::Factor(0.2), {.fill_mode = "constant", .seed = 6, .fill_value = 1}); }},
      // Inputs in [-2, 2] stay inside value_range, away from the clipping.
      {"RandomContrast", [] { return tl::RandomContrast({0.3, 0.3}, {.value_range = {-100, 100}, .seed = 7}); }},
  };
  for (const auto& [name, make] : layers) {
    GradCheck c;
    const Value x = c.uniform({4, 5, 6, 2});
    const tandem::LayerRef layer = make();
    layer->build_for({Shape{5, 6, 2}});
    tandem::CallContext ctx(c.g, true, ops::fill(c.g, {Shape{}, DType::I64}, 3));
    c.check(layer->emit(ctx, {x}), name);
  }
}

TEST_CASE("augmentation: random_image_params draws Keras's matrices and factors, within Keras's ranges") {
  const int64_t n = 64, h = 6, w = 7, step = 11;
  const uint64_t seed = 1234;
  Graph g;
  const Value x = g.placeholder("x", {Shape{n, h, w, 1}, DType::F64}), s = g.placeholder("step", {Shape{}, DType::I64});
  const Value translation = ops::random_image_params(g, x, s, {.kind = "translation", .h_lower = -0.2, .h_upper = 0.1, .w_lower = 0.05, .w_upper = 0.3, .seed = seed});
  const Value rotation = ops::random_image_params(g, x, s, {.kind = "rotation", .h_lower = -0.1, .h_upper = 0.25, .seed = seed});
  const Value zoom = ops::random_image_params(g, x, s, {.kind = "zoom", .h_lower = -0.3, .h_upper = 0.2, .w_lower = 0.1, .w_upper = 0.5, .seed = seed});
  const Value same_zoom = ops::random_image_params(g, x, s, {.kind = "zoom", .h_lower = -0.3, .h_upper = 0.2, .same_zoom = true, .seed = seed});
  const Value contrast = ops::random_image_params(g, x, s, {.kind = "contrast", .h_lower = 0.2, .h_upper = 0.5, .seed = seed});
  const Value flip = ops::random_image_params(g, x, s, {.kind = "flip", .seed = seed});
  const auto got = run_graph(g, {translation, rotation, zoom, same_zoom, contrast, flip}, {{"step", DType::I64, {double(step)}}});
  int flips = 0;
  for (int64_t r = 0; r < n; ++r) {
    CAPTURE(r);
    auto row = [&](int k) { return std::vector<double>(got[static_cast<std::size_t>(k)].begin() + r * 8, got[static_cast<std::size_t>(k)].begin() + r * 8 + 8); };
    CHECK(max_abs_difference(row(0), keras_translation(-0.2, 0.1, 0.05, 0.3, h, w, seed, step, r)) <= 1e-12);
    CHECK(max_abs_difference(row(1), keras_rotation(-0.1, 0.25, h, w, seed, step, r)) <= 1e-12);
    CHECK(max_abs_difference(row(2), keras_zoom(-0.3, 0.2, std::pair{0.1, 0.5}, h, w, seed, step, r)) <= 1e-12);
    CHECK(max_abs_difference(row(3), keras_zoom(-0.3, 0.2, std::nullopt, h, w, seed, step, r)) <= 1e-12);
    // The ranges themselves: shifts in rows/columns, the angle, the zooms, the contrast factor.
    CHECK(-row(0)[5] >= -0.2 * h);
    CHECK(-row(0)[5] < 0.1 * h);
    CHECK(-row(0)[2] >= 0.05 * w);
    CHECK(-row(0)[2] < 0.3 * w);
    const double angle = std::atan2(row(1)[3], row(1)[0]) * 180 / std::numbers::pi;
    CHECK(angle >= -0.1 * 360 - 1e-9);
    CHECK(angle < 0.25 * 360);
    CHECK(row(2)[4] >= 0.7);
    CHECK(row(2)[4] < 1.2);
    CHECK(row(2)[0] >= 1.1);
    CHECK(row(2)[0] < 1.5);
    CHECK(row(3)[0] == row(3)[4]);
    const double f = got[4][static_cast<std::size_t>(r)];
    CHECK(f == between(0.8, 1.5, draw(seed, step, r, 0)));
    CHECK(f >= 0.8);
    CHECK(f < 1.5);
    const double flipped = got[5][static_cast<std::size_t>(r)];
    CHECK(flipped == (draw(seed, step, r, 0) <= 0.5 ? 1.0 : 0.0));
    flips += flipped == 1.0;
  }
  CHECK(flips > 16);
  CHECK(flips < 48);
}

TEST_CASE("augmentation: every layer is the identity in predict and evaluate") {
  const std::vector<double> xv = uniform_values(kImages.num_elements(), 0, 255, 3);
  std::vector<float> xf(xv.begin(), xv.end());
  const Tensor x = Tensor::from(kImages, std::span<const float>(xf));
  const std::vector<std::pair<std::string, std::function<tandem::LayerRef()>>> layers{
      {"RandomFlip", [] { return tl::RandomFlip(); }},
      {"RandomTranslation", [] { return tl::RandomTranslation(0.2, 0.3); }},
      {"RandomRotation", [] { return tl::RandomRotation(0.2); }},
      {"RandomZoom", [] { return tl::RandomZoom(0.2); }},
      {"RandomContrast", [] { return tl::RandomContrast(0.5); }},
  };
  for (const auto& [name, make] : layers) {
    INFO(name);
    tandem::Sequential model({tl::InputLayer(kImages.without_batch()), make()});
    const Tensor y = model.predict(x);
    REQUIRE(y.shape() == kImages);
    CHECK(std::memcmp(y.raw(), x.raw(), x.bytes()) == 0);
    model.compile({.optimizer = "sgd", .loss = tandem::losses::MeanSquaredError()});
    CHECK(model.evaluate(x, x, {.verbose = 0}).at("loss") == 0.0);
    // Outside training the layer emits nothing: its output is its input.
    const tandem::LayerRef layer = make();
    layer->build_for({kImages.without_batch()});
    Graph g;
    const Value in = g.placeholder("x", {kImages, DType::F32});
    tandem::CallContext ctx(g, false, ops::fill(g, {Shape{}, DType::I64}, 0));
    CHECK(layer->emit(ctx, {in}) == in);
  }
}

TEST_CASE("augmentation: RandomFlip gives each image exactly itself or its mirror, by its draw") {
  const std::vector<double> xv = uniform_values(kImages.num_elements(), -1, 1, 4);
  const int64_t n = kImages[0], h = kImages[1], w = kImages[2], c = kImages[3];
  for (const char* mode : {"horizontal", "vertical", "horizontal_and_vertical"}) {
    INFO(mode);
    TrainingCall call(tl::RandomFlip(mode, 77), kImages);
    const auto y = call.run(xv, 5)[0];
    const bool horizontal = std::string(mode) != "vertical", vertical = std::string(mode) != "horizontal";
    int flipped = 0;
    for (int64_t b = 0; b < n; ++b) {
      const bool flip = draw(77, 5, b, 0) <= 0.5;
      flipped += flip;
      for (int64_t r = 0; r < h; ++r)
        for (int64_t q = 0; q < w; ++q)
          for (int64_t k = 0; k < c; ++k) {
            const int64_t sr = flip && vertical ? h - 1 - r : r, sq = flip && horizontal ? w - 1 - q : q;
            const float expect = static_cast<float>(xv[static_cast<std::size_t>(((b * h + sr) * w + sq) * c + k)]);
            REQUIRE(y[static_cast<std::size_t>(((b * h + r) * w + q) * c + k)] == expect);
          }
    }
    CHECK(flipped > 0);
    CHECK(flipped < n);
  }
}

TEST_CASE("augmentation: RandomTranslation, RandomRotation and RandomZoom sample with Keras's matrices") {
  const std::vector<double> xv = uniform_values(kImages.num_elements(), -1, 1, 6);
  const int64_t n = kImages[0], h = kImages[1], w = kImages[2];
  struct Case {
    std::string name;
    tandem::LayerRef layer;
    std::function<std::vector<double>(int64_t row)> transform;
    std::string interpolation, fill_mode;
    double fill_value;
  };
  const int64_t step = 9;
  const std::vector<Case> cases{
      {"RandomTranslation", tl::RandomTranslation(0.3, {-0.2, 0.4}, {.seed = 21}),
       [&](int64_t r) { return keras_translation(-0.3, 0.3, -0.2, 0.4, h, w, 21, step, r); }, "bilinear", "reflect", 0},
      {"RandomTranslation nearest constant", tl::RandomTranslation({0.1, -0.25}, 0.2, {.fill_mode = "constant", .interpolation = "nearest", .seed = 22, .fill_value = 0.5}),
       [&](int64_t r) { return keras_translation(-0.25, 0.1, -0.2, 0.2, h, w, 22, step, r); }, "nearest", "constant", 0.5},
      {"RandomRotation", tl::RandomRotation(0.15, {.seed = 23}), [&](int64_t r) { return keras_rotation(-0.15, 0.15, h, w, 23, step, r); },
       "bilinear", "reflect", 0},
      {"RandomRotation wrap", tl::RandomRotation({-0.05, 0.3}, {.fill_mode = "wrap", .seed = 24}),
       [&](int64_t r) { return keras_rotation(-0.05, 0.3, h, w, 24, step, r); }, "bilinear", "wrap", 0},
      {"RandomZoom", tl::RandomZoom(0.3, std::nullopt, {.seed = 25}),
       [&](int64_t r) { return keras_zoom(-0.3, 0.3, std::nullopt, h, w, 25, step, r); }, "bilinear", "reflect", 0},
      {"RandomZoom width nearest", tl::RandomZoom({-0.4, 0.1}, tl::Factor(0.5), {.fill_mode = "nearest", .interpolation = "nearest", .seed = 26}),
       [&](int64_t r) { return keras_zoom(-0.4, 0.1, std::pair{-0.5, 0.5}, h, w, 26, step, r); }, "nearest", "nearest", 0},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    TrainingCall call(c.layer, kImages);
    const auto y = call.run(xv, step)[0];
    std::vector<double> transforms;
    for (int64_t r = 0; r < n; ++r)
      for (double v : c.transform(r)) transforms.push_back(v);
    // float32 images against the float64 sampling: nearest picks could differ only at exact halves.
    CHECK(max_abs_difference(y, sampled(kImages, xv, transforms, c.interpolation, c.fill_mode, c.fill_value)) <= 1e-5);
  }
}

TEST_CASE("augmentation: RandomContrast is (x − mean) · c + mean per channel, clipped to value_range, c in Keras's range") {
  const std::vector<double> xv = uniform_values(kImages.num_elements(), 0, 1, 8);
  const int64_t n = kImages[0], hw = kImages[1] * kImages[2], c = kImages[3];
  struct Case {
    tl::Factor factor;
    std::pair<double, double> range;    // value_range
    double lower, upper;                // c in [1 − lower, 1 + upper]
  };
  // A number f means (0, f) in Keras 3: the contrast only grows.
  for (const Case& k : {Case{0.6, {0, 1}, 0.0, 0.6}, Case{{0.3, 0.9}, {0.2, 0.8}, 0.3, 0.9}, Case{{0.2, 0.5}, {-10, 10}, 0.2, 0.5}}) {
    CAPTURE(k.lower);
    CAPTURE(k.upper);
    TrainingCall call(tl::RandomContrast(k.factor, {.value_range = k.range, .seed = 31}), kImages);
    const auto y = call.run(xv, 2)[0];
    for (int64_t b = 0; b < n; ++b) {
      const double f = between(1 - k.lower, 1 + k.upper, draw(31, 2, b, 0));
      CHECK(f >= 1 - k.lower);
      CHECK(f < 1 + k.upper);
      for (int64_t ch = 0; ch < c; ++ch) {
        double mean = 0;
        for (int64_t p = 0; p < hw; ++p) mean += xv[static_cast<std::size_t>((b * hw + p) * c + ch)];
        mean /= double(hw);
        for (int64_t p = 0; p < hw; ++p) {
          const std::size_t i = static_cast<std::size_t>((b * hw + p) * c + ch);
          const double expect = std::clamp((xv[i] - mean) * f + mean, k.range.first, k.range.second);
          REQUIRE(std::abs(y[i] - expect) <= 1e-5);
        }
      }
    }
  }
}

TEST_CASE("augmentation: the same seed and step give bitwise the same images and gradients on 1 and 4 threads, and another step or seed others") {
  // Big enough that the image kernels split rows (forward) and images (gradient) across 4 threads.
  const Shape shape{48, 40, 36, 3};
  const std::vector<double> xv = uniform_values(shape.num_elements(), 0, 255, 9);
  auto stack = [](uint64_t seed) {
    return std::vector<tandem::LayerRef>{tl::RandomFlip("horizontal_and_vertical", seed), tl::RandomTranslation(0.2, 0.2, {.seed = seed + 1}),
                                         tl::RandomRotation(0.2, {.fill_mode = "constant", .seed = seed + 2}),
                                         tl::RandomZoom(0.2, tl::Factor(0.3), {.seed = seed + 3}), tl::RandomContrast(0.4, {.seed = seed + 4})};
  };
  auto run = [&](uint64_t seed, int64_t step, const std::string& device, int threads) {
    // The whole stack as one graph: each layer's output feeds the next.
    Graph g;
    const Value x = g.placeholder("x", {shape, DType::F32}), s = g.placeholder("step", {Shape{}, DType::I64});
    tandem::CallContext ctx(g, true, s);
    Value y = x;
    for (const tandem::LayerRef& l : stack(seed)) {
      l->build_for({shape.without_batch()});
      y = l->emit(ctx, {y});
    }
    const Value w = g.placeholder("w", {shape, DType::F32});
    const Value dx = tandem::autodiff::gradients(g, ops::reduce_sum(g, ops::mul(g, y, w), {0, 1, 2, 3}), {x})[0];
    return run_graph(g, {y, dx}, {{"x", DType::F32, xv}, {"step", DType::I64, {double(step)}}, {"w", DType::F32, uniform_values(shape.num_elements(), -1, 1, 2)}},
                     device, threads);
  };
  const auto one = run(100, 4, "cpu:71", 1), four = run(100, 4, "cpu:74", 4), again = run(100, 4, "cpu:0", 0);
  CHECK(one == four);
  CHECK(one == again);
  CHECK(max_abs_difference(one[0], xv) > 1.0);  // it did change the images
  CHECK(run(100, 5, "cpu:0", 0)[0] != one[0]);
  CHECK(run(200, 4, "cpu:0", 0)[0] != one[0]);
}

namespace {
// Five training steps of augmentation layers in front of a small CNN under a strategy.
std::vector<Tensor> augmented_cnn_after_five_steps(tandem::distribute::StrategyPtr strategy, bool augment) {
  tandem::set_random_seed(6);
  std::vector<tandem::LayerRef> layers{tl::InputLayer({6, 7, 2})};
  if (augment)
    for (tandem::LayerRef l : {tl::RandomFlip(), tl::RandomTranslation(0.2, 0.1), tl::RandomRotation(0.1), tl::RandomZoom(0.2),
                               tl::RandomContrast(0.3, {.value_range = {-4, 4}})})
      layers.push_back(l);
  for (tandem::LayerRef l : {tl::Conv2D(4, 3, {.activation = "relu"}), tl::Flatten(), tl::Dense(3)}) layers.push_back(l);
  tandem::Sequential model(layers);
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
  const int64_t rows = 40;
  const auto xv = uniform_values(rows * 6 * 7 * 2, -2, 2, 10);
  std::vector<float> xf(xv.begin(), xv.end());
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) y[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % 3);
  model.fit(tandem::Dataset{Tensor::from({rows, 6, 7, 2}, std::span<const float>(xf)), Tensor::from({rows}, std::span<const int32_t>(y))},
            {.epochs = 1, .batch_size = 8, .verbose = 0});
  CHECK(model.optimizer()->iterations() == 5);
  return model.get_weights();
}
}  // namespace

TEST_CASE("augmentation: training with the layers under Mirrored (and Pipeline with 2 micro-batches) on 2 virtual CPU devices equals one device") {
  const auto one = augmented_cnn_after_five_steps(tandem::distribute::Default(), true);
  const auto two = augmented_cnn_after_five_steps(tandem::distribute::Mirrored(cpus(2)), true);
  CHECK(max_relative_difference(two, one) <= 1e-5);
  MESSAGE("Mirrored on 2 CPU devices against one device: largest relative weight difference " << max_relative_difference(two, one));
  // Pipeline's micro-batches keep their rows' global indices too.
  const auto piped = augmented_cnn_after_five_steps(tandem::distribute::Pipeline(cpus(2), {.micro_batches = 2}), true);
  CHECK(max_relative_difference(piped, one) <= 1e-5);
  // The draws matter: without the layers the same training ends elsewhere.
  const auto plain = augmented_cnn_after_five_steps(tandem::distribute::Default(), false);
  CHECK(max_relative_difference(plain, one) > 1e-3);
}

TEST_CASE("augmentation: Keras-made files with the layers load with Keras's configs and predict as Keras did") {
  using namespace keras_file_helpers;
  const fs::path dir = kData / "keras";
  const Json m = read_json(dir / "models.json").at("augment");
  const Tensor x = tensor_of(m.at("x"), DType::F32), y = tensor_of(m.at("y"), DType::F32);
  const Json keras_config = Json::parse(zip_entry(dir / "augment.keras", "config.json"));
  static const ScratchRoot scratch("tandem_augmentation_layers");
  const fs::path mine = scratch.fresh("files") / "augment_again.keras";
  for (const std::string ext : {".keras", ".h5"}) {
    INFO("augment" << ext);
    std::unique_ptr<tandem::Model> model = tandem::load_model((dir / ("augment" + ext)).string());
    CHECK(max_difference(model->predict(x), y) <= 1e-5);
    model->save(mine.string());
    const Json written = Json::parse(zip_entry(mine, "config.json"));
    const Json& keras_layers = keras_config.at("config").at("layers");
    const Json& my_layers = written.at("config").at("layers");
    REQUIRE(my_layers.size() == keras_layers.size());
    for (std::size_t i = 0; i < keras_layers.size(); ++i) {
      const std::string cls = keras_layers[i].at("class_name");
      if (cls.rfind("Random", 0) != 0) continue;
      INFO(cls);
      CHECK(comparable(my_layers[i].at("config"), keras_layers[i].at("config")) == without_ids(keras_layers[i].at("config")));
      // In Keras's order of keys, too.
      auto keys = [&](const std::string& text) {
        std::vector<std::string> k;
        const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(text);  // alive through the loop
        for (const auto& [key, value] : parsed.at("config").at("layers").at(i).at("config").items()) k.push_back(key);
        return k;
      };
      CHECK(keys(zip_entry(mine, "config.json")) == keys(zip_entry(dir / "augment.keras", "config.json")));
    }
    CHECK(max_difference(tandem::load_model(mine.string())->predict(x), y) <= 1e-5);
  }
}

TEST_CASE("augmentation: bad arguments are refused naming the layer, the argument, what it accepts and what came") {
  auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const tandem::ValueError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(message([] { tl::RandomFlip("diagonal", std::nullopt, "f"); }) ==
        "RandomFlip \"f\": mode must be \"horizontal\", \"vertical\" or \"horizontal_and_vertical\", got \"diagonal\"");
  CHECK(message([] { tl::RandomTranslation(1.5, 0.1, {.name = "t"}); }) ==
        "RandomTranslation \"t\": height_factor must be each in [-1, 1] (a number or a pair), got 1.5");
  CHECK(message([] { tl::RandomTranslation(0.1, 0.1, {.fill_mode = "mirror", .name = "t"}); }) ==
        "RandomTranslation \"t\": fill_mode must be \"reflect\", \"wrap\", \"constant\" or \"nearest\", got \"mirror\"");
  CHECK(message([] { tl::RandomRotation(0.1, {.interpolation = "bicubic", .name = "r"}); }) ==
        "RandomRotation \"r\": interpolation must be \"nearest\" or \"bilinear\", got \"bicubic\"");
  CHECK(message([] { tl::RandomRotation({1.5, 2.0}, {.name = "r"}); }) ==
        "RandomRotation \"r\": factor must be a number in [-1, 1] or a pair reaching into it, got (1.5, 2)");
  CHECK(message([] { tl::RandomZoom(-1.0, std::nullopt, {.name = "z"}); }) ==
        "RandomZoom \"z\": height_factor must be each in (-1, 1] (a number or a pair), got -1");
  CHECK(message([] { tl::RandomZoom(0.1, tl::Factor(0.2, 1.2), {.name = "z"}); }) ==
        "RandomZoom \"z\": width_factor must be each in (-1, 1] (a number or a pair), got (0.2, 1.2)");
  CHECK(message([] { tl::RandomContrast(-0.1, {.name = "c"}); }) ==
        "RandomContrast \"c\": factor must be a number in [0, 1] or a pair reaching into it, got -0.1");
  // Images only: (batch, height, width, channels).
  CHECK_THROWS_WITH_AS(tandem::Sequential({tl::InputLayer({5}), tl::RandomZoom(0.1, std::nullopt, {.name = "z"})}),
                       doctest::Contains("RandomZoom \"z\": expected input of rank 4 (batch, height, width, channels), got (None, 5)"),
                       tandem::ShapeError);
}

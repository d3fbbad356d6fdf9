// The vision layers Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, Cropping2D, SpatialDropout2D
// and GroupNormalization: f64 finite-difference checks of the new ops and their gradients (forward
// values against direct loops written here), the layers against PyTorch (tests/data/
// make_vision_refs.py), Keras-made files (tests/data/make_keras_files.py, "vision" models), the
// spatial dropout mask, errors, and a small model that learns.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>

#include "ops/conv.h"
#include "tests/gradient_check.h"
#include "tests/layer_run.h"
#include "tests/strategy_helpers.h"
#include "lower_with.h"

namespace tl = tandem::layers;
using gradcheck::GradCheck;
using gradcheck::Outcome;
using layer_run::check_close;
using layer_run::LayerResult;
using layer_run::run_layer;
using tandem::DType;
using tandem::Shape;
using tandem::Tensor;
using tandem::graph::Graph;
using tandem::graph::Value;
using Json = nlohmann::json;
namespace ops = tandem::ops;

namespace {
using Pair = ops::Pair;

// TF/Keras "same" padding before the first element, from its definition.
int64_t pad_before(int64_t in, int64_t k, int64_t stride, int64_t dilation, bool same) {
  if (!same) return 0;
  const int64_t out = (in + stride - 1) / stride;
  return std::max<int64_t>((out - 1) * stride + (k - 1) * dilation + 1 - in, 0) / 2;
}

// Direct depthwise convolution: y[n, oy, ox, c·M + m] = Σ x[n, iy, ix, c] · k[ky, kx, c, m].
std::vector<double> direct_depthwise(const Shape& xs, const std::vector<double>& x, const Shape& ks, const std::vector<double>& k,
                                     const Shape& ys, Pair s, Pair d, bool same) {
  const int64_t pt = pad_before(xs[1], ks[0], s[0], d[0], same), pl = pad_before(xs[2], ks[1], s[1], d[1], same);
  const int64_t C = xs[3], M = ks[3];
  std::vector<double> y(static_cast<std::size_t>(ys.num_elements()), 0.0);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t oy = 0; oy < ys[1]; ++oy)
      for (int64_t ox = 0; ox < ys[2]; ++ox)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t m = 0; m < M; ++m) {
            double acc = 0;
            for (int64_t ky = 0; ky < ks[0]; ++ky)
              for (int64_t kx = 0; kx < ks[1]; ++kx) {
                const int64_t iy = oy * s[0] - pt + ky * d[0], ix = ox * s[1] - pl + kx * d[1];
                if (iy < 0 || iy >= xs[1] || ix < 0 || ix >= xs[2]) continue;
                acc += x[static_cast<std::size_t>(((n * xs[1] + iy) * xs[2] + ix) * C + c)] *
                       k[static_cast<std::size_t>(((ky * ks[1] + kx) * C + c) * M + m)];
              }
            y[static_cast<std::size_t>(((n * ys[1] + oy) * ys[2] + ox) * C * M + c * M + m)] = acc;
          }
  return y;
}

void check_depthwise(const Shape& xs, const Shape& ks, Pair s, Pair d, const std::string& padding) {
  const std::string what = "depthwise_conv2d x " + xs.str() + " kernel " + ks.str() + " strides (" + std::to_string(s[0]) + ", " +
                           std::to_string(s[1]) + ") dilation (" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ") " + padding;
  GradCheck c;
  const Value x = c.uniform(xs), k = c.uniform(ks, -1, 1);
  const Value y = ops::depthwise_conv2d(c.g, x, k, s, d, padding);
  const Shape ys = c.g.type(y).shape;
  const Outcome o = c.check(y, what);
  check_close(o.y, direct_depthwise(xs, c.values(x), ks, c.values(k), ys, s, d, padding == "same"), 1e-12, what + " forward");
}

Shape shape_of(const Json& j) { return Shape(j.get<std::vector<int64_t>>()); }
tl::Int2 int2(const Json& j) { return {j[0].get<int64_t>(), j[1].get<int64_t>()}; }
Tensor tensor(const Shape& s, const Json& j) {
  const auto v = j.get<std::vector<double>>();
  return Tensor::from(s, std::span<const double>(v));
}
Json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p);
  return Json::parse(in);
}
// A {"shape", "values"} tensor of models.json.
Tensor tensor_of(const Json& t) { return tensor(shape_of(t.at("shape")), t.at("values")).cast(DType::F32); }
double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const Tensor x = a.cast(DType::F64), y = b.cast(DType::F64);
  double d = 0;
  for (int64_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x.values<double>()[i] - y.values<double>()[i]));
  return d;
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

// The layer a vision_refs.json case describes.
tandem::LayerRef layer_of(const Json& cs) {
  const std::string kind = cs["layer"].get<std::string>();
  auto text = [&](const char* key) { return cs[key].get<std::string>(); };
  if (kind == "Conv2DTranspose") {
    tl::Conv2DTransposeOptions o{.strides = int2(cs["strides"]), .padding = text("padding"), .dilation_rate = int2(cs["dilation_rate"]),
                                 .activation = text("activation")};
    if (!cs["output_padding"].is_null()) o.output_padding = int2(cs["output_padding"]);
    return tl::Conv2DTranspose(cs["filters"].get<int64_t>(), int2(cs["kernel_size"]), o);
  }
  if (kind == "DepthwiseConv2D")
    return tl::DepthwiseConv2D(int2(cs["kernel_size"]), {.strides = int2(cs["strides"]), .padding = text("padding"),
                                                         .depth_multiplier = cs["depth_multiplier"].get<int64_t>(),
                                                         .dilation_rate = int2(cs["dilation_rate"]), .activation = text("activation")});
  if (kind == "SeparableConv2D")
    return tl::SeparableConv2D(cs["filters"].get<int64_t>(), int2(cs["kernel_size"]),
                               {.strides = int2(cs["strides"]), .padding = text("padding"),
                                .depth_multiplier = cs["depth_multiplier"].get<int64_t>(), .dilation_rate = int2(cs["dilation_rate"]),
                                .activation = text("activation")});
  REQUIRE(kind == "GroupNormalization");
  return tl::GroupNormalization({.groups = cs["groups"].get<int64_t>(), .epsilon = cs["epsilon"].get<double>()});
}
}  // namespace

TEST_CASE("vision: depthwise_conv2d gradients and values") {
  check_depthwise({2, 5, 6, 3}, {3, 3, 3, 1}, {1, 1}, {1, 1}, "valid");
  check_depthwise({2, 7, 6, 2}, {3, 3, 2, 2}, {2, 2}, {1, 1}, "same");  // asymmetric "same" padding
  check_depthwise({1, 6, 7, 2}, {2, 3, 2, 3}, {1, 1}, {2, 2}, "same");
  check_depthwise({2, 6, 5, 3}, {2, 2, 3, 2}, {1, 2}, {1, 1}, "valid");
}

TEST_CASE("vision: the depthwise gradient ops are differentiable (second derivatives)") {
  {
    GradCheck c;
    const Value dy = c.uniform({2, 4, 3, 6}), k = c.uniform({3, 3, 3, 2}, -1, 1);
    c.check(ops::depthwise_conv2d_backprop_input(c.g, dy, k, {2, 7, 6, 3}, {2, 2}, {1, 1}, "same"), "depthwise_conv2d_backprop_input");
  }
  {
    GradCheck c;
    const Value x = c.uniform({2, 7, 6, 3}), dy = c.uniform({2, 4, 3, 6});
    c.check(ops::depthwise_conv2d_backprop_filter(c.g, x, dy, {3, 3, 3, 2}, {2, 2}, {1, 1}, "same"), "depthwise_conv2d_backprop_filter");
  }
}

TEST_CASE("vision: conv2d_transpose gradients in x and kernel, every geometry") {
  struct Case {
    Shape x, k;
    Pair s, d;
    const char* padding;
    std::optional<Pair> output_padding;
    Shape want;
  };
  // want: Keras 3's output shapes (compute_conv_transpose_output_shape).
  const Case cases[] = {
      {{2, 3, 4, 2}, {3, 3, 3, 2}, {1, 1}, {1, 1}, "valid", std::nullopt, {2, 5, 6, 3}},
      {{2, 3, 2, 2}, {3, 3, 2, 2}, {2, 2}, {1, 1}, "same", std::nullopt, {2, 6, 4, 2}},
      {{1, 3, 2, 2}, {3, 3, 2, 2}, {2, 2}, {1, 1}, "same", Pair{1, 0}, {1, 6, 3, 2}},
      {{1, 3, 3, 2}, {4, 4, 2, 2}, {2, 2}, {1, 1}, "same", Pair{0, 1}, {1, 4, 5, 2}},  // even kernel, output_padding 0: cropped
      {{2, 2, 3, 1}, {2, 3, 2, 1}, {3, 2}, {1, 1}, "valid", Pair{2, 1}, {2, 7, 8, 2}},  // zero rows padded below
      {{1, 2, 2, 2}, {2, 2, 3, 2}, {3, 3}, {1, 1}, "valid", std::nullopt, {1, 6, 6, 3}},
      {{1, 4, 3, 2}, {3, 2, 2, 2}, {1, 1}, {2, 2}, "same", std::nullopt, {1, 4, 3, 2}},
  };
  for (const Case& cs : cases) {
    const std::string what = "conv2d_transpose x " + cs.x.str() + " kernel " + cs.k.str() + " " + cs.padding;
    GradCheck c;
    const Value x = c.uniform(cs.x), k = c.uniform(cs.k, -1, 1);
    const Value y = ops::conv2d_transpose(c.g, x, k, cs.s, cs.d, cs.padding, cs.output_padding);
    CHECK_MESSAGE(c.g.type(y).shape == cs.want, what);
    c.check(y, what);
  }
}

TEST_CASE("vision: depthwise kernels give the same values with 1, 3 and 4 threads") {
  const Shape xs{5, 7, 6, 3}, ks{3, 3, 3, 2};
  Graph g;
  const Value x = g.placeholder("x", {xs, DType::F64}), k = g.placeholder("k", {ks, DType::F64});
  const Value y = ops::depthwise_conv2d(g, x, k, {2, 1}, {1, 1}, "same");
  const Value dy = g.placeholder("dy", {g.type(y).shape, DType::F64});
  const Value dx = ops::depthwise_conv2d_backprop_input(g, dy, k, xs, {2, 1}, {1, 1}, "same");
  const Value dk = ops::depthwise_conv2d_backprop_filter(g, x, dy, ks, {2, 1}, {1, 1}, "same");
  const std::vector<Value> outputs{y, dx, dk};
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, outputs));
  std::mt19937_64 gen(9);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> inputs;
  for (const Shape& s : {xs, ks, g.type(y).shape}) {
    inputs.emplace_back(static_cast<std::size_t>(s.num_elements()));
    for (double& v : inputs.back()) v = u(gen);
  }
  std::vector<std::vector<double>> first;
  for (const auto& [device, threads] : {std::pair{"cpu:71", 1}, std::pair{"cpu:72", 3}, std::pair{"cpu:73", 4}}) {
    INFO(threads << " threads");
    tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device(device, threads)},
                                    [](int, int) -> void* { return nullptr; });
    const char* names[] = {"x", "k", "dy"};
    for (int i = 0; i < 3; ++i) std::copy(inputs[i].begin(), inputs[i].end(), static_cast<double*>(exe.feed(0, names[i])));
    exe.run();
    std::vector<std::vector<double>> got;
    for (int i = 0; i < 3; ++i) {
      const auto* p = static_cast<const double*>(exe.fetch(0, i));
      got.emplace_back(p, p + g.type(outputs[static_cast<std::size_t>(i)]).shape.num_elements());
    }
    check_close(got[0], direct_depthwise(xs, inputs[0], ks, inputs[1], g.type(y).shape, {2, 1}, {1, 1}, true), 1e-12, "forward");
    if (first.empty()) first = got;
    for (int i = 0; i < 3; ++i) CHECK(got[static_cast<std::size_t>(i)] == first[static_cast<std::size_t>(i)]);  // bitwise
  }
}

TEST_CASE("vision: spatial_dropout drops whole channels per sample, scales by 1/(1 - rate), and is its own gradient") {
  const Shape xs{6, 3, 4, 5};
  const double rate = 0.4;
  Graph g;
  const Value x = g.placeholder("x", {xs, DType::F64});
  const Value step = ops::fill(g, {Shape{}, DType::I64}, 7);
  const Value y = ops::spatial_dropout(g, x, step, rate, 11);
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, {y}));
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
                                  [](int, int) -> void* { return nullptr; });
  auto* in = static_cast<double*>(exe.feed(0, "x"));
  std::fill(in, in + xs.num_elements(), 1.0);
  exe.run();
  const auto* out = static_cast<const double*>(exe.fetch(0, 0));
  int dropped = 0;
  for (int64_t n = 0; n < xs[0]; ++n)
    for (int64_t c = 0; c < xs[3]; ++c) {
      const double first = out[n * 60 + c];
      CHECK((first == 0.0 || std::abs(first - 1 / (1 - rate)) < 1e-15));
      for (int64_t p = 0; p < 12; ++p) CHECK(out[n * 60 + p * 5 + c] == first);  // the whole channel
      dropped += first == 0.0;
    }
  CHECK(dropped > 0);
  CHECK(dropped < 30);
  // The gradient is the same mask on dy (finite differences; the op is linear in x).
  GradCheck c;
  const Value xv = c.uniform({3, 2, 3, 4});
  c.check(ops::spatial_dropout(c.g, xv, ops::fill(c.g, {Shape{}, DType::I64}, 2), 0.5, 5), "spatial_dropout");
}

TEST_CASE("vision: SpatialDropout2D is the identity in inference and drops whole channels in training") {
  const tandem::LayerRef drop = tl::SpatialDropout2D(0.5, 21);
  const Shape xs{4, 2, 3, 6};
  const std::vector<double> ones(static_cast<std::size_t>(xs.num_elements()), 1.0);
  tandem::Sequential model({tl::InputLayer({2, 3, 6}), drop});
  const Tensor x = Tensor::from(xs, std::span<const double>(ones)).cast(DType::F32);
  CHECK(max_difference(model.predict(x), x) == 0.0);
  // Training: L = Σ y ⊙ w with w = 1, so dx is the mask: per sample and channel, 0 or 2 everywhere.
  const LayerResult r = run_layer(drop, xs, ones, ones);
  int dropped = 0;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t c = 0; c < 6; ++c) {
      const double first = r.values[0][static_cast<std::size_t>(n * 36 + c)];
      CHECK((first == 0.0 || first == 2.0));
      for (int64_t p = 0; p < 6; ++p) CHECK(r.values[0][static_cast<std::size_t>(n * 36 + p * 6 + c)] == first);
      dropped += first == 0.0;
    }
  CHECK(r.values[1] == r.values[0]);
  CHECK(dropped > 0);
  CHECK(dropped < 24);
}

TEST_CASE("vision: Conv2DTranspose, DepthwiseConv2D, SeparableConv2D and GroupNormalization match PyTorch") {
  const Json refs = read_json(std::string(TANDEM_TEST_DATA) + "/vision_refs.json");
  REQUIRE(refs["cases"].size() >= 16);
  for (const Json& cs : refs["cases"]) {
    const std::string name = cs["name"].get<std::string>();
    INFO(name);
    const Shape xs = shape_of(cs["input_shape"]);
    tandem::LayerRef layer = layer_of(cs);
    layer->build_for({xs.without_batch()});
    std::vector<Tensor> weights;
    for (std::size_t i = 0; i < layer->weights().size(); ++i) weights.push_back(tensor(layer->weights()[i]->value().shape(), cs["weights"][i]));
    REQUIRE(weights.size() == cs["weights"].size());
    layer->set_weights(weights);
    const LayerResult r = run_layer(layer, xs, cs["x"].get<std::vector<double>>(), cs["w"].get<std::vector<double>>());
    CHECK(r.y_shape == shape_of(cs["y_shape"]));
    check_close(r.values[0], cs["y"].get<std::vector<double>>(), 1e-5, name + ": output");
    check_close(r.values[1], cs["dx"].get<std::vector<double>>(), 1e-5, name + ": input gradient");
    for (std::size_t i = 0; i < weights.size(); ++i)
      check_close(r.values[2 + i], cs["dweights"][i].get<std::vector<double>>(), 1e-5, name + ": gradient of " + layer->weights()[i]->name());
  }
}

TEST_CASE("vision: Cropping2D crops as Keras's cropping argument says, and its gradient pads") {
  const Shape xs{2, 6, 7, 2};
  std::vector<double> x(static_cast<std::size_t>(xs.num_elements())), w(2 * 3 * 3 * 2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i % 5) - 2.0;
  const LayerResult r = run_layer(tl::Cropping2D({{1, 2}, {3, 1}}), xs, x, w);
  REQUIRE(r.y_shape == Shape{2, 3, 3, 2});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 7; ++j)
        for (int64_t c = 0; c < 2; ++c) {
          const std::size_t src = static_cast<std::size_t>(((n * 6 + i) * 7 + j) * 2 + c);
          const bool kept = i >= 1 && i < 4 && j >= 3 && j < 6;
          const std::size_t dst = static_cast<std::size_t>(((n * 3 + i - 1) * 3 + j - 3) * 2 + c);
          if (kept) CHECK(r.values[0][dst] == x[src]);
          CHECK(r.values[1][src] == (kept ? w[dst] : 0.0));
        }
  CHECK(tl::Cropping2D()(tandem::Input({4, 5, 3})).shape() == Shape{-1, 4, 5, 3});
  CHECK(tl::Cropping2D(1)(tandem::Input({4, 5, 3})).shape() == Shape{-1, 2, 3, 3});
  CHECK(tl::Cropping2D({1, 2})(tandem::Input({4, 5, 3})).shape() == Shape{-1, 2, 1, 3});
}

TEST_CASE("vision: Keras-made files with every vision layer load and predict as Keras did") {
  const std::filesystem::path dir = std::filesystem::path(TANDEM_TEST_DATA) / "keras";
  const Json models = read_json(dir / "models.json");
  for (const std::string name : {"vision", "vision_tconv"}) {
    const Json& m = models.at(name);
    for (const std::string ext : {".keras", ".h5"}) {
      INFO(name << ext << ", made by Keras " << models.at("keras_version").get<std::string>());
      std::unique_ptr<tandem::Model> model = tandem::load_model((dir / (name + ext)).string());
      const double diff = max_difference(model->predict(tensor_of(m.at("x"))), tensor_of(m.at("y")));
      INFO("max |y_keras - y_tandem| = " << diff);
      CHECK(diff <= 1e-5);
    }
  }
}

TEST_CASE("vision: layer shapes, weights and defaults") {
  const tandem::Symbol x = tandem::Input({5, 6, 3});
  auto weights = [](const tandem::LayerRef& l) {
    std::vector<std::pair<std::string, Shape>> out;
    for (const auto& v : l->weights()) out.emplace_back(v->name(), v->value().shape());
    return out;
  };
  const tandem::LayerRef t = tl::Conv2DTranspose(4, 3, {.strides = 2, .padding = "same"});
  CHECK(t(x).shape() == Shape{-1, 10, 12, 4});
  CHECK(weights(t) == std::vector<std::pair<std::string, Shape>>{{"kernel", {3, 3, 4, 3}}, {"bias", {4}}});
  CHECK(tl::Conv2DTranspose(2, 3)(x).shape() == Shape{-1, 7, 8, 2});
  const tandem::LayerRef d = tl::DepthwiseConv2D(3, {.depth_multiplier = 2});
  CHECK(d(x).shape() == Shape{-1, 3, 4, 6});
  CHECK(weights(d) == std::vector<std::pair<std::string, Shape>>{{"kernel", {3, 3, 3, 2}}, {"bias", {6}}});
  const tandem::LayerRef s = tl::SeparableConv2D(5, 3, {.padding = "same"});
  CHECK(s(x).shape() == Shape{-1, 5, 6, 5});
  CHECK(weights(s) ==
        std::vector<std::pair<std::string, Shape>>{{"depthwise_kernel", {3, 3, 3, 1}}, {"pointwise_kernel", {1, 1, 3, 5}}, {"bias", {5}}});
  const tandem::LayerRef n = tl::GroupNormalization({.groups = 3});
  CHECK(n(x).shape() == Shape{-1, 5, 6, 3});
  CHECK(weights(n) == std::vector<std::pair<std::string, Shape>>{{"gamma", {3}}, {"beta", {3}}});
  CHECK(tl::SpatialDropout2D(0.3)(x).shape() == Shape{-1, 5, 6, 3});
}

TEST_CASE("vision errors: each names the layer, the argument and what came") {
  CHECK(error_of([] { tl::Conv2DTranspose(2, 3, {.strides = 2, .output_padding = 2, .name = "tp"}); }) ==
        "Conv2DTranspose \"tp\": output_padding must be non-negative and strictly less than strides; got output_padding (2, 2) "
        "and strides (2, 2)");
  CHECK(error_of([] { tl::Conv2DTranspose(0, 3, {.name = "t0"}); }) == "Conv2DTranspose \"t0\": filters must be positive, got 0");
  CHECK(error_of([] { tl::Conv2DTranspose(2, 3, {.name = "tr"})(tandem::Input({4, 4})); }) ==
        "Conv2DTranspose \"tr\": expected input of rank 4 (batch, height, width, channels), got (None, 4, 4)");
  CHECK(error_of([] { tl::DepthwiseConv2D(3, {.depth_multiplier = 0, .name = "dm"}); }) ==
        "DepthwiseConv2D \"dm\": depth_multiplier must be positive, got 0");
  CHECK(error_of([] { tl::DepthwiseConv2D(5, {.name = "dk"})(tandem::Input({4, 6, 2})); }) ==
        "DepthwiseConv2D \"dk\": kernel_size (5, 5) is larger than the input's height and width (4, 6) with padding \"valid\"; "
        "input shape (None, 4, 6, 2)");
  CHECK(error_of([] { tl::SeparableConv2D(4, 3, {.padding = "full", .name = "sp"}); }) ==
        "SeparableConv2D \"sp\": padding must be \"valid\" or \"same\", got \"full\"");
  // ((2, 2), (0, 0)) once reached the layer as ((2, 2), (2, 2)) (see Padding2D in tandem/layers/conv.h).
  CHECK(error_of([] { tl::Cropping2D({{2, 2}, {0, 0}}, "cr")(tandem::Input({4, 6, 2})); }) ==
        "Cropping2D \"cr\": cropping ((2, 2), (0, 0)) leaves nothing of the input's height and width (4, 6); input shape (None, 4, 6, 2)");
  CHECK(error_of([] { tl::Cropping2D(-1, "cn"); }) == "Cropping2D \"cn\": cropping must be non-negative, got ((-1, -1), (-1, -1))");
  CHECK(error_of([] { tl::SpatialDropout2D(1.0, std::nullopt, "sd"); }) == "SpatialDropout2D \"sd\": rate must be in [0, 1), got 1");
  CHECK(error_of([] { tl::SpatialDropout2D(0.5, std::nullopt, "s3")(tandem::Input({4, 6})); }) ==
        "SpatialDropout2D \"s3\": expected input of rank 4 (batch, height, width, channels), got (None, 4, 6)");
  CHECK(error_of([] { tl::GroupNormalization({.groups = 4, .name = "gn"})(tandem::Input({4, 6, 6})); }) ==
        "GroupNormalization \"gn\": groups (4) must divide the number of channels (6, axis -1 of input (None, 4, 6, 6))");
  CHECK(error_of([] { tl::GroupNormalization({.axis = 0, .name = "g0"}); }) ==
        "GroupNormalization \"g0\": axis 0 is the batch axis; expected the channel axis (-1: the last)");
}

TEST_CASE("vision: a small model with the vision layers learns") {
  tandem::set_random_seed(4);
  // Two classes: a bright 3x3 square in the top-left or the bottom-right of an 8x8 two-channel image.
  std::mt19937_64 gen(6);
  std::uniform_real_distribution<float> noise(0, 0.2f);
  std::vector<float> x(64 * 128);
  std::vector<int32_t> y(64);
  for (int i = 0; i < 64; ++i) {
    y[static_cast<std::size_t>(i)] = i % 2;
    for (int p = 0; p < 128; ++p) {
      const int r = p / 16, c = p / 2 % 8, o = i % 2 ? 4 : 1;
      x[static_cast<std::size_t>(i * 128 + p)] = noise(gen) + (r >= o && r < o + 3 && c >= o && c < o + 3 ? 1.0f : 0.0f);
    }
  }
  tandem::Sequential model({tl::InputLayer({8, 8, 2}), tl::DepthwiseConv2D(3, {.padding = "same", .depth_multiplier = 2, .activation = "relu"}),
                            tl::SeparableConv2D(4, 3, {.strides = 2, .activation = "relu"}), tl::GroupNormalization({.groups = 2}),
                            tl::SpatialDropout2D(0.1, 3), tl::Conv2DTranspose(4, 3, {.strides = 2, .padding = "same", .activation = "relu"}),
                            tl::Cropping2D(1), tl::Flatten(), tl::Dense(2)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  const auto h = model.fit(Tensor::from({64, 8, 8, 2}, std::span<const float>(x)), Tensor::from({64}, std::span<const int32_t>(y)),
                           {.epochs = 20, .batch_size = 16, .verbose = 0});
  CHECK(h.history.at("loss").back() < 0.5 * h.history.at("loss").front());
  CHECK(h.history.at("accuracy").back() > 0.9);
}

TEST_CASE("vision: the vision layers on 2 and 4 Mirrored replicas end five steps with Default's weights") {
  // SpatialDropout2D's masks follow the global row, and the depthwise filter gradient is summed
  // over replicas like conv2d's, so the replicas train as one device does.
  auto train = [](tandem::distribute::StrategyPtr strategy) {
    tandem::set_random_seed(8);
    tandem::Sequential model({tl::InputLayer({100}), tl::Reshape({10, 10, 1}),
                              tl::DepthwiseConv2D(3, {.depth_multiplier = 2, .activation = "relu"}),
                              tl::SeparableConv2D(4, 3, {.padding = "same"}), tl::GroupNormalization({.groups = 2}),
                              tl::SpatialDropout2D(0.3), tl::Conv2DTranspose(3, 3, {.strides = 2}), tl::Cropping2D(2), tl::Flatten(),
                              tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
    model.fit(blobs(5 * 16, 100, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
    return model.get_weights();
  };
  const std::vector<Tensor> reference = train(tandem::distribute::Default());
  for (int k : {2, 4}) {
    INFO("replicas " << k);
    CHECK(max_relative_difference(train(tandem::distribute::Mirrored(cpus(k))), reference) <= 1e-5);
  }
}

// Convolution, pooling and padding: f64 gradient checks of the ops (with forward values checked
// against direct loops written here), the layers against PyTorch references (tests/data/
// make_conv_refs.py), and error messages.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>

#include "layer_base/call_context.h"
#include "ops/conv.h"
#include "tests/gradient_check.h"
#include "tests/layer_run.h"
#include "lower_with.h"

namespace tl = tandem::layers;
using gradcheck::GradCheck;
using gradcheck::Outcome;
using tandem::DType;
using tandem::Shape;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {
using Pair = ops::Pair;
using layer_run::check_close;
using layer_run::LayerResult;
using layer_run::run_layer;

// TF/Keras "same" padding before the first element, written out from the definition.
int64_t pad_before(int64_t in, int64_t k, int64_t stride, int64_t dilation, bool same) {
  if (!same) return 0;
  const int64_t out = (in + stride - 1) / stride;
  return std::max<int64_t>((out - 1) * stride + (k - 1) * dilation + 1 - in, 0) / 2;
}

// Direct convolution over NHWC x and (kh, kw, C, F) kernel into y of shape ys.
std::vector<double> direct_conv(const Shape& xs, const std::vector<double>& x, const Shape& ks, const std::vector<double>& k,
                                const Shape& ys, Pair s, Pair d, bool same) {
  const int64_t pt = pad_before(xs[1], ks[0], s[0], d[0], same), pl = pad_before(xs[2], ks[1], s[1], d[1], same);
  std::vector<double> y(static_cast<std::size_t>(ys.num_elements()), 0.0);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t oy = 0; oy < ys[1]; ++oy)
      for (int64_t ox = 0; ox < ys[2]; ++ox)
        for (int64_t f = 0; f < ys[3]; ++f) {
          double acc = 0;
          for (int64_t ky = 0; ky < ks[0]; ++ky)
            for (int64_t kx = 0; kx < ks[1]; ++kx) {
              const int64_t iy = oy * s[0] - pt + ky * d[0], ix = ox * s[1] - pl + kx * d[1];
              if (iy < 0 || iy >= xs[1] || ix < 0 || ix >= xs[2]) continue;
              for (int64_t c = 0; c < xs[3]; ++c)
                acc += x[static_cast<std::size_t>(((n * xs[1] + iy) * xs[2] + ix) * xs[3] + c)] *
                       k[static_cast<std::size_t>(((ky * ks[1] + kx) * ks[2] + c) * ks[3] + f)];
            }
          y[static_cast<std::size_t>(((n * ys[1] + oy) * ys[2] + ox) * ys[3] + f)] = acc;
        }
  return y;
}

// Direct pooling: max over, or mean of, the window's real elements.
std::vector<double> direct_pool(const Shape& xs, const std::vector<double>& x, const Shape& ys, Pair p, Pair s, bool same,
                                bool max) {
  const int64_t pt = pad_before(xs[1], p[0], s[0], 1, same), pl = pad_before(xs[2], p[1], s[1], 1, same);
  std::vector<double> y;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t oy = 0; oy < ys[1]; ++oy)
      for (int64_t ox = 0; ox < ys[2]; ++ox)
        for (int64_t c = 0; c < ys[3]; ++c) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int count = 0;
          for (int64_t iy = oy * s[0] - pt; iy < oy * s[0] - pt + p[0]; ++iy)
            for (int64_t ix = ox * s[1] - pl; ix < ox * s[1] - pl + p[1]; ++ix) {
              if (iy < 0 || iy >= xs[1] || ix < 0 || ix >= xs[2]) continue;
              const double v = x[static_cast<std::size_t>(((n * xs[1] + iy) * xs[2] + ix) * xs[3] + c)];
              best = std::max(best, v), sum += v, ++count;
            }
          y.push_back(max ? best : sum / count);
        }
  return y;
}

void check_conv(const Shape& xs, const Shape& ks, Pair s, Pair d, const std::string& padding) {
  const std::string what = "conv2d x " + xs.str() + " kernel " + ks.str() + " strides (" + std::to_string(s[0]) + ", " +
                           std::to_string(s[1]) + ") dilation (" + std::to_string(d[0]) + ", " + std::to_string(d[1]) +
                           ") " + padding;
  GradCheck c;
  const Value x = c.uniform(xs), k = c.uniform(ks, -1, 1);
  const Value y = ops::conv2d(c.g, x, k, s, d, padding);
  const Shape ys = c.g.type(y).shape;
  const Outcome o = c.check(y, what);
  check_close(o.y, direct_conv(xs, c.values(x), ks, c.values(k), ys, s, d, padding == "same"), 1e-12, what + " forward");
}

void check_pool(bool max, const Shape& xs, Pair p, Pair s, const std::string& padding) {
  const std::string what = std::string(max ? "max" : "avg") + "_pool2d x " + xs.str() + " pool (" + std::to_string(p[0]) +
                           ", " + std::to_string(p[1]) + ") strides (" + std::to_string(s[0]) + ", " + std::to_string(s[1]) +
                           ") " + padding;
  GradCheck c;
  const Value x = c.uniform(xs);
  const Value y = max ? ops::max_pool2d(c.g, x, p, s, padding) : ops::avg_pool2d(c.g, x, p, s, padding);
  const Shape ys = c.g.type(y).shape;
  const Outcome o = c.check(y, what);
  check_close(o.y, direct_pool(xs, c.values(x), ys, p, s, padding == "same", max), 1e-12, what + " forward");
}

Shape shape_of(const nlohmann::json& j) { return Shape(j.get<std::vector<int64_t>>()); }
tl::Int2 int2(const nlohmann::json& j) { return {j[0].get<int64_t>(), j[1].get<int64_t>()}; }
tandem::Tensor tensor(const Shape& s, const nlohmann::json& j) {
  const auto v = j.get<std::vector<double>>();
  return tandem::Tensor::from(s, std::span<const double>(v));
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

TEST_CASE("conv: conv2d gradients and values, valid padding and strides") {
  check_conv({2, 5, 6, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, "valid");
  check_conv({2, 7, 6, 2}, {3, 2, 2, 3}, {2, 2}, {1, 1}, "valid");
  check_conv({3, 7, 8, 2}, {2, 3, 2, 2}, {3, 2}, {1, 1}, "valid");  // batch not a multiple of the threads
  check_conv({1, 5, 5, 2}, {3, 3, 2, 2}, {1, 1}, {1, 1}, "valid");  // one image: threaded GEMM path
  check_conv({2, 4, 3, 3}, {1, 1, 3, 4}, {1, 1}, {1, 1}, "valid");  // pointwise: no im2col
}

TEST_CASE("conv: conv2d gradients and values, same padding (asymmetric with strides)") {
  check_conv({2, 5, 6, 2}, {3, 3, 2, 3}, {1, 1}, {1, 1}, "same");
  check_conv({2, 7, 8, 2}, {3, 3, 2, 3}, {2, 2}, {1, 1}, "same");  // pads (1, 1) and (0, 1)
  check_conv({2, 8, 7, 2}, {3, 3, 2, 2}, {2, 2}, {1, 1}, "same");  // pads (0, 1) and (1, 1)
  check_conv({2, 6, 5, 2}, {2, 4, 2, 2}, {2, 3}, {1, 1}, "same");  // even kernel: more padding after
  check_conv({1, 4, 4, 3}, {1, 1, 3, 2}, {2, 2}, {1, 1}, "same");  // 1x1 with stride: not pointwise
}

TEST_CASE("conv: conv2d gradients and values, dilation and combinations") {
  check_conv({2, 7, 8, 2}, {3, 3, 2, 3}, {1, 1}, {2, 2}, "valid");
  check_conv({2, 6, 7, 2}, {3, 3, 2, 2}, {1, 1}, {2, 2}, "same");
  check_conv({2, 8, 9, 2}, {3, 2, 2, 2}, {2, 2}, {2, 3}, "same");  // strides and dilation together
  check_conv({1, 9, 7, 2}, {2, 3, 2, 3}, {2, 1}, {3, 2}, "valid");
}

TEST_CASE("conv: the gradient ops are differentiable (second derivatives)") {
  {
    GradCheck c;
    const Value dy = c.uniform({2, 4, 4, 3}), k = c.uniform({3, 3, 2, 3}, -1, 1);
    c.check(ops::conv2d_backprop_input(c.g, dy, k, {2, 7, 8, 2}, {2, 2}, {1, 1}, "same"), "conv2d_backprop_input");
  }
  {
    GradCheck c;
    const Value x = c.uniform({2, 7, 8, 2}), dy = c.uniform({2, 4, 4, 3});
    c.check(ops::conv2d_backprop_filter(c.g, x, dy, {3, 3, 2, 3}, {2, 2}, {1, 1}, "same"), "conv2d_backprop_filter");
  }
  {
    GradCheck c;
    const Value dy = c.uniform({2, 4, 4, 2});
    tandem::graph::Attrs a{{"pool", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                           {"padding", std::string("same")}, {"input_shape", std::vector<int64_t>{2, 7, 8, 2}}};
    c.check(c.g.add("avg_pool2d_grad", {dy}, a), "avg_pool2d_grad");
  }
}

TEST_CASE("conv: conv2d kernels give the same values with 1, 3 and 4 threads") {
  // Batch 5: one image per thread, several per thread, and fewer images than threads.
  const Shape xs{5, 7, 6, 3}, ks{3, 3, 3, 4};
  Graph g;
  const Value x = g.placeholder("x", {xs, DType::F64}), k = g.placeholder("k", {ks, DType::F64});
  const Value y = ops::conv2d(g, x, k, {2, 1}, {1, 1}, "same");
  const Value dy = g.placeholder("dy", {g.type(y).shape, DType::F64});
  const Value dx = ops::conv2d_backprop_input(g, dy, k, xs, {2, 1}, {1, 1}, "same");
  const Value dk = ops::conv2d_backprop_filter(g, x, dy, ks, {2, 1}, {1, 1}, "same");
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, {y, dx, dk}));
  std::mt19937_64 gen(9);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> inputs;
  for (const Shape& s : {xs, ks, g.type(y).shape}) {
    inputs.emplace_back(static_cast<std::size_t>(s.num_elements()));
    for (double& v : inputs.back()) v = u(gen);
  }
  std::vector<std::vector<double>> first;
  for (const auto& [device, threads] : {std::pair{"cpu:61", 1}, std::pair{"cpu:62", 3}, std::pair{"cpu:63", 4}}) {
    INFO(threads << " threads");
    tandem::runtime::Executable exe(
        plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device(device, threads)}, [](int, int) -> void* { return nullptr; });
    const char* names[] = {"x", "k", "dy"};
    for (int i = 0; i < 3; ++i) std::copy(inputs[i].begin(), inputs[i].end(), static_cast<double*>(exe.feed(0, names[i])));
    exe.run();
    std::vector<std::vector<double>> got;
    for (int i = 0; i < 3; ++i) {
      const auto* p = static_cast<const double*>(exe.fetch(0, i));
      got.emplace_back(p, p + g.type(std::vector<Value>{y, dx, dk}[static_cast<std::size_t>(i)]).shape.num_elements());
    }
    check_close(got[0], direct_conv(xs, inputs[0], ks, inputs[1], g.type(y).shape, {2, 1}, {1, 1}, true), 1e-12, "forward");
    if (first.empty()) first = got;
    check_close(got[1], first[1], 1e-12, "backprop_input");
    check_close(got[2], first[2], 1e-12, "backprop_filter");
  }
}

TEST_CASE("conv: max_pool2d gradients and values") {
  check_pool(true, {2, 6, 7, 3}, {2, 2}, {2, 2}, "valid");
  check_pool(true, {2, 7, 8, 2}, {3, 3}, {2, 2}, "same");
  check_pool(true, {2, 6, 6, 2}, {2, 2}, {1, 1}, "valid");  // overlapping windows
  check_pool(true, {1, 5, 7, 2}, {2, 3}, {1, 2}, "same");
  check_pool(true, {1, 5, 7, 2}, {3, 2}, {3, 3}, "same");   // strides larger than the pool
}

TEST_CASE("conv: avg_pool2d gradients and values (same divides by the real elements)") {
  check_pool(false, {2, 6, 7, 3}, {2, 2}, {2, 2}, "valid");
  check_pool(false, {2, 7, 8, 2}, {3, 3}, {2, 2}, "same");
  check_pool(false, {2, 6, 6, 2}, {2, 2}, {1, 1}, "valid");
  check_pool(false, {1, 5, 7, 2}, {2, 3}, {1, 2}, "same");
  check_pool(false, {1, 5, 7, 2}, {3, 2}, {3, 3}, "same");
}

TEST_CASE("conv: max pooling sends the gradient of a tie to the first maximal element") {
  // One 2x3 image, one channel, a single 2x3 window: the max 5 appears at (0, 1) and (1, 0).
  Graph g;
  const Value x = g.placeholder("x", {Shape{1, 2, 3, 1}, DType::F64});
  const Value dy = g.placeholder("dy", {Shape{1, 1, 1, 1}, DType::F64});
  const Value dx = g.add("max_pool2d_grad", {x, dy},
                         {{"pool", std::vector<int64_t>{2, 3}}, {"strides", std::vector<int64_t>{2, 3}}, {"padding", std::string("valid")}});
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, {dx}));
  tandem::runtime::Executable exe(
      plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")}, [](int, int) -> void* { return nullptr; });
  const double xv[] = {1, 5, 2, 5, 0, 5};
  std::copy(xv, xv + 6, static_cast<double*>(exe.feed(0, "x")));
  *static_cast<double*>(exe.feed(0, "dy")) = 3.0;
  exe.run();
  const auto* out = static_cast<const double*>(exe.fetch(0, 0));
  CHECK(std::vector<double>(out, out + 6) == std::vector<double>{0, 3, 0, 0, 0, 0});
}

TEST_CASE("conv: pad2d and crop2d gradients and values") {
  GradCheck c;
  const Value x = c.uniform({2, 3, 4, 2});
  const Outcome o = c.check(ops::pad2d(c.g, x, {1, 2, 0, 3}), "pad2d");
  const auto& xv = c.values(x);
  REQUIRE(o.y.size() == 2u * 6 * 7 * 2);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 7; ++j)
        for (int64_t ch = 0; ch < 2; ++ch) {
          const bool inside = i >= 1 && i < 4 && j < 4;
          const double want = inside ? xv[static_cast<std::size_t>(((n * 3 + i - 1) * 4 + j) * 2 + ch)] : 0.0;
          CHECK(o.y[static_cast<std::size_t>(((n * 6 + i) * 7 + j) * 2 + ch)] == want);
        }
  GradCheck c2;
  c2.check(ops::crop2d(c2.g, c2.uniform({2, 6, 7, 2}), {1, 2, 0, 3}), "crop2d");
}

TEST_CASE("conv: Conv2D, MaxPooling2D and AveragePooling2D match PyTorch") {
  std::ifstream file(std::string(TANDEM_TEST_DATA) + "/conv_refs.json");
  REQUIRE(file.good());
  const nlohmann::json refs = nlohmann::json::parse(file);
  REQUIRE(refs["cases"].size() >= 10);
  for (const auto& cs : refs["cases"]) {
    const std::string name = cs["name"].get<std::string>(), kind = cs["layer"].get<std::string>();
    INFO(name);
    const Shape xs = shape_of(cs["input_shape"]);
    const std::string padding = cs["padding"].get<std::string>();
    std::optional<tandem::LayerRef> layer;
    if (kind == "Conv2D") {
      const int64_t filters = cs["filters"].get<int64_t>();
      const tl::Int2 kernel_size = int2(cs["kernel_size"]);
      layer = tl::Conv2D(filters, kernel_size,
                         {.strides = int2(cs["strides"]), .padding = padding, .dilation_rate = int2(cs["dilation_rate"]),
                          .activation = cs["activation"].get<std::string>()});
      (*layer)->build_for({xs.without_batch()});
      const Shape ks = (*layer)->weights()[0]->value().shape();
      REQUIRE(ks == Shape{kernel_size.h, kernel_size.w, xs[3], filters});
      (*layer)->set_weights({tensor(ks, cs["kernel"]), tensor({filters}, cs["bias"])});
    } else {
      const tl::Pooling2DOptions o{.strides = int2(cs["strides"]), .padding = padding};
      layer = kind == "MaxPooling2D" ? tl::MaxPooling2D(int2(cs["pool_size"]), o) : tl::AveragePooling2D(int2(cs["pool_size"]), o);
    }
    const LayerResult r = run_layer(*layer, xs, cs["x"].get<std::vector<double>>(), cs["w"].get<std::vector<double>>());
    CHECK(r.y_shape == shape_of(cs["y_shape"]));
    check_close(r.values[0], cs["y"].get<std::vector<double>>(), 1e-5, name + ": output");
    check_close(r.values[1], cs["dx"].get<std::vector<double>>(), 1e-5, name + ": input gradient");
    if (kind == "Conv2D") {
      check_close(r.values[2], cs["dkernel"].get<std::vector<double>>(), 1e-5, name + ": kernel gradient");
      check_close(r.values[3], cs["dbias"].get<std::vector<double>>(), 1e-5, name + ": bias gradient");
    }
  }
}

TEST_CASE("conv: layer output shapes, weights and defaults") {
  const auto in = tandem::Input({28, 28, 1});
  const auto conv = tl::Conv2D(32, 3, {.activation = "relu"});
  const auto c1 = conv(in);
  CHECK(c1.shape() == Shape{-1, 26, 26, 32});
  CHECK(conv->weights().size() == 2);
  CHECK(conv->weights()[0]->name() == "kernel");
  CHECK(conv->weights()[0]->value().shape() == Shape{3, 3, 1, 32});
  CHECK(conv->weights()[1]->name() == "bias");
  CHECK(conv->count_params() == 320);
  CHECK(conv->class_name() == "Conv2D");
  CHECK(conv->name().rfind("conv2d", 0) == 0);
  const auto p1 = tl::MaxPooling2D()(c1);
  CHECK(p1.shape() == Shape{-1, 13, 13, 32});
  CHECK(tl::Conv2D(64, {3, 5}, {.strides = 2, .padding = "same", .use_bias = false})(p1).shape() == Shape{-1, 7, 7, 64});
  CHECK(tl::Conv2D(8, 3, {.padding = "SAME", .dilation_rate = 2})(p1).shape() == Shape{-1, 13, 13, 8});
  CHECK(tl::AveragePooling2D(3, {.strides = 2, .padding = "same"})(p1).shape() == Shape{-1, 7, 7, 32});
  CHECK(tl::AveragePooling2D({2, 3}, {.strides = 1})(p1).shape() == Shape{-1, 12, 11, 32});
  CHECK(tl::GlobalAveragePooling2D()(p1).shape() == Shape{-1, 32});
  CHECK(tl::GlobalAveragePooling2D({.keepdims = true})(p1).shape() == Shape{-1, 1, 1, 32});
  CHECK(tl::ZeroPadding2D()(p1).shape() == Shape{-1, 15, 15, 32});
  CHECK(tl::ZeroPadding2D({1, 2})(p1).shape() == Shape{-1, 15, 17, 32});
  CHECK(tl::ZeroPadding2D({{1, 2}, {3, 4}})(p1).shape() == Shape{-1, 16, 20, 32});
}

TEST_CASE("conv: GlobalAveragePooling2D and ZeroPadding2D values and gradients") {
  std::vector<double> x(2 * 3 * 2 * 2), w(2 * 2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25 * static_cast<double>(i) - 1.0;
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0 + static_cast<double>(i);
  const LayerResult g = run_layer(tl::GlobalAveragePooling2D(), {2, 3, 2, 2}, x, w);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 2; ++c) {
      double mean = 0;
      for (int64_t p = 0; p < 6; ++p) mean += x[static_cast<std::size_t>((n * 6 + p) * 2 + c)] / 6;
      CHECK(g.values[0][static_cast<std::size_t>(n * 2 + c)] == doctest::Approx(mean).epsilon(1e-6));
      for (int64_t p = 0; p < 6; ++p)
        CHECK(g.values[1][static_cast<std::size_t>((n * 6 + p) * 2 + c)] == doctest::Approx(w[static_cast<std::size_t>(n * 2 + c)] / 6));
    }
  std::vector<double> wp(2 * 4 * 5 * 2, 1.0);
  const LayerResult z = run_layer(tl::ZeroPadding2D({{1, 0}, {2, 1}}), {2, 3, 2, 2}, x, wp);
  CHECK(z.y_shape == Shape{2, 4, 5, 2});
  CHECK(z.values[0][0] == 0.0);
  CHECK(z.values[0][static_cast<std::size_t>(((0 * 4 + 1) * 5 + 2) * 2)] == x[0]);
  CHECK(z.values[1] == std::vector<double>(x.size(), 1.0));
}

TEST_CASE("conv: a small CNN trains with fit") {
  tandem::set_random_seed(3);
  // Two classes: a bright 3x3 square in the top-left or the bottom-right of an 8x8 image.
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<float> noise(0, 0.2f);
  std::vector<float> x(64 * 64);
  std::vector<int32_t> y(64);
  for (int i = 0; i < 64; ++i) {
    y[static_cast<std::size_t>(i)] = i % 2;
    for (int p = 0; p < 64; ++p) {
      const int r = p / 8, c = p % 8, o = i % 2 ? 4 : 1;
      x[static_cast<std::size_t>(i * 64 + p)] = noise(gen) + (r >= o && r < o + 3 && c >= o && c < o + 3 ? 1.0f : 0.0f);
    }
  }
  tandem::Sequential model({tl::InputLayer({8, 8, 1}), tl::Conv2D(4, 3, {.padding = "same", .activation = "relu"}),
                            tl::MaxPooling2D(2), tl::Conv2D(4, 3, {.activation = "relu"}), tl::GlobalAveragePooling2D(),
                            tl::Dense(2)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  const auto h = model.fit(tandem::Tensor::from({64, 8, 8, 1}, std::span<const float>(x)),
                           tandem::Tensor::from({64}, std::span<const int32_t>(y)), {.epochs = 30, .batch_size = 16, .verbose = 0});
  CHECK(h.history.at("loss").back() < 0.5 * h.history.at("loss").front());
  CHECK(h.history.at("accuracy").back() > 0.9);
}

TEST_CASE("conv errors: each names the layer, the argument and the shapes") {
  auto msg = [](auto&& f) { return error_of(f); };
  // Kernel larger than the input with "valid" padding, plain and dilated.
  CHECK(msg([] { tl::Conv2D(4, 5, {.name = "c5"})(tandem::Input({4, 6, 1})); }) ==
        "Conv2D \"c5\": kernel_size (5, 5) is larger than the input's height and width (4, 6) with padding \"valid\"; "
        "input shape (None, 4, 6, 1)");
  CHECK(msg([] { tl::Conv2D(4, 3, {.dilation_rate = 3, .name = "cd"})(tandem::Input({6, 8, 2})); }) ==
        "Conv2D \"cd\": kernel_size (3, 3) with dilation_rate (3, 3) spans (7, 7) and is larger than the input's height "
        "and width (6, 8) with padding \"valid\"; input shape (None, 6, 8, 2)");
  CHECK_NOTHROW(tl::Conv2D(4, 5, {.padding = "same"})(tandem::Input({4, 6, 1})));
  // Wrong input rank.
  CHECK(msg([] { tl::Conv2D(4, 3, {.name = "c3"})(tandem::Input({28, 28})); }) ==
        "Conv2D \"c3\": expected input of rank 4 (batch, height, width, channels), got (None, 28, 28)");
  CHECK(msg([] { tl::MaxPooling2D(2, {.name = "mp"})(tandem::Input({28})); }) ==
        "MaxPooling2D \"mp\": expected input of rank 4 (batch, height, width, channels), got (None, 28)");
  CHECK(msg([] { tl::GlobalAveragePooling2D({.name = "gap"})(tandem::Input({4, 4})); }) ==
        "GlobalAveragePooling2D \"gap\": expected input of rank 4 (batch, height, width, channels), got (None, 4, 4)");
  CHECK(msg([] { tl::AveragePooling2D(3, {.name = "ap"})(tandem::Input({2, 5, 1})); }) ==
        "AveragePooling2D \"ap\": pool_size (3, 3) is larger than the input's height and width (2, 5) with padding "
        "\"valid\"; input shape (None, 2, 5, 1)");
  // Non-positive sizes and bad arguments.
  CHECK(msg([] { tl::Conv2D(0, 3, {.name = "f0"}); }) == "Conv2D \"f0\": filters must be positive, got 0");
  CHECK(msg([] { tl::Conv2D(4, {3, 0}, {.name = "k0"}); }) == "Conv2D \"k0\": kernel_size must be positive integers, got (3, 0)");
  CHECK(msg([] { tl::Conv2D(4, 3, {.strides = {1, -1}, .name = "s0"}); }) ==
        "Conv2D \"s0\": strides must be positive integers, got (1, -1)");
  CHECK(msg([] { tl::Conv2D(4, 3, {.dilation_rate = 0, .name = "d0"}); }) ==
        "Conv2D \"d0\": dilation_rate must be positive integers, got (0, 0)");
  CHECK(msg([] { tl::Conv2D(4, 3, {.strides = 2, .dilation_rate = 2, .name = "sd"}); }) ==
        "Conv2D \"sd\": strides > 1 is not supported together with dilation_rate > 1; got strides (2, 2) and "
        "dilation_rate (2, 2)");
  CHECK(msg([] { tl::Conv2D(4, 3, {.padding = "full", .name = "pf"}); }) ==
        "Conv2D \"pf\": padding must be \"valid\" or \"same\", got \"full\"");
  CHECK(msg([] { tl::Conv2D(4, 3, {.activation = "swish2", .name = "ac"}); }).find("Conv2D \"ac\": unknown activation") == 0);
  CHECK(msg([] { tl::MaxPooling2D(0, {.name = "p0"}); }) == "MaxPooling2D \"p0\": pool_size must be positive integers, got (0, 0)");
  CHECK(msg([] { tl::AveragePooling2D(2, {.strides = {0, 1}, .name = "ps"}); }) ==
        "AveragePooling2D \"ps\": strides must be positive integers, got (0, 1)");
  CHECK(msg([] { tl::ZeroPadding2D({1, -1}, "zp"); }) == "ZeroPadding2D \"zp\": padding must be non-negative, got ((1, 1), (-1, -1))");
  CHECK(msg([] { tl::ZeroPadding2D({{0, 2}, {-3, 4}}, "zq"); }) ==
        "ZeroPadding2D \"zq\": padding must be non-negative, got ((0, 2), (-3, 4))");
  // A built layer called on a different number of channels.
  const auto conv = tl::Conv2D(4, 3, {.name = "cc"});
  conv(tandem::Input({8, 8, 3}));
  CHECK(msg([&] { conv(tandem::Input({8, 8, 2})); }) ==
        "Conv2D \"cc\": expected input with 3 channels (last axis), got (None, 8, 8, 2)");
  // The ops check their operands too.
  Graph g;
  const Value x = g.placeholder("x", {Shape{2, 8, 8, 3}, DType::F32});
  const Value k = g.placeholder("k", {Shape{3, 3, 2, 4}, DType::F32});
  CHECK(msg([&] { ops::conv2d(g, x, k); }) ==
        "conv2d: the kernel (3, 3, 2, 4) expects 2 input channels, the input (2, 8, 8, 3) has 3");
  const Value k9 = g.placeholder("k9", {Shape{9, 3, 3, 4}, DType::F32});
  CHECK(msg([&] { ops::conv2d(g, x, k9); }) ==
        "conv2d: window (9, 3) with dilation (1, 1) spans (9, 3), larger than the input's spatial size (8, 8) (input "
        "(2, 8, 8, 3)) with padding \"valid\"");
}

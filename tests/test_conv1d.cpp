// The 1-D sequence layers (Conv1D, MaxPooling1D, AveragePooling1D, GlobalAveragePooling1D,
// GlobalMaxPooling1D) and GlobalMaxPooling2D: output shapes against the closed forms for "valid",
// "same" and "causal" with strides and dilation; forward values against direct loops written
// here; float64 finite-difference gradients of the layers chained as in a model (input and every
// weight); arguments, configs and errors. Keras's own predictions are checked in
// tests/test_keras_files.cpp and tests/keras_interop.py.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "graph/graph.h"
#include "layer_base/call_context.h"
#include "layers/config.h"
#include "tests/gradient_check.h"
#include "tests/strategy_helpers.h"
#include "lower_with.h"

namespace tl = tandem::layers;
using tandem::DType;
using tandem::Shape;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The placeholder name of the i-th output's weights. Appended piece by piece: GCC 12 warns falsely
// (-Wrestrict) on "w" + std::to_string(i).
std::string weight_name(std::size_t i) {
  std::string s = "w";
  s += std::to_string(i);
  return s;
}

// Keras's output length of a 1-D window: "valid" floor((L − span) / s) + 1 with span = (k − 1)·d + 1;
// "same" ceil(L / s); "causal" pads (k − 1)·d before, so it is "valid" on L + (k − 1)·d steps.
int64_t out_len(int64_t L, int64_t k, int64_t s, int64_t d, const std::string& padding) {
  const int64_t span = (k - 1) * d + 1;
  if (padding == "same") return ceil_div(L, s);
  if (padding == "causal") return (L + (k - 1) * d - span) / s + 1;
  return (L - span) / s + 1;
}

// Steps of padding before the first with "same" (TF's rule: the smaller half before) or "causal".
int64_t pad_before(int64_t L, int64_t k, int64_t s, int64_t d, const std::string& padding) {
  if (padding == "causal") return (k - 1) * d;
  if (padding != "same") return 0;
  return std::max<int64_t>((ceil_div(L, s) - 1) * s + (k - 1) * d + 1 - L, 0) / 2;
}

// y[n, t, f] = b[f] + Σ_{j, c} x[n, t·s − pad + j·d, c] · k[j, c, f], out-of-range steps zero.
std::vector<double> direct_conv1d(const std::vector<double>& x, int64_t N, int64_t L, int64_t C, const std::vector<double>& k,
                                  int64_t K, int64_t F, const std::vector<double>& b, int64_t s, int64_t d, const std::string& padding) {
  const int64_t T = out_len(L, K, s, d, padding), p = pad_before(L, K, s, d, padding);
  std::vector<double> y(static_cast<std::size_t>(N * T * F));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t f = 0; f < F; ++f) {
        double acc = b.empty() ? 0.0 : b[static_cast<std::size_t>(f)];
        for (int64_t j = 0; j < K; ++j) {
          const int64_t i = t * s - p + j * d;
          if (i < 0 || i >= L) continue;
          for (int64_t c = 0; c < C; ++c)
            acc += x[static_cast<std::size_t>((n * L + i) * C + c)] * k[static_cast<std::size_t>((j * C + c) * F + f)];
        }
        y[static_cast<std::size_t>((n * T + t) * F + f)] = acc;
      }
  return y;
}

// Max or mean over windows of p steps (stride s); "same" windows count only their real steps.
std::vector<double> direct_pool1d(const std::vector<double>& x, int64_t N, int64_t L, int64_t C, int64_t P, int64_t s,
                                  const std::string& padding, bool max) {
  const int64_t T = out_len(L, P, s, 1, padding), pb = pad_before(L, P, s, 1, padding);
  std::vector<double> y(static_cast<std::size_t>(N * T * C));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        double acc = max ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t j = 0; j < P; ++j) {
          const int64_t i = t * s - pb + j;
          if (i < 0 || i >= L) continue;
          const double v = x[static_cast<std::size_t>((n * L + i) * C + c)];
          acc = max ? std::max(acc, v) : acc + v;
          ++count;
        }
        y[static_cast<std::size_t>((n * T + t) * C + c)] = max ? acc : acc / static_cast<double>(count);
      }
  return y;
}

// Layers chained as in a model: `trunk` applied one after another to x, then each of `heads` on
// the trunk's output (or the trunk's output itself when there are no heads). Built in float64 by a
// symbolic call on Input(x's shape without batch, float64); weights set to uniform values in
// [-1, 1]. Emitted into a graph of its own; L = Σ_i Σ y_i ⊙ W_i with fixed random W_i.
struct Chain {
  std::vector<tandem::LayerRef> trunk, heads;
};

struct Checked {
  std::vector<std::vector<double>> y;  // each output
  std::vector<std::vector<double>> weights;
};

Checked check_chain(const Chain& chain, const Shape& xs, uint64_t seed, const std::string& what) {
  INFO(what);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  // Build in float64.
  tandem::Symbol s = tandem::Input(xs.without_batch(), DType::F64);
  for (const auto& l : chain.trunk) s = l(s);
  for (const auto& l : chain.heads) l(s);
  std::vector<tandem::VariablePtr> vars;
  for (const auto& l : chain.trunk)
    for (const auto& v : l->weights()) vars.push_back(v);
  Checked out;
  for (const auto& v : vars) {
    REQUIRE(v->value().dtype() == DType::F64);
    auto* p = static_cast<double*>(v->value().raw());
    for (int64_t i = 0; i < v->value().size(); ++i) p[i] = u(rng);
    out.weights.emplace_back(p, p + v->value().size());
  }

  Graph g;
  const Value x = g.placeholder("x", {xs, DType::F64});
  tandem::CallContext ctx(g, true, ops::fill(g, {Shape{}, DType::I64}, 0));
  Value h = x;
  for (const auto& l : chain.trunk) {
    tandem::graph::ScopeGuard scope(g, l->name());
    h = l->emit(ctx, {h});
  }
  std::vector<Value> ys;
  for (const auto& l : chain.heads) {
    tandem::graph::ScopeGuard scope(g, l->name());
    ys.push_back(l->emit(ctx, {h}));
  }
  if (ys.empty()) ys.push_back(h);
  std::vector<std::vector<double>> w_values;
  Value loss;
  for (std::size_t i = 0; i < ys.size(); ++i) {
    const tandem::TensorType t = g.type(ys[i]);
    REQUIRE(t.dtype == DType::F64);
    std::vector<double> w(static_cast<std::size_t>(t.shape.num_elements()));
    for (double& e : w) e = u(rng);
    w_values.push_back(std::move(w));
    const Value wv = g.placeholder(weight_name(i), t);
    const Value term = ops::reduce_sum(g, ops::mul(g, ys[i], wv), gradcheck::all_axes(t.shape.rank()));
    loss = i == 0 ? term : ops::add(g, loss, term);
  }
  std::vector<Value> wrt{x};
  for (const auto& v : vars) wrt.push_back(ctx.variable(*v));
  const std::vector<Value> grads = tandem::autodiff::gradients(g, loss, wrt);
  std::vector<Value> fetches{loss};
  for (Value y : ys) fetches.push_back(y);
  for (Value d : grads) {
    REQUIRE(d.valid());
    fetches.push_back(d);
  }
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
  std::map<int, void*> homes;
  for (const auto& v : vars) homes[v->id()] = v->value().raw();
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
                                  [&](int, int id) { return homes.at(id); });
  std::vector<double> xv(static_cast<std::size_t>(xs.num_elements()));
  for (double& e : xv) e = u(rng);
  auto feed = [&](const std::string& name, const std::vector<double>& v) {
    if (void* p = exe.feed(0, name)) exe.device(0).copy_in(p, v.data(), v.size() * sizeof(double));
  };
  auto run = [&] {
    feed("x", xv);
    for (std::size_t i = 0; i < w_values.size(); ++i) feed(weight_name(i), w_values[i]);
    exe.run();
    return *static_cast<const double*>(exe.fetch(0, 0));
  };
  auto fetched = [&](std::size_t f, Value v) {
    const auto* p = static_cast<const double*>(exe.fetch(0, static_cast<int>(f)));
    return std::vector<double>(p, p + g.type(v).shape.num_elements());
  };
  run();
  for (std::size_t i = 0; i < ys.size(); ++i) out.y.push_back(fetched(1 + i, ys[i]));
  std::vector<std::vector<double>> analytic;
  for (std::size_t k = 0; k < grads.size(); ++k) analytic.push_back(fetched(1 + ys.size() + k, grads[k]));
  out.weights.insert(out.weights.begin(), xv);  // out.weights[0] is x
  // Central differences of L in every element of x and of every weight.
  for (std::size_t k = 0; k < wrt.size(); ++k) {
    double* p = k == 0 ? xv.data() : static_cast<double*>(vars[k - 1]->value().raw());
    double worst = 0, scale = gradcheck::kFloor;
    for (std::size_t j = 0; j < analytic[k].size(); ++j) {
      const double saved = p[j];
      p[j] = saved + gradcheck::kStep;
      const double plus = run();
      p[j] = saved - gradcheck::kStep;
      const double minus = run();
      p[j] = saved;
      const double numeric = (plus - minus) / (2 * gradcheck::kStep);
      worst = std::max(worst, std::abs(analytic[k][j] - numeric));
      scale = std::max(scale, std::abs(numeric));
    }
    INFO("d/d " << (k == 0 ? std::string("x") : vars[k - 1]->path()) << ": max |analytic - numeric| = " << worst
                << ", max |numeric| = " << scale);
    CHECK(worst / scale <= gradcheck::kTolerance);
  }
  return out;
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
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

}  // namespace

TEST_CASE("conv1d: output shapes follow the closed forms for valid, same and causal with strides and dilation") {
  for (const char* padding : {"valid", "same", "causal"})
    for (int64_t L : {7, 8, 20})
      for (int64_t k : {1, 2, 3, 5})
        for (int64_t s : {1, 2, 3})
          for (int64_t d : {1, 2, 3}) {
            if (s > 1 && d > 1) continue;  // Keras refuses the combination (checked below)
            if (std::string(padding) == "valid" && (k - 1) * d + 1 > L) continue;
            INFO("padding " << padding << ", steps " << L << ", kernel " << k << ", strides " << s << ", dilation " << d);
            const auto conv = tl::Conv1D(4, k, {.strides = s, .padding = padding, .dilation_rate = d});
            CHECK(conv(tandem::Input({L, 3})).shape() == Shape{-1, out_len(L, k, s, d, padding), 4});
            CHECK(conv->weights()[0]->value().shape() == Shape{k, 3, 4});
            CHECK(conv->weights()[1]->value().shape() == Shape{4});
          }
  for (const char* padding : {"valid", "same"})
    for (int64_t L : {5, 6, 9})
      for (int64_t p : {1, 2, 3})
        for (int64_t s : {1, 2, 3}) {
          INFO("padding " << padding << ", steps " << L << ", pool " << p << ", strides " << s);
          const Shape want{-1, out_len(L, p, s, 1, padding), 2};
          CHECK(tl::MaxPooling1D(p, {.strides = s, .padding = padding})(tandem::Input({L, 2})).shape() == want);
          CHECK(tl::AveragePooling1D(p, {.strides = s, .padding = padding})(tandem::Input({L, 2})).shape() == want);
        }
  // Defaults: pool_size 2, strides = pool_size, "valid".
  CHECK(tl::MaxPooling1D()(tandem::Input({9, 2})).shape() == Shape{-1, 4, 2});
  CHECK(tl::AveragePooling1D(3)(tandem::Input({9, 2})).shape() == Shape{-1, 3, 2});
  CHECK(tl::GlobalAveragePooling1D()(tandem::Input({9, 2})).shape() == Shape{-1, 2});
  CHECK(tl::GlobalAveragePooling1D({.keepdims = true})(tandem::Input({9, 2})).shape() == Shape{-1, 1, 2});
  CHECK(tl::GlobalMaxPooling1D()(tandem::Input({9, 2})).shape() == Shape{-1, 2});
  CHECK(tl::GlobalMaxPooling1D({.keepdims = true})(tandem::Input({9, 2})).shape() == Shape{-1, 1, 2});
  CHECK(tl::GlobalMaxPooling2D()(tandem::Input({4, 5, 3})).shape() == Shape{-1, 3});
  CHECK(tl::GlobalMaxPooling2D({.keepdims = true})(tandem::Input({4, 5, 3})).shape() == Shape{-1, 1, 1, 3});
  const auto conv = tl::Conv1D(8, 3, {.use_bias = false});
  conv(tandem::Input({10, 2}));
  CHECK(conv->weights().size() == 1);
  CHECK(conv->count_params() == 48);
  CHECK(conv->class_name() == "Conv1D");
  CHECK(conv->name().rfind("conv1d", 0) == 0);
  CHECK(tl::MaxPooling1D()->name().rfind("max_pooling1d", 0) == 0);
  CHECK(tl::AveragePooling1D()->name().rfind("average_pooling1d", 0) == 0);
  CHECK(tl::GlobalAveragePooling1D()->name().rfind("global_average_pooling1d", 0) == 0);
  CHECK(tl::GlobalMaxPooling1D()->name().rfind("global_max_pooling1d", 0) == 0);
  CHECK(tl::GlobalMaxPooling2D()->name().rfind("global_max_pooling2d", 0) == 0);
}

TEST_CASE("conv1d: Conv1D values equal a direct loop and its float64 gradients finite differences (valid, same, causal)") {
  struct Case {
    const char* padding;
    int64_t L, C, F, k, s, d;
    bool bias;
  };
  const Case cases[] = {{"valid", 9, 3, 4, 3, 1, 1, true},  {"valid", 11, 2, 3, 3, 1, 2, true}, {"valid", 10, 2, 3, 2, 3, 1, false},
                        {"same", 9, 3, 2, 3, 2, 1, true},   {"same", 8, 2, 3, 4, 1, 2, true},  {"same", 10, 2, 2, 4, 3, 1, true},
                        {"causal", 9, 3, 4, 3, 1, 2, true}, {"causal", 7, 2, 3, 2, 2, 1, true}, {"causal", 6, 1, 2, 5, 1, 1, false}};
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const std::string what = std::string("Conv1D padding ") + c.padding + ", steps " + std::to_string(c.L) + ", kernel " +
                             std::to_string(c.k) + ", strides " + std::to_string(c.s) + ", dilation " + std::to_string(c.d);
    const int64_t N = 2;
    const Checked r = check_chain({{tl::Conv1D(c.F, c.k, {.strides = c.s, .padding = c.padding, .dilation_rate = c.d, .use_bias = c.bias})}, {}},
                                  {N, c.L, c.C}, seed++, what);
    INFO(what);
    const std::vector<double> want = direct_conv1d(r.weights[0], N, c.L, c.C, r.weights[1], c.k, c.F,
                                                   c.bias ? r.weights[2] : std::vector<double>{}, c.s, c.d, c.padding);
    CHECK(max_abs_difference(r.y[0], want) <= 1e-12);
  }
}

TEST_CASE("conv1d: MaxPooling1D and AveragePooling1D values equal direct loops (same averages real steps only) and their gradients finite differences") {
  struct Case {
    const char* padding;
    int64_t L, p, s;
  };
  uint64_t seed = 20;
  for (const Case& c : {Case{"valid", 9, 2, 2}, Case{"valid", 9, 3, 2}, Case{"same", 7, 2, 2}, Case{"same", 8, 3, 1}, Case{"same", 10, 4, 3}})
    for (bool max : {true, false}) {
      const std::string what = std::string(max ? "MaxPooling1D" : "AveragePooling1D") + " padding " + c.padding + ", steps " +
                               std::to_string(c.L) + ", pool " + std::to_string(c.p) + ", strides " + std::to_string(c.s);
      const tandem::LayerRef layer = max ? tl::MaxPooling1D(c.p, {.strides = c.s, .padding = c.padding})
                                         : tl::AveragePooling1D(c.p, {.strides = c.s, .padding = c.padding});
      const Checked r = check_chain({{layer}, {}}, {2, c.L, 3}, seed++, what);
      INFO(what);
      CHECK(max_abs_difference(r.y[0], direct_pool1d(r.weights[0], 2, c.L, 3, c.p, c.s, c.padding, max)) <= 1e-12);
    }
}

TEST_CASE("conv1d: the layers chained as in a model (causal dilated Conv1D, pools, strided same Conv1D, both global pools) have float64 gradients equal to finite differences") {
  // Input (12, 3) → Conv1D causal k3 d2 → MaxPooling1D 2 → Conv1D same k3 s2 → AveragePooling1D 2 same
  // → GlobalAveragePooling1D and GlobalMaxPooling1D (keepdims) heads.
  const Chain chain{{tl::Conv1D(4, 3, {.padding = "causal", .dilation_rate = 2, .activation = "tanh"}), tl::MaxPooling1D(),
                     tl::Conv1D(3, 3, {.strides = 2, .padding = "same", .activation = "tanh"}),
                     tl::AveragePooling1D(2, {.padding = "same"})},
                    {tl::GlobalAveragePooling1D(), tl::GlobalMaxPooling1D({.keepdims = true})}};
  const Checked r = check_chain(chain, {2, 12, 3}, 7, "1-D chain");
  REQUIRE(r.y.size() == 2);
  CHECK(r.y[0].size() == 2 * 3);
  CHECK(r.y[1].size() == 2 * 3);

  // GlobalMaxPooling2D after a Conv2D, and GlobalMaxPooling1D / GlobalAveragePooling1D values.
  const Checked g2 = check_chain({{tl::Conv2D(3, 2, {.activation = "tanh"})}, {tl::GlobalMaxPooling2D(), tl::GlobalMaxPooling2D({.keepdims = true})}},
                                 {2, 4, 5, 2}, 8, "Conv2D → GlobalMaxPooling2D");
  CHECK(g2.y[0] == g2.y[1]);
  const Checked g1 = check_chain({{}, {tl::GlobalAveragePooling1D(), tl::GlobalMaxPooling1D()}}, {2, 5, 3}, 9, "global 1-D pools");
  const std::vector<double>& x = g1.weights[0];
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c) {
      double sum = 0, mx = -INFINITY;
      for (int64_t t = 0; t < 5; ++t) sum += x[static_cast<std::size_t>((n * 5 + t) * 3 + c)], mx = std::max(mx, x[static_cast<std::size_t>((n * 5 + t) * 3 + c)]);
      CHECK(g1.y[0][static_cast<std::size_t>(n * 3 + c)] == doctest::Approx(sum / 5).epsilon(1e-12));
      CHECK(g1.y[1][static_cast<std::size_t>(n * 3 + c)] == mx);
    }
}

TEST_CASE("conv1d: a model of the 1-D layers trains with fit, and under Mirrored on 2 devices ends at one device's weights") {
  // Two classes: a bump of 3 steps, somewhere in a 16-step sequence, on channel 0 or on channel 1.
  std::mt19937_64 gen(5);
  std::normal_distribution<float> noise(0, 0.3f);
  std::vector<float> x(64 * 16 * 2);
  std::vector<int32_t> y(64);
  for (int i = 0; i < 64; ++i) {
    y[static_cast<std::size_t>(i)] = i % 2;
    for (int t = 0; t < 16; ++t)
      for (int c = 0; c < 2; ++c)
        x[static_cast<std::size_t>((i * 16 + t) * 2 + c)] = noise(gen) + (c == i % 2 && t >= (i * 5) % 13 && t < (i * 5) % 13 + 3 ? 1.0f : 0.0f);
  }
  const tandem::Tensor xs = tandem::Tensor::from({64, 16, 2}, std::span<const float>(x)), ys = tandem::Tensor::from({64}, std::span<const int32_t>(y));
  auto train = [&](tandem::distribute::StrategyPtr strategy, int epochs) {
    tandem::set_random_seed(3);
    const tandem::Symbol in = tandem::Input({16, 2});
    const tandem::Symbol h = tl::Conv1D(4, 3, {.padding = "causal", .dilation_rate = 2, .activation = "relu"})(in);
    const tandem::Symbol p = tl::AveragePooling1D(2, {.padding = "same"})(tl::Conv1D(4, 3, {.strides = 2, .padding = "same"})(tl::MaxPooling1D()(h)));
    const tandem::Symbol k = tl::Concatenate()({tl::GlobalAveragePooling1D()(p), tl::GlobalMaxPooling1D()(h)});
    auto model = std::make_unique<tandem::Model>(in, tl::Dense(2)(k));
    model->compile({.optimizer = tandem::optimizers::Adam(1e-2),
                    .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"},
                    .strategy = strategy});
    const auto history = model->fit(xs, ys, {.epochs = epochs, .batch_size = 16, .shuffle = false, .verbose = 0});
    return std::make_pair(model->get_weights(), history);
  };
  const auto [trained, history] = train(nullptr, 20);
  CHECK(history.history.at("loss").back() < 0.5 * history.history.at("loss").front());
  CHECK(history.history.at("accuracy").back() > 0.9);
  const auto one = train(nullptr, 2).first, two = train(tandem::distribute::Mirrored(cpus(2)), 2).first;
  CHECK(max_relative_difference(one, two) <= 1e-5);
}

TEST_CASE("conv1d: configs are Keras's (one-element tuples, strides defaulting to pool_size) and load back") {
  using Json = tl::Json;
  const auto conv = tl::Conv1D(5, 3, {.strides = 2, .padding = "Causal", .activation = "relu", .name = "c"});
  const Json cj = Json::parse(conv->config_json());
  CHECK(cj.at("kernel_size") == Json::array({3}));
  CHECK(cj.at("strides") == Json::array({2}));
  CHECK(cj.at("dilation_rate") == Json::array({1}));
  CHECK(cj.at("padding") == "causal");
  CHECK(cj.at("groups") == 1);
  CHECK(cj.at("data_format") == "channels_last");
  const auto back = tl::layer_from_config("Conv1D", cj);
  CHECK(back->config_json() == conv->config_json());
  // Keras also accepts plain integers.
  Json plain = cj;
  plain["kernel_size"] = 3;
  plain["strides"] = 2;
  CHECK(tl::layer_from_config("Conv1D", plain)->config_json() == conv->config_json());

  const Json pj = Json::parse(tl::MaxPooling1D(3, {.name = "p"})->config_json());
  CHECK(pj.at("pool_size") == Json::array({3}));
  CHECK(pj.at("strides") == Json::array({3}));
  CHECK(pj.at("padding") == "valid");
  Json none = pj;
  none["strides"] = nullptr;
  CHECK(tl::layer_from_config("MaxPooling1D", none)->config_json() == tl::MaxPooling1D(3, {.name = "p"})->config_json());
  const Json aj = Json::parse(tl::AveragePooling1D(2, {.strides = 1, .padding = "same", .name = "a"})->config_json());
  CHECK(aj.at("strides") == Json::array({1}));
  CHECK(tl::layer_from_config("AveragePooling1D", aj)->config_json() == aj.dump());
  for (const char* cls : {"GlobalAveragePooling1D", "GlobalMaxPooling1D", "GlobalMaxPooling2D"}) {
    INFO(cls);
    Json g = {{"name", "g"}, {"trainable", true}, {"dtype", "float32"}, {"data_format", "channels_last"}, {"keepdims", true}};
    const Json written = Json::parse(tl::layer_from_config(cls, g)->config_json());
    CHECK(written.at("keepdims") == true);
    CHECK(written.at("data_format") == "channels_last");
  }
}

TEST_CASE("conv1d errors: each names the layer, the argument, what it accepts and what came") {
  auto msg = [](auto&& f) { return error_of(f); };
  CHECK(msg([] { tl::Conv1D(0, 3, {.name = "f0"}); }) == "Conv1D \"f0\": filters must be positive, got 0");
  CHECK(msg([] { tl::Conv1D(4, 0, {.name = "k0"}); }) == "Conv1D \"k0\": kernel_size must be positive, got 0");
  CHECK(msg([] { tl::Conv1D(4, 3, {.strides = -1, .name = "s0"}); }) == "Conv1D \"s0\": strides must be positive, got -1");
  CHECK(msg([] { tl::Conv1D(4, 3, {.dilation_rate = 0, .name = "d0"}); }) == "Conv1D \"d0\": dilation_rate must be positive, got 0");
  CHECK(msg([] { tl::Conv1D(4, 3, {.padding = "full", .name = "pf"}); }) ==
        "Conv1D \"pf\": padding must be \"valid\", \"same\" or \"causal\", got \"full\"");
  CHECK(msg([] { tl::Conv1D(4, 3, {.strides = 2, .dilation_rate = 2, .name = "sd"}); }) ==
        "Conv1D \"sd\": strides > 1 is not supported together with dilation_rate > 1; got strides 2 and dilation_rate 2");
  CHECK(msg([] { tl::Conv1D(4, 3, {.activation = "swish2", .name = "ac"}); }).find("Conv1D \"ac\": unknown activation") == 0);
  CHECK(msg([] { tl::Conv1D(4, 3, {.name = "r"})(tandem::Input({20})); }) ==
        "Conv1D \"r\": expected input of rank 3 (batch, steps, channels), got (None, 20)");
  CHECK(msg([] { tl::Conv1D(4, 3, {.dilation_rate = 3, .name = "w"})(tandem::Input({6, 2})); }) ==
        "Conv1D \"w\": kernel_size 3 with dilation_rate 3 spans 7 and is larger than the input's 6 steps with padding "
        "\"valid\"; input shape (None, 6, 2)");
  CHECK_NOTHROW(tl::Conv1D(4, 3, {.padding = "causal", .dilation_rate = 3})(tandem::Input({6, 2})));
  const auto conv = tl::Conv1D(4, 3, {.name = "cc"});
  conv(tandem::Input({8, 3}));
  CHECK(msg([&] { conv(tandem::Input({8, 2})); }) == "Conv1D \"cc\": expected input with 3 channels (last axis), got (None, 8, 2)");
  CHECK(msg([] { tl::MaxPooling1D(0, {.name = "p0"}); }) == "MaxPooling1D \"p0\": pool_size must be positive, got 0");
  CHECK(msg([] { tl::AveragePooling1D(2, {.strides = 0, .name = "ps"}); }) == "AveragePooling1D \"ps\": strides must be positive, got 0");
  CHECK(msg([] { tl::MaxPooling1D(2, {.padding = "causal", .name = "pc"}); }) ==
        "MaxPooling1D \"pc\": padding must be \"valid\" or \"same\", got \"causal\"");
  CHECK(msg([] { tl::AveragePooling1D(4, {.name = "big"})(tandem::Input({3, 2})); }) ==
        "AveragePooling1D \"big\": pool_size 4 is larger than the input's 3 steps with padding \"valid\"; input shape (None, 3, 2)");
  CHECK(msg([] { tl::MaxPooling1D(2, {.name = "m4"})(tandem::Input({4, 4, 2})); }) ==
        "MaxPooling1D \"m4\": expected input of rank 3 (batch, steps, channels), got (None, 4, 4, 2)");
  CHECK(msg([] { tl::GlobalAveragePooling1D({.name = "ga"})(tandem::Input({4})); }) ==
        "GlobalAveragePooling1D \"ga\": expected input of rank 3 (batch, steps, channels), got (None, 4)");
  CHECK(msg([] { tl::GlobalMaxPooling1D({.name = "gm"})(tandem::Input({4, 4, 2})); }) ==
        "GlobalMaxPooling1D \"gm\": expected input of rank 3 (batch, steps, channels), got (None, 4, 4, 2)");
  CHECK(msg([] { tl::GlobalMaxPooling2D({.name = "g2"})(tandem::Input({4, 2})); }) ==
        "GlobalMaxPooling2D \"g2\": expected input of rank 4 (batch, height, width, channels), got (None, 4, 2)");
  // Configs: a data_format Tandem does not implement, and a malformed tuple.
  tl::Json cfg = tl::Json::parse(tl::Conv1D(4, 3, {.name = "cf"})->config_json());
  cfg["data_format"] = "channels_first";
  CHECK(msg([&] { tl::layer_from_config("Conv1D", cfg); }).find("Conv1D \"cf\": config key \"data_format\": expected \"channels_last\"") == 0);
  cfg = tl::Json::parse(tl::Conv1D(4, 3, {.name = "cf"})->config_json());
  cfg["kernel_size"] = tl::Json::array({3, 3});
  CHECK(msg([&] { tl::layer_from_config("Conv1D", cfg); }).find("config key \"kernel_size\": expected an integer or a list of one integer") !=
        std::string::npos);
}

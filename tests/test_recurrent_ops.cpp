// The recurrent ops lstm, gru and simple_rnn (ops/recurrent.h) and their gradient ops, on the CPU:
// - float64 finite-difference gradients of every differentiable input (xw, h0, c0,
//   recurrent_kernel, recurrent_bias) with y and the final states all weighted in the loss, over
//   go_backwards, masks with skipped steps (leading, trailing, consecutive, a fully masked row),
//   zero_output_for_mask, recurrent_scale, both GRU variants and non-default activations; the
//   forward values of the same runs against a direct double loop written here from Keras's cell
//   equations and loop (keras/src/layers/rnn/*.py, keras/src/backend/tensorflow/rnn.py);
// - forward values and gradients (through x·kernel + bias, as a layer feeds the op) against
//   PyTorch (tests/data/recurrent_refs.json, made by tests/data/make_recurrent_refs.py), float32
//   and float64; the direct loop is checked against the same references;
// - the same results, bit for bit, on 1 and on 4 CPU threads;
// - reverse (Bidirectional puts the backward sequence back in time order with it): finite
//   differences and its forward against the index arithmetic.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/recurrent.h"
#include "tests/gradient_check.h"
#include "lower_with.h"

using nlohmann::json;
using tandem::DType;
using tandem::Shape;
using tandem::TensorType;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;

namespace {

enum class Kind { Lstm, Gru, SimpleRnn };

int gates_of(Kind k) { return k == Kind::Lstm ? 4 : k == Kind::Gru ? 3 : 1; }
const char* name_of(Kind k) { return k == Kind::Lstm ? "lstm" : k == Kind::Gru ? "gru" : "simple_rnn"; }

struct Config {
  Kind kind;
  bool go_backwards = false, masked = false, zero_output_for_mask = false, scaled = false, reset_after = true;
  std::string activation = "tanh", recurrent_activation = "sigmoid";

  std::string str() const {
    std::string s(name_of(kind));
    s.append(" activation=").append(activation);
    if (kind != Kind::SimpleRnn) s.append(" recurrent_activation=").append(recurrent_activation);
    if (kind == Kind::Gru) s.append(reset_after ? " reset_after" : " reset_before");
    if (go_backwards) s.append(" go_backwards");
    if (masked) s.append(" masked");
    if (zero_output_for_mask) s.append(" zero_output_for_mask");
    if (scaled) s.append(" recurrent_scale");
    return s;
  }
  ops::RecurrentAttrs attrs() const { return {activation, recurrent_activation, go_backwards, zero_output_for_mask}; }
};

// --- The direct loop: Keras's semantics in plain double loops, independent of the kernels. ---

double activate(const std::string& a, double x) {
  if (a == "tanh") return std::tanh(x);
  if (a == "sigmoid") return 1 / (1 + std::exp(-x));
  if (a == "relu") return x > 0 ? x : 0;
  return x;  // linear
}

struct Sequence {
  std::vector<double> y, h, c;
};

// Inputs as the op takes them; c0 and recurrent_bias only where the op has them, scale empty for none.
struct OpInputs {
  int64_t batch, steps, units;
  std::vector<double> xw, h0, c0, u, rb, mask, scale;
};

Sequence direct_loop(const Config& cfg, const OpInputs& in) {
  const int64_t B = in.batch, S = in.steps, H = in.units, G = gates_of(cfg.kind);
  auto xw = [&](int64_t b, int64_t t, int64_t g, int64_t j) { return in.xw[static_cast<std::size_t>(((b * S + t) * G + g) * H + j)]; };
  auto sc = [&](int64_t b, int64_t g, int64_t k) { return in.scale.empty() ? 1.0 : in.scale[static_cast<std::size_t>((b * G + g) * H + k)]; };
  auto U = [&](int64_t k, int64_t g, int64_t j) { return in.u[static_cast<std::size_t>(k * G * H + g * H + j)]; };
  // Σ_k v[k]·U[k, g·H + j], v given per k.
  auto dot = [&](const std::vector<double>& v, int64_t g, int64_t j) {
    double sum = 0;
    for (int64_t k = 0; k < H; ++k) sum += v[static_cast<std::size_t>(k)] * U(k, g, j);
    return sum;
  };
  Sequence out;
  out.y.assign(static_cast<std::size_t>(B * S * H), 0.0);
  out.h = in.h0;
  out.c = in.c0;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> h(in.h0.begin() + b * H, in.h0.begin() + (b + 1) * H), c, prev_y(static_cast<std::size_t>(H), 0.0);
    if (cfg.kind == Kind::Lstm) c.assign(in.c0.begin() + b * H, in.c0.begin() + (b + 1) * H);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = cfg.go_backwards ? S - 1 - s : s;
      double* y = &out.y[static_cast<std::size_t>((b * S + s) * H)];
      if (in.mask[static_cast<std::size_t>(b * S + t)] == 0) {  // skipped: states kept, output repeated or zero
        for (int64_t j = 0; j < H; ++j) y[j] = cfg.zero_output_for_mask ? 0.0 : prev_y[static_cast<std::size_t>(j)];
        continue;
      }
      // h as gate g's recurrent product sees it (Keras's h_tm1 * rec_dp_mask[g]).
      auto hs = [&](int64_t g) {
        std::vector<double> v(static_cast<std::size_t>(H));
        for (int64_t k = 0; k < H; ++k) v[static_cast<std::size_t>(k)] = h[static_cast<std::size_t>(k)] * sc(b, g, k);
        return v;
      };
      std::vector<double> hn(static_cast<std::size_t>(H)), cn = c;
      if (cfg.kind == Kind::Lstm) {
        for (int64_t j = 0; j < H; ++j) {
          const double i = activate(cfg.recurrent_activation, xw(b, t, 0, j) + dot(hs(0), 0, j));
          const double f = activate(cfg.recurrent_activation, xw(b, t, 1, j) + dot(hs(1), 1, j));
          const double g = activate(cfg.activation, xw(b, t, 2, j) + dot(hs(2), 2, j));
          const double o = activate(cfg.recurrent_activation, xw(b, t, 3, j) + dot(hs(3), 3, j));
          cn[static_cast<std::size_t>(j)] = f * c[static_cast<std::size_t>(j)] + i * g;
          hn[static_cast<std::size_t>(j)] = o * activate(cfg.activation, cn[static_cast<std::size_t>(j)]);
        }
      } else if (cfg.kind == Kind::Gru) {
        std::vector<double> z(static_cast<std::size_t>(H)), r(static_cast<std::size_t>(H)), rh(static_cast<std::size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          const auto J = static_cast<std::size_t>(j);
          const double bz = cfg.reset_after ? in.rb[J] : 0, br = cfg.reset_after ? in.rb[J + static_cast<std::size_t>(H)] : 0;
          z[J] = activate(cfg.recurrent_activation, xw(b, t, 0, j) + dot(hs(0), 0, j) + bz);
          r[J] = activate(cfg.recurrent_activation, xw(b, t, 1, j) + dot(hs(1), 1, j) + br);
          rh[J] = r[J] * h[J] * sc(b, 2, j);
        }
        for (int64_t j = 0; j < H; ++j) {
          const auto J = static_cast<std::size_t>(j);
          const double pre = cfg.reset_after ? xw(b, t, 2, j) + r[J] * (dot(hs(2), 2, j) + in.rb[J + 2 * static_cast<std::size_t>(H)])
                                             : xw(b, t, 2, j) + dot(rh, 2, j);
          hn[J] = z[J] * h[J] + (1 - z[J]) * activate(cfg.activation, pre);
        }
      } else {
        for (int64_t j = 0; j < H; ++j) hn[static_cast<std::size_t>(j)] = activate(cfg.activation, xw(b, t, 0, j) + dot(hs(0), 0, j));
      }
      h = hn, c = cn, prev_y = hn;
      for (int64_t j = 0; j < H; ++j) y[j] = hn[static_cast<std::size_t>(j)];
    }
    std::copy(h.begin(), h.end(), out.h.begin() + b * H);
    if (cfg.kind == Kind::Lstm) std::copy(c.begin(), c.end(), out.c.begin() + b * H);
  }
  return out;
}

// Relative difference of two tensors: max |a − b| / max(max |b|, 1).
double relative_difference(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0, scale = 1;
  for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i])), scale = std::max(scale, std::abs(want[i]));
  return worst / scale;
}

// --- Finite-difference checks ---

constexpr int64_t kBatch = 4, kSteps = 5, kUnits = 3;

// Indexed by time. Row 0 skips the first, a middle and the last step; row 1 two steps in a row
// (the masked output repeats twice); row 2 every step; row 3 none.
const std::vector<double> kMask = {0, 1, 0, 1, 0,  //
                                   1, 1, 0, 0, 1,  //
                                   0, 0, 0, 0, 0,  //
                                   1, 1, 1, 1, 1};

// A recurrent dropout mask as Keras makes it: 0 or 1 / (1 − rate) per (batch, gate, unit).
std::vector<double> dropout_scale(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution dropped(0.3);
  std::vector<double> s(static_cast<std::size_t>(n));
  for (double& v : s) v = dropped(rng) ? 0.0 : 1 / 0.7;
  return s;
}

// The op on GradCheck's placeholders; checks every gradient, and y, h (and c) against the direct loop.
void check_op(const Config& cfg, uint64_t seed) {
  INFO(cfg.str());
  const int64_t B = kBatch, S = kSteps, H = kUnits, G = gates_of(cfg.kind);
  gradcheck::GradCheck c(seed);
  const Value xw = c.uniform({B, S, G * H}, -1, 1);
  const Value h0 = c.uniform({B, H}, -0.5, 0.5);
  const Value c0 = cfg.kind == Kind::Lstm ? c.uniform({B, H}, -0.5, 0.5) : Value{};
  const Value u = c.uniform({H, G * H}, -0.7, 0.7);
  const Value rb = cfg.kind == Kind::Gru ? c.uniform({G * H}, -0.3, 0.3) : Value{};
  const Value mask = c.fixed({B, S}, cfg.masked ? kMask : std::vector<double>(static_cast<std::size_t>(B * S), 1.0));
  const Value scale = cfg.scaled ? c.fixed({B, G, H}, dropout_scale(B * G * H, seed + 100)) : Value{};
  std::vector<Value> outputs;
  if (cfg.kind == Kind::Lstm) {
    const auto r = ops::lstm(c.g, xw, h0, c0, u, mask, scale, cfg.attrs());
    outputs = {r.y, r.h, r.c};
  } else if (cfg.kind == Kind::Gru) {
    const auto r = ops::gru(c.g, xw, h0, u, rb, mask, scale, cfg.attrs(), cfg.reset_after);
    outputs = {r.y, r.h};
  } else {
    const auto r = ops::simple_rnn(c.g, xw, h0, u, mask, scale, cfg.attrs());
    outputs = {r.y, r.h};
  }
  // Every output in the one differentiated tensor (GradCheck weights each element differently).
  outputs[0] = ops::reshape(c.g, outputs[0], {B, S * H});
  const gradcheck::Outcome o = c.check(ops::concat(c.g, outputs, 1), cfg.str());

  OpInputs in{B, S, H, c.values(xw), c.values(h0), {}, c.values(u), {}, c.values(mask), {}};
  if (c0.valid()) in.c0 = c.values(c0);
  if (rb.valid()) in.rb = c.values(rb);
  if (scale.valid()) in.scale = c.values(scale);
  const Sequence want = direct_loop(cfg, in);
  // concat along axis 1: row b is y[b] (S·H), h[b] (H) [, c[b] (H)]
  std::vector<double> expected;
  for (int64_t b = 0; b < B; ++b) {
    expected.insert(expected.end(), want.y.begin() + b * S * H, want.y.begin() + (b + 1) * S * H);
    expected.insert(expected.end(), want.h.begin() + b * H, want.h.begin() + (b + 1) * H);
    if (cfg.kind == Kind::Lstm) expected.insert(expected.end(), want.c.begin() + b * H, want.c.begin() + (b + 1) * H);
  }
  const double diff = relative_difference(o.y, expected);
  INFO(name_of(cfg.kind) << " forward against the direct loop: relative difference " << diff);
  CHECK(diff <= 1e-13);
}

std::vector<Config> variants(Kind kind) {
  const bool gru = kind == Kind::Gru;
  std::vector<Config> out;
  for (bool reset_after : gru ? std::vector<bool>{true, false} : std::vector<bool>{true}) {
    auto cfg = [&](bool back, bool masked, bool zero, bool scaled, std::string act, std::string ract) {
      Config c{kind, back, masked, zero, scaled, reset_after, std::move(act), std::move(ract)};
      out.push_back(c);
    };
    cfg(false, false, false, false, "tanh", "sigmoid");
    cfg(true, false, false, false, "tanh", "sigmoid");
    cfg(false, true, false, false, "tanh", "sigmoid");
    cfg(true, true, false, false, "tanh", "sigmoid");
    cfg(false, true, true, false, "tanh", "sigmoid");
    cfg(true, true, true, true, "tanh", "sigmoid");
    cfg(false, false, false, true, "tanh", "sigmoid");
    cfg(true, true, false, true, "relu", kind == Kind::SimpleRnn ? "sigmoid" : "linear");
    cfg(false, true, false, true, "linear", kind == Kind::SimpleRnn ? "sigmoid" : "relu");
    cfg(true, false, true, false, "sigmoid", "tanh");
  }
  return out;
}

}  // namespace

TEST_CASE("recurrent ops: lstm gradients by finite differences, and its forward against a direct loop") {
  uint64_t seed = 11;
  for (const Config& cfg : variants(Kind::Lstm)) check_op(cfg, seed++);
}

TEST_CASE("recurrent ops: gru gradients by finite differences (reset after and before), and its forward against a direct loop") {
  uint64_t seed = 41;
  for (const Config& cfg : variants(Kind::Gru)) check_op(cfg, seed++);
}

TEST_CASE("recurrent ops: simple_rnn gradients by finite differences, and its forward against a direct loop") {
  uint64_t seed = 71;
  for (const Config& cfg : variants(Kind::SimpleRnn)) check_op(cfg, seed++);
}

// --- Graphs run directly: PyTorch references and thread counts ---

namespace {

// Runs `fetches` once on cpu:0 with `threads` threads, each of the placeholders `inputs` fed from
// `feeds` (by name) in the graph's float dtype; returns the fetched values as doubles.
std::vector<std::vector<double>> run(Graph& g, const std::vector<Value>& fetches, const std::vector<std::string>& inputs,
                                     const std::map<std::string, std::vector<double>>& feeds, DType dtype, int threads) {
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0", threads)},
                                  [](int, int) -> void* { return nullptr; });
  for (const std::string& name : inputs) {
    INFO("feeding " << name);
    const std::vector<double>& v = feeds.at(name);
    void* p = exe.feed(0, name);
    if (!p) continue;
    if (dtype == DType::F64) {
      exe.device(0).copy_in(p, v.data(), v.size() * sizeof(double));
    } else {
      const std::vector<float> f(v.begin(), v.end());
      exe.device(0).copy_in(p, f.data(), f.size() * sizeof(float));
    }
  }
  exe.run();
  std::vector<std::vector<double>> out;
  for (std::size_t i = 0; i < fetches.size(); ++i) {
    const auto n = static_cast<std::size_t>(g.type(fetches[i]).shape.num_elements());
    const void* p = exe.fetch(0, static_cast<int>(i));
    if (dtype == DType::F64) {
      const auto* d = static_cast<const double*>(p);
      out.emplace_back(d, d + n);
    } else {
      const auto* f = static_cast<const float*>(p);
      out.emplace_back(f, f + n);
    }
  }
  return out;
}

std::vector<double> doubles(const json& v) { return v.get<std::vector<double>>(); }

// A layer's use of the op: xw = x·kernel + bias for all steps at once, then the op, with
// L = Σ y⊙W1 + Σ h⊙W2 (+ Σ c⊙W3). Returns the fetches: y, h, [c,] then dL/d of x, h0, [c0,]
// kernel, recurrent_kernel, bias[, recurrent_bias], with the names of those.
struct LayerGraph {
  Graph g;
  std::vector<Value> fetches;
  std::vector<std::string> names;
  std::vector<std::string> inputs;  // the placeholders' names
};

void build_layer(LayerGraph& lg, Kind kind, const Config& cfg, int64_t B, int64_t S, int64_t I, int64_t H, DType dtype,
                 const Value* scale = nullptr, bool masked = false) {
  Graph& g = lg.g;
  const int64_t G = gates_of(kind);
  auto ph = [&](const char* name, Shape s) {
    lg.inputs.emplace_back(name);
    return g.placeholder(name, TensorType{std::move(s), dtype});
  };
  const Value x = ph("x", {B, S, I}), h0 = ph("h0", {B, H}), kernel = ph("kernel", {I, G * H}), u = ph("recurrent_kernel", {H, G * H}),
              bias = ph("bias", {G * H}), w1 = ph("w1", {B, S, H}), w2 = ph("w2", {B, H});
  const Value xw =
      ops::reshape(g, ops::bias_add(g, ops::matmul(g, ops::reshape(g, x, {B * S, I}), kernel), bias), {B, S, G * H});
  const Value mask = masked ? ph("mask", {B, S}) : ops::fill(g, TensorType{Shape{B, S}, dtype}, 1.0);
  const Value sc = scale ? *scale : Value{};
  std::vector<Value> outputs, wrt{x, h0};
  lg.names = {"x", "h0"};
  Value c0, rb;
  if (kind == Kind::Lstm) {
    c0 = ph("c0", {B, H});
    const auto r = ops::lstm(g, xw, h0, c0, u, mask, sc, cfg.attrs());
    outputs = {r.y, r.h, r.c};
    wrt.push_back(c0), lg.names.push_back("c0");
  } else if (kind == Kind::Gru) {
    rb = ph("recurrent_bias", {G * H});
    const auto r = ops::gru(g, xw, h0, u, rb, mask, sc, cfg.attrs(), cfg.reset_after);
    outputs = {r.y, r.h};
  } else {
    const auto r = ops::simple_rnn(g, xw, h0, u, mask, sc, cfg.attrs());
    outputs = {r.y, r.h};
  }
  wrt.insert(wrt.end(), {kernel, u, bias});
  lg.names.insert(lg.names.end(), {"kernel", "recurrent_kernel", "bias"});
  if (rb.valid()) wrt.push_back(rb), lg.names.push_back("recurrent_bias");
  Value loss = ops::add(g, ops::reduce_sum(g, ops::mul(g, outputs[0], w1), {0, 1, 2}), ops::reduce_sum(g, ops::mul(g, outputs[1], w2), {0, 1}));
  if (kind == Kind::Lstm) loss = ops::add(g, loss, ops::reduce_sum(g, ops::mul(g, outputs[2], ph("w3", {B, H})), {0, 1}));
  lg.fetches = outputs;
  for (Value d : tandem::autodiff::gradients(g, loss, wrt)) {
    REQUIRE(d.valid());
    lg.fetches.push_back(d);
  }
}

// The names of a LayerGraph's fetches, as the reference file names them.
std::vector<std::string> output_names(Kind kind, const LayerGraph& lg) {
  std::vector<std::string> names{"y", "h"};
  if (kind == Kind::Lstm) names.push_back("c");
  for (const std::string& n : lg.names) names.push_back(std::string("d").append(n));
  return names;
}

json load_refs() {
  std::ifstream in(std::string(TANDEM_TEST_DATA) + "/recurrent_refs.json");
  REQUIRE(in.good());
  return json::parse(in);
}

}  // namespace

TEST_CASE("recurrent ops: forward and gradients through x·kernel + bias match PyTorch, float32 and float64") {
  for (const json& ref : load_refs()) {
    const std::string kind_name = ref["kind"], act = ref["activation"];
    const Kind kind = kind_name == "lstm" ? Kind::Lstm : kind_name == "gru" ? Kind::Gru : Kind::SimpleRnn;
    const int64_t B = ref["batch"], S = ref["steps"], I = ref["input"], H = ref["units"];
    Config cfg{kind};
    cfg.activation = act;
    std::map<std::string, std::vector<double>> feeds;
    for (const char* k : {"x", "h0", "c0", "kernel", "recurrent_kernel", "bias", "recurrent_bias", "w1", "w2", "w3"})
      if (ref.contains(k)) feeds[k] = doubles(ref[k]);

    // The direct loop against PyTorch first, so that it is trusted where PyTorch has no equivalent.
    {
      const int64_t G = gates_of(kind);
      auto get = [&](const char* k) { return feeds.contains(k) ? feeds.at(k) : std::vector<double>{}; };
      OpInputs in{B, S, H, std::vector<double>(static_cast<std::size_t>(B * S * G * H)), get("h0"), get("c0"),
                  get("recurrent_kernel"), get("recurrent_bias"), std::vector<double>(static_cast<std::size_t>(B * S), 1.0), {}};
      for (int64_t r = 0; r < B * S; ++r)
        for (int64_t n = 0; n < G * H; ++n) {
          double v = feeds.at("bias")[static_cast<std::size_t>(n)];
          for (int64_t i = 0; i < I; ++i) v += feeds.at("x")[static_cast<std::size_t>(r * I + i)] * feeds.at("kernel")[static_cast<std::size_t>(i * G * H + n)];
          in.xw[static_cast<std::size_t>(r * G * H + n)] = v;
        }
      const Sequence loop = direct_loop(cfg, in);
      INFO(cfg.str() << ": the direct loop against PyTorch");
      CHECK(relative_difference(loop.y, doubles(ref["y"])) <= 1e-13);
      CHECK(relative_difference(loop.h, doubles(ref["h"])) <= 1e-13);
    }

    for (DType dtype : {DType::F32, DType::F64}) {
      LayerGraph lg;
      build_layer(lg, kind, cfg, B, S, I, H, dtype);
      const auto got = run(lg.g, lg.fetches, lg.inputs, feeds, dtype, 1);
      const double tolerance = dtype == DType::F32 ? 1e-5 : 1e-12;
      const std::vector<std::string> names = output_names(kind, lg);
      for (std::size_t i = 0; i < names.size(); ++i) {
        const double diff = relative_difference(got[i], doubles(ref[names[i]]));
        INFO(cfg.str() << " " << std::string(tandem::dtype_name(dtype)) << " " << names[i] << " against PyTorch: relative difference "
                       << diff << " (tolerance " << tolerance << ")");
        CHECK(diff <= tolerance);
      }
    }
  }
}

TEST_CASE("recurrent ops: forward and gradients are bitwise the same on 1 and 4 threads") {
  // Big enough that the per-step row loops and the dU GEMM are split between threads.
  const int64_t B = 96, S = 6, I = 8, H = 32;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  auto draw = [&](int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& e : v) e = u(rng);
    return v;
  };
  for (Kind kind : {Kind::Lstm, Kind::Gru, Kind::SimpleRnn}) {
    for (bool scaled : {false, true}) {
      const int64_t G = gates_of(kind);
      Config cfg{kind};
      cfg.go_backwards = scaled;
      cfg.reset_after = !scaled;
      INFO(cfg.str() << std::string(scaled ? " recurrent_scale" : ""));
      std::map<std::string, std::vector<double>> feeds{
          {"x", draw(B * S * I)}, {"h0", draw(B * H)}, {"c0", draw(B * H)}, {"kernel", draw(I * G * H)}, {"recurrent_kernel", draw(H * G * H)},
          {"bias", draw(G * H)}, {"recurrent_bias", draw(G * H)}, {"w1", draw(B * S * H)}, {"w2", draw(B * H)}, {"w3", draw(B * H)}};
      std::vector<double> mask(static_cast<std::size_t>(B * S), 1.0);
      for (std::size_t i = 0; i < mask.size(); i += 7) mask[i] = 0;
      feeds["mask"] = mask;
      feeds["scale"] = dropout_scale(B * G * H, 3);
      std::vector<std::vector<double>> results[2];
      std::vector<std::string> names;
      for (int run_i = 0; run_i < 2; ++run_i) {
        LayerGraph lg;
        Value scale;
        if (scaled) scale = lg.g.placeholder("scale", TensorType{Shape{B, G, H}, DType::F32}), lg.inputs.emplace_back("scale");
        build_layer(lg, kind, cfg, B, S, I, H, DType::F32, scaled ? &scale : nullptr, true);
        results[run_i] = run(lg.g, lg.fetches, lg.inputs, feeds, DType::F32, run_i == 0 ? 1 : 4);
        names = output_names(kind, lg);
      }
      REQUIRE(results[0].size() == results[1].size());
      for (std::size_t i = 0; i < results[0].size(); ++i) {
        // dbias is bias_add's gradient, a column sum that the project sums in blocks per thread by
        // design (backend/cpu/column_sums.h); everything else passes through this op's kernels.
        if (names[i] == "dbias") continue;
        INFO(names[i]);
        CHECK(results[0][i] == results[1][i]);
      }
    }
  }
}

TEST_CASE("reverse: gradients by finite differences, and the forward is the sequence read backwards") {
  for (int64_t axis : {0, 1, 2}) {
    INFO("axis " << axis);
    gradcheck::GradCheck c(31 + static_cast<uint64_t>(axis));
    const Value x = c.uniform({3, 4, 2}, -1, 1);
    const gradcheck::Outcome o = c.check(ops::reverse(c.g, x, axis), "reverse");
    for (double e : o.error) CHECK(e <= gradcheck::kTolerance);
    const std::vector<double>& in = c.values(x);
    const int64_t dims[] = {3, 4, 2};
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 2; ++k) {
          int64_t at[] = {i, j, k};
          at[axis] = dims[axis] - 1 - at[axis];
          CHECK(o.y[static_cast<std::size_t>((i * 4 + j) * 2 + k)] == in[static_cast<std::size_t>((at[0] * 4 + at[1]) * 2 + at[2])]);
        }
  }
}

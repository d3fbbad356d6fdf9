// Embeddings, merging and attention: f64 gradient checks of the ops (gather, concat, slice,
// transpose, batch_matmul, causal_mask) and of a small attention graph built from them; Embedding
// and MultiHeadAttention against PyTorch references (tests/data/make_attention_refs.py); the merge
// layers and PositionEmbedding against closed forms; a tiny Transformer trained end to end; errors.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "layer_base/call_context.h"
#include "ops/attention.h"
#include "tests/gradient_check.h"
#include "lower_with.h"

namespace {

using gradcheck::GradCheck;
using gradcheck::Outcome;
using tandem::DType;
using tandem::Shape;
using tandem::Tensor;
using tandem::graph::Value;
namespace ops = tandem::ops;
namespace tl = tandem::layers;

// Element i of a flat row-major vector, for the naive reference loops.
double at(const std::vector<double>& v, int64_t i) { return v[static_cast<std::size_t>(i)]; }

void check_batch_matmul(const Shape& as, const Shape& bs, bool ta, bool tb) {
  GradCheck c;
  const Value a = c.uniform(as), b = c.uniform(bs);
  const Outcome o = c.check(ops::batch_matmul(c.g, a, b, ta, tb),
                            "batch_matmul " + as.str() + (ta ? "ᵀ" : "") + " · " + bs.str() + (tb ? "ᵀ" : ""));
  const int64_t m = ta ? as[-1] : as[-2], k = ta ? as[-2] : as[-1], n = tb ? bs[-2] : bs[-1];
  const int64_t batch = as.num_elements() / (m * k);
  const auto &av = c.values(a), &bv = c.values(b);
  REQUIRE(o.y.size() == static_cast<std::size_t>(batch * m * n));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += at(av, p * m * k + (ta ? q * m + i : i * k + q)) * at(bv, p * k * n + (tb ? j * k + q : q * n + j));
        CHECK(at(o.y, (p * m + i) * n + j) == doctest::Approx(s).epsilon(1e-12));
      }
}

// Naive transpose of a row-major tensor for the forward check.
std::vector<double> naive_transpose(const std::vector<double>& x, const Shape& s, const std::vector<int64_t>& perm) {
  const int r = s.rank();
  std::vector<double> y(x.size());
  std::vector<int64_t> idx(static_cast<std::size_t>(r), 0);
  for (std::size_t flat = 0; flat < x.size(); ++flat) {
    int64_t rem = static_cast<int64_t>(flat);
    for (int d = r - 1; d >= 0; --d) idx[static_cast<std::size_t>(d)] = rem % s[d], rem /= s[d];
    int64_t out = 0;
    for (int d = 0; d < r; ++d) out = out * s[static_cast<int>(perm[static_cast<std::size_t>(d)])] + idx[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])];
    y[static_cast<std::size_t>(out)] = x[flat];
  }
  return y;
}

}  // namespace

TEST_CASE("attention: gather gradient wrt the table, int32 and int64 ids") {
  for (DType id_type : {DType::I32, DType::I64}) {
    GradCheck c;
    const Value table = c.uniform({6, 3});
    const Value ids = c.labels({4, 5}, 6, id_type);  // 20 ids over 6 rows: repeats accumulate
    const Outcome o = c.check(ops::gather(c.g, table, ids), "gather");
    const auto &t = c.values(table), &id = c.values(ids);
    for (int64_t i = 0; i < 20; ++i)
      for (int64_t d = 0; d < 3; ++d) CHECK(at(o.y, i * 3 + d) == at(t, static_cast<int64_t>(at(id, i)) * 3 + d));
  }
}

TEST_CASE("attention: scatter_add gradient wrt the updates") {
  GradCheck c;
  const Value updates = c.uniform({3, 2, 4});
  const Value ids = c.labels({3, 2}, 5, DType::I64);
  const Outcome o = c.check(ops::scatter_add(c.g, updates, ids, 5), "scatter_add");
  std::vector<double> want(20, 0.0);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t d = 0; d < 4; ++d) want[static_cast<std::size_t>(at(c.values(ids), i) * 4 + d)] += at(c.values(updates), i * 4 + d);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(o.y[i] == doctest::Approx(want[i]).epsilon(1e-14));
}

TEST_CASE("attention: concat gradient along every axis") {
  for (int64_t axis : {0, 1, 2, -1}) {
    GradCheck c;
    Shape a{2, 3, 4}, b{2, 3, 4}, d{2, 3, 4};
    const int ax = axis < 0 ? 2 : static_cast<int>(axis);
    b[ax] = 2, d[ax] = 1;
    const Value x = c.uniform(a), y = c.uniform(b), z = c.uniform(d);
    const Outcome o = c.check(ops::concat(c.g, {x, y, z}, axis), "concat axis " + std::to_string(axis));
    // Forward: walk the output and take each element from the input that owns its axis position.
    Shape os = a;
    os[ax] = a[ax] + b[ax] + d[ax];
    REQUIRE(o.y.size() == static_cast<std::size_t>(os.num_elements()));
    for (int64_t i = 0; i < os.num_elements(); ++i) {
      int64_t rem = i, idx[3];
      for (int k = 2; k >= 0; --k) idx[k] = rem % os[k], rem /= os[k];
      const Shape* src = &a;
      const std::vector<double>* v = &c.values(x);
      if (idx[ax] >= a[ax] + b[ax]) idx[ax] -= a[ax] + b[ax], src = &d, v = &c.values(z);
      else if (idx[ax] >= a[ax]) idx[ax] -= a[ax], src = &b, v = &c.values(y);
      CHECK(o.y[static_cast<std::size_t>(i)] == at(*v, (idx[0] * (*src)[1] + idx[1]) * (*src)[2] + idx[2]));
    }
  }
}

TEST_CASE("attention: slice gradient") {
  GradCheck c;
  const Value x = c.uniform({3, 5, 2});
  const Outcome o = c.check(ops::slice(c.g, x, 1, 1, 3), "slice [1, 4) of axis 1");
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) CHECK(at(o.y, (i * 3 + j) * 2 + k) == at(c.values(x), (i * 5 + j + 1) * 2 + k));
}

TEST_CASE("attention: transpose gradient for several permutations") {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{3, 4}, {1, 0}}, {{2, 3, 4}, {2, 0, 1}}, {{2, 3, 4, 5}, {0, 2, 1, 3}}, {{2, 3, 1, 4}, {3, 1, 0, 2}}, {{2, 3, 4}, {1, 2, 0}}};
  for (const auto& [shape, perm] : cases) {
    GradCheck c;
    const Value x = c.uniform(shape);
    const Outcome o = c.check(ops::transpose(c.g, x, perm), "transpose " + shape.str());
    CHECK(o.y == naive_transpose(c.values(x), shape, perm));
  }
}

TEST_CASE("attention: batch_matmul gradient for every transpose flag") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // op(A) (2, 3, 4, 5) · op(B) (2, 3, 5, 2): the batch is (2, 3).
      const Shape as = ta ? Shape{2, 3, 5, 4} : Shape{2, 3, 4, 5};
      const Shape bs = tb ? Shape{2, 3, 2, 5} : Shape{2, 3, 5, 2};
      check_batch_matmul(as, bs, ta, tb);
      check_batch_matmul(ta ? Shape{3, 2} : Shape{2, 3}, tb ? Shape{4, 3} : Shape{3, 4}, ta, tb);  // rank 2
    }
  check_batch_matmul({64, 3, 4}, {64, 4, 2}, false, false);  // more items than threads: batch-parallel path
}

TEST_CASE("attention: causal_mask forward and gradient, through the softmax it feeds") {
  // Alone, Σ y⊙W would hold −1e9·W terms whose rounding swamps central differences; masked
  // scores only ever feed a softmax, so that is the function checked.
  for (int64_t offset : {0, 2, -1}) {
    GradCheck c;
    const Value x = c.uniform({2, 3, 4});
    const Outcome o = c.check(ops::softmax(c.g, ops::causal_mask(c.g, x, offset), -1), "causal_mask offset " + std::to_string(offset));
    for (int64_t row = 0; row < 6; ++row) {
      const int64_t i = row % 3;
      const int64_t visible = std::clamp<int64_t>(i + offset + 1, 0, 4);
      double total = 0;
      for (int64_t j = 0; j < visible; ++j) total += std::exp(at(c.values(x), row * 4 + j));
      for (int64_t j = 0; j < 4; ++j) {
        // A row with no visible key (offset −1, i = 0) holds four equal masked scores: uniform,
        // up to the rounding of log-sum-exp at magnitude 1e9.
        const double want = visible == 0 ? 0.25 : j < visible ? std::exp(at(c.values(x), row * 4 + j)) / total : 0.0;
        CHECK(at(o.y, row * 4 + j) == doctest::Approx(want).epsilon(visible == 0 ? 1e-6 : 1e-12));
      }
    }
  }
}

TEST_CASE("attention: causal_mask forward values") {
  for (int64_t offset : {0, 2, -1}) {
    GradCheck c;
    const Value x = c.fixed({2, 3, 4}, -2, 2);  // not differentiated: one plain run
    const Outcome o = c.check(ops::causal_mask(c.g, x, offset), "causal_mask");
    for (int64_t f = 0; f < 24; ++f) {
      const int64_t i = (f / 4) % 3, j = f % 4;
      CHECK(at(o.y, f) == (j <= i + offset ? at(c.values(x), f) : ops::kMaskedScore));
    }
  }
}

TEST_CASE("attention: a two-head causal attention graph end to end") {
  // x (B, T, D) -> per-head q, k, v -> softmax(mask(q·kᵀ/√h)) · v -> heads joined -> · Wo.
  const int64_t B = 2, T = 4, D = 6, N = 2, H = 2;
  GradCheck c;
  const Value x = c.uniform({B, T, D}, -1, 1);
  const Value wq = c.uniform({D, N * H}, -1, 1), wk = c.uniform({D, N * H}, -1, 1), wv = c.uniform({D, N * H}, -1, 1);
  const Value wo = c.uniform({N * H, D}, -1, 1);
  auto& g = c.g;
  auto heads = [&](Value w) { return ops::transpose(g, ops::reshape(g, ops::matmul(g, x, w), {B, T, N, H}), {0, 2, 1, 3}); };
  const Value scores = ops::scale(g, ops::batch_matmul(g, heads(wq), heads(wk), false, true), 1 / std::sqrt(double(H)));
  const Value p = ops::softmax(g, ops::causal_mask(g, scores), -1);
  const Value joined = ops::reshape(g, ops::transpose(g, ops::batch_matmul(g, p, heads(wv)), {0, 2, 1, 3}), {B, T, N * H});
  const Outcome o = c.check(ops::matmul(g, joined, wo), "causal attention");

  // The same computation with loops.
  const auto &xv = c.values(x), &q = c.values(wq), &k = c.values(wk), &v = c.values(wv), &out = c.values(wo);
  auto proj = [&](const std::vector<double>& w, int64_t b, int64_t t, int64_t col) {
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += at(xv, (b * T + t) * D + d) * at(w, d * N * H + col);
    return s;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> ctx(static_cast<std::size_t>(N * H), 0.0);
      for (int64_t n = 0; n < N; ++n) {
        std::vector<double> e;
        double total = 0;
        for (int64_t j = 0; j <= i; ++j) {  // causal: keys 0..i
          double s = 0;
          for (int64_t h = 0; h < H; ++h) s += proj(q, b, i, n * H + h) * proj(k, b, j, n * H + h);
          e.push_back(std::exp(s / std::sqrt(double(H))));
          total += e.back();
        }
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t h = 0; h < H; ++h) ctx[static_cast<std::size_t>(n * H + h)] += e[static_cast<std::size_t>(j)] / total * proj(v, b, j, n * H + h);
      }
      for (int64_t d = 0; d < D; ++d) {
        double s = 0;
        for (int64_t m = 0; m < N * H; ++m) s += ctx[static_cast<std::size_t>(m)] * at(out, m * D + d);
        CHECK(at(o.y, (b * T + i) * D + d) == doctest::Approx(s).epsilon(1e-12));
      }
    }
}

// ---------------------------------------------------------------------------------------------
// Layers

namespace {

using json = nlohmann::json;

const json& refs() {
  static const json j = [] {
    std::ifstream f(std::string(TANDEM_TEST_DATA) + "/attention_refs.json");
    REQUIRE(f.good());
    return json::parse(f);
  }();
  return j;
}
Shape shape_of(const json& t) { return Shape(t.at("shape").get<std::vector<int64_t>>()); }
std::vector<double> data_of(const json& t) { return t.at("data").get<std::vector<double>>(); }
Tensor tensor_of(const json& t) {
  const std::vector<double> d = data_of(t);
  return Tensor::from(shape_of(t), std::span<const double>(d)).cast(DType::F32);
}

struct Feed {
  Feed(Shape shape, DType dtype, std::vector<double> v) : type{std::move(shape), dtype}, values(std::move(v)) {}
  tandem::TensorType type;
  std::vector<double> values;
};
Feed feed_of(const json& t) { return Feed(shape_of(t), DType::F32, data_of(t)); }

struct LayerGrads {
  std::vector<double> y;
  std::vector<std::vector<double>> d_inputs, d_weights;  // empty where the loss does not depend on it
};

// Calls `layer` on placeholders in a graph of its own (after building it for the inputs and
// setting `weights`), and returns y and the gradients of L = Σ y ⊙ w for the float inputs and
// every weight.
LayerGrads run_layer(tandem::Layer& layer, const std::vector<Feed>& inputs, const std::vector<Tensor>& weights,
                     const std::vector<double>& w) {
  using namespace tandem;
  graph::Graph g;
  std::vector<Value> ins;
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(g.placeholder("in" + std::to_string(i), inputs[i].type));
    shapes.push_back(inputs[i].type.shape.without_batch());
  }
  layer.build_for(shapes);
  if (!weights.empty()) layer.set_weights(weights);
  CallContext ctx(g, false, g.placeholder("step", {Shape{}, DType::I64}));
  Value y;
  {
    graph::ScopeGuard scope(g, layer.name());
    y = layer.emit(ctx, ins);
  }
  const TensorType yt = g.type(y);
  REQUIRE(yt.shape.num_elements() == static_cast<int64_t>(w.size()));
  const Value wv = g.placeholder("w", yt);
  const Value loss = ops::reduce_sum(g, ops::mul(g, y, wv), gradcheck::all_axes(yt.shape.rank()));
  std::vector<Value> wrt;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (ops::is_float(inputs[i].type.dtype)) wrt.push_back(ins[i]);
  const std::size_t n_inputs = wrt.size();
  for (const VariablePtr& v : layer.weights()) wrt.push_back(ctx.variable(*v));
  const std::vector<Value> grads = autodiff::gradients(g, loss, wrt);
  std::vector<Value> fetches{y};
  for (Value d : grads)
    if (d.valid()) fetches.push_back(d);
  auto plan = std::make_shared<const compile::Plan>(lower_with(distribute::Default(), g, fetches));
  std::map<int, void*> vars;
  for (const VariablePtr& v : layer.weights()) vars[v->id()] = v->value().raw();
  runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")}, [&](int, int id) { return vars.at(id); });
  auto write = [&](const std::string& name, const TensorType& t, const std::vector<double>& x) {
    void* p = exe.feed(0, name);
    if (!p) return;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (t.dtype == DType::F32) static_cast<float*>(p)[i] = static_cast<float>(x[i]);
      else if (t.dtype == DType::I64) static_cast<int64_t*>(p)[i] = static_cast<int64_t>(x[i]);
      else if (t.dtype == DType::I32) static_cast<int32_t*>(p)[i] = static_cast<int32_t>(x[i]);
      else FAIL("unsupported feed dtype");
    }
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) write("in" + std::to_string(i), inputs[i].type, inputs[i].values);
  write("w", yt, w);
  exe.run();
  auto read = [&](int f, Value v) {
    const auto* p = static_cast<const float*>(exe.fetch(0, f));
    return std::vector<double>(p, p + g.type(v).shape.num_elements());
  };
  LayerGrads out;
  out.y = read(0, y);
  int f = 1;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    std::vector<double> d = grads[i].valid() ? read(f++, grads[i]) : std::vector<double>{};
    (i < n_inputs ? out.d_inputs : out.d_weights).push_back(std::move(d));
  }
  return out;
}

// Float32 results against float64 references.
void check_close(const std::vector<double>& got, const json& want, const std::string& what, double tol = 1e-5) {
  INFO(what);
  const std::vector<double> w = data_of(want);
  REQUIRE(got.size() == w.size());
  double worst = 0;
  for (std::size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::abs(got[i] - w[i]));
  INFO("max |tandem - torch| = " << worst);
  CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("attention: Embedding matches PyTorch (forward and table gradient)") {
  const json& r = refs().at("embedding");
  auto layer = tl::Embedding(r.at("input_dim"), r.at("output_dim"));
  const json& ids = r.at("ids");
  const std::vector<double> id_values = ids.at("data").get<std::vector<double>>();
  for (DType id_type : {DType::I64, DType::I32, DType::F32}) {  // float ids are cast, as in Keras
    const LayerGrads o = run_layer(*layer, {Feed(shape_of(ids), id_type, id_values)}, {tensor_of(r.at("embeddings"))},
                                   data_of(r.at("w")));
    check_close(o.y, r.at("output"), "embedding output");
    REQUIRE(o.d_weights.size() == 1);
    check_close(o.d_weights[0], r.at("d_embeddings"), "d embeddings");
  }
  CHECK(layer->weights()[0]->path() == layer->name() + "/embeddings");
  CHECK(layer->weights()[0]->value().shape() == Shape{7, 4});
}

TEST_CASE("attention: MultiHeadAttention matches PyTorch (forward, input and weight gradients)") {
  for (const char* name : {"mha_cross", "mha_causal", "mha_causal_cross", "mha_value_dim"}) {
    INFO(name);
    const json& r = refs().at(name);
    const bool separate_key = r.at("separate_key");
    auto layer = tl::MultiHeadAttention(r.at("num_heads"), r.at("key_dim"),
                                        {.value_dim = r.at("value_dim"), .use_bias = r.at("use_bias"),
                                         .output_shape = Shape(r.at("output_shape").get<std::vector<int64_t>>()),
                                         .use_causal_mask = r.at("use_causal_mask")});
    std::vector<Feed> inputs{feed_of(r.at("query")), feed_of(r.at("value"))};
    if (separate_key) inputs.push_back(feed_of(r.at("key")));
    std::vector<Tensor> weights;
    for (const json& t : r.at("weights")) weights.push_back(tensor_of(t));
    const LayerGrads o = run_layer(*layer, inputs, weights, data_of(r.at("w")));

    // Weight names, order and shapes as Keras's.
    const auto names = r.at("weight_names").get<std::vector<std::string>>();
    REQUIRE(layer->weights().size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      CHECK(layer->weights()[i]->path() == layer->name() + "/" + names[i]);
      CHECK(layer->weights()[i]->value().shape() == shape_of(r.at("weights")[i]));
    }
    check_close(o.y, r.at("output"), "output");
    REQUIRE(o.d_inputs.size() == inputs.size());
    check_close(o.d_inputs[0], r.at("d_query"), "d query");
    check_close(o.d_inputs[1], r.at("d_value"), "d value");
    if (separate_key) check_close(o.d_inputs[2], r.at("d_key"), "d key");
    for (std::size_t i = 0; i < names.size(); ++i) check_close(o.d_weights[i], r.at("d_weights")[i], "d " + names[i]);
  }
}

TEST_CASE("attention: Add, Multiply and Concatenate against closed forms") {
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = u(gen);
    return v;
  };
  const std::vector<double> a = random(24), b = random(24), c = random(8), w = random(24);
  const Feed fa({2, 3, 4}, DType::F32, a), fb({2, 3, 4}, DType::F32, b), fc({2, 1, 4}, DType::F32, c);
  auto close = [](double x, double y) { return std::abs(x - y) <= 1e-6; };
  SUBCASE("Add with broadcasting") {
    auto add = tl::Add();
    const LayerGrads o = run_layer(*add, {fa, fb, fc}, {}, w);
    for (int64_t i = 0; i < 24; ++i) {
      const int64_t ci = (i / 12) * 4 + i % 4;  // (n, 1, k) broadcast over the middle axis
      CHECK(close(at(o.y, i), at(a, i) + at(b, i) + at(c, ci)));
      CHECK(close(at(o.d_inputs[0], i), at(w, i)));
      CHECK(close(at(o.d_inputs[1], i), at(w, i)));
    }
    for (int64_t ci = 0; ci < 8; ++ci) {
      double s = 0;
      for (int64_t m = 0; m < 3; ++m) s += at(w, (ci / 4) * 12 + m * 4 + ci % 4);
      CHECK(close(at(o.d_inputs[2], ci), s));
    }
  }
  SUBCASE("Multiply") {
    auto mul = tl::Multiply();
    const LayerGrads o = run_layer(*mul, {fa, fb}, {}, w);
    for (int64_t i = 0; i < 24; ++i) {
      CHECK(close(at(o.y, i), at(a, i) * at(b, i)));
      CHECK(close(at(o.d_inputs[0], i), at(w, i) * at(b, i)));
      CHECK(close(at(o.d_inputs[1], i), at(w, i) * at(a, i)));
    }
  }
  SUBCASE("Concatenate along axis 1 and the default last axis") {
    auto cat1 = tl::Concatenate({.axis = 1});
    const LayerGrads o = run_layer(*cat1, {fa, fc}, {}, random(32));
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t k = 0; k < 4; ++k) {
        for (int64_t m = 0; m < 3; ++m) CHECK(at(o.y, n * 16 + m * 4 + k) == doctest::Approx(at(a, n * 12 + m * 4 + k)));
        CHECK(at(o.y, n * 16 + 12 + k) == doctest::Approx(at(c, n * 4 + k)));
      }
    auto cat = tl::Concatenate();
    const LayerGrads o2 = run_layer(*cat, {fa, fb}, {}, random(48));
    CHECK(at(o2.y, 4) == doctest::Approx(at(b, 0)));
    CHECK(at(o2.y, 8) == doctest::Approx(at(a, 4)));
    CHECK(cat->class_name() == "Concatenate");
  }
}

TEST_CASE("attention: PositionEmbedding returns its first T rows broadcast, and their gradient") {
  auto pos = tl::PositionEmbedding(5);
  std::vector<double> table(20), x(24, 0.5), w(24);
  for (std::size_t i = 0; i < 20; ++i) table[i] = 0.1 * double(i);
  for (std::size_t i = 0; i < 24; ++i) w[i] = double(i % 7) - 3;
  const std::vector<float> t32(table.begin(), table.end());
  const LayerGrads o = run_layer(*pos, {Feed({2, 3, 4}, DType::F32, x)}, {Tensor::from({5, 4}, std::span<const float>(t32))}, w);
  CHECK(pos->weights()[0]->path() == pos->name() + "/embeddings");
  for (int64_t i = 0; i < 24; ++i) CHECK(at(o.y, i) == doctest::Approx(at(table, i % 12)));
  CHECK(o.d_inputs[0].empty());  // the output does not depend on x's values
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t d = 0; d < 4; ++d) {
      const double want = r < 3 ? at(w, r * 4 + d) + at(w, 12 + r * 4 + d) : 0.0;
      CHECK(at(o.d_weights[0], r * 4 + d) == doctest::Approx(want));
    }
}

TEST_CASE("attention: an id out of range raises ValueError from the step, predict and fit") {
  using tandem::Model;
  // Through a bare Executable: the exception leaves run() on the calling thread.
  {
    GradCheck c;
    const Value table = c.fixed({4, 2}, -1, 1);
    const Value ids = c.labels({3}, 4, DType::I64);
    auto plan = std::make_shared<const tandem::compile::Plan>(
        lower_with(tandem::distribute::Default(), c.g, {ops::gather(c.g, table, ids, "Embedding \"emb\"")}));
    tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
                                    [](int, int) -> void* { return nullptr; });
    auto* idp = static_cast<int64_t*>(exe.feed(0, "in1"));
    idp[0] = 1, idp[1] = 4, idp[2] = 0;
    CHECK_THROWS_WITH_AS(exe.run(), "Embedding \"emb\": index 4 at position 1 is out of range [0, 4)", tandem::ValueError);
    idp[1] = -1;
    CHECK_THROWS_AS(exe.run(), tandem::ValueError);
    idp[1] = 3;
    CHECK_NOTHROW(exe.run());
  }
  // Through a model: predict and fit report it, and the model still works afterwards.
  auto in = tandem::Input({3}, DType::I32);
  auto emb = tl::Embedding(5, 2, {.name = "tokens"});
  Model model(in, tl::Dense(2)(tl::Flatten()(emb(in))));
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const std::vector<int32_t> good{0, 1, 2, 3, 4, 0}, bad{0, 1, 2, 3, 5, 0};
  const Tensor xg = Tensor::from({2, 3}, std::span<const int32_t>(good)), xb = Tensor::from({2, 3}, std::span<const int32_t>(bad));
  const std::vector<int32_t> labels{0, 1};
  const Tensor y = Tensor::from({2}, std::span<const int32_t>(labels));
  CHECK_THROWS_WITH_AS(model.predict(xb), "Embedding \"tokens\": index 5 at position 4 is out of range [0, 5)", tandem::ValueError);
  CHECK_THROWS_AS(model.fit(xb, y, {.epochs = 1, .batch_size = 2, .verbose = 0}), tandem::ValueError);
  CHECK(model.predict(xg).shape() == Shape{2, 2});
  CHECK_NOTHROW(model.fit(xg, y, {.epochs = 1, .batch_size = 2, .verbose = 0}));
}

TEST_CASE("attention: a tiny causal Transformer trains through fit") {
  // tokens (T) -> Embedding + PositionEmbedding -> causal self-attention + residual -> Dense(gelu)
  // -> flattened -> logits over the vocabulary; the label is the sequence's first token.
  tandem::set_random_seed(11);
  const int64_t V = 6, T = 5, D = 16, rows = 192;
  std::mt19937_64 gen(5);
  std::uniform_int_distribution<int32_t> tok(0, V - 1);
  std::vector<int32_t> x(static_cast<std::size_t>(rows * T)), y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < T; ++t) x[static_cast<std::size_t>(r * T + t)] = tok(gen);
    y[static_cast<std::size_t>(r)] = x[static_cast<std::size_t>(r * T)];
  }
  auto in = tandem::Input({T}, DType::I32);
  auto e = tl::Embedding(V, D)(in);
  auto h = tl::Add()({e, tl::PositionEmbedding(T)(e)});
  auto a = tl::MultiHeadAttention(2, 8, {.dropout = 0.1, .use_causal_mask = true})({h, h});
  h = tl::Add()({h, a});
  h = tl::Dense(D, "gelu")(h);
  auto out = tl::Dense(V)(tl::Flatten()(h));
  tandem::Model model(in, out);
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  const auto hist = model.fit(Tensor::from({rows, T}, std::span<const int32_t>(x)), Tensor::from({rows}, std::span<const int32_t>(y)),
                              {.epochs = 40, .batch_size = 32, .verbose = 0});
  const auto& loss = hist.history.at("loss");
  CHECK(loss.back() < 0.25 * loss.front());
  CHECK(hist.history.at("accuracy").back() > 0.9);
  // Attention dropout is off outside training: predictions repeat exactly.
  const Tensor xs = Tensor::from({rows, T}, std::span<const int32_t>(x));
  const Tensor p1 = model.predict(xs), p2 = model.predict(xs);
  CHECK(std::equal(p1.values<float>().begin(), p1.values<float>().end(), p2.values<float>().begin()));
  const std::string summary = model.summary_string();
  CHECK(summary.find("MultiHeadAttention") != std::string::npos);
  CHECK(summary.find("PositionEmbedding") != std::string::npos);
}

TEST_CASE("attention: with use_causal_mask, position t does not depend on later tokens") {
  tandem::set_random_seed(2);
  const int64_t T = 4;
  auto in = tandem::Input({T}, DType::I32);
  auto e = tl::Embedding(10, 8)(in);
  auto causal = tl::MultiHeadAttention(2, 4, {.use_causal_mask = true})({e, e});
  auto full = tl::MultiHeadAttention(2, 4)({e, e});
  tandem::Model mc(in, causal), mf(in, full);
  // Two sequences that differ only in their last token.
  const std::vector<int32_t> ids{1, 2, 3, 4, 1, 2, 3, 9};
  const Tensor x = Tensor::from({2, T}, std::span<const int32_t>(ids));
  const Tensor yc = mc.predict(x), yf = mf.predict(x);
  REQUIRE(yc.shape() == Shape{2, T, 8});
  const int64_t per = T * 8;
  for (int64_t i = 0; i < (T - 1) * 8; ++i) {
    CHECK(yc.item(i) == yc.item(per + i));  // earlier positions: bit-identical
    CHECK(yf.item(i) != yf.item(per + i));  // without the mask they see the last token
  }
  CHECK(yc.item(per - 1) != yc.item(2 * per - 1));
}

TEST_CASE("attention: configuration and shape errors name the layer") {
  using tandem::ShapeError;
  using tandem::ValueError;
  CHECK_THROWS_WITH_AS(tl::Embedding(0, 4, {.name = "emb"}), "Embedding \"emb\": input_dim must be positive, got 0", ValueError);
  CHECK_THROWS_AS(tl::Embedding(5, -1), ValueError);
  CHECK_THROWS_WITH_AS(tl::MultiHeadAttention(0, 4, {.name = "mha"}), "MultiHeadAttention \"mha\": num_heads must be positive, got 0",
                       ValueError);
  CHECK_THROWS_WITH_AS(tl::MultiHeadAttention(2, 0, {.name = "mha"}), "MultiHeadAttention \"mha\": key_dim must be positive, got 0",
                       ValueError);
  CHECK_THROWS_AS(tl::MultiHeadAttention(2, 4, {.dropout = 1.0}), ValueError);
  CHECK_THROWS_AS(tl::PositionEmbedding(0), ValueError);

  auto seq = tandem::Input({4, 8});
  auto flat = tandem::Input({8});
  auto other = tandem::Input({5, 8});
  auto thin = tandem::Input({4, 3});
  // Wrong rank, wrong number of inputs, key/value length mismatch, a changed feature size.
  CHECK_THROWS_WITH_AS(tl::MultiHeadAttention(2, 4, {.name = "mha_a"})({flat, flat}),
                       "MultiHeadAttention \"mha_a\": expected query of rank 3 (batch, sequence, features), got (None, 8)", ShapeError);
  CHECK_THROWS_AS(tl::MultiHeadAttention(2, 4)({seq}), ValueError);
  CHECK_THROWS_WITH_AS(tl::MultiHeadAttention(2, 4, {.name = "mha_b"})({seq, seq, other}),
                       "MultiHeadAttention \"mha_b\": value and key must have the same sequence length, got value (None, 4, 8) "
                       "and key (None, 5, 8)",
                       ShapeError);
  auto mha = tl::MultiHeadAttention(2, 4, {.name = "mha_c"});
  mha({seq, seq});
  CHECK_THROWS_WITH_AS(mha({thin, seq}), "MultiHeadAttention \"mha_c\": expected query with last dimension 8 (as when built), got (None, 4, 3)",
                       ShapeError);
  // Merges.
  CHECK_THROWS_WITH_AS(tl::Add("add_x")({seq, other}),
                       "Add \"add_x\": inputs have incompatible shapes [(None, 4, 8), (None, 5, 8)]; they must be equal or broadcast (a "
                       "dimension of 1)",
                       ShapeError);
  CHECK_THROWS_AS(tl::Multiply()({seq, thin}), ShapeError);
  CHECK_THROWS_WITH_AS(tl::Concatenate({.axis = -1, .name = "cat"})({seq, other}),
                       "Concatenate \"cat\": inputs must have matching shapes except along the concatenation axis 2, got "
                       "[(None, 4, 8), (None, 5, 8)]",
                       ShapeError);
  CHECK_NOTHROW(tl::Concatenate({.axis = 1})({seq, other}));
  CHECK_THROWS_AS(tl::Concatenate({.axis = 0})({seq, seq}), ValueError);
  CHECK_THROWS_AS(tl::Concatenate({.axis = 3})({seq, seq}), ValueError);
  CHECK_THROWS_AS(tl::Concatenate()({seq, flat}), ShapeError);
  // PositionEmbedding: a sequence longer than sequence_length, and a rank-2 input.
  CHECK_THROWS_WITH_AS(tl::PositionEmbedding(3, {.name = "pos"})(seq),
                       "PositionEmbedding \"pos\": the input's sequence length 4 exceeds the layer's sequence_length 3 (input (None, 4, 8))",
                       ShapeError);
  CHECK_THROWS_AS(tl::PositionEmbedding(3)(flat), ShapeError);
  // Ops.
  tandem::graph::Graph g;
  const Value a = g.placeholder("a", {Shape{2, 3, 4}, DType::F64}), b = g.placeholder("b", {Shape{3, 4, 5}, DType::F64});
  CHECK_THROWS_WITH_AS(ops::batch_matmul(g, a, b), "batch_matmul: batch dimensions differ: (2, 3, 4) · (3, 4, 5)", ShapeError);
  CHECK_THROWS_AS(ops::transpose(g, a, {0, 0, 1}), ShapeError);
  CHECK_THROWS_AS(ops::gather(g, a, a), ShapeError);
}

TEST_CASE("attention: an explicit attention_mask input hides keys as Keras's does; lower-triangular equals use_causal_mask") {
  tandem::set_random_seed(21);
  const tandem::Symbol x = tandem::Input({5, 4});
  const tandem::Symbol allowed = tandem::Input({5, 5}, tandem::DType::I32);
  auto masked = tl::MultiHeadAttention(2, 3);
  auto causal = tl::MultiHeadAttention(2, 3, {.use_causal_mask = true});
  tandem::Model with_mask({x, allowed}, {masked({x, x, x, allowed})});
  tandem::Model with_causal(x, causal({x, x}));
  with_causal.set_weights(with_mask.get_weights());
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> xs(2 * 5 * 4);
  for (float& v : xs) v = normal(rng);
  std::vector<int32_t> lower(2 * 5 * 5);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 5; ++j) lower[static_cast<std::size_t>((b * 5 + i) * 5 + j)] = j <= i ? 3 : 0;  // any non-zero allows
  const Tensor input = Tensor::from({2, 5, 4}, std::span<const float>(xs));
  const Tensor a = with_mask.predict(std::vector<Tensor>{input, Tensor::from({2, 5, 5}, std::span<const int32_t>(lower))}).at(0);
  const Tensor c = with_causal.predict(input);
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a.item(i) - c.item(i)));
  CHECK(worst <= 1e-6);
  CHECK_THROWS_WITH_AS(masked({x, x, x, tandem::Input({5, 4}, tandem::DType::I32)}),
                       doctest::Contains("expected attention_mask of shape (None, 5, 5) (query steps, key steps), got (None, 5, 4)"),
                       tandem::ShapeError);
}

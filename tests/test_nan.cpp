// NaN propagation: a NaN (or an infinity that becomes one) in the data must show in the outputs,
// the gradients and the logged loss, where PyTorch shows it, and must not spread where PyTorch keeps
// numbers finite (the other rows of a batch, the other channels of a window).
//
// Most op families are checked against tests/data/nan_refs.json, written by PyTorch from
// tests/data/make_nan_refs.py (its docstring says, case by case, what PyTorch decides). Each case
// runs one op on placeholders and the gradient of L = Σ y ⊙ W, as that script does: a reference
// NaN must be NaN here, ±inf must be the same infinity, and every other number must agree to float
// tolerance. Attention, the elementwise binary ops and dropout are checked against closed forms
// written out below.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tandem/tandem.h>

#include "autodiff/autodiff.h"
#include "distribute/strategy.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/normalization.h"
#include "ops/ops.h"
#include "backend/device.h"
#include "runtime/executable.h"
#include "lower_with.h"

namespace {

using json = nlohmann::json;
using tandem::DType;
using tandem::Shape;
using tandem::graph::Graph;
using tandem::graph::Value;
namespace ops = tandem::ops;
namespace tl = tandem::layers;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// One op's graph on placeholders, run once: its output and the gradients of Σ y ⊙ W.
class OpGraph {
 public:
  explicit OpGraph(DType float_type = DType::F64) : float_type_(float_type) {}
  Graph g;

  Value input(const Shape& s, std::vector<double> x, bool differentiate = true) {
    return add(s, float_type_, std::move(x), differentiate);
  }
  Value labels(const Shape& s, std::vector<double> ids) { return add(s, DType::I64, std::move(ids), false); }

  struct Result {
    std::vector<double> y;
    std::vector<std::vector<double>> grads;  // one per differentiated input, in creation order
  };

  // `w` is dL/dy, fed as a placeholder so that it may hold NaN too.
  Result run(Value y, std::vector<double> w) {
    const Shape shape = g.type(y).shape;
    const Value weight = add(shape, float_type_, std::move(w), false);
    std::vector<int64_t> axes;
    for (int i = 0; i < shape.rank(); ++i) axes.push_back(i);
    const Value loss = ops::reduce_sum(g, ops::mul(g, y, weight), axes);
    std::vector<Value> wrt;
    for (const Fed& in : inputs_)
      if (in.differentiate) wrt.push_back(in.value);
    std::vector<Value> fetches{y};
    for (Value d : tandem::autodiff::gradients(g, loss, wrt)) fetches.push_back(d);
    const auto exe = execute(fetches);
    Result r{read(*exe, 0, g.type(y).dtype, shape.num_elements()), {}};
    for (std::size_t i = 1; i < fetches.size(); ++i)
      r.grads.push_back(read(*exe, static_cast<int>(i), float_type_, g.type(fetches[i]).shape.num_elements()));
    return r;
  }

  std::vector<double> forward(Value y) {
    const auto exe = execute({y});
    return read(*exe, 0, g.type(y).dtype, g.type(y).shape.num_elements());
  }

 private:
  struct Fed {
    Value value;
    std::string name;
    DType dtype;
    std::vector<double> x;
    bool differentiate;
  };

  Value add(const Shape& s, DType dtype, std::vector<double> x, bool differentiate) {
    REQUIRE(static_cast<int64_t>(x.size()) == s.num_elements());
    const std::string name = "in" + std::to_string(inputs_.size());
    const Value v = g.placeholder(name, {s, dtype});
    inputs_.push_back({v, name, dtype, std::move(x), differentiate});
    return v;
  }

  std::unique_ptr<tandem::runtime::Executable> execute(const std::vector<Value>& fetches) {
    auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
    auto exe = std::make_unique<tandem::runtime::Executable>(
        plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")}, [](int, int) -> void* { return nullptr; });
    for (const Fed& in : inputs_) {
      void* p = exe->feed(0, in.name);
      if (!p) continue;  // the graph does not read it
      for (std::size_t i = 0; i < in.x.size(); ++i) {
        switch (in.dtype) {
          case DType::F64: static_cast<double*>(p)[i] = in.x[i]; break;
          case DType::F32: static_cast<float*>(p)[i] = static_cast<float>(in.x[i]); break;
          case DType::I64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(in.x[i]); break;
          case DType::I32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(in.x[i]); break;
          case DType::BF16: static_cast<tandem::bfloat16*>(p)[i] = tandem::bfloat16(in.x[i]); break;
          case DType::F16: static_cast<tandem::float16*>(p)[i] = tandem::float16(in.x[i]); break;
        }
      }
    }
    exe->run();
    return exe;
  }

  static std::vector<double> read(const tandem::runtime::Executable& exe, int fetch, DType dtype, int64_t n) {
    std::vector<double> out(static_cast<std::size_t>(n));
    const void* p = exe.fetch(0, fetch);
    for (std::size_t i = 0; i < out.size(); ++i) {
      switch (dtype) {
        case DType::F64: out[i] = static_cast<const double*>(p)[i]; break;
        case DType::F32: out[i] = static_cast<const float*>(p)[i]; break;
        case DType::I64: out[i] = static_cast<double>(static_cast<const int64_t*>(p)[i]); break;
        case DType::I32: out[i] = static_cast<const int32_t*>(p)[i]; break;
        case DType::BF16: out[i] = static_cast<float>(static_cast<const tandem::bfloat16*>(p)[i]); break;
        case DType::F16: out[i] = static_cast<float>(static_cast<const tandem::float16*>(p)[i]); break;
      }
    }
    return out;
  }

  DType float_type_;
  std::vector<Fed> inputs_;
};

const json& refs() {
  static const json j = [] {
    std::ifstream f(std::string(TANDEM_TEST_DATA) + "/nan_refs.json");
    REQUIRE(f.good());
    return json::parse(f);
  }();
  return j;
}

double number_of(const json& v) {
  if (!v.is_string()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "nan") return kNaN;
  if (s == "inf") return kInf;
  if (s == "-inf") return -kInf;
  FAIL("unknown number " << s);
  return 0;
}
Shape shape_of(const json& t) { return Shape(t.at("shape").get<std::vector<int64_t>>()); }
std::vector<double> data_of(const json& t) {
  std::vector<double> out;
  for (const json& v : t.at("data")) out.push_back(number_of(v));
  return out;
}

// NaN where the reference has NaN, the same infinity, or the same number within `tolerance`.
void check_like(const std::vector<double>& got, const std::vector<double>& want, const std::string& what, double tolerance) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << " [" << i << "]: got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) CHECK(std::isnan(got[i]));
    else if (std::isinf(want[i])) CHECK(got[i] == want[i]);
    else CHECK(got[i] == doctest::Approx(want[i]).epsilon(tolerance));
  }
}

using Build = std::function<Value(Graph&, const std::vector<Value>& inputs, const std::vector<Value>& fixed)>;

// Runs reference case `name`: its inputs are differentiated, its "fixed" inputs (targets, labels)
// are not. float32 runs read the float64 inputs rounded, hence the looser tolerance.
void check_case(const std::string& name, const Build& build, DType float_type = DType::F64) {
  INFO("case " << name << (float_type == DType::F32 ? " (float32)" : " (float64)"));
  const json& c = refs().at(name);
  const double tolerance = float_type == DType::F32 ? 1e-5 : 1e-10;
  OpGraph t(float_type);
  std::vector<Value> inputs, fixed;
  for (const json& in : c.at("inputs")) inputs.push_back(t.input(shape_of(in), data_of(in)));
  for (const json& in : c.at("fixed")) {
    const bool integer = in.at("data").at(0).is_number_integer();
    fixed.push_back(integer ? t.labels(shape_of(in), data_of(in)) : t.input(shape_of(in), data_of(in), false));
  }
  const OpGraph::Result r = t.run(build(t.g, inputs, fixed), data_of(c.at("w")));
  check_like(r.y, data_of(c.at("y")), name + " y", tolerance);
  REQUIRE(r.grads.size() == c.at("grads").size());
  for (std::size_t i = 0; i < r.grads.size(); ++i)
    check_like(r.grads[i], data_of(c.at("grads").at(i)), name + " d input " + std::to_string(i), tolerance);
}

Build unary(Value (*op)(Graph&, Value)) {
  return [op](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) { return op(g, in[0]); };
}

// Redirects std::cout, where fit's progress bar and TerminateOnNaN write, for one scope.
class CaptureStdout {
 public:
  CaptureStdout() : saved_(std::cout.rdbuf(text_.rdbuf())) {}
  ~CaptureStdout() { std::cout.rdbuf(saved_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* saved_;
};

// 8 rows of 3 features and a regression target; row `nan_row` has NaN features.
tandem::Dataset regression_with_nan_row(int64_t nan_row) {
  std::vector<float> x(24), y(8);
  for (int r = 0; r < 8; ++r) {
    for (int f = 0; f < 3; ++f) x[static_cast<std::size_t>(r * 3 + f)] = 0.1f * float(r + 1) - 0.2f * float(f);
    y[static_cast<std::size_t>(r)] = 0.5f * float(r) - 1.0f;
  }
  for (int f = 0; f < 3; ++f) x[static_cast<std::size_t>(nan_row * 3 + f)] = std::numeric_limits<float>::quiet_NaN();
  return {tandem::Tensor::from({8, 3}, std::span<const float>(x)), tandem::Tensor::from({8, 1}, std::span<const float>(y))};
}

// Relu hidden layer: before relu propagated NaN, relu(NaN) = 0 made the NaN row's loss finite.
std::unique_ptr<tandem::Sequential> relu_model() {
  tandem::set_random_seed(5);
  auto model = std::make_unique<tandem::Sequential>(
      std::vector<tandem::LayerRef>{tl::InputLayer({3}), tl::Dense(4, "relu"), tl::Dense(1)});
  model->compile({.optimizer = tandem::optimizers::SGD(0.01), .loss = "mse"});
  return model;
}

// The progress bar's last drawing (after its final '\r'), without the spaces that pad it over a
// longer earlier line.
std::string last_bar(const std::string& out) {
  std::string line = out.substr(out.rfind('\r') + 1);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n')) line.pop_back();
  return line;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

class CountBatches : public tandem::Callback {
 public:
  int64_t batches = 0;
  void on_train_batch_end(int64_t, const tandem::Logs&) override { ++batches; }
};

}  // namespace

TEST_CASE("nan: activations propagate NaN; relu's gradient is PyTorch's threshold_backward") {
  for (DType dt : {DType::F64, DType::F32}) {
    check_case("relu", unary(ops::relu), dt);
    check_case("sigmoid", unary(ops::sigmoid), dt);
    check_case("tanh", unary(ops::tanh), dt);
    check_case("gelu", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) { return ops::gelu(g, in[0], false); }, dt);
    check_case("gelu_tanh", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) { return ops::gelu(g, in[0], true); }, dt);
  }
}

TEST_CASE("nan: softmax and log_softmax make only the NaN's row NaN") {
  for (DType dt : {DType::F64, DType::F32}) {
    check_case("softmax", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) { return ops::softmax(g, in[0], -1); }, dt);
    check_case("log_softmax", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) { return ops::log_softmax(g, in[0], -1); }, dt);
  }
}

TEST_CASE("nan: pooling - a NaN wins its max-pooling window and takes the gradient") {
  for (DType dt : {DType::F64, DType::F32}) {
    check_case("max_pool2d", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) {
      return ops::max_pool2d(g, in[0], {2, 2}, {2, 2}, "valid");
    }, dt);
    check_case("max_pool2d_overlap", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) {
      return ops::max_pool2d(g, in[0], {2, 2}, {1, 1}, "valid");
    }, dt);
    check_case("avg_pool2d", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) {
      return ops::avg_pool2d(g, in[0], {2, 2}, {2, 2}, "valid");
    }, dt);
  }
}

TEST_CASE("nan: reductions and argmax") {
  for (DType dt : {DType::F64, DType::F32}) {
    check_case("reduce_sum_rows", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) { return ops::reduce_sum(g, in[0], {1}); }, dt);
    check_case("reduce_mean_cols", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) { return ops::reduce_mean(g, in[0], {0}); }, dt);
    INFO("argmax " << (dt == DType::F32 ? "float32" : "float64"));
    const json& c = refs().at("argmax");
    OpGraph t(dt);
    const Value x = t.input(shape_of(c.at("inputs").at(0)), data_of(c.at("inputs").at(0)), false);
    CHECK(t.forward(ops::argmax(t.g, x, -1)) == data_of(c.at("y")));
  }
}

TEST_CASE("nan: losses") {
  auto loss = [](Value (*f)(Graph&, Value, Value)) {
    return Build([f](Graph& g, const std::vector<Value>& in, const std::vector<Value>& fixed) { return f(g, in[0], fixed[0]); });
  };
  auto cross_entropy = [](bool sparse, bool logits) {
    return Build([=](Graph& g, const std::vector<Value>& in, const std::vector<Value>& fixed) {
      return ops::cross_entropy(g, in[0], fixed[0], sparse, logits);
    });
  };
  auto binary = [](bool logits) {
    return Build([=](Graph& g, const std::vector<Value>& in, const std::vector<Value>& fixed) {
      return ops::binary_cross_entropy(g, in[0], fixed[0], logits);
    });
  };
  for (DType dt : {DType::F64, DType::F32}) {
    check_case("cross_entropy_sparse_logits", cross_entropy(true, true), dt);
    check_case("cross_entropy_dense_logits", cross_entropy(false, true), dt);
    check_case("cross_entropy_probabilities", cross_entropy(false, false), dt);
    check_case("binary_cross_entropy_logits", binary(true), dt);
    check_case("binary_cross_entropy_probabilities", binary(false), dt);
    check_case("squared_error", loss(ops::squared_error), dt);
    check_case("absolute_error", loss(ops::absolute_error), dt);
  }
}

TEST_CASE("nan: dense and convolution") {
  for (DType dt : {DType::F64, DType::F32}) {
    check_case("dense", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) {
      return ops::bias_add(g, ops::matmul(g, in[0], in[1]), in[2]);
    }, dt);
    check_case("conv2d", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) {
      return ops::conv2d(g, in[0], in[1]);
    }, dt);
  }
}

TEST_CASE("nan: normalisation") {
  for (DType dt : {DType::F64, DType::F32}) {
    check_case("batch_norm_train", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) {
      return ops::batch_norm_train(g, in[0], in[1], in[2], -1, 1e-3).y;
    }, dt);
    check_case("layer_norm", [](Graph& g, const std::vector<Value>& in, const std::vector<Value>&) {
      return ops::layer_norm(g, in[0], in[1], in[2], 1e-3);
    }, dt);
  }
}

TEST_CASE("nan: attention reaches the rows that see the NaN") {
  // out = softmax(q·kᵀ, masked) · v on (1, T = 4, 3). Reference rows are written out by hand below
  // from the inputs, over the keys each query sees: query i sees key j when j <= i (causal) or always.
  constexpr int64_t T = 4, H = 3;
  const std::vector<double> base_q = {0.3, -0.5, 0.8, 1.0, 0.2, -0.4, -0.6, 0.9, 0.1, 0.5, 0.5, -1.0};
  const std::vector<double> base_k = {0.7, 0.1, -0.3, -0.2, 0.6, 0.4, 0.9, -0.8, 0.2, 0.0, 0.3, 0.5};
  const std::vector<double> base_v = {1.0, -1.0, 0.5, 0.2, 0.4, -0.6, -0.3, 0.8, 0.9, 0.6, -0.2, 0.1};
  auto naive = [&](const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v, int64_t i,
                   bool causal) {
    std::vector<double> s, out(H, 0.0);
    const int64_t seen = causal ? i + 1 : T;
    double mx = -kInf, sum = 0;
    for (int64_t j = 0; j < seen; ++j) {
      double d = 0;
      for (int64_t h = 0; h < H; ++h) d += q[i * H + h] * k[j * H + h];
      s.push_back(d), mx = std::max(mx, d);
    }
    for (double& e : s) sum += (e = std::exp(e - mx));
    for (int64_t j = 0; j < seen; ++j)
      for (int64_t h = 0; h < H; ++h) out[h] += s[j] / sum * v[j * H + h];
    return out;
  };
  auto run = [&](const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v, bool causal) {
    OpGraph t;
    const Value qv = t.input({1, T, H}, q), kv = t.input({1, T, H}, k), vv = t.input({1, T, H}, v);
    Value scores = ops::batch_matmul(t.g, qv, kv, false, true);
    if (causal) scores = ops::causal_mask(t.g, scores, 0);
    return t.forward(ops::batch_matmul(t.g, ops::softmax(t.g, scores, -1), vv));
  };
  auto row_is = [&](const std::vector<double>& out, int64_t i, const std::vector<double>& want) {
    for (int64_t h = 0; h < H; ++h) {
      INFO("row " << i << " column " << h);
      CHECK(out[static_cast<std::size_t>(i * H + h)] == doctest::Approx(want[static_cast<std::size_t>(h)]).epsilon(1e-12));
    }
  };
  auto row_is_nan = [&](const std::vector<double>& out, int64_t i) {
    for (int64_t h = 0; h < H; ++h) {
      INFO("row " << i << " column " << h);
      CHECK(std::isnan(out[static_cast<std::size_t>(i * H + h)]));
    }
  };

  SUBCASE("a NaN in query 1 reaches only output row 1") {
    std::vector<double> q = base_q;
    q[1 * H + 2] = kNaN;
    const auto out = run(q, base_k, base_v, true);
    row_is_nan(out, 1);
    for (int64_t i : {0, 2, 3}) row_is(out, i, naive(q, base_k, base_v, i, true));
  }
  SUBCASE("causal: a NaN in key 2 reaches the queries that see it; earlier ones stay finite") {
    // The mask sets hidden scores (it does not add to them), so the NaN score q0·k2 is replaced.
    std::vector<double> k = base_k;
    k[2 * H + 0] = kNaN;
    const auto out = run(base_q, k, base_v, true);
    for (int64_t i : {0, 1}) row_is(out, i, naive(base_q, k, base_v, i, true));
    for (int64_t i : {2, 3}) row_is_nan(out, i);
  }
  SUBCASE("no mask: a NaN in key 2 reaches every row") {
    std::vector<double> k = base_k;
    k[2 * H + 0] = kNaN;
    const auto out = run(base_q, k, base_v, false);
    for (int64_t i = 0; i < T; ++i) row_is_nan(out, i);
  }
  SUBCASE("causal: a NaN in value 2 reaches its column in every row, through 0 · NaN") {
    // Rows 0 and 1 give value 2 a weight of exactly 0, but the product with the values is a plain
    // matrix product and 0 · NaN is NaN (as in PyTorch's and Keras's masked attention); the other
    // columns do not involve the NaN.
    std::vector<double> v = base_v;
    v[2 * H + 0] = kNaN;
    const auto out = run(base_q, base_k, v, true);
    for (int64_t i = 0; i < T; ++i) {
      INFO("row " << i);
      CHECK(std::isnan(out[static_cast<std::size_t>(i * H)]));
      const std::vector<double> want = naive(base_q, base_k, base_v, i, true);
      CHECK(out[static_cast<std::size_t>(i * H + 1)] == doctest::Approx(want[1]).epsilon(1e-12));
      CHECK(out[static_cast<std::size_t>(i * H + 2)] == doctest::Approx(want[2]).epsilon(1e-12));
    }
  }
}

TEST_CASE("nan: elementwise binary ops follow IEEE arithmetic, broadcast or not") {
  using BinaryOp = Value (*)(Graph&, Value, Value);
  auto run = [](BinaryOp op, const Shape& bs, const std::vector<double>& b) {
    OpGraph t;
    const Value a = t.input({2, 3}, {1, kNaN, kInf, 0, 2, -kInf});
    return t.forward(op(t.g, a, t.input(bs, b)));
  };
  auto same = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
      CHECK((std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]));
    }
  };
  // a = [[1, NaN, inf], [0, 2, -inf]] with b = [NaN, 2, inf] broadcast over rows: b's NaN fills
  // column 0, a's NaN its own element, and inf − inf, inf / inf are NaN.
  const std::vector<double> row = {kNaN, 2, kInf};
  same(run(ops::add, {3}, row), {kNaN, kNaN, kInf, kNaN, 4, kNaN});
  same(run(ops::sub, {3}, row), {kNaN, kNaN, kNaN, kNaN, 0, -kInf});
  same(run(ops::mul, {3}, row), {kNaN, kNaN, kInf, kNaN, 4, -kInf});
  same(run(ops::div, {3}, row), {kNaN, kNaN, kNaN, kNaN, 1, kNaN});
  // Same shapes, b = [[0, 1, 0], [inf, 0, 1]]: 0 · inf is NaN, x / 0 is ±inf, 0 / inf is 0.
  const std::vector<double> full = {0, 1, 0, kInf, 0, 1};
  same(run(ops::mul, {2, 3}, full), {0, kNaN, kNaN, kNaN, 0, -kInf});
  same(run(ops::div, {2, 3}, full), {kInf, kNaN, kInf, 0, kInf, -kInf});
}

TEST_CASE("nan: dropout keeps a dropped NaN, forward and backward (PyTorch multiplies by its mask)") {
  constexpr int64_t rows = 4, cols = 16;
  // The mask depends only on (seed, step, row, column), so both runs below drop the same elements.
  auto run = [&](double x_value, double dy_value) {
    OpGraph t;
    const Value x = t.input({rows, cols}, std::vector<double>(rows * cols, x_value));
    const Value step = t.labels({}, {3});
    return t.run(ops::dropout(t.g, x, step, 0.5, 42), std::vector<double>(rows * cols, dy_value));
  };
  const OpGraph::Result ones = run(1.0, 1.0), nans = run(kNaN, kNaN);
  int64_t dropped = 0;
  for (std::size_t i = 0; i < ones.y.size(); ++i) {
    INFO("element " << i);
    CHECK((ones.y[i] == 0.0 || ones.y[i] == 2.0));
    dropped += ones.y[i] == 0.0;
    CHECK(std::isnan(nans.y[i]));         // kept: NaN · 2; dropped: NaN · 0
    CHECK(std::isnan(nans.grads[0][i]));  // the gradient is the same product on dy
  }
  CHECK(dropped > 0);
}

TEST_CASE("nan: fit through a relu Dense model logs loss: nan") {
  // The NaN row is in the last batch, so the loss it makes is not hidden by an earlier update that
  // had already spread NaN into the weights.
  auto model = relu_model();
  tandem::History h;
  std::string out;
  {
    CaptureStdout capture;
    h = model->fit(regression_with_nan_row(7), {.epochs = 1, .batch_size = 2, .shuffle = false, .verbose = 1});
    out = capture.text();
  }
  INFO(out);
  CHECK(ends_with(last_bar(out), " - loss: nan"));
  REQUIRE(h.history.at("loss").size() == 1);
  CHECK(std::isnan(h.history.at("loss")[0]));
}

TEST_CASE("nan: TerminateOnNaN stops fit after the first batch whose loss is NaN") {
  // Row 5 is in batch 2 (batch size 2, no shuffling): batches 0, 1 and 2 run, then fit stops.
  auto model = relu_model();
  auto counter = std::make_shared<CountBatches>();
  tandem::History h;
  std::string out;
  {
    CaptureStdout capture;
    h = model->fit(regression_with_nan_row(5), {.epochs = 3, .batch_size = 2, .shuffle = false, .verbose = 1,
                                                 .callbacks = {tandem::callbacks::TerminateOnNaN(), counter}});
    out = capture.text();
  }
  INFO(out);
  CHECK(counter->batches == 3);
  CHECK(h.epoch == std::vector<int>{0});
  REQUIRE(h.history.at("loss").size() == 1);
  CHECK(std::isnan(h.history.at("loss")[0]));
  // The bar may not have redrawn for batch 2 (it redraws at most every 50 ms); the message starts
  // on a line of its own and the epoch's final bar shows the NaN.
  CHECK(out.find("\nBatch 2: Invalid loss, terminating training\n") != std::string::npos);
  CHECK(ends_with(last_bar(out), " - loss: nan"));
  CHECK(model->stop_training);
}

TEST_CASE("nan: TerminateOnNaN also stops on an infinite loss, and not on a finite or missing one") {
  auto model = relu_model();
  auto stops_on = [&](const tandem::Logs& logs) {
    CaptureStdout capture;
    model->stop_training = false;
    const tandem::CallbackPtr cb = tandem::callbacks::TerminateOnNaN();
    cb->set_model(model.get());
    cb->set_params({.epochs = 1, .steps = 10, .verbose = 0});
    cb->on_train_batch_end(4, logs);
    if (model->stop_training) CHECK(capture.text() == "Batch 4: Invalid loss, terminating training\n");
    else CHECK(capture.text().empty());
    return model->stop_training;
  };
  CHECK(stops_on({{"loss", kInf}}));
  CHECK(stops_on({{"loss", -kInf}}));
  CHECK(stops_on({{"loss", kNaN}}));
  CHECK_FALSE(stops_on({{"loss", 1e30}}));
  CHECK_FALSE(stops_on({{"accuracy", kNaN}}));
}

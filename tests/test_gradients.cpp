// Gradient checks: for every differentiable op, the reverse-mode gradient that autodiff emits (and
// the CPU kernels compute) is compared with central finite differences, in float64.
//
// For an op output y = op(x1, ..., xn) the differentiated scalar is L = Σ y ⊙ W, where W is a fixed
// random tensor fed as a placeholder, so every output element is weighted differently. For each
// differentiated input x, the analytic gradient a = dL/dx comes from one run of the compiled graph
// and the numeric one from two runs per element:
//   n_j = (L(x + h·e_j) − L(x − h·e_j)) / 2h,   h = 1e-6,
// and the check passes when
//   max_j |a_j − n_j| / max(max_j |n_j|, 1e-8) <= 1e-6.
// Inputs are kept away from kinks (relu at 0, |p − t| at 0) and clipping ranges so the finite
// differences never straddle one. Where a closed form is easy, the forward value is checked too.
#include <doctest/doctest.h>

#include "tests/gradient_check.h"

namespace {

using namespace gradcheck;

void check_matmul(const Shape& as, const Shape& bs, bool ta, bool tb, const char* what) {
  GradCheck c;
  const Value a = c.uniform(as), b = c.uniform(bs);
  const Outcome o = c.check(ops::matmul(c.g, a, b, ta, tb), what);
  // Naive product of op(A) (m, k) and op(B) (k, n), rows of a rank-3 A folded into m.
  const int64_t k = ta ? as[0] : as.back(), m = as.num_elements() / k, n = tb ? bs[0] : bs[1];
  const auto &av = c.values(a), &bv = c.values(b);
  REQUIRE(o.y.size() == static_cast<std::size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += av[static_cast<std::size_t>(ta ? p * m + i : i * k + p)] *
             bv[static_cast<std::size_t>(tb ? j * k + p : p * n + j)];
      CHECK(o.y[static_cast<std::size_t>(i * n + j)] == doctest::Approx(s).epsilon(1e-12));
    }
}

using BinaryOp = Value (*)(Graph&, Value, Value);

void check_binary(const char* name, BinaryOp op, double (*f)(double, double), const Shape& as, const Shape& bs) {
  GradCheck c;
  const Value a = c.uniform(as);
  const Value b = c.signed_away(bs, 0.5, 2.0);  // a divisor well away from zero
  const Outcome o = c.check(op(c.g, a, b), std::string(name) + " " + as.str() + " with " + bs.str());
  const Shape out = ops::broadcast_shapes(as, bs, name);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const double want = f(c.values(a)[static_cast<std::size_t>(broadcast_source(out, i, as))],
                          c.values(b)[static_cast<std::size_t>(broadcast_source(out, i, bs))]);
    CHECK(o.y[static_cast<std::size_t>(i)] == doctest::Approx(want).epsilon(1e-14));
  }
}

void check_cross_entropy(bool sparse, bool logits, const Shape& shape, DType label_dtype, const char* what) {
  GradCheck c;
  const int64_t classes = shape.back();
  // Probabilities: positive, not normalised, each p/Σp far inside the clip range.
  const Value pred = logits ? c.uniform(shape, -3, 3) : c.uniform(shape, 0.1, 1.0);
  const Shape rows(std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - 1));
  // Dense targets are positive but not normalised, so a gradient that assumes Σt = 1 would show.
  // Labels are data: cross_entropy defines no gradient for its target, so it is not differentiated.
  const Value target = sparse ? c.labels(rows, classes, label_dtype) : c.fixed(shape, 0.0, 0.6);
  const Outcome o = c.check(ops::cross_entropy(c.g, pred, target, sparse, logits), what);
  // Per row −Σ_j t_j log q_j: q = softmax(z) from logits (so sparse gives logsumexp(z) − z[label]),
  // else q = clip(p / Σp, 1e-7, 1 − 1e-7); t is one-hot for sparse labels.
  const std::vector<double>& z = c.values(pred);
  const std::vector<double>& t = c.values(target);
  REQUIRE(o.y.size() == static_cast<std::size_t>(rows.num_elements()));
  for (std::size_t r = 0; r < o.y.size(); ++r) {
    const auto k = static_cast<std::size_t>(classes), row = r * k;
    double lse = 0, total = 0, want = 0;
    for (std::size_t j = 0; j < k; ++j) lse += std::exp(z[row + j]), total += z[row + j];
    for (std::size_t j = 0; j < k; ++j) {
      const double tj = sparse ? (t[r] == static_cast<double>(j) ? 1.0 : 0.0) : t[row + j];
      want -= tj * (logits ? z[row + j] - std::log(lse) : std::log(std::clamp(z[row + j] / total, 1e-7, 1 - 1e-7)));
    }
    CHECK(o.y[r] == doctest::Approx(want).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("gradient: matmul") {
  SUBCASE("plain") { check_matmul({3, 4}, {4, 5}, false, false, "matmul"); }
  SUBCASE("transpose_a") { check_matmul({4, 3}, {4, 5}, true, false, "matmul transpose_a"); }
  SUBCASE("transpose_b") { check_matmul({3, 4}, {5, 4}, false, true, "matmul transpose_b"); }
  SUBCASE("transpose_a and transpose_b") { check_matmul({4, 3}, {5, 4}, true, true, "matmul transpose_a transpose_b"); }
  SUBCASE("rank-3 left operand") { check_matmul({2, 3, 4}, {4, 5}, false, false, "matmul rank 3"); }
  SUBCASE("rank-3 left operand, transpose_b") { check_matmul({2, 3, 4}, {5, 4}, false, true, "matmul rank 3 transpose_b"); }
}

TEST_CASE("gradient: bias_add and scale") {
  GradCheck c;
  const Value x = c.uniform({2, 3, 4}), bias = c.uniform({4});
  const Outcome o = c.check(ops::bias_add(c.g, x, bias), "bias_add");
  for (std::size_t i = 0; i < o.y.size(); ++i)
    CHECK(o.y[i] == doctest::Approx(c.values(x)[i] + c.values(bias)[i % 4]).epsilon(1e-14));

  GradCheck s;
  const Value z = s.uniform({3, 5});
  const Outcome so = s.check(ops::scale(s.g, z, -2.5), "scale");
  for (std::size_t i = 0; i < so.y.size(); ++i) CHECK(so.y[i] == doctest::Approx(-2.5 * s.values(z)[i]).epsilon(1e-14));
}

TEST_CASE("gradient: add, sub, mul, div with broadcasting") {
  struct Op {
    const char* name;
    BinaryOp op;
    double (*f)(double, double);
  };
  const Op binary_ops[] = {
      {"add", ops::add, [](double a, double b) { return a + b; }},
      {"sub", ops::sub, [](double a, double b) { return a - b; }},
      {"mul", ops::mul, [](double a, double b) { return a * b; }},
      {"div", ops::div, [](double a, double b) { return a / b; }},
  };
  const std::pair<Shape, Shape> shapes[] = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},       {{2, 3, 4}, {3, 1}}, {{2, 3, 4}, {2, 1, 4}},
      {{2, 3, 4}, {1}},       {{2, 3, 4}, Shape{}}, {{3, 1}, {2, 3, 4}}, {{2, 1, 4}, {3, 1}},
  };
  for (const Op& op : binary_ops)
    for (const auto& [a, b] : shapes) check_binary(op.name, op.op, op.f, a, b);
}

TEST_CASE("gradient: activations") {
  struct Activation {
    const char* name;
    Value (*op)(Graph&, Value);
    double (*f)(double);
  };
  const Activation activations[] = {
      {"relu", ops::relu, [](double x) { return std::max(0.0, x); }},
      {"sigmoid", ops::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"tanh", ops::tanh, [](double x) { return std::tanh(x); }},
      {"gelu", [](Graph& g, Value x) { return ops::gelu(g, x, false); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }},
      {"gelu approximate", [](Graph& g, Value x) { return ops::gelu(g, x, true); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))); }},
  };
  for (const Activation& a : activations) {
    GradCheck c;
    const Value x = c.signed_away({3, 8}, 0.05, 3.0);  // |x| >= 0.05: no step crosses relu's kink
    const Outcome o = c.check(a.op(c.g, x), a.name);
    for (std::size_t i = 0; i < o.y.size(); ++i) CHECK(o.y[i] == doctest::Approx(a.f(c.values(x)[i])).epsilon(1e-12));
  }
}

TEST_CASE("gradient: softmax and log_softmax") {
  const Shape shape{2, 3, 4};
  for (int axis : {-1, 1, 0})
    for (bool log : {false, true}) {
      GradCheck c;
      const Value x = c.uniform(shape, -3, 3);
      const Value y = log ? ops::log_softmax(c.g, x, axis) : ops::softmax(c.g, x, axis);
      const Outcome o = c.check(y, std::string(log ? "log_softmax" : "softmax") + " axis " + std::to_string(axis));
      // Along the axis, the probabilities sum to one.
      const int a = axis < 0 ? axis + shape.rank() : axis;
      std::vector<double> total(static_cast<std::size_t>(shape.num_elements() / shape[a]), 0.0);
      int64_t inner = 1;
      for (int d = a + 1; d < shape.rank(); ++d) inner *= shape[d];
      for (int64_t i = 0; i < shape.num_elements(); ++i) {
        const int64_t line = (i / (inner * shape[a])) * inner + i % inner;
        const double v = o.y[static_cast<std::size_t>(i)];
        total[static_cast<std::size_t>(line)] += log ? std::exp(v) : v;
      }
      for (double t : total) CHECK(t == doctest::Approx(1.0).epsilon(1e-12));
    }
}

TEST_CASE("gradient: reshape and broadcast_to") {
  SUBCASE("reshape") {
    GradCheck c;
    const Value x = c.uniform({2, 3, 4});
    const Outcome o = c.check(ops::reshape(c.g, x, {6, 4}), "reshape");
    CHECK(o.y == c.values(x));
  }
  for (const Shape& from : {Shape{4}, Shape{3, 1}, Shape{2, 1, 4}, Shape{1}, Shape{}}) {
    GradCheck c;
    const Value x = c.uniform(from);
    const Shape to{2, 3, 4};
    const Outcome o = c.check(ops::broadcast_to(c.g, x, to), "broadcast_to from " + from.str());
    for (int64_t i = 0; i < to.num_elements(); ++i)
      CHECK(o.y[static_cast<std::size_t>(i)] == c.values(x)[static_cast<std::size_t>(broadcast_source(to, i, from))]);
  }
}

TEST_CASE("gradient: reduce_sum and reduce_mean") {
  const Shape shape{2, 3, 4};
  const std::vector<std::vector<int64_t>> axis_sets{{0}, {1}, {-1}, {0, 2}, {1, 2}, {2, -1}, {0, 1, 2}};
  for (bool mean : {false, true})
    for (bool keepdims : {false, true})
      for (const auto& axes : axis_sets) {
        GradCheck c;
        const Value x = c.uniform(shape);
        const Value y = mean ? ops::reduce_mean(c.g, x, axes, keepdims) : ops::reduce_sum(c.g, x, axes, keepdims);
        std::string what = mean ? "reduce_mean axes" : "reduce_sum axes";
        for (int64_t a : axes) what.append(" ").append(std::to_string(a));
        const Outcome o = c.check(y, what + (keepdims ? " keepdims" : ""));
        // Every input lands in exactly one output: Σ y · (inputs per output, for a mean) = Σ x.
        const double per_output = mean ? static_cast<double>(shape.num_elements()) / static_cast<double>(o.y.size()) : 1.0;
        const double xs = std::accumulate(c.values(x).begin(), c.values(x).end(), 0.0);
        CHECK(std::accumulate(o.y.begin(), o.y.end(), 0.0) * per_output == doctest::Approx(xs).epsilon(1e-12));
      }
}

TEST_CASE("gradient: cross_entropy") {
  SUBCASE("sparse labels, logits") { check_cross_entropy(true, true, {4, 5}, DType::I64, "sparse logits"); }
  SUBCASE("sparse int32 labels, logits, rank 3") {
    check_cross_entropy(true, true, {2, 3, 5}, DType::I32, "sparse int32 logits rank 3");
  }
  SUBCASE("sparse labels, probabilities") { check_cross_entropy(true, false, {4, 5}, DType::I64, "sparse probabilities"); }
  SUBCASE("dense targets, logits") { check_cross_entropy(false, true, {4, 5}, DType::F64, "dense logits"); }
  SUBCASE("dense targets, probabilities") { check_cross_entropy(false, false, {4, 5}, DType::F64, "dense probabilities"); }
}

TEST_CASE("gradient: binary_cross_entropy") {
  for (bool logits : {true, false}) {
    GradCheck c;
    // Probabilities stay inside the clip range [1e-7, 1 − 1e-7]; targets are soft labels.
    const Value pred = logits ? c.uniform({4, 3}, -4, 4) : c.uniform({4, 3}, 0.05, 0.95);
    const Value target = c.uniform({4, 3}, 0.0, 1.0);
    const Outcome o =
        c.check(ops::binary_cross_entropy(c.g, pred, target, logits), logits ? "bce logits" : "bce probabilities");
    REQUIRE(o.error.size() == 2);  // both the prediction and the target were checked
    for (std::size_t r = 0; r < 4; ++r) {
      double want = 0;
      for (std::size_t j = 0; j < 3; ++j) {
        const double z = c.values(pred)[r * 3 + j], t = c.values(target)[r * 3 + j];
        const double p = logits ? 1 / (1 + std::exp(-z)) : z;
        want -= (t * std::log(p) + (1 - t) * std::log(1 - p)) / 3;
      }
      CHECK(o.y[r] == doctest::Approx(want).epsilon(1e-12));
    }
  }
}

TEST_CASE("gradient: squared_error and absolute_error") {
  for (bool squared : {true, false}) {
    GradCheck c;
    const Value target = c.uniform({4, 3});
    std::vector<double> p = c.values(target);
    std::mt19937_64 r(5);
    std::uniform_real_distribution<double> gap(0.05, 1.0);  // |p − t| >= 0.05: away from the kink
    for (double& v : p) v += (r() % 2 ? gap(r) : -gap(r));
    const Value pred = c.given({4, 3}, p);
    const Outcome o = c.check(squared ? ops::squared_error(c.g, pred, target) : ops::absolute_error(c.g, pred, target),
                              squared ? "squared_error" : "absolute_error");
    REQUIRE(o.error.size() == 2);
    for (std::size_t row = 0; row < 4; ++row) {
      double want = 0;
      for (std::size_t j = 0; j < 3; ++j) {
        const double d = p[row * 3 + j] - c.values(target)[row * 3 + j];
        want += (squared ? d * d : std::abs(d)) / 3;
      }
      CHECK(o.y[row] == doctest::Approx(want).epsilon(1e-12));
    }
  }
}

TEST_CASE("gradient: dropout") {
  GradCheck c;
  const Value x = c.uniform({6, 8});
  const Value step = c.labels({}, 1000, DType::I64);  // an int64 scalar, not differentiated
  // For a fixed (seed, step) the mask is fixed and the op linear, so the differences are exact.
  const Outcome o = c.check(ops::dropout(c.g, x, step, 0.3, 42), "dropout");
  int dropped = 0, kept = 0;
  for (std::size_t i = 0; i < o.y.size(); ++i) {
    if (o.y[i] == 0.0) {
      ++dropped;
    } else {
      ++kept;
      CHECK(o.y[i] == doctest::Approx(c.values(x)[i] / 0.7).epsilon(1e-14));
    }
  }
  CHECK(dropped > 0);
  CHECK(kept > 0);
}

TEST_CASE("gradient: compositions accumulate gradients") {
  SUBCASE("a value used on several paths") {
    GradCheck c;
    const Value x = c.uniform({3, 4});
    c.check(ops::add(c.g, ops::mul(c.g, x, x), ops::sigmoid(c.g, x)), "x*x + sigmoid(x)");
  }
  SUBCASE("a small network") {
    GradCheck c;
    const Value x = c.uniform({5, 6}), w1 = c.uniform({6, 4}, -1, 1), b1 = c.uniform({4}, -1, 1);
    const Value w2 = c.uniform({4, 3}, -1, 1), labels = c.labels({5}, 3, DType::I64);
    const Value h = ops::gelu(c.g, ops::bias_add(c.g, ops::matmul(c.g, x, w1), b1));
    c.check(ops::cross_entropy(c.g, ops::matmul(c.g, h, w2), labels, true, true), "gelu network");
  }
}

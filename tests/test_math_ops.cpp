// The ops behind the public tandem::ops that are not layers' ops: elementwise math, maximum and
// minimum, where, reduce_max, comparisons and one_hot. Each differentiable one passes the f64
// finite-difference check (tests/gradient_check.h), and each forward value is checked against
// its closed form.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/gradient_check.h"
#include "lower_with.h"

namespace {

using namespace gradcheck;

struct Unary {
  const char* name;
  Value (*op)(Graph&, Value);
  double (*f)(double);
  double lo, hi;  // |x| in [lo, hi] with random signs, or x in [lo, hi] when positive_only
  bool positive_only;
};

}  // namespace

TEST_CASE("gradient: exp, log, sqrt, square, abs") {
  const Unary unary[] = {
      {"exp", ops::exp, [](double x) { return std::exp(x); }, -2, 2, true},
      {"log", ops::log, [](double x) { return std::log(x); }, 0.2, 3, true},
      {"sqrt", ops::sqrt, [](double x) { return std::sqrt(x); }, 0.2, 3, true},
      {"square", ops::square, [](double x) { return x * x; }, 0.1, 2, false},
      {"abs", ops::abs, [](double x) { return std::abs(x); }, 0.05, 2, false},  // away from the kink at 0
  };
  for (const Unary& u : unary) {
    GradCheck c;
    const Value x = u.positive_only ? c.uniform({3, 5}, u.lo, u.hi) : c.signed_away({3, 5}, u.lo, u.hi);
    const Outcome o = c.check(u.op(c.g, x), u.name);
    for (std::size_t i = 0; i < o.y.size(); ++i) CHECK(o.y[i] == doctest::Approx(u.f(c.values(x)[i])).epsilon(1e-14));
  }
}

TEST_CASE("gradient: maximum and minimum with broadcasting") {
  const std::pair<Shape, Shape> shapes[] = {{{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{3, 1}, {2, 3, 4}}, {{2, 3, 4}, Shape{}}};
  for (bool max : {true, false})
    for (const auto& [as, bs] : shapes) {
      GradCheck c;
      const Value a = c.uniform(as), b = c.uniform(bs);
      const Outcome o = c.check(max ? ops::maximum(c.g, a, b) : ops::minimum(c.g, a, b),
                                std::string(max ? "maximum " : "minimum ") + as.str() + " " + bs.str());
      const Shape out = ops::broadcast_shapes(as, bs, "test");
      for (int64_t i = 0; i < out.num_elements(); ++i) {
        const double x = c.values(a)[std::size_t(broadcast_source(out, i, as))], y = c.values(b)[std::size_t(broadcast_source(out, i, bs))];
        CHECK(o.y[std::size_t(i)] == (max ? std::max(x, y) : std::min(x, y)));
      }
    }
}

TEST_CASE("maximum at a tie gives each side half the gradient, as PyTorch does") {
  GradCheck c;
  Graph& g = c.g;
  const Value a = c.given({2}, {1.0, 2.0});
  const Value b = c.given({2}, {1.0, 3.0});
  const Value y = ops::reduce_sum(g, ops::maximum(g, a, b), {0});
  const std::vector<Value> d = tandem::autodiff::gradients(g, y, {a, b});
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, {d[0], d[1]}));
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
                                  [](int, int) -> void* { return nullptr; });
  const double xa[] = {1.0, 2.0}, xb[] = {1.0, 3.0};
  std::memcpy(exe.feed(0, "in0"), xa, sizeof xa);
  std::memcpy(exe.feed(0, "in1"), xb, sizeof xb);
  exe.run();
  const auto* da = static_cast<const double*>(exe.fetch(0, 0));
  const auto* db = static_cast<const double*>(exe.fetch(0, 1));
  CHECK(da[0] == 0.5);
  CHECK(db[0] == 0.5);
  CHECK(da[1] == 0.0);
  CHECK(db[1] == 1.0);
}

TEST_CASE("gradient: where with a broadcast condition") {
  GradCheck c;
  const std::vector<double> mask{1.0, 0.0, 2.5};  // any nonzero value is true
  const Value cond = c.fixed({3, 1}, mask);
  const Value x = c.uniform({2, 3, 4}), y = c.uniform({4});
  const Outcome o = c.check(ops::where(c.g, cond, x, y), "where");
  for (int64_t i = 0; i < 24; ++i) {
    const bool take_x = mask[std::size_t((i / 4) % 3)] != 0.0;
    CHECK(o.y[std::size_t(i)] == (take_x ? c.values(x)[std::size_t(i)] : c.values(y)[std::size_t(i % 4)]));
  }
}

TEST_CASE("gradient: reduce_max") {
  const std::vector<std::vector<int64_t>> axis_sets{{0}, {1}, {-1}, {0, 2}, {0, 1, 2}};
  for (bool keepdims : {false, true})
    for (const auto& axes : axis_sets) {
      GradCheck c;
      const Value x = c.uniform({2, 3, 4});
      std::string what = "reduce_max axes";
      for (int64_t a : axes) what.append(" ").append(std::to_string(a));
      const Outcome o = c.check(ops::reduce_max(c.g, x, axes, keepdims), what + (keepdims ? " keepdims" : ""));
      // Each output is one of the inputs, and no input exceeds the largest output.
      const auto& xs = c.values(x);
      for (double v : o.y) CHECK(std::find(xs.begin(), xs.end(), v) != xs.end());
      if (axes.size() == 3) CHECK(o.y[0] == *std::max_element(xs.begin(), xs.end()));
    }
}

TEST_CASE("comparisons, sign and one_hot against their definitions") {
  GradCheck c;
  Graph& g = c.g;
  const Value a = c.given({5}, {-1.0, 0.0, 2.0, 3.0, -0.5});
  const Value b = c.given({5}, {0.0, 0.0, 3.0, 2.0, -0.5});
  const Value ids = c.labels({4}, 3, DType::I64);
  const char* names[] = {"greater", "greater_equal", "less", "less_equal", "equal_to", "not_equal"};
  std::vector<Value> fetches;
  for (const char* n : names) fetches.push_back(ops::compare(g, n, a, b));
  fetches.push_back(ops::sign(g, a));
  fetches.push_back(ops::one_hot(g, ids, 3, DType::F64));
  auto plan = std::make_shared<const tandem::compile::Plan>(lower_with(tandem::distribute::Default(), g, fetches));
  tandem::runtime::Executable exe(plan, std::vector<tandem::backend::Device*>{&tandem::backend::open_device("cpu:0")},
                                  [](int, int) -> void* { return nullptr; });
  const double xa[] = {-1.0, 0.0, 2.0, 3.0, -0.5}, xb[] = {0.0, 0.0, 3.0, 2.0, -0.5};
  const int64_t xi[] = {2, 0, 1, 2};
  std::memcpy(exe.feed(0, "in0"), xa, sizeof xa);
  std::memcpy(exe.feed(0, "in1"), xb, sizeof xb);
  std::memcpy(exe.feed(0, "in2"), xi, sizeof xi);
  exe.run();
  const std::vector<std::vector<double>> want = {{0, 0, 0, 1, 0}, {0, 1, 0, 1, 1}, {1, 0, 1, 0, 0},
                                                 {1, 1, 1, 0, 1}, {0, 1, 0, 0, 1}, {1, 0, 1, 1, 0}};
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO(names[k]);
    const auto* y = static_cast<const double*>(exe.fetch(0, int(k)));
    CHECK(std::vector<double>(y, y + 5) == want[k]);
  }
  const auto* s = static_cast<const double*>(exe.fetch(0, 6));
  CHECK(std::vector<double>(s, s + 5) == std::vector<double>{-1, 0, 1, 1, -1});
  const auto* h = static_cast<const double*>(exe.fetch(0, 7));
  CHECK(std::vector<double>(h, h + 12) == std::vector<double>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
}

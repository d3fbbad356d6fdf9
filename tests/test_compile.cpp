// The compiler passes alone: execution order, blocks, and the memory planner's liveness packing.
#include <doctest/doctest.h>

#include "compile/plan.h"
#include "ops/ops.h"
#include "tandem/errors.h"

using namespace tandem;
using graph::Graph;
using graph::Value;

namespace {
constexpr std::size_t aligned(std::size_t n) { return (n + 63) / 64 * 64; }
}

TEST_CASE("memory planner: a chain needs only two live buffers") {
  Graph g;
  const Value x = g.placeholder("x", {Shape{1000}, DType::F32});
  const Value c = ops::relu(g, ops::relu(g, ops::relu(g, x)));
  const auto order = compile::execution_order(g, {c});
  const auto plan = compile::plan_memory(g, order, {c});
  // x is live until the first relu reads it; each relu's output until the next one reads it.
  CHECK(plan.arena_bytes == 2 * aligned(4000));
  CHECK(plan.offsets[static_cast<std::size_t>(x.node)][0] != plan.offsets[1][0]);
}

TEST_CASE("memory planner: buffers live at the same time never overlap; reshapes are views") {
  Graph g;
  const Value x = g.placeholder("x", {Shape{10, 30}, DType::F32});
  const Value a = ops::tanh(g, x);
  const Value r = ops::reshape(g, a, {300});
  const Value b = ops::sigmoid(g, x);  // x and a are both still needed after this
  const Value s = ops::add(g, ops::reshape(g, b, {300}), r);
  const auto order = compile::execution_order(g, {s});
  const auto plan = compile::plan_memory(g, order, {s});
  auto off = [&](Value v) { return plan.offsets[static_cast<std::size_t>(v.node)][static_cast<std::size_t>(v.index)]; };
  CHECK(off(r) == off(a));
  CHECK(off(a) != off(b));
  CHECK(off(x) != off(a));
  CHECK(off(x) != off(b));
  CHECK(plan.arena_bytes <= 3 * aligned(1200));
}

TEST_CASE("execution order: only what the fetches need, grouped by phase, still topological") {
  Graph g;
  const Value x = g.placeholder("x", {Shape{4}, DType::F32});
  const Value unused = ops::sigmoid(g, x);
  (void)unused;
  Value back;
  {
    graph::ScopeGuard phase(g, graph::Phase::Backward);
    back = ops::scale(g, x, 2.0);
  }
  const Value fwd = ops::relu(g, x);  // created after the backward node, but runs before it
  const Value both = [&] {
    graph::ScopeGuard phase(g, graph::Phase::Backward);
    return ops::add(g, back, fwd);
  }();
  const auto order = compile::execution_order(g, {both});
  CHECK(order == std::vector<int>{x.node, fwd.node, back.node, both.node});
  const auto blocks = compile::blocks_by_phase(g, order);
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].phase == graph::Phase::Forward);
  CHECK(blocks[1].nodes == std::vector<int>{back.node, both.node});
}

TEST_CASE("graph: shape errors name the layer and both shapes") {
  Graph g;
  g.scope = "dense_7";
  const Value a = g.placeholder("a", {Shape{2, 3}, DType::F32});
  const Value b = g.placeholder("b", {Shape{4, 5}, DType::F32});
  CHECK_THROWS_WITH_AS(ops::matmul(g, a, b), "layer \"dense_7\": matmul: inner dimensions differ: (2, 3) · (4, 5)", ShapeError);
  CHECK_THROWS_WITH_AS(ops::add(g, a, b), doctest::Contains("shapes (2, 3) and (4, 5) cannot be broadcast together"), ShapeError);
}

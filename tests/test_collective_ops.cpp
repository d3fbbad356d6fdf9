// The communication ops as graph nodes: all_gather, reduce_scatter, send and recv, run as plans
// of 2 and 4 virtual CPU devices. Values against closed form; the gradients that the ops' rules
// emit (all_gather's is a reduce_scatter and the reverse) against float64 finite differences of
// the sum of every device's loss.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "autodiff/autodiff.h"
#include "backend/device.h"
#include "comm/inprocess.h"
#include "distribute/strategy.h"
#include "ops/ops.h"
#include "random_values.h"
#include "runtime/executable.h"

namespace dist = tandem::distribute;
namespace graph = tandem::graph;
namespace ops = tandem::ops;
using tandem::DType;
using tandem::Shape;
using tandem::TensorType;

namespace {
// One graph per device, each with its own fetches, bound to cpu:0..k-1 and one communicator.
struct DevicePlan {
  std::unique_ptr<tandem::runtime::Executable> exe;

  DevicePlan(std::vector<graph::Graph> graphs, const std::vector<std::vector<graph::Value>>& fetches) {
    auto plan = std::make_shared<tandem::compile::Plan>();
    std::vector<std::string> names;
    std::vector<tandem::backend::Device*> devices;
    for (std::size_t d = 0; d < graphs.size(); ++d) {
      names.push_back("cpu:" + std::to_string(d));
      devices.push_back(&tandem::backend::open_device(names.back(), 1));
      plan->programs.push_back(tandem::compile::single_program(names.back(), std::move(graphs[d]), fetches[d]));
      plan->schedule.push_back(tandem::compile::run_all_blocks(plan->programs.back()));
    }
    auto comm = std::make_shared<tandem::comm::InProcessCommunicator>(names);
    comm->set_timeout(std::chrono::milliseconds(20000));
    exe = std::make_unique<tandem::runtime::Executable>(plan, devices, [](int, int) -> void* { return nullptr; }, comm);
  }
  void feed(int d, const std::string& name, const std::vector<double>& v) {
    void* dst = exe->feed(d, name);
    REQUIRE(dst != nullptr);
    exe->device(d).copy_in(dst, v.data(), v.size() * sizeof(double));
  }
  std::vector<double> fetch(int d, int index, std::size_t n) {
    std::vector<double> out(n);
    exe->copy_fetch(d, index, out.data(), n * sizeof(double));
    return out;
  }
};

using Kind = graph::Communication::Kind;

// A collective over ranks 0..k-1.
graph::Communication over(Kind kind, int k) {
  graph::Communication c{.kind = kind};
  for (int r = 0; r < k; ++r) c.group.push_back(r);
  return c;
}

// Device d's loss: sum(y ⊙ y ⊙ w_d) over the collective's output y; the fetches are the loss and
// the gradient of the loss with respect to the device's input x.
graph::Graph collective_graph(Kind kind, int ranks, const Shape& in, const Shape& out, std::vector<graph::Value>& fetches) {
  graph::Graph g;
  const graph::Value x = g.placeholder("x", {in, DType::F64});
  const graph::Value w = g.placeholder("w", {out, DType::F64});
  const graph::Value y = g.communicate(over(kind, ranks), {x})[0];
  const graph::Value loss = ops::reduce_sum(g, ops::mul(g, ops::mul(g, y, y), w), {0, 1});
  fetches = {loss, tandem::autodiff::gradients(g, loss, {x})[0], y};
  return g;
}

// k devices each with collective_graph(op); device d's input has in_rows rows, its weights
// out_rows rows (three columns each), drawn from seeds that differ per device.
struct Case {
  std::vector<graph::Graph> graphs;
  std::vector<std::vector<graph::Value>> fetches;
  std::vector<std::vector<double>> xs, ws;
  Case(Kind kind, int k, int64_t in_rows, int64_t out_rows, unsigned seed) : fetches(static_cast<std::size_t>(k)) {
    for (int d = 0; d < k; ++d) {
      graphs.push_back(collective_graph(kind, k, Shape{in_rows, 3}, Shape{out_rows, 3}, fetches[static_cast<std::size_t>(d)]));
      xs.push_back(random_values(static_cast<std::size_t>(3 * in_rows), seed + static_cast<unsigned>(d)));
      ws.push_back(random_values(static_cast<std::size_t>(3 * out_rows), seed + 10 + static_cast<unsigned>(d)));
    }
  }
};

// Runs the plan with inputs xs and weights ws; returns the sum over devices of their losses.
double total_loss(DevicePlan& p, const std::vector<std::vector<double>>& xs, const std::vector<std::vector<double>>& ws) {
  for (std::size_t d = 0; d < xs.size(); ++d) {
    p.feed(static_cast<int>(d), "x", xs[d]);
    p.feed(static_cast<int>(d), "w", ws[d]);
  }
  p.exe->run();
  double total = 0;
  for (std::size_t d = 0; d < xs.size(); ++d) total += p.fetch(static_cast<int>(d), 0, 1)[0];
  return total;
}

// The gradient each device computed against central differences of the total loss.
void check_gradients(DevicePlan& p, std::vector<std::vector<double>> xs, const std::vector<std::vector<double>>& ws) {
  total_loss(p, xs, ws);
  std::vector<std::vector<double>> grads;
  for (std::size_t d = 0; d < xs.size(); ++d) grads.push_back(p.fetch(static_cast<int>(d), 1, xs[d].size()));
  const double h = 1e-6;
  for (std::size_t d = 0; d < xs.size(); ++d)
    for (std::size_t e = 0; e < xs[d].size(); ++e) {
      const double keep = xs[d][e];
      xs[d][e] = keep + h;
      const double up = total_loss(p, xs, ws);
      xs[d][e] = keep - h;
      const double down = total_loss(p, xs, ws);
      xs[d][e] = keep;
      INFO("device " << d << " element " << e);
      CHECK(grads[d][e] == doctest::Approx((up - down) / (2 * h)).epsilon(1e-7));
    }
}
}  // namespace

TEST_CASE("collective ops: all_gather concatenates the ranks' rows, and its gradient (a reduce_scatter) passes the f64 check") {
  for (int k : {2, 4}) {
    INFO(k << " devices");
    Case c(Kind::AllGather, k, 2, 2 * k, 10);
    const std::vector<std::vector<double>>& xs = c.xs;
    bool has_reduce_scatter = false;
    for (int n = 0; n < c.graphs[0].size(); ++n) has_reduce_scatter = has_reduce_scatter || c.graphs[0].node(n).op == "reduce_scatter";
    CHECK(has_reduce_scatter);
    DevicePlan plan(std::move(c.graphs), c.fetches);
    total_loss(plan, xs, c.ws);
    for (int d = 0; d < k; ++d) {
      const std::vector<double> y = plan.fetch(d, 2, static_cast<std::size_t>(6 * k));
      for (int r = 0; r < k; ++r)
        for (int e = 0; e < 6; ++e) CHECK(y[static_cast<std::size_t>(6 * r + e)] == xs[static_cast<std::size_t>(r)][static_cast<std::size_t>(e)]);
    }
    check_gradients(plan, xs, c.ws);
  }
}

TEST_CASE("collective ops: reduce_scatter gives each rank its rows of the sum, and its gradient (an all_gather) passes the f64 check") {
  for (int k : {2, 4}) {
    INFO(k << " devices");
    Case c(Kind::ReduceScatter, k, 2 * k, 2, 30);
    const std::vector<std::vector<double>>& xs = c.xs;
    DevicePlan plan(std::move(c.graphs), c.fetches);
    total_loss(plan, xs, c.ws);
    for (int d = 0; d < k; ++d) {
      const std::vector<double> y = plan.fetch(d, 2, 6);
      for (int e = 0; e < 6; ++e) {
        double sum = 0;
        for (int r = 0; r < k; ++r) sum += xs[static_cast<std::size_t>(r)][static_cast<std::size_t>(6 * d + e)];
        CHECK(y[static_cast<std::size_t>(e)] == doctest::Approx(sum).epsilon(1e-15));
      }
    }
    check_gradients(plan, xs, c.ws);
  }
}

TEST_CASE("collective ops: a value sent from cpu:1 arrives on cpu:0; rows that do not divide among the ranks are refused") {
  graph::Graph sender, receiver;
  const graph::Value x = sender.placeholder("x", {Shape{2, 2}, DType::F64});
  sender.communicate({.kind = Kind::Send, .peer = 0}, {ops::scale(sender, x, 3.0)});
  const graph::Value got =
      receiver.communicate({.kind = Kind::Recv, .peer = 1}, {}, {{"shape", std::vector<int64_t>{2, 2}}, {"dtype", int64_t(DType::F64)}})[0];
  const graph::Value doubled = ops::scale(receiver, got, 2.0);
  DevicePlan plan({std::move(receiver), std::move(sender)}, {{doubled}, {}});
  plan.feed(1, "x", {1, 2, 3, 4});
  plan.exe->run();
  CHECK(plan.fetch(0, 0, 4) == std::vector<double>{6, 12, 18, 24});

  graph::Graph bad;
  CHECK_THROWS_WITH_AS(bad.communicate(over(Kind::ReduceScatter, 2), {bad.placeholder("x", {Shape{3, 2}, DType::F64})}),
                       "reduce_scatter: expected rows divisible by the 2 ranks, got shape (3, 2)", tandem::ShapeError);
}

TEST_CASE("collective ops: a peer that is not another rank, or a rank count unlike the communicator's, is refused when the plan is bound") {
  auto two_devices = [](const std::function<graph::Value(graph::Graph&)>& build) {
    std::vector<graph::Graph> graphs(2);
    std::vector<std::vector<graph::Value>> fetches;
    for (graph::Graph& g : graphs) fetches.push_back({build(g)});
    DevicePlan plan(std::move(graphs), fetches);
  };
  for (int peer : {0, 2, -1}) {  // rank 0 receiving from itself, from a rank that does not exist
    INFO("peer " << peer);
    CHECK_THROWS_WITH_AS(two_devices([&](graph::Graph& g) {
                           return g.communicate({.kind = Kind::Recv, .peer = peer}, {},
                                                {{"shape", std::vector<int64_t>{2}}, {"dtype", int64_t(DType::F64)}})[0];
                         }),
                         ("recv on rank 0: peer must be another rank in [0, 2), got " + std::to_string(peer)).c_str(), tandem::Error);
  }
  CHECK_THROWS_WITH_AS(two_devices([](graph::Graph& g) {
                         return g.communicate(over(Kind::AllGather, 3), {g.placeholder("x", {Shape{2}, DType::F64})})[0];
                       }),
                       "all_gather: the node spans 3 ranks, the communicator has 2", tandem::Error);
}

// The lowering pass: global graphs lowered over 2 and 4 virtual CPU devices against the same
// graph on one device, and the gradients of the lowered plans against float64 finite
// differences. Each layout conversion the boxing pass knows is reached by a small graph whose
// ops' rules ask for it; a manual placement moves values between devices with send/recv.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "autodiff/autodiff.h"
#include "backend/device.h"
#include "compile/lower.h"
#include "comm/inprocess.h"
#include "distribute/strategy.h"
#include "ops/attention.h"
#include "ops/ops.h"
#include "random_values.h"
#include "runtime/executable.h"
#include "runtime/variable_homes.h"
#include "strategy_helpers.h"
#include "lower_with.h"

namespace compile = tandem::compile;
namespace graph = tandem::graph;
namespace ops = tandem::ops;
using graph::Layout;
using tandem::DType;
using tandem::Shape;
using tandem::VariablePtr;

namespace {
// A global graph lowered over cpu:0..k-1 and bound; inputs are written and fetches read as the
// plan lays them out (each program its rows of a split feed; partial fetches summed, splits
// concatenated).
struct Lowered {
  std::shared_ptr<compile::Plan> plan;
  std::map<int, VariablePtr> variables;
  tandem::runtime::VariableHomes homes;  // before exe: the plan's kernels use them
  std::vector<tandem::backend::Device*> devices;
  std::unique_ptr<tandem::runtime::Executable> exe;

  Lowered(const graph::Graph& g, const std::vector<graph::Value>& fetches, const compile::LoweringOptions& o,
          const std::vector<VariablePtr>& vars = {}) {
    plan = std::make_shared<compile::Plan>(compile::lower(g, fetches, o));
    for (const VariablePtr& v : vars) variables[v->id()] = v;
    for (const std::string& name : o.devices) devices.push_back(&tandem::backend::open_device(name, 1));
    auto comm = std::make_shared<tandem::comm::InProcessCommunicator>(o.devices);
    comm->set_timeout(std::chrono::milliseconds(20000));
    exe = std::make_unique<tandem::runtime::Executable>(
        plan, devices, [this](int p, int id) { return homes.home(*devices[static_cast<std::size_t>(p)], *variables.at(id)); }, comm);
  }
  // `values` is the whole input of `rows` rows: micro-batch j of m gets the j-th m-th of them.
  void feed(const std::string& name, const std::vector<double>& values, int64_t rows) {
    const std::size_t row = values.size() / static_cast<std::size_t>(rows);
    const int m = plan->programs[0].micro_batches();
    for (int j = 0; j < m; ++j) {
      const double* micro = values.data() + static_cast<std::size_t>(j * rows / m) * row;
      for (int p = 0; p < exe->programs(); ++p) {
        const auto it = plan->programs[static_cast<std::size_t>(p)].feeds.find(name);
        void* dst = exe->feed(p, name, j);
        if (it == plan->programs[static_cast<std::size_t>(p)].feeds.end() || !dst) continue;
        exe->device(p).copy_in(dst, micro + static_cast<std::size_t>(it->second.offset) * row,
                               static_cast<std::size_t>(it->second.rows) * row * sizeof(double));
      }
    }
  }
  // Fetch i, of n float64 values in all.
  std::vector<double> fetch(int i, std::size_t n) const {
    const compile::FetchSite& site = plan->fetches[static_cast<std::size_t>(i)];
    std::vector<double> out(n, 0.0);
    if (site.layout.is_split()) {
      REQUIRE(site.layout.axis == 0);
      const std::size_t row = n / static_cast<std::size_t>(site.layout.offset(static_cast<int>(site.programs.size())));
      for (std::size_t q = 0; q < site.programs.size(); ++q)
        exe->copy_fetch(site.programs[q], i, out.data() + static_cast<std::size_t>(site.layout.offset(static_cast<int>(q))) * row,
                        static_cast<std::size_t>(site.layout.shares[q]) * row * sizeof(double));
      return out;
    }
    for (int p : site.programs) {
      std::vector<double> part(n);
      exe->copy_fetch(p, i, part.data(), n * sizeof(double));
      for (std::size_t e = 0; e < n; ++e) out[e] += part[e];
      if (!site.layout.is_partial()) break;
    }
    return out;
  }
  int count(int program, const std::string& op) const {
    const graph::Graph& g = plan->programs[static_cast<std::size_t>(program)].graph;
    int n = 0;
    for (int i = 0; i < g.size(); ++i) n += g.node(i).op == op;
    return n;
  }
};

graph::Value sum_all(graph::Graph& g, graph::Value v) {
  std::vector<int64_t> axes;
  for (int a = 0; a < g.type(v).shape.rank(); ++a) axes.push_back(a);
  return ops::reduce_sum(g, v, axes);
}

// Reaches every conversion: softmax along the batch axis has no rule, so its split input is
// gathered (S→R); z is fed whole and sliced for mul (R→S); a sum over u's split axis is partial
// and added to split rows (P→S); relu of a partial sum needs it whole (P→R); w is split unlike x
// (S→S). The loss weighs each result by fixed coefficients so that no gradient is trivial.
struct ConversionGraph {
  graph::Graph g;
  std::vector<graph::Value> fetches;  // loss, then its gradients for x, z, u, w
  explicit ConversionGraph(int64_t rows) {
    auto in = [&](const char* name, Shape s) { return g.placeholder(name, {std::move(s), DType::F64}); };
    const graph::Value x = in("x", {rows, 3}), z = in("z", {rows, 3}), u = in("u", {4, rows, 3}), w = in("w", {rows, 3});
    const graph::Value m = in("m", {rows, 3});
    const graph::Value a = ops::softmax(g, x, 0);
    const graph::Value b = ops::mul(g, x, z);
    const graph::Value c = ops::add(g, x, ops::reduce_sum(g, u, {0}));
    const graph::Value r = ops::relu(g, ops::reduce_sum(g, x, {0}));
    const graph::Value d = ops::add(g, ops::tanh(g, x), w);
    auto weighed = [&](graph::Value v) { return sum_all(g, ops::mul(g, ops::mul(g, v, v), m)); };
    graph::Value loss = ops::add(g, weighed(a), sum_all(g, ops::mul(g, b, b)));
    loss = ops::add(g, loss, weighed(c));
    loss = ops::add(g, loss, sum_all(g, ops::mul(g, r, r)));
    loss = ops::add(g, loss, weighed(d));
    fetches = {loss};
    for (graph::Value grad : tandem::autodiff::gradients(g, loss, {x, z, u, w})) fetches.push_back(grad);
  }
};

struct Inputs {
  int64_t rows;
  std::map<std::string, std::vector<double>> values;
  explicit Inputs(int64_t r) : rows(r) {
    const auto n = static_cast<std::size_t>(3 * rows);
    values = {{"x", random_values(n, 1)}, {"z", random_values(n, 2)}, {"u", random_values(4 * n, 3)},
              {"w", random_values(n, 4)}, {"m", random_values(n, 5)}};
  }
  double loss(Lowered& l) const {
    for (const auto& [name, v] : values) l.feed(name, v, name == "u" ? 4 : rows);
    l.exe->run();
    return l.fetch(0, 1)[0];
  }
};
}  // namespace

namespace {
// The lowered plan's loss and gradients equal the one-device graph's, and its gradients pass
// float64 finite differences.
void check_against_one_device(const ConversionGraph& cg, Inputs& inputs, Lowered& many) {
  Lowered one(cg.g, cg.fetches, {.devices = {"cpu:0"}});
  CHECK(inputs.loss(many) == doctest::Approx(inputs.loss(one)).epsilon(1e-12));
  const char* names[] = {"x", "z", "u", "w"};
  std::vector<std::vector<double>> grads;
  for (int i = 0; i < 4; ++i) {
    const std::size_t n = inputs.values[names[i]].size();
    inputs.loss(one);
    const std::vector<double> reference = one.fetch(i + 1, n);
    inputs.loss(many);
    grads.push_back(many.fetch(i + 1, n));
    for (std::size_t e = 0; e < n; ++e) CHECK(grads.back()[e] == doctest::Approx(reference[e]).epsilon(1e-12));
  }
  const double h = 1e-6;
  for (int i = 0; i < 4; ++i) {
    std::vector<double>& v = inputs.values[names[i]];
    for (std::size_t e = 0; e < v.size(); ++e) {
      const double keep = v[e];
      v[e] = keep + h;
      const double up = inputs.loss(many);
      v[e] = keep - h;
      const double down = inputs.loss(many);
      v[e] = keep;
      INFO(names[i] << " element " << e);
      CHECK(grads[static_cast<std::size_t>(i)][e] == doctest::Approx((up - down) / (2 * h)).epsilon(1e-6));
    }
  }
}

// The collective groups (as device lists) of program p's nodes of `op`.
std::set<std::vector<int>> groups_of(const Lowered& l, int p, const std::string& op) {
  std::set<std::vector<int>> out;
  const graph::Graph& g = l.plan->programs[static_cast<std::size_t>(p)].graph;
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).op == op) out.insert(g.node(i).communication->group);
  return out;
}
}  // namespace

TEST_CASE("lowering: every layout conversion gives the one-device result, and the lowered gradients pass the f64 check") {
  struct Split {
    int devices;
    int64_t rows;
    std::vector<int64_t> w_shares;  // unlike x's even split
  };
  for (const Split& c : {Split{2, 8, {5, 3}}, Split{2, 7, {3, 4}}, Split{4, 8, {3, 2, 2, 1}}, Split{4, 10, {2, 2, 3, 3}}}) {
    INFO(c.devices << " devices, " << c.rows << " rows");
    const ConversionGraph cg(c.rows);
    Inputs inputs(c.rows);
    compile::LoweringOptions o{.devices = cpus(c.devices)};
    o.place = [&](const graph::Node&) {
      std::vector<int> all;
      for (int d = 0; d < c.devices; ++d) all.push_back(d);
      return all;
    };
    o.feed_layout = [&](const graph::Node& feed, const std::vector<int>& mesh) -> graph::MeshLayout {
      const std::string& name = feed.attrs.s("name");
      if (name == "z" || name == "m") return Layout::replicated();
      if (name == "w") return Layout::split(0, c.w_shares);
      return Layout::even_split(0, feed.outputs[0].shape[0], mesh[0]);
    };
    Lowered many(cg.g, cg.fetches, o);
    const bool even = c.rows % c.devices == 0;
    CHECK(many.count(0, "all_gather") >= 2);         // S→R and S→S
    CHECK(many.count(0, "slice") >= 2);              // R→S and S→S (and uneven gathers)
    CHECK(many.count(0, "all_reduce_start") >= 1);  // P→R
    CHECK((many.count(0, "reduce_scatter") >= 1) == even);  // P→S, when the split is even
    CHECK(many.count(0, "send") == 0);
    check_against_one_device(cg, inputs, many);
  }
}

TEST_CASE("lowering on a mesh: feeds split over either axis or both (2 × 2 and 2 × 3) are converted axis by axis within rows and columns, giving the one-device result and f64-checked gradients") {
  // Feeds are split by rows only: x over the mesh's rows, z over its columns, w over the rows and
  // each block again over the columns; u and m whole. So mul(x, z) slices each along the axis
  // the other splits (a block of a block), softmax along the batch gathers x within columns,
  // and the sums over the batch are partial along one axis or both (one all-reduce over all).
  for (const std::vector<int>& mesh : {std::vector<int>{2, 2}, std::vector<int>{2, 3}}) {
    const int k = mesh[0] * mesh[1];
    const int64_t rows = 12;
    INFO("mesh " << mesh[0] << " x " << mesh[1]);
    const ConversionGraph cg(rows);
    Inputs inputs(rows);
    compile::LoweringOptions o{.devices = cpus(k)};
    std::vector<int> all(static_cast<std::size_t>(k));
    for (int d = 0; d < k; ++d) all[static_cast<std::size_t>(d)] = d;
    o.place = [&](const graph::Node&) { return compile::Placement{all, mesh}; };
    o.feed_layout = [&](const graph::Node& feed, const std::vector<int>& m) {
      const std::string& name = feed.attrs.s("name");
      const Shape& shape = feed.outputs[0].shape;
      if (name == "x") return graph::MeshLayout::even_splits(shape, {0, -1}, m);
      if (name == "z") return graph::MeshLayout::even_splits(shape, {-1, 0}, m);
      if (name == "w") return graph::MeshLayout::even_splits(shape, {0, 0}, m);
      return graph::MeshLayout::replicated(m.size());
    };
    Lowered many(cg.g, cg.fetches, o);
    REQUIRE(many.plan->programs.size() == static_cast<std::size_t>(k));
    // Device (i, j) = i·columns + j meets the devices of its row and of its column, and all of
    // them at once only to sum what is partial over both axes.
    for (int d = 0; d < k; ++d) {
      const int i = d / mesh[1], j = d % mesh[1];
      std::vector<int> row, column;
      for (int c = 0; c < mesh[1]; ++c) row.push_back(i * mesh[1] + c);
      for (int r = 0; r < mesh[0]; ++r) column.push_back(r * mesh[1] + j);
      const std::set<std::vector<int>> allowed = {row, column, all};
      for (const char* op : {"all_gather", "all_reduce_start", "reduce_scatter"})
        for (const std::vector<int>& group : groups_of(many, d, op)) CHECK_MESSAGE(allowed.count(group), op << " on device " << d);
      CHECK(groups_of(many, d, "all_gather").count(row));
      CHECK(groups_of(many, d, "all_gather").count(column));
      CHECK(many.count(d, "send") == 0);
    }
    check_against_one_device(cg, inputs, many);
  }
}

TEST_CASE("lowering on a mesh: a block of a block, and a dimension cut unevenly and then again is refused naming both axes") {
  const tandem::TensorType t{Shape{10, 6}, DType::F32};
  const graph::MeshLayout twice = graph::MeshLayout::even_splits(t.shape, {0, 0}, {2, 2});  // rows 5 | 5, then 3 | 2 of each
  CHECK(twice.str() == "[S(0)[5,5], S(0)[3,2]]");
  CHECK(twice.block(t, {1, 1}) == std::vector<std::pair<int64_t, int64_t>>{{8, 2}, {0, 6}});
  CHECK(twice.local(t, {1, 0}).shape == Shape{3, 6});
  const graph::MeshLayout across = graph::MeshLayout::even_splits(t.shape, {1, 0}, {3, 2});
  CHECK(across.block(t, {2, 1}) == std::vector<std::pair<int64_t, int64_t>>{{5, 5}, {4, 2}});
  const graph::MeshLayout uneven({Layout::even_split(0, 10, 3), Layout::even_split(0, 4, 2)});  // 4 | 3 | 3, then 2 | 2 of 4
  CHECK(uneven.local(t, {0, 1}).shape == Shape{2, 6});
  CHECK_THROWS_WITH_AS(uneven.local(t, {1, 0}),
                       "a value of shape (10, 6) is cut along dimension 0 by mesh axis 0 into unequal blocks and again by mesh axis 1, whose "
                       "shares S(0)[2,2] fit a block of 4, not this one of 3; make that dimension a multiple of the outer axis's devices",
                       tandem::Error);
  CHECK(graph::mesh_coordinates(5, {2, 3}) == std::vector<int>{1, 2});
}

TEST_CASE("lowering: a layer placed on cpu:1 feeding one on cpu:0 gets send/recv both ways, and an SGD step equals one device's") {
  auto step = [](int devices) {
    const int64_t rows = 6;
    auto w1 = std::make_shared<tandem::Variable>("first/kernel", tandem::Tensor::from({4, 5}, std::span<const double>(random_values(20, 7))), true);
    auto w2 = std::make_shared<tandem::Variable>("second/kernel", tandem::Tensor::from({5, 2}, std::span<const double>(random_values(10, 8))), true);
    auto sgd = tandem::optimizers::SGD(0.1);
    graph::Graph g;
    auto read = [&](const VariablePtr& v) { return g.variable({v->id(), v->path(), v->value().type(), true}); };
    const graph::Value x = g.placeholder("x", {Shape{rows, 4}, DType::F64});
    const graph::Value y = g.placeholder("y", {Shape{rows, 2}, DType::F64});
    graph::Value h, out;
    {
      graph::ScopeGuard scope(g, "first");
      h = ops::tanh(g, ops::matmul(g, x, read(w1)));
    }
    {
      graph::ScopeGuard scope(g, "second");
      out = ops::matmul(g, h, read(w2));
    }
    graph::Value loss;
    {
      graph::ScopeGuard scope(g, "loss");
      const graph::Value diff = ops::sub(g, out, y);
      loss = ops::scale(g, sum_all(g, ops::mul(g, diff, diff)), 1.0 / rows);
    }
    const std::vector<graph::Value> grads = tandem::autodiff::gradients(g, loss, {read(w1), read(w2)});
    sgd->emit_updates(g, {w1, w2}, grads);
    std::vector<VariablePtr> vars{w1, w2};
    for (const VariablePtr& v : sgd->variables()) vars.push_back(v);

    compile::LoweringOptions o{.devices = cpus(devices)};
    if (devices == 2)  // the layer "first" on cpu:1, everything else it says where on cpu:0
      o.place = [](const graph::Node& n) { return n.scope == "first" ? std::vector<int>{1} : n.scope.empty() ? std::vector<int>{} : std::vector<int>{0}; };
    Lowered l(g, {loss}, o, vars);
    if (devices == 2) {
      CHECK(l.count(1, "send") >= 1);  // h forward
      CHECK(l.count(0, "recv") >= 1);
      CHECK(l.count(0, "send") >= 1);  // h's gradient back
      CHECK(l.count(1, "recv") >= 1);
      CHECK(l.count(0, "all_reduce_start") == 0);
      CHECK(l.plan->fetches[0].programs == std::vector<int>{0});  // the loss lives on cpu:0 only
    }
    l.feed("x", random_values(24, 9), rows);
    l.feed("y", random_values(12, 10), rows);
    l.exe->run();
    const double loss_value = l.fetch(0, 1)[0];
    l.homes.to_host(vars);
    return std::make_tuple(loss_value, w1->value().clone(), w2->value().clone());
  };
  const auto [loss1, w1_one, w2_one] = step(1);
  const auto [loss2, w1_two, w2_two] = step(2);
  CHECK(loss2 == loss1);
  for (int64_t e = 0; e < w1_one.size(); ++e) CHECK(w1_two.item(e) == w1_one.item(e));
  for (int64_t e = 0; e < w2_one.size(); ++e) CHECK(w2_two.item(e) == w2_one.item(e));
}

TEST_CASE("lowering: Mirrored's step of a dense layer splits the rows and sums the gradients in one all-reduce bucket, nothing else") {
  const int64_t rows = 8;
  auto w = std::make_shared<tandem::Variable>("dense/kernel", tandem::Tensor::from({4, 3}, std::span<const double>(random_values(12, 1))), true);
  auto b = std::make_shared<tandem::Variable>("dense/bias", tandem::Tensor::from({3}, std::span<const double>(random_values(3, 2))), true);
  graph::Graph g;
  auto read = [&](const VariablePtr& v) { return g.variable({v->id(), v->path(), v->value().type(), true}); };
  const graph::Value x = g.placeholder("x", {Shape{rows, 4}, DType::F64});
  const graph::Value y = g.placeholder("y", {Shape{rows}, DType::I32});
  const graph::Value logits = ops::bias_add(g, ops::matmul(g, x, read(w)), read(b));
  const graph::Value loss = ops::scale(g, sum_all(g, ops::cross_entropy(g, logits, y, true, true)), 1.0 / rows);
  tandem::optimizers::SGD(0.1)->emit_updates(g, {w, b}, tandem::autodiff::gradients(g, loss, {read(w), read(b)}));
  const compile::Plan plan = lower_with(tandem::distribute::Mirrored(cpus(2)), g, {loss});
  CHECK(plan.fetches[0].layout.is_partial());
  for (const compile::Program& p : plan.programs) {
    std::map<std::string, int> ops_seen;
    for (int i = 0; i < p.graph.size(); ++i) ++ops_seen[p.graph.node(i).op];
    CHECK(ops_seen["all_reduce_start"] == 1);
    CHECK(ops_seen["all_gather"] == 0);
    CHECK(ops_seen["reduce_scatter"] == 0);
    CHECK(p.feeds.at("x").rows == 4);
    for (int i = 0; i < p.graph.size(); ++i)
      if (p.graph.node(i).op == "all_reduce_start") CHECK(p.graph.node(i).inputs.size() == 2);  // both gradients
  }
  CHECK(plan.programs[1].feeds.at("y").offset == 4);
}

TEST_CASE("lowering: Mirrored's all-reduce nodes carry their group, bucket and wire, and Pipeline's send/recv pairs their peers and tags") {
  using Kind = graph::Communication::Kind;
  // Layer a's kernel is 8×16 floats (512 bytes), b's 16×16 (1024): with 600-byte buckets each
  // gradient is a bucket of its own.
  const LayeredGraph lg({{"a", 16}, {"b", 16}}, 8, 8);
  const compile::Plan mirrored =
      lower_with(tandem::distribute::Mirrored(cpus(2), {.bucket_bytes = 600, .all_reduce_bf16 = true}), lg.g, lg.fetches);
  REQUIRE(mirrored.programs.size() == 2);
  for (const compile::Program& p : mirrored.programs) {
    INFO(p.device);
    std::map<int, Shape> bucket_shapes;  // by bucket, of its starts
    for (int i = 0; i < p.graph.size(); ++i) {
      const graph::Node& n = p.graph.node(i);
      const bool start = n.op == "all_reduce_start", wait = n.op == "all_reduce_wait";
      CHECK(n.communication.has_value() == (start || wait));
      if (!start && !wait) continue;
      const graph::Communication& c = *n.communication;
      CHECK(c.kind == (start ? Kind::AllReduceStart : Kind::AllReduceWait));
      CHECK(c.group == std::vector<int>{0, 1});  // both devices, listed
      CHECK(c.wire == graph::Communication::Wire::BFloat16);
      CHECK_FALSE(c.mean);
      REQUIRE(n.inputs.size() == 1);
      if (start) CHECK(bucket_shapes.emplace(c.bucket, p.graph.type(n.inputs[0]).shape).second);
      else CHECK(p.graph.node(n.after.at(0)).communication->bucket == c.bucket);  // a wait follows its own start
    }
    REQUIRE(bucket_shapes.size() == 2);
    CHECK(bucket_shapes.begin()->first == 0);
    CHECK(bucket_shapes.rbegin()->first == 1);
    std::set<std::vector<int64_t>> shapes;
    for (const auto& [bucket, shape] : bucket_shapes) shapes.insert(shape.dims());
    CHECK(shapes == std::set<std::vector<int64_t>>{{8, 16}, {16, 16}});
  }

  // Two stages on two devices: a on cpu:0, b on cpu:1. The activation goes forward and its
  // gradient back, each as a send whose recv on the other device has the same tag and type.
  const compile::Plan piped = lower_with(tandem::distribute::Pipeline(cpus(2), {.boundaries = {"b"}}), lg.g, lg.fetches);
  REQUIRE(piped.programs.size() == 2);
  std::set<int> tags;
  for (int d = 0; d < 2; ++d) {
    const graph::Graph& from = piped.programs[static_cast<std::size_t>(d)].graph;
    const graph::Graph& to = piped.programs[static_cast<std::size_t>(1 - d)].graph;
    int sends = 0;
    for (int i = 0; i < from.size(); ++i) {
      const graph::Node& n = from.node(i);
      if (n.op == "recv") CHECK(n.communication->peer == 1 - d);
      if (n.op != "send") continue;
      ++sends;
      const graph::Communication& c = *n.communication;
      CHECK(c.kind == Kind::Send);
      CHECK(c.peer == 1 - d);
      CHECK(tags.insert(c.tag).second);  // every transfer its own tag
      int matched = 0;
      for (int j = 0; j < to.size(); ++j) {
        const graph::Node& r = to.node(j);
        if (r.op == "recv" && r.communication->kind == Kind::Recv && r.communication->peer == d && r.communication->tag == c.tag) {
          ++matched;
          CHECK(r.outputs[0] == from.type(n.inputs[0]));
        }
      }
      CHECK(matched == 1);
    }
    INFO("device " << d);
    CHECK(sends >= 1);  // the activation forward (device 0), its gradient back (device 1)
  }
}

TEST_CASE("lowering: the optimizer's variables say they are its own and a slot names its weight, and its updates have role Optimizer") {
  const LayeredGraph lg({{"a", 16}, {"b", 4}}, 8, 8, tandem::optimizers::Adam(0.01));
  int slots = 0, counters = 0;
  for (const graph::VariableInfo& v : lg.g.variables()) {
    INFO(v.path);
    if (v.path == "a/kernel" || v.path == "b/kernel") {
      CHECK(v.role == graph::Role::Layer);
      CHECK(v.slot_of.empty());
      continue;
    }
    CHECK(v.role == graph::Role::Optimizer);
    if (v.slot_of.empty()) {
      ++counters;  // the iteration count, the learning rate
      CHECK(v.type.shape == Shape{});
      continue;
    }
    ++slots;
    CHECK(v.type.shape == (v.slot_of == "a/kernel" ? Shape{8, 16} : Shape{16, 4}));
  }
  CHECK(slots == 4);  // Adam's momentum and velocity of each kernel
  CHECK(counters == 2);
  int updates = 0;
  for (int i = 0; i < lg.g.size(); ++i) {
    const graph::Node& n = lg.g.node(i);
    if (n.op == "adam_update") {
      ++updates;
      CHECK(n.role == graph::Role::Optimizer);
    }
    if (n.scope == "loss") CHECK(n.role == graph::Role::Loss);
    if (n.scope == "a" || n.scope == "b") CHECK(n.role == graph::Role::Layer);
  }
  CHECK(updates == 2);
}

// A node nothing reads (a gradient rule's leftover, such as the cast a widened weight gradient
// bypasses) must not be lowered: one that needs a partial gradient whole would sum it over the
// devices ahead of its bucket, and the bucket would then sum it again.
TEST_CASE("lowering: an unread reader of a gradient is not lowered, and the gradient is summed once") {
  const int64_t rows = 8;
  auto w = std::make_shared<tandem::Variable>("dense/kernel", tandem::Tensor::from({4, 3}, std::span<const double>(random_values(12, 1))), true);
  graph::Graph g;
  const graph::Value kernel = g.variable({w->id(), w->path(), w->value().type(), true});
  const graph::Value x = g.placeholder("x", {Shape{rows, 4}, DType::F64});
  const graph::Value y = g.placeholder("y", {Shape{rows}, DType::I32});
  const graph::Value loss = ops::scale(g, sum_all(g, ops::cross_entropy(g, ops::matmul(g, x, kernel), y, true, true)), 1.0 / rows);
  const auto grads = tandem::autodiff::gradients(g, loss, {kernel});
  ops::relu(g, grads[0]);  // needs the gradient whole; nothing reads it
  tandem::optimizers::SGD(0.1)->emit_updates(g, {w}, grads);
  const compile::Plan plan = lower_with(tandem::distribute::Mirrored(cpus(2)), g, {loss});
  for (const compile::Program& p : plan.programs) {
    std::map<std::string, int> ops_seen;
    for (int i = 0; i < p.graph.size(); ++i) ++ops_seen[p.graph.node(i).op];
    CHECK(ops_seen["relu"] == 0);
    CHECK(ops_seen["all_reduce_start"] == 1);  // the bucket, and no sum of its own for the unread reader
  }
}

namespace {
// One SGD step of a two-layer network on `rows` rows, as the graph of one of `micro_batches`
// micro-batches: its loss is scaled by the whole batch and its gradients summed over the
// micro-batches (what the model builds).
struct MicroBatchedStep {
  graph::Graph g;
  std::vector<graph::Value> fetches;
  std::vector<VariablePtr> vars;
  MicroBatchedStep(int64_t rows, int micro_batches) {
    const int64_t micro = rows / micro_batches;
    auto w1 = std::make_shared<tandem::Variable>("d1/kernel", tandem::Tensor::from({4, 16}, std::span<const double>(random_values(64, 1))), true);
    auto w2 = std::make_shared<tandem::Variable>("d2/kernel", tandem::Tensor::from({16, 2}, std::span<const double>(random_values(32, 2))), true);
    auto sgd = tandem::optimizers::SGD(0.1);
    auto read = [&](const VariablePtr& v) { return g.variable({v->id(), v->path(), v->value().type(), true}); };
    auto summed = [&](graph::Value v) { return micro_batches > 1 ? ops::micro_sum(g, v) : v; };
    const graph::Value x = g.placeholder("x", {Shape{micro, 4}, DType::F64});
    const graph::Value y = g.placeholder("y", {Shape{micro, 2}, DType::F64});
    const graph::Value out = ops::matmul(g, ops::tanh(g, ops::matmul(g, x, read(w1))), read(w2));
    const graph::Value diff = ops::sub(g, out, y);
    const graph::Value loss = ops::scale(g, sum_all(g, ops::mul(g, diff, diff)), 1.0 / static_cast<double>(rows));
    fetches = {summed(loss)};
    std::vector<graph::Value> grads = tandem::autodiff::gradients(g, loss, {read(w1), read(w2)});
    {
      graph::ScopeGuard phase(g, graph::Phase::Backward);
      for (graph::Value& grad : grads) grad = summed(grad);
    }
    sgd->emit_updates(g, {w1, w2}, grads);
    vars = {w1, w2};
    for (const VariablePtr& v : sgd->variables()) vars.push_back(v);
  }
};
}  // namespace

TEST_CASE("lowering: a step of 4 micro-batches equals one on the whole batch, and each micro-batch in flight costs one slot of arena") {
  const int64_t rows = 32;
  const std::vector<double> x = random_values(4 * rows, 3), y = random_values(2 * rows, 4);
  auto run = [&](int micro_batches, int in_flight, std::size_t* arena, std::size_t* slot) {
    MicroBatchedStep s(rows, micro_batches);
    compile::LoweringOptions o{.devices = {"cpu:0"}, .micro_batches = micro_batches};
    o.in_flight = [in_flight](int) { return in_flight; };
    Lowered l(s.g, s.fetches, o, s.vars);
    l.feed("x", x, rows);
    l.feed("y", y, rows);
    l.exe->run();
    const double loss = l.fetch(0, 1)[0];
    l.homes.to_host(s.vars);
    if (arena) *arena = l.exe->arena_bytes(0);
    if (slot) *slot = l.plan->programs[0].memory.slot_bytes;
    return std::make_tuple(loss, s.vars[0]->value().clone(), s.vars[1]->value().clone());
  };
  const auto [loss, w1, w2] = run(1, 1, nullptr, nullptr);
  std::size_t arena1 = 0, arena4 = 0, slot1 = 0, slot4 = 0;
  for (int in_flight : {1, 4}) {
    INFO(in_flight << " micro-batches in flight");
    const auto [micro_loss, micro_w1, micro_w2] = run(4, in_flight, in_flight == 1 ? &arena1 : &arena4, in_flight == 1 ? &slot1 : &slot4);
    CHECK(micro_loss == doctest::Approx(loss).epsilon(1e-12));
    for (int64_t e = 0; e < w1.size(); ++e) CHECK(micro_w1.item(e) == doctest::Approx(w1.item(e)).epsilon(1e-12));
    for (int64_t e = 0; e < w2.size(); ++e) CHECK(micro_w2.item(e) == doctest::Approx(w2.item(e)).epsilon(1e-12));
  }
  // The slot holds what backward reads of forward (the activations, x): at least the 8-row
  // micro-batch's hidden layer, 8 × 16 float64.
  CHECK(slot1 == slot4);
  CHECK(slot1 >= 8 * 16 * sizeof(double));
  CHECK(arena4 == arena1 + 3 * slot1);
}

TEST_CASE("lowering: Default with micro_batches = 4 trains like Default on the whole batch, dropout masks included") {
  auto train = [](tandem::distribute::StrategyPtr strategy) {
    tandem::set_random_seed(5);
    namespace tl = tandem::layers;
    tandem::Sequential model({tl::InputLayer({12}), tl::Dense(32, "relu"), tl::Dropout(0.3), tl::Dense(4)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"},
                   .strategy = strategy});
    std::mt19937 gen(2);
    std::normal_distribution<float> normal;
    std::vector<float> xs(6 * 40 * 12);
    std::vector<int32_t> ys(6 * 40);
    for (float& v : xs) v = normal(gen);
    for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>(i % 4);
    // 240 rows in batches of 40 (4 micro-batches of 10) and a last one of 30 is not there: 240/40.
    const tandem::History h = model.fit(tandem::Tensor::from({240, 12}, std::span<const float>(xs)),
                                        tandem::Tensor::from({240}, std::span<const int32_t>(ys)),
                                        {.epochs = 2, .batch_size = 40, .verbose = 0});
    return std::make_pair(model.get_weights(), h.history.at("loss").back());
  };
  const auto [reference, reference_loss] = train(tandem::distribute::Default());
  const auto [micro, micro_loss] = train(tandem::distribute::Default("cpu:0", {.micro_batches = 4}));
  CHECK(micro_loss == doctest::Approx(reference_loss).epsilon(1e-5));
  for (std::size_t i = 0; i < reference.size(); ++i)
    for (int64_t e = 0; e < reference[i].size(); ++e) {
      INFO("weight " << i << " element " << e);
      CHECK(micro[i].item(e) == doctest::Approx(reference[i].item(e)).epsilon(1e-5).scale(1.0));
    }
}

// ModelSplit on virtual CPU devices. By placement: layers on 2 and 4 devices end five steps with
// Default's weights, each device holds only its layers' weights, automatic placement balances
// parameter bytes. By sharding: Dense kernels split by columns and rows, Megatron's MLP, the
// Transformer's heads; each device keeps its blocks of the weights and optimizer slots; files
// are the one logical file; bad layouts are errors. Dense layers with biases on a 2×2 mesh do a
// quarter of Default's matrix products per device (fusion runs after the last lowering).
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>

#include "compile/fusion.h"
#include "distribute/stages.h"
#include "layer_base/call_context.h"
#include "distribute/strategy.h"
#include "graph/op_registry.h"
#include "plan_helpers.h"
#include "strategy_helpers.h"
#include "lower_with.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
namespace graph = tandem::graph;
using tandem::Tensor;

namespace {
std::unique_ptr<tandem::Model> mlp() {
  return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({20}), tl::Dense(32, "relu", {.name = "a"}), tl::Dropout(0.25, "drop"), tl::Dense(32, "tanh", {.name = "b"}),
      tl::Dense(16, "relu", {.name = "c"}), tl::Dense(5, "", {.name = "d"})});
}

// Five training steps (batch 16, Adam) of `make()` under a strategy, from seed 3.
template <typename Make>
std::vector<Tensor> five_steps(Make make, dist::StrategyPtr strategy) {
  tandem::set_random_seed(3);
  auto model = make();
  model->compile({.optimizer = tandem::optimizers::Adam(1e-3), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}, .strategy = strategy});
  model->fit(blobs(80, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
  CHECK(model->optimizer()->iterations() == 5);
  return model->get_weights();
}

// The variables each program of a plan binds, by path.
std::vector<std::vector<std::string>> variables_per_program(const tandem::compile::Plan& plan) {
  std::vector<std::vector<std::string>> out;
  for (const auto& p : plan.programs) {
    out.emplace_back();
    for (const auto& v : p.graph.variables()) out.back().push_back(v.path);
  }
  return out;
}

int count_ops(const tandem::compile::Program& p, const std::string& op) {
  int n = 0;
  for (int id = 0; id < p.graph.size(); ++id) n += p.graph.node(id).op == op;
  return n;
}
}  // namespace

TEST_CASE("model split: layers placed on 2 and 4 devices, by name and automatically, end five steps with Default's weights") {
  const auto reference = five_steps(mlp, dist::Default());
  const std::vector<std::pair<std::string, dist::StrategyPtr>> strategies = {
      {"2 devices by name", dist::ModelSplit(cpus(2), {.placement = {{"b", "cpu:1"}}})},
      {"4 devices by name", dist::ModelSplit(cpus(4), {.placement = {{"a", "cpu:3"}, {"b", "cpu:0"}, {"c", "cpu:2"}, {"d", "cpu:1"}}})},
      {"2 devices automatically", dist::ModelSplit(cpus(2))},
      {"4 devices automatically", dist::ModelSplit(cpus(4))},
  };
  for (const auto& [name, strategy] : strategies) {
    INFO(name);
    CHECK(max_relative_difference(five_steps(mlp, strategy), reference) <= 1e-5);
  }
}

TEST_CASE("model split: each device holds its layers' weights and slots only, and activations cross by send/recv") {
  const LayeredGraph lg({{"a", 16}, {"b", 16}, {"c", 16}, {"d", 16}}, 8, 12, tandem::optimizers::SGD(0.1, {.momentum = 0.9}));
  const auto strategy = dist::ModelSplit(cpus(2), {.placement = {{"c", "cpu:1"}}});
  const auto plan = lower_with(strategy, lg.g, lg.fetches, 1);
  const auto vars = variables_per_program(plan);
  auto holds = [&](int p, const std::string& path) { return std::find(vars[p].begin(), vars[p].end(), path) != vars[p].end(); };
  for (const char* layer : {"a", "b"}) {
    CHECK(holds(0, std::string(layer) + "/kernel"));
    CHECK(holds(0, std::string("optimizer/") + layer + "/kernel/momentum"));
    CHECK_FALSE(holds(1, std::string(layer) + "/kernel"));
  }
  for (const char* layer : {"c", "d"}) {
    CHECK(holds(1, std::string(layer) + "/kernel"));
    CHECK(holds(1, std::string("optimizer/") + layer + "/kernel/momentum"));
    CHECK_FALSE(holds(0, std::string(layer) + "/kernel"));
  }
  // b's output forward, its gradient back: one send and one recv each way.
  CHECK(count_ops(plan.programs[0], "send") == 1);
  CHECK(count_ops(plan.programs[0], "recv") == 1);
  CHECK(count_ops(plan.programs[1], "send") == 1);
  CHECK(count_ops(plan.programs[1], "recv") == 1);
}

TEST_CASE("model split: automatic placement cuts where the parameter bytes balance") {
  // Kernels (12·16, 16·1024, 1024·16, 16·16, 16·16): the two wide ones hold almost everything, so
  // two devices take one each; the cut must minimise the larger device's bytes (checked against
  // every cut).
  const LayeredGraph lg({{"a", 16}, {"b", 1024}, {"c", 16}, {"d", 16}, {"e", 16}}, 8, 12);
  const auto bytes = dist::parameter_bytes(lg.g);
  REQUIRE(bytes.size() == 5);
  CHECK(bytes[1].cost == 16 * 1024 * 4);
  const auto plan = lower_with(dist::ModelSplit(cpus(2)), lg.g, lg.fetches, 1);
  const auto vars = variables_per_program(plan);
  std::size_t on_first = 0;
  for (const auto& l : bytes) on_first += std::count(vars[0].begin(), vars[0].end(), l.layer + "/kernel");
  double best = 1e300, chosen = 0;
  for (std::size_t cut = 1; cut < 5; ++cut) {
    double first = 0, second = 0;
    for (std::size_t i = 0; i < 5; ++i) (i < cut ? first : second) += bytes[i].cost;
    best = std::min(best, std::max(first, second));
    if (cut == on_first) chosen = std::max(first, second);
  }
  CHECK(on_first == 2);  // a, b | c, d, e
  CHECK(chosen == best);
}

TEST_CASE("model split: summary() lists each layer's device and parameter bytes") {
  tandem::set_random_seed(1);
  auto model = mlp();
  model->compile({.optimizer = "adam", .loss = "mse", .strategy = dist::ModelSplit(cpus(2), {.placement = {{"c", "cpu:1"}}})});
  const std::string text = model->summary_string();
  INFO(text);
  // Dense(20 → 32): (20·32 + 32)·4 bytes; Dense(32 → 32): 4224; Dense(32 → 16): 2112; Dense(16 → 5): 340.
  CHECK(placement_row(text, "ModelSplit:", "a").find("cpu:0") != std::string::npos);
  CHECK(placement_row(text, "ModelSplit:", "a").find("2688") != std::string::npos);
  CHECK(placement_row(text, "ModelSplit:", "drop").find("cpu:0") != std::string::npos);
  CHECK(placement_row(text, "ModelSplit:", "c").find("cpu:1") != std::string::npos);
  CHECK(placement_row(text, "ModelSplit:", "d").find("340") != std::string::npos);
  CHECK(text.find("cpu:0: 6912 parameter bytes") != std::string::npos);
  CHECK(text.find("cpu:1: 2452 parameter bytes") != std::string::npos);
}

TEST_CASE("model split: weights saved under a placement load under Default with the same predictions") {
  tandem::set_random_seed(4);
  auto model = mlp();
  model->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .strategy = dist::ModelSplit(cpus(2))});
  const auto data = blobs(32, 20, 5);
  model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0});
  const Tensor split = model->predict(data.x());
  const std::string path = "model_split_test.weights.h5";
  model->save_weights(path);
  auto other = mlp();
  other->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  other->load_weights(path);
  std::remove(path.c_str());
  const Tensor plain = other->predict(data.x());
  CHECK(max_relative_difference({plain}, {split}) <= 1e-6);
}

TEST_CASE("model split errors: an unknown layer or device, more devices than layers") {
  auto model = mlp();
  auto fit_under = [&](dist::StrategyPtr s) {
    model->compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = s});
    model->fit(blobs(16, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
  };
  CHECK_THROWS_WITH_AS(fit_under(dist::ModelSplit(cpus(2), {.placement = {{"dense_9", "cpu:1"}}})),
                       "ModelSplit: placement names layer 'dense_9', which is not a layer of the model; its layers are a, drop, b, c, d",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::ModelSplit(cpus(2), {.placement = {{"a", "cpu:5"}}}),
                       "ModelSplit: placement puts layer 'a' on 'cpu:5', which is not one of the strategy's devices (cpu:0, cpu:1)",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(fit_under(dist::ModelSplit(cpus(6))),
                       "ModelSplit: 6 devices for a model of 5 layers (a, drop, b, c, d); use at most 5 devices or name a placement",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::ModelSplit({"cpu:0", "cpu:0"}), "ModelSplit: device 'cpu:0' is listed twice", tandem::ValueError);
}

namespace {
// Megatron's MLP between two plain layers: "up" (20 → 32) can split by columns, "down" (32 → 16)
// by rows.
std::unique_ptr<tandem::Model> megatron_mlp() {
  return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({20}), tl::Dense(32, "gelu", {.name = "up"}), tl::Dense(16, "tanh", {.name = "down"}), tl::Dense(5, "", {.name = "out"})});
}

dist::DeviceMesh model_mesh(int k) { return {{k}, {"model"}, cpus(k)}; }

const dist::LayoutMap kColumns = {{"up/kernel", {"", "model"}}, {"up/bias", {"model"}}};
const dist::LayoutMap kRows = {{"down/kernel", {"model", ""}}};
const dist::LayoutMap kMegatron = {{"up/kernel", {"", "model"}}, {"up/bias", {"model"}}, {"down/kernel", {"model", ""}}};

// The bytes of the variables (weights and slots) each program of a plan binds.
std::vector<std::size_t> variable_bytes(const tandem::compile::Plan& plan) {
  std::vector<std::size_t> out;
  for (const auto& p : plan.programs) {
    out.push_back(0);
    for (const auto& v : p.graph.variables()) out.back() += v.type.bytes();
  }
  return out;
}
}  // namespace

TEST_CASE("model split sharding: Dense split by columns, by rows and as Megatron's MLP over 2 and 4 devices ends five steps with Default's weights") {
  const auto reference = five_steps(megatron_mlp, dist::Default());
  for (int k : {2, 4})
    for (const auto& [name, map] : std::vector<std::pair<std::string, dist::LayoutMap>>{{"columns", kColumns}, {"rows", kRows}, {"megatron", kMegatron}}) {
      INFO(name << " over " << k);
      CHECK(max_relative_difference(five_steps(megatron_mlp, dist::ModelSplit(model_mesh(k), map)), reference) <= 1e-5);
    }
}

TEST_CASE("model split sharding: Megatron's MLP needs no communication between its two layers and one all-reduce after them") {
  // Forward only (no loss gradient): x·W1 by columns, the activation on each device's columns,
  // then ·W2 by rows gives partial sums; the bias add of "down" needs them summed: one all-reduce.
  graph::Graph g;
  const graph::Value x = g.placeholder("x", {tandem::Shape{8, 20}, tandem::DType::F32});
  auto weight = [&](const std::string& path, tandem::Shape shape) {
    static int id = 1000;
    return g.variable({++id, path, {shape, tandem::DType::F32}, true});
  };
  graph::Value h = tandem::ops::gelu(g, tandem::ops::bias_add(g, tandem::ops::matmul(g, x, weight("up/kernel", {20, 32})), weight("up/bias", {32})));
  graph::Value y = tandem::ops::bias_add(g, tandem::ops::matmul(g, h, weight("down/kernel", {32, 16})), weight("down/bias", {16}));
  const auto plan = lower_with(dist::ModelSplit(model_mesh(2), kMegatron), g, {y}, 1);
  for (const auto& p : plan.programs) {
    CHECK(count_ops(p, "all_reduce_start") == 1);
    CHECK(count_ops(p, "all_gather") == 0);
    CHECK(count_ops(p, "send") == 0);
  }
  // Each device's blocks: W1 (20, 16), b1 (16), W2 (16, 16), b2 whole.
  std::map<std::string, tandem::Shape> shapes;
  for (const auto& v : plan.programs[1].graph.variables()) shapes[v.path] = v.type.shape;
  CHECK(shapes["up/kernel"] == tandem::Shape{20, 16});
  CHECK(shapes["up/bias"] == tandem::Shape{16});
  CHECK(shapes["down/kernel"] == tandem::Shape{16, 16});
  CHECK(shapes["down/bias"] == tandem::Shape{16});
}

TEST_CASE("model split sharding: a 4-way split keeps a quarter of the weight and optimizer bytes and of the hidden activations per device") {
  // Kernels a (12 → 256) by columns and b (256 → 12) by rows, Adam (two slots per kernel): every
  // device holds a quarter of each kernel and of its slots; only the two scalars (iterations,
  // learning rate) are whole.
  const LayeredGraph lg({{"a", 256}, {"b", 12}}, 32, 12, tandem::optimizers::Adam(1e-3));
  const dist::LayoutMap map = {{"a/kernel", {"", "model"}}, {"b/kernel", {"model", ""}}};
  const auto whole = variable_bytes(lower_with(dist::Default(), lg.g, lg.fetches, 1))[0];
  const std::size_t kernels = 3 * (12 * 256 + 256 * 12) * 4, scalars = whole - kernels;
  CHECK(scalars <= 16);
  const auto plan = lower_with(dist::ModelSplit(model_mesh(4), map), lg.g, lg.fetches, 1);
  for (std::size_t bytes : variable_bytes(plan)) CHECK(bytes == kernels / 4 + scalars);
  // The hidden activation (32, 256) lies on each device as its (32, 64) block: every value of
  // that width in device 0's graph is 64 wide.
  int hidden = 0;
  const auto& local = plan.programs[0].graph;
  for (int id = 0; id < local.size(); ++id)
    for (const auto& t : local.node(id).outputs) {
      CHECK(t.shape.str() != "(32, 256)");
      hidden += t.shape.str() == "(32, 64)";
    }
  CHECK(hidden >= 2);  // x·W1 and its tanh, at least
  const auto default_arena = lower_with(dist::Default(), lg.g, lg.fetches, 1).programs[0].memory.arena_bytes;
  MESSAGE("arena bytes per device: Default " << default_arena << ", 4-way split " << plan.programs[0].memory.arena_bytes);
  CHECK(plan.programs[0].memory.arena_bytes < default_arena);
}

TEST_CASE("model split sharding: the Transformer example's model with attention split by heads and the feed-forward Megatron's way over 2 devices trains like Default") {
  const dist::LayoutMap map = {
      {"attn_\\d/(query|key|value)/kernel", {"", "model", ""}},  // (D, heads, size): by heads
      {"attn_\\d/(query|key|value)/bias", {"model", ""}},
      {"attn_\\d/attention_output/kernel", {"model", "", ""}},   // (heads, size, D): by heads
      {"up_\\d/kernel", {"", "model"}},
      {"up_\\d/bias", {"model"}},
      {"down_\\d/kernel", {"model", ""}},
  };
  const auto reference = train_transformer(dist::Default());
  // Floor 1e-3: attention's key bias has a zero gradient, so it stays at rounding noise.
  CHECK(max_relative_difference(train_transformer(dist::ModelSplit(model_mesh(2), map)), reference, 1e-3) <= 1e-5);
}

TEST_CASE("model split sharding: attention split by heads communicates once, after the output projection") {
  // Self-attention (2 heads of 8) on x (4, 6, 16) and a training step of it under SGD: with
  // q, k, v split by heads, each device attends with its own head; the output projection's
  // product over heads is a partial sum, summed once before its bias. Backward needs nothing:
  // the heads' gradients stay on their devices (x is an input, so its gradient is not made).
  auto layer = tl::MultiHeadAttention(2, 8, {.name = "attn"});
  layer->build_for({{6, 16}, {6, 16}});
  graph::Graph g;
  tandem::CallContext ctx(g, false, tandem::ops::fill(g, {tandem::Shape{}, tandem::DType::I64}, 0));
  const graph::Value x = g.placeholder("x", {tandem::Shape{4, 6, 16}, tandem::DType::F32});
  graph::Value y;
  {
    graph::ScopeGuard scope(g, "attn");
    y = layer->emit(ctx, {x, x});
  }
  const graph::Value loss = tandem::ops::reduce_sum(g, tandem::ops::mul(g, y, y), {0, 1, 2});
  std::vector<graph::Value> wrt;
  for (const auto& w : layer->weights()) wrt.push_back(ctx.variable(*w));
  tandem::optimizers::SGD(0.1)->emit_updates(g, layer->weights(), tandem::autodiff::gradients(g, loss, wrt));
  const dist::LayoutMap map = {{"(query|key|value)/kernel", {"", "model", ""}},
                               {"(query|key|value)/bias", {"model", ""}},
                               {"attention_output/kernel", {"model", "", ""}}};
  const auto plan = lower_with(dist::ModelSplit(model_mesh(2), map), g, {loss}, 1);
  for (const auto& p : plan.programs) {
    CHECK(count_ops(p, "all_reduce_start") == 1);
    CHECK(count_ops(p, "all_gather") == 0);
    CHECK(count_ops(p, "reduce_scatter") == 0);
    int blocks = 0;
    for (const auto& v : p.graph.variables())
      if (v.path == "attn/query/kernel" || v.path == "attn/value/kernel") blocks += v.type.shape == tandem::Shape{16, 1, 8};
    CHECK(blocks == 2);
  }
}

TEST_CASE("model split sharding: summary() shows each weight's layout and bytes per device") {
  auto model = megatron_mlp();
  model->compile({.optimizer = "adam", .loss = "mse", .strategy = dist::ModelSplit(model_mesh(4), kMegatron)});
  const std::string text = model->summary_string();
  INFO(text);
  const std::string title = "ModelSplit: mesh {4} (model)";
  // up/kernel (20, 32) by columns: 20·8·4 bytes on each device; down/kernel (32, 16) by rows:
  // 8·16·4; out/kernel (16, 5) whole: 320.
  CHECK(placement_row(text, title, "up/kernel").find("(None, \"model\")") != std::string::npos);
  CHECK(placement_row(text, title, "up/kernel").find("640") != std::string::npos);
  CHECK(placement_row(text, title, "up/bias").find("32") != std::string::npos);
  CHECK(placement_row(text, title, "down/kernel").find("(\"model\", None)") != std::string::npos);
  CHECK(placement_row(text, title, "down/kernel").find("512") != std::string::npos);
  CHECK(placement_row(text, title, "out/kernel").find("whole") != std::string::npos);
  CHECK(placement_row(text, title, "out/kernel").find("320") != std::string::npos);
  // Whole: (640 + 32 + 512 + 16 + 80 + 5)·4 = 5140 bytes; per device 640 + 32 + 512 + 64 + 320 + 20 = 1588.
  CHECK(text.find("Each device holds 1588 of the 5140 weight bytes (30.9%)") != std::string::npos);
}

TEST_CASE("model split sharding: a checkpoint saved under a 2×2 mesh loads under Default with the same predictions, and the reverse") {
  const auto data = blobs(32, 20, 5);
  auto trained = [&](dist::StrategyPtr s) {
    tandem::set_random_seed(6);
    auto model = megatron_mlp();
    model->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = s});
    model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0});
    return model;
  };
  const std::string path = "model_split_mesh_test.weights.h5";
  const dist::DeviceMesh mesh{{2, 2}, {"batch", "model"}, cpus(4)};
  for (bool split_first : {true, false}) {
    INFO((split_first ? "2×2 mesh -> Default" : "Default -> 2×2 mesh"));
    auto from = trained(split_first ? dist::ModelSplit(mesh, kMegatron) : dist::Default());
    const Tensor before = from->predict(data.x());
    from->save_weights(path);
    auto to = megatron_mlp();
    to->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .strategy = split_first ? dist::Default() : dist::ModelSplit(mesh, kMegatron)});
    to->load_weights(path);
    CHECK(max_relative_difference({to->predict(data.x())}, {before}) <= 1e-6);
    CHECK(max_relative_difference(to->get_weights(), from->get_weights()) == 0);
  }
  std::remove(path.c_str());
  // The whole model (weights, optimizer slots, training state) saved under the mesh: load_model
  // rebuilds it on one device with the same predictions and the same slots.
  auto split = trained(dist::ModelSplit(mesh, kMegatron));
  const std::string model_path = "model_split_mesh_test.h5";
  split->save(model_path);
  auto loaded = tandem::load_model(model_path);
  std::remove(model_path.c_str());
  CHECK(max_relative_difference({loaded->predict(data.x())}, {split->predict(data.x())}) <= 1e-6);
  std::vector<Tensor> slots_saved, slots_loaded;
  for (const auto& v : split->optimizer()->variables()) slots_saved.push_back(v->value());
  for (const auto& v : loaded->optimizer()->variables()) slots_loaded.push_back(v->value());
  REQUIRE(slots_loaded.size() == slots_saved.size());
  CHECK(max_relative_difference(slots_loaded, slots_saved) == 0);
}

TEST_CASE("model split sharding errors: a layout that does not divide, an unknown mesh axis, a mesh larger than its devices, an unmatched expression warns") {
  auto fit_under = [](dist::StrategyPtr s) {
    auto model = megatron_mlp();
    model->compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = s});
    model->fit(blobs(16, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
  };
  CHECK_THROWS_WITH_AS(fit_under(dist::ModelSplit(model_mesh(3), kColumns)),
                       "ModelSplit: the layout (None, \"model\") of weight 'up/kernel' (shape (20, 32)) splits axis 1 of 32 over the 3 devices "
                       "of mesh axis 'model', which does not divide it",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::ModelSplit(model_mesh(2), {{"up/kernel", {"", "heads"}}}),
                       "ModelSplit: layout_map['up/kernel'] = (None, \"heads\") names mesh axis 'heads'; the mesh's axes are model",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::ModelSplit(dist::DeviceMesh{{2, 2}, {"batch", "model"}, cpus(3)}, kColumns),
                       "ModelSplit: a mesh of shape {2, 2} needs 4 devices, got 3", tandem::ValueError);
  CHECK_THROWS_WITH_AS(fit_under(dist::ModelSplit(model_mesh(2), {{"up/kernel", {"model"}}})),
                       "ModelSplit: layout_map['up/kernel'] = (\"model\",) gives 1 axes to weight 'up/kernel' of shape (20, 32); it needs 2",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::ModelSplit(model_mesh(2), {{"up/(kernel", {"", "model"}}}), doctest::Contains("is not a regular expression"),
                       tandem::ValueError);
  // An expression that matches nothing: Keras warns and goes on; so does ModelSplit, naming the weights.
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  fit_under(dist::ModelSplit(model_mesh(2), {{"upp/kernel", {"", "model"}}}));
  std::cerr.rdbuf(old);
  CHECK(captured.str() ==
        "ModelSplit: warning: layout_map['upp/kernel'] matches no weight; the weights are up/kernel, up/bias, down/kernel, down/bias, "
        "out/kernel, out/bias\n");
}

TEST_CASE("model split sharding: an Embedding split by vocabulary looks up each id on the device holding its row and trains like Default") {
  const int64_t V = 16, T = 5, rows = 80;
  std::mt19937_64 gen(8);
  std::uniform_int_distribution<int32_t> tok(0, V - 1);
  std::vector<int32_t> ids(static_cast<std::size_t>(rows * T)), labels(static_cast<std::size_t>(rows));
  for (int32_t& i : ids) i = tok(gen);
  for (int64_t r = 0; r < rows; ++r) labels[static_cast<std::size_t>(r)] = ids[static_cast<std::size_t>(r * T)] % 3;
  auto train = [&](dist::StrategyPtr strategy) {
    tandem::set_random_seed(2);
    auto in = tandem::Input({T}, tandem::DType::I32);
    tandem::Model model(in, tl::Dense(3, "", {.name = "out"})(tl::Flatten()(tl::Embedding(V, 8, {.name = "tokens"})(in))));
    model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .strategy = strategy});
    model.fit(Tensor::from({rows, T}, std::span<const int32_t>(ids)), Tensor::from({rows}, std::span<const int32_t>(labels)),
              {.epochs = 1, .batch_size = 16, .verbose = 0});
    return model.get_weights();
  };
  const auto reference = train(dist::Default());
  for (int k : {2, 4}) {
    INFO(k << " devices");
    CHECK(max_relative_difference(train(dist::ModelSplit(model_mesh(k), {{"tokens/embeddings", {"model", ""}}})), reference) <= 1e-5);
  }
}

TEST_CASE("model split sharding: a 2×2 mesh (batch × model) splits each batch over the rows and the weights within them, and trains like Default") {
  const auto reference = five_steps(megatron_mlp, dist::Default());
  for (const auto& axes : std::vector<std::vector<std::string>>{{"batch", "model"}, {"model", "batch"}}) {
    INFO(axes[0] << " × " << axes[1]);
    const dist::DeviceMesh mesh{{2, 2}, axes, cpus(4)};
    CHECK(max_relative_difference(five_steps(megatron_mlp, dist::ModelSplit(mesh, kMegatron)), reference) <= 1e-5);
  }
  // The Transformer's heads and feed-forward too.
  const dist::LayoutMap map = {{"attn_\\d/(query|key|value)/kernel", {"", "model", ""}}, {"attn_\\d/(query|key|value)/bias", {"model", ""}},
                               {"attn_\\d/attention_output/kernel", {"model", "", ""}}, {"up_\\d/kernel", {"", "model"}},
                               {"up_\\d/bias", {"model"}},                                {"down_\\d/kernel", {"model", ""}}};
  CHECK(max_relative_difference(train_transformer(dist::ModelSplit(dist::DeviceMesh{{2, 2}, {"batch", "model"}, cpus(4)}, map)),
                                train_transformer(dist::Default()), 1e-3) <= 1e-5);
}

TEST_CASE("model split sharding: a 2×2×2 mesh (batch × model × inner) and weights split over the batch axis train like Default") {
  const auto reference = five_steps(megatron_mlp, dist::Default());
  // Each kernel cut over two axes (up's units over "model", its inputs over "inner"; down the
  // other way round), each batch over "batch": every value has three layout entries.
  const dist::LayoutMap three = {{"up/kernel", {"inner", "model"}}, {"up/bias", {"model"}}, {"down/kernel", {"model", "inner"}},
                                 {"down/bias", {"inner"}}};
  for (const auto& axes : std::vector<std::vector<std::string>>{{"batch", "model", "inner"}, {"model", "inner", "batch"}}) {
    INFO(axes[0] << " × " << axes[1] << " × " << axes[2]);
    const dist::DeviceMesh mesh{{2, 2, 2}, axes, cpus(8)};
    CHECK(max_relative_difference(five_steps(megatron_mlp, dist::ModelSplit(mesh, three)), reference) <= 1e-5);
  }
  // Weights split over the batch axis (as FSDP holds them): gathered where they are read, their
  // gradients' partial sums reduce-scattered into each device's block, both in one bucket.
  const dist::DeviceMesh batch_model{{2, 2}, {"batch", "model"}, cpus(4)};
  auto recording = std::make_shared<Recording>(dist::ModelSplit(batch_model, {{"up/kernel", {"batch", "model"}}, {"out/kernel", {"batch", ""}}}));
  CHECK(max_relative_difference(five_steps(megatron_mlp, recording), reference) <= 1e-5);
  const tandem::compile::Plan plan = recording->plan(0);
  for (const auto& p : plan.programs) {
    INFO(p.device);
    CHECK(count_ops_run(p, "reduce_scatter") == 1);
  }
}

TEST_CASE("model split sharding: under a 2×2 mesh each device all-reduces its weight blocks' gradients with its column and its MLP's sums with its row") {
  const LayeredGraph lg({{"a", 32}, {"b", 12}}, 8, 12);
  const dist::LayoutMap map = {{"a/kernel", {"", "model"}}, {"b/kernel", {"model", ""}}};
  const auto plan = lower_with(dist::ModelSplit(dist::DeviceMesh{{2, 2}, {"batch", "model"}, cpus(4)}, map), lg.g, lg.fetches, 1);
  REQUIRE(plan.programs.size() == 4);
  for (int d = 0; d < 4; ++d) {
    const int i = d / 2, j = d % 2;
    std::set<std::vector<int>> groups;
    const auto& p = plan.programs[static_cast<std::size_t>(d)];
    for (int id = 0; id < p.graph.size(); ++id)
      if (p.graph.node(id).op == "all_reduce_start") groups.insert(p.graph.node(id).communication->group);
    INFO("device " << d);
    CHECK(groups.count({j, 2 + j}) == 1);          // the column: the same blocks, the other half of the batch
    CHECK(groups.count({2 * i, 2 * i + 1}) == 1);  // the row: the two blocks of the MLP
    CHECK(groups.size() == 2);
    CHECK(p.feeds.at("x").offset == 4 * i);
    CHECK(p.feeds.at("x").rows == 4);
    for (const auto& v : p.graph.variables())
      if (v.path == "a/kernel") CHECK(v.type.shape == tandem::Shape{12, 16});
  }
}

namespace {
// Two Dense layers with biases, the first split by columns and the second by rows (Megatron's
// pattern): fusion turns the first into a fused_matmul (bias and relu in the product).
std::unique_ptr<tandem::Model> biased_mlp() {
  return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({20}), tl::Dense(64, "relu", {.name = "dense"}), tl::Dense(5, "", {.name = "dense_1"})});
}
const dist::LayoutMap kBiasedMegatron = {{"dense/kernel", {"", "model"}}, {"dense/bias", {"model"}}, {"dense_1/kernel", {"model", ""}}};

// The bytes a program all-reduces.
std::size_t all_reduced_bytes(const tandem::compile::Program& p) {
  std::size_t bytes = 0;
  for (int id = 0; id < p.graph.size(); ++id)
    if (p.graph.node(id).op == "all_reduce_start")
      for (graph::Value v : p.graph.node(id).inputs) bytes += p.graph.type(v).bytes();
  return bytes;
}
}  // namespace

TEST_CASE("model split sharding: Dense layers with biases on a 2×2 mesh (batch × model) do a quarter of Default's matrix products on each device, gather no weight, and train like Default") {
  // Default's training step on a batch of 16: dense (20 → 64) forward and kernel gradient,
  // dense_1 (64 → 5) forward, input gradient and kernel gradient (no gradient of the input x).
  const int64_t B = 16, whole = 2 * (2 * B * 20 * 64) + 3 * (2 * B * 64 * 5);
  auto run = [](dist::StrategyPtr s) {
    auto recording = std::make_shared<Recording>(std::move(s));
    const auto weights = five_steps(biased_mlp, recording);
    REQUIRE(recording->graphs.size() == 1);  // the training step, lowered once
    return std::pair{weights, recording->plan(0)};
  };
  const auto [reference, default_plan] = run(dist::Default());
  REQUIRE(default_plan.programs.size() == 1);
  CHECK(product_flops(default_plan.programs[0]) == whole);
  const bool fusion = tandem::compile::fusion_enabled();  // not under TANDEM_FUSION=0
  CHECK(count_ops_run(default_plan.programs[0], "fused_matmul") >= fusion);

  for (const auto& [name, mesh] : std::vector<std::pair<std::string, dist::DeviceMesh>>{
           {"2×2 (batch × model)", {{2, 2}, {"batch", "model"}, cpus(4)}}, {"1×4 (batch × model)", {{1, 4}, {"batch", "model"}, cpus(4)}}}) {
    INFO(name);
    const auto [weights, plan] = run(dist::ModelSplit(mesh, kBiasedMegatron));
    CHECK(max_relative_difference(weights, reference) <= 1e-5);
    REQUIRE(plan.programs.size() == 4);
    const bool rows = mesh.shape[0] == 2;
    MESSAGE(name << ", each device: " << product_flops(plan.programs[0]) << " matrix-product FLOPs (Default " << whole << "), "
                 << all_reduced_bytes(plan.programs[0]) << " bytes all-reduced");
    for (const auto& p : plan.programs) {
      INFO(p.device);
      CHECK(product_flops(p) == whole / 4);
      CHECK_FALSE(gathers_a_weight(p));
      CHECK(count_ops_run(p, "fused_matmul") >= fusion);  // fusion still runs, once, on the final programs
      if (rows) {
        // Within the row: dense_1's partial sums (8, 5). Within the column: the gradients of this
        // device's halves, dense (20, 32) + (32) and dense_1 (32, 5), and dense_1's bias (5), over
        // the batch's halves.
        CHECK(all_reduced_bytes(p) == 4 * (8 * 5 + 20 * 32 + 32 + 32 * 5 + 5));
      } else {
        CHECK(count_ops(p, "all_reduce_start") == 1);  // dense_1's partial sums (16, 5), nothing else
        CHECK(all_reduced_bytes(p) == 4 * 16 * 5);
      }
    }
  }
}

// Pipeline on virtual CPU devices: every stage count, micro-batch count and schedule ends with
// Default's weights; 1F1B holds at most S − s micro-batches on stage s; automatic cuts balance
// the estimated costs; a file saved under Pipeline loads under Default; bad arguments are errors.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "autodiff/autodiff.h"
#include "distribute/stages.h"
#include "distribute/strategy.h"
#include "strategy_helpers.h"
#include "ops/ops.h"
#include "lower_with.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
namespace graph = tandem::graph;
namespace ops = tandem::ops;
using tandem::Tensor;

namespace {
// Weights apart relative to each tensor's largest value, at least 1e-3: attention's key bias has
// a zero gradient, so it stays at rounding noise (1e-9) in either strategy.
double weights_apart(const std::vector<Tensor>& a, const std::vector<Tensor>& b) { return max_relative_difference(a, b, 1e-3); }

enum class Net { Mlp, Named, Cnn, Skip, Deep };

std::unique_ptr<tandem::Model> make(Net net) {
  if (net == Net::Mlp)
    return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
        tl::InputLayer({20}), tl::Dense(32, "relu"), tl::Dropout(0.25), tl::Dense(32, "tanh"), tl::Dense(16, "relu"), tl::Dense(5)});
  if (net == Net::Named)  // the MLP with its layers named as a first model's are, for layout maps
    return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
        tl::InputLayer({20}), tl::Dense(32, "relu", {.name = "dense"}), tl::Dropout(0.25, "dropout"),
        tl::Dense(32, "tanh", {.name = "dense_1"}), tl::Dense(16, "relu", {.name = "dense_2"}), tl::Dense(5, "", {.name = "dense_3"})});
  if (net == Net::Deep) {  // eight layers: four stages of two chunks each
    std::vector<tandem::LayerRef> layers{tl::InputLayer({20})};
    for (int i = 0; i < 7; ++i) layers.push_back(tl::Dense(24, i % 2 ? "tanh" : "relu"));
    layers.push_back(tl::Dense(5));
    return std::make_unique<tandem::Sequential>(layers);
  }
  if (net == Net::Cnn)
    return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
        tl::InputLayer({100}), tl::Reshape({10, 10, 1}), tl::Conv2D(6, 3, {.activation = "relu"}), tl::MaxPooling2D(2),
        tl::Conv2D(8, 3, {.padding = "same", .activation = "relu"}), tl::Flatten(), tl::Dense(5)});
  // A skip connection from the first stage's output to the last stage.
  auto x = tandem::Input({20});
  auto a = tl::Dense(16, "relu")(x);
  auto b = tl::Dense(16, "tanh")(a);
  auto c = tl::Dense(16, "relu")(b);
  auto out = tl::Dense(5)(tl::Add()({a, c}));
  return std::make_unique<tandem::Model>(x, out);
}

// Five training steps (batch 16) under a strategy, from seed 3.
std::vector<Tensor> five_steps(Net net, dist::StrategyPtr strategy) {
  tandem::set_random_seed(3);
  auto model = make(net);
  // The eight-layer net trains with SGD: there Adam turns the micro-batches' other summation
  // order into 5e-5 (Default with 8 micro-batches differs from Default as much).
  model->compile({.optimizer = net == Net::Deep ? tandem::optimizers::SGD(0.1, {.momentum = 0.9}) : tandem::optimizers::Adam(1e-3),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"},
                  .strategy = strategy});
  const int64_t features = net == Net::Cnn ? 100 : 20;
  model->fit(blobs(80, features, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
  CHECK(model->optimizer()->iterations() == 5);
  return model->get_weights();
}

}  // namespace

TEST_CASE("pipeline: 2 and 4 stages, 1 to 8 micro-batches, GPipe and 1F1B end five steps with Default's weights") {
  for (Net net : {Net::Mlp, Net::Cnn}) {
    const std::vector<Tensor> reference = five_steps(net, dist::Default());
    for (int stages : {2, 4})
      for (int64_t micro : {1, 2, 4, 8})
        for (auto schedule : {dist::PipelineSchedule::GPipe, dist::PipelineSchedule::OneFOneB}) {
          INFO((net == Net::Mlp ? "MLP" : "CNN") << ", " << stages << " stages, " << micro << " micro-batches, "
                                                  << (schedule == dist::PipelineSchedule::GPipe ? "GPipe" : "1F1B"));
          const auto weights = five_steps(net, dist::Pipeline(cpus(stages), {.micro_batches = micro, .schedule = schedule}));
          CHECK(weights_apart(weights, reference) <= 1e-5);
        }
  }
}

TEST_CASE("pipeline: the interleaved schedule, 2 chunks per device on 2 and 4 devices, ends five steps with Default's weights") {
  struct Case {
    Net net;
    int stages;
    int64_t micro;
  };
  for (const Case& c : {Case{Net::Mlp, 2, 2}, Case{Net::Mlp, 2, 4}, Case{Net::Mlp, 2, 8}, Case{Net::Cnn, 2, 4}, Case{Net::Deep, 4, 4},
                        Case{Net::Deep, 4, 8}}) {
    INFO(static_cast<int>(c.net) << ", " << c.stages << " stages, " << c.micro << " micro-batches");
    const std::vector<Tensor> reference = five_steps(c.net, dist::Default());
    const auto weights = five_steps(
        c.net, dist::Pipeline(cpus(c.stages), {.virtual_stages = 2, .micro_batches = c.micro, .schedule = dist::PipelineSchedule::Interleaved}));
    CHECK(weights_apart(weights, reference) <= 1e-5);
  }
  // Device 0 of 2 with chunks 0 and 2, 4 micro-batches: Megatron's order, (S − 1)·2 + (v − 1)·S
  // = 4 forwards first.
  const LayeredGraph lg({{"a", 16}, {"b", 16}, {"c", 16}, {"d", 16}}, 8, 8);
  const tandem::compile::Plan plan = lower_with(dist::Pipeline(cpus(2), {.virtual_stages = 2, .micro_batches = 4,
                                                              .schedule = dist::PipelineSchedule::Interleaved}), lg.g, lg.fetches, 4);
  std::string order;
  const auto& p0 = plan.programs[0];
  for (const auto& a : plan.schedule[0]) {
    const auto& block = p0.blocks[static_cast<std::size_t>(a.block)];
    if (block.phase != graph::Phase::Forward && block.phase != graph::Phase::Backward) continue;
    if (p0.blocks[static_cast<std::size_t>(a.block)].nodes.size() < 2) continue;  // a block of variable reads only
    order += block.phase == graph::Phase::Forward ? 'F' : 'B';
    order += std::to_string(block.stage) + ":" + std::to_string(a.micro_batch) + " ";
  }
  CHECK(order == "F0:0 F0:1 F2:0 F2:1 F0:2 B2:0 F0:3 B2:1 F2:2 B0:0 F2:3 B0:1 B2:2 B2:3 B0:2 B0:3 ");
}

TEST_CASE("pipeline: 2 stages × 2 replicas split each micro-batch's rows and all-reduce each stage's gradients within its replicas") {
  for (Net net : {Net::Mlp, Net::Cnn}) {
    const std::vector<Tensor> reference = five_steps(net, dist::Default());
    for (int64_t micro : {1, 2, 4})
      for (auto schedule : {dist::PipelineSchedule::GPipe, dist::PipelineSchedule::OneFOneB}) {
        INFO((net == Net::Mlp ? "MLP" : "CNN") << ", " << micro << " micro-batches, " << (schedule == dist::PipelineSchedule::GPipe ? "GPipe" : "1F1B"));
        const auto weights = five_steps(net, dist::Pipeline(cpus(4), {.micro_batches = micro, .schedule = schedule, .replicas = 2}));
        CHECK(weights_apart(weights, reference) <= 1e-5);
      }
  }
}

TEST_CASE("pipeline: under 2 stages × 2 replicas each replica sends to its counterpart and all-reduces with its stage's other replica") {
  const LayeredGraph lg({{"a", 16}, {"b", 16}}, 8, 8);
  const tandem::compile::Plan plan = lower_with(dist::Pipeline(cpus(4), {.replicas = 2}), lg.g, lg.fetches, 1);
  for (int d = 0; d < 4; ++d) {
    INFO("device " << d);
    const graph::Graph& g = plan.programs[static_cast<std::size_t>(d)].graph;
    std::vector<int> peers, group;
    for (int i = 0; i < g.size(); ++i) {
      if (g.node(i).op == "send") peers.push_back(g.node(i).communication->peer);
      if (g.node(i).op == "all_reduce_start") group = g.node(i).communication->group;
      CHECK(g.node(i).op != "all_gather");  // each replica computes on its own rows
    }
    CHECK(peers == std::vector<int>{d < 2 ? d + 2 : d - 2});  // activations forward or their gradients back
    CHECK(group == (d < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3}));
  }
  CHECK(plan.fetches[0].programs == std::vector<int>{2, 3});  // the loss: partial sums on the last stage
}

TEST_CASE("pipeline: stages split over model-split devices (data × pipeline × model on 4 and 8 devices) end five steps with Default's weights") {
  // Megatron's pair in each stage: a column-split Dense, then a row-split one.
  const dist::LayoutMap megatron{{"dense/kernel", {"", "model"}},   {"dense/bias", {"model"}},
                                 {"dense_1/kernel", {"model", ""}}, {"dense_2/kernel", {"", "model"}},
                                 {"dense_2/bias", {"model"}},       {"dense_3/kernel", {"model", ""}}};
  const std::vector<Tensor> reference = five_steps(Net::Named, dist::Default());
  for (int64_t replicas : {1, 2})
    for (int64_t micro : {2, 4})
      for (auto schedule : {dist::PipelineSchedule::GPipe, dist::PipelineSchedule::OneFOneB}) {
        INFO(replicas << " replicas, " << micro << " micro-batches, " << (schedule == dist::PipelineSchedule::GPipe ? "GPipe" : "1F1B"));
        const dist::PipelineOptions o{.boundaries = {"dense_2"}, .micro_batches = micro, .schedule = schedule, .replicas = replicas,
                                      .model_split = 2, .layout_map = megatron};
        const auto weights = five_steps(Net::Named, dist::Pipeline(cpus(static_cast<int>(4 * replicas)), o));
        CHECK(weights_apart(weights, reference) <= 1e-5);
      }
  // Each device of the first stage holds half of dense's kernel columns, none of dense_2's.
  const LayeredGraph lg({{"dense", 16}, {"dense_1", 16}, {"dense_2", 16}, {"dense_3", 16}}, 8, 8);
  const tandem::compile::Plan plan =
      lower_with(dist::Pipeline(cpus(4), {.boundaries = {"dense_2"}, .model_split = 2, .layout_map = megatron}), lg.g, lg.fetches, 1);
  REQUIRE(plan.programs.size() == 4);
  for (int d = 0; d < 4; ++d) {
    INFO("device " << d);
    int kernels = 0;
    for (const auto& [id, shard] : plan.programs[static_cast<std::size_t>(d)].shards) {
      const auto& vars = lg.g.variables();
      const auto& v = *std::find_if(vars.begin(), vars.end(), [id](const graph::VariableInfo& info) { return info.id == id; });
      ++kernels;
      CHECK(v.path.starts_with(d < 2 ? "dense/" : "dense_2/") != v.path.starts_with(d < 2 ? "dense_1/" : "dense_3/"));
      REQUIRE(shard.cuts.size() == 1);  // one axis of the kernel, over the stage's 2 devices
      const auto& cut = shard.cuts[0];
      CHECK(cut.extent * 2 == v.type.shape[cut.axis]);
      CHECK(cut.offset == (d % 2) * cut.extent);
    }
    CHECK(kernels == 2);  // its stage's two kernels
  }
}

TEST_CASE("pipeline: the Transformer example's model (residual connections across stages, attention dropout) trains like Default") {
  auto train = [](dist::StrategyPtr strategy) { return train_transformer(strategy); };
  const std::vector<Tensor> reference = train(dist::Default());
  for (int stages : {2, 4})
    for (int64_t micro : {1, 4})
      for (auto schedule : {dist::PipelineSchedule::GPipe, dist::PipelineSchedule::OneFOneB}) {
        INFO(stages << " stages, " << micro << " micro-batches, " << (schedule == dist::PipelineSchedule::GPipe ? "GPipe" : "1F1B"));
        CHECK(weights_apart(train(dist::Pipeline(cpus(stages), {.micro_batches = micro, .schedule = schedule})), reference) <= 1e-5);
      }
}

TEST_CASE("pipeline: a skip connection from the first stage to the last travels by send/recv and trains like Default") {
  const std::vector<Tensor> reference = five_steps(Net::Skip, dist::Default());
  for (int64_t micro : {1, 4}) {
    INFO(micro << " micro-batches");
    // Stages: dense (the skip's source) | dense_1 | dense_2, add, dense_3.
    const auto weights = five_steps(Net::Skip, dist::Pipeline(cpus(3), {.micro_batches = micro}));
    CHECK(weights_apart(weights, reference) <= 1e-5);
  }
}

TEST_CASE("pipeline: 1F1B holds at most S − s micro-batches on stage s and GPipe all M, which differ by whole activation slots") {
  const LayeredGraph lg({{"a", 64}, {"b", 64}, {"c", 64}, {"d", 8}}, 16, 32);
  const int micro = 8, stages = 4;
  const tandem::compile::Plan gpipe = lower_with(dist::Pipeline(cpus(stages), {.micro_batches = micro, .schedule = dist::PipelineSchedule::GPipe}), lg.g, lg.fetches, micro);
  const tandem::compile::Plan one_f_one_b = lower_with(dist::Pipeline(cpus(stages), {.micro_batches = micro}), lg.g, lg.fetches, micro);
  for (int s = 0; s < stages; ++s) {
    INFO("stage " << s);
    const auto& gm = gpipe.programs[static_cast<std::size_t>(s)].memory;
    const auto& fm = one_f_one_b.programs[static_cast<std::size_t>(s)].memory;
    CHECK(gm.in_flight == micro);
    CHECK(fm.in_flight == stages - s);
    CHECK(fm.slot_bytes == gm.slot_bytes);
    CHECK(fm.slot_bytes > 0);
    CHECK(gm.arena_bytes - fm.arena_bytes == static_cast<std::size_t>(micro - (stages - s)) * gm.slot_bytes);
    MESSAGE("stage " << s << ": activation slots GPipe " << micro << " × " << gm.slot_bytes << " B, 1F1B " << fm.in_flight
                     << " × " << fm.slot_bytes << " B; arena " << gm.arena_bytes << " vs " << fm.arena_bytes << " B");
  }
  // 1F1B's order on the first stage: 3 warm-up forwards, then forward and backward in turn.
  std::string order;
  const auto& p0 = one_f_one_b.programs[0];
  for (const auto& a : one_f_one_b.schedule[0]) {
    const auto phase = p0.blocks[static_cast<std::size_t>(a.block)].phase;
    if (phase != graph::Phase::Forward && phase != graph::Phase::Backward) continue;
    order += phase == graph::Phase::Forward ? 'F' : 'B';
    order += std::to_string(a.micro_batch);
  }
  CHECK(order == "F0F1F2F3B0F4B1F5B2F6B3F7B4B5B6B7");
}

TEST_CASE("pipeline: automatic stages cut where the estimated costs balance, around one wide layer") {
  // Per row: a 32·16, b 16·1024 (wide), c 1024·16 (wide), d 16·16, e 16·16. Two stages balance
  // at b | c; three put the two wide layers on stages of their own.
  const LayeredGraph lg({{"a", 16}, {"b", 1024}, {"c", 16}, {"d", 16}, {"e", 16}}, 8, 32);
  const auto costs = dist::layer_costs(lg.g);
  REQUIRE(costs.size() == 5);
  CHECK(costs[1].cost > 20 * costs[0].cost);
  auto two = dist::assign_stages(lg.g, {}, 2);
  CHECK(two["a"] == 0);
  CHECK(two["b"] == 0);
  CHECK(two["c"] == 1);
  CHECK(two["e"] == 1);
  // Three: each wide layer on a stage of its own, and no other cut has a smaller largest stage
  // (checked against every cut).
  auto three = dist::assign_stages(lg.g, {}, 3);
  CHECK(three["b"] != three["c"]);
  auto largest = [&](std::size_t i, std::size_t j) {  // stages [0, i), [i, j), [j, 5)
    double s0 = 0, s1 = 0, s2 = 0;
    for (std::size_t k = 0; k < 5; ++k) (k < i ? s0 : k < j ? s1 : s2) += costs[k].cost;
    return std::max({s0, s1, s2});
  };
  double best = 1e300;
  for (std::size_t i = 1; i < 4; ++i)
    for (std::size_t j = i + 1; j < 5; ++j) best = std::min(best, largest(i, j));
  std::size_t first1 = 0, first2 = 0;
  for (std::size_t k = 0; k < 5; ++k) {
    if (three[costs[k].layer] == 0) first1 = k + 1;
    if (three[costs[k].layer] <= 1) first2 = k + 1;
  }
  CHECK(largest(first1, first2) == best);
  auto named = dist::assign_stages(lg.g, {"d"}, 2);
  CHECK(named["c"] == 0);
  CHECK(named["d"] == 1);
}

namespace {
// The busiest device's cost when chunk k of `firsts` runs on device k mod `devices`.
double busiest_device(const std::vector<dist::LayerCost>& costs, const std::vector<std::size_t>& firsts, int devices) {
  std::vector<double> load(static_cast<std::size_t>(devices), 0);
  for (std::size_t k = 0; k < firsts.size(); ++k) {
    const std::size_t end = k + 1 < firsts.size() ? firsts[k + 1] : costs.size();
    for (std::size_t i = firsts[k]; i < end; ++i) load[k % static_cast<std::size_t>(devices)] += costs[i].cost;
  }
  return *std::max_element(load.begin(), load.end());
}

// The least busiest-device cost over every cut of the layers into `chunks` contiguous chunks.
double exhaustive_busiest(const std::vector<dist::LayerCost>& costs, int chunks, int devices) {
  double best = 1e300;
  std::vector<std::size_t> firsts{0};
  const std::function<void()> extend = [&] {
    if (static_cast<int>(firsts.size()) == chunks) {
      best = std::min(best, busiest_device(costs, firsts, devices));
      return;
    }
    const std::size_t left = static_cast<std::size_t>(chunks) - firsts.size();
    for (std::size_t i = firsts.back() + 1; i + left <= costs.size(); ++i) {
      firsts.push_back(i);
      extend();
      firsts.pop_back();
    }
  };
  extend();
  return best;
}
}  // namespace

// A device of the interleaved schedule runs several chunks, so balancing the chunks is not
// balancing the devices: for costs 1, 1000, 1, 1, 1000 over 2 devices × 2 chunks the least largest
// chunk (1 | 1000 | 1, 1 | 1000) leaves device 0 with 0.1% of the work.
TEST_CASE("pipeline: the interleaved schedule's automatic cut balances the devices, not the chunks") {
  auto layers = [](const std::vector<double>& c) {
    std::vector<dist::LayerCost> costs;
    for (std::size_t i = 0; i < c.size(); ++i) costs.push_back({std::string("l").append(std::to_string(i)), c[i]});
    return costs;
  };
  const auto skewed = layers({1, 1000, 1, 1, 1000});
  CHECK(busiest_device(skewed, dist::balanced_cuts(skewed, 4), 2) == 2000);  // the chunks' balance
  CHECK(busiest_device(skewed, dist::interleaved_cuts(skewed, 4, 2), 2) == 1002);
  // Against every cut, on costs that make many cuts tie on the largest chunk, up to 16 layers.
  std::mt19937 gen(5);
  const std::vector<double> sizes{1, 1, 5, 50, 100, 1000};
  int exact = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int devices = 2 + static_cast<int>(gen() % 3), chunks = devices * (2 + static_cast<int>(gen() % 2));
    std::vector<double> c(static_cast<std::size_t>(chunks) + gen() % 5);
    for (double& x : c) x = sizes[gen() % sizes.size()];
    const auto costs = layers(c);
    CAPTURE(trial);
    const double found = busiest_device(costs, dist::interleaved_cuts(costs, chunks, devices), devices);
    const double best = exhaustive_busiest(costs, chunks, devices);
    CHECK(found <= best * 1.01);  // a beam search: the optimum, or within 1% of it
    exact += found == best;
  }
  CHECK(exact >= 190);
}

// A layer that emits no node (a linear Activation) is listed by summary(), so it can start a stage.
TEST_CASE("pipeline: a layer without nodes, a linear Activation, can be a boundary, and trains like Default") {
  auto make_model = [] {
    tandem::set_random_seed(4);
    return std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
        tl::InputLayer({20}), tl::Dense(16, "relu", {.name = "first"}), tl::Activation("linear", "identity"), tl::Dense(16, "tanh"), tl::Dense(5)});
  };
  auto train = [&](dist::StrategyPtr strategy) {
    auto model = make_model();
    model->compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .strategy = strategy});
    model->fit(blobs(64, 20, 5), {.epochs = 1, .batch_size = 16, .verbose = 0});
    return model->get_weights();
  };
  const std::vector<Tensor> reference = train(dist::Default());
  CHECK(weights_apart(train(dist::Pipeline(cpus(2), {.boundaries = {"identity"}, .micro_batches = 2})), reference) <= 1e-5);
  auto model = make_model();
  model->compile({.optimizer = "sgd", .loss = "mse", .strategy = dist::Pipeline(cpus(2), {.boundaries = {"identity"}})});
  const std::string text = model->summary_string();
  INFO(text);
  CHECK(placement_row(text, "Pipeline:", "identity").find("│ 1 ") != std::string::npos);
  CHECK(placement_row(text, "Pipeline:", "first").find("│ 0 ") != std::string::npos);
}

TEST_CASE("pipeline: summary() lists each layer's stage, devices and cost share, each stage's share and the bubble") {
  // Four Dense layers of equal cost and a 2·2 pipeline: the cut falls in the middle, every layer
  // has a quarter of the cost, and 1F1B with M = 4 idles (S − 1)/(M + S − 1) = 1/5 of a step. (The
  // first layer computes no input gradient: its products are 2 of 24·16 where the others' are 3
  // of 16·16, the same work.)
  tandem::set_random_seed(1);
  tandem::Sequential model({tl::InputLayer({24}), tl::Dense(16, "tanh", {.name = "d1"}), tl::Dense(16, "tanh", {.name = "d2"}),
                            tl::Dense(16, "tanh", {.name = "d3"}), tl::Dense(16, "tanh", {.name = "d4"})});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  CHECK(model.summary_string().find("Stage") == std::string::npos);  // Default places nothing
  model.compile({.optimizer = "sgd", .loss = "mse",
                 .strategy = dist::Pipeline(cpus(4), {.micro_batches = 4, .replicas = 2})});
  const std::string text = model.summary_string();
  INFO(text);
  CHECK(text.find("Pipeline: 2 stages × 2 replicas, 1F1B") != std::string::npos);
  auto row_of = [](const std::string& text, const std::string& layer) { return placement_row(text, "Pipeline:", layer); };
  for (const char* layer : {"d1", "d2"}) {
    CHECK(row_of(text, layer).find("│ 0 ") != std::string::npos);
    CHECK(row_of(text, layer).find("cpu:0, cpu:1") != std::string::npos);
    CHECK(row_of(text, layer).find("25.0%") != std::string::npos);
  }
  for (const char* layer : {"d3", "d4"}) {
    CHECK(row_of(text, layer).find("│ 1 ") != std::string::npos);
    CHECK(row_of(text, layer).find("cpu:2, cpu:3") != std::string::npos);
    CHECK(row_of(text, layer).find("25.0%") != std::string::npos);
  }
  CHECK(text.find("Stage 0 on cpu:0, cpu:1: 50.0% of the estimated cost") != std::string::npos);
  CHECK(text.find("Stage 1 on cpu:2, cpu:3: 50.0% of the estimated cost") != std::string::npos);
  CHECK(text.find("idles 20.0% of each device's time") != std::string::npos);
  // Interleaved: chunk c on stage c mod 2, and the bubble shrinks to 1/(2·4 + 1).
  model.compile({.optimizer = "sgd", .loss = "mse",
                 .strategy = dist::Pipeline(cpus(2), {.virtual_stages = 2, .micro_batches = 4,
                                                      .schedule = dist::PipelineSchedule::Interleaved})});
  const std::string interleaved = model.summary_string();
  INFO(interleaved);
  CHECK(row_of(interleaved, "d2").find("│ 1 (1) ") != std::string::npos);
  CHECK(row_of(interleaved, "d3").find("│ 0 (2) ") != std::string::npos);
  CHECK(interleaved.find("idles 11.1% of each device's time") != std::string::npos);
  // Three layers of four on stage 0: a step lasts about stage 0's work, 3/4 of the total, stretched
  // by (M + S − 1)/M = 5/4; each device's share of its time is busy: 1 − (1/2)/(3/4)·(4/5) = 7/15.
  model.compile({.optimizer = "sgd", .loss = "mse", .strategy = dist::Pipeline(cpus(2), {.boundaries = {"d4"}, .micro_batches = 4})});
  const std::string uneven = model.summary_string();
  INFO(uneven);
  CHECK(uneven.find("idles 46.7% of each device's time (the bubble, 20.0%, and waiting for stage 0, the busiest)") != std::string::npos);
}

TEST_CASE("pipeline: weights saved under Pipeline load under Default and the reverse, with the same predictions") {
  tandem::set_random_seed(9);
  auto model = make(Net::Mlp);
  model->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .strategy = dist::Pipeline(cpus(2), {.micro_batches = 2})});
  const tandem::Dataset data = blobs(64, 20, 5);
  model->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0});
  const std::string path = "pipeline_weights_test.weights.h5";
  model->save_weights(path);
  const Tensor under_pipeline = model->predict(data.x(), {.batch_size = 16});

  auto plain = make(Net::Mlp);
  plain->compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  plain->load_weights(path);
  const Tensor under_default = plain->predict(data.x(), {.batch_size = 16});
  for (int64_t i = 0; i < under_default.size(); ++i) CHECK(under_default.item(i) == doctest::Approx(under_pipeline.item(i)).epsilon(1e-6));

  plain->fit(data, {.epochs = 1, .batch_size = 16, .verbose = 0});
  plain->save_weights(path);
  model->load_weights(path);
  const Tensor back = model->predict(data.x(), {.batch_size = 16});
  const Tensor expected = plain->predict(data.x(), {.batch_size = 16});
  for (int64_t i = 0; i < back.size(); ++i) CHECK(back.item(i) == doctest::Approx(expected.item(i)).epsilon(1e-6));
  std::remove(path.c_str());
}

TEST_CASE("pipeline: devices named by worker in a process started alone are its own, and lists naming other workers or mixing names are refused") {
  CHECK(dist::across_workers({"cpu:0", "cpu:1"}) == std::vector<std::string>{"cpu:0", "cpu:1"});  // started alone
  const std::vector<Tensor> reference = five_steps(Net::Mlp, dist::Default());
  CHECK(weights_apart(five_steps(Net::Mlp, dist::Pipeline({"worker:0/cpu:0", "worker:0/cpu:1"}, {.micro_batches = 2})), reference) <= 1e-5);
  CHECK_THROWS_WITH_AS(dist::Pipeline({"worker:0/cpu:0", "worker:1/cpu:0"}),
                       "Pipeline: device 'worker:1/cpu:0' is on worker 1, but this process is one of 1 worker", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Pipeline({"worker:0/cpu:0", "cpu:1"}),
                       "Pipeline: 1 of the 2 devices name their worker (\"worker:W/...\"), the others do not; name the worker of all or of none",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Pipeline({"worker:x/cpu:0", "cpu:1"}),
                       "Pipeline: device 'worker:x/cpu:0': expected \"worker:W/<device>\" with a worker number W", tandem::ValueError);
}

TEST_CASE("pipeline errors: stages and devices, layers, boundaries and micro-batches name the argument") {
  CHECK_THROWS_WITH_AS(dist::Pipeline(cpus(2), {.stages = 3}), "Pipeline: 3 stages × 1 replicas need 3 devices, got 2", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Pipeline(cpus(3), {.boundaries = {"dense_1"}}), "Pipeline: 2 stages × 1 replicas need 2 devices, got 3",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Pipeline(cpus(4), {.stages = 2, .replicas = 3}), "Pipeline: 2 stages × 3 replicas need 6 devices, got 4",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Pipeline(cpus(2), {.micro_batches = 0}), "Pipeline: micro_batches must be >= 1, got 0", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Pipeline(cpus(2), {.schedule = dist::PipelineSchedule::Interleaved}),
                       "Pipeline: the Interleaved schedule needs virtual_stages >= 2, got 1", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Pipeline(cpus(2), {.virtual_stages = 2, .micro_batches = 3, .schedule = dist::PipelineSchedule::Interleaved}),
                       "Pipeline: the Interleaved schedule needs micro_batches to be a multiple of the 2 stages, got 3", tandem::ValueError);
  auto fit = [](dist::StrategyPtr strategy, int64_t batch) {
    tandem::Sequential model({tl::InputLayer({4}), tl::Dense(8, "relu", {.name = "first"}), tl::Dense(2, "", {.name = "second"})});
    model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
    model.fit(blobs(32, 4, 2), {.batch_size = batch, .verbose = 0});
  };
  CHECK_THROWS_WITH_AS(fit(dist::Pipeline(cpus(3)), 8), "Pipeline: 3 stages for a model of 2 layers (first, second); use at most 2 stages",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(fit(dist::Pipeline(cpus(2), {.boundaries = {"third"}}), 8),
                       "Pipeline: boundary 'third' is not a layer of the model; its layers are first, second", tandem::ValueError);
  CHECK_THROWS_WITH_AS(fit(dist::Pipeline(cpus(2), {.micro_batches = 3}), 8),
                       "Pipeline: micro_batches = 3 does not divide the batch of 8 rows; choose a batch_size that is a multiple of it",
                       tandem::ValueError);
  fit(dist::Pipeline(cpus(2), {.boundaries = {"second"}, .micro_batches = 4}), 8);  // and a good one runs
}

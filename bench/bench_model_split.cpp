// ModelSplit on virtual CPU devices, on a wide Fashion-MNIST MLP (784 → 1024 → 256 → 10, batch
// 256): training throughput and planned memory per device under Default, layers placed on 2
// devices, Megatron's split of the two wide layers over 2 and 4 devices, and a 2×2 mesh. The
// devices share this machine's cores, so the split strategies cannot be faster here: the figures
// show what the communication and the smaller blocks cost, and how the planned activation
// memory (the arena of device 0's training step) falls. Weight and slot bytes per device are
// asserted in tests/test_model_split.cpp and listed by summary().
#include <tandem/tandem.h>

#include <cstdio>
#include <cstring>

#include "bench/throughput.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;

namespace {
std::unique_ptr<tandem::Sequential> mlp(dist::StrategyPtr strategy) {
  tandem::set_random_seed(0);
  auto model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(1024, "relu", {.name = "up"}), tl::Dense(256, "relu", {.name = "down"}),
      tl::Dense(10, "", {.name = "out"})});
  model->compile({.optimizer = tandem::optimizers::Adam(1e-3),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
  return model;
}

struct Result {
  double samples_per_second = 0;
  std::size_t arena = 0;
};

Result run(dist::StrategyPtr strategy, const tandem::Dataset& train, int64_t batch) {
  auto model = mlp(strategy);
  const double throughput = training_throughput(*model, train, batch, 10);
  return {throughput, model->planned_arena_bytes()};
}
}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  auto [train, test] = tandem::datasets::fashion_mnist();
  train = train.slice(0, quick ? 5120 : 20480);
  const dist::LayoutMap megatron = {{"up/kernel", {"", "model"}}, {"up/bias", {"model"}}, {"down/kernel", {"model", ""}}};
  auto mesh = [](std::vector<int64_t> shape, std::vector<std::string> axes, int k) {
    std::vector<std::string> devices;
    for (int i = 0; i < k; ++i) devices.push_back("cpu:" + std::to_string(i));
    return dist::DeviceMesh{std::move(shape), std::move(axes), devices};
  };
  struct Case {
    const char* name;
    dist::StrategyPtr strategy;
  };
  const std::vector<Case> cases = {
      {"Default (cpu:0, 2 threads)", dist::Default()},
      {"placement: down and out on cpu:1", dist::ModelSplit({"cpu:0", "cpu:1"}, {.placement = {{"down", "cpu:1"}}})},
      {"Megatron split over 2", dist::ModelSplit(mesh({2}, {"model"}, 2), megatron)},
      {"Megatron split over 4", dist::ModelSplit(mesh({4}, {"model"}, 4), megatron)},
      {"2×2 mesh (batch × model)", dist::ModelSplit(mesh({2, 2}, {"batch", "model"}, 4), megatron)},
  };
  std::printf("## ModelSplit, MLP 784-1024-256-10, batch 256, Adam, on this machine's cores\n\n");
  std::printf("| strategy | samples/s | ratio to Default | arena bytes, device 0 |\n|---|---:|---:|---:|\n");
  double single = 0;
  for (const Case& c : cases) {
    const Result r = run(c.strategy, train, 256);
    if (single == 0) single = r.samples_per_second;
    std::printf("| %s | %.0f | %.2f | %zu |\n", c.name, r.samples_per_second, r.samples_per_second / single, r.arena);
  }
}

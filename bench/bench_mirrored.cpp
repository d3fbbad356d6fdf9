// MirroredStrategy on virtual CPU devices, on the Fashion-MNIST MLP:
//  1. throughput of Mirrored over 2 devices against Default on the same two cores (batch 512);
//  2. what the communication options do: all-reduce bytes and the loss curve for plain, bfloat16
//     and sync-every-4 all-reduce (2 devices, batch 128, 3 epochs);
//  3. sharded weights (ShardLevel::Weights) against plain Mirrored on the same 2 devices: samples/s,
//     memory per device and bytes communicated per step (batch 512).
#include <tandem/tandem.h>

#include <cstdio>
#include <cstring>

#include "comm/communicator.h"
#include "bench/throughput.h"
#include "distribute/strategy.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;

namespace {
std::unique_ptr<tandem::Sequential> mlp(dist::StrategyPtr strategy) {
  tandem::set_random_seed(0);
  auto model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(256, "relu"), tl::Dense(256, "relu"), tl::Dense(10)});
  model->compile({.optimizer = tandem::optimizers::Adam(1e-3),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}, .strategy = strategy});
  return model;
}

double samples_per_second(dist::StrategyPtr strategy, const tandem::Dataset& train, int64_t batch) {
  auto model = mlp(strategy);
  return training_throughput(*model, train, batch, 20);
}
}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  auto [train, test] = tandem::datasets::fashion_mnist();
  if (quick) train = train.slice(0, 15360);

  std::printf("## Mirrored on 2 virtual CPU devices vs Default, MLP, batch 512\n\n| strategy | samples/s |\n|---|---|\n");
  const double single = samples_per_second(dist::Default(), train, 512);
  const double mirrored = samples_per_second(dist::Mirrored({"cpu:0", "cpu:1"}), train, 512);
  std::printf("| Default (cpu:0, 2 threads) | %.0f |\n| Mirrored (cpu:0, cpu:1; 1 thread each) | %.0f |\n\nratio Mirrored/Default: %.2f\n\n",
              single, mirrored, mirrored / single);

  std::printf("## Communication options, 2 devices, batch 128, 3 epochs\n\n");
  std::printf("| option | all-reduce MB per epoch | loss epoch 1 | loss epoch 2 | loss epoch 3 | test accuracy |\n|---|---|---|---|---|---|\n");
  struct Case {
    const char* name;
    dist::MirroredOptions options;
  };
  for (const Case& c : {Case{"float32 every step", {}}, Case{"bfloat16 every step", {.all_reduce_bf16 = true}},
                        Case{"float32 every 4 steps", {.sync_every = 4}}}) {
    auto strategy = dist::Mirrored({"cpu:0", "cpu:1"}, c.options);
    auto model = mlp(strategy);
    const auto h = model->fit(train, {.epochs = 3, .batch_size = 128, .verbose = 0});
    const double mb = double(strategy->communicator()->stats().bytes_moved) / 3 / (1 << 20);
    const auto& loss = h.history.at("loss");
    std::printf("| %s | %.1f | %.4f | %.4f | %.4f | %.4f |\n", c.name, mb, loss[0], loss[1], loss[2],
                model->evaluate(test, {.batch_size = 1000, .verbose = 0}).at("accuracy"));
  }

  std::printf("\n## Sharded weights against Mirrored, 2 devices, batch 512\n\n");
  std::printf("| option | samples/s | weights + optimizer state per device (bytes) | arena per device (bytes) | communicated per step (MB) |\n"
              "|---|---|---|---|---|\n");
  for (const dist::ShardLevel shard : {dist::ShardLevel::None, dist::ShardLevel::Weights}) {
    auto strategy = dist::Mirrored({"cpu:0", "cpu:1"}, {.shard = shard});
    auto model = mlp(strategy);
    const double rate = training_throughput(*model, train, 512, 20);
    const std::size_t before = strategy->communicator()->stats().bytes_moved;
    model->fit(train.slice(0, 10 * 512), {.batch_size = 512, .verbose = 0});
    const double mb = double(strategy->communicator()->stats().bytes_moved - before) / 10 / (1 << 20);
    const tandem::DeviceMemory m = model->memory_per_device().at(0);
    std::printf("| %s | %.0f | %zu | %zu | %.2f |\n", shard == dist::ShardLevel::None ? "Mirrored" : "ShardLevel::Weights", rate,
                m.weights + m.optimizer_state, m.arena, mb);
  }
}

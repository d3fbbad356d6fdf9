// Trains a multilayer perceptron on Fashion-MNIST and reports test accuracy.
#include <tandem/tandem.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace tl = tandem::layers;

// FNV-1a over every weight's bytes: the same seed on the same devices gives the same weights, bit
// for bit, so two runs print the same fingerprint.
uint64_t fingerprint(const std::vector<tandem::Tensor>& weights) {
  uint64_t h = 14695981039346656037ull;
  for (const tandem::Tensor& w : weights)
    for (std::size_t i = 0; i < w.bytes(); ++i) h = (h ^ static_cast<const unsigned char*>(w.raw())[i]) * 1099511628211ull;
  return h;
}

// The first argument, if any, names the device to train on: "gpu:0" on a machine with a GPU.
int main(int argc, char** argv) {
  const std::string device = argc > 1 ? argv[1] : "cpu:0";
  // The second, if any, is a dtype policy for the layers (docs/mixed-precision.md): "mixed_bfloat16".
  if (argc > 2) tandem::mixed_precision::set_global_policy(argv[2]);
  tandem::set_random_seed(42);
  auto [train, test] = tandem::datasets::fashion_mnist();

  tandem::Sequential model({tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(256, "relu"), tl::Dense(256, "relu"),
                            tl::Dense(10)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .strategy = tandem::distribute::Default(device)});
  model.summary();

  model.fit(train, {.epochs = 5, .batch_size = 128, .validation_data = test});
  const tandem::Logs result = model.evaluate(test, {.batch_size = 512, .verbose = 0});
  std::printf("test accuracy: %.4f  test loss: %.4f\n", result.at("accuracy"), result.at("loss"));
  std::printf("weights fingerprint: %016llx\n", static_cast<unsigned long long>(fingerprint(model.get_weights())));
  std::printf("planned arena for one training step: %.2f MB\n", double(model.planned_arena_bytes()) / (1 << 20));
  return 0;
}

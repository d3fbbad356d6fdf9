// Tandem side of the Fashion-MNIST training-throughput benchmark (samples/s).
//
// Mirrors bench/torch_fashion_mnist.py: for each batch size a fresh model is trained with Adam(1e-3)
// and cross-entropy on logits, no metrics. 20 warm-up steps run untimed, then the remaining full
// batches of one epoch (or the fraction of them given by --epochs-fraction) are timed. Since fit()
// is the public training API, the warm-up is one fit over exactly 20 batches of rows (it compiles
// and warms the training step for this batch size) and the timed part is one fit of 1 epoch over
// exactly the timed number of full batches, so no partial batch is ever compiled or run.
//
// --model cnn trains the script's CNN (no dropout): Reshape to (28, 28, 1), Conv2D(32, 3, relu),
// MaxPooling2D(2), Conv2D(64, 3, relu), MaxPooling2D(2), Flatten, Dense(128, relu), Dense(10).
//
// --device gpu:0 trains on a GPU (Default strategy on that device); the default is the CPU.
//
// --policy mixed_bfloat16 makes the layers under that dtype policy (docs/mixed-precision.md):
// bfloat16 compute, float32 weights. Without it the layers are float32 and the output is as before.
//
// --trace FILE writes the third timed step of the first batch size as a Chrome trace (every
// kernel with its time and dtype).
//
// Usage: bench_fashion_mnist [--model mlp|cnn] [--device cpu:0|gpu:N] [--batch-sizes 32,128,512] [--epochs-fraction F]
//                            [--policy float32|mixed_bfloat16] [--trace FILE] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <tandem/tandem.h>

namespace tl = tandem::layers;

namespace {

constexpr int64_t kEpochRows = 60000;
constexpr int64_t kWarmupSteps = 20;

struct Args {
  std::string model = "mlp";
  std::string device = "cpu:0";
  std::vector<int64_t> batch_sizes = {32, 128, 512};
  double epochs_fraction = 1.0;
  std::string policy;  // empty: not given (float32, and the output as before the option existed)
  std::string trace;
  bool json = false;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_fashion_mnist: %s\n", message.c_str());
  std::fprintf(stderr,
               "usage: bench_fashion_mnist [--model mlp|cnn] [--device cpu:0|gpu:N] [--batch-sizes 32,128,512] "
               "[--epochs-fraction F] [--policy float32|mixed_bfloat16] [--trace FILE] [--json]\n");
  std::exit(2);
}

std::vector<int64_t> parse_batch_sizes(const std::string& text) {
  std::vector<int64_t> sizes;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if (!item.empty()) {
      char* end = nullptr;
      const long long value = std::strtoll(item.c_str(), &end, 10);
      if (*end != '\0' || value <= 0) usage_error("bad batch sizes '" + text + "'");
      sizes.push_back(value);
    }
    pos = comma + 1;
  }
  if (sizes.empty()) usage_error("bad batch sizes '" + text + "'");
  return sizes;
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    bool has_value = false;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    auto take_value = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--json") {
      if (has_value) usage_error("--json takes no value");
      args.json = true;
    } else if (flag == "--model") {
      args.model = take_value();
    } else if (flag == "--device") {
      args.device = take_value();
    } else if (flag == "--policy") {
      args.policy = take_value();
    } else if (flag == "--trace") {
      args.trace = take_value();
    } else if (flag == "--batch-sizes") {
      args.batch_sizes = parse_batch_sizes(take_value());
    } else if (flag == "--epochs-fraction") {
      const std::string text = take_value();
      char* end = nullptr;
      args.epochs_fraction = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0') usage_error("bad --epochs-fraction '" + text + "'");
    } else if (flag == "-h" || flag == "--help") {
      usage_error("help requested");
    } else {
      usage_error("unknown argument '" + flag + "'");
    }
  }
  if (args.model != "mlp" && args.model != "cnn")
    usage_error("unsupported --model '" + args.model + "' (expected 'mlp' or 'cnn')");
  if (!(args.epochs_fraction > 0.0 && args.epochs_fraction <= 1.0))
    usage_error("--epochs-fraction must be in (0, 1]");
  return args;
}

std::vector<tandem::LayerRef> model_layers(const std::string& name) {
  if (name == "cnn") {
    // The PyTorch script's CNN: no dropout, "valid" convolutions.
    return {tl::InputLayer({28, 28}),
            tl::Reshape({28, 28, 1}),
            tl::Conv2D(32, 3, {.activation = "relu"}),
            tl::MaxPooling2D(2),
            tl::Conv2D(64, 3, {.activation = "relu"}),
            tl::MaxPooling2D(2),
            tl::Flatten(),
            tl::Dense(128, "relu"),
            tl::Dense(10)};
  }
  return {tl::InputLayer({28, 28}), tl::Flatten(), tl::Dense(256, "relu"), tl::Dense(256, "relu"), tl::Dense(10)};
}

std::unique_ptr<tandem::Sequential> build_model(const std::string& name, const std::string& device) {
  auto model = std::make_unique<tandem::Sequential>(model_layers(name));
  // No metrics: the PyTorch side computes only the loss.
  model->compile({.optimizer = tandem::optimizers::Adam(1e-3),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .strategy = tandem::distribute::Default(device)});
  return model;
}

struct Measurement {
  int64_t samples = 0;
  double seconds = 0.0;
  std::size_t arena_bytes = 0;  // planned for one training step
};

Measurement measure(const std::string& model_name, const std::string& device, const tandem::Dataset& train, int64_t batch,
                    double epochs_fraction, const std::string& trace) {
  const int64_t full_batches = train.size() / batch;  // the last partial batch is dropped
  if (full_batches <= kWarmupSteps)
    throw tandem::ValueError("batch " + std::to_string(batch) + ": only " + std::to_string(full_batches) +
                             " full batches, need more than " + std::to_string(kWarmupSteps) + " warm-up steps");
  int64_t timed_steps = static_cast<int64_t>(double(full_batches - kWarmupSteps) * epochs_fraction);
  timed_steps = std::max<int64_t>(1, std::min(timed_steps, full_batches - kWarmupSteps));

  // Slices are copies; make them before any timing starts.
  const int64_t warmup_rows = kWarmupSteps * batch;
  const int64_t timed_rows = timed_steps * batch;
  const tandem::Dataset warmup = train.slice(0, warmup_rows);
  const tandem::Dataset timed = train.slice(warmup_rows, warmup_rows + timed_rows);

  tandem::set_random_seed(0);
  auto model = build_model(model_name, device);

  model->fit(warmup, {.epochs = 1, .batch_size = batch, .shuffle = true, .verbose = 0});

  const auto t0 = std::chrono::steady_clock::now();
  model->fit(timed, {.epochs = 1, .batch_size = batch, .shuffle = true, .verbose = 0, .trace_path = trace, .trace_step = 2});
  const auto t1 = std::chrono::steady_clock::now();
  return {timed_rows, std::chrono::duration<double>(t1 - t0).count(), model->planned_arena_bytes()};
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  const unsigned threads = std::thread::hardware_concurrency();
  try {
    // Before any layer is made: layers take the global policy when they are constructed.
    if (!args.policy.empty()) tandem::mixed_precision::set_global_policy(args.policy);
    auto [train, test] = tandem::datasets::fashion_mnist();
    (void)test;
    if (train.size() > kEpochRows) train = train.slice(0, kEpochRows);

    for (std::size_t i = 0; i < args.batch_sizes.size(); ++i) {
      const int64_t batch = args.batch_sizes[i];
      const Measurement m = measure(args.model, args.device, train, batch, args.epochs_fraction, i == 0 ? args.trace : std::string());
      const double rate = double(m.samples) / m.seconds;
      if (args.json) {
        const std::string policy = args.policy.empty() ? "" : std::string(",\"policy\":\"").append(args.policy).append("\"");
        std::printf("{\"peer\":\"tandem\",\"model\":\"%s\",\"device\":\"%s\",\"batch\":%lld,\"threads\":%u,\"samples_per_s\":%.1f,"
                    "\"arena_mb\":%.2f%s}\n",
                    args.model.c_str(), args.device.c_str(), static_cast<long long>(batch), threads, rate, double(m.arena_bytes) / (1 << 20),
                    policy.c_str());
      } else {
        const std::string policy = args.policy.empty() ? "" : std::string(" policy=").append(args.policy);
        std::printf("tandem %s %s batch=%-4lld threads=%u%s %10.0f samples/s  (%lld samples in %.3f s)\n",
                    args.model.c_str(), args.device.c_str(), static_cast<long long>(batch), threads, policy.c_str(), rate,
                    static_cast<long long>(m.samples), m.seconds);
      }
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_fashion_mnist: %s\n", e.what());
    return 1;
  }
  return 0;
}

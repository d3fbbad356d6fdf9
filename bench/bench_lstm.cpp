// Tandem side of the LSTM training benchmark (samples/s), mirroring bench/torch_lstm.py: a
// character-level language model, Embedding(96, 64) → LSTM(256, return_sequences) → Dense(96),
// Adam(1e-3), sparse cross-entropy on logits, no metrics, on random tokens of a 96-symbol
// vocabulary in windows of 64. 10 warm-up steps run untimed, then --steps steps are timed.
//
// --trace FILE writes the third timed step as a Chrome trace (every kernel, by op and layer).
//
// Usage: bench_lstm [--units U] [--batch B] [--steps S] [--device cpu:0|gpu:N] [--trace FILE] [--json]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <tandem/tandem.h>

namespace tl = tandem::layers;

namespace {

constexpr int64_t kVocab = 96, kSeqLen = 64, kEmbedding = 64;
constexpr int64_t kWarmupSteps = 10;

struct Args {
  int64_t units = 256, batch = 64, steps = 20;
  std::string device = "cpu:0";
  std::string trace;
  bool json = false;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_lstm: %s\nusage: bench_lstm [--units U] [--batch B] [--steps S] [--device D] [--trace FILE] [--json]\n",
               message.c_str());
  std::exit(2);
}

int64_t positive(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v <= 0) usage_error(flag + " needs a positive integer, got '" + text + "'");
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--units") a.units = positive(flag, value());
    else if (flag == "--batch") a.batch = positive(flag, value());
    else if (flag == "--steps") a.steps = positive(flag, value());
    else if (flag == "--device") a.device = value();
    else if (flag == "--trace") a.trace = value();
    else if (flag == "--json") a.json = true;
    else usage_error("unknown argument '" + flag + "'");
  }
  return a;
}

// Random windows and their next-token targets (random too: the speed does not depend on them).
tandem::Dataset windows(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> token(0, kVocab - 1);
  std::vector<int32_t> x(static_cast<std::size_t>(rows * kSeqLen)), y(x.size());
  for (int32_t& v : x) v = token(gen);
  for (int32_t& v : y) v = token(gen);
  return {tandem::Tensor::from({rows, kSeqLen}, std::span<const int32_t>(x)), tandem::Tensor::from({rows, kSeqLen}, std::span<const int32_t>(y))};
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    tandem::set_random_seed(0);
    const tandem::Symbol tokens = tandem::Input({kSeqLen}, tandem::DType::I32, "tokens");
    const tandem::Symbol h = tl::LSTM(args.units, {.return_sequences = true})(tl::Embedding(kVocab, kEmbedding)(tokens));
    tandem::Model model(tokens, tl::Dense(kVocab)(h), "bench_lstm");
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .strategy = tandem::distribute::Default(args.device)});
    const tandem::Dataset warmup = windows(kWarmupSteps * args.batch, 1), timed = windows(args.steps * args.batch, 2);
    model.fit(warmup, {.epochs = 1, .batch_size = args.batch, .verbose = 0});
    const auto t0 = std::chrono::steady_clock::now();
    model.fit(timed, {.epochs = 1, .batch_size = args.batch, .verbose = 0, .trace_path = args.trace, .trace_step = 2});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = double(args.steps * args.batch) / seconds, step_ms = 1e3 * seconds / double(args.steps);
    if (args.json)
      std::printf("{\"peer\":\"tandem\",\"model\":\"lstm\",\"units\":%lld,\"device\":\"%s\",\"batch\":%lld,\"threads\":%u,"
                  "\"samples_per_s\":%.1f,\"step_ms\":%.2f}\n",
                  static_cast<long long>(args.units), args.device.c_str(), static_cast<long long>(args.batch),
                  std::thread::hardware_concurrency(), rate, step_ms);
    else
      std::printf("tandem lstm units=%lld batch=%lld %.0f samples/s, %.1f ms per step\n", static_cast<long long>(args.units),
                  static_cast<long long>(args.batch), rate, step_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_lstm: %s\n", e.what());
    return 1;
  }
  return 0;
}

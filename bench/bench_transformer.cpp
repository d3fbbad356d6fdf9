// Tandem side of the Transformer training benchmark (samples/s and memory), mirroring
// bench/torch_transformer.py: the model of examples/text_transformer.cpp (token embedding plus a
// learned position embedding, pre-norm decoder blocks of causal 4-head attention with d = 128 and
// a GELU feed-forward layer of 512, a final layer norm and the vocabulary head), Adam(1e-3),
// sparse cross-entropy on logits, no metrics, on random tokens of a 96-symbol vocabulary. 10
// warm-up steps run untimed, then --steps steps are timed.
//
// Besides samples/s it reports the planned arena of one training step (activations, gradients
// and temporaries; the weights and optimizer slots live beside it).
//
// --trace FILE writes the third timed step as a Chrome trace (every kernel, by op and layer).
//
// Usage: bench_transformer [--blocks N] [--batch B] [--steps S] [--device cpu:0|gpu:N] [--trace FILE] [--json]
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

constexpr int64_t kVocab = 96, kSeqLen = 64, kModelDim = 128, kHeads = 4, kKeyDim = 32, kHiddenDim = 512;
constexpr int64_t kWarmupSteps = 10;

struct Args {
  int blocks = 2;
  int64_t batch = 64, steps = 40;
  std::string device = "cpu:0";
  std::string trace;
  bool json = false;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "bench_transformer: %s\nusage: bench_transformer [--blocks N] [--batch B] [--steps S] [--device D] [--json]\n",
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
    if (flag == "--blocks") a.blocks = static_cast<int>(positive(flag, value()));
    else if (flag == "--batch") a.batch = positive(flag, value());
    else if (flag == "--steps") a.steps = positive(flag, value());
    else if (flag == "--device") a.device = value();
    else if (flag == "--trace") a.trace = value();
    else if (flag == "--json") a.json = true;
    else usage_error("unknown argument '" + flag + "'");
  }
  return a;
}

tandem::Symbol decoder_block(const tandem::Symbol& x) {
  const tandem::Symbol h = tl::LayerNormalization()(x);
  const tandem::Symbol attended = tl::MultiHeadAttention(kHeads, kKeyDim, {.use_causal_mask = true})({h, h});
  const tandem::Symbol x1 = tl::Add()({x, attended});
  const tandem::Symbol h1 = tl::LayerNormalization()(x1);
  return tl::Add()({x1, tl::Dense(kModelDim)(tl::Dense(kHiddenDim, "gelu")(h1))});
}

// Random windows and their next-token targets, as the example's next_char_windows makes them.
tandem::Dataset windows(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> token(0, kVocab - 1);
  std::vector<int32_t> x(static_cast<std::size_t>(rows * kSeqLen)), y(x.size());
  for (int32_t& v : x) v = token(gen);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = (i + 1) % kSeqLen ? x[i + 1] : token(gen);
  return {tandem::Tensor::from({rows, kSeqLen}, std::span<const int32_t>(x)), tandem::Tensor::from({rows, kSeqLen}, std::span<const int32_t>(y))};
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  try {
    tandem::set_random_seed(0);
    const tandem::Symbol tokens = tandem::Input({kSeqLen}, tandem::DType::I32, "tokens");
    tandem::Symbol x = tl::Embedding(kVocab, kModelDim)(tokens);
    x = tl::Add()({x, tl::PositionEmbedding(kSeqLen)(x)});
    for (int b = 0; b < args.blocks; ++b) x = decoder_block(x);
    tandem::Model model(tokens, tl::Dense(kVocab)(tl::LayerNormalization()(x)), "bench_transformer");
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .strategy = tandem::distribute::Default(args.device)});
    const tandem::Dataset warmup = windows(kWarmupSteps * args.batch, 1), timed = windows(args.steps * args.batch, 2);
    model.fit(warmup, {.epochs = 1, .batch_size = args.batch, .verbose = 0});
    const auto t0 = std::chrono::steady_clock::now();
    model.fit(timed, {.epochs = 1, .batch_size = args.batch, .verbose = 0, .trace_path = args.trace, .trace_step = 2});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = double(args.steps * args.batch) / seconds, step_ms = 1e3 * seconds / double(args.steps);
    const double arena_mb = double(model.planned_arena_bytes()) / (1 << 20);
    if (args.json)
      std::printf("{\"peer\":\"tandem\",\"model\":\"transformer\",\"blocks\":%d,\"device\":\"%s\",\"batch\":%lld,\"threads\":%u,"
                  "\"samples_per_s\":%.1f,\"step_ms\":%.2f,\"arena_mb\":%.2f}\n",
                  args.blocks, args.device.c_str(), static_cast<long long>(args.batch), std::thread::hardware_concurrency(), rate, step_ms,
                  arena_mb);
    else
      std::printf("tandem transformer blocks=%d batch=%lld %.0f samples/s, %.1f ms per step, planned arena %.1f MB\n", args.blocks,
                  static_cast<long long>(args.batch), rate, step_ms, arena_mb);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_transformer: %s\n", e.what());
    return 1;
  }
  return 0;
}

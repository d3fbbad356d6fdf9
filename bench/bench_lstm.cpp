// Tandem side of the LSTM training benchmark (samples/s), mirroring bench/torch_lstm.py: a
// character-level language model, Embedding(96, 64) → LSTM(256, return_sequences) → Dense(96),
// Adam(1e-3), sparse cross-entropy on logits, no metrics, on random tokens of a 96-symbol
// vocabulary in windows of 64 (bench/token_bench.h). 10 warm-up steps run untimed, then --steps
// steps are timed.
//
// --trace FILE writes the third timed step as a Chrome trace (every kernel, by op and layer).
//
// Usage: bench_lstm [--units U] [--batch B] [--steps S] [--device cpu:0|gpu:N] [--trace FILE] [--json]
#include <cstdio>
#include <thread>

#include "bench/token_bench.h"

namespace tl = tandem::layers;

namespace {
constexpr int64_t kSeqLen = 64, kEmbedding = 64, kWarmupSteps = 10;
constexpr int32_t kVocab = 96;
}  // namespace

int main(int argc, char** argv) {
  const TokenBenchArgs args = parse_token_bench_args(argc, argv, {.program = "bench_lstm", .size_flag = "--units", .size = 256, .steps = 20});
  try {
    tandem::set_random_seed(0);
    const tandem::Symbol tokens = tandem::Input({kSeqLen}, tandem::DType::I32, "tokens");
    const tandem::Symbol h = tl::LSTM(args.size, {.return_sequences = true})(tl::Embedding(kVocab, kEmbedding)(tokens));
    tandem::Model model(tokens, tl::Dense(kVocab)(h), "bench_lstm");
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .strategy = tandem::distribute::Default(args.device)});
    const TokenBenchTiming t = time_token_training(model, args, kSeqLen, kVocab, kWarmupSteps);
    if (args.json)
      std::printf("{\"peer\":\"tandem\",\"model\":\"lstm\",\"units\":%lld,\"device\":\"%s\",\"batch\":%lld,\"threads\":%u,"
                  "\"samples_per_s\":%.1f,\"step_ms\":%.2f}\n",
                  static_cast<long long>(args.size), args.device.c_str(), static_cast<long long>(args.batch),
                  std::thread::hardware_concurrency(), t.samples_per_s, t.step_ms);
    else
      std::printf("tandem lstm units=%lld batch=%lld %.0f samples/s, %.1f ms per step\n", static_cast<long long>(args.size),
                  static_cast<long long>(args.batch), t.samples_per_s, t.step_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_lstm: %s\n", e.what());
    return 1;
  }
  return 0;
}

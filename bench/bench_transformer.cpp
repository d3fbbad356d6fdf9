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
// --policy mixed_bfloat16 makes the layers under that dtype policy (bfloat16 compute, float32
// weights; docs/mixed-precision.md). Without it the layers are float32 and the output is as before.
//
// Usage: bench_transformer [--blocks N] [--batch B] [--steps S] [--device cpu:0|gpu:N] [--policy float32|mixed_bfloat16]
//                          [--trace FILE] [--json]
#include <cstdio>
#include <thread>

#include "bench/token_bench.h"

namespace tl = tandem::layers;

namespace {

constexpr int32_t kVocab = 96;
constexpr int64_t kSeqLen = 64, kModelDim = 128, kHeads = 4, kKeyDim = 32, kHiddenDim = 512;
constexpr int64_t kWarmupSteps = 10;

tandem::Symbol decoder_block(const tandem::Symbol& x) {
  const tandem::Symbol h = tl::LayerNormalization()(x);
  const tandem::Symbol attended = tl::MultiHeadAttention(kHeads, kKeyDim, {.use_causal_mask = true})({h, h});
  const tandem::Symbol x1 = tl::Add()({x, attended});
  const tandem::Symbol h1 = tl::LayerNormalization()(x1);
  return tl::Add()({x1, tl::Dense(kModelDim)(tl::Dense(kHiddenDim, "gelu")(h1))});
}

}  // namespace

int main(int argc, char** argv) {
  const TokenBenchArgs args = parse_token_bench_args(argc, argv, {.program = "bench_transformer", .size_flag = "--blocks", .size = 2});
  try {
    tandem::set_random_seed(0);
    const tandem::Symbol tokens = tandem::Input({kSeqLen}, tandem::DType::I32, "tokens");
    tandem::Symbol x = tl::Embedding(kVocab, kModelDim)(tokens);
    x = tl::Add()({x, tl::PositionEmbedding(kSeqLen)(x)});
    for (int64_t b = 0; b < args.size; ++b) x = decoder_block(x);
    tandem::Model model(tokens, tl::Dense(kVocab)(tl::LayerNormalization()(x)), "bench_transformer");
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .strategy = tandem::distribute::Default(args.device)});
    const TokenBenchTiming t = time_token_training(model, args, kSeqLen, kVocab, kWarmupSteps);
    const double rate = t.samples_per_s, step_ms = t.step_ms;
    const double arena_mb = double(model.planned_arena_bytes()) / (1 << 20);
    if (args.json)
      std::printf("{\"peer\":\"tandem\",\"model\":\"transformer\",\"blocks\":%lld,\"device\":\"%s\",\"batch\":%lld,\"threads\":%u,"
                  "\"samples_per_s\":%.1f,\"step_ms\":%.2f,\"arena_mb\":%.2f%s}\n",
                  static_cast<long long>(args.size), args.device.c_str(), static_cast<long long>(args.batch), std::thread::hardware_concurrency(), rate, step_ms,
                  arena_mb, args.policy.empty() ? "" : std::string(",\"policy\":\"").append(args.policy).append("\"").c_str());
    else
      std::printf("tandem transformer blocks=%lld batch=%lld%s %.0f samples/s, %.1f ms per step, planned arena %.1f MB\n", static_cast<long long>(args.size),
                  static_cast<long long>(args.batch), args.policy.empty() ? "" : std::string(" policy=").append(args.policy).c_str(), rate, step_ms,
                  arena_mb);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_transformer: %s\n", e.what());
    return 1;
  }
  return 0;
}

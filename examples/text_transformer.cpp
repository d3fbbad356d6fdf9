// Trains a small decoder-only Transformer as a character-level language model on the fortune
// cookies of the Debian package `fortunes`, then writes a sample with it.
#include <tandem/tandem.h>
#include <tandem/text.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace tl = tandem::layers;
namespace text = tandem::text;

namespace {

constexpr int64_t kSeqLen = 64;        // characters of context
constexpr int64_t kModelDim = 128;
constexpr int64_t kHeads = 4;
constexpr int64_t kKeyDim = 32;        // kHeads · kKeyDim = kModelDim
constexpr int64_t kHiddenDim = 512;    // the feed-forward layer, 4 · kModelDim
constexpr int kBlocks = 2;
constexpr int64_t kTrainWindows = 24000;  // sized for a few minutes on two cores
constexpr int64_t kValWindows = 2000;
constexpr int kEpochs = 4;

// One pre-norm decoder block: causal self-attention and a feed-forward layer, each added back to
// its input.
tandem::Symbol decoder_block(const tandem::Symbol& x) {
  const tandem::Symbol h = tl::LayerNormalization()(x);
  const tandem::Symbol attended = tl::MultiHeadAttention(kHeads, kKeyDim, {.use_causal_mask = true})({h, h});
  const tandem::Symbol x1 = tl::Add()({x, attended});
  const tandem::Symbol h1 = tl::LayerNormalization()(x1);
  const tandem::Symbol hidden = tl::Dense(kHiddenDim, "gelu")(h1);
  return tl::Add()({x1, tl::Dense(kModelDim)(hidden)});
}

// The stride that spreads `count` windows evenly over `ids`, so that every file contributes.
int64_t stride_for(const std::vector<int32_t>& ids, int64_t count) {
  return std::max<int64_t>(1, (static_cast<int64_t>(ids.size()) - kSeqLen - 1) / std::max<int64_t>(1, count - 1));
}

// Continues `prompt` by `length` characters, sampling each from the model's distribution for the
// last position at `temperature` (0: the most likely character). The context is the last kSeqLen
// characters, padded at the front with newlines while shorter.
std::string generate(tandem::Model& model, const text::Vocabulary& vocab, const std::string& prompt, int length,
                     double temperature, std::mt19937& rng) {
  std::vector<int32_t> ids = vocab.encode(prompt);
  const int32_t pad = vocab.id('\n');
  std::string out;
  for (int step = 0; step < length; ++step) {
    std::vector<int32_t> context(static_cast<std::size_t>(kSeqLen), pad);
    const std::size_t n = std::min(ids.size(), context.size());
    std::copy(ids.end() - static_cast<std::ptrdiff_t>(n), ids.end(), context.end() - static_cast<std::ptrdiff_t>(n));
    const tandem::Tensor logits = model.predict(tandem::Tensor::from({1, kSeqLen}, std::span<const int32_t>(context)));
    const std::span<const float> last = logits.values<float>().subspan(static_cast<std::size_t>((kSeqLen - 1) * vocab.size()));
    int32_t next = 0;
    if (temperature <= 0) {
      next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    } else {
      const float top = *std::max_element(last.begin(), last.end());
      std::vector<double> weights;
      for (const float z : last) weights.push_back(std::exp((z - top) / temperature));
      next = static_cast<int32_t>(std::discrete_distribution<int32_t>(weights.begin(), weights.end())(rng));
    }
    ids.push_back(next);
    out.push_back(vocab.character(next));
  }
  return out;
}

}  // namespace

// The argument, if any, is a dtype policy for the layers (docs/mixed-precision.md): "mixed_bfloat16".
int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  if (argc > 1) tandem::mixed_precision::set_global_policy(argv[1]);
  tandem::set_random_seed(42);

  const std::string corpus = text::plain_ascii(text::fortunes());
  const text::Vocabulary vocab(corpus);
  const std::vector<int32_t> ids = vocab.encode(corpus);
  const auto [train_ids, val_ids] = text::split(ids, 0.1);
  const tandem::Dataset train = text::next_char_windows(train_ids, kSeqLen, stride_for(train_ids, kTrainWindows));
  const tandem::Dataset val = text::next_char_windows(val_ids, kSeqLen, stride_for(val_ids, kValWindows));
  std::printf("corpus: %zu characters, vocabulary %lld; %lld training and %lld validation windows of %lld\n",
              corpus.size(), static_cast<long long>(vocab.size()), static_cast<long long>(train.size()),
              static_cast<long long>(val.size()), static_cast<long long>(kSeqLen));

  const tandem::Symbol tokens = tandem::Input({kSeqLen}, tandem::DType::I32, "tokens");
  const tandem::Symbol embedded = tl::Embedding(vocab.size(), kModelDim)(tokens);
  tandem::Symbol x = tl::Add()({embedded, tl::PositionEmbedding(kSeqLen)(embedded)});
  for (int b = 0; b < kBlocks; ++b) x = decoder_block(x);
  const tandem::Symbol logits = tl::Dense(vocab.size())(tl::LayerNormalization()(x));
  tandem::Model model(tokens, logits, "char_transformer");
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  model.summary();

  const double uniform = std::log(static_cast<double>(vocab.size()));
  std::printf("uniform baseline: ln(%lld) = %.4f nats per character\n", static_cast<long long>(vocab.size()), uniform);
  const tandem::History history =
      model.fit(train, {.epochs = kEpochs, .batch_size = 64, .validation_data = val, .verbose = 2});

  std::printf("\nepoch  loss    val_loss  val_accuracy  (uniform %.4f)\n", uniform);
  for (std::size_t e = 0; e < history.epoch.size(); ++e)
    std::printf("%5d  %.4f  %.4f    %.4f\n", history.epoch[e] + 1, history.history.at("loss")[e],
                history.history.at("val_loss")[e], history.history.at("val_accuracy")[e]);

  std::mt19937 rng(7);
  const std::string prompt = "The programmer ";
  std::printf("\nsample (temperature 0.8):\n%s%s\n", prompt.c_str(), generate(model, vocab, prompt, 200, 0.8, rng).c_str());
  std::printf("\ngreedy:\n%s%s\n", prompt.c_str(), generate(model, vocab, prompt, 200, 0.0, rng).c_str());

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\ntotal time: %.1f s\n", seconds);
  return 0;
}

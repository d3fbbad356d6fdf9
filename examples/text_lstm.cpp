// Classifies fortune cookies of the Debian package `fortunes` by the file they come from, with a
// word-level LSTM: TextVectorization turns each fortune into word ids, pad_sequences makes the
// rows one length, then Embedding(mask_zero) → LSTM → Dense gives one logit per file. The padding
// id 0 is masked, so the LSTM skips the padded steps: a fortune reads the same whatever its length.
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

// Five large files on different subjects: about 4,300 fortunes.
const std::vector<std::string> kFiles = {"computers", "definitions", "politics", "science", "songs-poems"};
constexpr int64_t kMaxTokens = 5000;  // the vocabulary, padding and out-of-vocabulary ids included
constexpr int64_t kMaxLen = 48;       // words per fortune; 90% of them are shorter than 90
constexpr int64_t kEmbedding = 32;
constexpr int64_t kUnits = 64;
constexpr int kEpochs = 6;
constexpr double kValidationFraction = 0.2;

struct Split {
  std::vector<std::string> texts;
  std::vector<int32_t> labels;
};

// The baselines a classifier must beat, from the training labels alone: always answering the most
// frequent file (accuracy), and answering every fortune with the files' training frequencies
// (cross-entropy, the loss of a model that ignores the text).
void print_baselines(const Split& train, const Split& val) {
  std::vector<double> freq(kFiles.size(), 0.0);
  for (const int32_t y : train.labels) freq[static_cast<std::size_t>(y)] += 1.0 / double(train.labels.size());
  const auto majority = static_cast<int32_t>(std::max_element(freq.begin(), freq.end()) - freq.begin());
  double correct = 0, loss = 0;
  for (const int32_t y : val.labels) {
    correct += y == majority;
    loss -= std::log(freq[static_cast<std::size_t>(y)]);
  }
  std::printf("baselines on validation: majority class (%s) accuracy %.4f; class-frequency cross-entropy %.4f\n",
              kFiles[static_cast<std::size_t>(majority)].c_str(), correct / double(val.labels.size()),
              loss / double(val.labels.size()));
}

tandem::Tensor labels_tensor(const std::vector<int32_t>& labels) {
  return tandem::Tensor::from({static_cast<int64_t>(labels.size())}, std::span<const int32_t>(labels));
}

}  // namespace

int main() {
  const auto start = std::chrono::steady_clock::now();
  tandem::set_random_seed(42);

  // The fortunes of the chosen files, shuffled (the files come one after another), then split.
  std::vector<std::pair<std::string, int32_t>> all;
  for (const text::Fortune& f : text::fortune_list()) {
    const auto it = std::find(kFiles.begin(), kFiles.end(), f.file);
    if (it != kFiles.end()) all.emplace_back(text::plain_ascii(f.text), static_cast<int32_t>(it - kFiles.begin()));
  }
  std::mt19937 rng(7);
  std::shuffle(all.begin(), all.end(), rng);
  const auto n_train = static_cast<std::size_t>(double(all.size()) * (1 - kValidationFraction));
  Split train, val;
  for (std::size_t i = 0; i < all.size(); ++i) {
    Split& s = i < n_train ? train : val;
    s.texts.push_back(all[i].first);
    s.labels.push_back(all[i].second);
  }

  // The vocabulary comes from the training fortunes only, as it would for unseen text.
  text::TextVectorization vectorize({.max_tokens = kMaxTokens});
  vectorize.adapt(train.texts);
  auto ids = [&](const Split& s) {
    std::vector<std::vector<int32_t>> seqs;
    for (const std::string& t : s.texts) seqs.push_back(vectorize.encode(t));
    // Truncating "pre" keeps a long fortune's end, often its punch line or attribution.
    return tandem::pad_sequences(seqs, {.maxlen = kMaxLen, .padding = "pre", .truncating = "pre"});
  };
  const tandem::Dataset train_data(ids(train), labels_tensor(train.labels));
  const tandem::Dataset val_data(ids(val), labels_tensor(val.labels));
  std::printf("%zu fortunes from %zu files: %lld training, %lld validation; vocabulary %lld words, %lld per fortune\n",
              all.size(), kFiles.size(), static_cast<long long>(train_data.size()), static_cast<long long>(val_data.size()),
              static_cast<long long>(vectorize.vocabulary_size()), static_cast<long long>(kMaxLen));
  print_baselines(train, val);

  const tandem::Symbol words = tandem::Input({kMaxLen}, tandem::DType::I32, "words");
  const tandem::Symbol state = tl::LSTM(kUnits)(tl::Embedding(vectorize.vocabulary_size(), kEmbedding, {.mask_zero = true})(words));
  tandem::Model model(words, tl::Dense(static_cast<int64_t>(kFiles.size()))(state), "fortune_lstm");
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  model.summary();
  const tandem::History history = model.fit(train_data, {.epochs = kEpochs, .batch_size = 32, .validation_data = val_data, .verbose = 2});

  std::printf("\nepoch  loss    val_loss  val_accuracy\n");
  for (std::size_t e = 0; e < history.epoch.size(); ++e)
    std::printf("%5d  %.4f  %.4f    %.4f\n", history.epoch[e] + 1, history.history.at("loss")[e], history.history.at("val_loss")[e],
                history.history.at("val_accuracy")[e]);
  print_baselines(train, val);

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("total time: %.1f s\n", seconds);
  return 0;
}

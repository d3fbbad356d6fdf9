// Trains small models with the TensorBoard callback for tests/tensorboard_check.py:
//   tensorboard_tool <log_dir> <run.json> <embedding_log_dir>
// writes the event files under <log_dir> and, in run.json, what fit reported (History, the running
// logs at every batch end) and every weight at every epoch end, which the check compares with what
// TensorBoard's own reader finds in the files; then trains a model with an Embedding layer with
// embeddings_freq 1 into <embedding_log_dir> (its projector config and weights files).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <tandem/tandem.h>

namespace tl = tandem::layers;
namespace cb = tandem::callbacks;

namespace {

constexpr int kUpdateFreq = 3, kHistogramFreq = 2, kEpochs = 4;

class Recorder : public tandem::Callback {
 public:
  nlohmann::json batches = nlohmann::json::array(), weights = nlohmann::json::array();
  void on_train_batch_end(int64_t, const tandem::Logs& logs) override { batches.push_back(logs); }
  void on_epoch_end(int, const tandem::Logs&) override {
    nlohmann::json& epoch = weights.emplace_back(nlohmann::json::object());
    for (const auto& w : model_->weights()) {
      const tandem::Tensor t = w->value().cast(tandem::DType::F64);
      epoch[w->path()] = {{"shape", w->value().shape().dims()}, {"values", std::vector<double>(t.values<double>().begin(), t.values<double>().end())}};
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tensorboard_tool <log_dir> <run.json> <embedding_log_dir>\n");
    return 2;
  }
  tandem::set_random_seed(7);
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  const int64_t rows = 70, features = 5;
  std::vector<float> x(rows * features);
  std::vector<int32_t> y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    y[r] = static_cast<int32_t>(r % 3);
    for (int64_t f = 0; f < features; ++f) x[r * features + f] = normal(gen) + (f % 3 == r % 3 ? 1.0f : 0.0f);
  }
  const tandem::Dataset data(tandem::Tensor::from({rows, features}, std::span<const float>(x)), tandem::Tensor::from({rows}, std::span<const int32_t>(y)));

  tandem::Sequential model({tl::InputLayer({features}), tl::Dense(8, "relu"), tl::BatchNormalization(), tl::Dense(3)}, "sequential");
  model.compile({.optimizer = tandem::optimizers::Adam(0.01), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  auto recorder = std::make_shared<Recorder>();
  // 56 training rows in batches of 8: 7 batches an epoch, so batch-level writes every 3 batches
  // fall at different places in each epoch.
  const tandem::History history =
      model.fit(data, {.epochs = kEpochs, .batch_size = 8, .validation_split = 0.2, .verbose = 0,
                       .callbacks = {cb::LearningRateScheduler([](int epoch, double) { return 0.01 * std::pow(0.5, epoch); }),
                                     cb::TensorBoard(argv[1], {.histogram_freq = kHistogramFreq, .write_images = true, .update_freq = kUpdateFreq}), recorder}});
  const nlohmann::json run{{"history", history.history}, {"batches", recorder->batches}, {"weights", recorder->weights},
                           {"model_name", model.name()}, {"update_freq", kUpdateFreq}, {"histogram_freq", kHistogramFreq},
                           {"epochs", kEpochs}, {"iterations", model.optimizer()->iterations()}};
  std::ofstream(argv[2]) << run.dump(1);

  // The projector config: one entry for the Embedding layer, its metadata path in text-format escapes.
  tandem::Sequential words({tl::InputLayer({4}), tl::Embedding(12, 2, {.name = "words"}), tl::Flatten(), tl::Dense(2)}, "words_model");
  words.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  std::vector<int32_t> ids(16 * 4), labels(16);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 5) % 12);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 2);
  words.fit(tandem::Dataset(tandem::Tensor::from({16, 4}, std::span<const int32_t>(ids)), tandem::Tensor::from({16}, std::span<const int32_t>(labels))),
            {.epochs = 2, .batch_size = 8, .verbose = 0,
             .callbacks = {cb::TensorBoard(argv[3], {.embeddings_freq = 1, .embeddings_metadata = "vocab \"v1\"\tcaf\u00e9's.tsv"})}});
  return 0;
}

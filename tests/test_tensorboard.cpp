// TensorBoard: the event files are decoded here independently of the writer (TFRecord framing with
// a bit-by-bit CRC32C checked against RFC 3720's test vectors, and the protocol buffer wire format
// read field by field), and their tags, steps and values checked against what fit reported
// (History and the logs each batch end received), the weights at each epoch's end, and what Keras 3
// itself wrote for the same training (tests/data/tensorboard_refs.json). tests/tensorboard_check.py
// reads the same kind of run with TensorBoard's own reader.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <tandem/tandem.h>

#include "event_records.h"
#include "io/event_file.h"
#include "io/image_file.h"
#include "scratch_dir.h"
#include "strategy_helpers.h"

namespace fs = std::filesystem;
namespace tl = tandem::layers;
namespace cb = tandem::callbacks;
using tandem::Logs;
using namespace event_records;  // the reader's helpers: read_records, decode, events_in, ...

namespace {

// Records the running logs each training batch end receives, and each weight at each epoch end.
class Recorder : public tandem::Callback {
 public:
  std::vector<Logs> batches;
  std::vector<std::map<std::string, std::vector<double>>> weights;  // per epoch: path -> values
  void on_train_batch_end(int64_t, const Logs& logs) override { batches.push_back(logs); }
  void on_epoch_end(int, const Logs&) override {
    auto& w = weights.emplace_back();
    for (const auto& v : model_->weights()) {
      const tandem::Tensor t = v->value().cast(tandem::DType::F64);
      w[v->path()].assign(t.values<double>().begin(), t.values<double>().end());
    }
  }
};

std::unique_ptr<tandem::Sequential> model_for_logs() {
  tandem::set_random_seed(5);
  auto model = std::make_unique<tandem::Sequential>(
      std::vector<tandem::LayerRef>{tl::InputLayer({6}), tl::Dense(4, "relu", {.name = "hidden"}), tl::Dense(3, "linear", {.name = "out"})}, "seq");
  model->compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  return model;
}

}  // namespace

TEST_CASE("CRC32C matches RFC 3720's test vectors and the masked form TFRecord uses") {
  const std::string digits = "123456789", zeros(32, '\0'), ones(32, '\xff');
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  for (const auto& [bytes, crc] : std::vector<std::pair<std::string, uint32_t>>{
           {digits, 0xE3069283u}, {zeros, 0x8A9136AAu}, {ones, 0x62A8AB43u}, {ascending, 0x46DD794Eu}, {"", 0u}}) {
    CHECK(crc32c_bitwise(bytes) == crc);
    CHECK(tandem::io::crc32c(bytes.data(), bytes.size()) == crc);
    CHECK(tandem::io::masked_crc32c(bytes.data(), bytes.size()) == masked(crc));
  }
  // Continuing a CRC over a second piece gives the CRC of the whole.
  CHECK(tandem::io::crc32c(digits.data() + 4, 5, tandem::io::crc32c(digits.data(), 4)) == 0xE3069283u);
}

TEST_CASE("make_histogram buckets as TensorBoard's histogram summary does") {
  // Range 4 in 4 buckets of width 1: floor((v - 0) / 1), the maximum into the last bucket.
  const std::vector<double> v{0, 1, 2, 3, 4, 0.5, 3.99};
  const tandem::io::Histogram h = tandem::io::make_histogram(v, 4);
  CHECK(h.min == 0);
  CHECK(h.max == 4);
  CHECK(h.num == 7);
  CHECK(h.sum == doctest::Approx(14.49));
  CHECK(h.sum_squares == doctest::Approx(0 + 1 + 4 + 9 + 16 + 0.25 + 3.99 * 3.99));
  CHECK(h.bucket == std::vector<double>{2, 1, 1, 3});
  CHECK(h.bucket_limit == std::vector<double>{1, 2, 3, 4});
  // One value repeated: every limit is that value, the last bucket holds them all.
  const tandem::io::Histogram same = tandem::io::make_histogram(std::vector<double>{2.5, 2.5, 2.5}, 3);
  CHECK(same.bucket_limit == std::vector<double>{2.5, 2.5, 2.5});
  CHECK(same.bucket == std::vector<double>{0, 0, 3});
  CHECK(same.min == 2.5);
  CHECK(same.max == 2.5);
  // No values: zeros.
  const tandem::io::Histogram none = tandem::io::make_histogram(std::vector<double>{}, 30);
  CHECK(none.bucket == std::vector<double>(30, 0.0));
  CHECK(none.num == 0);
  // The default is 30 buckets.
  CHECK(tandem::io::make_histogram(v).bucket.size() == 30);
}

TEST_CASE("TensorBoard writes epoch, batch and validation scalars, the learning rate and weight histograms") {
  const ScratchRoot scratch_root("tandem_tensorboard");
  const fs::path logs = scratch_root.fresh("logs");
  auto model = model_for_logs();
  auto recorder = std::make_shared<Recorder>();
  // 40 training rows in batches of 8: 5 batches an epoch, 15 in all; a batch-level write every 2.
  const tandem::Dataset data = blobs(50, 6, 3);
  const tandem::History history = model->fit(
      data, {.epochs = 3, .batch_size = 8, .validation_split = 0.2, .verbose = 0,
             .callbacks = {cb::LearningRateScheduler([](int epoch, double) { return 0.1 / (epoch + 1); }),
                           cb::TensorBoard(logs.string(), {.histogram_freq = 2, .update_freq = 2}), recorder}});
  REQUIRE(recorder->batches.size() == 15);

  const std::vector<Event> train = events_in(logs / "train");
  const auto train_scalars = scalars(train);
  for (const std::string key : {"loss", "accuracy", "learning_rate"}) {
    INFO(key);
    REQUIRE(train_scalars.count("epoch_" + key));
    const auto& written = train_scalars.at("epoch_" + key);
    REQUIRE(written.size() == 3);
    for (int epoch = 0; epoch < 3; ++epoch) CHECK(written.at(epoch) == static_cast<float>(history.history.at(key)[static_cast<std::size_t>(epoch)]));
  }
  CHECK(train_scalars.at("epoch_learning_rate").at(2) == static_cast<float>(0.1 / 3));
  // Batch scalars: the running logs of batches 2, 4, ..., 14 (counted from 1 across epochs).
  for (const std::string key : {"loss", "accuracy"}) {
    const auto& written = train_scalars.at("batch_" + key);
    CHECK(written.size() == 7);
    for (const auto& [step, value] : written) {
      CHECK(step % 2 == 0);
      CHECK(value == static_cast<float>(recorder->batches[static_cast<std::size_t>(step - 1)].at(key)));
    }
  }
  CHECK(train_scalars.size() == 5);  // nothing else: no validation values in train/

  // Histograms at epochs 0 and 2, one per weight, tagged as Keras tags a Sequential's weights.
  std::map<std::string, std::vector<int64_t>> histogram_steps;
  for (const Event& e : train) {
    if (!e.histogram) continue;
    histogram_steps[e.tag].push_back(e.step);
    const std::string path = e.tag.substr(4, e.tag.size() - 4 - std::string("/histogram").size());  // "seq/" ... "/histogram"
    INFO(e.tag << " at epoch " << e.step);
    REQUIRE(e.tag.starts_with("seq/"));
    const std::vector<double>& values = recorder->weights.at(static_cast<std::size_t>(e.step)).at(path);
    const tandem::io::Histogram& h = *e.histogram;
    CHECK(h.min == *std::min_element(values.begin(), values.end()));
    CHECK(h.max == *std::max_element(values.begin(), values.end()));
    CHECK(h.num == static_cast<double>(values.size()));
    double sum = 0, squares = 0;
    for (double v : values) sum += v, squares += v * v;
    CHECK(h.sum == doctest::Approx(sum).epsilon(1e-12));
    CHECK(h.sum_squares == doctest::Approx(squares).epsilon(1e-12));
    // 30 buckets of equal width over [min, max]: each value in [left, right), the maximum in the last.
    REQUIRE(h.bucket.size() == 30);
    REQUIRE(h.bucket_limit.size() == 30);
    CHECK(h.bucket_limit.back() == h.max);
    for (std::size_t i = 0; i < 30; ++i) {
      CHECK(h.bucket_limit[i] == doctest::Approx(h.min + (h.max - h.min) * static_cast<double>(i + 1) / 30).epsilon(1e-12));
      const double left = i == 0 ? h.min : h.bucket_limit[i - 1], right = h.bucket_limit[i];
      const auto inside = std::count_if(values.begin(), values.end(), [&](double v) { return v >= left && (v < right || (i == 29 && v == right)); });
      CHECK(h.bucket[i] == static_cast<double>(inside));
    }
  }
  const std::vector<int64_t> epochs{0, 2};
  CHECK(histogram_steps == std::map<std::string, std::vector<int64_t>>{{"seq/hidden/kernel/histogram", epochs},
                                                                        {"seq/hidden/bias/histogram", epochs},
                                                                        {"seq/out/kernel/histogram", epochs},
                                                                        {"seq/out/bias/histogram", epochs}});

  // validation/: the val_ logs without their prefix, by epoch, and against the optimizer's steps.
  const auto val_scalars = scalars(events_in(logs / "validation"));
  CHECK(val_scalars.size() == 4);
  for (const std::string key : {"loss", "accuracy"}) {
    for (int epoch = 0; epoch < 3; ++epoch) {
      const auto value = static_cast<float>(history.history.at("val_" + key)[static_cast<std::size_t>(epoch)]);
      CHECK(val_scalars.at("epoch_" + key).at(epoch) == value);
      CHECK(val_scalars.at("evaluation_" + key + "_vs_iterations").at(5 * (epoch + 1)) == value);
    }
  }
}

TEST_CASE("TensorBoard with update_freq \"epoch\" writes no batch scalars, and a second fit and evaluate write new files") {
  const ScratchRoot scratch_root("tandem_tensorboard_epoch");
  const fs::path logs = scratch_root.fresh("logs");
  auto model = model_for_logs();
  const tandem::Dataset data = blobs(40, 6, 3);
  auto tensorboard = cb::TensorBoard(logs.string());
  const tandem::History history = model->fit(data, {.epochs = 2, .batch_size = 8, .verbose = 0, .callbacks = {tensorboard}});
  const auto written = scalars(events_in(logs / "train"));
  CHECK(written.size() == 3);  // epoch_loss, epoch_accuracy, epoch_learning_rate
  CHECK(written.at("epoch_loss").at(1) == static_cast<float>(history.history.at("loss")[1]));
  CHECK(written.at("epoch_learning_rate").at(0) == 0.1f);  // SGD(0.1), no schedule
  CHECK_FALSE(fs::exists(logs / "validation"));           // no validation data, no folder (as Keras)

  // evaluate() with the callback: evaluation_<name>_vs_iterations at the optimizer's step count (10).
  const Logs evaluated = model->evaluate(data, {.batch_size = 8, .verbose = 0, .callbacks = {tensorboard}});
  const auto val = scalars(events_in(logs / "validation"));
  CHECK(val.at("evaluation_loss_vs_iterations").at(10) == static_cast<float>(evaluated.at("loss")));
  CHECK(val.at("evaluation_accuracy_vs_iterations").at(10) == static_cast<float>(evaluated.at("accuracy")));

  model->fit(data, {.epochs = 1, .batch_size = 8, .verbose = 0, .callbacks = {tensorboard}});
  CHECK(std::distance(fs::directory_iterator(logs / "train"), fs::directory_iterator{}) == 2);
}

TEST_CASE("An event file cut inside a record keeps every whole record before it") {
  const ScratchRoot scratch_root("tandem_tensorboard_cut");
  const fs::path dir = scratch_root.fresh("run");
  std::string path;
  {
    tandem::io::EventFileWriter w(dir.string(), "test");
    for (int step = 0; step < 5; ++step) w.scalar("x", step * 0.5, step);
    path = w.path();
  }
  const Records whole = read_records(path);
  CHECK(whole.data.size() == 6);
  fs::resize_file(path, fs::file_size(path) - 7);  // a process that died while writing the last record
  const Records cut = read_records(path);
  CHECK(cut.partial_tail);
  REQUIRE(cut.data.size() == 5);
  CHECK(*decode(cut.data[4]).scalar == 1.5f);
}

TEST_CASE("TensorBoard refuses bad arguments by name") {
  CHECK_THROWS_WITH_AS(cb::TensorBoard("logs", {.update_freq = "often"}),
                       "TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1, got \"often\"", tandem::ValueError);
  CHECK_THROWS_WITH_AS(cb::TensorBoard("logs", {.update_freq = 0}),
                       "TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1, got 0", tandem::ValueError);
  CHECK_THROWS_WITH_AS(cb::TensorBoard("logs", {.histogram_freq = -1}), "TensorBoard: histogram_freq must be >= 0, got -1", tandem::ValueError);
  CHECK_THROWS_AS(cb::TensorBoard("logs", {.profile_batch = 3}), tandem::ValueError);
  CHECK_THROWS_WITH_AS(cb::TensorBoard("logs", {.embeddings_freq = -2}), "TensorBoard: embeddings_freq must be >= 0, got -2", tandem::ValueError);
  CHECK(cb::UpdateFreq("batch").batches == 1);
  CHECK(cb::UpdateFreq("epoch").per_epoch());
}

TEST_CASE("TensorBoard with write_images draws each weight as Keras does: squeezed, long side across, slices of the last axis") {
  const ScratchRoot scratch_root("tandem_tensorboard_images");
  const fs::path logs = scratch_root.fresh("logs");
  tandem::set_random_seed(9);
  // Conv1D kernel (3, 2, 4): rank 3, so 4 images 3 x 2 of which the first 3 are written; Dense
  // kernel (20, 5): 20 > 5, drawn transposed, 5 x 20; Dense kernel (5, 1) squeezes to rank 1: 5 x 1;
  // biases: n x 1. All as Keras squeezes, transposes and clips (v * 255.5 truncated to [0, 255]).
  tandem::Sequential model({tl::InputLayer({7, 2}), tl::Conv1D(4, 3), tl::Flatten(), tl::Dense(5, "relu", {.name = "wide"}), tl::Dense(1, "", {.name = "one"})},
                           "net");
  model.compile({.optimizer = tandem::optimizers::SGD(0.01), .loss = "mse"});
  std::vector<float> xs(16 * 14), ys(16);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<float>(i % 3);
  const tandem::Dataset data(tandem::Tensor::from({16, 7, 2}, std::span<const float>(xs)), tandem::Tensor::from({16, 1}, std::span<const float>(ys)));
  auto recorder = std::make_shared<Recorder>();
  model.fit(data, {.epochs = 1, .batch_size = 8, .verbose = 0,
                   .callbacks = {cb::TensorBoard(logs.string(), {.histogram_freq = 1, .write_images = true}), recorder}});
  const auto& weights = recorder->weights.at(0);

  std::map<std::string, const Event*> images;
  const std::vector<Event> events = events_in(logs / "train");
  for (const Event& e : events)
    if (!e.tensor_strings.empty()) images[e.tag] = &e;
  std::vector<std::string> expected_tags;
  for (const auto& [path, values] : weights)
    if (path != "one/bias") expected_tags.push_back("net/" + path + "/image");
  std::vector<std::string> tags;
  for (const auto& [tag, e] : images) tags.push_back(tag);
  CHECK(tags == expected_tags);  // all but one/bias, of shape (1,): squeezed to a scalar, no image (as Keras)

  auto pixel = [](double v) { return static_cast<int>(std::clamp(static_cast<double>(static_cast<float>(v) * 255.5f), 0.0, 255.0)); };
  for (const auto& [path, values] : weights) {
    INFO(path);
    if (path == "one/bias") continue;
    const Event& e = *images.at("net/" + path + "/image");
    CHECK(e.step == 0);
    CHECK(e.plugin == "images");
    CHECK(e.data_class == 3);
    CHECK(e.tensor_dtype == 7);  // DT_STRING
    // The image (c, i, j) as value index, from the weight's own layout.
    int64_t count = 1, height = 0, width = 1;
    std::function<std::size_t(int64_t, int64_t, int64_t)> at;
    const std::size_t n = values.size();
    if (path == "conv1d/kernel") {  // (3, 2, 4)
      count = 3, height = 3, width = 2;
      at = [](int64_t c, int64_t i, int64_t j) { return static_cast<std::size_t>((i * 2 + j) * 4 + c); };
    } else if (path == "wide/kernel") {  // (20, 5), transposed
      height = 5, width = 20;
      at = [](int64_t, int64_t i, int64_t j) { return static_cast<std::size_t>(j * 5 + i); };
    } else {  // (5, 1) and the biases: one column
      height = static_cast<int64_t>(n);
      at = [](int64_t, int64_t i, int64_t) { return static_cast<std::size_t>(i); };
    }
    REQUIRE(e.tensor_shape == std::vector<int64_t>{2 + count});
    REQUIRE(e.tensor_strings.size() == static_cast<std::size_t>(2 + count));
    CHECK(e.tensor_strings[0] == std::to_string(width));
    CHECK(e.tensor_strings[1] == std::to_string(height));
    for (int64_t c = 0; c < count; ++c) {
      const fs::path png = scratch_root.fresh("png") / "image.png";
      std::ofstream(png, std::ios::binary) << e.tensor_strings[static_cast<std::size_t>(2 + c)];
      const tandem::io::DecodedImage image = tandem::io::decode_image(png.string());
      REQUIRE(image.height == height);
      REQUIRE(image.width == width);
      for (int64_t i = 0; i < height; ++i)
        for (int64_t j = 0; j < width; ++j) {
          const std::size_t p = static_cast<std::size_t>((i * width + j) * 4);
          CHECK(image.rgba[p] == pixel(values[at(c, i, j)]));
          CHECK(image.rgba[p + 3] == 255);
        }
    }
  }
}

TEST_CASE("TensorBoard with write_steps_per_second logs steps per second per epoch and per written batch") {
  const ScratchRoot scratch_root("tandem_tensorboard_speed");
  const fs::path logs = scratch_root.fresh("logs");
  auto model = model_for_logs();
  const tandem::Dataset data = blobs(40, 6, 3);  // 5 batches an epoch
  model->fit(data, {.epochs = 2, .batch_size = 8, .verbose = 0,
                    .callbacks = {cb::TensorBoard(logs.string(), {.write_steps_per_second = true, .update_freq = "batch"})}});
  const auto written = scalars(events_in(logs / "train"));
  const auto& epoch = written.at("epoch_steps_per_second");
  const auto& batch = written.at("batch_steps_per_second");
  CHECK(epoch.size() == 2);
  CHECK(batch.size() == 10);
  CHECK(batch.begin()->first == 1);
  CHECK(batch.rbegin()->first == 10);
  for (const auto& [step, value] : epoch) CHECK((value > 0 && std::isfinite(value)));
  for (const auto& [step, value] : batch) CHECK((value > 0 && std::isfinite(value)));
  CHECK(written.at("batch_loss").size() == 10);
}

TEST_CASE("TensorBoard with embeddings_freq writes Keras's projector config and the weights every N epochs") {
  const ScratchRoot scratch_root("tandem_tensorboard_embeddings");
  const fs::path logs = scratch_root.fresh("logs");
  auto make = [] {
    tandem::set_random_seed(4);
    auto model = std::make_unique<tandem::Sequential>(
        std::vector<tandem::LayerRef>{tl::InputLayer({5}, "ids"), tl::Embedding(10, 3, {.name = "words"}), tl::Flatten(), tl::Dense(2, "", {.name = "head"})});
    model->compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    return model;
  };
  auto model = make();
  std::vector<int32_t> ids(24 * 5), labels(24);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7) % 10);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 2);
  const tandem::Dataset data(tandem::Tensor::from({24, 5}, std::span<const int32_t>(ids)), tandem::Tensor::from({24}, std::span<const int32_t>(labels)));
  auto recorder = std::make_shared<Recorder>();
  model->fit(data, {.epochs = 3, .batch_size = 8, .verbose = 0,
                    .callbacks = {cb::TensorBoard(logs.string(), {.embeddings_freq = 2,
                                                                  .embeddings_metadata = std::map<std::string, std::string>{{"words", "vocab \"v1\".tsv"}}}),
                                  recorder}});
  // The text protobuf's text format gives this ProjectorConfig (Keras names the same tensor for every layer).
  std::ifstream config(logs / "projector_config.pbtxt");
  const std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  CHECK(text ==
        "embeddings {\n"
        "  tensor_name: \"layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE\"\n"
        "  metadata_path: \"vocab \\\"v1\\\".tsv\"\n"
        "}\n");
  // Epochs 0 and 2: the whole model's weights as they were at that epoch's end.
  CHECK(fs::exists(logs / "train" / "keras_embedding.ckpt-0.weights.h5"));
  CHECK_FALSE(fs::exists(logs / "train" / "keras_embedding.ckpt-1.weights.h5"));
  for (const int epoch : {0, 2}) {
    auto loaded = make();
    loaded->load_weights((logs / "train" / ("keras_embedding.ckpt-" + std::to_string(epoch) + ".weights.h5")).string());
    for (const auto& w : loaded->weights()) {
      const tandem::Tensor t = w->value().cast(tandem::DType::F64);
      CHECK(std::vector<double>(t.values<double>().begin(), t.values<double>().end()) ==
            recorder->weights.at(static_cast<std::size_t>(epoch)).at(w->path()));
    }
  }
  // A metadata entry for a layer that is not an Embedding of the model is refused, as Keras does.
  CHECK_THROWS_WITH_AS(model->fit(data, {.epochs = 1, .batch_size = 8, .verbose = 0,
                                         .callbacks = {cb::TensorBoard(logs.string(), {.embeddings_freq = 1,
                                                                                       .embeddings_metadata = std::map<std::string, std::string>{{"head", "x.tsv"}}})}}),
                       "TensorBoard: embeddings_metadata names layers that are not Embedding layers of the model: head", tandem::ValueError);
}

namespace {

// folder -> plugin -> tag -> (steps, scalar values), classified as TensorBoard's plugin accumulator
// does: simple_value as "scalars", HistogramProto as "histograms", a tensor by its metadata's plugin.
struct Written {
  std::vector<int64_t> steps;
  std::vector<double> values;                    // scalars
  std::vector<const Event*> events;              // histograms and images
};
using Layout = std::map<std::string, std::map<std::string, Written>>;

Layout layout_of(const std::vector<Event>& events) {
  Layout out;
  for (const Event& e : events) {
    const std::string plugin = e.scalar ? "scalars" : e.histogram ? "histograms" : e.plugin;
    Written& w = out[plugin][e.tag];
    w.steps.push_back(e.step);
    if (e.scalar) w.values.push_back(*e.scalar);
    w.events.push_back(&e);
  }
  return out;
}

}  // namespace

TEST_CASE("TensorBoard writes the tags and steps Keras 3 writes, with its values, for the same training") {
  // tests/data/tensorboard_refs.json: Keras 3 (TensorFlow backend) trained this model from these
  // weights on these rows with its TensorBoard callback (tests/data/make_tensorboard_refs.py).
  std::ifstream in(fs::path(TANDEM_TEST_DATA) / "tensorboard_refs.json");
  REQUIRE(in);
  const nlohmann::json ref = nlohmann::json::parse(in);
  const ScratchRoot scratch_root("tandem_tensorboard_keras");
  const fs::path logs = scratch_root.fresh("logs");

  auto model = std::make_unique<tandem::Sequential>(
      std::vector<tandem::LayerRef>{tl::InputLayer({6}), tl::Dense(4, "relu", {.name = "hidden"}), tl::Dense(3, "", {.name = "out"})}, "seq");
  model->compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  std::vector<tandem::Tensor> weights;
  for (const auto& w : ref["initial_weights"]) {
    std::vector<float> flat;
    std::vector<int64_t> dims{static_cast<int64_t>(w.size())};
    if (w[0].is_array()) {
      dims.push_back(static_cast<int64_t>(w[0].size()));
      for (const auto& row : w)
        for (const auto& v : row) flat.push_back(v.get<float>());
    } else {
      for (const auto& v : w) flat.push_back(v.get<float>());
    }
    weights.push_back(tandem::Tensor::from(tandem::Shape(dims), std::span<const float>(flat)));
  }
  model->set_weights(weights);
  std::vector<float> x;
  for (const auto& row : ref["x"])
    for (const auto& v : row) x.push_back(v.get<float>());
  const auto y = ref["y"].get<std::vector<int32_t>>();
  auto rows = [&](int64_t begin, int64_t end) {
    return tandem::Dataset(tandem::Tensor::from({end - begin, 6}, std::span<const float>(x).subspan(static_cast<std::size_t>(begin * 6), static_cast<std::size_t>((end - begin) * 6))),
                           tandem::Tensor::from({end - begin}, std::span<const int32_t>(y).subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin))));
  };
  model->fit(rows(0, 40), {.epochs = 3, .batch_size = 8, .shuffle = false, .validation_data = rows(40, 50), .verbose = 0,
                           .callbacks = {cb::LearningRateScheduler([](int epoch, double) { return 0.1 / (epoch + 1); }),
                                         cb::TensorBoard(logs.string(), {.histogram_freq = 2, .write_images = true, .update_freq = "batch"})}});

  // Keras's files are named as these are.
  for (const auto& file : ref["files"]) CHECK(std::regex_match(file.get<std::string>(), std::regex(R"((train|validation)/events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+\.v2)")));
  for (const std::string folder : {"train", "validation"}) {
    const std::vector<Event> events = events_in(logs / folder);
    const Layout ours = layout_of(events);
    const nlohmann::json& keras = ref["written"][folder];
    std::vector<std::string> our_tags, keras_tags;
    for (const auto& [plugin, tags] : ours)
      for (const auto& [tag, w] : tags) our_tags.push_back(plugin + ": " + tag);
    for (const auto& [plugin, tags] : keras.items())
      for (const auto& [tag, w] : tags.items()) keras_tags.push_back(plugin + ": " + tag);
    INFO(folder);
    CHECK(our_tags == keras_tags);
    for (const auto& [plugin, tags] : keras.items())
      for (const auto& [tag, w] : tags.items()) {
        INFO(plugin << " " << tag);
        if (!ours.count(plugin) || !ours.at(plugin).count(tag)) continue;
        const Written& mine = ours.at(plugin).at(tag);
        CHECK(mine.steps == w["steps"].get<std::vector<int64_t>>());
        if (plugin == "scalars") {
          const auto values = w["values"].get<std::vector<double>>();
          REQUIRE(mine.values.size() == values.size());
          for (std::size_t i = 0; i < values.size(); ++i) CHECK(mine.values[i] == doctest::Approx(values[i]).epsilon(1e-5));
        } else if (plugin == "histograms") {  // Keras's [30, 3] (left, right, count) from ours, as TensorBoard reads HistogramProto
          for (std::size_t i = 0; i < mine.events.size(); ++i) {
            const tandem::io::Histogram& h = *mine.events[i]->histogram;
            const auto buckets = w["buckets"][i].get<std::vector<std::vector<double>>>();
            REQUIRE(buckets.size() == h.bucket.size());
            for (std::size_t b = 0; b < buckets.size(); ++b) {
              CHECK(h.bucket[b] == buckets[b][2]);
              CHECK((b == 0 ? h.min : h.bucket_limit[b - 1]) == doctest::Approx(buckets[b][0]).epsilon(1e-5));
              CHECK(h.bucket_limit[b] == doctest::Approx(buckets[b][1]).epsilon(1e-5));
            }
          }
        } else if (plugin == "images") {  // the same sizes, each pixel within 1 (weights a float rounding apart)
          for (std::size_t i = 0; i < mine.events.size(); ++i) {
            const Event& e = *mine.events[i];
            const nlohmann::json& image = w["images"][i];
            REQUIRE(e.tensor_strings.size() == 2 + image["pixels"].size());
            CHECK(e.tensor_strings[0] == std::to_string(image["width"].get<int>()));
            CHECK(e.tensor_strings[1] == std::to_string(image["height"].get<int>()));
            for (std::size_t k = 0; k < image["pixels"].size(); ++k) {
              const fs::path png = scratch_root.fresh("png") / "image.png";
              std::ofstream(png, std::ios::binary) << e.tensor_strings[2 + k];
              const tandem::io::DecodedImage decoded = tandem::io::decode_image(png.string());
              const auto pixels = image["pixels"][k].get<std::vector<std::vector<std::vector<int>>>>();
              REQUIRE(decoded.height == static_cast<int64_t>(pixels.size()));
              REQUIRE(decoded.width == static_cast<int64_t>(pixels[0].size()));
              for (std::size_t r = 0; r < pixels.size(); ++r)
                for (std::size_t c = 0; c < pixels[r].size(); ++c)
                  CHECK(std::abs(decoded.rgba[(r * pixels[r].size() + c) * 4] - pixels[r][c][0]) <= 1);
            }
          }
        }
      }
  }
}

TEST_CASE("A write that fails part way (a file size limit) cuts the event file back to its last whole record") {
  const ScratchRoot scratch_root("tandem_tensorboard_full");
  const fs::path dir = scratch_root.fresh("run");
  tandem::io::EventFileWriter w(dir.string(), "test");
  w.scalar("x", 1.0, 0);
  const auto whole = static_cast<rlim_t>(fs::file_size(w.path()));
  // A limit a few bytes past the end: the next record is written in part, then refused.
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = before;
  limited.rlim_cur = whole + 10;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  CHECK_THROWS_AS(w.scalar("x", 2.0, 1), tandem::Error);
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &before) == 0);
  std::signal(SIGXFSZ, old_handler);
  CHECK(fs::file_size(w.path()) == whole);
  // Writing goes on after the last whole record.
  w.scalar("x", 3.0, 2);
  w.close();
  const Records records = read_records(w.path());
  CHECK_FALSE(records.partial_tail);
  REQUIRE(records.data.size() == 3);
  CHECK(decode(records.data[2]).step == 2);
  CHECK(*decode(records.data[2]).scalar == 3.0f);
}

TEST_CASE("TensorBoard under Mirrored with sync_every 2: a step per batch, histograms of the synchronised weights") {
  const ScratchRoot scratch_root("tandem_tensorboard_mirrored");
  const fs::path logs = scratch_root.fresh("logs");
  tandem::set_random_seed(5);
  tandem::Sequential model({tl::InputLayer({6}), tl::Dense(4, "relu", {.name = "hidden"}), tl::Dense(3, "", {.name = "out"})}, "seq");
  model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}, .strategy = tandem::distribute::Mirrored(cpus(2), {.sync_every = 2})});
  auto recorder = std::make_shared<Recorder>();
  // 40 training rows in batches of 8: 5 batches an epoch, run as groups of 2, 2 and 1 (3 updates).
  const tandem::History history = model.fit(blobs(50, 6, 3), {.epochs = 2, .batch_size = 8, .validation_split = 0.2, .verbose = 0,
                                                              .callbacks = {cb::TensorBoard(logs.string(), {.histogram_freq = 1, .update_freq = "batch"}),
                                                                            recorder}});
  REQUIRE(recorder->batches.size() == 10);
  const std::vector<Event> train = events_in(logs / "train");
  const auto written = scalars(train);
  const auto& batch_loss = written.at("batch_loss");
  REQUIRE(batch_loss.size() == 10);
  for (const auto& [step, value] : batch_loss) CHECK(value == static_cast<float>(recorder->batches.at(static_cast<std::size_t>(step - 1)).at("loss")));
  CHECK(written.at("epoch_loss").at(1) == static_cast<float>(history.history.at("loss")[1]));
  for (const Event& e : train)
    if (e.histogram) {
      const auto& values = recorder->weights.at(static_cast<std::size_t>(e.step)).at(e.tag.substr(4, e.tag.size() - 4 - 10));
      CHECK(e.histogram->sum == doctest::Approx(std::accumulate(values.begin(), values.end(), 0.0)).epsilon(1e-12));
      CHECK(e.histogram->max == *std::max_element(values.begin(), values.end()));
    }
  const auto val = scalars(events_in(logs / "validation"));
  CHECK(val.at("evaluation_loss_vs_iterations").count(3) == 1);  // the optimizer's updates, not batches
  CHECK(val.at("evaluation_loss_vs_iterations").count(6) == 1);
}

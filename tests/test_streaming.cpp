// The streaming input pipeline: a Dataset read from a Source as batches are staged gives the same
// bits as the in-memory Dataset of the same samples (any decode thread count, Default and
// Mirrored), holds only its staging buffers, reports unreadable samples by file, resumes
// mid-epoch without reading the skipped samples, and shows how long the step waits for input.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <tandem/tandem.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <sstream>
#include <thread>

#include "core/task_thread.h"
#include "data/batcher.h"
#include "data/prefetcher.h"
#include "child_process.h"
#include "scratch_dir.h"
#include "strategy_helpers.h"
#include "throw_at_step.h"

namespace tl = tandem::layers;
namespace fs = std::filesystem;
using tandem::Dataset;
using tandem::InputPipelineOptions;
using tandem::Tensor;

namespace {

const ScratchRoot scratch_root("test_streaming");

// The rows of an in-memory dataset as a Source: each sample copied out of the tensors. Counts
// the reads, can fail at one index (a DataError naming "sample_<index>.png") and can be slow.
class ArraySource : public tandem::Source {
 public:
  explicit ArraySource(const Dataset& data, int64_t fail_at = -1, std::chrono::microseconds delay = {})
      : columns_(data.xs()), fail_at_(fail_at), delay_(delay) {
    columns_.insert(columns_.end(), data.ys().begin(), data.ys().end());
    for (const Tensor& t : data.xs()) type_.x.push_back({t.shape().without_batch(), t.dtype()});
    for (const Tensor& t : data.ys()) type_.y.push_back({t.shape().without_batch(), t.dtype()});
  }
  int64_t size() const override { return columns_[0].shape()[0]; }
  tandem::SampleType sample_type() const override { return type_; }
  void read(int64_t index, std::span<std::byte* const> out) const override {
    reads.fetch_add(1);
    if (delay_.count()) std::this_thread::sleep_for(delay_);
    if (index == fail_at_) throw tandem::DataError(path(index), "cannot decode image file \"" + path(index) + "\": not a PNG file");
    if (out.size() != columns_.size()) throw std::logic_error("ArraySource: given " + std::to_string(out.size()) + " buffers");  // not REQUIRE: a decode thread
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::size_t row = type_.column(c).bytes();
      std::memcpy(out[c], static_cast<const std::byte*>(columns_[c].raw()) + row * static_cast<std::size_t>(index), row);
    }
  }
  std::string describe() const override { return "test arrays"; }
  static std::string path(int64_t index) { return "images/sample_" + std::to_string(index) + ".png"; }
  mutable std::atomic<int64_t> reads{0};

 private:
  std::vector<Tensor> columns_;
  tandem::SampleType type_;
  int64_t fail_at_;
  std::chrono::microseconds delay_;
};

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) return false;
  return true;
}

// An MLP with dropout (its masks follow the step count) on blobs(), trained two epochs from seed 5.
struct Trained {
  std::vector<Tensor> weights;
  tandem::History history;
};
Trained train(const Dataset& data, tandem::distribute::StrategyPtr strategy = nullptr, tandem::FitOptions options = {}) {
  tandem::set_random_seed(5);
  tandem::Sequential model({tl::InputLayer({20}), tl::Dense(16, "relu"), tl::Dropout(0.2), tl::Dense(5)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"},
                 .strategy = strategy});
  options.epochs = 2, options.batch_size = 32, options.verbose = 0;
  Trained t;
  t.history = model.fit(data, options);
  t.weights = model.get_weights();
  return t;
}

// blobs() with x as float64 and y as float32, so that fit converts both (in memory: tensors
// cast once; streamed: row maps).
Dataset mixed_blobs(int64_t rows) {
  const Dataset d = blobs(rows, 20, 5);
  return {d.x().cast(tandem::DType::F64), d.y().cast(tandem::DType::F32)};
}

// A row transform with draws, to check that a streamed row gets the same draws as in memory.
void jitter(std::span<float> x, const tandem::Shape&, std::mt19937_64& random) { x[0] += float(random() % 100) * 1e-3f; }

// What a piece of code writes to std::cerr.
template <class F>
std::string stderr_of(F f) {
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  try {
    f();
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  std::cerr.rdbuf(old);
  return captured.str();
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("streaming: a streamed dataset trains to the in-memory dataset's bits, at any decode thread count") {
  const Dataset memory = mixed_blobs(200);  // 7 batches of 32, the last of 8
  const tandem::FitOptions options{.transforms = {jitter}};
  const Trained reference = train(memory, nullptr, options);
  for (const int threads : {1, 4, 8, tandem::AUTOTUNE})  // 8: more threads than this machine's cores
    for (const int prefetch : {1, 3}) {
      CAPTURE(threads);
      CAPTURE(prefetch);
      auto source = std::make_shared<ArraySource>(memory);
      const Trained streamed = train(Dataset::from_source(source, {.num_parallel_calls = threads, .prefetch = prefetch}), nullptr, options);
      CHECK(same_bits(streamed.weights, reference.weights));
      CHECK(streamed.history.history.at("loss") == reference.history.history.at("loss"));
      CHECK(streamed.history.history.at("accuracy") == reference.history.history.at("accuracy"));
      CHECK(source->reads == 2 * 200);  // each sample once per epoch
    }
  // The in-memory dataset through the same pipeline with several threads: the same bits too.
  CHECK(same_bits(train(memory.with_pipeline({.num_parallel_calls = 4, .prefetch = 2}), nullptr, options).weights, reference.weights));
}

TEST_CASE("streaming: under Mirrored and Pipeline on two devices, streamed and in-memory data give the same bits") {
  const Dataset memory = mixed_blobs(200);
  for (const bool pipeline : {false, true}) {
    CAPTURE(pipeline);
    auto strategy = [&] {
      return pipeline ? tandem::distribute::Pipeline(cpus(2), {.micro_batches = 2}) : tandem::distribute::Mirrored(cpus(2));
    };
    const Trained reference = train(memory, strategy());
    for (const int threads : {1, 4}) {
      CAPTURE(threads);
      const Trained streamed = train(Dataset::from_source(std::make_shared<ArraySource>(memory), {.num_parallel_calls = threads}), strategy());
      CHECK(same_bits(streamed.weights, reference.weights));
    }
  }
}

TEST_CASE("streaming: a source that stops answering gives TimeoutError naming the batch and the source, not a hang") {
  const Dataset memory = blobs(64, 20, 5);
  const Dataset stuck = tandem::datasets::from_function<float, int32_t>(
      64, {20}, {},
      [&](int64_t i, std::span<float> x, std::span<int32_t> y) {
        if (i == 40) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        std::copy_n(memory.x().data<float>() + i * 20, 20, x.begin());
        y[0] = memory.y().data<int32_t>()[i];
      },
      {.num_parallel_calls = 2}, "a stuck reader");
  const auto limit = tandem::watchdog_timeout();
  tandem::set_watchdog_timeout(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(train(stuck, nullptr, {.shuffle = false}),
                       doctest::Contains("watchdog: the decode threads did not stage batch 1 of a stuck reader within 300 ms"), tandem::TimeoutError);
  tandem::set_watchdog_timeout(limit);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));  // the stuck read ends; its thread is joined
}

TEST_CASE("streaming: class_weight, row maps, validation_data, evaluate and predict on streamed data") {
  const Dataset memory = blobs(150, 20, 5);
  const Dataset streamed = Dataset::from_source(std::make_shared<ArraySource>(memory), {.num_parallel_calls = 3});
  SUBCASE("class_weight") {
    const tandem::FitOptions o{.class_weight = {{0, 2.0}, {3, 0.5}}};
    CHECK(same_bits(train(streamed, nullptr, o).weights, train(memory, nullptr, o).weights));
  }
  SUBCASE("steps_per_epoch: epochs that end mid-pass, and a stop mid-epoch") {
    const tandem::FitOptions o{.steps_per_epoch = 3, .transforms = {jitter}};
    CHECK(same_bits(train(streamed, nullptr, o).weights, train(memory, nullptr, o).weights));
  }
  SUBCASE("one-hot targets from a row map, and streamed validation data") {
    auto fit_one_hot = [](const Dataset& d, const Dataset& validation) {
      tandem::set_random_seed(5);
      tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
      model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::CategoricalCrossentropy({.from_logits = true})});
      const auto h = model.fit(d.map_y(tandem::datasets::one_hot(5)), {.epochs = 2, .batch_size = 16, .validation_data = validation.map_y(tandem::datasets::one_hot(5)), .verbose = 0});
      return std::make_pair(model.get_weights(), h.history.at("val_loss"));
    };
    const auto [w_memory, val_memory] = fit_one_hot(memory, memory.slice(100, 150));
    const auto [w_streamed, val_streamed] = fit_one_hot(streamed, Dataset::from_source(std::make_shared<ArraySource>(memory.slice(100, 150))));
    CHECK(same_bits(w_streamed, w_memory));
    CHECK(val_streamed == val_memory);
  }
  SUBCASE("evaluate and predict") {
    tandem::set_random_seed(2);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"accuracy"}});
    CHECK(model.evaluate(streamed, {.batch_size = 16, .verbose = 0}) == model.evaluate(memory, {.batch_size = 16, .verbose = 0}));
    CHECK(same_bits(model.predict(streamed, {.batch_size = 16}), {model.predict(memory.x(), {.batch_size = 16})}));
    CHECK(same_bits(model.predict(memory, {.batch_size = 16}), {model.predict(memory.x(), {.batch_size = 16})}));
  }
}

TEST_CASE("streaming: a streamed dataset has no tensors, and what fit cannot do with it is refused clearly") {
  const Dataset streamed = Dataset::from_source(std::make_shared<ArraySource>(blobs(40, 20, 5)));
  CHECK(streamed.size() == 40);
  CHECK(streamed.streamed());
  CHECK_THROWS_WITH_AS(streamed.x(), doctest::Contains("streamed from test arrays and holds no tensors in memory"), tandem::ValueError);
  CHECK_THROWS_AS(streamed.ys(), tandem::ValueError);
  CHECK_THROWS_WITH_AS(train(streamed, nullptr, {.validation_split = 0.2}), doctest::Contains("validation_split is not supported for a dataset streamed"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(train(streamed, nullptr, {.sample_weight = Tensor(tandem::Shape{40}, tandem::DType::F32)}),
                       doctest::Contains("sample_weight is an array of one weight per row, and the dataset is streamed"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(Dataset::from_source(nullptr), "Dataset::from_source: the source is null", tandem::ValueError);
  CHECK_THROWS_WITH_AS(streamed.with_pipeline({.num_parallel_calls = 0}), doctest::Contains("num_parallel_calls must be >= 1 or AUTOTUNE, got 0"),
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(streamed.with_pipeline({.prefetch = 0}), doctest::Contains("prefetch must be >= 1"), tandem::ValueError);
  // A float label that is not a class id is caught as its row is staged.
  const Dataset bad = Dataset::from_source(std::make_shared<ArraySource>(Dataset(blobs(40, 20, 5).x(), Tensor::from({40}, std::span<const float>(std::vector<float>(40, 2.5f))))));
  CHECK_THROWS_WITH_AS(train(bad), doctest::Contains("label 2.5 is not a whole number"), tandem::ValueError);
}

TEST_CASE("streaming: from_function reads a user's samples, typed or as bytes") {
  const Dataset memory = blobs(96, 20, 5);
  const Tensor& x = memory.x();
  const Tensor& y = memory.y();
  const Dataset typed = tandem::datasets::from_function<float, int32_t>(
      96, {20}, {}, [&](int64_t i, std::span<float> row, std::span<int32_t> label) {
        std::copy_n(x.data<float>() + i * 20, 20, row.begin());
        label[0] = y.data<int32_t>()[i];
      });
  CHECK(typed.x_row().shape == tandem::Shape{20});
  CHECK(same_bits(train(typed).weights, train(memory).weights));
  const tandem::SampleType type{{{tandem::Shape{20}, tandem::DType::F32}}, {{tandem::Shape{}, tandem::DType::I32}}};
  const Dataset raw = tandem::datasets::from_function(96, type, [&](int64_t i, std::span<std::byte* const> out) {
    std::memcpy(out[0], x.data<float>() + i * 20, 20 * sizeof(float));
    std::memcpy(out[1], y.data<int32_t>() + i, sizeof(int32_t));
  });
  CHECK(same_bits(train(raw).weights, train(memory).weights));
}

TEST_CASE("streaming: 200000 samples made on the fly train an epoch in the pipeline's staging buffers alone") {
  constexpr int64_t n = 200000, features = 16, batch = 64;
  std::atomic<int64_t> reads{0};
  const Dataset big = tandem::datasets::from_function<float, int32_t>(
      n, {features}, {},
      [&](int64_t i, std::span<float> x, std::span<int32_t> y) {
        reads.fetch_add(1);
        for (int64_t f = 0; f < features; ++f) x[static_cast<std::size_t>(f)] = float((i * 31 + f * 7) % 13) / 13.0f - (f % 4 == i % 4 ? 0.0f : 0.5f);
        y[0] = static_cast<int32_t>(i % 4);
      },
      {.num_parallel_calls = 4, .prefetch = 2}, "generated");
  tandem::set_random_seed(1);
  tandem::Sequential model({tl::InputLayer({features}), tl::Dense(4)});
  model.compile({.optimizer = tandem::optimizers::SGD(0.05), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  tandem::data::Prefetcher::reset_peak_staging_bytes();
  const auto h = model.fit(big, {.epochs = 1, .batch_size = batch, .verbose = 0});
  CHECK(reads == n);
  // (prefetch + 1) slots of a batch of x (16 float32) and y (one int32), and each of the 4 decode
  // threads' scratch row (each column on its own 64-byte line).
  const std::size_t staged = 3 * batch * (features * 4 + 4), scratch = 4 * (64 + 64);
  CHECK(tandem::data::Prefetcher::peak_staging_bytes() == staged + scratch);
  CHECK(staged + scratch < std::size_t(n) * (features * 4 + 4) / 500);  // the data set is 13.6 MB, the buffers 13.6 kB
  CHECK(h.history.at("accuracy").back() > 0.9);
}

TEST_CASE("streaming: an unreadable sample stops fit with a DataError naming its file, or is skipped and counted") {
  const Dataset memory = mixed_blobs(200);
  for (const int threads : {1, 4}) {
    CAPTURE(threads);
    const Dataset failing = Dataset::from_source(std::make_shared<ArraySource>(memory, 37), {.num_parallel_calls = threads});
    CHECK_THROWS_WITH_AS(train(failing), doctest::Contains("images/sample_37.png"), tandem::DataError);
    try {
      train(failing);
    } catch (const tandem::DataError& e) {
      CHECK(e.path() == "images/sample_37.png");
    }
    tandem::set_random_seed(1);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    CHECK_THROWS_WITH_AS(model.evaluate(failing, {.verbose = 0}), doctest::Contains("sample_37.png"), tandem::DataError);
    CHECK_THROWS_WITH_AS(model.predict(failing), doctest::Contains("sample_37.png"), tandem::DataError);
  }
  // Skipped: the sample's place goes to the next sample of the order, so batches keep their size
  // and the result is the same at every thread count.
  std::vector<Tensor> first;
  for (const int threads : {1, 4}) {
    auto source = std::make_shared<ArraySource>(memory, 37);
    const Dataset skipping = Dataset::from_source(source, {.num_parallel_calls = threads, .skip_errors = true});
    Trained t;
    const std::string log = stderr_of([&] { t = train(skipping); });
    CHECK(count_of(log, "skipped 1 unreadable sample of test arrays (skip_errors)") == 2);  // once per epoch
    CHECK(count_of(log, "the first: cannot decode image file \"images/sample_37.png\"") == 2);
    CHECK(source->reads == 2 * (200 + 1));  // the failed read and its replacement
    if (first.empty()) first = t.weights;
    else CHECK(same_bits(t.weights, first));
  }
}

TEST_CASE("streaming: a skipped sample's row holds the next readable sample of the epoch's order") {
  const Dataset memory = blobs(10, 20, 5);
  const Dataset skipping = Dataset::from_source(std::make_shared<ArraySource>(memory, 3), {.skip_errors = true});
  tandem::data::Batcher batches(skipping, 5, false, 0);
  std::vector<float> x(5 * 20);
  std::vector<int32_t> y(5);
  batches.gather(0, x.data(), y.data());
  CHECK(y == std::vector<int32_t>{0, 1, 2, 4, 4});  // blobs' class is row % 5: row 3 read as row 4
  CHECK(std::memcmp(x.data() + 3 * 20, memory.x().data<float>() + 4 * 20, 20 * sizeof(float)) == 0);
}

TEST_CASE("streaming: BackupAndRestore resumes mid-epoch without reading the samples before the saved batch") {
  const Dataset memory = mixed_blobs(200);  // 7 batches per epoch, the last of 8 rows
  const fs::path dir = scratch_root.fresh("resume") / "backup";
  auto run = [&](const std::shared_ptr<ArraySource>& source, int64_t interrupt_at) {
    std::vector<tandem::CallbackPtr> callbacks;
    if (interrupt_at) callbacks.push_back(std::make_shared<ThrowAtStep>(interrupt_at));
    callbacks.push_back(tandem::callbacks::BackupAndRestore(dir.string(), {.save_freq = 4}));
    tandem::set_random_seed(5);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(16, "relu"), tl::Dropout(0.2), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    const auto h = model.fit(Dataset::from_source(source, {.num_parallel_calls = 3}),
                             {.epochs = 3, .batch_size = 32, .verbose = 0, .callbacks = callbacks, .transforms = {jitter}});
    return std::make_pair(model.get_weights(), h.history.at("loss"));
  };
  const auto reference = run(std::make_shared<ArraySource>(memory), 0);
  CHECK_THROWS_WITH(run(std::make_shared<ArraySource>(memory), 14), "interrupted");  // the last backup after step 12: epoch 2, batch 5
  auto resumed_source = std::make_shared<ArraySource>(memory);
  const auto resumed = run(resumed_source, 0);
  CHECK(resumed_source->reads == 32 + 8 + 200);  // epoch 2's batches 5 (32 rows) and 6 (8 rows), then epoch 3
  CHECK(same_bits(resumed.first, reference.first));
  CHECK(resumed.second == reference.second);
}

TEST_CASE("streaming: data_wait in the logs, the progress bar and the trace, and one warning when input is the bottleneck") {
  const Dataset memory = blobs(64, 20, 5);
  const auto slow = std::make_shared<ArraySource>(memory, -1, std::chrono::microseconds(1500));
  const fs::path trace = scratch_root.fresh("trace") / "trace.json";
  tandem::set_random_seed(1);
  tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
  model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  tandem::History h;
  const uint64_t threads_before = tandem::core::TaskThread::started();
  const std::string log = stderr_of([&] {
    h = model.fit(Dataset::from_source(slow, {.num_parallel_calls = 1, .prefetch = 1}),
                  {.epochs = 3, .batch_size = 8, .verbose = 0, .trace_path = trace.string(), .trace_step = 2});
  });
  CHECK(tandem::core::TaskThread::started() - threads_before >= 1);
  REQUIRE(h.history.count("data_wait"));
  CHECK(h.history.at("data_wait")[0] > 5.0);  // 8 samples of 1.5 ms each per step, read by one thread
  CHECK(count_of(log, "UserWarning: fit: epoch 1: the training step waited for input") == 1);  // once per fit
  CHECK(count_of(log, "waited for input") == 1);
  CHECK(count_of(log, "with 1 decode thread; give the dataset more (InputPipelineOptions::num_parallel_calls, or AUTOTUNE)") == 1);
  std::ifstream in(trace);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(count_of(json, "\"name\":\"data_wait\"") == 1);
  CHECK(count_of(json, "\"input pipeline\"") == 1);
}

TEST_CASE("streaming: the progress bar shows data_wait beside the step time") {
  const Dataset streamed = Dataset::from_source(std::make_shared<ArraySource>(blobs(64, 20, 5)), {.num_parallel_calls = 2});
  tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
  model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  std::ostringstream out;
  auto* old = std::cout.rdbuf(out.rdbuf());
  model.fit(streamed, {.epochs = 1, .batch_size = 16, .verbose = 2});
  std::cout.rdbuf(old);
  CHECK(out.str().find("/step - data_wait: ") != std::string::npos);
  CHECK(out.str().find("ms - loss: ") != std::string::npos);
}

TEST_CASE("streaming: AUTOTUNE adds decode threads while the step waits for input") {
  if (std::thread::hardware_concurrency() < 2) {
    MESSAGE("skipped: one hardware thread, so AUTOTUNE has nothing to add");
    return;
  }
  const auto slow = std::make_shared<ArraySource>(blobs(256, 20, 5), -1, std::chrono::microseconds(500));
  tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
  model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const uint64_t before = tandem::core::TaskThread::started();
  stderr_of([&] { model.fit(Dataset::from_source(slow, {.num_parallel_calls = tandem::AUTOTUNE}), {.epochs = 1, .batch_size = 8, .verbose = 0}); });
  CHECK(tandem::core::TaskThread::started() - before >= 2);  // started with one, added at least one
}

// ---------------------------------------------------------------------------------------------
// SIGKILL and restart: the test program runs itself as the training process to kill.

namespace {

constexpr const char* kChildDir = "TANDEM_STREAMING_CHILD_DIR";  // set: this process is the child
constexpr const char* kChildKillAt = "TANDEM_STREAMING_CHILD_KILL_AT";

// Kills its own process (SIGKILL) when training reaches step `at`, counted across restarts.
class KillAtStep : public tandem::Callback {
 public:
  explicit KillAtStep(int64_t at) : at_(at) {}
  void on_train_batch_end(int64_t, const tandem::Logs&) override {
    if (model_->fit_progress().steps == at_) ::raise(SIGKILL);
  }

 private:
  int64_t at_;
};

// Starts this test program as the child with its environment; kills it after `kill_after`
// seconds unless it has exited (< 0: never). Returns the wait status.
int run_self(const fs::path& dir, int64_t kill_at, double kill_after) {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  return run_child_process(exe, {"--test-case=streaming child: one training run", "--no-version", "--minimal"},
                           {std::string(kChildDir) + "=" + dir.string(), std::string(kChildKillAt) + "=" + std::to_string(kill_at)}, kill_after);
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

// Runs only as the child (the environment names its folder): 3 epochs of 19 steps on 600
// streamed samples (3 decode threads, a row transform), streamed validation data, a backup every
// 5 steps; writes the weights, the optimizer's state and the history (but data_wait, a timing)
// to DIR/out.
TEST_CASE("streaming child: one training run") {
  const char* dir = std::getenv(kChildDir);
  if (!dir) return;
  const Dataset all = mixed_blobs(660);
  const int64_t kill_at = std::stoll(std::getenv(kChildKillAt));
  std::vector<tandem::CallbackPtr> callbacks;
  if (kill_at > 0) callbacks.push_back(std::make_shared<KillAtStep>(kill_at));
  callbacks.push_back(tandem::callbacks::BackupAndRestore((fs::path(dir) / "backup").string(), {.save_freq = 5}));
  tandem::set_random_seed(9);
  tandem::Sequential model({tl::InputLayer({20}), tl::Dense(16, "relu"), tl::Dropout(0.2), tl::Dense(5)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const auto h = model.fit(Dataset::from_source(std::make_shared<ArraySource>(all.slice(0, 600)), {.num_parallel_calls = 3}),
                           {.epochs = 3, .batch_size = 32, .validation_data = Dataset::from_source(std::make_shared<ArraySource>(all.slice(600, 660))),
                            .verbose = 0, .callbacks = callbacks, .transforms = {jitter}});
  std::ofstream out(fs::path(dir) / "out", std::ios::binary | std::ios::trunc);
  for (const Tensor& w : model.get_weights()) out.write(static_cast<const char*>(w.raw()), static_cast<std::streamsize>(w.bytes()));
  for (const tandem::VariablePtr& v : model.optimizer()->variables())
    out.write(static_cast<const char*>(v->value().raw()), static_cast<std::streamsize>(v->value().bytes()));
  for (const auto& [key, values] : h.history)
    if (key != "data_wait")
      for (const double v : values) out << key << " " << std::hexfloat << v << "\n";
}

TEST_CASE("streaming: killed with SIGKILL 10 times and restarted, streamed training ends bitwise equal to an uninterrupted run") {
  if (std::getenv(kChildDir)) return;
  const fs::path reference = scratch_root.fresh("kill_reference"), killed = scratch_root.fresh("killed");
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(run_self(reference, 0, -1) == 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(fs::exists(reference / "out"));
  const unsigned seed = std::random_device{}();
  INFO("kill points drawn with seed " << seed);
  std::mt19937 gen(seed);
  // 7 kills at steps drawn across the run's 57 (the child raises SIGKILL there), then 3 by this
  // process after random delays (a kill can land anywhere: mid-step, mid-backup, mid-read).
  std::vector<int64_t> points(7);
  for (int64_t& p : points) p = std::uniform_int_distribution<int64_t>(1, 57)(gen);
  std::sort(points.begin(), points.end());  // each restart gets further than the last
  int kills = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const bool self = trial < 7;
    const int64_t at = self ? points[static_cast<std::size_t>(trial)] : 0;
    const double after = self ? -1 : std::uniform_real_distribution<double>(0.1, 0.9)(gen) * seconds;
    CAPTURE(trial);
    CAPTURE(at);
    CAPTURE(after);
    const int status = run_self(killed, at, after);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++kills;
    else REQUIRE(status == 0);  // a run can finish before a delayed kill, or resume past a self-kill's step
  }
  MESSAGE("killed " << kills << " times of 10");
  CHECK(kills >= 5);
  REQUIRE(run_self(killed, 0, -1) == 0);
  CHECK(file_text(killed / "out") == file_text(reference / "out"));
}

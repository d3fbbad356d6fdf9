// Sources of whole batches (datasets::from_batch_function, the role of keras.utils.PyDataset):
// fit, evaluate and predict take the source's batches in order, each made once per epoch by one
// call, and train to the bits of the in-memory dataset of the same rows unshuffled, whatever the
// decode threads, under Default and Mirrored; a resumed epoch makes only the batches it still
// needs; what cannot work with whole batches is refused by name.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <utility>

#include "scratch_dir.h"
#include "strategy_helpers.h"
#include "throw_at_step.h"

namespace tl = tandem::layers;
namespace fs = std::filesystem;
using tandem::Dataset;
using tandem::Tensor;

namespace {

const ScratchRoot scratch_root("test_batch_source");

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0) return false;
  return true;
}

// The rows of an in-memory dataset (x float32 (n, 20), y int32 (n,)) made a batch at a time, with
// a record of the calls: which batches, of how many rows.
struct BatchLog {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> calls;  // (batch, rows)
  void add(int64_t batch, int64_t rows) {
    const std::lock_guard lock(mutex);
    calls.emplace_back(batch, rows);
  }
};

Dataset batches_of(const Dataset& memory, int64_t batch_size, const std::shared_ptr<BatchLog>& log, tandem::InputPipelineOptions options = {},
                   int64_t fail_at = -1) {
  const Tensor x = memory.x(), y = memory.y();
  return tandem::datasets::from_batch_function<float, int32_t>(
      memory.size(), batch_size, {20}, {},
      [x, y, batch_size, log, fail_at](int64_t batch, int64_t rows, std::span<float> xs, std::span<int32_t> ys) {
        if (batch == fail_at) throw tandem::DataError("blocks/block_" + std::to_string(batch) + ".bin", "cannot read block file \"blocks/block_" + std::to_string(batch) + ".bin\": truncated");
        log->add(batch, rows);
        const int64_t first = batch * batch_size;
        std::copy_n(x.data<float>() + first * 20, rows * 20, xs.begin());
        std::copy_n(y.data<int32_t>() + first, rows, ys.begin());
      },
      options, "test blocks");
}

std::vector<Tensor> train(const Dataset& data, tandem::distribute::StrategyPtr strategy = nullptr, tandem::FitOptions options = {}) {
  tandem::set_random_seed(5);
  tandem::Sequential model({tl::InputLayer({20}), tl::Dense(16, "relu"), tl::Dropout(0.2), tl::Dense(5)});
  model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}, .strategy = strategy});
  options.epochs = 2, options.verbose = 0;
  model.fit(data, options);
  return model.get_weights();
}

}  // namespace

TEST_CASE("from_batch_function: fit takes the source's batches in order, each made once per epoch, to the unshuffled in-memory bits") {
  const Dataset memory = blobs(150, 20, 5);  // batches of 32: four full, the last of 22
  const auto reference = train(memory, nullptr, {.batch_size = 32, .shuffle = false});
  for (const int threads : {1, 3, tandem::AUTOTUNE}) {
    CAPTURE(threads);
    auto log = std::make_shared<BatchLog>();
    // fit's own batch_size and shuffle are not used: the source's batches come as they are.
    CHECK(same_bits(train(batches_of(memory, 32, log, {.num_parallel_calls = threads}), nullptr, {.batch_size = 7, .shuffle = true}), reference));
    std::multiset<std::pair<int64_t, int64_t>> made(log->calls.begin(), log->calls.end());
    const std::multiset<std::pair<int64_t, int64_t>> expected{{0, 32}, {0, 32}, {1, 32}, {1, 32}, {2, 32}, {2, 32}, {3, 32}, {3, 32}, {4, 22}, {4, 22}};
    CHECK(made == expected);
  }
}

TEST_CASE("from_batch_function: Mirrored and Pipeline on two devices give the single-device bits") {
  const Dataset memory = blobs(150, 20, 5);
  for (const bool pipeline : {false, true}) {
    CAPTURE(pipeline);
    auto strategy = [&] {
      return pipeline ? tandem::distribute::Pipeline(cpus(2), {.micro_batches = 2}) : tandem::distribute::Mirrored(cpus(2));
    };
    // 148 rows: batches of 32 and a last of 20, which both strategies split evenly.
    const Dataset rows = memory.slice(0, 148);
    CHECK(same_bits(train(batches_of(rows, 32, std::make_shared<BatchLog>(), {.num_parallel_calls = 2}), strategy()),
                    train(rows, strategy(), {.batch_size = 32, .shuffle = false})));
  }
}

TEST_CASE("from_batch_function: row maps, transforms, class_weight, evaluate and predict") {
  const Dataset memory = blobs(150, 20, 5);
  const Dataset made = batches_of(memory, 16, std::make_shared<BatchLog>(), {.num_parallel_calls = 2});
  SUBCASE("class_weight and transforms (drawn per row, as in memory)") {
    auto jitter = [](std::span<float> x, const tandem::Shape&, std::mt19937_64& random) { x[0] += float(random() % 100) * 1e-3f; };
    const tandem::FitOptions o{.batch_size = 16, .shuffle = false, .class_weight = {{0, 2.0}, {3, 0.5}}, .transforms = {jitter}};
    CHECK(same_bits(train(made, nullptr, o), train(memory, nullptr, o)));
  }
  SUBCASE("one-hot targets from a row map") {
    auto fit_one_hot = [](const Dataset& d) {
      tandem::set_random_seed(5);
      tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
      model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::CategoricalCrossentropy({.from_logits = true})});
      model.fit(d.map_y(tandem::datasets::one_hot(5)), {.epochs = 2, .batch_size = 16, .shuffle = false, .verbose = 0});
      return model.get_weights();
    };
    CHECK(same_bits(fit_one_hot(made), fit_one_hot(memory)));
  }
  SUBCASE("evaluate and predict") {
    tandem::set_random_seed(2);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::SGD(0.1), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"accuracy"}});
    CHECK(model.evaluate(made, {.verbose = 0}) == model.evaluate(memory, {.batch_size = 16, .verbose = 0}));
    CHECK(same_bits(model.predict(made), {model.predict(memory.x(), {.batch_size = 16})}));
  }
}

TEST_CASE("from_batch_function: BackupAndRestore resumes mid-epoch making only the batches still needed") {
  const Dataset memory = blobs(150, 20, 5);  // 5 batches of 32 per epoch, the last of 22
  const fs::path dir = scratch_root.fresh("resume") / "backup";
  auto run = [&](const std::shared_ptr<BatchLog>& log, int64_t interrupt_at) {
    std::vector<tandem::CallbackPtr> callbacks;
    if (interrupt_at) callbacks.push_back(std::make_shared<ThrowAtStep>(interrupt_at));
    callbacks.push_back(tandem::callbacks::BackupAndRestore(dir.string(), {.save_freq = 3}));
    tandem::set_random_seed(5);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(16, "relu"), tl::Dropout(0.2), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-2), .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true})});
    model.fit(batches_of(memory, 32, log, {.num_parallel_calls = 2}), {.epochs = 3, .verbose = 0, .callbacks = callbacks});
    return model.get_weights();
  };
  const auto reference = run(std::make_shared<BatchLog>(), 0);
  CHECK_THROWS_WITH(run(std::make_shared<BatchLog>(), 8), "interrupted");  // the last backup after step 6: epoch 2, batch 1
  auto log = std::make_shared<BatchLog>();
  CHECK(same_bits(run(log, 0), reference));
  const std::multiset<std::pair<int64_t, int64_t>> made(log->calls.begin(), log->calls.end());
  // Epoch 2 from batch 1 on, then all of epoch 3.
  CHECK(made == std::multiset<std::pair<int64_t, int64_t>>{{1, 32}, {2, 32}, {3, 32}, {4, 22}, {0, 32}, {1, 32}, {2, 32}, {3, 32}, {4, 22}});
}

TEST_CASE("from_batch_function: a batch that cannot be made stops fit naming its file; what cannot work is refused") {
  const Dataset memory = blobs(150, 20, 5);
  CHECK_THROWS_WITH_AS(train(batches_of(memory, 32, std::make_shared<BatchLog>(), {.num_parallel_calls = 2}, 3)),
                       doctest::Contains("cannot read block file \"blocks/block_3.bin\": truncated"), tandem::DataError);
  CHECK_THROWS_WITH_AS(batches_of(memory, 32, std::make_shared<BatchLog>(), {.skip_errors = true}),
                       "Dataset::from_source(test blocks): skip_errors needs a source read sample by sample; test blocks makes whole batches of 32",
                       tandem::ValueError);
  CHECK_THROWS_WITH_AS(batches_of(memory, 32, std::make_shared<BatchLog>()).with_pipeline({.skip_errors = true}),
                       doctest::Contains("skip_errors needs a source read sample by sample"), tandem::ValueError);
  CHECK_THROWS_WITH_AS(batches_of(memory, 0, std::make_shared<BatchLog>()), "datasets::from_batch_function: batch_size must be >= 1, got 0",
                       tandem::ValueError);
  const tandem::SampleType type{{{tandem::Shape{20}, tandem::DType::F32}}, {{tandem::Shape{}, tandem::DType::I32}}};
  CHECK_THROWS_WITH_AS(tandem::datasets::from_batch_function(10, 5, type, nullptr), "datasets::from_batch_function: the read function is empty",
                       tandem::ValueError);
}

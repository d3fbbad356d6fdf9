// Input copies to a device that copies asynchronously, proven without a GPU on "lag" devices
// (tests/lag_device.h: the CPU kernels, copies that happen later on a thread of their own). The
// results must equal the cpu device's bit for bit: through the inboxes (the next batch copied
// while the step runs), and with them turned off.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "backend/device.h"
#include "backend/host_pool.h"
#include "compile/lower.h"
#include "data/batcher.h"
#include "data/prefetcher.h"
#include "model/feeder.h"
#include "lag_device.h"
#include "ops/ops.h"
#include "runtime/executable.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
using tandem::Dataset;
using tandem::Tensor;
using lag::counts;
using lag::LagStats;
using tandem::backend::HostBuffer;

namespace {

Dataset blobs(int64_t rows, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(rows * 8));
  std::vector<int32_t> y(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    y[static_cast<std::size_t>(r)] = static_cast<int32_t>(r % 3);
    for (int64_t f = 0; f < 8; ++f) x[static_cast<std::size_t>(r * 8 + f)] = normal(gen) + (f % 3 == r % 3 ? 1.5f : 0.0f);
  }
  return {Tensor::from({rows, 8}, std::span<const float>(x)), Tensor::from({rows}, std::span<const int32_t>(y))};
}

// The same samples, read by decode threads from a function (two threads, two batches ahead);
// sample `fail_at` cannot be read.
Dataset streamed(const Dataset& data, int64_t fail_at = -1) {
  const Tensor x = data.x(), y = data.y();
  return tandem::datasets::from_function<float, int32_t>(
      data.size(), {8}, {},
      [x, y, fail_at](int64_t i, std::span<float> xs, std::span<int32_t> ys) {
        if (i == fail_at) throw tandem::DataError("sample_" + std::to_string(i) + ".bin", "cannot read sample_" + std::to_string(i) + ".bin");
        std::memcpy(xs.data(), static_cast<const float*>(x.raw()) + i * 8, 8 * sizeof(float));
        ys[0] = static_cast<const int32_t*>(y.raw())[i];
      },
      {.num_parallel_calls = 2, .prefetch = 2});
}

std::unique_ptr<tandem::Sequential> make_model(dist::StrategyPtr strategy) {
  tandem::set_random_seed(3);
  auto model = std::make_unique<tandem::Sequential>(std::vector<tandem::LayerRef>{
      tl::InputLayer({8}), tl::Dense(16, "relu"), tl::BatchNormalization(), tl::Dropout(0.25), tl::Dense(3)});
  model->compile({.optimizer = tandem::optimizers::Adam(1e-2),
                  .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}, .strategy = strategy});
  return model;
}

void check_bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].bytes() == b[i].bytes());
    CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

struct Results {
  std::vector<Tensor> weights;
  tandem::Logs evaluation;
  Tensor predictions;
};

// Three epochs of batches of 32 over 100 rows (the last of 4 rows: a step of its own), evaluate
// and predict with partial last batches, in memory or streamed.
Results run(dist::StrategyPtr strategy, bool stream) {
  auto model = make_model(strategy);
  const Dataset train = blobs(100, 1), test = blobs(40, 2), inputs = blobs(10, 3);
  model->fit(stream ? streamed(train) : train, {.epochs = 3, .batch_size = 32, .verbose = 0});
  Results r;
  r.weights = model->get_weights();
  r.evaluation = model->evaluate(stream ? streamed(test) : test, {.batch_size = 16, .verbose = 0});
  r.predictions = stream ? model->predict(streamed(inputs), {.batch_size = 4, .verbose = 0})[0] : model->predict(inputs.x(), {.batch_size = 4, .verbose = 0});
  return r;
}

void check_equal(const Results& a, const Results& b) {
  check_bitwise_equal(a.weights, b.weights);
  for (const auto& [key, value] : b.evaluation) CHECK(a.evaluation.at(key) == value);
  check_bitwise_equal({a.predictions}, {b.predictions});
}

}  // namespace

TEST_CASE("input copies: fit, evaluate and predict on a device that copies asynchronously equal the cpu device's, bit for bit") {
  for (const bool stream : {false, true}) {
    CAPTURE(stream);
    const Results cpu = run(dist::Default("cpu:0"), stream);
    const LagStats before = counts();
    const Results lag = run(dist::Default("lag:0"), stream);
    check_equal(lag, cpu);
    const LagStats after = counts();
    // Every batch went through the inboxes, from pinned staging slots (x and y of 12 batches of
    // fit and 3 of evaluate, x of 3 of predict), some of them while the previous step ran.
    CHECK(after.pinned_buffers > before.pinned_buffers);
    CHECK(after.unpinned == before.unpinned);
    CHECK(after.async_copies - before.async_copies == 2 * (3 * 4 + 3) + 3);
    CHECK(after.moved_in - before.moved_in == after.async_copies - before.async_copies);
    CHECK(after.during_step > before.during_step);
  }
}

TEST_CASE("input copies: Mirrored with several batches per step (sync_every) over two such devices equals two cpu devices") {
  // Batches of 24 over 100 rows: two groups of two, then a group of one batch of 4 rows.
  const auto fit = [](std::vector<std::string> devices, bool stream) {
    auto model = make_model(dist::Mirrored(devices, {.sync_every = 2}));
    const Dataset data = blobs(100, 5);
    model->fit(stream ? streamed(data) : data, {.epochs = 2, .batch_size = 24, .verbose = 0});
    return model->get_weights();
  };
  for (const bool stream : {false, true}) {
    CAPTURE(stream);
    const LagStats before = counts();
    check_bitwise_equal(fit({"lag:0", "lag:1"}, stream), fit({"cpu:0", "cpu:1"}, stream));
    // Two epochs of 5 batches (x and y), each device its half of every batch.
    CHECK(counts().async_copies - before.async_copies == 2 * 2 * 5 * 2);
  }
}

TEST_CASE("input copies: Pipeline (micro-batches: inputs to the first device, targets to the last) and ModelSplit over such devices equal cpu devices") {
  const auto fit = [](const dist::StrategyPtr& strategy) {
    auto model = make_model(strategy);
    model->fit(streamed(blobs(100, 4)), {.epochs = 2, .batch_size = 20, .verbose = 0});
    return model->get_weights();
  };
  const LagStats before = counts();
  check_bitwise_equal(fit(dist::Pipeline({"lag:0", "lag:1"}, {.micro_batches = 2})), fit(dist::Pipeline({"cpu:0", "cpu:1"}, {.micro_batches = 2})));
  check_bitwise_equal(fit(dist::ModelSplit({"lag:0", "lag:1"})), fit(dist::ModelSplit({"cpu:0", "cpu:1"})));
  CHECK(counts().moved_in > before.moved_in);
  CHECK(counts().during_step > before.during_step);
}

TEST_CASE("input copies: batches from a whole-batch source on such a device equal the cpu's") {
  const Dataset data = blobs(100, 6);
  const Tensor x = data.x(), y = data.y();
  const auto fit = [&](const std::string& device) {
    const Dataset batched = tandem::datasets::from_batch_function<float, int32_t>(
        data.size(), 32, {8}, {},
        [x, y](int64_t b, int64_t rows, std::span<float> xs, std::span<int32_t> ys) {
          std::memcpy(xs.data(), static_cast<const float*>(x.raw()) + b * 32 * 8, static_cast<std::size_t>(rows) * 8 * sizeof(float));
          std::memcpy(ys.data(), static_cast<const int32_t*>(y.raw()) + b * 32, static_cast<std::size_t>(rows) * sizeof(int32_t));
        },
        {.num_parallel_calls = 2, .prefetch = 2});
    auto model = make_model(dist::Default(device));
    model->fit(batched, {.epochs = 2, .verbose = 0});
    std::vector<Tensor> out = model->get_weights();
    out.push_back(model->predict(batched, {.verbose = 0})[0]);
    return out;
  };
  check_bitwise_equal(fit("lag:0"), fit("cpu:0"));
}

TEST_CASE("input copies: with the inboxes turned off the device gets its inputs directly, with the same results") {
  tandem::runtime::set_input_overlap(false);
  const LagStats before = counts();
  const Results direct = run(dist::Default("lag:2"), true);
  const LagStats after = counts();
  tandem::runtime::set_input_overlap(true);
  CHECK(after.async_copies == before.async_copies);
  CHECK(after.moved_in == before.moved_in);
  check_equal(direct, run(dist::Default("lag:2"), true));
}

TEST_CASE("input copies: a sample that cannot be read while the step runs stops fit with its DataError, after the step") {
  auto model = make_model(dist::Default("lag:3"));
  // Batch 1 (rows 32 to 63) is staged while step 0 runs.
  CHECK_THROWS_WITH_AS(model->fit(streamed(blobs(100, 1), 40), {.epochs = 1, .batch_size = 32, .verbose = 0}),
                       doctest::Contains("sample_40.bin"), tandem::DataError);
  // The model is usable afterwards: the same fit without the bad sample equals the cpu's.
  auto on_cpu = make_model(dist::Default("cpu:0"));
  on_cpu->fit(streamed(blobs(100, 1)), {.epochs = 1, .batch_size = 32, .verbose = 0});
  auto again = make_model(dist::Default("lag:3"));
  again->fit(streamed(blobs(100, 1)), {.epochs = 1, .batch_size = 32, .verbose = 0});
  check_bitwise_equal(again->get_weights(), on_cpu->get_weights());
}

TEST_CASE("input copies: the staging slots come from the device's allocate_host, and count toward the staging bound") {
  const Dataset data = blobs(64, 9);
  tandem::data::Batcher batches(data, 16, false, 0);
  auto& device = tandem::backend::open_device("lag:4");
  tandem::data::Prefetcher::reset_peak_staging_bytes();
  const std::size_t before = counts().pinned_buffers;
  {
    tandem::data::Prefetcher prefetch(batches, {true, true}, tandem::detail::host_memory_of(device));
    // prefetch + 1 slots (the default prefetch is AUTOTUNE: at least 1), x and y each.
    CHECK(counts().pinned_buffers - before == 2 * static_cast<std::size_t>(std::max(1, batches.pipeline().prefetch) + 1));
    CHECK(tandem::data::Prefetcher::peak_staging_bytes() >= prefetch.staging_bytes());
    batches.start_epoch(0);
    prefetch.start_epoch();
    for (int64_t b = 0; b < batches.num_batches(); ++b) {
      const auto* x = reinterpret_cast<const float*>(prefetch.column(b, 0));
      CHECK(std::memcmp(x, static_cast<const float*>(data.x().raw()) + b * 16 * 8, 16 * 8 * sizeof(float)) == 0);
      prefetch.release(b);
    }
  }
}

TEST_CASE("input copies: a step moves in the inputs written before it, after their copies; those written while it runs go to the next") {
  tandem::graph::Graph g;
  const tandem::graph::Value x = g.placeholder("x", {tandem::Shape{64}, tandem::DType::F64});
  tandem::compile::LoweringOptions o;
  o.devices = {"lag:6"};
  auto plan = std::make_shared<tandem::compile::Plan>(tandem::compile::lower(g, {tandem::ops::scale(g, x, 2.0)}, o));
  auto& device = tandem::backend::open_device("lag:6", 1);
  tandem::runtime::Executable exe(plan, {&device}, [](int, int) -> void* { return nullptr; });
  REQUIRE(exe.stages_inputs());
  const std::size_t bytes = 64 * sizeof(double);
  HostBuffer first = device.allocate_host(bytes), second = device.allocate_host(bytes);
  for (int i = 0; i < 64; ++i) reinterpret_cast<double*>(first.data())[i] = i, reinterpret_cast<double*>(second.data())[i] = 100 + i;
  void* at = exe.feed(0, "x");
  const auto result = [&](double offset) {
    std::vector<double> out(64);
    exe.copy_fetch(0, 0, out.data(), bytes);
    for (int i = 0; i < 64; ++i) CHECK(out[static_cast<std::size_t>(i)] == 2 * (offset + i));
  };
  // Not waited for on the host: the step itself waits for the copy (which lags) before it reads.
  exe.write_feed(0, at, first.data(), bytes);
  exe.run([&] {
    exe.write_feed(0, at, second.data(), bytes);
    exe.wait_for_writes();
  });
  result(0);
  exe.run();
  result(100);
  exe.run();  // nothing new written: the inputs stay as they were
  result(100);
}

TEST_CASE("input copies: the pool of host buffers reuses a freed buffer that fits, zeroed, and keeps no more than its limit") {
  std::map<std::byte*, std::size_t> live;
  int allocations = 0;
  const auto allocate = [&](std::size_t bytes) {
    ++allocations;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(4096, bytes));
    std::memset(p, 0x5a, bytes);  // not zero: take() zeroes
    live[p] = bytes;
    return p;
  };
  {
    tandem::backend::HostPool pool([&](std::byte* p) { live.erase(p), std::free(p); }, 3 * 4096);
    std::byte* a = pool.take(1000, allocate);
    CHECK(live.at(a) == 4096);  // whole pages
    CHECK(std::all_of(a, a + 1000, [](std::byte b) { return b == std::byte{0}; }));
    std::memset(a, 1, 1000);
    pool.give(a);
    CHECK(pool.kept_bytes() == 4096);
    std::byte* again = pool.take(3000, allocate);  // fits the kept one
    CHECK(again == a);
    CHECK(allocations == 1);
    CHECK(std::all_of(again, again + 3000, [](std::byte b) { return b == std::byte{0}; }));
    std::byte* big = pool.take(5000, allocate);  // 8192: nothing kept fits
    CHECK(allocations == 2);
    pool.give(big), pool.give(again);  // 8192 + 4096 kept: the limit
    CHECK(pool.kept_bytes() == 3 * 4096);
    CHECK(pool.take(100, allocate) == again);  // not the 8192 one: more than twice the size
    std::byte* extra = pool.take(9000, allocate);
    pool.give(extra);  // over the limit: freed
    CHECK(live.count(extra) == 0);
    CHECK(live.size() == 2);
  }
  CHECK(live.size() == 1);  // the pool freed what it kept; the buffer still taken is the taker's
  for (auto& [p, bytes] : live) std::free(p);
}

// MirroredStrategy on virtual CPU devices: the communicator against closed-form results, the
// equivalence with single-device training, overlap seen in a trace, and the errors.
#include <doctest/doctest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "comm/inprocess.h"
#include "distribute/strategy.h"
#include "strategy_helpers.h"

namespace tl = tandem::layers;
namespace dist = tandem::distribute;
using tandem::Tensor;

namespace {
// Runs fn(rank) on one thread per rank, like the devices of a strategy.
template <class F>
void on_ranks(int k, F fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r) threads.emplace_back([&, r] { fn(r); });
  for (auto& t : threads) t.join();
}

// Five training steps of an MLP (optionally with dropout) under a strategy, from seed 3.
std::vector<Tensor> mlp_after_five_steps(dist::StrategyPtr strategy, bool dropout, int64_t batch) {
  tandem::set_random_seed(3);
  std::vector<tandem::LayerRef> layers{tl::InputLayer({20}), tl::Dense(32, "relu")};
  if (dropout) layers.push_back(tl::Dropout(0.25));
  layers.push_back(tl::Dense(16, "tanh"));
  layers.push_back(tl::Dense(5));
  tandem::Sequential model(layers);
  // Adam at its default rate: it divides by √v, so a gradient element near zero turns a rounding
  // difference (replicas sum rows in another order) into a visible one; at 1e-2 that reached
  // 6e-5 relative for a 3/3/2/2 split, at 1e-3 it stays below 5e-6.
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}, .strategy = strategy});
  model.fit(blobs(5 * batch, 20, 5), {.epochs = 1, .batch_size = batch, .verbose = 0});
  CHECK(model.optimizer()->iterations() == 5);
  return model.get_weights();
}

// Five steps of a small CNN on 10x10 images (optionally with dropout) under a strategy.
std::vector<Tensor> cnn_after_five_steps(dist::StrategyPtr strategy, bool dropout, int64_t batch) {
  tandem::set_random_seed(4);
  std::vector<tandem::LayerRef> layers{tl::InputLayer({100}), tl::Reshape({10, 10, 1}),
                                       tl::Conv2D(6, 3, {.activation = "relu"}), tl::MaxPooling2D(2),
                                       tl::Conv2D(8, 3, {.padding = "same", .activation = "relu"}), tl::Flatten()};
  if (dropout) layers.push_back(tl::Dropout(0.3));
  layers.push_back(tl::Dense(5));
  tandem::Sequential model(layers);
  model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                 .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
  model.fit(blobs(5 * batch, 100, 5), {.epochs = 1, .batch_size = batch, .verbose = 0});
  return model.get_weights();
}

}  // namespace

TEST_CASE("mirrored: ring all-reduce sums exactly and equally on every rank") {
  for (int k : {1, 2, 3, 4}) {
    tandem::comm::InProcessCommunicator comm(cpus(k));
    const std::size_t n = 1003;  // not a multiple of k: uneven chunks
    std::vector<std::vector<double>> data(static_cast<std::size_t>(k), std::vector<double>(n));
    for (int r = 0; r < k; ++r)
      for (std::size_t i = 0; i < n; ++i) data[static_cast<std::size_t>(r)][i] = double(r + 1) * double(i) + 0.25;
    on_ranks(k, [&](int r) { comm.all_reduce(r, data[static_cast<std::size_t>(r)].data(), n, tandem::DType::F64, tandem::comm::ReduceOp::Sum); });
    const double ranks_sum = k * (k + 1) / 2.0;
    for (int r = 0; r < k; ++r)
      for (std::size_t i = 0; i < n; ++i) REQUIRE(data[static_cast<std::size_t>(r)][i] == ranks_sum * double(i) + 0.25 * k);
    // Ring traffic: each rank reads 2(k−1)/k of the buffer.
    CHECK(comm.stats().bytes_moved == (k > 1 ? 2 * (k - 1) * n * sizeof(double) : 0));
  }
}

TEST_CASE("mirrored: bfloat16 all-reduce halves the bytes and stays within bfloat16 rounding") {
  const int k = 4;
  const std::size_t n = 4096;
  tandem::comm::InProcessCommunicator native(cpus(k)), half(cpus(k));
  std::vector<std::vector<float>> a(k, std::vector<float>(n)), b;
  std::mt19937 gen(2);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : a)
    for (float& x : v) x = u(gen);
  b = a;
  on_ranks(k, [&](int r) {
    native.all_reduce(r, a[static_cast<std::size_t>(r)].data(), n, tandem::DType::F32, tandem::comm::ReduceOp::Mean);
    half.all_reduce(r, b[static_cast<std::size_t>(r)].data(), n, tandem::DType::F32, tandem::comm::ReduceOp::Mean,
                    tandem::comm::Wire::BFloat16);
  });
  CHECK(half.stats().bytes_moved * 2 == native.stats().bytes_moved);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(b[1][i] == b[0][i]);  // every rank ends with the same values
    // k−1 additions and a final rounding, each within 2^-8 relative of partial sums below 4 in magnitude.
    CHECK(std::abs(b[0][i] - a[0][i]) <= 4.0f * 4.0f / 256.0f / k + 1e-6f);
  }
}

TEST_CASE("mirrored: all_gather, reduce_scatter, broadcast, send and recv") {
  const int k = 3;
  tandem::comm::InProcessCommunicator comm(cpus(k));
  std::vector<std::vector<float>> gathered(k, std::vector<float>(2 * k)), scattered(k, std::vector<float>(2));
  std::vector<std::vector<float>> big(k, std::vector<float>(2 * k));
  std::vector<int> bcast(k), received(k, -1);
  on_ranks(k, [&](int r) {
    const float mine[2] = {float(r), float(10 * r)};
    comm.all_gather(r, mine, gathered[static_cast<std::size_t>(r)].data(), 2, tandem::DType::F32);
    for (int i = 0; i < 2 * k; ++i) big[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] = float(i + r);
    comm.reduce_scatter(r, big[static_cast<std::size_t>(r)].data(), scattered[static_cast<std::size_t>(r)].data(), 2,
                        tandem::DType::F32, tandem::comm::ReduceOp::Sum);
    bcast[static_cast<std::size_t>(r)] = r == 2 ? 77 : 0;
    comm.broadcast(r, &bcast[static_cast<std::size_t>(r)], sizeof(int), 2);
    const int token = 100 + r;
    if (r == 0) comm.send(0, 1, &token, sizeof token);
    if (r == 1) comm.recv(1, 0, &received[1], sizeof(int));
    comm.barrier(r);
  });
  for (int r = 0; r < k; ++r) {
    for (int q = 0; q < k; ++q) {
      CHECK(gathered[static_cast<std::size_t>(r)][static_cast<std::size_t>(2 * q)] == float(q));
      CHECK(gathered[static_cast<std::size_t>(r)][static_cast<std::size_t>(2 * q + 1)] == float(10 * q));
    }
    // Element i of the reduction is Σ_r (i + r) = k·i + k(k−1)/2; rank r owns elements 2r, 2r+1.
    CHECK(scattered[static_cast<std::size_t>(r)][0] == float(k * (2 * r) + 3));
    CHECK(scattered[static_cast<std::size_t>(r)][1] == float(k * (2 * r + 1) + 3));
    CHECK(bcast[static_cast<std::size_t>(r)] == 77);
  }
  CHECK(received[1] == 100);
}

TEST_CASE("mirrored: a send does not wait for its receiver, and a recv takes the message with its tag") {
  tandem::comm::InProcessCommunicator comm({"cpu:0", "cpu:1"});
  comm.set_timeout(std::chrono::milliseconds(2000));
  const float first[2] = {1, 2}, second[3] = {3, 4, 5};
  comm.send(0, 1, first, sizeof first, 7);  // both return at once, on one thread
  comm.send(0, 1, second, sizeof second, 9);
  float got_second[3] = {}, got_first[2] = {};
  comm.recv(1, 0, got_second, sizeof got_second, 9);  // in the other order
  comm.recv(1, 0, got_first, sizeof got_first, 7);
  CHECK(got_first[1] == 2);
  CHECK(got_second[2] == 5);
  CHECK_THROWS_WITH_AS(comm.recv(1, 0, got_first, sizeof got_first, 7), doctest::Contains("(tag 7) timed out after 2000 ms"), tandem::Error);
}

TEST_CASE("mirrored: a collective that a peer never joins times out with a clear error") {
  tandem::comm::InProcessCommunicator comm(cpus(3));
  comm.set_timeout(std::chrono::milliseconds(100));
  float v = 1;
  CHECK_THROWS_WITH_AS(comm.all_reduce(0, &v, 1, tandem::DType::F32, tandem::comm::ReduceOp::Sum),
                       "all_reduce on cpu:0 timed out after 100 ms waiting for cpu:1, cpu:2", tandem::Error);
  tandem::comm::InProcessCommunicator pair(cpus(2));
  pair.set_timeout(std::chrono::milliseconds(50));
  CHECK_THROWS_WITH_AS(pair.recv(1, 0, &v, 4), "recv on cpu:1 from cpu:0 (tag 0) timed out after 50 ms", tandem::Error);
}

TEST_CASE("mirrored: 1, 2 and 4 replicas end five steps with Default's weights") {
  for (bool dropout : {false, true}) {
    const auto reference = mlp_after_five_steps(dist::Default(), dropout, 24);
    for (int k : {1, 2, 4}) {
      INFO("replicas " << k << (dropout ? " with dropout" : ""));
      CHECK(max_relative_difference(mlp_after_five_steps(dist::Mirrored(cpus(k)), dropout, 24), reference) <= 1e-5);
    }
    // 4 replicas with batch 10: rows split 3, 3, 2, 2.
    const auto uneven = mlp_after_five_steps(dist::Default(), dropout, 10);
    CHECK(max_relative_difference(mlp_after_five_steps(dist::Mirrored(cpus(4)), dropout, 10), uneven) <= 1e-5);
  }
}

TEST_CASE("mirrored: a CNN on 1, 2 and 4 replicas ends five steps with Default's weights") {
  for (bool dropout : {false, true}) {
    const auto reference = cnn_after_five_steps(dist::Default(), dropout, 16);
    for (int k : {1, 2, 4}) {
      INFO("replicas " << k << (dropout ? " with dropout" : ""));
      CHECK(max_relative_difference(cnn_after_five_steps(dist::Mirrored(cpus(k)), dropout, 16), reference) <= 1e-5);
    }
  }
}

TEST_CASE("mirrored: BatchNormalization sees the whole batch, so 2 and 4 replicas end with Default's weights and moving statistics") {
  auto train = [](dist::StrategyPtr strategy, int64_t batch) {
    tandem::set_random_seed(6);
    // No bias before the normalisation: its gradient is zero up to rounding, which Adam's
    // division by √v would turn into steps of the learning rate's size in either strategy.
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(16, "", {.use_bias = false}), tl::BatchNormalization(),
                              tl::Activation("relu"), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::Adam(1e-3),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
    model.fit(blobs(5 * batch, 20, 5), {.epochs = 1, .batch_size = batch, .verbose = 0});
    return model.get_weights();  // moving mean and variance included
  };
  for (int64_t batch : {16, 10}) {
    INFO("batch " << batch);
    const auto reference = train(dist::Default(), batch);
    for (int k : {2, 4}) {
      INFO(k << " replicas");
      CHECK(max_relative_difference(train(dist::Mirrored(cpus(k)), batch), reference) <= 1e-5);
    }
  }
}

TEST_CASE("mirrored: small buckets give the same result, and the all-reduce of a bucket overlaps backward") {
  const std::string trace = "mirrored_trace_test.json";
  auto train = [&](dist::StrategyPtr strategy, bool traced) {
    tandem::set_random_seed(3);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(256, "relu"), tl::Dense(256, "relu"), tl::Dense(5)});
    model.compile({.optimizer = "adam", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .strategy = strategy});
    model.fit(blobs(512, 20, 5), {.batch_size = 256, .verbose = 0, .trace_path = traced ? trace : "", .trace_step = 1});
    return model.get_weights();
  };
  const auto reference = train(dist::Default(), false);
  // 64 KB buckets: the 256x256 kernel's gradient alone is 256 KB, so the gradients go in several buckets.
  CHECK(max_relative_difference(train(dist::Mirrored(cpus(2), {.bucket_bytes = 64 << 10}), true), reference) <= 1e-5);
  std::ifstream in(trace);
  REQUIRE(in.good());
  const auto events = nlohmann::json::parse(in)["traceEvents"];
  // Track 0 is cpu:0's compute: the all_reduce_start kernel there is the moment a bucket's
  // all-reduce is handed to the communication thread (track 1), which runs it while the compute
  // track goes on with backward. Whether that thread gets a core at once is up to the OS on a
  // two-core machine, so the assertion is on the hand-off; the thread's own start is reported.
  double first_start = 1e300, last_backward_end = 0, first_comm = 1e300;
  int buckets = 0;
  for (const auto& e : events) {
    if (e["ph"] != "X") continue;
    const double begin = e["ts"], end = begin + e["dur"].get<double>();
    const std::string name = e["name"];
    if (e["tid"] == 1) first_comm = std::min(first_comm, begin), ++buckets;
    if (e["tid"] == 0 && name == "all_reduce_start") first_start = std::min(first_start, begin);
    if (e["tid"] == 0 && (name.ends_with("_grad") || name == "matmul" || name == "reduce_sum")) last_backward_end = std::max(last_backward_end, end);
  }
  CHECK(buckets >= 2);
  CHECK(first_start < last_backward_end);
  MESSAGE("first all-reduce ran on the communication thread " << (last_backward_end - first_comm)
                                                              << " us before the last backward kernel ended");
  std::remove(trace.c_str());
}

TEST_CASE("mirrored errors: small batches, unknown and repeated devices") {
  CHECK_THROWS_WITH_AS(dist::Mirrored({"cpu:0", "cpu:0"}), "Mirrored: device 'cpu:0' is listed twice", tandem::ValueError);
  CHECK_THROWS_WITH_AS(dist::Mirrored({"cpu:0", "tpu:1"}), doctest::Contains("unknown device 'tpu:1'"), tandem::ValueError);
  if (!TANDEM_WITH_CUDA)
    CHECK_THROWS_WITH_AS(dist::Mirrored({"gpu:0"}), doctest::Contains("device 'gpu:0' is not available"), tandem::ValueError);
  tandem::Sequential model({tl::InputLayer({4}), tl::Dense(2)});
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .strategy = dist::Mirrored(cpus(4))});
  CHECK_THROWS_WITH_AS(model.fit(blobs(3, 4, 2), {.batch_size = 3, .verbose = 0}),
                       "Mirrored: a batch of 3 rows cannot be split across 4 replicas; use batches of at least 4 rows",
                       tandem::ValueError);
}

TEST_CASE("mirrored: synchronising every k steps equals one update per k batches") {
  // Two replicas accumulating over 2 batches of 12 rows update like Default on batches of 24
  // rows: the same rows (the shuffle depends on the seed only) and the mean gradient over them.
  auto train = [](dist::StrategyPtr strategy, int64_t batch, int epochs) {
    tandem::set_random_seed(8);
    tandem::Sequential model({tl::InputLayer({20}), tl::Dense(32, "relu"), tl::Dense(5)});
    model.compile({.optimizer = tandem::optimizers::SGD(0.1, {.momentum = 0.9}),
                   .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}), .strategy = strategy});
    model.fit(blobs(96, 20, 5), {.epochs = epochs, .batch_size = batch, .verbose = 0});
    return std::make_pair(model.get_weights(), model.optimizer()->iterations());
  };
  const auto [reference, ref_updates] = train(dist::Default(), 24, 2);
  const dist::StrategyPtr every_batch = dist::Mirrored(cpus(2)), every_second = dist::Mirrored(cpus(2), {.sync_every = 2});
  const auto [accumulated, updates] = train(every_second, 12, 2);
  train(every_batch, 12, 2);
  CHECK(ref_updates == 8);
  CHECK(updates == 8);
  CHECK(max_relative_difference(accumulated, reference) <= 1e-5);
  // The two batches of a group are micro-batches of one step: one all-reduce of their summed
  // gradients, so half the all-reduces of synchronising every batch.
  const auto collectives = [](const dist::StrategyPtr& s) { return s->communicator()->stats().collectives; };
  CHECK(collectives(every_second) > 0);
  CHECK(2 * collectives(every_second) == collectives(every_batch));
}

TEST_CASE("mirrored errors: a device that fails abandons the step at once, and training can go on") {
  // Replica 1 gets the out-of-range id; without abandoning the step, replica 0 would wait in the
  // all-reduce for the whole timeout and then report the timeout instead of the cause.
  tandem::set_random_seed(1);
  auto x = tandem::Input({3}, tandem::DType::I32);
  auto h = tl::Flatten()(tl::Embedding(10, 4)(x));
  tandem::Model model(x, tl::Dense(2)(h));
  model.compile({.optimizer = "sgd", .loss = tandem::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .strategy = dist::Mirrored(cpus(2), {.timeout_ms = 20000})});
  std::vector<int32_t> ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6};
  std::vector<int32_t> labels{0, 1, 0, 1, 0, 1, 0, 1};
  const Tensor y = Tensor::from({8}, std::span<const int32_t>(labels));
  auto bad = ids;
  bad[20] = 42;  // row 6: replica 1's rows are 4..7
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(model.fit(Tensor::from({8, 3}, std::span<const int32_t>(bad)), y, {.batch_size = 8, .shuffle = false, .verbose = 0}),
                       doctest::Contains("42"), tandem::ValueError);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  model.fit(Tensor::from({8, 3}, std::span<const int32_t>(ids)), y, {.epochs = 2, .batch_size = 8, .verbose = 0});
  CHECK(model.optimizer()->iterations() == 2);
}
